/* SPDX-License-Identifier: BSD-3-Clause */
/* The device, QP state changes, completion waits with a timeout, data patterns. */

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "uroce_wire.h"
#include "xfer.h"
#include "xfer_client_verbs.h"

int xfer_find_ipv4_gid(struct xfer_dev *d, union ibv_gid *gid)
{
	int n = d->port_attr.gid_tbl_len > 0 ? d->port_attr.gid_tbl_len : 16;
	int i;

	for (i = 0; i < n; i++) {
		union ibv_gid g;

		if (uroce_client_query_gid(d->ctx, (uint8_t)d->ib_port, i, &g))
			break;
		if (uroce_gid_is_ipv4(g.raw)) {
			*gid = g;
			return i;
		}
	}
	return -1;
}

int xfer_dev_open(struct xfer_dev *d, const struct xfer_opts *o)
{
	int r;

	memset(d, 0, sizeof(*d));
	d->ib_port = o->ib_port;
	d->ctx = uroce_client_open(o->socket);
	if (!d->ctx) {
		xfer_err("cannot connect to uroced at %s: %s",
			 o->socket ? o->socket :
			 getenv("UROCE_SOCKET") ? getenv("UROCE_SOCKET") : "the default socket",
			 strerror(errno));
		return -1;
	}
	r = uroce_client_query_port(d->ctx, (uint8_t)d->ib_port, &d->port_attr);
	if (r) {
		xfer_err("query_port %d: %s", d->ib_port, strerror(r));
		goto fail;
	}
	if (o->gid_index >= 0) {
		r = uroce_client_query_gid(d->ctx, (uint8_t)d->ib_port, o->gid_index, &d->gid);
		if (r) {
			xfer_err("can't read sgid of index %d: %s", o->gid_index, strerror(r));
			goto fail;
		}
		d->gid_index = o->gid_index;
	} else {
		d->gid_index = xfer_find_ipv4_gid(d, &d->gid);
		if (d->gid_index < 0) {
			xfer_err("no IPv4 RoCE v2 GID on port %d (give one with -g)", d->ib_port);
			goto fail;
		}
	}
	d->pd = uroce_client_alloc_pd(d->ctx);
	if (!d->pd) {
		xfer_err("alloc_pd: %s", strerror(errno));
		goto fail;
	}
	return 0;
fail:
	uroce_client_close(d->ctx);
	d->ctx = NULL;
	return -1;
}

void xfer_dev_close(struct xfer_dev *d)
{
	if (d->pd)
		uroce_client_dealloc_pd(d->pd);
	if (d->ctx)
		uroce_client_close(d->ctx);
	memset(d, 0, sizeof(*d));
}

struct uroce_client_qp *xfer_create_qp(struct xfer_dev *d, enum ibv_qp_type type,
				       struct uroce_client_cq *scq, struct uroce_client_cq *rcq,
				       uint32_t max_send_wr, uint32_t max_recv_wr,
				       uint32_t max_inline, struct ibv_qp_cap *cap_out)
{
	struct ibv_qp_init_attr ia;
	struct uroce_client_qp *qp;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = uroce_client_cq_ibv(scq);
	ia.recv_cq = uroce_client_cq_ibv(rcq);
	ia.qp_type = type;
	ia.cap.max_send_wr = max_send_wr;
	ia.cap.max_recv_wr = max_recv_wr;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = max_inline;
	qp = uroce_client_create_qp(d->pd, &ia);
	if (!qp) {
		xfer_err("create_qp (%s, send %u, recv %u): %s",
			 type == IBV_QPT_RC ? "RC" : type == IBV_QPT_UC ? "UC" : "UD",
			 max_send_wr, max_recv_wr, strerror(errno));
		return NULL;
	}
	if (cap_out)
		*cap_out = ia.cap;
	return qp;
}

int xfer_qp_init(struct uroce_client_qp *qp, enum ibv_qp_type type, int ib_port,
		 unsigned int access, uint32_t qkey)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	int r;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = (uint8_t)ib_port;
	if (type == IBV_QPT_UD) {
		a.qkey = qkey;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = access;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	r = uroce_client_modify_qp(qp, &a, mask);
	if (r)
		xfer_err("Failed to modify QP to INIT: %s", strerror(r));
	return r ? -1 : 0;
}

int xfer_qp_connect(struct uroce_client_qp *qp, enum ibv_qp_type type, int ib_port,
		    int gid_index, enum ibv_mtu mtu, uint32_t my_psn,
		    const struct xfer_peer *peer, uint8_t hop_limit, uint8_t rd_atomic)
{
	struct ibv_qp_attr a;
	int mask, r;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (type != IBV_QPT_UD) {
		a.path_mtu = mtu;
		a.dest_qp_num = peer->qpn;
		a.rq_psn = peer->psn;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = peer->gid;
		a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
		a.ah_attr.grh.hop_limit = hop_limit;
		a.ah_attr.port_num = (uint8_t)ib_port;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = rd_atomic;
			a.min_rnr_timer = 12;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	r = uroce_client_modify_qp(qp, &a, mask);
	if (r) {
		xfer_err("Failed to modify QP to RTR: %s", strerror(r));
		return -1;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = my_psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (type == IBV_QPT_RC) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = rd_atomic;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	r = uroce_client_modify_qp(qp, &a, mask);
	if (r) {
		xfer_err("Failed to modify QP to RTS: %s", strerror(r));
		return -1;
	}
	return 0;
}

struct uroce_client_ah *xfer_create_ah(struct xfer_dev *d, int gid_index,
				       const union ibv_gid *dgid, uint8_t hop_limit)
{
	struct ibv_ah_attr a;
	struct uroce_client_ah *ah;

	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.grh.dgid = *dgid;
	a.grh.sgid_index = (uint8_t)gid_index;
	a.grh.hop_limit = hop_limit;
	a.port_num = (uint8_t)d->ib_port;
	ah = uroce_client_create_ah(d->pd, &a);
	if (!ah)
		xfer_err("Failed to create AH: %s", strerror(errno));
	return ah;
}

const struct xfer_verbs xfer_client_verbs = {
	.post_send = xfer_client_post_send,
	.post_recv = xfer_client_post_recv,
	.poll_cq = xfer_client_poll_cq,
	.wc_status_str = uroce_client_wc_status_str,
};

int xfer_poll_wait(struct uroce_client_cq *cq, struct ibv_wc *wc, int max, int timeout_ms)
{
	return xfer_poll_wait_on(&xfer_client_verbs, cq, wc, max, timeout_ms, false);
}

int xfer_cq_wait(struct uroce_client_cq *cq, struct uroce_client_channel *ch, struct ibv_wc *wc,
		 int max, int timeout_ms, unsigned int *events)
{
	uint64_t deadline;

	if (!ch)
		return xfer_poll_wait(cq, wc, max, timeout_ms);
	deadline = xfer_now_ns() + (uint64_t)timeout_ms * 1000000;
	/* As rdma-core's examples: the CQ is armed; poll, and when it is empty wait for its
	 * event, take it, re-arm and poll again (a completion between the poll and the arm
	 * raised an event, or the poll after the arm finds it). Events are counted for
	 * uroce_client_ack_cq_events(). */
	for (;;) {
		struct uroce_client_cq *ev_cq;
		struct pollfd pf = {.fd = ch->ibv.fd, .events = POLLIN};
		uint64_t now = xfer_now_ns();
		int n = uroce_client_poll_cq(cq, max, wc), r;

		if (n)
			return n;
		if (now >= deadline)
			return 0;
		r = poll(&pf, 1, (int)((deadline - now) / 1000000) + 1);
		if (r == 0)
			continue;
		if (r < 0 || uroce_client_get_cq_event(ch, &ev_cq)) {
			xfer_err("Failed to get cq_event");
			return -1;
		}
		++*events;
		if (ev_cq != cq) {
			xfer_err("CQ event for unknown CQ %p", (void *)ev_cq);
			return -1;
		}
		if (uroce_client_req_notify_cq(cq, 0)) {
			xfer_err("Couldn't request CQ notification");
			return -1;
		}
	}
}

const char *xfer_wc_opcode_str(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_BIND_MW: return "BIND_MW";
	case IBV_WC_LOCAL_INV: return "LOCAL_INV";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "?";
	}
}

void xfer_gid_str(const union ibv_gid *gid, char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, gid->raw, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static uint64_t pattern_key(uint64_t seed, uint64_t size, uint64_t iter)
{
	return xfer_mix64(seed ^ xfer_mix64(size * 0x9e3779b97f4a7c15ull + iter + 1));
}

static inline uint64_t pattern_word(uint64_t key, uint64_t w)
{
	return xfer_mix64(key + w * 0xd1b54a32d192ed03ull);
}

uint8_t xfer_pattern_byte(uint64_t seed, uint64_t size, uint64_t iter, size_t off)
{
	uint64_t v = pattern_word(pattern_key(seed, size, iter), off >> 3);

	return (uint8_t)(v >> (8 * (off & 7)));
}

void xfer_pattern_fill(uint8_t *buf, size_t len, uint64_t seed, uint64_t size, uint64_t iter)
{
	uint64_t key = pattern_key(seed, size, iter);
	size_t off = 0;

	for (; off + 8 <= len; off += 8) {
		uint64_t v = pattern_word(key, off >> 3);
		int b;

		for (b = 0; b < 8; b++)
			buf[off + (size_t)b] = (uint8_t)(v >> (8 * b));
	}
	if (off < len) {
		uint64_t v = pattern_word(key, off >> 3);

		for (; off < len; off++)
			buf[off] = (uint8_t)(v >> (8 * (off & 7)));
	}
}

long xfer_pattern_check(const uint8_t *buf, size_t len, uint64_t seed, uint64_t size,
			uint64_t iter)
{
	uint64_t key = pattern_key(seed, size, iter);
	size_t off;

	for (off = 0; off < len; off++) {
		uint64_t v = pattern_word(key, off >> 3);
		size_t end = (off | 7) + 1 < len ? (off | 7) + 1 : len;

		for (; off < end; off++)
			if (buf[off] != (uint8_t)(v >> (8 * (off & 7))))
				return (long)off;
		off--;
	}
	return -1;
}
