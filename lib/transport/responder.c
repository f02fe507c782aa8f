/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Responder (IBA 9.7.5.1, 9.8; Linux rxe_resp.c): takes request packets, checks their
 * sequence, resources, lengths and keys, executes them (scatter into a receive WQE,
 * write into an MR, read, atomic, Atomic Write), completes receive WQEs, and answers:
 * coalesced ACKs, NAKs, RNR NAKs, READ responses (zero-length for an Atomic Write) and
 * atomic ACKs, always in PSN order. Written as rxe's
 * named states, one function each:
 *
 *   CHK_PSN -> CHK_OP_SEQ -> CHK_XRC_SRQ -> CHK_OP_VALID -> CHK_RESOURCE -> CHK_LENGTH
 *     -> CHK_RKEY -> EXECUTE -> COMPLETE -> ACKNOWLEDGE -> DONE
 *   CHK_PSN -> DUPLICATE; any check -> ERR_* (NAK, RNR NAK, UC drop)
 */
#include <arpa/inet.h>
#include <assert.h>
#include <string.h>

#include "tp_internal.h"

enum resp_state {
	RESPST_CHK_PSN,
	RESPST_CHK_OP_SEQ,
	RESPST_CHK_XRC_SRQ,      /* XRC target: the SRQ the XRCETH names (annex A14) */
	RESPST_CHK_OP_VALID,
	RESPST_CHK_RESOURCE,
	RESPST_CHK_LENGTH,
	RESPST_CHK_RKEY,
	RESPST_EXECUTE,
	RESPST_COMPLETE,
	RESPST_ACKNOWLEDGE,
	RESPST_DUPLICATE,
	RESPST_DONE,
	RESPST_ERR_RNR,          /* no receive WQE */
	RESPST_ERR_INVALID_REQ,  /* NAK invalid request: sequence, opcode, length */
	RESPST_ERR_ACCESS,       /* NAK remote access error: key, bounds, rights */
	RESPST_ERR_REM_OP,       /* NAK remote operational error: our WQE is bad */
	RESPST_ERR_LENGTH,       /* message longer than the receive WQE */
	RESPST_UC_DROP,          /* UC: drop the rest of the message */
};

/* The debug log's names of the states (rxe_resp.c: resp_state_name[]). */
static const char *const resp_state_name[] = {
	[RESPST_CHK_PSN]         = "CHK_PSN",
	[RESPST_CHK_OP_SEQ]      = "CHK_OP_SEQ",
	[RESPST_CHK_XRC_SRQ]     = "CHK_XRC_SRQ",
	[RESPST_CHK_OP_VALID]    = "CHK_OP_VALID",
	[RESPST_CHK_RESOURCE]    = "CHK_RESOURCE",
	[RESPST_CHK_LENGTH]      = "CHK_LENGTH",
	[RESPST_CHK_RKEY]        = "CHK_RKEY",
	[RESPST_EXECUTE]         = "EXECUTE",
	[RESPST_COMPLETE]        = "COMPLETE",
	[RESPST_ACKNOWLEDGE]     = "ACKNOWLEDGE",
	[RESPST_DUPLICATE]       = "DUPLICATE",
	[RESPST_DONE]            = "DONE",
	[RESPST_ERR_RNR]         = "ERR_RNR",
	[RESPST_ERR_INVALID_REQ] = "ERR_INVALID_REQ",
	[RESPST_ERR_ACCESS]      = "ERR_ACCESS",
	[RESPST_ERR_REM_OP]      = "ERR_REM_OP",
	[RESPST_ERR_LENGTH]      = "ERR_LENGTH",
	[RESPST_UC_DROP]         = "UC_DROP",
};
static_assert(sizeof(resp_state_name) / sizeof(resp_state_name[0]) == RESPST_UC_DROP + 1,
	      "resp_state_name[] names every state of enum resp_state");

struct resp_ctx {
	struct uroce_tp_qp *qp;
	const struct uroce_wire_pkt *pkt;
	const struct uroce_opcode_info *oi;
	uint16_t f; /* oi->flags */
	struct uroce_tp_mr *mr;
	/* Where the request's receive WQE and keys come from: the QP's SRQ (or none) and
	 * PD, or for an XRC target the SRQ its XRCETH names and that SRQ's PD (NULL when
	 * there is no such SRQ in the QP's domain: CHK_XRC_SRQ refuses the request). */
	struct uroce_tp_srq *srq;
	struct uroce_tp_pd *pd;
	bool burst_ack; /* only an in-order request's ACK to send: it may wait (RESPST_DONE) */
};

static struct tp_rd_res *res_at(struct uroce_tp_qp *qp, uint32_t k)
{
	return &qp->resp.res[(qp->resp.res_head + k) % qp->resp.res_n];
}

static void nak(struct uroce_tp_qp *qp, uint8_t syndrome, uint32_t psn)
{
	qp->resp.nak_pending = true;
	qp->resp.nak_syndrome = syndrome;
	qp->resp.nak_psn = psn;
}

/* ---- checks ------------------------------------------------------------------------------ */

/* READ, atomic or Atomic Write responses wait to be sent. */
static bool resp_queued(struct uroce_tp_qp *qp)
{
	for (uint32_t k = 0; k < qp->resp.res_count; k++)
		if (res_at(qp, k)->queued)
			return true;
	return false;
}

static enum resp_state chk_psn(struct resp_ctx *c)
{
	struct uroce_tp_qp *qp = c->qp;
	uint32_t psn = c->pkt->hdr.bth.psn;
	int32_t diff = uroce_psn_diff(psn, qp->resp.psn);

	if (qp->type == IBV_QPT_UC) {
		/* UC (IBA 9.8.2): a gap loses the message in progress; take up again at the
		 * next FIRST or ONLY. A PSN behind the expected one is a duplicate (or a
		 * straggler overtaken by a later message) and is dropped: rxe would deliver a
		 * duplicated SEND twice, which no UC application expects. */
		if (diff < 0) {
			qp->dev->cnt.duplicate_request++;
			return RESPST_DONE;
		}
		if (diff != 0) {
			if (qp->resp.in_msg)
				qp->dev->cnt.uc_dropped_msgs++;
			qp->resp.in_msg = false;
			qp->resp.rcv_len = 0;
			qp->resp.psn = psn;
			qp->resp.drop_msg = !(c->f & UROCE_OPF_FIRST);
		}
		if (qp->resp.drop_msg) {
			if (!(c->f & UROCE_OPF_FIRST))
				return RESPST_UC_DROP;
			qp->resp.drop_msg = false;
		}
		return RESPST_CHK_OP_SEQ;
	}
	if (diff > 0) {
		/* IBA 9.7.5.1.1: one sequence-error NAK per gap, at the PSN we expect. */
		qp->dev->cnt.out_of_seq_request++;
		if (!qp->resp.sent_psn_nak) {
			qp->resp.sent_psn_nak = true;
			nak(qp, uroce_aeth_nak(UROCE_NAK_PSN_SEQ_ERR), qp->resp.psn);
		}
		return RESPST_DONE;
	}
	if (diff < 0) {
		qp->dev->cnt.duplicate_request++;
		return RESPST_DUPLICATE;
	}
	qp->resp.sent_psn_nak = false;
	return RESPST_CHK_OP_SEQ;
}

static enum resp_state bad_request(struct resp_ctx *c)
{
	return c->qp->type == IBV_QPT_UC ? RESPST_UC_DROP : RESPST_ERR_INVALID_REQ;
}

static enum resp_state chk_op_seq(struct resp_ctx *c)
{
	struct uroce_tp_qp *qp = c->qp;
	const struct uroce_opcode_info *prev;

	if (!qp->resp.in_msg) {
		if (!(c->f & UROCE_OPF_FIRST))
			return bad_request(c); /* MIDDLE or LAST without a FIRST */
		return RESPST_CHK_XRC_SRQ;
	}
	prev = uroce_opcode_info(qp->resp.last_opcode);
	if ((c->f & UROCE_OPF_FIRST) ||
	    (prev->flags & (UROCE_OPF_SEND | UROCE_OPF_WRITE)) !=
		    (c->f & (UROCE_OPF_SEND | UROCE_OPF_WRITE))) {
		if (qp->type == IBV_QPT_UC && (c->f & UROCE_OPF_FIRST)) {
			/* UC: the last message lost its end; this one starts afresh. */
			qp->dev->cnt.uc_dropped_msgs++;
			qp->resp.in_msg = false;
			qp->resp.rcv_len = 0;
			return RESPST_CHK_XRC_SRQ;
		}
		return bad_request(c); /* a new message before the last one ended */
	}
	return RESPST_CHK_XRC_SRQ;
}

/* Annex A14: an XRC request names an SRQ of the target QP's XRC domain, the same one for
 * every packet of a message. Anything else is an invalid request. */
static enum resp_state chk_xrc_srq(struct resp_ctx *c)
{
	struct uroce_tp_qp *qp = c->qp;
	uint32_t srqn = c->pkt->hdr.xrc_srqn;

	if (qp->type != IBV_QPT_XRC_RECV)
		return RESPST_CHK_OP_VALID;
	if (c->srq == NULL) {
		qp->dev->cnt.rcvd_bad_xrc_srq++;
		return RESPST_ERR_INVALID_REQ;
	}
	if (qp->resp.in_msg ? srqn != qp->resp.xrc_srqn : false)
		return RESPST_ERR_INVALID_REQ; /* a message's packets name one SRQ */
	qp->resp.xrc_srqn = srqn;
	return RESPST_CHK_OP_VALID;
}

static enum resp_state chk_op_valid(struct resp_ctx *c)
{
	unsigned int acc = c->qp->attr.qp_access_flags;

	/* The QP's own access flags gate what a remote requester may do (IBA 10.2.4); an
	 * Atomic Write is a write (rxe's check_op_valid: RXE_ATOMIC_WRITE_MASK with WRITE). */
	if (((c->f & (UROCE_OPF_WRITE | UROCE_OPF_ATOMIC_WRITE)) &&
	     !(acc & IBV_ACCESS_REMOTE_WRITE)) ||
	    ((c->f & UROCE_OPF_READ) && !(acc & IBV_ACCESS_REMOTE_READ)) ||
	    ((c->f & UROCE_OPF_ATOMIC) && !(acc & IBV_ACCESS_REMOTE_ATOMIC)))
		return bad_request(c);
	return RESPST_CHK_RESOURCE;
}

static enum resp_state chk_resource(struct resp_ctx *c)
{
	struct uroce_tp_qp *qp = c->qp;

	if ((c->f & UROCE_OPF_RWQE) && !qp->resp.has_rwqe) {
		if (!tp_rwqe_take(qp, c->srq, &qp->resp.rwqe))
			return qp->type == IBV_QPT_UC ? RESPST_UC_DROP : RESPST_ERR_RNR;
		qp->resp.has_rwqe = true;
		qp->resp.rcv_len = 0;
	}
	if (c->f & TP_OPF_RD_ATOMIC) {
		/* IBA 9.7.5.1.6: more READs/atomics in flight than max_dest_rd_atomic (an
		 * Atomic Write takes a resource too, as in rxe's check_resource). A
		 * replay for a duplicate request that was answered in full once does not
		 * count: the requester moved on, so it has every response. */
		struct tp_rd_res *oldest = res_at(qp, 0);

		if (qp->resp.res_count == qp->resp.res_n && oldest->queued && !oldest->answered)
			return RESPST_ERR_INVALID_REQ;
	}
	return RESPST_CHK_LENGTH;
}

static enum resp_state chk_length(struct resp_ctx *c)
{
	struct uroce_tp_qp *qp = c->qp;
	uint32_t len = c->pkt->payload_len;

	if (c->f & (UROCE_OPF_SEND | UROCE_OPF_WRITE)) {
		/* IBA 9.7.4.1.4: FIRST and MIDDLE carry exactly the path MTU, LAST 1..MTU,
		 * ONLY 0..MTU. */
		if (!(c->f & UROCE_OPF_LAST) ?
			    len != qp->mtu :
			    (len > qp->mtu || (!(c->f & UROCE_OPF_FIRST) && len == 0)))
			return bad_request(c);
	}
	/* IBA 1.5 Atomic Write: exactly 8 bytes, in the payload and in the RETH DMA length
	 * (rxe's check_rkey: the payload must be the DMA length, else invalid request). */
	if ((c->f & UROCE_OPF_ATOMIC_WRITE) && (len != 8 || c->pkt->hdr.reth.dma_len != 8))
		return RESPST_ERR_INVALID_REQ;
	return RESPST_CHK_RKEY;
}

static enum resp_state chk_rkey(struct resp_ctx *c)
{
	struct uroce_tp_qp *qp = c->qp;
	const struct uroce_wire_hdr *h = &c->pkt->hdr;
	enum resp_state fail = qp->type == IBV_QPT_UC ? RESPST_UC_DROP : RESPST_ERR_ACCESS;

	/* A message is at most 2^31 bytes (IBA 9.4.3, RETH DMA Length; rxe's check_length):
	 * a longer one is an invalid request, and a READ's packet count would overflow. */
	if ((c->oi->hdrs & UROCE_HDR_RETH) && h->reth.dma_len > TP_MAX_MSG)
		return bad_request(c);
	/* C9-88: a zero-length RDMA READ or WRITE need not carry a valid R_Key or VA, so
	 * neither is checked (rxe's check_rkey too); it touches no memory. UCX's rc_verbs
	 * flushes an endpoint with a zero-length WRITE with R_Key 0. */
	if ((c->oi->hdrs & UROCE_HDR_RETH) && h->reth.dma_len == 0) {
		c->mr = NULL;
		return RESPST_EXECUTE;
	}
	if ((c->f & UROCE_OPF_WRITE) && (c->f & UROCE_OPF_FIRST)) {
		c->mr = tp_rkey_check(qp, c->pd, h->reth.rkey, h->reth.va, h->reth.dma_len,
				      IBV_ACCESS_REMOTE_WRITE);
		if (c->mr == NULL)
			return fail;
		if ((c->f & UROCE_OPF_LAST) && c->pkt->payload_len != h->reth.dma_len)
			return bad_request(c);
		if (!(c->f & UROCE_OPF_LAST) && h->reth.dma_len <= qp->mtu)
			return bad_request(c);
	} else if (c->f & UROCE_OPF_READ) {
		c->mr = tp_rkey_check(qp, c->pd, h->reth.rkey, h->reth.va, h->reth.dma_len,
				      IBV_ACCESS_REMOTE_READ);
		if (c->mr == NULL)
			return fail;
	} else if (c->f & UROCE_OPF_ATOMIC) {
		if (h->atomiceth.va & 7)
			return RESPST_ERR_INVALID_REQ; /* IBA 9.4.5: misaligned atomic */
		c->mr = tp_rkey_check(qp, c->pd, h->atomiceth.rkey, h->atomiceth.va, 8,
				      IBV_ACCESS_REMOTE_ATOMIC);
		if (c->mr == NULL)
			return fail;
	} else if (c->f & UROCE_OPF_ATOMIC_WRITE) {
		/* Misaligned as an atomic is (rxe: RESPST_ERR_MISALIGNED_ATOMIC, a NAK Invalid
		 * Request); the rights are a WRITE's, of an MR or a window. */
		if (h->reth.va & 7)
			return RESPST_ERR_INVALID_REQ;
		c->mr = tp_rkey_check(qp, c->pd, h->reth.rkey, h->reth.va, 8,
				      IBV_ACCESS_REMOTE_WRITE);
		if (c->mr == NULL)
			return fail;
	}
	return RESPST_EXECUTE;
}

/* ---- execution --------------------------------------------------------------------------- */

static struct tp_rd_res *res_new(struct uroce_tp_qp *qp)
{
	struct tp_rd_res *r;

	if (qp->resp.res_count == qp->resp.res_n) {
		qp->resp.res_head = (qp->resp.res_head + 1) % qp->resp.res_n;
		qp->resp.res_count--;
	}
	r = res_at(qp, qp->resp.res_count++);
	memset(r, 0, sizeof(*r));
	return r;
}

static enum resp_state execute(struct resp_ctx *c)
{
	struct uroce_tp_qp *qp = c->qp;
	const struct uroce_wire_pkt *p = c->pkt;
	const struct uroce_wire_hdr *h = &p->hdr;

	if (c->f & UROCE_OPF_SEND) {
		uint32_t room = tp_sge_len(qp->resp.rwqe.sg_list, qp->resp.rwqe.num_sge);

		if (p->payload_len > room - qp->resp.rcv_len || qp->resp.rcv_len > room)
			return RESPST_ERR_LENGTH;
		if (tp_sge_copy(c->pd, qp->resp.rwqe.sg_list, qp->resp.rwqe.num_sge,
				qp->resp.rcv_len, (void *)p->payload, p->payload_len, true))
			return RESPST_ERR_REM_OP;
		qp->resp.rcv_len += p->payload_len;
	} else if (c->f & UROCE_OPF_WRITE) {
		if (c->f & UROCE_OPF_FIRST) {
			qp->resp.wr_rkey = h->reth.rkey;
			qp->resp.wr_va = h->reth.va;
			qp->resp.wr_resid = h->reth.dma_len;
			qp->resp.wr_len = h->reth.dma_len;
		}
		if (p->payload_len > qp->resp.wr_resid || ((c->f & UROCE_OPF_LAST) &&
							     p->payload_len != qp->resp.wr_resid))
			return bad_request(c);
		if (p->payload_len) {
			struct uroce_tp_mr *mr =
				tp_rkey_check(qp, c->pd, qp->resp.wr_rkey, qp->resp.wr_va,
					      p->payload_len, IBV_ACCESS_REMOTE_WRITE);
			if (mr == NULL)
				return qp->type == IBV_QPT_UC ? RESPST_UC_DROP : RESPST_ERR_ACCESS;
			tp_place(mr->host + (qp->resp.wr_va - mr->iova), p->payload,
				 p->payload_len);
		}
		qp->resp.wr_va += p->payload_len;
		qp->resp.wr_resid -= p->payload_len;
	} else if (c->f & UROCE_OPF_READ) {
		struct tp_rd_res *r = res_new(qp);
		uint32_t n = h->reth.dma_len ? (h->reth.dma_len + qp->mtu - 1) / qp->mtu : 1;

		r->psn = h->bth.psn;
		r->last_psn = uroce_psn_add(h->bth.psn, (int32_t)n - 1);
		r->va = h->reth.va;
		r->rkey = h->reth.rkey;
		r->length = h->reth.dma_len;
		r->xrc_srqn = h->xrc_srqn;
		r->cur_psn = h->bth.psn;
		r->queued = true;
		qp->resp.psn = uroce_psn_add(h->bth.psn, (int32_t)n);
		qp->resp.ack_psn = r->last_psn;
		qp->resp.msn = (qp->resp.msn + 1) & UROCE_PSN_MASK;
		return RESPST_DONE;
	} else if (c->f & UROCE_OPF_ATOMIC) {
		struct tp_rd_res *r = res_new(qp);
		/* Only the VA is 8-byte aligned (chk_rkey): the MR's host address need not be
		 * aligned as its iova is, so the 8 bytes are read and written with memcpy, not
		 * through a uint64_t pointer (a misaligned access is undefined behaviour, and
		 * clang's -Wcast-align refused the cast). */
		uint8_t *mem = c->mr->host + (h->atomiceth.va - c->mr->iova);
		uint64_t orig, val;

		memcpy(&orig, mem, sizeof(orig));
		/* Executed once per PSN: a duplicate replays r->orig (IBA 9.7.5.1.5). */
		if (UROCE_OPCODE_OP(h->bth.opcode) == UROCE_OP_COMPARE_SWAP) {
			if (orig == h->atomiceth.compare) {
				val = h->atomiceth.swap_add;
				memcpy(mem, &val, sizeof(val));
			}
		} else {
			val = orig + h->atomiceth.swap_add;
			memcpy(mem, &val, sizeof(val));
		}
		r->kind = TP_RES_ATOMIC;
		r->psn = r->last_psn = r->cur_psn = h->bth.psn;
		r->orig = orig;
		r->queued = true;
		qp->resp.psn = uroce_psn_add(h->bth.psn, 1);
		qp->resp.ack_psn = h->bth.psn;
		qp->resp.msn = (qp->resp.msn + 1) & UROCE_PSN_MASK;
		return RESPST_DONE;
	} else if (c->f & UROCE_OPF_ATOMIC_WRITE) {
		struct tp_rd_res *r = res_new(qp);
		uint8_t *mem = c->mr->host + (h->reth.va - c->mr->iova);
		uint64_t val;

		/* The 8 bytes as they came (no byte order: the requester sent its memory's
		 * bytes), stored at once and after everything executed before it: one 8-byte
		 * store with release ordering (rxe: smp_store_release), so that a reader that
		 * sees the value sees the earlier WRITEs too. Only the VA is 8-byte aligned
		 * (chk_rkey); a host address that is not, as for the atomics, gets a memcpy
		 * (a misaligned uint64_t access is undefined behaviour) after a release fence. */
		memcpy(&val, p->payload, sizeof(val));
		if (((uintptr_t)mem & 7) == 0) {
			__atomic_store_n((uint64_t *)(void *)mem, val, __ATOMIC_RELEASE);
		} else {
			__atomic_thread_fence(__ATOMIC_RELEASE);
			memcpy(mem, &val, sizeof(val));
		}
		/* Executed once per PSN: a duplicate is answered from the resource again
		 * (IBA 9.7.5.1.5 as for atomics), never stored twice. */
		r->kind = TP_RES_ATOMIC_WRITE;
		r->psn = r->last_psn = r->cur_psn = h->bth.psn;
		r->queued = true;
		qp->resp.psn = uroce_psn_add(h->bth.psn, 1);
		qp->resp.ack_psn = h->bth.psn;
		qp->resp.msn = (qp->resp.msn + 1) & UROCE_PSN_MASK;
		return RESPST_DONE;
	}
	qp->resp.psn = uroce_psn_add(h->bth.psn, 1);
	qp->resp.last_opcode = h->bth.opcode;
	qp->resp.in_msg = !(c->f & UROCE_OPF_LAST);
	return RESPST_COMPLETE;
}

static void rwqe_complete(struct uroce_tp_qp *qp, enum ibv_wc_status status,
			  enum ibv_wc_opcode opcode, uint32_t byte_len,
			  const struct uroce_wire_hdr *h)
{
	struct uroce_tp_cq *cq;
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = qp->resp.rwqe.wr_id;
	wc.status = status;
	wc.opcode = opcode;
	wc.qp_num = qp->qpn;
	if (status == IBV_WC_SUCCESS) {
		const struct uroce_opcode_info *oi = uroce_opcode_info(h->bth.opcode);

		wc.byte_len = byte_len;
		wc.src_qp = qp->type == IBV_QPT_UD ? h->deth.src_qpn : qp->attr.dest_qp_num;
		if (oi->flags & UROCE_OPF_IMM) {
			wc.wc_flags |= IBV_WC_WITH_IMM;
			wc.imm_data = htonl(h->imm); /* ibv_wc.imm_data is big-endian */
		}
		if (oi->flags & UROCE_OPF_INV) {
			wc.wc_flags |= IBV_WC_WITH_INV;
			wc.invalidated_rkey = h->ieth_rkey;
		}
		if (qp->type == IBV_QPT_UD) {
			wc.wc_flags |= IBV_WC_GRH;
			wc.sl = h->ip_version == 4 ? UROCE_TP_WC_SL_ROCEV2_IPV4
						   : UROCE_TP_WC_SL_ROCEV2_IPV6;
		}
		if (h->bth.se)
			wc.wc_flags |= UROCE_TP_WC_SOLICITED;
	}
	qp->resp.has_rwqe = false;
	qp->dev->cnt.rdma_recvs++;
	cq = tp_resp_cq(qp);
	if (cq == NULL)
		return; /* an XRC SRQ destroyed under its message: its WQEs went with it */
	if (!tp_cq_push(cq, &wc) && qp->state != IBV_QPS_ERR)
		tp_qp_to_error(qp); /* a lost completion: the QP cannot go on (IBA 11.4.2.1) */
}

static enum resp_state complete(struct resp_ctx *c)
{
	struct uroce_tp_qp *qp = c->qp;
	const struct uroce_wire_hdr *h = &c->pkt->hdr;

	if (!(c->f & UROCE_OPF_LAST))
		return RESPST_ACKNOWLEDGE;
	qp->resp.msn = (qp->resp.msn + 1) & UROCE_PSN_MASK;
	/* IBA 10.6.7.2.2: SEND with Invalidate may revoke only a type 2 memory window or a
	 * fast-registered MR; an MR registered by the application stays its own (mlx5
	 * refuses the rest, rxe too: IB_MR_TYPE_MEM_REG only). uroce has no fast-registered
	 * MRs, so only a type 2 window bound to this very QP is freed (type 2B: its peer is
	 * the one the window was granted to); an MR's R_Key or any other window is refused,
	 * as one that does not exist: otherwise a peer could revoke memory it was never
	 * given. Once per message: a duplicate never gets here (duplicate()). */
	if ((c->f & UROCE_OPF_INV) && tp_mw_invalidate(qp, h->ieth_rkey, true))
		return RESPST_ERR_REM_OP;
	if (c->f & UROCE_OPF_SEND)
		rwqe_complete(qp, IBV_WC_SUCCESS, IBV_WC_RECV, qp->resp.rcv_len, h);
	else if (c->f & UROCE_OPF_IMM) /* RDMA WRITE with immediate */
		rwqe_complete(qp, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, qp->resp.wr_len, h);
	return RESPST_ACKNOWLEDGE;
}

static enum resp_state acknowledge(struct resp_ctx *c)
{
	struct uroce_tp_qp *qp = c->qp;

	if (!tp_qp_reliable(qp))
		return RESPST_DONE;
	qp->resp.ack_psn = c->pkt->hdr.bth.psn;
	c->burst_ack = true;
	/* ACK what asks for it, and at least every ack_coalesce packets (rxe ACKs AckReq
	 * packets only; coalescing more is a tunable). */
	if (c->pkt->hdr.bth.ack_req || ++qp->resp.noack >= qp->dev->cfg.ack_coalesce) {
		qp->resp.ack_pending = true;
		qp->resp.noack = 0;
	} else {
		qp->dev->cnt.ack_deferred++;
	}
	return RESPST_DONE;
}

static enum resp_state duplicate(struct resp_ctx *c)
{
	struct uroce_tp_qp *qp = c->qp;
	const struct uroce_wire_hdr *h = &c->pkt->hdr;

	if (c->f & (UROCE_OPF_SEND | UROCE_OPF_WRITE)) {
		/* Already executed: acknowledge again, up to the latest PSN we took
		 * (IBA 9.7.5.1.2). */
		qp->resp.ack_pending = true;
		return RESPST_DONE;
	}
	for (uint32_t k = 0; k < qp->resp.res_count; k++) {
		struct tp_rd_res *r = res_at(qp, k);

		if (uroce_psn_diff(h->bth.psn, r->psn) < 0 ||
		    uroce_psn_diff(h->bth.psn, r->last_psn) > 0)
			continue;
		if ((c->f & UROCE_OPF_ATOMIC) != 0) {
			/* Replay the saved result: never apply an atomic twice. */
			if (r->kind != TP_RES_ATOMIC || r->psn != h->bth.psn)
				return RESPST_DONE;
			r->cur_psn = r->psn;
		} else if ((c->f & UROCE_OPF_ATOMIC_WRITE) != 0) {
			/* Answer again, never store again (rxe: res->replay): the value may
			 * have been overwritten since, by the application or a later WRITE. */
			if (r->kind != TP_RES_ATOMIC_WRITE || r->psn != h->bth.psn)
				return RESPST_DONE;
			r->cur_psn = r->psn;
		} else {
			if (r->kind != TP_RES_READ)
				return RESPST_DONE;
			/* IBA 9.7.5.1.4: a duplicate READ is executed again, from the PSN and
			 * range it names (the requester asks for what it is missing). */
			if (h->reth.dma_len > TP_MAX_MSG) /* as chk_rkey */
				return RESPST_DONE;
			if (h->reth.dma_len > 0 && /* C9-88, as chk_rkey */
			    tp_rkey_check(qp, c->pd, h->reth.rkey, h->reth.va, h->reth.dma_len,
					  IBV_ACCESS_REMOTE_READ) == NULL)
				return RESPST_DONE;
			r->va = h->reth.va;
			r->length = h->reth.dma_len;
			r->sent = 0;
			r->cur_psn = h->bth.psn;
		}
		r->queued = true;
		/* The requester went back: what was queued after it will be asked again. */
		for (uint32_t j = k + 1; j < qp->resp.res_count; j++)
			res_at(qp, j)->queued = false;
		return RESPST_DONE;
	}
	return RESPST_DONE; /* too old to remember: the requester's timer will tell */
}

/* ---- errors ------------------------------------------------------------------------------ */

/* The NAK carries the failing request's PSN (IBA 9.7.5.2: a NAK acknowledges only what
 * is before its PSN). Not resp.psn: complete() has already moved it past a SEND with an
 * unusable Invalidate R_Key, and the requester then took the NAK for an ACK. */
static void error_to_qp(struct uroce_tp_qp *qp, uint8_t syndrome, uint32_t psn)
{
	nak(qp, syndrome, psn);
	tp_resp_run(qp); /* the NAK goes out before the QP stops answering */
	tp_qp_to_error(qp);
}

static void ud_rx(struct uroce_tp_qp *qp, const struct uroce_wire_pkt *p)
{
	uint8_t grh[40];
	uint32_t room;

	if (p->hdr.deth.qkey != qp->attr.qkey) {
		qp->dev->cnt.rcvd_bad_qkey++; /* IBA 10.2.5: silently dropped */
		return;
	}
	if (!tp_rwqe_take(qp, qp->srq, &qp->resp.rwqe)) {
		qp->dev->cnt.ud_dropped_no_rwqe++;
		return;
	}
	qp->resp.has_rwqe = true;
	/* The 40 bytes before the payload hold the GRH (IBA 11.4.1.2); for RoCEv2 over IPv4
	 * its last 20 bytes hold the IPv4 header (as rxe and rdma-core's ibv_ud_pingpong
	 * expect), for IPv6 the IPv6 header. */
	memset(grh, 0, sizeof(grh));
	if (p->hdr.ip_version == 4)
		memcpy(grh + 20, p->l3, 20);
	else
		memcpy(grh, p->l3, 40);
	room = tp_sge_len(qp->resp.rwqe.sg_list, qp->resp.rwqe.num_sge);
	if (room < 40 || p->payload_len > room - 40) {
		rwqe_complete(qp, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, &p->hdr);
		return;
	}
	if (tp_sge_copy(qp->pd, qp->resp.rwqe.sg_list, qp->resp.rwqe.num_sge, 0, grh, 40, true) ||
	    tp_sge_copy(qp->pd, qp->resp.rwqe.sg_list, qp->resp.rwqe.num_sge, 40,
			(void *)p->payload, p->payload_len, true)) {
		rwqe_complete(qp, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, &p->hdr);
		return;
	}
	rwqe_complete(qp, IBV_WC_SUCCESS, IBV_WC_RECV, 40 + p->payload_len, &p->hdr);
}

void tp_resp_rx(struct uroce_tp_qp *qp, const struct uroce_wire_pkt *pkt)
{
	struct resp_ctx c = {.qp = qp, .pkt = pkt};
	enum resp_state st = RESPST_CHK_PSN;
	/* Read once: a step costs a test of a register when the log is off. */
	const bool debug = qp->dev->cfg.debug_log != NULL;

	if (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD &&
	    qp->state != IBV_QPS_SQE) {
		qp->dev->cnt.rcvd_in_wrong_state++;
		return;
	}
	if (qp->type == IBV_QPT_UD) {
		ud_rx(qp, pkt);
		return;
	}
	c.oi = uroce_opcode_info(pkt->hdr.bth.opcode);
	c.f = c.oi->flags;
	if (qp->type == IBV_QPT_XRC_RECV) {
		c.srq = tp_xrc_srq(qp, pkt->hdr.xrc_srqn);
		c.pd = c.srq ? c.srq->pd : NULL;
	} else {
		c.srq = qp->srq;
		c.pd = qp->pd;
	}

	for (;;) {
		enum resp_state from = st;

		switch (st) {
		case RESPST_CHK_PSN:
			st = chk_psn(&c);
			break;
		case RESPST_CHK_OP_SEQ:
			st = chk_op_seq(&c);
			break;
		case RESPST_CHK_XRC_SRQ:
			st = chk_xrc_srq(&c);
			break;
		case RESPST_CHK_OP_VALID:
			st = chk_op_valid(&c);
			break;
		case RESPST_CHK_RESOURCE:
			st = chk_resource(&c);
			break;
		case RESPST_CHK_LENGTH:
			st = chk_length(&c);
			break;
		case RESPST_CHK_RKEY:
			st = chk_rkey(&c);
			break;
		case RESPST_EXECUTE:
			st = execute(&c);
			break;
		case RESPST_COMPLETE:
			st = complete(&c);
			break;
		case RESPST_ACKNOWLEDGE:
			st = acknowledge(&c);
			break;
		case RESPST_DUPLICATE:
			st = duplicate(&c);
			break;
		case RESPST_ERR_RNR:
			/* IBA 9.7.5.2.8: RNR NAK with our minimum RNR timer; the PSN is not
			 * consumed, the requester sends it again after the wait. */
			qp->dev->cnt.send_rnr_err++;
			nak(qp, uroce_aeth_rnr_nak(qp->attr.min_rnr_timer), pkt->hdr.bth.psn);
			/* The packets behind it are dropped silently until this PSN comes
			 * back: one NAK per gap, RNR NAKs included (IBA 9.7.5.1.1). */
			qp->resp.sent_psn_nak = true;
			st = RESPST_DONE;
			break;
		case RESPST_ERR_INVALID_REQ:
			if (qp->resp.has_rwqe)
				rwqe_complete(qp, IBV_WC_REM_INV_REQ_ERR, IBV_WC_RECV, 0,
					      &pkt->hdr);
			error_to_qp(qp, uroce_aeth_nak(UROCE_NAK_INVALID_REQ), pkt->hdr.bth.psn);
			return;
		case RESPST_ERR_ACCESS:
			if (qp->resp.has_rwqe && qp->resp.in_msg)
				rwqe_complete(qp, IBV_WC_REM_ACCESS_ERR, IBV_WC_RECV, 0, &pkt->hdr);
			error_to_qp(qp, uroce_aeth_nak(UROCE_NAK_REM_ACCESS_ERR), pkt->hdr.bth.psn);
			return;
		case RESPST_ERR_REM_OP:
			rwqe_complete(qp, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, &pkt->hdr);
			if (tp_qp_reliable(qp)) {
				error_to_qp(qp, uroce_aeth_nak(UROCE_NAK_REM_OP_ERR),
					    pkt->hdr.bth.psn);
				return;
			}
			st = RESPST_UC_DROP;
			break;
		case RESPST_ERR_LENGTH:
			/* IBA 9.7.5.1.3 / C9-90: message longer than the receive buffer: the
			 * WQE completes in error and the requester is told invalid request. */
			rwqe_complete(qp, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, &pkt->hdr);
			if (tp_qp_reliable(qp)) {
				error_to_qp(qp, uroce_aeth_nak(UROCE_NAK_INVALID_REQ),
					    pkt->hdr.bth.psn);
				return;
			}
			st = RESPST_UC_DROP;
			break;
		case RESPST_UC_DROP:
			qp->dev->cnt.uc_dropped_msgs += qp->resp.drop_msg ? 0 : 1;
			qp->resp.in_msg = false;
			qp->resp.rcv_len = 0;
			qp->resp.psn = uroce_psn_add(pkt->hdr.bth.psn, 1);
			qp->resp.drop_msg = !(c.f & UROCE_OPF_LAST);
			return;
		case RESPST_DONE:
			/* One ACK per receive burst: ACKs are cumulative, so an in-order
			 * request's waits for uroce_tp_process, which the host runs after the
			 * burst, and answers every packet of the burst before it. A NAK, a
			 * duplicate's ACK and READ and atomic responses leave now. */
			if (c.burst_ack && !qp->resp.nak_pending && !resp_queued(qp)) {
				if (qp->resp.ack_pending)
					tp_qp_schedule(qp);
				return;
			}
			tp_resp_run(qp);
			return;
		}
		if (debug)
			tp_debug(qp->dev, "qp 0x%06x psn %u resp: %s -> %s", qp->qpn,
				 pkt->hdr.bth.psn, resp_state_name[from], resp_state_name[st]);
	}
}

/* ---- answers, in PSN order ----------------------------------------------------------------- */

static int send_ack(struct uroce_tp_qp *qp, uint8_t syndrome, uint32_t psn)
{
	struct uroce_wire_hdr h = qp->tmpl;

	h.bth.opcode = UROCE_OPCODE(tp_qp_transport(qp), UROCE_OP_ACKNOWLEDGE);
	h.bth.psn = psn;
	h.aeth.syndrome = syndrome;
	h.aeth.msn = qp->resp.msn;
	return tp_send_pkt(qp->dev, &h, 0, NULL, NULL);
}

struct read_fill {
	const struct uroce_tp_mr *mr;
	uint64_t va;
};

static int read_fill(void *arg, uint8_t *dst, uint32_t len)
{
	const struct read_fill *f = arg;

	memcpy(dst, f->mr->host + (f->va - f->mr->iova), len);
	return 0;
}

/* The PD a READ's R_Key is checked in, again for each response packet: the QP's, or for an
 * XRC target that of the SRQ the READ named (NULL if it is gone: the READ fails). */
static struct uroce_tp_pd *resp_read_pd(struct uroce_tp_qp *qp, const struct tp_rd_res *r)
{
	struct uroce_tp_srq *srq;

	if (qp->type != IBV_QPT_XRC_RECV)
		return qp->pd;
	srq = tp_xrc_srq(qp, r->xrc_srqn);
	return srq ? srq->pd : NULL;
}

/* One response packet of resource @r: 0, -EAGAIN, or -EFAULT (the MR went away). */
static int send_response(struct uroce_tp_qp *qp, struct tp_rd_res *r)
{
	struct uroce_wire_hdr h = qp->tmpl;
	struct read_fill f;
	uint32_t len = 0;
	enum uroce_op op;
	int rc;

	h.bth.psn = r->cur_psn;
	h.aeth.syndrome = uroce_aeth_ack(UROCE_AETH_CREDIT_INVALID);
	h.aeth.msn = qp->resp.msn;
	if (r->kind == TP_RES_ATOMIC) {
		op = UROCE_OP_ATOMIC_ACKNOWLEDGE;
		h.atomic_orig = r->orig;
	} else if (r->kind == TP_RES_ATOMIC_WRITE) {
		/* rxe's send_read_response_ack: no data, AETH ACK, the request's PSN */
		op = UROCE_OP_READ_RESPONSE_ONLY;
	} else {
		len = r->length - r->sent < qp->mtu ? r->length - r->sent : qp->mtu;
		/* FIRST/ONLY only at the READ's first PSN. A duplicate READ that asks from a
		 * later PSN continues the original response stream with MIDDLE/LAST, as rxe
		 * answers (captured in loss_read_retry.pcap), and as rxe's completer demands:
		 * a FIRST at a PSN other than the WQE's first fails the READ. */
		if (r->cur_psn == r->psn)
			op = r->length <= qp->mtu ? UROCE_OP_READ_RESPONSE_ONLY
						  : UROCE_OP_READ_RESPONSE_FIRST;
		else
			op = r->length - r->sent <= qp->mtu ? UROCE_OP_READ_RESPONSE_LAST
							    : UROCE_OP_READ_RESPONSE_MIDDLE;
		f.va = r->va + r->sent;
		f.mr = NULL; /* a zero-length READ names no memory (C9-88); tp_send_pkt
			     * calls no fill without a payload */
		if (len > 0) {
			f.mr = tp_rkey_check(qp, resp_read_pd(qp, r), r->rkey, f.va, len,
					     IBV_ACCESS_REMOTE_READ);
			if (f.mr == NULL)
				return -EFAULT;
		}
	}
	h.bth.opcode = UROCE_OPCODE(tp_qp_transport(qp), op);
	rc = tp_send_pkt(qp->dev, &h, len, read_fill, &f);
	if (rc)
		return rc;
	r->sent += len;
	r->cur_psn = uroce_psn_add(r->cur_psn, 1);
	if (r->kind != TP_RES_READ || r->sent == r->length) {
		r->queued = false;
		r->answered = true;
	}
	return 0;
}

static bool resp_run(struct uroce_tp_qp *qp);

bool tp_resp_run(struct uroce_tp_qp *qp)
{
	if (resp_run(qp))
		return true;
	tp_qp_schedule(qp); /* the link is full: try again on the next process */
	return false;
}

static bool resp_run(struct uroce_tp_qp *qp)
{
	struct tp_resp *rs = &qp->resp;

	if (!tp_qp_reliable(qp) || qp->state == IBV_QPS_RESET || qp->state == IBV_QPS_INIT)
		return true;
	if (qp->state != IBV_QPS_ERR) {
		for (uint32_t k = 0; k < rs->res_count; k++) {
			struct tp_rd_res *r = res_at(qp, k);

			if (!r->queued)
				continue;
			if (rs->ack_pending && !rs->nak_pending &&
			    uroce_psn_diff(rs->ack_psn, r->cur_psn) < 0) {
				if (send_ack(qp, uroce_aeth_ack(UROCE_AETH_CREDIT_INVALID),
					     rs->ack_psn))
					return false;
				rs->ack_pending = false;
			}
			while (r->queued) {
				int rc = send_response(qp, r);

				if (rc == -EAGAIN)
					return false;
				if (rc == 0 && r->queued && !tp_visit_spend(qp->dev))
					return false; /* its turn is over: the next QP's */
				if (rc) {
					/* The MR went away under a READ: answer with a remote
					 * access NAK at that PSN, then stop (IBA 9.7.5.1.3). */
					for (uint32_t j = 0; j < rs->res_count; j++)
						res_at(qp, j)->queued = false;
					nak(qp, uroce_aeth_nak(UROCE_NAK_REM_ACCESS_ERR),
					    r->cur_psn);
					if (send_ack(qp, rs->nak_syndrome, rs->nak_psn) == 0)
						rs->nak_pending = false;
					tp_qp_to_error(qp);
					return true;
				}
			}
		}
	}
	if (rs->nak_pending) {
		/* A NAK acknowledges everything before its PSN: no separate ACK. */
		if (send_ack(qp, rs->nak_syndrome, rs->nak_psn))
			return false;
		rs->nak_pending = false;
		rs->ack_pending = false;
	} else if (rs->ack_pending && qp->state != IBV_QPS_ERR) {
		if (send_ack(qp, uroce_aeth_ack(UROCE_AETH_CREDIT_INVALID), rs->ack_psn))
			return false;
		rs->ack_pending = false;
	}
	return true;
}
