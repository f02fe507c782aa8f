#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# port.vlan end to end: two uroceds with port.vlan = 42 in two network namespaces over a
# veth pair, `uroce-xfer ops` across them (RC, UC and UD, every operation), with tshark
# capturing the veth. Checked:
# - the transfer passes (ARP, RoCE requests and responses all go through the tag);
# - every frame on the wire carries one 802.1Q tag with VID 42: RoCE (UDP 4791) and ARP
#   frames are there, and none is untagged or on another VID;
# - each daemon received RoCE frames and dropped none as wrong_vlan;
# - a daemon on VLAN 43 cannot reach one on 42: its transfer fails and the VLAN 42 side
#   counts its frames as wrong_vlan.
#
#   vlan.sh            (root; binaries from $UROCED, $UROCE_XFER, $UROCE_CLI; tshark)
# Exit: 0 all passed, 1 a failure, 77 not root, not built or no tshark.
# Timing (2 cores): about 20 s.
set -u
. "$(dirname "$0")/lib.sh"
it_init vlan

if ! command -v tshark >/dev/null; then
	echo "vlan: tshark not found; skipped"
	exit 77
fi
VID=42
OTHER_VID=43
PCAP=$IT_DIR/wire.pcap

fail() {
	it_log "FAIL $*"
	IT_FAILS=$((IT_FAILS + 1))
}

it_veth_pair 1500 || exit 1
# The capture starts before the daemons, so their first ARP exchange is in it.
ip netns exec "$IT_NS_A" tshark -n -q -i "$IT_IF_A" -w "$PCAP" >"$IT_DIR/tshark.log" 2>&1 &
TSHARK_PID=$!
IT_PIDS+=("$TSHARK_PID")
for _ in $(seq 1 100); do
	grep -q "Capturing on" "$IT_DIR/tshark.log" && break
	sleep 0.1
done
grep -q "Capturing on" "$IT_DIR/tshark.log" || { cat "$IT_DIR/tshark.log"; exit 1; }

it_daemon A "$IT_NS_A" "$(it_af_packet_vdev "$IT_IF_A" 1500)" 10.77.0.1 1500 \
	--set port.vlan=$VID || exit 1
it_daemon B "$IT_NS_B" "$(it_af_packet_vdev "$IT_IF_B" 1500)" 10.77.0.2 1500 \
	--set port.vlan=$VID || exit 1
it_xfer_pair vlan-$VID 300 "$(it_sock A)" "$(it_sock B)" 19401 ops -t 30 -m 1024 -L -c 4 \
	-z 0,1,1024,1025,65536,1M

for d in A B; do
	roce=$(it_stat "$(it_sock "$d")" ip.rx_roce)
	wrong=$(it_stat "$(it_sock "$d")" ip.wrong_vlan)
	echo "    $d: ip.rx_roce $roce, ip.wrong_vlan $wrong"
	[ "${roce:-0}" -gt 100 ] || fail "$d received ${roce:-no} RoCE frames"
	[ "${wrong:-x}" = 0 ] || fail "$d dropped ${wrong:-?} frames as wrong_vlan"
done

kill -INT "$TSHARK_PID"
it_reap "$TSHARK_PID"
# One pass over the capture: each frame's VIDs (a second tag would add a second one) and
# the protocols tshark found in it (eth:ethertype:vlan:ethertype:ip:udp:infiniband).
tshark -n -r "$PCAP" -T fields -E separator=/t -e vlan.id -e vlan.priority \
	-e frame.protocols >"$IT_DIR/frames.tsv" 2>/dev/null
read -r total roce arp untagged other stacked example < <(awk -F'\t' -v vid=$VID '
	{ n++ }
	$3 !~ /:vlan:/ { untagged++; next }
	$3 ~ /:vlan:ethertype:vlan:/ { stacked++ }
	$1 != vid { other++; next }
	$3 ~ /:udp:infiniband(:|$)/ { roce++; if (!ex) ex = "VID=" $1 ",PCP=" $2 }
	$3 ~ /:arp$/ { arp++ }
	END { print n + 0, roce + 0, arp + 0, untagged + 0, other + 0, stacked + 0, ex }
' "$IT_DIR/frames.tsv")
echo "    capture: $total frames, $roce RoCE and $arp ARP with VID $VID, $untagged untagged," \
	"$other on another VID, $stacked double-tagged; first RoCE frame: ${example:-none}"
[ "$roce" -gt 100 ] || fail "capture: $roce tagged RoCE frames"
[ "$arp" -ge 2 ] || fail "capture: $arp tagged ARP frames (a request and its reply expected)"
[ "$untagged" -eq 0 ] || fail "capture: $untagged untagged frames"
[ "$other" -eq 0 ] || fail "capture: $other frames on another VID"
[ "$stacked" -eq 0 ] || fail "capture: $stacked frames with a second tag"
[ "$IT_FAILS" -eq 0 ] && it_log "PASS capture: every frame is tagged with VID $VID"

# B on another VLAN: its ARP requests reach A tagged 43, and A drops them.
it_stop_daemon B
before=$(it_stat "$(it_sock A)" ip.wrong_vlan)
it_daemon B "$IT_NS_B" "$(it_af_packet_vdev "$IT_IF_B" 1500)" 10.77.0.2 1500 \
	--set port.vlan=$OTHER_VID || exit 1
timeout -k 5 30 "$UROCE_XFER" -S "$(it_sock A)" ops -t 5 -T rc -O write -z 1 -c 1 \
	-p 19402 >"$IT_DIR/other-server.out" 2>&1 &
spid=$!
timeout -k 5 30 "$UROCE_XFER" -S "$(it_sock B)" ops -t 5 -T rc -O write -z 1 -c 1 \
	-p 19402 127.0.0.1 >"$IT_DIR/other-client.out" 2>&1
rc=$?
wait "$spid"
after=$(it_stat "$(it_sock A)" ip.wrong_vlan)
echo "    VLAN $OTHER_VID -> $VID: client exit $rc, A's ip.wrong_vlan $before -> $after"
if [ "$rc" -ne 0 ] && [ "${after:-0}" -gt "${before:-0}" ]; then
	it_log "PASS other-vlan: VLAN $OTHER_VID does not reach VLAN $VID"
else
	fail "other-vlan: client exit $rc, A's ip.wrong_vlan ${before:-?} -> ${after:-?}"
	tail -n 20 "$IT_DIR/other-client.out"
fi

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "vlan: $IT_FAILS check(s) failed"
	exit 1
fi
it_log "vlan: all checks passed"
exit 0
