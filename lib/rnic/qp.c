/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Queue pairs: the transport's QP and the shared rings the application posts to, made,
 * modified, queried and destroyed; their multicast groups; and the flows (steering rules)
 * of raw packet QPs. An address in MODIFY_QP is resolved as av.c resolves an AH's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rnic_internal.h"

/* ---- the RNIC's QP list (the doorbells the poll loop watches) ------------------------ */

static void qp_unlist(struct rnic_qp *q)
{
	struct uroce_rnic *nic = q->client->rnic;

	rnic_list_del((void **)nic->qps, &nic->nqps, q->idx);
	if (q->idx < nic->nqps)
		nic->qps[q->idx]->idx = q->idx;
}

/* ---- multicast ---------------------------------------------------------------------- */

int rnic_mcast_attach(struct rnic_qp *q, const union ibv_gid *gid)
{
	struct uroce_rnic *nic = q->client->rnic;
	uint8_t mac[6];
	uint32_t i;
	int rc;

	for (i = 0; i < q->nmcast; i++)
		if (memcmp(q->mcast[i].raw, gid->raw, 16) == 0)
			return 0; /* attached already: nothing changes (as the transport) */
	rc = uroce_tp_attach_mcast(q->tp, gid);
	if (rc)
		return rc;
	/* The host stack accepts RoCE to the group, the port its MAC (first member). */
	rc = uroce_ip_group_join(nic->ip, gid->raw, mac);
	if (rc < 0) {
		uroce_tp_detach_mcast(q->tp, gid);
		return rc;
	}
	if (rc == 1)
		nic->ops->mcast_add(nic->io_ctx, mac);
	q->mcast[q->nmcast++] = *gid;
	return 0;
}

int rnic_mcast_detach(struct rnic_qp *q, const union ibv_gid *gid)
{
	struct uroce_rnic *nic = q->client->rnic;
	uint8_t mac[6];
	uint32_t i;

	for (i = 0; i < q->nmcast; i++)
		if (memcmp(q->mcast[i].raw, gid->raw, 16) == 0)
			break;
	if (i == q->nmcast)
		return -EINVAL;
	uroce_tp_detach_mcast(q->tp, gid);
	if (uroce_ip_group_leave(nic->ip, gid->raw, mac) == 1)
		nic->ops->mcast_del(nic->io_ctx, mac);
	q->mcast[i] = q->mcast[--q->nmcast];
	return 0;
}

/* ---- QPs ----------------------------------------------------------------------------- */

int rnic_destroy_qp(struct uroce_rnic_client *c, uint32_t h, struct rnic_qp *q)
{
	struct uroce_rnic *nic = c->rnic;
	int rc;

	if (q->handles > 1) {
		/* An XRC target others have open: only this handle goes (the kernel's). */
		rnic_xrc_qp_close(c, h, q);
		return 0;
	}
	if (q->nflows)
		return -EBUSY; /* as the kernel's uverbs: the flows go first */
	while (q->nmcast)
		rnic_mcast_detach(q, &q->mcast[0]);
	rc = uroce_tp_destroy_qp(q->tp);
	if (rc)
		return rc;
	rnic_doorbell_slot_put(c, q, NULL);
	qp_unlist(q);
	rnic_shm_close(nic, &q->region);
	rnic_obj_del(c, h);
	free(q);
	return 0;
}

void rnic_cmd_create_qp(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const void *payload, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_create_qp_req *req = payload;
	struct uroce_tp_pd *pd = rnic_pd_get(c, req->pd);
	struct rnic_cq *scq = rnic_obj_get(c, req->send_cq, RNIC_OBJ_CQ);
	struct rnic_cq *rcq = rnic_obj_get(c, req->recv_cq, RNIC_OBJ_CQ);
	struct rnic_srq *srq = req->srq ? rnic_obj_get(c, req->srq, RNIC_OBJ_SRQ) : NULL;
	struct rnic_xrcd *xrcd = req->xrcd ? rnic_obj_get(c, req->xrcd, RNIC_OBJ_XRCD) : NULL;
	bool xrc_tgt = req->qp_type == IBV_QPT_XRC_RECV;
	bool rcq_ok = rcq || (!req->recv_cq && req->qp_type == IBV_QPT_XRC_SEND);
	struct uroce_ctrl_create_qp_rep rep = {.sq_offset = RNIC_QUEUE_RING_OFFSET};
	struct uroce_tp_qp_init init;
	uint32_t sq_size, rq_size = 0;
	uint64_t bytes;
	struct rnic_qp *q;
	int rc;

	/* An XRC target has only its domain; an XRC initiator may go without a receive CQ
	 * (it receives nothing); everything else has a PD and both CQs. What else a type
	 * must not have, the transport refuses. */
	if ((req->srq && !srq) || (req->xrcd && !xrcd) ||
	    (xrc_tgt ? (req->pd || req->send_cq || req->recv_cq || !xrcd)
		     : (!pd || !scq || !rcq_ok))) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	rc = rnic_limit_object(c, RNIC_OBJ_QP);
	if (rc) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	/* A raw packet QP sends any frame and its flows can see every tenant's: Linux
	 * gives it only to CAP_NET_RAW over the device's namespace (EPERM otherwise), which
	 * the client proved, or not, with PROVE_NET_RAW (rights.c). */
	if (req->qp_type == IBV_QPT_RAW_PACKET && !c->net_raw) {
		REPLY(c, h, -EPERM, NULL, 0);
		return;
	}
	memset(&init, 0, sizeof(init));
	init.qp_type = (enum ibv_qp_type)req->qp_type;
	init.send_cq = scq ? scq->tp : NULL;
	init.recv_cq = rcq ? rcq->tp : NULL;
	init.srq = srq ? srq->tp : NULL;
	init.xrcd = xrcd ? xrcd->tp : NULL;
	init.cap = req->cap;
	init.sq_sig_all = req->sq_sig_all != 0;
	q = calloc(1, sizeof(*q));
	if (!q) {
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	q->tp = uroce_tp_create_qp(pd, &init);
	if (!q->tp) {
		rc = -errno;
		free(q);
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	rep.cap = init.cap;
	sq_size = uroce_tp_pow2_at_least(init.cap.max_send_wr ? init.cap.max_send_wr : 1);
	bytes = rep.sq_offset + uroce_ring_bytes(sq_size, sizeof(struct uroce_ctrl_send_wqe));
	if (!srq) {
		rq_size = uroce_tp_pow2_at_least(init.cap.max_recv_wr ? init.cap.max_recv_wr : 1);
		bytes = (bytes + UROCE_SHM_CACHELINE - 1) & ~(uint64_t)(UROCE_SHM_CACHELINE - 1);
		rep.rq_offset = (uint32_t)bytes;
		bytes += uroce_ring_bytes(rq_size, sizeof(struct uroce_ctrl_recv_wqe));
	}
	rc = rnic_shm_create(nic, &q->region, "uroce-qp", bytes, UROCE_CTRL_REGION_QP);
	if (rc == 0)
		rc = rnic_list_add((void ***)&nic->qps, &nic->nqps, &nic->cap_qps, q, &q->idx);
	if (rc) {
		if (q->region.addr)
			rnic_shm_close(nic, &q->region);
		uroce_tp_destroy_qp(q->tp);
		free(q);
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	uroce_ring_format((uint8_t *)q->region.addr + rep.sq_offset, sq_size,
			  sizeof(struct uroce_ctrl_send_wqe));
	uroce_ring_open(&q->sq, (uint8_t *)q->region.addr + rep.sq_offset,
			q->region.size - rep.sq_offset, false);
	if (!srq) {
		uroce_ring_format((uint8_t *)q->region.addr + rep.rq_offset, rq_size,
				  sizeof(struct uroce_ctrl_recv_wqe));
		uroce_ring_open(&q->rq, (uint8_t *)q->region.addr + rep.rq_offset,
				q->region.size - rep.rq_offset, false);
	}
	q->ctl = (void *)((uint8_t *)q->region.addr + UROCE_CTRL_QUEUE_CTL_OFFSET);
	q->client = c;
	q->srq = srq;
	q->send_cq = scq;
	q->recv_cq = rcq;
	q->xrcd = xrcd;
	q->handles = 1;
	uroce_tp_qp_set_user(q->tp, q);
	rc = rnic_doorbell_slot_get(c, q, NULL);
	q->handle = rep.qp = rc ? 0 : rnic_obj_add(c, RNIC_OBJ_QP, q);
	if (!q->handle) {
		if (rc == 0)
			rnic_doorbell_slot_put(c, q, NULL);
		qp_unlist(q);
		uroce_tp_destroy_qp(q->tp);
		rnic_shm_close(nic, &q->region);
		free(q);
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	rep.qpn = uroce_tp_qp_num(q->tp);
	rep.region_size = q->region.size;
	uroce_rnic_reply(c, h, 0, &rep, sizeof(rep), &q->region.fd, 1);
}

void rnic_cmd_modify_qp(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const void *payload, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_modify_qp_req *req = payload;
	struct rnic_qp *q = rnic_obj_get(c, req->qp, RNIC_OBJ_QP);
	struct ibv_qp_attr attr = req->attr;
	uint8_t mac[6], *dmac = NULL;
	bool to_error;
	int rc;

	if (!q) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	/* A controlled Q_Key (high bit set, IBA 10.2.5; the GSI's is 0x80010000) is the
	 * kernel's to give: Linux asks for CAP_NET_RAW. Here root, the administrators and
	 * a client that proved CAP_NET_RAW may; anyone else could forge CM messages for
	 * other tenants' connections. */
	if ((req->mask & IBV_QP_QKEY) && (attr.qkey & 0x80000000u) && c->uid != 0 && !c->admin &&
	    !c->net_raw) {
		nic->cnt.qkey_refused++;
		REPLY(c, h, -EPERM, NULL, 0);
		return;
	}
	if (req->mask & IBV_QP_AV) {
		rc = rnic_resolve(c, h, req, &attr.ah_attr, mac);
		if (rc == 0)
			return; /* it waits in c->pending (rnic_resolve) */
		if (rc < 0) {
			REPLY(c, h, rc, NULL, 0);
			return;
		}
		dmac = mac;
	}
	/* rxe: the path MTU cannot exceed what the port carries. */
	if ((req->mask & IBV_QP_PATH_MTU) && attr.path_mtu > nic->active_mtu)
		attr.path_mtu = nic->active_mtu;
	/* The error state flushes every WR posted before this call, those still in the rings
	 * too (a kernel RNIC's queues hold them already), and their completions are in the
	 * CQ rings when we answer: a WR posted after ibv_modify_qp returns never completes
	 * before them. Ceph's messenger relies on it: it destroys a QP once a SEND posted
	 * after the move to ERR has completed and the receive CQ polls empty, and gives the
	 * QP's receive buffers to other QPs. */
	to_error = (req->mask & IBV_QP_STATE) && attr.qp_state == IBV_QPS_ERR;
	if (to_error)
		rnic_client_catch_up(c);
	rc = uroce_tp_modify_qp(q->tp, &attr, req->mask, dmac, rnic_now(nic));
	if (rc == 0 && to_error)
		(void)rnic_completions(nic);
	if (rc == 0 && (req->mask & IBV_QP_STATE) && attr.qp_state == IBV_QPS_RESET) {
		/* RESET discards every queued WQE (IBA 10.3.1): what the application posted
		 * and we had not taken yet is dropped with them and counts as retired. */
		uint32_t n;

		while ((n = uroce_ring_cons_avail(&q->sq)) != 0) {
			uroce_ring_cons_release(&q->sq, n);
			q->sq_taken += n;
		}
		while (!q->srq && (n = uroce_ring_cons_avail(&q->rq)) != 0) {
			uroce_ring_cons_release(&q->rq, n);
			q->rq_taken += n;
		}
		rnic_qp_publish_retired(q);
	}
	REPLY(c, h, rc, NULL, 0);
}

void rnic_cmd_query_qp(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
		       const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_query_qp_req *req = payload;
	struct rnic_qp *q = rnic_obj_get(c, req->qp, RNIC_OBJ_QP);
	struct uroce_ctrl_query_qp_rep rep;
	struct ibv_qp_init_attr init;
	int rc;

	if (!q) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	memset(&rep, 0, sizeof(rep));
	rc = uroce_tp_query_qp(q->tp, &rep.attr, &init);
	rep.cap = init.cap;
	rep.qp_type = init.qp_type;
	rep.sq_sig_all = (uint32_t)init.sq_sig_all;
	REPLY(c, h, rc, &rep, sizeof(rep));
}

void rnic_cmd_attach_mcast(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			   const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_mcast_req *r = payload;
	struct rnic_qp *q = rnic_obj_get(c, r->qp, RNIC_OBJ_QP);

	REPLY(c, h, q ? rnic_mcast_attach(q, &r->gid) : -EINVAL, NULL, 0);
}

void rnic_cmd_detach_mcast(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			   const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_mcast_req *r = payload;
	struct rnic_qp *q = rnic_obj_get(c, r->qp, RNIC_OBJ_QP);

	REPLY(c, h, q ? rnic_mcast_detach(q, &r->gid) : -EINVAL, NULL, 0);
}

/* ---- flows ------------------------------------------------------------------------- */

/* CREATE_FLOW: the rule as verbs laid it out, copied out of the message into memory
 * aligned for its structs; the transport checks every size and field in it, within the
 * bytes the client sent. */
void rnic_cmd_create_flow(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			  const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_create_flow_req *req = payload;
	struct rnic_qp *q = rnic_obj_get(c, req->qp, RNIC_OBJ_QP);
	union {
		struct ibv_flow_attr attr;
		uint8_t b[UROCE_CTRL_FLOW_ATTR_MAX];
	} r;
	struct rnic_flow *f;
	uint32_t handle;
	int rc;

	if (!q || req->attr_size < sizeof(r.attr) || req->attr_size > sizeof(r.b)) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	/* Linux's ib_uverbs_ex_create_flow asks for CAP_NET_RAW before anything else. */
	if (!c->net_raw) {
		REPLY(c, h, -EPERM, NULL, 0);
		return;
	}
	memcpy(r.b, req->attr, req->attr_size);
	rc = rnic_limit_object(c, RNIC_OBJ_FLOW);
	if (rc) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	f->qp = q;
	f->tp = uroce_tp_create_flow(q->tp, &r.attr, req->attr_size);
	if (!f->tp) {
		rc = -errno;
		free(f);
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	handle = rnic_obj_add(c, RNIC_OBJ_FLOW, f);
	if (!handle) {
		uroce_tp_destroy_flow(f->tp);
		free(f);
	} else {
		q->nflows++;
	}
	rnic_reply_handle(c, h, handle);
}

void rnic_destroy_flow(struct uroce_rnic_client *c, uint32_t h, struct rnic_flow *f)
{
	uroce_tp_destroy_flow(f->tp);
	f->qp->nflows--;
	rnic_obj_del(c, h);
	free(f);
}
