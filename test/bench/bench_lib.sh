# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the benchmarks that run two uroced over a veth pair (idle.sh, cpu_per_op.sh):
# the pair, the daemons, cleanup, and medians of repeated figures.
#
#   BENCH=name; . bench_lib.sh; bench_args "$@"; (binaries); bench_init PREFIX
# (PREFIX: 2 letters, unique per script), then bench_veth, bench_daemons [--set k=v ...],
# bench_xfer (uroce-xfer between the daemons), record/median/spread.
# Needs root; bench_init exits 77 (skipped) otherwise.

# bench_args "$@": --quick (QUICK=1), --reps N (REPS), --build DIR (BUILD, default ./build
# beside this checkout), -h (the script's header comment). Exits 2 on anything else.
bench_args() {
	QUICK=0 REPS= BUILD=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build
	while [ $# -gt 0 ]; do
		case $1 in
		--quick) QUICK=1 ;;
		--reps) REPS=$2; shift ;;
		--build) BUILD=$2; shift ;;
		-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
		*) echo "$BENCH: unknown argument $1" >&2; exit 2 ;;
		esac
		shift
	done
}

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
fail() { log "FAIL: $*"; FAILS=$((FAILS + 1)); }

# stop PID: SIGTERM, SIGKILL after 5 s.
stop() {
	local i
	[ -n "$1" ] || return 0
	kill -TERM "$1" 2>/dev/null
	for i in $(seq 1 50); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

bench_cleanup() {
	local rc=$? pid
	trap - EXIT INT TERM HUP
	for pid in "${PIDS[@]}"; do stop "$pid"; done
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	rm -f /dev/hugepages/"$PREFIX"-"$ID"* 2>/dev/null
	rm -rf /var/run/dpdk/"$PREFIX"-"$ID"* 2>/dev/null
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		echo "$BENCH: exit $rc; last logs:"
		tail -n 15 "$TMP"/*.log 2>/dev/null
	fi
	rm -rf "$TMP"
	exit "$rc"
}

# bench_init PREFIX: names (netns, veth, hugepage prefix) from PREFIX and our pid, the
# temporary directory, the cleanup trap; exits 77 unless root and uroced is built.
# bench_need WHY BINARY...: exit 77 ("skipped") unless root (for WHY) and each BINARY is
# built.
bench_need() {
	local why=$1 b
	shift
	if [ "$(id -u)" -ne 0 ]; then
		echo "$BENCH: skipped: needs root ($why)"
		exit 77
	fi
	for b in "$@"; do
		[ -x "$b" ] || { echo "$BENCH: skipped: $b not built"; exit 77; }
	done
}

# bench_wait_ready LOG PID SECONDS: until the uroced of PID, logging to LOG, says it is
# ready; exit 1 if it ends first or is not ready in SECONDS.
bench_wait_ready() {
	local tenths=$(($3 * 10))
	while [ "$tenths" -gt 0 ]; do
		grep -q '^uroced: ready' "$1" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || { echo "$BENCH: uroced exited"; exit 1; }
		sleep 0.1
		tenths=$((tenths - 1))
	done
	grep -q '^uroced: ready' "$1" || { echo "$BENCH: uroced not ready"; exit 1; }
}

bench_init() {
	PREFIX=$1
	bench_need "network namespaces, veth, af_packet" "$UROCED" "$UROCE_XFER"
	ID=$$
	NS_A=$PREFIX-$ID-a NS_B=$PREFIX-$ID-b IF_A=$PREFIX-${ID}a IF_B=$PREFIX-${ID}b
	TMP=$(mktemp -d "/tmp/$PREFIX-$BENCH.XXXXXX")
	TCP_PORT=$((20000 + (ID + ${#PREFIX} * 7919) % 20000))
	PIDS=()
	FAILS=0
	trap bench_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM HUP
}

# bench_veth: netns NS_A and NS_B, the veth IF_A/IF_B between them, MTU 1500, up, no IPv6.
bench_veth() {
	local side ns_v if_v
	ip netns add "$NS_A" && ip netns add "$NS_B" &&
		ip link add "$IF_A" netns "$NS_A" type veth peer name "$IF_B" netns "$NS_B" ||
		{ echo "$BENCH: could not create the namespaces and the veth pair"; exit 1; }
	for side in A B; do
		ns_v=NS_$side if_v=IF_$side
		ip netns exec "${!ns_v}" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null
		ip netns exec "${!ns_v}" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 2>/dev/null
		ip -n "${!ns_v}" link set "${!if_v}" up ||
			{ echo "$BENCH: could not bring ${!if_v} up"; exit 1; }
	done
}

# bench_daemons [uroced --set arguments...]: uroced A (CPU 0) and B (CPU 1) on the veth
# ends, sockets $TMP/A.sock and $TMP/B.sock, pids in PID_A and PID_B. 1 if one failed.
bench_daemons() {
	local side ns_v if_v ip log i cpu pid_v
	for side in A B; do
		ns_v=NS_$side if_v=IF_$side log=$TMP/$side.log
		ip=10.203.0.1 cpu=0
		[ $side = B ] && ip=10.203.0.2 cpu=1
		# The log goes first: the redirection happens in the child, after the ready
		# check below may have read an earlier daemon's (test/integration/lib.sh).
		rm -f "$TMP/$side.sock" "$log"
		ip netns exec "${!ns_v}" "$UROCED" --no-pci --no-huge --no-telemetry -m 256 -l $cpu \
			--log-level=lib.eal:error --file-prefix "$PREFIX-$ID-$side" \
			--vdev="net_af_packet0,iface=${!if_v}" -- --set "host.ipv4=$ip" \
			--set "control.socket=$TMP/$side.sock" "$@" >"$log" 2>&1 &
		printf -v "PID_$side" '%s' $!
		PIDS+=($!)
		pid_v=PID_$side
		# EAL start-up (256 MB zeroed without hugepages) takes seconds on a loaded
		# machine: up to 60 s, or until the daemon dies.
		for i in $(seq 1 1200); do
			grep -q '^uroced: ready' "$log" && break
			kill -0 "${!pid_v}" 2>/dev/null || break
			sleep 0.05
		done
		if ! grep -q '^uroced: ready' "$log"; then
			local st=running
			kill -0 "${!pid_v}" 2>/dev/null || { wait "${!pid_v}"; st="exit $?"; }
			fail "uroced $side did not start ($st): $(tail -n 5 "$log" | tr '\n' ' ')"
			return 1
		fi
	done
}

# bench_stop_daemons: stops A and B.
bench_stop_daemons() {
	stop "${PID_A:-}"
	stop "${PID_B:-}"
	PIDS=()
}

# bench_xfer NAME MODE ARGS...: uroce-xfer MODE with its timing side on B's daemon and
# its peer on A's; the timing side's output is in $TMP/xfer-NAME.log.
bench_xfer() {
	local name=$1 mode=$2 spid
	shift 2
	TCP_PORT=$((TCP_PORT + 1))
	timeout -k 2 120 "$UROCE_XFER" -S "$TMP/A.sock" "$mode" -p $TCP_PORT "$@" \
		>"$TMP/xfer-$name-peer.log" 2>&1 &
	spid=$!
	timeout -k 2 120 "$UROCE_XFER" -S "$TMP/B.sock" "$mode" -p $TCP_PORT "$@" 127.0.0.1 \
		>"$TMP/xfer-$name.log" 2>&1 || fail "$name: uroce-xfer failed"
	wait "$spid" || fail "$name: its peer failed"
}

# CPU ticks (user + system) a process has used, and their length in ns.
ticks_of() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null; }
TICK_NS=$((1000000000 / $(getconf CLK_TCK)))

# ---- results: one file per KEY, one figure per line ------------------------------------
record() { [ -n "$2" ] && echo "$2" >>"$TMP/res.$1"; }
median() { # KEY -> median, or "-"
	[ -s "$TMP/res.$1" ] || { echo "-"; return; }
	sort -g "$TMP/res.$1" | awk '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f\n", m }'
}
spread() { # KEY -> (max - min) / median, or "-" with fewer than 2 figures
	[ -s "$TMP/res.$1" ] && [ "$(grep -c . "$TMP/res.$1")" -ge 2 ] || { echo "-"; return; }
	sort -g "$TMP/res.$1" | awk '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		if (m == 0) print "-"; else printf "%.0f%%\n", 100 * (v[NR] - v[1]) / m }'
}
ratio() { # A B -> A / B, or "-"
	awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-";
		else printf "%.2f\n", a / b }'
}
