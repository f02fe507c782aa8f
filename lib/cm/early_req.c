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
 * So a REQ or SIDR_REQ that finds no listener, but an id bound to its port and address
 * that does not listen yet, is held by that id (one per id; a second gets the usual
 * answer) and taken as if it came the moment the id listens. The active side sends its
 * REQ again each time the response time it named (Remote CM Response Timeout) passes,
 * up to its Max CM Retries, then gives up: a hold of at most half that patience (and at
 * most EARLY_HOLD_MAX_NS) ends before it gives up, and the copies it sends meanwhile are
 * dropped as duplicates of the one held. When the hold ends without a listen (the id is
 * destroyed, starts connecting instead, or the time is up) the request gets the answer
 * it would have had at once: REJ Invalid Service ID, SIDR_REP Unsupported.
 */
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"

/* Long enough for a descheduled server to reach rdma_listen, short enough that a program
 * that binds and never listens costs its peer at most this much before the REJ. */
#define EARLY_HOLD_MAX_NS 1000000000ull

uint64_t cm_early_patience_ns(uint8_t t, uint8_t retries)
{
	return cm_iba_time_ns(t) * ((uint64_t)retries + 1);
}

static bool is_sidr(const struct cm_msg *m)
{
	return m->hdr.attr_id == UROCE_CM_ATTR_SIDR_REQ;
}

/* The same request again (the active side sent it once more): same sender, same TID. */
static bool same_request(const struct uroce_cm_id *id, const struct cm_msg *m,
			 const struct uroce_cm_path *from)
{
	return id->early->hdr.tid == m->hdr.tid && id->early->hdr.attr_id == m->hdr.attr_id &&
	       !memcmp(id->early_from.dgid.raw, from->dgid.raw, 16);
}

bool cm_early_hold(struct uroce_cm *cm, const struct cm_msg *m,
		   const struct uroce_cm_path *from, uint64_t service_id, uint64_t hold_ns)
{
	struct uroce_cm_id *id = cma_find_bound(cm, service_id, m->private_data);

	if (!id)
		return false;
	if (id->early) {
		if (!same_request(id, m, from))
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

void cm_early_listened(struct uroce_cm_id *id)
{
	struct uroce_cm_path from = id->early_from;
	struct cm_msg *m = early_take(id);

	if (!m)
		return;
	if (is_sidr(m))
		cm_sidr_input(id->cm, m, &from);
	else
		cm_conn_input(id->cm, m, &from);
	free(m);
}

void cm_early_refuse(struct uroce_cm_id *id)
{
	struct uroce_cm_path from = id->early_from;
	struct cm_msg *m = early_take(id);

	if (!m)
		return;
	if (is_sidr(m))
		cm_sidr_no_listener(id->cm, m, &from, false);
	else
		cm_conn_no_listener(id->cm, m, &from, false);
	free(m);
}
