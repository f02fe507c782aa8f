/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uroce-pcap: decode RoCEv2 captures with lib/wire. For each packet: parse and validate,
 * verify the ICRC, rebuild it from the parsed fields and compare bytes. Prints one line
 * per packet (-v) and a summary per file; exits 1 if any packet failed.
 *
 *   uroce-pcap [-v] [-x DIR] FILE.pcap...
 *     -v      one line per packet
 *     -x DIR  also write each RoCEv2 frame to DIR/<file>-<n> (a fuzzing corpus)
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

static int decode_file(const char *file, int verbose, const char *extract_dir)
{
	static struct uroce_pcap_reader r;
	static uint8_t rebuilt[UROCE_PCAP_SNAPLEN_MAX];
	static struct file_stats st;
	struct uroce_pcap_record rec;
	struct uroce_wire_pkt pkt;
	uint64_t bad;
	int rc;

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
				printf("%6" PRIu64 " error: %s\n", r.index, uroce_wire_strerror(err));
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
			rc = -EIO;
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
			printf("    error %-34s %8" PRIu64 "\n", uroce_wire_strerror(e), st.errors[e]);
	if (st.rebuild_mismatch)
		printf("    error %-34s %8" PRIu64 "\n", "rebuild_differs", st.rebuild_mismatch);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *extract_dir = NULL;
	int verbose = 0, opt, status = 0;

	while ((opt = getopt(argc, argv, "vx:h")) != -1) {
		switch (opt) {
		case 'v':
			verbose = 1;
			break;
		case 'x':
			extract_dir = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s [-v] [-x DIR] FILE.pcap...\n", argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: %s [-v] [-x DIR] FILE.pcap...\n", argv[0]);
		return 2;
	}
	for (int i = optind; i < argc; i++)
		if (decode_file(argv[i], verbose, extract_dir) != 0)
			status = 1;
	return status;
}
