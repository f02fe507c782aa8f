#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The full B1-B5 run of doc/benchmarks.md in one command, on an otherwise quiet machine:
# each benchmark in full (not --quick), one after another, so that none disturbs another.
#   devtools/bench_all.sh [BUILD_DIR] [OUT_DIR] [NAME...]   (root; ~25 min on 2 vCPUs)
# BUILD_DIR: a release build (default ./build). Every benchmark's output goes to
# OUT_DIR/<name>.txt (default ./bench-<date>), and its last table to stdout as it ends.
#   name        what                            B
#   idle        test/bench/idle.sh              B1 idle CPU, first message after 1 s
#   two_hosts   test/bench/two_hosts.sh         B2, B5 latency and bandwidth, veth and
#                                               memif; the curves (size, QPs)
#   cpu_per_op  test/bench/cpu_per_op.sh        B3 CPU per operation, copy and zero-copy
#   transport   uroce-bench-transport --reps 5  B4 the transport alone, one core
# NAME...: only these (default all); TWO_HOSTS_ONLY=PARTS runs two_hosts.sh --only PARTS
# (e.g. sizes,qps: the curves alone, ~5 min). The plots are drawn from two_hosts' points
# into OUT_DIR as NAME.cdf|curve.tsv and .png: copy both into doc/bench to publish them.
# Exit: 0 when every benchmark ran and every plot was drawn, 1 otherwise, 2 usage,
# 77 not root.
set -uo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
out=${2:-bench-$(date -u +%Y%m%d-%H%M)}
shift $(($# < 2 ? $# : 2))
names=${*:-idle two_hosts cpu_per_op transport}
for n in $names; do
	case $n in
	idle | two_hosts | cpu_per_op | transport) ;;
	*) echo "bench_all: no benchmark $n (idle, two_hosts, cpu_per_op, transport)" >&2; exit 2 ;;
	esac
done
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
wanted() { case " $names " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
echo "bench_all: $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) CPUs, output in $out"
wanted idle && run idle bash test/bench/idle.sh --build "$build"
if wanted two_hosts; then
	# The points of the plots: two_hosts.sh keeps them in PLOT_DIR.
	PLOT_DIR=$out/plots run two_hosts bash test/bench/two_hosts.sh --build "$build" \
		${TWO_HOSTS_ONLY:+--only "$TWO_HOSTS_ONLY"}
fi
plot() { # NAME.cdf|NAME.curve TABLE-ARGUMENTS...: the table, then its PNG
	local name=$1 kind=${1##*.} kv ext
	shift
	ext=$([ "$kind" = cdf ] && echo cdf || echo pts)
	wanted two_hosts || return 0
	# A part TWO_HOSTS_ONLY left out has no points: no plot, and no failure.
	for kv in "${@:$([ "$kind" = cdf ] && echo 1 || echo 4)}"; do
		[ -s "$out/plots/${kv%%=*}.$ext" ] && continue
		[ -n "${TWO_HOSTS_ONLY:-}" ] && return 0
		echo "== $name: not drawn, no $out/plots/${kv%%=*}.$ext"
		failed=1
		return
	done
	python3 devtools/plot_png.py "$kind-table" "$out/plots" "$@" >"$out/$name.tsv" &&
		python3 devtools/plot_png.py draw "$out/$name.tsv" "$out/$name.png" ||
		{ echo "== $name: not drawn"; failed=1; }
}
plot latency.cdf veth.raw="raw DPDK, 64 B" \
	veth.udp="kernel UDP, busy-poll, 8 B" veth.uroce-event="uroce, apps polling, 8 B" \
	veth.udpblk="kernel UDP, blocking, 8 B" veth.uroce-event-e="uroce, apps blocking, 8 B"
plot bw_size.curve "RDMA WRITE size (bytes)" "Gbit/s of payload, memif, MTU 4096" xy \
	size.uroce="uroce-xfer bw, window 32" size.raw="raw DPDK blast of the same frames"
plot qps_bw.curve "QPs (perftest ib_write_bw -q)" "Gbit/s, 64 KiB WRITE, memif" x \
	qps.bw="uroce, ib_write_bw -s 65536"
plot qps_rate.curve "QPs (perftest ib_write_bw -q)" "million messages/s, 64 B WRITE, memif" x \
	qps.rate="uroce, ib_write_bw -s 64"
wanted cpu_per_op && run cpu_per_op bash test/bench/cpu_per_op.sh --build "$build"
wanted transport && run transport "$build/test/bench/uroce-bench-transport" --reps 5
exit $failed
