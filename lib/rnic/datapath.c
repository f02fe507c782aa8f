/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared-memory data path: doorbells (producer indices the applications publish)
 * into the transport, completions out of the transport into the applications' CQ rings,
 * and async events into their event rings.
 *
 * Ordering, per queue (see lib/shm for the ring protocol itself):
 * - a QP's "retired" counts (its SRQ's, for receives from one) are published (release)
 *   before the completions that retire those WQEs are committed to the CQ ring, so an
 *   application that sees a completion and posts again never finds its queue spuriously
 *   full;
 * - a CQ's event count is incremented before its channel's pipe is written, so a reader
 *   woken by the pipe finds which CQ it was;
 * - the client's CQ waiters line is bumped after the completions are committed, so a
 *   thread it wakes finds them (lib/shm, uroce_waiters_notify).
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rnic_internal.h"

static void srq_publish_retired(struct rnic_srq *s)
{
	uint32_t r = s->taken - uroce_tp_srq_outstanding(s->tp);

	/* release: as for a QP's queues. */
	if (atomic_load_explicit(&s->ctl->sq_retired, memory_order_relaxed) != r)
		atomic_store_explicit(&s->ctl->sq_retired, r, memory_order_release);
}

void rnic_qp_publish_retired(struct rnic_qp *q)
{
	uint32_t sq = q->sq_taken - uroce_tp_qp_sq_outstanding(q->tp);

	if (sq != q->sq_retired) {
		q->sq_retired = sq;
		/* release: our reads of the retired slots happened before (cons_release), and
		 * the application may overwrite them once it sees this. */
		atomic_store_explicit(&q->ctl->sq_retired, sq, memory_order_release);
	}
	if (!q->srq) {
		uint32_t rq = q->rq_taken - uroce_tp_qp_rq_outstanding(q->tp);

		if (rq != q->rq_retired) {
			q->rq_retired = rq;
			atomic_store_explicit(&q->ctl->rq_retired, rq, memory_order_release);
		}
	} else {
		/* Its receives came from the SRQ: that is the count an application that saw
		 * the completion and posts again reads (ibv_post_srq_recv's room). */
		srq_publish_retired(q->srq);
	}
}

/* A WQE the transport refused (a client that skipped its library's checks, or wrote
 * the ring by hand): the QP cannot go on. The error state flushes what it holds; the
 * WQE itself is posted again there so it completes (flushed) instead of vanishing. */
static void qp_bad_wqe(struct rnic_qp *q)
{
	struct uroce_rnic *nic = q->client->rnic;
	struct ibv_qp_attr err = {.qp_state = IBV_QPS_ERR};

	nic->cnt.bad_wqe++;
	RNIC_WARN(nic, "client %s[%d]: QP %u: a work request the transport refused: QP to error",
		  q->client->name, q->client->pid, uroce_tp_qp_num(q->tp));
	uroce_tp_modify_qp(q->tp, &err, IBV_QP_STATE, NULL, rnic_now(nic));
	rnic_tp_event(nic, IBV_EVENT_QP_FATAL, q->tp);
}

/* A WQE in a shared ring is copied into the transport's slot: the limits an application
 * was told (the device's max_sge, max_inline_data) are the transport's, and the ring's WQE
 * must hold exactly that much. */
_Static_assert(UROCE_CTRL_MAX_SGE == UROCE_TP_MAX_SGE, "ring WQE's sg_list: the transport's");
_Static_assert(UROCE_CTRL_MAX_INLINE == UROCE_TP_MAX_INLINE, "inline bytes: the transport's");
_Static_assert(UROCE_CTRL_QUEUE_CTL_OFFSET >= sizeof(struct uroce_shm_hdr),
	       "a QP region's queue counters sit after its header");

/*
 * WQEs come from rings the application writes, and it may rewrite a slot while we read
 * it (a bug, or on purpose). Each field is therefore read exactly once
 * (UROCE_SHM_READ_ONCE), straight into the transport's slot (uroce_tp_post_send_reserve:
 * the one copy of a WQE in the daemon), and what bounds a copy (num_sge, inline_len) is
 * checked there, in our own memory: a length checked in the ring and read again for the
 * copy could overrun the slot. The transport's commit checks the rest there too. Payload
 * bytes (inline data) may still change under the copy; they are data, and bound nothing.
 */
#define RD(field) UROCE_SHM_READ_ONCE(field)

static void to_tp_recv(struct uroce_tp_recv_wqe *t, const struct uroce_ctrl_recv_wqe *w)
{
	uint32_t i, n;

	t->wr_id = RD(w->wr_id);
	t->num_sge = RD(w->num_sge); /* too many is refused by the transport, not truncated */
	n = t->num_sge < UROCE_TP_MAX_SGE ? t->num_sge : UROCE_TP_MAX_SGE;
	for (i = 0; i < n; i++) {
		t->sg_list[i].addr = RD(w->sg_list[i].addr);
		t->sg_list[i].length = RD(w->sg_list[i].length);
		t->sg_list[i].lkey = RD(w->sg_list[i].lkey);
	}
}

static int to_tp_send(struct rnic_qp *q, struct uroce_tp_send_wqe *t,
		      const struct uroce_ctrl_send_wqe *w)
{
	uint32_t ah = RD(w->ah), i;

	t->wr_id = RD(w->wr_id);
	t->opcode = (enum ibv_wr_opcode)RD(w->opcode);
	t->send_flags = RD(w->send_flags);
	t->imm_data = RD(w->imm_data);
	t->invalidate_rkey = RD(w->invalidate_rkey);
	t->remote_addr = RD(w->remote_addr);
	t->rkey = RD(w->rkey);
	t->compare_add = RD(w->compare_add);
	t->swap = RD(w->swap);
	t->remote_qpn = RD(w->remote_qpn);
	t->remote_srqn = t->remote_qpn; /* the same bytes: UD's QPN or XRC's SRQ number */
	t->remote_qkey = RD(w->remote_qkey);
	t->num_sge = RD(w->num_sge);
	t->inline_len = RD(w->inline_len);
	t->ah = NULL;
	if (ah) {
		t->ah = rnic_obj_get(q->client, ah, RNIC_OBJ_AH);
		if (!t->ah)
			return -EINVAL;
	}
	if (t->opcode == IBV_WR_BIND_MW) {
		/* The window is named by its R_Key; the transport checks it is one of the
		 * QP's PD, and everything else a bind must satisfy. */
		t->bind.mw_rkey = RD(w->bind.mw_rkey);
		t->bind.rkey = RD(w->bind.rkey);
		t->bind.mr_lkey = RD(w->bind.mr_lkey);
		t->bind.access = RD(w->bind.access);
		t->bind.addr = RD(w->bind.addr);
		t->bind.length = RD(w->bind.length);
		return 0;
	}
	if (t->send_flags & IBV_SEND_INLINE) {
		if (t->inline_len > sizeof(t->inline_data))
			return -EINVAL;
		memcpy(t->inline_data, w->inline_data, t->inline_len);
		return 0;
	}
	if (t->num_sge > UROCE_TP_MAX_SGE)
		return -EINVAL;
	for (i = 0; i < t->num_sge; i++) {
		t->sg_list[i].addr = RD(w->sg_list[i].addr);
		t->sg_list[i].length = RD(w->sg_list[i].length);
		t->sg_list[i].lkey = RD(w->sg_list[i].lkey);
	}
	return 0;
}

#undef RD

/* ---- the retiring list ------------------------------------------------------------- */

/* A queue that just handed WQEs to the transport: its retired counts must be published
 * until they catch up (uroce_rnic_doorbells), completions or not. */
static void retiring_add(struct uroce_rnic *nic, struct rnic_qp *qp, struct rnic_srq *srq)
{
	uint32_t *idx = qp ? &qp->retiring_idx : &srq->retiring_idx;

	if (*idx != RNIC_NOT_RETIRING)
		return;
	/* Without memory the counts wait for the queue's next completion, which publishes
	 * them too: late, never wrong. */
	if (rnic_array_room(&nic->retiring, nic->nretiring, &nic->cap_retiring,
			    sizeof(*nic->retiring)))
		return;
	*idx = nic->nretiring;
	nic->retiring[nic->nretiring++] = (struct rnic_queue_ref){.qp = qp, .srq = srq};
}

static void retiring_del(struct uroce_rnic *nic, uint32_t idx)
{
	struct rnic_queue_ref *last = &nic->retiring[--nic->nretiring];
	struct rnic_queue_ref *gone = &nic->retiring[idx];

	if (gone->qp)
		gone->qp->retiring_idx = RNIC_NOT_RETIRING;
	else
		gone->srq->retiring_idx = RNIC_NOT_RETIRING;
	if (idx == nic->nretiring)
		return;
	*gone = *last;
	if (gone->qp)
		gone->qp->retiring_idx = idx;
	else
		gone->srq->retiring_idx = idx;
}

/* Publishes what retired on every queue of the list; a queue whose WQEs have all
 * retired leaves it. */
static void retiring_publish(struct uroce_rnic *nic)
{
	uint32_t i = 0;

	while (i < nic->nretiring) {
		struct rnic_queue_ref *r = &nic->retiring[i];
		bool done;

		if (r->qp) {
			rnic_qp_publish_retired(r->qp);
			done = r->qp->sq_retired == r->qp->sq_taken &&
			       (r->qp->srq || r->qp->rq_retired == r->qp->rq_taken);
		} else {
			srq_publish_retired(r->srq);
			done = uroce_tp_srq_outstanding(r->srq->tp) == 0;
		}
		if (done)
			retiring_del(nic, i);
		else
			i++;
	}
}

/* ---- doorbell slots ------------------------------------------------------------------ */

int rnic_doorbell_slot_get(struct uroce_rnic_client *c, struct rnic_qp *qp, struct rnic_srq *srq)
{
	uint32_t slot;

	if (c->nfree_slots) {
		slot = c->free_slots[--c->nfree_slots];
	} else {
		if (c->nslots == c->doorbells.slots)
			return -ENOMEM;
		if (rnic_array_room(&c->slots, c->nslots, &c->cap_slots, sizeof(*c->slots)))
			return -ENOMEM;
		slot = c->nslots++;
	}
	c->slots[slot] = (struct rnic_queue_ref){.qp = qp, .srq = srq};
	if (qp) {
		qp->doorbell_slot = slot;
		qp->retiring_idx = RNIC_NOT_RETIRING;
		qp->ctl->doorbell_slot = slot;
	} else {
		srq->doorbell_slot = slot;
		srq->retiring_idx = RNIC_NOT_RETIRING;
		srq->ctl->doorbell_slot = slot;
	}
	return 0;
}

void rnic_doorbell_slot_put(struct uroce_rnic_client *c, struct rnic_qp *qp, struct rnic_srq *srq)
{
	uint32_t slot = qp ? qp->doorbell_slot : srq->doorbell_slot;
	uint32_t idx = qp ? qp->retiring_idx : srq->retiring_idx;

	if (idx != RNIC_NOT_RETIRING)
		retiring_del(c->rnic, idx);
	if (slot == UINT32_MAX)
		return; /* none (an XRC target that changed holders without one: xrc.c) */
	c->slots[slot] = (struct rnic_queue_ref){0};
	/* Without memory the slot stays unused: one fewer for this client. */
	if (rnic_array_room(&c->free_slots, c->nfree_slots, &c->cap_free_slots,
			    sizeof(*c->free_slots)) == 0)
		c->free_slots[c->nfree_slots++] = slot;
}

void rnic_doorbell_slots_free(struct uroce_rnic_client *c)
{
	free(c->slots);
	free(c->free_slots);
	c->slots = NULL;
	c->free_slots = NULL;
	c->nslots = c->cap_slots = c->nfree_slots = c->cap_free_slots = 0;
}

/* @p refill: called from inside the transport (rq_refill), where a QP must not change
 * state: a malformed WQE is left for the next doorbell scan instead. */
static unsigned int rq_doorbell(struct rnic_qp *q, bool refill)
{
	uint32_t n = uroce_ring_cons_avail(&q->rq), i;
	int rc;

	for (i = 0; i < n; i++) {
		struct uroce_tp_recv_wqe *t = uroce_tp_post_recv_reserve(q->tp);

		if (t == NULL)
			break; /* the transport's queue is full: the rest waits in the ring */
		to_tp_recv(t, uroce_ring_cons_slot(&q->rq, i));
		rc = uroce_tp_post_recv_commit(q->tp);
		if (rc && refill)
			break;
		if (rc) {
			qp_bad_wqe(q);
			t->num_sge = 0;
			uroce_tp_post_recv_commit(q->tp);
		}
	}
	if (i) {
		uroce_ring_cons_release(&q->rq, i);
		q->rq_taken += i;
		retiring_add(q->client->rnic, q, NULL);
	}
	/* What stays in the ring (the transport's queue is full, or a malformed WQE waits
	 * for a scan outside the transport) is looked at again next turn. */
	if (i < n)
		uroce_summary_set(&q->client->doorbells, q->doorbell_slot);
	return i;
}

static unsigned int qp_doorbell(struct rnic_qp *q)
{
	/* One clock read (an indirect call to the host) per scan, not per WQE. */
	const uint64_t now = rnic_now(q->client->rnic);
	unsigned int done = 0;
	uint32_t n, i;
	int rc;

	n = uroce_ring_cons_avail(&q->sq);
	for (i = 0; i < n; i++) {
		struct uroce_tp_send_wqe *t = uroce_tp_post_send_reserve(q->tp);
		bool read_ok;

		if (t == NULL)
			break; /* the transport's queue is full: the rest waits in the ring */
		read_ok = to_tp_send(q, t, uroce_ring_cons_slot(&q->sq, i)) == 0;
		rc = read_ok ? uroce_tp_post_send_commit(q->tp, now) : -EINVAL;
		if (rc) {
			qp_bad_wqe(q);
			if (!read_ok) { /* what bounds a copy may be what was wrong */
				t->num_sge = 0;
				t->inline_len = 0;
				t->send_flags &= ~(unsigned int)IBV_SEND_INLINE;
			}
			t->opcode = IBV_WR_SEND;
			t->ah = NULL;
			uroce_tp_post_send_commit(q->tp, now); /* completes flushed */
		}
	}
	if (i) {
		uroce_ring_cons_release(&q->sq, i);
		q->sq_taken += i;
		done += i;
		retiring_add(q->client->rnic, q, NULL);
	}
	if (i < n) /* the transport's send queue is full: again next turn */
		uroce_summary_set(&q->client->doorbells, q->doorbell_slot);
	if (!q->srq)
		done += rq_doorbell(q, false);
	return done;
}

static unsigned int srq_doorbell(struct rnic_srq *s)
{
	uint32_t n = uroce_ring_cons_avail(&s->ring), i;

	for (i = 0; i < n; i++) {
		struct uroce_tp_recv_wqe *t = uroce_tp_post_srq_recv_reserve(s->tp);

		if (t == NULL)
			break; /* full */
		to_tp_recv(t, uroce_ring_cons_slot(&s->ring, i));
		if (uroce_tp_post_srq_recv_commit(s->tp) != 0)
			break; /* a malformed WQE: it stays until the SRQ goes */
	}
	if (i) {
		uroce_ring_cons_release(&s->ring, i);
		s->taken += i;
		retiring_add(s->client->rnic, NULL, s);
	}
	if (i < n) /* full, or a malformed WQE: again next turn */
		uroce_summary_set(&s->client->doorbells, s->doorbell_slot);
	return i;
}

void rnic_rq_refill(void *io_ctx, struct uroce_tp_qp *tq, struct uroce_tp_srq *tsrq)
{
	struct rnic_qp *q = uroce_tp_qp_user(tq);
	struct rnic_srq *srq = tsrq ? uroce_tp_srq_user(tsrq) : NULL;

	(void)io_ctx;
	/* The SRQ the transport takes from: the QP's own, or an XRC target's per request. */
	if (srq)
		srq_doorbell(srq);
	else if (q)
		rq_doorbell(q, true);
}

/* One announced slot of a client's summary: that queue's rings. */
static void slot_doorbell(struct uroce_rnic_client *c, uint32_t slot)
{
	struct rnic_queue_ref *r;

	if (slot >= c->nslots) /* a bit the client set for no queue of ours */
		return;
	r = &c->slots[slot];
	if (r->qp)
		c->rnic->doorbell_work += qp_doorbell(r->qp);
	else if (r->srq)
		c->rnic->doorbell_work += srq_doorbell(r->srq);
}

/* Slots taken from a summary at a time (on the stack). */
#define RNIC_SLOT_BATCH 256

/* The queues whose slots @p c announced after a post: an idle QP costs nothing here,
 * however many there are (lib/shm, uroce_summary). The caller publishes retirements.
 * A full batch may have left slots announced: another take, up to the summary's size
 * in all (a queue that announced itself again, its transport queue full, may then be
 * looked at twice in a turn, which costs a look and nothing else). */
static void client_doorbells(struct uroce_rnic_client *c)
{
	uint32_t slots[RNIC_SLOT_BATCH], n, i, left = c->doorbells.slots;

	do {
		n = uroce_summary_take(&c->doorbells, slots, RNIC_SLOT_BATCH);
		for (i = 0; i < n; i++)
			slot_doorbell(c, slots[i]);
		left -= left < n ? left : n;
	} while (n == RNIC_SLOT_BATCH && left);
}

unsigned int uroce_rnic_doorbells(struct uroce_rnic *nic)
{
	struct uroce_rnic_client *c;

	nic->doorbell_work = 0;
	for (c = nic->clients; c; c = c->next)
		client_doorbells(c);
	retiring_publish(nic);
	return nic->doorbell_work;
}

void rnic_client_catch_up(struct uroce_rnic_client *c)
{
	struct uroce_rnic *nic = c->rnic;

	client_doorbells(c);
	retiring_publish(nic);
	uroce_tp_process(nic->dev, rnic_now(nic));
	rnic_completions(nic);
}

/* After completions were committed to one of @p c's CQ rings: wakes its threads blocked
 * in poll_cq, if any (a system call only then). */
static void cq_wake_waiters(struct uroce_rnic_client *c)
{
	struct uroce_rnic *nic = c->rnic;
	int rc;

	if (!uroce_waiters_notify(c->waiters))
		return;
	rc = uroce_waiters_wake(c->waiters);
	if (rc)
		RNIC_WARN(nic, "CQ waiter wake-up failed: %s", strerror(-rc));
	else
		nic->cnt.cq_waiter_wakes++;
}

/* Moves a CQ's completions into its shared ring, as many as it has room for. */
static void cq_drain(struct rnic_cq *q, unsigned int *moved)
{
	struct uroce_rnic *nic = q->client->rnic;
	bool solicited = false, any = false;

	for (;;) {
		uint32_t space = uroce_ring_prod_space(&q->ring);
		uint32_t first = q->ring.mine & q->ring.mask;
		uint32_t run = q->ring.mask + 1 - first; /* contiguous slots before the wrap */
		struct ibv_wc *wc;
		int n, i;

		if (space == 0)
			break;
		if (run > space)
			run = space;
		wc = uroce_ring_prod_slot(&q->ring, 0);
		n = uroce_tp_poll_cq(q->tp, (int)run, wc);
		if (n == 0) {
			if (any)
				cq_wake_waiters(q->client);
			if (any && uroce_ring_take_arm(&q->ring, solicited)) {
				/* Count first, then wake: see the file comment. */
				atomic_fetch_add_explicit(&q->ctl->events, 1, memory_order_release);
				if (q->channel)
					rnic_event_pipe_post(nic, &q->channel->pipe);
			}
			return;
		}
		for (i = 0; i < n; i++) {
			struct uroce_tp_qp *tq = uroce_tp_qp_lookup(nic->dev, wc[i].qp_num);

			/* ibv_req_notify_cq(solicited_only): solicited receives and every error
			 * completion wake the waiter (IBA 11.4.2.2). */
			if ((wc[i].wc_flags & UROCE_TP_WC_SOLICITED) ||
			    wc[i].status != IBV_WC_SUCCESS)
				solicited = true;
			wc[i].wc_flags &= ~(unsigned int)UROCE_TP_WC_SOLICITED;
			if (tq && uroce_tp_qp_user(tq))
				rnic_qp_publish_retired(uroce_tp_qp_user(tq));
		}
		/* The retired counts above are released before the completions are. */
		uroce_ring_prod_commit(&q->ring, (uint32_t)n);
		*moved += (unsigned int)n;
		any = true;
	}
	if (any)
		cq_wake_waiters(q->client);
	/* The shared ring is full: the rest stays in the transport's CQ (which overruns, as
	 * verbs says, if the application never polls). */
	if (uroce_tp_cq_overflowed(q->tp) && !q->overrun_reported) {
		q->overrun_reported = true;
		atomic_store_explicit(&q->ctl->overrun, 1, memory_order_relaxed);
		nic->cnt.cq_overruns++;
	}
}

/*
 * The completions made since the last call, into their shared CQ rings: the turn's, at
 * its end (uroce_rnic_process), not one frame's at a time. The transport keeps the CQs
 * that hold some on a list (uroce_tp_cq_ready_first), asked for here, not told up to us,
 * and they are moved together, so a burst of ACKs that
 * completes 32 WQEs of a CQ costs one commit of its producer index (the line its
 * application polls), one look at its waiters and at most one event write, not 32;
 * none waits for a later turn. Moving them after each frame instead was measured (B3):
 * no difference the runs' spread could show, so the batch stays.
 */
unsigned int rnic_completions(struct uroce_rnic *nic)
{
	struct uroce_tp_cq *cq, *next;
	unsigned int moved = 0;

	/* A CQ whose shared ring is full keeps the rest and stays on the list: next turn. */
	for (cq = uroce_tp_cq_ready_first(nic->dev); cq; cq = next) {
		struct rnic_cq *q = uroce_tp_cq_user(cq);

		next = uroce_tp_cq_ready_next(cq); /* before cq_drain takes cq off the list */
		if (q)
			cq_drain(q, &moved);
	}
	return moved;
}

static_assert(RNIC_EVENT_PIPE_BYTES >= UROCE_CTRL_ASYNC_RING_SIZE,
	      "an async event's byte always fits while its ring has room");

static void async_post(struct uroce_rnic_client *c, enum ibv_event_type type, uint32_t handle)
{
	struct uroce_rnic *nic = c->rnic;
	struct uroce_ctrl_async_event e = {.event_type = type, .handle = handle, .port = 1};

	nic->cnt.async_events++;
	if (!c->region.addr || uroce_ring_prod_space(&c->async_ring) == 0) {
		nic->cnt.async_lost++;
		return;
	}
	memcpy(uroce_ring_prod_slot(&c->async_ring, 0), &e, sizeof(e));
	uroce_ring_prod_commit(&c->async_ring, 1);
	/* Never full: the pipe holds more bytes than the ring events, unless the client
	 * takes events without their bytes (then only its own wake-ups go). */
	rnic_event_pipe_post(nic, &c->async_pipe);
}

void rnic_tp_event(void *io_ctx, enum ibv_event_type type, void *object)
{
	struct uroce_rnic *nic = io_ctx;

	switch (type) {
	case IBV_EVENT_CQ_ERR: {
		struct rnic_cq *q = uroce_tp_cq_user(object);

		if (q)
			async_post(q->client, type, q->handle);
		break;
	}
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED: {
		struct rnic_srq *s = uroce_tp_srq_user(object);

		if (s)
			async_post(s->client, type, s->handle);
		break;
	}
	case IBV_EVENT_DEVICE_FATAL:
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR: {
		struct uroce_rnic_client *c;

		for (c = nic->clients; c; c = c->next)
			async_post(c, type, 0);
		break;
	}
	default: {
		struct rnic_qp *q = object ? uroce_tp_qp_user(object) : NULL;

		if (q)
			async_post(q->client, type, q->handle);
		break;
	}
	}
}

bool rnic_doorbells_moved(struct uroce_rnic *nic)
{
	struct uroce_rnic_client *c;

	/* A post sets its slot before it looks for our sleep announcement. */
	for (c = nic->clients; c; c = c->next)
		if (c->doorbells.slots && uroce_summary_pending(&c->doorbells))
			return true;
	return false;
}
