#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# uroce against Linux soft-RoCE: a uroced on one end of a bridge, an rxe VM
# (QEMU, rdma-core 44, Debian kernel 6.1 rdma_rxe; the guest of test/vm) on the other, and the VM's
# unmodified tools as peers of uroce-xfer, in both roles:
#   ibv_rc_pingpong, ibv_ud_pingpong   <-> uroce-xfer rc_pingpong, ud_pingpong
#   verbs-op --op write_imm|send_imm|write|send|read|fadd|cswap
#     (ours, test/vm/guest; pyverbs)   <-> uroce-xfer verbs_op (data, immediates, atomics
#                                          checked on both sides)
# Address resolution is real both ways: the VM ARPs for us (uroced answers) and uroced
# ARPs for the VM; no static neighbour anywhere.
#
# Topology (all inside a private netns): uroced -- af_packet on rxeveth0 == rxeveth0-br --
# bridge rxebr0 (198.18.0.254, for the TCP exchanges) -- rxetap0 == VM eth0/rxe0
# (198.18.0.1). uroced is 198.18.0.100.
#
#   rxe_interop.sh          (root; qemu-system-x86_64; the guest image built once with
#                            test/vm/image.sh, or UROCE_VM_BUILD=1)
# The VM runs under TCG here (no KVM): boot takes 10-60 s, each exchange a few seconds.
# Exit: 0 passed, 1 failed, 77 skipped (not root, no qemu, no image).
set -u
. "$(dirname "$0")/lib.sh"

it_init rxe_interop
it_rxe_vm_require

# Own namespace and VM names, so a run never meets another's.
it_rxe_vm_names uxr${IT_ID} uxi${IT_ID}
: "${PP_ITERS:=50}"

it_rxe_vm_up || exit 1
vmx exec -- 'ibv_devinfo -d rxe0 | grep -E "state|active_mtu"; roce-gid' | sed 's/^/    vm: /'

it_daemon R "$NS" "--vdev=net_af_packet0,iface=rxeveth0" "$OUR_IP" 1500 || exit 1
S=$(it_sock R)
X=("$UROCE_XFER" -S "$S")

pass() { it_log "PASS $*"; }
fail() {
	it_log "FAIL $*"
	IT_FAILS=$((IT_FAILS + 1))
}

# Both sides must exit 0, and the rxe side's output must hold none of these either.
BAD_OUTPUT="error|fail|couldn't|traceback|only [0-9]+ of"

# vm_server LABEL PORT "VM COMMAND" OUR ARGS...: the VM listens, we connect.
vm_server() {
	local label=$1 port=$2 vcmd=$3 out rc vout vrc
	shift 3
	vmx spawn srv -- "$vcmd" >/dev/null
	out=$(ip netns exec "$NS" timeout -k 5 120 "${X[@]}" "$@" -p "$port" -t 60 "$VM_IP" 2>&1)
	rc=$?
	vout=$(vmx wait srv -t 60 2>&1)
	vrc=$?
	if [ $rc -eq 0 ] && [ $vrc -eq 0 ] && ! echo "$vout" | grep -qiE "$BAD_OUTPUT"; then
		pass "$label: us: $(echo "$out" | tail -n 1) | rxe: $(echo "$vout" | tail -n 1)"
	else
		[ $vrc -eq 124 ] && vmx kill srv >/dev/null 2>&1
		fail "$label (exit $rc, rxe's $vrc)"
		echo "$out" | tail -n 8 | sed 's/^/    us:  /'
		echo "$vout" | tail -n 8 | sed 's/^/    rxe: /'
	fi
}

# vm_client LABEL PORT "VM COMMAND" OUR ARGS...: we listen (on the bridge address's netns),
# the VM connects to $BR_IP.
vm_client() {
	local label=$1 port=$2 vcmd=$3 rc vout vrc
	local log=$IT_DIR/${label//\//_}.out
	shift 3
	ip netns exec "$NS" timeout -k 5 120 "${X[@]}" "$@" -p "$port" -t 60 >"$log" 2>&1 &
	local spid=$!
	# Until our end listens (a fixed half second raced a slow start on a loaded host).
	it_wait_listen "$port" "$spid" 60 "$NS"
	vout=$(vmx exec -t 90 -- "$vcmd" 2>&1)
	vrc=$?
	wait "$spid"
	rc=$?
	if [ $rc -eq 0 ] && [ $vrc -eq 0 ] && ! echo "$vout" | grep -qiE "$BAD_OUTPUT"; then
		pass "$label: us: $(tail -n 1 "$log") | rxe: $(echo "$vout" | tail -n 1)"
	else
		fail "$label (exit $rc, rxe's $vrc)"
		tail -n 8 "$log" | sed 's/^/    us:  /'
		echo "$vout" | tail -n 8 | sed 's/^/    rxe: /'
	fi
}

it_log "ping-pongs with rdma-core's tools (4096 B RC, 1000 B UD, $PP_ITERS iterations)"
vm_server rc_pingpong/rxe-server 18515 \
	"ibv_rc_pingpong -d rxe0 -g 1 -p 18515 -n $PP_ITERS" rc_pingpong -n "$PP_ITERS"
vm_client rc_pingpong/rxe-client 18516 \
	"ibv_rc_pingpong -d rxe0 -g 1 -p 18516 -n $PP_ITERS $BR_IP" rc_pingpong -n "$PP_ITERS"
vm_server ud_pingpong/rxe-server 18517 \
	"ibv_ud_pingpong -d rxe0 -g 1 -s 1000 -p 18517 -n $PP_ITERS" ud_pingpong -s 1000 -n "$PP_ITERS"
vm_client ud_pingpong/rxe-client 18518 \
	"ibv_ud_pingpong -d rxe0 -g 1 -s 1000 -p 18518 -n $PP_ITERS $BR_IP" \
	ud_pingpong -s 1000 -n "$PP_ITERS"

it_log "single verbs (verbs-op, pyverbs), both directions"
port=18600
for op in write_imm send_imm write send read fadd cswap; do
	port=$((port + 1))
	vm_server "verbs_op-$op/rxe-target" "$port" \
		"verbs-op --op $op -p $port -n 5" verbs_op --op "$op" -n 5
	port=$((port + 1))
	vm_client "verbs_op-$op/rxe-issuer" "$port" \
		"verbs-op --op $op -p $port -n 5 $BR_IP" verbs_op --op "$op" -n 5
done

it_log "counters: uroced: $(it_stat "$S" sent_pkts) sent, $(it_stat "$S" rcvd_pkts) received," \
	"$(it_stat "$S" rcvd_icrc_err) ICRC errors, ARP requests $(it_stat "$S" ip.arp_requests)," \
	"replies $(it_stat "$S" ip.arp_replies)"
vmx exec -- 'rdma statistic show link rxe0/1' 2>/dev/null | tr -s ' ' | fold -w 150 |
	sed 's/^/    vm: /'

if [ "$IT_FAILS" -ne 0 ]; then
	it_log "rxe_interop: $IT_FAILS exchange(s) failed"
	exit 1
fi
it_log "rxe_interop: all exchanges passed"
exit 0
