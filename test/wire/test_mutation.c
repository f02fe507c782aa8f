/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Damage proofs. For one packet of each opcode in each capture, and for IPv6 and VLAN
 * versions of them:
 * - every single-byte change from the IP header to the ICRC either fails a named
 *   validation (parse error or ICRC) or lands in a field that the ICRC deliberately does
 *   not cover (a variant field: UDP checksum, BTH byte 4, IPv6 traffic class / flow label /
 *   hop limit), and then the parsed view carries the new value: rebuilding it gives the
 *   mutated bytes back;
 * - every truncation fails cleanly. Each truncated copy sits in a buffer of exactly its
 *   length, so the sanitizer build (-Db_sanitize=address) catches any read past the end.
 * Ethernet addresses are outside the ICRC (the link's FCS protects them); a change there
 * parses and shows in the view.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "pcap_corpus.h"
#include "uroce_wire.h"

static struct corpus corpus;

struct sample {
	uint8_t *data;
	uint32_t len;
	char what[300];
};

#define MAX_SAMPLES 256
static struct sample samples[MAX_SAMPLES];
static int nsamples;

static void add_sample(const uint8_t *d, uint32_t len, const char *what)
{
	cr_assert_lt(nsamples, MAX_SAMPLES);
	samples[nsamples].data = malloc(len);
	memcpy(samples[nsamples].data, d, len);
	samples[nsamples].len = len;
	snprintf(samples[nsamples].what, sizeof(samples[nsamples].what), "%s", what);
	nsamples++;
}

/* Re-expresses a captured packet over IPv6, with a VLAN tag, or with its payload cut
 * to nothing, through the builder. */
static void add_variant(const struct uroce_wire_pkt *p, const char *what, bool v6, bool vlan,
			bool empty)
{
	static uint8_t buf[16384];
	struct uroce_wire_hdr h = p->hdr;
	char name[320];
	uint32_t n;

	if (v6) {
		/* ::ffff:198.18.0.x is what rxe's GID table holds for these hosts; use a
		 * global address instead to exercise every byte of the IPv6 header. */
		static const uint8_t src[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
						0,    0,    0,    0,    0, 0, 0, 1};
		h.ip_version = 6;
		memcpy(h.ip_src, src, 16);
		memcpy(h.ip_dst, src, 16);
		h.ip_dst[15] = 2;
		h.ip_tos = 0x68;             /* DSCP 26 */
		h.ip_flow_label = 0x12345;
	}
	if (vlan) {
		h.vlan = true;
		h.vlan_tci = 0x6005; /* PCP 3, VID 5 */
	}
	n = uroce_wire_build(buf, sizeof(buf), &h, p->payload, empty ? 0 : p->payload_len);
	cr_assert_gt(n, 0);
	snprintf(name, sizeof(name), "%s%s%s%s", what, v6 ? " ipv6" : "", vlan ? " vlan" : "",
		 empty ? " empty" : "");
	add_sample(buf, n, name);
}

static void setup(void)
{
	bool seen[64][256];

	memset(seen, 0, sizeof(seen));
	corpus_load(&corpus);
	for (uint32_t i = 0, file = 0; i < corpus.count; i++) {
		const struct corpus_frame *f = &corpus.frames[i];
		struct uroce_wire_pkt pkt;
		char what[300];

		if (i > 0 && strcmp(f->file, corpus.frames[i - 1].file) != 0)
			file++;
		cr_assert_eq(uroce_wire_parse(f->data, f->len, &pkt), UROCE_WIRE_OK);
		if (seen[file][pkt.hdr.bth.opcode])
			continue;
		seen[file][pkt.hdr.bth.opcode] = true;
		snprintf(what, sizeof(what), "%s #%u", f->file, f->number);
		add_sample(f->data, f->len, what);
		/* Variants of the first sample of each opcode keep the run time modest. */
		if (file == 0 || pkt.payload_len <= 1024) {
			add_variant(&pkt, what, true, false, false);
			add_variant(&pkt, what, false, true, false);
		}
		/* Zero-length messages are legal (an empty SEND, a WRITE with immediate only). */
		if (pkt.payload_len > 0 && pkt.payload_len <= 1024)
			add_variant(&pkt, what, false, false, true);
	}
}

static void teardown(void)
{
	for (int i = 0; i < nsamples; i++)
		free(samples[i].data);
	nsamples = 0;
	corpus_free(&corpus);
}

TestSuite(damage, .init = setup, .fini = teardown, .timeout = 300);

/* Offsets (relative to the IP header) of the bytes the ICRC masks. */
static bool icrc_masked(const struct uroce_wire_pkt *p, uint32_t off)
{
	uint32_t udp = p->bth_off - UROCE_UDP_HLEN;

	if (off == udp + 6 || off == udp + 7 || off == p->bth_off + 4u)
		return true;
	if (p->hdr.ip_version == 6)
		return off == p->l3_off || off == p->l3_off + 1u || off == p->l3_off + 2u ||
		       off == p->l3_off + 3u || off == p->l3_off + 7u;
	/* IPv4 TOS, TTL and checksum are masked too, but the header checksum covers them. */
	return false;
}

Test(damage, every_single_byte_change_is_caught_or_is_a_variant_field)
{
	static uint8_t m[16384], rebuilt[16384];
	uint64_t caught = 0, variant = 0, by_err[UROCE_WIRE_E__COUNT] = {0};

	cr_assert_gt(nsamples, 40);
	for (int s = 0; s < nsamples; s++) {
		const struct sample *smp = &samples[s];
		struct uroce_wire_pkt orig;

		cr_assert_eq(uroce_wire_parse(smp->data, smp->len, &orig), UROCE_WIRE_OK, "%s",
			     smp->what);
		cr_assert_eq(uroce_wire_icrc_check(&orig), UROCE_WIRE_OK, "%s", smp->what);
		memcpy(m, smp->data, smp->len);
		for (uint32_t off = orig.l3_off; off < smp->len; off++) {
			for (int v = 0; v < 256; v++) {
				struct uroce_wire_pkt p;
				enum uroce_wire_err err;
				uint32_t n;

				if (v == smp->data[off])
					continue;
				m[off] = (uint8_t)v;
				err = uroce_wire_parse(m, smp->len, &p);
				if (err == UROCE_WIRE_OK)
					err = uroce_wire_icrc_check(&p);
				if (err != UROCE_WIRE_OK) {
					caught++;
					by_err[err]++;
					continue;
				}
				cr_assert(icrc_masked(&orig, off),
					  "%s: byte %u set to 0x%02x went unnoticed", smp->what,
					  off, v);
				n = uroce_wire_build(rebuilt, sizeof(rebuilt), &p.hdr, p.payload,
						     p.payload_len);
				cr_assert_eq(n, smp->len);
				cr_assert_eq(
					memcmp(rebuilt, m, n), 0,
					"%s: byte %u = 0x%02x accepted but not carried in the view",
					smp->what, off, v);
				variant++;
			}
			m[off] = smp->data[off];
		}
	}
	cr_log_info("%lu mutants caught, %lu in variant fields", (unsigned long)caught,
		    (unsigned long)variant);
	/* The mutants must exercise the named validations, not only the ICRC. */
	cr_expect_gt(by_err[UROCE_WIRE_E_ICRC], 0);
	cr_expect_gt(by_err[UROCE_WIRE_E_IP_CSUM], 0);
	cr_expect_gt(by_err[UROCE_WIRE_E_IP_VERSION], 0);
	cr_expect_gt(by_err[UROCE_WIRE_E_IP_TOTAL_LEN], 0);
	cr_expect_gt(by_err[UROCE_WIRE_E_IP_FRAGMENT], 0);
	cr_expect_gt(by_err[UROCE_WIRE_E_IP_PROTO], 0);
	cr_expect_gt(by_err[UROCE_WIRE_E_UDP_LEN], 0);
	cr_expect_gt(by_err[UROCE_WIRE_E_UDP_PORT], 0);
	cr_expect_gt(by_err[UROCE_WIRE_E_UDP_CSUM], 0);
	cr_expect_gt(by_err[UROCE_WIRE_E_BTH_TVER], 0);
	cr_expect_gt(by_err[UROCE_WIRE_E_OPCODE], 0);
	cr_expect_gt(by_err[UROCE_WIRE_E_PAYLOAD], 0);
	cr_expect_gt(by_err[UROCE_WIRE_E_PAD], 0);
	cr_expect_gt(variant, 0);
}

/* What lib/ipstack hands the transport: the parse from a checked IP header on gives what
 * the whole parse gives, on every sample and on each byte change from the UDP header on
 * (the IP header is the caller's to check), and refuses IPv4's reserved flag bit. */
Test(damage, uroce_wire_parse_checked_ip_is_the_whole_parse_past_the_ip_header)
{
	static uint8_t m[16384];

	for (int s = 0; s < nsamples; s++) {
		const struct sample *smp = &samples[s];
		struct uroce_wire_pkt whole, checked;
		uint32_t l3, udp, end;

		memset(&whole, 0, sizeof(whole));
		memset(&checked, 0, sizeof(checked));
		cr_assert_eq(uroce_wire_parse(smp->data, smp->len, &whole), UROCE_WIRE_OK);
		cr_assert_eq(uroce_wire_parse_checked_ip(smp->data, whole.l3_off, &checked),
			     UROCE_WIRE_OK, "%s", smp->what);
		cr_assert_eq(memcmp(&whole, &checked, sizeof(whole)), 0, "%s", smp->what);
		l3 = whole.l3_off;
		udp = whole.bth_off - UROCE_UDP_HLEN;
		end = whole.pkt_len;
		memcpy(m, smp->data, smp->len);
		for (uint32_t off = udp; off < end; off++) {
			m[off] ^= 0x5a;
			cr_assert_eq(uroce_wire_parse_checked_ip(m, l3, &checked),
				     uroce_wire_parse(m, smp->len, &whole), "%s: byte %u",
				     smp->what, off);
			m[off] = smp->data[off];
		}
		if (whole.hdr.ip_version == 4) {
			m[l3 + 6] |= 0x80;
			cr_assert_eq(uroce_wire_parse_checked_ip(m, l3, &checked),
				     UROCE_WIRE_E_IP_FRAGMENT, "%s", smp->what);
		}
	}
}

Test(damage, ethernet_addresses_are_outside_the_icrc)
{
	for (int s = 0; s < nsamples; s++) {
		struct uroce_wire_pkt p;
		uint8_t *m = malloc(samples[s].len);

		memcpy(m, samples[s].data, samples[s].len);
		m[0] ^= 0x01;
		m[11] ^= 0x80;
		cr_assert_eq(uroce_wire_parse(m, samples[s].len, &p), UROCE_WIRE_OK);
		cr_expect_eq(uroce_wire_icrc_check(&p), UROCE_WIRE_OK);
		cr_expect_eq(p.hdr.eth_dst[0], samples[s].data[0] ^ 0x01);
		cr_expect_eq(p.hdr.eth_src[5], samples[s].data[11] ^ 0x80);
		free(m);
	}
}

Test(damage, every_truncation_fails_cleanly_without_reading_past_the_end)
{
	for (int s = 0; s < nsamples; s++) {
		for (uint32_t len = 0; len < samples[s].len; len++) {
			/* Exactly @len bytes on the heap: ASan reports a read of byte len. */
			uint8_t *t = malloc(len ? len : 1);
			struct uroce_wire_pkt p;
			enum uroce_wire_err err;

			memcpy(t, samples[s].data, len);
			err = uroce_wire_parse(t, len, &p);
			cr_assert_neq(err, UROCE_WIRE_OK, "%s cut to %u bytes parsed",
				      samples[s].what, len);
			free(t);
		}
	}
}

Test(damage, truncation_errors_name_the_layer_that_is_cut)
{
	const struct sample *s = &samples[0];
	struct uroce_wire_pkt p;

	cr_expect_eq(uroce_wire_parse(s->data, 0, &p), UROCE_WIRE_E_ETH_TRUNC);
	cr_expect_eq(uroce_wire_parse(s->data, 13, &p), UROCE_WIRE_E_ETH_TRUNC);
	cr_expect_eq(uroce_wire_parse(s->data, 14 + 19, &p), UROCE_WIRE_E_IP_TRUNC);
	/* Any cut inside the datagram leaves the IP total length pointing past the end. */
	cr_expect_eq(uroce_wire_parse(s->data, 14 + 20, &p), UROCE_WIRE_E_IP_TOTAL_LEN);
	cr_expect_eq(uroce_wire_parse(s->data, s->len - 1, &p), UROCE_WIRE_E_IP_TOTAL_LEN);
}
