/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, deterministic, on two hosts (behaviour.h). modify_qp: bad values, query
 * returns what was set, RESET and ERR flushing, SQD draining and what may change there.
 * Each asserts the exact statuses, counters, QP states, frames on the wire and what
 * memory holds afterwards.
 */
#include "behaviour.h"

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

static bool drop_acks_of_1(const struct frame_rec *r, void *arg)
{
	(void)arg;
	return r->from == 1 && r->opcode == OPC(RC, ACKNOWLEDGE);
}

/* How Ceph's RDMA messenger closes a connection: its last SEND (the FIN) goes out, then
 * the QP goes to ERR at once, then it is destroyed. The peer's ACK of that SEND arrives
 * after the move to ERR (counted rcvd_in_wrong_state) or after the destroy (counted
 * rcvd_unknown_qp), as the two daemons counted under Ceph (issue 45, item 5). Either is
 * dropped: no second completion of the flushed SEND, no frame in answer, no state
 * change, and the QP's number is never given to a new QP that could take the ACK. */
Test(modify, ack_after_error_or_destroy_is_counted_and_dropped)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct ibv_qp_attr a;
	uint32_t qpn;
	int n;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	g_tx.drop = drop_acks_of_1;
	post_recv(&e, 1, 30, 0, 64);
	w = wr(10, IBV_WR_SEND, va(&e, 0, 0), 16, e.key[0], true);
	post(&e, 0, &w);
	cr_assert(run_until(&e, 0, 1, 10 * MS), "the SEND arrives");
	expect_wc(&e.rc[1].wc[0], 30, IBV_WC_SUCCESS);
	cr_assert_eq(e.sc[0].n, 0, "its ACK was dropped on the way");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	cr_assert_eq(uroce_tp_modify_qp(e.qp[0], &a, IBV_QP_STATE, NULL, e.s.now), 0);
	collect(&e);
	cr_assert_eq(e.sc[0].n, 1);
	expect_wc(&e.sc[0].wc[0], 10, IBV_WC_WR_FLUSH_ERR);

	n = nframes(0, ANY, ANY);
	inject_aeth_to0(&e, UROCE_AETH_ACK, o.psn_a);
	cr_assert_eq(cnt(&e, 0)->rcvd_in_wrong_state, 1);
	collect(&e);
	cr_assert_eq(e.sc[0].n, 1, "the flushed SEND does not complete again");
	cr_assert_eq(qstate(&e, 0), IBV_QPS_ERR);

	qpn = uroce_tp_qp_num(e.qp[0]);
	cr_assert_eq(uroce_tp_destroy_qp(e.qp[0]), 0);
	e.qp[0] = mkqp(&e, 0, IBV_QPT_RC, NULL, false, 8);
	cr_assert_neq(uroce_tp_qp_num(e.qp[0]), qpn, "a new QP never takes a gone one's number");
	inject_aeth_to0_qpn(&e, qpn, UROCE_AETH_ACK, o.psn_a);
	cr_assert_eq(cnt(&e, 0)->rcvd_unknown_qp, 1);
	cr_assert_eq(cnt(&e, 0)->rcvd_in_wrong_state, 1);
	run_for(&e, 100 * MS);
	collect(&e);
	cr_assert_eq(e.sc[0].n, 1);
	cr_assert_eq(nframes(0, ANY, ANY), n, "host 0 answers neither ACK");
	cr_assert_eq(uroce_tp_qp_state(e.qp[0]), IBV_QPS_RESET);
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

/* ==== 5. RESET and the CQs ==================================================================== */

/* To RESET, the QP's completions still in its CQs go (as mlx5 cleans its CQs), those of
 * another QP on the same CQs stay, in order; with an SRQ, its receive completions stay
 * (the SRQ's buffers). Flushes in ERR complete at once, nothing polls here. */
Test(modify, reset_drops_the_qps_completions)
{
	struct env e;
	struct ibv_qp_attr err = {.qp_state = IBV_QPS_ERR};
	struct ibv_qp_attr reset = {.qp_state = IBV_QPS_RESET};
	struct uroce_tp_qp *qa, *qb;
	struct uroce_tp_send_wqe w;
	struct ibv_wc wc[8];

	env_init(&e);
	qa = mkqp(&e, 0, IBV_QPT_RC, NULL, true, 16);
	qb = mkqp(&e, 0, IBV_QPT_RC, NULL, true, 16);
	cr_assert_eq(to_init(qa, NULL, 0), 0);
	cr_assert_eq(to_init(qb, NULL, 0), 0);
	cr_assert_eq(uroce_tp_modify_qp(qa, &err, IBV_QP_STATE, NULL, e.s.now), 0);
	cr_assert_eq(uroce_tp_modify_qp(qb, &err, IBV_QP_STATE, NULL, e.s.now), 0);
	for (uint64_t id = 1; id <= 6; id++) {
		w = wr(id, IBV_WR_SEND, va(&e, 0, 0), 8, e.key[0], true);
		cr_assert_eq(uroce_tp_post_send(id % 2 ? qa : qb, &w, e.s.now), 0);
	}
	cr_assert_eq(uroce_tp_post_recv(qa, &(struct uroce_tp_recv_wqe){.wr_id = 7}), 0);
	cr_assert_eq(uroce_tp_cq_count(e.sc[0].cq), 6);
	cr_assert_eq(uroce_tp_cq_count(e.rc[0].cq), 1);

	cr_assert_eq(uroce_tp_modify_qp(qa, &reset, IBV_QP_STATE, NULL, e.s.now), 0);
	cr_assert_eq(uroce_tp_cq_count(e.rc[0].cq), 0, "qa's flushed receive stayed");
	cr_assert_eq(uroce_tp_poll_cq(e.sc[0].cq, 8, wc), 3);
	for (int i = 0; i < 3; i++) {
		expect_wc(&wc[i], 2 * (uint64_t)i + 2, IBV_WC_WR_FLUSH_ERR);
		cr_assert_eq(wc[i].qp_num, uroce_tp_qp_num(qb));
	}
	cr_assert_eq(uroce_tp_destroy_qp(qa), 0);
	cr_assert_eq(uroce_tp_destroy_qp(qb), 0);
	env_fini(&e);
}
