/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requester (IBA 9.7.1-9.7.4; Linux rxe_req.c): turns send WQEs into packets. Segments
 * SEND and RDMA WRITE messages to the path MTU, assigns PSNs, sets AckReq, sends one
 * READ request per message and one packet per atomic and per Atomic Write, and keeps
 * within the send window, max_rd_atomic and fences. Go-back-N retransmission restarts it
 * from a PSN. Local work requests (BIND_MW, LOCAL_INV) it carries out itself, in their
 * turn, without a packet.
 */
#include <string.h>

#include "tp_internal.h"

struct gather {
	struct uroce_tp_qp *qp;
	const struct tp_send_slot *s;
	uint32_t offset;
};

static int gather_payload(void *arg, uint8_t *dst, uint32_t len)
{
	const struct gather *g = arg;
	const struct uroce_tp_send_wqe *w = &g->s->wqe;

	if (w->send_flags & IBV_SEND_INLINE) {
		memcpy(dst, w->inline_data + g->offset, len);
		return 0;
	}
	return tp_sge_copy(g->qp->pd, w->sg_list, w->num_sge, g->offset, dst, len, false);
}

/* PSNs a message takes: its packets, or for a READ its response packets (IBA 9.7.4.1.3:
 * a READ request takes as many PSNs as responses it asks for, at least one). */
static uint32_t msg_psns(uint32_t len, uint32_t mtu)
{
	return len == 0 ? 1 : (len + mtu - 1) / mtu;
}

/* Local checks when a WQE starts (IBA 10.7.2.3 local protection; a UD message longer than
 * the port MTU is a local length error, where rxe reads C10-93.1.1 as "send nothing, no
 * error" and completes it successfully). */
static enum ibv_wc_status check_local(struct uroce_tp_qp *qp, const struct tp_send_slot *s)
{
	const struct uroce_tp_send_wqe *w = &s->wqe;
	/* What the responses land in; an Atomic Write's SGEs only give its 8 bytes. */
	unsigned int access =
		(s->opf & (UROCE_OPF_READ | UROCE_OPF_ATOMIC)) ? IBV_ACCESS_LOCAL_WRITE : 0;

	if (qp->type == IBV_QPT_UD && s->length > qp->mtu)
		return IBV_WC_LOC_LEN_ERR;
	if (qp->type == IBV_QPT_RAW_PACKET && s->length > tp_raw_frame_max(qp->dev))
		return IBV_WC_LOC_LEN_ERR;
	if (w->send_flags & IBV_SEND_INLINE)
		return IBV_WC_SUCCESS;
	for (uint32_t i = 0; i < w->num_sge; i++)
		if (w->sg_list[i].length > 0 &&
		    tp_mr_check(qp->pd, w->sg_list[i].lkey, w->sg_list[i].addr,
				w->sg_list[i].length, access) == NULL)
			return IBV_WC_LOC_PROT_ERR;
	return IBV_WC_SUCCESS;
}

/* The opcode of the packet at @offset of a @len-byte message (IBA table 37). */
static uint8_t pkt_opcode(const struct uroce_tp_qp *qp, const struct tp_send_slot *s,
			  uint32_t offset, uint32_t seg)
{
	enum uroce_transport tr = tp_qp_transport(qp);
	bool first = offset == 0, last = offset + seg >= s->length;
	enum uroce_op op;

	switch (s->wqe.opcode) {
	case IBV_WR_RDMA_READ:
		op = UROCE_OP_READ_REQUEST;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		op = UROCE_OP_COMPARE_SWAP;
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		op = UROCE_OP_FETCH_ADD;
		break;
	case IBV_WR_ATOMIC_WRITE:
		op = UROCE_OP_ATOMIC_WRITE;
		break;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM: {
		bool imm = s->wqe.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;

		if (first && last)
			op = imm ? UROCE_OP_WRITE_ONLY_IMM : UROCE_OP_WRITE_ONLY;
		else if (first)
			op = UROCE_OP_WRITE_FIRST;
		else if (last)
			op = imm ? UROCE_OP_WRITE_LAST_IMM : UROCE_OP_WRITE_LAST;
		else
			op = UROCE_OP_WRITE_MIDDLE;
		break;
	}
	default: {
		bool imm = s->wqe.opcode == IBV_WR_SEND_WITH_IMM;
		bool inv = s->wqe.opcode == IBV_WR_SEND_WITH_INV;

		if (first && last)
			op = imm ? UROCE_OP_SEND_ONLY_IMM :
			     inv ? UROCE_OP_SEND_ONLY_INV :
				   UROCE_OP_SEND_ONLY;
		else if (first)
			op = UROCE_OP_SEND_FIRST;
		else if (last)
			op = imm ? UROCE_OP_SEND_LAST_IMM :
			     inv ? UROCE_OP_SEND_LAST_INV :
				   UROCE_OP_SEND_LAST;
		else
			op = UROCE_OP_SEND_MIDDLE;
		break;
	}
	}
	return UROCE_OPCODE(tr, op);
}

/* Sends the next packet of WQE @s. Returns 0, -EAGAIN (tx busy), or -EFAULT (gather
 * failed: an MR went away under a message in flight). */
static int send_next(struct uroce_tp_qp *qp, struct tp_send_slot *s, uint64_t now_ns)
{
	struct uroce_tp_dev *dev = qp->dev;
	const struct uroce_tp_send_wqe *w = &s->wqe;
	struct uroce_wire_hdr h;
	struct gather g = {qp, s, qp->req.offset};
	uint32_t remaining = s->length - qp->req.offset, seg, npsn;
	const struct uroce_opcode_info *oi;
	bool last;
	int rc;

	if (qp->type == IBV_QPT_RAW_PACKET)
		return tp_raw_send(qp, s); /* a whole frame: no header, PSN or ACK */
	if (qp->type == IBV_QPT_UD) {
		h = qp->sq_av[s - qp->sq];
		h.bth.dqpn = w->remote_qpn;
		h.udp_sport = uroce_udp_sport_qpn(qp->qpn);
		/* IBA 10.2.5: a Q_Key with the high bit set in the WR means "the QP's own". */
		h.deth.qkey = (w->remote_qkey & 0x80000000u) ? qp->attr.qkey : w->remote_qkey;
		h.deth.src_qpn = qp->qpn;
	} else {
		h = qp->tmpl;
	}

	if (s->opf & (UROCE_OPF_READ | UROCE_OPF_ATOMIC)) {
		seg = 0;
		npsn = (s->opf & UROCE_OPF_READ) ? msg_psns(remaining, qp->mtu) : 1;
		last = true;
	} else {
		/* SEND, WRITE, and an Atomic Write: its 8 bytes (post_send checked the length)
		 * in one packet, one PSN, AckReq set as on every last packet. */
		seg = remaining < qp->mtu ? remaining : qp->mtu;
		npsn = 1;
		last = seg == remaining;
	}
	h.bth.opcode = pkt_opcode(qp, s, qp->req.offset, seg);
	oi = uroce_opcode_info(h.bth.opcode);
	h.bth.psn = qp->req.psn;
	h.bth.se = last && (w->send_flags & IBV_SEND_SOLICITED) &&
		   (s->opf & UROCE_OPF_SEND || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM);
	/* AckReq on the last packet of a message, and every max_pkts_per_ack packets so
	 * that a long message is acknowledged as it goes (rxe does the same). */
	h.bth.ack_req = last || qp->req.noack_pkts + 1 >= dev->cfg.max_pkts_per_ack ||
			/* the last packet the window allows: without an ACK nothing moves */
			(tp_qp_reliable(qp) &&
			 uroce_psn_diff(uroce_psn_add(qp->req.psn, (int32_t)npsn), qp->comp.psn) >=
				 (int32_t)dev->cfg.max_unacked_psns);
	if (oi->hdrs & UROCE_HDR_XRCETH)
		h.xrc_srqn = w->remote_srqn; /* every packet of the message: annex A14 */
	if (oi->hdrs & UROCE_HDR_RETH) {
		h.reth.va = w->remote_addr + qp->req.offset;
		h.reth.rkey = w->rkey;
		h.reth.dma_len =
			remaining; /* from this packet on (a retried READ asks for the rest) */
	}
	if (oi->hdrs & UROCE_HDR_ATOMICETH) {
		h.atomiceth.va = w->remote_addr;
		h.atomiceth.rkey = w->rkey;
		h.atomiceth.swap_add =
			w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? w->swap : w->compare_add;
		h.atomiceth.compare = w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? w->compare_add : 0;
	}
	if (oi->hdrs & UROCE_HDR_IMMDT)
		h.imm = w->imm_data;
	if (oi->hdrs & UROCE_HDR_IETH)
		h.ieth_rkey = w->invalidate_rkey;

	/* Zero-copy for SEND and WRITE payloads only (cfg.tx_zc): an Atomic Write's 8 bytes
	 * are copied, one value read at once, as rxe copies them into the WQE at post. */
	rc = -ENOTSUP;
	if (tp_qp_reliable(qp) && !(w->send_flags & IBV_SEND_INLINE) &&
	    !(s->opf & UROCE_OPF_ATOMIC_WRITE) && tp_zc_wanted(dev, seg)) {
		struct uroce_tp_tx_seg zc[UROCE_TP_TX_SEGS_MAX];

		rc = tp_sge_segs(qp->pd, w->sg_list, w->num_sge, qp->req.offset, seg, zc);
		if (rc >= 0)
			rc = tp_send_pkt_zc(dev, &h, seg, zc, (uint32_t)rc);
	}
	if (rc == -ENOTSUP)
		rc = tp_send_pkt(dev, &h, seg, gather_payload, &g);
	if (rc)
		return rc;

	qp->req.noack_pkts = h.bth.ack_req ? 0 : qp->req.noack_pkts + 1;
	qp->req.psn = uroce_psn_add(qp->req.psn, (int32_t)npsn);
	if (uroce_psn_diff(qp->req.psn, qp->req.psn_max) > 0)
		qp->req.psn_max = qp->req.psn;
	qp->req.offset += (s->opf & (UROCE_OPF_READ | UROCE_OPF_ATOMIC)) ? remaining : seg;
	if (tp_qp_reliable(qp) && qp->comp.deadline == UINT64_MAX && qp->comp.timeout_ns)
		tp_set_deadline(qp, now_ns + qp->comp.timeout_ns);
	if (last) {
		dev->cnt.rdma_sends++;
		qp->req.idx++;
		qp->req.offset = 0;
		/* UC and UD complete when sent; RC when acknowledged (IBA 9.7.5.2.4). */
		s->state = tp_qp_reliable(qp) ? TP_WQE_PENDING : TP_WQE_DONE;
		if (s->state == TP_WQE_DONE)
			tp_comp_retire(qp);
	}
	return 0;
}

/* True if an earlier READ, atomic or Atomic Write is still in flight: a fenced WQE waits
 * for it (IBA 10.8.3.3). */
static bool fence_blocks(struct uroce_tp_qp *qp)
{
	for (uint32_t i = qp->sq_cons; i != qp->req.idx; i++) {
		const struct tp_send_slot *p = tp_sq_slot(qp, i);

		if (p->state != TP_WQE_DONE && (p->opf & TP_OPF_RD_ATOMIC))
			return true;
	}
	return false;
}

static void fail_wqe(struct uroce_tp_qp *qp, struct tp_send_slot *s, enum ibv_wc_status st)
{
	s->state = TP_WQE_DONE;
	s->status = st;
	qp->dev->cnt.send_err++;
	qp->req.idx++;
	tp_comp_retire(qp);
	tp_qp_to_error(qp);
}

/* A BIND_MW or LOCAL_INV the requester has reached: carried out at once, in order with the
 * packets of the WQEs around it (IBA 10.6.7: a bind takes effect when the WQE is executed,
 * not when posted). It takes no PSN: done now, completed when the completer retires it,
 * after every earlier WQE. Returns false when it failed (the QP is in ERR then). */
static bool do_local(struct uroce_tp_qp *qp, struct tp_send_slot *s)
{
	bool bind = s->wqe.opcode == IBV_WR_BIND_MW;
	int rc = bind ? tp_mw_bind(qp, &s->wqe.bind) :
			tp_mw_invalidate(qp, s->wqe.invalidate_rkey, false);

	if (rc) {
		/* As rxe: a broken rule fails the WQE and stops the QP. */
		fail_wqe(qp, s, bind ? IBV_WC_MW_BIND_ERR : IBV_WC_LOC_QP_OP_ERR);
		return false;
	}
	s->state = TP_WQE_DONE;
	s->status = IBV_WC_SUCCESS;
	qp->req.idx++;
	tp_comp_retire(qp);
	return true;
}

bool tp_req_run(struct uroce_tp_qp *qp, uint64_t now_ns)
{
	struct uroce_tp_dev *dev = qp->dev;

	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
		return true;
	if (qp->comp.rnr_deadline != UINT64_MAX)
		return true; /* waiting out an RNR NAK: nothing goes out */
	while (qp->req.idx != qp->sq_prod && qp->state != IBV_QPS_ERR) {
		struct tp_send_slot *s = tp_sq_slot(qp, qp->req.idx);
		bool starting = qp->req.offset == 0 && s->state == TP_WQE_POSTED && !s->started;
		bool local = tp_wr_is_local(s->wqe.opcode);
		int rc;

		if (s->state == TP_WQE_DONE) {
			/* A local WQE carried out before a go-back sent the requester back over
			 * it (tp_req_rewind leaves DONE slots be): once is all it gets. */
			qp->req.idx++;
			continue;
		}
		/* The send window counts PSNs: a local WQE takes none, so it need not wait. */
		if (tp_qp_reliable(qp) && !local &&
		    uroce_psn_diff(qp->req.psn, qp->comp.psn) >= (int32_t)dev->cfg.max_unacked_psns)
			break;
		if (starting) {
			enum ibv_wc_status st;

			if (qp->state == IBV_QPS_SQD)
				break; /* SQD: finish messages in flight, start none (IBA 10.3.1) */
			if ((s->opf & TP_OPF_RD_ATOMIC) &&
			    qp->req.rd_atomic >=
				    (qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1u))
				break;
			if ((s->wqe.send_flags & IBV_SEND_FENCE) && fence_blocks(qp))
				break;
			if (local) {
				if (!do_local(qp, s))
					break;
				continue;
			}
			st = check_local(qp, s);
			if (st != IBV_WC_SUCCESS) {
				fail_wqe(qp, s, st);
				break;
			}
			s->started = true;
			s->first_psn = qp->req.psn;
			s->npsn = (s->opf & UROCE_OPF_ATOMIC) ? 1 : msg_psns(s->length, qp->mtu);
			s->last_psn = uroce_psn_add(s->first_psn, (int32_t)s->npsn - 1);
			if (s->opf & TP_OPF_RD_ATOMIC)
				qp->req.rd_atomic++;
		}
		rc = send_next(qp, s, now_ns);
		if (rc == -EAGAIN) {
			tp_qp_schedule(qp); /* the link is full: try again on the next process */
			return false;
		}
		if (rc) {
			fail_wqe(qp, s, IBV_WC_LOC_PROT_ERR);
			break;
		}
		if (!tp_visit_spend(dev) && qp->req.idx != qp->sq_prod) {
			tp_qp_schedule(qp); /* its turn is over: the next QP's (schedule.c) */
			return false;
		}
	}
	return true;
}

bool tp_req_skip_acked(struct uroce_tp_qp *qp, uint32_t psn)
{
	bool moved = false;

	/* Only a PSN sent before and not yet again: anything else is a ghost. */
	if (uroce_psn_diff(psn, qp->req.psn) < 0 || uroce_psn_diff(psn, qp->req.psn_max) >= 0)
		return false;
	while (qp->req.idx != qp->sq_prod && uroce_psn_diff(psn, qp->req.psn) >= 0) {
		struct tp_send_slot *s = tp_sq_slot(qp, qp->req.idx);

		if (tp_wr_is_local(s->wqe.opcode)) {
			/* No PSN of its own. Carried out before the go-back: step over it, as
			 * tp_req_run would. Not yet: tp_req_run carries it out, in its turn. */
			if (s->state != TP_WQE_DONE)
				break;
			qp->req.idx++;
			continue;
		}
		if (s->state != TP_WQE_POSTED || (s->opf & TP_OPF_RD_ATOMIC))
			break;
		if (!s->started) {
			/* Sent before the go-back (tp_req_rewind cleared started): PSNs are
			 * handed out in order, so it had, and will have, the same ones. A
			 * slot whose PSNs say otherwise was never sent: stop. */
			if (s->first_psn != qp->req.psn || qp->req.offset != 0)
				break;
			s->started = true;
		}
		if (uroce_psn_diff(psn, s->last_psn) < 0) {
			/* Within the message: every packet before carries a full MTU. */
			qp->req.offset =
				(uint32_t)(uroce_psn_diff(psn, s->first_psn) + 1) * qp->mtu;
			qp->req.psn = uroce_psn_add(psn, 1);
			moved = true;
			break;
		}
		s->state = TP_WQE_PENDING;
		qp->req.idx++;
		qp->req.offset = 0;
		qp->req.psn = uroce_psn_add(s->last_psn, 1);
		moved = true;
	}
	if (moved) {
		qp->req.noack_pkts = 0;
		qp->dev->cnt.rcvd_ack_past_go_back++;
	}
	return moved;
}

void tp_req_rewind(struct uroce_tp_qp *qp, uint32_t psn)
{
	uint32_t i;

	qp->req.rd_atomic = 0;
	/* Up to and including a message only partly sent (req.idx with an offset). */
	for (i = qp->sq_cons; i != qp->sq_prod; i++) {
		struct tp_send_slot *s = tp_sq_slot(qp, i);

		if (s->state == TP_WQE_DONE)
			continue;
		if (!s->started) {
			i = qp->sq_prod;
			break;
		}
		if (uroce_psn_diff(psn, s->last_psn) <= 0)
			break; /* psn lies in (or before) this message */
		if (s->opf & TP_OPF_RD_ATOMIC)
			qp->req.rd_atomic++;
	}
	if (i == qp->sq_prod) {
		/* Nothing in flight at or after @psn: carry on with what is not sent yet. */
		return;
	}
	{
		struct tp_send_slot *s = tp_sq_slot(qp, i);
		int32_t into = uroce_psn_diff(psn, s->first_psn);

		if (into < 0)
			into = 0, psn = s->first_psn;
		qp->req.idx = i;
		qp->req.psn = psn;
		/* Atomics are one packet (an Atomic Write too: @psn is its first); for the
		 * others every PSN before @psn carried a full MTU (a READ's responses do too),
		 * so the resume point is exact. */
		qp->req.offset = (s->opf & UROCE_OPF_ATOMIC) ? 0 : (uint32_t)into * qp->mtu;
		if (qp->req.offset > s->length)
			qp->req.offset = s->length;
		s->state = TP_WQE_POSTED;
		if (s->opf & TP_OPF_RD_ATOMIC)
			qp->req.rd_atomic++;
		for (uint32_t j = i + 1; j != qp->sq_prod; j++) {
			struct tp_send_slot *later = tp_sq_slot(qp, j);

			if (later->state != TP_WQE_DONE) {
				later->state = TP_WQE_POSTED;
				later->started = false;
			}
		}
	}
	qp->req.noack_pkts = 0;
	qp->comp.rewound = true;
}
