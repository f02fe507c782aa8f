#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# host.kernel_iface: each daemon gives its namespace's kernel a tap with the daemon's MAC,
# MTU and IPv4 address, so the host's TCP/IP and RDMA reach a peer at one address, as on
# an RNIC's netdev. Two daemons on a veth pair, each in its own namespace, and in each
# namespace the kernel and the applications:
#   - the tap exists with the daemon's MAC, MTU and address; the port's own interface
#     has rp_filter 1 and arp_ignore 8 (its kernel must not answer for the address too);
#   - the kernel pings the peer's address (ARP through both daemons) and moves 4 MB over
#     TCP to a server in the other namespace, intact (checked by size and SHA-256);
#   - ibv_rc_pingpong exchanges its QP over TCP with the RoCE address itself (no
#     127.0.0.1), then runs 1000 RC round trips over uroce; the daemons count the frames
#     they handed to and took from their kernel (daemon.kernel_rx/kernel_tx), none lost;
#   - qperf -cm1 (when installed): its server binds rdma_cm to any address and port 0
#     and tells the client the port over TCP before it listens; the client connects to
#     the address it reached over TCP; RC latency, bandwidth, RDMA WRITE and READ run;
#   - a daemon that stops takes its tap with it and puts its port interface's rp_filter
#     and arp_ignore back as it found them;
#   - then a kernel without a daemon on B's end of the veth (as a container) moves 4 MB
#     over TCP to A's kernel: daemon A fills in the checksums it left for offload;
#   - host.kernel_iface with port.vlan is refused at start, with a message.
#
#   kernel_iface.sh   (root; $UROCED, $UROCE_XFER, $UROCE_CLI, $UROCE_VERBS_LIBDIR,
#                      $UROCE_RDMACM_LIBDIR)
# Exit: 0 passed, 1 failed, 77 skipped (not root, no ibv_rc_pingpong).
set -u
. "$(dirname "$0")/lib.sh"

command -v ibv_rc_pingpong >/dev/null ||
	{ echo "kernel_iface: no ibv_rc_pingpong (ibverbs-utils); skipped"; exit 77; }
it_init kernel_iface

it_kernel_iface_pair 10.81.0 || exit 1
inA() { ip netns exec "$IT_NS_A" env UROCE_SOCKET="$(it_sock A)" "$@"; }
inB() { ip netns exec "$IT_NS_B" env UROCE_SOCKET="$(it_sock B)" "$@"; }

mac_a=$(sed -n 's/.* mac \([0-9a-f:]*\) .*/\1/p' "$IT_DIR/A.log" | head -n1)
it_check "tap uroce0 has the daemon's MAC $mac_a" \
	grep -q "link/ether $mac_a " <(ip -n "$IT_NS_A" link show uroce0)
it_check "tap uroce0 has MTU 1500 and is up" \
	grep -q "mtu 1500 .*state \(UP\|UNKNOWN\)" <(ip -n "$IT_NS_A" link show uroce0)
it_check "tap uroce0 has 10.81.0.1/24" grep -q "inet 10.81.0.1/24 " <(ip -n "$IT_NS_A" addr show uroce0)
it_check "$IT_IF_A: rp_filter 1" \
	test "$(ip netns exec "$IT_NS_A" cat /proc/sys/net/ipv4/conf/"$IT_IF_A"/rp_filter)" = 1
it_check "$IT_IF_A: arp_ignore 8" \
	test "$(ip netns exec "$IT_NS_A" cat /proc/sys/net/ipv4/conf/"$IT_IF_A"/arp_ignore)" = 8

it_check "the kernel pings the peer daemon's address" inA ping -c 3 -i 0.2 -W 2 -q 10.81.0.2
it_check "the kernel has the peer daemon's MAC in its neighbour table" \
	grep -q "10.81.0.2 .*lladdr $(sed -n 's/.* mac \([0-9a-f:]*\) .*/\1/p' "$IT_DIR/B.log" | head -n1)" \
	<(ip -n "$IT_NS_A" neigh show dev uroce0)

# tcp_blob SERVER_NS CLIENT_NS ADDR: 4 MB from a client in CLIENT_NS to a server on ADDR in
# SERVER_NS, which answers with the size and SHA-256 it got; prints the answer.
head -c 4194304 /dev/urandom >"$IT_DIR/blob"
want="4194304 $(sha256sum <"$IT_DIR/blob" | cut -d' ' -f1)"
PORT=$((20000 + $$ % 10000))
tcp_blob() {
	local spid
	PORT=$((PORT + 1))
	ip netns exec "$1" timeout 60 python3 -c '
import hashlib, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[2], int(sys.argv[1])))
s.listen(1)
c, _ = s.accept()
h, n = hashlib.sha256(), 0
while True:
	b = c.recv(65536)
	if not b:
		break
	h.update(b)
	n += len(b)
c.sendall(("%d %s" % (n, h.hexdigest())).encode())
c.close()' "$PORT" "$3" >"$IT_DIR/tcp.server" 2>&1 &
	spid=$!
	it_wait_listen "$PORT" "$spid" 30 "$1"
	ip netns exec "$2" timeout 60 python3 -c '
import socket, sys
s = socket.create_connection((sys.argv[3], int(sys.argv[1])), timeout=30)
s.sendall(open(sys.argv[2], "rb").read())
s.shutdown(socket.SHUT_WR)
print(s.recv(200).decode())' "$PORT" "$IT_DIR/blob" "$3" 2>&1
	wait "$spid"
}
got=$(tcp_blob "$IT_NS_B" "$IT_NS_A" 10.81.0.2)
it_check "TCP through both daemons: 4 MB arrive intact ($got)" test "$got" = "$want"

# One address for TCP and RDMA: ibv_rc_pingpong's QP exchange goes to 10.81.0.2 over
# TCP, its RoCE traffic to the same address.
sent0=$(it_stat "$(it_sock A)" sent_pkts)
PORT=$((PORT + 1))
inB env LD_LIBRARY_PATH="$UROCE_VERBS_LIBDIR" timeout 60 \
	ibv_rc_pingpong -g 1 -p "$PORT" -n 1000 >"$IT_DIR/pp.server" 2>&1 &
spid=$!
it_wait_listen "$PORT" "$spid" 30 "$IT_NS_B"
inA env LD_LIBRARY_PATH="$UROCE_VERBS_LIBDIR" timeout 60 \
	ibv_rc_pingpong -g 1 -p "$PORT" -n 1000 10.81.0.2 >"$IT_DIR/pp.client" 2>&1
rc=$?
wait "$spid"
src=$?
sent=$(($(it_stat "$(it_sock A)" sent_pkts) - sent0))
it_check "ibv_rc_pingpong to 10.81.0.2 (client $rc, server $src, $sent RoCE packets sent)" \
	test "$rc" = 0 -a "$src" = 0 -a "$sent" -ge 1000
grep -q "1000 iters" "$IT_DIR/pp.client" || cat "$IT_DIR/pp.client" "$IT_DIR/pp.server"

# qperf -cm1: TCP to the server's address, then rdma_cm to the same address and the
# port the server's rdma_bind_addr chose (rdma_get_src_port before rdma_listen).
if command -v qperf >/dev/null; then
	PORT=$((PORT + 1))
	inB env LD_LIBRARY_PATH="$UROCE_VERBS_LIBDIR:$UROCE_RDMACM_LIBDIR" timeout 90 \
		qperf -lp "$PORT" >"$IT_DIR/qperf.server" 2>&1 &
	spid=$!
	it_wait_listen "$PORT" "$spid" 30 "$IT_NS_B"
	inA env LD_LIBRARY_PATH="$UROCE_VERBS_LIBDIR:$UROCE_RDMACM_LIBDIR" timeout 60 \
		qperf 10.81.0.2 -lp "$PORT" -cm1 -t 1 rc_lat rc_bw rc_rdma_write_lat rc_rdma_read_bw \
		>"$IT_DIR/qperf.client" 2>&1
	rc=$?
	inA env LD_LIBRARY_PATH="$UROCE_VERBS_LIBDIR:$UROCE_RDMACM_LIBDIR" timeout 10 \
		qperf 10.81.0.2 -lp "$PORT" quit >/dev/null 2>&1
	wait "$spid"
	sed 's/^/    /' "$IT_DIR/qperf.client"
	it_check "qperf -cm1 rc_lat, rc_bw, rc_rdma_write_lat, rc_rdma_read_bw (exit $rc)" \
		test "$rc" = 0 -a "$(grep -c 'latency\|bw ' "$IT_DIR/qperf.client")" = 4
else
	it_log "qperf not installed (apt-get install qperf): its case skipped"
fi

for n in A B; do
	krx=$(it_stat "$(it_sock $n)" daemon.kernel_rx)
	ktx=$(it_stat "$(it_sock $n)" daemon.kernel_tx)
	kdrop=$(it_stat "$(it_sock $n)" daemon.kernel_drops)
	it_check "daemon $n: kernel_rx $krx, kernel_tx $ktx, kernel_drops $kdrop" \
		test "${krx:-0}" -gt 100 -a "${ktx:-0}" -gt 100 -a "${kdrop:-1}" = 0
done

# A stopped daemon takes its tap with it.
kill "$IT_PID_B"
wait "$IT_PID_B" 2>/dev/null
it_check "daemon B stopped: its tap is gone" bash -c "! ip -n '$IT_NS_B' link show uroce0 2>/dev/null"
for k in rp_filter arp_ignore; do
	it_check "daemon B stopped: $IT_IF_B's $k is back to the namespace's default" test \
		"$(ip netns exec "$IT_NS_B" cat /proc/sys/net/ipv4/conf/"$IT_IF_B"/$k)" = \
		"$(ip netns exec "$IT_NS_B" cat /proc/sys/net/ipv4/conf/default/$k)"
done

# A peer without uroced, as a container on a veth: namespace B's kernel on its end of the
# veth. Its TCP leaves the checksums to the device (veth offloads them), and daemon A's
# af_packet port gets them unfilled; A fills them in before its kernel sees them, or its
# kernel would drop every segment as corrupt.
# A veth also hands on segments of up to 64 KiB (GSO) that no wire carries, and af_packet
# delivers each one as a single frame longer than the port's MTU, which the port drops:
# a container's veth is set to segment to the MTU, as a NIC would on the wire.
ip -n "$IT_NS_B" link set "$IT_IF_B" gso_max_segs 1
ip -n "$IT_NS_B" addr add 10.81.0.3/24 dev "$IT_IF_B"
done0=$(it_stat "$(it_sock A)" daemon.kernel_csum_completed)
got=$(tcp_blob "$IT_NS_A" "$IT_NS_B" 10.81.0.1)
done1=$(it_stat "$(it_sock A)" daemon.kernel_csum_completed)
it_check "TCP from a kernel on the veth to A's kernel: 4 MB arrive intact ($got)" \
	test "$got" = "$want"
it_check "daemon A completed $((done1 - done0)) checksums left for offload" \
	test $((done1 - done0)) -gt 0

# Refused: the kernel's frames would leave untagged on a VLAN.
out=$(ip netns exec "$IT_NS_B" timeout 30 "$UROCED" --no-pci --no-huge -m 256 \
	"--file-prefix=ux${IT_ID}V" --log-level=lib.eal:error \
	"$(it_af_packet_vdev "$IT_IF_B" 1500)" -- --set host.ipv4=10.81.0.2 \
	--set "control.socket=$IT_DIR/v.sock" --set port.vlan=5 \
	--set host.kernel_iface=uroce0 2>&1)
rc=$?
IT_PREFIXES+=("ux${IT_ID}V")
it_check "kernel_iface with port.vlan refused (exit $rc)" \
	grep -q "kernel_iface with port.vlan: not supported" <<<"$out"
[ "$rc" -ne 0 ] || IT_FAILS=$((IT_FAILS + 1))

exit $((IT_FAILS > 0))
