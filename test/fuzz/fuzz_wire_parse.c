/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for lib/wire's parser, with the builder as its oracle.
 *
 * For every input: uroce_wire_parse() must stay inside the buffer (ASan), return a known
 * error with a name, and for an accepted frame give a view whose pointers and lengths lie
 * inside the input. Then uroce_wire_build() from that view must give back the input
 * (uroce_wire.h's contract: "the identical bytes, the ICRC recomputed"):
 *  - ICRC verified: all pkt_len bytes identical.
 *  - ICRC wrong: identical except the 4 ICRC bytes and, when the frame carries a UDP
 *    checksum, that checksum (it covers the ICRC, so a new ICRC changes it); the rebuilt
 *    ICRC must be the one uroce_wire_icrc_compute() gives for the input.
 * The rebuilt frame itself must parse, verify, and rebuild to itself.
 *
 * The one equivalence the contract allows: an IPv4 header checksum received as 0xffff
 * where the builder computes 0x0000 (both one's-complement zero).
 *
 * Deterministic, no allocation per input (static buffers). A failed oracle traps.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "uroce_wire.h"

#include "fuzz_check.h"

/* Largest frame the builder can write: Ethernet + VLAN + a 64 KiB IP datagram (IPv6's
 * payload length excludes its 40-byte header). */
#define REBUILT_CAP (UROCE_ETH_HLEN + UROCE_VLAN_HLEN + UROCE_IPV6_HLEN + 0x10000)

static uint8_t rebuilt[REBUILT_CAP];
static uint8_t rebuilt2[REBUILT_CAP];

static void check_err(enum uroce_wire_err err)
{
	const char *s;

	CHECK((unsigned)err < UROCE_WIRE_E__COUNT);
	s = uroce_wire_strerror(err);
	CHECK(s != NULL);
	CHECK(strcmp(s, "unknown") != 0);
	CHECK(s[0] != '\0');
}

/* Where the view points, relative to the frame it came from. */
static void check_view(const struct uroce_wire_pkt *pkt, const uint8_t *data, size_t size)
{
	const struct uroce_opcode_info *oi = uroce_opcode_info(pkt->hdr.bth.opcode);
	const uint8_t *end = data + size;
	uint32_t l2 = UROCE_ETH_HLEN + (pkt->hdr.vlan ? UROCE_VLAN_HLEN : 0);
	uint32_t l3 = pkt->hdr.ip_version == 4 ? UROCE_IPV4_HLEN : UROCE_IPV6_HLEN;

	CHECK(oi != NULL);
	CHECK(pkt->hdr.ip_version == 4 || pkt->hdr.ip_version == 6);
	CHECK(pkt->hdr.bth.tver == UROCE_BTH_TVER);
	CHECK(pkt->hdr.bth.pad <= 3);
	CHECK(pkt->pkt_len <= size);
	CHECK(pkt->frame == data);
	CHECK(pkt->l3_off == l2 && pkt->l3 == data + l2);
	CHECK(pkt->bth_off == l2 + l3 + UROCE_UDP_HLEN && pkt->bth == data + pkt->bth_off);
	/* payload and payload_len inside [data, data + size), then pad and ICRC to the end. */
	CHECK(pkt->payload >= data && pkt->payload < end);
	CHECK(pkt->payload_len <= (size_t)(end - pkt->payload));
	CHECK(pkt->payload == pkt->bth + oi->hdr_len);
	CHECK((size_t)(pkt->payload - data) + pkt->payload_len + pkt->hdr.bth.pad +
		      UROCE_ICRC_LEN ==
	      pkt->pkt_len);
	CHECK(pkt->payload_len == 0 || (oi->flags & UROCE_OPF_PAYLOAD));
	CHECK(pkt->icrc == uroce_wire_icrc_load(data + pkt->pkt_len - UROCE_ICRC_LEN));
}

/* True if byte @i of the rebuilt frame may differ from the input: the IPv4 header
 * checksum's two forms of zero. */
static bool ipv4_csum_negative_zero(const struct uroce_wire_pkt *pkt, const uint8_t *data,
				    uint32_t i)
{
	uint32_t c = pkt->l3_off + 10u;

	return pkt->hdr.ip_version == 4 && (i == c || i == c + 1) && data[c] == 0xff &&
	       data[c + 1] == 0xff;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct uroce_wire_pkt pkt, again;
	enum uroce_wire_err err, icrc_err;
	uint32_t n, hdr_len, icrc_off, udp_csum_off;
	bool icrc_ok;

	if (size > UINT32_MAX)
		return 0;
	err = uroce_wire_parse(data, (uint32_t)size, &pkt);
	check_err(err);
	CHECK(err != UROCE_WIRE_E_ICRC); /* the parser leaves the ICRC to icrc_check */
	CHECK(pkt.frame == data);
	if (err != UROCE_WIRE_OK)
		return 0;

	check_view(&pkt, data, size);
	icrc_err = uroce_wire_icrc_check(&pkt);
	check_err(icrc_err);
	CHECK(icrc_err == UROCE_WIRE_OK || icrc_err == UROCE_WIRE_E_ICRC);
	icrc_ok = icrc_err == UROCE_WIRE_OK;
	/* Rebuild from the view alone. */
	CHECK(uroce_wire_frame_len(&pkt.hdr, pkt.payload_len) == pkt.pkt_len);
	n = uroce_wire_build(rebuilt, sizeof(rebuilt), &pkt.hdr, pkt.payload, pkt.payload_len);
	CHECK(n == pkt.pkt_len);
	/* Too small a buffer is refused, not overrun. */
	CHECK(uroce_wire_build(rebuilt2, n - 1, &pkt.hdr, pkt.payload, pkt.payload_len) == 0);

	icrc_off = pkt.pkt_len - UROCE_ICRC_LEN;
	udp_csum_off = pkt.bth_off - 2u;
	for (uint32_t i = 0; i < n; i++) {
		if (rebuilt[i] == data[i] || ipv4_csum_negative_zero(&pkt, data, i))
			continue;
		/* A wrong ICRC is replaced by the right one, and the UDP checksum, which
		 * covers the ICRC, changes with it. */
		CHECK(!icrc_ok);
		CHECK(i >= icrc_off ||
		      (pkt.hdr.udp_csum && (i == udp_csum_off || i == udp_csum_off + 1)));
	}
	/* Either way the ICRC written is the one computed over the input's bytes. */
	CHECK(uroce_wire_icrc_load(rebuilt + icrc_off) == uroce_wire_icrc_compute(&pkt));

	/* The headers-only builder writes the same header bytes. */
	hdr_len = (uint32_t)(pkt.payload - data);
	CHECK(uroce_wire_build_hdrs(rebuilt2, sizeof(rebuilt2), &pkt.hdr, pkt.payload_len) ==
	      hdr_len);
	CHECK(uroce_wire_build_hdrs(rebuilt2, hdr_len - 1, &pkt.hdr, pkt.payload_len) == 0);
	/* except the UDP checksum, which covers bytes build_hdrs does not write */
	memcpy(rebuilt2 + udp_csum_off, rebuilt + udp_csum_off, 2);
	CHECK(memcmp(rebuilt2, rebuilt, hdr_len) == 0);

	/* The rebuilt frame is a valid packet that describes the same thing. */
	err = uroce_wire_parse(rebuilt, n, &again);
	CHECK(err == UROCE_WIRE_OK);
	CHECK(uroce_wire_icrc_check(&again) == UROCE_WIRE_OK);
	CHECK(again.pkt_len == pkt.pkt_len);
	CHECK(again.payload_len == pkt.payload_len);
	CHECK(again.payload - rebuilt == pkt.payload - data);
	CHECK(again.hdr.udp_csum == pkt.hdr.udp_csum);
	CHECK(uroce_wire_build(rebuilt2, sizeof(rebuilt2), &again.hdr, again.payload,
			       again.payload_len) == n);
	CHECK(memcmp(rebuilt2, rebuilt, n) == 0);
	return 0;
}
