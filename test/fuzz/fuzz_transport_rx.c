/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for lib/transport's receive path: the responder (requests) and the
 * completer (responses) take packets from the network, so from anyone.
 *
 * Per input, from nothing (no state is carried between inputs, everything is freed at
 * the end): one device whose tx callback counts frames (and answers -EAGAIN when the
 * input says so), a PD, a 64 KiB MR at a fixed iova with every access right, a send and
 * a receive CQ, an SRQ, an AH, and four QPs in RTS with fixed PSNs: RC, RC on the SRQ,
 * UC, UD; and XRC's: a domain, an XRC SRQ (completing on the receive CQ), an initiator
 * and a target QP in RTS. Receive WQEs are posted (some with a bad lkey, a tiny buffer
 * or several SGEs, as the input chooses), and send WQEs of every opcode the QP type
 * allows, sent at once, so that the completer has work outstanding to match responses
 * against.
 *
 * Input: an 8-byte setup header (missing bytes are 0), then records
 *   [len_hi len_lo ctl] + len bytes of frame   (len is cut to what is left)
 *   ctl bit 0: rkeys (RETH, AtomicETH, IETH) := the MR's key, DETH Q_Key := the UD QP's,
 *          XRCETH := the XRC SRQ's number
 *       1: RETH and AtomicETH VA := the MR's iova + (VA mod 64 KiB)
 *       2: PSN := the QP's expected PSN + (PSN - the first PSN this input sent that QP
 *          in that direction), so that captured sequences line up with our QPs
 *       3: raw: feed the bytes as they are (bad ICRC, unknown QP, parser errors)
 *       7..4: k, then now += k ? 2^(2k+4) ns : 0 after the frame (64 ns .. 17 s)
 * A frame that parses (and is not raw) goes to one of our QPs (chosen by the low bits of
 * its dqpn), is rewritten as ctl says and rebuilt with uroce_wire_build, which computes a
 * new ICRC, so mutations reach the QPs instead of dying at the ICRC or the QP lookup.
 * Frames that do not parse are fed as they are. After each frame: uroce_tp_process at the
 * advanced time, then the checks; at the end the timers are followed until none is left
 * (or 64 rounds), then one call far in the future; then everything is destroyed.
 *
 * Oracle, besides ASan/UBSan/LeakSanitizer (every frame is handed over in a buffer of
 * exactly its size, so a read past its end is caught):
 *  - completions: status a valid enum ibv_wc_status; qp_num one of ours; wr_id one we
 *    posted on that QP (or its SRQ) for that CQ, completed at most once; a successful
 *    unsignaled send WR does not complete; opcodes of the right side; byte_len of a
 *    successful send is its length, of a receive at most its buffer; an RC send WR
 *    succeeds only once the packet that ends its message (for a READ or an atomic, its
 *    request) has gone out: a response cannot acknowledge what was never sent;
 *  - counters never decrease; sent_pkts and tx_busy equal what the tx callback saw;
 *  - uroce_tp_qp_state is RTS or ERR, and ERR stays ERR (nothing here modifies a QP);
 *  - every frame the transport sends parses and carries a good ICRC;
 *  - events name our objects; after uroce_tp_process(now), uroce_tp_next_deadline is 0
 *    (tx pushed back) or later than now.
 * Only the public API (uroce_transport.h) is used. A failed check traps.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "uroce_transport.h"
#include "uroce_wire.h"

#include "fuzz_check.h"

#define MR_SIZE 0x10000u
#define MR_IOVA 0x7f1200000000ull /* 64 KiB aligned, so VA mod 64 KiB keeps alignment */
#define RECV_OFF 0x8000u          /* receive buffers: 2 KiB each from here; sends below */
#define UD_QKEY 0x11111111u
#define PEER_QPN 0x00abc0u        /* + QP index: the remote QP of RC and UC */
#define SETUP_LEN 8
#define REC_HDR 3
#define MAX_FRAME 0x10000u
#define PSN_WIN 256 /* RC request PSNs tracked from sq_psn on */

enum { QP_RC, QP_RC_SRQ, QP_UC, QP_UD, QP_XRC_INI, QP_XRC_TGT, NQP };
/* Receive WQE owners: the three QPs with an RQ, the SRQ, and the XRC SRQ. */
enum { OWN_RC, OWN_UC, OWN_UD, OWN_SRQ, OWN_XSRQ, NOWN };
/* The RC-like QPs: acknowledged, their sends complete once acknowledged. */
#define RELIABLE(i) ((i) == QP_RC || (i) == QP_RC_SRQ || (i) == QP_XRC_INI)
#define PEER_SRQN 0x000077u /* the XRC SRQ the initiator's WRs name at the peer */
/* WRs by owner: a QP's send WRs (index by QP) or an owner's receive WRs */
#define NSLOT (NQP > NOWN ? NQP : NOWN)
enum { KIND_SEND, KIND_RECV };
#define NRECV 4 /* receive WQEs per owner */
#define MAXWR 16
#define WR_MAGIC 0xf2ull

enum {
	CTL_KEYS = 1u << 0,
	CTL_VA = 1u << 1,
	CTL_PSN = 1u << 2,
	CTL_RAW = 1u << 3,
};

/* Fixed PSNs, two of them near the 24-bit wrap. */
static const uint32_t rq_psn[NQP] = {0xfffff0, 0x001000, 0x7ffffe, 0, 0x000500, 0xfffff8};
static const uint32_t sq_psn[NQP] = {0x000100, 0xfffffa, 0x123456, 0x000042, 0xfffffc,
				     0x000900};

/* The setup header. */
struct knobs {
	uint8_t recv[NOWN];   /* 2 bits per receive WQE: 0 good, 1 bad lkey, 2 tiny, 3 SGEs */
	uint8_t busy;         /* bit (n mod 8): the n-th tx call answers -EAGAIN */
	uint8_t rot;          /* first RC opcode in the send list */
	bool small_cq;        /* CQs of 4 entries: overflow */
	enum ibv_mtu mtu;
	bool bad_lkey;        /* the last RC send WQE has a bad lkey */
	bool one_rd_atomic;   /* max_rd_atomic and max_dest_rd_atomic 1 */
	uint8_t unsignaled;   /* bit i: RC send WQE i is unsignaled */
	uint8_t retry_cnt, rnr_retry;
	uint32_t ack_coalesce;
};

struct fz {
	struct knobs k;
	struct uroce_tp_dev *dev;
	struct uroce_tp_pd *pd;
	struct uroce_tp_mr *mr;
	uint8_t *mem;
	uint32_t key;
	struct uroce_tp_cq *scq, *rcq;
	struct uroce_tp_srq *srq;
	struct uroce_tp_xrcd *xrcd;
	struct uroce_tp_srq *xsrq;
	struct uroce_tp_ah *ah;
	struct uroce_tp_qp *qp[NQP];
	uint32_t qpn[NQP];
	bool in_err[NQP];
	uint64_t now;
	uint64_t ntx, nsent; /* tx calls, frames taken */
	struct uroce_tp_counters cnt;
	bool origin_set[NQP][2];
	uint32_t origin[NQP][2];
	/* posted WRs: [kind][owner][n] */
	bool posted[2][NSLOT][MAXWR];
	bool signaled[NSLOT][MAXWR];
	uint32_t length[2][NSLOT][MAXWR]; /* send: message bytes; receive: buffer bytes */
	uint8_t done[2][NSLOT][MAXWR];
	/* RC: the PSN (as an offset from sq_psn) of each WQE's last request packet, the
	 * next PSN to assign, and which offsets went out in such a packet */
	uint32_t end_psn[NQP][MAXWR];
	uint32_t next_psn[NQP];
	bool sent_end[NQP][PSN_WIN];
};

static uint64_t wr_id(int kind, int owner, int n)
{
	return WR_MAGIC << 40 | (uint64_t)kind << 32 | (uint64_t)owner << 16 | (uint64_t)n;
}

static void parse_knobs(struct knobs *k, const uint8_t *h)
{
	static const enum ibv_mtu mtus[4] = {IBV_MTU_1024, IBV_MTU_4096, IBV_MTU_256,
					     IBV_MTU_2048};
	static const uint32_t coalesce[4] = {16, 1, 4, 64};

	memcpy(k->recv, h, OWN_XSRQ);
	k->recv[OWN_XSRQ] = h[0] ^ h[6]; /* no byte of its own: a mix of others */
	k->busy = h[4];
	k->rot = h[5] & 7;
	k->small_cq = h[5] & 0x08;
	k->mtu = mtus[(h[5] >> 4) & 3];
	k->bad_lkey = h[5] & 0x40;
	k->one_rd_atomic = h[5] & 0x80;
	k->unsignaled = h[6];
	k->retry_cnt = 7 ^ (h[7] & 7);
	k->rnr_retry = 7 ^ ((h[7] >> 3) & 7);
	k->ack_coalesce = coalesce[h[7] >> 6];
}

/* ---- callbacks ------------------------------------------------------------------------ */

static int fz_tx(void *ctx, const uint8_t *frame, uint32_t len)
{
	struct fz *f = ctx;
	struct uroce_wire_pkt p;
	uint64_t n = f->ntx++;

	if ((f->k.busy >> (n & 7)) & 1)
		return -EAGAIN;
	/* What the transport sends is a valid RoCEv2 packet, whatever it received. */
	CHECK(uroce_wire_parse(frame, len, &p) == UROCE_WIRE_OK);
	CHECK(uroce_wire_icrc_check(&p) == UROCE_WIRE_OK);
	f->nsent++;
	/* An RC request that ends a message (READ and atomic requests do): note its PSN. */
	for (int i = 0; i < NQP; i++) {
		const struct uroce_opcode_info *oi = uroce_opcode_info(p.hdr.bth.opcode);

		if (!RELIABLE(i))
			continue;
		uint32_t d = (p.hdr.bth.psn - sq_psn[i]) & UROCE_PSN_MASK;

		if (p.hdr.bth.dqpn == PEER_QPN + (uint32_t)i && (oi->flags & UROCE_OPF_REQ) &&
		    (oi->flags & UROCE_OPF_LAST) && d < PSN_WIN)
			f->sent_end[i][d] = true;
	}
	return 0;
}

static int qp_index(const struct fz *f, const void *qp)
{
	for (int i = 0; i < NQP; i++)
		if (f->qp[i] != NULL && (const void *)f->qp[i] == qp)
			return i;
	return -1;
}

static void fz_event(void *ctx, enum ibv_event_type type, void *obj)
{
	struct fz *f = ctx;

	switch (type) {
	case IBV_EVENT_CQ_ERR:
		CHECK(obj == f->scq || obj == f->rcq);
		break;
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		CHECK(obj == f->srq); /* the XRC SRQ has no limit armed */
		break;
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		CHECK(obj == f->qp[QP_RC_SRQ]);
		break;
	case IBV_EVENT_SQ_DRAINED:
		CHECK(qp_index(f, obj) >= 0);
		break;
	default:
		CHECK(0); /* no other event is raised by the transport */
	}
}

/* ---- setup ---------------------------------------------------------------------------- */

static void gid_v4(union ibv_gid *g, uint8_t last)
{
	uroce_gid_from_ipv4(g->raw, (const uint8_t[4]){198, 18, 0, last});
}

static const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x01};

static void bring_up(struct fz *f, int i)
{
	struct uroce_tp_qp *qp = f->qp[i];
	struct ibv_qp_attr a;
	/* RC's responder and requester attributes: RC has both, XRC one each */
	bool responder = i == QP_RC || i == QP_RC_SRQ || i == QP_XRC_TGT;
	bool requester = i == QP_RC || i == QP_RC_SRQ || i == QP_XRC_INI;
	uint8_t rd = f->k.one_rd_atomic ? 1 : 4;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	if (i == QP_UD) {
		a.qkey = UD_QKEY;
		CHECK(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						     IBV_QP_QKEY, NULL, f->now) == 0);
		a.qp_state = IBV_QPS_RTR;
		CHECK(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE, NULL, f->now) == 0);
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = sq_psn[i];
		CHECK(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, NULL, f->now) == 0);
		return;
	}
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	CHECK(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					     IBV_QP_ACCESS_FLAGS, NULL, f->now) == 0);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = f->k.mtu;
	a.dest_qp_num = PEER_QPN + (uint32_t)i;
	a.rq_psn = rq_psn[i];
	a.max_dest_rd_atomic = rd;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	gid_v4(&a.ah_attr.grh.dgid, 1);
	a.ah_attr.grh.hop_limit = 1;
	CHECK(uroce_tp_modify_qp(
		      qp, &a,
		      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			      (responder ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0),
		      peer_mac, f->now) == 0);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn[i];
	a.timeout = 10; /* 4.2 ms */
	a.retry_cnt = f->k.retry_cnt;
	a.rnr_retry = f->k.rnr_retry;
	a.max_rd_atomic = rd;
	CHECK(uroce_tp_modify_qp(qp, &a,
				 IBV_QP_STATE | IBV_QP_SQ_PSN |
					 (requester ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
							      IBV_QP_RNR_RETRY |
							      IBV_QP_MAX_QP_RD_ATOMIC :
					  responder ? IBV_QP_TIMEOUT :
						      0),
				 NULL, f->now) == 0);
	CHECK(uroce_tp_qp_state(qp) == IBV_QPS_RTS);
}

static void post_recvs(struct fz *f, int owner)
{
	static const int qp_of[NOWN] = {QP_RC, QP_UC, QP_UD, -1, -1};

	for (int n = 0; n < NRECV; n++) {
		struct uroce_tp_recv_wqe r;
		/* The 32 KiB from RECV_OFF hold four owners' buffers; the XRC SRQ shares the
		 * RC QP's (no oracle reads the bytes received). */
		uint64_t va = MR_IOVA + RECV_OFF +
			      (uint64_t)((owner % OWN_XSRQ) * NRECV + n) * 0x800;

		memset(&r, 0, sizeof(r));
		r.wr_id = wr_id(KIND_RECV, owner, n);
		r.num_sge = 1;
		r.sg_list[0].addr = va;
		r.sg_list[0].length = 2048;
		r.sg_list[0].lkey = f->key;
		switch ((f->k.recv[owner] >> (2 * n)) & 3) {
		case 1: /* a key of no MR: the key byte differs */
			r.sg_list[0].lkey = f->key ^ 1;
			break;
		case 2:
			r.sg_list[0].length = 8;
			break;
		case 3: /* out of order, with an empty SGE of no MR */
			r.num_sge = 3;
			r.sg_list[0] = (struct uroce_tp_sge){va + 1024, 24, f->key};
			r.sg_list[1] = (struct uroce_tp_sge){va + 200, 0, 0};
			r.sg_list[2] = (struct uroce_tp_sge){va, 1000, f->key};
			break;
		default:
			break;
		}
		for (uint32_t s = 0; s < r.num_sge; s++)
			f->length[KIND_RECV][owner][n] += r.sg_list[s].length;
		f->posted[KIND_RECV][owner][n] = true;
		if (owner == OWN_SRQ || owner == OWN_XSRQ)
			CHECK(uroce_tp_post_srq_recv(owner == OWN_SRQ ? f->srq : f->xsrq, &r) == 0);
		else
			CHECK(uroce_tp_post_recv(f->qp[qp_of[owner]], &r) == 0);
	}
}

static void post_send(struct fz *f, int i, int n, struct uroce_tp_send_wqe *w, uint32_t len)
{
	w->wr_id = wr_id(KIND_SEND, i, n);
	f->posted[KIND_SEND][i][n] = true;
	f->signaled[i][n] = w->send_flags & IBV_SEND_SIGNALED;
	f->length[KIND_SEND][i][n] = len;
	if (i == QP_XRC_INI)
		w->remote_srqn = PEER_SRQN;
	if (RELIABLE(i)) {
		/* PSNs go to WQEs in order: a message takes one per MTU (at least one), an
		 * atomic one, a READ one per response; its request is sent at the first. */
		uint32_t mtu = 128u << f->k.mtu;
		uint32_t npsn = w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
						w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || len == 0
					? 1
					: (len + mtu - 1) / mtu;

		f->end_psn[i][n] = f->next_psn[i] + (w->opcode == IBV_WR_RDMA_READ ? 0 : npsn - 1);
		f->next_psn[i] += npsn;
	}
	CHECK(uroce_tp_post_send(f->qp[i], w, f->now) == 0);
}

static void sge1(struct uroce_tp_send_wqe *w, uint64_t off, uint32_t len, uint32_t lkey)
{
	w->num_sge = 1;
	w->sg_list[0].addr = MR_IOVA + off;
	w->sg_list[0].length = len;
	w->sg_list[0].lkey = lkey;
}

/* Every opcode an RC QP sends, starting at @rot. */
static void post_rc_sends(struct fz *f, int i, unsigned int rot)
{
	for (int n = 0; n < 8; n++) {
		struct uroce_tp_send_wqe w;
		uint32_t len;

		memset(&w, 0, sizeof(w));
		w.send_flags = (f->k.unsignaled >> n) & 1 ? 0 : IBV_SEND_SIGNALED;
		w.remote_addr = 0x5000000ull + (uint64_t)n * 0x10000;
		w.rkey = 0x4321;
		switch ((n + rot) & 7) {
		case 0:
			w.opcode = IBV_WR_SEND;
			w.send_flags |= IBV_SEND_SOLICITED;
			len = 2048;
			break;
		case 1:
			w.opcode = IBV_WR_SEND_WITH_IMM;
			w.send_flags |= IBV_SEND_INLINE;
			w.imm_data = 0x12345678;
			w.inline_len = len = 64;
			memset(w.inline_data, 0x5a, 64);
			break;
		case 2:
			w.opcode = IBV_WR_SEND_WITH_INV;
			w.invalidate_rkey = 0x1234;
			len = 16;
			break;
		case 3:
			w.opcode = IBV_WR_RDMA_WRITE;
			len = 4096;
			break;
		case 4:
			w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			w.imm_data = 7;
			len = 32;
			break;
		case 5:
			w.opcode = IBV_WR_RDMA_READ;
			len = 4096;
			break;
		case 6:
			w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
			w.compare_add = 0;
			w.swap = 0x1111;
			len = 8;
			break;
		default:
			w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			w.send_flags |= IBV_SEND_FENCE;
			w.compare_add = 3;
			len = 8;
			break;
		}
		if (!(w.send_flags & IBV_SEND_INLINE))
			/* the send buffers below RECV_OFF: the XRC initiator shares RC's */
			sge1(&w, (uint64_t)(i == QP_XRC_INI ? QP_RC : i) * 0x4000 +
					 (uint64_t)((n + rot) & 7) * 0x800,
			     len,
			     f->k.bad_lkey && n == 7 ? f->key ^ 1 : f->key);
		post_send(f, i, n, &w, len);
	}
}

static void post_other_sends(struct fz *f)
{
	static const enum ibv_wr_opcode uc_ops[4] = {IBV_WR_SEND, IBV_WR_SEND_WITH_IMM,
						     IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM};
	static const uint32_t uc_len[4] = {2048, 64, 2048, 32};

	for (int n = 0; n < 4; n++) {
		struct uroce_tp_send_wqe w;

		memset(&w, 0, sizeof(w));
		w.opcode = uc_ops[n];
		w.send_flags = IBV_SEND_SIGNALED;
		w.remote_addr = 0x6000000;
		w.rkey = 0x4321;
		w.imm_data = 9;
		sge1(&w, 0x2000 + (uint64_t)n * 0x800, uc_len[n], f->key);
		post_send(f, QP_UC, n, &w, uc_len[n]);
	}
	for (int n = 0; n < 2; n++) {
		struct uroce_tp_send_wqe w;

		memset(&w, 0, sizeof(w));
		w.opcode = n ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
		w.send_flags = IBV_SEND_SIGNALED;
		w.ah = f->ah;
		w.remote_qpn = 0x1234;
		w.remote_qkey = n ? 0x80000000u : UD_QKEY; /* high bit: the QP's own */
		sge1(&w, 0x7000, n ? 0 : 256, f->key);
		post_send(f, QP_UD, n, &w, n ? 0 : 256);
	}
}

static void setup(struct fz *f)
{
	struct uroce_tp_dev_cfg cfg;
	struct ibv_srq_init_attr sa;
	struct ibv_ah_attr ah;
	int cqe = f->k.small_cq ? 4 : 256;

	uroce_tp_dev_cfg_init(&cfg);
	memcpy(cfg.mac, "\x02\x00\x00\x00\x00\x02", 6);
	gid_v4(&cfg.gid[0], 2);
	cfg.gid_count = 1;
	cfg.tx = fz_tx;
	cfg.event = fz_event;
	cfg.io_ctx = f;
	cfg.seed = 0x5eed;
	cfg.ack_coalesce = f->k.ack_coalesce;
	f->dev = uroce_tp_dev_create(&cfg);
	CHECK(f->dev != NULL);
	f->now = 1000000;

	f->pd = uroce_tp_alloc_pd(f->dev);
	CHECK(f->pd != NULL);
	f->mem = malloc(MR_SIZE); /* exactly the MR: ASan sees a write past its end */
	CHECK(f->mem != NULL);
	for (uint32_t i = 0; i < MR_SIZE; i++)
		f->mem[i] = (uint8_t)(i * 7 + 1);
	f->mr = uroce_tp_reg_mr(f->pd, MR_IOVA, f->mem, MR_SIZE,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	CHECK(f->mr != NULL);
	uroce_tp_mr_keys(f->mr, &f->key, NULL);

	f->scq = uroce_tp_create_cq(f->dev, cqe);
	f->rcq = uroce_tp_create_cq(f->dev, cqe);
	CHECK(f->scq != NULL && f->rcq != NULL);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 8;
	sa.attr.max_sge = 4;
	sa.attr.srq_limit = 2;
	f->srq = uroce_tp_create_srq(f->pd, &sa);
	CHECK(f->srq != NULL);
	f->xrcd = uroce_tp_alloc_xrcd(f->dev);
	CHECK(f->xrcd != NULL);
	sa.attr.srq_limit = 0;
	f->xsrq = uroce_tp_create_xrc_srq(f->pd, f->xrcd, f->rcq, &sa);
	CHECK(f->xsrq != NULL);
	memset(&ah, 0, sizeof(ah));
	ah.is_global = 1;
	ah.port_num = 1;
	gid_v4(&ah.grh.dgid, 1);
	f->ah = uroce_tp_create_ah(f->pd, &ah, peer_mac);
	CHECK(f->ah != NULL);

	for (int i = 0; i < NQP; i++) {
		struct uroce_tp_qp_init init;

		memset(&init, 0, sizeof(init));
		init.qp_type = i == QP_UC	  ? IBV_QPT_UC :
			       i == QP_UD	  ? IBV_QPT_UD :
			       i == QP_XRC_INI ? IBV_QPT_XRC_SEND :
			       i == QP_XRC_TGT ? IBV_QPT_XRC_RECV :
						 IBV_QPT_RC;
		if (i != QP_XRC_TGT) { /* a target has nothing but its domain */
			init.send_cq = f->scq;
			init.recv_cq = i == QP_XRC_INI ? NULL : f->rcq;
			init.srq = i == QP_RC_SRQ ? f->srq : NULL;
			init.cap.max_send_wr = MAXWR;
			init.cap.max_recv_wr = i == QP_XRC_INI ? 0 : 8;
			init.cap.max_send_sge = 4;
			init.cap.max_recv_sge = i == QP_XRC_INI ? 0 : 4;
			init.cap.max_inline_data = 64;
		}
		init.xrcd = i == QP_XRC_TGT ? f->xrcd : NULL;
		f->qp[i] = uroce_tp_create_qp(i == QP_XRC_TGT ? NULL : f->pd, &init);
		CHECK(f->qp[i] != NULL);
		f->qpn[i] = uroce_tp_qp_num(f->qp[i]);
		bring_up(f, i);
	}
	for (int o = 0; o < NOWN; o++)
		post_recvs(f, o);
	post_rc_sends(f, QP_RC, f->k.rot);
	post_rc_sends(f, QP_RC_SRQ, f->k.rot + 4u);
	post_rc_sends(f, QP_XRC_INI, f->k.rot + 2u);
	post_other_sends(f);
}

/* ---- checks --------------------------------------------------------------------------- */

static int qpn_index(const struct fz *f, uint32_t qpn)
{
	for (int i = 0; i < NQP; i++)
		if (f->qpn[i] == qpn)
			return i;
	return -1;
}

static void check_wc(struct fz *f, const struct ibv_wc *wc, int kind)
{
	int qi = qpn_index(f, wc->qp_num);
	uint64_t id = wc->wr_id;
	int owner = (int)((id >> 16) & 0xffff), n = (int)(id & 0xffff);

	CHECK(qi >= 0);
	CHECK((unsigned int)wc->status <= IBV_WC_TM_RNDV_INCOMPLETE);
	CHECK(id >> 40 == WR_MAGIC && (int)((id >> 32) & 0xff) == kind);
	CHECK(owner < NOWN && n < MAXWR && f->posted[kind][owner][n]);
	CHECK(f->done[kind][owner][n] == 0); /* a WR completes once */
	f->done[kind][owner][n]++;
	if (kind == KIND_SEND) {
		CHECK(owner == qi);
		CHECK(wc->opcode == IBV_WC_SEND || wc->opcode == IBV_WC_RDMA_WRITE ||
		      wc->opcode == IBV_WC_RDMA_READ || wc->opcode == IBV_WC_COMP_SWAP ||
		      wc->opcode == IBV_WC_FETCH_ADD);
		if (wc->status == IBV_WC_SUCCESS) {
			CHECK(f->signaled[owner][n]); /* unsignaled successes are silent */
			CHECK(wc->byte_len == f->length[kind][owner][n]);
			/* RC: not before the whole message went out (a response can only
			 * acknowledge what the responder received). */
			if (RELIABLE(owner))
				CHECK(f->sent_end[owner][f->end_psn[owner][n]]);
		}
	} else {
		static const int qp_of[NOWN] = {QP_RC, QP_UC, QP_UD, QP_RC_SRQ, QP_XRC_TGT};

		CHECK(qp_of[owner] == qi);
		CHECK(wc->opcode == IBV_WC_RECV || wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM);
		if (wc->status == IBV_WC_SUCCESS && wc->opcode == IBV_WC_RECV)
			CHECK(wc->byte_len <= f->length[kind][owner][n]);
	}
}

static void check_all(struct fz *f)
{
	const struct uroce_tp_counters *c = uroce_tp_counters(f->dev);
	struct ibv_wc wc[16];
	uint64_t next;
	int got;

	while ((got = uroce_tp_poll_cq(f->scq, 16, wc)) > 0)
		for (int i = 0; i < got; i++)
			check_wc(f, &wc[i], KIND_SEND);
	while ((got = uroce_tp_poll_cq(f->rcq, 16, wc)) > 0)
		for (int i = 0; i < got; i++)
			check_wc(f, &wc[i], KIND_RECV);

#define FZ_MONOTONIC(name) CHECK(c->name >= f->cnt.name);
	UROCE_TP_COUNTERS(FZ_MONOTONIC)
#undef FZ_MONOTONIC
	CHECK(c->sent_pkts == f->nsent);
	CHECK(c->tx_busy == f->ntx - f->nsent);
	f->cnt = *c;

	for (int i = 0; i < NQP; i++) {
		enum ibv_qp_state s = uroce_tp_qp_state(f->qp[i]);

		CHECK(s == IBV_QPS_RTS || s == IBV_QPS_ERR);
		CHECK(!f->in_err[i] || s == IBV_QPS_ERR);
		f->in_err[i] = s == IBV_QPS_ERR;
	}
	/* Called after uroce_tp_process(now): nothing is due any more. */
	next = uroce_tp_next_deadline(f->dev);
	CHECK(next == 0 || next > f->now);
}

/* ---- frames --------------------------------------------------------------------------- */

static int pick_qp(uint32_t dqpn, uint8_t opcode)
{
	if (dqpn & 4) /* any QP, the wrong type included */
		return (int)(((dqpn & 3) | (dqpn >> 1 & 4)) % NQP);
	switch (UROCE_OPCODE_TRANSPORT(opcode)) {
	case UROCE_TRANSPORT_UC:
		return QP_UC;
	case UROCE_TRANSPORT_UD:
		return QP_UD;
	case UROCE_TRANSPORT_XRC:
		return dqpn & 1 ? QP_XRC_TGT : QP_XRC_INI;
	default:
		return dqpn & 1 ? QP_RC_SRQ : QP_RC;
	}
}

static void rx_copy(struct fz *f, const uint8_t *frame, uint32_t len)
{
	/* Its own allocation of exactly @len bytes, so that ASan sees any read past it. */
	uint8_t *copy = malloc(len ? len : 1);

	CHECK(copy != NULL);
	memcpy(copy, frame, len);
	uroce_tp_rx(f->dev, copy, len, f->now);
	free(copy);
}

static void feed(struct fz *f, const uint8_t *frame, uint32_t len, uint8_t ctl)
{
	static uint8_t buf[MAX_FRAME + UROCE_HDR_MAX];
	struct uroce_wire_pkt pkt;
	struct uroce_wire_hdr h;
	const struct uroce_opcode_info *oi;
	uint32_t n;
	int i;

	if ((ctl & CTL_RAW) || uroce_wire_parse(frame, len, &pkt) != UROCE_WIRE_OK) {
		rx_copy(f, frame, len);
		return;
	}
	h = pkt.hdr;
	oi = uroce_opcode_info(h.bth.opcode);
	i = pick_qp(h.bth.dqpn, h.bth.opcode);
	h.bth.dqpn = f->qpn[i];
	if (ctl & CTL_KEYS) {
		h.reth.rkey = f->key;
		h.atomiceth.rkey = f->key;
		h.ieth_rkey = f->key;
		h.deth.qkey = UD_QKEY;
		h.xrc_srqn = uroce_tp_srq_num(f->xsrq);
	}
	if (ctl & CTL_VA) {
		h.reth.va = MR_IOVA + (h.reth.va & (MR_SIZE - 1));
		h.atomiceth.va = MR_IOVA + (h.atomiceth.va & (MR_SIZE - 1));
	}
	if (ctl & CTL_PSN) {
		int dir = (oi->flags & UROCE_OPF_RESP) ? 1 : 0;
		uint32_t base = dir ? sq_psn[i] : rq_psn[i];

		if (!f->origin_set[i][dir]) {
			f->origin_set[i][dir] = true;
			f->origin[i][dir] = h.bth.psn;
		}
		h.bth.psn = (base + h.bth.psn - f->origin[i][dir]) & UROCE_PSN_MASK;
	}
	n = uroce_wire_build(buf, sizeof(buf), &h, pkt.payload, pkt.payload_len);
	CHECK(n == pkt.pkt_len); /* the same packet, other field values */
	rx_copy(f, buf, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fz fz;
	struct fz *f = &fz;
	uint8_t hdr[SETUP_LEN] = {0};
	const uint8_t *p = data, *end = data + size;

	memset(f, 0, sizeof(*f));
	memcpy(hdr, data, size < SETUP_LEN ? size : SETUP_LEN);
	p += size < SETUP_LEN ? size : SETUP_LEN;
	parse_knobs(&f->k, hdr);
	setup(f);
	uroce_tp_process(f->dev, f->now); /* the posted sends go out */
	check_all(f);

	while (end - p >= REC_HDR) {
		uint32_t len = (uint32_t)p[0] << 8 | p[1];
		uint8_t ctl = p[2], k = ctl >> 4;

		p += REC_HDR;
		if (len > (size_t)(end - p))
			len = (uint32_t)(end - p);
		feed(f, p, len, ctl);
		p += len;
		f->now += k ? 1ull << (2 * k + 4) : 0;
		uroce_tp_process(f->dev, f->now);
		check_all(f);
	}

	/* Let the timers run out: retransmissions, RNR waits, retries exhausted. */
	for (int round = 0; round < 64; round++) {
		uint64_t next = uroce_tp_next_deadline(f->dev);

		if (next == UINT64_MAX)
			break;
		f->now = next > f->now ? next : f->now + 1000;
		uroce_tp_process(f->dev, f->now);
		check_all(f);
	}
	f->now += 3600ull * 1000000000ull;
	uroce_tp_process(f->dev, f->now);
	check_all(f);

	uroce_tp_dev_destroy(f->dev);
	free(f->mem);
	return 0;
}
