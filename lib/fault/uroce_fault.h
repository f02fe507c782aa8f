/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_FAULT_H
#define UROCE_FAULT_H

/**
 * @file
 * Fault injection on a stream of Ethernet frames, sans I/O: the daemon puts one injector
 * on its receive path and one on its transmit path (config [fault]), tests and research
 * runs use them to see the transport recover from what real links do.
 *
 * Contract
 * - Frames go in through uroce_fault_offer(); each comes out 0, 1 or 2 times, in the
 *   array of frames to send now that this call or a later one (uroce_fault_offer(),
 *   uroce_fault_process(), uroce_fault_flush()) returns: the injector never calls out,
 *   so the caller's fast path calls down into it and then down into its own I/O. No
 *   I/O, no clock (time is the @c now_ns argument), no allocation after init. One
 *   injector is driven by one thread.
 * - Each offered frame is, independently, with the configured probabilities:
 *   dropped (never emitted; no other fault applies to it), corrupted (one byte after the
 *   Ethernet header, VLAN tag included, XORed with a random non-zero value, in a private
 *   copy: the caller's buffer is never written; a frame with nothing after its Ethernet
 *   header is left alone), duplicated (emitted twice, back to back)
 *   and reordered (held back, then emitted after 1..reorder_depth later frames have been
 *   offered, uniformly, or once it has been held reorder_timeout_ns, or at
 *   uroce_fault_flush()). A corrupted byte lands where the receiver's checks see it: the
 *   ICRC covers everything after the Ethernet header except the fields it masks, which
 *   the IPv4 header checksum covers; only IPv6's traffic class, flow label and hop limit
 *   and Ethernet padding of short frames are checked by nothing (harmless for RoCE).
 * - Deterministic: the same seed and the same calls give the same output.
 * - All rates 0: a pass-through costing one branch and no call; the caller's pointer is
 *   returned. Generally, a frame returned at once and unmodified is returned with the
 *   caller's own @p frame pointer, so a caller can recognise it and send its own buffer
 *   (an mbuf) instead of copying; every other returned pointer is the injector's and
 *   valid only until the next call on the injector.
 * - Bounded output: one call returns at most 2 * (reorder_depth + 1) frames (this frame
 *   and its duplicate, and at most reorder_depth held frames, each perhaps duplicated),
 *   so an array of UROCE_FAULT_OUT_MAX always has room.
 * - Bounded memory: reorder_depth + 1 frame buffers of UROCE_FAULT_FRAME_MAX bytes are
 *   allocated at init (a held frame is among the last reorder_depth + 1 offered, so
 *   there are never more held), plus one scratch frame for corruption. A frame longer
 *   than UROCE_FAULT_FRAME_MAX may still be dropped or duplicated, but is never copied:
 *   it is not corrupted or held, and counts in @c oversize when one of those was drawn.
 */

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UROCE_FAULT_FRAME_MAX 10240u   /* a 9216-byte MTU frame with headers, with room */
#define UROCE_FAULT_DEPTH_DEFAULT 4u
#define UROCE_FAULT_DEPTH_MAX 64u
#define UROCE_FAULT_TIMEOUT_DEFAULT_NS 1000000ull /* 1 ms */

struct uroce_fault_cfg {
	double drop;            /**< probability a frame is dropped, [0,1] */
	double dup;             /**< ... emitted twice */
	double reorder;         /**< ... held back and overtaken by later frames */
	double corrupt;         /**< ... emitted with one byte flipped */
	uint32_t reorder_depth; /**< how many later frames may overtake, 1..64; 0: 4 */
	uint64_t reorder_timeout_ns; /**< longest hold, so a quiet link does not keep a
				      *   frame forever; 0: 1 ms */
	uint64_t seed;          /**< any value; the same seed replays the same faults */
};

/* Frames one call may return: see the contract. */
#define UROCE_FAULT_OUT_MAX (2u * (UROCE_FAULT_DEPTH_MAX + 1u))

/** A frame to send now: the caller's own pointer when unmodified and at once, else the
 *  injector's, valid until the next call on the injector. */
struct uroce_fault_out {
	const uint8_t *frame;
	uint32_t len;
};

struct uroce_fault_stats {
	uint64_t offered;    /**< frames given to uroce_fault_offer() */
	uint64_t emitted;    /**< frames returned to send (a duplicate counts twice) */
	uint64_t passed;     /**< offered frames emitted at once, once, unmodified */
	uint64_t dropped;
	uint64_t duplicated;
	uint64_t reordered;
	uint64_t corrupted;
	uint64_t oversize;   /**< corrupt or reorder drawn for a frame too long to copy */
};

/* A frame held for reordering. */
struct uroce_fault_held {
	uint8_t *buf;       /* UROCE_FAULT_FRAME_MAX bytes from the pool */
	uint32_t len;
	uint32_t left;      /* later frames still to be offered before release */
	uint32_t copies;    /* 1, or 2 when also duplicated */
	uint64_t since_ns;  /* when it was held */
};

struct uroce_fault {
	int active;                   /* some rate is non-zero */
	/* Thresholds: a 53-bit random number below one means the fault hits. */
	uint64_t t_drop, t_dup, t_reorder, t_corrupt;
	uint32_t depth;
	uint64_t timeout_ns;
	uint64_t rng;
	/* Held frames in the order they were held (oldest first, so the timeout looks only
	 * at held[0]); their buffers, and the free ones, come from one allocation. */
	struct uroce_fault_held held[UROCE_FAULT_DEPTH_MAX + 1];
	uint32_t nheld;
	uint8_t *free_bufs[UROCE_FAULT_DEPTH_MAX + 1];
	uint32_t nfree;
	uint8_t *scratch;             /* the corrupted copy of a frame emitted at once */
	uint8_t *mem;
	struct uroce_fault_stats stats;
};

/**
 * Sets up @p f.
 * @return 0, -EINVAL (a rate outside [0,1] or NaN, depth above UROCE_FAULT_DEPTH_MAX),
 * or -ENOMEM. Call uroce_fault_fini() after a successful init.
 */
int uroce_fault_init(struct uroce_fault *f, const struct uroce_fault_cfg *cfg);
/** Frees the held frames without returning them (uroce_fault_flush() first to keep them). */
void uroce_fault_fini(struct uroce_fault *f);

/**
 * uroce_fault_offer() of an active injector.
 * @return how many frames it put in @p out (0..2 * (reorder_depth + 1)).
 */
uint32_t uroce_fault_offer_slow(struct uroce_fault *f, uint64_t now_ns, const uint8_t *frame,
				uint32_t len, struct uroce_fault_out out[UROCE_FAULT_OUT_MAX]);

/** What a disabled injector counts for a frame it lets through: for a caller that sends
 *  a frame past it (it is not active) without handing it over, so that the counts stay
 *  those of every frame offered. */
static inline void uroce_fault_count_passed(struct uroce_fault *f)
{
	f->stats.offered++;
	f->stats.passed++;
	f->stats.emitted++;
}

/**
 * Offers one frame at time @p now_ns and puts in @p out, in order, the frames to send
 * now: this frame (once, twice when duplicated; not when dropped or held), then the held
 * frames whose turn came (this frame was the last to overtake them) or whose time ran
 * out, in hold order. The caller sends them all: the injector does not retry, so what
 * the caller cannot send is lost, as a drop would lose it.
 * @return how many frames are in @p out: 0..2 * (reorder_depth + 1); a disabled
 * injector always returns 1, @p frame itself, without a call.
 */
static inline uint32_t uroce_fault_offer(struct uroce_fault *f, uint64_t now_ns,
					 const uint8_t *frame, uint32_t len,
					 struct uroce_fault_out out[UROCE_FAULT_OUT_MAX])
{
	/* The one branch of a disabled injector. */
	if (__builtin_expect(!f->active, 1)) {
		uroce_fault_count_passed(f);
		out[0].frame = frame;
		out[0].len = len;
		return 1;
	}
	return uroce_fault_offer_slow(f, now_ns, frame, len, out);
}

/** Puts in @p out the frames held reorder_timeout_ns or longer by @p now_ns, in hold
 *  order. @return how many: 0..2 * reorder_depth. */
uint32_t uroce_fault_process(struct uroce_fault *f, uint64_t now_ns,
			     struct uroce_fault_out out[UROCE_FAULT_OUT_MAX]);
/** When uroce_fault_process() next has something to do: UINT64_MAX if nothing is held. */
uint64_t uroce_fault_next_deadline(const struct uroce_fault *f);
/** Puts every held frame in @p out, oldest first, to send now.
 *  @return how many: 0..2 * reorder_depth. */
uint32_t uroce_fault_flush(struct uroce_fault *f, struct uroce_fault_out out[UROCE_FAULT_OUT_MAX]);

#ifdef __cplusplus
}
#endif

#endif
