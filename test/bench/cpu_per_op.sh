#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# B3, CPU per operation (doc/benchmarks.md, "CPU per operation"): what each uroced spends
# per RDMA WRITE at saturation, beside what raw DPDK spends per frame on the same link in
# the same run. CPU time, not wall time: the scheduler sharing 2 CPUs between 4 processes
# moves latencies but not the work each operation takes.
#   - two uroced in two network namespaces over a veth pair (net_af_packet), A on CPU 0 and
#     B on CPU 1, their default poll loop (idle, they sleep: their CPU is their work);
#     `uroce-xfer bw` from B's side (the requester) to A's (the responder) for each size in
#     SIZES (8 B, 4 KiB, 64 KiB; path MTU 1024), window 32, long enough to last ~2 s
#     (~0.5 s with --quick); user + system ticks of each daemon from /proc/PID/stat over the
#     run, divided by the WRITEs, and by the data frames (ceil(size / 1024) per WRITE);
#   - raw DPDK: uroce-rawbench's blast of 1082 B frames (the size of a full data frame at
#     path MTU 1024) on the same veth pair, sender on CPU 1 and receiver on CPU 0; each
#     side's ticks over the run divided by the frames it sent or received. rawbench polls
#     without pause, so its figure is the CPU its frame rate costs a poll-mode core.
#   - the WRITEs of 1 KiB and more twice: in the default configuration, where their
#     payloads are copied into the port's mbufs, and with zero-copy TX
#     (transport.zero_copy_min=1024: the mbufs point into the MR), so that the copy's
#     cost is measured in the same run.
# x raw: the daemon's CPU per data frame over raw DPDK's per frame, requester against the
# sender and responder against the receiver. Repeated (3 times, 1 with --quick); medians.
#
# usage: cpu_per_op.sh [--quick] [--reps N] [--build DIR]
#   binaries: DIR/app/uroced/uroced, app/uroce-xfer/uroce-xfer,
#   app/uroce-rawbench/uroce-rawbench (default DIR: ./build)
# Needs root (namespaces, veth, af_packet); exits 77 otherwise.
set -u

BENCH=cpu_per_op
. "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_args "$@"
: "${UROCED:=$BUILD/app/uroced/uroced}"
: "${UROCE_XFER:=$BUILD/app/uroce-xfer/uroce-xfer}"
: "${UROCE_RAWBENCH:=$BUILD/app/uroce-rawbench/uroce-rawbench}"
: "${UROCE_CLI:=$BUILD/app/uroce/uroce}"
SIZES=${SIZES:-8 4096 65536}
PATH_MTU=1024
RAW_FRAME=1082 # Ethernet .. ICRC of a data frame with 1024 B of payload
if [ $QUICK -eq 1 ]; then
	: "${REPS:=1}"
	SECS=0.5
else
	: "${REPS:=3}"
	SECS=2
fi

bench_init uc
[ -x "$UROCE_RAWBENCH" ] || { echo "$BENCH: skipped: $UROCE_RAWBENCH not built"; exit 77; }
bench_veth

# ns_per TICKS COUNT -> ns of CPU per unit, TICKS of CPU over COUNT units
ns_per() { awk -v t="$1" -v k=$TICK_NS -v n="$2" 'BEGIN { printf "%.1f", t * k / n }'; }

# per SIZE -> WRITEs for about SECS at the rate of a first short run (msg/s it printed)
iters_for() {
	local rate
	# Its log lines (a FAIL among them) to stderr: stdout is the figure the caller reads.
	bench_xfer "probe-$1" bw -s "$1" -n 2000 -m $PATH_MTU -w 32 >&2
	rate=$(sed -n 's/.* \([0-9.]*\) msg\/s.*/\1/p' "$TMP/xfer-probe-$1.log" | head -1)
	awk -v r="${rate:-1000}" -v s=$SECS 'BEGIN { n = int(r * s); print n < 2000 ? 2000 : n }'
}

# bw_cpu SIZE ITERS REP [KEY]: one run; records ns per WRITE and per data frame, each side
# (under KEY, default w<SIZE>).
bw_cpu() {
	local size=$1 iters=$2 frames a0 b0 a1 b1 key=${4:-w$1}
	frames=$(((size + PATH_MTU - 1) / PATH_MTU))
	[ "$frames" -ge 1 ] || frames=1
	a0=$(ticks_of "$PID_A") b0=$(ticks_of "$PID_B")
	bench_xfer "bw-$size-$3" bw -s "$size" -n "$iters" -m $PATH_MTU -w 32
	a1=$(ticks_of "$PID_A") b1=$(ticks_of "$PID_B")
	log "  $size B: $(grep -m1 '^bw:' "$TMP/xfer-bw-$size-$3.log");" \
		"requester B $((b1 - b0)) ticks, responder A $((a1 - a0)) ticks"
	record "$key.req.op" "$(ns_per $((b1 - b0)) "$iters")"
	record "$key.resp.op" "$(ns_per $((a1 - a0)) "$iters")"
	record "$key.req.frame" "$(ns_per $((b1 - b0)) $((iters * frames)))"
	record "$key.resp.frame" "$(ns_per $((a1 - a0)) $((iters * frames)))"
}

# raw_cpu REP: rawbench blast; records ns per frame sent and per frame received.
raw_cpu() {
	local out=$TMP/raw-$1 spid cpid s0 s1 c0 c1 sent got
	rm -f "$out".*
	ip netns exec "$NS_A" "$UROCE_RAWBENCH" --no-pci --no-huge --no-telemetry -m 256 -l 0 \
		--log-level=lib.eal:error --file-prefix "$PREFIX-$ID-rs" \
		--vdev="net_af_packet0,iface=$IF_A" -- --role server --timeout 30 \
		--mode blast --size $RAW_FRAME --duration $SECS >"$out.server.log" 2>&1 &
	spid=$!
	PIDS+=($spid)
	for _ in $(seq 1 200); do
		grep -q "^server: port" "$out.server.log" && break
		sleep 0.05
	done
	ip netns exec "$NS_B" "$UROCE_RAWBENCH" --no-pci --no-huge --no-telemetry -m 256 -l 1 \
		--log-level=lib.eal:error --file-prefix "$PREFIX-$ID-rc" \
		--vdev="net_af_packet0,iface=$IF_B" -- --role client --mode blast \
		--size $RAW_FRAME --duration $SECS >"$out.client.log" 2>&1 &
	cpid=$!
	PIDS+=($cpid)
	# Ticks over the blast only: from the client's start line to the end of its run.
	for _ in $(seq 1 200); do
		grep -q "^client: port" "$out.client.log" && break
		sleep 0.01
	done
	s0=$(ticks_of $spid) c0=$(ticks_of $cpid)
	for _ in $(seq 1 2000); do
		grep -q "^blast-tx" "$out.client.log" && break
		kill -0 $cpid 2>/dev/null || break
		sleep 0.005
	done
	s1=$(ticks_of $spid) c1=$(ticks_of $cpid)
	wait $cpid || fail "rawbench client failed"
	wait $spid
	PIDS=()
	sent=$(sed -n 's/.*server_frames=[0-9]* of \([0-9]*\).*/\1/p' "$out.client.log")
	got=$(sed -n 's/.*server_frames=\([0-9]*\) of.*/\1/p' "$out.client.log")
	log "  raw DPDK blast: $(grep -m1 '^blast-result' "$out.client.log");" \
		"sender $((c1 - c0)) ticks, receiver $((s1 - s0)) ticks"
	[ -n "$sent" ] && [ -n "$got" ] || { fail "rawbench: no result"; return; }
	# The ticks cover the handshake and the blast: the frames, the blast.
	record raw.send "$(ns_per $((c1 - c0)) "$sent")"
	record raw.recv "$(ns_per $((s1 - s0)) "$got")"
}

log "$BENCH: $REPS repetition(s)$([ $QUICK -eq 1 ] && echo ', quick'); load average" \
	"$(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
bench_daemons || exit 1
declare -A ITERS
for size in $SIZES; do
	ITERS[$size]=$(iters_for "$size")
done
bench_stop_daemons
for rep in $(seq 1 "$REPS"); do
	raw_cpu "$rep"
	bench_daemons || exit 1
	for size in $SIZES; do
		bw_cpu "$size" "${ITERS[$size]}" "$rep"
	done
	bench_stop_daemons
	bench_daemons --set transport.zero_copy_min=1024 || exit 1
	for size in $SIZES; do
		[ "$size" -ge 1024 ] && bw_cpu "$size" "${ITERS[$size]}" "$rep-zc" "z$size"
	done
	log "  requester B, zero-copy: $("$UROCE_CLI" -S "$TMP/B.sock" stat 2>/dev/null |
		awk '$1 == "daemon.tx_zero_copy" || $1 == "daemon.tx_in_place" { printf "%s %s ", $1, $2 }')"
	bench_stop_daemons
done

echo
echo "B3 CPU per operation: medians of $REPS repetition(s), $(date -u '+%Y-%m-%d %H:%M') UTC;" \
	"load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
echo "ns of daemon CPU (user + system) per RDMA WRITE and per data frame (path MTU $PATH_MTU);"
echo "raw DPDK: ns of CPU per $RAW_FRAME B frame sent / received by uroce-rawbench's blast"
echo "x raw: per data frame over raw DPDK's per frame (requester/sender, responder/receiver)"
printf '%-22s %10s %8s %10s %8s %8s\n' what "ns/op" spread "ns/frame" spread "x raw"
printf '%-22s %10s %8s %10s %8s %8s\n' "raw DPDK sender" - - "$(median raw.send)" \
	"$(spread raw.send)" 1.00
printf '%-22s %10s %8s %10s %8s %8s\n' "raw DPDK receiver" - - "$(median raw.recv)" \
	"$(spread raw.recv)" 1.00
for size in $SIZES; do
	for side in req resp; do
		base=raw.send label=requester
		[ $side = resp ] && base=raw.recv label=responder
		printf '%-22s %10s %8s %10s %8s %8s\n' "WRITE $size B $label" \
			"$(median w$size.$side.op)" "$(spread w$size.$side.op)" \
			"$(median w$size.$side.frame)" "$(spread w$size.$side.frame)" \
			"$(ratio "$(median w$size.$side.frame)" "$(median $base)")"
		[ "$size" -ge 1024 ] || continue
		printf '%-22s %10s %8s %10s %8s %8s\n' "  zero-copy $label" \
			"$(median z$size.$side.op)" "$(spread z$size.$side.op)" \
			"$(median z$size.$side.frame)" "$(spread z$size.$side.frame)" \
			"$(ratio "$(median z$size.$side.frame)" "$(median $base)")"
	done
done
log "$BENCH: $FAILS failure(s)"
[ "$FAILS" -eq 0 ]
