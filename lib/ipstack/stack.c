/* SPDX-License-Identifier: BSD-3-Clause */
/* The stack object: configuration, own addresses, counters, and writing the headers of
 * the frames we send. */
#include <errno.h>
#include <stdlib.h>

#include "ip_internal.h"

void uroce_ip_cfg_init(struct uroce_ip_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->reachable_ns = UROCE_IP_REACHABLE_NS_DEFAULT;
	cfg->retrans_ns = UROCE_IP_RETRANS_NS_DEFAULT;
	cfg->max_probes = UROCE_IP_MAX_PROBES_DEFAULT;
	cfg->neigh_max = UROCE_IP_NEIGH_MAX_DEFAULT;
	cfg->waiters_max = UROCE_IP_WAITERS_MAX_DEFAULT;
}

static bool cfg_valid(const struct uroce_ip_cfg *cfg)
{
	if (cfg->tx == NULL || mac_is_group(cfg->mac) || mac_is_zero(cfg->mac) ||
	    cfg->v4_count > UROCE_IP_MAX_V4 || cfg->v6_count > UROCE_IP_MAX_V6 ||
	    cfg->vlan_id >= 4095 || cfg->reachable_ns == 0 || cfg->retrans_ns == 0 ||
	    cfg->max_probes == 0 || cfg->max_probes > 255 || cfg->neigh_max == 0 ||
	    cfg->neigh_max > 65536 || cfg->waiters_max == 0 || cfg->waiters_max > (1u << 20))
		return false;
	for (unsigned i = 0; i < cfg->v4_count; i++)
		if (!ip4_is_unicast(cfg->v4[i]))
			return false;
	for (unsigned i = 0; i < cfg->v6_count; i++)
		if (!ip6_is_unicast(cfg->v6[i]))
			return false;
	return true;
}

struct uroce_ip_stack *uroce_ip_create(const struct uroce_ip_cfg *cfg)
{
	struct uroce_ip_stack *s;

	if (!cfg_valid(cfg)) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->cfg = *cfg;
	uroce_ip_link_local(cfg->mac, s->v6[0]);
	s->n_v6 = 1;
	for (unsigned i = 0; i < cfg->v6_count; i++)
		if (own_v6(s, cfg->v6[i]) < 0) /* the link-local one, or a repeat */
			memcpy(s->v6[s->n_v6++], cfg->v6[i], 16);
	if (!neigh_init(s)) {
		uroce_ip_destroy(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

void uroce_ip_destroy(struct uroce_ip_stack *s)
{
	if (s == NULL)
		return;
	neigh_fini(s);
	free(s);
}

/* ---- addresses ---------------------------------------------------------------------- */

bool ip6_is_unspecified(const uint8_t *a)
{
	static const uint8_t zero[16];

	return memcmp(a, zero, 16) == 0;
}

bool ip6_is_unicast(const uint8_t *a)
{
	static const uint8_t loopback[16] = {[15] = 1};

	return !ip6_is_multicast(a) && !ip6_is_unspecified(a) && !uroce_gid_is_ipv4(a) &&
	       memcmp(a, loopback, 16) != 0;
}

int own_v4(const struct uroce_ip_stack *s, const uint8_t *a)
{
	for (unsigned i = 0; i < s->cfg.v4_count; i++)
		if (memcmp(s->cfg.v4[i], a, 4) == 0)
			return (int)i;
	return -1;
}

int own_v6(const struct uroce_ip_stack *s, const uint8_t *a)
{
	for (unsigned i = 0; i < s->n_v6; i++)
		if (memcmp(s->v6[i], a, 16) == 0)
			return (int)i;
	return -1;
}

static unsigned common_prefix(const uint8_t *a, const uint8_t *b, unsigned len)
{
	unsigned bits = 0;

	for (unsigned i = 0; i < len; i++) {
		uint8_t x = a[i] ^ b[i];

		if (x)
			return bits + (unsigned)__builtin_clz(x) - 24;
		bits += 8;
	}
	return bits;
}

/* RFC 6724 rule 8 (longest matching prefix) is the only rule that tells our addresses
 * apart here: they are all on one interface, none deprecated, and without prefix lengths
 * the longest common prefix is the best guess at "the same subnet". */
const uint8_t *src_v4_for(const struct uroce_ip_stack *s, const uint8_t *target)
{
	const uint8_t *best = NULL;
	unsigned best_len = 0;

	for (unsigned i = 0; i < s->cfg.v4_count; i++) {
		unsigned l = common_prefix(s->cfg.v4[i], target, 4);

		if (best == NULL || l > best_len) {
			best = s->cfg.v4[i];
			best_len = l;
		}
	}
	return best;
}

const uint8_t *src_v6_for(const struct uroce_ip_stack *s, const uint8_t *target)
{
	const uint8_t *best = s->v6[0];
	unsigned best_len = common_prefix(s->v6[0], target, 16);

	for (unsigned i = 1; i < s->n_v6; i++) {
		unsigned l = common_prefix(s->v6[i], target, 16);

		if (l > best_len) {
			best = s->v6[i];
			best_len = l;
		}
	}
	return best;
}

void ip6_solicited_node(const uint8_t *a, uint8_t *group)
{
	static const uint8_t prefix[13] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff};

	memcpy(group, prefix, 13);
	memcpy(group + 13, a + 13, 3);
}

bool own_solicited_node(const struct uroce_ip_stack *s, const uint8_t *group)
{
	uint8_t g[16];

	for (unsigned i = 0; i < s->n_v6; i++) {
		ip6_solicited_node(s->v6[i], g);
		if (memcmp(g, group, 16) == 0)
			return true;
	}
	return false;
}

void uroce_ip_link_local(const uint8_t mac[6], uint8_t addr[16])
{
	memset(addr, 0, 16);
	addr[0] = 0xfe;
	addr[1] = 0x80;
	addr[8] = mac[0] ^ 0x02; /* the universal/local bit, inverted (RFC 4291 2.5.1) */
	addr[9] = mac[1];
	addr[10] = mac[2];
	addr[11] = 0xff;
	addr[12] = 0xfe;
	addr[13] = mac[3];
	addr[14] = mac[4];
	addr[15] = mac[5];
}

bool uroce_ip_is_local(const struct uroce_ip_stack *s, const uint8_t gid[16])
{
	if (uroce_gid_is_ipv4(gid))
		return own_v4(s, uroce_gid_ipv4(gid)) >= 0;
	return own_v6(s, gid) >= 0;
}

unsigned uroce_ip_addrs(const struct uroce_ip_stack *s, uint8_t (*gids)[16], unsigned max)
{
	unsigned n = 0;

	if (n < max)
		memcpy(gids[n], s->v6[0], 16);
	n++;
	for (unsigned i = 0; i < s->cfg.v4_count; i++, n++)
		if (n < max)
			uroce_gid_from_ipv4(gids[n], s->cfg.v4[i]);
	for (unsigned i = 1; i < s->n_v6; i++, n++)
		if (n < max)
			memcpy(gids[n], s->v6[i], 16);
	return n;
}

unsigned uroce_ip_mcast_macs(const struct uroce_ip_stack *s, uint8_t (*macs)[6], unsigned max)
{
	uint8_t all[UROCE_IP_MCAST_MAX][6] = {{0x33, 0x33, 0, 0, 0, 0x01}};
	unsigned n = 1;

	for (unsigned i = 0; i < s->n_v6; i++) {
		uint8_t m[6] = {0x33, 0x33, 0xff, s->v6[i][13], s->v6[i][14], s->v6[i][15]};
		unsigned j;

		for (j = 1; j < n && !mac_eq(all[j], m); j++)
			;
		if (j == n)
			memcpy(all[n++], m, 6);
	}
	for (unsigned i = 0; i < n && i < max; i++)
		memcpy(macs[i], all[i], 6);
	return n;
}

/* ---- counters ----------------------------------------------------------------------- */

const struct uroce_ip_counters *uroce_ip_counters(const struct uroce_ip_stack *s)
{
	return &s->cnt;
}

static const char *const counter_names[] = {
#define COUNTER_NAME(name) #name,
	UROCE_IP_COUNTERS(COUNTER_NAME)
#undef COUNTER_NAME
};

const char *uroce_ip_counter_name(unsigned i)
{
	return i < UROCE_IP_CNT__COUNT ? counter_names[i] : NULL;
}

uint64_t uroce_ip_counter_value(const struct uroce_ip_counters *c, unsigned i)
{
	switch (i) {
#define COUNTER_CASE(name)                                                                \
	case UROCE_IP_CNT_##name:                                                         \
		return c->name;
		UROCE_IP_COUNTERS(COUNTER_CASE)
#undef COUNTER_CASE
	default:
		return 0;
	}
}

/* ---- frames ------------------------------------------------------------------------- */

uint32_t eth_put(struct uroce_ip_stack *s, const uint8_t *dst, uint16_t ethertype)
{
	uint8_t *f = s->buf;
	uint32_t off = 12;

	memcpy(f, dst, ETH_ALEN);
	memcpy(f + ETH_ALEN, s->cfg.mac, ETH_ALEN);
	if (s->cfg.vlan_id) {
		/* PCP 0, DEI 0: ARP, ND and ping are best effort (IEEE 802.1Q 6.9.3). */
		wire_put16(f + off, 0x8100);
		wire_put16(f + off + 2, s->cfg.vlan_id);
		off += 4;
	}
	wire_put16(f + off, ethertype);
	return off + 2;
}

void ip4_put(struct uroce_ip_stack *s, uint8_t *ip, uint8_t tos, uint8_t proto,
	     const uint8_t *src, const uint8_t *dst, uint32_t payload_len)
{
	ip[0] = 0x45;
	ip[1] = tos;
	wire_put16(ip + 2, (uint16_t)(20 + payload_len));
	/* DF set, as Linux sends everything (PMTU discovery, RFC 1191); the ID still
	 * changes per datagram, which RFC 6864 4.1 lets atomic datagrams skip but costs
	 * nothing and keeps tools that look for repeats quiet. */
	wire_put16(ip + 4, s->ip_id++);
	wire_put16(ip + 6, 0x4000);
	ip[8] = 64; /* TTL: Linux's ip_default_ttl */
	ip[9] = proto;
	wire_put16(ip + 10, 0);
	memcpy(ip + 12, src, 4);
	memcpy(ip + 16, dst, 4);
	wire_put16(ip + 10, ip_csum(ip, 20));
}

void ip6_put(uint8_t *ip, uint8_t tclass, uint8_t next, uint8_t hop_limit,
	     const uint8_t *src, const uint8_t *dst, uint32_t payload_len)
{
	/* Version 6, traffic class, flow label 0 (RFC 6437 allows 0 for "unlabelled"). */
	wire_put32(ip, 6u << 28 | (uint32_t)tclass << 20);
	wire_put16(ip + 4, (uint16_t)payload_len);
	ip[6] = next;
	ip[7] = hop_limit;
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
}

uint16_t icmp6_csum(const uint8_t *ip6, const uint8_t *icmp, uint32_t len)
{
	return wire_l4_csum(ip6, 6, IP_PROTO_ICMPV6, icmp, len);
}

void ip_tx(struct uroce_ip_stack *s, uint32_t len)
{
	if (s->cfg.tx(s->cfg.ctx, s->buf, len) != 0)
		s->cnt.tx_errors++;
}

/* ---- RoCE multicast groups -------------------------------------------------------------- */

static int group_mac(const uint8_t gid[16], uint8_t mac[6])
{
	if (uroce_gid_is_ipv4(gid)) {
		if (!ip4_is_multicast(uroce_gid_ipv4(gid)))
			return -EINVAL;
		/* RFC 1112 6.4: 01:00:5e and the low 23 bits of the group */
		mac[0] = 0x01, mac[1] = 0x00, mac[2] = 0x5e;
		mac[3] = gid[13] & 0x7f, mac[4] = gid[14], mac[5] = gid[15];
		return 0;
	}
	if (gid[0] != 0xff)
		return -EINVAL;
	mac[0] = mac[1] = 0x33; /* RFC 2464 7 */
	memcpy(mac + 2, gid + 12, 4);
	return 0;
}

int uroce_ip_group_join(struct uroce_ip_stack *s, const uint8_t gid[16], uint8_t mac[6])
{
	int i, free_slot = -1;

	if (group_mac(gid, mac))
		return -EINVAL;
	for (i = 0; i < UROCE_IP_GROUPS_MAX; i++) {
		if (s->group[i].refs && memcmp(s->group[i].gid, gid, 16) == 0) {
			s->group[i].refs++;
			return 0;
		}
		if (!s->group[i].refs && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0)
		return -ENOBUFS;
	memcpy(s->group[free_slot].gid, gid, 16);
	s->group[free_slot].refs = 1;
	return 1;
}

int uroce_ip_group_leave(struct uroce_ip_stack *s, const uint8_t gid[16], uint8_t mac[6])
{
	int i;

	if (group_mac(gid, mac))
		return -EINVAL;
	for (i = 0; i < UROCE_IP_GROUPS_MAX; i++)
		if (s->group[i].refs && memcmp(s->group[i].gid, gid, 16) == 0)
			return --s->group[i].refs == 0 ? 1 : 0;
	return -EINVAL;
}

bool uroce_ip_group_joined(const struct uroce_ip_stack *s, const uint8_t gid[16])
{
	int i;

	for (i = 0; i < UROCE_IP_GROUPS_MAX; i++)
		if (s->group[i].refs && memcmp(s->group[i].gid, gid, 16) == 0)
			return true;
	return false;
}
