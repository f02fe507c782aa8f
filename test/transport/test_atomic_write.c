/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, deterministic, on two hosts (behaviour.h). IBA 1.5 RDMA Atomic Write as
 * Linux rxe (6.2+) carries it: a request RC_ATOMIC_WRITE (0x1d) with a RETH of DMA length
 * 8 and the 8 bytes as payload, answered by a zero-length RDMA READ Response Only with an
 * AETH ACK at the request's PSN. The posting rules, the responder's checks (alignment,
 * length, the QP's and the R_Key's REMOTE_WRITE, memory windows), the responder resource
 * (a duplicate answered again, never stored twice), and the requester treating it as a
 * READ: max_rd_atomic, FENCE, no completion by a later ACK. Each asserts the exact
 * completions, frames on the wire, QP states and what memory holds afterwards.
 */
#include "behaviour.h"

#define T_OFF 4096u /* host 1's target bytes: [T_OFF, T_OFF + 64), 0xee around the value */
#define L_OFF 0u    /* host 0's source bytes */

static const uint8_t VAL[8] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
static const uint8_t VAL2[8] = {0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6, 0x07, 0x18};

/* An Atomic Write of host 0's 8 bytes at L_OFF (which it sets to @val) to host 1's @roff. */
static struct uroce_tp_send_wqe aw_sge(struct env *e, uint64_t id, const uint8_t val[8],
				       uint64_t roff, uint32_t rkey)
{
	struct uroce_tp_send_wqe w = wr(id, IBV_WR_ATOMIC_WRITE, va(e, 0, L_OFF), 8, e->key[0],
					true);

	memcpy(hp(e, 0, L_OFF), val, 8);
	w.remote_addr = va(e, 1, roff);
	w.rkey = rkey;
	return w;
}

/* The same, the value inline: what ibv_wr_atomic_write's pointer to 8 bytes becomes. */
static struct uroce_tp_send_wqe aw_inline(struct env *e, uint64_t id, const uint8_t val[8],
					  uint64_t roff, uint32_t rkey)
{
	struct uroce_tp_send_wqe w;

	memset(&w, 0, sizeof(w));
	w.wr_id = id;
	w.opcode = IBV_WR_ATOMIC_WRITE;
	w.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	w.inline_len = 8;
	memcpy(w.inline_data, val, 8);
	w.remote_addr = va(e, 1, roff);
	w.rkey = rkey;
	return w;
}

static void target_fill(struct env *e)
{
	memset(hp(e, 1, T_OFF - 64), 0xee, 192);
}

/* The 0xee around [off, off + 8) untouched, and those 8 bytes @want. */
static void expect_target(struct env *e, uint64_t off, const uint8_t want[8])
{
	cr_assert(all_bytes(hp(e, 1, T_OFF - 64), (uint32_t)(off - (T_OFF - 64)), 0xee),
		  "bytes before the target touched");
	cr_assert_eq(memcmp(hp(e, 1, off), want, 8), 0, "target %02x%02x%02x%02x%02x%02x%02x%02x",
		     hp(e, 1, off)[0], hp(e, 1, off)[1], hp(e, 1, off)[2], hp(e, 1, off)[3],
		     hp(e, 1, off)[4], hp(e, 1, off)[5], hp(e, 1, off)[6], hp(e, 1, off)[7]);
	cr_assert(all_bytes(hp(e, 1, off + 8), (uint32_t)(T_OFF + 128 - off - 8), 0xee),
		  "bytes after the target touched");
}

static void expect_aw_wc(struct env *e, int i, uint64_t id)
{
	const struct ibv_wc *wc = &e->sc[0].wc[i];

	expect_wc(wc, id, IBV_WC_SUCCESS);
	cr_assert_eq(wc->opcode, IBV_WC_ATOMIC_WRITE, "opcode %d", wc->opcode);
	cr_assert_eq(wc->byte_len, 8);
	cr_assert_eq(wc->qp_num, uroce_tp_qp_num(e->qp[0]));
}

/* The @n-th (0-based) frame @from sent with @opcode at @psn, dropped or not. */
static const struct frame_rec *nth_frame(int from, int opcode, uint32_t psn, int n)
{
	for (uint32_t i = 0; i < g_tx.n; i++) {
		const struct frame_rec *r = &g_tx.f[i];

		if (r->from == from && r->opcode == opcode && r->psn == psn && n-- == 0)
			return r;
	}
	return NULL;
}

/* Host 0's request: 0x1d, AckReq, RETH (va, rkey, DMA length 8), the 8 bytes. */
static void expect_request(const struct frame_rec *r, uint32_t psn, uint64_t rva, uint32_t rkey,
			   const uint8_t val[8])
{
	cr_assert_not_null(r, "no Atomic Write request at PSN %#x", psn);
	cr_assert_eq(r->opcode, 0x1d);
	cr_assert_eq(r->psn, psn);
	cr_assert(r->ack_req, "AckReq not set");
	cr_assert_eq(r->va, rva);
	cr_assert_eq(r->rkey, rkey);
	cr_assert_eq(r->dma_len, 8);
	cr_assert_eq(r->len, 8, "payload %u bytes", r->len);
	cr_assert_eq(memcmp(r->head, val, 8), 0, "payload not the value");
}

/* Host 1's answer: READ Response Only (0x10), no payload, AETH ACK, the request's PSN. */
static void expect_response(const struct frame_rec *r, uint32_t psn)
{
	cr_assert_not_null(r, "no READ Response Only at PSN %#x", psn);
	cr_assert_eq(r->opcode, 0x10);
	cr_assert_eq(r->psn, psn);
	cr_assert_eq(r->len, 0, "payload %u bytes", r->len);
	cr_assert_eq(uroce_aeth_type(r->syn), UROCE_AETH_ACK, "syndrome %#x", r->syn);
	cr_assert_eq(r->syn, uroce_aeth_ack(UROCE_AETH_CREDIT_INVALID)); /* rxe's 0x1f */
}

static int nsent(int from)
{
	return nframes(from, ANY, ANY);
}

/* ==== success ============================================================================== */

/* One Atomic Write: two frames on the wire, the value in place, one completion. */
Test(atomic_write, stores_8_bytes_two_frames_one_completion)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	uint32_t rkey;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	uroce_tp_mr_keys(e.mr[1], NULL, &rkey);
	target_fill(&e);
	w = aw_sge(&e, 7, VAL, T_OFF, rkey);
	post(&e, 0, &w);
	cr_assert(run_until(&e, 1, 0, 100 * MS));
	run_for(&e, 1 * MS);

	cr_assert_eq(e.sc[0].n, 1);
	expect_aw_wc(&e, 0, 7);
	cr_assert_eq(e.rc[1].n, 0, "no receive WQE taken, no completion at the responder");
	cr_assert_eq(e.sc[1].n, 0);
	expect_target(&e, T_OFF, VAL);
	cr_assert_eq(nsent(0), 1);
	cr_assert_eq(nsent(1), 1);
	expect_request(nth_frame(0, 0x1d, o.psn_a, 0), o.psn_a, va(&e, 1, T_OFF), rkey, VAL);
	expect_response(nth_frame(1, 0x10, o.psn_a, 0), o.psn_a);
	cr_assert_eq(cnt(&e, 1)->duplicate_request, 0);
	cr_assert_eq(cnt(&e, 0)->completer_retry_err, 0);
	cr_assert_eq(cnt(&e, 0)->rcvd_wrong_opcode, 0);
	cr_assert_eq(qstate(&e, 0), IBV_QPS_RTS);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	env_fini(&e);
}

/* The 8 bytes inline (ibv_wr_atomic_write), from one SGE, and from two SGEs (5 + 3 bytes
 * from separate places): each goes out as the same 8 bytes, is stored, completes. */
Test(atomic_write, inline_one_sge_and_two_sges)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	uint32_t rkey;
	const uint8_t val3[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	uint8_t want[192];

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	uroce_tp_mr_keys(e.mr[1], NULL, &rkey);
	target_fill(&e);

	w = aw_inline(&e, 1, VAL, T_OFF, rkey);
	post(&e, 0, &w);
	w = aw_sge(&e, 2, VAL2, T_OFF + 16, rkey);
	post(&e, 0, &w);
	/* 5 bytes at 256, 3 at 1000: the value is their concatenation. */
	memcpy(hp(&e, 0, 256), val3, 5);
	memcpy(hp(&e, 0, 1000), val3 + 5, 3);
	w = wr(3, IBV_WR_ATOMIC_WRITE, va(&e, 0, 256), 5, e.key[0], true);
	w.num_sge = 2;
	w.sg_list[1].addr = va(&e, 0, 1000);
	w.sg_list[1].length = 3;
	w.sg_list[1].lkey = e.key[0];
	w.remote_addr = va(&e, 1, T_OFF + 32);
	w.rkey = rkey;
	post(&e, 0, &w);
	cr_assert(run_until(&e, 3, 0, 100 * MS));

	for (int i = 0; i < 3; i++)
		expect_aw_wc(&e, i, (uint64_t)i + 1);
	memset(want, 0xee, sizeof(want));
	memcpy(want + 64, VAL, 8);
	memcpy(want + 64 + 16, VAL2, 8);
	memcpy(want + 64 + 32, val3, 8);
	cr_assert_eq(memcmp(hp(&e, 1, T_OFF - 64), want, sizeof(want)), 0);
	expect_request(nth_frame(0, 0x1d, o.psn_a, 0), o.psn_a, va(&e, 1, T_OFF), rkey, VAL);
	expect_request(nth_frame(0, 0x1d, o.psn_a + 1, 0), o.psn_a + 1, va(&e, 1, T_OFF + 16),
		       rkey, VAL2);
	expect_request(nth_frame(0, 0x1d, o.psn_a + 2, 0), o.psn_a + 2, va(&e, 1, T_OFF + 32),
		       rkey, val3);
	for (uint32_t k = 0; k < 3; k++)
		expect_response(nth_frame(1, 0x10, o.psn_a + k, 0), o.psn_a + k);
	cr_assert_eq(nsent(0), 3);
	cr_assert_eq(nsent(1), 3);
	cr_assert_eq(qstate(&e, 0), IBV_QPS_RTS);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	env_fini(&e);
}

/* As the atomics' case in test_atomic.c: the MR's iova is 8-aligned, its host bytes are
 * not, so the responder stores through memcpy; the value lands the same. */
Test(atomic_write, target_misaligned_in_host_memory)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_wire_hdr h;
	struct uroce_tp_mr *mr;
	const uint64_t iova = 0x10000000;
	uint8_t *host;
	uint32_t rkey;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	host = hp(&e, 1, 0x2004);
	memset(host, 0xee, 64);
	mr = uroce_tp_reg_mr(e.pd[1], iova, host, 64,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	cr_assert_not_null(mr);
	uroce_tp_mr_keys(mr, NULL, &rkey);

	uroce_wire_hdr_init(&h, 4, OPC(RC, ATOMIC_WRITE));
	h.bth.psn = o.psn_a;
	h.bth.ack_req = true;
	h.reth.va = iova + 8;
	h.reth.rkey = rkey;
	h.reth.dma_len = 8;
	inject(&e, &h, VAL, 8);

	cr_assert_eq(memcmp(host + 8, VAL, 8), 0, "the value did not land");
	cr_assert(all_bytes(host, 8, 0xee));
	cr_assert(all_bytes(host + 16, 48, 0xee));
	cr_assert_eq(nsent(1), 1);
	expect_response(nth_frame(1, 0x10, o.psn_a, 0), o.psn_a);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	env_fini(&e);
}

/* ==== posting ============================================================================== */

/* Not 8 bytes, or not at an 8-byte aligned address, or not RC: -EINVAL at post, nothing
 * queued, nothing on the wire. */
Test(atomic_write, post_refuses_what_is_not_8_aligned_bytes_on_rc)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct uroce_tp_qp *ud;
	struct uroce_tp_ah *ah;
	uint32_t rkey;
	const uint32_t lens[] = {0, 1, 4, 7, 9, 16};

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	uroce_tp_mr_keys(e.mr[1], NULL, &rkey);

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		w = aw_sge(&e, 1, VAL, T_OFF, rkey);
		w.sg_list[0].length = lens[i];
		cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, e.s.now), -EINVAL, "SGE of %u",
			     lens[i]);
		w = aw_inline(&e, 1, VAL, T_OFF, rkey);
		w.inline_len = lens[i];
		cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, e.s.now), -EINVAL, "inline of %u",
			     lens[i]);
	}
	/* Two SGEs of 4 + 8: 12 bytes; no SGE at all: 0 bytes. */
	w = aw_sge(&e, 1, VAL, T_OFF, rkey);
	w.sg_list[0].length = 4;
	w.num_sge = 2;
	w.sg_list[1] = w.sg_list[0];
	w.sg_list[1].length = 8;
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, e.s.now), -EINVAL);
	w.num_sge = 0;
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, e.s.now), -EINVAL);
	/* Misaligned remote addresses, both forms. */
	for (uint64_t mis = 1; mis < 8; mis++) {
		w = aw_sge(&e, 1, VAL, T_OFF + mis, rkey);
		cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, e.s.now), -EINVAL, "+%lu",
			     (unsigned long)mis);
		w = aw_inline(&e, 1, VAL, T_OFF + mis, rkey);
		cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, e.s.now), -EINVAL, "+%lu",
			     (unsigned long)mis);
	}
	cr_assert_eq(uroce_tp_qp_sq_outstanding(e.qp[0]), 0);
	run_for(&e, 1 * MS);
	cr_assert_eq(g_tx.n, 0, "a refused WR went out");
	/* The same WR, 8 bytes and aligned, is taken: the refusals were for the above. */
	w = aw_sge(&e, 1, VAL, T_OFF, rkey);
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, e.s.now), 0);
	cr_assert(run_until(&e, 1, 0, 100 * MS));
	expect_aw_wc(&e, 0, 1);
	env_fini(&e);

	/* UC: RDMA WRITE yes, Atomic Write no. */
	env_init(&e);
	env_pair(&e, IBV_QPT_UC, &o);
	uroce_tp_mr_keys(e.mr[1], NULL, &rkey);
	w = aw_sge(&e, 1, VAL, T_OFF, rkey);
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, e.s.now), -EINVAL);
	w = aw_inline(&e, 1, VAL, T_OFF, rkey);
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, e.s.now), -EINVAL);
	w = aw_sge(&e, 2, VAL, T_OFF, rkey);
	w.opcode = IBV_WR_RDMA_WRITE;
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, e.s.now), 0);
	cr_assert_eq(uroce_tp_qp_sq_outstanding(e.qp[0]), 1);
	env_fini(&e);

	/* UD: SEND yes, Atomic Write no. */
	env_init(&e);
	ud = mkqp(&e, 0, IBV_QPT_UD, NULL, false, 32);
	e.qp[0] = ud;
	sim_ud_ready(&e.s, ud, 0x1111, 0);
	ah = sim_ah(&e.s, e.pd[0], 0, 1);
	cr_assert_not_null(ah);
	w = aw_sge(&e, 1, VAL, T_OFF, 0);
	w.ah = ah;
	w.remote_qpn = 2;
	w.remote_qkey = 0x1111;
	cr_assert_eq(uroce_tp_post_send(ud, &w, e.s.now), -EINVAL);
	w.opcode = IBV_WR_SEND;
	cr_assert_eq(uroce_tp_post_send(ud, &w, e.s.now), 0);
	cr_assert_eq(uroce_tp_qp_sq_outstanding(ud), 1);
	env_fini(&e);
}

/* ==== the responder refuses ================================================================ */

/* A request at a misaligned VA (post_send never sends one: the request of a good WR is
 * lost on the way, and one with VA + 4 arrives at its PSN instead): NAK Invalid Request,
 * nothing stored, the WR completes with REM_INV_REQ_ERR, both QPs in ERR. */
static bool drop_requests(const struct frame_rec *r, void *arg)
{
	(void)arg;
	return r->from == 0 && r->opcode == 0x1d;
}

Test(atomic_write, misaligned_va_nak_invalid_request)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct uroce_wire_hdr h;
	uint32_t rkey;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	uroce_tp_mr_keys(e.mr[1], NULL, &rkey);
	target_fill(&e);
	g_tx.drop = drop_requests;
	w = aw_sge(&e, 1, VAL, T_OFF, rkey);
	cr_assert_eq(uroce_tp_post_send(e.qp[0], &w, e.s.now), 0);
	run_for(&e, 50 * US);
	cr_assert_eq(nframes(0, 0x1d, o.psn_a), 1);
	cr_assert_eq(e.sc[0].n, 0);
	g_tx.drop = NULL;

	uroce_wire_hdr_init(&h, 4, OPC(RC, ATOMIC_WRITE));
	h.bth.psn = o.psn_a;
	h.bth.ack_req = true;
	h.reth.va = va(&e, 1, T_OFF + 4);
	h.reth.rkey = rkey;
	h.reth.dma_len = 8;
	inject(&e, &h, VAL, 8);
	cr_assert(run_until(&e, 1, 0, 100 * MS));

	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_REM_INV_REQ_ERR);
	cr_assert_eq(nacks(1, UROCE_AETH_NAK, UROCE_NAK_INVALID_REQ), 1);
	cr_assert_eq(nacks(1, ANY, ANY), 1);
	cr_assert_eq(first_frame(1, OPC(RC, ACKNOWLEDGE))->psn, o.psn_a);
	cr_assert_eq(nframes(1, 0x10, ANY), 0);
	cr_assert(all_bytes(hp(&e, 1, T_OFF - 64), 192, 0xee), "something was stored");
	cr_assert_eq(qstate(&e, 0), IBV_QPS_ERR);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_ERR);
	env_fini(&e);
}

/* Exactly 8 bytes: a payload of 4 or 16, or a DMA length other than 8 with 8 bytes, is an
 * invalid request (NAK at its PSN, the responder's QP in ERR, nothing stored). */
Test(atomic_write, not_8_bytes_nak_invalid_request)
{
	const struct {
		uint32_t payload, dma_len;
	} cases[] = {{4, 4}, {16, 16}, {4, 8}, {8, 16}, {8, 4}, {0, 0}, {0, 8}};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct env e;
		struct sim_qp_opts o = default_opts();
		struct uroce_wire_hdr h;
		uint8_t payload[16];
		uint32_t rkey;

		env_init(&e);
		env_pair(&e, IBV_QPT_RC, &o);
		uroce_tp_mr_keys(e.mr[1], NULL, &rkey);
		target_fill(&e);
		memset(payload, 0x42, sizeof(payload));
		uroce_wire_hdr_init(&h, 4, OPC(RC, ATOMIC_WRITE));
		h.bth.psn = o.psn_a;
		h.bth.ack_req = true;
		h.reth.va = va(&e, 1, T_OFF);
		h.reth.rkey = rkey;
		h.reth.dma_len = cases[i].dma_len;
		inject(&e, &h, payload, cases[i].payload);

		cr_assert_eq(nsent(1), 1, "case %zu", i);
		cr_assert_eq(nacks(1, UROCE_AETH_NAK, UROCE_NAK_INVALID_REQ), 1, "case %zu", i);
		cr_assert_eq(first_frame(1, OPC(RC, ACKNOWLEDGE))->psn, o.psn_a);
		cr_assert(all_bytes(hp(&e, 1, T_OFF - 64), 192, 0xee), "case %zu stored", i);
		cr_assert_eq(qstate(&e, 1), IBV_QPS_ERR);
		env_fini(&e);
	}
}

/* An R_Key without REMOTE_WRITE (an MR open for READ and atomics only): NAK Remote Access
 * Error, REM_ACCESS_ERR, nothing stored. */
Test(atomic_write, rkey_without_remote_write_rem_access_err)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct uroce_tp_mr *mr;
	uint32_t rkey;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	target_fill(&e);
	mr = uroce_tp_reg_mr(e.pd[1], va(&e, 1, T_OFF), hp(&e, 1, T_OFF), 64,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				     IBV_ACCESS_REMOTE_ATOMIC);
	cr_assert_not_null(mr);
	uroce_tp_mr_keys(mr, NULL, &rkey);
	w = aw_sge(&e, 1, VAL, T_OFF, rkey);
	post(&e, 0, &w);
	cr_assert(run_until(&e, 1, 0, 100 * MS));

	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_REM_ACCESS_ERR);
	expect_request(nth_frame(0, 0x1d, o.psn_a, 0), o.psn_a, va(&e, 1, T_OFF), rkey, VAL);
	cr_assert_eq(nacks(1, UROCE_AETH_NAK, UROCE_NAK_REM_ACCESS_ERR), 1);
	cr_assert_eq(nacks(1, ANY, ANY), 1);
	cr_assert_eq(first_frame(1, OPC(RC, ACKNOWLEDGE))->psn, o.psn_a);
	cr_assert_eq(nframes(1, 0x10, ANY), 0);
	cr_assert(all_bytes(hp(&e, 1, T_OFF - 64), 192, 0xee), "something was stored");
	cr_assert_eq(qstate(&e, 0), IBV_QPS_ERR);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_ERR);
	env_fini(&e);
}

/* The responder's QP without IBV_ACCESS_REMOTE_WRITE (READ and atomics only): an invalid
 * request for it (IBA 10.2.4; rxe's check_op_valid), REM_INV_REQ_ERR, nothing stored. */
Test(atomic_write, qp_without_remote_write_rem_inv_req_err)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct ibv_qp_attr a;
	uint32_t rkey;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	uroce_tp_mr_keys(e.mr[1], NULL, &rkey);
	target_fill(&e);
	memset(&a, 0, sizeof(a));
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	cr_assert_eq(uroce_tp_modify_qp(e.qp[1], &a, IBV_QP_ACCESS_FLAGS, NULL, e.s.now), 0);
	w = aw_sge(&e, 1, VAL, T_OFF, rkey);
	post(&e, 0, &w);
	cr_assert(run_until(&e, 1, 0, 100 * MS));

	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_REM_INV_REQ_ERR);
	cr_assert_eq(nacks(1, UROCE_AETH_NAK, UROCE_NAK_INVALID_REQ), 1);
	cr_assert_eq(nacks(1, ANY, ANY), 1);
	cr_assert_eq(first_frame(1, OPC(RC, ACKNOWLEDGE))->psn, o.psn_a);
	cr_assert_eq(nframes(1, 0x10, ANY), 0);
	cr_assert(all_bytes(hp(&e, 1, T_OFF - 64), 192, 0xee), "something was stored");
	cr_assert_eq(qstate(&e, 0), IBV_QPS_ERR);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_ERR);
	env_fini(&e);
}

/* ==== memory windows ======================================================================= */

/* Host 1 binds @mw (type 1) on its QP to [@off, + 64) of @mr with @access. */
static uint32_t bind_type1(struct env *e, struct uroce_tp_mw *mw, struct uroce_tp_mr *mr,
			   uint64_t off, unsigned int access, uint64_t id)
{
	struct uroce_tp_send_wqe w;
	uint32_t lkey, old = uroce_tp_mw_rkey(mw);
	int n = e->sc[1].n;

	uroce_tp_mr_keys(mr, &lkey, NULL);
	memset(&w, 0, sizeof(w));
	w.wr_id = id;
	w.opcode = IBV_WR_BIND_MW;
	w.send_flags = IBV_SEND_SIGNALED;
	w.bind.mw_rkey = old;
	w.bind.rkey = (old & ~0xffu) | ((old + 1) & 0xffu);
	w.bind.mr_lkey = lkey;
	w.bind.access = access;
	w.bind.addr = va(e, 1, off);
	w.bind.length = 64;
	cr_assert_eq(uroce_tp_post_send(e->qp[1], &w, e->s.now), 0);
	e->want_sc[1] = n + 1;
	cr_assert(sim_run(&e->s, e->s.now + 10 * MS, wants_met, e));
	e->want_sc[1] = 0;
	expect_wc(&e->sc[1].wc[n], id, IBV_WC_SUCCESS);
	cr_assert_eq(e->sc[1].wc[n].opcode, IBV_WC_BIND_MW);
	cr_assert_eq(uroce_tp_mw_rkey(mw), w.bind.rkey);
	return w.bind.rkey;
}

/* Through a type 1 window bound with REMOTE_WRITE: stored, completed as usual. Through one
 * bound with REMOTE_READ only: NAK Remote Access Error, nothing stored. */
Test(atomic_write, through_a_type1_memory_window)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct uroce_tp_mr *mr;
	struct uroce_tp_mw *mw, *ro;
	uint32_t rk, rk_ro;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	target_fill(&e);
	mr = uroce_tp_reg_mr(e.pd[1], va(&e, 1, T_OFF - 64), hp(&e, 1, T_OFF - 64), 192,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
	cr_assert_not_null(mr);
	mw = uroce_tp_alloc_mw(e.pd[1], IBV_MW_TYPE_1);
	ro = uroce_tp_alloc_mw(e.pd[1], IBV_MW_TYPE_1);
	cr_assert(mw && ro);
	rk = bind_type1(&e, mw, mr, T_OFF, IBV_ACCESS_REMOTE_WRITE, 100);
	rk_ro = bind_type1(&e, ro, mr, T_OFF + 64, IBV_ACCESS_REMOTE_READ, 101);

	w = aw_sge(&e, 1, VAL, T_OFF + 8, rk);
	post(&e, 0, &w);
	cr_assert(run_until(&e, 1, 0, 100 * MS));
	expect_aw_wc(&e, 0, 1);
	expect_target(&e, T_OFF + 8, VAL);
	expect_request(nth_frame(0, 0x1d, o.psn_a, 0), o.psn_a, va(&e, 1, T_OFF + 8), rk, VAL);
	expect_response(nth_frame(1, 0x10, o.psn_a, 0), o.psn_a);
	cr_assert_eq(qstate(&e, 0), IBV_QPS_RTS);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);

	w = aw_sge(&e, 2, VAL2, T_OFF + 64, rk_ro);
	post(&e, 0, &w);
	cr_assert(run_until(&e, 2, 0, 100 * MS));
	expect_wc(&e.sc[0].wc[1], 2, IBV_WC_REM_ACCESS_ERR);
	cr_assert_eq(nacks(1, UROCE_AETH_NAK, UROCE_NAK_REM_ACCESS_ERR), 1);
	cr_assert(all_bytes(hp(&e, 1, T_OFF + 64), 64, 0xee), "stored through a READ window");
	cr_assert_eq(qstate(&e, 0), IBV_QPS_ERR);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_ERR);
	env_fini(&e);
}

/* ==== the responder resource =============================================================== */

static bool drop_first_aw_response(const struct frame_rec *r, void *arg)
{
	int *dropped = arg;

	if (r->from == 1 && r->opcode == 0x10 && *dropped == 0) {
		(*dropped)++;
		return true;
	}
	return false;
}

/* The response is lost: the requester's timer sends the request again, at the same PSN,
 * the same bytes; the responder answers it from its resource and does not store again (the
 * application's bytes written in between stay), and the WR completes once. */
Test(atomic_write, response_lost_replayed_from_resource_not_stored_twice)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	const struct frame_rec *r0, *r1;
	uint32_t rkey;
	int dropped = 0;
	const uint8_t mine[8] = {0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a};

	env_init(&e);
	o.timeout = 8; /* 1 ms */
	env_pair(&e, IBV_QPT_RC, &o);
	uroce_tp_mr_keys(e.mr[1], NULL, &rkey);
	target_fill(&e);
	g_tx.drop = drop_first_aw_response;
	g_tx.drop_arg = &dropped;
	w = aw_sge(&e, 1, VAL, T_OFF, rkey);
	post(&e, 0, &w);
	run_for(&e, 100 * US);
	/* Executed, its answer lost, not complete. */
	cr_assert_eq(dropped, 1);
	cr_assert_eq(e.sc[0].n, 0);
	expect_target(&e, T_OFF, VAL);
	/* The application at host 1 writes the word before the request comes again. */
	memcpy(hp(&e, 1, T_OFF), mine, 8);

	cr_assert(run_until(&e, 1, 0, 100 * MS));
	run_for(&e, 5 * MS);
	cr_assert_eq(e.sc[0].n, 1);
	expect_aw_wc(&e, 0, 1);
	expect_target(&e, T_OFF, mine); /* not stored a second time */
	r0 = nth_frame(0, 0x1d, o.psn_a, 0);
	r1 = nth_frame(0, 0x1d, o.psn_a, 1);
	expect_request(r0, o.psn_a, va(&e, 1, T_OFF), rkey, VAL);
	expect_request(r1, o.psn_a, va(&e, 1, T_OFF), rkey, VAL);
	cr_assert_eq(r0->hash, r1->hash, "the retry is not the same frame");
	cr_assert_eq(nframes(0, 0x1d, ANY), 2);
	cr_assert(nth_frame(1, 0x10, o.psn_a, 0)->dropped);
	expect_response(nth_frame(1, 0x10, o.psn_a, 1), o.psn_a);
	cr_assert(!nth_frame(1, 0x10, o.psn_a, 1)->dropped);
	cr_assert_eq(nframes(1, 0x10, ANY), 2);
	cr_assert_eq(nsent(1), 2);
	cr_assert_eq(cnt(&e, 0)->completer_retry_err, 1);
	cr_assert_eq(cnt(&e, 1)->duplicate_request, 1);
	cr_assert_eq(qstate(&e, 0), IBV_QPS_RTS);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	env_fini(&e);
}

/* ==== READ-like at the requester =========================================================== */

static bool drop_from_1(const struct frame_rec *r, void *arg)
{
	return r->from == 1 && *(bool *)arg;
}

/* Atomic Write then RDMA WRITE; both answers lost. An ACK for the WRITE's PSN comes: it
 * completes neither (the Atomic Write waits for its own response, the WRITE retires after
 * it): the requester goes back and sends both again, the responder answers the first from
 * its resource and ACKs the second, and then they complete, in order. */
Test(atomic_write, later_ack_does_not_complete_it)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	uint32_t rkey;
	bool dropping = true;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	uroce_tp_mr_keys(e.mr[1], NULL, &rkey);
	target_fill(&e);
	g_tx.drop = drop_from_1;
	g_tx.drop_arg = &dropping;
	w = aw_sge(&e, 1, VAL, T_OFF, rkey);
	post(&e, 0, &w);
	fill(hp(&e, 0, 512), 16, 9);
	w = wr(2, IBV_WR_RDMA_WRITE, va(&e, 0, 512), 16, e.key[0], true);
	w.remote_addr = va(&e, 1, T_OFF + 64);
	w.rkey = rkey;
	post(&e, 0, &w);
	run_for(&e, 100 * US);
	cr_assert_eq(e.sc[0].n, 0);
	cr_assert_eq(nframes(1, 0x10, o.psn_a), 1);
	cr_assert_eq(nframes(1, OPC(RC, ACKNOWLEDGE), o.psn_a + 1), 1);
	cr_assert_eq(nframes(0, 0x1d, o.psn_a), 1);
	dropping = false;

	inject_aeth_to0(&e, uroce_aeth_ack(UROCE_AETH_CREDIT_INVALID), o.psn_a + 1);
	collect(&e);
	cr_assert_eq(e.sc[0].n, 0, "a later ACK completed an Atomic Write");
	cr_assert_eq(cnt(&e, 0)->completer_retry_err, 1, "no go-back on the implied NAK");
	cr_assert_eq(nframes(0, 0x1d, o.psn_a), 2, "the request was not sent again");

	cr_assert(run_until(&e, 2, 0, 100 * MS));
	run_for(&e, 1 * MS);
	cr_assert_eq(e.sc[0].n, 2);
	expect_aw_wc(&e, 0, 1);
	expect_wc(&e.sc[0].wc[1], 2, IBV_WC_SUCCESS);
	cr_assert_eq(e.sc[0].wc[1].opcode, IBV_WC_RDMA_WRITE);
	cr_assert_eq(memcmp(hp(&e, 1, T_OFF), VAL, 8), 0);
	cr_assert_eq(memcmp(hp(&e, 1, T_OFF + 64), hp(&e, 0, 512), 16), 0);
	expect_response(nth_frame(1, 0x10, o.psn_a, 1), o.psn_a);
	cr_assert_eq(cnt(&e, 1)->duplicate_request, 2);
	cr_assert_eq(qstate(&e, 0), IBV_QPS_RTS);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	env_fini(&e);
}

/* A fenced WR after an Atomic Write waits for its response (IBA 10.8.3.3), as after a READ;
 * unfenced, it goes out with it. */
static void fence_case(bool fence)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	const struct frame_rec *req, *resp, *wr2;
	uint32_t rkey;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	uroce_tp_mr_keys(e.mr[1], NULL, &rkey);
	target_fill(&e);
	w = aw_sge(&e, 1, VAL, T_OFF, rkey);
	post(&e, 0, &w);
	w = wr(2, IBV_WR_RDMA_WRITE, va(&e, 0, 512), 16, e.key[0], true);
	w.remote_addr = va(&e, 1, T_OFF + 64);
	w.rkey = rkey;
	w.send_flags |= fence ? IBV_SEND_FENCE : 0;
	post(&e, 0, &w);
	cr_assert(run_until(&e, 2, 0, 100 * MS));

	expect_aw_wc(&e, 0, 1);
	expect_wc(&e.sc[0].wc[1], 2, IBV_WC_SUCCESS);
	req = nth_frame(0, 0x1d, o.psn_a, 0);
	resp = nth_frame(1, 0x10, o.psn_a, 0);
	wr2 = first_frame(0, OPC(RC, WRITE_ONLY));
	cr_assert(req && resp && wr2);
	cr_assert_eq(nframes(0, OPC(RC, WRITE_ONLY), ANY), 1);
	cr_assert_eq(wr2->psn, o.psn_a + 1);
	if (fence)
		cr_assert_gt(wr2->at, resp->at, "fenced WRITE at %lu, response at %lu",
			     (unsigned long)wr2->at, (unsigned long)resp->at);
	else
		cr_assert_eq(wr2->at, req->at);
	env_fini(&e);
}

Test(atomic_write, fence_waits_for_it)
{
	fence_case(true);
}

Test(atomic_write, without_fence_the_next_goes_at_once)
{
	fence_case(false);
}

/* max_rd_atomic 1: a second Atomic Write (or a READ) waits until the first is answered. */
Test(atomic_write, counts_against_max_rd_atomic)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	const struct frame_rec *resp0, *req1, *resp1, *rd;
	uint32_t rkey;

	env_init(&e);
	o.max_rd_atomic = 1;
	env_pair(&e, IBV_QPT_RC, &o);
	uroce_tp_mr_keys(e.mr[1], NULL, &rkey);
	target_fill(&e);
	w = aw_sge(&e, 1, VAL, T_OFF, rkey);
	post(&e, 0, &w);
	w = aw_inline(&e, 2, VAL2, T_OFF + 8, rkey);
	post(&e, 0, &w);
	w = wr(3, IBV_WR_RDMA_READ, va(&e, 0, 2048), 16, e.key[0], true);
	w.remote_addr = va(&e, 1, T_OFF);
	w.rkey = rkey;
	post(&e, 0, &w);
	cr_assert(run_until(&e, 3, 0, 100 * MS));

	expect_aw_wc(&e, 0, 1);
	expect_aw_wc(&e, 1, 2);
	expect_wc(&e.sc[0].wc[2], 3, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 0, 2048), VAL, 8), 0);
	cr_assert_eq(memcmp(hp(&e, 0, 2056), VAL2, 8), 0);
	resp0 = nth_frame(1, 0x10, o.psn_a, 0);
	req1 = nth_frame(0, 0x1d, o.psn_a + 1, 0);
	resp1 = nth_frame(1, 0x10, o.psn_a + 1, 0);
	rd = first_frame(0, OPC(RC, READ_REQUEST));
	cr_assert(resp0 && req1 && resp1 && rd);
	cr_assert_gt(req1->at, resp0->at);
	cr_assert_gt(rd->at, resp1->at);
	cr_assert_eq(rd->psn, o.psn_a + 2);
	env_fini(&e);
}
