/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/rnic without a daemon: the software RNIC driven by a host played here (its ops),
 * with no port, socket or DPDK. What uroced's tests show end to end, shown at the
 * library's own boundary: requests in, replies and events out, the port's state as the
 * host reports it, and each RNIC's state its own (two in one process share nothing).
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "uroce_rnic.h"
#include "uroce_shm.h"

/* ---- the host --------------------------------------------------------------------------- */

struct host {
	enum uroce_rnic_link link;
	uint32_t speed;
	uint64_t now;
	unsigned int frames;
	/* the last reply */
	uint8_t msg[UROCE_CTRL_MSG_MAX];
	uint32_t len;
	int fds[UROCE_CTRL_MAX_FDS];
	unsigned int nfds;
	unsigned int replies;
	struct uroce_ip_stack *ip;
	struct uroce_rnic *nic;
};

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

	(void)frame;
	(void)len;
	h->frames++;
	return 0;
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

static void host_init(struct host *h, uint8_t last_mac_byte, uint8_t last_ip_byte)
{
	struct uroce_conf conf;
	struct uroce_ip_cfg ic;
	struct uroce_rnic_cfg cfg = {.conf = &conf, .eth_mtu = 1500, .ops = &host_ops, .seed = 1};
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
	conf.host.n_ipv4 = 1;
	memcpy(&conf.host.ipv4[0], ic.v4[0], 4);
	memcpy(cfg.mac, mac, 6);
	cfg.ip = h->ip;
	cfg.io_ctx = h;
	h->nic = uroce_rnic_create(&cfg);
	cr_assert_not_null(h->nic, "uroce_rnic_create: %s", strerror(errno));
}

static void host_fini(struct host *h)
{
	uroce_rnic_destroy(h->nic);
	uroce_ip_destroy(h->ip);
	for (unsigned int i = 0; i < h->nfds; i++)
		close(h->fds[i]);
}

/* Sends request @p cmd with @p payload; @return the reply's status. */
static int request(struct host *h, struct uroce_rnic_client *c, uint16_t cmd, const void *payload,
		   uint32_t len)
{
	uint8_t msg[sizeof(struct uroce_ctrl_hdr) + 512];
	struct uroce_ctrl_hdr hdr = {.magic = UROCE_CTRL_MAGIC,
				     .version = UROCE_CTRL_VERSION,
				     .cmd = cmd,
				     .seq = 42,
				     .len = (uint32_t)sizeof(hdr) + len};
	unsigned int before = h->replies;

	memcpy(msg, &hdr, sizeof(hdr));
	memcpy(msg + sizeof(hdr), payload, len);
	cr_assert_eq(uroce_ctrl_check_request(msg, hdr.len, 0), 0);
	cr_assert(uroce_rnic_handle(c, msg, hdr.len, NULL, 0), "answered at once");
	cr_assert_eq(h->replies, before + 1, "exactly one reply");
	memcpy(&hdr, h->msg, sizeof(hdr));
	cr_assert_eq(hdr.cmd, cmd);
	cr_assert_eq(hdr.seq, 42u);
	return hdr.status;
}

static const void *reply_payload(const struct host *h)
{
	return h->msg + sizeof(struct uroce_ctrl_hdr);
}

static struct uroce_rnic_client *hello(struct host *h)
{
	const struct uroce_rnic_peer peer = {.pid = getpid(), .uid = getuid(), .gid = getgid()};
	struct uroce_ctrl_hello_req req = {.version = UROCE_CTRL_VERSION, .name = "test_rnic"};
	struct uroce_rnic_client *c = uroce_rnic_client_new(h->nic, &peer, h);

	cr_assert_not_null(c);
	cr_assert_eq(request(h, c, UROCE_CTRL_HELLO, &req, sizeof(req)), 0);
	cr_assert_eq(h->nfds, 3u, "the context region, the async eventfd, the wake eventfd");
	cr_assert_str_eq(uroce_rnic_client_name(c), "test_rnic");
	return c;
}

static struct ibv_port_attr query_port(struct host *h, struct uroce_rnic_client *c)
{
	struct uroce_ctrl_query_port_req req = {.port = 1};
	struct uroce_ctrl_query_port_rep rep;

	cr_assert_eq(request(h, c, UROCE_CTRL_QUERY_PORT, &req, sizeof(req)), 0);
	memcpy(&rep, reply_payload(h), sizeof(rep));
	return rep.attr;
}

/* The value of counter @p name in a STATS reply (UINT64_MAX: absent). */
static uint64_t stat_of(struct host *h, struct uroce_rnic_client *c, const char *name)
{
	struct uroce_ctrl_stats_req req = {0};
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

/* ---- tests ---------------------------------------------------------------------------- */

Test(rnic, nothing_before_hello)
{
	struct host h;
	const struct uroce_rnic_peer peer = {.pid = 1};
	struct uroce_rnic_client *c;

	host_init(&h, 1, 1);
	c = uroce_rnic_client_new(h.nic, &peer, &h);
	cr_assert_eq(request(&h, c, UROCE_CTRL_QUERY_DEVICE, NULL, 0), -EPROTO);
	cr_assert_eq(h.frames, 0u);
	host_fini(&h);
}

Test(rnic, query_port_follows_the_hosts_link)
{
	struct host h;
	struct uroce_rnic_client *c;
	struct ibv_port_attr a;

	host_init(&h, 1, 1);
	c = hello(&h);
	a = query_port(&h, c);
	cr_assert_eq(a.state, IBV_PORT_ACTIVE);
	cr_assert_eq(a.phys_state, 5, "LinkUp");
	cr_assert_eq(a.active_speed, 8, "10 Gbit/s: FDR10's code");
	cr_assert_eq(a.active_mtu, IBV_MTU_1024, "Ethernet 1500 carries IB 1024");
	h.link = UROCE_RNIC_LINK_DOWN;
	a = query_port(&h, c);
	cr_assert_eq(a.state, IBV_PORT_DOWN);
	cr_assert_eq(a.phys_state, 2, "Polling: the port is started, no carrier");
	h.link = UROCE_RNIC_LINK_DISABLED;
	a = query_port(&h, c);
	cr_assert_eq(a.state, IBV_PORT_DOWN);
	cr_assert_eq(a.phys_state, 3, "Disabled");
	host_fini(&h);
}

Test(rnic, port_event_reaches_every_clients_async_ring)
{
	struct host h;
	struct uroce_rnic_client *c;
	struct uroce_ctrl_hello_rep rep;
	struct uroce_shm_region region = {.fd = -1};
	struct uroce_ring ring;
	struct uroce_ctrl_async_event ev;
	uint64_t n = 0;
	int efd;

	host_init(&h, 1, 1);
	c = hello(&h);
	(void)c;
	memcpy(&rep, reply_payload(&h), sizeof(rep));
	/* The application's side: the context region mapped, its ring read as consumer. */
	cr_assert_eq(uroce_shm_attach(&region, dup(h.fds[0]), UROCE_CTRL_REGION_CONTEXT), 0);
	cr_assert_eq(uroce_ring_open(&ring, (uint8_t *)region.addr + rep.async_ring_offset,
				     region.size - rep.async_ring_offset, false),
		     0);
	efd = dup(h.fds[1]);
	uroce_rnic_port_event(h.nic, false);
	uroce_rnic_port_event(h.nic, true);
	cr_assert_eq(uroce_ring_cons_avail(&ring), 2u);
	memcpy(&ev, uroce_ring_cons_slot(&ring, 0), sizeof(ev));
	cr_assert_eq(ev.event_type, IBV_EVENT_PORT_ERR);
	cr_assert_eq(ev.port, 1u);
	memcpy(&ev, uroce_ring_cons_slot(&ring, 1), sizeof(ev));
	cr_assert_eq(ev.event_type, IBV_EVENT_PORT_ACTIVE);
	cr_assert_eq(read(efd, &n, sizeof(n)), (ssize_t)sizeof(n), "the eventfd is readable");
	cr_assert_eq(n, 1u, "a semaphore eventfd: one per read");
	close(efd);
	uroce_shm_close(&region);
	host_fini(&h);
}

/* The application's view of a client's sleep announcement: its context region mapped,
 * and the wake eventfd HELLO handed out. */
struct app_wake {
	struct uroce_shm_region region;
	struct uroce_shm_wake *wake;
	int efd;
};

static void app_wake_open(struct app_wake *a, const struct host *h)
{
	struct uroce_ctrl_hello_rep rep;

	memcpy(&rep, reply_payload(h), sizeof(rep));
	a->region.fd = -1;
	cr_assert_eq(uroce_shm_attach(&a->region, dup(h->fds[0]), UROCE_CTRL_REGION_CONTEXT), 0);
	cr_assert_eq(rep.wake_offset % UROCE_SHM_CACHELINE, 0u);
	cr_assert_neq(rep.wake_offset, rep.async_ring_offset);
	/* The CQ waiters' line: its own, between the announcement and the async ring. */
	cr_assert_eq(rep.waiters_offset % UROCE_SHM_CACHELINE, 0u);
	cr_assert_geq(rep.waiters_offset, rep.wake_offset + sizeof(struct uroce_shm_wake));
	cr_assert_leq(rep.waiters_offset + sizeof(struct uroce_shm_waiters), rep.async_ring_offset);
	a->wake = (void *)((uint8_t *)a->region.addr + rep.wake_offset);
	a->efd = dup(h->fds[2]);
}

/* What lib/client does after a post's commit. */
static void app_posted(struct app_wake *a)
{
	static const uint64_t one = 1;

	if (uroce_wake_take(a->wake))
		cr_assert_eq(write(a->efd, &one, sizeof(one)), (ssize_t)sizeof(one));
}

static bool readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) == 1;
}

/* The RNIC announces a sleep to every client; a post while it is up rings the wake
 * eventfd, once per client and announcement; the end of the sleep takes the announcement
 * back and drains the eventfd, so posts are plain writes again. */
Test(rnic, a_sleep_is_announced_to_every_client_and_a_post_rings_once)
{
	struct host h;
	struct app_wake a, b;
	int wake = -1;

	host_init(&h, 1, 1);
	hello(&h);
	app_wake_open(&a, &h);
	hello(&h);
	app_wake_open(&b, &h);
	wake = uroce_rnic_wake_fd(h.nic);
	cr_assert_geq(wake, 0);

	app_posted(&a); /* awake: a plain write, no ring */
	cr_assert_not(readable(wake));
	cr_assert(uroce_rnic_sleep_begin(h.nic), "no queue: nothing posted, may sleep");
	cr_assert_eq(atomic_load(&a.wake->sleeping), 1u);
	cr_assert_eq(atomic_load(&b.wake->sleeping), 1u);
	app_posted(&a);
	cr_assert(readable(wake), "a post during the sleep rings");
	cr_assert_eq(atomic_load(&a.wake->sleeping), 0u, "taken down by the post that rang");
	cr_assert_eq(atomic_load(&b.wake->sleeping), 1u, "each client has its own");
	app_posted(&a);
	app_posted(&b);
	uroce_rnic_sleep_end(h.nic);
	cr_assert_not(readable(wake), "drained at the end of the sleep");
	cr_assert_eq(atomic_load(&b.wake->sleeping), 0u);
	app_posted(&b);
	cr_assert_not(readable(wake));

	close(a.efd);
	close(b.efd);
	uroce_shm_close(&a.region);
	uroce_shm_close(&b.region);
	host_fini(&h);
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
