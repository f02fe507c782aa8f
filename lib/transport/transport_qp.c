/* SPDX-License-Identifier: BSD-3-Clause */
/* Queue pairs: creation, the state machine (IBA 10.3, 11.2.4), posting, flushing. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "transport_qp_attr.h"
#include "tp_internal.h"

struct uroce_tp_qp *uroce_tp_qp_lookup(struct uroce_tp_dev *dev, uint32_t qpn)
{
	const struct tp_qpn_page *p = dev->qpn_pages[(qpn & UROCE_PSN_MASK) >> TP_QPN_PAGE_BITS];

	return p ? p->qp[qpn & (TP_QPN_PAGE_SIZE - 1)] : NULL;
}

/* The table entry of a QPN, its page allocated if need be. @return 0 or -ENOMEM. */
static int qpn_insert(struct uroce_tp_dev *dev, struct uroce_tp_qp *qp)
{
	struct tp_qpn_page **pp = &dev->qpn_pages[qp->qpn >> TP_QPN_PAGE_BITS];

	if (!*pp) {
		*pp = calloc(1, sizeof(**pp));
		if (!*pp)
			return -ENOMEM;
	}
	(*pp)->qp[qp->qpn & (TP_QPN_PAGE_SIZE - 1)] = qp;
	(*pp)->used++;
	return 0;
}

static void qpn_remove(struct uroce_tp_dev *dev, const struct uroce_tp_qp *qp)
{
	struct tp_qpn_page **pp = &dev->qpn_pages[qp->qpn >> TP_QPN_PAGE_BITS];

	(*pp)->qp[qp->qpn & (TP_QPN_PAGE_SIZE - 1)] = NULL;
	if (--(*pp)->used == 0) {
		free(*pp);
		*pp = NULL;
	}
}

static void qp_reset_state(struct uroce_tp_qp *qp)
{
	qp->sq_prod = qp->sq_cons = 0;
	qp->rq_prod = qp->rq_cons = 0;
	memset(&qp->req, 0, sizeof(qp->req));
	tp_qp_unschedule(qp);
	memset(&qp->comp, 0, sizeof(qp->comp));
	qp->comp.deadline = UINT64_MAX;
	qp->comp.rnr_deadline = UINT64_MAX;
	memset(qp->resp.res, 0, qp->resp.res_n * sizeof(*qp->resp.res));
	{
		struct tp_rd_res *res = qp->resp.res;
		uint32_t n = qp->resp.res_n;

		memset(&qp->resp, 0, sizeof(qp->resp));
		qp->resp.res = res;
		qp->resp.res_n = n;
	}
}

/* The queues and domains each QP type takes (what is missing or extra is EINVAL): an XRC
 * target has none but its XRCD, an XRC initiator a send CQ and maybe a receive CQ it never
 * uses, and neither has an SRQ (the target's SRQs are named per request). */
static bool qp_init_ok(const struct uroce_tp_pd *pd, const struct uroce_tp_qp_init *init)
{
	struct uroce_tp_dev *dev;

	switch (init->qp_type) {
	case IBV_QPT_XRC_RECV:
		return pd == NULL && init->xrcd && !init->send_cq && !init->recv_cq &&
		       !init->srq;
	case IBV_QPT_XRC_SEND:
		dev = pd ? pd->dev : NULL;
		return dev && !init->xrcd && init->send_cq && !init->srq &&
		       init->send_cq->dev == dev && (!init->recv_cq || init->recv_cq->dev == dev);
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
	case IBV_QPT_RAW_PACKET:
		return pd && !init->xrcd && init->send_cq && init->recv_cq &&
		       (!init->srq || (init->srq->pd->dev == pd->dev && !init->srq->xrcd));
	default:
		return false;
	}
}

struct uroce_tp_qp *uroce_tp_create_qp(struct uroce_tp_pd *pd, struct uroce_tp_qp_init *init)
{
	struct uroce_tp_dev *dev;
	struct ibv_qp_cap *cap = &init->cap;
	struct uroce_tp_qp *qp;
	uint32_t sq_n, rq_n;

	if (init->qp_type == IBV_QPT_DRIVER) {
		/* Programs and test suites read EOPNOTSUPP as "skip": a known type we lack. */
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!qp_init_ok(pd, init) || cap->max_send_wr > UROCE_TP_MAX_QP_WR ||
	    cap->max_recv_wr > UROCE_TP_MAX_QP_WR || cap->max_send_sge > UROCE_TP_MAX_SGE ||
	    cap->max_recv_sge > UROCE_TP_MAX_SGE || cap->max_inline_data > UROCE_TP_MAX_INLINE) {
		errno = EINVAL;
		return NULL;
	}
	dev = pd ? pd->dev : init->xrcd->dev;
	if (init->qp_type == IBV_QPT_XRC_RECV) /* no queues: what it is told is what it has */
		*cap = (struct ibv_qp_cap){0};
	if (init->qp_type == IBV_QPT_XRC_SEND) { /* it sends only */
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	}
	if (tp_sched_reserve(dev, dev->nqps + 1)) {
		errno = ENOMEM;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		return NULL;
	qp->heap_idx = UINT32_MAX;
	sq_n = uroce_tp_pow2_at_least(cap->max_send_wr ? cap->max_send_wr : 1);
	rq_n = uroce_tp_pow2_at_least(cap->max_recv_wr ? cap->max_recv_wr : 1);
	qp->sq = calloc(sq_n, sizeof(*qp->sq));
	qp->sq_av = init->qp_type == IBV_QPT_UD ? calloc(sq_n, sizeof(*qp->sq_av)) : NULL;
	qp->rq = init->srq ? NULL : calloc(rq_n, sizeof(*qp->rq));
	qp->resp.res = calloc(1, sizeof(*qp->resp.res));
	if (qp->sq == NULL || (init->qp_type == IBV_QPT_UD && qp->sq_av == NULL) ||
	    (!init->srq && qp->rq == NULL) || qp->resp.res == NULL)
		goto fail_nomem;
	qp->resp.res_n = 1;
	qp->dev = dev;
	qp->pd = pd;
	qp->xrcd = init->xrcd;
	qp->send_cq = init->send_cq;
	qp->recv_cq = init->recv_cq;
	qp->srq = init->srq;
	qp->type = init->qp_type;
	qp->sq_sig_all = init->sq_sig_all;
	qp->sq_mask = sq_n - 1;
	qp->rq_mask = rq_n - 1;
	/* What the QP really has: sizes rounded up, as providers report them back. */
	if (init->qp_type != IBV_QPT_XRC_RECV) {
		cap->max_send_wr = sq_n;
		cap->max_send_sge = UROCE_TP_MAX_SGE;
		cap->max_inline_data = UROCE_TP_MAX_INLINE;
	}
	if (init->qp_type != IBV_QPT_XRC_RECV && init->qp_type != IBV_QPT_XRC_SEND) {
		cap->max_recv_wr = init->srq ? 0 : rq_n;
		cap->max_recv_sge = init->srq ? 0 : UROCE_TP_MAX_SGE;
	}
	qp->cap = *cap;
	qp->state = IBV_QPS_RESET;
	qp->attr.qp_state = IBV_QPS_RESET;
	/* UD has no path MTU attribute: its messages go up to the port's MTU (rxe). */
	qp->attr.path_mtu = qp->type == IBV_QPT_UD ? dev->cfg.port_mtu : IBV_MTU_1024;
	qp->mtu = tp_mtu_bytes(qp->attr.path_mtu);
	qp_reset_state(qp);

	do {
		qp->qpn = dev->next_qpn;
		dev->next_qpn = (dev->next_qpn + 1) & UROCE_PSN_MASK;
		if (dev->next_qpn < 2)
			dev->next_qpn = 2;
	} while (uroce_tp_qp_lookup(dev, qp->qpn));
	if (qpn_insert(dev, qp))
		goto fail_nomem;
	qp->next = dev->qps;
	if (dev->qps)
		dev->qps->prev = qp;
	dev->qps = qp;

	dev->nqps++;
	if (pd)
		pd->refs++;
	if (qp->xrcd)
		qp->xrcd->refs++;
	if (qp->send_cq)
		qp->send_cq->refs++;
	if (qp->recv_cq)
		qp->recv_cq->refs++;
	if (qp->srq)
		qp->srq->refs++;
	return qp;

fail_nomem:
	free(qp->sq);
	free(qp->sq_av);
	free(qp->rq);
	free(qp->resp.res);
	free(qp);
	errno = ENOMEM;
	return NULL;
}

int uroce_tp_destroy_qp(struct uroce_tp_qp *qp)
{
	struct uroce_tp_dev *dev = qp->dev;

	if (qp->nflows)
		return -EBUSY; /* a rule still points at it: destroy the flows first */
	tp_qp_unschedule(qp);
	tp_mcast_detach_all(qp);
	/* No window may keep pointing at the QP: those bound to it are free again. */
	if (qp->nmw)
		tp_mw_qp_gone(qp);
	dev->nqps--;
	qpn_remove(dev, qp);
	if (qp->prev)
		qp->prev->next = qp->next;
	else
		dev->qps = qp->next;
	if (qp->next)
		qp->next->prev = qp->prev;
	if (qp->pd)
		qp->pd->refs--;
	if (qp->xrcd)
		qp->xrcd->refs--;
	if (qp->send_cq)
		qp->send_cq->refs--;
	if (qp->recv_cq)
		qp->recv_cq->refs--;
	if (qp->srq)
		qp->srq->refs--;
	free(qp->sq);
	free(qp->sq_av);
	free(qp->rq);
	free(qp->resp.res);
	free(qp);
	return 0;
}

uint32_t uroce_tp_qp_num(const struct uroce_tp_qp *qp)
{
	return qp->qpn;
}

enum ibv_qp_state uroce_tp_qp_state(const struct uroce_tp_qp *qp)
{
	return qp->state;
}

/* Attribute values, beyond which ones the transition takes (rxe_qp_chk_attr). */
static int check_attr_values(struct uroce_tp_qp *qp, const struct ibv_qp_attr *a, int mask,
			     const uint8_t *dmac)
{
	struct uroce_tp_dev *dev = qp->dev;

	if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != qp->state)
		return -EINVAL;
	if ((mask & IBV_QP_PORT) && a->port_num != 1)
		return -EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0)
		return -EINVAL;
	if ((mask & IBV_QP_PATH_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return -EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > UROCE_TP_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > UROCE_TP_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return -EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > UROCE_PSN_MASK)
		return -EINVAL;
	if ((mask & IBV_QP_RQ_PSN) && a->rq_psn > UROCE_PSN_MASK)
		return -EINVAL;
	if ((mask & IBV_QP_SQ_PSN) && a->sq_psn > UROCE_PSN_MASK)
		return -EINVAL;
	if (mask & IBV_QP_AV) {
		/* RoCE addresses by GID: the GRH is mandatory (IBA A16.4.3). */
		if (!a->ah_attr.is_global || a->ah_attr.grh.sgid_index >= dev->cfg.gid_count ||
		    a->ah_attr.port_num > 1 || dmac == NULL)
			return -EINVAL;
	}
	if (mask & IBV_QP_CAP) {
		/* Resizing a live QP is not offered; asking for what it has is fine. */
		if (a->cap.max_send_wr > qp->cap.max_send_wr ||
		    a->cap.max_recv_wr > qp->cap.max_recv_wr)
			return -EINVAL;
	}
	if ((mask & IBV_QP_ALT_PATH) || (mask & IBV_QP_PATH_MIG_STATE))
		return -EINVAL; /* automatic path migration: RoCE has no alternate paths here */
	return 0;
}

static void apply_attr(struct uroce_tp_qp *qp, const struct ibv_qp_attr *a, int mask,
		       const uint8_t *dmac)
{
	struct ibv_qp_attr *q = &qp->attr;

	if (mask & IBV_QP_ACCESS_FLAGS)
		q->qp_access_flags = a->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX)
		q->pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT)
		q->port_num = a->port_num;
	if (mask & IBV_QP_QKEY)
		q->qkey = a->qkey;
	if (mask & IBV_QP_PATH_MTU) {
		q->path_mtu = a->path_mtu;
		qp->mtu = tp_mtu_bytes(a->path_mtu);
	}
	if (mask & IBV_QP_DEST_QPN)
		q->dest_qp_num = a->dest_qp_num;
	if (mask & IBV_QP_AV) {
		q->ah_attr = a->ah_attr;
		tp_path_tmpl(qp->dev, &a->ah_attr, dmac, &qp->tmpl);
	}
	if (mask & (IBV_QP_AV | IBV_QP_DEST_QPN)) {
		qp->tmpl.bth.dqpn = q->dest_qp_num;
		qp->tmpl.udp_sport = uroce_udp_sport_connected(q->ah_attr.grh.flow_label, qp->qpn,
							       q->dest_qp_num);
	}
	if (mask & IBV_QP_RQ_PSN) {
		q->rq_psn = a->rq_psn;
		qp->resp.psn = a->rq_psn;
		qp->resp.ack_psn = uroce_psn_add(a->rq_psn, -1);
	}
	if (mask & IBV_QP_SQ_PSN) {
		q->sq_psn = a->sq_psn;
		qp->req.psn = a->sq_psn;
		qp->req.psn_max = a->sq_psn;
		qp->comp.psn = a->sq_psn;
	}
	if (mask & IBV_QP_TIMEOUT) {
		q->timeout = a->timeout;
		/* 4.096 us * 2^timeout; 0 means no timeout (IBA 9.7.6.1.3). */
		qp->comp.timeout_ns = a->timeout ? (4096ull << a->timeout) : 0;
	}
	if (mask & IBV_QP_RETRY_CNT) {
		q->retry_cnt = a->retry_cnt;
		qp->comp.retry_cnt = a->retry_cnt;
	}
	if (mask & IBV_QP_RNR_RETRY) {
		q->rnr_retry = a->rnr_retry;
		qp->comp.rnr_retry = a->rnr_retry;
	}
	if (mask & IBV_QP_MIN_RNR_TIMER)
		q->min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		q->max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		q->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		q->en_sqd_async_notify = a->en_sqd_async_notify;
}

int uroce_tp_modify_qp(struct uroce_tp_qp *qp, const struct ibv_qp_attr *attr, int mask,
		       const uint8_t *dmac, uint64_t now_ns)
{
	enum ibv_qp_state cur = qp->state;
	enum ibv_qp_state next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
	int rc;

	(void)now_ns;
	rc = tp_qp_attr_check(qp->type, cur, next, mask);
	if (rc == 0)
		rc = check_attr_values(qp, attr, mask, dmac);
	if (rc)
		return rc;

	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && attr->max_dest_rd_atomic > qp->resp.res_n) {
		struct tp_rd_res *res = calloc(attr->max_dest_rd_atomic, sizeof(*res));

		if (res == NULL)
			return -ENOMEM;
		/* Not only before RTR: SQD->SQD may grow it too (IBA table 94) while the
		 * responder works. Keep the resources, in PSN order: a queued READ response or
		 * an atomic's saved result must survive (else duplicates go unanswered). */
		for (uint32_t k = 0; k < qp->resp.res_count; k++)
			res[k] = qp->resp.res[(qp->resp.res_head + k) % qp->resp.res_n];
		free(qp->resp.res);
		qp->resp.res = res;
		qp->resp.res_n = attr->max_dest_rd_atomic;
		qp->resp.res_head = 0;
	}
	apply_attr(qp, attr, mask, dmac);

	if (next == cur)
		return 0;
	switch (next) {
	case IBV_QPS_RESET:
		/* IBA 10.3.1: RESET discards every WQE without a completion, and the QP's
		 * completions not yet polled go too, as mlx5 cleans its CQs: a QP reset and
		 * brought up again must not hand its new work the old flush errors (rdma-core's
		 * tests, test_mr.py's restate_qps, count on it). */
		qp->state = IBV_QPS_RESET;
		qp_reset_state(qp);
		/* An XRC target has no CQ: its receive completions are in its SRQs' CQs and
		 * stay there, as an SRQ's do. */
		if (qp->recv_cq)
			tp_cq_discard_qp(qp->recv_cq, qp->qpn, qp->srq != NULL);
		if (qp->send_cq && qp->send_cq != qp->recv_cq) /* one CQ: SRQ's stay too */
			tp_cq_discard_qp(qp->send_cq, qp->qpn, false);
		break;
	case IBV_QPS_ERR:
		tp_qp_to_error(qp);
		break;
	case IBV_QPS_SQD:
		qp->state = IBV_QPS_SQD;
		if (qp->attr.en_sqd_async_notify && tp_sq_drained(qp))
			tp_event(qp->dev, IBV_EVENT_SQ_DRAINED, qp);
		break;
	default:
		qp->state = next;
		if (next == IBV_QPS_RTS)
			tp_qp_schedule(qp); /* from SQD: WRs held back may go now */
		break;
	}
	qp->attr.qp_state = qp->state;
	return 0;
}

int uroce_tp_query_qp(const struct uroce_tp_qp *qp, struct ibv_qp_attr *attr,
		      struct ibv_qp_init_attr *init)
{
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->cap = qp->cap;
	attr->sq_draining = qp->state == IBV_QPS_SQD && !tp_sq_drained(qp);
	if (init) {
		memset(init, 0, sizeof(*init));
		init->qp_type = qp->type;
		init->cap = qp->cap;
		init->sq_sig_all = qp->sq_sig_all;
	}
	return 0;
}

/* ---- posting --------------------------------------------------------------------------- */

static bool opcode_ok(enum ibv_qp_type type, enum ibv_wr_opcode op)
{
	/* An XRC initiator sends what RC sends but for binds, invalidations and Atomic
	 * Write (a window bound through it could only be used through it, and its peer has
	 * no SQ to bind with; IBA 1.5 defines Atomic Write for RC). */
	if (type == IBV_QPT_XRC_SEND)
		return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE ||
		       op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_RDMA_READ ||
		       op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD ||
		       op == IBV_WR_SEND_WITH_INV;
	if (type == IBV_QPT_XRC_RECV)
		return false; /* no send queue */
	switch (op) {
	case IBV_WR_SEND: /* a raw packet QP's only one: its data is the frame */
		return true;
	case IBV_WR_SEND_WITH_IMM:
		return type != IBV_QPT_RAW_PACKET;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return type == IBV_QPT_RC || type == IBV_QPT_UC;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_ATOMIC_WRITE: /* IBA 1.5: RC only (rxe: IB_QPT_RC alone in its mask) */
		return type == IBV_QPT_RC;
	/* Local operations (IBA 10.6.7), where rxe allows them: a bind on the connected
	 * services, an invalidate on RC, the service that has SEND with Invalidate too. */
	case IBV_WR_BIND_MW:
		return type == IBV_QPT_RC || type == IBV_QPT_UC;
	case IBV_WR_LOCAL_INV:
		return type == IBV_QPT_RC;
	default:
		return false;
	}
}

static uint16_t op_flags(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return UROCE_OPF_WRITE;
	case IBV_WR_RDMA_READ:
		return UROCE_OPF_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return UROCE_OPF_ATOMIC;
	case IBV_WR_ATOMIC_WRITE:
		return UROCE_OPF_ATOMIC_WRITE;
	case IBV_WR_BIND_MW:
	case IBV_WR_LOCAL_INV:
		return 0; /* no packet: the requester carries it out (tp_wr_is_local) */
	default:
		return UROCE_OPF_SEND;
	}
}

/* The checks of a send WQE before it is queued. @return 0 with the message's length in
 * @p len, or -EINVAL. */
static inline int send_wqe_check(const struct uroce_tp_qp *qp,
				 const struct uroce_tp_send_wqe *wqe, uint64_t *len)
{
	if (qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_INIT || qp->state == IBV_QPS_RTR)
		return -EINVAL;
	if (!opcode_ok(qp->type, wqe->opcode))
		return -EINVAL;
	if (tp_wr_is_local(wqe->opcode)) {
		/* No data of its own: the bind's fields share the SGEs' room. */
		if (wqe->num_sge != 0 || (wqe->send_flags & IBV_SEND_INLINE))
			return -EINVAL;
		*len = 0;
	} else if (wqe->send_flags & IBV_SEND_INLINE) {
		/* An Atomic Write's 8 bytes are its operand, carried in the WQE as rxe and
		 * mlx5 carry it, whatever max_inline_data the QP asked for (often 0). */
		uint32_t max_inline = wqe->opcode == IBV_WR_ATOMIC_WRITE ? 8
									: qp->cap.max_inline_data;

		if (wqe->inline_len > max_inline || wqe->opcode == IBV_WR_RDMA_READ ||
		    (op_flags(wqe->opcode) & UROCE_OPF_ATOMIC))
			return -EINVAL;
		*len = wqe->inline_len;
	} else {
		if (wqe->num_sge > qp->cap.max_send_sge)
			return -EINVAL;
		*len = tp_sge_len(wqe->sg_list, wqe->num_sge);
	}
	if (*len > TP_MAX_MSG || (qp->type == IBV_QPT_RAW_PACKET && *len < UROCE_ETH_HLEN))
		return -EINVAL;
	/* 8-byte operands on 8-byte aligned remote addresses (IBA 9.4.5). An Atomic Write's
	 * 8 bytes are its data, from SGEs (8 in all) or inline: verbs' ibv_wr_atomic_write
	 * gives a pointer to them, posted as IBV_SEND_INLINE with inline_len 8. */
	if (op_flags(wqe->opcode) & (UROCE_OPF_ATOMIC | UROCE_OPF_ATOMIC_WRITE)) {
		if (*len != 8 || (wqe->remote_addr & 7))
			return -EINVAL;
	}
	if (qp->type == IBV_QPT_UD && (wqe->ah == NULL || wqe->ah->pd != qp->pd))
		return -EINVAL;
	if (qp->type == IBV_QPT_XRC_SEND && wqe->remote_srqn > UROCE_PSN_MASK)
		return -EINVAL; /* the XRCETH holds 24 bits */
	return 0;
}

static bool sq_full(const struct uroce_tp_qp *qp)
{
	return qp->sq_prod - qp->sq_cons > qp->sq_mask;
}

/* The bodies of the in-place calls, inlined into uroce_tp_post_send too (an exported
 * function is not, in a shared object's code): a whole post costs one call. */
static inline struct uroce_tp_send_wqe *send_reserve(struct uroce_tp_qp *qp)
{
	return sq_full(qp) ? NULL : &tp_sq_slot(qp, qp->sq_prod)->wqe;
}

/* Queues the checked WQE in the reserved slot @p s, a message of @p len bytes. */
static inline void send_queue(struct uroce_tp_qp *qp, struct tp_send_slot *s, uint64_t len)
{
	if (qp->type == IBV_QPT_UD) {
		qp->sq_av[qp->sq_prod & qp->sq_mask] = s->wqe.ah->tmpl;
		s->wqe.ah = NULL; /* never read after this: the AH may go at once */
	}
	s->length = (uint32_t)len;
	s->first_psn = 0;
	s->last_psn = 0;
	s->npsn = 0;
	s->started = false;
	s->opf = op_flags(s->wqe.opcode);
	s->state = TP_WQE_POSTED;
	s->status = IBV_WC_SUCCESS;
	qp->sq_prod++;
	if (qp->state == IBV_QPS_RTS || qp->state == IBV_QPS_SQD)
		tp_qp_schedule(qp); /* the doorbell: uroce_tp_process sends it */
	if (qp->state == IBV_QPS_ERR) {
		/* IBA 10.3.1: WRs posted in the error state complete in error. */
		tp_qp_flush(qp);
	}
}

struct uroce_tp_send_wqe *uroce_tp_post_send_reserve(struct uroce_tp_qp *qp)
{
	return send_reserve(qp);
}

int uroce_tp_post_send_commit(struct uroce_tp_qp *qp, uint64_t now_ns)
{
	struct tp_send_slot *s;
	uint64_t len;
	int rc;

	(void)now_ns;
	if (sq_full(qp))
		return -ENOMEM;
	/* The WQE is checked where it lies, in the transport's own memory: what bounds a
	 * later copy (num_sge, inline_len) cannot change after its check. */
	s = tp_sq_slot(qp, qp->sq_prod);
	rc = send_wqe_check(qp, &s->wqe, &len);
	if (rc == 0)
		send_queue(qp, s, len);
	return rc;
}

int uroce_tp_post_send(struct uroce_tp_qp *qp, const struct uroce_tp_send_wqe *wqe,
		       uint64_t now_ns)
{
	struct uroce_tp_send_wqe *w;
	uint64_t len;
	int rc;

	(void)now_ns;
	/* The caller's WQE is its own: checked where it is, before the copy (checked in the
	 * slot after the copy, it cost 2 % more CPU per 8 B SEND in bench_transport). */
	rc = send_wqe_check(qp, wqe, &len);
	if (rc)
		return rc;
	w = send_reserve(qp);
	if (w == NULL)
		return -ENOMEM;
	/* Only the WQE's used part is copied and nothing is zeroed first: the slot is ~0.5 KiB
	 * and clearing it was 5 % of the CPU of an 8 B SEND. Unused SGEs and inline bytes
	 * stay as they were; nothing reads past num_sge or inline_len. */
	memcpy(w, wqe, offsetof(struct uroce_tp_send_wqe, sg_list));
	if (wqe->opcode == IBV_WR_BIND_MW)
		w->bind = wqe->bind;
	else if (wqe->send_flags & IBV_SEND_INLINE)
		memcpy(w->inline_data, wqe->inline_data, wqe->inline_len);
	else
		memcpy(w->sg_list, wqe->sg_list, wqe->num_sge * sizeof(wqe->sg_list[0]));
	send_queue(qp, tp_sq_slot(qp, qp->sq_prod), len);
	return 0;
}

static int recv_wqe_check(const struct uroce_tp_qp *qp, const struct uroce_tp_recv_wqe *wqe)
{
	if (qp->srq || qp->type == IBV_QPT_XRC_SEND || qp->type == IBV_QPT_XRC_RECV ||
	    qp->state == IBV_QPS_RESET || wqe->num_sge > qp->cap.max_recv_sge)
		return -EINVAL;
	return 0;
}

static inline struct uroce_tp_recv_wqe *recv_reserve(struct uroce_tp_qp *qp)
{
	if (qp->rq == NULL || qp->rq_prod - qp->rq_cons > qp->rq_mask)
		return NULL;
	return &qp->rq[qp->rq_prod & qp->rq_mask];
}

/* Queues the checked WQE in the reserved slot. */
static inline void recv_queue(struct uroce_tp_qp *qp)
{
	qp->rq_prod++;
	if (qp->state == IBV_QPS_ERR)
		tp_qp_flush(qp);
}

struct uroce_tp_recv_wqe *uroce_tp_post_recv_reserve(struct uroce_tp_qp *qp)
{
	return recv_reserve(qp);
}

int uroce_tp_post_recv_commit(struct uroce_tp_qp *qp)
{
	const struct uroce_tp_recv_wqe *w = recv_reserve(qp);
	int rc;

	if (w == NULL)
		return -ENOMEM;
	rc = recv_wqe_check(qp, w);
	if (rc == 0)
		recv_queue(qp);
	return rc;
}

int uroce_tp_post_recv(struct uroce_tp_qp *qp, const struct uroce_tp_recv_wqe *wqe)
{
	struct uroce_tp_recv_wqe *w;
	int rc = recv_wqe_check(qp, wqe);

	if (rc)
		return rc;
	w = recv_reserve(qp);
	if (w == NULL)
		return -ENOMEM;
	*w = *wqe;
	recv_queue(qp);
	return 0;
}

/* ---- errors ---------------------------------------------------------------------------- */

void tp_qp_flush(struct uroce_tp_qp *qp)
{
	/* Send side: everything not yet completed, in order. */
	for (uint32_t i = qp->sq_cons; i != qp->sq_prod; i++) {
		struct tp_send_slot *s = tp_sq_slot(qp, i);

		if (s->state != TP_WQE_DONE) {
			s->state = TP_WQE_DONE;
			s->status = IBV_WC_WR_FLUSH_ERR;
		}
	}
	qp->req.idx = qp->sq_prod;
	qp->req.rd_atomic = 0;
	tp_comp_retire(qp);

	/* Receive side: the QP's own RQ (an SRQ's WQEs belong to the SRQ), and the WQE a
	 * message in progress took (an XRC target's from the SRQ the message named). */
	if (qp->resp.has_rwqe) {
		struct ibv_wc wc = {.wr_id = qp->resp.rwqe.wr_id,
				    .status = IBV_WC_WR_FLUSH_ERR,
				    .opcode = IBV_WC_RECV,
				    .qp_num = qp->qpn};
		struct uroce_tp_cq *cq = tp_resp_cq(qp);

		qp->resp.has_rwqe = false;
		if (cq)
			tp_cq_push(cq, &wc);
	}
	while (qp->srq == NULL && qp->rq_cons != qp->rq_prod) {
		struct ibv_wc wc = {.wr_id = qp->rq[qp->rq_cons & qp->rq_mask].wr_id,
				    .status = IBV_WC_WR_FLUSH_ERR,
				    .opcode = IBV_WC_RECV,
				    .qp_num = qp->qpn};
		tp_cq_push(qp->recv_cq, &wc);
		qp->rq_cons++;
	}
	tp_set_deadline(qp, UINT64_MAX);
	tp_set_rnr_deadline(qp, UINT64_MAX);
}

void tp_qp_to_error(struct uroce_tp_qp *qp)
{
	bool was_error = qp->state == IBV_QPS_ERR;

	qp->state = IBV_QPS_ERR;
	qp->attr.qp_state = IBV_QPS_ERR;
	tp_qp_flush(qp);
	/* IBA 11.6.3.1: a QP on an SRQ reports its last WQE when it enters the error state. */
	if (!was_error && qp->srq)
		tp_event(qp->dev, IBV_EVENT_QP_LAST_WQE_REACHED, qp);
}

uint32_t uroce_tp_qp_sq_outstanding(const struct uroce_tp_qp *qp)
{
	return qp->sq_prod - qp->sq_cons;
}

uint32_t uroce_tp_qp_rq_outstanding(const struct uroce_tp_qp *qp)
{
	return qp->rq_prod - qp->rq_cons;
}

void uroce_tp_qp_set_user(struct uroce_tp_qp *qp, void *user)
{
	qp->user = user;
}

void *uroce_tp_qp_user(const struct uroce_tp_qp *qp)
{
	return qp->user;
}
