/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CQs: ibv_resize_cq, completion channels and their events, the extended CQ
 * (ibv_start_poll), and the CQ wait policy (suite cq_wait).
 * One file of test_verbs_api (verbs_api_fixture.h).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_api_fixture.h"

/* ibv_resize_cq: grown and shrunk while completions wait in it, they come out in order
 * and complete; an armed CQ stays armed across it; too small or out of range is EINVAL
 * and changes nothing. */
Test(verbs, resize_cq)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *scq, *rcq, *ev_cq = NULL;
	struct ibv_qp *qa, *qb;
	struct mbuf s, r;
	struct ibv_sge rs;
	struct pollfd pfd;
	void *ev_ctx = NULL;
	int i, cqe;

	cr_assert_not_null(ch);
	scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, 64, NULL, ch, 0);
	cr_assert(scq && rcq);
	qa = qp_make(IBV_QPT_RC, scq, scq, NULL, NULL);
	qb = qp_make(IBV_QPT_RC, scq, rcq, NULL, NULL);
	connect2(qa, qb, 7, 7);
	mb_make(&s, 4096);
	mb_make(&r, 4096);

	/* Out of range: EINVAL (rdma-core returns the errno; errno set too). */
	cqe = scq->cqe;
	errno = 0;
	cr_assert_eq(ibv_resize_cq(scq, 0), EINVAL);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(ibv_resize_cq(scq, dattr.max_cqe + 1), EINVAL);
	cr_assert_eq(scq->cqe, cqe);

	/* 20 WRITEs, the CQ grown then shrunk under them before a single poll: every
	 * completion comes out, in order. */
	for (i = 0; i < 20; i++)
		post_write(qa, &s, (uintptr_t)r.p + 128 * (unsigned)i, r.mr->rkey,
			   100 + (unsigned)i);
	cr_assert_eq(ibv_resize_cq(scq, 1000), 0, "grow: %s", strerror(errno));
	cr_assert_geq(scq->cqe, 1000);
	cr_assert_eq(ibv_resize_cq(scq, 24), 0, "shrink: %s", strerror(errno));
	cr_assert_geq(scq->cqe, 24);
	cr_assert_lt(scq->cqe, 1000, "cqe %d after shrinking to 24", scq->cqe);
	for (i = 0; i < 20; i++)
		expect_ok(scq, 100 + (unsigned)i, IBV_WC_RDMA_WRITE, NULL);
	expect_none(scq, 10);
	cr_assert_eq(memcmp(r.p, s.p, 256), 0);

	/* Armed, resized, then a receive: the event still comes. */
	cr_assert_eq(ibv_req_notify_cq(rcq, 0), 0);
	cr_assert_eq(ibv_resize_cq(rcq, 200), 0, "%s", strerror(errno));
	rs = sge_of(&r, 0, 64);
	post_recv_ok(qb, &rs, 1, 7);
	{
		struct ibv_sge ss = sge_of(&s, 0, 32);
		struct ibv_send_wr wr = {.wr_id = 8, .sg_list = &ss, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};

		post_send_ok(qa, &wr);
		expect_ok(scq, 8, IBV_WC_SEND, NULL);
	}
	pfd = (struct pollfd){.fd = ch->fd, .events = POLLIN};
	cr_assert_eq(poll(&pfd, 1, WAIT_MS), 1, "no event after the resize");
	cr_assert_eq(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	cr_assert_eq(ev_cq, rcq);
	ibv_ack_cq_events(ev_cq, 1);
	expect_ok(rcq, 7, IBV_WC_RECV, NULL);

	/* Smaller than what it holds: EINVAL, nothing lost. 20 SENDs, each acknowledged
	 * (the sender's completions, on the other CQ): a responder completes a receive
	 * before it acknowledges, so all 20 receive completions are in rcq then. */
	for (i = 0; i < 20; i++)
		post_recv_ok(qb, &rs, 1, 200 + (uint64_t)i);
	for (i = 0; i < 20; i++) {
		struct ibv_sge ss = sge_of(&s, 0, 16);
		struct ibv_send_wr wr = {.wr_id = 300 + (uint64_t)i, .sg_list = &ss, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};

		post_send_ok(qa, &wr);
	}
	for (i = 0; i < 20; i++)
		expect_ok(scq, 300 + (uint64_t)i, IBV_WC_SEND, NULL);
	if (!vfx_reference()) {
		cqe = rcq->cqe;
		cr_assert_eq(ibv_resize_cq(rcq, 4), EINVAL, "shrunk below its 20 completions");
		cr_assert_eq(rcq->cqe, cqe);
	}
	for (i = 0; i < 20; i++)
		expect_ok(rcq, 200 + (uint64_t)i, IBV_WC_RECV, NULL);
	expect_none(rcq, 10);

	mb_free(&s);
	mb_free(&r);
	cr_assert_eq(ibv_destroy_qp(qa), 0);
	cr_assert_eq(ibv_destroy_qp(qb), 0);
	cr_assert_eq(ibv_destroy_cq(scq), 0);
	cr_assert_eq(ibv_destroy_cq(rcq), 0);
	cr_assert_eq(ibv_destroy_comp_channel(ch), 0);
}

/* ---------------------------------------------------------------- events */

/* A completion event pending on a channel when its CQ is destroyed: the CQ made next on
 * the channel, in the freed handle, must not receive it (issue 45: what misdirected async
 * events could misdirect channel events too). */
Test(verbs, completion_event_of_a_destroyed_cq_names_no_new_cq)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *scq, *rcq, *ev_cq = NULL;
	struct pollfd pfd = {.events = POLLIN};
	struct ibv_qp *qa, *qb;
	struct ibv_send_wr wr;
	struct ibv_sge ss, rs;
	struct mbuf s, r;
	void *ev_ctx = NULL;
	int fl, rc;

	cr_assert_not_null(ch);
	pfd.fd = ch->fd;
	scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, 64, NULL, ch, 0);
	cr_assert_not_null(scq);
	cr_assert_not_null(rcq);
	qa = qp_make(IBV_QPT_RC, scq, scq, NULL, NULL);
	qb = qp_make(IBV_QPT_RC, scq, rcq, NULL, NULL);
	connect2(qa, qb, 7, 7);
	mb_make(&s, 4096);
	mb_make(&r, 4096);
	cr_assert_eq(ibv_req_notify_cq(rcq, 0), 0);
	rs = sge_of(&r, 0, 64);
	post_recv_ok(qb, &rs, 1, 10);
	ss = sge_of(&s, 0, 32);
	wr = (struct ibv_send_wr){.wr_id = 1, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED};
	post_send_ok(qa, &wr);
	cr_assert_eq(poll(&pfd, 1, WAIT_MS), 1, "no event on the channel");
	cr_assert_eq(ibv_destroy_qp(qa), 0);
	cr_assert_eq(ibv_destroy_qp(qb), 0);
	cr_assert_eq(ibv_destroy_cq(rcq), 0, "the event was never handed out: nothing to wait");
	rcq = ibv_create_cq(ctx, 64, NULL, ch, 0);
	cr_assert_not_null(rcq);
	fl = fcntl(ch->fd, F_GETFL);
	cr_assert_eq(fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
	errno = 0;
	rc = ibv_get_cq_event(ch, &ev_cq, &ev_ctx);
	cr_assert_eq(rc, -1, "a destroyed CQ's event came naming %s",
		     ev_cq == rcq ? "the new CQ" : "a CQ");
	cr_assert_eq(errno, EAGAIN, "errno %d (%s)", errno, strerror(errno));
	cr_assert_eq(ibv_destroy_cq(rcq), 0);
	cr_assert_eq(ibv_destroy_cq(scq), 0);
	cr_assert_eq(ibv_destroy_comp_channel(ch), 0);
	mb_free(&s);
	mb_free(&r);
}

Test(verbs, completion_channel)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *scq, *rcq, *ev_cq = NULL;
	struct ibv_qp *qa, *qb;
	struct mbuf s, r;
	struct ibv_sge ss, rs;
	struct ibv_send_wr wr;
	struct pollfd pfd;
	struct ibv_wc wc;
	void *ev_ctx = NULL;
	int cookie, fl, i;

	cr_assert_not_null(ch);
	cr_assert_eq(ch->context, ctx);
	scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, 64, &cookie, ch, 0);
	cr_assert_not_null(scq);
	cr_assert_not_null(rcq);
	cr_assert_eq(rcq->channel, ch);
	cr_assert_eq(rcq->cq_context, &cookie);
	qa = qp_make(IBV_QPT_RC, scq, scq, NULL, NULL);
	qb = qp_make(IBV_QPT_RC, scq, rcq, NULL, NULL);
	connect2(qa, qb, 7, 7);
	mb_make(&s, 4096);
	mb_make(&r, 4096);

	/* A real fd: non-blocking, nothing pending is -1/EAGAIN; poll says not readable. */
	fl = fcntl(ch->fd, F_GETFL);
	cr_assert_geq(fl, 0, "channel fd is not a file descriptor");
	cr_assert_eq(fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
	errno = 0;
	cr_assert_eq(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), -1);
	cr_expect_eq(errno, EAGAIN, "errno %d, want EAGAIN", errno);
	pfd = (struct pollfd){.fd = ch->fd, .events = POLLIN};
	cr_assert_eq(poll(&pfd, 1, 50), 0);

	/* Armed for the next completion: a receive wakes the channel. */
	cr_assert_eq(ibv_req_notify_cq(rcq, 0), 0);
	rs = sge_of(&r, 0, 64);
	for (i = 0; i < 3; i++)
		post_recv_ok(qb, &rs, 1, 10 + (uint64_t)i);
	ss = sge_of(&s, 0, 32);
	wr = (struct ibv_send_wr){.wr_id = 1, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED};
	post_send_ok(qa, &wr);
	cr_assert_eq(poll(&pfd, 1, WAIT_MS), 1, "no event on the channel");
	cr_assert_eq(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	cr_assert_eq(ev_cq, rcq);
	cr_assert_eq(ev_ctx, &cookie);
	ibv_ack_cq_events(ev_cq, 1);
	expect_ok(rcq, 10, IBV_WC_RECV, NULL);
	expect_ok(scq, 1, IBV_WC_SEND, NULL);
	/* Not armed again: a second receive signals nothing. */
	wr.wr_id = 2;
	post_send_ok(qa, &wr);
	expect_ok(scq, 2, IBV_WC_SEND, NULL);
	expect_ok(rcq, 11, IBV_WC_RECV, NULL);
	cr_assert_eq(poll(&pfd, 1, 100), 0, "event without arming");

	/* Solicited only: an unsolicited SEND does not wake, a solicited one does. */
	cr_assert_eq(ibv_req_notify_cq(rcq, 1), 0);
	wr.wr_id = 3;
	post_send_ok(qa, &wr);
	expect_ok(scq, 3, IBV_WC_SEND, NULL);
	expect_ok(rcq, 12, IBV_WC_RECV, NULL);
	cr_assert_eq(poll(&pfd, 1, 100), 0, "unsolicited receive woke a solicited-only CQ");
	post_recv_ok(qb, &rs, 1, 13);
	wr.wr_id = 4;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	post_send_ok(qa, &wr);
	cr_assert_eq(poll(&pfd, 1, WAIT_MS), 1, "a solicited receive did not wake the channel");
	cr_assert_eq(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	cr_assert_eq(ev_cq, rcq);
	ibv_ack_cq_events(ev_cq, 1);
	expect_ok(rcq, 13, IBV_WC_RECV, &wc);
	expect_ok(scq, 4, IBV_WC_SEND, NULL);

	cr_assert_eq(ibv_destroy_qp(qa), 0);
	cr_assert_eq(ibv_destroy_qp(qb), 0);
	cr_assert_eq(ibv_destroy_cq(rcq), 0, "destroy after every event was acked");
	cr_assert_eq(ibv_destroy_cq(scq), 0);
	cr_assert_eq(ibv_destroy_comp_channel(ch), 0);
	mb_free(&s);
	mb_free(&r);
}

/* ---------------------------------------------------------------- extended API */

Test(verbs, cq_ex_start_next_end_poll)
{
	struct ibv_cq_init_attr_ex ca = {.cqe = 64,
					 .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
						     IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP};
	struct ibv_poll_cq_attr pa = {.comp_mask = 0};
	struct ibv_cq_ex *cqx;
	struct ibv_cq *cq, *scq;
	struct ibv_qp *qa, *qb;
	struct mbuf s, r;
	struct ibv_sge ss, rs;
	struct ibv_send_wr wr;
	uint64_t t0;
	int i, rc, seen = 0;

	cqx = ibv_create_cq_ex(ctx, &ca);
	cr_assert_not_null(cqx, "ibv_create_cq_ex: %s", strerror(errno));
	cq = ibv_cq_ex_to_cq(cqx);
	cr_assert_eq(cq->context, ctx);
	scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	cr_assert_not_null(scq);
	qa = qp_make(IBV_QPT_RC, scq, scq, NULL, NULL);
	qb = qp_make(IBV_QPT_RC, scq, cq, NULL, NULL);
	connect2(qa, qb, 7, 7);
	mb_make(&s, 4096);
	mb_make(&r, 4096);
	fill(s.p, 4096, 77);

	/* Empty: ENOENT, and no end_poll. (rdma-core 44's rxe provider advances its index in
	 * end_poll after next_poll said ENOENT: the reference fails the last start_poll.) */
	rc = ibv_start_poll(cqx, &pa);
	cr_assert_eq(rc, ENOENT, "start_poll on an empty CQ: %d", rc);

	for (i = 0; i < 3; i++) {
		rs = sge_of(&r, (size_t)i * 1024, 1024);
		post_recv_ok(qb, &rs, 1, 20 + (uint64_t)i);
	}
	for (i = 0; i < 3; i++) {
		ss = sge_of(&s, (size_t)i * 100, 100 + (size_t)i);
		wr = (struct ibv_send_wr){.wr_id = (uint64_t)i,
					  .sg_list = &ss,
					  .num_sge = 1,
					  .opcode = IBV_WR_SEND_WITH_IMM,
					  .imm_data = htonl(0x900 + (uint32_t)i),
					  .send_flags = IBV_SEND_SIGNALED};
		post_send_ok(qa, &wr);
		expect_ok(scq, (uint64_t)i, IBV_WC_SEND, NULL);
	}
	t0 = now_ms();
	do {
		rc = ibv_start_poll(cqx, &pa);
		if (rc == ENOENT)
			sched_yield();
	} while (rc == ENOENT && now_ms() - t0 < WAIT_MS);
	cr_assert_eq(rc, 0, "ibv_start_poll: %d", rc);
	do {
		cr_assert_eq(cqx->status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(cqx->status));
		cr_assert_eq(cqx->wr_id, 20 + (uint64_t)seen);
		cr_assert_eq(ibv_wc_read_opcode(cqx), IBV_WC_RECV);
		cr_assert_eq(ibv_wc_read_byte_len(cqx), 100 + (uint32_t)seen);
		cr_assert(ibv_wc_read_wc_flags(cqx) & IBV_WC_WITH_IMM);
		cr_assert_eq(ntohl(ibv_wc_read_imm_data(cqx)), 0x900 + (uint32_t)seen);
		cr_assert_eq(ibv_wc_read_qp_num(cqx), qb->qp_num);
		cr_assert_eq(memcmp(r.p + (size_t)seen * 1024, s.p + (size_t)seen * 100,
				    100 + (size_t)seen), 0);
		seen++;
		if (seen == 3)
			break;
		t0 = now_ms();
		do {
			rc = ibv_next_poll(cqx);
		} while (rc == ENOENT && now_ms() - t0 < WAIT_MS);
		cr_assert_eq(rc, 0, "ibv_next_poll: %d", rc);
	} while (1);
	cr_assert_eq(ibv_next_poll(cqx), ENOENT);
	ibv_end_poll(cqx);
	cr_assert_eq(ibv_start_poll(cqx, &pa), ENOENT);

	cr_assert_eq(ibv_destroy_qp(qa), 0);
	cr_assert_eq(ibv_destroy_qp(qb), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
	cr_assert_eq(ibv_destroy_cq(scq), 0);
	mb_free(&s);
	mb_free(&r);
}


/* ---------------------------------------------------------------- the CQ wait policy */

/* UROCE_CQ_WAIT=block (lib/client, cq_wait.c): an empty poll_cq sleeps in the kernel
 * until the daemon commits a completion to any CQ of the context. Here the sleep may last
 * 10 s and begins at the first chance, so a wake-up that never comes fails the test by
 * time, and a poller that spins instead fails it by CPU time and poll count. */
static void cq_wait_block_init(void)
{
	setenv("UROCE_CQ_WAIT", "block", 1);
	setenv("UROCE_CQ_SPIN_US", "0", 1);
	setenv("UROCE_CQ_BLOCK_US", "10000000", 1);
	suite_init();
}

TestSuite(cq_wait, .init = cq_wait_block_init, .fini = suite_fini, .timeout = 60);

struct late_post {
	struct ibv_qp *qp;
	struct ibv_send_wr *wr;
	int rc;
};

/* Posts after 300 ms, from another thread: the poller has long been asleep by then. */
static void *late_post_run(void *arg)
{
	struct late_post *lp = arg;
	struct ibv_send_wr *bad = NULL;

	usleep(300 * 1000);
	lp->rc = ibv_post_send(lp->qp, lp->wr, &bad);
	return NULL;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Polls @p wait_cq (its completion is what we wait for) and, between, @p other_cq when
 * not NULL (always empty: the thread sleeps in its poll and must be woken by wait_cq's
 * completion). @return the completion's wr_id; the figures go to the caller. */
static uint64_t poll_while_late_post(struct ibv_cq *wait_cq, struct ibv_cq *other_cq,
				     struct late_post *lp, uint64_t *calls, uint64_t *cpu_ns,
				     uint64_t *wall_ms)
{
	uint64_t t0 = now_ms(), c0 = thread_cpu_ns();
	struct ibv_wc wc;
	pthread_t th;
	int n;

	*calls = 0;
	cr_assert_eq(pthread_create(&th, NULL, late_post_run, lp), 0);
	for (;;) {
		if (other_cq) {
			cr_assert_eq(ibv_poll_cq(other_cq, 1, &wc), 0, "the other CQ stays empty");
			++*calls;
		}
		n = ibv_poll_cq(wait_cq, 1, &wc);
		++*calls;
		cr_assert_geq(n, 0);
		if (n == 1)
			break;
		/* A lost wake-up sleeps 10 s per call: give up long before the next one ends. */
		cr_assert_lt(now_ms() - t0, 8000u, "no completion in 8 s: a lost wake-up");
	}
	*cpu_ns = thread_cpu_ns() - c0;
	*wall_ms = now_ms() - t0;
	pthread_join(th, NULL);
	cr_assert_eq(lp->rc, 0, "ibv_post_send: %s", strerror(lp->rc));
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	return wc.wr_id;
}

Test(cq_wait, block_sleeps_until_a_completion_on_this_or_another_cq)
{
	struct ibv_cq *quiet_cq;
	struct pair p;
	struct mbuf s, r;
	struct ibv_sge ss, rs;
	struct ibv_send_wr wr = {.sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED};
	struct late_post lp = {.wr = &wr};
	uint64_t calls, cpu_ns, wall_ms;
	int round;

	if (vfx_reference())
		cr_skip_test("the wait policy is uroce's own (UROCE_CQ_WAIT)");
	pair_make(&p, IBV_QPT_RC, NULL, 7);
	quiet_cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	cr_assert_not_null(quiet_cq);
	live_add((void **)live_cqs, quiet_cq);
	mb_make(&s, 64);
	mb_make(&r, 64);
	ss = sge_of(&s, 0, 64);
	rs = sge_of(&r, 0, 64);
	lp.qp = p.qp[0];
	/* Round 0: one CQ, the receive's. Round 1: the thread polls an empty CQ too, and
	 * sleeps there as often as in the receive's: a completion on either CQ of the
	 * context must end the sleep. */
	for (round = 0; round < 2; round++) {
		wr.wr_id = 10 + (uint64_t)round;
		post_recv_ok(p.qp[1], &rs, 1, 20 + (uint64_t)round);
		cr_assert_eq(poll_while_late_post(p.cq[1], round ? quiet_cq : NULL, &lp, &calls,
						  &cpu_ns, &wall_ms),
			     20 + (uint64_t)round);
		cr_log_info("round %d: %llu polls, %llu us of CPU in %llu ms", round,
			    (unsigned long long)calls, (unsigned long long)cpu_ns / 1000,
			    (unsigned long long)wall_ms);
		cr_expect_geq(wall_ms, 300u, "the completion came before the post");
		/* Spinning or yielding, 300 ms of polls cost tens of ms of CPU even on a
		 * loaded machine, and millions of calls; asleep, a few hundred calls. */
		cr_expect_lt(calls, 10000u, "round %d: %llu polls in %llu ms: it did not sleep",
			     round, (unsigned long long)calls, (unsigned long long)wall_ms);
		cr_expect_lt(cpu_ns, 30000000u, "round %d: %llu us of CPU while it waited", round,
			     (unsigned long long)cpu_ns / 1000);
		expect_ok(p.cq[0], 10 + (uint64_t)round, IBV_WC_SEND, NULL);
	}
	mb_free(&s);
	mb_free(&r);
	live_del((void **)live_cqs, quiet_cq);
	cr_assert_eq(ibv_destroy_cq(quiet_cq), 0);
	pair_free(&p);
}
