#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `uroce res`, `uroce link` and `uroce stat qp N` show what `rdma res show` and `rdma
# link show` show of a kernel device, for unmodified programs that run over uroce: one
# daemon on a net_null port (no packets leave), rdma-core's ibv_rc_pingpong server (a PD,
# an MR, a CQ, an RC QP, waiting for its peer) and rping's server (an rdma_cm id
# listening), both started with `uroce exec`:
#   - res show qp: the pingpong's QP, RC, INIT, its pid and comm; the same as JSON;
#   - res show cq/mr/pd/cm_id: its CQ with one user, its 4 KiB MR, a PD for each program,
#     rping's id LISTEN on its address and port, with its pid;
#   - res: the counts of each kind; a kind that does not exist: exit 2;
#   - stat qp N: that QP's counters, its state among them; a QPN nobody has: exit 1;
#   - link show: ACTIVE, LINK_UP, the MTU, the daemon's address among the GIDs (JSON too).
#   res_views.sh   (root; $UROCED, $UROCE_CLI from meson)
# Exit: 0 passed, 1 failed, 77 not root, no ibverbs-utils or rdmacm-utils, not built.
set -uo pipefail
unset LD_LIBRARY_PATH # only uroce exec chooses the libraries
. "$(dirname "$0")/lib.sh"
it_init res_views
it_need_tools ibverbs-utils ibv_rc_pingpong
it_need_tools rdmacm-utils rping
it_need_tools python3 python3

it_daemon L "" "--vdev=net_null0,no-rx=1" 10.85.0.1 1500 || exit 1
sock=$(it_sock L)
cli() { "$UROCE_CLI" -S "$sock" "$@"; }
port=$((20000 + IT_ID % 20000))
# Not through cli(): $! must be the program's pid, which uroce exec keeps (it execs).
"$UROCE_CLI" -S "$sock" exec -- ibv_rc_pingpong -g 1 -p "$port" >"$IT_DIR/pp.log" 2>&1 &
pp=$!
IT_PIDS+=("$pp")
"$UROCE_CLI" -S "$sock" exec -- rping -s -a 10.85.0.1 -p "$((port + 1))" >"$IT_DIR/rping.log" 2>&1 &
rp=$!
IT_PIDS+=("$rp")
# Ready when both made their objects: a QP and a listening id.
for t in $(seq 100); do
	cli res show cm_id | grep -q LISTEN && cli res show qp | grep -q lqpn && break
	sleep 0.1
done

cli res show qp >"$IT_DIR/qp.txt"
cat "$IT_DIR/qp.txt"
it_check "res show qp: one row, RC, INIT, the pingpong's pid and comm" eval \
	'[ "$(wc -l <"$IT_DIR/qp.txt")" -eq 1 ] &&
	grep -Eq "^link uroce0/1 lqpn [0-9]+ rqpn 0 type RC state INIT .* pid $pp comm ibv_rc_pingpong$" "$IT_DIR/qp.txt"'
lqpn=$(sed -n 's/.* lqpn \([0-9]*\) .*/\1/p' "$IT_DIR/qp.txt")
it_check "res show qp --json: the same row" eval \
	'cli res show qp --json | python3 -c "import json, sys
r = json.load(sys.stdin)
assert len(r) == 1 and r[0][\"lqpn\"] == $lqpn and r[0][\"type\"] == \"RC\", r
assert r[0][\"pid\"] == $pp and r[0][\"comm\"] == \"ibv_rc_pingpong\", r"'
for t in cq mr pd cm_id; do
	cli res show "$t" >"$IT_DIR/$t.txt"
	cat "$IT_DIR/$t.txt"
done
it_check "res show cq: the pingpong's CQ, one QP completing into it" \
	grep -Eq "^link uroce0/1 cqn [0-9]+ cqe [0-9]+ users 1 poll-ctx DIRECT pid $pp comm ibv_rc_pingpong$" "$IT_DIR/cq.txt"
it_check "res show mr: its 4 KiB buffer" \
	grep -Eq "^link uroce0/1 mrn [0-9]+ rkey [0-9]+ lkey [0-9]+ mrlen 4096 iova [0-9]+ pid $pp comm ibv_rc_pingpong$" "$IT_DIR/mr.txt"
it_check "res show pd: one for each program" eval \
	'grep -q "pid $pp comm ibv_rc_pingpong$" "$IT_DIR/pd.txt" && grep -q "pid $rp comm rping$" "$IT_DIR/pd.txt"'
it_check "res show cm_id: rping's id listening on its address and port" \
	grep -Eq "^link uroce0/1 cm-idn [0-9]+ lqpn 0 qp-type RC state LISTEN ps TCP src-addr 10\.85\.0\.1:$((port + 1)) pid $rp comm rping$" "$IT_DIR/cm_id.txt"
it_check "res: the counts" eval '[ "$(cli res)" = "qp 1 cq 1 mr 1 pd 2 cm_id 1" ]'
cli res show nosuch >/dev/null 2>&1
it_check "res show nosuch: exit 2 ($?)" [ $? -eq 2 ]

cli stat qp "$lqpn" >"$IT_DIR/statqp.txt"
cat "$IT_DIR/statqp.txt"
it_check "stat qp $lqpn: its counters only, its state INIT (1)" eval \
	'grep -Eq "^qp\.$lqpn\.state +1$" "$IT_DIR/statqp.txt" && ! grep -qv "^qp\.$lqpn\." "$IT_DIR/statqp.txt"'
cli stat qp $((lqpn + 1000)) >/dev/null 2>&1
it_check "stat qp of a QPN nobody has: exit 1 ($?)" [ $? -eq 1 ]

cli link show >"$IT_DIR/link.txt"
cat "$IT_DIR/link.txt"
it_check "link show: active, up, MTU 1024, the daemon's address a GID" \
	grep -Eq "^link uroce0/1 state ACTIVE physical_state LINK_UP mtu 1024 max_mtu 4096 link_layer Ethernet .*gid\[[0-9]+\] ::ffff:10\.85\.0\.1" "$IT_DIR/link.txt"
it_check "link show --json: the same" eval \
	'cli link show --json | python3 -c "import json, sys
l = json.load(sys.stdin)[0]
assert l[\"state\"] == \"ACTIVE\" and l[\"mtu\"] == 1024, l
assert any(g[\"gid\"] == \"::ffff:10.85.0.1\" for g in l[\"gids\"]), l"'

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "$IT_FAILS check(s) failed"
	exit 1
fi
it_log "res_views: all checks passed"
exit 0
