/* SPDX-License-Identifier: BSD-3-Clause */
/* The core verbs on lib/client: PD, MR, completion channels and CQ events, CQ, SRQ, QP,
 * AH. Every object is lib/client's (its ibv struct first); this file adds what libibverbs
 * itself owns: cq_context, the event counts and the mutex/cond destroy waits on. */
#include <stdlib.h>
#include <string.h>

#include "uverbs.h"
#include "uroce_wire.h"

/* ---- PD ------------------------------------------------------------------------------ */

UV_EXPORT_1_1(ibv_alloc_pd) struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct uroce_client_pd *pd = uroce_client_alloc_pd(uv_cl(context));

	return pd ? &pd->ibv : NULL;
}

UV_EXPORT_1_1(ibv_dealloc_pd) int ibv_dealloc_pd(struct ibv_pd *pd)
{
	/* A parent domain is freed here; a PD one names is busy (domains.c). */
	int rc = uv_dealloc_domain(pd);

	if (rc != -ENOENT)
		return uv_err(-rc);
	return uv_err(uroce_client_dealloc_pd(to_upd(pd))); /* EBUSY in use */
}

/* Importing (ibv_import_device: verbs_device.c): the PD and MR are the other context's,
 * named here too; unimport forgets them here without destroying them. */
UV_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	struct uroce_client_pd *pd = uroce_client_import_pd(uv_cl(context), pd_handle);

	return pd ? &pd->ibv : NULL;
}

UV_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
	uroce_client_unimport_pd(to_upd(pd));
}

UV_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	struct uroce_client_mr *mr = uroce_client_import_mr(to_upd(pd), mr_handle);

	return mr ? &mr->ibv : NULL;
}

UV_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
	uroce_client_unimport_mr(to_umr(mr));
}

/* ---- MR ------------------------------------------------------------------------------ */

static struct ibv_mr *uv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	struct uroce_client_mr *mr;

	/* The optional flags (relaxed ordering...) may be ignored, as rdma-core does when
	 * the device lacks them. An iova other than addr (a zero-based MR...) is what
	 * peers and WQEs then use; the pages are still those at addr. */
	access &= ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	mr = uroce_client_reg_mr_iova(to_upd(pd), addr, length, iova, access);
	return mr ? &mr->ibv : NULL;
}

UV_EXPORT_1_1(ibv_reg_mr)
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return uv_reg_mr(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

UV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
					 uint64_t iova, int access)
{
	return uv_reg_mr(pd, addr, length, iova, (unsigned int)access);
}

UV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
					  uint64_t iova, unsigned int access)
{
	return uv_reg_mr(pd, addr, length, iova, access);
}

UV_EXPORT_1_1(ibv_dereg_mr) int ibv_dereg_mr(struct ibv_mr *mr)
{
	return uv_err(uroce_client_dereg_mr(to_umr(mr)));
}

/* rdma-core's checks and codes: what libibverbs refuses before the device sees it is
 * IBV_REREG_MR_ERR_INPUT, a refusal by the device IBV_REREG_MR_ERR_CMD, errno set either
 * way. Here the MR is as it was after either (lib/client registers anew before it lets
 * the old registration go). */
UV_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			   size_t length, int access)
{
	int rc;

	if ((flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!addr || !length)) ||
	    (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS)) ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) && (!pd || pd->context != mr->context))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if (!flags) { /* the kernel's refusal in rdma-core */
		errno = EINVAL;
		return IBV_REREG_MR_ERR_CMD;
	}
	/* As ibv_reg_mr: optional access flags may be ignored. */
	rc = uroce_client_rereg_mr(to_umr(mr), flags,
				   (flags & IBV_REREG_MR_CHANGE_PD) ? to_upd(pd) : NULL, addr,
				   length,
				   (unsigned int)access & ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE);
	if (rc) {
		errno = -rc;
		return IBV_REREG_MR_ERR_CMD;
	}
	return 0;
}

/* ---- completion channels ---------------------------------------------------------------- */

UV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct uroce_client_channel *ch = uroce_client_create_channel(uv_cl(context));

	return ch ? &ch->ibv : NULL;
}

UV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	/* EBUSY while a CQ uses it, as rdma-core */
	return uv_err(uroce_client_destroy_channel(to_uchannel(channel)));
}

UV_EXPORT_1_1(ibv_get_cq_event)
int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct uroce_client_cq *ccq;
	int rc = uroce_client_get_cq_event(to_uchannel(channel), &ccq);

	if (rc) {
		errno = rc; /* EAGAIN on a non-blocking channel fd */
		return -1;
	}
	*cq = &ccq->ibv;
	*cq_context = (*cq)->cq_context;
	pthread_mutex_lock(&(*cq)->mutex);
	uv_cq_of(*cq)->comp_reported++;
	pthread_mutex_unlock(&(*cq)->mutex);
	return 0;
}

UV_EXPORT_1_1(ibv_ack_cq_events) void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	uroce_client_ack_cq_events(to_ucq(cq), nevents);
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* ---- CQ -------------------------------------------------------------------------------- */

struct ibv_cq *uv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			    struct ibv_comp_channel *channel, int comp_vector, uint64_t wc_flags)
{
	struct uroce_client_cq *ccq;
	struct uv_cq *u;
	struct ibv_cq *cq;

	if (cqe <= 0 || comp_vector < 0 || comp_vector >= context->num_comp_vectors)
		return uv_null(EINVAL);
	u = calloc(1, sizeof(*u));
	if (!u)
		return uv_null(ENOMEM);
	ccq = uroce_client_create_cq(uv_cl(context), cqe, channel ? to_uchannel(channel) : NULL,
				     comp_vector);
	if (!ccq) {
		free(u);
		return NULL;
	}
	u->wc_flags = wc_flags;
	ccq->priv = u;
	cq = &ccq->ibv;
	cq->cq_context = cq_context;
	pthread_mutex_init(&cq->mutex, NULL);
	pthread_cond_init(&cq->cond, NULL);
	uv_cq_ex_init(&ccq->ibv_ex); /* every CQ is also an ibv_cq_ex */
	return cq;
}

UV_EXPORT_1_1(ibv_create_cq)
struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	return uv_create_cq(context, cqe, cq_context, channel, comp_vector, IBV_WC_STANDARD_FLAGS);
}

UV_EXPORT_1_1(ibv_destroy_cq) int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct uv_cq *u = uv_cq_of(cq);
	int rc;

	/* As rdma-core: wait until every event handed out is acked. */
	pthread_mutex_lock(&cq->mutex);
	while (cq->comp_events_completed != u->comp_reported ||
	       cq->async_events_completed != u->async_reported)
		pthread_cond_wait(&cq->cond, &cq->mutex);
	pthread_mutex_unlock(&cq->mutex);
	rc = uroce_client_destroy_cq(to_ucq(cq)); /* EBUSY while QPs use it */
	if (rc)
		return uv_err(rc);
	free(u);
	return 0;
}

UV_EXPORT_1_1(ibv_resize_cq) int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	return uv_err(-uroce_client_resize_cq(to_ucq(cq), cqe));
}

/* ---- SRQ ------------------------------------------------------------------------------- */

UV_EXPORT_1_1(ibv_create_srq)
struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct uroce_client_srq *s;
	struct ibv_srq *srq;
	struct uv_srq *u = calloc(1, sizeof(*u));

	if (!u)
		return uv_null(ENOMEM);
	s = uroce_client_create_srq(to_upd(pd), attr);
	if (!s) {
		free(u);
		return NULL;
	}
	s->priv = u;
	srq = &s->ibv;
	srq->srq_context = attr->srq_context;
	pthread_mutex_init(&srq->mutex, NULL);
	pthread_cond_init(&srq->cond, NULL);
	return srq;
}

UV_EXPORT_1_1(ibv_modify_srq)
int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	return uv_err(uroce_client_modify_srq(to_usrq(srq), attr, mask));
}

UV_EXPORT_1_1(ibv_query_srq) int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	return uv_err(uroce_client_query_srq(to_usrq(srq), attr));
}

UV_EXPORT_1_1(ibv_destroy_srq) int ibv_destroy_srq(struct ibv_srq *srq)
{
	struct uroce_client_srq *s = to_usrq(srq);
	struct uv_srq *u = s->priv;
	int rc;

	pthread_mutex_lock(&srq->mutex);
	while (srq->events_completed != u->async_reported)
		pthread_cond_wait(&srq->cond, &srq->mutex);
	pthread_mutex_unlock(&srq->mutex);
	rc = uroce_client_destroy_srq(s);
	if (rc)
		return uv_err(rc);
	free(u);
	return 0;
}

/* ---- QP -------------------------------------------------------------------------------- */

struct ibv_qp *uv_qp_adopt(struct uroce_client_qp *c, struct uv_qp *u, uint64_t send_ops_flags)
{
	struct ibv_qp *qp;

	if (!c) {
		free(u);
		return NULL;
	}
	c->priv = u;
	qp = &c->ibv;
	pthread_mutex_init(&qp->mutex, NULL);
	pthread_cond_init(&qp->cond, NULL);
	if (send_ops_flags)
		uv_qp_ex_init(&c->ibv_ex);
	return qp;
}

struct ibv_qp *uv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr,
			    uint64_t send_ops_flags)
{
	struct uv_qp *u;

	if (!attr->send_cq || (!attr->recv_cq && attr->qp_type != IBV_QPT_XRC_SEND))
		return uv_null(EINVAL);
	u = calloc(1, sizeof(*u));
	if (!u)
		return uv_null(ENOMEM);
	return uv_qp_adopt(uroce_client_create_qp(to_upd(pd), attr), u, send_ops_flags);
}

UV_EXPORT_1_1(ibv_create_qp)
struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	return uv_create_qp(pd, attr, 0);
}

UV_EXPORT_1_1(ibv_modify_qp)
int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	return uv_err(uroce_client_modify_qp(to_uqp(qp), attr, attr_mask));
}

UV_EXPORT_1_1(ibv_query_qp)
int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	return uv_err(
		uroce_client_query_qp(to_uqp(qp), attr, attr_mask, init_attr));
}

/* Multicast (UD QPs; RoCE ignores the LID): the daemon's transport copies a group's
 * packets to each attached QP. */
UV_EXPORT_1_1(ibv_attach_mcast) int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
						    uint16_t lid)
{
	return uv_err(uroce_client_mcast(to_uqp(qp), gid, lid, true));
}

UV_EXPORT_1_1(ibv_detach_mcast) int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
						    uint16_t lid)
{
	return uv_err(uroce_client_mcast(to_uqp(qp), gid, lid, false));
}

UV_EXPORT_1_1(ibv_destroy_qp) int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct uv_qp *u = uv_qp_of(qp);
	int rc;

	pthread_mutex_lock(&qp->mutex);
	while (qp->events_completed != u->async_reported)
		pthread_cond_wait(&qp->cond, &qp->mutex);
	pthread_mutex_unlock(&qp->mutex);
	rc = uroce_client_destroy_qp(to_uqp(qp));
	if (rc)
		return uv_err(rc);
	uv_qp_ex_free(u);
	free(u);
	return 0;
}

/* Data-in-order: 0 (no guarantee promised), what rdma-core returns without the
 * provider op. */
UV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
					 uint32_t flags)
{
	(void)qp, (void)op, (void)flags;
	return 0;
}

/* ---- AH -------------------------------------------------------------------------------- */

UV_EXPORT_1_1(ibv_create_ah)
struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct uroce_client_ah *ah = uroce_client_create_ah(to_upd(pd), attr);

	return ah ? &ah->ibv : NULL;
}

UV_EXPORT_1_1(ibv_destroy_ah) int ibv_destroy_ah(struct ibv_ah *ah)
{
	return uv_err(uroce_client_destroy_ah(to_uah(ah)));
}

/* The AH that answers a UD receive: RoCE v2 puts the IP header of the request in the
 * 40-byte GRH area (IPv6 header, or an IPv4 header in its last 20 bytes). */
UV_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
				  struct ibv_wc *wc, struct ibv_grh *grh,
				  struct ibv_ah_attr *ah_attr)
{
	const uint8_t *raw = (const uint8_t *)grh;
	union ibv_gid dst;
	int len, i;

	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = 0; /* a UD completion's sl is the RoCE packet type, not a level */
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (!(wc->wc_flags & IBV_WC_GRH))
		return uv_err(EPROTOTYPE); /* RoCE needs the GRH */
	memset(&dst, 0, sizeof(dst));
	if ((raw[20] >> 4) == 4) {
		/* IPv4: saddr at 20 + 12, daddr at 20 + 16; GIDs are IPv4-mapped. */
		uroce_gid_from_ipv4(ah_attr->grh.dgid.raw, raw + 32);
		uroce_gid_from_ipv4(dst.raw, raw + 36);
		ah_attr->grh.traffic_class = raw[21];
	} else {
		uint32_t vtf = be32toh(grh->version_tclass_flow);

		ah_attr->grh.dgid = grh->sgid;
		dst = grh->dgid;
		ah_attr->grh.traffic_class = (uint8_t)(vtf >> 20);
		ah_attr->grh.flow_label = vtf & 0xfffff;
	}
	ah_attr->is_global = 1;
	ah_attr->grh.hop_limit = 0xff;
	len = 0;
	{
		struct ibv_port_attr pa;

		if (uroce_client_query_port(uv_cl(context), port_num, &pa) == 0)
			len = pa.gid_tbl_len;
	}
	for (i = 0; i < len; i++) {
		union ibv_gid g;

		if (uroce_client_query_gid(uv_cl(context), port_num, i, &g) == 0 &&
		    memcmp(&g, &dst, sizeof(g)) == 0) {
			ah_attr->grh.sgid_index = (uint8_t)i;
			return 0;
		}
	}
	return uv_err(ENOENT); /* not addressed to one of our GIDs */
}

UV_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
					       struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}
