/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RES_LIST: the device's objects of one kind, a row each (uroce_ctrl.h), for `uroce res
 * show` as iproute2's `rdma res show` for a kernel device. Rows are numbered over every
 * visible object, client by client in the daemon's order and handle by handle, so a
 * request that starts at the last reply's `next` goes on where it stopped.
 */
#include <stdlib.h>
#include <string.h>

#include "rnic_internal.h"

static const enum rnic_obj_type res_obj_type[] = {
	[UROCE_CTRL_RES_QP] = RNIC_OBJ_QP, [UROCE_CTRL_RES_CQ] = RNIC_OBJ_CQ,
	[UROCE_CTRL_RES_MR] = RNIC_OBJ_MR, [UROCE_CTRL_RES_PD] = RNIC_OBJ_PD,
	[UROCE_CTRL_RES_CM_ID] = RNIC_OBJ_CM_ID,
};

/* The handle under which client @p c knows the object @p p of @p type; 0: none. */
static uint32_t res_handle_of(const struct uroce_rnic_client *c, enum rnic_obj_type type,
			      const void *p)
{
	for (uint32_t h = 1; p && h <= c->nobjs; h++)
		if (c->objs[h - 1].type == type && c->objs[h - 1].p == p)
			return c->objs[h - 1].handle;
	return 0;
}

static void res_fill_qp(const struct rnic_qp *q, struct uroce_ctrl_res_row *r)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	memset(&attr, 0, sizeof(attr));
	memset(&init, 0, sizeof(init));
	uroce_tp_query_qp(q->tp, &attr, &init);
	r->qp.lqpn = uroce_tp_qp_num(q->tp);
	r->qp.rqpn = attr.dest_qp_num;
	r->qp.type = init.qp_type;
	r->qp.state = attr.qp_state;
	r->qp.sq_psn = attr.sq_psn;
	r->qp.rq_psn = attr.rq_psn;
	r->qp.send_cq = q->send_cq ? q->send_cq->handle : 0;
	r->qp.recv_cq = q->recv_cq ? q->recv_cq->handle : 0;
	r->qp.srq = q->srq ? q->srq->handle : 0;
}

static void res_fill_cq(const struct uroce_rnic_client *c, const struct rnic_cq *q,
			struct uroce_ctrl_res_row *r)
{
	r->cq.cqe = q->ring.mask;
	for (uint32_t h = 1; h <= c->nobjs; h++) {
		const struct rnic_qp *qp = c->objs[h - 1].p;

		if (c->objs[h - 1].type == RNIC_OBJ_QP && (qp->send_cq == q || qp->recv_cq == q))
			r->cq.users++;
	}
	r->cq.channel = res_handle_of(c, RNIC_OBJ_CHANNEL, q->channel);
}

static void res_fill_mr(const struct rnic_mr *m, struct uroce_ctrl_res_row *r)
{
	if (m->tp)
		uroce_tp_mr_keys(m->tp, &r->mr.lkey, &r->mr.rkey);
	r->mr.access = m->access;
	r->mr.iova = m->iova;
	r->mr.length = m->length;
}

/* Fills @p r with what @p type's row says of @p p, which client @p c knows as @p handle. */
static void res_fill(const struct uroce_rnic_client *c, uint32_t type, uint32_t handle,
		     const void *p, struct uroce_ctrl_res_row *r)
{
	memset(r, 0, sizeof(*r));
	r->pid = (uint32_t)c->pid;
	r->handle = handle;
	memcpy(r->comm, c->name, sizeof(r->comm));
	r->comm[sizeof(r->comm) - 1] = '\0';
	switch (type) {
	case UROCE_CTRL_RES_QP:
		res_fill_qp(p, r);
		break;
	case UROCE_CTRL_RES_CQ:
		res_fill_cq(c, p, r);
		break;
	case UROCE_CTRL_RES_MR:
		res_fill_mr(p, r);
		break;
	case UROCE_CTRL_RES_PD:
		r->pd.refs = ((const struct rnic_pd *)p)->refs;
		break;
	case UROCE_CTRL_RES_CM_ID:
		rnic_cm_id_res(p, r);
		break;
	}
}

void rnic_cmd_res_list(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
		       const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_res_list_req *req = payload;
	/* As many rows as one reply carries; on the heap, as it is a rare command. */
	const size_t size = UROCE_CTRL_MSG_MAX - sizeof(struct uroce_ctrl_hdr);
	const uint32_t max =
		(uint32_t)((size - sizeof(struct uroce_ctrl_res_list_rep)) /
			   sizeof(struct uroce_ctrl_res_row));
	struct uroce_ctrl_res_list_rep *rep;
	struct uroce_rnic_client *o;
	uint32_t seen = 0;

	if (req->type < UROCE_CTRL_RES_QP || req->type > UROCE_CTRL_RES_CM_ID) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	rep = calloc(1, size);
	if (!rep) {
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	for (o = c->rnic->clients; o; o = o->next) {
		if (!c->admin && o->uid != c->uid)
			continue;
		for (uint32_t hd = 1; hd <= o->nobjs; hd++) {
			if (o->objs[hd - 1].type != res_obj_type[req->type])
				continue;
			if (seen++ < req->start)
				continue;
			if (rep->count == max) {
				rep->next = seen - 1;
				goto out;
			}
			res_fill(o, req->type, o->objs[hd - 1].handle, o->objs[hd - 1].p,
				 &rep->row[rep->count++]);
		}
	}
out:
	REPLY(c, h, 0, rep,
	      (uint32_t)(sizeof(*rep) + rep->count * sizeof(struct uroce_ctrl_res_row)));
	free(rep);
}
