#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rsockets over two uroced: rdma-core's own rsocket programs (Debian's rdmacm-utils,
# unmodified) and plain TCP programs under Debian's librspreload.so, each side in its
# daemon's network namespace, on the daemons' addresses:
#   - rstream with data verification (-T v): blocking 1 MB sends, which wrap both sides'
#     buffers many times; non-blocking 100 KB sends (-T n); rpoll-driven (-T a);
#   - riostream -T v: riomap/riowrite (RDMA WRITE straight into the peer's mapped buffer);
#   - test/eco/tcp_echo.c under librspreload.so: 8 MB echoed and compared byte for byte,
#     with poll and non-blocking send/recv as a socket program uses them;
#   - sockperf ping-pong --tcp under librspreload.so prints a latency; its UDP mode runs
#     on a kernel socket (no datagram rsockets: rsocket says ENOTSUP and the preload
#     library falls back), sending no RoCE packet;
#   - a peer killed mid-transfer ends the other side's rsend at once (ECONNRESET);
#   - the client's daemon sent RoCE packets for each (the kernel's TCP did not carry them).
#
#   test/eco/rsockets.sh   (root; $UROCED, $UROCE_XFER, $UROCE_CLI, $UROCE_VERBS_LIBDIR,
#                           $UROCE_RDMACM_LIBDIR)
# Exit: 0 passed, 1 failed, 77 skipped (not root, or rdmacm-utils not installed).
set -u
. "$(dirname "$0")/../integration/lib.sh"

PRELOAD=$(ls /usr/lib/*/rsocket/librspreload.so 2>/dev/null | head -n 1)
if ! command -v rstream >/dev/null || ! command -v riostream >/dev/null || [ -z "$PRELOAD" ] ||
	! command -v cc >/dev/null; then
	echo "eco_rsockets: rstream, riostream or librspreload.so missing (apt-get install rdmacm-utils librdmacm1); skipped"
	exit 77
fi
it_init eco_rsockets
PORT=$((20000 + $$ % 10000))

cc -O2 -Wall -Wextra -Werror -o "$IT_DIR/tcp_echo" "$(dirname "$0")/tcp_echo.c" || exit 1
it_kernel_iface_pair 10.85.0 || exit 1
libs=$UROCE_VERBS_LIBDIR:$UROCE_RDMACM_LIBDIR

# wait_server PID cm|udp PORT: until the server started next to daemon B listens, for at
# most the 60 s a starting program could take on a loaded machine (one that died is not
# waited for). rdma_cm listens in the daemon, not in the kernel: ask the daemon, which
# counts its listening ids (cm.listening, above LISTENING0); a kernel UDP socket (the
# preload library's fallback) is asked of the kernel. A fixed second's wait once lost the
# race to a slow server (rstream prints nothing before its client comes).
wait_server() {
	local pid=$1 kind=$2 port=$3
	if [ "$kind" = cm ]; then
		it_wait_cm_listening "$(it_sock B)" "$LISTENING0" "$pid" 60
		return
	fi
	it_wait_until "$pid" 60 udp_listening "$port"
}
udp_listening() { ip netns exec "$IT_NS_B" ss -Hlun "sport = :$1" | grep -q .; }

# run NAME cm|udp SERVER-CMD... -- CLIENT-CMD...: the server next to daemon B, started
# first; the client next to A once the server listens (wait_server on $PORT). Sets rc,
# src, sent.
run() {
	local name=$1 kind=$2 spid sent0
	shift 2
	local -a scmd=() ccmd=()
	while [ "$1" != -- ]; do
		scmd+=("$1")
		shift
	done
	shift
	ccmd=("$@")
	sent0=$(it_stat "$(it_sock A)" sent_pkts)
	LISTENING0=$(it_stat "$(it_sock B)" cm.listening)
	ip netns exec "$IT_NS_B" env UROCE_SOCKET="$(it_sock B)" LD_LIBRARY_PATH="$libs" \
		timeout 120 "${scmd[@]}" >"$IT_DIR/$name.server" 2>&1 &
	spid=$!
	wait_server "$spid" "$kind" "$PORT"
	ip netns exec "$IT_NS_A" env UROCE_SOCKET="$(it_sock A)" LD_LIBRARY_PATH="$libs" \
		timeout 120 "${ccmd[@]}" >"$IT_DIR/$name.client" 2>&1
	rc=$?
	[ "${STOP_SERVER:-0}" = 1 ] && kill "$spid" 2>/dev/null
	wait "$spid"
	src=$?
	# A server that serves until stopped ends by our SIGTERM (timeout's 124 is a hang).
	[ "${STOP_SERVER:-0}" = 1 ] && [ "$src" = 143 ] && src=0
	sent=$(($(it_stat "$(it_sock A)" sent_pkts) - sent0))
	[ "$rc" = 0 ] && [ "$src" = 0 ] || tail -n 8 "$IT_DIR/$name.client" "$IT_DIR/$name.server"
}

# rstream NAME OPTIONS...: both ends with the same options; the result line is the
# client's "custom" line (size, transfers, ..., usec/xfer).
rstream_case() {
	local name=$1
	shift
	PORT=$((PORT + 1))
	run "$name" cm rstream -b 10.85.0.2 -p "$PORT" "$@" -- rstream -s 10.85.0.2 -p "$PORT" "$@"
	grep -h '^custom' "$IT_DIR/$name.client" | sed "s/^/    $name: /"
	it_check "$name: rstream $* (exit $rc, server $src), data verified" \
		test "$rc" = 0 -a "$src" = 0
	it_check "$name: both ends printed their figures" \
		test "$(cat "$IT_DIR/$name.client" "$IT_DIR/$name.server" | grep -c '^custom')" = 2
	it_check "$name: over uroce, daemon A sent $sent RoCE packets" test "$sent" -gt 0
}

rstream_case blocking -T b -T v -S 1000000 -C 50
rstream_case nonblocking -T n -T v -S 100000 -C 200
rstream_case async -T a -T v -S 100000 -C 200

PORT=$((PORT + 1))
run riostream cm riostream -b 10.85.0.2 -p "$PORT" -T v -S 100000 -C 50 -- \
	riostream -s 10.85.0.2 -p "$PORT" -T v -S 100000 -C 50
grep -h '^custom' "$IT_DIR/riostream.client" | sed "s/^/    riostream: /"
it_check "riostream -T v (riomap, riowrite; exit $rc, server $src), data verified" \
	test "$rc" = 0 -a "$src" = 0
it_check "riostream: over uroce, daemon A sent $sent RoCE packets" test "$sent" -gt 0

PORT=$((PORT + 1))
run tcp_echo cm env LD_PRELOAD="$PRELOAD" "$IT_DIR/tcp_echo" server \
	10.85.0.2 "$PORT" -- env LD_PRELOAD="$PRELOAD" "$IT_DIR/tcp_echo" client 10.85.0.2 \
	"$PORT" 8000000
sed 's/^/    /' "$IT_DIR/tcp_echo.client"
it_check "a TCP program under librspreload.so: 8 MB echoed intact (exit $rc, server $src)" \
	grep -q "8000000 bytes echoed intact" "$IT_DIR/tcp_echo.client"
# 8 MB from A, in RDMA WRITEs of at most 1 KiB (the path MTU) each: 7813 frames at least.
it_check "tcp_echo: over uroce, daemon A sent $sent RoCE packets (>= 7813)" \
	test "$sent" -ge 7813

# A peer killed mid-transfer sends no DISCONNECT; its daemon's DREQ must end the other
# side's wait (rsend: ECONNRESET), where rdma-core's rsockets wait for ever.
PORT=$((PORT + 1))
LISTENING0=$(it_stat "$(it_sock B)" cm.listening)
ip netns exec "$IT_NS_B" env UROCE_SOCKET="$(it_sock B)" LD_LIBRARY_PATH="$libs" \
	timeout 120 rstream -b 10.85.0.2 -p "$PORT" -S 1000000 -C 100000 >/dev/null 2>&1 &
spid=$!
wait_server "$spid" cm "$PORT"
ip netns exec "$IT_NS_A" env UROCE_SOCKET="$(it_sock A)" LD_LIBRARY_PATH="$libs" \
	timeout 120 rstream -s 10.85.0.2 -p "$PORT" -S 1000000 -C 100000 \
	>"$IT_DIR/killed.client" 2>&1 &
cpid=$!
sleep 2
pkill -9 -P "$spid" rstream
t0=$SECONDS
wait "$cpid"
rc=$?
wait "$spid" 2>/dev/null
sed 's/^/    /' "$IT_DIR/killed.client"
it_check "peer killed: the client failed (exit $rc) $((SECONDS - t0)) s later, not at its timeout" \
	test "$rc" != 0 -a "$rc" != 124 -a $((SECONDS - t0)) -lt 30

if command -v sockperf >/dev/null; then
	PORT=$((PORT + 1))
	STOP_SERVER=1 run sockperf cm env LD_PRELOAD="$PRELOAD" sockperf server --tcp -i 10.85.0.2 -p "$PORT" \
		-- env LD_PRELOAD="$PRELOAD" sockperf ping-pong --tcp -i 10.85.0.2 -p "$PORT" -t 2
	# The server serves until stopped: run stops it once the client is done.
	grep -h 'Summary: Latency' "$IT_DIR/sockperf.client" | sed 's/^/    /'
	it_check "sockperf ping-pong --tcp under librspreload.so printed a latency (exit $rc)" \
		grep -q 'Summary: Latency is [0-9.]* usec' "$IT_DIR/sockperf.client"
	it_check "sockperf: over uroce, daemon A sent $sent RoCE packets (> 1000)" \
		test "$sent" -gt 1000
	# UDP: no datagram rsockets (rsocket says ENOTSUP), so librspreload.so gives sockperf
	# a kernel UDP socket, which reaches the peer through the kernel interfaces.
	PORT=$((PORT + 1))
	STOP_SERVER=1 run sockperf_udp udp env LD_PRELOAD="$PRELOAD" sockperf server -i 10.85.0.2 \
		-p "$PORT" -- env LD_PRELOAD="$PRELOAD" sockperf ping-pong -i 10.85.0.2 -p "$PORT" -t 1
	grep -h 'Summary: Latency' "$IT_DIR/sockperf_udp.client" | sed 's/^/    /'
	it_check "sockperf ping-pong (UDP) under librspreload.so ran on a kernel socket (exit $rc)" \
		grep -q 'Summary: Latency is [0-9.]* usec' "$IT_DIR/sockperf_udp.client"
	it_check "sockperf UDP: no RoCE packets from daemon A ($sent)" test "$sent" -eq 0
else
	echo "sockperf not installed (apt-get install sockperf): its case skipped"
fi
exit $((IT_FAILS > 0))
