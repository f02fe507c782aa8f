#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# What one ibv_reg_mr of 1 GiB costs (doc/benchmarks.md, "Memory registration"): one uroced
# (net_null port), and uroce-bench-reg-mr registering 1 GiB of new anonymous memory that is
# fresh (never touched: Ceph's buffers), sparse (one page in 32 written) or touched (every
# page written). A process per registration; REPS of each (5; 1 with --quick), the cases
# interleaved; the table gives the medians of wall time and of the process's CPU time
# (user + sys) around the call, and the range of the wall times.
#
# REG_MR_LIBS: directories of libibverbs.so.1 to compare, run alternately in each round
# (default: the build's lib/verbs). To compare with another commit, build it in a second
# directory and name both:
#   REG_MR_LIBS="OLD/lib/verbs build/lib/verbs" bash test/bench/reg_mr.sh
#
# usage: reg_mr.sh [--quick] [--reps N] [--build DIR]
#   binaries: DIR/app/uroced/uroced, DIR/test/bench/uroce-bench-reg-mr (UROCED,
#   UROCE_BENCH_REG_MR override); REG_MR_MIB: the size in MiB (1024; 256 with --quick).
# Needs root (uroced): prints "skipped" and exits 77 otherwise.
set -u

BENCH=reg_mr
. "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
bench_args "$@"
: "${UROCED:=$BUILD/app/uroced/uroced}"
: "${UROCE_BENCH_REG_MR:=$BUILD/test/bench/uroce-bench-reg-mr}"
: "${REG_MR_LIBS:=$BUILD/lib/verbs}"
if [ $QUICK -eq 1 ]; then
	: "${REPS:=1}" "${REG_MR_MIB:=256}"
else
	: "${REPS:=5}" "${REG_MR_MIB:=1024}"
fi

bench_need uroced "$UROCED" "$UROCE_BENCH_REG_MR"
LIBS=()
for d in $REG_MR_LIBS; do
	[ -e "$d/libibverbs.so.1" ] || { echo "reg_mr: no $d/libibverbs.so.1"; exit 1; }
	LIBS+=("$(realpath "$d")") # as the loader names it (the check below)
done

ID=$$
PREFIX=rm-$ID-d
TMP=$(mktemp -d "/tmp/reg-mr.XXXXXX")
SOCK=$TMP/rm.sock
FAILS=0
DPID=
cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	stop "$DPID"
	rm -f /dev/hugepages/"$PREFIX"* 2>/dev/null
	rm -rf /var/run/dpdk/"$PREFIX"* 2>/dev/null
	[ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && tail -n 10 "$TMP"/*.log 2>/dev/null
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

"$UROCED" --no-pci --no-huge --no-telemetry --log-level=lib.eal:error -m 256 \
	--file-prefix "$PREFIX" -l 0 --vdev=net_null0,no-rx=1 -- \
	--set host.ipv4=10.204.0.1 --set control.socket="$SOCK" --set log.level=warning \
	>"$TMP/uroced.log" 2>&1 &
DPID=$!
bench_wait_ready "$TMP/uroced.log" "$DPID" 60

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
log "reg_mr: $REPS run(s) of each case and library, $REG_MR_MIB MiB; load average $LOAD_START; $(nproc) CPUs"
CASES="fresh sparse touched"
for rep in $(seq 1 "$REPS"); do
	for c in $CASES; do
		n=0
		for d in "${LIBS[@]}"; do
			n=$((n + 1))
			out=$TMP/$c-$n-$rep.log
			# The library named, never the one the binary was linked with.
			LD_LIBRARY_PATH=$d timeout -k 2 120 "$UROCE_BENCH_REG_MR" -S "$SOCK" \
				-s "$REG_MR_MIB" "$c" >"$out" 2>&1
			rc=$?
			line=$(grep -m1 '^reg_mr-result:' "$out")
			if [ $rc -ne 0 ] || [ -z "$line" ] || [[ $line != *"lib=$d/"* ]]; then
				fail "$c with $d run $rep: exit $rc: $(tail -n 2 "$out" | tr '\n' ' ')"
				continue
			fi
			log "  $c lib $n run $rep: ${line#reg_mr-result: }"
			for k in wall_ms cpu_ms user_ms sys_ms; do
				record "$c.$n.$k" "$(sed -n "s/.* $k=\([0-9.]*\) .*/\1/p" <<<"$line")"
			done
		done
	done
done

echo
echo "reg_mr: ibv_reg_mr of $REG_MR_MIB MiB of new anonymous memory, median of $REPS run(s), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load average at start $LOAD_START, at end $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
n=0
for d in "${LIBS[@]}"; do
	n=$((n + 1))
	echo "lib $n: $d"
done
printf '%-8s %4s %10s %10s %10s %10s %8s\n' case lib wall_ms cpu_ms user_ms sys_ms "spread"
for c in $CASES; do
	n=0
	for d in "${LIBS[@]}"; do
		n=$((n + 1))
		printf '%-8s %4s %10s %10s %10s %10s %8s\n' "$c" "$n" "$(median "$c.$n.wall_ms")" \
			"$(median "$c.$n.cpu_ms")" "$(median "$c.$n.user_ms")" \
			"$(median "$c.$n.sys_ms")" "$(spread "$c.$n.wall_ms")"
	done
done
[ $FAILS -eq 0 ]
