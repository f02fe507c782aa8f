/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared receive queues: receives through an SRQ, ibv_modify_srq's size and limit, a
 * full SRQ reposted after each completion, and the limit's async event.
 * One file of test_verbs_api (verbs_api_fixture.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "verbs_api_fixture.h"

/* ---------------------------------------------------------------- SRQ */

Test(verbs, srq_receives)
{
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 2}};
	struct ibv_srq_attr q;
	struct qp_opt o = {.max_send_wr = 16, .max_send_sge = 2, .max_inline = 0};
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	struct ibv_qp *qa, *qb, *qc;
	struct mbuf s, r;
	struct ibv_sge sg[3], ss;
	struct ibv_recv_wr rw = {.wr_id = 99, .sg_list = sg, .num_sge = 3}, *bad = NULL;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	int i, rc;

	srq = ibv_create_srq(pd, &sa);
	cr_assert_not_null(srq, "ibv_create_srq: %s", strerror(errno));
	cr_assert_geq(sa.attr.max_wr, 16);
	cr_assert_eq(srq->context, ctx);
	cr_assert_eq(srq->pd, pd);
	cr_assert_eq(ibv_query_srq(srq, &q), 0);
	cr_assert_geq(q.max_wr, 16);
	cr_assert_eq(q.srq_limit, 0);
	o.srq = srq;
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	cr_assert_not_null(cq);
	/* qa sends; qb and qc receive from the same SRQ. qa <-> qb, and qc <-> qa would
	 * need a second sender: qc is connected to a second sender of its own. */
	qa = qp_make(IBV_QPT_RC, cq, cq, &o, NULL);
	qb = qp_make(IBV_QPT_RC, cq, cq, &o, NULL);
	connect2(qa, qb, 7, 7);
	{
		struct ibv_qp *qd = qp_make(IBV_QPT_RC, cq, cq, &o, NULL);

		qc = qp_make(IBV_QPT_RC, cq, cq, &o, NULL);
		connect2(qd, qc, 7, 7);
		mb_make(&s, 4096);
		mb_make(&r, 8 * 1024);
		fill(s.p, 4096, 31);
		/* Too many SGEs for the SRQ: EINVAL, bad_wr names the WR. */
		for (i = 0; i < 3; i++)
			sg[i] = sge_of(&r, 0, 8);
		errno = 0;
		rc = ibv_post_srq_recv(srq, &rw, &bad);
		cr_assert_eq(rc, EINVAL, "post_srq_recv with 3 SGEs (max 2): %d", rc);
		cr_assert_eq(bad, &rw);
		/* Four receives, taken in order by whichever QP gets a message. */
		for (i = 0; i < 4; i++) {
			sg[0] = sge_of(&r, (size_t)i * 1024, 1024);
			post_srq_recv_ok(srq, sg, 1000 + (uint64_t)i);
		}
		for (i = 0; i < 4; i++) {
			struct ibv_qp *from = i % 2 ? qd : qa, *to = i % 2 ? qc : qb;
			struct ibv_wc w2[2];
			int got = 0, k, sends = 0, recvs = 0;

			ss = sge_of(&s, (size_t)i * 100, 500);
			wr = (struct ibv_send_wr){.wr_id = 10 + (uint64_t)i,
						  .sg_list = &ss,
						  .num_sge = 1,
						  .opcode = IBV_WR_SEND,
						  .send_flags = IBV_SEND_SIGNALED};
			post_send_ok(from, &wr);
			while (got < 2) {
				cr_assert_eq(poll_one(cq, &w2[got], WAIT_MS), 1, "message %d", i);
				got++;
			}
			for (k = 0; k < 2; k++) {
				cr_assert_eq(w2[k].status, IBV_WC_SUCCESS, "%s",
					     ibv_wc_status_str(w2[k].status));
				if (w2[k].opcode == IBV_WC_SEND) {
					sends++;
					cr_assert_eq(w2[k].wr_id, 10 + (uint64_t)i);
					cr_assert_eq(w2[k].qp_num, from->qp_num);
				} else {
					recvs++;
					wc = w2[k];
				}
			}
			cr_assert_eq(sends, 1);
			cr_assert_eq(recvs, 1);
			cr_assert_eq(wc.opcode, IBV_WC_RECV);
			cr_assert_eq(wc.wr_id, 1000 + (uint64_t)i, "SRQ WQEs are taken in order");
			cr_assert_eq(wc.qp_num, to->qp_num, "receive completion names its QP");
			cr_assert_eq(wc.byte_len, 500);
			cr_assert_eq(memcmp(r.p + (size_t)i * 1024, s.p + (size_t)i * 100, 500), 0);
		}
		/* An SRQ in use cannot be destroyed. */
		errno = 0;
		rc = ibv_destroy_srq(srq);
		cr_assert_eq(rc, EBUSY, "destroy of an SRQ in use: %d", rc);
		cr_assert_eq(ibv_destroy_qp(qd), 0);
	}
	cr_assert_eq(ibv_destroy_qp(qa), 0);
	cr_assert_eq(ibv_destroy_qp(qb), 0);
	cr_assert_eq(ibv_destroy_qp(qc), 0);
	cr_assert_eq(ibv_destroy_srq(srq), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
	mb_free(&s);
	mb_free(&r);
}

/* Posts receives of 64 bytes each at @p r's offset id * 64 until one fails; its errno. */
static int srq_fill(struct ibv_srq *srq, struct mbuf *r, uint64_t first, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge sg = sge_of(r, (size_t)((first + (uint64_t)i) % 64) * 64, 64);
		struct ibv_recv_wr rw = {.wr_id = first + (uint64_t)i, .sg_list = &sg,
					 .num_sge = 1};
		struct ibv_recv_wr *bad = NULL;
		int rc = ibv_post_srq_recv(srq, &rw, &bad);

		if (rc)
			return rc;
	}
	return 0;
}

/* @p n SENDs of 8 bytes from @p qa, each received from the SRQ by qb in posting order. */
static void srq_deliver(struct ibv_qp *qa, struct ibv_cq *cq, struct mbuf *s, uint64_t first,
			int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge ss = sge_of(s, 0, 8);
		struct ibv_send_wr wr = {.wr_id = 5000 + (uint64_t)i, .sg_list = &ss,
					 .num_sge = 1, .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED};
		struct ibv_wc w[2];
		int recv = -1;

		post_send_ok(qa, &wr);
		for (int k = 0; k < 2; k++) {
			cr_assert_eq(poll_one(cq, &w[k], WAIT_MS), 1, "SEND %d", i);
			cr_assert_eq(w[k].status, IBV_WC_SUCCESS, "%s",
				     ibv_wc_status_str(w[k].status));
			if (w[k].opcode == IBV_WC_RECV)
				recv = k;
		}
		cr_assert_geq(recv, 0, "no receive completion for SEND %d", i);
		cr_assert_eq(w[recv].wr_id, first + (uint64_t)i, "SRQ WQEs out of order");
	}
}

/* ibv_modify_srq with IBV_SRQ_MAX_WR (the device says IBV_DEVICE_SRQ_RESIZE): grown, the
 * SRQ takes more posts; WQEs posted before a resize are received after it, in order; a
 * size below what it holds, 0 or above max_srq_wr is EINVAL and changes nothing. */
Test(verbs, srq_resize)
{
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
	struct qp_opt o = {.max_send_wr = 16, .max_send_sge = 1, .max_inline = 0};
	struct ibv_srq_attr q, a;
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	struct ibv_qp *qa, *qb;
	struct mbuf s, r;
	uint32_t size;

	cr_assert(dattr.device_cap_flags & IBV_DEVICE_SRQ_RESIZE);
	srq = ibv_create_srq(pd, &sa);
	cr_assert_not_null(srq, "ibv_create_srq: %s", strerror(errno));
	cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	cr_assert_not_null(cq);
	o.srq = srq;
	qa = qp_make(IBV_QPT_RC, cq, cq, &o, NULL);
	qb = qp_make(IBV_QPT_RC, cq, cq, &o, NULL);
	connect2(qa, qb, 7, 7);
	mb_make(&s, 4096);
	mb_make(&r, 4096);
	cr_assert_eq(ibv_query_srq(srq, &q), 0);
	size = q.max_wr;

	/* Full at its size; out-of-range sizes and a limit above the size refused. */
	cr_assert_eq(srq_fill(srq, &r, 0, (int)size), 0);
	cr_assert_eq(srq_fill(srq, &r, size, 1), ENOMEM, "a post beyond max_wr %u", size);
	a = (struct ibv_srq_attr){.max_wr = 0};
	cr_assert_eq(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), EINVAL);
	a.max_wr = (uint32_t)dattr.max_srq_wr + 1;
	cr_assert_eq(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), EINVAL);
	a = (struct ibv_srq_attr){.max_wr = size, .srq_limit = 4 * size};
	cr_assert_eq(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT), EINVAL);
	/* Below the WQEs it holds. */
	a = (struct ibv_srq_attr){.max_wr = size / 4};
	cr_assert_eq(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), EINVAL);
	cr_assert_eq(ibv_query_srq(srq, &q), 0);
	cr_assert_eq(q.max_wr, size, "a refused resize changed the size");

	/* Grown to 4x: room for 3x more, and every WQE, old and new, received in order. */
	a = (struct ibv_srq_attr){.max_wr = 4 * size};
	cr_assert_eq(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), 0, "grow: %s", strerror(errno));
	cr_assert_eq(ibv_query_srq(srq, &q), 0);
	cr_assert_geq(q.max_wr, 4 * size);
	cr_assert_eq(srq_fill(srq, &r, size, (int)(q.max_wr - size)), 0);
	cr_assert_eq(srq_fill(srq, &r, q.max_wr, 1), ENOMEM, "a post beyond max_wr %u", q.max_wr);
	srq_deliver(qa, cq, &s, 0, (int)q.max_wr);

	/* Shrunk back with some posted: they are received after it, in order. */
	cr_assert_eq(srq_fill(srq, &r, 0, 5), 0);
	a = (struct ibv_srq_attr){.max_wr = size};
	cr_assert_eq(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR), 0, "shrink: %s", strerror(errno));
	cr_assert_eq(ibv_query_srq(srq, &q), 0);
	cr_assert_eq(q.max_wr, size);
	cr_assert_eq(srq_fill(srq, &r, 5, (int)size - 5), 0);
	cr_assert_eq(srq_fill(srq, &r, size, 1), ENOMEM);
	srq_deliver(qa, cq, &s, 0, (int)size);

	cr_assert_eq(ibv_destroy_qp(qa), 0);
	cr_assert_eq(ibv_destroy_qp(qb), 0);
	cr_assert_eq(ibv_destroy_srq(srq), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
	mb_free(&s);
	mb_free(&r);
}

/* A receive completion frees its SRQ slot for the application that polled it: with the
 * SRQ full, every completion is followed at once by one more post, which must find room
 * (UCX's rc_verbs reposts so, and stopped with ENOMEM when the daemon published the SRQ's
 * retired count after the completion). */
Test(verbs, srq_full_repost_after_each_completion)
{
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 64, .max_sge = 1}};
	struct qp_opt o = {.max_send_wr = 64, .max_send_sge = 1};
	struct ibv_srq *srq;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qa, *qb;
	struct mbuf s, r;
	struct ibv_sge sg, ss;
	struct ibv_recv_wr rw[16], *bad = NULL;
	struct ibv_send_wr wr;
	struct ibv_wc wc[16];
	uint64_t t0;
	uint32_t n, got;
	int i, k, m, rc;

	srq = ibv_create_srq(pd, &sa);
	cr_assert_not_null(srq, "ibv_create_srq: %s", strerror(errno));
	n = sa.attr.max_wr;
	o.srq = srq;
	scq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	cr_assert(scq && rcq);
	qa = qp_make(IBV_QPT_RC, scq, scq, &o, NULL);
	qb = qp_make(IBV_QPT_RC, scq, rcq, &o, NULL);
	connect2(qa, qb, 7, 7);
	mb_make(&s, 64);
	mb_make(&r, 64);
	sg = sge_of(&r, 0, 64);
	for (uint32_t j = 0; j < n; j++)
		post_srq_recv_ok(srq, &sg, j);
	rw[0] = (struct ibv_recv_wr){.wr_id = n, .sg_list = &sg, .num_sge = 1};
	rc = ibv_post_srq_recv(srq, &rw[0], &bad);
	cr_assert_eq(rc, ENOMEM, "a post to a full SRQ of %u: %d", n, rc);
	/* Bursts of 16 messages; each poll that finds completions is followed at once by
	 * as many receives, in one chain, as a poller that keeps its SRQ full does. */
	for (i = 0; i < 100; i++) {
		ss = sge_of(&s, 0, 8);
		for (k = 0; k < 16; k++) {
			wr = (struct ibv_send_wr){.wr_id = (uint64_t)k, .sg_list = &ss,
						  .num_sge = 1, .opcode = IBV_WR_SEND,
						  .send_flags = IBV_SEND_SIGNALED};
			post_send_ok(qa, &wr);
		}
		t0 = now_ms();
		for (got = 0; got < 16;) {
			m = ibv_poll_cq(rcq, 16, wc);
			cr_assert_geq(m, 0);
			cr_assert_lt(now_ms() - t0, (uint64_t)WAIT_MS, "burst %d: %u of 16", i,
				     got);
			if (m == 0)
				continue;
			for (k = 0; k < m; k++) {
				cr_assert_eq(wc[k].status, IBV_WC_SUCCESS);
				rw[k] = (struct ibv_recv_wr){.wr_id = n + got + (uint64_t)k,
							     .sg_list = &sg, .num_sge = 1,
							     .next = k + 1 < m ? &rw[k + 1] : NULL};
			}
			rc = ibv_post_srq_recv(srq, rw, &bad);
			cr_assert_eq(rc, 0, "burst %d: repost of %d right after they completed: %s",
				     i, m, strerror(rc));
			got += (uint32_t)m;
		}
		for (k = 0; k < 16; k++) {
			cr_assert_eq(poll_one(scq, &wc[0], WAIT_MS), 1, "send %d", k);
			cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
		}
	}
	cr_assert_eq(ibv_destroy_qp(qa), 0);
	cr_assert_eq(ibv_destroy_qp(qb), 0);
	cr_assert_eq(ibv_destroy_srq(srq), 0);
	cr_assert_eq(ibv_destroy_cq(scq), 0);
	cr_assert_eq(ibv_destroy_cq(rcq), 0);
	mb_free(&s);
	mb_free(&r);
}

/* IBV_SRQ_LIMIT armed: the event comes once when fewer WQEs than the limit remain,
 * through the async fd (poll-able, O_NONBLOCK gives EAGAIN), and disarms the limit. */
Test(verbs, srq_limit_async_event)
{
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
	struct ibv_srq_attr q = {.srq_limit = 2};
	struct qp_opt o = {.max_send_wr = 16, .max_send_sge = 1};
	struct ibv_srq *srq;
	struct pair p;
	struct ibv_async_event ev;
	struct mbuf s, r;
	struct ibv_sge sg, ss;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	int i, rc, fl;

	srq = ibv_create_srq(pd, &sa);
	cr_assert_not_null(srq);
	/* A limit beyond the SRQ's size: EINVAL. */
	cr_assert_eq(ibv_query_srq(srq, &q), 0);
	q.srq_limit = q.max_wr * 4 + 1000;
	rc = ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT);
	cr_assert_eq(rc, EINVAL, "srq_limit %u > max_wr %u: %d", q.srq_limit, q.max_wr, rc);
	q.srq_limit = 2;
	rc = ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT);
	cr_assert_eq(rc, 0, "ibv_modify_srq(IBV_SRQ_LIMIT): %s", strerror(rc));
	cr_assert_eq(ibv_query_srq(srq, &q), 0);
	cr_assert_eq(q.srq_limit, 2);

	/* Non-blocking async fd: nothing pending is EAGAIN. */
	fl = fcntl(ctx->async_fd, F_GETFL);
	cr_assert_geq(fl, 0, "async_fd is not a file descriptor");
	cr_assert_eq(fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK), 0);
	errno = 0;
	cr_assert_eq(ibv_get_async_event(ctx, &ev), -1);
	cr_expect_eq(errno, EAGAIN, "errno %d, want EAGAIN", errno);

	o.srq = srq;
	pair_make(&p, IBV_QPT_RC, &o, 7);
	mb_make(&s, 4096);
	mb_make(&r, 4096);
	for (i = 0; i < 4; i++) {
		sg = sge_of(&r, (size_t)i * 64, 64);
		post_srq_recv_ok(srq, &sg, 100 + (uint64_t)i);
	}
	ss = sge_of(&s, 0, 32);
	for (i = 0; i < 4; i++) {
		wr = (struct ibv_send_wr){.wr_id = (uint64_t)i, .sg_list = &ss, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};
		post_send_ok(p.qp[0], &wr);
		expect_ok(p.cq[0], (uint64_t)i, IBV_WC_SEND, NULL);
		expect_ok(p.cq[1], 100 + (uint64_t)i, IBV_WC_RECV, &wc);
		if (i < 2) {
			/* 3, then 2 WQEs left: not below the limit yet. */
			expect_no_async(100);
		} else if (i == 2) {
			/* 1 left: below 2. */
			expect_async(IBV_EVENT_SRQ_LIMIT_REACHED, &ev, WAIT_MS);
			cr_assert_eq(ev.element.srq, srq);
			ibv_ack_async_event(&ev);
			cr_assert_eq(ibv_query_srq(srq, &q), 0);
			cr_assert_eq(q.srq_limit, 0, "the limit is disarmed by its event");
		} else {
			expect_no_async(100); /* once only */
		}
	}
	pair_free(&p);
	cr_assert_eq(ibv_destroy_srq(srq), 0, "destroy after the event was acked");
	mb_free(&s);
	mb_free(&r);
}
