/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_CTRL_H
#define UROCE_CTRL_H

/**
 * @file
 * The control protocol between uroced and the applications it serves, and the formats
 * of what they share in memory (work requests, completions, async events).
 *
 * Transport: a SOCK_SEQPACKET UNIX socket, so each message keeps its boundaries and file
 * descriptors travel with the message they belong to (SCM_RIGHTS). The client sends one
 * request and waits for its reply (same seq); the daemon answers every request, in
 * order, with status 0 or a negative errno. Requests are modelled on uverbs' commands:
 * one per verb of the slow path. The data path never crosses the socket.
 *
 * Versioning: every message carries UROCE_CTRL_MAGIC and UROCE_CTRL_VERSION; the daemon
 * refuses any other version with -EPROTO (and a log line naming both), so a library and
 * a daemon built from different trees fail at open with a message, never misread each
 * other. The shared regions carry their own version word (lib/shm).
 *
 * Validation: the daemon trusts nothing in a request. uroce_ctrl_check_request() checks
 * the header, the command, the exact payload size (variable part included) and the file
 * descriptor count before any handler runs; handlers check handles (which belong to the
 * connection that made them, typed) and values. It is fuzzed (test/fuzz).
 *
 * Handles are 32-bit numbers the daemon gives out per connection; 0 is never valid. A
 * handle names one object for that object's life: once it is destroyed, the handle names
 * nothing, not the next object the daemon makes (an async event or a reply that names the
 * old handle is about the old object, and the library drops it as the kernel would).
 */

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UROCE_CTRL_MAGIC 0x75637472u /* "uctr" */
#define UROCE_CTRL_VERSION 13u /* 2: connection management (CM_*); 3: CAPTURE_START by fd;
				* 4: the daemon's wake-up (HELLO); 5: CQ waiters and the
				* doorbell summary (HELLO, queue_ctl); 6: RESIZE_CQ,
				* RESIZE_SRQ; 7: ALLOC_MW, DEALLOC_MW, BIND_MW
				* WQEs, REREG_MR; 8: REGION_FD; 9: IMPORT_CONTEXT,
				* IMPORT_PD, IMPORT_MR, UNIMPORT_PD, UNIMPORT_MR,
				* RESOLVE_L2; 10: RES_LIST; 11: CREATE_FLOW,
				* DESTROY_FLOW, raw packet QPs; 12: OPEN_XRCD,
				* OPEN_XRCD_FILE, CLOSE_XRCD, CREATE_XRC_SRQ, XRC QPs
				* (create_qp_req.xrcd), OPEN_QP; 13: PROVE_NET_RAW,
				* event pipes and a wake-up socket instead of
				* shared eventfds */
/** Largest message either side sends (the socket's datagram limit is higher). */
#define UROCE_CTRL_MSG_MAX 65536u
#define UROCE_CTRL_MAX_FDS 4
#define UROCE_CTRL_NAME_MAX 32
/** Default socket path; the daemon's config can change it ([control] socket). */
#define UROCE_CTRL_DEFAULT_SOCKET "/run/uroce/uroced.sock"
/** Environment variable a client reads for the socket path. */
#define UROCE_CTRL_SOCKET_ENV "UROCE_SOCKET"

/*
 * ---- lengths and offsets a client sends --------------------------------------------------
 *
 * Every length, offset and address in a request is hostile: the daemon sums, rounds and
 * compares them only through these helpers, which answer false where the arithmetic would
 * wrap, so that no check passes on a wrapped value (three REG_MR segments of L, 2^63 - 4 KiB
 * and 2^63 + 8 KiB - L once summed to 4 KiB and passed a one-page MR's size check). All in
 * 64 bits; a narrower field is widened by the caller.
 */

/** *@p sum = @p a + @p b. @return false (and *@p sum unspecified) where that wraps. */
static inline bool uroce_ctrl_add(uint64_t a, uint64_t b, uint64_t *sum)
{
	return !__builtin_add_overflow(a, b, sum);
}

/** Is [@p offset, @p offset + @p length) inside [0, @p size)? Never wraps. */
static inline bool uroce_ctrl_range_within(uint64_t offset, uint64_t length, uint64_t size)
{
	return offset <= size && length <= size - offset;
}

/** The pages that [@p addr, @p addr + @p length) touches: *@p start rounded down and
 *  *@p end rounded up to @p page (a power of two). @return false where @p addr + @p length
 *  or the rounding up wraps. */
static inline bool uroce_ctrl_page_span(uint64_t addr, uint64_t length, uint64_t page,
					uint64_t *start, uint64_t *end)
{
	uint64_t last;

	if (!uroce_ctrl_add(addr, length, &last) || !uroce_ctrl_add(last, page - 1, end))
		return false;
	*start = addr & ~(page - 1);
	*end &= ~(page - 1);
	return true;
}

/*
 * The device node. Middleware that looks for kernel RDMA devices checks that
 * /dev/infiniband/<ibv_device.dev_name> is a character device it may read and write
 * before it uses a device (UCX: uct_ib_device_is_accessible), so each daemon makes one
 * for its device while it runs: named after the node GUID (unique per port, known to
 * both the daemon and its clients), with the control socket's mode and group, and the
 * numbers of /dev/null (nothing opens it: uroce's verbs go through the socket).
 */
#define UROCE_CTRL_DEVNODE_DIR "/dev/infiniband"
#define UROCE_CTRL_DEVNODE_MAJOR 1 /* /dev/null's */
#define UROCE_CTRL_DEVNODE_MINOR 3
/** Buffer size for uroce_ctrl_devnode_name(). */
#define UROCE_CTRL_DEVNODE_NAME_MAX 24

/** ibv_device.dev_name of the device with @p node_guid (network byte order, as verbs
 *  keeps it): "uverbs-" and its 16 hex digits, as ibv_devinfo prints the GUID. */
static inline void uroce_ctrl_devnode_name(uint64_t node_guid,
					   char name[UROCE_CTRL_DEVNODE_NAME_MAX])
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *g = (const uint8_t *)&node_guid;
	char *p = name;

	for (const char *q = "uverbs-"; *q; q++)
		*p++ = *q;
	for (int i = 0; i < 8; i++) {
		*p++ = hex[g[i] >> 4];
		*p++ = hex[g[i] & 0xf];
	}
	*p = '\0';
}

/*
 * ---- the commands ----------------------------------------------------------------------
 *
 * Every command is one row of UROCE_CTRL_COMMANDS, in wire order: the first row is 1, the
 * next 2, and so on. The numbers are the protocol between binaries built apart, so rows
 * never move and never go; a new one goes at the end. A row is
 *
 *   X(NAME, name, request, req_fds, reply, rep_fds, flags)
 *
 *   NAME     the command: UROCE_CTRL_<NAME>, and "<NAME>" in logs (uroce_ctrl_cmd_name)
 *   name     its handler in lib/rnic: rnic_cmd_<name>() (its object's file; CM_* in cm_glue.c)
 *   request  the request's payload: struct uroce_ctrl_<request>, or none
 *   req_fds  descriptors that come with the request (SCM_RIGHTS), exactly
 *   reply    a successful reply's payload: struct uroce_ctrl_<reply>, or none
 *   rep_fds  descriptors that come with a successful reply (an error reply has none)
 *   flags    UROCE_CTRL_CMD_*, or 0
 *
 * From the rows come enum uroce_ctrl_cmd; the names, sizes and fd counts that
 * uroce_ctrl_check_request() holds every request to (struct uroce_ctrl_cmd_info);
 * uroced's dispatch (a const array of the handlers, by number) and administrators' gate;
 * the commands the control fuzzer sends and the replies it expects (test/fuzz); and
 * lib/client's reading of replies with a tail.
 *
 * To add a command: one row at the end here (and its payload structs below, if new) plus
 * its handler rnic_cmd_<name>() in lib/rnic (its object's file; CM_* in cm_glue.c). Raise
 * UROCE_CTRL_VERSION with it: a daemon of the previous version drops a client that sends
 * a number it does not know.
 */
#define UROCE_CTRL_CMD_ADMIN 0x1u    /**< root and control.admin_group only: -EPERM else */
#define UROCE_CTRL_CMD_REQ_TAIL 0x2u /**< the request goes on past its struct (REG_MR's segs) */
#define UROCE_CTRL_CMD_REP_TAIL 0x4u /**< the reply goes on past its struct (STATS' counters) */

#define UROCE_CTRL_COMMANDS(X)                                                                \
	X(HELLO, hello, hello_req, 0, hello_rep, 3, 0)                                        \
	X(QUERY_DEVICE, query_device, none, 0, query_device_rep, 0, 0)                        \
	X(QUERY_PORT, query_port, query_port_req, 0, query_port_rep, 0, 0)                    \
	X(QUERY_GID, query_gid, query_gid_req, 0, query_gid_rep, 0, 0)                        \
	X(ALLOC_PD, alloc_pd, none, 0, handle, 0, 0)                                          \
	X(DEALLOC_PD, dealloc_pd, handle, 0, none, 0, 0)                                      \
	X(MAP_REGION, map_region, map_region_req, 1, handle, 0, 0)                            \
	X(UNMAP_REGION, unmap_region, handle, 0, none, 0, 0)                                  \
	X(REG_MR, reg_mr, reg_mr_req, 0, reg_mr_rep, 0, UROCE_CTRL_CMD_REQ_TAIL)              \
	X(DEREG_MR, dereg_mr, handle, 0, none, 0, 0)                                          \
	X(CREATE_CHANNEL, create_channel, none, 0, handle, 1, 0)                              \
	X(DESTROY_CHANNEL, destroy_channel, handle, 0, none, 0, 0)                            \
	X(CREATE_CQ, create_cq, create_cq_req, 0, create_cq_rep, 1, 0)                        \
	X(DESTROY_CQ, destroy_cq, handle, 0, none, 0, 0)                                      \
	X(CREATE_SRQ, create_srq, create_srq_req, 0, create_srq_rep, 1, 0)                    \
	X(MODIFY_SRQ, modify_srq, modify_srq_req, 0, none, 0, 0)                              \
	X(QUERY_SRQ, query_srq, handle, 0, query_srq_rep, 0, 0)                               \
	X(DESTROY_SRQ, destroy_srq, handle, 0, none, 0, 0)                                    \
	X(CREATE_QP, create_qp, create_qp_req, 0, create_qp_rep, 1, 0)                        \
	X(MODIFY_QP, modify_qp, modify_qp_req, 0, none, 0, 0)                                 \
	X(QUERY_QP, query_qp, query_qp_req, 0, query_qp_rep, 0, 0)                            \
	X(DESTROY_QP, destroy_qp, handle, 0, none, 0, 0)                                      \
	X(CREATE_AH, create_ah, create_ah_req, 0, handle, 0, 0)                               \
	X(DESTROY_AH, destroy_ah, handle, 0, none, 0, 0)                                      \
	X(STATS, stats, stats_req, 0, stats_rep, 0, UROCE_CTRL_CMD_REP_TAIL)                  \
	X(ADMIN, admin, admin_req, 0, none, 0, UROCE_CTRL_CMD_ADMIN)                          \
	/* Connection management (librdmacm; see "connection management" below) */          \
	X(CM_CREATE_CHANNEL, cm_create_channel, none, 0, handle, 1, 0)                        \
	X(CM_DESTROY_CHANNEL, cm_destroy_channel, cm_id_req, 0, none, 0, 0)                   \
	X(CM_GET_EVENT, cm_get_event, cm_id_req, 0, cm_event, 0, 0)                           \
	X(CM_CREATE_ID, cm_create_id, cm_create_id_req, 0, handle, 0, 0)                      \
	X(CM_DESTROY_ID, cm_destroy_id, cm_id_req, 0, none, 0, 0)                             \
	X(CM_MIGRATE_ID, cm_migrate_id, cm_id_req, 0, none, 0, 0)                             \
	X(CM_BIND, cm_bind, cm_addr_req, 0, cm_route, 0, 0)                                   \
	X(CM_RESOLVE_ADDR, cm_resolve_addr, cm_addr_req, 0, none, 0, 0)                       \
	X(CM_RESOLVE_ROUTE, cm_resolve_route, cm_id_req, 0, none, 0, 0)                       \
	X(CM_QUERY_ROUTE, cm_query_route, cm_id_req, 0, cm_route, 0, 0)                       \
	X(CM_LISTEN, cm_listen, cm_id_req, 0, none, 0, 0)                                     \
	X(CM_CONNECT, cm_connect, cm_conn_req, 0, none, 0, 0)                                 \
	X(CM_ACCEPT, cm_accept, cm_conn_req, 0, none, 0, 0)                                   \
	X(CM_REJECT, cm_reject, cm_conn_req, 0, none, 0, 0)                                   \
	X(CM_DISCONNECT, cm_disconnect, cm_id_req, 0, none, 0, 0)                             \
	X(CM_ESTABLISH, cm_establish, cm_id_req, 0, none, 0, 0)                               \
	X(CM_INIT_QP_ATTR, cm_init_qp_attr, cm_id_req, 0, cm_init_qp_attr_rep, 0, 0)          \
	X(CM_SET_OPTION, cm_set_option, cm_option_req, 0, none, 0, 0)                         \
	X(CM_JOIN_MCAST, cm_join_mcast, cm_addr_req, 0, none, 0, 0)                           \
	X(CM_LEAVE_MCAST, cm_leave_mcast, cm_addr_req, 0, none, 0, 0)                         \
	X(ATTACH_MCAST, attach_mcast, mcast_req, 0, none, 0, 0)                               \
	X(DETACH_MCAST, detach_mcast, mcast_req, 0, none, 0, 0)                               \
	/* Administration with a file: the caller's open descriptor (the pcap file to */     \
	/* write, open for writing), never a path the root daemon would open for it. */      \
	X(CAPTURE_START, capture_start, none, 1, none, 0, UROCE_CTRL_CMD_ADMIN)             \
	X(RESIZE_CQ, resize_cq, resize_cq_req, 0, create_cq_rep, 1, 0)                       \
	X(RESIZE_SRQ, resize_srq, modify_srq_req, 0, create_srq_rep, 1, 0)                   \
	X(ALLOC_MW, alloc_mw, alloc_mw_req, 0, alloc_mw_rep, 0, 0)                            \
	X(DEALLOC_MW, dealloc_mw, handle, 0, none, 0, 0)                                      \
	X(REREG_MR, rereg_mr, rereg_mr_req, 0, none, 0, 0)                                    \
	X(REGION_FD, region_fd, handle, 0, none, 1, 0)                                        \
	/* ibv_import_device and what it shares (see "importing" below) */                  \
	X(IMPORT_CONTEXT, import_context, none, 1, none, 0, 0)                                \
	X(IMPORT_PD, import_pd, handle, 0, handle, 0, 0)                                      \
	X(IMPORT_MR, import_mr, handle, 0, import_mr_rep, 0, 0)                               \
	X(UNIMPORT_PD, unimport_pd, handle, 0, none, 0, 0)                                    \
	X(UNIMPORT_MR, unimport_mr, handle, 0, none, 0, 0)                                    \
	X(RESOLVE_L2, resolve_l2, resolve_l2_req, 0, resolve_l2_rep, 0, 0)                   \
	X(RES_LIST, res_list, res_list_req, 0, res_list_rep, 0, UROCE_CTRL_CMD_REP_TAIL)    \
	X(CREATE_FLOW, create_flow, create_flow_req, 0, handle, 0, 0)                         \
	X(DESTROY_FLOW, destroy_flow, handle, 0, none, 0, 0)                                  \
	/* XRC (annex A14; see "XRC" below) */                                               \
	X(OPEN_XRCD, open_xrcd, none, 0, handle, 0, 0)                                        \
	X(OPEN_XRCD_FILE, open_xrcd_file, open_xrcd_req, 1, handle, 0, 0)                     \
	X(CLOSE_XRCD, close_xrcd, handle, 0, none, 0, 0)                                      \
	X(CREATE_XRC_SRQ, create_xrc_srq, create_xrc_srq_req, 0, create_xrc_srq_rep, 1, 0)   \
	X(OPEN_QP, open_qp, open_qp_req, 0, handle, 0, 0)                                     \
	/* CAP_NET_RAW as the kernel proves it (see "rights" below) */                       \
	X(PROVE_NET_RAW, prove_net_raw, none, 1, none, 0, 0)

enum uroce_ctrl_cmd {
	UROCE_CTRL_CMD_NONE = 0, /* never sent: the rows count from 1 */
#define UROCE_CTRL_CMD_ENUM(NAME, ...) UROCE_CTRL_##NAME,
	UROCE_CTRL_COMMANDS(UROCE_CTRL_CMD_ENUM)
#undef UROCE_CTRL_CMD_ENUM
	UROCE_CTRL_CMD_END
};

/** A command's row, as the rest of the library and its users read it. */
struct uroce_ctrl_cmd_info {
	const char *name;  /**< "CREATE_QP" */
	uint32_t req_size; /**< request payload bytes (UROCE_CTRL_CMD_REQ_TAIL: before it) */
	uint32_t rep_size; /**< successful reply payload bytes (REP_TAIL: before it) */
	uint8_t req_fds;
	uint8_t rep_fds;
	uint16_t flags;    /**< UROCE_CTRL_CMD_* */
};

/** The row of @p cmd, or NULL when @p cmd is no command. */
const struct uroce_ctrl_cmd_info *uroce_ctrl_cmd_info(uint32_t cmd);
/** Name of a command ("CREATE_QP"), or "?" */
const char *uroce_ctrl_cmd_name(uint32_t cmd);

struct uroce_ctrl_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t cmd;
	uint32_t len;    /**< bytes of the whole message, header included */
	uint32_t seq;    /**< the reply repeats the request's */
	int32_t status;  /**< replies: 0 or -errno; requests: 0 */
	uint32_t reserved;
};

/* ---- requests and replies (payload after the header) ------------------------------------ */

/*
 * Event pipes. The daemon never hands a client an open file it reads or writes itself:
 * a client could clear O_NONBLOCK on it (a flag of the open file, not of the
 * descriptor), fill it or drain it, and the daemon would block. So the daemon signals an
 * application through a pipe whose read end only the application holds, one byte per
 * event: readable exactly while events wait, one event per byte read (as an
 * EFD_SEMAPHORE eventfd was). The daemon writes and takes bytes back through files of its
 * own, non-blocking; it never writes more than the pipe holds (a page, at least: more
 * than the async ring's events), so an application that lets a pipe fill only loses
 * wake-ups of its own (counted: event_pipe_full). When the daemon goes, its ends close:
 * the read end reports end of file.
 *
 * HELLO. Reply fds: [0] the context region (async event ring, wake-up announcement, CQ
 * waiters and doorbell summary), [1] the read end of the async event pipe (a byte per
 * event in the ring), [2] the application's end of a datagram socket pair whose other
 * end the daemon watches: one datagram (any content; send with MSG_DONTWAIT) after a
 * post when the announcement at wake_offset says the daemon sleeps (lib/shm,
 * uroce_wake_take). The daemon drains it without blocking. */
struct uroce_ctrl_hello_req {
	uint32_t version;
	int32_t pid;
	char name[UROCE_CTRL_NAME_MAX]; /**< program name, for logs and stats */
};
struct uroce_ctrl_hello_rep {
	uint32_t version;
	uint32_t async_ring_offset; /**< in the context region */
	uint64_t region_size;
	char dev_name[UROCE_CTRL_NAME_MAX]; /**< "uroce0" */
	uint64_t node_guid;                 /**< network byte order, as verbs keeps it */
	uint32_t wake_offset;               /**< struct uroce_shm_wake, in the context region */
	/** struct uroce_shm_waiters, in the context region: bumped after the daemon commits
	 *  completions to any CQ of this context (an application thread may sleep on it). */
	uint32_t waiters_offset;
	/** The doorbell summary (lib/shm, uroce_summary) of UROCE_CTRL_DOORBELL_SLOTS slots,
	 *  in the context region: a post sets its queue's slot (queue_ctl) after its
	 *  commit, and the daemon looks only at the queues whose slots are set. */
	uint32_t doorbells_offset;
	uint32_t reserved;
};
/** Slots of a context's doorbell summary: its QPs and SRQs together (one more is
 *  refused with ENOMEM). */
#define UROCE_CTRL_DOORBELL_SLOTS 65536u

struct uroce_ctrl_query_device_rep {
	struct ibv_device_attr attr;
};

struct uroce_ctrl_query_port_req {
	uint32_t port;
};
struct uroce_ctrl_query_port_rep {
	struct ibv_port_attr attr;
};

struct uroce_ctrl_query_gid_req {
	uint32_t port;
	uint32_t index;
};
struct uroce_ctrl_query_gid_rep {
	union ibv_gid gid;
	uint32_t gid_type; /**< IBV_GID_TYPE_ROCE_V2 */
	uint32_t reserved;
};

/** A reply (or request) that carries one handle. */
struct uroce_ctrl_handle {
	uint32_t handle;
	uint32_t reserved;
};

/* MAP_REGION: one fd (a memfd of the client's, covering application memory that MRs will
 * use); the reply is its handle. UNMAP_REGION: -EBUSY while an MR uses it. */
struct uroce_ctrl_map_region_req {
	uint64_t size;
};

/* REGION_FD: the memfd of one of the client's own regions, back (a second context of the
 * process maps it to its own daemon: lib/client/mr_share.c). -EINVAL: no such region. */

#define UROCE_CTRL_MR_MAX_SEGS 1024
struct uroce_ctrl_mr_seg {
	uint32_t region;
	uint32_t reserved;
	uint64_t offset; /**< in the region, page aligned */
	uint64_t length; /**< page multiple */
};
/* REG_MR: the segments cover [addr rounded down to a page, addr + length rounded up)
 * in order, each a page-aligned piece of a mapped region. */
struct uroce_ctrl_reg_mr_req {
	uint32_t pd;
	uint32_t access;
	uint64_t addr;   /**< where the application has the range */
	uint64_t length;
	uint64_t iova;   /**< the address peers and WQEs use for it (ibv_reg_mr_iova) */
	uint32_t nseg;
	uint32_t reserved;
	struct uroce_ctrl_mr_seg seg[];
};
struct uroce_ctrl_reg_mr_rep {
	uint32_t mr;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t reserved;
};

/* REREG_MR: ibv_rereg_mr keeps the MR's keys. lib/client registers the new translation,
 * PD or rights as a new MR (REG_MR), then this gives @p to the keys of @p mr (and @p mr
 * those @p to had), then deregisters @p mr: the application's keys go on naming the MR.
 * -EINVAL while a memory window is bound to @p mr. */
struct uroce_ctrl_rereg_mr_req {
	uint32_t mr;
	uint32_t to;
};

/*
 * Importing (ibv_import_device, ibv_import_pd, ibv_import_mr). A context's cmd_fd is its
 * token: an O_PATH descriptor of the context's region (HELLO's fd [0]); whoever holds it
 * may share the context's PDs and MRs, as whoever holds a kernel uverbs file may.
 * IMPORT_CONTEXT, on a connection after its HELLO: the token (one fd) names the context
 * whose handles this connection's IMPORT_PD and IMPORT_MR take. -EINVAL: the fd is no
 * context's of this daemon (or this connection's own), or an import was already made.
 * IMPORT_PD: a handle of the other context's PD; the reply is this connection's handle of
 * the same PD. IMPORT_MR: the same for an MR, with what ibv_import_mr reports. -EINVAL:
 * no IMPORT_CONTEXT, the other context has gone, or no such object there.
 * The object is one: DEALLOC_PD or DEREG_MR through either handle destroys it (-EBUSY as
 * ever while it is in use), after which the other handle names nothing (-EINVAL) until
 * it is released. UNIMPORT_PD and UNIMPORT_MR release a handle without destroying the
 * object, which lives while a handle of any connection names it.
 */
struct uroce_ctrl_import_mr_rep {
	uint32_t mr; /**< this connection's handle */
	uint32_t lkey;
	uint32_t rkey;
	uint32_t access;
	uint64_t length;
	uint64_t iova; /**< what WQEs and peers address */
};

/* RESOLVE_L2 (ibv_resolve_eth_l2_from_gid): the next hop's MAC for the address's
 * destination GID, by the daemon's ARP/ND as for CREATE_AH (the reply waits for it), and
 * the port's VLAN ID (0xffff: untagged, as rdma-core's). -EINVAL: no GRH, another port,
 * no such source GID; -EHOSTUNREACH: no neighbour answered. */
struct uroce_ctrl_resolve_l2_req {
	struct ibv_ah_attr attr;
};
struct uroce_ctrl_resolve_l2_rep {
	uint8_t mac[6];
	uint16_t vid;
};

/* ALLOC_MW: a memory window of the PD (enum ibv_mw_type); its R_Key changes with each
 * bind, which a BIND_MW work request in the QP's ring carries (the window is named by its
 * R_Key there, as rxe's WQE names it: no handle needed in the data path). */
struct uroce_ctrl_alloc_mw_req {
	uint32_t pd;
	uint32_t type;
};

struct uroce_ctrl_alloc_mw_rep {
	uint32_t mw;
	uint32_t rkey;
};

/* CREATE_CHANNEL: the reply carries the read end of the channel's event pipe (a byte
 * per CQ event). */

/* CREATE_CQ: the reply carries the CQ's region (layout: struct uroce_ctrl_cq_ctl at
 * ctl_offset, the CQE ring at ring_offset). */
struct uroce_ctrl_create_cq_req {
	int32_t cqe;
	uint32_t channel; /**< 0: none */
	int32_t comp_vector;
	uint32_t reserved;
};
struct uroce_ctrl_create_cq_rep {
	uint32_t cq;
	int32_t cqe;
	uint32_t ctl_offset;
	uint32_t ring_offset;
	uint64_t region_size;
};

/* RESIZE_CQ: the reply (CREATE_CQ's) carries the CQ's new region, which replaces the old
 * one: its ring holds the completions the old ring held and the application had not
 * polled, oldest first, and its notification state; its ctl the old one's counts. The
 * application must not poll or arm the CQ meanwhile (lib/client holds the CQ's lock). */
struct uroce_ctrl_resize_cq_req {
	uint32_t cq;
	int32_t cqe;
};

/** Shared per-CQ state besides the ring. */
struct uroce_ctrl_cq_ctl {
	/** Events the daemon signalled on the channel for this CQ (it increments, then
	 *  writes the pipe); a client waiting on a channel shared by several CQs finds
	 *  the CQ(s) whose count moved. */
	_Atomic uint32_t events;
	/** Set by the daemon when a completion did not fit (CQ overrun: IBV_EVENT_CQ_ERR). */
	_Atomic uint32_t overrun;
};

/** Shared per-queue state of a QP or SRQ region, at UROCE_CTRL_QUEUE_CTL_OFFSET: how
 *  many WQEs of each queue have retired (completed, or retired unsignaled), written by
 *  the daemon before it publishes their completions. A post counts its own posts
 *  minus these to know exactly how many are outstanding: verbs' ENOMEM on a full queue
 *  at the queue's real capacity. */
struct uroce_ctrl_queue_ctl {
	_Alignas(64) _Atomic uint32_t sq_retired; /**< SRQ: the receive queue's */
	/** Written once by the daemon before the reply: the queue's slot in its context's
	 *  doorbell summary, which a post sets after its commit (lib/shm, uroce_summary). */
	uint32_t doorbell_slot;
	_Alignas(64) _Atomic uint32_t rq_retired;
};
#define UROCE_CTRL_QUEUE_CTL_OFFSET 64u

/* CREATE_SRQ: the reply carries the SRQ's region (recv WQE ring at ring_offset). */
struct uroce_ctrl_create_srq_req {
	uint32_t pd;
	uint32_t reserved;
	struct ibv_srq_attr attr;
};
struct uroce_ctrl_create_srq_rep {
	uint32_t srq;
	uint32_t ring_offset;
	uint64_t region_size;
	struct ibv_srq_attr attr; /**< as created (rounded up) */
};
struct uroce_ctrl_modify_srq_req {
	uint32_t srq;
	int32_t mask;
	struct ibv_srq_attr attr;
};
struct uroce_ctrl_query_srq_rep {
	struct ibv_srq_attr attr;
};
/* RESIZE_SRQ: a MODIFY_SRQ whose mask has IBV_SRQ_MAX_WR (MODIFY_SRQ refuses that bit).
 * The reply (CREATE_SRQ's) carries the SRQ's new region, which replaces the old one: its
 * ring holds the WQEs the daemon had not taken yet at the same indices, so the
 * application's producer index and the retired count (queue_ctl, copied) go on as they
 * were. The application must not post meanwhile (lib/client holds the SRQ's lock). */

/* CREATE_QP: the reply carries the QP's region (send WQE ring at sq_offset, recv WQE ring
 * at rq_offset, 0 when the QP uses an SRQ). */
struct uroce_ctrl_create_qp_req {
	uint32_t pd;      /**< 0 for IBV_QPT_XRC_RECV */
	uint32_t send_cq; /**< 0 for IBV_QPT_XRC_RECV */
	uint32_t recv_cq; /**< 0 for IBV_QPT_XRC_RECV, may be 0 for IBV_QPT_XRC_SEND */
	uint32_t srq; /**< 0: none */
	uint32_t qp_type;
	uint32_t sq_sig_all;
	struct ibv_qp_cap cap;
	uint32_t xrcd; /**< IBV_QPT_XRC_RECV: its XRC domain; else 0 */
};

/*
 * XRC (IBA vol 1 annex A14). OPEN_XRCD gives a domain of this connection alone
 * (ibv_open_xrcd without IBV_XRCD_INIT_ATTR_FD); OPEN_XRCD_FILE the domain of the file
 * whose descriptor comes with it, shared by every process that opens one for the same
 * file (inode), as the kernel's uverbs share them: with O_CREAT it is made if it does not
 * exist, with O_CREAT | O_EXCL it must not exist yet (-EINVAL), without O_CREAT it must
 * (-EAGAIN), the kernel's errnos; a descriptor opened with O_PATH, which needs no
 * permission on the file, is refused (-EBADF) as the kernel's fdget() refuses it.
 * CLOSE_XRCD: -EBUSY while this connection has an XRC SRQ or target QP in it.
 * CREATE_XRC_SRQ (ibv_create_srq_ex, IBV_SRQT_XRC): the reply is CREATE_SRQ's and the
 * number requests name it by (ibv_get_srq_num). An XRC target QP (CREATE_QP with
 * IBV_QPT_XRC_RECV) takes no PD, CQ or SRQ, only its domain; its region has rings that
 * are never used. OPEN_QP (ibv_open_qp): a handle on the target QP numbered qpn of the
 * domain xrcd (a handle of this connection), made by any connection (-EINVAL: none). A
 * target QP lives while any connection has a handle on it: DESTROY_QP gives one up.
 */
struct uroce_ctrl_open_qp_req {
	uint32_t xrcd;
	uint32_t qpn;
};
struct uroce_ctrl_open_xrcd_req {
	uint32_t oflags; /**< O_CREAT, O_EXCL; other bits ignored */
	uint32_t reserved;
};
struct uroce_ctrl_create_xrc_srq_req {
	uint32_t pd;
	uint32_t xrcd;
	uint32_t cq;
	uint32_t reserved;
	struct ibv_srq_attr attr;
};
struct uroce_ctrl_create_xrc_srq_rep {
	struct uroce_ctrl_create_srq_rep srq;
	uint32_t srqn;
	uint32_t reserved;
};
struct uroce_ctrl_create_qp_rep {
	uint32_t qp;
	uint32_t qpn;
	struct ibv_qp_cap cap; /**< as created (rounded up) */
	uint32_t sq_offset;
	uint32_t rq_offset;
	uint64_t region_size;
};
struct uroce_ctrl_modify_qp_req {
	uint32_t qp;
	int32_t mask;
	struct ibv_qp_attr attr;
};
struct uroce_ctrl_query_qp_req {
	uint32_t qp;
	int32_t mask;
};
struct uroce_ctrl_query_qp_rep {
	struct ibv_qp_attr attr;
	struct ibv_qp_cap cap;
	uint32_t qp_type;
	uint32_t sq_sig_all;
};

/* ATTACH_MCAST / DETACH_MCAST (ibv_attach_mcast): a UD QP and a multicast GID. */
struct uroce_ctrl_mcast_req {
	uint32_t qp;
	uint16_t lid;
	uint16_t reserved;
	union ibv_gid gid;
};

/* CREATE_FLOW (ibv_create_flow): a rule for a raw packet QP, verbs' struct ibv_flow_attr
 * and its specs as the application laid them out, attr_size bytes of attr (the attribute
 * and num_of_specs specs by their own sizes, as rdma-core walks them). The daemon checks
 * every size (lib/transport's uroce_tp_create_flow): -EINVAL, -EOPNOTSUPP as
 * ibv_create_flow answers. */
#define UROCE_CTRL_FLOW_ATTR_MAX 256
struct uroce_ctrl_create_flow_req {
	uint32_t qp;
	uint32_t attr_size;
	uint8_t attr[UROCE_CTRL_FLOW_ATTR_MAX];
};

struct uroce_ctrl_create_ah_req {
	uint32_t pd;
	uint32_t reserved;
	struct ibv_ah_attr attr;
};

/* STATS: the reply is a list of named counters (device, port, host stack, per QP when
 * asked, and the daemon's object and mapping counts). */
#define UROCE_CTRL_STATS_PER_QP 1u
struct uroce_ctrl_stats_req {
	uint32_t flags;
	uint32_t reserved;
};
#define UROCE_CTRL_STAT_NAME_MAX 48
struct uroce_ctrl_stat {
	char name[UROCE_CTRL_STAT_NAME_MAX];
	uint64_t value;
};
struct uroce_ctrl_stats_rep {
	uint32_t count;
	uint32_t reserved;
	struct uroce_ctrl_stat stat[];
};

/*
 * RES_LIST (`uroce res show`): the device's objects of one kind, a row each with the
 * process that made it, as iproute2's `rdma res show` lists a kernel device's. As with
 * the per-QP counters, a user sees the objects of its own uid's processes, an
 * administrator every one (a QPN and its pid are what a forged packet aims at). A reply
 * holds the rows that fit; a request with `start` = the last reply's `next` goes on
 * (next 0: that was the end). Objects made or destroyed between two requests may be
 * missed or listed twice, as in a netlink dump. -EINVAL: no such type.
 */
enum uroce_ctrl_res_type {
	UROCE_CTRL_RES_QP = 1,
	UROCE_CTRL_RES_CQ,
	UROCE_CTRL_RES_MR,
	UROCE_CTRL_RES_PD,
	UROCE_CTRL_RES_CM_ID,
};
struct uroce_ctrl_res_list_req {
	uint32_t type; /**< enum uroce_ctrl_res_type */
	uint32_t start;
};
#define UROCE_CTRL_CM_STATE_NAME_MAX 16
struct uroce_ctrl_res_row {
	uint32_t pid;
	uint32_t handle; /**< its number in the process's connection (pdn, cqn, mrn, ...) */
	char comm[UROCE_CTRL_NAME_MAX]; /**< the program's name, as its library said (HELLO) */
	union {
		struct {
			uint32_t lqpn, rqpn;
			uint32_t type;  /**< enum ibv_qp_type */
			uint32_t state; /**< enum ibv_qp_state */
			uint32_t sq_psn, rq_psn;
			uint32_t send_cq, recv_cq, srq; /**< handles; srq 0: none */
			uint32_t reserved;
		} qp;
		struct {
			uint32_t cqe;
			uint32_t users; /**< QPs that complete into it */
			uint32_t channel; /**< handle of its completion channel, 0: none */
			uint32_t reserved;
		} cq;
		struct {
			uint32_t lkey, rkey, access, reserved;
			uint64_t iova, length;
		} mr;
		struct {
			uint32_t refs; /**< handles that name it, over all processes */
			uint32_t reserved;
		} pd;
		struct {
			uint32_t lqpn;
			uint32_t ps;      /**< enum rdma_port_space */
			uint32_t qp_type; /**< enum ibv_qp_type */
			uint32_t reserved;
			char state[UROCE_CTRL_CM_STATE_NAME_MAX]; /**< the IB CM's: "ESTABLISHED" */
			struct sockaddr_storage src, dst;
		} cm_id;
	};
};
struct uroce_ctrl_res_list_rep {
	uint32_t count;
	uint32_t next;
	struct uroce_ctrl_res_row row[];
};

/* ADMIN (and CAPTURE_START): operations for operators and tests. Only root and the
 * members of control.admin_group may use them, as the kernel tells the daemon who is on
 * the other end (SO_PEERCRED); anyone else gets -EPERM and nothing changes. */
enum uroce_ctrl_admin_op {
	UROCE_CTRL_ADMIN_CAPTURE_STOP = 2, /**< (1 was a path to open: gone, see CAPTURE_START) */
	UROCE_CTRL_ADMIN_FAULT,             /**< rates: rx drop,dup,reorder,corrupt, tx same */
	UROCE_CTRL_ADMIN_LOG_LEVEL,         /**< value: 0 error .. 3 debug */
	/** value: CM attribute ID << 16 | count: the next count CM MADs of that attribute
	 *  this daemon sends are dropped (tests of the CM's retries; 0: none). */
	UROCE_CTRL_ADMIN_CM_DROP,
};
struct uroce_ctrl_admin_req {
	uint32_t op;
	uint32_t value;
	double rates[8];
	char path[256]; /**< unused (zero) */
};

/* ---- connection management (librdmacm) ------------------------------------------------- *
 *
 * rdma_cm ids live in the daemon, which runs the CM protocol on QP1 (lib/cm); the library
 * keeps the application's struct rdma_cm_id and asks. Ids belong to the connection that
 * created them and report to one of its CM channels. When the connection closes, its ids
 * go as rdma_destroy_id would take them (established ones send DREQ).
 *
 * A CM channel is an event queue and an event pipe (its read end passed with the reply to
 * CM_CREATE_CHANNEL): the daemon writes a byte per queued event and takes one back
 * (through a read file of its own) when GET_EVENT hands one out or an event is dropped,
 * so the fd is readable exactly while events wait. The library only waits on it, never
 * reads it. GET_EVENT never blocks: -EAGAIN when the queue is empty (the library waits
 * on the fd).
 *
 * Requests that start something on the wire or the neighbour table (RESOLVE_ADDR,
 * RESOLVE_ROUTE, CONNECT, ACCEPT on the passive side, JOIN_MCAST) reply at once; what
 * happens next arrives as events. Addresses are struct sockaddr_storage (AF_INET or
 * AF_INET6; AF_UNSPEC: none given).
 */

/* CM_DESTROY_CHANNEL: the ids still reporting to the channel are destroyed with it (as
 * when the kernel's rdma_cm file is closed). */
/* CM_DESTROY_ID: the id's events still queued are dropped with it (and their bytes taken
 * out of the channel's pipe), so none reaches the library afterwards; a handle
 * can be reused at once by the next id. */

/** Generic: one id (or channel) and one number. Used by DESTROY_CHANNEL (id: the channel),
 *  GET_EVENT (id: the channel), DESTROY_ID, MIGRATE_ID (arg: the new channel),
 *  RESOLVE_ROUTE (arg: timeout ms), QUERY_ROUTE, LISTEN (arg: backlog), DISCONNECT,
 *  ESTABLISH, INIT_QP_ATTR (arg: enum ibv_qp_state). */
struct uroce_ctrl_cm_id_req {
	uint32_t id;
	uint32_t arg;
};

struct uroce_ctrl_cm_create_id_req {
	uint32_t channel;
	uint32_t ps;      /**< enum rdma_port_space */
	uint32_t qp_type; /**< enum ibv_qp_type */
	uint32_t reserved;
	uint64_t uid;     /**< the library's, returned in every event of the id */
};

/** BIND (src), RESOLVE_ADDR (src optional, dst, timeout_ms), JOIN_MCAST (dst: the group,
 *  uid: the library's for the membership, flags: join flags), LEAVE_MCAST (dst). */
struct uroce_ctrl_cm_addr_req {
	uint32_t id;
	uint32_t timeout_ms;
	struct sockaddr_storage src;
	struct sockaddr_storage dst;
	uint64_t uid;
	uint32_t flags;
	uint32_t reserved;
};

/** What the library shows in rdma_cm_id.route (reply to BIND and QUERY_ROUTE, and in
 *  every event). */
struct uroce_ctrl_cm_route {
	struct sockaddr_storage src;
	struct sockaddr_storage dst;
	union ibv_gid sgid;
	union ibv_gid dgid;
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t num_paths; /**< 1 once the route is resolved */
	uint32_t path_mtu; /**< enum ibv_mtu */
	uint32_t pkey;
};

#define UROCE_CTRL_CM_PDATA_MAX 224 /* DREP and RTU: the most any CM message carries */
struct uroce_ctrl_cm_param {
	uint8_t private_data[UROCE_CTRL_CM_PDATA_MAX];
	uint8_t private_data_len;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t srq;
	uint8_t reserved;
	uint32_t qp_num;
	uint32_t qkey;
};

/** CONNECT, ACCEPT, REJECT (private data only). */
struct uroce_ctrl_cm_conn_req {
	uint32_t id;
	uint32_t reserved;
	struct uroce_ctrl_cm_param param;
};

struct uroce_ctrl_cm_init_qp_attr_rep {
	struct ibv_qp_attr attr;
	int32_t mask;
	uint32_t reserved;
};

struct uroce_ctrl_cm_option_req {
	uint32_t id;
	int32_t level;
	int32_t optname;
	uint32_t reserved;
	uint64_t value;
};

/** One event (reply to GET_EVENT). */
struct uroce_ctrl_cm_event {
	uint32_t event;     /**< enum rdma_cm_event_type */
	int32_t status;
	/** The id the event is about, in every event (CONNECT_REQUEST: a new id, on the
	 *  listener's channel). A passive id's events may carry its listener's uid (created
	 *  by CONNECT_REQUEST, it has no other): the library tells them apart by this. */
	uint32_t id;
	uint32_t listen_id; /**< CONNECT_REQUEST: the listener; else 0 */
	uint64_t uid;       /**< the id's uid (CONNECT_REQUEST and a passive id's events:
			     *   the listener's); multicast events: the membership's */
	struct uroce_ctrl_cm_route route; /**< the id's, after the event */
	struct uroce_ctrl_cm_param param; /**< the peer's (see struct uroce_cm_event) */
	/** ESTABLISHED on UD ids, MULTICAST_JOIN: where to send (rdma_ud_param). */
	struct ibv_ah_attr ah_attr;
};

/** The largest fixed payload of any request or reply (buffers are sized with it). */
union uroce_ctrl_any_payload {
	struct uroce_ctrl_hello_req hello_req;
	struct uroce_ctrl_hello_rep hello_rep;
	struct uroce_ctrl_query_device_rep query_device_rep;
	struct uroce_ctrl_query_port_rep query_port_rep;
	struct uroce_ctrl_query_qp_rep query_qp_rep;
	struct uroce_ctrl_modify_qp_req modify_qp_req;
	struct uroce_ctrl_admin_req admin_req;
	struct uroce_ctrl_cm_addr_req cm_addr_req;
	struct uroce_ctrl_cm_conn_req cm_conn_req;
	struct uroce_ctrl_cm_event cm_event;
};

/*
 * Rights. The daemon knows who connected by SO_PEERCRED; a capability it cannot learn
 * from there the client proves with what the kernel gave it. PROVE_NET_RAW: one packet
 * socket (AF_PACKET), which the kernel opens only for CAP_NET_RAW over the user namespace
 * that owns the socket's network namespace. When that user namespace also owns the
 * daemon's network namespace (the device's), the connection may from then on do what
 * Linux gives CAP_NET_RAW over the device's (rdma_dev_has_raw_cap): create raw packet QPs
 * and their flows, set controlled Q_Keys. -EPERM otherwise: the root of a user namespace
 * of its own (`unshare -Ur`) has CAP_NET_RAW there only. lib/client proves it before the
 * first request that needs it, when the process can open such a socket.
 */

/**
 * Checks a received request before anything reads its payload: magic, version, command,
 * length (exactly the command's payload; REG_MR's segment count included) and number of
 * file descriptors received with it.
 * @return 0, -EPROTO (magic or version: the peer is another build), -EINVAL.
 */
int uroce_ctrl_check_request(const void *msg, size_t len, unsigned int nfds);

/** Payload bytes a request of @p cmd carries (REG_MR: without segments); -1 if unknown. */
long uroce_ctrl_request_size(uint32_t cmd);
/** File descriptors a request of @p cmd carries. */
unsigned int uroce_ctrl_request_fds(uint32_t cmd);

/**
 * Message I/O on a SOCK_SEQPACKET socket. uroce_ctrl_send() sends one message with up to
 * UROCE_CTRL_MAX_FDS descriptors; uroce_ctrl_recv() receives one, taking the descriptors
 * that came with it (closed if more than @p max_fds came, or if the message was cut).
 * @return bytes (0: the peer closed), or -errno; a truncated message is -EMSGSIZE.
 */
long uroce_ctrl_send(int sock, const void *msg, size_t len, const int *fds, unsigned int nfds);
long uroce_ctrl_recv(int sock, void *buf, size_t cap, int *fds, unsigned int max_fds,
		     unsigned int *nfds);
/**
 * One request and its reply on a connected control socket, for a program that speaks the
 * protocol by hand (the tests' hostile tenants; lib/client keeps its own, under its
 * context's lock). Builds the header (command @p cmd, sequence @p seq), sends @p req_len
 * bytes of @p req with @p nfds descriptors @p fds, and waits for the reply: a successful
 * one's first @p rep_len payload bytes go to @p rep (NULL: none kept) and its descriptors
 * to @p rep_fds (at most @p max_rep_fds, the count in *@p nrep_fds when not NULL; more are
 * closed, as are all when @p rep_fds is NULL).
 * @return the reply's status (0 or -errno); or -errno of the socket (-EAGAIN: no reply
 * within its SO_RCVTIMEO); -EPROTO for a reply that is not this request's or is shorter
 * than @p rep_len; -EMSGSIZE for a request over UROCE_CTRL_MSG_MAX; -ENOMEM.
 */
long uroce_ctrl_call(int sock, uint32_t seq, uint32_t cmd, const void *req, size_t req_len,
		     const int *fds, unsigned int nfds, void *rep, size_t rep_len, int *rep_fds,
		     unsigned int max_rep_fds, unsigned int *nrep_fds);

/* ---- shared memory formats ------------------------------------------------------------- */

/** Region kinds (struct uroce_shm_hdr.kind). */
enum uroce_ctrl_region_kind {
	UROCE_CTRL_REGION_CONTEXT = 1,
	UROCE_CTRL_REGION_CQ,
	UROCE_CTRL_REGION_QP,
	UROCE_CTRL_REGION_SRQ,
};

/** Scatter/gather entries of a WQE, and inline bytes of a send WQE: the transport's limits
 *  (UROCE_TP_MAX_SGE, UROCE_TP_MAX_INLINE; the daemon asserts they agree), spelled here
 *  so the application side need not include the transport. */
#define UROCE_CTRL_MAX_SGE 8
#define UROCE_CTRL_MAX_INLINE 128

/** A send work request in an SQ ring: ibv_send_wr flattened (no pointers; the AH is a
 *  handle of the poster's connection). */
struct uroce_ctrl_send_wqe {
	uint64_t wr_id;
	uint32_t opcode;          /**< enum ibv_wr_opcode */
	uint32_t send_flags;      /**< IBV_SEND_* */
	uint32_t imm_data;        /**< host order */
	uint32_t invalidate_rkey;
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t ah;              /**< UD: AH handle */
	uint64_t compare_add;
	uint64_t swap;
	union {
		uint32_t remote_qpn;  /**< UD */
		uint32_t remote_srqn; /**< XRC initiator: the peer's XRC SRQ */
	};
	uint32_t remote_qkey;
	uint32_t num_sge;
	uint32_t inline_len;
	union {
		struct {
			uint64_t addr;
			uint32_t length;
			uint32_t lkey;
		} sg_list[UROCE_CTRL_MAX_SGE];
		uint8_t inline_data[UROCE_CTRL_MAX_INLINE];
		/** IBV_WR_BIND_MW (num_sge 0): struct uroce_tp_bind's fields */
		struct {
			uint32_t mw_rkey; /**< the window's R_Key now: names it */
			uint32_t rkey;    /**< its R_Key once bound */
			uint32_t mr_lkey;
			uint32_t access;
			uint64_t addr;
			uint64_t length;
		} bind;
	};
};

/** A receive work request in an RQ or SRQ ring. */
struct uroce_ctrl_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t reserved;
	struct {
		uint64_t addr;
		uint32_t length;
		uint32_t lkey;
	} sg_list[UROCE_CTRL_MAX_SGE];
};

/** CQ rings carry struct ibv_wc as verbs defines it. */
#define UROCE_CTRL_CQE_SIZE sizeof(struct ibv_wc)

/** An async event in the context region's ring (ibv_get_async_event). */
struct uroce_ctrl_async_event {
	uint32_t event_type; /**< enum ibv_event_type */
	uint32_t handle;     /**< the QP, CQ or SRQ (handle of this connection); 0: device */
	uint32_t port;
	uint32_t reserved;
};
#define UROCE_CTRL_ASYNC_RING_SIZE 256

/* ---- sizes ------------------------------------------------------------------------------ */

/* Every struct above crosses a process boundary, between a library and a daemon that may
 * be built apart: the socket's messages and the shared rings' elements. A change of size
 * is a change of protocol, and must come with a new UROCE_CTRL_VERSION (messages) or
 * UROCE_SHM_VERSION (what lives in the shared regions); these make that change visible. */
#define UROCE_CTRL_SIZE(type, bytes) \
	static_assert(sizeof(type) == (bytes), #type ": a protocol change (see the version)")
UROCE_CTRL_SIZE(struct uroce_ctrl_hdr, 24);
UROCE_CTRL_SIZE(struct uroce_ctrl_hello_req, 40);
UROCE_CTRL_SIZE(struct uroce_ctrl_hello_rep, 72);
UROCE_CTRL_SIZE(struct uroce_ctrl_query_device_rep, 232);
UROCE_CTRL_SIZE(struct uroce_ctrl_query_port_req, 4);
UROCE_CTRL_SIZE(struct uroce_ctrl_query_port_rep, 52);
UROCE_CTRL_SIZE(struct uroce_ctrl_query_gid_req, 8);
UROCE_CTRL_SIZE(struct uroce_ctrl_query_gid_rep, 24);
UROCE_CTRL_SIZE(struct uroce_ctrl_handle, 8);
UROCE_CTRL_SIZE(struct uroce_ctrl_map_region_req, 8);
UROCE_CTRL_SIZE(struct uroce_ctrl_mr_seg, 24);
UROCE_CTRL_SIZE(struct uroce_ctrl_reg_mr_req, 40);
UROCE_CTRL_SIZE(struct uroce_ctrl_reg_mr_rep, 16);
UROCE_CTRL_SIZE(struct uroce_ctrl_alloc_mw_req, 8);
UROCE_CTRL_SIZE(struct uroce_ctrl_rereg_mr_req, 8);
UROCE_CTRL_SIZE(struct uroce_ctrl_import_mr_rep, 32);
UROCE_CTRL_SIZE(struct uroce_ctrl_resolve_l2_req, 32);
UROCE_CTRL_SIZE(struct uroce_ctrl_resolve_l2_rep, 8);
UROCE_CTRL_SIZE(struct uroce_ctrl_res_list_req, 8);
UROCE_CTRL_SIZE(struct uroce_ctrl_res_row, 328);
UROCE_CTRL_SIZE(struct uroce_ctrl_res_list_rep, 8);
UROCE_CTRL_SIZE(struct uroce_ctrl_alloc_mw_rep, 8);
UROCE_CTRL_SIZE(struct uroce_ctrl_create_cq_req, 16);
UROCE_CTRL_SIZE(struct uroce_ctrl_create_cq_rep, 24);
UROCE_CTRL_SIZE(struct uroce_ctrl_cq_ctl, 8);
UROCE_CTRL_SIZE(struct uroce_ctrl_resize_cq_req, 8);
UROCE_CTRL_SIZE(struct uroce_ctrl_queue_ctl, 128);
UROCE_CTRL_SIZE(struct uroce_ctrl_create_srq_req, 20);
UROCE_CTRL_SIZE(struct uroce_ctrl_create_srq_rep, 32);
UROCE_CTRL_SIZE(struct uroce_ctrl_modify_srq_req, 20);
UROCE_CTRL_SIZE(struct uroce_ctrl_query_srq_rep, 12);
UROCE_CTRL_SIZE(struct uroce_ctrl_create_qp_req, 48);
UROCE_CTRL_SIZE(struct uroce_ctrl_open_xrcd_req, 8);
UROCE_CTRL_SIZE(struct uroce_ctrl_open_qp_req, 8);
UROCE_CTRL_SIZE(struct uroce_ctrl_create_xrc_srq_req, 28);
UROCE_CTRL_SIZE(struct uroce_ctrl_create_xrc_srq_rep, 40);
UROCE_CTRL_SIZE(struct uroce_ctrl_create_qp_rep, 48);
UROCE_CTRL_SIZE(struct uroce_ctrl_modify_qp_req, 152);
UROCE_CTRL_SIZE(struct uroce_ctrl_query_qp_req, 8);
UROCE_CTRL_SIZE(struct uroce_ctrl_query_qp_rep, 176);
UROCE_CTRL_SIZE(struct uroce_ctrl_mcast_req, 24);
UROCE_CTRL_SIZE(struct uroce_ctrl_create_flow_req, 264);
UROCE_CTRL_SIZE(struct uroce_ctrl_create_ah_req, 40);
UROCE_CTRL_SIZE(struct uroce_ctrl_stats_req, 8);
UROCE_CTRL_SIZE(struct uroce_ctrl_stat, 56);
UROCE_CTRL_SIZE(struct uroce_ctrl_stats_rep, 8);
UROCE_CTRL_SIZE(struct uroce_ctrl_admin_req, 328);
UROCE_CTRL_SIZE(struct uroce_ctrl_cm_id_req, 8);
UROCE_CTRL_SIZE(struct uroce_ctrl_cm_create_id_req, 24);
UROCE_CTRL_SIZE(struct uroce_ctrl_cm_addr_req, 280);
UROCE_CTRL_SIZE(struct uroce_ctrl_cm_route, 304);
UROCE_CTRL_SIZE(struct uroce_ctrl_cm_param, 240);
UROCE_CTRL_SIZE(struct uroce_ctrl_cm_conn_req, 248);
UROCE_CTRL_SIZE(struct uroce_ctrl_cm_init_qp_attr_rep, 152);
UROCE_CTRL_SIZE(struct uroce_ctrl_cm_option_req, 24);
UROCE_CTRL_SIZE(struct uroce_ctrl_cm_event, 600);
UROCE_CTRL_SIZE(struct uroce_ctrl_send_wqe, 200);
UROCE_CTRL_SIZE(struct uroce_ctrl_recv_wqe, 144);
UROCE_CTRL_SIZE(struct uroce_ctrl_async_event, 16);
#undef UROCE_CTRL_SIZE

#ifdef __cplusplus
}
#endif

#endif /* UROCE_CTRL_H */
