#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The event-driven poll loop (doc/daemon.md, "The poll loop"): two uroced in two network
# namespaces over a veth pair (net_af_packet, whose kernel socket wakes a sleep), with
# lcore.idle_sleep_us at its default and lcore.idle_after_us=1, so that they fall asleep
# in every gap of an exchange. Checked, each from the daemons' own counters:
# - idle, a daemon costs next to no CPU (under 10 % of a core over 2 s; busy polling is
#   100 %) and its sleeps end on timers only;
# - a control request wakes a sleeping daemon (daemon.woke_control);
# - an 8 B RC SEND ping-pong of 2000 messages completes with the daemons asleep in its
#   gaps, and no wake-up is lost: sleeps that ended on a timer stay within what the
#   10 ms link check and the exchange's own length explain (a lost doorbell or frame
#   would leave its sleep to end on the timer, and the exchange to stall);
# - a post and a frame each wake a sleeping daemon: 100 messages from B's side, each
#   after 2 ms of silence (lat --pause-us), so both daemons are asleep when it is posted;
#   most of B's sleeps then end on the doorbell (daemon.woke_doorbell) and most of A's
#   on the frame (daemon.woke_frame). (Back to back, whether a post or a frame comes
#   before or after its daemon falls asleep is a race: either count can be 0 there.)
# - a retransmit timer wakes a sleeping daemon: with B dropping 20 % of what it receives,
#   an RC ping-pong still completes, A retrying by timeout (completer_retry_err) while it
#   sleeps between messages.
#
#   sleep.sh            (root; binaries from $UROCED, $UROCE_XFER, $UROCE_CLI)
# Exit: 0 all passed, 1 a failure, 77 not root or not built.
# Timing (2 cores): about 15 s.
set -u
. "$(dirname "$0")/lib.sh"
it_init sleep

fail() {
	it_log "FAIL $*"
	IT_FAILS=$((IT_FAILS + 1))
}
stat_of() { it_stat "$(it_sock "$1")" "$2"; }
# CPU ticks (user + system, 1/100 s) a process has used.
ticks_of() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

it_veth_pair 1500 || exit 1
IT_IDLE_SLEEP_US=10000 # the default; lib.sh passes it to every daemon
for d in A B; do
	if [ $d = A ]; then ns=$IT_NS_A ifc=$IT_IF_A ip=10.77.0.1; else
		ns=$IT_NS_B ifc=$IT_IF_B ip=10.77.0.2; fi
	it_daemon $d "$ns" "$(it_af_packet_vdev "$ifc" 1500)" $ip 1500 \
		--set lcore.idle_after_us=1 || exit 1
	grep -q "sleeps on its kernel socket" "$IT_DIR/$d.log" ||
		fail "$d: the port cannot wake a sleep: $(grep -m1 'port net' "$IT_DIR/$d.log")"
done

# ---- idle --------------------------------------------------------------------------------
sleep 1
a0=$(ticks_of "$IT_PID_A") b0=$(ticks_of "$IT_PID_B")
s0=$(stat_of A daemon.sleeps) tm0=$(stat_of A daemon.woke_timer)
sleep 2
a1=$(ticks_of "$IT_PID_A") b1=$(ticks_of "$IT_PID_B")
s1=$(stat_of A daemon.sleeps) tm1=$(stat_of A daemon.woke_timer)
echo "    idle 2 s: A used $((a1 - a0)) ticks, B $((b1 - b0)) (200 = one core);" \
	"A slept $((s1 - s0)) times, $((tm1 - tm0)) ended by a timer"
for d in A B; do
	if [ $d = A ]; then used=$((a1 - a0)); else used=$((b1 - b0)); fi
	[ "$used" -lt 20 ] || fail "$d idle used $used ticks of 200: it does not sleep"
done
# One stat request between the two readings woke it; the rest were timers.
[ $((s1 - s0)) -ge 50 ] || fail "A slept only $((s1 - s0)) times in 2 s"

# ---- a control request -------------------------------------------------------------------
c0=$(stat_of A daemon.woke_control)
sleep 0.2
c1=$(stat_of A daemon.woke_control)
echo "    control: daemon.woke_control $c0 -> $c1"
[ "$c1" -gt "$c0" ] || fail "a control request did not wake A"

# ---- doorbells and frames ----------------------------------------------------------------
for d in A B; do
	eval "db0_$d=\$(stat_of $d daemon.woke_doorbell) fr0_$d=\$(stat_of $d daemon.woke_frame)"
	eval "tm0_$d=\$(stat_of $d daemon.woke_timer) sl0_$d=\$(stat_of $d daemon.sleeps)"
done
t0=$(date +%s%N)
timeout -k 5 60 "$UROCE_XFER" -S "$(it_sock A)" lat -n 2000 -p 19411 \
	>"$IT_DIR/lat-server.out" 2>&1 &
spid=$!
if timeout -k 5 60 "$UROCE_XFER" -S "$(it_sock B)" lat -n 2000 -p 19411 127.0.0.1 \
	>"$IT_DIR/lat-client.out" 2>&1 && wait "$spid"; then
	it_log "PASS lat: $(grep -m1 median "$IT_DIR/lat-client.out")"
else
	fail "lat: the exchange did not complete"
	tail -n 20 "$IT_DIR/lat-client.out" "$IT_DIR/lat-server.out"
fi
ms=$((($(date +%s%N) - t0) / 1000000))
for d in A B; do
	db=$(($(stat_of $d daemon.woke_doorbell) - db0_$d))
	fr=$(($(stat_of $d daemon.woke_frame) - fr0_$d))
	tm=$(($(stat_of $d daemon.woke_timer) - tm0_$d))
	sl=$(($(stat_of $d daemon.sleeps) - sl0_$d))
	echo "    $d during $ms ms: $sl sleeps, woken by $db doorbells, $fr frames, $tm timers"
	# Timer ends: the link check (every 10 ms) and the setup's CM-free gaps; a lost
	# wake-up per message would be hundreds.
	[ "$tm" -le $((ms / 10 + 50)) ] ||
		fail "$d: $tm sleeps ended on a timer in $ms ms: wake-ups were lost"
done

# ---- a post after silence ----------------------------------------------------------------
db0=$(stat_of B daemon.woke_doorbell) tm0=$(stat_of B daemon.woke_timer)
fr0=$(stat_of A daemon.woke_frame)
timeout -k 5 60 "$UROCE_XFER" -S "$(it_sock A)" lat -n 100 -p 19413 \
	>"$IT_DIR/paced-server.out" 2>&1 &
spid=$!
if timeout -k 5 60 "$UROCE_XFER" -S "$(it_sock B)" lat -n 100 --pause-us 2000 -p 19413 \
	127.0.0.1 >"$IT_DIR/paced-client.out" 2>&1 && wait "$spid"; then
	it_log "PASS paced lat: $(grep -m1 median "$IT_DIR/paced-client.out")"
else
	fail "paced lat: the exchange did not complete"
	tail -n 20 "$IT_DIR/paced-client.out" "$IT_DIR/paced-server.out"
fi
db=$(($(stat_of B daemon.woke_doorbell) - db0)) tm=$(($(stat_of B daemon.woke_timer) - tm0))
echo "    B, 100 posts after 2 ms of silence each: $db sleeps ended on a doorbell, $tm on a timer"
[ "$db" -ge 50 ] || fail "B: only $db of 100 posts after silence woke it through the doorbell"
fr=$(($(stat_of A daemon.woke_frame) - fr0))
echo "    A, 100 messages arriving after 2 ms of silence each: $fr sleeps ended on a frame"
[ "$fr" -ge 50 ] || fail "A: only $fr of 100 messages after silence woke it as frames"

# ---- a retransmit timer ------------------------------------------------------------------
"$UROCE_CLI" -S "$(it_sock B)" fault rx_drop=0.2 >/dev/null || fail "fault rx_drop on B"
r0=$(stat_of A completer_retry_err) tm0=$(stat_of A daemon.woke_timer)
timeout -k 5 60 "$UROCE_XFER" -S "$(it_sock B)" rc_pingpong -s 64 -n 40 -p 19412 \
	>"$IT_DIR/pp-server.out" 2>&1 &
spid=$!
sleep 0.3
if timeout -k 5 60 "$UROCE_XFER" -S "$(it_sock A)" rc_pingpong -s 64 -n 40 -p 19412 \
	127.0.0.1 >"$IT_DIR/pp-client.out" 2>&1 && wait "$spid"; then
	it_log "PASS rc_pingpong over a lossy B"
else
	fail "rc_pingpong over a lossy B did not complete"
	tail -n 20 "$IT_DIR/pp-client.out" "$IT_DIR/pp-server.out"
fi
"$UROCE_CLI" -S "$(it_sock B)" fault >/dev/null
r1=$(stat_of A completer_retry_err) tm1=$(stat_of A daemon.woke_timer)
echo "    A: completer_retry_err $r0 -> $r1, daemon.woke_timer $tm0 -> $tm1"
[ "$r1" -gt "$r0" ] || fail "A never retried: B's losses did not reach A's requests"
[ "$tm1" -gt "$tm0" ] || fail "no sleep of A ended on a timer"

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "sleep: $IT_FAILS check(s) failed"
	exit 1
fi
it_log "sleep: all checks passed"
exit 0
