/* SPDX-License-Identifier: BSD-3-Clause */
/* The control protocol's message table, request validation and message I/O. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "uroce_ctrl.h"

/* One row per command: its name, the payload a request carries and how many fds. Every
 * size check the daemon makes before a handler runs comes from here. */
struct ctrl_cmd_desc {
	const char *name;
	long req_size;
	unsigned int req_fds;
};

#define NO_PAYLOAD 0
static const struct ctrl_cmd_desc ctrl_cmds[UROCE_CTRL_CMD_END] = {
	[UROCE_CTRL_HELLO] = {"HELLO", sizeof(struct uroce_ctrl_hello_req), 0},
	[UROCE_CTRL_QUERY_DEVICE] = {"QUERY_DEVICE", NO_PAYLOAD, 0},
	[UROCE_CTRL_QUERY_PORT] = {"QUERY_PORT", sizeof(struct uroce_ctrl_query_port_req), 0},
	[UROCE_CTRL_QUERY_GID] = {"QUERY_GID", sizeof(struct uroce_ctrl_query_gid_req), 0},
	[UROCE_CTRL_ALLOC_PD] = {"ALLOC_PD", NO_PAYLOAD, 0},
	[UROCE_CTRL_DEALLOC_PD] = {"DEALLOC_PD", sizeof(struct uroce_ctrl_handle), 0},
	[UROCE_CTRL_MAP_REGION] = {"MAP_REGION", sizeof(struct uroce_ctrl_map_region_req), 1},
	[UROCE_CTRL_UNMAP_REGION] = {"UNMAP_REGION", sizeof(struct uroce_ctrl_handle), 0},
	[UROCE_CTRL_REG_MR] = {"REG_MR", sizeof(struct uroce_ctrl_reg_mr_req), 0},
	[UROCE_CTRL_DEREG_MR] = {"DEREG_MR", sizeof(struct uroce_ctrl_handle), 0},
	[UROCE_CTRL_CREATE_CHANNEL] = {"CREATE_CHANNEL", NO_PAYLOAD, 0},
	[UROCE_CTRL_DESTROY_CHANNEL] = {"DESTROY_CHANNEL", sizeof(struct uroce_ctrl_handle), 0},
	[UROCE_CTRL_CREATE_CQ] = {"CREATE_CQ", sizeof(struct uroce_ctrl_create_cq_req), 0},
	[UROCE_CTRL_DESTROY_CQ] = {"DESTROY_CQ", sizeof(struct uroce_ctrl_handle), 0},
	[UROCE_CTRL_CREATE_SRQ] = {"CREATE_SRQ", sizeof(struct uroce_ctrl_create_srq_req), 0},
	[UROCE_CTRL_MODIFY_SRQ] = {"MODIFY_SRQ", sizeof(struct uroce_ctrl_modify_srq_req), 0},
	[UROCE_CTRL_QUERY_SRQ] = {"QUERY_SRQ", sizeof(struct uroce_ctrl_handle), 0},
	[UROCE_CTRL_DESTROY_SRQ] = {"DESTROY_SRQ", sizeof(struct uroce_ctrl_handle), 0},
	[UROCE_CTRL_CREATE_QP] = {"CREATE_QP", sizeof(struct uroce_ctrl_create_qp_req), 0},
	[UROCE_CTRL_MODIFY_QP] = {"MODIFY_QP", sizeof(struct uroce_ctrl_modify_qp_req), 0},
	[UROCE_CTRL_QUERY_QP] = {"QUERY_QP", sizeof(struct uroce_ctrl_query_qp_req), 0},
	[UROCE_CTRL_DESTROY_QP] = {"DESTROY_QP", sizeof(struct uroce_ctrl_handle), 0},
	[UROCE_CTRL_CREATE_AH] = {"CREATE_AH", sizeof(struct uroce_ctrl_create_ah_req), 0},
	[UROCE_CTRL_DESTROY_AH] = {"DESTROY_AH", sizeof(struct uroce_ctrl_handle), 0},
	[UROCE_CTRL_STATS] = {"STATS", sizeof(struct uroce_ctrl_stats_req), 0},
	[UROCE_CTRL_ADMIN] = {"ADMIN", sizeof(struct uroce_ctrl_admin_req), 0},
	[UROCE_CTRL_CM_CREATE_CHANNEL] = {"CM_CREATE_CHANNEL", 0, 0},
	[UROCE_CTRL_CM_DESTROY_CHANNEL] = {"CM_DESTROY_CHANNEL", sizeof(struct uroce_ctrl_cm_id_req), 0},
	[UROCE_CTRL_CM_GET_EVENT] = {"CM_GET_EVENT", sizeof(struct uroce_ctrl_cm_id_req), 0},
	[UROCE_CTRL_CM_CREATE_ID] = {"CM_CREATE_ID", sizeof(struct uroce_ctrl_cm_create_id_req), 0},
	[UROCE_CTRL_CM_DESTROY_ID] = {"CM_DESTROY_ID", sizeof(struct uroce_ctrl_cm_id_req), 0},
	[UROCE_CTRL_CM_MIGRATE_ID] = {"CM_MIGRATE_ID", sizeof(struct uroce_ctrl_cm_id_req), 0},
	[UROCE_CTRL_CM_BIND] = {"CM_BIND", sizeof(struct uroce_ctrl_cm_addr_req), 0},
	[UROCE_CTRL_CM_RESOLVE_ADDR] = {"CM_RESOLVE_ADDR", sizeof(struct uroce_ctrl_cm_addr_req), 0},
	[UROCE_CTRL_CM_RESOLVE_ROUTE] = {"CM_RESOLVE_ROUTE", sizeof(struct uroce_ctrl_cm_id_req), 0},
	[UROCE_CTRL_CM_QUERY_ROUTE] = {"CM_QUERY_ROUTE", sizeof(struct uroce_ctrl_cm_id_req), 0},
	[UROCE_CTRL_CM_LISTEN] = {"CM_LISTEN", sizeof(struct uroce_ctrl_cm_id_req), 0},
	[UROCE_CTRL_CM_CONNECT] = {"CM_CONNECT", sizeof(struct uroce_ctrl_cm_conn_req), 0},
	[UROCE_CTRL_CM_ACCEPT] = {"CM_ACCEPT", sizeof(struct uroce_ctrl_cm_conn_req), 0},
	[UROCE_CTRL_CM_REJECT] = {"CM_REJECT", sizeof(struct uroce_ctrl_cm_conn_req), 0},
	[UROCE_CTRL_CM_DISCONNECT] = {"CM_DISCONNECT", sizeof(struct uroce_ctrl_cm_id_req), 0},
	[UROCE_CTRL_CM_ESTABLISH] = {"CM_ESTABLISH", sizeof(struct uroce_ctrl_cm_id_req), 0},
	[UROCE_CTRL_CM_INIT_QP_ATTR] = {"CM_INIT_QP_ATTR", sizeof(struct uroce_ctrl_cm_id_req), 0},
	[UROCE_CTRL_CM_SET_OPTION] = {"CM_SET_OPTION", sizeof(struct uroce_ctrl_cm_option_req), 0},
	[UROCE_CTRL_CM_JOIN_MCAST] = {"CM_JOIN_MCAST", sizeof(struct uroce_ctrl_cm_addr_req), 0},
	[UROCE_CTRL_CM_LEAVE_MCAST] = {"CM_LEAVE_MCAST", sizeof(struct uroce_ctrl_cm_addr_req), 0},
	[UROCE_CTRL_ATTACH_MCAST] = {"ATTACH_MCAST", sizeof(struct uroce_ctrl_mcast_req), 0},
	[UROCE_CTRL_DETACH_MCAST] = {"DETACH_MCAST", sizeof(struct uroce_ctrl_mcast_req), 0},
	[UROCE_CTRL_CAPTURE_START] = {"CAPTURE_START", NO_PAYLOAD, 1},
};

static const struct ctrl_cmd_desc *ctrl_desc(uint32_t cmd)
{
	if (cmd == 0 || cmd >= UROCE_CTRL_CMD_END)
		return NULL;
	return &ctrl_cmds[cmd];
}

const char *uroce_ctrl_cmd_name(uint32_t cmd)
{
	const struct ctrl_cmd_desc *d = ctrl_desc(cmd);

	return d ? d->name : "?";
}

long uroce_ctrl_request_size(uint32_t cmd)
{
	const struct ctrl_cmd_desc *d = ctrl_desc(cmd);

	return d ? d->req_size : -1;
}

unsigned int uroce_ctrl_request_fds(uint32_t cmd)
{
	const struct ctrl_cmd_desc *d = ctrl_desc(cmd);

	return d ? d->req_fds : 0;
}

int uroce_ctrl_check_request(const void *msg, size_t len, unsigned int nfds)
{
	struct uroce_ctrl_hdr h;
	const struct ctrl_cmd_desc *d;
	size_t want;

	if (len < sizeof(h))
		return -EINVAL;
	memcpy(&h, msg, sizeof(h));
	if (h.magic != UROCE_CTRL_MAGIC || h.version != UROCE_CTRL_VERSION)
		return -EPROTO;
	d = ctrl_desc(h.cmd);
	if (!d || h.len != len || h.status != 0 || h.reserved != 0 || nfds != d->req_fds)
		return -EINVAL;
	want = sizeof(h) + (size_t)d->req_size;
	if (h.cmd == UROCE_CTRL_REG_MR && len >= want) {
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
