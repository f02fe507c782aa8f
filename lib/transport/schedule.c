/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device's work loop: which QPs have something to send, and when their timers fire.
 * The cost of uroce_tp_process and uroce_tp_next_deadline follows the QPs that are busy,
 * not how many exist (a daemon may hold thousands of idle QPs):
 * - the work list holds QPs with packets waiting to go out (posted and not yet tried, or
 *   refused by a full link); a QP leaves it when its requester and responder have sent
 *   all they may;
 * - the timer heap holds QPs with an armed retransmission or RNR timer, keyed by the
 *   earlier of the two, one entry per QP (an indexed binary heap: re-arming moves the
 *   entry, so the heap never holds more than the device's QPs).
 */
#include <stdlib.h>

#include "tp_internal.h"

#define NOT_IN_HEAP UINT32_MAX

static void heap_set(struct uroce_tp_dev *dev, uint32_t i, struct uroce_tp_qp *qp)
{
	dev->heap[i] = qp;
	qp->heap_idx = i;
}

static void sift_up(struct uroce_tp_dev *dev, uint32_t i)
{
	struct uroce_tp_qp *qp = dev->heap[i];
	uint64_t key = tp_qp_timer(qp);

	while (i > 0 && tp_qp_timer(dev->heap[(i - 1) / 2]) > key) {
		heap_set(dev, i, dev->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_set(dev, i, qp);
}

static void sift_down(struct uroce_tp_dev *dev, uint32_t i)
{
	struct uroce_tp_qp *qp = dev->heap[i];
	uint64_t key = tp_qp_timer(qp);

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= dev->heap_n)
			break;
		if (c + 1 < dev->heap_n &&
		    tp_qp_timer(dev->heap[c + 1]) < tp_qp_timer(dev->heap[c]))
			c++;
		if (tp_qp_timer(dev->heap[c]) >= key)
			break;
		heap_set(dev, i, dev->heap[c]);
		i = c;
	}
	heap_set(dev, i, qp);
}

static void heap_remove(struct uroce_tp_dev *dev, struct uroce_tp_qp *qp)
{
	uint32_t i = qp->heap_idx;
	struct uroce_tp_qp *last;

	if (i == NOT_IN_HEAP)
		return;
	qp->heap_idx = NOT_IN_HEAP;
	last = dev->heap[--dev->heap_n];
	if (last == qp)
		return;
	heap_set(dev, i, last);
	sift_up(dev, i);
	sift_down(dev, last->heap_idx);
}

/* After either timer of @qp changed. */
static void timer_changed(struct uroce_tp_qp *qp)
{
	struct uroce_tp_dev *dev = qp->dev;

	if (tp_qp_timer(qp) == UINT64_MAX) {
		heap_remove(dev, qp);
		return;
	}
	if (qp->heap_idx == NOT_IN_HEAP) {
		/* tp_sched_reserve made room when the QP was created. */
		heap_set(dev, dev->heap_n++, qp);
		sift_up(dev, qp->heap_idx);
		return;
	}
	sift_up(dev, qp->heap_idx);
	sift_down(dev, qp->heap_idx);
}

void tp_set_deadline(struct uroce_tp_qp *qp, uint64_t at)
{
	if (qp->comp.deadline != at) {
		qp->comp.deadline = at;
		timer_changed(qp);
	}
}

void tp_set_rnr_deadline(struct uroce_tp_qp *qp, uint64_t at)
{
	if (qp->comp.rnr_deadline != at) {
		qp->comp.rnr_deadline = at;
		timer_changed(qp);
	}
}

int tp_sched_reserve(struct uroce_tp_dev *dev, uint32_t nqps)
{
	struct uroce_tp_qp **h;
	uint32_t cap;

	if (nqps <= dev->heap_cap)
		return 0;
	cap = dev->heap_cap ? dev->heap_cap * 2 : 64;
	while (cap < nqps)
		cap *= 2;
	h = realloc(dev->heap, cap * sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	dev->heap = h;
	dev->heap_cap = cap;
	return 0;
}

void tp_qp_schedule(struct uroce_tp_qp *qp)
{
	if (!qp->on_work) {
		qp->on_work = true;
		tp_list_add_tail(&qp->dev->work, &qp->work); /* in turn, after those waiting */
		qp->work_queued_at = qp->dev->turn_pkts;
	}
}

void tp_qp_unschedule(struct uroce_tp_qp *qp)
{
	if (qp->on_work) {
		qp->on_work = false;
		tp_list_del(&qp->work);
	}
	heap_remove(qp->dev, qp);
}

void uroce_tp_process(struct uroce_tp_dev *dev, uint64_t now_ns)
{
	struct tp_node *n, *next, *last;

	dev->tx_blocked = false;
	/* Timers that are due. tp_comp_timers moves each timer past now or disarms it, so
	 * the loop ends; the QP then has packets to send again. */
	while (dev->heap_n && tp_qp_timer(dev->heap[0]) <= now_ns) {
		struct uroce_tp_qp *qp = dev->heap[0];

		tp_comp_timers(qp, now_ns);
		if (tp_qp_timer(qp) <= now_ns) {
			/* Not a timer tp_comp_timers handles (a QP gone to ERR): disarm. */
			tp_set_deadline(qp, UINT64_MAX);
			tp_set_rnr_deadline(qp, UINT64_MAX);
		}
		tp_qp_schedule(qp);
	}
	/* QPs with packets to send, each in turn, once per call: at most cfg.tx_burst
	 * packets, then the next QP's turn, so that one QP's flood (a UD or UC sender has
	 * no window) holds another's message back by a burst, not by its whole queue. One
	 * that sent all it may leaves the list; one with more, or that the link refused,
	 * goes to its end (and tx_blocked tells the caller to come back). QPs put on the
	 * list meanwhile wait for the next call. */
	last = dev->work.prev;
	for (n = dev->work.next; n != &dev->work; n = next) {
		struct uroce_tp_qp *qp = tp_container_of(n, struct uroce_tp_qp, work);
		bool resp_done, req_done, was_last = n == last;
		uint64_t sent_before = dev->cnt.sent_pkts;

		next = n->next;
		if (dev->turn_pkts - qp->work_queued_at > dev->turn_wait_max)
			dev->turn_wait_max = dev->turn_pkts - qp->work_queued_at;
		dev->visit_left = dev->cfg.tx_burst ? dev->cfg.tx_burst : UINT32_MAX;
		resp_done = tp_resp_run(qp);
		req_done = tp_req_run(qp, now_ns);
		dev->turn_pkts += dev->cnt.sent_pkts - sent_before;
		if (qp->on_work) {
			tp_list_del(&qp->work);
			if (resp_done && req_done) {
				qp->on_work = false;
			} else {
				tp_list_add_tail(&dev->work, &qp->work);
				qp->work_queued_at = dev->turn_pkts;
			}
		}
		if (was_last)
			break;
	}
	dev->visit_left = UINT32_MAX;
}

uint64_t uroce_tp_next_deadline(const struct uroce_tp_dev *dev)
{
	if (dev->tx_blocked || dev->work.next != &dev->work)
		return 0; /* packets wait: call uroce_tp_process again now */
	return dev->heap_n ? tp_qp_timer(dev->heap[0]) : UINT64_MAX;
}
