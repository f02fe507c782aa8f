/* SPDX-License-Identifier: BSD-3-Clause */
/* Any Ethernet frame: its layers, and the IPv4 header and TCP/UDP checksums a NIC's
 * offload computes and checks (the raw packet QPs of lib/transport). */
#include "uroce_wire.h"
#include "wire_bytes.h"

#define IPPROTO_TCP_ 6
#define IPPROTO_UDP_ 17

void uroce_wire_layers(const uint8_t *frame, uint32_t len, struct uroce_wire_layers *out)
{
	uint32_t off = UROCE_ETH_HLEN, ip_len, l4_min;

	memset(out, 0, sizeof(*out));
	if (len < UROCE_ETH_HLEN)
		return;
	out->ether_type = wire_be16(frame + 12);
	if (out->ether_type == UROCE_ETHERTYPE_VLAN) {
		if (len < UROCE_ETH_HLEN + UROCE_VLAN_HLEN) {
			out->ether_type = 0;
			return;
		}
		out->vlan_tci = wire_be16(frame + 14);
		out->ether_type = wire_be16(frame + 16);
		off += UROCE_VLAN_HLEN;
	}
	out->l3_off = (uint16_t)off;
	if (out->ether_type == UROCE_ETHERTYPE_IPV4 && len >= off + UROCE_IPV4_HLEN &&
	    frame[off] >> 4 == 4) {
		const uint8_t *ip = frame + off;
		uint32_t ihl = (ip[0] & 0xfu) * 4u;

		ip_len = wire_be16(ip + 2);
		if (ihl < UROCE_IPV4_HLEN || ip_len < ihl || off + ihl > len)
			return;
		if (off + ip_len > len) {
			out->truncated = true;
			ip_len = len - off;
		}
		out->ip_version = 4;
		out->tos = ip[1];
		out->ttl = ip[8];
		out->proto = ip[9];
		out->fragment = (wire_be16(ip + 6) & 0x3fffu) != 0;
		/* A later fragment has no TCP/UDP header; the first has one. */
		if (wire_be16(ip + 6) & 0x1fffu)
			return;
		out->l4_off = (uint16_t)(off + ihl);
		out->l4_len = ip_len - ihl;
	} else if (out->ether_type == UROCE_ETHERTYPE_IPV6 && len >= off + UROCE_IPV6_HLEN &&
		   frame[off] >> 4 == 6) {
		const uint8_t *ip = frame + off;

		ip_len = UROCE_IPV6_HLEN + wire_be16(ip + 4);
		if (off + ip_len > len) {
			out->truncated = true;
			ip_len = len - off;
		}
		out->ip_version = 6;
		out->tos = (uint8_t)(wire_be16(ip) >> 4);
		out->flow_label = wire_be32(ip) & 0xfffffu;
		out->proto = ip[6];
		out->ttl = ip[7];
		out->l4_off = (uint16_t)(off + UROCE_IPV6_HLEN);
		out->l4_len = ip_len - UROCE_IPV6_HLEN;
	} else {
		return;
	}
	l4_min = out->proto == IPPROTO_TCP_ ? 20u : out->proto == IPPROTO_UDP_ ? 8u : 0u;
	out->l4 = l4_min && out->l4_len >= l4_min;
}

/* Where the TCP or UDP checksum field is, in a whole segment or datagram: NULL if none. */
static uint8_t *l4_csum_field(uint8_t *frame, const struct uroce_wire_layers *l)
{
	if (!l->l4 || l->fragment || l->truncated)
		return NULL;
	return frame + l->l4_off + (l->proto == IPPROTO_TCP_ ? 16 : 6);
}

void uroce_wire_csum_fill(uint8_t *frame, uint32_t len)
{
	struct uroce_wire_layers l;
	uint8_t *field;
	uint16_t c;

	uroce_wire_layers(frame, len, &l);
	if (l.ip_version == 4 && !l.truncated) {
		uint8_t *ip = frame + l.l3_off;
		uint32_t ihl = (ip[0] & 0xfu) * 4u;

		wire_put16(ip + 10, 0);
		wire_put16(ip + 10, wire_csum_fold(wire_csum_add(0, ip, ihl)));
	}
	field = l4_csum_field(frame, &l);
	if (field == NULL)
		return;
	wire_put16(field, 0);
	c = wire_l4_csum(frame + l.l3_off, l.ip_version, l.proto, frame + l.l4_off, l.l4_len);
	/* RFC 768: a computed UDP checksum of 0 goes out as all ones (0 means "none"). */
	if (c == 0 && l.proto == IPPROTO_UDP_)
		c = 0xffff;
	wire_put16(field, c);
}

bool uroce_wire_csum_ok(const uint8_t *frame, uint32_t len)
{
	struct uroce_wire_layers l;
	const uint8_t *ip;

	uroce_wire_layers(frame, len, &l);
	if (l.ip_version == 0 || !l.l4 || l.fragment || l.truncated)
		return false;
	ip = frame + l.l3_off;
	if (l.ip_version == 4 && wire_csum_fold(wire_csum_add(0, ip, (ip[0] & 0xfu) * 4u)) != 0)
		return false;
	/* UDP over IPv4 may go without a checksum (0); over IPv6 it may not (RFC 8200 8.1). */
	if (l.proto == IPPROTO_UDP_ && l.ip_version == 4 && wire_be16(frame + l.l4_off + 6) == 0)
		return true;
	return wire_l4_csum(ip, l.ip_version, l.proto, frame + l.l4_off, l.l4_len) == 0;
}
