/* SPDX-License-Identifier: BSD-3-Clause */
/* rdma_cm ids: addresses, connections, multicast, and the daemon's events turned into the
 * application's where librdmacm does it (the QP transitions around CONNECT_RESPONSE and
 * accept, child ids of CONNECT_REQUEST, synchronous ids created without a channel). */
#include <arpa/inet.h>
#include <endian.h>
#include <ifaddrs.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm.h"

socklen_t ucma_addrlen(const struct sockaddr *addr)
{
	if (!addr)
		return 0;
	switch (addr->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0; /* AF_IB: uroce is RoCE only */
	}
}

static bool ucma_addr_is_loopback(const struct sockaddr *addr)
{
	if (addr->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)(const void *)addr)->sin_addr.s_addr) >>
			24) == IN_LOOPBACKNET;
	return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)(const void *)addr)->sin6_addr);
}

/* As the kernel's cma_any_addr: the zero address or a loopback one (127/8, ::1). Binding
 * to either takes no device and listens on every one (libfabric's verbs provider binds
 * "localhost" to learn whether an RDMA device is needed for it). */
static bool ucma_addr_is_any(const struct sockaddr *addr)
{
	if (ucma_addr_is_loopback(addr))
		return true;
	if (addr->sa_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)addr)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(
		&((const struct sockaddr_in6 *)(const void *)addr)->sin6_addr);
}

/* Whether a kernel interface has this address: what decides, for an address no uroce device
 * has, between the kernel rdma_cm's two answers to a bind (rdma_translate_ip): ENODEV for a
 * local address on a netdev with no RDMA device, EADDRNOTAVAIL for an address not local
 * (Linux 6.1 rxe: rping -s -a on lo's 10.9.9.9, on 203.0.113.5). */
static bool ucma_addr_is_local(const struct sockaddr *addr)
{
	struct ifaddrs *ifs, *ifa;
	bool found = false;

	if (getifaddrs(&ifs))
		return false;
	for (ifa = ifs; ifa && !found; ifa = ifa->ifa_next) {
		const struct sockaddr *a = ifa->ifa_addr;

		if (!a || a->sa_family != addr->sa_family)
			continue;
		if (a->sa_family == AF_INET)
			found = ((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr ==
				((const struct sockaddr_in *)(const void *)addr)->sin_addr.s_addr;
		else
			found = IN6_ARE_ADDR_EQUAL(
				&((const struct sockaddr_in6 *)(const void *)a)->sin6_addr,
				&((const struct sockaddr_in6 *)(const void *)addr)->sin6_addr);
	}
	freeifaddrs(ifs);
	return found;
}

static __be16 ucma_addr_port(const struct sockaddr *addr)
{
	switch (addr->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)(const void *)addr)->sin_port;
	case AF_INET6:
		return ((const struct sockaddr_in6 *)(const void *)addr)->sin6_port;
	default:
		return 0;
	}
}

static void ucma_addr_set_port(struct sockaddr *addr, __be16 port)
{
	if (addr->sa_family == AF_INET)
		((struct sockaddr_in *)(void *)addr)->sin_port = port;
	else if (addr->sa_family == AF_INET6)
		((struct sockaddr_in6 *)(void *)addr)->sin6_port = port;
}

/* ---- ids ----------------------------------------------------------------------------------- */

static struct ucma_id *ucma_id_alloc(struct rdma_event_channel *channel, void *context,
				     enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct ucma_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = qp_type;
	if (!channel) {
		struct ucma_channel *ch = ucma_channel_create();

		if (!ch) {
			free(id);
			return NULL;
		}
		channel = &ch->ch;
		id->sync = true;
	}
	id->id.channel = channel;
	pthread_mutex_init(&id->mut, NULL);
	pthread_cond_init(&id->cond, NULL);
	ucma_registry_add(&id->obj);
	return id;
}

static void ucma_id_free(struct ucma_id *id)
{
	while (id->mc_list) {
		struct ucma_mcast *mc = id->mc_list;

		id->mc_list = mc->next;
		ucma_registry_del(&mc->obj);
		free(mc);
	}
	if (id->sync)
		ucma_channel_destroy(ucma_channel_of(id->id.channel));
	free(id->id.route.path_rec);
	free(id->connect);
	free(id->qp_init_attr);
	free(id->ports);
	pthread_cond_destroy(&id->cond);
	pthread_mutex_destroy(&id->mut);
	free(id);
}

static void ucma_destroy_handle(struct ucma_device *dev, uint32_t handle)
{
	struct uroce_ctrl_cm_id_req req = {.id = handle};

	ucma_call(dev, UROCE_CTRL_CM_DESTROY_ID, &req, sizeof(req), NULL, 0, NULL, 0);
}

static int ucma_set_option_on(struct ucma_device *dev, uint32_t handle, const struct ucma_option *o)
{
	struct uroce_ctrl_cm_option_req req = {
		.id = handle, .level = o->level, .optname = o->optname, .value = o->value};

	return ucma_call(dev, UROCE_CTRL_CM_SET_OPTION, &req, sizeof(req), NULL, 0, NULL, 0);
}

/* A daemon id for @p id on @p dev, reporting to the id's channel there, with the options
 * set so far. @return 0 or -1 with errno. */
static int ucma_id_create_on(struct ucma_id *id, struct ucma_device *dev, uint32_t *handle)
{
	struct uroce_ctrl_cm_create_id_req req = {
		.ps = id->id.ps, .qp_type = id->id.qp_type, .uid = id->obj.uid};
	struct uroce_ctrl_handle rep;

	if (ucma_device_open(dev))
		return -1;
	req.channel = ucma_channel_on(ucma_channel_of(id->id.channel), dev);
	if (!req.channel ||
	    ucma_call(dev, UROCE_CTRL_CM_CREATE_ID, &req, sizeof(req), &rep, sizeof(rep), NULL, 0))
		return -1;
	for (unsigned int i = 0; i < id->noptions; i++)
		if (ucma_set_option_on(dev, rep.handle, &id->options[i])) {
			int err = errno;

			ucma_destroy_handle(dev, rep.handle);
			return ucma_fail(err);
		}
	*handle = rep.handle;
	return 0;
}

/* The id's device is known: it gets its daemon id there, verbs, PD and port. */
static int ucma_id_attach(struct ucma_id *id, struct ucma_device *dev)
{
	if (ucma_id_create_on(id, dev, &id->handle))
		return -1;
	id->dev = dev;
	id->id.verbs = dev->verbs;
	if (!id->id.pd)
		id->id.pd = dev->pd;
	id->id.port_num = 1;
	return 0;
}

void ucma_id_apply_route(struct ucma_id *id, const struct uroce_ctrl_cm_route *r)
{
	struct rdma_route *route = &id->id.route;

	if (r->src.ss_family != AF_UNSPEC)
		memcpy(&route->addr.src_storage, &r->src, sizeof(r->src));
	if (r->dst.ss_family != AF_UNSPEC)
		memcpy(&route->addr.dst_storage, &r->dst, sizeof(r->dst));
	route->addr.addr.ibaddr.sgid = r->sgid;
	route->addr.addr.ibaddr.dgid = r->dgid;
	route->addr.addr.ibaddr.pkey = htobe16((uint16_t)r->pkey);
	if (!r->num_paths)
		return;
	if (!route->path_rec) {
		route->path_rec = calloc(1, sizeof(*route->path_rec));
		if (!route->path_rec)
			return;
	}
	/* The path record a kernel's rdma_cm gives for RoCE: GIDs and IP header fields, no
	 * LIDs, "exactly" selectors. */
	*route->path_rec = (struct ibv_sa_path_rec){
		.dgid = r->dgid,
		.sgid = r->sgid,
		.flow_label = htobe32(r->flow_label),
		.hop_limit = r->hop_limit,
		.traffic_class = r->traffic_class,
		.reversible = 1,
		.numb_path = 1,
		.pkey = htobe16((uint16_t)r->pkey),
		.mtu_selector = 2,
		.mtu = (uint8_t)r->path_mtu,
		.rate_selector = 2,
		.packet_life_time_selector = 2,
		.packet_life_time = 16,
	};
	route->num_paths = 1;
}

UCMA_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
			       void *context, enum rdma_port_space ps)
{
	enum ibv_qp_type qp_type = (ps == RDMA_PS_IPOIB || ps == RDMA_PS_UDP) ? IBV_QPT_UD :
									       IBV_QPT_RC;
	struct ucma_id *rid = ucma_id_alloc(channel, context, ps, qp_type);

	if (!rid)
		return ucma_fail(ENOMEM);
	*id = &rid->id;
	return 0;
}

/* Lets the port a wildcard bind chose go (see ucma_id.reserving). */
static void ucma_unreserve(struct ucma_id *id)
{
	if (id->reserving)
		ucma_destroy_handle(id->reserved.dev, id->reserved.handle);
	id->reserving = false;
}

UCMA_EXPORT int rdma_destroy_id(struct rdma_cm_id *cm_id)
{
	struct ucma_id *id = ucma_id_of(cm_id);

	/* Out of the registry first: an event that arrives from now on is dropped; one being
	 * processed holds the id, and so does every event not yet acked: wait for them. */
	ucma_registry_del(&id->obj);
	for (struct ucma_mcast *mc = id->mc_list; mc; mc = mc->next)
		ucma_registry_del(&mc->obj);
	if (id->dev)
		ucma_destroy_handle(id->dev, id->handle);
	for (unsigned int i = 0; i < id->nports; i++)
		ucma_destroy_handle(id->ports[i].dev, id->ports[i].handle);
	ucma_unreserve(id);
	if (id->id.event)
		rdma_ack_cm_event(id->id.event);
	pthread_mutex_lock(&id->mut);
	while (id->outstanding)
		pthread_cond_wait(&id->cond, &id->mut);
	pthread_mutex_unlock(&id->mut);
	ucma_id_free(id);
	return 0;
}

int ucma_complete(struct ucma_id *id)
{
	struct rdma_cm_event *ev;

	if (!id->sync)
		return 0;
	if (id->id.event) {
		rdma_ack_cm_event(id->id.event);
		id->id.event = NULL;
	}
	if (rdma_get_cm_event(id->id.channel, &id->id.event))
		return -1;
	ev = id->id.event;
	if (!ev->status)
		return 0;
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		return ucma_fail(ECONNREFUSED);
	return ucma_fail(ev->status < 0 ? -ev->status : ev->status);
}

/* A loopback address goes to the daemon as the zero address of its family, with its port:
 * bound so, an id is a wildcard's (ucma_addr_is_any) though it reports the loopback one. */
static int ucma_bind_on(struct ucma_device *dev, uint32_t handle, const struct sockaddr *addr,
			struct uroce_ctrl_cm_route *route)
{
	struct uroce_ctrl_cm_addr_req req = {.id = handle};

	if (ucma_addr_is_loopback(addr)) {
		req.src.ss_family = addr->sa_family;
		ucma_addr_set_port((struct sockaddr *)&req.src, ucma_addr_port(addr));
	} else {
		memcpy(&req.src, addr, ucma_addrlen(addr));
	}
	return ucma_call(dev, UROCE_CTRL_CM_BIND, &req, sizeof(req), route, sizeof(*route), NULL,
			 0);
}

/* Bound, an id's peer address is the zero address of the family bound to, as the kernel
 * sets it (rdma_get_peer_addr: AF_INET 0.0.0.0:0 after binding 10.0.0.1, not AF_UNSPEC). */
UCMA_EXPORT int rdma_bind_addr(struct rdma_cm_id *cm_id, struct sockaddr *addr)
{
	struct ucma_id *id = ucma_id_of(cm_id);
	socklen_t len = ucma_addrlen(addr);
	struct uroce_ctrl_cm_route route;
	struct ucma_device *dev;

	if (!len || id->dev || id->bound_wildcard || id->nports)
		return ucma_fail(EINVAL);
	if (ucma_addr_is_any(addr)) {
		struct ucma_device *devs;

		/* No device yet: resolve_addr picks one, listen takes every one. */
		memcpy(&id->bound, addr, len);
		if (ucma_devices(&devs) > 0) {
			uint32_t handle;

			if (ucma_id_create_on(id, &devs[0], &handle))
				return -1;
			if (ucma_bind_on(&devs[0], handle, addr, &route)) {
				int err = errno;

				ucma_destroy_handle(&devs[0], handle);
				return ucma_fail(err);
			}
			ucma_addr_set_port((struct sockaddr *)&id->bound,
					   ucma_addr_port((struct sockaddr *)&route.src));
			id->reserved = (struct ucma_port){&devs[0], handle};
			id->reserving = true;
		}
		memcpy(&cm_id->route.addr.src_storage, &id->bound, len);
		cm_id->route.addr.dst_storage.ss_family = addr->sa_family;
		id->bound_wildcard = true;
		return 0;
	}
	dev = ucma_device_by_addr(addr);
	if (!dev) /* no uroce device has this address */
		return ucma_fail(ucma_addr_is_local(addr) ? ENODEV : EADDRNOTAVAIL);
	if (ucma_id_attach(id, dev))
		return -1;
	if (ucma_bind_on(dev, id->handle, addr, &route)) {
		int err = errno;

		ucma_destroy_handle(dev, id->handle);
		id->dev = NULL;
		id->handle = 0;
		cm_id->verbs = NULL;
		return ucma_fail(err);
	}
	ucma_id_apply_route(id, &route);
	cm_id->route.addr.dst_storage.ss_family = addr->sa_family;
	return 0;
}

UCMA_EXPORT int rdma_resolve_addr(struct rdma_cm_id *cm_id, struct sockaddr *src_addr,
				  struct sockaddr *dst_addr, int timeout_ms)
{
	struct ucma_id *id = ucma_id_of(cm_id);
	socklen_t dst_len = ucma_addrlen(dst_addr);
	struct uroce_ctrl_cm_addr_req req = {.timeout_ms = (uint32_t)timeout_ms};

	if (!dst_len || (src_addr && !ucma_addrlen(src_addr)))
		return ucma_fail(EINVAL);
	if (src_addr && !id->dev && !id->bound_wildcard && rdma_bind_addr(cm_id, src_addr))
		return -1;
	if (!id->dev) {
		/* The device owning the destination (loopback), else the first. */
		struct ucma_device *dev = ucma_device_by_addr(dst_addr), *devs;

		if (!dev) {
			if (ucma_devices(&devs) == 0)
				return ucma_fail(ENODEV);
			dev = &devs[0];
		}
		if (ucma_id_attach(id, dev))
			return -1;
		if (id->bound_wildcard && ucma_addr_port((struct sockaddr *)&id->bound)) {
			struct uroce_ctrl_cm_route route;

			ucma_unreserve(id); /* this id takes the port on its device */
			if (ucma_bind_on(dev, id->handle, (struct sockaddr *)&id->bound, &route))
				return -1;
			ucma_id_apply_route(id, &route);
		}
	}
	req.id = id->handle;
	memcpy(&req.dst, dst_addr, dst_len);
	if (ucma_call(id->dev, UROCE_CTRL_CM_RESOLVE_ADDR, &req, sizeof(req), NULL, 0, NULL, 0))
		return -1;
	memcpy(&cm_id->route.addr.dst_storage, dst_addr, dst_len);
	return ucma_complete(id);
}

UCMA_EXPORT int rdma_resolve_route(struct rdma_cm_id *cm_id, int timeout_ms)
{
	struct ucma_id *id = ucma_id_of(cm_id);
	struct uroce_ctrl_cm_id_req req = {.id = id->handle, .arg = (uint32_t)timeout_ms};

	if (!id->dev)
		return ucma_fail(EINVAL);
	if (ucma_call(id->dev, UROCE_CTRL_CM_RESOLVE_ROUTE, &req, sizeof(req), NULL, 0, NULL, 0))
		return -1;
	return ucma_complete(id);
}

/* A wildcard (or unbound) listener listens on every device, on one port. */
static int ucma_listen_everywhere(struct ucma_id *id, int backlog)
{
	struct sockaddr_storage addr = {.ss_family = AF_INET};
	struct ucma_device *devs;
	int n = ucma_devices(&devs), err;

	if (id->bound_wildcard)
		addr = id->bound;
	if (n == 0)
		return ucma_fail(ENODEV);
	id->ports = calloc((size_t)n, sizeof(*id->ports));
	if (!id->ports)
		return ucma_fail(ENOMEM);
	for (int i = 0; i < n; i++) {
		struct uroce_ctrl_cm_id_req req = {.arg = (uint32_t)backlog};
		struct uroce_ctrl_cm_route route;

		if (id->reserving && id->reserved.dev == &devs[i]) {
			/* Bound at rdma_bind_addr already, to the port it chose. */
			id->ports[id->nports++] = id->reserved;
			id->reserving = false;
			req.id = id->reserved.handle;
			if (ucma_call(&devs[i], UROCE_CTRL_CM_LISTEN, &req, sizeof(req), NULL, 0,
				      NULL, 0))
				goto fail;
			continue;
		}
		if (ucma_id_create_on(id, &devs[i], &req.id))
			goto fail;
		id->ports[id->nports++] = (struct ucma_port){&devs[i], req.id};
		if (ucma_bind_on(&devs[i], req.id, (struct sockaddr *)&addr, &route) ||
		    ucma_call(&devs[i], UROCE_CTRL_CM_LISTEN, &req, sizeof(req), NULL, 0, NULL, 0))
			goto fail;
		/* An ephemeral port: the first device chose it, the others take the same. */
		if (!ucma_addr_port((struct sockaddr *)&addr))
			ucma_addr_set_port((struct sockaddr *)&addr,
					   ucma_addr_port((struct sockaddr *)&route.src));
	}
	memcpy(&id->id.route.addr.src_storage, &addr, sizeof(addr));
	return 0;
fail:
	err = errno;
	while (id->nports) {
		id->nports--;
		ucma_destroy_handle(id->ports[id->nports].dev, id->ports[id->nports].handle);
	}
	free(id->ports);
	id->ports = NULL;
	return ucma_fail(err);
}

UCMA_EXPORT int rdma_listen(struct rdma_cm_id *cm_id, int backlog)
{
	struct ucma_id *id = ucma_id_of(cm_id);
	struct uroce_ctrl_cm_id_req req = {.id = id->handle, .arg = (uint32_t)backlog};
	struct uroce_ctrl_cm_route route;

	if (id->nports)
		return ucma_fail(EINVAL);
	if (!id->dev)
		return ucma_listen_everywhere(id, backlog);
	if (ucma_call(id->dev, UROCE_CTRL_CM_LISTEN, &req, sizeof(req), NULL, 0, NULL, 0) ||
	    ucma_call(id->dev, UROCE_CTRL_CM_QUERY_ROUTE, &req, sizeof(req), &route, sizeof(route),
		      NULL, 0))
		return -1;
	ucma_id_apply_route(id, &route);
	return 0;
}

/* ---- connections --------------------------------------------------------------------------- */

/* As rdma-core's ucma_valid_param: the depths a connected id asks for must fit the device. */
static int ucma_valid_param(struct ucma_id *id, const struct rdma_conn_param *param)
{
	if (id->id.ps != RDMA_PS_TCP)
		return 0;
	if (!id->id.qp && !param)
		return ucma_fail(EINVAL);
	if (!param)
		return 0;
	if ((param->responder_resources != RDMA_MAX_RESP_RES &&
	     param->responder_resources > id->dev->max_responder_resources) ||
	    (param->initiator_depth != RDMA_MAX_INIT_DEPTH &&
	     param->initiator_depth > id->dev->max_initiator_depth))
		return ucma_fail(EINVAL);
	return 0;
}

/* What connect/accept send: the id's depths, rdma_create_ep's connect data in front of the
 * caller's private data. @return 0 or -1 (EINVAL: too much private data). */
static int ucma_conn_param(struct ucma_id *id, struct uroce_ctrl_cm_param *dst,
			   const struct rdma_conn_param *src, uint32_t qp_num, uint8_t srq)
{
	size_t len = id->connect_len + (src && src->private_data ? src->private_data_len : 0);

	if (len > sizeof(dst->private_data))
		return ucma_fail(EINVAL);
	*dst = (struct uroce_ctrl_cm_param){
		.qp_num = qp_num,
		.srq = srq,
		.responder_resources = id->responder_resources,
		.initiator_depth = id->initiator_depth,
		.retry_count = 7,
		.rnr_retry_count = 7,
		.private_data_len = (uint8_t)len,
	};
	if (id->connect_len)
		memcpy(dst->private_data, id->connect, id->connect_len);
	if (src) {
		dst->flow_control = src->flow_control;
		dst->retry_count = src->retry_count;
		dst->rnr_retry_count = src->rnr_retry_count;
		if (src->private_data && src->private_data_len)
			memcpy(dst->private_data + id->connect_len, src->private_data,
			       src->private_data_len);
	}
	return 0;
}

UCMA_EXPORT int rdma_connect(struct rdma_cm_id *cm_id, struct rdma_conn_param *conn_param)
{
	struct ucma_id *id = ucma_id_of(cm_id);
	struct uroce_ctrl_cm_conn_req req = {.id = id->handle};
	uint32_t qp_num = conn_param ? conn_param->qp_num : 0;
	uint8_t srq = conn_param ? conn_param->srq : 0;

	if (!id->dev)
		return ucma_fail(EINVAL);
	if (ucma_valid_param(id, conn_param))
		return -1;
	id->initiator_depth = conn_param && conn_param->initiator_depth != RDMA_MAX_INIT_DEPTH ?
				      conn_param->initiator_depth :
				      id->dev->max_initiator_depth;
	id->responder_resources =
		conn_param && conn_param->responder_resources != RDMA_MAX_RESP_RES ?
			conn_param->responder_resources :
			id->dev->max_responder_resources;
	if (cm_id->qp) {
		qp_num = cm_id->qp->qp_num;
		srq = !!cm_id->qp->srq;
	}
	if (ucma_conn_param(id, &req.param, conn_param, qp_num, srq) ||
	    ucma_call(id->dev, UROCE_CTRL_CM_CONNECT, &req, sizeof(req), NULL, 0, NULL, 0))
		return -1;
	free(id->connect);
	id->connect = NULL;
	id->connect_len = 0;
	return ucma_complete(id);
}

static uint8_t ucma_min_u8(uint8_t a, uint8_t b)
{
	return a < b ? a : b;
}

UCMA_EXPORT int rdma_accept(struct rdma_cm_id *cm_id, struct rdma_conn_param *conn_param)
{
	struct ucma_id *id = ucma_id_of(cm_id);
	struct uroce_ctrl_cm_conn_req req = {.id = id->handle};
	bool ud = cm_id->qp_type == IBV_QPT_UD;
	uint32_t qp_num;
	uint8_t srq;

	if (!id->dev || (!cm_id->qp && !conn_param))
		return ucma_fail(EINVAL);
	if (ucma_valid_param(id, conn_param))
		return -1;
	qp_num = cm_id->qp ? cm_id->qp->qp_num : conn_param->qp_num;
	srq = cm_id->qp ? !!cm_id->qp->srq : conn_param->srq;
	id->initiator_depth =
		!conn_param || conn_param->initiator_depth == RDMA_MAX_INIT_DEPTH ?
			ucma_min_u8(id->initiator_depth, id->dev->max_initiator_depth) :
			conn_param->initiator_depth;
	id->responder_resources =
		!conn_param || conn_param->responder_resources == RDMA_MAX_RESP_RES ?
			ucma_min_u8(id->responder_resources, id->dev->max_responder_resources) :
			conn_param->responder_resources;
	if (!ud && (ucma_modify_qp_rtr(id, id->responder_resources) ||
		    ucma_modify_qp_rts(id, id->initiator_depth)))
		return -1;
	if (ucma_conn_param(id, &req.param, conn_param, qp_num, srq) ||
	    ucma_call(id->dev, UROCE_CTRL_CM_ACCEPT, &req, sizeof(req), NULL, 0, NULL, 0)) {
		int err = errno;

		ucma_modify_qp_err(id);
		return ucma_fail(err);
	}
	if (ud) {
		/* SIDR_REP was the whole exchange: no event follows. */
		if (id->sync && cm_id->event) {
			rdma_ack_cm_event(cm_id->event);
			cm_id->event = NULL;
		}
		return 0;
	}
	return ucma_complete(id);
}

UCMA_EXPORT int rdma_reject(struct rdma_cm_id *cm_id, const void *private_data,
			    uint8_t private_data_len)
{
	struct ucma_id *id = ucma_id_of(cm_id);
	struct uroce_ctrl_cm_conn_req req = {.id = id->handle};

	if (!id->dev || private_data_len > sizeof(req.param.private_data))
		return ucma_fail(EINVAL);
	if (private_data && private_data_len) {
		memcpy(req.param.private_data, private_data, private_data_len);
		req.param.private_data_len = private_data_len;
	}
	return ucma_call(id->dev, UROCE_CTRL_CM_REJECT, &req, sizeof(req), NULL, 0, NULL, 0);
}

/* ECE (enhanced connection establishment) is a vendor option exchange uroce has none of:
 * as on rxe, the local options are kept and never sent, the peer's read as none, and a
 * rejection for unsupported options is a plain rejection. */
UCMA_EXPORT int rdma_reject_ece(struct rdma_cm_id *cm_id, const void *private_data,
				uint8_t private_data_len)
{
	return rdma_reject(cm_id, private_data, private_data_len);
}

UCMA_EXPORT int rdma_set_local_ece(struct rdma_cm_id *cm_id, struct ibv_ece *ece)
{
	if (!cm_id || cm_id->qp || !ece || !ece->vendor_id || ece->comp_mask)
		return ucma_fail(EINVAL);
	ucma_id_of(cm_id)->local_ece = *ece;
	return 0;
}

UCMA_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *cm_id, struct ibv_ece *ece)
{
	if (!cm_id || cm_id->qp || !ece)
		return ucma_fail(EINVAL);
	*ece = (struct ibv_ece){0};
	return 0;
}

UCMA_EXPORT int rdma_disconnect(struct rdma_cm_id *cm_id)
{
	struct ucma_id *id = ucma_id_of(cm_id);
	struct uroce_ctrl_cm_id_req req = {.id = id->handle};

	if (!cm_id->verbs)
		return ucma_fail(EINVAL);
	if (ucma_modify_qp_err(id) ||
	    ucma_call(id->dev, UROCE_CTRL_CM_DISCONNECT, &req, sizeof(req), NULL, 0, NULL, 0))
		return -1;
	return ucma_complete(id);
}

/* The active side after CONNECT_RESPONSE: the QP (if the library manages it) to RTR and
 * RTS, then ACCEPT, which sends RTU. */
static int ucma_process_conn_resp(struct ucma_id *id)
{
	struct uroce_ctrl_cm_conn_req req = {.id = id->handle};
	int err;

	if (ucma_modify_qp_rtr(id, RDMA_MAX_RESP_RES) ||
	    ucma_modify_qp_rts(id, RDMA_MAX_INIT_DEPTH) ||
	    ucma_call(id->dev, UROCE_CTRL_CM_ACCEPT, &req, sizeof(req), NULL, 0, NULL, 0)) {
		err = errno;
		ucma_modify_qp_err(id);
		return ucma_fail(err);
	}
	return 0;
}

UCMA_EXPORT int rdma_establish(struct rdma_cm_id *cm_id)
{
	if (cm_id->qp || !ucma_id_of(cm_id)->dev)
		return ucma_fail(EINVAL);
	return ucma_process_conn_resp(ucma_id_of(cm_id));
}

UCMA_EXPORT int rdma_notify(struct rdma_cm_id *cm_id, enum ibv_event_type event)
{
	struct ucma_id *id = ucma_id_of(cm_id);
	struct uroce_ctrl_cm_id_req req = {.id = id->handle, .arg = event};

	/* The kernel's CM acts on COMM_EST only (a message arrived before RTU). */
	if (!id->dev || event != IBV_EVENT_COMM_EST)
		return ucma_fail(EINVAL);
	return ucma_call(id->dev, UROCE_CTRL_CM_ESTABLISH, &req, sizeof(req), NULL, 0, NULL, 0);
}

UCMA_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *cm_id, struct ibv_qp_attr *qp_attr,
				  int *qp_attr_mask)
{
	struct ucma_id *id = ucma_id_of(cm_id);
	struct uroce_ctrl_cm_id_req req = {.id = id->handle, .arg = qp_attr->qp_state};
	struct uroce_ctrl_cm_init_qp_attr_rep rep;

	if (!id->dev)
		return ucma_fail(EINVAL);
	if (ucma_call(id->dev, UROCE_CTRL_CM_INIT_QP_ATTR, &req, sizeof(req), &rep, sizeof(rep),
		      NULL, 0))
		return -1;
	*qp_attr = rep.attr;
	*qp_attr_mask = rep.mask;
	return 0;
}

UCMA_EXPORT int rdma_set_option(struct rdma_cm_id *cm_id, int level, int optname, void *optval,
				size_t optlen)
{
	struct ucma_id *id = ucma_id_of(cm_id);
	struct ucma_option o = {.level = level, .optname = optname};

	if (!optval)
		return ucma_fail(EINVAL);
	switch (optlen) {
	case 1:
		o.value = *(uint8_t *)optval;
		break;
	case 2:
		o.value = *(uint16_t *)optval;
		break;
	case 4:
		o.value = (uint64_t)*(uint32_t *)optval;
		break;
	case 8:
		o.value = *(uint64_t *)optval;
		break;
	default:
		/* RDMA_OPTION_IB_PATH (path records) among others: none for RoCE here. */
		return ucma_fail(level == RDMA_OPTION_IB ? ENOSYS : EINVAL);
	}
	if (id->dev)
		return ucma_set_option_on(id->dev, id->handle, &o);
	for (unsigned int i = 0; i < id->nports; i++)
		if (ucma_set_option_on(id->ports[i].dev, id->ports[i].handle, &o))
			return -1;
	if (id->nports)
		return 0;
	/* No daemon id yet: kept for when it has one. */
	if (id->noptions == UCMA_MAX_PENDING_OPTIONS)
		return ucma_fail(ENOMEM);
	id->options[id->noptions++] = o;
	return 0;
}

UCMA_EXPORT int rdma_migrate_id(struct rdma_cm_id *cm_id, struct rdma_event_channel *channel)
{
	struct ucma_id *id = ucma_id_of(cm_id);
	bool sync = channel == NULL;
	struct ucma_channel *ch;
	int err;

	if (id->sync && !channel)
		return ucma_fail(EINVAL);
	if (sync) {
		ch = ucma_channel_create();
		if (!ch)
			return -1;
		channel = &ch->ch;
	}
	ch = ucma_channel_of(channel);
	for (unsigned int i = 0; i <= id->nports; i++) {
		struct ucma_device *dev = i < id->nports ? id->ports[i].dev : id->dev;
		struct uroce_ctrl_cm_id_req req = {
			.id = i < id->nports ? id->ports[i].handle : id->handle};

		if (!dev)
			continue;
		req.arg = ucma_channel_on(ch, dev);
		if (!req.arg ||
		    ucma_call(dev, UROCE_CTRL_CM_MIGRATE_ID, &req, sizeof(req), NULL, 0, NULL, 0))
			goto fail;
	}
	if (id->sync) {
		if (cm_id->event) {
			rdma_ack_cm_event(cm_id->event);
			cm_id->event = NULL;
		}
		ucma_channel_destroy(ucma_channel_of(cm_id->channel));
	}
	/* Events already handed out on the old channel are acked before this returns, as
	 * rdma-core waits for them. */
	pthread_mutex_lock(&id->mut);
	id->sync = sync;
	cm_id->channel = channel;
	while (id->outstanding)
		pthread_cond_wait(&id->cond, &id->mut);
	pthread_mutex_unlock(&id->mut);
	return 0;
fail:
	err = errno;
	if (sync)
		ucma_channel_destroy(ch);
	return ucma_fail(err);
}

/* ---- endpoints (synchronous ids) ---------------------------------------------------------- */

UCMA_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct ucma_id *lid = ucma_id_of(listen);
	struct rdma_cm_event *event;
	int err;

	if (!lid->sync)
		return ucma_fail(EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	if (rdma_get_cm_event(listen->channel, &event))
		return -1;
	if (event->status) {
		err = event->status < 0 ? -event->status : event->status;
		goto fail;
	}
	if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		err = EINVAL;
		goto fail;
	}
	if (lid->qp_init_attr) {
		struct ibv_qp_init_attr attr = *lid->qp_init_attr;

		if (rdma_create_qp(event->id, listen->pd, &attr)) {
			err = errno;
			goto fail;
		}
	}
	*id = event->id;
	(*id)->event = event;
	return 0;
fail:
	listen->event = event;
	return ucma_fail(err);
}

UCMA_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
			       struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm_id;
	struct ucma_id *rid;
	int err;

	rid = ucma_id_alloc(NULL, NULL, (enum rdma_port_space)res->ai_port_space,
			    (enum ibv_qp_type)res->ai_qp_type);
	if (!rid)
		return ucma_fail(ENOMEM);
	cm_id = &rid->id;
	if (res->ai_flags & RAI_PASSIVE) {
		if (rdma_bind_addr(cm_id, res->ai_src_addr))
			goto fail;
		if (pd)
			cm_id->pd = pd;
		if (qp_init_attr) {
			rid->qp_init_attr = malloc(sizeof(*qp_init_attr));
			if (!rid->qp_init_attr) {
				errno = ENOMEM;
				goto fail;
			}
			*rid->qp_init_attr = *qp_init_attr;
			rid->qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		}
		*id = cm_id;
		return 0;
	}
	if (rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, 2000) ||
	    rdma_resolve_route(cm_id, 2000))
		goto fail;
	if (qp_init_attr) {
		qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		if (rdma_create_qp(cm_id, pd, qp_init_attr))
			goto fail;
	}
	if (res->ai_connect_len) {
		rid->connect = malloc(res->ai_connect_len);
		if (!rid->connect) {
			errno = ENOMEM;
			goto fail;
		}
		memcpy(rid->connect, res->ai_connect, res->ai_connect_len);
		rid->connect_len = res->ai_connect_len;
	}
	*id = cm_id;
	return 0;
fail:
	err = errno;
	rdma_destroy_ep(cm_id);
	return ucma_fail(err);
}

UCMA_EXPORT void rdma_destroy_ep(struct rdma_cm_id *cm_id)
{
	if (cm_id->qp)
		rdma_destroy_qp(cm_id);
	if (cm_id->srq)
		rdma_destroy_srq(cm_id);
	rdma_destroy_id(cm_id);
}

/* ---- multicast ----------------------------------------------------------------------------- */

static int ucma_join(struct ucma_id *id, const struct sockaddr *addr, uint32_t join_flags,
		     void *context)
{
	struct uroce_ctrl_cm_addr_req req = {.id = id->handle, .flags = join_flags};
	struct ucma_mcast *mc, **pos;
	int err;

	if (!id->dev)
		return ucma_fail(EINVAL); /* bind or resolve an address first */
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return ucma_fail(ENOMEM);
	mc->obj.is_mcast = true;
	mc->id = id;
	mc->context = context;
	mc->join_flags = join_flags;
	memcpy(&mc->addr, addr, ucma_addrlen(addr));
	pthread_mutex_lock(&id->mut);
	mc->next = id->mc_list;
	id->mc_list = mc;
	pthread_mutex_unlock(&id->mut);
	ucma_registry_add(&mc->obj);
	req.uid = mc->obj.uid;
	memcpy(&req.dst, addr, ucma_addrlen(addr));
	if (ucma_call(id->dev, UROCE_CTRL_CM_JOIN_MCAST, &req, sizeof(req), NULL, 0, NULL, 0)) {
		err = errno;
		ucma_registry_del(&mc->obj);
		pthread_mutex_lock(&id->mut);
		for (pos = &id->mc_list; *pos != mc; pos = &(*pos)->next)
			;
		*pos = mc->next;
		pthread_mutex_unlock(&id->mut);
		free(mc);
		return ucma_fail(err);
	}
	return ucma_complete(id);
}

UCMA_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *cm_id,
				       struct rdma_cm_join_mc_attr_ex *mc_join_attr, void *context)
{
	if (mc_join_attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return ucma_fail(ENOTSUP);
	if (!(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
	    !(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    mc_join_attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED ||
	    !ucma_addrlen(mc_join_attr->addr))
		return ucma_fail(EINVAL);
	return ucma_join(ucma_id_of(cm_id), mc_join_attr->addr, mc_join_attr->join_flags, context);
}

UCMA_EXPORT int rdma_join_multicast(struct rdma_cm_id *cm_id, struct sockaddr *addr, void *context)
{
	if (!ucma_addrlen(addr))
		return ucma_fail(EINVAL);
	return ucma_join(ucma_id_of(cm_id), addr, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

UCMA_EXPORT int rdma_leave_multicast(struct rdma_cm_id *cm_id, struct sockaddr *addr)
{
	struct ucma_id *id = ucma_id_of(cm_id);
	socklen_t len = ucma_addrlen(addr);
	struct uroce_ctrl_cm_addr_req req = {.id = id->handle};
	struct ucma_mcast *mc, **pos;
	int rc;

	if (!len)
		return ucma_fail(EINVAL);
	pthread_mutex_lock(&id->mut);
	for (pos = &id->mc_list; *pos; pos = &(*pos)->next)
		if (!memcmp(&(*pos)->addr, addr, len))
			break;
	mc = *pos;
	if (mc)
		*pos = mc->next;
	pthread_mutex_unlock(&id->mut);
	if (!mc)
		return ucma_fail(EADDRNOTAVAIL);
	if (cm_id->qp && mc->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		ibv_detach_mcast(cm_id->qp, &mc->mgid, mc->mlid);
	ucma_registry_del(&mc->obj);
	req.uid = mc->obj.uid;
	memcpy(&req.dst, addr, len);
	rc = ucma_call(id->dev, UROCE_CTRL_CM_LEAVE_MCAST, &req, sizeof(req), NULL, 0, NULL, 0);
	pthread_mutex_lock(&id->mut);
	while (mc->outstanding)
		pthread_cond_wait(&id->cond, &id->mut);
	pthread_mutex_unlock(&id->mut);
	free(mc);
	return rc;
}

/* ---- events -------------------------------------------------------------------------------- */

void ucma_event_done(struct ucma_id *id, struct ucma_mcast *mc)
{
	pthread_mutex_lock(&id->mut);
	id->outstanding--;
	if (mc)
		mc->outstanding--;
	pthread_cond_broadcast(&id->cond);
	pthread_mutex_unlock(&id->mut);
}

static void ucma_copy_conn(struct ucma_event *out, const struct uroce_ctrl_cm_param *p)
{
	struct rdma_conn_param *dst = &out->event.param.conn;

	dst->private_data_len = p->private_data_len;
	if (p->private_data_len) {
		memcpy(out->private_data, p->private_data, p->private_data_len);
		dst->private_data = out->private_data;
	}
	dst->responder_resources = p->responder_resources;
	dst->initiator_depth = p->initiator_depth;
	dst->flow_control = p->flow_control;
	dst->retry_count = p->retry_count;
	dst->rnr_retry_count = p->rnr_retry_count;
	dst->srq = p->srq;
	dst->qp_num = p->qp_num;
}

static void ucma_copy_ud(struct ucma_event *out, const struct uroce_ctrl_cm_event *ev)
{
	struct rdma_ud_param *dst = &out->event.param.ud;

	dst->private_data_len = ev->param.private_data_len;
	if (ev->param.private_data_len) {
		memcpy(out->private_data, ev->param.private_data, ev->param.private_data_len);
		dst->private_data = out->private_data;
	}
	dst->ah_attr = ev->ah_attr;
	dst->qp_num = ev->param.qp_num;
	dst->qkey = ev->param.qkey;
}

/* CONNECT_REQUEST: the new id, on the listener's channel (a synchronous listener's
 * children get their own), on the device the request came to. */
static bool ucma_process_conn_req(struct ucma_id *listener, struct ucma_device *dev,
				  const struct uroce_ctrl_cm_event *ev, struct ucma_event *out)
{
	struct ucma_id *child = ucma_id_alloc(listener->id.channel, listener->id.context,
					      listener->id.ps, listener->id.qp_type);

	if (!child) {
		ucma_destroy_handle(dev, ev->id);
		return false;
	}
	child->dev = dev;
	child->handle = ev->id;
	child->id.verbs = dev->verbs;
	child->id.pd = dev->pd;
	child->id.port_num = 1;
	child->initiator_depth = ev->param.initiator_depth;
	child->responder_resources = ev->param.responder_resources;
	ucma_id_apply_route(child, &ev->route);
	out->event.listen_id = &listener->id;
	out->event.id = &child->id;
	if (listener->sync && rdma_migrate_id(&child->id, NULL)) {
		rdma_destroy_id(&child->id);
		return false;
	}
	return true;
}

/* MULTICAST_JOIN: the QP joins the group (not for send-only members). */
static int ucma_process_join(struct ucma_event *evt)
{
	struct ucma_mcast *mc = evt->mc;
	struct ibv_qp *qp = evt->id->id.qp;

	mc->mgid = evt->event.param.ud.ah_attr.grh.dgid;
	mc->mlid = evt->event.param.ud.ah_attr.dlid;
	if (!qp || mc->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return 0;
	return ibv_attach_mcast(qp, &mc->mgid, mc->mlid) ? -errno : 0;
}

bool ucma_event_process(struct ucma_device *dev, const struct uroce_ctrl_cm_event *ev,
			struct ucma_event *out)
{
	struct ucma_mcast *mc;
	struct ucma_id *id = ucma_event_hold(dev, ev, &mc);
	bool ud;

	if (!id) {
		/* A request to a listener destroyed meanwhile: nobody will take it. */
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && ev->id)
			ucma_destroy_handle(dev, ev->id);
		return false;
	}
	ud = id->id.qp_type == IBV_QPT_UD;
	memset(out, 0, sizeof(*out));
	out->id = id;
	out->mc = mc;
	out->event.id = &id->id;
	out->event.event = (enum rdma_cm_event_type)ev->event;
	out->event.status = ev->status;
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (ud)
			ucma_copy_ud(out, ev);
		else
			ucma_copy_conn(out, &ev->param);
		if (!ucma_process_conn_req(id, dev, ev, out))
			goto drop;
		return true;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		ucma_id_apply_route(id, &ev->route);
		ucma_copy_conn(out, &ev->param);
		if (!id->id.qp)
			return true; /* the application completes it (rdma_establish) */
		if (ucma_process_conn_resp(id) == 0) {
			out->event.event = RDMA_CM_EVENT_ESTABLISHED;
		} else {
			out->event.event = RDMA_CM_EVENT_CONNECT_ERROR;
			out->event.status = -errno;
			id->connect_error = true;
		}
		return true;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_DISCONNECTED:
		/* After a failed CONNECT_RESPONSE the application saw CONNECT_ERROR: what the
		 * peer says next is no news to it. */
		if (id->connect_error)
			goto drop;
		ucma_id_apply_route(id, &ev->route);
		ucma_copy_conn(out, &ev->param);
		if (ev->event == RDMA_CM_EVENT_REJECTED)
			ucma_modify_qp_err(id);
		return true;
	case RDMA_CM_EVENT_MULTICAST_JOIN:
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		if (!mc)
			goto drop;
		if (ev->event == RDMA_CM_EVENT_MULTICAST_JOIN) {
			ucma_copy_ud(out, ev);
			out->event.status = ucma_process_join(out);
			if (out->event.status)
				out->event.event = RDMA_CM_EVENT_MULTICAST_ERROR;
		}
		out->event.param.ud.private_data = mc->context;
		return true;
	default:
		ucma_id_apply_route(id, &ev->route);
		if (ud)
			ucma_copy_ud(out, ev);
		else
			ucma_copy_conn(out, &ev->param);
		return true;
	}
drop:
	ucma_event_done(id, mc);
	return false;
}

UCMA_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned int)event < sizeof(names) / sizeof(names[0]))
		return names[event];
	return "UNKNOWN EVENT";
}

UCMA_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *cm_id)
{
	return ucma_addr_port(&cm_id->route.addr.src_addr);
}

UCMA_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *cm_id)
{
	return ucma_addr_port(&cm_id->route.addr.dst_addr);
}
