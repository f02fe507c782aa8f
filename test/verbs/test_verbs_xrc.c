/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * XRC (suite xrc): domains, XRC SRQs, target and initiator QPs, shared between contexts
 * through a file.
 * One file of test_verbs_api (verbs_api_fixture.h).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_api_fixture.h"

/* ---------------------------------------------------------------- XRC */

/* Linux rxe has no XRC: the suite is uroce's alone (the reference runs verbs/ cases). */
static void xrc_init(void)
{
	suite_init();
}

TestSuite(xrc, .init = xrc_init, .fini = suite_fini, .timeout = 60);

/* An XRC domain of @p c: of the file @p fd with @p oflags, or the context's own (fd -1). */
struct ibv_xrcd *xrcd_open(struct ibv_context *c, int fd, int oflags)
{
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = fd,
		.oflags = oflags,
	};

	return ibv_open_xrcd(c, &xa);
}

static struct ibv_srq *xrc_srq_make(struct ibv_context *c, struct ibv_pd *p, struct ibv_xrcd *x,
				    struct ibv_cq *cq)
{
	struct ibv_srq_init_attr_ex sa = {
		.attr = {.max_wr = 16, .max_sge = 1},
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
		.pd = p,
		.xrcd = x,
		.cq = cq,
	};
	struct ibv_srq *srq = ibv_create_srq_ex(c, &sa);

	cr_assert_not_null(srq, "ibv_create_srq_ex(XRC): %s", strerror(errno));
	return srq;
}

static struct ibv_qp *xrc_tgt_make(struct ibv_context *c, struct ibv_xrcd *x)
{
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = x,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(c, &qa);

	cr_assert_not_null(qp, "XRC target QP: %s", strerror(errno));
	return qp;
}

static struct ibv_qp *xrc_ini_make(struct ibv_cq *scq)
{
	struct ibv_qp_init_attr ia = {.send_cq = scq,
				      .qp_type = IBV_QPT_XRC_SEND,
				      .cap = {.max_send_wr = 16, .max_send_sge = 1},
				      .sq_sig_all = 1};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	cr_assert_not_null(qp, "XRC initiator QP: %s", strerror(errno));
	cr_expect_eq(ia.cap.max_recv_wr, 0);
	return qp;
}

static uint32_t srq_num(struct ibv_srq *srq)
{
	uint32_t n = 0;

	cr_assert_eq(ibv_get_srq_num(srq, &n), 0);
	cr_assert_neq(n, 0);
	return n;
}

/* SENDs land in the SRQ each names and complete on that SRQ's CQ; RDMA and atomics reach
 * memory through the named SRQ's PD; the wire is the daemon's loopback. */
Test(xrc, sends_go_to_the_named_srq_and_rdma_uses_its_pd)
{
	struct ibv_cq *scq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_cq *cq1 = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_cq *cq2 = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	struct ibv_xrcd *x = xrcd_open(ctx, -1, O_CREAT);
	struct ibv_srq *s1, *s2;
	struct ibv_qp *ini, *tgt;
	struct mbuf src, r1, r2;
	uint8_t *mem2 = aligned_alloc(4096, 4096);
	struct ibv_mr *mr2;
	struct ibv_wc wc;
	uint64_t v = 40;

	cr_assert(scq && cq1 && cq2 && pd2 && mem2);
	cr_assert_not_null(x, "ibv_open_xrcd: %s", strerror(errno));
	s1 = xrc_srq_make(ctx, pd, x, cq1);
	s2 = xrc_srq_make(ctx, pd2, x, cq2);
	cr_expect_neq(srq_num(s1), srq_num(s2));
	tgt = xrc_tgt_make(ctx, x);
	ini = xrc_ini_make(scq);
	connect2(ini, tgt, 7, 7);
	mb_make(&src, 8192);
	mb_make(&r1, 8192);
	memset(mem2, 0, 4096);
	mr2 = ibv_reg_mr(pd2, mem2, 4096, ACC_ALL);
	cr_assert_not_null(mr2);
	{
		struct ibv_sge sg = sge_of(&r1, 0, 8192);
		struct ibv_sge sg2 = {.addr = (uintptr_t)mem2, .length = 1024, .lkey = mr2->lkey};
		struct ibv_recv_wr rw = {.wr_id = 22, .sg_list = &sg2, .num_sge = 1}, *bad;

		post_srq_recv_ok(s1, &sg, 11);
		cr_assert_eq(ibv_post_srq_recv(s2, &rw, &bad), 0);
	}
	fill(src.p, 8192, 5);
	{
		/* 5000 bytes (several packets) to s1, 100 to s2 with an immediate */
		struct ibv_sge a = sge_of(&src, 0, 5000), b = sge_of(&src, 5000, 100);
		struct ibv_send_wr w2 = {.wr_id = 2, .sg_list = &b, .num_sge = 1,
					 .opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htonl(7)};
		struct ibv_send_wr w1 = {.wr_id = 1, .sg_list = &a, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .next = &w2};

		w1.qp_type.xrc.remote_srqn = srq_num(s1);
		w2.qp_type.xrc.remote_srqn = srq_num(s2);
		post_send_ok(ini, &w1);
	}
	expect_ok(scq, 1, IBV_WC_SEND, NULL);
	expect_ok(scq, 2, IBV_WC_SEND, NULL);
	expect_ok(cq1, 11, IBV_WC_RECV, &wc);
	cr_expect_eq(wc.byte_len, 5000);
	cr_expect_eq(wc.qp_num, tgt->qp_num);
	cr_expect_eq(memcmp(r1.p, src.p, 5000), 0);
	expect_ok(cq2, 22, IBV_WC_RECV, &wc);
	cr_expect_eq(wc.byte_len, 100);
	cr_expect(wc.wc_flags & IBV_WC_WITH_IMM);
	cr_expect_eq(ntohl(wc.imm_data), 7);
	cr_expect_eq(memcmp(mem2, (uint8_t *)src.p + 5000, 100), 0);
	expect_none(cq1, 10);

	/* RDMA WRITE and FETCH_ADD into pd2's memory, naming s2 (pd2's SRQ): they work */
	{
		struct ibv_sge a = sge_of(&src, 0, 256), f = sge_of(&src, 4096, 8);
		struct ibv_send_wr ww = {.wr_id = 3, .sg_list = &a, .num_sge = 1,
					 .opcode = IBV_WR_RDMA_WRITE,
					 .wr.rdma = {.remote_addr = (uintptr_t)mem2 + 1024,
						     .rkey = mr2->rkey}};
		struct ibv_send_wr fa = {.wr_id = 4, .sg_list = &f, .num_sge = 1,
					 .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
					 .wr.atomic = {.remote_addr = (uintptr_t)mem2 + 2048,
						       .rkey = mr2->rkey, .compare_add = 2}};

		memcpy(mem2 + 2048, &v, 8);
		ww.qp_type.xrc.remote_srqn = fa.qp_type.xrc.remote_srqn = srq_num(s2);
		ww.next = &fa;
		post_send_ok(ini, &ww);
		expect_ok(scq, 3, IBV_WC_RDMA_WRITE, NULL);
		expect_ok(scq, 4, IBV_WC_FETCH_ADD, NULL);
		cr_expect_eq(memcmp(mem2 + 1024, src.p, 256), 0);
		memcpy(&v, (uint8_t *)src.p + 4096, 8);
		cr_expect_eq(v, 40);
		memcpy(&v, mem2 + 2048, 8);
		cr_expect_eq(v, 42);
	}
	/* ... and naming s1 (pd's SRQ), pd2's R_Key is no key: remote access error */
	{
		struct ibv_sge a = sge_of(&src, 0, 64);
		struct ibv_send_wr ww = {.wr_id = 5, .sg_list = &a, .num_sge = 1,
					 .opcode = IBV_WR_RDMA_WRITE,
					 .wr.rdma = {.remote_addr = (uintptr_t)mem2,
						     .rkey = mr2->rkey}};

		ww.qp_type.xrc.remote_srqn = srq_num(s1);
		post_send_ok(ini, &ww);
		expect(scq, 5, IBV_WC_REM_ACCESS_ERR, NULL);
	}
	/* the domain stays while something is in it */
	cr_expect_eq(ibv_close_xrcd(x), EBUSY);
	cr_assert_eq(ibv_destroy_qp(ini), 0);
	cr_assert_eq(ibv_destroy_qp(tgt), 0);
	cr_assert_eq(ibv_destroy_srq(s1), 0);
	cr_assert_eq(ibv_destroy_srq(s2), 0);
	cr_assert_eq(ibv_close_xrcd(x), 0);
	cr_assert_eq(ibv_dereg_mr(mr2), 0);
	free(mem2);
	mb_free(&src);
	mb_free(&r1);
	(void)r2;
	cr_assert_eq(ibv_dealloc_pd(pd2), 0);
	cr_assert_eq(ibv_destroy_cq(scq), 0);
	cr_assert_eq(ibv_destroy_cq(cq1), 0);
	cr_assert_eq(ibv_destroy_cq(cq2), 0);
}

/* A second context of the device (another process, to the daemon), with a PD, a CQ and
 * 4 KiB of memory registered in that PD: the receiving side of the sharing cases. */
struct xrc_peer {
	struct ibv_context *c;
	struct ibv_pd *pd;
	struct ibv_cq *rcq;
	uint8_t *mem;
	struct ibv_mr *mr;
};

static void xrc_peer_open(struct xrc_peer *p)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	cr_assert_not_null(list);
	p->c = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	cr_assert_not_null(p->c);
	p->pd = ibv_alloc_pd(p->c);
	p->rcq = ibv_create_cq(p->c, 8, NULL, NULL, 0);
	p->mem = aligned_alloc(4096, 4096);
	cr_assert(p->pd && p->rcq && p->mem);
	memset(p->mem, 0, 4096);
	p->mr = ibv_reg_mr(p->pd, p->mem, 4096, ACC_ALL);
	cr_assert_not_null(p->mr);
}

static void xrc_peer_close(struct xrc_peer *p)
{
	cr_assert_eq(ibv_dereg_mr(p->mr), 0);
	free(p->mem);
	cr_assert_eq(ibv_destroy_cq(p->rcq), 0);
	cr_assert_eq(ibv_dealloc_pd(p->pd), 0);
	cr_assert_eq(ibv_close_device(p->c), 0);
}

/* Two contexts that open the same file share its domain: an SRQ of one is filled
 * through the other's target QP. O_CREAT | O_EXCL on an existing domain, and no O_CREAT
 * on a file without one, are EINVAL (the kernel's uverbs rules). */
Test(xrc, a_file_names_one_domain_for_every_context)
{
	char path[] = "/tmp/uroce-xrcd-XXXXXX";
	int fd = mkstemp(path), fd2;
	struct ibv_cq *scq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct xrc_peer p2;
	struct ibv_context *c2;
	struct ibv_xrcd *x1, *x2;
	struct ibv_srq *srq2;
	struct ibv_qp *ini, *tgt1;
	struct mbuf src;
	struct ibv_wc wc;

	cr_assert(fd >= 0 && scq);
	xrc_peer_open(&p2);
	c2 = p2.c;
	fd2 = open(path, O_RDONLY);
	cr_assert_geq(fd2, 0);
	errno = 0;
	cr_expect_null(xrcd_open(ctx, fd, 0), "a domain without O_CREAT");
	cr_expect_eq(errno, EAGAIN, "the kernel's errno: %s", strerror(errno));
	x1 = xrcd_open(ctx, fd, O_CREAT);
	cr_assert_not_null(x1, "ibv_open_xrcd: %s", strerror(errno));
	errno = 0;
	cr_expect_null(xrcd_open(c2, fd2, O_CREAT | O_EXCL), "O_EXCL on an existing domain");
	cr_expect_eq(errno, EINVAL);
	x2 = xrcd_open(c2, fd2, 0); /* another descriptor of the same file: the same domain */
	cr_assert_not_null(x2, "ibv_open_xrcd (second context): %s", strerror(errno));

	srq2 = xrc_srq_make(c2, p2.pd, x2, p2.rcq); /* the second context's SRQ */
	tgt1 = xrc_tgt_make(ctx, x1);               /* the first context's target QP */
	ini = xrc_ini_make(scq);
	connect2(ini, tgt1, 7, 7);
	{
		struct ibv_sge sg = {.addr = (uintptr_t)p2.mem, .length = 4096,
				     .lkey = p2.mr->lkey};
		struct ibv_recv_wr rw = {.wr_id = 9, .sg_list = &sg, .num_sge = 1}, *bad;

		cr_assert_eq(ibv_post_srq_recv(srq2, &rw, &bad), 0);
	}
	mb_make(&src, 4096);
	fill(src.p, 300, 3);
	{
		struct ibv_sge a = sge_of(&src, 0, 300);
		struct ibv_send_wr w = {.wr_id = 1, .sg_list = &a, .num_sge = 1,
					.opcode = IBV_WR_SEND};

		w.qp_type.xrc.remote_srqn = srq_num(srq2);
		post_send_ok(ini, &w);
	}
	expect_ok(scq, 1, IBV_WC_SEND, NULL);
	cr_assert_eq(poll_one(p2.rcq, &wc, WAIT_MS), 1);
	cr_expect_eq(wc.status, IBV_WC_SUCCESS);
	cr_expect_eq(wc.wr_id, 9);
	cr_expect_eq(wc.qp_num, tgt1->qp_num);
	cr_expect_eq(memcmp(p2.mem, src.p, 300), 0);

	/* the domain outlives the first context's handle while the second holds one */
	cr_assert_eq(ibv_destroy_qp(ini), 0);
	cr_assert_eq(ibv_destroy_qp(tgt1), 0);
	cr_assert_eq(ibv_close_xrcd(x1), 0);
	cr_expect_null(xrcd_open(ctx, fd, O_CREAT | O_EXCL), "the domain went with x1");
	x1 = xrcd_open(ctx, fd, 0);
	cr_assert_not_null(x1, "the domain is still the second context's");
	cr_assert_eq(ibv_close_xrcd(x1), 0);
	cr_assert_eq(ibv_destroy_srq(srq2), 0);
	cr_assert_eq(ibv_close_xrcd(x2), 0);
	errno = 0;
	cr_expect_null(xrcd_open(ctx, fd, 0), "the last handle took the domain");
	cr_expect_eq(errno, EAGAIN, "%s", strerror(errno));
	mb_free(&src);
	cr_assert_eq(ibv_destroy_cq(scq), 0);
	xrc_peer_close(&p2);
	close(fd);
	close(fd2);
	unlink(path);
}

/* What XRC objects refuse, with rdma-core's errnos. */
Test(xrc, errors)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_xrcd *x = xrcd_open(ctx, -1, O_CREAT);
	struct ibv_srq_init_attr_ex sa = {.attr = {.max_wr = 4, .max_sge = 1},
					  .comp_mask = IBV_SRQ_INIT_ATTR_TYPE |
						       IBV_SRQ_INIT_ATTR_PD |
						       IBV_SRQ_INIT_ATTR_XRCD,
					  .srq_type = IBV_SRQT_XRC,
					  .pd = pd,
					  .xrcd = x};
	struct ibv_xrcd_init_attr xa = {.comp_mask = IBV_XRCD_INIT_ATTR_FD, .fd = -1};
	struct ibv_qp_init_attr_ex qa = {.qp_type = IBV_QPT_XRC_RECV,
					 .comp_mask = IBV_QP_INIT_ATTR_XRCD};
	struct ibv_qp *ini, *tgt;
	struct ibv_srq *srq;
	struct mbuf b;
	uint32_t n = 77;

	cr_assert(cq && x);
	errno = 0;
	cr_expect_null(ibv_open_xrcd(ctx, &xa), "no IBV_XRCD_INIT_ATTR_OFLAGS");
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(ibv_create_srq_ex(ctx, &sa), "an XRC SRQ without a CQ");
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(ibv_create_qp_ex(ctx, &qa), "an XRC target without its XRCD");
	cr_expect_eq(errno, EINVAL);
	sa.comp_mask |= IBV_SRQ_INIT_ATTR_CQ;
	sa.cq = cq;
	srq = ibv_create_srq_ex(ctx, &sa);
	cr_assert_not_null(srq);
	tgt = xrc_tgt_make(ctx, x);
	ini = xrc_ini_make(cq);
	connect2(ini, tgt, 7, 7);
	mb_make(&b, 64);
	{
		struct ibv_sge sg = sge_of(&b, 0, 64);
		struct ibv_recv_wr rw = {.wr_id = 1, .sg_list = &sg, .num_sge = 1}, *bad;
		struct ibv_send_wr sw = {.wr_id = 2, .sg_list = &sg, .num_sge = 1,
					 .opcode = IBV_WR_SEND},
				   *sbad;

		/* neither QP has a receive queue; a target has no send queue */
		cr_expect_eq(ibv_post_recv(ini, &rw, &bad), EINVAL);
		cr_expect_eq(ibv_post_recv(tgt, &rw, &bad), EINVAL);
		cr_expect_eq(ibv_post_send(tgt, &sw, &sbad), EINVAL);
		/* an initiator binds no window and writes no Atomic Write (RC only) */
		sw.opcode = IBV_WR_ATOMIC_WRITE;
		cr_expect_eq(ibv_post_send(ini, &sw, &sbad), EINVAL);
	}
	/* an ordinary SRQ has no number: 0 */
	{
		struct ibv_srq_init_attr si = {.attr = {.max_wr = 2, .max_sge = 1}};
		struct ibv_srq *plain = ibv_create_srq(pd, &si);

		cr_assert_not_null(plain);
		cr_expect_eq(ibv_get_srq_num(plain, &n), 0);
		cr_expect_eq(n, 0);
		cr_assert_eq(ibv_destroy_srq(plain), 0);
	}
	/* ibv_open_qp: a target of this domain only, by its number, as a target */
	{
		struct ibv_xrcd *other = xrcd_open(ctx, -1, O_CREAT);
		struct ibv_qp_open_attr oa = {.comp_mask = IBV_QP_OPEN_ATTR_NUM |
							   IBV_QP_OPEN_ATTR_XRCD |
							   IBV_QP_OPEN_ATTR_TYPE,
					      .qp_num = ini->qp_num,
					      .xrcd = x,
					      .qp_type = IBV_QPT_XRC_RECV};

		cr_assert_not_null(other);
		errno = 0;
		cr_expect_null(ibv_open_qp(ctx, &oa), "an initiator opened");
		cr_expect_eq(errno, EINVAL);
		oa.qp_num = tgt->qp_num;
		oa.xrcd = other;
		errno = 0;
		cr_expect_null(ibv_open_qp(ctx, &oa), "a target opened through another domain");
		cr_expect_eq(errno, EINVAL);
		oa.xrcd = x;
		oa.qp_type = IBV_QPT_RC;
		errno = 0;
		cr_expect_null(ibv_open_qp(ctx, &oa), "a target opened as RC");
		cr_expect_eq(errno, EINVAL);
		oa.comp_mask = IBV_QP_OPEN_ATTR_NUM;
		errno = 0;
		cr_expect_null(ibv_open_qp(ctx, &oa), "no domain named");
		cr_expect_eq(errno, EINVAL);
		cr_assert_eq(ibv_close_xrcd(other), 0);
	}
	cr_expect_eq(ibv_close_xrcd(x), EBUSY);
	cr_assert_eq(ibv_destroy_qp(ini), 0);
	cr_assert_eq(ibv_destroy_qp(tgt), 0);
	cr_assert_eq(ibv_destroy_srq(srq), 0);
	cr_assert_eq(ibv_close_xrcd(x), 0);
	mb_free(&b);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

/* ibv_open_qp: another context gets a handle on a target QP of its domain; the QP lives
 * while any context holds it, whoever made it, and goes with the last handle. */
Test(xrc, a_target_qp_lives_while_any_context_holds_it)
{
	char path[] = "/tmp/uroce-xrcd-XXXXXX";
	int fd = mkstemp(path);
	struct ibv_cq *scq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct xrc_peer p2;
	struct ibv_context *c2;
	struct ibv_xrcd *x1, *x2;
	struct ibv_srq *srq2;
	struct ibv_qp *ini, *tgt1, *tgt2;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_qp_open_attr oa = {.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
						   IBV_QP_OPEN_ATTR_TYPE | IBV_QP_OPEN_ATTR_CONTEXT,
				      .qp_type = IBV_QPT_XRC_RECV,
				      .qp_context = &oa};
	struct mbuf src;
	struct ibv_wc wc;

	cr_assert(fd >= 0 && scq);
	xrc_peer_open(&p2);
	c2 = p2.c;
	x1 = xrcd_open(ctx, fd, O_CREAT);
	x2 = xrcd_open(c2, fd, 0);
	cr_assert(x1 && x2);
	srq2 = xrc_srq_make(c2, p2.pd, x2, p2.rcq);
	tgt1 = xrc_tgt_make(ctx, x1);
	ini = xrc_ini_make(scq);
	connect2(ini, tgt1, 7, 7);
	oa.qp_num = tgt1->qp_num;
	oa.xrcd = x2;
	tgt2 = ibv_open_qp(c2, &oa);
	cr_assert_not_null(tgt2, "ibv_open_qp: %s", strerror(errno));
	cr_expect_eq(tgt2->qp_num, tgt1->qp_num);
	cr_expect_eq(tgt2->qp_type, IBV_QPT_XRC_RECV);
	cr_expect_eq(tgt2->state, IBV_QPS_RTS);
	cr_expect_eq(tgt2->qp_context, &oa);
	cr_assert_eq(ibv_query_qp(tgt2, &qa, IBV_QP_STATE | IBV_QP_DEST_QPN, &qia), 0);
	cr_expect_eq(qa.dest_qp_num, ini->qp_num);
	mb_make(&src, 4096);
	fill(src.p, 4096, 8);
	/* its maker lets go: the second context's handle keeps it, and it still takes SENDs */
	cr_assert_eq(ibv_destroy_qp(tgt1), 0);
	for (int i = 0; i < 2; i++) {
		struct ibv_sge sg = {.addr = (uintptr_t)p2.mem + 2048 * i, .length = 2048,
				     .lkey = p2.mr->lkey};
		struct ibv_recv_wr rw = {.wr_id = 10 + i, .sg_list = &sg, .num_sge = 1}, *bad;
		struct ibv_sge a = sge_of(&src, 100 * i, 100);
		struct ibv_send_wr w = {.wr_id = 1 + i, .sg_list = &a, .num_sge = 1,
					.opcode = IBV_WR_SEND};

		cr_assert_eq(ibv_post_srq_recv(srq2, &rw, &bad), 0);
		w.qp_type.xrc.remote_srqn = srq_num(srq2);
		post_send_ok(ini, &w);
		expect_ok(scq, 1 + i, IBV_WC_SEND, NULL);
		cr_assert_eq(poll_one(p2.rcq, &wc, WAIT_MS), 1);
		cr_expect_eq(wc.status, IBV_WC_SUCCESS);
		cr_expect_eq(wc.wr_id, 10 + i);
		cr_expect_eq(wc.qp_num, tgt2->qp_num);
		cr_expect_eq(memcmp(p2.mem + 2048 * i, (uint8_t *)src.p + 100 * i, 100), 0);
		if (i == 0) {
			/* the holder may change it: RTS to RTS with a new minimum RNR timer */
			qa.min_rnr_timer = 2;
			cr_assert_eq(ibv_modify_qp(tgt2, &qa, IBV_QP_MIN_RNR_TIMER), 0);
		}
	}
	/* the domain is busy while the opened QP is in it; the last handle takes the QP */
	cr_expect_eq(ibv_close_xrcd(x2), EBUSY);
	cr_assert_eq(ibv_destroy_qp(tgt2), 0);
	errno = 0;
	cr_expect_null(ibv_open_qp(c2, &oa), "the QP outlived its last handle");
	cr_expect_eq(errno, EINVAL);
	cr_assert_eq(ibv_destroy_qp(ini), 0);
	cr_assert_eq(ibv_destroy_srq(srq2), 0);
	cr_assert_eq(ibv_close_xrcd(x1), 0);
	cr_assert_eq(ibv_close_xrcd(x2), 0);
	mb_free(&src);
	cr_assert_eq(ibv_destroy_cq(scq), 0);
	xrc_peer_close(&p2);
	close(fd);
	unlink(path);
}
