#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_verbs_api's expectations checked against Linux soft-RoCE itself: the same binary,
# in reference mode (UROCE_VERBS_REFERENCE=1, verbs_fixture.h), runs inside an rxe VM
# (QEMU, Debian kernel 6.1 rdma_rxe, rdma-core 44's libibverbs and rxe provider; the
# guest of test/vm) on rxe0, with the VM's own
# libibverbs.so.1. What passes there is what rdma-core + rxe do; uroce's run of the same
# cases (test verbs_api) must then agree with them.
#
# The cases run are those whose expectations rxe meets (CASES below). The others differ
# from rxe on purpose or by rxe's limits, each said in doc/verbs.md ("Against rxe's
# verbs"): fork semantics, rxe's lazy LAST_WQE_REACHED, its send queue in INIT/RTR, its
# SRQ one WQE larger, its extended-CQ and qp_ex paths.
#
#   test/verbs/rxe_reference.sh   (root; qemu-system-x86_64; the guest image built once
#                                  with test/vm/image.sh)
# Env: TEST_VERBS_API (the built test binary), CASES (space-separated case names).
# Exit: 0 passed, 1 failed, 77 skipped.
set -uo pipefail
unset LD_LIBRARY_PATH # qemu links libibverbs: never the build's
. "$(dirname "$0")/../integration/lib.sh"
: "${TEST_VERBS_API:=$IT_ROOT/build/test/verbs/test_verbs_api}"
: "${CASES:=device_list_and_queries create_and_reg_mr_errors reg_mr_iova rereg_mr resize_cq
srq_receives srq_resize srq_limit_async_event completion_channel destroy_in_use_is_ebusy
bad_lkey_local_protection_error bad_rkey_read_remote_access_error
bad_rkey_write_remote_access_error too_many_sges_and_bad_atomic_are_einval
modify_qp_wrong_mask_is_einval full_send_queue_is_enomem query_qp_after_connect
rc_inline_send rc_multi_sge_and_chained_wrs rc_send_recv_with_imm_sizes rc_write_read_atomics
rnr_retry_exceeded uc_send_and_write ud_send_with_grh memory_window_type1
memory_window_type2 memory_window_qp_ex import_device_pd_and_mr
async_event_of_a_destroyed_srq_names_no_new_srq zero_sge_send_before_rts_einval_then_flushed_in_err
completion_event_of_a_destroyed_cq_names_no_new_cq ceph_close_leaves_no_receive_behind}"

it_init rxe_reference
if [ ! -x "$TEST_VERBS_API" ]; then
	echo "rxe_reference: $TEST_VERBS_API not built; skipped"
	exit 77
fi
it_rxe_vm_require
it_rxe_vm_names uxf${IT_ID} uxg${IT_ID}

# The folder the VM mounts at /host: the binary and the libraries it needs beyond the
# guest's own (Criterion and its dependencies; never libibverbs or libc, the guest's).
share=$IT_DIR/share
mkdir -p "$share/lib"
cp "$TEST_VERBS_API" "$share/test_verbs_api"
ldd "$TEST_VERBS_API" | awk '/=> \// { print $3 }' | grep -v -e libibverbs -e '/libc\.so' |
	while read -r lib; do cp -L "$lib" "$share/lib/"; done
cat >"$share/run.sh" <<'EOF'
#!/bin/sh
cd /host || exit 1
export LD_LIBRARY_PATH=/host/lib UROCE_VERBS_REFERENCE=1 UROCE_VERBS_GID_INDEX="$(roce-gid)"
ibv_devices
fails=0
for c in "$@"; do
	if ./test_verbs_api --jobs 1 --filter "verbs/$c" >"out.$c" 2>&1 &&
		grep -q 'Tested: 1 | Passing: 1 ' "out.$c"; then
		echo "ok: $c"
	else
		echo "FAIL: $c"
		grep -v '^\[----\]   $' "out.$c" | tail -n 12
		fails=$((fails + 1))
	fi
done
echo "rxe cases failed: $fails"
[ "$fails" = 0 ]
EOF
chmod +x "$share/run.sh"

it_rxe_vm_up "$share" || exit 1
# shellcheck disable=SC2086 # CASES is a list of words
vmx exec -t 600 -- /host/run.sh $(echo $CASES) >"$IT_DIR/vm.out" 2>&1
rc=$?
sed 's/^/    /' "$IT_DIR/vm.out"
it_check "every case passed on rxe0 (exit $rc)" test "$rc" -eq 0
it_check "all $(echo $CASES | wc -w) cases ran" \
	test "$(grep -c -e '^ok: ' -e '^FAIL: ' "$IT_DIR/vm.out")" -eq "$(echo $CASES | wc -w)"
if [ "$IT_FAILS" -ne 0 ]; then
	it_log "rxe_reference: $IT_FAILS check(s) failed"
	exit 1
fi
it_log "rxe_reference: all checks passed"
exit 0
