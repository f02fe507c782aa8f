/* SPDX-License-Identifier: BSD-3-Clause */
/* Fault injection: one random draw per enabled fault per frame, held frames in hold
 * order in a small array (at most reorder_depth + 1, so linear scans cost nothing). */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "uroce_fault.h"

#define TWO53 9007199254740992.0 /* 2^53: draws are 53-bit, as a double's mantissa */

/* One call returns this frame and at most depth held frames (a held frame is among the
 * last depth offered once the offer that held it returns), each at most twice. */
static_assert(UROCE_FAULT_OUT_MAX >= 2 * (1 + UROCE_FAULT_DEPTH_MAX),
	      "the out array holds a frame, the held frames it releases, and duplicates");

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

int uroce_fault_init(struct uroce_fault *f, const struct uroce_fault_cfg *cfg)
{
	uint32_t nbufs;

	memset(f, 0, sizeof(*f));
	if (!rate_ok(cfg->drop) || !rate_ok(cfg->dup) || !rate_ok(cfg->reorder) ||
	    !rate_ok(cfg->corrupt) || cfg->reorder_depth > UROCE_FAULT_DEPTH_MAX)
		return -EINVAL;
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

/* Appends @p copies of a frame to send to @p out, which has @p n: @return the new n. */
static uint32_t emit(struct uroce_fault *f, const uint8_t *p, uint32_t len, uint32_t copies,
		     struct uroce_fault_out *out, uint32_t n)
{
	for (uint32_t c = 0; c < copies; c++) {
		out[n].frame = p;
		out[n++].len = len;
		f->stats.emitted++;
	}
	return n;
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
 * in order. A released buffer goes back to the free list but is not written before the
 * next call: only an offer takes one, and before it releases any. @return the new nout. */
static uint32_t release(struct uroce_fault *f, uint64_t now_ns, uint32_t n, int tick,
			int all, struct uroce_fault_out *out, uint32_t nout)
{
	uint32_t keep = 0;

	for (uint32_t i = 0; i < f->nheld; i++) {
		struct uroce_fault_held *h = &f->held[i];

		if (i < n && tick)
			h->left--;
		if (all || (i < n && h->left == 0) ||
		    (now_ns >= h->since_ns && now_ns - h->since_ns >= f->timeout_ns)) {
			nout = emit(f, h->buf, h->len, h->copies, out, nout);
			f->free_bufs[f->nfree++] = h->buf;
		} else {
			f->held[keep++] = *h;
		}
	}
	f->nheld = keep;
	return nout;
}

uint32_t uroce_fault_offer_slow(struct uroce_fault *f, uint64_t now_ns, const uint8_t *frame,
				uint32_t len, struct uroce_fault_out out[UROCE_FAULT_OUT_MAX])
{
	uint32_t before = f->nheld, copies = 1, n = 0;
	int corrupt = 0, hold = 0, fits = len <= UROCE_FAULT_FRAME_MAX;
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
		n = emit(f, f->scratch, len, copies, out, n);
	} else {
		n = emit(f, frame, len, copies, out, n);
		f->stats.passed += copies == 1;
	}
	f->stats.corrupted += corrupt;
tick:
	if (before != 0)
		n = release(f, now_ns, before, 1, 0, out, n);
	return n;
}

uint32_t uroce_fault_process(struct uroce_fault *f, uint64_t now_ns,
			     struct uroce_fault_out out[UROCE_FAULT_OUT_MAX])
{
	return f->nheld != 0 ? release(f, now_ns, 0, 0, 0, out, 0) : 0;
}

uint64_t uroce_fault_next_deadline(const struct uroce_fault *f)
{
	uint64_t d = UINT64_MAX;

	for (uint32_t i = 0; i < f->nheld; i++)
		if (f->held[i].since_ns + f->timeout_ns < d)
			d = f->held[i].since_ns + f->timeout_ns;
	return d;
}

uint32_t uroce_fault_flush(struct uroce_fault *f, struct uroce_fault_out out[UROCE_FAULT_OUT_MAX])
{
	return release(f, 0, 0, 0, 1, out, 0);
}
