#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# uvm, the harness of every rxe suite (test/vm/README.md), does what those suites rely on:
#   - net up / boot: rxe0 ACTIVE with its IPv4 GID at roce-gid's index, reachable over the
#     bridge from the namespace;
#   - exec: stdout and stderr apart, the command's status, -t ends the command and what it
#     started (124); spawn / wait (124 while it runs) / kill; put / get byte for byte, with
#     the mode;
#   - ownership: when the owner is SIGKILLed, its guest's QEMU, its run folder and its
#     namespace are gone within 30 s, and the console is kept.
#   test/vm/uvm_test.sh   (root; qemu; test/vm/image.sh run). Exit: 0, 1, 77 skipped.
set -uo pipefail
unset LD_LIBRARY_PATH
. "$(dirname "$0")/../integration/lib.sh"

it_init vm_uvm
it_rxe_vm_require
it_rxe_vm_names uxu${IT_ID} uxu${IT_ID}

# The owner: a process of its own, killed outright halfway through.
sleep 3600 &
owner=$!
trap 'rc=$?; kill -KILL $owner 2>/dev/null; "$UVM" stop "$VM" >/dev/null 2>&1;
	"$UVM" net down "$NS" >/dev/null 2>&1; (exit $rc); it_cleanup' EXIT

it_check "net up makes the namespace" "$UVM" net up "$NS" --taps 1 --veth --owner $owner
ip -n "$NS" addr add "$BR_IP/24" dev rxebr0
t0=$SECONDS
it_check "boot" "$UVM" boot "$VM" --ns "$NS" --tap rxetap0 --ip "$VM_IP/24" --owner $owner
it_log "booted in $((SECONDS - t0)) s"
qpid=$(cat "$UROCE_VM_WORK/run/$VM/qemu.pid" 2>/dev/null)
it_check "QEMU runs ($qpid)" kill -0 "${qpid:-0}"

state=$(vmx exec -- cat /sys/class/infiniband/rxe0/ports/1/state)
it_check "rxe0 is ACTIVE ($state)" test "$state" = "4: ACTIVE"
gid=$(vmx exec -- 'cat /sys/class/infiniband/rxe0/ports/1/gids/$(roce-gid)')
it_check "roce-gid's index is $VM_IP's GID ($gid)" \
	test "$gid" = "0000:0000:0000:0000:0000:ffff:c612:0001"
it_check "the guest answers ping over the bridge" \
	ip netns exec "$NS" ping -c 1 -W 5 "$VM_IP"

out=$(vmx exec -- 'echo out; echo err >&2; exit 3' 2>"$IT_DIR/err")
rc=$?
it_check "exec: stdout" test "$out" = out
it_check "exec: stderr apart" test "$(cat "$IT_DIR/err")" = err
it_check "exec: the status ($rc)" test "$rc" -eq 3
vmx exec -t 2 -- 'sleep 1000 & echo $! >/tmp/child; wait' >/dev/null 2>&1
rc=$?
it_check "exec -t: 124 at the timeout ($rc)" test "$rc" -eq 124
it_check "exec -t: what the command started is ended too" \
	vmx exec -- '! kill -0 $(cat /tmp/child) 2>/dev/null'

vmx spawn job -- 'sleep 2; echo done; exit 5' >/dev/null
vmx wait job -t 0.2 >/dev/null 2>&1
rc=$?
it_check "wait: 124 while the job runs ($rc)" test "$rc" -eq 124
out=$(vmx wait job -t 30)
rc=$?
it_check "wait: the job's output and status ($out, $rc)" test "$out/$rc" = done/5
vmx spawn long -- 'sleep 1000' >/dev/null
vmx kill long >/dev/null
vmx wait long -t 10 >/dev/null 2>&1
rc=$?
it_check "kill: the job ends by SIGTERM ($rc)" test "$rc" -eq 143

head -c 300000 /dev/urandom >"$IT_DIR/blob"
chmod 0750 "$IT_DIR/blob"
vmx put "$IT_DIR/blob" /tmp/sub/blob >/dev/null
mode=$(vmx exec -- stat -c %a /tmp/sub/blob)
it_check "put keeps the mode ($mode)" test "$mode" = 750
vmx get /tmp/sub/blob "$IT_DIR/back" >/dev/null
it_check "put then get: the same bytes" cmp -s "$IT_DIR/blob" "$IT_DIR/back"
vmx get /nonexistent "$IT_DIR/none" >/dev/null 2>&1
it_check "get of a missing file fails" test $? -ne 0

# Ownership: the owner dies by SIGKILL, which no trap sees.
kill -KILL $owner
wait $owner 2>/dev/null
for _ in $(seq 300); do
	! kill -0 "$qpid" 2>/dev/null && ! ip netns list | grep -qw "$NS" &&
		[ ! -e "$UROCE_VM_WORK/run/$VM" ] && break
	sleep 0.1
done
it_check "the owner's death ends QEMU" bash -c "! kill -0 $qpid 2>/dev/null"
it_check "the owner's death removes the namespace" bash -c "! ip netns list | grep -qw $NS"
it_check "the owner's death removes the run folder" test ! -e "$UROCE_VM_WORK/run/$VM"
it_check "the console is kept" grep -q 'uvm-init.*ready' "$UROCE_VM_WORK/console/$VM.log"

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "vm_uvm: $IT_FAILS check(s) failed"
	exit 1
fi
it_log "vm_uvm: all checks passed"
