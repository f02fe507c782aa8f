/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ICRC: IBA vol 1 7.8.1 with the RoCEv2 pseudo-header of Annex A17.3.3.
 *
 * CRC-32 (IEEE 802.3 polynomial, reflected, initial all ones, final inversion), i.e. what
 * ISA-L's crc32_gzip_refl() computes. Its seed argument is the previous result, so a CRC
 * chains over a masked copy of the headers and then over the payload where it lies, or
 * over several buffer segments; DPDK's rte_net_crc_calc() takes no seed and cannot
 * (doc/wire.md has the measurements behind this choice).
 */
#include <string.h>

#include <isa-l/crc.h>

#include "uroce_wire.h"
#include "wire_bytes.h"

/* crc32_gzip_refl(0, 8 x 0xff): the 8 masked bytes that stand for the LRH (RoCEv2 has
 * none, the IB ICRC starts there). rxe's seed 0xdebb20e3 is the same state before the
 * final inversion; test/wire checks the constant. */
#define ICRC_LRH_STATE 0x2144df1cu

uint32_t uroce_wire_icrc_update(uint32_t state, const void *data, size_t len)
{
	return crc32_gzip_refl(state, data, len);
}

uint32_t uroce_wire_icrc_hdrs(const uint8_t *l3, uint8_t ip_version, uint32_t transport_hdr_len)
{
	uint8_t ps[UROCE_IPV6_HLEN + UROCE_UDP_HLEN + UROCE_BTH_LEN];
	uint32_t ip_hlen = ip_version == 4 ? UROCE_IPV4_HLEN : UROCE_IPV6_HLEN;
	uint32_t ps_len = ip_hlen + UROCE_UDP_HLEN + UROCE_BTH_LEN;
	uint8_t *udp = ps + ip_hlen, *bth = udp + UROCE_UDP_HLEN;
	uint32_t state;

	/* The variant fields, those a router may change in flight, are replaced by ones. */
	memcpy(ps, l3, ps_len);
	if (ip_version == 4) {
		ps[1] = 0xff;               /* TOS: DSCP and ECN */
		ps[8] = 0xff;               /* TTL */
		ps[10] = ps[11] = 0xff;     /* header checksum */
	} else {
		ps[0] |= 0x0f;              /* traffic class ... */
		ps[1] = ps[2] = ps[3] = 0xff; /* ... and flow label */
		ps[7] = 0xff;               /* hop limit */
	}
	udp[6] = udp[7] = 0xff;             /* UDP checksum */
	bth[4] = 0xff;                      /* FECN, BECN and reserved bits */

	state = uroce_wire_icrc_update(ICRC_LRH_STATE, ps, ps_len);
	return uroce_wire_icrc_update(state, l3 + ps_len, transport_hdr_len - UROCE_BTH_LEN);
}

/* Least significant byte first, like Ethernet's FCS (rxe stores the CPU-order value). */
uint32_t uroce_wire_icrc_load(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void uroce_wire_icrc_store(uint8_t *p, uint32_t icrc)
{
	p[0] = (uint8_t)icrc;
	p[1] = (uint8_t)(icrc >> 8);
	p[2] = (uint8_t)(icrc >> 16);
	p[3] = (uint8_t)(icrc >> 24);
}

uint32_t uroce_wire_icrc_compute(const struct uroce_wire_pkt *pkt)
{
	const struct uroce_opcode_info *oi = uroce_opcode_info(pkt->hdr.bth.opcode);
	uint32_t state;

	state = uroce_wire_icrc_hdrs(pkt->l3, pkt->hdr.ip_version, oi->hdr_len);
	state = uroce_wire_icrc_update(state, pkt->payload, pkt->payload_len + pkt->hdr.bth.pad);
	return uroce_wire_icrc_final(state);
}

enum uroce_wire_err uroce_wire_icrc_check(const struct uroce_wire_pkt *pkt)
{
	return uroce_wire_icrc_compute(pkt) == pkt->icrc ? UROCE_WIRE_OK : UROCE_WIRE_E_ICRC;
}
