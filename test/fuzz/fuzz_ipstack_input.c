/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for lib/ipstack: received frames interleaved with resolutions,
 * cancellations and the passing of time, against one stack built per input.
 *
 * Input: byte 0 configures the stack (bit 0: VLAN 5; bit 1: a 4-entry cache and 6
 * waiters instead of 64 and 64; bit 2: tx fails), then records:
 *   op & 3 == 0: a frame: 2 bytes of length (big-endian), the bytes; op bit 2: fix the
 *                IPv4 header, ICMP and ICMPv6 checksums first (so that mutations get past
 *                them); op >> 3: milliseconds the clock moves, x 10;
 *   op & 3 == 1: resolve: next byte & 15 picks a GID (peers, own, groups, invalid), the
 *                byte after is the cookie;
 *   op & 3 == 2: cancel: next byte is the cookie;
 *   op & 3 == 3: process: next byte x 50 ms later.
 * Oracles (besides ASan, UBSan and LeakSanitizer): one verdict per frame and one reason
 * per drop (counters); every frame sent is ours, tagged as configured, and its checksums
 * verify; resolve returns one of its documented values, a MAC only with 0; a callback
 * comes only for a cookie with a waiter (-EAGAIN, not cancelled), with a MAC exactly when
 * err is 0 and err one of 0, -EHOSTUNREACH; nothing is left waiting after enough time;
 * next_deadline is UINT64_MAX then; a checksum left for offload (uroce_ip_csum_complete)
 * is completed to one that verifies; a RoCE frame's parse (uroce_ip_input_roce, which
 * the transport takes) is what uroce_wire_parse makes of the whole frame.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "uroce_ipstack.h"
#include "wire_bytes.h"

#include "fuzz_check.h"

static const uint8_t our_mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};

/* The GIDs the fuzzer may resolve: peers on both families (the frames can answer for
 * them: 10.0.0.2-5, fd00::2-5, fe80::2), our own, groups, and invalid ones. */
static const uint8_t gids[16][16] = {
	{[10] = 0xff, 0xff, 10, 0, 0, 2},
	{[10] = 0xff, 0xff, 10, 0, 0, 3},
	{[10] = 0xff, 0xff, 10, 0, 0, 4},
	{[10] = 0xff, 0xff, 10, 0, 0, 5},
	{0xfd, 0x00, [15] = 2},
	{0xfd, 0x00, [15] = 3},
	{0xfd, 0x00, [15] = 4},
	{0xfd, 0x00, [15] = 5},
	{0xfe, 0x80, [15] = 2},
	{[10] = 0xff, 0xff, 10, 0, 0, 1},           /* ours */
	{0xfd, 0x00, [15] = 1},                     /* ours */
	{[10] = 0xff, 0xff, 224, 0, 0, 5},          /* group */
	{0xff, 0x02, [11] = 1, 0xff, 0, 0, 2},      /* group */
	{[10] = 0xff, 0xff, 0, 0, 0, 0},            /* invalid */
	{[15] = 1},                                 /* ::1, invalid */
	{[10] = 0xff, 0xff, 10, 0, 1, 9},
};

static struct {
	struct uroce_ip_stack *s;
	uint16_t vlan;
	int tx_ret;
	uint32_t waiting[256]; /* waiters per cookie */
} F;

static uint16_t csum(const uint8_t *p, size_t len, uint32_t sum)
{
	return wire_csum_fold(wire_csum_add(sum, p, len));
}

static uint16_t csum6(const uint8_t *ip6, const uint8_t *l4, uint32_t len)
{
	uint32_t sum = wire_csum_add(0, ip6 + 8, 32);

	sum += (len >> 16) + (len & 0xffff) + 58;
	return csum(l4, len, sum);
}

static int fz_tx(void *ctx, const uint8_t *f, uint32_t len)
{
	uint32_t off = 12;
	uint16_t type;

	(void)ctx;
	CHECK(len >= 14 && len <= UROCE_IP_FRAME_MAX);
	CHECK(memcmp(f + 6, our_mac, 6) == 0);
	CHECK(!(f[0] & 1) || f[0] == 0xff || (f[0] == 0x33 && f[1] == 0x33));
	if (F.vlan) {
		CHECK(wire_be16(f + 12) == 0x8100 && (wire_be16(f + 14) & 0xfff) == F.vlan);
		off += 4;
	}
	type = wire_be16(f + off);
	off += 2;
	if (type == 0x0806) {
		CHECK(len == off + 28);
	} else if (type == 0x0800) {
		CHECK(len >= off + 28 && f[off] == 0x45 && wire_be16(f + off + 2) == len - off);
		CHECK(csum(f + off, 20, 0) == 0);
		CHECK(csum(f + off + 20, len - off - 20, 0) == 0);
	} else {
		CHECK(type == 0x86dd && len >= off + 44);
		CHECK(wire_be16(f + off + 4) == len - off - 40 && f[off + 6] == 58);
		CHECK(csum6(f + off, f + off + 40, len - off - 40) == 0);
	}
	return F.tx_ret;
}

static void fz_resolved(void *ctx, uint64_t cookie, const uint8_t gid[16], const uint8_t *mac,
			int err)
{
	(void)ctx;
	(void)gid;
	CHECK(cookie < 256 && F.waiting[cookie] > 0);
	F.waiting[cookie]--;
	CHECK((mac == NULL) == (err != 0));
	CHECK(err == 0 || err == -EHOSTUNREACH);
	CHECK(mac == NULL || !(mac[0] & 1));
}

/* Recomputes the checksums a frame carries, where its lengths allow. */
static void fix_checksums(uint8_t *f, uint32_t len)
{
	uint32_t off = 12;
	uint16_t type;

	if (len < 14)
		return;
	type = wire_be16(f + off);
	if (type == 0x8100 && len >= 18) {
		off += 4;
		type = wire_be16(f + off);
	}
	off += 2;
	if (type == 0x0800 && len >= off + 20) {
		uint32_t ihl = (f[off] & 0xfu) * 4, total = wire_be16(f + off + 2);

		if (ihl < 20 || len < off + ihl)
			return;
		wire_put16(f + off + 10, 0);
		wire_put16(f + off + 10, csum(f + off, ihl, 0));
		if (f[off + 9] == 1 && total >= ihl + 4 && len >= off + total) {
			wire_put16(f + off + ihl + 2, 0);
			wire_put16(f + off + ihl + 2, csum(f + off + ihl, total - ihl, 0));
		}
	} else if (type == 0x86dd && len >= off + 40) {
		uint32_t plen = wire_be16(f + off + 4);

		if (f[off + 6] == 58 && plen >= 4 && len >= off + 40 + plen) {
			wire_put16(f + off + 42, 0);
			wire_put16(f + off + 42, csum6(f + off, f + off + 40, plen));
		}
	}
}

static void check_counters(void)
{
	const struct uroce_ip_counters *c = uroce_ip_counters(F.s);
	uint64_t reasons = 0;

	for (unsigned i = UROCE_IP_CNT_truncated; i <= UROCE_IP_CNT_too_big; i++)
		reasons += uroce_ip_counter_value(c, i);
	CHECK(c->rx_frames == c->rx_roce + c->rx_consumed + c->rx_dropped);
	CHECK(c->rx_dropped == reasons);
}

/* A frame to the stack, as uroced gives it (uroce_ip_input_roce). A RoCE frame's parse,
 * which the stack ends with lib/wire from where its own checks stopped, is the one lib/wire
 * makes of the whole frame: the same result, the same fields. */
static void roce_input(const uint8_t *frame, uint32_t len, uint64_t now)
{
	struct uroce_wire_pkt pkt, whole;
	enum uroce_wire_err err = UROCE_WIRE_E__COUNT;

	/* Zeroed, padding included, so that the two compare as bytes. */
	memset(&pkt, 0, sizeof(pkt));
	memset(&whole, 0, sizeof(whole));
	if (uroce_ip_input_roce(F.s, frame, len, now, &pkt, &err) != UROCE_IP_ROCE) {
		CHECK(err == UROCE_WIRE_E__COUNT); /* untouched */
		return;
	}
	CHECK(err == uroce_wire_parse(frame, len, &whole));
	if (err == UROCE_WIRE_OK)
		CHECK(memcmp(&pkt, &whole, sizeof(pkt)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t frame[UROCE_IP_FRAME_MAX];
	struct uroce_ip_cfg cfg;
	uint64_t now = 1000000000ull;
	size_t i = 1;

	if (size < 1)
		return 0;
	memset(&F, 0, sizeof(F));
	uroce_ip_cfg_init(&cfg);
	memcpy(cfg.mac, our_mac, 6);
	cfg.v4[0][0] = 10;
	cfg.v4[0][3] = 1;
	cfg.v4[1][0] = 192;
	cfg.v4[1][1] = 168;
	cfg.v4[1][3] = 1;
	cfg.v4_count = 2;
	cfg.v6[0][0] = 0xfd;
	cfg.v6[0][15] = 1;
	cfg.v6_count = 1;
	F.vlan = cfg.vlan_id = data[0] & 1 ? 5 : 0;
	/* Small caches: a stack per input must be cheap, and small ones fill and evict. */
	cfg.neigh_max = data[0] & 2 ? 4 : 64;
	cfg.waiters_max = data[0] & 2 ? 6 : 64;
	F.tx_ret = data[0] & 4 ? -1 : 0;
	cfg.tx = fz_tx;
	cfg.resolved = fz_resolved;
	F.s = uroce_ip_create(&cfg);
	CHECK(F.s != NULL);

	while (i < size) {
		uint8_t op = data[i++];

		switch (op & 3) {
		case 0: {
			uint32_t len;

			if (size - i < 2)
				goto out;
			len = wire_be16(data + i);
			i += 2;
			if (len > size - i)
				len = (uint32_t)(size - i);
			if (len > sizeof(frame))
				len = sizeof(frame);
			memcpy(frame, data + i, len);
			i += len;
			if (op & 4)
				fix_checksums(frame, len);
			now += (uint64_t)(op >> 3) * 10000000ull;
			roce_input(frame, len, now);
			check_counters();
			/* uroced's path to its kernel interface: a checksum completed once
			 * verifies, so the frame is no longer one left for offload. */
			if (uroce_ip_csum_complete(frame, len))
				CHECK(!uroce_ip_csum_partial(frame, len));
			break;
		}
		case 1: {
			uint8_t mac[6];
			const uint8_t *gid;
			int rc;

			if (size - i < 2)
				goto out;
			gid = gids[data[i] & 15];
			rc = uroce_ip_resolve(F.s, gid, now, mac, data[i + 1]);
			CHECK(rc == 0 || rc == -EAGAIN || rc == -EINVAL || rc == -ENOBUFS);
			if (rc == -EAGAIN)
				F.waiting[data[i + 1]]++;
			if (rc == 0)
				CHECK(memcmp(gid, gids[9], 16) != 0 ||
				      memcmp(mac, our_mac, 6) == 0);
			if (rc == -EINVAL)
				CHECK((data[i] & 15) == 13 || (data[i] & 15) == 14);
			i += 2;
			break;
		}
		case 2:
			if (size - i < 1)
				goto out;
			CHECK(uroce_ip_cancel(F.s, data[i]) == F.waiting[data[i]]);
			F.waiting[data[i]] = 0;
			i++;
			break;
		default:
			if (size - i < 1)
				goto out;
			now += (uint64_t)data[i++] * 50000000ull;
			uroce_ip_process(F.s, now);
			break;
		}
	}
out:
	/* Enough time for every resolution to succeed or fail: nobody is left waiting. */
	for (unsigned k = 0; k < UROCE_IP_MAX_PROBES_DEFAULT + 1; k++) {
		now += UROCE_IP_RETRANS_NS_DEFAULT;
		uroce_ip_process(F.s, now);
	}
	for (unsigned c = 0; c < 256; c++)
		CHECK(F.waiting[c] == 0);
	CHECK(uroce_ip_next_deadline(F.s) == UINT64_MAX);
	uroce_ip_destroy(F.s);
	return 0;
}
