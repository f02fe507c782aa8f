/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma_init_qp_attr(): the QP attributes a connection implies, per state, as Linux's
 * ib_cm_init_qp_attr() and cma's overrides give them (and librdmacm for UD).
 */
#include <errno.h>
#include <string.h>

#include "cm_internal.h"

static void ah_from_path(const struct uroce_cm_id *id, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->port_num = 1;
	ah->sl = 0;
	ah->dlid = 0;
	ah->grh.dgid = id->path.dgid;
	ah->grh.sgid_index = id->path.sgid_index;
	ah->grh.flow_label = id->path.flow_label;
	ah->grh.hop_limit = id->path.hop_limit;
	ah->grh.traffic_class = id->path.traffic_class;
}

static int ud_attr(const struct uroce_cm_id *id, struct ibv_qp_attr *a, int *mask)
{
	switch (a->qp_state) {
	case IBV_QPS_INIT:
		a->pkey_index = 0;
		a->port_num = 1;
		a->qkey = id->qkey ? id->qkey : cma_default_qkey(id);
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
		return 0;
	case IBV_QPS_RTR:
		*mask = IBV_QP_STATE; /* librdmacm ucma_init_ud_qp() */
		return 0;
	case IBV_QPS_RTS:
		a->sq_psn = 0;
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		return 0;
	default:
		return -EINVAL;
	}
}

int uroce_cm_init_qp_attr(const struct uroce_cm_id *id, struct ibv_qp_attr *attr, int *mask)
{
	if (!id || !attr || !mask)
		return -EINVAL;
	enum ibv_qp_state want = attr->qp_state;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = want;
	*mask = 0;
	if (id->qpt == IBV_QPT_UD)
		return ud_attr(id, attr, mask);

	switch (want) {
	case IBV_QPS_INIT:
		attr->pkey_index = 0;
		attr->port_num = 1;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		if (!id->conn_valid) {
			/* before any REQ: cma_ib_init_qp_attr() grants nothing remote yet */
			attr->qp_access_flags = 0;
			return 0;
		}
		attr->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
		if (id->responder_resources)
			attr->qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		return 0;
	case IBV_QPS_RTR:
		if (!id->rtr_valid)
			return -EINVAL;
		ah_from_path(id, &attr->ah_attr);
		attr->path_mtu = (enum ibv_mtu)id->path_mtu;
		attr->dest_qp_num = id->remote_qpn;
		attr->rq_psn = id->seq_num; /* rdma_init_qp_attr(): our own advertised PSN */
		*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (id->qpt == IBV_QPT_RC) {
			attr->max_dest_rd_atomic = id->responder_resources;
			attr->min_rnr_timer = 0; /* ib_cm's cm_init_qp_rtr_attr() */
			*mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
		return 0;
	case IBV_QPS_RTS:
		if (!id->rtr_valid)
			return -EINVAL;
		attr->sq_psn = id->sq_psn; /* the PSN the peer advertised */
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (id->qpt == IBV_QPT_RC) {
			attr->retry_cnt = id->retry_count;
			attr->rnr_retry = id->rnr_retry_count;
			attr->max_rd_atomic = id->initiator_depth;
			attr->timeout =
				id->ack_timeout_set ? id->ack_timeout : id->local_ack_timeout;
			*mask |= IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
				 IBV_QP_TIMEOUT;
		}
		return 0;
	default:
		return -EINVAL;
	}
}
