/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Raw packet QPs and flow steering (suite raw).
 * One file of test_verbs_api (verbs_api_fixture.h).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "verbs_api_fixture.h"

/*
 * Raw packet QPs and flow steering through the verbs API: frames one raw packet QP sends
 * to the port's own MAC come back through the daemon's loopback path as from the wire,
 * and the flow rules give them to another. The daemon runs with a known MAC (verbs has
 * no call that tells a port's MAC). Creating one needs CAP_NET_RAW, as on Linux.
 */
#define RAW_MAC "02:00:5e:10:00:01"
static const uint8_t raw_mac[6] = {0x02, 0x00, 0x5e, 0x10, 0x00, 0x01};

static void raw_init(void)
{
	char why[512];

	check_library();
	if (vfx_reference())
		cr_skip_test("rxe has no raw packet QPs");
	if (vfx_daemon_start(&dmn, IPV4, "lcore.idle_yield_us=2 control.socket_mode=0666 "
				   "host.mac=" RAW_MAC, why, sizeof(why)) != 0)
		cr_assert_fail("no uroced: %s", why);
	open_ctx();
}

TestSuite(raw, .init = raw_init, .fini = suite_fini, .timeout = 60);

static struct ibv_qp *raw_qp_make(struct ibv_pd *qpd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RAW_PACKET,
				      .cap = {.max_send_wr = 8, .max_recv_wr = 8,
					      .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
	struct ibv_qp *qp = ibv_create_qp(qpd, &ia);

	cr_assert_not_null(qp, "raw packet QP: %s", strerror(errno));
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL, "RESET->INIT takes the port");
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT), 0);
	a.qp_state = IBV_QPS_RTR;
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	return qp;
}

/* An IPv4 UDP frame to the port's MAC, 10.9.1.1:@dport, checksums left 0; @return its
 * length. */
static uint32_t raw_udp_frame(uint8_t *f, uint16_t dport, uint32_t plen)
{
	uint32_t ip_len = 20 + 8 + plen;

	memset(f, 0, 14 + ip_len);
	memcpy(f, raw_mac, 6);
	f[6] = 0x02, f[11] = 0x77;
	f[12] = 0x08;
	f[14] = 0x45;
	f[16] = (uint8_t)(ip_len >> 8), f[17] = (uint8_t)ip_len;
	f[22] = 64, f[23] = 17;
	f[26] = 10, f[27] = 9, f[28] = 1, f[29] = 2;
	f[30] = 10, f[31] = 9, f[32] = 1, f[33] = 1;
	f[34] = 0x30, f[35] = 0x39;
	f[36] = (uint8_t)(dport >> 8), f[37] = (uint8_t)dport;
	f[38] = (uint8_t)((8 + plen) >> 8), f[39] = (uint8_t)(8 + plen);
	fill(f + 42, plen, dport);
	return 14 + ip_len;
}

static struct ibv_flow *raw_udp_flow(struct ibv_qp *qp, uint16_t dport)
{
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_eth eth;
		struct ibv_flow_spec_ipv4 ip;
		struct ibv_flow_spec_tcp_udp udp;
	} r; /* each spec a multiple of 4 bytes: no padding between them */

	memset(&r, 0, sizeof(r));
	/* .size left 0, as pyverbs leaves it: rdma-core reads the specs' own sizes. */
	r.attr = (struct ibv_flow_attr){.type = IBV_FLOW_ATTR_NORMAL, .num_of_specs = 3,
					.port = 1};
	r.eth.type = IBV_FLOW_SPEC_ETH;
	r.eth.size = sizeof(r.eth);
	memcpy(r.eth.val.dst_mac, raw_mac, 6);
	memset(r.eth.mask.dst_mac, 0xff, 6);
	r.ip.type = IBV_FLOW_SPEC_IPV4;
	r.ip.size = sizeof(r.ip);
	r.ip.val.dst_ip = htonl(0x0a090101);
	r.ip.mask.dst_ip = 0xffffffff;
	r.udp.type = IBV_FLOW_SPEC_UDP;
	r.udp.size = sizeof(r.udp);
	r.udp.val.dst_port = htons(dport);
	r.udp.mask.dst_port = 0xffff;
	return ibv_create_flow(qp, &r.attr);
}

/* One raw packet QP sends, a rule gives the frame to the other: whole, with the
 * checksums the sender asked the device for (IBV_SEND_IP_CSUM) and IBV_WC_IP_CSUM_OK;
 * a frame no rule names is not delivered; a bad checksum arrives without the flag. */
Test(raw, frames_reach_the_qp_their_flow_names)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_qp *tx, *rx;
	struct ibv_flow *flow;
	struct mbuf s, r;
	struct ibv_wc wc;
	uint32_t len;

	cr_assert_not_null(cq);
	tx = raw_qp_make(pd, cq);
	rx = raw_qp_make(pd, cq);
	mb_make(&s, 4096);
	mb_make(&r, 4096);
	flow = raw_udp_flow(rx, 5000);
	cr_assert_not_null(flow, "ibv_create_flow: %s", strerror(errno));
	errno = 0;
	cr_assert_eq(ibv_destroy_qp(rx), EBUSY, "a QP a flow steers to: the flow goes first");

	len = raw_udp_frame(s.p, 5000, 200);
	{
		struct ibv_sge rs = sge_of(&r, 0, 2048), ss = sge_of(&s, 0, len);
		struct ibv_send_wr wr = {.wr_id = 1, .sg_list = &ss, .num_sge = 1,
					 .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED | IBV_SEND_IP_CSUM};

		post_recv_ok(rx, &rs, 1, 2);
		post_send_ok(tx, &wr);
	}
	expect_ok(cq, 1, IBV_WC_SEND, &wc);
	expect_ok(cq, 2, IBV_WC_RECV, &wc);
	cr_assert_eq(wc.byte_len, len);
	cr_assert_eq(wc.qp_num, rx->qp_num);
	cr_assert(wc.wc_flags & IBV_WC_IP_CSUM_OK, "the device's checksums verify");
	cr_assert(r.p[24] | r.p[25], "IPv4 header checksum filled in");
	cr_assert(r.p[40] | r.p[41], "UDP checksum filled in");
	cr_assert_eq(memcmp(r.p, s.p, 24), 0);
	cr_assert_eq(memcmp(r.p + 26, s.p + 26, 14), 0);
	cr_assert_eq(memcmp(r.p + 42, s.p + 42, len - 42), 0);

	/* Without IP_CSUM the zero checksums go as they are: no CSUM_OK. */
	{
		struct ibv_sge rs = sge_of(&r, 2048, 2048), ss = sge_of(&s, 0, len);
		struct ibv_send_wr wr = {.wr_id = 3, .sg_list = &ss, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};

		post_recv_ok(rx, &rs, 1, 4);
		post_send_ok(tx, &wr);
		expect_ok(cq, 3, IBV_WC_SEND, &wc);
		expect_ok(cq, 4, IBV_WC_RECV, &wc);
		cr_assert(!(wc.wc_flags & IBV_WC_IP_CSUM_OK));
		cr_assert_eq(memcmp(r.p + 2048, s.p, len), 0, "the frame as it was sent");
	}

	/* Port 5001: no rule takes it; rx's receive stays posted. */
	len = raw_udp_frame(s.p, 5001, 64);
	{
		struct ibv_sge rs = sge_of(&r, 0, 2048), ss = sge_of(&s, 0, len);
		struct ibv_send_wr wr = {.wr_id = 5, .sg_list = &ss, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};

		post_recv_ok(rx, &rs, 1, 6);
		post_send_ok(tx, &wr);
		expect_ok(cq, 5, IBV_WC_SEND, &wc);
		cr_assert_eq(poll_one(cq, &wc, 300), 0, "a frame no rule names arrived (wr %llu)",
			     (unsigned long long)wc.wr_id);
	}
	/* What a raw packet QP refuses to send: a frame shorter than its Ethernet header, an
	 * RDMA WRITE. */
	{
		struct ibv_sge ss = sge_of(&s, 0, 13);
		struct ibv_send_wr wr = {.wr_id = 7, .sg_list = &ss, .num_sge = 1,
					 .opcode = IBV_WR_SEND}, *bad;

		cr_assert_eq(ibv_post_send(tx, &wr, &bad), EINVAL);
		ss.length = 64;
		wr.opcode = IBV_WR_RDMA_WRITE;
		cr_assert_eq(ibv_post_send(tx, &wr, &bad), EINVAL);
	}
	cr_assert_eq(ibv_destroy_flow(flow), 0);
	cr_assert_eq(ibv_destroy_qp(rx), 0, "its flow gone, the QP may go (the posted WR with it)");
	cr_assert_eq(ibv_destroy_qp(tx), 0);
	mb_free(&s);
	mb_free(&r);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

/* What ibv_create_flow refuses: a QP that is not a raw packet QP (EINVAL), an action or a
 * tunnel's inner headers (EOPNOTSUPP), and a rule the QP's process may not see: nothing
 * crosses into another client's QP. */
Test(raw, flow_errors)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
				      .cap = {.max_send_wr = 1, .max_recv_wr = 1,
					      .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *ud, *raw;
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_action_drop drop;
	} r = {.attr = {.type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(r), .num_of_specs = 1,
			.port = 1},
	       .drop = {.type = IBV_FLOW_SPEC_ACTION_DROP, .size = sizeof(r.drop)}};

	struct ibv_device_attr_ex ax;

	/* What the device says of it, as mlx5 says it. */
	cr_assert(dattr.device_cap_flags & IBV_DEVICE_RAW_IP_CSUM);
	cr_assert(dattr.device_cap_flags & IBV_DEVICE_MANAGED_FLOW_STEERING);
	cr_assert_eq(ibv_query_device_ex(ctx, NULL, &ax), 0);
	cr_assert(ax.raw_packet_caps & IBV_RAW_PACKET_CAP_IP_CSUM);
	cr_assert_not_null(cq);
	ud = ibv_create_qp(pd, &ia);
	cr_assert_not_null(ud);
	raw = raw_qp_make(pd, cq);
	errno = 0;
	cr_assert_null(raw_udp_flow(ud, 5000));
	cr_assert_eq(errno, EINVAL, "a UD QP: errno %d", errno);
	errno = 0;
	cr_assert_null(ibv_create_flow(raw, &r.attr));
	cr_assert_eq(errno, EOPNOTSUPP, "a drop action: errno %d", errno);
	r.drop.size = 0;
	errno = 0;
	cr_assert_null(ibv_create_flow(raw, &r.attr));
	cr_assert_eq(errno, EINVAL, "a spec of size 0: errno %d", errno);
	cr_assert_eq(ibv_destroy_qp(raw), 0);
	cr_assert_eq(ibv_destroy_qp(ud), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

/* A raw packet QP in a process without CAP_NET_RAW. */
void child_raw_qp(int fd)
{
	struct ibv_cq *cq;
	struct ibv_pd *cpd = child_pd(&cq);
	struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RAW_PACKET,
				      .cap = {.max_send_wr = 1, .max_recv_wr = 1,
					      .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp;

	if (!cpd) {
		report(fd, -1, errno);
		return;
	}
	errno = 0;
	qp = ibv_create_qp(cpd, &ia);
	report(fd, qp != NULL, qp ? 0 : errno);
}

/* Its frames and flows could read and forge any tenant's traffic: Linux gives raw packet
 * QPs only to CAP_NET_RAW, and so does the daemon (EPERM), while the same user's RC QPs
 * are served. */
Test(raw, needs_cap_net_raw)
{
	struct user_proc u;

	user_start(&u, UID_A, RLIM_INFINITY, child_raw_qp);
	cr_assert_eq(u.rep.made, 0, "a raw packet QP without CAP_NET_RAW");
	cr_assert_eq(u.rep.err, EPERM, "%s", strerror(u.rep.err));
	cr_assert_eq(user_done(&u), 0);
	user_start(&u, UID_A, RLIM_INFINITY, child_qps_until_refused);
	cr_assert_eq(u.rep.made, 2 * LIMIT_QPS, "the same user's RC QPs: %d", u.rep.made);
	cr_assert_eq(user_done(&u), 0);
}
