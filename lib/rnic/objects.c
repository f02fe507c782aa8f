/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The commands of the control protocol: the verbs objects of each connection, made in
 * the transport and, for queues, in shared memory the application maps.
 *
 * Handles index a per-connection table, are typed and carry their slot's generation, so
 * one connection can name only its own objects, only as what they are, and only while
 * they live. Every value from a request is checked
 * here or by the transport (which returns the errno rdma-core would) before use.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

/* ---- QP and SRQ lists (the doorbells the poll loop watches) -------------------------- */

static void qp_unlist(struct rnic_qp *q)
{
	struct uroce_rnic *nic = q->client->rnic;

	rnic_list_del((void **)nic->qps, &nic->nqps, q->idx);
	if (q->idx < nic->nqps)
		nic->qps[q->idx]->idx = q->idx;
}

static void srq_unlist(struct rnic_srq *s)
{
	struct uroce_rnic *nic = s->client->rnic;

	rnic_list_del((void **)nic->srqs, &nic->nsrqs, s->idx);
	if (s->idx < nic->nsrqs)
		nic->srqs[s->idx]->idx = s->idx;
}

static void cq_unready(struct rnic_cq *q)
{
	struct uroce_rnic *nic = q->client->rnic;
	uint32_t i;

	if (!q->ready)
		return;
	for (i = 0; i < nic->nready; i++)
		if (nic->ready[i] == q) {
			rnic_list_del((void **)nic->ready, &nic->nready, i);
			break;
		}
	q->ready = false;
}

/* ---- destruction (commands and connection teardown share these) ----------------------- */

/* ---- multicast ---------------------------------------------------------------------- */

int rnic_mcast_attach(struct rnic_qp *q, const union ibv_gid *gid)
{
	struct uroce_rnic *nic = q->client->rnic;
	uint8_t mac[6];
	uint32_t i;
	int rc;

	for (i = 0; i < q->nmcast; i++)
		if (memcmp(q->mcast[i].raw, gid->raw, 16) == 0)
			return 0; /* attached already: nothing changes (as the transport) */
	rc = uroce_tp_attach_mcast(q->tp, gid);
	if (rc)
		return rc;
	/* The host stack accepts RoCE to the group, the port its MAC (first member). */
	rc = uroce_ip_group_join(nic->ip, gid->raw, mac);
	if (rc < 0) {
		uroce_tp_detach_mcast(q->tp, gid);
		return rc;
	}
	if (rc == 1)
		nic->ops->mcast_add(nic->io_ctx, mac);
	q->mcast[q->nmcast++] = *gid;
	return 0;
}

int rnic_mcast_detach(struct rnic_qp *q, const union ibv_gid *gid)
{
	struct uroce_rnic *nic = q->client->rnic;
	uint8_t mac[6];
	uint32_t i;

	for (i = 0; i < q->nmcast; i++)
		if (memcmp(q->mcast[i].raw, gid->raw, 16) == 0)
			break;
	if (i == q->nmcast)
		return -EINVAL;
	uroce_tp_detach_mcast(q->tp, gid);
	if (uroce_ip_group_leave(nic->ip, gid->raw, mac) == 1)
		nic->ops->mcast_del(nic->io_ctx, mac);
	q->mcast[i] = q->mcast[--q->nmcast];
	return 0;
}

void rnic_destroy_flow(struct uroce_rnic_client *c, uint32_t h, struct rnic_flow *f)
{
	uroce_tp_destroy_flow(f->tp);
	f->qp->nflows--;
	rnic_obj_del(c, h);
	free(f);
}

int rnic_destroy_qp(struct uroce_rnic_client *c, uint32_t h, struct rnic_qp *q)
{
	struct uroce_rnic *nic = c->rnic;
	int rc;

	if (q->handles > 1) {
		/* An XRC target others have open: only this handle goes (the kernel's). */
		rnic_xrc_qp_close(c, h, q);
		return 0;
	}
	if (q->nflows)
		return -EBUSY; /* as the kernel's uverbs: the flows go first */
	while (q->nmcast)
		rnic_mcast_detach(q, &q->mcast[0]);
	rc = uroce_tp_destroy_qp(q->tp);
	if (rc)
		return rc;
	rnic_doorbell_slot_put(c, q, NULL);
	qp_unlist(q);
	rnic_shm_close(nic, &q->region);
	rnic_obj_del(c, h);
	free(q);
	return 0;
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

int rnic_destroy_cq(struct uroce_rnic_client *c, uint32_t h, struct rnic_cq *q)
{
	struct uroce_rnic *nic = c->rnic;
	int rc = uroce_tp_destroy_cq(q->tp);

	if (rc)
		return rc;
	cq_unready(q);
	if (q->channel)
		q->channel->refs--;
	rnic_shm_close(nic, &q->region);
	rnic_obj_del(c, h);
	free(q);
	return 0;
}

/* ---- registered memory and the frames that point into it ---- */

static void mem_unmap(struct uroce_rnic_mem *mem)
{
	struct uroce_rnic *nic = mem->nic;

	munmap(mem->map, mem->map_len);
	if (nic) {
		nic->mappings--;
		if (mem->mr_gone) {
			if (mem->held_prev)
				mem->held_prev->held_next = mem->held_next;
			else
				nic->held_mems = mem->held_next;
			if (mem->held_next)
				mem->held_next->held_prev = mem->held_prev;
		}
	}
	free(mem);
}

/* An MR that lay in @p mem is deregistered: with the last one, the pages go now, or with
 * the last frame that points there; no new MR finds the mapping from then on. */
static void mem_mr_gone(struct uroce_rnic_mem *mem)
{
	struct uroce_rnic *nic = mem->nic;

	if (--mem->mrs)
		return;
	if (mem->region) {
		struct uroce_rnic_mem **pm = &mem->region->mems;

		while (*pm != mem)
			pm = &(*pm)->region_next;
		*pm = mem->region_next;
		mem->region = NULL;
	}
	if (mem->frames == 0) {
		mem_unmap(mem);
		return;
	}
	mem->mr_gone = true;
	mem->held_prev = NULL;
	mem->held_next = nic->held_mems;
	if (nic->held_mems)
		nic->held_mems->held_prev = mem;
	nic->held_mems = mem;
	nic->cnt.mr_dereg_held++;
}

void uroce_rnic_mem_hold(struct uroce_rnic_mem *mem)
{
	mem->frames++;
}

void uroce_rnic_mem_release(struct uroce_rnic_mem *mem)
{
	if (--mem->frames == 0 && mem->mr_gone)
		mem_unmap(mem);
}

void rnic_mems_orphan(struct uroce_rnic *nic)
{
	for (struct uroce_rnic_mem *mem = nic->held_mems; mem; mem = mem->held_next)
		mem->nic = NULL;
	nic->held_mems = NULL;
}

/* Moves what @p m costs (its pinned bytes, the daemon's mappings it holds: limits.c) from
 * the client charged now to @p to (NULL: nobody, once the pages are unmapped or wait only
 * for frames and windows that hold them). */
static void mr_charge_move(struct rnic_mr *m, struct uroce_rnic_client *to)
{
	if (m->pin_owner) {
		m->pin_owner->pinned -= m->span;
		m->pin_owner->maps -= m->nmaps;
	}
	m->pin_owner = to;
	if (to) {
		to->pinned += m->span;
		to->maps += m->nmaps;
	}
}

/* The MR's transport object and pages go, whichever handle asked (DEREG_MR; the last
 * handle released). -EBUSY: memory windows are bound to it. */
static int mr_kill(struct rnic_mr *m)
{
	int rc = uroce_tp_dereg_mr(m->tp);

	if (rc)
		return rc;
	m->tp = NULL;
	mr_charge_move(m, NULL); /* unpinned at dereg, as ib_umem_release() */
	mem_mr_gone(m->mem);
	m->mem = NULL;
	return 0;
}

/* Another client than @p c that keeps @p m's pages: by a handle of the MR (an importer),
 * else by a memory window bound to it (in a PD it imported). NULL: none. */
static struct uroce_rnic_client *mr_other_holder(struct uroce_rnic_client *c,
						 const struct rnic_mr *m)
{
	struct uroce_rnic_client *o, *window = NULL;

	for (o = c->rnic->clients; o; o = o->next) {
		if (o == c)
			continue;
		for (uint32_t k = 0; k < o->nobjs; k++) {
			if (o->objs[k].type == RNIC_OBJ_MR && o->objs[k].p == m)
				return o;
			if (o->objs[k].type == RNIC_OBJ_MW && m->tp &&
			    uroce_tp_mw_mr(o->objs[k].p) == m->tp)
				window = o;
		}
	}
	return window;
}

void rnic_mr_release(struct uroce_rnic_client *c, uint32_t h, struct rnic_mr *m)
{
	rnic_obj_del(c, h);
	if (m->pin_owner == c && m->refs > 1) {
		/* Its registrant lets go while an importer keeps the pages: the charge moves
		 * to that importer, as the pages stay pinned. Dropped here, a registrant could
		 * register, import elsewhere and unimport its own handle over and over, each
		 * time pinning more with nothing charged (issue 43 (6)). */
		mr_charge_move(m, mr_other_holder(c, m));
	}
	if (--m->refs)
		return;
	if (m->tp && mr_kill(m)) {
		/* Another client's window is bound to it: freed when that has gone, charged
		 * to that client meanwhile (c, its registrant, may be going). */
		if (m->pin_owner == c)
			mr_charge_move(m, mr_other_holder(c, m));
		m->orphan_next = c->rnic->orphan_mrs;
		c->rnic->orphan_mrs = m;
		return;
	}
	free(m);
}

int rnic_destroy_mr(struct uroce_rnic_client *c, uint32_t h, struct rnic_mr *m)
{
	int rc = m->tp ? mr_kill(m) : -EINVAL; /* dead: deregistered through another handle */

	if (rc)
		return rc;
	rnic_mr_release(c, h, m);
	return 0;
}

struct uroce_tp_pd *rnic_pd_get(struct uroce_rnic_client *c, uint32_t handle)
{
	struct rnic_pd *pd = rnic_obj_get(c, handle, RNIC_OBJ_PD);

	return pd ? pd->tp : NULL;
}

void rnic_pd_release(struct uroce_rnic_client *c, uint32_t h, struct rnic_pd *pd)
{
	rnic_obj_del(c, h);
	if (--pd->refs)
		return;
	if (pd->tp && uroce_tp_dealloc_pd(pd->tp)) {
		/* Another client's objects are on it: freed when they have gone. */
		pd->orphan_next = c->rnic->orphan_pds;
		c->rnic->orphan_pds = pd;
		return;
	}
	free(pd);
}

uint64_t rnic_orphans(const struct uroce_rnic *nic)
{
	uint64_t n = 0;

	for (const struct rnic_pd *pd = nic->orphan_pds; pd; pd = pd->orphan_next)
		n++;
	for (const struct rnic_mr *m = nic->orphan_mrs; m; m = m->orphan_next)
		n++;
	return n;
}

void rnic_orphans_retry(struct uroce_rnic *nic, bool final)
{
	struct rnic_mr **pm = &nic->orphan_mrs;
	struct rnic_pd **pp = &nic->orphan_pds;

	/* MRs first: an orphaned MR keeps its PD busy. */
	while (*pm) {
		struct rnic_mr *m = *pm;

		if (mr_kill(m) && !final) {
			pm = &m->orphan_next;
			continue;
		}
		*pm = m->orphan_next;
		if (m->mem) /* final, and the transport would not let it go */
			mem_mr_gone(m->mem);
		free(m);
	}
	while (*pp) {
		struct rnic_pd *pd = *pp;

		if (uroce_tp_dealloc_pd(pd->tp) && !final) {
			pp = &pd->orphan_next;
			continue;
		}
		*pp = pd->orphan_next;
		free(pd); /* final: the transport frees its PD with the device */
	}
}

void rnic_orphans_client_gone(struct uroce_rnic_client *c)
{
	struct uroce_rnic *nic = c->rnic;

	if (nic->orphan_pds || nic->orphan_mrs)
		rnic_orphans_retry(nic, false);
	/* An orphaned MR charged to c (its windows held it) that another client's window
	 * still holds: the charge goes on to that client, never to a freed one. */
	for (struct rnic_mr *m = nic->orphan_mrs; m; m = m->orphan_next)
		if (m->pin_owner == c)
			mr_charge_move(m, mr_other_holder(c, m));
}

/* DEALLOC_PD through any handle: the transport's PD goes unless in use (-EBUSY). */
int rnic_dealloc_pd(struct uroce_rnic_client *c, uint32_t h, struct rnic_pd *pd)
{
	int rc = pd->tp ? uroce_tp_dealloc_pd(pd->tp) : -EINVAL;

	if (rc)
		return rc;
	pd->tp = NULL;
	rnic_pd_release(c, h, pd);
	return 0;
}

void rnic_destroy_region(struct uroce_rnic_client *c, uint32_t h, struct rnic_region *r)
{
	/* Its mappings live on with their MRs (a mapping holds the file), shared no more. */
	for (struct uroce_rnic_mem *mem = r->mems; mem; mem = mem->region_next)
		mem->region = NULL;
	close(r->fd);
	rnic_obj_del(c, h);
	free(r);
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

/* ---- commands ------------------------------------------------------------------------- */

void rnic_cmd_hello(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
		    const void *payload, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_hello_req *req = payload;
	struct uroce_ctrl_hello_rep rep = {.version = UROCE_CTRL_VERSION};
	int rep_fds[3] = {-1, -1, -1};
	struct stat st;
	int rc;

	if (c->region.addr) {
		REPLY(c, h, -EINVAL, NULL, 0); /* once per connection */
		return;
	}
	rc = rnic_limit_client(c);
	if (rc) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	/* c->pid is the kernel's (SO_PEERCRED); the pid in the request is not believed. */
	memcpy(c->name, req->name, sizeof(c->name));
	c->name[sizeof(c->name) - 1] = 0;
	/* Header, the wake-up announcement, the CQ waiters, the async ring: each from its
	 * own line. */
	rep.wake_offset = UROCE_SHM_CACHELINE;
	rep.waiters_offset = rep.wake_offset + sizeof(struct uroce_shm_wake);
	rep.doorbells_offset = rep.waiters_offset + sizeof(struct uroce_shm_waiters);
	rep.async_ring_offset =
		(uint32_t)((rep.doorbells_offset + uroce_summary_bytes(UROCE_CTRL_DOORBELL_SLOTS) +
			    UROCE_SHM_CACHELINE - 1) &
			   ~(uint64_t)(UROCE_SHM_CACHELINE - 1));
	/* The client's ends of its signals first: HELLO fails whole or not at all (the
	 * region says a HELLO was accepted). Each end is the client's own open file. */
	rc = rnic_event_pipe_open(&c->async_pipe, &rep_fds[1]);
	if (rc)
		goto fail;
	rc = rnic_wake_add(c, &rep_fds[2]);
	if (rc)
		goto fail;
	rc = rnic_shm_create(nic, &c->region, "uroce-ctx",
			     rep.async_ring_offset +
				     uroce_ring_bytes(UROCE_CTRL_ASYNC_RING_SIZE,
						      sizeof(struct uroce_ctrl_async_event)),
			     UROCE_CTRL_REGION_CONTEXT);
	if (rc)
		goto fail;
	if (fstat(c->region.fd, &st) != 0) {
		rc = -errno;
		rnic_shm_close(nic, &c->region);
		goto fail;
	}
	c->region_dev = st.st_dev; /* what an importer's token must be (import.c) */
	c->region_ino = st.st_ino;
	uroce_ring_format((uint8_t *)c->region.addr + rep.async_ring_offset,
			  UROCE_CTRL_ASYNC_RING_SIZE, sizeof(struct uroce_ctrl_async_event));
	uroce_ring_open(&c->async_ring, (uint8_t *)c->region.addr + rep.async_ring_offset,
			c->region.size - rep.async_ring_offset, true);
	c->wake = (void *)((uint8_t *)c->region.addr + rep.wake_offset);
	c->waiters = (void *)((uint8_t *)c->region.addr + rep.waiters_offset);
	uroce_summary_open(&c->doorbells, (uint8_t *)c->region.addr + rep.doorbells_offset,
			   UROCE_CTRL_DOORBELL_SLOTS);
	rep.region_size = c->region.size;
	snprintf(rep.dev_name, sizeof(rep.dev_name), "uroce0");
	rep.node_guid = uroce_rnic_node_guid(nic);
	rep_fds[0] = c->region.fd;
	RNIC_INFO(nic, "client %s[%d] (#%llu) connected", c->name, c->pid,
		  (unsigned long long)c->id);
	uroce_rnic_reply(c, h, 0, &rep, sizeof(rep), rep_fds, 3);
	/* Sent (the host sends copies): the client's ends are the client's alone now. */
	close(rep_fds[1]);
	close(rep_fds[2]);
	return;
fail:
	if (rep_fds[1] >= 0)
		close(rep_fds[1]);
	if (rep_fds[2] >= 0)
		close(rep_fds[2]);
	rnic_event_pipe_close(&c->async_pipe);
	rnic_wake_del(c);
	REPLY(c, h, rc, NULL, 0);
}

void rnic_cmd_query_device(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			   const void *payload RNIC_UNUSED, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	struct uroce_ctrl_query_device_rep rep;

	uroce_tp_query_device(nic->dev, &rep.attr);
	snprintf(rep.attr.fw_ver, sizeof(rep.attr.fw_ver), "uroce %s", "0.1.0");
	rep.attr.node_guid = uroce_rnic_node_guid(nic);
	rep.attr.sys_image_guid = rep.attr.node_guid;
	rep.attr.vendor_part_id = 0x7572; /* "ur" */
	rep.attr.hw_ver = 0;
	REPLY(c, h, 0, &rep, sizeof(rep));
}

/* IBA 14.2.5.6 PortPhysicalState, as ibv_port_attr.phys_state carries it. */
enum {
	RNIC_PHYS_POLLING = 2,
	RNIC_PHYS_DISABLED = 3,
	RNIC_PHYS_LINK_UP = 5
};

void rnic_cmd_query_port(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			 const void *payload, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_query_port_req *req = payload;
	struct uroce_ctrl_query_port_rep rep;
	uint32_t speed = 0;
	enum uroce_rnic_link link = nic->ops->link(nic->io_ctx, &speed);

	if (req->port != 1) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	memset(&rep, 0, sizeof(rep));
	/* What rxe reports for an Ethernet netdev, with our link's state and MTU. */
	rep.attr.state = link == UROCE_RNIC_LINK_UP ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	rep.attr.max_mtu = IBV_MTU_4096;
	rep.attr.active_mtu = nic->active_mtu;
	rep.attr.gid_tbl_len = UROCE_TP_MAX_GID;
	rep.attr.port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	rep.attr.max_msg_sz = 0x80000000u;
	rep.attr.bad_pkey_cntr = 0;
	rep.attr.qkey_viol_cntr = 0;
	rep.attr.pkey_tbl_len = 1;
	rep.attr.lid = 0;
	rep.attr.sm_lid = 0;
	rep.attr.lmc = 0;
	rep.attr.max_vl_num = 1;
	rep.attr.sm_sl = 0;
	rep.attr.subnet_timeout = 0;
	rep.attr.init_type_reply = 0;
	rep.attr.active_width = 1; /* 1X */
	/* IB speed codes: 1 SDR 2.5, 2 DDR 5, 4 QDR 10, 8 FDR10, 16 FDR 14, 32 EDR 25 Gb/s
	 * per lane; pick the one nearest the Ethernet link speed. */
	rep.attr.active_speed = speed >= 25000 ? 32 :
				speed >= 14000 ? 16 :
				speed >= 10000 ? 8 :
				speed >= 5000  ? 2 :
						 1;
	/* rxe_query_port: LinkUp while active, else Polling while the netdev is up (ours:
	 * the port started, waiting for a carrier), else Disabled. */
	rep.attr.phys_state = link == UROCE_RNIC_LINK_UP   ? RNIC_PHYS_LINK_UP :
			      link == UROCE_RNIC_LINK_DOWN ? RNIC_PHYS_POLLING :
							     RNIC_PHYS_DISABLED;
	rep.attr.link_layer = IBV_LINK_LAYER_ETHERNET;
	REPLY(c, h, 0, &rep, sizeof(rep));
}

void rnic_cmd_query_gid(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const void *payload, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_query_gid_req *req = payload;
	struct uroce_ctrl_query_gid_rep rep = {.gid_type = IBV_GID_TYPE_ROCE_V2};

	if (req->port != 1 || req->index >= UROCE_TP_MAX_GID) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	if (req->index < nic->ngids)
		rep.gid = nic->gids[req->index];
	REPLY(c, h, 0, &rep, sizeof(rep)); /* an unused entry reads as the zero GID */
}

void rnic_reply_handle(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h, uint32_t handle)
{
	struct uroce_ctrl_handle rep = {.handle = handle};

	REPLY(c, h, handle ? 0 : -ENOMEM, &rep, sizeof(rep));
}

void rnic_cmd_alloc_pd(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
		       const void *payload RNIC_UNUSED, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	struct rnic_pd *pd;
	uint32_t handle;
	int rc;

	rc = rnic_limit_object(c, RNIC_OBJ_PD);
	if (rc) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd || !(pd->tp = uroce_tp_alloc_pd(nic->dev))) {
		free(pd);
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	pd->refs = 1;
	handle = rnic_obj_add(c, RNIC_OBJ_PD, pd);
	if (!handle) {
		uroce_tp_dealloc_pd(pd->tp);
		free(pd);
	}
	rnic_reply_handle(c, h, handle);
}

void rnic_cmd_map_region(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			 const void *payload, const int *fds)
{
	const struct uroce_ctrl_map_region_req *req = payload;
	int fd = fds[0];
	struct rnic_region *r;
	struct stat st;
	uint32_t handle;
	int rc;

	rc = rnic_limit_object(c, RNIC_OBJ_REGION);
	if (rc) {
		close(fd);
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	/* Only a memfd whose size is sealed: a file the client could truncate under our
	 * mapping would turn our next access into SIGBUS. */
	if (!uroce_shm_sealed(fd) || fstat(fd, &st) != 0 || (uint64_t)st.st_size != req->size ||
	    req->size == 0 || (req->size & ((uint64_t)sysconf(_SC_PAGESIZE) - 1))) {
		close(fd);
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	r = malloc(sizeof(*r));
	if (!r) {
		close(fd);
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	r->fd = fd;
	r->size = req->size;
	r->mems = NULL;
	handle = rnic_obj_add(c, RNIC_OBJ_REGION, r);
	if (!handle) {
		close(fd);
		free(r);
	}
	rnic_reply_handle(c, h, handle);
}

void rnic_cmd_region_fd(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_handle *req = payload;
	struct rnic_region *r = rnic_obj_get(c, req->handle, RNIC_OBJ_REGION);

	if (!r) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	/* The client's own memfd: it gave it to us (MAP_REGION), it gets it back. */
	uroce_rnic_reply(c, h, 0, NULL, 0, &r->fd, 1);
}

/* The region of an MR whose pieces are one run of it (each where the last ended), and the
 * run's offset in *@p offset; NULL when the MR is stitched from several. The pieces have
 * been checked to lie in their regions. */
static struct rnic_region *mr_single_run(struct uroce_rnic_client *c,
					 const struct uroce_ctrl_reg_mr_req *req, uint64_t *offset)
{
	uint64_t next = req->seg[0].offset;

	for (uint32_t i = 0; i < req->nseg; i++) {
		if (req->seg[i].region != req->seg[0].region || req->seg[i].offset != next)
			return NULL;
		next += req->seg[i].length; /* within the region: cannot wrap */
	}
	*offset = req->seg[0].offset;
	return rnic_obj_get(c, req->seg[0].region, RNIC_OBJ_REGION);
}

static struct uroce_rnic_mem *mem_new(struct uroce_rnic *nic, void *map, uint64_t len)
{
	struct uroce_rnic_mem *mem = calloc(1, sizeof(*mem));

	if (!mem) {
		munmap(map, len);
		return NULL;
	}
	mem->nic = nic;
	mem->map = map;
	mem->map_len = len;
	mem->mrs = 1;
	nic->mappings++;
	return mem;
}

/* The mapping of bytes [@p offset, @p offset + @p len) of region @p r: one that an MR
 * made before, when it covers them, else a new one, kept on the region's list. MRs over
 * the same buffer (UCX's registration cache, perftest's re-registrations) so share one
 * mapping. NULL with errno. */
static struct uroce_rnic_mem *mem_of_run(struct uroce_rnic *nic, struct rnic_region *r,
					 uint64_t offset, uint64_t len, uint64_t *at)
{
	struct uroce_rnic_mem *mem;
	void *map;

	for (mem = r->mems; mem; mem = mem->region_next)
		if (offset >= mem->region_off &&
		    uroce_ctrl_range_within(offset - mem->region_off, len, mem->map_len)) {
			mem->mrs++;
			*at = offset - mem->region_off;
			return mem;
		}
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, (off_t)offset);
	if (map == MAP_FAILED || !(mem = mem_new(nic, map, len)))
		return NULL;
	mem->region = r;
	mem->region_off = offset;
	mem->region_next = r->mems;
	r->mems = mem;
	*at = 0;
	return mem;
}

/* A mapping stitched from the MR's pieces: the whole span reserved, then each piece mapped
 * over it, so the MR is contiguous in our address space as in the application's. What is
 * mapped is exactly what was reserved: the pieces sum (unwrapped) to @p total. NULL with
 * errno. */
static struct uroce_rnic_mem *mem_of_pieces(struct uroce_rnic_client *c,
					    const struct uroce_ctrl_reg_mr_req *req,
					    uint64_t total)
{
	uint8_t *base;
	uint64_t at = 0;
	int err;

	base = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return NULL;
	for (uint32_t i = 0; i < req->nseg; i++) {
		const struct uroce_ctrl_mr_seg *s = &req->seg[i];
		struct rnic_region *r = rnic_obj_get(c, s->region, RNIC_OBJ_REGION);

		if (mmap(base + at, s->length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			 r->fd, (off_t)s->offset) == MAP_FAILED) {
			err = errno;
			munmap(base, total);
			errno = err;
			return NULL;
		}
		at += s->length;
	}
	return mem_new(c->rnic, base, total);
}

void rnic_cmd_reg_mr(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
		     const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_reg_mr_req *req = payload;
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
	struct uroce_tp_pd *pd = rnic_pd_get(c, req->pd);
	struct uroce_ctrl_reg_mr_rep rep = {0};
	uint64_t start, end, total = 0, at = 0, run_off = 0;
	struct rnic_region *run;
	struct rnic_mr *m = NULL;
	uint32_t i, handle;
	int rc = -EINVAL;

	if (!pd || req->length == 0 ||
	    !uroce_ctrl_page_span(req->addr, req->length, ps, &start, &end) ||
	    !uroce_ctrl_add(req->iova, req->length, &at))
		goto fail;
	/* Each piece inside its region, and their sum (unwrapped) exactly the span. */
	for (i = 0; i < req->nseg; i++) {
		const struct uroce_ctrl_mr_seg *s = &req->seg[i];
		struct rnic_region *r = rnic_obj_get(c, s->region, RNIC_OBJ_REGION);

		if (!r || s->length == 0 || ((s->offset | s->length) & (ps - 1)) ||
		    !uroce_ctrl_range_within(s->offset, s->length, r->size) ||
		    !uroce_ctrl_add(total, s->length, &total))
			goto fail;
	}
	if (total != end - start)
		goto fail;
	run = mr_single_run(c, req, &run_off);
	m = calloc(1, sizeof(*m));
	if (!m) {
		rc = -ENOMEM;
		goto fail;
	}
	/* Charged whether or not its mapping turns out shared: a shared one outlives the MR
	 * that made it, so each MR pays for what it could hold alone. */
	m->nmaps = run ? 1 : req->nseg;
	m->span = total;
	rc = rnic_limit_object(c, RNIC_OBJ_MR);
	if (rc == 0)
		rc = rnic_limit_pin(c, total);
	if (rc == 0)
		rc = rnic_limit_maps(c, m->nmaps);
	if (rc)
		goto fail;
	at = 0;
	m->mem = run ? mem_of_run(c->rnic, run, run_off, total, &at) : mem_of_pieces(c, req, total);
	if (!m->mem) {
		rc = -errno;
		goto fail;
	}
	m->refs = 1;
	m->iova = req->iova;
	m->length = req->length;
	m->access = req->access;
	m->tp = uroce_tp_reg_mr(pd, req->iova, (uint8_t *)m->mem->map + at + (req->addr - start),
				req->length, req->access);
	if (!m->tp) {
		rc = -errno;
		goto fail_mem;
	}
	handle = rnic_obj_add(c, RNIC_OBJ_MR, m);
	if (!handle) {
		uroce_tp_dereg_mr(m->tp);
		rc = -ENOMEM;
		goto fail_mem;
	}
	/* Frames may point into it (ops->tx_zc); it stays mapped while one does. */
	uroce_tp_mr_set_ctx(m->tp, m->mem);
	mr_charge_move(m, c);
	rep.mr = handle;
	uroce_tp_mr_keys(m->tp, &rep.lkey, &rep.rkey);
	REPLY(c, h, 0, &rep, sizeof(rep));
	return;
fail_mem:
	mem_mr_gone(m->mem);
fail:
	free(m);
	REPLY(c, h, rc, NULL, 0);
}

void rnic_cmd_create_channel(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			     const void *payload RNIC_UNUSED, const int *fds RNIC_UNUSED)
{
	struct uroce_ctrl_handle rep;
	struct rnic_channel *ch;
	int client_fd, rc;

	rc = rnic_limit_object(c, RNIC_OBJ_CHANNEL);
	if (rc) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	/* The application's read end is its own: it decides with fcntl whether its reads
	 * block; our writes never do (rnic_event_pipe). */
	rc = rnic_event_pipe_open(&ch->pipe, &client_fd);
	if (rc) {
		free(ch);
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	rep.handle = rnic_obj_add(c, RNIC_OBJ_CHANNEL, ch);
	if (!rep.handle) {
		close(client_fd);
		rnic_event_pipe_close(&ch->pipe);
		free(ch);
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	rep.reserved = 0;
	uroce_rnic_reply(c, h, 0, &rep, sizeof(rep), &client_fd, 1);
	close(client_fd);
}

/* A CQ region: the header, then struct uroce_ctrl_cq_ctl, then the ring (create and resize). */
#define CQ_CTL_OFFSET 64u
#define CQ_RING_OFFSET 128u

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

void rnic_cmd_create_qp(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const void *payload, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_create_qp_req *req = payload;
	struct uroce_tp_pd *pd = rnic_pd_get(c, req->pd);
	struct rnic_cq *scq = rnic_obj_get(c, req->send_cq, RNIC_OBJ_CQ);
	struct rnic_cq *rcq = rnic_obj_get(c, req->recv_cq, RNIC_OBJ_CQ);
	struct rnic_srq *srq = req->srq ? rnic_obj_get(c, req->srq, RNIC_OBJ_SRQ) : NULL;
	struct rnic_xrcd *xrcd = req->xrcd ? rnic_obj_get(c, req->xrcd, RNIC_OBJ_XRCD) : NULL;
	bool xrc_tgt = req->qp_type == IBV_QPT_XRC_RECV;
	bool rcq_ok = rcq || (!req->recv_cq && req->qp_type == IBV_QPT_XRC_SEND);
	struct uroce_ctrl_create_qp_rep rep = {.sq_offset = RNIC_QUEUE_RING_OFFSET};
	struct uroce_tp_qp_init init;
	uint32_t sq_size, rq_size = 0;
	uint64_t bytes;
	struct rnic_qp *q;
	int rc;

	/* An XRC target has only its domain; an XRC initiator may go without a receive CQ
	 * (it receives nothing); everything else has a PD and both CQs. What else a type
	 * must not have, the transport refuses. */
	if ((req->srq && !srq) || (req->xrcd && !xrcd) ||
	    (xrc_tgt ? (req->pd || req->send_cq || req->recv_cq || !xrcd)
		     : (!pd || !scq || !rcq_ok))) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	rc = rnic_limit_object(c, RNIC_OBJ_QP);
	if (rc) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	/* A raw packet QP sends any frame and its flows can see every tenant's: Linux
	 * gives it only to CAP_NET_RAW over the device's namespace (EPERM otherwise), which
	 * the client proved, or not, with PROVE_NET_RAW (rights.c). */
	if (req->qp_type == IBV_QPT_RAW_PACKET && !c->net_raw) {
		REPLY(c, h, -EPERM, NULL, 0);
		return;
	}
	memset(&init, 0, sizeof(init));
	init.qp_type = (enum ibv_qp_type)req->qp_type;
	init.send_cq = scq ? scq->tp : NULL;
	init.recv_cq = rcq ? rcq->tp : NULL;
	init.srq = srq ? srq->tp : NULL;
	init.xrcd = xrcd ? xrcd->tp : NULL;
	init.cap = req->cap;
	init.sq_sig_all = req->sq_sig_all != 0;
	q = calloc(1, sizeof(*q));
	if (!q) {
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	q->tp = uroce_tp_create_qp(pd, &init);
	if (!q->tp) {
		rc = -errno;
		free(q);
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	rep.cap = init.cap;
	sq_size = uroce_tp_pow2_at_least(init.cap.max_send_wr ? init.cap.max_send_wr : 1);
	bytes = rep.sq_offset + uroce_ring_bytes(sq_size, sizeof(struct uroce_ctrl_send_wqe));
	if (!srq) {
		rq_size = uroce_tp_pow2_at_least(init.cap.max_recv_wr ? init.cap.max_recv_wr : 1);
		bytes = (bytes + UROCE_SHM_CACHELINE - 1) & ~(uint64_t)(UROCE_SHM_CACHELINE - 1);
		rep.rq_offset = (uint32_t)bytes;
		bytes += uroce_ring_bytes(rq_size, sizeof(struct uroce_ctrl_recv_wqe));
	}
	rc = rnic_shm_create(nic, &q->region, "uroce-qp", bytes, UROCE_CTRL_REGION_QP);
	if (rc == 0)
		rc = rnic_list_add((void ***)&nic->qps, &nic->nqps, &nic->cap_qps, q, &q->idx);
	if (rc) {
		if (q->region.addr)
			rnic_shm_close(nic, &q->region);
		uroce_tp_destroy_qp(q->tp);
		free(q);
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	uroce_ring_format((uint8_t *)q->region.addr + rep.sq_offset, sq_size,
			  sizeof(struct uroce_ctrl_send_wqe));
	uroce_ring_open(&q->sq, (uint8_t *)q->region.addr + rep.sq_offset,
			q->region.size - rep.sq_offset, false);
	if (!srq) {
		uroce_ring_format((uint8_t *)q->region.addr + rep.rq_offset, rq_size,
				  sizeof(struct uroce_ctrl_recv_wqe));
		uroce_ring_open(&q->rq, (uint8_t *)q->region.addr + rep.rq_offset,
				q->region.size - rep.rq_offset, false);
	}
	q->ctl = (void *)((uint8_t *)q->region.addr + UROCE_CTRL_QUEUE_CTL_OFFSET);
	q->client = c;
	q->srq = srq;
	q->send_cq = scq;
	q->recv_cq = rcq;
	q->xrcd = xrcd;
	q->handles = 1;
	uroce_tp_qp_set_user(q->tp, q);
	rc = rnic_doorbell_slot_get(c, q, NULL);
	q->handle = rep.qp = rc ? 0 : rnic_obj_add(c, RNIC_OBJ_QP, q);
	if (!q->handle) {
		if (rc == 0)
			rnic_doorbell_slot_put(c, q, NULL);
		qp_unlist(q);
		uroce_tp_destroy_qp(q->tp);
		rnic_shm_close(nic, &q->region);
		free(q);
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	rep.qpn = uroce_tp_qp_num(q->tp);
	rep.region_size = q->region.size;
	uroce_rnic_reply(c, h, 0, &rep, sizeof(rep), &q->region.fd, 1);
}

int rnic_resolve(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h, const void *payload,
		 const struct ibv_ah_attr *ah, uint8_t mac[6])
{
	struct uroce_rnic *nic = c->rnic;
	int rc;

	/* RoCE has no LIDs: every address is a GRH (rdma-core's rxe says EINVAL too). */
	if (!ah->is_global || ah->port_num > 1)
		return -EINVAL;
	rc = uroce_ip_resolve(nic->ip, ah->grh.dgid.raw, rnic_now(nic), mac, c->id);
	RNIC_DBG(nic, "client %s[%d]: next hop of GID %02x%02x..%02x%02x%02x%02x: %s", c->name,
		 c->pid, ah->grh.dgid.raw[0], ah->grh.dgid.raw[1], ah->grh.dgid.raw[12],
		 ah->grh.dgid.raw[13], ah->grh.dgid.raw[14], ah->grh.dgid.raw[15],
		 rc == 0       ? "known" :
		 rc == -EAGAIN ? "resolving" :
				 strerror(-rc));
	if (rc == 0)
		return 1;
	if (rc != -EAGAIN)
		return rc;
	/* The whole request (header and payload) is handled again once the neighbour is
	 * known. */
	memcpy(c->pending.msg, h, sizeof(*h));
	memcpy(c->pending.msg + sizeof(*h), payload, h->len - sizeof(*h));
	c->pending.len = h->len;
	c->pending.active = true;
	return 0;
}

void rnic_cmd_modify_qp(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const void *payload, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_modify_qp_req *req = payload;
	struct rnic_qp *q = rnic_obj_get(c, req->qp, RNIC_OBJ_QP);
	struct ibv_qp_attr attr = req->attr;
	uint8_t mac[6], *dmac = NULL;
	bool to_error;
	int rc;

	if (!q) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	/* A controlled Q_Key (high bit set, IBA 10.2.5; the GSI's is 0x80010000) is the
	 * kernel's to give: Linux asks for CAP_NET_RAW. Here root, the administrators and
	 * a client that proved CAP_NET_RAW may; anyone else could forge CM messages for
	 * other tenants' connections. */
	if ((req->mask & IBV_QP_QKEY) && (attr.qkey & 0x80000000u) && c->uid != 0 && !c->admin &&
	    !c->net_raw) {
		nic->cnt.qkey_refused++;
		REPLY(c, h, -EPERM, NULL, 0);
		return;
	}
	if (req->mask & IBV_QP_AV) {
		rc = rnic_resolve(c, h, req, &attr.ah_attr, mac);
		if (rc == 0)
			return; /* it waits in c->pending (rnic_resolve) */
		if (rc < 0) {
			REPLY(c, h, rc, NULL, 0);
			return;
		}
		dmac = mac;
	}
	/* rxe: the path MTU cannot exceed what the port carries. */
	if ((req->mask & IBV_QP_PATH_MTU) && attr.path_mtu > nic->active_mtu)
		attr.path_mtu = nic->active_mtu;
	/* The error state flushes every WR posted before this call, those still in the rings
	 * too (a kernel RNIC's queues hold them already), and their completions are in the
	 * CQ rings when we answer: a WR posted after ibv_modify_qp returns never completes
	 * before them. Ceph's messenger relies on it: it destroys a QP once a SEND posted
	 * after the move to ERR has completed and the receive CQ polls empty, and gives the
	 * QP's receive buffers to other QPs. */
	to_error = (req->mask & IBV_QP_STATE) && attr.qp_state == IBV_QPS_ERR;
	if (to_error)
		rnic_client_catch_up(c);
	rc = uroce_tp_modify_qp(q->tp, &attr, req->mask, dmac, rnic_now(nic));
	if (rc == 0 && to_error)
		(void)rnic_completions(nic);
	if (rc == 0 && (req->mask & IBV_QP_STATE) && attr.qp_state == IBV_QPS_RESET) {
		/* RESET discards every queued WQE (IBA 10.3.1): what the application posted
		 * and we had not taken yet is dropped with them and counts as retired. */
		uint32_t n;

		while ((n = uroce_ring_cons_avail(&q->sq)) != 0) {
			uroce_ring_cons_release(&q->sq, n);
			q->sq_taken += n;
		}
		while (!q->srq && (n = uroce_ring_cons_avail(&q->rq)) != 0) {
			uroce_ring_cons_release(&q->rq, n);
			q->rq_taken += n;
		}
		rnic_qp_publish_retired(q);
	}
	REPLY(c, h, rc, NULL, 0);
}

void rnic_cmd_query_qp(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
		       const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_query_qp_req *req = payload;
	struct rnic_qp *q = rnic_obj_get(c, req->qp, RNIC_OBJ_QP);
	struct uroce_ctrl_query_qp_rep rep;
	struct ibv_qp_init_attr init;
	int rc;

	if (!q) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	memset(&rep, 0, sizeof(rep));
	rc = uroce_tp_query_qp(q->tp, &rep.attr, &init);
	rep.cap = init.cap;
	rep.qp_type = init.qp_type;
	rep.sq_sig_all = (uint32_t)init.sq_sig_all;
	REPLY(c, h, rc, &rep, sizeof(rep));
}

void rnic_cmd_create_ah(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_create_ah_req *req = payload;
	struct uroce_tp_pd *pd = rnic_pd_get(c, req->pd);
	struct uroce_tp_ah *ah;
	uint8_t mac[6];
	uint32_t handle;
	int rc;

	if (!pd) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	rc = rnic_limit_object(c, RNIC_OBJ_AH);
	if (rc) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	rc = rnic_resolve(c, h, req, &req->attr, mac);
	if (rc == 0)
		return; /* it waits in c->pending (rnic_resolve) */
	if (rc < 0) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	ah = uroce_tp_create_ah(pd, &req->attr, mac);
	if (!ah) {
		REPLY(c, h, -errno, NULL, 0);
		return;
	}
	handle = rnic_obj_add(c, RNIC_OBJ_AH, ah);
	if (!handle)
		uroce_tp_destroy_ah(ah);
	rnic_reply_handle(c, h, handle);
}

/* CREATE_FLOW: the rule as verbs laid it out, copied out of the message into memory
 * aligned for its structs; the transport checks every size and field in it, within the
 * bytes the client sent. */
void rnic_cmd_create_flow(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			  const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_create_flow_req *req = payload;
	struct rnic_qp *q = rnic_obj_get(c, req->qp, RNIC_OBJ_QP);
	union {
		struct ibv_flow_attr attr;
		uint8_t b[UROCE_CTRL_FLOW_ATTR_MAX];
	} r;
	struct rnic_flow *f;
	uint32_t handle;
	int rc;

	if (!q || req->attr_size < sizeof(r.attr) || req->attr_size > sizeof(r.b)) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	/* Linux's ib_uverbs_ex_create_flow asks for CAP_NET_RAW before anything else. */
	if (!c->net_raw) {
		REPLY(c, h, -EPERM, NULL, 0);
		return;
	}
	memcpy(r.b, req->attr, req->attr_size);
	rc = rnic_limit_object(c, RNIC_OBJ_FLOW);
	if (rc) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	f->qp = q;
	f->tp = uroce_tp_create_flow(q->tp, &r.attr, req->attr_size);
	if (!f->tp) {
		rc = -errno;
		free(f);
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	handle = rnic_obj_add(c, RNIC_OBJ_FLOW, f);
	if (!handle) {
		uroce_tp_destroy_flow(f->tp);
		free(f);
	} else {
		q->nflows++;
	}
	rnic_reply_handle(c, h, handle);
}

/* RESOLVE_L2: what CREATE_AH resolves, answered instead of kept in an AH. */
void rnic_cmd_resolve_l2(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			 const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_resolve_l2_req *req = payload;
	struct uroce_ctrl_resolve_l2_rep rep = {0};
	int rc;

	if (req->attr.grh.sgid_index >= c->rnic->ngids) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	rc = rnic_resolve(c, h, req, &req->attr, rep.mac);
	if (rc == 0)
		return; /* it waits in c->pending (rnic_resolve) */
	if (rc < 0) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	rep.vid = c->rnic->conf.port.vlan ? (uint16_t)c->rnic->conf.port.vlan : 0xffff;
	REPLY(c, h, 0, &rep, sizeof(rep));
}

void rnic_cmd_rereg_mr(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
		       const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_rereg_mr_req *req = payload;
	struct rnic_mr *mr = rnic_obj_get(c, req->mr, RNIC_OBJ_MR);
	struct rnic_mr *to = rnic_obj_get(c, req->to, RNIC_OBJ_MR);

	if (!mr || !to || mr == to || !mr->tp || !to->tp) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	REPLY(c, h, uroce_tp_mr_swap_keys(mr->tp, to->tp), NULL, 0);
}

/* ALLOC_MW: the window's handle and its first R_Key. Binds come through the QP's ring
 * (datapath.c): the transport checks the window's PD against the QP's, so a client can
 * only name windows of its own PDs there. */
void rnic_cmd_alloc_mw(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
		       const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_alloc_mw_req *req = payload;
	struct uroce_tp_pd *pd = rnic_pd_get(c, req->pd);
	struct uroce_ctrl_alloc_mw_rep rep;
	struct uroce_tp_mw *mw;
	int rc;

	if (!pd) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	rc = rnic_limit_object(c, RNIC_OBJ_MW);
	if (rc) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	mw = uroce_tp_alloc_mw(pd, (enum ibv_mw_type)req->type);
	if (!mw) {
		REPLY(c, h, -errno, NULL, 0);
		return;
	}
	rep.mw = rnic_obj_add(c, RNIC_OBJ_MW, mw);
	if (!rep.mw) {
		uroce_tp_dealloc_mw(mw);
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	rep.rkey = uroce_tp_mw_rkey(mw);
	REPLY(c, h, 0, &rep, sizeof(rep));
}

void rnic_cmd_stats(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
		    const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_stats_req *req = payload;
	/* As many counters as one reply carries; on the heap, as it is a rare command. */
	const size_t size = UROCE_CTRL_MSG_MAX - sizeof(struct uroce_ctrl_hdr);
	struct uroce_ctrl_stats_rep *rep = malloc(size);
	uint32_t max = (uint32_t)((size - sizeof(*rep)) / sizeof(struct uroce_ctrl_stat));
	int n;

	if (!rep) {
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	n = rnic_stats(c->rnic, c, req->flags, rep->stat, max);
	rep->count = (uint32_t)n;
	rep->reserved = 0;
	REPLY(c, h, 0, rep, (uint32_t)(sizeof(*rep) + (size_t)n * sizeof(struct uroce_ctrl_stat)));
	free(rep);
}

void rnic_cmd_admin(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
		    const void *payload, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_admin_req *req = payload;
	int rc;

	if (req->op == UROCE_CTRL_ADMIN_CM_DROP) {
		rnic_cm_drop(nic, req->value >> 16, req->value & 0xffff);
		rc = 0;
	} else {
		/* CAPTURE_STOP, FAULT, LOG_LEVEL: the host's I/O and logs. */
		rc = nic->ops->admin(nic->io_ctx, req);
	}
	REPLY(c, h, rc, NULL, 0);
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

void rnic_cmd_attach_mcast(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			   const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_mcast_req *r = payload;
	struct rnic_qp *q = rnic_obj_get(c, r->qp, RNIC_OBJ_QP);

	REPLY(c, h, q ? rnic_mcast_attach(q, &r->gid) : -EINVAL, NULL, 0);
}

void rnic_cmd_detach_mcast(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			   const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_mcast_req *r = payload;
	struct rnic_qp *q = rnic_obj_get(c, r->qp, RNIC_OBJ_QP);

	REPLY(c, h, q ? rnic_mcast_detach(q, &r->gid) : -EINVAL, NULL, 0);
}

void rnic_cmd_capture_start(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			    const void *payload RNIC_UNUSED, const int *fds)
{
	REPLY(c, h, c->rnic->ops->capture_start(c->rnic->io_ctx, fds[0]), NULL, 0);
}
