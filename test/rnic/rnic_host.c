/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The host every test_rnic case plays (rnic_host.h): its ops, which loop frames back and
 * hold the replies, and the requests a test makes as a client.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rnic_host.h"

/* ---- the host --------------------------------------------------------------------------- */

static int host_reply(void *io_ctx, void *conn, const void *msg, uint32_t len, const int *fds,
		      unsigned int nfds)
{
	struct host *h = io_ctx;

	cr_assert_eq(conn, h, "the reply goes to the connection the client was made with");
	for (unsigned int i = 0; i < h->nfds; i++)
		close(h->fds[i]);
	memcpy(h->msg, msg, len);
	h->len = len;
	/* The descriptors stay the RNIC's: the host sends copies (SCM_RIGHTS). */
	for (unsigned int i = 0; i < nfds; i++)
		h->fds[i] = dup(fds[i]);
	h->nfds = nfds;
	h->replies++;
	return 0;
}

static int host_tx(void *io_ctx, const uint8_t *frame, uint32_t len)
{
	struct host *h = io_ctx;

	h->frames++;
	/* A full queue loses the frame, as a link would: the transport recovers. */
	if (h->loopback && h->nloop < LOOP_FRAMES && len <= LOOP_FRAME_MAX) {
		memcpy(h->loop[h->nloop], frame, len);
		h->loop_len[h->nloop++] = len;
	}
	return 0;
}

/* Delivers what the RNIC sent to itself, and what that makes it send, until none is
 * left. */
void host_loop(struct host *h)
{
	static uint8_t f[LOOP_FRAME_MAX];

	while (h->nloop) {
		uint32_t len = h->loop_len[0];

		memcpy(f, h->loop[0], len);
		memmove(h->loop_len, h->loop_len + 1, (h->nloop - 1) * sizeof(h->loop_len[0]));
		memmove(h->loop, h->loop + 1, (h->nloop - 1) * sizeof(h->loop[0]));
		h->nloop--;
		uroce_rnic_rx(h->nic, f, len);
		uroce_rnic_process(h->nic);
	}
}

static enum uroce_rnic_link host_link(void *io_ctx, uint32_t *speed_mbps)
{
	struct host *h = io_ctx;

	*speed_mbps = h->speed;
	return h->link;
}

static int host_mcast(void *io_ctx, const uint8_t mac[6])
{
	(void)io_ctx;
	(void)mac;
	return 0;
}

static uint64_t host_now(void *io_ctx)
{
	return ((struct host *)io_ctx)->now;
}

/* Debug lines are counted, and the first of each machine kept (uroce_rnic_trace). */
static void host_log(void *io_ctx, int level, const char *fmt, va_list ap)
{
	struct host *h = io_ctx;
	char line[sizeof(h->first_resp)];

	if (level != UROCE_CONF_LOG_DEBUG)
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	h->debug_lines++;
	if (strstr(line, " resp: ") && !h->first_resp[0])
		memcpy(h->first_resp, line, sizeof(line));
	if (strstr(line, " comp: ") && !h->first_comp[0])
		memcpy(h->first_comp, line, sizeof(line));
}

static int host_admin(void *io_ctx, const struct uroce_ctrl_admin_req *req)
{
	(void)io_ctx;
	(void)req;
	return 0;
}

static int host_capture_start(void *io_ctx, int fd)
{
	(void)io_ctx;
	close(fd);
	return -EPERM;
}

static void host_stats(void *io_ctx,
		       void (*put)(void *out, const char *prefix, const char *name, uint64_t v),
		       void *out)
{
	(void)io_ctx;
	put(out, "daemon.", "host_counter", 7);
}

/* A PMD that keeps frames in its ring: every piece is held until the test lets go. */
static int host_tx_zc(void *io_ctx, const uint8_t *hdr, uint32_t hdr_len,
		      const struct uroce_tp_tx_seg *seg, uint32_t nseg, const uint8_t *tail,
		      uint32_t tail_len)
{
	struct host *h = io_ctx;

	(void)hdr;
	(void)hdr_len;
	(void)tail;
	(void)tail_len;
	cr_assert_leq(h->nheld + nseg, sizeof(h->held) / sizeof(h->held[0]));
	for (uint32_t i = 0; i < nseg; i++) {
		uroce_rnic_mem_hold(seg[i].mr_ctx);
		h->held[h->nheld++] = seg[i];
	}
	h->zc_frames++;
	return 0;
}

void host_release_held(struct host *h)
{
	for (unsigned int i = 0; i < h->nheld; i++)
		uroce_rnic_mem_release(h->held[i].mr_ctx);
	h->nheld = 0;
}

static uint64_t host_memlock_limit(void *io_ctx, void *conn)
{
	const struct host *h = io_ctx;

	(void)conn;
	return h->memlock ? h->memlock : UINT64_MAX;
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
	.memlock_limit = host_memlock_limit,
};

/* @p zc: a host whose port lends memory to frames (ops->tx_zc). @p seed: the RNIC's (0:
 * unpredictable identifiers). */
void host_init_cfg(struct host *h, uint8_t last_mac_byte, uint8_t last_ip_byte, bool zc,
		   uint64_t seed)
{
	static struct uroce_rnic_ops zc_ops;
	struct uroce_conf conf;
	struct uroce_ip_cfg ic;
	struct uroce_rnic_cfg cfg = {
		.conf = &conf, .eth_mtu = 1500, .ops = &host_ops, .seed = seed};

	if (zc) {
		zc_ops = host_ops;
		zc_ops.tx_zc = host_tx_zc;
		cfg.ops = &zc_ops;
	}
	const uint8_t mac[6] = {0x02, 0, 0, 0, 0, last_mac_byte};

	memset(h, 0, sizeof(*h));
	h->link = UROCE_RNIC_LINK_UP;
	h->speed = 10000;
	uroce_ip_cfg_init(&ic);
	memcpy(ic.mac, mac, 6);
	ic.v4[0][0] = 10;
	ic.v4[0][3] = last_ip_byte;
	ic.v4_count = 1;
	ic.tx = host_tx;
	ic.ctx = h;
	h->ip = uroce_ip_create(&ic);
	cr_assert_not_null(h->ip);
	uroce_conf_defaults(&conf);
	if (zc)
		conf.transport.zero_copy_min = 1024; /* off by default */
	conf.host.n_ipv4 = 1;
	memcpy(&conf.host.ipv4[0], ic.v4[0], 4);
	memcpy(cfg.mac, mac, 6);
	cfg.ip = h->ip;
	cfg.io_ctx = h;
	h->nic = uroce_rnic_create(&cfg);
	cr_assert_not_null(h->nic, "uroce_rnic_create: %s", strerror(errno));
}

void host_init_zc(struct host *h, uint8_t last_mac_byte, uint8_t last_ip_byte, bool zc)
{
	host_init_cfg(h, last_mac_byte, last_ip_byte, zc, 1);
}

void host_init(struct host *h, uint8_t last_mac_byte, uint8_t last_ip_byte)
{
	host_init_zc(h, last_mac_byte, last_ip_byte, false);
}

void host_fini(struct host *h)
{
	uroce_rnic_destroy(h->nic);
	uroce_ip_destroy(h->ip);
	for (unsigned int i = 0; i < h->nfds; i++)
		close(h->fds[i]);
}

/* Sends request @p cmd with @p payload; @return the reply's status. */
int request(struct host *h, struct uroce_rnic_client *c, uint16_t cmd, const void *payload,
	    uint32_t len)
{
	return request_fd(h, c, cmd, payload, len, -1);
}

/* ... with descriptor @p fd (-1: none), which the RNIC owns from here. */
int request_fd(struct host *h, struct uroce_rnic_client *c, uint16_t cmd, const void *payload,
	       uint32_t len, int fd)
{
	static uint8_t msg[UROCE_CTRL_MSG_MAX]; /* REG_MR's 1,024 segments fit */
	struct uroce_ctrl_hdr hdr = {.magic = UROCE_CTRL_MAGIC,
				     .version = UROCE_CTRL_VERSION,
				     .cmd = cmd,
				     .seq = 42,
				     .len = (uint32_t)sizeof(hdr) + len};
	unsigned int before = h->replies;

	cr_assert_leq(hdr.len, sizeof(msg));
	memcpy(msg, &hdr, sizeof(hdr));
	if (len) /* ALLOC_PD and the like have no payload (NULL) */
		memcpy(msg + sizeof(hdr), payload, len);
	cr_assert_eq(uroce_ctrl_check_request(msg, hdr.len, fd >= 0 ? 1 : 0), 0);
	cr_assert(uroce_rnic_handle(c, msg, hdr.len, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0),
		  "answered at once");
	cr_assert_eq(h->replies, before + 1, "exactly one reply");
	memcpy(&hdr, h->msg, sizeof(hdr));
	cr_assert_eq(hdr.cmd, cmd);
	cr_assert_eq(hdr.seq, 42u);
	return hdr.status;
}

const void *reply_payload(const struct host *h)
{
	return h->msg + sizeof(struct uroce_ctrl_hdr);
}

/* The handle a create or alloc request answered. */
uint32_t handle_of(const struct host *h)
{
	struct uroce_ctrl_handle r;

	memcpy(&r, reply_payload(h), sizeof(r));
	return r.handle;
}

/* A greeted client of @p uid, this process. */
struct uroce_rnic_client *hello_as(struct host *h, uid_t uid)
{
	const struct uroce_rnic_peer peer = {.pid = getpid(), .uid = uid, .gid = getgid()};
	struct uroce_ctrl_hello_req req = {.version = UROCE_CTRL_VERSION, .name = "test_rnic"};
	struct uroce_rnic_client *c = uroce_rnic_client_new(h->nic, &peer, h);

	cr_assert_not_null(c);
	cr_assert_eq(request(h, c, UROCE_CTRL_HELLO, &req, sizeof(req)), 0);
	cr_assert_eq(h->nfds, 3u, "the context region, the async event pipe, the wake-up socket");
	cr_assert_str_eq(uroce_rnic_client_name(c), "test_rnic");
	return c;
}

struct uroce_rnic_client *hello(struct host *h)
{
	return hello_as(h, getuid());
}

struct ibv_port_attr query_port(struct host *h, struct uroce_rnic_client *c)
{
	struct uroce_ctrl_query_port_req req = {.port = 1};
	struct uroce_ctrl_query_port_rep rep;

	cr_assert_eq(request(h, c, UROCE_CTRL_QUERY_PORT, &req, sizeof(req)), 0);
	memcpy(&rep, reply_payload(h), sizeof(rep));
	return rep.attr;
}

/* The value of counter @p name in a STATS reply (UINT64_MAX: absent). */
uint64_t stat_of(struct host *h, struct uroce_rnic_client *c, const char *name)
{
	return stat_of_flags(h, c, 0, name);
}

/* ... of a STATS request with @p flags (UROCE_CTRL_STATS_PER_QP). */
uint64_t stat_of_flags(struct host *h, struct uroce_rnic_client *c, uint32_t flags,
		       const char *name)
{
	struct uroce_ctrl_stats_req req = {.flags = flags};
	struct uroce_ctrl_stats_rep rep;
	const struct uroce_ctrl_stat *s;

	cr_assert_eq(request(h, c, UROCE_CTRL_STATS, &req, sizeof(req)), 0);
	memcpy(&rep, reply_payload(h), sizeof(rep));
	s = (const void *)((const uint8_t *)reply_payload(h) + sizeof(rep));
	for (uint32_t i = 0; i < rep.count; i++)
		if (strcmp(s[i].name, name) == 0)
			return s[i].value;
	return UINT64_MAX;
}
