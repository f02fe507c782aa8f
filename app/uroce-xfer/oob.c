/* SPDX-License-Identifier: BSD-3-Clause */
/* The out-of-band exchange over TCP: listen/connect, reads and writes with a timeout,
 * and the rdma-core pingpong text format. */

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "xfer_loops.h"

static int wait_fd(int fd, short events, uint64_t deadline_ns)
{
	for (;;) {
		uint64_t now = xfer_now_ns();
		struct pollfd p = { .fd = fd, .events = events };
		int ms, r;

		if (now >= deadline_ns)
			return 0;
		ms = (int)((deadline_ns - now + 999999) / 1000000);
		r = poll(&p, 1, ms);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

int oob_listen_accept(int port, int timeout_ms)
{
	struct sockaddr_in sa;
	int one = 1, ls, fd;

	ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls < 0) {
		xfer_err("oob: socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1)) {
		xfer_err("oob: cannot listen on TCP port %d: %s", port, strerror(errno));
		close(ls);
		return -1;
	}
	if (wait_fd(ls, POLLIN, xfer_now_ns() + (uint64_t)timeout_ms * 1000000) <= 0) {
		xfer_err("oob: no connection on TCP port %d within %d s", port, timeout_ms / 1000);
		close(ls);
		return -1;
	}
	fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
	close(ls);
	if (fd < 0) {
		xfer_err("oob: accept: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int oob_connect(const char *host, int port, int timeout_ms)
{
	uint64_t deadline = xfer_now_ns() + (uint64_t)timeout_ms * 1000000;
	struct addrinfo hints, *res = NULL, *t;
	char service[16];
	int err, one = 1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(service, sizeof(service), "%d", port);
	err = getaddrinfo(host, service, &hints, &res);
	if (err) {
		xfer_err("oob: %s for %s:%d", gai_strerror(err), host, port);
		return -1;
	}
	/* The server may not listen yet: retry until the deadline, as verbs-op does. */
	for (;;) {
		for (t = res; t; t = t->ai_next) {
			int fd =
				socket(t->ai_family, t->ai_socktype | SOCK_CLOEXEC, t->ai_protocol);

			if (fd < 0)
				continue;
			if (!connect(fd, t->ai_addr, t->ai_addrlen)) {
				freeaddrinfo(res);
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				return fd;
			}
			close(fd);
		}
		if (xfer_now_ns() >= deadline)
			break;
		usleep(200000);
	}
	freeaddrinfo(res);
	xfer_err("oob: couldn't connect to %s:%d", host, port);
	return -1;
}

int oob_write(int fd, const void *buf, size_t len, int timeout_ms)
{
	uint64_t deadline = xfer_now_ns() + (uint64_t)timeout_ms * 1000000;
	const uint8_t *p = buf;

	while (len) {
		ssize_t n;

		if (wait_fd(fd, POLLOUT, deadline) <= 0) {
			xfer_err("oob: write timed out");
			return -1;
		}
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			xfer_err("oob: write: %s", strerror(errno));
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int oob_read(int fd, void *buf, size_t len, int timeout_ms)
{
	uint64_t deadline = xfer_now_ns() + (uint64_t)timeout_ms * 1000000;
	uint8_t *p = buf;

	while (len) {
		ssize_t n;

		if (wait_fd(fd, POLLIN, deadline) <= 0) {
			xfer_err("oob: read timed out (%zu bytes missing)", len);
			return -1;
		}
		n = recv(fd, p, len, 0);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			xfer_err("oob: read: %s", strerror(errno));
			return -1;
		}
		if (n == 0) {
			xfer_err("oob: peer closed the connection (%zu bytes missing)", len);
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

long oob_read_some(int fd, void *buf, size_t len, int timeout_ms)
{
	uint64_t deadline = xfer_now_ns() + (uint64_t)timeout_ms * 1000000;

	for (;;) {
		ssize_t n;

		if (wait_fd(fd, POLLIN, deadline) <= 0)
			return -1;
		n = recv(fd, buf, len, 0);
		if (n >= 0)
			return n;
		if (errno != EINTR && errno != EAGAIN)
			return -1;
	}
}

long oob_read_line(int fd, char *buf, size_t cap, int timeout_ms)
{
	uint64_t deadline = xfer_now_ns() + (uint64_t)timeout_ms * 1000000;
	size_t n = 0;

	/* Byte by byte: the peer may send more after the line, and it must stay unread. */
	while (n + 1 < cap) {
		char c;
		ssize_t r;

		if (wait_fd(fd, POLLIN, deadline) <= 0) {
			xfer_err("oob: no line within %d s", timeout_ms / 1000);
			return -1;
		}
		r = recv(fd, &c, 1, 0);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0) {
			xfer_err("oob: connection closed while reading a line");
			return -1;
		}
		if (c == '\n') {
			buf[n] = '\0';
			return (long)n;
		}
		buf[n++] = c;
	}
	xfer_err("oob: line longer than %zu bytes", cap);
	return -1;
}

void oob_pp_format(char msg[OOB_PP_MSG_LEN], uint16_t lid, uint32_t qpn, uint32_t psn,
		   const union ibv_gid *gid)
{
	char g[33];
	int i;

	for (i = 0; i < 16; i++)
		snprintf(g + 2 * i, 3, "%02x", gid->raw[i]);
	memset(msg, 0, OOB_PP_MSG_LEN);
	snprintf(msg, OOB_PP_MSG_LEN, "%04x:%06x:%06x:%s", lid, qpn & 0xffffff,
		 psn & 0xffffff, g);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int oob_pp_parse(const char msg[OOB_PP_MSG_LEN], uint16_t *lid, uint32_t *qpn, uint32_t *psn,
		 union ibv_gid *gid)
{
	char copy[OOB_PP_MSG_LEN + 1];
	unsigned int l, q, p;
	char g[40];
	int i;

	memcpy(copy, msg, OOB_PP_MSG_LEN);
	copy[OOB_PP_MSG_LEN] = '\0';
	if (sscanf(copy, "%x:%x:%x:%39s", &l, &q, &p, g) != 4 || strlen(g) != 32)
		return -1;
	for (i = 0; i < 16; i++) {
		int hi = hexval(g[2 * i]), lo = hexval(g[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		gid->raw[i] = (uint8_t)(hi << 4 | lo);
	}
	*lid = (uint16_t)l;
	*qpn = q & 0xffffff;
	*psn = p & 0xffffff;
	return 0;
}
