/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Network I/O of the transport, all of it: building and sending frames through the tx
 * callback, and receiving frames: parse, ICRC, QP lookup, dispatch to the responder
 * (requests) or the completer (responses). The work loop is in schedule.c.
 */
#include <string.h>

#include "tp_internal.h"

int tp_path_tmpl(struct uroce_tp_dev *dev, const struct ibv_ah_attr *ah, const uint8_t dmac[6],
		 struct uroce_wire_hdr *h)
{
	const uint8_t *sgid, *dgid = ah->grh.dgid.raw;
	bool v4;

	if (ah->grh.sgid_index >= dev->cfg.gid_count)
		return -EINVAL;
	sgid = dev->cfg.gid[ah->grh.sgid_index].raw;
	/* RoCEv2 (A17.4.5.1): an IPv4-mapped GID pair means IPv4 on the wire. */
	v4 = uroce_gid_is_ipv4(dgid);
	if (v4 != uroce_gid_is_ipv4(sgid))
		return -EINVAL;
	uroce_wire_hdr_init(h, v4 ? 4 : 6, 0);
	memcpy(h->eth_src, dev->cfg.mac, 6);
	memcpy(h->eth_dst, dmac, 6);
	if (dev->cfg.vlan_id) {
		h->vlan = true;
		h->vlan_tci = (uint16_t)((ah->sl & 7) << 13 | dev->cfg.vlan_id);
	}
	if (v4) {
		memcpy(h->ip_src + 12, uroce_gid_ipv4(sgid), 4);
		memcpy(h->ip_dst + 12, uroce_gid_ipv4(dgid), 4);
	} else {
		memcpy(h->ip_src, sgid, 16);
		memcpy(h->ip_dst, dgid, 16);
	}
	h->ip_tos = ah->grh.traffic_class;
	h->ip_flow_label = ah->grh.flow_label & 0xfffff;
	/* The hop limit an application passes (ibv_rc_pingpong: 1) is replaced by the
	 * route's for RoCEv2, as the kernel does when it resolves the path: 64 here. */
	h->ip_ttl = UROCE_IPV4_TTL_DEFAULT;
	return 0;
}

/* What the host's tx answered: sent (counted), or refused, the link full (-EAGAIN; the
 * device is blocked until the next uroce_tp_process). */
static int tx_counted(struct uroce_tp_dev *dev, int rc)
{
	if (rc) {
		dev->cnt.tx_busy++;
		dev->tx_blocked = true;
		return -EAGAIN;
	}
	dev->cnt.sent_pkts++;
	return 0;
}

int tp_send_pkt(struct uroce_tp_dev *dev, const struct uroce_wire_hdr *h, uint32_t payload_len,
		tp_fill_fn fill, void *arg)
{
	uint32_t hdr_len, frame_len, pad, l3_off;
	uint8_t *f = NULL;
	int rc;

	frame_len = uroce_wire_frame_len(h, payload_len);
	if (frame_len == 0 || frame_len > sizeof(dev->frame))
		return -EINVAL;
	/* In the port's buffer when the host offers one: the payload is gathered from the
	 * MR once, straight into the frame that goes out. */
	if (dev->cfg.tx_buf)
		f = dev->cfg.tx_buf(dev->cfg.tx_ctx, h->eth_dst, frame_len);
	if (!f)
		f = dev->frame;
	hdr_len = uroce_wire_build_hdrs(f, frame_len, h, payload_len);
	if (payload_len) {
		rc = fill(arg, f + hdr_len, payload_len);
		if (rc)
			return rc;
	}
	pad = frame_len - UROCE_ICRC_LEN - hdr_len - payload_len;
	memset(f + hdr_len + payload_len, 0, pad);
	l3_off = UROCE_ETH_HLEN + (h->vlan ? UROCE_VLAN_HLEN : 0);
	uroce_wire_icrc_store(f + frame_len - UROCE_ICRC_LEN,
			      dev->cfg.no_icrc ? 0
					       : uroce_wire_icrc_contig(f + l3_off, h->ip_version,
									frame_len - l3_off -
										UROCE_ICRC_LEN));
	if (f != dev->frame)
		rc = dev->cfg.tx_commit(dev->cfg.tx_ctx, f, frame_len);
	else
		rc = dev->cfg.tx(dev->cfg.tx_ctx, f, frame_len);
	return tx_counted(dev, rc);
}

int tp_send_pkt_zc(struct uroce_tp_dev *dev, const struct uroce_wire_hdr *h, uint32_t payload_len,
		   const struct uroce_tp_tx_seg *seg, uint32_t nseg)
{
	static const uint8_t zeros[3];
	uint32_t hdr_len, frame_len, pad, l3_off, tail_len, st;
	uint8_t tail[3 + UROCE_ICRC_LEN] = {0};
	int rc;

	frame_len = uroce_wire_frame_len(h, payload_len);
	if (frame_len == 0 || frame_len > sizeof(dev->frame))
		return -EINVAL;
	hdr_len = uroce_wire_build_hdrs(dev->frame, frame_len, h, payload_len);
	pad = frame_len - UROCE_ICRC_LEN - hdr_len - payload_len;
	tail_len = pad + UROCE_ICRC_LEN;
	l3_off = UROCE_ETH_HLEN + (h->vlan ? UROCE_VLAN_HLEN : 0);
	st = 0;
	if (!dev->cfg.no_icrc) {
		/* The CRC reads the payload where it lies: the one pass over its bytes here. */
		st = uroce_wire_icrc_hdrs(dev->frame + l3_off, h->ip_version,
					  hdr_len - l3_off - UROCE_UDP_HLEN -
						  (h->ip_version == 4 ? UROCE_IPV4_HLEN
								      : UROCE_IPV6_HLEN));
		for (uint32_t i = 0; i < nseg; i++)
			st = uroce_wire_icrc_update(st, seg[i].addr, seg[i].len);
		st = uroce_wire_icrc_final(uroce_wire_icrc_update(st, zeros, pad));
	}
	uroce_wire_icrc_store(tail + pad, st);
	rc = dev->cfg.tx_zc(dev->cfg.tx_ctx, dev->frame, hdr_len, seg, nseg, tail, tail_len);
	return rc == -ENOTSUP ? rc : tx_counted(dev, rc);
}

/* IBA 10.9.3: P_Keys match when their low 15 bits do and one of them is a full member;
 * ours is the default full-member key 0xffff. */
static bool pkey_ok(uint16_t pkey)
{
	return (pkey & 0x7fff) == 0x7fff;
}

/* QP1 takes only UD SEND Only (MADs are one packet, IBA 13.4.1) with the GSI Q_Key
 * (IBA 10.2.5: a wrong Q_Key is dropped silently). */
static void gsi_rx(struct uroce_tp_dev *dev, const struct uroce_wire_pkt *pkt, uint64_t now_ns)
{
	if (!pkey_ok(pkt->hdr.bth.pkey)) {
		dev->cnt.rcvd_bad_pkey++;
		return;
	}
	if (pkt->hdr.bth.opcode != UROCE_OPCODE(UROCE_TRANSPORT_UD, UROCE_OP_SEND_ONLY)) {
		dev->cnt.rcvd_wrong_opcode++;
		return;
	}
	if (pkt->hdr.deth.qkey != UROCE_TP_GSI_QKEY) {
		dev->cnt.rcvd_bad_qkey++;
		return;
	}
	dev->cfg.gsi_rx(dev->cfg.io_ctx, pkt, now_ns);
}

/* A UD SEND to a group: a copy to every QP attached to the destination GID (IBA 10.5, as
 * rxe_rcv_mcast_pkt); each QP checks its Q_Key and takes its own receive WQE. */
static void mcast_rx(struct uroce_tp_dev *dev, const struct uroce_wire_pkt *pkt)
{
	struct tp_mcast_group *g;
	uint8_t gid[UROCE_GID_LEN];
	uint32_t i;

	if (pkt->hdr.ip_version == 4)
		uroce_gid_from_ipv4(gid, pkt->hdr.ip_dst + 12);
	else
		memcpy(gid, pkt->hdr.ip_dst, 16);
	g = tp_mcast_find(dev, gid);
	if (!g) {
		dev->cnt.rcvd_unknown_qp++;
		return;
	}
	if (!pkey_ok(pkt->hdr.bth.pkey)) {
		dev->cnt.rcvd_bad_pkey++;
		return;
	}
	if (!uroce_opcode_valid_for_qp(pkt->hdr.bth.opcode, UROCE_QPT_UD)) {
		dev->cnt.rcvd_wrong_opcode++;
		return;
	}
	for (i = 0; i < g->nqps; i++)
		tp_resp_rx(g->qp[i], pkt);
}

static int gsi_fill(void *arg, uint8_t *dst, uint32_t len)
{
	memcpy(dst, arg, len);
	return 0;
}

int uroce_tp_gsi_send(struct uroce_tp_dev *dev, const struct ibv_ah_attr *ah,
		      const uint8_t dmac[6], uint32_t dqpn, uint32_t qkey, const void *payload,
		      uint32_t len)
{
	struct uroce_wire_hdr h;
	int rc;

	if (!ah->is_global || len == 0 || len > 4096)
		return -EINVAL;
	rc = tp_path_tmpl(dev, ah, dmac, &h);
	if (rc)
		return rc;
	h.bth.opcode = UROCE_OPCODE(UROCE_TRANSPORT_UD, UROCE_OP_SEND_ONLY);
	h.bth.pkey = UROCE_PKEY_DEFAULT;
	h.bth.dqpn = dqpn & UROCE_PSN_MASK;
	h.bth.psn = dev->gsi_psn;
	h.udp_sport = uroce_udp_sport_qpn(UROCE_TP_GSI_QPN);
	h.deth.qkey = qkey;
	h.deth.src_qpn = UROCE_TP_GSI_QPN;
	rc = tp_send_pkt(dev, &h, len, gsi_fill, (void *)(uintptr_t)payload);
	if (rc == 0)
		dev->gsi_psn = (dev->gsi_psn + 1) & UROCE_PSN_MASK;
	return rc;
}

/*
 * An RC, UC or XRC QP with a path (RTR onwards) takes packets from its peer only, as rxe's
 * check_addr: the IP source is the QP's destination and the IP destination its source.
 * Otherwise anyone who can reach the port and guess a QPN, a PSN and an R_Key (QPNs are
 * dense, the CM's start PSN travels in the clear) could write into a connection's memory
 * or break it. UD answers whoever sends; a QP before RTR has no peer yet (and drops).
 */
static bool from_peer(const struct uroce_tp_qp *qp, const struct uroce_wire_pkt *pkt)
{
	if ((!tp_qp_reliable(qp) && qp->type != IBV_QPT_UC) || qp->state < IBV_QPS_RTR)
		return true;
	return pkt->hdr.ip_version == qp->tmpl.ip_version &&
	       memcmp(pkt->hdr.ip_src, qp->tmpl.ip_dst, UROCE_GID_LEN) == 0 &&
	       memcmp(pkt->hdr.ip_dst, qp->tmpl.ip_src, UROCE_GID_LEN) == 0;
}

/* Both entries' body, inlined into each (an exported function is not, in a shared
 * object's code): a frame costs one call from the host. */
static inline void rx_parsed(struct uroce_tp_dev *dev, const struct uroce_wire_pkt *pkt,
			     enum uroce_wire_err err, uint64_t now_ns)
{
	const struct uroce_opcode_info *oi;
	struct uroce_tp_qp *qp;

	if (err != UROCE_WIRE_OK) {
		dev->cnt.rcvd_malformed++;
		return;
	}
	if (!dev->cfg.no_icrc && uroce_wire_icrc_check(pkt) != UROCE_WIRE_OK) {
		dev->cnt.rcvd_icrc_err++;
		return;
	}
	dev->cnt.rcvd_pkts++;
	if (pkt->hdr.bth.opcode == UROCE_OPCODE_CNP)
		return; /* congestion control (DCQCN) is not implemented: counted, ignored */
	if (pkt->hdr.bth.dqpn == UROCE_TP_GSI_QPN && dev->cfg.gsi_rx) {
		gsi_rx(dev, pkt, now_ns);
		return;
	}
	if (pkt->hdr.bth.dqpn == UROCE_TP_MCAST_QPN) {
		mcast_rx(dev, pkt);
		return;
	}
	qp = uroce_tp_qp_lookup(dev, pkt->hdr.bth.dqpn);
	/* A raw packet QP has no transport: its QPN names no RoCE endpoint. */
	if (qp == NULL || qp->type == IBV_QPT_RAW_PACKET) {
		dev->cnt.rcvd_unknown_qp++;
		return;
	}
	if (!pkey_ok(pkt->hdr.bth.pkey)) {
		dev->cnt.rcvd_bad_pkey++;
		return;
	}
	if (!uroce_opcode_valid_for_qp(pkt->hdr.bth.opcode, (enum uroce_qp_type)qp->type)) {
		dev->cnt.rcvd_wrong_opcode++;
		return;
	}
	if (!from_peer(qp, pkt)) {
		dev->cnt.rcvd_wrong_peer++;
		return;
	}
	oi = uroce_opcode_info(pkt->hdr.bth.opcode);
	if (oi->flags & UROCE_OPF_RESP)
		tp_comp_rx(qp, pkt, now_ns);
	else
		tp_resp_rx(qp, pkt);
}

void uroce_tp_rx_parsed(struct uroce_tp_dev *dev, const struct uroce_wire_pkt *pkt,
			enum uroce_wire_err err, uint64_t now_ns)
{
	rx_parsed(dev, pkt, err, now_ns);
}

void uroce_tp_rx(struct uroce_tp_dev *dev, const uint8_t *frame, uint32_t len, uint64_t now_ns)
{
	struct uroce_wire_pkt pkt;
	enum uroce_wire_err err = uroce_wire_parse(frame, len, &pkt);

	rx_parsed(dev, &pkt, err, now_ns);
}
