/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_XFER_LOOPS_H
#define UROCE_XFER_LOOPS_H

/*
 * The static library uroce_xfer_loops: uroce-xfer's measuring loops (bw, lat) and what
 * they stand on (the clock, error lines, buffers, PSNs, the out-of-band exchange), with
 * no verbs call of their own, so that test/bench/verbs_bench.c runs the same loops
 * through libibverbs or through lib/client. The caller gives its calls (struct
 * xfer_verbs) and its completion wait (struct xfer_loop).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/* Timing and logging (util.c) */
uint64_t xfer_now_ns(void);
/* Prints "<xfer_prog>: <line>" on stderr. */
void xfer_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern const char *xfer_prog; /* "uroce-xfer" unless the program says otherwise */
extern bool xfer_verbose;
#define xfer_dbg(...) do { if (xfer_verbose) xfer_err(__VA_ARGS__); } while (0)

/* MTU codes, buffers, PSNs (util.c) */
enum ibv_mtu xfer_mtu_enum(int mtu);
int xfer_mtu_bytes(enum ibv_mtu m);
void *xfer_alloc(size_t len);
void xfer_free(void *p, size_t len);
uint32_t xfer_rand_psn(void);
uint64_t xfer_mix64(uint64_t x);

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

/* The measuring loops (loops.c) */

/* The data-path calls the loops make: lib/client's or libibverbs'. */
struct xfer_verbs {
	int (*post_send)(void *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
	int (*post_recv)(void *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
	int (*poll_cq)(void *cq, int max, struct ibv_wc *wc);
	const char *(*wc_status_str)(enum ibv_wc_status status);
};

/* One QP on one CQ, as the loops see it. */
struct xfer_loop {
	const struct xfer_verbs *v;
	void *qp;
	/* Waits up to timeout_ms for at least one completion on the QP's CQ; returns the
	 * count, 0 on timeout, -1 on error (printed). */
	int (*wait)(void *wait_arg, struct ibv_wc *wc, int max, int timeout_ms);
	void *wait_arg;
	int timeout_ms;
};

/* Polls @p cq until a completion or timeout_ms: 50 polls, then a sched_yield on every
 * empty poll for 2 ms, then usleep(50) (@p spin: never yields, as perftest). Returns the
 * count, 0 on timeout, -1 on a poll error. */
int xfer_poll_wait_on(const struct xfer_verbs *v, void *cq, struct ibv_wc *wc, int max,
		      int timeout_ms, bool spin);

/* What bw and lat exchange over TCP (the magic tells the programs apart). */
struct xfer_perf_msg {
	uint32_t magic;
	uint32_t qpn, psn;
	uint32_t rkey;
	uint64_t addr;
	uint8_t gid[16];
	uint64_t size, iters;
};
/* The exchange's connection: to @p server, or (NULL) from the client, who is given 4
 * times the timeout to come. Returns the fd or -1. */
int xfer_perf_open(const char *server, int port, int timeout_ms);
/* Sends @p me, reads @p peer: 0, or -1 (printed) when that fails or the magics differ. */
int xfer_perf_exchange(int fd, const struct xfer_perf_msg *me, struct xfer_perf_msg *peer,
		       int timeout_ms);
/* Both sides ready (their QPs at RTS) before the first packet, or both done. */
int xfer_perf_sync(int fd, int timeout_ms);

/* bw's sender: @p iters RDMA WRITEs of @p sge to (@p remote_addr, @p rkey), at most
 * @p window outstanding, wr_id the index, every 8th and the last one signalled. Sets
 * @p ns to the time it took; 0, or -1 (printed). */
int xfer_loop_bw(const struct xfer_loop *l, struct ibv_sge *sge, uint64_t iters, uint32_t window,
		 uint64_t remote_addr, uint32_t rkey, uint64_t *ns);

/* Posts @p n copies of @p wr: 0, or -1 (printed). */
int xfer_loop_post_recvs(const struct xfer_loop *l, struct ibv_recv_wr *wr, uint32_t n);

/* lat's work requests over 2 x @p size bytes at @p buf: receives into the first half, sends
 * (signalled; inline when @p size fits @p max_inline) from the second. */
struct xfer_lat_wrs {
	struct ibv_sge rsge, ssge;
	struct ibv_recv_wr rwr;
	struct ibv_send_wr swr;
};
void xfer_lat_wrs_init(struct xfer_lat_wrs *w, uint8_t *buf, uint64_t size, uint32_t lkey,
		       uint32_t max_inline);

/* lat's ping-pong over a QP whose send queue holds 2 and whose receives are posted. */
struct xfer_lat_run {
	struct ibv_recv_wr *rwr; /* reposted for each message received */
	struct ibv_send_wr *swr; /* signalled */
	uint64_t iters;
	bool initiator; /* sends first and times each round trip into rtt */
	long pause_us;  /* initiator: silence before each timed message */
	uint64_t *rtt;  /* initiator: iters round trips, ns */
};
int xfer_loop_lat(const struct xfer_loop *l, const struct xfer_lat_run *r);

/* Half round trips in microseconds, over @p n round trips (sorted in place). */
struct xfer_lat_stats {
	double median, p99, min, max, avg;
};
void xfer_lat_stats(uint64_t *rtt, uint64_t n, struct xfer_lat_stats *s);

#endif
