/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control socket: accepting applications, reading their requests, answering them,
 * and noticing when they go (a closed socket, kill -9 included, frees all they had).
 *
 * Every request is checked by uroce_ctrl_check_request() before a handler sees it; a
 * message that fails the check is a protocol violation: the daemon logs it, answers
 * -EINVAL (or -EPROTO for another version) and drops the connection, so a hostile or
 * broken client can neither crash the daemon nor leave it half-understanding a stream.
 */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "uroced.h"

/* Clients closed during one poll are freed at its end: a later event of the same batch
 * may still point at one, and must not find its memory reused by a new connection. */
static struct ud_client *gone_clients;

static void client_close(struct ud_client *c, const char *why)
{
	struct ud_client **pp;

	if (c->sock < 0)
		return; /* already closed in this batch */
	UD_INFO("client %s[%d] (#%llu): %s", c->name, c->pid, (unsigned long long)c->id, why);
	uroce_ip_cancel(ud.ip, c->id);
	ud_client_free_objects(c);
	epoll_ctl(ud.epfd, EPOLL_CTL_DEL, c->sock, NULL);
	close(c->sock);
	c->sock = -1;
	for (pp = &ud.clients; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	ud.nclients--;
	ud.cnt.clients_closed++;
	c->next = gone_clients;
	gone_clients = c;
}

static void free_gone_clients(void)
{
	while (gone_clients) {
		struct ud_client *c = gone_clients;

		gone_clients = c->next;
		free(c);
	}
}

void ud_client_reply(struct ud_client *c, const struct uroce_ctrl_hdr *req, int status,
		     const void *payload, uint32_t len, const int *fds, unsigned int nfds)
{
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
	/* A client that does not read its replies only hurts itself: the send is
	 * non-blocking and a full socket drops the connection at the next poll. */
	if (uroce_ctrl_send(c->sock, buf, h.len, fds, nfds) < 0)
		UD_DBG("client %s[%d]: reply to %s lost", c->name, c->pid,
			uroce_ctrl_cmd_name(req->cmd));
	if (status && status != -EAGAIN)
		UD_DBG("client %s[%d]: %s -> %s", c->name, c->pid, uroce_ctrl_cmd_name(req->cmd),
		       strerror(-status));
}

/* Reads and handles one request. @return false when the client must go. */
static bool client_request(struct ud_client *c)
{
	uint8_t buf[UROCE_CTRL_MSG_MAX];
	int fds[UROCE_CTRL_MAX_FDS];
	unsigned int nfds = 0, i;
	long n;
	int rc;

	n = uroce_ctrl_recv(c->sock, buf, sizeof(buf), fds, UROCE_CTRL_MAX_FDS, &nfds);
	if (n == -EAGAIN)
		return true;
	if (n <= 0)
		return false; /* closed, reset, or a message too big to be ours */
	rc = uroce_ctrl_check_request(buf, (size_t)n, nfds);
	if (rc) {
		struct uroce_ctrl_hdr h = {0};

		ud.cnt.bad_requests++;
		if ((size_t)n >= sizeof(h))
			memcpy(&h, buf, sizeof(h));
		UD_WARN("client %s[%d]: malformed %s request (%ld bytes, %u fds): %s", c->name,
			c->pid, uroce_ctrl_cmd_name(h.cmd), n, nfds,
			rc == -EPROTO ? "another protocol version" : "refused");
		ud_client_reply(c, &h, rc, NULL, 0, NULL, 0);
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		return false;
	}
	if (!ud_handle(c, buf, (uint32_t)n, fds, nfds)) {
		/* Waits for a neighbour; no further request is read meanwhile (a client has
		 * one request in flight, and this keeps the replies in order). */
		epoll_ctl(ud.epfd, EPOLL_CTL_MOD, c->sock,
			  &(struct epoll_event){.events = EPOLLRDHUP, .data.ptr = c});
	}
	return true;
}

void ud_neigh_resolved(void *ctx, uint64_t cookie, const uint8_t gid[16], const uint8_t *mac,
		       int err)
{
	struct ud_client *c;

	(void)ctx;
	(void)gid;
	if (ud_cm_neigh_resolved(cookie, mac, err))
		return;
	for (c = ud.clients; c; c = c->next)
		if (c->id == cookie && c->pending.active) {
			ud_handle_resolved(c, mac, err);
			epoll_ctl(ud.epfd, EPOLL_CTL_MOD, c->sock,
				  &(struct epoll_event){.events = EPOLLIN | EPOLLRDHUP,
							.data.ptr = c});
			return;
		}
}

/* The table is full: free the slots of clients that have gone but whose hangup this
 * poll has not reached yet, so a burst of short-lived connections cannot lock out the
 * next real one. */
static void reap_gone_clients(void)
{
	struct ud_client *c = ud.clients, *next;

	for (; c; c = next) {
		struct pollfd p = {.fd = c->sock, .events = POLLRDHUP};

		next = c->next;
		/* Hung up, even with requests still unread: nobody would read the replies,
		 * and closing frees everything those requests could have touched. */
		if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR)))
			client_close(c, "gone");
	}
}

/* Is the peer root or a member (primary or supplementary) of control.admin_group? */
static bool peer_is_admin(int fd, const struct ucred *cred)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);

	if (cred->uid == 0)
		return true;
	if (!ud.have_admin_group)
		return false;
	if (cred->gid == ud.admin_gid)
		return true;
	/* More than 256 supplementary groups: ERANGE, and the peer is not an admin. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) != 0)
		return false;
	for (size_t i = 0; i < len / sizeof(groups[0]); i++)
		if (groups[i] == ud.admin_gid)
			return true;
	return false;
}

static void accept_clients(void)
{
	for (;;) {
		int fd = accept4(ud.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ucred cred;
		socklen_t len = sizeof(cred);
		struct ud_client *c;

		if (fd < 0)
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
			UD_WARN("refusing a client: no peer credentials: %s", strerror(errno));
			ud.cnt.clients_refused++;
			close(fd);
			continue;
		}
		if (ud.nclients >= ud.conf.control.max_clients)
			reap_gone_clients();
		if (ud.nclients >= ud.conf.control.max_clients) {
			UD_WARN("refusing a client: %u connected (control.max_clients)",
				ud.nclients);
			ud.cnt.clients_refused++;
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->sock = fd;
		c->pid = (int)cred.pid;
		c->uid = cred.uid;
		c->gid = cred.gid;
		c->admin = peer_is_admin(fd, &cred);
		c->id = ++ud.next_client_id;
		c->async_efd = -1;
		c->region.fd = -1;
		strcpy(c->name, "?");
		if (epoll_ctl(ud.epfd, EPOLL_CTL_ADD, fd,
			      &(struct epoll_event){.events = EPOLLIN | EPOLLRDHUP,
						    .data.ptr = c}) != 0) {
			close(fd);
			free(c);
			continue;
		}
		c->next = ud.clients;
		ud.clients = c;
		ud.nclients++;
		ud.cnt.clients_accepted++;
	}
}

void ud_control_poll(uint64_t timeout_ns)
{
	struct epoll_event ev[64];
	struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000u),
			      .tv_nsec = (long)(timeout_ns % 1000000000u)};
	int n, i, rounds = 0;

	/* A few rounds while the array comes back full: closes and new connections are
	 * handled in one go (a burst of short-lived connections must not fill the client
	 * table with the dead), yet the data path never waits on more than 4 rounds. */
	n = epoll_pwait2(ud.epfd, ev, 64, &ts, NULL);
again:
	for (i = 0; i < n; i++) {
		struct ud_client *c = ev[i].data.ptr;

		if (!c) {
			accept_clients();
			continue;
		}
		if (c->sock < 0)
			continue; /* closed earlier in this batch */
		if (ev[i].events & EPOLLIN) {
			/* A few requests per turn: the data path must not starve. */
			int k;

			for (k = 0; k < 8 && !c->pending.active; k++) {
				int avail = 0;

				if (!client_request(c)) {
					client_close(c, "disconnected");
					c = NULL;
					break;
				}
				if (recv(c->sock, &avail, 1, MSG_PEEK | MSG_DONTWAIT) <= 0)
					break;
			}
			if (!c)
				continue;
		}
		if (ev[i].events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR)) {
			/* Requests sent before the close were handled above. */
			char b;

			if (recv(c->sock, &b, 1, MSG_PEEK | MSG_DONTWAIT) <= 0 ||
			    (ev[i].events & (EPOLLHUP | EPOLLERR)))
				client_close(c, "gone");
		}
	}
	if (n == 64 && ++rounds < 4) {
		free_gone_clients();
		n = epoll_wait(ud.epfd, ev, 64, 0);
		goto again;
	}
	free_gone_clients();
}

/* The gid of group @p name, the value of config key @p key. @return 0, or -EINVAL
 * (logged) when there is no such group. */
static int conf_group(const char *key, const char *name, gid_t *gid)
{
	struct group *g = getgrnam(name);

	if (!g) {
		UD_ERR("%s: no group %s", key, name);
		return -EINVAL;
	}
	*gid = g->gr_gid;
	return 0;
}

/* Who may connect is who may use the device: the socket's group and mode, set on
 * @p bound (the name it was bound to). Also resolves control.admin_group.
 * @return 0 or -errno (-EINVAL: a group that does not exist). */
static int socket_setup(const char *bound)
{
	gid_t gid;
	int rc;

	if (ud.conf.control.socket_group[0]) {
		rc = conf_group("control.socket_group", ud.conf.control.socket_group, &gid);
		if (rc)
			return rc;
		if (chown(bound, (uid_t)-1, gid) != 0) {
			rc = -errno;
			UD_ERR("control: chown %s: %s", bound, strerror(-rc));
			return rc;
		}
	}
	if (ud.conf.control.admin_group[0]) {
		rc = conf_group("control.admin_group", ud.conf.control.admin_group, &ud.admin_gid);
		if (rc)
			return rc;
		ud.have_admin_group = true;
	}
	if (chmod(bound, (mode_t)ud.conf.control.socket_mode) != 0) {
		rc = -errno;
		UD_ERR("control: chmod %s: %s", bound, strerror(-rc));
		return rc;
	}
	return 0;
}

int ud_control_init(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *path = ud.conf.control.socket;
	char dir[sizeof(sa.sun_path)], *slash;
	int rc;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		UD_ERR("control.socket: path too long: %s", path);
		return -ENAMETOOLONG;
	}
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		mkdir(dir, 0755); /* /run/uroce on a fresh host */
	}
	ud.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ud.epfd < 0)
		return -errno;
	ud.listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ud.listen_fd < 0)
		return -errno;
	/* Clients (and test fixtures) take "the path exists" for "the daemon is ready", so
	 * the path must never name a socket that does not listen yet: a connect() in that
	 * window is ECONNREFUSED (daemon_loopback failed so on loaded CI runs). The socket
	 * is bound under a temporary name, given its owner and mode, made to listen, and
	 * only then renamed into place, in one step. */
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s.new", path) >=
	    sizeof(sa.sun_path))
		strcpy(sa.sun_path, path); /* no room for the suffix: bind in place */
	unlink(sa.sun_path); /* a stale socket from a killed daemon */
	if (bind(ud.listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		rc = -errno;
		UD_ERR("control: cannot bind %s: %s", sa.sun_path, strerror(-rc));
		return rc;
	}
	rc = socket_setup(sa.sun_path);
	if (rc == 0 && listen(ud.listen_fd, 64) != 0)
		rc = -errno;
	if (rc == 0 && strcmp(sa.sun_path, path) != 0 && rename(sa.sun_path, path) != 0) {
		rc = -errno;
		UD_ERR("control: cannot rename %s to %s: %s", sa.sun_path, path, strerror(-rc));
	}
	if (rc) {
		unlink(sa.sun_path);
		return rc;
	}
	if (epoll_ctl(ud.epfd, EPOLL_CTL_ADD, ud.listen_fd,
		      &(struct epoll_event){.events = EPOLLIN, .data.ptr = NULL}) != 0)
		return -errno;
	return 0;
}

void ud_control_fini(void)
{
	while (ud.clients)
		client_close(ud.clients, "daemon stopping");
	free_gone_clients();
	if (ud.listen_fd >= 0) {
		close(ud.listen_fd);
		unlink(ud.conf.control.socket);
	}
	if (ud.epfd >= 0)
		close(ud.epfd);
	ud.listen_fd = ud.epfd = -1;
}
