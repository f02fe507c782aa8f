/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, deterministic, on two hosts (behaviour.h). The flow of packets and
 * completions: PSN wrap, ACK coalescing, CQ overflow, QPs taking turns. Each asserts the
 * exact statuses, counters, QP states, frames on the wire and what memory holds
 * afterwards.
 */
#include <inttypes.h>

#include "behaviour.h"

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
	uint32_t last_ack_psn;
};

static struct ack_run ack_run(uint32_t ack_coalesce, uint32_t rx_burst)
{
	struct env e;
	struct uroce_tp_dev_cfg cfg;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct ack_run res;

	uroce_tp_dev_cfg_init(&cfg);
	cfg.ack_coalesce = ack_coalesce;
	env_init_cfg(&e, &cfg);
	e.s.rx_burst = rx_burst;
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
	for (uint32_t i = 0; i < g_tx.n; i++)
		if (g_tx.f[i].from == 1)
			res.last_ack_psn = g_tx.f[i].psn;
	cr_assert_eq(cnt(&e, 0)->rcvd_ghost_ack, 0);
	env_fini(&e);
	return res;
}

/* rxe ACKs AckReq packets only; uroce ACKs at least every ack_coalesce packets too, and
 * answers all that one receive burst asks for with one ACK (ACKs are cumulative). With
 * one frame per burst, each ACK the rule asks for leaves. */
Test(ack, coalescing)
{
	struct ack_run r;

	r = ack_run(1, 1); /* every packet */
	cr_assert_eq(r.ackreq, 3, "AckReq on the last packet of each message");
	cr_assert_eq(r.acks, 30);
	cr_assert_eq(r.deferred, 0);

	r = ack_run(1000, 1); /* only AckReq */
	cr_assert_eq(r.ackreq, 3);
	cr_assert_eq(r.acks, 3);
	cr_assert_eq(r.deferred, 27);

	r = ack_run(4, 1); /* packets 4, 8 and 10 (AckReq) of each message */
	cr_assert_eq(r.acks, 9);
	cr_assert_eq(r.deferred, 21);

	/* Bursts of 8 frames (8, 8, 8, 6): one ACK each, for the last PSN of the burst. */
	r = ack_run(1, 8);
	cr_assert_eq(r.acks, 4);
	cr_assert_eq(r.last_ack_psn, 0x100 + 29);
	/* All 30 in one burst: one ACK. */
	r = ack_run(4, 0);
	cr_assert_eq(r.acks, 1);
	cr_assert_eq(r.last_ack_psn, 0x100 + 29);
}

/* ==== 9. CQ overflow ========================================================================== */

/* Host 0's RC QP whose send CQ is @p cq, connected to host 1's, and @p n signalled 8-byte
 * WRITEs posted on it (not yet run). */
static void writes_on_cq(struct env *e, struct uroce_tp_cq *cq, int n)
{
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_qp_init init;
	struct uroce_tp_send_wqe w;

	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_RC;
	init.send_cq = cq;
	init.recv_cq = e->rc[0].cq;
	init.cap.max_send_wr = 16;
	e->qp[0] = uroce_tp_create_qp(e->pd[0], &init);
	e->qp[1] = mkqp(e, 1, IBV_QPT_RC, NULL, false, 16);
	sim_connect(&e->s, e->qp[0], 0, e->qp[1], 1, &o);
	for (int i = 0; i < n; i++) {
		w = wr((uint64_t)i, IBV_WR_RDMA_WRITE, va(e, 0, 0), 8, e->key[0], true);
		w.remote_addr = va(e, 1, (uint64_t)i * 8);
		w.rkey = e->key[1];
		post(e, 0, &w);
	}
}

/* IBA C11-37: a CQ overrun is a CQ error (IBV_EVENT_CQ_ERR), raised once; completions
 * beyond the capacity are lost. */
Test(cq, overflow)
{
	struct env e;
	struct uroce_tp_cq *small;
	struct ibv_wc wc[16];
	int n;

	env_init(&e);
	small = uroce_tp_create_cq(e.s.host[0].dev, 4);
	cr_assert_not_null(small);
	writes_on_cq(&e, small, 10);
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

/* uroce_tp_cq_ready_first / _next: a CQ is on the ready list from its first completion
 * until a poll empties it, and only then: the caller walks the list, not every CQ. */
Test(cq, ready_first_lists_a_cq_while_it_holds_completions)
{
	struct env e;
	struct uroce_tp_cq *cq;
	struct ibv_wc wc[4];

	env_init(&e);
	cq = uroce_tp_create_cq(e.s.host[0].dev, 16);
	cr_assert_not_null(cq);
	cr_assert_null(uroce_tp_cq_ready_first(e.s.host[0].dev), "nothing completed yet");
	writes_on_cq(&e, cq, 3);
	run_for(&e, 10 * MS);
	cr_assert_eq(uroce_tp_cq_count(cq), 3u);
	cr_assert_eq(uroce_tp_cq_ready_first(e.s.host[0].dev), cq, "listed at its first");
	cr_assert_null(uroce_tp_cq_ready_next(cq), "once, and alone");
	cr_assert_eq(uroce_tp_poll_cq(cq, 2, wc), 2);
	cr_assert_eq(uroce_tp_cq_ready_first(e.s.host[0].dev), cq, "one left: still listed");
	cr_assert_eq(uroce_tp_poll_cq(cq, 4, wc), 1);
	cr_assert_null(uroce_tp_cq_ready_first(e.s.host[0].dev), "empty: off the list");
	cr_assert_eq(uroce_tp_destroy_qp(e.qp[0]), 0);
	e.qp[0] = NULL;
	cr_assert_eq(uroce_tp_destroy_cq(cq), 0);
	env_fini(&e);
}

/* ==== 10. QPs take turns ===================================================================== */

/* The index among host 0's frames of the first one with @p opcode (-1: none). */
static int frame_index(int opcode)
{
	int k = 0;

	for (uint32_t i = 0; i < g_tx.n; i++) {
		if (g_tx.f[i].from != 0)
			continue;
		if (g_tx.f[i].opcode == opcode)
			return k;
		k++;
	}
	return -1;
}

/* flood_beside_rc: 200 UD SENDs from host 0's UD QP and one RC SEND, the RC SEND posted
 * first or after them, on a device with @tx_burst; @at: how many UD packets left before the
 * RC SEND; @wait_max: host 0's uroce_tp_turn_wait_max afterwards. */
static void flood_beside_rc(uint32_t tx_burst, bool rc_after, int *at, uint64_t *wait_max)
{
	struct uroce_tp_dev_cfg cfg;
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_qp *ud[2];
	struct uroce_tp_ah *ah;
	struct uroce_tp_send_wqe w;

	uroce_tp_dev_cfg_init(&cfg);
	cfg.tx_burst = tx_burst;
	env_init_cfg(&e, &cfg);
	env_pair(&e, IBV_QPT_RC, &o);
	ud[0] = mkqp(&e, 0, IBV_QPT_UD, NULL, false, 256);
	ud[1] = mkqp(&e, 1, IBV_QPT_UD, NULL, false, 8);
	sim_ud_ready(&e.s, ud[0], 0x1111, 0);
	sim_ud_ready(&e.s, ud[1], 0x1111, 0);
	ah = sim_ah(&e.s, e.pd[0], 0, 1);
	post_recv(&e, 1, 9, 0, 64);
	/* Settled first: a QP that just reached RTS is on the work list until its first
	 * visit finds nothing to send, and would keep its place ahead of the flood. */
	run_for(&e, 1 * MS);
	for (int round = 0; round < 2; round++) {
		if (round == (int)rc_after) {
			w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 64, e.key[0], true);
			post(&e, 0, &w);
			continue;
		}
		for (uint64_t i = 0; i < 200; i++) {
			w = wr(100 + i, IBV_WR_SEND, va(&e, 0, 0), 64, e.key[0], false);
			w.ah = ah;
			w.remote_qpn = uroce_tp_qp_num(ud[1]);
			w.remote_qkey = 0x1111;
			cr_assert_eq(uroce_tp_post_send(ud[0], &w, e.s.now), 0);
		}
	}
	run_for(&e, 10 * MS);
	*at = frame_index(OPC(RC, SEND_ONLY));
	*wait_max = uroce_tp_turn_wait_max(e.s.host[0].dev);
	cr_assert_eq(nframes(0, OPC(UD, SEND_ONLY), ANY), 200, "the flood all left");
	cr_assert_eq(e.rc[1].n, 1, "the RC SEND arrived");
	cr_assert_eq(uroce_tp_destroy_qp(ud[0]), 0);
	cr_assert_eq(uroce_tp_destroy_qp(ud[1]), 0);
	cr_assert_eq(uroce_tp_destroy_ah(ah), 0);
	env_fini(&e);
}

/* A UD sender has no window: 200 WRs posted at once would all leave before another QP's
 * message that waits behind them, whichever was posted first (the work list was LIFO, a
 * QP sent until done). Now QPs take turns in the order they got work, at most tx_burst
 * packets a turn: an RC SEND waits for at most one burst of the flood. The device's
 * turn_wait_max counts that wait in packets, the figure tenant_flood.sh checks on a
 * daemon: one burst here, the whole flood with turns off (tx_burst 0). */
Test(schedule, a_flood_holds_another_qp_back_by_one_burst)
{
	uint64_t wait_max;
	int at;

	flood_beside_rc(32, false, &at, &wait_max);
	cr_assert_eq(at, 0, "posted first, the RC SEND left first (after %d UD packets)", at);
	cr_assert_eq(wait_max, 1, "the flood waited for the RC SEND only: %" PRIu64, wait_max);

	flood_beside_rc(32, true, &at, &wait_max);
	cr_assert_eq(at, 32, "posted after, the RC SEND left after one burst, not %d", at);
	cr_assert_eq(wait_max, 32, "it waited one burst: %" PRIu64, wait_max);

	flood_beside_rc(0, true, &at, &wait_max);
	cr_assert_eq(at, 200, "without turns the whole flood left first, not %d", at);
	cr_assert_eq(wait_max, 200, "and turn_wait_max says so: %" PRIu64, wait_max);
}
