/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Thread domains and parent domains (ibv_alloc_td, ibv_alloc_parent_domain): the inline
 * wrappers of verbs.h reach them through the context's extended ops.
 *
 * A parent domain is a PD that carries a thread domain and the application's allocators
 * beside the protection domain it names; whatever takes a PD takes it (QPs, SRQs, MRs,
 * windows, address handles, and extended CQs through IBV_CQ_INIT_ATTR_MASK_PD), and acts
 * on the protection domain. Here it is a copy of that PD's handle: the daemon sees the
 * protection domain only.
 *
 * What a shared-memory device makes of the rest:
 * - The allocators are never called. Their purpose is to let the application place the
 *   provider's queue buffers (on a NUMA node, in huge pages); uroce's queues live in
 *   memory the daemon creates and shares (lib/shm), which an application buffer cannot
 *   be. rdma-core allows a provider its own memory (IBV_ALLOCATOR_USE_DEFAULT is the
 *   allocator's own way to ask for it), and its tests only run traffic over them.
 * - A thread domain is a promise that one thread uses the objects: a hint a provider may
 *   take to drop locks. lib/client's post and poll paths take no lock a thread domain
 *   could spare, so it is kept (and counted) but changes nothing.
 *
 * Rules, as mlx5's (the provider that has them): a parent domain's PD and TD belong to
 * its context; a PD or TD a parent domain uses cannot be deallocated (EBUSY) before it
 * is; an unknown comp_mask bit is EINVAL.
 */
#include <errno.h>
#include <stdlib.h>

#include "uverbs.h"

struct uv_td {
	struct ibv_td ibv;
	unsigned int users; /* parent domains naming it; under the context's domains_lock */
};

struct uv_parent_domain {
	struct uroce_client_pd pd; /* the protection domain's handle: what takes a PD reads */
	struct ibv_pd *protection;
	struct uv_td *td;
	void *pd_context;
	struct uv_parent_domain *next; /* the context's list, under domains_lock */
};

static struct ibv_td *uv_op_alloc_td(struct ibv_context *context, struct ibv_td_init_attr *attr)
{
	struct uv_td *td;

	if (!attr || attr->comp_mask)
		return uv_null(EINVAL);
	td = calloc(1, sizeof(*td));
	if (!td)
		return uv_null(ENOMEM);
	td->ibv.context = context;
	return &td->ibv;
}

static int uv_op_dealloc_td(struct ibv_td *ibv)
{
	struct uv_td *td = (struct uv_td *)(void *)ibv;
	struct uv_context *uc = uv_ctx(ibv->context);
	int rc = 0;

	pthread_mutex_lock(&uc->domains_lock);
	if (td->users)
		rc = EBUSY;
	pthread_mutex_unlock(&uc->domains_lock);
	if (rc)
		return rc;
	free(td);
	return 0;
}

static struct ibv_pd *uv_op_alloc_parent_domain(struct ibv_context *context,
						struct ibv_parent_domain_init_attr *attr)
{
	const uint32_t known =
		IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	struct uv_context *uc = uv_ctx(context);
	struct uv_parent_domain *d;

	if (!attr || !attr->pd || attr->pd->context != context ||
	    (attr->td && attr->td->context != context) || (attr->comp_mask & ~known))
		return uv_null(EINVAL);
	if ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	    (!attr->alloc || !attr->free))
		return uv_null(EINVAL);
	/* A parent domain of a parent domain: mlx5 refuses it too. */
	if (uv_parent_domain_of(attr->pd))
		return uv_null(EINVAL);
	d = calloc(1, sizeof(*d));
	if (!d)
		return uv_null(ENOMEM);
	d->pd = *(const struct uroce_client_pd *)(const void *)attr->pd;
	d->protection = attr->pd;
	d->td = (struct uv_td *)(void *)attr->td;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		d->pd_context = attr->pd_context;
	pthread_mutex_lock(&uc->domains_lock);
	if (d->td)
		d->td->users++;
	d->next = uc->domains;
	uc->domains = d;
	pthread_mutex_unlock(&uc->domains_lock);
	return &d->pd.ibv;
}

struct ibv_pd *uv_parent_domain_of(struct ibv_pd *pd)
{
	struct uv_context *uc = uv_ctx(pd->context);
	struct uv_parent_domain *d;

	pthread_mutex_lock(&uc->domains_lock);
	for (d = uc->domains; d && &d->pd.ibv != pd; d = d->next)
		;
	pthread_mutex_unlock(&uc->domains_lock);
	return d ? d->protection : NULL;
}

int uv_dealloc_domain(struct ibv_pd *pd)
{
	struct uv_context *uc = uv_ctx(pd->context);
	struct uv_parent_domain **pp, *d = NULL;
	int rc = -ENOENT;

	pthread_mutex_lock(&uc->domains_lock);
	for (pp = &uc->domains; *pp; pp = &(*pp)->next) {
		if (&(*pp)->pd.ibv == pd) {
			d = *pp;
			*pp = d->next;
			if (d->td)
				d->td->users--;
			rc = 0;
			break;
		}
		if ((*pp)->protection == pd)
			rc = -EBUSY; /* a parent domain names it: keep looking for pd itself */
	}
	pthread_mutex_unlock(&uc->domains_lock);
	free(d);
	return rc;
}

void uv_domains_free_all(struct uv_context *uc)
{
	while (uc->domains) {
		struct uv_parent_domain *d = uc->domains;

		uc->domains = d->next;
		free(d);
	}
}

void uv_domains_init(struct uv_context *uc)
{
	pthread_mutex_init(&uc->domains_lock, NULL);
	uc->domains = NULL;
	uc->vctx.alloc_td = uv_op_alloc_td;
	uc->vctx.dealloc_td = uv_op_dealloc_td;
	uc->vctx.alloc_parent_domain = uv_op_alloc_parent_domain;
}
