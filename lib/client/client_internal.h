/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_CLIENT_INTERNAL_H
#define UROCE_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "client_obj.h"
#include "uroce_client.h"
#include "uroce_ctrl.h"
#include "uroce_shm.h"

/* About a microsecond of empty polls before poll_cq yields the CPU once (cq_wait.c). */
#define UROCE_CLIENT_EMPTY_POLLS 64

/* What poll_cq does with the CPU while a CQ stays empty (cq_wait.c). */
enum cl_cq_wait_mode {
	CL_CQ_WAIT_YIELD, /* sched_yield every UROCE_CLIENT_EMPTY_POLLS empty polls */
	CL_CQ_WAIT_SPIN,  /* never give the CPU up */
	CL_CQ_WAIT_BLOCK, /* yield for spin_ns, then sleep until a completion or block_ns */
};

struct cl_cq_wait {
	enum cl_cq_wait_mode mode;
	uint64_t spin_ns;  /* of empty polls in a row before the first sleep (block) */
	uint64_t block_ns; /* longest sleep of one poll_cq call (block) */
};

/* A context's daemon handle for the memfd of a run of moved pages (mr_share.c). */
struct cl_share {
	uintptr_t start, end; /* the run, page aligned */
	uint32_t region;      /* the daemon's handle of the memfd, this context's */
	uint64_t ino, dev;    /* the memfd */
};

/* Objects events can name, found by handle (async events carry handles). */
struct cl_obj {
	uint32_t handle;
	int type; /* UROCE_CTRL_REGION_QP, _CQ, _SRQ */
	void *obj;
};

struct uroce_client_ctx {
	int sock;
	uint32_t seq;
	/* Control calls are one request, one reply: serialized (verbs allows any thread to
	 * call them). */
	pthread_mutex_t lock;
	struct ibv_context *ibv;
	char dev_name[UROCE_CTRL_NAME_MAX];
	struct uroce_shm_region region; /* the async event ring */
	struct uroce_ring async_ring;   /* consumer */
	/* The async fd the application sees is an epoll fd over two: the read end of the
	 * daemon's async pipe (one byte per event in the ring; made non-blocking here) and
	 * the control socket (EPOLLRDHUP: the daemon died or dropped us, reported once as
	 * DEVICE_FATAL). */
	int async_fd;   /* epoll */
	int async_pipe; /* the read end of the daemon's async event pipe */
	/* The daemon's sleep announcement (in region) and our end of the socket pair that
	 * wakes it: a post sends one datagram when the announcement is up
	 * (cl_ring_doorbell). */
	struct uroce_shm_wake *wake;
	int wake_fd;
	/* Bumped by the daemon after it commits to any of our CQs: a thread blocked in
	 * poll_cq sleeps on it (cq_wait.c). In region. */
	struct uroce_shm_waiters *waiters;
	struct cl_cq_wait cq_wait; /* from the environment, at open */
	/* The doorbell summary (in region): a post sets its queue's slot. */
	struct uroce_summary doorbells;
	bool fatal_reported;
	pthread_mutex_t share_lock; /* registrations (mr_share.c), across their calls */
	struct cl_share *shares;    /* under mr_share.c's runs_lock */
	size_t nshares, cap_shares;
	struct uroce_client_ctx *share_next; /* mr_share.c's list of contexts with handles */
	bool share_listed;
	uint64_t share_pruned; /* mr_share.c's runs_removed when it last pruned shares */
	struct cl_obj *objs;
	size_t nobjs, cap_objs;
	/* Inherited through fork(): the parent's, never used here (fork.c). */
	bool forked;
	/* The daemon took our proof of CAP_NET_RAW (client_verbs.c, prove_net_raw): it
	 * holds for the connection's life. Atomic: any thread may prove. */
	bool net_raw_proven;
	struct uroce_client_ctx *fork_next; /* fork.c's list of open contexts */
};

/* control.c */
int cl_call(struct uroce_client_ctx *ctx, uint32_t cmd, const void *req, size_t req_len,
	    const int *fds, unsigned int nfds, void *rep, size_t rep_len, int *rep_fds,
	    unsigned int max_rep_fds);
/* cl_call with ctx->lock already held: for a caller that must change what other threads
 * read under that lock in the same step as the call (resize_cq). */
int cl_call_held(struct uroce_client_ctx *ctx, uint32_t cmd, const void *req, size_t req_len,
		 const int *fds, unsigned int nfds, void *rep, size_t rep_len, int *rep_fds,
		 unsigned int max_rep_fds);
/* A request that names one object and has no reply payload (destroy, dealloc...).
 * @return 0 or -errno. */
int cl_release(struct uroce_client_ctx *ctx, uint32_t cmd, uint32_t handle);
int cl_obj_add(struct uroce_client_ctx *ctx, uint32_t handle, int type, void *obj);
void cl_obj_del(struct uroce_client_ctx *ctx, uint32_t handle);
void *cl_obj_find(struct uroce_client_ctx *ctx, uint32_t handle, int type);
/* The application's fd for the read end @p pipe_fd of a daemon's event pipe (one byte
 * per event: the async fd, a completion channel's fd): an epoll fd in *@p fd, readable
 * when the daemon signalled an event or the control socket hung up, so that a waiter
 * wakes when the daemon dies. @p pipe_fd is made non-blocking (our own open file: the
 * daemon writes through another), so that whichever thread wins takes the byte. 0, or
 * -errno with *@p fd the epoll fd to close (or -1). */
int cl_event_fd_init(struct uroce_client_ctx *ctx, int pipe_fd, int *fd);
/* Takes one event (byte) of @p pipe_fd, waiting on @p fd as the application set it
 * (blocking, or EAGAIN when it made the fd non-blocking). @return 0, an errno (EAGAIN,
 * EINTR), or -1 when the daemon is gone (an event it signalled before still comes
 * first). */
int cl_event_take(int pipe_fd, int fd);

/* mr_share.c: the segments (uroce_ctrl_mr_seg) for [addr, addr + length), sharing what
 * is not shared yet. @return nseg, or -errno. Called with ctx->share_lock held. */
int cl_share_range(struct uroce_client_ctx *ctx, void *addr, size_t length,
		   struct uroce_ctrl_mr_seg **segs);
void cl_share_forget_all(struct uroce_client_ctx *ctx);
/* The process's table of moved runs (mr_share.c), for fork.c: taken after every context's
 * share_lock; while held, whether any run is left and whether (dev, ino) is one of their
 * memfds (the child's copies of those must become private). */
void cl_runs_lock(void);
void cl_runs_unlock(void);
bool cl_runs_empty(void);
bool cl_runs_have_memfd(uint64_t dev, uint64_t ino);

/* fork.c: contexts are tracked while open, so that a forked child can be given private
 * copies of their shared memory and never use them. */
void cl_fork_track(struct uroce_client_ctx *ctx);
void cl_fork_untrack(struct uroce_client_ctx *ctx);
/* uroce_shm_attach, and the mapping left out of fork() children (MADV_DONTFORK).
 * @return 0 or -errno; on success the region owns @p fd. */
int cl_attach_region(struct uroce_shm_region *r, int fd, uint32_t kind);

/* server_check.c: whether the daemon on connected @p sock (at @p path) may be trusted with
 * this process's memory: root, this user, or the user root gave the socket's folder to.
 * @return 0, -EACCES (said on stderr) or -errno of SO_PEERCRED. */
int cl_server_check(int sock, const char *path);

/* cq_wait.c: the wait policy, read from the environment (bad values: a line on stderr
 * and the default). */
void cl_cq_wait_init(struct cl_cq_wait *w);
/* poll_cq, under cq->lock: before it reads the ring. */
void cl_cq_before_poll(struct uroce_client_cq *cq);
/* poll_cq, under cq->lock, after finding the ring empty: true when the caller must, once
 * the lock is dropped, call cl_cq_sleep with what this stored. */
bool cl_cq_empty(struct uroce_client_cq *cq, uint32_t *snapshot, uint64_t *timeout_ns);
/* Without cq->lock: sched_yield (timeout 0), or sleep until the daemon commits to one of
 * the context's CQs after @p snapshot, or @p timeout_ns pass. */
void cl_cq_sleep(struct uroce_client_cq *cq, uint32_t snapshot, uint64_t timeout_ns);

/* client_verbs.c: the object helpers every slow-path file shares (their contracts are
 * there, with why): errno from -errno or errno and NULL; the client's side of an object
 * the daemon just made; the one release path of every object, and with a free after. */
void *cl_fail_null(int rc);
void *cl_obj_alloc(struct uroce_client_ctx *ctx, size_t size, uint32_t cmd, uint32_t handle);
int cl_obj_release(struct uroce_client_ctx *ctx, uint32_t cmd, uint32_t handle,
		   struct uroce_shm_region *region);
int cl_obj_destroy(struct uroce_client_ctx *ctx, uint32_t cmd, uint32_t handle, void *obj);

/* client_cq.c: at a QP's transition to RESET, takes its completions not yet polled out
 * of the ring of CQ @p ibv_cq (its SRQ's receive completions stay when @p keep_recv). */
void cl_cq_discard_qp(struct ibv_cq *ibv_cq, uint32_t qpn, bool keep_recv);

/* After a post's commit: announces the queue's doorbell @p slot in the summary, and
 * wakes the daemon if it announced a sleep (one datagram per announcement); errno
 * is kept (a post's caller reads only its return). */
void cl_ring_doorbell(struct uroce_client_ctx *ctx, uint32_t slot);

#endif
