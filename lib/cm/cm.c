/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CM instance: ids and their communication IDs, the retry and timewait timers, the
 * event queue, and the input dispatch that checks every MAD before anything reads it.
 *
 * Events are queued and handed to the caller when the outermost entry point returns, so
 * the event callback may call back into the CM (accept, destroy...) without finding an id
 * half-way through a transition.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"

void uroce_cm_cfg_init(struct uroce_cm_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->port_mtu = IBV_MTU_1024;
	cfg->response_timeout = CMA_CM_RESPONSE_TIMEOUT;
	cfg->max_retries = CMA_MAX_CM_RETRIES;
	cfg->ca_ack_delay = 15; /* rxe's local_ca_ack_delay, what its REP carries */
	/* Linux: cm_convert_to_ms(av.timeout), the path's ACK timeout (19: ~2.1 s). */
	cfg->timewait_ns = cm_iba_time_ns(CMA_IBOE_PACKET_LIFETIME + 1);
}

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*: ids and PSNs only need to differ between runs and peers */
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

uint32_t cm_random(struct uroce_cm *cm)
{
	if (cm->cfg.random)
		return (uint32_t)cm->cfg.random(cm->cfg.io_ctx);
	return (uint32_t)(rng_next(&cm->rng) >> 32);
}

struct uroce_cm *uroce_cm_create(const struct uroce_cm_cfg *cfg)
{
	if (!cfg || !cfg->tx || !cfg->event)
		return NULL;
	struct uroce_cm *cm = calloc(1, sizeof(*cm));
	if (!cm)
		return NULL;
	cm->cfg = *cfg;
	if (!cm->cfg.max_retries)
		cm->cfg.max_retries = CMA_MAX_CM_RETRIES;
	if (cm->cfg.max_retries > 15)
		cm->cfg.max_retries = 15; /* a 4-bit field in REQ */
	if (!cm->cfg.response_timeout)
		cm->cfg.response_timeout = CMA_CM_RESPONSE_TIMEOUT;
	if (cm->cfg.response_timeout > 31)
		cm->cfg.response_timeout = 31;
	cm->rng = cfg->seed ^ 0x9e3779b97f4a7c15ull;
	if (!cm->rng)
		cm->rng = 1;
	/* Linux: local IDs are an allocator's cyclic index XORed with a random operand. */
	cm->comm_id_operand = cm_random(cm);
	cm->comm_id_next = cm_random(cm) & 0xffff;
	cm->hi_tid = 1;
	return cm;
}

static void events_free(struct uroce_cm *cm)
{
	struct cm_event_node *n = cm->ev_head;
	while (n) {
		struct cm_event_node *next = n->next;
		free(n);
		n = next;
	}
	cm->ev_head = cm->ev_tail = NULL;
}

void uroce_cm_destroy(struct uroce_cm *cm)
{
	if (!cm)
		return;
	events_free(cm);
	struct uroce_cm_id *id = cm->ids;
	while (id) {
		struct uroce_cm_id *next = id->next;
		free(id->early);
		free(id);
		id = next;
	}
	cm_early_free_all(cm);
	free(cm);
}

const struct uroce_cm_counters *uroce_cm_counters(const struct uroce_cm *cm)
{
	return &cm->counters;
}

/* ---- ids --------------------------------------------------------------------------- */

unsigned int uroce_cm_listening(const struct uroce_cm *cm)
{
	unsigned int n = 0;
	for (const struct uroce_cm_id *id = cm->ids; id; id = id->next)
		n += id->cma == CMA_LISTEN && !id->destroyed;
	return n;
}

struct uroce_cm_id *cm_find_local(struct uroce_cm *cm, uint32_t local_id)
{
	for (struct uroce_cm_id *id = cm->ids; id; id = id->next)
		if (id->local_id == local_id && id->local_id)
			return id;
	return NULL;
}

uint32_t cm_alloc_comm_id(struct uroce_cm *cm)
{
	for (;;) {
		uint32_t v = cm->comm_id_next++ ^ cm->comm_id_operand;
		if (v && !cm_find_local(cm, v))
			return v;
	}
}

uint64_t cm_form_tid(const struct uroce_cm *cm, uint32_t local_id)
{
	/* As Linux: the MAD agent's high TID word, then the local comm ID as a
	 * little-endian host reads its wire bytes (what rxe peers show in their TIDs). */
	uint32_t swapped = __builtin_bswap32(local_id);
	return (uint64_t)cm->hi_tid << 32 | swapped;
}

uint64_t cm_iba_time_ns(uint8_t t)
{
	if (t > 31)
		t = 31;
	return 4096ull << t;
}

uint64_t cm_wait_ns(uint8_t t)
{
	uint64_t ns = cm_iba_time_ns(t) + 2 * cm_iba_time_ns(CMA_IBOE_PACKET_LIFETIME);
	return ns < 1000000 ? 1000000 : ns; /* a floor of 1 ms whatever a peer says */
}

struct uroce_cm_id *cm_id_alloc(struct uroce_cm *cm, enum rdma_port_space ps,
				enum ibv_qp_type qpt, void *user)
{
	struct uroce_cm_id *id = calloc(1, sizeof(*id));
	if (!id)
		return NULL;
	id->cm = cm;
	id->ps = ps;
	id->qpt = qpt;
	id->user = user;
	id->cma = CMA_IDLE;
	id->state = CM_IDLE;
	/* rdma_create_id: a random 24-bit starting PSN per id */
	id->seq_num = cm_random(cm) & 0xffffff;
	id->path.pkey = 0xffff;
	id->next = cm->ids;
	cm->ids = id;
	return id;
}

static void events_drop_for(struct uroce_cm *cm, const struct uroce_cm_id *id)
{
	struct cm_event_node **pp = &cm->ev_head, *last = NULL;
	while (*pp) {
		struct cm_event_node *n = *pp;
		if (n->ev.id == id) {
			*pp = n->next;
			/* a listener going away takes the requests it has not reported with it */
			free(n);
			continue;
		}
		last = n;
		pp = &n->next;
	}
	cm->ev_tail = last;
}

void cm_id_free(struct uroce_cm_id *id)
{
	struct uroce_cm *cm = id->cm;
	events_drop_for(cm, id);
	free(id->early); /* the CM itself going away: nobody to answer */
	for (struct uroce_cm_id **pp = &cm->ids; *pp; pp = &(*pp)->next)
		if (*pp == id) {
			*pp = id->next;
			break;
		}
	free(id);
}

struct uroce_cm_id *uroce_cm_id_create(struct uroce_cm *cm, enum rdma_port_space ps,
				       enum ibv_qp_type qpt, void *user)
{
	if (!cm)
		return NULL;
	switch (ps) {
	case RDMA_PS_TCP:
	case RDMA_PS_UDP:
	case RDMA_PS_IB:
	case RDMA_PS_IPOIB:
		break;
	default:
		return NULL;
	}
	if (qpt != IBV_QPT_RC && qpt != IBV_QPT_UC && qpt != IBV_QPT_UD)
		return NULL;
	return cm_id_alloc(cm, ps, qpt, user);
}

void uroce_cm_id_destroy(struct uroce_cm_id *id, uint64_t now_ns)
{
	if (!id || id->destroyed)
		return;
	struct uroce_cm *cm = id->cm;
	cm->now = now_ns;
	cm_enter(cm);
	events_drop_for(cm, id);
	/* A listener's requests that were not reported yet go with it (rejected). */
	if (id->cma == CMA_LISTEN) {
		for (;;) {
			struct cm_event_node *n = cm->ev_head;
			while (n && !(n->ev.listen_id == id &&
				      n->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST))
				n = n->next;
			if (!n)
				break;
			uroce_cm_id_destroy(n->ev.id, now_ns); /* drops n */
		}
	}
	cm_early_refuse(id); /* it will never listen: its held request is answered now */
	id->destroyed = true;
	id->bound = false;
	if (id->qpt == IBV_QPT_UD)
		cm_sidr_destroy(id);
	else
		cm_conn_destroy(id);
	if (id->state != CM_TIMEWAIT)
		cm_id_free(id);
	cm_leave(cm);
}

void uroce_cm_id_set_user(struct uroce_cm_id *id, void *user) { id->user = user; }
void *uroce_cm_id_user(const struct uroce_cm_id *id) { return id->user; }
enum ibv_qp_type uroce_cm_id_qp_type(const struct uroce_cm_id *id) { return id->qpt; }
enum rdma_port_space uroce_cm_id_ps(const struct uroce_cm_id *id) { return id->ps; }
uint32_t uroce_cm_id_qpn(const struct uroce_cm_id *id) { return id->local_qpn; }

const char *cm_state_name(enum cm_state state)
{
	static const char *const names[] = {
		[CM_IDLE] = "IDLE",
		[CM_LISTEN] = "LISTEN",
		[CM_REQ_SENT] = "REQ_SENT",
		[CM_REQ_RCVD] = "REQ_RCVD",
		[CM_MRA_REQ_SENT] = "MRA_REQ_SENT",
		[CM_MRA_REQ_RCVD] = "MRA_REQ_RCVD",
		[CM_REP_SENT] = "REP_SENT",
		[CM_REP_RCVD] = "REP_RCVD",
		[CM_MRA_REP_SENT] = "MRA_REP_SENT",
		[CM_MRA_REP_RCVD] = "MRA_REP_RCVD",
		[CM_ESTABLISHED] = "ESTABLISHED",
		[CM_DREQ_SENT] = "DREQ_SENT",
		[CM_DREQ_RCVD] = "DREQ_RCVD",
		[CM_TIMEWAIT] = "TIMEWAIT",
		[CM_SIDR_REQ_SENT] = "SIDR_REQ_SENT",
		[CM_SIDR_REQ_RCVD] = "SIDR_REQ_RCVD",
	};

	return (unsigned int)state < sizeof(names) / sizeof(names[0]) && names[state]
		       ? names[state]
		       : "?";
}

const char *uroce_cm_id_state_name(const struct uroce_cm_id *id)
{
	return cm_state_name(id->state);
}
const struct uroce_cm_path *uroce_cm_id_path(const struct uroce_cm_id *id) { return &id->path; }

/* ---- events ----------------------------------------------------------------------- */

void cm_enter(struct uroce_cm *cm) { cm->depth++; }

void cm_leave(struct uroce_cm *cm)
{
	if (--cm->depth > 0)
		return;
	/* Deliver one at a time: the callback may destroy ids, which drops their events. */
	cm->depth++;
	while (cm->ev_head) {
		struct cm_event_node *n = cm->ev_head;
		cm->ev_head = n->next;
		if (!cm->ev_head)
			cm->ev_tail = NULL;
		struct uroce_cm_event ev = n->ev;
		free(n);
		cm->cfg.event(cm->cfg.io_ctx, &ev);
	}
	cm->depth--;
}

void cm_report(struct uroce_cm_id *id, enum rdma_cm_event_type type, int status,
	       const struct uroce_cm_conn_param *param, struct uroce_cm_id *listen_id)
{
	if (id->destroyed)
		return; /* rdma_destroy_id: nothing is reported afterwards */
	struct cm_event_node *n = calloc(1, sizeof(*n));
	if (!n)
		return;
	n->ev.event = type;
	n->ev.status = status;
	n->ev.id = id;
	n->ev.listen_id = listen_id;
	if (param)
		n->ev.param = *param;
	if (id->cm->ev_tail)
		id->cm->ev_tail->next = n;
	else
		id->cm->ev_head = n;
	id->cm->ev_tail = n;
}

/* ---- sending and timers ------------------------------------------------------------ */

static unsigned attr_slot(uint16_t attr)
{
	return attr >= UROCE_CM_ATTR_REQ && attr <= UROCE_CM_ATTR_APR ? attr - UROCE_CM_ATTR_REQ
								       : 15;
}

static void cm_tx_raw(struct uroce_cm *cm, const uint8_t *mad, const struct uroce_cm_path *to)
{
	cm->counters.tx_mads++;
	cm->counters.tx_by_attr[attr_slot((uint16_t)(mad[16] << 8 | mad[17]))]++;
	(void)cm->cfg.tx(cm->cfg.io_ctx, mad, to);
}

void cm_send(struct uroce_cm *cm, const struct cm_msg *m, const struct uroce_cm_path *to)
{
	uint8_t mad[UROCE_CM_MAD_LEN];
	cm_msg_encode(m, mad);
	cm_tx_raw(cm, mad, to);
}

void cm_send_retried(struct uroce_cm_id *id, const struct cm_msg *m, uint64_t wait_ns,
		     uint8_t retries)
{
	cm_msg_encode(m, id->mad);
	id->mad_valid = true;
	id->mad_to = id->path;
	id->retries_left = retries;
	id->wait_ns = wait_ns;
	id->timer = CM_TIMER_RESEND;
	id->deadline = id->cm->now + wait_ns;
	cm_tx_raw(id->cm, id->mad, &id->mad_to);
}

void cm_resend(struct uroce_cm_id *id)
{
	if (id->mad_valid)
		cm_tx_raw(id->cm, id->mad, &id->mad_to);
}

void cm_cancel_timer(struct uroce_cm_id *id)
{
	id->timer = CM_TIMER_NONE;
	id->mad_valid = false;
}

void cm_enter_timewait(struct uroce_cm_id *id)
{
	/* TimeWait: the QPN and comm ID stay out of use for a while, so that stale
	 * packets of this connection are not taken for a new one's. */
	id->state = CM_TIMEWAIT;
	id->mad_valid = false;
	id->timer = CM_TIMER_TIMEWAIT;
	id->deadline = id->cm->now + id->cm->cfg.timewait_ns;
}

static void timer_fire(struct uroce_cm_id *id)
{
	struct uroce_cm *cm = id->cm;
	if (id->timer == CM_TIMER_EARLY) {
		cm_early_refuse(id); /* held long enough: the id did not listen */
		return;
	}
	if (id->timer == CM_TIMER_TIMEWAIT) {
		id->timer = CM_TIMER_NONE;
		id->state = CM_IDLE;
		if (id->destroyed) {
			cm_id_free(id);
			return;
		}
		/* Linux reports TIMEWAIT_EXIT only to an id rdma_cm still has disconnecting. */
		if (id->cma == CMA_DISCONNECT)
			cm_report(id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, NULL, NULL);
		return;
	}
	if (id->timer != CM_TIMER_RESEND)
		return;
	if (id->mad_valid && id->retries_left > 0) {
		id->retries_left--;
		cm->counters.retries++;
		id->deadline = cm->now + id->wait_ns;
		cm_tx_raw(cm, id->mad, &id->mad_to);
		return;
	}
	cm->counters.timeouts++;
	id->timer = CM_TIMER_NONE;
	id->mad_valid = false;
	if (id->qpt == IBV_QPT_UD)
		cm_sidr_timeout(id);
	else
		cm_conn_timeout(id);
}

void uroce_cm_process(struct uroce_cm *cm, uint64_t now_ns)
{
	if (!cm)
		return;
	cm->now = now_ns;
	cm_enter(cm);
	bool again = true;
	while (again) {
		again = false;
		for (struct uroce_cm_id *id = cm->ids; id; id = id->next)
			if (id->timer != CM_TIMER_NONE && id->deadline <= now_ns) {
				timer_fire(id); /* may free id: restart the walk */
				again = true;
				break;
			}
	}
	cm_early_expire(cm);
	cm_leave(cm);
}

uint64_t uroce_cm_next_deadline(const struct uroce_cm *cm)
{
	uint64_t d = cm_early_next_deadline(cm);
	for (const struct uroce_cm_id *id = cm->ids; id; id = id->next)
		if (id->timer != CM_TIMER_NONE && id->deadline < d)
			d = id->deadline;
	return d;
}

/* ---- input ------------------------------------------------------------------------- */

void uroce_cm_input(struct uroce_cm *cm, const uint8_t *mad, uint32_t len,
		    const struct uroce_cm_path *from, uint64_t now_ns)
{
	if (!cm)
		return;
	cm->now = now_ns;
	cm->counters.rx_mads++;
	struct cm_msg *m = malloc(sizeof(*m));
	if (!m)
		return;
	enum cm_decode_result r = cm_msg_decode(mad, len, m);
	if (r == CM_DECODE_OK || r == CM_DECODE_UNHANDLED || r == CM_DECODE_UNKNOWN_ATTR)
		cm->counters.rx_by_attr[attr_slot(m->hdr.attr_id)]++;
	if (r == CM_DECODE_MALFORMED || !from) {
		cm->counters.rx_malformed++;
		free(m);
		return;
	}
	if (r != CM_DECODE_OK) {
		/* LAP/APR (no alternate paths on RoCE), ClassPortInfo, or not CM at all */
		cm->counters.rx_unknown_attr++;
		free(m);
		return;
	}
	cm_enter(cm);
	if (m->hdr.attr_id == UROCE_CM_ATTR_SIDR_REQ || m->hdr.attr_id == UROCE_CM_ATTR_SIDR_REP)
		cm_sidr_input(cm, m, from);
	else
		cm_conn_input(cm, m, from);
	free(m);
	cm_leave(cm);
}

/* ---- the connection calls: RC/UC in connection.c, UD in sidr.c ---------------------- */

int uroce_cm_connect(struct uroce_cm_id *id, const struct uroce_cm_conn_param *param,
		     uint64_t now_ns)
{
	if (!id || !param || id->destroyed)
		return -EINVAL;
	id->cm->now = now_ns;
	cm_enter(id->cm);
	int rc = id->qpt == IBV_QPT_UD ? cm_sidr_connect(id, param) : cm_conn_connect(id, param);
	cm_leave(id->cm);
	return rc;
}

int uroce_cm_accept(struct uroce_cm_id *id, const struct uroce_cm_conn_param *param,
		    uint64_t now_ns)
{
	if (!id || id->destroyed)
		return -EINVAL;
	id->cm->now = now_ns;
	cm_enter(id->cm);
	int rc = id->qpt == IBV_QPT_UD ? cm_sidr_accept(id, param) : cm_conn_accept(id, param);
	cm_leave(id->cm);
	return rc;
}

int uroce_cm_reject(struct uroce_cm_id *id, const void *private_data, uint8_t len,
		    uint64_t now_ns)
{
	if (!id || id->destroyed || (len && !private_data))
		return -EINVAL;
	id->cm->now = now_ns;
	cm_enter(id->cm);
	int rc = id->qpt == IBV_QPT_UD ? cm_sidr_reject(id, private_data, len)
				       : cm_conn_reject(id, private_data, len);
	cm_leave(id->cm);
	return rc;
}

int uroce_cm_disconnect(struct uroce_cm_id *id, uint64_t now_ns)
{
	if (!id || id->destroyed || id->qpt == IBV_QPT_UD)
		return -EINVAL;
	id->cm->now = now_ns;
	cm_enter(id->cm);
	int rc = cm_conn_disconnect(id);
	cm_leave(id->cm);
	return rc;
}

int uroce_cm_establish(struct uroce_cm_id *id, uint64_t now_ns)
{
	if (!id || id->destroyed || id->qpt == IBV_QPT_UD)
		return -EINVAL;
	id->cm->now = now_ns;
	cm_enter(id->cm);
	int rc = cm_conn_establish(id);
	cm_leave(id->cm);
	return rc;
}
