/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What one user may hold: the [limits] of uroced.conf, per uid over all of the user's
 * connections and (client_*) per connection within that, and the registered bytes each
 * process may pin (its RLIMIT_MEMLOCK, as the kernel's ib_umem_get() charges them).
 *
 * The daemon is root and its memory, descriptors and poll loop are every tenant's: without
 * limits one user's QPs, memory files or pinned pages would starve the others. The
 * errnos are the kernel's: an object beyond a limit is EAGAIN, what the rdma cgroup
 * controller answers (ib_rdmacg_try_charge), pinned bytes beyond RLIMIT_MEMLOCK are
 * ENOMEM, what ibv_reg_mr gives on any RNIC. Root and control.admin_group are exempt from
 * [limits]; RLIMIT_MEMLOCK binds every process without CAP_IPC_LOCK, root's included
 * when it dropped that capability, as in the kernel.
 *
 * The sums walk the client list: at most control.max_clients entries, on the control
 * path only.
 */
#include <errno.h>

#include "rnic_internal.h"

/* [limits] for objects of @p type, per user (or, @p per_client, per connection); 0: none. */
static uint64_t limit_of(const struct uroce_conf *conf, enum rnic_obj_type type, bool per_client)
{
#define LIMIT(n) (per_client ? conf->limits.client_##n : conf->limits.n)
	switch (type) {
	case RNIC_OBJ_PD:
		return LIMIT(pds);
	case RNIC_OBJ_REGION:
		return LIMIT(regions);
	case RNIC_OBJ_MR:
	case RNIC_OBJ_MW:
		return LIMIT(mrs);
	case RNIC_OBJ_CHANNEL:
	case RNIC_OBJ_CM_CHANNEL:
		return LIMIT(channels);
	case RNIC_OBJ_CQ:
		return LIMIT(cqs);
	case RNIC_OBJ_SRQ:
		return LIMIT(srqs);
	case RNIC_OBJ_QP:
	case RNIC_OBJ_FLOW: /* a QP's rules: as many as it may have QPs */
	case RNIC_OBJ_XRCD: /* a domain serves QPs: as many as QPs */
		return LIMIT(qps);
	case RNIC_OBJ_AH:
		return LIMIT(ahs);
	case RNIC_OBJ_CM_ID:
		return LIMIT(cm_ids);
	case RNIC_OBJ_FREE:
	case RNIC_OBJ_TYPES:
		break;
	}
#undef LIMIT
	return 0;
}

/* What client @p o holds of @p type's limit: completion and rdma_cm event channels are
 * one limit (each is a pipe the daemon holds), memory regions and windows another
 * (each is a key of the device's one key table). */
static uint64_t held_of(const struct uroce_rnic_client *o, enum rnic_obj_type type)
{
	if (type == RNIC_OBJ_CHANNEL || type == RNIC_OBJ_CM_CHANNEL)
		return o->counts[RNIC_OBJ_CHANNEL] + o->counts[RNIC_OBJ_CM_CHANNEL];
	if (type == RNIC_OBJ_MR || type == RNIC_OBJ_MW)
		return o->counts[RNIC_OBJ_MR] + o->counts[RNIC_OBJ_MW];
	return o->counts[type];
}

static void refused(struct uroce_rnic_client *c, const char *what, uint64_t limit)
{
	c->rnic->cnt.limit_refused++;
	RNIC_DBG(c->rnic, "client %s[%d] uid %u: %s at its limit %llu", c->name, (int)c->pid,
		 (unsigned)c->uid, what, (unsigned long long)limit);
}

int rnic_limit_object(struct uroce_rnic_client *c, enum rnic_obj_type type)
{
	const struct uroce_rnic_client *o;
	uint64_t limit, held = 0;

	if (c->admin)
		return 0;
	limit = limit_of(&c->rnic->conf, type, true);
	if (limit && held_of(c, type) >= limit) {
		refused(c, "objects of the connection", limit);
		return -EAGAIN;
	}
	limit = limit_of(&c->rnic->conf, type, false);
	if (!limit)
		return 0;
	for (o = c->rnic->clients; o; o = o->next)
		if (o->uid == c->uid)
			held += held_of(o, type);
	if (held < limit)
		return 0;
	refused(c, "objects of the user", limit);
	return -EAGAIN;
}

int rnic_limit_client(struct uroce_rnic_client *c)
{
	const struct uroce_rnic_client *o;
	uint64_t limit = c->rnic->conf.limits.clients, held = 0;

	if (!limit || c->admin)
		return 0;
	for (o = c->rnic->clients; o; o = o->next)
		if (o != c && o->uid == c->uid && uroce_rnic_client_greeted(o))
			held++;
	if (held < limit)
		return 0;
	refused(c, "connections", limit);
	return -EAGAIN;
}

int rnic_limit_pin(struct uroce_rnic_client *c, uint64_t bytes)
{
	const struct uroce_rnic *nic = c->rnic;
	const struct uroce_rnic_client *o;
	uint64_t user = 0, process = 0, limit;

	for (o = nic->clients; o; o = o->next) {
		if (o->uid == c->uid)
			user += o->pinned;
		if (o->pid == c->pid)
			process += o->pinned;
	}
	limit = nic->conf.limits.client_mr_bytes;
	if (limit && !c->admin && (bytes > limit || c->pinned > limit - bytes)) {
		refused(c, "registered bytes (limits.client_mr_bytes)", limit);
		return -ENOMEM;
	}
	limit = nic->conf.limits.mr_bytes;
	if (limit && !c->admin && (bytes > limit || user > limit - bytes)) {
		refused(c, "registered bytes (limits.mr_bytes)", limit);
		return -ENOMEM;
	}
	/* Asked at each registration, as the kernel reads the rlimit then: an application
	 * may raise its soft limit after opening the device. */
	limit = nic->ops->memlock_limit ? nic->ops->memlock_limit(nic->io_ctx, c->conn) :
					  UINT64_MAX;
	if (bytes > limit || process > limit - bytes) {
		refused(c, "registered bytes (RLIMIT_MEMLOCK)", limit);
		return -ENOMEM;
	}
	return 0;
}

int rnic_limit_maps(struct uroce_rnic_client *c, uint64_t n)
{
	const struct uroce_rnic_client *o;
	uint64_t limit = c->rnic->conf.limits.mappings, user = 0;

	if (!limit || c->admin)
		return 0;
	for (o = c->rnic->clients; o; o = o->next)
		if (o->uid == c->uid)
			user += o->maps;
	if (n > limit || user > limit - n) {
		refused(c, "the daemon's mappings (limits.mappings)", limit);
		return -ENOMEM;
	}
	return 0;
}
