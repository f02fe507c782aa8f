/* SPDX-License-Identifier: BSD-3-Clause */
/* Receive: Ethernet (one optional 802.1Q tag), then IPv4 or IPv6, each header checked
 * before anything behind it is looked at; ARP, ICMP echo and ND go to their files, UDP
 * 4791 to the caller. */
#include "ip_internal.h"

static const uint8_t mac_broadcast[ETH_ALEN] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

enum l2_dst {
	L2_UNICAST,   /* our MAC */
	L2_BROADCAST,
	L2_MCAST6,    /* 33:33:xx:xx:xx:xx, one of the groups we joined */
	L2_MCAST4,    /* 01:00:5e:xx:xx:xx, a RoCE group we joined (uroce_ip_group_join) */
};

/* An IPv4 destination that is a RoCE group we joined, through its own MAC. */
static bool v4_group_ok(const struct uroce_ip_stack *s, const struct ip_rx *rx,
			const uint8_t *dst)
{
	uint8_t gid[UROCE_GID_LEN];

	uroce_gid_from_ipv4(gid, dst);
	return (dst[0] & 0xf0) == 0xe0 && rx->eth_dst[3] == (dst[1] & 0x7f) &&
	       rx->eth_dst[4] == dst[2] && rx->eth_dst[5] == dst[3] &&
	       uroce_ip_group_joined(s, gid);
}

/* IPv4 (RFC 791, RFC 1122 3.2.1). */
static enum uroce_ip_verdict ipv4_input(struct uroce_ip_stack *s, struct ip_rx *rx,
					const uint8_t *p, uint32_t avail, enum l2_dst l2)
{
	uint32_t ihl, total;

	if (avail < UROCE_IPV4_HLEN)
		return IP_DROP(s, truncated);
	if (p[0] >> 4 != 4)
		return IP_DROP(s, bad_ipv4);
	ihl = (uint32_t)(p[0] & 0xf) * 4;
	total = wire_be16(p + 2);
	if (ihl < UROCE_IPV4_HLEN || total < ihl)
		return IP_DROP(s, bad_ipv4);
	if (total > avail)
		return IP_DROP(s, truncated);
	if (ip_csum(p, ihl) != 0)
		return IP_DROP(s, bad_ipv4_csum);
	if (ihl > UROCE_IPV4_HLEN)
		return IP_DROP(s, ip_options);
	if (wire_be16(p + 6) & 0x3fff) /* MF or a fragment offset */
		return IP_DROP(s, ip_fragment);
	/* Ours only, through our own MAC; or a RoCE group we joined, through its MAC
	 * (UDP to 4791 only, checked below). No broadcast. */
	if (l2 == L2_MCAST4 ? !v4_group_ok(s, rx, p + 16)
			    : (l2 != L2_UNICAST || own_v4(s, p + 16) < 0))
		return IP_DROP(s, not_for_us);
	if (!ip4_is_unicast(p + 12) || own_v4(s, p + 12) >= 0)
		return IP_DROP(s, bad_src);

	rx->l3 = p;
	rx->l3_len = total;
	rx->l4 = p + UROCE_IPV4_HLEN;
	rx->l4_len = total - UROCE_IPV4_HLEN;
	if (l2 == L2_MCAST4 && p[9] != IP_PROTO_UDP)
		return IP_DROP(s, not_for_us);
	switch (p[9]) {
	case IP_PROTO_UDP:
		if (rx->l4_len < UROCE_UDP_HLEN)
			return IP_DROP(s, truncated);
		if (wire_be16(rx->l4 + 4) < UROCE_UDP_HLEN || wire_be16(rx->l4 + 4) > rx->l4_len)
			return IP_DROP(s, bad_udp);
		if (wire_be16(rx->l4 + 2) != UROCE_UDP_PORT_ROCEV2)
			return IP_DROP(s, unhandled_proto);
		return UROCE_IP_ROCE;
	case IP_PROTO_ICMP:
		return echo4_input(s, rx);
	default:
		return IP_DROP(s, unhandled_proto);
	}
}

/* IPv6 (RFC 8200). */
static enum uroce_ip_verdict ipv6_input(struct uroce_ip_stack *s, struct ip_rx *rx,
					const uint8_t *p, uint32_t avail, enum l2_dst l2)
{
	const uint8_t *dst = p + 24;
	uint32_t plen;
	bool mcast;

	if (avail < UROCE_IPV6_HLEN)
		return IP_DROP(s, truncated);
	if (p[0] >> 4 != 6)
		return IP_DROP(s, bad_ipv6);
	plen = wire_be16(p + 4);
	if (plen > avail - UROCE_IPV6_HLEN)
		return IP_DROP(s, truncated);
	/* The destination: one of our unicast addresses through our MAC, or a group we
	 * joined through its own MAC (RFC 2464 7: 33:33 and the group's last 32 bits). */
	mcast = ip6_is_multicast(dst);
	if (mcast) {
		static const uint8_t all_nodes[16] = {0xff, 0x02, [15] = 0x01};

		if (l2 != L2_MCAST6 || memcmp(rx->eth_dst + 2, dst + 12, 4) != 0 ||
		    (memcmp(dst, all_nodes, 16) != 0 && !own_solicited_node(s, dst) &&
		     !uroce_ip_group_joined(s, dst)))
			return IP_DROP(s, not_for_us);
	} else if (l2 != L2_UNICAST || own_v6(s, dst) < 0) {
		return IP_DROP(s, not_for_us);
	}
	/* The unspecified source is legal in DAD's Neighbor Solicitation only (nd.c); an
	 * IPv4-mapped one would alias an IPv4 neighbour in the cache. */
	if ((!ip6_is_unicast(p + 8) && !ip6_is_unspecified(p + 8)) || own_v6(s, p + 8) >= 0)
		return IP_DROP(s, bad_src);

	/* The next header: what we speak, then why not. */
	switch (p[6]) {
	case IP_PROTO_UDP:
	case IP_PROTO_ICMPV6:
		break;
	case 44: /* fragment header */
		return IP_DROP(s, ip_fragment);
	case 0:   /* hop-by-hop options */
	case 43:  /* routing */
	case 50:  /* ESP */
	case 51:  /* AH */
	case 60:  /* destination options */
	case 135: /* mobility */
	case 139: /* HIP */
	case 140: /* shim6 */
		return IP_DROP(s, ip_options);
	default:
		return IP_DROP(s, unhandled_proto);
	}

	rx->l3 = p;
	rx->l3_len = UROCE_IPV6_HLEN + plen;
	rx->l4 = p + UROCE_IPV6_HLEN;
	rx->l4_len = plen;
	if (p[6] == IP_PROTO_UDP) {
		if (mcast && !uroce_ip_group_joined(s, dst))
			return IP_DROP(s, not_for_us);
		if (plen < UROCE_UDP_HLEN)
			return IP_DROP(s, truncated);
		if (wire_be16(rx->l4 + 4) != plen) /* no jumbograms (RFC 2675) here */
			return IP_DROP(s, bad_udp);
		if (wire_be16(rx->l4 + 2) != UROCE_UDP_PORT_ROCEV2)
			return IP_DROP(s, unhandled_proto);
		if (ip6_is_unspecified(p + 8))
			return IP_DROP(s, bad_src);
		return UROCE_IP_ROCE;
	}

	/* ICMPv6 (RFC 4443 2.1): type, code, checksum, then the type's body. */
	if (plen < 4)
		return IP_DROP(s, truncated);
	if (icmp6_csum(p, rx->l4, plen) != 0)
		return IP_DROP(s, bad_icmp_csum);
	switch (rx->l4[0]) {
	case 128: /* echo request */
		if (mcast)
			return IP_DROP(s, not_for_us);
		return echo6_input(s, rx);
	case 135:
		return ns_input(s, rx);
	case 136:
		return na_input(s, rx);
	default:
		return IP_DROP(s, unhandled_icmp);
	}
}

/* @p l3_off: where the IP header is, for a UROCE_IP_ROCE verdict. */
static enum uroce_ip_verdict classify(struct uroce_ip_stack *s, const uint8_t *f, uint32_t len,
				      uint64_t now, uint32_t *l3_off)
{
	struct ip_rx rx = {.eth_dst = f, .eth_src = f + ETH_ALEN, .now = now};
	uint32_t off = 12;
	uint16_t type, vid = 0;
	enum l2_dst l2;

	if (len < UROCE_ETH_HLEN)
		return IP_DROP(s, truncated);
	type = wire_be16(f + off);
	if (type == UROCE_ETHERTYPE_VLAN) {
		if (len < UROCE_ETH_HLEN + UROCE_VLAN_HLEN)
			return IP_DROP(s, truncated);
		vid = wire_be16(f + off + 2) & 0xfff;
		off += UROCE_VLAN_HLEN;
		type = wire_be16(f + off);
		/* One tag only: a stacked tag (QinQ) is not a protocol we speak. */
		if (type == UROCE_ETHERTYPE_VLAN || type == ETHERTYPE_QINQ)
			return IP_DROP(s, unknown_ethertype);
	}
	off += 2;
	*l3_off = off;
	if (vid != s->cfg.vlan_id)
		return IP_DROP(s, wrong_vlan);

	if (mac_eq(rx.eth_dst, s->cfg.mac)) {
		l2 = L2_UNICAST;
	} else if (mac_eq(rx.eth_dst, mac_broadcast)) {
		l2 = L2_BROADCAST;
	} else if (rx.eth_dst[0] == 0x33 && rx.eth_dst[1] == 0x33) {
		/* Which groups are ours is decided by the IPv6 destination (ipv6_input). */
		l2 = L2_MCAST6;
	} else if (rx.eth_dst[0] == 0x01 && rx.eth_dst[1] == 0x00 && rx.eth_dst[2] == 0x5e &&
		   !(rx.eth_dst[3] & 0x80)) {
		l2 = L2_MCAST4; /* the IPv4 destination decides (ipv4_input) */
	} else {
		return IP_DROP(s, not_for_us);
	}
	/* A group source address is never valid (IEEE 802 8.2); our own is our echo. */
	if (mac_is_group(rx.eth_src) || mac_eq(rx.eth_src, s->cfg.mac))
		return IP_DROP(s, bad_src);

	switch (type) {
	case ETHERTYPE_ARP:
		if (l2 == L2_MCAST6 || l2 == L2_MCAST4)
			return IP_DROP(s, not_for_us);
		rx.l3 = f + off;
		rx.l3_len = len - off;
		return arp_input(s, &rx);
	case UROCE_ETHERTYPE_IPV4:
		return ipv4_input(s, &rx, f + off, len - off, l2);
	case UROCE_ETHERTYPE_IPV6:
		return ipv6_input(s, &rx, f + off, len - off, l2);
	default:
		return IP_DROP(s, unknown_ethertype);
	}
}

enum uroce_ip_verdict uroce_ip_input_roce(struct uroce_ip_stack *s, const uint8_t *frame,
					  uint32_t len, uint64_t now_ns, struct uroce_wire_pkt *pkt,
					  enum uroce_wire_err *err)
{
	uint32_t l3_off = 0;
	enum uroce_ip_verdict v = classify(s, frame, len, now_ns, &l3_off);

	s->cnt.rx_frames++;
	if (v == UROCE_IP_ROCE) {
		s->cnt.rx_roce++;
		/* The rest of the parse, from what classify() checked on: the transport's. */
		if (pkt)
			*err = uroce_wire_parse_checked_ip(frame, l3_off, pkt);
	}
	else if (v == UROCE_IP_CONSUMED)
		s->cnt.rx_consumed++;
	else
		s->cnt.rx_dropped++;
	neigh_deliver(s);
	return v;
}

enum uroce_ip_verdict uroce_ip_input(struct uroce_ip_stack *s, const uint8_t *frame,
				     uint32_t len, uint64_t now_ns)
{
	return uroce_ip_input_roce(s, frame, len, now_ns, NULL, NULL);
}
