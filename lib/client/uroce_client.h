/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_CLIENT_H
#define UROCE_CLIENT_H

/**
 * @file
 * The application side of uroce (the "provider"): it connects to uroced's control socket,
 * maps the rings the daemon shares, and implements the verbs on them.
 *
 * Objects embed the verbs structs as their first member (struct ibv_pd, ibv_mr, ibv_cq,
 * ibv_qp, ibv_srq, ibv_ah, ibv_comp_channel; CQs and QPs with room for ibv_cq_ex and
 * ibv_qp_ex), as rdma-core providers do, so the drop-in
 * libibverbs maps one to one: it hands out &obj->ibv and gets the object back with
 * container_of (to_upd(), to_ucq()...: client_obj.h, which also has the layout of CQs,
 * SRQs and QPs, opaque here: uroce_client_cq_ibv and its siblings give their ibv
 * structs). Each object's ibv.context is the ctx's @c ibv_ctx (set by the caller,
 * NULL here otherwise). Fields of the embedded structs that verbs documents as readable
 * (qp_num, qp_type, state, lkey, rkey, addr, length, cqe, handle...) are kept current.
 *
 * Errors: a verbs-shaped function (one per ibv_ call, named after it) returns what
 * rdma-core's call returns for the same mistake: 0 or a positive errno for an int (like
 * ibv_modify_qp), NULL with errno set for a pointer (like ibv_create_qp), and for
 * uroce_client_poll_cq a negative value, as ibv_poll_cq. The project's own calls, which
 * have no verbs counterpart (uroce_client_call, _discover, _stats, _admin and
 * _capture_start), return 0 or -errno like everything inside the project
 * (doc/design.md). A destroy (dealloc_pd, dereg_mr, destroy_cq...) asks the daemon first:
 * when it refuses (EBUSY while another object uses this one) nothing changes and the
 * object stays the caller's; on success the object is freed.
 *
 * Data path: post_send / post_recv write WQEs into shared rings and publish the producer
 * index (the doorbell); poll_cq reads CQEs from a shared ring. No system call on either.
 * One QP's send side (and one CQ) must not be used by two threads at once without the
 * caller's lock; rdma-core providers take a lock here, and so do these functions (a
 * spinlock per queue, uncontended in the usual one-thread-per-queue case).
 *
 * Memory registration moves the registered pages onto shared memory: each page range not
 * yet shared is copied into a new memfd and that memfd is mapped over it in place
 * (MAP_FIXED), so the application's pointer and data stay as they were, and the daemon
 * maps the same pages. Pages stay shared (still ordinary memory to the application) after
 * deregistration; overlapping registrations reuse what is already shared.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

struct uroce_client_ctx;

struct uroce_client_pd {
	struct ibv_pd ibv;
	struct uroce_client_ctx *ctx;
	uint32_t handle;
};

struct uroce_client_mr {
	struct ibv_mr ibv;
	struct uroce_client_ctx *ctx;
	uint32_t handle;
	uint64_t iova;       /**< what peers and WQEs address: ibv.addr unless reg_mr_iova */
	unsigned int access; /**< as registered: what a re-registration keeps */
};

struct uroce_client_channel {
	/** ibv.fd: what the application polls, an epoll fd readable when the daemon
	 *  signalled a completion event or went (as the async fd) */
	struct ibv_comp_channel ibv;
	struct uroce_client_ctx *ctx;
	uint32_t handle;
	int pipe; /**< the read end of the daemon's pipe, one byte per event (non-blocking) */
};

struct uroce_client_cq;
struct uroce_client_srq;
struct uroce_client_qp;
struct uroce_client_ah {
	struct ibv_ah ibv;
	struct uroce_client_ctx *ctx;
	uint32_t handle;
};

struct uroce_client_mw {
	struct ibv_mw ibv; /**< ibv.rkey: the R_Key of its latest bind (or allocation) */
	struct uroce_client_ctx *ctx;
	uint32_t handle;
};

/**
 * Connects to uroced at @p socket_path (NULL: $UROCE_SOCKET, else
 * UROCE_CTRL_DEFAULT_SOCKET). @return the context or NULL with errno (ENOENT or
 * ECONNREFUSED: no daemon; EPROTO: the daemon speaks another protocol version, with a
 * message on stderr; EACCES: the socket's permissions).
 */
struct uroce_client_ctx *uroce_client_open(const char *socket_path);
/** Closes the connection: the daemon frees every object of this context. */
void uroce_client_close(struct uroce_client_ctx *ctx);
/** The verbs context that embedded objects point to (see file comment). */
void uroce_client_set_ibv_context(struct uroce_client_ctx *ctx, struct ibv_context *ibv);
/** Device name the daemon serves ("uroce0"). */
const char *uroce_client_dev_name(const struct uroce_client_ctx *ctx);
/**
 * True in a child of fork() for a context its parent opened: every call on it fails with
 * EIO (the connection, rings and events are the parent's); the child opens its own.
 */
bool uroce_client_forked(const struct uroce_client_ctx *ctx);
/**
 * One control request and its reply (uroce_ctrl.h), for the commands this library has no
 * wrapper for (librdmacm's CM_*). Serialized with every other call on @p ctx. A reply
 * must carry exactly @p rep_len payload bytes.
 * @return 0 or -errno (the daemon's status, or the socket's).
 */
int uroce_client_call(struct uroce_client_ctx *ctx, uint32_t cmd, const void *req,
		      size_t req_len, void *rep, size_t rep_len, int *rep_fds,
		      unsigned int max_rep_fds);

/** Where discovery looks for daemons when $UROCE_SOCKET is not set. */
#define UROCE_CLIENT_SOCKET_DIR "/run/uroce"

/** A running uroced as discovery found it. */
struct uroce_client_daemon {
	char sock[108]; /**< its control socket (sockaddr_un.sun_path) */
	char name[64];  /**< the device name: the daemon's, numbered when several share it */
	__be64 guid;    /**< node GUID */
};

/**
 * Finds the running daemons: the sockets named in $UROCE_SOCKET (a colon-separated list),
 * else every socket in UROCE_CLIENT_SOCKET_DIR, sorted; each is connected (HELLO) and
 * queried. Daemons reporting the same name are told apart: the first keeps it, the next
 * take the lowest free <base><N> ("uroce0", "uroce1"). A socket from $UROCE_SOCKET that
 * fails gets one line on stderr. The same environment gives the same list, in the same
 * order, to every caller (libibverbs' devices, librdmacm's sessions).
 * @param out          the daemons found (malloc'd, the caller frees it)
 * @param explicit_list set when the sockets came from $UROCE_SOCKET
 * @return how many (0: none), or -ENOMEM
 */
int uroce_client_discover(struct uroce_client_daemon **out, bool *explicit_list);

int uroce_client_query_device(struct uroce_client_ctx *ctx, struct ibv_device_attr *attr);
int uroce_client_query_port(struct uroce_client_ctx *ctx, uint8_t port,
			    struct ibv_port_attr *attr);
int uroce_client_query_gid(struct uroce_client_ctx *ctx, uint8_t port, int index,
			   union ibv_gid *gid);
/** ibv_resolve_eth_l2_from_gid: the next hop's MAC for @p attr's destination GID and the
 *  port's VLAN ID (0xffff: none). @return 0, EINVAL (no GRH, another port, no such
 *  source GID), EHOSTUNREACH (no neighbour answered the daemon's ARP or ND). */
int uroce_client_resolve_l2(struct uroce_client_ctx *ctx, const struct ibv_ah_attr *attr,
			    uint8_t mac[6], uint16_t *vid);

/** The async event fd (readable when ibv_get_async_event would not block): an epoll fd
 *  over the daemon's event count and the control socket. */
int uroce_client_async_fd(const struct uroce_client_ctx *ctx);
/** ibv_get_async_event: blocks unless the fd is non-blocking (then EAGAIN). Fills the
 *  event type and the object (element.qp / cq / srq point at the embedded ibv structs).
 *  When the control socket hangs up (the daemon died or dropped this context), the events
 *  already in the ring come first, then one IBV_EVENT_DEVICE_FATAL; after it, EIO (the
 *  fd stays readable), as rdma-core's async fd after a disassociation. */
int uroce_client_get_async_event(struct uroce_client_ctx *ctx, struct ibv_async_event *ev);

struct uroce_client_pd *uroce_client_alloc_pd(struct uroce_client_ctx *ctx);
int uroce_client_dealloc_pd(struct uroce_client_pd *pd);

/*
 * Importing (ibv_import_device, ibv_import_pd, ibv_import_mr; lib/ctrl/uroce_ctrl.h,
 * "importing"): a context's token is an O_PATH descriptor of its region, which lets its
 * holder share the context's PDs and MRs; the objects are one, named by two contexts.
 */
/** A new token of @p ctx (ibv_context.cmd_fd; the caller closes it): dup, fstat and close
 *  work on it, read, write and ioctl fail with EBADF. -1 with errno on failure. */
int uroce_client_token(const struct uroce_client_ctx *ctx);
/** Makes @p ctx, just opened, import from the context whose token is @p token (which is
 *  sent, not consumed). @return 0, or -EINVAL: no context of this daemon (or ctx's own,
 *  or ctx imports already). */
int uroce_client_import_context(struct uroce_client_ctx *ctx, int token);
/** ibv_import_pd: the PD @p handle names in the context @p ctx imports from; its
 *  ibv.handle is @p handle, as rdma-core's. NULL with errno EINVAL: no such PD. */
struct uroce_client_pd *uroce_client_import_pd(struct uroce_client_ctx *ctx, uint32_t handle);
/** ibv_unimport_pd: forgets the PD here without destroying it. */
void uroce_client_unimport_pd(struct uroce_client_pd *pd);
/** ibv_import_mr: the MR @p handle names in the context @p pd's imports from; keys and
 *  length as registered, addr NULL (the memory may be another process's), ibv.handle
 *  @p handle. NULL with errno EINVAL: no such MR. */
struct uroce_client_mr *uroce_client_import_mr(struct uroce_client_pd *pd, uint32_t handle);
/** ibv_unimport_mr: forgets the MR here without deregistering it. */
void uroce_client_unimport_mr(struct uroce_client_mr *mr);

struct uroce_client_mr *uroce_client_reg_mr(struct uroce_client_pd *pd, void *addr,
					    size_t length, unsigned int access);
/** ibv_reg_mr_iova: peers and WQEs address the range [iova, iova + length). */
struct uroce_client_mr *uroce_client_reg_mr_iova(struct uroce_client_pd *pd, void *addr,
						 size_t length, uint64_t iova,
						 unsigned int access);
int uroce_client_dereg_mr(struct uroce_client_mr *mr);
/**
 * ibv_rereg_mr: changes what @p flags names (IBV_REREG_MR_CHANGE_TRANSLATION: @p addr and
 * @p length, addressed from @p addr; _PD: @p pd; _ACCESS: @p access) and keeps the rest.
 * The new registration is made before the old one goes (so on failure the MR is as it
 * was), then takes the old one's keys (REREG_MR): the L_Key and R_Key stay, as rxe and
 * mlx5 keep them and rdma-core's tests expect; @p mr stays the application's handle.
 * @return 0, or a negative errno (those of reg_mr and dereg_mr; EINVAL while a memory
 * window is bound to the MR); nothing changed.
 */
int uroce_client_rereg_mr(struct uroce_client_mr *mr, int flags, struct uroce_client_pd *pd,
			  void *addr, size_t length, unsigned int access);

struct uroce_client_channel *uroce_client_create_channel(struct uroce_client_ctx *ctx);
int uroce_client_destroy_channel(struct uroce_client_channel *ch);
/** ibv_get_cq_event: waits on the channel (unless its fd is non-blocking: EAGAIN) and
 *  returns the CQ that had the event; the caller acks it with uroce_client_ack_cq_events. */
int uroce_client_get_cq_event(struct uroce_client_channel *ch, struct uroce_client_cq **cq);
void uroce_client_ack_cq_events(struct uroce_client_cq *cq, unsigned int n);

struct uroce_client_cq *uroce_client_create_cq(struct uroce_client_ctx *ctx, int cqe,
					       struct uroce_client_channel *ch,
					       int comp_vector);
int uroce_client_destroy_cq(struct uroce_client_cq *cq);
/**
 * ibv_resize_cq: the CQ holds at least @p cqe completions from now on (ibv.cqe says how
 * many), and keeps those not polled yet, in order; polls and arms from other threads wait
 * for it. @return 0, or a negative errno: -EINVAL (@p cqe < 1, above the device's
 * max_cqe, or fewer than the completions the CQ holds; nothing changed), -ENOMEM,
 * -EPROTO (the daemon's reply was malformed: the CQ cannot be used any more).
 */
int uroce_client_resize_cq(struct uroce_client_cq *cq, int cqe);
/** The CQ's struct ibv_cq (cqe, handle, context...), what ibv_qp_init_attr's send_cq and
 *  recv_cq take. Never NULL. As uroce_client_srq_ibv and uroce_client_qp_ibv: for
 *  programs that see only this header (the objects' layout is client_obj.h's). */
struct ibv_cq *uroce_client_cq_ibv(struct uroce_client_cq *cq);
/** ibv_poll_cq: up to @p n completions; @return how many, or -errno. */
int uroce_client_poll_cq(struct uroce_client_cq *cq, int n, struct ibv_wc *wc);
int uroce_client_req_notify_cq(struct uroce_client_cq *cq, int solicited_only);

struct uroce_client_srq *uroce_client_create_srq(struct uroce_client_pd *pd,
						 struct ibv_srq_init_attr *attr);
/** ibv_modify_srq: IBV_SRQ_LIMIT arms the limit; IBV_SRQ_MAX_WR resizes the SRQ (the
 *  WQEs posted and not yet taken kept; posts of other threads wait for it). @return 0 or
 *  a positive errno: EINVAL (a size out of range or below the WQEs it holds, a limit
 *  above the size; nothing changed), ENOMEM, EPROTO (a malformed reply: the SRQ cannot
 *  be used any more). */
int uroce_client_modify_srq(struct uroce_client_srq *srq, struct ibv_srq_attr *attr, int mask);
int uroce_client_query_srq(struct uroce_client_srq *srq, struct ibv_srq_attr *attr);
int uroce_client_destroy_srq(struct uroce_client_srq *srq);
/** The SRQ's struct ibv_srq (what ibv_qp_init_attr's srq takes). Never NULL. */
struct ibv_srq *uroce_client_srq_ibv(struct uroce_client_srq *srq);
int uroce_client_post_srq_recv(struct uroce_client_srq *srq, struct ibv_recv_wr *wr,
			       struct ibv_recv_wr **bad_wr);

/** ibv_create_qp: attr->send_cq / recv_cq / srq must point at the ibv structs of this
 *  library's objects (uroce_client_cq_ibv...). attr->cap is written back. */
struct uroce_client_qp *uroce_client_create_qp(struct uroce_client_pd *pd,
					       struct ibv_qp_init_attr *attr);

/* ---- XRC (IBA vol 1 annex A14) ---- */
struct uroce_client_xrcd;
/** ibv_open_xrcd: @p fd -1 for a domain of this context alone, else the domain of that
 *  file, shared by every process that opens it so (@p oflags: O_CREAT, O_EXCL as
 *  ibv_open_xrcd; other bits ignored). NULL with errno (EINVAL: O_CREAT | O_EXCL and the domain
 *  exists, or no O_CREAT and it does not; ENOMEM). */
struct uroce_client_xrcd *uroce_client_open_xrcd(struct uroce_client_ctx *ctx, int fd,
						 int oflags);
/** @return 0, or a positive errno (EBUSY: an XRC SRQ or target QP of this context is
 *  in it). */
int uroce_client_close_xrcd(struct uroce_client_xrcd *xrcd);
/** An XRC SRQ of @p xrcd (ibv_create_srq_ex, IBV_SRQT_XRC): its receive completions go to
 *  @p cq, its WQEs' L_Keys are of @p pd. NULL with errno as uroce_client_create_srq. */
struct uroce_client_srq *uroce_client_create_xrc_srq(struct uroce_client_pd *pd,
						     struct uroce_client_xrcd *xrcd,
						     struct uroce_client_cq *cq,
						     struct ibv_srq_init_attr *attr);
/** ibv_get_srq_num: the number an XRC SRQ is named by in requests; 0 for another SRQ. */
uint32_t uroce_client_srq_num(const struct uroce_client_srq *srq);
/** An XRC QP: attr->qp_type IBV_QPT_XRC_SEND (an initiator: @p pd, attr->send_cq, and
 *  attr->recv_cq or NULL) or IBV_QPT_XRC_RECV (a target: @p xrcd only, @p pd NULL). Its
 *  sends name the peer's SRQ in wr->qp_type.xrc.remote_srqn. NULL with errno (EINVAL:
 *  what the type does not take, or misses). */
struct uroce_client_qp *uroce_client_create_xrc_qp(struct uroce_client_ctx *ctx,
						   struct uroce_client_pd *pd,
						   struct uroce_client_xrcd *xrcd,
						   struct ibv_qp_init_attr *attr);
/** ibv_open_qp: the XRC target QP @p qpn of @p xrcd, which any context may have made; it
 *  lives while any context has it (made or opened; uroce_client_destroy_qp gives it up).
 *  NULL with errno (EINVAL: no target QP of that number in the domain). */
struct uroce_client_qp *uroce_client_open_qp(struct uroce_client_xrcd *xrcd, uint32_t qpn,
					     void *qp_context);
int uroce_client_modify_qp(struct uroce_client_qp *qp, struct ibv_qp_attr *attr, int mask);
int uroce_client_query_qp(struct uroce_client_qp *qp, struct ibv_qp_attr *attr, int mask,
			  struct ibv_qp_init_attr *init);
int uroce_client_destroy_qp(struct uroce_client_qp *qp);
/** The QP's struct ibv_qp (qp_num, qp_type, state: kept current). Never NULL. */
struct ibv_qp *uroce_client_qp_ibv(struct uroce_client_qp *qp);
/** ibv_create_flow: a rule steering received frames to raw packet QP @p qp, @p attr and
 *  its num_of_specs specs (by their own sizes, as rdma-core reads them; attr->size is
 *  not read), at most UROCE_CTRL_FLOW_ATTR_MAX bytes in all, else EINVAL. @return 0 with
 *  the rule's handle in @p handle, or a positive errno (EINVAL, EOPNOTSUPP as
 *  ibv_create_flow gives them; see uroce_tp_create_flow). */
int uroce_client_create_flow(struct uroce_client_qp *qp, const struct ibv_flow_attr *attr,
			     uint32_t *handle);
/** ibv_destroy_flow. @return 0 or a positive errno (EINVAL: no such rule). */
int uroce_client_destroy_flow(struct uroce_client_ctx *ctx, uint32_t handle);
/** ibv_post_send / ibv_post_recv: wr->wr.ud.ah points at a uroce_client_ah's ibv. */
/** ibv_attach_mcast (@p attach) / ibv_detach_mcast. @return 0 or a positive errno. */
int uroce_client_mcast(struct uroce_client_qp *qp, const union ibv_gid *gid, uint16_t lid,
		       bool attach);
int uroce_client_post_send(struct uroce_client_qp *qp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad_wr);
int uroce_client_post_recv(struct uroce_client_qp *qp, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad_wr);

struct uroce_client_ah *uroce_client_create_ah(struct uroce_client_pd *pd,
					       struct ibv_ah_attr *attr);
int uroce_client_destroy_ah(struct uroce_client_ah *ah);

/** ibv_alloc_mw: NULL with errno (EINVAL: not type 1 or 2; EAGAIN: a [limits] bound). */
struct uroce_client_mw *uroce_client_alloc_mw(struct uroce_client_pd *pd,
					      enum ibv_mw_type type);
/** ibv_dealloc_mw (a bound window is unbound first). @return 0 or a positive errno. */
int uroce_client_dealloc_mw(struct uroce_client_mw *mw);
/**
 * ibv_bind_mw (type 1): posts an IBV_WR_BIND_MW work request on @p qp with the window's
 * next R_Key (ibv_inc_rkey), and gives the window that R_Key at once, as rdma-core's rxe
 * provider does: the application undoes it if the bind completes in error. Type 2
 * windows are bound by posting IBV_WR_BIND_MW (uroce_client_post_send) instead.
 * @return 0 or a positive errno (EINVAL: a zero-based window, or those of post_send).
 */
int uroce_client_bind_mw(struct uroce_client_qp *qp, struct uroce_client_mw *mw,
			 const struct ibv_mw_bind *bind);

/** ibv_wc_status_str's text (this library does not link libibverbs). */
const char *uroce_client_wc_status_str(enum ibv_wc_status status);

/** Named counters from the daemon (uroce stat). @p flags: UROCE_CTRL_STATS_PER_QP.
 *  @return the count (the caller frees *names_values), or -errno. */
struct uroce_ctrl_stat;
int uroce_client_stats(struct uroce_client_ctx *ctx, uint32_t flags,
		       struct uroce_ctrl_stat **stats);
/** The device's objects of one kind (uroce res show): @p type an enum uroce_ctrl_res_type.
 *  Rows of other users' processes are left out unless the caller is an administrator.
 *  @return the count (the caller frees *rows), or -errno: -EINVAL no such type, -EPROTO a
 *  malformed reply. */
struct uroce_ctrl_res_row;
int uroce_client_res_list(struct uroce_client_ctx *ctx, uint32_t type,
			  struct uroce_ctrl_res_row **rows);
/**
 * Operator commands (capture stop, fault injection, log level, cm-drop); see enum
 * uroce_ctrl_admin_op. @return 0 or -errno: -EPERM unless the caller is root or in
 * control.admin_group.
 */
struct uroce_ctrl_admin_req;
int uroce_client_admin(struct uroce_client_ctx *ctx, const struct uroce_ctrl_admin_req *req);
/**
 * Starts the daemon's capture into @p fd, a file the caller opened for writing (the
 * daemon never opens a path for a client). The daemon gets a duplicate; the caller
 * still owns @p fd. @return 0 or -errno (-EPERM as for uroce_client_admin).
 */
int uroce_client_capture_start(struct uroce_client_ctx *ctx, int fd);

#ifdef __cplusplus
}
#endif

#endif /* UROCE_CLIENT_H */
