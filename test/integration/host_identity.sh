#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# uroced as a host on a real link: the Linux kernel in one namespace, uroced in the other
# (af_packet on its veth end, also tried over af_xdp and tap in doc/daemon.md), and the
# kernel checks what any host would:
#   - `ping` and `ping -6` to the daemon's IPv4, IPv6 and link-local addresses answer
#     (ARP and ND resolved by the kernel against the daemon);
#   - the kernel's neighbour table holds the daemon's MAC for both families;
#   - traffic the daemon does not handle (UDP to another port, TCP) is dropped and counted
#     by reason (`uroce stat`: ip.unhandled_proto), not answered;
#   - with af_packet, frames the kernel drops for a full ring while the daemon does not run
#     are counted (port.rx_socket_drops).
#
#   host_identity.sh [af_packet|af_xdp|tap]   (root; binaries from $UROCED, $UROCE_CLI)
# The PMD on the daemon's side: net_af_packet (default), net_af_xdp on the veth end, or
# net_tap whose kernel interface is bridged to the veth end.
# Exit: 0 passed, 1 failed, 77 not root or not built.
set -u
. "$(dirname "$0")/lib.sh"
it_init host_identity

command -v ping >/dev/null || { echo "host_identity: no ping (iputils-ping); skipped"; exit 77; }
it_veth_pair 1500 || exit 1
# The kernel side gets addresses (and IPv6 back); the daemon's side stays without any.
ip netns exec "$IT_NS_A" sysctl -qw net.ipv6.conf.all.disable_ipv6=0
ip netns exec "$IT_NS_A" sysctl -qw net.ipv6.conf."$IT_IF_A".disable_ipv6=0
ip -n "$IT_NS_A" addr add 10.78.0.1/24 dev "$IT_IF_A"
ip -n "$IT_NS_A" addr add fd00:78::1/64 dev "$IT_IF_A" nodad
pmd=${1:-af_packet}
case $pmd in
af_packet) vdev=$(it_af_packet_vdev "$IT_IF_B") ;;
af_xdp) vdev="--vdev=net_af_xdp0,iface=$IT_IF_B" ;;
tap)
	# net_tap makes a kernel interface in the daemon's namespace; a bridge joins it to
	# the veth end there.
	vdev="--vdev=net_tap0,iface=ut$IT_ID"
	ip -n "$IT_NS_B" link add ub$IT_ID type bridge
	ip -n "$IT_NS_B" link set "$IT_IF_B" master ub$IT_ID
	ip -n "$IT_NS_B" link set ub$IT_ID up
	;;
*)
	echo "usage: $0 [af_packet|af_xdp|tap]" >&2
	exit 2
	;;
esac
it_daemon B "$IT_NS_B" "$vdev" 10.78.0.2 1500 --set host.ipv6=fd00:78::2 || exit 1
if [ "$pmd" = tap ]; then
	ip netns exec "$IT_NS_B" sysctl -qw net.ipv6.conf.ut$IT_ID.disable_ipv6=1
	ip -n "$IT_NS_B" link set ut$IT_ID master ub$IT_ID
	ip -n "$IT_NS_B" link set ut$IT_ID up
fi
SB=$(it_sock B)
mac=$(sed -n 's/.* mac \([0-9a-f:]*\) .*/\1/p' "$IT_DIR/B.log" | head -n 1)
ll=$(printf 'fe80::%x:%x:%x:%x' \
	$(( (0x${mac:0:2} ^ 2) * 256 + 0x${mac:3:2} )) $(( 0x${mac:6:2} * 256 + 0xff )) \
	$(( 0xfe * 256 + 0x${mac:9:2} )) $(( 0x${mac:12:2} * 256 + 0x${mac:15:2} )))

# Seen here with net_af_xdp on veth: the first second of traffic after the XDP socket
# binds is not delivered (3 of 3 pings lost, then none); give it that second.
if [ "$pmd" = af_xdp ]; then
	ip netns exec "$IT_NS_A" ping -c 1 -W 2 10.78.0.2 >/dev/null 2>&1
	sleep 1
fi

fails=0
check() { # LABEL CMD...: runs CMD in the kernel's namespace
	local label=$1
	shift
	if ip netns exec "$IT_NS_A" "$@" >"$IT_DIR/check.out" 2>&1; then
		it_log "PASS $label"
	else
		it_log "FAIL $label:"
		cat "$IT_DIR/check.out"
		fails=$((fails + 1))
	fi
}
check "ping 10.78.0.2 (ARP, ICMP echo)" ping -c 3 -i 0.2 -W 2 10.78.0.2
check "ping -6 fd00:78::2 (ND, ICMPv6 echo)" ping -6 -c 3 -i 0.2 -W 2 fd00:78::2
check "ping -6 $ll%$IT_IF_A (link-local, GID index 0)" ping -6 -c 3 -i 0.2 -W 2 "$ll%$IT_IF_A"
check "ping -s 1400 -M do (a full 1500-byte frame)" ping -c 2 -i 0.2 -W 2 -s 1400 -M do 10.78.0.2
check "kernel neighbour table holds the daemon's MAC (IPv4)" \
	sh -c "ip neigh show 10.78.0.2 | grep -q '$mac'"
check "kernel neighbour table holds the daemon's MAC (IPv6)" \
	sh -c "ip -6 neigh show fd00:78::2 | grep -q '$mac'"

# Traffic it does not handle: counted, not answered.
before=$(it_stat "$SB" ip.unhandled_proto)
ip netns exec "$IT_NS_A" bash -c 'for i in 1 2 3 4 5; do echo x > /dev/udp/10.78.0.2/9999; done' \
	2>/dev/null
ip netns exec "$IT_NS_A" timeout 2 bash -c 'echo x > /dev/tcp/10.78.0.2/22' 2>/dev/null
sleep 0.5
after=$(it_stat "$SB" ip.unhandled_proto)
if [ -n "$before" ] && [ -n "$after" ] && [ "$after" -ge $((before + 5)) ]; then
	it_log "PASS non-RoCE traffic dropped and counted (ip.unhandled_proto $before -> $after)"
else
	it_log "FAIL ip.unhandled_proto $before -> $after (want +5 or more)"
	fails=$((fails + 1))
fi

# Frames the kernel could not hand over are counted too: with the daemon stopped, a burst
# larger than its af_packet ring overflows it, and what was dropped there
# (port.rx_socket_drops) and what the daemon then took add up to what was sent (a frame or
# two more: the kernel may ARP meanwhile).
if [ "$pmd" = af_packet ]; then
	burst=3000
	before=$(it_stat "$SB" ip.unhandled_proto)
	drops_before=$(it_stat "$SB" port.rx_socket_drops)
	kill -STOP "$IT_PID_B"
	ip netns exec "$IT_NS_A" python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
_ = [s.sendto(b"x" * 64, ("10.78.0.2", 9999)) for i in range(int(sys.argv[1]))]' "$burst"
	kill -CONT "$IT_PID_B"
	sleep 1
	taken=$(($(it_stat "$SB" ip.unhandled_proto) - before))
	drops=$(($(it_stat "$SB" port.rx_socket_drops) - drops_before))
	if [ "$drops" -gt 0 ] && [ $((taken + drops)) -ge "$burst" ] &&
		[ $((taken + drops)) -le $((burst + 5)) ]; then
		it_log "PASS a full af_packet ring is counted: $burst sent, $taken taken," \
			"$drops dropped by the kernel (port.rx_socket_drops)"
	else
		it_log "FAIL $burst sent while the daemon was stopped: $taken taken," \
			"$drops counted as dropped (want a sum of $burst)"
		fails=$((fails + 1))
	fi
fi
it_stats_prefix "$SB" ip. | awk '$2 != 0' | sed 's/^/    /'
[ "$fails" -eq 0 ]
