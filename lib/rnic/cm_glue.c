/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection management: lib/cm on QP1, and the CM_* commands librdmacm sends.
 *
 *   QP1 rx (transport's gsi_rx) -> path from the frame -> uroce_cm_input
 *   lib/cm tx -> uroce_tp_gsi_send (UD SEND Only, Q_Key 0x80010000) -> rnic_net_tx
 *   lib/cm events -> the owning id's CM channel: queue + a pipe, one byte per event
 *   RESOLVE_ADDR -> lib/ipstack (ARP/ND, cookie RNIC_CM_COOKIE | serial) -> ADDR_RESOLVED
 *
 * CM ids and channels are objects of the connection that made them (handles in its
 * table), so a connection that goes takes its ids with it: uroce_cm_id_destroy() rejects
 * or disconnects them on the wire (DREQ), as rdma_destroy_id does when a process exits.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rnic_internal.h"

/* Neighbour-resolution cookies of CM ids; a client's cookie is its id (< 2^63). */
#define RNIC_CM_COOKIE (1ull << 63)

struct rnic_cm_event_node {
	struct rnic_cm_event_node *next;
	struct uroce_ctrl_cm_event ev;
};

struct rnic_cm_channel {
	struct uroce_rnic *nic;
	/* Readable at the client's end exactly while events wait (see uroce_ctrl.h). */
	struct rnic_event_pipe pipe;
	struct rnic_cm_event_node *head, *tail;
	uint32_t queued;
	uint32_t signalled; /* bytes we put in the pipe and have not taken back */
	uint32_t ids; /* ids reporting here: the channel cannot go before them */
};

#define RNIC_CM_MAX_BACKLOG 1024u /* ucma's max_backlog default */

struct rnic_cm_id {
	struct uroce_cm_id *cm;
	struct uroce_rnic_client *client;
	uint32_t handle;
	uint32_t channel; /* handle of its rnic_cm_channel */
	uint64_t uid;
	uint64_t cookie;
	bool resolving; /* RESOLVE_ADDR waits for the neighbour */
	bool addr_resolved;
	/* A listener: CONNECT_REQUEST events the application has not taken yet, and how many
	 * it may have (rdma_listen's backlog, as ucma bounds it). */
	uint32_t requests_queued;
	uint32_t backlog;
	struct sockaddr_storage src, dst;
	struct rnic_cm_id *next; /* nic->cm_ids: every id, for neighbour callbacks */
};

/* ---- addresses ---------------------------------------------------------------------- */

static bool addr_to_gid(const struct sockaddr_storage *ss, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;

		uroce_gid_from_ipv4(gid->raw, &in->sin_addr);
		return true;
	}
	if (ss->ss_family == AF_INET6) {
		memcpy(gid->raw, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
		return true;
	}
	return false;
}

static bool addr_is_any(const struct sockaddr_storage *ss)
{
	static const struct in6_addr any6;

	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
	if (ss->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)ss)->sin6_addr, &any6, 16) == 0;
	return false;
}

/* The port of @p ss in host order; 0 for a family without ports. */
static uint16_t addr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

/* Ports below it are privileged (Linux's PROT_SOCK). */
#define RNIC_CM_PROT_PORT 1024

/*
 * Whether @p c may take the source port of @p ss. Linux's cma_get_port() gives a port
 * below 1024 only to CAP_NET_BIND_SERVICE in the netns's user namespace, and answers
 * EACCES otherwise. The daemon cannot see a client's capabilities as the kernel proves
 * them, only its uid (SO_PEERCRED, in the daemon's user namespace): such a port is root's.
 * @return 0 or -EACCES.
 */
static int port_allowed(const struct uroce_rnic_client *c, const struct sockaddr_storage *ss)
{
	uint16_t port = addr_port(ss);

	return port && port < RNIC_CM_PROT_PORT && c->uid != 0 ? -EACCES : 0;
}

static int gid_index(const struct uroce_rnic *nic, const union ibv_gid *gid)
{
	unsigned int i;

	for (i = 0; i < nic->ngids; i++)
		if (memcmp(nic->gids[i].raw, gid->raw, 16) == 0)
			return (int)i;
	return -1;
}

/* Our first address of @family as a GID index (an IPv6 one that is not link-local first,
 * as the kernel prefers a global source), or -1. */
static int source_gid_index(const struct uroce_rnic *nic, int family)
{
	int i, ll = -1;

	for (i = 0; i < nic->ngids; i++) {
		bool v4 = uroce_gid_is_ipv4(nic->gids[i].raw);

		if (family == AF_INET && v4)
			return i;
		if (family == AF_INET6 && !v4) {
			if (nic->gids[i].raw[0] == 0xfe && (nic->gids[i].raw[1] & 0xc0) == 0x80) {
				if (ll < 0)
					ll = i;
				continue;
			}
			return i;
		}
	}
	return ll;
}

static void gid_to_addr(const union ibv_gid *gid, int family, uint16_t port_be,
			struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = port_be;
		memcpy(&in->sin_addr, uroce_gid_ipv4(gid->raw), 4);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = port_be;
		memcpy(&in6->sin6_addr, gid->raw, 16);
	}
}

static void fill_route(const struct rnic_cm_id *id, struct uroce_ctrl_cm_route *r)
{
	struct uroce_rnic *nic = id->client->rnic;
	const struct uroce_cm_path *p = uroce_cm_id_path(id->cm);

	memset(r, 0, sizeof(*r));
	uroce_cm_id_addrs(id->cm, &r->src, &r->dst);
	r->pkey = UROCE_PKEY_DEFAULT;
	r->path_mtu = nic->active_mtu;
	if (p && (id->addr_resolved || r->dst.ss_family != AF_UNSPEC)) {
		r->sgid = p->sgid;
		r->dgid = p->dgid;
		r->flow_label = p->flow_label;
		r->sgid_index = p->sgid_index;
		r->hop_limit = p->hop_limit;
		r->traffic_class = p->traffic_class;
		r->num_paths = id->addr_resolved ? 1 : 0;
	}
}

/* ---- channels and events ----------------------------------------------------------- */

static struct rnic_cm_channel *channel_of(const struct rnic_cm_id *id)
{
	return rnic_obj_get(id->client, id->channel, RNIC_OBJ_CM_CHANNEL);
}

/* Brings the pipe to one byte per queued event. Neither way blocks: a pipe with no room
 * (a client that lets RNIC_EVENT_PIPE_BYTES events wait) gets the rest as events are
 * taken, and bytes the client read itself (which only quiets its own fd early) are
 * found missing when the pipe runs dry and put back. */
static void channel_signal(struct rnic_cm_channel *ch)
{
	while (ch->signalled > ch->queued) {
		if (!rnic_event_pipe_take(&ch->pipe)) {
			ch->signalled = 0;
			break;
		}
		ch->signalled--;
	}
	while (ch->signalled < ch->queued && rnic_event_pipe_post(ch->nic, &ch->pipe))
		ch->signalled++;
}

static void channel_push(struct rnic_cm_channel *ch, const struct uroce_ctrl_cm_event *ev)
{
	struct uroce_rnic *nic = ch->nic;
	struct rnic_cm_event_node *n = malloc(sizeof(*n));

	if (!n) {
		nic->cnt.cm_events_lost++;
		return;
	}
	n->next = NULL;
	n->ev = *ev;
	if (ch->tail)
		ch->tail->next = n;
	else
		ch->head = n;
	ch->tail = n;
	ch->queued++;
	/* After the event is queued: a woken reader finds it. */
	channel_signal(ch);
	nic->cnt.cm_events++;
}

static struct rnic_cm_event_node *channel_pop(struct rnic_cm_channel *ch)
{
	struct rnic_cm_event_node *n = ch->head;

	if (!n)
		return NULL;
	ch->head = n->next;
	if (!ch->head)
		ch->tail = NULL;
	ch->queued--;
	channel_signal(ch); /* takes back the byte of the event handed out */
	return n;
}

/* Takes the events of id handle @id (or all with @id 0) out of @from; appends them to
 * @to when given (MIGRATE_ID), frees them otherwise (DESTROY_ID). */
static void channel_move_events(struct rnic_cm_channel *from, uint32_t id,
				struct rnic_cm_channel *to)
{
	struct rnic_cm_event_node *keep = NULL, **kt = &keep, *n;
	uint32_t k, total = from->queued;

	for (k = 0; k < total; k++) {
		n = channel_pop(from);
		if (id == 0 || n->ev.id == id) {
			if (to)
				channel_push(to, &n->ev);
			free(n);
		} else {
			n->next = NULL;
			*kt = n;
			kt = &n->next;
		}
	}
	while ((n = keep)) {
		keep = n->next;
		channel_push(from, &n->ev);
		from->nic->cnt.cm_events--; /* re-queued, not new */
		free(n);
	}
}

static void report(struct rnic_cm_id *id, enum rdma_cm_event_type type, int status)
{
	struct rnic_cm_channel *ch = channel_of(id);
	struct uroce_ctrl_cm_event ev;

	if (!ch)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.event = type;
	ev.status = status;
	ev.id = id->handle;
	ev.uid = id->uid;
	fill_route(id, &ev.route);
	channel_push(ch, &ev);
}

/* ---- lib/cm's callbacks ------------------------------------------------------------ */

static struct rnic_cm_id *id_new(struct uroce_rnic_client *c, uint32_t channel, uint64_t uid)
{
	struct rnic_cm_id *id = calloc(1, sizeof(*id));
	struct rnic_cm_channel *ch = rnic_obj_get(c, channel, RNIC_OBJ_CM_CHANNEL);

	if (!id || !ch) {
		free(id);
		return NULL;
	}
	id->handle = rnic_obj_add(c, RNIC_OBJ_CM_ID, id);
	if (!id->handle) {
		free(id);
		return NULL;
	}
	id->client = c;
	id->channel = channel;
	id->uid = uid;
	id->cookie = RNIC_CM_COOKIE | ++c->rnic->cm_serial;
	ch->ids++;
	id->next = c->rnic->cm_ids;
	c->rnic->cm_ids = id;
	return id;
}

/* A CM id with no owner, refused on the next turn (lib/cm is not re-entered). */
static void cm_orphan(struct uroce_rnic *nic, struct uroce_cm_id *cid)
{
	if (nic->norphans < sizeof(nic->orphans) / sizeof(nic->orphans[0]))
		nic->orphans[nic->norphans++] = cid;
	else
		nic->cnt.cm_events_lost++;
}

static void cm_event(void *io_ctx, const struct uroce_cm_event *e)
{
	struct uroce_rnic *nic = io_ctx;
	struct rnic_cm_id *id = uroce_cm_id_user(e->id), *lid = NULL;
	struct rnic_cm_channel *ch;
	struct uroce_ctrl_cm_event ev;

	if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		lid = e->listen_id ? uroce_cm_id_user(e->listen_id) : NULL;
		if (lid && rnic_limit_object(lid->client, RNIC_OBJ_CM_ID)) {
			lid = NULL; /* its user holds limits.cm_ids: REJ as below */
		} else if (lid && lid->requests_queued >= lid->backlog) {
			/* As ucma's: a listener whose application has not taken its backlog of
			 * requests refuses more (REJ, consumer defined), so a flood of REQs
			 * costs bounded memory. */
			nic->cnt.cm_backlog_full++;
			lid = NULL;
		}
		id = lid ? id_new(lid->client, lid->channel, lid->uid) : NULL;
		if (!id) {
			/* No owner (the listener is going, or no memory): the request is
			 * refused, after lib/cm returns (it is not re-entered). */
			uroce_cm_id_set_user(e->id, NULL);
			cm_orphan(nic, e->id);
			return;
		}
		id->cm = e->id;
		id->addr_resolved = true;
		uroce_cm_id_set_user(e->id, id);
	}
	if (!id || !(ch = channel_of(id)))
		return;
	memset(&ev, 0, sizeof(ev));
	ev.event = e->event;
	ev.status = e->status;
	ev.id = id->handle;
	ev.listen_id = lid ? lid->handle : 0;
	ev.uid = id->uid;
	fill_route(id, &ev.route);
	memcpy(ev.param.private_data, e->param.private_data, sizeof(ev.param.private_data));
	ev.param.private_data_len = e->param.private_data_len;
	ev.param.responder_resources = e->param.responder_resources;
	ev.param.initiator_depth = e->param.initiator_depth;
	ev.param.flow_control = e->param.flow_control;
	ev.param.retry_count = e->param.retry_count;
	ev.param.rnr_retry_count = e->param.rnr_retry_count;
	ev.param.srq = e->param.srq;
	ev.param.qp_num = e->param.qp_num;
	ev.param.qkey = e->param.qkey;
	if (lid)
		lid->requests_queued++;
	if (uroce_cm_id_qp_type(e->id) == IBV_QPT_UD) {
		const struct uroce_cm_path *p = uroce_cm_id_path(e->id);

		/* rdma_ud_param.ah_attr: where the peer's QP is (RoCE: GRH always). */
		ev.ah_attr.is_global = 1;
		ev.ah_attr.port_num = 1;
		if (p) {
			ev.ah_attr.grh.dgid = p->dgid;
			ev.ah_attr.grh.sgid_index = p->sgid_index;
			ev.ah_attr.grh.hop_limit = p->hop_limit;
			ev.ah_attr.grh.traffic_class = p->traffic_class;
			ev.ah_attr.grh.flow_label = p->flow_label;
		}
	}
	channel_push(ch, &ev);
}

void rnic_cm_drop(struct uroce_rnic *nic, uint32_t attr, uint32_t count)
{
	nic->drop_attr = attr;
	nic->drop_left = count;
	RNIC_INFO(nic, "cm: dropping the next %u MADs of attribute 0x%04x we send", count, attr);
}

static int cm_tx(void *io_ctx, const uint8_t *mad, const struct uroce_cm_path *to)
{
	struct uroce_rnic *nic = io_ctx;
	struct ibv_ah_attr ah = {.is_global = 1, .port_num = 1};

	/* The attribute ID is at offset 16 of the MAD header (IBA 13.4.2). */
	if (nic->drop_left && ((uint32_t)mad[16] << 8 | mad[17]) == nic->drop_attr) {
		nic->drop_left--;
		nic->cnt.cm_dropped++;
		return 0; /* lost on the wire, as far as anyone can tell */
	}
	ah.grh.dgid = to->dgid;
	ah.grh.sgid_index = to->sgid_index;
	ah.grh.hop_limit = to->hop_limit;
	ah.grh.traffic_class = to->traffic_class;
	ah.grh.flow_label = to->flow_label;
	return uroce_tp_gsi_send(nic->dev, &ah, to->dmac, UROCE_TP_GSI_QPN, UROCE_TP_GSI_QKEY, mad,
				 UROCE_CM_MAD_LEN);
}

void rnic_cm_gsi_rx(void *io_ctx, const struct uroce_wire_pkt *pkt, uint64_t now_ns)
{
	const struct uroce_wire_hdr *h = &pkt->hdr;
	struct uroce_rnic *nic = io_ctx;
	struct uroce_cm_path from;
	union ibv_gid dst;
	int idx;

	memset(&from, 0, sizeof(from));
	memset(&dst, 0, sizeof(dst));
	if (h->ip_version == 4) {
		uroce_gid_from_ipv4(from.dgid.raw, h->ip_src + 12);
		uroce_gid_from_ipv4(dst.raw, h->ip_dst + 12);
	} else {
		memcpy(from.dgid.raw, h->ip_src, 16);
		memcpy(dst.raw, h->ip_dst, 16);
	}
	idx = gid_index(nic, &dst);
	if (idx < 0) {
		nic->cnt.cm_not_ours++; /* a MAD to an address we do not have */
		return;
	}
	from.sgid = dst;
	from.sgid_index = (uint8_t)idx;
	memcpy(from.dmac, h->eth_src, 6);
	from.traffic_class = h->ip_tos;
	from.hop_limit = UROCE_IPV4_TTL_DEFAULT;
	from.flow_label = h->ip_flow_label;
	from.pkey = h->bth.pkey;
	uroce_cm_input(nic->cm, pkt->payload, pkt->payload_len, &from, now_ns);
}

/* ---- neighbour resolution of RESOLVE_ADDR ------------------------------------------- */

static void addr_resolved(struct rnic_cm_id *id, const uint8_t mac[6])
{
	struct uroce_rnic *nic = id->client->rnic;
	struct uroce_cm_path path;
	union ibv_gid sgid, dgid;
	int idx, rc;

	id->resolving = false;
	memset(&path, 0, sizeof(path));
	addr_to_gid(&id->src, &sgid);
	addr_to_gid(&id->dst, &dgid);
	idx = gid_index(nic, &sgid);
	if (idx < 0) {
		report(id, RDMA_CM_EVENT_ADDR_ERROR, -EADDRNOTAVAIL);
		return;
	}
	path.sgid = sgid;
	path.dgid = dgid;
	path.sgid_index = (uint8_t)idx;
	memcpy(path.dmac, mac, 6);
	path.hop_limit = UROCE_IPV4_TTL_DEFAULT;
	path.pkey = UROCE_PKEY_DEFAULT;
	rc = uroce_cm_set_route(id->cm, (const struct sockaddr *)&id->src,
				(const struct sockaddr *)&id->dst, &path);
	if (rc) {
		report(id, RDMA_CM_EVENT_ADDR_ERROR, rc);
		return;
	}
	id->addr_resolved = true;
	report(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
}

bool rnic_cm_neigh_resolved(struct uroce_rnic *nic, uint64_t cookie, const uint8_t *mac, int err)
{
	struct rnic_cm_id *id;

	if (!(cookie & RNIC_CM_COOKIE))
		return false;
	for (id = nic->cm_ids; id; id = id->next)
		if (id->cookie == cookie && id->resolving) {
			if (mac)
				addr_resolved(id, mac);
			else {
				id->resolving = false;
				report(id, RDMA_CM_EVENT_ADDR_ERROR, err ? err : -EHOSTUNREACH);
			}
			break;
		}
	return true;
}

static int resolve_addr(struct rnic_cm_id *id, const struct uroce_ctrl_cm_addr_req *r)
{
	struct uroce_rnic *nic = id->client->rnic;
	union ibv_gid dgid;
	uint8_t mac[6];
	int idx, rc;

	if (id->resolving || id->addr_resolved)
		return -EINVAL;
	if (!addr_to_gid(&r->dst, &dgid) || addr_is_any(&r->dst))
		return -EINVAL;
	/* A source port here binds it, as rdma_resolve_addr() with a source does. */
	rc = port_allowed(id->client, &r->src);
	if (rc)
		return rc;
	id->dst = r->dst;
	if (r->src.ss_family != AF_UNSPEC && !addr_is_any(&r->src)) {
		if (r->src.ss_family != r->dst.ss_family)
			return -EINVAL;
		id->src = r->src;
	} else {
		struct sockaddr_storage bound, unused;
		uint16_t port = 0;

		/* The source: our first address of the destination's family, keeping a port
		 * the id was bound to (rdma_bind_addr to a wildcard, then resolve). */
		idx = source_gid_index(nic, r->dst.ss_family);
		if (idx < 0)
			return -EADDRNOTAVAIL;
		uroce_cm_id_addrs(id->cm, &bound, &unused);
		if (bound.ss_family == AF_INET)
			port = ((struct sockaddr_in *)&bound)->sin_port;
		else if (bound.ss_family == AF_INET6)
			port = ((struct sockaddr_in6 *)&bound)->sin6_port;
		if (r->src.ss_family == AF_INET)
			port = ((const struct sockaddr_in *)&r->src)->sin_port;
		else if (r->src.ss_family == AF_INET6)
			port = ((const struct sockaddr_in6 *)&r->src)->sin6_port;
		gid_to_addr(&nic->gids[idx], r->dst.ss_family, port, &id->src);
	}
	rc = uroce_ip_resolve(nic->ip, dgid.raw, rnic_now(nic), mac, id->cookie);
	if (rc == 0) {
		addr_resolved(id, mac);
		return 0;
	}
	if (rc == -EAGAIN) {
		id->resolving = true;
		return 0;
	}
	return rc;
}

/* ---- multicast ------------------------------------------------------------------------ */

/*
 * rdma_join_multicast on RoCE (as Linux's cma_iboe_join_multicast): no SA to ask, the
 * group's GID is its IP address (IPv4-mapped), its Q_Key rdma_cm's UDP one, and the join
 * completes at once with MULTICAST_JOIN carrying where to send (QPN 0xffffff). The
 * library then attaches its QP (ibv_attach_mcast), which is what makes this host
 * receive the group. No IGMP/MLD report is sent (doc/rdmacm.md).
 */
#define RNIC_CM_UDP_QKEY 0x01234567u /* rdma_cm's RDMA_UDP_QKEY */

static int join_mcast(struct rnic_cm_id *id, const struct uroce_ctrl_cm_addr_req *r)
{
	struct uroce_rnic *nic = id->client->rnic;
	struct rnic_cm_channel *ch = channel_of(id);
	struct uroce_ctrl_cm_event ev;
	union ibv_gid mgid, sgid;
	int idx = -1;

	if (!addr_to_gid(&r->dst, &mgid) || !uroce_tp_gid_is_mcast(&mgid))
		return -EINVAL;
	if (id->src.ss_family == r->dst.ss_family && addr_to_gid(&id->src, &sgid))
		idx = gid_index(nic, &sgid);
	if (idx < 0)
		idx = source_gid_index(nic, r->dst.ss_family);
	if (idx < 0)
		return -EADDRNOTAVAIL;
	if (!ch)
		return -EINVAL;
	memset(&ev, 0, sizeof(ev));
	ev.event = RDMA_CM_EVENT_MULTICAST_JOIN;
	ev.id = id->handle;
	ev.uid = r->uid;
	fill_route(id, &ev.route);
	ev.param.qp_num = UROCE_TP_MCAST_QPN;
	ev.param.qkey = RNIC_CM_UDP_QKEY;
	ev.ah_attr.is_global = 1;
	ev.ah_attr.port_num = 1;
	ev.ah_attr.grh.dgid = mgid;
	ev.ah_attr.grh.sgid_index = (uint8_t)idx;
	ev.ah_attr.grh.hop_limit = UROCE_IPV4_TTL_DEFAULT;
	channel_push(ch, &ev);
	return 0;
}

/* ---- commands ------------------------------------------------------------------------ */

static void id_free(struct rnic_cm_id *id)
{
	struct uroce_rnic *nic = id->client->rnic;
	struct rnic_cm_channel *ch = channel_of(id);
	struct rnic_cm_id **pp;

	if (id->resolving)
		uroce_ip_cancel(nic->ip, id->cookie);
	if (id->cm) {
		uroce_cm_id_set_user(id->cm, NULL);
		uroce_cm_id_destroy(id->cm, rnic_now(nic));
	}
	if (ch) {
		channel_move_events(ch, id->handle, NULL);
		ch->ids--;
	}
	for (pp = &nic->cm_ids; *pp; pp = &(*pp)->next)
		if (*pp == id) {
			*pp = id->next;
			break;
		}
	rnic_obj_del(id->client, id->handle);
	free(id);
}

static void channel_free(struct uroce_rnic_client *c, uint32_t handle, struct rnic_cm_channel *ch)
{
	channel_move_events(ch, 0, NULL);
	rnic_event_pipe_close(&ch->pipe);
	rnic_obj_del(c, handle);
	free(ch);
}

void rnic_cm_id_res(const struct rnic_cm_id *id, struct uroce_ctrl_res_row *r)
{
	r->cm_id.src = id->src;
	r->cm_id.dst = id->dst;
	if (!id->cm)
		return;
	r->cm_id.lqpn = uroce_cm_id_qpn(id->cm);
	r->cm_id.ps = uroce_cm_id_ps(id->cm);
	r->cm_id.qp_type = uroce_cm_id_qp_type(id->cm);
	snprintf(r->cm_id.state, sizeof(r->cm_id.state), "%s", uroce_cm_id_state_name(id->cm));
	uroce_cm_id_addrs(id->cm, &r->cm_id.src, &r->cm_id.dst);
}

void rnic_cm_free_client(struct uroce_rnic_client *c)
{
	uint32_t h;

	/* Ids first (their REJ/DREQ go out now), then the channels they reported to. */
	for (h = 1; h <= c->nobjs; h++)
		if (c->objs[h - 1].type == RNIC_OBJ_CM_ID)
			id_free(c->objs[h - 1].p);
	for (h = 1; h <= c->nobjs; h++)
		if (c->objs[h - 1].type == RNIC_OBJ_CM_CHANNEL)
			channel_free(c, c->objs[h - 1].handle, c->objs[h - 1].p);
}

void rnic_cmd_cm_create_channel(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
				const void *payload RNIC_UNUSED, const int *fds RNIC_UNUSED)
{
	struct rnic_cm_channel *ch = rnic_event_channel_create(
		c, h, RNIC_OBJ_CM_CHANNEL, sizeof(*ch), offsetof(struct rnic_cm_channel, pipe));

	if (ch)
		ch->nic = c->rnic;
}

void rnic_cmd_cm_get_event(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			   const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_cm_id_req *r = payload;
	struct rnic_cm_channel *ch = rnic_obj_get(c, r->id, RNIC_OBJ_CM_CHANNEL);
	struct rnic_cm_event_node *n;

	if (!ch) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	n = channel_pop(ch);
	if (!n) {
		REPLY(c, h, -EAGAIN, NULL, 0);
		return;
	}
	if (n->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && n->ev.listen_id) {
		struct rnic_cm_id *l = rnic_obj_get(c, n->ev.listen_id, RNIC_OBJ_CM_ID);

		if (l && l->requests_queued)
			l->requests_queued--;
	}
	REPLY(c, h, 0, &n->ev, sizeof(n->ev));
	free(n);
}

void rnic_cmd_cm_create_id(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			   const void *payload, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_cm_create_id_req *r = payload;
	struct uroce_ctrl_handle rep = {0};
	struct rnic_cm_id *id;
	int rc;

	if ((r->qp_type != IBV_QPT_RC && r->qp_type != IBV_QPT_UC && r->qp_type != IBV_QPT_UD) ||
	    (r->ps != RDMA_PS_TCP && r->ps != RDMA_PS_UDP && r->ps != RDMA_PS_IB &&
	     r->ps != RDMA_PS_IPOIB)) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	rc = rnic_limit_object(c, RNIC_OBJ_CM_ID);
	if (rc) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	id = id_new(c, r->channel, r->uid);
	if (!id) {
		REPLY(c, h, rnic_obj_get(c, r->channel, RNIC_OBJ_CM_CHANNEL) ? -ENOMEM : -EINVAL,
		      NULL, 0);
		return;
	}
	id->cm = uroce_cm_id_create(nic->cm, (enum rdma_port_space)r->ps,
				    (enum ibv_qp_type)r->qp_type, id);
	if (!id->cm) {
		id_free(id);
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	rep.handle = id->handle;
	REPLY(c, h, 0, &rep, sizeof(rep));
}

static int cmd_migrate(struct uroce_rnic_client *c, struct rnic_cm_id *id, uint32_t channel)
{
	struct rnic_cm_channel *from = channel_of(id);
	struct rnic_cm_channel *to = rnic_obj_get(c, channel, RNIC_OBJ_CM_CHANNEL);

	if (!to)
		return -EINVAL;
	if (from == to)
		return 0;
	if (from) {
		channel_move_events(from, id->handle, to);
		from->ids--;
	}
	to->ids++;
	id->channel = channel;
	return 0;
}

static int cmd_bind(struct rnic_cm_id *id, const struct sockaddr_storage *a)
{
	struct uroce_rnic *nic = id->client->rnic;
	union ibv_gid gid;
	int rc;

	if (!addr_to_gid(a, &gid))
		return -EAFNOSUPPORT;
	if (!addr_is_any(a) && gid_index(nic, &gid) < 0)
		return -EADDRNOTAVAIL;
	rc = port_allowed(id->client, a);
	if (rc)
		return rc;
	return uroce_cm_bind(id->cm, (const struct sockaddr *)a);
}

static void conn_param(const struct uroce_ctrl_cm_param *in, struct uroce_cm_conn_param *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->private_data, in->private_data, sizeof(out->private_data));
	out->private_data_len = in->private_data_len > UROCE_CM_PRIVATE_DATA_MAX ?
					UROCE_CM_PRIVATE_DATA_MAX :
					in->private_data_len;
	out->responder_resources = in->responder_resources;
	out->initiator_depth = in->initiator_depth;
	out->flow_control = in->flow_control;
	out->retry_count = in->retry_count;
	out->rnr_retry_count = in->rnr_retry_count;
	out->srq = in->srq;
	out->qp_num = in->qp_num;
	out->qkey = in->qkey;
}

void rnic_cmd_cm_destroy_channel(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
				 const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_cm_id_req *ir = payload;
	struct rnic_cm_channel *ch = rnic_obj_get(c, ir->id, RNIC_OBJ_CM_CHANNEL);
	uint32_t k;
	int rc = 0;

	if (!ch) {
		rc = -EINVAL;
	} else {
		/* Its ids go with it, as when the kernel's rdma_cm file is closed
		 * (ucma_close): rejected or disconnected on the wire. */
		for (k = 1; k <= c->nobjs; k++)
			if (c->objs[k - 1].type == RNIC_OBJ_CM_ID &&
			    ((struct rnic_cm_id *)c->objs[k - 1].p)->channel == ir->id)
				id_free(c->objs[k - 1].p);
		channel_free(c, ir->id, ch);
	}
	REPLY(c, h, rc, NULL, 0);
}

/* The commands below name an id first (every request struct of theirs starts with it):
 * the id, or NULL when @p handle names none (answered -EINVAL). */
static struct rnic_cm_id *request_id(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
				     uint32_t handle)
{
	struct rnic_cm_id *id = rnic_obj_get(c, handle, RNIC_OBJ_CM_ID);

	if (!id)
		REPLY(c, h, -EINVAL, NULL, 0);
	return id;
}

/* The payload-less answer to a command on id @p handle; a failure is logged. */
static void id_reply(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h, uint32_t handle,
		     int rc)
{
	struct uroce_rnic *nic = c->rnic;

	if (rc)
		RNIC_DBG(nic, "cm: %s on id %u of %s[%d]: %s", uroce_ctrl_cmd_name(h->cmd), handle,
			 c->name, c->pid, strerror(-rc));
	REPLY(c, h, rc, NULL, 0);
}

void rnic_cmd_cm_destroy_id(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			    const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_cm_id_req *ir = payload;
	struct rnic_cm_id *id = request_id(c, h, ir->id);

	if (!id)
		return;
	id_free(id);
	id_reply(c, h, ir->id, 0);
}

void rnic_cmd_cm_migrate_id(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			    const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_cm_id_req *ir = payload;
	struct rnic_cm_id *id = request_id(c, h, ir->id);

	if (id)
		id_reply(c, h, ir->id, cmd_migrate(c, id, ir->arg));
}

void rnic_cmd_cm_bind(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
		      const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_cm_addr_req *r = payload;
	struct rnic_cm_id *id = request_id(c, h, r->id);
	struct uroce_ctrl_cm_route route;
	int rc;

	if (!id)
		return;
	rc = cmd_bind(id, &r->src);
	if (rc == 0) {
		fill_route(id, &route);
		REPLY(c, h, 0, &route, sizeof(route));
		return;
	}
	id_reply(c, h, r->id, rc);
}

void rnic_cmd_cm_resolve_addr(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			      const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_cm_addr_req *r = payload;
	struct rnic_cm_id *id = request_id(c, h, r->id);

	if (id)
		id_reply(c, h, r->id, resolve_addr(id, r));
}

void rnic_cmd_cm_resolve_route(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			       const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_cm_id_req *ir = payload;
	struct rnic_cm_id *id = request_id(c, h, ir->id);
	int rc = 0;

	if (!id)
		return;
	/* RoCE has no SA: the route is the resolved address and the port's MTU. */
	if (!id->addr_resolved)
		rc = -EINVAL;
	else
		report(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	id_reply(c, h, ir->id, rc);
}

void rnic_cmd_cm_query_route(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			     const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_cm_id_req *ir = payload;
	struct rnic_cm_id *id = request_id(c, h, ir->id);
	struct uroce_ctrl_cm_route route;

	if (!id)
		return;
	fill_route(id, &route);
	REPLY(c, h, 0, &route, sizeof(route));
}

void rnic_cmd_cm_listen(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_cm_id_req *ir = payload;
	struct rnic_cm_id *id = request_id(c, h, ir->id);

	if (!id)
		return;
	/* ucma: a backlog of 0, a negative one or one above its max_backlog (1024) means
	 * 1024. */
	id->backlog = (int)ir->arg > 0 && ir->arg < RNIC_CM_MAX_BACKLOG ? ir->arg
									: RNIC_CM_MAX_BACKLOG;
	id_reply(c, h, ir->id, uroce_cm_listen(id->cm, (int)ir->arg));
}

/* What lib/cm does with an id and connection parameters: uroce_cm_connect,
 * uroce_cm_accept, cm_reject. */
typedef int cm_conn_op(struct uroce_cm_id *id, const struct uroce_cm_conn_param *param,
		       uint64_t now_ns);

/* REJ carries the private data alone, as conn_param() clamped it. */
static int cm_reject(struct uroce_cm_id *id, const struct uroce_cm_conn_param *param,
		     uint64_t now_ns)
{
	return uroce_cm_reject(id, param->private_data, param->private_data_len, now_ns);
}

/* CM_CONNECT, CM_ACCEPT, CM_REJECT: an id and connection parameters for @p op. */
static void cmd_conn(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
		     const struct uroce_ctrl_cm_conn_req *r, cm_conn_op *op)
{
	struct uroce_rnic *nic = c->rnic;
	struct rnic_cm_id *id = request_id(c, h, r->id);
	struct uroce_cm_conn_param cp;

	if (!id)
		return;
	conn_param(&r->param, &cp);
	id_reply(c, h, r->id, op(id->cm, &cp, rnic_now(nic)));
}

void rnic_cmd_cm_connect(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			 const void *payload, const int *fds RNIC_UNUSED)
{
	cmd_conn(c, h, payload, uroce_cm_connect);
}

void rnic_cmd_cm_accept(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const void *payload, const int *fds RNIC_UNUSED)
{
	cmd_conn(c, h, payload, uroce_cm_accept);
}

void rnic_cmd_cm_reject(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const void *payload, const int *fds RNIC_UNUSED)
{
	cmd_conn(c, h, payload, cm_reject);
}

void rnic_cmd_cm_disconnect(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			    const void *payload, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_cm_id_req *ir = payload;
	struct rnic_cm_id *id = request_id(c, h, ir->id);

	if (id)
		id_reply(c, h, ir->id, uroce_cm_disconnect(id->cm, rnic_now(nic)));
}

void rnic_cmd_cm_establish(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			   const void *payload, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_cm_id_req *ir = payload;
	struct rnic_cm_id *id = request_id(c, h, ir->id);

	if (id)
		id_reply(c, h, ir->id, uroce_cm_establish(id->cm, rnic_now(nic)));
}

void rnic_cmd_cm_init_qp_attr(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			      const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_cm_id_req *ir = payload;
	struct rnic_cm_id *id = request_id(c, h, ir->id);
	struct uroce_ctrl_cm_init_qp_attr_rep rep;
	int rc;

	if (!id)
		return;
	memset(&rep, 0, sizeof(rep));
	rep.attr.qp_state = (enum ibv_qp_state)ir->arg;
	rc = uroce_cm_init_qp_attr(id->cm, &rep.attr, &rep.mask);
	if (rc == 0) {
		REPLY(c, h, 0, &rep, sizeof(rep));
		return;
	}
	id_reply(c, h, ir->id, rc);
}

void rnic_cmd_cm_set_option(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			    const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_cm_option_req *o = payload;
	struct rnic_cm_id *id = request_id(c, h, o->id);

	if (id)
		id_reply(c, h, o->id, uroce_cm_set_option(id->cm, o->level, o->optname, o->value));
}

void rnic_cmd_cm_join_mcast(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			    const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_cm_addr_req *r = payload;
	struct rnic_cm_id *id = request_id(c, h, r->id);

	if (id)
		id_reply(c, h, r->id, join_mcast(id, r));
}

void rnic_cmd_cm_leave_mcast(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			     const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_cm_addr_req *r = payload;
	struct rnic_cm_id *id = request_id(c, h, r->id);
	union ibv_gid mgid;

	if (!id)
		return;
	/* The library detaches its QP (ibv_detach_mcast): nothing is kept here. */
	id_reply(c, h, r->id,
		 addr_to_gid(&r->dst, &mgid) && uroce_tp_gid_is_mcast(&mgid) ? 0 : -EINVAL);
}

/* ---- life cycle ---------------------------------------------------------------------- */

int rnic_cm_init(struct uroce_rnic *nic, uint64_t seed)
{
	struct uroce_cm_cfg cfg;

	uroce_cm_cfg_init(&cfg);
	cfg.node_guid = uroce_rnic_node_guid(nic); /* as QUERY_DEVICE reports it */
	cfg.seed = seed;
	cfg.random = nic->random_ok ? rnic_random : NULL;
	cfg.port_mtu = nic->active_mtu;
	cfg.response_timeout = (uint8_t)nic->conf.cm.response_timeout;
	cfg.max_retries = (uint8_t)nic->conf.cm.max_retries;
	cfg.timewait_ns = (uint64_t)nic->conf.cm.timewait_ms * 1000000u;
	cfg.tx = cm_tx;
	cfg.event = cm_event;
	cfg.io_ctx = nic;
	nic->cm = uroce_cm_create(&cfg);
	return nic->cm ? 0 : -ENOMEM;
}

void rnic_cm_process(struct uroce_rnic *nic)
{
	uint64_t now = rnic_now(nic);

	while (nic->norphans)
		uroce_cm_id_destroy(nic->orphans[--nic->norphans], now);
	if (uroce_cm_next_deadline(nic->cm) <= now)
		uroce_cm_process(nic->cm, now);
}

void rnic_cm_fini(struct uroce_rnic *nic)
{
	if (nic->cm)
		uroce_cm_destroy(nic->cm);
	nic->cm = NULL;
}
