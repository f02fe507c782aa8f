/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory: protection domains, the application's memory regions (sealed memfds it maps
 * for us, MAP_REGION), the MRs registered in them and the memory windows bound to those,
 * and how long each lives: an MR's pages stay mapped while zero-copy frames point into
 * them, and a PD or an MR that another client still uses outlives its last handle (the
 * orphans).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rnic_internal.h"

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

/* ---- commands ------------------------------------------------------------------------- */

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
