/* SPDX-License-Identifier: BSD-3-Clause */
/* IPv6 Neighbor Discovery, the address-resolution part (RFC 4861 4.3, 4.4, 7): answer
 * Neighbor Solicitations for our addresses, learn from solicitations and advertisements,
 * send our solicitations. No router discovery, no redirects: every peer is on-link. */
#include "ip_internal.h"

#define ND_NS 135
#define ND_NA 136
#define ND_OPT_SLLA 1 /* source link-layer address */
#define ND_OPT_TLLA 2 /* target link-layer address */
#define NA_FLAG_ROUTER 0x80
#define NA_FLAG_SOLICITED 0x40
#define NA_FLAG_OVERRIDE 0x20

/* RFC 4861 7.1.1 and 7.1.2, the checks common to NS and NA: hop limit 255 (so the message
 * cannot have come through a router), code 0, long enough, a unicast target (not
 * multicast, 7.1.1; nor ::, ::1 or IPv4-mapped, which are nobody's), and options
 * whose lengths are non-zero and fit. Returns the link-layer address option of @want_opt
 * through @lla (NULL if absent; only the Ethernet form, length 1, counts, RFC 2464 8). */
static bool nd_valid(const struct ip_rx *rx, uint8_t want_opt, const uint8_t **lla)
{
	const uint8_t *m = rx->l4;
	uint32_t off;

	*lla = NULL;
	if (rx->l3[7] != ND_HOP_LIMIT || m[1] != 0 || rx->l4_len < ND_LEN ||
	    !ip6_is_unicast(m + 8))
		return false;
	for (off = ND_LEN; off < rx->l4_len;) {
		uint32_t olen;

		if (rx->l4_len - off < 2 || m[off + 1] == 0)
			return false;
		olen = (uint32_t)m[off + 1] * 8;
		if (olen > rx->l4_len - off)
			return false;
		if (m[off] == want_opt && olen == 8 && *lla == NULL)
			*lla = m + off + 2;
		off += olen;
	}
	return true;
}

void ns_send(struct uroce_ip_stack *s, const uint8_t *target, const uint8_t *dst_mac)
{
	uint8_t dst[16], mac[ETH_ALEN];
	uint32_t off;
	uint8_t *ip, *m;

	/* Resolution goes to the target's solicited-node group (RFC 4861 7.2.2), whose MAC
	 * is 33:33 and the group's last 32 bits (RFC 2464 7); a reachability probe goes to
	 * the cached MAC and the target itself (7.3.3). */
	if (dst_mac) {
		memcpy(dst, target, 16);
		memcpy(mac, dst_mac, ETH_ALEN);
	} else {
		ip6_solicited_node(target, dst);
		mac[0] = 0x33;
		mac[1] = 0x33;
		memcpy(mac + 2, dst + 12, 4);
	}
	off = eth_put(s, mac, UROCE_ETHERTYPE_IPV6);
	ip = s->buf + off;
	m = ip + UROCE_IPV6_HLEN;
	/* Message (4.3): type, code, checksum, 4 reserved bytes, target; then our MAC as
	 * the source link-layer address option, which 7.2.2 says SHOULD be there. */
	memset(m, 0, ND_LEN + 8);
	m[0] = ND_NS;
	memcpy(m + 8, target, 16);
	m[ND_LEN] = ND_OPT_SLLA;
	m[ND_LEN + 1] = 1;
	memcpy(m + ND_LEN + 2, s->cfg.mac, ETH_ALEN);
	ip6_put(ip, 0, IP_PROTO_ICMPV6, ND_HOP_LIMIT, src_v6_for(s, target), dst, ND_LEN + 8);
	wire_put16(m + 2, icmp6_csum(ip, m, ND_LEN + 8));
	ip_tx(s, off + UROCE_IPV6_HLEN + ND_LEN + 8);
	s->cnt.ns_sent++;
}

/* Advertises @target (ours) to @dst through @dst_mac (RFC 4861 4.4, 7.2.4). */
static void na_send(struct uroce_ip_stack *s, const uint8_t *target, const uint8_t *dst,
		    const uint8_t *dst_mac, bool solicited)
{
	uint32_t off = eth_put(s, dst_mac, UROCE_ETHERTYPE_IPV6);
	uint8_t *ip = s->buf + off, *m = ip + UROCE_IPV6_HLEN;

	memset(m, 0, ND_LEN + 8);
	m[0] = ND_NA;
	/* Not a router; Override set since our addresses are not anycast (7.2.4). */
	m[4] = (uint8_t)((solicited ? NA_FLAG_SOLICITED : 0) | NA_FLAG_OVERRIDE);
	memcpy(m + 8, target, 16);
	m[ND_LEN] = ND_OPT_TLLA;
	m[ND_LEN + 1] = 1;
	memcpy(m + ND_LEN + 2, s->cfg.mac, ETH_ALEN);
	ip6_put(ip, 0, IP_PROTO_ICMPV6, ND_HOP_LIMIT, target, dst, ND_LEN + 8);
	wire_put16(m + 2, icmp6_csum(ip, m, ND_LEN + 8));
	ip_tx(s, off + UROCE_IPV6_HLEN + ND_LEN + 8);
	s->cnt.na_sent++;
}

enum uroce_ip_verdict ns_input(struct uroce_ip_stack *s, const struct ip_rx *rx)
{
	static const uint8_t all_nodes[16] = {0xff, 0x02, [15] = 0x01};
	static const uint8_t all_nodes_mac[ETH_ALEN] = {0x33, 0x33, 0, 0, 0, 0x01};
	const uint8_t *src = rx->l3 + 8, *dst = rx->l3 + 24, *target, *slla;
	bool dad = ip6_is_unspecified(src);
	uint8_t group[16];

	if (!nd_valid(rx, ND_OPT_SLLA, &slla))
		return IP_DROP(s, bad_nd);
	target = rx->l4 + 8;
	/* 7.1.1: a solicitation from the unspecified address (Duplicate Address Detection)
	 * goes to a solicited-node group and carries no link-layer address. */
	ip6_solicited_node(target, group);
	if (dad && (memcmp(dst, group, 16) != 0 || slla != NULL))
		return IP_DROP(s, bad_nd);
	if (slla != NULL && (mac_is_group(slla) || mac_is_zero(slla)))
		return IP_DROP(s, bad_nd);
	if (own_v6(s, target) < 0)
		return IP_DROP(s, not_for_us);

	/* 7.2.3: the sender's link-layer address creates or refreshes its entry (STALE:
	 * that it sent, not that it hears us). */
	if (!dad && slla != NULL) {
		struct ip_neigh *n = neigh_lookup(s, src);

		if (n != NULL)
			neigh_update(s, n, slla, NEIGH_STALE, rx->now);
		else
			neigh_create(s, src, slla);
	}
	/* 7.2.4: to the all-nodes group for DAD (which defends our address), else to the
	 * solicitor, at the link-layer address it gave or the frame came from. */
	if (dad)
		na_send(s, target, all_nodes, all_nodes_mac, false);
	else
		na_send(s, target, src, slla ? slla : rx->eth_src, true);
	return UROCE_IP_CONSUMED;
}

enum uroce_ip_verdict na_input(struct uroce_ip_stack *s, const struct ip_rx *rx)
{
	const uint8_t *target, *tlla;
	bool solicited, override;
	struct ip_neigh *n;

	if (!nd_valid(rx, ND_OPT_TLLA, &tlla))
		return IP_DROP(s, bad_nd);
	target = rx->l4 + 8;
	solicited = rx->l4[4] & NA_FLAG_SOLICITED;
	override = rx->l4[4] & NA_FLAG_OVERRIDE;
	/* 7.1.2: an advertisement to a group is not solicited; and it has a source. */
	if ((ip6_is_multicast(rx->l3 + 24) && solicited) || ip6_is_unspecified(rx->l3 + 8))
		return IP_DROP(s, bad_nd);
	if (tlla != NULL && (mac_is_group(tlla) || mac_is_zero(tlla)))
		return IP_DROP(s, bad_nd);
	if (own_v6(s, target) >= 0) {
		/* Another node advertises our address (RFC 4862 5.4.4). */
		s->cnt.addr_conflict++;
		return UROCE_IP_CONSUMED;
	}
	n = neigh_lookup(s, target);
	/* 7.2.5: no entry, nothing to do: advertisements do not create entries. */
	if (n == NULL)
		return IP_DROP(s, not_for_us);
	if (n->state == NEIGH_INCOMPLETE) {
		if (tlla == NULL)
			return IP_DROP(s, bad_nd); /* nothing to resolve it with */
		neigh_update(s, n, tlla, solicited ? NEIGH_REACHABLE : NEIGH_STALE, rx->now);
		return UROCE_IP_CONSUMED;
	}
	if (!override && tlla != NULL && !mac_eq(tlla, n->mac)) {
		/* 7.2.5: a different address without Override does not replace ours, but it
		 * makes a REACHABLE entry doubtful. */
		if (n->state == NEIGH_REACHABLE)
			neigh_update(s, n, NULL, NEIGH_STALE, rx->now);
		return UROCE_IP_CONSUMED;
	}
	if (solicited)
		neigh_update(s, n, tlla, NEIGH_REACHABLE, rx->now);
	else if (tlla != NULL && !mac_eq(tlla, n->mac))
		neigh_update(s, n, tlla, NEIGH_STALE, rx->now);
	return UROCE_IP_CONSUMED;
}
