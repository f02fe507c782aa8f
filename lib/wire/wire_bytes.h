/* SPDX-License-Identifier: BSD-3-Clause */
/* Private to lib/wire: big-endian loads and stores, and the Internet checksum. */
#ifndef UROCE_WIRE_BYTES_H
#define UROCE_WIRE_BYTES_H

#include <stddef.h>
#include <stdint.h>

/* Byte-wise on purpose: headers sit at any alignment inside frames (a VLAN tag shifts
 * everything by 4), and compilers turn these into a load plus bswap. */
static inline uint16_t wire_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}
static inline uint32_t wire_be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}
static inline uint32_t wire_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t wire_be64(const uint8_t *p)
{
	return (uint64_t)wire_be32(p) << 32 | wire_be32(p + 4);
}
static inline void wire_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static inline void wire_put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}
static inline void wire_put32(uint8_t *p, uint32_t v)
{
	wire_put16(p, (uint16_t)(v >> 16));
	wire_put16(p + 2, (uint16_t)v);
}
static inline void wire_put64(uint8_t *p, uint64_t v)
{
	wire_put32(p, (uint32_t)(v >> 32));
	wire_put32(p + 4, (uint32_t)v);
}

/* One's-complement sum of 16-bit big-endian words (RFC 1071), not yet folded or inverted,
 * so that pseudo-header and data sums can be added. */
static inline uint32_t wire_csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += wire_be16(p + i);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	/* Fold as we go so that a long datagram cannot overflow 32 bits. */
	return (sum & 0xffff) + (sum >> 16);
}

static inline uint16_t wire_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* One's-complement sum of the IPv4/IPv6 pseudo-header (RFC 768, 793, 8200 8.1) of
 * @l4_len bytes of protocol @proto, not yet folded or inverted. */
uint32_t wire_pseudo_sum(const uint8_t *l3, uint8_t ip_version, uint8_t proto, uint32_t l4_len);

/* TCP or UDP checksum over the pseudo-header and the @l4_len bytes at @l4; the segment's
 * own checksum field is summed as found, so a correct packet sums to zero and a caller
 * computing one clears the field first. */
static inline uint16_t wire_l4_csum(const uint8_t *l3, uint8_t ip_version, uint8_t proto,
				    const uint8_t *l4, uint32_t l4_len)
{
	return wire_csum_fold(wire_csum_add(wire_pseudo_sum(l3, ip_version, proto, l4_len), l4,
					    l4_len));
}

/* The UDP checksum (IP protocol 17) of the datagram at @udp. */
static inline uint16_t wire_udp_csum(const uint8_t *l3, uint8_t ip_version, const uint8_t *udp,
				     uint32_t udp_len)
{
	return wire_l4_csum(l3, ip_version, 17, udp, udp_len);
}

#endif
