/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ops: a data-verifying exerciser between two uroce-xfer instances.
 *
 * The client drives: for each transport (RC, UC, UD), operation and size it runs one
 * "case" of `count` messages over a fresh QP pair (so a lossy case's unused receives or a
 * QP in error never leak into the next case), with this TCP handshake:
 *
 *   client                               server
 *   CASE {tp, op, size, count, qpn, psn} ->   creates its QP, RTR/RTS, prepares its
 *                                             buffer (fill, pattern, atomic target),
 *                                         <-  READY {qpn, psn}   posts receives
 *   RTR/RTS, posts the ops (a window of
 *   outstanding WRs), checks every send
 *   completion, READ data, atomic results;
 *   WRITE: a SEND_WITH_IMM "flag" after
 *   the writes (ordered behind them)
 *   SENT {posted, completed, errors}     ->   waits for every receive completion
 *                                             (and the flag), checks opcode, wc_flags,
 *                                             byte_len, immediate, src QP, every byte
 *                                             of every message and of the slack after
 *                                             it, the final atomic value
 *                                         <-  RESULT {verified, lost, errors, text}
 *   ... END {failures}                   ->   both print one line per (transport, op)
 *
 * Data: byte o of message i of a case is a function of (seed + case, size, i, o), so
 * stale data from another case or message never passes. Slots are `stride` apart (size
 * rounded up to 64 bytes, plus 40 bytes of GRH for UD receives); the bytes between a
 * message's end and the next slot keep the fill byte and are checked (no overrun).
 *
 * Lossy runs (-L, with fault injection in the daemons): RC must still deliver everything
 * exactly once, and is checked as strictly as ever. UC and UD may lose messages, so for
 * them "everything arrived" becomes "nothing corrupted, duplicated or reordered": every
 * received message matches a later message than the previous one, WRITE targets hold
 * pattern or fill bytes only (a UC WRITE may be cut short by a loss, as on any RNIC), a
 * completed WRITE_WITH_IMM's target is complete. Losses are counted and printed.
 *
 * Every wait has a timeout (-t, default 30 s without progress); on expiry the pending
 * state is printed and the case fails. Exit status: 0 only if every case passed.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xfer.h"

#define OPS_MAGIC 0x7866724fu /* "Orfx" */
#define OPS_VERSION 1u
#define OPS_FILL 0x5a
#define OPS_QKEY 0x1e0f00d5u
#define OPS_MAX_COUNT 1000
#define OPS_FLAG_WRID 0xf1a6f1a6ull
#define OPS_GRH 40

enum ops_tp { TP_RC, TP_UC, TP_UD, TP_N };
enum ops_op { OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_FADD, OP_CSWAP, OP_N };

static const char *const tp_names[TP_N] = { "rc", "uc", "ud" };
static const char *const op_names[OP_N] = { "send", "send_imm", "write", "write_imm",
					    "read", "fadd", "cswap" };
static const enum ibv_qp_type tp_type[TP_N] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
static const enum ibv_wr_opcode op_wr_opcode[OP_N] = {
	[OP_SEND] = IBV_WR_SEND,
	[OP_SEND_IMM] = IBV_WR_SEND_WITH_IMM,
	[OP_WRITE] = IBV_WR_RDMA_WRITE,
	[OP_WRITE_IMM] = IBV_WR_RDMA_WRITE_WITH_IMM,
	[OP_READ] = IBV_WR_RDMA_READ,
	[OP_FADD] = IBV_WR_ATOMIC_FETCH_AND_ADD,
	[OP_CSWAP] = IBV_WR_ATOMIC_CMP_AND_SWP,
};

enum { CMD_CASE = 1, CMD_END };

struct ops_hello {
	uint32_t magic, version;
	uint8_t gid[16];
	uint64_t addr;
	uint64_t buflen;
	uint32_t rkey;
	uint32_t mtu;       /* client: the path MTU to use; server: its port's active MTU */
	uint64_t seed;
	uint32_t lossy;
	uint32_t timeout_ms;
	uint32_t rd_atomic;
	uint32_t reserved;
};

struct ops_case_msg {
	uint32_t magic, cmd;
	uint32_t tp, op;
	uint64_t size;
	uint32_t count, stride;
	uint32_t case_no;
	uint32_t qpn, psn;
	uint32_t failures; /* END: cases the client saw fail */
};

struct ops_ready {
	uint32_t magic;
	int32_t status;
	uint32_t qpn, psn;
};

struct ops_sent {
	uint32_t magic;
	uint32_t posted, completed, errors;
};

struct ops_result {
	uint32_t magic;
	uint32_t verified, received, lost, errors;
	uint32_t reserved;
	char text[200];
};

struct ops_stat {
	uint32_t cases, failed;
	uint64_t msgs, verified, lost, bytes;
	char first[240];
};

struct ops_run {
	const struct xfer_opts *o;
	struct xfer_dev dev;
	int fd;
	bool client;
	uint8_t *buf;
	size_t buflen;
	struct uroce_client_mr *mr;
	struct uroce_client_ah *ah;   /* UD: to the peer's GID */
	union ibv_gid peer_gid;
	uint64_t peer_addr;
	uint32_t peer_rkey;
	enum ibv_mtu mtu;
	uint32_t ud_max;              /* largest UD message: both ports' active MTU, path MTU */
	uint64_t seed;
	bool lossy;
	int timeout_ms;
	uint32_t rd_atomic;
	uint32_t max_inline;
	struct ops_stat stat[TP_N][OP_N];
};

/* One case's QP and CQs. */
struct ops_qp {
	struct uroce_client_cq *scq, *rcq;
	struct uroce_client_qp *qp;
	struct ibv_qp_cap cap;
	uint32_t psn;
};

static bool op_valid(enum ops_tp tp, enum ops_op op)
{
	if (tp == TP_UD)
		return op == OP_SEND || op == OP_SEND_IMM;
	if (tp == TP_UC)
		return op <= OP_WRITE_IMM;
	return true;
}

static bool op_is_atomic(enum ops_op op)
{
	return op == OP_FADD || op == OP_CSWAP;
}

static uint64_t case_seed(uint64_t seed, uint32_t case_no)
{
	return xfer_mix64(seed + (uint64_t)case_no * 0x632be59bd9b4e019ull);
}

static uint32_t imm_of(uint64_t cseed, uint64_t size, uint32_t iter)
{
	return (uint32_t)xfer_mix64(cseed ^ (size << 24) ^ (0x1a3ull << 44) ^ iter);
}

static uint32_t flag_imm(uint32_t case_no)
{
	return 0xf1a60000u | (case_no & 0xffff);
}

static uint32_t round_up64(uint64_t v)
{
	return (uint32_t)((v + 63) & ~63ull);
}

static uint32_t case_stride(enum ops_tp tp, enum ops_op op, uint64_t size)
{
	uint32_t s;

	if (op_is_atomic(op))
		return 64;
	s = round_up64(size + (tp == TP_UD ? OPS_GRH : 0));
	return s ? s : 64;
}

/* Atomics: the compare/add and swap operands of message i, the value each returns and
 * the target's final value, all from the case seed and the initial value. */
struct atomic_plan {
	uint64_t init, final;
	uint64_t *arg, *swap, *orig;
};

static int atomic_plan(struct atomic_plan *p, enum ops_op op, uint64_t cseed, uint32_t count)
{
	uint64_t cur;
	uint32_t i;

	p->arg = calloc(count, sizeof(uint64_t));
	p->swap = calloc(count, sizeof(uint64_t));
	p->orig = calloc(count, sizeof(uint64_t));
	if (!p->arg || !p->swap || !p->orig)
		return -1;
	p->init = xfer_mix64(cseed ^ 0xa70111c0ull);
	cur = p->init;
	for (i = 0; i < count; i++) {
		uint64_t r = xfer_mix64(cseed + i + 1);

		p->orig[i] = cur;
		if (op == OP_FADD) {
			p->arg[i] = (i % 5 == 4) ? (uint64_t)-(int64_t)(r & 0xffff) : r >> 3;
			cur += p->arg[i];
		} else {
			/* Every fourth compare misses: the target must stay as it was. */
			p->arg[i] = (i % 4 == 3) ? cur ^ (1ull << (r & 63)) : cur;
			p->swap[i] = r;
			if (p->arg[i] == cur)
				cur = p->swap[i];
		}
	}
	p->final = cur;
	return 0;
}

static void atomic_plan_free(struct atomic_plan *p)
{
	free(p->arg);
	free(p->swap);
	free(p->orig);
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void stat_fail(struct ops_stat *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void stat_fail(struct ops_stat *s, const char *fmt, ...)
{
	va_list ap;
	char line[240];

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	xfer_err("%s", line);
	if (!s->first[0])
		snprintf(s->first, sizeof(s->first), "%s", line);
}

/* ---- QPs ------------------------------------------------------------------------------- */

static void ops_qp_destroy(struct ops_qp *q)
{
	if (q->qp)
		uroce_client_destroy_qp(q->qp);
	if (q->scq)
		uroce_client_destroy_cq(q->scq);
	if (q->rcq)
		uroce_client_destroy_cq(q->rcq);
	memset(q, 0, sizeof(*q));
}

static int ops_qp_create(struct ops_run *r, struct ops_qp *q, enum ops_tp tp, uint32_t send_wr,
			 uint32_t recv_wr)
{
	unsigned int access = tp == TP_RC ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC :
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

	memset(q, 0, sizeof(*q));
	q->scq = uroce_client_create_cq(r->dev.ctx, (int)send_wr + 8, NULL, 0);
	q->rcq = uroce_client_create_cq(r->dev.ctx, (int)recv_wr + 8, NULL, 0);
	if (!q->scq || !q->rcq) {
		xfer_err("create_cq: %s", strerror(errno));
		goto fail;
	}
	q->qp = xfer_create_qp(&r->dev, tp_type[tp], q->scq, q->rcq, send_wr, recv_wr,
			       r->max_inline, &q->cap);
	if (!q->qp)
		goto fail;
	if (xfer_qp_init(q->qp, tp_type[tp], r->dev.ib_port, access, OPS_QKEY))
		goto fail;
	q->psn = xfer_rand_psn();
	return 0;
fail:
	ops_qp_destroy(q);
	return -1;
}

static int ops_qp_connect(struct ops_run *r, struct ops_qp *q, enum ops_tp tp, uint32_t qpn,
			  uint32_t psn)
{
	struct xfer_peer peer = { .qpn = qpn, .psn = psn, .gid = r->peer_gid };

	return xfer_qp_connect(q->qp, tp_type[tp], r->dev.ib_port, r->dev.gid_index, r->mtu,
			       q->psn, &peer, 64, (uint8_t)r->rd_atomic);
}

/* ---- client ---------------------------------------------------------------------------- */

struct client_case {
	enum ops_tp tp;
	enum ops_op op;
	uint64_t size;
	uint32_t count, stride, case_no;
	uint64_t cseed;
	struct atomic_plan ap;
	uint32_t peer_qpn;
};

static int client_post(struct ops_run *r, struct ops_qp *q, struct client_case *c, uint32_t i)
{
	uint8_t *slot = r->buf + (size_t)i * c->stride;
	struct ibv_sge sge = { .addr = (uintptr_t)slot, .length = (uint32_t)c->size,
			       .lkey = r->mr->ibv.lkey };
	struct ibv_send_wr wr, *bad;
	int err;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = i;
	wr.sg_list = &sge;
	wr.num_sge = c->size ? 1 : 0;
	wr.send_flags = IBV_SEND_SIGNALED;
	if ((unsigned int)c->op >= OP_N)
		return -1;
	wr.opcode = op_wr_opcode[c->op];
	if (c->op == OP_SEND_IMM || c->op == OP_WRITE_IMM)
		wr.imm_data = htonl(imm_of(c->cseed, c->size, i));
	if (op_is_atomic(c->op)) {
		sge.length = 8;
		wr.num_sge = 1;
		wr.wr.atomic.remote_addr = r->peer_addr;
		wr.wr.atomic.rkey = r->peer_rkey;
		wr.wr.atomic.compare_add = c->ap.arg[i];
		if (c->op == OP_CSWAP)
			wr.wr.atomic.swap = c->ap.swap[i];
	}
	if (c->op == OP_WRITE || c->op == OP_WRITE_IMM || c->op == OP_READ) {
		wr.wr.rdma.remote_addr = r->peer_addr + (uint64_t)i * c->stride;
		wr.wr.rdma.rkey = r->peer_rkey;
	}
	if (c->tp == TP_UD) {
		wr.wr.ud.ah = &r->ah->ibv;
		wr.wr.ud.remote_qpn = c->peer_qpn;
		wr.wr.ud.remote_qkey = OPS_QKEY;
	}
	/* Every other small SEND/WRITE goes inline, so both paths are exercised. */
	if ((c->op <= OP_WRITE_IMM) && c->size && c->size <= q->cap.max_inline_data && (i & 1))
		wr.send_flags |= IBV_SEND_INLINE;
	err = uroce_client_post_send(q->qp, &wr, &bad);
	if (err)
		xfer_err("post_send %s #%u: %s", op_names[c->op], i, strerror(err));
	return err ? -1 : 0;
}

static enum ibv_wc_opcode expected_send_opcode(enum ops_op op)
{
	switch (op) {
	case OP_SEND:
	case OP_SEND_IMM: return IBV_WC_SEND;
	case OP_WRITE:
	case OP_WRITE_IMM: return IBV_WC_RDMA_WRITE;
	case OP_READ: return IBV_WC_RDMA_READ;
	case OP_FADD: return IBV_WC_FETCH_ADD;
	default: return IBV_WC_COMP_SWAP;
	}
}

/* Checks one send-side completion; READ data and atomic results here too. */
static int client_check_wc(struct ops_run *r, struct client_case *c, const struct ibv_wc *wc,
			   uint32_t expect_id, struct ops_stat *s, uint64_t *verified)
{
	const char *tn = tp_names[c->tp], *on = op_names[c->op];
	uint8_t *slot;

	if (wc->status != IBV_WC_SUCCESS) {
		stat_fail(s, "%s %s size %lu: completion error %s (%d) for wr_id %lu", tn, on,
			  (unsigned long)c->size, uroce_client_wc_status_str(wc->status),
			  wc->status, (unsigned long)wc->wr_id);
		return -1;
	}
	if (wc->wr_id != expect_id) {
		stat_fail(s, "%s %s size %lu: completion for wr_id %lu, expected %u (order/dup)",
			  tn, on, (unsigned long)c->size, (unsigned long)wc->wr_id, expect_id);
		return -1;
	}
	if (wc->opcode != expected_send_opcode(c->op)) {
		stat_fail(s, "%s %s size %lu #%u: opcode %s, expected %s", tn, on,
			  (unsigned long)c->size, expect_id, xfer_wc_opcode_str(wc->opcode),
			  xfer_wc_opcode_str(expected_send_opcode(c->op)));
		return -1;
	}
	slot = r->buf + (size_t)expect_id * c->stride;
	if (c->op == OP_READ) {
		long bad = xfer_pattern_check(slot, c->size, c->cseed, c->size, expect_id);
		uint32_t k;

		if (bad >= 0) {
			stat_fail(s, "%s read size %lu #%u: byte %ld is 0x%02x, expected 0x%02x",
				  tn, (unsigned long)c->size, expect_id, bad, slot[bad],
				  xfer_pattern_byte(c->cseed, c->size, expect_id, (size_t)bad));
			return -1;
		}
		for (k = (uint32_t)c->size; k < c->stride; k++)
			if (slot[k] != OPS_FILL) {
				stat_fail(s, "%s read size %lu #%u: wrote past the end (byte %u)",
					  tn, (unsigned long)c->size, expect_id, k);
				return -1;
			}
		++*verified;
	} else if (op_is_atomic(c->op)) {
		uint64_t got = get_u64(slot);

		if (got != c->ap.orig[expect_id]) {
			stat_fail(s, "%s %s #%u: returned 0x%016lx, expected 0x%016lx", tn, on,
				  expect_id, (unsigned long)got,
				  (unsigned long)c->ap.orig[expect_id]);
			return -1;
		}
		++*verified;
	}
	return 0;
}

static int client_case(struct ops_run *r, enum ops_tp tp, enum ops_op op, uint64_t size,
		       uint32_t count, uint32_t case_no)
{
	struct ops_stat *s = &r->stat[tp][op];
	struct client_case c;
	struct ops_case_msg m;
	struct ops_ready rd;
	struct ops_sent sent;
	struct ops_result res;
	struct ops_qp q;
	uint32_t window = (uint32_t)r->o->window, posted = 0, done = 0, errors = 0, i;
	uint64_t verified = 0, last_progress;
	const char *tn = tp_names[tp], *on = op_names[op];
	int ret = -1;
	bool stop = false;

	memset(&c, 0, sizeof(c));
	c.tp = tp;
	c.op = op;
	c.size = op_is_atomic(op) ? 8 : size;
	c.count = count;
	c.stride = case_stride(tp, op, c.size);
	c.case_no = case_no;
	c.cseed = case_seed(r->seed, case_no);
	if (op_is_atomic(op) && atomic_plan(&c.ap, op, c.cseed, count)) {
		xfer_err("out of memory");
		return -2;
	}
	s->cases++;
	if (op_is_atomic(op) && window > r->rd_atomic * 2)
		window = r->rd_atomic * 2;
	if (ops_qp_create(r, &q, tp, window + 2, 2)) {
		stat_fail(s, "%s %s size %lu: cannot create the QP", tn, on, (unsigned long)size);
		goto out_plan;
	}
	/* Our side of the data: the pattern to send or write; fill where READ and atomic
	 * results land. */
	for (i = 0; i < count; i++) {
		uint8_t *slot = r->buf + (size_t)i * c.stride;

		memset(slot, OPS_FILL, c.stride);
		if (op <= OP_WRITE_IMM)
			xfer_pattern_fill(slot, c.size, c.cseed, c.size, i);
	}
	/* --spoil: the data no longer is what the receiver will expect (a test of the
	 * checker: every such case must fail). */
	if (r->o->spoil && op <= OP_WRITE_IMM && c.size)
		r->buf[(size_t)(count - 1) * c.stride + c.size / 2] ^= 0x01;
	memset(&m, 0, sizeof(m));
	m.magic = OPS_MAGIC;
	m.cmd = CMD_CASE;
	m.tp = tp;
	m.op = op;
	m.size = c.size;
	m.count = count;
	m.stride = c.stride;
	m.case_no = case_no;
	m.qpn = uroce_client_qp_ibv(q.qp)->qp_num;
	m.psn = q.psn;
	if (oob_write(r->fd, &m, sizeof(m), r->timeout_ms) ||
	    oob_read(r->fd, &rd, sizeof(rd), r->timeout_ms * 4) || rd.magic != OPS_MAGIC) {
		xfer_err("lost the exchange with the server");
		ret = -2;
		goto out_qp;
	}
	if (rd.status) {
		stat_fail(s, "%s %s size %lu: the server could not set up the case (%s)", tn, on,
			  (unsigned long)c.size, strerror(-rd.status));
		goto out_qp;
	}
	c.peer_qpn = rd.qpn;
	if (ops_qp_connect(r, &q, tp, rd.qpn, rd.psn)) {
		stat_fail(s, "%s %s size %lu: cannot connect the QP", tn, on,
			  (unsigned long)c.size);
		errors++;
		stop = true;
	}

	last_progress = xfer_now_ns();
	while (!stop && done < count) {
		struct ibv_wc wc[16];
		int n, k;

		while (posted < count && posted - done < window) {
			if (client_post(r, &q, &c, posted)) {
				errors++;
				stop = true;
				break;
			}
			posted++;
		}
		if (stop)
			break;
		n = xfer_poll_wait(q.scq, wc, 16, r->timeout_ms);
		if (n < 0) {
			errors++;
			break;
		}
		if (n == 0) {
			stat_fail(s, "%s %s size %lu: timeout after %d s: posted %u, completed %u, "
				  "pending wr_id %u..%u", tn, on, (unsigned long)c.size,
				  r->timeout_ms / 1000, posted, done, done, posted - 1);
			errors++;
			break;
		}
		last_progress = xfer_now_ns();
		for (k = 0; k < n; k++) {
			if (client_check_wc(r, &c, &wc[k], done, s, &verified)) {
				errors++;
				stop = true;
			}
			done++;
		}
	}
	(void)last_progress;
	/* WRITE: a flag behind the writes tells the server their data is there (ordered on
	 * the QP; for UC it may be lost in a lossy run, the server then goes by SENT). */
	if (!errors && op == OP_WRITE) {
		struct ibv_send_wr wr, *bad;
		struct ibv_wc wc;
		int n, err;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = OPS_FLAG_WRID;
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htonl(flag_imm(case_no));
		wr.send_flags = IBV_SEND_SIGNALED;
		err = uroce_client_post_send(q.qp, &wr, &bad);
		n = err ? -1 : xfer_poll_wait(q.scq, &wc, 1, r->timeout_ms);
		if (n <= 0 || wc.status != IBV_WC_SUCCESS || wc.wr_id != OPS_FLAG_WRID) {
			stat_fail(s, "%s write size %lu: flag SEND %s", tn, (unsigned long)c.size,
				  err ? strerror(err) : n == 0 ? "timed out" :
				  n < 0 ? "poll failed" : uroce_client_wc_status_str(wc.status));
			errors++;
		}
	}

	memset(&sent, 0, sizeof(sent));
	sent.magic = OPS_MAGIC;
	sent.posted = posted;
	sent.completed = done;
	sent.errors = errors;
	memset(&res, 0, sizeof(res));
	if (oob_write(r->fd, &sent, sizeof(sent), r->timeout_ms) ||
	    oob_read(r->fd, &res, sizeof(res), r->timeout_ms * 4) || res.magic != OPS_MAGIC) {
		xfer_err("lost the exchange with the server");
		ret = -2;
		goto out_qp;
	}
	res.text[sizeof(res.text) - 1] = '\0';
	if (res.errors) {
		errors += res.errors;
		stat_fail(s, "%s %s size %lu: server: %s", tn, on, (unsigned long)c.size, res.text);
	}
	s->msgs += count;
	s->verified += verified + res.verified;
	s->lost += res.lost;
	s->bytes += (uint64_t)(count - res.lost) * c.size;
	if (xfer_verbose || errors)
		printf("  %s %-9s size %8lu x %4u: %s (verified %lu here, %u there, lost %u)\n",
		       tn, on, (unsigned long)c.size, count, errors ? "FAILED" : "ok",
		       (unsigned long)verified, res.verified, res.lost);
	ret = errors ? -1 : 0;
out_qp:
	ops_qp_destroy(&q);
out_plan:
	if (op_is_atomic(op))
		atomic_plan_free(&c.ap);
	if (ret == -1)
		s->failed++;
	return ret;
}

/* ---- server ---------------------------------------------------------------------------- */

struct server_case {
	enum ops_tp tp;
	enum ops_op op;
	uint64_t size;
	uint32_t count, stride, case_no;
	uint64_t cseed;
	uint32_t peer_qpn;
	struct ibv_wc *wc;    /* receive completions in arrival order */
	uint32_t nwc, extra;
	struct ops_result res;
};

static void res_fail(struct server_case *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void res_fail(struct server_case *c, const char *fmt, ...)
{
	va_list ap;
	char line[200];

	c->res.errors++;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	xfer_err("%s %s size %lu: %s", tp_names[c->tp], op_names[c->op],
		 (unsigned long)c->size, line);
	if (!c->res.text[0])
		snprintf(c->res.text, sizeof(c->res.text), "%s", line);
}

static int server_post_recvs(struct ops_run *r, struct ops_qp *q, struct server_case *c,
			     uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint32_t len = (uint32_t)c->size + (c->tp == TP_UD ? OPS_GRH : 0);
		struct ibv_sge sge = { .addr = (uintptr_t)(r->buf + (size_t)i * c->stride),
				       .length = len, .lkey = r->mr->ibv.lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = (c->op == OP_SEND || c->op == OP_SEND_IMM) &&
						     len ? 1 : 0 };
		struct ibv_recv_wr *bad;
		int err = uroce_client_post_recv(q->qp, &wr, &bad);

		if (err) {
			xfer_err("post_recv #%u: %s", i, strerror(err));
			return -1;
		}
	}
	return 0;
}

/* Does slot i of the case hold message `iter` (payload, then fill up to the stride)? */
static bool slot_holds(struct ops_run *r, struct server_case *c, uint32_t slot, uint32_t iter,
		       long *bad)
{
	const uint8_t *p = r->buf + (size_t)slot * c->stride;
	uint32_t hdr = c->tp == TP_UD ? OPS_GRH : 0, k;

	*bad = xfer_pattern_check(p + hdr, c->size, c->cseed, c->size, iter);
	if (*bad >= 0) {
		*bad += hdr;
		return false;
	}
	for (k = hdr + (uint32_t)c->size; k < c->stride; k++)
		if (p[k] != OPS_FILL) {
			*bad = k;
			return false;
		}
	return true;
}

static void server_verify_recvs(struct ops_run *r, struct server_case *c, uint32_t peer_qpn)
{
	bool imm = c->op == OP_SEND_IMM || c->op == OP_WRITE_IMM;
	bool in_place = c->op == OP_WRITE_IMM; /* data is at the message's own slot */
	bool may_lose = r->lossy && c->tp != TP_RC;
	enum ibv_wc_opcode want = c->op == OP_WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
	uint32_t want_len = c->op == OP_WRITE_IMM ? (uint32_t)c->size :
			    (uint32_t)c->size + (c->tp == TP_UD ? OPS_GRH : 0);
	uint32_t k, next = 0;

	for (k = 0; k < c->nwc; k++) {
		const struct ibv_wc *wc = &c->wc[k];
		uint32_t iter, found = UINT32_MAX;
		long bad = -1;

		if (wc->status != IBV_WC_SUCCESS) {
			res_fail(c, "receive #%u: completion error %s (%d)", k,
				 uroce_client_wc_status_str(wc->status), wc->status);
			continue;
		}
		if (wc->wr_id != k) {
			res_fail(c, "receive #%u completed with wr_id %lu (receives out of order)",
				 k, (unsigned long)wc->wr_id);
			continue;
		}
		if (wc->opcode != want) {
			res_fail(c, "receive #%u: opcode %s, expected %s", k,
				 xfer_wc_opcode_str(wc->opcode), xfer_wc_opcode_str(want));
			continue;
		}
		if (!!(wc->wc_flags & IBV_WC_WITH_IMM) != imm) {
			res_fail(c, "receive #%u: wc_flags 0x%x (%s immediate expected)", k,
				 wc->wc_flags, imm ? "an" : "no");
			continue;
		}
		if (c->tp == TP_UD && !(wc->wc_flags & IBV_WC_GRH)) {
			res_fail(c, "receive #%u: UD completion without IBV_WC_GRH", k);
			continue;
		}
		if (wc->byte_len != want_len) {
			res_fail(c, "receive #%u: byte_len %u, expected %u", k, wc->byte_len,
				 want_len);
			continue;
		}
		if (wc->src_qp != peer_qpn && c->tp == TP_UD) {
			res_fail(c, "receive #%u: src_qp 0x%06x, expected 0x%06x", k, wc->src_qp,
				 peer_qpn);
			continue;
		}
		/* Which message is it? The next one, or (when losses are allowed) a later one:
		 * identified by its immediate, else by its data. */
		for (iter = next; iter < c->count; iter++) {
			bool ok = true;

			if (imm && wc->imm_data != htonl(imm_of(c->cseed, c->size, iter)))
				ok = false;
			if (ok && !imm && c->size && !in_place &&
			    !slot_holds(r, c, k, iter, &bad))
				ok = false;
			if (ok) {
				found = iter;
				break;
			}
			if (!may_lose)
				break;
		}
		if (found == UINT32_MAX) {
			if (imm)
				res_fail(c,
					 "receive #%u: immediate 0x%08x is no message after #%u%s",
					 k, ntohl(wc->imm_data), next ? next - 1 : 0,
					 next ? " (duplicate or reordered?)" : "");
			else
				res_fail(c,
					 "receive #%u: data differs from message #%u at byte %ld "
					 "(0x%02x)",
					 k, next, bad,
					 bad >= 0 ? r->buf[(size_t)k * c->stride + (size_t)bad] :
						    0);
			continue;
		}
		/* Data: SEND lands in receive slot k; WRITE_WITH_IMM at its own slot. */
		if (c->size && !slot_holds(r, c, in_place ? found : k, found, &bad)) {
			res_fail(c, "message #%u: byte %ld differs (0x%02x, expected 0x%02x)",
				 found, bad,
				 r->buf[(size_t)(in_place ? found : k) * c->stride + (size_t)bad],
				 (size_t)bad < (c->tp == TP_UD ? OPS_GRH : 0u) + c->size ?
					 xfer_pattern_byte(
						 c->cseed, c->size, found,
						 (size_t)bad - (c->tp == TP_UD ? OPS_GRH : 0u)) :
					 OPS_FILL);
			continue;
		}
		c->res.verified++;
		next = found + 1;
	}
}

/* WRITE targets: every slot complete (or, when UC may lose, pattern or fill bytes only). */
static void server_verify_writes(struct ops_run *r, struct server_case *c, bool *complete)
{
	bool may_lose = r->lossy && c->tp != TP_RC;
	uint32_t i;

	for (i = 0; i < c->count; i++) {
		const uint8_t *p = r->buf + (size_t)i * c->stride;
		long bad;
		uint32_t k;

		if (complete && complete[i])
			continue; /* checked with its WRITE_WITH_IMM completion */
		if (slot_holds(r, c, i, i, &bad)) {
			if (c->op == OP_WRITE)
				c->res.verified++;
			continue;
		}
		if (!may_lose) {
			res_fail(c, "write #%u: byte %ld is 0x%02x, expected 0x%02x", i, bad,
				 p[bad], (uint64_t)bad < c->size ?
				 xfer_pattern_byte(c->cseed, c->size, i, (size_t)bad) : OPS_FILL);
			continue;
		}
		for (k = 0; k < c->stride; k++) {
			uint8_t want = k < c->size ? xfer_pattern_byte(c->cseed, c->size, i, k) :
				       OPS_FILL;

			if (p[k] != want && p[k] != OPS_FILL) {
				res_fail(c,
					 "write #%u: byte %u is 0x%02x: neither the data (0x%02x) "
					 "nor the fill",
					 i, k, p[k], want);
				break;
			}
		}
		if (c->op == OP_WRITE)
			c->res.lost++;
	}
}

static int server_case(struct ops_run *r, const struct ops_case_msg *m)
{
	struct server_case c;
	struct ops_ready rd;
	struct ops_sent sent;
	struct ops_qp q;
	struct atomic_plan ap;
	uint32_t expect, i;
	uint64_t t_case, t_last, t_sent = 0;
	bool got_sent = false, may_lose;
	bool *complete = NULL;
	int ret = -1;

	memset(&c, 0, sizeof(c));
	memset(&ap, 0, sizeof(ap));
	memset(&q, 0, sizeof(q));
	c.tp = (enum ops_tp)m->tp;
	c.op = (enum ops_op)m->op;
	c.size = m->size;
	c.count = m->count;
	c.stride = m->stride;
	c.case_no = m->case_no;
	c.cseed = case_seed(r->seed, c.case_no);
	c.res.magic = OPS_MAGIC;
	memset(&rd, 0, sizeof(rd));
	rd.magic = OPS_MAGIC;
	may_lose = r->lossy && c.tp != TP_RC;

	if (m->tp >= TP_N || m->op >= OP_N || !op_valid(c.tp, c.op) || !c.count ||
	    c.count > OPS_MAX_COUNT || c.stride < c.size ||
	    (uint64_t)c.count * c.stride > r->buflen) {
		rd.status = -EINVAL;
		xfer_err("bad case from the client (tp %u op %u size %lu count %u stride %u)",
			 m->tp, m->op, (unsigned long)c.size, c.count, c.stride);
		return oob_write(r->fd, &rd, sizeof(rd), r->timeout_ms) ? -2 : -1;
	}
	c.wc = calloc(c.count + 2, sizeof(*c.wc));
	complete = calloc(c.count, sizeof(bool));
	if (!c.wc || !complete || (op_is_atomic(c.op) && atomic_plan(&ap, c.op, c.cseed, c.count)))
		rd.status = -ENOMEM;
	if (!rd.status && ops_qp_create(r, &q, c.tp, 2, c.count + 2))
		rd.status = -EIO;
	if (!rd.status && ops_qp_connect(r, &q, c.tp, m->qpn, m->psn))
		rd.status = -EIO;
	/* The target memory: fill (receives, writes), pattern (reads), initial value
	 * (atomics). */
	if (!rd.status) {
		for (i = 0; i < c.count; i++) {
			uint8_t *slot = r->buf + (size_t)i * c.stride;

			memset(slot, OPS_FILL, c.stride);
			if (c.op == OP_READ)
				xfer_pattern_fill(slot, c.size, c.cseed, c.size, i);
		}
		if (op_is_atomic(c.op))
			put_u64(r->buf, ap.init);
	}
	expect = c.op == OP_SEND || c.op == OP_SEND_IMM || c.op == OP_WRITE_IMM ? c.count :
		 c.op == OP_WRITE ? 1 : 0;
	if (!rd.status && expect) {
		/* WRITE: one receive for the flag (no buffer). */
		struct server_case flag = c;

		if (c.op == OP_WRITE)
			flag.op = OP_WRITE_IMM;
		if (server_post_recvs(r, &q, &flag, expect))
			rd.status = -EIO;
	}
	if (!rd.status) {
		rd.qpn = uroce_client_qp_ibv(q.qp)->qp_num;
		rd.psn = q.psn;
	}
	if (oob_write(r->fd, &rd, sizeof(rd), r->timeout_ms)) {
		ret = -2;
		goto out;
	}
	if (rd.status)
		goto out;

	/* Receive completions and the client's SENT, whichever comes first; a timeout is
	 * counted from the last progress. */
	t_case = t_last = xfer_now_ns();
	for (;;) {
		struct ibv_wc wc[16];
		struct pollfd pf = { .fd = r->fd, .events = POLLIN };
		uint64_t now;
		int n = uroce_client_poll_cq(q.rcq, 16, wc), k;

		if (n < 0) {
			res_fail(&c, "poll CQ failed %d", n);
			break;
		}
		for (k = 0; k < n; k++) {
			if (c.nwc < c.count + 2 && c.nwc < expect)
				c.wc[c.nwc++] = wc[k];
			else
				c.extra++;
		}
		now = xfer_now_ns();
		if (n > 0)
			t_last = now;
		if (!got_sent && poll(&pf, 1, 0) > 0) {
			if (oob_read(r->fd, &sent, sizeof(sent), r->timeout_ms) ||
			    sent.magic != OPS_MAGIC) {
				ret = -2;
				goto out;
			}
			got_sent = true;
			t_sent = now;
		}
		if (got_sent && c.nwc >= expect)
			break;
		/* The client is done, and what was lost will not come (UC/UD in a lossy run,
		 * or a case the client already saw fail). */
		if (got_sent && (may_lose || sent.errors) &&
		    now - (t_sent > t_last ? t_sent : t_last) > 500000000ull)
			break;
		if (now - t_last > (uint64_t)r->timeout_ms * 1000000 &&
		    (got_sent || now - t_case > (uint64_t)r->timeout_ms * 4000000)) {
			res_fail(&c, "timeout after %d s: %u of %u receive completions, %s",
				 r->timeout_ms / 1000, c.nwc, expect,
				 got_sent ? "the client is done" : "no word from the client");
			break;
		}
		if (n == 0)
			usleep(now - t_last < 1000000 ? 20 : 200);
	}
	if (!got_sent) {
		if (oob_read(r->fd, &sent, sizeof(sent), r->timeout_ms * 4) ||
		    sent.magic != OPS_MAGIC) {
			ret = -2;
			goto out;
		}
	}
	/* Anything more would be a duplicate. */
	usleep(2000);
	{
		struct ibv_wc wc[16];
		int n;

		while ((n = uroce_client_poll_cq(q.rcq, 16, wc)) > 0)
			c.extra += (uint32_t)n;
	}
	if (c.extra)
		res_fail(&c, "%u receive completions more than messages sent", c.extra);
	c.res.received = c.nwc;

	switch (c.op) {
	case OP_SEND:
	case OP_SEND_IMM:
		server_verify_recvs(r, &c, m->qpn);
		if (c.nwc < c.count) {
			if (may_lose)
				c.res.lost = c.count - c.nwc;
			else if (!sent.errors)
				res_fail(&c, "%u of %u messages never arrived", c.count - c.nwc,
					 c.count);
		}
		break;
	case OP_WRITE_IMM:
		server_verify_recvs(r, &c, m->qpn);
		for (i = 0; i < c.nwc; i++) {
			uint32_t it;

			for (it = 0; it < c.count; it++)
				if (c.wc[i].status == IBV_WC_SUCCESS &&
				    c.wc[i].imm_data == htonl(imm_of(c.cseed, c.size, it)))
					complete[it] = true;
		}
		if (c.nwc < c.count) {
			if (may_lose)
				c.res.lost = c.count - c.nwc;
			else if (!sent.errors)
				res_fail(&c, "%u of %u messages never arrived", c.count - c.nwc,
					 c.count);
		}
		if (!sent.errors)
			server_verify_writes(r, &c, complete);
		break;
	case OP_WRITE:
		if (c.nwc == 1) {
			const struct ibv_wc *wc = &c.wc[0];

			if (wc->status != IBV_WC_SUCCESS || wc->opcode != IBV_WC_RECV ||
			    !(wc->wc_flags & IBV_WC_WITH_IMM) || wc->byte_len != 0 ||
			    wc->imm_data != htonl(flag_imm(c.case_no)))
				res_fail(&c, "flag: status %s opcode %s flags 0x%x byte_len %u "
					 "imm 0x%08x", uroce_client_wc_status_str(wc->status),
					 xfer_wc_opcode_str(wc->opcode), wc->wc_flags, wc->byte_len,
					 ntohl(wc->imm_data));
		} else if (!may_lose && !sent.errors) {
			res_fail(&c, "the flag SEND after the writes never arrived");
		}
		if (!sent.errors)
			server_verify_writes(r, &c, NULL);
		break;
	case OP_READ:
		/* The data the client read must still be here, untouched. */
		for (i = 0; i < c.count; i++) {
			long bad;

			if (!slot_holds(r, &c, i, i, &bad)) {
				res_fail(&c, "read source #%u changed at byte %ld", i, bad);
				break;
			}
		}
		break;
	case OP_FADD:
	case OP_CSWAP:
		if (!sent.errors && sent.completed == c.count) {
			uint64_t v = get_u64(r->buf);

			if (v != ap.final)
				res_fail(&c,
					 "target is 0x%016lx after %u atomics, expected 0x%016lx",
					 (unsigned long)v, c.count, (unsigned long)ap.final);
			else
				c.res.verified++;
		}
		break;
	default:
		break;
	}
	if (xfer_verbose || c.res.errors)
		printf("  %s %-9s size %8lu x %4u: %s (received %u, verified %u, lost %u)\n",
		       tp_names[c.tp], op_names[c.op], (unsigned long)c.size, c.count,
		       c.res.errors || sent.errors ? "FAILED" : "ok", c.nwc, c.res.verified,
		       c.res.lost);
	{
		struct ops_stat *s = &r->stat[c.tp][c.op];

		s->cases++;
		s->msgs += c.count;
		s->verified += c.res.verified;
		s->lost += c.res.lost;
		s->bytes += (uint64_t)(c.count - c.res.lost) * c.size;
		if (c.res.errors || sent.errors) {
			s->failed++;
			if (!s->first[0])
				snprintf(s->first, sizeof(s->first), "size %lu: %s",
					 (unsigned long)c.size,
					 c.res.text[0] ? c.res.text : "the client saw errors");
		}
	}
	ret = oob_write(r->fd, &c.res, sizeof(c.res), r->timeout_ms) ? -2 :
	      c.res.errors || sent.errors ? -1 : 0;
out:
	ops_qp_destroy(&q);
	if (op_is_atomic(c.op))
		atomic_plan_free(&ap);
	free(c.wc);
	free(complete);
	return ret;
}

/* ---- setup and the plan ------------------------------------------------------------------ */

static int parse_list(const char *list, const char *const *names, int n, bool *sel)
{
	char *copy = strdup(list), *save = NULL, *t;
	int i, any = 0;

	if (!copy)
		return -1;
	for (i = 0; i < n; i++)
		sel[i] = false;
	for (t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "all")) {
			for (i = 0; i < n; i++)
				sel[i] = true;
			any = 1;
			continue;
		}
		for (i = 0; i < n; i++)
			if (!strcasecmp(t, names[i]))
				break;
		if (i == n) {
			xfer_err("unknown name '%s'", t);
			free(copy);
			return -1;
		}
		sel[i] = true;
		any = 1;
	}
	free(copy);
	return any ? 0 : -1;
}

static int parse_size(const char *t, uint64_t *v)
{
	char *end;
	unsigned long long x = strtoull(t, &end, 0);

	if (end == t)
		return -1;
	if (*end == 'k' || *end == 'K')
		x <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		x <<= 20, end++;
	if (*end)
		return -1;
	*v = x;
	return 0;
}

#define OPS_MAX_SIZES 64

static int parse_sizes(const char *list, uint64_t *sizes)
{
	char *copy = strdup(list), *save = NULL, *t;
	int n = 0;

	if (!copy)
		return -1;
	for (t = strtok_r(copy, ",", &save); t && n < OPS_MAX_SIZES;
	     t = strtok_r(NULL, ",", &save)) {
		if (parse_size(t, &sizes[n])) {
			xfer_err("bad size '%s'", t);
			free(copy);
			return -1;
		}
		n++;
	}
	free(copy);
	return n;
}

static uint32_t case_count(const struct xfer_opts *o, enum ops_tp tp, enum ops_op op,
			   uint64_t size)
{
	uint64_t stride = case_stride(tp, op, op_is_atomic(op) ? 8 : size);
	uint64_t n = (uint64_t)o->count, cap = (uint64_t)o->max_bytes / stride;

	if (n > cap)
		n = cap;
	if (n < 1)
		n = 1;
	if (n > OPS_MAX_COUNT)
		n = OPS_MAX_COUNT;
	return (uint32_t)n;
}

static int ops_setup_mr(struct ops_run *r)
{
	r->buf = xfer_alloc(r->buflen);
	if (!r->buf)
		return -1;
	r->mr = uroce_client_reg_mr(r->dev.pd, r->buf, r->buflen,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (!r->mr) {
		xfer_err("reg_mr of %zu bytes: %s", r->buflen, strerror(errno));
		return -1;
	}
	return 0;
}

static void print_summary(struct ops_run *r, double secs)
{
	int tp, op;
	uint32_t failed = 0;

	printf("%-3s %-9s %6s %8s %9s %6s %12s  %s\n", "tp", "op", "cases", "msgs", "verified",
	       "lost", "bytes", "result");
	for (tp = 0; tp < TP_N; tp++)
		for (op = 0; op < OP_N; op++) {
			struct ops_stat *s = &r->stat[tp][op];

			if (!s->cases)
				continue;
			failed += s->failed;
			printf("%-3s %-9s %6u %8lu %9lu %6lu %12lu  %s%s%s\n", tp_names[tp],
			       op_names[op], s->cases, (unsigned long)s->msgs,
			       (unsigned long)s->verified, (unsigned long)s->lost,
			       (unsigned long)s->bytes, s->failed ? "FAIL" : "ok",
			       s->failed ? ": " : "", s->failed ? s->first : "");
		}
	printf("ops: %s in %.1f s (%u failed cases)%s\n", failed ? "FAILED" : "all passed", secs,
	       failed, r->lossy ? " [lossy: UC/UD checked for corruption and duplicates only]" :
	       "");
	fflush(stdout);
}

int xfer_ops(const struct xfer_opts *o)
{
	struct ops_run r;
	struct ops_hello me, peer;
	struct ibv_device_attr da;
	uint64_t t0 = xfer_now_ns();
	int ret = 1, err;

	memset(&r, 0, sizeof(r));
	r.o = o;
	r.fd = -1;
	r.client = o->server != NULL;
	r.timeout_ms = o->timeout_ms;
	xfer_verbose = o->verbose;
	if (xfer_dev_open(&r.dev, o))
		return 1;
	err = uroce_client_query_device(r.dev.ctx, &da);
	if (err) {
		xfer_err("query_device: %s", strerror(err));
		goto out;
	}
	r.rd_atomic = (uint32_t)(da.max_qp_rd_atom < da.max_qp_init_rd_atom ?
				 da.max_qp_rd_atom : da.max_qp_init_rd_atom);
	if (r.rd_atomic > 16)
		r.rd_atomic = 16;
	if (r.rd_atomic < 1)
		r.rd_atomic = 1;
	r.max_inline = 64;

	memset(&me, 0, sizeof(me));
	me.magic = OPS_MAGIC;
	me.version = OPS_VERSION;
	memcpy(me.gid, r.dev.gid.raw, 16);
	me.rd_atomic = r.rd_atomic;

	if (r.client) {
		bool tps[TP_N], ops[OP_N];
		uint64_t sizes[OPS_MAX_SIZES];
		int nsizes, tp, op, k;
		uint32_t case_no = 0, failures = 0;
		struct ops_case_msg end;
		int mtu = o->mtu ? o->mtu : 1024;

		r.mtu = xfer_mtu_enum(mtu);
		if (!r.mtu) {
			xfer_err("bad MTU %d", o->mtu);
			goto out;
		}
		if (parse_list(o->transports, tp_names, TP_N, tps) ||
		    parse_list(o->ops, op_names, OP_N, ops) ||
		    (nsizes = parse_sizes(o->sizes, sizes)) <= 0) {
			xfer_err("bad -T, -O or -z list");
			goto out;
		}
		r.seed = o->seed ? o->seed : xfer_now_ns();
		r.lossy = o->lossy;
		/* The buffer: the largest case. */
		r.buflen = 4096;
		for (tp = 0; tp < TP_N; tp++)
			for (op = 0; op < OP_N; op++)
				for (k = 0; k < nsizes; k++) {
					uint64_t sz = op_is_atomic((enum ops_op)op) ? 8 : sizes[k];
					uint64_t need = (uint64_t)case_count(o, tp, op, sz) *
						case_stride(tp, op, sz);

					if (tps[tp] && ops[op] && need > r.buflen)
						r.buflen = need;
				}
		r.buflen = (r.buflen + 4095) & ~(size_t)4095;
		if (ops_setup_mr(&r))
			goto out;
		me.addr = (uintptr_t)r.buf;
		me.buflen = r.buflen;
		me.rkey = r.mr->ibv.rkey;
		me.mtu = (uint32_t)mtu;
		me.seed = r.seed;
		me.lossy = r.lossy;
		me.timeout_ms = (uint32_t)r.timeout_ms;
		r.fd = oob_connect(o->server, o->port, o->timeout_ms);
		if (r.fd < 0)
			goto out;
		if (oob_write(r.fd, &me, sizeof(me), r.timeout_ms) ||
		    oob_read(r.fd, &peer, sizeof(peer), r.timeout_ms * 4))
			goto out;
		if (peer.magic != OPS_MAGIC || peer.version != OPS_VERSION) {
			xfer_err("the peer is not uroce-xfer ops (version %u)", peer.version);
			goto out;
		}
		memcpy(r.peer_gid.raw, peer.gid, 16);
		r.peer_addr = peer.addr;
		r.peer_rkey = peer.rkey;
		if (peer.rd_atomic < r.rd_atomic)
			r.rd_atomic = peer.rd_atomic;
		r.ud_max = (uint32_t)xfer_mtu_bytes(r.dev.port_attr.active_mtu);
		if (peer.mtu < r.ud_max)
			r.ud_max = peer.mtu;
		if ((uint32_t)mtu < r.ud_max)
			r.ud_max = (uint32_t)mtu;
		if (tps[TP_UD]) {
			r.ah = xfer_create_ah(&r.dev, r.dev.gid_index, &r.peer_gid, 64);
			if (!r.ah)
				goto out;
		}
		printf("ops: seed 0x%lx, path MTU %d, UD up to %u B, window %d, count %ld, "
		       "%s, peer %s\n", (unsigned long)r.seed, mtu, r.ud_max, o->window, o->count,
		       r.lossy ? "lossy" : "lossless", o->server);
		fflush(stdout);
		for (tp = 0; tp < TP_N; tp++)
			for (op = 0; op < OP_N; op++) {
				if (!tps[tp] || !ops[op] || !op_valid(tp, op))
					continue;
				for (k = 0; k < nsizes; k++) {
					uint64_t sz = sizes[k];
					int rc;

					if (op_is_atomic(op) && k > 0)
						break; /* atomics are 8 bytes: one case */
					if (tp == TP_UD && sz > r.ud_max)
						continue;
					rc = client_case(&r, tp, op, sz,
							 case_count(o, tp, op, sz), ++case_no);
					if (rc == -2)
						goto out;
					if (rc)
						failures++;
				}
			}
		memset(&end, 0, sizeof(end));
		end.magic = OPS_MAGIC;
		end.cmd = CMD_END;
		end.failures = failures;
		if (oob_write(r.fd, &end, sizeof(end), r.timeout_ms))
			goto out;
		print_summary(&r, (double)(xfer_now_ns() - t0) / 1e9);
		ret = failures ? 1 : 0;
	} else {
		uint32_t failures = 0, client_failures = 0;

		r.fd = oob_listen_accept(o->port, o->timeout_ms * 4);
		if (r.fd < 0)
			goto out;
		if (oob_read(r.fd, &peer, sizeof(peer), r.timeout_ms))
			goto out;
		if (peer.magic != OPS_MAGIC || peer.version != OPS_VERSION ||
		    peer.buflen > (1ull << 34) || !xfer_mtu_enum((int)peer.mtu)) {
			xfer_err("the peer is not uroce-xfer ops, or another version");
			goto out;
		}
		r.timeout_ms = (int)peer.timeout_ms;
		r.seed = peer.seed;
		r.lossy = peer.lossy;
		r.mtu = xfer_mtu_enum((int)peer.mtu);
		r.buflen = peer.buflen;
		if (peer.rd_atomic < r.rd_atomic)
			r.rd_atomic = peer.rd_atomic;
		memcpy(r.peer_gid.raw, peer.gid, 16);
		if (ops_setup_mr(&r))
			goto out;
		me.addr = (uintptr_t)r.buf;
		me.buflen = r.buflen;
		me.rkey = r.mr->ibv.rkey;
		me.mtu = (uint32_t)xfer_mtu_bytes(r.dev.port_attr.active_mtu);
		if (oob_write(r.fd, &me, sizeof(me), r.timeout_ms))
			goto out;
		printf("ops: serving a client (seed 0x%lx, path MTU %u, %s)\n",
		       (unsigned long)r.seed, peer.mtu, r.lossy ? "lossy" : "lossless");
		fflush(stdout);
		for (;;) {
			struct ops_case_msg m;
			int rc;

			/* The client may spend a while on a case of its own (READs, atomics). */
			if (oob_read(r.fd, &m, sizeof(m), r.timeout_ms * 8) || m.magic != OPS_MAGIC)
				goto out;
			if (m.cmd == CMD_END) {
				client_failures = m.failures;
				break;
			}
			rc = server_case(&r, &m);
			if (rc == -2)
				goto out;
			if (rc)
				failures++;
		}
		print_summary(&r, (double)(xfer_now_ns() - t0) / 1e9);
		if (client_failures && !failures)
			printf("ops: the client saw %u failed cases\n", client_failures);
		ret = failures || client_failures ? 1 : 0;
	}
out:
	if (r.fd >= 0)
		close(r.fd);
	if (r.ah)
		uroce_client_destroy_ah(r.ah);
	if (r.mr)
		uroce_client_dereg_mr(r.mr);
	xfer_free(r.buf, r.buflen);
	xfer_dev_close(&r.dev);
	if (ret)
		fprintf(stderr, "uroce-xfer ops: FAILED\n");
	return ret;
}
