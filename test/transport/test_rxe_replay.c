/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wire agreement with Linux rxe, from real captures (test/data/rxe-captures, $UROCE_PCAP_DIR).
 *
 * Responder agreement: the REQUEST packets rxe's requester sent in a capture are replayed,
 * in capture order, into a uroce RC QP, and the responses uroce generates are compared,
 * one by one, with the responses rxe's responder sent: opcode, PSN, AckReq, AETH syndrome
 * (type and value), MSN, READ payload bytes, AtomicAckETH value, and the rest of the
 * header (MACs, IP addresses, TTL, DF, TOS, P_Key, reserved bits, pad, UDP checksum; the
 * UDP source port against the formula). Afterwards the responder's memory and its receive
 * completions are checked against what the requests carried.
 *
 * Method. One capture holds one RC connection between 198.18.0.1 and 198.18.0.2; each
 * direction in which requests travel is a requester/responder pair of its own (ping-pong
 * captures have two). The uroce QP is brought up with the path of the capture (MACs,
 * IPv4-mapped GIDs, path MTU, rq_psn = the first request PSN) and with dest_qp_num = rxe's
 * requester QPN, so that its responses are addressed as rxe's were. Every captured request
 * is re-addressed to the uroce QP (BTH DestQP, and the rkey in RETH or AtomicETH) and
 * rebuilt, which recomputes the ICRC. The MR covers every VA the requests name; before the
 * replay it holds what rxe's responder memory held, as far as the capture shows it: the
 * READ response payloads (at va + (psn - request psn) * mtu) and, per atomic VA, the
 * original value of the first ATOMIC ACK there.
 *
 * A small model of the responder (a request executes when its PSN is the expected one)
 * gives the expected memory image and receive completions; it is the same rule rxe and
 * uroce follow, and the response comparison checks that both agreed on what executed.
 *
 * Requester agreement: the work requests the capture's requester posted are derived from
 * its requests, posted on a uroce QP with sq_psn = the capture's first PSN, and rxe's
 * responses are fed back; uroce's request frames are compared with rxe's.
 *
 * Known, deliberate differences (asserted as uroce documents them, not skipped):
 * - IPv4 identification: rxe takes Linux's per-destination IP ID counter, uroce sends 0.
 *   The field has no meaning with DF set (RFC 6864); it is not compared.
 * - UDP source port: a function of both QPNs; uroce's QPN differs from rxe's, so each side
 *   is checked against uroce_udp_sport_connected() with its own QPNs.
 * - After an RNR NAK rxe answers the next out-of-sequence request with a PSN sequence
 *   error NAK for the same PSN (its RNR NAK does not count as the gap's one NAK); uroce
 *   sends one NAK per gap, RNR NAKs included (responder.c, IBA 9.7.5.1.1), so that NAK is
 *   taken out of rxe's sequence before comparing (and counted, and reported).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "uroce_transport.h"
#include "uroce_wire.h"

/* lib/capture is not a dependency of the transport tests; its reader is one small file. */
#include "uroce_capture.h"

#define NOW_BASE 1000000000ull /* the replay's clock at the capture's first frame */

/* ---- captures ------------------------------------------------------------------------- */

struct pkt {
	uint32_t no;  /* frame number in the capture, from 1 */
	uint64_t ts;  /* ns since the capture's first frame */
	uint8_t *data;
	uint32_t len;
	struct uroce_wire_pkt p;
	uint16_t f;   /* opcode flags */
};

struct cap {
	const char *file;
	struct pkt *v;
	uint32_t n;
};

static void cap_load(struct cap *c, const char *file)
{
	const char *dir = getenv("UROCE_PCAP_DIR");
	struct uroce_pcap_reader *r = malloc(sizeof(*r));
	struct uroce_pcap_record rec;
	uint64_t t0 = 0;
	uint32_t no = 0;
	char path[4096];
	int rc;

	memset(c, 0, sizeof(*c));
	c->file = file;
	cr_assert_not_null(r);
	cr_assert_not_null(dir, "UROCE_PCAP_DIR is not set (meson test sets it)");
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	rc = uroce_pcap_open(r, path);
	cr_assert_eq(rc, 0, "%s: cannot open: %d", path, rc);
	while ((rc = uroce_pcap_next(r, &rec)) == 1) {
		struct uroce_wire_pkt tmp;
		struct pkt *k;

		no++;
		if (t0 == 0)
			t0 = rec.ts_ns;
		if (uroce_wire_parse(rec.data, rec.caplen, &tmp) != UROCE_WIRE_OK)
			continue; /* not RoCEv2 (ARP and the like) */
		c->v = realloc(c->v, (c->n + 1) * sizeof(*c->v));
		cr_assert_not_null(c->v);
		k = &c->v[c->n++];
		k->no = no;
		k->ts = rec.ts_ns - t0;
		k->len = rec.caplen;
		k->data = malloc(rec.caplen);
		cr_assert_not_null(k->data);
		memcpy(k->data, rec.data, rec.caplen);
		cr_assert_eq(uroce_wire_parse(k->data, k->len, &k->p), UROCE_WIRE_OK);
		cr_assert_eq(uroce_wire_icrc_check(&k->p), UROCE_WIRE_OK, "%s #%u: bad ICRC", file,
			     no);
		k->f = uroce_opcode_info(k->p.hdr.bth.opcode)->flags;
	}
	cr_assert_eq(rc, 0, "%s: damaged record after frame %u", path, no);
	uroce_pcap_close(r);
	free(r);
	cr_assert_gt(c->n, 0, "%s: no RoCEv2 frames", file);
}

static void cap_free(struct cap *c)
{
	for (uint32_t i = 0; i < c->n; i++)
		free(c->v[i].data);
	free(c->v);
	memset(c, 0, sizeof(*c));
}

static bool is_rc(const struct pkt *k)
{
	return UROCE_OPCODE_TRANSPORT(k->p.hdr.bth.opcode) == UROCE_TRANSPORT_RC;
}

/* One direction of an RC connection: rxe's requester on req_ip, rxe's responder on
 * resp_ip. Indices into the capture, in capture order. */
struct flow {
	uint8_t req_ip[4], resp_ip[4];
	uint8_t req_mac[6], resp_mac[6];
	uint32_t req_qpn;  /* rxe's requester QP (DestQP of the responses) */
	uint32_t resp_qpn; /* rxe's responder QP (DestQP of the requests) */
	uint32_t *req, nreq;
	uint32_t *rsp, nrsp;
};

#define MAX_FLOWS 4

static void push_idx(uint32_t **v, uint32_t *n, uint32_t i)
{
	*v = realloc(*v, (*n + 1) * sizeof(**v));
	cr_assert_not_null(*v);
	(*v)[(*n)++] = i;
}

/* The flows of a capture, in the order their first request appears. */
static int find_flows(const struct cap *c, struct flow *fl)
{
	int nf = 0;

	memset(fl, 0, MAX_FLOWS * sizeof(*fl));
	for (uint32_t i = 0; i < c->n; i++) {
		const struct pkt *k = &c->v[i];
		const struct uroce_wire_hdr *h = &k->p.hdr;
		int j;

		if (!is_rc(k) || !(k->f & UROCE_OPF_REQ))
			continue;
		for (j = 0; j < nf; j++)
			if (memcmp(fl[j].req_ip, h->ip_src + 12, 4) == 0 &&
			    fl[j].resp_qpn == h->bth.dqpn)
				break;
		if (j == nf) {
			cr_assert_lt(nf, MAX_FLOWS, "%s: too many RC flows", c->file);
			memcpy(fl[j].req_ip, h->ip_src + 12, 4);
			memcpy(fl[j].resp_ip, h->ip_dst + 12, 4);
			memcpy(fl[j].req_mac, h->eth_src, 6);
			memcpy(fl[j].resp_mac, h->eth_dst, 6);
			fl[j].resp_qpn = h->bth.dqpn;
			nf++;
		}
		push_idx(&fl[j].req, &fl[j].nreq, i);
	}
	for (uint32_t i = 0; i < c->n; i++) {
		const struct pkt *k = &c->v[i];
		const struct uroce_wire_hdr *h = &k->p.hdr;
		int found = -1;

		if (!is_rc(k) || !(k->f & UROCE_OPF_RESP))
			continue;
		for (int j = 0; j < nf; j++) {
			if (memcmp(fl[j].resp_ip, h->ip_src + 12, 4) ||
			    memcmp(fl[j].req_ip, h->ip_dst + 12, 4))
				continue;
			cr_assert_eq(found, -1, "%s #%u: response fits two flows", c->file, k->no);
			found = j;
		}
		cr_assert_neq(found, -1, "%s #%u: response without requests", c->file, k->no);
		if (fl[found].nrsp == 0)
			fl[found].req_qpn = h->bth.dqpn;
		cr_assert_eq(h->bth.dqpn, fl[found].req_qpn, "%s #%u: responses to two QPs",
			     c->file, k->no);
		push_idx(&fl[found].rsp, &fl[found].nrsp, i);
	}
	return nf;
}

static void flows_free(struct flow *fl, int nf)
{
	for (int j = 0; j < nf; j++) {
		free(fl[j].req);
		free(fl[j].rsp);
	}
}

/* The path MTU: what FIRST and MIDDLE packets carry (exactly the MTU), else 1024 unless a
 * payload is larger. */
static uint32_t flow_mtu(const struct cap *c, const struct flow *fl)
{
	uint32_t mtu = 0, maxp = 0;

	for (int side = 0; side < 2; side++) {
		uint32_t n = side ? fl->nrsp : fl->nreq, *ix = side ? fl->rsp : fl->req;

		for (uint32_t i = 0; i < n; i++) {
			const struct pkt *k = &c->v[ix[i]];

			if (k->p.payload_len > maxp)
				maxp = k->p.payload_len;
			if ((k->f & UROCE_OPF_PAYLOAD) && !(k->f & UROCE_OPF_LAST) &&
			    !(k->f & UROCE_OPF_READ && k->f & UROCE_OPF_REQ)) {
				if (mtu == 0)
					mtu = k->p.payload_len;
				cr_assert_eq(k->p.payload_len, mtu,
					     "%s #%u: FIRST/MIDDLE of %u bytes, MTU %u", c->file,
					     k->no, k->p.payload_len, mtu);
			}
		}
	}
	if (mtu == 0)
		for (mtu = 1024; mtu < maxp; mtu <<= 1)
			;
	cr_assert(mtu >= 256 && mtu <= 4096 && (mtu & (mtu - 1)) == 0, "%s: MTU %u", c->file, mtu);
	return mtu;
}

static enum ibv_mtu mtu_enum(uint32_t mtu)
{
	return (enum ibv_mtu)(__builtin_ctz(mtu) - 7); /* 256 -> IBV_MTU_256 = 1 */
}

/* PSNs a request takes (a READ: its responses). */
static uint32_t req_npsn(const struct pkt *k, uint32_t mtu)
{
	if (k->f & UROCE_OPF_READ)
		return k->p.hdr.reth.dma_len ? (k->p.hdr.reth.dma_len + mtu - 1) / mtu : 1;
	return 1;
}

/* ---- describing packets ------------------------------------------------------------------ */

static const char *nak_name(uint8_t v)
{
	static const char *const n[] = {"PSN_SEQ_ERR", "INVALID_REQ", "REM_ACCESS_ERR",
					"REM_OP_ERR", "INVALID_RD_REQ"};
	return v < 5 ? n[v] : "reserved";
}

static void aeth_str(uint8_t syn, char *b, size_t n)
{
	switch (uroce_aeth_type(syn)) {
	case UROCE_AETH_ACK:
		snprintf(b, n, "ACK(credits %u)", uroce_aeth_value(syn));
		break;
	case UROCE_AETH_RNR_NAK:
		snprintf(b, n, "RNR_NAK(timer %u)", uroce_aeth_value(syn));
		break;
	case UROCE_AETH_NAK:
		snprintf(b, n, "NAK(%s)", nak_name(uroce_aeth_value(syn)));
		break;
	default:
		snprintf(b, n, "reserved(0x%02x)", syn);
		break;
	}
}

static void describe(const struct uroce_wire_pkt *p, char *b, size_t n)
{
	const struct uroce_wire_hdr *h = &p->hdr;
	const struct uroce_opcode_info *oi = uroce_opcode_info(h->bth.opcode);
	int w = snprintf(b, n, "%s psn %06x dqp %06x%s len %u pad %u sport %u", oi->name,
			 h->bth.psn, h->bth.dqpn, h->bth.ack_req ? " AckReq" : "", p->payload_len,
			 h->bth.pad, h->udp_sport);

	if (w < 0 || (size_t)w >= n)
		return;
	if (oi->hdrs & UROCE_HDR_AETH) {
		char a[40];

		aeth_str(h->aeth.syndrome, a, sizeof(a));
		w += snprintf(b + w, n - (size_t)w, " AETH %s [0x%02x] msn %u", a, h->aeth.syndrome,
			      h->aeth.msn);
	}
	if ((size_t)w < n && (oi->hdrs & UROCE_HDR_ATOMICACKETH))
		w += snprintf(b + w, n - (size_t)w, " orig 0x%" PRIx64, h->atomic_orig);
	if ((size_t)w < n && (oi->hdrs & UROCE_HDR_RETH))
		w += snprintf(b + w, n - (size_t)w, " RETH va 0x%" PRIx64 " rkey 0x%x len %u",
			      h->reth.va, h->reth.rkey, h->reth.dma_len);
	if ((size_t)w < n && (oi->hdrs & UROCE_HDR_ATOMICETH))
		snprintf(b + w, n - (size_t)w,
			 " AtomicETH va 0x%" PRIx64 " sa 0x%" PRIx64 " cmp 0x%" PRIx64,
			 h->atomiceth.va, h->atomiceth.swap_add, h->atomiceth.compare);
}

/* Everything but IP ID, UDP source port (checked against the formula by the caller) and
 * the ICRC (checked valid on both sides) must match: the headers and the payload. On a
 * difference, @why names the first field. */
static bool same_pkt(const struct uroce_wire_pkt *u, const struct uroce_wire_pkt *x, char *why,
		     size_t n)
{
	const struct uroce_wire_hdr *a = &u->hdr, *b = &x->hdr;
	const struct uroce_opcode_info *oi = uroce_opcode_info(b->bth.opcode);

#define FIELD(cond, name)                                                                  \
	do {                                                                               \
		if (!(cond)) {                                                             \
			snprintf(why, n, "%s", name);                                      \
			return false;                                                      \
		}                                                                          \
	} while (0)
	FIELD(a->bth.opcode == b->bth.opcode, "opcode");
	FIELD(a->bth.psn == b->bth.psn, "PSN");
	FIELD(a->bth.dqpn == b->bth.dqpn, "DestQP");
	FIELD(a->bth.ack_req == b->bth.ack_req, "AckReq");
	FIELD(!(oi->hdrs & UROCE_HDR_AETH) ||
		      uroce_aeth_type(a->aeth.syndrome) == uroce_aeth_type(b->aeth.syndrome),
	      "AETH syndrome type");
	FIELD(!(oi->hdrs & UROCE_HDR_AETH) || a->aeth.syndrome == b->aeth.syndrome,
	      "AETH syndrome value");
	FIELD(!(oi->hdrs & UROCE_HDR_AETH) || a->aeth.msn == b->aeth.msn, "MSN");
	FIELD(!(oi->hdrs & UROCE_HDR_ATOMICACKETH) || a->atomic_orig == b->atomic_orig,
	      "AtomicAckETH original value");
	FIELD(!(oi->hdrs & UROCE_HDR_RETH) ||
		      (a->reth.va == b->reth.va && a->reth.rkey == b->reth.rkey &&
		       a->reth.dma_len == b->reth.dma_len),
	      "RETH");
	FIELD(!(oi->hdrs & UROCE_HDR_ATOMICETH) ||
		      (a->atomiceth.va == b->atomiceth.va &&
		       a->atomiceth.rkey == b->atomiceth.rkey &&
		       a->atomiceth.swap_add == b->atomiceth.swap_add &&
		       a->atomiceth.compare == b->atomiceth.compare),
	      "AtomicETH");
	FIELD(!(oi->hdrs & UROCE_HDR_IMMDT) || a->imm == b->imm, "ImmDt");
	FIELD(!(oi->hdrs & UROCE_HDR_IETH) || a->ieth_rkey == b->ieth_rkey, "IETH");
	FIELD(u->payload_len == x->payload_len, "payload length");
	FIELD(memcmp(u->payload, x->payload, x->payload_len) == 0, "payload bytes");
	FIELD(a->bth.pad == b->bth.pad, "pad count");
	FIELD(a->bth.se == b->bth.se, "SE");
	FIELD(a->bth.mig == b->bth.mig, "MigReq");
	FIELD(a->bth.tver == b->bth.tver, "TVer");
	FIELD(a->bth.pkey == b->bth.pkey, "P_Key");
	FIELD(a->bth.resv8a == b->bth.resv8a, "BTH FECN/BECN/reserved");
	FIELD(a->bth.resv7 == b->bth.resv7, "BTH reserved 7 bits");
	FIELD(memcmp(a->eth_src, b->eth_src, 6) == 0, "Ethernet source");
	FIELD(memcmp(a->eth_dst, b->eth_dst, 6) == 0, "Ethernet destination");
	FIELD(a->vlan == b->vlan, "VLAN");
	FIELD(a->ip_version == b->ip_version, "IP version");
	FIELD(memcmp(a->ip_src, b->ip_src, 16) == 0, "IP source");
	FIELD(memcmp(a->ip_dst, b->ip_dst, 16) == 0, "IP destination");
	FIELD(a->ip_tos == b->ip_tos, "IP TOS");
	FIELD(a->ip_ttl == b->ip_ttl, "IP TTL");
	FIELD(a->ip_df == b->ip_df, "IP DF");
	FIELD(a->udp_csum == b->udp_csum, "UDP checksum");
	FIELD(u->pkt_len == x->pkt_len, "frame length");
#undef FIELD
	return true;
}

/* ---- a uroce endpoint whose frames are kept ----------------------------------------------- */

struct frame {
	uint8_t *d;
	uint32_t len;
};

struct ep {
	struct frame *out;
	uint32_t nout, capout;
	struct uroce_tp_dev *dev;
	struct uroce_tp_pd *pd;
	struct uroce_tp_cq *scq, *rcq;
	struct uroce_tp_qp *qp;
	uint32_t qpn;
};

static int ep_tx(void *ctx, const uint8_t *frame, uint32_t len)
{
	struct ep *e = ctx;

	if (e->nout == e->capout) {
		e->capout = e->capout ? 2 * e->capout : 256;
		e->out = realloc(e->out, e->capout * sizeof(*e->out));
		cr_assert_not_null(e->out);
	}
	e->out[e->nout].d = malloc(len);
	cr_assert_not_null(e->out[e->nout].d);
	memcpy(e->out[e->nout].d, frame, len);
	e->out[e->nout++].len = len;
	return 0;
}

static void ep_create(struct ep *e, const uint8_t mac[6], const uint8_t ip[4],
		      uint32_t max_send_wr, uint32_t max_recv_wr, int cqe)
{
	struct uroce_tp_dev_cfg cfg;
	struct uroce_tp_qp_init init;

	memset(e, 0, sizeof(*e));
	uroce_tp_dev_cfg_init(&cfg);
	memcpy(cfg.mac, mac, 6);
	uroce_gid_from_ipv4(cfg.gid[0].raw, ip);
	cfg.gid_count = 1;
	cfg.tx = ep_tx;
	cfg.io_ctx = e;
	/* rxe's responder ACKs only packets with AckReq set: no coalescing timer, no count. */
	cfg.ack_coalesce = UINT32_MAX;
	e->dev = uroce_tp_dev_create(&cfg);
	cr_assert_not_null(e->dev);
	e->pd = uroce_tp_alloc_pd(e->dev);
	e->scq = uroce_tp_create_cq(e->dev, cqe);
	e->rcq = uroce_tp_create_cq(e->dev, cqe);
	cr_assert(e->pd && e->scq && e->rcq);
	memset(&init, 0, sizeof(init));
	init.qp_type = IBV_QPT_RC;
	init.send_cq = e->scq;
	init.recv_cq = e->rcq;
	init.cap.max_send_wr = max_send_wr;
	init.cap.max_recv_wr = max_recv_wr;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	e->qp = uroce_tp_create_qp(e->pd, &init);
	cr_assert_not_null(e->qp);
	e->qpn = uroce_tp_qp_num(e->qp);
}

struct conn {
	enum ibv_mtu mtu;
	uint32_t dest_qpn;
	const uint8_t *peer_ip, *peer_mac;
	uint32_t rq_psn, sq_psn;
	uint8_t min_rnr_timer;
	uint8_t max_dest_rd_atomic, max_rd_atomic;
	uint8_t timeout;
};

static void ep_connect(struct ep *e, const struct conn *c)
{
	struct ibv_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags =
		IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	rc = uroce_tp_modify_qp(
		e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		NULL, NOW_BASE);
	cr_assert_eq(rc, 0);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = c->mtu;
	a.dest_qp_num = c->dest_qpn;
	a.rq_psn = c->rq_psn;
	a.max_dest_rd_atomic = c->max_dest_rd_atomic;
	a.min_rnr_timer = c->min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	uroce_gid_from_ipv4(a.ah_attr.grh.dgid.raw, c->peer_ip);
	a.ah_attr.grh.hop_limit = 64;
	rc = uroce_tp_modify_qp(e->qp, &a,
				IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					IBV_QP_MIN_RNR_TIMER,
				c->peer_mac, NOW_BASE);
	cr_assert_eq(rc, 0);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = c->sq_psn;
	a.timeout = c->timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = c->max_rd_atomic;
	rc = uroce_tp_modify_qp(e->qp, &a,
				IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
				NULL, NOW_BASE);
	cr_assert_eq(rc, 0);
}

static void ep_destroy(struct ep *e)
{
	for (uint32_t i = 0; i < e->nout; i++)
		free(e->out[i].d);
	free(e->out);
	uroce_tp_dev_destroy(e->dev);
	memset(e, 0, sizeof(*e));
}

/* Re-addresses a captured request (or response) to a uroce QP and feeds it in. */
static void feed(struct ep *e, const struct pkt *k, uint32_t rkey, bool set_rkey, uint64_t now)
{
	struct uroce_wire_hdr h = k->p.hdr;
	uint8_t buf[UROCE_HDR_MAX + 4096 + 4 + UROCE_ICRC_LEN];
	const struct uroce_opcode_info *oi = uroce_opcode_info(h.bth.opcode);
	uint32_t len;

	h.bth.dqpn = e->qpn;
	if (set_rkey && (oi->hdrs & UROCE_HDR_RETH))
		h.reth.rkey = rkey;
	if (set_rkey && (oi->hdrs & UROCE_HDR_ATOMICETH))
		h.atomiceth.rkey = rkey;
	len = uroce_wire_build(buf, sizeof(buf), &h, k->p.payload, k->p.payload_len);
	cr_assert_eq(len, k->p.pkt_len, "#%u: rebuilt frame of %u bytes, captured %u", k->no, len,
		     k->p.pkt_len);
	uroce_tp_rx(e->dev, buf, len, now);
	uroce_tp_process(e->dev, now);
}

static void check_counters(const struct ep *e, const char *file)
{
	const struct uroce_tp_counters *c = uroce_tp_counters(e->dev);

	cr_expect_eq(c->rcvd_malformed, 0, "%s: %" PRIu64 " malformed", file, c->rcvd_malformed);
	cr_expect_eq(c->rcvd_icrc_err, 0, "%s: %" PRIu64 " ICRC errors", file, c->rcvd_icrc_err);
	cr_expect_eq(c->rcvd_unknown_qp, 0, "%s: %" PRIu64 " unknown QP", file, c->rcvd_unknown_qp);
	cr_expect_eq(c->rcvd_wrong_opcode, 0, "%s: %" PRIu64 " wrong opcode", file,
		     c->rcvd_wrong_opcode);
	cr_expect_eq(uroce_tp_qp_state(e->qp), IBV_QPS_RTS, "%s: QP left RTS", file);
}

/* ---- responder agreement ------------------------------------------------------------------ */

struct resp_opts {
	const char *file;
	/* Some responses rxe sent are not in the capture (READ responses lost on the way):
	 * rxe's responses are then a subsequence of uroce's, matched by opcode and PSN. */
	bool lost_responses;
	/* Receive WQEs appear exactly when rxe had one: a request rxe answered with an RNR
	 * NAK finds none, any other that needs one finds one. */
	bool rnr;
};

struct exp_wc {
	enum ibv_wc_opcode opcode;
	uint32_t byte_len;
	bool imm;
	uint32_t imm_data;
	uint8_t *data;
	uint32_t no; /* capture frame that completed it */
};

/* What the responder should have done: which requests executed, memory, completions. */
struct model {
	uint32_t psn;     /* expected PSN */
	uint8_t *img;     /* expected memory, [iova, iova + len) */
	uint64_t iova, len;
	uint64_t wr_va;   /* the WRITE in progress */
	uint32_t wr_len;
	uint8_t *msg;     /* the SEND in progress */
	uint32_t msg_len, msg_cap;
	struct exp_wc *wc;
	uint32_t nwc;
};

static uint8_t *img_at(struct model *m, uint64_t va, uint64_t len, uint32_t no)
{
	cr_assert(va >= m->iova && va + len <= m->iova + m->len,
		  "#%u: va 0x%" PRIx64 " outside the MR", no, va);
	return m->img + (va - m->iova);
}

static void model_exec(struct model *m, const struct pkt *k, uint32_t mtu)
{
	const struct uroce_wire_hdr *h = &k->p.hdr;

	if (k->f & UROCE_OPF_SEND) {
		if (m->msg_len + k->p.payload_len > m->msg_cap) {
			m->msg_cap = 2 * (m->msg_len + k->p.payload_len);
			m->msg = realloc(m->msg, m->msg_cap);
			cr_assert_not_null(m->msg);
		}
		memcpy(m->msg + m->msg_len, k->p.payload, k->p.payload_len);
		m->msg_len += k->p.payload_len;
	} else if (k->f & UROCE_OPF_WRITE) {
		if (k->f & UROCE_OPF_FIRST) {
			m->wr_va = h->reth.va;
			m->wr_len = h->reth.dma_len;
		}
		memcpy(img_at(m, m->wr_va, k->p.payload_len, k->no), k->p.payload,
		       k->p.payload_len);
		m->wr_va += k->p.payload_len;
	} else if (k->f & UROCE_OPF_ATOMIC) {
		uint64_t v;
		uint8_t *p = img_at(m, h->atomiceth.va, 8, k->no);

		memcpy(&v, p, 8);
		if (UROCE_OPCODE_OP(h->bth.opcode) == UROCE_OP_COMPARE_SWAP)
			v = v == h->atomiceth.compare ? h->atomiceth.swap_add : v;
		else
			v += h->atomiceth.swap_add;
		memcpy(p, &v, 8);
	}
	if ((k->f & UROCE_OPF_LAST) &&
	    ((k->f & UROCE_OPF_SEND) || ((k->f & UROCE_OPF_WRITE) && (k->f & UROCE_OPF_IMM)))) {
		struct exp_wc *w;

		m->wc = realloc(m->wc, (m->nwc + 1) * sizeof(*m->wc));
		cr_assert_not_null(m->wc);
		w = &m->wc[m->nwc++];
		memset(w, 0, sizeof(*w));
		w->no = k->no;
		w->imm = (k->f & UROCE_OPF_IMM) != 0;
		w->imm_data = h->imm;
		if (k->f & UROCE_OPF_SEND) {
			w->opcode = IBV_WC_RECV;
			w->byte_len = m->msg_len;
			w->data = malloc(m->msg_len + 1);
			cr_assert_not_null(w->data);
			memcpy(w->data, m->msg, m->msg_len);
		} else {
			w->opcode = IBV_WC_RECV_RDMA_WITH_IMM;
			w->byte_len = m->wr_len; /* the WRITE's length, as rxe reports it */
		}
	}
	if (k->f & UROCE_OPF_LAST)
		m->msg_len = 0;
	m->psn = uroce_psn_add(m->psn, (int32_t)req_npsn(k, mtu));
}

static bool is_rnr_nak(const struct pkt *k)
{
	return UROCE_OPCODE_OP(k->p.hdr.bth.opcode) == UROCE_OP_ACKNOWLEDGE &&
	       uroce_aeth_type(k->p.hdr.aeth.syndrome) == UROCE_AETH_RNR_NAK;
}

static bool is_seq_nak(const struct pkt *k)
{
	return UROCE_OPCODE_OP(k->p.hdr.bth.opcode) == UROCE_OP_ACKNOWLEDGE &&
	       k->p.hdr.aeth.syndrome == uroce_aeth_nak(UROCE_NAK_PSN_SEQ_ERR);
}

/* The latest request before capture position @before of kind @opf whose PSNs hold @psn. */
static const struct pkt *request_for(const struct cap *c, const struct flow *fl, uint32_t before,
				     uint16_t opf, uint32_t psn, uint32_t mtu)
{
	const struct pkt *best = NULL;

	for (uint32_t i = 0; i < fl->nreq && fl->req[i] < before; i++) {
		const struct pkt *q = &c->v[fl->req[i]];
		int32_t d = uroce_psn_diff(psn, q->p.hdr.bth.psn);

		if ((q->f & opf) && d >= 0 && d < (int32_t)req_npsn(q, mtu))
			best = q;
	}
	return best;
}

struct mem_range {
	uint64_t lo, hi;
};

static void range_add(struct mem_range *r, uint64_t va, uint64_t len)
{
	if (va < r->lo)
		r->lo = va;
	if (va + len > r->hi)
		r->hi = va + len;
}

static void replay_flow(const struct cap *c, const struct flow *fl, const struct resp_opts *o)
{
	const struct pkt **exp = calloc(fl->nrsp + 1, sizeof(*exp));
	uint32_t mtu = flow_mtu(c, fl), nexp = 0, rxe_extra_naks = 0, skipped = 0;
	uint32_t first_psn = c->v[fl->req[0]].p.hdr.bth.psn;
	struct mem_range r = {UINT64_MAX, 0};
	uint32_t nslots = 0, slot_sz = 64, posted = 0, lkey, rkey, rlkey, rrkey, cur = 0;
	uint8_t min_rnr_timer = 0, *mem, *rbuf, *filled;
	struct uroce_tp_mr *mr, *rmr;
	struct model m;
	struct ep e;
	char tag[96];

	cr_assert_not_null(exp);
	snprintf(tag, sizeof(tag), "%s (requests from %u.%u.%u.%u to QP 0x%x)", c->file,
		 fl->req_ip[0], fl->req_ip[1], fl->req_ip[2], fl->req_ip[3], fl->resp_qpn);

	/* rxe's responses, in order; rxe's extra NAK after an RNR NAK is not uroce's policy
	 * (see the top of the file). */
	for (uint32_t j = 0; j < fl->nrsp; j++) {
		const struct pkt *k = &c->v[fl->rsp[j]];

		if (is_rnr_nak(k) && min_rnr_timer == 0)
			min_rnr_timer = uroce_aeth_value(k->p.hdr.aeth.syndrome);
		if (nexp > 0 && is_seq_nak(k) && is_rnr_nak(exp[nexp - 1]) &&
		    exp[nexp - 1]->p.hdr.bth.psn == k->p.hdr.bth.psn) {
			rxe_extra_naks++;
			continue;
		}
		exp[nexp++] = k;
	}

	/* The memory the requests reach, and the receive buffers they need. */
	for (uint32_t i = 0; i < fl->nreq; i++) {
		const struct pkt *k = &c->v[fl->req[i]];
		const struct uroce_wire_hdr *h = &k->p.hdr;

		if (k->f & UROCE_OPF_ATOMIC)
			range_add(&r, h->atomiceth.va, 8);
		else if (uroce_opcode_info(h->bth.opcode)->hdrs & UROCE_HDR_RETH)
			range_add(&r, h->reth.va, h->reth.dma_len);
		if (k->f & UROCE_OPF_RWQE) /* SEND FIRST/ONLY, WRITE LAST/ONLY with immediate */
			nslots++;
		if ((k->f & UROCE_OPF_SEND) && (k->f & UROCE_OPF_FIRST)) {
			uint32_t len = 0;

			for (uint32_t j = i; j < fl->nreq; j++) {
				const struct pkt *q = &c->v[fl->req[j]];

				len += q->p.payload_len;
				if (q->f & UROCE_OPF_LAST)
					break;
			}
			if (len > slot_sz)
				slot_sz = (len + 63) & ~63u;
		}
	}
	if (r.hi == 0)
		r.lo = 0x10000, r.hi = 0x10040; /* SENDs only: an MR anyway */
	cr_assert_lt(r.hi - r.lo, 64ull << 20, "%s: requests span %" PRIu64 " bytes", tag,
		     r.hi - r.lo);
	mem = calloc(1, r.hi - r.lo);
	filled = calloc(1, r.hi - r.lo);
	rbuf = calloc(nslots ? nslots : 1, slot_sz);
	cr_assert(mem && filled && rbuf);

	/* Memory as rxe's responder had it: READ data, then atomic originals. */
	for (uint32_t j = 0; j < fl->nrsp; j++) {
		const struct pkt *k = &c->v[fl->rsp[j]];
		const struct pkt *q;
		uint64_t va;

		if (k->f & UROCE_OPF_READ) {
			q = request_for(c, fl, fl->rsp[j], UROCE_OPF_READ, k->p.hdr.bth.psn, mtu);
			cr_assert_not_null(q, "%s #%u: READ response to no READ request", tag,
					   k->no);
			va = q->p.hdr.reth.va +
			     (uint64_t)uroce_psn_diff(k->p.hdr.bth.psn, q->p.hdr.bth.psn) * mtu;
			cr_assert(va >= r.lo && va + k->p.payload_len <= r.hi);
			for (uint32_t b = 0; b < k->p.payload_len; b++) {
				uint64_t off = va - r.lo + b;

				cr_assert(!filled[off] || mem[off] == k->p.payload[b],
					  "%s #%u: READ data at 0x%" PRIx64
					  " differs from an earlier response's",
					  tag, k->no, va + b);
				mem[off] = k->p.payload[b];
				filled[off] = 1;
			}
		} else if (k->f & UROCE_OPF_ATOMIC) {
			q = request_for(c, fl, fl->rsp[j], UROCE_OPF_ATOMIC, k->p.hdr.bth.psn, mtu);
			cr_assert_not_null(q, "%s #%u: ATOMIC ACK to no atomic request", tag,
					   k->no);
			va = q->p.hdr.atomiceth.va;
			if (!filled[va - r.lo]) {
				/* uroce keeps the 64-bit value in host order, as a CPU atomic
				 * would */
				memcpy(mem + (va - r.lo), &k->p.hdr.atomic_orig, 8);
				memset(filled + (va - r.lo), 1, 8);
			}
		}
	}

	memset(&m, 0, sizeof(m));
	m.psn = first_psn;
	m.iova = r.lo;
	m.len = r.hi - r.lo;
	m.img = malloc(m.len);
	cr_assert_not_null(m.img);
	memcpy(m.img, mem, m.len);

	ep_create(&e, fl->resp_mac, fl->resp_ip, 16, nslots ? nslots : 1, (int)(nslots + 16));
	ep_connect(&e, &(struct conn){.mtu = mtu_enum(mtu),
				      .dest_qpn = fl->req_qpn,
				      .peer_ip = fl->req_ip,
				      .peer_mac = fl->req_mac,
				      .rq_psn = first_psn,
				      .sq_psn = 0,
				      .min_rnr_timer = min_rnr_timer,
				      /* rxe's responder had more than 16 READs to remember:
				       * loss_read_retry re-reads one 20 READs back. perftest
				       * asks for the device maximum (rxe: 128). */
				      .max_dest_rd_atomic = UROCE_TP_MAX_RD_ATOMIC,
				      .max_rd_atomic = 16,
				      .timeout = 14});
	mr = uroce_tp_reg_mr(e.pd, r.lo, mem, r.hi - r.lo,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	rmr = uroce_tp_reg_mr(e.pd, (uint64_t)(uintptr_t)rbuf, rbuf,
			      (uint64_t)(nslots ? nslots : 1) * slot_sz, IBV_ACCESS_LOCAL_WRITE);
	cr_assert(mr && rmr);
	uroce_tp_mr_keys(mr, &lkey, &rkey);
	uroce_tp_mr_keys(rmr, &rlkey, &rrkey);

#define POST_RECV()                                                                            \
	do {                                                                                   \
		struct uroce_tp_recv_wqe w = {.wr_id = posted, .num_sge = 1};                  \
		cr_assert_lt(posted, nslots, "%s: more receive WQEs than SEND messages", tag); \
		w.sg_list[0].addr = (uint64_t)(uintptr_t)(rbuf + (size_t)posted * slot_sz);     \
		w.sg_list[0].length = slot_sz;                                                 \
		w.sg_list[0].lkey = rlkey;                                                     \
		cr_assert_eq(uroce_tp_post_recv(e.qp, &w), 0);                                 \
		posted++;                                                                      \
	} while (0)

	if (!o->rnr)
		while (posted < nslots)
			POST_RECV();

	/* The replay. */
	for (uint32_t i = 0; i < fl->nreq; i++) {
		const struct pkt *k = &c->v[fl->req[i]];
		bool in_seq = k->p.hdr.bth.psn == m.psn, rnr_here = false;

		if (o->rnr && in_seq && (k->f & UROCE_OPF_RWQE)) {
			/* rxe's answer to this packet is the next response it sent. */
			rnr_here = e.nout < nexp && is_rnr_nak(exp[e.nout]) &&
				   exp[e.nout]->p.hdr.bth.psn == k->p.hdr.bth.psn;
			if (!rnr_here)
				POST_RECV();
		}
		feed(&e, k, rkey, true, NOW_BASE + k->ts);
		if (in_seq && !rnr_here)
			model_exec(&m, k, mtu);
	}
#undef POST_RECV

	/* The responses, in order. */
	for (uint32_t i = 0; i < e.nout; i++) {
		struct uroce_wire_pkt u;
		char du[320], dx[320], why[64];
		const struct pkt *x;

		cr_assert_eq(uroce_wire_parse(e.out[i].d, e.out[i].len, &u), UROCE_WIRE_OK);
		cr_assert_eq(uroce_wire_icrc_check(&u), UROCE_WIRE_OK);
		describe(&u, du, sizeof(du));
		cr_assert(uroce_opcode_info(u.hdr.bth.opcode)->flags & UROCE_OPF_RESP,
			  "%s: uroce sent a request: %s", tag, du);
		cr_assert_eq(u.hdr.udp_sport, uroce_udp_sport_connected(0, e.qpn, fl->req_qpn),
			     "%s: uroce response %u: source port %u, formula %u", tag, i,
			     u.hdr.udp_sport, uroce_udp_sport_connected(0, e.qpn, fl->req_qpn));
		if (cur == nexp) {
			cr_assert(o->lost_responses,
				  "%s: uroce response %u has no rxe counterpart: %s", tag, i, du);
			skipped++;
			cr_log_info("%s: uroce response %u not in the capture (lost there): %s",
				    tag, i, du);
			continue;
		}
		x = exp[cur];
		describe(&x->p, dx, sizeof(dx));
		if (o->lost_responses && (u.hdr.bth.opcode != x->p.hdr.bth.opcode ||
					  u.hdr.bth.psn != x->p.hdr.bth.psn)) {
			skipped++;
			cr_log_info("%s: uroce response %u not in the capture (lost there): %s",
				    tag, i, du);
			continue;
		}
		cr_assert(
			same_pkt(&u, &x->p, why, sizeof(why)),
			"%s: response %u differs in %s\n  uroce:           %s\n  rxe (frame #%u): "
			"%s",
			tag, cur, why, du, x->no, dx);
		cr_assert_eq(x->p.hdr.udp_sport,
			     uroce_udp_sport_connected(0, fl->resp_qpn, fl->req_qpn),
			     "%s #%u: rxe's source port %u is not the formula's %u", tag, x->no,
			     x->p.hdr.udp_sport,
			     uroce_udp_sport_connected(0, fl->resp_qpn, fl->req_qpn));
		cur++;
	}
	if (cur < nexp) {
		char dx[320];

		describe(&exp[cur]->p, dx, sizeof(dx));
		cr_assert_fail("%s: uroce sent %u responses; rxe's response %u of %u has no match "
			       "(frame #%u: %s)",
			       tag, e.nout, cur, nexp, exp[cur]->no, dx);
	}
	if (o->lost_responses)
		cr_assert_lt(skipped * 10, e.nout,
			     "%s: %u of %u uroce responses not in the capture", tag, skipped,
			     e.nout);
	else
		cr_assert_eq(skipped, 0);

	/* Memory: WRITE data landed, atomics applied once each, READs changed nothing. */
	for (uint64_t off = 0; off < m.len; off++)
		if (mem[off] != m.img[off])
			cr_assert_fail("%s: memory at 0x%" PRIx64 " is 0x%02x, expected 0x%02x",
				       tag, m.iova + off, mem[off], m.img[off]);

	/* Receive completions: SENDs and WRITEs with immediate, in order, with their data. */
	for (uint32_t w = 0; w < m.nwc; w++) {
		struct ibv_wc wc;
		const struct exp_wc *x = &m.wc[w];

		cr_assert_eq(uroce_tp_poll_cq(e.rcq, 1, &wc), 1,
			     "%s: %u receive completions, expected %u", tag, w, m.nwc);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s: completion %u: status %d", tag, w,
			     wc.status);
		cr_assert_eq(wc.wr_id, w);
		cr_assert_eq(wc.opcode, x->opcode,
			     "%s: completion %u (frame #%u): opcode %d, expected %d", tag, w, x->no,
			     wc.opcode, x->opcode);
		cr_assert_eq(wc.byte_len, x->byte_len,
			     "%s: completion %u (frame #%u): %u bytes, expected %u", tag, w, x->no,
			     wc.byte_len, x->byte_len);
		cr_assert_eq(!!(wc.wc_flags & IBV_WC_WITH_IMM), x->imm);
		if (x->imm)
			cr_assert_eq(ntohl(wc.imm_data), x->imm_data);
		cr_assert_eq(wc.qp_num, e.qpn);
		cr_assert_eq(wc.src_qp, fl->req_qpn);
		if (x->data)
			cr_assert(memcmp(rbuf + (size_t)w * slot_sz, x->data, x->byte_len) == 0,
				  "%s: completion %u (frame #%u): received bytes differ", tag, w,
				  x->no);
	}
	{
		struct ibv_wc wc;

		cr_assert_eq(uroce_tp_poll_cq(e.rcq, 1, &wc), 0,
			     "%s: more receive completions than "
			     "the model's %u",
			     tag, m.nwc);
	}
	if (o->rnr)
		cr_assert_eq(posted, m.nwc, "%s: %u receive WQEs posted, %u used", tag, posted,
			     m.nwc);
	check_counters(&e, tag);

	cr_log_info(
		"%s: %u requests, %u rxe responses matched%s; %u uroce responses not in the "
		"capture; %u rxe NAKs after an RNR NAK set aside; %u receive completions; MTU %u",
		tag, fl->nreq, nexp, o->lost_responses ? " (by opcode and PSN)" : "", skipped,
		rxe_extra_naks, m.nwc, mtu);

	ep_destroy(&e);
	for (uint32_t w = 0; w < m.nwc; w++)
		free(m.wc[w].data);
	free(m.wc);
	free(m.msg);
	free(m.img);
	free(mem);
	free(filled);
	free(rbuf);
	free(exp);
}

static void replay_responder(const struct resp_opts *o)
{
	struct flow fl[MAX_FLOWS];
	struct cap c;
	int nf;

	cap_load(&c, o->file);
	nf = find_flows(&c, fl);
	cr_assert_gt(nf, 0, "%s: no RC requests", o->file);
	for (int j = 0; j < nf; j++) {
		cr_assert_gt(fl[j].nrsp, 0, "%s: flow %d has no responses", o->file, j);
		replay_flow(&c, &fl[j], o);
	}
	flows_free(fl, nf);
	cap_free(&c);
}

Test(rxe_replay, responder_rdma_write)
{
	replay_responder(&(struct resp_opts){.file = "rdma_write.pcap"});
}
Test(rxe_replay, responder_rdma_write_small)
{
	replay_responder(&(struct resp_opts){.file = "rdma_write_small.pcap"});
}
Test(rxe_replay, responder_rdma_write_imm)
{
	replay_responder(&(struct resp_opts){.file = "rdma_write_imm.pcap"});
}
Test(rxe_replay, responder_rdma_write_imm_only)
{
	replay_responder(&(struct resp_opts){.file = "rdma_write_imm_only.pcap"});
}
Test(rxe_replay, responder_rc_send)
{
	replay_responder(&(struct resp_opts){.file = "rc_send.pcap"});
}
Test(rxe_replay, responder_rc_send_only)
{
	replay_responder(&(struct resp_opts){.file = "rc_send_only.pcap"});
}
Test(rxe_replay, responder_send_imm)
{
	replay_responder(&(struct resp_opts){.file = "send_imm.pcap"});
}
Test(rxe_replay, responder_rdma_read)
{
	replay_responder(&(struct resp_opts){.file = "rdma_read.pcap"});
}
Test(rxe_replay, responder_rdma_read_small)
{
	replay_responder(&(struct resp_opts){.file = "rdma_read_small.pcap"});
}
Test(rxe_replay, responder_atomic_fadd)
{
	replay_responder(&(struct resp_opts){.file = "atomic_fadd.pcap"});
}
Test(rxe_replay, responder_atomic_cswap)
{
	replay_responder(&(struct resp_opts){.file = "atomic_cswap.pcap"});
}
/* Requests lost before rxe's responder: the capture holds what it received. The whole
 * ACK/NAK sequence must match. */
Test(rxe_replay, responder_loss_write_nak)
{
	replay_responder(&(struct resp_opts){.file = "loss_write_nak.pcap"});
}
Test(rxe_replay, responder_rnr_nak)
{
	replay_responder(&(struct resp_opts){.file = "rnr_nak.pcap", .rnr = true});
}
/* READ responses lost after rxe's responder sent them: they are missing from the capture;
 * duplicate READs are executed again from the PSN they name. */
Test(rxe_replay, responder_loss_read_retry)
{
	replay_responder(
		&(struct resp_opts){.file = "loss_read_retry.pcap", .lost_responses = true});
}

/* ---- requester agreement ------------------------------------------------------------------ */

struct msg {
	struct uroce_tp_send_wqe wqe;
	uint32_t first_psn, length;
	uint16_t f;   /* flags of the first packet */
	uint8_t *local; /* the local buffer in the MR */
};

static void requester_flow(const struct cap *c, const struct flow *fl)
{
	struct msg *msgs = NULL;
	uint32_t nmsgs = 0, nfirst = 0, mtu, first_psn, lkey, rkey, total = 0, seen_last = 0;
	const struct pkt **first;
	struct uroce_tp_mr *mr;
	uint8_t *buf;
	struct ep e;
	char tag[96];

	first = calloc(fl->nreq, sizeof(*first));
	cr_assert_not_null(first);
	mtu = flow_mtu(c, fl);
	first_psn = c->v[fl->req[0]].p.hdr.bth.psn;
	snprintf(tag, sizeof(tag), "%s (requester %u.%u.%u.%u)", c->file, fl->req_ip[0],
		 fl->req_ip[1], fl->req_ip[2], fl->req_ip[3]);

	/* The first transmission of every request packet: rxe's requester retransmits after
	 * its timer fired (rc_send.pcap: one SEND sent twice); uroce, without a timer here,
	 * sends each once. */
	for (uint32_t i = 0; i < fl->nreq; i++) {
		const struct pkt *k = &c->v[fl->req[i]];

		if (nfirst > 0 && !uroce_psn_after(k->p.hdr.bth.psn, seen_last)) {
			cr_log_info("%s #%u: PSN 0x%06x again, rxe's retransmission: not compared",
				    tag, k->no, k->p.hdr.bth.psn);
			continue;
		}
		seen_last = uroce_psn_add(k->p.hdr.bth.psn, (int32_t)req_npsn(k, mtu) - 1);
		first[nfirst++] = k;
	}

	/* The work requests: one per message, in PSN order. */
	for (uint32_t i = 0; i < nfirst; i++) {
		const struct pkt *k = first[i];
		const struct uroce_wire_hdr *h = &k->p.hdr;
		struct msg *s;

		if (k->f & UROCE_OPF_FIRST) {
			msgs = realloc(msgs, (nmsgs + 1) * sizeof(*msgs));
			cr_assert_not_null(msgs);
			s = &msgs[nmsgs++];
			memset(s, 0, sizeof(*s));
			s->first_psn = h->bth.psn;
			s->f = k->f;
			s->wqe.wr_id = nmsgs - 1;
			s->wqe.send_flags = IBV_SEND_SIGNALED;
			s->wqe.num_sge = 1;
			if (k->f & UROCE_OPF_READ) {
				s->wqe.opcode = IBV_WR_RDMA_READ;
				s->length = h->reth.dma_len;
			} else if (k->f & UROCE_OPF_ATOMIC) {
				bool cs = UROCE_OPCODE_OP(h->bth.opcode) == UROCE_OP_COMPARE_SWAP;

				s->wqe.opcode = cs ? IBV_WR_ATOMIC_CMP_AND_SWP :
						     IBV_WR_ATOMIC_FETCH_AND_ADD;
				s->wqe.compare_add =
					cs ? h->atomiceth.compare : h->atomiceth.swap_add;
				s->wqe.swap = cs ? h->atomiceth.swap_add : 0;
				s->length = 8;
			} else if (k->f & UROCE_OPF_WRITE) {
				s->wqe.opcode = IBV_WR_RDMA_WRITE;
			} else {
				s->wqe.opcode = IBV_WR_SEND;
			}
			if (k->f & (UROCE_OPF_READ | UROCE_OPF_ATOMIC | UROCE_OPF_WRITE)) {
				bool at = k->f & UROCE_OPF_ATOMIC;

				s->wqe.remote_addr = at ? h->atomiceth.va : h->reth.va;
				s->wqe.rkey = at ? h->atomiceth.rkey : h->reth.rkey;
			}
		}
		cr_assert_gt(nmsgs, 0, "%s #%u: a message without its first packet", tag, k->no);
		s = &msgs[nmsgs - 1];
		if (k->f & (UROCE_OPF_SEND | UROCE_OPF_WRITE)) {
			s->length += k->p.payload_len;
			if (k->f & UROCE_OPF_LAST) {
				if (k->f & UROCE_OPF_IMM) {
					s->wqe.opcode = (k->f & UROCE_OPF_SEND) ?
								IBV_WR_SEND_WITH_IMM :
								IBV_WR_RDMA_WRITE_WITH_IMM;
					s->wqe.imm_data = h->imm;
				}
				if (h->bth.se)
					s->wqe.send_flags |= IBV_SEND_SOLICITED;
			}
		}
	}
	for (uint32_t i = 0; i < nmsgs; i++)
		total += (msgs[i].length + 7) & ~7u;
	buf = calloc(1, total + 8);
	cr_assert_not_null(buf);

	ep_create(&e, fl->req_mac, fl->req_ip, nmsgs, 1, (int)nmsgs + 16);
	/* No retransmission timer: rxe's responses are fed back as they came, whatever the
	 * time between them. */
	ep_connect(&e, &(struct conn){.mtu = mtu_enum(mtu),
				      .dest_qpn = fl->resp_qpn,
				      .peer_ip = fl->resp_ip,
				      .peer_mac = fl->resp_mac,
				      .rq_psn = 0,
				      .sq_psn = first_psn,
				      .max_dest_rd_atomic = 16,
				      .max_rd_atomic = UROCE_TP_MAX_RD_ATOMIC,
				      .timeout = 0});
	mr = uroce_tp_reg_mr(e.pd, (uint64_t)(uintptr_t)buf, buf, total + 8,
			     IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(mr);
	uroce_tp_mr_keys(mr, &lkey, &rkey);

	/* Local data: what the messages carried. */
	{
		uint32_t off = 0;
		int mi = -1;

		for (uint32_t i = 0; i < nmsgs; i++) {
			msgs[i].local = buf + off;
			msgs[i].wqe.sg_list[0].addr = (uint64_t)(uintptr_t)(buf + off);
			msgs[i].wqe.sg_list[0].length = msgs[i].length;
			msgs[i].wqe.sg_list[0].lkey = lkey;
			off += (msgs[i].length + 7) & ~7u;
		}
		for (uint32_t i = 0, at = 0; i < nfirst; i++) {
			const struct pkt *k = first[i];

			if (k->f & UROCE_OPF_FIRST) {
				mi++;
				at = 0;
			}
			if (k->f & (UROCE_OPF_SEND | UROCE_OPF_WRITE)) {
				memcpy(msgs[mi].local + at, k->p.payload, k->p.payload_len);
				at += k->p.payload_len;
			}
		}
	}
	for (uint32_t i = 0; i < nmsgs; i++)
		cr_assert_eq(uroce_tp_post_send(e.qp, &msgs[i].wqe, NOW_BASE), 0);
	uroce_tp_process(e.dev, NOW_BASE);
	for (uint32_t j = 0; j < fl->nrsp; j++) {
		const struct pkt *k = &c->v[fl->rsp[j]];

		feed(&e, k, 0, false, NOW_BASE + k->ts);
	}

	/* The requests, in order. */
	cr_assert_eq(e.nout, nfirst, "%s: uroce sent %u requests, rxe %u", tag, e.nout, nfirst);
	for (uint32_t i = 0; i < e.nout; i++) {
		const struct pkt *x = first[i];
		struct uroce_wire_pkt u;
		char du[320], dx[320], why[64];

		cr_assert_eq(uroce_wire_parse(e.out[i].d, e.out[i].len, &u), UROCE_WIRE_OK);
		cr_assert_eq(uroce_wire_icrc_check(&u), UROCE_WIRE_OK);
		describe(&u, du, sizeof(du));
		describe(&x->p, dx, sizeof(dx));
		cr_assert(
			same_pkt(&u, &x->p, why, sizeof(why)),
			"%s: request %u differs in %s\n  uroce:           %s\n  rxe (frame #%u): "
			"%s",
			tag, i, why, du, x->no, dx);
		cr_assert_eq(u.hdr.udp_sport, uroce_udp_sport_connected(0, e.qpn, fl->resp_qpn),
			     "%s: request %u: source port %u, formula %u", tag, i, u.hdr.udp_sport,
			     uroce_udp_sport_connected(0, e.qpn, fl->resp_qpn));
		cr_assert_eq(x->p.hdr.udp_sport,
			     uroce_udp_sport_connected(0, fl->req_qpn, fl->resp_qpn),
			     "%s #%u: rxe's source port %u is not the formula's %u", tag, x->no,
			     x->p.hdr.udp_sport,
			     uroce_udp_sport_connected(0, fl->req_qpn, fl->resp_qpn));
	}

	/* Every work request completed, READ data and atomic originals as rxe sent them. */
	for (uint32_t i = 0; i < nmsgs; i++) {
		struct ibv_wc wc;

		cr_assert_eq(uroce_tp_poll_cq(e.scq, 1, &wc), 1, "%s: %u of %u send completions",
			     tag, i, nmsgs);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s: WR %u: status %d", tag, i, wc.status);
		cr_assert_eq(wc.wr_id, i);
	}
	for (uint32_t j = 0; j < fl->nrsp; j++) {
		const struct pkt *k = &c->v[fl->rsp[j]];

		if (!(k->f & (UROCE_OPF_READ | UROCE_OPF_ATOMIC)))
			continue;
		for (uint32_t i = 0; i < nmsgs; i++) {
			const struct msg *s = &msgs[i];
			int32_t d = uroce_psn_diff(k->p.hdr.bth.psn, s->first_psn);

			if (!(s->f & (UROCE_OPF_READ | UROCE_OPF_ATOMIC)) || d < 0 ||
			    d >= (int32_t)(s->length ? (s->length + mtu - 1) / mtu : 1))
				continue;
			if (k->f & UROCE_OPF_ATOMIC)
				cr_assert(memcmp(s->local, &k->p.hdr.atomic_orig, 8) == 0,
					  "%s #%u: atomic original not delivered", tag, k->no);
			else
				cr_assert(memcmp(s->local + (size_t)d * mtu, k->p.payload,
						 k->p.payload_len) == 0,
					  "%s #%u: READ data not delivered", tag, k->no);
		}
	}
	check_counters(&e, tag);
	cr_log_info("%s: %u work requests, %u request packets agree", tag, nmsgs, e.nout);

	ep_destroy(&e);
	free(buf);
	free(msgs);
	free(first);
}

/* Every requester of the capture (ping-pong captures have two). */
static void requester_agreement(const char *file)
{
	struct flow fl[MAX_FLOWS];
	struct cap c;
	int nf;

	cap_load(&c, file);
	nf = find_flows(&c, fl);
	cr_assert_gt(nf, 0, "%s: no RC requests", file);
	for (int j = 0; j < nf; j++)
		requester_flow(&c, &fl[j]);
	flows_free(fl, nf);
	cap_free(&c);
}

Test(rxe_replay, requester_rdma_write) { requester_agreement("rdma_write.pcap"); }
Test(rxe_replay, requester_rdma_write_small) { requester_agreement("rdma_write_small.pcap"); }
Test(rxe_replay, requester_rdma_write_imm) { requester_agreement("rdma_write_imm.pcap"); }
Test(rxe_replay, requester_rdma_write_imm_only) { requester_agreement("rdma_write_imm_only.pcap"); }
Test(rxe_replay, requester_rc_send) { requester_agreement("rc_send.pcap"); }
Test(rxe_replay, requester_rc_send_only) { requester_agreement("rc_send_only.pcap"); }
Test(rxe_replay, requester_send_imm) { requester_agreement("send_imm.pcap"); }
Test(rxe_replay, requester_rdma_read) { requester_agreement("rdma_read.pcap"); }
Test(rxe_replay, requester_rdma_read_small) { requester_agreement("rdma_read_small.pcap"); }
Test(rxe_replay, requester_atomic_fadd) { requester_agreement("atomic_fadd.pcap"); }
Test(rxe_replay, requester_atomic_cswap) { requester_agreement("atomic_cswap.pcap"); }
