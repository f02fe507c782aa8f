#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# B1, the cost of an idle daemon (doc/benchmarks.md, "Idle"): two uroced in two network
# namespaces over a veth pair (net_af_packet), in each poll-loop configuration below:
#   - the CPU each daemon uses with no traffic, over IDLE_SECS (10 s; 3 with --quick),
#     from /proc/PID/stat (user + system ticks), as % of one core: a figure the scheduler
#     cannot distort;
#   - the half round trip of an 8 B RC SEND after 1 s of silence (uroce-xfer lat
#     --pause-us 1000000: the daemons asleep when it is posted), beside the same exchange
#     back to back (no pause) in the same configuration: what waking costs.
# Each measurement is repeated (3 times, 1 with --quick); the table gives medians and the
# spread of the repetitions.
#
# usage: idle.sh [--quick] [--reps N] [--build DIR]
#   binaries: DIR/app/uroced/uroced, app/uroce-xfer/uroce-xfer (default DIR: ./build)
# Configurations, IDLE_CONFIGS of "NAME:key=value,..." [lcore] keys ("-": the defaults):
#   event:-                                the defaults: sleep when idle
#   yield:idle_sleep_us=0                  poll, sched_yield() once idle 2 us
#   spin:idle_yield_us=0,idle_sleep_us=0   pure busy polling
# Needs root (namespaces, veth, af_packet); exits 77 otherwise.
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
QUICK=0 REPS= BUILD=$ROOT/build
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--reps) REPS=$2; shift ;;
	--build) BUILD=$2; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "idle: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
: "${UROCED:=$BUILD/app/uroced/uroced}"
: "${UROCE_XFER:=$BUILD/app/uroce-xfer/uroce-xfer}"
CONFIGS=${IDLE_CONFIGS:-event:- yield:idle_sleep_us=0 spin:idle_yield_us=0,idle_sleep_us=0}
if [ $QUICK -eq 1 ]; then
	: "${REPS:=1}"
	IDLE_SECS=3 FIRST_ITERS=3 STEADY_ITERS=500
else
	: "${REPS:=3}"
	IDLE_SECS=10 FIRST_ITERS=10 STEADY_ITERS=3000
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "idle: skipped: needs root (network namespaces, veth, af_packet)"
	exit 77
fi
for b in "$UROCED" "$UROCE_XFER"; do
	[ -x "$b" ] || { echo "idle: skipped: $b not built"; exit 77; }
done

ID=$$
NS_A=ui-$ID-a NS_B=ui-$ID-b IF_A=ui-${ID}a IF_B=ui-${ID}b
TMP=$(mktemp -d "/tmp/ui-idle.XXXXXX")
TCP_PORT=$((20000 + (ID + 7919) % 20000))
PIDS=()
FAILS=0
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
fail() { log "FAIL: $*"; FAILS=$((FAILS + 1)); }

stop() { # PID: SIGTERM, SIGKILL after 5 s
	local i
	kill -TERM "$1" 2>/dev/null
	for i in $(seq 1 50); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
cleanup() {
	local rc=$? pid
	trap - EXIT INT TERM HUP
	for pid in "${PIDS[@]}"; do stop "$pid"; done
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	rm -f /dev/hugepages/ui-"$ID"* 2>/dev/null
	rm -rf /var/run/dpdk/ui-"$ID"* 2>/dev/null
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		echo "idle: exit $rc; daemon logs:"
		tail -n 15 "$TMP"/*.log 2>/dev/null
	fi
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

record() { [ -n "$2" ] && echo "$2" >>"$TMP/res.$1"; }
median() {
	[ -s "$TMP/res.$1" ] || { echo "-"; return; }
	sort -g "$TMP/res.$1" | awk '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f\n", m }'
}
spread() {
	[ -s "$TMP/res.$1" ] && [ "$(grep -c . "$TMP/res.$1")" -ge 2 ] || { echo "-"; return; }
	sort -g "$TMP/res.$1" | awk '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		if (m == 0) print "-"; else printf "%.0f%%\n", 100 * (v[NR] - v[1]) / m }'
}
ticks_of() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null; }

ip netns add "$NS_A" && ip netns add "$NS_B" &&
	ip link add "$IF_A" netns "$NS_A" type veth peer name "$IF_B" netns "$NS_B" ||
	{ echo "idle: could not create the namespaces and the veth pair"; exit 1; }
for side in A B; do
	ns_v=NS_$side if_v=IF_$side
	ip netns exec "${!ns_v}" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null
	ip netns exec "${!ns_v}" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 2>/dev/null
	ip -n "${!ns_v}" link set "${!if_v}" up || { echo "idle: could not bring up"; exit 1; }
done

# daemons CONFIG: starts A and B (PID_A, PID_B) with CONFIG's [lcore] keys.
daemons() {
	local side sets=() kv
	[ "${1#*:}" = "-" ] || for kv in $(echo "${1#*:}" | tr ',' ' '); do
		sets+=(--set "lcore.$kv")
	done
	for side in A B; do
		local ns_v=NS_$side if_v=IF_$side ip=10.203.0.1 log=$TMP/$side.log i
		[ $side = B ] && ip=10.203.0.2
		rm -f "$TMP/$side.sock"
		ip netns exec "${!ns_v}" "$UROCED" --no-pci --no-huge --no-telemetry -m 256 \
			--log-level=lib.eal:error --file-prefix "ui-$ID-$side" \
			--vdev="net_af_packet0,iface=${!if_v}" -- --set "host.ipv4=$ip" \
			--set "control.socket=$TMP/$side.sock" "${sets[@]}" >"$log" 2>&1 &
		printf -v "PID_$side" '%s' $!
		PIDS+=($!)
		for i in $(seq 1 200); do
			grep -q '^uroced: ready' "$log" && break
			sleep 0.05
		done
		grep -q '^uroced: ready' "$log" || { fail "uroced $side did not start"; return 1; }
	done
}

# lat NAME ITERS PAUSE_US -> the client's median half round trip, or nothing
lat() {
	local out=$TMP/lat-$1 spid
	TCP_PORT=$((TCP_PORT + 1))
	timeout -k 2 60 "$UROCE_XFER" -S "$TMP/A.sock" lat -n "$2" -p $TCP_PORT \
		>"$out.server.log" 2>&1 &
	spid=$!
	timeout -k 2 60 "$UROCE_XFER" -S "$TMP/B.sock" lat -n "$2" --pause-us "$3" \
		-p $TCP_PORT 127.0.0.1 >"$out.client.log" 2>&1 || fail "lat $1: client failed"
	wait "$spid" || fail "lat $1: server failed"
	log "    lat $1: $(grep -m1 median "$out.client.log")" >&2
	sed -n 's/.*median \([0-9.]*\) us.*/\1/p' "$out.client.log" | head -1
}

log "idle: $REPS repetition(s)$([ $QUICK -eq 1 ] && echo ', quick'); load average" \
	"$(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
for rep in $(seq 1 "$REPS"); do
	for cfg in $CONFIGS; do
		name=${cfg%%:*}
		daemons "$cfg" || { stop "$PID_A"; stop "$PID_B"; continue; }
		sleep 1
		a0=$(ticks_of "$PID_A") b0=$(ticks_of "$PID_B") t0=$(date +%s%N)
		sleep "$IDLE_SECS"
		a1=$(ticks_of "$PID_A") b1=$(ticks_of "$PID_B") t1=$(date +%s%N)
		hz=$(getconf CLK_TCK)
		for side in A B; do
			if [ $side = A ]; then d=$((a1 - a0)); else d=$((b1 - b0)); fi
			pct=$(awk -v d="$d" -v hz="$hz" -v ns=$((t1 - t0)) \
				'BEGIN { printf "%.2f", 100 * d / hz / (ns / 1e9) }')
			record "$name.cpu" "$pct"
			log "  [$name] rep $rep: daemon $side idle: $d ticks in $(((t1 - t0) / 1000000)) ms = $pct % of a core"
		done
		record "$name.first" "$(lat "$name-first" "$FIRST_ITERS" 1000000)"
		record "$name.steady" "$(lat "$name-steady" "$STEADY_ITERS" 0)"
		stop "$PID_A"
		stop "$PID_B"
		PIDS=()
	done
done

echo
echo "B1 idle: medians of $REPS repetition(s), $(date -u '+%Y-%m-%d %H:%M') UTC; load average" \
	"$(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
echo "idle CPU: % of one core per daemon over ${IDLE_SECS} s (both daemons of each repetition)"
echo "first: 8 B RC SEND half round trip after 1 s of silence (daemons asleep), us"
echo "steady: the same exchange back to back, us; x steady = first / steady"
printf '%-8s %12s %8s %10s %8s %10s %8s %9s\n' config "idle CPU %" spread first spread \
	steady spread "x steady"
for cfg in $CONFIGS; do
	n=${cfg%%:*}
	f=$(median "$n.first") s=$(median "$n.steady")
	x=$(awk -v f="$f" -v s="$s" 'BEGIN { if (f == "-" || s == "-" || s == 0) print "-";
		else printf "%.2f", f / s }')
	printf '%-8s %12s %8s %10s %8s %10s %8s %9s\n' "$n" "$(median "$n.cpu")" \
		"$(spread "$n.cpu")" "$f" "$(spread "$n.first")" "$s" "$(spread "$n.steady")" "$x"
done
echo "configurations ([lcore] keys): $CONFIGS"
log "idle: $FAILS failure(s)"
[ "$FAILS" -eq 0 ]
