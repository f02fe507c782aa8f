/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Checksums that a local sender left for offload (uroce_ipstack.h). A Linux sender hands
 * a TCP segment or UDP datagram to a device that offloads checksums with only the
 * pseudo-header's sum in the checksum field (CHECKSUM_PARTIAL); a virtio-net guest, a
 * container's veth, a bridge pass it on so, and an AF_PACKET reader gets it with
 * TP_STATUS_CSUMNOTREADY, a flag DPDK's af_packet PMD does not pass on. A real wire never
 * carries such a frame: the NIC fills the checksum in. Such a frame is recognised by its
 * field (the folded pseudo-header sum, not inverted) and by a sum that does not verify.
 */
#include "ip_internal.h"

#define TCP_CSUM_OFF 16
#define UDP_CSUM_OFF 6

/* The checksum field of an unfragmented IPv4 TCP segment or UDP datagram in @frame, with
 * what it sums over; NULL for anything else. */
static uint8_t *l4_csum_field(const uint8_t *frame, uint32_t len, const uint8_t **l3,
			      const uint8_t **l4, uint32_t *l4_len, uint8_t *proto)
{
	uint32_t off = 12, ihl, total;
	uint16_t type;

	if (len < UROCE_ETH_HLEN)
		return NULL;
	type = wire_be16(frame + off);
	if (type == UROCE_ETHERTYPE_VLAN) {
		if (len < UROCE_ETH_HLEN + UROCE_VLAN_HLEN)
			return NULL;
		off += UROCE_VLAN_HLEN;
		type = wire_be16(frame + off);
	}
	off += 2;
	if (type != UROCE_ETHERTYPE_IPV4 || len - off < UROCE_IPV4_HLEN)
		return NULL;
	*l3 = frame + off;
	ihl = (uint32_t)((*l3)[0] & 0x0f) * 4;
	total = wire_be16(*l3 + 2);
	/* Version 4, a whole datagram inside the frame, not a fragment (MF clear, offset 0):
	 * offload covers whole datagrams only. */
	if ((*l3)[0] >> 4 != 4 || ihl < UROCE_IPV4_HLEN || total < ihl || total > len - off ||
	    (wire_be16(*l3 + 6) & 0x3fff) != 0)
		return NULL;
	*proto = (*l3)[9];
	*l4 = *l3 + ihl;
	*l4_len = total - ihl;
	if (*proto == IP_PROTO_TCP && *l4_len >= TCP_CSUM_OFF + 2)
		return (uint8_t *)(uintptr_t)(*l4 + TCP_CSUM_OFF);
	/* A UDP checksum of 0 means none (RFC 768): nothing to complete. */
	if (*proto == IP_PROTO_UDP && *l4_len >= 8 && wire_be16(*l4 + UDP_CSUM_OFF) != 0)
		return (uint8_t *)(uintptr_t)(*l4 + UDP_CSUM_OFF);
	return NULL;
}

bool uroce_ip_csum_partial(const uint8_t *frame, uint32_t len)
{
	const uint8_t *l3, *l4;
	uint32_t l4_len, partial;
	uint8_t proto;
	const uint8_t *field = l4_csum_field(frame, len, &l3, &l4, &l4_len, &proto);

	if (!field)
		return false;
	/* The pseudo-header sum, folded and not inverted, is what Linux leaves there. */
	partial = (uint16_t)~wire_csum_fold(wire_pseudo_sum(l3, 4, proto, l4_len));
	return wire_be16(field) == partial && wire_l4_csum(l3, 4, proto, l4, l4_len) != 0;
}

bool uroce_ip_csum_complete(uint8_t *frame, uint32_t len)
{
	const uint8_t *l3, *l4;
	uint32_t l4_len;
	uint8_t proto;
	uint8_t *field;
	uint16_t c;

	if (!uroce_ip_csum_partial(frame, len))
		return false;
	field = l4_csum_field(frame, len, &l3, &l4, &l4_len, &proto);
	wire_put16(field, 0);
	c = wire_l4_csum(l3, 4, proto, l4, l4_len);
	/* RFC 768: a computed zero goes out as all ones (0 would mean no checksum); for TCP
	 * 0 and 0xffff are the same value in one's complement. */
	wire_put16(field, proto == IP_PROTO_UDP && c == 0 ? 0xffff : c);
	return true;
}
