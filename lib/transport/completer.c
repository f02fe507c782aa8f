/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completer (IBA 9.7.5.2, 9.7.6; Linux rxe_comp.c): the requester's half that takes
 * responses. ACKs complete SEND and WRITE messages (cumulatively), READ responses are
 * scattered, atomic ACKs deliver the original value and a zero-length READ Response Only
 * completes an Atomic Write, NAKs and the retransmission and RNR timers send the
 * requester back (go-back-N), and errors complete the WQE in error and move the QP to
 * ERR. Written as the named states of rxe's completer, one function each, so the spec's
 * flow can be followed:
 *
 *   GET_WQE -> CHECK_PSN -> CHECK_ACK -> { READ | ATOMIC | ATOMIC_WRITE | WRITE_SEND }
 *                                                                          -> COMP_WQE
 *                   \-> implied NAK / ghost       \-> NAK: RETRY | RNR | ERROR
 */
#include <assert.h>
#include <string.h>

#include "tp_internal.h"

enum comp_state {
	COMPST_GET_WQE,
	COMPST_CHECK_PSN,
	COMPST_CHECK_ACK,
	COMPST_READ,
	COMPST_ATOMIC,
	COMPST_ATOMIC_WRITE,
	COMPST_WRITE_SEND,
	COMPST_COMP_WQE,
	COMPST_DONE,        /* packet used up */
	COMPST_RETRY,       /* go back to comp.psn (implied NAK, sequence error NAK) */
	COMPST_RNR,         /* RNR NAK: wait, then go back */
	COMPST_ERROR,       /* complete the WQE in error, QP to ERR */
};

/* The debug log's names of the states (rxe_comp.c: comp_state_name[]). */
static const char *const comp_state_name[] = {
	[COMPST_GET_WQE]      = "GET_WQE",
	[COMPST_CHECK_PSN]    = "CHECK_PSN",
	[COMPST_CHECK_ACK]    = "CHECK_ACK",
	[COMPST_READ]         = "READ",
	[COMPST_ATOMIC]       = "ATOMIC",
	[COMPST_ATOMIC_WRITE] = "ATOMIC_WRITE",
	[COMPST_WRITE_SEND]   = "WRITE_SEND",
	[COMPST_COMP_WQE]     = "COMP_WQE",
	[COMPST_DONE]         = "DONE",
	[COMPST_RETRY]        = "RETRY",
	[COMPST_RNR]          = "RNR",
	[COMPST_ERROR]        = "ERROR",
};
static_assert(sizeof(comp_state_name) / sizeof(comp_state_name[0]) == COMPST_ERROR + 1,
	      "comp_state_name[] names every state of enum comp_state");

struct comp_ctx {
	struct uroce_tp_qp *qp;
	const struct uroce_wire_pkt *pkt;
	const struct uroce_opcode_info *oi;
	struct tp_send_slot *wqe;
	uint32_t wqe_i;
	enum ibv_wc_status status; /* for COMPST_ERROR */
	bool progress;
};

/* The oldest WQE that has packets in flight. */
static enum comp_state get_wqe(struct comp_ctx *c)
{
	struct uroce_tp_qp *qp = c->qp;

	for (uint32_t i = qp->sq_cons; i != qp->sq_prod; i++) {
		struct tp_send_slot *s = tp_sq_slot(qp, i);

		/* Completed, or a local WQE carried out while earlier ones wait for their
		 * responses (it is retired after them, in order). */
		if (s->state == TP_WQE_DONE)
			continue;
		if (!s->started)
			break;
		c->wqe = s;
		c->wqe_i = i;
		return COMPST_CHECK_PSN;
	}
	c->wqe = NULL;
	return COMPST_CHECK_PSN;
}

static enum comp_state check_psn(struct comp_ctx *c)
{
	struct uroce_tp_qp *qp = c->qp;
	uint32_t psn = c->pkt->hdr.bth.psn;
	int32_t diff;

	if (c->wqe == NULL) {
		qp->dev->cnt.rcvd_ghost_ack++;
		return COMPST_DONE; /* nothing outstanding: a late duplicate */
	}
	/* Only what was sent can be answered: a response at or after the next PSN to send
	 * is a ghost (a broken or hostile peer, or after a go-back a response to what is
	 * being sent again that tp_comp_rx could not skip). Without this, an ACK past a
	 * WQE that had started but not gone out (tx pushed back, or the rest of a message
	 * still to send) completed it with IBV_WC_SUCCESS. rxe too ignores responses to a
	 * WQE not fully sent (rxe_comp.c: get_wqe, check_psn). */
	if (uroce_psn_diff(psn, qp->req.psn) >= 0) {
		qp->dev->cnt.rcvd_ghost_ack++;
		return COMPST_DONE;
	}
	diff = uroce_psn_diff(psn, c->wqe->last_psn);
	if (diff > 0) {
		/* The response is for a later message, so this one is complete, except a READ,
		 * atomic or Atomic Write: its own response went missing (implied NAK, IBA
		 * 9.7.5.1.2). Stricter than rxe, whose WR_ATOMIC_OR_READ_MASK leaves Atomic
		 * Write out and so completes one on a later ACK, its value maybe never stored. */
		if (c->wqe->opf & TP_OPF_RD_ATOMIC)
			return COMPST_RETRY;
		return COMPST_COMP_WQE;
	}
	diff = uroce_psn_diff(psn, qp->comp.psn);
	if (diff < 0) {
		/* Before anything outstanding. A duplicate, except an ACK or NAK answering a
		 * request whose ACK was coalesced: IBA allows it, nothing to do. */
		qp->dev->cnt.rcvd_ghost_ack++;
		return COMPST_DONE;
	}
	if (diff > 0 && (c->wqe->opf & UROCE_OPF_READ) && (c->oi->flags & UROCE_OPF_READ)) {
		/* A READ response beyond the next one: some went missing. Go back once; the
		 * rest of the old stream is dropped until the retried one arrives. */
		if (qp->comp.rewound)
			return COMPST_DONE;
		return COMPST_RETRY;
	}
	return COMPST_CHECK_ACK;
}

static enum comp_state check_ack(struct comp_ctx *c)
{
	const struct uroce_wire_pkt *p = c->pkt;
	const struct tp_send_slot *w = c->wqe;
	uint8_t syn = p->hdr.aeth.syndrome;

	if (c->oi->flags & UROCE_OPF_READ) {
		/* IBA 1.5: an Atomic Write is answered by a READ Response Only without data. */
		if (w->opf & UROCE_OPF_ATOMIC_WRITE)
			return COMPST_ATOMIC_WRITE;
		if (!(w->opf & UROCE_OPF_READ))
			return COMPST_DONE; /* a READ response to no READ: drop it */
		return COMPST_READ;
	}
	if (c->oi->flags & UROCE_OPF_ATOMIC) {
		if (!(w->opf & UROCE_OPF_ATOMIC))
			return COMPST_DONE;
		return COMPST_ATOMIC;
	}
	/* ACKNOWLEDGE */
	switch (uroce_aeth_type(syn)) {
	case UROCE_AETH_ACK:
		if (w->opf & TP_OPF_RD_ATOMIC) {
			/* An ACK at a READ's, atomic's or Atomic Write's own PSN answers
			 * nothing: ignore it. */
			return COMPST_DONE;
		}
		return COMPST_WRITE_SEND;
	case UROCE_AETH_RNR_NAK:
		return COMPST_RNR;
	case UROCE_AETH_NAK:
		switch (uroce_aeth_value(syn)) {
		case UROCE_NAK_PSN_SEQ_ERR:
			c->qp->dev->cnt.rcvd_seq_err++;
			/* Everything before the NAK's PSN arrived (IBA 9.7.5.2.5). */
			return COMPST_RETRY;
		case UROCE_NAK_INVALID_REQ:
			c->status = IBV_WC_REM_INV_REQ_ERR;
			return COMPST_ERROR;
		case UROCE_NAK_REM_ACCESS_ERR:
			c->status = IBV_WC_REM_ACCESS_ERR;
			return COMPST_ERROR;
		case UROCE_NAK_REM_OP_ERR:
			c->status = IBV_WC_REM_OP_ERR;
			return COMPST_ERROR;
		default:
			c->status = IBV_WC_REM_INV_RD_REQ_ERR;
			return COMPST_ERROR;
		}
	default:
		return COMPST_DONE; /* reserved syndrome: drop */
	}
}

static enum comp_state do_read(struct comp_ctx *c)
{
	struct uroce_tp_qp *qp = c->qp;
	struct tp_send_slot *w = c->wqe;
	const struct uroce_wire_pkt *p = c->pkt;
	uint32_t offset = (uint32_t)uroce_psn_diff(p->hdr.bth.psn, w->first_psn) * qp->mtu;
	uint32_t want = w->length - offset < qp->mtu ? w->length - offset : qp->mtu;
	bool last = p->hdr.bth.psn == w->last_psn;
	const struct uroce_opcode_info *oi = c->oi;

	/* Every response but the last carries a full MTU; the last the rest (IBA 9.7.4.1.4). */
	if (p->payload_len != want || last != !!(oi->flags & UROCE_OPF_LAST)) {
		qp->dev->cnt.rcvd_wrong_opcode++;
		return COMPST_DONE;
	}
	if (tp_sge_copy(qp->pd, w->wqe.sg_list, w->wqe.num_sge, offset, (void *)p->payload,
			p->payload_len, true)) {
		c->status = IBV_WC_LOC_PROT_ERR;
		return COMPST_ERROR;
	}
	qp->comp.psn = uroce_psn_add(p->hdr.bth.psn, 1);
	c->progress = true;
	return last ? COMPST_COMP_WQE : COMPST_DONE;
}

static enum comp_state do_atomic(struct comp_ctx *c)
{
	struct uroce_tp_qp *qp = c->qp;
	struct tp_send_slot *w = c->wqe;
	uint64_t orig = c->pkt->hdr.atomic_orig;

	/* The original value lands in the local buffer in host order, as a CPU atomic
	 * would have returned it. */
	if (tp_sge_copy(qp->pd, w->wqe.sg_list, w->wqe.num_sge, 0, &orig, 8, true)) {
		c->status = IBV_WC_LOC_PROT_ERR;
		return COMPST_ERROR;
	}
	return COMPST_COMP_WQE;
}

/* The response that completes an Atomic Write (rxe's send_read_response_ack): a READ
 * Response Only, AETH ACK, no payload, at the request's PSN (check_psn put it within the
 * WQE, which takes one PSN). The value was stored when the request executed; nothing
 * comes back to scatter. Anything else is no answer to it: dropped, as do_read drops a
 * response of the wrong length, and the timer or a later response asks again. */
static enum comp_state do_atomic_write(struct comp_ctx *c)
{
	const struct uroce_wire_pkt *p = c->pkt;

	if (UROCE_OPCODE_OP(p->hdr.bth.opcode) != UROCE_OP_READ_RESPONSE_ONLY ||
	    p->payload_len != 0 || p->hdr.bth.psn != c->wqe->first_psn ||
	    uroce_aeth_type(p->hdr.aeth.syndrome) != UROCE_AETH_ACK) {
		c->qp->dev->cnt.rcvd_wrong_opcode++;
		return COMPST_DONE;
	}
	return COMPST_COMP_WQE;
}

static enum comp_state write_send(struct comp_ctx *c)
{
	struct uroce_tp_qp *qp = c->qp;
	uint32_t psn = c->pkt->hdr.bth.psn;

	if (uroce_psn_diff(psn, c->wqe->last_psn) == 0)
		return COMPST_COMP_WQE;
	/* An ACK within a multi-packet message (coalesced ACKs every N packets). */
	qp->comp.psn = uroce_psn_add(psn, 1);
	c->progress = true;
	return COMPST_DONE;
}

static enum comp_state comp_wqe(struct comp_ctx *c)
{
	struct uroce_tp_qp *qp = c->qp;
	struct tp_send_slot *w = c->wqe;

	w->state = TP_WQE_DONE;
	if (w->opf & TP_OPF_RD_ATOMIC)
		qp->req.rd_atomic--;
	if (uroce_psn_diff(qp->comp.psn, w->last_psn) <= 0)
		qp->comp.psn = uroce_psn_add(w->last_psn, 1);
	c->progress = true;
	tp_comp_retire(qp);
	/* An ACK for a later PSN completes more than one WQE: look at the next. */
	if (uroce_psn_diff(c->pkt->hdr.bth.psn, w->last_psn) > 0)
		return COMPST_GET_WQE;
	return COMPST_DONE;
}

static void complete_before(struct uroce_tp_qp *qp, uint32_t psn)
{
	/* Responses are in PSN order, so a NAK at @psn acknowledges every SEND and WRITE
	 * that ends before it (a READ, atomic or Atomic Write waits for its own response). */
	for (uint32_t i = qp->sq_cons; i != qp->req.idx; i++) {
		struct tp_send_slot *s = tp_sq_slot(qp, i);

		if (s->state == TP_WQE_DONE)
			continue;
		if (!s->started || uroce_psn_diff(s->last_psn, psn) >= 0 ||
		    (s->opf & TP_OPF_RD_ATOMIC))
			break;
		s->state = TP_WQE_DONE;
		qp->comp.psn = uroce_psn_add(s->last_psn, 1);
	}
	tp_comp_retire(qp);
}

static enum ibv_wc_opcode wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	default:
		return IBV_WC_SEND;
	}
}

void tp_comp_retire(struct uroce_tp_qp *qp)
{
	while (qp->sq_cons != qp->sq_prod) {
		struct tp_send_slot *s = tp_sq_slot(qp, qp->sq_cons);
		struct ibv_wc wc;

		if (s->state != TP_WQE_DONE)
			break;
		/* Unsignaled WRs complete silently, unless they fail (IBA 10.7.2.2). */
		if (s->status != IBV_WC_SUCCESS || qp->sq_sig_all ||
		    (s->wqe.send_flags & IBV_SEND_SIGNALED)) {
			memset(&wc, 0, sizeof(wc));
			wc.wr_id = s->wqe.wr_id;
			wc.status = s->status;
			wc.opcode = wc_opcode(s->wqe.opcode);
			wc.qp_num = qp->qpn;
			if (s->status == IBV_WC_SUCCESS)
				wc.byte_len = s->length;
			if (!tp_cq_push(qp->send_cq, &wc) && qp->state != IBV_QPS_ERR) {
				/* A lost completion: the QP cannot go on (IBA 11.4.2.1). */
				qp->sq_cons++;
				tp_qp_to_error(qp);
				return;
			}
		}
		qp->sq_cons++;
	}
	/* Drained: nothing in progress, even if WRs that never started wait (tp_sq_drained). */
	if (qp->state == IBV_QPS_SQD && tp_sq_drained(qp) && qp->attr.en_sqd_async_notify)
		tp_event(qp->dev, IBV_EVENT_SQ_DRAINED, qp);
}

/* Retries left? Otherwise the oldest WQE fails with @status. */
static bool use_retry(struct uroce_tp_qp *qp, bool rnr)
{
	uint8_t *left = rnr ? &qp->comp.rnr_retry : &qp->comp.retry_cnt;

	if (rnr && *left == 7)
		return true; /* IBA 9.7.5.2.8: 7 means retry without end */
	if (*left == 0)
		return false;
	(*left)--;
	return true;
}

static void fail_oldest(struct uroce_tp_qp *qp, enum ibv_wc_status status)
{
	for (uint32_t i = qp->sq_cons; i != qp->sq_prod; i++) {
		struct tp_send_slot *s = tp_sq_slot(qp, i);

		if (s->state != TP_WQE_DONE) {
			s->state = TP_WQE_DONE;
			s->status = status;
			break;
		}
	}
	tp_comp_retire(qp);
	tp_qp_to_error(qp);
}

void tp_comp_arm(struct uroce_tp_qp *qp, uint64_t now_ns)
{
	bool outstanding = uroce_psn_diff(qp->req.psn, qp->comp.psn) > 0;

	tp_set_deadline(qp, (outstanding && qp->comp.timeout_ns) ? now_ns + qp->comp.timeout_ns
								 : UINT64_MAX);
}

/* Go-back-N from the oldest unacknowledged PSN, spending a transport retry (timeout or
 * sequence error, IBA 9.7.6.1.3); with none left the oldest WQE fails with
 * RETRY_EXC_ERR and the QP goes to ERR. Returns false then. */
static bool go_back(struct uroce_tp_qp *qp, uint64_t now_ns)
{
	if (!use_retry(qp, false)) {
		qp->dev->cnt.retry_exceeded_err++;
		fail_oldest(qp, IBV_WC_RETRY_EXC_ERR);
		return false;
	}
	qp->dev->cnt.completer_retry_err++;
	tp_req_rewind(qp, qp->comp.psn);
	tp_comp_arm(qp, now_ns);
	return true;
}

void tp_comp_rx(struct uroce_tp_qp *qp, const struct uroce_wire_pkt *pkt, uint64_t now_ns)
{
	struct comp_ctx c = {.qp = qp, .pkt = pkt};
	enum comp_state st = COMPST_GET_WQE;
	uint32_t psn = pkt->hdr.bth.psn;
	/* Read once: a step costs a test of a register when the log is off. */
	const bool debug = qp->dev->cfg.debug_log != NULL;

	if (!tp_qp_reliable(qp) ||
	    (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD && qp->state != IBV_QPS_SQE)) {
		qp->dev->cnt.rcvd_in_wrong_state++;
		return;
	}
	c.oi = uroce_opcode_info(pkt->hdr.bth.opcode);
	/* A cumulative ACK (every PSN up to its own arrived) for PSNs sent before a
	 * go-back and not yet again: the responder took them, only their ACKs were late or
	 * lost. The requester skips them rather than sending them a third time, and the
	 * completer takes the ACK below instead of ignoring it as a ghost. */
	if (UROCE_OPCODE_OP(pkt->hdr.bth.opcode) == UROCE_OP_ACKNOWLEDGE &&
	    uroce_aeth_type(pkt->hdr.aeth.syndrome) == UROCE_AETH_ACK)
		tp_req_skip_acked(qp, psn);

	for (;;) {
		enum comp_state from = st;

		switch (st) {
		case COMPST_GET_WQE:
			st = get_wqe(&c);
			break;
		case COMPST_CHECK_PSN:
			st = check_psn(&c);
			break;
		case COMPST_CHECK_ACK:
			st = check_ack(&c);
			break;
		case COMPST_READ:
			st = do_read(&c);
			break;
		case COMPST_ATOMIC:
			st = do_atomic(&c);
			break;
		case COMPST_ATOMIC_WRITE:
			st = do_atomic_write(&c);
			break;
		case COMPST_WRITE_SEND:
			st = write_send(&c);
			break;
		case COMPST_COMP_WQE:
			st = comp_wqe(&c);
			break;
		case COMPST_RETRY: {
			/* Implied NAK or sequence-error NAK: resend from the oldest PSN not
			 * acknowledged (a NAK acknowledges what is before its PSN). */
			bool nak = UROCE_OPCODE_OP(pkt->hdr.bth.opcode) == UROCE_OP_ACKNOWLEDGE &&
				   uroce_aeth_type(pkt->hdr.aeth.syndrome) == UROCE_AETH_NAK;
			uint32_t before = qp->comp.psn;

			if (nak) {
				complete_before(qp, psn);
				if (qp->comp.psn != before) { /* it acknowledged something */
					qp->comp.retry_cnt = qp->attr.retry_cnt;
					qp->comp.rewound = false;
				}
			}
			/* Once gone back, only what acknowledges something (which ended the
			 * episode just above) may send us back again: one retry per loss, as
			 * rxe's started_retry. The rest of the old stream, the NAKs it caused
			 * past a READ still waiting for its responses (they acknowledge
			 * nothing: a READ completes only by its own responses), and
			 * duplicates of either would otherwise each spend a retry of the same
			 * episode, and a lossy link could exhaust retry_cnt without one more
			 * loss. The timer covers a retry that is lost too. */
			if (qp->comp.rewound)
				return;
			if (go_back(qp, now_ns))
				tp_req_run(qp, now_ns);
			return;
		}
		case COMPST_RNR:
			complete_before(qp, psn);
			qp->dev->cnt.rcvd_rnr_err++;
			/* The responder answered: the path is alive, which is what the transport
			 * retry counter watches (rnr_retry bounds the RNR waits themselves). */
			if (psn == qp->comp.psn)
				qp->comp.retry_cnt = qp->attr.retry_cnt;
			if (!use_retry(qp, true)) {
				qp->dev->cnt.retry_rnr_exceeded_err++;
				fail_oldest(qp, IBV_WC_RNR_RETRY_EXC_ERR);
				return;
			}
			qp->comp.rnr_psn = qp->comp.psn;
			tp_set_rnr_deadline(qp, now_ns + uroce_rnr_timer_ns(uroce_aeth_value(
								 pkt->hdr.aeth.syndrome)));
			tp_set_deadline(qp, UINT64_MAX);
			return;
		case COMPST_ERROR:
			complete_before(qp, psn);
			fail_oldest(qp, c.status);
			return;
		case COMPST_DONE:
			if (c.progress) {
				/* Forward progress resets the retry budget (IBA 9.7.6.1.3) and the
				 * timer, and ends a go-back episode. */
				qp->comp.retry_cnt = qp->attr.retry_cnt;
				qp->comp.rnr_retry = qp->attr.rnr_retry;
				qp->comp.rewound = false;
				tp_comp_arm(qp, now_ns);
				tp_req_run(qp, now_ns);
			}
			return;
		}
		if (debug)
			tp_debug(qp->dev, "qp 0x%06x psn %u comp: %s -> %s", qp->qpn, psn,
				 comp_state_name[from], comp_state_name[st]);
	}
}

void tp_comp_timers(struct uroce_tp_qp *qp, uint64_t now_ns)
{
	if (!tp_qp_reliable(qp) || qp->state == IBV_QPS_ERR)
		return;
	if (qp->comp.rnr_deadline <= now_ns) {
		tp_set_rnr_deadline(qp, UINT64_MAX);
		tp_req_rewind(qp, qp->comp.rnr_psn);
		tp_comp_arm(qp, now_ns);
	}
	if (qp->comp.deadline <= now_ns) {
		if (uroce_psn_diff(qp->req.psn, qp->comp.psn) <= 0) {
			tp_set_deadline(qp, UINT64_MAX);
			return;
		}
		go_back(qp, now_ns);
	}
}
