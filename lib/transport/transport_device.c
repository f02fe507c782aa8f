/* SPDX-License-Identifier: BSD-3-Clause */
/* The device, its protection domains and address handles. Each other object has its file,
 * as in Linux rxe: transport_mr.c, transport_mw.c, transport_cq.c, transport_srq.c. */
#include <stdlib.h>
#include <string.h>

#include "tp_internal.h"

void uroce_tp_dev_cfg_init(struct uroce_tp_dev_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->ack_coalesce = 16;
	cfg->port_mtu = IBV_MTU_1024;
	cfg->max_unacked_psns = 128;  /* rxe: RXE_MAX_UNACKED_PSNS */
	cfg->max_pkts_per_ack = 64;   /* rxe: RXE_MAX_PKT_PER_ACK */
	cfg->tx_burst = 32;
	cfg->seed = 1;
}

/* The host's unpredictable source, or splitmix64 seeded, so that a test run is
 * reproducible from its seed. */
uint64_t tp_rand(struct uroce_tp_dev *dev)
{
	uint64_t z;

	if (dev->cfg.random)
		return dev->cfg.random(dev->cfg.io_ctx);
	z = (dev->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

struct uroce_tp_dev *uroce_tp_dev_create(const struct uroce_tp_dev_cfg *cfg)
{
	struct uroce_tp_dev *dev;

	if (cfg->tx == NULL || (cfg->tx_buf == NULL) != (cfg->tx_commit == NULL) ||
	    cfg->gid_count == 0 || cfg->gid_count > UROCE_TP_MAX_GID ||
	    cfg->ack_coalesce == 0 || cfg->max_unacked_psns == 0 ||
	    cfg->max_unacked_psns > (1u << 22) || cfg->max_pkts_per_ack == 0 ||
	    cfg->port_mtu < IBV_MTU_256 || cfg->port_mtu > IBV_MTU_4096 ||
	    cfg->vlan_id > 4094) {
		errno = EINVAL;
		return NULL;
	}
	dev = calloc(1, sizeof(*dev));
	if (dev == NULL)
		return NULL;
	dev->cfg = *cfg;
	if (!dev->cfg.tx_ctx)
		dev->cfg.tx_ctx = cfg->io_ctx;
	dev->rng = cfg->seed;
	dev->visit_left = UINT32_MAX;
	tp_list_init(&dev->pds);
	tp_list_init(&dev->cqs);
	tp_list_init(&dev->ready_cqs);
	tp_list_init(&dev->srqs);
	tp_list_init(&dev->ahs);
	tp_list_init(&dev->xrcds);
	tp_list_init(&dev->work);
	tp_list_init(&dev->flows);
	/* QPN 0 and 1 are the SMI and GSI QPs (IBA 10.2.5): never handed out. */
	dev->next_qpn = 0x10 + (uint32_t)(tp_rand(dev) % 0x1000);
	return dev;
}

void uroce_tp_dev_destroy(struct uroce_tp_dev *dev)
{
	if (dev == NULL)
		return;
	/* In the order verbs would destroy them, each release making the next possible. */
	tp_flow_destroy_all(dev);
	while (dev->qps)
		uroce_tp_destroy_qp(dev->qps);
	while (dev->ahs.next != &dev->ahs)
		uroce_tp_destroy_ah((struct uroce_tp_ah *)dev->ahs.next);
	while (dev->srqs.next != &dev->srqs)
		uroce_tp_destroy_srq((struct uroce_tp_srq *)dev->srqs.next);
	while (dev->xrcds.next != &dev->xrcds)
		uroce_tp_dealloc_xrcd((struct uroce_tp_xrcd *)dev->xrcds.next);
	while (dev->cqs.next != &dev->cqs)
		uroce_tp_destroy_cq((struct uroce_tp_cq *)dev->cqs.next);
	/* Windows before MRs: an MR with a window bound cannot be deregistered. */
	for (uint32_t i = 0; i < dev->mw_cap; i++)
		if (dev->mws[i])
			uroce_tp_dealloc_mw(dev->mws[i]);
	for (uint32_t i = 0; i < dev->mr_cap; i++)
		if (dev->mrs[i])
			uroce_tp_dereg_mr(dev->mrs[i]);
	while (dev->pds.next != &dev->pds)
		uroce_tp_dealloc_pd((struct uroce_tp_pd *)dev->pds.next);
	free(dev->mrs);
	free(dev->mws);
	free(dev->xrc_srqs);
	free(dev->heap);
	free(dev);
}

void uroce_tp_query_device(const struct uroce_tp_dev *dev, struct ibv_device_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	memcpy(&attr->sys_image_guid, dev->cfg.mac, 6);
	attr->max_mr_size = UINT64_MAX;
	attr->page_size_cap = 0xfffff000;
	attr->vendor_id = 0xffffff; /* not Mellanox's nor Amazon's: no vendor paths */
	attr->max_qp = 1 << 20;
	attr->max_qp_wr = UROCE_TP_MAX_QP_WR;
	/* Memory windows of type 1 and 2B, as rxe. Not IBV_DEVICE_MEM_MGT_EXTENSIONS: there
	 * are no fast-registered MRs, and a program that reads it (SPDK's NVMe-oF target then
	 * answers with SEND with Invalidate of its MRs) would be refused. */
	/* RAW_IP_CSUM and MANAGED_FLOW_STEERING: raw packet QPs' checksum offload and
	 * ibv_create_flow (raw.c, flow.c), as mlx5 says them. */
	attr->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SRQ_RESIZE |
				 IBV_DEVICE_N_NOTIFY_CQ | IBV_DEVICE_MEM_WINDOW |
				 IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_RAW_IP_CSUM |
				 IBV_DEVICE_MANAGED_FLOW_STEERING;
	attr->max_sge = UROCE_TP_MAX_SGE;
	attr->max_sge_rd = UROCE_TP_MAX_SGE;
	attr->max_cq = 1 << 20;
	attr->max_cqe = UROCE_TP_MAX_CQE;
	attr->max_mr = 1 << 20;
	attr->max_mw = 1 << 20;
	attr->max_pd = 1 << 20;
	attr->max_qp_rd_atom = UROCE_TP_MAX_RD_ATOMIC;
	attr->max_qp_init_rd_atom = UROCE_TP_MAX_RD_ATOMIC;
	attr->max_res_rd_atom = UROCE_TP_MAX_RD_ATOMIC << 10;
	attr->atomic_cap = IBV_ATOMIC_HCA;
	attr->max_ah = 1 << 20;
	attr->max_srq = 1 << 20;
	attr->max_srq_wr = UROCE_TP_MAX_QP_WR;
	attr->max_srq_sge = UROCE_TP_MAX_SGE;
	attr->max_pkeys = 1;
	attr->max_mcast_grp = UROCE_TP_MAX_MCAST_GRP;
	attr->max_mcast_qp_attach = UROCE_TP_MAX_MCAST_QP_ATTACH;
	attr->max_total_mcast_qp_attach = UROCE_TP_MAX_MCAST_GRP * UROCE_TP_MAX_MCAST_QP_ATTACH;
	attr->phys_port_cnt = 1;
}

const struct uroce_tp_counters *uroce_tp_counters(const struct uroce_tp_dev *dev)
{
	return &dev->cnt;
}

uint64_t uroce_tp_turn_wait_max(const struct uroce_tp_dev *dev)
{
	return dev->turn_wait_max;
}

void tp_event(struct uroce_tp_dev *dev, enum ibv_event_type type, void *object)
{
	if (dev->cfg.event)
		dev->cfg.event(dev->cfg.io_ctx, type, object);
}

void uroce_tp_set_debug_log(struct uroce_tp_dev *dev,
			    void (*debug_log)(void *io_ctx, const char *fmt, va_list ap))
{
	dev->cfg.debug_log = debug_log;
}

void tp_debug(struct uroce_tp_dev *dev, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	dev->cfg.debug_log(dev->cfg.io_ctx, fmt, ap);
	va_end(ap);
}

/* ---- PD ------------------------------------------------------------------------------- */

struct uroce_tp_pd *uroce_tp_alloc_pd(struct uroce_tp_dev *dev)
{
	struct uroce_tp_pd *pd = calloc(1, sizeof(*pd));

	if (pd) {
		pd->dev = dev;
		tp_list_add(&dev->pds, &pd->node);
	}
	return pd;
}

int uroce_tp_dealloc_pd(struct uroce_tp_pd *pd)
{
	if (pd->refs)
		return -EBUSY;
	tp_list_del(&pd->node);
	free(pd);
	return 0;
}

/* ---- AH ------------------------------------------------------------------------------- */

struct uroce_tp_ah *uroce_tp_create_ah(struct uroce_tp_pd *pd, const struct ibv_ah_attr *attr,
				       const uint8_t dmac[6])
{
	struct uroce_tp_ah *ah;

	if (!attr->is_global || attr->port_num != 1 || dmac == NULL) {
		errno = EINVAL; /* RoCE needs a GRH (IBA A16.4.3) */
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (ah == NULL)
		return NULL;
	if (tp_path_tmpl(pd->dev, attr, dmac, &ah->tmpl) != 0) {
		free(ah);
		errno = EINVAL;
		return NULL;
	}
	ah->pd = pd;
	pd->refs++;
	tp_list_add(&pd->dev->ahs, &ah->node);
	return ah;
}

int uroce_tp_destroy_ah(struct uroce_tp_ah *ah)
{
	ah->pd->refs--;
	tp_list_del(&ah->node);
	free(ah);
	return 0;
}
