/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, deterministic, on two hosts (behaviour.h). Posting rules (by QP state,
 * bad requests, a full queue, receive errors, posting in place) and signaling
 * (unsignaled, sq_sig_all, a failing unsignaled WQE). Each asserts the exact statuses,
 * counters, QP states, frames on the wire and what memory holds afterwards.
 */
#include "behaviour.h"

Test(post, send_by_state)
{
	struct env e;
	struct uroce_tp_send_wqe w;
	struct sim_qp_opts o = default_opts();
	struct ibv_qp_attr a;
	struct uroce_tp_qp *qp;

	env_init(&e);
	qp = mkqp(&e, 0, IBV_QPT_RC, NULL, false, 8);
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 8, e.key[0], true);
	cr_assert_eq(uroce_tp_post_send(qp, &w, 0), -EINVAL, "RESET");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX |
						  IBV_QP_ACCESS_FLAGS, NULL, 0), 0);
	cr_assert_eq(uroce_tp_post_send(qp, &w, 0), -EINVAL, "INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = 0x99;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = e.s.host[1].gid;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
						  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
				       e.s.host[1].mac, 0), 0);
	cr_assert_eq(uroce_tp_post_send(qp, &w, 0), -EINVAL, "RTR");
	collect(&e);
	cr_assert_eq(e.sc[0].n, 0);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE, NULL, 0), 0);
	w.send_flags = 0; /* even unsignaled: a flush is an error completion */
	cr_assert_eq(uroce_tp_post_send(qp, &w, 0), 0, "ERR");
	collect(&e);
	cr_assert_eq(e.sc[0].n, 1);
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(e.sc[0].wc[0].qp_num, uroce_tp_qp_num(qp));
	(void)o;
	env_fini(&e);
}

Test(post, send_bad_requests)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct uroce_tp_qp *uc[2], *ud;
	struct uroce_tp_ah *ah;
	static const enum ibv_wr_opcode not_uc[] = {IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
						    IBV_WR_ATOMIC_FETCH_AND_ADD,
						    IBV_WR_SEND_WITH_INV};
	static const enum ibv_wr_opcode not_ud[] = {
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_SEND_WITH_INV};

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	uc[0] = mkqp(&e, 0, IBV_QPT_UC, NULL, false, 8);
	uc[1] = mkqp(&e, 1, IBV_QPT_UC, NULL, false, 8);
	sim_connect(&e.s, uc[0], 0, uc[1], 1, &o);
	ud = mkqp(&e, 0, IBV_QPT_UD, NULL, false, 8);
	sim_ud_ready(&e.s, ud, 1, 0);
	ah = sim_ah(&e.s, e.pd[0], 0, 1);

	/* Opcodes the service does not have (IBA table 38). */
	for (size_t i = 0; i < sizeof(not_uc) / sizeof(not_uc[0]); i++) {
		w = wr(1, not_uc[i], va(&e, 0, 0), 8, e.key[0], true);
		cr_assert_eq(uroce_tp_post_send(uc[0], &w, 0), -EINVAL, "UC opcode %d", not_uc[i]);
	}
	for (size_t i = 0; i < sizeof(not_ud) / sizeof(not_ud[0]); i++) {
		w = wr(1, not_ud[i], va(&e, 0, 0), 8, e.key[0], true);
		w.ah = ah;
		cr_assert_eq(uroce_tp_post_send(ud, &w, 0), -EINVAL, "UD opcode %d", not_ud[i]);
	}
	/* UD needs an AH of its PD. */
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 8, e.key[0], true);
	cr_assert_eq(uroce_tp_post_send(ud, &w, 0), -EINVAL);
	{
		struct uroce_tp_pd *other = uroce_tp_alloc_pd(e.s.host[0].dev);

		w.ah = sim_ah(&e.s, other, 0, 1);
		cr_assert_eq(uroce_tp_post_send(ud, &w, 0), -EINVAL);
		w.ah = ah;
		cr_assert_eq(uroce_tp_post_send(ud, &w, 0), 0);
	}

	/* More SGEs than the QP has (it has UROCE_TP_MAX_SGE, rounded up). */
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 8, e.key[0], true);
	w.num_sge = UROCE_TP_MAX_SGE + 1;
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), -EINVAL);
	w.num_sge = UROCE_TP_MAX_SGE;
	for (int i = 0; i < UROCE_TP_MAX_SGE; i++)
		w.sg_list[i] = w.sg_list[0];
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), 0);

	/* Inline data longer than max_inline_data. */
	w = wr(2, IBV_WR_SEND, 0, 0, 0, true);
	w.send_flags |= IBV_SEND_INLINE;
	w.num_sge = 0;
	w.inline_len = UROCE_TP_MAX_INLINE + 1;
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), -EINVAL);
	w.inline_len = UROCE_TP_MAX_INLINE;
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), 0);
	w.opcode = IBV_WR_RDMA_READ; /* inline has no meaning for a READ */
	w.inline_len = 8;
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), -EINVAL);

	/* Atomics: 8 bytes at an 8-byte aligned address (IBA 9.4.5). */
	w = wr(3, IBV_WR_ATOMIC_FETCH_AND_ADD, va(&e, 0, 0), 4, e.key[0], true);
	w.remote_addr = va(&e, 1, 0);
	w.rkey = e.key[1];
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), -EINVAL, "length 4");
	w.sg_list[0].length = 16;
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), -EINVAL, "length 16");
	w.sg_list[0].length = 8;
	w.remote_addr = va(&e, 1, 4);
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), -EINVAL, "misaligned");
	w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), -EINVAL, "misaligned CAS");
	w.remote_addr = va(&e, 1, 8);
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), 0);
	env_fini(&e);
}

Test(post, send_queue_full)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_qp_init init;
	struct uroce_tp_send_wqe w;
	int i;

	env_init(&e);
	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_RC;
	init.send_cq = e.sc[0].cq;
	init.recv_cq = e.rc[0].cq;
	init.cap.max_send_wr = 3; /* rounded up to 4 and written back */
	e.qp[0] = uroce_tp_create_qp(e.pd[0], &init);
	cr_assert_eq(init.cap.max_send_wr, 4);
	e.qp[1] = mkqp(&e, 1, IBV_QPT_RC, NULL, false, 8);
	sim_connect(&e.s, e.qp[0], 0, e.qp[1], 1, &o);
	for (i = 0; i < 4; i++) {
		w = wr((uint64_t)i, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 8, e.key[0], true);
		w.remote_addr = va(&e, 1, 0);
		w.rkey = e.key[1];
		cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, e.s.now), 0);
	}
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, e.s.now), -ENOMEM);
	/* Completions make room again. */
	cr_assert(run_until(&e, 4, 0, 100 * MS));
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, e.s.now), 0);
	env_fini(&e);
}

Test(post, recv_errors)
{
	struct env e;
	struct uroce_tp_srq *srq;
	struct ibv_srq_init_attr sa;
	struct uroce_tp_qp *qp, *plain;
	struct uroce_tp_recv_wqe r;
	int i;

	env_init(&e);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	srq = uroce_tp_create_srq(e.pd[1], &sa);
	cr_assert_not_null(srq);
	qp = mkqp(&e, 1, IBV_QPT_RC, srq, false, 8);
	r = rwr(1, va(&e, 1, 0), 64, e.key[1]);
	cr_assert_eq(uroce_tp_post_recv(qp, &r), -EINVAL, "the QP's receives go to its SRQ");
	for (i = 0; i < 4; i++)
		cr_assert_eq(uroce_tp_post_srq_recv(srq, &r), 0);
	cr_assert_eq(uroce_tp_post_srq_recv(srq, &r), -ENOMEM);
	r.num_sge = 2;
	cr_assert_eq(uroce_tp_post_srq_recv(srq, &r), -EINVAL, "more SGEs than max_sge");

	plain = mkqp(&e, 1, IBV_QPT_RC, NULL, false, 8);
	r = rwr(1, va(&e, 1, 0), 64, e.key[1]);
	cr_assert_eq(uroce_tp_post_recv(plain, &r), -EINVAL, "RESET");
	r.num_sge = UROCE_TP_MAX_SGE + 1;
	cr_assert_eq(uroce_tp_post_recv(plain, &r), -EINVAL);
	env_fini(&e);
}

/* Posting in place: a slot while there is room, a refused slot not queued and written
 * again, and what is committed sent as a posted WQE is. */
Test(post, send_reserve_commit)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_qp_init init;
	struct uroce_tp_send_wqe *slot;
	int i;

	env_init(&e);
	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_RC;
	init.send_cq = e.sc[0].cq;
	init.recv_cq = e.rc[0].cq;
	init.cap.max_send_wr = 2;
	e.qp[0] = uroce_tp_create_qp(e.pd[0], &init);
	e.qp[1] = mkqp(&e, 1, IBV_QPT_RC, NULL, false, 8);
	sim_connect(&e.s, e.qp[0], 0, e.qp[1], 1, &o);
	for (i = 0; i < 2; i++) {
		slot = uroce_tp_post_send_reserve(e.qp[0]);
		cr_assert_not_null(slot);
		*slot = wr((uint64_t)i, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 8, e.key[0], true);
		slot->remote_addr = va(&e, 1, 0);
		slot->rkey = e.key[1];
		if (i == 1) {
			slot->num_sge = UROCE_TP_MAX_SGE + 1;
			cr_assert_eq(uroce_tp_post_send_commit(e.qp[0], e.s.now), -EINVAL);
			cr_assert_eq(uroce_tp_post_send_reserve(e.qp[0]), slot, "not queued");
			slot->num_sge = 1;
		}
		cr_assert_eq(uroce_tp_post_send_commit(e.qp[0], e.s.now), 0);
	}
	cr_assert_null(uroce_tp_post_send_reserve(e.qp[0]), "full");
	cr_assert_eq(uroce_tp_post_send_commit(e.qp[0], e.s.now), -ENOMEM);
	cr_assert(run_until(&e, 2, 0, 100 * MS));
	expect_wc(&e.sc[0].wc[0], 0, IBV_WC_SUCCESS);
	expect_wc(&e.sc[0].wc[1], 1, IBV_WC_SUCCESS);
	cr_assert_not_null(uroce_tp_post_send_reserve(e.qp[0]), "completions make room");
	env_fini(&e);
}

Test(post, recv_reserve_commit)
{
	struct env e;
	struct uroce_tp_srq *srq;
	struct ibv_srq_init_attr sa;
	struct uroce_tp_qp *on_srq;
	struct uroce_tp_recv_wqe *slot;

	env_init(&e);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 1;
	sa.attr.max_sge = 1;
	srq = uroce_tp_create_srq(e.pd[1], &sa);
	cr_assert_not_null(srq);
	on_srq = mkqp(&e, 1, IBV_QPT_RC, srq, false, 8);
	cr_assert_null(uroce_tp_post_recv_reserve(on_srq), "its receives go to its SRQ");
	cr_assert_eq(uroce_tp_post_recv_commit(on_srq), -ENOMEM);
	slot = uroce_tp_post_srq_recv_reserve(srq);
	cr_assert_not_null(slot);
	*slot = rwr(1, va(&e, 1, 0), 64, e.key[1]);
	slot->num_sge = 2;
	cr_assert_eq(uroce_tp_post_srq_recv_commit(srq), -EINVAL, "more SGEs than max_sge");
	slot->num_sge = 1;
	cr_assert_eq(uroce_tp_post_srq_recv_commit(srq), 0);
	cr_assert_null(uroce_tp_post_srq_recv_reserve(srq), "full");
	cr_assert_eq(uroce_tp_srq_outstanding(srq), 1);
	env_fini(&e);
}

/* ==== 3. modify_qp ============================================================================ */

Test(signal, unsignaled_then_signaled)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	fill(hp(&e, 0, 0), 3000, 4);
	for (int i = 0; i < 3; i++) {
		w = wr((uint64_t)i, IBV_WR_RDMA_WRITE, va(&e, 0, (uint64_t)i * 1000), 1000,
		       e.key[0], i == 2);
		w.remote_addr = va(&e, 1, (uint64_t)i * 1000);
		w.rkey = e.key[1];
		post(&e, 0, &w);
	}
	cr_assert(run_until(&e, 1, 0, 10 * MS));
	cr_assert_eq(e.sc[0].n, 1);
	expect_wc(&e.sc[0].wc[0], 2, IBV_WC_SUCCESS);
	cr_assert_eq(e.sc[0].wc[0].opcode, IBV_WC_RDMA_WRITE);
	cr_assert_eq(e.sc[0].wc[0].byte_len, 1000);
	/* When WR 2 completed, WR 0 and 1 had landed. */
	cr_assert_eq(memcmp(hp(&e, 1, 0), hp(&e, 0, 0), 3000), 0);
	run_for(&e, 10 * MS);
	cr_assert_eq(e.sc[0].n, 1);
	env_fini(&e);
}

/* sq_sig_all: every WR completes, whatever its flags. */
Test(signal, sq_sig_all)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;

	env_init(&e);
	e.qp[0] = mkqp(&e, 0, IBV_QPT_RC, NULL, true, 8);
	e.qp[1] = mkqp(&e, 1, IBV_QPT_RC, NULL, false, 8);
	sim_connect(&e.s, e.qp[0], 0, e.qp[1], 1, &o);
	for (int i = 0; i < 4; i++) {
		w = wr((uint64_t)i, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 10, e.key[0], false);
		w.remote_addr = va(&e, 1, 0);
		w.rkey = e.key[1];
		post(&e, 0, &w);
	}
	cr_assert(run_until(&e, 4, 0, 10 * MS));
	for (int i = 0; i < 4; i++)
		expect_wc(&e.sc[0].wc[i], (uint64_t)i, IBV_WC_SUCCESS);
	env_fini(&e);
}

/* ibv_post_send(3): an unsignaled WR that fails still produces its error completion. */
Test(signal, failing_unsignaled_completes)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	w = wr(1, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 10, e.key[0], false);
	w.remote_addr = va(&e, 1, 0);
	w.rkey = e.key[1];
	post(&e, 0, &w); /* succeeds silently */
	w.wr_id = 2;
	w.rkey = e.key[1] ^ 0x80; /* fails */
	post(&e, 0, &w);
	w.wr_id = 3;
	w.rkey = e.key[1];
	post(&e, 0, &w);
	cr_assert(run_until(&e, 2, 0, 10 * MS));
	cr_assert_eq(e.sc[0].n, 2);
	expect_wc(&e.sc[0].wc[0], 2, IBV_WC_REM_ACCESS_ERR);
	expect_wc(&e.sc[0].wc[1], 3, IBV_WC_WR_FLUSH_ERR);
	env_fini(&e);
}

/* ==== 5. UD =================================================================================== */
