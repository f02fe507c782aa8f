/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_pingpong and ud_pingpong, wire-compatible with rdma-core's ibv_rc_pingpong and
 * ibv_ud_pingpong (libibverbs/examples): the same TCP exchange (52 bytes of
 * "LID:QPN:PSN:GID" text each way, then "done\0" from the client), the same QP setup
 * (RC: timeout 14, retry 7, RNR retry 7, min RNR timer 12, GRH hop limit 1; UD: Q_Key
 * 0x11111111, 40 bytes of GRH room in front of each receive), the same order (the
 * server connects its QP before it answers; receives are posted before the exchange),
 * one buffer for sends and receives, and the same summary lines. So either side can be
 * the unmodified rdma-core tool, e.g. inside an rxe VM.
 */

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xfer.h"

enum { PP_RECV_WRID = 1, PP_SEND_WRID = 2 };
#define PP_QKEY 0x11111111u
#define PP_GRH 40

struct pp {
	enum ibv_qp_type type;
	struct xfer_dev dev;
	struct uroce_client_channel *ch;
	struct uroce_client_cq *cq;
	struct uroce_client_qp *qp;
	struct uroce_client_mr *mr;
	struct uroce_client_ah *ah;
	uint8_t *buf;
	size_t buflen;
	uint32_t size;
	int rx_depth;
	unsigned int send_flags;
	int pending;
	uint32_t rem_qpn;
};

static int pp_post_recv(struct pp *p, int n)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)p->buf,
		.length = p->type == IBV_QPT_UD ? p->size + PP_GRH : p->size,
		.lkey = p->mr->ibv.lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = PP_RECV_WRID, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int i;

	for (i = 0; i < n; i++)
		if (uroce_client_post_recv(p->qp, &wr, &bad))
			break;
	return i;
}

static int pp_post_send(struct pp *p)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)p->buf + (p->type == IBV_QPT_UD ? PP_GRH : 0),
		.length = p->size,
		.lkey = p->mr->ibv.lkey,
	};
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = PP_SEND_WRID;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = p->send_flags;
	if (p->type == IBV_QPT_UD) {
		wr.wr.ud.ah = &p->ah->ibv;
		wr.wr.ud.remote_qpn = p->rem_qpn;
		wr.wr.ud.remote_qkey = PP_QKEY;
	}
	return uroce_client_post_send(p->qp, &wr, &bad);
}

static int pp_connect(struct pp *p, const struct xfer_opts *o, enum ibv_mtu mtu,
		      uint32_t my_psn, const struct xfer_peer *peer)
{
	p->rem_qpn = peer->qpn;
	if (xfer_qp_connect(p->qp, p->type, p->dev.ib_port, p->dev.gid_index, mtu, my_psn,
			    peer, 1, 1))
		return -1;
	if (p->type == IBV_QPT_UD) {
		p->ah = xfer_create_ah(&p->dev, p->dev.gid_index, &peer->gid, 1);
		if (!p->ah)
			return -1;
	}
	(void)o;
	return 0;
}

static void pp_close(struct pp *p)
{
	if (p->ah)
		uroce_client_destroy_ah(p->ah);
	if (p->qp)
		uroce_client_destroy_qp(p->qp);
	if (p->cq)
		uroce_client_destroy_cq(p->cq);
	if (p->ch)
		uroce_client_destroy_channel(p->ch);
	if (p->mr)
		uroce_client_dereg_mr(p->mr);
	xfer_dev_close(&p->dev);
	xfer_free(p->buf, p->buflen);
}

static int pingpong(const struct xfer_opts *o, enum ibv_qp_type type)
{
	const char *name = type == IBV_QPT_RC ? "rc_pingpong" : "ud_pingpong";
	enum ibv_mtu mtu = xfer_mtu_enum(o->mtu ? o->mtu : 1024);
	struct ibv_qp_cap cap;
	struct xfer_peer peer;
	struct pp p;
	char msg[OOB_PP_MSG_LEN], gid[64];
	uint32_t my_psn, iters;
	uint16_t rem_lid;
	uint64_t start, end;
	int routs, rcnt = 0, scnt = 0, ret = 1, fd = -1;
	unsigned int num_events = 0;

	memset(&p, 0, sizeof(p));
	p.type = type;
	p.size = (uint32_t)(o->size >= 0 ? o->size : type == IBV_QPT_RC ? 4096 : 2048);
	iters = (uint32_t)(o->iters >= 0 ? o->iters : 1000);
	p.rx_depth = o->rx_depth > 0 ? o->rx_depth : 500;
	p.send_flags = IBV_SEND_SIGNALED;
	if (!mtu) {
		xfer_err("%s: bad MTU %d", name, o->mtu);
		return 1;
	}
	if (xfer_dev_open(&p.dev, o))
		return 1;
	if (type == IBV_QPT_UD) {
		int port_mtu = xfer_mtu_bytes(p.dev.port_attr.active_mtu);

		if (p.size > (uint32_t)port_mtu) {
			xfer_err("Requested size larger than port MTU (%d)", port_mtu);
			goto out;
		}
	}
	p.buflen = p.size + (type == IBV_QPT_UD ? PP_GRH : 0);
	p.buf = xfer_alloc(p.buflen);
	if (!p.buf)
		goto out;
	memset(p.buf, 0x7b, p.buflen);
	if (o->events) {
		p.ch = uroce_client_create_channel(p.dev.ctx);
		if (!p.ch) {
			xfer_err("Couldn't create completion channel: %s", strerror(errno));
			goto out;
		}
	}
	p.mr = uroce_client_reg_mr(p.dev.pd, p.buf, p.buflen, IBV_ACCESS_LOCAL_WRITE);
	if (!p.mr) {
		xfer_err("Couldn't register MR: %s", strerror(errno));
		goto out;
	}
	p.cq = uroce_client_create_cq(p.dev.ctx, p.rx_depth + 1, p.ch, 0);
	if (!p.cq) {
		xfer_err("Couldn't create CQ: %s", strerror(errno));
		goto out;
	}
	p.qp = xfer_create_qp(&p.dev, type, p.cq, p.cq, 1, (uint32_t)p.rx_depth, 0, &cap);
	if (!p.qp)
		goto out;
	if (cap.max_inline_data >= p.size)
		p.send_flags |= IBV_SEND_INLINE;
	if (xfer_qp_init(p.qp, type, p.dev.ib_port, 0, PP_QKEY))
		goto out;
	routs = pp_post_recv(&p, p.rx_depth);
	if (routs < p.rx_depth) {
		xfer_err("Couldn't post receive (%d)", routs);
		goto out;
	}
	if (p.ch && uroce_client_req_notify_cq(p.cq, 0)) {
		xfer_err("Couldn't request CQ notification");
		goto out;
	}

	my_psn = xfer_rand_psn();
	xfer_gid_str(&p.dev.gid, gid, sizeof(gid));
	printf("  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x%sGID %s\n",
	       p.dev.port_attr.lid, uroce_client_qp_ibv(p.qp)->qp_num, my_psn,
	       type == IBV_QPT_UD ? ": " : ", ", gid);
	fflush(stdout);

	if (o->server) {
		fd = oob_connect(o->server, o->port, o->timeout_ms);
		if (fd < 0)
			goto out;
		oob_pp_format(msg, p.dev.port_attr.lid, uroce_client_qp_ibv(p.qp)->qp_num,
			      my_psn, &p.dev.gid);
		if (oob_write(fd, msg, sizeof(msg), o->timeout_ms) ||
		    oob_read(fd, msg, sizeof(msg), o->timeout_ms) ||
		    oob_write(fd, "done", sizeof("done"), o->timeout_ms)) {
			xfer_err("Couldn't read/write remote address");
			goto out;
		}
		close(fd);
		fd = -1;
		if (oob_pp_parse(msg, &rem_lid, &peer.qpn, &peer.psn, &peer.gid)) {
			xfer_err("bad remote address '%.52s'", msg);
			goto out;
		}
	} else {
		char done[OOB_PP_MSG_LEN];

		fd = oob_listen_accept(o->port, o->timeout_ms);
		if (fd < 0)
			goto out;
		if (oob_read(fd, msg, sizeof(msg), o->timeout_ms)) {
			xfer_err("Couldn't read remote address");
			goto out;
		}
		if (oob_pp_parse(msg, &rem_lid, &peer.qpn, &peer.psn, &peer.gid)) {
			xfer_err("bad remote address '%.52s'", msg);
			goto out;
		}
		/* As rdma-core: the server's QP is ready before the client learns its address. */
		if (pp_connect(&p, o, mtu, my_psn, &peer)) {
			xfer_err("Couldn't connect to remote QP");
			goto out;
		}
		oob_pp_format(msg, p.dev.port_attr.lid, uroce_client_qp_ibv(p.qp)->qp_num,
			      my_psn, &p.dev.gid);
		if (oob_write(fd, msg, sizeof(msg), o->timeout_ms) ||
		    oob_read_some(fd, done, sizeof(done), o->timeout_ms) <= 0) {
			xfer_err("Couldn't send/recv local address");
			goto out;
		}
		close(fd);
		fd = -1;
	}
	xfer_gid_str(&peer.gid, gid, sizeof(gid));
	printf("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", rem_lid,
	       peer.qpn, peer.psn, gid);
	fflush(stdout);
	if (o->server && pp_connect(&p, o, mtu, my_psn, &peer))
		goto out;

	p.pending = PP_RECV_WRID;
	if (o->server) {
		if (pp_post_send(&p)) {
			xfer_err("Couldn't post send");
			goto out;
		}
		p.pending |= PP_SEND_WRID;
	}
	start = xfer_now_ns();
	while ((uint32_t)rcnt < iters || (uint32_t)scnt < iters) {
		struct ibv_wc wc[2];
		int ne = xfer_cq_wait(p.cq, p.ch, wc, 2, o->timeout_ms, &num_events), i;

		if (ne < 0)
			goto out;
		if (ne == 0) {
			xfer_err("%s: no completion within %d s: %d of %u sent, %d of %u received, "
				 "waiting for%s%s", name, o->timeout_ms / 1000, scnt, iters, rcnt,
				 iters, p.pending & PP_SEND_WRID ? " send" : "",
				 p.pending & PP_RECV_WRID ? " recv" : "");
			goto out;
		}
		for (i = 0; i < ne; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				xfer_err("Failed status %s (%d) for wr_id %d",
					 uroce_client_wc_status_str(wc[i].status), wc[i].status,
					 (int)wc[i].wr_id);
				goto out;
			}
			switch ((int)wc[i].wr_id) {
			case PP_SEND_WRID:
				++scnt;
				break;
			case PP_RECV_WRID:
				if (--routs <= 1) {
					routs += pp_post_recv(&p, p.rx_depth - routs);
					if (routs < p.rx_depth) {
						xfer_err("Couldn't post receive (%d)", routs);
						goto out;
					}
				}
				++rcnt;
				break;
			default:
				xfer_err("Completion for unknown wr_id %d", (int)wc[i].wr_id);
				goto out;
			}
			p.pending &= ~(int)wc[i].wr_id;
			if ((uint32_t)scnt < iters && !p.pending) {
				if (pp_post_send(&p)) {
					xfer_err("Couldn't post send");
					goto out;
				}
				p.pending = PP_RECV_WRID | PP_SEND_WRID;
			}
		}
	}
	end = xfer_now_ns();
	{
		double usec = (double)(end - start) / 1000.0;
		long long bytes = (long long)p.size * iters * 2;

		printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, usec / 1000000.,
		       bytes * 8. / usec);
		printf("%u iters in %.2f seconds = %.2f usec/iter\n", iters, usec / 1000000.,
		       usec / iters);
	}
	ret = 0;
out:
	if (p.cq && num_events)
		uroce_client_ack_cq_events(p.cq, num_events);
	if (fd >= 0)
		close(fd);
	pp_close(&p);
	return ret;
}

int xfer_rc_pingpong(const struct xfer_opts *o)
{
	return pingpong(o, IBV_QPT_RC);
}

int xfer_ud_pingpong(const struct xfer_opts *o)
{
	return pingpong(o, IBV_QPT_UD);
}
