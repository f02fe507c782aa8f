#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Two hosts on one machine: uroced against raw DPDK against kernel UDP, on the same links,
# in one run (doc/benchmarks.md, "Two hosts").
#
#   (a) a veth pair between two network namespaces:
#       - uroce-rawbench (raw DPDK, net_af_packet): 64 B ping-pong, blast of 1082-byte
#         frames (the size of uroce's data frames at path MTU 1024);
#       - kernel UDP (uroce-bench-udp) on the same veth pair, an IPv4 address on each end
#         only for this part: 8 B ping-pong (busy polling, and blocking), 1472 B blast;
#       - two uroced (net_af_packet on the veths), MTU 1500 (path MTU 1024), in each
#         poll-loop configuration below: uroce-xfer lat (8 B RC SEND ping-pong) and bw
#         (64 KiB RDMA WRITE); in the default one also lat -e (the applications block on
#         their completion channels) and lat with UROCE_CQ_WAIT=block (they poll, and
#         lib/client sleeps in an empty poll_cq until a completion);
#   (b) memif (no kernel interface): uroce-rawbench and the two uroced pairs with the same
#       vdev arguments (bsize=9216: doc/ethdev.md); the kernel UDP column is the veth one.
#   On both links, with the uroced pair in the default poll loop only (VERBS_CFG, below):
#       - perftest, unmodified, over the drop-in libibverbs (LD_LIBRARY_PATH=BUILD/lib/verbs,
#         UROCE_SOCKET per side, -d uroce0 -x GID -F, no -R): ib_send_lat -s 8 (its
#         t_typical, the median, which for ib_send_lat is half a round trip), the same
#         with -e (the applications block on their completion channels) and
#         ib_write_bw -s 65536 (its BW average, MB/s of 2^20 bytes, as Gbit/s);
#       - uroce-bench-verbs --spin: the uroce-xfer lat/bw loops through libibverbs, polling
#         without a yield of their own, as perftest does (what its figures are made of);
#       - the verbs layer's overhead: uroce-xfer lat/bw (lib/client) and uroce-bench-verbs
#         lat/bw (the same loops through libibverbs, test/bench/verbs_bench.c), alternately,
#         VB_RUNS pairs per link (5; 1 with --quick) spread over the repetitions.
#
# Every measurement is repeated (3 times, 1 with --quick) and the median is reported.
# Latencies in the table are half round trips (RTT/2, as uroce-xfer lat prints them);
# rawbench's and UDP's round trips are halved.
#
# usage: two_hosts.sh [--quick] [--reps N] [--build DIR] [--only PARTS] [--link LINKS]
#   --only: comma-separated of raw, udp, uroced, perftest, verbs, mtu4096, sizes, qps
#     (default all);
#     mtu4096 (memif only): B5 at path MTU 4096, raw DPDK's blast of 4154-byte frames (a
#     middle WRITE packet's size) against 64 KiB WRITE between two uroced with MTU 9000,
#     payloads copied (the default) and zero-copy; BW_ITERS_MEMIF sets the WRITEs of
#     each memif bw run (10000; 400000 lasts ~5 s, long enough to profile);
#     sizes, qps (memif only): the curves of doc/benchmarks.md, bandwidth against message
#     size beside raw DPDK's, and perftest ib_write_bw against the number of QPs (below,
#     curves_pair); PLOT_DIR set keeps their points (and the latency CDFs) for plots;
#   --link: veth, memif (both)
#   binaries: DIR/app/uroced/uroced, app/uroce-xfer/uroce-xfer, app/uroce/uroce,
#   app/uroce-rawbench/uroce-rawbench, test/bench/uroce-bench-udp,
#   test/bench/uroce-bench-verbs, lib/verbs/libibverbs.so.1 (default DIR: ./build beside
#   this checkout; UROCED, UROCE_XFER, UROCE_CLI, UROCE_RAWBENCH, UROCE_BENCH_UDP,
#   UROCE_BENCH_VERBS, VERBS_LIB_DIR override one each). Without perftest
#   (ib_send_lat, ib_write_bw) or the verbs binaries those rows are skipped with a note.
# uroced's poll loop is measured in each of TWO_HOSTS_CONFIGS, "NAME:key=value,..." of
# [lcore] keys (or section.key=value of any section), default:
#   spin:idle_yield_us=0,idle_sleep_us=0   pure busy polling (uroced before a70f397)
#   yield:idle_yield_us=2,idle_sleep_us=0  sched_yield() once idle 2 us, never sleeps
#                                          (the default before the event-driven loop)
#   event:idle_sleep_us=10000              the default: yield, and sleep in epoll once
#                                          idle 100 us until a post, frame or timer
# VERBS_CFG (default event, else the first configuration): the one perftest and the
# verbs-overhead runs use (uroced's defaults, doc/daemon.md).
# Needs root (namespaces, veth, af_packet): prints "skipped: needs root" and exits 77
# otherwise (meson counts 77 as SKIP for benchmarks too).
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
QUICK=0
REPS=
BUILD=$ROOT/build
ONLY=raw,udp,uroced,perftest,verbs,mtu4096,sizes,qps
VB_RUNS=
LINKS=veth,memif
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--reps) REPS=$2; shift ;;
	--build) BUILD=$2; shift ;;
	--only) ONLY=$2; shift ;;
	--vb-runs) VB_RUNS=$2; shift ;;
	--link) LINKS=$2; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "two_hosts: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
: "${UROCED:=$BUILD/app/uroced/uroced}"
: "${UROCE_XFER:=$BUILD/app/uroce-xfer/uroce-xfer}"
: "${UROCE_CLI:=$BUILD/app/uroce/uroce}"
: "${UROCE_RAWBENCH:=$BUILD/app/uroce-rawbench/uroce-rawbench}"
: "${UROCE_BENCH_UDP:=$BUILD/test/bench/uroce-bench-udp}"
: "${UROCE_BENCH_VERBS:=$BUILD/test/bench/uroce-bench-verbs}"
: "${VERBS_LIB_DIR:=$BUILD/lib/verbs}"
CONFIGS=${TWO_HOSTS_CONFIGS:-spin:idle_yield_us=0,idle_sleep_us=0 yield:idle_yield_us=2,idle_sleep_us=0 event:idle_sleep_us=10000}
# --quick (CI): no spin. Four busy pollers on two CPUs starve the applications for
# milliseconds a message; with any other load on the machine the RC QPs then run out of
# retries (seen: "transport retry counter exceeded" beside a loaded run). The full run
# keeps it, as the figure of what busy polling costs there.
[ $QUICK -eq 1 ] && [ -z "${TWO_HOSTS_CONFIGS:-}" ] && CONFIGS=${CONFIGS#spin:* }
VERBS_CFG=${VERBS_CFG:-event}
case " $CONFIGS " in *" $VERBS_CFG:"*) ;; *) VERBS_CFG=${CONFIGS%%:*} ;; esac
VERBS_CFG_FULL=$(for c in $CONFIGS; do [ "${c%%:*}" = "$VERBS_CFG" ] && echo "$c"; done)
cfg_name() { echo "${1%%:*}"; }
cfg_sets() { # CONFIG -> --set lcore.K=V ... (a key with a section, S.K=V, as it is)
	local kv
	for kv in $(echo "${1#*:}" | tr ',' ' '); do
		case ${kv%%=*} in
		*.*) printf -- '--set %s ' "$kv" ;;
		*) printf -- '--set lcore.%s ' "$kv" ;;
		esac
	done
}

if [ "$(id -u)" -ne 0 ]; then
	echo "two_hosts: skipped: needs root (network namespaces, veth, af_packet)"
	exit 77
fi
for tool in ip timeout awk sort; do
	command -v "$tool" >/dev/null || { echo "two_hosts: skipped: $tool not found"; exit 77; }
done
for b in "$UROCED" "$UROCE_XFER" "$UROCE_CLI" "$UROCE_RAWBENCH" "$UROCE_BENCH_UDP"; do
	[ -x "$b" ] || { echo "two_hosts: skipped: $b not built"; exit 77; }
done
# The rows over libibverbs are optional: without their programs, a note and no row.
NOTES=()
if [ ! -e "$VERBS_LIB_DIR/libibverbs.so.1" ]; then
	NOTES+=("no $VERBS_LIB_DIR/libibverbs.so.1: perftest and verbs rows skipped")
	ONLY=$(echo ",$ONLY," | sed 's/,perftest,/,/; s/,verbs,/,/; s/,qps,/,/')
fi
if ! command -v ib_send_lat >/dev/null || ! command -v ib_write_bw >/dev/null; then
	NOTES+=("perftest not installed (ib_send_lat, ib_write_bw): perftest rows skipped")
	ONLY=$(echo ",$ONLY," | sed 's/,perftest,/,/; s/,qps,/,/')
fi
if [ ! -x "$UROCE_BENCH_VERBS" ]; then
	NOTES+=("no $UROCE_BENCH_VERBS: verbs-overhead rows skipped")
	ONLY=$(echo ",$ONLY," | sed 's/,verbs,/,/')
fi

# Sizes of the run. Full: 1.5 min on a quiet machine, 3 on a busy one; quick: 25-50 s.
if [ $QUICK -eq 1 ]; then
	: "${REPS:=1}"
	PP_ROUNDS=3000 UDP_BLOCK_ROUNDS=1000 BLAST_SECS=0.5 LAT_ITERS=1000 BW_ITERS=300
	LAT_ITERS_SPIN=200 BW_ITERS_MEMIF=1000
	: "${VB_RUNS:=1}"
	PT_LAT_ITERS=100 PT_BW_ITERS=300 PT_BW_ITERS_MEMIF=1000
	CURVE_SIZES="256 4096 65536" CURVE_QPS="1 4" CURVE_BYTES=$((64 << 20))
	CURVE_MIN_ITERS=256 CURVE_MAX_ITERS=20000 CURVE_RATE_ITERS=20000
else
	: "${REPS:=3}"
	PP_ROUNDS=20000 UDP_BLOCK_ROUNDS=5000 BLAST_SECS=2 LAT_ITERS=5000 BW_ITERS=2000
	LAT_ITERS_SPIN=1000 BW_ITERS_MEMIF=${BW_ITERS_MEMIF:-10000}
	: "${VB_RUNS:=5}"
	PT_LAT_ITERS=300 PT_BW_ITERS=2000 PT_BW_ITERS_MEMIF=10000
	CURVE_SIZES="64 256 1024 4096 16384 65536 262144 1048576" CURVE_QPS="1 2 4 8 16 32"
	CURVE_BYTES=$((4 << 30)) CURVE_MIN_ITERS=2000 CURVE_MAX_ITERS=200000
	CURVE_RATE_ITERS=200000
fi
# Verbs-overhead pairs per link and repetition, so that REPS of them make VB_RUNS or more.
VB_PER_REP=$(((VB_RUNS + REPS - 1) / REPS))
# spin (idle_yield_us=0, idle_sleep_us=0): the daemons never give their CPU away and the
# applications wait for the scheduler (milliseconds per message on 2 CPUs): fewer rounds.
# memif moves 5-10x more data than veth: more WRITEs, so that its bw run lasts ~1 s.
RAW_BLAST_SIZE=1082   # Ethernet..ICRC of a middle RDMA WRITE packet at path MTU 1024
RAW_BLAST_SIZE_4K=4154 # the same at path MTU 4096
UDP_BLAST_SIZE=1472   # a 1514-byte frame at MTU 1500
STEP_TIMEOUT=$([ $QUICK -eq 1 ] && echo 25 || echo 40) # a wedged step is killed, counted

# ---- names (prefix ub-: nothing here collides with other tests) --------------------------
ID=$$
NS_A=ub-$ID-a NS_B=ub-$ID-b
IF_A=ub-${ID}a IF_B=ub-${ID}b           # <= 15 characters
TMP=$(mktemp -d "/tmp/ub-two-hosts.XXXXXX")
MEMIF_SOCK=$TMP/memif.sock
TCP_PORT=$((20000 + ID % 20000))
UDP_PORT=$((40000 + ID % 20000))
IP_UDP_A=10.201.0.1 IP_UDP_B=10.201.0.2  # kernel addresses, UDP part only
IP_ROCE_A=10.202.0.1 IP_ROCE_B=10.202.0.2
PIDS=()
FAILS=0
START=$SECONDS

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }

cleanup() {
	local rc=$? pid i
	trap - EXIT INT TERM HUP
	for pid in "${PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${PIDS[@]}"; do
		for i in $(seq 1 30); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	ip link del "$IF_A" 2>/dev/null
	# A killed DPDK process leaves its hugepage files and runtime directory behind.
	rm -f /dev/hugepages/ub-"$ID"* 2>/dev/null
	rm -rf /var/run/dpdk/ub-"$ID"* 2>/dev/null
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -d "$TMP" ]; then
		echo "two_hosts: exit $rc; logs of the last steps:"
		ls -t "$TMP"/*.log 2>/dev/null | head -4 | while read -r f; do
			echo "---- $f"
			tail -n 15 "$f"
		done
	fi
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# fail WHAT: counts a failure and shows what the running daemons counted that could
# explain it (errors, drops, retries, the neighbour cache, the CM, the link): the step's
# logs are gone by the time anyone reads a failed CI run.
fail() {
	local d
	log "FAIL: $*"
	FAILS=$((FAILS + 1))
	for d in A B; do
		[ -S "$TMP/$d.sock" ] || continue
		echo "    daemon $d: $("$UROCE_CLI" -S "$TMP/$d.sock" stat 2>/dev/null |
			awk '$2 != 0 && $1 ~ /_err|error|drop|retr|timeout|refus|neigh|unreach|link_|^cm\.|nak|rnr|full/ {
				printf "%s=%s ", $1, $2 }')" | fold -s -w 150 | sed '2,$s/^/      /'
	done
}

# forget PID: drop a finished process from the cleanup list.
forget() {
	local p keep=()
	for p in "${PIDS[@]}"; do
		[ "$p" = "$1" ] || keep+=("$p")
	done
	PIDS=("${keep[@]}")
}

# stop PID: SIGTERM, SIGKILL after 5 s.
stop() {
	local pid=$1 i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null
	for i in $(seq 1 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	forget "$pid"
}

# wait_line FILE REGEX PID SECONDS: until FILE has a line matching REGEX (0), PID died
# or the time is up (1).
wait_line() {
	local i
	for i in $(seq 1 $(($4 * 20))); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# ---- results: one file per (key), one figure per line, the median at the end -------------
record() { # KEY VALUE
	[ -n "$2" ] && echo "$2" >>"$TMP/res.$1"
}
median() { # KEY -> median of the recorded values, or "-"
	local f=$TMP/res.$1
	[ -s "$f" ] || { echo "-"; return; }
	sort -g "$f" | awk '{ v[NR] = $1 } END {
		if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.2f\n", m }'
}
spread() { # KEY -> (max - min) / median in %, or "-" (fewer than 2 values)
	local f=$TMP/res.$1
	[ -s "$f" ] && [ "$(grep -c . "$f")" -ge 2 ] || { echo "-"; return; }
	sort -g "$f" | awk '{ v[NR] = $1 } END {
		if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
		if (m == 0) print "-"; else printf "%.0f%%\n", 100 * (v[NR] - v[1]) / m }'
}
# The figures kept for plots, when PLOT_DIR is set (devtools/bench_all.sh sets it and
# draws them with devtools/plot_png.py):
# cdf KEY FILE PREFIX: the latency percentiles (0..100) a program printed on its line
# "PREFIX: cdf_half_rtt_us=...", added as one line per repetition to $PLOT_DIR/KEY.cdf.
cdf() {
	[ -n "${PLOT_DIR:-}" ] || return 0
	mkdir -p "$PLOT_DIR" && grep -m1 "^$3: cdf_half_rtt_us=" "$2" | sed 's/.*=//' \
		>>"$PLOT_DIR/$1.cdf"
}
# point KEY X VALUE: one repetition's VALUE at X of curve KEY, added to $PLOT_DIR/KEY.pts
# and recorded as KEY@X for the table.
point() {
	[ -n "$3" ] || return 0
	record "$1@$2" "$3"
	[ -n "${PLOT_DIR:-}" ] || return 0
	mkdir -p "$PLOT_DIR" && echo "$2 $3" >>"$PLOT_DIR/$1.pts"
}
# kv FILE LINE_REGEX KEY: the value of KEY=... on the first line matching LINE_REGEX
kv() {
	grep -m1 "$2" "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$3=//p" | head -1
}

# ---- the links ------------------------------------------------------------------------------
ip netns add "$NS_A" && ip netns add "$NS_B" &&
	ip link add "$IF_A" netns "$NS_A" type veth peer name "$IF_B" netns "$NS_B" ||
	{ echo "two_hosts: could not create the namespaces and the veth pair"; exit 1; }
for side in A B; do
	ns_v=NS_$side if_v=IF_$side
	ns=${!ns_v} ifc=${!if_v}
	# No IPv6 (no ND/MLD noise on the wire the daemons own), MTU 1500, up.
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 2>/dev/null
	ip -n "$ns" link set "$ifc" mtu 1500 up && ip -n "$ns" link set lo up ||
		{ echo "two_hosts: could not bring $ifc up"; exit 1; }
done
EXEC_A="ip netns exec $NS_A"
EXEC_B="ip netns exec $NS_B"

EAL_COMMON="--no-pci --no-huge --no-telemetry --log-level=lib.eal:error"
VDEV_AFP_A="net_af_packet0,iface=$IF_A"
VDEV_AFP_B="net_af_packet0,iface=$IF_B"
VDEV_MEMIF_S="net_memif0,role=server,socket=$MEMIF_SOCK,socket-abstract=no,bsize=9216"
VDEV_MEMIF_C="net_memif0,role=client,socket=$MEMIF_SOCK,socket-abstract=no,bsize=9216"

# ---- raw DPDK: uroce-rawbench, server on CPU 0, client on CPU 1 ---------------------------
# rawbench LINK NAME WRAP_S VDEV_S WRAP_C VDEV_C BENCH_ARGS...
rawbench() {
	local link=$1 name=$2 ws=$3 vs=$4 wc=$5 vc=$6
	shift 6
	local out=$TMP/raw-$link-$name-$REP spid rc
	rm -f "$MEMIF_SOCK"
	# shellcheck disable=SC2086
	timeout -k 2 $STEP_TIMEOUT $ws "$UROCE_RAWBENCH" $EAL_COMMON -m 256 \
		--file-prefix "ub-$ID-rs" -l 0 --vdev="$vs" -- --role server \
		--timeout $((STEP_TIMEOUT - 5)) "$@" >"$out.server.log" 2>&1 &
	spid=$!
	PIDS+=("$spid")
	wait_line "$out.server.log" "^server: port" "$spid" 20 ||
		{ fail "rawbench $link $name: the server did not start"; stop "$spid"; return 1; }
	# shellcheck disable=SC2086
	timeout -k 2 $STEP_TIMEOUT $wc "$UROCE_RAWBENCH" $EAL_COMMON -m 256 \
		--file-prefix "ub-$ID-rc" -l 1 --vdev="$vc" -- --role client "$@" \
		>"$out.client.log" 2>&1
	rc=$?
	wait "$spid" 2>/dev/null
	forget "$spid"
	[ $rc -eq 0 ] || fail "rawbench $link $name: client exit $rc"
	RAW_OUT=$out.client.log
}

raw_pair() { # LINK WRAP_S VDEV_S WRAP_C VDEV_C
	local link=$1 v
	rawbench "$link" pingpong "$2" "$3" "$4" "$5" --mode pingpong --size 64 \
		--count "$PP_ROUNDS"
	v=$(kv "$RAW_OUT" "^pingpong: size" median_us)
	[ -n "$v" ] && record "$link.raw.lat" "$(awk -v x="$v" 'BEGIN { print x / 2 }')"
	v=$(kv "$RAW_OUT" "^pingpong: size" p99_us)
	[ -n "$v" ] && record "$link.raw.p99" "$(awk -v x="$v" 'BEGIN { print x / 2 }')"
	log "  raw DPDK $link 64 B ping-pong: $(grep -m1 '^pingpong: size' "$RAW_OUT")"
	cdf "$link.raw" "$RAW_OUT" pingpong
	rawbench "$link" blast "$2" "$3" "$4" "$5" --mode blast --size $RAW_BLAST_SIZE \
		--duration "$BLAST_SECS"
	v=$(kv "$RAW_OUT" "^blast-result" server_mpps)
	if [ -n "$v" ]; then
		record "$link.raw.mpps" "$v"
		# the figure: 1024-byte payloads at the frame rate received
		record "$link.raw.bw" "$(awk -v x="$v" 'BEGIN { print x * 1024 * 8 / 1000 }')"
	fi
	log "  raw DPDK $link $RAW_BLAST_SIZE B blast: $(grep -m1 '^blast-result' "$RAW_OUT")"
}

# ---- kernel UDP on the veth pair, server in A on CPU 0, client in B on CPU 1 ---------------
udp_run() { # NAME CLIENT_ARGS...
	local name=$1 out spid rc
	shift
	out=$TMP/udp-$name-$REP
	UDP_PORT=$((UDP_PORT + 1))
	# shellcheck disable=SC2086
	timeout -k 2 $STEP_TIMEOUT $EXEC_A "$UROCE_BENCH_UDP" --role server --port $UDP_PORT \
		--cpu 0 --timeout $((STEP_TIMEOUT - 5)) $UDP_SERVER_WAIT >"$out.server.log" 2>&1 &
	spid=$!
	PIDS+=("$spid")
	wait_line "$out.server.log" "^udp-server: listening" "$spid" 10 ||
		{ fail "udp $name: the server did not start"; stop "$spid"; return 1; }
	timeout -k 2 $STEP_TIMEOUT $EXEC_B "$UROCE_BENCH_UDP" --role client --addr $IP_UDP_A \
		--port $UDP_PORT --cpu 1 "$@" >"$out.client.log" 2>&1
	rc=$?
	wait "$spid" 2>/dev/null
	forget "$spid"
	[ $rc -eq 0 ] || fail "udp $name: client exit $rc"
	UDP_OUT=$out.client.log
}

udp_all() {
	local v
	ip -n "$NS_A" addr add $IP_UDP_A/24 dev "$IF_A" &&
		ip -n "$NS_B" addr add $IP_UDP_B/24 dev "$IF_B" ||
		{ fail "could not give the veths their UDP addresses"; return 1; }
	UDP_SERVER_WAIT="--wait busy"
	udp_run pp-busy --mode pingpong --size 8 --iters "$PP_ROUNDS" --wait busy
	record veth.udp.lat "$(kv "$UDP_OUT" "^udp-pingpong: size" half_rtt_median_us)"
	record veth.udp.p99 "$(kv "$UDP_OUT" "^udp-pingpong: size" half_rtt_p99_us)"
	log "  kernel UDP 8 B ping-pong, busy: $(grep -m1 '^udp-pingpong: size' "$UDP_OUT")"
	cdf veth.udp "$UDP_OUT" udp-pingpong
	UDP_SERVER_WAIT="--wait block"
	udp_run pp-block --mode pingpong --size 8 --iters "$UDP_BLOCK_ROUNDS" --wait block
	record veth.udpblk.lat "$(kv "$UDP_OUT" "^udp-pingpong: size" half_rtt_median_us)"
	record veth.udpblk.p99 "$(kv "$UDP_OUT" "^udp-pingpong: size" half_rtt_p99_us)"
	log "  kernel UDP 8 B ping-pong, blocking: $(grep -m1 '^udp-pingpong: size' "$UDP_OUT")"
	cdf veth.udpblk "$UDP_OUT" udp-pingpong
	UDP_SERVER_WAIT="--wait busy"
	udp_run blast --mode blast --size $UDP_BLAST_SIZE --duration "$BLAST_SECS" --wait block
	v=$(kv "$UDP_OUT" "^udp-blast: size" rx_payload_gbps)
	record veth.udp.bw "$v"
	log "  kernel UDP $UDP_BLAST_SIZE B blast: $(grep -m1 '^udp-blast: size' "$UDP_OUT")"
	# The daemons own the veths from here: no kernel address answers RoCE with ICMP.
	ip -n "$NS_A" addr flush dev "$IF_A"
	ip -n "$NS_B" addr flush dev "$IF_B"
}

# ---- uroced pairs -----------------------------------------------------------------------------
# daemon NAME WRAP CPU VDEV IP IDLE: starts uroced, waits for "uroced: ready"; pid in DPID_NAME
daemon() {
	local name=$1 wrap=$2 cpu=$3 vdev=$4 ip=$5 cfg=$6 log pid
	# One log per daemon run, removed first: the redirection below happens in the child,
	# after wait_line may already have looked.
	log=$TMP/uroced-$name-${vdev%%0,*}-$REP-$(cfg_name "$cfg").log
	rm -f "$TMP/$name.sock" "$log"
	# shellcheck disable=SC2086
	$wrap "$UROCED" $EAL_COMMON -m 512 --file-prefix "ub-$ID-d$name" -l "$cpu" \
		--vdev="$vdev" -- --set host.ipv4="$ip" --set control.socket="$TMP/$name.sock" \
		--set port.mtu="${DAEMON_MTU:-1500}" $(cfg_sets "$cfg") --set log.level=warning \
		>"$log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	printf -v "DPID_$name" '%s' "$pid"
	wait_line "$log" "^uroced: ready" "$pid" 30 ||
		{ fail "uroced $name did not start: $(tail -n 3 "$log" | tr '\n' ' ')"; return 1; }
}

# links_up: until both daemons' ports are up (port.link_up 1), at most 20 s. A memif link
# comes up only once the two PMDs have done their handshake after the daemons start, and
# perftest, as on an RNIC whose port is down, refuses to run ("Port number 1 state is
# Down"): it did with four CPU-bound processes beside the benchmark.
links_up() {
	local d end=$((SECONDS + 20))
	for d in A B; do
		until "$UROCE_CLI" -S "$TMP/$d.sock" stat 2>/dev/null |
			awk '$1 == "port.link_up" && $2 == 1 { ok = 1 } END { exit !ok }'; do
			[ "$SECONDS" -lt "$end" ] || { fail "daemon $d: its port is not up after 20 s"; return 1; }
			sleep 0.05
		done
	done
}

# xfer LINK IDLE MODE ARGS...: uroce-xfer server on daemon A, client on B (it measures).
xfer() {
	local link=$1 idle=$2 mode=$3 out spid rc
	shift 3
	out=$TMP/xfer-$link-$mode-$REP-$idle
	TCP_PORT=$((TCP_PORT + 1))
	timeout -k 2 $STEP_TIMEOUT "$UROCE_XFER" -S "$TMP/A.sock" "$mode" -p $TCP_PORT -t 20 \
		"$@" >"$out.server.log" 2>&1 &
	spid=$!
	PIDS+=("$spid")
	timeout -k 2 $STEP_TIMEOUT "$UROCE_XFER" -S "$TMP/B.sock" "$mode" -p $TCP_PORT -t 20 \
		"$@" 127.0.0.1 >"$out.client.log" 2>&1
	rc=$?
	wait "$spid" 2>/dev/null
	local src=$?
	forget "$spid"
	if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
		fail "uroce-xfer $mode over $link ($idle): client exit $rc, server $src"
		tail -n 3 "$out.client.log" "$out.server.log" | sed 's/^/    /'
	fi
	XFER_OUT=$out.client.log
}

# vbench LINK MODE ARGS...: uroce-bench-verbs (libibverbs), server on A, client on B;
# the same command line and output as uroce-xfer's (xfer above).
vbench() {
	local link=$1 mode=$2 out spid rc src
	shift 2
	out=$TMP/vbench-$link-$mode-$REP-$VB_I
	TCP_PORT=$((TCP_PORT + 1))
	timeout -k 2 $STEP_TIMEOUT "$UROCE_BENCH_VERBS" -S "$TMP/A.sock" "$mode" -p $TCP_PORT \
		-t 20 "$@" >"$out.server.log" 2>&1 &
	spid=$!
	PIDS+=("$spid")
	timeout -k 2 $STEP_TIMEOUT "$UROCE_BENCH_VERBS" -S "$TMP/B.sock" "$mode" -p $TCP_PORT \
		-t 20 "$@" 127.0.0.1 >"$out.client.log" 2>&1
	rc=$?
	wait "$spid" 2>/dev/null
	src=$?
	forget "$spid"
	if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
		fail "uroce-bench-verbs $mode over $link: client exit $rc, server $src"
		tail -n 3 "$out.client.log" "$out.server.log" | sed 's/^/    /'
	fi
	XFER_OUT=$out.client.log
}

# perftest LINK TOOL ARGS...: an unmodified perftest tool over the drop-in libibverbs,
# server on daemon A, client on daemon B (TCP exchange over 127.0.0.1, no -R).
perftest() {
	local link=$1 tool=$2 out spid rc src
	shift 2
	out=$TMP/perftest-$link-$tool-$REP
	TCP_PORT=$((TCP_PORT + 1))
	LD_LIBRARY_PATH=$VERBS_LIB_DIR UROCE_SOCKET=$TMP/A.sock timeout -k 2 $STEP_TIMEOUT \
		"$tool" -d uroce0 -x "$GIDX" -F "$@" -p $TCP_PORT >"$out.server.log" 2>&1 &
	spid=$!
	PIDS+=("$spid")
	# The server says nothing before a client comes (its stdout is a file, buffered):
	# wait for its TCP port instead.
	local i
	command -v ss >/dev/null || sleep 1
	for i in $(seq 1 100); do
		command -v ss >/dev/null || break
		ss -Hltn "sport = :$TCP_PORT" 2>/dev/null | grep -q . && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.05
	done
	LD_LIBRARY_PATH=$VERBS_LIB_DIR UROCE_SOCKET=$TMP/B.sock timeout -k 2 $STEP_TIMEOUT \
		"$tool" -d uroce0 -x "$GIDX" -F "$@" -p $TCP_PORT 127.0.0.1 >"$out.client.log" 2>&1
	rc=$?
	wait "$spid" 2>/dev/null
	src=$?
	forget "$spid"
	if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
		fail "$tool over $link: client exit $rc, server $src"
		tail -n 3 "$out.client.log" "$out.server.log" | sed 's/^/    /'
	fi
	PT_OUT=$out.client.log
}

# The perftest rows: ib_send_lat's columns are #bytes #iterations t_min t_max t_typical
# t_avg t_stdev 99% 99.9% (usec, half round trip); ib_write_bw's #bytes #iterations
# BW_peak BW_average (MB/sec, 2^20 bytes) MsgRate.
# gid_index: GIDX, the index of daemon B's IPv4 GID, for perftest's -x.
gid_index() {
	GIDX=$(LD_LIBRARY_PATH=$VERBS_LIB_DIR UROCE_SOCKET=$TMP/B.sock ibv_devinfo -v 2>/dev/null |
		sed -n "s/.*GID\[ *\([0-9]*\)\]:.*::ffff:${IP_ROCE_B//./\\.}.*/\1/p" | head -1)
	GIDX=${GIDX:-1}
}

perftest_pair() { # LINK
	local link=$1 v
	gid_index
	perftest "$link" ib_send_lat -s 8 -n "$PT_LAT_ITERS"
	v=$(awk '$1 == 8 && NF >= 9 && $2 ~ /^[0-9]+$/ { print $5, $8; exit }' "$PT_OUT")
	record "$link.pt.lat" "${v% *}"
	record "$link.pt.p99" "${v#* }"
	log "  perftest $link ib_send_lat -s 8 (t_min t_max t_typical t_avg t_stdev p99 p99.9):" \
		"$(awk '$1 == 8 && NF >= 9 && $2 ~ /^[0-9]+$/ { $1 = $2 = ""; print; exit }' "$PT_OUT")"
	# B2, applications blocking: -e waits on the completion channel (ibv_get_cq_event).
	perftest "$link" ib_send_lat -s 8 -e -n "$PT_LAT_ITERS"
	v=$(awk '$1 == 8 && NF >= 9 && $2 ~ /^[0-9]+$/ { print $5, $8; exit }' "$PT_OUT")
	record "$link.pte.lat" "${v% *}"
	record "$link.pte.p99" "${v#* }"
	log "  perftest $link ib_send_lat -s 8 -e:" \
		"$(awk '$1 == 8 && NF >= 9 && $2 ~ /^[0-9]+$/ { $1 = $2 = ""; print; exit }' "$PT_OUT")"
	perftest "$link" ib_write_bw -s 65536 \
		-n "$([ "$link" = memif ] && echo $PT_BW_ITERS_MEMIF || echo $PT_BW_ITERS)"
	v=$(awk '$1 == 65536 && NF >= 5 && $2 ~ /^[0-9]+$/ { print $4; exit }' "$PT_OUT")
	[ -n "$v" ] && record "$link.pt.bw" "$(awk -v x="$v" 'BEGIN { printf "%.3f\n", x * 1048576 * 8 / 1e9 }')"
	log "  perftest $link ib_write_bw -s 65536: BW average $v MB/s" \
		"($(awk '$1 == 65536 && NF >= 5 && $2 ~ /^[0-9]+$/ { print $2; exit }' "$PT_OUT") iterations)"
	# The attribution: uroce-bench-verbs's loops (uroce-xfer's) polling as perftest does,
	# with no yield of their own (--spin), same iterations as perftest.
	[ -x "$UROCE_BENCH_VERBS" ] || return 0
	VB_I=spin
	vbench "$link" lat --spin -s 8 -n "$PT_LAT_ITERS" -m 1024
	v=$(sed -n 's/^lat: .* median \([0-9.]*\) us, p99 \([0-9.]*\) us.*/\1 \2/p' "$XFER_OUT")
	record "$link.vbs.lat" "${v% *}"
	record "$link.vbs.p99" "${v#* }"
	log "  uroce-bench-verbs --spin $link: $(grep -m1 '^lat:' "$XFER_OUT")"
	vbench "$link" bw --spin -s 65536 -w 32 -m 1024 \
		-n "$([ "$link" = memif ] && echo $PT_BW_ITERS_MEMIF || echo $PT_BW_ITERS)"
	record "$link.vbs.bw" "$(sed -n 's/^bw: .* s: \([0-9.]*\) Gbit\/s.*/\1/p' "$XFER_OUT")"
	log "  uroce-bench-verbs --spin $link: $(grep -m1 '^bw:' "$XFER_OUT")"
}

# The verbs layer's overhead: the same 8 B SEND ping-pong and 64 KiB WRITE window through
# lib/client (uroce-xfer) and through libibverbs (uroce-bench-verbs), alternately.
verbs_pairs() { # LINK
	local link=$1 v n_bw
	n_bw=$([ "$link" = memif ] && echo $BW_ITERS_MEMIF || echo $BW_ITERS)
	for VB_I in $(seq 1 "$VB_PER_REP"); do
		xfer "$link" vb lat -s 8 -n "$LAT_ITERS" -m 1024
		v=$(sed -n 's/^lat: .* median \([0-9.]*\) us, p99 \([0-9.]*\) us.*/\1 \2/p' "$XFER_OUT")
		record "$link.vbc.lat" "${v% *}"
		record "$link.vbc.p99" "${v#* }"
		vbench "$link" lat -s 8 -n "$LAT_ITERS" -m 1024
		v=$(sed -n 's/^lat: .* median \([0-9.]*\) us, p99 \([0-9.]*\) us.*/\1 \2/p' "$XFER_OUT")
		record "$link.vbv.lat" "${v% *}"
		record "$link.vbv.p99" "${v#* }"
		xfer "$link" vb bw -s 65536 -w 32 -m 1024 -n "$n_bw"
		record "$link.vbc.bw" "$(sed -n 's/^bw: .* s: \([0-9.]*\) Gbit\/s.*/\1/p' "$XFER_OUT")"
		vbench "$link" bw -s 65536 -w 32 -m 1024 -n "$n_bw"
		record "$link.vbv.bw" "$(sed -n 's/^bw: .* s: \([0-9.]*\) Gbit\/s.*/\1/p' "$XFER_OUT")"
		log "  verbs overhead $link pair $VB_I: lat client $(tail -n1 "$TMP/res.$link.vbc.lat" 2>/dev/null) us, verbs $(tail -n1 "$TMP/res.$link.vbv.lat" 2>/dev/null) us; bw client $(tail -n1 "$TMP/res.$link.vbc.bw" 2>/dev/null), verbs $(tail -n1 "$TMP/res.$link.vbv.bw" 2>/dev/null) Gbit/s"
	done
}

uroced_pair() { # LINK IDLE WRAP_A VDEV_A WRAP_B VDEV_B IP_A IP_B
	local link=$1 cfg=$2 idle v k n
	idle=$(cfg_name "$cfg")
	daemon A "$3" 0 "$4" "$7" "$cfg" && daemon B "$5" 1 "$6" "$8" "$cfg" && links_up || {
		stop "${DPID_A:-}"; stop "${DPID_B:-}"; return 1; }
	k=$link.uroce-$idle
	n=$LAT_ITERS
	case ",${cfg#*:}," in *",idle_yield_us=0,"*) n=$LAT_ITERS_SPIN ;; esac
	if [ "$idle" = "$VERBS_CFG" ]; then
		want perftest "$link" && perftest_pair "$link"
		want verbs "$link" && verbs_pairs "$link"
	fi
	want uroced "$link" || { uroced_pair_stop; return 0; }
	xfer "$link" "$idle" lat -s 8 -n "$n" -m 1024
	v=$(sed -n 's/^lat: .* median \([0-9.]*\) us, p99 \([0-9.]*\) us.*/\1 \2/p' "$XFER_OUT")
	record "$k.lat" "${v% *}"
	record "$k.p99" "${v#* }"
	log "  uroced $link $cfg: $(grep -m1 '^lat:' "$XFER_OUT")"
	cdf "$k" "$XFER_OUT" lat
	if [ "$idle" = "$VERBS_CFG" ]; then
		# B2: the applications block on their completion channel between messages.
		xfer "$link" "$idle" lat -e -s 8 -n "$n" -m 1024
		v=$(sed -n 's/^lat: .* median \([0-9.]*\) us, p99 \([0-9.]*\) us.*/\1 \2/p' "$XFER_OUT")
		record "$k-e.lat" "${v% *}"
		record "$k-e.p99" "${v#* }"
		log "  uroced $link $cfg, lat -e: $(grep -m1 '^lat:' "$XFER_OUT")"
		cdf "$k-e" "$XFER_OUT" lat
		# B2, applications that poll, with lib/client's blocking wait policy: an
		# empty poll_cq sleeps until a completion (doc/verbs.md).
		UROCE_CQ_WAIT=block xfer "$link" "$idle" lat -s 8 -n "$n" -m 1024
		v=$(sed -n 's/^lat: .* median \([0-9.]*\) us, p99 \([0-9.]*\) us.*/\1 \2/p' "$XFER_OUT")
		record "$k-block.lat" "${v% *}"
		record "$k-block.p99" "${v#* }"
		log "  uroced $link $cfg, UROCE_CQ_WAIT=block: $(grep -m1 '^lat:' "$XFER_OUT")"
	fi
	xfer "$link" "$idle" bw -s 65536 -w 32 -m 1024 \
		-n "$([ "$link" = memif ] && echo $BW_ITERS_MEMIF || echo $BW_ITERS)"
	v=$(sed -n 's/^bw: .* s: \([0-9.]*\) Gbit\/s.*/\1/p' "$XFER_OUT")
	record "$k.bw" "$v"
	log "  uroced $link $cfg: $(grep -m1 '^bw:' "$XFER_OUT")"
	# Transport counters that explain a slow run (retransmissions, RNR, drops).
	for d in A B; do
		"$UROCE_CLI" -S "$TMP/$d.sock" stat 2>/dev/null >"$TMP/stat-$link-$idle-$REP-$d.log"
		v=$(awk '$1 ~ /^(rcvd_seq_err|duplicate_request|out_of_seq_request|rcvd_rnr_err|send_rnr_err|tx_busy|completer_retry_err|port.tx_dropped|port.imissed|daemon.tx_refused)$/ && $2 != 0 { printf "%s=%s ", $1, $2 }' \
			"$TMP/stat-$link-$idle-$REP-$d.log")
		[ -n "$v" ] && log "    daemon $d: $v"
	done
	uroced_pair_stop
}

# B5 at path MTU 4096 over memif: raw DPDK's blast of frames the size of a middle RDMA
# WRITE packet at that MTU, then two uroced with MTU 9000 ports (VERBS_CFG) and uroce-xfer
# bw with -m 4096: as configured (payloads copied into the port's mbufs), then with them
# left in the MRs (transport.zero_copy_min=1024), the same run's measure of the copy.
mtu4096_pair() {
	local v cfg key
	rawbench memif blast4k "" "$VDEV_MEMIF_S" "" "$VDEV_MEMIF_C" --mode blast --mtu 9000 \
		--size $RAW_BLAST_SIZE_4K --duration "$BLAST_SECS"
	v=$(kv "$RAW_OUT" "^blast-result" server_mpps)
	[ -n "$v" ] && record "memif4k.raw.bw" "$(awk -v x="$v" 'BEGIN { print x * 4096 * 8 / 1000 }')"
	log "  raw DPDK memif $RAW_BLAST_SIZE_4K B blast: $(grep -m1 '^blast-result' "$RAW_OUT")"
	for key in uroce zc; do
		cfg=$VERBS_CFG_FULL
		[ $key = zc ] && cfg="$cfg,transport.zero_copy_min=1024"
		DAEMON_MTU=9000
		daemon A "" 0 "$VDEV_MEMIF_S" $IP_ROCE_A "$cfg" &&
			daemon B "" 1 "$VDEV_MEMIF_C" $IP_ROCE_B "$cfg" && links_up || {
			DAEMON_MTU=; stop "${DPID_A:-}"; stop "${DPID_B:-}"; return 1; }
		DAEMON_MTU=
		xfer memif 4k bw -s 65536 -w 32 -m 4096 -n $BW_ITERS_MEMIF
		record "memif4k.$key.bw" \
			"$(sed -n 's/^bw: .* s: \([0-9.]*\) Gbit\/s.*/\1/p' "$XFER_OUT")"
		log "  uroced memif MTU 4096 ($key): $(grep -m1 '^bw:' "$XFER_OUT");" \
			"$("$UROCE_CLI" -S "$TMP/B.sock" stat 2>/dev/null |
				awk '$1 == "daemon.tx_zero_copy" { print $1, $2 }')"
		uroced_pair_stop
	done
}

# The curves, over memif with the [VERBS_CFG] pair at path MTU 4096 (MTU 9000 ports):
#   sizes: uroce-xfer bw (RDMA WRITE, window 32) at each of CURVE_SIZES, against raw
#     DPDK's blast of the frames that carry it: a WRITE ONLY of S <= 4096 bytes is S + 74
#     bytes on the wire (Ethernet, IPv4, UDP, BTH, RETH, ICRC), a larger WRITE is mostly
#     middle packets of 4154 carrying 4096; both as payload Gbit/s;
#   qps: unmodified perftest ib_write_bw -q N, N in CURVE_QPS, at 64 KiB (Gbit/s) and at
#     64 B (million messages/s): the baseline is the same run's one-QP figure.
# pt_iters_per_qp TOTAL Q: perftest ib_write_bw's -n for Q QPs carrying about TOTAL WRITEs,
# rounded up to a multiple of its completion moderation (cq_mod, 100). perftest signals
# every 100th WRITE and the last, counts 100 for each completion, and stops polling its
# one CQ once the count reaches Q x n: with n not a multiple of 100, each QP that ends
# counts up to 99 it never sent, the count can reach Q x n while other QPs still wait for
# completions, and those QPs, unable to post past their tx depth, never finish (seen at
# -q 32 -n 6250: completions left unpolled in the CQ, the run killed by its timeout).
pt_iters_per_qp() {
	echo $(((($1 + $2 - 1) / $2 + 99) / 100 * 100))
}

curves_pair() {
	local s n v frame pay q last= cfg=$VERBS_CFG_FULL
	if want sizes memif; then
		for s in $CURVE_SIZES; do
			pay=$((s < 4096 ? s : 4096))
			frame=$((s <= 4096 ? s + 74 : 4154))
			# Every size above 4096 is carried by the same frames: one blast for them.
			if [ "$frame" != "$last" ]; then
				rawbench memif "blast$s" "" "$VDEV_MEMIF_S" "" "$VDEV_MEMIF_C" \
					--mode blast --mtu 9000 --size $frame --duration "$BLAST_SECS"
				v=$(kv "$RAW_OUT" "^blast-result" server_mpps)
				last=$frame
			fi
			[ -n "$v" ] && point size.raw "$s" \
				"$(awk -v x="$v" -v p=$pay 'BEGIN { print x * p * 8 / 1000 }')"
		done
		log "  raw DPDK memif blasts, payload Gbit/s by size: $(for s in $CURVE_SIZES; do
			printf '%s:%s ' "$s" "$(tail -n1 "$TMP/res.size.raw@$s" 2>/dev/null)"; done)"
	fi
	DAEMON_MTU=9000
	daemon A "" 0 "$VDEV_MEMIF_S" $IP_ROCE_A "$cfg" &&
		daemon B "" 1 "$VDEV_MEMIF_C" $IP_ROCE_B "$cfg" && links_up || {
		DAEMON_MTU=; stop "${DPID_A:-}"; stop "${DPID_B:-}"; return 1; }
	DAEMON_MTU=
	if want sizes memif; then
		for s in $CURVE_SIZES; do
			# About CURVE_BYTES a point, within CURVE_MIN_ITERS..CURVE_MAX_ITERS WRITEs.
			n=$((CURVE_BYTES / s))
			n=$((n < CURVE_MIN_ITERS ? CURVE_MIN_ITERS : n > CURVE_MAX_ITERS ? CURVE_MAX_ITERS : n))
			xfer memif "size$s" bw -s "$s" -w 32 -m 4096 -n $n
			point size.uroce "$s" "$(sed -n 's/^bw: .* s: \([0-9.]*\) Gbit\/s.*/\1/p' "$XFER_OUT")"
		done
		log "  uroced memif MTU 4096 bw, Gbit/s by size: $(for s in $CURVE_SIZES; do
			printf '%s:%s ' "$s" "$(tail -n1 "$TMP/res.size.uroce@$s" 2>/dev/null)"; done)"
	fi
	if want qps memif; then
		gid_index
		for q in $CURVE_QPS; do
			# perftest's -n is per QP: the run's total stays the same at every N.
			perftest memif ib_write_bw -q "$q" -s 65536 -m 4096 \
				-n "$(pt_iters_per_qp "$PT_BW_ITERS_MEMIF" "$q")"
			v=$(awk '$1 == 65536 && NF >= 5 && $2 ~ /^[0-9]+$/ { print $4; exit }' "$PT_OUT")
			[ -n "$v" ] && point qps.bw "$q" \
				"$(awk -v x="$v" 'BEGIN { printf "%.3f\n", x * 1048576 * 8 / 1e9 }')"
			perftest memif ib_write_bw -q "$q" -s 64 -m 4096 \
				-n "$(pt_iters_per_qp "$CURVE_RATE_ITERS" "$q")"
			point qps.rate "$q" \
				"$(awk '$1 == 64 && NF >= 5 && $2 ~ /^[0-9]+$/ { print $5; exit }' "$PT_OUT")"
			log "  perftest memif ib_write_bw -q $q: 64 KiB $(tail -n1 "$TMP/res.qps.bw@$q" \
				2>/dev/null) Gbit/s, 64 B $(tail -n1 "$TMP/res.qps.rate@$q" 2>/dev/null) Mmsg/s"
		done
	fi
	uroced_pair_stop
}

uroced_pair_stop() {
	# The memif client first: a memif side still polling when its peer goes can crash.
	stop "$DPID_B"
	stop "$DPID_A"
	rm -f "$MEMIF_SOCK"
}

# ---- the run ----------------------------------------------------------------------------------
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
log "two_hosts: $REPS repetition(s)$([ $QUICK -eq 1 ] && echo ', quick'); load average $LOAD_START; $(nproc) CPUs"
log "links: veth $IF_A ($NS_A) <-> $IF_B ($NS_B); memif $MEMIF_SOCK"
want() { # PART LINK: is it in --only and --link?
	case ",$ONLY," in *",$1,"*) ;; *) return 1 ;; esac
	case ",$LINKS," in *",$2,"*) return 0 ;; *) return 1 ;; esac
}
want_pair() { # CONFIG LINK: does this uroced pair have anything to run?
	want uroced "$2" && return 0
	[ "$(cfg_name "$1")" = "$VERBS_CFG" ] || return 1
	want perftest "$2" || want verbs "$2"
}
for REP in $(seq 1 "$REPS"); do
	log "repetition $REP (load average $(cut -d' ' -f1-3 /proc/loadavg))"
	want raw veth && raw_pair veth "$EXEC_A" "$VDEV_AFP_A" "$EXEC_B" "$VDEV_AFP_B"
	want udp veth && udp_all
	for cfg in $CONFIGS; do
		want_pair "$cfg" veth || continue
		uroced_pair veth "$cfg" "$EXEC_A" "$VDEV_AFP_A" "$EXEC_B" "$VDEV_AFP_B" \
			$IP_ROCE_A $IP_ROCE_B
	done
	want raw memif && raw_pair memif "" "$VDEV_MEMIF_S" "" "$VDEV_MEMIF_C"
	for cfg in $CONFIGS; do
		want_pair "$cfg" memif || continue
		uroced_pair memif "$cfg" "" "$VDEV_MEMIF_S" "" "$VDEV_MEMIF_C" \
			$IP_ROCE_A $IP_ROCE_B
	done
	want mtu4096 memif && mtu4096_pair
	{ want sizes memif || want qps memif; } && curves_pair
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- the table ----------------------------------------------------------------------------------
ratio() { # A B -> A/B with 2 decimals, or "-"
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f\n", a / b }'
}
row() { # LINK WHAT KEY UNIT RAWKEY UDPKEY
	local v p raw udp
	v=$(median "$3")
	p=$(median "${3%.*}.p99")
	[ "$4" = us ] || p=-
	raw=$(median "$5")
	udp=$(median "$6")
	printf '%-6s %-40s %9s %9s %-7s %7s %9s %9s\n' "$1" "$2" "$v" "$p" "$4" "$(spread "$3")" \
		"$(ratio "$v" "$raw")" "$(ratio "$v" "$udp")"
}
echo
echo "two_hosts: medians of $REPS repetition(s), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load average at start $LOAD_START, at end $LOAD_END; $(nproc) CPUs"
echo "latency: half round trip (RTT/2) in us; bandwidth: Gbit/s of payload"
echo "p99: median over the repetitions of each one's p99; spread: (max - min) / median of the"
echo "repetitions' medians (a large one: the machine disturbed that row, rerun when quiet)"
echo "x raw = figure / raw DPDK's on the same link; x udp = figure / kernel UDP's (busy) on the veth"
echo "(the 'apps block' row: / kernel UDP's blocking ping-pong, both sides sleeping between messages)"
echo
printf '%-6s %-40s %9s %9s %-7s %7s %9s %9s\n' link what median p99 unit spread "x raw" "x udp"
for link in veth memif; do
	row $link "raw DPDK 64 B ping-pong" $link.raw.lat us $link.raw.lat veth.udp.lat
	[ $link = veth ] && {
		row veth "kernel UDP 8 B ping-pong (busy poll)" veth.udp.lat us veth.raw.lat veth.udp.lat
		row veth "kernel UDP 8 B ping-pong (blocking)" veth.udpblk.lat us veth.raw.lat veth.udp.lat
	}
	for cfg in $CONFIGS; do
		idle=$(cfg_name "$cfg")
		row $link "uroced 8 B RC SEND lat [$idle]" $link.uroce-$idle.lat us \
			$link.raw.lat veth.udp.lat
	done
	row $link "uroced lat -e, apps block [$VERBS_CFG]" $link.uroce-$VERBS_CFG-e.lat us \
		$link.raw.lat veth.udpblk.lat
	row $link "uroced lat, UROCE_CQ_WAIT=block [$VERBS_CFG]" \
		$link.uroce-$VERBS_CFG-block.lat us $link.raw.lat veth.udp.lat
	row $link "perftest ib_send_lat -s 8 [$VERBS_CFG]" $link.pt.lat us $link.raw.lat veth.udp.lat
	row $link "perftest ib_send_lat -s 8 -e, apps block" $link.pte.lat us $link.raw.lat \
		veth.udpblk.lat
	row $link "  same loop as uroced row, no yield" $link.vbs.lat us $link.raw.lat veth.udp.lat
	row $link "raw DPDK blast ${RAW_BLAST_SIZE} B frames (x1024 B)" $link.raw.bw Gbit/s \
		$link.raw.bw veth.udp.bw
	[ $link = veth ] &&
		row veth "kernel UDP blast ${UDP_BLAST_SIZE} B" veth.udp.bw Gbit/s veth.raw.bw veth.udp.bw
	for cfg in $CONFIGS; do
		idle=$(cfg_name "$cfg")
		row $link "uroced 64 KiB WRITE bw [$idle]" $link.uroce-$idle.bw Gbit/s \
			$link.raw.bw veth.udp.bw
	done
	row $link "perftest ib_write_bw -s 65536 [$VERBS_CFG]" $link.pt.bw Gbit/s \
		$link.raw.bw veth.udp.bw
	row $link "  same loop as uroced row, no yield" $link.vbs.bw Gbit/s $link.raw.bw veth.udp.bw
done
row memif "raw DPDK blast ${RAW_BLAST_SIZE_4K} B frames (x4096 B)" memif4k.raw.bw Gbit/s \
	memif4k.raw.bw veth.udp.bw
row memif "uroced 64 KiB WRITE bw, MTU 4096 [$VERBS_CFG]" memif4k.uroce.bw Gbit/s \
	memif4k.raw.bw veth.udp.bw
row memif "  the same, zero-copy TX" memif4k.zc.bw Gbit/s memif4k.raw.bw veth.udp.bw
crow() { # WHAT KEY BASEKEY: a point of a curve, its spread and its ratio to BASEKEY's
	local v b
	v=$(median "$2")
	b=$(median "$3")
	printf '%-6s %-40s %9s %9s %-7s %7s %9s\n' memif "$1" "$v" "$b" "$4" "$(spread "$2")" \
		"$(ratio "$v" "$b")"
}
if want sizes memif || want qps memif; then
	echo
	echo "curves (memif, path MTU 4096, [$VERBS_CFG] pair; PLOT_DIR keeps every point):"
	printf '%-6s %-40s %9s %9s %-7s %7s %9s\n' link what median baseline unit spread ratio
	for s in $CURVE_SIZES; do
		crow "uroced WRITE bw, $s B (/ raw DPDK)" "size.uroce@$s" "size.raw@$s" Gbit/s
	done
	for q in $CURVE_QPS; do
		crow "ib_write_bw -q $q, 64 KiB (/ -q 1)" "qps.bw@$q" "qps.bw@1" Gbit/s
	done
	for q in $CURVE_QPS; do
		crow "ib_write_bw -q $q, 64 B (/ -q 1)" "qps.rate@$q" "qps.rate@1" Mmsg/s
	done
fi
nvals() { [ -s "$TMP/res.$1" ] && grep -c . "$TMP/res.$1" || echo 0; }
vrow() { # LINK WHAT KEY UNIT
	local c v
	c=$(median "$1.vbc.$3")
	v=$(median "$1.vbv.$3")
	printf '%-6s %-30s %-7s %9s %9s %8s %7s %7s %3s\n' "$1" "$2" "$4" "$c" "$v" \
		"$(ratio "$v" "$c")" "$(spread "$1.vbc.$3")" "$(spread "$1.vbv.$3")" "$(nvals "$1.vbv.$3")"
}
echo
echo "verbs layer overhead, uroced pairs in [$VERBS_CFG], same daemons, runs alternated:"
echo "client = uroce-xfer (lib/client), verbs = uroce-bench-verbs (the same loop through"
echo "libibverbs: ibv_post_send/ibv_post_recv/ibv_poll_cq); medians of n runs each"
printf '%-6s %-30s %-7s %9s %9s %8s %7s %7s %3s\n' link what unit client verbs "v/c" "spr c" "spr v" n
for link in veth memif; do
	vrow $link "8 B RC SEND lat (median)" lat us
	vrow $link "8 B RC SEND lat (p99)" p99 us
	vrow $link "64 KiB WRITE bw, window 32" bw Gbit/s
done
echo
echo "CPU: 2 CPUs. raw DPDK and kernel UDP: 2 processes, pinned to CPU 0 and 1 (2 pollers)."
echo "uroced: 2 daemons pinned to CPU 0 and 1 plus 2 uroce-xfer processes, unpinned, that"
echo "spin on their CQ then yield (4 pollers on 2 CPUs). uroced poll loop, [lcore] keys:"
for cfg in $CONFIGS; do
	echo "  [$(cfg_name "$cfg")] ${cfg#*:}"
done
echo "perftest rows: unmodified perftest 4.5 over the drop-in libibverbs (-d uroce0 -x GID -F);"
echo "  ib_send_lat: t_typical (its median), half round trip, p99 its 99% percentile;"
echo "  ib_write_bw: BW average [MB/sec] x 2^20 x 8 / 1e9; both on the [$VERBS_CFG] pairs."
echo "  perftest polls its CQ with no yield of its own (lib/client's poll_cq yields every"
echo "  64th empty poll since 0dd2c84; uroce-xfer also yields after 50 polls of its own);"
echo "  'same loop as uroced row, no yield': uroce-bench-verbs --spin, uroce-xfer's loop through"
echo "  libibverbs polling as perftest does, with perftest's iteration counts."
for n in "${NOTES[@]}"; do echo "note: $n"; done
echo "raw DPDK blast figure: the received frame rate x 1024 B of payload per frame (uroce's"
echo "data frames at path MTU 1024 are $RAW_BLAST_SIZE B); its Mpps: veth $(median veth.raw.mpps), memif $(median memif.raw.mpps)."
log "two_hosts: $((SECONDS - START)) s, $FAILS failure(s)"
[ $FAILS -eq 0 ]
