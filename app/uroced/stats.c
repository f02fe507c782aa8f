/* SPDX-License-Identifier: BSD-3-Clause */
/* Named counters for `uroce stat`: the transport's (rxe's names), the host stack's, the
 * port's, fault injection, the daemon's own, and its object and mapping counts (which a
 * leak test compares before and after an application dies). */
#include <stdio.h>
#include <string.h>

#include "uroced.h"

struct stat_out {
	struct uroce_ctrl_stat *s;
	uint32_t n, max;
};

static void put(struct stat_out *o, const char *prefix, const char *name, uint64_t v)
{
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

int ud_stats(struct ud_client *self, uint32_t flags, struct uroce_ctrl_stat *out, uint32_t max)
{
	static const char *const obj_names[UD_OBJ_TYPES] = {
		[UD_OBJ_PD] = "pd", [UD_OBJ_REGION] = "region", [UD_OBJ_MR] = "mr",
		[UD_OBJ_CHANNEL] = "channel", [UD_OBJ_CQ] = "cq", [UD_OBJ_SRQ] = "srq",
		[UD_OBJ_QP] = "qp", [UD_OBJ_AH] = "ah", [UD_OBJ_CM_CHANNEL] = "cm_channel",
		[UD_OBJ_CM_ID] = "cm_id"};
	struct stat_out o = {.s = out, .max = max};
	const struct uroce_tp_counters *tc = uroce_tp_counters(ud.dev);
	const struct uroce_ip_counters *ic = uroce_ip_counters(ud.ip);
	uint64_t objs[UD_OBJ_TYPES] = {0};
	struct ud_client *c;
	unsigned int i;

#define PUT_TP(n) put(&o, "", #n, tc->n);
	UROCE_TP_COUNTERS(PUT_TP)
#undef PUT_TP
	for (i = 0; i < UROCE_IP_CNT__COUNT; i++)
		put(&o, "ip.", uroce_ip_counter_name(i), uroce_ip_counter_value(ic, i));
	if (ud.port_open) {
		struct uroce_eth_stats es;

		if (uroce_eth_stats_get(&ud.port, &es) == 0) {
#define PUT_ETH(n) put(&o, "port.", #n, es.n)
			PUT_ETH(ipackets);
			PUT_ETH(opackets);
			PUT_ETH(ibytes);
			PUT_ETH(obytes);
			PUT_ETH(imissed);
			PUT_ETH(ierrors);
			PUT_ETH(oerrors);
			PUT_ETH(rx_nombuf);
			PUT_ETH(rx_linearized);
			PUT_ETH(tx_chained);
			PUT_ETH(tx_dropped);
			PUT_ETH(tx_nombuf);
			PUT_ETH(tx_oversize);
#undef PUT_ETH
		}
		put(&o, "port.", "link_up", ud.link_up);
		put(&o, "port.", "mtu", ud.port.mtu);
	}
#define PUT_FAULT(dir, f)                                            \
	do {                                                         \
		put(&o, "fault." #dir ".", "dropped", (f).stats.dropped);    \
		put(&o, "fault." #dir ".", "duplicated", (f).stats.duplicated); \
		put(&o, "fault." #dir ".", "reordered", (f).stats.reordered); \
		put(&o, "fault." #dir ".", "corrupted", (f).stats.corrupted); \
	} while (0)
	PUT_FAULT(rx, ud.rx_fault);
	PUT_FAULT(tx, ud.tx_fault);
#undef PUT_FAULT
	if (ud.cm) {
		static const char *const attr[16] = {"req", "mra", "rej", "rep", "rtu", "dreq",
						     "drep", "sidr_req", "sidr_rep", "lap",
						     "apr", NULL, NULL, NULL, NULL, "other"};
		const struct uroce_cm_counters *cc = uroce_cm_counters(ud.cm);
		char n[32];

		put(&o, "cm.", "rx_mads", cc->rx_mads);
		put(&o, "cm.", "tx_mads", cc->tx_mads);
		put(&o, "cm.", "rx_malformed", cc->rx_malformed);
		put(&o, "cm.", "rx_unknown_attr", cc->rx_unknown_attr);
		put(&o, "cm.", "rx_stale", cc->rx_stale);
		put(&o, "cm.", "rx_dup_req", cc->rx_dup_req);
		put(&o, "cm.", "rx_no_listener", cc->rx_no_listener);
		put(&o, "cm.", "retries", cc->retries);
		put(&o, "cm.", "timeouts", cc->timeouts);
		for (i = 0; i < 16; i++) {
			if (!attr[i])
				continue;
			snprintf(n, sizeof(n), "rx_%s", attr[i]);
			put(&o, "cm.", n, cc->rx_by_attr[i]);
			snprintf(n, sizeof(n), "tx_%s", attr[i]);
			put(&o, "cm.", n, cc->tx_by_attr[i]);
		}
	}
#define PUT_UD(n) put(&o, "daemon.", #n, ud.cnt.n);
	UD_COUNTERS(PUT_UD)
#undef PUT_UD
	for (c = ud.clients; c; c = c->next)
		for (i = 1; i < UD_OBJ_TYPES; i++)
			objs[i] += c->counts[i];
	put(&o, "", "clients", ud.nclients);
	for (i = 1; i < UD_OBJ_TYPES; i++)
		put(&o, "objects.", obj_names[i], objs[i]);
	put(&o, "", "mappings", ud.mappings);
	put(&o, "", "active_qps", ud.nqps);

	if (flags & UROCE_CTRL_STATS_PER_QP) {
		for (i = 0; i < ud.nqps; i++) {
			struct ud_qp *q = ud.qps[i];
			char p[40];

			(void)self;
			snprintf(p, sizeof(p), "qp.%u.", uroce_tp_qp_num(q->tp));
			put(&o, p, "state", uroce_tp_qp_state(q->tp));
			put(&o, p, "sq_posted", q->sq_taken);
			put(&o, p, "sq_outstanding", uroce_tp_qp_sq_outstanding(q->tp));
			put(&o, p, "rq_posted", q->rq_taken);
			put(&o, p, "rq_outstanding", uroce_tp_qp_rq_outstanding(q->tp));
			put(&o, p, "client_pid", (uint64_t)q->client->pid);
		}
	}
	return (int)o.n;
}
