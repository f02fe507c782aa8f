/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Flow steering (verbs' ibv_create_flow): rules that give received frames to raw packet
 * QPs. A rule is its specs flattened into one mask and value over the frame's fields
 * (struct tp_flow_match); a frame matches when every masked field is equal. The rules are
 * a list: NORMAL ones in priority order (lowest value first, the oldest first among
 * equals), then the others; a frame walks it once (uroce_tp_flow_rx).
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "tp_internal.h"

#define PROTO_TCP 6
#define PROTO_UDP 17

/* Copies @n bytes of a spec's value and mask into the rule's, value ANDed with the mask
 * so that bits the mask leaves out never decide a match. */
static void take(uint8_t *val, uint8_t *mask, const void *v, const void *m, size_t n)
{
	const uint8_t *vb = v, *mb = m;

	for (size_t i = 0; i < n; i++) {
		mask[i] = mb[i];
		val[i] = vb[i] & mb[i];
	}
}

/* A rule's @field from a spec's value @v and mask @m, fields of the same size. */
#define TAKE(field, v, m)                                                                  \
	do {                                                                               \
		_Static_assert(sizeof(f->val.field) == sizeof(v), "same size: " #field);   \
		take((uint8_t *)&f->val.field, (uint8_t *)&f->mask.field, &(v), &(m),      \
		     sizeof(f->val.field));                                                \
	} while (0)

/* One spec into the rule. 0, -EINVAL, -EOPNOTSUPP. */
static int add_spec(struct uroce_tp_flow *f, const struct ibv_flow_spec *sp, uint32_t *seen)
{
	uint32_t type = sp->hdr.type;
	uint32_t bit;

	if (type & IBV_FLOW_SPEC_INNER)
		return -EOPNOTSUPP; /* no tunnels: nothing inner to match */
	switch (type) {
	case IBV_FLOW_SPEC_ETH: {
		const struct ibv_flow_spec_eth *e = &sp->eth;

		if (sp->hdr.size != sizeof(*e))
			return -EINVAL;
		bit = 1;
		TAKE(dmac, e->val.dst_mac, e->mask.dst_mac);
		TAKE(smac, e->val.src_mac, e->mask.src_mac);
		TAKE(ether_type, e->val.ether_type, e->mask.ether_type);
		TAKE(vlan_tci, e->val.vlan_tag, e->mask.vlan_tag);
		break;
	}
	case IBV_FLOW_SPEC_IPV4:
	case IBV_FLOW_SPEC_IPV4_EXT: {
		const struct ibv_flow_spec_ipv4_ext *x = &sp->ipv4_ext;

		if (sp->hdr.size != (type == IBV_FLOW_SPEC_IPV4 ? sizeof(struct ibv_flow_spec_ipv4)
								 : sizeof(*x)))
			return -EINVAL;
		bit = 2;
		f->ip_version = 4;
		if (type == IBV_FLOW_SPEC_IPV4) {
			const struct ibv_flow_spec_ipv4 *v = &sp->ipv4;

			take(f->val.src_ip, f->mask.src_ip, &v->val.src_ip, &v->mask.src_ip, 4);
			take(f->val.dst_ip, f->mask.dst_ip, &v->val.dst_ip, &v->mask.dst_ip, 4);
		} else {
			take(f->val.src_ip, f->mask.src_ip, &x->val.src_ip, &x->mask.src_ip, 4);
			take(f->val.dst_ip, f->mask.dst_ip, &x->val.dst_ip, &x->mask.dst_ip, 4);
			if (x->mask.flags)
				return -EOPNOTSUPP; /* the IP flags are not a field matched here */
			TAKE(proto, x->val.proto, x->mask.proto);
			TAKE(tos, x->val.tos, x->mask.tos);
			TAKE(ttl, x->val.ttl, x->mask.ttl);
		}
		break;
	}
	case IBV_FLOW_SPEC_IPV6: {
		const struct ibv_flow_spec_ipv6 *x = &sp->ipv6;

		if (sp->hdr.size != sizeof(*x))
			return -EINVAL;
		bit = 2;
		f->ip_version = 6;
		TAKE(src_ip, x->val.src_ip, x->mask.src_ip);
		TAKE(dst_ip, x->val.dst_ip, x->mask.dst_ip);
		/* Verbs gives the flow label in network order, in its low 20 bits. */
		f->mask.flow_label = ntohl(x->mask.flow_label) & 0xfffffu;
		f->val.flow_label = ntohl(x->val.flow_label) & f->mask.flow_label;
		TAKE(proto, x->val.next_hdr, x->mask.next_hdr);
		TAKE(tos, x->val.traffic_class, x->mask.traffic_class);
		TAKE(ttl, x->val.hop_limit, x->mask.hop_limit);
		break;
	}
	case IBV_FLOW_SPEC_TCP:
	case IBV_FLOW_SPEC_UDP: {
		const struct ibv_flow_spec_tcp_udp *x = &sp->tcp_udp;

		if (sp->hdr.size != sizeof(*x))
			return -EINVAL;
		bit = 4;
		f->l4_proto = type == IBV_FLOW_SPEC_TCP ? PROTO_TCP : PROTO_UDP;
		TAKE(sport, x->val.src_port, x->mask.src_port);
		TAKE(dport, x->val.dst_port, x->mask.dst_port);
		break;
	}
	default:
		/* ESP, tunnels, GRE, MPLS and the actions (tag, drop, handle, count). */
		return -EOPNOTSUPP;
	}
	if (*seen & bit)
		return -EINVAL; /* one spec per layer */
	*seen |= bit;
	return 0;
}

/* Parses @attr and its specs, within @len bytes, into @f. 0, -EINVAL, -EOPNOTSUPP. */
static int parse_attr(struct uroce_tp_flow *f, const struct ibv_flow_attr *attr, uint32_t len)
{
	const uint8_t *p = (const uint8_t *)(attr + 1);
	uint32_t left, seen = 0;
	int rc;

	if (attr->comp_mask)
		return -EOPNOTSUPP;
	if (attr->flags & ~(uint32_t)IBV_FLOW_ATTR_FLAGS_DONT_TRAP)
		return attr->flags & IBV_FLOW_ATTR_FLAGS_EGRESS ? -EOPNOTSUPP : -EINVAL;
	if (attr->port != 1 || len < sizeof(*attr))
		return -EINVAL;
	switch (attr->type) {
	case IBV_FLOW_ATTR_NORMAL:
		break;
	case IBV_FLOW_ATTR_ALL_DEFAULT:
	case IBV_FLOW_ATTR_MC_DEFAULT:
	case IBV_FLOW_ATTR_SNIFFER:
		if (attr->num_of_specs)
			return -EINVAL; /* they take whole classes of frames, no specs */
		break;
	default:
		return -EINVAL;
	}
	f->type = attr->type;
	f->priority = attr->priority;
	f->dont_trap = attr->flags & IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
	/* attr->size is not read: rdma-core's ibv_cmd_create_flow walks the specs by their
	 * own sizes, and programs (pyverbs for one) leave it 0. */
	left = len - (uint32_t)sizeof(*attr);
	for (uint32_t i = 0; i < attr->num_of_specs; i++) {
		struct ibv_flow_spec sp = {0};

		/* Each spec starts with its type and size; copied, since a spec after another
		 * of odd size sits at any alignment. */
		if (left < sizeof(sp.hdr))
			return -EINVAL;
		memcpy(&sp, p, sizeof(sp.hdr));
		if (sp.hdr.size < sizeof(sp.hdr) || sp.hdr.size > left)
			return -EINVAL;
		if (sp.hdr.size > sizeof(sp))
			return -EOPNOTSUPP; /* larger than any spec verbs has: none we know */
		memcpy(&sp, p, sp.hdr.size);
		rc = add_spec(f, &sp, &seen);
		if (rc)
			return rc;
		p += sp.hdr.size;
		left -= sp.hdr.size;
	}
	/* The layers must agree: a TCP/UDP spec after an IPv4_EXT or IPv6 one that masks
	 * another protocol would match nothing. */
	if (f->l4_proto && f->mask.proto && (f->val.proto != (f->l4_proto & f->mask.proto)))
		return -EINVAL;
	return 0;
}

struct uroce_tp_flow *uroce_tp_create_flow(struct uroce_tp_qp *qp,
					   const struct ibv_flow_attr *attr, uint32_t len)
{
	struct uroce_tp_dev *dev = qp->dev;
	struct uroce_tp_flow *f;
	struct tp_node *n;
	int rc;

	if (qp->type != IBV_QPT_RAW_PACKET) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (f == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	rc = parse_attr(f, attr, len);
	if (rc) {
		free(f);
		errno = -rc;
		return NULL;
	}
	f->qp = qp;
	/* NORMAL rules in priority order, after those of equal priority (the oldest wins);
	 * the others at the end, where their order does not matter. */
	for (n = dev->flows.next; n != &dev->flows; n = n->next) {
		const struct uroce_tp_flow *o = tp_container_of(n, struct uroce_tp_flow, node);

		if (f->type == IBV_FLOW_ATTR_NORMAL &&
		    (o->type != IBV_FLOW_ATTR_NORMAL || o->priority > f->priority))
			break;
	}
	tp_list_add_tail(n, &f->node);
	qp->nflows++;
	return f;
}

int uroce_tp_destroy_flow(struct uroce_tp_flow *f)
{
	tp_list_del(&f->node);
	f->qp->nflows--;
	free(f);
	return 0;
}

void tp_flow_destroy_all(struct uroce_tp_dev *dev)
{
	while (dev->flows.next != &dev->flows)
		uroce_tp_destroy_flow(tp_container_of(dev->flows.next, struct uroce_tp_flow, node));
}

/* The frame's fields, in the rule's layout, and which layers it has. */
struct frame_fields {
	struct tp_flow_match m;
	struct uroce_wire_layers l;
};

static void frame_fields(const uint8_t *frame, uint32_t len, struct frame_fields *ff)
{
	struct tp_flow_match *m = &ff->m;
	const struct uroce_wire_layers *l = &ff->l;

	memset(m, 0, sizeof(*m));
	uroce_wire_layers(frame, len, &ff->l);
	if (l->ether_type == 0)
		return;
	memcpy(m->dmac, frame, 6);
	memcpy(m->smac, frame + 6, 6);
	m->ether_type = htons(l->ether_type);
	m->vlan_tci = htons(l->vlan_tci);
	if (l->ip_version == 4) {
		memcpy(m->src_ip, frame + l->l3_off + 12, 4);
		memcpy(m->dst_ip, frame + l->l3_off + 16, 4);
	} else if (l->ip_version == 6) {
		memcpy(m->src_ip, frame + l->l3_off + 8, 16);
		memcpy(m->dst_ip, frame + l->l3_off + 24, 16);
	}
	m->flow_label = l->flow_label;
	m->proto = l->proto;
	m->tos = l->tos;
	m->ttl = l->ttl;
	if (l->l4) {
		memcpy(&m->sport, frame + l->l4_off, 2);
		memcpy(&m->dport, frame + l->l4_off + 2, 2);
	}
}

static bool matches(const struct uroce_tp_flow *f, const struct frame_fields *ff)
{
	const uint8_t *v = (const uint8_t *)&f->val, *mk = (const uint8_t *)&f->mask;
	const uint8_t *fr = (const uint8_t *)&ff->m;

	if (ff->l.ether_type == 0)
		return false;
	if (f->ip_version && ff->l.ip_version != f->ip_version)
		return false;
	if (f->l4_proto && (!ff->l.l4 || ff->l.proto != f->l4_proto))
		return false;
	for (size_t i = 0; i < sizeof(struct tp_flow_match); i++)
		if ((fr[i] & mk[i]) != v[i])
			return false;
	return true;
}

/* Gives the frame to @qp unless it already has it. */
static void deliver(struct uroce_tp_dev *dev, struct uroce_tp_qp *qp, const uint8_t *frame,
		    uint32_t len)
{
	if (qp->flow_seen == dev->flow_frames)
		return;
	qp->flow_seen = dev->flow_frames;
	tp_raw_rx(qp, frame, len);
}

bool uroce_tp_flow_rx(struct uroce_tp_dev *dev, const uint8_t *frame, uint32_t len,
		      bool claimable)
{
	struct uroce_tp_flow *taker = NULL, *dflt = NULL;
	struct frame_fields ff;
	struct tp_node *n;

	if (dev->flows.next == &dev->flows)
		return false;
	dev->flow_frames++;
	frame_fields(frame, len, &ff);
	/* RoCEv2 (UDP to 4791) is the transport's, to whatever address: copies only. */
	if (ff.l.l4 && ff.l.proto == PROTO_UDP && ff.m.dport == htons(UROCE_UDP_PORT_ROCEV2))
		claimable = false;
	for (n = dev->flows.next; n != &dev->flows; n = n->next) {
		struct uroce_tp_flow *f = tp_container_of(n, struct uroce_tp_flow, node);

		switch (f->type) {
		case IBV_FLOW_ATTR_SNIFFER:
			deliver(dev, f->qp, frame, len);
			break;
		case IBV_FLOW_ATTR_NORMAL:
			if (!matches(f, &ff))
				break;
			if (f->dont_trap)
				deliver(dev, f->qp, frame, len);
			else if (taker == NULL && claimable)
				taker = f;
			break;
		case IBV_FLOW_ATTR_ALL_DEFAULT:
		case IBV_FLOW_ATTR_MC_DEFAULT:
			/* The destination's group bit: multicast (and broadcast) or unicast. */
			if (dflt == NULL && claimable && len >= 6 &&
			    (f->type == IBV_FLOW_ATTR_MC_DEFAULT) == ((frame[0] & 1) != 0))
				dflt = f;
			break;
		default:
			break;
		}
	}
	if (taker == NULL)
		taker = dflt;
	if (taker == NULL)
		return false;
	deliver(dev, taker->qp, frame, len);
	return true;
}
