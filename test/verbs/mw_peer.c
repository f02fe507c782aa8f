/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mw_peer: memory windows across a wire, one verbs stack binding them and another using them
 * (test/verbs/rxe_mw.sh runs it between uroce and Linux rxe, each in both roles). One RC QP
 * a side; the out-of-band exchange is one TCP connection of fixed-size text messages.
 *
 *   owner: 64 KiB MR (MW_BIND); a type 1 window over [4096, 8192) by ibv_bind_mw  -> W1
 *   user:  RDMA WRITE 1 KiB through it, RDMA READ it back                        -> D1
 *   owner: the WRITE landed there and nowhere else; a type 2 window over
 *          [8192, 12288) by IBV_WR_BIND_MW, REMOTE_WRITE only; a receive posted -> W2
 *   user:  RDMA WRITE 1 KiB through it                                           -> D2
 *   owner: the WRITE landed there                                               -> I
 *   user:  SEND with Invalidate of the window's R_Key
 *   owner: the receive names the invalidated R_Key                              -> R
 *   user:  a WRITE through that R_Key fails with REM_ACCESS_ERR (the QP dies)    -> D3
 *   owner: nothing changed
 *
 * usage: mw_peer -r owner|user [-d DEV] [-g GID_INDEX] [-p PORT] [-t SECONDS] [SERVER_IPV4]
 * Without SERVER_IPV4 it listens on PORT, else it connects: the TCP roles and the window
 * roles are independent. The default GID is the device's IPv4-mapped RoCE v2 one. Prints
 * "ok: ..." or "FAIL: ..." per step and exits 0 only if every step passed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define BUF_LEN 65536
#define MSG_LEN 96
#define W1_OFF 4096 /* the type 1 window: [4096, 8192) of the owner's MR */
#define W2_OFF 8192 /* the type 2 window: [8192, 12288) */
#define WIN_LEN 4096
#define IO_LEN 1024
/* Where in each window the user writes: not at its start, so that a window's base taken
 * wrongly shows as bytes in the wrong place. */
#define W1_AT 1024
#define W2_AT 2048
#define RECV_OFF 32768 /* the owner's receive buffer, outside both windows */
#define READ_OFF 16384 /* the user's READ lands here, its WRITEs go from offset 0 */
#define SEND_LEN 64

/* The pattern seeds: the owner's MR, each WRITE, the SEND, the refused WRITE. */
enum { SEED_MR = 1, SEED_W1, SEED_W2, SEED_SEND, SEED_BAD };

static struct {
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	int fd;		/* the TCP connection */
	int timeout_ms; /* for one completion, one message, the connection */
	bool rxe;
} me = {.fd = -1, .timeout_ms = 20000};

static void __attribute__((format(printf, 2, 0))) say(const char *tag, const char *fmt, va_list ap)
{
	fputs(tag, stdout);
	vprintf(fmt, ap);
	putchar('\n');
}

static void __attribute__((format(printf, 1, 2), noreturn)) fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("FAIL: ", fmt, ap);
	va_end(ap);
	exit(1);
}

static void __attribute__((format(printf, 1, 2))) ok(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("ok: ", fmt, ap);
	va_end(ap);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int left_ms(int64_t end)
{
	int64_t l = end - now_ms();

	return l > 0 ? (int)l : 0;
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

/* ---- the TCP exchange: MSG_LEN-byte text messages, "TAG args" */

static void __attribute__((format(printf, 1, 2))) msg_send(const char *fmt, ...)
{
	char m[MSG_LEN] = {0};
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	if (send(me.fd, m, sizeof(m), MSG_NOSIGNAL) != (ssize_t)sizeof(m))
		fail("sending \"%s\": %s", m, strerror(errno));
}

/* Waits for message @tag, fails on another, a closed connection (the peer failed) or the
 * deadline; @return its arguments. */
static const char *msg_recv(const char *tag)
{
	static char m[MSG_LEN + 1];
	struct pollfd pfd = {.fd = me.fd, .events = POLLIN};
	int64_t end = now_ms() + me.timeout_ms * 3; /* the peer's steps take time too */
	size_t got = 0, tl = strlen(tag);
	ssize_t n;

	while (got < MSG_LEN) {
		if (poll(&pfd, 1, left_ms(end)) <= 0)
			fail("no message %s from the peer in %d s", tag, me.timeout_ms * 3 / 1000);
		n = recv(me.fd, m + got, MSG_LEN - got, 0);
		if (n <= 0)
			fail("the peer closed the connection before %s (it failed?)", tag);
		got += (size_t)n;
	}
	m[MSG_LEN] = 0;
	if (strncmp(m, tag, tl) || (m[tl] && m[tl] != ' '))
		fail("message \"%s\" instead of %s", m, tag);
	return m + tl;
}

/* Listens on @port (no @host) or connects to @host:@port, retrying until the peer listens:
 * the other side may still be starting (a TCG VM is slow). */
static void tcp_open(const char *host, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int64_t end = now_ms() + me.timeout_ms * 3;
	int s, one = 1;

	if (host && inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		fail("bad IPv4 address %s", host);
	while (host) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			me.fd = s;
			return;
		}
		if (s < 0 || left_ms(end) == 0)
			fail("connecting to %s:%d: %s", host, port, strerror(errno));
		close(s);
		usleep(100000);
	}
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 1))
		fail("listening on port %d: %s", port, strerror(errno));
	if (poll(&(struct pollfd){.fd = s, .events = POLLIN}, 1, left_ms(end)) <= 0)
		fail("no connection on port %d in %d s", port, me.timeout_ms * 3 / 1000);
	me.fd = accept(s, NULL, NULL);
	if (me.fd < 0)
		fail("accept: %s", strerror(errno));
	close(s);
}

/* ---- verbs */

/* The first IPv4-mapped RoCE v2 GID (::ffff:a.b.c.d): the one a peer on IPv4 reaches. */
static int ipv4_gid_index(void)
{
	static const uint8_t v4[12] = {[10] = 0xff, [11] = 0xff};
	struct ibv_port_attr pa;
	struct ibv_gid_entry e;

	if (ibv_query_port(me.ctx, 1, &pa))
		fail("ibv_query_port: %s", strerror(errno));
	for (int i = 0; i < pa.gid_tbl_len; i++)
		if (!ibv_query_gid_ex(me.ctx, 1, (uint32_t)i, &e, 0) &&
		    e.gid_type == IBV_GID_TYPE_ROCE_V2 && !memcmp(e.gid.raw, v4, sizeof(v4)))
			return i;
	fail("no IPv4-mapped RoCE v2 GID on %s", ibv_get_device_name(me.ctx->device));
}

static void modify(struct ibv_qp_attr *a, int mask, const char *state)
{
	int rc = ibv_modify_qp(me.qp, a, mask);

	if (rc)
		fail("ibv_modify_qp to %s: %s", state, strerror(rc));
}

/* Opens @dev (the first device if NULL), makes the MR, CQ and QP, and connects the QP with
 * the peer's over the TCP connection. */
static void setup(const char *dev, int gidx)
{
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = 8, .max_recv_wr = 4,
					      .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_device **list = ibv_get_device_list(NULL);
	union ibv_gid gid, rgid;
	uint32_t psn, rqpn, rpsn;
	char str[INET6_ADDRSTRLEN];
	int i;

	for (i = 0; list && list[i]; i++)
		if (!dev || !strcmp(ibv_get_device_name(list[i]), dev))
			break;
	if (!list || !list[i])
		fail("no RDMA device %s", dev ? dev : "at all");
	me.ctx = ibv_open_device(list[i]);
	if (!me.ctx)
		fail("ibv_open_device(%s): %s", ibv_get_device_name(list[i]), strerror(errno));
	me.rxe = !strncmp(ibv_get_device_name(list[i]), "rxe", 3);
	ibv_free_device_list(list);
	if (gidx < 0)
		gidx = ipv4_gid_index();
	if (ibv_query_gid(me.ctx, 1, gidx, &gid))
		fail("ibv_query_gid(%d): %s", gidx, strerror(errno));

	me.buf = aligned_alloc(4096, BUF_LEN);
	me.pd = ibv_alloc_pd(me.ctx);
	me.ch = ibv_create_comp_channel(me.ctx);
	if (!me.buf || !me.pd || !me.ch)
		fail("buffer, PD or completion channel: %s", strerror(errno));
	memset(me.buf, 0, BUF_LEN);
	me.mr = ibv_reg_mr(me.pd, me.buf, BUF_LEN,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
	me.cq = ibv_create_cq(me.ctx, 16, NULL, me.ch, 0);
	if (!me.mr || !me.cq || ibv_req_notify_cq(me.cq, 0))
		fail("MR or CQ: %s", strerror(errno));
	qa.send_cq = qa.recv_cq = me.cq;
	me.qp = ibv_create_qp(me.pd, &qa);
	if (!me.qp)
		fail("ibv_create_qp: %s", strerror(errno));

	srand48(getpid() ^ time(NULL));
	psn = (uint32_t)lrand48() & 0xffffff;
	/* The GID as an IPv6 address: "::ffff:198.18.0.1" in the exchange. */
	inet_ntop(AF_INET6, gid.raw, str, sizeof(str));
	msg_send("C %x %x %s", me.qp->qp_num, psn, str);
	if (sscanf(msg_recv("C"), "%x %x %45s", &rqpn, &rpsn, str) != 3 ||
	    inet_pton(AF_INET6, str, rgid.raw) != 1)
		fail("bad connection message");

	modify(&(struct ibv_qp_attr){.qp_state = IBV_QPS_INIT, .port_num = 1,
				     .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
							IBV_ACCESS_REMOTE_READ},
	       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "INIT");
	/* Path MTU 1024: the VM's eth0 has MTU 1500, so rxe0's active MTU is 1024. */
	modify(&(struct ibv_qp_attr){.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				     .dest_qp_num = rqpn, .rq_psn = rpsn,
				     .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
				     .ah_attr = {.is_global = 1, .port_num = 1,
						 .grh = {.dgid = rgid, .hop_limit = 64,
							 .sgid_index = (uint8_t)gidx}}},
	       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
	       "RTR");
	/* Timeout 18 (1.07 s) x 7 retries: a TCG VM on a loaded host can stall for longer
	 * than the 0.54 s of the usual 14 (doc/verbs.md, "Retry budget under TCG"). */
	modify(&(struct ibv_qp_attr){.qp_state = IBV_QPS_RTS, .sq_psn = psn, .timeout = 18,
				     .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1},
	       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
	       "RTS");
	ok("%s, GID index %d, QP %#x connected to QP %#x", ibv_get_device_name(me.ctx->device),
	   gidx, me.qp->qp_num, rqpn);
}

/* The next completion, sleeping on the completion channel in between, or fail. */
static void wait_wc(struct ibv_wc *wc, const char *what)
{
	struct pollfd pfd = {.fd = me.ch->fd, .events = POLLIN};
	int64_t end = now_ms() + me.timeout_ms;
	struct ibv_cq *cq;
	void *cq_ctx;
	int n;

	while ((n = ibv_poll_cq(me.cq, 1, wc)) == 0) {
		if (left_ms(end) == 0 || poll(&pfd, 1, left_ms(end)) <= 0)
			fail("%s: no completion in %d s", what, me.timeout_ms / 1000);
		if (ibv_get_cq_event(me.ch, &cq, &cq_ctx) == 0) {
			ibv_ack_cq_events(cq, 1);
			ibv_req_notify_cq(cq, 0);
		}
	}
	if (n < 0)
		fail("%s: ibv_poll_cq %d", what, n);
}

/* The next completion must be @opcode's, successful. */
static void wait_ok(struct ibv_wc *wc, enum ibv_wc_opcode opcode, const char *what)
{
	wait_wc(wc, what);
	if (wc->status != IBV_WC_SUCCESS)
		fail("%s: %s", what, ibv_wc_status_str(wc->status));
	if (wc->opcode != opcode)
		fail("%s: completion opcode %d, not %d", what, wc->opcode, opcode);
}

static void post_send(struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int rc = ibv_post_send(me.qp, wr, &bad);

	if (rc)
		fail("ibv_post_send(opcode %d): %s", wr->opcode, strerror(rc));
}

/* @op of @len bytes between our buffer at @off and the peer's @raddr, through @rkey. */
static void post_rdma(enum ibv_wr_opcode op, size_t off, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sg = {.addr = (uintptr_t)me.buf + off, .length = IO_LEN,
			     .lkey = me.mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sg, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = {.remote_addr = raddr, .rkey = rkey}};

	post_send(&wr);
}

/* ---- the two roles */

/* The whole MR must equal @shadow, what the owner expects of it. */
static void check_mr(const uint8_t *shadow, const char *what)
{
	for (size_t i = 0; i < BUF_LEN; i++)
		if (me.buf[i] != shadow[i])
			fail("%s: byte %zu of the MR is %#x, not %#x", what, i, me.buf[i],
			     shadow[i]);
}

static void owner(void)
{
	static uint8_t shadow[BUF_LEN];
	uintptr_t base = (uintptr_t)me.buf;
	struct ibv_mw_bind b = {.send_flags = IBV_SEND_SIGNALED,
				.bind_info = {.mr = me.mr, .addr = base + W1_OFF,
					      .length = WIN_LEN,
					      .mw_access_flags = IBV_ACCESS_REMOTE_READ |
								 IBV_ACCESS_REMOTE_WRITE}};
	struct ibv_sge rs = {.addr = base + RECV_OFF, .length = IO_LEN, .lkey = me.mr->lkey};
	struct ibv_recv_wr rwr = {.sg_list = &rs, .num_sge = 1}, *bad;
	struct ibv_send_wr wr = {.opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED};
	/* Linux 6.1's rxe hands the kernel's wc_flags to user space as they are: its
	 * IB_WC_WITH_INVALIDATE is 1 << 2 (IBV_WC_IP_CSUM_OK to verbs), where verbs'
	 * IBV_WC_WITH_INV is 1 << 3. The kernel's bit counts on an rxe device only. */
	unsigned int inv = IBV_WC_WITH_INV | (me.rxe ? 1u << 2 : 0);
	struct ibv_mw *mw1, *mw2;
	struct ibv_wc wc;
	int rc;

	fill(me.buf, BUF_LEN, SEED_MR);
	memcpy(shadow, me.buf, BUF_LEN);

	mw1 = ibv_alloc_mw(me.pd, IBV_MW_TYPE_1);
	if (!mw1)
		fail("ibv_alloc_mw(type 1): %s", strerror(errno));
	rc = ibv_bind_mw(me.qp, mw1, &b);
	if (rc)
		fail("ibv_bind_mw: %s", strerror(rc));
	wait_ok(&wc, IBV_WC_BIND_MW, "type 1 bind");
	ok("type 1 window bound to [4096, 8192), READ and WRITE, R_Key %#x", mw1->rkey);
	msg_send("W1 %" PRIx64 " %x", (uint64_t)base + W1_OFF, mw1->rkey);

	msg_recv("D1");
	fill(shadow + W1_OFF + W1_AT, IO_LEN, SEED_W1);
	check_mr(shadow, "after the WRITE through the type 1 window");
	ok("the WRITE landed at [%d, %d) of the MR and nowhere else", W1_OFF + W1_AT,
	   W1_OFF + W1_AT + IO_LEN);

	mw2 = ibv_alloc_mw(me.pd, IBV_MW_TYPE_2);
	if (!mw2)
		fail("ibv_alloc_mw(type 2): %s", strerror(errno));
	wr.bind_mw.mw = mw2;
	wr.bind_mw.rkey = ibv_inc_rkey(mw2->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = me.mr, .addr = base + W2_OFF, .length = WIN_LEN,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE};
	post_send(&wr);
	wait_ok(&wc, IBV_WC_BIND_MW, "type 2 bind");
	/* Only the application knows a type 2 window's R_Key; rxe's next bind WQE would
	 * carry ibv_mw.rkey, and the kernel checks it against the window's own. */
	mw2->rkey = wr.bind_mw.rkey;
	rc = ibv_post_recv(me.qp, &rwr, &bad);
	if (rc)
		fail("ibv_post_recv: %s", strerror(rc));
	ok("type 2 window bound to [8192, 12288) by IBV_WR_BIND_MW, WRITE only, R_Key %#x",
	   mw2->rkey);
	msg_send("W2 %" PRIx64 " %x", (uint64_t)base + W2_OFF, mw2->rkey);

	msg_recv("D2");
	fill(shadow + W2_OFF + W2_AT, IO_LEN, SEED_W2);
	check_mr(shadow, "after the WRITE through the type 2 window");
	ok("the WRITE landed at [%d, %d) of the MR and nowhere else", W2_OFF + W2_AT,
	   W2_OFF + W2_AT + IO_LEN);
	msg_send("I");

	wait_ok(&wc, IBV_WC_RECV, "the SEND with Invalidate");
	if (!(wc.wc_flags & inv) || wc.invalidated_rkey != mw2->rkey || wc.byte_len != SEND_LEN)
		fail("the receive: wc_flags %#x, invalidated_rkey %#x, byte_len %u", wc.wc_flags,
		     wc.invalidated_rkey, wc.byte_len);
	fill(shadow + RECV_OFF, SEND_LEN, SEED_SEND);
	check_mr(shadow, "after the SEND with Invalidate");
	ok("SEND with Invalidate received: wc_flags %#x, invalidated_rkey %#x, %u bytes",
	   wc.wc_flags, wc.invalidated_rkey, wc.byte_len);
	msg_send("R");

	msg_recv("D3");
	check_mr(shadow, "after the WRITE through the invalidated R_Key");
	ok("the WRITE through the invalidated R_Key changed nothing");
	/* Before the MR: one with a window bound to it cannot be deregistered. */
	ibv_dealloc_mw(mw1);
	ibv_dealloc_mw(mw2);
}

static void user(void)
{
	struct ibv_sge sg = {.addr = (uintptr_t)me.buf, .length = SEND_LEN, .lkey = me.mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_INV,
				 .send_flags = IBV_SEND_SIGNALED};
	struct ibv_wc wc;
	uint64_t addr;
	uint32_t rkey;

	if (sscanf(msg_recv("W1"), "%" SCNx64 " %x", &addr, &rkey) != 2)
		fail("bad W1 message");
	fill(me.buf, IO_LEN, SEED_W1);
	post_rdma(IBV_WR_RDMA_WRITE, 0, addr + W1_AT, rkey);
	wait_ok(&wc, IBV_WC_RDMA_WRITE, "WRITE through the type 1 window");
	ok("RDMA WRITE of %d B through the type 1 window (R_Key %#x)", IO_LEN, rkey);
	post_rdma(IBV_WR_RDMA_READ, READ_OFF, addr + W1_AT, rkey);
	wait_ok(&wc, IBV_WC_RDMA_READ, "READ through the type 1 window");
	if (memcmp(me.buf + READ_OFF, me.buf, IO_LEN))
		fail("the READ through the type 1 window returned other bytes");
	ok("RDMA READ of %d B back through it: the bytes written", IO_LEN);
	msg_send("D1");

	if (sscanf(msg_recv("W2"), "%" SCNx64 " %x", &addr, &rkey) != 2)
		fail("bad W2 message");
	fill(me.buf, IO_LEN, SEED_W2);
	post_rdma(IBV_WR_RDMA_WRITE, 0, addr + W2_AT, rkey);
	wait_ok(&wc, IBV_WC_RDMA_WRITE, "WRITE through the type 2 window");
	ok("RDMA WRITE of %d B through the type 2 window (R_Key %#x)", IO_LEN, rkey);
	msg_send("D2");

	msg_recv("I"); /* the SEND lands in the owner's MR: not before it checked the WRITE */
	fill(me.buf, SEND_LEN, SEED_SEND);
	wr.invalidate_rkey = rkey;
	post_send(&wr);
	wait_ok(&wc, IBV_WC_SEND, "SEND with Invalidate");
	ok("SEND with Invalidate of R_Key %#x", rkey);
	msg_recv("R");

	fill(me.buf, IO_LEN, SEED_BAD);
	post_rdma(IBV_WR_RDMA_WRITE, 0, addr, rkey);
	wait_wc(&wc, "WRITE through the invalidated R_Key");
	if (wc.status != IBV_WC_REM_ACCESS_ERR)
		fail("WRITE through the invalidated R_Key: %s, not remote access error",
		     ibv_wc_status_str(wc.status));
	ok("WRITE through the invalidated R_Key refused: %s", ibv_wc_status_str(wc.status));
	msg_send("D3");
}

static int usage(void)
{
	fprintf(stderr, "usage: mw_peer -r owner|user [-d DEV] [-g GID_INDEX] [-p PORT] "
			"[-t SECONDS] [SERVER_IPV4]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *role = NULL;
	int gidx = -1, port = 18900, c;
	int64_t t0 = now_ms();

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "d:g:p:r:t:")) != -1) {
		if (c == 'd')
			dev = optarg;
		else if (c == 'g')
			gidx = atoi(optarg);
		else if (c == 'p')
			port = atoi(optarg);
		else if (c == 'r')
			role = optarg;
		else if (c == 't')
			me.timeout_ms = atoi(optarg) * 1000;
		else
			return usage();
	}
	if (!role || (strcmp(role, "owner") && strcmp(role, "user")) || optind + 1 < argc)
		return usage();
	tcp_open(optind < argc ? argv[optind] : NULL, port);
	setup(dev, gidx);
	if (!strcmp(role, "owner"))
		owner();
	else
		user();
	printf("mw_peer: %s on %s: every step passed (%" PRId64 " ms)\n", role,
	       ibv_get_device_name(me.ctx->device), now_ms() - t0);
	ibv_destroy_qp(me.qp);
	ibv_dereg_mr(me.mr);
	ibv_destroy_cq(me.cq);
	ibv_destroy_comp_channel(me.ch);
	ibv_dealloc_pd(me.pd);
	ibv_close_device(me.ctx);
	close(me.fd);
	return 0;
}
