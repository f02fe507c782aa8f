#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# libfabric (Debian's libfabric1, unmodified) over two uroced, test/eco/fi_check.c's
# server and client each in its daemon's network namespace, on the daemons' addresses,
# which the kernel interfaces (host.kernel_iface) also give the kernel: the provider finds
# its RDMA device by the interface address, as on an RNIC's netdev. Three times: msg
# endpoints of the verbs provider (rdma_cm connections, RC QPs), rdm endpoints of
# verbs;ofi_rxm (what MPI libraries use), and dgram endpoints of the verbs provider (UD
# QPs), each:
#   - fi_getinfo with the server's address and FI_SOURCE names domain uroce0
#     (uroce0-dgram);
#   - 400 ping-pongs of 1 B .. 64 KiB (dgram: up to the path MTU) come back intact, and
#     (msg, rdm) a 1 MiB fi_write (RDMA WRITE) lands intact in the server's buffer;
#   - the client's daemon sent at least that many RoCE packets: it went over uroce.
# Then libfabric's own fi_pingpong (libfabric-bin), msg endpoints, sizes 1 B .. 1 MiB,
# data checked (-c): its server names no address, so the verbs provider binds rdma_cm to
# "localhost" to learn whether that needs a device, which the kernel's rdma_cm (and
# ours) allows, and takes its devices' addresses (doc/ecosystem.md).
#
#   test/eco/libfabric.sh   (root; $UROCED, $UROCE_XFER, $UROCE_CLI, $UROCE_VERBS_LIBDIR,
#                            $UROCE_RDMACM_LIBDIR)
# Exit: 0 passed, 1 failed, 77 skipped (not root, or libfabric-dev or libfabric-bin not
# installed).
set -u
. "$(dirname "$0")/../integration/lib.sh"

if [ ! -f /usr/include/rdma/fabric.h ] || ! command -v cc >/dev/null; then
	echo "eco_libfabric: no libfabric headers (apt-get install libfabric-dev); skipped"
	exit 77
fi
if ! command -v fi_pingpong >/dev/null; then
	echo "eco_libfabric: no fi_pingpong (apt-get install libfabric-bin); skipped"
	exit 77
fi
it_init eco_libfabric
ITER=400
PORT=$((20000 + $$ % 10000))

cc -O2 -Wall -Wextra -Werror -o "$IT_DIR/fi_check" "$(dirname "$0")/fi_check.c" -lfabric ||
	exit 1
it_kernel_iface_pair 10.82.0 || exit 1
libs=$UROCE_VERBS_LIBDIR:$UROCE_RDMACM_LIBDIR

# run MODE [ENV...]: fi_check's server next to daemon B, its client next to A.
run() {
	local mode=$1 sent0 sent rc src spid
	shift
	PORT=$((PORT + 1))
	sent0=$(it_stat "$(it_sock A)" sent_pkts)
	ip netns exec "$IT_NS_B" env UROCE_SOCKET="$(it_sock B)" LD_LIBRARY_PATH="$libs" "$@" \
		timeout 120 "$IT_DIR/fi_check" server 10.82.0.2 "$PORT" "$ITER" "$mode" \
		>"$IT_DIR/$mode.server" 2>&1 &
	spid=$!
	# It listens once it says so (rdma_cm listens in the daemon, not in the kernel).
	for _ in $(seq 200); do
		grep -q "server listening" "$IT_DIR/$mode.server" 2>/dev/null && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.05
	done
	ip netns exec "$IT_NS_A" env UROCE_SOCKET="$(it_sock A)" LD_LIBRARY_PATH="$libs" "$@" \
		timeout 120 "$IT_DIR/fi_check" client 10.82.0.2 "$PORT" "$ITER" "$mode" \
		>"$IT_DIR/$mode.client" 2>&1
	rc=$?
	wait "$spid"
	src=$?
	sent=$(($(it_stat "$(it_sock A)" sent_pkts) - sent0))
	grep -h '^fi_check' "$IT_DIR/$mode.server" "$IT_DIR/$mode.client" | sed 's/^/    /'
	it_check "$mode: fi_getinfo found domain uroce0" \
		grep -q "domain uroce0\(-dgram\)\?)" "$IT_DIR/$mode.server"
	local what="$ITER ping-pongs and a 1 MiB fi_write"
	[ "$mode" = dgram ] && what="$ITER ping-pongs"
	it_check "$mode: client and server (exit $rc, $src): $what" \
		test "$rc" = 0 -a "$src" = 0
	it_check "$mode: over uroce, daemon A sent $sent RoCE packets (>= $ITER)" \
		test "$sent" -ge "$ITER"
	[ "$rc" = 0 ] && [ "$src" = 0 ] || tail -n 20 "$IT_DIR/$mode.client" "$IT_DIR/$mode.server"
}

# pingpong SIZE: fi_pingpong's server next to daemon B (no address: the provider's choice),
# its client next to A, $ITER round trips of SIZE bytes, each checked (-c). Its control
# connection is TCP to B's kernel interface, on its own port.
pingpong() {
	local size=$1 sent0 sent rc src spid out
	PORT=$((PORT + 1))
	sent0=$(it_stat "$(it_sock A)" sent_pkts)
	ip netns exec "$IT_NS_B" env UROCE_SOCKET="$(it_sock B)" LD_LIBRARY_PATH="$libs" \
		timeout 120 fi_pingpong -p verbs -e msg -I "$ITER" -S "$size" -c -B "$PORT" \
		>"$IT_DIR/pingpong$size.server" 2>&1 &
	spid=$!
	it_wait_listen "$PORT" "$spid" 30 "$IT_NS_B"
	ip netns exec "$IT_NS_A" env UROCE_SOCKET="$(it_sock A)" LD_LIBRARY_PATH="$libs" \
		timeout 120 fi_pingpong -p verbs -e msg -I "$ITER" -S "$size" -c -P "$PORT" 10.82.0.2 \
		>"$IT_DIR/pingpong$size.client" 2>&1
	rc=$?
	wait "$spid"
	src=$?
	sent=$(($(it_stat "$(it_sock A)" sent_pkts) - sent0))
	# "bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec", then the run's line.
	out=$(grep -E "^[0-9.]+[kmg]? +$ITER +=$ITER " "$IT_DIR/pingpong$size.client")
	it_check "fi_pingpong msg $size B: client and server (exit $rc, $src), $ITER checked round trips: ${out:-none}" \
		test "$rc" = 0 -a "$src" = 0 -a -n "$out"
	it_check "fi_pingpong msg $size B: over uroce, daemon A sent $sent RoCE packets (>= $ITER)" \
		test "$sent" -ge "$ITER"
	[ "$rc" = 0 ] && [ "$src" = 0 ] ||
		tail -n 5 "$IT_DIR/pingpong$size.client" "$IT_DIR/pingpong$size.server"
}

run msg
for size in 1 64 4096 65536 1048576; do
	pingpong "$size"
done
# rxm sizes its CQs by the universe size (1024 ranks of 128 + 128 entries: 262144), above
# the device's max_cqe (65536; rxe's is 32767 and needs the same): a two-process job says so.
run rdm FI_UNIVERSE_SIZE=16
run dgram
exit $((IT_FAILS > 0))
