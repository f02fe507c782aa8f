/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_op: the peer of test/vm/guest/verbs-op (pyverbs, run in the rxe VM), with its
 * exchange: one JSON line each way over TCP, {"qpn", "psn", "gid" (8 groups of 4 hex
 * digits), "rkey", "addr"}; both sides connect the RC QP by hand (MTU 1024, 4 reads or
 * atomics in flight, min RNR timer 12, timeout 14, retry 7, RNR retry 7, GRH hop limit
 * 64), then "ready\n" both ways. The side given a server address issues COUNT ops one
 * at a time (data (i * 7) & 0xff, imm 0x1000 + i, fadd +1, cswap compare i swap i + 1),
 * sends "done\n" and waits for a line; the listener posts COUNT + 2 receives for
 * send/send_imm/write_imm, checks the completions, and answers "bye\n".
 *
 * Both sides check what they can (verbs-op the same things): as the target, the
 * written or sent bytes, the immediates, byte_len, opcodes and the final atomic value
 * (the initial one is 0); as the issuer, the data READ (the peer's buffer is zeroed by
 * pyverbs) and the values atomics return (i).
 */

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xfer.h"

enum vop { V_WRITE_IMM, V_SEND_IMM, V_WRITE, V_SEND, V_READ, V_FADD, V_CSWAP, V_N };
static const char *const vop_names[V_N] = { "write_imm", "send_imm", "write", "send",
					    "read", "fadd", "cswap" };

static int json_u64(const char *line, const char *key, uint64_t *v)
{
	char pat[32];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\"", key);
	p = strstr(line, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	while (*p == ' ' || *p == ':')
		p++;
	if (*p < '0' || *p > '9')
		return -1;
	*v = strtoull(p, NULL, 10);
	return 0;
}

static int json_gid(const char *line, union ibv_gid *gid)
{
	const char *p = strstr(line, "\"gid\"");
	unsigned int g[8];
	int i;

	if (!p)
		return -1;
	p = strchr(p + 5, '"');
	if (!p || sscanf(p + 1, "%4x:%4x:%4x:%4x:%4x:%4x:%4x:%4x", &g[0], &g[1], &g[2], &g[3],
			 &g[4], &g[5], &g[6], &g[7]) != 8)
		return -1;
	for (i = 0; i < 8; i++) {
		gid->raw[2 * i] = (uint8_t)(g[i] >> 8);
		gid->raw[2 * i + 1] = (uint8_t)g[i];
	}
	return 0;
}

int xfer_verbs_op(const struct xfer_opts *o)
{
	struct xfer_dev dev;
	struct uroce_client_cq *cq = NULL;
	struct uroce_client_qp *qp = NULL;
	struct uroce_client_mr *mr = NULL;
	struct xfer_peer peer;
	uint8_t *buf = NULL;
	size_t buflen = 0, slot;
	uint32_t count = (uint32_t)(o->iters >= 0 ? o->iters : 5), size, psn, i, rq = 0;
	uint64_t peer_rkey = 0, peer_addr = 0, v;
	char line[512], g[48];
	int op, fd = -1, ret = 1, errors = 0;
	bool active = o->server != NULL, peer_is_xfer;
	enum ibv_mtu mtu = xfer_mtu_enum(o->mtu ? o->mtu : 1024);
	unsigned int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

	for (op = 0; op < V_N; op++)
		if (o->op && !strcmp(o->op, vop_names[op]))
			break;
	if (op == V_N || !mtu) {
		xfer_err("verbs_op: --op write_imm|send_imm|write|send|read|fadd|cswap");
		return 1;
	}
	size = (uint32_t)(o->size >= 0 ? o->size : 2048);
	if (op == V_FADD || op == V_CSWAP)
		size = 8;
	if (xfer_dev_open(&dev, o))
		return 1;
	slot = size > 64 ? size : 64;
	if (!active && (op == V_WRITE_IMM || op == V_SEND_IMM || op == V_SEND))
		rq = count + 2;
	buflen = slot * (rq ? rq : 1);
	buf = xfer_alloc(buflen);
	if (!buf)
		goto out;
	mr = uroce_client_reg_mr(dev.pd, buf, buflen, acc);
	cq = uroce_client_create_cq(dev.ctx, (int)(4 * count + 16), NULL, 0);
	if (!mr || !cq) {
		xfer_err("reg_mr/create_cq: %s", strerror(errno));
		goto out;
	}
	qp = xfer_create_qp(&dev, IBV_QPT_RC, cq, cq, count + 4, count + 4, 0, NULL);
	if (!qp)
		goto out;
	psn = xfer_rand_psn();
	snprintf(g, sizeof(g), "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:"
		 "%02x%02x", dev.gid.raw[0], dev.gid.raw[1], dev.gid.raw[2], dev.gid.raw[3],
		 dev.gid.raw[4], dev.gid.raw[5], dev.gid.raw[6], dev.gid.raw[7], dev.gid.raw[8],
		 dev.gid.raw[9], dev.gid.raw[10], dev.gid.raw[11], dev.gid.raw[12],
		 dev.gid.raw[13], dev.gid.raw[14], dev.gid.raw[15]);
	snprintf(line, sizeof(line),
		 "{\"qpn\": %u, \"psn\": %u, \"gid\": \"%s\", \"rkey\": %u, \"addr\": %lu, "
		 "\"impl\": \"uroce-xfer\"}\n",
		 uroce_client_qp_ibv(qp)->qp_num, psn, g, mr->ibv.rkey,
		 (unsigned long)(uintptr_t)buf);
	fd = active ? oob_connect(o->server, o->port, o->timeout_ms) :
		      oob_listen_accept(o->port, o->timeout_ms * 4);
	if (fd < 0 || oob_write(fd, line, strlen(line), o->timeout_ms) ||
	    oob_read_line(fd, line, sizeof(line), o->timeout_ms) < 0)
		goto out;
	if (json_u64(line, "qpn", &v) || (peer.qpn = (uint32_t)v, 0) ||
	    json_u64(line, "psn", &v) || (peer.psn = (uint32_t)v, 0) ||
	    json_u64(line, "rkey", &peer_rkey) || json_u64(line, "addr", &peer_addr) ||
	    json_gid(line, &peer.gid)) {
		xfer_err("verbs_op: cannot parse the peer's line: %s", line);
		goto out;
	}
	peer_is_xfer = strstr(line, "\"impl\": \"uroce-xfer\"") != NULL;
	printf("local  qpn 0x%06x psn 0x%06x gid %s\n", uroce_client_qp_ibv(qp)->qp_num, psn, g);
	xfer_gid_str(&peer.gid, g, sizeof(g));
	printf("remote qpn 0x%06x psn 0x%06x gid %s rkey 0x%lx\n", peer.qpn, peer.psn, g,
	       (unsigned long)peer_rkey);
	fflush(stdout);

	if (xfer_qp_init(qp, IBV_QPT_RC, dev.ib_port, acc, 0))
		goto out;
	for (i = 0; i < rq; i++) {
		struct ibv_sge sge = {.addr = (uintptr_t)(buf + i * slot),
				      .length = (uint32_t)slot,
				      .lkey = mr->ibv.lkey};
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

		if (uroce_client_post_recv(qp, &wr, &bad)) {
			xfer_err("post_recv failed");
			goto out;
		}
	}
	if (xfer_qp_connect(qp, IBV_QPT_RC, dev.ib_port, dev.gid_index, mtu, psn, &peer, 64, 4))
		goto out;
	/* Against verbs-op: its "ready" first, then ours, as verbs-op writes before it reads.
	 * A Python peer that reads and writes one text file over the socket (CPython's
	 * TextIOWrapper) drops what it has read ahead when it writes: a "ready" of ours that
	 * arrived with our JSON line would be lost at its own write of "ready".
	 * Between two uroce-xfer (the "impl" key, which verbs-op ignores) the listener
	 * speaks first. */
	if (peer_is_xfer && !active) {
		if (oob_write(fd, "ready\n", 6, o->timeout_ms) ||
		    oob_read_line(fd, line, sizeof(line), o->timeout_ms) < 0)
			goto out;
	} else if (oob_read_line(fd, line, sizeof(line), o->timeout_ms) < 0 ||
		   oob_write(fd, "ready\n", 6, o->timeout_ms)) {
		goto out;
	}

	if (active) {
		static const enum ibv_wr_opcode wrop[V_N] = {
			IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
			IBV_WR_SEND, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD,
			IBV_WR_ATOMIC_CMP_AND_SWP };
		static const enum ibv_wc_opcode wcop[V_N] = {
			IBV_WC_RDMA_WRITE, IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_SEND,
			IBV_WC_RDMA_READ, IBV_WC_FETCH_ADD, IBV_WC_COMP_SWAP };

		for (i = 0; i < count; i++) {
			struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = size,
					       .lkey = mr->ibv.lkey };
			struct ibv_send_wr wr, *bad;
			struct ibv_wc wc;
			uint32_t k;
			int n, err;

			for (k = 0; k < size; k++)
				buf[k] = (uint8_t)((k * 7) & 0xff);
			memset(&wr, 0, sizeof(wr));
			wr.wr_id = 100 + i;
			wr.opcode = wrop[op];
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.send_flags = IBV_SEND_SIGNALED;
			if (op == V_WRITE_IMM || op == V_SEND_IMM)
				wr.imm_data = htonl(0x1000 + i);
			if (op == V_WRITE_IMM || op == V_WRITE || op == V_READ) {
				wr.wr.rdma.remote_addr = peer_addr;
				wr.wr.rdma.rkey = (uint32_t)peer_rkey;
			}
			if (op == V_FADD || op == V_CSWAP) {
				wr.wr.atomic.remote_addr = peer_addr;
				wr.wr.atomic.rkey = (uint32_t)peer_rkey;
				wr.wr.atomic.compare_add = op == V_FADD ? 1 : i;
				wr.wr.atomic.swap = i + 1;
			}
			err = uroce_client_post_send(qp, &wr, &bad);
			if (err) {
				xfer_err("post_send: %s", strerror(err));
				goto out;
			}
			n = xfer_poll_wait(cq, &wc, 1, o->timeout_ms);
			if (n <= 0) {
				xfer_err("%s: only %u of %u completions", vop_names[op], i, count);
				goto out;
			}
			if (wc.status != IBV_WC_SUCCESS) {
				xfer_err("%s completion error status %d (%s)", vop_names[op],
					 wc.status, uroce_client_wc_status_str(wc.status));
				goto out;
			}
			if (wc.opcode != wcop[op] || wc.wr_id != 100 + i) {
				xfer_err("%s #%u: opcode %s wr_id %lu", vop_names[op], i,
					 xfer_wc_opcode_str(wc.opcode), (unsigned long)wc.wr_id);
				errors++;
			}
			if (op == V_READ) {
				for (k = 0; k < size; k++)
					if (buf[k] != 0)
						break;
				if (k < size) {
					xfer_err(
						"read #%u: byte %u is 0x%02x, the peer's buffer is "
						"zero",
						i, k, buf[k]);
					errors++;
				}
			}
			if (op == V_FADD || op == V_CSWAP) {
				uint64_t got;

				memcpy(&got, buf, sizeof(got));
				if (got != i) {
					xfer_err("%s #%u returned %lu, expected %u", vop_names[op],
						 i, (unsigned long)got, i);
					errors++;
				}
			}
		}
		printf("client: %u x %s of %u B completed%s\n", count, vop_names[op], size,
		       errors ? " WITH ERRORS" : ", checked");
		if (oob_write(fd, "done\n", 5, o->timeout_ms))
			goto out;
		if (oob_read_line(fd, line, sizeof(line), o->timeout_ms * 2) < 0)
			goto out;
	} else {
		uint32_t got = 0;

		while (got < (rq ? count : 0)) {
			struct ibv_wc wc;
			int n = xfer_poll_wait(cq, &wc, 1, o->timeout_ms * 2);
			bool imm = op != V_SEND;

			if (n <= 0) {
				xfer_err("recv: only %u of %u completions", got, count);
				goto out;
			}
			if (wc.status != IBV_WC_SUCCESS) {
				xfer_err("recv completion error status %d (%s)", wc.status,
					 uroce_client_wc_status_str(wc.status));
				goto out;
			}
			printf("server: recv completion opcode %d byte_len %u imm 0x%x\n",
			       wc.opcode, wc.byte_len,
			       wc.wc_flags & IBV_WC_WITH_IMM ? ntohl(wc.imm_data) : 0);
			if (wc.opcode !=
				    (op == V_WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV) ||
			    wc.byte_len != size || wc.wr_id != got ||
			    !!(wc.wc_flags & IBV_WC_WITH_IMM) != imm ||
			    (imm && ntohl(wc.imm_data) != 0x1000 + got)) {
				xfer_err("recv #%u: unexpected opcode/byte_len/wr_id/imm", got);
				errors++;
			}
			if (op == V_SEND || op == V_SEND_IMM) {
				uint32_t k;

				for (k = 0; k < size; k++)
					if (buf[got * slot + k] != (uint8_t)((k * 7) & 0xff))
						break;
				if (k < size) {
					xfer_err("recv #%u: byte %u differs", got, k);
					errors++;
				}
			}
			got++;
		}
		if (oob_read_line(fd, line, sizeof(line), o->timeout_ms * 4) < 0)
			goto out;
		if (op == V_WRITE || op == V_WRITE_IMM) {
			uint32_t k;

			for (k = 0; k < size; k++)
				if (buf[k] != (uint8_t)((k * 7) & 0xff))
					break;
			if (k < size) {
				xfer_err("written data differs at byte %u (0x%02x)", k, buf[k]);
				errors++;
			} else {
				printf("server: %u B written, checked\n", size);
			}
		}
		if (op == V_FADD || op == V_CSWAP) {
			uint64_t t;

			memcpy(&t, buf, sizeof(t));
			printf("server: target u64 now %lu\n", (unsigned long)t);
			if (t != count) {
				xfer_err("target is %lu, expected %u", (unsigned long)t, count);
				errors++;
			}
		}
		if (oob_write(fd, "bye\n", 4, o->timeout_ms))
			goto out;
		printf("server: done\n");
	}
	ret = errors ? 1 : 0;
out:
	fflush(stdout);
	if (fd >= 0)
		close(fd);
	if (qp)
		uroce_client_destroy_qp(qp);
	if (cq)
		uroce_client_destroy_cq(cq);
	if (mr)
		uroce_client_dereg_mr(mr);
	xfer_free(buf, buflen);
	xfer_dev_close(&dev);
	return ret;
}
