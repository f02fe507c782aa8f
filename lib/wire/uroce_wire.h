/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_WIRE_H
#define UROCE_WIRE_H

/**
 * @file
 * RoCEv2 packets on the wire: Ethernet (optional 802.1Q) / IPv4 or IPv6 / UDP 4791 /
 * IB transport headers / payload / ICRC.
 *
 * Contract
 * - Pure functions over byte buffers. No allocation, no global state, no I/O. Safe to call
 *   from any thread.
 * - uroce_wire_parse() never reads outside [frame, frame + len), whatever the bytes are; it
 *   validates every length and every field it can and returns one distinct error per failure.
 *   It does not check the ICRC: uroce_wire_icrc_check() does, so that a caller that holds
 *   the payload in several segments can chain the CRC itself (uroce_wire_icrc_*).
 * - The parsed view holds every header field in host order, and nothing else is needed to
 *   write the same packet again: uroce_wire_build(&view.hdr, payload) gives back the
 *   identical bytes (the ICRC recomputed). Link-layer padding after the IP datagram is not
 *   part of the packet. One equivalence: an IPv4 header checksum received as 0xffff where
 *   the builder computes 0x0000 (both are one's-complement zero, RFC 1624).
 * - The builder follows Linux rxe's wire habits, which are the defaults of
 *   uroce_wire_hdr_init(): IPv4 DF set, TTL 64, DSCP/ECN 0, UDP checksum 0, P_Key 0xffff,
 *   pad to 4 bytes.
 * - All multi-byte fields are big-endian on the wire (IBA vol 1, 5.2). The ICRC is the
 *   exception: CRC-32 bytes go out least significant byte first, as Ethernet's FCS does.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------- */
/* Constants                                                                              */

#define UROCE_UDP_PORT_ROCEV2 4791
#define UROCE_ETHERTYPE_IPV4 0x0800
#define UROCE_ETHERTYPE_IPV6 0x86dd
#define UROCE_ETHERTYPE_VLAN 0x8100

#define UROCE_ETH_HLEN 14
#define UROCE_VLAN_HLEN 4
#define UROCE_IPV4_HLEN 20
#define UROCE_IPV6_HLEN 40
#define UROCE_UDP_HLEN 8
#define UROCE_BTH_LEN 12
#define UROCE_RETH_LEN 16
#define UROCE_AETH_LEN 4
#define UROCE_ATOMICETH_LEN 28
#define UROCE_ATOMICACKETH_LEN 8
#define UROCE_IMMDT_LEN 4
#define UROCE_IETH_LEN 4
#define UROCE_DETH_LEN 8
#define UROCE_XRCETH_LEN 4 /* XRC (IBA vol 1 annex A14): reserved byte, 24-bit XRC SRQ number */
#define UROCE_CNP_RSVD_LEN 16 /* RoCEv2 Annex A17.9.1: BTH + 16 reserved bytes + ICRC */
#define UROCE_ICRC_LEN 4

/** Largest transport header: BTH + XRCETH + AtomicETH (XRC's atomics; RC's is 4 bytes
 *  shorter, and BTH + XRCETH + RETH + ImmDt shorter still). */
#define UROCE_TRANSPORT_HDR_MAX (UROCE_BTH_LEN + UROCE_XRCETH_LEN + UROCE_ATOMICETH_LEN)
/** Largest header stack before the payload: Ethernet + VLAN + IPv6 + UDP + transport. */
#define UROCE_HDR_MAX                                                                    \
	(UROCE_ETH_HLEN + UROCE_VLAN_HLEN + UROCE_IPV6_HLEN + UROCE_UDP_HLEN +             \
	 UROCE_TRANSPORT_HDR_MAX)

#define UROCE_PKEY_DEFAULT 0xffff
#define UROCE_IPV4_TTL_DEFAULT 64
#define UROCE_BTH_TVER 0 /* IBA 9.2.5: transport header version 0 */

/** Source ports: IANA's RoCEv2 range starts here (RFC 6335, IBA A17.5.4.1). */
#define UROCE_UDP_SPORT_MIN 0xc000

/* ------------------------------------------------------------------------------------- */
/* RoCEv2 GIDs (RoCEv2 Annex A17.4.5.1): a GID is the port's IPv6 address, or for IPv4   */
/* the IPv4-mapped IPv6 address ::ffff:a.b.c.d (RFC 4291 2.5.5.2).                        */

#define UROCE_GID_LEN 16

/**
 * Writes the IPv4-mapped GID ::ffff:a.b.c.d of an IPv4 address into @p gid (all 16 bytes).
 * @p ipv4 points at the 4 address bytes in network order, a first: a struct in_addr, an
 * IPv4 header's address field, or bytes 12..15 of a struct uroce_wire_hdr ip_src/ip_dst.
 */
static inline void uroce_gid_from_ipv4(uint8_t gid[UROCE_GID_LEN], const void *ipv4)
{
	memset(gid, 0, 10);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, ipv4, 4);
}

/** True when @p gid (16 bytes) is IPv4-mapped, ::ffff:0:0/96, i.e. stands for IPv4. */
static inline bool uroce_gid_is_ipv4(const uint8_t gid[UROCE_GID_LEN])
{
	static const uint8_t v4mapped_prefix[12] = {[10] = 0xff, [11] = 0xff};

	return memcmp(gid, v4mapped_prefix, sizeof(v4mapped_prefix)) == 0;
}

/**
 * The IPv4 address of an IPv4-mapped GID: a pointer to its 4 bytes in network order, a
 * first (they are the last 4 bytes of @p gid; not copied). Meaningful only when
 * uroce_gid_is_ipv4(@p gid).
 */
static inline const uint8_t *uroce_gid_ipv4(const uint8_t gid[UROCE_GID_LEN])
{
	return gid + 12;
}

/* ------------------------------------------------------------------------------------- */
/* Opcodes (IBA vol 1, table 37; RoCEv2 Annex A17 for CNP)                                 */

enum uroce_transport {
	UROCE_TRANSPORT_RC = 0x00,
	UROCE_TRANSPORT_UC = 0x20,
	UROCE_TRANSPORT_RD = 0x40,
	UROCE_TRANSPORT_UD = 0x60,
	UROCE_TRANSPORT_CNP = 0x80,
	UROCE_TRANSPORT_XRC = 0xa0,
};

/** Operation part of an opcode (low 5 bits); combine with a transport. */
enum uroce_op {
	UROCE_OP_SEND_FIRST = 0x00,
	UROCE_OP_SEND_MIDDLE = 0x01,
	UROCE_OP_SEND_LAST = 0x02,
	UROCE_OP_SEND_LAST_IMM = 0x03,
	UROCE_OP_SEND_ONLY = 0x04,
	UROCE_OP_SEND_ONLY_IMM = 0x05,
	UROCE_OP_WRITE_FIRST = 0x06,
	UROCE_OP_WRITE_MIDDLE = 0x07,
	UROCE_OP_WRITE_LAST = 0x08,
	UROCE_OP_WRITE_LAST_IMM = 0x09,
	UROCE_OP_WRITE_ONLY = 0x0a,
	UROCE_OP_WRITE_ONLY_IMM = 0x0b,
	UROCE_OP_READ_REQUEST = 0x0c,
	UROCE_OP_READ_RESPONSE_FIRST = 0x0d,
	UROCE_OP_READ_RESPONSE_MIDDLE = 0x0e,
	UROCE_OP_READ_RESPONSE_LAST = 0x0f,
	UROCE_OP_READ_RESPONSE_ONLY = 0x10,
	UROCE_OP_ACKNOWLEDGE = 0x11,
	UROCE_OP_ATOMIC_ACKNOWLEDGE = 0x12,
	UROCE_OP_COMPARE_SWAP = 0x13,
	UROCE_OP_FETCH_ADD = 0x14,
	UROCE_OP_SEND_LAST_INV = 0x16,
	UROCE_OP_SEND_ONLY_INV = 0x17,
	/* IBA 1.5 (RC only): RETH and the 8 bytes to store, answered by a zero-length RDMA
	 * READ Response Only at its PSN (Linux rxe: IB_OPCODE_RC_ATOMIC_WRITE). */
	UROCE_OP_ATOMIC_WRITE = 0x1d,
};

#define UROCE_OPCODE(transport, op) ((uint8_t)((transport) | (op)))
#define UROCE_OPCODE_TRANSPORT(opc) ((enum uroce_transport)((opc) & 0xe0))
#define UROCE_OPCODE_OP(opc) ((enum uroce_op)((opc) & 0x1f))
/** Congestion Notification Packet (RoCEv2 Annex A17.9.1). */
#define UROCE_OPCODE_CNP 0x81

/** Which extension headers an opcode carries (in wire order after the BTH). */
enum uroce_hdr_mask {
	UROCE_HDR_DETH = 1u << 0,
	UROCE_HDR_RETH = 1u << 1,
	UROCE_HDR_ATOMICETH = 1u << 2,
	UROCE_HDR_AETH = 1u << 3,
	UROCE_HDR_ATOMICACKETH = 1u << 4,
	UROCE_HDR_IMMDT = 1u << 5,
	UROCE_HDR_IETH = 1u << 6,
	UROCE_HDR_CNP_RSVD = 1u << 7,
	UROCE_HDR_XRCETH = 1u << 8, /* every XRC request, right after the BTH (annex A14) */
};

/** What an opcode means to the transport (rxe's opcode mask bits, by name). */
enum uroce_op_flags {
	UROCE_OPF_PAYLOAD = 1u << 0, /* may carry payload */
	UROCE_OPF_FIRST = 1u << 1,   /* starts a message */
	UROCE_OPF_MIDDLE = 1u << 2,
	UROCE_OPF_LAST = 1u << 3, /* ends a message (ONLY = FIRST | LAST) */
	UROCE_OPF_REQ = 1u << 4,  /* sent by a requester */
	UROCE_OPF_RESP = 1u << 5, /* sent by a responder (ACK, atomic ACK, READ response) */
	UROCE_OPF_SEND = 1u << 6,
	UROCE_OPF_WRITE = 1u << 7,
	UROCE_OPF_READ = 1u << 8,
	UROCE_OPF_ATOMIC = 1u << 9,
	UROCE_OPF_IMM = 1u << 10,
	UROCE_OPF_INV = 1u << 11,
	UROCE_OPF_RWQE = 1u << 12, /* consumes a receive WQE at the responder */
	UROCE_OPF_CNP = 1u << 13,
	/* RDMA Atomic Write (IBA 1.5): a request with a payload, read-like to the transport
	 * (a responder resource, answered by a READ response), neither WRITE nor ATOMIC */
	UROCE_OPF_ATOMIC_WRITE = 1u << 14,
};

struct uroce_opcode_info {
	const char *name;  /**< rxe/Wireshark style, e.g. "RC_SEND_FIRST"; NULL if unknown */
	uint16_t flags;    /**< enum uroce_op_flags */
	uint16_t hdrs;     /**< enum uroce_hdr_mask */
	uint8_t hdr_len;   /**< BTH + every extension header, bytes */
};

/** The opcode table: index by opcode. Entries with name == NULL are not supported. */
extern const struct uroce_opcode_info uroce_opcode_table[256];

static inline const struct uroce_opcode_info *uroce_opcode_info(uint8_t opcode)
{
	const struct uroce_opcode_info *oi = &uroce_opcode_table[opcode];
	return oi->name ? oi : NULL;
}

/** QP types as they matter on the wire (the values of enum ibv_qp_type). */
enum uroce_qp_type {
	UROCE_QPT_RC = 2,
	UROCE_QPT_UC = 3,
	UROCE_QPT_UD = 4,
	UROCE_QPT_XRC_SEND = 9,  /**< XRC initiator: sends requests, takes responses */
	UROCE_QPT_XRC_RECV = 10, /**< XRC target: takes requests, sends responses */
};

/** True when @p opcode may arrive on a QP of @p qpt (IBA 9.2, table 37; CNP on RC/UC;
 *  XRC: an initiator only responses, a target only requests, annex A14). */
bool uroce_opcode_valid_for_qp(uint8_t opcode, enum uroce_qp_type qpt);

/* ------------------------------------------------------------------------------------- */
/* Headers, in host order                                                                 */

struct uroce_bth {
	uint8_t opcode;
	bool se;       /**< solicited event */
	bool mig;      /**< migration state */
	uint8_t pad;   /**< pad count, 0..3 */
	uint8_t tver;  /**< transport header version */
	uint16_t pkey;
	/** Byte 4: FECN (bit 7), BECN (bit 6), 6 reserved bits. A variant field (masked
	 *  out of the ICRC), so it is kept as it came, reserved bits included. */
	uint8_t resv8a;
	uint32_t dqpn; /**< 24 bits */
	bool ack_req;
	uint8_t resv7; /**< 7 reserved bits after AckReq; ICRC-covered, kept as it came */
	uint32_t psn;  /**< 24 bits */
};

#define UROCE_BTH_FECN 0x80
#define UROCE_BTH_BECN 0x40

struct uroce_reth {
	uint64_t va;
	uint32_t rkey;
	uint32_t dma_len;
};

struct uroce_aeth {
	uint8_t syndrome;
	uint32_t msn; /**< 24 bits */
};

struct uroce_atomiceth {
	uint64_t va;
	uint32_t rkey;
	uint64_t swap_add; /**< swap value (CMP_SWAP) or add value (FETCH_ADD) */
	uint64_t compare;
};

struct uroce_deth {
	uint32_t qkey;
	uint8_t resv; /**< reserved byte before the source QP, kept as it came */
	uint32_t src_qpn; /**< 24 bits */
};

/** Every header field of one packet: what the parser reads and the builder writes. */
struct uroce_wire_hdr {
	/* Ethernet */
	uint8_t eth_dst[6];
	uint8_t eth_src[6];
	bool vlan;
	uint16_t vlan_tci; /**< PCP, DEI and VID as on the wire */

	/* IP: ip_version 4 or 6. For IPv4 the address is in the last 4 bytes of src/dst and
	 * the first 12 bytes are zero (not v4-mapped: uroce_gid_from_ipv4() makes the GID). */
	uint8_t ip_version;
	uint8_t ip_tos;    /**< IPv4 TOS (DSCP<<2 | ECN) or IPv6 traffic class */
	uint8_t ip_ttl;    /**< IPv4 TTL or IPv6 hop limit */
	uint16_t ip_id;    /**< IPv4 identification */
	bool ip_df;        /**< IPv4 don't fragment */
	uint32_t ip_flow_label; /**< IPv6, 20 bits */
	uint8_t ip_src[16];
	uint8_t ip_dst[16];

	/* UDP: checksum 0 (rxe), or computed when set. A received non-zero checksum has been
	 * verified by the parser. */
	uint16_t udp_sport;
	bool udp_csum;

	/* IB transport. uroce_wire_parse() zeroes from deth to the end of the struct and
	 * writes every field before it: a field only some packets carry goes below. */
	struct uroce_bth bth;
	struct uroce_deth deth;
	uint32_t xrc_srqn;    /**< XRCETH: the XRC SRQ the request is for, 24 bits */
	uint8_t xrc_resv;     /**< XRCETH's reserved first byte, kept as it came */
	struct uroce_reth reth;
	struct uroce_atomiceth atomiceth;
	struct uroce_aeth aeth;
	uint64_t atomic_orig; /**< AtomicAckETH: original remote data */
	uint32_t imm;         /**< ImmDt, host order of the wire's big-endian value */
	uint32_t ieth_rkey;   /**< IETH: the rkey to invalidate */
	/** CNP: 16 reserved bytes, "ignored on receive" (A17.9.1), so kept as they came */
	uint8_t cnp_rsvd[UROCE_CNP_RSVD_LEN];
};

/** Fills @p h with rxe's defaults for a packet of @p opcode over IPv4 or IPv6. */
void uroce_wire_hdr_init(struct uroce_wire_hdr *h, uint8_t ip_version, uint8_t opcode);

/* ------------------------------------------------------------------------------------- */
/* Parsing                                                                                */

enum uroce_wire_err {
	UROCE_WIRE_OK = 0,
	UROCE_WIRE_E_ETH_TRUNC,      /**< shorter than an Ethernet (+VLAN) header */
	UROCE_WIRE_E_ETHERTYPE,      /**< neither IPv4 nor IPv6 (after at most one VLAN tag) */
	UROCE_WIRE_E_IP_TRUNC,       /**< shorter than the IP header */
	UROCE_WIRE_E_IP_VERSION,     /**< IP version does not match the ethertype */
	UROCE_WIRE_E_IP_HDR_LEN,     /**< IPv4 IHL < 5 */
	UROCE_WIRE_E_IP_OPTIONS,     /**< IPv4 options (IHL > 5): not used by RoCEv2 */
	UROCE_WIRE_E_IP_TOTAL_LEN,   /**< IP total/payload length disagrees with the frame */
	UROCE_WIRE_E_IP_FRAGMENT,    /**< IPv4 MF set or fragment offset != 0 */
	UROCE_WIRE_E_IP_CSUM,        /**< IPv4 header checksum wrong */
	UROCE_WIRE_E_IP_PROTO,       /**< not UDP (IPv6: extension headers included) */
	UROCE_WIRE_E_UDP_TRUNC,      /**< no room for the UDP header */
	UROCE_WIRE_E_UDP_LEN,        /**< UDP length != IP payload length */
	UROCE_WIRE_E_UDP_PORT,       /**< destination port is not 4791 */
	UROCE_WIRE_E_UDP_CSUM,       /**< non-zero UDP checksum that does not verify */
	UROCE_WIRE_E_BTH_TRUNC,      /**< no room for BTH + ICRC */
	UROCE_WIRE_E_BTH_TVER,       /**< transport header version != 0 */
	UROCE_WIRE_E_OPCODE,         /**< opcode unknown or unsupported (RD, reserved) */
	UROCE_WIRE_E_HDR_TRUNC,      /**< no room for the opcode's extension headers + ICRC */
	UROCE_WIRE_E_PAYLOAD,        /**< payload on an opcode that carries none */
	UROCE_WIRE_E_PAD,            /**< pad count > payload, payload + pad not 4-aligned, or
				      *   a non-zero pad byte */
	UROCE_WIRE_E_ICRC,           /**< ICRC mismatch (uroce_wire_icrc_check) */
	UROCE_WIRE_E__COUNT
};

/** Stable short name of an error, e.g. "ip_csum"; used for counters and messages. */
const char *uroce_wire_strerror(enum uroce_wire_err err);

/** A parsed packet: header fields plus where things are in the frame. */
struct uroce_wire_pkt {
	struct uroce_wire_hdr hdr;
	const uint8_t *frame;     /**< the frame as passed to the parser */
	const uint8_t *l3;        /**< IP header */
	const uint8_t *bth;       /**< start of the IB transport headers */
	const uint8_t *payload;   /**< payload, pad bytes excluded */
	uint32_t payload_len;     /**< bytes of payload, pad excluded */
	uint16_t l3_off;          /**< offset of the IP header in the frame */
	uint16_t bth_off;         /**< offset of the BTH in the frame */
	uint32_t pkt_len;         /**< bytes from the frame start to the end of the ICRC */
	uint32_t icrc;            /**< the ICRC as received (see uroce_wire_icrc_final) */
};

/**
 * Parses and validates one frame that starts with its Ethernet header.
 * @return UROCE_WIRE_OK and @p pkt filled, or the first validation that failed (then
 *         @p pkt holds what was decoded before it, and nothing past it is meaningful).
 */
enum uroce_wire_err uroce_wire_parse(const void *frame, uint32_t len,
				     struct uroce_wire_pkt *pkt);

/**
 * uroce_wire_parse() for a caller that has already checked the frame up to the UDP
 * header, so that no header is parsed twice (lib/ipstack, which the transport then takes
 * the result of): an Ethernet header with at most one 802.1Q tag, the IP header at
 * @p l3_off (14 or 18) with the checks uroce_wire_parse() makes on it, but for an IPv4
 * header's reserved flag bit, checked here (version 4 or 6, IPv4 header length 20 and
 * checksum, no fragment, no IPv6 extension header, protocol UDP, the datagram within the
 * frame). The caller's checks are not made again; the rest is, in the same order: the
 * same result as uroce_wire_parse() on such a frame (fuzz_ipstack_input checks it).
 */
enum uroce_wire_err uroce_wire_parse_checked_ip(const void *frame, uint32_t l3_off,
						struct uroce_wire_pkt *pkt);

/* ------------------------------------------------------------------------------------- */
/* Building                                                                               */

/** Bytes uroce_wire_build() writes for @p h and @p payload_len (0 if the opcode is
 *  unknown or carries no payload while @p payload_len > 0). The pad is added here. */
uint32_t uroce_wire_frame_len(const struct uroce_wire_hdr *h, uint32_t payload_len);

/**
 * Writes a whole frame: headers, payload, zero pad to 4 bytes, ICRC. bth.pad is set from
 * @p payload_len (the caller's value is ignored); IP and UDP lengths and the IPv4 header
 * checksum are computed. @return bytes written, or 0 if @p cap is too small or @p h names
 * an opcode that is unknown or cannot carry @p payload_len bytes.
 */
uint32_t uroce_wire_build(void *buf, uint32_t cap, const struct uroce_wire_hdr *h,
			  const void *payload, uint32_t payload_len);

/**
 * Writes only the headers (Ethernet up to the last extension header) for a packet whose
 * payload, pad and ICRC the caller appends (e.g. from another buffer segment). Lengths
 * are computed for @p payload_len. @return header bytes written, or 0 as above.
 */
uint32_t uroce_wire_build_hdrs(void *buf, uint32_t cap, const struct uroce_wire_hdr *h,
			       uint32_t payload_len);

/* ------------------------------------------------------------------------------------- */
/* ICRC (IBA vol 1 7.8.1; RoCEv2 Annex A17.3.3)                                            */
/*
 * CRC-32 with the Ethernet polynomial over: 8 bytes of 0xff standing for the masked LRH,
 * the IP header with its variant fields set to all ones (IPv4: TOS, TTL, header checksum;
 * IPv6: traffic class, flow label, hop limit), the UDP header with its checksum set to
 * all ones, the BTH with byte 4 (FECN, BECN, reserved) set to all ones, then the rest of
 * the packet up to the ICRC, pad included. Chaining: state = icrc_hdrs(...), then
 * icrc_update() over each payload segment, then icrc_final().
 */

/** CRC state after the masked pseudo-header and the transport headers. @p l3 points at
 *  the IP header (version 4 or 6); @p transport_hdr_len is BTH + extension headers. */
uint32_t uroce_wire_icrc_hdrs(const uint8_t *l3, uint8_t ip_version,
			      uint32_t transport_hdr_len);
/** Continues the CRC over @p len bytes. */
uint32_t uroce_wire_icrc_update(uint32_t state, const void *data, size_t len);
/** The ICRC value; its bytes go on the wire least significant first. */
static inline uint32_t uroce_wire_icrc_final(uint32_t state) { return state; }

/** Reads or writes the 4 ICRC bytes at @p p. */
uint32_t uroce_wire_icrc_load(const uint8_t *p);
void uroce_wire_icrc_store(uint8_t *p, uint32_t icrc);

/** ICRC of a packet that lies in one buffer: @p len bytes from the IP header up to the
 *  ICRC (headers, payload and pad). */
uint32_t uroce_wire_icrc_contig(const uint8_t *l3, uint8_t ip_version, uint32_t len);
/** ICRC of a parsed packet, computed from its bytes. */
uint32_t uroce_wire_icrc_compute(const struct uroce_wire_pkt *pkt);
/** UROCE_WIRE_OK if the received ICRC matches, else UROCE_WIRE_E_ICRC. */
enum uroce_wire_err uroce_wire_icrc_check(const struct uroce_wire_pkt *pkt);

/* ------------------------------------------------------------------------------------- */
/* AETH syndrome (IBA vol 1 9.7.5.2.1, table 44)                                          */

enum uroce_aeth_type {
	UROCE_AETH_ACK = 0,     /* 000: ACK, low 5 bits are the credit count */
	UROCE_AETH_RNR_NAK = 1, /* 001: RNR NAK, low 5 bits are the RNR timer code */
	UROCE_AETH_RESERVED = 2,
	UROCE_AETH_NAK = 3,     /* 011: NAK, low 5 bits are the NAK code */
};

enum uroce_nak_code {
	UROCE_NAK_PSN_SEQ_ERR = 0,
	UROCE_NAK_INVALID_REQ = 1,
	UROCE_NAK_REM_ACCESS_ERR = 2,
	UROCE_NAK_REM_OP_ERR = 3,
	UROCE_NAK_INVALID_RD_REQ = 4,
};

/** Credit count meaning "no end-to-end flow control credits advertised" (rxe sends it). */
#define UROCE_AETH_CREDIT_INVALID 0x1f

static inline uint8_t uroce_aeth_ack(uint8_t credits)
{
	return (uint8_t)((UROCE_AETH_ACK << 5) | (credits & 0x1f));
}
static inline uint8_t uroce_aeth_rnr_nak(uint8_t timer_code)
{
	return (uint8_t)((UROCE_AETH_RNR_NAK << 5) | (timer_code & 0x1f));
}
static inline uint8_t uroce_aeth_nak(enum uroce_nak_code code)
{
	return (uint8_t)((UROCE_AETH_NAK << 5) | ((unsigned)code & 0x1f));
}
/** Bit 7 of the syndrome is reserved; bits 6..5 give the type. */
static inline enum uroce_aeth_type uroce_aeth_type(uint8_t syndrome)
{
	return (enum uroce_aeth_type)((syndrome >> 5) & 0x3);
}
static inline uint8_t uroce_aeth_value(uint8_t syndrome) { return syndrome & 0x1f; }

/** RNR NAK timer code (IBA table 45) to nanoseconds; code 0 is the longest, 655.36 ms. */
uint64_t uroce_rnr_timer_ns(uint8_t timer_code);

/* ------------------------------------------------------------------------------------- */
/* PSN arithmetic: 24-bit sequence numbers that wrap (IBA 9.7.1)                           */

#define UROCE_PSN_MASK 0xffffffu

static inline uint32_t uroce_psn_add(uint32_t psn, int32_t n)
{
	return (psn + (uint32_t)n) & UROCE_PSN_MASK;
}

/** a - b in [-2^23, 2^23): positive when a is after b in the circular space. */
static inline int32_t uroce_psn_diff(uint32_t a, uint32_t b)
{
	/* Shift the 24-bit difference into the top of a 32-bit word so that the sign bit is
	 * bit 23 of the difference, then arithmetic-shift back. */
	return (int32_t)((a - b) << 8) >> 8;
}

static inline bool uroce_psn_before(uint32_t a, uint32_t b) { return uroce_psn_diff(a, b) < 0; }
static inline bool uroce_psn_after(uint32_t a, uint32_t b) { return uroce_psn_diff(a, b) > 0; }

/* ------------------------------------------------------------------------------------- */
/* Any Ethernet frame (frames.c): where its layers are, and its IP checksums. What raw     */
/* packet QPs send and receive, and what their flow rules match.                          */

/** The layers of a frame, as far as they are Ethernet (one optional 802.1Q tag), IPv4 or
 *  IPv6 (no extension headers are followed) and TCP or UDP. */
struct uroce_wire_layers {
	uint16_t ether_type; /**< after the tag, if there is one */
	uint16_t vlan_tci;   /**< the tag's PCP, DEI and VID; 0 untagged */
	uint8_t ip_version;  /**< 4 or 6: a whole IP header at l3_off; 0: not IP */
	uint8_t proto;       /**< IPv4 protocol, IPv6 next header */
	uint8_t tos;         /**< IPv4 TOS, IPv6 traffic class */
	uint8_t ttl;         /**< IPv4 TTL, IPv6 hop limit */
	uint32_t flow_label; /**< IPv6 */
	uint16_t l3_off;
	/** TCP (6) or UDP (17) header whole at l4_off, in an unfragmented datagram or its
	 *  first fragment. */
	bool l4;
	uint16_t l4_off;
	uint32_t l4_len;     /**< bytes from l4_off to the end of the IP datagram (or of the
			      *   frame, when truncated) */
	bool fragment;       /**< IPv4 MF set or offset non-zero */
	/** The IP length says more than the frame holds: the headers are read (a NIC's flow
	 *  steering matches them), but there is no whole datagram to checksum. */
	bool truncated;
};

/** Reads @p frame's layers into @p out; never reads outside [frame, frame + len). A frame
 *  shorter than an Ethernet header has ether_type 0. */
void uroce_wire_layers(const uint8_t *frame, uint32_t len, struct uroce_wire_layers *out);
/** Writes an IPv4 frame's header checksum and, in an unfragmented TCP segment or UDP
 *  datagram over IPv4 or IPv6, the TCP or UDP checksum (a UDP checksum of 0 is sent as
 *  0xffff): what a NIC's checksum offload does (verbs' IBV_SEND_IP_CSUM). Other frames
 *  are left as they are. */
void uroce_wire_csum_fill(uint8_t *frame, uint32_t len);
/** True when @p frame is IPv4 or IPv6, its IPv4 header checksum verifies, and it is an
 *  unfragmented TCP segment or UDP datagram whose checksum verifies (a UDP checksum of 0
 *  over IPv4: none to verify): verbs' IBV_WC_IP_CSUM_OK. */
bool uroce_wire_csum_ok(const uint8_t *frame, uint32_t len);

/* ------------------------------------------------------------------------------------- */
/* UDP source port, as rxe and rdma-core choose it (gives RSS/ECMP entropy per QP)          */

/** Connected QPs (RC, UC): from the flow label, or one derived from both QPNs when the
 *  flow label is 0, so both directions of a connection use the same port
 *  (rdma_get_udp_sport in rdma-core and Linux). */
uint16_t uroce_udp_sport_connected(uint32_t flow_label, uint32_t lqpn, uint32_t rqpn);
/** Unconnected QPs (UD, and before a connection is known): a hash of the local QPN
 *  (Linux rxe, hash_32 of the QPN into 14 bits above 0xc000). */
uint16_t uroce_udp_sport_qpn(uint32_t qpn);

#ifdef __cplusplus
}
#endif

#endif /* UROCE_WIRE_H */
