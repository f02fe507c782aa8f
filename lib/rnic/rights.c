/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rights a client proves with what the kernel gave it (PROVE_NET_RAW), never with what
 * /proc says of a pid: a process's capabilities there change at its next execve (a
 * setuid program), belong to whatever process has the pid next, and CapEff counts in the
 * process's own user namespace, where `unshare -Ur` gives anyone every capability.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <linux/sockios.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rnic_internal.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71 /* Linux 5.14; older libc headers lack it */
#endif

/* The network namespace cookie of socket @p fd (unique in the boot), 0 if unknown. */
static uint64_t netns_cookie(int fd)
{
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);

	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len) != 0)
		return 0;
	return cookie;
}

/* The identity of the user namespace owning the namespace @p ns_fd. 0 or -errno. */
static int ns_owner(int ns_fd, struct stat *st)
{
	int user_fd = ioctl(ns_fd, NS_GET_USERNS);
	int rc;

	if (user_fd < 0)
		return -errno;
	rc = fstat(user_fd, st) == 0 ? 0 : -errno;
	close(user_fd);
	return rc;
}

/*
 * Is @p fd a packet socket whose network namespace is ours, or is owned by the user
 * namespace that owns ours? packet_create() opened it only for CAP_NET_RAW over that
 * user namespace, which is what Linux asks of a raw packet QP's creator over the
 * device's network namespace (rdma_dev_has_raw_cap).
 */
static bool proves_net_raw(int fd)
{
	struct stat theirs, ours;
	int domain, ours_fd, theirs_fd, probe, rc;
	socklen_t len = sizeof(domain);
	uint64_t cookie;

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_PACKET)
		return false;
	/* Our own namespace: no capability of ours needed to tell (SIOCGSKNS wants
	 * CAP_NET_ADMIN over the socket's). */
	cookie = netns_cookie(fd);
	probe = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (probe >= 0) {
		bool same = cookie != 0 && cookie == netns_cookie(probe);

		close(probe);
		if (same)
			return true;
	}
	/* Another namespace: is it owned by the user namespace that owns ours? */
	theirs_fd = ioctl(fd, SIOCGSKNS);
	if (theirs_fd < 0)
		return false;
	rc = ns_owner(theirs_fd, &theirs);
	close(theirs_fd);
	if (rc)
		return false;
	ours_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (ours_fd < 0)
		return false;
	rc = ns_owner(ours_fd, &ours);
	close(ours_fd);
	return rc == 0 && theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino;
}

void rnic_cmd_prove_net_raw(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			    const void *payload RNIC_UNUSED, const int *fds)
{
	bool proven = proves_net_raw(fds[0]);

	close(fds[0]);
	if (!proven) {
		RNIC_DBG(c->rnic, "client %s[%d] (uid %u): PROVE_NET_RAW refused", c->name, c->pid,
			 (unsigned int)c->uid);
		REPLY(c, h, -EPERM, NULL, 0);
		return;
	}
	c->net_raw = true;
	REPLY(c, h, 0, NULL, 0);
}
