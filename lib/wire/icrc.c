/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ICRC: IBA vol 1 7.8.1 with the RoCEv2 pseudo-header of Annex A17.3.3.
 *
 * CRC-32 (IEEE 802.3 polynomial, reflected, initial all ones, final inversion), i.e. what
 * ISA-L's crc32_gzip_refl() computes. Its seed argument is the previous result, so a CRC
 * chains over a masked copy of the headers and then over the payload where it lies, or
 * over several buffer segments; DPDK's rte_net_crc_calc() takes no seed and cannot
 * (doc/benchmarks.md has the measurements behind this choice).
 */
#include <isa-l/crc.h>

#include "uroce_wire.h"

/* crc32_gzip_refl(0, 8 x 0xff): the 8 masked bytes that stand for the LRH (RoCEv2 has
 * none, the IB ICRC starts there). rxe's seed 0xdebb20e3 is the same state before the
 * final inversion; test/wire checks the constant. */
#define ICRC_LRH_STATE 0x2144df1cu

/*
 * The variant fields (those a router may rewrite) count as all ones. Rather than CRC a
 * masked copy of the headers (byte stores followed by wide loads of the same bytes stall
 * on store forwarding: that cost more than the CRC of a 64-byte payload), the CRC runs
 * over the headers where they lie and is then corrected: the CRC is linear over GF(2),
 * so replacing byte b at position p of an R-byte span by b | m changes the state after
 * the span by L(((~b) & m) at p, followed by R - p - 1 zero bytes), where L is the CRC
 * with zero initial value and no final inversion. fix[] holds L for every byte value at
 * each masked position; the span is the IP, UDP and BTH headers.
 */
struct icrc_mask {
	uint8_t pos;  /* offset from the IP header */
	uint8_t mask; /* the bits that count as ones */
};

#define IPV4_SPAN (UROCE_IPV4_HLEN + UROCE_UDP_HLEN + UROCE_BTH_LEN)
#define IPV6_SPAN (UROCE_IPV6_HLEN + UROCE_UDP_HLEN + UROCE_BTH_LEN)
#define MASKS_MAX 8

static const struct icrc_mask ipv4_masks[] = {
	{1, 0xff},                         /* TOS: DSCP and ECN */
	{8, 0xff},                         /* TTL */
	{10, 0xff}, {11, 0xff},            /* header checksum */
	{UROCE_IPV4_HLEN + 6, 0xff}, {UROCE_IPV4_HLEN + 7, 0xff}, /* UDP checksum */
	{UROCE_IPV4_HLEN + UROCE_UDP_HLEN + 4, 0xff}, /* BTH: FECN, BECN, reserved */
};
static const struct icrc_mask ipv6_masks[] = {
	{0, 0x0f}, {1, 0xff},              /* traffic class ... */
	{2, 0xff}, {3, 0xff},              /* ... and flow label */
	{7, 0xff},                         /* hop limit */
	{UROCE_IPV6_HLEN + 6, 0xff}, {UROCE_IPV6_HLEN + 7, 0xff},
	{UROCE_IPV6_HLEN + UROCE_UDP_HLEN + 4, 0xff},
};

static uint32_t ipv4_fix[MASKS_MAX][256];
static uint32_t ipv6_fix[MASKS_MAX][256];

/* L(v at pos of a span of len bytes) for the 8 single-bit values, then every byte value
 * by linearity. crc32_gzip_refl(~0, x) is ~L(x). */
static void icrc_fix_table(uint32_t fix[256], uint32_t pos, uint32_t len)
{
	uint8_t span[IPV6_SPAN] = {0};
	uint32_t bit[8];

	for (int b = 0; b < 8; b++) {
		span[pos] = (uint8_t)(1u << b);
		bit[b] = ~crc32_gzip_refl(0xffffffffu, span, len);
	}
	for (int v = 0; v < 256; v++) {
		fix[v] = 0;
		for (int b = 0; b < 8; b++)
			if (v & (1 << b))
				fix[v] ^= bit[b];
	}
}

/* Runs before main (and before any thread the program starts): the tables are then
 * read-only, so the ICRC stays callable from any thread without synchronisation. */
__attribute__((constructor)) static void icrc_init(void)
{
	for (size_t i = 0; i < sizeof(ipv4_masks) / sizeof(ipv4_masks[0]); i++)
		icrc_fix_table(ipv4_fix[i], ipv4_masks[i].pos, IPV4_SPAN);
	for (size_t i = 0; i < sizeof(ipv6_masks) / sizeof(ipv6_masks[0]); i++)
		icrc_fix_table(ipv6_fix[i], ipv6_masks[i].pos, IPV6_SPAN);
}

uint32_t uroce_wire_icrc_update(uint32_t state, const void *data, size_t len)
{
	return crc32_gzip_refl(state, data, len);
}

/* CRC state after the masked IP, UDP and BTH headers. The state is the inverted raw CRC
 * (ISA-L's convention), and ~(a ^ b) = ~a ^ b, so the corrections apply to it as well. */
static uint32_t icrc_pseudo_hdr(const uint8_t *l3, uint8_t ip_version, uint32_t *span)
{
	const struct icrc_mask *m = ip_version == 4 ? ipv4_masks : ipv6_masks;
	uint32_t(*fix)[256] = ip_version == 4 ? ipv4_fix : ipv6_fix;
	size_t n = ip_version == 4 ? sizeof(ipv4_masks) / sizeof(ipv4_masks[0])
				   : sizeof(ipv6_masks) / sizeof(ipv6_masks[0]);
	uint32_t state;

	*span = ip_version == 4 ? IPV4_SPAN : IPV6_SPAN;
	state = uroce_wire_icrc_update(ICRC_LRH_STATE, l3, *span);
	for (size_t i = 0; i < n; i++)
		state ^= fix[i][(uint8_t)(~l3[m[i].pos] & m[i].mask)];
	return state;
}

uint32_t uroce_wire_icrc_hdrs(const uint8_t *l3, uint8_t ip_version, uint32_t transport_hdr_len)
{
	uint32_t span, state = icrc_pseudo_hdr(l3, ip_version, &span);

	return uroce_wire_icrc_update(state, l3 + span, transport_hdr_len - UROCE_BTH_LEN);
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

uint32_t uroce_wire_icrc_contig(const uint8_t *l3, uint8_t ip_version, uint32_t len)
{
	uint32_t span, state = icrc_pseudo_hdr(l3, ip_version, &span);

	/* Extension headers, payload and pad in one pass. */
	return uroce_wire_icrc_final(uroce_wire_icrc_update(state, l3 + span, len - span));
}

uint32_t uroce_wire_icrc_compute(const struct uroce_wire_pkt *pkt)
{
	return uroce_wire_icrc_contig(pkt->l3, pkt->hdr.ip_version,
				      pkt->pkt_len - pkt->l3_off - UROCE_ICRC_LEN);
}

enum uroce_wire_err uroce_wire_icrc_check(const struct uroce_wire_pkt *pkt)
{
	return uroce_wire_icrc_compute(pkt) == pkt->icrc ? UROCE_WIRE_OK : UROCE_WIRE_E_ICRC;
}
