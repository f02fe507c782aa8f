/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The measuring loops of uroce-xfer's bw and lat (perf.c), which test/bench/verbs_bench.c
 * runs as well, through libibverbs or lib/client: the data-path calls are the caller's
 * (struct xfer_verbs), and so is the completion wait (struct xfer_loop).
 */

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xfer_loops.h"

int xfer_poll_wait_on(const struct xfer_verbs *v, void *cq, struct ibv_wc *wc, int max,
		      int timeout_ms, bool spin)
{
	uint64_t start = 0, now;
	unsigned int spins = 0;

	for (;;) {
		int n = v->poll_cq(cq, max, wc);

		if (n < 0) {
			xfer_err("poll CQ failed %d", n);
			return -1;
		}
		if (n > 0)
			return n;
		/* Spin about a microsecond, then yield on every empty poll: the daemon that
		 * must send what we just posted may share this core (measured: 2000 spins
		 * cost ~30 us per 8 B round trip against 10-15 us with 50; doc/benchmarks.md).
		 * With a core to ourselves sched_yield returns at once. */
		if (++spins < 50 || (spin && (spins & 1023)))
			continue;
		now = xfer_now_ns();
		if (!start)
			start = now;
		if (now - start >= (uint64_t)timeout_ms * 1000000)
			return 0;
		if (spin)
			continue;
		if (now - start < 2000000)
			sched_yield();
		else
			usleep(50);
	}
}

int xfer_perf_open(const char *server, int port, int timeout_ms)
{
	return server ? oob_connect(server, port, timeout_ms) :
			oob_listen_accept(port, timeout_ms * 4);
}

int xfer_perf_exchange(int fd, const struct xfer_perf_msg *me, struct xfer_perf_msg *peer,
		       int timeout_ms)
{
	if (oob_write(fd, me, sizeof(*me), timeout_ms) ||
	    oob_read(fd, peer, sizeof(*peer), timeout_ms) || peer->magic != me->magic) {
		xfer_err("exchange with the peer failed");
		return -1;
	}
	return 0;
}

int xfer_perf_sync(int fd, int timeout_ms)
{
	char c = 'r';

	return oob_write(fd, &c, 1, timeout_ms) || oob_read(fd, &c, 1, timeout_ms) ? -1 : 0;
}

int xfer_loop_bw(const struct xfer_loop *l, struct ibv_sge *sge, uint64_t iters, uint32_t window,
		 uint64_t remote_addr, uint32_t rkey, uint64_t *ns)
{
	uint64_t posted = 0, done = 0, t0 = xfer_now_ns();

	while (done < iters) {
		struct ibv_wc wc[32];
		int n, k;

		while (posted < iters && posted - done < window) {
			struct ibv_send_wr wr, *bad;
			int err;

			memset(&wr, 0, sizeof(wr));
			wr.wr_id = posted;
			wr.sg_list = sge;
			wr.num_sge = sge->length ? 1 : 0;
			wr.opcode = IBV_WR_RDMA_WRITE;
			/* Signal every 8th, and the last one of the run. */
			if (posted % 8 == 7 || posted + 1 == iters || posted + 1 - done == window)
				wr.send_flags = IBV_SEND_SIGNALED;
			wr.wr.rdma.remote_addr = remote_addr;
			wr.wr.rdma.rkey = rkey;
			err = l->v->post_send(l->qp, &wr, &bad);
			if (err) {
				xfer_err("post_send: %s", strerror(err));
				return -1;
			}
			posted++;
		}
		n = l->wait(l->wait_arg, wc, 32, l->timeout_ms);
		if (n <= 0) {
			xfer_err("bw: %s after %lu of %lu writes (posted %lu)",
				 n ? "poll failed" : "timeout", (unsigned long)done,
				 (unsigned long)iters, (unsigned long)posted);
			return -1;
		}
		for (k = 0; k < n; k++) {
			if (wc[k].status != IBV_WC_SUCCESS) {
				xfer_err("bw: completion error %s for wr_id %lu",
					 l->v->wc_status_str(wc[k].status),
					 (unsigned long)wc[k].wr_id);
				return -1;
			}
			done = wc[k].wr_id + 1;
		}
	}
	*ns = xfer_now_ns() - t0;
	return 0;
}

int xfer_loop_post_recvs(const struct xfer_loop *l, struct ibv_recv_wr *wr, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct ibv_recv_wr *bad;

		if (l->v->post_recv(l->qp, wr, &bad)) {
			xfer_err("post_recv failed");
			return -1;
		}
	}
	return 0;
}

void xfer_lat_wrs_init(struct xfer_lat_wrs *w, uint8_t *buf, uint64_t size, uint32_t lkey,
		       uint32_t max_inline)
{
	memset(w, 0, sizeof(*w));
	w->rsge = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = (uint32_t)size,
				    .lkey = lkey };
	w->ssge = (struct ibv_sge){ .addr = (uintptr_t)buf + size, .length = (uint32_t)size,
				    .lkey = lkey };
	w->rwr.sg_list = &w->rsge;
	w->rwr.num_sge = size ? 1 : 0;
	w->swr.sg_list = &w->ssge;
	w->swr.num_sge = size ? 1 : 0;
	w->swr.opcode = IBV_WR_SEND;
	w->swr.send_flags = IBV_SEND_SIGNALED | (size <= max_inline ? IBV_SEND_INLINE : 0);
}

/* Completions are counted, not paired per iteration: the peer's next message may come
 * before our own send's ACK (ACKs are coalesced). The initiator times each round trip
 * from its post to the answer's receive completion. */
int xfer_loop_lat(const struct xfer_loop *l, const struct xfer_lat_run *r)
{
	uint64_t recvd = 0, t0 = 0;
	uint32_t outstanding = 0;
	struct ibv_send_wr *sbad;
	struct ibv_recv_wr *rbad;

	if (r->initiator) {
		t0 = xfer_now_ns();
		if (l->v->post_send(l->qp, r->swr, &sbad)) {
			xfer_err("post_send failed");
			return -1;
		}
		outstanding++;
	}
	while (recvd < r->iters || outstanding) {
		struct ibv_wc wc[8];
		int n = l->wait(l->wait_arg, wc, 8, l->timeout_ms), k;

		if (n <= 0) {
			xfer_err("lat: %s after %lu of %lu messages (%u sends outstanding)",
				 n ? "poll failed" : "timeout", (unsigned long)recvd,
				 (unsigned long)r->iters, outstanding);
			return -1;
		}
		for (k = 0; k < n; k++) {
			if (wc[k].status != IBV_WC_SUCCESS) {
				xfer_err("lat: completion error %s",
					 l->v->wc_status_str(wc[k].status));
				return -1;
			}
			if (wc[k].opcode == IBV_WC_SEND) {
				outstanding--;
				continue;
			}
			if (r->initiator)
				r->rtt[recvd] = xfer_now_ns() - t0;
			recvd++;
			if (l->v->post_recv(l->qp, r->rwr, &rbad)) {
				xfer_err("post_recv failed");
				return -1;
			}
			/* The other side answers every message; the initiator sends the next. */
			if (r->initiator ? recvd < r->iters : 1) {
				/* The SQ holds 2: wait for room (the ACK) if needed. */
				while (outstanding >= 2) {
					struct ibv_wc w;
					int m = l->wait(l->wait_arg, &w, 1, l->timeout_ms);

					if (m <= 0 || w.status != IBV_WC_SUCCESS) {
						xfer_err("lat: no send completion");
						return -1;
					}
					if (w.opcode == IBV_WC_SEND) {
						outstanding--;
					} else {
						xfer_err("lat: unexpected receive");
						return -1;
					}
				}
				if (r->initiator && r->pause_us > 0)
					usleep((useconds_t)r->pause_us);
				if (r->initiator)
					t0 = xfer_now_ns();
				if (l->v->post_send(l->qp, r->swr, &sbad)) {
					xfer_err("post_send failed");
					return -1;
				}
				outstanding++;
			}
		}
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void xfer_lat_stats(uint64_t *rtt, uint64_t n, struct xfer_lat_stats *s)
{
	uint64_t sum = 0, i;

	for (i = 0; i < n; i++)
		sum += rtt[i];
	qsort(rtt, n, sizeof(*rtt), cmp_u64);
	s->median = rtt[n / 2] / 2000.0;
	s->p99 = rtt[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] / 2000.0;
	s->min = rtt[0] / 2000.0;
	s->max = rtt[n - 1] / 2000.0;
	s->avg = (double)sum / n / 2000.0;
}
