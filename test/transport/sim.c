/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* Test code checks even in release builds (NDEBUG removes assert). */
#define SIM_CHECK(cond)                                                                    \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #cond);    \
			abort();                                                           \
		}                                                                          \
	} while (0)

uint64_t sim_rand(struct sim *s)
{
	uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double sim_frand(struct sim *s)
{
	return (double)(sim_rand(s) >> 11) / (double)(1ull << 53);
}

static bool before(const struct sim_frame *a, const struct sim_frame *b)
{
	return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void heap_push(struct sim *s, struct sim_frame f)
{
	uint32_t i;

	if (s->nheap == s->capheap) {
		s->capheap = s->capheap ? s->capheap * 2 : 256;
		s->heap = realloc(s->heap, s->capheap * sizeof(*s->heap));
		SIM_CHECK(s->heap);
	}
	i = s->nheap++;
	while (i > 0 && before(&f, &s->heap[(i - 1) / 2])) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = f;
}

static struct sim_frame heap_pop(struct sim *s)
{
	struct sim_frame top = s->heap[0], last = s->heap[--s->nheap];
	uint32_t i = 0;

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= s->nheap)
			break;
		if (c + 1 < s->nheap && before(&s->heap[c + 1], &s->heap[c]))
			c++;
		if (!before(&s->heap[c], &last))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->nheap)
		s->heap[i] = last;
	return top;
}

/* What an injector lets through onto the link towards its host: delayed, in order (a
 * frame overtakes another only when lib/fault reorders it). */
static void link_emit(struct sim_host *h, const uint8_t *frame, uint32_t len)
{
	struct sim *s = h->sim;
	const struct sim_faults *f = &s->faults;
	struct sim_frame fr = {.len = len, .dst = h->id, .seq = s->seq++};

	fr.at = s->now + f->delay_ns + (f->jitter_ns ? sim_rand(s) % f->jitter_ns : 0);
	if (fr.at < s->link_at[h->id])
		fr.at = s->link_at[h->id];
	s->link_at[h->id] = fr.at;
	fr.data = malloc(len);
	SIM_CHECK(fr.data);
	memcpy(fr.data, frame, len);
	heap_push(s, fr);
}

/* Everything an injector call returned, in order, onto the link towards @p h. */
static void link_emit_out(struct sim_host *h, const struct uroce_fault_out *out, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		link_emit(h, out[i].frame, out[i].len);
}

static void faults_init(struct sim *s)
{
	const struct sim_faults *f = &s->faults;

	for (int i = 0; i < s->nhosts; i++) {
		struct uroce_fault_cfg c = {.drop = f->drop, .dup = f->dup,
					    .reorder = f->reorder, .corrupt = f->corrupt,
					    .reorder_timeout_ns = f->reorder_ns,
					    .seed = sim_rand(s)};

		SIM_CHECK(uroce_fault_init(&s->fault[i], &c) == 0);
	}
}

static void faults_fini(struct sim *s)
{
	for (int i = 0; i < s->nhosts; i++)
		uroce_fault_fini(&s->fault[i]);
}

void sim_set_faults(struct sim *s, const struct sim_faults *f)
{
	struct uroce_fault_out out[UROCE_FAULT_OUT_MAX];

	for (int i = 0; i < s->nhosts; i++)
		link_emit_out(&s->host[i], out, uroce_fault_flush(&s->fault[i], out));
	faults_fini(s);
	s->faults = *f;
	faults_init(s);
}

struct sim_fault_totals sim_fault_totals(const struct sim *s)
{
	struct sim_fault_totals t = {.dropped = s->lost};

	for (int i = 0; i < s->nhosts; i++) {
		t.dropped += s->fault[i].stats.dropped;
		t.duplicated += s->fault[i].stats.duplicated;
		t.reordered += s->fault[i].stats.reordered;
		t.corrupted += s->fault[i].stats.corrupted;
	}
	return t;
}

int sim_tx(void *ctx, const uint8_t *frame, uint32_t len)
{
	struct sim_host *h = ctx;
	struct sim *s = h->sim;
	const struct sim_faults *f = &s->faults;
	struct uroce_fault_stats was;
	struct uroce_fault_out out[UROCE_FAULT_OUT_MAX];
	uint32_t n;
	int dst = -1;

	if (f->tx_busy > 0 && sim_frand(s) < f->tx_busy) {
		s->busy++;
		return -EAGAIN;
	}
	s->sent++;
	for (int i = 0; i < s->nhosts; i++)
		if (memcmp(frame, s->host[i].mac, 6) == 0)
			dst = i;
	if (dst < 0 || f->cut) {
		s->lost++;
		if (s->tx_hook)
			s->tx_hook(s->tx_hook_arg, h->id, dst, frame, len, true);
		return 0;
	}
	was = s->fault[dst].stats;
	n = uroce_fault_offer(&s->fault[dst], s->now, frame, len, out);
	link_emit_out(&s->host[dst], out, n);
	if (s->tx_hook) {
		const struct uroce_fault_stats *after = &s->fault[dst].stats;

		s->tx_hook(s->tx_hook_arg, h->id, dst, frame, len,
			   after->dropped != was.dropped ||
				   after->corrupted != was.corrupted ||
				   after->reordered != was.reordered);
	}
	return 0;
}

int sim_tx_zc(void *ctx, const uint8_t *hdr, uint32_t hdr_len, const struct uroce_tp_tx_seg *seg,
	      uint32_t nseg, const uint8_t *tail, uint32_t tail_len)
{
	static uint8_t frame[16384];
	uint32_t len = hdr_len;

	memcpy(frame, hdr, hdr_len);
	for (uint32_t i = 0; i < nseg; i++) {
		SIM_CHECK(seg[i].mr_ctx != NULL && len + seg[i].len + tail_len <= sizeof(frame));
		memcpy(frame + len, seg[i].addr, seg[i].len);
		len += seg[i].len;
	}
	memcpy(frame + len, tail, tail_len);
	((struct sim_host *)ctx)->sim->zc_frames++;
	return sim_tx(ctx, frame, len + tail_len);
}

void sim_init(struct sim *s, uint64_t seed, int nhosts, const struct sim_faults *f,
	      const struct uroce_tp_dev_cfg *base_cfg)
{
	memset(s, 0, sizeof(*s));
	s->rng = seed;
	s->faults = *f;
	s->nhosts = nhosts;
	s->now = 1000000; /* not zero: a timer at 0 would hide bugs */
	s->trace = getenv("UROCE_SIM_TRACE") != NULL;
	for (int i = 0; i < nhosts; i++) {
		struct sim_host *h = &s->host[i];
		struct uroce_tp_dev_cfg cfg;

		if (base_cfg)
			cfg = *base_cfg;
		else
			uroce_tp_dev_cfg_init(&cfg);
		h->sim = s;
		h->id = i;
		memcpy(h->mac, "\x02\x00\x00\x00\x00\x00", 6);
		h->mac[5] = (uint8_t)(i + 1);
		uroce_gid_from_ipv4(h->gid.raw, (const uint8_t[4]){10, 0, 0, (uint8_t)(i + 1)});
		memcpy(cfg.mac, h->mac, 6);
		cfg.gid[0] = h->gid;
		cfg.gid_count = 1;
		cfg.tx = sim_tx;
		cfg.io_ctx = h;
		cfg.seed = seed * 31 + (uint64_t)i;
		h->dev = uroce_tp_dev_create(&cfg);
		SIM_CHECK(h->dev);
	}
	faults_init(s);
}

void sim_fini(struct sim *s)
{
	faults_fini(s);
	for (int i = 0; i < s->nhosts; i++)
		uroce_tp_dev_destroy(s->host[i].dev);
	for (uint32_t i = 0; i < s->nheap; i++)
		free(s->heap[i].data);
	free(s->heap);
	memset(s, 0, sizeof(*s));
}

bool sim_run(struct sim *s, uint64_t until_ns, bool (*done)(void *arg), void *arg)
{
	struct uroce_fault_out out[UROCE_FAULT_OUT_MAX];

	for (;;) {
		uint64_t next = UINT64_MAX;

		for (int i = 0; i < s->nhosts; i++) {
			uint32_t n = uroce_fault_process(&s->fault[i], s->now, out);

			link_emit_out(&s->host[i], out, n);
			uroce_tp_process(s->host[i].dev, s->now);
		}
		if (done && done(arg))
			return true;
		for (uint32_t burst = 0; s->nheap && s->heap[0].at <= s->now &&
					  (s->rx_burst == 0 || burst < s->rx_burst);
		     burst++) {
			struct sim_frame f = heap_pop(s);

			s->delivered++;
			if (s->trace) {
				struct uroce_wire_pkt p;

				if (uroce_wire_parse(f.data, f.len, &p) == UROCE_WIRE_OK)
					fprintf(stderr,
						"%12.3f us  -> h%d %-32s qp %06x psn %06x%s len %u "
						"syn %02x%s\n",
						(double)s->now / 1e3, f.dst,
						uroce_opcode_info(p.hdr.bth.opcode)->name,
						p.hdr.bth.dqpn, p.hdr.bth.psn,
						p.hdr.bth.ack_req ? " A" : "", p.payload_len,
						p.hdr.aeth.syndrome,
						uroce_wire_icrc_check(&p) == UROCE_WIRE_OK
							? ""
							: " (bad ICRC)");
				else
					fprintf(stderr, "%12.3f us  -> h%d (malformed)\n",
						(double)s->now / 1e3, f.dst);
			}
			uroce_tp_rx(s->host[f.dst].dev, f.data, f.len, s->now);
			free(f.data);
		}
		if (done && done(arg))
			return true;
		if (s->nheap && s->heap[0].at <= s->now)
			continue; /* the next receive burst, at the same time */
		/* Next event: a frame arriving, a timer, or (with backpressure) a retry. */
		if (s->nheap)
			next = s->heap[0].at;
		for (int i = 0; i < s->nhosts; i++) {
			uint64_t d = uroce_tp_next_deadline(s->host[i].dev);
			uint64_t held = uroce_fault_next_deadline(&s->fault[i]);

			if (d < next)
				next = d;
			if (held < next)
				next = held; /* a reordered frame's hold runs out */
		}
		if (next == UINT64_MAX || next > until_ns)
			return false;
		/* A device waiting for the link (deadline 0) is let go again a little later:
		 * the link has drained meanwhile. */
		s->now = next > s->now ? next : s->now + 100;
		if (s->now > until_ns)
			return false; /* a device still waiting for the link at the deadline */
	}
}

void sim_connect(struct sim *s, struct uroce_tp_qp *a, int host_a, struct uroce_tp_qp *b,
		 int host_b, const struct sim_qp_opts *o)
{
	struct uroce_tp_qp *qp[2] = {a, b};
	int host[2] = {host_a, host_b};
	uint32_t psn[2] = {o->psn_a, o->psn_b};

	for (int i = 0; i < 2; i++) {
		int peer = host[1 - i];
		struct ibv_qp_attr attr;
		struct ibv_qp_init_attr init;
		bool responder, requester; /* RC's attributes of each side (XRC has one each) */
		int rc;

		uroce_tp_query_qp(qp[i], &attr, &init);
		responder = init.qp_type == IBV_QPT_RC || init.qp_type == IBV_QPT_XRC_RECV;
		requester = init.qp_type == IBV_QPT_RC || init.qp_type == IBV_QPT_XRC_SEND;

		memset(&attr, 0, sizeof(attr));
		attr.qp_state = IBV_QPS_INIT;
		attr.port_num = 1;
		attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				       IBV_ACCESS_REMOTE_ATOMIC;
		rc = uroce_tp_modify_qp(qp[i], &attr,
					IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						IBV_QP_ACCESS_FLAGS,
					NULL, s->now);
		SIM_CHECK(rc == 0);

		memset(&attr, 0, sizeof(attr));
		attr.qp_state = IBV_QPS_RTR;
		attr.path_mtu = o->mtu;
		attr.dest_qp_num = uroce_tp_qp_num(qp[1 - i]);
		attr.rq_psn = psn[1 - i];
		attr.max_dest_rd_atomic = o->max_rd_atomic;
		attr.min_rnr_timer = o->min_rnr_timer;
		attr.ah_attr.is_global = 1;
		attr.ah_attr.port_num = 1;
		attr.ah_attr.grh.dgid = s->host[peer].gid;
		attr.ah_attr.grh.hop_limit = 1;
		rc = uroce_tp_modify_qp(
			qp[i], &attr,
			IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN |
				(responder ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0),
			s->host[peer].mac, s->now);
		SIM_CHECK(rc == 0);

		memset(&attr, 0, sizeof(attr));
		attr.qp_state = IBV_QPS_RTS;
		attr.sq_psn = psn[i];
		attr.timeout = o->timeout;
		attr.retry_cnt = o->retry_cnt;
		attr.rnr_retry = o->rnr_retry;
		attr.max_rd_atomic = o->max_rd_atomic;
		rc = uroce_tp_modify_qp(qp[i], &attr,
					IBV_QP_STATE | IBV_QP_SQ_PSN |
						(requester ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
								     IBV_QP_RNR_RETRY |
								     IBV_QP_MAX_QP_RD_ATOMIC :
						 responder ? IBV_QP_TIMEOUT :
							     0),
					NULL, s->now);
		SIM_CHECK(rc == 0);
	}
}

void sim_ud_ready(struct sim *s, struct uroce_tp_qp *qp, uint32_t qkey, uint32_t sq_psn)
{
	struct ibv_qp_attr attr;
	int rc;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.port_num = 1;
	attr.qkey = qkey;
	rc = uroce_tp_modify_qp(qp, &attr,
				IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, NULL,
				s->now);
	SIM_CHECK(rc == 0);
	attr.qp_state = IBV_QPS_RTR;
	rc = uroce_tp_modify_qp(qp, &attr, IBV_QP_STATE, NULL, s->now);
	SIM_CHECK(rc == 0);
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = sq_psn;
	rc = uroce_tp_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN, NULL, s->now);
	SIM_CHECK(rc == 0);
}

struct uroce_tp_ah *sim_ah(struct sim *s, struct uroce_tp_pd *pd, int from, int to)
{
	struct ibv_ah_attr a;

	(void)from;
	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.port_num = 1;
	a.grh.dgid = s->host[to].gid;
	return uroce_tp_create_ah(pd, &a, s->host[to].mac);
}
