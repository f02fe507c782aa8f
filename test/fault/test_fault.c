/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/fault: rates, determinism, reorder bounds (depth and time), flush, corruption of
 * exactly one byte after the Ethernet header, and the zero-rate pass-through. Each
 * suite is the function it tests. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "uroce_fault.h"

#define FRAME_LEN 64

/* What the calls under test returned to send. */
struct out {
	uint64_t n;             /* frames emitted */
	uint64_t hash;          /* of every emitted frame, in order */
	uint64_t offering;      /* index of the frame being offered when it was returned */
	const uint8_t *last_ptr;
	uint32_t last_len;
	uint8_t last[UROCE_FAULT_FRAME_MAX];
	/* per emitted frame: its sequence number and when it came out */
	uint32_t *seq;
	uint64_t *at;
	uint64_t cap;
};

static void record(struct out *o, const uint8_t *p, uint32_t len)
{

	for (uint32_t i = 0; i < len; i++)
		o->hash = (o->hash ^ p[i]) * 0x100000001b3ull;
	o->hash = (o->hash ^ len) * 0x100000001b3ull;
	if (o->seq != NULL && o->n < o->cap) {
		uint32_t s;

		memcpy(&s, p + 14, 4);
		o->seq[o->n] = s;
		o->at[o->n] = o->offering;
	}
	o->last_ptr = p;
	o->last_len = len;
	if (len <= sizeof(o->last))
		memcpy(o->last, p, len);
	o->n++;
}

static uint32_t record_all(struct out *o, const struct uroce_fault_out *out, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		record(o, out[i].frame, out[i].len);
	return n;
}

/* uroce_fault_offer(), _process() and _flush(), recording what they return in @p o. */
static uint32_t offer(struct uroce_fault *f, struct out *o, uint64_t now_ns,
		      const uint8_t *frame, uint32_t len)
{
	struct uroce_fault_out out[UROCE_FAULT_OUT_MAX];

	return record_all(o, out, uroce_fault_offer(f, now_ns, frame, len, out));
}

static uint32_t process(struct uroce_fault *f, struct out *o, uint64_t now_ns)
{
	struct uroce_fault_out out[UROCE_FAULT_OUT_MAX];

	return record_all(o, out, uroce_fault_process(f, now_ns, out));
}

static uint32_t flush(struct uroce_fault *f, struct out *o)
{
	struct uroce_fault_out out[UROCE_FAULT_OUT_MAX];

	return record_all(o, out, uroce_fault_flush(f, out));
}

static void make_frame(uint8_t *buf, uint32_t seq, uint32_t len)
{
	memset(buf, 0, len);
	memset(buf, 0xaa, 12);
	buf[12] = 0x08; /* IPv4 */
	for (uint32_t i = 18; i < len; i++)
		buf[i] = (uint8_t)(i * 13u);
	memcpy(buf + 14, &seq, 4);
}

static struct out *new_out(uint64_t cap)
{
	struct out *o = calloc(1, sizeof(*o));

	cr_assert_not_null(o);
	o->hash = 0xcbf29ce484222325ull;
	if (cap != 0) {
		o->seq = calloc(cap, sizeof(*o->seq));
		o->at = calloc(cap, sizeof(*o->at));
		cr_assert(o->seq != NULL && o->at != NULL);
		o->cap = cap;
	}
	return o;
}

static void free_out(struct out *o)
{
	free(o->seq);
	free(o->at);
	free(o);
}

/* |observed - expected| within 6 standard deviations of a binomial count. */
static void expect_rate(const char *what, uint64_t count, uint64_t n, double p)
{
	double mean = (double)n * p, sd = sqrt((double)n * p * (1 - p));

	cr_expect(fabs((double)count - mean) <= 6 * sd + 1, "%s: %lu of %lu, expected %.0f +- %.0f",
		  what, (unsigned long)count, (unsigned long)n, mean, 6 * sd);
}

Test(uroce_fault_offer, rates_hold_over_a_million_frames)
{
	const struct uroce_fault_cfg cfgs[] = {
		{.drop = 0.1, .seed = 1},
		{.dup = 0.02, .seed = 2},
		{.reorder = 0.3, .seed = 3},
		{.corrupt = 0.001, .seed = 4},
		{.drop = 0.05, .dup = 0.05, .reorder = 0.05, .corrupt = 0.05, .seed = 5},
		{.drop = 1.0, .seed = 6},
	};
	const uint64_t n = 1000000;
	uint8_t buf[FRAME_LEN];

	for (size_t c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]); c++) {
		const struct uroce_fault_cfg *cfg = &cfgs[c];
		struct uroce_fault *f = malloc(sizeof(*f));
		struct out *o = new_out(0);
		double pass = 1 - cfg->drop;

		cr_assert_not_null(f);
		cr_assert_eq(uroce_fault_init(f, cfg), 0);
		for (uint64_t i = 0; i < n; i++) {
			make_frame(buf, (uint32_t)i, FRAME_LEN);
			cr_assert_leq(offer(f, o, i * 100, buf, FRAME_LEN), 2 * (f->depth + 1));
			cr_assert_leq(f->nheld, f->depth + 1);
		}
		cr_assert_leq(flush(f, o), 2 * f->depth);
		expect_rate("dropped", f->stats.dropped, n, cfg->drop);
		/* dup, corrupt and reorder are drawn only for frames that were not dropped */
		expect_rate("duplicated", f->stats.duplicated, n - f->stats.dropped, cfg->dup);
		expect_rate("reordered", f->stats.reordered, n - f->stats.dropped, cfg->reorder);
		expect_rate("corrupted", f->stats.corrupted, n - f->stats.dropped, cfg->corrupt);
		expect_rate("passed", f->stats.passed, n,
			    pass * (1 - cfg->dup) * (1 - cfg->reorder) * (1 - cfg->corrupt));
		cr_expect_eq(f->stats.offered, n);
		cr_expect_eq(o->n, f->stats.emitted);
		cr_expect_eq(o->n, n - f->stats.dropped + f->stats.duplicated, "config %zu", c);
		cr_expect_eq(f->nheld, 0);
		uroce_fault_fini(f);
		free(f);
		free_out(o);
	}
}

static uint64_t run_hash(uint64_t seed, uint64_t n)
{
	struct uroce_fault_cfg cfg = {.drop = 0.1, .dup = 0.1, .reorder = 0.2, .corrupt = 0.1,
				      .reorder_depth = 7, .reorder_timeout_ns = 5000,
				      .seed = seed};
	struct uroce_fault f;
	struct out *o = new_out(0);
	uint8_t buf[300];
	uint64_t h;

	cr_assert_eq(uroce_fault_init(&f, &cfg), 0);
	for (uint64_t i = 0; i < n; i++) {
		uint32_t len = 14 + (uint32_t)(i % 280);

		make_frame(buf, (uint32_t)i, len);
		offer(&f, o, i * 1000, buf, len);
		if (i % 17 == 0)
			process(&f, o, i * 1000 + 500);
	}
	flush(&f, o);
	h = o->hash ^ f.stats.dropped ^ (f.stats.reordered << 20);
	uroce_fault_fini(&f);
	free_out(o);
	return h;
}

Test(uroce_fault_offer, same_seed_same_faults_other_seed_other_faults)
{
	cr_expect_eq(run_hash(42, 100000), run_hash(42, 100000));
	cr_expect_eq(run_hash(0, 100000), run_hash(0, 100000));
	cr_expect_neq(run_hash(42, 100000), run_hash(43, 100000));
}

/* Every frame comes out once, overtaken by at most depth later frames, and every hold
 * from 1 to depth happens. */
static void check_reorder_depth(uint32_t depth, double rate)
{
	const uint32_t n = 200000;
	struct uroce_fault_cfg cfg = {.reorder = rate, .reorder_depth = depth, .seed = depth};
	struct uroce_fault *f = malloc(sizeof(*f));
	struct out *o = new_out(n);
	uint8_t *seen = calloc(n, 1);
	uint64_t *hist = calloc(depth + 2, sizeof(uint64_t));
	uint8_t buf[FRAME_LEN];

	cr_assert(f != NULL && seen != NULL && hist != NULL);
	cr_assert_eq(uroce_fault_init(f, &cfg), 0);
	for (uint32_t i = 0; i < n; i++) {
		make_frame(buf, i, FRAME_LEN);
		o->offering = i;
		/* 1 us apart: the 1 ms timeout never fires before depth frames went by */
		offer(f, o, (uint64_t)i * 1000, buf, FRAME_LEN);
		cr_assert_leq(f->nheld, depth + 1);
	}
	cr_assert_eq(o->n, n - f->nheld);
	for (uint64_t k = 0; k < o->n; k++) {
		uint32_t s = o->seq[k];
		uint64_t overtaken = o->at[k] - s;

		cr_assert_lt(s, n);
		cr_assert(!seen[s], "frame %u emitted twice", s);
		seen[s] = 1;
		cr_assert_leq(overtaken, depth, "frame %u overtaken by %lu", s,
			      (unsigned long)overtaken);
		hist[overtaken]++;
	}
	for (uint32_t d = 1; d <= depth; d++)
		cr_expect_gt(hist[d], 0, "no frame was held for %u", d);
	o->offering = n;
	flush(f, o);
	cr_expect_eq(o->n, n);
	/* the frames not held came out as they went in */
	cr_expect_eq(hist[0], n - f->stats.reordered);
	uroce_fault_fini(f);
	free(f);
	free(seen);
	free(hist);
	free_out(o);
}

Test(uroce_fault_offer, reorder_never_holds_a_frame_beyond_depth)
{
	check_reorder_depth(1, 0.5);
	check_reorder_depth(4, 0.3);
	check_reorder_depth(4, 1.0);
	check_reorder_depth(UROCE_FAULT_DEPTH_MAX, 1.0);
}

Test(uroce_fault_process, releases_a_held_frame_on_time_when_the_link_is_quiet)
{
	struct uroce_fault_cfg cfg = {.reorder = 1.0, .reorder_timeout_ns = 1000000};
	struct uroce_fault f;
	struct out *o = new_out(16);
	uint8_t buf[FRAME_LEN];

	cr_assert_eq(uroce_fault_init(&f, &cfg), 0);
	cr_expect_eq(uroce_fault_next_deadline(&f), UINT64_MAX);
	make_frame(buf, 7, FRAME_LEN);
	cr_assert_eq(offer(&f, o, 5000000, buf, FRAME_LEN), 0);
	cr_expect_eq(o->n, 0);
	cr_expect_eq(uroce_fault_next_deadline(&f), 6000000);
	cr_assert_eq(process(&f, o, 5999999), 0);
	cr_expect_eq(o->n, 0);
	cr_assert_eq(process(&f, o, 6000000), 1);
	cr_expect_eq(o->n, 1);
	cr_expect_eq(o->seq[0], 7);
	cr_expect_eq(uroce_fault_next_deadline(&f), UINT64_MAX);

	/* A frame offered after the deadline also lets the overdue one out (after itself,
	 * as it is held too). */
	make_frame(buf, 8, FRAME_LEN);
	offer(&f, o, 7000000, buf, FRAME_LEN);
	make_frame(buf, 9, FRAME_LEN);
	offer(&f, o, 9000000, buf, FRAME_LEN);
	cr_expect_eq(o->n, 2);
	cr_expect_eq(o->seq[1], 8);
	/* A clock that went backwards does not release anything early. */
	cr_assert_eq(process(&f, o, 1), 0);
	cr_expect_eq(o->n, 2);
	uroce_fault_fini(&f);
	free_out(o);
}

Test(uroce_fault_flush, releases_everything_in_hold_order)
{
	struct uroce_fault_cfg cfg = {.reorder = 1.0, .dup = 0.5, .reorder_depth = 64, .seed = 9};
	struct uroce_fault f;
	struct out *o = new_out(200);
	uint8_t buf[FRAME_LEN];
	uint32_t last = 0;

	cr_assert_eq(uroce_fault_init(&f, &cfg), 0);
	/* at the same instant, so time releases nothing */
	for (uint32_t i = 0; i < 3; i++) {
		make_frame(buf, 100 + i, FRAME_LEN);
		offer(&f, o, 0, buf, FRAME_LEN);
	}
	cr_expect_eq(o->n, 0);
	cr_expect_eq(f.nheld, 3);
	cr_assert_eq(flush(&f, o), 3 + f.stats.duplicated);
	cr_expect_eq(f.nheld, 0);
	cr_expect_eq(o->n, 3 + f.stats.duplicated);
	for (uint64_t k = 0; k < o->n; k++) {
		cr_expect_geq(o->seq[k], last);
		last = o->seq[k];
	}
	cr_expect_eq(uroce_fault_next_deadline(&f), UINT64_MAX);
	cr_expect_eq(flush(&f, o), 0);
	uroce_fault_fini(&f);
	free_out(o);
}

static void check_corrupt(const uint8_t *in, uint32_t len, uint32_t hdr, uint32_t *lo,
			  uint32_t *hi, struct out *o)
{
	uint32_t diffs = 0, at = 0;

	cr_assert_eq(o->last_len, len);
	for (uint32_t i = 0; i < len; i++)
		if (o->last[i] != in[i]) {
			diffs++;
			at = i;
		}
	cr_assert_eq(diffs, 1, "%u bytes changed", diffs);
	cr_assert_geq(at, hdr, "byte %u is in the Ethernet header", at);
	if (at < *lo)
		*lo = at;
	if (at > *hi)
		*hi = at;
}

Test(uroce_fault_offer, corrupt_changes_exactly_one_byte_after_the_ethernet_header)
{
	struct uroce_fault_cfg cfg = {.corrupt = 1.0, .seed = 77};
	struct uroce_fault f;
	struct out *o = new_out(0);
	uint8_t buf[FRAME_LEN], copy[FRAME_LEN];
	uint32_t lo = UINT32_MAX, hi = 0;

	cr_assert_eq(uroce_fault_init(&f, &cfg), 0);
	for (uint32_t i = 0; i < 20000; i++) {
		make_frame(buf, i, FRAME_LEN);
		memcpy(copy, buf, FRAME_LEN);
		cr_assert_eq(offer(&f, o, 0, buf, FRAME_LEN), 1);
		cr_assert_eq(memcmp(buf, copy, FRAME_LEN), 0, "the caller's frame was written");
		cr_assert_neq(o->last_ptr, buf);
		check_corrupt(buf, FRAME_LEN, 14, &lo, &hi, o);
	}
	cr_expect_eq(lo, 14);
	cr_expect_eq(hi, FRAME_LEN - 1);

	/* An 802.1Q tag is part of the Ethernet header. */
	lo = UINT32_MAX;
	hi = 0;
	for (uint32_t i = 0; i < 20000; i++) {
		make_frame(buf, i, FRAME_LEN);
		buf[12] = 0x81;
		buf[13] = 0x00;
		offer(&f, o, 0, buf, FRAME_LEN);
		check_corrupt(buf, FRAME_LEN, 18, &lo, &hi, o);
	}
	cr_expect_eq(lo, 18);

	/* Corrupted and held, corrupted and duplicated: still one byte, in every copy. */
	uroce_fault_fini(&f);
	cfg.reorder = 1.0;
	cfg.dup = 1.0;
	cr_assert_eq(uroce_fault_init(&f, &cfg), 0);
	make_frame(buf, 1, FRAME_LEN);
	offer(&f, o, 0, buf, FRAME_LEN);
	flush(&f, o);
	check_corrupt(buf, FRAME_LEN, 14, &lo, &hi, o);
	cr_expect_eq(f.stats.corrupted, 1);

	/* Nothing after the header: left alone. */
	make_frame(buf, 1, 14);
	o->n = 0;
	offer(&f, o, 0, buf, 14);
	flush(&f, o);
	cr_expect_eq(o->n, 2);
	cr_expect_eq(memcmp(o->last, buf, 14), 0);
	cr_expect_eq(f.stats.corrupted, 1);
	uroce_fault_fini(&f);
	free_out(o);
}

Test(uroce_fault_offer, zero_rates_pass_through_the_callers_frame)
{
	struct uroce_fault_cfg cfg = {.seed = 3};
	struct uroce_fault f;
	struct out *o = new_out(0), *ref = new_out(0);
	static uint8_t buf[20000];

	cr_assert_eq(uroce_fault_init(&f, &cfg), 0);
	cr_expect_eq(f.active, 0);
	cr_expect_null(f.mem, "a pass-through allocates nothing");
	for (uint32_t i = 0; i < 10000; i++) {
		uint32_t len = 1 + (i * 37) % 20000; /* any length, over the maximum too */

		make_frame(buf, i, len < 18 ? 18 : len);
		cr_assert_eq(offer(&f, o, i, buf, len), 1);
		record(ref, buf, len);
		cr_assert_eq(o->last_ptr, buf);
		cr_assert_eq(o->last_len, len);
	}
	cr_expect_eq(o->hash, ref->hash);
	cr_expect_eq(o->n, 10000);
	cr_expect_eq(f.stats.passed, 10000);
	cr_expect_eq(f.stats.emitted, 10000);
	cr_expect_eq(uroce_fault_next_deadline(&f), UINT64_MAX);
	cr_expect_eq(flush(&f, o), 0);
	cr_expect_eq(process(&f, o, 1ull << 60), 0);
	uroce_fault_fini(&f);
	free_out(o);
	free_out(ref);
}

Test(uroce_fault_offer, dup_emits_twice_back_to_back)
{
	struct uroce_fault_cfg cfg = {.dup = 1.0};
	struct uroce_fault f;
	struct out *o = new_out(100);
	uint8_t buf[FRAME_LEN];

	cr_assert_eq(uroce_fault_init(&f, &cfg), 0);
	for (uint32_t i = 0; i < 50; i++) {
		make_frame(buf, i, FRAME_LEN);
		offer(&f, o, 0, buf, FRAME_LEN);
		cr_assert_eq(o->last_ptr, buf, "unmodified: the caller's pointer");
	}
	for (uint32_t k = 0; k < 100; k++)
		cr_expect_eq(o->seq[k], k / 2);
	cr_expect_eq(f.stats.duplicated, 50);
	cr_expect_eq(f.stats.passed, 0);
	uroce_fault_fini(&f);
	free_out(o);
}

Test(uroce_fault_offer, oversize_frames_are_never_copied)
{
	struct uroce_fault_cfg cfg = {.reorder = 1.0, .corrupt = 1.0};
	struct uroce_fault f;
	struct out *o = new_out(0);
	static uint8_t buf[UROCE_FAULT_FRAME_MAX + 1];

	cr_assert_eq(uroce_fault_init(&f, &cfg), 0);
	make_frame(buf, 1, sizeof(buf));
	cr_assert_eq(offer(&f, o, 0, buf, sizeof(buf)), 1);
	cr_expect_eq(o->n, 1);
	cr_expect_eq(o->last_ptr, buf);
	cr_expect_eq(f.stats.oversize, 2);
	cr_expect_eq(f.nheld, 0);
	/* the largest frame that fits is held and corrupted */
	cr_assert_eq(offer(&f, o, 0, buf, UROCE_FAULT_FRAME_MAX), 0);
	cr_expect_eq(f.nheld, 1);
	uroce_fault_fini(&f);
	free_out(o);
}

Test(uroce_fault_init, bad_configuration_is_refused)
{
	struct uroce_fault f;
	const struct uroce_fault_cfg bad[] = {
		{.drop = -0.01}, {.dup = 1.01}, {.reorder = NAN}, {.corrupt = INFINITY},
		{.reorder_depth = UROCE_FAULT_DEPTH_MAX + 1},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(uroce_fault_init(&f, &bad[i]), -EINVAL, "case %zu", i);
	cr_expect_eq(uroce_fault_init(&f, &(struct uroce_fault_cfg){.drop = 1, .dup = 1,
				      .reorder = 1, .corrupt = 1,
				      .reorder_depth = UROCE_FAULT_DEPTH_MAX}), 0);
	uroce_fault_fini(&f);
}

/* This frame (twice: dup is 1) comes first, with the caller's pointer; then the held
 * frame it released, in the injector's buffer. */
Test(uroce_fault_offer, returns_this_frame_then_the_held_frames_it_releases)
{
	struct uroce_fault_cfg cfg = {.dup = 1.0, .reorder = 0.5, .reorder_depth = 1,
				      .seed = 5};
	struct uroce_fault f;
	struct uroce_fault_out out[UROCE_FAULT_OUT_MAX];
	uint8_t buf[FRAME_LEN];
	uint32_t seen = 0;

	cr_assert_eq(uroce_fault_init(&f, &cfg), 0);
	for (uint32_t i = 0; i < 1000; i++) {
		uint32_t n, s;

		make_frame(buf, i, FRAME_LEN);
		n = uroce_fault_offer(&f, 0, buf, FRAME_LEN, out);
		cr_assert_leq(n, 4);
		if (n != 4)
			continue;
		cr_expect(out[0].frame == buf && out[1].frame == buf);
		cr_expect(out[2].frame != buf && out[3].frame == out[2].frame);
		memcpy(&s, out[2].frame + 14, 4);
		cr_expect_eq(s, i - 1, "the held frame is the one before");
		seen++;
	}
	cr_expect_gt(seen, 100);
	uroce_fault_fini(&f);
}

/* Every frame held and duplicated at the greatest depth: no call returns more than the
 * out array holds. */
Test(uroce_fault_offer, never_returns_more_than_uroce_fault_out_max)
{
	struct uroce_fault_cfg cfg = {.dup = 1.0, .reorder = 1.0,
				      .reorder_depth = UROCE_FAULT_DEPTH_MAX};
	struct uroce_fault f;
	struct uroce_fault_out out[UROCE_FAULT_OUT_MAX];
	uint8_t buf[FRAME_LEN];
	uint32_t most = 0, n;

	cr_assert_eq(uroce_fault_init(&f, &cfg), 0);
	for (uint32_t i = 0; i < 100000; i++) {
		make_frame(buf, i, FRAME_LEN);
		n = uroce_fault_offer(&f, 0, buf, FRAME_LEN, out);
		most = n > most ? n : most;
	}
	cr_assert_leq(most, UROCE_FAULT_OUT_MAX);
	cr_expect_geq(most, 8, "several held frames came out at once");
	cr_assert_leq(uroce_fault_flush(&f, out), 2 * UROCE_FAULT_DEPTH_MAX);
	uroce_fault_fini(&f);
}

/* What the injector sends, call by call, hashed with whether it was the caller's pointer;
 * the expected value was recorded with the emit callback the injector had before it
 * returned its frames (commit d863f72), so the same seed still makes the same faults. */
static uint64_t replay_hash(void)
{
	const struct uroce_fault_cfg cfgs[] = {
		{.drop = 0.1, .dup = 0.1, .reorder = 0.2, .corrupt = 0.1, .reorder_depth = 7,
		 .reorder_timeout_ns = 5000, .seed = 42},
		{.dup = 0.5, .reorder = 0.9, .reorder_depth = 64, .reorder_timeout_ns = 30000,
		 .seed = 1},
		{.reorder = 1.0, .dup = 1.0, .corrupt = 0.5, .reorder_depth = 3, .seed = 7},
		{.seed = 3},
	};
	static uint8_t buf[400];
	struct uroce_fault_out out[UROCE_FAULT_OUT_MAX];
	uint64_t h = 0xcbf29ce484222325ull;

#define MIX(v) (h = (h ^ (uint64_t)(v)) * 0x100000001b3ull)
#define MIX_OUT(call, n)                                                                 \
	for (uint32_t k = 0; k < (n); k++) {                                             \
		MIX(call);                                                               \
		MIX(out[k].frame == buf);                                                \
		MIX(out[k].len);                                                         \
		for (uint32_t b = 0; b < out[k].len; b++)                                \
			MIX(out[k].frame[b]);                                            \
	}
	for (unsigned c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]); c++) {
		struct uroce_fault f;
		uint64_t st[sizeof(f.stats) / sizeof(uint64_t)];
		uint32_t n;

		cr_assert_eq(uroce_fault_init(&f, &cfgs[c]), 0);
		for (uint64_t i = 0; i < 200000; i++) {
			uint32_t len = 14 + (uint32_t)(i % 380);

			for (uint32_t b = 0; b < len; b++)
				buf[b] = (uint8_t)(b * 13u + i);
			n = uroce_fault_offer(&f, i * 1000, buf, len, out);
			MIX_OUT(i, n);
			if (i % 17 == 0) {
				n = uroce_fault_process(&f, i * 1000 + 500, out);
				MIX_OUT(~i, n);
			}
		}
		n = uroce_fault_flush(&f, out);
		MIX_OUT(~0ull, n);
		memcpy(st, &f.stats, sizeof(st));
		for (unsigned k = 0; k < sizeof(st) / sizeof(st[0]); k++)
			MIX(st[k]);
		uroce_fault_fini(&f);
	}
#undef MIX_OUT
#undef MIX
	return h;
}

Test(uroce_fault_offer, replays_the_faults_recorded_before_the_callback_went)
{
	cr_expect_eq(replay_hash(), 0x65b8aa9c56a6d1bdull);
}
