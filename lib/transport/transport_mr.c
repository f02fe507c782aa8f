/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory regions (rxe_mr.c): keys, access rights and bounds; SGE lists checked against them,
 * copied to and from, or cut into the pieces a zero-copy send points at. */
#include <stdlib.h>
#include <string.h>

#include "tp_internal.h"

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
