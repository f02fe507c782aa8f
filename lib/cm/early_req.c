/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requests that come before rdma_listen.
 *
 * A passive program binds, tells its peer the port out of band, then listens. qperf's
 * server does exactly that (rdma_bind_addr, the port over its TCP connection,
 * rdma_listen), so its client's REQ can reach the CM first. Linux's ib_cm answers such a
 * REQ with REJ Invalid Service ID, and the client fails ("Event rejected"); on hardware
 * the client's address and route resolution take long enough that nobody sees it. Here
 * they take microseconds, and on a loaded host the server may not run again for
 * milliseconds: qperf failed so once in CI.
 *
 * perftest -R's server does not even bind first: after its out-of-band exchange its
 * client connects at once, while its server only then creates, binds and listens on the
 * id for the data connection; on a loaded machine the REQ often wins, and perftest's
 * retry after the REJ crashes on ids it freed.
 *
 * So a REQ or SIDR_REQ that finds nothing listening on its port is held, and taken as if
 * it came the moment an id listens there:
 * - by the id bound to its port and address, if there is one (one per id; a second gets
 *   the usual answer), for at most EARLY_HOLD_MAX_NS;
 * - else by the CM, at most EARLY_UNBOUND_MAX of them, for at most
 *   EARLY_UNBOUND_HOLD_NS: a REQ to a port nobody will listen on is refused that much
 *   later than Linux refuses it, and a flood of them costs bounded memory.
 * The active side sends its REQ again each time the response time it named (Remote CM
 * Response Timeout) passes, up to its Max CM Retries, then gives up: a hold of at most
 * half that patience ends before it gives up, and the copies it sends meanwhile are
 * dropped as duplicates of the one held. When the hold ends without a listen (the bound
 * id is destroyed, starts connecting instead, or the time is up) the request gets the
 * answer it would have had at once: REJ Invalid Service ID, SIDR_REP Unsupported.
 */
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"

/* Long enough for a descheduled server to reach rdma_listen, short enough that a program
 * that binds and never listens costs its peer at most this much before the REJ. */
#define EARLY_HOLD_MAX_NS 1000000000ull
/* For a port nothing is bound to: what a REQ to a closed port costs its sender more. */
#define EARLY_UNBOUND_HOLD_NS 500000000ull
#define EARLY_UNBOUND_MAX 32u

/* A request held for a port nothing is bound to (the CM's list). */
struct cm_early_req {
	struct cm_early_req *next;
	uint64_t deadline;
	struct uroce_cm_path from;
	struct cm_msg m;
};

uint64_t cm_early_patience_ns(uint8_t t, uint8_t retries)
{
	return cm_iba_time_ns(t) * ((uint64_t)retries + 1);
}

static bool is_sidr(const struct cm_msg *m)
{
	return m->hdr.attr_id == UROCE_CM_ATTR_SIDR_REQ;
}

static uint64_t service_id_of(const struct cm_msg *m)
{
	return is_sidr(m) ? m->u.sidr_req.service_id : m->u.req.service_id;
}

/* The same request again (the active side sent it once more): same sender, same TID. */
static bool same_request(const struct cm_msg *held, const struct uroce_cm_path *held_from,
			 const struct cm_msg *m, const struct uroce_cm_path *from)
{
	return held->hdr.tid == m->hdr.tid && held->hdr.attr_id == m->hdr.attr_id &&
	       !memcmp(held_from->dgid.raw, from->dgid.raw, 16);
}

/* Holds @p m in the CM's list (no id is bound to its port). */
static bool hold_unbound(struct uroce_cm *cm, const struct cm_msg *m,
			 const struct uroce_cm_path *from, uint64_t hold_ns)
{
	struct cm_early_req *e;

	for (e = cm->early; e; e = e->next)
		if (same_request(&e->m, &e->from, m, from)) {
			cm->counters.rx_dup_req++;
			return true;
		}
	if (cm->nearly >= EARLY_UNBOUND_MAX)
		return false;
	e = malloc(sizeof(*e));
	if (!e)
		return false;
	memcpy(&e->m, m, sizeof(*m));
	e->from = *from;
	e->deadline =
		cm->now + (hold_ns < EARLY_UNBOUND_HOLD_NS ? hold_ns : EARLY_UNBOUND_HOLD_NS);
	e->next = cm->early;
	cm->early = e;
	cm->nearly++;
	cm->counters.rx_req_held++;
	return true;
}

bool cm_early_hold(struct uroce_cm *cm, const struct cm_msg *m,
		   const struct uroce_cm_path *from, uint64_t service_id, uint64_t hold_ns)
{
	struct uroce_cm_id *id = cma_find_bound(cm, service_id, m->private_data);

	if (!id)
		return hold_unbound(cm, m, from, hold_ns);
	if (id->early) {
		if (!same_request(id->early, &id->early_from, m, from))
			return false; /* one held per id: the next gets the usual answer */
		cm->counters.rx_dup_req++;
		return true;
	}
	/* A bound id has no other timer (it sends nothing until it connects or listens). */
	if (id->timer != CM_TIMER_NONE)
		return false;
	id->early = malloc(sizeof(*id->early));
	if (!id->early)
		return false;
	memcpy(id->early, m, sizeof(*m));
	id->early_from = *from;
	id->timer = CM_TIMER_EARLY;
	id->deadline = cm->now + (hold_ns < EARLY_HOLD_MAX_NS ? hold_ns : EARLY_HOLD_MAX_NS);
	cm->counters.rx_req_held++;
	return true;
}

/* Takes the held request off @p id: the caller owns it. */
static struct cm_msg *early_take(struct uroce_cm_id *id)
{
	struct cm_msg *m = id->early;

	id->early = NULL;
	if (id->timer == CM_TIMER_EARLY)
		id->timer = CM_TIMER_NONE;
	return m;
}

/* Takes @p m as if it came now: to the listener there is now, or refused. */
static void early_input(struct uroce_cm *cm, const struct cm_msg *m,
			const struct uroce_cm_path *from)
{
	if (is_sidr(m))
		cm_sidr_input(cm, m, from);
	else
		cm_conn_input(cm, m, from);
}

/* Answers @p m as a request nothing listens to (Linux's answer, given late). */
static void early_refuse(struct uroce_cm *cm, const struct cm_msg *m,
			 const struct uroce_cm_path *from)
{
	if (is_sidr(m))
		cm_sidr_no_listener(cm, m, from, false);
	else
		cm_conn_no_listener(cm, m, from, false);
}

void cm_early_listened(struct uroce_cm_id *id)
{
	struct uroce_cm *cm = id->cm;
	struct uroce_cm_path from = id->early_from;
	struct cm_msg *m = early_take(id);
	struct cm_early_req **pp = &cm->early;

	if (m) {
		early_input(cm, m, &from);
		free(m);
	}
	/* The ones held for no id that this listener takes. */
	while (*pp) {
		struct cm_early_req *e = *pp;
		bool port_listened;

		if (cma_find_listener(cm, service_id_of(&e->m), e->m.private_data,
				      &port_listened) != id) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		cm->nearly--;
		early_input(cm, &e->m, &e->from);
		free(e);
	}
}

void cm_early_expire(struct uroce_cm *cm)
{
	struct cm_early_req **pp = &cm->early;

	while (*pp) {
		struct cm_early_req *e = *pp;

		if (e->deadline > cm->now) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		cm->nearly--;
		early_refuse(cm, &e->m, &e->from);
		free(e);
	}
}

uint64_t cm_early_next_deadline(const struct uroce_cm *cm)
{
	uint64_t d = UINT64_MAX;

	for (const struct cm_early_req *e = cm->early; e; e = e->next)
		if (e->deadline < d)
			d = e->deadline;
	return d;
}

void cm_early_free_all(struct uroce_cm *cm)
{
	while (cm->early) {
		struct cm_early_req *e = cm->early;

		cm->early = e->next;
		free(e);
	}
	cm->nearly = 0;
}

void cm_early_refuse(struct uroce_cm_id *id)
{
	struct uroce_cm_path from = id->early_from;
	struct cm_msg *m = early_take(id);

	if (!m)
		return;
	early_refuse(id->cm, m, &from);
	free(m);
}
