/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Multicast groups (IBA 10.5 and 11.2.7; RoCEv2, annex A17: a group's GID is an IP
 * multicast address, IPv6 or IPv4-mapped): which UD QPs get a copy of a UD SEND to a group.
 * A small fixed table: groups are few and attaching is slow path; receive walks it once
 * per multicast packet.
 */
#include <errno.h>
#include <string.h>

#include "tp_internal.h"

bool uroce_tp_gid_is_mcast(const union ibv_gid *gid)
{
	if (uroce_gid_is_ipv4(gid->raw))
		return (uroce_gid_ipv4(gid->raw)[0] & 0xf0) == 0xe0; /* 224.0.0.0/4 */
	return gid->raw[0] == 0xff;
}

struct tp_mcast_group *tp_mcast_find(struct uroce_tp_dev *dev, const uint8_t gid[16])
{
	unsigned int i;

	for (i = 0; i < UROCE_TP_MAX_MCAST_GRP; i++)
		if (dev->mcast[i].nqps && memcmp(dev->mcast[i].gid.raw, gid, 16) == 0)
			return &dev->mcast[i];
	return NULL;
}

int uroce_tp_attach_mcast(struct uroce_tp_qp *qp, const union ibv_gid *gid)
{
	struct uroce_tp_dev *dev = qp->dev;
	struct tp_mcast_group *g;
	unsigned int i;

	if (qp->type != IBV_QPT_UD || !uroce_tp_gid_is_mcast(gid))
		return -EINVAL;
	g = tp_mcast_find(dev, gid->raw);
	if (!g) {
		for (i = 0; i < UROCE_TP_MAX_MCAST_GRP && dev->mcast[i].nqps; i++)
			;
		if (i == UROCE_TP_MAX_MCAST_GRP)
			return -ENOMEM;
		g = &dev->mcast[i];
		g->gid = *gid;
	}
	for (i = 0; i < g->nqps; i++)
		if (g->qp[i] == qp)
			return 0;
	if (g->nqps == UROCE_TP_MAX_MCAST_QP_ATTACH)
		return -ENOMEM;
	g->qp[g->nqps++] = qp;
	qp->nmcast++;
	return 0;
}

int uroce_tp_detach_mcast(struct uroce_tp_qp *qp, const union ibv_gid *gid)
{
	struct tp_mcast_group *g = tp_mcast_find(qp->dev, gid->raw);
	uint32_t i;

	if (!g)
		return -EINVAL;
	for (i = 0; i < g->nqps; i++)
		if (g->qp[i] == qp) {
			g->qp[i] = g->qp[--g->nqps];
			qp->nmcast--;
			return 0;
		}
	return -EINVAL;
}

void tp_mcast_detach_all(struct uroce_tp_qp *qp)
{
	unsigned int i;

	for (i = 0; i < UROCE_TP_MAX_MCAST_GRP && qp->nmcast; i++)
		if (qp->dev->mcast[i].nqps)
			uroce_tp_detach_mcast(qp, &qp->dev->mcast[i].gid);
}
