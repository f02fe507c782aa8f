/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, deterministic, on two hosts (behaviour.h). The device: rx drops
 * counted, packets not from an RC QP's peer dropped, tx backpressure, ghost ACKs,
 * determinism, the send window and AckReq spacing, creation errors, multicast groups,
 * VLAN tags. Each asserts the exact statuses, counters, QP states, frames on the wire and
 * what memory holds afterwards.
 */
#include "behaviour.h"

/* A WRITE ONLY of @p len bytes from host 0's QP to host 1's buffer 0, as the requester
 * would send it next (its PSN, AckReq, host 1's key). */
static void write_hdr(struct uroce_wire_hdr *h, struct env *e, const struct sim_qp_opts *o,
		      uint32_t len)
{
	uroce_wire_hdr_init(h, 4, OPC(RC, WRITE_ONLY));
	h->bth.psn = o->psn_a;
	h->bth.ack_req = true;
	h->reth.va = va(e, 1, 0);
	h->reth.rkey = e->key[1];
	h->reth.dma_len = len;
}

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
	write_hdr(&h, &e, &o, sizeof(payload));
	inject_raw(&e, &h, payload, sizeof(payload), 0, 30); /* truncated */
	write_hdr(&h, &e, &o, sizeof(payload));
	inject_raw(&e, &h, payload, sizeof(payload), 14 + 20 + 8 + 12 + 16 + 3,
		   0); /* payload bit */
	write_hdr(&h, &e, &o, sizeof(payload));
	h.bth.dqpn = 0xabcdef; /* no such QP */
	inject(&e, &h, payload, sizeof(payload));
	write_hdr(&h, &e, &o, sizeof(payload));
	h.bth.pkey = 0x1234; /* IBA 10.9.3: not our partition */
	inject(&e, &h, payload, sizeof(payload));
	write_hdr(&h, &e, &o, sizeof(payload));
	h.bth.opcode = OPC(UD, SEND_ONLY); /* a UD opcode on an RC QP */
	h.deth.qkey = 1;
	inject(&e, &h, payload, sizeof(payload));
	write_hdr(&h, &e, &o, sizeof(payload));
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
	write_hdr(&h, &e, &o, sizeof(payload));
	inject(&e, &h, payload, sizeof(payload));
	cr_assert(all_bytes(hp(&e, 1, 0), sizeof(payload), 0xab));
	cr_assert_eq(nframes(1, ANY, ANY), 0, "the ACK waits for the end of the burst");
	uroce_tp_process(e.s.host[1].dev, e.s.now);
	cr_assert_eq(nacks(1, UROCE_AETH_ACK, ANY), 1);
	env_fini(&e);
}

/* rxe's check_addr: an RC QP takes packets from its peer only. A third host that knows
 * the QPN, the next PSN and a valid R_Key, and sends from another address (or to another
 * of ours), writes nothing and breaks nothing. */
Test(device, rc_packets_not_from_the_peer_are_dropped)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_wire_hdr h;
	uint8_t payload[64];
	const struct uroce_tp_counters *c;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	memset(hp(&e, 1, 0), 0xee, 4096);
	memset(payload, 0xab, sizeof(payload));
	write_hdr(&h, &e, &o, sizeof(payload));
	h.ip_src[13] = 9; /* 10.9.0.1: another host */
	inject(&e, &h, payload, sizeof(payload));
	write_hdr(&h, &e, &o, sizeof(payload));
	h.ip_dst[14] = 5; /* 10.0.5.2: not the QP's own address */
	inject(&e, &h, payload, sizeof(payload));
	write_hdr(&h, &e, &o, sizeof(payload));
	h.bth.opcode = OPC(RC, ACKNOWLEDGE); /* a forged ACK for the requester */
	h.aeth.syndrome = UROCE_AETH_ACK;
	h.bth.dqpn = uroce_tp_qp_num(e.qp[1]);
	h.ip_src[13] = 9;
	inject(&e, &h, NULL, 0);

	c = cnt(&e, 1);
	cr_assert_eq(c->rcvd_wrong_peer, 3);
	cr_assert_eq(c->rcvd_pkts, 3);
	cr_assert_eq(nframes(1, ANY, ANY), 0, "no answer to a stranger");
	cr_assert(all_bytes(hp(&e, 1, 0), 4096, 0xee));
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	/* The peer's own packet is then taken. */
	write_hdr(&h, &e, &o, sizeof(payload));
	inject(&e, &h, payload, sizeof(payload));
	cr_assert(all_bytes(hp(&e, 1, 0), sizeof(payload), 0xab));
	uroce_tp_process(e.s.host[1].dev, e.s.now);
	cr_assert_eq(nacks(1, UROCE_AETH_ACK, ANY), 1);
	cr_assert_eq(cnt(&e, 1)->rcvd_wrong_peer, 3);
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
	inject_aeth_to0(&e, uroce_aeth_ack(UROCE_AETH_CREDIT_INVALID), o.psn_a + 0x100);
	collect(&e);
	cr_assert_eq(e.sc[0].n, 0, "completed though nothing was sent");
	cr_assert_eq(cnt(&e, 0)->rcvd_ghost_ack, 1);

	/* SEND_FIRST sent, SEND_LAST not: an ACK at the message's last PSN. */
	uroce_tp_process(e.s.host[0].dev, e.s.now);
	cr_assert_eq(nframes(0, OPC(RC, SEND_FIRST), o.psn_a), 1);
	cr_assert_eq(nframes(0, ANY, ANY), 1);
	inject_aeth_to0(&e, uroce_aeth_ack(UROCE_AETH_CREDIT_INVALID), o.psn_a + 1);
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

static bool drop_from_host1(const struct frame_rec *r, void *arg)
{
	(void)arg;
	return r->from == 1;
}

/*
 * After a go-back, a cumulative ACK for PSNs that were sent before and not yet again (the
 * responder took them; the ACKs that said so were lost) moves the requester past them
 * instead of being ignored as a ghost: nothing is sent a third time. Host 1's answers are
 * lost until the retransmission timer sends host 0 back, and host 0's link refuses the
 * retransmission, so the requester is still at the start when the late ACK comes in.
 * @ops: the messages (one WQE each, @len bytes, MTU 1024); @ack_at: the ACK's PSN, as an
 * offset from the first. Returns the requests host 0 sent after the ACK.
 */
static int late_ack_after_go_back(struct env *e, const struct sim_qp_opts *o,
				  const enum ibv_wr_opcode *ops, int n, uint32_t len,
				  uint32_t ack_at)
{
	struct uroce_tp_send_wqe w;
	uint32_t before;
	int resent = 0, recvs = 0;

	for (int i = 0; i < n; i++) {
		fill(hp(e, 0, (uint64_t)i * 8192), len, (uint8_t)(i + 1));
		fill(hp(e, 1, 65536 + (uint64_t)i * 8192), len, (uint8_t)(i + 50));
		if (ops[i] == IBV_WR_SEND)
			post_recv(e, 1, (uint64_t)i, 131072 + (uint64_t)i * 8192, 8192);
		recvs += ops[i] == IBV_WR_SEND;
	}
	g_tx.drop = drop_from_host1;
	for (int i = 0; i < n; i++) {
		w = wr((uint64_t)i, ops[i], va(e, 0, (uint64_t)i * 8192), len, e->key[0], true);
		w.remote_addr = va(e, 1, 65536 + (uint64_t)i * 8192);
		w.rkey = e->key[1];
		post(e, 0, &w);
	}
	run_for(e, 1 * MS);
	cr_assert_eq(e->sc[0].n, 0);
	cr_assert_eq(e->rc[1].n, recvs, "the responder took every message");
	/* The timer (67 ms) sends host 0 back; its link refuses the retransmission. */
	g_tx.busy[0] = 1 << 30;
	run_for(e, 80 * MS);
	cr_assert_eq(cnt(e, 0)->completer_retry_err, 1);
	cr_assert_eq(e->sc[0].n, 0);
	before = g_tx.n;
	inject_aeth_to0(e, uroce_aeth_ack(UROCE_AETH_CREDIT_INVALID), o->psn_a + ack_at);
	g_tx.busy[0] = 0;
	g_tx.drop = NULL;
	cr_assert(run_until(e, n, recvs, 100 * MS));
	for (uint32_t i = before; i < g_tx.n; i++)
		resent += g_tx.f[i].from == 0;
	for (int i = 0; i < n; i++) {
		expect_wc(&e->sc[0].wc[i], (uint64_t)i, IBV_WC_SUCCESS);
		if (ops[i] == IBV_WR_RDMA_READ)
			cr_assert_eq(memcmp(hp(e, 0, (uint64_t)i * 8192),
					    hp(e, 1, 65536 + (uint64_t)i * 8192), len), 0);
		else if (ops[i] == IBV_WR_RDMA_WRITE)
			cr_assert_eq(memcmp(hp(e, 1, 65536 + (uint64_t)i * 8192),
					    hp(e, 0, (uint64_t)i * 8192), len), 0);
	}
	cr_assert_eq(cnt(e, 0)->rcvd_ack_past_go_back, 1);
	return resent;
}

Test(device, late_ack_after_go_back_completes_what_it_acknowledges)
{
	static const enum ibv_wr_opcode sends[] = {IBV_WR_SEND, IBV_WR_SEND, IBV_WR_SEND};
	static const enum ibv_wr_opcode w_r_w[] = {IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
						   IBV_WR_RDMA_WRITE};
	struct env e;
	struct sim_qp_opts o = default_opts();

	/* Three one-packet SENDs, the ACK for the last: all complete, none sent again. */
	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	cr_assert_eq(late_ack_after_go_back(&e, &o, sends, 3, 1000, 2), 0);
	cr_assert_eq(cnt(&e, 0)->rcvd_ghost_ack, 0);
	cr_assert_eq(cnt(&e, 1)->duplicate_request, 0);
	env_fini(&e);

	/* One WRITE of 3 packets, the ACK for its second: only the third goes out again. */
	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	cr_assert_eq(late_ack_after_go_back(&e, &o, w_r_w, 1, 3000, 1), 1);
	cr_assert_eq(nframes(0, OPC(RC, WRITE_LAST), o.psn_a + 2), 2);
	cr_assert_eq(nframes(0, OPC(RC, WRITE_FIRST), o.psn_a), 1);
	cr_assert_eq(cnt(&e, 0)->rcvd_ghost_ack, 0);
	env_fini(&e);

	/* WRITE, READ, WRITE and the ACK for the last WRITE: the requester skips the first
	 * WRITE only (a READ completes by its responses, so it is asked again, and what follows
	 * it goes out again behind it); the ACK itself is then past what is being sent. */
	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	cr_assert_eq(late_ack_after_go_back(&e, &o, w_r_w, 3, 1000, 2), 2);
	cr_assert_eq(nframes(0, OPC(RC, WRITE_ONLY), o.psn_a), 1);
	cr_assert_eq(nframes(0, OPC(RC, READ_REQUEST), o.psn_a + 1), 2);
	cr_assert_eq(cnt(&e, 0)->rcvd_ghost_ack, 1);
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

		struct sim_faults lossy;

		env_init(&e);
		lossy = e.s.faults;
		lossy.drop = 0.05; /* the sim's own seeded losses: retries too */
		sim_set_faults(&e.s, &lossy);
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
	init.qp_type = IBV_QPT_DRIVER; /* a type verbs has and we lack */
	init.send_cq = e.sc[0].cq;
	init.recv_cq = e.rc[0].cq;
	cr_assert_null(uroce_tp_create_qp(e.pd[0], &init));
	cr_assert_eq(errno, EOPNOTSUPP);
	init.qp_type = IBV_QPT_XRC_RECV; /* a target has no PD, CQs or SRQ: only its XRCD */
	cr_assert_null(uroce_tp_create_qp(e.pd[0], &init));
	cr_assert_eq(errno, EINVAL);
	init.qp_type = IBV_QPT_XRC_SEND; /* an initiator has no XRCD */
	init.xrcd = uroce_tp_alloc_xrcd(e.s.host[0].dev);
	cr_assert_not_null(init.xrcd);
	cr_assert_null(uroce_tp_create_qp(e.pd[0], &init));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(uroce_tp_dealloc_xrcd(init.xrcd), 0);
	init.xrcd = NULL;
	init.qp_type = (enum ibv_qp_type)77; /* one verbs has not */
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

/* The host's buffer (uroce_tp_tx_buf_fn): frames built in it are committed, not passed
 * to tx; a commit refused with -EAGAIN is built anew and committed later. */
static struct {
	uint8_t buf[sizeof(((struct uroce_tp_dev *)0)->frame)];
	int offered, committed, refuse;
	uroce_tp_tx_fn sent; /* where committed frames go on: the simulator's tx */
} g_host_buf;

static uint8_t *host_tx_buf(void *io_ctx, const uint8_t dst_mac[6], uint32_t len)
{
	(void)io_ctx;
	(void)dst_mac;
	if (len > sizeof(g_host_buf.buf))
		return NULL;
	g_host_buf.offered++;
	memset(g_host_buf.buf, 0xa5, len); /* nothing left over may pass for the frame */
	return g_host_buf.buf;
}

static int host_tx_commit(void *io_ctx, uint8_t *frame, uint32_t len)
{
	cr_assert_eq(frame, g_host_buf.buf, "the buffer tx_buf gave");
	if (g_host_buf.refuse) {
		g_host_buf.refuse--;
		return -EAGAIN;
	}
	g_host_buf.committed++;
	return g_host_buf.sent(io_ctx, frame, len);
}

Test(device, frames_built_in_the_hosts_buffer)
{
	struct uroce_tp_dev *dev;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct env e;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	dev = e.s.host[0].dev;
	memset(&g_host_buf, 0, sizeof(g_host_buf));
	g_host_buf.sent = dev->cfg.tx;
	g_host_buf.refuse = 1;
	dev->cfg.tx_buf = host_tx_buf;
	dev->cfg.tx_commit = host_tx_commit;
	for (int i = 0; i < 4096; i++)
		*hp(&e, 0, (uint64_t)i) = (uint8_t)(i * 7 + 3);
	w = wr(1, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 4096, e.key[0], true);
	w.remote_addr = va(&e, 1, 8192);
	w.rkey = e.key[1];
	post(&e, 0, &w);
	cr_assert(run_until(&e, 1, 0, 100 * MS));
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 0, 0), hp(&e, 1, 8192), 4096), 0, "the data arrived whole");
	cr_assert_eq(g_host_buf.committed, nframes(0, ANY, ANY), "every frame of host 0");
	cr_assert_eq(g_host_buf.committed, 4, "4 KiB at MTU 1024");
	cr_assert_eq(g_host_buf.offered, g_host_buf.committed + 1, "the refused one built again");
	cr_assert_eq(cnt(&e, 1)->rcvd_icrc_err + cnt(&e, 1)->rcvd_malformed, 0);
	env_fini(&e);
}

/* The host's zero-copy TX (uroce_tp_tx_zc_fn): checks each piece lies in the MR whose
 * ctx it carries, then joins header, pieces and tail into the frame the simulator
 * carries, as a PMD reading the chain would. */
static struct {
	uint8_t frame[sizeof(((struct uroce_tp_dev *)0)->frame)];
	struct env *e;
	int frames, pieces, refuse, not_this;
	uroce_tp_tx_fn sent[2];
	int from; /* the host whose frames these are */
} g_zc;

static int host_tx_zc(void *io_ctx, const uint8_t *hdr, uint32_t hdr_len,
		      const struct uroce_tp_tx_seg *seg, uint32_t nseg, const uint8_t *tail,
		      uint32_t tail_len)
{
	int h = io_ctx == g_zc.e->s.host[0].dev->cfg.io_ctx ? 0 : 1;
	uint32_t len = hdr_len;

	if (g_zc.not_this) {
		g_zc.not_this--;
		return -ENOTSUP;
	}
	if (g_zc.refuse) {
		g_zc.refuse--;
		return -EAGAIN;
	}
	cr_assert_geq(nseg, 1);
	cr_assert_leq(nseg, UROCE_TP_TX_SEGS_MAX);
	cr_assert_geq(tail_len, UROCE_ICRC_LEN);
	cr_assert_leq(tail_len, UROCE_ICRC_LEN + 3);
	memcpy(g_zc.frame, hdr, hdr_len);
	for (uint32_t i = 0; i < nseg; i++) {
		cr_assert_eq(seg[i].mr_ctx, g_zc.e->mr[h], "pinned by its own MR's ctx");
		cr_assert(seg[i].addr >= g_zc.e->mem[h] &&
				  seg[i].addr + seg[i].len <= g_zc.e->mem[h] + MEM_SIZE,
			  "a piece of host %d's registered memory", h);
		memcpy(g_zc.frame + len, seg[i].addr, seg[i].len);
		len += seg[i].len;
		g_zc.pieces++;
	}
	memcpy(g_zc.frame + len, tail, tail_len);
	g_zc.frames++;
	return g_zc.sent[h](io_ctx, g_zc.frame, len + tail_len);
}

/* Posts an RDMA WRITE of @p len bytes at @p from of host 0 to @p to of host 1. */
static void post_write(struct env *e, uint64_t id, uint64_t from, uint32_t len, uint64_t to)
{
	struct uroce_tp_send_wqe w =
		wr(id, IBV_WR_RDMA_WRITE, va(e, 0, from), len, e->key[0], true);

	w.remote_addr = va(e, 1, to);
	w.rkey = e->key[1];
	post(e, 0, &w);
}

static int read_responses(void)
{
	int n = 0;

	for (enum uroce_op op = UROCE_OP_READ_RESPONSE_FIRST; op <= UROCE_OP_READ_RESPONSE_ONLY;
	     op++)
		n += nframes(1, UROCE_OPCODE(UROCE_TRANSPORT_RC, op), ANY);
	return n;
}

static void zc_on(struct env *e, uint32_t zc_min)
{
	memset(&g_zc, 0, sizeof(g_zc));
	g_zc.e = e;
	for (int h = 0; h < 2; h++) {
		struct uroce_tp_dev *dev = e->s.host[h].dev;

		g_zc.sent[h] = dev->cfg.tx;
		dev->cfg.tx_zc = host_tx_zc;
		dev->cfg.zc_min = zc_min;
		uroce_tp_mr_set_ctx(e->mr[h], e->mr[h]);
	}
}

/* RC WRITE and SEND payloads go out as pieces of the MR, CRC'd where they lie: the data
 * arrives whole with good ICRCs; a refused frame is offered again; a frame the host does
 * not take is copied. READ responses are copied (see uroce_tp_tx_zc_fn). */
Test(device, rc_payloads_leave_from_registered_memory)
{
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct env e;
	int sent0;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	zc_on(&e, 256);
	for (int i = 0; i < 16384; i++) {
		*hp(&e, 0, (uint64_t)i) = (uint8_t)(i * 7 + 3);
		*hp(&e, 1, (uint64_t)i) = (uint8_t)(i * 5 + 1);
	}
	/* WRITE of 4 KiB from two SGEs (3000 + 1096): the packet across them has 2 pieces. */
	g_zc.refuse = 1;
	w = wr(1, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 3000, e.key[0], true);
	w.num_sge = 2;
	w.sg_list[1] = (struct uroce_tp_sge){va(&e, 0, 5000), 1096, e.key[0]};
	w.remote_addr = va(&e, 1, 8192);
	w.rkey = e.key[1];
	post(&e, 0, &w);
	cr_assert(run_until(&e, 1, 0, 100 * MS));
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 0, 0), hp(&e, 1, 8192), 3000), 0);
	cr_assert_eq(memcmp(hp(&e, 0, 5000), hp(&e, 1, 8192 + 3000), 1096), 0);
	cr_assert_eq(g_zc.frames, 4, "4 KiB at MTU 1024, every packet zero-copy");
	cr_assert_eq(g_zc.pieces, 5, "the third packet spans both SGEs");
	cr_assert_eq(cnt(&e, 0)->tx_busy, 1, "the refused frame counted, then sent");

	/* READ 3 KiB of host 1: its responses are copies. */
	g_zc.frames = g_zc.pieces = 0;
	w = wr(2, IBV_WR_RDMA_READ, va(&e, 0, 12288), 3072, e.key[0], true);
	w.remote_addr = va(&e, 1, 100);
	w.rkey = e.key[1];
	post(&e, 0, &w);
	cr_assert(run_until(&e, 2, 0, 100 * MS));
	expect_wc(&e.sc[0].wc[1], 2, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 0, 12288), hp(&e, 1, 100), 3072), 0);
	cr_assert_eq(g_zc.frames, 0, "READ responses are copied");
	cr_assert_eq(read_responses(), 3);

	/* Below zc_min: copied. Not taken by the host (-ENOTSUP): copied. */
	g_zc.frames = 0;
	sent0 = nframes(0, ANY, ANY);
	post_write(&e, 3, 0, 255, 0);
	cr_assert(run_until(&e, 3, 0, 100 * MS));
	g_zc.not_this = 1;
	post_write(&e, 4, 0, 2048, 0);
	cr_assert(run_until(&e, 4, 0, 100 * MS));
	expect_wc(&e.sc[0].wc[3], 4, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 0, 0), hp(&e, 1, 0), 2048), 0);
	cr_assert_eq(nframes(0, ANY, ANY) - sent0, 3, "one 255 B, two 1 KiB packets");
	cr_assert_eq(g_zc.frames, 1, "the second 1 KiB packet only");
	cr_assert_eq(cnt(&e, 1)->rcvd_icrc_err + cnt(&e, 1)->rcvd_malformed, 0);
	cr_assert_eq(cnt(&e, 0)->rcvd_icrc_err + cnt(&e, 0)->rcvd_malformed, 0);
	env_fini(&e);
}

/* UC completes a WQE when it is sent, UD too, and inline data is in the WQE: none of
 * them may leave the payload where the application can rewrite it, so all are copied. */
Test(device, uc_ud_and_inline_payloads_are_copied)
{
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct env e;

	env_init(&e);
	env_pair(&e, IBV_QPT_UC, &o);
	zc_on(&e, 1);
	post_write(&e, 1, 0, 4096, 8192);
	cr_assert(run_until(&e, 1, 0, 100 * MS));
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	cr_assert_eq(nframes(0, ANY, ANY), 4);
	cr_assert_eq(g_zc.frames, 0);
	env_fini(&e);

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	zc_on(&e, 1);
	w = wr(1, IBV_WR_RDMA_WRITE, 0, 0, 0, true);
	w.send_flags |= IBV_SEND_INLINE;
	w.num_sge = 0;
	w.inline_len = 6;
	memcpy(w.inline_data, "inline", 6);
	w.remote_addr = va(&e, 1, 64);
	w.rkey = e.key[1];
	post(&e, 0, &w);
	cr_assert(run_until(&e, 1, 0, 100 * MS));
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 1, 64), "inline", 6), 0);
	cr_assert_eq(g_zc.frames, 0);
	env_fini(&e);
}

/* QPs are found by QPN through a table of 4096-entry pages: across page boundaries,
 * after destruction, with every other QP gone, and never a QP of another QPN. */
Test(device, qp_lookup_by_qpn_across_pages)
{
	enum { N = 10000 };
	static struct uroce_tp_qp *qps[N];
	struct uroce_tp_dev *dev;
	struct env e;
	uint32_t pages = 0, last_page = UINT32_MAX;

	env_init(&e);
	dev = e.s.host[0].dev;
	for (int i = 0; i < N; i++) {
		uint32_t qpn;

		qps[i] = mkqp(&e, 0, IBV_QPT_UD, NULL, false, 1);
		qpn = uroce_tp_qp_num(qps[i]);
		cr_assert_leq(qpn, 0xffffffu);
		if (qpn >> 12 != last_page)
			pages++, last_page = qpn >> 12;
	}
	cr_assert_geq(pages, 3, "10,000 QPs span at least three pages");
	for (int i = 0; i < N; i++)
		cr_assert_eq(uroce_tp_qp_lookup(dev, uroce_tp_qp_num(qps[i])), qps[i]);
	/* Every other one goes; the others stay found, the gone ones are not. */
	for (int i = 0; i < N; i += 2) {
		uint32_t qpn = uroce_tp_qp_num(qps[i]);

		cr_assert_eq(uroce_tp_destroy_qp(qps[i]), 0);
		cr_assert_null(uroce_tp_qp_lookup(dev, qpn));
		qps[i] = NULL;
	}
	for (int i = 1; i < N; i += 2)
		cr_assert_eq(uroce_tp_qp_lookup(dev, uroce_tp_qp_num(qps[i])), qps[i]);
	/* The high byte of a 32-bit number is not part of a QPN. */
	cr_assert_eq(uroce_tp_qp_lookup(dev, uroce_tp_qp_num(qps[1]) | 0xff000000u), qps[1]);
	for (int i = 1; i < N; i += 2)
		cr_assert_eq(uroce_tp_destroy_qp(qps[i]), 0);
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

/* cfg.debug_log: each state change of the responder and the completer, by name. */
static char g_log[16384];
static size_t g_log_len;

static void log_line(void *io_ctx, const char *fmt, va_list ap)
{
	int n;

	(void)io_ctx;
	n = vsnprintf(g_log + g_log_len, sizeof(g_log) - g_log_len, fmt, ap);
	cr_assert(n > 0 && (size_t)n + 1 < sizeof(g_log) - g_log_len);
	g_log_len += (size_t)n;
	g_log[g_log_len++] = '\n';
	g_log[g_log_len] = '\0';
}

Test(device, debug_log_names_each_state_change)
{
	struct env e;
	struct uroce_tp_dev_cfg cfg;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	char line[96];

	uroce_tp_dev_cfg_init(&cfg);
	cfg.debug_log = log_line;
	env_init_cfg(&e, &cfg);
	env_pair(&e, IBV_QPT_RC, &o);
	post_recv(&e, 1, 1, 0, 64);
	w = wr(1, IBV_WR_SEND, va(&e, 0, 0), 8, e.key[0], true);
	g_log_len = 0;
	post(&e, 0, &w);
	cr_assert(run_until(&e, 1, 1, 10 * MS));
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	/* The SEND through every check of the responder, in rxe's order, to its ACK. */
	snprintf(line, sizeof(line), "qp 0x%06x psn %u resp: ", uroce_tp_qp_num(e.qp[1]),
		 o.psn_a);
	cr_assert(strstr(g_log, line), "%s", g_log);
	cr_assert(strstr(g_log, "resp: CHK_PSN -> CHK_OP_SEQ\n"), "%s", g_log);
	cr_assert(strstr(g_log, "resp: CHK_RKEY -> EXECUTE\n"), "%s", g_log);
	cr_assert(strstr(g_log, "resp: COMPLETE -> ACKNOWLEDGE\n"), "%s", g_log);
	cr_assert(strstr(g_log, "resp: ACKNOWLEDGE -> DONE\n"), "%s", g_log);
	/* Its ACK through the completer. */
	snprintf(line, sizeof(line), "qp 0x%06x psn %u comp: GET_WQE -> CHECK_PSN\n",
		 uroce_tp_qp_num(e.qp[0]), o.psn_a);
	cr_assert(strstr(g_log, line), "%s", g_log);
	cr_assert(strstr(g_log, "comp: CHECK_ACK -> WRITE_SEND\n"), "%s", g_log);
	cr_assert(strstr(g_log, "comp: WRITE_SEND -> COMP_WQE\n"), "%s", g_log);
	cr_assert(strstr(g_log, "comp: COMP_WQE -> DONE\n"), "%s", g_log);
	env_fini(&e);
}
