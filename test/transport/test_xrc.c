/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * XRC (IBA vol 1 annex A14) between two simulated hosts: host 0's initiator QP sends to
 * host 1's target QP, and each request's XRCETH names the SRQ of host 1 that takes it.
 * The receive WQE, the completion's CQ and the PD the R_Keys are checked in are that
 * SRQ's; an SRQ of another XRC domain, or none, is an invalid request.
 */
#include "behaviour.h"

/* Host 1's XRC side: two domains; SRQs a and b in the first (b with its own PD, MR and
 * CQ), c in the second. */
struct xrc_env {
	struct env e;
	struct uroce_tp_xrcd *xrcd, *other_xrcd;
	struct uroce_tp_srq *a, *b, *c;
	struct uroce_tp_pd *pd_b;
	struct uroce_tp_mr *mr_b;
	uint32_t key_b;
	struct cqlog cq_b, cq_c;
};

static const uint64_t MEM_B_OFF = MEM_SIZE / 2; /* host 1's second MR: the upper half */

static struct uroce_tp_srq *mk_srq(struct uroce_tp_pd *pd, struct uroce_tp_xrcd *xrcd,
				   struct uroce_tp_cq *cq)
{
	struct ibv_srq_init_attr init = {.attr = {.max_wr = 16, .max_sge = 2}};
	struct uroce_tp_srq *srq = uroce_tp_create_xrc_srq(pd, xrcd, cq, &init);

	cr_assert_not_null(srq);
	return srq;
}

static void xrc_init(struct xrc_env *x)
{
	struct env *e = &x->e;
	struct uroce_tp_dev *dev1;
	struct uroce_tp_qp_init init;
	struct sim_qp_opts o;

	memset(x, 0, sizeof(*x));
	env_init(e);
	dev1 = e->s.host[1].dev;
	x->xrcd = uroce_tp_alloc_xrcd(dev1);
	x->other_xrcd = uroce_tp_alloc_xrcd(dev1);
	cr_assert(x->xrcd && x->other_xrcd);
	x->pd_b = uroce_tp_alloc_pd(dev1);
	/* The upper half of host 1's memory again, in PD b: the same bytes reached through
	 * SRQ a's PD with e->key[1] or SRQ b's with key_b. */
	x->mr_b = uroce_tp_reg_mr(x->pd_b, e->iova[1] + MEM_B_OFF, e->mem[1] + MEM_B_OFF,
				  MEM_SIZE / 2,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	cr_assert_not_null(x->mr_b);
	uroce_tp_mr_keys(x->mr_b, &x->key_b, NULL);
	x->cq_b.cq = uroce_tp_create_cq(dev1, 64);
	x->cq_c.cq = uroce_tp_create_cq(dev1, 64);
	x->a = mk_srq(e->pd[1], x->xrcd, e->rc[1].cq);
	x->b = mk_srq(x->pd_b, x->xrcd, x->cq_b.cq);
	x->c = mk_srq(e->pd[1], x->other_xrcd, x->cq_c.cq);

	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_XRC_SEND;
	init.send_cq = e->sc[0].cq;
	init.cap.max_send_wr = 32;
	init.cap.max_send_sge = 1;
	e->qp[0] = uroce_tp_create_qp(e->pd[0], &init);
	cr_assert_not_null(e->qp[0]);
	cr_expect_eq(init.cap.max_recv_wr, 0);

	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_XRC_RECV;
	init.xrcd = x->xrcd;
	init.cap.max_send_wr = 8; /* asked for, and not had: a target has no queues */
	e->qp[1] = uroce_tp_create_qp(NULL, &init);
	cr_assert_not_null(e->qp[1]);
	cr_expect_eq(init.cap.max_send_wr, 0);

	o = default_opts();
	o.max_rd_atomic = 4;
	sim_connect(&e->s, e->qp[0], 0, e->qp[1], 1, &o);
}

static void xrc_fini(struct xrc_env *x)
{
	env_fini(&x->e);
}

static struct uroce_tp_send_wqe xwr(struct xrc_env *x, uint64_t id, enum ibv_wr_opcode op,
				    uint64_t off, uint32_t len, struct uroce_tp_srq *to)
{
	struct uroce_tp_send_wqe w = wr(id, op, va(&x->e, 0, off), len, x->e.key[0], true);

	w.remote_srqn = uroce_tp_srq_num(to);
	return w;
}

static void srq_recv(struct xrc_env *x, struct uroce_tp_srq *srq, uint64_t id, uint64_t off,
		     uint32_t len, uint32_t lkey)
{
	struct uroce_tp_recv_wqe r = rwr(id, va(&x->e, 1, off), len, lkey);

	cr_assert_eq(uroce_tp_post_srq_recv(srq, &r), 0);
}

static int poll_all(struct cqlog *l)
{
	while (l->n < 256 && uroce_tp_poll_cq(l->cq, 1, &l->wc[l->n]) == 1)
		l->n++;
	return l->n;
}

Test(xrc, each_send_lands_in_the_srq_it_names_and_completes_on_that_srqs_cq)
{
	struct xrc_env x;
	struct env *e = &x.e;
	struct uroce_tp_send_wqe w;
	uint32_t tgt;

	xrc_init(&x);
	tgt = uroce_tp_qp_num(e->qp[1]);
	cr_expect_neq(uroce_tp_srq_num(x.a), 0);
	cr_expect_neq(uroce_tp_srq_num(x.a), uroce_tp_srq_num(x.b));
	fill(hp(e, 0, 0), 3000, 1);
	fill(hp(e, 0, 4096), 100, 2);
	srq_recv(&x, x.a, 11, 0, 4096, e->key[1]);
	srq_recv(&x, x.b, 21, MEM_B_OFF, 4096, x.key_b);
	/* 3000 bytes at MTU 1024: FIRST, MIDDLE, LAST, every one naming SRQ a */
	w = xwr(&x, 1, IBV_WR_SEND, 0, 3000, x.a);
	post(e, 0, &w);
	w = xwr(&x, 2, IBV_WR_SEND_WITH_IMM, 4096, 100, x.b);
	w.imm_data = 0x01020304;
	post(e, 0, &w);
	cr_assert(run_until(e, 2, 1, 10 * MS));
	cr_assert_eq(poll_all(&x.cq_b), 1);
	expect_wc(&e->sc[0].wc[0], 1, IBV_WC_SUCCESS);
	expect_wc(&e->sc[0].wc[1], 2, IBV_WC_SUCCESS);
	expect_wc(&e->rc[1].wc[0], 11, IBV_WC_SUCCESS);
	cr_expect_eq(e->rc[1].wc[0].byte_len, 3000);
	cr_expect_eq(e->rc[1].wc[0].qp_num, tgt);
	cr_expect_eq(e->rc[1].wc[0].src_qp, uroce_tp_qp_num(e->qp[0]));
	cr_expect_eq(memcmp(hp(e, 1, 0), hp(e, 0, 0), 3000), 0);
	expect_wc(&x.cq_b.wc[0], 21, IBV_WC_SUCCESS);
	cr_expect_eq(x.cq_b.wc[0].byte_len, 100);
	cr_expect_eq(x.cq_b.wc[0].qp_num, tgt);
	cr_expect(x.cq_b.wc[0].wc_flags & IBV_WC_WITH_IMM);
	cr_expect_eq(x.cq_b.wc[0].imm_data, htonl(0x01020304));
	cr_expect_eq(memcmp(hp(e, 1, MEM_B_OFF), hp(e, 0, 4096), 100), 0);
	/* On the wire: XRC opcodes, the XRCETH on every request, none on the ACKs. */
	cr_expect_eq(nframes(0, OPC(XRC, SEND_FIRST), ANY), 1);
	cr_expect_eq(nframes(0, OPC(XRC, SEND_MIDDLE), ANY), 1);
	cr_expect_eq(nframes(0, OPC(XRC, SEND_LAST), ANY), 1);
	cr_expect_eq(nframes(0, OPC(XRC, SEND_ONLY_IMM), ANY), 1);
	cr_expect_eq(nframes(0, OPC(RC, SEND_FIRST), ANY), 0);
	cr_expect_geq(nframes(1, OPC(XRC, ACKNOWLEDGE), ANY), 1);
	cr_expect_eq(nframes(1, OPC(RC, ACKNOWLEDGE), ANY), 0);
	for (uint32_t i = 0; i < g_tx.n; i++) {
		const struct frame_rec *r = &g_tx.f[i];

		if (r->from == 0)
			cr_expect_eq(r->xrc_srqn,
				     uroce_tp_srq_num(r->opcode == OPC(XRC, SEND_ONLY_IMM) ? x.b
											    : x.a));
	}
	xrc_fini(&x);
}

/* RDMA and atomics reach memory through the PD of the SRQ they name (annex A14: the
 * target QP has none): b's key works naming b, and the same key naming a does not. */
Test(xrc, r_keys_are_checked_in_the_named_srqs_pd)
{
	struct xrc_env x;
	struct env *e = &x.e;
	struct uroce_tp_send_wqe w;
	uint64_t orig;

	xrc_init(&x);
	fill(hp(e, 0, 0), 2000, 7);
	w = xwr(&x, 1, IBV_WR_RDMA_WRITE, 0, 2000, x.b);
	w.remote_addr = va(e, 1, MEM_B_OFF);
	w.rkey = x.key_b;
	post(e, 0, &w);
	fill(hp(e, 1, MEM_B_OFF + 8192), 1500, 9);
	w = xwr(&x, 2, IBV_WR_RDMA_READ, 16384, 1500, x.b);
	w.remote_addr = va(e, 1, MEM_B_OFF + 8192);
	w.rkey = x.key_b;
	post(e, 0, &w);
	memcpy(hp(e, 1, MEM_B_OFF + 12288), &(uint64_t){40}, 8);
	w = xwr(&x, 3, IBV_WR_ATOMIC_FETCH_AND_ADD, 20480, 8, x.b);
	w.remote_addr = va(e, 1, MEM_B_OFF + 12288);
	w.rkey = x.key_b;
	w.compare_add = 2;
	post(e, 0, &w);
	cr_assert(run_until(e, 3, 0, 10 * MS));
	for (int i = 0; i < 3; i++)
		expect_wc(&e->sc[0].wc[i], (uint64_t)i + 1, IBV_WC_SUCCESS);
	cr_expect_eq(memcmp(hp(e, 1, MEM_B_OFF), hp(e, 0, 0), 2000), 0);
	cr_expect_eq(memcmp(hp(e, 0, 16384), hp(e, 1, MEM_B_OFF + 8192), 1500), 0);
	memcpy(&orig, hp(e, 0, 20480), 8);
	cr_expect_eq(orig, 40);
	memcpy(&orig, hp(e, 1, MEM_B_OFF + 12288), 8);
	cr_expect_eq(orig, 42);
	cr_expect_geq(nframes(1, OPC(XRC, READ_RESPONSE_FIRST), ANY), 1);
	cr_expect_eq(nframes(1, OPC(XRC, ATOMIC_ACKNOWLEDGE), ANY), 1);

	/* b's key naming a: not a key of a's PD. As any bad R_Key (IBA 9.7.5.1.3): NAK
	 * Remote Access Error, and the connection is over. */
	w = xwr(&x, 4, IBV_WR_RDMA_WRITE, 0, 64, x.a);
	w.remote_addr = va(e, 1, MEM_B_OFF);
	w.rkey = x.key_b;
	post(e, 0, &w);
	cr_assert(run_until(e, 4, 0, 10 * MS));
	expect_wc(&e->sc[0].wc[3], 4, IBV_WC_REM_ACCESS_ERR);
	cr_expect_eq(nacks(1, UROCE_AETH_NAK, UROCE_NAK_REM_ACCESS_ERR), 1);
	cr_expect_eq(qstate(e, 1), IBV_QPS_ERR);
	xrc_fini(&x);
}

/* An SRQ of another XRC domain, or a number no SRQ has: NAK Invalid Request (annex A14),
 * counted, and the target QP goes to ERR as for any invalid request. */
Test(xrc, an_srq_outside_the_targets_domain_is_an_invalid_request)
{
	for (int k = 0; k < 2; k++) {
		struct xrc_env x;
		struct env *e = &x.e;
		struct uroce_tp_send_wqe w;

		xrc_init(&x);
		srq_recv(&x, x.c, 31, 0, 4096, e->key[1]);
		w = xwr(&x, 1, IBV_WR_SEND, 0, 64, x.c);
		if (k == 1)
			w.remote_srqn = 0x777777;
		post(e, 0, &w);
		cr_assert(run_until(e, 1, 0, 10 * MS));
		expect_wc(&e->sc[0].wc[0], 1, IBV_WC_REM_INV_REQ_ERR);
		cr_expect_eq(nacks(1, UROCE_AETH_NAK, UROCE_NAK_INVALID_REQ), 1);
		cr_expect_eq(cnt(e, 1)->rcvd_bad_xrc_srq, 1);
		cr_expect_eq(qstate(e, 1), IBV_QPS_ERR);
		/* c's WQE is untouched: nothing was taken from another domain's SRQ */
		cr_expect_eq(uroce_tp_srq_outstanding(x.c), 1);
		cr_expect_eq(poll_all(&x.cq_c), 0);
		xrc_fini(&x);
	}
}

/* An empty SRQ: RNR NAK, and the SEND goes through once a WQE is posted to that SRQ. */
Test(xrc, an_empty_srq_is_receiver_not_ready)
{
	struct xrc_env x;
	struct env *e = &x.e;
	struct uroce_tp_send_wqe w;

	xrc_init(&x);
	srq_recv(&x, x.a, 11, 0, 4096, e->key[1]); /* a has one, b none */
	w = xwr(&x, 1, IBV_WR_SEND, 0, 64, x.b);
	post(e, 0, &w);
	run_for(e, 100 * US);
	cr_expect_geq(nacks(1, UROCE_AETH_RNR_NAK, ANY), 1);
	cr_expect_eq(e->sc[0].n, 0);
	cr_expect_eq(uroce_tp_srq_outstanding(x.a), 1); /* not taken from a */
	srq_recv(&x, x.b, 21, MEM_B_OFF, 4096, x.key_b);
	cr_assert(run_until(e, 1, 0, 100 * MS));
	expect_wc(&e->sc[0].wc[0], 1, IBV_WC_SUCCESS);
	cr_assert_eq(poll_all(&x.cq_b), 1);
	expect_wc(&x.cq_b.wc[0], 21, IBV_WC_SUCCESS);
	xrc_fini(&x);
}

/* What each XRC object takes and refuses, and what keeps what alive. */
Test(xrc, objects_and_their_lifetimes)
{
	struct xrc_env x;
	struct env *e = &x.e;
	struct uroce_tp_recv_wqe r;
	struct uroce_tp_send_wqe w;
	struct ibv_srq_init_attr si = {.attr = {.max_wr = 4, .max_sge = 1}};

	xrc_init(&x);
	/* in use: the domain by its SRQs and target QP, a CQ by its XRC SRQ */
	cr_expect_eq(uroce_tp_dealloc_xrcd(x.xrcd), -EBUSY);
	cr_expect_eq(uroce_tp_destroy_cq(x.cq_b.cq), -EBUSY);
	/* a target has no queues to post to; an initiator no receive queue */
	r = rwr(1, va(e, 1, 0), 64, e->key[1]);
	cr_expect_eq(uroce_tp_post_recv(e->qp[1], &r), -EINVAL);
	r = rwr(1, va(e, 0, 0), 64, e->key[0]);
	cr_expect_eq(uroce_tp_post_recv(e->qp[0], &r), -EINVAL);
	w = wr(1, IBV_WR_SEND, va(e, 1, 0), 64, e->key[1], true);
	cr_expect_eq(uroce_tp_post_send(e->qp[1], &w, e->s.now), -EINVAL);
	/* an initiator: RC's operations but binds, local invalidation and Atomic Write */
	w = xwr(&x, 1, IBV_WR_LOCAL_INV, 0, 0, x.a);
	w.num_sge = 0;
	cr_expect_eq(uroce_tp_post_send(e->qp[0], &w, e->s.now), -EINVAL);
	w = xwr(&x, 1, IBV_WR_ATOMIC_WRITE, 0, 8, x.a);
	cr_expect_eq(uroce_tp_post_send(e->qp[0], &w, e->s.now), -EINVAL);
	w = xwr(&x, 1, IBV_WR_SEND, 0, 8, x.a);
	w.remote_srqn = 1u << 24; /* beyond the XRCETH's 24 bits */
	cr_expect_eq(uroce_tp_post_send(e->qp[0], &w, e->s.now), -EINVAL);
	/* an ordinary SRQ has no number; an XRC SRQ needs its domain and CQ */
	{
		struct uroce_tp_srq *plain = uroce_tp_create_srq(e->pd[1], &si);

		cr_assert_not_null(plain);
		cr_expect_eq(uroce_tp_srq_num(plain), 0);
		cr_expect_eq(uroce_tp_destroy_srq(plain), 0);
	}
	cr_expect_null(uroce_tp_create_xrc_srq(e->pd[1], NULL, e->rc[1].cq, &si));
	cr_expect_eq(errno, EINVAL);
	cr_expect_null(uroce_tp_create_xrc_srq(e->pd[1], x.xrcd, NULL, &si));
	cr_expect_eq(errno, EINVAL);
	/* A destroyed SRQ's number is free again, and a request naming it is refused. */
	{
		uint32_t n = uroce_tp_srq_num(x.c);

		cr_expect_eq(uroce_tp_destroy_srq(x.c), 0);
		x.c = mk_srq(e->pd[1], x.xrcd, x.cq_c.cq); /* now in the target's domain */
		cr_expect_eq(uroce_tp_srq_num(x.c), n);
	}
	/* gone in order, the domain last */
	cr_expect_eq(uroce_tp_destroy_qp(e->qp[1]), 0);
	e->qp[1] = NULL;
	cr_expect_eq(uroce_tp_destroy_srq(x.a), 0);
	cr_expect_eq(uroce_tp_destroy_srq(x.b), 0);
	cr_expect_eq(uroce_tp_destroy_srq(x.c), 0);
	cr_expect_eq(uroce_tp_dealloc_xrcd(x.xrcd), 0);
	cr_expect_eq(uroce_tp_destroy_cq(x.cq_b.cq), 0);
	xrc_fini(&x);
}
