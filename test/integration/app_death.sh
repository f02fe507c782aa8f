#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A crashed application costs nothing but itself: an application with a PD, MRs, CQs and a
# connected RC QP is killed with SIGKILL mid-traffic; its daemon's object and mapping
# counters (`uroce stat`: clients, objects.*, mappings, active_qps) must return to what
# they were before it started, and its peer's RC QP must get an error completion
# (transport retry counter exceeded), not hang.
#
# 1. the victim is the target of `uroce-xfer bw` (its MR takes the peer's RDMA WRITEs);
#    the peer keeps writing: after the kill nothing acknowledges its writes any more ->
#    IBV_WC_RETRY_EXC_ERR.
# 2. the victim is a `uroce-xfer bw` writer with a window of RDMA WRITEs in flight.
#
#   app_death.sh            (root; binaries from $UROCED, $UROCE_XFER, $UROCE_CLI)
# Exit: 0 passed, 1 failed, 77 not root or not built.
set -u
. "$(dirname "$0")/lib.sh"
it_init app_death

it_veth_pair 1500 || exit 1
it_daemon A "$IT_NS_A" "$(it_af_packet_vdev "$IT_IF_A" 1500)" 10.77.0.1 1500 || exit 1
it_daemon B "$IT_NS_B" "$(it_af_packet_vdev "$IT_IF_B" 1500)" 10.77.0.2 1500 || exit 1
SA=$(it_sock A)
SB=$(it_sock B)

snapshot() { # SOCK: the counters that must come back
	"$UROCE_CLI" -S "$1" stat 2>/dev/null |
		awk '$1 == "clients" || $1 == "mappings" || $1 == "active_qps" ||
		     index($1, "objects.") == 1 { print $1, $2 }'
}

# wait_back SOCK BASELINE: up to 10 s for the counters to equal BASELINE.
wait_back() {
	local i now
	for i in $(seq 1 100); do
		now=$(snapshot "$1")
		[ "$now" = "$2" ] && return 0
		sleep 0.1
	done
	it_log "counters did not come back; before, then now:"
	paste <(echo "$2") <(echo "$now") | sed 's/^/    /'
	return 1
}

# busy SOCK BASELINE: the victim's objects are visible while it runs.
busy() {
	local i now
	for i in $(seq 1 100); do
		now=$(snapshot "$1")
		if [ "$now" != "$2" ] &&
			[ "$(echo "$now" | awk '$1 == "objects.qp" { print $2 }')" -gt \
			  "$(echo "$2" | awk '$1 == "objects.qp" { print $2 }')" ]; then
			echo "$now"
			return 0
		fi
		sleep 0.1
	done
	return 1
}

fail() {
	it_log "FAIL $*"
	IT_FAILS=$((IT_FAILS + 1))
}

# ---- 1: the target of RDMA WRITEs dies -------------------------------------------------------
base=$(snapshot "$SA")
it_log "daemon A before: $(echo "$base" | tr '\n' ' ')"
"$UROCE_XFER" -S "$SA" bw -n 100000000 -t 20 -p 19401 >"$IT_DIR/victim1.out" 2>&1 &
victim=$!
sleep 0.3
timeout -k 5 60 "$UROCE_XFER" -S "$SB" bw -n 100000000 -t 20 -p 19401 127.0.0.1 \
	>"$IT_DIR/peer1.out" 2>&1 &
peer=$!
if during=$(busy "$SA" "$base"); then
	it_log "daemon A with the victim: $(echo "$during" | tr '\n' ' ')"
else
	fail "the victim's objects never showed in daemon A's counters"
fi
sleep 1
kill -KILL "$victim"
wait "$victim" 2>/dev/null
it_log "victim (bw target, pid $victim) killed with SIGKILL"
t0=$SECONDS
wait "$peer"
prc=$?
if grep -q "retry counter exceeded" "$IT_DIR/peer1.out"; then
	it_log "PASS peer got: $(grep -m1 'retry counter exceeded' "$IT_DIR/peer1.out")" \
		"after $((SECONDS - t0)) s (exit $prc)"
else
	fail "peer: no retry-exceeded completion (exit $prc):"
	tail -n 5 "$IT_DIR/peer1.out"
fi
if wait_back "$SA" "$base"; then
	it_log "PASS daemon A's counters are back: $(snapshot "$SA" | tr '\n' ' ')"
else
	fail "daemon A kept the dead application's objects"
fi
base_b=$(snapshot "$SB")

# ---- 2: a writer with RDMA WRITEs in flight dies ---------------------------------------------
"$UROCE_XFER" -S "$SB" bw -n 100000000 -t 10 -p 19402 >"$IT_DIR/peer2.out" 2>&1 &
peer=$!
sleep 0.3
"$UROCE_XFER" -S "$SA" bw -n 100000000 -w 64 -t 10 -p 19402 127.0.0.1 \
	>"$IT_DIR/victim2.out" 2>&1 &
victim=$!
if ! busy "$SA" "$base" >/dev/null; then
	fail "the writer's objects never showed in daemon A's counters"
fi
sleep 1
kill -KILL "$victim"
wait "$victim" 2>/dev/null
it_log "victim (bw writer, pid $victim) killed with SIGKILL"
if wait_back "$SA" "$base"; then
	it_log "PASS daemon A's counters are back after the writer's death"
else
	fail "daemon A kept the dead writer's objects"
fi
kill -TERM "$peer" 2>/dev/null
wait "$peer" 2>/dev/null
if wait_back "$SB" "$base_b"; then
	it_log "PASS daemon B's counters are back once the passive side ended"
else
	fail "daemon B kept objects"
fi
for d in A B; do
	v="IT_PID_$d"
	if ! kill -0 "${!v}" 2>/dev/null; then
		fail "uroced $d died"
	fi
done

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "app_death: $IT_FAILS check(s) failed"
	exit 1
fi
it_log "app_death: passed"
exit 0
