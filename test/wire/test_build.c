/* SPDX-License-Identifier: BSD-3-Clause */
/* The builder, the opcode table, each parse error by name, and the ICRC's construction. */
#include <string.h>

#include <criterion/criterion.h>
#include <isa-l/crc.h>

#include "uroce_wire.h"

static uint8_t buf[16384];

static void hdr_for(struct uroce_wire_hdr *h, uint8_t ipv, uint8_t opcode)
{
	uroce_wire_hdr_init(h, ipv, opcode);
	memcpy(h->eth_dst, "\x52\x54\x00\x18\x00\x01", 6);
	memcpy(h->eth_src, "\x52\x54\x00\x18\x00\x02", 6);
	if (ipv == 4) {
		memcpy(h->ip_src + 12, "\xc6\x12\x00\x02", 4);
		memcpy(h->ip_dst + 12, "\xc6\x12\x00\x01", 4);
	} else {
		memcpy(h->ip_src, "\xfe\x80\0\0\0\0\0\0\x50\x54\0\xff\xfe\x18\0\x02", 16);
		memcpy(h->ip_dst, "\xfe\x80\0\0\0\0\0\0\x50\x54\0\xff\xfe\x18\0\x01", 16);
	}
	h->udp_sport = uroce_udp_sport_connected(0, 0x11, 0x12);
	h->bth.dqpn = 0x12;
	h->bth.psn = 0xfffffe;
	h->bth.ack_req = true;
	h->deth.qkey = 0x11111111;
	h->deth.src_qpn = 0x11;
	h->xrc_srqn = 0xabcdef;
	h->xrc_resv = 0x5a; /* reserved, but covered by the ICRC: kept as it came */
	h->reth.va = 0x7f0000001000ull;
	h->reth.rkey = 0x1234;
	h->reth.dma_len = 4096;
	h->atomiceth.va = 0x7f0000002000ull;
	h->atomiceth.rkey = 0x4321;
	h->atomiceth.swap_add = 0x0102030405060708ull;
	h->atomiceth.compare = 0x1112131415161718ull;
	h->aeth.syndrome = uroce_aeth_ack(UROCE_AETH_CREDIT_INVALID);
	h->aeth.msn = 0xabcdef;
	h->atomic_orig = 0x2122232425262728ull;
	h->imm = 0xdeadbeef;
	h->ieth_rkey = 0x5678;
}

/* The fields that the opcode's headers carry must come back; others stay zero. */
static void expect_same_fields(const struct uroce_wire_hdr *a, const struct uroce_wire_hdr *b)
{
	uint8_t hdrs = uroce_opcode_info(a->bth.opcode)->hdrs;

	cr_expect_eq(a->bth.opcode, b->bth.opcode);
	cr_expect_eq(a->bth.psn, b->bth.psn);
	cr_expect_eq(a->bth.dqpn, b->bth.dqpn);
	cr_expect_eq(a->bth.ack_req, b->bth.ack_req);
	cr_expect_eq(a->vlan, b->vlan);
	if (a->vlan)
		cr_expect_eq(a->vlan_tci, b->vlan_tci);
	cr_expect_eq(memcmp(a->ip_src, b->ip_src, 16), 0);
	cr_expect_eq(memcmp(a->ip_dst, b->ip_dst, 16), 0);
	cr_expect_eq(a->ip_tos, b->ip_tos);
	cr_expect_eq(a->ip_ttl, b->ip_ttl);
	if (a->ip_version == 6)
		cr_expect_eq(a->ip_flow_label, b->ip_flow_label);
	if (hdrs & UROCE_HDR_DETH)
		cr_expect_eq(memcmp(&a->deth, &b->deth, sizeof(a->deth)), 0);
	if (hdrs & UROCE_HDR_XRCETH) {
		cr_expect_eq(a->xrc_srqn, b->xrc_srqn);
		cr_expect_eq(a->xrc_resv, b->xrc_resv);
	}
	if (hdrs & UROCE_HDR_RETH)
		cr_expect_eq(memcmp(&a->reth, &b->reth, sizeof(a->reth)), 0);
	if (hdrs & UROCE_HDR_ATOMICETH)
		cr_expect_eq(memcmp(&a->atomiceth, &b->atomiceth, sizeof(a->atomiceth)), 0);
	if (hdrs & UROCE_HDR_AETH)
		cr_expect_eq(memcmp(&a->aeth, &b->aeth, sizeof(a->aeth)), 0);
	if (hdrs & UROCE_HDR_ATOMICACKETH)
		cr_expect_eq(a->atomic_orig, b->atomic_orig);
	if (hdrs & UROCE_HDR_IMMDT)
		cr_expect_eq(a->imm, b->imm);
	if (hdrs & UROCE_HDR_IETH)
		cr_expect_eq(a->ieth_rkey, b->ieth_rkey);
}

Test(build, every_opcode_round_trips_over_ipv4_ipv6_and_vlan_with_every_pad)
{
	static uint8_t payload[4096 + 3];
	int built = 0;

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	for (int opc = 0; opc < 256; opc++) {
		const struct uroce_opcode_info *oi = uroce_opcode_info((uint8_t)opc);

		if (oi == NULL)
			continue;
		for (int variant = 0; variant < 4; variant++) {
			static const uint32_t lens[] = {0, 1, 2, 3, 4, 255, 1024, 4099};
			for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
				struct uroce_wire_hdr h;
				struct uroce_wire_pkt p;
				uint32_t len = (oi->flags & UROCE_OPF_PAYLOAD) ? lens[l] : 0, n;

				hdr_for(&h, variant & 1 ? 6 : 4, (uint8_t)opc);
				h.vlan = variant & 2;
				h.vlan_tci = 0x2064;
				h.ip_tos = 0x02; /* ECT(0) */
				h.ip_flow_label = 0xabcde;
				n = uroce_wire_build(buf, sizeof(buf), &h, payload, len);
				cr_assert_eq(n, uroce_wire_frame_len(&h, len));
				cr_assert_eq(uroce_wire_parse(buf, n, &p), UROCE_WIRE_OK,
					     "%s len %u: %d", oi->name, len,
					     uroce_wire_parse(buf, n, &p));
				cr_assert_eq(uroce_wire_icrc_check(&p), UROCE_WIRE_OK, "%s",
					     oi->name);
				cr_assert_eq(p.payload_len, len);
				cr_assert_eq(p.hdr.bth.pad, (4 - len % 4) % 4);
				cr_assert_eq(memcmp(p.payload, payload, len), 0);
				cr_assert_eq((n - p.bth_off) % 4, 0,
					     "transport part not 4-aligned");
				expect_same_fields(&h, &p.hdr);
				built++;
			}
		}
	}
	/* RC 24 (IBA 1.5's Atomic Write included) + UC 12 + UD 2 + XRC 23 + CNP = 62 */
	cr_expect_eq(built, 62 * 4 * 8);
}

Test(build, opcodes_without_payload_refuse_one)
{
	struct uroce_wire_hdr h;
	static const uint8_t none[] = {
		UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_READ_REQUEST),
		UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_ACKNOWLEDGE),
		UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_ATOMIC_ACKNOWLEDGE),
		UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_COMPARE_SWAP),
		UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_FETCH_ADD),
		UROCE_OPCODE_CNP,
	};

	for (size_t i = 0; i < sizeof(none); i++) {
		hdr_for(&h, 4, none[i]);
		cr_expect_eq(uroce_wire_build(buf, sizeof(buf), &h, "x", 1), 0);
		cr_expect_gt(uroce_wire_build(buf, sizeof(buf), &h, NULL, 0), 0);
	}
	hdr_for(&h, 4, 0x15); /* reserved RC opcode */
	cr_expect_eq(uroce_wire_build(buf, sizeof(buf), &h, NULL, 0), 0);
	hdr_for(&h, 5, UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_SEND_ONLY));
	cr_expect_eq(uroce_wire_build(buf, sizeof(buf), &h, NULL, 0), 0);
}

Test(build, too_small_buffer_writes_nothing_and_lengths_are_bounded)
{
	struct uroce_wire_hdr h;
	uint32_t need;

	hdr_for(&h, 4, UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_WRITE_ONLY));
	need = uroce_wire_frame_len(&h, 100);
	cr_assert_eq(need, 14 + 20 + 8 + 12 + 16 + 100 + 4);
	memset(buf, 0xee, sizeof(buf));
	cr_expect_eq(uroce_wire_build(buf, need - 1, &h, buf + 8192, 100), 0);
	cr_expect_eq(buf[0], 0xee);
	/* IPv4 total length is 16 bits */
	cr_expect_eq(uroce_wire_frame_len(&h, 65535), 0);
	cr_expect_gt(uroce_wire_frame_len(&h, 65535 - 20 - 8 - 28 - 4 - 3), 0); /* 65532 */
	cr_expect_eq(uroce_wire_frame_len(&h, 65535 - 20 - 8 - 28 - 4 - 2), 0); /* pad: 65536 */
}

Test(build, rxe_defaults)
{
	struct uroce_wire_hdr h;
	struct uroce_wire_pkt p;
	uint32_t n;

	hdr_for(&h, 4, UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_SEND_ONLY));
	n = uroce_wire_build(buf, sizeof(buf), &h, "abc", 3);
	cr_assert_eq(uroce_wire_parse(buf, n, &p), UROCE_WIRE_OK);
	cr_expect_eq(buf[14 + 6] & 0x40, 0x40, "DF");
	cr_expect_eq(buf[14 + 8], 64, "TTL");
	cr_expect_eq(buf[14 + 1], 0, "TOS");
	cr_expect_eq(buf[14 + 20 + 6] | buf[14 + 20 + 7], 0, "UDP checksum 0");
	cr_expect_eq(p.hdr.bth.pkey, 0xffff);
	cr_expect_eq(p.hdr.bth.pad, 1);
	cr_expect_eq(buf[n - 5], 0, "pad byte is zero");
}

Test(build, udp_checksum_when_asked_is_verified_by_the_parser)
{
	for (int ipv = 4; ipv <= 6; ipv += 2) {
		struct uroce_wire_hdr h;
		struct uroce_wire_pkt p;
		uint32_t n, udp;

		hdr_for(&h, (uint8_t)ipv, UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_SEND_ONLY));
		h.udp_csum = true;
		n = uroce_wire_build(buf, sizeof(buf), &h, "hello, world", 12);
		udp = 14 + (ipv == 4 ? 20 : 40);
		cr_assert_neq(buf[udp + 6] | buf[udp + 7], 0);
		cr_assert_eq(uroce_wire_parse(buf, n, &p), UROCE_WIRE_OK);
		cr_expect(p.hdr.udp_csum);
		cr_expect_eq(uroce_wire_icrc_check(&p), UROCE_WIRE_OK);
		buf[n - 10] ^= 1; /* payload byte: the UDP checksum notices before the ICRC */
		cr_expect_eq(uroce_wire_parse(buf, n, &p), UROCE_WIRE_E_UDP_CSUM);
	}
}

/* Builds a valid RC SEND ONLY over IPv4, then lets @damage break it. */
static enum uroce_wire_err parse_damaged(void (*damage)(uint8_t *f, uint32_t *len))
{
	struct uroce_wire_hdr h;
	struct uroce_wire_pkt p;
	uint32_t n;

	hdr_for(&h, 4, UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_SEND_ONLY));
	n = uroce_wire_build(buf, sizeof(buf), &h, "0123456789abcdef", 16);
	damage(buf, &n);
	return uroce_wire_parse(buf, n, &p);
}

/* Fixes the IPv4 header checksum after a deliberate change, so that the change itself is
 * what the parser sees. */
static void fix_ip_csum(uint8_t *f)
{
	uint32_t sum = 0;

	f[24] = f[25] = 0;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(f[14 + i] << 8 | f[15 + i]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	f[24] = (uint8_t)(~sum >> 8);
	f[25] = (uint8_t)~sum;
}

static void d_ethertype(uint8_t *f, uint32_t *n) { (void)n; f[12] = 0x08; f[13] = 0x06; }
static void d_ip_version(uint8_t *f, uint32_t *n) { (void)n; f[14] = 0x65; fix_ip_csum(f); }
static void d_ihl_short(uint8_t *f, uint32_t *n) { (void)n; f[14] = 0x44; fix_ip_csum(f); }
static void d_ihl_long(uint8_t *f, uint32_t *n) { (void)n; f[14] = 0x46; fix_ip_csum(f); }
static void d_total_len(uint8_t *f, uint32_t *n) { (void)n; f[17] += 1; fix_ip_csum(f); }
static void d_fragment(uint8_t *f, uint32_t *n) { (void)n; f[20] |= 0x20; fix_ip_csum(f); }
static void d_ip_csum(uint8_t *f, uint32_t *n) { (void)n; f[15] = 0x04; }
static void d_proto(uint8_t *f, uint32_t *n) { (void)n; f[23] = 6; fix_ip_csum(f); }
static void d_udp_len(uint8_t *f, uint32_t *n) { (void)n; f[39] -= 4; }
static void d_udp_port(uint8_t *f, uint32_t *n) { (void)n; f[37] = 0xb8; }
static void d_udp_csum(uint8_t *f, uint32_t *n) { (void)n; f[41] = 1; }
static void d_tver(uint8_t *f, uint32_t *n) { (void)n; f[43] |= 1; }
static void d_opcode_rd(uint8_t *f, uint32_t *n) { (void)n; f[42] = 0x44; }
static void d_opcode_reserved(uint8_t *f, uint32_t *n) { (void)n; f[42] = 0x15; }
static void d_opcode_needs_more(uint8_t *f, uint32_t *n)
{
	(void)n;
	f[42] = UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_COMPARE_SWAP); /* 28-byte AtomicETH */
}
static void d_payload_on_ack(uint8_t *f, uint32_t *n)
{
	(void)n;
	f[42] = UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_ACKNOWLEDGE);
}

/* Cuts the datagram to @transport_len bytes after UDP, keeping IP and UDP lengths
 * consistent, so that only the transport layer is short. */
static void shrink_to(uint8_t *f, uint32_t *n, uint32_t transport_len)
{
	uint32_t ip_len = 20 + 8 + transport_len;

	*n = 14 + ip_len;
	f[16] = (uint8_t)(ip_len >> 8);
	f[17] = (uint8_t)ip_len;
	f[38] = (uint8_t)((ip_len - 20) >> 8);
	f[39] = (uint8_t)(ip_len - 20);
	fix_ip_csum(f);
}
static void d_udp_trunc(uint8_t *f, uint32_t *n)
{
	shrink_to(f, n, 0);
	f[16] = 0;
	f[17] = 24; /* IP datagram too short for a UDP header */
	fix_ip_csum(f);
	*n = 14 + 24;
}
static void d_bth_trunc(uint8_t *f, uint32_t *n) { shrink_to(f, n, 12); }
static void d_hdr_trunc(uint8_t *f, uint32_t *n)
{
	shrink_to(f, n, 16);
	f[42] = UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_WRITE_ONLY); /* needs a RETH */
}
static void d_pad(uint8_t *f, uint32_t *n)
{
	shrink_to(f, n, 12 + 4); /* no payload left for a pad of 1 */
	f[43] |= 0x10;
}
static void d_misaligned(uint8_t *f, uint32_t *n) { shrink_to(f, n, 12 + 17 + 4); }

Test(parse, each_failure_has_its_own_error)
{
	struct {
		void (*damage)(uint8_t *, uint32_t *);
		enum uroce_wire_err want;
	} cases[] = {
		{d_ethertype, UROCE_WIRE_E_ETHERTYPE},
		{d_ip_version, UROCE_WIRE_E_IP_VERSION},
		{d_ihl_short, UROCE_WIRE_E_IP_HDR_LEN},
		{d_ihl_long, UROCE_WIRE_E_IP_OPTIONS},
		{d_total_len, UROCE_WIRE_E_IP_TOTAL_LEN},
		{d_fragment, UROCE_WIRE_E_IP_FRAGMENT},
		{d_ip_csum, UROCE_WIRE_E_IP_CSUM},
		{d_proto, UROCE_WIRE_E_IP_PROTO},
		{d_udp_trunc, UROCE_WIRE_E_UDP_TRUNC},
		{d_udp_len, UROCE_WIRE_E_UDP_LEN},
		{d_udp_port, UROCE_WIRE_E_UDP_PORT},
		{d_udp_csum, UROCE_WIRE_E_UDP_CSUM},
		{d_bth_trunc, UROCE_WIRE_E_BTH_TRUNC},
		{d_tver, UROCE_WIRE_E_BTH_TVER},
		{d_opcode_rd, UROCE_WIRE_E_OPCODE},
		{d_opcode_reserved, UROCE_WIRE_E_OPCODE},
		{d_opcode_needs_more, UROCE_WIRE_E_HDR_TRUNC},
		{d_hdr_trunc, UROCE_WIRE_E_HDR_TRUNC},
		{d_payload_on_ack, UROCE_WIRE_E_PAYLOAD},
		{d_pad, UROCE_WIRE_E_PAD},
		{d_misaligned, UROCE_WIRE_E_PAD},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum uroce_wire_err got = parse_damaged(cases[i].damage);
		cr_expect_eq(got, cases[i].want, "case %zu: got %s, want %s", i,
			     uroce_wire_strerror(got), uroce_wire_strerror(cases[i].want));
	}
	for (int e = 0; e < UROCE_WIRE_E__COUNT; e++) {
		const char *name = uroce_wire_strerror(e);
		cr_expect_str_neq(name, "unknown");
		for (int o = 0; o < e; o++)
			cr_expect_str_neq(name, uroce_wire_strerror(o),
					  "errors %d and %d share a name", e, o);
	}
	cr_expect_str_eq(uroce_wire_strerror(UROCE_WIRE_E__COUNT), "unknown");
}

Test(parse, ipv6_with_an_extension_header_is_refused)
{
	struct uroce_wire_hdr h;
	struct uroce_wire_pkt p;
	uint32_t n;

	hdr_for(&h, 6, UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_SEND_ONLY));
	n = uroce_wire_build(buf, sizeof(buf), &h, "abcd", 4);
	buf[14 + 6] = 0; /* hop-by-hop options */
	cr_expect_eq(uroce_wire_parse(buf, n, &p), UROCE_WIRE_E_IP_PROTO);
	buf[14 + 6] = 17;
	buf[14 + 5] += 1; /* payload length beyond the frame */
	cr_expect_eq(uroce_wire_parse(buf, n, &p), UROCE_WIRE_E_IP_TOTAL_LEN);
}

Test(icrc, lrh_seed_is_rxe_s)
{
	/* rxe seeds its CRC with 0xdebb20e3, "the result of computing a CRC with a seed of
	 * 0xffffffff and 8 bytes of 0xff"; ISA-L's state is the inverted form of that. */
	static const uint8_t ff[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

	cr_expect_eq(crc32_gzip_refl(0, ff, 8), ~0xdebb20e3u);
	cr_expect_eq(crc32_gzip_refl(0, (const uint8_t *)"123456789", 9), 0xcbf43926u,
		     "CRC-32/IEEE check value");
}

Test(icrc, chains_over_segments_like_one_pass)
{
	static uint8_t payload[3000];
	struct uroce_wire_hdr h;
	struct uroce_wire_pkt p;
	uint32_t n, state;

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i ^ (i >> 8));
	hdr_for(&h, 4, UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_WRITE_ONLY));
	n = uroce_wire_build(buf, sizeof(buf), &h, payload, sizeof(payload));
	cr_assert_eq(uroce_wire_parse(buf, n, &p), UROCE_WIRE_OK);
	state = uroce_wire_icrc_hdrs(p.l3, 4, uroce_opcode_info(h.bth.opcode)->hdr_len);
	state = uroce_wire_icrc_update(state, payload, 1000);
	state = uroce_wire_icrc_update(state, payload + 1000, 1);
	state = uroce_wire_icrc_update(state, payload + 1001, sizeof(payload) - 1001);
	cr_expect_eq(uroce_wire_icrc_final(state), p.icrc);
}

Test(icrc, masked_fields_do_not_change_it_and_others_do)
{
	struct uroce_wire_hdr h;
	struct uroce_wire_pkt p;
	uint32_t n, icrc;

	hdr_for(&h, 4, UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_SEND_ONLY));
	n = uroce_wire_build(buf, sizeof(buf), &h, "abcd", 4);
	cr_assert_eq(uroce_wire_parse(buf, n, &p), UROCE_WIRE_OK);
	icrc = uroce_wire_icrc_compute(&p);
	buf[14 + 1] = 0xb8;  /* TOS: DSCP 46 */
	buf[14 + 8] = 3;     /* TTL */
	buf[14 + 10] ^= 0x5a; /* header checksum */
	buf[14 + 20 + 6] = 0x12; /* UDP checksum */
	buf[42 + 4] = UROCE_BTH_FECN | UROCE_BTH_BECN;
	cr_expect_eq(uroce_wire_icrc_compute(&p), icrc);
	buf[14 + 15] ^= 1; /* source address */
	cr_expect_neq(uroce_wire_icrc_compute(&p), icrc);
	buf[14 + 15] ^= 1;
	buf[42 + 8] ^= 1; /* BTH reserved bits after AckReq are covered */
	cr_expect_neq(uroce_wire_icrc_compute(&p), icrc);
}

Test(opcode, table_agrees_with_the_spec_layout)
{
	int rc = 0, uc = 0, ud = 0, xrc_ini = 0, xrc_tgt = 0;

	for (int opc = 0; opc < 256; opc++) {
		const struct uroce_opcode_info *oi = uroce_opcode_info((uint8_t)opc);
		uint32_t len = UROCE_BTH_LEN;

		if (oi == NULL)
			continue;
		len += oi->hdrs & UROCE_HDR_DETH ? UROCE_DETH_LEN : 0;
		len += oi->hdrs & UROCE_HDR_XRCETH ? UROCE_XRCETH_LEN : 0;
		len += oi->hdrs & UROCE_HDR_RETH ? UROCE_RETH_LEN : 0;
		len += oi->hdrs & UROCE_HDR_ATOMICETH ? UROCE_ATOMICETH_LEN : 0;
		len += oi->hdrs & UROCE_HDR_AETH ? UROCE_AETH_LEN : 0;
		len += oi->hdrs & UROCE_HDR_ATOMICACKETH ? UROCE_ATOMICACKETH_LEN : 0;
		len += oi->hdrs & UROCE_HDR_IMMDT ? UROCE_IMMDT_LEN : 0;
		len += oi->hdrs & UROCE_HDR_IETH ? UROCE_IETH_LEN : 0;
		len += oi->hdrs & UROCE_HDR_CNP_RSVD ? UROCE_CNP_RSVD_LEN : 0;
		cr_expect_eq(oi->hdr_len, len, "%s", oi->name);
		cr_expect_eq(!!(oi->flags & UROCE_OPF_IMM), !!(oi->hdrs & UROCE_HDR_IMMDT), "%s",
			     oi->name);
		cr_expect_eq(!!(oi->flags & UROCE_OPF_INV), !!(oi->hdrs & UROCE_HDR_IETH), "%s",
			     oi->name);
		/* XRC (annex A14): every request names its SRQ, no response does. */
		if (UROCE_OPCODE_TRANSPORT(opc) == UROCE_TRANSPORT_XRC)
			cr_expect_eq(!!(oi->hdrs & UROCE_HDR_XRCETH), !!(oi->flags & UROCE_OPF_REQ),
				     "%s", oi->name);
		else
			cr_expect_eq(oi->hdrs & UROCE_HDR_XRCETH, 0, "%s", oi->name);
		cr_expect_leq(uroce_opcode_valid_for_qp((uint8_t)opc, UROCE_QPT_RC) +
				      uroce_opcode_valid_for_qp((uint8_t)opc, UROCE_QPT_UC) +
				      uroce_opcode_valid_for_qp((uint8_t)opc, UROCE_QPT_UD) +
				      uroce_opcode_valid_for_qp((uint8_t)opc, UROCE_QPT_XRC_SEND) +
				      uroce_opcode_valid_for_qp((uint8_t)opc, UROCE_QPT_XRC_RECV),
			      opc == UROCE_OPCODE_CNP ? 5 : 1);
		rc += uroce_opcode_valid_for_qp((uint8_t)opc, UROCE_QPT_RC);
		uc += uroce_opcode_valid_for_qp((uint8_t)opc, UROCE_QPT_UC);
		ud += uroce_opcode_valid_for_qp((uint8_t)opc, UROCE_QPT_UD);
		xrc_ini += uroce_opcode_valid_for_qp((uint8_t)opc, UROCE_QPT_XRC_SEND);
		xrc_tgt += uroce_opcode_valid_for_qp((uint8_t)opc, UROCE_QPT_XRC_RECV);
	}
	cr_expect_eq(rc, 24 + 1);
	cr_expect_eq(uc, 12 + 1);
	cr_expect_eq(ud, 2 + 1);
	cr_expect_eq(xrc_ini, 6 + 1); /* READ responses, ACK, atomic ACK; CNP */
	cr_expect_eq(xrc_tgt, 17 + 1);
	cr_expect_str_eq(uroce_opcode_info(0xa4)->name, "XRC_SEND_ONLY");
	cr_expect_null(uroce_opcode_info(0xbd)); /* no Atomic Write over XRC */
	cr_expect_str_eq(uroce_opcode_info(0x0c)->name, "RC_RDMA_READ_REQUEST");
	cr_expect_null(uroce_opcode_info(0x15));
	cr_expect_null(uroce_opcode_info(0x40)); /* RD */
	cr_expect_null(uroce_opcode_info(0x2c)); /* UC has no READ */
	cr_expect_null(uroce_opcode_info(0x66)); /* UD only sends */
}

/* XRC (annex A14): the XRCETH (a reserved byte, then the 24-bit XRC SRQ number) follows
 * the BTH, before the RETH or AtomicETH; ACKs carry none. Byte for byte. */
Test(opcode, xrc_requests_carry_the_srq_number_after_the_bth)
{
	static const uint8_t xrceth_reth[] = {0x00, 0x12, 0x34, 0x56, /* XRCETH */
					      0, 0, 0x7f, 0, 0, 0, 0x10, 0, /* RETH va */
					      0, 0, 0x12, 0x34,             /* rkey */
					      0, 0, 0, 8};                  /* DMA length */
	struct uroce_wire_hdr h;
	struct uroce_wire_pkt p;
	uint32_t n;

	hdr_for(&h, 4, UROCE_OPCODE(UROCE_TRANSPORT_XRC, UROCE_OP_WRITE_ONLY));
	h.xrc_resv = 0;
	h.xrc_srqn = 0x123456;
	h.reth.dma_len = 8;
	n = uroce_wire_build(buf, sizeof(buf), &h, "01234567", 8);
	cr_assert_eq(n, 14 + 20 + 8 + 12 + 4 + 16 + 8 + 4);
	cr_expect_eq(buf[42], 0xaa);
	cr_expect_eq(memcmp(buf + 54, xrceth_reth, sizeof(xrceth_reth)), 0);
	cr_assert_eq(uroce_wire_parse(buf, n, &p), UROCE_WIRE_OK);
	cr_expect_eq(p.hdr.xrc_srqn, 0x123456);
	cr_expect_eq(p.payload_len, 8);

	hdr_for(&h, 4, UROCE_OPCODE(UROCE_TRANSPORT_XRC, UROCE_OP_ACKNOWLEDGE));
	n = uroce_wire_build(buf, sizeof(buf), &h, NULL, 0);
	cr_assert_eq(n, 14 + 20 + 8 + 12 + 4 + 4); /* BTH + AETH */
	cr_assert_eq(uroce_wire_parse(buf, n, &p), UROCE_WIRE_OK);
	cr_expect_eq(p.hdr.xrc_srqn, 0);
	cr_expect(uroce_opcode_valid_for_qp(0xb1, UROCE_QPT_XRC_SEND));
	cr_expect_not(uroce_opcode_valid_for_qp(0xb1, UROCE_QPT_XRC_RECV));
	cr_expect_not(uroce_opcode_valid_for_qp(0xaa, UROCE_QPT_XRC_SEND));
	cr_expect(uroce_opcode_valid_for_qp(0xaa, UROCE_QPT_XRC_RECV));
	cr_expect_not(uroce_opcode_valid_for_qp(0xaa, UROCE_QPT_RC));
}

/* IBA 1.5 RDMA Atomic Write as Linux rxe sends it (rxe_opcode.c, IB_OPCODE_RC_ATOMIC_WRITE):
 * opcode 0x1d, RC only, BTH + RETH then the 8 bytes as payload; its answer is an RDMA READ
 * Response Only (0x10) with an AETH and no payload. Byte for byte, and back. */
Test(opcode, atomic_write_layout_and_its_zero_length_read_response)
{
	static const uint8_t val[8] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
	static const uint8_t reth[16] = {0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x10, 0x00,
					 0x00, 0x00, 0x12, 0x34, 0x00, 0x00, 0x00, 0x08};
	const struct uroce_opcode_info *oi = uroce_opcode_info(0x1d);
	struct uroce_wire_hdr h;
	struct uroce_wire_pkt p;
	uint32_t n;

	cr_assert_not_null(oi);
	cr_expect_eq(UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_ATOMIC_WRITE), 0x1d);
	cr_expect_str_eq(oi->name, "RC_ATOMIC_WRITE");
	cr_expect_eq(oi->hdrs, UROCE_HDR_RETH);
	cr_expect_eq(oi->hdr_len, UROCE_BTH_LEN + UROCE_RETH_LEN);
	cr_expect_eq(oi->flags, UROCE_OPF_PAYLOAD | UROCE_OPF_REQ | UROCE_OPF_ATOMIC_WRITE |
					UROCE_OPF_FIRST | UROCE_OPF_LAST);
	cr_expect(uroce_opcode_valid_for_qp(0x1d, UROCE_QPT_RC));
	cr_expect(!uroce_opcode_valid_for_qp(0x1d, UROCE_QPT_UC));
	cr_expect(!uroce_opcode_valid_for_qp(0x1d, UROCE_QPT_UD));
	cr_expect_null(uroce_opcode_info(0x3d)); /* no UC Atomic Write */

	hdr_for(&h, 4, 0x1d);
	h.bth.psn = 0x000100;
	h.reth.dma_len = 8;
	n = uroce_wire_build(buf, sizeof(buf), &h, val, 8);
	cr_assert_eq(n, 14 + 20 + 8 + 12 + 16 + 8 + 4);
	cr_expect_eq(buf[42], 0x1d);
	cr_expect_eq(buf[43] & 0x30, 0, "pad count of an 8-byte payload");
	cr_expect_eq(buf[50], 0x80, "AckReq");
	cr_expect_eq(memcmp(buf + 54, reth, 16), 0, "RETH");
	cr_expect_eq(memcmp(buf + 70, val, 8), 0, "the value as the payload, as it was");
	cr_assert_eq(uroce_wire_parse(buf, n, &p), UROCE_WIRE_OK);
	cr_assert_eq(uroce_wire_icrc_check(&p), UROCE_WIRE_OK);
	cr_expect_eq(p.payload_len, 8);
	cr_expect_eq(p.payload, buf + 70);
	cr_expect_eq(p.hdr.reth.va, 0x7f0000001000ull);
	cr_expect_eq(p.hdr.reth.rkey, 0x1234);
	cr_expect_eq(p.hdr.reth.dma_len, 8);

	hdr_for(&h, 4, UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_READ_RESPONSE_ONLY));
	h.bth.psn = 0x000100;
	h.bth.ack_req = false;
	n = uroce_wire_build(buf, sizeof(buf), &h, NULL, 0);
	cr_assert_eq(n, 14 + 20 + 8 + 12 + 4 + 4);
	cr_assert_eq(uroce_wire_parse(buf, n, &p), UROCE_WIRE_OK);
	cr_expect_eq(p.payload_len, 0);
	cr_expect_eq(p.hdr.aeth.syndrome, 0x1f);
	cr_expect_eq(uroce_aeth_type(p.hdr.aeth.syndrome), UROCE_AETH_ACK);
}

Test(aeth, syndrome_encoding)
{
	cr_expect_eq(uroce_aeth_ack(UROCE_AETH_CREDIT_INVALID), 0x1f); /* as rxe sends it */
	cr_expect_eq(uroce_aeth_rnr_nak(14), 0x2e);
	cr_expect_eq(uroce_aeth_nak(UROCE_NAK_PSN_SEQ_ERR), 0x60);
	cr_expect_eq(uroce_aeth_nak(UROCE_NAK_INVALID_REQ), 0x61);
	cr_expect_eq(uroce_aeth_nak(UROCE_NAK_REM_ACCESS_ERR), 0x62);
	cr_expect_eq(uroce_aeth_nak(UROCE_NAK_REM_OP_ERR), 0x63);
	cr_expect_eq(uroce_aeth_nak(UROCE_NAK_INVALID_RD_REQ), 0x64);
	cr_expect_eq(uroce_aeth_type(0x2e), UROCE_AETH_RNR_NAK);
	cr_expect_eq(uroce_aeth_value(0x2e), 14);
	cr_expect_eq(uroce_aeth_type(0x62), UROCE_AETH_NAK);
	cr_expect_eq(uroce_aeth_type(0x1f), UROCE_AETH_ACK);
	cr_expect_eq(uroce_aeth_type(0x5f), UROCE_AETH_RESERVED);
}

Test(aeth, rnr_timer_table)
{
	cr_expect_eq(uroce_rnr_timer_ns(0), 655360000ull);
	cr_expect_eq(uroce_rnr_timer_ns(1), 10000ull);
	cr_expect_eq(uroce_rnr_timer_ns(12), 640000ull);
	cr_expect_eq(uroce_rnr_timer_ns(31), 491520000ull);
	for (uint8_t c = 2; c < 32; c++)
		cr_expect_gt(uroce_rnr_timer_ns(c), uroce_rnr_timer_ns(c - 1), "code %u", c);
}

/* The ICRC by its definition: a masked copy of the whole packet, one CRC pass. */
static uint32_t icrc_by_definition(const struct uroce_wire_pkt *p)
{
	static uint8_t copy[16384];
	static const uint8_t lrh[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	uint32_t len = p->pkt_len - p->l3_off - UROCE_ICRC_LEN;
	uint32_t udp = p->bth_off - p->l3_off - UROCE_UDP_HLEN;

	memcpy(copy, p->l3, len);
	if (p->hdr.ip_version == 4) {
		copy[1] = copy[8] = copy[10] = copy[11] = 0xff;
	} else {
		copy[0] |= 0x0f;
		copy[1] = copy[2] = copy[3] = copy[7] = 0xff;
	}
	copy[udp + 6] = copy[udp + 7] = 0xff;
	copy[udp + UROCE_UDP_HLEN + 4] = 0xff;
	return crc32_gzip_refl(crc32_gzip_refl(0, lrh, 8), copy, len);
}

Test(icrc, equals_the_definition_for_random_headers_over_ipv4_and_ipv6)
{
	static uint8_t payload[600];
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (int i = 0; i < 4000; i++) {
		struct uroce_wire_hdr h;
		struct uroce_wire_pkt p;
		uint32_t n, len;
		uint8_t opc;

		/* xorshift: every variant byte and every header field takes many values */
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		opc = (uint8_t)(x >> 56);
		if (uroce_opcode_info(opc) == NULL)
			opc = UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_SEND_ONLY);
		hdr_for(&h, (x & 1) ? 6 : 4, opc);
		h.ip_tos = (uint8_t)(x >> 8);
		h.ip_ttl = (uint8_t)(x >> 16);
		h.ip_flow_label = (uint32_t)(x >> 24) & 0xfffff;
		h.ip_id = (uint16_t)(x >> 44);
		h.bth.resv8a = (uint8_t)(x >> 3);
		h.bth.psn = (uint32_t)(x >> 11) & UROCE_PSN_MASK;
		h.udp_csum = (x >> 60) & 1;
		len = (uroce_opcode_info(opc)->flags & UROCE_OPF_PAYLOAD) ?
			      (uint32_t)(x >> 20) % 600 :
			      0;
		for (uint32_t b = 0; b < len; b++)
			payload[b] = (uint8_t)(x >> (b % 57));
		n = uroce_wire_build(buf, sizeof(buf), &h, payload, len);
		cr_assert_gt(n, 0);
		cr_assert_eq(uroce_wire_parse(buf, n, &p), UROCE_WIRE_OK);
		cr_assert_eq(p.icrc, icrc_by_definition(&p), "packet %d (%s, IPv%u)", i,
			     uroce_opcode_info(opc)->name, h.ip_version);
	}
}

/* Regressions: frames the fuzzer (test/fuzz) found where "parse, then build" was not exact. */
static uint32_t unhex(const char *s, uint8_t *out)
{
	uint32_t n = 0;

	for (; s[0] && s[1]; s += 2)
		out[n++] = (uint8_t)((s[0] <= '9' ? s[0] - '0' : s[0] - 'a' + 10) << 4 |
				     (s[1] <= '9' ? s[1] - '0' : s[1] - 'a' + 10));
	return n;
}

Test(fuzz_regression, a_non_zero_pad_byte_is_refused)
{
	/* RC SEND ONLY, 1 byte of payload, pad 3; pad byte at offset 69 is 0x01 */
	uint32_t n = unhex("52540018000152540018000208004500003c1bf5400040119294c6120002c6120001"
			   "e64812b7002800000460ff000000006280e2a200f40000100041de99f1c29af65500"
			   "00012682d1ad4721",
			   buf);
	struct uroce_wire_pkt p;

	cr_expect_eq(uroce_wire_parse(buf, n, &p), UROCE_WIRE_E_PAD);
	buf[69] = 0;
	cr_expect_eq(uroce_wire_parse(buf, n, &p), UROCE_WIRE_OK);
}

Test(fuzz_regression, cnp_reserved_bytes_are_kept)
{
	uint32_t n =
		unhex("00000000000000000000000008004500003c0000400040113aaf0000000100000002"
		      "c00012b7002800008100ffff00000011000000005a000000000000000000000000000000"
		      "7489c63b",
		      buf);
	static uint8_t again[256];
	struct uroce_wire_pkt p;

	cr_assert_eq(uroce_wire_parse(buf, n, &p), UROCE_WIRE_OK);
	cr_expect_eq(p.hdr.cnp_rsvd[0], 0x5a);
	cr_assert_eq(uroce_wire_build(again, sizeof(again), &p.hdr, NULL, 0), n);
	cr_expect_eq(memcmp(again, buf, n - UROCE_ICRC_LEN), 0);
}

Test(fuzz_regression, ipv4_checksum_negative_zero_is_valid_and_the_only_inexact_field)
{
	/* The header's checksum field holds 0xffff where the computed value is 0x0000: both
	 * verify (RFC 1624 routers may produce either). */
	uint32_t n = unhex("52540018000152540018000208004500006cae5940004011ffffc6120002c6120001"
			   "da4312b7005800000400ffff0000005180b8b90e0def9ebe0b8c610636b133a540d4"
			   "74afe675f0b1eab772f9f0243cadcb64c9d85367975ff3f8652aaa98cfea6d439953b8"
			   "8a05a241779c319bd8de673ca73f8fc53b5be2",
			   buf);
	static uint8_t again[512];
	struct uroce_wire_pkt p;

	cr_assert_eq(uroce_wire_parse(buf, n, &p), UROCE_WIRE_OK);
	cr_assert_eq(uroce_wire_icrc_check(&p), UROCE_WIRE_OK);
	cr_assert_eq(uroce_wire_build(again, sizeof(again), &p.hdr, p.payload, p.payload_len), n);
	cr_expect_eq(again[24], 0x00);
	cr_expect_eq(again[25], 0x00);
	again[24] = again[25] = 0xff;
	cr_expect_eq(memcmp(again, buf, n), 0);
}

Test(fuzz_regression, ipv6_length_bound_is_its_own)
{
	struct uroce_wire_hdr h;

	/* IPv6 payload length = UDP 8 + BTH 12 + RETH 16 + payload + ICRC 4 <= 65535 */
	hdr_for(&h, 6, UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_WRITE_ONLY));
	cr_expect_gt(uroce_wire_frame_len(&h, 65535 - 8 - 28 - 4 - 3), 0);
	cr_expect_eq(uroce_wire_frame_len(&h, 65535 - 8 - 28 - 4 - 2), 0);
}
