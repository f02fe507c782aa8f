/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Async events: IBV_EVENT_QP_LAST_WQE_REACHED, the events of destroyed QPs and SRQs, and
 * IBV_EVENT_DEVICE_FATAL when the daemon dies.
 * One file of test_verbs_api (verbs_api_fixture.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_api_fixture.h"

/* A QP on an SRQ that enters the error state reports IBV_EVENT_QP_LAST_WQE_REACHED
 * (IBA 11.6.3.1; rxe in Linux 6.1 does not send it: the reference fails here). */
Test(verbs, qp_last_wqe_reached_async_event)
{
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
	struct qp_opt o = {.max_send_wr = 16, .max_send_sge = 1};
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
	struct ibv_async_event ev;
	struct ibv_srq *srq;
	struct pair p;
	int rc;

	srq = ibv_create_srq(pd, &sa);
	cr_assert_not_null(srq);
	o.srq = srq;
	pair_make(&p, IBV_QPT_RC, &o, 7);
	expect_no_async(50);
	rc = ibv_modify_qp(p.qp[1], &a, IBV_QP_STATE);
	cr_assert_eq(rc, 0, "modify to ERR: %s", strerror(rc));
	cr_assert_eq(p.qp[1]->state, IBV_QPS_ERR);
	expect_async(IBV_EVENT_QP_LAST_WQE_REACHED, &ev, WAIT_MS);
	cr_assert_eq(ev.element.qp, p.qp[1]);
	ibv_ack_async_event(&ev);
	pair_free(&p);
	cr_assert_eq(ibv_destroy_srq(srq), 0);
}

/* An event still pending when its QP is destroyed is dropped, as the kernel drops a
 * destroyed object's events: ibv_get_async_event never hands out an event naming a QP
 * that is gone (UCX's handler reads element.qp->qp_num). The next one comes as usual. */
Test(verbs, async_event_of_a_destroyed_qp_is_dropped)
{
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
	struct qp_opt o = {.max_send_wr = 16, .max_send_sge = 1};
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
	struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};
	struct ibv_async_event ev;
	struct ibv_srq *srq;
	struct pair p;
	int rc, fl;

	srq = ibv_create_srq(pd, &sa);
	cr_assert_not_null(srq);
	o.srq = srq;
	pair_make(&p, IBV_QPT_RC, &o, 7);
	expect_no_async(50);
	cr_assert_eq(ibv_modify_qp(p.qp[1], &a, IBV_QP_STATE), 0);
	cr_assert_eq(poll(&pfd, 1, WAIT_MS), 1, "no LAST_WQE_REACHED pending");
	pair_free(&p);
	fl = fcntl(ctx->async_fd, F_GETFL);
	cr_assert_eq(fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK), 0);
	errno = 0;
	rc = ibv_get_async_event(ctx, &ev);
	cr_assert_eq(rc, -1, "an event came for a destroyed QP: %s",
		     rc == 0 ? ibv_event_type_str(ev.event_type) : "");
	cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(fcntl(ctx->async_fd, F_SETFL, fl), 0);

	pair_make(&p, IBV_QPT_RC, &o, 7);
	cr_assert_eq(ibv_modify_qp(p.qp[1], &a, IBV_QP_STATE), 0);
	expect_async(IBV_EVENT_QP_LAST_WQE_REACHED, &ev, WAIT_MS);
	cr_assert_eq(ev.element.qp, p.qp[1]);
	ibv_ack_async_event(&ev);
	pair_free(&p);
	cr_assert_eq(ibv_destroy_srq(srq), 0);
}

/* No event pending, through a non-blocking ibv_get_async_event: the one an object destroyed
 * since had queued must not come naming another. */
static void expect_no_async_now(const char *what)
{
	struct ibv_async_event ev;
	int fl = fcntl(ctx->async_fd, F_GETFL), rc;

	cr_assert_eq(fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK), 0);
	errno = 0;
	rc = ibv_get_async_event(ctx, &ev);
	cr_assert_eq(rc, -1, "%s: %s came, naming %p", what,
		     rc == 0 ? ibv_event_type_str(ev.event_type) : "", (void *)ev.element.qp);
	cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(fcntl(ctx->async_fd, F_SETFL, fl), 0);
}

/* Ceph's abort: a QP on an SRQ goes to ERR, its LAST_WQE_REACHED is queued, the QP is
 * destroyed before the event is read, and the next QPs take the freed handles. The old
 * event must not come naming a new QP (which never left INIT: Ceph faulted its connection
 * and its RTR failed). Linux drops a destroyed QP's events. */
Test(verbs, async_event_of_a_destroyed_qp_names_no_new_qp)
{
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
	struct qp_opt o = {.max_send_wr = 16, .max_send_sge = 1};
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
	struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};
	struct ibv_srq *srq;
	struct pair p;

	srq = ibv_create_srq(pd, &sa);
	cr_assert_not_null(srq);
	o.srq = srq;
	pair_make(&p, IBV_QPT_RC, &o, 7);
	cr_assert_eq(ibv_modify_qp(p.qp[1], &a, IBV_QP_STATE), 0);
	cr_assert_eq(poll(&pfd, 1, WAIT_MS), 1, "no LAST_WQE_REACHED pending");
	pair_free(&p);
	pair_make(&p, IBV_QPT_RC, &o, 7);
	expect_no_async_now("after the QP's destruction and two new QPs");
	pair_free(&p);
	cr_assert_eq(ibv_destroy_srq(srq), 0);
}

/* The same for an SRQ: its SRQ_LIMIT_REACHED queued, the SRQ destroyed unread, a new SRQ
 * in its handle. */
Test(verbs, async_event_of_a_destroyed_srq_names_no_new_srq)
{
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
	struct ibv_srq_attr q = {.srq_limit = 2};
	struct qp_opt o = {.max_send_wr = 16, .max_send_sge = 1};
	struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};
	struct ibv_send_wr wr;
	struct ibv_srq *srq;
	struct ibv_sge sg, ss;
	struct mbuf s, r;
	struct pair p;
	int i;

	srq = ibv_create_srq(pd, &sa);
	cr_assert_not_null(srq);
	cr_assert_eq(ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT), 0);
	o.srq = srq;
	pair_make(&p, IBV_QPT_RC, &o, 7);
	mb_make(&s, 4096);
	mb_make(&r, 4096);
	for (i = 0; i < 2; i++) {
		sg = sge_of(&r, (size_t)i * 64, 64);
		post_srq_recv_ok(srq, &sg, 100 + (uint64_t)i);
	}
	ss = sge_of(&s, 0, 32);
	wr = (struct ibv_send_wr){.sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED};
	post_send_ok(p.qp[0], &wr);
	expect_ok(p.cq[0], 0, IBV_WC_SEND, NULL);
	expect_ok(p.cq[1], 100, IBV_WC_RECV, NULL);
	cr_assert_eq(poll(&pfd, 1, WAIT_MS), 1, "no SRQ_LIMIT_REACHED pending");
	pair_free(&p);
	cr_assert_eq(ibv_destroy_srq(srq), 0);
	srq = ibv_create_srq(pd, &sa);
	cr_assert_not_null(srq);
	expect_no_async_now("after the SRQ's destruction and a new SRQ");
	cr_assert_eq(ibv_destroy_srq(srq), 0);
}

struct cq_waiter {
	struct ibv_comp_channel *ch;
	int rc;
	int err;
};

static void *wait_cq_event(void *arg)
{
	struct cq_waiter *w = arg;
	struct ibv_cq *cq;
	void *cq_ctx;

	w->rc = ibv_get_cq_event(w->ch, &cq, &cq_ctx);
	w->err = errno;
	return NULL;
}

/* The daemon dies: the context's async fd reports IBV_EVENT_DEVICE_FATAL, a thread blocked
 * in ibv_get_cq_event wakes with EIO (as the kernel wakes a disassociated device's
 * readers) and the channel's fd polls readable, and what follows fails without crashing. */
Test(verbs, device_fatal_when_daemon_dies)
{
	struct ibv_async_event ev;
	struct ibv_comp_channel *ch;
	struct cq_waiter w = {.rc = 1};
	struct pollfd pfd;
	struct ibv_cq *cq;
	struct ibv_pd *pd2;
	pthread_t t;
	int status;

	if (vfx_reference())
		cr_skip_test("no daemon to kill in reference mode");
	cr_assert_gt(dmn.pid, 0);
	ch = ibv_create_comp_channel(ctx);
	cr_assert_not_null(ch);
	cq = ibv_create_cq(ctx, 8, NULL, ch, 0);
	cr_assert_not_null(cq);
	cr_assert_eq(ibv_req_notify_cq(cq, 0), 0);
	w.ch = ch;
	cr_assert_eq(pthread_create(&t, NULL, wait_cq_event, &w), 0);
	usleep(100000); /* blocked in ibv_get_cq_event: nothing completes */
	cr_assert_eq(w.rc, 1, "returned before the daemon died");
	kill(dmn.pid, SIGKILL);
	cr_assert_eq(waitpid(dmn.pid, &status, 0), dmn.pid);
	dmn.pid = 0;
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(w.rc, -1);
	cr_assert_eq(w.err, EIO, "errno %d", w.err);
	pfd = (struct pollfd){.fd = ch->fd, .events = POLLIN};
	cr_assert_eq(poll(&pfd, 1, 0), 1, "the channel's fd polls readable");
	expect_async(IBV_EVENT_DEVICE_FATAL, &ev, WAIT_MS);
	ibv_ack_async_event(&ev);
	errno = 0;
	pd2 = ibv_alloc_pd(ctx);
	cr_assert_null(pd2, "alloc_pd on a dead daemon succeeded");
	cr_assert_neq(errno, 0);
}
