/* SPDX-License-Identifier: BSD-3-Clause */
/* Test harness for lib/ipstack: a stack whose tx records frames, a resolved callback
 * that records outcomes, and frame builders written from the RFCs' layouts, with their
 * own checksum code, so that nothing the stack computes is used to check the stack. */
#ifndef IPT_H
#define IPT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "uroce_ipstack.h"
#include "uroce_wire.h"

#define IPT_MAX_FRAMES 64
#define IPT_MAX_RES 64
#define NS_PER_S 1000000000ull

struct ipt_res {
	uint64_t cookie;
	uint8_t gid[16];
	uint8_t mac[6];
	bool has_mac;
	int err;
};

struct ipt {
	struct uroce_ip_stack *s;
	uint8_t frame[IPT_MAX_FRAMES][UROCE_IP_FRAME_MAX];
	uint32_t flen[IPT_MAX_FRAMES];
	unsigned nframes;
	int tx_ret;
	struct ipt_res res[IPT_MAX_RES];
	unsigned nres;
	/* Called from the resolved callback, if set (re-entrancy tests). */
	void (*on_resolved)(uint64_t cookie, const uint8_t *gid, const uint8_t *mac, int err);
};

extern struct ipt T;

/* Our identity in the tests. */
extern const uint8_t OUR_MAC[6];
extern const uint8_t OUR_V4[4];   /* 10.0.0.1 */
extern const uint8_t OUR_V4B[4];  /* 192.168.5.1 */
extern const uint8_t OUR_V6[16];  /* fd00::1 */
extern const uint8_t OUR_LL[16];  /* fe80::ff:fe00:1, EUI-64 of OUR_MAC */
/* A peer. */
extern const uint8_t PEER_MAC[6];
extern const uint8_t PEER_V4[4];  /* 10.0.0.2 */
extern const uint8_t PEER_V6[16]; /* fd00::2 */
extern const uint8_t BCAST[6];

/* Fills @cfg with the test identity and the recording callbacks. */
void ipt_cfg(struct uroce_ip_cfg *cfg);
/* Creates T.s from @cfg (NULL: ipt_cfg's) and clears the records. */
void ipt_setup_cfg(const struct uroce_ip_cfg *cfg);
void ipt_setup(void);
void ipt_teardown(void);
void ipt_clear(void);
const struct uroce_ip_counters *ipt_cnt(void);
/* The sum of the drop-reason counters (truncated .. too_big). */
uint64_t ipt_drop_reasons(void);

/* RFC 1071 checksum, written independently of lib/wire: 0 when the data verifies. */
uint16_t ref_csum(const uint8_t *p, uint32_t len, uint32_t sum);
/* ICMPv6 checksum over the pseudo-header (RFC 8200 8.1) of the IPv6 header at @ip6. */
uint16_t ref_csum6(const uint8_t *ip6, const uint8_t *l4, uint32_t len, uint8_t next);

/* Frame builders: each returns the frame length. vlan 0 means untagged. */
uint32_t fb_eth(uint8_t *f, const uint8_t *dst, const uint8_t *src, uint16_t type,
		uint16_t vlan);
uint32_t fb_arp(uint8_t *f, uint16_t vlan, const uint8_t *eth_dst, uint16_t op,
		const uint8_t *sha, const uint8_t *spa, const uint8_t *tha, const uint8_t *tpa);
uint32_t fb_ipv4(uint8_t *f, uint16_t vlan, const uint8_t *eth_dst, const uint8_t *src,
		 const uint8_t *dst, uint8_t proto, const uint8_t *l4, uint32_t l4_len);
uint32_t fb_ipv6(uint8_t *f, uint16_t vlan, const uint8_t *eth_dst, const uint8_t *src,
		 const uint8_t *dst, uint8_t next, uint8_t hop, const uint8_t *l4,
		 uint32_t l4_len);
/* ICMP echo request (IPv4) with @data; checksum set. */
uint32_t fb_echo4(uint8_t *f, uint16_t vlan, const uint8_t *src, const uint8_t *dst,
		  uint16_t id, uint16_t seq, const uint8_t *data, uint32_t dlen);
/* ICMPv6 message of @type with @body after the 4-byte header; checksum set. */
uint32_t fb_icmp6(uint8_t *f, uint16_t vlan, const uint8_t *eth_dst, const uint8_t *src,
		  const uint8_t *dst, uint8_t hop, uint8_t type, uint8_t code,
		  const uint8_t *body, uint32_t blen);
uint32_t fb_echo6(uint8_t *f, uint16_t vlan, const uint8_t *src, const uint8_t *dst,
		  uint16_t id, uint16_t seq, const uint8_t *data, uint32_t dlen);
/* Neighbor Solicitation for @target from @src (:: for DAD) to @dst (a solicited-node
 * group or unicast), with a source link-layer option when @slla is not NULL. */
uint32_t fb_ns(uint8_t *f, uint16_t vlan, const uint8_t *src, const uint8_t *dst,
	       const uint8_t *target, const uint8_t *slla);
/* Neighbor Advertisement for @target with @flags (0x40 solicited, 0x20 override). */
uint32_t fb_na(uint8_t *f, uint16_t vlan, const uint8_t *eth_dst, const uint8_t *src,
	       const uint8_t *dst, const uint8_t *target, uint8_t flags, const uint8_t *tlla);
/* UDP datagram to @dport with @plen payload bytes (RoCE is not checked by the stack). */
uint32_t fb_udp4(uint8_t *f, uint16_t vlan, const uint8_t *dst, uint16_t dport, uint32_t plen);
uint32_t fb_udp6(uint8_t *f, uint16_t vlan, const uint8_t *dst, uint16_t dport, uint32_t plen);

/* Feeds a copy of exactly @len bytes (heap, so ASan sees an over-read) at @now. */
enum uroce_ip_verdict ipt_input(const uint8_t *f, uint32_t len, uint64_t now);

static inline uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

#endif
