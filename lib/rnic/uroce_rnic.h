/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_RNIC_H
#define UROCE_RNIC_H

/**
 * @file
 * lib/rnic: the software RNIC. One RoCEv2 device (lib/transport), its connection manager
 * (lib/cm) and the applications it serves: their verbs objects, made on the commands of
 * the control protocol (lib/ctrl), their shared-memory rings (lib/shm), completions and
 * async events. It is what a hardware RNIC and its kernel driver are to an application.
 *
 * Sans I/O. It opens no socket, touches no port and reads no clock: its host (uroced)
 * hands it requests, frames and time, and it answers through struct uroce_rnic_ops. It
 * has no global state: everything is in the struct uroce_rnic it is given.
 *
 * Threads: one. Every function here, and every callback it makes, runs on the thread
 * that polls the device, as lib/transport requires; nothing takes a lock.
 *
 * A poll loop drives it, each turn:
 *
 *   uroce_rnic_doorbells()    WQEs the applications posted -> the transport
 *   uroce_rnic_rx_parsed()    each RoCE frame the host received, as its IP stack parsed
 *                             it (uroce_rnic_rx: a frame not parsed yet)
 *   uroce_rnic_process()      retransmission and CM timers, when due, then the turn's
 *                             completions -> the applications' CQ rings
 *
 * and, for each control message a client sends, uroce_rnic_handle().
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <infiniband/verbs.h>

#include "uroce_conf.h"
#include "uroce_ctrl.h"
#include "uroce_ipstack.h"
#include "uroce_transport.h"

struct uroce_rnic;
/** One application connection: its objects, rings and identity. */
struct uroce_rnic_client;

/** What the port's carrier is, for QUERY_PORT (IBA 14.2.5.6 PortPhysicalState). */
enum uroce_rnic_link {
	UROCE_RNIC_LINK_DISABLED, /**< no port: Disabled */
	UROCE_RNIC_LINK_DOWN,     /**< port started, no carrier: Polling, port DOWN */
	UROCE_RNIC_LINK_UP,       /**< carrier: LinkUp, port ACTIVE */
};

/** An application's registered memory as the daemon maps it; zero-copy frames pin it. */
struct uroce_rnic_mem;

/* A piece of a frame's payload in registered memory (ops->tx_zc) is lib/transport's
 * struct uroce_tp_tx_seg: its mr_ctx is the struct uroce_rnic_mem to hold while a frame
 * points at addr. */

/** A frame now points into @p mem: its pages stay mapped until the matching release. */
void uroce_rnic_mem_hold(struct uroce_rnic_mem *mem);
/** The frame let go: unmaps @p mem if its MR is gone and no other frame holds it. Safe
 *  after uroce_rnic_destroy(). Same thread as every other call. */
void uroce_rnic_mem_release(struct uroce_rnic_mem *mem);

/** What the RNIC asks of its host: every I/O, the clock, logs and the host's settings. */
struct uroce_rnic_ops {
	/**
	 * Sends one complete reply message (header included) and @p nfds descriptors on the
	 * connection @p conn (uroce_rnic_client_new()). Must not block: a client that does
	 * not read its replies only hurts itself.
	 * @return 0 or -errno (logged at debug by the caller; the reply is lost).
	 */
	int (*reply)(void *io_ctx, void *conn, const void *msg, uint32_t len, const int *fds,
		     unsigned int nfds);
	/*
	 * The frame functions, lib/transport's contracts (uroce_tp_tx_fn and the rest): the
	 * RNIC hands them to its transport device as they are, with io_ctx, so the data
	 * path calls the host directly. The RNIC calls tx itself for the CM's frames.
	 */
	/** Transmits one RoCE frame (transport or CM), to the wire or back to this device.
	 *  @return 0 (sent, or dropped and counted by the host), -EAGAIN: not taken, the
	 *  transport retries it. */
	uroce_tp_tx_fn tx;
	/** Optional (NULL: every frame goes through tx): a buffer in the port's own memory,
	 *  or NULL when this frame must go through tx (to this device, captured, under fault
	 *  injection...). tx_commit then sends it: 0, or -EAGAIN as tx. */
	uroce_tp_tx_buf_fn tx_buf;
	uroce_tp_tx_commit_fn tx_commit;
	/**
	 * Optional (NULL: payloads are copied into frames): sends a frame whose payload
	 * stays in applications' registered memory. The host calls uroce_rnic_mem_hold() on
	 * each piece's mr_ctx before it keeps a pointer into it, and
	 * uroce_rnic_mem_release() once the frame has left its hands (sent, copied by the
	 * PMD, or dropped): until then the pages stay mapped, whatever the application
	 * deregisters or however it exits. transport.zero_copy_min sets which payloads are
	 * offered. -ENOTSUP: not this frame (it goes through tx_buf or tx whole, e.g. to
	 * this device, captured, or under fault injection).
	 */
	uroce_tp_tx_zc_fn tx_zc;
	/** The port's state and speed in Mbit/s (0: unknown). */
	enum uroce_rnic_link (*link)(void *io_ctx, uint32_t *speed_mbps);
	/** Lets frames to multicast MAC @p mac in (add) or no longer (del). 0 or -errno. */
	int (*mcast_add)(void *io_ctx, const uint8_t mac[6]);
	int (*mcast_del)(void *io_ctx, const uint8_t mac[6]);
	/**
	 * Optional (NULL: no limit): the bytes the process that made connection @p conn
	 * (uroce_rnic_client_new) may register, as the kernel charges an MR's pages against
	 * RLIMIT_MEMLOCK: its soft limit, UINT64_MAX when it is infinite or the process has
	 * CAP_IPC_LOCK, each as the host's kernel proves it of that process (never of
	 * whatever process has its pid now). Asked at each registration, as the kernel
	 * reads it then. 0 when the host cannot tell (the process is gone).
	 */
	uint64_t (*memlock_limit)(void *io_ctx, void *conn);
	/** The host's clock in ns, the one every time passed to lib/transport and lib/cm
	 * is on. Called often: a cached value of the current poll turn is right. */
	uint64_t (*now_ns)(void *io_ctx);
	/** One log line at @p level (enum uroce_conf_log_level); the host filters. */
	void (*log)(void *io_ctx, int level, const char *fmt, va_list ap);
	/**
	 * ADMIN requests that set the host's I/O: CAPTURE_STOP, FAULT and LOG_LEVEL
	 * (CM_DROP is the RNIC's own). Only an administrator's request reaches it.
	 * @return 0 or -errno for the reply (-EINVAL: an op it does not know).
	 */
	int (*admin)(void *io_ctx, const struct uroce_ctrl_admin_req *req);
	/** CAPTURE_START: writes every RoCE frame to the pcap file @p fd (owned from here,
	 * in every case). 0 or -errno. */
	int (*capture_start)(void *io_ctx, int fd);
	/**
	 * The host's own counters for STATS: calls @p put once per counter, with a prefix
	 * ("port.", "fault.rx.", "daemon.") and a name, as `uroce stat` shows them.
	 */
	void (*stats)(void *io_ctx,
		      void (*put)(void *out, const char *prefix, const char *name, uint64_t v),
		      void *out);
};

struct uroce_rnic_cfg {
	const struct uroce_conf *conf; /**< host.*, transport.*, cm.* (copied) */
	uint8_t mac[6];                /**< the port's, or host.mac */
	uint32_t eth_mtu;              /**< the port's MTU: gives the active IB MTU */
	/** The host's IP stack (neighbour resolution, multicast groups): the host owns it,
	 * feeds it the frames it receives and passes its resolutions to
	 * uroce_rnic_neigh_resolved(). Must outlive the RNIC. */
	struct uroce_ip_stack *ip;
	const struct uroce_rnic_ops *ops;
	void *io_ctx;  /**< first argument of every op */
	/** QPNs, key bytes, CM ids and start PSNs from this seed, the same each run (tests,
	 *  replays); 0: unpredictable, from getrandom(). */
	uint64_t seed;
};

/**
 * Makes the RNIC: its GID table (the link-local GID from @p mac, then host.ipv4 and
 * host.ipv6, rxe's order), its transport device and CM.
 * @return the RNIC, or NULL with errno: ENOMEM, EINVAL (a bad setting).
 */
struct uroce_rnic *uroce_rnic_create(const struct uroce_rnic_cfg *cfg);
/** Frees every client (as uroce_rnic_client_free()), then the device. NULL is a no-op. */
void uroce_rnic_destroy(struct uroce_rnic *nic);

/** The largest IB MTU the port's Ethernet MTU carries (rxe's rule). */
enum ibv_mtu uroce_rnic_active_mtu(const struct uroce_rnic *nic);
/** The node GUID, in network byte order as verbs keeps it: the EUI-64 of the port's MAC,
 *  as rxe makes it (the interface ID of GID 0). */
uint64_t uroce_rnic_node_guid(const struct uroce_rnic *nic);

/* ---- clients ---------------------------------------------------------------------- */

/** Who a connection is, as the kernel says (SO_PEERCRED), never as it claims. */
struct uroce_rnic_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	bool admin; /**< may use the ADMIN-flagged commands (the host's policy) */
	/* CAP_NET_RAW is not the host's to say: the client proves it (PROVE_NET_RAW). */
};

/**
 * A new client on connection @p conn (passed back to ops->reply). It has no objects and
 * must send HELLO first.
 * @return the client, or NULL (errno ENOMEM).
 */
struct uroce_rnic_client *uroce_rnic_client_new(struct uroce_rnic *nic,
						const struct uroce_rnic_peer *peer, void *conn);
/**
 * The connection went: destroys every object of the client, dependents first (its QPs go
 * to the error state, its CM ids reject or disconnect on the wire), unmaps its memory,
 * cancels its neighbour resolution and frees it.
 */
void uroce_rnic_client_free(struct uroce_rnic_client *c);
/** The name the client gave at HELLO ("?" before). */
const char *uroce_rnic_client_name(const struct uroce_rnic_client *c);
pid_t uroce_rnic_client_pid(const struct uroce_rnic_client *c);
/** A number unique to the client in this RNIC's life (logs). */
uint64_t uroce_rnic_client_id(const struct uroce_rnic_client *c);
/** True once the client's HELLO was accepted (it may then use the device). */
bool uroce_rnic_client_greeted(const struct uroce_rnic_client *c);

/**
 * Handles one request that uroce_ctrl_check_request() passed: @p msg is @p len bytes,
 * header included, and @p fds its @p nfds descriptors, which are the RNIC's from here.
 * @return true: answered (ops->reply ran); false: it waits for a neighbour resolution
 *   and is answered from uroce_rnic_neigh_resolved(). A client has one request in
 *   flight: hand it no other before then.
 */
bool uroce_rnic_handle(struct uroce_rnic_client *c, const uint8_t *msg, uint32_t len,
		       const int *fds, unsigned int nfds);
/**
 * Answers request @p req (a header from the client) with @p status and, when @p status
 * is 0, @p len bytes of @p payload and @p nfds descriptors (which stay the caller's).
 * A payload too large for a message is answered -EOVERFLOW.
 */
void uroce_rnic_reply(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *req, int status,
		      const void *payload, uint32_t len, const int *fds, unsigned int nfds);
/**
 * The IP stack resolved (@p mac) or failed (@p mac NULL, @p err) the neighbour asked for
 * with @p cookie. @return the client whose waiting request this answered (the host reads
 * its requests again), or NULL.
 */
struct uroce_rnic_client *uroce_rnic_neigh_resolved(struct uroce_rnic *nic, uint64_t cookie,
						    const uint8_t *mac, int err);

/* ---- the poll loop ------------------------------------------------------------------ */

/** Takes the WQEs the applications posted since the last call. @return WQEs taken. */
unsigned int uroce_rnic_doorbells(struct uroce_rnic *nic);
/** One received RoCE frame (the IP stack said UROCE_IP_ROCE). */
void uroce_rnic_rx(struct uroce_rnic *nic, const uint8_t *frame, uint32_t len);
/** The same, parsed already by the IP stack (lib/ipstack's uroce_ip_input_roce: @p pkt
 *  and @p err as it gave them; lib/transport's uroce_tp_rx_parsed). */
void uroce_rnic_rx_parsed(struct uroce_rnic *nic, const struct uroce_wire_pkt *pkt,
			  enum uroce_wire_err err);
/** A received frame, to the raw packet QPs' flow rules (ibv_create_flow; lib/transport's
 *  uroce_tp_flow_rx): @p claimable false for a frame the host needs itself (ARP, ND,
 *  echo), which the rules' sniffers only get a copy of; RoCEv2 is never taken. @return
 *  true when a rule took it: the host does nothing more with it. */
bool uroce_rnic_flow_rx(struct uroce_rnic *nic, const uint8_t *frame, uint32_t len,
			bool claimable);
/** The device's named counters, as STATS gives them without per-QP lines (for the host's
 *  telemetry). @return how many were written to @p out (at most @p max). */
int uroce_rnic_stats(struct uroce_rnic *nic, struct uroce_ctrl_stat *out, uint32_t max);
/** Runs the transport's and the CM's timers that are due and deferred CM work, then
 *  moves the completions made since the last call (by doorbells, frames and timers) into
 *  the applications' CQ rings. Once a turn, last. @return completions moved. */
unsigned int uroce_rnic_process(struct uroce_rnic *nic);
/** The earliest time uroce_rnic_process() has work (UINT64_MAX: none). */
uint64_t uroce_rnic_next_deadline(const struct uroce_rnic *nic);
/** With @p on, every state change of the transport's responder and completer is a line
 *  of ops->log at UROCE_CONF_LOG_DEBUG ("qp 0x000012 psn 7 resp: CHK_PSN -> CHK_OP_SEQ",
 *  up to ten a packet); off (the default), they cost a test of a flag. A host turns it on
 *  with its debug level, and off with any other. */
void uroce_rnic_trace(struct uroce_rnic *nic, bool on);
/* ---- sleeping ------------------------------------------------------------------------ */

/*
 * A host that has had no work for a while may sleep instead of polling. Applications
 * post with a plain memory write, which wakes no one: before sleeping, the host asks the
 * RNIC to announce the sleep to every application (lib/shm's wake protocol), and each
 * application that posts while the announcement is up sends one datagram on its own
 * wake-up socket (HELLO's). The host sleeps in one poll/epoll on the RNIC's descriptor
 * over those sockets, its port and its control sockets, until uroce_rnic_next_deadline()
 * at the latest, then calls uroce_rnic_sleep_end().
 */

/** The descriptor that becomes readable when an application posts during a sleep (the
 *  RNIC's, an epoll fd over every client's wake-up socket; the host adds it to its epoll
 *  set, level-triggered, and never closes it). No application holds it or any of its
 *  sockets' open files, so none can make it block. */
int uroce_rnic_wake_fd(const struct uroce_rnic *nic);
/**
 * Announces the sleep, then looks at every queue once more.
 * @return true: the host may sleep (call uroce_rnic_sleep_end() after); false: a post
 *   came in before the announcement was seen, the announcement is already taken back,
 *   poll again.
 */
bool uroce_rnic_sleep_begin(struct uroce_rnic *nic);
/** Takes the announcement back and drains the wake-ups (never blocks): every application posts
 *  with a plain write again until the next uroce_rnic_sleep_begin(). */
void uroce_rnic_sleep_end(struct uroce_rnic *nic);

/** The link went up or down: raises IBV_EVENT_PORT_ACTIVE or IBV_EVENT_PORT_ERR to every
 * client, as rxe does on its netdev's carrier changes. */
void uroce_rnic_port_event(struct uroce_rnic *nic, bool up);

#endif
