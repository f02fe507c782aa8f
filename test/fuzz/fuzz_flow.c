/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for raw packet QPs and flow steering (lib/transport raw.c, flow.c;
 * lib/wire frames.c): the rules come from applications (ibv_create_flow's bytes, which
 * the daemon takes as they come), the frames from the wire.
 *
 * Per input, from nothing: one device whose tx callback keeps the last frame, a PD, a
 * 64 KiB MR, a CQ, and two raw packet QPs in RTS. Records [kind len] + len bytes:
 *   kind % 5 == 0: a rule from the bytes (an ibv_flow_attr and specs, copied to aligned
 *                  memory) on QP (kind >> 3) & 1, within len bytes
 *               1: destroy the rule the first byte picks
 *               2: the bytes as a received frame; claimable when kind bit 3 is set
 *               3: receive WQEs on both QPs, of the sizes the bytes give
 *               4: the bytes as a frame to send (IBV_SEND_IP_CSUM when kind bit 3 is set)
 * Oracle, besides the sanitizers (every frame in a buffer of exactly its size):
 *  - a rule is created only with a known type, port 1 and specs that fit len;
 *  - completions: a valid status, one of our QPs, receive byte_len at most its buffer;
 *    a sent frame leaves at its posted length;
 *  - uroce_wire_csum_fill then uroce_wire_csum_ok agree: a whole unfragmented TCP or
 *    UDP datagram over IP, once filled, verifies;
 *  - counters never decrease.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "uroce_transport.h"
#include "uroce_wire.h"

#include "fuzz_check.h"

#define MR_SIZE 0x10000u
#define MAX_FLOWS 16

static uint32_t g_tx_len;
static uint32_t g_tx_n;

static int keep_tx(void *ctx, const uint8_t *frame, uint32_t len)
{
	(void)ctx;
	(void)frame;
	g_tx_len = len;
	g_tx_n++;
	return 0;
}

static void check_csum_property(const uint8_t *data, uint32_t len)
{
	uint8_t *f = malloc(len ? len : 1);
	struct uroce_wire_layers l;

	CHECK(f != NULL);
	memcpy(f, data, len);
	uroce_wire_csum_fill(f, len);
	uroce_wire_layers(f, len, &l);
	if (l.ip_version && l.l4 && !l.fragment && !l.truncated)
		CHECK(uroce_wire_csum_ok(f, len));
	free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct uroce_tp_dev_cfg cfg;
	struct uroce_tp_dev *dev;
	struct uroce_tp_pd *pd;
	struct uroce_tp_mr *mr;
	struct uroce_tp_cq *cq;
	struct uroce_tp_qp *qp[2];
	struct uroce_tp_flow *flows[MAX_FLOWS] = {0};
	struct uroce_tp_counters last;
	uint8_t *mem = calloc(1, MR_SIZE);
	uint32_t lkey, rkey, rbuf[2 * 64] = {0};
	uint64_t next_id = 1;
	size_t at = 0;

	CHECK(mem != NULL);
	g_tx_n = 0;
	uroce_tp_dev_cfg_init(&cfg);
	cfg.mac[0] = 2;
	cfg.gid_count = 1;
	cfg.gid[0].raw[10] = cfg.gid[0].raw[11] = 0xff;
	cfg.tx = keep_tx;
	cfg.seed = 1;
	dev = uroce_tp_dev_create(&cfg);
	CHECK(dev != NULL);
	pd = uroce_tp_alloc_pd(dev);
	mr = pd ? uroce_tp_reg_mr(pd, (uintptr_t)mem, mem, MR_SIZE, IBV_ACCESS_LOCAL_WRITE) : NULL;
	cq = uroce_tp_create_cq(dev, 256);
	CHECK(mr && cq);
	uroce_tp_mr_keys(mr, &lkey, &rkey);
	for (int i = 0; i < 2; i++) {
		struct uroce_tp_qp_init init = {.qp_type = IBV_QPT_RAW_PACKET, .send_cq = cq,
						.recv_cq = cq,
						.cap = {.max_send_wr = 32, .max_recv_wr = 32,
							.max_send_sge = 1, .max_recv_sge = 1,
							.max_inline_data = 64}};
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};

		qp[i] = uroce_tp_create_qp(pd, &init);
		CHECK(qp[i] != NULL);
		CHECK(uroce_tp_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_PORT, NULL, 0) == 0);
		a.qp_state = IBV_QPS_RTR;
		CHECK(uroce_tp_modify_qp(qp[i], &a, IBV_QP_STATE, NULL, 0) == 0);
		a.qp_state = IBV_QPS_RTS;
		CHECK(uroce_tp_modify_qp(qp[i], &a, IBV_QP_STATE, NULL, 0) == 0);
	}
	last = *uroce_tp_counters(dev);
	while (at + 2 <= size) {
		uint8_t kind = data[at];
		uint32_t len = data[at + 1] * 8u, op = kind % 5;
		const uint8_t *p = data + at + 2;
		struct ibv_wc wc;

		at += 2;
		if (len > size - at)
			len = (uint32_t)(size - at);
		at += len;
		if (op == 0) {
			/* aligned for the attribute's fields, as the daemon copies it */
			union {
				struct ibv_flow_attr attr;
				uint8_t b[2048];
			} r;
			struct uroce_tp_flow *f;
			uint32_t n = len < sizeof(r.b) ? len : sizeof(r.b);

			memset(&r, 0, sizeof(r));
			memcpy(r.b, p, n);
			f = uroce_tp_create_flow(qp[(kind >> 3) & 1], &r.attr, n);
			if (f) {
				int slot = -1;

				CHECK(n >= sizeof(r.attr) && r.attr.port == 1);
				CHECK(r.attr.type == IBV_FLOW_ATTR_NORMAL ||
				      r.attr.type == IBV_FLOW_ATTR_ALL_DEFAULT ||
				      r.attr.type == IBV_FLOW_ATTR_MC_DEFAULT ||
				      r.attr.type == IBV_FLOW_ATTR_SNIFFER);
				for (int i = 0; i < MAX_FLOWS && slot < 0; i++)
					if (!flows[i])
						slot = i;
				if (slot < 0)
					uroce_tp_destroy_flow(f);
				else
					flows[slot] = f;
			} else {
				CHECK(errno == EINVAL || errno == EOPNOTSUPP);
			}
		} else if (op == 1 && len) {
			int i = p[0] % MAX_FLOWS;

			if (flows[i]) {
				CHECK(uroce_tp_destroy_flow(flows[i]) == 0);
				flows[i] = NULL;
			}
		} else if (op == 2) {
			uint8_t *frame = malloc(len ? len : 1); /* exactly its size */

			CHECK(frame != NULL);
			memcpy(frame, p, len);
			(void)uroce_tp_flow_rx(dev, frame, len, (kind >> 3) & 1);
			check_csum_property(frame, len);
			free(frame);
		} else if (op == 3) {
			for (uint32_t i = 0; i < len && i < 8; i++) {
				int q = i & 1;
				uint32_t blen = 1u + p[i] * 16u;
				uint64_t at_mem = (uintptr_t)mem + 0x8000 + (next_id % 16) * 2048u;
				struct uroce_tp_recv_wqe w = {.wr_id = next_id, .num_sge = 1};

				w.sg_list[0] = (struct uroce_tp_sge){at_mem, blen, lkey};
				if (uroce_tp_post_recv(qp[q], &w) == 0)
					rbuf[next_id % 128] = blen;
				next_id++;
			}
		} else if (op == 4) {
			struct uroce_tp_send_wqe w;
			uint32_t n = len < 0x8000 ? len : 0x8000;
			uint32_t before = g_tx_n;

			memset(&w, 0, sizeof(w));
			memcpy(mem, p, n);
			w.wr_id = 0;
			w.opcode = IBV_WR_SEND;
			w.send_flags = IBV_SEND_SIGNALED | ((kind & 8) ? IBV_SEND_IP_CSUM : 0);
			w.num_sge = 1;
			w.sg_list[0] = (struct uroce_tp_sge){(uintptr_t)mem, n, lkey};
			struct uroce_tp_qp *sq = qp[(kind >> 4) & 1];

			if (uroce_tp_post_send(sq, &w, 0) == 0) {
				uroce_tp_process(dev, 0);
				if (g_tx_n != before)
					CHECK(g_tx_len == n);
			} else {
				CHECK(n < 14 || uroce_tp_qp_state(sq) != IBV_QPS_RTS);
			}
		}
		while (uroce_tp_poll_cq(cq, 1, &wc) == 1) {
			CHECK((unsigned)wc.status <= IBV_WC_TM_RNDV_INCOMPLETE);
			CHECK(wc.qp_num == uroce_tp_qp_num(qp[0]) ||
			      wc.qp_num == uroce_tp_qp_num(qp[1]));
			if (wc.opcode == IBV_WC_RECV && wc.status == IBV_WC_SUCCESS)
				CHECK(wc.byte_len <= rbuf[wc.wr_id % 128]);
		}
		{
			const struct uroce_tp_counters *c = uroce_tp_counters(dev);

			CHECK(c->raw_sent_pkts >= last.raw_sent_pkts &&
			      c->raw_rcvd_pkts >= last.raw_rcvd_pkts &&
			      c->raw_dropped_no_rwqe >= last.raw_dropped_no_rwqe);
			last = *c;
		}
	}
	/* Whatever is left (rules, QPs) goes with the device: LeakSanitizer sees a leak. */
	uroce_tp_dev_destroy(dev);
	free(mem);
	return 0;
}
