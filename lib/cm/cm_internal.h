/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_CM_INTERNAL_H
#define UROCE_CM_INTERNAL_H

/*
 * The CM's objects, shared by its files: cm.c (the instance, ids, timers, events, input
 * dispatch), cm_cma.c (rdma_cm addressing), connection.c (RC/UC), sidr.c (UD),
 * cm_qp_attr.c.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "cm_msg.h"
#include "uroce_cm.h"

/*
 * A connection's state, per IBA vol 1 12.9.6 (active) and 12.9.7 (passive) with the
 * sub-states an MRA brings, and SIDR's (12.11). Linux's ib_cm uses the same
 * names (enum ib_cm_state).
 */
enum cm_state {
	CM_IDLE,
	CM_LISTEN,
	CM_REQ_SENT,
	CM_REQ_RCVD,
	CM_MRA_REQ_SENT, /* passive, the app has not answered yet: MRA sent (or due on a dup) */
	CM_MRA_REQ_RCVD, /* active, the peer asked for more time */
	CM_REP_SENT,
	CM_REP_RCVD,
	CM_MRA_REP_SENT,
	CM_MRA_REP_RCVD,
	CM_ESTABLISHED,
	CM_DREQ_SENT,
	CM_DREQ_RCVD,
	CM_TIMEWAIT,
	CM_SIDR_REQ_SENT,
	CM_SIDR_REQ_RCVD,
};

/** The state's name as IBA and Linux's ib_cm spell it ("REQ_SENT"), for traces and
 *  `uroce res show cm_id`; "?" for a value out of the enum. */
const char *cm_state_name(enum cm_state state);

/* What rdma_cm thinks of the id (Linux enum rdma_cm_state, the part that matters here). */
enum cma_state {
	CMA_IDLE,
	CMA_ADDR_BOUND,
	CMA_ROUTE_RESOLVED,
	CMA_LISTEN,
	CMA_CONNECT,
	CMA_DISCONNECT,
};

enum cm_timer {
	CM_TIMER_NONE,
	CM_TIMER_RESEND,   /* the MAD in id->mad is resent, or the exchange times out */
	CM_TIMER_TIMEWAIT, /* TimeWait: the comm ID and QPN are not reused yet */
	CM_TIMER_EARLY,    /* a bound id holds a request that came before rdma_listen */
};

/* rdma_cm's constants (Linux drivers/infiniband/core/cma.c). */
#define CMA_CM_RESPONSE_TIMEOUT 20
#define CMA_MAX_CM_RETRIES 15
#define CMA_IBOE_PACKET_LIFETIME 18 /* RoCE has no SA: rdma_cm's fixed packet lifetime */
#define CMA_CM_MRA_SERVICE_TIMEOUT 24 /* CMA_CM_MRA_SETTING without IB_CM_MRA_FLAG_DELAY */
#define CMA_UDP_QKEY 0x01234567u    /* RDMA_UDP_QKEY */
#define CMA_HDR_LEN 36

struct uroce_cm_id {
	struct uroce_cm *cm;
	struct uroce_cm_id *next;
	void *user;
	enum rdma_port_space ps;
	enum ibv_qp_type qpt;
	enum cma_state cma;
	enum cm_state state;
	bool destroyed; /* the owner destroyed it: lingers in TIMEWAIT only, never reports */

	/* addressing (cm_cma.c) */
	struct sockaddr_storage src;
	struct sockaddr_storage dst;
	bool bound;
	bool reuseaddr;
	bool afonly;
	bool has_route;
	bool tos_set;
	bool ack_timeout_set;
	uint8_t tos;
	uint8_t ack_timeout;
	int backlog;
	struct uroce_cm_path path;

	/* the connection (IBA 12.6: what REQ/REP carried, both ways) */
	bool conn_valid; /* REQ sent or received: parameters for INIT */
	bool rtr_valid;  /* REP sent or received: parameters for RTR/RTS */
	uint32_t local_id;
	uint32_t remote_id;
	uint64_t remote_ca_guid;
	uint64_t tid;
	uint32_t local_qpn;
	uint32_t remote_qpn;
	uint32_t seq_num; /* the PSN we advertise: our receive queue expects it first */
	uint32_t sq_psn;  /* the peer's advertised PSN: our send queue starts there */
	uint32_t qkey;    /* UD: ours; SIDR_REP's on the active side */
	uint64_t service_id; /* SIDR: the request's, echoed in SIDR_REP */
	uint8_t responder_resources; /* max_dest_rd_atomic */
	uint8_t initiator_depth;     /* max_rd_atomic */
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t flow_control;
	uint8_t srq;
	uint8_t path_mtu;          /* enum ibv_mtu */
	uint8_t local_ack_timeout; /* the QP's ACK timeout (IBA 9.7.6.1.3) */
	uint8_t peer_response_timeout; /* 4.096 us * 2^x the peer says it needs to answer */
	uint8_t max_cm_retries;
	uint8_t service_timeout; /* what our MRA says */

	/* the outstanding request or reply and its retries */
	uint8_t mad[UROCE_CM_MAD_LEN];
	bool mad_valid;
	struct uroce_cm_path mad_to;
	uint8_t retries_left;
	uint64_t wait_ns;
	enum cm_timer timer;
	uint64_t deadline;

	/* A REQ or SIDR_REQ for this bound, not yet listening id's port (early_req.c) */
	struct cm_msg *early;
	struct uroce_cm_path early_from;
};

struct cm_event_node {
	struct cm_event_node *next;
	struct uroce_cm_event ev;
};

struct uroce_cm {
	struct uroce_cm_cfg cfg;
	struct uroce_cm_counters counters;
	struct uroce_cm_id *ids;
	uint64_t rng;
	uint32_t comm_id_operand;
	uint32_t comm_id_next;
	uint32_t hi_tid;
	uint64_t now; /* the latest time the caller gave us */
	struct cm_event_node *ev_head;
	struct cm_event_node *ev_tail;
	int depth; /* nested entry points: events go out when the outermost returns */
	/* Requests held for ports nothing is bound to yet (early_req.c) */
	struct cm_early_req *early;
	unsigned int nearly;
};

/* ---- cm.c ------------------------------------------------------------------------- */
uint32_t cm_random(struct uroce_cm *cm);
uint32_t cm_alloc_comm_id(struct uroce_cm *cm);
uint64_t cm_form_tid(const struct uroce_cm *cm, uint32_t local_id);
/* 4.096 us * 2^t in ns, the IBA's time encoding (t capped at 31). */
uint64_t cm_iba_time_ns(uint8_t t);
struct uroce_cm_id *cm_id_alloc(struct uroce_cm *cm, enum rdma_port_space ps,
				enum ibv_qp_type qpt, void *user);
void cm_id_free(struct uroce_cm_id *id);
struct uroce_cm_id *cm_find_local(struct uroce_cm *cm, uint32_t local_id);
void cm_enter(struct uroce_cm *cm);
void cm_leave(struct uroce_cm *cm);
void cm_report(struct uroce_cm_id *id, enum rdma_cm_event_type type, int status,
	       const struct uroce_cm_conn_param *param, struct uroce_cm_id *listen_id);
/* Sends @p m to @p to (counted). */
void cm_send(struct uroce_cm *cm, const struct cm_msg *m, const struct uroce_cm_path *to);
/* Sends @p m and keeps it to resend after @p wait_ns, @p retries times. */
void cm_send_retried(struct uroce_cm_id *id, const struct cm_msg *m, uint64_t wait_ns,
		     uint8_t retries);
void cm_cancel_timer(struct uroce_cm_id *id);
/* Sends the kept MAD again now (a duplicate asked for it), timer unchanged. */
void cm_resend(struct uroce_cm_id *id);
void cm_enter_timewait(struct uroce_cm_id *id);
/* How long to wait for an answer the peer said takes 4.096 us * 2^@p t: that plus a
 * round trip of rdma_cm's packet lifetime, as Linux's ib_cm computes it. */
uint64_t cm_wait_ns(uint8_t t);

/* ---- cm_cma.c ------------------------------------------------------------------------ */
uint64_t cma_service_id(enum rdma_port_space ps, uint16_t port);
uint16_t cma_port(const struct sockaddr_storage *ss);
/* The 36-byte CMA header (cma_hdr) for an id's addresses. */
void cma_hdr_write(const struct uroce_cm_id *id, uint8_t hdr[CMA_HDR_LEN]);
/* Finds the listener a REQ/SIDR_REQ's service ID and CMA header are for.
 * @return the listener; NULL with *@p port_listened set if something listens on the
 * port but not on that address (Linux: consumer reject), or not (invalid service ID). */
struct uroce_cm_id *cma_find_listener(struct uroce_cm *cm, uint64_t service_id,
				      const uint8_t *pd, bool *port_listened);
/* The id bound to a REQ/SIDR_REQ's port and address that does not listen yet, or NULL. */
struct uroce_cm_id *cma_find_bound(struct uroce_cm *cm, uint64_t service_id,
				   const uint8_t *pd);
/* Fills a new passive id's addresses from the CMA header and the listener. */
void cma_new_conn_addrs(struct uroce_cm_id *id, const struct uroce_cm_id *listener,
			const uint8_t *hdr);
uint32_t cma_default_qkey(const struct uroce_cm_id *id);
/* rdma_cm's RoCEv2 flow label: the ports hashed (cma_get_roce_udp_flow_label). */
uint32_t cma_flow_label(const struct uroce_cm_id *id);

/* ---- connection.c / sidr.c -------------------------------------------------------- */
void cm_conn_input(struct uroce_cm *cm, const struct cm_msg *m,
		   const struct uroce_cm_path *from);
/* The answer to a REQ nobody listens to: REJ Invalid Service ID (@p port_listened:
 * Consumer Reject, as rdma_cm's to an address the port's listener does not take). */
void cm_conn_no_listener(struct uroce_cm *cm, const struct cm_msg *m,
			 const struct uroce_cm_path *from, bool port_listened);
void cm_conn_timeout(struct uroce_cm_id *id);
void cm_conn_destroy(struct uroce_cm_id *id);
int cm_conn_connect(struct uroce_cm_id *id, const struct uroce_cm_conn_param *p);
int cm_conn_accept(struct uroce_cm_id *id, const struct uroce_cm_conn_param *p);
int cm_conn_reject(struct uroce_cm_id *id, const void *pd, uint8_t len);
int cm_conn_disconnect(struct uroce_cm_id *id);
int cm_conn_establish(struct uroce_cm_id *id);

void cm_sidr_input(struct uroce_cm *cm, const struct cm_msg *m,
		   const struct uroce_cm_path *from);
/* The answer to a SIDR_REQ nobody listens to: SIDR_REP Unsupported (Reject with
 * @p port_listened). */
void cm_sidr_no_listener(struct uroce_cm *cm, const struct cm_msg *m,
			 const struct uroce_cm_path *from, bool port_listened);

/* ---- early_req.c --------------------------------------------------------------------- */
/* Holds a REQ/SIDR_REQ (@p m, from @p from) that found no listener when an id is bound to
 * its port and address but has not called rdma_listen yet, for at most @p hold_ns.
 * @return true if it is held (or is a duplicate of the one held): nothing to answer now. */
bool cm_early_hold(struct uroce_cm *cm, const struct cm_msg *m,
		   const struct uroce_cm_path *from, uint64_t service_id, uint64_t hold_ns);
/* How long an active side waits for an answer before it gives up: the response time
 * its request named (4.096 us * 2^@p t), once and again for each of its @p retries. */
uint64_t cm_early_patience_ns(uint8_t t, uint8_t retries);
/* The id listens now: the request it holds, and those held for no id that it takes,
 * are taken as if they came now. */
void cm_early_listened(struct uroce_cm_id *id);
/* The requests held for no id whose hold has ended get the no-listener answer; the
 * earliest end of one still held (UINT64_MAX: none); all freed, unanswered. */
void cm_early_expire(struct uroce_cm *cm);
uint64_t cm_early_next_deadline(const struct uroce_cm *cm);
void cm_early_free_all(struct uroce_cm *cm);
/* The id will not listen (destroyed, connecting) or the hold expired: the request it
 * holds gets the no-listener answer now. */
void cm_early_refuse(struct uroce_cm_id *id);
void cm_sidr_timeout(struct uroce_cm_id *id);
void cm_sidr_destroy(struct uroce_cm_id *id);
int cm_sidr_connect(struct uroce_cm_id *id, const struct uroce_cm_conn_param *p);
int cm_sidr_accept(struct uroce_cm_id *id, const struct uroce_cm_conn_param *p);
int cm_sidr_reject(struct uroce_cm_id *id, const void *pd, uint8_t len);

#endif /* UROCE_CM_INTERNAL_H */
