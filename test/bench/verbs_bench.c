/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs layer's overhead over lib/client (doc/benchmarks.md, "Verbs layer overhead").
 *
 * One source, built twice:
 *   uroce-bench-verbs         through the drop-in libibverbs (lib/verbs): ibv_get_device_list,
 *                             ibv_open_device..., and the inline hot path ibv_post_send /
 *                             ibv_post_recv / ibv_poll_cq (context->ops, then lib/client);
 *   uroce-bench-verbs-client  (-DVB_CLIENT) the same code on lib/client's calls
 *                             (uroce_client_post_send / post_recv / poll_cq).
 *
 * Modes:
 *   lat    8 B RC SEND ping-pong, the loop of `uroce-xfer lat` (app/uroce-xfer/loops.c,
 *          linked: same queue depths, same inline send, same completion counting, same
 *          poll-then-yield wait): the client prints "lat: ... median X us, p99 Y us ..."
 *          (half round trip);
 *   bw     64 KiB RC RDMA WRITE with a window of 32, every 8th signalled, the loop of
 *          `uroce-xfer bw` (loops.c): the client prints "bw: ... s: X Gbit/s, ...";
 *   micro  no network: two RC QPs of one device connected to each other (the daemon's
 *          loopback), pinned to one CPU. Per batch: N post_recv on QP b, N post_send
 *          (8 B inline SEND, signalled) on QP a, a wait until the daemon has completed them,
 *          then N poll_cq(1) on each CQ and N poll_cq on the empty CQ, each loop timed as
 *          a whole. Prints the median over the batches of ns per call of each.
 *
 * usage: uroce-bench-verbs[-client] [-S socket] MODE [-p port] [-s size] [-n iters]
 *        [-w window] [-m mtu] [-t secs] [-b batch] [-c cpu] [--quick] [--spin] [server]
 * Exit 77 when no uroced answers (the meson benchmark counts it as skipped).
 */

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "uroce_wire.h"
#include "xfer_loops.h"

#ifdef VB_CLIENT
#include "xfer_client_verbs.h"
#define VB_API "lib/client (uroce_client_*)"
typedef struct uroce_client_ctx vb_ctx;
typedef struct uroce_client_pd vb_pd;
typedef struct uroce_client_mr vb_mr;
typedef struct uroce_client_cq vb_cq;
typedef struct uroce_client_qp vb_qp;
#define VB_MR_LKEY(m) ((m)->ibv.lkey)
#define VB_MR_RKEY(m) ((m)->ibv.rkey)
#define VB_QPN(q) (uroce_client_qp_ibv(q)->qp_num)
#define VB_WC_STATUS_STR uroce_client_wc_status_str
#define vb_post_send xfer_client_post_send
#define vb_post_recv xfer_client_post_recv
#define vb_poll_cq xfer_client_poll_cq
#else
#define VB_API "libibverbs (ibv_*, lib/verbs)"
typedef struct ibv_context vb_ctx;
typedef struct ibv_pd vb_pd;
typedef struct ibv_mr vb_mr;
typedef struct ibv_cq vb_cq;
typedef struct ibv_qp vb_qp;
#define VB_MR_LKEY(m) ((m)->lkey)
#define VB_MR_RKEY(m) ((m)->rkey)
#define VB_QPN(q) ((q)->qp_num)
#define VB_WC_STATUS_STR ibv_wc_status_str
/* In the form of struct xfer_verbs (xfer_loops.h), as xfer_client_verbs.h's. */
static inline int vb_post_send(void *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return ibv_post_send(qp, wr, bad);
}
static inline int vb_post_recv(void *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return ibv_post_recv(qp, wr, bad);
}
static inline int vb_poll_cq(void *cq, int n, struct ibv_wc *wc)
{
	return ibv_poll_cq(cq, n, wc);
}
#endif

/* The same calls for the loops of uroce-xfer (xfer_loops.h). */
static const struct xfer_verbs vb_verbs = {
	.post_send = vb_post_send,
	.post_recv = vb_post_recv,
	.poll_cq = vb_poll_cq,
	.wc_status_str = VB_WC_STATUS_STR,
};

#define VB_EXIT_SKIP 77

struct vb_opts {
	const char *socket;
	const char *server; /* NULL: we are the server */
	int port;
	long size, iters;
	int window, mtu, timeout_ms, batch, cpu;
	bool quick;
};

/* --spin: poll_wait never yields itself (as perftest), for the comparison with it. */
static bool spin_only;

/* ---- the device: the same objects through either API ------------------------------------ */

struct vb_dev {
	vb_ctx *ctx;
	vb_pd *pd;
	int gid_index;
	union ibv_gid gid;
#ifndef VB_CLIENT
	struct ibv_device **list;
#endif
};

static int vb_query_gid(struct vb_dev *d, int i, union ibv_gid *g)
{
#ifdef VB_CLIENT
	return uroce_client_query_gid(d->ctx, 1, i, g);
#else
	return ibv_query_gid(d->ctx, 1, i, g);
#endif
}

/* 0, -1 (error), or VB_EXIT_SKIP when no daemon answers. */
static int vb_dev_open(struct vb_dev *d, const char *sock)
{
	struct ibv_port_attr pa;
	int i, n, r;

	memset(d, 0, sizeof(*d));
#ifdef VB_CLIENT
	d->ctx = uroce_client_open(sock);
	if (!d->ctx) {
		xfer_err("no uroced at %s: %s", sock ? sock : "$UROCE_SOCKET", strerror(errno));
		return VB_EXIT_SKIP;
	}
	r = uroce_client_query_port(d->ctx, 1, &pa);
#else
	if (sock && setenv("UROCE_SOCKET", sock, 1))
		return -1;
	d->list = ibv_get_device_list(&n);
	if (!d->list || n < 1) {
		xfer_err("no device (no uroced at %s)", sock ? sock : "$UROCE_SOCKET");
		return VB_EXIT_SKIP;
	}
	d->ctx = ibv_open_device(d->list[0]);
	if (!d->ctx) {
		xfer_err("ibv_open_device: %s", strerror(errno));
		return -1;
	}
	r = ibv_query_port(d->ctx, 1, &pa);
#endif
	if (r) {
		xfer_err("query_port: %s", strerror(r));
		return -1;
	}
	n = pa.gid_tbl_len > 0 ? pa.gid_tbl_len : 16;
	d->gid_index = -1;
	for (i = 0; i < n && d->gid_index < 0; i++) {
		union ibv_gid g;

		if (vb_query_gid(d, i, &g))
			break;
		if (uroce_gid_is_ipv4(g.raw)) {
			d->gid = g;
			d->gid_index = i;
		}
	}
	if (d->gid_index < 0) {
		xfer_err("no IPv4 RoCE v2 GID");
		return -1;
	}
#ifdef VB_CLIENT
	d->pd = uroce_client_alloc_pd(d->ctx);
#else
	d->pd = ibv_alloc_pd(d->ctx);
#endif
	if (!d->pd) {
		xfer_err("alloc_pd: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void vb_dev_close(struct vb_dev *d)
{
#ifdef VB_CLIENT
	if (d->pd)
		uroce_client_dealloc_pd(d->pd);
	if (d->ctx)
		uroce_client_close(d->ctx);
#else
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	if (d->ctx)
		ibv_close_device(d->ctx);
	if (d->list)
		ibv_free_device_list(d->list);
#endif
	memset(d, 0, sizeof(*d));
}

static vb_mr *vb_reg_mr(struct vb_dev *d, void *buf, size_t len)
{
	unsigned int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ;
	vb_mr *mr;

#ifdef VB_CLIENT
	mr = uroce_client_reg_mr(d->pd, buf, len, acc);
#else
	mr = ibv_reg_mr(d->pd, buf, len, (int)acc);
#endif
	if (!mr)
		xfer_err("reg_mr: %s", strerror(errno));
	return mr;
}

static void vb_dereg_mr(vb_mr *mr)
{
	if (!mr)
		return;
#ifdef VB_CLIENT
	uroce_client_dereg_mr(mr);
#else
	ibv_dereg_mr(mr);
#endif
}

static vb_cq *vb_create_cq(struct vb_dev *d, int cqe)
{
	vb_cq *cq;

#ifdef VB_CLIENT
	cq = uroce_client_create_cq(d->ctx, cqe, NULL, 0);
#else
	cq = ibv_create_cq(d->ctx, cqe, NULL, NULL, 0);
#endif
	if (!cq)
		xfer_err("create_cq: %s", strerror(errno));
	return cq;
}

static void vb_destroy_cq(vb_cq *cq)
{
	if (!cq)
		return;
#ifdef VB_CLIENT
	uroce_client_destroy_cq(cq);
#else
	ibv_destroy_cq(cq);
#endif
}

static int vb_modify_qp(vb_qp *qp, struct ibv_qp_attr *a, int mask)
{
#ifdef VB_CLIENT
	return uroce_client_modify_qp(qp, a, mask);
#else
	return ibv_modify_qp(qp, a, mask);
#endif
}

/* An RC QP (as uroce-xfer's xfer_create_qp: 1 SGE each way, 64 B inline) in INIT. */
static vb_qp *vb_create_qp(struct vb_dev *d, vb_cq *cq, uint32_t sq, uint32_t rq,
			   struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	vb_qp *qp;
	int r;

	memset(&ia, 0, sizeof(ia));
#ifdef VB_CLIENT
	ia.send_cq = uroce_client_cq_ibv(cq);
	ia.recv_cq = uroce_client_cq_ibv(cq);
#else
	ia.send_cq = cq;
	ia.recv_cq = cq;
#endif
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = sq;
	ia.cap.max_recv_wr = rq;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = 64;
#ifdef VB_CLIENT
	qp = uroce_client_create_qp(d->pd, &ia);
#else
	qp = ibv_create_qp(d->pd, &ia);
#endif
	if (!qp) {
		xfer_err("create_qp (send %u, recv %u): %s", sq, rq, strerror(errno));
		return NULL;
	}
	*cap = ia.cap;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ;
	r = vb_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			 IBV_QP_ACCESS_FLAGS);
	if (r) {
		xfer_err("modify_qp INIT: %s", strerror(r));
		return NULL;
	}
	return qp;
}

static void vb_destroy_qp(vb_qp *qp)
{
	if (!qp)
		return;
#ifdef VB_CLIENT
	uroce_client_destroy_qp(qp);
#else
	ibv_destroy_qp(qp);
#endif
}

/* INIT -> RTR -> RTS, the attributes of uroce-xfer's xfer_qp_connect (hop limit 64,
 * rd_atomic 1). */
static int vb_connect(vb_qp *qp, int gid_index, int mtu, uint32_t psn, uint32_t dqpn,
		      uint32_t dpsn, const union ibv_gid *dgid)
{
	struct ibv_qp_attr a;
	int r;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = xfer_mtu_enum(mtu);
	a.dest_qp_num = dqpn;
	a.rq_psn = dpsn;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	r = vb_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (r) {
		xfer_err("modify_qp RTR: %s", strerror(r));
		return -1;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	r = vb_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			 IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	if (r) {
		xfer_err("modify_qp RTS: %s", strerror(r));
		return -1;
	}
	return 0;
}

/* The loops' completion wait: uroce-xfer's xfer_poll_wait (50 polls, then sched_yield on
 * every empty poll for 2 ms, then usleep(50)), or with --spin no yield of our own. */
static int vb_wait(void *cq, struct ibv_wc *wc, int max, int timeout_ms)
{
	return xfer_poll_wait_on(&vb_verbs, cq, wc, max, timeout_ms, spin_only);
}

/* ---- lat and bw: the loops of uroce-xfer's perf.c (xfer_loops.h) -------------------------- */

#define PERF_MAGIC 0x76626e63u

struct perf {
	struct vb_dev dev;
	vb_cq *cq;
	vb_qp *qp;
	vb_mr *mr;
	uint8_t *buf;
	size_t buflen;
	struct ibv_qp_cap cap;
	struct xfer_perf_msg peer;
	int fd;
};

static void perf_close(struct perf *p)
{
	if (p->fd >= 0)
		close(p->fd);
	vb_destroy_qp(p->qp);
	vb_destroy_cq(p->cq);
	vb_dereg_mr(p->mr);
	vb_dev_close(&p->dev);
	xfer_free(p->buf, p->buflen);
}

static int perf_setup(struct perf *p, const struct vb_opts *o, size_t buflen, uint32_t sq,
		      uint32_t rq, uint64_t size, uint64_t iters)
{
	struct xfer_perf_msg me;
	uint32_t psn = xfer_rand_psn();
	int r;

	memset(p, 0, sizeof(*p));
	p->fd = -1;
	r = vb_dev_open(&p->dev, o->socket);
	if (r)
		return r;
	p->buflen = buflen;
	p->buf = xfer_alloc(buflen);
	if (!p->buf)
		return -1;
	memset(p->buf, 0x11, buflen);
	p->mr = vb_reg_mr(&p->dev, p->buf, buflen);
	if (!p->mr)
		return -1;
	p->cq = vb_create_cq(&p->dev, (int)(sq + rq + 8));
	if (!p->cq)
		return -1;
	p->qp = vb_create_qp(&p->dev, p->cq, sq, rq, &p->cap);
	if (!p->qp)
		return -1;
	memset(&me, 0, sizeof(me));
	me.magic = PERF_MAGIC;
	me.qpn = VB_QPN(p->qp);
	me.psn = psn;
	me.rkey = VB_MR_RKEY(p->mr);
	me.addr = (uintptr_t)p->buf;
	memcpy(me.gid, p->dev.gid.raw, 16);
	me.size = size;
	me.iters = iters;
	p->fd = xfer_perf_open(o->server, o->port, o->timeout_ms);
	if (p->fd < 0 || xfer_perf_exchange(p->fd, &me, &p->peer, o->timeout_ms))
		return -1;
	{
		union ibv_gid dgid;

		memcpy(dgid.raw, p->peer.gid, 16);
		if (vb_connect(p->qp, p->dev.gid_index, o->mtu, psn, p->peer.qpn, p->peer.psn,
			       &dgid))
			return -1;
	}
	return 0;
}

static struct xfer_loop perf_loop(struct perf *p, int timeout_ms)
{
	return (struct xfer_loop){ .v = &vb_verbs, .qp = p->qp, .wait = vb_wait,
				   .wait_arg = p->cq, .timeout_ms = timeout_ms };
}

static int run_bw(const struct vb_opts *o)
{
	uint64_t size = (uint64_t)(o->size >= 0 ? o->size : 65536);
	uint64_t iters = (uint64_t)(o->iters >= 0 ? o->iters : 5000);
	uint32_t window = (uint32_t)(o->window > 0 ? o->window : 32);
	struct perf p;
	int ret = 1, r;

	r = perf_setup(&p, o, size ? size : 1, window + 2, 2, size, iters);
	if (r) {
		ret = r == VB_EXIT_SKIP ? r : 1;
		goto out;
	}
	if (xfer_perf_sync(p.fd, o->timeout_ms))
		goto out;
	if (o->server) {
		struct xfer_loop l = perf_loop(&p, o->timeout_ms);
		struct ibv_sge sge = { .addr = (uintptr_t)p.buf, .length = (uint32_t)size,
				       .lkey = VB_MR_LKEY(p.mr) };
		uint64_t ns;
		double secs;

		if (xfer_loop_bw(&l, &sge, iters, window, p.peer.addr, p.peer.rkey, &ns))
			goto out;
		secs = (double)ns / 1e9;
		printf("bw: %lu x %lu B RDMA WRITE (RC, MTU %d, window %u, %s) in %.3f s: "
		       "%.3f Gbit/s, %.0f msg/s\n", (unsigned long)iters, (unsigned long)size,
		       o->mtu, window, VB_API, secs, (double)iters * (double)size * 8 / secs / 1e9,
		       (double)iters / secs);
		fflush(stdout);
	}
	ret = xfer_perf_sync(p.fd, o->timeout_ms * 4) ? 1 : 0;
out:
	perf_close(&p);
	return ret;
}

static int run_lat(const struct vb_opts *o)
{
	uint64_t size = (uint64_t)(o->size >= 0 ? o->size : 8);
	uint64_t iters = (uint64_t)(o->iters > 0 ? o->iters : 10000);
	uint32_t depth = 16;
	uint64_t *rtt = calloc(iters, sizeof(*rtt));
	struct xfer_lat_wrs w;
	struct xfer_loop l;
	struct perf p;
	int ret = 1, r;

	if (!rtt)
		return 1;
	r = perf_setup(&p, o, 2 * (size ? size : 1), 2, depth, size, iters);
	if (r) {
		ret = r == VB_EXIT_SKIP ? r : 1;
		goto out;
	}
	xfer_lat_wrs_init(&w, p.buf, size, VB_MR_LKEY(p.mr), p.cap.max_inline_data);
	l = perf_loop(&p, o->timeout_ms);
	if (xfer_loop_post_recvs(&l, &w.rwr, depth) || xfer_perf_sync(p.fd, o->timeout_ms) ||
	    xfer_loop_lat(&l, &(struct xfer_lat_run){ .rwr = &w.rwr, .swr = &w.swr,
						       .iters = iters,
						       .initiator = o->server != NULL,
						       .rtt = rtt }))
		goto out;
	if (o->server) {
		struct xfer_lat_stats st;

		xfer_lat_stats(rtt, iters, &st);
		printf("lat: %lu B RC SEND ping-pong, %lu iters, %s: median %.2f us, p99 %.2f us, "
		       "min %.2f us, max %.2f us, avg %.2f us (half round trip)\n",
		       (unsigned long)size, (unsigned long)iters, VB_API, st.median, st.p99,
		       st.min, st.max, st.avg);
		fflush(stdout);
	}
	ret = xfer_perf_sync(p.fd, o->timeout_ms) ? 1 : 0;
out:
	free(rtt);
	perf_close(&p);
	return ret;
}

/* ---- micro: per-call cost, one device, two QPs in loopback -------------------------------- */

enum { M_POST_RECV, M_POST_SEND, M_POLL_SEND, M_POLL_RECV, M_POLL_EMPTY, M_N };
static const char *const m_name[M_N] = {
	"post_recv (1 WR)", "post_send (8 B inline SEND)", "poll_cq (1 send wc)",
	"poll_cq (1 recv wc)", "poll_cq (empty CQ)",
};
static const char *const m_call[M_N] = {
#ifdef VB_CLIENT
	"uroce_client_post_recv", "uroce_client_post_send", "uroce_client_poll_cq",
	"uroce_client_poll_cq", "uroce_client_poll_cq",
#else
	"ibv_post_recv", "ibv_post_send", "ibv_poll_cq", "ibv_poll_cq", "ibv_poll_cq",
#endif
};

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int run_micro(const struct vb_opts *o)
{
	int batch = o->batch > 0 ? o->batch : 64;
	long reps = o->iters > 0 ? o->iters : (o->quick ? 300 : 3000), rep, valid = 0, retried = 0;
	struct vb_dev d;
	vb_cq *cqa = NULL, *cqb = NULL;
	vb_qp *qa = NULL, *qb = NULL;
	vb_mr *mr = NULL;
	uint8_t *buf = NULL;
	size_t buflen = 4096;
	struct ibv_qp_cap cap;
	struct ibv_wc *wc = NULL;
	double *ns[M_N] = { NULL };
	useconds_t wait_us = 200;
	int ret = 1, r, m, i;
	uint32_t psn_a = xfer_rand_psn(), psn_b = (psn_a + 0x1000) & 0xffffff;

	if (o->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(o->cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			xfer_err("cannot pin to CPU %d: %s (not pinned)", o->cpu, strerror(errno));
	}
	r = vb_dev_open(&d, o->socket);
	if (r) {
		ret = r == VB_EXIT_SKIP ? r : 1;
		goto out;
	}
	buf = mmap(NULL, buflen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	wc = calloc((size_t)batch, sizeof(*wc));
	for (m = 0; m < M_N; m++)
		ns[m] = calloc((size_t)reps, sizeof(double));
	if (buf == MAP_FAILED || !wc || !ns[M_N - 1]) {
		buf = buf == MAP_FAILED ? NULL : buf;
		goto out;
	}
	mr = vb_reg_mr(&d, buf, buflen);
	cqa = vb_create_cq(&d, batch + 8);
	cqb = vb_create_cq(&d, batch + 8);
	if (!mr || !cqa || !cqb)
		goto out;
	qa = vb_create_qp(&d, cqa, (uint32_t)batch, 1, &cap);
	qb = vb_create_qp(&d, cqb, 1, (uint32_t)batch, &cap);
	if (!qa || !qb ||
	    vb_connect(qa, d.gid_index, 1024, psn_a, VB_QPN(qb), psn_b, &d.gid) ||
	    vb_connect(qb, d.gid_index, 1024, psn_b, VB_QPN(qa), psn_a, &d.gid))
		goto out;

	for (rep = 0; rep < reps; rep++) {
		struct ibv_sge rsge = { .addr = (uintptr_t)buf, .length = 64,
					.lkey = VB_MR_LKEY(mr) };
		struct ibv_sge ssge = { .addr = (uintptr_t)buf + 2048, .length = 8,
					.lkey = VB_MR_LKEY(mr) };
		struct ibv_recv_wr rwr = { .sg_list = &rsge, .num_sge = 1 }, *rbad;
		struct ibv_send_wr swr = { .sg_list = &ssge, .num_sge = 1, .opcode = IBV_WR_SEND,
					   .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE },
				   *sbad;
		uint64_t t[3];
		int got_s = 0, got_r = 0, e = 0, late = 0;

		t[0] = xfer_now_ns();
		for (i = 0; i < batch; i++) {
			rwr.wr_id = (uint64_t)i;
			e |= vb_post_recv(qb, &rwr, &rbad);
		}
		t[1] = xfer_now_ns();
		for (i = 0; i < batch; i++) {
			swr.wr_id = (uint64_t)i;
			e |= vb_post_send(qa, &swr, &sbad);
		}
		t[2] = xfer_now_ns();
		if (e) {
			xfer_err("micro: post failed");
			goto out;
		}
		/* The daemon loops the batch back; the polls below must each find one. */
		usleep(wait_us);
		{
			uint64_t a = xfer_now_ns(), b, c;

			for (i = 0; i < batch; i++)
				got_s += vb_poll_cq(cqa, 1, &wc[i]);
			b = xfer_now_ns();
			for (i = 0; i < batch; i++)
				got_r += vb_poll_cq(cqb, 1, &wc[i]);
			c = xfer_now_ns();
			for (i = 0; i < batch; i++) {
				int k = vb_poll_cq(cqa, 1, &wc[batch - 1]);

				/* A send completion arriving only now (the daemon ran during the
				 * loops: lib/client's poll_cq yields after 64 empty polls) is
				 * counted, and the batch redone. */
				if (k > 0)
					late += k;
				else if (k < 0)
					e = k;
			}
			ns[M_POLL_SEND][valid] = (double)(b - a) / batch;
			ns[M_POLL_RECV][valid] = (double)(c - b) / batch;
			ns[M_POLL_EMPTY][valid] = (double)(xfer_now_ns() - c) / batch;
		}
		ns[M_POST_RECV][valid] = (double)(t[1] - t[0]) / batch;
		ns[M_POST_SEND][valid] = (double)(t[2] - t[1]) / batch;
		if (got_s == batch && got_r == batch && !e && !late) {
			for (i = 0; i < batch; i++)
				if (wc[i].status != IBV_WC_SUCCESS) {
					xfer_err("micro: completion error %d", (int)wc[i].status);
					goto out;
				}
			valid++;
			continue;
		}
		/* The daemon had not finished (or a poll failed): drain, wait longer, redo. */
		if (e < 0 || got_s < 0 || got_r < 0) {
			xfer_err("micro: poll failed");
			goto out;
		}
		got_s += late;
		retried++;
		if (wait_us < 20000)
			wait_us *= 2;
		{
			uint64_t end = xfer_now_ns() + (uint64_t)o->timeout_ms * 1000000;

			while (got_s < batch || got_r < batch) {
				int k;

				if (xfer_now_ns() > end) {
					xfer_err("micro: completions missing (%d send, %d recv "
						 "of %d)", got_s, got_r, batch);
					goto out;
				}
				k = vb_poll_cq(cqa, batch, wc);
				got_s += k > 0 ? k : 0;
				k = vb_poll_cq(cqb, batch, wc);
				got_r += k > 0 ? k : 0;
				if (got_s < batch || got_r < batch)
					usleep(100);
			}
		}
		if (retried > reps) {
			xfer_err("micro: the daemon does not keep up (%ld retries)", retried);
			goto out;
		}
		rep--;
	}
	printf("micro: %s, one uroced, 2 RC QPs in loopback, batches of %d calls, median of "
	       "%ld batches (%ld redone: daemon not finished), CPU %d\n", VB_API, batch, valid,
	       retried, o->cpu);
	for (m = 0; m < M_N; m++) {
		qsort(ns[m], (size_t)valid, sizeof(double), cmp_dbl);
		printf("micro-result: op=%d what=\"%s\" call=%s median_ns=%.1f p10_ns=%.1f "
		       "p90_ns=%.1f\n", m, m_name[m], m_call[m], ns[m][valid / 2],
		       ns[m][valid / 10], ns[m][(valid * 9) / 10]);
	}
	ret = 0;
out:
	vb_destroy_qp(qa);
	vb_destroy_qp(qb);
	vb_destroy_cq(cqa);
	vb_destroy_cq(cqb);
	vb_dereg_mr(mr);
	if (d.ctx)
		vb_dev_close(&d);
	if (buf)
		munmap(buf, buflen);
	free(wc);
	for (m = 0; m < M_N; m++)
		free(ns[m]);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: %s [-S socket] MODE [options] [server]\n"
"  API: " VB_API "\n"
"  lat    8 B RC SEND ping-pong (uroce-xfer lat's loop): -s 8 -n 10000 -m 1024\n"
"  bw     RDMA WRITE bandwidth (uroce-xfer bw's loop): -s 65536 -n 5000 -w 32 -m 4096\n"
"  micro  ns per post_send/post_recv/poll_cq, one device, two QPs in loopback:\n"
"         -b calls per batch (64), -n batches (3000; 300 with --quick), -c CPU (1)\n"
"  --spin     lat, bw: poll the CQ with no yield of our own (as perftest does; the\n"
"             default is uroce-xfer's: 50 polls, then sched_yield per empty poll)\n"
"  -S socket  uroced's control socket (else $UROCE_SOCKET)\n"
"  -p port    TCP port of the exchange (18515); -t seconds: longest wait (30)\n"
"  exit 77: no uroced answered\n", "uroce-bench-verbs");
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"socket", 1, NULL, 'S'},  {"port", 1, NULL, 'p'},   {"size", 1, NULL, 's'},
		{"iters", 1, NULL, 'n'},   {"window", 1, NULL, 'w'}, {"mtu", 1, NULL, 'm'},
		{"timeout", 1, NULL, 't'}, {"batch", 1, NULL, 'b'},  {"cpu", 1, NULL, 'c'},
		{"quick", 0, NULL, 'q'},   {"spin", 0, NULL, 'Y'},   {"help", 0, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	struct vb_opts o = { .port = 18515, .size = -1, .iters = -1, .window = 32, .mtu = 0,
			     .timeout_ms = 30000, .batch = 64, .cpu = 1 };
	const char *mode = NULL;
	int c;

	xfer_prog = "uroce-bench-verbs";
	while (optind < argc) {
		while ((c = getopt_long(argc, argv, "+S:p:s:n:w:m:t:b:c:qYh", lopts, NULL)) != -1) {
			switch (c) {
			case 'S': o.socket = optarg; break;
			case 'p': o.port = atoi(optarg); break;
			case 's': o.size = strtol(optarg, NULL, 0); break;
			case 'n': o.iters = strtol(optarg, NULL, 0); break;
			case 'w': o.window = atoi(optarg); break;
			case 'm': o.mtu = atoi(optarg); break;
			case 't': o.timeout_ms = atoi(optarg) * 1000; break;
			case 'b': o.batch = atoi(optarg); break;
			case 'c': o.cpu = atoi(optarg); break;
			case 'q': o.quick = true; break;
			case 'Y': spin_only = true; break;
			case 'h': usage(stdout); return 0;
			default: usage(stderr); return 2;
			}
		}
		if (optind >= argc)
			break;
		if (!mode)
			mode = argv[optind++];
		else if (!o.server)
			o.server = argv[optind++];
		else {
			usage(stderr);
			return 2;
		}
	}
	if (!mode) {
		usage(stderr);
		return 2;
	}
	if (o.timeout_ms <= 0)
		o.timeout_ms = 30000;
	if (!strcmp(mode, "lat")) {
		o.mtu = o.mtu ? o.mtu : 1024;
		return xfer_mtu_enum(o.mtu) ? run_lat(&o) : 2;
	}
	if (!strcmp(mode, "bw")) {
		o.mtu = o.mtu ? o.mtu : 4096;
		return xfer_mtu_enum(o.mtu) ? run_bw(&o) : 2;
	}
	if (!strcmp(mode, "micro"))
		return run_micro(&o);
	usage(stderr);
	return 2;
}
