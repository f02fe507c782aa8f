/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_TRANSPORT_H
#define UROCE_TRANSPORT_H

/**
 * @file
 * The InfiniBand transport of one RoCEv2 endpoint, sans I/O (IBA vol 1 ch. 9-11).
 *
 * Contract
 * - No I/O and no clock: frames come in through uroce_tp_rx() (or, parsed, through
 *   uroce_tp_rx_parsed()), go out through the device's tx callback, and time is the
 *   @c now_ns argument of every call that can start or fire a timer. Nothing here reads
 *   a clock, sleeps, allocates per packet or calls DPDK. Given the same inputs and seed,
 *   the output is the same.
 * - One device is driven by one thread at a time (the daemon shards devices or QPs per
 *   lcore); calls on one device are not thread-safe.
 * - Objects and semantics are those of rdma-core's verbs: the enums, attribute structs,
 *   masks and ibv_wc come from <infiniband/verbs.h>, errors are the errno values
 *   ibv_* calls return for the same mistakes (as a negative return), completion statuses
 *   are enum ibv_wc_status. Work requests are plain structs without pointers but a
 *   UD send's AH (struct uroce_tp_send_wqe, uroce_tp_recv_wqe), posted whole or written
 *   in place into the queue's slot (uroce_tp_post_send_reserve).
 * - Memory is reached only through MRs: an MR maps [iova, iova + length) of the
 *   application's address space to @c host bytes the caller gives (the same address
 *   when both sides map shared memory at one address).
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "uroce_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

#define UROCE_TP_MAX_SGE 8
#define UROCE_TP_MAX_INLINE (UROCE_TP_MAX_SGE * 16)
#define UROCE_TP_MAX_GID 16
#define UROCE_TP_MAX_QP_WR 16384
#define UROCE_TP_MAX_CQE 65536
#define UROCE_TP_MAX_RD_ATOMIC 128
/** Largest frame a raw packet QP sends or receives: a 9000-byte MTU, header and tag. */
#define UROCE_TP_RAW_FRAME_MAX 9018

/**
 * The power of two at or above @p n (1 for 0), @p n at most 2^31: how many entries the
 * transport's rings have (a CQ of cqe entries: uroce_tp_pow2_at_least(cqe + 1); send and
 * receive queues: of max_wr), and uroced's shared rings, which mirror them.
 */
static inline uint32_t uroce_tp_pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

struct uroce_tp_dev;
struct uroce_tp_pd;
struct uroce_tp_mr;
struct uroce_tp_cq;
struct uroce_tp_srq;
struct uroce_tp_xrcd;
struct uroce_tp_qp;
struct uroce_tp_ah;
struct uroce_tp_flow;

/* ------------------------------------------------------------------------------------- */
/* Device                                                                                 */

/** Counters, named as Linux rxe names them (drivers/infiniband/sw/rxe/rxe_hw_counters.c),
 *  plus uroce's own drop reasons. */
#define UROCE_TP_COUNTERS(X)                                                              \
	X(sent_pkts)                                                                      \
	X(rcvd_pkts)                                                                      \
	X(duplicate_request)                                                              \
	X(out_of_seq_request)                                                             \
	X(rcvd_rnr_err)                                                                   \
	X(send_rnr_err)                                                                   \
	X(rcvd_seq_err)                                                                   \
	X(ack_deferred)                                                                   \
	X(retry_exceeded_err)                                                             \
	X(retry_rnr_exceeded_err)                                                         \
	X(completer_retry_err)                                                            \
	X(send_err)                                                                       \
	X(link_downed)                                                                    \
	X(rdma_sends)                                                                     \
	X(rdma_recvs)                                                                     \
	X(rcvd_malformed)                                                                 \
	X(rcvd_icrc_err)                                                                  \
	X(rcvd_unknown_qp)                                                                \
	X(rcvd_bad_pkey)                                                                  \
	X(rcvd_bad_qkey)                                                                  \
	X(rcvd_bad_xrc_srq)                                                               \
	X(rcvd_wrong_opcode)                                                              \
	X(rcvd_wrong_peer)                                                                \
	X(rcvd_in_wrong_state)                                                            \
	X(rcvd_ghost_ack)                                                                 \
	X(rcvd_ack_past_go_back)                                                          \
	X(uc_dropped_msgs)                                                                \
	X(ud_dropped_no_rwqe)                                                             \
	X(tx_busy)                                                                        \
	X(raw_sent_pkts)                                                                  \
	X(raw_rcvd_pkts)                                                                  \
	X(raw_dropped_no_rwqe)

struct uroce_tp_counters {
#define UROCE_TP_COUNTER_FIELD(name) uint64_t name;
	UROCE_TP_COUNTERS(UROCE_TP_COUNTER_FIELD)
#undef UROCE_TP_COUNTER_FIELD
};

/** Sends one frame (Ethernet header to ICRC). Returns 0, or -EAGAIN when the link is
 *  full: the transport keeps the packet's work and tries again on a later call. The
 *  frame is only valid during the call. */
typedef int (*uroce_tp_tx_fn)(void *io_ctx, const uint8_t *frame, uint32_t len);
/** Optional, with uroce_tp_tx_commit_fn: where to build a frame of @p len bytes to
 *  @p dst_mac in place (the port's own buffer: no copy of the frame afterwards), or NULL
 *  to have it built in the transport's and passed to tx. The buffer is the caller's
 *  until the commit; a frame whose payload cannot be read (the MR went away) is never
 *  committed, and the next call may take its buffer back. */
typedef uint8_t *(*uroce_tp_tx_buf_fn)(void *io_ctx, const uint8_t dst_mac[6], uint32_t len);
/** Sends the frame built in the buffer tx_buf gave: 0, or -EAGAIN as tx (the buffer is
 *  then the caller's again, and the transport builds the frame anew later). */
typedef int (*uroce_tp_tx_commit_fn)(void *io_ctx, uint8_t *frame, uint32_t len);

/** A piece of a frame's payload left in registered memory (zero-copy TX). */
struct uroce_tp_tx_seg {
	const uint8_t *addr;
	uint32_t len;
	void *mr_ctx; /**< what uroce_tp_mr_set_ctx() gave the piece's MR: the host's pin */
};
/** Most pieces one zero-copy frame has; a payload in more falls back to a copy. */
#define UROCE_TP_TX_SEGS_MAX 4

/**
 * Optional: sends a frame whose payload is not copied: @p hdr (@p hdr_len bytes, Ethernet
 * header to the last transport header), then the @p nseg pieces of registered memory,
 * then @p tail (@p tail_len bytes: pad and ICRC). The pieces must stay mapped until the
 * frame has left: the host pins them through mr_ctx, since deregistering an MR does not
 * wait for frames. Offered only for RC SEND and RDMA WRITE payloads of at least zc_min
 * bytes, from MRs with a ctx, since the ICRC is computed here and the bytes are read
 * again later: an RC application may not touch them until its WQE completes, which
 * needs the peer's ACK. UC and UD complete a WQE when it is sent, and an RDMA READ
 * response reads memory its owner may be writing (a flag a peer polls by READ): a
 * frame torn between the two reads would fail its ICRC at every retry, so those are
 * copied once and checksummed from the copy.
 * @return 0; -EAGAIN as tx; -ENOTSUP: not this frame (the transport then builds it whole
 *   and sends it through tx_buf or tx).
 */
typedef int (*uroce_tp_tx_zc_fn)(void *io_ctx, const uint8_t *hdr, uint32_t hdr_len,
				 const struct uroce_tp_tx_seg *seg, uint32_t nseg,
				 const uint8_t *tail, uint32_t tail_len);

/** An asynchronous event (IBV_EVENT_*) for a QP, SRQ or the device. */
typedef void (*uroce_tp_event_fn)(void *io_ctx, enum ibv_event_type type, void *object);

struct uroce_tp_dev_cfg {
	uint8_t mac[6];
	/** GID table: index 0.. of RoCEv2 GIDs (IPv4-mapped ::ffff:a.b.c.d or IPv6). */
	union ibv_gid gid[UROCE_TP_MAX_GID];
	uint8_t gid_count;
	/** The frame functions (tx, tx_buf, tx_commit, tx_zc) take @c tx_ctx: a layer that
	 *  makes the device for its host (lib/rnic) hands the port's own functions through,
	 *  so a frame goes from here to the port with no call between. */
	uroce_tp_tx_fn tx;
	uroce_tp_tx_buf_fn tx_buf;       /**< may be NULL: frames are built here, then tx */
	uroce_tp_tx_commit_fn tx_commit; /**< with tx_buf */
	uroce_tp_tx_zc_fn tx_zc;         /**< may be NULL: payloads are always copied */
	/** Payloads shorter than this are copied even with tx_zc: below a few hundred bytes
	 *  a copy costs less than the segments that point at them. */
	uint32_t zc_min;
	uroce_tp_event_fn event; /**< may be NULL */
	/** Called when a message needs a receive WQE and the QP's receive queue (@p srq
	 *  NULL) or the SRQ @p srq it takes from (its own, or for an XRC target the one
	 *  the request names) is empty (may be NULL): the caller posts what it has queued elsewhere
	 *  (uroce_tp_post_recv / uroce_tp_post_srq_recv and their *_reserve / *_commit
	 *  are allowed here). Without it, a
	 *  receive posted just before the message arrived could be missed: RNR NAK for RC,
	 *  a dropped message for UC and UD. */
	void (*rq_refill)(void *io_ctx, struct uroce_tp_qp *qp, struct uroce_tp_srq *srq);
	/** QP1, the GSI (IBA 13.5.1): a UD SEND Only to QPN 1 with the GSI Q_Key, good P_Key
	 *  and ICRC, is handed here whole (the CM's MADs); QP1 has no queues in the
	 *  transport. NULL: such packets count as rcvd_unknown_qp. */
	void (*gsi_rx)(void *io_ctx, const struct uroce_wire_pkt *pkt, uint64_t now_ns);
	void *io_ctx; /**< first argument of every callback but the frame functions */
	void *tx_ctx; /**< first argument of tx, tx_buf, tx_commit and tx_zc (NULL: io_ctx) */
	/** Seeds QPNs and the key bytes of lkeys/rkeys (stale keys are refused), when
	 *  @c random is NULL: the same seed, the same identifiers (simulators, replays). */
	uint64_t seed;
	/** Unpredictable numbers for the QPN base and key bytes (may be NULL: @c seed).
	 *  A daemon facing the network gives one: identifiers a peer can guess help it
	 *  aim forged packets at a tenant's QP or memory. */
	uint64_t (*random)(void *io_ctx);
	/** Responder: ACK at least every this many packets without AckReq (>= 1). */
	uint32_t ack_coalesce;
	/** Requester: at most this many PSNs in flight per QP (rxe: 128). */
	uint32_t max_unacked_psns;
	/** Requester: set AckReq at least every this many packets (rxe: 64). */
	uint32_t max_pkts_per_ack;
	/** uroce_tp_process: packets one QP sends per visit before the next QP's turn, in
	 *  round robin over the QPs with something to send (0: no limit, a QP sends until
	 *  done or the link refuses). A flood on one QP then delays another's message by at
	 *  most this many packets per busy QP, not by the flood's whole queue. */
	uint32_t tx_burst;
	/** The port's active MTU: UD QPs send and accept messages up to it (rxe's rule:
	 *  RC/UC use the path MTU of their QP, UD the port's). */
	enum ibv_mtu port_mtu;
	/** 802.1Q VLAN ID of every frame sent, 1..4094; 0: untagged. The PCP is the
	 *  address's SL (0..7), as mlx5 maps it. Receiving is the caller's filter. */
	uint16_t vlan_id;
	/** Skip computing and checking the ICRC (benchmarks only: not RoCEv2 then). */
	bool no_icrc;
	/** The port's Ethernet MTU (0: 1500): a raw packet QP sends and receives frames of at
	 *  most eth_mtu + 18 bytes (Ethernet header and one VLAN tag), and never more than
	 *  UROCE_TP_RAW_FRAME_MAX. */
	uint32_t eth_mtu;
	/** The debug log (may be NULL, the default: then nothing is formatted, and a step of
	 *  the responder or completer costs one test of a register). One line per state
	 *  change of either, named as rxe names them, without a newline:
	 *  "qp 0x000012 psn 7 resp: CHK_PSN -> CHK_OP_SEQ". Up to ten lines a packet: give
	 *  it only when they are wanted. */
	void (*debug_log)(void *io_ctx, const char *fmt, va_list ap);
};

/** Fills @p cfg with the defaults (rxe's values). */
void uroce_tp_dev_cfg_init(struct uroce_tp_dev_cfg *cfg);

/** @return the device, or NULL with errno set (EINVAL on a bad configuration). */
struct uroce_tp_dev *uroce_tp_dev_create(const struct uroce_tp_dev_cfg *cfg);
/** Frees the device and every object still in it. */
void uroce_tp_dev_destroy(struct uroce_tp_dev *dev);

/** Device and port properties, as ibv_query_device/ibv_query_port report them. */
void uroce_tp_query_device(const struct uroce_tp_dev *dev, struct ibv_device_attr *attr);
const struct uroce_tp_counters *uroce_tp_counters(const struct uroce_tp_dev *dev);
/** The most packets other QPs sent on their turns in uroce_tp_process while one QP waited
 *  on the work list for its own, since the device was created (a high-water mark, not a
 *  count): how long one QP's flood held another's message back, counted in packets, so
 *  the host's CPU scheduler cannot distort it. At most cfg.tx_burst times the number of
 *  other QPs with packets to send; with tx_burst 0, as much as a flood's whole queue. */
uint64_t uroce_tp_turn_wait_max(const struct uroce_tp_dev *dev);

/**
 * Receives one frame (from its Ethernet header). Malformed frames, bad ICRCs, unknown
 * QPs and packets a QP may not take are dropped and counted.
 */
void uroce_tp_rx(struct uroce_tp_dev *dev, const uint8_t *frame, uint32_t len,
		 uint64_t now_ns);
/**
 * uroce_tp_rx() for a frame its caller has parsed already (uroce_tp_rx is
 * uroce_wire_parse, then this): @p err is what the parse returned, @p pkt what it filled
 * (not read unless @p err is UROCE_WIRE_OK; the frame it points into must stay valid
 * during the call). A host whose IP stack parses the frame first hands on its result
 * (lib/ipstack's uroce_ip_input_roce), and no header is parsed twice.
 */
void uroce_tp_rx_parsed(struct uroce_tp_dev *dev, const struct uroce_wire_pkt *pkt,
			enum uroce_wire_err err, uint64_t now_ns);

/**
 * Lets the device work: requesters send what is posted (within their windows), responders
 * send the ACKs their last receive burst asked for (one per QP and burst), and
 * retransmission and RNR timers that are due fire. Call it after posting, after each
 * burst of uroce_tp_rx() calls, and whenever uroce_tp_next_deadline() is reached.
 */
void uroce_tp_process(struct uroce_tp_dev *dev, uint64_t now_ns);

#define UROCE_TP_GSI_QPN 1
#define UROCE_TP_GSI_QKEY 0x80010000u /* IBA 13.5.1: the well-known Q_Key of QP1 */

/**
 * Sends one UD SEND Only from QP1 (the GSI) to QP @p dqpn at @p ah (is_global: sgid_index,
 * dgid, traffic class, flow label) and @p dmac, with Q_Key @p qkey: how the CM's MADs go
 * out. @return 0, -EINVAL (bad GID index or size), -EAGAIN (tx refused: the MAD is lost
 * as on a wire; the CM's timers resend).
 */
int uroce_tp_gsi_send(struct uroce_tp_dev *dev, const struct ibv_ah_attr *ah,
		      const uint8_t dmac[6], uint32_t dqpn, uint32_t qkey, const void *payload,
		      uint32_t len);

/** When uroce_tp_process() must run next: 0 when packets wait to be sent (posted and not
 *  yet processed, or refused by the link), else the earliest armed timer, or UINT64_MAX.
 *  O(1); uroce_tp_process() costs what the busy QPs cost, not what the device holds. */
uint64_t uroce_tp_next_deadline(const struct uroce_tp_dev *dev);

/** Sets or (NULL) clears the debug log of uroce_tp_dev_cfg.debug_log, between any two
 *  calls: a host turns the state-change lines on and off with its log level. */
void uroce_tp_set_debug_log(struct uroce_tp_dev *dev,
			    void (*debug_log)(void *io_ctx, const char *fmt, va_list ap));

/* ------------------------------------------------------------------------------------- */
/* Protection domains, memory regions, address handles                                   */

struct uroce_tp_pd *uroce_tp_alloc_pd(struct uroce_tp_dev *dev);
/** @return 0, or -EBUSY while MRs, memory windows, QPs, SRQs or AHs still use it. */
int uroce_tp_dealloc_pd(struct uroce_tp_pd *pd);

/**
 * Registers [iova, iova + length), reachable at @p host, with IBV_ACCESS_* flags.
 * @return the MR (lkey and rkey in uroce_tp_mr_keys), or NULL with errno: EINVAL for
 * flags rdma-core refuses (REMOTE_WRITE or REMOTE_ATOMIC without LOCAL_WRITE, unknown
 * bits), EOPNOTSUPP for on-demand paging (ON_DEMAND), which the device has not, ENOMEM.
 */
struct uroce_tp_mr *uroce_tp_reg_mr(struct uroce_tp_pd *pd, uint64_t iova, void *host,
				    uint64_t length, unsigned int access);
void uroce_tp_mr_keys(const struct uroce_tp_mr *mr, uint32_t *lkey, uint32_t *rkey);
/** Lets frames point into the MR (cfg.tx_zc): @p ctx is what the host pins them by;
 *  NULL (the default) copies its bytes into every frame. */
void uroce_tp_mr_set_ctx(struct uroce_tp_mr *mr, void *ctx);
/** @return 0, or -EINVAL while memory windows are bound to it (IBA 10.6.7.2.3: windows
 *  are unbound or deallocated first; rxe says EINVAL too). */
int uroce_tp_dereg_mr(struct uroce_tp_mr *mr);
/**
 * ibv_rereg_mr under the same keys: @p to (the new registration) takes the L_Key and
 * R_Key of @p from, which takes those @p to had; deregistering @p from afterwards leaves
 * the new translation, PD and rights under the keys peers and WQEs already hold, as rxe
 * and mlx5 keep them (rdma-core's tests count on it). From the swap on, a packet with the
 * key reaches the new registration. @return 0, or -EINVAL (windows bound to either, or
 * another device's MR; nothing changed).
 */
int uroce_tp_mr_swap_keys(struct uroce_tp_mr *from, struct uroce_tp_mr *to);

/*
 * Memory windows (IBA 10.6.7; rxe's rxe_mw.c): an R_Key for part of an MR with
 * MW_BIND access, granted and revoked without the device's control path.
 * - Type 1: bound by a BIND_MW work request on any QP of its PD (ibv_bind_mw posts one);
 *   any QP of the PD may then be reached through it; length 0 unbinds; never
 *   invalidated. A bind changes only the R_Key's key byte.
 * - Type 2 (2B): free until a BIND_MW work request on a QP binds it to that QP alone;
 *   only that QP's peer may use it; LOCAL_INV on its QP or a SEND with Invalidate from
 *   that QP's peer frees it again.
 * Window keys and MR keys are one name space: a window's R_Key is never an MR's L_Key
 * or R_Key, and the responder takes either (bounds and access then those of the window).
 */
struct uroce_tp_mw;
/** @return the window (unbound; R_Key in uroce_tp_mw_rkey), or NULL with errno: EINVAL
 *  for a type verbs does not define, ENOMEM. */
struct uroce_tp_mw *uroce_tp_alloc_mw(struct uroce_tp_pd *pd, enum ibv_mw_type type);
uint32_t uroce_tp_mw_rkey(const struct uroce_tp_mw *mw);
/** The MR the window is bound to now, or NULL. */
const struct uroce_tp_mr *uroce_tp_mw_mr(const struct uroce_tp_mw *mw);
/** Unbinds it if bound, and frees it. @return 0. */
int uroce_tp_dealloc_mw(struct uroce_tp_mw *mw);

/** An address handle for UD sends; @p dmac is the resolved next hop (the caller does
 *  ARP/ND). @return the AH, or NULL with errno (EINVAL: bad GID index or port). */
struct uroce_tp_ah *uroce_tp_create_ah(struct uroce_tp_pd *pd, const struct ibv_ah_attr *attr,
				       const uint8_t dmac[6]);
/** @return 0. Always allowed, even with WRs that name it still queued: post_send copied
 *  what they need (as mlx5 and rxe copy the address vector into the WQE). */
int uroce_tp_destroy_ah(struct uroce_tp_ah *ah);

/* ------------------------------------------------------------------------------------- */
/* Completion queues and shared receive queues                                           */

/** A wc_flags bit verbs does not define: the completion's message had the Solicited
 *  Event bit (IBA 9.2.1), for ibv_req_notify_cq(solicited_only). The caller clears it
 *  before handing the completion to an application. */
#define UROCE_TP_WC_SOLICITED (1u << 30)
/** ibv_wc.sl of a UD receive: RoCE carries no service level, so it holds the packet
 *  type, as mlx5 reports it (bit 3: a RoCEv2 UDP header; bits 2-0: the L3 header, 1 IPv6,
 *  2 IPv4; Annex A17.4.5.1 puts it in the completion). UCX's UD transport reads it to
 *  find the destination address in the 40-byte GRH area, and drops what it cannot. */
#define UROCE_TP_WC_SL_ROCEV2_IPV6 0x9u
#define UROCE_TP_WC_SL_ROCEV2_IPV4 0xau

/** @return the CQ, or NULL with errno (EINVAL: cqe < 1 or above the device maximum). It
 *  holds at least @p cqe completions (cqe rounded up to 2^k - 1, as ibv_create_cq may). */
struct uroce_tp_cq *uroce_tp_create_cq(struct uroce_tp_dev *dev, int cqe);
/** @return 0, or -EBUSY while a QP uses it. */
int uroce_tp_destroy_cq(struct uroce_tp_cq *cq);
/** ibv_resize_cq: the CQ holds at least @p cqe completions from now on (rounded as at
 *  creation), those it holds kept in order. @return 0, or -EINVAL (cqe < 1, above the
 *  device maximum, or fewer than the completions it holds now; nothing changed),
 *  -ENOMEM (nothing changed). */
int uroce_tp_resize_cq(struct uroce_tp_cq *cq, int cqe);
/** Completions the CQ holds (not yet polled). */
uint32_t uroce_tp_cq_count(const struct uroce_tp_cq *cq);
/** Up to @p n completions, oldest first. @return how many were written. */
int uroce_tp_poll_cq(struct uroce_tp_cq *cq, int n, struct ibv_wc *wc);
/** The CQs that hold completions, in the order they got the first since they were last
 *  empty: the first of them, or NULL. A CQ joins at its first completion and leaves when
 *  uroce_tp_poll_cq() (or a QP's reset) empties it, so a caller that moves completions
 *  elsewhere walks this list instead of every CQ, and one it could not empty stays. */
struct uroce_tp_cq *uroce_tp_cq_ready_first(struct uroce_tp_dev *dev);
/** The CQ after @p cq on that list, or NULL: take it before polling @p cq empty. */
struct uroce_tp_cq *uroce_tp_cq_ready_next(struct uroce_tp_cq *cq);
/** True from the first completion that did not fit on (IBV_EVENT_CQ_ERR was raised then,
 *  once); that completion and the later ones that do not fit are lost. */
bool uroce_tp_cq_overflowed(const struct uroce_tp_cq *cq);

struct uroce_tp_srq *uroce_tp_create_srq(struct uroce_tp_pd *pd,
					 const struct ibv_srq_init_attr *init);
/** IBV_SRQ_LIMIT arms the limit event (IBV_EVENT_SRQ_LIMIT_REACHED, fires once);
 *  IBV_SRQ_MAX_WR resizes it (to a power of two at least that), the WQEs posted and not
 *  taken kept in order. @return 0, or -EINVAL (another mask bit, max_wr out of range or
 *  below the WQEs it holds, a limit above the size; nothing changed), -ENOMEM. */
int uroce_tp_modify_srq(struct uroce_tp_srq *srq, const struct ibv_srq_attr *attr, int mask);
int uroce_tp_query_srq(const struct uroce_tp_srq *srq, struct ibv_srq_attr *attr);
int uroce_tp_destroy_srq(struct uroce_tp_srq *srq);

/* ------------------------------------------------------------------------------------- */
/* XRC (IBA vol 1 annex A14): an initiator QP (IBV_QPT_XRC_SEND) sends as RC does, each
 * request naming an XRC SRQ of the peer (uroce_tp_send_wqe.remote_srqn, the XRCETH); the
 * peer's target QP (IBV_QPT_XRC_RECV) has no queues of its own: a SEND consumes a WQE of
 * the SRQ the request names, whose CQ gets the completion (qp_num the target QP's), and
 * R_Keys are checked in that SRQ's PD. The SRQ must be in the target QP's XRC domain,
 * else the request is answered with NAK Invalid Request and the target QP goes to ERR,
 * as for any invalid request; so is a message whose packets name different SRQs. */

/** @return an XRC domain, or NULL with errno ENOMEM. */
struct uroce_tp_xrcd *uroce_tp_alloc_xrcd(struct uroce_tp_dev *dev);
/** @return 0, or -EBUSY while an XRC SRQ or target QP is in it. */
int uroce_tp_dealloc_xrcd(struct uroce_tp_xrcd *xrcd);
/** An XRC SRQ of @p xrcd whose receive completions go to @p cq, its WQEs' L_Keys in
 *  @p pd. @return it, or NULL with errno (EINVAL: no XRCD or CQ, or another device's,
 *  or init as uroce_tp_create_srq refuses it; ENOMEM). */
struct uroce_tp_srq *uroce_tp_create_xrc_srq(struct uroce_tp_pd *pd, struct uroce_tp_xrcd *xrcd,
					     struct uroce_tp_cq *cq,
					     const struct ibv_srq_init_attr *init);
/** ibv_get_srq_num: the number requests name the XRC SRQ by (1..2^24 - 1); 0 for an SRQ
 *  that is not XRC. */
uint32_t uroce_tp_srq_num(const struct uroce_tp_srq *srq);

/* ------------------------------------------------------------------------------------- */
/* Work requests                                                                          */

struct uroce_tp_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/** What IBV_WR_BIND_MW carries (ibv_send_wr.bind_mw flattened, as rxe's WQE has it). */
struct uroce_tp_bind {
	uint32_t mw_rkey; /**< the window's R_Key now: names the window */
	uint32_t rkey;    /**< its R_Key once bound (only the key byte is taken) */
	uint32_t mr_lkey; /**< the MR it opens onto; unused when length is 0 */
	uint32_t access;  /**< IBV_ACCESS_REMOTE_READ, _WRITE, _ATOMIC */
	uint64_t addr;
	uint64_t length;  /**< type 1: 0 unbinds */
};

/** A send work request (ibv_send_wr without pointers). */
struct uroce_tp_send_wqe {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	unsigned int send_flags;  /**< IBV_SEND_SIGNALED, FENCE, SOLICITED, INLINE */
	uint32_t imm_data;        /**< host order (verbs' __be32 imm_data, converted) */
	uint32_t invalidate_rkey; /**< IBV_WR_SEND_WITH_INV */
	uint64_t remote_addr;     /**< RDMA and atomics */
	uint32_t rkey;
	uint64_t compare_add;     /**< atomics */
	uint64_t swap;
	struct uroce_tp_ah *ah;   /**< UD; read by post_send only (copied) */
	uint32_t remote_qpn;      /**< UD */
	uint32_t remote_qkey;     /**< UD; high bit set: use the QP's own Q_Key */
	uint32_t remote_srqn;     /**< XRC initiator: the peer's XRC SRQ (the XRCETH) */
	uint32_t num_sge;
	/** IBV_SEND_INLINE: the data itself, inline_len bytes, instead of SGEs. */
	uint32_t inline_len;
	union {
		struct uroce_tp_sge sg_list[UROCE_TP_MAX_SGE];
		uint8_t inline_data[UROCE_TP_MAX_INLINE];
		struct uroce_tp_bind bind; /**< IBV_WR_BIND_MW (num_sge 0) */
	};
};

struct uroce_tp_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	struct uroce_tp_sge sg_list[UROCE_TP_MAX_SGE];
};

/** @return 0, -EINVAL (bad opcode for the QP type, too many SGEs, inline too long or on
 *  a READ/atomic, atomic not 8 bytes at an 8-byte aligned address, UD without an AH of
 *  the QP's PD), -ENOMEM (send queue full), or -EINVAL in RESET, INIT or
 *  RTR (rdma-core providers refuse posting sends before RTS). Posting in ERR is allowed:
 *  the WR completes with IBV_WC_WR_FLUSH_ERR.
 *  IBV_WR_ATOMIC_WRITE (IBA 1.5 RDMA Atomic Write, RC only, else -EINVAL): stores 8 bytes
 *  at remote_addr (8-byte aligned, else -EINVAL) with one 8-byte release store (a memcpy
 *  where the MR's host bytes are not 8-aligned), after everything before it at the
 *  responder; the bytes are its data, from SGEs of 8 bytes in all or inline
 *  (IBV_SEND_INLINE, inline_len 8: how ibv_wr_atomic_write's pointer to the value is
 *  posted), anything else -EINVAL. The responder needs REMOTE_WRITE on the QP and the
 *  R_Key. Like a READ it counts against max_rd_atomic, a FENCE waits for it, and it
 *  completes (IBV_WC_ATOMIC_WRITE, byte_len 8) only when its own response (a zero-length
 *  RDMA READ Response Only) arrives.
 *  IBV_WR_BIND_MW (RC, UC) and IBV_WR_LOCAL_INV (RC; invalidate_rkey names a type 2
 *  window) are local: carried out when the requester reaches them, in order, and
 *  completed as IBV_WC_BIND_MW / IBV_WC_LOCAL_INV; one that breaks a rule of IBA 10.6.7
 *  completes with IBV_WC_MW_BIND_ERR (bind) or IBV_WC_LOC_QP_OP_ERR (invalidate), and the
 *  QP goes to ERR, as on rxe. With SGEs or IBV_SEND_INLINE: -EINVAL. */
int uroce_tp_post_send(struct uroce_tp_qp *qp, const struct uroce_tp_send_wqe *wqe,
		       uint64_t now_ns);
/** @return 0, -EINVAL (too many SGEs, QP in RESET, QP on an SRQ), -ENOMEM (full). */
int uroce_tp_post_recv(struct uroce_tp_qp *qp, const struct uroce_tp_recv_wqe *wqe);
int uroce_tp_post_srq_recv(struct uroce_tp_srq *srq, const struct uroce_tp_recv_wqe *wqe);

/**
 * Posting in place, for a host that copies WQEs from elsewhere (uroced, from the shared
 * rings): the WQE is written once, straight into the queue's slot, instead of into a WQE
 * of the caller's and again into the slot. *_reserve gives the queue's next free slot, or
 * NULL when the queue is full (or, for a receive queue, when the QP has none: it is on an
 * SRQ); the caller writes the WQE there; *_commit checks it there, in the transport's
 * memory, and queues it, with the checks and returns of uroce_tp_post_send / _post_recv /
 * _post_srq_recv (-ENOMEM when nothing was reserved). Only the used part of a send WQE
 * need be written: the fields before sg_list, then the first num_sge SGEs, the inline_len
 * inline bytes or the bind, as the opcode and IBV_SEND_INLINE say; the rest of the slot
 * holds what an earlier WQE left, and nothing reads it. A refused slot is not queued: the
 * caller may write it again and commit (uroced posts a refused send WQE again as a SEND
 * without data, so that it completes flushed once the QP is in ERR). Between the two calls
 * nothing may post to the queue, reset the QP or destroy it (modify to ERR is fine).
 */
struct uroce_tp_send_wqe *uroce_tp_post_send_reserve(struct uroce_tp_qp *qp);
int uroce_tp_post_send_commit(struct uroce_tp_qp *qp, uint64_t now_ns);
struct uroce_tp_recv_wqe *uroce_tp_post_recv_reserve(struct uroce_tp_qp *qp);
int uroce_tp_post_recv_commit(struct uroce_tp_qp *qp);
struct uroce_tp_recv_wqe *uroce_tp_post_srq_recv_reserve(struct uroce_tp_srq *srq);
int uroce_tp_post_srq_recv_commit(struct uroce_tp_srq *srq);

/* ------------------------------------------------------------------------------------- */
/* Queue pairs (IBA 10.3, 11.2.4)                                                         */

struct uroce_tp_qp_init {
	enum ibv_qp_type qp_type; /**< IBV_QPT_RC, UC, UD, RAW_PACKET, XRC_SEND or XRC_RECV */
	struct uroce_tp_cq *send_cq; /**< NULL for XRC_RECV */
	struct uroce_tp_cq *recv_cq; /**< NULL for XRC_RECV, may be NULL for XRC_SEND */
	struct uroce_tp_srq *srq; /**< or NULL; NULL for XRC */
	struct uroce_tp_xrcd *xrcd; /**< XRC_RECV: its domain (the QP has no PD) */
	struct ibv_qp_cap cap;    /**< rounded up and written back on success */
	bool sq_sig_all;
};

/** @return the QP, or NULL with errno (EOPNOTSUPP: a type verbs defines that this
 *  transport has not (driver); EINVAL: any other type but RC, UC, UD, raw packet and
 *  XRC, capacity over the device limits, missing CQ, an XRC target without an XRCD or
 *  with a PD, CQ or SRQ, an XRC initiator with an SRQ; ENOMEM). @p pd is NULL for an
 *  XRC target (IBV_QPT_XRC_RECV): it takes nothing but init->xrcd, posts nothing, and
 *  answers requests for the SRQs of its domain (above).
 *  A raw packet QP (IBV_QPT_RAW_PACKET) sends whole Ethernet frames and receives the
 *  frames its flows steer to it (below): RESET->INIT takes IBV_QP_PORT, INIT->RTR and
 *  RTR->RTS nothing more, as on Linux. Its only work request is IBV_WR_SEND, whose data
 *  is the frame (14 bytes at least, else -EINVAL; longer than the device's raw frame
 *  size: IBV_WC_LOC_LEN_ERR and ERR); IBV_SEND_IP_CSUM fills in the IPv4 header and the
 *  TCP/UDP checksums (uroce_wire_csum_fill). A frame received into a WQE completes as
 *  IBV_WC_RECV with byte_len the frame's length, IBV_WC_IP_CSUM_OK when its checksums
 *  verify (uroce_wire_csum_ok); one longer than the WQE completes with
 *  IBV_WC_LOC_LEN_ERR, the QP staying as it is (as UD); without a WQE it is dropped and
 *  counted (raw_dropped_no_rwqe). */
struct uroce_tp_qp *uroce_tp_create_qp(struct uroce_tp_pd *pd, struct uroce_tp_qp_init *init);
uint32_t uroce_tp_qp_num(const struct uroce_tp_qp *qp);
enum ibv_qp_state uroce_tp_qp_state(const struct uroce_tp_qp *qp);

/**
 * ibv_modify_qp: the transition in attr->qp_state (or the current state if
 * IBV_QP_STATE is not in @p mask) with the attributes the mask names. The mask must hold
 * every attribute the transition requires and nothing it does not allow (IBA table 94;
 * rdma-core's ibv_modify_qp documents the same), else -EINVAL. With IBV_QP_AV, @p dmac is
 * the resolved destination MAC of the path. To RESET: the queued WQEs are discarded and
 * so are the QP's completions not yet polled from its CQs (as mlx5 does), but for the
 * receive completions of an SRQ-attached QP (the SRQ's buffers).
 */
int uroce_tp_modify_qp(struct uroce_tp_qp *qp, const struct ibv_qp_attr *attr, int mask,
		       const uint8_t *dmac, uint64_t now_ns);
int uroce_tp_query_qp(const struct uroce_tp_qp *qp, struct ibv_qp_attr *attr,
		      struct ibv_qp_init_attr *init);
/** @return 0, or -EBUSY while a flow steers frames to it (as the kernel's uverbs);
 *  destroying flushes nothing to the CQs, like verbs. */
int uroce_tp_destroy_qp(struct uroce_tp_qp *qp);

/** Work requests posted and not yet retired (completed, or retired unsignaled): what
 *  occupies the queue. The daemon publishes "retired" counts from these so that an
 *  application's post fails with ENOMEM exactly when the queue is full. */
uint32_t uroce_tp_qp_sq_outstanding(const struct uroce_tp_qp *qp);
uint32_t uroce_tp_qp_rq_outstanding(const struct uroce_tp_qp *qp);
uint32_t uroce_tp_srq_outstanding(const struct uroce_tp_srq *srq);

/** An opaque pointer the caller keeps with the object (e.g. its own wrapper). */
void uroce_tp_qp_set_user(struct uroce_tp_qp *qp, void *user);
void *uroce_tp_qp_user(const struct uroce_tp_qp *qp);
void uroce_tp_cq_set_user(struct uroce_tp_cq *cq, void *user);
void *uroce_tp_cq_user(const struct uroce_tp_cq *cq);
void uroce_tp_srq_set_user(struct uroce_tp_srq *srq, void *user);
void *uroce_tp_srq_user(const struct uroce_tp_srq *srq);

/** The QP the device knows by @p qpn, or NULL. */
struct uroce_tp_qp *uroce_tp_qp_lookup(struct uroce_tp_dev *dev, uint32_t qpn);

/* ------------------------------------------------------------------------------------- */
/* Flow steering (verbs' ibv_create_flow): rules that give received frames to raw packet  */
/* QPs (flow.c).                                                                          */

/**
 * A rule for @p qp, a raw packet QP: @p attr followed by its num_of_specs specs, each as
 * long as its size field says, all within @p len bytes, as ibv_create_flow takes it
 * (attr->size is not read: rdma-core does not, and programs leave it 0). Specs:
 * IBV_FLOW_SPEC_ETH, IPV4, IPV4_EXT, IPV6, TCP and UDP, each at most once, values and
 * masks in network order as verbs gives them; a frame matches when every field it masks
 * is equal. An IPv4/IPv6 spec matches only IP
 * frames of that version, TCP/UDP only that protocol with its header in the frame.
 * Types: IBV_FLOW_ATTR_NORMAL (its specs); ALL_DEFAULT and MC_DEFAULT (the unicast,
 * multicast frames no NORMAL rule took; no specs); SNIFFER (a copy of every frame
 * uroce_tp_flow_rx sees, taken or not; no specs). Among NORMAL rules the lowest priority
 * value wins, the oldest among equals; IBV_FLOW_ATTR_FLAGS_DONT_TRAP gives the frame a
 * copy and leaves it to the next rule and to the caller.
 * @return the rule, or NULL with errno: EINVAL (not a raw packet QP, port other than 1,
 *   a spec that does not fit @p len or has a wrong size, a spec twice, specs on a type
 *   that takes none), EOPNOTSUPP (other spec types, IBV_FLOW_SPEC_INNER, actions, the
 *   EGRESS flag, comp_mask), ENOMEM.
 */
struct uroce_tp_flow *uroce_tp_create_flow(struct uroce_tp_qp *qp,
					   const struct ibv_flow_attr *attr, uint32_t len);
/** @return 0. */
int uroce_tp_destroy_flow(struct uroce_tp_flow *flow);
/**
 * A received frame, to the rules: copies go to SNIFFER and DONT_TRAP rules' QPs, then the
 * frame to the first NORMAL rule that matches, else to an ALL_DEFAULT or MC_DEFAULT
 * rule's; @p claimable false: to the copies only (a frame the caller needs itself, e.g.
 * ARP). A RoCEv2 frame (UDP to port 4791) is never taken, whatever @p claimable says.
 * Each QP gets a frame once, into its next receive WQE.
 * @return true when a rule took the frame: the caller does nothing more with it.
 */
bool uroce_tp_flow_rx(struct uroce_tp_dev *dev, const uint8_t *frame, uint32_t len,
		      bool claimable);

/* ------------------------------------------------------------------------------------- */
/* Multicast (IBA 10.5, 11.2.7): UD QPs attached to a group get a copy of every UD SEND   */
/* to the group's GID and QPN 0xffffff. RoCEv2: the GID is the group's IP address         */
/* (::ffff:224.0.0.0/100 or ff00::/8).                                                    */

#define UROCE_TP_MCAST_QPN 0xffffffu
#define UROCE_TP_MAX_MCAST_GRP 64
#define UROCE_TP_MAX_MCAST_QP_ATTACH 16

/** @return 0 (also when already attached), -EINVAL (not a UD QP, not a multicast GID),
 *  -ENOMEM (UROCE_TP_MAX_MCAST_GRP groups, or UROCE_TP_MAX_MCAST_QP_ATTACH QPs in it). */
int uroce_tp_attach_mcast(struct uroce_tp_qp *qp, const union ibv_gid *gid);
/** @return 0, -EINVAL (not attached). A destroyed QP leaves its groups by itself. */
int uroce_tp_detach_mcast(struct uroce_tp_qp *qp, const union ibv_gid *gid);
/** True when @p gid is a RoCEv2 multicast GID. */
bool uroce_tp_gid_is_mcast(const union ibv_gid *gid);

#ifdef __cplusplus
}
#endif

#endif /* UROCE_TRANSPORT_H */
