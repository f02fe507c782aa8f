/* SPDX-License-Identifier: BSD-3-Clause */
/* Named counters for `uroce stat`: the transport's (rxe's names), the host stack's, the
 * CM's, the host's own (port, fault injection, daemon: ops->stats), the RNIC's, and its
 * object and mapping counts (which a leak test compares before and after an application
 * dies), and the PDs and MRs kept past their last handle (memory.c, orphans). Counts are
 * the device's; per-QP lines (QPN, state, pid) only the viewer's own user's, unless the
 * viewer is an administrator. */
#include <stdio.h>
#include <string.h>

#include "rnic_internal.h"

struct stat_out {
	struct uroce_ctrl_stat *s;
	uint32_t n, max;
};

static void put(void *out, const char *prefix, const char *name, uint64_t v)
{
	struct stat_out *o = out;
	if (o->n == o->max)
		return;
	char *d = o->s[o->n].name;
	size_t lp = strlen(prefix), ln = strlen(name);

	/* Names longer than the field are cut (none is today). */
	if (lp > UROCE_CTRL_STAT_NAME_MAX - 1)
		lp = UROCE_CTRL_STAT_NAME_MAX - 1;
	if (ln > UROCE_CTRL_STAT_NAME_MAX - 1 - lp)
		ln = UROCE_CTRL_STAT_NAME_MAX - 1 - lp;
	memcpy(d, prefix, lp);
	memcpy(d + lp, name, ln);
	d[lp + ln] = 0;
	o->s[o->n].value = v;
	o->n++;
}

int rnic_stats(struct uroce_rnic *nic, const struct uroce_rnic_client *viewer, uint32_t flags,
	       struct uroce_ctrl_stat *out, uint32_t max)
{
	static const char *const obj_names[RNIC_OBJ_TYPES] = {[RNIC_OBJ_PD] = "pd",
							      [RNIC_OBJ_REGION] = "region",
							      [RNIC_OBJ_MR] = "mr",
							      [RNIC_OBJ_CHANNEL] = "channel",
							      [RNIC_OBJ_CQ] = "cq",
							      [RNIC_OBJ_SRQ] = "srq",
							      [RNIC_OBJ_QP] = "qp",
							      [RNIC_OBJ_AH] = "ah",
							      [RNIC_OBJ_CM_CHANNEL] = "cm_channel",
							      [RNIC_OBJ_CM_ID] = "cm_id",
							      [RNIC_OBJ_MW] = "mw",
							      [RNIC_OBJ_FLOW] = "flow",
							      [RNIC_OBJ_XRCD] = "xrcd"};
	struct stat_out o = {.s = out, .max = max};
	const struct uroce_tp_counters *tc = uroce_tp_counters(nic->dev);
	const struct uroce_ip_counters *ic = uroce_ip_counters(nic->ip);
	uint64_t objs[RNIC_OBJ_TYPES] = {0};
	struct uroce_rnic_client *c;
	unsigned int i;

#define PUT_TP(n) put(&o, "", #n, tc->n);
	UROCE_TP_COUNTERS(PUT_TP)
#undef PUT_TP
	put(&o, "", "turn_wait_max", uroce_tp_turn_wait_max(nic->dev));
	for (i = 0; i < UROCE_IP_CNT__COUNT; i++)
		put(&o, "ip.", uroce_ip_counter_name(i), uroce_ip_counter_value(ic, i));
	nic->ops->stats(nic->io_ctx, put, &o);
	if (nic->cm) {
		static const char *const attr[16] = {
			"req",	    "mra", "rej", "rep", "rtu", "dreq", "drep", "sidr_req",
			"sidr_rep", "lap", "apr", NULL,	 NULL,	NULL,	NULL,	"other"};
		const struct uroce_cm_counters *cc = uroce_cm_counters(nic->cm);
		char n[32];

		put(&o, "cm.", "rx_mads", cc->rx_mads);
		put(&o, "cm.", "tx_mads", cc->tx_mads);
		put(&o, "cm.", "rx_malformed", cc->rx_malformed);
		put(&o, "cm.", "rx_unknown_attr", cc->rx_unknown_attr);
		put(&o, "cm.", "rx_stale", cc->rx_stale);
		put(&o, "cm.", "rx_dup_req", cc->rx_dup_req);
		put(&o, "cm.", "rx_no_listener", cc->rx_no_listener);
		put(&o, "cm.", "rx_req_held", cc->rx_req_held);
		put(&o, "cm.", "rx_bad_path", cc->rx_bad_path);
		put(&o, "cm.", "retries", cc->retries);
		put(&o, "cm.", "timeouts", cc->timeouts);
		put(&o, "cm.", "listening", uroce_cm_listening(nic->cm));
		for (i = 0; i < 16; i++) {
			if (!attr[i])
				continue;
			snprintf(n, sizeof(n), "rx_%s", attr[i]);
			put(&o, "cm.", n, cc->rx_by_attr[i]);
			snprintf(n, sizeof(n), "tx_%s", attr[i]);
			put(&o, "cm.", n, cc->tx_by_attr[i]);
		}
	}
#define PUT_RNIC(n) put(&o, "daemon.", #n, nic->cnt.n);
	RNIC_COUNTERS(PUT_RNIC)
#undef PUT_RNIC
	for (c = nic->clients; c; c = c->next)
		for (i = 1; i < RNIC_OBJ_TYPES; i++)
			objs[i] += c->counts[i];
	put(&o, "", "clients", nic->nclients);
	for (i = 1; i < RNIC_OBJ_TYPES; i++)
		put(&o, "objects.", obj_names[i], objs[i]);
	put(&o, "", "mappings", nic->mappings);
	put(&o, "", "orphans", rnic_orphans(nic));
	put(&o, "", "active_qps", nic->nqps);

	if (flags & UROCE_CTRL_STATS_PER_QP) {
		for (i = 0; i < nic->nqps; i++) {
			struct rnic_qp *q = nic->qps[i];
			char p[40];

			/* A QPN and the pid behind it are what an attacker aims a forged
			 * packet with: a user sees its own QPs, the administrator all. */
			if (!viewer->admin && q->client->uid != viewer->uid)
				continue;
			snprintf(p, sizeof(p), "qp.%u.", uroce_tp_qp_num(q->tp));
			put(&o, p, "state", uroce_tp_qp_state(q->tp));
			put(&o, p, "sq_posted", q->sq_taken);
			put(&o, p, "sq_outstanding", uroce_tp_qp_sq_outstanding(q->tp));
			/* posted by the application, not taken yet: a doorbell that waits */
			put(&o, p, "sq_waiting", uroce_ring_cons_avail(&q->sq));
			put(&o, p, "rq_posted", q->rq_taken);
			put(&o, p, "rq_outstanding", uroce_tp_qp_rq_outstanding(q->tp));
			put(&o, p, "client_pid", (uint64_t)q->client->pid);
		}
		/* Each CQ's completions on their way: in the transport, in the application's
		 * ring unpolled. A stalled program shows here whether it stopped polling. */
		for (const struct uroce_rnic_client *cl = nic->clients; cl; cl = cl->next) {
			if (!viewer->admin && cl->uid != viewer->uid)
				continue;
			for (uint32_t h = 1; h <= cl->nobjs; h++) {
				struct rnic_cq *q = cl->objs[h - 1].p;
				char p[48];

				if (cl->objs[h - 1].type != RNIC_OBJ_CQ)
					continue;
				snprintf(p, sizeof(p), "cq.%d.%u.", (int)cl->pid,
					 cl->objs[h - 1].handle);
				put(&o, p, "unpolled",
				    q->ring.mine - atomic_load_explicit(&q->ring.sh->cons,
									memory_order_relaxed));
				put(&o, p, "in_transport", uroce_tp_cq_count(q->tp));
				/* On the transport's ready list: it holds some. */
				put(&o, p, "ready", uroce_tp_cq_count(q->tp) != 0);
			}
		}
	}
	return (int)o.n;
}

int uroce_rnic_stats(struct uroce_rnic *nic, struct uroce_ctrl_stat *out, uint32_t max)
{
	return rnic_stats(nic, NULL, 0, out, max); /* no viewer: without per-QP lines */
}
