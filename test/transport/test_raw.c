/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Raw packet QPs and flow steering (raw.c, flow.c), through the public API alone: a
 * device whose tx callback keeps every frame, frames handed to uroce_tp_flow_rx as the
 * daemon hands them, and what lands in the QPs' receive WQEs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "uroce_transport.h"

#define BUF 16384

static struct {
	uint8_t f[UROCE_TP_RAW_FRAME_MAX];
	uint32_t len, n;
	int busy; /* answer -EAGAIN to this many more calls */
} g_tx;

static int keep_tx(void *ctx, const uint8_t *frame, uint32_t len)
{
	(void)ctx;
	if (g_tx.busy) {
		g_tx.busy--;
		return -EAGAIN;
	}
	cr_assert_leq(len, sizeof(g_tx.f));
	memcpy(g_tx.f, frame, len);
	g_tx.len = len;
	g_tx.n++;
	return 0;
}

struct raw_env {
	struct uroce_tp_dev *dev;
	struct uroce_tp_pd *pd;
	struct uroce_tp_mr *mr;
	struct uroce_tp_cq *scq, *rcq;
	uint8_t *mem;
	uint32_t lkey;
};

static void env_up(struct raw_env *e, uint32_t eth_mtu)
{
	struct uroce_tp_dev_cfg cfg;
	uint32_t rkey;

	memset(&g_tx, 0, sizeof(g_tx));
	uroce_tp_dev_cfg_init(&cfg);
	cfg.mac[0] = 0x02;
	cfg.mac[5] = 1;
	cfg.gid[0].raw[10] = cfg.gid[0].raw[11] = 0xff;
	cfg.gid[0].raw[12] = 10;
	cfg.gid[0].raw[15] = 1;
	cfg.gid_count = 1;
	cfg.tx = keep_tx;
	cfg.eth_mtu = eth_mtu;
	e->dev = uroce_tp_dev_create(&cfg);
	cr_assert_not_null(e->dev);
	e->pd = uroce_tp_alloc_pd(e->dev);
	e->mem = calloc(1, BUF);
	cr_assert(e->pd && e->mem);
	e->mr = uroce_tp_reg_mr(e->pd, (uintptr_t)e->mem, e->mem, BUF, IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(e->mr);
	uroce_tp_mr_keys(e->mr, &e->lkey, &rkey);
	e->scq = uroce_tp_create_cq(e->dev, 64);
	e->rcq = uroce_tp_create_cq(e->dev, 64);
	cr_assert(e->scq && e->rcq);
}

static void env_down(struct raw_env *e)
{
	/* Whatever the test left (QPs, flows) goes with the device: ASan sees any leak. */
	uroce_tp_dev_destroy(e->dev);
	free(e->mem);
}

static struct uroce_tp_qp *raw_qp(struct raw_env *e, enum ibv_qp_state to)
{
	struct uroce_tp_qp_init init = {.qp_type = IBV_QPT_RAW_PACKET, .send_cq = e->scq,
					.recv_cq = e->rcq, .cap = {.max_send_wr = 8,
								   .max_recv_wr = 8,
								   .max_send_sge = 2,
								   .max_recv_sge = 2,
								   .max_inline_data = 64}};
	struct uroce_tp_qp *qp = uroce_tp_create_qp(e->pd, &init);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};

	cr_assert_not_null(qp, "raw packet QP: errno %d", errno);
	if (to >= IBV_QPS_INIT)
		cr_assert_eq(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT, NULL, 0), 0);
	a.qp_state = IBV_QPS_RTR;
	if (to >= IBV_QPS_RTR)
		cr_assert_eq(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE, NULL, 0), 0);
	a.qp_state = IBV_QPS_RTS;
	if (to >= IBV_QPS_RTS)
		cr_assert_eq(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE, NULL, 0), 0);
	return qp;
}

/* An IPv4 UDP frame from 10.0.0.2:sport to 10.0.0.1:dport with @plen payload bytes, both
 * checksums computed (uroce_wire_csum_fill). */
static uint32_t udp4_frame(uint8_t *f, uint16_t sport, uint16_t dport, uint32_t plen,
			   bool mcast)
{
	static const uint8_t dmac[6] = {0x02, 0, 0, 0, 0, 1}, mdmac[6] = {0x01, 0, 0x5e, 0, 0, 9};
	uint32_t ip_len = 20 + 8 + plen;

	memset(f, 0, 14 + ip_len);
	memcpy(f, mcast ? mdmac : dmac, 6);
	f[6] = 0x02;
	f[11] = 2;
	f[12] = 0x08;
	f[14] = 0x45;
	f[16] = (uint8_t)(ip_len >> 8);
	f[17] = (uint8_t)ip_len;
	f[22] = 64;
	f[23] = 17;
	f[26] = 10, f[29] = 2; /* source 10.0.0.2 */
	f[30] = 10, f[33] = 1; /* destination 10.0.0.1 */
	f[34] = (uint8_t)(sport >> 8), f[35] = (uint8_t)sport;
	f[36] = (uint8_t)(dport >> 8), f[37] = (uint8_t)dport;
	f[38] = (uint8_t)((8 + plen) >> 8), f[39] = (uint8_t)(8 + plen);
	for (uint32_t i = 0; i < plen; i++)
		f[42 + i] = (uint8_t)(i * 7 + 1);
	uroce_wire_csum_fill(f, 14 + ip_len);
	return 14 + ip_len;
}

static void post_frame(struct uroce_tp_qp *qp, struct raw_env *e, uint64_t id, uint32_t off,
		       uint32_t len, unsigned int flags, int want)
{
	struct uroce_tp_send_wqe w;

	memset(&w, 0, sizeof(w));
	w.wr_id = id;
	w.opcode = IBV_WR_SEND;
	w.send_flags = IBV_SEND_SIGNALED | flags;
	w.num_sge = 1;
	w.sg_list[0] = (struct uroce_tp_sge){(uintptr_t)e->mem + off, len, e->lkey};
	cr_assert_eq(uroce_tp_post_send(qp, &w, 0), want, "post_send %u bytes", len);
}

static void post_rwqe(struct uroce_tp_qp *qp, struct raw_env *e, uint64_t id, uint32_t off,
		      uint32_t len)
{
	struct uroce_tp_recv_wqe r = {.wr_id = id, .num_sge = 1};

	r.sg_list[0] = (struct uroce_tp_sge){(uintptr_t)e->mem + off, len, e->lkey};
	cr_assert_eq(uroce_tp_post_recv(qp, &r), 0);
}

static int poll1(struct uroce_tp_cq *cq, struct ibv_wc *wc)
{
	return uroce_tp_poll_cq(cq, 1, wc);
}

/* The frame leaves as it was posted, the checksums filled in only with IBV_SEND_IP_CSUM,
 * and completes when sent; a full link delays it, and nothing is lost. */
Test(raw, sends_whole_frames)
{
	struct raw_env e;
	struct uroce_tp_qp *qp;
	struct ibv_wc wc;
	uint8_t ref[256];
	uint32_t len;

	env_up(&e, 1500);
	qp = raw_qp(&e, IBV_QPS_RTS);
	len = udp4_frame(ref, 4000, 5000, 100, false);
	cr_assert(uroce_wire_csum_ok(ref, len));
	memcpy(e.mem, ref, len);
	e.mem[24] = e.mem[25] = 0;       /* IPv4 header checksum cleared */
	e.mem[40] = e.mem[41] = 0x55;    /* UDP checksum wrong */
	cr_assert(!uroce_wire_csum_ok(e.mem, len));

	g_tx.busy = 1;
	post_frame(qp, &e, 1, 0, len, 0, 0);
	uroce_tp_process(e.dev, 0);
	cr_assert_eq(g_tx.n, 0, "the link pushed back: not sent yet");
	cr_assert_eq(poll1(e.scq, &wc), 0);
	uroce_tp_process(e.dev, 0);
	cr_assert_eq(g_tx.n, 1);
	cr_assert_eq(g_tx.len, len);
	cr_assert_arr_eq(g_tx.f, e.mem, len, "without IP_CSUM the bytes go as posted");
	cr_assert_eq(poll1(e.scq, &wc), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, IBV_WC_SEND);
	cr_assert_eq(wc.wr_id, 1);

	post_frame(qp, &e, 2, 0, len, IBV_SEND_IP_CSUM, 0);
	uroce_tp_process(e.dev, 0);
	cr_assert_eq(g_tx.n, 2);
	cr_assert_arr_eq(g_tx.f, ref, len, "IP_CSUM: both checksums as computed");
	cr_assert_eq(poll1(e.scq, &wc), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(uroce_tp_counters(e.dev)->raw_sent_pkts, 2);
	env_down(&e);
}

/* What a raw packet QP refuses: other work requests, a frame shorter than an Ethernet
 * header (at post), one longer than the port's MTU (at send: LOC_LEN_ERR, and ERR); and
 * the attribute masks of its transitions. */
Test(raw, send_errors_and_transitions)
{
	struct raw_env e;
	struct uroce_tp_qp *qp;
	struct uroce_tp_send_wqe w;
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 1};
	struct ibv_wc wc;

	env_up(&e, 1500);
	qp = raw_qp(&e, IBV_QPS_RESET);
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE, NULL, 0), -EINVAL,
		     "RESET->INIT takes the port");
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_QKEY, NULL,
					0), -EINVAL, "and no Q_Key");
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT, NULL, 0), 0);
	a.qp_state = IBV_QPS_RTR;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV, NULL, 0), -EINVAL,
		     "no address vector: it has no peer");
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE, NULL, 0), 0);
	post_frame(qp, &e, 1, 0, 64, 0, -EINVAL); /* RTR: no sends yet */
	a.qp_state = IBV_QPS_RTS;
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, NULL, 0), -EINVAL,
		     "no PSN either");
	cr_assert_eq(uroce_tp_modify_qp(qp, &a, IBV_QP_STATE, NULL, 0), 0);

	post_frame(qp, &e, 1, 0, 13, 0, -EINVAL);
	memset(&w, 0, sizeof(w));
	w.num_sge = 1;
	w.sg_list[0] = (struct uroce_tp_sge){(uintptr_t)e.mem, 64, e.lkey};
	w.opcode = IBV_WR_SEND_WITH_IMM;
	cr_assert_eq(uroce_tp_post_send(qp, &w, 0), -EINVAL);
	w.opcode = IBV_WR_RDMA_WRITE;
	cr_assert_eq(uroce_tp_post_send(qp, &w, 0), -EINVAL);
	w.opcode = IBV_WR_RDMA_READ;
	cr_assert_eq(uroce_tp_post_send(qp, &w, 0), -EINVAL);

	post_frame(qp, &e, 7, 0, 1500 + 18, 0, 0); /* the largest: sent */
	post_frame(qp, &e, 8, 0, 1500 + 19, 0, 0); /* one byte more */
	uroce_tp_process(e.dev, 0);
	cr_assert_eq(g_tx.n, 1);
	cr_assert_eq(g_tx.len, 1518);
	cr_assert_eq(poll1(e.scq, &wc), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(poll1(e.scq, &wc), 1);
	cr_assert_eq(wc.wr_id, 8);
	cr_assert_eq(wc.status, IBV_WC_LOC_LEN_ERR);
	cr_assert_eq(uroce_tp_qp_state(qp), IBV_QPS_ERR);
	env_down(&e);
}

static struct uroce_tp_flow *flow(struct uroce_tp_qp *qp, enum ibv_flow_attr_type type,
				  uint16_t prio, uint32_t flags, int dport, bool eth_dmac)
{
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_eth eth;
		struct ibv_flow_spec_ipv4 ip;
		struct ibv_flow_spec_tcp_udp udp;
	} r; /* each spec's size a multiple of 4: laid out as verbs wants them, unpacked */
	static const uint8_t dmac[6] = {0x02, 0, 0, 0, 0, 1};

	memset(&r, 0, sizeof(r));
	r.attr.type = type;
	r.attr.priority = prio;
	r.attr.flags = flags;
	r.attr.port = 1;
	if (dport >= 0) {
		r.attr.num_of_specs = 3;
		r.eth.type = IBV_FLOW_SPEC_ETH;
		r.eth.size = sizeof(r.eth);
		if (eth_dmac) {
			memcpy(r.eth.val.dst_mac, dmac, 6);
			memset(r.eth.mask.dst_mac, 0xff, 6);
		}
		r.eth.val.ether_type = htons(0x0800);
		r.eth.mask.ether_type = 0xffff;
		r.ip.type = IBV_FLOW_SPEC_IPV4;
		r.ip.size = sizeof(r.ip);
		r.ip.val.dst_ip = htonl(0x0a000001);
		r.ip.mask.dst_ip = 0xffffffff;
		r.udp.type = IBV_FLOW_SPEC_UDP;
		r.udp.size = sizeof(r.udp);
		r.udp.val.dst_port = htons((uint16_t)dport);
		r.udp.mask.dst_port = 0xffff;
	}
	return uroce_tp_create_flow(qp, &r.attr, sizeof(r));
}

/* The rules decide who gets a frame: the matching NORMAL rule of lowest priority value
 * (the oldest among equals); copies to sniffers and DONT_TRAP rules; the defaults for
 * what no NORMAL rule took; nothing for a frame the caller keeps (claimable false). */
Test(raw, flow_rules_steer_frames)
{
	struct raw_env e;
	struct uroce_tp_qp *a, *b, *snif;
	struct uroce_tp_flow *fa, *fb, *fs, *fd;
	struct ibv_wc wc;
	uint8_t f[256], mf[256];
	uint32_t len, mlen;

	env_up(&e, 1500);
	a = raw_qp(&e, IBV_QPS_RTR);
	b = raw_qp(&e, IBV_QPS_RTS);
	snif = raw_qp(&e, IBV_QPS_RTR);
	len = udp4_frame(f, 4000, 5000, 64, false);
	mlen = udp4_frame(mf, 4000, 5000, 64, true);
	cr_assert(!uroce_tp_flow_rx(e.dev, f, len, true), "no rule: the caller's");

	fa = flow(a, IBV_FLOW_ATTR_NORMAL, 5, 0, 5000, true);
	fb = flow(b, IBV_FLOW_ATTR_NORMAL, 1, 0, 5000, false);
	cr_assert(fa && fb);
	for (int i = 0; i < 4; i++) {
		post_rwqe(a, &e, 100 + i, 4096 + 256 * i, 256);
		post_rwqe(b, &e, 200 + i, 8192 + 256 * i, 256);
		post_rwqe(snif, &e, 300 + i, 12288 + 256 * i, 256);
	}
	cr_assert(uroce_tp_flow_rx(e.dev, f, len, true));
	cr_assert_eq(poll1(e.rcq, &wc), 1);
	cr_assert_eq(wc.wr_id, 200, "priority 1 before 5: B's");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, IBV_WC_RECV);
	cr_assert_eq(wc.byte_len, len);
	cr_assert(wc.wc_flags & IBV_WC_IP_CSUM_OK);
	cr_assert_eq(wc.qp_num, uroce_tp_qp_num(b));
	cr_assert_arr_eq(e.mem + 8192, f, len);
	cr_assert_eq(poll1(e.rcq, &wc), 0, "one QP got it, once");

	/* Not for port 5000, or not the caller's to give: nobody gets it. */
	cr_assert(!uroce_tp_flow_rx(e.dev, f, len, false));
	f[37]++;
	cr_assert(!uroce_tp_flow_rx(e.dev, f, len, true));
	f[37]--;
	cr_assert_eq(poll1(e.rcq, &wc), 0);

	/* A sniffer gets a copy of everything, taken or not; A's DMAC rule after B's goes. */
	fs = flow(snif, IBV_FLOW_ATTR_SNIFFER, 0, 0, -1, false);
	cr_assert_not_null(fs);
	cr_assert_eq(uroce_tp_destroy_flow(fb), 0);
	f[40] ^= 0xff; /* a bad UDP checksum: delivered, without CSUM_OK */
	cr_assert(uroce_tp_flow_rx(e.dev, f, len, true));
	f[40] ^= 0xff;
	cr_assert(!uroce_tp_flow_rx(e.dev, mf, mlen, false), "RoCE, say: a copy only");
	cr_assert_eq(poll1(e.rcq, &wc), 1);
	cr_assert_eq(wc.wr_id, 300, "the sniffer first (rules in list order)");
	cr_assert(!(wc.wc_flags & IBV_WC_IP_CSUM_OK));
	cr_assert_eq(poll1(e.rcq, &wc), 1);
	cr_assert_eq(wc.wr_id, 100, "then A");
	cr_assert(!(wc.wc_flags & IBV_WC_IP_CSUM_OK));
	cr_assert_eq(poll1(e.rcq, &wc), 1);
	cr_assert_eq(wc.wr_id, 301, "the frame not claimable: the sniffer's copy");
	cr_assert_eq(poll1(e.rcq, &wc), 0);

	/* Defaults: multicast to MC_DEFAULT, unicast to ALL_DEFAULT, after NORMAL rules. */
	fd = flow(b, IBV_FLOW_ATTR_MC_DEFAULT, 0, 0, -1, false);
	cr_assert_not_null(fd);
	cr_assert(uroce_tp_flow_rx(e.dev, mf, mlen, true));
	cr_assert_eq(poll1(e.rcq, &wc), 1);
	cr_assert_eq(wc.wr_id, 302);
	cr_assert_eq(poll1(e.rcq, &wc), 1);
	cr_assert_eq(wc.wr_id, 200 + 1, "B's MC_DEFAULT");
	f[37]++;
	cr_assert(!uroce_tp_flow_rx(e.dev, f, len, true), "unicast: not MC_DEFAULT's");
	f[37]--;
	cr_assert_eq(poll1(e.rcq, &wc), 1); /* the sniffer's copy of it */
	cr_assert_eq(wc.wr_id, 303);

	/* The sniffer's receive queue is empty now: dropped and counted. */
	cr_assert(uroce_tp_flow_rx(e.dev, f, len, true));
	cr_assert_eq(uroce_tp_counters(e.dev)->raw_dropped_no_rwqe, 1);
	cr_assert_eq(poll1(e.rcq, &wc), 1);
	cr_assert_eq(wc.wr_id, 101);

	/* A QP a rule steers to stays until the rule goes. */
	cr_assert_eq(uroce_tp_destroy_qp(a), -EBUSY);
	cr_assert_eq(uroce_tp_destroy_flow(fa), 0);
	cr_assert_eq(uroce_tp_destroy_qp(a), 0);
	env_down(&e); /* B's and the sniffer's rules go with the device */
}

/* DONT_TRAP: a copy to the rule's QP, and the frame goes on to the next rule or back to
 * the caller; a frame too long for the WQE completes with LOC_LEN_ERR. */
Test(raw, dont_trap_and_short_wqe)
{
	struct raw_env e;
	struct uroce_tp_qp *a, *b;
	struct ibv_wc wc;
	uint8_t f[256];
	uint32_t len;

	env_up(&e, 1500);
	a = raw_qp(&e, IBV_QPS_RTR);
	b = raw_qp(&e, IBV_QPS_RTR);
	len = udp4_frame(f, 1, 7, 100, false);
	cr_assert_not_null(flow(a, IBV_FLOW_ATTR_NORMAL, 0, IBV_FLOW_ATTR_FLAGS_DONT_TRAP, 7,
				false));
	post_rwqe(a, &e, 1, 0, 1024);
	post_rwqe(a, &e, 2, 0, len - 1);
	cr_assert(!uroce_tp_flow_rx(e.dev, f, len, true), "a copy: the frame stays the caller's");
	cr_assert_not_null(flow(b, IBV_FLOW_ATTR_ALL_DEFAULT, 0, 0, -1, false));
	post_rwqe(b, &e, 3, 0, 1024);
	cr_assert(uroce_tp_flow_rx(e.dev, f, len, true), "then the default takes it");
	cr_assert_eq(poll1(e.rcq, &wc), 1);
	cr_assert_eq(wc.wr_id, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(poll1(e.rcq, &wc), 1);
	cr_assert_eq(wc.wr_id, 2);
	cr_assert_eq(wc.status, IBV_WC_LOC_LEN_ERR);
	cr_assert_eq(uroce_tp_qp_state(a), IBV_QPS_RTR, "the QP goes on, as UD's");
	cr_assert_eq(poll1(e.rcq, &wc), 1);
	cr_assert_eq(wc.wr_id, 3);

	/* RoCEv2 (UDP to 4791) is the transport's: no rule takes it, the default neither. */
	len = udp4_frame(f, 1, UROCE_UDP_PORT_ROCEV2, 40, false);
	post_rwqe(b, &e, 4, 0, 1024);
	cr_assert(!uroce_tp_flow_rx(e.dev, f, len, true));
	cr_assert_eq(poll1(e.rcq, &wc), 0);
	env_down(&e);
}

/* What ibv_create_flow refuses, with the errno it would give. */
Test(raw, flow_create_errors)
{
	struct raw_env e;
	struct uroce_tp_qp *raw, *ud;
	struct uroce_tp_qp_init init = {.qp_type = IBV_QPT_UD, .cap = {.max_send_wr = 1,
									 .max_recv_wr = 1}};
	union {
		struct ibv_flow_attr attr;
		uint8_t b[256];
	} r;
	struct ibv_flow_spec_tcp_udp udp = {.type = IBV_FLOW_SPEC_UDP, .size = sizeof(udp)};
	struct ibv_flow_spec_action_drop drop = {.type = IBV_FLOW_SPEC_ACTION_DROP,
						 .size = sizeof(drop)};
	uint32_t len;

	env_up(&e, 1500);
	raw = raw_qp(&e, IBV_QPS_INIT);
	init.send_cq = init.recv_cq = e.scq;
	ud = uroce_tp_create_qp(e.pd, &init);
	cr_assert_not_null(ud);
	/* A NORMAL rule on port 1 with @n UDP specs. */
#define RESET(n)                                                                           \
	do {                                                                               \
		memset(&r, 0, sizeof(r));                                                  \
		r.attr.type = IBV_FLOW_ATTR_NORMAL;                                        \
		r.attr.port = 1;                                                           \
		r.attr.num_of_specs = (n);                                                 \
		len = (uint32_t)(sizeof(r.attr) + (n) * sizeof(udp));                      \
		for (int k = 0; k < (n); k++)                                              \
			memcpy(r.b + sizeof(r.attr) + k * sizeof(udp), &udp, sizeof(udp)); \
	} while (0)
#define REFUSED(qp, err, why)                                                              \
	do {                                                                               \
		errno = 0;                                                                 \
		cr_assert_null(uroce_tp_create_flow(qp, &r.attr, len), why);               \
		cr_assert_eq(errno, err, "%s: errno %d", why, errno);                      \
	} while (0)
	RESET(1);
	REFUSED(ud, EINVAL, "not a raw packet QP");
	RESET(1);
	r.attr.port = 2;
	REFUSED(raw, EINVAL, "port 2");
	RESET(2);
	REFUSED(raw, EINVAL, "two UDP specs");
	RESET(1);
	len--;
	REFUSED(raw, EINVAL, "a spec beyond the bytes given");
	RESET(1);
	r.b[sizeof(r.attr) + 4] = 8; /* the spec's size */
	REFUSED(raw, EINVAL, "a spec of the wrong size");
	RESET(1);
	r.b[sizeof(r.attr) + 4] = 0;
	REFUSED(raw, EINVAL, "a spec of no size");
	RESET(1);
	r.b[sizeof(r.attr) + 1] |= IBV_FLOW_SPEC_INNER >> 8;
	REFUSED(raw, EOPNOTSUPP, "inner (tunnelled) headers");
	RESET(0);
	r.attr.num_of_specs = 1;
	memcpy(r.b + sizeof(r.attr), &drop, sizeof(drop));
	len = sizeof(r.attr) + sizeof(drop);
	REFUSED(raw, EOPNOTSUPP, "a drop action");
	RESET(1);
	r.attr.flags = IBV_FLOW_ATTR_FLAGS_EGRESS;
	REFUSED(raw, EOPNOTSUPP, "egress");
	RESET(1);
	r.attr.type = IBV_FLOW_ATTR_SNIFFER;
	REFUSED(raw, EINVAL, "specs on a sniffer");
	RESET(1);
	r.attr.comp_mask = 1;
	REFUSED(raw, EOPNOTSUPP, "comp_mask");
	RESET(1);
	cr_assert_not_null(uroce_tp_create_flow(raw, &r.attr, len), "and the same, well formed");
	r.attr.size = 0xffff;
	cr_assert_not_null(uroce_tp_create_flow(raw, &r.attr, len), "attr->size is not read");
	env_down(&e);
#undef RESET
#undef REFUSED
}

/* lib/wire's checksums, beyond the IPv4 UDP frames above: TCP over IPv6, fragments. */
Test(raw, wire_checksums)
{
	uint8_t f[128];
	uint32_t len = 14 + 40 + 20 + 10;
	struct uroce_wire_layers l;

	memset(f, 0, sizeof(f));
	f[12] = 0x86, f[13] = 0xdd;
	f[14] = 0x60;
	f[14 + 1] = 0x0a, f[14 + 2] = 0xbc, f[14 + 3] = 0xde; /* flow label 0xabcde */
	f[14 + 5] = 30;                                        /* payload length */
	f[14 + 6] = 6;                                         /* TCP */
	f[14 + 7] = 9;
	f[14 + 8] = 0xfe, f[14 + 23] = 1;
	f[14 + 24] = 0xfe, f[14 + 39] = 2;
	f[54 + 12] = 5 << 4;
	for (int i = 0; i < 10; i++)
		f[74 + i] = (uint8_t)i;
	cr_assert(!uroce_wire_csum_ok(f, len));
	uroce_wire_csum_fill(f, len);
	cr_assert(uroce_wire_csum_ok(f, len));
	uroce_wire_layers(f, len, &l);
	cr_assert_eq(l.ip_version, 6);
	cr_assert_eq(l.proto, 6);
	cr_assert_eq(l.flow_label, 0xabcde);
	cr_assert_eq(l.ttl, 9);
	cr_assert(l.l4);
	cr_assert_eq(l.l4_off, 54);
	cr_assert_eq(l.l4_len, 30);
	f[80] ^= 1;
	cr_assert(!uroce_wire_csum_ok(f, len), "a payload byte changed");
	uroce_wire_layers(f, len - 1, &l);
	cr_assert(l.ip_version == 6 && l.truncated && l.l4 && l.l4_len == 29,
		  "an IP length beyond the frame: its headers, but no datagram to verify");
	cr_assert(!uroce_wire_csum_ok(f, len - 1));

	len = udp4_frame(f, 1, 2, 16, false);
	f[20] = 0x20; /* MF */
	uroce_wire_csum_fill(f, len);
	cr_assert(!uroce_wire_csum_ok(f, len), "a fragment: no L4 checksum to verify");
	uroce_wire_layers(f, len, &l);
	cr_assert(l.fragment && l.l4, "the first fragment has its header");
	f[21] = 1; /* offset 8 */
	uroce_wire_layers(f, len, &l);
	cr_assert(l.fragment && !l.l4, "a later one has not");
}
