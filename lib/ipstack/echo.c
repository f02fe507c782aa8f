/* SPDX-License-Identifier: BSD-3-Clause */
/* ICMP echo (RFC 792) and ICMPv6 echo (RFC 4443 4.1, 4.2): what ping needs. The reply
 * goes back to the MAC the request came from, so answering needs no resolution. */
#include "ip_internal.h"

#define ICMP_ECHO_REPLY 0
#define ICMP_ECHO_REQUEST 8
#define ICMP6_ECHO_REPLY 129

enum uroce_ip_verdict echo4_input(struct uroce_ip_stack *s, const struct ip_rx *rx)
{
	const uint8_t *req = rx->l4;
	uint32_t off;
	uint8_t *icmp;

	if (rx->l4_len < ICMP_HLEN)
		return IP_DROP(s, truncated);
	if (ip_csum(req, rx->l4_len) != 0)
		return IP_DROP(s, bad_icmp_csum);
	if (req[0] != ICMP_ECHO_REQUEST)
		return IP_DROP(s, unhandled_icmp);
	if (req[1] != 0)
		return IP_DROP(s, bad_icmp);
	if ((s->cfg.vlan_id ? 18u : 14u) + rx->l3_len > UROCE_IP_FRAME_MAX)
		return IP_DROP(s, too_big);

	/* RFC 792: addresses swapped, type 0, identifier, sequence number and data as
	 * received. TOS is kept, as Linux's icmp_reply() keeps it; DF and TTL are ours. */
	off = eth_put(s, rx->eth_src, UROCE_ETHERTYPE_IPV4);
	icmp = s->buf + off + UROCE_IPV4_HLEN;
	memcpy(icmp, req, rx->l4_len);
	icmp[0] = ICMP_ECHO_REPLY;
	wire_put16(icmp + 2, 0);
	wire_put16(icmp + 2, ip_csum(icmp, rx->l4_len));
	ip4_put(s, s->buf + off, rx->l3[1], IP_PROTO_ICMP, rx->l3 + 16, rx->l3 + 12, rx->l4_len);
	ip_tx(s, off + rx->l3_len);
	s->cnt.echo_replies++;
	return UROCE_IP_CONSUMED;
}

enum uroce_ip_verdict echo6_input(struct uroce_ip_stack *s, const struct ip_rx *rx)
{
	const uint8_t *req = rx->l4;
	uint32_t off;
	uint8_t *ip, *icmp;

	/* The checksum was verified by ipv6_input(), which saw the type. */
	if (rx->l4_len < ICMP_HLEN)
		return IP_DROP(s, bad_icmp);
	if (req[1] != 0)
		return IP_DROP(s, bad_icmp);
	if (ip6_is_unspecified(rx->l3 + 8))
		return IP_DROP(s, bad_src);
	if ((s->cfg.vlan_id ? 18u : 14u) + rx->l3_len > UROCE_IP_FRAME_MAX)
		return IP_DROP(s, too_big);

	/* RFC 4443 4.2: the source is the unicast address the request was sent to; the
	 * traffic class is kept, as Linux's icmpv6_echo_reply() keeps it. */
	off = eth_put(s, rx->eth_src, UROCE_ETHERTYPE_IPV6);
	ip = s->buf + off;
	icmp = ip + UROCE_IPV6_HLEN;
	ip6_put(ip, (uint8_t)(wire_be16(rx->l3) >> 4), IP_PROTO_ICMPV6, IPV6_HOP_LIMIT_DEFAULT,
		rx->l3 + 24, rx->l3 + 8, rx->l4_len);
	memcpy(icmp, req, rx->l4_len);
	icmp[0] = ICMP6_ECHO_REPLY;
	wire_put16(icmp + 2, 0);
	wire_put16(icmp + 2, icmp6_csum(ip, icmp, rx->l4_len));
	ip_tx(s, off + rx->l3_len);
	s->cnt.echo6_replies++;
	return UROCE_IP_CONSUMED;
}
