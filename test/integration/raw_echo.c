/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * raw_echo PORT COUNT TIMEOUT_S: a plain verbs program (over the drop-in libibverbs) that
 * answers UDP datagrams to PORT of the device's IPv4 address from a raw packet QP: a
 * flow rule (IPv4 + UDP destination port) steers them to the QP, which sends each back
 * with the Ethernet and IP addresses and the ports swapped, the checksums left to the
 * device (IBV_SEND_IP_CSUM). After COUNT datagrams, or TIMEOUT_S seconds, it prints
 *   raw_echo: echoed N, csum_ok M, bytes B
 * (csum_ok: receive completions with IBV_WC_IP_CSUM_OK) and exits 0 when N == COUNT.
 * The integration test raw_packet.sh drives it with the kernel's UDP on the other end.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#define SLOTS 32
#define SLOT_SIZE 2048

static void die(const char *what)
{
	fprintf(stderr, "raw_echo: %s: %s\n", what, strerror(errno));
	exit(2);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void swap(uint8_t *a, uint8_t *b, size_t n)
{
	uint8_t t[16];

	memcpy(t, a, n);
	memcpy(a, b, n);
	memcpy(b, t, n);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_flow *flow;
	union ibv_gid gid;
	uint8_t *buf;
	unsigned long echoed = 0, csum_ok = 0, bytes = 0, count;
	double deadline;
	uint16_t port;
	int gidx = -1;

	if (argc != 4) {
		fprintf(stderr, "usage: raw_echo PORT COUNT TIMEOUT_S\n");
		return 2;
	}
	port = (uint16_t)atoi(argv[1]);
	count = strtoul(argv[2], NULL, 0);
	deadline = now_s() + atof(argv[3]);
	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		die("no device");
	ctx = ibv_open_device(list[0]);
	if (!ctx)
		die("ibv_open_device");
	/* The device's IPv4 address: its first IPv4-mapped GID (::ffff:a.b.c.d). */
	for (int i = 0; i < 16 && gidx < 0; i++) {
		static const uint8_t v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

		if (ibv_query_gid(ctx, 1, i, &gid) == 0 && memcmp(gid.raw, v4, 12) == 0)
			gidx = i;
	}
	if (gidx < 0)
		die("no IPv4 GID");
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 2 * SLOTS, NULL, NULL, 0);
	buf = calloc(2 * SLOTS, SLOT_SIZE);
	if (!pd || !cq || !buf)
		die("PD, CQ or memory");
	mr = ibv_reg_mr(pd, buf, 2 * SLOTS * SLOT_SIZE, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	{
		struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq,
					      .qp_type = IBV_QPT_RAW_PACKET,
					      .cap = {.max_send_wr = SLOTS, .max_recv_wr = SLOTS,
						      .max_send_sge = 1, .max_recv_sge = 1}};
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};

		qp = ibv_create_qp(pd, &ia);
		if (!qp)
			die("ibv_create_qp(IBV_QPT_RAW_PACKET)");
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT))
			die("to INIT");
		a.qp_state = IBV_QPS_RTR;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
			die("to RTR");
		a.qp_state = IBV_QPS_RTS;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
			die("to RTS");
	}
	{
		struct {
			struct ibv_flow_attr attr;
			struct ibv_flow_spec_ipv4 ip;
			struct ibv_flow_spec_tcp_udp udp;
		} r;

		memset(&r, 0, sizeof(r));
		r.attr = (struct ibv_flow_attr){.type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(r),
						.num_of_specs = 2, .port = 1};
		r.ip.type = IBV_FLOW_SPEC_IPV4;
		r.ip.size = sizeof(r.ip);
		memcpy(&r.ip.val.dst_ip, gid.raw + 12, 4);
		r.ip.mask.dst_ip = 0xffffffff;
		r.udp.type = IBV_FLOW_SPEC_UDP;
		r.udp.size = sizeof(r.udp);
		r.udp.val.dst_port = htons(port);
		r.udp.mask.dst_port = 0xffff;
		flow = ibv_create_flow(qp, &r.attr);
		if (!flow)
			die("ibv_create_flow");
	}
	/* Receive slots 0..SLOTS-1; a frame is echoed from its slot's twin. */
	for (int i = 0; i < SLOTS; i++) {
		struct ibv_sge s = {(uintptr_t)(buf + i * SLOT_SIZE), SLOT_SIZE, mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &s, .num_sge = 1}, *bad;

		if (ibv_post_recv(qp, &wr, &bad))
			die("ibv_post_recv");
	}
	printf("raw_echo: ready, UDP port %u\n", port);
	fflush(stdout);
	while (echoed < count && now_s() < deadline) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			die("ibv_poll_cq");
		if (n == 0)
			continue;
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "raw_echo: wr %llu: %s\n", (unsigned long long)wc.wr_id,
				ibv_wc_status_str(wc.status));
			return 1;
		}
		if (wc.opcode == IBV_WC_RECV) {
			uint32_t i = (uint32_t)wc.wr_id;
			uint8_t *in = buf + i * SLOT_SIZE, *out = buf + (SLOTS + i) * SLOT_SIZE;
			struct ibv_sge s = {(uintptr_t)out, wc.byte_len, mr->lkey};
			unsigned int flags = IBV_SEND_SIGNALED | IBV_SEND_IP_CSUM;
			struct ibv_send_wr wr = {.wr_id = SLOTS + i, .sg_list = &s, .num_sge = 1,
						 .opcode = IBV_WR_SEND, .send_flags = flags};
			struct ibv_send_wr *bad;

			if (wc.wc_flags & IBV_WC_IP_CSUM_OK)
				csum_ok++;
			memcpy(out, in, wc.byte_len);
			swap(out, out + 6, 6);        /* MACs */
			swap(out + 26, out + 30, 4);  /* IPv4 addresses */
			swap(out + 34, out + 36, 2);  /* UDP ports */
			memset(out + 24, 0, 2);       /* the device computes both checksums */
			memset(out + 40, 0, 2);
			if (ibv_post_send(qp, &wr, &bad))
				die("ibv_post_send");
			bytes += wc.byte_len;
		} else {
			/* Sent: its receive slot goes back to the queue. */
			uint32_t i = (uint32_t)wc.wr_id - SLOTS;
			struct ibv_sge s = {(uintptr_t)(buf + i * SLOT_SIZE), SLOT_SIZE, mr->lkey};
			struct ibv_recv_wr rw = {.wr_id = i, .sg_list = &s, .num_sge = 1}, *bad;

			echoed++;
			if (ibv_post_recv(qp, &rw, &bad))
				die("ibv_post_recv");
		}
	}
	printf("raw_echo: echoed %lu, csum_ok %lu, bytes %lu\n", echoed, csum_ok, bytes);
	if (ibv_destroy_qp(qp) != EBUSY)
		fprintf(stderr, "raw_echo: destroying a QP a flow steers to did not say EBUSY\n");
	if (ibv_destroy_flow(flow) || ibv_destroy_qp(qp) || ibv_dereg_mr(mr) ||
	    ibv_destroy_cq(cq) || ibv_dealloc_pd(pd) || ibv_close_device(ctx))
		die("teardown");
	ibv_free_device_list(list);
	free(buf);
	return echoed == count ? 0 : 1;
}
