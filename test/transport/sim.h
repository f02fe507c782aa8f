/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A simulated Ethernet segment for lib/transport: hosts (each a uroce_tp_dev), a virtual
 * clock, and a seeded channel that delays frames and sometimes refuses to send (tx
 * backpressure). Losses, duplicates, reordering and corruption are lib/fault's, the
 * injector uroced puts on its own paths: one per direction (frames towards each host),
 * so the simulation exercises the faults the daemon injects, not a model of its own.
 * Deterministic for a seed.
 */
#ifndef UROCE_TEST_SIM_H
#define UROCE_TEST_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "uroce_fault.h"
#include "uroce_transport.h"

#define SIM_MAX_HOSTS 4

struct sim_faults {
	double drop;      /* probability a frame is lost (lib/fault) */
	double dup;       /* ... delivered twice (lib/fault) */
	double reorder;   /* ... overtaken by up to 4 later frames (lib/fault) */
	double corrupt;   /* ... has one byte flipped after the Ethernet header (lib/fault) */
	double tx_busy;   /* ... the tx callback answers -EAGAIN */
	uint64_t delay_ns;   /* one-way latency */
	uint64_t jitter_ns;  /* extra uniform delay, frames still in order */
	uint64_t reorder_ns; /* longest a reordered frame is held (0: lib/fault's 1 ms) */
	bool cut;         /* every frame is lost (link down); may be set at any time */
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
	struct uroce_fault fault[SIM_MAX_HOSTS]; /* on the frames towards each host */
	struct sim_host host[SIM_MAX_HOSTS];
	int nhosts;
	/* frames in flight: a binary heap by (at, seq) */
	struct sim_frame *heap;
	uint32_t nheap, capheap;
	uint64_t seq;
	uint64_t link_at[SIM_MAX_HOSTS]; /* latest in-order arrival time towards each host */
	bool trace; /* print every delivered frame (UROCE_SIM_TRACE=1) */
	/* Frames handed over between two uroce_tp_process calls (a receive burst); 0: all
	 * that are due. */
	uint32_t rx_burst;
	/* Called for each frame a host hands to the link (not one refused as busy), once
	 * the link has decided whether it loses, corrupts or delays it (@faulted): for
	 * oracles that tell a loss the link caused from one the transport caused. */
	void (*tx_hook)(void *arg, int from, int to, const uint8_t *frame, uint32_t len,
			bool faulted);
	void *tx_hook_arg;
	/* what happened (the injectors count their faults: sim_fault_totals()) */
	uint64_t sent, delivered, lost, busy;
	uint64_t zc_frames; /* of sent: through sim_tx_zc */
};

struct sim_fault_totals {
	uint64_t dropped, duplicated, reordered, corrupted;
};

void sim_init(struct sim *s, uint64_t seed, int nhosts, const struct sim_faults *f,
	      const struct uroce_tp_dev_cfg *base_cfg);
void sim_fini(struct sim *s);
/* The hosts' tx (cfg.tx): a frame goes to the host whose MAC it is for, through the
 * faults. */
int sim_tx(void *ctx, const uint8_t *frame, uint32_t len);
/* A zero-copy tx (cfg.tx_zc): joins the pieces as a PMD reading the chain would, when
 * the frame is sent, then sim_tx. */
int sim_tx_zc(void *ctx, const uint8_t *hdr, uint32_t hdr_len, const struct uroce_tp_tx_seg *seg,
	      uint32_t nseg, const uint8_t *tail, uint32_t tail_len);
/* New fault rates from now on (frames held for reordering are delivered first). */
void sim_set_faults(struct sim *s, const struct sim_faults *f);
/* Frames lost (the link cut, or to no host) and every injector's counts. */
struct sim_fault_totals sim_fault_totals(const struct sim *s);
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
