/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault injection: one random draw per enabled fault per frame, held frames in hold
 * order in a small array (at most reorder_depth + 1, so linear scans cost nothing). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "uroce_fault.h"

#define TWO53 9007199254740992.0 /* 2^53: draws are 53-bit, as a double's mantissa */

/* splitmix64 (Steele, Lea, Flood 2014): one add and three multiply-xorshifts, any seed is
 * good, and it is what lib/transport uses (transport_device.c) — but there it is private to the
 * transport's device, so the injector carries its own copy of the five lines. */
static uint64_t draw(struct uroce_fault *f)
{
	uint64_t z = (f->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Does a fault of threshold @p t hit? A rate of 1 (t = 2^53) always does, 0 never. */
static int hit(struct uroce_fault *f, uint64_t t)
{
	return t != 0 && (draw(f) >> 11) < t;
}

static int rate_ok(double r)
{
	return r >= 0.0 && r <= 1.0; /* false for NaN too */
}

static uint64_t threshold(double r)
{
	return (uint64_t)(r * TWO53);
}

int uroce_fault_init(struct uroce_fault *f, const struct uroce_fault_cfg *cfg,
		     uroce_fault_emit_fn emit, void *ctx)
{
	uint32_t nbufs;

	memset(f, 0, sizeof(*f));
	if (emit == NULL || !rate_ok(cfg->drop) || !rate_ok(cfg->dup) ||
	    !rate_ok(cfg->reorder) || !rate_ok(cfg->corrupt) ||
	    cfg->reorder_depth > UROCE_FAULT_DEPTH_MAX)
		return -EINVAL;
	f->emit = emit;
	f->ctx = ctx;
	f->t_drop = threshold(cfg->drop);
	f->t_dup = threshold(cfg->dup);
	f->t_reorder = threshold(cfg->reorder);
	f->t_corrupt = threshold(cfg->corrupt);
	/* A rate too small to hit a 53-bit draw is 0: "active" means some fault can happen. */
	f->active = (f->t_drop | f->t_dup | f->t_reorder | f->t_corrupt) != 0;
	f->depth = cfg->reorder_depth != 0 ? cfg->reorder_depth : UROCE_FAULT_DEPTH_DEFAULT;
	f->timeout_ns = cfg->reorder_timeout_ns != 0 ? cfg->reorder_timeout_ns
						     : UROCE_FAULT_TIMEOUT_DEFAULT_NS;
	f->rng = cfg->seed;
	if (!f->active)
		return 0;
	/* Held frames: depth + 1 (the frame offered now may be held while the oldest, held
	 * depth frames ago, waits for this very frame to release it); one scratch. */
	nbufs = (f->t_reorder != 0 ? f->depth + 1 : 0) + 1;
	f->mem = malloc((size_t)nbufs * UROCE_FAULT_FRAME_MAX);
	if (f->mem == NULL)
		return -ENOMEM;
	f->scratch = f->mem;
	for (uint32_t i = 1; i < nbufs; i++)
		f->free_bufs[f->nfree++] = f->mem + (size_t)i * UROCE_FAULT_FRAME_MAX;
	return 0;
}

void uroce_fault_fini(struct uroce_fault *f)
{
	free(f->mem);
	f->mem = NULL;
	f->scratch = NULL;
	f->nheld = 0;
	f->nfree = 0;
}

static int emit(struct uroce_fault *f, const uint8_t *p, uint32_t len, uint32_t copies,
		int rc)
{
	for (uint32_t c = 0; c < copies; c++) {
		int r = f->emit(f->ctx, p, len);

		f->stats.emitted++;
		if (r < 0 && rc == 0)
			rc = r;
	}
	return rc;
}

/* Bytes of the Ethernet header, an 802.1Q or 802.1ad tag included: the corruption goes
 * after it, where the receiver's checks (ICRC, IP checksum) look. */
static uint32_t eth_len(const uint8_t *p, uint32_t len)
{
	if (len >= 18 && p[12] == 0x81 && p[13] == 0x00)
		return 18;
	if (len >= 18 && p[12] == 0x88 && p[13] == 0xa8)
		return 18;
	return 14;
}

static void corrupt_into(struct uroce_fault *f, uint8_t *dst, const uint8_t *src,
			 uint32_t len, uint32_t hdr)
{
	uint64_t r = draw(f);
	uint32_t off = hdr + (uint32_t)((r >> 8) % (len - hdr));

	memcpy(dst, src, len);
	dst[off] ^= (uint8_t)(1 + (r & 0xff) % 255); /* never 0: the byte does change */
}

/* Emits held frames that are due: countdown at 0 (when @p tick, the countdowns of the
 * first @p n go down by one first) or held since @p now_ns - timeout. Keeps the others
 * in order. */
static int release(struct uroce_fault *f, uint64_t now_ns, uint32_t n, int tick, int all,
		   int rc)
{
	uint32_t keep = 0;

	for (uint32_t i = 0; i < f->nheld; i++) {
		struct uroce_fault_held *h = &f->held[i];

		if (i < n && tick)
			h->left--;
		if (all || (i < n && h->left == 0) ||
		    (now_ns >= h->since_ns && now_ns - h->since_ns >= f->timeout_ns)) {
			rc = emit(f, h->buf, h->len, h->copies, rc);
			f->free_bufs[f->nfree++] = h->buf;
		} else {
			f->held[keep++] = *h;
		}
	}
	f->nheld = keep;
	return rc;
}

int uroce_fault_frame_slow(struct uroce_fault *f, uint64_t now_ns, const uint8_t *frame,
			   uint32_t len)
{
	uint32_t before = f->nheld, copies = 1;
	int rc = 0, corrupt = 0, hold = 0, fits = len <= UROCE_FAULT_FRAME_MAX;
	uint32_t hdr = eth_len(frame, len);

	f->stats.offered++;
	if (hit(f, f->t_drop)) {
		f->stats.dropped++;
		goto tick;
	}
	if (hit(f, f->t_dup)) {
		copies = 2;
		f->stats.duplicated++;
	}
	if (hit(f, f->t_corrupt)) {
		if (!fits)
			f->stats.oversize++;
		else if (len > hdr)
			corrupt = 1;
	}
	if (hit(f, f->t_reorder)) {
		if (!fits)
			f->stats.oversize++;
		else
			hold = 1;
	}
	if (hold) {
		struct uroce_fault_held *h = &f->held[f->nheld++];

		h->buf = f->free_bufs[--f->nfree]; /* never empty: see init */
		if (corrupt)
			corrupt_into(f, h->buf, frame, len, hdr);
		else
			memcpy(h->buf, frame, len);
		h->len = len;
		h->copies = copies;
		h->left = 1 + (uint32_t)(draw(f) % f->depth);
		h->since_ns = now_ns;
		f->stats.reordered++;
	} else if (corrupt) {
		corrupt_into(f, f->scratch, frame, len, hdr);
		rc = emit(f, f->scratch, len, copies, rc);
	} else {
		rc = emit(f, frame, len, copies, rc);
		f->stats.passed += copies == 1;
	}
	f->stats.corrupted += corrupt;
tick:
	if (before != 0)
		rc = release(f, now_ns, before, 1, 0, rc);
	return rc;
}

int uroce_fault_process(struct uroce_fault *f, uint64_t now_ns)
{
	return f->nheld != 0 ? release(f, now_ns, 0, 0, 0, 0) : 0;
}

uint64_t uroce_fault_next_deadline(const struct uroce_fault *f)
{
	uint64_t d = UINT64_MAX;

	for (uint32_t i = 0; i < f->nheld; i++)
		if (f->held[i].since_ns + f->timeout_ns < d)
			d = f->held[i].since_ns + f->timeout_ns;
	return d;
}

int uroce_fault_flush(struct uroce_fault *f)
{
	return release(f, 0, 0, 0, 1, 0);
}
