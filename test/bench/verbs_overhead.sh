#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The verbs layer's per-call cost without the network (doc/benchmarks.md, "Verbs layer
# overhead"): one uroced (net_null port: every frame takes its loopback path), pinned to
# CPU 0; `uroce-bench-verbs micro` (ibv_post_send / ibv_post_recv / ibv_poll_cq through the
# drop-in libibverbs) and `uroce-bench-verbs-client micro` (the same loop on
# uroce_client_post_send / post_recv / poll_cq), pinned to CPU 0 (the daemon's) and then
# to CPU 1, run alternately, REPS times each (5; 1 with --quick); the tables give the
# median of the runs' medians and the difference, which is what lib/verbs adds per call.
#
# usage: verbs_overhead.sh [--quick] [--reps N] [--build DIR]
#   binaries: DIR/app/uroced/uroced, DIR/test/bench/uroce-bench-verbs{,-client}
#   (default DIR: ./build beside this checkout; UROCED, UROCE_BENCH_VERBS,
#   UROCE_BENCH_VERBS_CLIENT override one each). VB_IDLE: the daemon's [lcore] keys,
#   default "idle_yield_us=2,idle_sleep_us=10000" (uroced's defaults); VB_CPUS: the
#   benchmark's CPUs, default "0 1".
# Needs root (uroced): prints "skipped" and exits 77 otherwise.
set -u

BENCH=verbs_overhead
# Its argument parsing only: this benchmark runs one daemon of its own, no veth pair.
. "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_args "$@"
: "${UROCED:=$BUILD/app/uroced/uroced}"
: "${UROCE_BENCH_VERBS:=$BUILD/test/bench/uroce-bench-verbs}"
: "${UROCE_BENCH_VERBS_CLIENT:=$BUILD/test/bench/uroce-bench-verbs-client}"
: "${VB_IDLE:=idle_yield_us=2,idle_sleep_us=10000}"
if [ $QUICK -eq 1 ]; then
	: "${REPS:=1}"
	BATCHES=300
else
	: "${REPS:=5}"
	BATCHES=3000
fi

bench_need uroced "$UROCED" "$UROCE_BENCH_VERBS" "$UROCE_BENCH_VERBS_CLIENT"

ID=$$
TMP=$(mktemp -d "/tmp/vb-overhead.XXXXXX")
SOCK=$TMP/vb.sock
PREFIX=vb-$ID-d
DPID=

cleanup() {
	local rc=$? i
	trap - EXIT INT TERM HUP
	if [ -n "$DPID" ]; then
		kill -TERM "$DPID" 2>/dev/null
		for i in $(seq 1 50); do
			kill -0 "$DPID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
	fi
	rm -f /dev/hugepages/"$PREFIX"* 2>/dev/null
	rm -rf /var/run/dpdk/"$PREFIX"* 2>/dev/null
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		for f in "$TMP"/*.log; do
			[ -e "$f" ] && { echo "---- $f"; tail -n 10 "$f"; }
		done
	fi
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }

sets=()
for kv in $(echo "$VB_IDLE" | tr ',' ' '); do
	sets+=(--set "lcore.$kv")
done
"$UROCED" --no-pci --no-huge --no-telemetry --log-level=lib.eal:error -m 512 \
	--file-prefix "$PREFIX" -l 0 --vdev=net_null0,no-rx=1 -- \
	--set host.ipv4=10.203.0.1 --set control.socket="$SOCK" --set port.mtu=1500 \
	"${sets[@]}" --set log.level=warning >"$TMP/uroced.log" 2>&1 &
DPID=$!
bench_wait_ready "$TMP/uroced.log" "$DPID" 30

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
log "verbs_overhead: $REPS run(s) per API, $BATCHES batches of 64 calls each; load average $LOAD_START; $(nproc) CPUs"
log "uroced on CPU 0 (net_null, loopback; lcore $VB_IDLE); benchmark on CPU ${VB_CPUS:-0 and 1}"
FAILS=0
# Two placements of the benchmark: on the daemon's CPU (0: while the benchmark runs its
# loop the daemon does not, so a call costs what its own instructions cost), and on the
# other CPU (1: the daemon polls the rings concurrently; cache lines move between CPUs).
CPUS=${VB_CPUS:-0 1}
for rep in $(seq 1 "$REPS"); do
	for cpu in $CPUS; do
		for api in client verbs; do
			if [ $api = verbs ]; then bin=$UROCE_BENCH_VERBS; else bin=$UROCE_BENCH_VERBS_CLIENT; fi
			out=$TMP/$api-$cpu-$rep.log
			timeout -k 2 60 "$bin" -S "$SOCK" micro -n "$BATCHES" -b 64 -c "$cpu" \
				>"$out" 2>&1
			rc=$?
			if [ $rc -ne 0 ]; then
				log "FAIL: $api CPU $cpu run $rep: exit $rc: $(tail -n 2 "$out" | tr '\n' ' ')"
				FAILS=$((FAILS + 1))
				continue
			fi
			log "  $api CPU $cpu run $rep: $(grep -m1 '^micro:' "$out" | sed 's/.*median of //')"
			sed -n 's/^micro-result: op=\([0-9]*\) .* median_ns=\([0-9.]*\) .*/\1 \2/p' "$out" |
				while read -r op v; do echo "$v" >>"$TMP/res.$api.$cpu.$op"; done
		done
	done
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

median() { # FILE
	[ -s "$1" ] || { echo "-"; return; }
	sort -g "$1" | awk '{ v[NR] = $1 } END {
		if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.1f\n", m }'
}
range() { # FILE -> min-max
	[ -s "$1" ] || { echo "-"; return; }
	sort -g "$1" | awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%.1f-%.1f\n", a, b }'
}
names=("post_recv (1 WR)" "post_send (8 B inline SEND)" "poll_cq (1 send wc)"
	"poll_cq (1 recv wc)" "poll_cq (empty CQ)")
echo
echo "verbs_overhead: ns per call, median of $REPS run(s) per API (each the median of $BATCHES batches of 64 calls), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load average at start $LOAD_START, at end $LOAD_END; $(nproc) CPUs; uroced on CPU 0 (lcore $VB_IDLE)"
echo "client: uroce_client_* (lib/client); verbs: ibv_* through the drop-in libibverbs (lib/verbs)"
echo "+ns = verbs - client: what lib/verbs adds per call; range: min-max of the runs' medians"
for cpu in $CPUS; do
	echo
	if [ "$cpu" = 0 ]; then
		echo "benchmark on CPU 0, the daemon's (no concurrent ring access: the calls' own cost)"
	else
		echo "benchmark on CPU $cpu, the daemon polling on CPU 0 (cache lines move between CPUs)"
	fi
	printf '%-30s %8s %8s %7s %6s   %-12s %-12s\n' call client verbs "+ns" "x" "client range" "verbs range"
	for op in 0 1 2 3 4; do
		c=$(median "$TMP/res.client.$cpu.$op")
		v=$(median "$TMP/res.verbs.$cpu.$op")
		printf '%-30s %8s %8s %7s %6s   %-12s %-12s\n' "${names[$op]}" "$c" "$v" \
			"$(awk -v a="$v" -v b="$c" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%+.1f\n", a - b }')" \
			"$(awk -v a="$v" -v b="$c" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f\n", a / b }')" \
			"$(range "$TMP/res.client.$cpu.$op")" "$(range "$TMP/res.verbs.$cpu.$op")"
	done
done
[ $FAILS -eq 0 ]
