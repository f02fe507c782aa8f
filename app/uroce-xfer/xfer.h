/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_XFER_H
#define UROCE_XFER_H

/*
 * uroce-xfer: programs on the client library (lib/client) that prove it and the daemon:
 * rdma-core compatible ping-pongs, a data-verifying exerciser, bandwidth and latency,
 * and a peer for test/vm/guest/verbs-op in the rxe VM. Shared pieces live here: options,
 * the device (context, PD, port, GID), QP state changes, completion waits with a
 * timeout, the out-of-band TCP exchange (oob.c) and the data patterns.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "uroce_client.h"

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

/* Timing and logging */
uint64_t xfer_now_ns(void);
void xfer_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern bool xfer_verbose;
#define xfer_dbg(...) do { if (xfer_verbose) xfer_err(__VA_ARGS__); } while (0)

/* Device (common.c) */
int xfer_dev_open(struct xfer_dev *d, const struct xfer_opts *o);
void xfer_dev_close(struct xfer_dev *d);
/* The first RoCE v2 GID whose address is IPv4-mapped, or -1. */
int xfer_find_ipv4_gid(struct xfer_dev *d, union ibv_gid *gid);
enum ibv_mtu xfer_mtu_enum(int mtu);
int xfer_mtu_bytes(enum ibv_mtu m);
void *xfer_alloc(size_t len);
void xfer_free(void *p, size_t len);

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
uint32_t xfer_rand_psn(void);

/* Out-of-band exchange over TCP (oob.c). Every call has a timeout. */
int oob_listen_accept(int port, int timeout_ms);
int oob_connect(const char *host, int port, int timeout_ms);
int oob_write(int fd, const void *buf, size_t len, int timeout_ms);
/* Reads exactly len bytes; returns 0, or -1 (error, timeout, or EOF before len). */
int oob_read(int fd, void *buf, size_t len, int timeout_ms);
/* Reads what arrives (at most len, at least 1 byte); returns bytes, 0 on EOF, -1. */
long oob_read_some(int fd, void *buf, size_t len, int timeout_ms);
/* Reads a line (without the '\n'); returns its length or -1. */
long oob_read_line(int fd, char *buf, size_t cap, int timeout_ms);
/* rdma-core pingpong text: "%04x:%06x:%06x:%s" + NUL, 52 bytes; GID as 32 hex digits
 * of its bytes in order. */
#define OOB_PP_MSG_LEN 52
void oob_pp_format(char msg[OOB_PP_MSG_LEN], uint16_t lid, uint32_t qpn, uint32_t psn,
		   const union ibv_gid *gid);
int oob_pp_parse(const char msg[OOB_PP_MSG_LEN], uint16_t *lid, uint32_t *qpn, uint32_t *psn,
		 union ibv_gid *gid);

/* Data patterns (common.c): byte o of message (seed, size, iter). */
void xfer_pattern_fill(uint8_t *buf, size_t len, uint64_t seed, uint64_t size, uint64_t iter);
/* Offset of the first byte that differs from the pattern, or -1. */
long xfer_pattern_check(const uint8_t *buf, size_t len, uint64_t seed, uint64_t size,
			uint64_t iter);
uint8_t xfer_pattern_byte(uint64_t seed, uint64_t size, uint64_t iter, size_t off);
uint64_t xfer_mix64(uint64_t x);

/* Modes */
int xfer_rc_pingpong(const struct xfer_opts *o);
int xfer_ud_pingpong(const struct xfer_opts *o);
int xfer_ops(const struct xfer_opts *o);
int xfer_bw(const struct xfer_opts *o);
int xfer_lat(const struct xfer_opts *o);
int xfer_verbs_op(const struct xfer_opts *o);

#endif
