/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_CM_MSG_H
#define UROCE_CM_MSG_H

/*
 * CM MADs as values: the common MAD header (IBA vol 1 13.4.2) and every CM attribute
 * (IBA vol 1 12.6, tables 106-120), decoded into host-order fields and encoded back bit
 * for bit. Field offsets are relative to the start of the attribute (MAD byte 24), as
 * the spec's tables give them; reserved bits are written as zero.
 */

#include <stdint.h>
#include <string.h>

#include "uroce_cm.h"

#define CM_MAD_HDR_LEN 24
#define CM_DATA_LEN (UROCE_CM_MAD_LEN - CM_MAD_HDR_LEN) /* 232 */

#define CM_BASE_VERSION 1
#define CM_MGMT_CLASS 0x07
#define CM_CLASS_VERSION 2
#define CM_METHOD_SEND 0x03

/* "Message (MRAed / rejected)" codes, IBA 12.6.6 / 12.6.7. */
enum cm_msg_response {
	CM_MSG_RESPONSE_REQ = 0,
	CM_MSG_RESPONSE_REP = 1,
	CM_MSG_RESPONSE_OTHER = 2
};

/* REJ reasons used here (IBA 12.6.7.2, table 109; Linux's enum ib_cm_rej_reason). */
enum cm_rej_reason {
	CM_REJ_TIMEOUT = 4,
	CM_REJ_INVALID_COMM_ID = 6,
	CM_REJ_INVALID_SERVICE_ID = 8,
	CM_REJ_STALE_CONN = 10,
	CM_REJ_INVALID_GID = 12,
	CM_REJ_CONSUMER_DEFINED = 28,
};

/* SIDR_REP status (IBA 12.11.2, table 120). */
enum cm_sidr_status {
	CM_SIDR_SUCCESS = 0,
	CM_SIDR_UNSUPPORTED = 1,
	CM_SIDR_REJECT = 2,
	CM_SIDR_NO_QP = 3,
	CM_SIDR_REDIRECT = 4,
	CM_SIDR_UNSUPPORTED_VERSION = 5,
};

struct cm_mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;
	uint16_t attr_id;
	uint16_t reserved;
	uint32_t attr_mod;
};

/* A path as REQ carries it (primary and alternate, IBA 12.6.5 table 106). */
struct cm_req_path {
	uint16_t local_lid;
	uint16_t remote_lid;
	uint8_t local_gid[16];
	uint8_t remote_gid[16];
	uint32_t flow_label; /* 20 bits */
	uint8_t packet_rate; /* 6 bits */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;          /* 4 bits */
	uint8_t subnet_local;
	uint8_t local_ack_timeout; /* 5 bits */
};

struct cm_req {
	uint32_t local_comm_id;
	uint32_t vendor_id; /* 24 bits */
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn; /* 24 bits */
	uint8_t responder_resources;
	uint32_t local_eecn;
	uint8_t initiator_depth;
	uint32_t remote_eecn;
	uint8_t remote_cm_response_timeout; /* 5 bits */
	uint8_t transport_service_type;     /* 2 bits: 0 RC, 1 UC, 2 RD */
	uint8_t flow_control;
	uint32_t starting_psn;
	uint8_t local_cm_response_timeout;
	uint8_t retry_count;
	uint16_t pkey;
	uint8_t path_mtu;
	uint8_t rdc_exists;
	uint8_t rnr_retry_count;
	uint8_t max_cm_retries;
	uint8_t srq;
	uint8_t extended_transport_type;
	struct cm_req_path primary;
	struct cm_req_path alternate;
	uint8_t sap_supported;
};

struct cm_mra {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_mraed;   /* enum cm_msg_response */
	uint8_t service_timeout; /* 5 bits */
};

#define CM_ARI_MAX 72

struct cm_rej {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_rejected; /* enum cm_msg_response */
	uint8_t ari_len;          /* 7 bits */
	uint16_t reason;
	uint8_t ari[CM_ARI_MAX];
};

struct cm_rep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;
	uint32_t local_eecn;
	uint32_t starting_psn;
	uint32_t vendor_id; /* 24 bits, split H/M/L over bytes 15, 19, 23 */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;
	uint8_t failover_accepted;
	uint8_t flow_control;
	uint8_t rnr_retry_count;
	uint8_t srq;
	uint64_t local_ca_guid;
};

struct cm_rtu {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
};

struct cm_dreq {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t remote_qpn; /* 24 bits: the receiver's QPN */
};

struct cm_drep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
};

struct cm_sidr_req {
	uint32_t request_id;
	uint16_t pkey;
	uint64_t service_id;
};

struct cm_sidr_rep {
	uint32_t request_id;
	uint8_t status;
	uint8_t add_info_len;
	uint32_t vendor_id; /* 24 bits, H (16) at 6, L (8) at 11 */
	uint32_t qpn;
	uint64_t service_id;
	uint32_t qkey;
	uint8_t add_info[CM_ARI_MAX];
};

struct cm_msg {
	struct cm_mad_hdr hdr;
	union {
		struct cm_req req;
		struct cm_mra mra;
		struct cm_rej rej;
		struct cm_rep rep;
		struct cm_rtu rtu;
		struct cm_dreq dreq;
		struct cm_drep drep;
		struct cm_sidr_req sidr_req;
		struct cm_sidr_rep sidr_rep;
	} u;
	/* This attribute's private data, all of it (cm_attr_info()->pd_len bytes). */
	uint8_t private_data[UROCE_CM_PRIVATE_DATA_MAX];
};

/* Per attribute: what it is, the bytes before its private data (also the least a MAD
 * must hold to be decoded), and its private data's size. */
struct cm_attr_info {
	uint16_t attr_id;
	const char *name;
	uint16_t min_len; /* attribute bytes up to the private data */
	uint16_t pd_off;  /* private data offset in the attribute */
	uint16_t pd_len;  /* private data bytes */
	uint8_t handled;  /* 0: recognised, dropped (LAP, APR, ClassPortInfo) */
};

const struct cm_attr_info *cm_attr_info(uint16_t attr_id);

enum cm_decode_result {
	CM_DECODE_OK = 0,
	CM_DECODE_MALFORMED,    /* length, base/class version, class, method */
	CM_DECODE_UNKNOWN_ATTR, /* not a CM attribute */
	CM_DECODE_UNHANDLED,    /* LAP, APR, ClassPortInfo: known, not handled */
};

/* Decodes @p len bytes (a MAD: 24 + the attribute's min_len .. 256). Private data past
 * @p len reads as zeros. */
enum cm_decode_result cm_msg_decode(const uint8_t *mad, uint32_t len, struct cm_msg *m);

/* Writes the whole 256-byte MAD: header (m->hdr.attr_id says which attribute), fields,
 * private data; everything else zero. */
void cm_msg_encode(const struct cm_msg *m, uint8_t mad[UROCE_CM_MAD_LEN]);

/* Fills a Send header for @p attr_id (IBA 13.4.2 / 16.7.1: CM class 0x07, version 2). */
void cm_msg_init(struct cm_msg *m, uint16_t attr_id, uint64_t tid);

#endif /* UROCE_CM_MSG_H */
