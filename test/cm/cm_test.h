/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_CM_TEST_H
#define UROCE_CM_TEST_H

/* The CM MADs of a real rxe capture: every UD SEND to QP1, through lib/capture's reader
 * and lib/wire's parser. */

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_msg.h"
#include "uroce_capture.h"
#include "uroce_transport.h" /* the GSI's QPN and Q_Key */
#include "uroce_wire.h"

struct captured_mad {
	uint8_t mad[UROCE_CM_MAD_LEN];
	struct uroce_cm_path from; /* sgid: the frame's destination, dgid: its source */
	uint16_t udp_sport;
	uint32_t qkey;
	uint32_t src_qpn;
	uint16_t pkey;
	bool ack_req;
};

static inline int load_cm_mads(const char *file, struct captured_mad *out, int max)
{
	const char *dir = getenv("UROCE_PCAP_DIR");
	cr_assert_not_null(dir, "UROCE_PCAP_DIR is not set (meson test sets it)");
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	struct uroce_pcap_reader *r = malloc(sizeof(*r));
	cr_assert_not_null(r);
	cr_assert_eq(uroce_pcap_open(r, path), 0, "cannot open %s", path);
	struct uroce_pcap_record rec;
	int n = 0;
	while (uroce_pcap_next(r, &rec) == 1) {
		struct uroce_wire_pkt pkt;
		if (uroce_wire_parse(rec.data, rec.caplen, &pkt) != UROCE_WIRE_OK)
			continue;
		if (pkt.hdr.bth.dqpn != UROCE_TP_GSI_QPN)
			continue;
		cr_assert_eq(pkt.payload_len, UROCE_CM_MAD_LEN);
		cr_assert_lt(n, max);
		struct captured_mad *c = &out[n++];
		memset(c, 0, sizeof(*c));
		memcpy(c->mad, pkt.payload, UROCE_CM_MAD_LEN);
		uroce_gid_from_ipv4(c->from.sgid.raw, pkt.hdr.ip_dst + 12);
		uroce_gid_from_ipv4(c->from.dgid.raw, pkt.hdr.ip_src + 12);
		memcpy(c->from.dmac, pkt.hdr.eth_src, 6);
		c->from.hop_limit = pkt.hdr.ip_ttl;
		c->from.pkey = pkt.hdr.bth.pkey;
		c->from.sgid_index = 1;
		c->udp_sport = pkt.hdr.udp_sport;
		c->qkey = pkt.hdr.deth.qkey;
		c->src_qpn = pkt.hdr.deth.src_qpn;
		c->pkey = pkt.hdr.bth.pkey;
		c->ack_req = pkt.hdr.bth.ack_req;
	}
	uroce_pcap_close(r);
	free(r);
	return n;
}

#endif
