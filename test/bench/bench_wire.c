/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uroce-bench-wire: what lib/wire costs per packet, against a memcpy of the same frame
 * measured in the same run.
 *
 * For each payload size the packet is an RC RDMA WRITE ONLY over IPv4 (Ethernet + IPv4 +
 * UDP + BTH + RETH + payload + ICRC), built once. Every operation runs over buffers that
 * stay in L1/L2, so this is the CPU cost of the code, not of memory.
 *
 * Method: one core (pinned to CPU 1 when there is one); the iteration count of each
 * (operation, size) is calibrated once so that a batch lasts about 30 ms (--quick: 2 ms);
 * then R repetitions (11, --quick 3, --reps N) each time one batch of every (operation,
 * size) in turn, so that noise from the rest of the machine hits all rows alike; the
 * table shows the median of the R batches and their spread ((max - min) / median).
 *
 * doc/benchmarks.md shows a run and how to read it.
 */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <isa-l.h>
#include <isa-l/crc.h>

#include "uroce_wire.h"

#ifdef UROCE_BENCH_ZLIB
#include <zlib.h>
#endif
#ifdef UROCE_BENCH_DPDK
#include <rte_cpuflags.h>
#include <rte_net_crc.h>
#include <rte_vect.h>
#include <rte_version.h>
#endif

/* The compiler must neither drop a call whose result looks unused nor hoist a call out of
 * the loop because its arguments do not change: results go into a volatile sink, pointers
 * go through an empty asm that "may change them", and every iteration ends with a memory
 * barrier (the loop body may have read or written any memory). */
#define OPAQUE(x) __asm__ volatile("" : "+r"(x))
#define BARRIER() __asm__ volatile("" ::: "memory")

static volatile uint64_t sink;

#define NSIZES 3
static const uint32_t payload_sizes[NSIZES] = {64, 1024, 4096};

#define BUF_SIZE 8192

struct ctx {
	uint32_t plen;              /* payload bytes */
	uint32_t flen;              /* frame bytes (Ethernet header to ICRC) */
	struct uroce_wire_hdr hdr;  /* the packet's headers, for the builder */
	uint8_t *frame;             /* the valid frame */
	uint8_t *payload;           /* the payload on its own, the builder's source */
	uint8_t *out;               /* build and memcpy destination */
	const uint8_t *l3;          /* IP header inside frame */
	uint32_t thl;               /* BTH + RETH */
	const uint8_t *pl;          /* payload inside frame */
	/* The bytes the ICRC covers, as one contiguous run: IP header to the end of the
	 * payload (the ICRC adds 8 virtual 0xff bytes and masks some header fields). */
	const uint8_t *span;
	uint32_t span_len;
	uint64_t failures;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the operations: each runs @n iterations and returns the elapsed nanoseconds ---- */

static uint64_t run_parse_icrc(struct ctx *c, uint64_t n)
{
	const uint8_t *f = c->frame;
	uint32_t len = c->flen;
	struct uroce_wire_pkt pkt;
	uint64_t acc = 0, bad = 0, t0, t1;

	t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		enum uroce_wire_err e;

		OPAQUE(f);
		e = uroce_wire_parse(f, len, &pkt);
		if (e == UROCE_WIRE_OK)
			e = uroce_wire_icrc_check(&pkt);
		bad += e != UROCE_WIRE_OK;
		acc += pkt.payload_len + pkt.icrc;
		BARRIER();
	}
	t1 = now_ns();
	c->failures += bad;
	sink += acc;
	return t1 - t0;
}

static uint64_t run_build_icrc(struct ctx *c, uint64_t n)
{
	const struct uroce_wire_hdr *h = &c->hdr;
	const uint8_t *pl = c->payload;
	uint8_t *out = c->out;
	uint64_t acc = 0, bad = 0, t0, t1;

	t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		uint32_t r;

		OPAQUE(h);
		OPAQUE(pl);
		OPAQUE(out);
		r = uroce_wire_build(out, BUF_SIZE, h, pl, c->plen);
		bad += r != c->flen;
		acc += r + out[r - 1];
		BARRIER();
	}
	t1 = now_ns();
	c->failures += bad;
	sink += acc;
	return t1 - t0;
}

static uint64_t run_icrc_only(struct ctx *c, uint64_t n)
{
	const uint8_t *l3 = c->l3, *pl = c->pl;
	uint64_t acc = 0, t0, t1;

	t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		uint32_t s;

		OPAQUE(l3);
		OPAQUE(pl);
		s = uroce_wire_icrc_hdrs(l3, 4, c->thl);
		s = uroce_wire_icrc_update(s, pl, c->plen); /* 64, 1024, 4096: no pad */
		acc += uroce_wire_icrc_final(s);
		BARRIER();
	}
	t1 = now_ns();
	sink += acc;
	return t1 - t0;
}

static uint64_t run_memcpy(struct ctx *c, uint64_t n)
{
	const uint8_t *src = c->frame;
	uint8_t *dst = c->out;
	size_t len = c->flen;
	uint64_t acc = 0, t0, t1;

	t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		OPAQUE(src);
		OPAQUE(dst);
		OPAQUE(len);
		memcpy(dst, src, len);
		acc += dst[len - 1];
		BARRIER();
	}
	t1 = now_ns();
	sink += acc;
	return t1 - t0;
}

static uint64_t run_crc_isal(struct ctx *c, uint64_t n)
{
	const uint8_t *p = c->span;
	uint64_t acc = 0, t0, t1;

	t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		OPAQUE(p);
		acc += crc32_gzip_refl(0, p, c->span_len);
		BARRIER();
	}
	t1 = now_ns();
	sink += acc;
	return t1 - t0;
}

#ifdef UROCE_BENCH_ZLIB
static uint64_t run_crc_zlib(struct ctx *c, uint64_t n)
{
	const uint8_t *p = c->span;
	uint64_t acc = 0, t0, t1;

	t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		OPAQUE(p);
		acc += crc32(0, p, c->span_len);
		BARRIER();
	}
	t1 = now_ns();
	sink += acc;
	return t1 - t0;
}
#endif

#ifdef UROCE_BENCH_DPDK
/* rte_net_crc keeps its choice of code in a global: each batch selects its own first. */
static uint64_t run_crc_rte(struct ctx *c, uint64_t n, enum rte_net_crc_alg alg)
{
	const uint8_t *p = c->span;
	uint64_t acc = 0, t0, t1;

	rte_net_crc_set_alg(alg);
	t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		OPAQUE(p);
		acc += rte_net_crc_calc(p, c->span_len, RTE_NET_CRC32_ETH);
		BARRIER();
	}
	t1 = now_ns();
	sink += acc;
	return t1 - t0;
}

static uint64_t run_crc_rte_avx512(struct ctx *c, uint64_t n)
{
	return run_crc_rte(c, n, RTE_NET_CRC_AVX512);
}

static uint64_t run_crc_rte_sse42(struct ctx *c, uint64_t n)
{
	return run_crc_rte(c, n, RTE_NET_CRC_SSE42);
}

/* What rte_net_crc_set_alg(RTE_NET_CRC_AVX512) ends up with (lib/net/rte_net_crc.c). */
static bool rte_avx512_usable(void)
{
	return rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512F) > 0 &&
	       rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512BW) > 0 &&
	       rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512DQ) > 0 &&
	       rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX512VL) > 0 &&
	       rte_cpu_get_flag_enabled(RTE_CPUFLAG_PCLMULQDQ) > 0 &&
	       rte_cpu_get_flag_enabled(RTE_CPUFLAG_VPCLMULQDQ) > 0 &&
	       rte_vect_get_max_simd_bitwidth() >= RTE_VECT_SIMD_512;
}
#endif

/* ---- the table ---- */

enum { OP_PARSE, OP_BUILD, OP_ICRC, OP_MEMCPY, OP_ISAL, OP_ZLIB, OP_RTE512, OP_RTE128, NOPS };

struct op {
	const char *name;
	uint64_t (*run)(struct ctx *c, uint64_t n); /* NULL: not built in or not usable */
};

static struct op ops[NOPS] = {
	[OP_PARSE] = {"parse+icrc", run_parse_icrc},
	[OP_BUILD] = {"build+icrc", run_build_icrc},
	[OP_ICRC] = {"icrc only", run_icrc_only},
	[OP_MEMCPY] = {"memcpy", run_memcpy},
	[OP_ISAL] = {"crc32 isa-l", run_crc_isal},
#ifdef UROCE_BENCH_ZLIB
	[OP_ZLIB] = {"crc32 zlib", run_crc_zlib},
#else
	[OP_ZLIB] = {"crc32 zlib", NULL},
#endif
#ifdef UROCE_BENCH_DPDK
	[OP_RTE512] = {"rte_net_crc avx512", run_crc_rte_avx512},
	[OP_RTE128] = {"rte_net_crc sse42", run_crc_rte_sse42},
#else
	[OP_RTE512] = {"rte_net_crc avx512", NULL},
	[OP_RTE128] = {"rte_net_crc sse42", NULL},
#endif
};

static void *xalloc(size_t n)
{
	void *p = aligned_alloc(64, n);

	if (p == NULL) {
		perror("aligned_alloc");
		exit(2);
	}
	memset(p, 0, n);
	return p;
}

static void die(const char *what, uint32_t plen)
{
	fprintf(stderr, "uroce-bench-wire: %s (payload %u B)\n", what, plen);
	exit(1);
}

static void ctx_init(struct ctx *c, uint32_t plen)
{
	struct uroce_wire_hdr *h = &c->hdr;
	struct uroce_wire_pkt pkt;
	static const uint8_t dmac[6] = {0x02, 0, 0, 0, 0, 0x02}, smac[6] = {0x02, 0, 0, 0, 0, 0x01};
	uint32_t crc_isal;

	memset(c, 0, sizeof(*c));
	c->plen = plen;
	c->frame = xalloc(BUF_SIZE);
	c->payload = xalloc(BUF_SIZE);
	c->out = xalloc(BUF_SIZE);
	for (uint32_t i = 0; i < plen; i++)
		c->payload[i] = (uint8_t)(i * 131 + 7);

	uroce_wire_hdr_init(h, 4, UROCE_OPCODE(UROCE_TRANSPORT_RC, UROCE_OP_WRITE_ONLY));
	memcpy(h->eth_dst, dmac, 6);
	memcpy(h->eth_src, smac, 6);
	h->ip_src[12] = 192, h->ip_src[13] = 168, h->ip_src[14] = 7, h->ip_src[15] = 1;
	h->ip_dst[12] = 192, h->ip_dst[13] = 168, h->ip_dst[14] = 7, h->ip_dst[15] = 2;
	h->ip_id = 0x1234;
	h->udp_sport = uroce_udp_sport_connected(0, 0x11, 0x12);
	h->bth.dqpn = 0x12;
	h->bth.psn = 0x345678;
	h->bth.ack_req = true;
	h->reth.va = 0x7f0000001000ull;
	h->reth.rkey = 0x1234;
	h->reth.dma_len = plen;

	c->flen = uroce_wire_build(c->frame, BUF_SIZE, h, c->payload, plen);
	if (c->flen == 0 || c->flen != uroce_wire_frame_len(h, plen))
		die("uroce_wire_build failed", plen);
	if (uroce_wire_parse(c->frame, c->flen, &pkt) != UROCE_WIRE_OK)
		die("the built frame does not parse", plen);
	if (uroce_wire_icrc_check(&pkt) != UROCE_WIRE_OK)
		die("the built frame's ICRC does not verify", plen);
	if (pkt.payload_len != plen || pkt.hdr.bth.pad != 0)
		die("unexpected payload length or pad", plen);
	c->l3 = pkt.l3;
	c->thl = uroce_opcode_info(pkt.hdr.bth.opcode)->hdr_len;
	c->pl = pkt.payload;
	c->span = pkt.l3;
	c->span_len = (uint32_t)(pkt.payload + pkt.payload_len - pkt.l3);

	/* The CRC rows compute the same function over the same bytes, or they compare
	 * nothing: check that they agree with each other, and the ICRC rows with the ICRC. */
	if (uroce_wire_icrc_update(uroce_wire_icrc_hdrs(c->l3, 4, c->thl), c->pl, plen) !=
	    pkt.icrc)
		die("icrc_hdrs + icrc_update disagree with the packet's ICRC", plen);
	crc_isal = crc32_gzip_refl(0, c->span, c->span_len);
#ifdef UROCE_BENCH_ZLIB
	if ((uint32_t)crc32(0, c->span, c->span_len) != crc_isal)
		die("zlib crc32 disagrees with ISA-L crc32_gzip_refl", plen);
#endif
#ifdef UROCE_BENCH_DPDK
	rte_net_crc_set_alg(RTE_NET_CRC_AVX512);
	if (rte_net_crc_calc(c->span, c->span_len, RTE_NET_CRC32_ETH) != crc_isal)
		die("rte_net_crc_calc (avx512) disagrees with ISA-L crc32_gzip_refl", plen);
	rte_net_crc_set_alg(RTE_NET_CRC_SSE42);
	if (rte_net_crc_calc(c->span, c->span_len, RTE_NET_CRC32_ETH) != crc_isal)
		die("rte_net_crc_calc (sse42) disagrees with ISA-L crc32_gzip_refl", plen);
#endif
	(void)crc_isal;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* "model name" from /proc/cpuinfo, with family and model: a VM may show only "AMD EPYC". */
static void cpu_model(char *out, size_t cap)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512], name[256] = "unknown", family[32] = "?", model[32] = "?";

	snprintf(out, cap, "unknown");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *v = strchr(line, ':');

		if (v == NULL)
			continue;
		if (strncmp(line, "processor", 9) == 0 && strcmp(name, "unknown") != 0)
			break; /* first CPU only */
		v++;
		while (*v == ' ' || *v == '\t')
			v++;
		v[strcspn(v, "\n")] = '\0';
		if (strncmp(line, "model name", 10) == 0)
			snprintf(name, sizeof(name), "%s", v);
		else if (strncmp(line, "cpu family", 10) == 0)
			snprintf(family, sizeof(family), "%s", v);
		else if (strncmp(line, "model\t", 6) == 0)
			snprintf(model, sizeof(model), "%s", v);
	}
	fclose(f);
	snprintf(out, cap, "%s (family %s, model %s)", name, family, model);
}

/* CPU 1 when it exists and we may run there, else wherever we are now. */
static int pin_cpu(void)
{
	cpu_set_t set;

	if (sysconf(_SC_NPROCESSORS_ONLN) > 1) {
		CPU_ZERO(&set);
		CPU_SET(1, &set);
		if (sched_setaffinity(0, sizeof(set), &set) == 0)
			return 1;
		fprintf(stderr, "uroce-bench-wire: sched_setaffinity(CPU 1): %s; not pinned\n",
			strerror(errno));
	}
	return -1;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: uroce-bench-wire [--quick] [--reps N] [--only OP]\n"
		"  --quick   3 repetitions of ~2 ms batches (CI)\n"
		"  --reps N  N repetitions (default 11; median reported)\n"
		"  --only OP that operation and memcpy only, e.g. --only parse+icrc (profiling)\n");
}

int main(int argc, char **argv)
{
	static struct ctx ctxs[NSIZES];
	static double ns[NOPS][NSIZES][64];
	static uint64_t iters[NOPS][NSIZES];
	double batch_ns = 30e6;
	int reps = 11, cpu;
	bool quick = false, reps_given = false;
	const char *only = NULL;
	char model[384], date[64];
	time_t t = time(NULL);
	double ratio4k = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			quick = true;
		} else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
			reps = atoi(argv[++i]);
			reps_given = true;
			if (reps < 1 || reps > 64) {
				fprintf(stderr, "uroce-bench-wire: --reps wants 1..64\n");
				return 2;
			}
		} else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
			only = argv[++i];
		} else {
			usage();
			return 2;
		}
	}
	if (quick) {
		batch_ns = 2e6;
		if (!reps_given) /* --reps wins over --quick's 3 */
			reps = 3;
	}

	if (only != NULL) {
		bool found = false;

		for (int o = 0; o < NOPS; o++) {
			if (strcmp(ops[o].name, only) == 0)
				found = true;
			else if (o != OP_MEMCPY) /* the baseline stays */
				ops[o].run = NULL;
		}
		if (!found) {
			fprintf(stderr, "uroce-bench-wire: no operation named '%s'\n", only);
			return 2;
		}
	}
	cpu = pin_cpu();
#ifdef UROCE_BENCH_DPDK
	/* Without rte_eal_init() EAL's SIMD limit is 0, which makes rte_net_crc fall back to
	 * its table-driven scalar code. Allow 512-bit paths as --force-max-simd-bitwidth=512
	 * would (EAL's x86 default, 256, would select SSE4.2/PCLMULQDQ). */
	uint16_t simd_before = rte_vect_get_max_simd_bitwidth();
	rte_vect_set_max_simd_bitwidth(RTE_VECT_SIMD_512);
	if (!rte_avx512_usable())
		ops[OP_RTE512].run = NULL;
	if (rte_cpu_get_flag_enabled(RTE_CPUFLAG_PCLMULQDQ) <= 0)
		ops[OP_RTE128].run = NULL;
#endif
	for (int s = 0; s < NSIZES; s++)
		ctx_init(&ctxs[s], payload_sizes[s]);

	cpu_model(model, sizeof(model));
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z", localtime(&t));
	printf("uroce-bench-wire: lib/wire per-packet cost, RC RDMA WRITE ONLY over IPv4\n");
	printf("date      %s\n", date);
	printf("cpu       %s, %ld online, pinned to %s\n", model, sysconf(_SC_NPROCESSORS_ONLN),
	       cpu >= 0 ? "CPU 1" : "nothing");
	printf("method    median of %d interleaved repetitions, batches of ~%.0f ms, "
	       "CLOCK_MONOTONIC%s\n",
	       reps, batch_ns / 1e6, quick ? " (--quick)" : "");
	printf("libs      ISA-L %d.%d.%d", ISAL_MAJOR_VERSION, ISAL_MINOR_VERSION,
	       ISAL_PATCH_VERSION);
#ifdef UROCE_BENCH_ZLIB
	printf(", zlib %s", zlibVersion());
#else
	printf(", zlib not found");
#endif
#ifdef UROCE_BENCH_DPDK
	printf(", %s (SIMD limit %u without EAL, set to 512)", rte_version(),
	       (unsigned)simd_before);
#else
	printf(", DPDK not found");
#endif
	printf("\n");
	printf("crc rows  one call over the bytes the ICRC covers: IP header to end of payload\n");
	printf("\n");

	/* Calibrate: double the count until a batch takes 1/8 of the target, then scale. */
	for (int o = 0; o < NOPS; o++) {
		if (ops[o].run == NULL)
			continue;
		for (int s = 0; s < NSIZES; s++) {
			uint64_t n = 16, el;

			ops[o].run(&ctxs[s], n); /* warm-up */
			for (;;) {
				el = ops[o].run(&ctxs[s], n);
				if ((double)el >= batch_ns / 8 || n >= (1ull << 40))
					break;
				n *= 2;
			}
			iters[o][s] = (uint64_t)((double)n * batch_ns / (double)(el ? el : 1));
			if (iters[o][s] < 1)
				iters[o][s] = 1;
		}
	}

	for (int r = 0; r < reps; r++)
		for (int s = 0; s < NSIZES; s++)
			for (int o = 0; o < NOPS; o++) {
				uint64_t el;

				if (ops[o].run == NULL)
					continue;
				el = ops[o].run(&ctxs[s], iters[o][s]);
				ns[o][s][r] = (double)el / (double)iters[o][s];
			}

	for (int s = 0; s < NSIZES; s++)
		if (ctxs[s].failures != 0) {
			fprintf(stderr, "uroce-bench-wire: %llu failed operations at %u B\n",
				(unsigned long long)ctxs[s].failures, ctxs[s].plen);
			abort();
		}

	printf("%-19s %7s %7s %9s %8s %7s %9s %7s\n", "operation", "payload", "frame",
	       "ns/op", "Mpps", "GB/s", "x memcpy", "spread");
	double med[NOPS][NSIZES] = {{0}};
	for (int s = 0; s < NSIZES; s++) {
		for (int o = 0; o < NOPS; o++) {
			if (ops[o].run == NULL)
				continue;
			qsort(ns[o][s], (size_t)reps, sizeof(double), cmp_double);
			med[o][s] = reps % 2 ? ns[o][s][reps / 2]
					     : (ns[o][s][reps / 2 - 1] + ns[o][s][reps / 2]) / 2;
		}
		for (int o = 0; o < NOPS; o++) {
			double m = med[o][s];

			if (ops[o].run == NULL)
				continue;
			printf("%-19s %7u %7u %9.1f %8.2f %7.2f %9.2f %6.1f%%\n", ops[o].name,
			       ctxs[s].plen, ctxs[s].flen, m, 1e3 / m, ctxs[s].flen / m,
			       m / med[OP_MEMCPY][s],
			       100.0 * (ns[o][s][reps - 1] - ns[o][s][0]) / m);
		}
		printf("\n");
	}
	for (int o = 0; o < NOPS; o++)
		if (ops[o].run == NULL && only == NULL)
			printf("(%s: not built in or not usable on this CPU)\n", ops[o].name);

	if (ops[OP_PARSE].run == NULL)
		return 0;
	for (int s = 0; s < NSIZES; s++) {
		double x = med[OP_PARSE][s] / med[OP_MEMCPY][s];

		printf("parse+icrc %u B = %.2f x memcpy\n", ctxs[s].plen, x);
		if (ctxs[s].plen == 4096)
			ratio4k = x;
	}
	printf("target: ICRC + parse of a 4 KiB packet costs no more than ~2x a 4 KiB memcpy: "
	       "%s (%.2f x)\n",
	       ratio4k <= 2.0 ? "PASS" : "MISS", ratio4k);
	return 0;
}
