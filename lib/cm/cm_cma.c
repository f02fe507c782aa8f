/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma_cm's addressing on top of the IB CM (Linux drivers/infiniband/core/cma.c): port
 * spaces and ports, service IDs made of them (IBA vol 1 annex A11, "RDMA IP CM Service"),
 * and the CMA header at the front of REQ and SIDR_REQ private data that tells a listener
 * which IP address and port the request is for and from.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "cm_internal.h"

/* Linux's default ip_local_port_range: where ephemeral ports come from. */
#define CMA_EPHEMERAL_LO 32768
#define CMA_EPHEMERAL_HI 60999

uint64_t cma_service_id(enum rdma_port_space ps, uint16_t port)
{
	/* annex A11 (RDMA IP CM Service): 0x0000000001 prefix, then the port space and the port */
	return 0x0000000001000000ull | (uint64_t)((uint32_t)ps & 0xff) << 16 | port;
}

uint16_t cma_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static bool addr_any(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
	if (ss->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)ss)->sin6_addr, &in6addr_any, 16);
	return true;
}

/* The address as the CMA header carries it: 16 bytes, IPv4 in the last 4. */
static void addr16(const struct sockaddr_storage *ss, uint8_t out[16])
{
	memset(out, 0, 16);
	if (ss->ss_family == AF_INET)
		memcpy(out + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	else if (ss->ss_family == AF_INET6)
		memcpy(out, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
}

static bool addr_eq(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	uint8_t x[16], y[16];
	addr16(a, x);
	addr16(b, y);
	return !memcmp(x, y, 16);
}

static bool copy_addr(struct sockaddr_storage *dst, const struct sockaddr *src)
{
	if (!src)
		return false;
	memset(dst, 0, sizeof(*dst));
	if (src->sa_family == AF_INET) {
		memcpy(dst, src, sizeof(struct sockaddr_in));
		return true;
	}
	if (src->sa_family == AF_INET6) {
		memcpy(dst, src, sizeof(struct sockaddr_in6));
		return true;
	}
	return false;
}

/* Does binding @p id to @p port clash with another id of its port space? As Linux's
 * cma_check_port: overlapping addresses clash unless both ids allow reuse and neither
 * listens. */
static bool port_taken(const struct uroce_cm_id *id, uint16_t port)
{
	for (const struct uroce_cm_id *o = id->cm->ids; o; o = o->next) {
		if (o == id || !o->bound || o->destroyed || o->ps != id->ps ||
		    cma_port(&o->src) != port)
			continue;
		if (id->reuseaddr && o->reuseaddr && o->cma != CMA_LISTEN)
			continue;
		if (addr_any(&o->src) || addr_any(&id->src) || addr_eq(&o->src, &id->src))
			return true;
	}
	return false;
}

static int bind_port(struct uroce_cm_id *id, uint16_t port)
{
	if (port) {
		if (port_taken(id, port))
			return -EADDRINUSE;
		set_port(&id->src, port);
		id->bound = true;
		return 0;
	}
	unsigned range = CMA_EPHEMERAL_HI - CMA_EPHEMERAL_LO + 1;
	unsigned start = cm_random(id->cm) % range;
	for (unsigned i = 0; i < range; i++) {
		uint16_t p = (uint16_t)(CMA_EPHEMERAL_LO + (start + i) % range);
		if (!port_taken(id, p)) {
			set_port(&id->src, p);
			id->bound = true;
			return 0;
		}
	}
	return -EADDRNOTAVAIL;
}

int uroce_cm_bind(struct uroce_cm_id *id, const struct sockaddr *addr)
{
	if (!id || id->bound || id->cma != CMA_IDLE)
		return -EINVAL;
	struct sockaddr_storage saved = id->src;
	if (!copy_addr(&id->src, addr))
		return -EINVAL;
	uint16_t port = cma_port(&id->src);
	int rc = bind_port(id, port);
	if (rc) {
		id->src = saved;
		return rc;
	}
	id->cma = CMA_ADDR_BOUND;
	return 0;
}

uint32_t cma_flow_label(const struct uroce_cm_id *id)
{
	/* Linux cma_get_roce_udp_flow_label(): RoCEv2 paths get a flow label hashed from
	 * the ports, which rxe turns into the QP's UDP source port. Seen in rxe's REQs:
	 * source port 0xe427, destination 0x4c3a -> 0xbecf3. */
	uint32_t hash = (uint32_t)cma_port(&id->src) * 31 + cma_port(&id->dst);
	return hash & 0xfffff;
}

int uroce_cm_set_route(struct uroce_cm_id *id, const struct sockaddr *src,
		       const struct sockaddr *dst, const struct uroce_cm_path *path)
{
	if (!id || !dst || !path || id->cma == CMA_LISTEN || id->state != CM_IDLE)
		return -EINVAL;
	struct sockaddr_storage d;
	if (!copy_addr(&d, dst))
		return -EINVAL;
	if (!id->bound) {
		struct sockaddr_storage s;
		if (src) {
			if (!copy_addr(&s, src))
				return -EINVAL;
		} else {
			memset(&s, 0, sizeof(s));
			s.ss_family = d.ss_family;
		}
		struct sockaddr_storage saved = id->src;
		id->src = s;
		int rc = bind_port(id, cma_port(&s));
		if (rc) {
			id->src = saved;
			return rc;
		}
	} else if (src && addr_any(&id->src)) {
		/* bound to the wildcard: the route names the source address, port kept */
		uint16_t port = cma_port(&id->src);
		struct sockaddr_storage s;
		if (!copy_addr(&s, src))
			return -EINVAL;
		set_port(&s, port);
		id->src = s;
	}
	if (id->src.ss_family != d.ss_family)
		return -EINVAL;
	id->dst = d;
	id->path = *path;
	id->path.pkey = 0xffff;
	id->path.flow_label = cma_flow_label(id);
	if (id->tos_set)
		id->path.traffic_class = id->tos;
	if (!id->path.hop_limit)
		id->path.hop_limit = 64;
	id->has_route = true;
	id->cma = CMA_ROUTE_RESOLVED;
	/* A bound id that connects instead will not listen: its held request is answered. */
	cm_enter(id->cm);
	cm_early_refuse(id);
	cm_leave(id->cm);
	return 0;
}

void uroce_cm_id_addrs(const struct uroce_cm_id *id, struct sockaddr_storage *src,
		       struct sockaddr_storage *dst)
{
	if (src)
		*src = id->src;
	if (dst)
		*dst = id->dst;
}

int uroce_cm_listen(struct uroce_cm_id *id, int backlog)
{
	if (!id)
		return -EINVAL;
	if (id->cma == CMA_LISTEN) {
		id->backlog = backlog; /* rdma_listen again: a new backlog */
		return 0;
	}
	if (id->cma == CMA_IDLE) {
		/* rdma_listen on an unbound id binds the IPv4 wildcard and an ephemeral port */
		struct sockaddr_in any = {.sin_family = AF_INET};
		int rc = uroce_cm_bind(id, (const struct sockaddr *)&any);
		if (rc)
			return rc;
	}
	if (id->cma != CMA_ADDR_BOUND)
		return -EINVAL;
	/* a reuse-allowed bind may share its port with others; a listener may not */
	bool reuse = id->reuseaddr;
	id->reuseaddr = false;
	if (port_taken(id, cma_port(&id->src))) {
		id->reuseaddr = reuse;
		return -EADDRINUSE;
	}
	id->reuseaddr = reuse;
	id->backlog = backlog;
	id->cma = CMA_LISTEN;
	id->state = CM_LISTEN;
	cm_enter(id->cm);
	cm_early_listened(id); /* a request that came before the listen: taken now */
	cm_leave(id->cm);
	return 0;
}

void cma_hdr_write(const struct uroce_cm_id *id, uint8_t hdr[CMA_HDR_LEN])
{
	/* struct cma_hdr: version 0, IP version in the high nibble, the source port, then
	 * source and destination addresses (IPv4 in the last 4 bytes of each 16). */
	memset(hdr, 0, CMA_HDR_LEN);
	hdr[0] = 0;
	hdr[1] = (id->src.ss_family == AF_INET6 ? 6 : 4) << 4;
	uint16_t port = cma_port(&id->src);
	hdr[2] = (uint8_t)(port >> 8);
	hdr[3] = (uint8_t)port;
	addr16(&id->src, hdr + 4);
	addr16(&id->dst, hdr + 20);
}

static bool hdr_dst_matches(const struct uroce_cm_id *l, const uint8_t *hdr)
{
	unsigned ipv = hdr[1] >> 4;
	if (hdr[0] != 0 || (ipv != 4 && ipv != 6))
		return false; /* Linux cma_check_req_... : an unknown CMA version is refused */
	if (ipv == 4 && l->src.ss_family == AF_INET6 && l->afonly)
		return false;
	if (ipv == 6 && l->src.ss_family == AF_INET)
		return false;
	if (addr_any(&l->src))
		return true;
	if ((ipv == 4) != (l->src.ss_family == AF_INET))
		return false;
	uint8_t mine[16];
	addr16(&l->src, mine);
	return !memcmp(mine, hdr + 20, 16);
}

/* The id in state @p cma on a service ID's port space and port whose address takes the
 * CMA header's destination; *@p port_seen tells whether one was on the port at all. */
static struct uroce_cm_id *find_by_service(struct uroce_cm *cm, enum cma_state cma,
					   uint64_t service_id, const uint8_t *pd,
					   bool *port_seen)
{
	*port_seen = false;
	if ((service_id & 0xffffffffff000000ull) != 0x0000000001000000ull)
		return NULL;
	unsigned ps = (unsigned)(service_id >> 16) & 0xff;
	uint16_t port = (uint16_t)service_id;
	struct uroce_cm_id *wild = NULL;
	for (struct uroce_cm_id *l = cm->ids; l; l = l->next) {
		if (l->cma != cma || l->destroyed || ((unsigned)l->ps & 0xff) != ps ||
		    cma_port(&l->src) != port)
			continue;
		*port_seen = true;
		if (!hdr_dst_matches(l, pd))
			continue;
		if (!addr_any(&l->src))
			return l; /* an exact address wins over the wildcard */
		if (!wild)
			wild = l;
	}
	return wild;
}

struct uroce_cm_id *cma_find_listener(struct uroce_cm *cm, uint64_t service_id,
				      const uint8_t *pd, bool *port_listened)
{
	return find_by_service(cm, CMA_LISTEN, service_id, pd, port_listened);
}

struct uroce_cm_id *cma_find_bound(struct uroce_cm *cm, uint64_t service_id,
				   const uint8_t *pd)
{
	bool port_bound;

	return find_by_service(cm, CMA_ADDR_BOUND, service_id, pd, &port_bound);
}

void cma_new_conn_addrs(struct uroce_cm_id *id, const struct uroce_cm_id *listener,
			const uint8_t *hdr)
{
	/* cma_save_net_info(): our side is the header's destination on the listener's
	 * port, the peer is the header's source address and port. */
	unsigned ipv = hdr[1] >> 4;
	uint16_t lport = cma_port(&listener->src);
	uint16_t rport = (uint16_t)(hdr[2] << 8 | hdr[3]);
	memset(&id->src, 0, sizeof(id->src));
	memset(&id->dst, 0, sizeof(id->dst));
	if (ipv == 6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&id->src;
		struct sockaddr_in6 *d = (struct sockaddr_in6 *)&id->dst;
		s->sin6_family = d->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, hdr + 20, 16);
		memcpy(&d->sin6_addr, hdr + 4, 16);
		s->sin6_port = htons(lport);
		d->sin6_port = htons(rport);
	} else {
		struct sockaddr_in *s = (struct sockaddr_in *)&id->src;
		struct sockaddr_in *d = (struct sockaddr_in *)&id->dst;
		s->sin_family = d->sin_family = AF_INET;
		memcpy(&s->sin_addr, hdr + 32, 4);
		memcpy(&d->sin_addr, hdr + 16, 4);
		s->sin_port = htons(lport);
		d->sin_port = htons(rport);
	}
	id->tos = listener->tos;
	id->tos_set = listener->tos_set;
	id->ack_timeout = listener->ack_timeout;
	id->ack_timeout_set = listener->ack_timeout_set;
	id->has_route = true;
}

uint32_t cma_default_qkey(const struct uroce_cm_id *id)
{
	(void)id;
	return CMA_UDP_QKEY; /* cma_set_qkey(): RDMA_PS_UDP and RDMA_PS_IB use RDMA_UDP_QKEY */
}

int uroce_cm_set_option(struct uroce_cm_id *id, int level, int optname, uint64_t value)
{
	if (!id)
		return -EINVAL;
	if (level != RDMA_OPTION_ID)
		return -ENOSYS;
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		id->tos = (uint8_t)value;
		id->tos_set = true;
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
		if (id->bound && id->cma != CMA_ADDR_BOUND)
			return -EINVAL;
		id->reuseaddr = value != 0;
		return 0;
	case RDMA_OPTION_ID_AFONLY:
		if (id->bound)
			return -EINVAL; /* Linux: only before binding */
		id->afonly = value != 0;
		return 0;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		id->ack_timeout = (uint8_t)(value > 31 ? 31 : value);
		id->ack_timeout_set = true;
		return 0;
	default:
		return -ENOSYS;
	}
}
