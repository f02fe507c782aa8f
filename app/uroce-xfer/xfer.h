/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_XFER_H
#define UROCE_XFER_H

/*
 * uroce-xfer: programs on the client library (lib/client) that prove it and the daemon:
 * rdma-core compatible ping-pongs, a data-verifying exerciser, bandwidth and latency,
 * and a peer for test/vm/guest/verbs-op in the rxe VM. Shared pieces live here: options,
 * the device (context, PD, port, GID), QP state changes, completion waits with a
 * timeout and the data patterns; the measuring loops, the clock and the out-of-band TCP
 * exchange are in xfer_loops.h.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "uroce_client.h"
#include "xfer_loops.h"

#define XFER_DEFAULT_PORT 18515
#define XFER_DEFAULT_TIMEOUT_MS 30000

struct xfer_opts {
	const char *socket;     /* -S; NULL: $UROCE_SOCKET */
	const char *server;     /* NULL: we are the server */
	int port;               /* -p TCP port of the exchange */
	int ib_port;            /* -i */
	int gid_index;          /* -g; -1: the first IPv4-mapped RoCE v2 GID */
	long size;              /* -s; -1: the mode's default */
	long iters;             /* -n; -1: the mode's default */
	int mtu;                /* -m 256..4096; 0: the mode's default */
	int rx_depth;           /* -r */
	bool events;            /* -e: sleep on CQ events */
	int timeout_ms;         /* -t (seconds on the command line) */
	bool verbose;           /* -v */
	/* ops */
	const char *transports; /* -T "rc,uc,ud" */
	const char *ops;        /* -O "send,send_imm,write,write_imm,read,fadd,cswap" */
	const char *sizes;      /* -z "0,1,63,..." */
	long count;             /* -c messages per size */
	uint64_t seed;          /* -x */
	bool lossy;             /* -L: UC/UD may lose messages (fault injection runs) */
	bool spoil;             /* --spoil: a test of the checker: one byte of the last
				 * message of every SEND/WRITE case is flipped before it goes */
	long max_bytes;         /* -B bytes per case (count is cut for large sizes) */
	/* bw */
	int window;             /* -w outstanding WRs */
	/* lat */
	long pause_us;          /* --pause-us: silence before each timed message */
	/* verbs_op */
	const char *op;         /* --op */
};

/* The device: one context, one PD, the port and our GID. */
struct xfer_dev {
	struct uroce_client_ctx *ctx;
	struct uroce_client_pd *pd;
	struct ibv_port_attr port_attr;
	int ib_port;
	int gid_index;
	union ibv_gid gid;
};

/* Device (common.c) */
int xfer_dev_open(struct xfer_dev *d, const struct xfer_opts *o);
void xfer_dev_close(struct xfer_dev *d);
/* The first RoCE v2 GID whose address is IPv4-mapped, or -1. */
int xfer_find_ipv4_gid(struct xfer_dev *d, union ibv_gid *gid);

struct uroce_client_qp *xfer_create_qp(struct xfer_dev *d, enum ibv_qp_type type,
				       struct uroce_client_cq *scq, struct uroce_client_cq *rcq,
				       uint32_t max_send_wr, uint32_t max_recv_wr,
				       uint32_t max_inline, struct ibv_qp_cap *cap_out);

struct xfer_peer {
	uint32_t qpn;
	uint32_t psn;
	union ibv_gid gid;
};
/* RESET -> INIT (access: remote write/read/atomic for RC, write for UC; qkey for UD). */
int xfer_qp_init(struct uroce_client_qp *qp, enum ibv_qp_type type, int ib_port,
		 unsigned int access, uint32_t qkey);
/* INIT -> RTR -> RTS; for UD only the states and sq_psn. hop_limit: as the peer
 * program does (rc_pingpong: 1; verbs-op: 64). */
int xfer_qp_connect(struct uroce_client_qp *qp, enum ibv_qp_type type, int ib_port,
		    int gid_index, enum ibv_mtu mtu, uint32_t my_psn,
		    const struct xfer_peer *peer, uint8_t hop_limit, uint8_t rd_atomic);
struct uroce_client_ah *xfer_create_ah(struct xfer_dev *d, int gid_index,
				       const union ibv_gid *dgid, uint8_t hop_limit);

/* The loops' calls (xfer_loops.h) on lib/client. */
extern const struct xfer_verbs xfer_client_verbs;
/* Waits up to timeout_ms for at least one completion; returns the count (>= 1), 0 on
 * timeout, -1 on a poll error. */
int xfer_poll_wait(struct uroce_client_cq *cq, struct ibv_wc *wc, int max, int timeout_ms);
/* As xfer_poll_wait, or, with a completion channel @p ch (-e; the CQ armed once after its
 * creation), sleeping on the channel between polls; @p events counts the CQ events taken
 * (to ack). Returns completions, 0 on timeout, -1 on error (printed). */
int xfer_cq_wait(struct uroce_client_cq *cq, struct uroce_client_channel *ch, struct ibv_wc *wc,
		 int max, int timeout_ms, unsigned int *events);
const char *xfer_wc_opcode_str(enum ibv_wc_opcode op);
/* ibv_wc_status_str's text (nothing here links libibverbs). */
void xfer_gid_str(const union ibv_gid *gid, char *buf, size_t len);

/* Data patterns (common.c): byte o of message (seed, size, iter). */
void xfer_pattern_fill(uint8_t *buf, size_t len, uint64_t seed, uint64_t size, uint64_t iter);
/* Offset of the first byte that differs from the pattern, or -1. */
long xfer_pattern_check(const uint8_t *buf, size_t len, uint64_t seed, uint64_t size,
			uint64_t iter);
uint8_t xfer_pattern_byte(uint64_t seed, uint64_t size, uint64_t iter, size_t off);

/* Modes */
int xfer_rc_pingpong(const struct xfer_opts *o);
int xfer_ud_pingpong(const struct xfer_opts *o);
int xfer_ops(const struct xfer_opts *o);
int xfer_bw(const struct xfer_opts *o);
int xfer_lat(const struct xfer_opts *o);
int xfer_verbs_op(const struct xfer_opts *o);

#endif
