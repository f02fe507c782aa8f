/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory windows: type 1 (ibv_bind_mw), type 2 (IBV_WR_BIND_MW, LOCAL_INV,
 * SEND_WITH_INV) and through the extended post API.
 * One file of test_verbs_api (verbs_api_fixture.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "verbs_api_fixture.h"

/* ---------------------------------------------------------------- memory windows */

#define MW_ACC (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static void post_read(struct ibv_qp *qp, struct mbuf *dst, uint64_t src, uint32_t rkey,
		      uint64_t id)
{
	struct ibv_sge ds = sge_of(dst, 0, 256);
	struct ibv_send_wr wr = {.wr_id = id, .sg_list = &ds, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = {.remote_addr = src, .rkey = rkey}};

	post_send_ok(qp, &wr);
}

/* IBV_WR_BIND_MW of a type 2 window on @p qp, with the next key byte: @return the R_Key
 * it will have. The window's ibv_mw.rkey takes it too: a provider names the window by
 * it in the next bind (rxe's WQE carries ibv_mw.rkey, and the kernel checks it against
 * the window's R_Key), and for type 2 only the application can keep it current. */
static uint32_t post_bind2(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mr *mr,
			   uint64_t addr, uint64_t len, uint64_t id)
{
	struct ibv_send_wr wr = {.wr_id = id, .opcode = IBV_WR_BIND_MW,
				 .send_flags = IBV_SEND_SIGNALED,
				 .bind_mw = {.mw = mw, .rkey = ibv_inc_rkey(mw->rkey),
					     .bind_info = {.mr = mr, .addr = addr, .length = len,
							   .mw_access_flags = MW_ACC}}};

	post_send_ok(qp, &wr);
	mw->rkey = wr.bind_mw.rkey;
	return wr.bind_mw.rkey;
}

static void post_inv(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t rkey, struct mbuf *s,
		     uint64_t id)
{
	struct ibv_sge ss = s ? sge_of(s, 0, 64) : (struct ibv_sge){0};
	struct ibv_send_wr wr = {.wr_id = id, .sg_list = s ? &ss : NULL, .num_sge = s ? 1 : 0,
				 .opcode = op, .send_flags = IBV_SEND_SIGNALED,
				 .invalidate_rkey = rkey};

	post_send_ok(qp, &wr);
}

static struct ibv_mr *mw_target(uint8_t **mem)
{
	struct ibv_mr *mr;

	*mem = aligned_alloc(4096, 8192);
	cr_assert_not_null(*mem);
	memset(*mem, 0, 8192);
	mr = ibv_reg_mr(pd, *mem, 8192, ACC_ALL | IBV_ACCESS_MW_BIND);
	cr_assert_not_null(mr, "ibv_reg_mr(MW_BIND): %s", strerror(errno));
	return mr;
}

/* Type 1 (IBA 10.6.7.1): ibv_bind_mw on a QP of the PD opens [4096, 5120) of an MR to the
 * peer, with the window's rights and bounds; a bind changes only the key byte and the old
 * R_Key stops working; a bind of length 0 closes it; the MR cannot go while it is bound. */
Test(verbs, memory_window_type1)
{
	struct pair p;
	struct mbuf s, d;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	uint8_t *mem;
	uint64_t win;
	uint32_t rk0, rk1;
	struct ibv_mw_bind b = {.wr_id = 10, .send_flags = IBV_SEND_SIGNALED};

	cr_assert(dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW, "no MEM_WINDOW capability");
	cr_assert_gt(dattr.max_mw, 0);
	pair_make(&p, IBV_QPT_RC, NULL, 7);
	mb_make(&s, 4096);
	mb_make(&d, 4096);
	fill(s.p, 4096, 51);
	mr = mw_target(&mem);
	fill(mem + 4096, 1024, 52);
	win = (uintptr_t)mem + 4096;
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	cr_assert_not_null(mw, "ibv_alloc_mw(type 1): %s", strerror(errno));
	cr_assert_eq(mw->type, IBV_MW_TYPE_1);
	cr_assert_eq(mw->pd, pd);
	rk0 = mw->rkey;

	/* An unbound window opens nothing. */
	post_write(p.qp[0], &s, win, rk0, 1);
	expect(p.cq[0], 1, IBV_WC_REM_ACCESS_ERR, NULL);
	pair_free(&p);
	pair_make(&p, IBV_QPT_RC, NULL, 7);

	b.bind_info = (struct ibv_mw_bind_info){.mr = mr, .addr = win, .length = 1024,
						.mw_access_flags = MW_ACC | IBV_ACCESS_ZERO_BASED};
	cr_assert_eq(ibv_bind_mw(p.qp[1], mw, &b), EINVAL, "a zero-based type 1 window");
	cr_assert_eq(mw->rkey, rk0, "a refused bind changed the R_Key");
	b.bind_info.mw_access_flags = MW_ACC;
	cr_assert_eq(ibv_bind_mw(p.qp[1], mw, &b), 0, "ibv_bind_mw: %s", strerror(errno));
	rk1 = mw->rkey;
	cr_assert_eq(rk1, ibv_inc_rkey(rk0), "R_Key %#x after a bind of %#x", rk1, rk0);
	expect_ok(p.cq[1], 10, IBV_WC_BIND_MW, NULL);
	cr_assert_eq(ibv_dereg_mr(mr), EINVAL, "an MR with a window bound was deregistered");

	/* Inside: WRITE and READ through the window's R_Key. */
	post_write(p.qp[0], &s, win + 100, rk1, 2);
	expect_ok(p.cq[0], 2, IBV_WC_RDMA_WRITE, NULL);
	cr_assert_eq(memcmp(mem + 4096 + 100, s.p, 256), 0, "the WRITE did not land");
	post_read(p.qp[0], &d, win + 768, rk1, 3);
	expect_ok(p.cq[0], 3, IBV_WC_RDMA_READ, NULL);
	cr_assert_eq(memcmp(d.p, mem + 4096 + 768, 256), 0, "the READ read something else");
	/* The MR's bytes around the window are not the window's (IBA 10.6.7). Linux 6.1's rxe
	 * checks a window's access against its MR's range only, and lets this WRITE in. */
	if (!vfx_reference()) {
		post_write(p.qp[0], &s, win + 1024 - 128, rk1, 4);
		expect(p.cq[0], 4, IBV_WC_REM_ACCESS_ERR, NULL);
		cr_assert_eq(mem[4096 + 1024], 0, "a WRITE past the window landed");
		pair_free(&p);
		pair_make(&p, IBV_QPT_RC, NULL, 7);
	}

	/* Rebound read-only: the old R_Key is refused, a WRITE with the new one too. */
	b.wr_id = 11;
	b.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	cr_assert_eq(ibv_bind_mw(p.qp[1], mw, &b), 0, "rebind: %s", strerror(errno));
	expect_ok(p.cq[1], 11, IBV_WC_BIND_MW, NULL);
	cr_assert_neq(mw->rkey, rk1);
	post_read(p.qp[0], &d, win, rk1, 5);
	expect(p.cq[0], 5, IBV_WC_REM_ACCESS_ERR, NULL);
	pair_free(&p);
	pair_make(&p, IBV_QPT_RC, NULL, 7);
	post_read(p.qp[0], &d, win, mw->rkey, 6);
	expect_ok(p.cq[0], 6, IBV_WC_RDMA_READ, NULL);
	post_write(p.qp[0], &s, win, mw->rkey, 7);
	expect(p.cq[0], 7, IBV_WC_REM_ACCESS_ERR, NULL);
	pair_free(&p);
	pair_make(&p, IBV_QPT_RC, NULL, 7);

	/* Length 0 unbinds: nothing is reachable, and the MR may go once the window has.
	 * (With the MR named: rdma-core 44's rxe provider reads bind_info.mr unchecked.) */
	b.wr_id = 12;
	b.bind_info = (struct ibv_mw_bind_info){.mr = mr, .addr = win, .length = 0};
	cr_assert_eq(ibv_bind_mw(p.qp[1], mw, &b), 0, "unbind: %s", strerror(errno));
	expect_ok(p.cq[1], 12, IBV_WC_BIND_MW, NULL);
	post_read(p.qp[0], &d, win, mw->rkey, 8);
	expect(p.cq[0], 8, IBV_WC_REM_ACCESS_ERR, NULL);
	cr_assert_eq(ibv_dealloc_mw(mw), 0);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	mb_free(&s);
	mb_free(&d);
	pair_free(&p);
	free(mem);
}

/* Type 2 (IBA 10.6.7.2): bound by a work request to one QP, reached only through it, and
 * freed by a local invalidate on that QP or a SEND with Invalidate from its peer; the
 * completion says which R_Key was invalidated. A window bound to a destroyed QP is free. */
Test(verbs, memory_window_type2)
{
	struct pair p, q;
	struct mbuf s, r;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	struct ibv_sge rs;
	struct ibv_wc wc;
	uint8_t *mem;
	uint64_t win;
	uint32_t rk;

	cr_assert(dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B, "no type 2B windows");
	pair_make(&p, IBV_QPT_RC, NULL, 7);
	pair_make(&q, IBV_QPT_RC, NULL, 7);
	mb_make(&s, 4096);
	mb_make(&r, 4096);
	fill(s.p, 4096, 61);
	mr = mw_target(&mem);
	win = (uintptr_t)mem + 4096;
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	cr_assert_not_null(mw, "ibv_alloc_mw(type 2): %s", strerror(errno));
	cr_assert_eq(mw->type, IBV_MW_TYPE_2);
	cr_assert_eq(ibv_bind_mw(p.qp[1], mw, &(struct ibv_mw_bind){0}), EINVAL,
		     "ibv_bind_mw of a type 2 window");

	rk = post_bind2(p.qp[1], mw, mr, win, 1024, 20);
	expect_ok(p.cq[1], 20, IBV_WC_BIND_MW, NULL);
	post_write(p.qp[0], &s, win + 8, rk, 1);
	expect_ok(p.cq[0], 1, IBV_WC_RDMA_WRITE, NULL);
	cr_assert_eq(memcmp(mem + 4096 + 8, s.p, 256), 0, "the WRITE did not land");
	/* Another connection of the same PD may not use it. */
	post_write(q.qp[0], &s, win + 8, rk, 2);
	expect(q.cq[0], 2, IBV_WC_REM_ACCESS_ERR, NULL);
	pair_free(&q);

	/* SEND with Invalidate from the peer frees it. */
	rs = sge_of(&r, 0, 4096);
	post_recv_ok(p.qp[1], &rs, 1, 30);
	post_inv(p.qp[0], IBV_WR_SEND_WITH_INV, rk, &s, 3);
	expect_ok(p.cq[0], 3, IBV_WC_SEND, NULL);
	expect_ok(p.cq[1], 30, IBV_WC_RECV, &wc);
	/* Linux 6.1's rxe writes the kernel's IB_WC_WITH_INVALIDATE (1 << 2) into the
	 * completion, which verbs reads as IBV_WC_IP_CSUM_OK; verbs' bit is 1 << 3. */
	cr_assert(wc.wc_flags & (vfx_reference() ? 1u << 2 : IBV_WC_WITH_INV), "wc_flags %#x",
		  wc.wc_flags);
	cr_assert_eq(wc.invalidated_rkey, rk);
	cr_assert_eq(wc.byte_len, 64);
	post_write(p.qp[0], &s, win + 8, rk, 4);
	expect(p.cq[0], 4, IBV_WC_REM_ACCESS_ERR, NULL);
	pair_free(&p);

	/* Bound again (free once more), then a local invalidate frees it. */
	pair_make(&p, IBV_QPT_RC, NULL, 7);
	rk = post_bind2(p.qp[1], mw, mr, win, 512, 21);
	expect_ok(p.cq[1], 21, IBV_WC_BIND_MW, NULL);
	post_write(p.qp[0], &s, win + 256, rk, 5);
	expect_ok(p.cq[0], 5, IBV_WC_RDMA_WRITE, NULL);
	post_inv(p.qp[1], IBV_WR_LOCAL_INV, rk, NULL, 22);
	expect_ok(p.cq[1], 22, IBV_WC_LOCAL_INV, NULL);
	post_write(p.qp[0], &s, win + 256, rk, 6);
	expect(p.cq[0], 6, IBV_WC_REM_ACCESS_ERR, NULL);
	pair_free(&p);

	/* Bound to a QP that is then destroyed: the window is free, and binds again (rxe
	 * keeps it bound to the QP that is gone, so it could never be bound again). */
	if (!vfx_reference()) {
		pair_make(&p, IBV_QPT_RC, NULL, 7);
		rk = post_bind2(p.qp[1], mw, mr, win, 512, 23);
		expect_ok(p.cq[1], 23, IBV_WC_BIND_MW, NULL);
		pair_free(&p);
	}
	pair_make(&p, IBV_QPT_RC, NULL, 7);
	rk = post_bind2(p.qp[1], mw, mr, win, 512, 24);
	expect_ok(p.cq[1], 24, IBV_WC_BIND_MW, NULL);
	/* A bound type 2 window cannot be bound again (o10-37.2.30). */
	post_bind2(p.qp[1], mw, mr, win, 512, 25);
	expect(p.cq[1], 25, IBV_WC_MW_BIND_ERR, NULL);
	mw->rkey = rk; /* the refused bind left the window as it was */
	pair_free(&p);

	if (!vfx_reference()) {
		/* A second local invalidate of a free window fails (rdma-core 44's rxe does
		 * not check the state here, and must not be driven into it). */
		pair_make(&p, IBV_QPT_RC, NULL, 7);
		post_inv(p.qp[1], IBV_WR_LOCAL_INV, rk, NULL, 26);
		expect(p.cq[1], 26, IBV_WC_LOC_QP_OP_ERR, NULL);
		pair_free(&p);
	}
	cr_assert_eq(ibv_dealloc_mw(mw), 0);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	mb_free(&s);
	mb_free(&r);
	free(mem);
}

/* The same through the extended post API: ibv_wr_bind_mw and ibv_wr_local_inv. */
Test(verbs, memory_window_qp_ex)
{
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV |
				  IBV_QP_EX_WITH_SEND_WITH_INV};
	struct ibv_cq *cq0, *cq1;
	struct ibv_qp *q0, *q1;
	struct ibv_qp_ex *x;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	struct mbuf s;
	uint8_t *mem;
	uint32_t rk;
	int rc;

	cq0 = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	cq1 = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	cr_assert(cq0 && cq1);
	qa.send_cq = qa.recv_cq = cq1;
	q1 = ibv_create_qp_ex(ctx, &qa);
	cr_assert_not_null(q1, "ibv_create_qp_ex: %s", strerror(errno));
	x = ibv_qp_to_qp_ex(q1);
	cr_assert_not_null(x);
	q0 = qp_make(IBV_QPT_RC, cq0, cq0, NULL, NULL);
	connect2(q0, q1, 7, 7);
	mb_make(&s, 4096);
	fill(s.p, 4096, 71);
	mr = mw_target(&mem);
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	cr_assert_not_null(mw, "ibv_alloc_mw: %s", strerror(errno));
	rk = ibv_inc_rkey(mw->rkey);

	ibv_wr_start(x);
	x->wr_id = 40;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(x, mw, rk,
		       &(struct ibv_mw_bind_info){.mr = mr, .addr = (uintptr_t)mem,
						  .length = 4096, .mw_access_flags = MW_ACC});
	rc = ibv_wr_complete(x);
	cr_assert_eq(rc, 0, "ibv_wr_complete(bind): %d", rc);
	expect_ok(cq1, 40, IBV_WC_BIND_MW, NULL);
	post_write(q0, &s, (uintptr_t)mem + 1000, rk, 1);
	expect_ok(cq0, 1, IBV_WC_RDMA_WRITE, NULL);
	cr_assert_eq(memcmp(mem + 1000, s.p, 256), 0, "the WRITE did not land");

	ibv_wr_start(x);
	x->wr_id = 41;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(x, rk);
	rc = ibv_wr_complete(x);
	cr_assert_eq(rc, 0, "ibv_wr_complete(local_inv): %d", rc);
	expect_ok(cq1, 41, IBV_WC_LOCAL_INV, NULL);
	post_write(q0, &s, (uintptr_t)mem + 1000, rk, 2);
	expect(cq0, 2, IBV_WC_REM_ACCESS_ERR, NULL);

	cr_assert_eq(ibv_destroy_qp(q0), 0);
	cr_assert_eq(ibv_destroy_qp(q1), 0);
	cr_assert_eq(ibv_dealloc_mw(mw), 0);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	cr_assert_eq(ibv_destroy_cq(cq0), 0);
	cr_assert_eq(ibv_destroy_cq(cq1), 0);
	mb_free(&s);
	free(mem);
}
