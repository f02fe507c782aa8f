/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CM's MADs on the wire: the common MAD header (IBA vol 1 13.4.2) and the CM
 * attributes (IBA vol 1 12.6). Everything is big-endian, fields are placed by byte offset
 * in the attribute and by bit from the most significant end of that byte, as the spec's
 * tables (and Linux's ibta_vol1_c12.h, and Wireshark) lay them out.
 */
#include <strings.h>

#include "cm_msg.h"

/* One row per attribute: the CM attributes of class 0x07 and their IDs. */
static const struct cm_attr_info cm_attrs[] = {
	{UROCE_CM_ATTR_CLASS_PORT_INFO, "ClassPortInfo", 0, 0, 0, 0},
	{UROCE_CM_ATTR_REQ, "REQ", 140, 140, 92, 1},
	{UROCE_CM_ATTR_MRA, "MRA", 10, 10, 222, 1},
	{UROCE_CM_ATTR_REJ, "REJ", 84, 84, 148, 1},
	{UROCE_CM_ATTR_REP, "REP", 36, 36, 196, 1},
	{UROCE_CM_ATTR_RTU, "RTU", 8, 8, 224, 1},
	{UROCE_CM_ATTR_DREQ, "DREQ", 12, 12, 220, 1},
	{UROCE_CM_ATTR_DREP, "DREP", 8, 8, 224, 1},
	{UROCE_CM_ATTR_SIDR_REQ, "SIDR_REQ", 16, 16, 216, 1},
	{UROCE_CM_ATTR_SIDR_REP, "SIDR_REP", 96, 96, 136, 1},
	{UROCE_CM_ATTR_LAP, "LAP", 64, 64, 168, 0},
	{UROCE_CM_ATTR_APR, "APR", 84, 84, 148, 0},
};

const struct cm_attr_info *cm_attr_info(uint16_t attr_id)
{
	for (size_t i = 0; i < sizeof(cm_attrs) / sizeof(cm_attrs[0]); i++)
		if (cm_attrs[i].attr_id == attr_id)
			return &cm_attrs[i];
	return NULL;
}

const char *uroce_cm_attr_name(uint16_t attr_id)
{
	const struct cm_attr_info *ai = cm_attr_info(attr_id);

	return ai ? ai->name : NULL;
}

uint16_t uroce_cm_attr_from_name(const char *name)
{
	for (size_t i = 0; i < sizeof(cm_attrs) / sizeof(cm_attrs[0]); i++)
		if (strcasecmp(cm_attrs[i].name, name) == 0)
			return cm_attrs[i].attr_id;
	return 0;
}

bool uroce_cm_attr_handled(uint16_t attr_id)
{
	const struct cm_attr_info *ai = cm_attr_info(attr_id);

	return ai && ai->handled;
}

/* ---- byte and bit access ---------------------------------------------------------- */

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t rd24(const uint8_t *p) { return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2]; }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)rd16(p) << 16 | rd16(p + 2); }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) << 32 | rd32(p + 4); }

static void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void wr24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}
static void wr32(uint8_t *p, uint32_t v) { wr16(p, (uint16_t)(v >> 16)); wr16(p + 2, (uint16_t)v); }
static void wr64(uint8_t *p, uint64_t v) { wr32(p, (uint32_t)(v >> 32)); wr32(p + 4, (uint32_t)v); }

/* @p width bits of byte @p b starting @p bit bits from its most significant end. */
static uint8_t rdbits(uint8_t b, unsigned bit, unsigned width)
{
	return (uint8_t)((b >> (8 - bit - width)) & ((1u << width) - 1));
}
static uint8_t bits(uint8_t v, unsigned bit, unsigned width)
{
	return (uint8_t)((v & ((1u << width) - 1)) << (8 - bit - width));
}

/* ---- REQ's paths (bytes 52-95 primary, 96-139 alternate) ---------------------------- */

static void path_decode(const uint8_t *p, struct cm_req_path *path)
{
	path->local_lid = rd16(p);
	path->remote_lid = rd16(p + 2);
	memcpy(path->local_gid, p + 4, 16);
	memcpy(path->remote_gid, p + 20, 16);
	/* 20 bits of flow label, 6 reserved, 6 of packet rate */
	path->flow_label = rd32(p + 36) >> 12;
	path->packet_rate = rdbits(p[39], 2, 6);
	path->traffic_class = p[40];
	path->hop_limit = p[41];
	path->sl = rdbits(p[42], 0, 4);
	path->subnet_local = rdbits(p[42], 4, 1);
	path->local_ack_timeout = rdbits(p[43], 0, 5);
}

static void path_encode(uint8_t *p, const struct cm_req_path *path)
{
	wr16(p, path->local_lid);
	wr16(p + 2, path->remote_lid);
	memcpy(p + 4, path->local_gid, 16);
	memcpy(p + 20, path->remote_gid, 16);
	wr32(p + 36, (path->flow_label & 0xfffff) << 12);
	p[39] |= bits(path->packet_rate, 2, 6);
	p[40] = path->traffic_class;
	p[41] = path->hop_limit;
	p[42] = bits(path->sl, 0, 4) | bits(path->subnet_local, 4, 1);
	p[43] = bits(path->local_ack_timeout, 0, 5);
}

/* ---- per attribute (IBA 12.6.5-12.6.11, 12.11) --------------------------------------- */

static void req_decode(const uint8_t *a, struct cm_req *r)
{
	r->local_comm_id = rd32(a);
	r->vendor_id = rd24(a + 5);
	r->service_id = rd64(a + 8);
	r->local_ca_guid = rd64(a + 16);
	r->local_qkey = rd32(a + 28);
	r->local_qpn = rd24(a + 32);
	r->responder_resources = a[35];
	r->local_eecn = rd24(a + 36);
	r->initiator_depth = a[39];
	r->remote_eecn = rd24(a + 40);
	r->remote_cm_response_timeout = rdbits(a[43], 0, 5);
	r->transport_service_type = rdbits(a[43], 5, 2);
	r->flow_control = rdbits(a[43], 7, 1);
	r->starting_psn = rd24(a + 44);
	r->local_cm_response_timeout = rdbits(a[47], 0, 5);
	r->retry_count = rdbits(a[47], 5, 3);
	r->pkey = rd16(a + 48);
	r->path_mtu = rdbits(a[50], 0, 4);
	r->rdc_exists = rdbits(a[50], 4, 1);
	r->rnr_retry_count = rdbits(a[50], 5, 3);
	r->max_cm_retries = rdbits(a[51], 0, 4);
	r->srq = rdbits(a[51], 4, 1);
	r->extended_transport_type = rdbits(a[51], 5, 3);
	path_decode(a + 52, &r->primary);
	path_decode(a + 96, &r->alternate);
	r->sap_supported = rdbits(a[139], 5, 1);
}

static void req_encode(uint8_t *a, const struct cm_req *r)
{
	wr32(a, r->local_comm_id);
	wr24(a + 5, r->vendor_id);
	wr64(a + 8, r->service_id);
	wr64(a + 16, r->local_ca_guid);
	wr32(a + 28, r->local_qkey);
	wr24(a + 32, r->local_qpn);
	a[35] = r->responder_resources;
	wr24(a + 36, r->local_eecn);
	a[39] = r->initiator_depth;
	wr24(a + 40, r->remote_eecn);
	a[43] = bits(r->remote_cm_response_timeout, 0, 5) | bits(r->transport_service_type, 5, 2) |
		bits(r->flow_control, 7, 1);
	wr24(a + 44, r->starting_psn);
	a[47] = bits(r->local_cm_response_timeout, 0, 5) | bits(r->retry_count, 5, 3);
	wr16(a + 48, r->pkey);
	a[50] = bits(r->path_mtu, 0, 4) | bits(r->rdc_exists, 4, 1) |
		bits(r->rnr_retry_count, 5, 3);
	a[51] = bits(r->max_cm_retries, 0, 4) | bits(r->srq, 4, 1) |
		bits(r->extended_transport_type, 5, 3);
	path_encode(a + 52, &r->primary);
	path_encode(a + 96, &r->alternate);
	a[139] |= bits(r->sap_supported, 5, 1);
}

static void rep_decode(const uint8_t *a, struct cm_rep *r)
{
	r->local_comm_id = rd32(a);
	r->remote_comm_id = rd32(a + 4);
	r->local_qkey = rd32(a + 8);
	r->local_qpn = rd24(a + 12);
	r->local_eecn = rd24(a + 16);
	r->starting_psn = rd24(a + 20);
	r->vendor_id = (uint32_t)a[15] << 16 | (uint32_t)a[19] << 8 | a[23];
	r->responder_resources = a[24];
	r->initiator_depth = a[25];
	r->target_ack_delay = rdbits(a[26], 0, 5);
	r->failover_accepted = rdbits(a[26], 5, 2);
	r->flow_control = rdbits(a[26], 7, 1);
	r->rnr_retry_count = rdbits(a[27], 0, 3);
	r->srq = rdbits(a[27], 3, 1);
	r->local_ca_guid = rd64(a + 28);
}

static void rep_encode(uint8_t *a, const struct cm_rep *r)
{
	wr32(a, r->local_comm_id);
	wr32(a + 4, r->remote_comm_id);
	wr32(a + 8, r->local_qkey);
	wr24(a + 12, r->local_qpn);
	a[15] = (uint8_t)(r->vendor_id >> 16);
	wr24(a + 16, r->local_eecn);
	a[19] = (uint8_t)(r->vendor_id >> 8);
	wr24(a + 20, r->starting_psn);
	a[23] = (uint8_t)r->vendor_id;
	a[24] = r->responder_resources;
	a[25] = r->initiator_depth;
	a[26] = bits(r->target_ack_delay, 0, 5) | bits(r->failover_accepted, 5, 2) |
		bits(r->flow_control, 7, 1);
	a[27] = bits(r->rnr_retry_count, 0, 3) | bits(r->srq, 3, 1);
	wr64(a + 28, r->local_ca_guid);
}

static void sidr_rep_decode(const uint8_t *a, struct cm_sidr_rep *r)
{
	r->request_id = rd32(a);
	r->status = a[4];
	r->add_info_len = a[5];
	r->vendor_id = (uint32_t)rd16(a + 6) << 8 | a[11];
	r->qpn = rd24(a + 8);
	r->service_id = rd64(a + 12);
	r->qkey = rd32(a + 20);
	memcpy(r->add_info, a + 24, CM_ARI_MAX);
}

static void sidr_rep_encode(uint8_t *a, const struct cm_sidr_rep *r)
{
	wr32(a, r->request_id);
	a[4] = r->status;
	a[5] = r->add_info_len;
	wr16(a + 6, (uint16_t)(r->vendor_id >> 8));
	wr24(a + 8, r->qpn);
	a[11] = (uint8_t)r->vendor_id;
	wr64(a + 12, r->service_id);
	wr32(a + 20, r->qkey);
	memcpy(a + 24, r->add_info, CM_ARI_MAX);
}

/* ---- the MAD --------------------------------------------------------------------- */

void cm_msg_init(struct cm_msg *m, uint16_t attr_id, uint64_t tid)
{
	memset(m, 0, sizeof(*m));
	m->hdr.base_version = CM_BASE_VERSION;
	m->hdr.mgmt_class = CM_MGMT_CLASS;
	m->hdr.class_version = CM_CLASS_VERSION;
	m->hdr.method = CM_METHOD_SEND;
	m->hdr.tid = tid;
	m->hdr.attr_id = attr_id;
}

enum cm_decode_result cm_msg_decode(const uint8_t *mad, uint32_t len, struct cm_msg *m)
{
	memset(m, 0, sizeof(*m));
	if (!mad || len < CM_MAD_HDR_LEN || len > UROCE_CM_MAD_LEN)
		return CM_DECODE_MALFORMED;
	m->hdr.base_version = mad[0];
	m->hdr.mgmt_class = mad[1];
	m->hdr.class_version = mad[2];
	m->hdr.method = mad[3];
	m->hdr.status = rd16(mad + 4);
	m->hdr.class_specific = rd16(mad + 6);
	m->hdr.tid = rd64(mad + 8);
	m->hdr.attr_id = rd16(mad + 16);
	m->hdr.reserved = rd16(mad + 18);
	m->hdr.attr_mod = rd32(mad + 20);
	/* IBA 13.4.2: base version 1; the CM class (0x07) at class version 2 (IBA 16.7; ib_cm's
	 * IB_CM_CLASS_VERSION); every CM message is a Send: the CM uses no other method. */
	if (m->hdr.base_version != CM_BASE_VERSION || m->hdr.mgmt_class != CM_MGMT_CLASS ||
	    m->hdr.class_version != CM_CLASS_VERSION || m->hdr.method != CM_METHOD_SEND)
		return CM_DECODE_MALFORMED;
	const struct cm_attr_info *ai = cm_attr_info(m->hdr.attr_id);
	if (!ai)
		return CM_DECODE_UNKNOWN_ATTR;
	if (len < CM_MAD_HDR_LEN + (uint32_t)ai->min_len)
		return CM_DECODE_MALFORMED;
	if (!ai->handled)
		return CM_DECODE_UNHANDLED;

	/* A full-size copy so a short MAD reads as zero-padded. */
	uint8_t a[CM_DATA_LEN];
	memset(a, 0, sizeof(a));
	memcpy(a, mad + CM_MAD_HDR_LEN, len - CM_MAD_HDR_LEN);
	memcpy(m->private_data, a + ai->pd_off, ai->pd_len);

	switch (m->hdr.attr_id) {
	case UROCE_CM_ATTR_REQ:
		req_decode(a, &m->u.req);
		break;
	case UROCE_CM_ATTR_MRA:
		m->u.mra.local_comm_id = rd32(a);
		m->u.mra.remote_comm_id = rd32(a + 4);
		m->u.mra.message_mraed = rdbits(a[8], 0, 2);
		m->u.mra.service_timeout = rdbits(a[9], 0, 5);
		break;
	case UROCE_CM_ATTR_REJ:
		m->u.rej.local_comm_id = rd32(a);
		m->u.rej.remote_comm_id = rd32(a + 4);
		m->u.rej.message_rejected = rdbits(a[8], 0, 2);
		m->u.rej.ari_len = rdbits(a[9], 0, 7);
		m->u.rej.reason = rd16(a + 10);
		memcpy(m->u.rej.ari, a + 12, CM_ARI_MAX);
		break;
	case UROCE_CM_ATTR_REP:
		rep_decode(a, &m->u.rep);
		break;
	case UROCE_CM_ATTR_RTU:
		m->u.rtu.local_comm_id = rd32(a);
		m->u.rtu.remote_comm_id = rd32(a + 4);
		break;
	case UROCE_CM_ATTR_DREQ:
		m->u.dreq.local_comm_id = rd32(a);
		m->u.dreq.remote_comm_id = rd32(a + 4);
		m->u.dreq.remote_qpn = rd24(a + 8);
		break;
	case UROCE_CM_ATTR_DREP:
		m->u.drep.local_comm_id = rd32(a);
		m->u.drep.remote_comm_id = rd32(a + 4);
		break;
	case UROCE_CM_ATTR_SIDR_REQ:
		m->u.sidr_req.request_id = rd32(a);
		m->u.sidr_req.pkey = rd16(a + 4);
		m->u.sidr_req.service_id = rd64(a + 8);
		break;
	case UROCE_CM_ATTR_SIDR_REP:
		sidr_rep_decode(a, &m->u.sidr_rep);
		break;
	default:
		return CM_DECODE_UNHANDLED;
	}
	return CM_DECODE_OK;
}

void cm_msg_encode(const struct cm_msg *m, uint8_t mad[UROCE_CM_MAD_LEN])
{
	memset(mad, 0, UROCE_CM_MAD_LEN);
	mad[0] = m->hdr.base_version;
	mad[1] = m->hdr.mgmt_class;
	mad[2] = m->hdr.class_version;
	mad[3] = m->hdr.method;
	wr16(mad + 4, m->hdr.status);
	wr16(mad + 6, m->hdr.class_specific);
	wr64(mad + 8, m->hdr.tid);
	wr16(mad + 16, m->hdr.attr_id);
	wr16(mad + 18, m->hdr.reserved);
	wr32(mad + 20, m->hdr.attr_mod);

	uint8_t *a = mad + CM_MAD_HDR_LEN;
	switch (m->hdr.attr_id) {
	case UROCE_CM_ATTR_REQ:
		req_encode(a, &m->u.req);
		break;
	case UROCE_CM_ATTR_MRA:
		wr32(a, m->u.mra.local_comm_id);
		wr32(a + 4, m->u.mra.remote_comm_id);
		a[8] = bits(m->u.mra.message_mraed, 0, 2);
		a[9] = bits(m->u.mra.service_timeout, 0, 5);
		break;
	case UROCE_CM_ATTR_REJ:
		wr32(a, m->u.rej.local_comm_id);
		wr32(a + 4, m->u.rej.remote_comm_id);
		a[8] = bits(m->u.rej.message_rejected, 0, 2);
		a[9] = bits(m->u.rej.ari_len, 0, 7);
		wr16(a + 10, m->u.rej.reason);
		memcpy(a + 12, m->u.rej.ari, CM_ARI_MAX);
		break;
	case UROCE_CM_ATTR_REP:
		rep_encode(a, &m->u.rep);
		break;
	case UROCE_CM_ATTR_RTU:
		wr32(a, m->u.rtu.local_comm_id);
		wr32(a + 4, m->u.rtu.remote_comm_id);
		break;
	case UROCE_CM_ATTR_DREQ:
		wr32(a, m->u.dreq.local_comm_id);
		wr32(a + 4, m->u.dreq.remote_comm_id);
		wr24(a + 8, m->u.dreq.remote_qpn);
		break;
	case UROCE_CM_ATTR_DREP:
		wr32(a, m->u.drep.local_comm_id);
		wr32(a + 4, m->u.drep.remote_comm_id);
		break;
	case UROCE_CM_ATTR_SIDR_REQ:
		wr32(a, m->u.sidr_req.request_id);
		wr16(a + 4, m->u.sidr_req.pkey);
		wr64(a + 8, m->u.sidr_req.service_id);
		break;
	case UROCE_CM_ATTR_SIDR_REP:
		sidr_rep_encode(a, &m->u.sidr_rep);
		break;
	default:
		return;
	}
	const struct cm_attr_info *ai = cm_attr_info(m->hdr.attr_id);
	if (ai)
		memcpy(a + ai->pd_off, m->private_data, ai->pd_len);
}
