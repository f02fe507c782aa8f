/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_CM_H
#define UROCE_CM_H

/**
 * @file
 * The InfiniBand Communication Manager (IBA vol 1 ch. 12) with the RDMA CM's addressing
 * conventions on top, sans I/O: MADs and time in, MADs, events and QP attributes out.
 *
 * What is on the wire: CM MADs (256 bytes: the common MAD header, IBA 13.4.2, then the
 * CM attribute) carried as UD SEND Only to QP1 with Q_Key 0x80010000 inside RoCEv2 (the
 * GSI's, UROCE_TP_GSI_QPN and UROCE_TP_GSI_QKEY in lib/transport). The caller (uroced)
 * does that wrapping: it hands every MAD that arrived on QP1 to uroce_cm_input() with the
 * path it came on, and sends what the tx callback gives it.
 *
 * What rdma_cm adds (and a peer's rdma_cm expects): service IDs made of a port space and
 * a port (0x0000000001000000 | ps << 16 | port), and the CMA header (version, IP version,
 * source port, source and destination IP) at the front of REQ and SIDR_REQ private data,
 * which is how a listener bound to an IP address and port finds the request.
 *
 * Ids are rdma_cm ids: bound to an address, listening, or one end of one connection (RC
 * and UC: REQ/REP/RTU, DREQ/DREP; UD: SIDR_REQ/SIDR_REP). Every state change an
 * application sees comes out as one event (enum rdma_cm_event_type) through the event
 * callback; the caller queues it for the application. Timeouts and retries (REQ, REP,
 * DREQ, SIDR_REQ) run on the caller's clock through uroce_cm_process().
 *
 * Threading: none. One struct uroce_cm per device, used from one thread.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UROCE_CM_MAD_LEN 256

/** The most private data any CM message carries (DREP and RTU: 224 bytes). */
#define UROCE_CM_PRIVATE_DATA_MAX 224

/** CM attribute IDs (of the CM class, 0x07). */
enum uroce_cm_attr {
	UROCE_CM_ATTR_CLASS_PORT_INFO = 0x0001,
	UROCE_CM_ATTR_REQ = 0x0010,
	UROCE_CM_ATTR_MRA = 0x0011,
	UROCE_CM_ATTR_REJ = 0x0012,
	UROCE_CM_ATTR_REP = 0x0013,
	UROCE_CM_ATTR_RTU = 0x0014,
	UROCE_CM_ATTR_DREQ = 0x0015,
	UROCE_CM_ATTR_DREP = 0x0016,
	UROCE_CM_ATTR_SIDR_REQ = 0x0017,
	UROCE_CM_ATTR_SIDR_REP = 0x0018,
	UROCE_CM_ATTR_LAP = 0x0019,
	UROCE_CM_ATTR_APR = 0x001a,
};

/** The name of CM attribute @p attr_id as IBA 12.6 spells it ("REQ", "SIDR_REP",
 *  "ClassPortInfo"), or NULL when @p attr_id is not a CM attribute. */
const char *uroce_cm_attr_name(uint16_t attr_id);
/** The CM attribute named @p name, case ignored (uroce_cm_attr_name()'s spelling), or 0
 *  when none is (0 is no attribute's ID). */
uint16_t uroce_cm_attr_from_name(const char *name);
/** True when this CM sends and handles attribute @p attr_id (REQ .. SIDR_REP); false for
 *  the ones it recognises and drops (ClassPortInfo, LAP, APR) and for unknown IDs. */
bool uroce_cm_attr_handled(uint16_t attr_id);

/**
 * Where a MAD came from or goes to, and the path a connection uses (a RoCEv2 path: GIDs
 * and the IP header fields; LIDs are the permissive 0xffff on the wire).
 */
struct uroce_cm_path {
	union ibv_gid sgid; /**< ours */
	union ibv_gid dgid; /**< the peer's */
	uint8_t dmac[6];    /**< the peer's MAC (on input: the frame's source MAC) */
	uint8_t sgid_index;
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t reserved;
	uint32_t flow_label;
	uint16_t pkey; /**< 0xffff */
};

/** The parameters of a connection (RC/UC) or SIDR exchange (UD), both directions: what
 *  the caller gives to connect/accept, and what an event reports of the peer's. */
struct uroce_cm_conn_param {
	uint8_t private_data[UROCE_CM_PRIVATE_DATA_MAX]; /**< without the CMA header */
	uint8_t private_data_len;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;     /**< 0..7 */
	uint8_t rnr_retry_count; /**< 0..7 */
	uint8_t srq;
	uint8_t reserved;
	uint32_t qp_num;  /**< RC/UC: the QP to connect; UD: the QP SIDR_REP names */
	uint32_t qkey;    /**< UD: the Q_Key SIDR_REP names */
};

/** An event for the application that owns an id (struct rdma_cm_event, flattened). */
struct uroce_cm_event {
	enum rdma_cm_event_type event;
	int status; /**< 0; -ETIMEDOUT, -ECONNREFUSED...; REJECTED: the IBA reject reason */
	struct uroce_cm_id *id;        /**< CONNECT_REQUEST: the new id (user pointer NULL) */
	struct uroce_cm_id *listen_id; /**< CONNECT_REQUEST: the listener it came to */
	/** CONNECT_REQUEST, CONNECT_RESPONSE, ESTABLISHED (UD), REJECTED, DISCONNECTED:
	 *  the peer's parameters and private data (rdma_cm's view: for a request,
	 *  responder_resources is the peer's initiator depth and vice versa). */
	struct uroce_cm_conn_param param;
};

struct uroce_cm_counters {
	uint64_t rx_mads;
	uint64_t tx_mads;
	uint64_t rx_malformed;    /**< wrong length, base/class version, method */
	uint64_t rx_unknown_attr; /**< attribute ID not handled: dropped */
	uint64_t rx_stale;        /**< for no id, or an id in a state that ignores it */
	uint64_t rx_dup_req;      /**< REQ for a connection being set up: answered per 12.9.8 */
	uint64_t rx_no_listener;  /**< REQ/SIDR_REQ nobody listens to: REJ / SIDR_REP reject */
	/** REQ/SIDR_REQ held by an id bound to its port until it listens (early_req.c) */
	uint64_t rx_req_held;
	/** REQs whose primary path is not the one they came by: REJ Invalid GID to the
	 *  sender, never a word to the address the path names */
	uint64_t rx_bad_path;
	uint64_t retries;         /**< REQ, REP, DREQ, SIDR_REQ sent again */
	uint64_t timeouts;        /**< gave up after max_retries */
	uint64_t rx_by_attr[16];  /**< index attr - 0x10 for REQ..APR, [15]: other */
	uint64_t tx_by_attr[16];
};

struct uroce_cm;
struct uroce_cm_id;

struct uroce_cm_cfg {
	uint64_t node_guid; /**< network byte order, as verbs keeps it (REQ local CA GUID) */
	uint64_t seed;      /**< local communication IDs, starting PSNs, ephemeral ports */
	/** Unpredictable numbers for the same (may be NULL: @c seed, reproducible). A
	 *  daemon facing the network gives one: a peer that can guess a connection's IDs
	 *  and PSNs can forge its MADs and packets. */
	uint64_t (*random)(void *io_ctx);
	enum ibv_mtu port_mtu;
	/** CM response timeout, IBA's 4.096 us * 2^x (rdma_cm: 20, ~4.3 s), sent in REQ
	 *  and used for our own waits; and how many times a request is sent again (15). */
	uint8_t response_timeout;
	uint8_t max_retries;
	/** The CA's local ACK delay, IBA's 4.096 us * 2^x: REP's target ACK delay (rxe: 15). */
	uint8_t ca_ack_delay;
	/** Ids leave timewait (and their QPN and comm ID can be reused) after this. */
	uint64_t timewait_ns;
	/** Send one MAD (UROCE_CM_MAD_LEN bytes) to QP1 at @p to. Returns 0 or -errno
	 *  (the MAD is then lost, as on the wire; timers resend what matters). */
	int (*tx)(void *io_ctx, const uint8_t *mad, const struct uroce_cm_path *to);
	/** An event for an id's owner. For CONNECT_REQUEST the callee sets the new id's user
	 *  pointer (uroce_cm_id_set_user) from the listener's. */
	void (*event)(void *io_ctx, const struct uroce_cm_event *ev);
	void *io_ctx;
};

void uroce_cm_cfg_init(struct uroce_cm_cfg *cfg);
struct uroce_cm *uroce_cm_create(const struct uroce_cm_cfg *cfg);
/** Frees everything, ids included, sending nothing. */
void uroce_cm_destroy(struct uroce_cm *cm);
const struct uroce_cm_counters *uroce_cm_counters(const struct uroce_cm *cm);
/** The ids listening now (rdma_listen called, not destroyed): `ss -l` for rdma_cm. */
unsigned int uroce_cm_listening(const struct uroce_cm *cm);

/**
 * A MAD that arrived on QP1 (the payload of a UD SEND Only with Q_Key 0x80010000).
 * Anything malformed, unknown or stale is counted and dropped or answered per the spec;
 * never trusted.
 */
void uroce_cm_input(struct uroce_cm *cm, const uint8_t *mad, uint32_t len,
		    const struct uroce_cm_path *from, uint64_t now_ns);

/** Runs due timers (retries, timeouts, timewait). */
void uroce_cm_process(struct uroce_cm *cm, uint64_t now_ns);
/** When uroce_cm_process() next has something to do (UINT64_MAX: nothing). */
uint64_t uroce_cm_next_deadline(const struct uroce_cm *cm);

/* ---- ids ---------------------------------------------------------------------------- */

/** @p ps: RDMA_PS_TCP (RC), RDMA_PS_UDP (UD), RDMA_PS_IB; @p qpt: IBV_QPT_RC/UC/UD. */
struct uroce_cm_id *uroce_cm_id_create(struct uroce_cm *cm, enum rdma_port_space ps,
				       enum ibv_qp_type qpt, void *user);
/**
 * Destroys an id as rdma_destroy_id does: a connection being set up is rejected (REJ),
 * an established one disconnected (DREQ sent once, then TimeWait, as Linux's
 * cm_destroy_id), a DREQ received answered (DREP), a listener stops (its requests not
 * yet reported are rejected). No event is reported for it afterwards; the comm ID lingers
 * in TimeWait (cfg.timewait_ns) so that duplicates are still answered.
 */
void uroce_cm_id_destroy(struct uroce_cm_id *id, uint64_t now_ns);
void uroce_cm_id_set_user(struct uroce_cm_id *id, void *user);
void *uroce_cm_id_user(const struct uroce_cm_id *id);
enum ibv_qp_type uroce_cm_id_qp_type(const struct uroce_cm_id *id);
enum rdma_port_space uroce_cm_id_ps(const struct uroce_cm_id *id);
/** The QPN the id's connection announces (REQ/REP); 0 before one. */
uint32_t uroce_cm_id_qpn(const struct uroce_cm_id *id);
/** The IB CM state of the id's connection, named as IBA vol 1 12.9.6 does ("LISTEN",
 *  "REQ_SENT", "ESTABLISHED", "TIMEWAIT", ...). */
const char *uroce_cm_id_state_name(const struct uroce_cm_id *id);

/** Binds to an IPv4/IPv6 address (any: wildcard) and port (0: an ephemeral one).
 *  @return 0, -EADDRINUSE, -EINVAL (already bound, bad family). */
int uroce_cm_bind(struct uroce_cm_id *id, const struct sockaddr *addr);
/**
 * The caller resolved the destination (ARP/ND): the id's destination and the path to
 * it. Binds the source (with an ephemeral port) if the id is not bound yet.
 */
int uroce_cm_set_route(struct uroce_cm_id *id, const struct sockaddr *src,
		       const struct sockaddr *dst, const struct uroce_cm_path *path);
/** The id's addresses (port included) and path, as rdma_cm_id.route reports them. */
void uroce_cm_id_addrs(const struct uroce_cm_id *id, struct sockaddr_storage *src,
		       struct sockaddr_storage *dst);
const struct uroce_cm_path *uroce_cm_id_path(const struct uroce_cm_id *id);

int uroce_cm_listen(struct uroce_cm_id *id, int backlog);
/** RC/UC: sends REQ (the id must have a route); UD: SIDR_REQ. @return 0, -EINVAL (state),
 *  -EMSGSIZE (private data too long for REQ with the CMA header: 56 bytes). */
int uroce_cm_connect(struct uroce_cm_id *id, const struct uroce_cm_conn_param *param,
		     uint64_t now_ns);
/** The passive side: REP (RC/UC; RTU then gives ESTABLISHED) or SIDR_REP (UD: done).
 *  The active side after CONNECT_RESPONSE (rdma_accept on a client id): RTU, and no
 *  event (librdmacm shows the application ESTABLISHED itself, as with the kernel). */
int uroce_cm_accept(struct uroce_cm_id *id, const struct uroce_cm_conn_param *param,
		    uint64_t now_ns);
/** REJ (RC/UC, reason consumer reject) or SIDR_REP with status reject (UD). */
int uroce_cm_reject(struct uroce_cm_id *id, const void *private_data, uint8_t len,
		    uint64_t now_ns);
/** DREQ (DISCONNECTED follows on DREP, or with -ETIMEDOUT after max_retries), or DREP
 *  when a DREQ came (DISCONNECTED was already reported when it arrived, as Linux does). */
int uroce_cm_disconnect(struct uroce_cm_id *id, uint64_t now_ns);
/** rdma_establish / rdma_notify: a message arrived on the QP before RTU (IBA 12.6.6). */
int uroce_cm_establish(struct uroce_cm_id *id, uint64_t now_ns);

/**
 * rdma_init_qp_attr: the attributes for attr->qp_state (INIT, RTR, RTS), and their mask.
 * RTR's ah_attr is the path (is_global, dgid, sgid_index, hop limit, traffic class,
 * flow label); the caller resolves the MAC at modify time as for any RTR.
 * @return 0, -EINVAL (the id has no connection parameters for that state yet).
 */
int uroce_cm_init_qp_attr(const struct uroce_cm_id *id, struct ibv_qp_attr *attr, int *mask);

/** rdma_set_option: RDMA_OPTION_ID_TOS, RDMA_OPTION_ID_REUSEADDR, RDMA_OPTION_ID_AFONLY,
 *  RDMA_OPTION_ID_ACK_TIMEOUT; others -ENOSYS as rdma_cm. */
int uroce_cm_set_option(struct uroce_cm_id *id, int level, int optname, uint64_t value);

#ifdef __cplusplus
}
#endif

#endif /* UROCE_CM_H */
