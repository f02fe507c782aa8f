/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uroce-bench-transport: the ceilings of lib/transport. Two endpoints on one core joined
 * by an in-memory lossless wire (a FIFO of frame copies, as a NIC ring would hold them):
 * messages/s for 8 B SEND and 8 B RDMA WRITE, and Gbit/s of payload for 64 KiB RDMA
 * WRITE at path MTU 1024 and 4096, each with and without the ICRC. Beside them, in the
 * same run, memcpy of the same payload bytes. "+10k" repeats a case with 10,000 idle QPs
 * in RTS on each device: the work loop must cost what the busy QPs cost. Also, in the
 * same run, memcpy of the same payload bytes (the floor any software transport pays once
 * per copy; the wire here copies each frame once more).
 *
 *   uroce-bench-transport [--quick] [--reps N] [--case TEXT]
 *
 * --case runs only the cases whose name and MTU/ICRC columns contain TEXT (e.g.
 * "SEND 8 B 1024 yes"; "memcpy" for the baseline alone), so that a profiler sees one
 * of them alone.
 *
 * Method: R repetitions of a timed batch per case (~0.25 s each), cases interleaved
 * within each repetition, median reported; one core, pinned.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "uroce_transport.h"

#define WIRE_SLOTS 512 /* > the 128-PSN send window plus ACKs: all in flight */
#define SLOT_BYTES 4352
#define DEPTH 64 /* WRs kept in flight per QP */
#define BUFS 4   /* message buffers cycled: the working set stays in cache */

struct wire {
	uint8_t (*slot)[SLOT_BYTES];
	uint32_t len[WIRE_SLOTS];
	int dst[WIRE_SLOTS];
	uint32_t head, tail;
	uint64_t frames;
};

struct end {
	struct wire *w;
	int peer;
};

static struct wire wire;
static struct end ends[2];

static int wire_tx(void *ctx, const uint8_t *frame, uint32_t len)
{
	struct end *e = ctx;
	struct wire *w = e->w;
	uint32_t i;

	if (w->tail - w->head == WIRE_SLOTS || len > SLOT_BYTES)
		return -EAGAIN;
	i = w->tail++ % WIRE_SLOTS;
	memcpy(w->slot[i], frame, len);
	w->len[i] = len;
	w->dst[i] = e->peer;
	w->frames++;
	return 0;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A batch's cost: wall time, and the CPU time this process got (what another task on
 * the same core cannot add to, on a shared machine). */
struct cost {
	uint64_t wall_ns, cpu_ns;
};

static struct cost cost_start(void)
{
	return (struct cost){clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_PROCESS_CPUTIME_ID)};
}

static struct cost cost_since(struct cost t0)
{
	return (struct cost){clock_ns(CLOCK_MONOTONIC) - t0.wall_ns,
			     clock_ns(CLOCK_PROCESS_CPUTIME_ID) - t0.cpu_ns};
}

enum op { OP_SEND, OP_WRITE };

struct bench_case {
	const char *name;
	enum op op;
	uint32_t size;
	enum ibv_mtu mtu;
	bool icrc;
	uint32_t idle_qps; /* extra RTS QPs per device that never send: the loop must not care */
	double results[64], cpu_results[64]; /* ns per message: wall, CPU */
	int nres;
	uint64_t frames_per_msg_x1000;
	char label[48]; /* name, MTU, ICRC: what --case matches */
	bool skip;      /* not chosen by --case */
	bool baseline;  /* memcpy: no MTU, ICRC or frames */
};

struct setup {
	struct uroce_tp_dev *dev[2];
	struct uroce_tp_pd *pd[2];
	struct uroce_tp_mr *mr[2];
	struct uroce_tp_cq *scq[2], *rcq[2];
	struct uroce_tp_qp *qp[2];
	struct uroce_tp_qp **idle[2];
	uint8_t *mem[2];
	uint32_t key[2];
};

#define MEM_BYTES (BUFS * (64u << 10))

static void die(const char *what)
{
	fprintf(stderr, "uroce-bench-transport: %s failed\n", what);
	exit(1);
}

static void setup_pair(struct setup *s, const struct bench_case *c)
{
	for (int i = 0; i < 2; i++) {
		struct uroce_tp_dev_cfg cfg;
		struct uroce_tp_qp_init init = {0};

		uroce_tp_dev_cfg_init(&cfg);
		cfg.mac[0] = 2;
		cfg.mac[5] = (uint8_t)(i + 1);
		uroce_gid_from_ipv4(cfg.gid[0].raw, (const uint8_t[4]){10, 0, 0, (uint8_t)(i + 1)});
		cfg.gid_count = 1;
		cfg.tx = wire_tx;
		cfg.io_ctx = &ends[i];
		cfg.no_icrc = !c->icrc;
		cfg.seed = 7 + (uint64_t)i;
		ends[i].w = &wire;
		ends[i].peer = 1 - i;
		s->dev[i] = uroce_tp_dev_create(&cfg);
		s->pd[i] = uroce_tp_alloc_pd(s->dev[i]);
		s->mem[i] = malloc(MEM_BYTES);
		if (s->mem[i])
			memset(s->mem[i], 0x5a, MEM_BYTES); /* touched now, not in the timed loop */
		s->mr[i] = uroce_tp_reg_mr(s->pd[i], (uint64_t)(uintptr_t)s->mem[i], s->mem[i],
					   MEM_BYTES,
					   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!s->dev[i] || !s->pd[i] || !s->mem[i] || !s->mr[i])
			die("setup");
		uroce_tp_mr_keys(s->mr[i], &s->key[i], NULL);
		s->scq[i] = uroce_tp_create_cq(s->dev[i], 4 * DEPTH);
		s->rcq[i] = uroce_tp_create_cq(s->dev[i], 4 * DEPTH);
		init.qp_type = IBV_QPT_RC;
		init.send_cq = s->scq[i];
		init.recv_cq = s->rcq[i];
		init.cap.max_send_wr = DEPTH;
		init.cap.max_recv_wr = DEPTH;
		init.cap.max_send_sge = 1;
		init.cap.max_recv_sge = 1;
		s->qp[i] = uroce_tp_create_qp(s->pd[i], &init);
		if (!s->qp[i])
			die("create_qp");
	}
	for (int i = 0; i < 2; i++) {
		struct ibv_qp_attr a;
		uint8_t dmac[6] = {2, 0, 0, 0, 0, (uint8_t)(2 - i)};
		int rc;

		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		rc = uroce_tp_modify_qp(s->qp[i], &a,
					IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						IBV_QP_ACCESS_FLAGS,
					NULL, 0);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = c->mtu;
		a.dest_qp_num = uroce_tp_qp_num(s->qp[1 - i]);
		a.rq_psn = 0x100;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 1;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		uroce_gid_from_ipv4(a.ah_attr.grh.dgid.raw,
				    (const uint8_t[4]){10, 0, 0, (uint8_t)(2 - i)});
		rc |= uroce_tp_modify_qp(s->qp[i], &a,
					 IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
						 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
					 dmac, 0);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 0x100;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		rc |= uroce_tp_modify_qp(s->qp[i], &a,
					 IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
						 IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
						 IBV_QP_MAX_QP_RD_ATOMIC,
					 NULL, 0);
		if (rc)
			die("modify_qp");
	}
}

/* QPs in RTS with nothing to do, as a daemon serving many applications holds them. */
static void add_idle_qps(struct setup *s, const struct bench_case *c)
{
	for (int i = 0; i < 2; i++) {
		s->idle[i] = calloc(c->idle_qps ? c->idle_qps : 1, sizeof(*s->idle[i]));
		for (uint32_t k = 0; k < c->idle_qps; k++) {
			struct uroce_tp_qp_init init = {
				.qp_type = IBV_QPT_UD,
				.send_cq = s->scq[i],
				.recv_cq = s->rcq[i],
				.cap = {.max_send_wr = 1, .max_recv_wr = 1}};
			struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 1};
			int rc;

			s->idle[i][k] = uroce_tp_create_qp(s->pd[i], &init);
			if (!s->idle[i][k])
				die("create idle qp");
			rc = uroce_tp_modify_qp(s->idle[i][k], &a,
						IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
							IBV_QP_QKEY,
						NULL, 0);
			a.qp_state = IBV_QPS_RTR;
			rc |= uroce_tp_modify_qp(s->idle[i][k], &a, IBV_QP_STATE, NULL, 0);
			a.qp_state = IBV_QPS_RTS;
			rc |= uroce_tp_modify_qp(s->idle[i][k], &a, IBV_QP_STATE | IBV_QP_SQ_PSN,
						 NULL, 0);
			if (rc)
				die("modify idle qp");
		}
	}
}

static void teardown(struct setup *s, const struct bench_case *c)
{
	for (int i = 0; i < 2; i++) {
		for (uint32_t k = 0; k < c->idle_qps; k++)
			uroce_tp_destroy_qp(s->idle[i][k]);
		free(s->idle[i]);
		uroce_tp_destroy_qp(s->qp[i]);
		uroce_tp_destroy_cq(s->scq[i]);
		uroce_tp_destroy_cq(s->rcq[i]);
		uroce_tp_dereg_mr(s->mr[i]);
		uroce_tp_dealloc_pd(s->pd[i]);
		uroce_tp_dev_destroy(s->dev[i]);
		free(s->mem[i]);
	}
	wire.head = wire.tail = 0;
}

static void post_one(struct setup *s, const struct bench_case *c, uint32_t k)
{
	struct uroce_tp_send_wqe w;
	uint64_t off = (uint64_t)(k % BUFS) * c->size;

	memset(&w, 0, offsetof(struct uroce_tp_send_wqe, sg_list) + sizeof(w.sg_list[0]));
	w.wr_id = k;
	w.opcode = c->op == OP_SEND ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
	w.send_flags = IBV_SEND_SIGNALED;
	w.remote_addr = (uint64_t)(uintptr_t)s->mem[1] + off;
	w.rkey = s->key[1];
	w.num_sge = 1;
	w.sg_list[0].addr = (uint64_t)(uintptr_t)s->mem[0] + off;
	w.sg_list[0].length = c->size;
	w.sg_list[0].lkey = s->key[0];
	if (uroce_tp_post_send(s->qp[0], &w, 0))
		die("post_send");
}

static void post_recv(struct setup *s, const struct bench_case *c, uint32_t k)
{
	struct uroce_tp_recv_wqe r;

	r.wr_id = k;
	r.num_sge = 1;
	r.sg_list[0].addr = (uint64_t)(uintptr_t)s->mem[1] + (uint64_t)(k % BUFS) * c->size;
	r.sg_list[0].length = c->size;
	r.sg_list[0].lkey = s->key[1];
	if (uroce_tp_post_recv(s->qp[1], &r))
		die("post_recv");
}

/* Runs @msgs messages; returns what they cost. */
static struct cost run(const struct bench_case *c, uint64_t msgs)
{
	struct setup s;
	struct ibv_wc wc[64];
	uint64_t posted = 0, done = 0, frames0;
	struct cost t;

	setup_pair(&s, c);
	add_idle_qps(&s, c);
	if (c->op == OP_SEND)
		for (uint32_t k = 0; k < DEPTH; k++)
			post_recv(&s, c, k);
	frames0 = wire.frames;
	t = cost_start();
	while (done < msgs) {
		int n;

		while (posted < msgs && posted - done < DEPTH)
			post_one(&s, c, (uint32_t)posted++);
		uroce_tp_process(s.dev[0], 0);
		while (wire.head != wire.tail) {
			uint32_t i = wire.head++ % WIRE_SLOTS;

			uroce_tp_rx(s.dev[wire.dst[i]], wire.slot[i], wire.len[i], 0);
		}
		uroce_tp_process(s.dev[1], 0);
		while ((n = uroce_tp_poll_cq(s.rcq[1], 64, wc)) > 0)
			for (int i = 0; i < n; i++) {
				if (wc[i].status != IBV_WC_SUCCESS)
					die("receive completion");
				post_recv(&s, c, (uint32_t)wc[i].wr_id + DEPTH);
			}
		while ((n = uroce_tp_poll_cq(s.scq[0], 64, wc)) > 0) {
			for (int i = 0; i < n; i++)
				if (wc[i].status != IBV_WC_SUCCESS)
					die("send completion");
			done += (uint64_t)n;
		}
	}
	t = cost_since(t);
	((struct bench_case *)c)->frames_per_msg_x1000 = (wire.frames - frames0) * 1000 / msgs;
	teardown(&s, c);
	return t;
}

static struct cost run_memcpy(uint32_t size, uint64_t msgs)
{
	static uint8_t *a, *b;
	volatile uint8_t sink;
	struct cost t;

	if (!a) {
		a = calloc(1, 64u << 10);
		b = calloc(1, 64u << 10);
	}
	t = cost_start();
	for (uint64_t i = 0; i < msgs; i++) {
		a[i & 63] = (uint8_t)i;
		memcpy(b, a, size);
		__asm__ volatile("" ::: "memory");
	}
	t = cost_since(t);
	sink = b[0];
	(void)sink;
	return t;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return v[n / 2];
}

static void print_row(struct bench_case *c)
{
	double wall = median(c->results, c->nres), cpu = median(c->cpu_results, c->nres);

	if (c->baseline) {
		printf("%-14s %5s %5s %10.1f %10.1f %12.0f %10.2f\n", c->name, "-", "-", wall,
		       cpu, 1e9 / wall, (double)c->size * 8 / wall);
		return;
	}
	printf("%-14s %5u %5s %10.1f %10.1f %12.0f %10.2f %9.2f\n", c->name, 128u << c->mtu,
	       c->icrc ? "yes" : "no", wall, cpu, 1e9 / wall, (double)c->size * 8 / wall,
	       (double)c->frames_per_msg_x1000 / 1000);
}

int main(int argc, char **argv)
{
	static struct bench_case cases[] = {
		{.name = "SEND 8 B", .op = OP_SEND, .size = 8, .mtu = IBV_MTU_1024, .icrc = true},
		{.name = "SEND 8 B", .op = OP_SEND, .size = 8, .mtu = IBV_MTU_1024, .icrc = false},
		{.name = "SEND 8 B +10k", .op = OP_SEND, .size = 8, .mtu = IBV_MTU_1024,
		 .icrc = true, .idle_qps = 10000},
		{.name = "WRITE 8 B", .op = OP_WRITE, .size = 8, .mtu = IBV_MTU_1024, .icrc = true},
		{.name = "WRITE 8 B", .op = OP_WRITE, .size = 8, .mtu = IBV_MTU_1024,
		 .icrc = false},
		{.name = "WRITE 64 KiB", .op = OP_WRITE, .size = 65536, .mtu = IBV_MTU_1024,
		 .icrc = true},
		{.name = "WRITE 64 KiB", .op = OP_WRITE, .size = 65536, .mtu = IBV_MTU_1024,
		 .icrc = false},
		{.name = "WRITE 64 KiB", .op = OP_WRITE, .size = 65536, .mtu = IBV_MTU_4096,
		 .icrc = true},
		{.name = "WRITE 64 KiB", .op = OP_WRITE, .size = 65536, .mtu = IBV_MTU_4096,
		 .icrc = false},
	};
	const int ncases = sizeof(cases) / sizeof(cases[0]);
	struct bench_case memcpy_small = {.name = "memcpy 8 B", .size = 8, .baseline = true};
	struct bench_case memcpy_big = {.name = "memcpy 64 KiB", .size = 65536, .baseline = true};
	int reps = 7;
	double batch_s = 0.25;
	cpu_set_t set;

	const char *only = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			reps = 1, batch_s = 0.02;
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--case") && i + 1 < argc)
			only = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--quick] [--reps N] [--case TEXT]\n", argv[0]);
			return 2;
		}
	}
	for (int k = 0; k < ncases; k++) {
		snprintf(cases[k].label, sizeof(cases[k].label), "%s %u %s", cases[k].name,
			 128u << cases[k].mtu, cases[k].icrc ? "yes" : "no");
		cases[k].skip = only && !strstr(cases[k].label, only);
	}
	if (reps < 1 || reps > 64)
		reps = 7;
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0) {
		CPU_ZERO(&set);
		CPU_SET(0, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	wire.slot = malloc((size_t)WIRE_SLOTS * SLOT_BYTES);
	if (!wire.slot)
		die("malloc");
	memset(wire.slot, 0, (size_t)WIRE_SLOTS * SLOT_BYTES);

	/* Calibrate the message count per case once, then interleave repetitions. */
	uint64_t msgs[16];
	for (int k = 0; k < ncases; k++) {
		uint64_t n = cases[k].size > 1024 ? 200 : 20000;
		double t;

		if (cases[k].skip)
			continue;
		t = (double)run(&cases[k], n).wall_ns / 1e9;
		msgs[k] = (uint64_t)((double)n * batch_s / (t > 1e-6 ? t : 1e-6));
		if (msgs[k] < 100)
			msgs[k] = 100;
	}
	for (int r = 0; r < reps; r++) {
		for (int k = 0; k < ncases; k++) {
			struct bench_case *c = &cases[k];
			struct cost t;

			if (c->skip)
				continue;
			t = run(c, msgs[k]);
			c->results[c->nres] = (double)t.wall_ns / (double)msgs[k];
			c->cpu_results[c->nres++] = (double)t.cpu_ns / (double)msgs[k];
		}
		if (!only || strstr("memcpy", only)) {
			struct cost t = run_memcpy(8, 10000000);

			memcpy_small.results[r] = (double)t.wall_ns / 1e7;
			memcpy_small.cpu_results[r] = (double)t.cpu_ns / 1e7;
			t = run_memcpy(65536, 20000);
			memcpy_big.results[r] = (double)t.wall_ns / 2e4;
			memcpy_big.cpu_results[r] = (double)t.cpu_ns / 2e4;
			memcpy_small.nres = memcpy_big.nres = r + 1;
		}
	}

	printf("uroce-bench-transport: lib/transport ceilings, two RC endpoints on one core,\n");
	printf("in-memory lossless wire (each frame copied once), %d WRs in flight over %d "
	       "buffers\n"
	       "(cache-resident), median of %d; cpu: the CPU time the process got, per message\n\n",
	       DEPTH, BUFS, reps);
	printf("%-14s %5s %5s %10s %10s %12s %10s %9s\n", "operation", "mtu", "icrc", "ns/msg",
	       "cpu ns/msg", "msgs/s", "Gbit/s", "frames");
	for (int k = 0; k < ncases; k++)
		if (!cases[k].skip)
			print_row(&cases[k]);
	if (!only || strstr("memcpy", only)) {
		print_row(&memcpy_small);
		print_row(&memcpy_big);
	}
	free(wire.slot);
	return 0;
}
