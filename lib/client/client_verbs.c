/* SPDX-License-Identifier: BSD-3-Clause */
/* The verbs objects on the client side, the slow path (mlx4's verbs.c): PD, completion
 * channel, CQ, SRQ, XRC domain, QP and AH, each made, changed and destroyed through the
 * daemon; MRs and memory windows are client_mr.c's. The data path is client_qp.c (post
 * send/recv into shared rings) and client_cq.c (poll a CQ's shared ring). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_internal.h"

/* Errors: control calls return -errno; verbs' int calls return positive errno and
 * pointer calls NULL with errno. */
void *cl_fail_null(int rc)
{
	errno = rc < 0 ? -rc : rc;
	return NULL;
}

/* The client's side of an object the daemon has just made (@p handle): @p size bytes,
 * zeroed. When they cannot be had, the daemon's object goes again (@p cmd) and NULL is
 * returned with errno ENOMEM: a create that fails leaves nothing behind. */
void *cl_obj_alloc(struct uroce_client_ctx *ctx, size_t size, uint32_t cmd, uint32_t handle)
{
	void *obj = calloc(1, size);

	if (!obj) {
		cl_release(ctx, cmd, handle);
		errno = ENOMEM;
	}
	return obj;
}

/*
 * The one release path of every object: the daemon's object goes first (@p cmd, @p
 * handle), since the daemon may refuse (EBUSY while another object uses it; nothing
 * changes then); only once it has gone does this side let go of the object's entry in the
 * context's table and of the mapping of @p region, for the objects that have one (CQ,
 * SRQ, QP; NULL for the others). The caller frees what it holds after.
 * @return 0 or a positive errno, as verbs.
 */
int cl_obj_release(struct uroce_client_ctx *ctx, uint32_t cmd, uint32_t handle,
		   struct uroce_shm_region *region)
{
	int rc = cl_release(ctx, cmd, handle);

	if (rc)
		return -rc;
	if (region) {
		cl_obj_del(ctx, handle);
		uroce_shm_close(region);
	}
	return 0;
}

/* cl_obj_release of an object that holds nothing more than its memory, @p obj, then freed. */
int cl_obj_destroy(struct uroce_client_ctx *ctx, uint32_t cmd, uint32_t handle, void *obj)
{
	int rc = cl_obj_release(ctx, cmd, handle, NULL);

	if (rc == 0)
		free(obj);
	return rc;
}

/* ---- PD ---------------------------------------------------------------------------- */

struct uroce_client_pd *uroce_client_alloc_pd(struct uroce_client_ctx *ctx)
{
	struct uroce_ctrl_handle rep;
	struct uroce_client_pd *pd;
	int rc = cl_call(ctx, UROCE_CTRL_ALLOC_PD, NULL, 0, NULL, 0, &rep, sizeof(rep), NULL, 0);

	if (rc)
		return cl_fail_null(rc);
	pd = cl_obj_alloc(ctx, sizeof(*pd), UROCE_CTRL_DEALLOC_PD, rep.handle);
	if (!pd)
		return NULL;
	pd->ctx = ctx;
	pd->handle = rep.handle;
	pd->ibv.context = ctx->ibv;
	pd->ibv.handle = rep.handle;
	return pd;
}

int uroce_client_dealloc_pd(struct uroce_client_pd *pd)
{
	return cl_obj_destroy(pd->ctx, UROCE_CTRL_DEALLOC_PD, pd->handle, pd);
}

/* ---- importing -------------------------------------------------------------------- */

int uroce_client_token(const struct uroce_client_ctx *ctx)
{
	char path[32];

	/* O_PATH: the same file (the daemon knows it by device and inode), but no read,
	 * write or ioctl reaches it through this descriptor. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", ctx->region.fd);
	return open(path, O_PATH | O_CLOEXEC);
}

int uroce_client_import_context(struct uroce_client_ctx *ctx, int token)
{
	return cl_call(ctx, UROCE_CTRL_IMPORT_CONTEXT, NULL, 0, &token, 1, NULL, 0, NULL, 0);
}

struct uroce_client_pd *uroce_client_import_pd(struct uroce_client_ctx *ctx, uint32_t handle)
{
	struct uroce_ctrl_handle req = {.handle = handle}, rep;
	struct uroce_client_pd *pd;
	int rc = cl_call(ctx, UROCE_CTRL_IMPORT_PD, &req, sizeof(req), NULL, 0, &rep, sizeof(rep),
			 NULL, 0);

	if (rc)
		return cl_fail_null(rc);
	pd = cl_obj_alloc(ctx, sizeof(*pd), UROCE_CTRL_UNIMPORT_PD, rep.handle);
	if (!pd)
		return NULL;
	pd->ctx = ctx;
	pd->handle = rep.handle;
	pd->ibv.context = ctx->ibv;
	pd->ibv.handle = handle;
	return pd;
}

void uroce_client_unimport_pd(struct uroce_client_pd *pd)
{
	/* Only a daemon gone fails this, and it has released everything then. */
	(void)cl_release(pd->ctx, UROCE_CTRL_UNIMPORT_PD, pd->handle);
	free(pd);
}

struct uroce_client_mr *uroce_client_import_mr(struct uroce_client_pd *pd, uint32_t handle)
{
	struct uroce_ctrl_handle req = {.handle = handle};
	struct uroce_ctrl_import_mr_rep rep;
	struct uroce_client_mr *mr;
	int rc = cl_call(pd->ctx, UROCE_CTRL_IMPORT_MR, &req, sizeof(req), NULL, 0, &rep,
			 sizeof(rep), NULL, 0);

	if (rc)
		return cl_fail_null(rc);
	mr = cl_obj_alloc(pd->ctx, sizeof(*mr), UROCE_CTRL_UNIMPORT_MR, rep.mr);
	if (!mr)
		return NULL;
	mr->ctx = pd->ctx;
	mr->handle = rep.mr;
	mr->iova = rep.iova;
	mr->access = rep.access;
	mr->ibv.context = pd->ctx->ibv;
	mr->ibv.pd = &pd->ibv;
	mr->ibv.addr = NULL; /* as rdma-core's: the pages may be another process's */
	mr->ibv.length = rep.length;
	mr->ibv.handle = handle;
	mr->ibv.lkey = rep.lkey;
	mr->ibv.rkey = rep.rkey;
	return mr;
}

void uroce_client_unimport_mr(struct uroce_client_mr *mr)
{
	(void)cl_release(mr->ctx, UROCE_CTRL_UNIMPORT_MR, mr->handle);
	free(mr);
}

/* ---- completion channels and CQs --------------------------------------------------- */

struct uroce_client_channel *uroce_client_create_channel(struct uroce_client_ctx *ctx)
{
	struct uroce_ctrl_handle rep;
	struct uroce_client_channel *ch;
	int fd, rc;

	rc = cl_call(ctx, UROCE_CTRL_CREATE_CHANNEL, NULL, 0, NULL, 0, &rep, sizeof(rep), &fd, 1);
	if (rc)
		return cl_fail_null(rc);
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		close(fd);
		cl_release(ctx, UROCE_CTRL_DESTROY_CHANNEL, rep.handle);
		return cl_fail_null(ENOMEM);
	}
	ch->ctx = ctx;
	ch->handle = rep.handle;
	ch->ibv.context = ctx->ibv;
	ch->pipe = fd;
	rc = cl_event_fd_init(ctx, fd, &ch->ibv.fd);
	if (rc) {
		if (ch->ibv.fd >= 0)
			close(ch->ibv.fd);
		close(fd);
		cl_release(ctx, UROCE_CTRL_DESTROY_CHANNEL, rep.handle);
		free(ch);
		return cl_fail_null(-rc);
	}
	return ch;
}

int uroce_client_destroy_channel(struct uroce_client_channel *ch)
{
	int rc = cl_obj_release(ch->ctx, UROCE_CTRL_DESTROY_CHANNEL, ch->handle, NULL);

	if (rc)
		return rc; /* EBUSY while CQs use it, like verbs */
	close(ch->ibv.fd);
	close(ch->pipe);
	free(ch);
	return 0;
}

int uroce_client_get_cq_event(struct uroce_client_channel *ch, struct uroce_client_cq **out)
{
	struct uroce_client_ctx *ctx = ch->ctx;
	size_t i;
	int rc;

	if (ctx->forked)
		return EIO; /* the parent's channel (fork.c) */
	for (;;) {
		/* A thread blocked here wakes when the daemon dies, as the kernel wakes a
		 * disassociated device's readers with EIO. */
		rc = cl_event_take(ch->pipe, ch->ibv.fd);
		if (rc)
			return rc < 0 ? EIO : rc;
		/* Which CQ: the one whose shared event count is ahead of what we took. The
		 * daemon increments the count before it writes the pipe, so one is found
		 * unless the CQ was destroyed since: its event goes with it, as the kernel
		 * drops a destroyed CQ's events from its channel, and the next is waited for. */
		pthread_mutex_lock(&ctx->lock);
		for (i = 0; i < ctx->nobjs; i++) {
			struct uroce_client_cq *cq = ctx->objs[i].obj;

			if (ctx->objs[i].type != UROCE_CTRL_REGION_CQ || cq->channel != ch)
				continue;
			/* acquire: pairs with the daemon's release increment (not strictly
			 * needed: the pipe read already orders), kept for clarity. */
			if (atomic_load_explicit(&cq->ctl->events, memory_order_acquire) !=
			    cq->events_seen) {
				cq->events_seen++;
				*out = cq;
				pthread_mutex_unlock(&ctx->lock);
				return 0;
			}
		}
		pthread_mutex_unlock(&ctx->lock);
	}
}

void uroce_client_ack_cq_events(struct uroce_client_cq *cq, unsigned int n)
{
	pthread_spin_lock(&cq->lock);
	cq->events_acked += n;
	pthread_spin_unlock(&cq->lock);
}

struct uroce_client_cq *uroce_client_create_cq(struct uroce_client_ctx *ctx, int cqe,
					       struct uroce_client_channel *ch,
					       int comp_vector)
{
	struct uroce_ctrl_create_cq_req req = {
		.cqe = cqe, .channel = ch ? ch->handle : 0, .comp_vector = comp_vector};
	struct uroce_ctrl_create_cq_rep rep;
	struct uroce_client_cq *cq;
	int fd, rc;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	rc = cl_call(ctx, UROCE_CTRL_CREATE_CQ, &req, sizeof(req), NULL, 0, &rep, sizeof(rep), &fd,
		     1);
	if (rc) {
		free(cq);
		return cl_fail_null(rc);
	}
	cq->ctx = ctx;
	cq->handle = rep.cq;
	rc = cl_attach_region(&cq->region, fd, UROCE_CTRL_REGION_CQ);
	if (rc) {
		close(fd);
		goto fail;
	}
	if (rep.ctl_offset + sizeof(*cq->ctl) > cq->region.size ||
	    rep.ring_offset >= cq->region.size ||
	    uroce_ring_open(&cq->ring, (uint8_t *)cq->region.addr + rep.ring_offset,
			    cq->region.size - rep.ring_offset, false) != 0 ||
	    cq->ring.elem_size != sizeof(struct ibv_wc)) {
		rc = -EPROTO;
		goto fail;
	}
	cq->ctl = (void *)((uint8_t *)cq->region.addr + rep.ctl_offset);
	cq->events_seen = atomic_load_explicit(&cq->ctl->events, memory_order_relaxed);
	cq->channel = ch;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	cq->ibv.context = ctx->ibv;
	cq->ibv.channel = ch ? &ch->ibv : NULL;
	cq->ibv.cqe = rep.cqe;
	cq->ibv.handle = rep.cq;
	rc = cl_obj_add(ctx, rep.cq, UROCE_CTRL_REGION_CQ, cq);
	if (rc)
		goto fail;
	return cq;
fail:
	cl_release(ctx, UROCE_CTRL_DESTROY_CQ, rep.cq);
	uroce_shm_close(&cq->region);
	free(cq);
	return cl_fail_null(rc);
}

int uroce_client_destroy_cq(struct uroce_client_cq *cq)
{
	int rc = cl_obj_release(cq->ctx, UROCE_CTRL_DESTROY_CQ, cq->handle, &cq->region);

	if (rc)
		return rc; /* EBUSY while a QP uses it */
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

/*
 * The daemon moves the completions we have not polled into a new region (RESIZE_CQ,
 * uroce_ctrl.h). Locks, in this order: ctx->lock (get_cq_event reads cq->ctl under it;
 * held from the call to the swap, so it never reads a count of the region the daemon has
 * left), then cq->lock (no poll or arm of the old ring meanwhile).
 */
int uroce_client_resize_cq(struct uroce_client_cq *cq, int cqe)
{
	struct uroce_client_ctx *ctx = cq->ctx;
	struct uroce_ctrl_resize_cq_req req = {.cq = cq->handle, .cqe = cqe};
	struct uroce_ctrl_create_cq_rep rep;
	struct uroce_shm_region region, old;
	struct uroce_ring ring;
	int fd, rc;

	if (ctx->forked)
		return -EIO; /* the parent's CQ (fork.c) */
	pthread_mutex_lock(&ctx->lock);
	pthread_spin_lock(&cq->lock);
	rc = cl_call_held(ctx, UROCE_CTRL_RESIZE_CQ, &req, sizeof(req), NULL, 0, &rep,
			  sizeof(rep), &fd, 1);
	if (rc)
		goto out;
	rc = cl_attach_region(&region, fd, UROCE_CTRL_REGION_CQ);
	if (rc) {
		close(fd);
		goto out;
	}
	if (rep.ctl_offset + sizeof(*cq->ctl) > region.size || rep.ring_offset >= region.size ||
	    uroce_ring_open(&ring, (uint8_t *)region.addr + rep.ring_offset,
			    region.size - rep.ring_offset, false) != 0 ||
	    ring.elem_size != sizeof(struct ibv_wc)) {
		/* The daemon has left the old region already: this CQ cannot go on. */
		uroce_shm_close(&region);
		rc = -EPROTO;
		goto out;
	}
	old = cq->region;
	cq->region = region;
	cq->ring = ring;
	cq->ctl = (void *)((uint8_t *)region.addr + rep.ctl_offset);
	cq->ibv.cqe = rep.cqe;
	uroce_shm_close(&old);
out:
	pthread_spin_unlock(&cq->lock);
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

struct ibv_cq *uroce_client_cq_ibv(struct uroce_client_cq *cq)
{
	return &cq->ibv;
}

/* ---- SRQ --------------------------------------------------------------------------- */

/* The SRQ CREATE_SRQ or CREATE_XRC_SRQ (@p cmd, request @p req) made: its region mapped
 * and checked. */
static struct uroce_client_srq *srq_create(struct uroce_client_pd *pd, uint32_t cmd,
					   const void *req, size_t req_len,
					   struct ibv_srq_init_attr *attr)
{
	struct uroce_client_ctx *ctx = pd->ctx;
	struct uroce_ctrl_create_xrc_srq_rep xrep;
	struct uroce_ctrl_create_srq_rep *rep = &xrep.srq;
	bool xrc = cmd == UROCE_CTRL_CREATE_XRC_SRQ;
	struct uroce_client_srq *srq;
	int fd, rc;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	rc = cl_call(ctx, cmd, req, req_len, NULL, 0, &xrep, xrc ? sizeof(xrep) : sizeof(*rep),
		     &fd, 1);
	if (rc) {
		free(srq);
		return cl_fail_null(rc);
	}
	srq->ctx = ctx;
	srq->handle = rep->srq;
	srq->srqn = xrc ? xrep.srqn : 0;
	rc = cl_attach_region(&srq->region, fd, UROCE_CTRL_REGION_SRQ);
	if (rc) {
		close(fd);
		goto fail;
	}
	if (rep->ring_offset >= srq->region.size ||
	    UROCE_CTRL_QUEUE_CTL_OFFSET + sizeof(*srq->ctl) > rep->ring_offset ||
	    uroce_ring_open(&srq->ring, (uint8_t *)srq->region.addr + rep->ring_offset,
			    srq->region.size - rep->ring_offset, true) != 0 ||
	    srq->ring.elem_size != sizeof(struct uroce_ctrl_recv_wqe) ||
	    rep->attr.max_wr > srq->ring.mask + 1) {
		rc = -EPROTO;
		goto fail;
	}
	srq->ctl = (void *)((uint8_t *)srq->region.addr + UROCE_CTRL_QUEUE_CTL_OFFSET);
	srq->doorbell_slot = srq->ctl->doorbell_slot;
	srq->max_wr = rep->attr.max_wr;
	srq->max_sge = rep->attr.max_sge;
	attr->attr = rep->attr;
	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	srq->ibv.context = ctx->ibv;
	srq->ibv.pd = &pd->ibv;
	srq->ibv.srq_context = attr->srq_context;
	srq->ibv.handle = rep->srq;
	rc = cl_obj_add(ctx, rep->srq, UROCE_CTRL_REGION_SRQ, srq);
	if (rc)
		goto fail;
	return srq;
fail:
	cl_release(ctx, UROCE_CTRL_DESTROY_SRQ, rep->srq);
	uroce_shm_close(&srq->region);
	free(srq);
	return cl_fail_null(rc);
}

struct uroce_client_srq *uroce_client_create_srq(struct uroce_client_pd *pd,
						 struct ibv_srq_init_attr *attr)
{
	struct uroce_ctrl_create_srq_req req = {.pd = pd->handle, .attr = attr->attr};

	return srq_create(pd, UROCE_CTRL_CREATE_SRQ, &req, sizeof(req), attr);
}

struct uroce_client_srq *uroce_client_create_xrc_srq(struct uroce_client_pd *pd,
						     struct uroce_client_xrcd *xrcd,
						     struct uroce_client_cq *cq,
						     struct ibv_srq_init_attr *attr)
{
	struct uroce_ctrl_create_xrc_srq_req req = {.pd = pd->handle, .attr = attr->attr};

	if (!xrcd || !cq || xrcd->ctx != pd->ctx)
		return cl_fail_null(EINVAL);
	req.xrcd = xrcd->handle;
	req.cq = cq->handle;
	return srq_create(pd, UROCE_CTRL_CREATE_XRC_SRQ, &req, sizeof(req), attr);
}

uint32_t uroce_client_srq_num(const struct uroce_client_srq *srq)
{
	return srq->srqn;
}

/* ---- XRC domains ------------------------------------------------------------------- */

struct uroce_client_xrcd *uroce_client_open_xrcd(struct uroce_client_ctx *ctx, int fd,
						 int oflags)
{
	/* Only O_CREAT and O_EXCL mean anything; the kernel's uverbs ignores the rest. */
	struct uroce_ctrl_open_xrcd_req req = {.oflags = (uint32_t)oflags & (O_CREAT | O_EXCL)};
	struct uroce_client_xrcd *xrcd;
	struct uroce_ctrl_handle rep;
	int rc;

	if (fd < 0)
		rc = cl_call(ctx, UROCE_CTRL_OPEN_XRCD, NULL, 0, NULL, 0, &rep, sizeof(rep), NULL,
			     0);
	else
		rc = cl_call(ctx, UROCE_CTRL_OPEN_XRCD_FILE, &req, sizeof(req), &fd, 1, &rep,
			     sizeof(rep), NULL, 0);
	if (rc)
		return cl_fail_null(rc);
	xrcd = cl_obj_alloc(ctx, sizeof(*xrcd), UROCE_CTRL_CLOSE_XRCD, rep.handle);
	if (!xrcd)
		return NULL;
	xrcd->ctx = ctx;
	xrcd->handle = rep.handle;
	xrcd->ibv.context = ctx->ibv;
	return xrcd;
}

int uroce_client_close_xrcd(struct uroce_client_xrcd *xrcd)
{
	return cl_obj_destroy(xrcd->ctx, UROCE_CTRL_CLOSE_XRCD, xrcd->handle, xrcd);
}

/*
 * IBV_SRQ_MAX_WR: the daemon moves the WQEs it has not taken into a new region at the same
 * indices (RESIZE_SRQ, uroce_ctrl.h), so our producer index goes on. The SRQ's lock is
 * held from the call to the swap: no post writes the old ring meanwhile. @return 0 or a
 * positive errno, as verbs.
 */
static int srq_resize(struct uroce_client_srq *srq, const struct uroce_ctrl_modify_srq_req *req)
{
	struct uroce_ctrl_create_srq_rep rep;
	struct uroce_shm_region region, old;
	struct uroce_ring ring;
	int fd, rc;

	pthread_spin_lock(&srq->lock);
	rc = cl_call(srq->ctx, UROCE_CTRL_RESIZE_SRQ, req, sizeof(*req), NULL, 0, &rep,
		     sizeof(rep), &fd, 1);
	if (rc)
		goto out;
	rc = cl_attach_region(&region, fd, UROCE_CTRL_REGION_SRQ);
	if (rc) {
		close(fd);
		goto out;
	}
	if (rep.ring_offset >= region.size ||
	    UROCE_CTRL_QUEUE_CTL_OFFSET + sizeof(*srq->ctl) > rep.ring_offset ||
	    uroce_ring_open(&ring, (uint8_t *)region.addr + rep.ring_offset,
			    region.size - rep.ring_offset, true) != 0 ||
	    ring.elem_size != sizeof(struct uroce_ctrl_recv_wqe) ||
	    rep.attr.max_wr > ring.mask + 1 || ring.mine != srq->ring.mine) {
		/* The daemon has left the old region already: this SRQ cannot go on. */
		uroce_shm_close(&region);
		rc = -EPROTO;
		goto out;
	}
	old = srq->region;
	srq->region = region;
	srq->ring = ring;
	srq->ctl = (void *)((uint8_t *)region.addr + UROCE_CTRL_QUEUE_CTL_OFFSET);
	srq->max_wr = rep.attr.max_wr;
	uroce_shm_close(&old);
out:
	pthread_spin_unlock(&srq->lock);
	return -rc;
}

int uroce_client_modify_srq(struct uroce_client_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct uroce_ctrl_modify_srq_req req = {.srq = srq->handle, .mask = mask, .attr = *attr};

	if (mask & IBV_SRQ_MAX_WR)
		return srq_resize(srq, &req);
	return -cl_call(srq->ctx, UROCE_CTRL_MODIFY_SRQ, &req, sizeof(req), NULL, 0, NULL, 0,
			NULL, 0);
}

int uroce_client_query_srq(struct uroce_client_srq *srq, struct ibv_srq_attr *attr)
{
	struct uroce_ctrl_handle req = {.handle = srq->handle};
	struct uroce_ctrl_query_srq_rep rep;
	int rc = cl_call(srq->ctx, UROCE_CTRL_QUERY_SRQ, &req, sizeof(req), NULL, 0, &rep,
			 sizeof(rep), NULL, 0);

	if (rc)
		return -rc;
	*attr = rep.attr;
	return 0;
}

int uroce_client_destroy_srq(struct uroce_client_srq *srq)
{
	int rc = cl_obj_release(srq->ctx, UROCE_CTRL_DESTROY_SRQ, srq->handle, &srq->region);

	if (rc)
		return rc;
	pthread_spin_destroy(&srq->lock);
	free(srq);
	return 0;
}

struct ibv_srq *uroce_client_srq_ibv(struct uroce_client_srq *srq)
{
	return &srq->ibv;
}

/* ---- QP ---------------------------------------------------------------------------- */

/*
 * Shows the daemon, once per context, that this process has CAP_NET_RAW over the
 * device's namespace (PROVE_NET_RAW): a packet socket, which the kernel opens only for
 * it. The daemon reads no capability from /proc. Without one nothing is sent, and the
 * request that needs the right gets the daemon's EPERM, as the kernel's.
 */
static void prove_net_raw(struct uroce_client_ctx *ctx)
{
	int s;

	if (__atomic_load_n(&ctx->net_raw_proven, __ATOMIC_RELAXED))
		return;
	/* Protocol 0: the socket receives nothing; it only shows what the kernel allowed. */
	s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (s < 0)
		return;
	if (cl_call(ctx, UROCE_CTRL_PROVE_NET_RAW, NULL, 0, &s, 1, NULL, 0, NULL, 0) == 0)
		__atomic_store_n(&ctx->net_raw_proven, true, __ATOMIC_RELAXED);
	close(s);
}

/* A QP of @p pd (NULL for an XRC target) or @p xrcd (an XRC target's; else NULL). */
static struct uroce_client_qp *qp_create(struct uroce_client_ctx *ctx, struct uroce_client_pd *pd,
					 struct uroce_client_xrcd *xrcd,
					 struct ibv_qp_init_attr *attr)
{
	struct uroce_ctrl_create_qp_req req = {
		.pd = pd ? pd->handle : 0,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all ? 1 : 0,
		.cap = attr->cap,
		.xrcd = xrcd ? xrcd->handle : 0,
	};
	struct uroce_ctrl_create_qp_rep rep;
	struct uroce_client_qp *qp;
	int fd, rc;

	if (attr->send_cq)
		req.send_cq = to_ucq(attr->send_cq)->handle;
	if (attr->recv_cq)
		req.recv_cq = to_ucq(attr->recv_cq)->handle;
	if (attr->srq)
		req.srq = to_usrq(attr->srq)->handle;
	if (attr->qp_type == IBV_QPT_RAW_PACKET)
		prove_net_raw(ctx);
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	rc = cl_call(ctx, UROCE_CTRL_CREATE_QP, &req, sizeof(req), NULL, 0, &rep, sizeof(rep), &fd,
		     1);
	if (rc) {
		free(qp);
		return cl_fail_null(rc);
	}
	qp->ctx = ctx;
	qp->handle = rep.qp;
	rc = cl_attach_region(&qp->region, fd, UROCE_CTRL_REGION_QP);
	if (rc) {
		close(fd);
		goto fail;
	}
	if (rep.sq_offset >= qp->region.size || rep.rq_offset >= qp->region.size ||
	    UROCE_CTRL_QUEUE_CTL_OFFSET + sizeof(*qp->ctl) > rep.sq_offset ||
	    uroce_ring_open(&qp->sq, (uint8_t *)qp->region.addr + rep.sq_offset,
			    qp->region.size - rep.sq_offset, true) != 0 ||
	    qp->sq.elem_size != sizeof(struct uroce_ctrl_send_wqe) ||
	    rep.cap.max_send_wr > qp->sq.mask + 1) {
		rc = -EPROTO;
		goto fail;
	}
	if (!attr->srq &&
	    (uroce_ring_open(&qp->rq, (uint8_t *)qp->region.addr + rep.rq_offset,
			     qp->region.size - rep.rq_offset, true) != 0 ||
	     qp->rq.elem_size != sizeof(struct uroce_ctrl_recv_wqe) ||
	     rep.cap.max_recv_wr > qp->rq.mask + 1)) {
		rc = -EPROTO;
		goto fail;
	}
	qp->ctl = (void *)((uint8_t *)qp->region.addr + UROCE_CTRL_QUEUE_CTL_OFFSET);
	qp->doorbell_slot = qp->ctl->doorbell_slot;
	qp->cap = rep.cap;
	attr->cap = rep.cap;
	qp->srq = attr->srq ? to_usrq(attr->srq) : NULL;
	pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);
	qp->ibv.context = ctx->ibv;
	qp->ibv.qp_context = attr->qp_context;
	qp->ibv.pd = pd ? &pd->ibv : NULL;
	qp->ibv.send_cq = attr->send_cq;
	qp->ibv.recv_cq = attr->recv_cq;
	qp->ibv.srq = attr->srq;
	qp->ibv.handle = rep.qp;
	qp->ibv.qp_num = rep.qpn;
	qp->ibv.state = IBV_QPS_RESET;
	qp->ibv.qp_type = attr->qp_type;
	rc = cl_obj_add(ctx, rep.qp, UROCE_CTRL_REGION_QP, qp);
	if (rc)
		goto fail;
	return qp;
fail:
	cl_release(ctx, UROCE_CTRL_DESTROY_QP, rep.qp);
	uroce_shm_close(&qp->region);
	free(qp);
	return cl_fail_null(rc);
}

struct uroce_client_qp *uroce_client_create_qp(struct uroce_client_pd *pd,
					       struct ibv_qp_init_attr *attr)
{
	/* An XRC initiator needs no receive CQ (verbs' ibv_create_qp makes one, rdma-core's
	 * ibv_create_qp_ex comes here with a PD alone); a target has no PD:
	 * uroce_client_create_xrc_qp. */
	if (attr->qp_type == IBV_QPT_XRC_SEND)
		return uroce_client_create_xrc_qp(pd->ctx, pd, NULL, attr);
	if (!attr->send_cq || !attr->recv_cq || attr->qp_type == IBV_QPT_XRC_RECV)
		return cl_fail_null(EINVAL);
	return qp_create(pd->ctx, pd, NULL, attr);
}

struct uroce_client_qp *uroce_client_create_xrc_qp(struct uroce_client_ctx *ctx,
						   struct uroce_client_pd *pd,
						   struct uroce_client_xrcd *xrcd,
						   struct ibv_qp_init_attr *attr)
{
	if (attr->srq || (attr->qp_type == IBV_QPT_XRC_SEND &&
			  (!pd || xrcd || !attr->send_cq || pd->ctx != ctx)) ||
	    (attr->qp_type == IBV_QPT_XRC_RECV &&
	     (pd || !xrcd || attr->send_cq || attr->recv_cq || xrcd->ctx != ctx)) ||
	    (attr->qp_type != IBV_QPT_XRC_SEND && attr->qp_type != IBV_QPT_XRC_RECV))
		return cl_fail_null(EINVAL);
	return qp_create(ctx, pd, xrcd, attr);
}

struct uroce_client_qp *uroce_client_open_qp(struct uroce_client_xrcd *xrcd, uint32_t qpn,
					     void *qp_context)
{
	struct uroce_ctrl_open_qp_req req = {.xrcd = xrcd->handle, .qpn = qpn};
	struct uroce_client_ctx *ctx = xrcd->ctx;
	struct uroce_ctrl_handle rep;
	struct uroce_client_qp *qp;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int rc;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	rc = cl_call(ctx, UROCE_CTRL_OPEN_QP, &req, sizeof(req), NULL, 0, &rep, sizeof(rep), NULL,
		     0);
	if (rc) {
		free(qp);
		return cl_fail_null(rc);
	}
	/* No region: a target has no queue to post to (post_send and post_recv refuse it
	 * before they would touch one). */
	qp->ctx = ctx;
	qp->handle = rep.handle;
	qp->region.fd = -1;
	pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);
	qp->ibv.context = ctx->ibv;
	qp->ibv.qp_context = qp_context;
	qp->ibv.handle = rep.handle;
	qp->ibv.qp_num = qpn;
	qp->ibv.qp_type = IBV_QPT_XRC_RECV;
	qp->ibv.state = IBV_QPS_RESET;
	rc = uroce_client_query_qp(qp, &a, IBV_QP_STATE, &ia) ? -EPROTO : 0; /* its state */
	if (rc == 0)
		rc = cl_obj_add(ctx, rep.handle, UROCE_CTRL_REGION_QP, qp);
	if (rc) {
		cl_release(ctx, UROCE_CTRL_DESTROY_QP, rep.handle);
		free(qp);
		return cl_fail_null(rc);
	}
	return qp;
}

int uroce_client_modify_qp(struct uroce_client_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct uroce_ctrl_modify_qp_req req = {.qp = qp->handle, .mask = mask, .attr = *attr};
	int rc;

	/* A controlled Q_Key (high bit) is for CAP_NET_RAW, as the kernel's. */
	if ((mask & IBV_QP_QKEY) && (attr->qkey & 0x80000000u))
		prove_net_raw(qp->ctx);
	/* Serialized with posts: a transition to RESET empties the queues on both sides. */
	pthread_spin_lock(&qp->sq_lock);
	pthread_spin_lock(&qp->rq_lock);
	rc = cl_call(qp->ctx, UROCE_CTRL_MODIFY_QP, &req, sizeof(req), NULL, 0, NULL, 0, NULL, 0);
	if (rc == 0 && (mask & IBV_QP_STATE)) {
		qp->ibv.state = attr->qp_state;
		if (attr->qp_state == IBV_QPS_RESET) {
			/* The daemon discarded what was queued and counted it retired. */
			qp->sq.theirs = qp->sq.mine;
			qp->rq.theirs = qp->rq.mine;
			/* One CQ for both: the SRQ's receive completions stay there too. XRC QPs
			 * may have neither (a target's are in its SRQs' CQs, and stay). */
			if (qp->ibv.recv_cq)
				cl_cq_discard_qp(qp->ibv.recv_cq, qp->ibv.qp_num, qp->srq != NULL);
			if (qp->ibv.send_cq && qp->ibv.send_cq != qp->ibv.recv_cq)
				cl_cq_discard_qp(qp->ibv.send_cq, qp->ibv.qp_num, false);
		}
	}
	pthread_spin_unlock(&qp->rq_lock);
	pthread_spin_unlock(&qp->sq_lock);
	return -rc;
}

int uroce_client_query_qp(struct uroce_client_qp *qp, struct ibv_qp_attr *attr, int mask,
			  struct ibv_qp_init_attr *init)
{
	struct uroce_ctrl_query_qp_req req = {.qp = qp->handle, .mask = mask};
	struct uroce_ctrl_query_qp_rep rep;
	int rc = cl_call(qp->ctx, UROCE_CTRL_QUERY_QP, &req, sizeof(req), NULL, 0, &rep,
			 sizeof(rep), NULL, 0);

	if (rc)
		return -rc;
	*attr = rep.attr;
	qp->ibv.state = rep.attr.qp_state;
	if (init) {
		memset(init, 0, sizeof(*init));
		init->qp_context = qp->ibv.qp_context;
		init->send_cq = qp->ibv.send_cq;
		init->recv_cq = qp->ibv.recv_cq;
		init->srq = qp->ibv.srq;
		init->cap = rep.cap;
		init->qp_type = (enum ibv_qp_type)rep.qp_type;
		init->sq_sig_all = (int)rep.sq_sig_all;
	}
	return 0;
}

int uroce_client_create_flow(struct uroce_client_qp *qp, const struct ibv_flow_attr *attr,
			     uint32_t *handle)
{
	struct uroce_ctrl_create_flow_req req = {.qp = qp->handle};
	const uint8_t *at = (const uint8_t *)(attr + 1);
	struct ibv_flow_attr copy = *attr;
	struct uroce_ctrl_handle rep;
	uint32_t len = sizeof(*attr);
	int rc;

	/* The rule's length is its specs' (attr->size is not read, as by rdma-core, which
	 * walks them by their own sizes): each at least its header, all within the room. */
	for (uint8_t i = 0; i < attr->num_of_specs; i++) {
		struct ibv_flow_spec sp;

		memcpy(&sp.hdr, at, sizeof(sp.hdr));
		if (sp.hdr.size < sizeof(sp.hdr) || len + sp.hdr.size > sizeof(req.attr))
			return EINVAL;
		len += sp.hdr.size;
		at += sp.hdr.size;
	}
	copy.size = (uint16_t)len;
	memcpy(req.attr, &copy, sizeof(copy));
	memcpy(req.attr + sizeof(copy), attr + 1, len - sizeof(copy));
	req.attr_size = len;
	rc = cl_call(qp->ctx, UROCE_CTRL_CREATE_FLOW, &req, sizeof(req), NULL, 0, &rep,
		     sizeof(rep), NULL, 0);
	if (rc == 0)
		*handle = rep.handle;
	return -rc;
}

int uroce_client_destroy_flow(struct uroce_client_ctx *ctx, uint32_t handle)
{
	return -cl_release(ctx, UROCE_CTRL_DESTROY_FLOW, handle);
}

int uroce_client_mcast(struct uroce_client_qp *qp, const union ibv_gid *gid, uint16_t lid,
		       bool attach)
{
	struct uroce_ctrl_mcast_req req = {.qp = qp->handle, .lid = lid, .gid = *gid};

	return -cl_call(qp->ctx, attach ? UROCE_CTRL_ATTACH_MCAST : UROCE_CTRL_DETACH_MCAST, &req,
			sizeof(req), NULL, 0, NULL, 0, NULL, 0);
}

int uroce_client_destroy_qp(struct uroce_client_qp *qp)
{
	int rc = cl_obj_release(qp->ctx, UROCE_CTRL_DESTROY_QP, qp->handle, &qp->region);

	if (rc)
		return rc;
	pthread_spin_destroy(&qp->sq_lock);
	pthread_spin_destroy(&qp->rq_lock);
	free(qp);
	return 0;
}

struct ibv_qp *uroce_client_qp_ibv(struct uroce_client_qp *qp)
{
	return &qp->ibv;
}

/* ---- AH ---------------------------------------------------------------------------- */

struct uroce_client_ah *uroce_client_create_ah(struct uroce_client_pd *pd,
					       struct ibv_ah_attr *attr)
{
	struct uroce_ctrl_create_ah_req req = {.pd = pd->handle, .attr = *attr};
	struct uroce_ctrl_handle rep;
	struct uroce_client_ah *ah;
	int rc = cl_call(pd->ctx, UROCE_CTRL_CREATE_AH, &req, sizeof(req), NULL, 0, &rep,
			 sizeof(rep), NULL, 0);

	if (rc)
		return cl_fail_null(rc);
	ah = cl_obj_alloc(pd->ctx, sizeof(*ah), UROCE_CTRL_DESTROY_AH, rep.handle);
	if (!ah)
		return NULL;
	ah->ctx = pd->ctx;
	ah->handle = rep.handle;
	ah->ibv.context = pd->ctx->ibv;
	ah->ibv.pd = &pd->ibv;
	ah->ibv.handle = rep.handle;
	return ah;
}

int uroce_client_destroy_ah(struct uroce_client_ah *ah)
{
	return cl_obj_destroy(ah->ctx, UROCE_CTRL_DESTROY_AH, ah->handle, ah);
}
