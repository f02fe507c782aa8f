/* SPDX-License-Identifier: BSD-3-Clause */
#include "ipt.h"

#include <stdlib.h>

#include <criterion/criterion.h>

struct ipt T;

const uint8_t OUR_MAC[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
const uint8_t OUR_V4[4] = {10, 0, 0, 1};
const uint8_t OUR_V4B[4] = {192, 168, 5, 1};
const uint8_t OUR_V6[16] = {0xfd, 0x00, [15] = 0x01};
/* 02:00:00:00:00:01 -> interface id 0000:00ff:fe00:0001 (the 0x02 bit flipped). */
const uint8_t OUR_LL[16] = {0xfe, 0x80, [11] = 0xff, [12] = 0xfe, [15] = 0x01};
const uint8_t PEER_MAC[6] = {0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee};
const uint8_t PEER_V4[4] = {10, 0, 0, 2};
const uint8_t PEER_V6[16] = {0xfd, 0x00, [15] = 0x02};
const uint8_t BCAST[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static int rec_tx(void *ctx, const uint8_t *frame, uint32_t len)
{
	cr_assert_eq(ctx, &T);
	cr_assert(len <= UROCE_IP_FRAME_MAX);
	cr_assert(T.nframes < IPT_MAX_FRAMES, "too many frames sent");
	memcpy(T.frame[T.nframes], frame, len);
	T.flen[T.nframes++] = len;
	return T.tx_ret;
}

static void rec_resolved(void *ctx, uint64_t cookie, const uint8_t gid[16], const uint8_t *mac,
			 int err)
{
	struct ipt_res *r;

	cr_assert_eq(ctx, &T);
	cr_assert(T.nres < IPT_MAX_RES);
	cr_assert((mac == NULL) == (err != 0), "mac %p with err %d", (const void *)mac, err);
	r = &T.res[T.nres++];
	r->cookie = cookie;
	memcpy(r->gid, gid, 16);
	r->has_mac = mac != NULL;
	if (mac)
		memcpy(r->mac, mac, 6);
	r->err = err;
	if (T.on_resolved)
		T.on_resolved(cookie, gid, mac, err);
}

void ipt_cfg(struct uroce_ip_cfg *cfg)
{
	uroce_ip_cfg_init(cfg);
	memcpy(cfg->mac, OUR_MAC, 6);
	memcpy(cfg->v4[0], OUR_V4, 4);
	memcpy(cfg->v4[1], OUR_V4B, 4);
	cfg->v4_count = 2;
	memcpy(cfg->v6[0], OUR_V6, 16);
	cfg->v6_count = 1;
	cfg->tx = rec_tx;
	cfg->resolved = rec_resolved;
	cfg->ctx = &T;
}

void ipt_clear(void)
{
	T.nframes = 0;
	T.nres = 0;
}

void ipt_setup_cfg(const struct uroce_ip_cfg *cfg)
{
	struct uroce_ip_cfg c;

	if (cfg == NULL) {
		ipt_cfg(&c);
		cfg = &c;
	}
	ipt_clear();
	T.tx_ret = 0;
	T.on_resolved = NULL;
	T.s = uroce_ip_create(cfg);
	cr_assert_not_null(T.s);
}

void ipt_setup(void)
{
	ipt_setup_cfg(NULL);
}

void ipt_teardown(void)
{
	uroce_ip_destroy(T.s);
	T.s = NULL;
}

const struct uroce_ip_counters *ipt_cnt(void)
{
	return uroce_ip_counters(T.s);
}

uint64_t ipt_drop_reasons(void)
{
	const struct uroce_ip_counters *c = ipt_cnt();
	uint64_t sum = 0;

	for (unsigned i = UROCE_IP_CNT_truncated; i <= UROCE_IP_CNT_too_big; i++)
		sum += uroce_ip_counter_value(c, i);
	return sum;
}

uint16_t ref_csum(const uint8_t *p, uint32_t len, uint32_t sum)
{
	uint64_t s = sum;

	for (uint32_t i = 0; i < len; i++)
		s += (i & 1) ? p[i] : (uint32_t)p[i] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

uint16_t ref_csum6(const uint8_t *ip6, const uint8_t *l4, uint32_t len, uint8_t next)
{
	uint8_t ph[40];

	memcpy(ph, ip6 + 8, 32);
	ph[32] = (uint8_t)(len >> 24);
	ph[33] = (uint8_t)(len >> 16);
	ph[34] = (uint8_t)(len >> 8);
	ph[35] = (uint8_t)len;
	ph[36] = ph[37] = ph[38] = 0;
	ph[39] = next;
	return ref_csum(l4, len, (uint16_t)~ref_csum(ph, 40, 0));
}

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

uint32_t fb_eth(uint8_t *f, const uint8_t *dst, const uint8_t *src, uint16_t type,
		uint16_t vlan)
{
	uint32_t off = 12;

	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	if (vlan) {
		put16(f + 12, 0x8100);
		put16(f + 14, vlan);
		off = 16;
	}
	put16(f + off, type);
	return off + 2;
}

uint32_t fb_arp(uint8_t *f, uint16_t vlan, const uint8_t *eth_dst, uint16_t op,
		const uint8_t *sha, const uint8_t *spa, const uint8_t *tha, const uint8_t *tpa)
{
	uint32_t off = fb_eth(f, eth_dst, sha, 0x0806, vlan);
	uint8_t *a = f + off;

	put16(a, 1);
	put16(a + 2, 0x0800);
	a[4] = 6;
	a[5] = 4;
	put16(a + 6, op);
	memcpy(a + 8, sha, 6);
	memcpy(a + 14, spa, 4);
	memcpy(a + 18, tha, 6);
	memcpy(a + 24, tpa, 4);
	return off + 28;
}

uint32_t fb_ipv4(uint8_t *f, uint16_t vlan, const uint8_t *eth_dst, const uint8_t *src,
		 const uint8_t *dst, uint8_t proto, const uint8_t *l4, uint32_t l4_len)
{
	uint32_t off = fb_eth(f, eth_dst, PEER_MAC, 0x0800, vlan);
	uint8_t *ip = f + off;

	memset(ip, 0, 20);
	ip[0] = 0x45;
	put16(ip + 2, 20 + l4_len);
	put16(ip + 4, 0x1234);
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = proto;
	memcpy(ip + 12, src, 4);
	memcpy(ip + 16, dst, 4);
	put16(ip + 10, ref_csum(ip, 20, 0));
	memcpy(ip + 20, l4, l4_len);
	return off + 20 + l4_len;
}

uint32_t fb_ipv6(uint8_t *f, uint16_t vlan, const uint8_t *eth_dst, const uint8_t *src,
		 const uint8_t *dst, uint8_t next, uint8_t hop, const uint8_t *l4,
		 uint32_t l4_len)
{
	uint32_t off = fb_eth(f, eth_dst, PEER_MAC, 0x86dd, vlan);
	uint8_t *ip = f + off;

	memset(ip, 0, 40);
	ip[0] = 0x60;
	put16(ip + 4, l4_len);
	ip[6] = next;
	ip[7] = hop;
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
	memcpy(ip + 40, l4, l4_len);
	return off + 40 + l4_len;
}

uint32_t fb_echo4(uint8_t *f, uint16_t vlan, const uint8_t *src, const uint8_t *dst,
		  uint16_t id, uint16_t seq, const uint8_t *data, uint32_t dlen)
{
	static uint8_t m[UROCE_IP_FRAME_MAX];

	m[0] = 8;
	m[1] = 0;
	put16(m + 2, 0);
	put16(m + 4, id);
	put16(m + 6, seq);
	memcpy(m + 8, data, dlen);
	put16(m + 2, ref_csum(m, 8 + dlen, 0));
	return fb_ipv4(f, vlan, OUR_MAC, src, dst, 1, m, 8 + dlen);
}

static void mcast_mac(uint8_t *mac, const uint8_t *dst)
{
	mac[0] = mac[1] = 0x33;
	memcpy(mac + 2, dst + 12, 4);
}

uint32_t fb_icmp6(uint8_t *f, uint16_t vlan, const uint8_t *eth_dst, const uint8_t *src,
		  const uint8_t *dst, uint8_t hop, uint8_t type, uint8_t code,
		  const uint8_t *body, uint32_t blen)
{
	static uint8_t m[UROCE_IP_FRAME_MAX];
	uint8_t mac[6];
	uint32_t len, off;

	if (eth_dst == NULL) {
		if (dst[0] == 0xff)
			mcast_mac(mac, dst);
		else
			memcpy(mac, OUR_MAC, 6);
		eth_dst = mac;
	}
	m[0] = type;
	m[1] = code;
	m[2] = m[3] = 0;
	memcpy(m + 4, body, blen);
	len = fb_ipv6(f, vlan, eth_dst, src, dst, 58, hop, m, 4 + blen);
	off = len - (4 + blen);
	put16(f + off + 2, ref_csum6(f + off - 40, f + off, 4 + blen, 58));
	return len;
}

uint32_t fb_echo6(uint8_t *f, uint16_t vlan, const uint8_t *src, const uint8_t *dst,
		  uint16_t id, uint16_t seq, const uint8_t *data, uint32_t dlen)
{
	static uint8_t b[UROCE_IP_FRAME_MAX];

	put16(b, id);
	put16(b + 2, seq);
	memcpy(b + 4, data, dlen);
	return fb_icmp6(f, vlan, NULL, src, dst, 64, 128, 0, b, 4 + dlen);
}

uint32_t fb_ns(uint8_t *f, uint16_t vlan, const uint8_t *src, const uint8_t *dst,
	       const uint8_t *target, const uint8_t *slla)
{
	uint8_t b[4 + 16 + 8] = {0};

	memcpy(b + 4, target, 16);
	if (slla) {
		b[20] = 1;
		b[21] = 1;
		memcpy(b + 22, slla, 6);
	}
	return fb_icmp6(f, vlan, NULL, src, dst, 255, 135, 0, b, slla ? 28 : 20);
}

uint32_t fb_na(uint8_t *f, uint16_t vlan, const uint8_t *eth_dst, const uint8_t *src,
	       const uint8_t *dst, const uint8_t *target, uint8_t flags, const uint8_t *tlla)
{
	uint8_t b[4 + 16 + 8] = {0};

	b[0] = flags;
	memcpy(b + 4, target, 16);
	if (tlla) {
		b[20] = 2;
		b[21] = 1;
		memcpy(b + 22, tlla, 6);
	}
	return fb_icmp6(f, vlan, eth_dst, src, dst, 255, 136, 0, b, tlla ? 28 : 20);
}

uint32_t fb_udp4(uint8_t *f, uint16_t vlan, const uint8_t *dst, uint16_t dport, uint32_t plen)
{
	uint8_t u[8 + 64] = {0};

	put16(u, 0xc123);
	put16(u + 2, dport);
	put16(u + 4, 8 + plen);
	for (uint32_t i = 0; i < plen; i++)
		u[8 + i] = (uint8_t)i;
	return fb_ipv4(f, vlan, OUR_MAC, PEER_V4, dst, 17, u, 8 + plen);
}

uint32_t fb_udp6(uint8_t *f, uint16_t vlan, const uint8_t *dst, uint16_t dport, uint32_t plen)
{
	uint8_t u[8 + 64] = {0};

	put16(u, 0xc123);
	put16(u + 2, dport);
	put16(u + 4, 8 + plen);
	for (uint32_t i = 0; i < plen; i++)
		u[8 + i] = (uint8_t)i;
	return fb_ipv6(f, vlan, OUR_MAC, PEER_V6, dst, 17, 64, u, 8 + plen);
}

enum uroce_ip_verdict ipt_input(const uint8_t *f, uint32_t len, uint64_t now)
{
	/* An exact-size heap copy: one byte too far is an ASan report. */
	uint8_t *copy = malloc(len ? len : 1);
	enum uroce_ip_verdict v;

	cr_assert_not_null(copy);
	memcpy(copy, f, len);
	v = uroce_ip_input(T.s, copy, len, now);
	free(copy);
	return v;
}
