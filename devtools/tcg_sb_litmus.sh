#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Does a TCG guest's full barrier hold against QEMU's I/O thread? Boots the rxe tests' VM
# image with an ivshmem region, once per -smp setting, and runs tcg_sb_litmus.c's
# store-buffering test between the guest and a host thread (the pattern of a virtio ring
# index against its event index). With "-smp 1" TCG drops the guest's barrier and the
# count is not zero (about 90 per million here, QEMU 7.2); with "-smp 1,maxcpus=2", what
# the rxe tests use (IT_RXE_VM_OPTS in test/integration/lib.sh), it must be zero.
#   devtools/tcg_sb_litmus.sh [ITERATIONS]     (root; default 1000000)
# Env: RXE_VM_DIR (the VM scripts), RXE_IMAGE (default /tmp/rxe-vm/image).
# Exit: 0 as expected, 1 reordering with maxcpus=2 or a setup error.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
iterations=${1:-1000000}
RXE_VM_DIR=${RXE_VM_DIR:-$top/../shared/tools/rxe-vm}
image=${RXE_IMAGE:-/tmp/rxe-vm/image}
[ -f "$image/rxe-initrd.cpio" ] || { echo "no VM image in $image" >&2; exit 1; }
work=$(mktemp -d /tmp/tcg-litmus.XXXXXX)
trap 'for p in "$work"/run/*/qemu.pid; do [ -f "$p" ] && kill "$(cat "$p")"; done 2>/dev/null
	rm -rf "$work" /dev/shm/tcg-litmus-$$' EXIT
cc -O2 -static -Wall -Wextra -Werror -o "$work/tcg_sb_litmus" "$top/devtools/tcg_sb_litmus.c" ||
	exit 1

# litmus SMP: the count of reordered iterations with -smp SMP.
litmus() {
	local name=tcgsb$$ shm=/dev/shm/tcg-litmus-$$ run out
	run=$work/run/$name
	mkdir -p "$run"
	truncate -s 8M "$shm"
	qemu-system-x86_64 -name "$name" -accel tcg -m 512 -smp "$1" -no-reboot -nodefaults \
		-no-user-config -vga none -kernel "$image/vmlinux" -initrd "$image/rxe-initrd.cpio" \
		-append "console=ttyS0 panic=-1 quiet rxevm.name=$name rxevm.ipv6=0 rxevm.rxe=0" \
		-nic none -object "memory-backend-file,id=shm0,mem-path=$shm,size=8M,share=on" \
		-device ivshmem-plain,memdev=shm0 -device virtio-serial-pci \
		-chardev "socket,id=agent,path=$run/agent.sock,server=on,wait=off" \
		-device virtserialport,chardev=agent,name=rxe.agent -display none \
		-serial "file:$run/console.log" -pidfile "$run/qemu.pid" -daemonize || return 1
	local agent=(env RXE_WORK="$work" "$RXE_VM_DIR/rxevm.py" "$name")
	"${agent[@]}" ping --wait 180 >/dev/null &&
		"${agent[@]}" put "$work/tcg_sb_litmus" /tmp/tcg_sb_litmus >/dev/null &&
		"${agent[@]}" exec -- chmod +x /tmp/tcg_sb_litmus || return 1
	"$work/tcg_sb_litmus" host "$shm" "$iterations" >"$work/host.out" &
	local host=$!
	"${agent[@]}" exec -t 1800 -- "/tmp/tcg_sb_litmus guest $iterations" >/dev/null
	wait "$host"
	out=$(sed -n 's/.*a store passed a load): \([0-9]*\)$/\1/p' "$work/host.out")
	kill "$(cat "$run/qemu.pid")" 2>/dev/null
	rm -rf "$run" "$shm"
	[ -n "$out" ] && echo "$out"
}

rc=0
for smp in 1 1,maxcpus=2; do
	n=$(litmus "$smp") || { echo "-smp $smp: the test did not run" >&2; exit 1; }
	echo "-smp $smp: $n of $iterations iterations saw a guest store pass its load"
	[ "$smp" = 1,maxcpus=2 ] && [ "$n" -ne 0 ] && rc=1
done
exit $rc
