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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "uroced.h"

static void conn_close(struct uroced *d, struct uroced_conn *c, const char *why)
{
	struct uroced_conn **pp;

	if (c->sock < 0)
		return; /* already closed in this batch */
	UROCED_INFO(d, "client %s[%d] (#%llu): %s", uroce_rnic_client_name(c->client),
		    (int)uroce_rnic_client_pid(c->client),
		    (unsigned long long)uroce_rnic_client_id(c->client), why);
	uroce_rnic_client_free(c->client);
	c->client = NULL;
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, c->sock, NULL);
	close(c->sock);
	c->sock = -1;
	if (c->pidfd >= 0)
		close(c->pidfd);
	c->pidfd = -1;
	for (pp = &d->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	d->nconns--;
	d->cnt.clients_closed++;
	c->next = d->gone_conns;
	d->gone_conns = c;
}

static void free_gone_conns(struct uroced *d)
{
	while (d->gone_conns) {
		struct uroced_conn *c = d->gone_conns;

		d->gone_conns = c->next;
		free(c);
	}
}

int uroced_conn_send(void *io_ctx, void *conn, const void *msg, uint32_t len, const int *fds,
		     unsigned int nfds)
{
	struct uroced_conn *c = conn;
	long rc;

	(void)io_ctx;
	/* A client that does not read its replies only hurts itself: the send is
	 * non-blocking and a full socket drops the connection at the next poll. */
	rc = uroce_ctrl_send(c->sock, msg, len, fds, nfds);
	return rc < 0 ? (int)rc : 0;
}

/* Reads and handles one request. @return false when the client must go. */
static bool conn_request(struct uroced *d, struct uroced_conn *c)
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

		d->cnt.bad_requests++;
		if ((size_t)n >= sizeof(h))
			memcpy(&h, buf, sizeof(h));
		UROCED_WARN(d, "client %s[%d]: malformed %s request (%ld bytes, %u fds): %s",
			    uroce_rnic_client_name(c->client),
			    (int)uroce_rnic_client_pid(c->client), uroce_ctrl_cmd_name(h.cmd), n,
			    nfds, rc == -EPROTO ? "another protocol version" : "refused");
		uroce_rnic_reply(c->client, &h, rc, NULL, 0, NULL, 0);
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		return false;
	}
	if (!uroce_rnic_handle(c->client, buf, (uint32_t)n, fds, nfds)) {
		c->waiting = true;
		/* Waits for a neighbour; no further request is read meanwhile (a client has
		 * one request in flight, and this keeps the replies in order). */
		epoll_ctl(d->epfd, EPOLL_CTL_MOD, c->sock,
			  &(struct epoll_event){.events = EPOLLRDHUP, .data.ptr = c});
	}
	return true;
}

void uroced_neigh_resolved(void *ctx, uint64_t cookie, const uint8_t gid[16], const uint8_t *mac,
			   int err)
{
	struct uroced *d = ctx;
	struct uroce_rnic_client *client;
	struct uroced_conn *c;

	(void)gid;
	client = uroce_rnic_neigh_resolved(d->rnic, cookie, mac, err);
	if (!client)
		return;
	for (c = d->conns; c; c = c->next)
		if (c->client == client) {
			c->waiting = false;
			epoll_ctl(d->epfd, EPOLL_CTL_MOD, c->sock,
				  &(struct epoll_event){.events = EPOLLIN | EPOLLRDHUP,
							.data.ptr = c});
			return;
		}
}

/* The table is full: free the slots of clients that have gone but whose hangup this
 * poll has not reached yet, so a burst of short-lived connections cannot lock out the
 * next real one. */
static void reap_gone_conns(struct uroced *d)
{
	struct uroced_conn *c = d->conns, *next;

	for (; c; c = next) {
		struct pollfd p = {.fd = c->sock, .events = POLLRDHUP};

		next = c->next;
		/* Hung up, even with requests still unread: nobody would read the replies,
		 * and closing frees everything those requests could have touched. */
		if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR)))
			conn_close(d, c, "gone");
	}
}

/* Closes the connections that have not said HELLO within UROCED_HELLO_NS (looked at once
 * a second: the loop wakes at least every lcore.idle_sleep_us). */
static void close_silent_conns(struct uroced *d)
{
	uint64_t now = d->now_ns;
	struct uroced_conn *c = d->conns, *next;

	if (now < d->silent_next_look)
		return;
	d->silent_next_look = now + 1000000000ull;
	for (; c; c = next) {
		next = c->next;
		if (!uroce_rnic_client_greeted(c->client) &&
		    now - c->accepted_ns > UROCED_HELLO_NS) {
			d->cnt.clients_silent++;
			conn_close(d, c, "no HELLO within 10 s");
		}
	}
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5; older libc headers lack it */
#endif

/*
 * A pidfd of the process that made connection @p fd (@p cred: what SO_PEERCRED said of
 * it), or -1 when it is gone. SO_PEERPIDFD names the very process that called connect(),
 * whatever has happened to its pid since. A kernel without it (before 6.5) gets
 * pidfd_open() of the pid SO_PEERCRED gave: if that process exited between its connect()
 * and our accept() and its pid went to another, the pidfd is the other's. That window is
 * the residual one; after accept() the pidfd holds the process (its pid cannot be reused
 * while it lives, and we check it is alive after each read).
 */
static int peer_pidfd(int fd, const struct ucred *cred)
{
	int pidfd = -1;
	socklen_t len = sizeof(pidfd);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0)
		return pidfd;
	if (errno != ENOPROTOOPT)
		return -1; /* the process is gone (ESRCH, EINVAL) */
	return (int)syscall(SYS_pidfd_open, cred->pid, 0);
}

/*
 * What the process that made connection @p conn may pin, as the kernel's ib_umem_get()
 * decides for an MR: without limit with CAP_IPC_LOCK, else its soft RLIMIT_MEMLOCK as it
 * is now. Both as the kernel proves them of that very process, never of whatever has its
 * pid now: CAP_IPC_LOCK is root's, by the uid SO_PEERCRED gave at connect (0 in our user
 * namespace: a container's root is another uid here); the kernel shows another process's
 * capabilities only in /proc, which a setuid execve changes (a child that connected and
 * then ran passwd lent the connection every capability) and which counts them in that
 * process's own user namespace. A process that is not root is held to its
 * RLIMIT_MEMLOCK, whatever capability it holds. The limit is read from /proc/PID/limits
 * (prlimit(2) on another user's process wants CAP_SYS_RESOURCE), then the pidfd taken at
 * accept says whether the process is still alive: while it lives its pid is its own, so
 * the number read was its. 0 when the process is gone.
 */
uint64_t uroced_memlock_limit(void *io_ctx, void *conn)
{
	const struct uroced_conn *c = conn;
	unsigned long long soft = 0;
	char path[64], line[160], value[32];
	uint64_t limit = 0;
	bool found = false;
	FILE *f;

	(void)io_ctx;
	if (c->uid == 0)
		return UINT64_MAX;
	if (c->pidfd < 0)
		return 0;
	/* "Max locked memory         8388608              8388608              bytes" */
	snprintf(path, sizeof(path), "/proc/%d/limits", (int)c->pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "Max locked memory %31s", value) == 1;
	fclose(f);
	if (!found)
		return 0;
	if (strcmp(value, "unlimited") == 0)
		limit = UINT64_MAX;
	else if (sscanf(value, "%llu", &soft) == 1)
		limit = (uint64_t)soft;
	/* Signal 0 sends nothing; ESRCH: it exited, and the pid may be another's. EPERM
	 * (another user's process, and we lack CAP_KILL) still says it lives. */
	if (syscall(SYS_pidfd_send_signal, c->pidfd, 0, NULL, 0) != 0 && errno != EPERM)
		return 0;
	return limit;
}

/* Is the peer root or a member (primary or supplementary) of control.admin_group? */
static bool peer_is_admin(const struct uroced *d, int fd, const struct ucred *cred)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);

	if (cred->uid == 0)
		return true;
	if (!d->have_admin_group)
		return false;
	if (cred->gid == d->admin_gid)
		return true;
	/* More than 256 supplementary groups: ERANGE, and the peer is not an admin. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) != 0)
		return false;
	for (size_t i = 0; i < len / sizeof(groups[0]); i++)
		if (groups[i] == d->admin_gid)
			return true;
	return false;
}

static void accept_clients(struct uroced *d)
{
	for (;;) {
		int fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ucred cred;
		socklen_t len = sizeof(cred);
		struct uroce_rnic_peer peer;
		struct uroced_conn *c;

		if (fd < 0)
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
			UROCED_WARN(d, "refusing a client: no peer credentials: %s",
				    strerror(errno));
			d->cnt.clients_refused++;
			close(fd);
			continue;
		}
		if (d->nconns >= d->conf.control.max_clients)
			reap_gone_conns(d);
		if (d->nconns >= d->conf.control.max_clients) {
			UROCED_WARN(d, "refusing a client: %u connected (control.max_clients)",
				    d->nconns);
			d->cnt.clients_refused++;
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->sock = fd;
		c->accepted_ns = d->now_ns;
		c->uid = cred.uid;
		c->pid = cred.pid;
		c->pidfd = peer_pidfd(fd, &cred);
		peer = (struct uroce_rnic_peer){.pid = cred.pid,
						.uid = cred.uid,
						.gid = cred.gid,
						.admin = peer_is_admin(d, fd, &cred)};
		c->client = uroce_rnic_client_new(d->rnic, &peer, c);
		if (!c->client || epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd,
					    &(struct epoll_event){.events = EPOLLIN | EPOLLRDHUP,
								  .data.ptr = c}) != 0) {
			if (c->client)
				uroce_rnic_client_free(c->client);
			if (c->pidfd >= 0)
				close(c->pidfd);
			close(fd);
			free(c);
			continue;
		}
		c->next = d->conns;
		d->conns = c;
		d->nconns++;
		d->cnt.clients_accepted++;
	}
}

/* The epoll data of the descriptors that only end a sleep (uroced_control_watch): the
 * address of its enum uroced_woke bit, never a struct uroced_conn. */
static const unsigned int woke_bits[] = {UROCED_WOKE_DOORBELL, UROCED_WOKE_FRAME,
					  UROCED_WOKE_KERNEL, UROCED_WOKE_TELEMETRY};

int uroced_control_watch(struct uroced *d, int fd, enum uroced_woke what)
{
	const unsigned int *bit = what == UROCED_WOKE_DOORBELL	? &woke_bits[0]
				  : what == UROCED_WOKE_FRAME	? &woke_bits[1]
				  : what == UROCED_WOKE_KERNEL	? &woke_bits[2]
								: &woke_bits[3];

	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd,
		      &(struct epoll_event){.events = EPOLLIN, .data.ptr = (void *)bit}) != 0)
		return -errno;
	return 0;
}

static bool is_woke_bit(const void *p)
{
	for (size_t i = 0; i < sizeof(woke_bits) / sizeof(woke_bits[0]); i++)
		if (p == &woke_bits[i])
			return true;
	return false;
}

unsigned int uroced_control_poll(struct uroced *d, uint64_t timeout_ns)
{
	struct epoll_event ev[64];
	struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000u),
			      .tv_nsec = (long)(timeout_ns % 1000000000u)};
	unsigned int woke = 0;
	int n, i, rounds = 0;

	/* A few rounds while the array comes back full: closes and new connections are
	 * handled in one go (a burst of short-lived connections must not fill the client
	 * table with the dead), yet the data path never waits on more than 4 rounds. */
	n = epoll_pwait2(d->epfd, ev, 64, &ts, NULL);
again:
	for (i = 0; i < n; i++) {
		struct uroced_conn *c = ev[i].data.ptr;

		if (is_woke_bit(ev[i].data.ptr)) {
			/* Drained by whoever armed it (uroce_rnic_sleep_end, the port). */
			woke |= *(const unsigned int *)ev[i].data.ptr;
			continue;
		}
		woke |= UROCED_WOKE_CONTROL;
		if (!c) {
			accept_clients(d);
			continue;
		}
		if (c->sock < 0)
			continue; /* closed earlier in this batch */
		if (ev[i].events & EPOLLIN) {
			/* A few requests per turn: the data path must not starve. */
			int k;

			for (k = 0; k < 8 && !c->waiting; k++) {
				int avail = 0;

				if (!conn_request(d, c)) {
					conn_close(d, c, "disconnected");
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
				conn_close(d, c, "gone");
		}
	}
	if (n == 64 && ++rounds < 4) {
		free_gone_conns(d);
		n = epoll_wait(d->epfd, ev, 64, 0);
		goto again;
	}
	close_silent_conns(d);
	free_gone_conns(d);
	return woke;
}

/* The gid of group @p name, the value of config key @p key. @return 0, or -EINVAL
 * (logged) when there is no such group. */
static int conf_group(const struct uroced *d, const char *key, const char *name, gid_t *gid)
{
	struct group *g = getgrnam(name);

	if (!g) {
		UROCED_ERR(d, "%s: no group %s", key, name);
		return -EINVAL;
	}
	*gid = g->gr_gid;
	return 0;
}

/* Resolves control.socket_group and control.admin_group. @return 0 or -EINVAL (a group
 * that does not exist, logged). */
static int groups_resolve(struct uroced *d)
{
	int rc;

	if (d->conf.control.socket_group[0]) {
		rc = conf_group(d, "control.socket_group", d->conf.control.socket_group,
				&d->socket_gid);
		if (rc)
			return rc;
		d->have_socket_group = true;
	}
	if (d->conf.control.admin_group[0]) {
		rc = conf_group(d, "control.admin_group", d->conf.control.admin_group,
				&d->admin_gid);
		if (rc)
			return rc;
		d->have_admin_group = true;
	}
	return 0;
}

/*
 * The files we make for clients (the socket, the device node) are born with their mode
 * and group: made under a umask that leaves exactly the mode and with the socket group
 * as our effective gid. Nothing is changed by path afterwards: between a bind() and a
 * chown() by name, a user who may write in the folder could put a symlink in the
 * socket's place, and root would give that user's group /etc/shadow.
 */
struct birth_identity {
	mode_t umask;
	gid_t egid;
};

/* @return 0, or -errno of setegid (nothing changed). */
static int birth_identity_enter(const struct uroced *d, mode_t mode, struct birth_identity *saved)
{
	saved->egid = getegid();
	saved->umask = umask(~mode & 0777);
	if (d->have_socket_group && setegid(d->socket_gid) != 0) {
		int rc = -errno;

		umask(saved->umask);
		return rc;
	}
	return 0;
}

static void birth_identity_leave(const struct uroced *d, const struct birth_identity *saved)
{
	umask(saved->umask);
	if (getegid() != saved->egid && setegid(saved->egid) != 0)
		UROCED_WARN(d, "control: cannot restore the effective gid: %s", strerror(errno));
}

/* Whether @p path (just made, not followed) is what birth_identity gave it: a file of
 * @p type, ours, of the socket's group (a set-group-ID folder would have given its own)
 * and of exactly @p mode. @return 0 or -EPERM (logged). */
static int birth_check(const struct uroced *d, const char *path, mode_t type, mode_t mode)
{
	struct stat st;

	if (lstat(path, &st) != 0 || (st.st_mode & S_IFMT) != type || st.st_uid != geteuid() ||
	    (d->have_socket_group && st.st_gid != d->socket_gid) || (st.st_mode & 07777) != mode) {
		UROCED_ERR(d,
			   "control: %s is not what was made (mode %o, owner %u:%u; a "
			   "set-group-ID folder or a default ACL?)",
			   path, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
			   (unsigned)st.st_gid);
		return -EPERM;
	}
	return 0;
}

/*
 * The socket's folder must be one only we (or root) may change, as sshd's StrictModes
 * asks of a user's files: every folder from / down is owned by root or by us, and is
 * not writable by others unless sticky (/tmp). Otherwise another user could swap the
 * socket, or the folder, for their own and serve our clients. Symlinks are resolved
 * first and the real path is what is checked and used from then on, so repointing a
 * link later redirects nothing. @p dir is replaced by its real path.
 * @return 0, -errno of realpath, or -EPERM (logged).
 */
static int socket_dir_check(const struct uroced *d, char *dir, size_t size)
{
	char real[PATH_MAX], *end;
	struct stat st;

	if (!realpath(dir, real)) {
		int rc = -errno;

		UROCED_ERR(d, "control.socket: folder %s: %s", dir, strerror(-rc));
		return rc;
	}
	if (strlen(real) >= size) {
		UROCED_ERR(d, "control.socket: folder %s: real path too long", dir);
		return -ENAMETOOLONG;
	}
	for (end = real + strlen(real);;) {
		char c = *end;

		*end = '\0';
		if (stat(real[0] ? real : "/", &st) != 0 ||
		    (st.st_uid != 0 && st.st_uid != geteuid() &&
		     !(d->have_run_user && st.st_uid == d->run_uid)) ||
		    ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))) {
			UROCED_ERR(d,
				   "control.socket: folder %s is owned by uid %u with mode %o: "
				   "another user could replace the socket; use a folder only root "
				   "may write",
				   real[0] ? real : "/", (unsigned)st.st_uid,
				   (unsigned)(st.st_mode & 07777));
			return -EPERM;
		}
		*end = c;
		if (end == real)
			break;
		while (end > real && *--end != '/')
			;
	}
	strcpy(dir, real);
	return 0;
}

/* Whether @p st is a node of a daemon's: /dev/null's numbers (uroce_ctrl.h). */
static bool devnode_is_ours(const struct stat *st)
{
	return S_ISCHR(st->st_mode) &&
	       st->st_rdev == makedev(UROCE_CTRL_DEVNODE_MAJOR, UROCE_CTRL_DEVNODE_MINOR);
}

/*
 * Removes the nodes that daemons killed before they could remove theirs left behind (a
 * SIGKILL, a crash): a running daemon holds an exclusive flock on its node for its
 * whole life, so a node named uverbs-<16 hex> with /dev/null's numbers whose lock can
 * be taken belongs to nobody. Middleware that lists /dev/infiniband would otherwise
 * meet more and more devices that no daemon serves. The lock is taken on an open
 * descriptor and the name is unlinked only if it still names that inode, so a node a
 * daemon makes meanwhile (under another name, renamed over this one) stays.
 */
static void devnode_sweep(const struct uroced *d)
{
	struct dirent *de;
	unsigned removed = 0;
	DIR *dir;

	dir = opendir(UROCE_CTRL_DEVNODE_DIR);
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		char path[sizeof(UROCE_CTRL_DEVNODE_DIR) + sizeof(de->d_name)];
		struct stat st, held;
		int fd;

		if (strncmp(de->d_name, "uverbs-", 7) != 0 ||
		    strspn(de->d_name + 7, "0123456789abcdef") != 16 || de->d_name[23])
			continue;
		snprintf(path, sizeof(path), "%s/%s", UROCE_CTRL_DEVNODE_DIR, de->d_name);
		if (strcmp(path, d->devnode) == 0 || lstat(path, &st) != 0 || !devnode_is_ours(&st))
			continue;
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &held) == 0 &&
		    lstat(path, &st) == 0 && st.st_ino == held.st_ino && unlink(path) == 0)
			removed++;
		close(fd); /* drops the lock */
	}
	closedir(dir);
	if (removed)
		UROCED_INFO(d, "removed %u device node(s) of daemons that were killed", removed);
}

/*
 * Makes the device node (uroce_ctrl.h) with the socket's mode and group: who may use the
 * device may open it, as udev's rules give /dev/infiniband/uverbsN the group of RDMA
 * users. It is made under a temporary name, locked (devnode_sweep), and renamed into
 * place, so its name never shows a node without its lock; a node of the same name left
 * by a daemon that was killed is replaced by the rename. Without it only middleware
 * that looks for the node misses the device, so a failure (a read-only /dev, no
 * CAP_MKNOD) is a warning.
 */
static void devnode_create(struct uroced *d)
{
	char name[UROCE_CTRL_DEVNODE_NAME_MAX], tmp[sizeof(d->devnode) + 4];
	mode_t mode = (mode_t)d->conf.control.socket_mode & 0666;
	struct birth_identity saved;
	struct stat st;
	const char *what;
	int rc;

	uroce_ctrl_devnode_name(uroce_rnic_node_guid(d->rnic), name);
	snprintf(d->devnode, sizeof(d->devnode), "%s/%s", UROCE_CTRL_DEVNODE_DIR, name);
	snprintf(tmp, sizeof(tmp), "%s.new", d->devnode);
	what = "mkdir " UROCE_CTRL_DEVNODE_DIR;
	if (mkdir(UROCE_CTRL_DEVNODE_DIR, 0755) != 0 && errno != EEXIST)
		goto fail;
	what = "look at the old node";
	if (lstat(d->devnode, &st) == 0 && !devnode_is_ours(&st)) {
		errno = EEXIST; /* not one of ours: leave it alone */
		goto fail;
	}
	unlink(tmp); /* one a daemon killed at this very step left */
	what = "setegid to the socket's group";
	if (birth_identity_enter(d, mode, &saved) != 0)
		goto fail;
	what = "mknod";
	rc = mknod(tmp, S_IFCHR | mode,
		   makedev(UROCE_CTRL_DEVNODE_MAJOR, UROCE_CTRL_DEVNODE_MINOR));
	birth_identity_leave(d, &saved);
	if (rc != 0)
		goto fail;
	what = "check";
	if (birth_check(d, tmp, S_IFCHR, mode) != 0) {
		errno = EPERM;
		goto fail_unlink;
	}
	what = "lock";
	d->devnode_fd = open(tmp, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (d->devnode_fd < 0 || flock(d->devnode_fd, LOCK_EX | LOCK_NB) != 0 ||
	    fstat(d->devnode_fd, &st) != 0)
		goto fail_unlink;
	what = "rename";
	if (rename(tmp, d->devnode) != 0)
		goto fail_unlink;
	d->devnode_ino = st.st_ino;
	UROCED_INFO(d, "device node %s", d->devnode);
	devnode_sweep(d);
	return;
fail_unlink:
	rc = errno;
	unlink(tmp);
	errno = rc;
fail:
	UROCED_WARN(d,
		    "device node %s: %s: %s (middleware that looks for it, such as UCX, "
		    "will not see the device)",
		    d->devnode, what, strerror(errno));
	if (d->devnode_fd >= 0)
		close(d->devnode_fd);
	d->devnode_fd = -1;
	d->devnode[0] = '\0';
}

/* Removes the node if it is still the one devnode_create made (a daemon of the same
 * GUID started since may have replaced it), then drops its lock. */
static void devnode_remove(struct uroced *d)
{
	struct stat st;

	if (d->devnode[0] && lstat(d->devnode, &st) == 0 && st.st_ino == d->devnode_ino)
		unlink(d->devnode);
	if (d->devnode_fd >= 0)
		close(d->devnode_fd);
	d->devnode_fd = -1;
	d->devnode[0] = '\0';
}

/*
 * Whether a daemon serves @p path now: a connect() there is answered. The socket of a
 * daemon that was killed refuses (ECONNREFUSED) and is replaced; a live daemon's must
 * not be, or its applications would silently reach this one instead. A connect that would
 * block (its backlog full) is a live daemon too. @return its pid (SO_PEERCRED), or 0.
 */
static pid_t socket_served(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct ucred cred = {0};
	socklen_t len = sizeof(cred);
	pid_t pid = 0;
	int fd;

	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		pid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid
			      ? cred.pid
			      : -1;
	else if (errno == EAGAIN)
		pid = -1;
	close(fd);
	return pid;
}

int uroced_control_init(struct uroced *d)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	mode_t mode = (mode_t)d->conf.control.socket_mode & 0777;
	const char *path = d->conf.control.socket, *name;
	char dir[sizeof(sa.sun_path)];
	struct birth_identity saved;
	pid_t other;
	int rc;

	name = strrchr(path, '/');
	if (strlen(path) >= sizeof(sa.sun_path) || (name && name[1] == '\0')) {
		UROCED_ERR(d, "control.socket: not a socket's path: %s", path);
		return -ENAMETOOLONG;
	}
	if (name) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(name == path ? 1 : name - path), path);
		name++;
		/* /run/uroce on a fresh host */
		if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
			rc = -errno;
			UROCED_ERR(d,
				   "control.socket: cannot create folder %s: %s: run uroced as "
				   "root, or set control.socket in a folder this user owns",
				   dir, strerror(-rc));
			return rc;
		}
	} else {
		strcpy(dir, ".");
		name = path;
	}
	rc = groups_resolve(d);
	if (rc == 0)
		rc = socket_dir_check(d, dir, sizeof(dir));
	if (rc)
		return rc;
	/* From here on the real path: a symlink on the way is not followed again. */
	if ((size_t)snprintf(d->socket_path, sizeof(d->socket_path), "%s/%s",
			     strcmp(dir, "/") ? dir : "", name) >= sizeof(d->socket_path)) {
		UROCED_ERR(d, "control.socket: real path too long: %s/%s", dir, name);
		return -ENAMETOOLONG;
	}
	other = socket_served(d->socket_path);
	if (other) {
		UROCED_ERR(d,
			   "control.socket %s is in use by a running uroced (pid %d): stop it, or "
			   "give this one another control.socket",
			   d->socket_path, (int)other);
		return -EADDRINUSE;
	}
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->epfd < 0)
		return -errno;
	d->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (d->listen_fd < 0)
		return -errno;
	/* Clients (and test fixtures) take "the path exists" for "the daemon is ready", so
	 * the path must never name a socket that does not listen yet: a connect() in that
	 * window is ECONNREFUSED (daemon_loopback failed so on loaded CI runs). The socket
	 * is bound under a temporary name, born with its group and mode, made to listen,
	 * and only then renamed into place, in one step. */
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s.new", d->socket_path) >=
	    sizeof(sa.sun_path))
		strcpy(sa.sun_path, d->socket_path); /* no room for the suffix: in place */
	unlink(sa.sun_path); /* a stale socket from a killed daemon */
	rc = birth_identity_enter(d, mode, &saved);
	if (rc) {
		UROCED_ERR(d, "control: setegid %u (control.socket_group): %s",
			   (unsigned)d->socket_gid, strerror(-rc));
		return rc;
	}
	rc = bind(d->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ? -errno : 0;
	birth_identity_leave(d, &saved);
	if (rc) {
		UROCED_ERR(d, "control: cannot bind %s: %s%s", sa.sun_path, strerror(-rc),
			   rc == -EACCES ? ": run uroced as root, or set control.socket in a "
					   "folder this user owns" :
					   "");
		return rc;
	}
	rc = birth_check(d, sa.sun_path, S_IFSOCK, mode);
	if (rc == 0 && listen(d->listen_fd, 64) != 0)
		rc = -errno;
	if (rc == 0 && strcmp(sa.sun_path, d->socket_path) != 0 &&
	    rename(sa.sun_path, d->socket_path) != 0) {
		rc = -errno;
		UROCED_ERR(d, "control: cannot rename %s to %s: %s", sa.sun_path, d->socket_path,
			   strerror(-rc));
	}
	if (rc) {
		unlink(sa.sun_path);
		return rc;
	}
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->listen_fd,
		      &(struct epoll_event){.events = EPOLLIN, .data.ptr = NULL}) != 0)
		return -errno;
	devnode_create(d);
	return 0;
}

void uroced_control_fini(struct uroced *d)
{
	while (d->conns)
		conn_close(d, d->conns, "daemon stopping");
	free_gone_conns(d);
	if (d->listen_fd >= 0) {
		close(d->listen_fd);
		unlink(d->socket_path);
	}
	if (d->epfd >= 0)
		close(d->epfd);
	d->listen_fd = d->epfd = -1;
	devnode_remove(d);
}
