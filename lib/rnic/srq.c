/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared receive queues, ordinary and XRC (whose domains are xrc.c's): the transport's
 * SRQ and the shared ring the application posts to, made, modified, resized, queried and
 * destroyed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rnic_internal.h"

static void srq_unlist(struct rnic_srq *s)
{
	struct uroce_rnic *nic = s->client->rnic;

	rnic_list_del((void **)nic->srqs, &nic->nsrqs, s->idx);
	if (s->idx < nic->nsrqs)
		nic->srqs[s->idx]->idx = s->idx;
}

int rnic_destroy_srq(struct uroce_rnic_client *c, uint32_t h, struct rnic_srq *s)
{
	struct uroce_rnic *nic = c->rnic;
	int rc = uroce_tp_destroy_srq(s->tp);

	if (rc)
		return rc;
	rnic_doorbell_slot_put(c, NULL, s);
	srq_unlist(s);
	rnic_shm_close(nic, &s->region);
	rnic_obj_del(c, h);
	free(s);
	return 0;
}

/* An SRQ and its region: an ordinary one (@p xrcd NULL), or an XRC SRQ of @p xrcd whose
 * completions go to @p cq. Replies with @p rep_len bytes of @p rep (whose first part is
 * CREATE_SRQ's reply, and which *srqn follows for an XRC SRQ). */
static void srq_create(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
		       struct uroce_tp_pd *pd, struct rnic_xrcd *xrcd, struct rnic_cq *cq,
		       const struct ibv_srq_attr *attr, struct uroce_ctrl_create_srq_rep *rep,
		       uint32_t *srqn, size_t rep_len)
{
	struct uroce_rnic *nic = c->rnic;
	struct ibv_srq_init_attr init = {.attr = *attr};
	struct rnic_srq *s;
	uint32_t ring_size;
	int rc;

	rep->ring_offset = RNIC_QUEUE_RING_OFFSET;
	rc = rnic_limit_object(c, RNIC_OBJ_SRQ);
	if (rc) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	s->tp = xrcd ? uroce_tp_create_xrc_srq(pd, xrcd->tp, cq->tp, &init)
		     : uroce_tp_create_srq(pd, &init);
	if (!s->tp) {
		rc = -errno;
		free(s);
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	s->xrcd = xrcd;
	uroce_tp_query_srq(s->tp, &rep->attr);
	ring_size = uroce_tp_pow2_at_least(rep->attr.max_wr);
	rc = rnic_shm_create(
		nic, &s->region, "uroce-srq",
		rep->ring_offset + uroce_ring_bytes(ring_size, sizeof(struct uroce_ctrl_recv_wqe)),
		UROCE_CTRL_REGION_SRQ);
	if (rc == 0)
		rc = rnic_list_add((void ***)&nic->srqs, &nic->nsrqs, &nic->cap_srqs, s, &s->idx);
	if (rc) {
		if (s->region.addr)
			rnic_shm_close(nic, &s->region);
		uroce_tp_destroy_srq(s->tp);
		free(s);
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	uroce_ring_format((uint8_t *)s->region.addr + rep->ring_offset, ring_size,
			  sizeof(struct uroce_ctrl_recv_wqe));
	uroce_ring_open(&s->ring, (uint8_t *)s->region.addr + rep->ring_offset,
			s->region.size - rep->ring_offset, false);
	s->ctl = (void *)((uint8_t *)s->region.addr + UROCE_CTRL_QUEUE_CTL_OFFSET);
	s->client = c;
	uroce_tp_srq_set_user(s->tp, s);
	rc = rnic_doorbell_slot_get(c, NULL, s);
	s->handle = rep->srq = rc ? 0 : rnic_obj_add(c, RNIC_OBJ_SRQ, s);
	if (!s->handle) {
		if (rc == 0)
			rnic_doorbell_slot_put(c, NULL, s);
		srq_unlist(s);
		uroce_tp_destroy_srq(s->tp);
		rnic_shm_close(nic, &s->region);
		free(s);
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	rep->region_size = s->region.size;
	if (srqn)
		*srqn = uroce_tp_srq_num(s->tp);
	uroce_rnic_reply(c, h, 0, rep, rep_len, &s->region.fd, 1);
}

void rnic_cmd_create_srq(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			 const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_create_srq_req *req = payload;
	struct uroce_tp_pd *pd = rnic_pd_get(c, req->pd);
	struct uroce_ctrl_create_srq_rep rep = {0};

	if (!pd) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	srq_create(c, h, pd, NULL, NULL, &req->attr, &rep, NULL, sizeof(rep));
}

void rnic_cmd_create_xrc_srq(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			     const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_create_xrc_srq_req *req = payload;
	struct uroce_tp_pd *pd = rnic_pd_get(c, req->pd);
	struct rnic_xrcd *xrcd = rnic_obj_get(c, req->xrcd, RNIC_OBJ_XRCD);
	struct rnic_cq *cq = rnic_obj_get(c, req->cq, RNIC_OBJ_CQ);
	struct uroce_ctrl_create_xrc_srq_rep rep = {0};

	if (!pd || !xrcd || !cq) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	srq_create(c, h, pd, xrcd, cq, &req->attr, &rep.srq, &rep.srqn, sizeof(rep));
}

void rnic_cmd_modify_srq(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			 const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_modify_srq_req *r = payload;
	struct rnic_srq *s = rnic_obj_get(c, r->srq, RNIC_OBJ_SRQ);
	struct ibv_srq_attr a = r->attr;

	/* A new size needs a new region: RESIZE_SRQ. */
	if (!s || (r->mask & IBV_SRQ_MAX_WR)) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	REPLY(c, h, uroce_tp_modify_srq(s->tp, &a, r->mask), NULL, 0);
}

/*
 * ibv_modify_srq with IBV_SRQ_MAX_WR: a new region whose ring holds the WQEs the
 * application posted and we had not taken, at the same indices, then the transport's
 * SRQ resized (with the limit, if the mask has it too); checked first, so a refusal
 * changes nothing. The client holds the SRQ's lock across the call (uroce_ctrl.h) and
 * this thread is the only consumer, so neither side moves meanwhile.
 */
void rnic_cmd_resize_srq(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			 const void *payload, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_modify_srq_req *r = payload;
	struct rnic_srq *s = rnic_obj_get(c, r->srq, RNIC_OBJ_SRQ);
	struct uroce_ctrl_create_srq_rep rep = {.srq = r->srq,
						.ring_offset = RNIC_QUEUE_RING_OFFSET};
	struct ibv_srq_attr a = r->attr;
	struct uroce_shm_region region;
	struct uroce_ring ring;
	struct uroce_ctrl_queue_ctl *ctl;
	uint32_t ring_size, prod, waiting;
	int rc;

	if (!s || !(r->mask & IBV_SRQ_MAX_WR) || a.max_wr < 1 || a.max_wr > UROCE_TP_MAX_QP_WR) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	/* The application's index, read once (it may rewrite it at any time). */
	prod = atomic_load_explicit(&s->ring.sh->prod, memory_order_acquire);
	waiting = prod - s->ring.mine;
	ring_size = uroce_tp_pow2_at_least(a.max_wr);
	/* What waits in the ring and what the transport holds must fit the new size. */
	if (waiting > s->ring.mask + 1 ||
	    waiting + uroce_tp_srq_outstanding(s->tp) > ring_size) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	rc = rnic_shm_create(
		nic, &region, "uroce-srq",
		rep.ring_offset + uroce_ring_bytes(ring_size, sizeof(struct uroce_ctrl_recv_wqe)),
		UROCE_CTRL_REGION_SRQ);
	if (rc) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	rc = uroce_tp_modify_srq(s->tp, &a, r->mask);
	if (rc) {
		rnic_shm_close(nic, &region);
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	uroce_ring_format((uint8_t *)region.addr + rep.ring_offset, ring_size,
			  sizeof(struct uroce_ctrl_recv_wqe));
	/* The same indices as the old ring: start both at our consumer index. */
	ring.sh = (void *)((uint8_t *)region.addr + rep.ring_offset);
	atomic_store_explicit(&ring.sh->cons, s->ring.mine, memory_order_relaxed);
	atomic_store_explicit(&ring.sh->prod, s->ring.mine, memory_order_relaxed);
	uroce_ring_open(&ring, ring.sh, region.size - rep.ring_offset, false);
	for (uint32_t i = 0; i < waiting; i++)
		memcpy(ring.elems + (size_t)((s->ring.mine + i) & ring.mask) * ring.elem_size,
		       uroce_ring_cons_slot(&s->ring, i), sizeof(struct uroce_ctrl_recv_wqe));
	atomic_store_explicit(&ring.sh->prod, prod, memory_order_relaxed);
	ctl = (void *)((uint8_t *)region.addr + UROCE_CTRL_QUEUE_CTL_OFFSET);
	atomic_store_explicit(&ctl->sq_retired,
			      atomic_load_explicit(&s->ctl->sq_retired, memory_order_relaxed),
			      memory_order_relaxed);
	ctl->doorbell_slot = s->doorbell_slot;
	rnic_shm_close(nic, &s->region);
	s->region = region;
	s->ring = ring;
	s->ctl = ctl;
	uroce_tp_query_srq(s->tp, &rep.attr);
	rep.region_size = region.size;
	uroce_rnic_reply(c, h, 0, &rep, sizeof(rep), &s->region.fd, 1);
}

void rnic_cmd_query_srq(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_handle *r = payload;
	struct rnic_srq *s = rnic_obj_get(c, r->handle, RNIC_OBJ_SRQ);
	struct uroce_ctrl_query_srq_rep rep;

	memset(&rep, 0, sizeof(rep));
	REPLY(c, h, s ? uroce_tp_query_srq(s->tp, &rep.attr) : -EINVAL, &rep, sizeof(rep));
}
