/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Address vectors: the next hop (MAC) of a destination GID, which lib/ipstack's neighbour
 * resolution finds, for CREATE_AH, RESOLVE_L2 and MODIFY_QP with an address (qp.c). A
 * request whose neighbour is not known yet waits in c->pending and is handled again once
 * it is (rnic_handle_resolved(), rnic.c).
 */
#include <errno.h>
#include <string.h>

#include "rnic_internal.h"

int rnic_resolve(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h, const void *payload,
		 const struct ibv_ah_attr *ah, uint8_t mac[6])
{
	struct uroce_rnic *nic = c->rnic;
	int rc;

	/* RoCE has no LIDs: every address is a GRH (rdma-core's rxe says EINVAL too). */
	if (!ah->is_global || ah->port_num > 1)
		return -EINVAL;
	rc = uroce_ip_resolve(nic->ip, ah->grh.dgid.raw, rnic_now(nic), mac, c->id);
	RNIC_DBG(nic, "client %s[%d]: next hop of GID %02x%02x..%02x%02x%02x%02x: %s", c->name,
		 c->pid, ah->grh.dgid.raw[0], ah->grh.dgid.raw[1], ah->grh.dgid.raw[12],
		 ah->grh.dgid.raw[13], ah->grh.dgid.raw[14], ah->grh.dgid.raw[15],
		 rc == 0       ? "known" :
		 rc == -EAGAIN ? "resolving" :
				 strerror(-rc));
	if (rc == 0)
		return 1;
	if (rc != -EAGAIN)
		return rc;
	/* The whole request (header and payload) is handled again once the neighbour is
	 * known. */
	memcpy(c->pending.msg, h, sizeof(*h));
	memcpy(c->pending.msg + sizeof(*h), payload, h->len - sizeof(*h));
	c->pending.len = h->len;
	c->pending.active = true;
	return 0;
}

void rnic_cmd_create_ah(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_create_ah_req *req = payload;
	struct uroce_tp_pd *pd = rnic_pd_get(c, req->pd);
	struct uroce_tp_ah *ah;
	uint8_t mac[6];
	uint32_t handle;
	int rc;

	if (!pd) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	rc = rnic_limit_object(c, RNIC_OBJ_AH);
	if (rc) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	rc = rnic_resolve(c, h, req, &req->attr, mac);
	if (rc == 0)
		return; /* it waits in c->pending (rnic_resolve) */
	if (rc < 0) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	ah = uroce_tp_create_ah(pd, &req->attr, mac);
	if (!ah) {
		REPLY(c, h, -errno, NULL, 0);
		return;
	}
	handle = rnic_obj_add(c, RNIC_OBJ_AH, ah);
	if (!handle)
		uroce_tp_destroy_ah(ah);
	rnic_reply_handle(c, h, handle);
}

/* RESOLVE_L2: what CREATE_AH resolves, answered instead of kept in an AH. */
void rnic_cmd_resolve_l2(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			 const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_resolve_l2_req *req = payload;
	struct uroce_ctrl_resolve_l2_rep rep = {0};
	int rc;

	if (req->attr.grh.sgid_index >= c->rnic->ngids) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	rc = rnic_resolve(c, h, req, &req->attr, rep.mac);
	if (rc == 0)
		return; /* it waits in c->pending (rnic_resolve) */
	if (rc < 0) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	rep.vid = c->rnic->conf.port.vlan ? (uint16_t)c->rnic->conf.port.vlan : 0xffff;
	REPLY(c, h, 0, &rep, sizeof(rep));
}
