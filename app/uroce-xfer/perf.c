/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bw: RDMA WRITE bandwidth over RC (a window of outstanding WRs, 64 KiB by default);
 * lat: 8-byte RC SEND ping-pong latency (median and p99 of the half round trip, as
 * perftest's ib_send_lat reports it). Both exchange QPN, PSN, GID, address and rkey over
 * TCP as a small binary struct; the server prints nothing but its own line at the end.
 * The loops themselves are in loops.c, shared with test/bench/verbs_bench.c.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xfer.h"

#define PERF_MAGIC 0x66726570u /* "perf" */

struct perf {
	struct xfer_dev dev;
	struct uroce_client_channel *ch; /* -e: sleep on CQ events between polls */
	unsigned int events;             /* CQ events taken, acked at close */
	struct uroce_client_cq *cq;
	struct uroce_client_qp *qp;
	struct uroce_client_mr *mr;
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
	if (p->qp)
		uroce_client_destroy_qp(p->qp);
	if (p->cq && p->events)
		uroce_client_ack_cq_events(p->cq, p->events);
	if (p->cq)
		uroce_client_destroy_cq(p->cq);
	if (p->ch)
		uroce_client_destroy_channel(p->ch);
	if (p->mr)
		uroce_client_dereg_mr(p->mr);
	xfer_dev_close(&p->dev);
	xfer_free(p->buf, p->buflen);
}

/* Device, buffer, one RC QP on one CQ, connected to the peer through the exchange. */
static int perf_setup(struct perf *p, const struct xfer_opts *o, size_t buflen, uint32_t sq,
		      uint32_t rq, uint64_t size, uint64_t iters, int mtu)
{
	struct xfer_perf_msg me;
	struct xfer_peer peer;
	uint32_t psn = xfer_rand_psn();

	memset(p, 0, sizeof(*p));
	p->fd = -1;
	if (xfer_dev_open(&p->dev, o))
		return -1;
	p->buflen = buflen;
	p->buf = xfer_alloc(buflen);
	if (!p->buf)
		return -1;
	memset(p->buf, 0x11, buflen);
	p->mr = uroce_client_reg_mr(p->dev.pd, p->buf, buflen,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ);
	if (!p->mr) {
		xfer_err("reg_mr: %s", strerror(errno));
		return -1;
	}
	if (o->events) {
		p->ch = uroce_client_create_channel(p->dev.ctx);
		if (!p->ch) {
			xfer_err("create_comp_channel: %s", strerror(errno));
			return -1;
		}
	}
	p->cq = uroce_client_create_cq(p->dev.ctx, (int)(sq + rq + 8), p->ch, 0);
	if (!p->cq) {
		xfer_err("create_cq: %s", strerror(errno));
		return -1;
	}
	if (p->ch && uroce_client_req_notify_cq(p->cq, 0)) {
		xfer_err("req_notify_cq failed");
		return -1;
	}
	p->qp = xfer_create_qp(&p->dev, IBV_QPT_RC, p->cq, p->cq, sq, rq, 64, &p->cap);
	if (!p->qp ||
	    xfer_qp_init(p->qp, IBV_QPT_RC, p->dev.ib_port,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
			 0))
		return -1;
	memset(&me, 0, sizeof(me));
	me.magic = PERF_MAGIC;
	me.qpn = uroce_client_qp_ibv(p->qp)->qp_num;
	me.psn = psn;
	me.rkey = p->mr->ibv.rkey;
	me.addr = (uintptr_t)p->buf;
	memcpy(me.gid, p->dev.gid.raw, 16);
	me.size = size;
	me.iters = iters;
	p->fd = xfer_perf_open(o->server, o->port, o->timeout_ms);
	if (p->fd < 0 || xfer_perf_exchange(p->fd, &me, &p->peer, o->timeout_ms))
		return -1;
	peer.qpn = p->peer.qpn;
	peer.psn = p->peer.psn;
	memcpy(peer.gid.raw, p->peer.gid, 16);
	if (xfer_qp_connect(p->qp, IBV_QPT_RC, p->dev.ib_port, p->dev.gid_index,
			    xfer_mtu_enum(mtu), psn, &peer, 64, 1))
		return -1;
	return 0;
}

/* The loops' completion wait: xfer_cq_wait on the perf's CQ and channel. */
static int perf_wait(void *arg, struct ibv_wc *wc, int max, int timeout_ms)
{
	struct perf *p = arg;

	return xfer_cq_wait(p->cq, p->ch, wc, max, timeout_ms, &p->events);
}

static struct xfer_loop perf_loop(struct perf *p, int timeout_ms)
{
	return (struct xfer_loop){ .v = &xfer_client_verbs, .qp = p->qp, .wait = perf_wait,
				   .wait_arg = p, .timeout_ms = timeout_ms };
}

int xfer_bw(const struct xfer_opts *o)
{
	uint64_t size = (uint64_t)(o->size >= 0 ? o->size : 65536);
	uint64_t iters = (uint64_t)(o->iters >= 0 ? o->iters : 5000);
	uint32_t window = (uint32_t)(o->window > 0 ? o->window : 32);
	int mtu = o->mtu ? o->mtu : 4096;
	struct perf p;
	int ret = 1;

	if (!xfer_mtu_enum(mtu)) {
		xfer_err("bad MTU %d", mtu);
		return 1;
	}
	if (perf_setup(&p, o, size ? size : 1, window + 2, 2, size, iters, mtu) ||
	    xfer_perf_sync(p.fd, o->timeout_ms))
		goto out;
	if (o->server) {
		struct xfer_loop l = perf_loop(&p, o->timeout_ms);
		struct ibv_sge sge = { .addr = (uintptr_t)p.buf, .length = (uint32_t)size,
				       .lkey = p.mr->ibv.lkey };
		uint64_t ns;
		double secs;

		if (xfer_loop_bw(&l, &sge, iters, window, p.peer.addr, p.peer.rkey, &ns))
			goto out;
		secs = (double)ns / 1e9;
		printf("bw: %lu x %lu B RDMA WRITE (RC, MTU %d, window %u) in %.3f s: "
		       "%.3f Gbit/s, %.0f msg/s\n", (unsigned long)iters, (unsigned long)size, mtu,
		       window, secs, (double)iters * (double)size * 8 / secs / 1e9,
		       (double)iters / secs);
		fflush(stdout);
	}
	ret = xfer_perf_sync(p.fd, o->timeout_ms * 4) ? 1 : 0;
	if (!o->server && !ret)
		printf("bw: served %lu x %lu B RDMA WRITE\n", (unsigned long)p.peer.iters,
		       (unsigned long)p.peer.size);
out:
	perf_close(&p);
	return ret;
}

int xfer_lat(const struct xfer_opts *o)
{
	uint64_t size = (uint64_t)(o->size >= 0 ? o->size : 8);
	uint64_t iters = (uint64_t)(o->iters >= 0 ? o->iters : 10000);
	uint32_t depth = 16;
	int mtu = o->mtu ? o->mtu : 1024;
	uint64_t *rtt = NULL;
	struct perf p;
	struct xfer_lat_wrs w;
	struct xfer_loop l;
	int ret = 1;

	if (!xfer_mtu_enum(mtu) || !iters) {
		xfer_err("bad MTU %d or iterations", mtu);
		return 1;
	}
	rtt = calloc(iters, sizeof(*rtt));
	if (!rtt)
		return 1;
	/* Receives in the first half of the buffer, sends from the second. */
	if (perf_setup(&p, o, 2 * (size ? size : 1), 2, depth, size, iters, mtu))
		goto out;
	xfer_lat_wrs_init(&w, p.buf, size, p.mr->ibv.lkey, p.cap.max_inline_data);
	l = perf_loop(&p, o->timeout_ms);
	if (xfer_loop_post_recvs(&l, &w.rwr, depth) || xfer_perf_sync(p.fd, o->timeout_ms) ||
	    xfer_loop_lat(&l, &(struct xfer_lat_run){ .rwr = &w.rwr, .swr = &w.swr,
						       .iters = iters,
						       .initiator = o->server != NULL,
						       .pause_us = o->pause_us, .rtt = rtt }))
		goto out;
	if (o->server) {
		struct xfer_lat_stats st;

		xfer_lat_stats(rtt, iters, &st);
		printf("lat: %lu B RC SEND ping-pong, %lu iters: median %.2f us, p99 %.2f us, "
		       "min %.2f us, max %.2f us, avg %.2f us (half round trip)\n",
		       (unsigned long)size, (unsigned long)iters, st.median, st.p99, st.min, st.max,
		       st.avg);
		/* Percentiles 0..100 of the half round trip, for a CDF (doc/benchmarks.md). */
		printf("lat: cdf_half_rtt_us=");
		for (int q = 0; q <= 100; q++)
			printf("%s%.2f", q ? "," : "",
			       rtt[(iters - 1) * (uint64_t)q / 100] / 2000.0);
		printf("\n");
		fflush(stdout);
	}
	ret = xfer_perf_sync(p.fd, o->timeout_ms) ? 1 : 0;
	if (!o->server && !ret)
		printf("lat: answered %lu messages\n", (unsigned long)iters);
out:
	free(rtt);
	perf_close(&p);
	return ret;
}
