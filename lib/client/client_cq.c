/* SPDX-License-Identifier: BSD-3-Clause */
/* The completion side of the data path (mlx4's cq.c): poll a CQ's shared ring, arm it,
 * and take a QP's completions out of it at RESET. The CQ object is made, resized and
 * destroyed in client_verbs.c; what an empty poll does with the CPU is cq_wait.c's. */
#include <errno.h>
#include <string.h>

#include "client_internal.h"

int uroce_client_poll_cq(struct uroce_client_cq *cq, int n, struct ibv_wc *wc)
{
	uint64_t timeout_ns;
	uint32_t avail, i, snapshot;
	bool sleep;

	if (n <= 0)
		return 0;
	if (__builtin_expect(cq->ctx->forked, 0))
		return -EIO; /* the parent's CQ (fork.c) */
	pthread_spin_lock(&cq->lock);
	cl_cq_before_poll(cq);
	avail = uroce_ring_cons_avail(&cq->ring);
	if (avail > (uint32_t)n)
		avail = (uint32_t)n;
	for (i = 0; i < avail; i++)
		memcpy(&wc[i], uroce_ring_cons_slot(&cq->ring, i), sizeof(*wc));
	if (avail) {
		uroce_ring_cons_release(&cq->ring, avail);
		cq->empty_polls = 0;
		pthread_spin_unlock(&cq->lock);
		return (int)avail;
	}
	/* Empty: the wait policy may give the CPU up (cq_wait.c); a busy CQ never gets
	 * here. */
	sleep = cl_cq_empty(cq, &snapshot, &timeout_ns);
	pthread_spin_unlock(&cq->lock);
	if (sleep)
		cl_cq_sleep(cq, snapshot, timeout_ns);
	return 0;
}

int uroce_client_req_notify_cq(struct uroce_client_cq *cq, int solicited_only)
{
	if (!cq->channel)
		return EINVAL;
	if (cq->ctx->forked)
		return EIO;
	/* Under the lock: a resize may be moving the CQ to a new ring. */
	pthread_spin_lock(&cq->lock);
	uroce_ring_arm(&cq->ring, solicited_only != 0);
	pthread_spin_unlock(&cq->lock);
	return 0;
}

/* RESET: the QP's completions not yet polled leave @p cq's ring, the others kept in order,
 * as the daemon removed those it had not published yet (uroce_tp_modify_qp; the same rule:
 * an SRQ's receive completions stay). The daemon writes only past the producer index, so
 * the slots between the indices are ours to move under the CQ's lock. */
void cl_cq_discard_qp(struct ibv_cq *ibv_cq, uint32_t qpn, bool keep_recv)
{
	struct uroce_client_cq *cq = to_ucq(ibv_cq);
	uint32_t held, dropped = 0;

	pthread_spin_lock(&cq->lock);
	uroce_ring_cons_moved(&cq->ring); /* every completion published so far */
	held = uroce_ring_cons_avail(&cq->ring);
	for (uint32_t i = held; i-- > 0;) {
		struct ibv_wc wc;

		memcpy(&wc, uroce_ring_cons_slot(&cq->ring, i), sizeof(wc));
		if (wc.qp_num == qpn && !(keep_recv && (wc.opcode & IBV_WC_RECV))) {
			dropped++;
			continue;
		}
		if (dropped)
			memcpy((void *)(uintptr_t)uroce_ring_cons_slot(&cq->ring, i + dropped), &wc,
			       sizeof(wc));
	}
	if (dropped)
		uroce_ring_cons_release(&cq->ring, dropped);
	pthread_spin_unlock(&cq->lock);
}

const char *uroce_client_wc_status_str(enum ibv_wc_status status)
{
	/* rdma-core's strings (libibverbs/enum_strs.c), so tools print what they would. */
	static const char *const str[] = {
		[IBV_WC_SUCCESS] = "success",
		[IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error",
		[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR] = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error",
		[IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "aborted error",
		[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IBV_WC_GENERAL_ERR] = "general error",
		[IBV_WC_TM_ERR] = "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};

	if ((unsigned int)status < sizeof(str) / sizeof(str[0]) && str[status])
		return str[status];
	return "unknown";
}
