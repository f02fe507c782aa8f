/* SPDX-License-Identifier: BSD-3-Clause */
/* The device and its simple objects: PD, MR, memory window, AH, CQ, SRQ; SGE access through
 * MRs, remote access through MRs and windows. */
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
	dev->rng = cfg->seed;
	dev->visit_left = UINT32_MAX;
	tp_list_init(&dev->pds);
	tp_list_init(&dev->cqs);
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

/* ---- MR ------------------------------------------------------------------------------- */

struct uroce_tp_mr *uroce_tp_reg_mr(struct uroce_tp_pd *pd, uint64_t iova, void *host,
				    uint64_t length, unsigned int access)
{
	struct uroce_tp_dev *dev = pd->dev;
	/* MW_BIND: windows may be bound to it (C10-73); HUGETLB: a hint. */
	const unsigned int known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
				   IBV_ACCESS_RELAXED_ORDERING | IBV_ACCESS_MW_BIND |
				   IBV_ACCESS_HUGETLB;
	/* On-demand paging, which the device has not: the kernel's EOPNOTSUPP, so that
	 * programs skip rather than fail. */
	const unsigned int lacking = IBV_ACCESS_ON_DEMAND;
	struct uroce_tp_mr *mr;
	uint32_t idx;

	if (access & lacking) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* IBA 10.6.3.1 / ibv_reg_mr(3): remote write and atomic need local write. */
	if ((access & ~known) ||
	    ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & IBV_ACCESS_LOCAL_WRITE)) ||
	    (length > 0 && host == NULL) || iova + length < iova) {
		errno = EINVAL;
		return NULL;
	}
	for (idx = 1; idx < dev->mr_cap && dev->mrs[idx]; idx++)
		;
	if (idx >= dev->mr_cap) {
		uint32_t cap = dev->mr_cap ? dev->mr_cap * 2 : 64;
		struct uroce_tp_mr **n;

		if (cap > TP_MW_INDEX_BIT) { /* the indices above are windows' */
			errno = ENOMEM;
			return NULL;
		}
		n = realloc(dev->mrs, cap * sizeof(*n));
		if (n == NULL)
			return NULL;
		memset(n + dev->mr_cap, 0, (cap - dev->mr_cap) * sizeof(*n));
		dev->mrs = n;
		dev->mr_cap = cap;
		idx = idx ? idx : 1;
	}
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL)
		return NULL;
	mr->pd = pd;
	mr->iova = iova;
	mr->host = host;
	mr->length = length;
	mr->access = access;
	/* A fresh random low byte each time: a key kept after dereg is refused even when
	 * its table slot is reused (IBA 10.6.2: "key portion"). */
	mr->key = idx << 8 | (uint8_t)tp_rand(dev);
	dev->mrs[idx] = mr;
	pd->refs++;
	return mr;
}

void uroce_tp_mr_keys(const struct uroce_tp_mr *mr, uint32_t *lkey, uint32_t *rkey)
{
	if (lkey)
		*lkey = mr->key;
	if (rkey)
		*rkey = mr->key;
}

void uroce_tp_mr_set_ctx(struct uroce_tp_mr *mr, void *ctx)
{
	mr->ctx = ctx;
}

int uroce_tp_dereg_mr(struct uroce_tp_mr *mr)
{
	struct uroce_tp_dev *dev = mr->pd->dev;

	/* A bound window would lead into memory no longer registered: the windows are
	 * unbound or deallocated first (rxe's EINVAL). */
	if (mr->nmw)
		return -EINVAL;
	dev->mrs[mr->key >> 8] = NULL;
	mr->pd->refs--;
	free(mr);
	return 0;
}

int uroce_tp_mr_swap_keys(struct uroce_tp_mr *from, struct uroce_tp_mr *to)
{
	struct uroce_tp_dev *dev = from->pd->dev;
	uint32_t key = from->key;

	/* A window bound to @from opens its old range: a reregistration under it would
	 * move the window's bytes (the windows go first, as for dereg). */
	if (from->nmw || to->nmw || to->pd->dev != dev)
		return -EINVAL;
	from->key = to->key;
	to->key = key;
	dev->mrs[from->key >> 8] = from;
	dev->mrs[to->key >> 8] = to;
	return 0;
}

struct uroce_tp_mr *tp_mr_check(struct uroce_tp_pd *pd, uint32_t key, uint64_t va,
				uint64_t len, unsigned int access)
{
	struct uroce_tp_dev *dev = pd->dev;
	struct uroce_tp_mr *mr;

	/* A window's key indexes past every MR (TP_MW_INDEX_BIT): never an L_Key. */
	if ((key >> 8) >= dev->mr_cap)
		return NULL;
	mr = dev->mrs[key >> 8];
	if (mr == NULL || mr->key != key || mr->pd != pd)
		return NULL;
	if ((mr->access & access) != access)
		return NULL;
	/* A zero-length access needs a valid key, not a byte (IBA 9.4.4.1: DMA length 0). */
	if (len > 0 && (va < mr->iova || va - mr->iova > mr->length ||
			len > mr->length - (va - mr->iova)))
		return NULL;
	return mr;
}

uint32_t tp_sge_len(const struct uroce_tp_sge *sge, uint32_t num_sge)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < num_sge; i++)
		n += sge[i].length;
	return n > TP_MAX_MSG ? TP_MAX_MSG + 1u : (uint32_t)n;
}

/* Calls @p piece for each piece of registered memory that @p len bytes at @p offset of
 * an SGE list lie in, each checked by tp_mr_check for @p access: 0, -EFAULT (a bad SGE,
 * or the list is shorter), or what @p piece returned when not 0. */
static int sge_walk(struct uroce_tp_pd *pd, const struct uroce_tp_sge *sge, uint32_t num_sge,
		    uint32_t offset, uint32_t len, unsigned int access,
		    int (*piece)(void *arg, const struct uroce_tp_mr *mr, uint8_t *p, uint32_t n),
		    void *arg)
{
	for (uint32_t i = 0; i < num_sge && len > 0; i++) {
		const struct uroce_tp_mr *mr;
		uint32_t n;
		int rc;

		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		n = sge[i].length - offset;
		if (n > len)
			n = len;
		mr = tp_mr_check(pd, sge[i].lkey, sge[i].addr + offset, n, access);
		if (mr == NULL)
			return -EFAULT;
		rc = piece(arg, mr, mr->host + (sge[i].addr + offset - mr->iova), n);
		if (rc)
			return rc;
		len -= n;
		offset = 0;
	}
	return len == 0 ? 0 : -EFAULT;
}

struct sge_copy {
	uint8_t *buf;
	bool to_sge;
};

static int copy_piece(void *arg, const struct uroce_tp_mr *mr, uint8_t *p, uint32_t n)
{
	struct sge_copy *c = arg;

	(void)mr;
	if (c->to_sge)
		tp_place(p, c->buf, n);
	else
		memcpy(c->buf, p, n);
	c->buf += n;
	return 0;
}

int tp_sge_copy(struct uroce_tp_pd *pd, const struct uroce_tp_sge *sge, uint32_t num_sge,
		uint32_t offset, void *buf, uint32_t len, bool to_sge)
{
	struct sge_copy c = {buf, to_sge};

	return sge_walk(pd, sge, num_sge, offset, len, to_sge ? IBV_ACCESS_LOCAL_WRITE : 0,
			copy_piece, &c);
}

struct sge_segs {
	struct uroce_tp_tx_seg *seg;
	uint32_t nseg;
};

static int seg_piece(void *arg, const struct uroce_tp_mr *mr, uint8_t *p, uint32_t n)
{
	struct sge_segs *s = arg;

	if (mr->ctx == NULL || s->nseg == UROCE_TP_TX_SEGS_MAX)
		return -ENOTSUP;
	s->seg[s->nseg++] = (struct uroce_tp_tx_seg){p, n, mr->ctx};
	return 0;
}

int tp_sge_segs(struct uroce_tp_pd *pd, const struct uroce_tp_sge *sge, uint32_t num_sge,
		uint32_t offset, uint32_t len, struct uroce_tp_tx_seg *seg)
{
	struct sge_segs s = {seg, 0};
	int rc = sge_walk(pd, sge, num_sge, offset, len, 0, seg_piece, &s);

	return rc ? rc : (int)s.nseg;
}

/* ---- MW ------------------------------------------------------------------------------- */

struct uroce_tp_mw *uroce_tp_alloc_mw(struct uroce_tp_pd *pd, enum ibv_mw_type type)
{
	struct uroce_tp_dev *dev = pd->dev;
	struct uroce_tp_mw *mw;
	uint32_t idx;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	for (idx = 0; idx < dev->mw_cap && dev->mws[idx]; idx++)
		;
	if (idx >= dev->mw_cap) {
		uint32_t cap = dev->mw_cap ? dev->mw_cap * 2 : 64;
		struct uroce_tp_mw **n;

		if (cap > TP_MW_INDEX_BIT) { /* the index must stay below the bit marking it */
			errno = ENOMEM;
			return NULL;
		}
		n = realloc(dev->mws, cap * sizeof(*n));
		if (n == NULL)
			return NULL;
		memset(n + dev->mw_cap, 0, (cap - dev->mw_cap) * sizeof(*n));
		dev->mws = n;
		dev->mw_cap = cap;
	}
	mw = calloc(1, sizeof(*mw));
	if (mw == NULL)
		return NULL;
	mw->pd = pd;
	mw->type = type;
	/* Type 1 is valid at once, with nothing bound (length 0); type 2 waits for a bind. */
	mw->state = type == IBV_MW_TYPE_1 ? TP_MW_VALID : TP_MW_FREE;
	/* A random key byte, as an MR's: a key kept after dealloc is refused even when the
	 * slot is reused. */
	mw->rkey = (TP_MW_INDEX_BIT | idx) << 8 | (uint8_t)tp_rand(dev);
	dev->mws[idx] = mw;
	pd->refs++;
	return mw;
}

uint32_t uroce_tp_mw_rkey(const struct uroce_tp_mw *mw)
{
	return mw->rkey;
}

const struct uroce_tp_mr *uroce_tp_mw_mr(const struct uroce_tp_mw *mw)
{
	return mw->mr;
}

/* Nothing reachable through it any more; the MR and the QP it held are let go. */
static void mw_unbind(struct uroce_tp_mw *mw)
{
	if (mw->mr)
		mw->mr->nmw--;
	if (mw->qp)
		mw->qp->nmw--;
	mw->mr = NULL;
	mw->qp = NULL;
	mw->addr = 0;
	mw->length = 0;
	mw->access = 0;
}

int uroce_tp_dealloc_mw(struct uroce_tp_mw *mw)
{
	struct uroce_tp_dev *dev = mw->pd->dev;

	mw_unbind(mw);
	dev->mws[(mw->rkey >> 8) & ~TP_MW_INDEX_BIT] = NULL;
	mw->pd->refs--;
	free(mw);
	return 0;
}

/* The window named by exactly @key: a stale key byte names none. */
static struct uroce_tp_mw *mw_find(struct uroce_tp_dev *dev, uint32_t key)
{
	uint32_t idx = (key >> 8) & ~TP_MW_INDEX_BIT;
	struct uroce_tp_mw *mw;

	if (!tp_key_is_mw(key) || idx >= dev->mw_cap)
		return NULL;
	mw = dev->mws[idx];
	return mw && mw->rkey == key ? mw : NULL;
}

/* [va, va + len) inside [start, start + length), without overflow. */
static bool range_inside(uint64_t va, uint64_t len, uint64_t start, uint64_t length)
{
	return va >= start && va - start <= length && len <= length - (va - start);
}

struct uroce_tp_mr *tp_rkey_check(struct uroce_tp_qp *qp, struct uroce_tp_pd *pd, uint32_t key,
				  uint64_t va, uint64_t len, unsigned int access)
{
	struct uroce_tp_mw *mw;

	if (pd == NULL)
		return NULL;
	if (!tp_key_is_mw(key))
		return tp_mr_check(pd, key, va, len, access);
	mw = mw_find(qp->dev, key);
	if (mw == NULL || mw->pd != pd)
		return NULL;
	/* Free, or a type 1 window with nothing bound: no memory behind the key. */
	if (mw->state != TP_MW_VALID || mw->length == 0)
		return NULL;
	/* A type 2 window is reached only through the QP it is bound to (type 2B). */
	if (mw->type == IBV_MW_TYPE_2 && mw->qp != qp)
		return NULL;
	/* The window's rights, not the MR's: it may grant less than the MR has. */
	if ((mw->access & access) != access)
		return NULL;
	/* As tp_mr_check: a zero-length access needs a valid key, not a byte. */
	if (len > 0 && !range_inside(va, len, mw->addr, mw->length))
		return NULL;
	return mw->mr;
}

int tp_mw_bind(struct uroce_tp_qp *qp, const struct uroce_tp_bind *b)
{
	const unsigned int remote =
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	struct uroce_tp_mw *mw = mw_find(qp->dev, b->mw_rkey);
	struct uroce_tp_mr *mr = NULL;

	if (mw == NULL)
		return -EINVAL;
	if (mw->pd != qp->pd) /* C10-72 */
		return -EINVAL;
	if (mw->type == IBV_MW_TYPE_1 && mw->state != TP_MW_VALID)
		return -EINVAL;
	if (mw->type == IBV_MW_TYPE_2 && mw->state != TP_MW_FREE) /* o10-37.2.30 */
		return -EINVAL;
	if (mw->type == IBV_MW_TYPE_2 && b->length == 0) /* o10-37.2.40 */
		return -EINVAL;
	/* Remote rights, and LOCAL_WRITE, which means nothing for a window and which rxe
	 * and mlx5 take: rdma-core's own tests (test_mr.py, MWRC) bind with it. Zero-based
	 * windows are not offered (o10-36.2.2 forbids them for type 1): every window keeps
	 * its MR's addresses, which the responder relies on. */
	if (b->access & ~(remote | IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (b->length > 0) {
		/* Any MR of the window's PD (== the QP's, above). */
		mr = tp_mr_check(mw->pd, b->mr_lkey, 0, 0, 0);
		if (mr == NULL)
			return -EINVAL;
		if (!(mr->access & IBV_ACCESS_MW_BIND)) /* C10-73 */
			return -EINVAL;
		if ((b->access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
		    !(mr->access & IBV_ACCESS_LOCAL_WRITE)) /* C10-74 */
			return -EINVAL;
		if (!range_inside(b->addr, b->length, mr->iova, mr->length)) /* C10-75 */
			return -EINVAL;
	}
	mw_unbind(mw);
	/* The consumer chooses the key byte; the index stays (IBA 10.6.7). */
	mw->rkey = (mw->rkey & ~0xffu) | (b->rkey & 0xffu);
	if (mr == NULL)
		return 0; /* type 1 of length 0: valid, and nothing bound */
	mw->mr = mr;
	mr->nmw++;
	mw->addr = b->addr;
	mw->length = b->length;
	mw->access = b->access & remote;
	if (mw->type == IBV_MW_TYPE_2) {
		mw->qp = qp;
		qp->nmw++;
		mw->state = TP_MW_VALID;
	}
	return 0;
}

int tp_mw_invalidate(struct uroce_tp_qp *qp, uint32_t rkey, bool remote)
{
	struct uroce_tp_mw *mw = mw_find(qp->dev, rkey);

	/* An MR's key (never a window's) names nothing to invalidate: there are no
	 * fast-registered MRs, and an MR the application registered is its own. */
	if (mw == NULL || mw->pd != qp->pd)
		return -EINVAL;
	if (mw->type != IBV_MW_TYPE_2) /* o10-37.2.26: type 1 is never invalidated */
		return -EINVAL;
	if (mw->state != TP_MW_VALID)
		return -EINVAL;
	/* From the wire, only the peer of the QP the window is bound to (type 2B). */
	if (remote && mw->qp != qp)
		return -EINVAL;
	mw_unbind(mw);
	mw->state = TP_MW_FREE;
	return 0;
}

void tp_mw_qp_gone(struct uroce_tp_qp *qp)
{
	struct uroce_tp_dev *dev = qp->dev;

	for (uint32_t i = 0; i < dev->mw_cap && qp->nmw; i++) {
		struct uroce_tp_mw *mw = dev->mws[i];

		if (mw && mw->qp == qp) {
			mw_unbind(mw);
			mw->state = TP_MW_FREE;
		}
	}
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

/* ---- CQ ------------------------------------------------------------------------------- */

struct uroce_tp_cq *uroce_tp_create_cq(struct uroce_tp_dev *dev, int cqe)
{
	struct uroce_tp_cq *cq;
	uint32_t n;

	if (cqe < 1 || cqe > UROCE_TP_MAX_CQE) {
		errno = EINVAL;
		return NULL;
	}
	n = uroce_tp_pow2_at_least((uint32_t)cqe + 1);
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL || (cq->ring = calloc(n, sizeof(*cq->ring))) == NULL) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->dev = dev;
	cq->size = n - 1;
	cq->mask = n - 1;
	tp_list_add(&dev->cqs, &cq->node);
	return cq;
}

int uroce_tp_destroy_cq(struct uroce_tp_cq *cq)
{
	if (cq->refs)
		return -EBUSY;
	tp_list_del(&cq->node);
	free(cq->ring);
	free(cq);
	return 0;
}

bool tp_cq_push(struct uroce_tp_cq *cq, const struct ibv_wc *wc)
{
	if (cq->prod - cq->cons >= cq->size) {
		/* IBA 11.4.2.1: CQ overrun is an error of the CQ, the completion is lost. */
		if (!cq->overflowed)
			tp_event(cq->dev, IBV_EVENT_CQ_ERR, cq);
		cq->overflowed = true;
		return false;
	}
	cq->ring[cq->prod & cq->mask] = *wc;
	/* Told once per empty -> non-empty transition: the caller drains it to empty. */
	if (cq->prod++ == cq->cons && cq->dev->cfg.cq_ready)
		cq->dev->cfg.cq_ready(cq->dev->cfg.io_ctx, cq);
	return true;
}

void tp_cq_discard_qp(struct uroce_tp_cq *cq, uint32_t qpn, bool keep_recv)
{
	uint32_t held = cq->prod - cq->cons, dropped = 0;

	/* Newest first: each kept completion moves up past those dropped so far, so the
	 * order stays and the freed slots are the oldest ones. */
	for (uint32_t i = held; i-- > 0;) {
		struct ibv_wc *wc = &cq->ring[(cq->cons + i) & cq->mask];

		if (wc->qp_num == qpn && !(keep_recv && (wc->opcode & IBV_WC_RECV))) {
			dropped++;
			continue;
		}
		if (dropped)
			cq->ring[(cq->cons + i + dropped) & cq->mask] = *wc;
	}
	cq->cons += dropped;
}

uint32_t uroce_tp_cq_count(const struct uroce_tp_cq *cq)
{
	return cq->prod - cq->cons;
}

int uroce_tp_resize_cq(struct uroce_tp_cq *cq, int cqe)
{
	uint32_t n, held = cq->prod - cq->cons;
	struct ibv_wc *ring;

	if (cqe < 1 || cqe > UROCE_TP_MAX_CQE)
		return -EINVAL;
	n = uroce_tp_pow2_at_least((uint32_t)cqe + 1);
	if (held > n - 1)
		return -EINVAL;
	ring = calloc(n, sizeof(*ring));
	if (ring == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < held; i++)
		ring[i] = cq->ring[(cq->cons + i) & cq->mask];
	free(cq->ring);
	cq->ring = ring;
	cq->size = n - 1;
	cq->mask = n - 1;
	cq->cons = 0;
	cq->prod = held;
	return 0;
}

int uroce_tp_poll_cq(struct uroce_tp_cq *cq, int n, struct ibv_wc *wc)
{
	int i;

	for (i = 0; i < n && cq->cons != cq->prod; i++, cq->cons++)
		wc[i] = cq->ring[cq->cons & cq->mask];
	return i;
}

bool uroce_tp_cq_overflowed(const struct uroce_tp_cq *cq)
{
	return cq->overflowed;
}

/* ---- SRQ ------------------------------------------------------------------------------ */

struct uroce_tp_srq *uroce_tp_create_srq(struct uroce_tp_pd *pd,
					 const struct ibv_srq_init_attr *init)
{
	struct uroce_tp_srq *srq;
	uint32_t n;

	if (init->attr.max_wr < 1 || init->attr.max_wr > UROCE_TP_MAX_QP_WR ||
	    init->attr.max_sge > UROCE_TP_MAX_SGE || init->attr.srq_limit > init->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	n = uroce_tp_pow2_at_least(init->attr.max_wr);
	srq = calloc(1, sizeof(*srq));
	if (srq == NULL || (srq->ring = calloc(n, sizeof(*srq->ring))) == NULL) {
		free(srq);
		errno = ENOMEM;
		return NULL;
	}
	srq->pd = pd;
	srq->max_wr = n;
	srq->mask = n - 1;
	srq->max_sge = init->attr.max_sge ? init->attr.max_sge : 1;
	srq->limit = init->attr.srq_limit;
	pd->refs++;
	tp_list_add(&pd->dev->srqs, &srq->node);
	return srq;
}

/* ---- XRC (annex A14) ------------------------------------------------------------------ */

struct uroce_tp_xrcd *uroce_tp_alloc_xrcd(struct uroce_tp_dev *dev)
{
	struct uroce_tp_xrcd *xrcd = calloc(1, sizeof(*xrcd));

	if (xrcd == NULL)
		return NULL;
	xrcd->dev = dev;
	tp_list_add(&dev->xrcds, &xrcd->node);
	return xrcd;
}

int uroce_tp_dealloc_xrcd(struct uroce_tp_xrcd *xrcd)
{
	if (xrcd->refs)
		return -EBUSY;
	tp_list_del(&xrcd->node);
	free(xrcd);
	return 0;
}

struct uroce_tp_srq *uroce_tp_create_xrc_srq(struct uroce_tp_pd *pd, struct uroce_tp_xrcd *xrcd,
					     struct uroce_tp_cq *cq,
					     const struct ibv_srq_init_attr *init)
{
	struct uroce_tp_dev *dev = pd->dev;
	struct uroce_tp_srq *srq;
	uint32_t i;

	if (xrcd == NULL || cq == NULL || xrcd->dev != dev || cq->dev != dev) {
		errno = EINVAL;
		return NULL;
	}
	/* The lowest free number: numbers stay small and dense, as QPNs do not need to. */
	for (i = 0; i < dev->xrc_srq_cap && dev->xrc_srqs[i]; i++)
		;
	if (i == dev->xrc_srq_cap) {
		uint32_t cap = dev->xrc_srq_cap ? dev->xrc_srq_cap * 2 : 16;
		struct uroce_tp_srq **t;

		if (cap > UROCE_PSN_MASK) {
			errno = ENOMEM; /* 2^24 - 1 numbers: the XRCETH's field */
			return NULL;
		}
		t = realloc(dev->xrc_srqs, cap * sizeof(*t));
		if (t == NULL)
			return NULL;
		memset(t + dev->xrc_srq_cap, 0, (cap - dev->xrc_srq_cap) * sizeof(*t));
		dev->xrc_srqs = t;
		dev->xrc_srq_cap = cap;
	}
	srq = uroce_tp_create_srq(pd, init);
	if (srq == NULL)
		return NULL;
	srq->xrcd = xrcd;
	srq->cq = cq;
	srq->srqn = i + 1;
	dev->xrc_srqs[i] = srq;
	xrcd->refs++;
	cq->refs++;
	return srq;
}

uint32_t uroce_tp_srq_num(const struct uroce_tp_srq *srq)
{
	return srq->srqn;
}

struct uroce_tp_cq *tp_resp_cq(struct uroce_tp_qp *qp)
{
	struct uroce_tp_srq *srq;

	if (qp->type != IBV_QPT_XRC_RECV)
		return qp->recv_cq;
	srq = tp_xrc_srq(qp, qp->resp.xrc_srqn);
	return srq ? srq->cq : NULL;
}

struct uroce_tp_srq *tp_xrc_srq(const struct uroce_tp_qp *qp, uint32_t srqn)
{
	struct uroce_tp_dev *dev = qp->dev;
	struct uroce_tp_srq *srq;

	if (srqn == 0 || srqn > dev->xrc_srq_cap)
		return NULL;
	srq = dev->xrc_srqs[srqn - 1];
	return srq && srq->xrcd == qp->xrcd ? srq : NULL;
}

int uroce_tp_modify_srq(struct uroce_tp_srq *srq, const struct ibv_srq_attr *attr, int mask)
{
	uint32_t n = srq->max_wr, held = srq->prod - srq->cons;
	struct uroce_tp_recv_wqe *ring = NULL;

	if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return -EINVAL;
	/* Check everything, then apply: a refusal changes nothing. */
	if (mask & IBV_SRQ_MAX_WR) {
		/* IBV_DEVICE_SRQ_RESIZE: the new size must hold the WQEs posted and not
		 * taken yet, as rxe's queue resize requires. */
		if (attr->max_wr < 1 || attr->max_wr > UROCE_TP_MAX_QP_WR)
			return -EINVAL;
		n = uroce_tp_pow2_at_least(attr->max_wr);
		if (held > n)
			return -EINVAL;
	}
	if ((mask & IBV_SRQ_LIMIT) ? attr->srq_limit > n : srq->limit > n)
		return -EINVAL;
	if (n != srq->max_wr) {
		ring = calloc(n, sizeof(*ring));
		if (ring == NULL)
			return -ENOMEM;
		/* WQEs are copied out when a QP takes one: no pointer into the ring lives. */
		for (uint32_t i = 0; i < held; i++)
			ring[i] = srq->ring[(srq->cons + i) & srq->mask];
		free(srq->ring);
		srq->ring = ring;
		srq->max_wr = n;
		srq->mask = n - 1;
		srq->cons = 0;
		srq->prod = held;
	}
	if (mask & IBV_SRQ_LIMIT)
		srq->limit = attr->srq_limit;
	return 0;
}

int uroce_tp_query_srq(const struct uroce_tp_srq *srq, struct ibv_srq_attr *attr)
{
	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	return 0;
}

int uroce_tp_destroy_srq(struct uroce_tp_srq *srq)
{
	if (srq->refs)
		return -EBUSY;
	tp_list_del(&srq->node);
	srq->pd->refs--;
	if (srq->xrcd) {
		/* A message in progress on a target QP finds its SRQ gone at its next packet
		 * (tp_xrc_srq) and is refused; the WQE it had taken goes with the SRQ. */
		srq->pd->dev->xrc_srqs[srq->srqn - 1] = NULL;
		srq->xrcd->refs--;
		srq->cq->refs--;
	}
	free(srq->ring);
	free(srq);
	return 0;
}

int uroce_tp_post_srq_recv(struct uroce_tp_srq *srq, const struct uroce_tp_recv_wqe *wqe)
{
	if (wqe->num_sge > srq->max_sge)
		return -EINVAL;
	if (srq->prod - srq->cons >= srq->max_wr)
		return -ENOMEM;
	srq->ring[srq->prod & srq->mask] = *wqe;
	srq->prod++;
	return 0;
}

/* The receive queue is empty: ask the caller to fetch what the application may have
 * posted since it last looked (a NIC fetches WQEs on demand too). */
static bool rwqe_refill(struct uroce_tp_qp *qp, struct uroce_tp_srq *srq)
{
	if (qp->dev->cfg.rq_refill == NULL)
		return false;
	qp->dev->cfg.rq_refill(qp->dev->cfg.io_ctx, qp, srq);
	return true;
}

bool tp_rwqe_take(struct uroce_tp_qp *qp, struct uroce_tp_srq *srq,
		  struct uroce_tp_recv_wqe *out)
{
	if (srq == NULL) {
		if (qp->rq_cons == qp->rq_prod &&
		    (!rwqe_refill(qp, NULL) || qp->rq_cons == qp->rq_prod))
			return false;
		*out = qp->rq[qp->rq_cons & qp->rq_mask];
		qp->rq_cons++;
		return true;
	}
	if (srq->cons == srq->prod && (!rwqe_refill(qp, srq) || srq->cons == srq->prod))
		return false;
	*out = srq->ring[srq->cons & srq->mask];
	srq->cons++;
	/* IBA 10.2.9.2: the limit event fires once when fewer WQEs than the limit remain,
	 * then the limit is disarmed until set again. */
	if (srq->limit && srq->prod - srq->cons < srq->limit) {
		srq->limit = 0;
		tp_event(qp->dev, IBV_EVENT_SRQ_LIMIT_REACHED, srq);
	}
	return true;
}

uint32_t uroce_tp_srq_outstanding(const struct uroce_tp_srq *srq)
{
	return srq->prod - srq->cons;
}

void uroce_tp_cq_set_user(struct uroce_tp_cq *cq, void *user)
{
	cq->user = user;
}

void *uroce_tp_cq_user(const struct uroce_tp_cq *cq)
{
	return cq->user;
}

void uroce_tp_srq_set_user(struct uroce_tp_srq *srq, void *user)
{
	srq->user = user;
}

void *uroce_tp_srq_user(const struct uroce_tp_srq *srq)
{
	return srq->user;
}
