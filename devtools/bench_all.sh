#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The full B1-B5 run of doc/benchmarks.md in one command, on an otherwise quiet machine:
# each benchmark in full (not --quick), one after another, so that none disturbs another.
#   devtools/bench_all.sh [BUILD_DIR] [OUT_DIR]     (root; ~20 min on 2 vCPUs)
# BUILD_DIR: a release build (default ./build). Every benchmark's output goes to
# OUT_DIR/<name>.txt (default ./bench-<date>), and its last table to stdout as it ends.
#   B1          test/bench/idle.sh              idle CPU, first message after 1 s
#   B2, B5      test/bench/two_hosts.sh         latency and bandwidth, veth and memif
#   B3          test/bench/cpu_per_op.sh        CPU per operation, copy and zero-copy
#   B4          uroce-bench-transport --reps 5  the transport alone, one core
# Exit: 0 when every benchmark ran without failure, 1 otherwise, 77 not root.
set -uo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
out=${2:-bench-$(date -u +%Y%m%d-%H%M)}
[ "$(id -u)" = 0 ] || { echo "bench_all: needs root" >&2; exit 77; }
[ -x "$build/test/bench/uroce-bench-transport" ] || {
	echo "bench_all: $build is not built (ninja -C $build)" >&2
	exit 1
}
mkdir -p "$out"
failed=0
run() { # NAME COMMAND...: runs it, keeps its output, prints from its last table on
	local name=$1 rc
	shift
	echo "== $name: $* ($(date -u +%H:%M:%S) UTC, load average $(cut -d' ' -f1-3 /proc/loadavg))"
	"$@" >"$out/$name.txt" 2>&1
	rc=$?
	# The summary each script prints last: from its final blank line on.
	awk 'NF == 0 { buf = ""; next } { buf = buf $0 "\n" } END { printf "%s", buf }' \
		"$out/$name.txt"
	[ "$rc" -eq 0 ] || { echo "== $name: exit $rc (see $out/$name.txt)"; failed=1; }
}
echo "bench_all: $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) CPUs, output in $out"
run idle bash test/bench/idle.sh --build "$build"
# The latency CDFs of B2 (each run's percentiles, kept by two_hosts.sh) as a table and a
# PNG beside the outputs: copy both into doc/bench to publish them.
CDF_DIR=$out/cdf run two_hosts bash test/bench/two_hosts.sh --build "$build"
python3 devtools/plot_cdf.py table "$out/cdf" veth.raw="raw DPDK, 64 B" \
	veth.udp="kernel UDP, busy-poll, 8 B" veth.uroce-event="uroce, apps polling, 8 B" \
	veth.udpblk="kernel UDP, blocking, 8 B" veth.uroce-event-e="uroce, apps blocking, 8 B" \
	>"$out/latency.cdf.tsv" &&
	python3 devtools/plot_cdf.py draw "$out/latency.cdf.tsv" "$out/latency.cdf.png" ||
	{ echo "== latency CDF: not drawn"; failed=1; }
run cpu_per_op bash test/bench/cpu_per_op.sh --build "$build"
run transport "$build/test/bench/uroce-bench-transport" --reps 5
exit $failed
