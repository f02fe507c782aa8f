/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory windows of type 1 and 2B (IBA 10.6.7; rxe_mw.c): allocation, bind, invalidation,
 * and the R_Key check that takes an MR's key or a window's. */
#include <stdlib.h>
#include <string.h>

#include "tp_internal.h"

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
