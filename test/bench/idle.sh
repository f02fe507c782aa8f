#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# B1, the cost of an idle daemon (doc/benchmarks.md, "Idle"): two uroced in two network
# namespaces over a veth pair (net_af_packet), in each poll-loop configuration below:
#   - the CPU each daemon uses with no traffic, over IDLE_SECS (10 s; 3 with --quick),
#     from /proc/PID/stat (user + system ticks), as % of one core: a figure the scheduler
#     cannot distort;
#   - the half round trip of an 8 B RC SEND after 1 s of silence (uroce-xfer lat
#     --pause-us 1000000: the daemons asleep when it is posted), with the applications
#     polling their CQ and with them blocking on its channel (-e, as an idle program
#     would), beside the same exchange back to back (no pause, polling) in the same
#     configuration: what waking costs;
#   - the baseline, in the same run on the same veth pair: kernel UDP 8 B ping-pong with
#     blocking sockets (uroce-bench-udp --wait block), after 1 s of silence and back to
#     back, an IPv4 address on each end for this part only.
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

BENCH=idle
. "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_args "$@"
: "${UROCED:=$BUILD/app/uroced/uroced}"
: "${UROCE_XFER:=$BUILD/app/uroce-xfer/uroce-xfer}"
: "${UROCE_BENCH_UDP:=$BUILD/test/bench/uroce-bench-udp}"
CONFIGS=${IDLE_CONFIGS:-event:- yield:idle_sleep_us=0 spin:idle_yield_us=0,idle_sleep_us=0}
# --quick (CI): no spin, whose messages take milliseconds on two shared CPUs and whose QPs
# run out of retries when anything else loads the machine (two_hosts.sh says more).
[ $QUICK -eq 1 ] && [ -z "${IDLE_CONFIGS:-}" ] && CONFIGS=${CONFIGS% spin:*}
if [ $QUICK -eq 1 ]; then
	: "${REPS:=1}"
	IDLE_SECS=3 FIRST_ITERS=3 STEADY_ITERS=500
else
	: "${REPS:=3}"
	IDLE_SECS=10 FIRST_ITERS=10 STEADY_ITERS=3000
fi

bench_init ui
[ -x "$UROCE_BENCH_UDP" ] || { echo "$BENCH: skipped: $UROCE_BENCH_UDP not built"; exit 77; }
bench_veth
UDP_PORT=$((40000 + ID % 20000))

# udp KEY ITERS PAUSE_US: kernel UDP blocking ping-pong between the namespaces; records
# the client's median half round trip under KEY. The veths get addresses for it only.
udp() {
	local out=$TMP/udp-$1 spid
	UDP_PORT=$((UDP_PORT + 1))
	ip -n "$NS_A" addr add 10.204.0.1/24 dev "$IF_A" &&
		ip -n "$NS_B" addr add 10.204.0.2/24 dev "$IF_B" || { fail "udp: addresses"; return; }
	ip netns exec "$NS_A" "$UROCE_BENCH_UDP" --role server --port $UDP_PORT --wait block \
		--timeout 60 >"$out.server.log" 2>&1 &
	spid=$!
	for _ in $(seq 1 200); do
		grep -q "^udp-server: listening" "$out.server.log" && break
		sleep 0.05
	done
	ip netns exec "$NS_B" "$UROCE_BENCH_UDP" --role client --addr 10.204.0.1 \
		--port $UDP_PORT --mode pingpong --size 8 --iters "$2" --warmup 2 --wait block \
		--pause-us "$3" >"$out.client.log" 2>&1 || fail "udp $1: client failed"
	wait "$spid"
	ip -n "$NS_A" addr flush dev "$IF_A"
	ip -n "$NS_B" addr flush dev "$IF_B"
	log "    kernel UDP $1: $(grep -m1 '^udp-pingpong: size' "$out.client.log")"
	record "$1" "$(grep -m1 '^udp-pingpong: size' "$out.client.log" | tr ' ' '\n' |
		sed -n 's/^half_rtt_median_us=//p')"
}

# lat KEY ITERS PAUSE_US [-e]: records the timing side's median half round trip under KEY.
lat() {
	bench_xfer "$1" lat -n "$2" --pause-us "$3" ${4:-}
	log "    lat $1: $(grep -m1 median "$TMP/xfer-$1.log")"
	record "$1" "$(sed -n 's/.*median \([0-9.]*\) us.*/\1/p' "$TMP/xfer-$1.log" | head -1)"
}

log "idle: $REPS repetition(s)$([ $QUICK -eq 1 ] && echo ', quick'); load average" \
	"$(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
for rep in $(seq 1 "$REPS"); do
	udp udp.first "$FIRST_ITERS" 1000000
	udp udp.steady "$STEADY_ITERS" 0
	for cfg in $CONFIGS; do
		name=${cfg%%:*} sets=()
		[ "${cfg#*:}" = "-" ] || for kv in $(echo "${cfg#*:}" | tr ',' ' '); do
			sets+=(--set "lcore.$kv")
		done
		bench_daemons "${sets[@]}" || { bench_stop_daemons; continue; }
		sleep 1
		a0=$(ticks_of "$PID_A") b0=$(ticks_of "$PID_B") t0=$(date +%s%N)
		sleep "$IDLE_SECS"
		a1=$(ticks_of "$PID_A") b1=$(ticks_of "$PID_B") t1=$(date +%s%N)
		for side in A B; do
			if [ $side = A ]; then d=$((a1 - a0)); else d=$((b1 - b0)); fi
			pct=$(awk -v d="$d" -v tick=$TICK_NS -v ns=$((t1 - t0)) \
				'BEGIN { printf "%.2f", 100 * d * tick / ns }')
			record "$name.cpu" "$pct"
			log "  [$name] rep $rep: daemon $side idle: $d ticks in $(((t1 - t0) / 1000000)) ms = $pct % of a core"
		done
		lat "$name.first" "$FIRST_ITERS" 1000000
		lat "$name.firste" "$FIRST_ITERS" 1000000 -e
		lat "$name.steady" "$STEADY_ITERS" 0
		bench_stop_daemons
	done
done

echo
echo "B1 idle: medians of $REPS repetition(s), $(date -u '+%Y-%m-%d %H:%M') UTC; load average" \
	"$(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
echo "idle CPU: % of one core per daemon over ${IDLE_SECS} s (both daemons of each repetition)"
echo "first: 8 B RC SEND half round trip after 1 s of silence (daemons asleep), us;"
echo "  polling: the applications poll their CQ; blocking: they sleep on its channel (-e)"
echo "steady: the same exchange back to back, polling, us; x steady = first blocking / steady"
echo "kern UDP: kernel UDP 8 B ping-pong, blocking sockets, on the same veth pair (baseline)"
echo "x udp (first blocking): $(ratio "$(median event.firste)" "$(median udp.first)")" \
	"(uroce's default loop, both sides blocking, against kernel UDP blocking, after silence)"
printf '%-8s %11s %7s %9s %7s %9s %7s %9s %7s %8s\n' config "idle CPU %" spread \
	"1st poll" spread "1st blk" spread steady spread "x steady"
printf '%-8s %11s %7s %9s %7s %9s %7s %9s %7s %8s\n' "kern UDP" - - - - \
	"$(median udp.first)" "$(spread udp.first)" "$(median udp.steady)" \
	"$(spread udp.steady)" "$(ratio "$(median udp.first)" "$(median udp.steady)")"
for cfg in $CONFIGS; do
	n=${cfg%%:*}
	printf '%-8s %11s %7s %9s %7s %9s %7s %9s %7s %8s\n' "$n" "$(median "$n.cpu")" \
		"$(spread "$n.cpu")" "$(median "$n.first")" "$(spread "$n.first")" \
		"$(median "$n.firste")" "$(spread "$n.firste")" "$(median "$n.steady")" \
		"$(spread "$n.steady")" "$(ratio "$(median "$n.firste")" "$(median "$n.steady")")"
done
echo "configurations ([lcore] keys): $CONFIGS"
log "idle: $FAILS failure(s)"
[ "$FAILS" -eq 0 ]
