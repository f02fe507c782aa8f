/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every test of test_verbs_api runs on (verbs_api_fixture.h): suite `verbs`'s daemon
 * and context, and the helpers the test_verbs_*.c files share.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#include "verbs_api_fixture.h"

struct vfx_daemon dmn;
struct ibv_context *ctx;
struct ibv_pd *pd;
struct ibv_device_attr dattr;
struct ibv_port_attr pattr;
union ibv_gid gid;
int gidx;

/* ---------------------------------------------------------------- fixture */

void check_library(void)
{
	char why[512];

	if (vfx_check_library(why, sizeof(why)) != 0)
		cr_assert_fail("WRONG LIBRARY: %s", why);
}

void open_ctx(void)
{
	struct ibv_device **list;
	int n = -1;

	list = ibv_get_device_list(&n);
	cr_assert_not_null(list, "ibv_get_device_list: %s", strerror(errno));
	cr_assert_geq(n, 1, "no device listed for the daemon at %s", dmn.sock);
	ctx = ibv_open_device(list[0]);
	cr_assert_not_null(ctx, "ibv_open_device(%s): %s", ibv_get_device_name(list[0]),
			   strerror(errno));
	ibv_free_device_list(list);
	cr_assert_eq(ibv_query_device(ctx, &dattr), 0);
	cr_assert_eq(ibv_query_port(ctx, 1, &pattr), 0);
	gidx = vfx_gid_index();
	cr_assert_eq(ibv_query_gid(ctx, 1, gidx, &gid), 0);
	pd = ibv_alloc_pd(ctx);
	cr_assert_not_null(pd, "ibv_alloc_pd: %s", strerror(errno));
}

void suite_init(void)
{
	char why[512];

	check_library();
	if (vfx_daemon_start(&dmn, IPV4, NULL, why, sizeof(why)) != 0)
		cr_assert_fail("no uroced: %s", why);
	open_ctx();
}

/* What the helpers below made and the test has not freed yet. A failed assertion ends a
 * test in the middle, and what it held would otherwise be reported by LeakSanitizer as
 * leaks of its own, burying the failure (the MR structs are reachable from nothing). */
struct ibv_mr *live_mrs[LIVE_MAX];
struct ibv_qp *live_qps[LIVE_MAX];
struct ibv_cq *live_cqs[LIVE_MAX];

void live_add(void **table, void *obj)
{
	for (int i = 0; i < LIVE_MAX; i++)
		if (!table[i]) {
			table[i] = obj;
			return;
		}
	cr_assert_fail("more than %d live objects of one kind: raise LIVE_MAX", LIVE_MAX);
}

void live_del(void **table, void *obj)
{
	for (int i = 0; i < LIVE_MAX; i++)
		if (table[i] == obj)
			table[i] = NULL;
}

/* Frees, QPs before the CQs they use, what a failed test left. */
static void live_free_all(void)
{
	for (int i = 0; i < LIVE_MAX; i++)
		if (live_qps[i])
			ibv_destroy_qp(live_qps[i]);
	for (int i = 0; i < LIVE_MAX; i++)
		if (live_cqs[i])
			ibv_destroy_cq(live_cqs[i]);
	for (int i = 0; i < LIVE_MAX; i++)
		if (live_mrs[i]) {
			void *buf = live_mrs[i]->addr;

			if (ibv_dereg_mr(live_mrs[i]) == 0)
				free(buf);
		}
}

long hugepages_before = -1; /* nr_hugepages to give back (fork_private_copy_hugepage) */

void suite_fini(void)
{
	live_free_all();
	if (hugepages_before >= 0)
		nr_hugepages(hugepages_before);
	/* Objects a test made by hand and left are the daemon's to free (it sees us go). */
	if (pd && ibv_dealloc_pd(pd) == 0)
		pd = NULL;
	if (ctx && !pd)
		ibv_close_device(ctx);
	ctx = NULL;
	vfx_daemon_stop(&dmn);
}

TestSuite(verbs, .init = suite_init, .fini = suite_fini, .timeout = 60);

/* ---------------------------------------------------------------- helpers */

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void fill(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 2654435761u + seed) >> 13);
}

/* One completion within @p ms: 1, or 0 on timeout. A poll error fails the test. */
int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	uint64_t t0 = now_ms();

	do {
		int n = ibv_poll_cq(cq, 1, wc);

		cr_assert_geq(n, 0, "ibv_poll_cq: %d", n);
		if (n == 1)
			return 1;
		sched_yield();
	} while (now_ms() - t0 < (uint64_t)ms);
	return 0;
}

void expect(struct ibv_cq *cq, uint64_t id, enum ibv_wc_status st, struct ibv_wc *out)
{
	struct ibv_wc wc;

	cr_assert_eq(poll_one(cq, &wc, WAIT_MS), 1, "no completion for wr_id %llu in %d ms",
		     (unsigned long long)id, WAIT_MS);
	cr_assert_eq(wc.wr_id, id, "wr_id %llu, want %llu (status %s)",
		     (unsigned long long)wc.wr_id, (unsigned long long)id,
		     ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.status, st, "wr_id %llu: status %s (%d), want %s (%d)",
		     (unsigned long long)id, ibv_wc_status_str(wc.status), wc.status,
		     ibv_wc_status_str(st), st);
	if (out)
		*out = wc;
}

void expect_ok(struct ibv_cq *cq, uint64_t id, enum ibv_wc_opcode op, struct ibv_wc *out)
{
	struct ibv_wc wc;

	expect(cq, id, IBV_WC_SUCCESS, &wc);
	cr_assert_eq(wc.opcode, op, "wr_id %llu: opcode %d, want %d", (unsigned long long)id,
		     wc.opcode, op);
	if (out)
		*out = wc;
}

void expect_none(struct ibv_cq *cq, int ms)
{
	struct ibv_wc wc;

	cr_assert_eq(poll_one(cq, &wc, ms), 0, "unexpected completion: wr_id %llu status %s",
		     (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
}

void mb_make(struct mbuf *b, size_t len)
{
	size_t alloc = (len + 4095) & ~(size_t)4095;

	b->len = len;
	b->p = aligned_alloc(4096, alloc ? alloc : 4096);
	cr_assert_not_null(b->p);
	memset(b->p, 0, alloc ? alloc : 4096);
	b->mr = ibv_reg_mr(pd, b->p, len ? len : 1, ACC_ALL);
	cr_assert_not_null(b->mr, "ibv_reg_mr(%zu): %s", len, strerror(errno));
	cr_assert_eq(b->mr->addr, b->p);
	cr_assert_eq(b->mr->length, len ? len : 1);
	cr_assert_eq(b->mr->pd, pd);
	cr_assert_eq(b->mr->context, ctx);
	live_add((void **)live_mrs, b->mr);
}

void mb_free(struct mbuf *b)
{
	live_del((void **)live_mrs, b->mr);
	cr_assert_eq(ibv_dereg_mr(b->mr), 0);
	free(b->p);
	b->p = NULL;
}

struct ibv_sge sge_of(const struct mbuf *b, size_t off, size_t len)
{
	return (struct ibv_sge){.addr = (uintptr_t)b->p + off, .length = (uint32_t)len,
				.lkey = b->mr->lkey};
}

void post_send_ok(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(qp, wr, &bad);

	cr_assert_eq(rc, 0, "ibv_post_send(wr_id %llu): %d %s", (unsigned long long)wr->wr_id, rc,
		     strerror(rc));
}

void post_recv_ok(struct ibv_qp *qp, struct ibv_sge *sg, int nsge, uint64_t id)
{
	struct ibv_recv_wr wr = {.wr_id = id, .sg_list = sg, .num_sge = nsge}, *bad = NULL;
	int rc = ibv_post_recv(qp, &wr, &bad);

	cr_assert_eq(rc, 0, "ibv_post_recv(wr_id %llu): %d %s", (unsigned long long)id, rc,
		     strerror(rc));
}

void post_srq_recv_ok(struct ibv_srq *srq, struct ibv_sge *sg, uint64_t id)
{
	struct ibv_recv_wr wr = {.wr_id = id, .sg_list = sg, .num_sge = 1}, *bad = NULL;
	int rc = ibv_post_srq_recv(srq, &wr, &bad);

	cr_assert_eq(rc, 0, "ibv_post_srq_recv(wr_id %llu): %d %s", (unsigned long long)id, rc,
		     strerror(rc));
}

struct ibv_qp *qp_make(enum ibv_qp_type type, struct ibv_cq *scq, struct ibv_cq *rcq,
		       const struct qp_opt *o, struct ibv_qp_cap *cap_out)
{
	struct qp_opt def = {.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4,
			     .max_recv_sge = 4, .max_inline = 64};
	struct ibv_qp_init_attr ia;
	struct ibv_qp *qp;

	if (!o)
		o = &def;
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = type;
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	ia.srq = o->srq;
	ia.sq_sig_all = o->sq_sig_all;
	ia.cap.max_send_wr = o->max_send_wr;
	ia.cap.max_recv_wr = o->srq ? 0 : o->max_recv_wr;
	ia.cap.max_send_sge = o->max_send_sge;
	ia.cap.max_recv_sge = o->srq ? 0 : o->max_recv_sge;
	ia.cap.max_inline_data = o->max_inline;
	qp = ibv_create_qp(pd, &ia);
	cr_assert_not_null(qp, "ibv_create_qp(type %d): %s", type, strerror(errno));
	cr_assert_eq(qp->qp_type, type);
	cr_assert_eq(qp->state, IBV_QPS_RESET);
	cr_assert_eq(qp->context, ctx);
	cr_assert_eq(qp->pd, pd);
	cr_assert_eq(qp->send_cq, scq);
	cr_assert_eq(qp->recv_cq, rcq);
	cr_assert_eq(qp->srq, o->srq);
	/* The caps written back are at least what was asked for. */
	cr_assert_geq(ia.cap.max_send_wr, o->max_send_wr);
	cr_assert_geq(ia.cap.max_send_sge, o->max_send_sge);
	cr_assert_geq(ia.cap.max_inline_data, o->max_inline);
	if (!o->srq) {
		cr_assert_geq(ia.cap.max_recv_wr, o->max_recv_wr);
		cr_assert_geq(ia.cap.max_recv_sge, o->max_recv_sge);
	}
	if (cap_out)
		*cap_out = ia.cap;
	return qp;
}

int modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	return ibv_modify_qp(qp, a, mask);
}

/* The attributes qp_to_init, qp_to_rtr and qp_to_rts give @p qp, in @p a; @return the
 * mask. They assert nothing (a forked child uses them). */
int qp_init_attr(const struct ibv_qp *qp, struct ibv_qp_attr *a)
{
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_INIT;
	a->port_num = 1;
	if (qp->qp_type == IBV_QPT_UD) {
		a->qkey = QKEY;
		mask |= IBV_QP_QKEY;
	} else {
		a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				     (qp->qp_type == IBV_QPT_RC || qp->qp_type == IBV_QPT_XRC_RECV ?
					      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC :
					      0);
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return mask;
}

int qp_rtr_attr(const struct ibv_qp *qp, uint32_t dqpn, struct ibv_qp_attr *a)
{
	int mask = IBV_QP_STATE;

	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	if (qp->qp_type != IBV_QPT_UD) {
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		a->path_mtu = pattr.active_mtu;
		a->dest_qp_num = dqpn;
		a->rq_psn = 0x123;
		a->ah_attr.is_global = 1;
		a->ah_attr.grh.dgid = gid;
		a->ah_attr.grh.sgid_index = (uint8_t)gidx;
		a->ah_attr.grh.hop_limit = 64;
		a->ah_attr.port_num = 1;
		/* RC's responder side: RC's, and an XRC target's */
		if (qp->qp_type == IBV_QPT_RC || qp->qp_type == IBV_QPT_XRC_RECV) {
			a->max_dest_rd_atomic =
				(uint8_t)(dattr.max_qp_rd_atom < 16 ? dattr.max_qp_rd_atom : 16);
			a->min_rnr_timer = 1; /* 0.01 ms */
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	return mask;
}

int qp_rts_attr(const struct ibv_qp *qp, uint8_t rnr_retry, struct ibv_qp_attr *a)
{
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->sq_psn = 0x123;
	if (qp->qp_type == IBV_QPT_XRC_RECV) { /* Linux's XRC_TGT column: a timeout, no more */
		a->timeout = 14;
		mask |= IBV_QP_TIMEOUT;
	}
	/* RC's requester side: RC's, and an XRC initiator's */
	if (qp->qp_type == IBV_QPT_RC || qp->qp_type == IBV_QPT_XRC_SEND) {
		a->timeout = 14;
		a->retry_cnt = 7;
		a->rnr_retry = rnr_retry;
		a->max_rd_atomic =
			(uint8_t)(dattr.max_qp_rd_atom < 16 ? dattr.max_qp_rd_atom : 16);
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return mask;
}

void qp_to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	int rc = modify(qp, &a, qp_init_attr(qp, &a));

	cr_assert_eq(rc, 0, "modify_qp to INIT: %s", strerror(rc));
	cr_assert_eq(qp->state, IBV_QPS_INIT);
}

void qp_to_rtr(struct ibv_qp *qp, uint32_t dqpn)
{
	struct ibv_qp_attr a;
	int rc = modify(qp, &a, qp_rtr_attr(qp, dqpn, &a));

	cr_assert_eq(rc, 0, "modify_qp to RTR: %s", strerror(rc));
	cr_assert_eq(qp->state, IBV_QPS_RTR);
}

void qp_to_rts(struct ibv_qp *qp, uint8_t rnr_retry)
{
	struct ibv_qp_attr a;
	int rc = modify(qp, &a, qp_rts_attr(qp, rnr_retry, &a));

	cr_assert_eq(rc, 0, "modify_qp to RTS: %s", strerror(rc));
	cr_assert_eq(qp->state, IBV_QPS_RTS);
}

/* Connects a and b to each other (loopback through the device's own GID). */
void connect2(struct ibv_qp *a, struct ibv_qp *b, uint8_t rnr_a, uint8_t rnr_b)
{
	qp_to_init(a);
	qp_to_init(b);
	qp_to_rtr(a, b->qp_num);
	qp_to_rtr(b, a->qp_num);
	qp_to_rts(a, rnr_a);
	qp_to_rts(b, rnr_b);
}

/* Two QPs of @p type, each with its own CQ (send and receive), connected. */
void pair_make(struct pair *p, enum ibv_qp_type type, const struct qp_opt *o, uint8_t rnr_retry0)
{
	int i;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < 2; i++) {
		p->cq[i] = ibv_create_cq(ctx, 256, NULL, NULL, 0);
		cr_assert_not_null(p->cq[i], "ibv_create_cq: %s", strerror(errno));
		cr_assert_geq(p->cq[i]->cqe, 256);
		live_add((void **)live_cqs, p->cq[i]);
		p->qp[i] = qp_make(type, p->cq[i], p->cq[i], o, &p->cap[i]);
		live_add((void **)live_qps, p->qp[i]);
	}
	connect2(p->qp[0], p->qp[1], rnr_retry0, 7);
}

void pair_free(struct pair *p)
{
	int i;

	for (i = 0; i < 2; i++) {
		live_del((void **)live_qps, p->qp[i]);
		cr_assert_eq(ibv_destroy_qp(p->qp[i]), 0);
		live_del((void **)live_cqs, p->cq[i]);
		cr_assert_eq(ibv_destroy_cq(p->cq[i]), 0);
	}
}

struct ibv_qp_attr query_qp(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int rc;

	memset(&a, 0, sizeof(a));
	rc = ibv_query_qp(qp, &a, IBV_QP_STATE, &ia);
	cr_assert_eq(rc, 0, "ibv_query_qp: %s", strerror(rc));
	return a;
}

/* The next async event within @p ms, through poll() on ctx->async_fd. */
void expect_async(enum ibv_event_type type, struct ibv_async_event *out, int ms)
{
	struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};
	struct ibv_async_event ev;
	int rc = poll(&pfd, 1, ms);

	cr_assert_eq(rc, 1, "no async event (want %s) in %d ms", ibv_event_type_str(type), ms);
	cr_assert(pfd.revents & POLLIN);
	cr_assert_eq(ibv_get_async_event(ctx, &ev), 0, "ibv_get_async_event: %s", strerror(errno));
	cr_assert_eq(ev.event_type, type, "async event %s (%d), want %s (%d)",
		     ibv_event_type_str(ev.event_type), ev.event_type, ibv_event_type_str(type),
		     type);
	*out = ev;
}

void expect_no_async(int ms)
{
	struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};
	int rc = poll(&pfd, 1, ms);

	if (rc == 1) {
		struct ibv_async_event ev;

		if (ibv_get_async_event(ctx, &ev) == 0)
			cr_assert_fail("unexpected async event %s",
				       ibv_event_type_str(ev.event_type));
	}
	cr_assert_eq(rc, 0, "async fd readable with nothing expected");
}

/* Posts one signaled RDMA WRITE of 256 bytes from @p src to @p rkey at @p dst. */
void post_write(struct ibv_qp *qp, struct mbuf *src, uint64_t dst, uint32_t rkey, uint64_t id)
{
	struct ibv_sge ss = sge_of(src, 0, 256);
	struct ibv_send_wr wr = {.wr_id = id, .sg_list = &ss, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = {.remote_addr = dst, .rkey = rkey}};

	post_send_ok(qp, &wr);
}

#define NR_HUGEPAGES "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"

long nr_hugepages(long set)
{
	FILE *f = fopen(NR_HUGEPAGES, set < 0 ? "r" : "w");
	long n = -1;

	if (!f)
		return -1;
	if (set < 0) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
	} else {
		n = fprintf(f, "%ld\n", set) > 0 ? set : -1;
	}
	if (fclose(f) != 0)
		n = -1;
	return n;
}
