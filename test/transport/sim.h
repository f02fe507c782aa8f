/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A simulated Ethernet segment for lib/transport: hosts (each a uroce_tp_dev), a virtual
 * clock, and a seeded channel that delays, drops, duplicates, reorders and corrupts
 * frames and sometimes refuses to send (tx backpressure). Deterministic for a seed.
 */
#ifndef UROCE_TEST_SIM_H
#define UROCE_TEST_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "uroce_transport.h"

#define SIM_MAX_HOSTS 4

struct sim_faults {
	double drop;      /* probability a frame is lost */
	double dup;       /* ... delivered twice */
	double reorder;   /* ... delayed by an extra random time (overtaken) */
	double corrupt;   /* ... has one byte flipped after the Ethernet header */
	double tx_busy;   /* ... the tx callback answers -EAGAIN */
	uint64_t delay_ns;   /* one-way latency */
	uint64_t jitter_ns;  /* extra uniform delay */
	uint64_t reorder_ns; /* extra delay of a reordered frame, at most */
	bool cut;         /* every frame is lost (link down) */
};

struct sim_frame {
	uint64_t at;
	uint64_t seq; /* tie-break: FIFO among equal times */
	uint32_t len;
	int dst;
	uint8_t *data;
};

struct sim;

struct sim_host {
	struct sim *sim;
	int id;
	struct uroce_tp_dev *dev;
	uint8_t mac[6];
	union ibv_gid gid; /* ::ffff:10.0.0.<id+1> */
};

struct sim {
	uint64_t now;
	uint64_t rng;
	struct sim_faults faults;
	struct sim_host host[SIM_MAX_HOSTS];
	int nhosts;
	/* frames in flight: a binary heap by (at, seq) */
	struct sim_frame *heap;
	uint32_t nheap, capheap;
	uint64_t seq;
	uint64_t link_at[SIM_MAX_HOSTS]; /* latest in-order arrival time towards each host */
	bool trace; /* print every delivered frame (UROCE_SIM_TRACE=1) */
	/* what happened */
	uint64_t sent, delivered, dropped, duplicated, corrupted, busy;
};

void sim_init(struct sim *s, uint64_t seed, int nhosts, const struct sim_faults *f,
	      const struct uroce_tp_dev_cfg *base_cfg);
void sim_fini(struct sim *s);
uint64_t sim_rand(struct sim *s);
/* A uniform double in [0, 1). */
double sim_frand(struct sim *s);

/* Runs until @done(arg) is true or @until_ns of virtual time is reached; delivers frames
 * and lets every device work at each event. Returns true if @done became true. */
bool sim_run(struct sim *s, uint64_t until_ns, bool (*done)(void *arg), void *arg);

/* Brings a QP pair (or a UD QP) to RTS the way ibv_rc_pingpong does. */
struct sim_qp_opts {
	enum ibv_mtu mtu;
	uint32_t psn_a, psn_b;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic;
	uint32_t qkey;
};
void sim_connect(struct sim *s, struct uroce_tp_qp *a, int host_a, struct uroce_tp_qp *b,
		 int host_b, const struct sim_qp_opts *o);
void sim_ud_ready(struct sim *s, struct uroce_tp_qp *qp, uint32_t qkey, uint32_t sq_psn);
struct uroce_tp_ah *sim_ah(struct sim *s, struct uroce_tp_pd *pd, int from, int to);

#endif
