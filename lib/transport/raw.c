/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Raw packet QPs (verbs' IBV_QPT_RAW_PACKET): no transport at all. A send WQE's data is
 * a whole Ethernet frame, put on the link as it is (the IP checksums filled in when the
 * WQE asks, as a NIC's offload does) and completed once sent; a frame that a flow rule
 * gives the QP (flow.c) lands whole in its next receive WQE. Neither side has PSNs,
 * ACKs or retries: what the link refuses is tried again (-EAGAIN), what finds no receive
 * WQE is dropped and counted, as a NIC's full receive ring drops it.
 */
#include <string.h>

#include "tp_internal.h"

int tp_raw_send(struct uroce_tp_qp *qp, struct tp_send_slot *s)
{
	struct uroce_tp_dev *dev = qp->dev;
	const struct uroce_tp_send_wqe *w = &s->wqe;
	int rc;

	/* The requester checked the length against tp_raw_frame_max(), the frame's room. */
	if (w->send_flags & IBV_SEND_INLINE)
		memcpy(dev->frame, w->inline_data, s->length);
	else if (tp_sge_copy(qp->pd, w->sg_list, w->num_sge, 0, dev->frame, s->length, false))
		return -EFAULT;
	if (w->send_flags & IBV_SEND_IP_CSUM)
		uroce_wire_csum_fill(dev->frame, s->length);
	rc = dev->cfg.tx(dev->cfg.tx_ctx, dev->frame, s->length);
	if (rc)
		return rc == -EAGAIN ? -EAGAIN : -EFAULT;
	dev->cnt.raw_sent_pkts++;
	s->started = true;
	s->state = TP_WQE_DONE;
	s->status = IBV_WC_SUCCESS;
	qp->req.idx++;
	tp_comp_retire(qp);
	return 0;
}

void tp_raw_rx(struct uroce_tp_qp *qp, const uint8_t *frame, uint32_t len)
{
	struct uroce_tp_recv_wqe rwqe;
	struct ibv_wc wc;

	/* Receiving starts at RTR (IBA 10.3.1), as for every QP type. */
	if (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD &&
	    qp->state != IBV_QPS_SQE) {
		qp->dev->cnt.rcvd_in_wrong_state++;
		return;
	}
	if (len > tp_raw_frame_max(qp->dev)) {
		qp->dev->cnt.rcvd_malformed++; /* longer than the port takes: not a frame */
		return;
	}
	if (!tp_rwqe_take(qp, qp->srq, &rwqe)) {
		qp->dev->cnt.raw_dropped_no_rwqe++;
		return;
	}
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = rwqe.wr_id;
	wc.opcode = IBV_WC_RECV;
	wc.qp_num = qp->qpn;
	if (len > tp_sge_len(rwqe.sg_list, rwqe.num_sge))
		wc.status = IBV_WC_LOC_LEN_ERR;
	else if (tp_sge_copy(qp->pd, rwqe.sg_list, rwqe.num_sge, 0, (void *)frame, len, true))
		wc.status = IBV_WC_LOC_PROT_ERR;
	else
		wc.status = IBV_WC_SUCCESS;
	if (wc.status == IBV_WC_SUCCESS) {
		wc.byte_len = len;
		if (uroce_wire_csum_ok(frame, len))
			wc.wc_flags |= IBV_WC_IP_CSUM_OK;
		qp->dev->cnt.raw_rcvd_pkts++;
	}
	if (!tp_cq_push(qp->recv_cq, &wc) && qp->state != IBV_QPS_ERR)
		tp_qp_to_error(qp); /* a lost completion: the QP cannot go on (IBA 11.4.2.1) */
}
