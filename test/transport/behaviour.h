/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef TRANSPORT_BEHAVIOUR_H
#define TRANSPORT_BEHAVIOUR_H

/*
 * The two-host environment of the behaviour suites (test_status.c, test_post.c,
 * test_modify.c, test_ud_srq.c, test_flow.c, test_atomic.c, test_device.c): two devices
 * on the simulated wire (sim.c, no random faults), one QP pair, a log of every frame each
 * host sent (and whether the test's drop rule took it) and of every async event.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <criterion/criterion.h>

#include "sim.h"
/* Only to wrap each device's tx callback (dev->cfg.tx), so that the test sees and can
 * drop single frames; nothing else of the transport's internals is used. */
#include "tp_internal.h"

#define OPC(tr, op) UROCE_OPCODE(UROCE_TRANSPORT_##tr, UROCE_OP_##op)
#define ANY	    (-1)
#define MEM_SIZE    (1u << 20)
#define US	    1000ull
#define MS	    1000000ull

/* ---- frames on the wire -------------------------------------------------------------------- */

struct frame_rec {
	uint64_t at;
	int from;
	uint8_t opcode;
	uint32_t psn, dqpn;
	bool ack_req;
	uint8_t syn;   /* AETH syndrome, when the packet has one */
	uint32_t len;  /* payload bytes */
	uint64_t orig; /* AtomicAckETH */
	uint32_t qkey; /* DETH */
	uint32_t src_qpn;
	uint64_t va;   /* RETH, when the packet has one */
	uint32_t rkey, dma_len;
	uint32_t xrc_srqn; /* XRCETH, when the packet has one */
	uint8_t head[8]; /* the first (up to) 8 payload bytes */
	bool dropped;  /* by the test's drop rule, never reached the wire */
	uint64_t hash; /* FNV-1a of every byte of the frame */
};

#define MAX_LOG 8192
struct tx_log {
	uroce_tp_tx_fn orig;
	struct frame_rec f[MAX_LOG];
	uint32_t n;
	bool (*drop)(const struct frame_rec *r, void *arg);
	void *drop_arg;
	int busy[2]; /* answer -EAGAIN to this many more tx calls of each host */
};

struct ev_log {
	int n;
	enum ibv_event_type type[64];
	void *obj[64];
};

extern struct tx_log g_tx;
extern struct ev_log g_ev;

/* ---- two hosts ---------------------------------------------------------------------------- */

struct cqlog {
	struct uroce_tp_cq *cq;
	struct ibv_wc wc[256];
	int n;
};

struct env {
	struct sim s;
	uint8_t *mem[2];
	uint64_t iova[2];
	struct uroce_tp_pd *pd[2];
	struct uroce_tp_mr *mr[2];
	uint32_t key[2];
	struct cqlog sc[2], rc[2]; /* send and receive CQ of each host */
	struct uroce_tp_qp *qp[2];
	int want_sc[2], want_rc[2]; /* run() stops once the logs hold this many */
};

int wrap_tx(void *ctx, const uint8_t *frame, uint32_t len);

void on_event(void *ctx, enum ibv_event_type type, void *obj);

int nevents(enum ibv_event_type type, void *obj);

/* Frames @from sent (and did not drop) with @opcode and @psn (ANY: every one). */
int nframes(int from, int opcode, int64_t psn);

/* ACKNOWLEDGE frames from @from of AETH type @type (ANY: all), and NAK code @code. */
int nacks(int from, int type, int code);

const struct frame_rec *first_frame(int from, int opcode);

struct sim_qp_opts default_opts(void);

void env_init_cfg(struct env *e, const struct uroce_tp_dev_cfg *cfg_in);

void env_init(struct env *e);

struct uroce_tp_qp *mkqp(struct env *e, int h, enum ibv_qp_type type, struct uroce_tp_srq *srq,
			 bool sig_all, uint32_t max_send_wr);

/* An RC (or UC) pair qp[0] on host 0 <-> qp[1] on host 1, in RTS. */
void env_pair(struct env *e, enum ibv_qp_type type, const struct sim_qp_opts *o);

void env_fini(struct env *e);

uint64_t va(struct env *e, int h, uint64_t off);

uint8_t *hp(struct env *e, int h, uint64_t off);

void collect(struct env *e);

bool wants_met(void *arg);

/* Runs until host 0's send CQ holds @sc0 completions and host 1's receive CQ @rc1 (or for
 * @ns of virtual time, and then the clock stands at now + @ns: time passes). */
bool run_until(struct env *e, int sc0, int rc1, uint64_t ns);

/* Runs for @ns of virtual time whatever completes. */
void run_for(struct env *e, uint64_t ns);

struct uroce_tp_send_wqe wr(uint64_t id, enum ibv_wr_opcode op, uint64_t addr, uint32_t len,
			    uint32_t lkey, bool signaled);

void post(struct env *e, int h, const struct uroce_tp_send_wqe *w);

struct uroce_tp_recv_wqe rwr(uint64_t id, uint64_t addr, uint32_t len, uint32_t lkey);

void post_recv(struct env *e, int h, uint64_t id, uint64_t off, uint32_t len);

void fill(uint8_t *p, uint32_t len, uint8_t seed);

bool all_bytes(const uint8_t *p, uint32_t len, uint8_t v);

enum ibv_qp_state qstate(struct env *e, int h);

const struct uroce_tp_counters *cnt(struct env *e, int h);

/* libibverbs is not linked (headers only): the names of the statuses used here. */
const char *st_name(enum ibv_wc_status st);

void expect_wc(const struct ibv_wc *wc, uint64_t id, enum ibv_wc_status st);

/* Builds a request from host 0 to host 1's qp[1] (or h->bth.dqpn) and hands it to host 1;
 * @corrupt_at: flip a bit of that byte, @trunc: pass only that many bytes. */
void inject_raw(struct env *e, struct uroce_wire_hdr *h, const void *payload, uint32_t len,
		uint32_t corrupt_at, uint32_t trunc);

void inject(struct env *e, struct uroce_wire_hdr *h, const void *payload, uint32_t len);

int to_init(struct uroce_tp_qp *qp, const struct ibv_qp_attr *over, int extra);

bool drop_first_atomic_ack(const struct frame_rec *r, void *arg);

/* An ACKNOWLEDGE with AETH @p syndrome for @p psn from host 1 to qp[0], handed to host 0
 * directly (not through the simulated wire). */
void inject_aeth_to0(struct env *e, uint8_t syndrome, uint32_t psn);
/* The same to host 0's QP number @p qpn (one that may be gone). */
void inject_aeth_to0_qpn(struct env *e, uint32_t qpn, uint8_t syndrome, uint32_t psn);

#endif
