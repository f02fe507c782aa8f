/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A connection's handle table, the RNIC's lists, the shared regions of rings and the end
 * of what handles name: the destroy commands and connection teardown, which call each
 * object's destructor (rnic_destroy_<type>(), in the object's file).
 *
 * Handles index a per-connection table, are typed and carry their slot's generation, so
 * one connection can name only its own objects, only as what they are, and only while
 * they live.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rnic_internal.h"

/* ---- handle table --------------------------------------------------------------------- */

uint32_t rnic_obj_add(struct uroce_rnic_client *c, enum rnic_obj_type type, void *p)
{
	uint32_t i;

	/* Reuse the lowest free slot; tables stay as small as the live object count. */
	for (i = 0; i < c->nobjs; i++)
		if (c->objs[i].type == RNIC_OBJ_FREE)
			break;
	if (i == c->nobjs) {
		if (c->nobjs == RNIC_HANDLE_SLOT_MASK)
			return 0; /* a million objects: the limits stop a client long before */
		if (c->nobjs == c->cap_objs) {
			uint32_t cap = c->cap_objs ? c->cap_objs * 2 : 32;
			struct rnic_obj *o = realloc(c->objs, cap * sizeof(*o));

			if (!o)
				return 0;
			c->objs = o;
			c->cap_objs = cap;
		}
		c->objs[c->nobjs++].handle = 0; /* a new slot: generation 0 */
	}
	c->objs[i].type = type;
	c->objs[i].p = p;
	/* The next generation of the slot (mod 4096: a stale handle meets its slot's object
	 * again only after 4095 more have come and gone there). */
	c->objs[i].handle = ((c->objs[i].handle >> RNIC_HANDLE_SLOT_BITS) + 1)
				    << RNIC_HANDLE_SLOT_BITS |
			    (i + 1);
	c->counts[type]++;
	return c->objs[i].handle;
}

/* The live slot @p handle names, or NULL (out of the table, freed, or an older object's). */
static struct rnic_obj *obj_slot(struct uroce_rnic_client *c, uint32_t handle)
{
	uint32_t slot = handle & RNIC_HANDLE_SLOT_MASK;

	if (slot == 0 || slot > c->nobjs || c->objs[slot - 1].handle != handle ||
	    c->objs[slot - 1].type == RNIC_OBJ_FREE)
		return NULL;
	return &c->objs[slot - 1];
}

void *rnic_obj_get(struct uroce_rnic_client *c, uint32_t handle, enum rnic_obj_type type)
{
	struct rnic_obj *o = obj_slot(c, handle);

	return o && o->type == type ? o->p : NULL;
}

void rnic_obj_del(struct uroce_rnic_client *c, uint32_t handle)
{
	struct rnic_obj *o = obj_slot(c, handle);

	if (!o)
		return;
	c->counts[o->type]--;
	o->type = RNIC_OBJ_FREE;
	o->p = NULL; /* o->handle stays: the next object in the slot takes the next one */
}

/* ---- lists, rings' regions, replies ---------------------------------------------- */

int rnic_list_del(void **list, uint32_t *n, uint32_t idx)
{
	list[idx] = list[--*n];
	return (int)idx;
}

int rnic_array_room(void *array, uint32_t n, uint32_t *cap, size_t elem_size)
{
	void **a = array;
	uint32_t nc;
	void *p;

	if (n < *cap)
		return 0;
	nc = *cap ? *cap * 2 : 64;
	p = realloc(*a, (size_t)nc * elem_size);
	if (!p)
		return -ENOMEM;
	*a = p;
	*cap = nc;
	return 0;
}

int rnic_list_add(void ***list, uint32_t *n, uint32_t *cap, void *item, uint32_t *idx)
{
	if (rnic_array_room(list, *n, cap, sizeof(**list)))
		return -ENOMEM;
	if (idx)
		*idx = *n;
	(*list)[(*n)++] = item;
	return 0;
}

int rnic_shm_create(struct uroce_rnic *nic, struct uroce_shm_region *r, const char *name,
		    uint64_t size, uint32_t kind)
{
	int rc = uroce_shm_create(r, name, size, kind, true);

	if (rc == 0)
		nic->mappings++;
	return rc;
}

void rnic_shm_close(struct uroce_rnic *nic, struct uroce_shm_region *r)
{
	if (r->addr)
		nic->mappings--;
	uroce_shm_close(r);
}

void rnic_reply_handle(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h, uint32_t handle)
{
	struct uroce_ctrl_handle rep = {.handle = handle};

	REPLY(c, h, handle ? 0 : -ENOMEM, &rep, sizeof(rep));
}

/* ---- event channels (completion channels, CM channels) -------------------------------- */

void *rnic_event_channel_create(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
				enum rnic_obj_type type, size_t size, size_t pipe_offset)
{
	struct uroce_ctrl_handle rep = {0};
	struct rnic_event_pipe *pipe;
	int client_fd, rc;
	void *ch;

	rc = rnic_limit_object(c, type);
	if (rc)
		goto refuse;
	ch = calloc(1, size);
	if (!ch) {
		rc = -ENOMEM;
		goto refuse;
	}
	/* Through void *: @p pipe_offset is the pipe's offsetof() in the object, so aligned. */
	pipe = (void *)((uint8_t *)ch + pipe_offset);
	/* The application's read end is its own: it decides with fcntl whether its reads
	 * block; our writes never do (rnic_event_pipe). */
	rc = rnic_event_pipe_open(pipe, &client_fd);
	if (rc)
		goto free_ch;
	rep.handle = rnic_obj_add(c, type, ch);
	if (!rep.handle) {
		rc = -ENOMEM;
		goto close_pipe;
	}
	uroce_rnic_reply(c, h, 0, &rep, sizeof(rep), &client_fd, 1);
	close(client_fd); /* sent: the client's alone */
	return ch;
close_pipe:
	close(client_fd);
	rnic_event_pipe_close(pipe);
free_ch:
	free(ch);
refuse:
	REPLY(c, h, rc, NULL, 0);
	return NULL;
}

/* ---- destruction: connection teardown and the destroy commands ------------------------ */

void rnic_client_free_objects(struct uroce_rnic_client *c)
{
	struct uroce_rnic *nic = c->rnic;

	/* Dependents before what they depend on, as the transport requires. QPs go to the
	 * error state first: their WQEs flush, and a connected peer sees what it sees when
	 * an RNIC's QP fails (no more responses: its retries run out). */
	static const enum rnic_obj_type order[] = {
		RNIC_OBJ_FLOW, RNIC_OBJ_AH, RNIC_OBJ_MW,     RNIC_OBJ_QP,      RNIC_OBJ_SRQ,
		RNIC_OBJ_XRCD, RNIC_OBJ_CQ, RNIC_OBJ_MR,     RNIC_OBJ_REGION,  RNIC_OBJ_CHANNEL,
		RNIC_OBJ_PD};
	struct ibv_qp_attr err = {.qp_state = IBV_QPS_ERR};
	size_t k;
	uint32_t h;

	rnic_cm_free_client(c);
	for (k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		for (h = 1; h <= c->nobjs; h++) {
			struct rnic_obj *o = &c->objs[h - 1];

			if (o->type != order[k])
				continue;
			switch (o->type) {
			case RNIC_OBJ_FLOW:
				rnic_destroy_flow(c, o->handle, o->p);
				break;
			case RNIC_OBJ_AH:
				uroce_tp_destroy_ah(o->p);
				rnic_obj_del(c, o->handle);
				break;
			case RNIC_OBJ_MW:
				uroce_tp_dealloc_mw(o->p);
				rnic_obj_del(c, o->handle);
				break;
			case RNIC_OBJ_QP: {
				struct rnic_qp *q = o->p;

				if (uroce_tp_qp_state(q->tp) != IBV_QPS_RESET && q->handles == 1)
					uroce_tp_modify_qp(q->tp, &err, IBV_QP_STATE, NULL,
							   rnic_now(nic));
				rnic_destroy_qp(c, o->handle, q);
				break;
			}
			case RNIC_OBJ_SRQ:
				rnic_destroy_srq(c, o->handle, o->p);
				break;
			case RNIC_OBJ_XRCD:
				rnic_xrcd_close(c, o->handle, o->p);
				break;
			case RNIC_OBJ_CQ:
				rnic_destroy_cq(c, o->handle, o->p);
				break;
			case RNIC_OBJ_MR:
				rnic_mr_release(c, o->handle, o->p);
				break;
			case RNIC_OBJ_REGION:
				rnic_destroy_region(c, o->handle, o->p);
				break;
			case RNIC_OBJ_CHANNEL:
				rnic_destroy_channel(c, o->handle, o->p);
				break;
			case RNIC_OBJ_PD:
				rnic_pd_release(c, o->handle, o->p);
				break;
			default:
				break;
			}
		}
	}
	free(c->objs);
	c->objs = NULL;
	c->nobjs = c->cap_objs = 0;
	rnic_orphans_client_gone(c);
	rnic_doorbell_slots_free(c);
	memset(&c->doorbells, 0, sizeof(c->doorbells));
	c->wake = NULL;
	if (c->region.addr)
		rnic_shm_close(nic, &c->region);
	rnic_event_pipe_close(&c->async_pipe);
	rnic_wake_del(c);
}

/* Destroy-style commands: a handle of the given type, then the type's destructor. */
static void cmd_destroy(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const struct uroce_ctrl_handle *req, enum rnic_obj_type type)
{
	void *p = rnic_obj_get(c, req->handle, type);
	int rc;

	if (!p) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	switch (type) {
	case RNIC_OBJ_PD:
		rc = rnic_dealloc_pd(c, req->handle, p);
		break;
	case RNIC_OBJ_REGION:
		rnic_destroy_region(c, req->handle, p);
		rc = 0;
		break;
	case RNIC_OBJ_MR:
		rc = rnic_destroy_mr(c, req->handle, p);
		break;
	case RNIC_OBJ_CHANNEL:
		rc = rnic_destroy_channel(c, req->handle, p);
		break;
	case RNIC_OBJ_CQ:
		rc = rnic_destroy_cq(c, req->handle, p);
		break;
	case RNIC_OBJ_SRQ:
		rc = rnic_destroy_srq(c, req->handle, p);
		break;
	case RNIC_OBJ_QP:
		rc = rnic_destroy_qp(c, req->handle, p);
		break;
	case RNIC_OBJ_AH:
		rc = uroce_tp_destroy_ah(p);
		if (!rc)
			rnic_obj_del(c, req->handle);
		break;
	case RNIC_OBJ_MW:
		rc = uroce_tp_dealloc_mw(p);
		if (!rc)
			rnic_obj_del(c, req->handle);
		break;
	case RNIC_OBJ_FLOW:
		rnic_destroy_flow(c, req->handle, p);
		rc = 0;
		break;
	default:
		rc = -EINVAL;
	}
	if (rc == 0 && (c->rnic->orphan_pds || c->rnic->orphan_mrs))
		rnic_orphans_retry(c->rnic, false); /* what it used may be free to go now */
	REPLY(c, h, rc, NULL, 0);
}

/* The commands that take a handle and destroy what it names (cmd_destroy). */
#define RNIC_CMD_DESTROY(name, type)                                                      \
	void rnic_cmd_##name(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h, \
			     const void *payload, const int *fds RNIC_UNUSED)             \
	{                                                                                 \
		cmd_destroy(c, h, payload, type);                                         \
	}
RNIC_CMD_DESTROY(dealloc_pd, RNIC_OBJ_PD)
RNIC_CMD_DESTROY(unmap_region, RNIC_OBJ_REGION)
RNIC_CMD_DESTROY(dereg_mr, RNIC_OBJ_MR)
RNIC_CMD_DESTROY(destroy_channel, RNIC_OBJ_CHANNEL)
RNIC_CMD_DESTROY(destroy_cq, RNIC_OBJ_CQ)
RNIC_CMD_DESTROY(destroy_srq, RNIC_OBJ_SRQ)
RNIC_CMD_DESTROY(destroy_qp, RNIC_OBJ_QP)
RNIC_CMD_DESTROY(destroy_ah, RNIC_OBJ_AH)
RNIC_CMD_DESTROY(dealloc_mw, RNIC_OBJ_MW)
RNIC_CMD_DESTROY(destroy_flow, RNIC_OBJ_FLOW)
#undef RNIC_CMD_DESTROY
