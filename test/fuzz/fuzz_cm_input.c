/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for lib/cm: the MADs an attacker on the network sends to QP1 (REQ,
 * REP, RTU, REJ, MRA, DREQ, DREP, SIDR_REQ, SIDR_REP and anything else), interleaved with
 * what the applications do (listen, connect, accept, reject, disconnect, destroy) and the
 * passing of time, against one CM built per input at 198.18.0.1 (the passive host of the
 * rxe captures) whose peer is 198.18.0.2 or 198.18.0.3.
 *
 * Input: records, each an op byte:
 *   op & 7 == 0: a MAD: 2 bytes of length (big-endian, at most 300: short and long ones
 *                are the CM's to refuse), the bytes; op bit 3: from the second peer;
 *   op & 7 == 1: listen: 2 bytes of port; op bit 3: a UD (SIDR) listener, else RC;
 *                op bit 4: a backlog of 2, else 16;
 *   op & 7 == 2: an application acts on id slot (next byte % ID_SLOTS): the byte after
 *                picks accept, reject, disconnect, establish, init_qp_attr or destroy;
 *   op & 7 == 3: connect: a new RC (op bit 3: UD) id towards the peer's port (2 bytes);
 *   op & 7 >= 4: time: the next byte b, b * b milliseconds pass (up to 65 s: the
 *                retries and TimeWait); timers run;
 * and op 0xff reflects the last MAD the CM sent back to it as the next byte's attribute
 * (REQ..SIDR_REP), its communication IDs swapped: the peer's answers, with the IDs a
 * mutation would hardly find.
 *
 * Oracles (besides ASan, UBSan and LeakSanitizer): every MAD sent is a CM SEND of an
 * attribute this CM handles, to the peer it came from or was aimed at; every event is of
 * a known type, for a live id of ours (a CONNECT_REQUEST's new id, and its listener is a
 * live listener of ours), never for one destroyed; the counters never decrease; and at
 * the end every id is destroyed and the CM freed with nothing left (LeakSanitizer).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "uroce_cm.h"
#include "uroce_wire.h"

#include "fuzz_check.h"

#define ID_SLOTS 32
#define MAD_MAX_IN 300

enum slot_kind { SLOT_FREE, SLOT_LISTENER, SLOT_PASSIVE, SLOT_ACTIVE };

struct slot {
	enum slot_kind kind;
	struct uroce_cm_id *id;
};

static struct {
	struct uroce_cm *cm;
	struct slot slots[ID_SLOTS];
	/* CONNECT_REQUEST ids with no free slot: destroyed once lib/cm has returned (it is
	 * not re-entered from its callbacks). */
	struct uroce_cm_id *orphans[ID_SLOTS];
	unsigned int norphans;
	uint8_t last_tx[UROCE_CM_MAD_LEN];
	bool have_tx;
	union ibv_gid ours, peers[2];
	struct uroce_cm_counters cnt;
	uint64_t now;
} F;

static bool gid_is_peer(const union ibv_gid *g)
{
	return !memcmp(g, &F.peers[0], sizeof(*g)) || !memcmp(g, &F.peers[1], sizeof(*g));
}

static int fz_tx(void *ctx, const uint8_t *mad, const struct uroce_cm_path *to)
{
	uint16_t attr = (uint16_t)(mad[16] << 8 | mad[17]);

	(void)ctx;
	CHECK(mad[0] == 1 && mad[1] == 0x07 && mad[2] == 2); /* base, CM class, version */
	CHECK(mad[3] == 0x03);                                 /* Send: the CM sends no other */
	CHECK(uroce_cm_attr_handled(attr));
	CHECK(!memcmp(&to->sgid, &F.ours, sizeof(F.ours)) && gid_is_peer(&to->dgid));
	memcpy(F.last_tx, mad, sizeof(F.last_tx));
	F.have_tx = true;
	return 0;
}

static struct slot *slot_of(const struct uroce_cm_id *id)
{
	for (int i = 0; i < ID_SLOTS; i++)
		if (F.slots[i].kind != SLOT_FREE && F.slots[i].id == id)
			return &F.slots[i];
	return NULL;
}

static struct slot *slot_free(void)
{
	for (int i = 0; i < ID_SLOTS; i++)
		if (F.slots[i].kind == SLOT_FREE)
			return &F.slots[i];
	return NULL;
}

static void fz_event(void *ctx, const struct uroce_cm_event *ev)
{
	struct slot *s;

	(void)ctx;
	CHECK(ev->id != NULL);
	CHECK((int)ev->event >= RDMA_CM_EVENT_ADDR_RESOLVED &&
	      (int)ev->event <= RDMA_CM_EVENT_TIMEWAIT_EXIT);
	CHECK(ev->param.private_data_len <= UROCE_CM_PRIVATE_DATA_MAX);
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		struct slot *l = slot_of(ev->listen_id);

		CHECK(l && l->kind == SLOT_LISTENER && !slot_of(ev->id));
		CHECK(uroce_cm_id_user(ev->id) == NULL);
		s = slot_free();
		if (s) {
			s->kind = SLOT_PASSIVE;
			s->id = ev->id;
			uroce_cm_id_set_user(ev->id, s);
		} else {
			CHECK(F.norphans < ID_SLOTS);
			F.orphans[F.norphans++] = ev->id;
		}
		return;
	}
	/* Anything else is for an id we hold, and carries the pointer we gave it. */
	s = slot_of(ev->id);
	CHECK(s && s->kind != SLOT_LISTENER && uroce_cm_id_user(ev->id) == s);
}

/* After each call into lib/cm: orphans go, counters only grow. */
static void settle(void)
{
	const struct uroce_cm_counters *c;

	while (F.norphans)
		uroce_cm_id_destroy(F.orphans[--F.norphans], F.now);
	c = uroce_cm_counters(F.cm);
	CHECK(c->rx_mads >= F.cnt.rx_mads && c->tx_mads >= F.cnt.tx_mads);
	CHECK(c->rx_malformed >= F.cnt.rx_malformed && c->rx_stale >= F.cnt.rx_stale);
	CHECK(c->retries >= F.cnt.retries && c->timeouts >= F.cnt.timeouts);
	CHECK(c->rx_malformed + c->rx_unknown_attr <= c->rx_mads);
	F.cnt = *c;
}

static void path_to(struct uroce_cm_path *p, int peer)
{
	memset(p, 0, sizeof(*p));
	p->sgid = F.ours;
	p->dgid = F.peers[peer];
	p->dmac[0] = 0x02;
	p->dmac[5] = (uint8_t)(2 + peer);
	p->sgid_index = 1;
	p->hop_limit = 64;
	p->pkey = 0xffff;
}

static void mad_in(const uint8_t *mad, uint32_t len, int peer)
{
	struct uroce_cm_path from;

	path_to(&from, peer);
	F.now += 1000;
	uroce_cm_input(F.cm, mad, len, &from, F.now);
	settle();
}

static void sockaddr_of(struct sockaddr_in *sa, const uint8_t ip[4], uint16_t port)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(port);
	memcpy(&sa->sin_addr, ip, 4);
}

static void op_listen(uint16_t port, bool ud, int backlog)
{
	struct slot *s = slot_free();
	struct sockaddr_in sa;

	if (!s)
		return;
	s->id = uroce_cm_id_create(F.cm, ud ? RDMA_PS_UDP : RDMA_PS_TCP,
				   ud ? IBV_QPT_UD : IBV_QPT_RC, s);
	CHECK(s->id != NULL);
	s->kind = SLOT_LISTENER;
	sockaddr_of(&sa, F.ours.raw + 12, port);
	if (uroce_cm_bind(s->id, (struct sockaddr *)&sa) != 0 ||
	    uroce_cm_listen(s->id, backlog) != 0) {
		uroce_cm_id_destroy(s->id, F.now);
		s->kind = SLOT_FREE;
	}
	settle();
}

static void op_connect(uint16_t port, bool ud)
{
	struct uroce_cm_conn_param param = {.responder_resources = 1, .initiator_depth = 1,
					    .retry_count = 7, .rnr_retry_count = 7,
					    .qp_num = 0x123, .qkey = 0x11111111};
	struct slot *s = slot_free();
	struct sockaddr_in src, dst;
	struct uroce_cm_path path;

	if (!s)
		return;
	s->id = uroce_cm_id_create(F.cm, ud ? RDMA_PS_UDP : RDMA_PS_TCP,
				   ud ? IBV_QPT_UD : IBV_QPT_RC, s);
	CHECK(s->id != NULL);
	s->kind = SLOT_ACTIVE;
	sockaddr_of(&src, F.ours.raw + 12, 0);
	sockaddr_of(&dst, F.peers[0].raw + 12, port);
	path_to(&path, 0);
	if (uroce_cm_set_route(s->id, (struct sockaddr *)&src, (struct sockaddr *)&dst,
			       &path) == 0)
		uroce_cm_connect(s->id, &param, F.now);
	settle();
}

static void op_act(struct slot *s, uint8_t what)
{
	struct uroce_cm_conn_param param = {.responder_resources = 1, .initiator_depth = 1,
					    .retry_count = 7, .rnr_retry_count = 7,
					    .qp_num = 0x456, .qkey = 0x22222222};
	struct ibv_qp_attr attr;
	int rc, mask;

	if (s->kind == SLOT_FREE)
		return;
	switch (what % 6) {
	case 0:
		rc = uroce_cm_accept(s->id, &param, F.now);
		break;
	case 1:
		rc = uroce_cm_reject(s->id, "no", 2, F.now);
		break;
	case 2:
		rc = uroce_cm_disconnect(s->id, F.now);
		break;
	case 3:
		rc = uroce_cm_establish(s->id, F.now);
		break;
	case 4:
		attr.qp_state = (enum ibv_qp_state)(IBV_QPS_INIT + what / 6 % 3);
		rc = uroce_cm_init_qp_attr(s->id, &attr, &mask);
		CHECK(rc != 0 || mask != 0);
		break;
	default:
		uroce_cm_id_destroy(s->id, F.now);
		s->kind = SLOT_FREE;
		s->id = NULL;
		rc = 0;
		break;
	}
	CHECK(rc <= 0);
	settle();
}

/* The last MAD sent, as the peer's @p attr in answer: its communication IDs swapped
 * (REQ..DREP: local at attribute byte 0, remote at 4; SIDR: the request ID stays). */
static void op_reflect(uint8_t pick)
{
	static const uint16_t attrs[] = {UROCE_CM_ATTR_REQ,  UROCE_CM_ATTR_MRA,
					 UROCE_CM_ATTR_REJ,  UROCE_CM_ATTR_REP,
					 UROCE_CM_ATTR_RTU,  UROCE_CM_ATTR_DREQ,
					 UROCE_CM_ATTR_DREP, UROCE_CM_ATTR_SIDR_REQ,
					 UROCE_CM_ATTR_SIDR_REP};
	uint16_t attr = attrs[pick % (sizeof(attrs) / sizeof(attrs[0]))];
	uint8_t mad[UROCE_CM_MAD_LEN], id[4];

	if (!F.have_tx)
		return;
	memcpy(mad, F.last_tx, sizeof(mad));
	mad[16] = (uint8_t)(attr >> 8);
	mad[17] = (uint8_t)attr;
	if (attr < UROCE_CM_ATTR_SIDR_REQ) {
		memcpy(id, mad + 24, 4);
		memcpy(mad + 24, mad + 28, 4);
		memcpy(mad + 28, id, 4);
	}
	mad_in(mad, sizeof(mad), 0);
}

static void setup(void)
{
	struct uroce_cm_cfg cfg;

	memset(&F, 0, sizeof(F));
	uroce_gid_from_ipv4(F.ours.raw, (const uint8_t[4]){198, 18, 0, 1});
	uroce_gid_from_ipv4(F.peers[0].raw, (const uint8_t[4]){198, 18, 0, 2});
	uroce_gid_from_ipv4(F.peers[1].raw, (const uint8_t[4]){198, 18, 0, 3});
	uroce_cm_cfg_init(&cfg);
	cfg.node_guid = htobe64(0x505400fffe180001ull);
	cfg.seed = 7;
	cfg.tx = fz_tx;
	cfg.event = fz_event;
	F.cm = uroce_cm_create(&cfg);
	CHECK(F.cm != NULL);
	F.now = 1000000000ull;
}

/* Every id destroyed, TimeWait run out, the CM freed: what is left leaks. */
static void teardown(void)
{
	for (int i = 0; i < ID_SLOTS; i++)
		if (F.slots[i].kind != SLOT_FREE) {
			uroce_cm_id_destroy(F.slots[i].id, F.now);
			F.slots[i].kind = SLOT_FREE;
			settle();
		}
	for (int k = 0; k < 64 && uroce_cm_next_deadline(F.cm) != UINT64_MAX; k++) {
		uint64_t d = uroce_cm_next_deadline(F.cm);

		F.now = d > F.now ? d : F.now;
		uroce_cm_process(F.cm, F.now);
		settle();
	}
	uroce_cm_destroy(F.cm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t at = 0;

	setup();
	while (at < size) {
		uint8_t op = data[at++];
		uint32_t len;

		if (op == 0xff) {
			if (at < size)
				op_reflect(data[at++]);
			continue;
		}
		switch (op & 7) {
		case 0:
			if (at + 2 > size)
				goto out;
			len = (uint32_t)(data[at] << 8 | data[at + 1]);
			at += 2;
			if (len > MAD_MAX_IN || at + len > size)
				goto out;
			mad_in(data + at, len, (op >> 3) & 1);
			at += len;
			break;
		case 1:
			if (at + 2 > size)
				goto out;
			op_listen((uint16_t)(data[at] << 8 | data[at + 1]), (op >> 3) & 1,
				  (op >> 4) & 1 ? 2 : 16);
			at += 2;
			break;
		case 2:
			if (at + 2 > size)
				goto out;
			op_act(&F.slots[data[at] % ID_SLOTS], data[at + 1]);
			at += 2;
			break;
		case 3:
			if (at + 2 > size)
				goto out;
			op_connect((uint16_t)(data[at] << 8 | data[at + 1]), (op >> 3) & 1);
			at += 2;
			break;
		default:
			if (at >= size)
				goto out;
			F.now += (uint64_t)data[at] * data[at] * 1000000u;
			at++;
			uroce_cm_process(F.cm, F.now);
			settle();
			break;
		}
	}
out:
	teardown();
	return 0;
}
