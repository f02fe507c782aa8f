#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Does a TCG guest's full barrier hold against QEMU's I/O thread? Boots the test guest
# (test/vm) with an ivshmem region, once per -smp setting, and runs tcg_sb_litmus.c's
# store-buffering test between the guest and a host thread (the pattern of a virtio ring
# index against its event index). With "-smp 1" TCG drops the guest's barrier and the
# count is not zero (about 90 per million here, QEMU 7.2); with "-smp 1,maxcpus=2", what
# test/vm/uvm boots by default, it must be zero.
#   devtools/tcg_sb_litmus.sh [ITERATIONS]     (root; default 1000000; test/vm/image.sh run)
# Exit: 0 as expected, 1 reordering with maxcpus=2 or a setup error.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
iterations=${1:-1000000}
uvm=$top/test/vm/uvm
work=$(mktemp -d /tmp/tcg-litmus.XXXXXX)
trap '"$uvm" stop "tcgsb$$" 2>/dev/null; rm -rf "$work" /dev/shm/tcg-litmus-$$' EXIT
cc -O2 -static -Wall -Wextra -Werror -o "$work/tcg_sb_litmus" "$top/devtools/tcg_sb_litmus.c" ||
	exit 1

# litmus SMP: the count of reordered iterations with -smp SMP.
litmus() {
	local name=tcgsb$$ shm=/dev/shm/tcg-litmus-$$ out

	truncate -s 8M "$shm"
	"$uvm" boot "$name" --no-rxe --ipv6 0 --mem 512 --smp "$1" --owner $$ \
		--qemu=-object --qemu="memory-backend-file,id=shm0,mem-path=$shm,size=8M,share=on" \
		--qemu=-device --qemu=ivshmem-plain,memdev=shm0 >&2 &&
		"$uvm" put "$name" "$work/tcg_sb_litmus" /tmp/tcg_sb_litmus >/dev/null || return 1
	"$work/tcg_sb_litmus" host "$shm" "$iterations" >"$work/host.out" &
	local host=$!
	"$uvm" exec "$name" -t 1800 -- "/tmp/tcg_sb_litmus guest $iterations" >/dev/null
	wait "$host"
	out=$(sed -n 's/.*a store passed a load): \([0-9]*\)$/\1/p' "$work/host.out")
	"$uvm" stop "$name"
	rm -f "$shm"
	[ -n "$out" ] && echo "$out"
}

rc=0
for smp in 1 1,maxcpus=2; do
	n=$(litmus "$smp") || { echo "-smp $smp: the test did not run" >&2; exit 1; }
	echo "-smp $smp: $n of $iterations iterations saw a guest store pass its load"
	[ "$smp" = 1,maxcpus=2 ] && [ "$n" -ne 0 ] && rc=1
done
exit $rc
