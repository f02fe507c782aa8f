/* SPDX-License-Identifier: BSD-3-Clause */
/* Field encodings that are tables or hashes rather than layouts: RNR timer codes and the
 * UDP source port. */
#include "uroce_wire.h"

/* IBA vol 1 table 45, in units of 10 ns (code 0 is the longest: 655.36 ms). */
static const uint32_t rnr_timer_10ns[32] = {
	65536000, 1000, 2000, 3000, 4000, 6000, 8000, 12000,
	16000, 24000, 32000, 48000, 64000, 96000, 128000, 192000,
	256000, 384000, 512000, 768000, 1024000, 1536000, 2048000, 3072000,
	4096000, 6144000, 8192000, 12288000, 16384000, 24576000, 32768000, 49152000,
};

uint64_t uroce_rnr_timer_ns(uint8_t timer_code)
{
	return (uint64_t)rnr_timer_10ns[timer_code & 0x1f] * 10;
}

uint16_t uroce_udp_sport_connected(uint32_t flow_label, uint32_t lqpn, uint32_t rqpn)
{
	uint32_t fl = flow_label & 0xfffff;

	if (fl == 0) {
		/* Symmetric in the two QPNs, so both ends pick the same port. */
		uint64_t v = (uint64_t)lqpn * rqpn;

		v ^= v >> 20;
		v ^= v >> 40;
		fl = (uint32_t)v & 0xfffff;
	}
	/* Fold the 20-bit flow label into the 14 bits of the RoCEv2 source port range. */
	return (uint16_t)(((fl & 0x3fff) ^ ((fl & 0xfc000) >> 14)) | UROCE_UDP_SPORT_MIN);
}

uint16_t uroce_udp_sport_qpn(uint32_t qpn)
{
	/* Linux hash_32(qpn, 14): multiply by the 32-bit golden ratio, keep the top bits. */
	uint32_t h = (qpn * 0x61c88647u) >> (32 - 14);

	return (uint16_t)(UROCE_UDP_SPORT_MIN + (h & 0x3fff));
}
