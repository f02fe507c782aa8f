#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One tenant's UD flood beside another tenant's RC ping-pong, on the same two daemons
# (two network namespaces joined by a veth, af_packet). A UD sender has no window: before
# QPs took turns (transport.tx_burst), a flood queued ahead of a ping-pong's message held
# it back by the flood's whole queue. Unmodified perftest over the drop-in library:
#   - ib_send_lat (RC, 64 B, 1000 iterations) alone;
#   - the same beside two CPU-bound loops, as many as the flood's two perftest processes
#     that poll their CQs: the baseline of what contention for the CPUs alone costs now;
#   - ib_send_bw -c UD (1 KiB, a tx depth of 512, for 60 s) from B to A, and, once it
#     runs, the same ib_send_lat beside it (10 to 40 s there, on a loaded machine).
# Passes when the ping-pong under the flood completes without error (a retry-exceeded or
# any other error completion fails it) with its 99th percentile under 50 ms, far below
# the RC timeout the tools use (67 ms x 7 retries), or under 10 times the baseline's.
# The second bound is why the baseline is measured: on 2 shared cores whatever else runs
# (a CI run beside, a busy loop) decides how long a process waits for a CPU, and a full
# CI run with six runnable processes beside it once put this p99 at 202 ms; the flood's
# own share is what it adds beyond that. The figures of all runs and the flood's rate
# are printed.
#   tenant_flood.sh            (root; binaries from $UROCED, lib from $UROCE_VERBS_LIBDIR)
# Exit: 0 passed, 1 failed, 77 not root, no perftest, not built.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
: "${UROCE_VERBS_LIBDIR:=$IT_ROOT/build/lib/verbs}"
it_init tenant_flood

it_need_tools perftest ib_send_lat ib_send_bw
it_need_built "$UROCE_VERBS_LIBDIR/libibverbs.so.1"

it_veth_pair 1500 || exit 1
it_daemon A "$IT_NS_A" "$(it_af_packet_vdev "$IT_IF_A"),framecnt=4096" 10.79.0.1 1500 || exit 1
it_daemon B "$IT_NS_B" "$(it_af_packet_vdev "$IT_IF_B"),framecnt=4096" 10.79.0.2 1500 || exit 1
PORT=$((21000 + (IT_ID % 2000) * 8))
on() { # on A|B CMD...: a tool of that side
	local sock
	sock=$(it_sock "$1")
	shift
	LD_LIBRARY_PATH=$UROCE_VERBS_LIBDIR UROCE_SOCKET=$sock "$@"
}
LAT=(ib_send_lat -d uroce0 -x 1 -F -n 1000 -s 64)
FLOOD=(ib_send_bw -d uroce0 -x 1 -F -c UD -s 1024 -t 512 -D 60)

# lat LOG: the ping-pong, server on A, client on B; the client's output in LOG.
lat() {
	local log=$1 spid rc rs
	PORT=$((PORT + 1))
	on A timeout -k 5 120 "${LAT[@]}" -p "$PORT" >"$log.server" 2>&1 &
	spid=$!
	it_wait_listen "$PORT" "$spid" 60
	on B timeout -k 5 120 "${LAT[@]}" -p "$PORT" 127.0.0.1 >"$log" 2>&1
	rc=$?
	wait "$spid"
	rs=$?
	[ "$rc" -eq 0 ] && [ "$rs" -eq 0 ]
}
# p99 LOG: the 99th percentile of a result line (usec), printed as perftest wrote it.
p99() { awk '$1 == 64 && NF >= 9 { print $8 }' "$1" | tail -n 1; }

lat "$IT_DIR/alone.out"
it_check "the ping-pong alone" test $? -eq 0
sed -n '/#bytes/,$p' "$IT_DIR/alone.out" | sed 's/^/    /' | head -n 4
alone=$(p99 "$IT_DIR/alone.out")

spin() { while :; do :; done; }
spin &
spin1=$!
spin &
spin2=$!
lat "$IT_DIR/contended.out"
crc=$?
kill "$spin1" "$spin2"
wait "$spin1" "$spin2" 2>/dev/null
it_check "the ping-pong beside two CPU-bound loops" test "$crc" -eq 0
sed -n '/#bytes/,$p' "$IT_DIR/contended.out" | sed 's/^/    /' | head -n 4
contended=$(p99 "$IT_DIR/contended.out")

PORT=$((PORT + 1))
FPORT=$PORT
on A timeout -k 5 120 "${FLOOD[@]}" -p "$FPORT" >"$IT_DIR/flood.server" 2>&1 &
fs=$!
it_wait_listen "$FPORT" "$fs" 60
on B timeout -k 5 120 "${FLOOD[@]}" -p "$FPORT" 127.0.0.1 >"$IT_DIR/flood.out" 2>&1 &
fc=$!
sleep 4 # the flood running: its QPs connected, its queue full
lat "$IT_DIR/flooded.out"
it_check "the ping-pong beside the flood completes without error" test $? -eq 0
sed -n '/#bytes/,$p' "$IT_DIR/flooded.out" | sed 's/^/    /' | head -n 4
flooded=$(p99 "$IT_DIR/flooded.out")
it_check "the flood was still running meanwhile" kill -0 "$fc" 2>/dev/null
wait "$fc"
frc=$?
wait "$fs"
it_check "the flood itself ended well" test "$frc" -eq 0
sed -n '/#bytes/,$p' "$IT_DIR/flood.out" | sed 's/^/    flood: /' | head -n 3
it_log "p99 of the 64 B RC ping-pong: ${alone:-?} us alone," \
	"${contended:-?} us beside two CPU-bound loops, ${flooded:-?} us beside the flood"
it_check "p99 beside the flood under 50 ms or 10 x beside the loops (${flooded:-?} us)" \
	awk -v p="${flooded:-}" -v c="${contended:-}" \
	'BEGIN { exit !(p != "" && c != "" && (p + 0 < 50000 || p + 0 < 10 * c)) }'
grep -E 'RETRY|error|Error' "$IT_DIR/flooded.out" | head -n 3 | sed 's/^/    /'

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "$IT_FAILS check(s) failed"
	exit 1
fi
it_log "tenant_flood: all checks passed"
exit 0
