/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * XRC (IBA vol 1 annex A14) through the extended verbs the inline wrappers of verbs.h
 * reach: ibv_open_xrcd / ibv_close_xrcd, ibv_create_srq_ex with IBV_SRQT_XRC,
 * ibv_get_srq_num, and XRC QPs from ibv_create_qp_ex (IBV_QPT_XRC_SEND, the initiator,
 * with a PD; IBV_QPT_XRC_RECV, the target, with its XRCD only). Each WR of an initiator
 * names the peer's SRQ: wr->qp_type.xrc.remote_srqn, or ibv_wr_set_xrc_srqn.
 * ibv_open_qp gives another handle on a target QP of a domain the context has open (any
 * process's): it lives while any handle does.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "uverbs.h"

static struct ibv_xrcd *uv_op_open_xrcd(struct ibv_context *context,
					struct ibv_xrcd_init_attr *attr)
{
	struct uroce_client_xrcd *x;

	/* rdma-core's ibv_cmd_open_xrcd: both fields given, nothing else known. */
	if (attr->comp_mask & ~(uint32_t)(IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS))
		return uv_null(EOPNOTSUPP);
	if (!(attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) ||
	    !(attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS))
		return uv_null(EINVAL);
	x = uroce_client_open_xrcd(uv_ctx(context)->cl, attr->fd, attr->oflags);
	return x ? &x->ibv : NULL;
}

static int uv_op_close_xrcd(struct ibv_xrcd *xrcd)
{
	return uv_err(uroce_client_close_xrcd(to_uxrcd(xrcd)));
}

static struct ibv_srq *uv_op_create_srq_ex(struct ibv_context *context,
					   struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	struct ibv_srq_init_attr init = {.srq_context = attr->srq_context, .attr = attr->attr};
	enum ibv_srq_type type =
		(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ? attr->srq_type : IBV_SRQT_BASIC;
	struct uroce_client_srq *s;
	struct ibv_srq *srq;
	struct uv_srq *u;

	if (attr->comp_mask & ~known)
		return uv_null(EOPNOTSUPP); /* tag matching */
	if (type == IBV_SRQT_TM)
		return uv_null(EOPNOTSUPP);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
	    attr->pd->context != context)
		return uv_null(EINVAL);
	if (type == IBV_SRQT_BASIC)
		return ibv_create_srq(attr->pd, &init);
	if (type != IBV_SRQT_XRC || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) ||
	    !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->xrcd || !attr->cq)
		return uv_null(EINVAL);
	u = calloc(1, sizeof(*u));
	if (!u)
		return uv_null(ENOMEM);
	s = uroce_client_create_xrc_srq(to_upd(attr->pd), to_uxrcd(attr->xrcd), to_ucq(attr->cq),
					&init);
	if (!s) {
		free(u);
		return NULL;
	}
	attr->attr = init.attr;
	s->priv = u;
	srq = &s->ibv;
	srq->srq_context = attr->srq_context;
	pthread_mutex_init(&srq->mutex, NULL);
	pthread_cond_init(&srq->cond, NULL);
	return srq;
}

static int uv_op_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	*srq_num = uroce_client_srq_num(to_usrq(srq));
	return 0;
}

struct ibv_qp *uv_create_xrc_qp(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr,
				uint64_t send_ops_flags)
{
	bool target = attr->qp_type == IBV_QPT_XRC_RECV;
	struct ibv_qp_init_attr a = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
	};
	struct uroce_client_xrcd *xrcd = NULL;
	struct uroce_client_pd *pd = NULL;
	struct ibv_qp *qp;
	struct uv_qp *u;

	/* An initiator has a PD and no XRCD, a target the other way round (rdma-core's
	 * kernel side ignores a target's CQs; they are refused here, as meaningless). */
	if (target) {
		if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd ||
		    attr->xrcd->context != ctx || send_ops_flags)
			return uv_null(EINVAL);
		xrcd = to_uxrcd(attr->xrcd);
		a.send_cq = a.recv_cq = NULL;
	} else {
		if (attr->pd->context != ctx)
			return uv_null(EINVAL);
		pd = to_upd(attr->pd);
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return uv_null(ENOMEM);
	qp = uv_qp_adopt(uroce_client_create_xrc_qp(uv_ctx(ctx)->cl, pd, xrcd, &a), u,
			 send_ops_flags);
	if (qp)
		attr->cap = a.cap;
	return qp;
}

static struct ibv_qp *uv_op_open_qp(struct ibv_context *context, struct ibv_qp_open_attr *attr)
{
	const uint32_t needed =
		IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
	struct uv_qp *u;

	/* rdma-core's ibv_cmd_open_qp: number, domain and type given, the type a target's */
	if (attr->comp_mask & ~(uint32_t)(needed | IBV_QP_OPEN_ATTR_CONTEXT))
		return uv_null(EOPNOTSUPP);
	if ((attr->comp_mask & needed) != needed || !attr->xrcd ||
	    attr->xrcd->context != context || attr->qp_type != IBV_QPT_XRC_RECV)
		return uv_null(EINVAL);
	u = calloc(1, sizeof(*u));
	if (!u)
		return uv_null(ENOMEM);
	return uv_qp_adopt(uroce_client_open_qp(to_uxrcd(attr->xrcd), attr->qp_num,
						(attr->comp_mask & IBV_QP_OPEN_ATTR_CONTEXT) ?
							attr->qp_context :
							NULL),
			   u, 0);
}

void uv_xrc_init(struct uv_context *uc)
{
	uc->vctx.open_qp = uv_op_open_qp;
	uc->vctx.open_xrcd = uv_op_open_xrcd;
	uc->vctx.close_xrcd = uv_op_close_xrcd;
	uc->vctx.create_srq_ex = uv_op_create_srq_ex;
	uc->vctx.get_srq_num = uv_op_get_srq_num;
}
