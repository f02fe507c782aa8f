/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Errors: error completions (bad lkey and rkey, RNR retries exceeded) and errors
 * returned by ibv_post_send and ibv_modify_qp (EINVAL, ENOMEM).
 * One file of test_verbs_api (verbs_api_fixture.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "verbs_api_fixture.h"

/* ---------------------------------------------------------------- error completions */

/* An lkey that names no MR: the requester completes with IBV_WC_LOC_PROT_ERR and its
 * QP goes to the error state; WRs behind it flush. */
Test(verbs, bad_lkey_local_protection_error)
{
	struct pair p;
	struct mbuf s, r;
	struct ibv_sge ss, good, rs;
	struct ibv_send_wr wr[2];
	int i;

	pair_make(&p, IBV_QPT_RC, NULL, 7);
	mb_make(&s, 4096);
	mb_make(&r, 4096);
	rs = sge_of(&r, 0, 4096);
	for (i = 0; i < 2; i++)
		post_recv_ok(p.qp[1], &rs, 1, 50 + (uint64_t)i);
	ss = sge_of(&s, 0, 100);
	ss.lkey = s.mr->lkey ^ 0x5a5a5a00u;
	cr_assert_neq(ss.lkey, r.mr->lkey);
	good = sge_of(&s, 0, 100);
	wr[0] = (struct ibv_send_wr){.wr_id = 1, .sg_list = &ss, .num_sge = 1,
				     .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
				     .next = &wr[1]};
	wr[1] = (struct ibv_send_wr){.wr_id = 2, .sg_list = &good, .num_sge = 1,
				     .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};
	post_send_ok(p.qp[0], &wr[0]);
	/* IBA and the hardware providers: LOC_PROT_ERR, as the issue asks. rxe in Linux 6.1
	 * says IBV_WC_LOC_QP_OP_ERR (its copy_data fails with EINVAL, not EFAULT): accepted
	 * from the reference only. */
	expect(p.cq[0], 1, vfx_reference() ? IBV_WC_LOC_QP_OP_ERR : IBV_WC_LOC_PROT_ERR, NULL);
	expect(p.cq[0], 2, IBV_WC_WR_FLUSH_ERR, NULL);
	cr_assert_eq(query_qp(p.qp[0]).qp_state, IBV_QPS_ERR);
	mb_free(&s);
	mb_free(&r);
	pair_free(&p);
}

static void bad_rkey(enum ibv_wr_opcode op)
{
	struct pair p;
	struct mbuf s, r;
	struct ibv_sge ss;
	struct ibv_send_wr wr[2];
	struct ibv_wc wc;
	int rc;

	pair_make(&p, IBV_QPT_RC, NULL, 7);
	mb_make(&s, 4096);
	mb_make(&r, 4096);
	ss = sge_of(&s, 0, 100);
	wr[0] = (struct ibv_send_wr){.wr_id = 1, .sg_list = &ss, .num_sge = 1, .opcode = op,
				     .send_flags = IBV_SEND_SIGNALED, .next = &wr[1],
				     .wr.rdma = {.remote_addr = (uintptr_t)r.p,
						 .rkey = r.mr->rkey ^ 0x5a5a5a00u}};
	cr_assert_neq(wr[0].wr.rdma.rkey, s.mr->rkey);
	wr[1] = (struct ibv_send_wr){
		.wr_id = 2,
		.sg_list = &ss,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {.remote_addr = (uintptr_t)r.p, .rkey = r.mr->rkey}};
	post_send_ok(p.qp[0], &wr[0]);
	expect(p.cq[0], 1, IBV_WC_REM_ACCESS_ERR, &wc);
	cr_assert_eq(wc.qp_num, p.qp[0]->qp_num);
	expect(p.cq[0], 2, IBV_WC_WR_FLUSH_ERR, NULL);
	cr_assert_eq(query_qp(p.qp[0]).qp_state, IBV_QPS_ERR);
	/* A post on a QP in the error state is accepted and flushes. */
	wr[1].wr_id = 3;
	rc = ibv_post_send(p.qp[0], &wr[1], (struct ibv_send_wr *[]){NULL});
	cr_assert_eq(rc, 0, "post_send in ERR: %d", rc);
	expect(p.cq[0], 3, IBV_WC_WR_FLUSH_ERR, NULL);
	mb_free(&s);
	mb_free(&r);
	pair_free(&p);
}

Test(verbs, bad_rkey_write_remote_access_error)
{
	bad_rkey(IBV_WR_RDMA_WRITE);
}

Test(verbs, bad_rkey_read_remote_access_error)
{
	bad_rkey(IBV_WR_RDMA_READ);
}

/* rnr_retry 0 and no receive posted at the peer: IBV_WC_RNR_RETRY_EXC_ERR. */
Test(verbs, rnr_retry_exceeded)
{
	struct pair p;
	struct mbuf s;
	struct ibv_sge ss;
	struct ibv_send_wr wr = {.wr_id = 1, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED};

	pair_make(&p, IBV_QPT_RC, NULL, 0);
	mb_make(&s, 4096);
	ss = sge_of(&s, 0, 64);
	post_send_ok(p.qp[0], &wr);
	expect(p.cq[0], 1, IBV_WC_RNR_RETRY_EXC_ERR, NULL);
	cr_assert_eq(query_qp(p.qp[0]).qp_state, IBV_QPS_ERR);
	expect_none(p.cq[1], 50);
	mb_free(&s);
	pair_free(&p);
}

/* ---------------------------------------------------------------- errors returned */

/* The issue asks for errno to be set by every verb that fails, the post calls too;
 * rdma-core's providers (rxe included) only return the errno there, and leave bad_wr
 * unset when the doorbell refuses a QP's state. Checked on uroce only. */
static bool strict_post(void)
{
	return !vfx_reference();
}

static void expect_post_send_einval(struct ibv_qp *qp, struct ibv_send_wr *wr, const char *what)
{
	struct ibv_send_wr *bad = NULL;
	int rc;

	errno = 0;
	rc = ibv_post_send(qp, wr, &bad);
	cr_assert_eq(rc, EINVAL, "post_send %s: returned %d, want EINVAL", what, rc);
	if (strict_post()) {
		cr_expect_eq(errno, EINVAL, "post_send %s: errno %d, want EINVAL", what, errno);
		cr_assert_eq(bad, wr, "post_send %s: bad_wr does not name the WR", what);
	}
}

Test(verbs, post_send_in_reset_init_rtr_is_einval)
{
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	struct mbuf s;
	struct ibv_sge ss;
	struct ibv_send_wr wr = {.wr_id = 1, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED};
	int i;

	mb_make(&s, 4096);
	ss = sge_of(&s, 0, 8);
	for (i = 0; i < 2; i++) {
		cq[i] = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		cr_assert_not_null(cq[i]);
		qp[i] = qp_make(IBV_QPT_RC, cq[i], cq[i], NULL, NULL);
	}
	expect_post_send_einval(qp[0], &wr, "in RESET");
	qp_to_init(qp[0]);
	qp_to_init(qp[1]);
	expect_post_send_einval(qp[0], &wr, "in INIT");
	/* Receives may be posted from INIT on. */
	post_recv_ok(qp[1], &ss, 1, 7);
	qp_to_rtr(qp[0], qp[1]->qp_num);
	qp_to_rtr(qp[1], qp[0]->qp_num);
	expect_post_send_einval(qp[0], &wr, "in RTR");
	expect_none(cq[0], 50);
	expect_none(cq[1], 50);
	qp_to_rts(qp[0], 7);
	qp_to_rts(qp[1], 7);
	/* Nothing was queued by the refused posts: the first SEND is the one now. (rxe
	 * writes the WQE before its doorbell refuses the state and sends it at RTS: the
	 * reference fails here.) */
	wr.wr_id = 2;
	post_send_ok(qp[0], &wr);
	expect_ok(cq[0], 2, IBV_WC_SEND, NULL);
	expect_ok(cq[1], 7, IBV_WC_RECV, NULL);
	expect_none(cq[0], 50);
	for (i = 0; i < 2; i++) {
		cr_assert_eq(ibv_destroy_qp(qp[i]), 0);
		cr_assert_eq(ibv_destroy_cq(cq[i]), 0);
	}
	mb_free(&s);
}

/* Ceph's FIN: a signaled SEND with no SGE on a QP that never reached RTS. Linux (6.1 rxe,
 * in test/vm's guest) refuses it in RESET and INIT with EINVAL, and in ERR (from INIT)
 * takes it and flushes it: one IBV_WC_WR_FLUSH_ERR completion with its wr_id. Two QPs: rxe
 * keeps a refused WQE and would flush it too (post_send_in_reset_init_rtr_is_einval). */
Test(verbs, zero_sge_send_before_rts_einval_then_flushed_in_err)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
	struct ibv_send_wr wr = {.wr_id = 9, .num_sge = 0, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad = NULL;
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *qp;

	cr_assert_not_null(cq);
	qp = qp_make(IBV_QPT_RC, cq, cq, NULL, NULL);
	expect_post_send_einval(qp, &wr, "with no SGE in RESET");
	qp_to_init(qp);
	expect_post_send_einval(qp, &wr, "with no SGE in INIT");
	cr_assert_eq(ibv_destroy_qp(qp), 0);

	qp = qp_make(IBV_QPT_RC, cq, cq, NULL, NULL);
	qp_to_init(qp);
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0, "post in ERR: %s", strerror(errno));
	expect(cq, 9, IBV_WC_WR_FLUSH_ERR, NULL);
	expect_none(cq, 50);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

/* More SGEs than the QP's cap: EINVAL with bad_wr naming it; the WRs before it in the
 * chain are posted. Same for receives. Misaligned atomics: EINVAL (rdma-core's rxe). */
Test(verbs, too_many_sges_and_bad_atomic_are_einval)
{
	struct pair p;
	struct mbuf s, r;
	struct ibv_sge *sg;
	struct ibv_send_wr wr[2], *bad = NULL;
	struct ibv_recv_wr rw, *rbad = NULL;
	uint32_t i, ns, nr;
	int rc;

	pair_make(&p, IBV_QPT_RC, NULL, 7);
	mb_make(&s, 4096);
	mb_make(&r, 4096);
	ns = p.cap[0].max_send_sge + 1;
	nr = p.cap[1].max_recv_sge + 1;
	sg = calloc(ns > nr ? ns : nr, sizeof(*sg));
	cr_assert_not_null(sg);
	for (i = 0; i < (ns > nr ? ns : nr); i++)
		sg[i] = sge_of(&s, i * 8, 8);
	wr[0] = (struct ibv_send_wr){
		.wr_id = 1,
		.sg_list = sg,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.next = &wr[1],
		.wr.rdma = {.remote_addr = (uintptr_t)r.p, .rkey = r.mr->rkey}};
	wr[1] = (struct ibv_send_wr){.wr_id = 2, .sg_list = sg, .num_sge = (int)ns,
				     .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};
	fill(s.p, 4096, 1);
	errno = 0;
	rc = ibv_post_send(p.qp[0], &wr[0], &bad);
	cr_assert_eq(rc, EINVAL, "%u SGEs (max %u): %d", ns, ns - 1, rc);
	if (strict_post())
		cr_expect_eq(errno, EINVAL, "errno %d (%s), want EINVAL", errno, strerror(errno));
	cr_assert_eq(bad, &wr[1], "bad_wr must name the second WR");
	expect_ok(p.cq[0], 1, IBV_WC_RDMA_WRITE, NULL);
	cr_assert_eq(memcmp(r.p, s.p, 8), 0);
	expect_none(p.cq[0], 50);

	rw = (struct ibv_recv_wr){.wr_id = 3, .sg_list = sg, .num_sge = (int)nr};
	for (i = 0; i < nr; i++)
		sg[i] = sge_of(&r, i * 8, 8);
	errno = 0;
	rc = ibv_post_recv(p.qp[1], &rw, &rbad);
	cr_assert_eq(rc, EINVAL, "recv with %u SGEs (max %u): %d", nr, nr - 1, rc);
	if (strict_post())
		cr_expect_eq(errno, EINVAL, "errno %d (%s), want EINVAL", errno, strerror(errno));
	cr_assert_eq(rbad, &rw);

	/* An atomic on an address that is not 8-byte aligned. */
	sg[0] = sge_of(&s, 0, 8);
	wr[0] = (struct ibv_send_wr){.wr_id = 4,
				     .sg_list = sg,
				     .num_sge = 1,
				     .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				     .send_flags = IBV_SEND_SIGNALED,
				     .wr.atomic = {.remote_addr = (uintptr_t)r.p + 4,
						   .rkey = r.mr->rkey,
						   .compare_add = 1}};
	errno = 0;
	rc = ibv_post_send(p.qp[0], &wr[0], &bad);
	cr_assert_eq(rc, EINVAL, "misaligned atomic: %d", rc);
	cr_assert_eq(bad, &wr[0]);
	free(sg);
	mb_free(&s);
	mb_free(&r);
	pair_free(&p);
}

/* Exactly cap.max_send_wr outstanding, then ENOMEM (the peer has no receive and
 * rnr_retry 7 retries forever, so nothing completes). */
Test(verbs, full_send_queue_is_enomem)
{
	struct qp_opt o = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			   .max_recv_sge = 1};
	struct pair p;
	struct mbuf s;
	struct ibv_sge ss;
	struct ibv_send_wr wr = {.sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad = NULL;
	uint32_t i;
	int rc;

	pair_make(&p, IBV_QPT_RC, &o, 7);
	mb_make(&s, 4096);
	ss = sge_of(&s, 0, 8);
	for (i = 0; i < p.cap[0].max_send_wr; i++) {
		wr.wr_id = i;
		rc = ibv_post_send(p.qp[0], &wr, &bad);
		cr_assert_eq(rc, 0, "post %u of max_send_wr %u: %d", i, p.cap[0].max_send_wr, rc);
	}
	wr.wr_id = 1000;
	errno = 0;
	rc = ibv_post_send(p.qp[0], &wr, &bad);
	/* uroce (doc/daemon.md) refuses exactly past cap.max_send_wr; rxe's ring is a power
	 * of two larger than the cap it reports, so the reference is held to "full some
	 * time after the cap". */
	while (!strict_post() && rc == 0 && i < 4 * p.cap[0].max_send_wr + 64) {
		i++;
		rc = ibv_post_send(p.qp[0], &wr, &bad);
	}
	cr_assert_eq(rc, ENOMEM, "post %u beyond max_send_wr: %d", i, rc);
	if (strict_post())
		cr_expect_eq(errno, ENOMEM, "errno %d (%s), want ENOMEM", errno, strerror(errno));
	cr_assert_eq(bad, &wr);
	/* Receives arrive: every SEND completes, and the queue takes WRs again. */
	{
		uint32_t posted = i, k;

		for (k = 0; k < posted; k++)
			post_recv_ok(p.qp[1], &ss, 1, 500 + k);
		for (k = 0; k < posted; k++)
			expect_ok(p.cq[0], k < p.cap[0].max_send_wr ? k : 1000, IBV_WC_SEND, NULL);
	}
	post_send_ok(p.qp[0], &wr);
	mb_free(&s);
	pair_free(&p);
}

/* modify_qp with a mask the transition does not allow: EINVAL, the QP unchanged. */
Test(verbs, modify_qp_wrong_mask_is_einval)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *qp;
	struct ibv_qp_attr a;
	int rc;

	cr_assert_not_null(cq);
	qp = qp_make(IBV_QPT_RC, cq, cq, NULL, NULL);
	/* RESET -> INIT without the required IBV_QP_ACCESS_FLAGS */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	errno = 0;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT);
	cr_assert_eq(rc, EINVAL, "RESET->INIT missing ACCESS_FLAGS: %d", rc);
	cr_expect_eq(errno, EINVAL, "errno %d (%s), want EINVAL", errno, strerror(errno));
	cr_assert_eq(query_qp(qp).qp_state, IBV_QPS_RESET);
	cr_assert_eq(qp->state, IBV_QPS_RESET);
	/* RESET -> INIT with an attribute INIT does not take (SQ_PSN) */
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	errno = 0;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_ACCESS_FLAGS | IBV_QP_SQ_PSN);
	cr_assert_eq(rc, EINVAL, "RESET->INIT with SQ_PSN: %d", rc);
	cr_expect_eq(errno, EINVAL, "errno %d (%s), want EINVAL", errno, strerror(errno));
	cr_assert_eq(query_qp(qp).qp_state, IBV_QPS_RESET);
	/* RESET -> RTS is no transition */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	errno = 0;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	cr_assert_eq(rc, EINVAL, "RESET->RTS: %d", rc);
	cr_expect_eq(errno, EINVAL, "errno %d (%s), want EINVAL", errno, strerror(errno));
	/* INIT -> RTR without the path (AV, PATH_MTU, DEST_QPN, RQ_PSN, ...) */
	qp_to_init(qp);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	errno = 0;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	cr_assert_eq(rc, EINVAL, "INIT->RTR with only STATE: %d", rc);
	cr_expect_eq(errno, EINVAL, "errno %d (%s), want EINVAL", errno, strerror(errno));
	cr_assert_eq(query_qp(qp).qp_state, IBV_QPS_INIT);
	cr_assert_eq(qp->state, IBV_QPS_INIT);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}
