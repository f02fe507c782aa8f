/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frame -> struct uroce_wire_pkt. Every read is preceded by a check that the bytes are
 * inside the frame (or, past the IP header, inside the IP datagram): the first check of
 * each layer returns its *_TRUNC error, so the rest of that layer reads freely.
 */
#include <stddef.h>
#include <string.h>

#include "uroce_wire.h"
#include "wire_bytes.h"

static const char *const wire_err_names[UROCE_WIRE_E__COUNT] = {
	[UROCE_WIRE_OK] = "ok",
	[UROCE_WIRE_E_ETH_TRUNC] = "eth_trunc",
	[UROCE_WIRE_E_ETHERTYPE] = "ethertype",
	[UROCE_WIRE_E_IP_TRUNC] = "ip_trunc",
	[UROCE_WIRE_E_IP_VERSION] = "ip_version",
	[UROCE_WIRE_E_IP_HDR_LEN] = "ip_hdr_len",
	[UROCE_WIRE_E_IP_OPTIONS] = "ip_options",
	[UROCE_WIRE_E_IP_TOTAL_LEN] = "ip_total_len",
	[UROCE_WIRE_E_IP_FRAGMENT] = "ip_fragment",
	[UROCE_WIRE_E_IP_CSUM] = "ip_csum",
	[UROCE_WIRE_E_IP_PROTO] = "ip_proto",
	[UROCE_WIRE_E_UDP_TRUNC] = "udp_trunc",
	[UROCE_WIRE_E_UDP_LEN] = "udp_len",
	[UROCE_WIRE_E_UDP_PORT] = "udp_port",
	[UROCE_WIRE_E_UDP_CSUM] = "udp_csum",
	[UROCE_WIRE_E_BTH_TRUNC] = "bth_trunc",
	[UROCE_WIRE_E_BTH_TVER] = "bth_tver",
	[UROCE_WIRE_E_OPCODE] = "opcode",
	[UROCE_WIRE_E_HDR_TRUNC] = "hdr_trunc",
	[UROCE_WIRE_E_PAYLOAD] = "payload",
	[UROCE_WIRE_E_PAD] = "pad",
	[UROCE_WIRE_E_ICRC] = "icrc",
};

const char *uroce_wire_strerror(enum uroce_wire_err err)
{
	if ((unsigned)err >= UROCE_WIRE_E__COUNT)
		return "unknown";
	return wire_err_names[err];
}

uint32_t wire_pseudo_sum(const uint8_t *l3, uint8_t ip_version, uint8_t proto, uint32_t l4_len)
{
	uint32_t sum;

	if (ip_version == 4) {
		sum = wire_csum_add(0, l3 + 12, 8); /* source and destination address */
		sum += proto + l4_len;              /* zero, protocol, length */
	} else {
		sum = wire_csum_add(0, l3 + 8, 32);
		sum += (l4_len >> 16) + (l4_len & 0xffff) + proto;
	}
	return sum;
}

/* The fields of a checked IPv4 header. @return the datagram's length. */
static uint32_t decode_ipv4(const uint8_t *ip, struct uroce_wire_hdr *h)
{
	h->ip_version = 4;
	h->ip_tos = ip[1];
	h->ip_id = wire_be16(ip + 4);
	h->ip_df = (wire_be16(ip + 6) & 0x4000) != 0;
	h->ip_ttl = ip[8];
	h->ip_flow_label = 0;
	memset(h->ip_src, 0, 12);
	memset(h->ip_dst, 0, 12);
	memcpy(h->ip_src + 12, ip + 12, 4);
	memcpy(h->ip_dst + 12, ip + 16, 4);
	return wire_be16(ip + 2);
}

/* The fields of a checked IPv6 header. @return the datagram's length. */
static uint32_t decode_ipv6(const uint8_t *ip, struct uroce_wire_hdr *h)
{
	uint32_t vtf = wire_be32(ip);

	h->ip_version = 6;
	h->ip_tos = (uint8_t)(vtf >> 20);
	h->ip_flow_label = vtf & 0xfffff;
	h->ip_ttl = ip[7];
	h->ip_id = 0;
	h->ip_df = false;
	memcpy(h->ip_src, ip + 8, 16);
	memcpy(h->ip_dst, ip + 24, 16);
	return UROCE_IPV6_HLEN + wire_be16(ip + 4);
}

/* IPv4 (RFC 791). Returns the datagram length through @ip_len. */
static enum uroce_wire_err parse_ipv4(const uint8_t *ip, uint32_t avail, struct uroce_wire_hdr *h,
				      uint32_t *ip_len)
{
	uint16_t total, frag;

	if (avail < UROCE_IPV4_HLEN)
		return UROCE_WIRE_E_IP_TRUNC;
	if (ip[0] >> 4 != 4)
		return UROCE_WIRE_E_IP_VERSION;
	if ((ip[0] & 0xf) < 5)
		return UROCE_WIRE_E_IP_HDR_LEN;
	if ((ip[0] & 0xf) > 5)
		return UROCE_WIRE_E_IP_OPTIONS;
	total = wire_be16(ip + 2);
	if (total < UROCE_IPV4_HLEN || total > avail)
		return UROCE_WIRE_E_IP_TOTAL_LEN;
	frag = wire_be16(ip + 6);
	/* Bit 15 is reserved (must be zero), bit 14 DF, bit 13 MF, 13 bits of offset. A set
	 * reserved bit is not a fragment but is no valid datagram either. */
	if (frag & 0xbfff)
		return UROCE_WIRE_E_IP_FRAGMENT;
	if (wire_csum_fold(wire_csum_add(0, ip, UROCE_IPV4_HLEN)) != 0)
		return UROCE_WIRE_E_IP_CSUM;
	if (ip[9] != 17)
		return UROCE_WIRE_E_IP_PROTO;
	*ip_len = decode_ipv4(ip, h);
	return UROCE_WIRE_OK;
}

/* IPv6 (RFC 8200). RoCEv2 puts UDP right after the fixed header: an extension header is
 * rejected as a protocol we do not carry. */
static enum uroce_wire_err parse_ipv6(const uint8_t *ip, uint32_t avail, struct uroce_wire_hdr *h,
				      uint32_t *ip_len)
{
	uint32_t vtf, plen;

	if (avail < UROCE_IPV6_HLEN)
		return UROCE_WIRE_E_IP_TRUNC;
	vtf = wire_be32(ip);
	if (vtf >> 28 != 6)
		return UROCE_WIRE_E_IP_VERSION;
	plen = wire_be16(ip + 4);
	if (plen > avail - UROCE_IPV6_HLEN)
		return UROCE_WIRE_E_IP_TOTAL_LEN;
	if (ip[6] != 17)
		return UROCE_WIRE_E_IP_PROTO;
	*ip_len = decode_ipv6(ip, h);
	return UROCE_WIRE_OK;
}

static inline void parse_bth(const uint8_t *p, struct uroce_bth *b)
{
	b->opcode = p[0];
	b->se = (p[1] & 0x80) != 0;
	b->mig = (p[1] & 0x40) != 0;
	b->pad = (p[1] >> 4) & 0x3;
	b->tver = p[1] & 0xf;
	b->pkey = wire_be16(p + 2);
	b->resv8a = p[4];
	b->dqpn = wire_be24(p + 5);
	b->ack_req = (p[8] & 0x80) != 0;
	b->resv7 = p[8] & 0x7f;
	b->psn = wire_be24(p + 9);
}

/* Extension headers in the fixed IBA order; the caller has checked that hdr_len bytes
 * are present. */
static inline __attribute__((always_inline)) void
parse_ext(const uint8_t *p, uint16_t hdrs, struct uroce_wire_hdr *h)
{
	if (hdrs & UROCE_HDR_DETH) {
		h->deth.qkey = wire_be32(p);
		h->deth.resv = p[4];
		h->deth.src_qpn = wire_be24(p + 5);
		p += UROCE_DETH_LEN;
	}
	if (hdrs & UROCE_HDR_XRCETH) {
		h->xrc_resv = p[0];
		h->xrc_srqn = wire_be24(p + 1);
		p += UROCE_XRCETH_LEN;
	}
	if (hdrs & UROCE_HDR_RETH) {
		h->reth.va = wire_be64(p);
		h->reth.rkey = wire_be32(p + 8);
		h->reth.dma_len = wire_be32(p + 12);
		p += UROCE_RETH_LEN;
	}
	if (hdrs & UROCE_HDR_ATOMICETH) {
		h->atomiceth.va = wire_be64(p);
		h->atomiceth.rkey = wire_be32(p + 8);
		h->atomiceth.swap_add = wire_be64(p + 12);
		h->atomiceth.compare = wire_be64(p + 20);
		p += UROCE_ATOMICETH_LEN;
	}
	if (hdrs & UROCE_HDR_AETH) {
		h->aeth.syndrome = p[0];
		h->aeth.msn = wire_be24(p + 1);
		p += UROCE_AETH_LEN;
	}
	if (hdrs & UROCE_HDR_ATOMICACKETH) {
		h->atomic_orig = wire_be64(p);
		p += UROCE_ATOMICACKETH_LEN;
	}
	if (hdrs & UROCE_HDR_IMMDT)
		h->imm = wire_be32(p);
	if (hdrs & UROCE_HDR_IETH)
		h->ieth_rkey = wire_be32(p);
	if (hdrs & UROCE_HDR_CNP_RSVD)
		memcpy(h->cnp_rsvd, p, UROCE_CNP_RSVD_LEN);
}

/* What a parse may leave unwritten, cleared before it starts. */
static void pkt_reset(struct uroce_wire_pkt *pkt, const uint8_t *f)
{
	struct uroce_wire_hdr *h = &pkt->hdr;

	/* Only what a parse may leave unwritten is zeroed: the extension headers (the tail of
	 * the header struct) and the optional fields. A memset of the whole ~260-byte packet
	 * was 5 % of the transport's CPU per message. */
	memset(&h->deth, 0, sizeof(*h) - offsetof(struct uroce_wire_hdr, deth));
	h->vlan = false;
	h->vlan_tci = 0;
	h->udp_csum = false;
	pkt->frame = f;
	pkt->l3 = pkt->bth = pkt->payload = NULL;
	pkt->payload_len = 0;
	pkt->l3_off = pkt->bth_off = 0;
	pkt->pkt_len = 0;
	pkt->icrc = 0;
}

/* The addresses, and the tag before the IP header at @p l3_off when there is room for one
 * (the frame is checked: 14 bytes, or 18 with one 802.1Q tag). */
static void decode_eth(struct uroce_wire_pkt *pkt, const uint8_t *f, uint32_t l3_off)
{
	struct uroce_wire_hdr *h = &pkt->hdr;

	memcpy(h->eth_dst, f, 6);
	memcpy(h->eth_src, f + 6, 6);
	if (l3_off == UROCE_ETH_HLEN + UROCE_VLAN_HLEN) {
		h->vlan = true;
		h->vlan_tci = wire_be16(f + 14);
	}
	pkt->l3_off = (uint16_t)l3_off;
	pkt->l3 = f + l3_off;
}

/* UDP, then the IB transport headers, payload, pad and ICRC, of a datagram whose IP header
 * is checked and decoded: its UDP header at @p off, its end at @p ip_end. Inlined into
 * both parsers, as it was when it was part of the one parser (the compiler would call it:
 * the transport's receive path is a few hundred ns, and every ns shows). */
static inline __attribute__((always_inline)) enum uroce_wire_err
parse_udp(struct uroce_wire_pkt *pkt, uint32_t off, uint32_t ip_end)
{
	const uint8_t *f = pkt->frame;
	struct uroce_wire_hdr *h = &pkt->hdr;
	const struct uroce_opcode_info *oi;
	uint32_t udp_len, transport_len, body;

	if (ip_end - off < UROCE_UDP_HLEN)
		return UROCE_WIRE_E_UDP_TRUNC;
	udp_len = wire_be16(f + off + 4);
	if (udp_len != ip_end - off)
		return UROCE_WIRE_E_UDP_LEN;
	if (wire_be16(f + off + 2) != UROCE_UDP_PORT_ROCEV2)
		return UROCE_WIRE_E_UDP_PORT;
	h->udp_sport = wire_be16(f + off);
	/* A zero checksum means "none" (rxe sends 0, also over IPv6: RFC 6935 allows it for
	 * tunnels). The ICRC masks this field, so a non-zero one is checked here or nowhere. */
	if (wire_be16(f + off + 6) != 0) {
		if (wire_udp_csum(f + pkt->l3_off, h->ip_version, f + off, udp_len) != 0)
			return UROCE_WIRE_E_UDP_CSUM;
		h->udp_csum = true;
	}
	off += UROCE_UDP_HLEN;

	/* BTH */
	if (ip_end - off < UROCE_BTH_LEN + UROCE_ICRC_LEN)
		return UROCE_WIRE_E_BTH_TRUNC;
	pkt->bth_off = (uint16_t)off;
	pkt->bth = f + off;
	parse_bth(f + off, &h->bth);
	if (h->bth.tver != UROCE_BTH_TVER)
		return UROCE_WIRE_E_BTH_TVER;
	oi = uroce_opcode_info(h->bth.opcode);
	if (oi == NULL)
		return UROCE_WIRE_E_OPCODE;

	/* Extension headers, payload, pad, ICRC */
	transport_len = ip_end - off;
	if (transport_len < (uint32_t)oi->hdr_len + UROCE_ICRC_LEN)
		return UROCE_WIRE_E_HDR_TRUNC;
	parse_ext(f + off + UROCE_BTH_LEN, oi->hdrs, h);
	body = transport_len - oi->hdr_len - UROCE_ICRC_LEN; /* payload + pad */
	if (!(oi->flags & UROCE_OPF_PAYLOAD) && (body != 0 || h->bth.pad != 0))
		return UROCE_WIRE_E_PAYLOAD;
	/* IBA 9.2.3: the pad brings the payload to a 4-byte multiple; every header length is
	 * one already, so payload + pad is too. */
	if (h->bth.pad > body || (body & 3) != 0)
		return UROCE_WIRE_E_PAD;
	pkt->payload = f + off + oi->hdr_len;
	pkt->payload_len = body - h->bth.pad;
	/* Senders zero the pad (rxe does, so does the builder); refusing anything else keeps
	 * "parse, then build" exact. Stricter than rxe, which does not look. */
	for (uint32_t i = 0; i < h->bth.pad; i++)
		if (pkt->payload[pkt->payload_len + i] != 0)
			return UROCE_WIRE_E_PAD;

	pkt->pkt_len = ip_end;
	pkt->icrc = uroce_wire_icrc_load(f + ip_end - UROCE_ICRC_LEN);
	return UROCE_WIRE_OK;
}

enum uroce_wire_err uroce_wire_parse(const void *frame, uint32_t len, struct uroce_wire_pkt *pkt)
{
	const uint8_t *f = frame;
	struct uroce_wire_hdr *h = &pkt->hdr;
	uint32_t off, ip_len;
	uint16_t ethertype;
	enum uroce_wire_err err;

	pkt_reset(pkt, f);

	/* Ethernet II, at most one 802.1Q tag (RoCEv2 over QinQ is not a thing we carry). */
	if (len < UROCE_ETH_HLEN)
		return UROCE_WIRE_E_ETH_TRUNC;
	ethertype = wire_be16(f + 12);
	off = UROCE_ETH_HLEN;
	if (ethertype == UROCE_ETHERTYPE_VLAN) {
		if (len < UROCE_ETH_HLEN + UROCE_VLAN_HLEN)
			return UROCE_WIRE_E_ETH_TRUNC;
		ethertype = wire_be16(f + 16);
		off += UROCE_VLAN_HLEN;
	}
	decode_eth(pkt, f, off);

	/* IP. Bytes after the datagram are link-layer padding (a 60-byte minimum frame) and
	 * are ignored from here on: ip_end bounds every later read. */
	if (ethertype == UROCE_ETHERTYPE_IPV4)
		err = parse_ipv4(f + off, len - off, h, &ip_len);
	else if (ethertype == UROCE_ETHERTYPE_IPV6)
		err = parse_ipv6(f + off, len - off, h, &ip_len);
	else
		err = UROCE_WIRE_E_ETHERTYPE;
	if (err != UROCE_WIRE_OK)
		return err;
	return parse_udp(pkt, off + (h->ip_version == 4 ? UROCE_IPV4_HLEN : UROCE_IPV6_HLEN),
			 off + ip_len);
}

enum uroce_wire_err uroce_wire_parse_checked_ip(const void *frame, uint32_t l3_off,
						struct uroce_wire_pkt *pkt)
{
	const uint8_t *f = frame, *ip = f + l3_off;
	struct uroce_wire_hdr *h = &pkt->hdr;
	uint32_t ip_len;

	pkt_reset(pkt, f);
	decode_eth(pkt, f, l3_off);
	if (ip[0] >> 4 == 4) {
		/* Of parse_ipv4's checks, the one a fragment check on MF and the offset leaves:
		 * the reserved flag bit (lib/ipstack's fragment check is that one). */
		if (wire_be16(ip + 6) & 0x8000)
			return UROCE_WIRE_E_IP_FRAGMENT;
		ip_len = decode_ipv4(ip, h);
	} else {
		ip_len = decode_ipv6(ip, h);
	}
	return parse_udp(pkt, l3_off + (h->ip_version == 4 ? UROCE_IPV4_HLEN : UROCE_IPV6_HLEN),
			 l3_off + ip_len);
}
