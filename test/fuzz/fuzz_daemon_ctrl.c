/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uroced's control path under attack: sequences of requests (most made to pass the
 * header check, so they reach the handlers), memfds handed over with MAP_REGION, and
 * work requests written straight into the rings the daemon shares, all run by the
 * daemon's own objects.c / datapath.c / stats.c against a real transport and host
 * stack. No DPDK: the port functions they call are stubbed here.
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
#include "uroced.h"

struct ud_daemon ud = {.listen_fd = -1, .epfd = -1};
int ud_log_level = -1; /* silent */

void ud_log(int level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

/* ---- stubs for what the harness does not link (net.c, control.c, drivers/ethdev) ---- */

static unsigned int replies;

void ud_client_reply(struct ud_client *c, const struct uroce_ctrl_hdr *req, int status,
		     const void *payload, uint32_t len, const int *fds, unsigned int nfds)
{
	const struct uroce_ctrl_cmd_info *info = uroce_ctrl_cmd_info(req->cmd);

	(void)c;
	(void)payload;
	CHECK(status <= 0);
	CHECK(status != 0 || len <= UROCE_CTRL_MSG_MAX);
	CHECK(nfds <= UROCE_CTRL_MAX_FDS);
	for (unsigned int i = 0; status == 0 && i < nfds; i++)
		CHECK(fds[i] >= 0);
	if (status == 0) {
		/* What the command's row promises the client (lib/client checks the same). */
		CHECK(info);
		CHECK((info->flags & UROCE_CTRL_CMD_REP_TAIL) ? len >= info->rep_size
							       : len == info->rep_size);
		CHECK(nfds == info->rep_fds);
	}
	replies++;
}

int ud_capture_start(const char *path)
{
	(void)path;
	return -EPERM; /* no files from a fuzzer */
}

int ud_capture_start_fd(int fd)
{
	close(fd);
	return -EPERM; /* no files from a fuzzer */
}

void ud_capture_stop(void)
{
}

int ud_fault_set(const double rates[8])
{
	for (int i = 0; i < 8; i++)
		if (!(rates[i] >= 0 && rates[i] <= 1))
			return -EINVAL;
	return 0;
}

int uroce_eth_add_mcast(struct uroce_eth_port *p, const uint8_t mac[6])
{
	(void)p;
	(void)mac;
	return 0;
}

int uroce_eth_del_mcast(struct uroce_eth_port *p, const uint8_t mac[6])
{
	(void)p;
	(void)mac;
	return 0;
}

bool uroce_eth_link_up(const struct uroce_eth_port *p)
{
	(void)p;
	return true;
}

uint32_t uroce_eth_link_speed(const struct uroce_eth_port *p)
{
	(void)p;
	return 0;
}

int uroce_eth_stats_get(const struct uroce_eth_port *p, struct uroce_eth_stats *s)
{
	(void)p;
	memset(s, 0, sizeof(*s));
	return 0;
}

static int tx_sink(void *ctx, const uint8_t *frame, uint32_t len)
{
	(void)ctx;
	(void)frame;
	(void)len;
	return 0;
}

/* ---- harness ---------------------------------------------------------------------------- */

static void setup_once(void)
{
	static bool done;
	struct uroce_tp_dev_cfg tc;
	struct uroce_ip_cfg ic;
	const uint8_t mac[6] = {0x02, 0, 0, 0, 0, 1};

	if (done)
		return;
	done = true;
	memcpy(ud.mac, mac, 6);
	ud.active_mtu = IBV_MTU_1024;
	uroce_ip_link_local(ud.mac, ud.gids[0].raw);
	uroce_gid_from_ipv4(ud.gids[1].raw, (const uint8_t[4]){10, 0, 0, 1});
	ud.ngids = 2;
	uroce_tp_dev_cfg_init(&tc);
	memcpy(tc.mac, mac, 6);
	memcpy(tc.gid, ud.gids, sizeof(tc.gid));
	tc.gid_count = 2;
	tc.tx = tx_sink;
	tc.event = ud_tp_event;
	tc.cq_ready = ud_cq_ready;
	tc.rq_refill = ud_rq_refill;
	tc.seed = 1;
	ud.dev = uroce_tp_dev_create(&tc);
	CHECK(ud.dev);
	uroce_ip_cfg_init(&ic);
	memcpy(ic.mac, mac, 6);
	ic.v4[0][0] = 10;
	ic.v4[0][3] = 1;
	ic.v4_count = 1;
	ic.tx = tx_sink;
	ud.ip = uroce_ip_create(&ic);
	CHECK(ud.ip);
	ud.conf.capture.snaplen = 65535;
	ud.conf.cm.response_timeout = 20;
	ud.conf.cm.max_retries = 15;
	ud.conf.cm.timewait_ms = 1000;
	CHECK(ud_cm_init(1) == 0);
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

static void request(struct ud_client *c, uint8_t *msg, uint32_t len)
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
	if (!ud_handle(c, msg, len, &fd, nfds)) {
		/* Waiting for a neighbour that will not answer: fail it as a timeout would. */
		CHECK(c->pending.active);
		uroce_ip_cancel(ud.ip, c->id);
		ud_handle_resolved(c, NULL, -EHOSTUNREACH);
	}
	CHECK(replies == before + 1);
}

static void *qp_ring(struct ud_client *c, uint8_t handle, bool sq, struct uroce_ring *out)
{
	struct ud_qp *q = ud_obj_get(c, handle, UD_OBJ_QP);
	struct uroce_ring *r;

	if (!q || (!sq && q->srq))
		return NULL;
	r = sq ? &q->sq : &q->rq;
	/* The application's view: a producer over the same shared memory. */
	if (uroce_ring_open(out, r->sh, (uint64_t)r->elem_size * (r->mask + 1) +
					 sizeof(struct uroce_ring_shared), true) != 0)
		return NULL;
	out->mine = atomic_load(&r->sh->prod);
	out->theirs = atomic_load(&r->sh->cons);
	return q;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ud_client c;
	uint8_t msg[sizeof(struct uroce_ctrl_hdr) + 512];
	size_t at = 0;
	int t;

	setup_once();
	memset(&c, 0, sizeof(c));
	c.sock = -1;
	c.async_efd = -1;
	c.region.fd = -1;
	c.id = 1;
	c.admin = size & 1; /* both sides of the administrators' gate */
	ud.clients = &c;
	ud.nclients = 1;
	{
		/* Every connection starts with HELLO (the daemon refuses anything else). */
		struct uroce_ctrl_hdr h = {.magic = UROCE_CTRL_MAGIC, .version = UROCE_CTRL_VERSION,
					   .cmd = UROCE_CTRL_HELLO,
					   .len = sizeof(h) + sizeof(struct uroce_ctrl_hello_req)};

		memset(msg, 0, sizeof(msg));
		memcpy(msg, &h, sizeof(h));
		request(&c, msg, h.len);
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
			request(&c, msg, h.len);
			break;
		}
		case 1:
			if (n < sizeof(struct uroce_ctrl_hdr))
				break;
			memcpy(msg, p, n);
			request(&c, msg, n);
			break;
		case 2:
		case 3: {
			struct uroce_ring r;
			bool sq = kind % 4 == 2;

			if (n < 1 || !qp_ring(&c, p[0], sq, &r) || uroce_ring_prod_space(&r) == 0)
				break;
			memset(uroce_ring_prod_slot(&r, 0), 0, r.elem_size);
			memcpy(uroce_ring_prod_slot(&r, 0), p + 1,
			       (size_t)n - 1 < r.elem_size ? (size_t)n - 1 : r.elem_size);
			uroce_ring_prod_commit(&r, 1);
			if (!sq) {
				ud.now_ns += 1000;
				ud_doorbells();
				if (uroce_tp_next_deadline(ud.dev) <= ud.now_ns)
					uroce_tp_process(ud.dev, ud.now_ns);
				ud_completions();
			}
			break;
		}
		}
	}
	/* Run the data path a few turns, then the connection goes. */
	for (t = 0; t < 4; t++) {
		ud.now_ns += 1000000;
		ud_doorbells();
		uroce_tp_process(ud.dev, ud.now_ns);
		ud_completions();
	}
	uroce_ip_cancel(ud.ip, c.id);
	ud_client_free_objects(&c);
	for (t = 1; t < UD_OBJ_TYPES; t++)
		CHECK(c.counts[t] == 0);
	CHECK(ud.mappings == 0);
	CHECK(ud.nqps == 0 && ud.nsrqs == 0 && ud.nready == 0);
	ud.clients = NULL;
	ud.nclients = 0;
	return 0;
}
