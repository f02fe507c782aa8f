#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Connection setup and teardown rate between two uroced (namespaces joined by veth,
# net_af_packet), measured by the unmodified rdma_cm tool cmtime over the drop-in
# librdmacm: per step (create id, resolve address and route, create QP, connect,
# disconnect, destroy) the total and per-connection time for N connections set up at
# once. The same tool against Linux rxe runs in test/rdmacm/rxe_cm.sh (a TCG VM: its
# figures are functional only). Root. Prints cmtime's table for each run.
#   test/bench/cm_rate.sh [--quick]     Env: RDMACM_LIB_DIR, VERBS_LIB_DIR; CONNS; RUNS
set -uo pipefail
. "$(dirname "$0")/../integration/lib.sh"
: "${VERBS_LIB_DIR:=$IT_ROOT/build/lib/verbs}"
: "${RDMACM_LIB_DIR:=$IT_ROOT/build/lib/rdmacm}"
CONNS=${CONNS:-200}
RUNS=${RUNS:-3}
if [ "${1:-}" = --quick ]; then
	CONNS=50
	RUNS=1
fi
it_init cm_rate
command -v cmtime >/dev/null || { echo "cm_rate: cmtime missing (rdmacm-utils); skipped"; exit 77; }
[ -e "$RDMACM_LIB_DIR/librdmacm.so.1" ] || { echo "cm_rate: librdmacm not built; skipped"; exit 77; }

it_veth_pair 1500 || exit 1
it_daemon A "$IT_NS_A" "$(it_af_packet_vdev "$IT_IF_A"),framecnt=4096" 10.80.0.1 1500 || exit 1
it_daemon B "$IT_NS_B" "$(it_af_packet_vdev "$IT_IF_B"),framecnt=4096" 10.80.0.2 1500 || exit 1
on() {
	local sock
	sock=$(it_sock "$1")
	shift
	LD_LIBRARY_PATH=$RDMACM_LIB_DIR:$VERBS_LIB_DIR UROCE_SOCKET=$sock "$@"
}
PORT=$((22000 + (IT_ID % 2000) * 8))
it_log "cmtime: $CONNS connections per run, $RUNS run(s), uroced <-> uroced over veth"
for r in $(seq 1 "$RUNS"); do
	PORT=$((PORT + 1))
	on B timeout 120 cmtime -p "$PORT" -c "$CONNS" >"$IT_DIR/server.out" 2>&1 &
	spid=$!
	sleep 1
	if ! on A timeout 120 cmtime -s 10.80.0.2 -p "$PORT" -c "$CONNS" >"$IT_DIR/client.out" 2>&1; then
		it_log "cmtime client failed:"
		cat "$IT_DIR/client.out"
		kill "$spid" 2>/dev/null
		exit 1
	fi
	# cmtime's server serves until stopped.
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	it_log "run $r (client side):"
	sed 's/^/    /' "$IT_DIR/client.out"
done
exit 0
