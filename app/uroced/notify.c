/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The service manager's readiness protocol (systemd's sd_notify(3), Type=notify): one
 * datagram of newline-separated VAR=value assignments to the AF_UNIX socket named by
 * $NOTIFY_SOCKET, a path or, with a leading '@', an abstract name. Written here rather
 * than linked from libsystemd: the protocol is one sendto(), and the daemon must build
 * and run where systemd is absent (containers, CI, other init systems).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "uroced.h"

int uroced_notify_open(struct uroced *d)
{
	const char *name = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	socklen_t len;
	size_t n;
	int rc;

	if (d->notify_fd >= 0 || !name || !*name)
		return 0;
	n = strlen(name);
	if ((name[0] != '/' && name[0] != '@') || n >= sizeof(sa.sun_path)) {
		UROCED_ERR(d, "NOTIFY_SOCKET %s is not a socket path or @abstract name", name);
		return -EINVAL;
	}
	memcpy(sa.sun_path, name, n);
	if (name[0] == '@')
		sa.sun_path[0] = 0; /* abstract: no terminating NUL, the length says where */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (name[0] == '/'));
	d->notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (d->notify_fd < 0)
		return -errno;
	if (connect(d->notify_fd, (struct sockaddr *)&sa, len) != 0) {
		rc = -errno;
		UROCED_ERR(d, "cannot reach the service manager at %s: %s", name, strerror(-rc));
		close(d->notify_fd);
		d->notify_fd = -1;
		return rc;
	}
	return 0;
}

int uroced_notify(struct uroced *d, const char *state)
{
	int rc = uroced_notify_open(d);

	if (rc || d->notify_fd < 0)
		return rc;
	if (send(d->notify_fd, state, strlen(state), MSG_NOSIGNAL) < 0) {
		rc = -errno;
		UROCED_ERR(d, "cannot notify the service manager: %s", strerror(-rc));
	}
	return rc;
}
