#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Raw packet QPs and flow steering on the wire, beside RoCE: a veth pair between two
# namespaces; in A, uroced at 10.86.0.1 and raw_echo (a plain verbs program over the
# drop-in libibverbs) answering UDP port 5000 from a raw packet QP its flow rule feeds;
# in B, the kernel at 10.86.0.2 and uroced at 10.86.0.3 on the same veth end.
#   - while uroce-xfer moves 64 KiB RDMA WRITEs between the two daemons (RC, its whole
#     run overlapping the echoes), the kernel in B sends datagrams of 1..1400 bytes to
#     10.86.0.1:5000 and gets each back intact: the rule took them from the wire, the
#     QP sent its frames with the checksums the device filled in, and B's kernel, which
#     drops a datagram whose UDP checksum is wrong, delivered them;
#   - every frame raw_echo received verified (IBV_WC_IP_CSUM_OK), daemon A counts what
#     its rules took, and a datagram to port 5001, which no rule names, gets no answer;
#   - the RDMA WRITEs all completed.
#
#   raw_packet.sh   (root; $UROCED, $UROCE_XFER, $UROCE_CLI, $UROCE_VERBS_LIBDIR,
#                    $RAW_ECHO)
# Exit: 0 passed, 1 failed, 77 skipped (not root or not built).
set -u
. "$(dirname "$0")/lib.sh"
it_init raw_packet
it_need_built "$RAW_ECHO" "$UROCE_VERBS_LIBDIR/libibverbs.so.1"
: "${COUNT:=300}"

it_veth_pair 1500 || exit 1
it_daemon A "$IT_NS_A" "$(it_af_packet_vdev "$IT_IF_A" 1500)" 10.86.0.1 1500 || exit 1
it_daemon B "$IT_NS_B" "$(it_af_packet_vdev "$IT_IF_B" 1500)" 10.86.0.3 1500 || exit 1
ip -n "$IT_NS_B" addr add 10.86.0.2/24 dev "$IT_IF_B" || exit 1

# RoCE beside: RDMA WRITEs between the daemons for the whole of the echoes.
"$UROCE_XFER" -S "$(it_sock A)" bw -s 65536 -n 40000 -m 1024 -p 19311 -t 60 \
	>"$IT_DIR/bw-server.out" 2>&1 &
bw_server=$!
IT_PIDS+=("$bw_server")
"$UROCE_XFER" -S "$(it_sock B)" bw -s 65536 -n 40000 -m 1024 -p 19311 -t 60 127.0.0.1 \
	>"$IT_DIR/bw-client.out" 2>&1 &
bw_client=$!
IT_PIDS+=("$bw_client")
# The WRITEs are flowing once A has sent a thousand packets.
bw_flowing() { [ "$(it_stat "$(it_sock A)" sent_pkts)" -gt 1000 ] 2>/dev/null; }
it_wait_until "$bw_client" 30 bw_flowing ||
	{ it_log "the RDMA WRITEs did not start:"; cat "$IT_DIR"/bw-*.out; exit 1; }

ip netns exec "$IT_NS_A" env LD_LIBRARY_PATH="$UROCE_VERBS_LIBDIR" UROCE_SOCKET="$(it_sock A)" \
	timeout -k 5 120 "$RAW_ECHO" 5000 "$COUNT" 90 >"$IT_DIR/echo.out" 2>&1 &
echo_pid=$!
IT_PIDS+=("$echo_pid")
it_wait_line "$IT_DIR/echo.out" 'raw_echo: ready' "$echo_pid" 20 ||
	{ it_log "raw_echo did not start:"; cat "$IT_DIR/echo.out"; exit 1; }

ip netns exec "$IT_NS_B" python3 - "$COUNT" >"$IT_DIR/udp.out" 2>&1 <<'PY'
import os, socket, sys
n = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.86.0.2", 0))
s.settimeout(5)
intact = 0
for i in range(n):
    data = os.urandom(1 + (i * 97) % 1400)
    s.sendto(data, ("10.86.0.1", 5000))
    try:
        got, frm = s.recvfrom(2048)
    except socket.timeout:
        print(f"udp: datagram {i} ({len(data)} B): no answer")
        break
    if got != data or frm != ("10.86.0.1", 5000):
        print(f"udp: datagram {i}: answer from {frm} differs")
        break
    intact += 1
# Port 5001: no rule names it.
s.settimeout(1)
s.sendto(b"nobody", ("10.86.0.1", 5001))
try:
    s.recvfrom(2048)
    print("udp: port 5001 answered")
except socket.timeout:
    print("udp: port 5001 unanswered")
print(f"udp: {intact} of {n} answers intact")
PY
echo_running_at_end=no
kill -0 "$bw_client" 2>/dev/null && echo_running_at_end=yes
wait "$echo_pid"
echo_rc=$?
wait "$bw_client"
bw_rc=$?
wait "$bw_server"
bw_src=$?
sed 's/^/    /' "$IT_DIR/udp.out" "$IT_DIR/echo.out"
grep '^bw:' "$IT_DIR/bw-server.out" "$IT_DIR/bw-client.out" | sed 's/^/    /'

it_check "the kernel got $COUNT answers, each intact (its UDP checksum verified)" \
	grep -q "^udp: $COUNT of $COUNT answers intact" "$IT_DIR/udp.out"
it_check "raw_echo echoed $COUNT datagrams and exited 0" test "$echo_rc" -eq 0
it_check "every frame it received had IBV_WC_IP_CSUM_OK" \
	grep -q "^raw_echo: echoed $COUNT, csum_ok $COUNT," "$IT_DIR/echo.out"
it_check "it was told EBUSY when destroying its QP before its flow" \
	bash -c "! grep -q 'did not say EBUSY' '$IT_DIR/echo.out'"
it_check "a datagram to port 5001 (no rule) got no answer" \
	grep -q "^udp: port 5001 unanswered" "$IT_DIR/udp.out"
steered=$(it_stat "$(it_sock A)" daemon.rx_flow_steered)
it_check "daemon A counts the frames its rules took ($steered >= $COUNT)" \
	test "${steered:-0}" -ge "$COUNT"
it_check "the RDMA WRITEs ran the whole time beside the echoes" test "$echo_running_at_end" = yes
it_check "and all completed (uroce-xfer bw exit 0 on both sides)" \
	test "$bw_rc" -eq 0 -a "$bw_src" -eq 0
[ "$IT_FAILS" -eq 0 ] || { it_show "$IT_DIR/A.log"; exit 1; }
exit 0
