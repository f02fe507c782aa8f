/* SPDX-License-Identifier: BSD-3-Clause */
/* The posting side of the data path (mlx4's qp.c): work requests checked and written into
 * the shared send, receive and SRQ rings, then the doorbell. No system call. The QP and
 * SRQ objects are made, changed and destroyed in client_verbs.c. */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

#include "client_internal.h"

/* ---- queues shared by QP and SRQ ----------------------------------------------------- */

/* Posts left before the queue holds @p max_wr outstanding WQEs. */
static uint32_t queue_room(const struct uroce_ring *r, _Atomic uint32_t *retired,
			   uint32_t max_wr)
{
	/* acquire: pairs with the daemon's release store after the retired WQEs' slots are
	 * consumed; the count can only lag (fewer posts allowed), never run ahead. */
	uint32_t outstanding = r->mine - atomic_load_explicit(retired, memory_order_acquire);

	return outstanding >= max_wr ? 0 : max_wr - outstanding;
}

/* The SGEs of both WQE forms have ibv_sge's layout: a work request's list is copied as it
 * is. */
#define SGE_IS_IBV_SGE(wqe)                                                                       \
	(sizeof(((wqe *)0)->sg_list[0]) == sizeof(struct ibv_sge) &&                              \
	 offsetof(wqe, sg_list[0].length) - offsetof(wqe, sg_list) ==                             \
		 offsetof(struct ibv_sge, length) &&                                              \
	 offsetof(wqe, sg_list[0].lkey) - offsetof(wqe, sg_list) == offsetof(struct ibv_sge, lkey))
_Static_assert(SGE_IS_IBV_SGE(struct uroce_ctrl_send_wqe), "a send WQE's SGE is an ibv_sge");
_Static_assert(SGE_IS_IBV_SGE(struct uroce_ctrl_recv_wqe), "a receive WQE's SGE is an ibv_sge");

/* A work request's SGEs into a WQE's list @p to (an empty list may be NULL). */
static void copy_sges(void *to, const struct ibv_sge *sg_list, int num_sge)
{
	if (num_sge > 0)
		memcpy(to, sg_list, (size_t)num_sge * sizeof(*sg_list));
}

static int fill_recv(struct uroce_ctrl_recv_wqe *w, const struct ibv_recv_wr *wr,
		     uint32_t max_sge)
{
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge)
		return EINVAL;
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->num_sge = (uint32_t)wr->num_sge;
	copy_sges(w->sg_list, wr->sg_list, wr->num_sge);
	return 0;
}

/* Writes the receive WQEs of list *@p wr into @p ring, as many as its room for @p max_wr
 * outstanding allows, and commits them; under the queue's lock. @return 0, or the errno
 * of the first one not posted (ENOMEM: no room; EINVAL: more than @p max_sge SGEs), left
 * in *@p wr. *@p n: how many were posted (the caller rings the doorbell when any). */
static int post_recv_list(struct uroce_ring *ring, _Atomic uint32_t *retired, uint32_t max_wr,
			  uint32_t max_sge, struct ibv_recv_wr **wr, uint32_t *n)
{
	uint32_t room = queue_room(ring, retired, max_wr);
	int rc = 0;

	for (; *wr; *wr = (*wr)->next, (*n)++) {
		if (*n == room) {
			rc = ENOMEM;
			break;
		}
		rc = fill_recv(uroce_ring_prod_slot(ring, *n), *wr, max_sge);
		if (rc)
			break;
	}
	if (*n)
		uroce_ring_prod_commit(ring, *n);
	return rc;
}

/* ---- SRQ --------------------------------------------------------------------------- */

int uroce_client_post_srq_recv(struct uroce_client_srq *srq, struct ibv_recv_wr *wr,
			       struct ibv_recv_wr **bad_wr)
{
	uint32_t n = 0;
	int rc;

	if (__builtin_expect(srq->ctx->forked, 0)) {
		*bad_wr = wr;
		return EIO; /* the parent's SRQ (fork.c) */
	}
	pthread_spin_lock(&srq->lock);
	rc = post_recv_list(&srq->ring, &srq->ctl->sq_retired, srq->max_wr, srq->max_sge, &wr, &n);
	pthread_spin_unlock(&srq->lock);
	if (n)
		cl_ring_doorbell(srq->ctx, srq->doorbell_slot);
	if (rc)
		*bad_wr = wr;
	return rc;
}

/* ---- QP ---------------------------------------------------------------------------- */

/* rdma-core's rxe provider checks (validate_send_wr) plus the opcode/QP type rules its
 * kernel side applies; what passes here the daemon executes. */
static int fill_send(struct uroce_client_qp *qp, struct uroce_ctrl_send_wqe *w,
		     const struct ibv_send_wr *wr)
{
	/* RC's requests, which an XRC initiator sends too (annex A14) */
	bool reliable = qp->ibv.qp_type == IBV_QPT_RC || qp->ibv.qp_type == IBV_QPT_XRC_SEND;
	uint64_t len = 0;
	int i;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge)
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	switch (wr->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		break;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		if (qp->ibv.qp_type == IBV_QPT_UD)
			return EINVAL;
		break;
	case IBV_WR_RDMA_READ:
		if (!reliable || (wr->send_flags & IBV_SEND_INLINE))
			return EINVAL;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		if (!reliable || len < 8 || (wr->wr.atomic.remote_addr & 7) ||
		    (wr->send_flags & IBV_SEND_INLINE))
			return EINVAL;
		break;
	case IBV_WR_SEND_WITH_INV:
		if (!reliable)
			return EINVAL; /* IBA 9.2: RC (and XRC) alone have SEND with Invalidate */
		break;
	case IBV_WR_ATOMIC_WRITE:
		/* IBTA 1.5: 8 bytes to an 8-byte aligned address, on RC; the value is taken
		 * now, from the one SGE's address or the inline bytes (as rxe and mlx5 copy it
		 * into the WQE): it travels as 8 inline bytes, which max_inline_data does not
		 * bound. */
		if (qp->ibv.qp_type != IBV_QPT_RC || wr->num_sge != 1 ||
		    wr->sg_list[0].length != 8 || (wr->wr.rdma.remote_addr & 7))
			return EINVAL;
		break;
	case IBV_WR_LOCAL_INV:
	case IBV_WR_BIND_MW:
		/* Local operations: no data (their SGE list is not read), not inline. The
		 * QP types are rxe's: a bind on RC or UC, a local invalidate on RC. */
		if ((wr->opcode == IBV_WR_LOCAL_INV ? qp->ibv.qp_type != IBV_QPT_RC
						     : qp->ibv.qp_type == IBV_QPT_UD) ||
		    (wr->send_flags & IBV_SEND_INLINE))
			return EINVAL;
		if (wr->opcode == IBV_WR_BIND_MW && !wr->bind_mw.mw)
			return EINVAL;
		len = 0;
		break;
	default:
		return EINVAL;
	}
	if ((wr->send_flags & IBV_SEND_INLINE) && len > qp->cap.max_inline_data &&
	    wr->opcode != IBV_WR_ATOMIC_WRITE)
		return EINVAL;
	if (qp->ibv.qp_type == IBV_QPT_UD && !wr->wr.ud.ah)
		return EINVAL;
	/* A raw packet QP sends whole frames, nothing else: an Ethernet header at least. */
	if (qp->ibv.qp_type == IBV_QPT_RAW_PACKET && (wr->opcode != IBV_WR_SEND || len < 14))
		return EINVAL;

	memset(w, 0, offsetof(struct uroce_ctrl_send_wqe, sg_list));
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = wr->send_flags;
	w->imm_data = ntohl(wr->imm_data);
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
		break;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		w->invalidate_rkey = wr->invalidate_rkey;
		break;
	case IBV_WR_ATOMIC_WRITE:
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
		memcpy(w->inline_data, (const void *)(uintptr_t)wr->sg_list[0].addr, 8);
		w->inline_len = 8;
		w->send_flags |= IBV_SEND_INLINE;
		return 0;
	case IBV_WR_BIND_MW: {
		const struct ibv_mw_bind_info *b = &wr->bind_mw.bind_info;

		w->bind.mw_rkey = wr->bind_mw.mw->rkey;
		w->bind.rkey = wr->bind_mw.rkey;
		w->bind.mr_lkey = b->mr ? b->mr->lkey : 0;
		w->bind.access = (uint32_t)b->mw_access_flags;
		w->bind.addr = b->addr;
		w->bind.length = b->length;
		return 0; /* num_sge 0 (cleared above): the bind is the union's content */
	}
	default:
		break;
	}
	if (wr->opcode == IBV_WR_LOCAL_INV)
		return 0;
	if (qp->ibv.qp_type == IBV_QPT_UD) {
		w->ah = to_uah(wr->wr.ud.ah)->handle;
		w->remote_qpn = wr->wr.ud.remote_qpn;
		w->remote_qkey = wr->wr.ud.remote_qkey;
	}
	if (qp->ibv.qp_type == IBV_QPT_XRC_SEND)
		w->remote_srqn = wr->qp_type.xrc.remote_srqn;
	if (wr->send_flags & IBV_SEND_INLINE) {
		/* Inline data is copied now: the caller may reuse its buffer on return. */
		uint32_t at = 0;

		for (i = 0; i < wr->num_sge; i++) {
			memcpy(w->inline_data + at, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			at += wr->sg_list[i].length;
		}
		w->inline_len = at;
	} else {
		w->num_sge = (uint32_t)wr->num_sge;
		copy_sges(w->sg_list, wr->sg_list, wr->num_sge);
	}
	return 0;
}

int uroce_client_post_send(struct uroce_client_qp *qp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr)
{
	uint32_t n = 0, room;
	int rc = 0;

	if (__builtin_expect(qp->ctx->forked, 0)) {
		*bad_wr = wr;
		return EIO; /* the parent's QP (fork.c) */
	}
	pthread_spin_lock(&qp->sq_lock);
	/* An XRC target has no send queue: it only answers. */
	if (qp->ibv.qp_type == IBV_QPT_XRC_RECV || qp->ibv.state == IBV_QPS_RESET ||
	    qp->ibv.state == IBV_QPS_INIT ||
	    qp->ibv.state == IBV_QPS_RTR) {
		rc = EINVAL;
		goto out;
	}
	room = queue_room(&qp->sq, &qp->ctl->sq_retired, qp->cap.max_send_wr);
	for (; wr; wr = wr->next, n++) {
		if (n == room) {
			rc = ENOMEM;
			break;
		}
		rc = fill_send(qp, uroce_ring_prod_slot(&qp->sq, n), wr);
		if (rc)
			break;
	}
	if (n)
		uroce_ring_prod_commit(&qp->sq, n); /* the doorbell */
out:
	pthread_spin_unlock(&qp->sq_lock);
	if (n)
		cl_ring_doorbell(qp->ctx, qp->doorbell_slot);
	if (rc)
		*bad_wr = wr;
	return rc;
}

int uroce_client_post_recv(struct uroce_client_qp *qp, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr)
{
	uint32_t n = 0;
	int rc;

	/* An SRQ's QP, and XRC's (an initiator receives nothing, a target from its SRQs) */
	if (qp->srq || qp->ibv.qp_type == IBV_QPT_XRC_SEND ||
	    qp->ibv.qp_type == IBV_QPT_XRC_RECV) {
		*bad_wr = wr;
		return EINVAL;
	}
	if (__builtin_expect(qp->ctx->forked, 0)) {
		*bad_wr = wr;
		return EIO; /* the parent's QP (fork.c) */
	}
	pthread_spin_lock(&qp->rq_lock);
	if (qp->ibv.state == IBV_QPS_RESET)
		rc = EINVAL;
	else
		rc = post_recv_list(&qp->rq, &qp->ctl->rq_retired, qp->cap.max_recv_wr,
				    qp->cap.max_recv_sge, &wr, &n);
	pthread_spin_unlock(&qp->rq_lock);
	if (n)
		cl_ring_doorbell(qp->ctx, qp->doorbell_slot);
	if (rc)
		*bad_wr = wr;
	return rc;
}
