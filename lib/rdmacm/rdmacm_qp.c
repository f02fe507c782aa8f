/* SPDX-License-Identifier: BSD-3-Clause */
/* QPs, SRQs and CQs an id creates (rdma_create_qp: CQs with completion channels when the
 * caller gives none, the default PD), and the QP state transitions librdmacm makes with
 * the CM's attributes (rdma_init_qp_attr): a connected QP goes to INIT at creation, to
 * RTR and RTS at accept or CONNECT_RESPONSE, to ERR at disconnect or rejection; a UD QP
 * goes to RTS at creation. */
#include <string.h>

#include "rdmacm.h"

static int ucma_modify(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	int rc = ibv_modify_qp(qp, attr, mask);

	return rc ? ucma_fail(rc) : 0;
}

int ucma_modify_qp_rtr(struct ucma_id *id, uint8_t resp_res)
{
	struct ibv_qp_attr attr;
	int mask;

	if (!id->id.qp)
		return 0;
	/* INIT again first, with what the CM has now (rdma-core does the same). */
	attr.qp_state = IBV_QPS_INIT;
	if (rdma_init_qp_attr(&id->id, &attr, &mask) || ucma_modify(id->id.qp, &attr, mask))
		return -1;
	attr.qp_state = IBV_QPS_RTR;
	if (rdma_init_qp_attr(&id->id, &attr, &mask))
		return -1;
	if (resp_res != RDMA_MAX_RESP_RES)
		attr.max_dest_rd_atomic = resp_res;
	return ucma_modify(id->id.qp, &attr, mask);
}

int ucma_modify_qp_rts(struct ucma_id *id, uint8_t init_depth)
{
	struct ibv_qp_attr attr;
	int mask;

	if (!id->id.qp)
		return 0;
	attr.qp_state = IBV_QPS_RTS;
	if (rdma_init_qp_attr(&id->id, &attr, &mask))
		return -1;
	if (init_depth != RDMA_MAX_INIT_DEPTH)
		attr.max_rd_atomic = init_depth;
	return ucma_modify(id->id.qp, &attr, mask);
}

int ucma_modify_qp_err(struct ucma_id *id)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};

	if (!id->id.qp)
		return 0;
	return ucma_modify(id->id.qp, &attr, IBV_QP_STATE);
}

static int ucma_init_conn_qp(struct ucma_id *id, struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_INIT};
	int mask;

	if (rdma_init_qp_attr(&id->id, &attr, &mask))
		return -1;
	return ucma_modify(qp, &attr, mask);
}

static int ucma_init_ud_qp(struct ucma_id *id, struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_INIT};
	int mask;

	if (rdma_init_qp_attr(&id->id, &attr, &mask) || ucma_modify(qp, &attr, mask))
		return -1;
	attr.qp_state = IBV_QPS_RTR;
	if (ucma_modify(qp, &attr, IBV_QP_STATE))
		return -1;
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	return ucma_modify(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static void ucma_destroy_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		if (id->send_cq && id->send_cq != id->recv_cq) {
			ibv_destroy_cq(id->send_cq);
			id->send_cq = NULL;
		}
		id->recv_cq = NULL;
	}
	if (id->recv_cq_channel) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		if (id->send_cq_channel && id->send_cq_channel != id->recv_cq_channel) {
			ibv_destroy_comp_channel(id->send_cq_channel);
			id->send_cq_channel = NULL;
		}
		id->recv_cq_channel = NULL;
	}
}

/* A CQ, with its own completion channel, for each queue the caller gave none for (0: that
 * one is not needed); rdma_verbs.h's rdma_get_send/recv_comp wait on these channels. */
static int ucma_create_cqs(struct rdma_cm_id *id, uint32_t send_size, uint32_t recv_size)
{
	if (recv_size) {
		id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->recv_cq_channel)
			goto err;
		id->recv_cq = ibv_create_cq(id->verbs, (int)recv_size, id, id->recv_cq_channel, 0);
		if (!id->recv_cq)
			goto err;
	}
	if (send_size) {
		id->send_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->send_cq_channel)
			goto err;
		id->send_cq = ibv_create_cq(id->verbs, (int)send_size, id, id->send_cq_channel, 0);
		if (!id->send_cq)
			goto err;
	}
	return 0;
err:
	ucma_destroy_cqs(id);
	return -1;
}

UCMA_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;

	if (!id->verbs || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		return ucma_fail(EINVAL);
	if (attr->srq_type != IBV_SRQT_BASIC)
		return ucma_fail(EOPNOTSUPP); /* XRC: uroce has no XRC domains */
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = id->pd;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	srq = ibv_create_srq_ex(id->verbs, attr);
	if (!srq)
		return -1;
	if (!id->pd)
		id->pd = attr->pd;
	id->srq = srq;
	return 0;
}

UCMA_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
				struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex attr_ex;
	int ret;

	memset(&attr_ex, 0, sizeof(attr_ex));
	memcpy(&attr_ex, attr, sizeof(*attr));
	attr_ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	attr_ex.srq_type = id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
	attr_ex.pd = pd;
	ret = rdma_create_srq_ex(id, &attr_ex);
	memcpy(attr, &attr_ex, sizeof(*attr));
	return ret;
}

UCMA_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
	ucma_destroy_cqs(id);
}

UCMA_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp *qp;
	int err;

	if (id->qp || !id->verbs)
		return ucma_fail(EINVAL);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = id->pd;
	} else if (id->verbs != attr->pd->context) {
		return ucma_fail(EINVAL);
	}
	if ((id->recv_cq && attr->recv_cq && id->recv_cq != attr->recv_cq) ||
	    (id->send_cq && attr->send_cq && id->send_cq != attr->send_cq))
		return ucma_fail(EINVAL);
	if (ucma_create_cqs(id, attr->send_cq || id->send_cq ? 0 : attr->cap.max_send_wr,
			    attr->recv_cq || id->recv_cq ? 0 : attr->cap.max_recv_wr))
		return -1;
	if (!attr->send_cq)
		attr->send_cq = id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = id->recv_cq;
	if (id->srq && !attr->srq)
		attr->srq = id->srq;
	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp)
		goto err_cqs;
	if (id->qp_type == IBV_QPT_UD ? ucma_init_ud_qp(ucma_id_of(id), qp) :
					ucma_init_conn_qp(ucma_id_of(id), qp)) {
		err = errno;
		ibv_destroy_qp(qp);
		errno = err;
		goto err_cqs;
	}
	id->pd = qp->pd;
	id->qp = qp;
	return 0;
err_cqs:
	err = errno;
	ucma_destroy_cqs(id);
	return ucma_fail(err);
}

UCMA_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			       struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex attr_ex;
	int ret;

	memset(&attr_ex, 0, sizeof(attr_ex));
	memcpy(&attr_ex, qp_init_attr, sizeof(*qp_init_attr));
	attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr_ex.pd = pd ? pd : id->pd;
	ret = rdma_create_qp_ex(id, &attr_ex);
	memcpy(qp_init_attr, &attr_ex, sizeof(*qp_init_attr));
	return ret;
}

UCMA_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	ibv_destroy_qp(id->qp);
	id->qp = NULL;
	ucma_destroy_cqs(id);
}
