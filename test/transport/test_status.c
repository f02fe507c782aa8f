/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, deterministic, on two hosts (behaviour.h). Every completion status and
 * NAK: retry and RNR exhaustion, remote access, operation and invalid-request errors,
 * local protection and length errors, UC's silent drops. Each asserts the exact
 * statuses, counters, QP states, frames on the wire and what memory holds afterwards.
 */
#include "behaviour.h"

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

/* C9-88: a zero-length RDMA WRITE or READ need not carry a valid R_Key or VA (UCX's
 * rc_verbs flushes an endpoint with a zero-length WRITE with R_Key 0): all complete,
 * nothing is touched, and a zero-length WRITE with immediate still takes a receive. */
Test(status, zero_length_rdma_needs_no_rkey)
{
	static const enum ibv_wr_opcode ops[] = {IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
						  IBV_WR_RDMA_WRITE_WITH_IMM};
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	memset(hp(&e, 0, 0), 0x11, 4096);
	memset(hp(&e, 1, 0), 0xee, 4096);
	post_recv(&e, 1, 9, 0, 64);
	for (int i = 0; i < 3; i++) {
		w = wr((uint64_t)i, ops[i], 0, 0, 0, true);
		w.num_sge = 0;
		w.remote_addr = 0;
		w.rkey = 0;
		w.imm_data = 0x1234;
		post(&e, 0, &w);
	}
	cr_assert(run_until(&e, 3, 1, 100 * MS));
	for (int i = 0; i < 3; i++) {
		expect_wc(&e.sc[0].wc[i], (uint64_t)i, IBV_WC_SUCCESS);
		cr_assert_eq(e.sc[0].wc[i].byte_len, 0);
	}
	expect_wc(&e.rc[1].wc[0], 9, IBV_WC_SUCCESS);
	cr_assert_eq(e.rc[1].wc[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	cr_assert_eq(e.rc[1].wc[0].byte_len, 0);
	cr_assert_eq(nframes(1, OPC(RC, READ_RESPONSE_ONLY), o.psn_a + 1), 1);
	cr_assert_eq(nacks(1, UROCE_AETH_NAK, ANY), 0);
	cr_assert(all_bytes(hp(&e, 1, 0), 4096, 0xee));
	cr_assert(all_bytes(hp(&e, 0, 0), 4096, 0x11));
	cr_assert_eq(qstate(&e, 0), IBV_QPS_RTS);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
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

/* An MR over host 1's bytes [8192, 12288), filled with 0xee, in @p pd with @p access; its
 * rkey in *@p rkey. */
static struct uroce_tp_mr *mr_at_8k(struct env *e, struct uroce_tp_pd *pd, unsigned int access,
				    uint32_t *rkey)
{
	struct uroce_tp_mr *t;

	memset(hp(e, 1, 8192), 0xee, 4096);
	t = uroce_tp_reg_mr(pd, va(e, 1, 8192), hp(e, 1, 8192), 4096, access);
	cr_assert_not_null(t);
	uroce_tp_mr_keys(t, NULL, rkey);
	return t;
}

/* IBA 10.6.7.2.2: SEND with Invalidate may revoke a type 2 memory window or a
 * fast-registered MR only, never an MR its owner registered (mlx5 and rxe refuse it).
 * Once any MR of the PD could be revoked by the peer. Refused as an unknown R_Key is
 * (below): the receive fails, the requester gets NAK Remote Operational Error; the MR
 * still takes a WRITE on a new connection. */
Test(status, send_with_inv_cannot_revoke_a_registered_mr)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct uroce_tp_qp *q0, *q1;
	uint32_t rkey;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	mr_at_8k(&e, e.pd[1], IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &rkey);
	post_recv(&e, 1, 9, 0, 1024);
	w = wr(1, IBV_WR_SEND_WITH_INV, va(&e, 0, 0), 16, e.key[0], true);
	w.invalidate_rkey = rkey;
	post(&e, 0, &w);
	expect_nak(&e, &o, 1, IBV_WC_REM_OP_ERR, UROCE_NAK_REM_OP_ERR, o.psn_a);
	cr_assert_eq(nframes(0, OPC(RC, SEND_ONLY_INV), o.psn_a), 1);
	cr_assert(run_until(&e, 1, 1, 10 * MS));
	expect_wc(&e.rc[1].wc[0], 9, IBV_WC_LOC_PROT_ERR);

	q0 = mkqp(&e, 0, IBV_QPT_RC, NULL, false, 16);
	q1 = mkqp(&e, 1, IBV_QPT_RC, NULL, false, 16);
	sim_connect(&e.s, q0, 0, q1, 1, &o);
	fill(hp(&e, 0, 0), 64, 3);
	w = wr(2, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 64, e.key[0], true);
	w.remote_addr = va(&e, 1, 8192);
	w.rkey = rkey;
	cr_assert_eq(uroce_tp_post_send(q0, &w, e.s.now), 0);
	cr_assert(run_until(&e, 2, 1, 100 * MS));
	expect_wc(&e.sc[0].wc[1], 2, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 1, 8192), hp(&e, 0, 0), 64), 0, "the MR still works");
	cr_assert_eq(uroce_tp_destroy_qp(q0), 0);
	cr_assert_eq(uroce_tp_destroy_qp(q1), 0);
	env_fini(&e);
}

/* An MR deregistered between two packets of one WRITE: the responder looks the target up
 * again by its key for each packet (it once kept a pointer, and read the freed MR for the
 * next packet: ASan, in CI's second build, would say so). The rest of the WRITE is refused
 * with NAK Remote Access Error and lands nowhere. */
Test(status, write_target_deregistered_mid_message)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_wire_hdr h;
	struct uroce_tp_mr *t;
	uint8_t payload[1024];
	uint32_t rkey;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	t = mr_at_8k(&e, e.pd[1], IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &rkey);
	memset(payload, 0x11, sizeof(payload));
	uroce_wire_hdr_init(&h, 4, OPC(RC, WRITE_FIRST));
	h.bth.psn = o.psn_a;
	h.reth.va = va(&e, 1, 8192);
	h.reth.rkey = rkey;
	h.reth.dma_len = 2 * sizeof(payload);
	inject(&e, &h, payload, sizeof(payload));
	cr_assert(all_bytes(hp(&e, 1, 8192), sizeof(payload), 0x11), "the first packet landed");
	cr_assert_eq(uroce_tp_dereg_mr(t), 0);
	uroce_wire_hdr_init(&h, 4, OPC(RC, WRITE_LAST));
	h.bth.psn = uroce_psn_add(o.psn_a, 1);
	h.bth.ack_req = true;
	memset(payload, 0x22, sizeof(payload));
	inject(&e, &h, payload, sizeof(payload));
	run_for(&e, 1 * MS);
	cr_assert_eq(nacks(1, UROCE_AETH_NAK, UROCE_NAK_REM_ACCESS_ERR), 1);
	cr_assert(all_bytes(hp(&e, 1, 8192 + sizeof(payload)), 4096 - sizeof(payload), 0xee),
		  "the rest landed nowhere");
	cr_assert_eq(qstate(&e, 1), IBV_QPS_ERR);
	env_fini(&e);
}

/* An R_Key is good only on QPs of its MR's own PD (rxe's check_rkey compares them too).
 * Another tenant's MR on the same device, in its own PD, cannot be reached through a QP
 * of ours, whatever its key: WRITE and READ both end with NAK Remote Access Error, its
 * bytes untouched, nothing of it read into ours. */
Test(status, an_rkey_of_another_pd_is_refused)
{
	for (int op = 0; op < 2; op++) {
		struct env e;
		struct sim_qp_opts o = default_opts();
		struct uroce_tp_send_wqe w;
		struct uroce_tp_pd *other;
		struct uroce_tp_mr *t;
		uint8_t before[64];
		uint32_t rkey;

		env_init(&e);
		env_pair(&e, IBV_QPT_RC, &o);
		other = uroce_tp_alloc_pd(e.s.host[1].dev);
		cr_assert_not_null(other);
		t = mr_at_8k(&e, other,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ,
			     &rkey);
		fill(hp(&e, 0, 0), 64, 4);
		memcpy(before, hp(&e, 0, 0), sizeof(before));
		w = wr(1, op ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE, va(&e, 0, 0), 64, e.key[0],
		       true);
		w.remote_addr = va(&e, 1, 8192);
		w.rkey = rkey;
		post(&e, 0, &w);
		expect_nak(&e, &o, 1, IBV_WC_REM_ACCESS_ERR, UROCE_NAK_REM_ACCESS_ERR, o.psn_a);
		cr_assert(all_bytes(hp(&e, 1, 8192), 4096, 0xee), "the other PD's MR untouched");
		cr_assert_eq(memcmp(hp(&e, 0, 0), before, sizeof(before)), 0,
			     "nothing of it read into ours");
		cr_assert_eq(uroce_tp_dereg_mr(t), 0);
		cr_assert_eq(uroce_tp_dealloc_pd(other), 0);
		env_fini(&e);
	}
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

/* Host 1 sent exactly one frame: NAK Invalid Request for @p psn, to host 0's QP. */
static void expect_only_inv_req_nak(const struct env *e, uint32_t psn)
{
	const struct frame_rec *nakf = &g_tx.f[0];

	cr_assert_eq(nframes(1, ANY, ANY), 1, "exactly the NAK");
	cr_assert_eq(nakf->opcode, OPC(RC, ACKNOWLEDGE));
	cr_assert_eq(nakf->syn, uroce_aeth_nak(UROCE_NAK_INVALID_REQ));
	cr_assert_eq(nakf->psn, psn);
	cr_assert_eq(nakf->dqpn, uroce_tp_qp_num(e->qp[0]));
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

	expect_only_inv_req_nak(&e, o.psn_a);
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

/* IBA 9.4.3: a message is at most 2^31 bytes. A crafted READ asking for more (rxe's
 * check_length) is answered with NAK Invalid Request; nothing is read, and its packet
 * count, which would overflow, is never taken. */
Test(status, rem_inv_req_read_longer_than_2g)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_wire_hdr h;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	uroce_wire_hdr_init(&h, 4, OPC(RC, READ_REQUEST));
	h.bth.psn = o.psn_a;
	h.bth.ack_req = true;
	h.reth.va = va(&e, 1, 0);
	h.reth.rkey = e.key[1];
	h.reth.dma_len = 0xfffffc01u; /* (len + MTU - 1) / MTU would wrap to 0 packets */
	inject(&e, &h, NULL, 0);

	expect_only_inv_req_nak(&e, o.psn_a); /* no READ response */
	cr_assert_eq(qstate(&e, 1), IBV_QPS_ERR);
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

static bool went_back(void *arg)
{
	return cnt(arg, 0)->completer_retry_err > 0;
}

static bool drop_first_read_response(const struct frame_rec *r, void *arg)
{
	int *dropped = arg;

	if (r->from == 1 && r->opcode == OPC(RC, READ_RESPONSE_FIRST) && *dropped == 0) {
		(*dropped)++;
		return true;
	}
	return false;
}

/* Found by the scenario sweep once its faults were lib/fault's (seed 36395): a READ's
 * first response lost, the requester goes back (one retry), and then NAK sequence errors
 * for PSNs past the READ, which the old stream had caused, arrive (here twice, as a
 * duplicating link delivers them). They acknowledge nothing (the READ still waits for
 * its responses), so they are part of the same loss: they must not spend the retries
 * left. With retry_cnt 1 each would have failed the READ with RETRY_EXC_ERR. */
Test(status, naks_past_a_pending_read_spend_no_retry)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	int dropped = 0;

	env_init(&e);
	o.retry_cnt = 1;
	env_pair(&e, IBV_QPT_RC, &o);
	post_recv(&e, 1, 7, 0, 256);
	fill(hp(&e, 1, 8192), 4096, 5);
	g_tx.drop = drop_first_read_response;
	g_tx.drop_arg = &dropped;
	/* A READ of 4 packets (PSNs psn_a .. psn_a + 3), then a SEND (psn_a + 4). */
	w = wr(1, IBV_WR_RDMA_READ, va(&e, 0, 0), 4096, e.key[0], true);
	w.remote_addr = va(&e, 1, 8192);
	w.rkey = e.key[1];
	post(&e, 0, &w);
	w = wr(2, IBV_WR_SEND, va(&e, 0, 16384), 64, e.key[0], true);
	post(&e, 0, &w);
	/* The first response is lost: the second one is an implied NAK, and the requester
	 * goes back (its one retry). Then, before the READ's responses come again, the NAKs
	 * of the old stream arrive, twice. */
	cr_assert(sim_run(&e.s, e.s.now + 1 * MS, went_back, &e));
	cr_assert_eq(dropped, 1);
	cr_assert_eq(cnt(&e, 0)->completer_retry_err, 1);
	inject_aeth_to0(&e, uroce_aeth_nak(UROCE_NAK_PSN_SEQ_ERR), o.psn_a + 4);
	inject_aeth_to0(&e, uroce_aeth_nak(UROCE_NAK_PSN_SEQ_ERR), o.psn_a + 4);
	cr_assert_eq(cnt(&e, 0)->completer_retry_err, 1, "the old stream's NAKs spent a retry");
	cr_assert(run_until(&e, 2, 1, 100 * MS));
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	expect_wc(&e.sc[0].wc[1], 2, IBV_WC_SUCCESS);
	cr_assert(!memcmp(hp(&e, 0, 0), hp(&e, 1, 8192), 4096), "the READ's data");
	env_fini(&e);
}
