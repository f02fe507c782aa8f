/* SPDX-License-Identifier: BSD-3-Clause */
/* Private to lib/transport: object layouts and what the role files share. */
#ifndef UROCE_TP_INTERNAL_H
#define UROCE_TP_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "uroce_transport.h"

/* QPNs are 24 bits: QPs are found through a two-level table indexed by the QPN, 4096
 * pages of 4096 entries, a page allocated with its first QP and freed with its last.
 * QPNs are handed out in sequence, so the pages in use are dense. */
#define TP_QPN_PAGE_BITS 12u
#define TP_QPN_PAGE_SIZE (1u << TP_QPN_PAGE_BITS)
#define TP_QPN_PAGES (1u << (24u - TP_QPN_PAGE_BITS))

struct tp_qpn_page {
	struct uroce_tp_qp *qp[TP_QPN_PAGE_SIZE];
	uint32_t used;
};

/* Every PD, CQ, SRQ and AH is on a list of its device, so that destroying the device (the
 * daemon does when an application dies) frees what the application left. Circular, with
 * the device holding the sentinel; the node is the object's first member. */
struct tp_node {
	struct tp_node *prev, *next;
};

static inline void tp_list_init(struct tp_node *head)
{
	head->prev = head->next = head;
}

static inline void tp_list_add(struct tp_node *head, struct tp_node *n)
{
	n->next = head->next;
	n->prev = head;
	head->next->prev = n;
	head->next = n;
}

static inline void tp_list_add_tail(struct tp_node *head, struct tp_node *n)
{
	tp_list_add(head->prev, n);
}

static inline void tp_list_del(struct tp_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
}

/* Through void *: the node lies inside a @type, so the result is as aligned as @type. */
#define tp_container_of(ptr, type, member)                                                 \
	((type *)(void *)((char *)(ptr)-offsetof(type, member)))
#define TP_MAX_MSG (1u << 31) /* IBA: messages up to 2^31 bytes */

struct uroce_tp_pd {
	struct tp_node node;
	struct uroce_tp_dev *dev;
	uint32_t refs; /* MRs, windows, QPs, SRQs and AHs on it */
};

struct uroce_tp_mr {
	struct uroce_tp_pd *pd;
	uint64_t iova;
	uint8_t *host;
	uint64_t length;
	unsigned int access;
	uint32_t key;      /* lkey == rkey: table index << 8 | key byte */
	void *ctx;         /* uroce_tp_mr_set_ctx: frames may point here (zero-copy TX) */
	uint32_t nmw;      /* memory windows bound to it: it may not go while any is */
};

/* Keys are one name space (index << 8 | key byte): MRs take the indices below
 * TP_MW_INDEX_BIT, memory windows those with it set, so a window key (bit 31 set) is never
 * in the MR table, and an L_Key check (tp_mr_check) never accepts one. */
#define TP_MW_INDEX_BIT (1u << 23)
#define TP_MW_KEY_BIT (TP_MW_INDEX_BIT << 8)

static inline bool tp_key_is_mw(uint32_t key)
{
	return (key & TP_MW_KEY_BIT) != 0;
}

/* IBA 10.6.7: a type 1 window is valid from its allocation on, bound or not (its length is
 * 0 while unbound); a type 2 window is free until a bind makes it valid, and free again
 * once invalidated. */
enum tp_mw_state {
	TP_MW_FREE,
	TP_MW_VALID,
};

struct uroce_tp_mw {
	struct uroce_tp_pd *pd;
	enum ibv_mw_type type;
	enum tp_mw_state state;
	uint32_t rkey;           /* (TP_MW_INDEX_BIT | table index) << 8 | key byte */
	struct uroce_tp_mr *mr;  /* bound to, or NULL */
	struct uroce_tp_qp *qp;  /* type 2 while bound: the only QP it may be reached through */
	uint64_t addr;           /* [addr, addr + length) of the MR's iova space */
	uint64_t length;
	unsigned int access;     /* IBV_ACCESS_REMOTE_* */
};

struct uroce_tp_ah {
	struct tp_node node;
	struct uroce_tp_pd *pd;
	struct uroce_wire_hdr tmpl; /* Ethernet and IP of the destination, filled per send */
};

struct uroce_tp_cq {
	struct tp_node node;
	struct tp_node ready_node; /* on dev->ready_cqs while it holds completions */
	struct uroce_tp_dev *dev;
	struct ibv_wc *ring;
	uint32_t size, mask; /* capacity (cqe rounded up to 2^k - 1) and ring mask (2^k - 1) */
	uint32_t prod, cons;
	uint32_t refs;
	bool overflowed;
	void *user;
};

/* An XRC domain (annex A14): what ties XRC SRQs to the target QPs that may fill them. */
struct uroce_tp_xrcd {
	struct tp_node node;
	struct uroce_tp_dev *dev;
	uint32_t refs; /* XRC SRQs and target QPs in it */
};

struct uroce_tp_srq {
	struct tp_node node;
	struct uroce_tp_pd *pd;
	/* XRC: its domain, the CQ its receive completions go to (an XRC target QP has
	 * none), and its number, which requests name in their XRCETH; NULL, NULL, 0 for an
	 * ordinary SRQ. */
	struct uroce_tp_xrcd *xrcd;
	struct uroce_tp_cq *cq;
	uint32_t srqn;
	struct uroce_tp_recv_wqe *ring;
	uint32_t max_wr, mask, prod, cons;
	uint32_t max_sge;
	uint32_t limit; /* armed when non-zero */
	uint32_t refs;
	void *user;
};

/* A send WQE and what the requester and completer know of it. */
enum tp_wqe_state {
	TP_WQE_POSTED,  /* not (fully) sent */
	TP_WQE_PENDING, /* every packet sent, waiting for the response (RC) */
	TP_WQE_DONE,    /* completed; retired in order by the completer */
};

/* The operations that wait for a response of their own, not for an ACK: READ, the atomics
 * and RDMA Atomic Write (IBA 1.5, answered by a zero-length READ response). Each holds a
 * requester slot of max_rd_atomic and a responder resource, a FENCE waits for it (IBA
 * 10.8.3.3), and a later ACK does not complete it: its missing response is an implied NAK
 * (IBA 9.7.5.1.2), so go-back-N asks again. */
#define TP_OPF_RD_ATOMIC (UROCE_OPF_READ | UROCE_OPF_ATOMIC | UROCE_OPF_ATOMIC_WRITE)

struct tp_send_slot {
	struct uroce_tp_send_wqe wqe;
	uint32_t length;     /* message bytes */
	uint32_t first_psn;  /* assigned when the first packet is sent */
	uint32_t last_psn;
	uint32_t npsn;       /* PSNs the message takes (READ: its response packets) */
	uint16_t opf;        /* UROCE_OPF_* of the operation: SEND, WRITE, READ, ATOMIC,
			      * ATOMIC_WRITE */
	uint8_t state;       /* enum tp_wqe_state */
	bool started;        /* first_psn/last_psn assigned */
	enum ibv_wc_status status;
};

/* Requester (IBA 9.7.1..9.7.4; rxe_req.c). */
struct tp_req {
	uint32_t idx;        /* next WQE to send (index into sq, from sq_cons) */
	uint32_t psn;        /* next PSN to send */
	uint32_t psn_max;    /* the PSN after the furthest packet ever sent: psn, or beyond
			      * it after a go-back */
	uint32_t offset;     /* bytes of WQE idx already sent */
	uint32_t noack_pkts; /* packets sent since the last AckReq */
	uint32_t rd_atomic;  /* READ/atomic WQEs in flight */
};

/* Completer (IBA 9.7.5..9.7.7; rxe_comp.c). */
struct tp_comp {
	uint32_t psn;          /* oldest PSN not yet acknowledged */
	uint8_t retry_cnt;     /* retries left (timeout and NAK-sequence-error) */
	uint8_t rnr_retry;     /* RNR retries left; 7 means without end */
	uint64_t timeout_ns;   /* 4.096 us * 2^timeout; 0: no retransmission timer */
	uint64_t deadline;     /* retransmission timer, UINT64_MAX when idle */
	uint64_t rnr_deadline; /* RNR wait ends, UINT64_MAX when not waiting */
	uint32_t rnr_psn;      /* where to resume after the RNR wait */
	bool rewound;          /* went back and nothing in order has come since */
};

/* What a responder resource answers. */
enum tp_res_kind {
	TP_RES_READ,         /* READ Response packets from the memory, read again per packet */
	TP_RES_ATOMIC,       /* an Atomic ACK with the saved original value */
	TP_RES_ATOMIC_WRITE, /* a zero-length READ Response Only (rxe: send_read_response_ack) */
};

/* Responder resources: READ, atomic and Atomic Write requests remembered for duplicates
 * and for the responses still to send (IBA 9.7.5.1.6, max_dest_rd_atomic of them). */
struct tp_rd_res {
	uint8_t kind;       /* enum tp_res_kind */
	uint32_t psn;       /* first PSN */
	uint32_t last_psn;
	/* READ */
	uint64_t va;
	uint32_t rkey;
	uint32_t length;
	uint32_t sent;      /* response bytes already sent */
	uint32_t cur_psn;   /* next response PSN */
	uint32_t xrc_srqn;  /* XRC target: the SRQ whose PD the READ's R_Key is checked in */
	/* atomic */
	uint64_t orig;
	bool queued;        /* responses still to send */
	bool answered;      /* every response went out once: what is queued is a replay */
};

/* Responder (IBA 9.7.5, 9.8; rxe_resp.c). */
struct tp_resp {
	uint32_t psn;        /* expected PSN */
	uint32_t msn;
	bool sent_psn_nak;   /* one sequence-error NAK per gap */
	bool drop_msg;       /* UC: drop until the next FIRST/ONLY */
	/* the message in progress */
	uint8_t last_opcode; /* previous request opcode, for the sequence check */
	bool in_msg;
	bool has_rwqe;
	struct uroce_tp_recv_wqe rwqe;
	uint32_t rcv_len;    /* bytes received into rwqe */
	/* RDMA WRITE target, by its key: looked up again for each packet, since the MR may
	 * be deregistered between two packets of one message (a pointer would dangle), or
	 * the window the key names invalidated or bound elsewhere. */
	uint32_t wr_rkey;
	uint64_t wr_va;
	uint32_t wr_resid;
	uint32_t wr_len;     /* DMA length of the WRITE in progress */
	/* acknowledgement */
	uint32_t ack_psn;    /* last PSN executed, to acknowledge */
	bool ack_pending;
	bool nak_pending;    /* a NAK or RNR NAK waits behind the queued responses */
	uint8_t nak_syndrome;
	uint32_t nak_psn;
	uint32_t noack;      /* packets executed since the last ACK */
	uint32_t xrc_srqn;   /* XRC target: the SRQ of the message in progress (its XRCETH) */
	/* responder resources, a ring in PSN order */
	struct tp_rd_res *res;
	uint32_t res_n, res_head, res_count; /* res_head: oldest; count <= n */
};

struct uroce_tp_qp {
	struct uroce_tp_dev *dev;
	struct uroce_tp_pd *pd;     /* NULL for an XRC target: each request's SRQ has one */
	struct uroce_tp_xrcd *xrcd; /* XRC target: the domain its requests' SRQs are in */
	struct uroce_tp_cq *send_cq, *recv_cq;
	struct uroce_tp_srq *srq;
	enum ibv_qp_type type;
	uint32_t qpn;
	enum ibv_qp_state state;
	struct ibv_qp_attr attr; /* as last modified, for query */
	struct ibv_qp_cap cap;
	bool sq_sig_all;
	uint32_t nmcast;            /* multicast groups it is attached to */
	uint32_t nflows;            /* raw packet: flows steering to it (it stays while any do) */
	uint64_t flow_seen;         /* raw packet: the frame it last got (flow.c, once per frame) */
	uint32_t nmw;               /* type 2 memory windows bound to it */
	uint32_t mtu;               /* path MTU in bytes */
	struct uroce_wire_hdr tmpl; /* RC/UC: Ethernet, IP, UDP and BTH of the path */

	struct tp_send_slot *sq;
	/* UD: each send slot's address vector (its AH's headers), copied at post time, as
	 * mlx5 and rxe copy it into the WQE: the AH may be destroyed before the WR is sent,
	 * and the WR must not read it then. NULL for RC and UC. */
	struct uroce_wire_hdr *sq_av;
	uint32_t sq_mask, sq_prod, sq_cons;
	struct tp_req req;
	struct tp_comp comp;

	struct uroce_tp_recv_wqe *rq;
	uint32_t rq_mask, rq_prod, rq_cons;
	struct tp_resp resp;

	void *user;
	struct uroce_tp_qp *next, *prev; /* every QP of the device */
	/* schedule.c: on the device's work list while it has packets to send that the link
	 * refused or nobody has tried yet; in the timer heap while a timer is armed. */
	struct tp_node work;
	bool on_work;
	uint64_t work_queued_at; /* dev->turn_pkts when it last went to the list's end */
	uint32_t heap_idx; /* UINT32_MAX: not in the heap */
};

struct tp_mcast_group {
	union ibv_gid gid;
	uint32_t nqps; /* 0: the slot is free */
	struct uroce_tp_qp *qp[UROCE_TP_MAX_MCAST_QP_ATTACH];
};

/* A flow rule (flow.c): a flat mask and value over the fields verbs' specs name, network
 * order as in the frame. */
struct tp_flow_match {
	uint8_t dmac[6], smac[6];
	uint16_t ether_type, vlan_tci;
	uint8_t src_ip[16], dst_ip[16]; /* IPv4: the first 4 bytes */
	uint32_t flow_label;
	uint8_t proto, tos, ttl;
	uint16_t sport, dport;
};

struct uroce_tp_flow {
	struct tp_node node;         /* on the device's list, in priority order */
	struct uroce_tp_qp *qp;
	enum ibv_flow_attr_type type;
	uint16_t priority;
	bool dont_trap;
	uint8_t ip_version;          /* 4 or 6: an IP spec was given; 0 none */
	uint8_t l4_proto;            /* 6 or 17: a TCP or UDP spec; 0 none */
	struct tp_flow_match mask, val;
};

struct uroce_tp_dev {
	struct uroce_tp_dev_cfg cfg;
	struct uroce_tp_counters cnt;
	struct tp_node flows;      /* flow.c: every rule, NORMAL ones by priority */
	uint64_t flow_frames;      /* frames given to the rules, to give each QP one copy */
	struct tp_qpn_page *qpn_pages[TP_QPN_PAGES];
	struct uroce_tp_qp *qps; /* list of every QP */
	struct tp_node pds, cqs, srqs, ahs, xrcds;
	struct tp_node ready_cqs; /* CQs holding completions (uroce_tp_cq_ready_first) */
	/* XRC SRQs by number - 1 (the XRCETH names them; 0 is no SRQ), NULL where free */
	struct uroce_tp_srq **xrc_srqs;
	uint32_t xrc_srq_cap;
	uint32_t next_qpn;
	uint32_t gsi_psn; /* QP1's next PSN (UD: per sender, unchecked by receivers) */
	struct tp_mcast_group mcast[UROCE_TP_MAX_MCAST_GRP];
	uint64_t rng;
	struct uroce_tp_mr **mrs; /* by key >> 8 */
	uint32_t mr_cap;
	struct uroce_tp_mw **mws; /* by (key >> 8) & ~TP_MW_INDEX_BIT */
	uint32_t mw_cap;
	bool tx_blocked; /* the tx callback pushed back since the last uroce_tp_process */
	struct tp_node work;           /* QPs with packets to send, in turn (schedule.c) */
	/* Packets the QP on its visit in uroce_tp_process may still send (cfg.tx_burst);
	 * UINT32_MAX outside it: what the receive path sends at once is not held back. */
	uint32_t visit_left;
	/* Packets sent on all QPs' turns, and the most of them sent while one QP waited on
	 * the work list for its turn (uroce_tp_turn_wait_max). */
	uint64_t turn_pkts, turn_wait_max;
	struct uroce_tp_qp **heap;     /* QPs with an armed timer, a min-heap by tp_qp_timer */
	uint32_t nqps;
	uint32_t heap_n, heap_cap;
	/* One outgoing frame: a RoCE packet, or a raw packet QP's frame. */
	uint8_t frame[UROCE_TP_RAW_FRAME_MAX > UROCE_HDR_MAX + 4096 + 4 + UROCE_ICRC_LEN ?
			      UROCE_TP_RAW_FRAME_MAX : UROCE_HDR_MAX + 4096 + 4 + UROCE_ICRC_LEN];
};

/* One packet of the visiting QP's budget spent; @return whether any is left. */
static inline bool tp_visit_spend(struct uroce_tp_dev *dev)
{
	if (dev->visit_left != UINT32_MAX && dev->visit_left)
		dev->visit_left--;
	return dev->visit_left != 0;
}

/* ---- multicast.c ---- */
struct tp_mcast_group *tp_mcast_find(struct uroce_tp_dev *dev, const uint8_t gid[16]);
void tp_mcast_detach_all(struct uroce_tp_qp *qp);

/* ---- transport_device.c ---- */
uint64_t tp_rand(struct uroce_tp_dev *dev);
void tp_event(struct uroce_tp_dev *dev, enum ibv_event_type type, void *object);
/* One line of cfg.debug_log, which the caller has found set: the test stays with the
 * caller, so that a device without the log formats nothing and calls nothing. */
void tp_debug(struct uroce_tp_dev *dev, const char *fmt, ...)
	__attribute__((cold, format(printf, 2, 3)));
/* RC and both XRC types: acknowledged, retried, in PSN order (IBA 9.7; annex A14). */
static inline bool tp_qp_reliable(const struct uroce_tp_qp *qp)
{
	return qp->type == IBV_QPT_RC || qp->type == IBV_QPT_XRC_SEND ||
	       qp->type == IBV_QPT_XRC_RECV;
}
/* The transport bits of the QP's opcodes: RC, UC, UD or XRC. */
static inline enum uroce_transport tp_qp_transport(const struct uroce_tp_qp *qp)
{
	switch (qp->type) {
	case IBV_QPT_UC:
		return UROCE_TRANSPORT_UC;
	case IBV_QPT_UD:
		return UROCE_TRANSPORT_UD;
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		return UROCE_TRANSPORT_XRC;
	default:
		return UROCE_TRANSPORT_RC;
	}
}

/* ---- transport_mr.c ---- */
/* The MR behind @key in @pd if [va, va + len) lies inside it and @access is allowed: an
 * L_Key, or an MR's R_Key (never a window's). */
struct uroce_tp_mr *tp_mr_check(struct uroce_tp_pd *pd, uint32_t key, uint64_t va,
				uint64_t len, unsigned int access);
/* Copies between the SGE list and a contiguous buffer, at @offset into the list.
 * @access: IBV_ACCESS_LOCAL_WRITE to scatter into the list, 0 to gather from it.
 * Returns 0, or -EFAULT when an lkey, bound or access check fails. */
int tp_sge_copy(struct uroce_tp_pd *pd, const struct uroce_tp_sge *sge, uint32_t num_sge,
		uint32_t offset, void *buf, uint32_t len, bool to_sge);
uint32_t tp_sge_len(const struct uroce_tp_sge *sge, uint32_t num_sge);
/* The pieces of registered memory @p len bytes at @p offset of an SGE list lie in, checked
 * as tp_sge_copy checks them: their count, -EFAULT (a bad SGE), or -ENOTSUP (more than
 * UROCE_TP_TX_SEGS_MAX pieces, or an MR without ctx: copy instead). */
int tp_sge_segs(struct uroce_tp_pd *pd, const struct uroce_tp_sge *sge, uint32_t num_sge,
		uint32_t offset, uint32_t len, struct uroce_tp_tx_seg *seg);

/* ---- transport_mw.c ---- */
/* An R_Key arriving at @qp, in @pd (the QP's, or for an XRC target the PD of the SRQ the
 * request names; NULL: none, so no key is valid): an MR's (tp_mr_check), or a window's,
 * checked against the window's state, QP, rights and range. Returns the MR the bytes are
 * in (for a window, the MR it is bound to: windows are never zero-based, so va - mr->iova
 * is still the offset into it), or NULL. */
struct uroce_tp_mr *tp_rkey_check(struct uroce_tp_qp *qp, struct uroce_tp_pd *pd, uint32_t key,
				  uint64_t va, uint64_t len, unsigned int access);
/* Carries out a BIND_MW work request posted on @qp (IBA 10.6.7): 0, or -EINVAL when it
 * breaks a rule, and then nothing changed. */
int tp_mw_bind(struct uroce_tp_qp *qp, const struct uroce_tp_bind *bind);
/* Frees the type 2 window @rkey names (IBA 10.6.7): from a LOCAL_INV on @qp, or
 * (@remote) from a SEND with Invalidate arriving at @qp, which may free only a window bound
 * to @qp itself. 0, or -EINVAL (not such a window; nothing changed). */
int tp_mw_invalidate(struct uroce_tp_qp *qp, uint32_t rkey, bool remote);
/* The QP goes: the type 2 windows bound to it become free. */
void tp_mw_qp_gone(struct uroce_tp_qp *qp);

/* ---- transport_cq.c ---- */
/* Appends a completion. A full CQ loses it, raises IBV_EVENT_CQ_ERR (once) and returns
 * false: the caller moves its QP to ERR (IBA 11.4.2.1; rxe does the same). */
bool tp_cq_push(struct uroce_tp_cq *cq, const struct ibv_wc *wc);
/* Removes the QP @p qpn's completions not yet polled, the others kept in order; with
 * @p keep_recv, its receive completions stay (an SRQ's WQEs: the application's buffers,
 * which a dropped completion would lose). */
void tp_cq_discard_qp(struct uroce_tp_cq *cq, uint32_t qpn, bool keep_recv);

/* ---- transport_srq.c ---- */
/* Takes the next receive WQE of @p srq, or of the QP's own receive queue when NULL. */
bool tp_rwqe_take(struct uroce_tp_qp *qp, struct uroce_tp_srq *srq,
		  struct uroce_tp_recv_wqe *out);
/* The CQ a receive completion of the QP goes to: its receive CQ, or for an XRC target
 * the CQ of the SRQ of the message in progress (NULL if that SRQ is gone). */
struct uroce_tp_cq *tp_resp_cq(struct uroce_tp_qp *qp);
/* The XRC SRQ numbered @p srqn if it is in the XRC target QP's domain, else NULL. */
struct uroce_tp_srq *tp_xrc_srq(const struct uroce_tp_qp *qp, uint32_t srqn);

/* ---- placement into application memory ---- */
typedef uint64_t tp_una64 __attribute__((aligned(1), may_alias));
typedef uint32_t tp_una32 __attribute__((aligned(1), may_alias));
typedef uint16_t tp_una16 __attribute__((aligned(1), may_alias));

/* Stores @p n bytes of a packet into memory an application owns (an RDMA WRITE, a SEND's
 * scatter, a READ response), each byte exactly once and in ascending order, as a NIC's
 * DMA write does. memcpy may store a byte twice: glibc copies 16 to 31 bytes as two
 * overlapping 16-byte stores, at 16 bytes the same 16 twice. A daemon preempted between
 * the two stores then undoes what the application wrote there meanwhile. rsockets does
 * write there: the writer takes the target SGE its peer has just RDMA-written and moves
 * it on in place; the repeated store put the old SGE back, the writer wrote into half of
 * the peer's receive buffer the reader had not freed, and the stream was corrupted. */
static inline void tp_place(uint8_t *dst, const uint8_t *src, size_t n)
{
	for (; n >= 8; n -= 8, dst += 8, src += 8) {
		*(tp_una64 *)dst = *(const tp_una64 *)src;
		/* keeps the compiler from turning the loop back into a call to memcpy */
		__asm__ volatile("" : : "r"(dst) : "memory");
	}
	if (n & 4) {
		*(tp_una32 *)dst = *(const tp_una32 *)src;
		dst += 4, src += 4;
	}
	if (n & 2) {
		*(tp_una16 *)dst = *(const tp_una16 *)src;
		dst += 2, src += 2;
	}
	if (n & 1)
		*dst = *src;
}

/* ---- transport_qp.c ---- */
/* Moves the QP to ERR: every WQE not completed completes with WR_FLUSH_ERR (IBA 10.3.1). */
void tp_qp_to_error(struct uroce_tp_qp *qp);
void tp_qp_flush(struct uroce_tp_qp *qp);

/* ---- net.c ---- */
/* Sends one packet of @qp: header @h (Ethernet..BTH.. as the template plus opcode
 * fields), payload gathered by @fill into the frame. Returns 0 or -EAGAIN. */
typedef int (*tp_fill_fn)(void *arg, uint8_t *dst, uint32_t len);
int tp_send_pkt(struct uroce_tp_dev *dev, const struct uroce_wire_hdr *h, uint32_t payload_len,
		tp_fill_fn fill, void *arg);
/* True when a @p payload_len-byte payload should be offered to cfg.tx_zc. */
static inline bool tp_zc_wanted(const struct uroce_tp_dev *dev, uint32_t payload_len)
{
	return dev->cfg.tx_zc != NULL && payload_len >= dev->cfg.zc_min && payload_len > 0;
}
/* Sends with the payload left in the @p nseg pieces: 0, -EAGAIN as tp_send_pkt, or
 * -ENOTSUP when the host did not take it (the caller then calls tp_send_pkt). */
int tp_send_pkt_zc(struct uroce_tp_dev *dev, const struct uroce_wire_hdr *h, uint32_t payload_len,
		   const struct uroce_tp_tx_seg *seg, uint32_t nseg);
/* Builds the header template of a path from an AH attribute and a MAC. */
int tp_path_tmpl(struct uroce_tp_dev *dev, const struct ibv_ah_attr *ah, const uint8_t dmac[6],
		 struct uroce_wire_hdr *h);

/* ---- schedule.c ---- */
/* The QP's earliest timer: retransmission or RNR wait, UINT64_MAX for none. */
static inline uint64_t tp_qp_timer(const struct uroce_tp_qp *qp)
{
	return qp->comp.deadline < qp->comp.rnr_deadline ? qp->comp.deadline :
							   qp->comp.rnr_deadline;
}
/* Every change of a QP's timers goes through these, to keep the heap in order. */
void tp_set_deadline(struct uroce_tp_qp *qp, uint64_t at);
void tp_set_rnr_deadline(struct uroce_tp_qp *qp, uint64_t at);
/* Room in the heap for one more QP (at QP creation, where failing is allowed). */
int tp_sched_reserve(struct uroce_tp_dev *dev, uint32_t nqps);
/* Puts the QP on the work list: uroce_tp_process will let it send. */
void tp_qp_schedule(struct uroce_tp_qp *qp);
/* Takes the QP off the work list and out of the heap (destroy, reset). */
void tp_qp_unschedule(struct uroce_tp_qp *qp);

/* ---- raw.c ---- */
/* The largest frame a raw packet QP of @dev sends or receives. */
static inline uint32_t tp_raw_frame_max(const struct uroce_tp_dev *dev)
{
	uint32_t mtu = dev->cfg.eth_mtu ? dev->cfg.eth_mtu : 1500;
	uint32_t m = mtu + UROCE_ETH_HLEN + UROCE_VLAN_HLEN;

	return m < UROCE_TP_RAW_FRAME_MAX ? m : UROCE_TP_RAW_FRAME_MAX;
}
/* Sends the frame of a raw packet QP's WQE @s (checked by the requester): 0 (the WQE is
 * done), -EAGAIN (the link is full: nothing changed), -EFAULT (an SGE failed its check). */
int tp_raw_send(struct uroce_tp_qp *qp, struct tp_send_slot *s);
/* A frame for a raw packet QP, into its next receive WQE. */
void tp_raw_rx(struct uroce_tp_qp *qp, const uint8_t *frame, uint32_t len);

/* ---- flow.c ---- */
/* The device goes: every rule with it. */
void tp_flow_destroy_all(struct uroce_tp_dev *dev);

/* ---- requester.c ---- */
/* Sends what the QP may send now. Returns false when tx pushed back. */
bool tp_req_run(struct uroce_tp_qp *qp, uint64_t now_ns);
/* Go-back-N: send again from @psn (IBA 9.7.5.1.3). */
void tp_req_rewind(struct uroce_tp_qp *qp, uint32_t psn);
/* After a go-back, the responder acknowledged up to @psn, which was sent before but not
 * yet again: move the requester past it, as if it had sent it again, so the completer
 * can take the ACK. Only over SENDs and WRITEs (a READ, atomic or Atomic Write completes
 * by its own responses). True if the requester moved. */
bool tp_req_skip_acked(struct uroce_tp_qp *qp, uint32_t psn);

/* ---- completer.c ---- */
void tp_comp_rx(struct uroce_tp_qp *qp, const struct uroce_wire_pkt *pkt, uint64_t now_ns);
void tp_comp_timers(struct uroce_tp_qp *qp, uint64_t now_ns);
/* Completes and retires WQEs in order from sq_cons while they are DONE. */
void tp_comp_retire(struct uroce_tp_qp *qp);
void tp_comp_arm(struct uroce_tp_qp *qp, uint64_t now_ns);

/* ---- responder.c ---- */
void tp_resp_rx(struct uroce_tp_qp *qp, const struct uroce_wire_pkt *pkt);
/* Sends READ responses, atomic ACKs and the coalesced ACK, in PSN order. */
bool tp_resp_run(struct uroce_tp_qp *qp);

/* BIND_MW and LOCAL_INV: carried out by the requester itself, no packet, no PSN. */
static inline bool tp_wr_is_local(enum ibv_wr_opcode op)
{
	return op == IBV_WR_BIND_MW || op == IBV_WR_LOCAL_INV;
}

static inline struct tp_send_slot *tp_sq_slot(struct uroce_tp_qp *qp, uint32_t i)
{
	return &qp->sq[i & qp->sq_mask];
}

/* SQD has drained when no message is in progress: the oldest WQE not retired has not
 * started (WQEs start in order). WRs posted but never started stay queued and do not
 * hold the drain up (IBA 10.3.1 SQD; rxe: C10-72, comp.psn == req.psn). */
static inline bool tp_sq_drained(const struct uroce_tp_qp *qp)
{
	return qp->sq_cons == qp->sq_prod || !qp->sq[qp->sq_cons & qp->sq_mask].started;
}

static inline uint32_t tp_mtu_bytes(enum ibv_mtu mtu)
{
	return 128u << mtu; /* IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5 */
}

#endif
