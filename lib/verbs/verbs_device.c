/* SPDX-License-Identifier: BSD-3-Clause */
/* Devices and contexts: discovery of the running uroced instances, ibv_open_device (the
 * verbs_context and its ops), the queries (device, port, GID, P_Key), async events. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "uverbs.h" /* first: it renames verbs before <infiniband/verbs.h> */
#include "uroce_ctrl.h"

static pthread_mutex_t uv_devices_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uv_device *uv_devices; /* every device ever found, newest last */

/* ---- discovery (lib/client's uroce_client_discover) ----------------------------------- */

static struct uv_device *uv_device_get(const struct uroce_client_daemon *f)
{
	char devnode[UROCE_CTRL_DEVNODE_NAME_MAX];
	struct uv_device *d, **tail = &uv_devices;

	for (d = uv_devices; d; tail = &d->next, d = d->next)
		if (strcmp(d->sock, f->sock) == 0 && d->guid == f->guid)
			break;
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (!d)
			return NULL;
		snprintf(d->sock, sizeof(d->sock), "%s", f->sock);
		d->guid = f->guid;
		d->ibv.node_type = IBV_NODE_CA;
		d->ibv.transport_type = IBV_TRANSPORT_IB;
		*tail = d;
	}
	/* What a kernel device shows. dev_name names the node the daemon keeps in
	 * /dev/infiniband (uroce_ctrl.h); the sysfs paths do not exist (ibv_read_sysfs_file
	 * on them fails with ENOENT). */
	snprintf(d->daemon_name, sizeof(d->daemon_name), "%s", f->name);
	snprintf(d->ibv.name, sizeof(d->ibv.name), "%s", f->name);
	uroce_ctrl_devnode_name(f->guid, devnode);
	snprintf(d->ibv.dev_name, sizeof(d->ibv.dev_name), "%s", devnode);
	snprintf(d->ibv.dev_path, sizeof(d->ibv.dev_path), "/sys/class/infiniband_verbs/%s",
		 devnode);
	snprintf(d->ibv.ibdev_path, sizeof(d->ibv.ibdev_path), "/sys/class/infiniband/%s",
		 f->name);
	d->present = true;
	return d;
}

UV_EXPORT_1_1(ibv_get_device_list) struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list;
	struct uroce_client_daemon *found = NULL;
	struct uv_device *d;
	bool explicit_list;
	int nfound = uroce_client_discover(&found, &explicit_list), i;

	list = nfound >= 0 ? calloc((size_t)nfound + 1, sizeof(*list)) : NULL;
	if (!list) {
		free(found);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&uv_devices_lock);
	for (d = uv_devices; d; d = d->next)
		d->present = false;
	for (i = 0; i < nfound; i++) {
		d = uv_device_get(&found[i]);
		if (!d)
			break;
		list[i] = &d->ibv;
	}
	pthread_mutex_unlock(&uv_devices_lock);
	free(found);
	if (i == 0)
		fprintf(stderr,
			"uroce: no uroced running (looked for %s%s): start uroced or set %s"
			" to its control socket\n",
			explicit_list ? "$" UROCE_CTRL_SOCKET_ENV "=" :
					UROCE_CLIENT_SOCKET_DIR "/*.sock",
			explicit_list ? getenv(UROCE_CTRL_SOCKET_ENV) : "", UROCE_CTRL_SOCKET_ENV);
	if (num_devices)
		*num_devices = i;
	return list;
}

UV_EXPORT_1_1(ibv_free_device_list) void ibv_free_device_list(struct ibv_device **list)
{
	free(list); /* the devices themselves stay: open contexts point at them */
}

UV_EXPORT_1_1(ibv_get_device_name) const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

UV_EXPORT_1_1(ibv_get_device_guid) __be64 ibv_get_device_guid(struct ibv_device *device)
{
	return ((struct uv_device *)(void *)device)->guid;
}

UV_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	const struct uv_device *d;
	int i = 0;

	/* A stable number per device for the life of the process (rdma-core: the
	 * kernel's device index). */
	pthread_mutex_lock(&uv_devices_lock);
	for (d = uv_devices; d && &d->ibv != device; d = d->next)
		i++;
	pthread_mutex_unlock(&uv_devices_lock);
	return d ? i : -1;
}

/* ---- context ---------------------------------------------------------------------------- */

static int uv_op_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	return uroce_client_poll_cq(to_ucq(cq), n, wc);
}

static int uv_op_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return uroce_client_req_notify_cq(to_ucq(cq), solicited_only);
}

static int uv_op_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	int rc = uroce_client_post_send(to_uqp(qp), wr, bad);

	/* Verbs return the errno and applications also read errno (ABI README). */
	if (rc)
		errno = rc;
	return rc;
}

static int uv_op_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	int rc = uroce_client_post_recv(to_uqp(qp), wr, bad);

	/* Verbs return the errno and applications also read errno (ABI README). */
	if (rc)
		errno = rc;
	return rc;
}

static int uv_op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			       struct ibv_recv_wr **bad)
{
	int rc = uroce_client_post_srq_recv(to_usrq(srq), wr, bad);

	/* Verbs return the errno and applications also read errno (ABI README). */
	if (rc)
		errno = rc;
	return rc;
}

/* Memory windows: the inline ibv_alloc_mw, ibv_bind_mw and ibv_dealloc_mw of verbs.h
 * call these (ibv_bind_mw has checked the type and the PDs). */
static struct ibv_mw *uv_op_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct uroce_client_pd *cpd = to_upd(pd);
	struct uroce_client_mw *mw = uroce_client_alloc_mw(cpd, type);

	return mw ? &mw->ibv : NULL; /* errno from lib/client */
}

static int uv_op_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	int rc = uroce_client_bind_mw(to_uqp(qp), to_umw(mw), bind);

	if (rc)
		errno = rc;
	return rc;
}

static int uv_op_dealloc_mw(struct ibv_mw *mw)
{
	int rc = uroce_client_dealloc_mw(to_umw(mw));

	if (rc)
		errno = rc;
	return rc;
}

static int uv_op_compat_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	return ibv_query_device(ctx, attr);
}

static int uv_op_compat_query_port(struct ibv_context *ctx, uint8_t port,
				   struct _compat_ibv_port_attr *attr)
{
	return ibv_query_port(ctx, port, attr);
}

/* A context over the connection @p cl to @p dev's daemon, with @p cmd_fd (its own
 * from then on; -1 is allowed). NULL with errno: the connection and fd are closed. */
static struct ibv_context *uv_context_new(struct uv_device *dev, struct uroce_client_ctx *cl,
					  int cmd_fd)
{
	struct uv_context *uc = calloc(1, sizeof(*uc));
	struct ibv_context *ctx;

	if (!uc) {
		uroce_client_close(cl);
		if (cmd_fd >= 0)
			close(cmd_fd);
		return uv_null(ENOMEM);
	}
	uc->cl = cl;
	uc->dev = dev;
	ctx = &uc->vctx.context;
	ctx->device = &dev->ibv;
	ctx->cmd_fd = cmd_fd;
	ctx->async_fd = uroce_client_async_fd(cl);
	ctx->num_comp_vectors = 1;
	pthread_mutex_init(&ctx->mutex, NULL);
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->ops._compat_query_device = uv_op_compat_query_device;
	ctx->ops._compat_query_port = uv_op_compat_query_port;
	ctx->ops.poll_cq = uv_op_poll_cq;
	ctx->ops.req_notify_cq = uv_op_req_notify_cq;
	ctx->ops.post_send = uv_op_post_send;
	ctx->ops.post_recv = uv_op_post_recv;
	ctx->ops.post_srq_recv = uv_op_post_srq_recv;
	ctx->ops.alloc_mw = uv_op_alloc_mw;
	ctx->ops.bind_mw = uv_op_bind_mw;
	ctx->ops.dealloc_mw = uv_op_dealloc_mw;
	/* The extended ops the inline wrappers of verbs.h reach; unset ones read as
	 * EOPNOTSUPP there. */
	uc->vctx.sz = sizeof(uc->vctx);
	uc->vctx.query_port = uv_query_port;
	uc->vctx.query_device_ex = uv_query_device_ex;
	uc->vctx.create_cq_ex = uv_create_cq_ex;
	uc->vctx.create_qp_ex = uv_create_qp_ex;
	uc->vctx.ibv_create_flow = uv_create_flow;
	uc->vctx.ibv_destroy_flow = uv_destroy_flow;
	uv_domains_init(uc);
	uv_xrc_init(uc);
	uroce_client_set_ibv_context(cl, ctx);
	return ctx;
}

/*
 * The context's cmd_fd: there is no kernel uverbs file behind it, but programs treat it
 * as a descriptor, and hand it to ibv_import_device (rdma-core's tests dup it). So it is
 * the context's token (lib/client, uroce_client_token): an O_PATH descriptor of the
 * context's region, by which the daemon knows the context an import names. dup, fstat,
 * close and passing it over a UNIX socket work; any read, write or ioctl (a kernel
 * command) fails with EBADF.
 */
UV_EXPORT_1_1(ibv_open_device) struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct uv_device *dev = (struct uv_device *)(void *)device;
	struct uroce_client_ctx *cl = uroce_client_open(dev->sock);
	int token;

	if (!cl)
		return NULL; /* errno from lib/client */
	token = uroce_client_token(cl);
	if (token < 0) {
		int err = errno;

		uroce_client_close(cl);
		return uv_null(err);
	}
	return uv_context_new(dev, cl, token);
}

/* A new context that shares the PDs and MRs of the one whose cmd_fd is @p cmd_fd, which
 * it then owns (ibv_close_device closes it), as rdma-core's does. The token does not say
 * which daemon made it: each device's is asked, the one that knows it answers. EINVAL:
 * @p cmd_fd is no open descriptor, or no device's context. */
UV_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	struct ibv_context *ctx = NULL;
	struct ibv_device **list;
	struct stat st;
	int n, i;

	if (fstat(cmd_fd, &st) != 0)
		return uv_null(EINVAL);
	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	for (i = 0; i < n && !ctx; i++) {
		struct uv_device *dev = (struct uv_device *)(void *)list[i];
		struct uroce_client_ctx *cl = uroce_client_open(dev->sock);

		if (!cl)
			continue;
		if (uroce_client_import_context(cl, cmd_fd) != 0) {
			uroce_client_close(cl);
			continue;
		}
		ctx = uv_context_new(dev, cl, cmd_fd);
		if (!ctx)
			break; /* errno from uv_context_new, which closed cmd_fd */
	}
	ibv_free_device_list(list);
	if (!ctx && i == n)
		errno = EINVAL;
	return ctx;
}

UV_EXPORT_1_1(ibv_close_device) int ibv_close_device(struct ibv_context *context)
{
	struct uv_context *uc = uv_ctx(context);

	/* Closing the connection frees whatever the application left (the daemon's side). */
	uroce_client_close(uc->cl);
	if (context->cmd_fd >= 0)
		close(context->cmd_fd);
	pthread_mutex_destroy(&context->mutex);
	uv_domains_free_all(uc);
	pthread_mutex_destroy(&uc->domains_lock);
	free(uc);
	return 0;
}

/* ---- queries ------------------------------------------------------------------------------- */

UV_EXPORT_1_1(ibv_query_device)
int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	return uv_err(uroce_client_query_device(uv_cl(context), attr));
}

/* vctx->query_port: @p len is the caller's sizeof(struct ibv_port_attr) (older headers
 * had a shorter one, newer may have a longer one): fill what fits, zero the rest. */
int uv_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr, size_t len)
{
	struct ibv_port_attr a;
	int rc = uroce_client_query_port(uv_cl(ctx), port, &a);

	if (rc)
		return uv_err(rc);
	if (len <= sizeof(a)) {
		memcpy(attr, &a, len);
	} else {
		memset(attr, 0, len);
		memcpy(attr, &a, sizeof(a));
	}
	return 0;
}

/* The old entry point (IBVERBS_1.1): its struct _compat_ibv_port_attr is today's
 * ibv_port_attr up to `flags` (48 bytes, without port_cap_flags2): write only that. */
#define UV_COMPAT_PORT_ATTR_LEN offsetof(struct ibv_port_attr, port_cap_flags2)
_Static_assert(UV_COMPAT_PORT_ATTR_LEN == 48, "the 1.1 port attributes are 48 bytes");
UV_EXPORT_1_1(ibv_query_port) int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			     struct _compat_ibv_port_attr *port_attr)
{
	return uv_query_port(context, port_num, (struct ibv_port_attr *)(void *)port_attr,
			     UV_COMPAT_PORT_ATTR_LEN);
}

UV_EXPORT_1_1(ibv_query_gid)
int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	/* rdma-core returns -1 (errno set) for a bad index. */
	int rc = uroce_client_query_gid(uv_cl(context), port_num, index, gid);

	if (rc) {
		errno = rc;
		return -1;
	}
	return 0;
}

/* The daemon resolves the neighbour (ARP/ND), as it does for an AH. rdma-core returns a
 * negative errno here (-EINVAL, -EHOSTUNREACH), errno untouched: so does this. */
UV_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
					  uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *vid)
{
	return -uroce_client_resolve_l2(uv_cl(context), attr, eth_mac, vid);
}

static int uv_gid_tbl_len(struct ibv_context *ctx, uint8_t port)
{
	struct ibv_port_attr a;

	return uroce_client_query_port(uv_cl(ctx), port, &a) ? -1 : a.gid_tbl_len;
}

static bool uv_gid_zero(const union ibv_gid *g)
{
	static const union ibv_gid zero;

	return memcmp(g, &zero, sizeof(zero)) == 0;
}

UV_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
				 unsigned int index, enum uv_gid_type_sysfs *type)
{
	int len = uv_gid_tbl_len(context, port_num);
	union ibv_gid gid;

	if (len < 0 || index >= (unsigned int)len) {
		errno = EINVAL;
		return -1;
	}
	if (uroce_client_query_gid(uv_cl(context), port_num, (int)index, &gid) != 0) {
		errno = EINVAL;
		return -1;
	}
	/* Every GID of uroce is a RoCE v2 GID (IPv4-mapped or IPv6 address of the port); an
	 * empty entry has no type, and rdma-core answers IB/RoCE v1 for it (ibv_query_gid_ex
	 * says ENODATA there), as programs written before GID types expect. */
	*type = uv_gid_zero(&gid) ? UV_GID_TYPE_SYSFS_IB_ROCE_V1 : UV_GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

/* One entry, written as @p entry_size bytes (the caller's struct ibv_gid_entry; a
 * longer one is zero-filled beyond ours). */
static int uv_gid_entry(struct ibv_context *ctx, uint32_t port, uint32_t index, void *out,
			size_t entry_size)
{
	struct ibv_gid_entry e = {.gid_index = index, .port_num = port,
				  .gid_type = IBV_GID_TYPE_ROCE_V2, .ndev_ifindex = 0};
	int rc;

	if (port > UINT8_MAX || index > INT32_MAX)
		return EINVAL;
	rc = uroce_client_query_gid(uv_cl(ctx), (uint8_t)port, (int)index, &e.gid);
	if (rc)
		return rc;
	if (uv_gid_zero(&e.gid))
		return ENODATA; /* an unused entry, as rdma-core reports it */
	if (entry_size <= sizeof(e)) {
		memcpy(out, &e, entry_size);
	} else {
		memset(out, 0, entry_size);
		memcpy(out, &e, sizeof(e));
	}
	return 0;
}

UV_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
				uint32_t gid_index, struct ibv_gid_entry *entry, uint32_t flags,
				size_t entry_size)
{
	if (flags || entry_size < offsetof(struct ibv_gid_entry, ndev_ifindex))
		return uv_err(EINVAL);
	return uv_err(uv_gid_entry(context, port_num, gid_index, entry, entry_size));
}

UV_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context,
				       struct ibv_gid_entry *entries, size_t max_entries,
				       uint32_t flags, size_t entry_size)
{
	struct ibv_device_attr da;
	size_t n = 0;
	int rc;

	if (flags || entry_size < offsetof(struct ibv_gid_entry, ndev_ifindex))
		return -EINVAL;
	rc = uroce_client_query_device(uv_cl(context), &da);
	if (rc)
		return -rc;
	for (uint32_t port = 1; port <= da.phys_port_cnt; port++) {
		int len = uv_gid_tbl_len(context, (uint8_t)port);

		for (int i = 0; i < len; i++) {
			struct ibv_gid_entry e;

			rc = uv_gid_entry(context, port, (uint32_t)i, &e, sizeof(e));
			if (rc == ENODATA)
				continue;
			if (rc)
				return -rc;
			if (n == max_entries)
				return -EINVAL; /* the caller's array is too small */
			if (entry_size <= sizeof(e)) {
				memcpy((char *)entries + n * entry_size, &e, entry_size);
			} else {
				memset((char *)entries + n * entry_size, 0, entry_size);
				memcpy((char *)entries + n * entry_size, &e, sizeof(e));
			}
			n++;
		}
	}
	return (ssize_t)n;
}

/* One P_Key, the default (full membership), as on RoCE. */
UV_EXPORT_1_1(ibv_query_pkey)
int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	struct ibv_port_attr a;

	if (uroce_client_query_port(uv_cl(context), port_num, &a) || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(0xffff);
	return 0;
}

UV_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	__be16 p;

	if (ibv_query_pkey(context, port_num, 0, &p) == 0 && (p & htobe16(0x7fff)) ==
							    (pkey & htobe16(0x7fff)))
		return 0;
	errno = ENOENT;
	return -1;
}

/* ---- async events ---------------------------------------------------------------------------- */

UV_EXPORT_1_1(ibv_get_async_event)
int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	int rc = uroce_client_get_async_event(uv_cl(context), event);

	if (rc) {
		errno = rc;
		return -1;
	}
	/* Count what is handed out: destroying the object waits until it is acked. */
	switch (event->event_type) {
	case IBV_EVENT_CQ_ERR:
		if (event->element.cq) {
			pthread_mutex_lock(&event->element.cq->mutex);
			uv_cq_of(event->element.cq)->async_reported++;
			pthread_mutex_unlock(&event->element.cq->mutex);
		}
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		if (event->element.srq) {
			struct uroce_client_srq *s = to_usrq(event->element.srq);

			pthread_mutex_lock(&event->element.srq->mutex);
			((struct uv_srq *)s->priv)->async_reported++;
			pthread_mutex_unlock(&event->element.srq->mutex);
		}
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		if (event->element.qp) {
			pthread_mutex_lock(&event->element.qp->mutex);
			uv_qp_of(event->element.qp)->async_reported++;
			pthread_mutex_unlock(&event->element.qp->mutex);
		}
		break;
	default:
		break;
	}
	return 0;
}

/* One more event of an object acknowledged: its destroy may be waiting for the count. */
static void event_acked(pthread_mutex_t *mutex, pthread_cond_t *cond, uint32_t *completed)
{
	pthread_mutex_lock(mutex);
	(*completed)++;
	pthread_cond_signal(cond);
	pthread_mutex_unlock(mutex);
}

UV_EXPORT_1_1(ibv_ack_async_event) void ibv_ack_async_event(struct ibv_async_event *event)
{
	switch (event->event_type) {
	case IBV_EVENT_CQ_ERR: {
		struct ibv_cq *cq = event->element.cq;

		if (!cq)
			break;
		event_acked(&cq->mutex, &cq->cond, &cq->async_events_completed);
		break;
	}
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED: {
		struct ibv_srq *srq = event->element.srq;

		if (!srq)
			break;
		event_acked(&srq->mutex, &srq->cond, &srq->events_completed);
		break;
	}
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED: {
		struct ibv_qp *qp = event->element.qp;

		if (!qp)
			break;
		event_acked(&qp->mutex, &qp->cond, &qp->events_completed);
		break;
	}
	default:
		break;
	}
}
