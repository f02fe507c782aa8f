/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, deterministic, on two hosts (behaviour.h). Atomics: replayed requests
 * answered from the replay buffer, not executed again; a misaligned target in host
 * memory. Each asserts the exact statuses, counters, QP states, frames on the wire and
 * what memory holds afterwards.
 */
#include "behaviour.h"

static void atomic_replay(enum ibv_wr_opcode op)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	uint64_t init = 0x1000, v, res;
	int dropped = 0;

	env_init(&e);
	o.timeout = 8; /* 1 ms */
	env_pair(&e, IBV_QPT_RC, &o);
	memcpy(hp(&e, 1, 64), &init, 8);
	memset(hp(&e, 0, 0), 0xee, 8);
	g_tx.drop = drop_first_atomic_ack;
	g_tx.drop_arg = &dropped;
	w = wr(1, op, va(&e, 0, 0), 8, e.key[0], true);
	w.remote_addr = va(&e, 1, 64);
	w.rkey = e.key[1];
	w.compare_add = op == IBV_WR_ATOMIC_CMP_AND_SWP ? init : 5;
	w.swap = 0x2000;
	post(&e, 0, &w);
	cr_assert(run_until(&e, 1, 0, 100 * MS));
	run_for(&e, 10 * MS);

	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	cr_assert_eq(e.sc[0].wc[0].opcode,
		     op == IBV_WR_ATOMIC_CMP_AND_SWP ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD);
	cr_assert_eq(dropped, 1);
	/* The request went twice at the same PSN, it was answered twice with the same value. */
	cr_assert_eq(nframes(0, op == IBV_WR_ATOMIC_CMP_AND_SWP ? OPC(RC, COMPARE_SWAP)
							       : OPC(RC, FETCH_ADD),
			     o.psn_a), 2);
	cr_assert_eq(nframes(1, OPC(RC, ATOMIC_ACKNOWLEDGE), o.psn_a), 2);
	for (uint32_t i = 0; i < g_tx.n; i++)
		if (g_tx.f[i].opcode == OPC(RC, ATOMIC_ACKNOWLEDGE))
			cr_assert_eq(g_tx.f[i].orig, init);
	cr_assert_eq(cnt(&e, 0)->completer_retry_err, 1);
	cr_assert_eq(cnt(&e, 1)->duplicate_request, 1);
	/* Executed once: the target changed once, the requester got the original value. */
	memcpy(&v, hp(&e, 1, 64), 8);
	cr_assert_eq(v, op == IBV_WR_ATOMIC_CMP_AND_SWP ? 0x2000 : init + 5, "target %lx",
		     (unsigned long)v);
	memcpy(&res, hp(&e, 0, 0), 8);
	cr_assert_eq(res, init, "result %lx", (unsigned long)res);
	cr_assert_eq(qstate(&e, 0), IBV_QPS_RTS);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	env_fini(&e);
}

Test(atomic, fetch_add_replayed_not_reexecuted)
{
	atomic_replay(IBV_WR_ATOMIC_FETCH_AND_ADD);
}

Test(atomic, cmp_swap_replayed_not_reexecuted)
{
	atomic_replay(IBV_WR_ATOMIC_CMP_AND_SWP);
}

/* Found when fuzz_transport_rx first built lib/transport with clang: the responder read
 * and wrote an atomic's target through a uint64_t pointer, but only the VA is checked to
 * be 8-byte aligned, and an MR's host address need not be aligned as its iova is (an
 * undefined misaligned access; clang's -Wcast-align refused the cast). */
Test(atomic, target_misaligned_in_host_memory)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_wire_hdr h;
	struct uroce_tp_mr *mr;
	const uint64_t iova = 0x10000000; /* 8-byte aligned; its host bytes are not */
	uint8_t *host;
	uint64_t init = 0x1000, v;
	uint32_t rkey;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	host = hp(&e, 1, 0x2004);
	mr = uroce_tp_reg_mr(e.pd[1], iova, host, 64,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	cr_assert_not_null(mr);
	uroce_tp_mr_keys(mr, NULL, &rkey);
	memcpy(host + 8, &init, 8);
	memcpy(host + 16, &init, 8);

	uroce_wire_hdr_init(&h, 4, OPC(RC, FETCH_ADD));
	h.bth.psn = o.psn_a;
	h.bth.ack_req = true;
	h.atomiceth.va = iova + 8;
	h.atomiceth.rkey = rkey;
	h.atomiceth.swap_add = 5;
	inject(&e, &h, NULL, 0);
	uroce_wire_hdr_init(&h, 4, OPC(RC, COMPARE_SWAP));
	h.bth.psn = o.psn_a + 1;
	h.bth.ack_req = true;
	h.atomiceth.va = iova + 16;
	h.atomiceth.rkey = rkey;
	h.atomiceth.compare = init;
	h.atomiceth.swap_add = 0x2000;
	inject(&e, &h, NULL, 0);

	memcpy(&v, host + 8, 8);
	cr_assert_eq(v, init + 5, "fetch-add target %lx", (unsigned long)v);
	memcpy(&v, host + 16, 8);
	cr_assert_eq(v, 0x2000, "cmp-swap target %lx", (unsigned long)v);
	cr_assert_eq(nframes(1, OPC(RC, ATOMIC_ACKNOWLEDGE), ANY), 2);
	for (uint32_t i = 0; i < g_tx.n; i++)
		if (g_tx.f[i].opcode == OPC(RC, ATOMIC_ACKNOWLEDGE))
			cr_assert_eq(g_tx.f[i].orig, init);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	env_fini(&e);
}

/* ==== 11. what uroce_transport.h claims besides ============================================== */

/* "Malformed frames, bad ICRCs, unknown QPs and packets a QP may not take are dropped and
 * counted": nothing answers them and no QP changes. */
