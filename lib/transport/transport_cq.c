/* SPDX-License-Identifier: BSD-3-Clause */
/* Completion queues (rxe_cq.c): a ring of work completions, its overrun, resize and poll. */
#include <stdlib.h>

#include "tp_internal.h"

/* Off the ready list (emptied, or destroyed); a CQ not on it stays linked to itself. */
static void cq_unready(struct uroce_tp_cq *cq)
{
	tp_list_del(&cq->ready_node);
	tp_list_init(&cq->ready_node);
}

struct uroce_tp_cq *uroce_tp_create_cq(struct uroce_tp_dev *dev, int cqe)
{
	struct uroce_tp_cq *cq;
	uint32_t n;

	if (cqe < 1 || cqe > UROCE_TP_MAX_CQE) {
		errno = EINVAL;
		return NULL;
	}
	n = uroce_tp_pow2_at_least((uint32_t)cqe + 1);
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL || (cq->ring = calloc(n, sizeof(*cq->ring))) == NULL) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->dev = dev;
	cq->size = n - 1;
	cq->mask = n - 1;
	tp_list_add(&dev->cqs, &cq->node);
	tp_list_init(&cq->ready_node);
	return cq;
}

int uroce_tp_destroy_cq(struct uroce_tp_cq *cq)
{
	if (cq->refs)
		return -EBUSY;
	tp_list_del(&cq->node);
	cq_unready(cq);
	free(cq->ring);
	free(cq);
	return 0;
}

bool tp_cq_push(struct uroce_tp_cq *cq, const struct ibv_wc *wc)
{
	if (cq->prod - cq->cons >= cq->size) {
		/* IBA 11.4.2.1: CQ overrun is an error of the CQ, the completion is lost. */
		if (!cq->overflowed)
			tp_event(cq->dev, IBV_EVENT_CQ_ERR, cq);
		cq->overflowed = true;
		return false;
	}
	cq->ring[cq->prod & cq->mask] = *wc;
	/* Empty -> non-empty: it joins the ready list, which the caller walks. */
	if (cq->prod++ == cq->cons)
		tp_list_add_tail(&cq->dev->ready_cqs, &cq->ready_node);
	return true;
}

void tp_cq_discard_qp(struct uroce_tp_cq *cq, uint32_t qpn, bool keep_recv)
{
	uint32_t held = cq->prod - cq->cons, dropped = 0;

	/* Newest first: each kept completion moves up past those dropped so far, so the
	 * order stays and the freed slots are the oldest ones. */
	for (uint32_t i = held; i-- > 0;) {
		struct ibv_wc *wc = &cq->ring[(cq->cons + i) & cq->mask];

		if (wc->qp_num == qpn && !(keep_recv && (wc->opcode & IBV_WC_RECV))) {
			dropped++;
			continue;
		}
		if (dropped)
			cq->ring[(cq->cons + i + dropped) & cq->mask] = *wc;
	}
	cq->cons += dropped;
	if (cq->cons == cq->prod)
		cq_unready(cq);
}

uint32_t uroce_tp_cq_count(const struct uroce_tp_cq *cq)
{
	return cq->prod - cq->cons;
}

int uroce_tp_resize_cq(struct uroce_tp_cq *cq, int cqe)
{
	uint32_t n, held = cq->prod - cq->cons;
	struct ibv_wc *ring;

	if (cqe < 1 || cqe > UROCE_TP_MAX_CQE)
		return -EINVAL;
	n = uroce_tp_pow2_at_least((uint32_t)cqe + 1);
	if (held > n - 1)
		return -EINVAL;
	ring = calloc(n, sizeof(*ring));
	if (ring == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < held; i++)
		ring[i] = cq->ring[(cq->cons + i) & cq->mask];
	free(cq->ring);
	cq->ring = ring;
	cq->size = n - 1;
	cq->mask = n - 1;
	cq->cons = 0;
	cq->prod = held;
	return 0;
}

int uroce_tp_poll_cq(struct uroce_tp_cq *cq, int n, struct ibv_wc *wc)
{
	int i;

	for (i = 0; i < n && cq->cons != cq->prod; i++, cq->cons++)
		wc[i] = cq->ring[cq->cons & cq->mask];
	if (cq->cons == cq->prod)
		cq_unready(cq);
	return i;
}

struct uroce_tp_cq *uroce_tp_cq_ready_first(struct uroce_tp_dev *dev)
{
	if (dev->ready_cqs.next == &dev->ready_cqs)
		return NULL;
	return tp_container_of(dev->ready_cqs.next, struct uroce_tp_cq, ready_node);
}

struct uroce_tp_cq *uroce_tp_cq_ready_next(struct uroce_tp_cq *cq)
{
	if (cq->ready_node.next == &cq->dev->ready_cqs)
		return NULL;
	return tp_container_of(cq->ready_node.next, struct uroce_tp_cq, ready_node);
}

bool uroce_tp_cq_overflowed(const struct uroce_tp_cq *cq)
{
	return cq->overflowed;
}

void uroce_tp_cq_set_user(struct uroce_tp_cq *cq, void *user)
{
	cq->user = user;
}

void *uroce_tp_cq_user(const struct uroce_tp_cq *cq)
{
	return cq->user;
}
