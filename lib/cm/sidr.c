/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Service ID Resolution for UD (IBA vol 1 12.11): SIDR_REQ carries the service ID and the
 * CMA header, SIDR_REP answers with the QPN and Q_Key to send to. No connection is kept:
 * the passive side is done once it answers; the active side once it hears (or gives up).
 */
#include <errno.h>
#include <string.h>

#include "cm_internal.h"

#define SIDR_REQ_PD 216
#define SIDR_REP_PD 136

static void send_sidr_rep(struct uroce_cm *cm, uint64_t tid, uint32_t request_id,
			  uint8_t status, uint32_t qpn, uint32_t qkey, uint64_t service_id,
			  const void *pd, uint8_t len, const struct uroce_cm_path *to)
{
	struct cm_msg m;
	cm_msg_init(&m, UROCE_CM_ATTR_SIDR_REP, tid);
	m.u.sidr_rep.request_id = request_id;
	m.u.sidr_rep.status = status;
	m.u.sidr_rep.qpn = qpn & 0xffffff;
	m.u.sidr_rep.qkey = qkey;
	m.u.sidr_rep.service_id = service_id;
	if (pd && len)
		memcpy(m.private_data, pd, len);
	cm_send(cm, &m, to);
}

int cm_sidr_connect(struct uroce_cm_id *id, const struct uroce_cm_conn_param *p)
{
	struct uroce_cm *cm = id->cm;
	if (id->cma != CMA_ROUTE_RESOLVED || id->state != CM_IDLE || !id->has_route)
		return -EINVAL;
	if (p->private_data_len > SIDR_REQ_PD - CMA_HDR_LEN)
		return -EMSGSIZE;
	id->local_id = cm_alloc_comm_id(cm);
	id->tid = cm_form_tid(cm, id->local_id);
	id->service_id = cma_service_id(id->ps, cma_port(&id->dst));
	struct cm_msg m;
	cm_msg_init(&m, UROCE_CM_ATTR_SIDR_REQ, id->tid);
	m.u.sidr_req.request_id = id->local_id;
	m.u.sidr_req.pkey = 0xffff;
	m.u.sidr_req.service_id = id->service_id;
	cma_hdr_write(id, m.private_data);
	memcpy(m.private_data + CMA_HDR_LEN, p->private_data, p->private_data_len);
	id->state = CM_SIDR_REQ_SENT;
	id->cma = CMA_CONNECT;
	/* cma_resolve_ib_udp(): 2^(CMA_CM_RESPONSE_TIMEOUT - 8) ms, no packet lifetime */
	uint64_t wait = cm_iba_time_ns(cm->cfg.response_timeout);
	cm_send_retried(id, &m, wait < 1000000 ? 1000000 : wait, cm->cfg.max_retries);
	return 0;
}

int cm_sidr_accept(struct uroce_cm_id *id, const struct uroce_cm_conn_param *p)
{
	if (id->state != CM_SIDR_REQ_RCVD || !p)
		return -EINVAL;
	if (p->private_data_len > SIDR_REP_PD)
		return -EMSGSIZE;
	id->local_qpn = p->qp_num & 0xffffff;
	id->qkey = p->qkey ? p->qkey : cma_default_qkey(id);
	send_sidr_rep(id->cm, id->tid, id->remote_id, CM_SIDR_SUCCESS, id->local_qpn, id->qkey,
		      id->service_id, p->private_data, p->private_data_len, &id->path);
	id->state = CM_IDLE;
	return 0;
}

int cm_sidr_reject(struct uroce_cm_id *id, const void *pd, uint8_t len)
{
	if (id->state != CM_SIDR_REQ_RCVD)
		return -EINVAL;
	if (len > SIDR_REP_PD)
		return -EMSGSIZE;
	send_sidr_rep(id->cm, id->tid, id->remote_id, CM_SIDR_REJECT, 0, 0, id->service_id, pd,
		      len, &id->path);
	id->state = CM_IDLE;
	return 0;
}

void cm_sidr_destroy(struct uroce_cm_id *id)
{
	if (id->state == CM_SIDR_REQ_RCVD)
		(void)cm_sidr_reject(id, NULL, 0); /* Linux cm_destroy_id: IB_SIDR_REJECT */
	cm_cancel_timer(id);
	id->state = CM_IDLE;
}

void cm_sidr_timeout(struct uroce_cm_id *id)
{
	if (id->state != CM_SIDR_REQ_SENT)
		return;
	id->state = CM_IDLE;
	cm_report(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, NULL);
}

void cm_sidr_no_listener(struct uroce_cm *cm, const struct cm_msg *m,
			 const struct uroce_cm_path *from, bool port_listened)
{
	const struct cm_sidr_req *req = &m->u.sidr_req;

	cm->counters.rx_no_listener++;
	send_sidr_rep(cm, m->hdr.tid, req->request_id,
		      port_listened ? CM_SIDR_REJECT : CM_SIDR_UNSUPPORTED, 0, 0, req->service_id,
		      NULL, 0, from);
}

static void sidr_req_input(struct uroce_cm *cm, const struct cm_msg *m,
			   const struct uroce_cm_path *from)
{
	const struct cm_sidr_req *req = &m->u.sidr_req;
	/* one being answered by the app already: drop the duplicate (Linux remote_sidr) */
	for (struct uroce_cm_id *o = cm->ids; o; o = o->next)
		if (o->qpt == IBV_QPT_UD && o->state == CM_SIDR_REQ_RCVD &&
		    o->remote_id == req->request_id &&
		    !memcmp(o->path.dgid.raw, from->dgid.raw, 16)) {
			cm->counters.rx_dup_req++;
			return;
		}
	bool port_listened;
	struct uroce_cm_id *l = cma_find_listener(cm, req->service_id, m->private_data,
						  &port_listened);
	if (l && l->qpt != IBV_QPT_UD)
		l = NULL;
	if (!l) {
		/* Not listening yet, perhaps: a bound id may hold it until it does. SIDR_REQ
		 * names no response time: rdma_cm's active side waits CMA_CM_RESPONSE_TIMEOUT,
		 * once more for each of CMA_MAX_CM_RETRIES. */
		if (!port_listened &&
		    cm_early_hold(cm, m, from, req->service_id,
				  cm_early_patience_ns(CMA_CM_RESPONSE_TIMEOUT,
						       CMA_MAX_CM_RETRIES) / 2))
			return;
		cm_sidr_no_listener(cm, m, from, port_listened);
		return;
	}
	struct uroce_cm_id *id = cm_id_alloc(cm, l->ps, l->qpt, NULL);
	if (!id)
		return;
	cma_new_conn_addrs(id, l, m->private_data);
	id->cma = CMA_CONNECT;
	id->state = CM_SIDR_REQ_RCVD;
	id->remote_id = req->request_id;
	id->tid = m->hdr.tid;
	id->service_id = req->service_id;
	id->path = *from; /* SIDR_REQ names no path: answer where it came from */
	id->path.pkey = 0xffff;
	id->conn_valid = true;
	id->qkey = cma_default_qkey(id);

	struct uroce_cm_conn_param p;
	memset(&p, 0, sizeof(p));
	p.private_data_len = SIDR_REQ_PD - CMA_HDR_LEN;
	memcpy(p.private_data, m->private_data + CMA_HDR_LEN, p.private_data_len);
	cm_report(id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &p, l);
}

static void sidr_rep_input(struct uroce_cm *cm, const struct cm_msg *m)
{
	const struct cm_sidr_rep *rep = &m->u.sidr_rep;
	struct uroce_cm_id *id = cm_find_local(cm, rep->request_id);
	if (!id || id->qpt != IBV_QPT_UD || id->state != CM_SIDR_REQ_SENT) {
		cm->counters.rx_stale++;
		return;
	}
	cm_cancel_timer(id);
	id->state = CM_IDLE;
	struct uroce_cm_conn_param p;
	memset(&p, 0, sizeof(p));
	p.private_data_len = SIDR_REP_PD;
	memcpy(p.private_data, m->private_data, SIDR_REP_PD);
	if (rep->status != CM_SIDR_SUCCESS) {
		/* cma_sidr_rep_handler(): UNREACHABLE, the SIDR status as the event's */
		cm_report(id, RDMA_CM_EVENT_UNREACHABLE, rep->status, &p, NULL);
		return;
	}
	id->remote_qpn = rep->qpn;
	id->qkey = rep->qkey;
	id->conn_valid = true;
	p.qp_num = rep->qpn;
	p.qkey = rep->qkey;
	cm_report(id, RDMA_CM_EVENT_ESTABLISHED, 0, &p, NULL);
}

void cm_sidr_input(struct uroce_cm *cm, const struct cm_msg *m,
		   const struct uroce_cm_path *from)
{
	if (m->hdr.attr_id == UROCE_CM_ATTR_SIDR_REQ)
		sidr_req_input(cm, m, from);
	else
		sidr_rep_input(cm, m);
}
