/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * XRC domains (IBA vol 1 annex A14; ibv_open_xrcd): a connection's own, or the domain of
 * a file, which every process that opens one with a descriptor of that file (the same
 * inode) shares, as the kernel's uverbs share them. What is in a domain (XRC SRQs and
 * target QPs, srq.c and qp.c) is each connection's own; the domain lives while any handle on
 * it does, and a handle cannot go while its connection has something in the domain.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rnic_internal.h"

static void xrcd_free(struct uroce_rnic *nic, struct rnic_xrcd *x)
{
	if (x->shared) {
		struct rnic_xrcd *last = nic->xrcds[--nic->nxrcds];

		nic->xrcds[x->idx] = last;
		last->idx = x->idx;
	}
	uroce_tp_dealloc_xrcd(x->tp); /* empty: every SRQ and QP in it went before */
	if (x->file_fd >= 0)
		close(x->file_fd);
	free(x);
}

/* A new handle of @p c on @p x (made if NULL: then @p file_fd is the descriptor of the
 * file whose inode @p dev, @p ino names it, or -1 for a domain of the connection alone).
 * @p file_fd is taken in every case: kept by a domain made of it, closed otherwise.
 * Replies. */
static void xrcd_handle(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			struct rnic_xrcd *x, int file_fd, dev_t dev, ino_t ino)
{
	struct uroce_rnic *nic = c->rnic;
	struct uroce_ctrl_handle rep = {0};
	bool made = false;
	int rc;

	rc = rnic_limit_object(c, RNIC_OBJ_XRCD);
	if (rc)
		goto refuse;
	if (x == NULL) {
		rc = -ENOMEM;
		x = calloc(1, sizeof(*x));
		if (x == NULL || (x->tp = uroce_tp_alloc_xrcd(nic->dev)) == NULL) {
			free(x);
			goto refuse;
		}
		x->shared = file_fd >= 0;
		x->dev = dev;
		x->ino = ino;
		if (x->shared && rnic_list_add((void ***)&nic->xrcds, &nic->nxrcds, &nic->cap_xrcds,
					       x, &x->idx)) {
			uroce_tp_dealloc_xrcd(x->tp);
			free(x);
			goto refuse;
		}
		x->file_fd = file_fd;
		file_fd = -1;
		made = true;
	}
	rep.handle = rnic_obj_add(c, RNIC_OBJ_XRCD, x);
	if (rep.handle == 0) {
		if (made)
			xrcd_free(nic, x); /* and the descriptor it kept */
		rc = -ENOMEM;
		goto refuse;
	}
	x->handles++;
	if (file_fd >= 0)
		close(file_fd); /* the domain has its own */
	REPLY(c, h, 0, &rep, sizeof(rep));
	return;
refuse:
	if (file_fd >= 0)
		close(file_fd);
	REPLY(c, h, rc, NULL, 0);
}

void rnic_cmd_open_xrcd(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const void *payload RNIC_UNUSED, const int *fds RNIC_UNUSED)
{
	xrcd_handle(c, h, NULL, -1, 0, 0);
}

void rnic_cmd_open_xrcd_file(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			     const void *payload, const int *fds)
{
	const struct uroce_ctrl_open_xrcd_req *req = payload;
	struct uroce_rnic *nic = c->rnic;
	struct rnic_xrcd *x = NULL;
	struct stat st;
	int flags, rc;

	/* The descriptor proves the process opened the file, with the permissions that
	 * took; its inode names the domain. An O_PATH descriptor proves nothing (it needs no
	 * permission on the file, only on the folders): the kernel's fdget() refuses it, and
	 * ib_uverbs_open_xrcd says EBADF. Any other open checked read or write permission
	 * (O_RDONLY read; O_ACCMODE's fourth value, as O_RDWR, both). Only O_CREAT and O_EXCL
	 * mean anything (the kernel's uverbs ignores the rest). */
	flags = fcntl(fds[0], F_GETFL);
	if (flags < 0 || (flags & O_PATH) || fstat(fds[0], &st) != 0) {
		rc = -EBADF;
		goto out;
	}
	for (uint32_t i = 0; i < nic->nxrcds; i++)
		if (nic->xrcds[i]->dev == st.st_dev && nic->xrcds[i]->ino == st.st_ino)
			x = nic->xrcds[i];
	/* The kernel's errnos: no domain yet and no O_CREAT is EAGAIN, O_EXCL on one EINVAL. */
	if (x == NULL && !(req->oflags & O_CREAT)) {
		rc = -EAGAIN;
		goto out;
	}
	if (x != NULL && (req->oflags & O_CREAT) && (req->oflags & O_EXCL)) {
		rc = -EINVAL;
		goto out;
	}
	xrcd_handle(c, h, x, fds[0], st.st_dev, st.st_ino);
	return;
out:
	close(fds[0]);
	REPLY(c, h, rc, NULL, 0);
}

int rnic_xrcd_close(struct uroce_rnic_client *c, uint32_t h, struct rnic_xrcd *x)
{
	for (uint32_t k = 1; k <= c->nobjs; k++) {
		const struct rnic_obj *o = &c->objs[k - 1];

		if ((o->type == RNIC_OBJ_SRQ && ((struct rnic_srq *)o->p)->xrcd == x) ||
		    (o->type == RNIC_OBJ_QP && ((struct rnic_qp *)o->p)->xrcd == x))
			return -EBUSY;
	}
	rnic_obj_del(c, h);
	if (--x->handles == 0)
		xrcd_free(c->rnic, x);
	return 0;
}

void rnic_cmd_close_xrcd(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			 const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_handle *req = payload;
	struct rnic_xrcd *x = rnic_obj_get(c, req->handle, RNIC_OBJ_XRCD);

	REPLY(c, h, x ? rnic_xrcd_close(c, req->handle, x) : -EINVAL, NULL, 0);
}

/* ---- XRC target QPs that several connections hold (ibv_open_qp) ---- */

void rnic_cmd_open_qp(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
		      const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_open_qp_req *req = payload;
	struct rnic_xrcd *x = rnic_obj_get(c, req->xrcd, RNIC_OBJ_XRCD);
	struct uroce_rnic *nic = c->rnic;
	struct uroce_ctrl_handle rep = {0};
	struct rnic_qp *q = NULL;
	int rc;

	/* Only a target of the domain the caller has a handle on: its QPN alone would let
	 * anyone take over another tenant's QP. */
	for (uint32_t i = 0; x && i < nic->nqps && !q; i++)
		if (nic->qps[i]->xrcd == x && uroce_tp_qp_num(nic->qps[i]->tp) == req->qpn)
			q = nic->qps[i];
	if (q == NULL) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	rc = rnic_limit_object(c, RNIC_OBJ_QP);
	if (rc == 0) {
		rep.handle = rnic_obj_add(c, RNIC_OBJ_QP, q);
		rc = rep.handle ? 0 : -ENOMEM;
	}
	if (rc == 0)
		q->handles++;
	REPLY(c, h, rc, rc ? NULL : &rep, rc ? 0 : sizeof(rep));
}

void rnic_xrc_qp_close(struct uroce_rnic_client *c, uint32_t h, struct rnic_qp *q)
{
	struct uroce_rnic_client *o;

	rnic_obj_del(c, h);
	q->handles--;
	if (q->client != c || q->handle != h)
		return;
	/* The holder goes: another connection with a handle holds it from now on (its
	 * events and doorbell slot follow; a target's slot never rings: it posts nothing). */
	for (o = c->rnic->clients; o; o = o->next) {
		for (uint32_t k = 1; k <= o->nobjs; k++) {
			if (o->objs[k - 1].type != RNIC_OBJ_QP || o->objs[k - 1].p != q)
				continue;
			rnic_doorbell_slot_put(c, q, NULL);
			q->client = o;
			q->handle = o->objs[k - 1].handle;
			if (rnic_doorbell_slot_get(o, q, NULL) != 0)
				q->doorbell_slot = UINT32_MAX; /* none: it is never rung */
			return;
		}
	}
}
