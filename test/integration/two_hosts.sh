#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Two uroceds joined by a link, `uroce-xfer ops` across them: RC, UC and UD, every
# operation, sizes 0 B..8 MiB with every byte checked, path MTU 1024 and 4096; then with
# fault injection (1 % and 5 % of received frames dropped on both daemons, set through
# `uroce fault`); then the same over memif.
#
#   two_hosts.sh            (root; binaries from $UROCED, $UROCE_XFER, $UROCE_CLI)
#
# What is checked where (see app/uroce-xfer/ops.c):
# - RC: everything arrives exactly once, intact, in every run, lossy or not.
# - UC and UD are checked for "nothing corrupted, duplicated or reordered" (-L) in every
#   run, because the links here drop frames by themselves at full rate (af_packet on veth
#   ~1.5 %, memif when its ring is full: port.tx_dropped) and UC/UD do not retransmit.
#   What they lost is printed in the "lost" column.
# Exit: 0 all passed, 1 a failure, 77 not root or not built.
# Timing (2 cores): about 1-2 minutes.
set -u
. "$(dirname "$0")/lib.sh"
it_init two_hosts

SIZES=0,1,63,64,1000,1024,1025,4096,65536,1M,8M
# READ under loss re-sends whole remainders (NOTES: costly), so lossy runs stop at 1 MiB.
LOSSY_SIZES=0,1,63,64,1000,1024,1025,4096,65536,1M
: "${COUNT:=4}"
: "${XFER_TIMEOUT:=30}"
port=19200

run() { # LABEL SOCK_SERVER SOCK_CLIENT ARGS...
	local label=$1 s=$2 c=$3 sock k line
	shift 3
	port=$((port + 1))
	it_xfer_pair "$label" 600 "$s" "$c" "$port" ops -t "$XFER_TIMEOUT" "$@" && return 0
	# What tells a lost frame from a lost turn of the CPU, while the daemons still hold it.
	for sock in "$s" "$c"; do
		line=
		for k in port.rx_socket_drops port.imissed port.rx_nombuf tx_busy sent_pkts \
			rcvd_pkts rcvd_seq_err out_of_seq_request duplicate_request \
			completer_retry_err retry_exceeded_err uc_dropped_msgs; do
			line+=" $k $(it_stat "$sock" "$k")"
		done
		echo "    $(basename "$sock" .sock):$line"
	done
	return 1
}

fault_both() { # RATES...
	"$UROCE_CLI" -S "$(it_sock A)" fault "$@" >/dev/null &&
		"$UROCE_CLI" -S "$(it_sock B)" fault "$@" >/dev/null
}

# Zero-copy TX (off by default) on the MTU 1500 veth pair and on memif, lossy runs
# included; the MTU 9000 veth pair copies, as by default.
ZC=(--set transport.zero_copy_min=1024)
it_log "af_packet over veth, MTU 1500 (path MTU 1024), zero-copy TX"
it_veth_pair 1500 || exit 1
# A deep af_packet ring (4096 frames; the PMD's default is 512), as test/verbs/tools.sh:
# an 8 MiB READ's response is 8192 frames sent at once, and a receiving daemon off the CPU
# for a few ms on 2 shared cores lets a 512-frame ring overflow. A run with three
# CPU-bound processes beside it lost so much that the READ's every retry (each re-sends
# the remainder at once, over the old stream still queued) ended in the same overflow:
# retry counter exceeded after 8 timeouts without progress; UC lost 8 of 44 there.
DEEP=,framecnt=4096
it_daemon A "$IT_NS_A" "$(it_af_packet_vdev "$IT_IF_A" 1500)$DEEP" 10.77.0.1 1500 "${ZC[@]}" ||
	exit 1
it_daemon B "$IT_NS_B" "$(it_af_packet_vdev "$IT_IF_B" 1500)$DEEP" 10.77.0.2 1500 "${ZC[@]}" ||
	exit 1
run veth-mtu1024 "$(it_sock A)" "$(it_sock B)" -m 1024 -L -c "$COUNT" -z "$SIZES"
# Frames for the wire are built in the port's mbufs (no copy into one afterwards), and
# the requester's RC payloads of 1 KiB and more point into its MRs (ZC). The server side (uroce-xfer ops' responder) sends READ
# responses and UC/UD, which are always copied, and ACKs.
expect_in_place() { # SERVER CLIENT
	local d v z
	for d in "$@"; do
		v=$(it_stat "$(it_sock "$d")" daemon.tx_in_place)
		z=$(it_stat "$(it_sock "$d")" daemon.tx_zero_copy)
		echo "    $d: daemon.tx_in_place $v, daemon.tx_zero_copy $z"
		if [ "${v:-0}" -le 1000 ]; then
			it_log "FAIL $d: frames for the wire were not built in place (tx_in_place $v)"
			IT_FAILS=$((IT_FAILS + 1))
		fi
	done
	if [ "${z:-0}" -le 1000 ]; then
		it_log "FAIL $d: the requester's RC payloads were copied (tx_zero_copy $z)"
		IT_FAILS=$((IT_FAILS + 1))
	fi
}
expect_in_place A B

it_log "the same with 1 % of received frames dropped on both daemons"
fault_both rx_drop=0.01 || exit 1
run veth-loss1 "$(it_sock A)" "$(it_sock B)" -m 1024 -L -c "$COUNT" -z "$LOSSY_SIZES"
it_log "5 %"
fault_both rx_drop=0.05 || exit 1
run veth-loss5 "$(it_sock A)" "$(it_sock B)" -m 1024 -L -c 3 -z "$LOSSY_SIZES"
for d in A B; do
	echo "    $d: fault.rx.dropped $(it_stat "$(it_sock "$d")" fault.rx.dropped) (this rate)," \
		"completer_retry_err $(it_stat "$(it_sock "$d")" completer_retry_err)," \
		"duplicate_request $(it_stat "$(it_sock "$d")" duplicate_request)"
done
fault_both || exit 1
it_stop_daemon A
it_stop_daemon B
ip netns del "$IT_NS_A"
ip netns del "$IT_NS_B"

it_log "af_packet over veth, MTU 9000 (path MTU 4096)"
it_veth_pair 9000 || exit 1
it_daemon A "$IT_NS_A" "$(it_af_packet_vdev "$IT_IF_A" 9000)" 10.77.0.1 9000 || exit 1
it_daemon B "$IT_NS_B" "$(it_af_packet_vdev "$IT_IF_B" 9000)" 10.77.0.2 9000 || exit 1
run veth-mtu4096 "$(it_sock A)" "$(it_sock B)" -m 4096 -L -c "$COUNT" -z "$SIZES"
it_stop_daemon A
it_stop_daemon B

it_log "memif, MTU 9000 (path MTU 4096 and 1024), zero-copy TX"
it_memif_pair 9000 10.78.0.1 10.78.0.2 "${ZC[@]}" || exit 1
run memif-mtu4096 "$(it_sock MA)" "$(it_sock MB)" -m 4096 -L -c "$COUNT" -z "$SIZES"
run memif-mtu1024 "$(it_sock MA)" "$(it_sock MB)" -m 1024 -L -c "$COUNT" -z "$SIZES"
expect_in_place MA MB
"$UROCE_CLI" -S "$(it_sock MA)" fault rx_drop=0.01 >/dev/null &&
	"$UROCE_CLI" -S "$(it_sock MB)" fault rx_drop=0.01 >/dev/null || exit 1
run memif-loss1 "$(it_sock MA)" "$(it_sock MB)" -m 4096 -L -c "$COUNT" -z "$LOSSY_SIZES"

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "two_hosts: $IT_FAILS run(s) failed"
	exit 1
fi
it_log "two_hosts: all runs passed"
exit 0
