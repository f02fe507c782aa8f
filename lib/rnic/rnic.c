/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RNIC itself: its identity (GID table, MTU), its transport device and CM, its
 * clients, the replies they get and the dispatch of their requests to the handlers
 * (rnic_internal.h says which file holds each).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rnic_internal.h"

void rnic_log(const struct uroce_rnic *nic, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	nic->ops->log(nic->io_ctx, level, fmt, ap);
	va_end(ap);
}

/* rxe's rule (eth_mtu_int_to_enum): the largest IB MTU that fits the Ethernet MTU after
 * the IP, UDP, BTH and largest extension headers and the ICRC. */
static enum ibv_mtu mtu_of_eth(uint32_t eth_mtu)
{
	uint32_t room = eth_mtu > 96 ? eth_mtu - 96 : 0;

	return room >= 4096 ? IBV_MTU_4096 :
	       room >= 2048 ? IBV_MTU_2048 :
	       room >= 1024 ? IBV_MTU_1024 :
	       room >= 512  ? IBV_MTU_512 :
			      IBV_MTU_256;
}

static void build_gids(struct uroce_rnic *nic)
{
	const struct uroce_conf *conf = &nic->conf;
	unsigned int i;

	/* rxe's order: the link-local GID from the MAC first, then the IPv4-mapped GIDs,
	 * then the other IPv6 addresses. */
	nic->ngids = 0;
	uroce_ip_link_local(nic->mac, nic->gids[nic->ngids++].raw);
	for (i = 0; i < conf->host.n_ipv4 && nic->ngids < UROCE_TP_MAX_GID; i++)
		uroce_gid_from_ipv4(nic->gids[nic->ngids++].raw, &conf->host.ipv4[i]);
	for (i = 0; i < conf->host.n_ipv6 && nic->ngids < UROCE_TP_MAX_GID; i++)
		memcpy(nic->gids[nic->ngids++].raw, &conf->host.ipv6[i], 16);
}

uint64_t rnic_random(void *io_ctx)
{
	struct uroce_rnic *nic = io_ctx;

	if (nic->random_left == 0) {
		ssize_t n;

		/* Up to 256 bytes never come short nor are interrupted once the pool is
		 * initialised (getrandom(2)); a failure means no getrandom at all. */
		do
			n = getrandom(nic->random_pool, sizeof(nic->random_pool), 0);
		while (n < 0 && errno == EINTR);
		if (n != (ssize_t)sizeof(nic->random_pool)) {
			RNIC_ERR(nic, "getrandom: %s", n < 0 ? strerror(errno) : "short read");
			abort(); /* guessable identifiers are worse than no daemon */
		}
		nic->random_left = sizeof(nic->random_pool) / sizeof(nic->random_pool[0]);
	}
	return nic->random_pool[--nic->random_left];
}

struct uroce_rnic *uroce_rnic_create(const struct uroce_rnic_cfg *cfg)
{
	struct uroce_tp_dev_cfg tc;
	struct uroce_rnic *nic;
	int rc;

	if (!cfg->ops || !cfg->conf || !cfg->ip ||
	    (cfg->ops->tx_buf == NULL) != (cfg->ops->tx_commit == NULL)) {
		errno = EINVAL;
		return NULL;
	}
	nic = calloc(1, sizeof(*nic));
	if (!nic) {
		errno = ENOMEM;
		return NULL;
	}
	nic->wake_epfd = epoll_create1(EPOLL_CLOEXEC);
	if (nic->wake_epfd < 0) {
		int err = errno;

		free(nic);
		errno = err;
		return NULL;
	}
	nic->ops = cfg->ops;
	nic->io_ctx = cfg->io_ctx;
	nic->conf = *cfg->conf;
	nic->ip = cfg->ip;
	memcpy(nic->mac, cfg->mac, 6);
	nic->active_mtu = mtu_of_eth(cfg->eth_mtu);
	build_gids(nic);

	uroce_tp_dev_cfg_init(&tc);
	memcpy(tc.mac, nic->mac, 6);
	memcpy(tc.gid, nic->gids, sizeof(tc.gid));
	tc.gid_count = nic->ngids;
	/* The host's frame functions themselves: the transport calls the port directly. */
	tc.tx = nic->ops->tx;
	tc.tx_buf = nic->ops->tx_buf;
	tc.tx_commit = nic->ops->tx_commit;
	tc.tx_ctx = cfg->io_ctx;
	if (nic->ops->tx_zc && nic->conf.transport.zero_copy_min) {
		tc.tx_zc = nic->ops->tx_zc;
		tc.zc_min = nic->conf.transport.zero_copy_min;
	}
	tc.event = rnic_tp_event;
	tc.rq_refill = rnic_rq_refill;
	tc.gsi_rx = rnic_cm_gsi_rx;
	tc.io_ctx = nic;
	/* Identifiers a peer could guess from the time and pid help it forge packets for
	 * a tenant's connection: without a seed, they come from the kernel's CSPRNG. */
	tc.seed = cfg->seed;
	if (!cfg->seed) {
		nic->random_ok = true;
		tc.random = rnic_random;
	}
	tc.ack_coalesce = nic->conf.transport.ack_coalesce;
	tc.max_unacked_psns = nic->conf.transport.max_unacked_psns;
	tc.max_pkts_per_ack = nic->conf.transport.max_pkts_per_ack;
	tc.tx_burst = nic->conf.transport.tx_burst;
	tc.port_mtu = nic->active_mtu;
	tc.vlan_id = (uint16_t)nic->conf.port.vlan;
	tc.eth_mtu = nic->conf.port.mtu;
	nic->dev = uroce_tp_dev_create(&tc);
	if (!nic->dev) {
		rc = -errno;
		RNIC_ERR(nic, "cannot create the device: %s", strerror(-rc));
		goto err;
	}
	rc = rnic_cm_init(nic, tc.seed * 0x9e3779b97f4a7c15ull + 1);
	if (rc)
		goto err;
	return nic;
err:
	uroce_rnic_destroy(nic);
	errno = -rc;
	return NULL;
}

void uroce_rnic_destroy(struct uroce_rnic *nic)
{
	if (!nic)
		return;
	while (nic->clients)
		uroce_rnic_client_free(nic->clients);
	rnic_orphans_retry(nic, true);
	rnic_mems_orphan(nic);
	rnic_cm_fini(nic);
	if (nic->dev)
		uroce_tp_dev_destroy(nic->dev);
	free(nic->qps);
	free(nic->srqs);
	free(nic->retiring);
	close(nic->wake_epfd);
	free(nic);
}

enum ibv_mtu uroce_rnic_active_mtu(const struct uroce_rnic *nic)
{
	return nic->active_mtu;
}

uint64_t uroce_rnic_node_guid(const struct uroce_rnic *nic)
{
	uint64_t guid;

	memcpy(&guid, nic->gids[0].raw + 8, 8);
	return guid;
}

/* ---- clients ------------------------------------------------------------------------ */

struct uroce_rnic_client *uroce_rnic_client_new(struct uroce_rnic *nic,
						const struct uroce_rnic_peer *peer, void *conn)
{
	struct uroce_rnic_client *c = calloc(1, sizeof(*c));

	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->rnic = nic;
	c->conn = conn;
	c->pid = peer->pid;
	c->uid = peer->uid;
	c->gid = peer->gid;
	c->admin = peer->admin;
	c->id = ++nic->next_client_id;
	c->async_pipe.wfd = c->async_pipe.rfd = -1;
	c->wake_fd = -1;
	c->region.fd = -1;
	strcpy(c->name, "?");
	c->next = nic->clients;
	nic->clients = c;
	nic->nclients++;
	return c;
}

void uroce_rnic_client_free(struct uroce_rnic_client *c)
{
	struct uroce_rnic *nic = c->rnic;
	struct uroce_rnic_client **pp;

	uroce_ip_cancel(nic->ip, c->id);
	rnic_client_free_objects(c);
	for (pp = &nic->clients; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	nic->nclients--;
	free(c);
}

const char *uroce_rnic_client_name(const struct uroce_rnic_client *c)
{
	return c->name;
}

pid_t uroce_rnic_client_pid(const struct uroce_rnic_client *c)
{
	return c->pid;
}

uint64_t uroce_rnic_client_id(const struct uroce_rnic_client *c)
{
	return c->id;
}

bool uroce_rnic_client_greeted(const struct uroce_rnic_client *c)
{
	return c->region.addr != NULL; /* the context region comes with an accepted HELLO */
}

void uroce_rnic_reply(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *req, int status,
		      const void *payload, uint32_t len, const int *fds, unsigned int nfds)
{
	struct uroce_rnic *nic = c->rnic;
	uint8_t buf[sizeof(struct uroce_ctrl_hdr) + UROCE_CTRL_MSG_MAX];
	struct uroce_ctrl_hdr h = {
		.magic = UROCE_CTRL_MAGIC,
		.version = UROCE_CTRL_VERSION,
		.cmd = req->cmd,
		.seq = req->seq,
		.status = status,
	};

	if (status)
		len = 0, nfds = 0;
	if (len > UROCE_CTRL_MSG_MAX - sizeof(h))
		len = 0, h.status = -EOVERFLOW;
	h.len = (uint32_t)(sizeof(h) + len);
	memcpy(buf, &h, sizeof(h));
	if (len)
		memcpy(buf + sizeof(h), payload, len);
	if (nic->ops->reply(nic->io_ctx, c->conn, buf, h.len, fds, nfds) < 0)
		RNIC_DBG(nic, "client %s[%d]: reply to %s lost", c->name, (int)c->pid,
			 uroce_ctrl_cmd_name(req->cmd));
	if (status && status != -EAGAIN)
		RNIC_DBG(nic, "client %s[%d]: %s -> %s", c->name, (int)c->pid,
			 uroce_ctrl_cmd_name(req->cmd), strerror(-status));
}

/* The dispatch: one handler per row of UROCE_CTRL_COMMANDS, at the command's number. */
#define RNIC_CMD_HANDLER(NAME, name, ...) [UROCE_CTRL_##NAME] = rnic_cmd_##name,
static rnic_cmd_handler *const rnic_cmd_handlers[] = {UROCE_CTRL_COMMANDS(RNIC_CMD_HANDLER)};
#undef RNIC_CMD_HANDLER
_Static_assert(sizeof(rnic_cmd_handlers) / sizeof(rnic_cmd_handlers[0]) == UROCE_CTRL_CMD_END,
	       "a handler for every command up to UROCE_CTRL_CMD_END");

bool rnic_handle(struct uroce_rnic_client *c, const uint8_t *msg, uint32_t len, const int *fds,
		 unsigned int nfds)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_cmd_info *info;
	struct uroce_ctrl_hdr h;

	(void)len;
	memcpy(&h, msg, sizeof(h));
	if (h.cmd != UROCE_CTRL_HELLO && !c->region.addr) {
		/* Nothing before HELLO: it is where versions are compared. */
		REPLY(c, &h, -EPROTO, NULL, 0);
		if (nfds)
			close(fds[0]);
		return true;
	}
	info = uroce_ctrl_cmd_info(h.cmd);
	if (!info) {
		REPLY(c, &h, -EINVAL, NULL, 0);
		return true;
	}
	if ((info->flags & UROCE_CTRL_CMD_ADMIN) && !c->admin) {
		/* Capture sees every tenant's payloads; faults and cm-drop hurt everyone's
		 * traffic: root and control.admin_group only. */
		nic->cnt.admin_refused++;
		RNIC_WARN(nic,
			  "client %s[%d] (uid %u): %s refused: not an administrator "
			  "(root or control.admin_group)",
			  c->name, c->pid, (unsigned int)c->uid, info->name);
		if (nfds)
			close(fds[0]);
		REPLY(c, &h, -EPERM, NULL, 0);
		return true;
	}
	rnic_cmd_handlers[h.cmd](c, &h, msg + sizeof(h), fds);
	return !c->pending.active;
}

void rnic_handle_resolved(struct uroce_rnic_client *c, const uint8_t *mac, int err)
{
	struct uroce_ctrl_hdr h;

	c->pending.active = false;
	memcpy(&h, c->pending.msg, sizeof(h));
	if (!mac) {
		/* No answer to our ARP/ND probes: the peer is unreachable. */
		REPLY(c, &h, err ? err : -EHOSTUNREACH, NULL, 0);
		return;
	}
	/* The neighbour is cached now: handling the request again finds it at once. */
	if (!rnic_handle(c, c->pending.msg, c->pending.len, NULL, 0)) {
		c->pending.active = false;
		REPLY(c, &h, -EHOSTUNREACH, NULL, 0);
	}
}

bool uroce_rnic_handle(struct uroce_rnic_client *c, const uint8_t *msg, uint32_t len,
		       const int *fds, unsigned int nfds)
{
	return rnic_handle(c, msg, len, fds, nfds);
}

struct uroce_rnic_client *uroce_rnic_neigh_resolved(struct uroce_rnic *nic, uint64_t cookie,
						    const uint8_t *mac, int err)
{
	struct uroce_rnic_client *c;

	if (rnic_cm_neigh_resolved(nic, cookie, mac, err))
		return NULL;
	for (c = nic->clients; c; c = c->next)
		if (c->id == cookie && c->pending.active) {
			rnic_handle_resolved(c, mac, err);
			return c;
		}
	return NULL;
}

/* ---- the poll loop ------------------------------------------------------------------ */

/* Frames come in through the RNIC, not to the transport device it owns: the host knows
 * neither the device nor the RNIC's clock (rx and flow_rx are the boundary, kept). */
void uroce_rnic_rx(struct uroce_rnic *nic, const uint8_t *frame, uint32_t len)
{
	uroce_tp_rx(nic->dev, frame, len, rnic_now(nic));
}

void uroce_rnic_rx_parsed(struct uroce_rnic *nic, const struct uroce_wire_pkt *pkt,
			  enum uroce_wire_err err)
{
	uroce_tp_rx_parsed(nic->dev, pkt, err, rnic_now(nic));
}

bool uroce_rnic_flow_rx(struct uroce_rnic *nic, const uint8_t *frame, uint32_t len,
			bool claimable)
{
	return uroce_tp_flow_rx(nic->dev, frame, len, claimable);
}

unsigned int uroce_rnic_process(struct uroce_rnic *nic)
{
	uint64_t now = rnic_now(nic);

	if (uroce_tp_next_deadline(nic->dev) <= now)
		uroce_tp_process(nic->dev, now);
	rnic_cm_process(nic);
	/* The turn's completions, its doorbells', frames' and timers', into the shared CQ
	 * rings at its end, together: datapath.c, rnic_completions, says why. */
	return rnic_completions(nic);
}

/* The transport's state changes, as debug lines of the host's log. */
static void tp_debug_log(void *io_ctx, const char *fmt, va_list ap)
{
	struct uroce_rnic *nic = io_ctx;

	nic->ops->log(nic->io_ctx, UROCE_CONF_LOG_DEBUG, fmt, ap);
}

void uroce_rnic_trace(struct uroce_rnic *nic, bool on)
{
	uroce_tp_set_debug_log(nic->dev, on ? tp_debug_log : NULL);
}

uint64_t uroce_rnic_next_deadline(const struct uroce_rnic *nic)
{
	uint64_t t = uroce_tp_next_deadline(nic->dev), cm = uroce_cm_next_deadline(nic->cm);

	/* Orphaned CM ids are destroyed on the next turn. */
	if (nic->norphans)
		return 0;
	return cm < t ? cm : t;
}

/* ---- signalling ----------------------------------------------------------------------- */

int rnic_event_pipe_open(struct rnic_event_pipe *p, int *client_fd)
{
	char path[32];
	int fds[2], rc;

	p->wfd = p->rfd = -1;
	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0)
		return -errno;
	/* The least a pipe holds (one page; the default is 16): a failure leaves more. */
	(void)fcntl(fds[1], F_SETPIPE_SZ, RNIC_EVENT_PIPE_BYTES);
	/* Opening the pipe again makes a new open file description: flags of its own. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[0]);
	p->rfd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (p->rfd < 0) {
		rc = -errno;
		close(fds[0]);
		close(fds[1]);
		return rc;
	}
	p->wfd = fds[1];
	*client_fd = fds[0];
	return 0;
}

void rnic_event_pipe_close(struct rnic_event_pipe *p)
{
	if (p->wfd >= 0)
		close(p->wfd);
	if (p->rfd >= 0)
		close(p->rfd);
	p->wfd = p->rfd = -1;
}

bool rnic_event_pipe_post(struct uroce_rnic *nic, struct rnic_event_pipe *p)
{
	static const uint8_t one = 1;

	if (write(p->wfd, &one, 1) == 1)
		return true;
	nic->cnt.event_pipe_full++; /* EAGAIN: the client let a pipe's worth wait */
	return false;
}

bool rnic_event_pipe_take(struct rnic_event_pipe *p)
{
	uint8_t b;

	return read(p->rfd, &b, 1) == 1;
}

/* ---- sleeping ------------------------------------------------------------------------ */

/* Clients whose wake-ups one uroce_rnic_sleep_end() drains, and datagrams from each: a
 * client that sent more (or any beyond) is drained at the next, the daemon awake
 * meanwhile, as posts keep it. */
#define RNIC_WAKE_BATCH 64
#define RNIC_WAKE_DRAIN 64

int rnic_wake_add(struct uroce_rnic_client *c, int *client_fd)
{
	struct epoll_event ee = {.events = EPOLLIN, .data.ptr = c};
	int sv[2], rc;

	/* A datagram socket pair rather than a pipe: a send to a daemon that is gone fails
	 * (no SIGPIPE in the application), and a client that closes its end leaves ours
	 * quiet (a pipe's read end would poll readable for ever). */
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
		return -errno;
	if (epoll_ctl(c->rnic->wake_epfd, EPOLL_CTL_ADD, sv[0], &ee) != 0) {
		rc = -errno;
		close(sv[0]);
		close(sv[1]);
		return rc;
	}
	c->wake_fd = sv[0];
	*client_fd = sv[1];
	return 0;
}

void rnic_wake_del(struct uroce_rnic_client *c)
{
	if (c->wake_fd < 0)
		return;
	/* Out of the set by name: a close alone leaves it there while any copy of the
	 * open file lives, and the set's entries point at the client. */
	epoll_ctl(c->rnic->wake_epfd, EPOLL_CTL_DEL, c->wake_fd, NULL);
	close(c->wake_fd);
	c->wake_fd = -1;
}

int uroce_rnic_wake_fd(const struct uroce_rnic *nic)
{
	return nic->wake_epfd;
}

bool uroce_rnic_sleep_begin(struct uroce_rnic *nic)
{
	struct uroce_rnic_client *c;

	for (c = nic->clients; c; c = c->next)
		if (c->wake)
			uroce_wake_announce(c->wake);
	/* Announcements before the re-read of the producer indices (lib/shm's Dekker pair
	 * with uroce_wake_take()). */
	uroce_wake_fence();
	if (rnic_doorbells_moved(nic)) {
		uroce_rnic_sleep_end(nic);
		return false;
	}
	return true;
}

void uroce_rnic_sleep_end(struct uroce_rnic *nic)
{
	struct epoll_event ev[RNIC_WAKE_BATCH];
	struct uroce_rnic_client *c;
	uint8_t b;
	int n, i, k;

	for (c = nic->clients; c; c = c->next)
		if (c->wake)
			uroce_wake_withdraw(c->wake);
	/* The clients that rang (the socket of a client that went is out of the set). */
	n = epoll_wait(nic->wake_epfd, ev, RNIC_WAKE_BATCH, 0);
	if (n < 0 && errno != EINTR)
		RNIC_WARN(nic, "reading the wake-ups: %s", strerror(errno));
	for (i = 0; i < n; i++) {
		c = ev[i].data.ptr;
		for (k = 0; k < RNIC_WAKE_DRAIN; k++)
			if (recv(c->wake_fd, &b, sizeof(b), MSG_DONTWAIT) < 0)
				break;
	}
}

void uroce_rnic_port_event(struct uroce_rnic *nic, bool up)
{
	rnic_tp_event(nic, up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR, NULL);
}
