/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared receive queues (rxe_srq.c), their limit event and resize; taking a receive WQE,
 * from an SRQ or the QP's own queue; XRC domains and XRC SRQs (annex A14). */
#include <stdlib.h>
#include <string.h>

#include "tp_internal.h"

/* ---- SRQ ------------------------------------------------------------------------------ */

struct uroce_tp_srq *uroce_tp_create_srq(struct uroce_tp_pd *pd,
					 const struct ibv_srq_init_attr *init)
{
	struct uroce_tp_srq *srq;
	uint32_t n;

	if (init->attr.max_wr < 1 || init->attr.max_wr > UROCE_TP_MAX_QP_WR ||
	    init->attr.max_sge > UROCE_TP_MAX_SGE || init->attr.srq_limit > init->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	n = uroce_tp_pow2_at_least(init->attr.max_wr);
	srq = calloc(1, sizeof(*srq));
	if (srq == NULL || (srq->ring = calloc(n, sizeof(*srq->ring))) == NULL) {
		free(srq);
		errno = ENOMEM;
		return NULL;
	}
	srq->pd = pd;
	srq->max_wr = n;
	srq->mask = n - 1;
	srq->max_sge = init->attr.max_sge ? init->attr.max_sge : 1;
	srq->limit = init->attr.srq_limit;
	pd->refs++;
	tp_list_add(&pd->dev->srqs, &srq->node);
	return srq;
}

int uroce_tp_modify_srq(struct uroce_tp_srq *srq, const struct ibv_srq_attr *attr, int mask)
{
	uint32_t n = srq->max_wr, held = srq->prod - srq->cons;
	struct uroce_tp_recv_wqe *ring = NULL;

	if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return -EINVAL;
	/* Check everything, then apply: a refusal changes nothing. */
	if (mask & IBV_SRQ_MAX_WR) {
		/* IBV_DEVICE_SRQ_RESIZE: the new size must hold the WQEs posted and not
		 * taken yet, as rxe's queue resize requires. */
		if (attr->max_wr < 1 || attr->max_wr > UROCE_TP_MAX_QP_WR)
			return -EINVAL;
		n = uroce_tp_pow2_at_least(attr->max_wr);
		if (held > n)
			return -EINVAL;
	}
	if ((mask & IBV_SRQ_LIMIT) ? attr->srq_limit > n : srq->limit > n)
		return -EINVAL;
	if (n != srq->max_wr) {
		ring = calloc(n, sizeof(*ring));
		if (ring == NULL)
			return -ENOMEM;
		/* WQEs are copied out when a QP takes one: no pointer into the ring lives. */
		for (uint32_t i = 0; i < held; i++)
			ring[i] = srq->ring[(srq->cons + i) & srq->mask];
		free(srq->ring);
		srq->ring = ring;
		srq->max_wr = n;
		srq->mask = n - 1;
		srq->cons = 0;
		srq->prod = held;
	}
	if (mask & IBV_SRQ_LIMIT)
		srq->limit = attr->srq_limit;
	return 0;
}

int uroce_tp_query_srq(const struct uroce_tp_srq *srq, struct ibv_srq_attr *attr)
{
	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	return 0;
}

int uroce_tp_destroy_srq(struct uroce_tp_srq *srq)
{
	if (srq->refs)
		return -EBUSY;
	tp_list_del(&srq->node);
	srq->pd->refs--;
	if (srq->xrcd) {
		/* A message in progress on a target QP finds its SRQ gone at its next packet
		 * (tp_xrc_srq) and is refused; the WQE it had taken goes with the SRQ. */
		srq->pd->dev->xrc_srqs[srq->srqn - 1] = NULL;
		srq->xrcd->refs--;
		srq->cq->refs--;
	}
	free(srq->ring);
	free(srq);
	return 0;
}

struct uroce_tp_recv_wqe *uroce_tp_post_srq_recv_reserve(struct uroce_tp_srq *srq)
{
	if (srq->prod - srq->cons >= srq->max_wr)
		return NULL;
	return &srq->ring[srq->prod & srq->mask];
}

int uroce_tp_post_srq_recv_commit(struct uroce_tp_srq *srq)
{
	if (srq->prod - srq->cons >= srq->max_wr)
		return -ENOMEM;
	if (srq->ring[srq->prod & srq->mask].num_sge > srq->max_sge)
		return -EINVAL;
	srq->prod++;
	return 0;
}

int uroce_tp_post_srq_recv(struct uroce_tp_srq *srq, const struct uroce_tp_recv_wqe *wqe)
{
	struct uroce_tp_recv_wqe *w = uroce_tp_post_srq_recv_reserve(srq);

	if (w == NULL)
		return wqe->num_sge > srq->max_sge ? -EINVAL : -ENOMEM;
	*w = *wqe;
	return uroce_tp_post_srq_recv_commit(srq);
}

/* The receive queue is empty: ask the caller to fetch what the application may have
 * posted since it last looked (a NIC fetches WQEs on demand too). */
static bool rwqe_refill(struct uroce_tp_qp *qp, struct uroce_tp_srq *srq)
{
	if (qp->dev->cfg.rq_refill == NULL)
		return false;
	qp->dev->cfg.rq_refill(qp->dev->cfg.io_ctx, qp, srq);
	return true;
}

bool tp_rwqe_take(struct uroce_tp_qp *qp, struct uroce_tp_srq *srq,
		  struct uroce_tp_recv_wqe *out)
{
	if (srq == NULL) {
		if (qp->rq_cons == qp->rq_prod &&
		    (!rwqe_refill(qp, NULL) || qp->rq_cons == qp->rq_prod))
			return false;
		*out = qp->rq[qp->rq_cons & qp->rq_mask];
		qp->rq_cons++;
		return true;
	}
	if (srq->cons == srq->prod && (!rwqe_refill(qp, srq) || srq->cons == srq->prod))
		return false;
	*out = srq->ring[srq->cons & srq->mask];
	srq->cons++;
	/* IBA 10.2.9.2: the limit event fires once when fewer WQEs than the limit remain,
	 * then the limit is disarmed until set again. */
	if (srq->limit && srq->prod - srq->cons < srq->limit) {
		srq->limit = 0;
		tp_event(qp->dev, IBV_EVENT_SRQ_LIMIT_REACHED, srq);
	}
	return true;
}

uint32_t uroce_tp_srq_outstanding(const struct uroce_tp_srq *srq)
{
	return srq->prod - srq->cons;
}

void uroce_tp_srq_set_user(struct uroce_tp_srq *srq, void *user)
{
	srq->user = user;
}

void *uroce_tp_srq_user(const struct uroce_tp_srq *srq)
{
	return srq->user;
}

/* ---- XRC (annex A14) ------------------------------------------------------------------ */

struct uroce_tp_xrcd *uroce_tp_alloc_xrcd(struct uroce_tp_dev *dev)
{
	struct uroce_tp_xrcd *xrcd = calloc(1, sizeof(*xrcd));

	if (xrcd == NULL)
		return NULL;
	xrcd->dev = dev;
	tp_list_add(&dev->xrcds, &xrcd->node);
	return xrcd;
}

int uroce_tp_dealloc_xrcd(struct uroce_tp_xrcd *xrcd)
{
	if (xrcd->refs)
		return -EBUSY;
	tp_list_del(&xrcd->node);
	free(xrcd);
	return 0;
}

struct uroce_tp_srq *uroce_tp_create_xrc_srq(struct uroce_tp_pd *pd, struct uroce_tp_xrcd *xrcd,
					     struct uroce_tp_cq *cq,
					     const struct ibv_srq_init_attr *init)
{
	struct uroce_tp_dev *dev = pd->dev;
	struct uroce_tp_srq *srq;
	uint32_t i;

	if (xrcd == NULL || cq == NULL || xrcd->dev != dev || cq->dev != dev) {
		errno = EINVAL;
		return NULL;
	}
	/* The lowest free number: numbers stay small and dense, as QPNs do not need to. */
	for (i = 0; i < dev->xrc_srq_cap && dev->xrc_srqs[i]; i++)
		;
	if (i == dev->xrc_srq_cap) {
		uint32_t cap = dev->xrc_srq_cap ? dev->xrc_srq_cap * 2 : 16;
		struct uroce_tp_srq **t;

		if (cap > UROCE_PSN_MASK) {
			errno = ENOMEM; /* 2^24 - 1 numbers: the XRCETH's field */
			return NULL;
		}
		t = realloc(dev->xrc_srqs, cap * sizeof(*t));
		if (t == NULL)
			return NULL;
		memset(t + dev->xrc_srq_cap, 0, (cap - dev->xrc_srq_cap) * sizeof(*t));
		dev->xrc_srqs = t;
		dev->xrc_srq_cap = cap;
	}
	srq = uroce_tp_create_srq(pd, init);
	if (srq == NULL)
		return NULL;
	srq->xrcd = xrcd;
	srq->cq = cq;
	srq->srqn = i + 1;
	dev->xrc_srqs[i] = srq;
	xrcd->refs++;
	cq->refs++;
	return srq;
}

uint32_t uroce_tp_srq_num(const struct uroce_tp_srq *srq)
{
	return srq->srqn;
}

struct uroce_tp_cq *tp_resp_cq(struct uroce_tp_qp *qp)
{
	struct uroce_tp_srq *srq;

	if (qp->type != IBV_QPT_XRC_RECV)
		return qp->recv_cq;
	srq = tp_xrc_srq(qp, qp->resp.xrc_srqn);
	return srq ? srq->cq : NULL;
}

struct uroce_tp_srq *tp_xrc_srq(const struct uroce_tp_qp *qp, uint32_t srqn)
{
	struct uroce_tp_dev *dev = qp->dev;
	struct uroce_tp_srq *srq;

	if (srqn == 0 || srqn > dev->xrc_srq_cap)
		return NULL;
	srq = dev->xrc_srqs[srqn - 1];
	return srq && srq->xrcd == qp->xrcd ? srq : NULL;
}
