/* SPDX-License-Identifier: BSD-3-Clause */
/* struct uroce_wire_hdr + payload -> frame bytes, the inverse of parse.c. */
#include <string.h>

#include "uroce_wire.h"
#include "wire_bytes.h"

void uroce_wire_hdr_init(struct uroce_wire_hdr *h, uint8_t ip_version, uint8_t opcode)
{
	memset(h, 0, sizeof(*h));
	h->ip_version = ip_version;
	h->ip_ttl = UROCE_IPV4_TTL_DEFAULT; /* rxe: IPv4 TTL and IPv6 hop limit 64 */
	h->ip_df = true;
	h->bth.opcode = opcode;
	h->bth.tver = UROCE_BTH_TVER;
	h->bth.pkey = UROCE_PKEY_DEFAULT;
}

static uint32_t l2l3_len(const struct uroce_wire_hdr *h)
{
	return UROCE_ETH_HLEN + (h->vlan ? UROCE_VLAN_HLEN : 0) +
	       (h->ip_version == 4 ? UROCE_IPV4_HLEN : UROCE_IPV6_HLEN) + UROCE_UDP_HLEN;
}

static uint32_t pad_of(uint32_t payload_len)
{
	return (4 - (payload_len & 3)) & 3;
}

/* The opcode's table entry if @h can be built with @payload_len bytes, else NULL. */
static const struct uroce_opcode_info *buildable(const struct uroce_wire_hdr *h,
						 uint32_t payload_len)
{
	const struct uroce_opcode_info *oi = uroce_opcode_info(h->bth.opcode);

	if (oi == NULL || (h->ip_version != 4 && h->ip_version != 6))
		return NULL;
	if (payload_len > 0 && !(oi->flags & UROCE_OPF_PAYLOAD))
		return NULL;
	return oi;
}

uint32_t uroce_wire_frame_len(const struct uroce_wire_hdr *h, uint32_t payload_len)
{
	const struct uroce_opcode_info *oi = buildable(h, payload_len);
	uint64_t n;

	if (oi == NULL)
		return 0;
	n = (uint64_t)l2l3_len(h) + oi->hdr_len + payload_len + pad_of(payload_len) +
	    UROCE_ICRC_LEN;
	/* 16-bit length fields: IPv4's total length counts its header, IPv6's payload length
	 * (and so UDP's) does not. */
	if (n - UROCE_ETH_HLEN - (h->vlan ? UROCE_VLAN_HLEN : 0) -
		    (h->ip_version == 6 ? UROCE_IPV6_HLEN : 0) > 0xffff)
		return 0;
	return (uint32_t)n;
}

static uint8_t *put_ext(uint8_t *p, uint16_t hdrs, const struct uroce_wire_hdr *h)
{
	if (hdrs & UROCE_HDR_DETH) {
		wire_put32(p, h->deth.qkey);
		p[4] = h->deth.resv;
		wire_put24(p + 5, h->deth.src_qpn);
		p += UROCE_DETH_LEN;
	}
	if (hdrs & UROCE_HDR_XRCETH) {
		p[0] = h->xrc_resv;
		wire_put24(p + 1, h->xrc_srqn);
		p += UROCE_XRCETH_LEN;
	}
	if (hdrs & UROCE_HDR_RETH) {
		wire_put64(p, h->reth.va);
		wire_put32(p + 8, h->reth.rkey);
		wire_put32(p + 12, h->reth.dma_len);
		p += UROCE_RETH_LEN;
	}
	if (hdrs & UROCE_HDR_ATOMICETH) {
		wire_put64(p, h->atomiceth.va);
		wire_put32(p + 8, h->atomiceth.rkey);
		wire_put64(p + 12, h->atomiceth.swap_add);
		wire_put64(p + 20, h->atomiceth.compare);
		p += UROCE_ATOMICETH_LEN;
	}
	if (hdrs & UROCE_HDR_AETH) {
		p[0] = h->aeth.syndrome;
		wire_put24(p + 1, h->aeth.msn);
		p += UROCE_AETH_LEN;
	}
	if (hdrs & UROCE_HDR_ATOMICACKETH) {
		wire_put64(p, h->atomic_orig);
		p += UROCE_ATOMICACKETH_LEN;
	}
	if (hdrs & UROCE_HDR_IMMDT) {
		wire_put32(p, h->imm);
		p += UROCE_IMMDT_LEN;
	}
	if (hdrs & UROCE_HDR_IETH) {
		wire_put32(p, h->ieth_rkey);
		p += UROCE_IETH_LEN;
	}
	if (hdrs & UROCE_HDR_CNP_RSVD) {
		memcpy(p, h->cnp_rsvd, UROCE_CNP_RSVD_LEN);
		p += UROCE_CNP_RSVD_LEN;
	}
	return p;
}

uint32_t uroce_wire_build_hdrs(void *buf, uint32_t cap, const struct uroce_wire_hdr *h,
			       uint32_t payload_len)
{
	const struct uroce_opcode_info *oi = buildable(h, payload_len);
	uint32_t frame_len = uroce_wire_frame_len(h, payload_len);
	uint32_t hdr_len, ip_len, pad = pad_of(payload_len);
	uint8_t *p = buf, *ip;

	if (frame_len == 0 || oi == NULL)
		return 0;
	hdr_len = l2l3_len(h) + oi->hdr_len;
	if (cap < hdr_len)
		return 0;

	memcpy(p, h->eth_dst, 6);
	memcpy(p + 6, h->eth_src, 6);
	p += 12;
	if (h->vlan) {
		wire_put16(p, UROCE_ETHERTYPE_VLAN);
		wire_put16(p + 2, h->vlan_tci);
		p += UROCE_VLAN_HLEN;
	}
	wire_put16(p, h->ip_version == 4 ? UROCE_ETHERTYPE_IPV4 : UROCE_ETHERTYPE_IPV6);
	p += 2;

	ip = p;
	ip_len = frame_len - (uint32_t)(ip - (uint8_t *)buf);
	if (h->ip_version == 4) {
		p[0] = 0x45;
		p[1] = h->ip_tos;
		wire_put16(p + 2, (uint16_t)ip_len);
		wire_put16(p + 4, h->ip_id);
		wire_put16(p + 6, h->ip_df ? 0x4000 : 0);
		p[8] = h->ip_ttl;
		p[9] = 17;
		wire_put16(p + 10, 0);
		memcpy(p + 12, h->ip_src + 12, 4);
		memcpy(p + 16, h->ip_dst + 12, 4);
		wire_put16(p + 10, wire_csum_fold(wire_csum_add(0, p, UROCE_IPV4_HLEN)));
		p += UROCE_IPV4_HLEN;
	} else {
		wire_put32(p, 6u << 28 | (uint32_t)h->ip_tos << 20 | (h->ip_flow_label & 0xfffff));
		wire_put16(p + 4, (uint16_t)(ip_len - UROCE_IPV6_HLEN));
		p[6] = 17;
		p[7] = h->ip_ttl;
		memcpy(p + 8, h->ip_src, 16);
		memcpy(p + 24, h->ip_dst, 16);
		p += UROCE_IPV6_HLEN;
	}

	wire_put16(p, h->udp_sport);
	wire_put16(p + 2, UROCE_UDP_PORT_ROCEV2);
	wire_put16(p + 4, (uint16_t)(frame_len - (uint32_t)(p - (uint8_t *)buf)));
	wire_put16(p + 6, 0); /* uroce_wire_build fills it in when h->udp_csum asks for one */
	p += UROCE_UDP_HLEN;

	p[0] = h->bth.opcode;
	p[1] = (uint8_t)((h->bth.se ? 0x80 : 0) | (h->bth.mig ? 0x40 : 0) | pad << 4 |
			 (h->bth.tver & 0xf));
	wire_put16(p + 2, h->bth.pkey);
	p[4] = h->bth.resv8a;
	wire_put24(p + 5, h->bth.dqpn);
	p[8] = (uint8_t)((h->bth.ack_req ? 0x80 : 0) | (h->bth.resv7 & 0x7f));
	wire_put24(p + 9, h->bth.psn);
	p = put_ext(p + UROCE_BTH_LEN, oi->hdrs, h);

	return (uint32_t)(p - (uint8_t *)buf);
}

uint32_t uroce_wire_build(void *buf, uint32_t cap, const struct uroce_wire_hdr *h,
			  const void *payload, uint32_t payload_len)
{
	uint32_t frame_len = uroce_wire_frame_len(h, payload_len);
	uint32_t hdr_len, pad = pad_of(payload_len), icrc, l3_off, bth_off;
	uint8_t *f = buf;

	if (frame_len == 0 || cap < frame_len)
		return 0;
	hdr_len = uroce_wire_build_hdrs(buf, cap, h, payload_len);
	if (hdr_len == 0)
		return 0;
	if (payload_len > 0)
		memcpy(f + hdr_len, payload, payload_len);
	memset(f + hdr_len + payload_len, 0, pad);

	l3_off = UROCE_ETH_HLEN + (h->vlan ? UROCE_VLAN_HLEN : 0);
	bth_off = l3_off + (h->ip_version == 4 ? UROCE_IPV4_HLEN : UROCE_IPV6_HLEN) +
		  UROCE_UDP_HLEN;
	icrc = uroce_wire_icrc_contig(f + l3_off, h->ip_version,
				      frame_len - l3_off - UROCE_ICRC_LEN);
	uroce_wire_icrc_store(f + frame_len - UROCE_ICRC_LEN, icrc);

	/* The UDP checksum covers the ICRC, so it comes last; the ICRC masks it. */
	if (h->udp_csum) {
		uint8_t *udp = f + bth_off - UROCE_UDP_HLEN;
		uint16_t c = wire_udp_csum(f + l3_off, h->ip_version, udp,
					   frame_len - (bth_off - UROCE_UDP_HLEN));
		/* RFC 768: a computed zero is sent as all ones, zero meaning "no checksum". */
		wire_put16(udp + 6, c == 0 ? 0xffff : c);
	}
	return frame_len;
}
