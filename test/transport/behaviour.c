/* SPDX-License-Identifier: BSD-3-Clause */
/* The behaviour suites' two-host environment: see behaviour.h. */
#include "behaviour.h"

struct tx_log g_tx;
struct ev_log g_ev;

int wrap_tx(void *ctx, const uint8_t *frame, uint32_t len)
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
	r.va = p.hdr.reth.va;
	r.rkey = p.hdr.reth.rkey;
	r.dma_len = p.hdr.reth.dma_len;
	r.xrc_srqn = p.hdr.xrc_srqn;
	memcpy(r.head, p.payload, p.payload_len < 8 ? p.payload_len : 8);
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

void on_event(void *ctx, enum ibv_event_type type, void *obj)
{
	(void)ctx;
	cr_assert_lt(g_ev.n, 64);
	g_ev.type[g_ev.n] = type;
	g_ev.obj[g_ev.n] = obj;
	g_ev.n++;
}

int nevents(enum ibv_event_type type, void *obj)
{
	int n = 0;

	for (int i = 0; i < g_ev.n; i++)
		n += g_ev.type[i] == type && (obj == NULL || g_ev.obj[i] == obj);
	return n;
}

/* Frames @from sent (and did not drop) with @opcode and @psn (ANY: every one). */
int nframes(int from, int opcode, int64_t psn)
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
int nacks(int from, int type, int code)
{
	int n = 0;

	for (uint32_t i = 0; i < g_tx.n; i++) {
		const struct frame_rec *r = &g_tx.f[i];

		if (r->from != from || r->dropped ||
		    UROCE_OPCODE_OP(r->opcode) != UROCE_OP_ACKNOWLEDGE) /* RC's or XRC's */
			continue;
		if (type != ANY && uroce_aeth_type(r->syn) != (enum uroce_aeth_type)type)
			continue;
		if (code != ANY && uroce_aeth_value(r->syn) != code)
			continue;
		n++;
	}
	return n;
}

const struct frame_rec *first_frame(int from, int opcode)
{
	for (uint32_t i = 0; i < g_tx.n; i++)
		if (g_tx.f[i].from == from && g_tx.f[i].opcode == opcode)
			return &g_tx.f[i];
	return NULL;
}

struct sim_qp_opts default_opts(void)
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

void env_init_cfg(struct env *e, const struct uroce_tp_dev_cfg *cfg_in)
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

void env_init(struct env *e)
{
	env_init_cfg(e, NULL);
}

struct uroce_tp_qp *mkqp(struct env *e, int h, enum ibv_qp_type type, struct uroce_tp_srq *srq,
			 bool sig_all, uint32_t max_send_wr)
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
void env_pair(struct env *e, enum ibv_qp_type type, const struct sim_qp_opts *o)
{
	e->qp[0] = mkqp(e, 0, type, NULL, false, 32);
	e->qp[1] = mkqp(e, 1, type, NULL, false, 32);
	sim_connect(&e->s, e->qp[0], 0, e->qp[1], 1, o);
}

void env_fini(struct env *e)
{
	sim_fini(&e->s);
	free(e->mem[0]);
	free(e->mem[1]);
}

uint64_t va(struct env *e, int h, uint64_t off)
{
	return e->iova[h] + off;
}

uint8_t *hp(struct env *e, int h, uint64_t off)
{
	return e->mem[h] + off;
}

void collect(struct env *e)
{
	for (int h = 0; h < 2; h++) {
		struct cqlog *l[2] = {&e->sc[h], &e->rc[h]};

		for (int k = 0; k < 2; k++)
			while (l[k]->n < 256 &&
			       uroce_tp_poll_cq(l[k]->cq, 1, &l[k]->wc[l[k]->n]) == 1)
				l[k]->n++;
	}
}

bool wants_met(void *arg)
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
bool run_until(struct env *e, int sc0, int rc1, uint64_t ns)
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
void run_for(struct env *e, uint64_t ns)
{
	uint64_t end = e->s.now + ns;

	sim_run(&e->s, end, NULL, NULL);
	if (e->s.now < end)
		e->s.now = end;
	collect(e);
}

struct uroce_tp_send_wqe wr(uint64_t id, enum ibv_wr_opcode op, uint64_t addr, uint32_t len,
			    uint32_t lkey, bool signaled)
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

void post(struct env *e, int h, const struct uroce_tp_send_wqe *w)
{
	cr_assert_eq(uroce_tp_post_send(e->qp[h], w, e->s.now), 0, "post_send wr %lu",
		     (unsigned long)w->wr_id);
}

struct uroce_tp_recv_wqe rwr(uint64_t id, uint64_t addr, uint32_t len, uint32_t lkey)
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

void post_recv(struct env *e, int h, uint64_t id, uint64_t off, uint32_t len)
{
	struct uroce_tp_recv_wqe r = rwr(id, va(e, h, off), len, e->key[h]);

	cr_assert_eq(uroce_tp_post_recv(e->qp[h], &r), 0);
}

void fill(uint8_t *p, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

bool all_bytes(const uint8_t *p, uint32_t len, uint8_t v)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

enum ibv_qp_state qstate(struct env *e, int h)
{
	return uroce_tp_qp_state(e->qp[h]);
}

const struct uroce_tp_counters *cnt(struct env *e, int h)
{
	return uroce_tp_counters(e->s.host[h].dev);
}

/* libibverbs is not linked (headers only): the names of the statuses used here. */
const char *st_name(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_SUCCESS:
		return "SUCCESS";
	case IBV_WC_LOC_LEN_ERR:
		return "LOC_LEN_ERR";
	case IBV_WC_LOC_PROT_ERR:
		return "LOC_PROT_ERR";
	case IBV_WC_WR_FLUSH_ERR:
		return "WR_FLUSH_ERR";
	case IBV_WC_REM_INV_REQ_ERR:
		return "REM_INV_REQ_ERR";
	case IBV_WC_REM_ACCESS_ERR:
		return "REM_ACCESS_ERR";
	case IBV_WC_REM_OP_ERR:
		return "REM_OP_ERR";
	case IBV_WC_RETRY_EXC_ERR:
		return "RETRY_EXC_ERR";
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return "RNR_RETRY_EXC_ERR";
	default:
		return "other";
	}
}

void expect_wc(const struct ibv_wc *wc, uint64_t id, enum ibv_wc_status st)
{
	cr_assert_eq(wc->wr_id, id, "wr_id %lu, expected %lu", (unsigned long)wc->wr_id,
		     (unsigned long)id);
	cr_assert_eq(wc->status, st, "wr %lu: status %s, expected %s", (unsigned long)id,
		     st_name(wc->status), st_name(st));
}

/* Builds a request from host 0 to host 1's qp[1] (or h->bth.dqpn) and hands it to host 1;
 * @corrupt_at: flip a bit of that byte, @trunc: pass only that many bytes. */
void inject_raw(struct env *e, struct uroce_wire_hdr *h, const void *payload, uint32_t len,
		uint32_t corrupt_at, uint32_t trunc)
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

void inject(struct env *e, struct uroce_wire_hdr *h, const void *payload, uint32_t len)
{
	inject_raw(e, h, payload, len, 0, 0);
}

/* ==== 1. completion statuses and NAKs ======================================================= */

/* IBA 9.7.6.1.3 / C9-152: after retry_cnt retransmissions without an answer the WQE
 * completes with RETRY_EXC_ERR, later WRs flush (IBA 10.3.1), the QP goes to ERR. */

int to_init(struct uroce_tp_qp *qp, const struct ibv_qp_attr *over, int extra)
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

bool drop_first_atomic_ack(const struct frame_rec *r, void *arg)
{
	int *dropped = arg;

	if (r->from == 1 && r->opcode == OPC(RC, ATOMIC_ACKNOWLEDGE) && *dropped == 0) {
		(*dropped)++;
		return true;
	}
	return false;
}

void inject_aeth_to0(struct env *e, uint8_t syndrome, uint32_t psn)
{
	inject_aeth_to0_qpn(e, uroce_tp_qp_num(e->qp[0]), syndrome, psn);
}

void inject_aeth_to0_qpn(struct env *e, uint32_t qpn, uint8_t syndrome, uint32_t psn)
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
	h.bth.dqpn = qpn;
	h.bth.psn = psn & UROCE_PSN_MASK;
	h.aeth.syndrome = syndrome;
	h.aeth.msn = 1;
	n = uroce_wire_build(buf, sizeof(buf), &h, NULL, 0);
	cr_assert_gt(n, 0);
	uroce_tp_rx(e->s.host[0].dev, buf, n, e->s.now);
}
