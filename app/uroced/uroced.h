/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCED_H
#define UROCED_H

/*
 * uroced: one DPDK port, one RoCEv2 device (lib/transport) on it, the host identity
 * (lib/ipstack), and the applications it serves over a UNIX socket and shared memory.
 *
 * Threads: one poll-mode lcore runs everything (packets, doorbells, timers and, every
 * control_poll_us, the control socket), so the transport is driven by one thread, as its
 * contract requires, without a lock on the data path. Sharding over more lcores keeps
 * that rule per device: see doc/daemon.md.
 *
 * Files: main.c (configuration, EAL, start and stop), net.c (all packet I/O: port,
 * loopback, fault injection, capture, host stack), control.c (the socket and message
 * handling), objects.c (the commands: verbs objects per connection), datapath.c
 * (doorbells into the transport, completions and events into shared rings), stats.c.
 */

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "uroce_capture.h"
#include "uroce_cm.h"
#include "uroce_conf.h"
#include "uroce_ctrl.h"
#include "uroce_ethdev.h"
#include "uroce_fault.h"
#include "uroce_ipstack.h"
#include "uroce_shm.h"
#include "uroce_transport.h"
#include "uroce_wire.h"

/* A parameter a function has for its type's sake (a handler that takes no fds). */
#define UD_UNUSED __attribute__((unused))

/* ---- logging ------------------------------------------------------------------------ */

extern int ud_log_level; /* enum uroce_conf_log_level */
void ud_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define UD_ERR(...) ud_log(UROCE_CONF_LOG_ERROR, __VA_ARGS__)
#define UD_WARN(...) ud_log(UROCE_CONF_LOG_WARNING, __VA_ARGS__)
#define UD_INFO(...) ud_log(UROCE_CONF_LOG_INFO, __VA_ARGS__)
#define UD_DBG(...)                                          \
	do {                                                 \
		if (ud_log_level >= UROCE_CONF_LOG_DEBUG)    \
			ud_log(UROCE_CONF_LOG_DEBUG, __VA_ARGS__); \
	} while (0)

/* ---- objects of a connection ------------------------------------------------------------ */

enum ud_obj_type {
	UD_OBJ_FREE = 0,
	UD_OBJ_PD,
	UD_OBJ_REGION,
	UD_OBJ_MR,
	UD_OBJ_CHANNEL,
	UD_OBJ_CQ,
	UD_OBJ_SRQ,
	UD_OBJ_QP,
	UD_OBJ_AH,
	UD_OBJ_CM_CHANNEL,
	UD_OBJ_CM_ID,
	UD_OBJ_TYPES
};

struct ud_client;

struct ud_region { /* application memory that MRs map (a sealed memfd) */
	int fd;
	uint64_t size;
};

struct ud_mr {
	struct uroce_tp_mr *tp;
	void *map; /* the daemon's view of the MR's pages */
	uint64_t map_len;
};

struct ud_channel {
	int efd; /* semaphore eventfd, shared with the application */
	uint32_t refs;
};

struct ud_cq {
	struct uroce_tp_cq *tp;
	struct ud_client *client;
	uint32_t handle;
	struct uroce_shm_region region;
	struct uroce_ring ring; /* producer */
	struct uroce_ctrl_cq_ctl *ctl;
	struct ud_channel *channel;
	bool ready;             /* on the daemon's ready list */
	bool overrun_reported;
};

struct ud_srq {
	struct uroce_tp_srq *tp;
	struct ud_client *client;
	uint32_t handle;
	struct uroce_shm_region region;
	struct uroce_ring ring; /* consumer */
	struct uroce_ctrl_queue_ctl *ctl;
	uint32_t taken;         /* WQEs handed to the transport since creation */
	uint32_t idx;           /* in the daemon's SRQ list */
};

struct ud_qp {
	struct uroce_tp_qp *tp;
	struct ud_client *client;
	uint32_t handle;
	struct uroce_shm_region region;
	struct uroce_ring sq, rq; /* consumers */
	struct uroce_ctrl_queue_ctl *ctl;
	struct ud_srq *srq;
	struct ud_cq *send_cq, *recv_cq;
	uint32_t sq_taken, rq_taken;       /* WQEs handed to the transport */
	uint32_t sq_retired, rq_retired;   /* last published */
	uint32_t idx;                      /* in the daemon's QP list */
	/* multicast groups attached (the host stack's membership is counted per attach) */
	union ibv_gid mcast[UROCE_TP_MAX_MCAST_QP_ATTACH];
	uint32_t nmcast;
};

struct ud_obj {
	enum ud_obj_type type;
	void *p; /* struct uroce_tp_pd / ud_region / ud_mr / ud_channel / ud_cq / ud_srq /
		  * ud_qp / struct uroce_tp_ah */
};

/* A request waiting for neighbour resolution (MODIFY_QP with an address, CREATE_AH). */
struct ud_pending {
	bool active;
	uint8_t msg[sizeof(struct uroce_ctrl_hdr) + sizeof(union uroce_ctrl_any_payload)];
	uint32_t len;
};

struct ud_client {
	int sock;
	uint64_t id; /* cookie for neighbour resolution */
	/* Who is on the other end, as the kernel says at accept (SO_PEERCRED), never as the
	 * client claims. */
	int pid;
	uid_t uid;
	gid_t gid;
	bool admin; /* root, or a member of control.admin_group: may use ADMIN, CAPTURE_START */
	char name[UROCE_CTRL_NAME_MAX];
	struct ud_obj *objs; /* handle h is objs[h - 1] */
	uint32_t nobjs, cap_objs;
	uint32_t counts[UD_OBJ_TYPES];
	struct uroce_shm_region region; /* async event ring */
	struct uroce_ring async_ring;   /* producer */
	int async_efd;
	struct ud_pending pending;
	struct ud_client *next;
};

/* ---- the daemon ----------------------------------------------------------------------- */

#define UD_LOOP_SLOTS 512
#define UD_FRAME_MAX 9216

struct ud_loop_frame {
	uint32_t len;
	uint8_t data[UD_FRAME_MAX];
};

#define UD_COUNTERS(X)                                                           \
	X(loopback_frames)   /* frames delivered to ourselves without the wire */    \
	X(loopback_full)     /* loopback queue full: the transport retries */        \
	X(tx_refused)        /* the port refused a frame: the transport retries */   \
	X(tx_link_down)      /* frames for the wire dropped: the link was down */    \
	X(link_changes)      /* the link went up or down (PORT_ACTIVE / PORT_ERR) */ \
	X(rx_non_roce)       /* frames the host stack dropped (see ip.* for why) */  \
	X(bad_wqe)           /* WQEs the transport refused: their QP went to error */ \
	X(cq_overruns)                                                               \
	X(async_events)                                                              \
	X(async_lost)        /* an application's async event ring was full */        \
	X(clients_accepted)                                                          \
	X(clients_refused)                                                           \
	X(clients_closed)                                                            \
	X(bad_requests)      /* malformed control messages (the client is dropped) */ \
	X(admin_refused)     /* ADMIN/CAPTURE_START from a client not root nor admin */ \
	X(capture_frames)                                                            \
	X(capture_errors)                                                            \
	X(cm_events)         /* rdma_cm events queued for applications */           \
	X(cm_events_lost)    /* no memory for an event, or its eventfd failed */     \
	X(cm_not_ours)       /* MADs to an IP address that is not ours */            \
	X(cm_dropped)        /* MADs dropped on purpose (uroce cm-drop) */

struct ud_counters {
#define UD_COUNTER_FIELD(n) uint64_t n;
	UD_COUNTERS(UD_COUNTER_FIELD)
#undef UD_COUNTER_FIELD
};

struct ud_daemon {
	struct uroce_conf conf;
	struct uroce_eth_port port;
	/* The port was configured and started (uroce_eth_port_open): its queues, multicast
	 * filter and counters may be used. True from setup to exit. */
	bool port_open;
	/* The carrier as the PMD reports it (uroce_eth_link_up), read every 10 ms by
	 * ud_net_link_check(). Frames go to and come from the wire only while it is up;
	 * QUERY_PORT reports the port ACTIVE only while it is up. */
	bool link_up;
	struct uroce_tp_dev *dev;
	struct uroce_cm *cm;
	struct uroce_ip_stack *ip;
	struct uroce_fault rx_fault, tx_fault;
	struct uroce_pcap_writer cap;
	bool capturing;
	bool have_admin_group; /* control.admin_group named a group: admin_gid */
	gid_t admin_gid;
	enum ibv_mtu active_mtu;
	union ibv_gid gids[UROCE_TP_MAX_GID];
	uint8_t ngids;
	uint8_t mac[6];

	uint64_t now_ns;
	uint64_t tsc_hz;
	uint64_t start_tsc;

	int listen_fd;
	int epfd;
	struct ud_client *clients;
	uint32_t nclients;
	uint64_t next_client_id;

	struct ud_qp **qps;
	uint32_t nqps, cap_qps;
	struct ud_srq **srqs;
	uint32_t nsrqs, cap_srqs;
	struct ud_cq **ready;
	uint32_t nready, cap_ready;

	struct ud_loop_frame *loop;
	uint32_t loop_head, loop_tail;

	uint64_t mappings; /* live mmaps of application memory and rings (leak checks) */
	struct ud_counters cnt;
	volatile sig_atomic_t stop;
};

extern struct ud_daemon ud;

/* net.c */
int ud_net_init(void);
void ud_net_fini(void);
/* Receives a burst from the loopback queue and, while the link is up, from the port;
 * returns frames handled. */
unsigned int ud_net_rx(void);
/* Hands the frames queued for the port to the PMD (nothing while the link is down). */
void ud_net_tx_flush(void);
/* Runs the time-driven work of net.c that is due at ud.now_ns: frames held by the fault
 * injectors, neighbour requests and timeouts. Link up or down alike. */
void ud_net_timers(void);
/* The earliest ud.now_ns at which ud_net_timers() has work (UINT64_MAX: none). */
uint64_t ud_net_next_deadline(void);
/* Reads the link state into ud.link_up; on a change, logs it and raises
 * IBV_EVENT_PORT_ACTIVE or IBV_EVENT_PORT_ERR to every application. */
void ud_net_link_check(void);
int ud_net_tx(void *io_ctx, const uint8_t *frame, uint32_t len);
int ud_capture_start(const char *path);
/* The same on a file the caller opened (CAPTURE_START); takes @p fd in every case. */
int ud_capture_start_fd(int fd);
void ud_capture_stop(void);
int ud_fault_set(const double rates[8]);

/* control.c */
int ud_control_init(void);
void ud_control_fini(void);
/* Handles what is waiting on the control sockets, waiting at most @p timeout_ns. */
void ud_control_poll(uint64_t timeout_ns);
void ud_client_reply(struct ud_client *c, const struct uroce_ctrl_hdr *req, int status,
		     const void *payload, uint32_t len, const int *fds, unsigned int nfds);
/* The usual reply to a command: a status and a payload, no file descriptors. */
#define REPLY(c, h, st, p, l) ud_client_reply(c, h, st, p, l, NULL, 0)
void ud_neigh_resolved(void *ctx, uint64_t cookie, const uint8_t gid[16], const uint8_t *mac,
		       int err);

/* ---- the commands ------------------------------------------------------------------- */

/*
 * One handler per row of UROCE_CTRL_COMMANDS (uroce_ctrl.h): ud_cmd_<name>(), in
 * objects.c (CM_* in cm.c), called through objects.c's dispatch table. It gets a request
 * that uroce_ctrl_check_request() passed, from a client past HELLO and, for admin-only
 * commands, an administrator: @p payload is exactly the row's request struct (tail
 * included), @p fds exactly its descriptors, which the handler then owns. It answers with
 * ud_client_reply(), or leaves the request in c->pending (resolve(), objects.c), to be
 * handled again once the neighbour is known.
 */
typedef void ud_cmd_handler(struct ud_client *c, const struct uroce_ctrl_hdr *h,
			    const void *payload, const int *fds);
#define UD_CMD_DECLARE(NAME, name, ...) ud_cmd_handler ud_cmd_##name;
UROCE_CTRL_COMMANDS(UD_CMD_DECLARE)
#undef UD_CMD_DECLARE

/* objects.c */
/* Handles one validated request. @return true when it was answered (false: it waits for
 * neighbour resolution and is kept in c->pending). */
bool ud_handle(struct ud_client *c, const uint8_t *msg, uint32_t len, const int *fds,
	       unsigned int nfds);
/* Called again for c->pending once the neighbour is known (mac) or failed (err). */
void ud_handle_resolved(struct ud_client *c, const uint8_t *mac, int err);
void ud_client_free_objects(struct ud_client *c);
void *ud_obj_get(struct ud_client *c, uint32_t handle, enum ud_obj_type type);
uint32_t ud_obj_add(struct ud_client *c, enum ud_obj_type type, void *p); /* 0: no memory */
void ud_obj_del(struct ud_client *c, uint32_t handle);

/* datapath.c */
unsigned int ud_doorbells(void);
unsigned int ud_completions(void);
void ud_cq_ready(void *io_ctx, struct uroce_tp_cq *cq);
void ud_rq_refill(void *io_ctx, struct uroce_tp_qp *qp);
void ud_tp_event(void *io_ctx, enum ibv_event_type type, void *object);
void ud_qp_publish_retired(struct ud_qp *q);
int ud_list_add(void ***list, uint32_t *n, uint32_t *cap, void *item, uint32_t *idx);

/* cm.c */
int ud_cm_init(uint64_t seed);
void ud_cm_fini(void);
/* Timers and deferred work; every turn of the poll loop. */
void ud_cm_process(void);
void ud_cm_gsi_rx(void *io_ctx, const struct uroce_wire_pkt *pkt, uint64_t now_ns);
/* Destroys the connection's CM ids (REJ/DREQ on the wire) and channels. */
void ud_cm_free_client(struct ud_client *c);
/* A neighbour resolution for a CM id has settled; false if @p cookie is not a CM id's. */
bool ud_cm_neigh_resolved(uint64_t cookie, const uint8_t *mac, int err);
void ud_cm_orphan(struct uroce_cm_id *cid);
/* Drops the next @count MADs with attribute @attr that we send (uroce cm-drop). */
void ud_cm_drop(uint32_t attr, uint32_t count);

/* multicast (objects.c): ATTACH_MCAST / DETACH_MCAST, and leaving on QP destroy */
int ud_mcast_attach(struct ud_qp *q, const union ibv_gid *gid);
int ud_mcast_detach(struct ud_qp *q, const union ibv_gid *gid);

/* stats.c */
int ud_stats(struct ud_client *c, uint32_t flags, struct uroce_ctrl_stat *out, uint32_t max);

#endif
