/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fi_check: libfabric's verbs provider (FI_EP_MSG: rdma_cm connections, RC QPs) between
 * two processes, checked byte for byte. Built and run by test/eco/libfabric.sh.
 *
 *   fi_check server ADDR PORT ITERS [msg|rdm|dgram]   listen on ADDR:PORT (the daemon's
 *                                                      address)
 *   fi_check client ADDR PORT ITERS [msg|rdm|dgram]   connect to the server at ADDR:PORT
 *
 * msg (default): provider verbs, FI_EP_MSG, connected through rdma_cm by the program.
 * rdm: provider verbs;ofi_rxm, FI_EP_RDM (what MPI libraries use): reliable datagrams
 * over an address vector, rxm connecting verbs msg endpoints underneath on first use; the
 * client's first message carries its address so that the server can answer.
 * dgram: provider verbs, FI_EP_DGRAM (UD QPs), an address vector as rdm; messages up to
 * the endpoint's max_msg_size, received after the GRH room the provider asks for
 * (FI_MSG_PREFIX); no RMA. Unreliable: the namespaces' veth loses nothing at one message
 * in flight.
 *
 * After the connection: the server sends the address and key of a 1 MiB target buffer;
 * then ITERS ping-pongs of sizes 1 B .. 64 KiB, each echoed and compared; then the client
 * writes 1 MiB into the target with fi_write (RDMA WRITE) and asks the server to compare
 * it, and the server answers "ok" or "bad". Last line: "fi_check: ok ..." (exit 0), else
 * "fi_check: FAILED ..." (exit 1).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define MSG_MAX (64u << 10)
#define TARGET_LEN (1u << 20)
#define WAIT_S 30

struct target_info {
	uint64_t addr, key;
};

static struct fid_fabric *fabric;
static struct fid_eq *eq;
static struct fid_domain *domain;
static struct fid_cq *cq;
static struct fid_ep *ep;
static struct fid_pep *pep;
static struct fid_av *av;        /* rdm, dgram */
static fi_addr_t peer;           /* rdm, dgram: the other side in av; msg: unused (0) */
static int rdm, dgram;
static size_t prefix;            /* FI_MSG_PREFIX room before the data of each message */
static size_t max_msg = MSG_MAX; /* the largest message the endpoint takes */
static uint8_t *sdata, *rdata;   /* sbuf and rbuf past the prefix */
static struct fid_mr *mr;
static uint8_t *sbuf, *rbuf, *target; /* one registration: [sbuf | rbuf | target] */

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("fi_check: FAILED: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

#define CHECK(call)                                                                        \
	do {                                                                               \
		int rc_ = (int)(call);                                                     \
		if (rc_)                                                                   \
			fail("%s: %s (%d)", #call, fi_strerror(-rc_), rc_);                \
	} while (0)

static uint8_t pattern(uint32_t seed, uint32_t i)
{
	return (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* The next event on the EQ, which must be @p want; its info for FI_CONNREQ. */
static struct fi_info *eq_expect(uint32_t want)
{
	struct fi_eq_cm_entry entry;
	uint32_t event;
	ssize_t n = fi_eq_sread(eq, &event, &entry, sizeof(entry), WAIT_S * 1000, 0);

	if (n == -FI_EAVAIL) {
		struct fi_eq_err_entry err = {0};

		fi_eq_readerr(eq, &err, 0);
		fail("EQ error waiting for event %u: %s", want, fi_strerror(err.err));
	}
	if (n < 0)
		fail("fi_eq_sread: %s", fi_strerror((int)-n));
	if (event != want)
		fail("EQ event %u, expected %u", event, want);
	return want == FI_CONNREQ ? entry.info : NULL;
}

/* One completion, spinning (the verbs provider's CQ is polled). */
/* Completions POST_RETRY read while it waited, not yet waited for (the program keeps one
 * operation in flight, so which one does not matter). */
static unsigned int early;

static void cq_wait(const char *what)
{
	struct fi_cq_entry entry;
	time_t end = time(NULL) + WAIT_S;

	if (early) {
		early--;
		return;
	}
	for (;;) {
		ssize_t n = fi_cq_read(cq, &entry, 1);

		if (n == 1)
			return;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = {0};

			fi_cq_readerr(cq, &err, 0);
			fail("%s: completion error %s (prov %d)", what, fi_strerror(err.err),
			     err.prov_errno);
		}
		if (n != -FI_EAGAIN)
			fail("%s: fi_cq_read: %s", what, fi_strerror((int)-n));
		if (time(NULL) > end)
			fail("%s: no completion in %d s", what, WAIT_S);
	}
}

static void post_recv(void)
{
	CHECK(fi_recv(ep, rbuf, prefix + MSG_MAX, fi_mr_desc(mr), FI_ADDR_UNSPEC, NULL));
}

/* Posts with @p post until it is taken: -FI_EAGAIN asks for progress first (rxm gives it
 * while it connects underneath), which reading the CQ makes; a completion found meanwhile
 * is one of ours that @p pending counts. */
#define POST_RETRY(post, pending)                                                          \
	do {                                                                               \
		time_t end_ = time(NULL) + WAIT_S;                                         \
		ssize_t rc_;                                                               \
		while ((rc_ = (post)) == -FI_EAGAIN) {                                     \
			struct fi_cq_entry e_;                                             \
			if (fi_cq_read(cq, &e_, 1) == 1)                                   \
				(pending)++;                                               \
			if (time(NULL) > end_)                                             \
				fail("%s: still -FI_EAGAIN after %d s", #post, WAIT_S);    \
		}                                                                          \
		if (rc_)                                                                   \
			fail("%s: %s (%zd)", #post, fi_strerror((int)-rc_), rc_);          \
	} while (0)

static void send_wait(size_t len)
{
	/* The data only: libfabric's verbs provider uses the prefix on receives (the GRH
	 * lands there) and sends a buffer as it is given. */
	POST_RETRY(fi_send(ep, sdata, len, fi_mr_desc(mr), peer, NULL), early);
	cq_wait("send");
}

/* The endpoint of @p info on its own domain and CQ, bound to the EQ, a receive posted. */
static void open_ep(struct fi_info *info)
{
	struct fi_cq_attr cq_attr = {.size = 256, .format = FI_CQ_FORMAT_CONTEXT,
				     .wait_obj = FI_WAIT_NONE};
	size_t room = MSG_MAX + 4096, len = 2 * room + TARGET_LEN;

	if (info->mode & FI_MSG_PREFIX)
		prefix = info->ep_attr->msg_prefix_size;
	if (info->ep_attr->max_msg_size < max_msg)
		max_msg = info->ep_attr->max_msg_size;
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
	CHECK(fi_endpoint(domain, info, &ep, NULL));
	if (rdm || dgram) {
		struct fi_av_attr av_attr = {.type = FI_AV_TABLE};

		CHECK(fi_av_open(domain, &av_attr, &av, NULL));
		CHECK(fi_ep_bind(ep, &av->fid, 0));
	} else {
		CHECK(fi_ep_bind(ep, &eq->fid, 0));
	}
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(ep));
	sbuf = aligned_alloc(4096, len);
	if (!sbuf)
		fail("out of memory");
	memset(sbuf, 0, len);
	rbuf = sbuf + room;
	target = rbuf + room;
	sdata = sbuf + prefix;
	rdata = rbuf + prefix;
	CHECK(fi_mr_reg(domain, sbuf, len, FI_SEND | FI_RECV | FI_WRITE | FI_REMOTE_WRITE, 0, 0,
			0, &mr, NULL));
	post_recv();
}

static struct fi_info *hints_new(void)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		fail("fi_allocinfo");
	hints->ep_attr->type = rdm ? FI_EP_RDM : dgram ? FI_EP_DGRAM : FI_EP_MSG;
	hints->caps = dgram ? FI_MSG : FI_MSG | FI_RMA;
	if (dgram)
		hints->mode = FI_MSG_PREFIX; /* verbs' UD receives land after a 40-byte GRH */
	hints->domain_attr->mr_mode =
		FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(rdm ? "verbs;ofi_rxm" : "verbs");
	return hints;
}

static size_t ping_len(uint32_t i)
{
	static const size_t lens[] = {1, 8, 64, 1000, 4096, 4097, 9000, 65536};
	size_t len = lens[i % (sizeof(lens) / sizeof(lens[0]))];

	return len < max_msg ? len : max_msg;
}

static void server(const char *addr, const char *port, uint32_t iters)
{
	struct fi_info *hints = hints_new(), *info, *conn;
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_UNSPEC};
	struct target_info ti;
	uint32_t i;
	int ok;

	CHECK(fi_getinfo(FI_VERSION(1, 17), addr, port, FI_SOURCE, hints, &info));
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_eq_open(fabric, &eq_attr, &eq, NULL));
	if (rdm || dgram) {
		open_ep(info);
		conn = NULL;
	} else {
		CHECK(fi_passive_ep(fabric, info, &pep, NULL));
		CHECK(fi_pep_bind(pep, &eq->fid, 0));
		CHECK(fi_listen(pep));
	}
	printf("fi_check: server listening on %s:%s (provider %s, domain %s)\n", addr, port,
	       info->fabric_attr->prov_name, info->domain_attr->name);
	fflush(stdout);
	if (rdm || dgram) { /* the client's first message is its address */
		cq_wait("client address");
		if (fi_av_insert(av, rdata, 1, &peer, 0, NULL) != 1)
			fail("fi_av_insert of the client's address");
		post_recv();
	} else {
		conn = eq_expect(FI_CONNREQ);
		open_ep(conn);
		CHECK(fi_accept(ep, NULL, 0));
		eq_expect(FI_CONNECTED);
	}

	ti.addr = (uint64_t)(uintptr_t)target;
	ti.key = fi_mr_key(mr);
	memcpy(sdata, &ti, sizeof(ti));
	send_wait(sizeof(ti));
	for (i = 0; i < iters; i++) { /* echo each ping */
		size_t len = ping_len(i);

		cq_wait("ping");
		memcpy(sdata, rdata, len);
		post_recv();
		send_wait(len);
	}
	if (dgram) {
		printf("fi_check: server: %u pings echoed\n", iters);
		fi_freeinfo(info);
		fi_freeinfo(hints);
		return;
	}
	cq_wait("check request"); /* the client's fi_write is in the target: compare */
	post_recv();
	ok = 1;
	for (i = 0; i < TARGET_LEN; i++)
		if (target[i] != pattern(0xfeed, i)) {
			ok = 0;
			break;
		}
	strcpy((char *)sdata, ok ? "ok" : "bad");
	send_wait(4);
	printf("fi_check: server: %u pings echoed, RDMA WRITE target %s\n", iters,
	       ok ? "intact" : "differs");
	if (!rdm && !dgram)
		fi_shutdown(ep, 0);
	fi_freeinfo(conn);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	if (!ok)
		fail("RDMA WRITE target differs at byte %u", i);
}

static void client(const char *addr, const char *port, uint32_t iters)
{
	struct fi_info *hints = hints_new(), *info;
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_UNSPEC};
	struct target_info ti;
	struct timespec t0, t1;
	uint64_t bytes = 0;
	double s;

	CHECK(fi_getinfo(FI_VERSION(1, 17), addr, port, 0, hints, &info));
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_eq_open(fabric, &eq_attr, &eq, NULL));
	open_ep(info);
	if (rdm || dgram) {
		size_t len = max_msg;

		if (fi_av_insert(av, info->dest_addr, 1, &peer, 0, NULL) != 1)
			fail("fi_av_insert of the server's address");
		CHECK(fi_getname(&ep->fid, sdata, &len));
		send_wait(len);
	} else {
		CHECK(fi_connect(ep, info->dest_addr, NULL, 0));
		eq_expect(FI_CONNECTED);
	}
	cq_wait("target info");
	memcpy(&ti, rdata, sizeof(ti));
	post_recv();

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint32_t i = 0; i < iters; i++) {
		size_t len = ping_len(i);

		for (size_t k = 0; k < len; k++)
			sdata[k] = pattern(i, (uint32_t)k);
		send_wait(len);
		cq_wait("pong");
		for (size_t k = 0; k < len; k++)
			if (rdata[k] != pattern(i, (uint32_t)k))
				fail("ping %u (%zu B): byte %zu came back %#x, sent %#x", i, len, k,
				     rdata[k], pattern(i, (uint32_t)k));
		bytes += len;
		post_recv();
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (dgram) {
		printf("fi_check: ok (dgram): %u ping-pongs of up to %zu B (%" PRIu64
		       " B each way, intact) in %.3f s\n",
		       iters, max_msg, bytes, s);
		fi_freeinfo(info);
		fi_freeinfo(hints);
		return;
	}

	for (uint32_t k = 0; k < TARGET_LEN; k++)
		target[k] = pattern(0xfeed, k); /* our own copy is the source */
	POST_RETRY(fi_write(ep, target, TARGET_LEN, fi_mr_desc(mr), peer, ti.addr, ti.key, NULL),
		   early);
	cq_wait("fi_write");
	send_wait(1); /* compare now */
	cq_wait("verdict");
	if (strcmp((const char *)rdata, "ok") != 0)
		fail("the server found the 1 MiB RDMA WRITE target differs");
	printf("fi_check: ok (%s): %u ping-pongs (%" PRIu64 " B each way, intact) in %.3f s, "
	       "1 MiB fi_write intact\n",
	       rdm ? "rdm" : "msg", iters, bytes, s);
	if (!rdm)
		fi_shutdown(ep, 0);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

int main(int argc, char **argv)
{
	uint32_t iters;

	if ((argc != 5 && argc != 6) || (strcmp(argv[1], "server") && strcmp(argv[1], "client")) ||
	    (argc == 6 && strcmp(argv[5], "msg") && strcmp(argv[5], "rdm") &&
	     strcmp(argv[5], "dgram"))) {
		fprintf(stderr, "usage: fi_check server|client ADDR PORT ITERS [msg|rdm|dgram]\n");
		return 2;
	}
	rdm = argc == 6 && !strcmp(argv[5], "rdm");
	dgram = argc == 6 && !strcmp(argv[5], "dgram");
	iters = (uint32_t)strtoul(argv[4], NULL, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "server"))
		server(argv[2], argv[3], iters);
	else
		client(argv[2], argv[3], iters);
	return 0;
}
