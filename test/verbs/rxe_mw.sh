#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Memory windows between uroce and Linux soft-RoCE: one side binds them, the other uses
# them. mw_peer (test/verbs/mw_peer.c) runs on our side over the drop-in libibverbs.so.1
# and a uroced, and in an rxe VM (QEMU, Debian kernel 6.1 rdma_rxe, rdma-core 44; the
# guest of test/vm) on rxe0 over the guest's own
# libibverbs, the same binary shared into the VM at /host. Twice: rxe-owner (rxe binds a
# type 1 window with ibv_bind_mw and a type 2 one with IBV_WR_BIND_MW, we WRITE and READ
# through them, SEND with Invalidate, then WRITE through the invalidated R_Key), then
# uroce-owner (the same, roles swapped). The VM's mw_peer listens for the TCP exchange both
# times. Both sides must exit 0. Topology: rxe_tools.sh's (doc/interop.md).
#
#   test/verbs/rxe_mw.sh    (root; qemu-system-x86_64; the guest image built once with
#                            test/vm/image.sh)
# Env: MW_PEER (the built mw_peer), VERBS_LIB_DIR (the folder of the built libibverbs.so.1),
# UROCED, UROCE_XFER, UROCE_CLI; RXE_CAPTURE=FILE (uroced writes a pcap).
# Exit: 0 passed, 1 failed, 77 skipped.
set -uo pipefail
# meson's test environment points LD_LIBRARY_PATH at the build's libraries: qemu (which
# links libibverbs) and the helpers must not load ours; only our mw_peer does.
unset LD_LIBRARY_PATH
. "$(dirname "$0")/../integration/lib.sh"
: "${VERBS_LIB_DIR:=$IT_ROOT/build/lib/verbs}"
: "${MW_PEER:=$IT_ROOT/build/test/verbs/mw_peer}"

it_init rxe_mw
if [ ! -x "$MW_PEER" ] || [ ! -e "$VERBS_LIB_DIR/libibverbs.so.1" ]; then
	echo "rxe_mw: $MW_PEER or $VERBS_LIB_DIR/libibverbs.so.1 not built; skipped"
	exit 77
fi
it_rxe_vm_require

# Own namespace and VM names (rxe_tools uses uxt/uxv, rxe_reference uxf/uxg).
it_rxe_vm_names "uxm$IT_ID" "uxw$IT_ID"

# The folder the VM mounts at /host: mw_peer needs nothing beyond the guest's libibverbs
# and libc.
share=$IT_DIR/share
mkdir -p "$share"
cp "$MW_PEER" "$share/mw_peer"
T0=$SECONDS
it_rxe_vm_up "$share" || exit 1

it_daemon R "$NS" "--vdev=net_af_packet0,iface=rxeveth0" "$OUR_IP" 1500 || exit 1
S=$(it_sock R)
if [ -n "${RXE_CAPTURE:-}" ]; then # a pcap of every RoCE frame (a debugging aid)
	"$UROCE_CLI" -S "$S" capture start "$RXE_CAPTURE" || exit 1
fi
ours() { ip netns exec "$NS" env LD_LIBRARY_PATH="$VERBS_LIB_DIR" UROCE_SOCKET="$S" "$@"; }

# exchange LABEL RXE_ROLE OUR_ROLE: the VM's mw_peer listens, ours connects (it retries
# until the VM listens); both must exit 0. Each side finds its own IPv4 RoCE v2 GID.
PORT=18900
exchange() {
	local label=$1 vrole=$2 orole=$3 t1=$SECONDS rc vrc vout
	PORT=$((PORT + 1))
	vmx spawn mw -- "/host/mw_peer -d rxe0 -r $vrole -p $PORT" >/dev/null
	ours timeout -k 5 150 "$MW_PEER" -d uroce0 -r "$orole" -p "$PORT" "$VM_IP" \
		>"$IT_DIR/ours.out" 2>&1
	rc=$?
	# A failed side leaves the other waiting for it: end the VM's at once.
	[ "$rc" -eq 0 ] || vmx kill mw >/dev/null 2>&1
	vout=$(vmx wait mw -t 180 2>&1)
	vrc=$?
	if [ "$rc" -eq 0 ] && [ "$vrc" -eq 0 ]; then
		it_log "PASS $label ($((SECONDS - t1)) s): rxe $vrole, uroce $orole"
	else
		it_log "FAIL $label ($((SECONDS - t1)) s): ours exit $rc, rxe exit $vrc"
		IT_FAILS=$((IT_FAILS + 1))
	fi
	sed 's/^/    us:  /' "$IT_DIR/ours.out"
	echo "$vout" | sed 's/^/    rxe: /'
}

exchange rxe-owner owner user
exchange uroce-owner user owner

it_log "counters: uroced: $(it_stat "$S" sent_pkts) sent, $(it_stat "$S" rcvd_pkts) received," \
	"$(it_stat "$S" rcvd_icrc_err) ICRC errors"
vmx exec -- 'rdma statistic show link rxe0/1' 2>/dev/null | tr -s ' ' | fold -w 150 |
	sed 's/^/    vm: /'
if [ "$IT_FAILS" -ne 0 ]; then
	it_log "rxe_mw: $IT_FAILS exchange(s) failed ($((SECONDS - T0)) s)"
	exit 1
fi
it_log "rxe_mw: both exchanges passed ($((SECONDS - T0)) s)"
exit 0
