/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_CM_SIM_H
#define UROCE_CM_SIM_H

/* Two CMs over a simulated wire: a FIFO of MADs, a virtual clock, a loss pattern, and an
 * event log per side. Host 0 is 198.18.0.2, host 1 is 198.18.0.1 (as in rxe's captures).
 * For random loss, duplication and reordering the wire takes lib/fault's injectors (the
 * ones uroced and the transport's simulation use), one per direction: sim_lossy(). */

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_test.h"
#include "uroce_fault.h"

#define SIM_QLEN 256
#define SIM_EVMAX 64

struct sim;

struct sim_host {
	struct sim *sim;
	int idx;
	struct uroce_cm *cm;
	union ibv_gid gid;
	struct uroce_cm_event ev[SIM_EVMAX];
	int nev;
};

struct sim_pkt {
	int to;
	uint8_t mad[UROCE_CM_MAD_LEN];
	struct uroce_cm_path from;
};

struct sim {
	struct sim_host h[2];
	struct sim_pkt q[SIM_QLEN];
	int qhead, qlen;
	uint64_t now;
	/* loss: drop the drop_nth'th MAD (1-based) of attribute drop_attr, or all if drop_all */
	uint16_t drop_attr;
	int drop_nth;
	int seen_attr;
	bool drop_all;
	int sent[2][16];
	int dropped;
	/* sim_lossy(): every MAD towards host i goes through link[i] */
	bool lossy;
	struct uroce_fault link[2];
};

/* A MAD on the lossy link: a 14-byte stand-in for the Ethernet header (lib/fault leaves
 * it alone) holding the destination, then the MAD. */
#define SIM_LINK_HDR 14

static inline void sim_queue(struct sim *s, int to, const uint8_t *mad)
{
	cr_assert_lt(s->qlen, SIM_QLEN);
	struct sim_pkt *p = &s->q[(s->qhead + s->qlen++) % SIM_QLEN];
	p->to = to;
	memcpy(p->mad, mad, UROCE_CM_MAD_LEN);
	memset(&p->from, 0, sizeof(p->from));
	p->from.sgid = s->h[to].gid;
	p->from.dgid = s->h[1 - to].gid;
	p->from.dmac[5] = (uint8_t)(1 - to);
	p->from.sgid_index = 1;
	p->from.hop_limit = 64;
	p->from.pkey = 0xffff;
}

/* Queues what a link's injector returned, in order. */
static inline void sim_link_emit(struct sim *s, const struct uroce_fault_out *out, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		cr_assert_eq(out[i].len, SIM_LINK_HDR + UROCE_CM_MAD_LEN);
		sim_queue(s, out[i].frame[0], out[i].frame + SIM_LINK_HDR);
	}
}

static inline int sim_tx(void *ctx, const uint8_t *mad, const struct uroce_cm_path *to)
{
	struct sim_host *h = ctx;
	struct sim *s = h->sim;
	uint16_t attr = (uint16_t)(mad[16] << 8 | mad[17]);
	s->sent[h->idx][attr >= 0x10 && attr <= 0x1a ? attr - 0x10 : 15]++;
	(void)to;
	if (s->drop_all) {
		s->dropped++;
		return 0;
	}
	if (attr == s->drop_attr && ++s->seen_attr == s->drop_nth) {
		s->dropped++;
		return 0;
	}
	if (s->lossy) {
		uint8_t frame[SIM_LINK_HDR + UROCE_CM_MAD_LEN] = {(uint8_t)(1 - h->idx)};
		struct uroce_fault_out out[UROCE_FAULT_OUT_MAX];

		memcpy(frame + SIM_LINK_HDR, mad, UROCE_CM_MAD_LEN);
		sim_link_emit(s, out,
			      uroce_fault_offer(&s->link[1 - h->idx], s->now, frame, sizeof(frame),
						out));
		return 0;
	}
	sim_queue(s, 1 - h->idx, mad);
	return 0;
}

static inline void sim_event(void *ctx, const struct uroce_cm_event *ev)
{
	struct sim_host *h = ctx;
	cr_assert_lt(h->nev, SIM_EVMAX);
	h->ev[h->nev++] = *ev;
}

static inline void sim_init(struct sim *s)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < 2; i++) {
		struct sim_host *h = &s->h[i];
		h->sim = s;
		h->idx = i;
		uroce_gid_from_ipv4(h->gid.raw, (const uint8_t[4]){198, 18, 0, i == 0 ? 2 : 1});
		struct uroce_cm_cfg cfg;
		uroce_cm_cfg_init(&cfg);
		cfg.node_guid = htobe64(0x505400fffe180000ull | (uint64_t)(i == 0 ? 2 : 1));
		cfg.seed = 1234 + (uint64_t)i;
		cfg.tx = sim_tx;
		cfg.event = sim_event;
		cfg.io_ctx = h;
		h->cm = uroce_cm_create(&cfg);
		cr_assert_not_null(h->cm);
	}
}

/* From now on the wire loses, duplicates and reorders MADs at @p f's rates (corruption
 * is not one of them: the ICRC turns it into a loss before any CM sees it). */
static inline void sim_lossy(struct sim *s, const struct uroce_fault_cfg *f)
{
	for (int i = 0; i < 2; i++) {
		struct uroce_fault_cfg c = *f;

		c.corrupt = 0;
		c.seed = f->seed * 2 + (uint64_t)i;
		cr_assert_eq(uroce_fault_init(&s->link[i], &c), 0);
	}
	s->lossy = true;
}

static inline void sim_fini(struct sim *s)
{
	uroce_cm_destroy(s->h[0].cm);
	uroce_cm_destroy(s->h[1].cm);
	if (s->lossy) {
		uroce_fault_fini(&s->link[0]);
		uroce_fault_fini(&s->link[1]);
	}
}

/* Delivers queued MADs and fires timers until nothing is queued and no timer is due by
 * @p until. */
static inline void sim_run(struct sim *s, uint64_t until)
{
	for (;;) {
		if (s->qlen) {
			struct sim_pkt p = s->q[s->qhead];
			s->qhead = (s->qhead + 1) % SIM_QLEN;
			s->qlen--;
			s->now += 1000; /* 1 us on the wire */
			uroce_cm_input(s->h[p.to].cm, p.mad, UROCE_CM_MAD_LEN, &p.from, s->now);
			continue;
		}
		uint64_t d0 = uroce_cm_next_deadline(s->h[0].cm);
		uint64_t d1 = uroce_cm_next_deadline(s->h[1].cm);
		uint64_t d = d0 < d1 ? d0 : d1;
		for (int i = 0; s->lossy && i < 2; i++) {
			uint64_t held = uroce_fault_next_deadline(&s->link[i]);

			if (held <= s->now) {
				struct uroce_fault_out out[UROCE_FAULT_OUT_MAX];
				uint32_t n = uroce_fault_process(&s->link[i], s->now, out);

				sim_link_emit(s, out, n);
				held = 0;
			}
			if (held < d)
				d = held;
		}
		if (d == 0)
			continue; /* a held MAD was let go: deliver it */
		if (d > until || d == UINT64_MAX)
			break;
		if (d > s->now)
			s->now = d;

		uroce_cm_process(s->h[0].cm, s->now);
		uroce_cm_process(s->h[1].cm, s->now);
	}
	if (s->now < until && until != UINT64_MAX)
		s->now = until;
}

static inline void sim_settle(struct sim *s) { sim_run(s, s->now); }

static inline struct sockaddr_in sim_addr(int host, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(host == 0 ? 0xc6120002 : 0xc6120001);
	return a;
}

static inline struct uroce_cm_path sim_path(struct sim *s, int from)
{
	struct uroce_cm_path p;
	memset(&p, 0, sizeof(p));
	p.sgid = s->h[from].gid;
	p.dgid = s->h[1 - from].gid;
	p.dmac[5] = (uint8_t)(1 - from);
	p.sgid_index = 1;
	p.hop_limit = 64;
	p.pkey = 0xffff;
	return p;
}

/* The last event host @p h got, and how many it has. */
static inline const struct uroce_cm_event *sim_last(struct sim *s, int h)
{
	cr_assert_gt(s->h[h].nev, 0, "host %d has no event", h);
	return &s->h[h].ev[s->h[h].nev - 1];
}

#endif
