/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Deterministic behaviour of lib/transport, one small scenario per test on the simulated
 * wire (sim.c, two hosts, no random faults): every completion status and NAK, posting
 * and modify_qp errors, signaling, UD, SRQ, PSN wrap, ACK coalescing, CQ overflow and
 * atomic replay. Each asserts the exact statuses, counters, QP states, frames on the wire
 * and what memory holds afterwards.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <criterion/criterion.h>

#include "sim.h"
/* Only to wrap each device's tx callback (dev->cfg.tx), so that the test sees and can
 * drop single frames; nothing else of the transport's internals is used. */
#include "tp_internal.h"

#define OPC(tr, op) UROCE_OPCODE(UROCE_TRANSPORT_##tr, UROCE_OP_##op)
#define ANY (-1)
#define MEM_SIZE (1u << 20)
#define US 1000ull
#define MS 1000000ull

/* ---- frames on the wire -------------------------------------------------------------------- */

struct frame_rec {
	uint64_t at;
	int from;
	uint8_t opcode;
	uint32_t psn, dqpn;
	bool ack_req;
	uint8_t syn;     /* AETH syndrome, when the packet has one */
	uint32_t len;    /* payload bytes */
	uint64_t orig;   /* AtomicAckETH */
	uint32_t qkey;   /* DETH */
	uint32_t src_qpn;
	bool dropped;    /* by the test's drop rule, never reached the wire */
	uint64_t hash;   /* FNV-1a of every byte of the frame */
};

#define MAX_LOG 8192
static struct {
	uroce_tp_tx_fn orig;
	struct frame_rec f[MAX_LOG];
	uint32_t n;
	bool (*drop)(const struct frame_rec *r, void *arg);
	void *drop_arg;
	int busy[2]; /* answer -EAGAIN to this many more tx calls of each host */
} g_tx;

static struct {
	int n;
	enum ibv_event_type type[64];
	void *obj[64];
} g_ev;

static int wrap_tx(void *ctx, const uint8_t *frame, uint32_t len)
{
	struct sim_host *h = ctx;
	struct uroce_wire_pkt p;
	struct frame_rec r;
	int rc;

	if (g_tx.busy[h->id] > 0) {
		g_tx.busy[h->id]--;
		return -EAGAIN; /* the link is full: the transport must try again later */
	}
	cr_assert_eq(uroce_wire_parse(frame, len, &p), UROCE_WIRE_OK, "host %d sent a bad frame",
		     h->id);
	memset(&r, 0, sizeof(r));
	r.hash = 0xcbf29ce484222325ull;
	for (uint32_t i = 0; i < len; i++)
		r.hash = (r.hash ^ frame[i]) * 0x100000001b3ull;
	r.at = h->sim->now;
	r.from = h->id;
	r.opcode = p.hdr.bth.opcode;
	r.psn = p.hdr.bth.psn;
	r.dqpn = p.hdr.bth.dqpn;
	r.ack_req = p.hdr.bth.ack_req;
	r.syn = p.hdr.aeth.syndrome;
	r.len = p.payload_len;
	r.orig = p.hdr.atomic_orig;
	r.qkey = p.hdr.deth.qkey;
	r.src_qpn = p.hdr.deth.src_qpn;
	r.dropped = g_tx.drop && g_tx.drop(&r, g_tx.drop_arg);
	if (r.dropped) {
		rc = 0;
	} else {
		rc = g_tx.orig(ctx, frame, len);
		if (rc)
			return rc; /* not sent: not logged */
	}
	cr_assert_lt(g_tx.n, MAX_LOG);
	g_tx.f[g_tx.n++] = r;
	return rc;
}

static void on_event(void *ctx, enum ibv_event_type type, void *obj)
{
	(void)ctx;
	cr_assert_lt(g_ev.n, 64);
	g_ev.type[g_ev.n] = type;
	g_ev.obj[g_ev.n] = obj;
	g_ev.n++;
}

static int nevents(enum ibv_event_type type, void *obj)
{
	int n = 0;

	for (int i = 0; i < g_ev.n; i++)
		n += g_ev.type[i] == type && (obj == NULL || g_ev.obj[i] == obj);
	return n;
}

/* Frames @from sent (and did not drop) with @opcode and @psn (ANY: every one). */
static int nframes(int from, int opcode, int64_t psn)
{
	int n = 0;

	for (uint32_t i = 0; i < g_tx.n; i++) {
		const struct frame_rec *r = &g_tx.f[i];

		n += r->from == from && (opcode == ANY || r->opcode == opcode) &&
		     (psn == ANY || r->psn == (uint32_t)psn);
	}
	return n;
}

/* ACKNOWLEDGE frames from @from of AETH type @type (ANY: all), and NAK code @code. */
static int nacks(int from, int type, int code)
{
	int n = 0;

	for (uint32_t i = 0; i < g_tx.n; i++) {
		const struct frame_rec *r = &g_tx.f[i];

		if (r->from != from || r->dropped || r->opcode != OPC(RC, ACKNOWLEDGE))
			continue;
		if (type != ANY && uroce_aeth_type(r->syn) != (enum uroce_aeth_type)type)
			continue;
		if (code != ANY && uroce_aeth_value(r->syn) != code)
			continue;
		n++;
	}
	return n;
}

static const struct frame_rec *first_frame(int from, int opcode)
{
	for (uint32_t i = 0; i < g_tx.n; i++)
		if (g_tx.f[i].from == from && g_tx.f[i].opcode == opcode)
			return &g_tx.f[i];
	return NULL;
}

/* ---- two hosts ---------------------------------------------------------------------------- */

struct cqlog {
	struct uroce_tp_cq *cq;
	struct ibv_wc wc[256];
	int n;
};

struct env {
	struct sim s;
	uint8_t *mem[2];
	uint64_t iova[2];
	struct uroce_tp_pd *pd[2];
	struct uroce_tp_mr *mr[2];
	uint32_t key[2];
	struct cqlog sc[2], rc[2]; /* send and receive CQ of each host */
	struct uroce_tp_qp *qp[2];
	int want_sc[2], want_rc[2]; /* run() stops once the logs hold this many */
};

static struct sim_qp_opts default_opts(void)
{
	struct sim_qp_opts o = {
		.mtu = IBV_MTU_1024,
		.psn_a = 0x100,
		.psn_b = 0x200,
		.timeout = 14, /* 4.096 us * 2^14 = 67 ms */
		.retry_cnt = 7,
		.rnr_retry = 7,
		.min_rnr_timer = 1, /* 10 us */
		.max_rd_atomic = 4,
	};
	return o;
}

static void env_init_cfg(struct env *e, const struct uroce_tp_dev_cfg *cfg_in)
{
	struct sim_faults f = {.delay_ns = 1 * US};
	struct uroce_tp_dev_cfg cfg;

	memset(e, 0, sizeof(*e));
	memset(&g_tx, 0, sizeof(g_tx));
	memset(&g_ev, 0, sizeof(g_ev));
	if (cfg_in)
		cfg = *cfg_in;
	else
		uroce_tp_dev_cfg_init(&cfg);
	cfg.event = on_event;
	sim_init(&e->s, 7, 2, &f, &cfg);
	for (int h = 0; h < 2; h++) {
		struct uroce_tp_dev *dev = e->s.host[h].dev;

		g_tx.orig = dev->cfg.tx;
		dev->cfg.tx = wrap_tx;
		e->mem[h] = calloc(1, MEM_SIZE);
		cr_assert_not_null(e->mem[h]);
		e->iova[h] = 0x7f0000000000ull + ((uint64_t)h << 32);
		e->pd[h] = uroce_tp_alloc_pd(dev);
		e->mr[h] =
			uroce_tp_reg_mr(e->pd[h], e->iova[h], e->mem[h], MEM_SIZE,
					IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
		cr_assert_not_null(e->mr[h]);
		uroce_tp_mr_keys(e->mr[h], &e->key[h], NULL);
		e->sc[h].cq = uroce_tp_create_cq(dev, 128);
		e->rc[h].cq = uroce_tp_create_cq(dev, 128);
		cr_assert(e->sc[h].cq && e->rc[h].cq);
	}
}

static void env_init(struct env *e)
{
	env_init_cfg(e, NULL);
}

static struct uroce_tp_qp *mkqp(struct env *e, int h, enum ibv_qp_type type,
				struct uroce_tp_srq *srq, bool sig_all, uint32_t max_send_wr)
{
	struct uroce_tp_qp_init init;
	struct uroce_tp_qp *qp;

	memset(&init, 0, sizeof(init));
	init.qp_type = type;
	init.send_cq = e->sc[h].cq;
	init.recv_cq = e->rc[h].cq;
	init.srq = srq;
	init.cap.max_send_wr = max_send_wr;
	init.cap.max_recv_wr = 32;
	init.cap.max_send_sge = 4;
	init.cap.max_recv_sge = 4;
	init.sq_sig_all = sig_all;
	qp = uroce_tp_create_qp(e->pd[h], &init);
	cr_assert_not_null(qp);
	return qp;
}

/* An RC (or UC) pair qp[0] on host 0 <-> qp[1] on host 1, in RTS. */
static void env_pair(struct env *e, enum ibv_qp_type type, const struct sim_qp_opts *o)
{
	e->qp[0] = mkqp(e, 0, type, NULL, false, 32);
	e->qp[1] = mkqp(e, 1, type, NULL, false, 32);
	sim_connect(&e->s, e->qp[0], 0, e->qp[1], 1, o);
}

static void env_fini(struct env *e)
{
	sim_fini(&e->s);
	free(e->mem[0]);
	free(e->mem[1]);
}

static uint64_t va(struct env *e, int h, uint64_t off)
{
	return e->iova[h] + off;
}

static uint8_t *hp(struct env *e, int h, uint64_t off)
{
	return e->mem[h] + off;
}

static void collect(struct env *e)
{
	for (int h = 0; h < 2; h++) {
		struct cqlog *l[2] = {&e->sc[h], &e->rc[h]};

		for (int k = 0; k < 2; k++)
			while (l[k]->n < 256 &&
			       uroce_tp_poll_cq(l[k]->cq, 1, &l[k]->wc[l[k]->n]) == 1)
				l[k]->n++;
	}
}

static bool wants_met(void *arg)
{
	struct env *e = arg;

	collect(e);
	for (int h = 0; h < 2; h++)
		if (e->sc[h].n < e->want_sc[h] || e->rc[h].n < e->want_rc[h])
			return false;
	return true;
}

/* Runs until host 0's send CQ holds @sc0 completions and host 1's receive CQ @rc1 (or for
 * @ns of virtual time, and then the clock stands at now + @ns: time passes). */
static bool run_until(struct env *e, int sc0, int rc1, uint64_t ns)
{
	uint64_t end = e->s.now + ns;
	bool ok;

	e->want_sc[0] = sc0;
	e->want_rc[1] = rc1;
	ok = sim_run(&e->s, end, wants_met, e);
	collect(e);
	e->want_sc[0] = e->want_rc[1] = 0;
	return ok;
}

/* Runs for @ns of virtual time whatever completes. */
static void run_for(struct env *e, uint64_t ns)
{
	uint64_t end = e->s.now + ns;

	sim_run(&e->s, end, NULL, NULL);
	if (e->s.now < end)
		e->s.now = end;
	collect(e);
}

static struct uroce_tp_send_wqe wr(uint64_t id, enum ibv_wr_opcode op, uint64_t addr,
				   uint32_t len, uint32_t lkey, bool signaled)
{
	struct uroce_tp_send_wqe w;

	memset(&w, 0, sizeof(w));
	w.wr_id = id;
	w.opcode = op;
	w.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
	w.num_sge = 1;
	w.sg_list[0].addr = addr;
	w.sg_list[0].length = len;
	w.sg_list[0].lkey = lkey;
	return w;
}

static void post(struct env *e, int h, const struct uroce_tp_send_wqe *w)
{
	cr_assert_eq(uroce_tp_post_send(e->qp[h], w, e->s.now), 0, "post_send wr %lu",
		     (unsigned long)w->wr_id);
}

static struct uroce_tp_recv_wqe rwr(uint64_t id, uint64_t addr, uint32_t len, uint32_t lkey)
{
	struct uroce_tp_recv_wqe r;

	memset(&r, 0, sizeof(r));
	r.wr_id = id;
	r.num_sge = 1;
	r.sg_list[0].addr = addr;
	r.sg_list[0].length = len;
	r.sg_list[0].lkey = lkey;
	return r;
}

static void post_recv(struct env *e, int h, uint64_t id, uint64_t off, uint32_t len)
{
	struct uroce_tp_recv_wqe r = rwr(id, va(e, h, off), len, e->key[h]);

	cr_assert_eq(uroce_tp_post_recv(e->qp[h], &r), 0);
}

static void fill(uint8_t *p, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static bool all_bytes(const uint8_t *p, uint32_t len, uint8_t v)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

static enum ibv_qp_state qstate(struct env *e, int h)
{
	return uroce_tp_qp_state(e->qp[h]);
}

static const struct uroce_tp_counters *cnt(struct env *e, int h)
{
	return uroce_tp_counters(e->s.host[h].dev);
}

/* libibverbs is not linked (headers only): the names of the statuses used here. */
static const char *st_name(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_SUCCESS: return "SUCCESS";
	case IBV_WC_LOC_LEN_ERR: return "LOC_LEN_ERR";
	case IBV_WC_LOC_PROT_ERR: return "LOC_PROT_ERR";
	case IBV_WC_WR_FLUSH_ERR: return "WR_FLUSH_ERR";
	case IBV_WC_REM_INV_REQ_ERR: return "REM_INV_REQ_ERR";
	case IBV_WC_REM_ACCESS_ERR: return "REM_ACCESS_ERR";
	case IBV_WC_REM_OP_ERR: return "REM_OP_ERR";
	case IBV_WC_RETRY_EXC_ERR: return "RETRY_EXC_ERR";
	case IBV_WC_RNR_RETRY_EXC_ERR: return "RNR_RETRY_EXC_ERR";
	default: return "other";
	}
}

static void expect_wc(const struct ibv_wc *wc, uint64_t id, enum ibv_wc_status st)
{
	cr_assert_eq(wc->wr_id, id, "wr_id %lu, expected %lu", (unsigned long)wc->wr_id,
		     (unsigned long)id);
	cr_assert_eq(wc->status, st, "wr %lu: status %s, expected %s", (unsigned long)id,
		     st_name(wc->status), st_name(st));
}

/* Builds a request from host 0 to host 1's qp[1] (or h->bth.dqpn) and hands it to host 1;
 * @corrupt_at: flip a bit of that byte, @trunc: pass only that many bytes. */
static void inject_raw(struct env *e, struct uroce_wire_hdr *h, const void *payload,
		       uint32_t len, uint32_t corrupt_at, uint32_t trunc)
{
	uint8_t buf[2048];
	uint32_t n;

	memcpy(h->eth_dst, e->s.host[1].mac, 6);
	memcpy(h->eth_src, e->s.host[0].mac, 6);
	h->ip_src[12] = 10, h->ip_src[15] = 1;
	h->ip_dst[12] = 10, h->ip_dst[15] = 2;
	h->udp_sport = UROCE_UDP_SPORT_MIN;
	if (h->bth.dqpn == 0)
		h->bth.dqpn = uroce_tp_qp_num(e->qp[1]);
	n = uroce_wire_build(buf, sizeof(buf), h, payload, len);
	cr_assert_gt(n, 0);
	if (corrupt_at)
		buf[corrupt_at] ^= 0x10;
	uroce_tp_rx(e->s.host[1].dev, buf, trunc ? trunc : n, e->s.now);
}

static void inject(struct env *e, struct uroce_wire_hdr *h, const void *payload, uint32_t len)
{
	inject_raw(e, h, payload, len, 0, 0);
}

/* ==== 1. completion statuses and NAKs ======================================================= */

/* IBA 9.7.6.1.3 / C9-152: after retry_cnt retransmissions without an answer the WQE
 * completes with RETRY_EXC_ERR, later WRs flush (IBA 10.3.1), the QP goes to ERR. */
Test(status, retry_exc_err_on_cut_link)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	const uint64_t T = 4096ull << 10; /* timeout 10: 4.096 us * 2^10 */
	const struct frame_rec *f0;
	uint64_t t_fail;

	env_init(&e);
	o.timeout = 10;
	o.retry_cnt = 3;
	env_pair(&e, IBV_QPT_RC, &o);
	fill(hp(&e, 0, 0), 300, 1);
	memset(hp(&e, 1, 0), 0xee, 4096);
	post_recv(&e, 1, 77, 0, 1024);
	e.s.faults.cut = true;

	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 100, e.key[0], true);
	post(&e, 0, &w);
	w = wr(2, IBV_WR_RDMA_WRITE, va(&e, 0, 100), 100, e.key[0], true);
	w.remote_addr = va(&e, 1, 2048);
	w.rkey = e.key[1];
	post(&e, 0, &w);
	w = wr(3, IBV_WR_SEND, va(&e, 0, 200), 100, e.key[0], false); /* unsignaled */
	post(&e, 0, &w);

	cr_assert(run_until(&e, 3, 0, 10 * T));
	t_fail = e.s.now;
	f0 = first_frame(0, OPC(RC, SEND_ONLY));
	cr_assert_not_null(f0);
	/* The first request went out retry_cnt + 1 times, each of the others too. */
	cr_assert_eq(nframes(0, OPC(RC, SEND_ONLY), o.psn_a), o.retry_cnt + 1);
	cr_assert_eq(nframes(0, OPC(RC, WRITE_ONLY), o.psn_a + 1), o.retry_cnt + 1);
	cr_assert_eq(nframes(0, OPC(RC, SEND_ONLY), o.psn_a + 2), o.retry_cnt + 1);
	cr_assert_eq(nframes(0, ANY, ANY), 3 * (o.retry_cnt + 1));
	cr_assert_eq(e.s.sent, 3u * (o.retry_cnt + 1));
	/* (retry_cnt + 1) timeouts after the first transmission, exactly. */
	cr_assert_eq(t_fail - f0->at, (uint64_t)(o.retry_cnt + 1) * T, "failed after %lu ns",
		     (unsigned long)(t_fail - f0->at));

	cr_assert_eq(e.sc[0].n, 3);
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_RETRY_EXC_ERR);
	expect_wc(&e.sc[0].wc[1], 2, IBV_WC_WR_FLUSH_ERR);
	expect_wc(&e.sc[0].wc[2], 3, IBV_WC_WR_FLUSH_ERR); /* a flushed unsignaled WR too */
	cr_assert_eq(e.sc[0].wc[0].qp_num, uroce_tp_qp_num(e.qp[0]));
	cr_assert_eq(qstate(&e, 0), IBV_QPS_ERR);
	cr_assert_eq(cnt(&e, 0)->retry_exceeded_err, 1);
	cr_assert_eq(cnt(&e, 0)->completer_retry_err, o.retry_cnt);
	/* Nothing reached the responder: no data, no completion, still RTS. */
	cr_assert_eq(cnt(&e, 1)->rcvd_pkts, 0);
	cr_assert(all_bytes(hp(&e, 1, 0), 4096, 0xee));
	cr_assert_eq(e.rc[1].n, 0);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	/* And nothing more happens. */
	run_for(&e, 10 * T);
	cr_assert_eq(nframes(0, ANY, ANY), 3 * (o.retry_cnt + 1));
	cr_assert_eq(e.sc[0].n, 3);
	env_fini(&e);
}

/* retry_cnt 0: one transmission, no retry; timeout 0: no retransmission timer at all
 * (IBA 9.7.6.1.3: "a value of 0 ... infinite"), the WR waits for ever. */
Test(status, retry_cnt_0_and_timeout_0)
{
	for (int k = 0; k < 2; k++) {
		struct env e;
		struct sim_qp_opts o = default_opts();
		struct uroce_tp_send_wqe w;

		env_init(&e);
		o.timeout = k ? 0 : 10;
		o.retry_cnt = 0;
		env_pair(&e, IBV_QPT_RC, &o);
		e.s.faults.cut = true;
		w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 100, e.key[0], true);
		post(&e, 0, &w);
		run_for(&e, 5000 * MS);
		cr_assert_eq(nframes(0, ANY, ANY), 1);
		if (k == 0) {
			cr_assert_eq(e.sc[0].n, 1);
			expect_wc(&e.sc[0].wc[0], 1, IBV_WC_RETRY_EXC_ERR);
			cr_assert_eq(qstate(&e, 0), IBV_QPS_ERR);
		} else {
			cr_assert_eq(e.sc[0].n, 0);
			cr_assert_eq(qstate(&e, 0), IBV_QPS_RTS);
			cr_assert_eq(uroce_tp_next_deadline(e.s.host[0].dev), UINT64_MAX);
		}
		env_fini(&e);
	}
}

/* IBA 9.7.5.2.8: rnr_retry 0..6 RNR NAKs are tolerated that many times; the one after
 * completes the WQE with RNR_RETRY_EXC_ERR. */
Test(status, rnr_retry_exc_err)
{
	for (uint8_t rnr = 0; rnr <= 3; rnr++) {
		struct env e;
		struct sim_qp_opts o = default_opts();
		struct uroce_tp_send_wqe w;

		env_init(&e);
		o.rnr_retry = rnr;
		o.min_rnr_timer = 14; /* 1.28 ms */
		env_pair(&e, IBV_QPT_RC, &o);
		fill(hp(&e, 0, 0), 64, 3);
		w = wr(5, IBV_WR_SEND, va(&e, 0, 0), 64, e.key[0], true);
		post(&e, 0, &w);
		w = wr(6, IBV_WR_SEND, va(&e, 0, 0), 64, e.key[0], true);
		post(&e, 0, &w);
		cr_assert(run_until(&e, 2, 0, 1000 * MS));

		cr_assert_eq(nacks(1, UROCE_AETH_RNR_NAK, 14), rnr + 1, "rnr_retry %u", rnr);
		cr_assert_eq(nacks(1, ANY, ANY), rnr + 1);
		cr_assert_eq(nframes(0, OPC(RC, SEND_ONLY), o.psn_a), rnr + 1);
		cr_assert_eq(cnt(&e, 0)->rcvd_rnr_err, rnr + 1);
		cr_assert_eq(cnt(&e, 1)->send_rnr_err, rnr + 1);
		cr_assert_eq(cnt(&e, 0)->retry_rnr_exceeded_err, 1);
		cr_assert_eq(cnt(&e, 0)->completer_retry_err, 0);
		/* The waits: rnr_retry RNR timers between the transmissions. */
		{
			const struct frame_rec *first = first_frame(0, OPC(RC, SEND_ONLY));
			uint64_t last = 0;

			for (uint32_t i = 0; i < g_tx.n; i++)
				if (g_tx.f[i].from == 0 && g_tx.f[i].psn == o.psn_a)
					last = g_tx.f[i].at;
			cr_assert_geq(last - first->at, rnr * uroce_rnr_timer_ns(14));
			cr_assert_lt(last - first->at,
				     rnr * (uroce_rnr_timer_ns(14) + 100 * US) + 1);
		}
		expect_wc(&e.sc[0].wc[0], 5, IBV_WC_RNR_RETRY_EXC_ERR);
		expect_wc(&e.sc[0].wc[1], 6, IBV_WC_WR_FLUSH_ERR);
		cr_assert_eq(qstate(&e, 0), IBV_QPS_ERR);
		/* The responder refused without consuming anything and stays up. */
		cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
		cr_assert_eq(e.rc[1].n, 0);
		env_fini(&e);
	}
}

/* IBA 9.7.5.2.8: rnr_retry 7 means retry without end. */
Test(status, rnr_retry_7_is_infinite)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	uint64_t naks;

	env_init(&e);
	o.rnr_retry = 7;
	o.retry_cnt = 1; /* RNR waits must not spend the transport retries */
	o.min_rnr_timer = 14;
	env_pair(&e, IBV_QPT_RC, &o);
	fill(hp(&e, 0, 0), 200, 9);
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 200, e.key[0], true);
	post(&e, 0, &w);
	run_for(&e, 50 * MS);
	naks = cnt(&e, 0)->rcvd_rnr_err;
	cr_assert_geq(naks, 30, "only %lu RNR NAKs in 50 ms", (unsigned long)naks);
	cr_assert_eq(e.sc[0].n, 0);
	cr_assert_eq(qstate(&e, 0), IBV_QPS_RTS);

	post_recv(&e, 1, 42, 0, 1024);
	cr_assert(run_until(&e, 1, 1, 100 * MS));
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	expect_wc(&e.rc[1].wc[0], 42, IBV_WC_SUCCESS);
	cr_assert_eq(e.rc[1].wc[0].byte_len, 200);
	cr_assert_eq(memcmp(hp(&e, 1, 0), hp(&e, 0, 0), 200), 0);
	cr_assert_eq(cnt(&e, 0)->rcvd_rnr_err, cnt(&e, 1)->send_rnr_err);
	cr_assert_eq(cnt(&e, 0)->retry_rnr_exceeded_err, 0);
	cr_assert_eq(cnt(&e, 0)->completer_retry_err, 0);
	env_fini(&e);
}

/* A request the responder refuses with a NAK: the requester's WQE completes with
 * @status, the QPs of both ends go to ERR (IBA 9.9.3.1: responder class C errors), one
 * NAK of @nak_code was sent at @psn. */
static void expect_nak(struct env *e, const struct sim_qp_opts *o, uint64_t id,
		       enum ibv_wc_status status, int nak_code, uint32_t psn)
{
	cr_assert(run_until(e, 1, 0, 100 * MS));
	expect_wc(&e->sc[0].wc[0], id, status);
	cr_assert_eq(nacks(1, UROCE_AETH_NAK, nak_code), 1);
	cr_assert_eq(nacks(1, UROCE_AETH_NAK, ANY), 1);
	for (uint32_t i = 0; i < g_tx.n; i++)
		if (g_tx.f[i].from == 1 && uroce_aeth_type(g_tx.f[i].syn) == UROCE_AETH_NAK)
			cr_assert_eq(g_tx.f[i].psn, psn);
	cr_assert_eq(qstate(e, 0), IBV_QPS_ERR);
	cr_assert_eq(qstate(e, 1), IBV_QPS_ERR);
	cr_assert_eq(cnt(e, 0)->completer_retry_err, 0);
	(void)o;
}

/* IBA 9.7.5.1.3 / C9-88: an R_Key that names no MR is a remote access error. */
Test(status, rem_access_write_bad_rkey)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	fill(hp(&e, 0, 0), 256, 1);
	memset(hp(&e, 1, 0), 0xee, 4096);
	w = wr(1, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 256, e.key[0], true);
	w.remote_addr = va(&e, 1, 0);
	w.rkey = (0x7fu << 8) | 0x5a; /* a slot never registered */
	post(&e, 0, &w);
	expect_nak(&e, &o, 1, IBV_WC_REM_ACCESS_ERR, UROCE_NAK_REM_ACCESS_ERR, o.psn_a);
	cr_assert(all_bytes(hp(&e, 1, 0), 4096, 0xee));
	cr_assert_eq(e.rc[1].n, 0);
	env_fini(&e);
}

/* IBA 9.7.5.1.3 / C9-88: [va, va + len) must lie inside the MR. */
Test(status, rem_access_write_out_of_bounds)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct uroce_tp_mr *small;
	uint32_t rkey;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	memset(hp(&e, 1, 0), 0xee, 8192);
	small = uroce_tp_reg_mr(e.pd[1], va(&e, 1, 0), hp(&e, 1, 0), 4096,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	uroce_tp_mr_keys(small, NULL, &rkey);
	fill(hp(&e, 0, 0), 100, 1);
	w = wr(1, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 100, e.key[0], true);
	w.remote_addr = va(&e, 1, 4050); /* 54 bytes inside, 46 past the end */
	w.rkey = rkey;
	post(&e, 0, &w);
	expect_nak(&e, &o, 1, IBV_WC_REM_ACCESS_ERR, UROCE_NAK_REM_ACCESS_ERR, o.psn_a);
	cr_assert(all_bytes(hp(&e, 1, 0), 8192, 0xee));
	env_fini(&e);
}

/* IBA 10.6.3.1: a READ needs IBV_ACCESS_REMOTE_READ on the MR. */
Test(status, rem_access_read_without_remote_read)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct uroce_tp_mr *wo;
	uint32_t rkey;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	fill(hp(&e, 1, 0), 512, 5);
	memset(hp(&e, 0, 0), 0xee, 512);
	wo = uroce_tp_reg_mr(e.pd[1], va(&e, 1, 0), hp(&e, 1, 0), 4096,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	uroce_tp_mr_keys(wo, NULL, &rkey);
	w = wr(1, IBV_WR_RDMA_READ, va(&e, 0, 0), 512, e.key[0], true);
	w.remote_addr = va(&e, 1, 0);
	w.rkey = rkey;
	post(&e, 0, &w);
	expect_nak(&e, &o, 1, IBV_WC_REM_ACCESS_ERR, UROCE_NAK_REM_ACCESS_ERR, o.psn_a);
	cr_assert_eq(nframes(1, OPC(RC, READ_RESPONSE_ONLY), ANY), 0);
	cr_assert(all_bytes(hp(&e, 0, 0), 512, 0xee)); /* nothing was read */
	env_fini(&e);
}

/* IBA 10.6.2 (key portion): an R_Key kept across dereg + reg of the same slot is refused. */
Test(status, rem_access_stale_rkey)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct uroce_tp_mr *a, *b;
	uint32_t old_key, new_key;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	memset(hp(&e, 1, 0), 0xee, 4096);
	a = uroce_tp_reg_mr(e.pd[1], va(&e, 1, 0), hp(&e, 1, 0), 4096,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	uroce_tp_mr_keys(a, NULL, &old_key);
	cr_assert_eq(uroce_tp_dereg_mr(a), 0);
	b = uroce_tp_reg_mr(e.pd[1], va(&e, 1, 0), hp(&e, 1, 0), 4096,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	uroce_tp_mr_keys(b, NULL, &new_key);
	cr_assert_eq(old_key >> 8, new_key >> 8, "the slot is reused");
	cr_assert_neq(old_key, new_key, "a fresh key byte");

	fill(hp(&e, 0, 0), 64, 1);
	w = wr(1, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 64, e.key[0], true);
	w.remote_addr = va(&e, 1, 0);
	w.rkey = old_key;
	post(&e, 0, &w);
	expect_nak(&e, &o, 1, IBV_WC_REM_ACCESS_ERR, UROCE_NAK_REM_ACCESS_ERR, o.psn_a);
	cr_assert(all_bytes(hp(&e, 1, 0), 4096, 0xee));
	env_fini(&e);
}

/* IBA 9.4.6 / 10.6.7.2.2: SEND with Invalidate invalidates the named R_Key at the
 * responder; the receive completion says so (IBV_WC_WITH_INV, invalidated_rkey), and a
 * later access with that R_Key is a remote access error. */
Test(status, rem_access_after_send_with_inv)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct uroce_tp_mr *t;
	uint32_t rkey;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	memset(hp(&e, 1, 8192), 0xee, 4096);
	t = uroce_tp_reg_mr(e.pd[1], va(&e, 1, 8192), hp(&e, 1, 8192), 4096,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	uroce_tp_mr_keys(t, NULL, &rkey);
	post_recv(&e, 1, 9, 0, 1024);
	fill(hp(&e, 0, 0), 64, 1);
	w = wr(1, IBV_WR_SEND_WITH_INV, va(&e, 0, 0), 16, e.key[0], true);
	w.invalidate_rkey = rkey;
	post(&e, 0, &w);
	cr_assert(run_until(&e, 1, 1, 100 * MS));
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	cr_assert_eq(e.sc[0].wc[0].opcode, IBV_WC_SEND);
	expect_wc(&e.rc[1].wc[0], 9, IBV_WC_SUCCESS);
	cr_assert_eq(e.rc[1].wc[0].opcode, IBV_WC_RECV);
	cr_assert(e.rc[1].wc[0].wc_flags & IBV_WC_WITH_INV);
	cr_assert_not(e.rc[1].wc[0].wc_flags & IBV_WC_WITH_IMM);
	cr_assert_eq(e.rc[1].wc[0].invalidated_rkey, rkey);
	cr_assert_eq(e.rc[1].wc[0].byte_len, 16);
	cr_assert_eq(nframes(0, OPC(RC, SEND_ONLY_INV), o.psn_a), 1);

	w = wr(2, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 64, e.key[0], true);
	w.remote_addr = va(&e, 1, 8192);
	w.rkey = rkey;
	post(&e, 0, &w);
	cr_assert(run_until(&e, 2, 0, 100 * MS));
	expect_wc(&e.sc[0].wc[1], 2, IBV_WC_REM_ACCESS_ERR);
	cr_assert_eq(nacks(1, UROCE_AETH_NAK, UROCE_NAK_REM_ACCESS_ERR), 1);
	cr_assert(all_bytes(hp(&e, 1, 8192), 4096, 0xee));
	cr_assert_eq(qstate(&e, 0), IBV_QPS_ERR);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_ERR);
	env_fini(&e);
}

/* A SEND with Invalidate naming an R_Key the responder cannot invalidate: the receive
 * completes in error (LOC_PROT_ERR) and the requester gets NAK Remote Operational Error
 * at the SEND's PSN (IBA 9.7.5.2: a NAK at a later PSN would acknowledge the SEND). */
Test(status, rem_op_err_send_with_inv_bad_rkey)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	post_recv(&e, 1, 9, 0, 1024);
	post_recv(&e, 1, 10, 1024, 1024);
	w = wr(1, IBV_WR_SEND_WITH_INV, va(&e, 0, 0), 16, e.key[0], true);
	w.invalidate_rkey = (0x7fu << 8) | 0x55; /* no such MR */
	post(&e, 0, &w);
	w = wr(2, IBV_WR_SEND, va(&e, 0, 0), 16, e.key[0], true);
	post(&e, 0, &w);
	expect_nak(&e, &o, 1, IBV_WC_REM_OP_ERR, UROCE_NAK_REM_OP_ERR, o.psn_a);
	cr_assert(run_until(&e, 2, 2, 10 * MS));
	expect_wc(&e.sc[0].wc[1], 2, IBV_WC_WR_FLUSH_ERR);
	expect_wc(&e.rc[1].wc[0], 9, IBV_WC_LOC_PROT_ERR);
	expect_wc(&e.rc[1].wc[1], 10, IBV_WC_WR_FLUSH_ERR);
	env_fini(&e);
}

/* IBA 9.4.5: atomics need an 8-byte aligned VA. post_send refuses them already
 * (-EINVAL, as rdma-core providers do); a crafted request reaching the responder is
 * answered with NAK Invalid Request and nothing is executed. */
Test(status, rem_inv_req_misaligned_atomic)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct uroce_wire_hdr h;
	uint64_t v = 1000, got;
	const struct frame_rec *nakf;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	memcpy(hp(&e, 1, 64), &v, 8);
	w = wr(1, IBV_WR_ATOMIC_FETCH_AND_ADD, va(&e, 0, 0), 8, e.key[0], true);
	w.remote_addr = va(&e, 1, 68);
	w.rkey = e.key[1];
	w.compare_add = 1;
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, e.s.now), -EINVAL);

	uroce_wire_hdr_init(&h, 4, OPC(RC, FETCH_ADD));
	h.bth.psn = o.psn_a;
	h.bth.ack_req = true;
	h.atomiceth.va = va(&e, 1, 68);
	h.atomiceth.rkey = e.key[1];
	h.atomiceth.swap_add = 1;
	inject(&e, &h, NULL, 0);

	cr_assert_eq(nframes(1, ANY, ANY), 1, "exactly the NAK");
	nakf = &g_tx.f[0];
	cr_assert_eq(nakf->opcode, OPC(RC, ACKNOWLEDGE));
	cr_assert_eq(nakf->syn, uroce_aeth_nak(UROCE_NAK_INVALID_REQ));
	cr_assert_eq(nakf->psn, o.psn_a);
	cr_assert_eq(nakf->dqpn, uroce_tp_qp_num(e.qp[0]));
	memcpy(&got, hp(&e, 1, 64), 8);
	cr_assert_eq(got, 1000);
	cr_assert(all_bytes(hp(&e, 1, 72), 8, 0));
	cr_assert_eq(qstate(&e, 1), IBV_QPS_ERR);
	/* The NAK answers nothing host 0 asked: counted as a ghost, its QP is untouched. */
	run_for(&e, 1 * MS);
	cr_assert_eq(cnt(&e, 0)->rcvd_ghost_ack, 1);
	cr_assert_eq(qstate(&e, 0), IBV_QPS_RTS);
	env_fini(&e);
}

/* IBA 10.2.4 (QP access flags) / rxe check_op_valid: a WRITE to a QP without
 * IBV_ACCESS_REMOTE_WRITE is an invalid request. */
Test(status, rem_inv_req_write_without_qp_access)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct ibv_qp_attr a;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	memset(&a, 0, sizeof(a));
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
	cr_assert_eq(uroce_tp_modify_qp(e.qp[1], &a, IBV_QP_ACCESS_FLAGS, NULL, e.s.now), 0);
	memset(hp(&e, 1, 0), 0xee, 4096);
	fill(hp(&e, 0, 0), 100, 1);
	w = wr(1, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 100, e.key[0], true);
	w.remote_addr = va(&e, 1, 0);
	w.rkey = e.key[1];
	post(&e, 0, &w);
	expect_nak(&e, &o, 1, IBV_WC_REM_INV_REQ_ERR, UROCE_NAK_INVALID_REQ, o.psn_a);
	cr_assert(all_bytes(hp(&e, 1, 0), 4096, 0xee));
	env_fini(&e);
}

/* IBA 9.7.5.1.3 / C9-90 (and rxe): a SEND longer than the receive buffer: the receive
 * completes with LOC_LEN_ERR, the sender with REM_INV_REQ_ERR. */
Test(status, rem_inv_req_send_too_long)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	memset(hp(&e, 1, 0), 0xee, 4096);
	post_recv(&e, 1, 10, 0, 64);
	post_recv(&e, 1, 11, 1024, 1024);
	fill(hp(&e, 0, 0), 100, 1);
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 100, e.key[0], true);
	post(&e, 0, &w);
	expect_nak(&e, &o, 1, IBV_WC_REM_INV_REQ_ERR, UROCE_NAK_INVALID_REQ, o.psn_a);
	cr_assert_eq(e.rc[1].n, 2);
	expect_wc(&e.rc[1].wc[0], 10, IBV_WC_LOC_LEN_ERR);
	expect_wc(&e.rc[1].wc[1], 11, IBV_WC_WR_FLUSH_ERR);
	cr_assert(all_bytes(hp(&e, 1, 0), 4096, 0xee));
	env_fini(&e);
}

/* IBA table 44 (NAK codes): the responder's own receive WQE is bad (an lkey it cannot
 * use): Remote Operational Error for the sender, LOC_PROT_ERR for the receive. */
Test(status, rem_op_err_bad_recv_lkey)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct uroce_tp_recv_wqe r;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	memset(hp(&e, 1, 0), 0xee, 4096);
	r = rwr(10, va(&e, 1, 0), 1024, e.key[1] ^ 0xff);
	cr_assert_eq(uroce_tp_post_recv(e.qp[1], &r), 0);
	fill(hp(&e, 0, 0), 100, 1);
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 100, e.key[0], true);
	post(&e, 0, &w);
	expect_nak(&e, &o, 1, IBV_WC_REM_OP_ERR, UROCE_NAK_REM_OP_ERR, o.psn_a);
	cr_assert_eq(e.rc[1].n, 1);
	expect_wc(&e.rc[1].wc[0], 10, IBV_WC_LOC_PROT_ERR);
	cr_assert(all_bytes(hp(&e, 1, 0), 4096, 0xee));
	env_fini(&e);
}

/* IBA 10.7.2.3 (local protection): a gather through a bad lkey completes with
 * LOC_PROT_ERR before anything is sent; the QP goes to ERR. */
Test(status, loc_prot_err_bad_lkey_sends_nothing)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	post_recv(&e, 1, 10, 0, 1024);
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 100, e.key[0] ^ 0x1, true);
	post(&e, 0, &w);
	w = wr(2, IBV_WR_SEND, va(&e, 0, 0), 100, e.key[0], true);
	post(&e, 0, &w);
	cr_assert(run_until(&e, 2, 0, 100 * MS));
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_LOC_PROT_ERR);
	expect_wc(&e.sc[0].wc[1], 2, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(nframes(0, ANY, ANY), 0);
	cr_assert_eq(cnt(&e, 0)->sent_pkts, 0);
	cr_assert_eq(cnt(&e, 0)->send_err, 1);
	cr_assert_eq(qstate(&e, 0), IBV_QPS_ERR);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	cr_assert_eq(e.rc[1].n, 0);
	env_fini(&e);
}

/* IBA 10.6.3.1: the local buffer a READ (or atomic) writes into needs
 * IBV_ACCESS_LOCAL_WRITE; without it the WR fails locally, nothing is sent. */
Test(status, loc_prot_err_read_into_readonly_mr)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct uroce_tp_mr *ro;
	uint32_t lkey;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	memset(hp(&e, 0, 0), 0xee, 4096);
	ro = uroce_tp_reg_mr(e.pd[0], va(&e, 0, 0), hp(&e, 0, 0), 4096, IBV_ACCESS_REMOTE_READ);
	uroce_tp_mr_keys(ro, &lkey, NULL);
	w = wr(1, IBV_WR_RDMA_READ, va(&e, 0, 0), 64, lkey, false); /* unsignaled */
	w.remote_addr = va(&e, 1, 0);
	w.rkey = e.key[1];
	post(&e, 0, &w);
	cr_assert(run_until(&e, 1, 0, 10 * MS));
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_LOC_PROT_ERR);
	cr_assert_eq(nframes(0, ANY, ANY), 0);
	cr_assert(all_bytes(hp(&e, 0, 0), 4096, 0xee));
	cr_assert_eq(qstate(&e, 0), IBV_QPS_ERR);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	env_fini(&e);
}

/* A UD message is at most one packet (IBA 9.8.3): more than the MTU is a local length
 * error and nothing is sent. */
Test(status, loc_len_err_ud_over_mtu)
{
	struct env e;
	struct uroce_tp_send_wqe w;
	struct uroce_tp_ah *ah;

	env_init(&e);
	e.qp[0] = mkqp(&e, 0, IBV_QPT_UD, NULL, false, 8);
	e.qp[1] = mkqp(&e, 1, IBV_QPT_UD, NULL, false, 8);
	sim_ud_ready(&e.s, e.qp[0], 0x1234, 0);
	sim_ud_ready(&e.s, e.qp[1], 0x1234, 0);
	ah = sim_ah(&e.s, e.pd[0], 0, 1);
	post_recv(&e, 1, 10, 0, 4096);
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 1025, e.key[0], true); /* UD path MTU: 1024 */
	w.ah = ah;
	w.remote_qpn = uroce_tp_qp_num(e.qp[1]);
	w.remote_qkey = 0x1234;
	post(&e, 0, &w);
	cr_assert(run_until(&e, 1, 0, 10 * MS));
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_LOC_LEN_ERR);
	cr_assert_eq(nframes(0, ANY, ANY), 0);
	cr_assert_eq(cnt(&e, 0)->send_err, 1);
	/* rxe moves the QP to ERR; IBA 10.3.1 would allow SQE for UD (see the report). */
	cr_assert_eq(qstate(&e, 0), IBV_QPS_ERR);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	cr_assert_eq(e.rc[1].n, 0);
	env_fini(&e);
}

/* UC has no ACK and no NAK (IBA 9.8.2): what the responder cannot take is dropped and the
 * sender, complete once sent, never learns; neither QP leaves RTS. */
Test(status, uc_errors_are_silent_drops)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;

	env_init(&e);
	env_pair(&e, IBV_QPT_UC, &o);
	memset(hp(&e, 1, 0), 0xee, 8192);
	fill(hp(&e, 0, 0), 100, 3);
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 100, e.key[0], true); /* no receive posted */
	post(&e, 0, &w);
	w = wr(2, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 100, e.key[0], true);
	w.remote_addr = va(&e, 1, 0);
	w.rkey = e.key[1] ^ 0x40; /* bad rkey */
	post(&e, 0, &w);
	cr_assert(run_until(&e, 2, 0, 10 * MS));
	run_for(&e, 1 * MS);
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	expect_wc(&e.sc[0].wc[1], 2, IBV_WC_SUCCESS);
	cr_assert_eq(cnt(&e, 1)->uc_dropped_msgs, 2);
	cr_assert_eq(nframes(1, ANY, ANY), 0);
	cr_assert(all_bytes(hp(&e, 1, 0), 8192, 0xee));
	cr_assert_eq(qstate(&e, 0), IBV_QPS_RTS);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	/* The next message gets through. */
	post_recv(&e, 1, 7, 4096, 1024);
	w = wr(3, IBV_WR_SEND_WITH_IMM, va(&e, 0, 0), 100, e.key[0], true);
	w.imm_data = 0x01020304;
	post(&e, 0, &w);
	cr_assert(run_until(&e, 3, 1, 10 * MS));
	expect_wc(&e.rc[1].wc[0], 7, IBV_WC_SUCCESS);
	cr_assert(e.rc[1].wc[0].wc_flags & IBV_WC_WITH_IMM);
	cr_assert_eq(ntohl(e.rc[1].wc[0].imm_data), 0x01020304);
	cr_assert_eq(e.rc[1].wc[0].byte_len, 100);
	cr_assert_eq(memcmp(hp(&e, 1, 4096), hp(&e, 0, 0), 100), 0);
	env_fini(&e);
}

/* ==== 2. posting errors ======================================================================= */

/* rdma-core providers refuse sends before RTS; ERR takes them and flushes (IBA 10.3.1). */
Test(post, send_by_state)
{
	struct env e;
	struct uroce_tp_send_wqe w;
	struct sim_qp_opts o = default_opts();
	struct ibv_qp_attr a;
	struct uroce_tp_qp *qp;

	env_init(&e);
	qp = mkqp(&e, 0, IBV_QPT_RC, NULL, false, 8);
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 8, e.key[0], true);
	cr_assert_eq(uroce_tp_post_send(qp, &w, 0), -EINVAL, "RESET");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX |
						  IBV_QP_ACCESS_FLAGS, NULL, 0), 0);
	cr_assert_eq(uroce_tp_post_send(qp, &w, 0), -EINVAL, "INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = 0x99;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = e.s.host[1].gid;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
						  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
				       e.s.host[1].mac, 0), 0);
	cr_assert_eq(uroce_tp_post_send(qp, &w, 0), -EINVAL, "RTR");
	collect(&e);
	cr_assert_eq(e.sc[0].n, 0);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE, NULL, 0), 0);
	w.send_flags = 0; /* even unsignaled: a flush is an error completion */
	cr_assert_eq(uroce_tp_post_send(qp, &w, 0), 0, "ERR");
	collect(&e);
	cr_assert_eq(e.sc[0].n, 1);
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(e.sc[0].wc[0].qp_num, uroce_tp_qp_num(qp));
	(void)o;
	env_fini(&e);
}

Test(post, send_bad_requests)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct uroce_tp_qp *uc[2], *ud;
	struct uroce_tp_ah *ah;
	static const enum ibv_wr_opcode not_uc[] = {IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
						    IBV_WR_ATOMIC_FETCH_AND_ADD,
						    IBV_WR_SEND_WITH_INV};
	static const enum ibv_wr_opcode not_ud[] = {
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_SEND_WITH_INV};

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	uc[0] = mkqp(&e, 0, IBV_QPT_UC, NULL, false, 8);
	uc[1] = mkqp(&e, 1, IBV_QPT_UC, NULL, false, 8);
	sim_connect(&e.s, uc[0], 0, uc[1], 1, &o);
	ud = mkqp(&e, 0, IBV_QPT_UD, NULL, false, 8);
	sim_ud_ready(&e.s, ud, 1, 0);
	ah = sim_ah(&e.s, e.pd[0], 0, 1);

	/* Opcodes the service does not have (IBA table 38). */
	for (size_t i = 0; i < sizeof(not_uc) / sizeof(not_uc[0]); i++) {
		w = wr(1, not_uc[i], va(&e, 0, 0), 8, e.key[0], true);
		cr_assert_eq(uroce_tp_post_send(uc[0], &w, 0), -EINVAL, "UC opcode %d", not_uc[i]);
	}
	for (size_t i = 0; i < sizeof(not_ud) / sizeof(not_ud[0]); i++) {
		w = wr(1, not_ud[i], va(&e, 0, 0), 8, e.key[0], true);
		w.ah = ah;
		cr_assert_eq(uroce_tp_post_send(ud, &w, 0), -EINVAL, "UD opcode %d", not_ud[i]);
	}
	/* UD needs an AH of its PD. */
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 8, e.key[0], true);
	cr_assert_eq(uroce_tp_post_send(ud, &w, 0), -EINVAL);
	{
		struct uroce_tp_pd *other = uroce_tp_alloc_pd(e.s.host[0].dev);

		w.ah = sim_ah(&e.s, other, 0, 1);
		cr_assert_eq(uroce_tp_post_send(ud, &w, 0), -EINVAL);
		w.ah = ah;
		cr_assert_eq(uroce_tp_post_send(ud, &w, 0), 0);
	}

	/* More SGEs than the QP has (it has UROCE_TP_MAX_SGE, rounded up). */
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 8, e.key[0], true);
	w.num_sge = UROCE_TP_MAX_SGE + 1;
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), -EINVAL);
	w.num_sge = UROCE_TP_MAX_SGE;
	for (int i = 0; i < UROCE_TP_MAX_SGE; i++)
		w.sg_list[i] = w.sg_list[0];
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), 0);

	/* Inline data longer than max_inline_data. */
	w = wr(2, IBV_WR_SEND, 0, 0, 0, true);
	w.send_flags |= IBV_SEND_INLINE;
	w.num_sge = 0;
	w.inline_len = UROCE_TP_MAX_INLINE + 1;
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), -EINVAL);
	w.inline_len = UROCE_TP_MAX_INLINE;
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), 0);
	w.opcode = IBV_WR_RDMA_READ; /* inline has no meaning for a READ */
	w.inline_len = 8;
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), -EINVAL);

	/* Atomics: 8 bytes at an 8-byte aligned address (IBA 9.4.5). */
	w = wr(3, IBV_WR_ATOMIC_FETCH_AND_ADD, va(&e, 0, 0), 4, e.key[0], true);
	w.remote_addr = va(&e, 1, 0);
	w.rkey = e.key[1];
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), -EINVAL, "length 4");
	w.sg_list[0].length = 16;
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), -EINVAL, "length 16");
	w.sg_list[0].length = 8;
	w.remote_addr = va(&e, 1, 4);
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), -EINVAL, "misaligned");
	w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), -EINVAL, "misaligned CAS");
	w.remote_addr = va(&e, 1, 8);
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, 0), 0);
	env_fini(&e);
}

Test(post, send_queue_full)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_qp_init init;
	struct uroce_tp_send_wqe w;
	int i;

	env_init(&e);
	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_RC;
	init.send_cq = e.sc[0].cq;
	init.recv_cq = e.rc[0].cq;
	init.cap.max_send_wr = 3; /* rounded up to 4 and written back */
	e.qp[0] = uroce_tp_create_qp(e.pd[0], &init);
	cr_assert_eq(init.cap.max_send_wr, 4);
	e.qp[1] = mkqp(&e, 1, IBV_QPT_RC, NULL, false, 8);
	sim_connect(&e.s, e.qp[0], 0, e.qp[1], 1, &o);
	for (i = 0; i < 4; i++) {
		w = wr((uint64_t)i, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 8, e.key[0], true);
		w.remote_addr = va(&e, 1, 0);
		w.rkey = e.key[1];
		cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, e.s.now), 0);
	}
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, e.s.now), -ENOMEM);
	/* Completions make room again. */
	cr_assert(run_until(&e, 4, 0, 100 * MS));
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, e.s.now), 0);
	env_fini(&e);
}

Test(post, recv_errors)
{
	struct env e;
	struct uroce_tp_srq *srq;
	struct ibv_srq_init_attr sa;
	struct uroce_tp_qp *qp, *plain;
	struct uroce_tp_recv_wqe r;
	int i;

	env_init(&e);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	srq = uroce_tp_create_srq(e.pd[1], &sa);
	cr_assert_not_null(srq);
	qp = mkqp(&e, 1, IBV_QPT_RC, srq, false, 8);
	r = rwr(1, va(&e, 1, 0), 64, e.key[1]);
	cr_assert_eq(uroce_tp_post_recv(qp, &r), -EINVAL, "the QP's receives go to its SRQ");
	for (i = 0; i < 4; i++)
		cr_assert_eq(uroce_tp_post_srq_recv(srq, &r), 0);
	cr_assert_eq(uroce_tp_post_srq_recv(srq, &r), -ENOMEM);
	r.num_sge = 2;
	cr_assert_eq(uroce_tp_post_srq_recv(srq, &r), -EINVAL, "more SGEs than max_sge");

	plain = mkqp(&e, 1, IBV_QPT_RC, NULL, false, 8);
	r = rwr(1, va(&e, 1, 0), 64, e.key[1]);
	cr_assert_eq(uroce_tp_post_recv(plain, &r), -EINVAL, "RESET");
	r.num_sge = UROCE_TP_MAX_SGE + 1;
	cr_assert_eq(uroce_tp_post_recv(plain, &r), -EINVAL);
	env_fini(&e);
}

/* ==== 3. modify_qp ============================================================================ */

static int to_init(struct uroce_tp_qp *qp, const struct ibv_qp_attr *over, int extra)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	if (over)
		a = *over;
	a.qp_state = IBV_QPS_INIT;
	if (!over)
		a.port_num = 1;
	return uroce_tp_modify_qp(qp, &a,
				  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_ACCESS_FLAGS | extra,
				  NULL, 0);
}

static void rtr_attr(struct env *e, struct ibv_qp_attr *a, int *mask)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = IBV_MTU_2048;
	a->dest_qp_num = 0x1234;
	a->rq_psn = 0x42;
	a->max_dest_rd_atomic = 2;
	a->min_rnr_timer = 12;
	a->ah_attr.is_global = 1;
	a->ah_attr.port_num = 1;
	a->ah_attr.grh.dgid = e->s.host[1].gid;
	a->ah_attr.grh.sgid_index = 0;
	*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
}

static void rts_attr(struct ibv_qp_attr *a, int *mask)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->sq_psn = 0x77;
	a->timeout = 9;
	a->retry_cnt = 5;
	a->rnr_retry = 6;
	a->max_rd_atomic = 3;
	*mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
}

/* Bad attribute values are refused with -EINVAL and change nothing (rxe_qp_chk_attr,
 * IBA 11.2.4.2 "Modify QP": invalid attribute values). */
Test(modify, bad_values)
{
	struct env e;
	struct uroce_tp_qp *qp;
	struct ibv_qp_attr a, q;
	struct ibv_qp_init_attr qi;
	int mask;
	const uint8_t *dmac;

	env_init(&e);
	qp = mkqp(&e, 0, IBV_QPT_RC, NULL, false, 8);
	memset(&a, 0, sizeof(a));
	a.port_num = 2; /* one port */
	cr_assert_eq(to_init(qp, &a, 0), -EINVAL, "port 2");
	a.port_num = 1;
	a.pkey_index = 1; /* one P_Key */
	cr_assert_eq(to_init(qp, &a, 0), -EINVAL, "pkey_index 1");
	cr_assert_eq(uroce_tp_qp_state(qp), IBV_QPS_RESET);
	a.pkey_index = 0;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	cr_assert_eq(to_init(qp, &a, 0), 0);

	dmac = e.s.host[1].mac;
	rtr_attr(&e, &a, &mask);
	a.path_mtu = 0;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, mask, dmac, 0), -EINVAL, "mtu 0");
	a.path_mtu = 6;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, mask, dmac, 0), -EINVAL, "mtu 6");
	rtr_attr(&e, &a, &mask);
	a.min_rnr_timer = 32;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, mask, dmac, 0), -EINVAL, "min_rnr_timer 32");
	rtr_attr(&e, &a, &mask);
	a.ah_attr.grh.sgid_index = 1; /* the GID table has one entry */
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, mask, dmac, 0), -EINVAL, "sgid_index 1");
	rtr_attr(&e, &a, &mask);
	a.ah_attr.is_global = 0; /* RoCE: the GRH is mandatory (IBA A16.4.3) */
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, mask, dmac, 0), -EINVAL, "no GRH");
	rtr_attr(&e, &a, &mask);
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, mask, NULL, 0), -EINVAL, "no dmac");
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, mask | IBV_QP_ALT_PATH, dmac, 0), -EINVAL,
		     "alternate path");
	rtr_attr(&e, &a, &mask);
	a.dest_qp_num = 1u << 24;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, mask, dmac, 0), -EINVAL, "dest_qp_num 2^24");
	/* Nothing of the refused calls was applied. */
	uroce_tp_query_qp(qp, &q, &qi);
	cr_assert_eq(q.qp_state, IBV_QPS_INIT);
	cr_assert_eq(q.dest_qp_num, 0);
	cr_assert_eq(q.path_mtu, IBV_MTU_1024);
	cr_assert_eq(q.min_rnr_timer, 0);
	rtr_attr(&e, &a, &mask);
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, mask, dmac, 0), 0);

	rts_attr(&a, &mask);
	a.timeout = 32;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, mask, NULL, 0), -EINVAL, "timeout 32");
	rts_attr(&a, &mask);
	a.retry_cnt = 8;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, mask, NULL, 0), -EINVAL, "retry_cnt 8");
	rts_attr(&a, &mask);
	a.rnr_retry = 8;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, mask, NULL, 0), -EINVAL, "rnr_retry 8");
	rts_attr(&a, &mask);
	a.max_rd_atomic = UROCE_TP_MAX_RD_ATOMIC + 1;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, mask, NULL, 0), -EINVAL, "max_rd_atomic");
	/* IBA 11.2.4.2: a current state that is not the QP's is refused. */
	rts_attr(&a, &mask);
	a.cur_qp_state = IBV_QPS_INIT;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, mask | IBV_QP_CUR_STATE, NULL, 0), -EINVAL,
		     "cur_qp_state mismatch");
	cr_assert_eq(uroce_tp_qp_state(qp), IBV_QPS_RTR);
	a.cur_qp_state = IBV_QPS_RTR;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, mask | IBV_QP_CUR_STATE, NULL, 0), 0);
	cr_assert_eq(uroce_tp_qp_state(qp), IBV_QPS_RTS);
	/* Missing a required attribute, or giving one the transition does not take. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	a.path_mtu = IBV_MTU_256;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PATH_MTU, NULL, 0), -EINVAL);
	env_fini(&e);
}

Test(modify, query_returns_what_was_set)
{
	struct env e;
	struct uroce_tp_qp *qp;
	struct ibv_qp_attr a, q;
	struct ibv_qp_init_attr qi;
	int mask;

	env_init(&e);
	qp = mkqp(&e, 0, IBV_QPT_RC, NULL, true, 5);
	memset(&a, 0, sizeof(a));
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	cr_assert_eq(to_init(qp, &a, 0), 0);
	rtr_attr(&e, &a, &mask);
	a.ah_attr.grh.flow_label = 0x12345;
	a.ah_attr.grh.traffic_class = 0x20;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, mask, e.s.host[1].mac, 0), 0);
	rts_attr(&a, &mask);
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, mask, NULL, 0), 0);

	uroce_tp_query_qp(qp, &q, &qi);
	cr_assert_eq(q.qp_state, IBV_QPS_RTS);
	cr_assert_eq(q.cur_qp_state, IBV_QPS_RTS);
	cr_assert_eq(q.port_num, 1);
	cr_assert_eq(q.pkey_index, 0);
	cr_assert_eq(q.qp_access_flags, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	cr_assert_eq(q.path_mtu, IBV_MTU_2048);
	cr_assert_eq(q.dest_qp_num, 0x1234);
	cr_assert_eq(q.rq_psn, 0x42);
	cr_assert_eq(q.max_dest_rd_atomic, 2);
	cr_assert_eq(q.min_rnr_timer, 12);
	cr_assert(q.ah_attr.is_global);
	cr_assert_eq(q.ah_attr.port_num, 1);
	cr_assert_eq(memcmp(q.ah_attr.grh.dgid.raw, e.s.host[1].gid.raw, 16), 0);
	cr_assert_eq(q.ah_attr.grh.flow_label, 0x12345);
	cr_assert_eq(q.ah_attr.grh.traffic_class, 0x20);
	cr_assert_eq(q.sq_psn, 0x77);
	cr_assert_eq(q.timeout, 9);
	cr_assert_eq(q.retry_cnt, 5);
	cr_assert_eq(q.rnr_retry, 6);
	cr_assert_eq(q.max_rd_atomic, 3);
	cr_assert_eq(q.cap.max_send_wr, 8); /* 5 rounded up */
	cr_assert_eq(q.cap.max_recv_wr, 32);
	cr_assert_eq(qi.qp_type, IBV_QPT_RC);
	cr_assert(qi.sq_sig_all);
	cr_assert_eq(qi.cap.max_send_wr, 8);
	/* RTS->RTS changes what it may (min_rnr_timer, access flags). */
	memset(&a, 0, sizeof(a));
	a.min_rnr_timer = 3;
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
	cr_assert_eq(
		uroce_tp_modify_qp(qp, &a, IBV_QP_MIN_RNR_TIMER | IBV_QP_ACCESS_FLAGS, NULL, 0), 0);
	uroce_tp_query_qp(qp, &q, NULL);
	cr_assert_eq(q.min_rnr_timer, 3);
	cr_assert_eq(q.qp_access_flags, IBV_ACCESS_REMOTE_READ);
	cr_assert_eq(q.timeout, 9);
	env_fini(&e);
}

/* Brings e->qp[1] (host 1, connected to e->qp[0]) from RESET to @target. */
static void drive_to(struct env *e, enum ibv_qp_state target, const struct sim_qp_opts *o)
{
	struct ibv_qp_attr a;
	int mask;

	if (target == IBV_QPS_RESET)
		return;
	memset(&a, 0, sizeof(a));
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	cr_assert_eq(to_init(e->qp[1], &a, 0), 0);
	if (target == IBV_QPS_INIT)
		return;
	rtr_attr(e, &a, &mask);
	a.dest_qp_num = uroce_tp_qp_num(e->qp[0]);
	a.rq_psn = o->psn_a;
	a.path_mtu = o->mtu;
	a.ah_attr.grh.dgid = e->s.host[0].gid;
	cr_assert_eq(uroce_tp_modify_qp(e->qp[1], &a, mask, e->s.host[0].mac, 0), 0);
	if (target == IBV_QPS_RTR)
		return;
	rts_attr(&a, &mask);
	a.sq_psn = o->psn_b;
	cr_assert_eq(uroce_tp_modify_qp(e->qp[1], &a, mask, NULL, 0), 0);
}

static void reset_qp(struct uroce_tp_qp *qp)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE, NULL, 0), 0);
	cr_assert_eq(uroce_tp_qp_state(qp), IBV_QPS_RESET);
}

/* IBA 10.3.1 / table 94 "Any state to Reset": WQEs are removed without completions. */
Test(modify, reset_discards_without_completions)
{
	static const enum ibv_qp_state from[] = {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
						 IBV_QPS_SQD, IBV_QPS_ERR};

	for (size_t k = 0; k < sizeof(from) / sizeof(from[0]); k++) {
		struct env e;
		struct sim_qp_opts o = default_opts();
		struct uroce_tp_send_wqe w;
		struct ibv_qp_attr a;
		int before_sc, before_rc;

		env_init(&e);
		e.qp[0] = mkqp(&e, 0, IBV_QPT_RC, NULL, false, 8);
		e.qp[1] = mkqp(&e, 1, IBV_QPT_RC, NULL, false, 8);
		e.s.faults.cut = true; /* what is sent goes nowhere */
		drive_to(&e, from[k] == IBV_QPS_INIT || from[k] == IBV_QPS_RTR ? from[k]
										: IBV_QPS_RTS,
			 &o);
		post_recv(&e, 1, 100, 0, 64);
		post_recv(&e, 1, 101, 64, 64);
		if (from[k] != IBV_QPS_INIT && from[k] != IBV_QPS_RTR) {
			w = wr(200, IBV_WR_SEND, va(&e, 1, 0), 8, e.key[1], true);
			cr_assert_eq(uroce_tp_post_send(e.qp[1], &w, e.s.now), 0);
			w.wr_id = 201;
			cr_assert_eq(uroce_tp_post_send(e.qp[1], &w, e.s.now), 0);
			run_for(&e, 10 * US); /* sent (and lost) */
		}
		if (from[k] == IBV_QPS_SQD || from[k] == IBV_QPS_ERR) {
			memset(&a, 0, sizeof(a));
			a.qp_state = from[k];
			cr_assert_eq(uroce_tp_modify_qp(e.qp[1], &a, IBV_QP_STATE, NULL, e.s.now),
				     0);
		}
		cr_assert_eq(uroce_tp_qp_state(e.qp[1]), from[k]);
		collect(&e);
		before_sc = e.sc[1].n;
		before_rc = e.rc[1].n;
		cr_assert_eq(before_sc, from[k] == IBV_QPS_ERR ? 2 : 0);
		cr_assert_eq(before_rc, from[k] == IBV_QPS_ERR ? 2 : 0);

		reset_qp(e.qp[1]);
		run_for(&e, 500 * MS); /* no timer of the old life fires */
		cr_assert_eq(e.sc[1].n, before_sc, "from state %d", from[k]);
		cr_assert_eq(e.rc[1].n, before_rc, "from state %d", from[k]);

		/* A new life: only what is posted now is there. */
		e.s.faults.cut = false;
		o.psn_a = 0x500;
		drive_to(&e, IBV_QPS_RTS, &o);
		reset_qp(e.qp[0]);
		{
			struct ibv_qp_attr q;

			uroce_tp_query_qp(e.qp[1], &q, NULL);
			o.psn_b = q.sq_psn;
		}
		/* connect host 0's side by hand to host 1's PSNs */
		memset(&a, 0, sizeof(a));
		a.port_num = 1;
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		cr_assert_eq(to_init(e.qp[0], &a, 0), 0);
		{
			int mask;

			rtr_attr(&e, &a, &mask);
			a.dest_qp_num = uroce_tp_qp_num(e.qp[1]);
			a.rq_psn = o.psn_b;
			a.path_mtu = o.mtu;
			cr_assert_eq(uroce_tp_modify_qp(e.qp[0], &a, mask, e.s.host[1].mac, 0), 0);
			rts_attr(&a, &mask);
			a.sq_psn = o.psn_a;
			cr_assert_eq(uroce_tp_modify_qp(e.qp[0], &a, mask, NULL, 0), 0);
		}
		post_recv(&e, 1, 300, 256, 64);
		w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 8, e.key[0], true);
		post(&e, 0, &w);
		cr_assert(run_until(&e, 1, before_rc + 1, 100 * MS));
		expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
		expect_wc(&e.rc[1].wc[before_rc], 300, IBV_WC_SUCCESS);
		run_for(&e, 500 * MS);
		cr_assert_eq(e.sc[1].n, before_sc);
		cr_assert_eq(e.rc[1].n, before_rc + 1);
		env_fini(&e);
	}
}

/* IBA 10.3.1 "Any state to Error": every outstanding WR completes with WR_FLUSH_ERR, in
 * order, unsignaled ones too (a flush is an error). */
Test(modify, error_flushes_both_queues)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct ibv_qp_attr a;
	struct uroce_tp_recv_wqe r;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	e.s.faults.cut = true;
	for (int i = 0; i < 3; i++) {
		w = wr(10 + (uint64_t)i, IBV_WR_SEND, va(&e, 0, 0), 2000, e.key[0], i != 1);
		post(&e, 0, &w);
	}
	post_recv(&e, 0, 20, 0, 64);
	post_recv(&e, 0, 21, 64, 64);
	run_for(&e, 10 * US); /* the first packets go out (and are lost) */
	cr_assert_gt(nframes(0, ANY, ANY), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	cr_assert_eq(uroce_tp_modify_qp(e.qp[0], &a, IBV_QP_STATE, NULL, e.s.now), 0);
	collect(&e);
	cr_assert_eq(e.sc[0].n, 3);
	for (int i = 0; i < 3; i++) {
		expect_wc(&e.sc[0].wc[i], 10 + (uint64_t)i, IBV_WC_WR_FLUSH_ERR);
		cr_assert_eq(e.sc[0].wc[i].qp_num, uroce_tp_qp_num(e.qp[0]));
	}
	cr_assert_eq(e.rc[0].n, 2);
	expect_wc(&e.rc[0].wc[0], 20, IBV_WC_WR_FLUSH_ERR);
	expect_wc(&e.rc[0].wc[1], 21, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(qstate(&e, 0), IBV_QPS_ERR);
	/* Posting in ERR: accepted, flushed at once (recv too). */
	r = rwr(22, va(&e, 0, 0), 64, e.key[0]);
	cr_assert_eq(uroce_tp_post_recv(e.qp[0], &r), 0);
	collect(&e);
	expect_wc(&e.rc[0].wc[2], 22, IBV_WC_WR_FLUSH_ERR);
	/* No frame and no timer afterwards. */
	{
		uint32_t n = g_tx.n;

		run_for(&e, 1000 * MS);
		cr_assert_eq(g_tx.n, n);
	}
	cr_assert_eq(e.sc[0].n, 3);
	env_fini(&e);
}

/* IBA 10.3.1 (SQD): messages in progress finish, no new one starts; the SQ Drained
 * affiliated event (IBA 11.6.3.1; rxe: C10-72, comp.psn == req.psn) comes when nothing is
 * outstanding any more, even when WRs that were never started wait in the queue. */
Test(modify, sqd_drained_event)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct ibv_qp_attr a, q;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	post_recv(&e, 1, 1, 0, 4096);
	post_recv(&e, 1, 2, 4096, 4096);
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 3000, e.key[0], true);
	post(&e, 0, &w);
	uroce_tp_process(e.s.host[0].dev, e.s.now); /* WR 1 starts: 3 packets out */
	cr_assert_eq(nframes(0, ANY, ANY), 3);
	w = wr(2, IBV_WR_SEND, va(&e, 0, 0), 100, e.key[0], true);
	post(&e, 0, &w); /* posted, not started */

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	a.en_sqd_async_notify = 1;
	cr_assert_eq(uroce_tp_modify_qp(e.qp[0], &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY,
				       NULL, e.s.now), 0);
	cr_assert_eq(qstate(&e, 0), IBV_QPS_SQD);
	cr_assert_eq(nevents(IBV_EVENT_SQ_DRAINED, NULL), 0, "WR 1 is still in flight");
	uroce_tp_query_qp(e.qp[0], &q, NULL);
	cr_assert(q.sq_draining);

	run_for(&e, 10 * MS);
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	cr_assert_eq(e.sc[0].n, 1, "WR 2 must not start in SQD");
	cr_assert_eq(nframes(0, ANY, ANY), 3);
	cr_assert_eq(nevents(IBV_EVENT_SQ_DRAINED, e.qp[0]), 1);
	cr_assert_eq(g_ev.n, 1);
	uroce_tp_query_qp(e.qp[0], &q, NULL);
	cr_assert_not(q.sq_draining);

	/* Back to RTS: WR 2 goes. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	cr_assert_eq(uroce_tp_modify_qp(e.qp[0], &a, IBV_QP_STATE, NULL, e.s.now), 0);
	cr_assert(run_until(&e, 2, 2, 10 * MS));
	expect_wc(&e.sc[0].wc[1], 2, IBV_WC_SUCCESS);
	cr_assert_eq(nevents(IBV_EVENT_SQ_DRAINED, NULL), 1);

	/* Drained already when asked: the event comes at once. */
	a.qp_state = IBV_QPS_SQD;
	a.en_sqd_async_notify = 1;
	cr_assert_eq(uroce_tp_modify_qp(e.qp[0], &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY,
				       NULL, e.s.now), 0);
	cr_assert_eq(nevents(IBV_EVENT_SQ_DRAINED, e.qp[0]), 2);
	/* Without the notify flag, no event. */
	a.qp_state = IBV_QPS_RTS;
	cr_assert_eq(uroce_tp_modify_qp(e.qp[0], &a, IBV_QP_STATE, NULL, e.s.now), 0);
	a.qp_state = IBV_QPS_SQD;
	a.en_sqd_async_notify = 0;
	cr_assert_eq(uroce_tp_modify_qp(e.qp[0], &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY,
				       NULL, e.s.now), 0);
	cr_assert_eq(nevents(IBV_EVENT_SQ_DRAINED, NULL), 2);
	env_fini(&e);
}

static bool drop_first_atomic_ack(const struct frame_rec *r, void *arg)
{
	int *dropped = arg;

	if (r->from == 1 && r->opcode == OPC(RC, ATOMIC_ACKNOWLEDGE) && *dropped == 0) {
		(*dropped)++;
		return true;
	}
	return false;
}

static bool host1_got_one(void *arg)
{
	return cnt(arg, 1)->rcvd_pkts >= 1;
}

static bool atomic_executed(void *arg)
{
	(void)arg;
	return nframes(1, OPC(RC, ATOMIC_ACKNOWLEDGE), ANY) >= 1;
}

/* IBA table 94 lets SQD->SQD change max_dest_rd_atomic while the responder keeps working:
 * a READ response waiting to be sent and an atomic's saved result (for its duplicate,
 * IBA 9.7.5.1.5) must survive the change. */
Test(modify, sqd_grow_max_dest_rd_atomic_keeps_resources)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct ibv_qp_attr a, q;
	uint64_t init = 0x1000, v;
	int dropped = 0;

	env_init(&e);
	o.max_rd_atomic = 1;
	o.timeout = 8;
	env_pair(&e, IBV_QPT_RC, &o);
	fill(hp(&e, 1, 0), 3000, 9);
	w = wr(1, IBV_WR_RDMA_READ, va(&e, 0, 0), 3000, e.key[0], true);
	w.remote_addr = va(&e, 1, 0);
	w.rkey = e.key[1];
	post(&e, 0, &w);
	g_tx.busy[1] = 1000000; /* host 1 takes the READ but cannot answer yet */
	cr_assert(sim_run(&e.s, e.s.now + 1 * MS, host1_got_one, &e));
	cr_assert_eq(nframes(1, ANY, ANY), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	cr_assert_eq(uroce_tp_modify_qp(e.qp[1], &a, IBV_QP_STATE, NULL, e.s.now), 0);
	a.max_dest_rd_atomic = 4;
	cr_assert_eq(uroce_tp_modify_qp(e.qp[1], &a, IBV_QP_MAX_DEST_RD_ATOMIC, NULL, e.s.now), 0);
	uroce_tp_query_qp(e.qp[1], &q, NULL);
	cr_assert_eq(q.max_dest_rd_atomic, 4);
	g_tx.busy[1] = 0;
	cr_assert(run_until(&e, 1, 0, 1000 * MS));
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 0, 0), hp(&e, 1, 0), 3000), 0);
	cr_assert_eq(nframes(0, OPC(RC, READ_REQUEST), ANY), 1, "answered without a retry");

	/* An atomic executed, its answer lost, then the resources grow again: the retried
	 * request is a duplicate and gets the saved value, it is not executed again. */
	memcpy(hp(&e, 1, 8192), &init, 8);
	g_tx.drop = drop_first_atomic_ack;
	g_tx.drop_arg = &dropped;
	w = wr(2, IBV_WR_ATOMIC_FETCH_AND_ADD, va(&e, 0, 4096), 8, e.key[0], true);
	w.remote_addr = va(&e, 1, 8192);
	w.rkey = e.key[1];
	w.compare_add = 5;
	post(&e, 0, &w);
	cr_assert(sim_run(&e.s, e.s.now + 1 * MS, atomic_executed, &e));
	a.max_dest_rd_atomic = 8;
	cr_assert_eq(uroce_tp_modify_qp(e.qp[1], &a, IBV_QP_MAX_DEST_RD_ATOMIC, NULL, e.s.now), 0);
	cr_assert(run_until(&e, 2, 0, 1000 * MS));
	expect_wc(&e.sc[0].wc[1], 2, IBV_WC_SUCCESS);
	cr_assert_eq(dropped, 1);
	cr_assert_eq(cnt(&e, 1)->duplicate_request, 1);
	memcpy(&v, hp(&e, 1, 8192), 8);
	cr_assert_eq(v, init + 5);
	memcpy(&v, hp(&e, 0, 4096), 8);
	cr_assert_eq(v, init);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_SQD);
	env_fini(&e);
}

/* ==== 4. ordering and signaling =============================================================== */

/* IBA 10.7.2.2 / ibv_post_send(3): an unsignaled WR gives no completion when it succeeds;
 * a later signaled one completes after it (send completions are in order, IBA 10.8.3). */
Test(signal, unsignaled_then_signaled)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	fill(hp(&e, 0, 0), 3000, 4);
	for (int i = 0; i < 3; i++) {
		w = wr((uint64_t)i, IBV_WR_RDMA_WRITE, va(&e, 0, (uint64_t)i * 1000), 1000,
		       e.key[0], i == 2);
		w.remote_addr = va(&e, 1, (uint64_t)i * 1000);
		w.rkey = e.key[1];
		post(&e, 0, &w);
	}
	cr_assert(run_until(&e, 1, 0, 10 * MS));
	cr_assert_eq(e.sc[0].n, 1);
	expect_wc(&e.sc[0].wc[0], 2, IBV_WC_SUCCESS);
	cr_assert_eq(e.sc[0].wc[0].opcode, IBV_WC_RDMA_WRITE);
	cr_assert_eq(e.sc[0].wc[0].byte_len, 1000);
	/* When WR 2 completed, WR 0 and 1 had landed. */
	cr_assert_eq(memcmp(hp(&e, 1, 0), hp(&e, 0, 0), 3000), 0);
	run_for(&e, 10 * MS);
	cr_assert_eq(e.sc[0].n, 1);
	env_fini(&e);
}

/* sq_sig_all: every WR completes, whatever its flags. */
Test(signal, sq_sig_all)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;

	env_init(&e);
	e.qp[0] = mkqp(&e, 0, IBV_QPT_RC, NULL, true, 8);
	e.qp[1] = mkqp(&e, 1, IBV_QPT_RC, NULL, false, 8);
	sim_connect(&e.s, e.qp[0], 0, e.qp[1], 1, &o);
	for (int i = 0; i < 4; i++) {
		w = wr((uint64_t)i, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 10, e.key[0], false);
		w.remote_addr = va(&e, 1, 0);
		w.rkey = e.key[1];
		post(&e, 0, &w);
	}
	cr_assert(run_until(&e, 4, 0, 10 * MS));
	for (int i = 0; i < 4; i++)
		expect_wc(&e.sc[0].wc[i], (uint64_t)i, IBV_WC_SUCCESS);
	env_fini(&e);
}

/* ibv_post_send(3): an unsignaled WR that fails still produces its error completion. */
Test(signal, failing_unsignaled_completes)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	w = wr(1, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 10, e.key[0], false);
	w.remote_addr = va(&e, 1, 0);
	w.rkey = e.key[1];
	post(&e, 0, &w); /* succeeds silently */
	w.wr_id = 2;
	w.rkey = e.key[1] ^ 0x80; /* fails */
	post(&e, 0, &w);
	w.wr_id = 3;
	w.rkey = e.key[1];
	post(&e, 0, &w);
	cr_assert(run_until(&e, 2, 0, 10 * MS));
	cr_assert_eq(e.sc[0].n, 2);
	expect_wc(&e.sc[0].wc[0], 2, IBV_WC_REM_ACCESS_ERR);
	expect_wc(&e.sc[0].wc[1], 3, IBV_WC_WR_FLUSH_ERR);
	env_fini(&e);
}

/* ==== 5. UD =================================================================================== */

static void ud_send(struct env *e, struct uroce_tp_ah *ah, uint64_t id, uint32_t len,
		    uint32_t qkey)
{
	struct uroce_tp_send_wqe w = wr(id, IBV_WR_SEND, va(e, 0, 0), len, e->key[0], true);

	w.ah = ah;
	w.remote_qpn = uroce_tp_qp_num(e->qp[1]);
	w.remote_qkey = qkey;
	post(e, 0, &w);
}

/* IBA 10.2.5 / C10-15: a UD packet whose Q_Key is not the QP's is silently dropped; a
 * WR Q_Key with the high bit set means "the sending QP's own Q_Key". */
Test(ud, qkey)
{
	struct env e;
	struct uroce_tp_ah *ah;
	struct ibv_qp_attr a;

	env_init(&e);
	e.qp[0] = mkqp(&e, 0, IBV_QPT_UD, NULL, false, 8);
	e.qp[1] = mkqp(&e, 1, IBV_QPT_UD, NULL, false, 8);
	sim_ud_ready(&e.s, e.qp[0], 0x1111, 0);
	sim_ud_ready(&e.s, e.qp[1], 0x2222, 0);
	ah = sim_ah(&e.s, e.pd[0], 0, 1);
	fill(hp(&e, 0, 0), 100, 8);
	post_recv(&e, 1, 50, 0, 1024);
	post_recv(&e, 1, 51, 1024, 1024);

	ud_send(&e, ah, 1, 100, 0x3333); /* wrong Q_Key */
	ud_send(&e, ah, 2, 100, 0x80000000); /* the sender's own, 0x1111: wrong too */
	cr_assert(run_until(&e, 2, 0, 10 * MS));
	run_for(&e, 1 * MS);
	/* UD completes when sent (IBA 9.8.3), whatever happens to it. */
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	expect_wc(&e.sc[0].wc[1], 2, IBV_WC_SUCCESS);
	cr_assert_eq(g_tx.f[0].qkey, 0x3333);
	cr_assert_eq(g_tx.f[1].qkey, 0x1111);
	cr_assert_eq(cnt(&e, 1)->rcvd_bad_qkey, 2);
	cr_assert_eq(e.rc[1].n, 0);

	/* The sender takes the receiver's Q_Key as its own (UD RTS->RTS may change it). */
	memset(&a, 0, sizeof(a));
	a.qkey = 0x2222;
	cr_assert_eq(uroce_tp_modify_qp(e.qp[0], &a, IBV_QP_QKEY, NULL, e.s.now), 0);
	ud_send(&e, ah, 3, 100, 0x80000000);
	ud_send(&e, ah, 4, 100, 0x2222);
	cr_assert(run_until(&e, 4, 2, 10 * MS));
	cr_assert_eq(g_tx.f[2].qkey, 0x2222);
	cr_assert_eq(g_tx.f[3].qkey, 0x2222);
	cr_assert_eq(cnt(&e, 1)->rcvd_bad_qkey, 2);
	/* The dropped ones consumed no receive WQE. */
	expect_wc(&e.rc[1].wc[0], 50, IBV_WC_SUCCESS);
	expect_wc(&e.rc[1].wc[1], 51, IBV_WC_SUCCESS);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	env_fini(&e);
}

/* IBA 11.4.1.2 / rdma-core (ibv_ud_pingpong): the first 40 bytes of a UD receive buffer hold
 * the GRH; RoCEv2 over IPv4 puts the IPv4 header in its last 20 bytes (as rxe). */
Test(ud, grh_and_completion)
{
	struct env e;
	struct uroce_tp_ah *ah;
	const uint8_t *b;

	env_init(&e);
	e.qp[0] = mkqp(&e, 0, IBV_QPT_UD, NULL, false, 8);
	e.qp[1] = mkqp(&e, 1, IBV_QPT_UD, NULL, false, 8);
	sim_ud_ready(&e.s, e.qp[0], 0x1111, 0);
	sim_ud_ready(&e.s, e.qp[1], 0x1111, 0);
	ah = sim_ah(&e.s, e.pd[0], 0, 1);
	memset(hp(&e, 1, 0), 0xee, 4096);
	fill(hp(&e, 0, 0), 1024, 2);
	post_recv(&e, 1, 60, 0, 40 + 1024);
	ud_send(&e, ah, 1, 1024, 0x1111); /* exactly the MTU */
	cr_assert(run_until(&e, 1, 1, 10 * MS));
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	expect_wc(&e.rc[1].wc[0], 60, IBV_WC_SUCCESS);
	cr_assert_eq(e.rc[1].wc[0].opcode, IBV_WC_RECV);
	cr_assert(e.rc[1].wc[0].wc_flags & IBV_WC_GRH);
	cr_assert_eq(e.rc[1].wc[0].src_qp, uroce_tp_qp_num(e.qp[0]));
	cr_assert_eq(e.rc[1].wc[0].qp_num, uroce_tp_qp_num(e.qp[1]));
	cr_assert_eq(e.rc[1].wc[0].byte_len, 40 + 1024);
	b = hp(&e, 1, 0);
	cr_assert(all_bytes(b, 20, 0));
	cr_assert_eq(b[20], 0x45, "IPv4, IHL 5");
	cr_assert_eq(b[20 + 9], 17, "UDP");
	cr_assert_eq(b[20 + 12], 10);
	cr_assert_eq(b[20 + 13], 0);
	cr_assert_eq(b[20 + 14], 0);
	cr_assert_eq(b[20 + 15], 1, "source 10.0.0.1");
	cr_assert_eq(b[20 + 19], 2, "destination 10.0.0.2");
	cr_assert_eq(memcmp(b + 40, hp(&e, 0, 0), 1024), 0);
	cr_assert(all_bytes(b + 40 + 1024, 64, 0xee));
	cr_assert_eq(g_tx.f[0].src_qpn, uroce_tp_qp_num(e.qp[0]));
	env_fini(&e);
}

/* A UD receive buffer without room for the GRH + payload: LOC_LEN_ERR, nothing written,
 * the QP keeps receiving (a UD receive error affects only that WQE, as in rxe). */
Test(ud, receive_too_small)
{
	struct env e;
	struct uroce_tp_ah *ah;

	env_init(&e);
	e.qp[0] = mkqp(&e, 0, IBV_QPT_UD, NULL, false, 8);
	e.qp[1] = mkqp(&e, 1, IBV_QPT_UD, NULL, false, 8);
	sim_ud_ready(&e.s, e.qp[0], 0x1111, 0);
	sim_ud_ready(&e.s, e.qp[1], 0x1111, 0);
	ah = sim_ah(&e.s, e.pd[0], 0, 1);
	memset(hp(&e, 1, 0), 0xee, 4096);
	post_recv(&e, 1, 70, 0, 40 + 99);
	post_recv(&e, 1, 71, 1024, 40 + 100);
	ud_send(&e, ah, 1, 100, 0x1111);
	ud_send(&e, ah, 2, 100, 0x1111);
	cr_assert(run_until(&e, 2, 2, 10 * MS));
	expect_wc(&e.rc[1].wc[0], 70, IBV_WC_LOC_LEN_ERR);
	expect_wc(&e.rc[1].wc[1], 71, IBV_WC_SUCCESS);
	cr_assert_eq(e.rc[1].wc[1].byte_len, 140);
	cr_assert(all_bytes(hp(&e, 1, 0), 1024, 0xee));
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	env_fini(&e);
}

/* ==== 6. SRQ ================================================================================== */

static void send_one(struct env *e, uint64_t id, int want_sc, int want_rc)
{
	struct uroce_tp_send_wqe w = wr(id, IBV_WR_SEND, va(e, 0, 0), 32, e->key[0], true);

	post(e, 0, &w);
	cr_assert(run_until(e, want_sc, want_rc, 10 * MS));
}

/* IBA 10.2.9.2 / ibv_modify_srq(3): the limit event fires once, when fewer WQEs than the
 * limit remain, then the SRQ is disarmed until modify_srq sets a limit again. */
Test(srq, limit_event)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct ibv_srq_init_attr sa;
	struct ibv_srq_attr q, m;
	struct uroce_tp_srq *srq;
	struct uroce_tp_recv_wqe r;
	int sent = 0;

	env_init(&e);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 12;
	sa.attr.max_sge = 2;
	srq = uroce_tp_create_srq(e.pd[1], &sa);
	cr_assert_not_null(srq);
	cr_assert_eq(uroce_tp_query_srq(srq, &q), 0);
	cr_assert_eq(q.max_wr, 16);
	cr_assert_eq(q.max_sge, 2);
	cr_assert_eq(q.srq_limit, 0);
	e.qp[0] = mkqp(&e, 0, IBV_QPT_RC, NULL, false, 32);
	e.qp[1] = mkqp(&e, 1, IBV_QPT_RC, srq, false, 32);
	sim_connect(&e.s, e.qp[0], 0, e.qp[1], 1, &o);
	for (int i = 0; i < 8; i++) {
		r = rwr(100 + (uint64_t)i, va(&e, 1, (uint64_t)i * 64), 64, e.key[1]);
		cr_assert_eq(uroce_tp_post_srq_recv(srq, &r), 0);
	}
	memset(&m, 0, sizeof(m));
	m.srq_limit = 4;
	cr_assert_eq(uroce_tp_modify_srq(srq, &m, IBV_SRQ_LIMIT), 0);
	cr_assert_eq(uroce_tp_query_srq(srq, &q), 0);
	cr_assert_eq(q.srq_limit, 4);

	for (int i = 0; i < 4; i++) { /* 8 -> 4 left: not below the limit */
		send_one(&e, (uint64_t)sent, sent + 1, sent + 1);
		sent++;
	}
	cr_assert_eq(nevents(IBV_EVENT_SRQ_LIMIT_REACHED, NULL), 0);
	send_one(&e, (uint64_t)sent, sent + 1, sent + 1); /* 3 left */
	sent++;
	cr_assert_eq(nevents(IBV_EVENT_SRQ_LIMIT_REACHED, srq), 1);
	cr_assert_eq(uroce_tp_query_srq(srq, &q), 0);
	cr_assert_eq(q.srq_limit, 0, "disarmed");
	send_one(&e, (uint64_t)sent, sent + 1, sent + 1); /* 2 left */
	sent++;
	cr_assert_eq(nevents(IBV_EVENT_SRQ_LIMIT_REACHED, NULL), 1);

	/* Armed again at 2: refill to 4, then fire at 1 left. */
	for (int i = 8; i < 10; i++) {
		r = rwr(100 + (uint64_t)i, va(&e, 1, (uint64_t)i * 64), 64, e.key[1]);
		cr_assert_eq(uroce_tp_post_srq_recv(srq, &r), 0);
	}
	m.srq_limit = 2;
	cr_assert_eq(uroce_tp_modify_srq(srq, &m, IBV_SRQ_LIMIT), 0);
	send_one(&e, (uint64_t)sent, sent + 1, sent + 1); /* 3 left */
	sent++;
	send_one(&e, (uint64_t)sent, sent + 1, sent + 1); /* 2 left */
	sent++;
	cr_assert_eq(nevents(IBV_EVENT_SRQ_LIMIT_REACHED, NULL), 1);
	send_one(&e, (uint64_t)sent, sent + 1, sent + 1); /* 1 left */
	sent++;
	cr_assert_eq(nevents(IBV_EVENT_SRQ_LIMIT_REACHED, srq), 2);
	for (int i = 0; i < sent; i++) {
		expect_wc(&e.rc[1].wc[i], 100 + (uint64_t)i, IBV_WC_SUCCESS);
		cr_assert_eq(e.rc[1].wc[i].qp_num, uroce_tp_qp_num(e.qp[1]));
	}
	/* A limit above max_wr is refused; resizing is not offered. */
	m.srq_limit = 17;
	cr_assert_eq(uroce_tp_modify_srq(srq, &m, IBV_SRQ_LIMIT), -EINVAL);
	m.max_wr = 32;
	cr_assert_eq(uroce_tp_modify_srq(srq, &m, IBV_SRQ_MAX_WR), -EINVAL);
	cr_assert_eq(uroce_tp_destroy_srq(srq), -EBUSY);
	env_fini(&e);
}

Test(srq, two_qps_share_one)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct ibv_srq_init_attr sa;
	struct uroce_tp_srq *srq;
	struct uroce_tp_qp *a0, *a1, *b0, *b1;
	struct uroce_tp_recv_wqe r;
	struct uroce_tp_send_wqe w;

	env_init(&e);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 8;
	sa.attr.max_sge = 1;
	srq = uroce_tp_create_srq(e.pd[1], &sa);
	a0 = mkqp(&e, 0, IBV_QPT_RC, NULL, false, 8);
	b0 = mkqp(&e, 0, IBV_QPT_RC, NULL, false, 8);
	a1 = mkqp(&e, 1, IBV_QPT_RC, srq, false, 8);
	b1 = mkqp(&e, 1, IBV_QPT_RC, srq, false, 8);
	sim_connect(&e.s, a0, 0, a1, 1, &o);
	o.psn_a = 0x900;
	sim_connect(&e.s, b0, 0, b1, 1, &o);
	for (int i = 0; i < 4; i++) {
		r = rwr(10 + (uint64_t)i, va(&e, 1, (uint64_t)i * 64), 64, e.key[1]);
		cr_assert_eq(uroce_tp_post_srq_recv(srq, &r), 0);
	}
	fill(hp(&e, 0, 0), 64, 1);
	fill(hp(&e, 0, 64), 64, 2);
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 20, e.key[0], true);
	cr_assert_eq(uroce_tp_post_send(a0, &w, e.s.now), 0);
	cr_assert(run_until(&e, 1, 1, 10 * MS));
	w = wr(2, IBV_WR_SEND, va(&e, 0, 64), 30, e.key[0], true);
	cr_assert_eq(uroce_tp_post_send(b0, &w, e.s.now), 0);
	cr_assert(run_until(&e, 2, 2, 10 * MS));
	expect_wc(&e.rc[1].wc[0], 10, IBV_WC_SUCCESS);
	cr_assert_eq(e.rc[1].wc[0].qp_num, uroce_tp_qp_num(a1));
	cr_assert_eq(e.rc[1].wc[0].src_qp, uroce_tp_qp_num(a0));
	cr_assert_eq(e.rc[1].wc[0].byte_len, 20);
	expect_wc(&e.rc[1].wc[1], 11, IBV_WC_SUCCESS);
	cr_assert_eq(e.rc[1].wc[1].qp_num, uroce_tp_qp_num(b1));
	cr_assert_eq(e.rc[1].wc[1].src_qp, uroce_tp_qp_num(b0));
	cr_assert_eq(e.rc[1].wc[1].byte_len, 30);
	cr_assert_eq(memcmp(hp(&e, 1, 0), hp(&e, 0, 0), 20), 0);
	cr_assert_eq(memcmp(hp(&e, 1, 64), hp(&e, 0, 64), 30), 0);
	/* IBA 11.6.3.1: a QP on an SRQ reports its last WQE when it enters ERR. */
	{
		struct ibv_qp_attr a;

		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_ERR;
		cr_assert_eq(uroce_tp_modify_qp(a1, &a, IBV_QP_STATE, NULL, e.s.now), 0);
		cr_assert_eq(nevents(IBV_EVENT_QP_LAST_WQE_REACHED, a1), 1);
		collect(&e);
		cr_assert_eq(e.rc[1].n, 2, "the SRQ's WQEs are not flushed by one QP");
	}
	env_fini(&e);
}

/* ==== 7. PSN wrap ============================================================================= */

/* IBA 9.7.1: PSNs are 24 bits and wrap; a pair starting at 0xfffffe carries multi-packet
 * SENDs, WRITEs and READs through 0. */
Test(psn, wrap)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	const uint32_t len = 700; /* 3 packets of MTU 256 */
	bool saw_ffffff = false, saw_0_after = false;
	uint32_t last_ack = 0;

	env_init(&e);
	o.mtu = IBV_MTU_256;
	o.psn_a = 0xfffffe;
	o.psn_b = 0xffffff;
	env_pair(&e, IBV_QPT_RC, &o);
	for (int i = 0; i < 20; i++) {
		fill(hp(&e, 0, (uint64_t)i * 1024), len, (uint8_t)i);
		fill(hp(&e, 1, 65536 + (uint64_t)i * 1024), len, (uint8_t)(100 + i));
	}
	for (int i = 0; i < 10; i++)
		post_recv(&e, 1, (uint64_t)i, 32768 + (uint64_t)i * 1024, 1024);
	for (int i = 0; i < 20; i++) {
		enum ibv_wr_opcode op = i % 4 == 3 ? IBV_WR_RDMA_READ
				       : i % 2 ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;

		w = wr((uint64_t)i, op, va(&e, 0, (uint64_t)i * 1024), len, e.key[0], true);
		if (op == IBV_WR_RDMA_WRITE)
			w.remote_addr = va(&e, 1, 131072 + (uint64_t)i * 1024);
		if (op == IBV_WR_RDMA_READ) {
			w.sg_list[0].addr = va(&e, 0, 262144 + (uint64_t)i * 1024);
			w.remote_addr = va(&e, 1, 65536 + (uint64_t)i * 1024);
		}
		w.rkey = e.key[1];
		post(&e, 0, &w);
	}
	cr_assert(run_until(&e, 20, 10, 100 * MS));
	for (int i = 0; i < 20; i++) {
		expect_wc(&e.sc[0].wc[i], (uint64_t)i, IBV_WC_SUCCESS);
		cr_assert_eq(e.sc[0].wc[i].byte_len, len);
	}
	for (int i = 0, k = 0; i < 20; i++) {
		if (i % 4 == 3) {
			cr_assert_eq(memcmp(hp(&e, 0, 262144 + (uint64_t)i * 1024),
					    hp(&e, 1, 65536 + (uint64_t)i * 1024), len), 0);
		} else if (i % 2) {
			cr_assert_eq(memcmp(hp(&e, 1, 131072 + (uint64_t)i * 1024),
					    hp(&e, 0, (uint64_t)i * 1024), len), 0);
		} else {
			expect_wc(&e.rc[1].wc[k], (uint64_t)k, IBV_WC_SUCCESS);
			cr_assert_eq(e.rc[1].wc[k].byte_len, len);
			cr_assert_eq(memcmp(hp(&e, 1, 32768 + (uint64_t)k * 1024),
					    hp(&e, 0, (uint64_t)i * 1024), len), 0);
			k++;
		}
	}
	/* Every PSN on the wire in order, through the wrap; no loss, so no retry. */
	{
		uint32_t expect = o.psn_a;

		for (uint32_t i = 0; i < g_tx.n; i++) {
			const struct frame_rec *f = &g_tx.f[i];

			if (f->from == 0) {
				cr_assert_eq(f->psn, expect, "request %u", i);
				expect = uroce_psn_add(f->psn,
						       f->opcode == OPC(RC, READ_REQUEST) ? 3 : 1);
				saw_ffffff |= f->psn == 0xffffff;
				saw_0_after |= saw_ffffff && f->psn == 0;
			} else if (f->opcode == OPC(RC, ACKNOWLEDGE) ||
				   f->opcode == OPC(RC, READ_RESPONSE_LAST)) {
				last_ack = f->psn;
			}
		}
		cr_assert(saw_ffffff && saw_0_after);
		cr_assert_eq(last_ack, uroce_psn_add(o.psn_a, 60 - 1));
		cr_assert_eq(expect, uroce_psn_add(o.psn_a, 60));
	}
	cr_assert_eq(cnt(&e, 0)->completer_retry_err, 0);
	cr_assert_eq(cnt(&e, 1)->duplicate_request, 0);
	cr_assert_eq(cnt(&e, 1)->out_of_seq_request, 0);
	env_fini(&e);
}

/* ==== 8. ACK coalescing ======================================================================= */

struct ack_run {
	int acks, ackreq;
	uint64_t deferred;
};

static struct ack_run ack_run(uint32_t ack_coalesce)
{
	struct env e;
	struct uroce_tp_dev_cfg cfg;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct ack_run res;

	uroce_tp_dev_cfg_init(&cfg);
	cfg.ack_coalesce = ack_coalesce;
	env_init_cfg(&e, &cfg);
	o.mtu = IBV_MTU_256;
	env_pair(&e, IBV_QPT_RC, &o);
	for (int i = 0; i < 3; i++) {
		post_recv(&e, 1, (uint64_t)i, (uint64_t)i * 4096, 4096);
		w = wr((uint64_t)i, IBV_WR_SEND, va(&e, 0, 0), 10 * 256, e.key[0], true);
		post(&e, 0, &w);
	}
	cr_assert(run_until(&e, 3, 3, 100 * MS));
	run_for(&e, 1 * MS);
	for (int i = 0; i < 3; i++)
		expect_wc(&e.sc[0].wc[i], (uint64_t)i, IBV_WC_SUCCESS);
	cr_assert_eq(nframes(0, ANY, ANY), 30);
	res.acks = nacks(1, UROCE_AETH_ACK, ANY);
	cr_assert_eq(nacks(1, ANY, ANY), res.acks);
	res.ackreq = 0;
	for (uint32_t i = 0; i < g_tx.n; i++)
		res.ackreq += g_tx.f[i].from == 0 && g_tx.f[i].ack_req;
	res.deferred = cnt(&e, 1)->ack_deferred;
	cr_assert_eq(cnt(&e, 0)->rcvd_ghost_ack, 0);
	env_fini(&e);
	return res;
}

/* rxe ACKs AckReq packets only; uroce ACKs at least every ack_coalesce packets too. */
Test(ack, coalescing)
{
	struct ack_run r;

	r = ack_run(1); /* every packet */
	cr_assert_eq(r.ackreq, 3, "AckReq on the last packet of each message");
	cr_assert_eq(r.acks, 30);
	cr_assert_eq(r.deferred, 0);

	r = ack_run(1000); /* only AckReq */
	cr_assert_eq(r.ackreq, 3);
	cr_assert_eq(r.acks, 3);
	cr_assert_eq(r.deferred, 27);

	r = ack_run(4); /* packets 4, 8 and 10 (AckReq) of each message */
	cr_assert_eq(r.acks, 9);
	cr_assert_eq(r.deferred, 21);
}

/* ==== 9. CQ overflow ========================================================================== */

/* IBA C11-37: a CQ overrun is a CQ error (IBV_EVENT_CQ_ERR), raised once; completions
 * beyond the capacity are lost. */
Test(cq, overflow)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_cq *small;
	struct uroce_tp_qp_init init;
	struct uroce_tp_send_wqe w;
	struct ibv_wc wc[16];
	int n;

	env_init(&e);
	small = uroce_tp_create_cq(e.s.host[0].dev, 4);
	cr_assert_not_null(small);
	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_RC;
	init.send_cq = small;
	init.recv_cq = e.rc[0].cq;
	init.cap.max_send_wr = 16;
	e.qp[0] = uroce_tp_create_qp(e.pd[0], &init);
	e.qp[1] = mkqp(&e, 1, IBV_QPT_RC, NULL, false, 16);
	sim_connect(&e.s, e.qp[0], 0, e.qp[1], 1, &o);
	for (int i = 0; i < 10; i++) {
		w = wr((uint64_t)i, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 8, e.key[0], true);
		w.remote_addr = va(&e, 1, (uint64_t)i * 8);
		w.rkey = e.key[1];
		post(&e, 0, &w);
	}
	cr_assert_not(uroce_tp_cq_overflowed(small));
	run_for(&e, 10 * MS);
	cr_assert_eq(nevents(IBV_EVENT_CQ_ERR, small), 1);
	cr_assert_eq(g_ev.n, 1);
	cr_assert(uroce_tp_cq_overflowed(small));
	n = uroce_tp_poll_cq(small, 16, wc);
	/* ibv_create_cq(3): at least cqe entries; the rest of the 10 were lost. */
	cr_assert_geq(n, 4);
	cr_assert_lt(n, 10);
	for (int i = 0; i < n; i++)
		expect_wc(&wc[i], (uint64_t)i, IBV_WC_SUCCESS);
	/* IBA 11.4.2.1 (and rxe): the QP whose completion was lost goes to ERR. */
	cr_assert_eq(uroce_tp_qp_state(e.qp[0]), IBV_QPS_ERR);
	cr_assert_eq(uroce_tp_destroy_cq(small), -EBUSY);
	env_fini(&e);
}

/* ==== 10. atomics are executed once ========================================================== */


/* IBA 9.7.5.1.5: a duplicate atomic is not executed again; the responder answers
 * with the saved original value. */
static void atomic_replay(enum ibv_wr_opcode op)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	uint64_t init = 0x1000, v, res;
	int dropped = 0;

	env_init(&e);
	o.timeout = 8; /* 1 ms */
	env_pair(&e, IBV_QPT_RC, &o);
	memcpy(hp(&e, 1, 64), &init, 8);
	memset(hp(&e, 0, 0), 0xee, 8);
	g_tx.drop = drop_first_atomic_ack;
	g_tx.drop_arg = &dropped;
	w = wr(1, op, va(&e, 0, 0), 8, e.key[0], true);
	w.remote_addr = va(&e, 1, 64);
	w.rkey = e.key[1];
	w.compare_add = op == IBV_WR_ATOMIC_CMP_AND_SWP ? init : 5;
	w.swap = 0x2000;
	post(&e, 0, &w);
	cr_assert(run_until(&e, 1, 0, 100 * MS));
	run_for(&e, 10 * MS);

	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	cr_assert_eq(e.sc[0].wc[0].opcode,
		     op == IBV_WR_ATOMIC_CMP_AND_SWP ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD);
	cr_assert_eq(dropped, 1);
	/* The request went twice at the same PSN, it was answered twice with the same value. */
	cr_assert_eq(nframes(0, op == IBV_WR_ATOMIC_CMP_AND_SWP ? OPC(RC, COMPARE_SWAP)
							       : OPC(RC, FETCH_ADD),
			     o.psn_a), 2);
	cr_assert_eq(nframes(1, OPC(RC, ATOMIC_ACKNOWLEDGE), o.psn_a), 2);
	for (uint32_t i = 0; i < g_tx.n; i++)
		if (g_tx.f[i].opcode == OPC(RC, ATOMIC_ACKNOWLEDGE))
			cr_assert_eq(g_tx.f[i].orig, init);
	cr_assert_eq(cnt(&e, 0)->completer_retry_err, 1);
	cr_assert_eq(cnt(&e, 1)->duplicate_request, 1);
	/* Executed once: the target changed once, the requester got the original value. */
	memcpy(&v, hp(&e, 1, 64), 8);
	cr_assert_eq(v, op == IBV_WR_ATOMIC_CMP_AND_SWP ? 0x2000 : init + 5, "target %lx",
		     (unsigned long)v);
	memcpy(&res, hp(&e, 0, 0), 8);
	cr_assert_eq(res, init, "result %lx", (unsigned long)res);
	cr_assert_eq(qstate(&e, 0), IBV_QPS_RTS);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	env_fini(&e);
}

Test(atomic, fetch_add_replayed_not_reexecuted)
{
	atomic_replay(IBV_WR_ATOMIC_FETCH_AND_ADD);
}

Test(atomic, cmp_swap_replayed_not_reexecuted)
{
	atomic_replay(IBV_WR_ATOMIC_CMP_AND_SWP);
}

/* Found when fuzz_transport_rx first built lib/transport with clang: the responder read
 * and wrote an atomic's target through a uint64_t pointer, but only the VA is checked to
 * be 8-byte aligned, and an MR's host address need not be aligned as its iova is (an
 * undefined misaligned access; clang's -Wcast-align refused the cast). */
Test(atomic, target_misaligned_in_host_memory)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_wire_hdr h;
	struct uroce_tp_mr *mr;
	const uint64_t iova = 0x10000000; /* 8-byte aligned; its host bytes are not */
	uint8_t *host;
	uint64_t init = 0x1000, v;
	uint32_t rkey;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	host = hp(&e, 1, 0x2004);
	mr = uroce_tp_reg_mr(e.pd[1], iova, host, 64,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	cr_assert_not_null(mr);
	uroce_tp_mr_keys(mr, NULL, &rkey);
	memcpy(host + 8, &init, 8);
	memcpy(host + 16, &init, 8);

	uroce_wire_hdr_init(&h, 4, OPC(RC, FETCH_ADD));
	h.bth.psn = o.psn_a;
	h.bth.ack_req = true;
	h.atomiceth.va = iova + 8;
	h.atomiceth.rkey = rkey;
	h.atomiceth.swap_add = 5;
	inject(&e, &h, NULL, 0);
	uroce_wire_hdr_init(&h, 4, OPC(RC, COMPARE_SWAP));
	h.bth.psn = o.psn_a + 1;
	h.bth.ack_req = true;
	h.atomiceth.va = iova + 16;
	h.atomiceth.rkey = rkey;
	h.atomiceth.compare = init;
	h.atomiceth.swap_add = 0x2000;
	inject(&e, &h, NULL, 0);

	memcpy(&v, host + 8, 8);
	cr_assert_eq(v, init + 5, "fetch-add target %lx", (unsigned long)v);
	memcpy(&v, host + 16, 8);
	cr_assert_eq(v, 0x2000, "cmp-swap target %lx", (unsigned long)v);
	cr_assert_eq(nframes(1, OPC(RC, ATOMIC_ACKNOWLEDGE), ANY), 2);
	for (uint32_t i = 0; i < g_tx.n; i++)
		if (g_tx.f[i].opcode == OPC(RC, ATOMIC_ACKNOWLEDGE))
			cr_assert_eq(g_tx.f[i].orig, init);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	env_fini(&e);
}

/* ==== 11. what uroce_transport.h claims besides ============================================== */

/* "Malformed frames, bad ICRCs, unknown QPs and packets a QP may not take are dropped and
 * counted": nothing answers them and no QP changes. */
Test(device, rx_drops_are_counted)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_wire_hdr h;
	uint8_t payload[64];
	struct uroce_tp_qp *idle;
	const struct uroce_tp_counters *c;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	idle = mkqp(&e, 1, IBV_QPT_RC, NULL, false, 8);
	memset(hp(&e, 1, 0), 0xee, 4096);
	memset(payload, 0xab, sizeof(payload));
#define WRITE_HDR()                                                                        \
	do {                                                                               \
		uroce_wire_hdr_init(&h, 4, OPC(RC, WRITE_ONLY));                          \
		h.bth.psn = o.psn_a;                                                       \
		h.bth.ack_req = true;                                                      \
		h.reth.va = va(&e, 1, 0);                                                  \
		h.reth.rkey = e.key[1];                                                    \
		h.reth.dma_len = sizeof(payload);                                          \
	} while (0)
	WRITE_HDR();
	inject_raw(&e, &h, payload, sizeof(payload), 0, 30); /* truncated */
	WRITE_HDR();
	inject_raw(&e, &h, payload, sizeof(payload), 14 + 20 + 8 + 12 + 16 + 3,
		   0); /* payload bit */
	WRITE_HDR();
	h.bth.dqpn = 0xabcdef; /* no such QP */
	inject(&e, &h, payload, sizeof(payload));
	WRITE_HDR();
	h.bth.pkey = 0x1234; /* IBA 10.9.3: not our partition */
	inject(&e, &h, payload, sizeof(payload));
	WRITE_HDR();
	h.bth.opcode = OPC(UD, SEND_ONLY); /* a UD opcode on an RC QP */
	h.deth.qkey = 1;
	inject(&e, &h, payload, sizeof(payload));
	WRITE_HDR();
	h.bth.dqpn = uroce_tp_qp_num(idle); /* a QP in RESET */
	inject(&e, &h, payload, sizeof(payload));

	c = cnt(&e, 1);
	cr_assert_eq(c->rcvd_malformed, 1);
	cr_assert_eq(c->rcvd_icrc_err, 1);
	cr_assert_eq(c->rcvd_unknown_qp, 1);
	cr_assert_eq(c->rcvd_bad_pkey, 1);
	cr_assert_eq(c->rcvd_wrong_opcode, 1);
	cr_assert_eq(c->rcvd_in_wrong_state, 1);
	cr_assert_eq(c->rcvd_pkts, 4, "the four that parsed with a good ICRC");
	cr_assert_eq(nframes(1, ANY, ANY), 0);
	cr_assert(all_bytes(hp(&e, 1, 0), 4096, 0xee));
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	cr_assert_eq(uroce_tp_qp_state(idle), IBV_QPS_RESET);
	/* The real one is then taken. */
	WRITE_HDR();
	inject(&e, &h, payload, sizeof(payload));
	cr_assert(all_bytes(hp(&e, 1, 0), sizeof(payload), 0xab));
	cr_assert_eq(nacks(1, UROCE_AETH_ACK, ANY), 1);
#undef WRITE_HDR
	env_fini(&e);
}

/* The tx callback's -EAGAIN: "the transport keeps the packet's work and tries again on a
 * later call", and next_deadline() is 0 meanwhile. Nothing is lost, skipped or repeated. */
Test(device, tx_backpressure)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	post_recv(&e, 1, 1, 0, 4096);
	fill(hp(&e, 0, 0), 3000, 6);
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 3000, e.key[0], true);
	post(&e, 0, &w);
	g_tx.busy[0] = 3;
	g_tx.busy[1] = 2;
	/* Posted and not yet processed: work waits, so "now". */
	cr_assert_eq(uroce_tp_next_deadline(e.s.host[0].dev), 0);
	uroce_tp_process(e.s.host[0].dev, e.s.now);
	cr_assert_eq(nframes(0, ANY, ANY), 0);
	cr_assert_eq(uroce_tp_next_deadline(e.s.host[0].dev), 0);
	cr_assert(run_until(&e, 1, 1, 10 * MS));
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	expect_wc(&e.rc[1].wc[0], 1, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 1, 0), hp(&e, 0, 0), 3000), 0);
	for (int k = 0; k < 3; k++)
		cr_assert_eq(nframes(0, ANY, o.psn_a + (uint32_t)k), 1);
	cr_assert_eq(nframes(0, ANY, ANY), 3);
	cr_assert_eq(nacks(1, UROCE_AETH_ACK, ANY), 1);
	cr_assert_eq(cnt(&e, 0)->tx_busy, 3);
	cr_assert_eq(cnt(&e, 1)->tx_busy, 2); /* the ACK went once host 1's link let it */
	env_fini(&e);
}

/* An ACK from host 1 to host 0's QP for @psn, handed to host 0 directly. */
static void inject_ack_to0(struct env *e, uint32_t psn)
{
	struct uroce_wire_hdr h;
	uint8_t buf[256];
	uint32_t n;

	uroce_wire_hdr_init(&h, 4, OPC(RC, ACKNOWLEDGE));
	memcpy(h.eth_dst, e->s.host[0].mac, 6);
	memcpy(h.eth_src, e->s.host[1].mac, 6);
	h.ip_src[12] = 10, h.ip_src[15] = 2;
	h.ip_dst[12] = 10, h.ip_dst[15] = 1;
	h.udp_sport = UROCE_UDP_SPORT_MIN;
	h.bth.dqpn = uroce_tp_qp_num(e->qp[0]);
	h.bth.psn = psn & UROCE_PSN_MASK;
	h.aeth.syndrome = uroce_aeth_ack(UROCE_AETH_CREDIT_INVALID);
	h.aeth.msn = 1;
	n = uroce_wire_build(buf, sizeof(buf), &h, NULL, 0);
	cr_assert_gt(n, 0);
	uroce_tp_rx(e->s.host[0].dev, buf, n, e->s.now);
}

/* Found by fuzz_transport_rx: an ACK for a PSN the requester had not sent completed the
 * WQE with IBV_WC_SUCCESS: past a WQE whose packets tx had pushed back (the fuzzer's
 * input: every tx call -EAGAIN, then an ACK far ahead), or at the last PSN of a message
 * whose rest waits for the send window. A response can only answer what was sent: these
 * are ghosts, dropped and counted, and the message then goes out and completes for real. */
Test(device, ack_for_unsent_psn_is_ghost)
{
	struct env e;
	struct uroce_tp_dev_cfg cfg;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;

	uroce_tp_dev_cfg_init(&cfg);
	cfg.max_unacked_psns = 1; /* one PSN in flight: the SEND's second packet waits */
	env_init_cfg(&e, &cfg);
	env_pair(&e, IBV_QPT_RC, &o);
	post_recv(&e, 1, 7, 0, 4096);
	fill(hp(&e, 0, 0), 2048, 3);
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 2048, e.key[0], true);
	post(&e, 0, &w);

	/* Nothing sent: the WQE started, tx pushed back. */
	g_tx.busy[0] = 1;
	uroce_tp_process(e.s.host[0].dev, e.s.now);
	cr_assert_eq(nframes(0, ANY, ANY), 0);
	inject_ack_to0(&e, o.psn_a + 0x100);
	collect(&e);
	cr_assert_eq(e.sc[0].n, 0, "completed though nothing was sent");
	cr_assert_eq(cnt(&e, 0)->rcvd_ghost_ack, 1);

	/* SEND_FIRST sent, SEND_LAST not: an ACK at the message's last PSN. */
	uroce_tp_process(e.s.host[0].dev, e.s.now);
	cr_assert_eq(nframes(0, OPC(RC, SEND_FIRST), o.psn_a), 1);
	cr_assert_eq(nframes(0, ANY, ANY), 1);
	inject_ack_to0(&e, o.psn_a + 1);
	collect(&e);
	cr_assert_eq(e.sc[0].n, 0, "completed though its last packet was not sent");
	cr_assert_eq(cnt(&e, 0)->rcvd_ghost_ack, 2);
	cr_assert_eq(qstate(&e, 0), IBV_QPS_RTS);

	cr_assert(run_until(&e, 1, 1, 100 * MS));
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	expect_wc(&e.rc[1].wc[0], 7, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 1, 0), hp(&e, 0, 0), 2048), 0);
	cr_assert_eq(nframes(0, OPC(RC, SEND_LAST), o.psn_a + 1), 1);
	env_fini(&e);
}

/* "Given the same inputs and seed, the output is the same": byte for byte, at the same
 * virtual times. */
Test(device, deterministic)
{
	static struct frame_rec first[MAX_LOG];
	uint32_t n_first = 0;

	for (int run = 0; run < 2; run++) {
		struct env e;
		struct sim_qp_opts o = default_opts();
		struct uroce_tp_send_wqe w;

		env_init(&e);
		e.s.faults.drop = 0.05; /* the sim's own seeded losses: retries too */
		o.timeout = 8;
		env_pair(&e, IBV_QPT_RC, &o);
		for (int i = 0; i < 8; i++)
			post_recv(&e, 1, (uint64_t)i, (uint64_t)i * 4096, 4096);
		fill(hp(&e, 0, 0), 4096, 3);
		for (int i = 0; i < 16; i++) {
			w = wr((uint64_t)i, i % 2 ? IBV_WR_RDMA_READ : IBV_WR_SEND,
			       va(&e, 0, i % 2 ? 65536 + (uint64_t)i * 4096 : 0), 3000, e.key[0],
			       true);
			w.remote_addr = va(&e, 1, 0);
			w.rkey = e.key[1];
			post(&e, 0, &w);
		}
		cr_assert(run_until(&e, 16, 8, 10000 * MS));
		for (int i = 0; i < 16; i++)
			expect_wc(&e.sc[0].wc[i], (uint64_t)i, IBV_WC_SUCCESS);
		if (run == 0) {
			memcpy(first, g_tx.f, g_tx.n * sizeof(first[0]));
			n_first = g_tx.n;
			cr_assert_gt(cnt(&e, 0)->completer_retry_err, 0,
				     "the losses caused retries");
		} else {
			cr_assert_eq(g_tx.n, n_first);
			for (uint32_t i = 0; i < n_first; i++) {
				cr_assert_eq(g_tx.f[i].hash, first[i].hash, "frame %u", i);
				cr_assert_eq(g_tx.f[i].at, first[i].at, "frame %u", i);
				cr_assert_eq(g_tx.f[i].from, first[i].from, "frame %u", i);
			}
		}
		env_fini(&e);
	}
}

/* dev cfg max_unacked_psns: "at most this many PSNs in flight per QP", the last one the
 * window allows asks for an ACK; max_pkts_per_ack: "AckReq at least every this many". */
static bool drop_from_host1(const struct frame_rec *r, void *arg)
{
	(void)arg;
	return r->from == 1;
}

Test(device, send_window_and_ackreq)
{
	struct env e;
	struct uroce_tp_dev_cfg cfg;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;

	uroce_tp_dev_cfg_init(&cfg);
	cfg.max_unacked_psns = 4;
	cfg.max_pkts_per_ack = 3;
	env_init_cfg(&e, &cfg);
	o.mtu = IBV_MTU_256;
	env_pair(&e, IBV_QPT_RC, &o);
	post_recv(&e, 1, 1, 0, 4096);
	fill(hp(&e, 0, 0), 2560, 6);
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 2560, e.key[0], true); /* 10 packets */
	post(&e, 0, &w);
	g_tx.drop = drop_from_host1; /* no ACK comes back */
	run_for(&e, 10 * MS);
	cr_assert_eq(nframes(0, ANY, ANY), 4);
	for (uint32_t i = 0; i < 4; i++) {
		cr_assert_eq(g_tx.f[i].from, 0);
		cr_assert_eq(g_tx.f[i].psn, o.psn_a + i);
		cr_assert_eq(g_tx.f[i].ack_req, i == 2 || i == 3, "packet %u", i);
	}
	g_tx.drop = NULL;
	g_tx.n = 0;
	cr_assert(run_until(&e, 1, 1, 1000 * MS)); /* the timer resends, then it flows */
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 1, 0), hp(&e, 0, 0), 2560), 0);
	env_fini(&e);
}

Test(device, create_errors)
{
	struct env e;
	struct uroce_tp_dev_cfg cfg;
	struct uroce_tp_qp_init init;
	struct ibv_ah_attr ah;
	struct ibv_srq_init_attr sa;
	struct uroce_tp_mr *mr;
	uint32_t qpn;
	struct uroce_tp_recv_wqe r;

	env_init(&e);
	uroce_tp_dev_cfg_init(&cfg);
	cfg.gid_count = 1;
	cfg.tx = wrap_tx;
	cfg.ack_coalesce = 0;
	errno = 0;
	cr_assert_null(uroce_tp_dev_create(&cfg));
	cr_assert_eq(errno, EINVAL);
	uroce_tp_dev_cfg_init(&cfg);
	cfg.tx = wrap_tx; /* gid_count 0 */
	cr_assert_null(uroce_tp_dev_create(&cfg));
	cr_assert_eq(errno, EINVAL);

	cr_assert_null(uroce_tp_create_cq(e.s.host[0].dev, 0));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(uroce_tp_create_cq(e.s.host[0].dev, UROCE_TP_MAX_CQE + 1));
	cr_assert_eq(errno, EINVAL);

	/* ibv_reg_mr(3): remote write or atomic need local write. */
	errno = 0;
	cr_assert_null(
		uroce_tp_reg_mr(e.pd[0], va(&e, 0, 0), hp(&e, 0, 0), 64, IBV_ACCESS_REMOTE_WRITE));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(
		uroce_tp_reg_mr(e.pd[0], va(&e, 0, 0), hp(&e, 0, 0), 64, IBV_ACCESS_REMOTE_ATOMIC));
	cr_assert_eq(errno, EINVAL);
	mr = uroce_tp_reg_mr(e.pd[0], va(&e, 0, 0), hp(&e, 0, 0), 64, IBV_ACCESS_REMOTE_READ);
	cr_assert_not_null(mr);

	memset(&ah, 0, sizeof(ah));
	ah.is_global = 1;
	ah.port_num = 1;
	ah.grh.dgid = e.s.host[1].gid;
	ah.grh.sgid_index = 1;
	cr_assert_null(uroce_tp_create_ah(e.pd[0], &ah, e.s.host[1].mac));
	cr_assert_eq(errno, EINVAL);
	ah.grh.sgid_index = 0;
	ah.port_num = 2;
	cr_assert_null(uroce_tp_create_ah(e.pd[0], &ah, e.s.host[1].mac));
	cr_assert_eq(errno, EINVAL);
	ah.port_num = 1;
	ah.is_global = 0;
	cr_assert_null(uroce_tp_create_ah(e.pd[0], &ah, e.s.host[1].mac));
	cr_assert_eq(errno, EINVAL);

	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_XRC_SEND;
	init.send_cq = e.sc[0].cq;
	init.recv_cq = e.rc[0].cq;
	cr_assert_null(uroce_tp_create_qp(e.pd[0], &init));
	cr_assert_eq(errno, EINVAL);
	init.qp_type = IBV_QPT_RC;
	init.send_cq = NULL;
	cr_assert_null(uroce_tp_create_qp(e.pd[0], &init));
	cr_assert_eq(errno, EINVAL);
	init.send_cq = e.sc[0].cq;
	init.cap.max_send_wr = UROCE_TP_MAX_QP_WR + 1;
	cr_assert_null(uroce_tp_create_qp(e.pd[0], &init));
	init.cap.max_send_wr = 1;
	init.cap.max_send_sge = UROCE_TP_MAX_SGE + 1;
	cr_assert_null(uroce_tp_create_qp(e.pd[0], &init));
	init.cap.max_send_sge = 1;
	init.cap.max_inline_data = UROCE_TP_MAX_INLINE + 1;
	cr_assert_null(uroce_tp_create_qp(e.pd[0], &init));
	cr_assert_eq(errno, EINVAL);

	memset(&sa, 0, sizeof(sa));
	cr_assert_null(uroce_tp_create_srq(e.pd[0], &sa)); /* max_wr 0 */
	sa.attr.max_wr = 4;
	sa.attr.srq_limit = 5;
	cr_assert_null(uroce_tp_create_srq(e.pd[0], &sa));
	cr_assert_eq(errno, EINVAL);

	/* PD and CQ in use: -EBUSY; destroying a QP flushes nothing to its CQs. */
	cr_assert_eq(uroce_tp_dealloc_pd(e.pd[0]), -EBUSY);
	e.qp[0] = mkqp(&e, 0, IBV_QPT_RC, NULL, false, 8);
	cr_assert_eq(to_init(e.qp[0], NULL, 0), 0);
	r = rwr(1, va(&e, 0, 0), 64, e.key[0]);
	cr_assert_eq(uroce_tp_post_recv(e.qp[0], &r), 0);
	qpn = uroce_tp_qp_num(e.qp[0]);
	cr_assert_eq(uroce_tp_destroy_cq(e.rc[0].cq), -EBUSY);
	cr_assert_eq(uroce_tp_destroy_qp(e.qp[0]), 0);
	e.qp[0] = NULL;
	collect(&e);
	cr_assert_eq(e.rc[0].n, 0);
	cr_assert_null(uroce_tp_qp_lookup(e.s.host[0].dev, qpn));
	cr_assert_eq(uroce_tp_destroy_cq(e.rc[0].cq), 0);
	cr_assert_eq(uroce_tp_dereg_mr(mr), 0);
	cr_assert_eq(uroce_tp_dereg_mr(e.mr[0]), 0);
	cr_assert_eq(uroce_tp_dealloc_pd(e.pd[0]), 0);
	env_fini(&e);
}

/* Multicast (IBA 10.5): a UD SEND to a group reaches every attached QP, each with its own
 * receive WQE and Q_Key check; nothing reaches a QP once detached or destroyed. Attach
 * refuses RC QPs and unicast GIDs, and stops at the group's QP limit. */
static uint32_t mcast_frame(struct env *e, uint8_t *f, uint32_t cap, uint32_t qkey)
{
	static const uint8_t payload[64] = "to the group";
	struct uroce_wire_hdr h;

	uroce_wire_hdr_init(&h, 4, UROCE_OPCODE(UROCE_TRANSPORT_UD, UROCE_OP_SEND_ONLY));
	memcpy(h.eth_src, e->s.host[0].mac, 6);
	memcpy(h.eth_dst, (const uint8_t[6]){0x01, 0x00, 0x5e, 0x01, 0x02, 0x03}, 6);
	memcpy(h.ip_src + 12, uroce_gid_ipv4(e->s.host[0].gid.raw), 4);
	memcpy(h.ip_dst + 12, (const uint8_t[4]){239, 1, 2, 3}, 4);
	h.udp_sport = 0xc001;
	h.bth.pkey = UROCE_PKEY_DEFAULT;
	h.bth.dqpn = UROCE_TP_MCAST_QPN;
	h.deth.qkey = qkey;
	h.deth.src_qpn = 0x42;
	return uroce_wire_build(f, cap, &h, payload, sizeof(payload));
}

Test(behaviour, multicast_groups)
{
	struct env e;
	struct uroce_tp_qp *a, *b, *rc, *many[UROCE_TP_MAX_MCAST_QP_ATTACH];
	union ibv_gid grp = {.raw = {[10] = 0xff, [11] = 0xff, 239, 1, 2, 3}};
	union ibv_gid uni = {.raw = {[10] = 0xff, [11] = 0xff, 10, 0, 0, 1}};
	uint8_t f[256];
	uint32_t len, i;

	env_init(&e);
	a = mkqp(&e, 1, IBV_QPT_UD, NULL, false, 8);
	b = mkqp(&e, 1, IBV_QPT_UD, NULL, false, 8);
	rc = mkqp(&e, 1, IBV_QPT_RC, NULL, false, 8);
	sim_ud_ready(&e.s, a, 0x01234567, 0);
	sim_ud_ready(&e.s, b, 0x01234567, 0);
	cr_assert(uroce_tp_gid_is_mcast(&grp));
	cr_assert(!uroce_tp_gid_is_mcast(&uni));
	cr_assert_eq(uroce_tp_attach_mcast(rc, &grp), -EINVAL);
	cr_assert_eq(uroce_tp_attach_mcast(a, &uni), -EINVAL);
	cr_assert_eq(uroce_tp_attach_mcast(a, &grp), 0);
	cr_assert_eq(uroce_tp_attach_mcast(a, &grp), 0, "attached twice: no change");
	cr_assert_eq(uroce_tp_attach_mcast(b, &grp), 0);
	for (i = 0; i < 2; i++) {
		struct uroce_tp_recv_wqe r = rwr(10 + i, va(&e, 1, i * 1024), 1024, e.key[1]);

		cr_assert_eq(uroce_tp_post_recv(i ? b : a, &r), 0);
	}
	len = mcast_frame(&e, f, sizeof(f), 0x01234567);
	cr_assert_gt(len, 0);
	uroce_tp_rx(e.s.host[1].dev, f, len, e.s.now);
	collect(&e);
	cr_assert_eq(e.rc[1].n, 2, "one copy per attached QP");
	for (i = 0; i < 2; i++) {
		cr_assert_eq(e.rc[1].wc[i].status, IBV_WC_SUCCESS);
		cr_assert_eq(e.rc[1].wc[i].byte_len, 40 + 64); /* GRH + payload (UD) */
		cr_assert_eq(e.rc[1].wc[i].src_qp, 0x42);
	}
	cr_assert_neq(e.rc[1].wc[0].qp_num, e.rc[1].wc[1].qp_num);

	/* A wrong Q_Key: dropped by each QP (IBA 10.2.5), no WQE taken. */
	for (i = 0; i < 2; i++) {
		struct uroce_tp_recv_wqe r = rwr(20 + i, va(&e, 1, i * 1024), 1024, e.key[1]);

		cr_assert_eq(uroce_tp_post_recv(i ? b : a, &r), 0);
	}
	len = mcast_frame(&e, f, sizeof(f), 0x1111);
	uroce_tp_rx(e.s.host[1].dev, f, len, e.s.now);
	collect(&e);
	cr_assert_eq(e.rc[1].n, 2);

	/* Detached: only b gets the next one; then b is destroyed and nobody does. */
	cr_assert_eq(uroce_tp_detach_mcast(a, &grp), 0);
	cr_assert_eq(uroce_tp_detach_mcast(a, &grp), -EINVAL);
	len = mcast_frame(&e, f, sizeof(f), 0x01234567);
	uroce_tp_rx(e.s.host[1].dev, f, len, e.s.now);
	collect(&e);
	cr_assert_eq(e.rc[1].n, 3);
	cr_assert_eq(e.rc[1].wc[2].qp_num, uroce_tp_qp_num(b));
	uroce_tp_destroy_qp(b);
	uroce_tp_rx(e.s.host[1].dev, f, len, e.s.now);
	collect(&e);
	cr_assert_eq(e.rc[1].n, 3);

	/* The group's QP limit. */
	for (i = 0; i < UROCE_TP_MAX_MCAST_QP_ATTACH; i++) {
		many[i] = mkqp(&e, 1, IBV_QPT_UD, NULL, false, 1);
		cr_assert_eq(uroce_tp_attach_mcast(many[i], &grp), 0);
	}
	cr_assert_eq(uroce_tp_attach_mcast(a, &grp), -ENOMEM);
	env_fini(&e);
}

/* ---- VLAN ---------------------------------------------------------------------------------- */

static struct {
	uint8_t f[512];
	uint32_t len;
} g_vlan_tx;

static int vlan_keep_tx(void *ctx, const uint8_t *frame, uint32_t len)
{
	(void)ctx;
	cr_assert_leq(len, sizeof(g_vlan_tx.f));
	memcpy(g_vlan_tx.f, frame, len);
	g_vlan_tx.len = len;
	return 0;
}

/* One GSI packet from a device with @vlan_id to an address with @sl: the frame sent. */
static void vlan_send(uint16_t vlan_id, uint8_t sl, struct uroce_wire_pkt *p)
{
	static const uint8_t dmac[6] = {0x02, 0, 0, 0, 0, 2}, payload[256];
	struct uroce_tp_dev_cfg cfg;
	struct uroce_tp_dev *dev;
	struct ibv_ah_attr a;

	uroce_tp_dev_cfg_init(&cfg);
	cfg.mac[0] = 0x02;
	cfg.mac[5] = 1;
	cfg.gid[0].raw[10] = cfg.gid[0].raw[11] = 0xff;
	cfg.gid[0].raw[12] = 10;
	cfg.gid[0].raw[15] = 1;
	cfg.gid_count = 1;
	cfg.tx = vlan_keep_tx;
	cfg.vlan_id = vlan_id;
	dev = uroce_tp_dev_create(&cfg);
	cr_assert_not_null(dev);
	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.port_num = 1;
	a.sl = sl;
	a.grh.dgid = cfg.gid[0];
	a.grh.dgid.raw[15] = 2;
	g_vlan_tx.len = 0;
	cr_assert_eq(uroce_tp_gsi_send(dev, &a, dmac, 1, UROCE_TP_GSI_QKEY, payload,
				       sizeof(payload)), 0);
	cr_assert_eq(uroce_wire_parse(g_vlan_tx.f, g_vlan_tx.len, p), UROCE_WIRE_OK);
	cr_assert_eq(uroce_wire_icrc_check(p), UROCE_WIRE_OK);
	uroce_tp_dev_destroy(dev);
}

/* port.vlan: every frame carries the 802.1Q tag with the VID, the SL as its PCP. */
Test(vlan, tag_has_the_vid_and_the_sl_as_pcp)
{
	struct uroce_tp_dev_cfg cfg;
	struct uroce_wire_pkt p;

	vlan_send(7, 5, &p);
	cr_assert_eq(g_vlan_tx.f[12], 0x81);
	cr_assert_eq(g_vlan_tx.f[13], 0x00);
	cr_assert(p.hdr.vlan);
	cr_assert_eq(p.hdr.vlan_tci, 5 << 13 | 7, "PCP 5, DEI 0, VID 7: %#x", p.hdr.vlan_tci);
	vlan_send(4094, 0, &p);
	cr_assert_eq(p.hdr.vlan_tci, 4094);
	vlan_send(0, 5, &p);
	cr_assert(!p.hdr.vlan, "VLAN 0: untagged");

	uroce_tp_dev_cfg_init(&cfg);
	cfg.gid_count = 1;
	cfg.tx = vlan_keep_tx;
	cfg.vlan_id = 4095;
	cr_assert_null(uroce_tp_dev_create(&cfg));
	cr_assert_eq(errno, EINVAL);
}
