/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory regions and memory windows (rxe_mr.c, rxe_mw.c): REG_MR of pages lib/client
 * shares with the daemon (mr_share.c), rereg and dereg, and the windows bound over them.
 * Slow path: each call is a control message.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"

/* ---- MR ---------------------------------------------------------------------------- */

struct uroce_client_mr *uroce_client_reg_mr(struct uroce_client_pd *pd, void *addr,
					    size_t length, unsigned int access)
{
	return uroce_client_reg_mr_iova(pd, addr, length, (uintptr_t)addr, access);
}

struct uroce_client_mr *uroce_client_reg_mr_iova(struct uroce_client_pd *pd, void *addr,
						 size_t length, uint64_t iova,
						 unsigned int access)
{
	struct uroce_client_ctx *ctx = pd->ctx;
	struct uroce_ctrl_reg_mr_req *req;
	struct uroce_ctrl_mr_seg *segs;
	struct uroce_ctrl_reg_mr_rep rep;
	struct uroce_client_mr *mr;
	size_t req_len;
	int nseg, rc;

	/* rdma-core (ib_umem_get): an empty range, or write access to remote peers without
	 * local write, is EINVAL. */
	if (length == 0)
		return cl_fail_null(EINVAL);
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return cl_fail_null(EINVAL);
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return NULL;
	pthread_mutex_lock(&ctx->share_lock);
	nseg = cl_share_range(ctx, addr, length, &segs);
	if (nseg < 0) {
		pthread_mutex_unlock(&ctx->share_lock);
		free(mr);
		return cl_fail_null(nseg);
	}
	req_len = sizeof(*req) + (size_t)nseg * sizeof(*segs);
	req = calloc(1, req_len);
	if (!req) {
		rc = -ENOMEM;
		goto out;
	}
	req->pd = pd->handle;
	req->access = access;
	req->addr = (uintptr_t)addr;
	req->length = length;
	req->iova = iova;
	req->nseg = (uint32_t)nseg;
	memcpy(req->seg, segs, (size_t)nseg * sizeof(*segs));
	rc = cl_call(ctx, UROCE_CTRL_REG_MR, req, req_len, NULL, 0, &rep, sizeof(rep), NULL, 0);
	free(req);
out:
	pthread_mutex_unlock(&ctx->share_lock);
	free(segs);
	if (rc) {
		free(mr);
		return cl_fail_null(rc);
	}
	mr->ctx = ctx;
	mr->handle = rep.mr;
	mr->ibv.context = ctx->ibv;
	mr->ibv.pd = &pd->ibv;
	mr->ibv.addr = addr;
	mr->ibv.length = length;
	mr->ibv.handle = rep.mr;
	mr->ibv.lkey = rep.lkey;
	mr->ibv.rkey = rep.rkey;
	mr->iova = iova;
	mr->access = access;
	return mr;
}

int uroce_client_dereg_mr(struct uroce_client_mr *mr)
{
	return cl_obj_destroy(mr->ctx, UROCE_CTRL_DEREG_MR, mr->handle, mr);
}

int uroce_client_rereg_mr(struct uroce_client_mr *mr, int flags, struct uroce_client_pd *pd,
			  void *addr, size_t length, unsigned int access)
{
	struct uroce_client_pd *new_pd = (flags & IBV_REREG_MR_CHANGE_PD) ? pd : to_upd(mr->ibv.pd);
	struct uroce_ctrl_rereg_mr_req req;
	struct uroce_client_mr *fresh;
	uint64_t iova = mr->iova;
	uint32_t lkey, rkey;
	int rc;

	if (!(flags & IBV_REREG_MR_CHANGE_TRANSLATION)) {
		addr = mr->ibv.addr;
		length = mr->ibv.length;
	} else {
		iova = (uintptr_t)addr;
	}
	if (!(flags & IBV_REREG_MR_CHANGE_ACCESS))
		access = mr->access;
	fresh = uroce_client_reg_mr_iova(new_pd, addr, length, iova, access);
	if (!fresh)
		return -errno;
	/* The keys stay (REREG_MR): peers hold the R_Key, posted WQEs the L_Key. */
	req = (struct uroce_ctrl_rereg_mr_req){.mr = mr->handle, .to = fresh->handle};
	rc = cl_call(mr->ctx, UROCE_CTRL_REREG_MR, &req, sizeof(req), NULL, 0, NULL, 0, NULL, 0);
	/* Done: the old MR holds no key now. REREG_MR checked what DEREG_MR would refuse,
	 * so only a daemon gone can fail this, and it frees everything then. */
	if (!rc)
		(void)cl_release(mr->ctx, UROCE_CTRL_DEREG_MR, mr->handle);
	if (rc) {
		/* The old one stays: undo the new one (the daemon frees it at close if this
		 * fails too). */
		cl_release(fresh->ctx, UROCE_CTRL_DEREG_MR, fresh->handle);
		free(fresh);
		return rc;
	}
	lkey = mr->ibv.lkey;
	rkey = mr->ibv.rkey;
	mr->handle = fresh->handle;
	mr->iova = fresh->iova;
	mr->access = fresh->access;
	mr->ibv = fresh->ibv;
	mr->ibv.lkey = lkey;
	mr->ibv.rkey = rkey;
	free(fresh);
	return 0;
}

/* ---- memory windows ---------------------------------------------------------------- */

struct uroce_client_mw *uroce_client_alloc_mw(struct uroce_client_pd *pd, enum ibv_mw_type type)
{
	struct uroce_ctrl_alloc_mw_req req = {.pd = pd->handle, .type = (uint32_t)type};
	struct uroce_ctrl_alloc_mw_rep rep;
	struct uroce_client_mw *mw;
	int rc = cl_call(pd->ctx, UROCE_CTRL_ALLOC_MW, &req, sizeof(req), NULL, 0, &rep,
			 sizeof(rep), NULL, 0);

	if (rc)
		return cl_fail_null(rc);
	mw = cl_obj_alloc(pd->ctx, sizeof(*mw), UROCE_CTRL_DEALLOC_MW, rep.mw);
	if (!mw)
		return NULL;
	mw->ctx = pd->ctx;
	mw->handle = rep.mw;
	mw->ibv.context = pd->ctx->ibv;
	mw->ibv.pd = &pd->ibv;
	mw->ibv.rkey = rep.rkey;
	mw->ibv.handle = rep.mw;
	mw->ibv.type = type;
	return mw;
}

int uroce_client_dealloc_mw(struct uroce_client_mw *mw)
{
	return cl_obj_destroy(mw->ctx, UROCE_CTRL_DEALLOC_MW, mw->handle, mw);
}

int uroce_client_bind_mw(struct uroce_client_qp *qp, struct uroce_client_mw *mw,
			 const struct ibv_mw_bind *bind)
{
	struct ibv_send_wr wr, *bad;
	int rc;

	/* rdma-core's rxe provider: windows are never zero-based (o10-36.2.2). */
	if (bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return EINVAL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = bind->send_flags;
	wr.bind_mw.mw = &mw->ibv;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->ibv.rkey);
	wr.bind_mw.bind_info = bind->bind_info;
	rc = uroce_client_post_send(qp, &wr, &bad);
	if (rc)
		return rc;
	mw->ibv.rkey = wr.bind_mw.rkey;
	return 0;
}
