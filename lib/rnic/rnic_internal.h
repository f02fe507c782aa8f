/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RNIC_INTERNAL_H
#define RNIC_INTERNAL_H

/*
 * lib/rnic's own structures, for its files and its fuzzer. Files: rnic.c (the device,
 * clients, replies, dispatch); the commands, by object: handles.c (the handle table,
 * teardown and the destroy commands), device.c (HELLO, queries, the host's commands),
 * memory.c (PDs, regions, MRs, MWs and how long they live), cq.c (and completion
 * channels), srq.c, qp.c (and multicast, flows), av.c (next hops: AHs, addresses),
 * xrc.c, import.c, rights.c, res.c; datapath.c (doorbells into the transport,
 * completions and events into shared rings), cm_glue.c (lib/cm on QP1 and the CM_*
 * commands), limits.c (what one user may hold), stats.c. The functions each file offers
 * the others are declared below under its name.
 *
 * Ownership: a client owns its objects (handles in its table); the RNIC owns its clients,
 * the lists the poll loop walks (QPs, SRQs, CQs with completions) and its counters. Every
 * object reaches its RNIC through its client (c->rnic), every transport callback through
 * its io_ctx, which is the RNIC.
 */

#include <stdbool.h>
#include <stdint.h>

#include <sys/types.h>

#include "uroce_cm.h"
#include "uroce_rnic.h"
#include "uroce_shm.h"
#include "uroce_transport.h"
#include "uroce_wire.h"

/* A parameter a function has for its type's sake (a handler that takes no fds). */
#define RNIC_UNUSED __attribute__((unused))

/* ---- logging (through ops->log; the host filters by level) -------------------------- */

void rnic_log(const struct uroce_rnic *nic, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define RNIC_ERR(nic, ...)  rnic_log(nic, UROCE_CONF_LOG_ERROR, __VA_ARGS__)
#define RNIC_WARN(nic, ...) rnic_log(nic, UROCE_CONF_LOG_WARNING, __VA_ARGS__)
#define RNIC_INFO(nic, ...) rnic_log(nic, UROCE_CONF_LOG_INFO, __VA_ARGS__)
#define RNIC_DBG(nic, ...)  rnic_log(nic, UROCE_CONF_LOG_DEBUG, __VA_ARGS__)

/* ---- objects of a connection ------------------------------------------------------------ */

enum rnic_obj_type {
	RNIC_OBJ_FREE = 0,
	RNIC_OBJ_PD,
	RNIC_OBJ_REGION,
	RNIC_OBJ_MR,
	RNIC_OBJ_CHANNEL,
	RNIC_OBJ_CQ,
	RNIC_OBJ_SRQ,
	RNIC_OBJ_QP,
	RNIC_OBJ_AH,
	RNIC_OBJ_CM_CHANNEL,
	RNIC_OBJ_CM_ID,
	RNIC_OBJ_MW,
	RNIC_OBJ_FLOW, /* a raw packet QP's rule: struct rnic_flow */
	RNIC_OBJ_XRCD, /* a handle on an XRC domain: struct rnic_xrcd */
	RNIC_OBJ_TYPES
};

struct uroce_rnic_client;

struct rnic_region { /* application memory that MRs map (a sealed memfd) */
	int fd;
	uint64_t size;
	struct uroce_rnic_mem *mems; /* its mappings that MRs may share (memory.c) */
};

/* The daemon's view of an MR's pages, shared by the MRs that lie in it and the zero-copy
 * frames that point into it: unmapped when its last MR is gone and the last frame has let
 * go. A mapping of one run of one region is on that region's list, so that the next MR
 * that lies in the same run maps nothing new; one stitched from several pieces serves its
 * own MR only. */
struct uroce_rnic_mem {
	struct uroce_rnic *nic; /* NULL once the RNIC is destroyed before the frames left */
	void *map;
	uint64_t map_len;
	uint64_t frames;        /* zero-copy frames holding it */
	uint32_t mrs;           /* live MRs that lie in it */
	bool mr_gone;           /* its last MR deregistered: on nic->held_mems until frames is 0 */
	struct uroce_rnic_mem *held_next, *held_prev;
	struct rnic_region *region; /* whose run it maps (NULL: stitched, or region gone) */
	uint64_t region_off;        /* where in the region's file the map starts */
	struct uroce_rnic_mem *region_next;
};

/* A PD and an MR may be named by handles of several clients (IMPORT_PD, IMPORT_MR): the
 * object lives while one does (refs). An explicit DEALLOC_PD or DEREG_MR through any of
 * them destroys the transport's object at once, as the kernel's shared uobject goes (tp
 * NULL: dead); the other handles then name nothing until released. */
struct rnic_pd {
	struct uroce_tp_pd *tp; /* NULL: deallocated through another handle */
	uint32_t refs;          /* handles naming it, over all clients */
	struct rnic_pd *orphan_next; /* on nic->orphan_pds */
};

struct rnic_mr {
	struct uroce_tp_mr *tp; /* NULL: deregistered through another handle */
	struct uroce_rnic_mem *mem;
	uint32_t refs;
	/* Whose pinned bytes it is (limits.c); NULL once that client has gone while an
	 * importer's handle keeps the MR. */
	struct uroce_rnic_client *pin_owner;
	uint32_t nmaps; /* the daemon's mappings charged for it (limits.c) */
	uint64_t span;  /* the bytes of its page span: what it pins (limits.c) */
	uint64_t iova, length; /* as registered: what IMPORT_MR reports */
	uint32_t access;
	struct rnic_mr *orphan_next; /* on nic->orphan_mrs */
};

/*
 * Daemon-to-client signalling (async events, completion and CM channels). The daemon
 * never does I/O on a descriptor a client also holds: the client could make it blocking
 * (O_NONBLOCK is a flag of the open file description, not of the descriptor), fill it or
 * drain it. So each signal is a pipe whose read end goes to the client, one byte per
 * event: readable exactly while events wait, one event per byte read (EFD_SEMAPHORE's
 * meaning). The daemon keeps the write end and a read description of its own, reopened
 * through /proc/self/fd, both O_NONBLOCK and seen by no one else: its writes never block
 * (a full pipe is counted, event_pipe_full) nor raise SIGPIPE (it is always a reader),
 * and it can take bytes back (CM channels). The pipe holds RNIC_EVENT_PIPE_BYTES (at
 * least): more events than the async ring holds, and more than a client has any use for
 * waiting; past that, the client loses only its own wake-ups.
 */
#define RNIC_EVENT_PIPE_BYTES 4096
struct rnic_event_pipe {
	int wfd; /* write end */
	int rfd; /* the daemon's own read description */
};

/** Makes @p p; *@p client_fd: the read end to send to the client, then close.
 *  @return 0 or -errno. */
int rnic_event_pipe_open(struct rnic_event_pipe *p, int *client_fd);
/** Safe on a pipe that was never opened (both -1) or already closed. */
void rnic_event_pipe_close(struct rnic_event_pipe *p);
/** One event: one byte in. @return true, or false when the pipe was full (counted). */
bool rnic_event_pipe_post(struct uroce_rnic *nic, struct rnic_event_pipe *p);
/** One byte back out. @return false when the pipe held none (the client read it). */
bool rnic_event_pipe_take(struct rnic_event_pipe *p);

struct rnic_channel {
	struct rnic_event_pipe pipe; /* one byte per CQ event */
	uint32_t refs;
};

struct rnic_cq {
	struct uroce_tp_cq *tp;
	struct uroce_rnic_client *client;
	uint32_t handle;
	struct uroce_shm_region region;
	struct uroce_ring ring; /* producer */
	struct uroce_ctrl_cq_ctl *ctl;
	struct rnic_channel *channel;
	bool overrun_reported;
};

/* An XRC domain (xrc.c): one per file (inode) that processes opened it with, or one
 * connection's own; each handle on it counts. */
struct rnic_xrcd {
	struct uroce_tp_xrcd *tp;
	bool shared;      /* of a file: dev and ino say which */
	dev_t dev;
	ino_t ino;
	uint32_t handles; /* RNIC_OBJ_XRCD handles of every connection */
	uint32_t idx;     /* in the daemon's list of shared domains (when shared) */
	/* A descriptor of the file (shared; else -1), kept while the domain lives as the
	 * kernel's keeps the inode: its number cannot name another file meanwhile. */
	int file_fd;
};

struct rnic_srq {
	struct uroce_tp_srq *tp;
	struct rnic_xrcd *xrcd; /* XRC SRQ: its domain; else NULL */
	struct uroce_rnic_client *client;
	uint32_t handle;
	struct uroce_shm_region region;
	struct uroce_ring ring; /* consumer */
	struct uroce_ctrl_queue_ctl *ctl;
	uint32_t taken; /* WQEs handed to the transport since creation */
	uint32_t idx;   /* in the daemon's SRQ list */
	uint32_t doorbell_slot; /* in the client's doorbell summary */
	uint32_t retiring_idx;  /* in the daemon's retiring list, or RNIC_NOT_RETIRING */
};

struct rnic_qp {
	struct uroce_tp_qp *tp;
	struct uroce_rnic_client *client;
	uint32_t handle;
	struct uroce_shm_region region;
	struct uroce_ring sq, rq; /* consumers */
	struct uroce_ctrl_queue_ctl *ctl;
	struct rnic_srq *srq;
	struct rnic_cq *send_cq, *recv_cq;
	uint32_t sq_taken, rq_taken;     /* WQEs handed to the transport */
	uint32_t sq_retired, rq_retired; /* last published */
	uint32_t idx;                    /* in the daemon's QP list */
	uint32_t doorbell_slot;          /* in the client's doorbell summary */
	uint32_t retiring_idx;           /* in the daemon's retiring list, or RNIC_NOT_RETIRING */
	/* multicast groups attached (the host stack's membership is counted per attach) */
	union ibv_gid mcast[UROCE_TP_MAX_MCAST_QP_ATTACH];
	uint32_t nmcast;
	uint32_t nflows; /* rules steering to it (raw packet): it stays while any do */
	struct rnic_xrcd *xrcd; /* XRC target: its domain; else NULL */
	/* RNIC_OBJ_QP handles on it, over every connection: 1, but for an XRC target that
	 * others opened (OPEN_QP); @client is one of their holders, @handle its handle. */
	uint32_t handles;
};

struct rnic_flow {
	struct uroce_tp_flow *tp;
	struct rnic_qp *qp;
};

/* A queue with doorbells: a QP or an SRQ (a client's doorbell slot, an entry of the
 * retiring list). */
struct rnic_queue_ref {
	struct rnic_qp *qp;   /* one of the two, or neither (a free slot) */
	struct rnic_srq *srq;
};
#define RNIC_NOT_RETIRING UINT32_MAX
/* The rings of a QP's or SRQ's region start after its header and its struct
 * uroce_ctrl_queue_ctl. */
#define RNIC_QUEUE_RING_OFFSET 256u

/* A handle is a slot of the connection's table (its low RNIC_HANDLE_SLOT_BITS, from 1) and
 * that slot's generation, one more at each object the slot holds: a handle of an object
 * destroyed since never names the next one in its slot (an async event queued for a
 * destroyed QP is dropped by the library, not taken for the QP created after it). */
#define RNIC_HANDLE_SLOT_BITS 20
#define RNIC_HANDLE_SLOT_MASK ((1u << RNIC_HANDLE_SLOT_BITS) - 1)

struct rnic_obj {
	enum rnic_obj_type type;
	uint32_t handle; /* the slot's last handle: its object's while type is not FREE */
	void *p; /* struct rnic_pd / rnic_region / rnic_mr / rnic_channel / rnic_cq / rnic_srq /
		  * rnic_qp / struct uroce_tp_ah */
};

/* A request waiting for neighbour resolution (MODIFY_QP with an address, CREATE_AH). */
struct rnic_pending {
	bool active;
	uint8_t msg[sizeof(struct uroce_ctrl_hdr) + sizeof(union uroce_ctrl_any_payload)];
	uint32_t len;
};

struct uroce_rnic_client {
	struct uroce_rnic *rnic;
	void *conn;  /* the host's connection, for ops->reply */
	uint64_t id; /* cookie for neighbour resolution */
	/* Who is on the other end, as the host's kernel says (SO_PEERCRED), never as the
	 * client claims. */
	pid_t pid;
	uid_t uid;
	gid_t gid;
	bool admin; /* the host's policy: may use ADMIN, CAPTURE_START */
	/* proved CAP_NET_RAW over the device's namespace (PROVE_NET_RAW, rights.c): raw
	 * packet QPs, flows, controlled Q_Keys */
	bool net_raw;
	char name[UROCE_CTRL_NAME_MAX];
	struct rnic_obj *objs; /* handle h is objs[(h & RNIC_HANDLE_SLOT_MASK) - 1] */
	uint32_t nobjs, cap_objs;
	uint32_t counts[RNIC_OBJ_TYPES];
	struct uroce_shm_region region; /* async ring, wake-up announcement, CQ waiters */
	struct uroce_ring async_ring;   /* producer */
	struct uroce_shm_wake *wake;    /* in region; NULL before HELLO */
	struct uroce_shm_waiters *waiters; /* in region: bumped after CQ commits */
	/* The doorbell summary in region (datapath.c), and what each slot is: a QP or an
	 * SRQ of this client, or free. Slots are handed out lowest free first. */
	struct uroce_summary doorbells;
	struct rnic_queue_ref *slots;
	uint32_t nslots, cap_slots; /* slots[0, nslots) were ever used */
	uint32_t *free_slots;       /* a stack of the released ones */
	uint32_t nfree_slots, cap_free_slots;
	struct rnic_event_pipe async_pipe; /* one byte per event in async_ring */
	/* The daemon's end of the client's wake-up socket pair (in nic->wake_epfd): the
	 * client sends a datagram on its own end after a post during a sleep. */
	int wake_fd;
	uint64_t pinned; /* bytes of its MRs' page spans (limits.c) */
	uint64_t maps;   /* the daemon's mappings its MRs hold (limits.c) */
	/* Its context region's file, which a token (IMPORT_CONTEXT) must be, and the id of
	 * the client whose PDs and MRs it may import (0: none). import.c */
	dev_t region_dev;
	ino_t region_ino;
	uint64_t import_from;
	struct rnic_pending pending;
	struct uroce_rnic_client *next;
};

/* ---- the RNIC ------------------------------------------------------------------------ */

#define RNIC_COUNTERS(X)                                                       \
	X(bad_wqe) /* WQEs the transport refused: their QP went to error */    \
	X(cq_overruns)                                                         \
	X(cq_waiter_wakes) /* application threads woken in poll_cq (futex) */ \
	X(async_events)                                                        \
	X(async_lost)     /* an application's async event ring was full */     \
	X(admin_refused)  /* ADMIN/CAPTURE_START from a client not an admin */ \
	X(qkey_refused)   /* a controlled Q_Key asked by an unprivileged client */ \
	X(limit_refused)  /* requests beyond [limits] or RLIMIT_MEMLOCK (limits.c) */ \
	X(cm_events)      /* rdma_cm events queued for applications */         \
	X(cm_events_lost) /* no memory for an event */                         \
	X(event_pipe_full) /* an event's byte did not fit its client's pipe */  \
	X(cm_not_ours)    /* MADs to an IP address that is not ours */         \
	X(cm_backlog_full) /* REQs refused: the listener's backlog was full */ \
	X(cm_dropped)     /* MADs dropped on purpose (uroce cm-drop) */    \
	X(mr_dereg_held)  /* MRs deregistered while zero-copy frames held them */

struct rnic_counters {
#define RNIC_COUNTER_FIELD(n) uint64_t n;
	RNIC_COUNTERS(RNIC_COUNTER_FIELD)
#undef RNIC_COUNTER_FIELD
};

struct rnic_cm_id;

struct uroce_rnic {
	const struct uroce_rnic_ops *ops;
	void *io_ctx;
	struct uroce_conf conf;
	struct uroce_tp_dev *dev;
	struct uroce_cm *cm;
	struct uroce_ip_stack *ip; /* the host's */
	enum ibv_mtu active_mtu;
	union ibv_gid gids[UROCE_TP_MAX_GID];
	uint8_t ngids;
	uint8_t mac[6];

	struct uroce_rnic_client *clients;
	uint32_t nclients;
	/* An epoll fd over every client's wake_fd: readable when an application posted
	 * while we slept. Drained by uroce_rnic_sleep_end(). */
	int wake_epfd;
	uint64_t next_client_id;

	struct rnic_qp **qps;
	uint32_t nqps, cap_qps;
	struct rnic_srq **srqs;
	uint32_t nsrqs, cap_srqs;
	struct rnic_xrcd **xrcds; /* the shared ones (xrc.c), by file */
	uint32_t nxrcds, cap_xrcds;
	/* Queues with WQEs the transport holds: their retired counts are published each
	 * turn until none is outstanding (unsignaled WQEs retire without a completion). */
	struct rnic_queue_ref *retiring;
	uint32_t nretiring, cap_retiring;
	unsigned int doorbell_work; /* WQEs taken by the current uroce_rnic_doorbells() */

	/* cm_glue.c */
	struct rnic_cm_id *cm_ids; /* every CM id, for neighbour callbacks */
	uint64_t cm_serial;
	/* CM ids whose CONNECT_REQUEST found no owner: destroyed on the next turn. */
	struct uroce_cm_id *orphans[64];
	unsigned int norphans;
	uint32_t drop_attr, drop_left; /* uroce cm-drop */

	/* Numbers from getrandom() for identifiers (QPN base, key bytes, CM ids, start
	 * PSNs), a batch at a time: they are made on the control path only. Off when the
	 * host gave a seed (a run to reproduce). */
	bool random_ok;
	unsigned int random_left;
	uint64_t random_pool[32];

	uint64_t mappings; /* live mmaps of application memory and rings (leak checks) */
	/* Memory of deregistered MRs that zero-copy frames still point into. */
	struct uroce_rnic_mem *held_mems;
	/* PDs and MRs whose last handle went while another client's objects still used them
	 * (an importer's QP on a PD, a window bound to an MR): freed once those have gone
	 * (rnic_orphans_retry). */
	struct rnic_pd *orphan_pds;
	struct rnic_mr *orphan_mrs;
	struct rnic_counters cnt;
};

static inline uint64_t rnic_now(const struct uroce_rnic *nic)
{
	return nic->ops->now_ns(nic->io_ctx);
}

/* The usual reply to a command: a status and a payload, no file descriptors. */
#define REPLY(c, h, st, p, l) uroce_rnic_reply(c, h, st, p, l, NULL, 0)

/* ---- the commands ------------------------------------------------------------------- */

/*
 * One handler per row of UROCE_CTRL_COMMANDS (uroce_ctrl.h): rnic_cmd_<name>(), in the
 * file of its object (below; CM_* in cm_glue.c), called through rnic.c's dispatch table.
 * It gets a request that uroce_ctrl_check_request() passed, from a client past HELLO and,
 * for admin-only commands, an administrator: @p payload is exactly the row's request
 * struct (tail included), @p fds exactly its descriptors, which the handler then owns.
 * Every value in it is checked by the handler or by the transport (which returns the
 * errno rdma-core would) before use. It answers with uroce_rnic_reply(), or leaves the
 * request in c->pending (rnic_resolve(), av.c), to be handled again once the neighbour
 * is known.
 */
typedef void rnic_cmd_handler(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			      const void *payload, const int *fds);
#define RNIC_CMD_DECLARE(NAME, name, ...) rnic_cmd_handler rnic_cmd_##name;
UROCE_CTRL_COMMANDS(RNIC_CMD_DECLARE)
#undef RNIC_CMD_DECLARE

/* ---- the functions of each file, under its name --------------------------------------- */

/* rnic.c */
/* The next unpredictable number (getrandom(), batched); aborts if the kernel has none. */
uint64_t rnic_random(void *io_ctx);
/* Handles one validated request; uroce_rnic_handle() without the HELLO and admin checks
 * being skipped. @return true when it was answered (false: kept in c->pending). */
bool rnic_handle(struct uroce_rnic_client *c, const uint8_t *msg, uint32_t len, const int *fds,
		 unsigned int nfds);
/* Called again for c->pending once the neighbour is known (mac) or failed (err). */
void rnic_handle_resolved(struct uroce_rnic_client *c, const uint8_t *mac, int err);
/* Gives @p c its wake-up socket pair (c->wake_fd, watched by nic->wake_epfd);
 * *@p client_fd: the client's end, to send, then close. @return 0 or -errno. */
int rnic_wake_add(struct uroce_rnic_client *c, int *client_fd);
/* Takes @p c's wake-up socket out of the set and closes it (none: nothing). */
void rnic_wake_del(struct uroce_rnic_client *c);

/* handles.c */
void *rnic_obj_get(struct uroce_rnic_client *c, uint32_t handle, enum rnic_obj_type type);
uint32_t rnic_obj_add(struct uroce_rnic_client *c, enum rnic_obj_type type,
		      void *p); /* 0: no memory */
void rnic_obj_del(struct uroce_rnic_client *c, uint32_t handle);
/* Every object of @p c goes, dependents first, through the destructors below: each
 * rnic_destroy_<type>() (rnic_dealloc_pd()) lets handle @p h of @p c and what it names
 * go, or nothing, and returns the errno (the transport's, or -EBUSY while something
 * uses it); the destroy commands call them too. */
void rnic_client_free_objects(struct uroce_rnic_client *c);
/* Makes room for one more element in the array *@p array (a pointer to the array's
 * pointer) of @p n elements of @p elem_size bytes, *@p cap allocated: doubles it when
 * full. @return 0 or -ENOMEM (the array is as it was). */
int rnic_array_room(void *array, uint32_t n, uint32_t *cap, size_t elem_size);
int rnic_list_add(void ***list, uint32_t *n, uint32_t *cap, void *item, uint32_t *idx);
/* Takes element @p idx out of @p list of *@p n, the last one moving into its place.
 * @return @p idx. */
int rnic_list_del(void **list, uint32_t *n, uint32_t idx);
/* A shared region for one object's rings; counts as a mapping until closed. */
int rnic_shm_create(struct uroce_rnic *nic, struct uroce_shm_region *r, const char *name,
		    uint64_t size, uint32_t kind);
void rnic_shm_close(struct uroce_rnic *nic, struct uroce_shm_region *r);
/* The reply to a command that made an object: its handle, or -ENOMEM for handle 0 (no
 * slot in the table). */
void rnic_reply_handle(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
		       uint32_t handle);
/* CREATE_CHANNEL and CM_CREATE_CHANNEL: a new object of @p type, @p size bytes zeroed,
 * whose struct rnic_event_pipe at @p pipe_offset is opened, and a handle of @p c on it;
 * answers with the handle and the client's end of the pipe. @return the object, or NULL
 * when it was refused (answered with the errno: the limit's, -ENOMEM or the pipe's;
 * nothing kept). */
void *rnic_event_channel_create(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
				enum rnic_obj_type type, size_t size, size_t pipe_offset);

/* memory.c */
/* The transport PD a handle names, or NULL (no such PD, or deallocated through another
 * client's handle). */
struct uroce_tp_pd *rnic_pd_get(struct uroce_rnic_client *c, uint32_t handle);
/* Handle @p h of @p c goes; the object with it when no other handle names it. */
void rnic_pd_release(struct uroce_rnic_client *c, uint32_t h, struct rnic_pd *pd);
void rnic_mr_release(struct uroce_rnic_client *c, uint32_t h, struct rnic_mr *m);
int rnic_dealloc_pd(struct uroce_rnic_client *c, uint32_t h, struct rnic_pd *pd);
int rnic_destroy_mr(struct uroce_rnic_client *c, uint32_t h, struct rnic_mr *m);
void rnic_destroy_region(struct uroce_rnic_client *c, uint32_t h, struct rnic_region *r);
/* Frees the orphans nothing uses any more; @p final (the RNIC goes, every client gone):
 * all of them. */
void rnic_orphans_retry(struct uroce_rnic *nic, bool final);
/* How many there are (`uroce stat`: orphans). */
uint64_t rnic_orphans(const struct uroce_rnic *nic);
/* @p c's objects have gone: the orphans that waited for them go too, and an orphan
 * charged to @p c is charged to a client still here (or nobody). */
void rnic_orphans_client_gone(struct uroce_rnic_client *c);
/* At RNIC destruction: memory zero-copy frames still hold is theirs to unmap. */
void rnic_mems_orphan(struct uroce_rnic *nic);

/* cq.c */
int rnic_destroy_cq(struct uroce_rnic_client *c, uint32_t h, struct rnic_cq *q);
int rnic_destroy_channel(struct uroce_rnic_client *c, uint32_t h, struct rnic_channel *ch);

/* srq.c */
int rnic_destroy_srq(struct uroce_rnic_client *c, uint32_t h, struct rnic_srq *s);

/* qp.c */
int rnic_destroy_qp(struct uroce_rnic_client *c, uint32_t h, struct rnic_qp *q);
void rnic_destroy_flow(struct uroce_rnic_client *c, uint32_t h, struct rnic_flow *f);
/* multicast: ATTACH_MCAST / DETACH_MCAST, and leaving on QP destroy */
int rnic_mcast_attach(struct rnic_qp *q, const union ibv_gid *gid);
int rnic_mcast_detach(struct rnic_qp *q, const union ibv_gid *gid);

/* av.c */
/* The next hop for a GID: 1 and @p mac filled, 0 when the request now waits for the
 * neighbour (kept in c->pending), or a negative errno. */
int rnic_resolve(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h, const void *payload,
		 const struct ibv_ah_attr *ah, uint8_t mac[6]);

/* device.c: commands only */

/* xrc.c */
/* Gives up handle @p h on @p x (the domain goes with its last handle). -EBUSY, nothing
 * changed, while @p c has an XRC SRQ or target QP in it. */
int rnic_xrcd_close(struct uroce_rnic_client *c, uint32_t h, struct rnic_xrcd *x);
/* Gives up handle @p h of @p c on the XRC target @p q that other handles still name
 * (q->handles > 1), moving q to another holder if @p c held it. */
void rnic_xrc_qp_close(struct uroce_rnic_client *c, uint32_t h, struct rnic_qp *q);

/* import.c, rights.c, res.c: commands only */

/* datapath.c */
/* The work requests @p c posted so far, handed to the transport and processed, and the
 * completions that gives moved to the shared CQs: what a command must see of the work its
 * client posted before it (RESIZE_CQ counts the completions a CQ holds). */
void rnic_client_catch_up(struct uroce_rnic_client *c);
bool rnic_doorbells_moved(struct uroce_rnic *nic);
/* A QP's or SRQ's slot in its client's doorbell summary, written to its queue_ctl
 * (exactly one of @p qp, @p srq). @return 0 or -ENOMEM (none left, or no memory). */
int rnic_doorbell_slot_get(struct uroce_rnic_client *c, struct rnic_qp *qp, struct rnic_srq *srq);
/* At destruction: the slot goes back, the queue leaves the retiring list. */
void rnic_doorbell_slot_put(struct uroce_rnic_client *c, struct rnic_qp *qp, struct rnic_srq *srq);
void rnic_doorbell_slots_free(struct uroce_rnic_client *c);
unsigned int rnic_completions(struct uroce_rnic *nic);
void rnic_rq_refill(void *io_ctx, struct uroce_tp_qp *qp, struct uroce_tp_srq *srq);
void rnic_tp_event(void *io_ctx, enum ibv_event_type type, void *object);
void rnic_qp_publish_retired(struct rnic_qp *q);

/* cm_glue.c */
int rnic_cm_init(struct uroce_rnic *nic, uint64_t seed);
void rnic_cm_fini(struct uroce_rnic *nic);
/* Timers and deferred work; every turn of the poll loop. */
void rnic_cm_process(struct uroce_rnic *nic);
void rnic_cm_gsi_rx(void *io_ctx, const struct uroce_wire_pkt *pkt, uint64_t now_ns);
/* Destroys the connection's CM ids (REJ/DREQ on the wire) and channels. */
void rnic_cm_free_client(struct uroce_rnic_client *c);
/* The CM id's row of `uroce res show cm_id` (res.c) into @p r's cm_id part. */
void rnic_cm_id_res(const struct rnic_cm_id *id, struct uroce_ctrl_res_row *r);
/* A neighbour resolution for a CM id has settled; false if @p cookie is not a CM id's. */
bool rnic_cm_neigh_resolved(struct uroce_rnic *nic, uint64_t cookie, const uint8_t *mac, int err);
/* Drops the next @count MADs with attribute @attr that we send (uroce cm-drop). */
void rnic_cm_drop(struct uroce_rnic *nic, uint32_t attr, uint32_t count);

/* limits.c: each @return 0, or the errno the request fails with (counted as
 * limit_refused, logged at debug). */
/* One more object of @p type for @p c's user: -EAGAIN at [limits]. */
int rnic_limit_object(struct uroce_rnic_client *c, enum rnic_obj_type type);
/* HELLO of @p c: -EAGAIN when its user already has limits.clients greeted connections. */
int rnic_limit_client(struct uroce_rnic_client *c);
/* @p bytes more registered (pinned) by @p c: -ENOMEM beyond limits.mr_bytes for its user,
 * or beyond its process's RLIMIT_MEMLOCK (ops->memlock_limit). Charged by the caller in
 * c->pinned once the MR exists. */
int rnic_limit_pin(struct uroce_rnic_client *c, uint64_t bytes);
/* @p n more of the daemon's mappings for an MR of @p c: -ENOMEM beyond limits.mappings for
 * its user (what mmap answers at vm.max_map_count, which every tenant shares). Charged
 * by the caller in c->maps once the MR exists. */
int rnic_limit_maps(struct uroce_rnic_client *c, uint64_t n);

/* stats.c */
/* The counters @p viewer may see (per-QP lines: its user's QPs; an admin's: all). */
int rnic_stats(struct uroce_rnic *nic, const struct uroce_rnic_client *viewer, uint32_t flags,
	       struct uroce_ctrl_stat *out, uint32_t max);

#endif
