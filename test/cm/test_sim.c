/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two CMs over a simulated wire (sim.h): connection set-up and tear-down both ways, SIDR,
 * loss of each message, a peer that never answers, rejects, duplicates, strays, garbage,
 * and destroying ids in every state (ASan build: nothing leaks).
 */
#include "sim.h"

#define PORT 7471
#define S(x) ((uint64_t)(x) * 1000000000ull)

static struct uroce_cm_id *listener(struct sim *s, enum rdma_port_space ps, enum ibv_qp_type t)
{
	struct uroce_cm_id *l = uroce_cm_id_create(s->h[1].cm, ps, t, (void *)0x1);
	cr_assert_not_null(l);
	struct sockaddr_in a = sim_addr(1, PORT);
	cr_assert_eq(uroce_cm_bind(l, (struct sockaddr *)&a), 0);
	cr_assert_eq(uroce_cm_listen(l, 8), 0);
	return l;
}

static struct uroce_cm_id *client(struct sim *s, enum rdma_port_space ps, enum ibv_qp_type t,
				  uint16_t port)
{
	struct uroce_cm_id *c = uroce_cm_id_create(s->h[0].cm, ps, t, (void *)0x2);
	cr_assert_not_null(c);
	struct sockaddr_in src = sim_addr(0, 0), dst = sim_addr(1, port);
	struct uroce_cm_path p = sim_path(s, 0);
	cr_assert_eq(uroce_cm_set_route(c, (struct sockaddr *)&src, (struct sockaddr *)&dst, &p),
		     0);
	return c;
}

static struct uroce_cm_conn_param param(uint32_t qpn, const char *pd)
{
	struct uroce_cm_conn_param p;
	memset(&p, 0, sizeof(p));
	p.qp_num = qpn;
	p.responder_resources = 1;
	p.initiator_depth = 1;
	p.retry_count = 7;
	p.rnr_retry_count = 7;
	if (pd) {
		p.private_data_len = (uint8_t)strlen(pd);
		memcpy(p.private_data, pd, p.private_data_len);
	}
	return p;
}

/* Connect, accept, RTU: returns the server's new id. */
static struct uroce_cm_id *connect_pair(struct sim *s, struct uroce_cm_id *c)
{
	struct uroce_cm_conn_param cp = param(0x11, "hello"), sp = param(0x22, "world");
	int n0 = s->h[0].nev, n1 = s->h[1].nev;
	cr_assert_eq(uroce_cm_connect(c, &cp, s->now), 0);
	sim_run(s, s->now + S(200));
	cr_assert_eq(s->h[1].nev, n1 + 1);
	const struct uroce_cm_event *ev = sim_last(s, 1);
	cr_assert_eq(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	cr_assert_str_eq((const char *)ev->param.private_data, "hello");
	cr_assert_eq(ev->param.private_data_len, 56);
	cr_assert_eq(ev->param.qp_num, 0x11);
	struct uroce_cm_id *srv = ev->id;
	cr_assert_neq(srv, ev->listen_id);
	cr_assert_eq(uroce_cm_accept(srv, &sp, s->now), 0);
	sim_run(s, s->now + S(200));
	cr_assert_eq(s->h[0].nev, n0 + 1);
	ev = sim_last(s, 0);
	cr_assert_eq(ev->event, RDMA_CM_EVENT_CONNECT_RESPONSE);
	cr_assert_str_eq((const char *)ev->param.private_data, "world");
	cr_assert_eq(ev->param.qp_num, 0x22);
	/* RTU, and no event: librdmacm shows ESTABLISHED itself, as over the kernel. */
	cr_assert_eq(uroce_cm_accept(c, NULL, s->now), 0);
	cr_assert_eq(s->h[0].nev, n0 + 1);
	sim_run(s, s->now + S(200));
	cr_assert_eq(sim_last(s, 1)->event, RDMA_CM_EVENT_ESTABLISHED);
	cr_assert_eq(sim_last(s, 1)->id, srv);
	return srv;
}

static void check_qp_attrs(struct uroce_cm_id *a, struct uroce_cm_id *b)
{
	struct ibv_qp_attr ra, sa, rb, sb, ia;
	int m;
	ia.qp_state = IBV_QPS_INIT;
	cr_assert_eq(uroce_cm_init_qp_attr(a, &ia, &m), 0);
	cr_assert_eq(ia.qp_access_flags, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	cr_assert_eq(ia.port_num, 1);
	ra.qp_state = sa.qp_state = rb.qp_state = sb.qp_state = 0;
	ra.qp_state = IBV_QPS_RTR;
	rb.qp_state = IBV_QPS_RTR;
	sa.qp_state = IBV_QPS_RTS;
	sb.qp_state = IBV_QPS_RTS;
	cr_assert_eq(uroce_cm_init_qp_attr(a, &ra, &m), 0);
	cr_assert(m & IBV_QP_AV);
	cr_assert_eq(uroce_cm_init_qp_attr(b, &rb, &m), 0);
	cr_assert_eq(uroce_cm_init_qp_attr(a, &sa, &m), 0);
	cr_assert(m & IBV_QP_TIMEOUT);
	cr_assert_eq(uroce_cm_init_qp_attr(b, &sb, &m), 0);
	cr_assert_eq(ra.dest_qp_num, 0x22);
	cr_assert_eq(rb.dest_qp_num, 0x11);
	cr_assert_eq(sa.sq_psn, rb.rq_psn, "A sends from where B expects");
	cr_assert_eq(sb.sq_psn, ra.rq_psn);
	cr_assert_eq(ra.path_mtu, IBV_MTU_1024);
	cr_assert_eq(ra.max_dest_rd_atomic, 1);
	cr_assert_eq(sa.max_rd_atomic, 1);
	cr_assert_eq(sa.timeout, 19);
	cr_assert_eq(sb.timeout, 19);
	cr_assert_eq(sa.retry_cnt, 7);
	cr_assert(ra.ah_attr.is_global);
	cr_assert_eq(ra.ah_attr.grh.flow_label, rb.ah_attr.grh.flow_label,
		     "both ends use the REQ's flow label");
	cr_assert_eq(memcmp(ra.ah_attr.grh.dgid.raw, rb.ah_attr.grh.dgid.raw, 16) != 0, 1);
}

Test(cm_sim, rc_connect_disconnect_both_ways)
{
	struct sim s;
	sim_init(&s);
	struct uroce_cm_id *l = listener(&s, RDMA_PS_TCP, IBV_QPT_RC);
	for (int who = 0; who < 2; who++) {
		struct uroce_cm_id *c = client(&s, RDMA_PS_TCP, IBV_QPT_RC, PORT);
		struct uroce_cm_id *srv = connect_pair(&s, c);
		check_qp_attrs(c, srv);
		struct uroce_cm_id *x = who == 0 ? c : srv, *y = who == 0 ? srv : c;
		int hx = who == 0 ? 0 : 1, hy = 1 - hx;
		cr_assert_eq(uroce_cm_disconnect(x, s.now), 0);
		sim_run(&s, s.now + S(1));
		cr_assert_eq(sim_last(&s, hy)->event, RDMA_CM_EVENT_DISCONNECTED);
		cr_assert_eq(sim_last(&s, hy)->id, y);
		cr_assert_eq(uroce_cm_disconnect(y, s.now), 0); /* DREP */
		sim_run(&s, s.now + S(1));
		cr_assert_eq(sim_last(&s, hx)->event, RDMA_CM_EVENT_DISCONNECTED);
		cr_assert_eq(sim_last(&s, hx)->status, 0);
		sim_run(&s, s.now + S(10));
		cr_assert_eq(sim_last(&s, hx)->event, RDMA_CM_EVENT_TIMEWAIT_EXIT);
		cr_assert_eq(sim_last(&s, hy)->event, RDMA_CM_EVENT_TIMEWAIT_EXIT);
		uroce_cm_id_destroy(c, s.now);
		uroce_cm_id_destroy(srv, s.now);
	}
	uroce_cm_id_destroy(l, s.now);
	cr_assert_eq(uroce_cm_next_deadline(s.h[0].cm), UINT64_MAX);
	cr_assert_eq(uroce_cm_counters(s.h[0].cm)->rx_stale, 0);
	cr_assert_eq(uroce_cm_counters(s.h[1].cm)->rx_stale, 0);
	sim_fini(&s);
}

static void lose_one(uint16_t attr)
{
	struct sim s;
	sim_init(&s);
	s.drop_attr = attr;
	s.drop_nth = 1;
	struct uroce_cm_id *l = listener(&s, RDMA_PS_TCP, IBV_QPT_RC);
	struct uroce_cm_id *c = client(&s, RDMA_PS_TCP, IBV_QPT_RC, PORT);
	struct uroce_cm_conn_param cp = param(0x11, NULL), sp = param(0x22, NULL);
	cr_assert_eq(uroce_cm_connect(c, &cp, s.now), 0);
	uint64_t t0 = s.now;
	/* the app answers each event at once */
	struct uroce_cm_id *srv = NULL;
	bool est0 = false, est1 = false;
	for (int round = 0; round < 50 && !(est0 && est1); round++) {
		sim_run(&s, s.now + S(1));
		for (int h = 0; h < 2; h++)
			for (int i = 0; i < s.h[h].nev; i++) {
				struct uroce_cm_event *ev = &s.h[h].ev[i];
				if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && !srv) {
					srv = ev->id;
					cr_assert_eq(uroce_cm_accept(srv, &sp, s.now), 0);
				} else if (ev->event == RDMA_CM_EVENT_CONNECT_RESPONSE) {
					/* RTU: the active side is established (librdmacm's view) */
					cr_assert_eq(uroce_cm_accept(c, NULL, s.now), 0);
					ev->event = RDMA_CM_EVENT_ADDR_CHANGE; /* handled */
					est0 = true;
				} else if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
					if (h == 0)
						est0 = true;
					else
						est1 = true;
				} else {
					cr_assert(ev->event == RDMA_CM_EVENT_ADDR_CHANGE ||
						  ev->event == RDMA_CM_EVENT_CONNECT_REQUEST,
						  "unexpected event %d", ev->event);
				}
			}
	}
	cr_assert(est0 && est1, "established despite the lost 0x%x", attr);
	cr_assert_eq(s.dropped, attr == UROCE_CM_ATTR_DREQ ? 0 : 1);
	/* within one wait of ~6.4 s (response timeout 20 + 2 x packet lifetime 18) */
	cr_assert_lt(s.now - t0, S(60));
	uint64_t t1 = s.now;
	cr_assert_eq(uroce_cm_disconnect(c, s.now), 0);
	sim_run(&s, s.now + S(30));
	cr_assert_eq(uroce_cm_disconnect(srv, s.now), 0);
	sim_run(&s, s.now + S(30));
	cr_assert_eq(s.dropped, 1);
	bool disc0 = false;
	for (int i = 0; i < s.h[0].nev; i++)
		if (s.h[0].ev[i].event == RDMA_CM_EVENT_DISCONNECTED) {
			disc0 = true;
			cr_assert_eq(s.h[0].ev[i].status, 0);
		}
	cr_assert(disc0);
	cr_assert_lt(s.now - t1, S(70));
	uroce_cm_id_destroy(c, s.now);
	uroce_cm_id_destroy(srv, s.now);
	uroce_cm_id_destroy(l, s.now);
	sim_fini(&s);
}

Test(cm_sim, lost_req) { lose_one(UROCE_CM_ATTR_REQ); }
Test(cm_sim, lost_rep) { lose_one(UROCE_CM_ATTR_REP); }
Test(cm_sim, lost_rtu) { lose_one(UROCE_CM_ATTR_RTU); }
Test(cm_sim, lost_dreq) { lose_one(UROCE_CM_ATTR_DREQ); }

Test(cm_sim, unreachable_after_max_retries)
{
	struct sim s;
	sim_init(&s);
	s.drop_all = true;
	struct uroce_cm_id *c = client(&s, RDMA_PS_TCP, IBV_QPT_RC, PORT);
	struct uroce_cm_conn_param cp = param(0x11, NULL);
	cr_assert_eq(uroce_cm_connect(c, &cp, s.now), 0);
	sim_run(&s, UINT64_MAX);
	const struct uroce_cm_event *ev = sim_last(&s, 0);
	cr_assert_eq(ev->event, RDMA_CM_EVENT_UNREACHABLE);
	cr_assert_eq(ev->status, -ETIMEDOUT);
	cr_assert_eq(s.sent[0][0], 16, "REQ once and 15 retries");
	/* 16 waits of 4.096 us * (2^20 + 2 * 2^18) */
	uint64_t wait = 4096ull * ((1ull << 20) + (2ull << 18));
	cr_assert_eq(s.now, 16 * wait);
	cr_assert_eq(uroce_cm_counters(s.h[0].cm)->retries, 15);
	cr_assert_eq(uroce_cm_counters(s.h[0].cm)->timeouts, 1);
	/* SIDR too */
	struct uroce_cm_id *u = client(&s, RDMA_PS_UDP, IBV_QPT_UD, PORT);
	cr_assert_eq(uroce_cm_connect(u, &cp, s.now), 0);
	sim_run(&s, UINT64_MAX);
	cr_assert_eq(sim_last(&s, 0)->event, RDMA_CM_EVENT_UNREACHABLE);
	cr_assert_eq(sim_last(&s, 0)->id, u);
	/* and a DREQ nobody answers: DISCONNECTED anyway */
	s.drop_all = false;
	struct uroce_cm_id *l = listener(&s, RDMA_PS_TCP, IBV_QPT_RC);
	struct uroce_cm_id *c2 = client(&s, RDMA_PS_TCP, IBV_QPT_RC, PORT);
	struct uroce_cm_id *srv = connect_pair(&s, c2);
	s.drop_all = true;
	cr_assert_eq(uroce_cm_disconnect(c2, s.now), 0);
	sim_run(&s, UINT64_MAX);
	bool disc = false;
	for (int i = 0; i < s.h[0].nev; i++)
		if (s.h[0].ev[i].event == RDMA_CM_EVENT_DISCONNECTED && s.h[0].ev[i].id == c2) {
			disc = true;
			cr_assert_eq(s.h[0].ev[i].status, -ETIMEDOUT);
		}
	cr_assert(disc);
	uroce_cm_id_destroy(srv, s.now);
	uroce_cm_id_destroy(l, s.now);
	sim_fini(&s);
}

/* A listener on host 1 and a client on host 0 whose REQ is on the wire, not delivered. */
static void req_queued(struct sim *s, struct uroce_cm_id **l, struct uroce_cm_id **c)
{
	struct uroce_cm_conn_param cp = param(0x11, NULL);

	sim_init(s);
	*l = listener(s, RDMA_PS_TCP, IBV_QPT_RC);
	*c = client(s, RDMA_PS_TCP, IBV_QPT_RC, PORT);
	cr_assert_eq(uroce_cm_connect(*c, &cp, s->now), 0);
	cr_assert_eq(s->qlen, 1);
}

/* An active side that gives up on a REQ nobody answered (rdma_destroy_id) sends REJ with
 * reason Timeout, 4, and its CA GUID as ARI: a Linux passive side finds its half-open
 * connection by them (cm_acquire_rejected_id) and lets it go. It once said 1, "No QP",
 * which Linux would not have matched. */
Test(cm_sim, a_req_given_up_is_rejected_with_timeout)
{
	struct sim s;
	struct cm_msg m;
	struct uroce_cm_id *l, *c;
	req_queued(&s, &l, &c);
	sim_run(&s, s.now + S(1));
	cr_assert_eq(sim_last(&s, 1)->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	struct uroce_cm_id *srv = sim_last(&s, 1)->id;
	uroce_cm_id_destroy(c, s.now);
	cr_assert_eq(s.qlen, 1, "one REJ on the wire");
	cr_assert_eq(cm_msg_decode(s.q[s.qhead].mad, UROCE_CM_MAD_LEN, &m), CM_DECODE_OK);
	cr_assert_eq(m.hdr.attr_id, UROCE_CM_ATTR_REJ);
	cr_assert_eq(m.u.rej.reason, 4, "reason %u", m.u.rej.reason);
	cr_assert_eq(m.u.rej.remote_comm_id, 0);
	cr_assert_eq(m.u.rej.ari_len, 8);
	sim_run(&s, s.now + S(1));
	cr_assert_eq(sim_last(&s, 1)->event, RDMA_CM_EVENT_REJECTED);
	cr_assert_eq(sim_last(&s, 1)->id, srv, "the passive side found its connection");
	cr_assert_eq(sim_last(&s, 1)->status, 4);
	uroce_cm_id_destroy(srv, s.now);
	uroce_cm_id_destroy(l, s.now);
	sim_fini(&s);
}

/* A REQ whose primary path names a host other than its sender (or an address of ours it
 * did not come to) would have our REP, REJ and their retries, then the QP's packets, sent
 * to that host: it is refused with REJ Invalid GID to the sender, and nothing else. */
Test(cm_sim, a_req_must_come_by_its_primary_path)
{
	for (int field = 0; field < 2; field++) {
		struct sim s;
		struct cm_msg m;
		struct uroce_cm_id *l, *c;
		req_queued(&s, &l, &c);
		struct sim_pkt *p = &s.q[s.qhead];
		cr_assert_eq(cm_msg_decode(p->mad, UROCE_CM_MAD_LEN, &m), CM_DECODE_OK);
		/* 198.18.253.2: a third host, as the peer's address or as ours */
		uint8_t *gid = field ? m.u.req.primary.remote_gid : m.u.req.primary.local_gid;
		gid[14] = 253;
		cm_msg_encode(&m, p->mad);
		uint64_t sent_rep = (uint64_t)s.sent[1][UROCE_CM_ATTR_REP - 0x10];
		sim_run(&s, s.now + S(1));
		cr_assert_eq(s.h[1].nev, 0, "no CONNECT_REQUEST");
		cr_assert_eq(uroce_cm_counters(s.h[1].cm)->rx_bad_path, 1);
		cr_assert_eq((uint64_t)s.sent[1][UROCE_CM_ATTR_REP - 0x10], sent_rep, "no REP");
		cr_assert_eq(s.sent[1][UROCE_CM_ATTR_REJ - 0x10], 1, "one REJ, to the sender");
		cr_assert_eq(sim_last(&s, 0)->event, RDMA_CM_EVENT_REJECTED);
		cr_assert_eq(sim_last(&s, 0)->status, 12, "Invalid GID");
		uroce_cm_id_destroy(c, s.now);
		uroce_cm_id_destroy(l, s.now);
		sim_run(&s, s.now + S(300));
		sim_fini(&s);
	}
}

Test(cm_sim, reject_with_private_data_and_no_listener)
{
	struct sim s;
	sim_init(&s);
	struct uroce_cm_id *l = listener(&s, RDMA_PS_TCP, IBV_QPT_RC);
	struct uroce_cm_id *c = client(&s, RDMA_PS_TCP, IBV_QPT_RC, PORT);
	struct uroce_cm_conn_param cp = param(0x11, NULL);
	cr_assert_eq(uroce_cm_connect(c, &cp, s.now), 0);
	sim_run(&s, s.now + S(1));
	struct uroce_cm_id *srv = sim_last(&s, 1)->id;
	cr_assert_eq(uroce_cm_reject(srv, "go away", 8, s.now), 0);
	sim_run(&s, s.now + S(1));
	const struct uroce_cm_event *ev = sim_last(&s, 0);
	cr_assert_eq(ev->event, RDMA_CM_EVENT_REJECTED);
	cr_assert_eq(ev->status, 28);
	cr_assert_eq(ev->param.private_data_len, 148);
	cr_assert_str_eq((const char *)ev->param.private_data, "go away");
	uroce_cm_id_destroy(srv, s.now);

	struct uroce_cm_id *c2 = client(&s, RDMA_PS_TCP, IBV_QPT_RC, PORT + 1);
	cr_assert_eq(uroce_cm_connect(c2, &cp, s.now), 0);
	sim_run(&s, s.now + S(1));
	ev = sim_last(&s, 0);
	cr_assert_eq(ev->event, RDMA_CM_EVENT_REJECTED);
	cr_assert_eq(ev->id, c2);
	cr_assert_eq(ev->status, 8, "invalid service ID");
	cr_assert_eq(uroce_cm_counters(s.h[1].cm)->rx_no_listener, 1);
	/* UD to nobody: SIDR_REP "unsupported" -> UNREACHABLE with that status */
	struct uroce_cm_id *u = client(&s, RDMA_PS_UDP, IBV_QPT_UD, PORT);
	cr_assert_eq(uroce_cm_connect(u, &cp, s.now), 0);
	sim_run(&s, s.now + S(1));
	cr_assert_eq(sim_last(&s, 0)->event, RDMA_CM_EVENT_UNREACHABLE);
	cr_assert_eq(sim_last(&s, 0)->status, 1);
	uroce_cm_id_destroy(l, s.now);
	sim_fini(&s);
}

Test(cm_sim, ud_sidr)
{
	struct sim s;
	sim_init(&s);
	struct uroce_cm_id *l = listener(&s, RDMA_PS_UDP, IBV_QPT_UD);
	struct uroce_cm_id *c = client(&s, RDMA_PS_UDP, IBV_QPT_UD, PORT);
	struct uroce_cm_conn_param cp = param(0, "sidr?");
	cr_assert_eq(uroce_cm_connect(c, &cp, s.now), 0);
	sim_run(&s, s.now + S(1));
	const struct uroce_cm_event *ev = sim_last(&s, 1);
	cr_assert_eq(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	cr_assert_eq(ev->param.private_data_len, 180);
	cr_assert_str_eq((const char *)ev->param.private_data, "sidr?");
	struct uroce_cm_id *srv = ev->id;
	cr_assert_eq(uroce_cm_id_qp_type(srv), IBV_QPT_UD);
	struct uroce_cm_conn_param sp = param(0x60, "sidr!");
	cr_assert_eq(uroce_cm_accept(srv, &sp, s.now), 0);
	sim_run(&s, s.now + S(1));
	ev = sim_last(&s, 0);
	cr_assert_eq(ev->event, RDMA_CM_EVENT_ESTABLISHED);
	cr_assert_eq(ev->param.qp_num, 0x60);
	cr_assert_eq(ev->param.qkey, 0x01234567);
	cr_assert_str_eq((const char *)ev->param.private_data, "sidr!");
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT};
	int m;
	cr_assert_eq(uroce_cm_init_qp_attr(c, &a, &m), 0);
	cr_assert(m & IBV_QP_QKEY);
	cr_assert_eq(a.qkey, 0x01234567);
	/* lost SIDR_REQ: sent again */
	s.drop_attr = UROCE_CM_ATTR_SIDR_REQ;
	s.drop_nth = 1;
	s.seen_attr = 0;
	struct uroce_cm_id *c2 = client(&s, RDMA_PS_UDP, IBV_QPT_UD, PORT);
	cr_assert_eq(uroce_cm_connect(c2, &cp, s.now), 0);
	sim_run(&s, s.now + S(10));
	ev = sim_last(&s, 1);
	cr_assert_eq(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	cr_assert_eq(uroce_cm_reject(ev->id, NULL, 0, s.now), 0);
	sim_run(&s, s.now + S(1));
	cr_assert_eq(sim_last(&s, 0)->event, RDMA_CM_EVENT_UNREACHABLE);
	cr_assert_eq(sim_last(&s, 0)->status, 2);
	uroce_cm_id_destroy(ev->id, s.now);
	uroce_cm_id_destroy(srv, s.now);
	uroce_cm_id_destroy(l, s.now);
	sim_fini(&s);
}

Test(cm_sim, duplicate_req_gets_mra)
{
	struct sim s;
	sim_init(&s);
	struct uroce_cm_id *l = listener(&s, RDMA_PS_TCP, IBV_QPT_RC);
	struct uroce_cm_id *c = client(&s, RDMA_PS_TCP, IBV_QPT_RC, PORT);
	struct uroce_cm_conn_param cp = param(0x11, NULL), sp = param(0x22, NULL);
	cr_assert_eq(uroce_cm_connect(c, &cp, s.now), 0);
	sim_run(&s, s.now + S(1));
	cr_assert_eq(s.h[1].nev, 1);
	/* the app sits on it: the REQ comes again, the delayed MRA goes out */
	sim_run(&s, s.now + S(7));
	cr_assert_eq(s.sent[0][0], 2);
	cr_assert_eq(s.sent[1][UROCE_CM_ATTR_MRA - 0x10], 1);
	cr_assert_eq(uroce_cm_counters(s.h[1].cm)->rx_dup_req, 1);
	cr_assert_eq(s.h[1].nev, 1, "one CONNECT_REQUEST only");
	/* the MRA asked for ~68 s: no REQ in the next 60 s */
	sim_run(&s, s.now + S(60));
	cr_assert_eq(s.sent[0][0], 2);
	cr_assert_eq(uroce_cm_accept(s.h[1].ev[0].id, &sp, s.now), 0);
	sim_run(&s, s.now + S(1));
	cr_assert_eq(sim_last(&s, 0)->event, RDMA_CM_EVENT_CONNECT_RESPONSE);
	uroce_cm_id_destroy(c, s.now); /* REJ (REP rejected) */
	sim_run(&s, s.now + S(1));
	cr_assert_eq(sim_last(&s, 1)->event, RDMA_CM_EVENT_REJECTED);
	uroce_cm_id_destroy(s.h[1].ev[0].id, s.now);
	uroce_cm_id_destroy(l, s.now);
	sim_run(&s, UINT64_MAX);
	sim_fini(&s);
}

Test(cm_sim, strays_and_garbage)
{
	struct sim s;
	sim_init(&s);
	struct captured_mad cap[8];
	cr_assert_eq(load_cm_mads("rdma_cm_rping.pcap", cap, 8), 5);
	struct uroce_cm *cm = s.h[1].cm;
	struct uroce_cm_path from = sim_path(&s, 0);
	/* rxe's REP, RTU, DREP for comm IDs this CM never made: counted, dropped */
	uroce_cm_input(cm, cap[1].mad, 256, &from, 0);
	uroce_cm_input(cm, cap[2].mad, 256, &from, 0);
	uroce_cm_input(cm, cap[4].mad, 256, &from, 0);
	cr_assert_eq(uroce_cm_counters(cm)->rx_stale, 3);
	cr_assert_eq(s.qlen, 0, "no answer to a stray REP");
	/* a DREQ for nobody: DREP anyway (Linux cm_dreq_handler) */
	uroce_cm_input(cm, cap[3].mad, 256, &from, 0);
	cr_assert_eq(s.qlen, 1);
	struct cm_msg m;
	cr_assert_eq(cm_msg_decode(s.q[s.qhead].mad, 256, &m), CM_DECODE_OK);
	cr_assert_eq(m.hdr.attr_id, UROCE_CM_ATTR_DREP);
	cr_assert_eq(m.hdr.tid, 0x00000002762f8affull);
	cr_assert_eq(m.u.drep.local_comm_id, 0x391e24bd);
	cr_assert_eq(m.u.drep.remote_comm_id, 0xff8a2f76);
	s.qlen = 0;
	/* garbage */
	uint8_t b[256];
	uint64_t before = uroce_cm_counters(cm)->rx_malformed;
	uroce_cm_input(cm, cap[0].mad, 100, &from, 0);
	uroce_cm_input(cm, cap[0].mad, 0, &from, 0);
	uroce_cm_input(cm, NULL, 256, &from, 0);
	memcpy(b, cap[0].mad, 256);
	b[0] = 2;
	uroce_cm_input(cm, b, 256, &from, 0);
	b[0] = 1;
	b[3] = 0x81;
	uroce_cm_input(cm, b, 256, &from, 0);
	cr_assert_eq(uroce_cm_counters(cm)->rx_malformed, before + 5);
	b[3] = 3;
	b[17] = 0x19; /* LAP */
	uroce_cm_input(cm, b, 256, &from, 0);
	b[17] = 0x33;
	uroce_cm_input(cm, b, 256, &from, 0);
	cr_assert_eq(uroce_cm_counters(cm)->rx_unknown_attr, 2);
	cr_assert_eq(s.qlen, 0);
	/* random bytes with a valid header: whatever they say, nothing breaks */
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < 20000; i++) {
		memcpy(b, cap[i % 5].mad, 24);
		for (int j = 24; j < 256; j++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			b[j] = (uint8_t)x;
		}
		b[17] = (uint8_t)(0x10 + (x >> 40) % 9);
		uroce_cm_input(s.h[i & 1].cm, b, 256, &from, (uint64_t)i);
		s.qlen = 0;
	}
	sim_fini(&s);
}

Test(cm_sim, destroy_in_every_state)
{
	/* stop the exchange after k deliveries, destroy whichever ids, run the rest out */
	for (int k = 0; k < 12; k++)
		for (int who = 0; who < 3; who++) {
			struct sim s;
			sim_init(&s);
			struct uroce_cm_id *l = listener(&s, RDMA_PS_TCP, IBV_QPT_RC);
			struct uroce_cm_id *c = client(&s, RDMA_PS_TCP, IBV_QPT_RC, PORT);
			struct uroce_cm_conn_param cp = param(0x11, NULL), sp = param(0x22, NULL);
			cr_assert_eq(uroce_cm_connect(c, &cp, s.now), 0);
			struct uroce_cm_id *srv = NULL;
			int steps = 0;
			bool c_gone = false;
			while (steps < k) {
				sim_run(&s, s.now + S(1));
				steps++;
				if (!srv && s.h[1].nev && s.h[1].ev[0].event ==
								   RDMA_CM_EVENT_CONNECT_REQUEST) {
					srv = s.h[1].ev[0].id;
					if (steps < k - 1)
						uroce_cm_accept(srv, &sp, s.now);
				}
				for (int i = 0; i < s.h[0].nev; i++)
					if (s.h[0].ev[i].event == RDMA_CM_EVENT_CONNECT_RESPONSE) {
						s.h[0].ev[i].event = RDMA_CM_EVENT_ADDR_CHANGE;
						if (steps < k - 2)
							uroce_cm_accept(c, NULL, s.now);
					}
				if (steps == k - 3 && srv)
					uroce_cm_disconnect(who == 1 ? srv : c, s.now);
			}
			if (who != 1) {
				uroce_cm_id_destroy(c, s.now);
				c_gone = true;
			}
			if (who != 0 && srv)
				uroce_cm_id_destroy(srv, s.now);
			if (who == 2)
				uroce_cm_id_destroy(l, s.now);
			sim_run(&s, s.now + S(300));
			(void)c_gone;
			sim_fini(&s); /* frees what is left; ASan says if anything leaks */
		}
}

Test(cm_sim, ports_and_options)
{
	struct sim s;
	sim_init(&s);
	struct uroce_cm *cm = s.h[0].cm;
	struct uroce_cm_id *a = uroce_cm_id_create(cm, RDMA_PS_TCP, IBV_QPT_RC, NULL);
	struct uroce_cm_id *b = uroce_cm_id_create(cm, RDMA_PS_TCP, IBV_QPT_RC, NULL);
	struct uroce_cm_id *u = uroce_cm_id_create(cm, RDMA_PS_UDP, IBV_QPT_UD, NULL);
	struct sockaddr_in x = sim_addr(0, 5000), any = {.sin_family = AF_INET,
							  .sin_port = htons(5000)};
	cr_assert_eq(uroce_cm_bind(a, (struct sockaddr *)&x), 0);
	cr_assert_eq(uroce_cm_bind(b, (struct sockaddr *)&any), -EADDRINUSE);
	cr_assert_eq(uroce_cm_bind(u, (struct sockaddr *)&any), 0, "another port space");
	cr_assert_eq(uroce_cm_bind(a, (struct sockaddr *)&x), -EINVAL, "bound already");
	struct sockaddr bad = {.sa_family = AF_UNIX};
	cr_assert_eq(uroce_cm_bind(b, &bad), -EINVAL);
	struct sockaddr_in eph = sim_addr(0, 0);
	cr_assert_eq(uroce_cm_bind(b, (struct sockaddr *)&eph), 0);
	struct sockaddr_storage ss;
	uroce_cm_id_addrs(b, &ss, NULL);
	uint16_t p = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	cr_assert(p >= 32768 && p <= 60999, "ephemeral %u", p);
	cr_assert_eq(uroce_cm_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, 32), 0);
	cr_assert_eq(uroce_cm_set_option(a, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, 0), -ENOSYS);
	cr_assert_eq(uroce_cm_set_option(a, RDMA_OPTION_ID, 99, 0), -ENOSYS);
	struct uroce_cm_conn_param big = param(1, NULL);
	big.private_data_len = 57;
	struct uroce_cm_id *c = client(&s, RDMA_PS_TCP, IBV_QPT_RC, PORT);
	cr_assert_eq(uroce_cm_connect(c, &big, 0), -EMSGSIZE);
	cr_assert_eq(uroce_cm_accept(c, &big, 0), -EINVAL);
	cr_assert_eq(uroce_cm_disconnect(c, 0), -EINVAL);
	struct ibv_qp_attr qa = {.qp_state = IBV_QPS_RTR};
	int m;
	cr_assert_eq(uroce_cm_init_qp_attr(c, &qa, &m), -EINVAL);
	sim_fini(&s);
}

static int nevents(const struct sim *s, int h, enum rdma_cm_event_type type)
{
	int n = 0;

	for (int i = 0; i < s->h[h].nev; i++)
		n += s->h[h].ev[i].event == type;
	return n;
}

/* Connection set-up and tear-down over a link that loses, duplicates and reorders (lib/
 * fault's injectors, as uroced's [fault] section puts on the wire), many seeds. Whatever
 * the link does, each side reports each step exactly once: a duplicated REQ, REP, RTU,
 * DREQ or DREP is recognised, a lost one is sent again, and nothing is left behind. Each
 * step gets 600 s of virtual time: a side that has sent an MRA (its application had not
 * answered yet, as here between the steps) has asked for 68 s more per retry, as the
 * kernel's rdma_cm does. */
Test(cm_sim, connect_and_disconnect_over_a_lossy_link)
{
	uint64_t dropped = 0, duplicated = 0, reordered = 0;

	for (uint64_t seed = 1; seed <= 200; seed++) {
		struct uroce_fault_cfg f = {.drop = 0.15, .dup = 0.15, .reorder = 0.15,
					    .reorder_timeout_ns = 5000000, .seed = seed};
		struct uroce_cm_conn_param cp = param(0x11, "hello"), sp = param(0x22, "world");
		struct uroce_cm_id *l, *c, *srv;
		struct sim s;

		sim_init(&s);
		sim_lossy(&s, &f);
		l = listener(&s, RDMA_PS_TCP, IBV_QPT_RC);
		c = client(&s, RDMA_PS_TCP, IBV_QPT_RC, PORT);
		cr_assert_eq(uroce_cm_connect(c, &cp, s.now), 0);
		sim_run(&s, s.now + S(600));
		cr_assert_eq(nevents(&s, 1, RDMA_CM_EVENT_CONNECT_REQUEST), 1, "seed %lu", seed);
		srv = s.h[1].ev[0].id;
		cr_assert_eq(uroce_cm_accept(srv, &sp, s.now), 0);
		sim_run(&s, s.now + S(600));
		cr_assert_eq(s.h[0].nev, 1, "seed %lu: %d events", seed, s.h[0].nev);
		cr_assert_eq(sim_last(&s, 0)->event, RDMA_CM_EVENT_CONNECT_RESPONSE, "seed %lu",
			     seed);
		cr_assert_eq(uroce_cm_accept(c, NULL, s.now), 0); /* RTU */
		sim_run(&s, s.now + S(600));
		cr_assert_eq(nevents(&s, 1, RDMA_CM_EVENT_ESTABLISHED), 1, "seed %lu", seed);
		cr_assert_eq(uroce_cm_disconnect(c, s.now), 0);
		sim_run(&s, s.now + S(600));
		cr_assert_eq(nevents(&s, 1, RDMA_CM_EVENT_DISCONNECTED), 1, "seed %lu", seed);
		cr_assert_eq(uroce_cm_disconnect(srv, s.now), 0);
		sim_run(&s, s.now + S(600));
		for (int h = 0; h < 2; h++) {
			cr_assert_eq(nevents(&s, h, RDMA_CM_EVENT_DISCONNECTED), 1, "seed %lu",
				     seed);
			cr_assert_eq(nevents(&s, h, RDMA_CM_EVENT_TIMEWAIT_EXIT), 1, "seed %lu",
				     seed);
			dropped += s.link[h].stats.dropped;
			duplicated += s.link[h].stats.duplicated;
			reordered += s.link[h].stats.reordered;
		}
		/* CONNECT_RESPONSE, DISCONNECTED, TIMEWAIT_EXIT; and CONNECT_REQUEST, ESTABLISHED,
		 * DISCONNECTED, TIMEWAIT_EXIT: nothing else, nothing twice. */
		cr_assert_eq(s.h[0].nev, 3, "seed %lu", seed);
		cr_assert_eq(s.h[1].nev, 4, "seed %lu", seed);
		uroce_cm_id_destroy(c, s.now);
		uroce_cm_id_destroy(srv, s.now);
		uroce_cm_id_destroy(l, s.now);
		sim_run(&s, s.now + S(600));
		cr_assert_eq(uroce_cm_next_deadline(s.h[0].cm), UINT64_MAX, "seed %lu", seed);
		cr_assert_eq(uroce_cm_next_deadline(s.h[1].cm), UINT64_MAX, "seed %lu", seed);
		sim_fini(&s);
	}
	/* The link did what it was asked to. */
	cr_assert_gt(dropped, 0);
	cr_assert_gt(duplicated, 0);
	cr_assert_gt(reordered, 0);
}

#define MS(x) ((uint64_t)(x) * 1000000ull)

/* An id on host 1 bound to PORT that does not listen yet. */
static struct uroce_cm_id *bound(struct sim *s, enum rdma_port_space ps, enum ibv_qp_type t)
{
	struct uroce_cm_id *b = uroce_cm_id_create(s->h[1].cm, ps, t, (void *)0x1);
	cr_assert_not_null(b);
	struct sockaddr_in a = sim_addr(1, PORT);
	cr_assert_eq(uroce_cm_bind(b, (struct sockaddr *)&a), 0);
	return b;
}

/* qperf's server binds, sends its port to the client, then listens: the REQ may come
 * first. It is held and taken at rdma_listen, as if it came then; a duplicate of it is
 * not held twice. */
Test(cm_sim, req_before_listen_is_taken_at_listen)
{
	struct sim s;
	sim_init(&s);
	struct uroce_cm_id *b = bound(&s, RDMA_PS_TCP, IBV_QPT_RC);
	struct uroce_cm_id *c = client(&s, RDMA_PS_TCP, IBV_QPT_RC, PORT);
	struct uroce_cm_conn_param cp = param(0x11, "early"), sp = param(0x22, NULL);
	cr_assert_eq(uroce_cm_connect(c, &cp, s.now), 0);
	cr_assert_eq(s.qlen, 1);
	sim_queue(&s, 1, s.q[s.qhead].mad); /* the same REQ twice */
	sim_run(&s, s.now + MS(100));
	cr_assert_eq(s.h[0].nev, 0, "no REJ while the REQ is held");
	cr_assert_eq(s.h[1].nev, 0);
	cr_assert_eq(s.sent[1][UROCE_CM_ATTR_REJ - 0x10], 0);
	cr_assert_eq(uroce_cm_counters(s.h[1].cm)->rx_req_held, 1);
	cr_assert_eq(uroce_cm_counters(s.h[1].cm)->rx_dup_req, 1);
	cr_assert_eq(uroce_cm_counters(s.h[1].cm)->rx_no_listener, 0);

	cr_assert_eq(uroce_cm_listening(s.h[1].cm), 0, "bound is not listening");
	cr_assert_eq(uroce_cm_listen(b, 8), 0);
	cr_assert_eq(uroce_cm_listening(s.h[1].cm), 1);
	cr_assert_eq(s.h[1].nev, 1, "reported by the listen itself");
	const struct uroce_cm_event *ev = sim_last(&s, 1);
	cr_assert_eq(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	cr_assert_eq(ev->listen_id, b);
	cr_assert_str_eq((const char *)ev->param.private_data, "early");
	struct uroce_cm_id *srv = ev->id;
	cr_assert_eq(uroce_cm_accept(srv, &sp, s.now), 0);
	sim_run(&s, s.now + MS(100));
	cr_assert_eq(sim_last(&s, 0)->event, RDMA_CM_EVENT_CONNECT_RESPONSE);
	cr_assert_eq(uroce_cm_accept(c, NULL, s.now), 0);
	sim_run(&s, s.now + MS(100));
	cr_assert_eq(sim_last(&s, 1)->event, RDMA_CM_EVENT_ESTABLISHED);
	cr_assert_eq(s.sent[1][UROCE_CM_ATTR_REJ - 0x10], 0);
	uroce_cm_id_destroy(c, s.now);
	uroce_cm_id_destroy(srv, s.now);
	uroce_cm_id_destroy(b, s.now);
	cr_assert_eq(uroce_cm_listening(s.h[1].cm), 0);
	sim_run(&s, s.now + S(600));
	sim_fini(&s);
}

/* Held no longer than a second (well within the REQ's response time): a bound id that
 * never listens, or is destroyed, or connects instead, gets the REJ a REQ to nobody gets. */
Test(cm_sim, req_before_listen_refused_when_the_hold_ends)
{
	for (int how = 0; how < 3; how++) {
		struct sim s;
		sim_init(&s);
		struct uroce_cm_id *b = bound(&s, RDMA_PS_TCP, IBV_QPT_RC);
		struct uroce_cm_id *c = client(&s, RDMA_PS_TCP, IBV_QPT_RC, PORT);
		struct uroce_cm_conn_param cp = param(0x11, NULL);
		uint64_t t0 = s.now;
		cr_assert_eq(uroce_cm_connect(c, &cp, s.now), 0);
		sim_run(&s, s.now + MS(900));
		cr_assert_eq(s.h[0].nev, 0, "held for now (how %d)", how);
		if (how == 0) {
			sim_run(&s, t0 + MS(1001)); /* the REJ by then, not before 900 ms */
		} else if (how == 1) {
			uroce_cm_id_destroy(b, s.now);
			b = NULL;
			sim_settle(&s);
		} else {
			struct sockaddr_in src = sim_addr(1, PORT), dst = sim_addr(0, PORT);
			struct uroce_cm_path p = sim_path(&s, 1);
			cr_assert_eq(uroce_cm_set_route(b, (struct sockaddr *)&src,
							(struct sockaddr *)&dst, &p),
				     0);
			sim_settle(&s);
		}
		cr_assert_eq(s.h[0].nev, 1, "how %d", how);
		cr_assert_eq(sim_last(&s, 0)->event, RDMA_CM_EVENT_REJECTED);
		cr_assert_eq(sim_last(&s, 0)->status, 8, "invalid service ID (how %d)", how);
		cr_assert_eq(uroce_cm_counters(s.h[1].cm)->rx_req_held, 1);
		cr_assert_eq(uroce_cm_counters(s.h[1].cm)->rx_no_listener, 1);
		cr_assert_eq(s.h[1].nev, 0, "the bound id never heard of it");
		uroce_cm_id_destroy(c, s.now);
		uroce_cm_id_destroy(b, s.now);
		sim_run(&s, s.now + S(600));
		cr_assert_eq(uroce_cm_next_deadline(s.h[1].cm), UINT64_MAX);
		sim_fini(&s);
	}
}

/* The same for UD: a SIDR_REQ before the listen is answered once the id listens. */
Test(cm_sim, sidr_req_before_listen_is_taken_at_listen)
{
	struct sim s;
	sim_init(&s);
	struct uroce_cm_id *b = bound(&s, RDMA_PS_UDP, IBV_QPT_UD);
	struct uroce_cm_id *c = client(&s, RDMA_PS_UDP, IBV_QPT_UD, PORT);
	struct uroce_cm_conn_param cp = param(0x11, NULL);
	cr_assert_eq(uroce_cm_connect(c, &cp, s.now), 0);
	sim_run(&s, s.now + MS(100));
	cr_assert_eq(s.h[0].nev, 0);
	cr_assert_eq(uroce_cm_counters(s.h[1].cm)->rx_req_held, 1);
	cr_assert_eq(uroce_cm_listen(b, 8), 0);
	cr_assert_eq(sim_last(&s, 1)->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	struct uroce_cm_conn_param sp = param(0x22, NULL);
	sp.qkey = 0x1234;
	cr_assert_eq(uroce_cm_accept(sim_last(&s, 1)->id, &sp, s.now), 0);
	sim_run(&s, s.now + MS(100));
	cr_assert_eq(sim_last(&s, 0)->event, RDMA_CM_EVENT_ESTABLISHED);
	cr_assert_eq(uroce_cm_counters(s.h[1].cm)->rx_no_listener, 0);
	uroce_cm_id_destroy(sim_last(&s, 1)->id, s.now);
	uroce_cm_id_destroy(c, s.now);
	uroce_cm_id_destroy(b, s.now);
	sim_run(&s, s.now + S(600));
	sim_fini(&s);
}

/* perftest -R's server creates, binds and listens on its data id only after its client
 * has been told to connect: a REQ to a port nothing is bound to is held too, half a
 * second at most, and taken by a listener that comes meanwhile; without one it gets the
 * usual REJ then, not before. At most 32 wait so: the next is refused at once. */
Test(cm_sim, req_to_an_unbound_port_waits_half_a_second_for_a_listener)
{
	struct sim s;
	sim_init(&s);
	struct uroce_cm_conn_param cp = param(0x11, NULL);
	struct uroce_cm_id *c = client(&s, RDMA_PS_TCP, IBV_QPT_RC, PORT);
	cr_assert_eq(uroce_cm_connect(c, &cp, s.now), 0);
	sim_run(&s, s.now + MS(100));
	cr_assert_eq(s.h[0].nev, 0, "held, not refused");
	cr_assert_eq(uroce_cm_counters(s.h[1].cm)->rx_req_held, 1);
	struct uroce_cm_id *l = listener(&s, RDMA_PS_TCP, IBV_QPT_RC);
	cr_assert_eq(sim_last(&s, 1)->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	cr_assert_eq(sim_last(&s, 1)->listen_id, l);
	uroce_cm_id_destroy(sim_last(&s, 1)->id, s.now);
	uroce_cm_id_destroy(c, s.now);
	uroce_cm_id_destroy(l, s.now);
	sim_run(&s, s.now + S(600));

	/* Nobody comes: REJ after the half second. */
	int n0 = s.h[0].nev;
	c = client(&s, RDMA_PS_TCP, IBV_QPT_RC, PORT + 1);
	uint64_t t0 = s.now;
	cr_assert_eq(uroce_cm_connect(c, &cp, s.now), 0);
	sim_run(&s, t0 + MS(450));
	cr_assert_eq(s.h[0].nev, n0, "still held at 450 ms");
	sim_run(&s, t0 + MS(501));
	cr_assert_eq(s.h[0].nev, n0 + 1);
	cr_assert_eq(sim_last(&s, 0)->event, RDMA_CM_EVENT_REJECTED);
	cr_assert_eq(sim_last(&s, 0)->status, 8, "invalid service ID");
	uroce_cm_id_destroy(c, s.now);
	sim_run(&s, s.now + S(600));

	/* 33 to closed ports: 32 held, the 33rd refused at once. */
	struct uroce_cm_id *cs[33];
	n0 = s.h[0].nev;
	for (int i = 0; i < 33; i++) {
		cs[i] = client(&s, RDMA_PS_TCP, IBV_QPT_RC, (uint16_t)(PORT + 100 + i));
		cr_assert_eq(uroce_cm_connect(cs[i], &cp, s.now), 0);
	}
	sim_run(&s, s.now + MS(100));
	cr_assert_eq(s.h[0].nev, n0 + 1, "one refused at once");
	sim_run(&s, s.now + S(1));
	cr_assert_eq(s.h[0].nev, n0 + 33, "the rest when their hold ended");
	for (int i = 0; i < 33; i++)
		uroce_cm_id_destroy(cs[i], s.now);
	sim_run(&s, s.now + S(600));
	cr_assert_eq(uroce_cm_next_deadline(s.h[1].cm), UINT64_MAX);
	sim_fini(&s);
}
