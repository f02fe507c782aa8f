#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The README demo: two hosts in two network namespaces joined by a veth pair, a uroced
# on each (DPDK net_af_packet on its veth end), and applications on the client library
# talking RoCEv2 between them: an ibv_rc_pingpong-compatible ping-pong, an 8 B SEND
# latency run and a 64 KiB RDMA WRITE bandwidth run, with the figures they print, and
# the daemons' counters after. Needs root; everything it creates is removed on exit.
#   devtools/demo_two_hosts.sh [BUILD_DIR]     (default: build)
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
export UROCED=$build/app/uroced/uroced UROCE_XFER=$build/app/uroce-xfer/uroce-xfer
export UROCE_CLI=$build/app/uroce/uroce
# Busy-poll with a yield when idle (the daemon default): lowest latency on two cores.
export IT_IDLE_SLEEP_US=${IT_IDLE_SLEEP_US:-0}
. "$top/test/integration/lib.sh"

it_init demo
it_veth_pair 1500 || exit 1
it_daemon A "$IT_NS_A" "$(it_af_packet_vdev "$IT_IF_A")" 10.77.0.1 1500 || exit 1
it_daemon B "$IT_NS_B" "$(it_af_packet_vdev "$IT_IF_B")" 10.77.0.2 1500 || exit 1

# run LABEL ARGS...: server on host A, client on host B (the TCP exchange of addresses
# goes over 127.0.0.1; the RDMA traffic over the veth, as RoCEv2).
run() {
	local label=$1
	shift
	printf '\n==> %s: uroce-xfer %s\n' "$label" "$*"
	timeout -k 5 120 "$UROCE_XFER" -S "$(it_sock A)" "$@" -p 18515 >"$IT_DIR/server.out" 2>&1 &
	local spid=$!
	sleep 0.3
	timeout -k 5 120 "$UROCE_XFER" -S "$(it_sock B)" "$@" -p 18515 127.0.0.1 || return 1
	wait "$spid" || return 1
}

fail=0
run "RC ping-pong, 4 KiB messages (ibv_rc_pingpong's exchange and output)" \
	rc_pingpong -n 1000 || fail=1
run "RC SEND latency, 8 B" lat -n 5000 || fail=1
run "RDMA WRITE bandwidth, 64 KiB messages, path MTU 1024" bw -n 2000 -m 1024 || fail=1

printf '\n==> counters of host B (uroce stat), non-zero:\n'
"$UROCE_CLI" -S "$(it_sock B)" stat | awk '$2 != 0' | grep -v '^qp\.' | head -40
exit $fail
