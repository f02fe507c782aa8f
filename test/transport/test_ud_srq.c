/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, deterministic, on two hosts (behaviour.h). UD (Q_Key, GRH and
 * completion, an AH destroyed after the post, a receive too small) and SRQ (limit event,
 * two QPs on one SRQ). Each asserts the exact statuses, counters, QP states, frames on
 * the wire and what memory holds afterwards.
 */
#include "behaviour.h"

static void ud_send(struct env *e, struct uroce_tp_ah *ah, uint64_t id, uint32_t len,
		    uint32_t qkey)
{
	struct uroce_tp_send_wqe w = wr(id, IBV_WR_SEND, va(e, 0, 0), len, e->key[0], true);

	w.ah = ah;
	w.remote_qpn = uroce_tp_qp_num(e->qp[1]);
	w.remote_qkey = qkey;
	post(e, 0, &w);
}

/* Two UD QPs, host 0's and host 1's, ready with Q_Key 0x1111; the AH from 0 to 1. */
static struct uroce_tp_ah *ud_pair(struct env *e)
{
	env_init(e);
	e->qp[0] = mkqp(e, 0, IBV_QPT_UD, NULL, false, 8);
	e->qp[1] = mkqp(e, 1, IBV_QPT_UD, NULL, false, 8);
	sim_ud_ready(&e->s, e->qp[0], 0x1111, 0);
	sim_ud_ready(&e->s, e->qp[1], 0x1111, 0);
	return sim_ah(&e->s, e->pd[0], 0, 1);
}

/* IBA 10.2.5 / C10-15: a UD packet whose Q_Key is not the QP's is silently dropped; a
 * WR Q_Key with the high bit set means "the sending QP's own Q_Key". */
Test(ud, qkey)
{
	struct env e;
	struct uroce_tp_ah *ah;
	struct ibv_qp_attr a;

	env_init(&e);
	e.qp[0] = mkqp(&e, 0, IBV_QPT_UD, NULL, false, 8);
	e.qp[1] = mkqp(&e, 1, IBV_QPT_UD, NULL, false, 8);
	sim_ud_ready(&e.s, e.qp[0], 0x1111, 0);
	sim_ud_ready(&e.s, e.qp[1], 0x2222, 0);
	ah = sim_ah(&e.s, e.pd[0], 0, 1);
	fill(hp(&e, 0, 0), 100, 8);
	post_recv(&e, 1, 50, 0, 1024);
	post_recv(&e, 1, 51, 1024, 1024);

	ud_send(&e, ah, 1, 100, 0x3333); /* wrong Q_Key */
	ud_send(&e, ah, 2, 100, 0x80000000); /* the sender's own, 0x1111: wrong too */
	cr_assert(run_until(&e, 2, 0, 10 * MS));
	run_for(&e, 1 * MS);
	/* UD completes when sent (IBA 9.8.3), whatever happens to it. */
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	expect_wc(&e.sc[0].wc[1], 2, IBV_WC_SUCCESS);
	cr_assert_eq(g_tx.f[0].qkey, 0x3333);
	cr_assert_eq(g_tx.f[1].qkey, 0x1111);
	cr_assert_eq(cnt(&e, 1)->rcvd_bad_qkey, 2);
	cr_assert_eq(e.rc[1].n, 0);

	/* The sender takes the receiver's Q_Key as its own (UD RTS->RTS may change it). */
	memset(&a, 0, sizeof(a));
	a.qkey = 0x2222;
	cr_assert_eq(uroce_tp_modify_qp(e.qp[0], &a, IBV_QP_QKEY, NULL, e.s.now), 0);
	ud_send(&e, ah, 3, 100, 0x80000000);
	ud_send(&e, ah, 4, 100, 0x2222);
	cr_assert(run_until(&e, 4, 2, 10 * MS));
	cr_assert_eq(g_tx.f[2].qkey, 0x2222);
	cr_assert_eq(g_tx.f[3].qkey, 0x2222);
	cr_assert_eq(cnt(&e, 1)->rcvd_bad_qkey, 2);
	/* The dropped ones consumed no receive WQE. */
	expect_wc(&e.rc[1].wc[0], 50, IBV_WC_SUCCESS);
	expect_wc(&e.rc[1].wc[1], 51, IBV_WC_SUCCESS);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	env_fini(&e);
}

/* IBA 11.4.1.2 / rdma-core (ibv_ud_pingpong): the first 40 bytes of a UD receive buffer hold
 * the GRH; RoCEv2 over IPv4 puts the IPv4 header in its last 20 bytes (as rxe). */
Test(ud, grh_and_completion)
{
	struct env e;
	struct uroce_tp_ah *ah;
	const uint8_t *b;

	ah = ud_pair(&e);
	memset(hp(&e, 1, 0), 0xee, 4096);
	fill(hp(&e, 0, 0), 1024, 2);
	post_recv(&e, 1, 60, 0, 40 + 1024);
	ud_send(&e, ah, 1, 1024, 0x1111); /* exactly the MTU */
	cr_assert(run_until(&e, 1, 1, 10 * MS));
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	expect_wc(&e.rc[1].wc[0], 60, IBV_WC_SUCCESS);
	cr_assert_eq(e.rc[1].wc[0].opcode, IBV_WC_RECV);
	cr_assert(e.rc[1].wc[0].wc_flags & IBV_WC_GRH);
	/* sl: the packet type, RoCEv2 over IPv4, as mlx5 reports it (UCX's UD reads it). */
	cr_assert_eq(e.rc[1].wc[0].sl, UROCE_TP_WC_SL_ROCEV2_IPV4);
	cr_assert_eq(e.rc[1].wc[0].src_qp, uroce_tp_qp_num(e.qp[0]));
	cr_assert_eq(e.rc[1].wc[0].qp_num, uroce_tp_qp_num(e.qp[1]));
	cr_assert_eq(e.rc[1].wc[0].byte_len, 40 + 1024);
	b = hp(&e, 1, 0);
	cr_assert(all_bytes(b, 20, 0));
	cr_assert_eq(b[20], 0x45, "IPv4, IHL 5");
	cr_assert_eq(b[20 + 9], 17, "UDP");
	cr_assert_eq(b[20 + 12], 10);
	cr_assert_eq(b[20 + 13], 0);
	cr_assert_eq(b[20 + 14], 0);
	cr_assert_eq(b[20 + 15], 1, "source 10.0.0.1");
	cr_assert_eq(b[20 + 19], 2, "destination 10.0.0.2");
	cr_assert_eq(memcmp(b + 40, hp(&e, 0, 0), 1024), 0);
	cr_assert(all_bytes(b + 40 + 1024, 64, 0xee));
	cr_assert_eq(g_tx.f[0].src_qpn, uroce_tp_qp_num(e.qp[0]));
	env_fini(&e);
}

/* An AH may be destroyed as soon as the WR that names it is posted (mlx5 and rxe copy the
 * address vector into the WQE): the WR still goes where it was posted to. ASan sees any
 * read of the freed AH; without it, the next AH (to another host) most likely takes the
 * freed memory, and a WR that read it would go there. */
Test(ud, ah_destroyed_after_post)
{
	struct env e;
	struct uroce_tp_ah *ah, *other;

	ah = ud_pair(&e);
	fill(hp(&e, 0, 0), 200, 5);
	post_recv(&e, 1, 70, 0, 40 + 200);
	ud_send(&e, ah, 1, 200, 0x1111);
	cr_assert_eq(uroce_tp_destroy_ah(ah), 0);
	other = sim_ah(&e.s, e.pd[0], 0, 0);
	cr_assert_not_null(other);
	cr_assert(run_until(&e, 1, 1, 10 * MS));
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	expect_wc(&e.rc[1].wc[0], 70, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 1, 0) + 40, hp(&e, 0, 0), 200), 0);
	cr_assert_eq(g_tx.n, 1);
	cr_assert_eq(uroce_tp_destroy_ah(other), 0);
	env_fini(&e);
}

/* A UD receive buffer without room for the GRH + payload: LOC_LEN_ERR, nothing written,
 * the QP keeps receiving (a UD receive error affects only that WQE, as in rxe). */
Test(ud, receive_too_small)
{
	struct env e;
	struct uroce_tp_ah *ah;

	ah = ud_pair(&e);
	memset(hp(&e, 1, 0), 0xee, 4096);
	post_recv(&e, 1, 70, 0, 40 + 99);
	post_recv(&e, 1, 71, 1024, 40 + 100);
	ud_send(&e, ah, 1, 100, 0x1111);
	ud_send(&e, ah, 2, 100, 0x1111);
	cr_assert(run_until(&e, 2, 2, 10 * MS));
	expect_wc(&e.rc[1].wc[0], 70, IBV_WC_LOC_LEN_ERR);
	expect_wc(&e.rc[1].wc[1], 71, IBV_WC_SUCCESS);
	cr_assert_eq(e.rc[1].wc[1].byte_len, 140);
	cr_assert(all_bytes(hp(&e, 1, 0), 1024, 0xee));
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	env_fini(&e);
}

/* ==== 6. SRQ ================================================================================== */

static void send_one(struct env *e, uint64_t id, int want_sc, int want_rc)
{
	struct uroce_tp_send_wqe w = wr(id, IBV_WR_SEND, va(e, 0, 0), 32, e->key[0], true);

	post(e, 0, &w);
	cr_assert(run_until(e, want_sc, want_rc, 10 * MS));
}

/* IBA 10.2.9.2 / ibv_modify_srq(3): the limit event fires once, when fewer WQEs than the
 * limit remain, then the SRQ is disarmed until modify_srq sets a limit again. */
Test(srq, limit_event)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct ibv_srq_init_attr sa;
	struct ibv_srq_attr q, m;
	struct uroce_tp_srq *srq;
	struct uroce_tp_recv_wqe r;
	int sent = 0;

	env_init(&e);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 12;
	sa.attr.max_sge = 2;
	srq = uroce_tp_create_srq(e.pd[1], &sa);
	cr_assert_not_null(srq);
	cr_assert_eq(uroce_tp_query_srq(srq, &q), 0);
	cr_assert_eq(q.max_wr, 16);
	cr_assert_eq(q.max_sge, 2);
	cr_assert_eq(q.srq_limit, 0);
	e.qp[0] = mkqp(&e, 0, IBV_QPT_RC, NULL, false, 32);
	e.qp[1] = mkqp(&e, 1, IBV_QPT_RC, srq, false, 32);
	sim_connect(&e.s, e.qp[0], 0, e.qp[1], 1, &o);
	for (int i = 0; i < 8; i++) {
		r = rwr(100 + (uint64_t)i, va(&e, 1, (uint64_t)i * 64), 64, e.key[1]);
		cr_assert_eq(uroce_tp_post_srq_recv(srq, &r), 0);
	}
	memset(&m, 0, sizeof(m));
	m.srq_limit = 4;
	cr_assert_eq(uroce_tp_modify_srq(srq, &m, IBV_SRQ_LIMIT), 0);
	cr_assert_eq(uroce_tp_query_srq(srq, &q), 0);
	cr_assert_eq(q.srq_limit, 4);

	for (int i = 0; i < 4; i++) { /* 8 -> 4 left: not below the limit */
		send_one(&e, (uint64_t)sent, sent + 1, sent + 1);
		sent++;
	}
	cr_assert_eq(nevents(IBV_EVENT_SRQ_LIMIT_REACHED, NULL), 0);
	send_one(&e, (uint64_t)sent, sent + 1, sent + 1); /* 3 left */
	sent++;
	cr_assert_eq(nevents(IBV_EVENT_SRQ_LIMIT_REACHED, srq), 1);
	cr_assert_eq(uroce_tp_query_srq(srq, &q), 0);
	cr_assert_eq(q.srq_limit, 0, "disarmed");
	send_one(&e, (uint64_t)sent, sent + 1, sent + 1); /* 2 left */
	sent++;
	cr_assert_eq(nevents(IBV_EVENT_SRQ_LIMIT_REACHED, NULL), 1);

	/* Armed again at 2: refill to 4, then fire at 1 left. */
	for (int i = 8; i < 10; i++) {
		r = rwr(100 + (uint64_t)i, va(&e, 1, (uint64_t)i * 64), 64, e.key[1]);
		cr_assert_eq(uroce_tp_post_srq_recv(srq, &r), 0);
	}
	m.srq_limit = 2;
	cr_assert_eq(uroce_tp_modify_srq(srq, &m, IBV_SRQ_LIMIT), 0);
	send_one(&e, (uint64_t)sent, sent + 1, sent + 1); /* 3 left */
	sent++;
	send_one(&e, (uint64_t)sent, sent + 1, sent + 1); /* 2 left */
	sent++;
	cr_assert_eq(nevents(IBV_EVENT_SRQ_LIMIT_REACHED, NULL), 1);
	send_one(&e, (uint64_t)sent, sent + 1, sent + 1); /* 1 left */
	sent++;
	cr_assert_eq(nevents(IBV_EVENT_SRQ_LIMIT_REACHED, srq), 2);
	for (int i = 0; i < sent; i++) {
		expect_wc(&e.rc[1].wc[i], 100 + (uint64_t)i, IBV_WC_SUCCESS);
		cr_assert_eq(e.rc[1].wc[i].qp_num, uroce_tp_qp_num(e.qp[1]));
	}
	/* A limit above max_wr is refused. */
	m.srq_limit = 17;
	cr_assert_eq(uroce_tp_modify_srq(srq, &m, IBV_SRQ_LIMIT), -EINVAL);
	/* IBV_DEVICE_SRQ_RESIZE: below the WQEs it holds (4 now) or 0 is refused and changes
	 * nothing; grown, it keeps them, taken in posting order. */
	for (int i = 10; i < 13; i++) {
		r = rwr(100 + (uint64_t)i, va(&e, 1, (uint64_t)i * 64), 64, e.key[1]);
		cr_assert_eq(uroce_tp_post_srq_recv(srq, &r), 0);
	}
	m.max_wr = 2;
	cr_assert_eq(uroce_tp_modify_srq(srq, &m, IBV_SRQ_MAX_WR), -EINVAL);
	m.max_wr = 0;
	cr_assert_eq(uroce_tp_modify_srq(srq, &m, IBV_SRQ_MAX_WR), -EINVAL);
	cr_assert_eq(uroce_tp_query_srq(srq, &q), 0);
	cr_assert_eq(q.max_wr, 16, "a refused resize changed the size");
	m.max_wr = 32;
	cr_assert_eq(uroce_tp_modify_srq(srq, &m, IBV_SRQ_MAX_WR), 0);
	cr_assert_eq(uroce_tp_query_srq(srq, &q), 0);
	cr_assert_eq(q.max_wr, 32);
	for (int i = 0; i < 4; i++, sent++) {
		send_one(&e, (uint64_t)sent, sent + 1, sent + 1);
		expect_wc(&e.rc[1].wc[sent], 100 + (uint64_t)sent, IBV_WC_SUCCESS);
	}
	cr_assert_eq(uroce_tp_destroy_srq(srq), -EBUSY);
	env_fini(&e);
}

Test(srq, two_qps_share_one)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct ibv_srq_init_attr sa;
	struct uroce_tp_srq *srq;
	struct uroce_tp_qp *a0, *a1, *b0, *b1;
	struct uroce_tp_recv_wqe r;
	struct uroce_tp_send_wqe w;

	env_init(&e);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 8;
	sa.attr.max_sge = 1;
	srq = uroce_tp_create_srq(e.pd[1], &sa);
	a0 = mkqp(&e, 0, IBV_QPT_RC, NULL, false, 8);
	b0 = mkqp(&e, 0, IBV_QPT_RC, NULL, false, 8);
	a1 = mkqp(&e, 1, IBV_QPT_RC, srq, false, 8);
	b1 = mkqp(&e, 1, IBV_QPT_RC, srq, false, 8);
	sim_connect(&e.s, a0, 0, a1, 1, &o);
	o.psn_a = 0x900;
	sim_connect(&e.s, b0, 0, b1, 1, &o);
	for (int i = 0; i < 4; i++) {
		r = rwr(10 + (uint64_t)i, va(&e, 1, (uint64_t)i * 64), 64, e.key[1]);
		cr_assert_eq(uroce_tp_post_srq_recv(srq, &r), 0);
	}
	fill(hp(&e, 0, 0), 64, 1);
	fill(hp(&e, 0, 64), 64, 2);
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 20, e.key[0], true);
	cr_assert_eq(uroce_tp_post_send(a0, &w, e.s.now), 0);
	cr_assert(run_until(&e, 1, 1, 10 * MS));
	w = wr(2, IBV_WR_SEND, va(&e, 0, 64), 30, e.key[0], true);
	cr_assert_eq(uroce_tp_post_send(b0, &w, e.s.now), 0);
	cr_assert(run_until(&e, 2, 2, 10 * MS));
	expect_wc(&e.rc[1].wc[0], 10, IBV_WC_SUCCESS);
	cr_assert_eq(e.rc[1].wc[0].qp_num, uroce_tp_qp_num(a1));
	cr_assert_eq(e.rc[1].wc[0].src_qp, uroce_tp_qp_num(a0));
	cr_assert_eq(e.rc[1].wc[0].byte_len, 20);
	expect_wc(&e.rc[1].wc[1], 11, IBV_WC_SUCCESS);
	cr_assert_eq(e.rc[1].wc[1].qp_num, uroce_tp_qp_num(b1));
	cr_assert_eq(e.rc[1].wc[1].src_qp, uroce_tp_qp_num(b0));
	cr_assert_eq(e.rc[1].wc[1].byte_len, 30);
	cr_assert_eq(memcmp(hp(&e, 1, 0), hp(&e, 0, 0), 20), 0);
	cr_assert_eq(memcmp(hp(&e, 1, 64), hp(&e, 0, 64), 30), 0);
	/* IBA 11.6.3.1: a QP on an SRQ reports its last WQE when it enters ERR. */
	{
		struct ibv_qp_attr a;

		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_ERR;
		cr_assert_eq(uroce_tp_modify_qp(a1, &a, IBV_QP_STATE, NULL, e.s.now), 0);
		cr_assert_eq(nevents(IBV_EVENT_QP_LAST_WQE_REACHED, a1), 1);
		collect(&e);
		cr_assert_eq(e.rc[1].n, 2, "the SRQ's WQEs are not flushed by one QP");
	}
	env_fini(&e);
}

/* ==== 7. PSN wrap ============================================================================= */

/* IBA 9.7.1: PSNs are 24 bits and wrap; a pair starting at 0xfffffe carries multi-packet
 * SENDs, WRITEs and READs through 0. */
