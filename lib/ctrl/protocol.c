/* SPDX-License-Identifier: BSD-3-Clause */
/* The control protocol's command table (UROCE_CTRL_COMMANDS), request validation and
 * message I/O. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "uroce_ctrl.h"

/* "none" in a row: a stand-in type, so that every row names a payload type and _Generic
 * can tell "no payload" from a real one. */
struct uroce_ctrl_none {
	uint8_t unused;
};

#define PAYLOAD_SIZE(type)                                                           \
	_Generic((struct uroce_ctrl_##type *)NULL,                                   \
		 struct uroce_ctrl_none *: 0u,                                       \
		 default: (uint32_t)sizeof(struct uroce_ctrl_##type))

/* Every size check the daemon makes before a handler runs comes from here. */
#define CMD_INFO(NAME, name, req, req_fds, rep, rep_fds, flags)                      \
	[UROCE_CTRL_##NAME] = {#NAME, PAYLOAD_SIZE(req), PAYLOAD_SIZE(rep), req_fds, \
			       rep_fds, flags},
static const struct uroce_ctrl_cmd_info ctrl_cmds[] = {UROCE_CTRL_COMMANDS(CMD_INFO)};
#undef CMD_INFO

/* The rows are numbered 1, 2, ... with no gap, every number below UROCE_CTRL_CMD_END has
 * one (the enum comes from the same rows; this catches a hand-made enum coming back). */
#define CMD_COUNT(...) +1
_Static_assert(0 UROCE_CTRL_COMMANDS(CMD_COUNT) == UROCE_CTRL_CMD_END - 1,
	       "every command from 1 to UROCE_CTRL_CMD_END - 1 is a row");
#undef CMD_COUNT
_Static_assert(sizeof(ctrl_cmds) / sizeof(ctrl_cmds[0]) == UROCE_CTRL_CMD_END,
	       "the table covers every command up to UROCE_CTRL_CMD_END");

/* What a row may say: buffers are sized with union uroce_ctrl_any_payload (uroced keeps a
 * request that waits for a neighbour in one), descriptors fit UROCE_CTRL_MAX_FDS, and
 * uroce_ctrl_check_request() knows how to size the one request with a tail. */
#define CMD_CHECK(NAME, name, req, req_fds, rep, rep_fds, flags)                     \
	_Static_assert(PAYLOAD_SIZE(req) <= sizeof(union uroce_ctrl_any_payload) &&  \
			       PAYLOAD_SIZE(rep) <= sizeof(union uroce_ctrl_any_payload), \
		       #NAME ": payloads fit union uroce_ctrl_any_payload");         \
	_Static_assert(req_fds <= UROCE_CTRL_MAX_FDS && rep_fds <= UROCE_CTRL_MAX_FDS, \
		       #NAME ": descriptors fit UROCE_CTRL_MAX_FDS");                 \
	_Static_assert(!((flags) & UROCE_CTRL_CMD_REQ_TAIL) ||                       \
			       UROCE_CTRL_##NAME == UROCE_CTRL_REG_MR,               \
		       #NAME ": uroce_ctrl_check_request() sizes REG_MR's tail only");
UROCE_CTRL_COMMANDS(CMD_CHECK)
#undef CMD_CHECK

const struct uroce_ctrl_cmd_info *uroce_ctrl_cmd_info(uint32_t cmd)
{
	if (cmd == UROCE_CTRL_CMD_NONE || cmd >= UROCE_CTRL_CMD_END)
		return NULL;
	return &ctrl_cmds[cmd];
}

const char *uroce_ctrl_cmd_name(uint32_t cmd)
{
	const struct uroce_ctrl_cmd_info *d = uroce_ctrl_cmd_info(cmd);

	return d ? d->name : "?";
}

long uroce_ctrl_request_size(uint32_t cmd)
{
	const struct uroce_ctrl_cmd_info *d = uroce_ctrl_cmd_info(cmd);

	return d ? (long)d->req_size : -1;
}

unsigned int uroce_ctrl_request_fds(uint32_t cmd)
{
	const struct uroce_ctrl_cmd_info *d = uroce_ctrl_cmd_info(cmd);

	return d ? d->req_fds : 0;
}

int uroce_ctrl_check_request(const void *msg, size_t len, unsigned int nfds)
{
	struct uroce_ctrl_hdr h;
	const struct uroce_ctrl_cmd_info *d;
	size_t want;

	if (len < sizeof(h))
		return -EINVAL;
	memcpy(&h, msg, sizeof(h));
	if (h.magic != UROCE_CTRL_MAGIC || h.version != UROCE_CTRL_VERSION)
		return -EPROTO;
	d = uroce_ctrl_cmd_info(h.cmd);
	if (!d || h.len != len || h.status != 0 || h.reserved != 0 || nfds != d->req_fds)
		return -EINVAL;
	want = sizeof(h) + (size_t)d->req_size;
	if ((d->flags & UROCE_CTRL_CMD_REQ_TAIL) && len >= want) {
		struct uroce_ctrl_reg_mr_req r;

		memcpy(&r, (const uint8_t *)msg + sizeof(h), sizeof(r));
		if (r.nseg == 0 || r.nseg > UROCE_CTRL_MR_MAX_SEGS)
			return -EINVAL;
		want += (size_t)r.nseg * sizeof(struct uroce_ctrl_mr_seg);
	}
	return len == want ? 0 : -EINVAL;
}

long uroce_ctrl_send(int sock, const void *msg, size_t len, const int *fds, unsigned int nfds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * UROCE_CTRL_MAX_FDS)];
	} cbuf;
	struct iovec iov = {.iov_base = (void *)(uintptr_t)msg, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	long n;

	if (nfds > UROCE_CTRL_MAX_FDS || len > UROCE_CTRL_MSG_MAX)
		return -EINVAL;
	if (nfds) {
		struct cmsghdr *c;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? n : -EMSGSIZE;
}

long uroce_ctrl_recv(int sock, void *buf, size_t cap, int *fds, unsigned int max_fds,
		     unsigned int *nfds)
{
	union {
		struct cmsghdr align;
		/* Room for more than we accept, so that extra descriptors arrive (and are
		 * closed) instead of being silently cut with MSG_CTRUNC. */
		char buf[CMSG_SPACE(sizeof(int) * 64)];
	} cbuf;
	struct iovec iov = {.iov_base = buf, .iov_len = cap};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf)};
	struct cmsghdr *c;
	unsigned int got = 0;
	int too_many = 0;
	long n;

	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t k, cnt;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < cnt; k++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
			if (got < max_fds)
				fds[got++] = fd;
			else {
				close(fd);
				too_many = 1;
			}
		}
	}
	if (too_many || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		while (got)
			close(fds[--got]);
		*nfds = 0;
		return (mh.msg_flags & MSG_TRUNC) ? -EMSGSIZE : -EINVAL;
	}
	*nfds = got;
	return n;
}

long uroce_ctrl_call(int sock, uint32_t seq, uint32_t cmd, const void *req, size_t req_len,
		     const int *fds, unsigned int nfds, void *rep, size_t rep_len, int *rep_fds,
		     unsigned int max_rep_fds, unsigned int *nrep_fds)
{
	struct uroce_ctrl_hdr h = {.magic = UROCE_CTRL_MAGIC,
				   .version = UROCE_CTRL_VERSION,
				   .cmd = (uint16_t)cmd,
				   .seq = seq};
	int got_fds[UROCE_CTRL_MAX_FDS];
	unsigned int ngot = 0, i;
	uint8_t *msg;
	long n;

	if (nrep_fds)
		*nrep_fds = 0;
	if (req_len > UROCE_CTRL_MSG_MAX - sizeof(h))
		return -EMSGSIZE;
	msg = malloc(UROCE_CTRL_MSG_MAX);
	if (!msg)
		return -ENOMEM;
	h.len = (uint32_t)(sizeof(h) + req_len);
	memcpy(msg, &h, sizeof(h));
	if (req_len)
		memcpy(msg + sizeof(h), req, req_len);
	n = uroce_ctrl_send(sock, msg, h.len, fds, nfds);
	if (n >= 0)
		n = uroce_ctrl_recv(sock, msg, UROCE_CTRL_MSG_MAX, got_fds, UROCE_CTRL_MAX_FDS,
				    &ngot);
	if (n >= 0) {
		memcpy(&h, msg, (size_t)n < sizeof(h) ? (size_t)n : sizeof(h));
		if ((size_t)n < sizeof(h) || h.seq != seq || h.cmd != cmd ||
		    (h.status == 0 && (size_t)n < sizeof(h) + rep_len))
			n = -EPROTO;
		else if (h.status == 0 && rep)
			memcpy(rep, msg + sizeof(h), rep_len);
	}
	for (i = 0; i < ngot; i++) {
		if (n >= 0 && h.status == 0 && rep_fds && i < max_rep_fds)
			rep_fds[i] = got_fds[i];
		else
			close(got_fds[i]);
	}
	if (nrep_fds && n >= 0 && h.status == 0 && rep_fds)
		*nrep_fds = ngot < max_rep_fds ? ngot : max_rep_fds;
	free(msg);
	return n < 0 ? n : h.status;
}
