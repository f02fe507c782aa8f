/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every packet of every capture Linux rxe made ($UROCE_PCAP_DIR) must parse, carry a
 * correct ICRC, decode to the fields Wireshark's dissector reports for it
 * (data/pcap_ref.tsv, written by gen_pcap_ref.sh), and rebuild to identical bytes.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "pcap_corpus.h"
#include "uroce_wire.h"

#define MAX_COLS 40
#define MAX_ROWS 8192

struct ref_table {
	char *cols[MAX_COLS];
	int ncols;
	char **rows[MAX_ROWS]; /* rows[i][col] is "" when tshark printed nothing */
	int nrows;
};

static struct ref_table ref;
static struct corpus corpus;

static char *next_field(char **s)
{
	char *f = *s, *tab = strchr(f, '\t');

	if (tab) {
		*tab = '\0';
		*s = tab + 1;
	} else {
		f[strcspn(f, "\n")] = '\0';
		*s = f + strlen(f);
	}
	return f;
}

static void load_ref(void)
{
	const char *path = getenv("UROCE_PCAP_REF");
	static char line[8192];
	FILE *f;
	char *s;

	cr_assert_not_null(path, "UROCE_PCAP_REF is not set (meson test sets it)");
	f = fopen(path, "r");
	cr_assert_not_null(f, "cannot open %s", path);
	cr_assert_not_null(fgets(line, sizeof(line), f));
	for (s = line; *s && ref.ncols < MAX_COLS;)
		ref.cols[ref.ncols++] = strdup(next_field(&s));
	while (fgets(line, sizeof(line), f) && ref.nrows < MAX_ROWS) {
		char **row = calloc(ref.ncols, sizeof(*row));
		s = line;
		for (int c = 0; c < ref.ncols; c++)
			row[c] = strdup(*s ? next_field(&s) : "");
		ref.rows[ref.nrows++] = row;
	}
	fclose(f);
}

static void setup(void)
{
	load_ref();
	corpus_load(&corpus);
}

static void teardown(void)
{
	for (int r = 0; r < ref.nrows; r++) {
		for (int c = 0; c < ref.ncols; c++)
			free(ref.rows[r][c]);
		free(ref.rows[r]);
	}
	for (int c = 0; c < ref.ncols; c++)
		free(ref.cols[c]);
	memset(&ref, 0, sizeof(ref));
	corpus_free(&corpus);
}

static int col(const char *name)
{
	for (int c = 0; c < ref.ncols; c++)
		if (strcmp(ref.cols[c], name) == 0)
			return c;
	cr_assert_fail("reference table has no column %s", name);
	return -1;
}

static char **find_row(const char *file, uint32_t number)
{
	int cf = col("file"), cn = col("frame.number");

	for (int r = 0; r < ref.nrows; r++)
		if (strcmp(ref.rows[r][cf], file) == 0 &&
		    strtoul(ref.rows[r][cn], NULL, 10) == number)
			return ref.rows[r];
	return NULL;
}

/* A field tshark printed must equal @want, and it must be printed exactly when lib/wire
 * says the opcode carries that header. @base is 16 for raw byte fields (immdt, ieth). */
static void expect_field(const struct corpus_frame *f, char **row, const char *name,
			 bool present, uint64_t want, int base)
{
	const char *s = row[col(name)];

	cr_expect_eq(*s != '\0', present, "%s #%u: %s %s in tshark's decode", f->file,
		     f->number, name, present ? "missing" : "unexpected");
	if (present && *s)
		cr_expect_eq(strtoull(s, NULL, base), want,
			     "%s #%u: %s is %s in tshark, 0x%llx in lib/wire", f->file, f->number,
			     name, s, (unsigned long long)want);
}

static void check_against_tshark(const struct corpus_frame *f, const struct uroce_wire_pkt *p,
				 char **row)
{
	const struct uroce_wire_hdr *h = &p->hdr;
	uint8_t hdrs = uroce_opcode_info(h->bth.opcode)->hdrs;
	char ip[INET6_ADDRSTRLEN];

	expect_field(f, row, "frame.len", true, f->len, 10);
	cr_expect_eq(p->pkt_len, f->len, "%s #%u: packet ends before the frame", f->file,
		     f->number);
	inet_ntop(AF_INET, h->ip_src + 12, ip, sizeof(ip));
	cr_expect_str_eq(row[col("ip.src")], ip, "%s #%u: ip.src", f->file, f->number);
	inet_ntop(AF_INET, h->ip_dst + 12, ip, sizeof(ip));
	cr_expect_str_eq(row[col("ip.dst")], ip, "%s #%u: ip.dst", f->file, f->number);
	expect_field(f, row, "udp.srcport", true, h->udp_sport, 10);
	expect_field(f, row, "udp.length", true, p->pkt_len - p->bth_off + UROCE_UDP_HLEN, 10);

	expect_field(f, row, "bth.opcode", true, h->bth.opcode, 10);
	expect_field(f, row, "bth.se", true, h->bth.se, 10);
	expect_field(f, row, "bth.m", true, h->bth.mig, 10);
	expect_field(f, row, "bth.padcnt", true, h->bth.pad, 10);
	expect_field(f, row, "bth.tver", true, h->bth.tver, 10);
	expect_field(f, row, "bth.p_key", true, h->bth.pkey, 10);
	expect_field(f, row, "bth.destqp", true, h->bth.dqpn, 0);
	expect_field(f, row, "bth.a", true, h->bth.ack_req, 10);
	expect_field(f, row, "bth.psn", true, h->bth.psn, 10);

	expect_field(f, row, "deth.q_key", hdrs & UROCE_HDR_DETH, h->deth.qkey, 0);
	expect_field(f, row, "deth.srcqp", hdrs & UROCE_HDR_DETH, h->deth.src_qpn, 0);
	/* Wireshark shows AtomicETH's VA and R_Key under the RETH field names. */
	if (hdrs & UROCE_HDR_ATOMICETH) {
		expect_field(f, row, "reth.va", true, h->atomiceth.va, 0);
		expect_field(f, row, "reth.r_key", true, h->atomiceth.rkey, 0);
	} else {
		expect_field(f, row, "reth.va", hdrs & UROCE_HDR_RETH, h->reth.va, 0);
		expect_field(f, row, "reth.r_key", hdrs & UROCE_HDR_RETH, h->reth.rkey, 0);
	}
	expect_field(f, row, "reth.dmalen", hdrs & UROCE_HDR_RETH, h->reth.dma_len, 10);
	expect_field(f, row, "atomiceth.swapdt", hdrs & UROCE_HDR_ATOMICETH,
		     h->atomiceth.swap_add, 10);
	expect_field(f, row, "atomiceth.cmpdt", hdrs & UROCE_HDR_ATOMICETH,
		     h->atomiceth.compare, 10);
	expect_field(f, row, "aeth.syndrome", hdrs & UROCE_HDR_AETH, h->aeth.syndrome, 10);
	expect_field(f, row, "aeth.msn", hdrs & UROCE_HDR_AETH, h->aeth.msn, 10);
	expect_field(f, row, "atomicacketh.origremdt", hdrs & UROCE_HDR_ATOMICACKETH,
		     h->atomic_orig, 10);
	expect_field(f, row, "immdt", hdrs & UROCE_HDR_IMMDT, h->imm, 16);
	expect_field(f, row, "ieth", hdrs & UROCE_HDR_IETH, h->ieth_rkey, 16);
	/* Wireshark reads the ICRC bytes as a big-endian number; they are sent LSB first. */
	expect_field(f, row, "invariant.crc", true, __builtin_bswap32(p->icrc), 0);
}

TestSuite(pcap, .init = setup, .fini = teardown, .timeout = 120);

Test(pcap, every_capture_packet_parses_verifies_matches_tshark_and_rebuilds)
{
	static uint8_t rebuilt[16384];
	uint32_t opcodes_seen[256] = {0}, distinct = 0;

	cr_assert_eq((uint32_t)ref.nrows, corpus.count,
		     "reference table has %d rows for %u captured frames: regenerate it with "
		     "test/wire/gen_pcap_ref.sh",
		     ref.nrows, corpus.count);
	cr_assert_geq(corpus.files, 19);

	for (uint32_t i = 0; i < corpus.count; i++) {
		const struct corpus_frame *f = &corpus.frames[i];
		struct uroce_wire_pkt pkt;
		enum uroce_wire_err err;
		char **row = find_row(f->file, f->number);
		uint32_t n;

		cr_assert_not_null(row, "%s #%u: not in the reference table", f->file, f->number);
		err = uroce_wire_parse(f->data, f->len, &pkt);
		cr_assert_eq(err, UROCE_WIRE_OK, "%s #%u: parse: %s", f->file, f->number,
			     uroce_wire_strerror(err));
		cr_assert_eq(uroce_wire_icrc_check(&pkt), UROCE_WIRE_OK,
			     "%s #%u: ICRC 0x%08x, computed 0x%08x", f->file, f->number, pkt.icrc,
			     uroce_wire_icrc_compute(&pkt));
		check_against_tshark(f, &pkt, row);

		n = uroce_wire_build(rebuilt, sizeof(rebuilt), &pkt.hdr, pkt.payload,
				     pkt.payload_len);
		cr_assert_eq(n, f->len, "%s #%u: rebuilt %u bytes of %u", f->file, f->number, n,
			     f->len);
		for (uint32_t b = 0; b < n; b++)
			cr_assert_eq(rebuilt[b], f->data[b],
				     "%s #%u: rebuilt byte %u is 0x%02x, captured 0x%02x", f->file,
				     f->number, b, rebuilt[b], f->data[b]);
		if (opcodes_seen[pkt.hdr.bth.opcode]++ == 0)
			distinct++;
	}
	/* The captures hold RC, UC and UD traffic: guard against a corpus that shrank. */
	cr_expect_geq(distinct, 20, "only %u distinct opcodes in the captures", distinct);
}

Test(pcap, link_layer_padding_after_the_datagram_is_ignored)
{
	static uint8_t padded[16384];

	for (uint32_t i = 0; i < corpus.count; i++) {
		const struct corpus_frame *f = &corpus.frames[i];
		struct uroce_wire_pkt a, b;

		memcpy(padded, f->data, f->len);
		memset(padded + f->len, 0xa5, 60);
		cr_assert_eq(uroce_wire_parse(f->data, f->len, &a), UROCE_WIRE_OK);
		cr_assert_eq(uroce_wire_parse(padded, f->len + 60, &b), UROCE_WIRE_OK);
		cr_assert_eq(b.pkt_len, a.pkt_len);
		cr_assert_eq(b.payload_len, a.payload_len);
		cr_assert_eq(uroce_wire_icrc_check(&b), UROCE_WIRE_OK);
	}
}

Test(pcap, udp_source_ports_follow_rxe)
{
	/* RC/UC: both directions use rdma_get_udp_sport(0, lqpn, rqpn), symmetric in the QPNs;
	 * UD: the hash of the sender's own QPN. Take the pairs from the captures themselves. */
	for (uint32_t i = 0; i < corpus.count; i++) {
		const struct corpus_frame *f = &corpus.frames[i];
		struct uroce_wire_pkt pkt;

		cr_assert_eq(uroce_wire_parse(f->data, f->len, &pkt), UROCE_WIRE_OK);
		if (UROCE_OPCODE_TRANSPORT(pkt.hdr.bth.opcode) == UROCE_TRANSPORT_UD)
			cr_expect_eq(pkt.hdr.udp_sport, uroce_udp_sport_qpn(pkt.hdr.deth.src_qpn),
				     "%s #%u: UD sport %u", f->file, f->number, pkt.hdr.udp_sport);
	}
	uint32_t pairs_checked = 0;

	/* rc_send_only.pcap: QP 0x51 <-> QP 0x53; atomic_cswap.pcap: 0x5a <-> 0x5c. */
	cr_expect_eq(uroce_udp_sport_connected(0, 0x51, 0x53), 55875);
	cr_expect_eq(uroce_udp_sport_connected(0, 0x53, 0x51), 55875);
	cr_expect_eq(uroce_udp_sport_connected(0, 0x5a, 0x5c), 57432);
	/* Every RC ACK names the requester QP; its partner is the QP that the requester's
	 * requests (same capture, opposite direction) are sent to. rdma_cm connections carry
	 * a flow label in the CM REQ and the port follows it: that is the CM's business. */
	for (uint32_t i = 0; i < corpus.count; i++) {
		const struct corpus_frame *f = &corpus.frames[i];
		struct uroce_wire_pkt pkt;

		if (strncmp(f->file, "rdma_cm", 7) == 0)
			continue;
		cr_assert_eq(uroce_wire_parse(f->data, f->len, &pkt), UROCE_WIRE_OK);
		if (pkt.hdr.bth.opcode != UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_ACKNOWLEDGE))
			continue;
		for (uint32_t j = 0; j < corpus.count; j++) {
			struct uroce_wire_pkt req;

			if (strcmp(corpus.frames[j].file, f->file) != 0)
				continue;
			cr_assert_eq(
				uroce_wire_parse(corpus.frames[j].data, corpus.frames[j].len, &req),
				UROCE_WIRE_OK);
			if (!(uroce_opcode_info(req.hdr.bth.opcode)->flags & UROCE_OPF_REQ) ||
			    req.hdr.udp_sport != pkt.hdr.udp_sport ||
			    memcmp(req.hdr.ip_src, pkt.hdr.ip_dst, 16) != 0 ||
			    UROCE_OPCODE_TRANSPORT(req.hdr.bth.opcode) != UROCE_TRANSPORT_RC)
				continue;
			cr_expect_eq(
				pkt.hdr.udp_sport,
				uroce_udp_sport_connected(0, pkt.hdr.bth.dqpn, req.hdr.bth.dqpn),
				"%s #%u: sport %u for QPs 0x%x/0x%x", f->file, f->number,
				pkt.hdr.udp_sport, pkt.hdr.bth.dqpn, req.hdr.bth.dqpn);
			pairs_checked++;
			break;
		}
	}
	cr_expect_gt(pairs_checked, 100, "only %u ACK/request pairs found", pairs_checked);
}
