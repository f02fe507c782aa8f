/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_TEST_VERBS_API_FIXTURE_H
#define UROCE_TEST_VERBS_API_FIXTURE_H

/*
 * The drop-in libibverbs.so.1 through nothing but rdma-core's public API
 * (<infiniband/verbs.h>, compiled against the installed headers): one uroced on a
 * net_null port, both QPs of every test on its one device, connected to each other
 * through the device's own RoCEv2 GID (index 1). Every operation with its data checked,
 * and the error paths with the outcome rdma-core + rxe give (completion statuses,
 * returned errno and errno, async events, non-blocking fds).
 *
 * Each test runs in its own process (Criterion) with its own daemon. The library this
 * process runs on must be the build's, never the system's: checked before every test.
 * With UROCE_VERBS_REFERENCE=1 the same tests run on the system's libibverbs and its
 * first device (rxe), to check the expectations themselves (verbs_fixture.h).
 *
 * One executable, test_verbs_api, of one file per subject (test_verbs_<subject>.c) and
 * verbs_api_fixture.c: the daemon and the context every test runs on, suite `verbs`'s
 * init and fini, and the helpers that make, connect and free objects and check
 * completions. Below, under each file's heading, what it lends the others.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <infiniband/verbs.h>

#include "verbs_fixture.h"

/* ---------------------------------------------------------------- verbs_api_fixture.c */

#define IPV4 "10.9.1.1"
#define WAIT_MS 5000
#define QKEY 0x11111111u

extern struct vfx_daemon dmn;
extern struct ibv_context *ctx;
extern struct ibv_pd *pd;
extern struct ibv_device_attr dattr;
extern struct ibv_port_attr pattr;
extern union ibv_gid gid;
extern int gidx;

void check_library(void);
void open_ctx(void);
void suite_init(void);
void suite_fini(void);

#define LIVE_MAX 64
extern struct ibv_mr *live_mrs[LIVE_MAX];
extern struct ibv_qp *live_qps[LIVE_MAX];
extern struct ibv_cq *live_cqs[LIVE_MAX];
void live_add(void **table, void *obj);
void live_del(void **table, void *obj);

extern long hugepages_before;
long nr_hugepages(long set);

uint64_t now_ms(void);
void fill(uint8_t *p, size_t n, uint32_t seed);
int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int ms);
void expect(struct ibv_cq *cq, uint64_t id, enum ibv_wc_status st, struct ibv_wc *out);
void expect_ok(struct ibv_cq *cq, uint64_t id, enum ibv_wc_opcode op, struct ibv_wc *out);
void expect_none(struct ibv_cq *cq, int ms);

struct mbuf {
	uint8_t *p;
	size_t len;
	struct ibv_mr *mr;
};

#define ACC_ALL                                                                          \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |      \
	 IBV_ACCESS_REMOTE_ATOMIC)

void mb_make(struct mbuf *b, size_t len);
void mb_free(struct mbuf *b);
struct ibv_sge sge_of(const struct mbuf *b, size_t off, size_t len);
void post_send_ok(struct ibv_qp *qp, struct ibv_send_wr *wr);
void post_recv_ok(struct ibv_qp *qp, struct ibv_sge *sg, int nsge, uint64_t id);
void post_srq_recv_ok(struct ibv_srq *srq, struct ibv_sge *sg, uint64_t id);
void post_write(struct ibv_qp *qp, struct mbuf *src, uint64_t dst, uint32_t rkey, uint64_t id);

struct qp_opt {
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline;
	struct ibv_srq *srq;
	int sq_sig_all;
};

struct ibv_qp *qp_make(enum ibv_qp_type type, struct ibv_cq *scq, struct ibv_cq *rcq,
		       const struct qp_opt *o, struct ibv_qp_cap *cap_out);
int modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask);
int qp_init_attr(const struct ibv_qp *qp, struct ibv_qp_attr *a);
int qp_rtr_attr(const struct ibv_qp *qp, uint32_t dqpn, struct ibv_qp_attr *a);
int qp_rts_attr(const struct ibv_qp *qp, uint8_t rnr_retry, struct ibv_qp_attr *a);
void qp_to_init(struct ibv_qp *qp);
void qp_to_rtr(struct ibv_qp *qp, uint32_t dqpn);
void qp_to_rts(struct ibv_qp *qp, uint8_t rnr_retry);
void connect2(struct ibv_qp *a, struct ibv_qp *b, uint8_t rnr_a, uint8_t rnr_b);

struct pair {
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	struct ibv_qp_cap cap[2];
};

void pair_make(struct pair *p, enum ibv_qp_type type, const struct qp_opt *o,
	       uint8_t rnr_retry0);
void pair_free(struct pair *p);
struct ibv_qp_attr query_qp(struct ibv_qp *qp);
void expect_async(enum ibv_event_type type, struct ibv_async_event *out, int ms);
void expect_no_async(int ms);

/* ---------------------------------------------------------------- test_verbs_fork.c */

/* What a forked child found wrong, as its exit code: a child cannot use Criterion's
 * assertions (they report through the parent's test, and the teardown they run would
 * stop the parent's daemon). */
enum fork_child_result {
	FC_OK,
	FC_SNAPSHOT,      /* the registered range or a neighbour did not read as at the fork */
	FC_INHERITED,     /* a call on the parent's objects did not fail with EIO */
	FC_OWN_DEVICE,    /* the child could not open a device of its own */
	FC_OWN_PINGPONG,  /* or run a ping-pong on it */
};

int child_pingpong(void);

/* ---------------------------------------------------------------- test_verbs_limits.c */

/* The limits suite's daemon's limits, and the users its children take. */
#define LIMIT_QPS 4
#define LIMIT_CLIENT_QPS 3
#define LIMIT_MR_BYTES (256 * 1024)
#define LIMIT_CLIENTS 3
#define UID_A 61001
#define UID_B 61002

/* What a child says back (it cannot assert: its failures are its exit code). */
struct user_report {
	int made;   /* objects made before the first refusal */
	int err;    /* the refusal's errno (0: none) */
};

/* A child of this test as user @p uid (0: root), its RLIMIT_MEMLOCK @p memlock (both
 * limits; RLIM_INFINITY: the soft one raised to the hard one), running @p fn, which writes
 * one report to its pipe; then it waits for user_done(), holding what it made. */
struct user_proc {
	pid_t pid;
	int report_fd, go_fd;
	struct user_report rep;
};

void user_start(struct user_proc *u, uid_t uid, rlim_t memlock, void (*fn)(int report_fd));
int user_done(struct user_proc *u);
void report(int fd, int made, int err);
struct ibv_pd *child_pd(struct ibv_cq **cq);
void child_qps_until_refused(int fd);
void child_pingpong_reported(int fd);

/* ---------------------------------------------------------------- test_verbs_raw.c */

void child_raw_qp(int fd);

/* ---------------------------------------------------------------- test_verbs_xrc.c */

struct ibv_xrcd *xrcd_open(struct ibv_context *c, int fd, int oflags);

#endif
