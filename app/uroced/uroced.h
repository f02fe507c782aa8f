/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCED_H
#define UROCED_H

/*
 * uroced: lib/rnic (the software RNIC) on one DPDK port, serving applications over a
 * UNIX socket. The daemon owns the I/O the RNIC has none of: the port, the loopback path,
 * fault injection, capture, the host's IP stack, the clock and the control socket.
 *
 * Threads: one poll-mode lcore runs everything (packets, doorbells, timers and, every
 * control_poll_us, the control socket), so the RNIC and its transport are driven by one
 * thread, as their contracts require, without a lock on the data path. Idle, it sleeps in
 * one epoll on the control sockets, the port and the RNIC's wake-up fd, until the next
 * timer (main.c; doc/daemon.md, "The poll loop").
 *
 * Files: main.c (configuration, EAL, the poll loop, start and stop), net.c (all packet
 * I/O: port, loopback, fault injection, capture, host stack, kernel interface, and the
 * RNIC's ops), kernel_iface.c (the kernel interface's tap), control.c (the socket:
 * connections, credentials, messages), notify.c (readiness to the service manager),
 * telemetry.c (counters for DPDK's telemetry and Prometheus), log.c (log lines, log.h).
 *
 * State: all of it is in struct uroced, as lib/rnic's is in its struct uroce_rnic. main.c
 * holds the one instance and every function that needs state is handed it (@p d); no
 * other file has writable data (test uroced_no_mutable_state checks it).
 */

#include <net/if.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_telemetry.h>

#include "uroce_capture.h"
#include "uroce_conf.h"
#include "uroce_ctrl.h"
#include "uroce_ethdev.h"
#include "uroce_fault.h"
#include "uroce_ipstack.h"
#include "uroce_rnic.h"
#include "uroce_wire.h"

#include "log.h"

struct uroced;

/* ---- the service manager ------------------------------------------------------------ */

/*
 * Tells the service manager that started us (systemd, Type=notify) @p state, e.g.
 * "READY=1" once applications can connect, "STOPPING=1" when the loop ends. Nothing
 * happens when $NOTIFY_SOCKET is unset. @return 0; -EINVAL: $NOTIFY_SOCKET names no
 * socket; or the negative errno of socket()/connect()/send() (logged).
 */
int uroced_notify(struct uroced *d, const char *state);
/* Connects to $NOTIFY_SOCKET now, for every uroced_notify() after: before the daemon
 * becomes control.user. @return as uroced_notify(). */
int uroced_notify_open(struct uroced *d);

/* ---- connections ---------------------------------------------------------------------- */

/* One application's connection to the control socket. */
struct uroced_conn {
	int sock;
	struct uroce_rnic_client *client;
	/* The process that connected, as the kernel said at accept: its uid (SO_PEERCRED, in
	 * our user namespace), its pid and a pidfd of it (-1: it was gone), which says
	 * whether a number read of the pid is still that process's. */
	uid_t uid;
	pid_t pid;
	int pidfd;
	uint64_t accepted_ns; /* a connection that has not said HELLO by UROCED_HELLO_NS goes */
	/* Its request waits for a neighbour (uroce_rnic_handle() said false): no further
	 * request is read until the RNIC answers it. */
	bool waiting;
	struct uroced_conn *next;
};

/* ---- the daemon ----------------------------------------------------------------------- */

/* How long a connection may stay without HELLO: it holds one of control.max_clients, so
 * connections that never speak could otherwise lock every application out. */
#define UROCED_HELLO_NS 10000000000ull

#define UROCED_LOOP_SLOTS 512
#define UROCED_FRAME_MAX  9216

struct uroced_loop_frame {
	uint32_t len;
	bool flows_only; /* a raw packet QP's multicast frame: a copy for the flow rules */
	uint8_t data[UROCED_FRAME_MAX];
};

/* Shown by `uroce stat` as daemon.<name>, beside the RNIC's own daemon.* counters. */
#define UROCED_COUNTERS(X)                                                         \
	X(loopback_frames) /* frames delivered to ourselves without the wire */    \
	X(loopback_full)   /* loopback queue full: the transport retries */        \
	X(tx_refused)      /* the port refused a frame: the transport retries */   \
	X(tx_link_down)    /* frames for the wire dropped: the link was down */    \
	X(tx_in_place)     /* frames built in a port mbuf, not copied into one */  \
	X(tx_zero_copy)    /* ... whose payload the mbufs point at in the MR */     \
	X(link_changes)    /* the link went up or down (PORT_ACTIVE / PORT_ERR) */ \
	X(rx_flow_steered) /* frames a raw packet QP's flow rule took */          \
	X(rx_non_roce)     /* frames the host stack dropped (see ip.* for why) */  \
	X(kernel_rx)       /* ... of them and ARP, given to host.kernel_iface */   \
	X(kernel_tx)       /* frames the kernel sent out through the port */       \
	X(kernel_drops)    /* ... that the tap or the port refused */              \
	X(kernel_csum_completed) /* frames whose offloaded checksum was filled */ \
	X(clients_accepted)                                                        \
	X(clients_refused)                                                         \
	X(clients_silent) /* closed for saying no HELLO within 10 s */              \
	X(clients_closed)                                                          \
	X(bad_requests) /* malformed control messages (the client is dropped) */   \
	X(capture_frames)                                                          \
	X(capture_errors)                                                          \
	X(sleeps)         /* the poll loop slept in epoll (lcore.idle_sleep_us) */ \
	X(woke_doorbell)  /* ... and an application's post woke it */              \
	X(woke_frame)     /* ... a frame from the port */                          \
	X(woke_control)   /* ... a control request or connection */                \
	X(woke_timer)     /* ... nothing: a timer or the longest sleep was due */ \
	X(prometheus_scrapes) /* GET /metrics answered (telemetry.prometheus_listen) */

struct uroced_counters {
#define UROCED_COUNTER_FIELD(n) uint64_t n;
	UROCED_COUNTERS(UROCED_COUNTER_FIELD)
#undef UROCED_COUNTER_FIELD
};

/* kernel_iface.c's: the tap of host.kernel_iface and what it changed on the host. */
struct uroced_kernel {
	int tap_fd; /* -1: none */
	/* The port interface's settings as the daemon found them, put back when it closes the
	 * kernel interface: a daemon that stops leaves the host's interface as it was (its
	 * kernel answers ARP there again). ifname "" when nothing was changed. */
	struct {
		char ifname[IF_NAMESIZE];
		char rp_filter[16];
		char arp_ignore[16];
	} port_saved;
};

#define UROCED_TEL_STATS_MAX 1024
/* Prometheus scrapes: connections served at once, and the longest request. */
#define UROCED_PROM_CONNS    8
#define UROCED_PROM_REQ_MAX  2048

struct uroced_prom_conn {
	int fd; /* -1: free */
	uint64_t deadline_ns;
	uint32_t len;
	char req[UROCED_PROM_REQ_MAX];
};

/* telemetry.c's (see there for the threads). */
struct uroced_telemetry {
	pthread_mutex_t lock; /* guards snap, nsnap */
	struct uroce_ctrl_stat snap[UROCED_TEL_STATS_MAX];
	int nsnap;
	uint64_t published_ns;
	int prom_fd;
	struct uroced_prom_conn prom[UROCED_PROM_CONNS];
	/* A scrape's counters and its answer (prom_answer): too big for the stack. */
	struct uroce_ctrl_stat scrape[UROCED_TEL_STATS_MAX];
	char body[128 * 1024];
};

struct uroced {
	struct uroce_conf conf;
	struct uroced_log log;
	struct uroce_eth_port port;
	/* The port was configured and started (uroce_eth_port_open): its queues, multicast
	 * filter and counters may be used. True from setup to exit. */
	bool port_open;
	/* The carrier as the PMD reports it (uroce_eth_link_up), read every 10 ms by
	 * uroced_net_link_check(). Frames go to and come from the wire only while it is up;
	 * the RNIC reports the port ACTIVE only while it is up. */
	bool link_up;
	struct uroce_rnic *rnic;
	struct uroce_ip_stack *ip;
	struct uroce_fault rx_fault, tx_fault;
	struct uroce_pcap_writer cap;
	bool capturing;
	bool have_admin_group; /* control.admin_group named a group: admin_gid */
	gid_t admin_gid;
	bool have_socket_group; /* control.socket_group named a group: socket_gid */
	gid_t socket_gid;
	bool have_run_user; /* control.user named a user: run_uid, run_gid */
	uid_t run_uid;
	gid_t run_gid;
	/* control.socket with its folder's symlinks resolved: the name made and removed. */
	char socket_path[108];
	/* The device node made for middleware (uroce_ctrl.h), and its inode: removed at
	 * exit only if it is still the one this daemon made. Empty: none. devnode_fd holds
	 * its flock while the daemon lives (control.c, devnode_sweep); -1: none. */
	char devnode[sizeof(UROCE_CTRL_DEVNODE_DIR) + UROCE_CTRL_DEVNODE_NAME_MAX];
	ino_t devnode_ino;
	int devnode_fd;
	uint8_t mac[6];

	uint64_t now_ns; /* the clock of this poll turn */
	uint64_t ns_per_tsc_q32; /* ns per TSC tick, in 32.32 fixed point */
	uint64_t start_tsc;

	int listen_fd;
	int epfd;
	struct uroced_conn *conns;
	uint32_t nconns;

	/* The port's wake-up (uroce_eth_rx_wake_fd) is armed for a sleep. */
	bool rx_armed;

	struct uroced_loop_frame *loop;
	uint32_t loop_head, loop_tail;

	/* Connections closed during one poll are freed at its end (control.c): a later event
	 * of the same batch may still point at one, and must not find its memory reused by a
	 * new one. */
	struct uroced_conn *gone_conns;
	uint64_t silent_next_look; /* when close_silent_conns looks next */

	/* Connected once, while the daemon may still reach the socket (notify.c): a daemon
	 * that became control.user may not write a socket only root may (a test's
	 * listener, a manager's). -1: not connected. */
	int notify_fd;

	struct uroced_kernel kernel;
	struct uroced_telemetry tel;

	/* net.c's frames, too big for the stack: a received one whose checksum is filled in
	 * (rx_deliver), one the kernel sent (uroced_net_kernel_rx). */
	uint8_t csum_frame[UROCED_FRAME_MAX + 64];
	uint8_t kernel_frame[UROCED_FRAME_MAX + 64];

	struct uroced_counters cnt;
	volatile sig_atomic_t stop;
};

/* privileges.c */
/* Resolves control.user, before start-up. @return 0 or -EINVAL (logged). */
int uroced_user_resolve(struct uroced *d);
/* Once started: becomes control.user with only the capabilities still needed (none
 * unless the port or host.kernel_iface changed the host). Nothing without control.user.
 * @return 0 or -errno (logged). */
int uroced_privileges_drop(struct uroced *d);

/* net.c */
/* The port's host stack and I/O, before the RNIC; the RNIC's ops. */
int uroced_net_init(struct uroced *d);
void uroced_net_fini(struct uroced *d);
extern const struct uroce_rnic_ops uroced_rnic_ops;
/* Receives a burst from the loopback queue and, while the link is up, from the port;
 * returns frames handled. */
unsigned int uroced_net_rx(struct uroced *d);
/* Hands the frames queued for the port to the PMD (nothing while the link is down).
 * Returns the frames the port still holds, its ring full (port.tx_hold). */
unsigned int uroced_net_tx_flush(struct uroced *d);
/* Runs the time-driven work of net.c that is due at d->now_ns: frames held by the
 * fault injectors, neighbour requests and timeouts. Link up or down alike. */
void uroced_net_timers(struct uroced *d);
/* The earliest d->now_ns at which uroced_net_timers() has work (UINT64_MAX: none). */
uint64_t uroced_net_next_deadline(const struct uroced *d);
/* Sleeping (main.c): the descriptor readable when the port receives, -1 if none
 * (the loop then naps). */
int uroced_net_wake_fd(struct uroced *d);
/* Before a sleep: arms the port's wake-up and looks at the port once more.
 * @return UROCED_NET_SLEEP_* */
enum { UROCED_NET_SLEEP_FRAMES = -1, UROCED_NET_SLEEP_NAP, UROCED_NET_SLEEP_WAKES };
int uroced_net_sleep(struct uroced *d);
/* After a sleep that uroced_net_sleep() allowed: back to polling the port. */
void uroced_net_awake(struct uroced *d);
/* Frames the kernel sent on host.kernel_iface: out on the port (at most a batch).
 * @return frames read. */
unsigned int uroced_net_kernel_rx(struct uroced *d);
/* Reads the link state into d->link_up; on a change, logs it and has the RNIC raise
 * IBV_EVENT_PORT_ACTIVE or IBV_EVENT_PORT_ERR to every application. */
void uroced_net_link_check(struct uroced *d);

/* kernel_iface.c: the tap of host.kernel_iface, created with the endpoint's MAC, MTU and
 * IPv4 addresses. 0 or -errno (logged); nothing to do when the key is empty. */
int uroced_kernel_open(struct uroced *d);
void uroced_kernel_close(struct uroced *d);
/* Its descriptor (non-blocking, one frame per read and write), or -1: none. */
int uroced_kernel_fd(const struct uroced *d);
/* Whether uroced_kernel_close() has host settings to put back (the port interface's
 * sysctls), which wants CAP_NET_ADMIN. */
bool uroced_kernel_restores_at_exit(const struct uroced *d);

/* telemetry.c: the counters for DPDK's telemetry socket and Prometheus (see there).
 * init: 0 or -errno (logged: the listen address is bad or taken). publish: refreshes the
 * telemetry thread's snapshot when it is due; serve: answers scrapers (@p woke: the
 * control poll said UROCED_WOKE_TELEMETRY), else only drops those past their deadline,
 * without a system call. All on the poll lcore. */
int uroced_telemetry_init(struct uroced *d, telemetry_cb stats, telemetry_cb info);
void uroced_telemetry_publish(struct uroced *d, uint64_t now_ns);
void uroced_telemetry_serve(struct uroced *d, uint64_t now_ns, bool woke);
/* When a scraper that has not finished its request is to be dropped (UINT64_MAX: none). */
uint64_t uroced_telemetry_next_deadline(const struct uroced *d);
void uroced_telemetry_fini(struct uroced *d);
/* The telemetry thread's /uroce/stats and /uroce/info: what @p stats and @p info given to
 * uroced_telemetry_init() answer, with the instance (DPDK 22.11's callbacks get no
 * argument to find it by). */
int uroced_telemetry_stats(struct uroced *d, struct rte_tel_data *out);
int uroced_telemetry_info(const struct uroced *d, struct rte_tel_data *out);

/* control.c */
int uroced_control_init(struct uroced *d);
void uroced_control_fini(struct uroced *d);
/* What ended a wait in uroced_control_poll() (none of them: its timeout). */
enum uroced_woke {
	UROCED_WOKE_CONTROL = 1u << 0,  /* a control socket: a request, a connection */
	UROCED_WOKE_DOORBELL = 1u << 1, /* an application posted (uroce_rnic_wake_fd) */
	UROCED_WOKE_FRAME = 1u << 2,    /* the port received (uroced_net_wake_fd) */
	UROCED_WOKE_KERNEL = 1u << 3,   /* the kernel sent on its interface */
	UROCED_WOKE_TELEMETRY = 1u << 4, /* a Prometheus scraper connected or wrote */
};
/* Adds @p fd to the set uroced_control_poll() waits on, as a reason @p what to wake
 * (its reader drains it). 0 or -errno. */
int uroced_control_watch(struct uroced *d, int fd, enum uroced_woke what);
/* Handles what is waiting on the control sockets, waiting at most @p timeout_ns for it
 * or for a watched descriptor. @return the enum uroced_woke bits of what was ready. */
unsigned int uroced_control_poll(struct uroced *d, uint64_t timeout_ns);
/* ops->reply: sends on connection @p conn (a struct uroced_conn). */
int uroced_conn_send(void *io_ctx, void *conn, const void *msg, uint32_t len, const int *fds,
		     unsigned int nfds);
/* ops->memlock_limit: what the process that made connection @p conn may register
 * (RLIMIT_MEMLOCK, CAP_IPC_LOCK). */
uint64_t uroced_memlock_limit(void *io_ctx, void *conn);
/* The IP stack's resolutions: to the RNIC, and the connection it answered reads again. */
void uroced_neigh_resolved(void *ctx, uint64_t cookie, const uint8_t gid[16], const uint8_t *mac,
			   int err);

#endif
