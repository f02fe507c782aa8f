/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What one tenant may do, see and guess of another's: the shipped limits, controlled
 * Q_Keys, per-QP statistics and resource lists, unpredictable identifiers, handles never
 * reused at once, privileged rdma_cm ports, and two RNICs that share nothing.
 * One file of test_rnic (rnic_host.h).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rnic_host.h"

/* A client of @p uid (an administrator when @p admin) with a UD QP; its handle (its QPN in
 * *@p qpn, unless NULL). */
static uint32_t ud_qp_of(struct host *h, struct uroce_rnic_client **c, uid_t uid, bool admin,
			 uint32_t *qpn)
{
	const struct uroce_rnic_peer peer = {.pid = getpid(), .uid = uid, .gid = 1000,
					     .admin = admin};
	struct uroce_ctrl_hello_req hello_req = {.version = UROCE_CTRL_VERSION, .name = "qk"};
	struct uroce_ctrl_create_cq_req cq_req = {.cqe = 16};
	struct uroce_ctrl_create_cq_rep cq_rep;
	struct uroce_ctrl_create_qp_req qp_req = {
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
	struct uroce_ctrl_create_qp_rep qp_rep;

	*c = uroce_rnic_client_new(h->nic, &peer, h);
	cr_assert_not_null(*c);
	cr_assert_eq(request(h, *c, UROCE_CTRL_HELLO, &hello_req, sizeof(hello_req)), 0);
	cr_assert_eq(request(h, *c, UROCE_CTRL_ALLOC_PD, NULL, 0), 0);
	qp_req.pd = handle_of(h);
	cr_assert_eq(request(h, *c, UROCE_CTRL_CREATE_CQ, &cq_req, sizeof(cq_req)), 0);
	memcpy(&cq_rep, reply_payload(h), sizeof(cq_rep));
	qp_req.send_cq = qp_req.recv_cq = cq_rep.cq;
	cr_assert_eq(request(h, *c, UROCE_CTRL_CREATE_QP, &qp_req, sizeof(qp_req)), 0);
	memcpy(&qp_rep, reply_payload(h), sizeof(qp_rep));
	if (qpn)
		*qpn = qp_rep.qpn;
	return qp_rep.qp;
}

/* Issue 43 (8): with every shipped [limits] key 0, one user took all of
 * control.max_clients' connections and another user's was refused. By default a user
 * holds a quarter of them: beyond, HELLO fails with EAGAIN (as the rdma cgroup), and
 * another user still connects. */
Test(rnic, the_shipped_limits_leave_connections_for_others)
{
	struct uroce_ctrl_hello_req req = {.version = UROCE_CTRL_VERSION, .name = "greedy"};
	const struct uroce_rnic_peer greedy = {.pid = getpid(), .uid = 4244, .gid = 4244};
	struct uroce_rnic_client *c[65];
	struct host h;

	host_init(&h, 0x38, 38);
	for (unsigned int i = 0; i < 64; i++)
		c[i] = hello_as(&h, 4244);
	c[64] = uroce_rnic_client_new(h.nic, &greedy, &h);
	cr_assert_not_null(c[64]);
	cr_assert_eq(request(&h, c[64], UROCE_CTRL_HELLO, &req, sizeof(req)), -EAGAIN);
	uroce_rnic_client_free(c[64]);
	uroce_rnic_client_free(hello_as(&h, 4245));
	for (unsigned int i = 0; i < 64; i++)
		uroce_rnic_client_free(c[i]);
	host_fini(&h);
}

static int modify_qkey(struct host *h, struct uroce_rnic_client *c, uint32_t qp, uint32_t qkey)
{
	struct uroce_ctrl_modify_qp_req req = {
		.qp = qp,
		.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
		.attr = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = qkey}};

	return request(h, c, UROCE_CTRL_MODIFY_QP, &req, sizeof(req));
}

/* A controlled Q_Key (high bit set: the GSI's is 0x80010000) lets a QP forge CM messages
 * for other tenants' connections: Linux gives it to CAP_NET_RAW only, uroce to root and
 * the administrators. Anyone may have any other Q_Key. */
Test(rnic, a_controlled_qkey_needs_privilege)
{
	struct host h;
	struct uroce_rnic_client *user, *admin, *root;
	uint32_t qp;

	host_init(&h, 1, 1);
	qp = ud_qp_of(&h, &user, 1000, false, NULL);
	cr_assert_eq(modify_qkey(&h, user, qp, 0x80010000), -EPERM);
	cr_assert_eq(stat_of(&h, user, "daemon.qkey_refused"), 1);
	cr_assert_eq(modify_qkey(&h, user, qp, 0x11111111), 0, "an ordinary Q_Key");
	qp = ud_qp_of(&h, &admin, 1000, true, NULL);
	cr_assert_eq(modify_qkey(&h, admin, qp, 0x80010000), 0);
	qp = ud_qp_of(&h, &root, 0, false, NULL);
	cr_assert_eq(modify_qkey(&h, root, qp, 0x80000001), 0);
	cr_assert_eq(stat_of(&h, root, "daemon.qkey_refused"), 1);
	host_fini(&h);
}

/* A QPN and the pid behind it are what a forged packet is aimed with: `uroce stat -q`
 * shows a user the QPs of its own processes, and the administrator every one. */
Test(rnic, per_qp_statistics_show_a_user_its_own_qps)
{
	struct host h;
	struct uroce_rnic_client *a, *b, *admin;
	uint32_t qpn_a, qpn_b;
	char name_a[48], name_b[48];

	host_init(&h, 1, 1);
	ud_qp_of(&h, &a, 1000, false, &qpn_a);
	ud_qp_of(&h, &b, 2000, false, &qpn_b);
	ud_qp_of(&h, &admin, 3000, true, NULL);
	snprintf(name_a, sizeof(name_a), "qp.%u.state", qpn_a);
	snprintf(name_b, sizeof(name_b), "qp.%u.state", qpn_b);
	cr_assert_neq(stat_of_flags(&h, a, UROCE_CTRL_STATS_PER_QP, name_a), UINT64_MAX);
	cr_assert_eq(stat_of_flags(&h, a, UROCE_CTRL_STATS_PER_QP, name_b), UINT64_MAX,
		     "user 1000 sees user 2000's QP");
	cr_assert_eq(stat_of_flags(&h, b, UROCE_CTRL_STATS_PER_QP, name_a), UINT64_MAX);
	cr_assert_neq(stat_of_flags(&h, admin, UROCE_CTRL_STATS_PER_QP, name_a), UINT64_MAX);
	cr_assert_neq(stat_of_flags(&h, admin, UROCE_CTRL_STATS_PER_QP, name_b), UINT64_MAX);
	cr_assert_eq(stat_of(&h, a, "objects.qp"), 3u, "the device's counts are everyone's");
	host_fini(&h);
}

/* What a peer can guess it can aim forged packets with. Without a seed, the QPN base and
 * the key bytes come from getrandom(): two RNICs made in the same second by the same
 * process (the seed was once the time and pid) share none; with one, a run repeats. */
Test(rnic, identifiers_are_unpredictable_without_a_seed)
{
	for (uint64_t seed = 0; seed <= 7; seed += 7) {
		uint32_t qpn[2], rkey[2][4];
		struct uroce_rnic_client *c;

		for (int n = 0; n < 2; n++) {
			struct host h;

			host_init_cfg(&h, 1, 1, false, seed);
			ud_qp_of(&h, &c, 1000, false, &qpn[n]);
			for (int i = 0; i < 4; i++)
				cr_assert_eq(reg_mr_of(&h, c, 4096, &rkey[n][i]), 0);
			host_fini(&h);
		}
		if (seed)
			cr_assert(qpn[0] == qpn[1] && !memcmp(rkey[0], rkey[1], sizeof(rkey[0])),
				  "seed %llu: the same identifiers each run",
				  (unsigned long long)seed);
		else /* the same QPN and four key bytes by chance: 2^-44 */
			cr_assert(qpn[0] != qpn[1] || memcmp(rkey[0], rkey[1], sizeof(rkey[0])),
				  "no seed: QPN 0x%x and rkeys 0x%x.. both times", qpn[0],
				  rkey[0][0]);
	}
}

/* No global state: two RNICs in one process keep their clients, objects and counters
 * apart (the daemon core as a library, not a singleton). */
Test(rnic, two_rnics_share_nothing)
{
	struct host a, b;
	struct uroce_rnic_client *ca, *cb;
	struct uroce_ctrl_handle pd;

	host_init(&a, 1, 1);
	host_init(&b, 2, 2);
	ca = hello(&a);
	cb = hello(&b);
	cr_assert_eq(request(&a, ca, UROCE_CTRL_ALLOC_PD, NULL, 0), 0);
	memcpy(&pd, reply_payload(&a), sizeof(pd));
	cr_assert_eq(stat_of(&a, ca, "objects.pd"), 1u);
	cr_assert_eq(stat_of(&b, cb, "objects.pd"), 0u);
	cr_assert_eq(stat_of(&a, ca, "clients"), 1u);
	cr_assert_eq(stat_of(&b, cb, "clients"), 1u);
	cr_assert_eq(stat_of(&a, ca, "daemon.host_counter"), 7u, "the host's counters too");
	/* A handle names an object of its own client only. */
	cr_assert_eq(request(&b, cb, UROCE_CTRL_DEALLOC_PD, &pd, sizeof(pd)), -EINVAL);
	cr_assert_eq(request(&a, ca, UROCE_CTRL_DEALLOC_PD, &pd, sizeof(pd)), 0);
	cr_assert_eq(stat_of(&a, ca, "objects.pd"), 0u);
	/* Each RNIC has its own GID table: 10.0.0.1 on one, 10.0.0.2 on the other. */
	{
		struct uroce_ctrl_query_gid_req q = {.port = 1, .index = 1};
		struct uroce_ctrl_query_gid_rep ga, gb;

		cr_assert_eq(request(&a, ca, UROCE_CTRL_QUERY_GID, &q, sizeof(q)), 0);
		memcpy(&ga, reply_payload(&a), sizeof(ga));
		cr_assert_eq(request(&b, cb, UROCE_CTRL_QUERY_GID, &q, sizeof(q)), 0);
		memcpy(&gb, reply_payload(&b), sizeof(gb));
		cr_assert_eq(ga.gid.raw[15], 1);
		cr_assert_eq(gb.gid.raw[15], 2);
	}
	uroce_rnic_client_free(ca);
	cr_assert_eq(stat_of(&b, cb, "clients"), 1u, "freeing a client of one leaves the other");
	host_fini(&a);
	host_fini(&b);
}

/* A handle names one object for its life (rnic_obj_add): the PD made after another was
 * deallocated takes its slot under another handle, and the old handle names nothing, not
 * the new PD. Each type goes through the same table; a CQ shows the queue kinds. */
Test(rnic, a_destroyed_objects_handle_never_names_the_next)
{
	struct uroce_ctrl_create_cq_req cq = {.cqe = 16};
	struct uroce_ctrl_handle req;
	struct uroce_rnic_client *c;
	uint32_t old, next;
	struct host h;

	host_init(&h, 0x45, 45);
	c = hello(&h);
	cr_assert_eq(request(&h, c, UROCE_CTRL_ALLOC_PD, NULL, 0), 0);
	old = handle_of(&h);
	req.handle = old;
	cr_assert_eq(request(&h, c, UROCE_CTRL_DEALLOC_PD, &req, sizeof(req)), 0);
	cr_assert_eq(request(&h, c, UROCE_CTRL_ALLOC_PD, NULL, 0), 0);
	next = handle_of(&h);
	cr_assert_neq(next, old, "the new PD has the old one's handle");
	cr_assert_eq(request(&h, c, UROCE_CTRL_DEALLOC_PD, &req, sizeof(req)), -EINVAL,
		     "the old handle deallocated the new PD");
	req.handle = next;
	cr_assert_eq(request(&h, c, UROCE_CTRL_DEALLOC_PD, &req, sizeof(req)), 0);

	cr_assert_eq(request(&h, c, UROCE_CTRL_CREATE_CQ, &cq, sizeof(cq)), 0);
	old = handle_of(&h);
	req.handle = old;
	cr_assert_eq(request(&h, c, UROCE_CTRL_DESTROY_CQ, &req, sizeof(req)), 0);
	cr_assert_eq(request(&h, c, UROCE_CTRL_CREATE_CQ, &cq, sizeof(cq)), 0);
	next = handle_of(&h);
	cr_assert_neq(next, old);
	cr_assert_eq(request(&h, c, UROCE_CTRL_DESTROY_CQ, &req, sizeof(req)), -EINVAL);
	req.handle = next;
	cr_assert_eq(request(&h, c, UROCE_CTRL_DESTROY_CQ, &req, sizeof(req)), 0);
	host_fini(&h);
}

/* RES_LIST rows of @p type as @p c sees them, starting at @p start: their count, the
 * reply's `next` in *@p next, and the rows copied to @p rows (room for @p max). */
static uint32_t res_list(struct host *h, struct uroce_rnic_client *c, uint32_t type,
			 uint32_t start, uint32_t *next, struct uroce_ctrl_res_row *rows,
			 uint32_t max)
{
	struct uroce_ctrl_res_list_req req = {.type = type, .start = start};
	struct uroce_ctrl_res_list_rep rep;

	cr_assert_eq(request(h, c, UROCE_CTRL_RES_LIST, &req, sizeof(req)), 0);
	memcpy(&rep, reply_payload(h), sizeof(rep));
	cr_assert_leq(rep.count, max);
	memcpy(rows, (const uint8_t *)reply_payload(h) + sizeof(rep),
	       rep.count * sizeof(*rows));
	*next = rep.next;
	return rep.count;
}

/* `uroce res show`: each object a row with its process; a user sees its own uid's, the
 * administrator every one (as the per-QP counters); a long listing comes in pages. */
Test(rnic, res_list_shows_each_object_with_its_process)
{
	struct host h;
	struct uroce_rnic_client *a, *b, *admin;
	struct uroce_ctrl_res_row rows[400];
	struct uroce_ctrl_res_list_req bad = {.type = 9};
	uint32_t qpn_a, qpn_b, next, n, seen;

	host_init(&h, 1, 1);
	ud_qp_of(&h, &a, 1000, false, &qpn_a);
	ud_qp_of(&h, &b, 2000, false, &qpn_b);
	ud_qp_of(&h, &admin, 3000, true, NULL);

	n = res_list(&h, a, UROCE_CTRL_RES_QP, 0, &next, rows, 400);
	cr_assert_eq(n, 1u, "user 1000 sees its own QP only");
	cr_assert_eq(next, 0u);
	cr_assert_eq(rows[0].qp.lqpn, qpn_a);
	cr_assert_eq(rows[0].qp.type, IBV_QPT_UD);
	cr_assert_eq(rows[0].qp.state, IBV_QPS_RESET);
	cr_assert_eq(rows[0].pid, (uint32_t)getpid());
	cr_assert_str_eq(rows[0].comm, "qk");
	cr_assert_neq(rows[0].qp.send_cq, 0u);
	n = res_list(&h, admin, UROCE_CTRL_RES_QP, 0, &next, rows, 400);
	cr_assert_eq(n, 3u, "the administrator sees every QP");
	cr_assert_eq(rows[1].qp.lqpn, qpn_b);

	n = res_list(&h, a, UROCE_CTRL_RES_CQ, 0, &next, rows, 400);
	cr_assert_eq(n, 1u);
	cr_assert_eq(rows[0].cq.users, 1u, "one QP completes into it");
	cr_assert_geq(rows[0].cq.cqe, 16u);
	n = res_list(&h, a, UROCE_CTRL_RES_PD, 0, &next, rows, 400);
	cr_assert_eq(n, 1u);
	cr_assert_eq(rows[0].pd.refs, 1u);
	cr_assert_eq(res_list(&h, a, UROCE_CTRL_RES_MR, 0, &next, rows, 400), 0u);
	cr_assert_eq(request(&h, a, UROCE_CTRL_RES_LIST, &bad, sizeof(bad)), -EINVAL);

	/* More PDs than one reply holds: the pages add up to every one, once. */
	for (int i = 0; i < 300; i++)
		cr_assert_eq(request(&h, admin, UROCE_CTRL_ALLOC_PD, NULL, 0), 0);
	seen = 0;
	next = 0;
	do {
		uint32_t start = next;

		n = res_list(&h, admin, UROCE_CTRL_RES_PD, start, &next, rows, 400);
		cr_assert(next == 0 || next == start + n, "page at %u: %u rows, next %u", start,
			  n, next);
		seen += n;
	} while (next);
	cr_assert_eq(seen, 303u);
	host_fini(&h);
}

/* A client of @p uid with an rdma_cm id (TCP port space) on a channel of its own. */
static uint32_t cm_id_of(struct host *h, struct uroce_rnic_client **c, uid_t uid)
{
	const struct uroce_rnic_peer peer = {.pid = getpid(), .uid = uid, .gid = uid};
	struct uroce_ctrl_hello_req hello_req = {.version = UROCE_CTRL_VERSION, .name = "cm"};
	struct uroce_ctrl_cm_create_id_req id_req = {.ps = 0x0106 /* RDMA_PS_TCP */,
						     .qp_type = IBV_QPT_RC};

	*c = uroce_rnic_client_new(h->nic, &peer, h);
	cr_assert_not_null(*c);
	cr_assert_eq(request(h, *c, UROCE_CTRL_HELLO, &hello_req, sizeof(hello_req)), 0);
	cr_assert_eq(request(h, *c, UROCE_CTRL_CM_CREATE_CHANNEL, NULL, 0), 0);
	id_req.channel = handle_of(h);
	cr_assert_eq(request(h, *c, UROCE_CTRL_CM_CREATE_ID, &id_req, sizeof(id_req)), 0);
	return handle_of(h);
}

static int cm_bind_port(struct host *h, struct uroce_rnic_client *c, uint32_t id, uint32_t cmd,
			uint16_t port)
{
	struct uroce_ctrl_cm_addr_req req = {.id = id, .timeout_ms = 1000};
	struct sockaddr_in *src = (struct sockaddr_in *)&req.src;
	struct sockaddr_in *dst = (struct sockaddr_in *)&req.dst;

	src->sin_family = AF_INET;
	src->sin_port = htons(port);
	dst->sin_family = AF_INET;
	dst->sin_addr.s_addr = htonl(0x0a000002);
	return request(h, c, cmd, &req, sizeof(req));
}

/* Linux's cma_get_port(): a port below 1024 wants CAP_NET_BIND_SERVICE, EACCES otherwise;
 * here, a client the kernel says is root. rdma_resolve_addr() with a source port binds it
 * too. */
Test(rnic, cm_ports_below_1024_are_roots)
{
	struct uroce_rnic_client *user, *root;
	struct host h;
	uint32_t uid_id, root_id;

	host_init(&h, 1, 1);
	uid_id = cm_id_of(&h, &user, 1000);
	cr_expect_eq(cm_bind_port(&h, user, uid_id, UROCE_CTRL_CM_BIND, 100), -EACCES);
	cr_expect_eq(cm_bind_port(&h, user, uid_id, UROCE_CTRL_CM_BIND, 1023), -EACCES);
	cr_expect_eq(cm_bind_port(&h, user, uid_id, UROCE_CTRL_CM_RESOLVE_ADDR, 100), -EACCES);
	cr_expect_eq(cm_bind_port(&h, user, uid_id, UROCE_CTRL_CM_BIND, 1024), 0);
	uid_id = cm_id_of(&h, &user, 1000);
	cr_expect_eq(cm_bind_port(&h, user, uid_id, UROCE_CTRL_CM_BIND, 0), 0, "ephemeral");

	root_id = cm_id_of(&h, &root, 0);
	cr_expect_eq(cm_bind_port(&h, root, root_id, UROCE_CTRL_CM_BIND, 100), 0);
	host_fini(&h);
}
