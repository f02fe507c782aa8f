/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RC and UC connections: REQ/MRA/REP/RTU/REJ and DREQ/DREP, active and passive, as the
 * state machines of IBA vol 1 12.9.6 (active side) and 12.9.7 (passive side) describe,
 * with the choices Linux's ib_cm and rdma_cm make where the spec leaves room (they are
 * what an rxe peer runs):
 *  - MRA is "delayed" (CMA_CM_MRA_SETTING): on REQ (passive) and REP (active) the state
 *    moves to MRA_*_SENT without sending anything; an MRA goes out only in answer to a
 *    duplicate REQ/REP, asking the peer to wait 4.096 us * 2^24 (~68 s) for the app.
 *  - The starting PSN each side advertises is the PSN its own receive queue expects; its
 *    send queue starts at the peer's (seen in rxe's captures, rdma_init_qp_attr).
 *  - A destroyed established id sends DREQ once and goes to TimeWait (cm_destroy_id).
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "cm_internal.h"

/* Linux cm_ack_timeout(): the QP's ACK timeout for a packet lifetime and a CA's ACK
 * delay: the timer covers a round trip, 2 * packet lifetime, plus the remote ACK delay,
 * in powers of two. */
static uint8_t cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time)
{
	int t = packet_life_time + 1;
	if (t >= ca_ack_delay)
		t += (ca_ack_delay >= t - 1);
	else
		t = ca_ack_delay + (t >= ca_ack_delay - 1);
	return (uint8_t)(t > 31 ? 31 : t);
}

static uint8_t min7(uint8_t v) { return v > 7 ? 7 : v; }

static uint64_t node_guid(const struct uroce_cm *cm) { return be64toh(cm->cfg.node_guid); }

/* An id by the comm IDs a message names: ours (its remote field) and the sender's. */
static struct uroce_cm_id *conn_lookup(struct uroce_cm *cm, uint32_t ours, uint32_t theirs)
{
	struct uroce_cm_id *id = cm_find_local(cm, ours);
	if (!id || id->qpt == IBV_QPT_UD || id->remote_id != theirs)
		return NULL;
	return id;
}

static void msg_init(struct cm_msg *m, uint16_t attr, uint64_t tid) { cm_msg_init(m, attr, tid); }

static void send_mra(struct uroce_cm_id *id, uint8_t msg_mraed)
{
	struct cm_msg m;
	msg_init(&m, UROCE_CM_ATTR_MRA, id->tid);
	m.u.mra.local_comm_id = id->local_id;
	m.u.mra.remote_comm_id = id->remote_id;
	m.u.mra.message_mraed = msg_mraed;
	m.u.mra.service_timeout = id->service_timeout;
	cm_send(id->cm, &m, &id->path);
}

static void send_rej(struct uroce_cm_id *id, uint16_t reason, uint8_t msg_rejected,
		     const void *ari, uint8_t ari_len, const void *pd, uint8_t pd_len)
{
	struct cm_msg m;
	msg_init(&m, UROCE_CM_ATTR_REJ, id->tid);
	m.u.rej.local_comm_id = id->local_id;
	m.u.rej.remote_comm_id = id->remote_id;
	m.u.rej.message_rejected = msg_rejected;
	m.u.rej.reason = reason;
	if (ari && ari_len) {
		m.u.rej.ari_len = ari_len > CM_ARI_MAX ? CM_ARI_MAX : ari_len;
		memcpy(m.u.rej.ari, ari, m.u.rej.ari_len);
	}
	if (pd && pd_len)
		memcpy(m.private_data, pd, pd_len);
	cm_send(id->cm, &m, &id->path);
}

/* REJ to a REQ no id is made for (Linux cm_issue_rej): comm IDs and TID mirrored. */
static void issue_rej(struct uroce_cm *cm, const struct cm_msg *req, uint16_t reason,
		      const struct uroce_cm_path *to)
{
	struct cm_msg m;
	msg_init(&m, UROCE_CM_ATTR_REJ, req->hdr.tid);
	m.u.rej.local_comm_id = 0;
	m.u.rej.remote_comm_id = req->u.req.local_comm_id;
	m.u.rej.message_rejected = CM_MSG_RESPONSE_REQ;
	m.u.rej.reason = reason;
	cm_send(cm, &m, to);
}

void cm_conn_no_listener(struct uroce_cm *cm, const struct cm_msg *m,
			 const struct uroce_cm_path *from, bool port_listened)
{
	/* nobody listens on the service ID: cm_req_handler's "invalid service ID";
	 * a listener on the port that does not take it: rdma_cm refuses (consumer) */
	cm->counters.rx_no_listener++;
	issue_rej(cm, m, port_listened ? CM_REJ_CONSUMER_DEFINED : CM_REJ_INVALID_SERVICE_ID,
		  from);
}

static void send_dreq_once(struct uroce_cm_id *id, bool retried)
{
	struct cm_msg m;
	id->tid = cm_form_tid(id->cm, id->local_id);
	msg_init(&m, UROCE_CM_ATTR_DREQ, id->tid);
	m.u.dreq.local_comm_id = id->local_id;
	m.u.dreq.remote_comm_id = id->remote_id;
	m.u.dreq.remote_qpn = id->remote_qpn;
	id->state = CM_DREQ_SENT;
	if (retried)
		cm_send_retried(id, &m, cm_wait_ns(id->peer_response_timeout), id->max_cm_retries);
	else
		cm_send(id->cm, &m, &id->path);
}

static void send_drep(struct uroce_cm_id *id)
{
	struct cm_msg m;
	msg_init(&m, UROCE_CM_ATTR_DREP, id->tid);
	m.u.drep.local_comm_id = id->local_id;
	m.u.drep.remote_comm_id = id->remote_id;
	cm_send(id->cm, &m, &id->path);
}

static void send_rtu(struct uroce_cm_id *id, const void *pd, uint8_t len)
{
	struct cm_msg m;
	msg_init(&m, UROCE_CM_ATTR_RTU, id->tid);
	m.u.rtu.local_comm_id = id->local_id;
	m.u.rtu.remote_comm_id = id->remote_id;
	if (pd && len)
		memcpy(m.private_data, pd, len);
	cm_send(id->cm, &m, &id->path);
}

/* rdma_cm reports DISCONNECTED once, when it leaves CONNECT (cma_ib_handler). */
static void report_disconnected(struct uroce_cm_id *id, int status)
{
	if (id->cma != CMA_CONNECT)
		return;
	id->cma = CMA_DISCONNECT;
	cm_report(id, RDMA_CM_EVENT_DISCONNECTED, status, NULL, NULL);
}

/* ---- the active side's calls ----------------------------------------------------------- */

int cm_conn_connect(struct uroce_cm_id *id, const struct uroce_cm_conn_param *p)
{
	struct uroce_cm *cm = id->cm;
	if (id->cma != CMA_ROUTE_RESOLVED || id->state != CM_IDLE || !id->has_route)
		return -EINVAL;
	if (p->private_data_len > 92 - CMA_HDR_LEN)
		return -EMSGSIZE;
	id->local_id = cm_alloc_comm_id(cm);
	id->remote_id = 0;
	id->tid = cm_form_tid(cm, id->local_id);
	id->local_qpn = p->qp_num & 0xffffff;
	id->responder_resources = p->responder_resources;
	id->initiator_depth = p->initiator_depth;
	id->retry_count = min7(p->retry_count);
	id->rnr_retry_count = min7(p->rnr_retry_count);
	id->flow_control = p->flow_control ? 1 : 0;
	id->srq = p->srq ? 1 : 0;
	id->path_mtu = (uint8_t)cm->cfg.port_mtu;
	id->local_ack_timeout = cm_ack_timeout(cm->cfg.ca_ack_delay, CMA_IBOE_PACKET_LIFETIME);
	id->peer_response_timeout = cm->cfg.response_timeout;
	id->max_cm_retries = cm->cfg.max_retries;

	struct cm_msg m;
	msg_init(&m, UROCE_CM_ATTR_REQ, id->tid);
	struct cm_req *r = &m.u.req;
	r->local_comm_id = id->local_id;
	r->service_id = cma_service_id(id->ps, cma_port(&id->dst));
	r->local_ca_guid = node_guid(cm);
	r->local_qkey = 0;
	r->local_qpn = id->local_qpn;
	r->responder_resources = id->responder_resources;
	r->initiator_depth = id->initiator_depth;
	r->remote_cm_response_timeout = cm->cfg.response_timeout;
	r->transport_service_type = id->qpt == IBV_QPT_UC ? 1 : 0;
	r->flow_control = id->flow_control;
	r->starting_psn = id->seq_num;
	r->local_cm_response_timeout = cm->cfg.response_timeout;
	r->retry_count = id->retry_count;
	r->pkey = 0xffff;
	r->path_mtu = id->path_mtu;
	r->rnr_retry_count = id->rnr_retry_count;
	r->max_cm_retries = id->max_cm_retries;
	r->srq = id->srq;
	/* RoCE: no LIDs, the permissive LID in both (Linux cm_format_req) */
	r->primary.local_lid = 0xffff;
	r->primary.remote_lid = 0xffff;
	memcpy(r->primary.local_gid, id->path.sgid.raw, 16);
	memcpy(r->primary.remote_gid, id->path.dgid.raw, 16);
	r->primary.flow_label = id->path.flow_label;
	r->primary.traffic_class = id->path.traffic_class;
	r->primary.hop_limit = id->path.hop_limit;
	r->primary.sl = 0;
	r->primary.subnet_local = 0; /* what rxe sends over RoCEv2 */
	r->primary.local_ack_timeout = id->local_ack_timeout;
	cma_hdr_write(id, m.private_data);
	memcpy(m.private_data + CMA_HDR_LEN, p->private_data, p->private_data_len);

	id->state = CM_REQ_SENT;
	id->cma = CMA_CONNECT;
	id->conn_valid = true;
	id->rtr_valid = false;
	cm_send_retried(id, &m, cm_wait_ns(cm->cfg.response_timeout), id->max_cm_retries);
	return 0;
}

/* ---- the passive side's calls ---------------------------------------------------------- */

int cm_conn_accept(struct uroce_cm_id *id, const struct uroce_cm_conn_param *p)
{
	struct uroce_cm *cm = id->cm;
	if (id->state == CM_REP_RCVD || id->state == CM_MRA_REP_SENT) {
		/* the active side after CONNECT_RESPONSE: RTU. No event: librdmacm does this
		 * inside rdma_get_cm_event and turns CONNECT_RESPONSE into the ESTABLISHED the
		 * application sees (as the kernel, which reports nothing more here). */
		if (p && p->private_data_len > UROCE_CM_PRIVATE_DATA_MAX)
			return -EMSGSIZE;
		send_rtu(id, p ? p->private_data : NULL, p ? p->private_data_len : 0);
		cm_cancel_timer(id);
		id->state = CM_ESTABLISHED;
		return 0;
	}
	if (id->state != CM_REQ_RCVD && id->state != CM_MRA_REQ_SENT)
		return -EINVAL;
	if (!p)
		return -EINVAL;
	if (p->private_data_len > 196)
		return -EMSGSIZE;
	id->local_qpn = p->qp_num & 0xffffff;
	id->responder_resources = p->responder_resources;
	id->initiator_depth = p->initiator_depth;

	struct cm_msg m;
	msg_init(&m, UROCE_CM_ATTR_REP, id->tid);
	struct cm_rep *r = &m.u.rep;
	r->local_comm_id = id->local_id;
	r->remote_comm_id = id->remote_id;
	r->local_qpn = id->local_qpn;
	r->starting_psn = id->seq_num;
	r->responder_resources = p->responder_resources;
	r->initiator_depth = p->initiator_depth;
	r->target_ack_delay = cm->cfg.ca_ack_delay;
	r->failover_accepted = 0;
	r->flow_control = p->flow_control ? 1 : 0;
	r->rnr_retry_count = min7(p->rnr_retry_count);
	r->srq = p->srq ? 1 : 0;
	r->local_ca_guid = node_guid(cm);
	memcpy(m.private_data, p->private_data, p->private_data_len);
	id->state = CM_REP_SENT;
	id->rtr_valid = true;
	cm_send_retried(id, &m, cm_wait_ns(id->peer_response_timeout), id->max_cm_retries);
	return 0;
}

int cm_conn_reject(struct uroce_cm_id *id, const void *pd, uint8_t len)
{
	if (len > 148)
		return -EMSGSIZE;
	switch (id->state) {
	case CM_REQ_RCVD:
	case CM_MRA_REQ_SENT:
		send_rej(id, CM_REJ_CONSUMER_DEFINED, CM_MSG_RESPONSE_REQ, NULL, 0, pd, len);
		cm_cancel_timer(id);
		id->state = CM_IDLE;
		return 0;
	case CM_REP_RCVD:
	case CM_MRA_REP_SENT:
		send_rej(id, CM_REJ_CONSUMER_DEFINED, CM_MSG_RESPONSE_REP, NULL, 0, pd, len);
		cm_cancel_timer(id);
		id->state = CM_IDLE;
		return 0;
	default:
		return -EINVAL;
	}
}

int cm_conn_disconnect(struct uroce_cm_id *id)
{
	switch (id->state) {
	case CM_ESTABLISHED:
		send_dreq_once(id, true);
		return 0;
	case CM_DREQ_RCVD:
		/* the app answers the DREQ it was told of (DISCONNECTED already reported) */
		send_drep(id);
		cm_enter_timewait(id);
		return 0;
	case CM_DREQ_SENT:
	case CM_TIMEWAIT:
		return 0;
	default:
		return -EINVAL;
	}
}

int cm_conn_establish(struct uroce_cm_id *id)
{
	switch (id->state) {
	case CM_REP_SENT:
	case CM_MRA_REP_RCVD:
		/* a message on the QP stands for the RTU that has not come (ib_cm: cm_establish) */
		cm_cancel_timer(id);
		id->state = CM_ESTABLISHED;
		cm_report(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, NULL);
		return 0;
	case CM_ESTABLISHED:
		return -EISCONN;
	default:
		return -EINVAL;
	}
}

void cm_conn_destroy(struct uroce_cm_id *id)
{
	switch (id->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD: {
		/* Linux: REJ "timeout" with our CA GUID as ARI, so that the passive side can
		 * find the connection it knows only by our comm ID */
		uint8_t ari[8];
		uint64_t g = id->cm->cfg.node_guid;
		memcpy(ari, &g, 8);
		cm_cancel_timer(id);
		send_rej(id, CM_REJ_TIMEOUT, CM_MSG_RESPONSE_OTHER, ari, 8, NULL, 0);
		id->state = CM_IDLE;
		break;
	}
	case CM_REQ_RCVD:
	case CM_MRA_REQ_SENT:
		send_rej(id, CM_REJ_CONSUMER_DEFINED, CM_MSG_RESPONSE_REQ, NULL, 0, NULL, 0);
		id->state = CM_IDLE;
		break;
	case CM_REP_RCVD:
	case CM_MRA_REP_SENT:
		send_rej(id, CM_REJ_CONSUMER_DEFINED, CM_MSG_RESPONSE_REP, NULL, 0, NULL, 0);
		id->state = CM_IDLE;
		break;
	case CM_REP_SENT:
	case CM_MRA_REP_RCVD:
		cm_cancel_timer(id);
		send_rej(id, CM_REJ_CONSUMER_DEFINED, CM_MSG_RESPONSE_OTHER, NULL, 0, NULL, 0);
		cm_enter_timewait(id);
		break;
	case CM_ESTABLISHED:
		send_dreq_once(id, false);
		cm_enter_timewait(id);
		break;
	case CM_DREQ_SENT:
		cm_cancel_timer(id);
		cm_enter_timewait(id);
		break;
	case CM_DREQ_RCVD:
		send_drep(id);
		cm_enter_timewait(id);
		break;
	default:
		break;
	}
}

void cm_conn_timeout(struct uroce_cm_id *id)
{
	switch (id->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
	case CM_REP_SENT:
	case CM_MRA_REP_RCVD:
		/* IB_CM_REQ_ERROR / IB_CM_REP_ERROR: rdma_cm says UNREACHABLE */
		id->state = CM_IDLE;
		cm_report(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, NULL);
		break;
	case CM_DREQ_SENT:
		cm_enter_timewait(id);
		report_disconnected(id, -ETIMEDOUT);
		break;
	default:
		break;
	}
}

/* ---- input ---------------------------------------------------------------------------- */

static void req_dup(struct uroce_cm_id *id)
{
	struct uroce_cm *cm = id->cm;
	cm->counters.rx_dup_req++;
	switch (id->state) {
	case CM_MRA_REQ_SENT:
		/* a repeated REQ: the app still has it: ask for more time */
		send_mra(id, CM_MSG_RESPONSE_REQ);
		break;
	case CM_REP_SENT:
	case CM_MRA_REP_RCVD:
		/* a repeated REQ: our REP was lost: send it again now rather than at the timer */
		cm_resend(id);
		break;
	case CM_TIMEWAIT:
		send_rej(id, CM_REJ_STALE_CONN, CM_MSG_RESPONSE_REQ, NULL, 0, NULL, 0);
		break;
	default:
		break; /* REQ_RCVD: the app is being told; anything else: drop */
	}
}

static void req_input(struct uroce_cm *cm, const struct cm_msg *m,
		      const struct uroce_cm_path *from)
{
	const struct cm_req *req = &m->u.req;
	struct uroce_cm_id *o;

	/* The primary path must be the one the REQ came by: from its sender to the address
	 * it reached. Our answers (REP, REJ, their retries) and the QP's packets go by it,
	 * so a path naming another host would turn us into a reflector aimed at it, and one
	 * naming another of "our" addresses would have us send from an address not ours.
	 * Linux refuses a source GID that is not its own the same way (cm_init_av_by_path:
	 * REJ Invalid GID); Linux and rxe peers always send the path they came by. */
	if (memcmp(req->primary.local_gid, from->dgid.raw, 16) ||
	    memcmp(req->primary.remote_gid, from->sgid.raw, 16)) {
		cm->counters.rx_bad_path++;
		issue_rej(cm, m, CM_REJ_INVALID_GID, from);
		return;
	}
	/* A REQ for a connection we already have from this CA: a duplicate (ib_cm: cm_match_req) */
	for (o = cm->ids; o; o = o->next)
		if (o->qpt != IBV_QPT_UD && o->state != CM_IDLE && o->state != CM_LISTEN &&
		    o->remote_id == req->local_comm_id && o->remote_ca_guid == req->local_ca_guid) {
			req_dup(o);
			return;
		}
	/* Its QP already connected to one of ours: a stale connection (ib_cm too). Reject
	 * it, and end the old one, which the peer has evidently forgotten. */
	for (o = cm->ids; o; o = o->next)
		if (o->qpt != IBV_QPT_UD && o->state != CM_IDLE && o->state != CM_LISTEN &&
		    o->rtr_valid && o->remote_qpn == req->local_qpn &&
		    o->remote_ca_guid == req->local_ca_guid) {
			cm->counters.rx_stale++;
			issue_rej(cm, m, CM_REJ_STALE_CONN, from);
			if (o->state == CM_ESTABLISHED)
				send_dreq_once(o, true);
			return;
		}

	bool port_listened;
	struct uroce_cm_id *l = cma_find_listener(cm, req->service_id, m->private_data,
						  &port_listened);
	if (l) {
		bool uc = req->transport_service_type == 1;
		if (req->transport_service_type > 1 || (l->qpt == IBV_QPT_UC) != uc ||
		    l->qpt == IBV_QPT_UD)
			l = NULL; /* cma_check_req_qp_type(): the listener refuses it */
	}
	if (!l) {
		/* Not listening yet, perhaps: a bound id may hold it until it does. */
		if (!port_listened &&
		    cm_early_hold(cm, m, from, req->service_id,
				  cm_early_patience_ns(req->remote_cm_response_timeout,
						       req->max_cm_retries) / 2))
			return;
		cm_conn_no_listener(cm, m, from, port_listened);
		return;
	}

	struct uroce_cm_id *id = cm_id_alloc(cm, l->ps, l->qpt, NULL);
	if (!id)
		return; /* no memory: no answer, the REQ is sent again (Linux: -ENOMEM) */
	cma_new_conn_addrs(id, l, m->private_data);
	id->cma = CMA_CONNECT;
	id->local_id = cm_alloc_comm_id(cm);
	id->remote_id = req->local_comm_id;
	id->tid = m->hdr.tid;
	id->remote_ca_guid = req->local_ca_guid;
	id->remote_qpn = req->local_qpn;
	id->sq_psn = req->starting_psn;
	/* the peer's initiator depth is what we must serve, and the other way round */
	id->responder_resources = req->initiator_depth;
	id->initiator_depth = req->responder_resources;
	id->retry_count = req->retry_count;
	id->rnr_retry_count = req->rnr_retry_count;
	id->flow_control = req->flow_control;
	id->srq = req->srq;
	id->path_mtu = req->path_mtu < (uint8_t)cm->cfg.port_mtu ? req->path_mtu
								 : (uint8_t)cm->cfg.port_mtu;
	if (id->path_mtu < IBV_MTU_256)
		id->path_mtu = IBV_MTU_256;
	id->local_ack_timeout = id->ack_timeout_set ? id->ack_timeout
						    : req->primary.local_ack_timeout;
	id->peer_response_timeout = req->local_cm_response_timeout;
	id->max_cm_retries = req->max_cm_retries;
	id->service_timeout = CMA_CM_MRA_SERVICE_TIMEOUT;
	/* the path back: REQ's primary path seen from our end, the frame's MAC */
	id->path = *from;
	memcpy(id->path.sgid.raw, req->primary.remote_gid, 16);
	memcpy(id->path.dgid.raw, req->primary.local_gid, 16);
	id->path.flow_label = req->primary.flow_label;
	id->path.traffic_class = req->primary.traffic_class;
	id->path.hop_limit = req->primary.hop_limit ? req->primary.hop_limit : 64;
	id->path.pkey = 0xffff;
	id->conn_valid = true;
	/* The REQ gave all RTR/RTS needs: rdma_accept() moves the QP before sending REP. */
	id->rtr_valid = true;
	/* Linux sends a "delayed" MRA at once: state only, the MRA goes out on a dup REQ */
	id->state = CM_MRA_REQ_SENT;

	struct uroce_cm_conn_param p;
	memset(&p, 0, sizeof(p));
	p.private_data_len = 92 - CMA_HDR_LEN;
	memcpy(p.private_data, m->private_data + CMA_HDR_LEN, p.private_data_len);
	p.responder_resources = req->initiator_depth;
	p.initiator_depth = req->responder_resources;
	p.flow_control = req->flow_control;
	p.retry_count = req->retry_count;
	p.rnr_retry_count = req->rnr_retry_count;
	p.srq = req->srq;
	p.qp_num = req->local_qpn;
	cm_report(id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &p, l);
}

static void rep_input(struct uroce_cm *cm, const struct cm_msg *m)
{
	const struct cm_rep *rep = &m->u.rep;
	struct uroce_cm_id *id = cm_find_local(cm, rep->remote_comm_id);
	if (!id || id->qpt == IBV_QPT_UD) {
		cm->counters.rx_stale++; /* Linux cm_rep_handler: no such id, dropped */
		return;
	}
	if (id->state != CM_REQ_SENT && id->state != CM_MRA_REQ_RCVD) {
		/* a duplicate REP (cm_dup_rep_handler): RTU again, or our delayed MRA */
		if (id->remote_id == rep->local_comm_id && id->state == CM_ESTABLISHED)
			send_rtu(id, NULL, 0);
		else if (id->remote_id == rep->local_comm_id && id->state == CM_MRA_REP_SENT)
			send_mra(id, CM_MSG_RESPONSE_REP);
		else
			cm->counters.rx_stale++;
		return;
	}
	cm_cancel_timer(id);
	id->remote_id = rep->local_comm_id;
	id->remote_ca_guid = rep->local_ca_guid;
	id->remote_qpn = rep->local_qpn;
	id->sq_psn = rep->starting_psn;
	id->initiator_depth = rep->responder_resources;
	id->responder_resources = rep->initiator_depth;
	id->rnr_retry_count = rep->rnr_retry_count;
	if (!id->ack_timeout_set)
		id->local_ack_timeout =
			cm_ack_timeout(rep->target_ack_delay, CMA_IBOE_PACKET_LIFETIME);
	id->service_timeout = CMA_CM_MRA_SERVICE_TIMEOUT;
	id->rtr_valid = true;
	id->state = CM_MRA_REP_SENT; /* Linux's delayed MRA, as for REQ */

	struct uroce_cm_conn_param p;
	memset(&p, 0, sizeof(p));
	p.private_data_len = 196;
	memcpy(p.private_data, m->private_data, 196);
	p.responder_resources = rep->initiator_depth;
	p.initiator_depth = rep->responder_resources;
	p.flow_control = rep->flow_control;
	p.rnr_retry_count = rep->rnr_retry_count;
	p.srq = rep->srq;
	p.qp_num = rep->local_qpn;
	cm_report(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, &p, NULL);
}

static void rtu_input(struct uroce_cm *cm, const struct cm_msg *m)
{
	struct uroce_cm_id *id = conn_lookup(cm, m->u.rtu.remote_comm_id, m->u.rtu.local_comm_id);
	if (!id || (id->state != CM_REP_SENT && id->state != CM_MRA_REP_RCVD)) {
		cm->counters.rx_stale++;
		return;
	}
	cm_cancel_timer(id);
	id->state = CM_ESTABLISHED;
	cm_report(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, NULL);
}

static void mra_input(struct uroce_cm *cm, const struct cm_msg *m)
{
	const struct cm_mra *mra = &m->u.mra;
	struct uroce_cm_id *id = cm_find_local(cm, mra->remote_comm_id);
	bool ok = false;
	if (id && id->qpt != IBV_QPT_UD) {
		if (mra->message_mraed == CM_MSG_RESPONSE_REQ &&
		    (id->state == CM_REQ_SENT || id->state == CM_MRA_REQ_RCVD)) {
			id->state = CM_MRA_REQ_RCVD;
			ok = true;
		} else if (mra->message_mraed == CM_MSG_RESPONSE_REP &&
			   id->remote_id == mra->local_comm_id &&
			   (id->state == CM_REP_SENT || id->state == CM_MRA_REP_RCVD)) {
			id->state = CM_MRA_REP_RCVD;
			ok = true;
		}
	}
	if (!ok) {
		cm->counters.rx_stale++;
		return;
	}
	/* The MRA's service timeout: wait what the peer asked for (plus the round trip),
	 * with the retries we had left */
	id->wait_ns = cm_wait_ns(mra->service_timeout);
	id->deadline = cm->now + id->wait_ns;
}

static void rej_input(struct uroce_cm *cm, const struct cm_msg *m)
{
	const struct cm_rej *rej = &m->u.rej;
	struct uroce_cm_id *id = NULL;
	if (rej->reason == CM_REJ_TIMEOUT && rej->remote_comm_id == 0 && rej->ari_len >= 8) {
		/* the active side gave up on a REQ it knows no answer to: found by its CA GUID
		 * (ARI) and its comm ID (Linux cm_acquire_rejected_id) */
		uint64_t g;
		memcpy(&g, rej->ari, 8);
		g = be64toh(g);
		for (struct uroce_cm_id *o = cm->ids; o; o = o->next)
			if (o->qpt != IBV_QPT_UD && o->remote_id == rej->local_comm_id &&
			    o->remote_ca_guid == g && o->state != CM_IDLE && o->state != CM_LISTEN)
				id = o;
	} else {
		id = cm_find_local(cm, rej->remote_comm_id);
		if (id && (id->qpt == IBV_QPT_UD ||
			   (rej->message_rejected != CM_MSG_RESPONSE_REQ &&
			    id->remote_id != rej->local_comm_id)))
			id = NULL;
	}
	if (!id) {
		cm->counters.rx_stale++;
		return;
	}
	switch (id->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
	case CM_REP_SENT:
	case CM_MRA_REP_RCVD:
	case CM_REQ_RCVD:
	case CM_MRA_REQ_SENT:
		cm_cancel_timer(id);
		if (rej->reason == CM_REJ_STALE_CONN)
			cm_enter_timewait(id);
		else
			id->state = CM_IDLE;
		break;
	case CM_DREQ_SENT:
	case CM_REP_RCVD:
	case CM_MRA_REP_SENT:
	case CM_ESTABLISHED:
		cm_cancel_timer(id);
		cm_enter_timewait(id);
		break;
	default:
		cm->counters.rx_stale++;
		return;
	}
	if (id->cma != CMA_CONNECT)
		return;
	struct uroce_cm_conn_param p;
	memset(&p, 0, sizeof(p));
	p.private_data_len = 148;
	memcpy(p.private_data, m->private_data, 148);
	cm_report(id, RDMA_CM_EVENT_REJECTED, rej->reason, &p, NULL);
}

static void dreq_input(struct uroce_cm *cm, const struct cm_msg *m,
		       const struct uroce_cm_path *from)
{
	const struct cm_dreq *dreq = &m->u.dreq;
	struct uroce_cm_id *id = conn_lookup(cm, dreq->remote_comm_id, dreq->local_comm_id);
	if (!id) {
		/* Linux cm_dreq_handler: DREP anyway, so the peer can finish */
		cm->counters.rx_stale++;
		struct cm_msg r;
		msg_init(&r, UROCE_CM_ATTR_DREP, m->hdr.tid);
		r.u.drep.local_comm_id = dreq->remote_comm_id;
		r.u.drep.remote_comm_id = dreq->local_comm_id;
		cm_send(cm, &r, from);
		return;
	}
	if (dreq->remote_qpn != id->local_qpn) {
		cm->counters.rx_stale++;
		return;
	}
	switch (id->state) {
	case CM_REP_SENT:
	case CM_MRA_REP_RCVD:
	case CM_ESTABLISHED:
		cm_cancel_timer(id);
		id->tid = m->hdr.tid;
		id->state = CM_DREQ_RCVD;
		report_disconnected(id, 0);
		break;
	case CM_DREQ_SENT:
		/* both ends disconnecting, the DREQs crossed: answer, and this one is over too */
		cm_cancel_timer(id);
		id->tid = m->hdr.tid;
		send_drep(id);
		cm_enter_timewait(id);
		report_disconnected(id, 0);
		break;
	case CM_TIMEWAIT:
		/* our DREP was lost: again (the DREQ's TID) */
		id->tid = m->hdr.tid;
		send_drep(id);
		break;
	default:
		cm->counters.rx_stale++;
		break;
	}
}

static void drep_input(struct uroce_cm *cm, const struct cm_msg *m)
{
	struct uroce_cm_id *id = conn_lookup(cm, m->u.drep.remote_comm_id, m->u.drep.local_comm_id);
	if (!id || (id->state != CM_DREQ_SENT && id->state != CM_DREQ_RCVD)) {
		cm->counters.rx_stale++;
		return;
	}
	cm_cancel_timer(id);
	cm_enter_timewait(id);
	report_disconnected(id, 0);
}

void cm_conn_input(struct uroce_cm *cm, const struct cm_msg *m,
		   const struct uroce_cm_path *from)
{
	switch (m->hdr.attr_id) {
	case UROCE_CM_ATTR_REQ:
		req_input(cm, m, from);
		break;
	case UROCE_CM_ATTR_MRA:
		mra_input(cm, m);
		break;
	case UROCE_CM_ATTR_REJ:
		rej_input(cm, m);
		break;
	case UROCE_CM_ATTR_REP:
		rep_input(cm, m);
		break;
	case UROCE_CM_ATTR_RTU:
		rtu_input(cm, m);
		break;
	case UROCE_CM_ATTR_DREQ:
		dreq_input(cm, m, from);
		break;
	case UROCE_CM_ATTR_DREP:
		drep_input(cm, m);
		break;
	default:
		cm->counters.rx_unknown_attr++;
		break;
	}
}
