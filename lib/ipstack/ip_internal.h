/* SPDX-License-Identifier: BSD-3-Clause */
/* Private to lib/ipstack: the stack's state and the helpers its files share. */
#ifndef UROCE_IP_INTERNAL_H
#define UROCE_IP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "uroce_ipstack.h"
#include "uroce_wire.h"  /* Ethernet, IP and UDP constants, GIDs */
#include "wire_bytes.h" /* lib/wire's big-endian loads/stores and Internet checksum */

#ifndef ETH_ALEN
#define ETH_ALEN 6
#endif
#define ETHERTYPE_ARP 0x0806
#define ETHERTYPE_QINQ 0x88a8
#define IP_PROTO_ICMP 1
#define IP_PROTO_TCP 6
#define IP_PROTO_UDP 17
#define IP_PROTO_ICMPV6 58
#define ARP_LEN 28
#define ICMP_HLEN 8 /* type, code, checksum, and the 4 bytes of id/seq or reserved */
#define ND_LEN 24   /* ICMPv6 header + reserved/flags + target (RFC 4861 4.3, 4.4) */
#define ND_HOP_LIMIT 255
#define IPV6_HOP_LIMIT_DEFAULT 64 /* Linux net.ipv6.conf.*.hop_limit */

/* ---- neighbour cache ---------------------------------------------------------------- */

enum neigh_state {
	NEIGH_FREE = 0,
	NEIGH_INCOMPLETE,
	NEIGH_REACHABLE,
	NEIGH_STALE,
	NEIGH_PROBE,
};

/* Intrusive doubly-linked list, circular through a head node. */
struct ip_link {
	struct ip_link *prev, *next;
};

struct ip_waiter {
	struct ip_waiter *next;
	uint64_t cookie;
	/* Set when the entry settles and the waiter moves to the stack's done queue. */
	uint8_t gid[16];
	uint8_t mac[ETH_ALEN];
	int err;
};

struct ip_neigh {
	struct ip_link lru;   /* in use: stack.lru, most recently used first */
	struct ip_link probing; /* INCOMPLETE or PROBE: stack.probing */
	struct ip_neigh *hnext; /* hash chain, or free list */
	struct ip_waiter *wait_head, *wait_tail;
	uint64_t confirmed_ns; /* last reachability confirmation (REACHABLE) */
	uint64_t next_ns;      /* INCOMPLETE/PROBE: next request or the verdict */
	uint8_t gid[16];       /* IPv4-mapped or IPv6 */
	uint8_t mac[ETH_ALEN];
	uint8_t state;         /* enum neigh_state */
	uint8_t probes;        /* requests sent in this INCOMPLETE/PROBE round */
};

struct uroce_ip_stack {
	struct uroce_ip_cfg cfg;
	struct uroce_ip_counters cnt;
	/* Own IPv6 addresses: [0] is the link-local one, then cfg.v6. */
	uint8_t v6[1 + UROCE_IP_MAX_V6][16];
	unsigned n_v6;
	uint16_t ip_id; /* IPv4 identification of our datagrams */

	struct ip_neigh *neigh;     /* cfg.neigh_max entries */
	struct ip_neigh **bucket;   /* hash table, nbucket (a power of two) chains */
	uint32_t nbucket;
	uint32_t nneigh;            /* entries in use */
	struct ip_neigh *free_neigh;
	struct ip_link lru;
	struct ip_link probing;
	struct ip_waiter *waiter;   /* cfg.waiters_max nodes */
	struct ip_waiter *free_waiter;
	struct ip_waiter *done_head, *done_tail; /* settled, callback not yet made */
	bool delivering;

	struct {
		uint8_t gid[16];
		uint32_t refs; /* 0: free */
	} group[UROCE_IP_GROUPS_MAX]; /* RoCE multicast groups joined */

	uint8_t buf[UROCE_IP_FRAME_MAX]; /* the frame being sent */
};

/* ---- addresses ---------------------------------------------------------------------- */

static inline bool mac_is_group(const uint8_t *m)
{
	return m[0] & 1;
}
static inline bool mac_is_zero(const uint8_t *m)
{
	return (m[0] | m[1] | m[2] | m[3] | m[4] | m[5]) == 0;
}
static inline bool mac_eq(const uint8_t *a, const uint8_t *b)
{
	return memcmp(a, b, ETH_ALEN) == 0;
}

/* IPv4 addresses that are nobody's unicast source or target: 0/8 ("this network",
 * RFC 1122 3.2.1.3), 127/8 loopback, 224/4 multicast, 240/4 reserved and broadcast. */
static inline bool ip4_is_unicast(const uint8_t *a)
{
	return a[0] != 0 && a[0] != 127 && a[0] < 224;
}
static inline bool ip4_is_multicast(const uint8_t *a)
{
	return (a[0] & 0xf0) == 0xe0;
}
static inline bool ip6_is_multicast(const uint8_t *a)
{
	return a[0] == 0xff;
}
bool ip6_is_unspecified(const uint8_t *a);
/* Unicast IPv6 that may be a source or a neighbour: not ::, ::1, multicast, v4-mapped. */
bool ip6_is_unicast(const uint8_t *a);

/* Index of an own IPv4 address, or -1. */
int own_v4(const struct uroce_ip_stack *s, const uint8_t *a);
/* Index of an own IPv6 address in s->v6, or -1. */
int own_v6(const struct uroce_ip_stack *s, const uint8_t *a);
/* The own address that shares the longest prefix with @target (the first on a tie): the
 * source of a request to @target. NULL when there is no own IPv4 address. */
const uint8_t *src_v4_for(const struct uroce_ip_stack *s, const uint8_t *target);
const uint8_t *src_v6_for(const struct uroce_ip_stack *s, const uint8_t *target);
/* ff02::1:ffXX:XXXX for @a (RFC 4291 2.7.1). */
void ip6_solicited_node(const uint8_t *a, uint8_t *group);
/* True when @group is the solicited-node group of one of our addresses. */
bool own_solicited_node(const struct uroce_ip_stack *s, const uint8_t *group);

/* ---- frames ------------------------------------------------------------------------- */

/* Writes the Ethernet header (with our VLAN tag, if any) into s->buf; returns its size. */
uint32_t eth_put(struct uroce_ip_stack *s, const uint8_t *dst, uint16_t ethertype);
/* Writes a 20-byte IPv4 header for @payload_len bytes of @proto; DF set, TTL 64. */
void ip4_put(struct uroce_ip_stack *s, uint8_t *ip, uint8_t tos, uint8_t proto,
	     const uint8_t *src, const uint8_t *dst, uint32_t payload_len);
/* Writes a 40-byte IPv6 header. */
void ip6_put(uint8_t *ip, uint8_t tclass, uint8_t next, uint8_t hop_limit,
	     const uint8_t *src, const uint8_t *dst, uint32_t payload_len);
/* Internet checksum (RFC 1071) of @len bytes: 0 when a message with its checksum field
 * in place verifies. */
static inline uint16_t ip_csum(const uint8_t *p, uint32_t len)
{
	return wire_csum_fold(wire_csum_add(0, p, len));
}
/* ICMPv6 checksum over the pseudo-header of @ip6 (RFC 8200 8.1) and @len bytes at
 * @icmp, with the checksum field as found. */
uint16_t icmp6_csum(const uint8_t *ip6, const uint8_t *icmp, uint32_t len);
/* Hands s->buf to cfg.tx; counts a failure. */
void ip_tx(struct uroce_ip_stack *s, uint32_t len);

/* ---- per-protocol receive (the headers below them validated by input.c) ------------ */

struct ip_rx {
	const uint8_t *eth_src;
	const uint8_t *eth_dst;
	const uint8_t *l3;  /* IP header or ARP message */
	uint32_t l3_len;    /* ARP: bytes available; IP: the datagram's own length */
	const uint8_t *l4;  /* IP payload */
	uint32_t l4_len;
	uint64_t now;
};

enum uroce_ip_verdict arp_input(struct uroce_ip_stack *s, const struct ip_rx *rx);
enum uroce_ip_verdict echo4_input(struct uroce_ip_stack *s, const struct ip_rx *rx);
enum uroce_ip_verdict echo6_input(struct uroce_ip_stack *s, const struct ip_rx *rx);
enum uroce_ip_verdict ns_input(struct uroce_ip_stack *s, const struct ip_rx *rx);
enum uroce_ip_verdict na_input(struct uroce_ip_stack *s, const struct ip_rx *rx);

/* A drop for @reason: counts it and gives the verdict. */
#define IP_DROP(s, reason) ((s)->cnt.reason++, UROCE_IP_DROP)

/* ---- requests ----------------------------------------------------------------------- */

/* Sends an ARP request for @target (4 bytes): broadcast, or unicast to @dst_mac. */
void arp_request(struct uroce_ip_stack *s, const uint8_t *target, const uint8_t *dst_mac);
/* Sends a Neighbor Solicitation for @target: to its solicited-node group, or unicast to
 * @dst_mac and @target (a reachability probe, RFC 4861 7.3.3). */
void ns_send(struct uroce_ip_stack *s, const uint8_t *target, const uint8_t *dst_mac);

/* ---- neighbour cache (neigh.c) ------------------------------------------------------ */

bool neigh_init(struct uroce_ip_stack *s);
void neigh_fini(struct uroce_ip_stack *s);
struct ip_neigh *neigh_lookup(struct uroce_ip_stack *s, const uint8_t *gid);
/* A new STALE entry for @gid at @mac (evicting the least recently used entry without
 * waiters if the cache is full), or NULL when every entry has waiters. */
struct ip_neigh *neigh_create(struct uroce_ip_stack *s, const uint8_t *gid, const uint8_t *mac);
/* Records @mac (NULL: keep) and moves @n to @state (REACHABLE: confirmed now), as
 * RFC 4861 7.2.5 / Linux's neigh_update() do: an INCOMPLETE entry that gets a MAC
 * releases its waiters; a STALE update with an unchanged MAC keeps the current state. */
void neigh_update(struct uroce_ip_stack *s, struct ip_neigh *n, const uint8_t *mac,
		  enum neigh_state state, uint64_t now);
/* Delivers settled resolutions (at the end of input and process). */
void neigh_deliver(struct uroce_ip_stack *s);

#endif
