/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/ipstack, checksums left for offload (uroce_ip_csum_partial/complete): frames as a
 * Linux sender leaves them (the pseudo-header's sum in the checksum field) are completed,
 * anything else is left alone; results checked with the harness's own checksum code. */
#include <stdlib.h>

#include <criterion/criterion.h>

#include "ipt.h"

#define TCP 6
#define UDP 17

/* Pseudo-header sum of an IPv4 datagram, folded, not inverted: what Linux leaves in the
 * checksum field of a CHECKSUM_PARTIAL segment. */
static uint16_t partial_of(const uint8_t *ip)
{
	uint32_t l4_len = (uint32_t)(ip[2] << 8 | ip[3]) - 20;
	uint8_t ph[12];

	memcpy(ph, ip + 12, 8);
	ph[8] = 0;
	ph[9] = ip[9];
	ph[10] = (uint8_t)(l4_len >> 8);
	ph[11] = (uint8_t)l4_len;
	return (uint16_t)~ref_csum(ph, 12, 0);
}

/* The full checksum of the segment, field included: 0 when it verifies. */
static uint16_t verify(const uint8_t *ip)
{
	uint32_t l4_len = (uint32_t)(ip[2] << 8 | ip[3]) - 20;

	return ref_csum(ip + 20, l4_len, partial_of(ip));
}

/* A TCP segment (20-byte header, @dlen data bytes) or UDP datagram from the peer to us,
 * its checksum field as Linux leaves it for offload. Returns the frame length; *ip is
 * the IP header. */
static uint32_t partial_frame(uint8_t *f, uint16_t vlan, uint8_t proto, uint32_t dlen,
			      uint8_t **ip)
{
	uint8_t l4[20 + 1500] = {0};
	uint32_t hlen = proto == TCP ? 20 : 8, len, csum_off = proto == TCP ? 16 : 6;

	l4[0] = 0xc1;
	l4[1] = 0x23; /* source port */
	l4[2] = 0x13;
	l4[3] = 0x89; /* destination port 5001 */
	if (proto == TCP) {
		l4[4] = 0x11; /* sequence number */
		l4[12] = 0x50; /* data offset 5 */
		l4[13] = 0x18; /* PSH, ACK */
		l4[14] = 0xff;
	} else {
		l4[4] = (uint8_t)((8 + dlen) >> 8);
		l4[5] = (uint8_t)(8 + dlen);
	}
	for (uint32_t i = 0; i < dlen; i++)
		l4[hlen + i] = (uint8_t)(i * 7 + 3);
	len = fb_ipv4(f, vlan, OUR_MAC, PEER_V4, OUR_V4, proto, l4, hlen + dlen);
	*ip = f + len - (20 + hlen + dlen);
	(*ip)[20 + csum_off] = (uint8_t)(partial_of(*ip) >> 8);
	(*ip)[20 + csum_off + 1] = (uint8_t)partial_of(*ip);
	return len;
}

TestSuite(csum);

Test(csum, tcp_and_udp_left_for_offload_are_completed)
{
	static const uint32_t sizes[] = {0, 1, 37, 1000, 1460};
	uint8_t f[1600], *ip;

	for (int p = 0; p < 2; p++) {
		for (int v = 0; v < 2; v++) {
			for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
				uint8_t proto = p ? UDP : TCP;
				uint32_t len = partial_frame(f, v ? 7 : 0, proto, sizes[i], &ip);

				cr_assert(verify(ip) != 0);
				cr_assert(uroce_ip_csum_partial(f, len), "proto %u vlan %d %u B",
					  proto, v, sizes[i]);
				cr_assert(uroce_ip_csum_complete(f, len));
				cr_assert_eq(verify(ip), 0, "proto %u vlan %d %u B", proto, v,
					     sizes[i]);
				/* Done once: now it verifies and is left alone. */
				cr_assert_not(uroce_ip_csum_partial(f, len));
				cr_assert_not(uroce_ip_csum_complete(f, len));
				cr_assert_eq(verify(ip), 0);
			}
		}
	}
}

Test(csum, other_frames_are_left_alone)
{
	uint8_t f[1600], want[1600], *ip;
	uint32_t len;

	/* A UDP checksum of 0: none (RFC 768). */
	len = partial_frame(f, 0, UDP, 100, &ip);
	ip[26] = ip[27] = 0;
	memcpy(want, f, len);
	cr_assert_not(uroce_ip_csum_complete(f, len));
	cr_assert_arr_eq(f, want, len);

	/* A checksum corrupted otherwise: the kernel is to drop it, as from a wire. */
	len = partial_frame(f, 0, TCP, 100, &ip);
	ip[37] ^= 0x40;
	memcpy(want, f, len);
	cr_assert_not(uroce_ip_csum_complete(f, len));
	cr_assert_arr_eq(f, want, len);

	/* A fragment: offload covers whole datagrams only (MF, then an offset). */
	len = partial_frame(f, 0, TCP, 100, &ip);
	ip[6] = 0x20;
	cr_assert_not(uroce_ip_csum_partial(f, len));
	ip[6] = 0x00;
	ip[7] = 0x10;
	cr_assert_not(uroce_ip_csum_partial(f, len));

	/* Not TCP or UDP; not IPv4; a datagram longer than the frame. */
	len = partial_frame(f, 0, TCP, 100, &ip);
	ip[9] = 1;
	cr_assert_not(uroce_ip_csum_partial(f, len));
	ip[9] = TCP;
	f[12] = 0x86;
	f[13] = 0xdd;
	cr_assert_not(uroce_ip_csum_partial(f, len));
	f[12] = 0x08;
	f[13] = 0x00;
	cr_assert(uroce_ip_csum_partial(f, len));
	cr_assert_not(uroce_ip_csum_partial(f, len - 1));
}

/* Every prefix of a partial frame, on the heap so that ASan sees a read past its end:
 * only the whole datagram is completed. Ethernet padding after it is allowed. */
Test(csum, truncated_frames_are_read_within_bounds)
{
	uint8_t f[1600], *ip;
	uint32_t len = partial_frame(f, 7, UDP, 30, &ip);

	for (uint32_t n = 0; n <= len + 6; n++) {
		uint8_t *copy = malloc(n ? n : 1);

		memcpy(copy, f, n <= len ? n : len);
		if (n > len)
			memset(copy + len, 0, n - len);
		cr_assert_eq(uroce_ip_csum_partial(copy, n), n >= len, "%u of %u bytes", n, len);
		free(copy);
	}
}
