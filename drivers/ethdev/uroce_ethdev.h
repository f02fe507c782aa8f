/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_ETHDEV_H
#define UROCE_ETHDEV_H

/**
 * @file
 * The DPDK glue: one ethdev port as the daemon sees it, contiguous frames in and out.
 *
 * Why a layer at all: the transport and the IP stack want "a frame is (data, len)", and the
 * ports the project runs on disagree about what a frame is. memif and af_packet report a
 * 1518-byte maximum frame yet carry jumbo frames as chained mbufs; real NICs may scatter;
 * net_ring hands over whatever mbufs were sent. This layer hides that:
 *
 * - RX gives contiguous views. A single-segment mbuf is referenced in place (no copy);
 *   a chained mbuf is linearized into a per-queue scratch slot. Views stay valid until
 *   uroce_eth_rx_done() (or the next uroce_eth_rx()) on the same queue.
 * - TX copies a contiguous frame into an mbuf (chained if it exceeds one mbuf's room),
 *   batches per queue and flushes 32 at a time. A frame the PMD still refuses after a
 *   bounded retry is freed and counted in tx_dropped: never leaked, never blocking; the
 *   transport above retransmits, as it would after a loss on the wire. Or, with
 *   uroce_eth_port_cfg::tx_hold, it stays queued and the caller is pushed back (-EAGAIN)
 *   until the PMD takes it, as a NIC's full TX ring holds its driver back.
 * - MTU: the port is asked for the MTU wanted. When the PMD refuses (memif, af_packet and
 *   tap report a 1518-byte maximum), the MTU is kept as a *software MTU*: the port still
 *   carries such frames (as chains), uroce_eth_tx_frame() accepts them, and
 *   uroce_eth_port::sw_mtu says so. The caller uses uroce_eth_port::mtu either way.
 *
 * Threading: a queue belongs to one lcore (DPDK's rule for rx/tx_burst). Different
 * queues of one port may be polled from different lcores; every per-queue structure here
 * (burst, scratch, tx batch, counters) is private to its queue, so nothing is shared on
 * the hot path. Port open/close and stats are control-path calls: one thread, not while
 * queues are polled.
 *
 * Link down: the caller must stop polling a port whose link went down.
 * net_memif segfaulted inside the PMD in ~23% of testpmd runs when the still-polling
 * side's peer exited under traffic. Check uroce_eth_link_up() every few
 * milliseconds (it is cheap: no wait) and leave the poll loop when it turns false.
 *
 * This header does not include DPDK's: the daemon's other layers can use it without
 * DPDK's include paths and warnings. Functions return 0 or a negative errno.
 */

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rte_mbuf;
struct rte_mempool;

/* ---- EAL -------------------------------------------------------------------------------- */

/**
 * rte_eal_init() with this machine's defaults filled in:
 * - neither `--no-huge` nor `--in-memory` given and no free hugepages (2 MiB or 1 GiB, or
 *   no hugetlbfs mounted): warns on stderr and adds `--no-huge -m <N>` (N = 512, or the
 *   environment's UROCE_EAL_MEM_MB) instead of letting EAL fail;
 * - adds `--no-telemetry` unless `--telemetry`/`--no-telemetry` was given.
 * Added flags go right after argv[0]; the caller's argv is not modified except as
 * rte_eal_init() does: on success argv[ret] holds the program name, so the caller
 * continues with `argc -= ret; argv += ret;` and parses its own options after `--`.
 * Callable once per process.
 * @return arguments consumed (>= 0), or a negative errno (-EALREADY on a second call).
 */
int uroce_eth_eal_init(int argc, char **argv);
/** rte_eal_cleanup() after every port was closed; a no-op without uroce_eth_eal_init(). */
void uroce_eth_eal_cleanup(void);
/** True when uroce_eth_eal_init() fell back to --no-huge. */
bool uroce_eth_eal_no_huge(void);

/* ---- port ------------------------------------------------------------------------------- */

#define UROCE_ETH_BURST_MAX 64 /**< most frames one uroce_eth_rx() returns */
#define UROCE_ETH_TX_BATCH 32  /**< frames batched per queue before tx_burst */
#define UROCE_ETH_MAX_QUEUES 16
#define UROCE_ETH_MAX_MCAST 64 /**< multicast filter entries per port */
#define UROCE_ETH_DEFAULT_MTU 1500
/** Default mbuf data room after the headroom: a 9000-byte MTU frame (with VLAN tag) fits
 *  one mbuf, so a 4096-byte RoCE MTU frame is never chained by our own TX. */
#define UROCE_ETH_DEFAULT_MBUF_ROOM 9216
/** Largest frame the port takes, on top of the MTU: Ethernet header and one VLAN tag
 *  (no FCS: PMDs strip it). */
#define UROCE_ETH_FRAME_OVERHEAD 18

struct uroce_eth_port_cfg {
	/** Device name: a vdev ("net_af_packet0", "net_memif0", as given to --vdev) or a PCI
	 *  address ("0000:00:04.0"). NULL: use port_id. */
	const char *name;
	uint16_t port_id;
	uint32_t mtu;         /**< 0: UROCE_ETH_DEFAULT_MTU */
	uint16_t nb_rxq;      /**< 0: 1; at most UROCE_ETH_MAX_QUEUES */
	uint16_t nb_txq;      /**< 0: 1 */
	uint16_t rx_ring;     /**< descriptors per rx queue; 0: 1024 */
	uint16_t tx_ring;     /**< 0: 1024 */
	uint32_t nb_mbufs;    /**< 0: enough for every ring, batch and per-lcore cache */
	/** Data bytes per mbuf, after RTE_PKTMBUF_HEADROOM. 0: UROCE_ETH_DEFAULT_MBUF_ROOM.
	 *  Smaller values make TX chain (tests use that). */
	uint16_t mbuf_room;
	uint16_t tx_retries;  /**< tx_burst retries of a refused remainder; 0: 64 */
	/** What the PMD refuses after the retries stays queued instead of being dropped, and
	 *  each flush tries it again; while UROCE_ETH_TX_BATCH frames wait on a queue,
	 *  uroce_eth_tx_frame() says -EAGAIN and uroce_eth_tx_alloc() NULL (counted tx_busy).
	 *  For a sender that retries later (a transport), not one that measures loss. */
	bool tx_hold;
	bool no_allmulti;     /**< leave all-multicast off (IPv6 ND needs it on, the default) */
	bool no_promisc;      /**< default on: af_packet/memif peers are not MAC-filtered
				   anyway, and the IP layer filters by address */
};

struct uroce_eth_rxq;
struct uroce_eth_txq;

/** An open port. The fields are read-only for the caller. */
struct uroce_eth_port {
	uint16_t port_id;
	uint16_t nb_rxq, nb_txq;
	bool open;            /**< configured: close() must close the device */
	bool started;
	/** MTU in use: what the caller asked for, whether the PMD took it or not. */
	uint32_t mtu;
	/** True when the PMD refused @ref mtu (rte_eth_dev_set_mtu failed): frames of that
	 *  size are still sent and received, as chained mbufs where the PMD chains. */
	bool sw_mtu;
	uint32_t max_frame;   /**< mtu + UROCE_ETH_FRAME_OVERHEAD: the TX and RX limit */
	uint16_t mbuf_room;   /**< data bytes per mbuf */
	uint8_t mac[6];
	char name[64];        /**< device name */
	char driver[32];      /**< PMD name, e.g. "net_memif" */
	/** The kernel interface the PMD sends and receives through (af_packet, af_xdp), whose
	 *  own IP stack sees the same frames; 0: none (a PCI NIC, memif). */
	unsigned int if_index;
	struct rte_mempool *pool;
	/** True when frames may point into the caller's memory (uroce_eth_tx_lend): the PMD
	 *  takes mbuf chains (RTE_ETH_TX_OFFLOAD_MULTI_SEGS) and is a virtual device, which
	 *  copies from virtual addresses; a PCI NIC would need the memory mapped for DMA,
	 *  which this layer does not do, so it is false there. */
	bool tx_lend;
	struct rte_mempool *lend_pool; /**< mbufs that point into lent memory (tx_lend) */
	uint16_t tx_retries;
	bool tx_hold;
	uint16_t nb_mcast;
	uint8_t mcast[UROCE_ETH_MAX_MCAST][6];
	struct uroce_eth_rxq *rxq; /* [nb_rxq] */
	struct uroce_eth_txq *txq; /* [nb_txq] */
};

/**
 * Opens, configures and starts a port: @p cfg->nb_rxq/nb_txq queues, one mempool for the
 * port on its NUMA socket, promiscuous and all-multicast on (unless asked not to), MTU set
 * or recorded as software MTU (with a warning on stderr).
 * @return 0; -ENODEV (no such port), -EINVAL (bad cfg), -ENOMEM, or the ethdev error.
 */
int uroce_eth_port_open(struct uroce_eth_port *p, const struct uroce_eth_port_cfg *cfg);
/** How many ports the EAL made from its arguments (0: none was named, or each named one
 *  failed to start, as its driver logged). */
uint16_t uroce_eth_port_count(void);
/** Flushes and frees pending frames, stops and closes the device, frees the pool.
 *  Safe on a zeroed or already closed port. */
void uroce_eth_port_close(struct uroce_eth_port *p);

/** Link state without waiting. The poll loop stops when this turns false (see above). */
bool uroce_eth_link_up(const struct uroce_eth_port *p);
/** Link speed in Mbit/s (0 unknown), without waiting. */
uint32_t uroce_eth_link_speed(const struct uroce_eth_port *p);

/**
 * Adds @p mac (e.g. 33:33:ff:xx:xx:xx, an IPv6 solicited-node group) to the port's
 * multicast filter (rte_eth_dev_set_mc_addr_list, the whole list set again). With
 * all-multicast on this is belt and braces; on a PMD without the filter it is -ENOTSUP,
 * harmless while all-multicast is on.
 */
int uroce_eth_add_mcast(struct uroce_eth_port *p, const uint8_t mac[6]);
int uroce_eth_del_mcast(struct uroce_eth_port *p, const uint8_t mac[6]);

/* ---- RX --------------------------------------------------------------------------------- */

struct uroce_eth_frame {
	const uint8_t *data; /**< whole frame, contiguous, from the Ethernet header */
	uint32_t len;
	bool linearized;     /**< data is a scratch copy of a chained mbuf */
	struct rte_mbuf *mbuf; /**< the head mbuf (offload flags, timestamps); the port owns it */
};

/**
 * Receives up to @p n (<= UROCE_ETH_BURST_MAX) frames from @p queue into @p frames.
 * Frames longer than max_frame (a chain longer than the scratch slot) are dropped and
 * counted (rx_oversize). If the previous burst of this queue was not released, it is
 * released first.
 * @return frames filled (0 when none).
 */
uint16_t uroce_eth_rx(struct uroce_eth_port *p, uint16_t queue, struct uroce_eth_frame *frames,
		      uint16_t n);
/** Frees the mbufs of the last burst of @p queue; the views die here. */
void uroce_eth_rx_done(struct uroce_eth_port *p, uint16_t queue);

/* ---- sleeping until frames arrive -------------------------------------------------------- */

/** How a queue can wake a caller that sleeps in epoll instead of polling it. */
enum uroce_eth_rx_wake {
	UROCE_ETH_RX_WAKE_NONE,   /**< no descriptor: the caller naps and polls */
	UROCE_ETH_RX_WAKE_INTR,   /**< the queue's Rx interrupt (memif, tap, virtio, most
				       PCI NICs): armed before a sleep, drained after */
	UROCE_ETH_RX_WAKE_SOCKET, /**< the kernel socket the PMD reads (af_packet, af_xdp):
				       readable while its ring holds frames */
};

/**
 * How queue @p queue wakes a sleeper, and the descriptor to wait on (readable: frames
 * came) in @p fd (-1 with UROCE_ETH_RX_WAKE_NONE). The descriptor is the port's: add it
 * to an epoll set (level-triggered), never close it.
 */
enum uroce_eth_rx_wake uroce_eth_rx_wake_fd(const struct uroce_eth_port *p, uint16_t queue,
					    int *fd);
/**
 * Before a sleep on the descriptor: arms the queue's interrupt (nothing to do for a
 * socket). A frame that came before the arming raised no interrupt: poll the queue once
 * more after this and sleep only if it is empty.
 * @return 0, or the PMD's -errno (do not sleep on the descriptor: nap instead).
 */
int uroce_eth_rx_sleep(struct uroce_eth_port *p, uint16_t queue);
/** After a sleep: disarms the interrupt and drains its descriptor, so the next sleep
 *  waits for new frames only. */
void uroce_eth_rx_awake(struct uroce_eth_port *p, uint16_t queue);

/* ---- TX --------------------------------------------------------------------------------- */

/**
 * Copies a frame into the port's mbufs (chained when longer than mbuf_room) and queues it
 * on @p queue; a full batch (UROCE_ETH_TX_BATCH) is flushed at once.
 * @return 0 (queued: it may still be dropped by the PMD at flush, see tx_dropped);
 *         -EMSGSIZE (len 0 or > max_frame), -ENOBUFS (mempool empty; counted tx_nombuf),
 *         -EAGAIN (tx_hold: a batch of frames the PMD refused still waits; nothing is
 *         queued, counted tx_busy).
 */
int uroce_eth_tx_frame(struct uroce_eth_port *p, uint16_t queue, const uint8_t *data,
		       uint32_t len);
/**
 * Hands the queued frames to the PMD, retrying the refused remainder up to tx_retries
 * times; what is still refused is freed and counted in tx_dropped, or with tx_hold kept,
 * in order, for the next flush.
 * @return frames the PMD accepted.
 */
uint16_t uroce_eth_tx_flush(struct uroce_eth_port *p, uint16_t queue);
/** Frames queued on @p queue that the PMD has not taken yet (tx_hold keeps them). */
uint16_t uroce_eth_tx_pending(const struct uroce_eth_port *p, uint16_t queue);
/**
 * Zero-copy-ish variant: reserves @p len (<= mbuf_room) bytes of a fresh mbuf and returns
 * where to write the frame; uroce_eth_tx_commit() queues it. One reservation per queue at
 * a time; another alloc on the same queue drops the uncommitted one.
 * @return the frame buffer, or NULL (len 0 or > mbuf_room or > max_frame, or no mbuf, or
 *         with tx_hold a full batch still waiting: counted tx_busy).
 */
uint8_t *uroce_eth_tx_alloc(struct uroce_eth_port *p, uint16_t queue, uint32_t len);
/** Queues the frame reserved by uroce_eth_tx_alloc(); -EINVAL if there is none. */
int uroce_eth_tx_commit(struct uroce_eth_port *p, uint16_t queue);

/** Called once per uroce_eth_tx_lend() when the port lets go of the lent bytes. */
typedef void (*uroce_eth_lend_done_fn)(void *arg);

/**
 * Zero-copy TX: appends to the frame reserved by uroce_eth_tx_alloc() @p len bytes at
 * @p addr, not copied: a segment of the frame points at them. They must stay mapped and
 * unchanged until @p done(@p arg) runs, which is when the PMD has copied or sent them,
 * or the frame was dropped: in a later tx_flush, at port close, or at once if this call
 * fails. Only on a port with tx_lend.
 * @return 0; -ENOTSUP (no tx_lend), -EINVAL (no reservation; len 0 or > 65535),
 *         -EMSGSIZE (the frame would exceed max_frame), -ENOBUFS (no mbuf; counted
 *         tx_nombuf). On an error the reservation stays as it was.
 */
int uroce_eth_tx_lend(struct uroce_eth_port *p, uint16_t queue, const void *addr, uint32_t len,
		      uroce_eth_lend_done_fn done, void *arg);
/**
 * Appends @p len bytes copied from @p data to the reserved frame (after lent bytes: the
 * pad and ICRC).
 * @return 0; -EINVAL (no reservation, len 0 or > mbuf_room), -EMSGSIZE, -ENOBUFS, as
 *         uroce_eth_tx_lend.
 */
int uroce_eth_tx_append(struct uroce_eth_port *p, uint16_t queue, const void *data,
			uint32_t len);

/* ---- stats ------------------------------------------------------------------------------ */

struct uroce_eth_stats {
	/* rte_eth_stats_get */
	uint64_t ipackets, opackets, ibytes, obytes;
	uint64_t imissed, ierrors, oerrors, rx_nombuf;
	/* ours, summed over queues */
	uint64_t rx_frames;     /**< frames returned by uroce_eth_rx */
	uint64_t rx_linearized; /**< of which copied out of a chain */
	uint64_t rx_oversize;   /**< dropped: longer than a scratch slot */
	/** dropped by the kernel before we saw them: an af_packet socket's ring was full
	 *  (PACKET_STATISTICS; the PMD does not count them) */
	uint64_t rx_socket_drops;
	uint64_t tx_frames;     /**< frames the PMD accepted */
	uint64_t tx_bytes;
	uint64_t tx_chained;    /**< frames sent as an mbuf chain */
	uint64_t tx_lent;       /**< segments that pointed into lent memory */
	uint64_t tx_dropped;    /**< refused by the PMD after the retries, freed */
	uint64_t tx_nombuf;     /**< uroce_eth_tx_frame found the mempool empty */
	uint64_t tx_oversize;   /**< uroce_eth_tx_frame refused: longer than max_frame */
	uint64_t tx_busy;       /**< tx_hold: frames refused while a full batch waited */
};

int uroce_eth_stats_get(const struct uroce_eth_port *p, struct uroce_eth_stats *s);
/** Prints the non-zero counters on one line each, prefixed with @p prefix. */
void uroce_eth_stats_print(const struct uroce_eth_port *p, const char *prefix);

#ifdef __cplusplus
}
#endif

#endif /* UROCE_ETHDEV_H */
