/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uroce-pcap: decode RoCEv2 captures with lib/wire. For each packet: parse and validate,
 * verify the ICRC, rebuild it from the parsed fields and compare bytes. Prints one line
 * per packet (-v) and a summary per file; exits 1 if any packet failed.
 *
 *   uroce-pcap [-v] [-x DIR [-t]] FILE.pcap...
 *     -v      one line per packet
 *     -x DIR  also write each RoCEv2 frame to DIR/<file>-<n> (a fuzzing corpus)
 *     -t      with -x, also write variants the captures lack, made with lib/wire's
 *             builder: the frame over IPv6, with an 802.1Q tag, with a UDP checksum, and
 *             a CNP to its QP (rxe's captures are all untagged IPv4 without checksums)
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uroce_capture.h"
#include "uroce_wire.h"

struct file_stats {
	uint64_t packets;
	uint64_t ok;
	uint64_t not_roce;
	uint64_t errors[UROCE_WIRE_E__COUNT];
	uint64_t rebuild_mismatch;
	uint64_t per_opcode[256];
	uint64_t payload_bytes;
};

static void print_ip(const struct uroce_wire_hdr *h, const uint8_t *a)
{
	if (h->ip_version == 4)
		printf("%u.%u.%u.%u", a[12], a[13], a[14], a[15]);
	else
		for (int i = 0; i < 16; i += 2)
			printf("%x%s", a[i] << 8 | a[i + 1], i < 14 ? ":" : "");
}

static void print_packet(uint64_t n, const struct uroce_wire_pkt *p)
{
	const struct uroce_wire_hdr *h = &p->hdr;
	const struct uroce_opcode_info *oi = uroce_opcode_info(h->bth.opcode);

	printf("%6" PRIu64 " ", n);
	print_ip(h, h->ip_src);
	printf(" > ");
	print_ip(h, h->ip_dst);
	printf(" %s qp=0x%06x psn=%u%s len=%u", oi->name, h->bth.dqpn, h->bth.psn,
	       h->bth.ack_req ? " A" : "", p->payload_len);
	if (oi->hdrs & UROCE_HDR_DETH)
		printf(" qkey=0x%08x srcqp=0x%06x", h->deth.qkey, h->deth.src_qpn);
	if (oi->hdrs & UROCE_HDR_RETH)
		printf(" va=0x%" PRIx64 " rkey=0x%x dlen=%u", h->reth.va, h->reth.rkey,
		       h->reth.dma_len);
	if (oi->hdrs & UROCE_HDR_ATOMICETH)
		printf(" va=0x%" PRIx64 " rkey=0x%x swap_add=%" PRIu64 " cmp=%" PRIu64,
		       h->atomiceth.va, h->atomiceth.rkey, h->atomiceth.swap_add,
		       h->atomiceth.compare);
	if (oi->hdrs & UROCE_HDR_AETH) {
		static const char *const kind[] = {"ACK", "RNR_NAK", "rsvd", "NAK"};
		printf(" %s/%u msn=%u", kind[uroce_aeth_type(h->aeth.syndrome)],
		       uroce_aeth_value(h->aeth.syndrome), h->aeth.msn);
	}
	if (oi->hdrs & UROCE_HDR_ATOMICACKETH)
		printf(" orig=%" PRIu64, h->atomic_orig);
	if (oi->hdrs & UROCE_HDR_IMMDT)
		printf(" imm=0x%08x", h->imm);
	if (oi->hdrs & UROCE_HDR_IETH)
		printf(" inv_rkey=0x%x", h->ieth_rkey);
	printf("\n");
}

static int write_frame(const char *dir, const char *file, uint64_t n, const uint8_t *d,
		       uint32_t len)
{
	char path[4096];
	char base[1024];
	FILE *f;

	snprintf(base, sizeof(base), "%s", file);
	snprintf(path, sizeof(path), "%s/%s-%" PRIu64, dir, basename(base), n);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(d, 1, len, f) != len) {
		fprintf(stderr, "uroce-pcap: %s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	return fclose(f);
}

/* The variants -t adds: a fuzzer does not find its way from IPv4 to a valid IPv6 frame
 * (or a tag, a checksum, a CNP) on its own. */
static int write_variants(const char *dir, const char *file, uint64_t n,
			  const struct uroce_wire_pkt *pkt)
{
	static uint8_t frame[UROCE_PCAP_SNAPLEN_MAX];
	char name[1100];
	char base[1024];
	int rc = 0;

	snprintf(base, sizeof(base), "%s", file);
	for (int v = 0; v < 4; v++) {
		static const char *const suffix[] = {"v6", "vlan", "v6csum", "cnp"};
		struct uroce_wire_hdr h = pkt->hdr;
		uint32_t plen = pkt->payload_len, len;

		if (v == 0 || v == 2) {
			/* The IPv4-mapped GID form of the addresses, as rxe's GID table has
			 * them. */
			h.ip_version = 6;
			uroce_gid_from_ipv4(h.ip_src, pkt->hdr.ip_src + 12);
			uroce_gid_from_ipv4(h.ip_dst, pkt->hdr.ip_dst + 12);
			h.ip_flow_label = h.udp_sport;
			h.udp_csum = v == 2;
		} else if (v == 1) {
			h.vlan = true;
			h.vlan_tci = 0x6005; /* PCP 3, VID 5 */
		} else {
			h.bth.opcode = UROCE_OPCODE_CNP;
			h.bth.ack_req = false;
			plen = 0;
		}
		len = uroce_wire_build(frame, sizeof(frame), &h, pkt->payload, plen);
		snprintf(name, sizeof(name), "%s-%s", basename(base), suffix[v]);
		if (len == 0 || write_frame(dir, name, n, frame, len))
			rc = -1;
	}
	return rc;
}

static int decode_file(const char *file, int verbose, const char *extract_dir, int variants)
{
	static struct uroce_pcap_reader r;
	static uint8_t rebuilt[UROCE_PCAP_SNAPLEN_MAX];
	static struct file_stats st;
	struct uroce_pcap_record rec;
	struct uroce_wire_pkt pkt;
	uint64_t bad;
	int rc, write_failed = 0;

	memset(&st, 0, sizeof(st));
	rc = uroce_pcap_open(&r, file);
	if (rc < 0) {
		fprintf(stderr, "uroce-pcap: %s: %s\n", file, strerror(-rc));
		return -1;
	}
	while ((rc = uroce_pcap_next(&r, &rec)) == 1) {
		enum uroce_wire_err err;
		uint32_t n;

		st.packets++;
		err = uroce_wire_parse(rec.data, rec.caplen, &pkt);
		if (err == UROCE_WIRE_E_ETHERTYPE || err == UROCE_WIRE_E_IP_PROTO ||
		    err == UROCE_WIRE_E_UDP_PORT) {
			st.not_roce++; /* ARP, TCP, other UDP: not ours, not an error */
			continue;
		}
		if (err == UROCE_WIRE_OK)
			err = uroce_wire_icrc_check(&pkt);
		if (err != UROCE_WIRE_OK) {
			st.errors[err]++;
			if (verbose)
				printf("%6" PRIu64 " error: %s\n", r.index,
				       uroce_wire_strerror(err));
			continue;
		}
		n = uroce_wire_build(rebuilt, sizeof(rebuilt), &pkt.hdr, pkt.payload,
				     pkt.payload_len);
		if (n != pkt.pkt_len || memcmp(rebuilt, rec.data, n) != 0) {
			st.rebuild_mismatch++;
			if (verbose)
				printf("%6" PRIu64 " error: rebuild differs\n", r.index);
			continue;
		}
		st.ok++;
		st.per_opcode[pkt.hdr.bth.opcode]++;
		st.payload_bytes += pkt.payload_len;
		if (verbose)
			print_packet(r.index, &pkt);
		if (extract_dir && write_frame(extract_dir, file, r.index, rec.data, rec.caplen))
			write_failed = 1;
		if (extract_dir && variants && write_variants(extract_dir, file, r.index, &pkt))
			write_failed = 1;
	}
	uroce_pcap_close(&r);
	if (rc < 0) {
		fprintf(stderr, "uroce-pcap: %s: damaged record after %" PRIu64 " packets\n", file,
			st.packets);
		return -1;
	}

	bad = st.rebuild_mismatch;
	for (int e = 1; e < UROCE_WIRE_E__COUNT; e++)
		bad += st.errors[e];
	printf("%s: %" PRIu64 " packets, %" PRIu64 " RoCEv2 ok (ICRC verified, rebuilt "
	       "byte-exact), %" PRIu64 " other traffic, %" PRIu64 " bad, %" PRIu64
	       " payload bytes\n",
	       file, st.packets, st.ok, st.not_roce, bad, st.payload_bytes);
	for (int o = 0; o < 256; o++)
		if (st.per_opcode[o])
			printf("    %-40s %8" PRIu64 "\n", uroce_opcode_info((uint8_t)o)->name,
			       st.per_opcode[o]);
	for (int e = 1; e < UROCE_WIRE_E__COUNT; e++)
		if (st.errors[e])
			printf("    error %-34s %8" PRIu64 "\n", uroce_wire_strerror(e),
			       st.errors[e]);
	if (st.rebuild_mismatch)
		printf("    error %-34s %8" PRIu64 "\n", "rebuild_differs", st.rebuild_mismatch);
	return bad || write_failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *extract_dir = NULL;
	int verbose = 0, variants = 0, opt, status = 0;

	while ((opt = getopt(argc, argv, "vx:th")) != -1) {
		switch (opt) {
		case 'v':
			verbose = 1;
			break;
		case 'x':
			extract_dir = optarg;
			break;
		case 't':
			variants = 1;
			break;
		default:
			fprintf(stderr, "usage: %s [-v] [-x DIR [-t]] FILE.pcap...\n", argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: %s [-v] [-x DIR [-t]] FILE.pcap...\n", argv[0]);
		return 2;
	}
	for (int i = optind; i < argc; i++)
		if (decode_file(argv[i], verbose, extract_dir, variants) != 0)
			status = 1;
	return status;
}
