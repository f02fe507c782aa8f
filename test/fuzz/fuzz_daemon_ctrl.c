/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uroced's control path under attack: sequences of requests (most made to pass the
 * header check, so they reach the handlers), memfds handed over with MAP_REGION, and
 * work requests written straight into the rings the daemon shares, all run by the
 * daemon's core, lib/rnic, against a real transport and host stack. No DPDK: lib/rnic
 * has no I/O of its own, and its host's ops are played here.
 *
 * Oracles: nothing crashes or reads out of bounds (ASan/UBSan); every request gets
 * exactly one reply (or waits for a neighbour, which never answers here, and is then
 * failed by the harness), and a successful one carries the payload and descriptors its
 * command's row says; and when the connection goes, every object and mapping of it is
 * freed (the daemon's own counters return to zero).
 *
 * Input: records [kind (1), length (1), bytes...]:
 *   kind % 4 == 0: a request, header fixed up (magic, version, len; cmd: byte 0 % N + 1,
 *                  so byte 0 = cmd - 1 for the N commands of UROCE_CTRL_COMMANDS)
 *   kind % 4 == 1: a request as given (header included), unfixed
 *   kind % 4 == 2: a send WQE written into QP handle (byte 0) 's SQ ring and committed
 *   kind % 4 == 3: a recv WQE into a QP's RQ ring; then the data path runs once
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_check.h"
#include "rnic_internal.h"

static struct uroce_rnic *nic;
static struct uroce_ip_stack *ip;
static uint64_t now_ns;

/* ---- the host: lib/rnic's ops, with no port, socket or file ------------------------- */

static unsigned int replies;

static int host_reply(void *io_ctx, void *conn, const void *msg, uint32_t len, const int *fds,
		      unsigned int nfds)
{
	const struct uroce_ctrl_cmd_info *info;
	struct uroce_ctrl_hdr h;
	uint32_t plen;

	(void)io_ctx;
	(void)conn;
	CHECK(len >= sizeof(h));
	memcpy(&h, msg, sizeof(h));
	CHECK(h.magic == UROCE_CTRL_MAGIC && h.version == UROCE_CTRL_VERSION && h.len == len);
	plen = len - (uint32_t)sizeof(h);
	info = uroce_ctrl_cmd_info(h.cmd);
	CHECK(h.status <= 0);
	CHECK(len <= UROCE_CTRL_MSG_MAX);
	CHECK(nfds <= UROCE_CTRL_MAX_FDS);
	CHECK(h.status == 0 || (plen == 0 && nfds == 0));
	for (unsigned int i = 0; h.status == 0 && i < nfds; i++)
		CHECK(fds[i] >= 0);
	if (h.status == 0) {
		/* What the command's row promises the client (lib/client checks the same). */
		CHECK(info);
		CHECK((info->flags & UROCE_CTRL_CMD_REP_TAIL) ? plen >= info->rep_size :
								plen == info->rep_size);
		CHECK(nfds == info->rep_fds);
	}
	replies++;
	return 0;
}

static int host_tx(void *io_ctx, const uint8_t *frame, uint32_t len)
{
	(void)io_ctx;
	(void)frame;
	(void)len;
	return 0;
}

static enum uroce_rnic_link host_link(void *io_ctx, uint32_t *speed_mbps)
{
	(void)io_ctx;
	*speed_mbps = 0;
	return UROCE_RNIC_LINK_UP;
}

static int host_mcast(void *io_ctx, const uint8_t mac[6])
{
	(void)io_ctx;
	CHECK(mac[0] & 1);
	return 0;
}

static uint64_t host_now(void *io_ctx)
{
	(void)io_ctx;
	return now_ns;
}

static void host_log(void *io_ctx, int level, const char *fmt, va_list ap)
{
	(void)io_ctx;
	(void)level;
	(void)fmt;
	(void)ap;
}

static int host_admin(void *io_ctx, const struct uroce_ctrl_admin_req *req)
{
	(void)io_ctx;
	if (req->op == UROCE_CTRL_ADMIN_FAULT)
		for (int i = 0; i < 8; i++)
			if (!(req->rates[i] >= 0 && req->rates[i] <= 1))
				return -EINVAL;
	return 0;
}

static int host_capture_start(void *io_ctx, int fd)
{
	(void)io_ctx;
	close(fd);
	return -EPERM; /* no files from a fuzzer */
}

static void host_stats(void *io_ctx,
		       void (*put)(void *out, const char *prefix, const char *name, uint64_t v),
		       void *out)
{
	(void)io_ctx;
	put(out, "daemon.", "fuzz", 1);
}

static const struct uroce_rnic_ops host_ops = {
	.reply = host_reply,
	.tx = host_tx,
	.link = host_link,
	.mcast_add = host_mcast,
	.mcast_del = host_mcast,
	.now_ns = host_now,
	.log = host_log,
	.admin = host_admin,
	.capture_start = host_capture_start,
	.stats = host_stats,
};

/* ---- harness ---------------------------------------------------------------------------- */

static void setup_once(void)
{
	static bool done;
	static struct uroce_conf conf;
	struct uroce_ip_cfg ic;
	const uint8_t mac[6] = {0x02, 0, 0, 0, 0, 1};
	struct uroce_rnic_cfg cfg = {.conf = &conf, .eth_mtu = 1500, .ops = &host_ops, .seed = 1};

	if (done)
		return;
	done = true;
	uroce_ip_cfg_init(&ic);
	memcpy(ic.mac, mac, 6);
	ic.v4[0][0] = 10;
	ic.v4[0][3] = 1;
	ic.v4_count = 1;
	ic.tx = host_tx;
	ip = uroce_ip_create(&ic);
	CHECK(ip);
	uroce_conf_defaults(&conf);
	conf.host.n_ipv4 = 1;
	memcpy(&conf.host.ipv4[0], ic.v4[0], 4);
	memcpy(cfg.mac, mac, 6);
	cfg.ip = ip;
	nic = uroce_rnic_create(&cfg);
	CHECK(nic);
}

/* A sealed memfd of @p size (bounded), as the client library makes for MRs. */
static int make_region_fd(uint64_t size)
{
	int fd;

	if (size == 0 || size > (1u << 20))
		return -1;
	fd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) != 0 || fcntl(fd, F_ADD_SEALS, UROCE_SHM_SEALS) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void request(struct uroce_rnic_client *c, uint8_t *msg, uint32_t len)
{
	unsigned int before = replies, nfds = 0;
	struct uroce_ctrl_hdr h;
	int fd = -1;

	memcpy(&h, msg, sizeof(h));
	if (h.cmd == UROCE_CTRL_MAP_REGION) {
		uint64_t size;

		if (len >= sizeof(h) + sizeof(size)) {
			memcpy(&size, msg + sizeof(h), sizeof(size));
			fd = make_region_fd(size);
			if (fd < 0) /* a sealed fd of another size: refused */
				fd = make_region_fd(4096);
			nfds = fd >= 0;
		}
	} else if (uroce_ctrl_request_fds(h.cmd) == 1) {
		/* Any other command that takes a file (CAPTURE_START) gets one to write. */
		fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		nfds = fd >= 0;
	}
	if (uroce_ctrl_check_request(msg, len, nfds) != 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (!uroce_rnic_handle(c, msg, len, &fd, nfds)) {
		/* Waiting for a neighbour that will not answer: fail it as a timeout would. */
		CHECK(c->pending.active);
		uroce_ip_cancel(ip, c->id);
		CHECK(uroce_rnic_neigh_resolved(nic, c->id, NULL, -EHOSTUNREACH) == c);
	}
	CHECK(replies == before + 1);
}

static void *qp_ring(struct uroce_rnic_client *c, uint8_t handle, bool sq, struct uroce_ring *out)
{
	struct rnic_qp *q = rnic_obj_get(c, handle, RNIC_OBJ_QP);
	struct uroce_ring *r;

	if (!q || (!sq && q->srq))
		return NULL;
	r = sq ? &q->sq : &q->rq;
	/* The application's view: a producer over the same shared memory. */
	if (uroce_ring_open(out, r->sh,
			    (uint64_t)r->elem_size * (r->mask + 1) +
				    sizeof(struct uroce_ring_shared),
			    true) != 0)
		return NULL;
	out->mine = atomic_load(&r->sh->prod);
	out->theirs = atomic_load(&r->sh->cons);
	return q;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Both sides of the administrators' gate. */
	const struct uroce_rnic_peer peer = {.pid = 1, .admin = size & 1};
	struct uroce_rnic_client *c;
	uint8_t msg[sizeof(struct uroce_ctrl_hdr) + 512];
	size_t at = 0;
	int t;

	setup_once();
	c = uroce_rnic_client_new(nic, &peer, NULL);
	CHECK(c);
	{
		/* Every connection starts with HELLO (the daemon refuses anything else). */
		struct uroce_ctrl_hdr h = {.magic = UROCE_CTRL_MAGIC,
					   .version = UROCE_CTRL_VERSION,
					   .cmd = UROCE_CTRL_HELLO,
					   .len = sizeof(h) + sizeof(struct uroce_ctrl_hello_req)};

		memset(msg, 0, sizeof(msg));
		memcpy(msg, &h, sizeof(h));
		request(c, msg, h.len);
	}
	while (at + 2 <= size) {
		uint8_t kind = data[at], n = data[at + 1];
		const uint8_t *p = data + at + 2;

		if (at + 2 + n > size)
			break;
		at += 2 + (size_t)n;
		switch (kind % 4) {
		case 0: {
			struct uroce_ctrl_hdr h = {.magic = UROCE_CTRL_MAGIC,
						   .version = UROCE_CTRL_VERSION};
			long want;

			if (n == 0)
				break;
			/* Every command: the rows are numbered 1 to UROCE_CTRL_CMD_END - 1. */
			h.cmd = (uint16_t)(1 + p[0] % (UROCE_CTRL_CMD_END - 1));
			want = uroce_ctrl_request_size(h.cmd);
			memset(msg, 0, sizeof(msg));
			memcpy(msg + sizeof(h), p + 1, (size_t)n - 1);
			h.len = (uint32_t)(sizeof(h) + (size_t)want);
			if (h.cmd == UROCE_CTRL_REG_MR) {
				/* Segment count from the payload, kept to what fits. */
				struct uroce_ctrl_reg_mr_req r;

				memcpy(&r, msg + sizeof(h), sizeof(r));
				r.nseg = 1 + r.nseg % 8;
				memcpy(msg + sizeof(h), &r, sizeof(r));
				h.len += r.nseg * (uint32_t)sizeof(struct uroce_ctrl_mr_seg);
			}
			memcpy(msg, &h, sizeof(h));
			request(c, msg, h.len);
			break;
		}
		case 1:
			if (n < sizeof(struct uroce_ctrl_hdr))
				break;
			memcpy(msg, p, n);
			request(c, msg, n);
			break;
		case 2:
		case 3: {
			struct uroce_ring r;
			struct rnic_qp *q;
			bool sq = kind % 4 == 2;

			if (n < 1)
				break;
			q = qp_ring(c, p[0], sq, &r);
			if (!q || uroce_ring_prod_space(&r) == 0)
				break;
			memset(uroce_ring_prod_slot(&r, 0), 0, r.elem_size);
			memcpy(uroce_ring_prod_slot(&r, 0), p + 1,
			       (size_t)n - 1 < r.elem_size ? (size_t)n - 1 : r.elem_size);
			uroce_ring_prod_commit(&r, 1);
			/* The doorbell, as lib/client rings it. */
			uroce_summary_set(&c->doorbells, q->doorbell_slot);
			if (!sq) {
				now_ns += 1000;
				uroce_rnic_doorbells(nic);
				uroce_rnic_process(nic);
				uroce_rnic_completions(nic);
			}
			break;
		}
		}
	}
	/* Run the data path a few turns, then the connection goes. */
	for (t = 0; t < 4; t++) {
		now_ns += 1000000;
		uroce_rnic_doorbells(nic);
		uroce_rnic_process(nic);
		uroce_rnic_completions(nic);
	}
	rnic_client_free_objects(c);
	for (t = 1; t < RNIC_OBJ_TYPES; t++)
		CHECK(c->counts[t] == 0);
	uroce_rnic_client_free(c);
	CHECK(nic->mappings == 0);
	CHECK(nic->nqps == 0 && nic->nsrqs == 0 && nic->nready == 0 && nic->nclients == 0);
	return 0;
}
