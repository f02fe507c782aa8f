/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues: the transport's CQ and the shared ring its completions are copied to
 * (datapath.c), made, resized and destroyed; and completion channels, a pipe each that
 * carries one byte per CQ event.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rnic_internal.h"

/* A CQ region: the header, then struct uroce_ctrl_cq_ctl, then the ring (create and resize). */
#define CQ_CTL_OFFSET 64u
#define CQ_RING_OFFSET 128u

int rnic_destroy_cq(struct uroce_rnic_client *c, uint32_t h, struct rnic_cq *q)
{
	struct uroce_rnic *nic = c->rnic;
	int rc = uroce_tp_destroy_cq(q->tp);

	if (rc)
		return rc;
	if (q->channel)
		q->channel->refs--;
	rnic_shm_close(nic, &q->region);
	rnic_obj_del(c, h);
	free(q);
	return 0;
}

void rnic_cmd_create_channel(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			     const void *payload RNIC_UNUSED, const int *fds RNIC_UNUSED)
{
	rnic_event_channel_create(c, h, RNIC_OBJ_CHANNEL, sizeof(struct rnic_channel),
				  offsetof(struct rnic_channel, pipe));
}

int rnic_destroy_channel(struct uroce_rnic_client *c, uint32_t h, struct rnic_channel *ch)
{
	if (ch->refs)
		return -EBUSY;
	rnic_event_pipe_close(&ch->pipe);
	rnic_obj_del(c, h);
	free(ch);
	return 0;
}

void rnic_cmd_create_cq(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const void *payload, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_create_cq_req *req = payload;
	struct uroce_ctrl_create_cq_rep rep = {.ctl_offset = CQ_CTL_OFFSET,
						.ring_offset = CQ_RING_OFFSET};
	struct rnic_channel *ch = NULL;
	struct rnic_cq *q;
	uint32_t ring_size;
	int rc;

	if (req->channel && !(ch = rnic_obj_get(c, req->channel, RNIC_OBJ_CHANNEL))) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	rc = rnic_limit_object(c, RNIC_OBJ_CQ);
	if (rc) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	q->tp = uroce_tp_create_cq(nic->dev, req->cqe);
	if (!q->tp) {
		rc = -errno;
		free(q);
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	/* The transport holds 2^k - 1 >= cqe; the shared ring holds as many more, so a
	 * burst that the application has not polled yet waits without overrunning. */
	ring_size = uroce_tp_pow2_at_least((uint32_t)req->cqe + 1);
	rep.cqe = (int32_t)(ring_size - 1);
	rc = rnic_shm_create(nic, &q->region, "uroce-cq",
			     rep.ring_offset + uroce_ring_bytes(ring_size, sizeof(struct ibv_wc)),
			     UROCE_CTRL_REGION_CQ);
	if (rc) {
		uroce_tp_destroy_cq(q->tp);
		free(q);
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	uroce_ring_format((uint8_t *)q->region.addr + rep.ring_offset, ring_size,
			  sizeof(struct ibv_wc));
	uroce_ring_open(&q->ring, (uint8_t *)q->region.addr + rep.ring_offset,
			q->region.size - rep.ring_offset, true);
	q->ctl = (void *)((uint8_t *)q->region.addr + rep.ctl_offset);
	q->client = c;
	q->channel = ch;
	uroce_tp_cq_set_user(q->tp, q);
	q->handle = rep.cq = rnic_obj_add(c, RNIC_OBJ_CQ, q);
	if (!q->handle) {
		uroce_tp_destroy_cq(q->tp);
		rnic_shm_close(nic, &q->region);
		free(q);
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	if (ch)
		ch->refs++;
	rep.region_size = q->region.size;
	uroce_rnic_reply(c, h, 0, &rep, sizeof(rep), &q->region.fd, 1);
}

/*
 * ibv_resize_cq: a new region whose ring holds what the old one held and the application
 * had not polled, then the transport's CQ resized; checked first, so a refusal changes
 * nothing. The client holds the CQ's lock across the call (uroce_ctrl.h), and this
 * thread is the only producer, so neither ring moves meanwhile.
 */
void rnic_cmd_resize_cq(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const void *payload, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_resize_cq_req *req = payload;
	struct uroce_ctrl_create_cq_rep rep = {.ctl_offset = CQ_CTL_OFFSET,
						.ring_offset = CQ_RING_OFFSET};
	struct rnic_cq *q = rnic_obj_get(c, req->cq, RNIC_OBJ_CQ);
	struct uroce_shm_region region;
	struct uroce_ring ring;
	struct uroce_ctrl_cq_ctl *ctl;
	uint32_t ring_size, cons, unpolled;
	int rc;

	if (!q || req->cqe < 1 || req->cqe > UROCE_TP_MAX_CQE) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	/* The completions of what the application posted before this call count, as on a
	 * kernel device whose post completes a UD send before it returns: else the posts
	 * and this command race, and a resize below what the CQ is about to hold succeeds
	 * (rdma-core's test_resize_cq expects EINVAL there). */
	rnic_client_catch_up(c);
	/* The application's index, read once (it may rewrite it at any time). */
	cons = atomic_load_explicit(&q->ring.sh->cons, memory_order_acquire);
	unpolled = q->ring.mine - cons;
	ring_size = uroce_tp_pow2_at_least((uint32_t)req->cqe + 1);
	/* Fewer entries than the completions the CQ holds: EINVAL, as rxe answers (the verbs
	 * man page: cqe must be at least the number of completions in the CQ). */
	if (unpolled > q->ring.mask + 1 || unpolled > ring_size - 1 ||
	    uroce_tp_cq_count(q->tp) > ring_size - 1) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	rc = rnic_shm_create(nic, &region, "uroce-cq",
			     rep.ring_offset + uroce_ring_bytes(ring_size, sizeof(struct ibv_wc)),
			     UROCE_CTRL_REGION_CQ);
	if (rc) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	uroce_ring_format((uint8_t *)region.addr + rep.ring_offset, ring_size,
			  sizeof(struct ibv_wc));
	uroce_ring_open(&ring, (uint8_t *)region.addr + rep.ring_offset,
			region.size - rep.ring_offset, true);
	rc = uroce_tp_resize_cq(q->tp, req->cqe);
	if (rc) {
		rnic_shm_close(nic, &region);
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	for (uint32_t i = 0; i < unpolled; i++)
		memcpy(uroce_ring_prod_slot(&ring, i),
		       q->ring.elems + (size_t)((cons + i) & q->ring.mask) * q->ring.elem_size,
		       sizeof(struct ibv_wc));
	uroce_ring_prod_commit(&ring, unpolled);
	atomic_store_explicit(&ring.sh->armed,
			      atomic_load_explicit(&q->ring.sh->armed, memory_order_relaxed),
			      memory_order_relaxed);
	ctl = (void *)((uint8_t *)region.addr + rep.ctl_offset);
	atomic_store_explicit(&ctl->events,
			      atomic_load_explicit(&q->ctl->events, memory_order_relaxed),
			      memory_order_relaxed);
	atomic_store_explicit(&ctl->overrun,
			      atomic_load_explicit(&q->ctl->overrun, memory_order_relaxed),
			      memory_order_relaxed);
	rnic_shm_close(nic, &q->region);
	q->region = region;
	q->ring = ring;
	q->ctl = ctl;
	rep.cq = q->handle;
	rep.cqe = (int32_t)(ring_size - 1);
	rep.region_size = region.size;
	uroce_rnic_reply(c, h, 0, &rep, sizeof(rep), &q->region.fd, 1);
}
