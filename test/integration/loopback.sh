#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One uroced, both ends on it: `uroce-xfer ops` server and client on the same daemon,
# talking to its own IP (frames never reach a wire: the port is net_null). Every
# transport and operation, sizes 0 B..8 MiB, every byte checked. Nothing can be lost
# here, so UC and UD must deliver everything too (no -L). Then rc_pingpong, ud_pingpong,
# bw, lat and each verbs_op operation against each other, and the CLI.
#
#   loopback.sh             (root; binaries from $UROCED, $UROCE_XFER, $UROCE_CLI)
# Exit: 0 all passed, 1 a failure, 77 not root or not built.
set -u
. "$(dirname "$0")/lib.sh"
it_init loopback

: "${COUNT:=4}"
SIZES=0,1,63,64,1000,1024,1025,4096,65536,1M,8M
S=$(it_sock L)
it_daemon L "" "--vdev=net_null0,no-rx=1" 10.79.0.1 1500 || exit 1

it_xfer_pair ops-mtu1024 600 "$S" "$S" 19301 ops -t 30 -m 1024 -c "$COUNT" -z "$SIZES"
it_xfer_pair ops-mtu4096 600 "$S" "$S" 19302 ops -t 30 -m 4096 -c "$COUNT" -z "$SIZES" -T rc,uc

# The checker itself: with --spoil the client flips one byte of the last message of every
# SEND/WRITE case; exactly those cases (RC and UC: 4 ops x 2 sizes, UD: 2 ops x 1 size)
# must fail, on both sides.
timeout -k 5 120 "$UROCE_XFER" -S "$S" ops -p 19303 -t 30 >"$IT_DIR/spoil-server.out" 2>&1 &
spid=$!
timeout -k 5 120 "$UROCE_XFER" -S "$S" ops -p 19303 -t 30 --spoil -T rc,uc,ud \
	-O send,send_imm,write,write_imm -z 1,4096 -c 3 127.0.0.1 >"$IT_DIR/spoil-client.out" 2>&1
crc=$?
wait "$spid"
src=$?
if [ "$crc" -eq 1 ] && [ "$src" -eq 1 ] &&
	grep -q "ops: FAILED .*(18 failed cases)" "$IT_DIR/spoil-client.out" &&
	grep -q "ops: FAILED .*(18 failed cases)" "$IT_DIR/spoil-server.out"; then
	it_log "PASS spoil: the checker failed all 18 spoiled cases, e.g." \
		"$(grep -m1 'differs' "$IT_DIR/spoil-server.out")"
else
	it_log "FAIL spoil: client exit $crc, server exit $src"
	tail -n 20 "$IT_DIR/spoil-client.out"
	IT_FAILS=$((IT_FAILS + 1))
fi

pair() { # LABEL PORT ARGS... : both sides with the same arguments
	local label=$1 port=$2 slog clog rc rs
	shift 2
	slog=$IT_DIR/$label-server.out
	clog=$IT_DIR/$label-client.out
	timeout -k 5 120 "$UROCE_XFER" -S "$S" "$@" -p "$port" >"$slog" 2>&1 &
	local spid=$!
	it_wait_listen "$port" "$spid" 120
	timeout -k 5 120 "$UROCE_XFER" -S "$S" "$@" -p "$port" 127.0.0.1 >"$clog" 2>&1
	rc=$?
	wait "$spid"
	rs=$?
	if [ "$rc" -eq 0 ] && [ "$rs" -eq 0 ]; then
		it_log "PASS $label: $(grep -E 'iters in|bw:|lat:|client:' "$clog" | tail -n 1)"
	else
		it_log "FAIL $label: client exit $rc, server exit $rs"
		tail -n 20 "$clog" "$slog"
		IT_FAILS=$((IT_FAILS + 1))
	fi
}
pair rc_pingpong 19310 rc_pingpong -n 500
pair rc_pingpong-events 19311 rc_pingpong -n 500 -e
pair ud_pingpong 19312 ud_pingpong -n 500 -s 1024
pair bw 19313 bw -n 2000
pair lat 19314 lat -n 5000
port=19320
for op in write_imm send_imm write send read fadd cswap; do
	port=$((port + 1))
	pair "verbs_op-$op" "$port" verbs_op --op "$op" -n 5
done

# The CLI: counters (text and JSON), fault rates, log level, capture, device info.
cli() {
	local out
	if out=$("$UROCE_CLI" -S "$S" "$@" 2>&1); then
		it_log "PASS uroce $*: $(echo "$out" | head -n 1)"
	else
		it_log "FAIL uroce $*: $out"
		IT_FAILS=$((IT_FAILS + 1))
	fi
}
cli stat
cli stat --json --qp
cli devinfo
cli fault rx_drop=0.5 tx_dup=0.25
cli fault
# The log level reaches the daemon's rte_log types: a connection's next-hop lookups are
# logged at debug, so they show while the level is debug and not once it is info again.
dbg_pair() { # PORT
	timeout 60 "$UROCE_XFER" -S "$S" rc_pingpong -n 10 -p "$1" >/dev/null 2>&1 &
	local spid=$!
	it_wait_listen "$1" "$spid" 60
	timeout 60 "$UROCE_XFER" -S "$S" rc_pingpong -n 10 -p "$1" 127.0.0.1 >/dev/null 2>&1
	wait "$spid"
}
dbg_lines() { grep -c '^uroced: debug: client .*next hop of GID' "$IT_DIR/L.log"; }
cli log-level debug
dbg_pair 19328
n_debug=$(dbg_lines)
cli log-level info
dbg_pair 19329
if [ "$n_debug" -gt 0 ] && [ "$(dbg_lines)" -eq "$n_debug" ]; then
	it_log "PASS log levels: $n_debug debug lines at debug, none more at info"
else
	it_log "FAIL log levels: $n_debug debug lines at debug, $(dbg_lines) after info"
	IT_FAILS=$((IT_FAILS + 1))
fi
cli capture start "$IT_DIR/loopback.pcap"
timeout 60 "$UROCE_XFER" -S "$S" rc_pingpong -n 10 -p 19330 >/dev/null 2>&1 &
cap_pid=$!
it_wait_listen 19330 "$cap_pid" 60
timeout 60 "$UROCE_XFER" -S "$S" rc_pingpong -n 10 -p 19330 127.0.0.1 >/dev/null 2>&1
wait "$cap_pid" # not a bare wait: the daemon is a child of this shell too
cli capture stop
if [ -s "$IT_DIR/loopback.pcap" ]; then
	it_log "PASS capture: $(stat -c %s "$IT_DIR/loopback.pcap") bytes"
else
	it_log "FAIL capture: no pcap written"
	IT_FAILS=$((IT_FAILS + 1))
fi
if "$UROCE_CLI" -S "$S" fault bogus=1 >/dev/null 2>&1; then
	it_log "FAIL uroce fault bogus=1 was accepted"
	IT_FAILS=$((IT_FAILS + 1))
fi
if ! "$UROCE_CLI" -S "$S" stat --json | python3 -c 'import json,sys; json.load(sys.stdin)'; then
	it_log "FAIL uroce stat --json is not JSON"
	IT_FAILS=$((IT_FAILS + 1))
fi

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "loopback: $IT_FAILS check(s) failed"
	exit 1
fi
it_log "loopback: all passed"
exit 0
