/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/cm's codec on rxe's own CM MADs (Linux 6.1 ib_cm + rdma_cm, in the captures of
 * test/data/rxe-captures): every field decoded as tshark 4.0 decodes it
 * (`tshark -r FILE -V`; the expected values below were read from its output), and every
 * MAD encoded back to the same 256 bytes.
 */
#include "cm_test.h"

static void roundtrip(const struct captured_mad *c)
{
	struct cm_msg m;
	cr_assert_eq(cm_msg_decode(c->mad, UROCE_CM_MAD_LEN, &m), CM_DECODE_OK);
	uint8_t out[UROCE_CM_MAD_LEN];
	cm_msg_encode(&m, out);
	cr_assert_arr_eq(out, c->mad, UROCE_CM_MAD_LEN, "attr 0x%x does not re-encode",
			 m.hdr.attr_id);
}

static const uint8_t gid_0_2[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 198, 18, 0, 2};
static const uint8_t gid_0_1[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 198, 18, 0, 1};

Test(cm_mad, table)
{
	static const struct { uint16_t a; uint16_t pd_off, pd_len; } want[] = {
		{UROCE_CM_ATTR_REQ, 140, 92},      {UROCE_CM_ATTR_MRA, 10, 222},
		{UROCE_CM_ATTR_REJ, 84, 148},      {UROCE_CM_ATTR_REP, 36, 196},
		{UROCE_CM_ATTR_RTU, 8, 224},       {UROCE_CM_ATTR_DREQ, 12, 220},
		{UROCE_CM_ATTR_DREP, 8, 224},      {UROCE_CM_ATTR_SIDR_REQ, 16, 216},
		{UROCE_CM_ATTR_SIDR_REP, 96, 136},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct cm_attr_info *ai = cm_attr_info(want[i].a);
		cr_assert_not_null(ai);
		cr_assert(ai->handled);
		cr_assert_eq(ai->pd_off, want[i].pd_off);
		cr_assert_eq(ai->pd_len, want[i].pd_len);
		cr_assert_eq(ai->pd_off + ai->pd_len, 232, "%s fills the MAD", ai->name);
	}
	cr_assert_not(cm_attr_info(UROCE_CM_ATTR_LAP)->handled);
	cr_assert_not(cm_attr_info(UROCE_CM_ATTR_APR)->handled);
	cr_assert_not(cm_attr_info(UROCE_CM_ATTR_CLASS_PORT_INFO)->handled);
	cr_assert_null(cm_attr_info(0x0020));
}

Test(cm_mad, attribute_names)
{
	/* What uroce cm-drop takes: the handled attributes, by name, case ignored. */
	static const struct { uint16_t a; const char *name; } handled[] = {
		{UROCE_CM_ATTR_REQ, "REQ"},   {UROCE_CM_ATTR_MRA, "MRA"},
		{UROCE_CM_ATTR_REJ, "REJ"},   {UROCE_CM_ATTR_REP, "REP"},
		{UROCE_CM_ATTR_RTU, "RTU"},   {UROCE_CM_ATTR_DREQ, "DREQ"},
		{UROCE_CM_ATTR_DREP, "DREP"}, {UROCE_CM_ATTR_SIDR_REQ, "SIDR_REQ"},
		{UROCE_CM_ATTR_SIDR_REP, "SIDR_REP"},
	};
	for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++) {
		cr_assert_str_eq(uroce_cm_attr_name(handled[i].a), handled[i].name);
		cr_assert_eq(uroce_cm_attr_from_name(handled[i].name), handled[i].a);
		cr_assert(uroce_cm_attr_handled(handled[i].a));
	}
	cr_assert_eq(uroce_cm_attr_from_name("sidr_rep"), UROCE_CM_ATTR_SIDR_REP);
	cr_assert_eq(uroce_cm_attr_from_name("Dreq"), UROCE_CM_ATTR_DREQ);
	/* Known but not handled, and unknown. */
	cr_assert_str_eq(uroce_cm_attr_name(UROCE_CM_ATTR_LAP), "LAP");
	cr_assert_eq(uroce_cm_attr_from_name("APR"), UROCE_CM_ATTR_APR);
	cr_assert_not(uroce_cm_attr_handled(UROCE_CM_ATTR_APR));
	cr_assert_not(uroce_cm_attr_handled(UROCE_CM_ATTR_CLASS_PORT_INFO));
	cr_assert_null(uroce_cm_attr_name(0x0020));
	cr_assert_eq(uroce_cm_attr_from_name("RE"), 0);
	cr_assert_eq(uroce_cm_attr_from_name(""), 0);
	cr_assert_not(uroce_cm_attr_handled(0));
}

Test(cm_mad, rping_exchange)
{
	struct captured_mad c[8];
	int n = load_cm_mads("rdma_cm_rping.pcap", c, 8);
	cr_assert_eq(n, 5, "REQ REP RTU DREQ DREP");
	struct cm_msg m;

	/* frame 1, CM ConnectRequest (tshark) */
	cr_assert_eq(cm_msg_decode(c[0].mad, 256, &m), CM_DECODE_OK);
	cr_assert_eq(m.hdr.base_version, 1);
	cr_assert_eq(m.hdr.mgmt_class, 0x07);
	cr_assert_eq(m.hdr.class_version, 2);
	cr_assert_eq(m.hdr.method, 0x03);
	cr_assert_eq(m.hdr.status, 0);
	cr_assert_eq(m.hdr.tid, 0x00000002762f8affull);
	cr_assert_eq(m.hdr.attr_id, 0x0010);
	cr_assert_eq(m.hdr.attr_mod, 0);
	const struct cm_req *r = &m.u.req;
	cr_assert_eq(r->local_comm_id, 0xff8a2f76);
	cr_assert_eq(r->service_id, 0x0000000001064c3aull); /* prefix 0000000001, 0x06, 0x4c3a */
	cr_assert_eq(r->local_ca_guid, 0x505400fffe180002ull);
	cr_assert_eq(r->local_qkey, 0);
	cr_assert_eq(r->local_qpn, 0x5f);
	cr_assert_eq(r->responder_resources, 1);
	cr_assert_eq(r->local_eecn, 0);
	cr_assert_eq(r->initiator_depth, 1);
	cr_assert_eq(r->remote_eecn, 0);
	cr_assert_eq(r->remote_cm_response_timeout, 0x14);
	cr_assert_eq(r->transport_service_type, 0);
	cr_assert_eq(r->flow_control, 0);
	cr_assert_eq(r->starting_psn, 0x3bbdbf);
	cr_assert_eq(r->local_cm_response_timeout, 0x14);
	cr_assert_eq(r->retry_count, 7);
	cr_assert_eq(r->pkey, 0xffff);
	cr_assert_eq(r->path_mtu, 3);
	cr_assert_eq(r->rdc_exists, 0);
	cr_assert_eq(r->rnr_retry_count, 7);
	cr_assert_eq(r->max_cm_retries, 15);
	cr_assert_eq(r->srq, 0);
	cr_assert_eq(r->extended_transport_type, 0);
	cr_assert_eq(r->primary.local_lid, 65535);
	cr_assert_eq(r->primary.remote_lid, 65535);
	/* tshark shows the GIDs as 198.18.0.2 / 198.18.0.1: the IPv4 form rdma_cm uses for
	 * the CM's GIDs is ::ffff:a.b.c.d */
	uint8_t g2[16], g1[16];
	uroce_gid_from_ipv4(g2, gid_0_2 + 12);
	uroce_gid_from_ipv4(g1, gid_0_1 + 12);
	cr_assert_arr_eq(r->primary.local_gid, g2, 16);
	cr_assert_arr_eq(r->primary.remote_gid, g1, 16);
	/* tshark 4.0 prints "Primary Flow Label: 0x00bec ... Reserved 0x02, Packet Rate
	 * 0x3e": it reads that word 12 bits off. The bytes are be cf 30 00, i.e. flow label
	 * 0xbecf3 (Linux: (sport 0xe427 * 31 + dport 0x4c3a) & 0xfffff) and rate 0. */
	cr_assert_eq(r->primary.flow_label, 0xbecf3);
	cr_assert_eq(r->primary.packet_rate, 0);
	cr_assert_eq(r->primary.traffic_class, 0);
	cr_assert_eq(r->primary.hop_limit, 0x40);
	cr_assert_eq(r->primary.sl, 0);
	cr_assert_eq(r->primary.subnet_local, 0);
	cr_assert_eq(r->primary.local_ack_timeout, 0x13);
	cr_assert_eq(r->alternate.local_lid, 0);
	cr_assert_eq(r->alternate.flow_label, 0);
	/* IP CM private data: version 0.0, IP version 4, source port 0xe427, IPs */
	cr_assert_eq(m.private_data[0], 0x00);
	cr_assert_eq(m.private_data[1], 0x40);
	cr_assert_eq(m.private_data[2], 0xe4);
	cr_assert_eq(m.private_data[3], 0x27);
	cr_assert_arr_eq(m.private_data + 4, gid_0_2, 16);
	cr_assert_arr_eq(m.private_data + 20, gid_0_1, 16);

	/* frame 2, CM ConnectReply */
	cr_assert_eq(cm_msg_decode(c[1].mad, 256, &m), CM_DECODE_OK);
	cr_assert_eq(m.hdr.tid, 0x00000002762f8affull, "REP keeps the REQ's TID");
	cr_assert_eq(m.hdr.attr_id, 0x0013);
	cr_assert_eq(m.u.rep.local_comm_id, 0x391e24bd);
	cr_assert_eq(m.u.rep.remote_comm_id, 0xff8a2f76);
	cr_assert_eq(m.u.rep.local_qkey, 0);
	cr_assert_eq(m.u.rep.local_qpn, 0x5d);
	cr_assert_eq(m.u.rep.local_eecn, 0);
	cr_assert_eq(m.u.rep.starting_psn, 0x73f785);
	cr_assert_eq(m.u.rep.responder_resources, 1);
	cr_assert_eq(m.u.rep.initiator_depth, 1);
	cr_assert_eq(m.u.rep.target_ack_delay, 15);
	cr_assert_eq(m.u.rep.failover_accepted, 0);
	cr_assert_eq(m.u.rep.flow_control, 0);
	cr_assert_eq(m.u.rep.rnr_retry_count, 7);
	cr_assert_eq(m.u.rep.srq, 0);
	cr_assert_eq(m.u.rep.local_ca_guid, 0x505400fffe180001ull);

	/* frame 3, CM ReadyToUse */
	cr_assert_eq(cm_msg_decode(c[2].mad, 256, &m), CM_DECODE_OK);
	cr_assert_eq(m.hdr.attr_id, 0x0014);
	cr_assert_eq(m.hdr.tid, 0x00000002762f8affull);
	cr_assert_eq(m.u.rtu.local_comm_id, 0xff8a2f76);
	cr_assert_eq(m.u.rtu.remote_comm_id, 0x391e24bd);

	/* frame 40, CM DisconnectRequest (the active side's: its TID again) */
	cr_assert_eq(cm_msg_decode(c[3].mad, 256, &m), CM_DECODE_OK);
	cr_assert_eq(m.hdr.attr_id, 0x0015);
	cr_assert_eq(m.hdr.tid, 0x00000002762f8affull);
	cr_assert_eq(m.u.dreq.local_comm_id, 0xff8a2f76);
	cr_assert_eq(m.u.dreq.remote_comm_id, 0x391e24bd);
	cr_assert_eq(m.u.dreq.remote_qpn, 0x5d);

	/* frame 41, CM DisconnectReply */
	cr_assert_eq(cm_msg_decode(c[4].mad, 256, &m), CM_DECODE_OK);
	cr_assert_eq(m.hdr.attr_id, 0x0016);
	cr_assert_eq(m.hdr.tid, 0x00000002762f8affull);
	cr_assert_eq(m.u.drep.local_comm_id, 0x391e24bd);
	cr_assert_eq(m.u.drep.remote_comm_id, 0xff8a2f76);

	for (int i = 0; i < n; i++) {
		/* the UD packet around the MAD: QP1 to QP1, GSI Q_Key, P_Key 0xffff, AckReq
		 * set, and rxe's UDP source port for QP1 (0xd872 on both hosts) */
		cr_assert_eq(c[i].qkey, UROCE_TP_GSI_QKEY);
		cr_assert_eq(c[i].src_qpn, 1);
		cr_assert_eq(c[i].pkey, 0xffff);
		cr_assert(c[i].ack_req);
		cr_assert_eq(c[i].udp_sport, 0xd872);
		roundtrip(&c[i]);
	}
}

Test(cm_mad, write_bw_two_connections)
{
	struct captured_mad c[16];
	int n = load_cm_mads("rdma_cm_write_bw.pcap", c, 16);
	cr_assert_eq(n, 10);
	static const uint16_t attrs[] = {0x10, 0x13, 0x14, 0x10, 0x13,
					 0x14, 0x15, 0x16, 0x15, 0x16};
	struct cm_msg m;
	for (int i = 0; i < n; i++) {
		cr_assert_eq(cm_msg_decode(c[i].mad, 256, &m), CM_DECODE_OK);
		cr_assert_eq(m.hdr.attr_id, attrs[i], "MAD %d", i);
		roundtrip(&c[i]);
	}
	/* frame 24, the second REQ (tshark): port 0x4c3b, QPN 0x61, no RDMA READ resources */
	cr_assert_eq(cm_msg_decode(c[3].mad, 256, &m), CM_DECODE_OK);
	cr_assert_eq(m.hdr.tid, 0x00000002762f8afdull);
	cr_assert_eq(m.u.req.local_comm_id, 0xfd8a2f76);
	cr_assert_eq(m.u.req.service_id, 0x0000000001064c3bull);
	cr_assert_eq(m.u.req.local_qpn, 0x61);
	cr_assert_eq(m.u.req.responder_resources, 0);
	cr_assert_eq(m.u.req.initiator_depth, 0);
	cr_assert_eq(m.u.req.starting_psn, 0xa7443e);
	cr_assert_eq(m.u.req.primary.flow_label, 0x26338); /* (0x9563 * 31 + 0x4c3b) & 0xfffff */
	cr_assert_eq(m.private_data[2], 0x95);
	cr_assert_eq(m.private_data[3], 0x63);
	/* frame 93: the passive side's own DREQ carries its own TID (comm ID 0x3b1e24bd) */
	cr_assert_eq(cm_msg_decode(c[8].mad, 256, &m), CM_DECODE_OK);
	cr_assert_eq(m.hdr.tid, 0x00000002bd241e3bull);
	cr_assert_eq(m.u.dreq.local_comm_id, 0x3b1e24bd);
	cr_assert_eq(m.u.dreq.remote_comm_id, 0xfe8a2f76);
	cr_assert_eq(m.u.dreq.remote_qpn, 0x60);
	/* frame 94: DREP answers with the DREQ's TID */
	cr_assert_eq(cm_msg_decode(c[9].mad, 256, &m), CM_DECODE_OK);
	cr_assert_eq(m.hdr.tid, 0x00000002bd241e3bull);
}

Test(cm_mad, sidr)
{
	struct captured_mad c[4];
	int n = load_cm_mads("udaddy_sidr.pcap", c, 4);
	cr_assert_eq(n, 2);
	struct cm_msg m;
	/* frame 1, ServiceIDResReq (tshark: attribute 0x0017, TID 0x00000002762f8afc;
	 * its dissector stops at the header, the payload bytes are from the same output) */
	cr_assert_eq(cm_msg_decode(c[0].mad, 256, &m), CM_DECODE_OK);
	cr_assert_eq(m.hdr.attr_id, 0x0017);
	cr_assert_eq(m.hdr.tid, 0x00000002762f8afcull);
	cr_assert_eq(m.u.sidr_req.request_id, 0xfc8a2f76);
	cr_assert_eq(m.u.sidr_req.pkey, 0xffff);
	cr_assert_eq(m.u.sidr_req.service_id, 0x0000000001111c06ull); /* RDMA_PS_UDP, 7174 */
	cr_assert_eq(m.private_data[1], 0x40);
	cr_assert_eq(m.private_data[2], 0xdb);
	cr_assert_eq(m.private_data[3], 0x25);
	cr_assert_arr_eq(m.private_data + 4, gid_0_2, 16);
	cr_assert_arr_eq(m.private_data + 20, gid_0_1, 16);
	/* frame 2, ServiceIDResReqResp */
	cr_assert_eq(cm_msg_decode(c[1].mad, 256, &m), CM_DECODE_OK);
	cr_assert_eq(m.hdr.attr_id, 0x0018);
	cr_assert_eq(m.hdr.tid, 0x00000002762f8afcull);
	cr_assert_eq(m.u.sidr_rep.request_id, 0xfc8a2f76);
	cr_assert_eq(m.u.sidr_rep.status, 0);
	cr_assert_eq(m.u.sidr_rep.add_info_len, 0);
	cr_assert_eq(m.u.sidr_rep.qpn, 0x60);
	cr_assert_eq(m.u.sidr_rep.service_id, 0x0000000001111c06ull);
	cr_assert_eq(m.u.sidr_rep.qkey, 0x01234567);
	roundtrip(&c[0]);
	roundtrip(&c[1]);
}

Test(cm_mad, every_field_round_trips)
{
	/* all ones where a field can hold them: the bit positions do not overlap */
	struct cm_msg m, d;
	uint8_t buf[256];
	cm_msg_init(&m, UROCE_CM_ATTR_REQ, ~0ull);
	struct cm_req *r = &m.u.req;
	r->local_comm_id = 0xffffffff;
	r->vendor_id = 0xffffff;
	r->service_id = ~0ull;
	r->local_ca_guid = ~0ull;
	r->local_qkey = 0xffffffff;
	r->local_qpn = 0xffffff;
	r->responder_resources = r->initiator_depth = 0xff;
	r->local_eecn = r->remote_eecn = 0xffffff;
	r->remote_cm_response_timeout = r->local_cm_response_timeout = 31;
	r->transport_service_type = 3;
	r->flow_control = 1;
	r->starting_psn = 0xffffff;
	r->retry_count = r->rnr_retry_count = 7;
	r->pkey = 0xffff;
	r->path_mtu = 15;
	r->rdc_exists = r->srq = 1;
	r->max_cm_retries = 15;
	r->extended_transport_type = 7;
	r->primary.flow_label = 0xfffff;
	r->primary.packet_rate = 63;
	r->primary.sl = 15;
	r->primary.subnet_local = 1;
	r->primary.local_ack_timeout = 31;
	r->alternate = r->primary;
	r->sap_supported = 1;
	cm_msg_encode(&m, buf);
	cr_assert_eq(cm_msg_decode(buf, 256, &d), CM_DECODE_OK);
	cr_assert_eq(memcmp(&d.u.req, &m.u.req, sizeof(m.u.req)), 0);
	/* REQ byte 43 = timeout 5 | service type 2 | flow control 1: 0xff */
	cr_assert_eq(buf[24 + 43], 0xff);
	cr_assert_eq(buf[24 + 91], 0x3f, "6 reserved bits stay zero before the rate");

	cm_msg_init(&m, UROCE_CM_ATTR_REP, 1);
	m.u.rep.vendor_id = 0xabcdef;
	m.u.rep.target_ack_delay = 31;
	m.u.rep.failover_accepted = 3;
	m.u.rep.flow_control = 1;
	m.u.rep.rnr_retry_count = 7;
	m.u.rep.srq = 1;
	cm_msg_encode(&m, buf);
	cr_assert_eq(buf[24 + 15], 0xab);
	cr_assert_eq(buf[24 + 19], 0xcd);
	cr_assert_eq(buf[24 + 23], 0xef);
	cr_assert_eq(buf[24 + 26], 0xff);
	cr_assert_eq(buf[24 + 27], 0xf0);
	cr_assert_eq(cm_msg_decode(buf, 256, &d), CM_DECODE_OK);
	cr_assert_eq(memcmp(&d.u.rep, &m.u.rep, sizeof(m.u.rep)), 0);

	cm_msg_init(&m, UROCE_CM_ATTR_REJ, 1);
	m.u.rej.message_rejected = 2;
	m.u.rej.ari_len = 72;
	m.u.rej.reason = 28;
	memset(m.private_data, 0xa5, 148);
	cm_msg_encode(&m, buf);
	cr_assert_eq(buf[24 + 8], 0x80);
	cr_assert_eq(buf[24 + 9], 72 << 1);
	cr_assert_eq(buf[24 + 84], 0xa5);
	cr_assert_eq(buf[255], 0xa5);
	cr_assert_eq(cm_msg_decode(buf, 256, &d), CM_DECODE_OK);
	cr_assert_eq(d.u.rej.ari_len, 72);
	cr_assert_eq(d.u.rej.reason, 28);

	cm_msg_init(&m, UROCE_CM_ATTR_MRA, 1);
	m.u.mra.message_mraed = 1;
	m.u.mra.service_timeout = 24;
	cm_msg_encode(&m, buf);
	cr_assert_eq(buf[24 + 8], 0x40);
	cr_assert_eq(buf[24 + 9], 24 << 3);
}

Test(cm_mad, refusals)
{
	struct captured_mad c[8];
	cr_assert_eq(load_cm_mads("rdma_cm_rping.pcap", c, 8), 5);
	struct cm_msg m;
	uint8_t b[300];
	memcpy(b, c[0].mad, 256);
	cr_assert_eq(cm_msg_decode(b, 23, &m), CM_DECODE_MALFORMED);
	cr_assert_eq(cm_msg_decode(b, 24 + 139, &m), CM_DECODE_MALFORMED, "REQ needs 140 bytes");
	cr_assert_eq(cm_msg_decode(b, 24 + 140, &m), CM_DECODE_OK, "private data may be cut");
	cr_assert_eq(cm_msg_decode(b, 257, &m), CM_DECODE_MALFORMED);
	cr_assert_eq(cm_msg_decode(NULL, 256, &m), CM_DECODE_MALFORMED);
	for (int byte = 0; byte < 4; byte++) {
		memcpy(b, c[0].mad, 256);
		b[byte] ^= 0x01;
		cr_assert_eq(cm_msg_decode(b, 256, &m), CM_DECODE_MALFORMED, "header byte %d",
			     byte);
	}
	memcpy(b, c[0].mad, 256);
	b[17] = 0x20;
	cr_assert_eq(cm_msg_decode(b, 256, &m), CM_DECODE_UNKNOWN_ATTR);
	b[17] = 0x19;
	cr_assert_eq(cm_msg_decode(b, 256, &m), CM_DECODE_UNHANDLED);
	b[17] = 0x01;
	cr_assert_eq(cm_msg_decode(b, 256, &m), CM_DECODE_UNHANDLED);
	/* every length of every captured MAD: never a read past it (ASan) */
	for (int i = 0; i < 5; i++)
		for (uint32_t len = 0; len <= 256; len++)
			(void)cm_msg_decode(c[i].mad, len, &m);
}
