/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_import_device, ibv_import_pd, ibv_import_mr: one context's PDs and MRs named by
 * another connection's handles (lib/ctrl/uroce_ctrl.h, "importing"). Whoever holds a
 * context's token, its region's file, may: a kernel uverbs file is the same capability.
 * The token is a descriptor the daemon only fstat()s, so any kind of file is harmless.
 * The objects are shared, not copied (struct rnic_pd, struct rnic_mr count the handles):
 * an importer's QP on an imported PD uses the PD's MRs by their keys, as the registrant's
 * QPs do, and the transport checks those keys against the QP's PD as ever.
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rnic_internal.h"

/* The client @p c imports from, or NULL: no IMPORT_CONTEXT, or that client has gone (its
 * ids are never reused, so a later client is never taken for it). */
static struct uroce_rnic_client *import_source(const struct uroce_rnic_client *c)
{
	struct uroce_rnic_client *o;

	if (!c->import_from)
		return NULL;
	for (o = c->rnic->clients; o; o = o->next)
		if (o->id == c->import_from)
			return o;
	return NULL;
}

void rnic_cmd_import_context(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			     const void *payload RNIC_UNUSED, const int *fds)
{
	struct uroce_rnic_client *o;
	struct stat st;
	int rc = -EINVAL;

	if (!c->import_from && fstat(fds[0], &st) == 0) {
		for (o = c->rnic->clients; o; o = o->next) {
			if (o == c || !o->region.addr || o->region_dev != st.st_dev ||
			    o->region_ino != st.st_ino)
				continue;
			c->import_from = o->id;
			rc = 0;
			break;
		}
	}
	close(fds[0]);
	REPLY(c, h, rc, NULL, 0);
}

void rnic_cmd_import_pd(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_handle *req = payload;
	struct uroce_rnic_client *o = import_source(c);
	struct rnic_pd *pd = o ? rnic_obj_get(o, req->handle, RNIC_OBJ_PD) : NULL;
	struct uroce_ctrl_handle rep = {0};
	int rc;

	if (!pd || !pd->tp) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	rc = rnic_limit_object(c, RNIC_OBJ_PD);
	if (rc) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	rep.handle = rnic_obj_add(c, RNIC_OBJ_PD, pd);
	if (!rep.handle) {
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	pd->refs++;
	REPLY(c, h, 0, &rep, sizeof(rep));
}

void rnic_cmd_import_mr(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_handle *req = payload;
	struct uroce_rnic_client *o = import_source(c);
	struct rnic_mr *m = o ? rnic_obj_get(o, req->handle, RNIC_OBJ_MR) : NULL;
	struct uroce_ctrl_import_mr_rep rep = {0};
	int rc;

	if (!m || !m->tp) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	rc = rnic_limit_object(c, RNIC_OBJ_MR);
	if (rc) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	rep.mr = rnic_obj_add(c, RNIC_OBJ_MR, m);
	if (!rep.mr) {
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	m->refs++;
	uroce_tp_mr_keys(m->tp, &rep.lkey, &rep.rkey);
	rep.access = m->access;
	rep.length = m->length;
	rep.iova = m->iova;
	REPLY(c, h, 0, &rep, sizeof(rep));
}

void rnic_cmd_unimport_pd(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			  const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_handle *req = payload;
	struct rnic_pd *pd = rnic_obj_get(c, req->handle, RNIC_OBJ_PD);

	if (!pd) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	rnic_pd_release(c, req->handle, pd);
	REPLY(c, h, 0, NULL, 0);
}

void rnic_cmd_unimport_mr(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			  const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_handle *req = payload;
	struct rnic_mr *m = rnic_obj_get(c, req->handle, RNIC_OBJ_MR);

	if (!m) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	rnic_mr_release(c, req->handle, m);
	REPLY(c, h, 0, NULL, 0);
}
