/* SPDX-License-Identifier: BSD-3-Clause */
/* The slow path: the connection to uroced, request/reply calls, the context and the
 * queries, async events. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "client_internal.h"

int cl_call(struct uroce_client_ctx *ctx, uint32_t cmd, const void *req, size_t req_len,
	    const int *fds, unsigned int nfds, void *rep, size_t rep_len, int *rep_fds,
	    unsigned int max_rep_fds)
{
	int rc;

	pthread_mutex_lock(&ctx->lock);
	rc = cl_call_held(ctx, cmd, req, req_len, fds, nfds, rep, rep_len, rep_fds, max_rep_fds);
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

int cl_call_held(struct uroce_client_ctx *ctx, uint32_t cmd, const void *req, size_t req_len,
		 const int *fds, unsigned int nfds, void *rep, size_t rep_len, int *rep_fds,
		 unsigned int max_rep_fds)
{
	struct uroce_ctrl_hdr h = {
		.magic = UROCE_CTRL_MAGIC,
		.version = UROCE_CTRL_VERSION,
		.cmd = (uint16_t)cmd,
		.len = (uint32_t)(sizeof(h) + req_len),
	};
	const struct uroce_ctrl_cmd_info *info = uroce_ctrl_cmd_info(cmd);
	bool tail = info && (info->flags & UROCE_CTRL_CMD_REP_TAIL);
	uint8_t *buf;
	unsigned int got = 0;
	long n;
	int rc;

	if (ctx->forked)
		return -EIO; /* the parent's connection (fork.c) */
	if (sizeof(h) + req_len > UROCE_CTRL_MSG_MAX || sizeof(h) + rep_len > UROCE_CTRL_MSG_MAX)
		return -EINVAL;
	buf = malloc(UROCE_CTRL_MSG_MAX);
	if (!buf)
		return -ENOMEM;
	h.seq = ++ctx->seq;
	memcpy(buf, &h, sizeof(h));
	if (req_len)
		memcpy(buf + sizeof(h), req, req_len);
	n = uroce_ctrl_send(ctx->sock, buf, sizeof(h) + req_len, fds, nfds);
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	n = uroce_ctrl_recv(ctx->sock, buf, UROCE_CTRL_MSG_MAX, rep_fds, max_rep_fds, &got);
	if (n <= 0) {
		rc = n == 0 ? -ECONNRESET : (int)n;
		goto out;
	}
	memcpy(&h, buf, sizeof(h));
	if ((size_t)n < sizeof(h) || h.magic != UROCE_CTRL_MAGIC || h.seq != ctx->seq ||
	    h.cmd != cmd) {
		rc = -EPROTO;
		goto bad;
	}
	if (h.version != UROCE_CTRL_VERSION) {
		fprintf(stderr,
			"uroce: uroced speaks control protocol version %u, this library %u\n",
			h.version, UROCE_CTRL_VERSION);
		rc = -EPROTO;
		goto bad;
	}
	rc = h.status;
	if (rc > 0 || rc < -4095) {
		rc = -EPROTO;
		goto bad;
	}
	if (rc == 0) {
		/* A successful reply carries exactly the payload the command defines, or for
		 * replies with a tail (STATS) at most the caller's buffer. */
		size_t got_len = (size_t)n - sizeof(h);

		if (tail ? got_len > rep_len : got_len != rep_len) {
			rc = -EPROTO;
			goto bad;
		}
		if (rep_len)
			memcpy(rep, buf + sizeof(h), got_len);
		if (got < max_rep_fds && rep_fds) {
			rc = -EPROTO;
			goto bad;
		}
		if (tail)
			rc = (int)got_len;
		goto out;
	}
bad:
	while (got)
		close(rep_fds[--got]);
out:
	free(buf);
	return rc;
}

int uroce_client_call(struct uroce_client_ctx *ctx, uint32_t cmd, const void *req,
		      size_t req_len, void *rep, size_t rep_len, int *rep_fds,
		      unsigned int max_rep_fds)
{
	return cl_call(ctx, cmd, req, req_len, NULL, 0, rep, rep_len, rep_fds, max_rep_fds);
}

int cl_release(struct uroce_client_ctx *ctx, uint32_t cmd, uint32_t handle)
{
	struct uroce_ctrl_handle req = {.handle = handle};

	return cl_call(ctx, cmd, &req, sizeof(req), NULL, 0, NULL, 0, NULL, 0);
}

int cl_obj_add(struct uroce_client_ctx *ctx, uint32_t handle, int type, void *obj)
{
	int rc = 0;

	pthread_mutex_lock(&ctx->lock);
	if (ctx->nobjs == ctx->cap_objs) {
		size_t cap = ctx->cap_objs ? ctx->cap_objs * 2 : 16;
		struct cl_obj *o = realloc(ctx->objs, cap * sizeof(*o));

		if (!o) {
			rc = -ENOMEM;
			goto out;
		}
		ctx->objs = o;
		ctx->cap_objs = cap;
	}
	ctx->objs[ctx->nobjs++] = (struct cl_obj){.handle = handle, .type = type, .obj = obj};
out:
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

void cl_obj_del(struct uroce_client_ctx *ctx, uint32_t handle)
{
	size_t i;

	pthread_mutex_lock(&ctx->lock);
	for (i = 0; i < ctx->nobjs; i++)
		if (ctx->objs[i].handle == handle) {
			ctx->objs[i] = ctx->objs[--ctx->nobjs];
			break;
		}
	pthread_mutex_unlock(&ctx->lock);
}

void *cl_obj_find(struct uroce_client_ctx *ctx, uint32_t handle, int type)
{
	void *obj = NULL;
	size_t i;

	pthread_mutex_lock(&ctx->lock);
	for (i = 0; i < ctx->nobjs; i++)
		if (ctx->objs[i].handle == handle && ctx->objs[i].type == type) {
			obj = ctx->objs[i].obj;
			break;
		}
	pthread_mutex_unlock(&ctx->lock);
	return obj;
}

/* Event fd tags (epoll_event.data.u32). */
enum { CL_EVENT_PIPE = 1, CL_EVENT_SOCK = 2 };

int cl_event_fd_init(struct uroce_client_ctx *ctx, int pipe_fd, int *fd)
{
	struct epoll_event ee = {.events = EPOLLIN, .data.u32 = CL_EVENT_PIPE};
	int fl = fcntl(pipe_fd, F_GETFL);

	*fd = -1;
	if (fl < 0 || fcntl(pipe_fd, F_SETFL, fl | O_NONBLOCK) != 0)
		return -errno;
	*fd = epoll_create1(EPOLL_CLOEXEC);
	if (*fd < 0)
		return -errno;
	if (epoll_ctl(*fd, EPOLL_CTL_ADD, pipe_fd, &ee) != 0)
		return -errno;
	/* Only the hang-up: replies to calls (EPOLLIN) are cl_call's business. */
	ee = (struct epoll_event){.events = EPOLLRDHUP, .data.u32 = CL_EVENT_SOCK};
	if (epoll_ctl(*fd, EPOLL_CTL_ADD, ctx->sock, &ee) != 0)
		return -errno;
	return 0;
}

int cl_event_take(int pipe_fd, int fd)
{
	struct epoll_event ee[2];
	uint8_t event;
	ssize_t got;
	int fl, n, i;
	bool hup;

	/* One byte per event. The application's fd (epoll) decides blocking: it blocks, or
	 * says EAGAIN when the application made it non-blocking, exactly like rdma-core's
	 * fds. */
	for (;;) {
		got = read(pipe_fd, &event, 1);
		if (got == 1)
			return 0;
		if (got == 0)
			return -1; /* end of file: the daemon closed its end, it is gone */
		if (errno != EAGAIN)
			return errno;
		fl = fcntl(fd, F_GETFL);
		if (fl < 0)
			return errno;
		n = epoll_wait(fd, ee, 2, (fl & O_NONBLOCK) ? 0 : -1);
		if (n < 0)
			return errno; /* EINTR: a signal, as a read() without SA_RESTART */
		if (n == 0)
			return EAGAIN;
		hup = false;
		for (i = 0; i < n; i++)
			if (ee[i].data.u32 == CL_EVENT_SOCK)
				hup = true;
		if (!hup)
			continue; /* the byte: taken above, or by another thread first */
		/* The daemon is gone: what it signalled before goes first. */
		if (read(pipe_fd, &event, 1) == 1)
			return 0;
		return -1;
	}
}

/* The cache line at @p offset of a region (the daemon's wake-up announcement, the CQ
 * waiters: one line each, after the header), or NULL when the daemon's offset is not one. */
static void *region_line(const struct uroce_shm_region *r, uint32_t offset)
{
	static_assert(sizeof(struct uroce_shm_wake) == UROCE_SHM_CACHELINE &&
			      sizeof(struct uroce_shm_waiters) == UROCE_SHM_CACHELINE,
		      "each a line");
	if (offset % UROCE_SHM_CACHELINE || offset < sizeof(struct uroce_shm_hdr) ||
	    offset > r->size - UROCE_SHM_CACHELINE)
		return NULL;
	return (uint8_t *)r->addr + offset;
}

struct uroce_client_ctx *uroce_client_open(const char *socket_path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct uroce_ctrl_hello_req req = {.version = UROCE_CTRL_VERSION};
	struct uroce_ctrl_hello_rep rep;
	struct uroce_client_ctx *ctx;
	int fds[3], rc;
	FILE *f;

	if (!socket_path)
		socket_path = getenv(UROCE_CTRL_SOCKET_ENV);
	if (!socket_path || !*socket_path)
		socket_path = UROCE_CTRL_DEFAULT_SOCKET;
	if (strlen(socket_path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	strcpy(sa.sun_path, socket_path);
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return NULL;
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_mutex_init(&ctx->share_lock, NULL);
	ctx->async_fd = -1;
	ctx->async_pipe = -1;
	ctx->wake_fd = -1;
	ctx->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (ctx->sock < 0)
		goto fail_errno;
	if (connect(ctx->sock, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		goto fail_errno;
	/* Before anything is said: a squatter gets no HELLO, and no memfd after it. */
	rc = cl_server_check(ctx->sock, socket_path);
	if (rc)
		goto fail_rc;

	req.pid = getpid();
	f = fopen("/proc/self/comm", "r");
	if (f) {
		if (fgets(req.name, sizeof(req.name), f))
			req.name[strcspn(req.name, "\n")] = 0;
		fclose(f);
	}
	rc = cl_call(ctx, UROCE_CTRL_HELLO, &req, sizeof(req), NULL, 0, &rep, sizeof(rep), fds, 3);
	if (rc == -EPROTO)
		fprintf(stderr, "uroce: %s refused this library (control protocol version %u): "
			"use a library and a uroced from the same release\n",
			socket_path, UROCE_CTRL_VERSION);
	if (rc)
		goto fail_rc;
	ctx->async_pipe = fds[1];
	ctx->wake_fd = fds[2];
	rc = cl_event_fd_init(ctx, ctx->async_pipe, &ctx->async_fd);
	if (rc) {
		close(fds[0]);
		goto fail_rc;
	}
	rc = cl_attach_region(&ctx->region, fds[0], UROCE_CTRL_REGION_CONTEXT);
	if (rc) {
		close(fds[0]);
		goto fail_rc;
	}
	if (rep.async_ring_offset >= ctx->region.size ||
	    uroce_ring_open(&ctx->async_ring, (uint8_t *)ctx->region.addr + rep.async_ring_offset,
			    ctx->region.size - rep.async_ring_offset, false) != 0) {
		rc = -EPROTO;
		goto fail_rc;
	}
	ctx->wake = region_line(&ctx->region, rep.wake_offset);
	ctx->waiters = region_line(&ctx->region, rep.waiters_offset);
	if (!ctx->wake || !ctx->waiters || rep.doorbells_offset % UROCE_SHM_CACHELINE ||
	    rep.doorbells_offset < sizeof(struct uroce_shm_hdr) ||
	    rep.doorbells_offset > ctx->region.size -
					   uroce_summary_bytes(UROCE_CTRL_DOORBELL_SLOTS) ||
	    uroce_summary_open(&ctx->doorbells,
			       (uint8_t *)ctx->region.addr + rep.doorbells_offset,
			       UROCE_CTRL_DOORBELL_SLOTS) != 0) {
		rc = -EPROTO;
		goto fail_rc;
	}
	cl_cq_wait_init(&ctx->cq_wait);
	memcpy(ctx->dev_name, rep.dev_name, sizeof(ctx->dev_name));
	ctx->dev_name[sizeof(ctx->dev_name) - 1] = 0;
	cl_fork_track(ctx);
	return ctx;

fail_errno:
	rc = -errno;
fail_rc:
	uroce_client_close(ctx);
	errno = -rc;
	return NULL;
}

void uroce_client_close(struct uroce_client_ctx *ctx)
{
	if (!ctx)
		return;
	cl_fork_untrack(ctx);
	/* First out of the registrations' table: another context may be asking this one's
	 * daemon for a memfd (mr_share.c) until then. */
	cl_share_forget_all(ctx);
	/* Closing the socket is the whole protocol: the daemon frees what we had (in a
	 * forked child, this closes the child's copies only; the parent keeps its
	 * connection). */
	if (ctx->sock >= 0)
		close(ctx->sock);
	if (ctx->async_fd >= 0)
		close(ctx->async_fd);
	if (ctx->async_pipe >= 0)
		close(ctx->async_pipe);
	if (ctx->wake_fd >= 0)
		close(ctx->wake_fd);
	/* A child has no mapping of the region (MADV_DONTFORK): whatever it mapped at that
	 * address since is its own. */
	if (ctx->forked)
		ctx->region.addr = NULL;
	uroce_shm_close(&ctx->region);
	free(ctx->objs);
	pthread_mutex_destroy(&ctx->lock);
	pthread_mutex_destroy(&ctx->share_lock);
	free(ctx);
}

void uroce_client_set_ibv_context(struct uroce_client_ctx *ctx, struct ibv_context *ibv)
{
	ctx->ibv = ibv;
}

const char *uroce_client_dev_name(const struct uroce_client_ctx *ctx)
{
	return ctx->dev_name;
}

bool uroce_client_forked(const struct uroce_client_ctx *ctx)
{
	return ctx->forked;
}

int uroce_client_query_device(struct uroce_client_ctx *ctx, struct ibv_device_attr *attr)
{
	struct uroce_ctrl_query_device_rep rep;
	int rc = cl_call(ctx, UROCE_CTRL_QUERY_DEVICE, NULL, 0, NULL, 0, &rep, sizeof(rep),
			 NULL, 0);

	if (rc)
		return -rc;
	*attr = rep.attr;
	return 0;
}

int uroce_client_query_port(struct uroce_client_ctx *ctx, uint8_t port,
			    struct ibv_port_attr *attr)
{
	struct uroce_ctrl_query_port_req req = {.port = port};
	struct uroce_ctrl_query_port_rep rep;
	int rc = cl_call(ctx, UROCE_CTRL_QUERY_PORT, &req, sizeof(req), NULL, 0, &rep,
			 sizeof(rep), NULL, 0);

	if (rc)
		return -rc;
	*attr = rep.attr;
	return 0;
}

int uroce_client_query_gid(struct uroce_client_ctx *ctx, uint8_t port, int index,
			   union ibv_gid *gid)
{
	struct uroce_ctrl_query_gid_req req = {.port = port, .index = (uint32_t)index};
	struct uroce_ctrl_query_gid_rep rep;
	int rc;

	if (index < 0)
		return EINVAL;
	rc = cl_call(ctx, UROCE_CTRL_QUERY_GID, &req, sizeof(req), NULL, 0, &rep, sizeof(rep),
		     NULL, 0);
	if (rc)
		return -rc;
	*gid = rep.gid;
	return 0;
}

int uroce_client_resolve_l2(struct uroce_client_ctx *ctx, const struct ibv_ah_attr *attr,
			    uint8_t mac[6], uint16_t *vid)
{
	struct uroce_ctrl_resolve_l2_req req = {.attr = *attr};
	struct uroce_ctrl_resolve_l2_rep rep;
	int rc = cl_call(ctx, UROCE_CTRL_RESOLVE_L2, &req, sizeof(req), NULL, 0, &rep, sizeof(rep),
			 NULL, 0);

	if (rc)
		return -rc;
	memcpy(mac, rep.mac, 6);
	if (vid)
		*vid = rep.vid;
	return 0;
}

int uroce_client_async_fd(const struct uroce_client_ctx *ctx)
{
	return ctx->async_fd;
}

/* Waits for the next event the daemon signalled and takes it off the ring: 0, or an errno
 * (EAGAIN non-blocking, EINTR, EIO), or -1 when the daemon is gone (DEVICE_FATAL). */
static int async_event_take(struct uroce_client_ctx *ctx, struct uroce_ctrl_async_event *e)
{
	int rc = cl_event_take(ctx->async_pipe, ctx->async_fd);

	if (rc)
		return rc;
	pthread_mutex_lock(&ctx->lock);
	if (uroce_ring_cons_avail(&ctx->async_ring) == 0) {
		pthread_mutex_unlock(&ctx->lock);
		return EIO; /* signalled without an event: the daemon broke the contract */
	}
	memcpy(e, uroce_ring_cons_slot(&ctx->async_ring, 0), sizeof(*e));
	uroce_ring_cons_release(&ctx->async_ring, 1);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int uroce_client_get_async_event(struct uroce_client_ctx *ctx, struct ibv_async_event *ev)
{
	struct uroce_ctrl_async_event e;
	int rc;

	if (ctx->forked)
		return EIO; /* the parent's events (fork.c) */
	for (;;) {
		rc = async_event_take(ctx, &e);
		if (rc == -1) {
			pthread_mutex_lock(&ctx->lock);
			if (ctx->fatal_reported) {
				pthread_mutex_unlock(&ctx->lock);
				return EIO;
			}
			ctx->fatal_reported = true;
			pthread_mutex_unlock(&ctx->lock);
			memset(ev, 0, sizeof(*ev));
			ev->event_type = IBV_EVENT_DEVICE_FATAL;
			return 0;
		}
		if (rc)
			return rc;
		memset(ev, 0, sizeof(*ev));
		ev->event_type = (enum ibv_event_type)e.event_type;
		switch (ev->event_type) {
		case IBV_EVENT_CQ_ERR: {
			struct uroce_client_cq *cq =
				cl_obj_find(ctx, e.handle, UROCE_CTRL_REGION_CQ);

			ev->element.cq = cq ? &cq->ibv : NULL;
			break;
		}
		case IBV_EVENT_SRQ_ERR:
		case IBV_EVENT_SRQ_LIMIT_REACHED: {
			struct uroce_client_srq *srq =
				cl_obj_find(ctx, e.handle, UROCE_CTRL_REGION_SRQ);

			ev->element.srq = srq ? &srq->ibv : NULL;
			break;
		}
		case IBV_EVENT_PORT_ACTIVE:
		case IBV_EVENT_PORT_ERR:
		case IBV_EVENT_GID_CHANGE:
		case IBV_EVENT_LID_CHANGE:
		case IBV_EVENT_PKEY_CHANGE:
		case IBV_EVENT_SM_CHANGE:
		case IBV_EVENT_CLIENT_REREGISTER:
			ev->element.port_num = (int)e.port;
			return 0;
		case IBV_EVENT_DEVICE_FATAL: /* the daemon's own: the hang-up adds no second */
			pthread_mutex_lock(&ctx->lock);
			ctx->fatal_reported = true;
			pthread_mutex_unlock(&ctx->lock);
			return 0;
		default: {
			struct uroce_client_qp *qp =
				cl_obj_find(ctx, e.handle, UROCE_CTRL_REGION_QP);

			ev->element.qp = qp ? &qp->ibv : NULL;
			break;
		}
		}
		/* An event for an object the application destroyed since is dropped, as the
		 * kernel drops a destroyed object's pending events: an event names a live
		 * object (UCX's handler reads event.element.qp->qp_num; a NULL QP crashed it
		 * on the LAST_WQE_REACHED of a QP it had just destroyed). */
		if (ev->element.qp) /* element is a union: the CQ, SRQ or QP pointer */
			return 0;
	}
}

int uroce_client_stats(struct uroce_client_ctx *ctx, uint32_t flags,
		       struct uroce_ctrl_stat **stats)
{
	struct uroce_ctrl_stats_req req = {.flags = flags};
	size_t cap = UROCE_CTRL_MSG_MAX - sizeof(struct uroce_ctrl_hdr);
	struct uroce_ctrl_stats_rep *rep = malloc(cap);
	int n;

	if (!rep)
		return -ENOMEM;
	n = cl_call(ctx, UROCE_CTRL_STATS, &req, sizeof(req), NULL, 0, rep, cap, NULL, 0);
	if (n < 0) {
		free(rep);
		return n;
	}
	if ((size_t)n < sizeof(*rep) ||
	    (size_t)n != sizeof(*rep) + (size_t)rep->count * sizeof(struct uroce_ctrl_stat)) {
		free(rep);
		return -EPROTO;
	}
	n = (int)rep->count;
	*stats = malloc((size_t)n * sizeof(**stats) + 1);
	if (!*stats) {
		free(rep);
		return -ENOMEM;
	}
	memcpy(*stats, rep->stat, (size_t)n * sizeof(**stats));
	for (int i = 0; i < n; i++)
		(*stats)[i].name[UROCE_CTRL_STAT_NAME_MAX - 1] = 0;
	free(rep);
	return n;
}

int uroce_client_res_list(struct uroce_client_ctx *ctx, uint32_t type,
			  struct uroce_ctrl_res_row **rows)
{
	struct uroce_ctrl_res_list_req req = {.type = type};
	size_t cap = UROCE_CTRL_MSG_MAX - sizeof(struct uroce_ctrl_hdr);
	struct uroce_ctrl_res_list_rep *rep = malloc(cap);
	struct uroce_ctrl_res_row *all = NULL, *grown;
	size_t n = 0;
	int rc;

	if (!rep)
		return -ENOMEM;
	do {
		rc = cl_call(ctx, UROCE_CTRL_RES_LIST, &req, sizeof(req), NULL, 0, rep, cap, NULL,
			     0);
		if (rc < 0)
			goto fail;
		if ((size_t)rc < sizeof(*rep) ||
		    (size_t)rc != sizeof(*rep) + (size_t)rep->count * sizeof(rep->row[0]) ||
		    (rep->next && rep->next <= req.start)) { /* a page must move on */
			rc = -EPROTO;
			goto fail;
		}
		grown = realloc(all, (n + rep->count) * sizeof(*all) + 1);
		if (!grown) {
			rc = -ENOMEM;
			goto fail;
		}
		all = grown;
		memcpy(all + n, rep->row, (size_t)rep->count * sizeof(*all));
		for (uint32_t i = 0; i < rep->count; i++) {
			all[n + i].comm[sizeof(all->comm) - 1] = '\0';
			if (type == UROCE_CTRL_RES_CM_ID)
				all[n + i].cm_id.state[sizeof(all->cm_id.state) - 1] = '\0';
		}
		n += rep->count;
		req.start = rep->next;
	} while (req.start);
	free(rep);
	*rows = all;
	return (int)n;
fail:
	free(rep);
	free(all);
	return rc;
}

int uroce_client_admin(struct uroce_client_ctx *ctx, const struct uroce_ctrl_admin_req *req)
{
	return cl_call(ctx, UROCE_CTRL_ADMIN, req, sizeof(*req), NULL, 0, NULL, 0, NULL, 0);
}

int uroce_client_capture_start(struct uroce_client_ctx *ctx, int fd)
{
	return cl_call(ctx, UROCE_CTRL_CAPTURE_START, NULL, 0, &fd, 1, NULL, 0, NULL, 0);
}

void cl_ring_doorbell(struct uroce_client_ctx *ctx, uint32_t slot)
{
	static const uint8_t ring = 1;
	int saved = errno;

	/* The slot before the sleep check: a daemon that announced its sleep looks at the
	 * summary after the announcement (the Dekker pairing of lib/shm). */
	uroce_summary_set(&ctx->doorbells, slot);
	if (uroce_wake_take(ctx->wake) &&
	    send(ctx->wake_fd, &ring, sizeof(ring), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* Our datagrams fill the daemon's queue (it is awake and draining them) or
		 * the daemon is gone: either way it needs no further wake-up from us. */
	}
	errno = saved;
}
