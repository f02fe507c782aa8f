/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Randomised transport scenarios over the simulated wire (sim.c). Each seed builds two
 * hosts, RC/UC/UD QP pairs (some on an SRQ), PSNs that start anywhere and often just
 * before the 2^24 wrap, a channel that drops, duplicates, reorders, corrupts and pushes
 * back, receive queues that start short (RNR), and a random mix of SEND (+imm, inline),
 * RDMA WRITE (+imm), READ, atomics and Atomic Writes of 0 B to hundreds of KiB in both
 * directions of every pair. Then it checks the contract:
 *  - every posted WR completes exactly once, successfully, in posting order per QP;
 *  - RC receives are exactly the SENDs and WRITE-with-immediates sent, in order, intact;
 *  - RDMA WRITE and Atomic Write targets and READ results hold the right bytes;
 *  - atomics return the values of a serial execution and the counter ends at the
 *    serial result (so none ran twice, whatever was lost or duplicated);
 *  - UC and UD deliver only intact messages that were sent (UC: in order, no duplicate);
 *  - nothing more completes afterwards.
 * One failure is legitimate: on a link this lossy, an RC requester may spend all its
 * retries for real (the head of a long READ response lost eight times running). A
 * RETRY_EXC_ERR is accepted when the wire shows it: each of the retry_cnt + 1 intervals
 * it ended (before the first go-back, between go-backs, after the last) lost, corrupted
 * or reordered a frame of that connection. That connection is then left unchecked, the
 * others are checked as ever, and the summary counts such seeds.
 *
 *   sim_scenarios [--seeds FIRST:COUNT] [--seed N] [--big] [--seconds S] [-v]
 *
 * Prints a line per failing seed (re-run it alone with --seed N -v) and, last,
 * "sim: N passed, N failed".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>

#include "sim.h"

#define HOST_MEM (96u << 20)
#define MAX_OPS 16
#define MAX_CONN 5

struct op {
	enum ibv_wr_opcode opcode;
	uint32_t len;
	uint64_t src;  /* requester memory: data to send / where READ lands / atomic result */
	uint64_t dst;  /* responder memory: WRITE target / READ source */
	uint32_t imm;
	uint64_t add_or_cmp, swap, expect_orig;
	bool signaled, inline_, fence;
};

struct side {
	int host;
	struct uroce_tp_qp *qp;
	struct uroce_tp_cq *scq, *rcq;
	struct op ops[MAX_OPS];
	int nops;
	int next_sig;        /* ops[] index of the next signaled op expected to complete */
	int send_done;       /* signaled completions seen */
	int nsig;
	/* receiving (the peer's SENDs and WRITE-with-imm) */
	int recv_expected;   /* RC: how many receives the peer's ops consume */
	int recv_done;
	int recv_next_op;    /* peer op index the next receive must match */
	int late;            /* receive WQEs held back to cause RNR */
	uint32_t recv_size;
	uint64_t atomic_addr; /* our counter in the peer's memory */
	uint64_t atomic_final;
	struct uroce_tp_ah *ah; /* UD */
	/* Our RC requests as the wire saw them (note_frame): a go-back is a request packet
	 * that does not follow the one before; it starts at the oldest PSN not acknowledged,
	 * so go-backs from one PSN in a row are retries without progress in between. */
	bool sent_any;
	uint32_t next_psn;    /* the PSN after our latest request packet */
	uint32_t go_backs;
	uint32_t go_back_psn; /* where the latest go-back started */
	uint32_t stuck;       /* go-backs in a row from go_back_psn */
	uint32_t faults;      /* faulted frames of the connection since our latest go-back */
	uint32_t explained;   /* bit i: the interval before our i-th latest go-back had faults */
};

struct conn {
	enum ibv_qp_type type;
	struct side s[2];
	struct uroce_tp_srq *srq; /* shared by side 1's QP, if used */
	uint32_t mtu;             /* bytes */
	uint8_t retry_cnt;
	/* A side's retries ran out and the faults explain it: from then on neither side's
	 * completions, receives or memory are checked. */
	bool lost;
};

struct host_mem {
	uint8_t *buf;
	uint64_t iova;
	uint32_t used;
	struct uroce_tp_pd *pd;
	struct uroce_tp_mr *mr;
	uint32_t key;
};

struct scenario {
	uint64_t seed;
	bool verbose, big;
	struct sim sim;
	struct host_mem mem[2];
	struct conn conn[MAX_CONN];
	int nconn;
	char fail[512];
	char flushed[256];
	char lost[256]; /* the first connection lost to explained retry exhaustion */
	struct uroce_tp_counters counters[2];
	/* the link's figures, kept at teardown for the summary line */
	struct sim_fault_totals faults;
	uint64_t sent, delivered, busy, zc_frames, end_ns;
		/* kept from the devices at teardown */ /* a WR_FLUSH_ERR is a consequence: reported
							   if nothing else is */
};

static uint8_t *g_mem[2];

#define FAIL(sc, ...)                                                                      \
	do {                                                                               \
		if ((sc)->fail[0] == '\0')                                                 \
			snprintf((sc)->fail, sizeof((sc)->fail), __VA_ARGS__);             \
	} while (0)

static uint8_t pattern(uint64_t seed, int conn, int side, int op, uint32_t i)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)conn << 40) ^
		     ((uint64_t)side << 36) ^ ((uint64_t)op << 24) ^ i;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	return (uint8_t)(x >> 32);
}

static uint64_t mem_alloc(struct scenario *sc, int host, uint32_t len, uint32_t align)
{
	struct host_mem *m = &sc->mem[host];
	uint32_t at = (m->used + align - 1) & ~(align - 1);

	if (at + len + 64 > HOST_MEM)
		return UINT64_MAX;
	m->used = at + len + 64;
	return m->iova + at;
}

static uint8_t *host_ptr(struct scenario *sc, int host, uint64_t iova)
{
	return sc->mem[host].buf + (iova - sc->mem[host].iova);
}

static uint32_t pick_len(struct scenario *sc, uint32_t mtu)
{
	uint64_t r = sim_rand(&sc->sim) % 1000;

	if (r < 300)
		return (uint32_t)(sim_rand(&sc->sim) % 65);
	if (r < 600)
		return (uint32_t)(sim_rand(&sc->sim) % (2 * mtu + 2));
	if (r < 850)
		return (uint32_t)(sim_rand(&sc->sim) % 16385);
	if (r < 990)
		return (uint32_t)(sim_rand(&sc->sim) % 65537);
	return (uint32_t)(sim_rand(&sc->sim) % (sc->big ? (4u << 20) : (512u << 10)));
}

/* ---- building a scenario ---------------------------------------------------------------- */

static void gen_ops(struct scenario *sc, int ci, int si)
{
	struct conn *c = &sc->conn[ci];
	struct side *s = &c->s[si];
	int peer = c->s[1 - si].host;
	uint32_t mtu = 1024;
	uint64_t cur = 0;
	int n = 1 + (int)(sim_rand(&sc->sim) % (MAX_OPS - 1));

	if (c->type == IBV_QPT_RC) {
		s->atomic_addr = mem_alloc(sc, peer, 8, 8);
		cur = sim_rand(&sc->sim);
		memcpy(host_ptr(sc, peer, s->atomic_addr), &cur, 8);
	}
	{
		struct ibv_qp_attr a;
		uroce_tp_query_qp(s->qp, &a, NULL);
		mtu = 128u << a.path_mtu;
	}
	for (int k = 0; k < n; k++) {
		struct op *o = &s->ops[s->nops];
		uint64_t r = sim_rand(&sc->sim) % 100;

		memset(o, 0, sizeof(*o));
		if (c->type == IBV_QPT_UD)
			o->opcode = r < 60 ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM;
		else if (c->type == IBV_QPT_UC)
			o->opcode = r < 35 ? IBV_WR_SEND
				    : r < 50 ? IBV_WR_SEND_WITH_IMM
				    : r < 85 ? IBV_WR_RDMA_WRITE
					     : IBV_WR_RDMA_WRITE_WITH_IMM;
		else
			o->opcode = r < 25 ? IBV_WR_SEND
				    : r < 35 ? IBV_WR_SEND_WITH_IMM
				    : r < 50 ? IBV_WR_RDMA_WRITE
				    : r < 55 ? IBV_WR_ATOMIC_WRITE
				    : r < 62 ? IBV_WR_RDMA_WRITE_WITH_IMM
				    : r < 82 ? IBV_WR_RDMA_READ
				    : r < 91 ? IBV_WR_ATOMIC_FETCH_AND_ADD
					     : IBV_WR_ATOMIC_CMP_AND_SWP;
		o->len = c->type == IBV_QPT_UD ? (uint32_t)(sim_rand(&sc->sim) % (mtu + 1))
						: pick_len(sc, mtu);
		if (o->opcode == IBV_WR_ATOMIC_WRITE)
			o->len = 8; /* to an 8-aligned target: dst below is 64-aligned */
		/* Receive buffers come later, from the other half of the memory: SENDs stay
		 * below 512 KiB and ops stop at half the memory. */
		if ((o->opcode == IBV_WR_SEND || o->opcode == IBV_WR_SEND_WITH_IMM) &&
		    o->len > (512u << 10))
			o->len = 512u << 10;
		if (sc->mem[0].used > HOST_MEM / 2 || sc->mem[1].used > HOST_MEM / 2)
			break;
		o->imm = (uint32_t)(ci << 24 | si << 16 | s->nops);
		o->signaled = sim_rand(&sc->sim) % 5 != 0;
		o->fence = sim_rand(&sc->sim) % 20 == 0;
		if (o->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
		    o->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
			o->len = 8;
			o->src = mem_alloc(sc, s->host, 8, 8);
			o->dst = s->atomic_addr;
			o->expect_orig = cur;
			if (o->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
				o->add_or_cmp = sim_rand(&sc->sim);
				cur += o->add_or_cmp;
			} else {
				o->add_or_cmp = sim_rand(&sc->sim) % 3 ? cur : cur ^ 1;
				o->swap = sim_rand(&sc->sim);
				if (o->add_or_cmp == cur)
					cur = o->swap;
			}
		} else {
			o->src = mem_alloc(sc, s->host, o->len, 64);
			if (o->opcode == IBV_WR_RDMA_WRITE ||
			    o->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
			    o->opcode == IBV_WR_RDMA_READ || o->opcode == IBV_WR_ATOMIC_WRITE)
				o->dst = mem_alloc(sc, peer, o->len, 64);
			if (o->src == UINT64_MAX || o->dst == UINT64_MAX)
				break; /* out of memory for this seed: fewer ops */
			o->inline_ = o->len <= UROCE_TP_MAX_INLINE &&
				     o->opcode != IBV_WR_RDMA_READ && sim_rand(&sc->sim) % 3 == 0;
			/* What the requester sends, or for a READ what the responder holds. */
			for (uint32_t i = 0; i < o->len; i++) {
				uint8_t v = pattern(sc->seed, ci, si, s->nops, i);

				if (o->opcode == IBV_WR_RDMA_READ)
					host_ptr(sc, peer, o->dst)[i] = v;
				else
					host_ptr(sc, s->host, o->src)[i] = v;
			}
			if (o->opcode == IBV_WR_SEND || o->opcode == IBV_WR_SEND_WITH_IMM) {
				if (o->len > c->s[1 - si].recv_size)
					c->s[1 - si].recv_size = o->len;
			}
			if (o->opcode == IBV_WR_SEND || o->opcode == IBV_WR_SEND_WITH_IMM ||
			    o->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
				c->s[1 - si].recv_expected++;
		}
		s->nops++;
	}
	if (s->nops)
		s->ops[s->nops - 1].signaled = true; /* so that "all done" is observable */
	for (int k = 0; k < s->nops; k++)
		s->nsig += s->ops[k].signaled;
	s->atomic_final = cur;
}

static void post_op(struct scenario *sc, struct conn *c, int si, int k)
{
	struct side *s = &c->s[si];
	const struct op *o = &s->ops[k];
	struct uroce_tp_send_wqe w;
	int rc;

	memset(&w, 0, sizeof(w));
	w.wr_id = (uint64_t)k;
	w.opcode = o->opcode;
	w.send_flags = (o->signaled ? IBV_SEND_SIGNALED : 0) | (o->fence ? IBV_SEND_FENCE : 0);
	w.imm_data = o->imm;
	w.remote_addr = o->dst;
	w.rkey = sc->mem[s->host ^ 1].key;
	w.compare_add = o->add_or_cmp;
	w.swap = o->swap;
	if (o->inline_) {
		w.send_flags |= IBV_SEND_INLINE;
		w.inline_len = o->len;
		memcpy(w.inline_data, host_ptr(sc, s->host, o->src), o->len);
	} else {
		w.num_sge = 1;
		w.sg_list[0].addr = o->src;
		w.sg_list[0].length = o->len;
		w.sg_list[0].lkey = sc->mem[s->host].key;
		/* Split some messages over several SGEs. */
		if (o->len >= 3 && sim_rand(&sc->sim) % 4 == 0) {
			uint32_t a = o->len / 3, b = o->len / 3;

			w.num_sge = 3;
			w.sg_list[0].length = a;
			w.sg_list[1] = w.sg_list[0];
			w.sg_list[1].addr = o->src + a;
			w.sg_list[1].length = b;
			w.sg_list[2] = w.sg_list[0];
			w.sg_list[2].addr = o->src + a + b;
			w.sg_list[2].length = o->len - a - b;
		}
	}
	if (s->ah) {
		/* UD names its destination in every WR. */
		w.ah = s->ah;
		w.remote_qpn = uroce_tp_qp_num(c->s[1 - si].qp);
		w.remote_qkey =
			sim_rand(&sc->sim) % 2 ? 0x11111111 : 0x80000000; /* or "the QP's" */
	}
	rc = uroce_tp_post_send(s->qp, &w, sc->sim.now);
	if (rc)
		FAIL(sc, "post_send op %d: %d", k, rc);
}

static void post_recvs(struct scenario *sc, struct conn *c, struct side *s, int n)
{
	for (int k = 0; k < n; k++) {
		struct uroce_tp_recv_wqe r;
		uint32_t size = s->recv_size + (c->type == IBV_QPT_UD ? 40 : 0);
		uint64_t at = mem_alloc(sc, s->host, size ? size : 1, 64);
		int rc;

		if (at == UINT64_MAX) {
			FAIL(sc, "out of memory for receive buffers");
			return;
		}
		memset(&r, 0, sizeof(r));
		r.wr_id = at;
		r.num_sge = 1;
		r.sg_list[0].addr = at;
		r.sg_list[0].length = size;
		r.sg_list[0].lkey = sc->mem[s->host].key;
		rc = (c->srq && s == &c->s[1]) ? uroce_tp_post_srq_recv(c->srq, &r)
						 : uroce_tp_post_recv(s->qp, &r);
		if (rc)
			FAIL(sc, "post_recv: %d", rc);
	}
}

/* ---- checking ---------------------------------------------------------------------------- */

static bool data_matches(struct scenario *sc, const uint8_t *p, int ci, int si, int k, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != pattern(sc->seed, ci, si, k, i))
			return false;
	return true;
}

/* The peer op a received message is, for UC/UD where some are lost: from @from on. */
static int identify(struct scenario *sc, int ci, int psi, const struct ibv_wc *wc,
		    const uint8_t *data, int from)
{
	const struct side *p = &sc->conn[ci].s[psi];

	for (int k = from; k < p->nops; k++) {
		const struct op *o = &p->ops[k];
		bool imm = wc->wc_flags & IBV_WC_WITH_IMM;

		if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
			if (o->opcode == IBV_WR_RDMA_WRITE_WITH_IMM &&
			    ntohl(wc->imm_data) == o->imm)
				return k;
			continue;
		}
		if (o->opcode != IBV_WR_SEND && o->opcode != IBV_WR_SEND_WITH_IMM)
			continue;
		if (imm != (o->opcode == IBV_WR_SEND_WITH_IMM) ||
		    (imm && ntohl(wc->imm_data) != o->imm))
			continue;
		if (wc->byte_len == o->len && data_matches(sc, data, ci, psi, k, o->len))
			return k;
	}
	return -1;
}

static void check_recv(struct scenario *sc, int ci, int si, const struct ibv_wc *wc)
{
	struct conn *c = &sc->conn[ci];
	struct side *s = &c->s[si];
	int psi = 1 - si;
	const struct side *p = &c->s[psi];
	const uint8_t *data = host_ptr(sc, s->host, wc->wr_id);
	int k;

	if (c->lost)
		return;
	if (wc->status == IBV_WC_WR_FLUSH_ERR) {
		if (!sc->flushed[0])
			snprintf(sc->flushed, sizeof(sc->flushed),
				 "conn %d side %d: receive flushed", ci, si);
		return;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		FAIL(sc, "conn %d side %d: receive status %d", ci, si, wc->status);
		return;
	}
	if (c->type == IBV_QPT_UD) {
		struct ibv_wc w2 = *wc;

		if (!(wc->wc_flags & IBV_WC_GRH) || wc->byte_len < 40 ||
		    wc->src_qp != uroce_tp_qp_num(p->qp)) {
			FAIL(sc, "conn %d: UD completion without GRH/source QP", ci);
			return;
		}
		w2.byte_len -= 40;
		if (identify(sc, ci, psi, &w2, data + 40, 0) < 0)
			FAIL(sc, "conn %d: UD message %u B not one that was sent", ci, w2.byte_len);
		s->recv_done++;
		return;
	}
	if (c->type == IBV_QPT_UC) {
		k = identify(sc, ci, psi, wc, data, s->recv_next_op);
		if (k < 0) {
			FAIL(sc, "conn %d side %d: UC message not intact or out of order", ci, si);
			return;
		}
		s->recv_next_op = k + 1;
		s->recv_done++;
		return;
	}
	/* RC: exactly the next one */
	for (k = s->recv_next_op; k < p->nops; k++)
		if (p->ops[k].opcode == IBV_WR_SEND || p->ops[k].opcode == IBV_WR_SEND_WITH_IMM ||
		    p->ops[k].opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
			break;
	if (k == p->nops) {
		FAIL(sc, "conn %d side %d: one receive too many", ci, si);
		return;
	}
	if (identify(sc, ci, psi, wc, data, k) != k) {
		FAIL(sc, "conn %d side %d: receive %d is not peer op %d (len %u, opcode %d)", ci,
		     si, s->recv_done, k, wc->byte_len, wc->opcode);
		return;
	}
	if (wc->src_qp != uroce_tp_qp_num(p->qp) || wc->qp_num != uroce_tp_qp_num(s->qp))
		FAIL(sc, "conn %d side %d: receive names QPs %x/%x", ci, si, wc->qp_num,
		     wc->src_qp);
	s->recv_next_op = k + 1;
	s->recv_done++;
}

/* The link's tx_hook: follows each RC side's request packets (a go-back is one that does
 * not follow the packet before) and the faults on its connection. A fault counts in the
 * interval it happened in, so a lost retransmission counts against its own go-back. */
static void note_frame(void *arg, int from, int to, const uint8_t *frame, uint32_t len,
		       bool faulted)
{
	struct scenario *sc = arg;
	struct uroce_wire_pkt p;

	(void)to;
	if (uroce_wire_parse(frame, len, &p) != UROCE_WIRE_OK)
		return;
	for (int ci = 0; ci < sc->nconn; ci++) {
		struct conn *c = &sc->conn[ci];

		if (c->type != IBV_QPT_RC)
			continue;
		for (int si = 0; si < 2; si++) {
			struct side *s = &c->s[si];
			uint32_t psn = p.hdr.bth.psn, npkts = 1;

			if (s->host != from || p.hdr.bth.dqpn != uroce_tp_qp_num(c->s[1 - si].qp))
				continue;
			if (uroce_opcode_info(p.hdr.bth.opcode)->flags & UROCE_OPF_REQ) {
				if (uroce_opcode_info(p.hdr.bth.opcode)->flags & UROCE_OPF_READ &&
				    p.hdr.reth.dma_len > c->mtu)
					npkts = (p.hdr.reth.dma_len + c->mtu - 1) / c->mtu;
				if (s->sent_any && uroce_psn_diff(psn, s->next_psn) < 0) {
					s->stuck = s->go_backs && psn == s->go_back_psn
							   ? s->stuck + 1
							   : 1;
					s->go_back_psn = psn;
					s->explained = s->explained << 1 | (s->faults > 0);
					s->faults = 0;
					s->go_backs++;
				}
				s->sent_any = true;
				s->next_psn = uroce_psn_add(psn, npkts);
			}
			if (faulted) {
				c->s[0].faults++;
				c->s[1].faults++;
			}
			return;
		}
	}
}

/* A requester ran out of retries: it may, when its last retry_cnt go-backs started from
 * one PSN (no progress resets the budget, IBA 9.7.6.1.3) and the link faulted a frame of
 * the connection before each of them and after the last. */
static bool retries_explained(const struct conn *c, const struct side *s)
{
	uint32_t all = (1u << c->retry_cnt) - 1;

	return s->stuck >= c->retry_cnt && (s->explained & all) == all && s->faults > 0;
}

static void check_send(struct scenario *sc, int ci, int si, const struct ibv_wc *wc)
{
	struct conn *c = &sc->conn[ci];
	struct side *s = &c->s[si];
	int k = s->next_sig;

	if (c->lost)
		return;
	while (k < s->nops && !s->ops[k].signaled)
		k++;
	if (wc->status == IBV_WC_RETRY_EXC_ERR && c->type == IBV_QPT_RC &&
	    retries_explained(c, s)) {
		c->lost = true;
		if (!sc->lost[0])
			snprintf(sc->lost, sizeof(sc->lost),
				 "conn %d side %d: op %d (%d, %u B) ran out of retries, %u "
				 "go-backs, the last %u from PSN %06x, each after a fault",
				 ci, si, (int)wc->wr_id,
				 s->ops[wc->wr_id < MAX_OPS ? wc->wr_id : 0].opcode,
				 s->ops[wc->wr_id < MAX_OPS ? wc->wr_id : 0].len, s->go_backs,
				 s->stuck, s->go_back_psn);
		return;
	}
	if (wc->status == IBV_WC_WR_FLUSH_ERR) {
		if (!sc->flushed[0])
			snprintf(sc->flushed, sizeof(sc->flushed), "conn %d side %d: op %d flushed",
				 ci, si, (int)wc->wr_id);
		return;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		FAIL(sc, "conn %d side %d: op %d (%d, %u B) completed with status %d", ci, si,
		     (int)wc->wr_id, s->ops[wc->wr_id < MAX_OPS ? wc->wr_id : 0].opcode,
		     s->ops[wc->wr_id < MAX_OPS ? wc->wr_id : 0].len, wc->status);
		return;
	}
	if (k >= s->nops || wc->wr_id != (uint64_t)k) {
		FAIL(sc, "conn %d side %d: completion for op %" PRIu64 ", expected %d", ci, si,
		     wc->wr_id, k);
		return;
	}
	s->next_sig = k + 1;
	s->send_done++;
}

static void poll_all(struct scenario *sc)
{
	struct ibv_wc wc[16];

	for (int ci = 0; ci < sc->nconn; ci++) {
		for (int si = 0; si < 2; si++) {
			struct side *s = &sc->conn[ci].s[si];
			int n;

			while ((n = uroce_tp_poll_cq(s->scq, 16, wc)) > 0)
				for (int i = 0; i < n; i++)
					check_send(sc, ci, si, &wc[i]);
			while ((n = uroce_tp_poll_cq(s->rcq, 16, wc)) > 0)
				for (int i = 0; i < n; i++)
					check_recv(sc, ci, si, &wc[i]);
		}
	}
}

static bool all_done(void *arg)
{
	struct scenario *sc = arg;

	poll_all(sc);
	if (sc->fail[0])
		return true;
	if (sc->flushed[0]) {
		FAIL(sc, "%s", sc->flushed);
		return true;
	}
	for (int ci = 0; ci < sc->nconn; ci++) {
		if (sc->conn[ci].lost)
			continue;
		for (int si = 0; si < 2; si++) {
			const struct side *s = &sc->conn[ci].s[si];

			if (s->send_done < s->nsig)
				return false;
			if (sc->conn[ci].type == IBV_QPT_RC && s->recv_done < s->recv_expected)
				return false;
		}
	}
	return true;
}

static void check_memory(struct scenario *sc)
{
	for (int ci = 0; ci < sc->nconn; ci++) {
		struct conn *c = &sc->conn[ci];

		if (c->type != IBV_QPT_RC || c->lost)
			continue;
		for (int si = 0; si < 2; si++) {
			struct side *s = &c->s[si];
			int peer = c->s[1 - si].host;
			uint64_t v;

			for (int k = 0; k < s->nops; k++) {
				const struct op *o = &s->ops[k];

				switch (o->opcode) {
				case IBV_WR_RDMA_WRITE:
				case IBV_WR_RDMA_WRITE_WITH_IMM:
				case IBV_WR_ATOMIC_WRITE:
					if (!data_matches(sc, host_ptr(sc, peer, o->dst), ci, si, k,
							  o->len))
						FAIL(sc,
						     "conn %d side %d: WRITE op %d (%u B) target "
						     "differs",
						     ci, si, k, o->len);
					break;
				case IBV_WR_RDMA_READ:
					if (!data_matches(sc, host_ptr(sc, s->host, o->src), ci, si,
							  k, o->len))
						FAIL(sc,
						     "conn %d side %d: READ op %d (%u B) result "
						     "differs",
						     ci, si, k, o->len);
					break;
				case IBV_WR_ATOMIC_FETCH_AND_ADD:
				case IBV_WR_ATOMIC_CMP_AND_SWP:
					memcpy(&v, host_ptr(sc, s->host, o->src), 8);
					if (v != o->expect_orig)
						FAIL(sc,
						     "conn %d side %d: atomic op %d returned "
						     "%" PRIx64
						     ", serial execution gives %" PRIx64,
						     ci, si, k, v, o->expect_orig);
					break;
				default:
					break;
				}
			}
			if (s->atomic_addr) {
				memcpy(&v, host_ptr(sc, peer, s->atomic_addr), 8);
				if (v != s->atomic_final)
					FAIL(sc,
					     "conn %d side %d: atomic counter %" PRIx64
					     ", expected %" PRIx64
					     " (an atomic ran twice or not at all)",
					     ci, si, v, s->atomic_final);
			}
		}
	}
}

/* ---- one seed ---------------------------------------------------------------------------- */

static const char *run_seed(struct scenario *sc)
{
	struct sim_faults f = {0};
	struct sim_qp_opts o = {0};
	struct uroce_tp_dev_cfg cfg;
	struct sim *sim = &sc->sim;
	uint64_t profile;
	bool rnr = false, zc;

	sc->fail[0] = '\0';
	sc->nconn = 0;
	memset(sc->conn, 0, sizeof(sc->conn));
	sim->rng = sc->seed; /* the generator's own stream before sim_init reseeds */
	profile = sc->seed % 4;
	f.delay_ns = 1000 + sc->seed % 5000;
	f.jitter_ns = 500;
	f.reorder_ns = 20000;
	if (profile >= 1) {
		struct sim tmp = {.rng = sc->seed ^ 0x5555};
		double scale = profile == 3 ? 2.5 : 1.0;

		/* Hostile but survivable with retry_cnt 7: go-back-N spends a retry per loss
		 * episode without progress, so heavy reordering of whole bursts on top of
		 * heavy loss can exhaust it for real (a dedicated test covers exhaustion). */
		f.drop = sim_frand(&tmp) * 0.03 * scale;
		f.dup = sim_frand(&tmp) * 0.03 * scale;
		f.reorder = sim_frand(&tmp) * 0.03;
		f.corrupt = sim_frand(&tmp) * 0.02 * scale;
		f.tx_busy = sim_frand(&tmp) * 0.05;
	}
	uroce_tp_dev_cfg_init(&cfg);
	cfg.ack_coalesce = 1 + (uint32_t)(sc->seed % 32);
	cfg.max_unacked_psns = 4 + (uint32_t)((sc->seed >> 5) % 256);
	/* Half the seeds send RC payloads from the MRs (zero-copy), some of them every
	 * payload: retransmission must rebuild such frames from the MR too. */
	zc = (sc->seed * 0x9e3779b97f4a7c15ull) >> 63;
	if (zc) {
		cfg.tx_zc = sim_tx_zc;
		cfg.zc_min = (sc->seed >> 3) % 3 == 0 ? 1 : 512;
	}
	sim_init(sim, sc->seed, 2, &f, &cfg);
	sim->tx_hook = note_frame;
	sim->tx_hook_arg = sc;

	for (int h = 0; h < 2; h++) {
		struct host_mem *m = &sc->mem[h];

		m->buf = g_mem[h];
		m->iova = 0x7f0000000000ull + ((uint64_t)h << 32) + (sim_rand(sim) % 4096) * 4096;
		m->used = 0;
		m->pd = uroce_tp_alloc_pd(sim->host[h].dev);
		m->mr = uroce_tp_reg_mr(m->pd, m->iova, m->buf, HOST_MEM,
					IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
		uroce_tp_mr_keys(m->mr, &m->key, NULL);
		if (zc)
			uroce_tp_mr_set_ctx(m->mr, m);
	}

	o.mtu = (enum ibv_mtu)(1 + sim_rand(sim) % 5);
	o.timeout = (uint8_t)(6 + sim_rand(sim) % 8);
	o.retry_cnt = 7;
	o.rnr_retry = 7;
	o.min_rnr_timer = (uint8_t)(1 + sim_rand(sim) % 12);
	o.max_rd_atomic = (uint8_t)(1 + sim_rand(sim) % 16);
	sc->nconn = 1 + (int)(sim_rand(sim) % 3);
	if (sim_rand(sim) % 3 == 0)
		sc->conn[sc->nconn++].type = IBV_QPT_UC;
	if (sim_rand(sim) % 3 == 0)
		sc->conn[sc->nconn++].type = IBV_QPT_UD;

	for (int ci = 0; ci < sc->nconn; ci++) {
		struct conn *c = &sc->conn[ci];

		if (c->type == 0)
			c->type = IBV_QPT_RC;
		c->mtu = 128u << o.mtu; /* IBV_MTU_256 is 1 */
		c->retry_cnt = o.retry_cnt;
		for (int si = 0; si < 2; si++) {
			struct side *s = &c->s[si];
			struct uroce_tp_qp_init init = {0};

			s->host = si;
			s->scq = uroce_tp_create_cq(sim->host[si].dev, 256);
			s->rcq = uroce_tp_create_cq(sim->host[si].dev, 256);
			if (si == 1 && c->type == IBV_QPT_RC && sim_rand(sim) % 4 == 0) {
				struct ibv_srq_init_attr sa = {
					.attr = {.max_wr = 64, .max_sge = 1}};

				c->srq = uroce_tp_create_srq(sc->mem[1].pd, &sa);
			}
			init.qp_type = c->type;
			init.send_cq = s->scq;
			init.recv_cq = s->rcq;
			init.srq = si == 1 ? c->srq : NULL;
			init.cap.max_send_wr = MAX_OPS;
			init.cap.max_recv_wr = 64;
			init.cap.max_send_sge = 3;
			init.cap.max_recv_sge = 1;
			init.cap.max_inline_data = UROCE_TP_MAX_INLINE;
			s->qp = uroce_tp_create_qp(sc->mem[si].pd, &init);
			if (s->qp == NULL || s->scq == NULL || s->rcq == NULL)
				return "object creation failed";
		}
		/* PSNs anywhere, half of them a few packets before the 2^24 wrap. */
		o.psn_a = sim_rand(sim) % 2 ? (uint32_t)(0xffffff - sim_rand(sim) % 64)
					    : (uint32_t)(sim_rand(sim) & UROCE_PSN_MASK);
		o.psn_b = sim_rand(sim) % 2 ? (uint32_t)(0xffffff - sim_rand(sim) % 64)
					    : (uint32_t)(sim_rand(sim) & UROCE_PSN_MASK);
		if (c->type == IBV_QPT_UD) {
			for (int si = 0; si < 2; si++) {
				sim_ud_ready(sim, c->s[si].qp, 0x11111111, si ? o.psn_b : o.psn_a);
				c->s[si].ah = sim_ah(sim, sc->mem[si].pd, si, 1 - si);
			}
		} else {
			sim_connect(sim, c->s[0].qp, 0, c->s[1].qp, 1, &o);
		}
	}
	for (int ci = 0; ci < sc->nconn; ci++)
		for (int si = 0; si < 2; si++)
			gen_ops(sc, ci, si);

	/* Receives: UD and UC get plenty; RC sometimes starts short, to see RNR NAKs. */
	for (int ci = 0; ci < sc->nconn; ci++) {
		struct conn *c = &sc->conn[ci];

		for (int si = 0; si < 2; si++) {
			struct side *s = &c->s[si];
			int n = c->type == IBV_QPT_RC ? s->recv_expected : c->s[1 - si].nops + 2;

			if (c->type == IBV_QPT_RC && n > 0 && sim_rand(sim) % 3 == 0) {
				s->late = 1 + (int)(sim_rand(sim) % (unsigned)n);
				rnr = true;
			}
			post_recvs(sc, c, s, n - s->late);
		}
	}
	for (int ci = 0; ci < sc->nconn; ci++) {
		for (int si = 0; si < 2; si++) {
			struct side *s = &sc->conn[ci].s[si];

			for (int k = 0; k < s->nops; k++)
				post_op(sc, &sc->conn[ci], si, k);
		}
	}
	if (sc->fail[0])
		return sc->fail;

	if (rnr) {
		sim_run(sim, sim->now + 3000000, all_done, sc); /* 3 ms with short queues */
		for (int ci = 0; ci < sc->nconn; ci++)
			for (int si = 0; si < 2; si++)
				post_recvs(sc, &sc->conn[ci], &sc->conn[ci].s[si],
					   sc->conn[ci].s[si].late);
	}
	if (!sim_run(sim, sim->now + 120000000000ull, all_done, sc) && !sc->fail[0] &&
	    !sc->flushed[0])
		FAIL(sc, "not done after 120 s of virtual time");
	if (!sc->fail[0]) {
		/* Let stragglers (duplicates, late ACKs) arrive: nothing more may complete. */
		sim_run(sim, sim->now + 200000000ull, NULL, NULL);
		poll_all(sc);
		check_memory(sc);
	}
	return sc->fail[0] ? sc->fail : NULL;
}

/* In the order verbs requires: QPs, then what they used, then MRs and PDs. Odd seeds
 * leave it all to uroce_tp_dev_destroy, as the daemon does for an application that died:
 * under LeakSanitizer (the ASan build) anything it does not free fails the run. */
static void teardown(struct scenario *sc)
{
	for (int h = 0; h < 2 && sc->sim.nhosts; h++)
		sc->counters[h] = *uroce_tp_counters(sc->sim.host[h].dev);
	sc->faults = sim_fault_totals(&sc->sim);
	sc->sent = sc->sim.sent;
	sc->zc_frames = sc->sim.zc_frames;
	sc->delivered = sc->sim.delivered;
	sc->busy = sc->sim.busy;
	sc->end_ns = sc->sim.now;
	if (sc->seed & 1) {
		sim_fini(&sc->sim);
		return;
	}
	for (int ci = 0; ci < sc->nconn; ci++) {
		struct conn *c = &sc->conn[ci];

		for (int si = 0; si < 2; si++) {
			struct side *s = &c->s[si];

			if (s->qp && uroce_tp_destroy_qp(s->qp))
				FAIL(sc, "destroy_qp");
			if (s->ah && uroce_tp_destroy_ah(s->ah))
				FAIL(sc, "destroy_ah");
		}
		if (c->srq && uroce_tp_destroy_srq(c->srq))
			FAIL(sc, "destroy_srq");
		for (int si = 0; si < 2; si++) {
			struct side *s = &c->s[si];

			if ((s->scq && uroce_tp_destroy_cq(s->scq)) ||
			    (s->rcq && uroce_tp_destroy_cq(s->rcq)))
				FAIL(sc, "destroy_cq");
		}
	}
	for (int h = 0; h < 2; h++) {
		if (sc->mem[h].mr && uroce_tp_dereg_mr(sc->mem[h].mr))
			FAIL(sc, "dereg_mr");
		if (sc->mem[h].pd && uroce_tp_dealloc_pd(sc->mem[h].pd))
			FAIL(sc, "dealloc_pd: still in use");
	}
	sim_fini(&sc->sim);
}

int main(int argc, char **argv)
{
	uint64_t first = 1, count = 1000, one = 0;
	double seconds = 0;
	bool verbose = false, big = false, single = false;
	uint64_t passed = 0, failed = 0, lost = 0, slowest_seed = 0;
	double slowest = 0;
	struct timespec t0, t1;
	static struct scenario sc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
			sscanf(argv[++i], "%" SCNu64 ":%" SCNu64, &first, &count);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			one = strtoull(argv[++i], NULL, 0), single = true;
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--big"))
			big = true;
		else if (!strcmp(argv[i], "-v"))
			verbose = true;
		else {
			fprintf(stderr, "usage: %s [--seeds FIRST:COUNT] [--seed N] [--big] "
					"[--seconds S] [-v]\n",
				argv[0]);
			return 2;
		}
	}
	if (single)
		first = one, count = 1;
	g_mem[0] = calloc(1, HOST_MEM);
	g_mem[1] = calloc(1, HOST_MEM);
	if (!g_mem[0] || !g_mem[1])
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t seed = first; seed < first + count; seed++) {
		const char *why;

		struct timespec s0, s1;
		double took;

		clock_gettime(CLOCK_MONOTONIC, &s0);
		memset(&sc, 0, sizeof(sc));
		sc.seed = seed;
		sc.big = big;
		sc.verbose = verbose;
		why = run_seed(&sc);
		{
			struct sim stats = sc.sim;

			teardown(&sc);
			sc.sim = stats; /* counters for the report below */
		}
		why = sc.fail[0] ? sc.fail : why;
		clock_gettime(CLOCK_MONOTONIC, &s1);
		took = (double)(s1.tv_sec - s0.tv_sec) + (s1.tv_nsec - s0.tv_nsec) / 1e9;
		if (took > slowest)
			slowest = took, slowest_seed = seed;
		if (why) {
			failed++;
			printf("sim: seed %" PRIu64 " FAILED: %s (re-run: --seed %" PRIu64
			       "%s -v)\n",
			       seed, why, seed, big ? " --big" : "");
		} else {
			passed++;
			lost += sc.lost[0] != '\0';
		}
		if (sc.lost[0] && (verbose || single))
			printf("sim: seed %" PRIu64 ": lost %s\n", seed, sc.lost);
		if (verbose && sc.nconn) {
			for (int h = 0; h < 2; h++) {
				const struct uroce_tp_counters *c = &sc.counters[h];
#define PRINT_COUNTER(name)                                                                \
	if (c->name)                                                                       \
		printf("  h%d %-24s %" PRIu64 "\n", h, #name, c->name);
				UROCE_TP_COUNTERS(PRINT_COUNTER)
#undef PRINT_COUNTER
			}
		}
		if (verbose || single)
			printf("sim: seed %" PRIu64 ": %s; frames sent %" PRIu64
			       " delivered %" PRIu64 " dropped %" PRIu64 " duplicated %" PRIu64
			       " reordered %" PRIu64 " corrupted %" PRIu64 " busy %" PRIu64
			       " zero-copy %" PRIu64 ", virtual time %.3f ms\n",
			       seed, why ? "failed" : "ok", sc.sent, sc.delivered,
			       sc.faults.dropped, sc.faults.duplicated, sc.faults.reordered,
			       sc.faults.corrupted, sc.busy, sc.zc_frames, (double)sc.end_ns / 1e6);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (seconds > 0 &&
		    (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9 > seconds)
			break;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("sim: seeds %" PRIu64 "..%" PRIu64 " in %.1f s (slowest: seed %" PRIu64
	       ", %.3f s)\n",
	       first, first + passed + failed - 1,
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, slowest_seed,
	       slowest);
	printf("sim: %" PRIu64 " passed, %" PRIu64 " failed\n", passed, failed);
	if (lost)
		printf("sim: of the passed, %" PRIu64 " lost a connection to retry exhaustion "
		       "the faults explain (-v shows which)\n",
		       lost);
	free(g_mem[0]);
	free(g_mem[1]);
	return failed ? 1 : 0;
}
