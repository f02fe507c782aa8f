/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_IPSTACK_H
#define UROCE_IPSTACK_H

/**
 * @file
 * The host identity of one uroced port: just enough of an IPv4/IPv6 stack that the
 * network can find and check the port (ARP, Neighbor Discovery, ping) and that the
 * daemon can find its peers (a neighbour cache that resolves RoCEv2 GIDs to MACs).
 *
 * Contract
 * - Sans I/O. Frames and time come in (uroce_ip_input, uroce_ip_process, now_ns from any
 *   monotonic clock), frames go out through cfg.tx, resolutions come back through
 *   cfg.resolved. No clock, no sockets, no threads, no DPDK. One stack is used by one
 *   thread at a time.
 * - uroce_ip_input() never reads outside [frame, frame + len), whatever the bytes are. A
 *   frame gets exactly one verdict; a DROP increments exactly one drop-reason counter.
 * - It answers: ARP requests for our IPv4 addresses (RFC 826), Neighbor Solicitations for
 *   our IPv6 addresses, link-local included (RFC 4861 7.2.3, 7.2.4), ICMP echo (RFC 792)
 *   and ICMPv6 echo (RFC 4443 4.1) sent to our unicast addresses. Nothing else: no ICMP
 *   errors, no fragments (reassembly), no IPv4 options or IPv6 extension headers, no
 *   echo to broadcast or multicast, no routing (every peer is on-link: RoCEv2 through a
 *   router needs a gateway entry, which this stack does not have).
 * - It classifies: IPv4 or IPv6 UDP to port 4791 addressed to one of our addresses and
 *   our MAC is UROCE_IP_ROCE; the caller gives it to the transport, which validates the
 *   rest (lib/wire), or has it parsed here (uroce_ip_input_roce). The IP header has been
 *   checked as far as classifying needs (lengths, IPv4 checksum, no fragment), the UDP
 *   checksum has not.
 * - Frames we send are not padded to Ethernet's 60-byte minimum (the NIC pads, as for
 *   Linux's own 42-byte ARP frames) and carry an 802.1Q tag when cfg.vlan_id != 0.
 * - Callbacks: cfg.tx may not call back into the stack. cfg.resolved may call
 *   uroce_ip_resolve, uroce_ip_cancel, uroce_ip_is_local and the read-only functions, not
 *   uroce_ip_input, uroce_ip_process or uroce_ip_destroy. Resolutions are delivered at the
 *   end of the uroce_ip_input or uroce_ip_process call that settled them, never from
 *   inside uroce_ip_resolve.
 *
 * Neighbour cache (RFC 4861 7.3 states, with Linux's timers; doc/ipstack.md)
 * - An entry is INCOMPLETE (being resolved: no MAC yet, requests broadcast / sent to the
 *   solicited-node multicast group), REACHABLE (confirmed by an answer to our request
 *   less than reachable_ns ago), STALE (MAC known but not recently confirmed: learned
 *   from a peer's own request, or reachable_ns has passed) or PROBE (STALE and in use:
 *   unicast requests are being sent to confirm it; the MAC stays usable meanwhile).
 * - INCOMPLETE and PROBE send up to max_probes requests retrans_ns apart; with no answer
 *   retrans_ns after the last one, the entry is deleted and its waiters get
 *   -EHOSTUNREACH (Linux: 3 x 1 s, mcast_solicit and ucast_solicit = 3, retrans_time 1 s).
 * - Linux draws reachable time at random in [0.5, 1.5] x base_reachable_time; here it is
 *   exactly reachable_ns (30 s by default), so that tests and traces are repeatable.
 * - At most neigh_max entries: a new one evicts the least recently used entry that has
 *   no waiter; when all entries have waiters, uroce_ip_resolve says -ENOBUFS.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uroce_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

#define UROCE_IP_MAX_V4 8
#define UROCE_IP_MAX_V6 8 /**< configured IPv6 addresses; the link-local one comes on top */
/** Multicast MACs the port must accept: all-nodes, and one solicited-node group per own
 *  IPv6 address (link-local included); fewer when addresses share their low 24 bits. */
#define UROCE_IP_MCAST_MAX (2 + UROCE_IP_MAX_V6)
/** Own addresses as GIDs: link-local, the IPv4 ones, the configured IPv6 ones. */
#define UROCE_IP_ADDR_MAX (1 + UROCE_IP_MAX_V4 + UROCE_IP_MAX_V6)

/** Largest frame uroce_ip_input answers (an echo request longer than this is dropped and
 *  counted as too_big): a 9000-byte jumbo MTU, Ethernet and 802.1Q headers. */
#define UROCE_IP_FRAME_MAX (9000 + 14 + 4)

#define UROCE_IP_REACHABLE_NS_DEFAULT 30000000000ull /**< Linux base_reachable_time 30 s */
#define UROCE_IP_RETRANS_NS_DEFAULT 1000000000ull    /**< Linux retrans_time 1 s */
#define UROCE_IP_MAX_PROBES_DEFAULT 3                /**< Linux mcast/ucast_solicit */
#define UROCE_IP_NEIGH_MAX_DEFAULT 1024
#define UROCE_IP_WAITERS_MAX_DEFAULT 4096

/** Sends one frame (from its Ethernet header). Returns 0, or non-zero when it could not
 *  be sent (counted as tx_errors; the stack does not retry, as the network may lose it
 *  anyway). The frame is only valid during the call. */
typedef int (*uroce_ip_tx_fn)(void *ctx, const uint8_t *frame, uint32_t len);

/** A resolution that uroce_ip_resolve() left pending has settled: @p mac is the peer's
 *  MAC and @p err 0, or @p mac is NULL and @p err -EHOSTUNREACH. @p gid is as passed to
 *  uroce_ip_resolve(); both pointers are valid only during the call. */
typedef void (*uroce_ip_resolved_fn)(void *ctx, uint64_t cookie, const uint8_t gid[16],
				     const uint8_t *mac, int err);

struct uroce_ip_cfg {
	uint8_t mac[6];
	/** IPv4 addresses, network byte order (no prefix lengths: every peer is on-link,
	 *  and a request's source is the own address sharing the longest prefix with the
	 *  target). */
	uint8_t v4[UROCE_IP_MAX_V4][4];
	uint8_t v4_count;
	/** IPv6 addresses besides the link-local fe80::/64 one, which is always there,
	 *  derived from the MAC (EUI-64, RFC 4291 2.5.1 and appendix A) as Linux derives it
	 *  and as rxe's GID index 0 is. */
	uint8_t v6[UROCE_IP_MAX_V6][16];
	uint8_t v6_count;
	/** 802.1Q VLAN id 1..4094, or 0: untagged (priority-tagged frames, VID 0, are taken
	 *  as untagged, IEEE 802.1Q 6.9). With a VLAN, only frames tagged with it are ours. */
	uint16_t vlan_id;
	uroce_ip_tx_fn tx;
	uroce_ip_resolved_fn resolved; /**< may be NULL: nobody waits then */
	void *ctx;                     /**< first argument of tx and resolved */
	uint64_t reachable_ns;         /**< REACHABLE lasts this long after a confirmation */
	uint64_t retrans_ns;           /**< between requests while resolving or probing */
	uint32_t max_probes;           /**< requests before giving up (>= 1) */
	uint32_t neigh_max;            /**< neighbour cache entries (1 .. 65536) */
	uint32_t waiters_max;          /**< pending uroce_ip_resolve() calls, in all */
};

/** Fills @p cfg with the defaults above and no address, no callback. */
void uroce_ip_cfg_init(struct uroce_ip_cfg *cfg);

struct uroce_ip_stack;

/** @return the stack, or NULL with errno EINVAL (a group or zero MAC, an address that is
 *  not unicast, a count or tunable out of range, no tx) or ENOMEM. */
struct uroce_ip_stack *uroce_ip_create(const struct uroce_ip_cfg *cfg);
/** Frees the stack. Pending resolutions are dropped without a callback. */
void uroce_ip_destroy(struct uroce_ip_stack *stack);

/* ------------------------------------------------------------------------------------- */
/* Receive                                                                                */

enum uroce_ip_verdict {
	UROCE_IP_DROP = 0,     /**< not for us, malformed or unhandled; counted by reason */
	UROCE_IP_CONSUMED = 1, /**< ARP, ND or echo: handled here (answers went out by tx) */
	UROCE_IP_ROCE = 2,     /**< UDP 4791 to one of our addresses: for the transport */
};

/** Classifies one received frame (from its Ethernet header; link-layer padding after the
 *  IP datagram is allowed) and answers it if it asks something of us. */
enum uroce_ip_verdict uroce_ip_input(struct uroce_ip_stack *stack, const uint8_t *frame,
				     uint32_t len, uint64_t now_ns);
/** uroce_ip_input(), and for a UROCE_IP_ROCE frame the rest of its parse, from where this
 *  stack's checks ended (uroce_wire_parse_checked_ip: no header is parsed twice): @p pkt
 *  and @p err as uroce_wire_parse() would give them, for the transport
 *  (uroce_tp_rx_parsed). Untouched for the other verdicts. */
enum uroce_ip_verdict uroce_ip_input_roce(struct uroce_ip_stack *stack, const uint8_t *frame,
					  uint32_t len, uint64_t now_ns, struct uroce_wire_pkt *pkt,
					  enum uroce_wire_err *err);

/* ------------------------------------------------------------------------------------- */
/* Neighbours                                                                             */

/**
 * Finds the MAC for a RoCEv2 GID: IPv4-mapped (::ffff:a.b.c.d) or IPv6.
 * @return 0 and @p mac filled: the entry is REACHABLE, or STALE/PROBE (then a unicast
 *         probe confirms it in the background), or @p gid is one of our own addresses
 *         (our MAC: loopback), or a multicast group (its mapped MAC, RFC 1112 6.4,
 *         RFC 2464 7);
 *         -EAGAIN: a request went out (or one is already out for this GID); @p cookie is
 *         remembered and cfg.resolved is called once with it when the entry resolves or
 *         fails; several waiters may wait on one entry;
 *         -EINVAL: @p gid is not a unicast or multicast address we can resolve (::,
 *         ::1, 0.0.0.0, 255.255.255.255, 127/8, ...);
 *         -EADDRNOTAVAIL: an IPv4 GID but we have no IPv4 address to ask from;
 *         -ENOBUFS: the cache or the waiter pool is full of pending resolutions.
 */
int uroce_ip_resolve(struct uroce_ip_stack *stack, const uint8_t gid[16], uint64_t now_ns,
		     uint8_t mac[6], uint64_t cookie);

/** Forgets every waiter with @p cookie (its client went away): no callback will come for
 *  it, even one already settled and not yet delivered. The entry keeps resolving.
 *  @return how many waiters were dropped. */
unsigned uroce_ip_cancel(struct uroce_ip_stack *stack, uint64_t cookie);

/** True when @p gid is one of our addresses (IPv4-mapped, configured IPv6, link-local). */
bool uroce_ip_is_local(const struct uroce_ip_stack *stack, const uint8_t gid[16]);

/** Sends the requests that are due and fails the resolutions that ran out of probes. */
void uroce_ip_process(struct uroce_ip_stack *stack, uint64_t now_ns);

/** When uroce_ip_process() next has something to do, or UINT64_MAX: nothing pending. */
uint64_t uroce_ip_next_deadline(const struct uroce_ip_stack *stack);

/* ------------------------------------------------------------------------------------- */
/* Addresses                                                                              */

/** fe80::/64 with the modified EUI-64 interface id of @p mac (RFC 4291 appendix A: the
 *  universal/local bit flipped, ff:fe in the middle), as Linux derives it. */
void uroce_ip_link_local(const uint8_t mac[6], uint8_t addr[16]);

/** Our addresses as GIDs: the link-local one first (rxe's GID index 0), then the IPv4
 *  ones (IPv4-mapped), then the configured IPv6 ones. @return the count (up to
 *  UROCE_IP_ADDR_MAX); at most @p max are written. */
unsigned uroce_ip_addrs(const struct uroce_ip_stack *stack, uint8_t (*gids)[16],
			unsigned max);

/** The multicast MACs the port must accept for IPv6 to work: 33:33:00:00:00:01
 *  (all-nodes, RFC 4291 2.7.1) and 33:33:ff:xx:xx:xx for the solicited-node group of
 *  each own address (RFC 4861 7.2.1, RFC 2464 7), without duplicates. Broadcast is
 *  needed too (ARP). @return the count (up to UROCE_IP_MCAST_MAX); at most @p max are
 *  written. */
unsigned uroce_ip_mcast_macs(const struct uroce_ip_stack *stack, uint8_t (*macs)[6],
			     unsigned max);

/**
 * RoCE multicast groups joined (UD QPs attached to them): RoCEv2 frames to a joined
 * group's IP address, through its MAC (RFC 1112 6.4, RFC 2464 7), are classified
 * UROCE_IP_ROCE. Counted: the group stays while joins outnumber leaves. No IGMP/MLD
 * reports are sent (doc/ipstack.md). @p mac is set to the group's MAC.
 * @return 0, or for join 1 when the group is new (the port must accept @p mac),
 *         for leave 1 when it went (the port may drop @p mac); -EINVAL (not an IPv4
 *         multicast GID ::ffff:224.0.0.0/4 or an IPv6 one ff00::/8, or not joined),
 *         -ENOBUFS (UROCE_IP_GROUPS_MAX groups).
 */
#define UROCE_IP_GROUPS_MAX 64
int uroce_ip_group_join(struct uroce_ip_stack *stack, const uint8_t gid[16], uint8_t mac[6]);
int uroce_ip_group_leave(struct uroce_ip_stack *stack, const uint8_t gid[16], uint8_t mac[6]);
/** True when RoCE traffic to @p gid is accepted here (a joined group). */
bool uroce_ip_group_joined(const struct uroce_ip_stack *stack, const uint8_t gid[16]);

/* ------------------------------------------------------------------------------------- */
/* Checksums left for offload                                                            */

/**
 * A frame for the kernel (host.kernel_iface) may come from a sender on this machine that
 * left its TCP or UDP checksum to be filled in by the device (Linux CHECKSUM_PARTIAL: a
 * virtio-net guest or a container behind a bridge or veth; an AF_PACKET reader, such as
 * DPDK's af_packet PMD, gets the frame as it is). Its checksum field holds the
 * pseudo-header's sum, so the kernel that receives it from a tap would drop it as
 * corrupt.
 *
 * uroce_ip_csum_partial(): true for an unfragmented IPv4 TCP segment or UDP datagram
 * (untagged or with one 802.1Q tag) whose checksum field holds the folded pseudo-header
 * sum and whose checksum does not verify; false for anything else, a correct checksum, a
 * UDP checksum of 0 and a frame corrupted in any other way included. Reads only
 * [frame, frame + len).
 * uroce_ip_csum_complete(): when uroce_ip_csum_partial() is true, writes the full
 * checksum into the frame and returns true; otherwise leaves the frame as it is and
 * returns false.
 */
bool uroce_ip_csum_partial(const uint8_t *frame, uint32_t len);
bool uroce_ip_csum_complete(uint8_t *frame, uint32_t len);

/* ------------------------------------------------------------------------------------- */
/* Counters                                                                               */

/**
 * Frames: rx_frames = rx_roce + rx_consumed + rx_dropped, and every drop counts one
 * reason (truncated .. too_big). Then what was sent and what the cache did.
 */
#define UROCE_IP_COUNTERS(X)                                                              \
	X(rx_frames)                                                                      \
	X(rx_roce)                                                                        \
	X(rx_consumed)                                                                    \
	X(rx_dropped)                                                                     \
	/* drop reasons */                                                                \
	X(truncated)         /* shorter than a header or than its own length field */     \
	X(not_for_us)        /* another MAC, IP address, ARP/ND target; multicast echo */ \
	X(wrong_vlan)        /* tagged with another VLAN, or untagged on a VLAN port */   \
	X(unknown_ethertype) /* not ARP, IPv4, IPv6 (QinQ included) */                    \
	X(bad_src)           /* group or own source MAC; group/zero/loopback source IP */ \
	X(bad_arp)           /* not Ethernet/IPv4 ARP, bad opcode, bad address */         \
	X(bad_ipv4)          /* version, IHL < 5, total length < header */                \
	X(bad_ipv4_csum)                                                                  \
	X(bad_ipv6)          /* version */                                                \
	X(ip_options)        /* IPv4 options, IPv6 extension headers */                   \
	X(ip_fragment)                                                                    \
	X(bad_udp)           /* UDP length field disagrees with IP */                     \
	X(unhandled_proto)   /* TCP, UDP to a port other than 4791, ... */                \
	X(bad_icmp)          /* echo with a non-zero code, message too short */           \
	X(bad_icmp_csum)                                                                  \
	X(unhandled_icmp)    /* ICMP types we do not answer: MLD, RS/RA, errors, ... */   \
	X(bad_nd)            /* RFC 4861 7.1 validity: hop limit, code, options, ... */   \
	X(too_big)           /* echo request longer than UROCE_IP_FRAME_MAX */            \
	/* sent */                                                                        \
	X(arp_replies)                                                                    \
	X(arp_requests)                                                                   \
	X(na_sent)                                                                        \
	X(ns_sent)                                                                        \
	X(echo_replies)                                                                   \
	X(echo6_replies)                                                                  \
	X(tx_errors)                                                                      \
	/* neighbour cache */                                                             \
	X(neigh_learned)     /* MAC recorded or changed from an ARP or ND message */      \
	X(neigh_resolved)    /* INCOMPLETE entries that got their MAC */                  \
	X(neigh_failed)      /* entries that ran out of probes */                         \
	X(neigh_evicted)                                                                  \
	X(resolve_nobufs)                                                                 \
	X(addr_conflict)     /* another MAC claims one of our addresses (ARP, NS, NA) */

struct uroce_ip_counters {
#define UROCE_IP_COUNTER_FIELD(name) uint64_t name;
	UROCE_IP_COUNTERS(UROCE_IP_COUNTER_FIELD)
#undef UROCE_IP_COUNTER_FIELD
};

enum {
#define UROCE_IP_COUNTER_INDEX(name) UROCE_IP_CNT_##name,
	UROCE_IP_COUNTERS(UROCE_IP_COUNTER_INDEX)
#undef UROCE_IP_COUNTER_INDEX
	UROCE_IP_CNT__COUNT
};

const struct uroce_ip_counters *uroce_ip_counters(const struct uroce_ip_stack *stack);
/** Name of counter @p i (0 .. UROCE_IP_CNT__COUNT - 1), e.g. "bad_icmp_csum"; NULL past. */
const char *uroce_ip_counter_name(unsigned i);
/** Value of counter @p i in @p c; 0 past the end. */
uint64_t uroce_ip_counter_value(const struct uroce_ip_counters *c, unsigned i);

#ifdef __cplusplus
}
#endif

#endif /* UROCE_IPSTACK_H */
