/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uroce-rawbench: raw DPDK packet I/O between two ports, through drivers/ethdev, with no
 * RoCE at all. It is the baseline the project's RDMA figures are compared with: whatever
 * uroce adds (transport, ICRC, the daemon's queues) is measured against this.
 *
 *   uroce-rawbench [EAL args] -- --role server|client --mode pingpong|blast
 *                  [--size N] [--count N] [--duration S] ...
 *
 * pingpong: the client sends one N-byte frame, the server echoes it, the client takes the
 * round trip with rte_rdtsc; median, p99 and min over --count rounds (after --warmup).
 * blast: after a handshake the client sends N-byte frames as fast as it can for --duration
 * seconds (or --count frames), then END; the server counts what arrives between the first
 * and the last frame and reports back. Both print Mpps and Gbit/s (frame bytes, no
 * preamble/FCS/gap).
 *
 * Frames: broadcast destination, EtherType 0x88b5 (IEEE local experimental), then a small
 * header (magic, type, seq, value). Anything else on the wire (the kernel's IPv6 noise
 * on a veth) is ignored.
 *
 * Both roles stop polling as soon as the link goes down (net_memif crashes when polled
 * after its peer left, doc/ethdev.md), and on SIGINT/SIGTERM, so EAL cleans up.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_pause.h>

#include "uroce_ethdev.h"

#define RB_ETHERTYPE 0x88b5
#define RB_MAGIC 0x72617762u /* "rawb" */
#define RB_HDR 14
#define RB_MIN_SIZE 60

enum rb_type { RB_PING = 1, RB_PONG, RB_DATA, RB_END, RB_RESULT };

struct rb_msg { /* after the Ethernet header, host order: both ends run this program */
	uint32_t magic;
	uint32_t type;
	uint64_t seq;
	uint64_t v1, v2; /* RESULT: frames received, elapsed ns; END: frames sent */
};

struct rb_opts {
	bool server;
	bool blast;
	uint32_t size;
	uint64_t count;
	double duration;
	double timeout;
	double wait;
	uint32_t warmup;
	uint32_t mtu;
	uint16_t mbuf_room;
	const char *port;
	bool verbose;
};

static volatile sig_atomic_t quit;
static struct uroce_eth_port port;
static uint64_t hz;
static uint64_t link_check_at; /* tsc of the next link check */
static bool link_lost;
static uint64_t pings_sent;

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [EAL args] -- --role server|client --mode pingpong|blast\n"
		"  --size N       frame bytes with the Ethernet header, no FCS (default 64)\n"
		"  --count N      pingpong rounds (default 10000); blast: frames (default: "
		"until --duration)\n"
		"  --duration S   blast: seconds of sending (default 2)\n"
		"  --warmup N     pingpong rounds not measured (default 100)\n"
		"  --timeout S    give up after S seconds in all (default 60)\n"
		"  --wait S       how long to wait for the link and the peer (default 10)\n"
		"  --mtu N        port MTU (default 1500; frames up to MTU+18 bytes)\n"
		"  --mbuf-size N  data bytes per mbuf (default 9216; smaller makes chains)\n"
		"  --port NAME    ethdev name (default: the first port)\n"
		"  -v             print the port's counters at the end\n",
		prog);
}

static int parse_opts(int argc, char **argv, struct rb_opts *o)
{
	static const struct option longopts[] = {
		{"role", required_argument, NULL, 'r'},
		{"mode", required_argument, NULL, 'M'},
		{"size", required_argument, NULL, 's'},
		{"count", required_argument, NULL, 'c'},
		{"duration", required_argument, NULL, 'd'},
		{"warmup", required_argument, NULL, 'W'},
		{"timeout", required_argument, NULL, 't'},
		{"wait", required_argument, NULL, 'w'},
		{"mtu", required_argument, NULL, 'm'},
		{"mbuf-size", required_argument, NULL, 'b'},
		{"port", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool role = false, mode = false;
	int c;

	*o = (struct rb_opts){.size = 64, .duration = 2, .timeout = 60, .wait = 10,
			      .warmup = 100, .mtu = 1500};
	optind = 1;
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			o->server = strcmp(optarg, "server") == 0;
			if (!o->server && strcmp(optarg, "client") != 0)
				return -1;
			role = true;
			break;
		case 'M':
			o->blast = strcmp(optarg, "blast") == 0;
			if (!o->blast && strcmp(optarg, "pingpong") != 0)
				return -1;
			mode = true;
			break;
		case 's': o->size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'c': o->count = strtoull(optarg, NULL, 0); break;
		case 'd': o->duration = strtod(optarg, NULL); break;
		case 'W': o->warmup = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 't': o->timeout = strtod(optarg, NULL); break;
		case 'w': o->wait = strtod(optarg, NULL); break;
		case 'm': o->mtu = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'b': o->mbuf_room = (uint16_t)strtoul(optarg, NULL, 0); break;
		case 'p': o->port = optarg; break;
		case 'v': o->verbose = true; break;
		default: return -1;
		}
	}
	if (!role || !mode || optind != argc)
		return -1;
	if (o->size < RB_MIN_SIZE) {
		fprintf(stderr, "rawbench: --size must be at least %d\n", RB_MIN_SIZE);
		return -1;
	}
	if (!o->blast && o->count == 0)
		o->count = 10000;
	return 0;
}

/* ---- frames ----------------------------------------------------------------------------- */

static uint8_t txbuf[65536];

static void put_frame(uint32_t size, uint32_t type, uint64_t seq, uint64_t v1, uint64_t v2)
{
	struct rb_msg m = {.magic = RB_MAGIC, .type = type, .seq = seq, .v1 = v1, .v2 = v2};

	memset(txbuf, 0xff, 6);
	memcpy(txbuf + 6, port.mac, 6);
	txbuf[12] = RB_ETHERTYPE >> 8;
	txbuf[13] = RB_ETHERTYPE & 0xff;
	memcpy(txbuf + RB_HDR, &m, sizeof(m));
	(void)uroce_eth_tx_frame(&port, 0, txbuf, size);
}

static void send_now(uint32_t size, uint32_t type, uint64_t seq, uint64_t v1, uint64_t v2)
{
	put_frame(size, type, seq, v1, v2);
	(void)uroce_eth_tx_flush(&port, 0);
}

static bool get_msg(const struct uroce_eth_frame *f, struct rb_msg *m)
{
	if (f->len < RB_HDR + sizeof(*m) || f->data[12] != (RB_ETHERTYPE >> 8) ||
	    f->data[13] != (RB_ETHERTYPE & 0xff))
		return false;
	memcpy(m, f->data + RB_HDR, sizeof(*m));
	return m->magic == RB_MAGIC;
}

/* Called from every poll loop: cheap (one tsc read) except every 10 ms. */
static inline bool keep_going(uint64_t now)
{
	if (quit || link_lost)
		return false;
	if (now >= link_check_at) {
		link_check_at = now + hz / 100;
		if (!uroce_eth_link_up(&port)) {
			fprintf(stderr, "rawbench: link down: stopping\n");
			link_lost = true;
			return false;
		}
	}
	return true;
}

static double us(uint64_t cycles)
{
	return (double)cycles * 1e6 / (double)hz;
}

static int wait_link(double secs)
{
	uint64_t end = rte_rdtsc() + (uint64_t)(secs * (double)hz);

	while (!uroce_eth_link_up(&port)) {
		if (quit || rte_rdtsc() > end) {
			fprintf(stderr, "rawbench: link of %s not up after %.0f s\n", port.name,
				secs);
			return -1;
		}
		rte_delay_us_sleep(10000);
	}
	link_check_at = 0;
	return 0;
}

/* ---- ending ----------------------------------------------------------------------------- */

/*
 * How a run ends, and why it takes a protocol: a net_memif side that is polling while its
 * peer disconnects reads stale descriptors (measured: 63 ghost frames, one ring wrap old,
 * in one burst) or crashes inside the PMD. So nobody polls while the other closes:
 * the client sends END until the server's RESULT arrives, then stops polling at once;
 * the server, once it saw END, stops polling, sends RESULT and waits before closing.
 */
#define RB_GOODBYE_US 200000

static void say_goodbye(uint64_t v1, uint64_t v2)
{
	for (int k = 0; k < 3 && keep_going(rte_rdtsc()); k++) {
		send_now(RB_MIN_SIZE, RB_RESULT, 0, v1, v2);
		rte_delay_us_sleep(1000);
	}
	rte_delay_us_sleep(RB_GOODBYE_US);
}

/* Sends END (carrying @p sent) until RESULT comes back; @return 0 and the result. */
static int finish(uint64_t sent, struct rb_msg *result)
{
	struct uroce_eth_frame fr[UROCE_ETH_BURST_MAX];
	uint64_t end = rte_rdtsc() + hz, resend = 0;

	while (keep_going(rte_rdtsc()) && rte_rdtsc() < end) {
		uint16_t n;

		if (rte_rdtsc() >= resend) {
			send_now(RB_MIN_SIZE, RB_END, 0, sent, 0);
			resend = rte_rdtsc() + hz / 50;
		}
		n = uroce_eth_rx(&port, 0, fr, UROCE_ETH_BURST_MAX);
		for (uint16_t i = 0; i < n; i++) {
			if (get_msg(&fr[i], result) && result->type == RB_RESULT) {
				uroce_eth_rx_done(&port, 0);
				return 0;
			}
		}
		uroce_eth_rx_done(&port, 0);
	}
	fprintf(stderr, "client: no RESULT from the server\n");
	return -1;
}

/* ---- server ----------------------------------------------------------------------------- */

static int run_server(const struct rb_opts *o)
{
	struct uroce_eth_frame fr[UROCE_ETH_BURST_MAX];
	uint64_t deadline = rte_rdtsc() + (uint64_t)(o->timeout * (double)hz);
	uint64_t echoed = 0, data = 0, data_bytes = 0, first = 0, last = 0, sent_by_client = 0;
	double secs = 0;
	bool done = false;

	printf("server: waiting (%s)\n", o->blast ? "blast" : "pingpong");
	fflush(stdout);
	while (!done) {
		uint64_t now = rte_rdtsc();
		uint16_t n;

		if (!keep_going(now))
			break;
		if (now > deadline) {
			fprintf(stderr, "server: --timeout reached\n");
			break;
		}
		n = uroce_eth_rx(&port, 0, fr, UROCE_ETH_BURST_MAX);
		for (uint16_t i = 0; i < n; i++) {
			struct rb_msg m;

			if (!get_msg(&fr[i], &m))
				continue;
			switch (m.type) {
			case RB_DATA:
				if (data++ == 0)
					first = now;
				last = now;
				data_bytes += fr[i].len;
				break;
			case RB_PING: {
				/* Echo: same bytes back, PONG, our MAC as source. */
				uint8_t *b = txbuf;
				uint32_t len = fr[i].len;

				memcpy(b, fr[i].data, len);
				memcpy(b + 6, port.mac, 6);
				m.type = RB_PONG;
				memcpy(b + RB_HDR, &m, sizeof(m));
				(void)uroce_eth_tx_frame(&port, 0, b, len);
				echoed++;
				break;
			}
			case RB_END:
				sent_by_client = m.v1;
				done = true;
				break;
			default:
				break;
			}
		}
		uroce_eth_rx_done(&port, 0);
		if (n != 0)
			(void)uroce_eth_tx_flush(&port, 0);
	}

	if (!o->blast) {
		printf("server: echoed=%" PRIu64 "\n", echoed);
	} else {
		secs = (double)(last - first) / (double)hz;
		/* The span between the first and last frame holds data - 1 frames' worth. */
		printf("blast-rx: frames=%" PRIu64 " client_sent=%" PRIu64 " bytes=%" PRIu64
		       " seconds=%.3f mpps=%.3f gbps=%.3f\n",
		       data, sent_by_client, data_bytes, secs,
		       secs > 0 ? (double)(data - 1) / secs / 1e6 : 0.0,
		       secs > 0 ? (double)data_bytes * 8 / secs / 1e9 : 0.0);
	}
	fflush(stdout);
	if (done)
		say_goodbye(o->blast ? data : echoed, (uint64_t)(secs * 1e9));
	return done ? 0 : 1;
}

/* ---- client ----------------------------------------------------------------------------- */

/* Pings with seq until a matching pong or @p timeout_cycles; @return RTT cycles or 0. */
static uint64_t ping_once(const struct rb_opts *o, uint64_t seq, uint64_t timeout_cycles)
{
	struct uroce_eth_frame fr[UROCE_ETH_BURST_MAX];
	uint64_t t0 = rte_rdtsc(), now = t0;

	send_now(o->size, RB_PING, seq, 0, 0);
	pings_sent++;
	while (keep_going(now) && now - t0 < timeout_cycles) {
		uint16_t n = uroce_eth_rx(&port, 0, fr, UROCE_ETH_BURST_MAX);

		now = rte_rdtsc();
		for (uint16_t i = 0; i < n; i++) {
			struct rb_msg m;

			if (get_msg(&fr[i], &m) && m.type == RB_PONG && m.seq == seq &&
			    fr[i].len == o->size) {
				uroce_eth_rx_done(&port, 0);
				return now - t0 == 0 ? 1 : now - t0;
			}
		}
	}
	uroce_eth_rx_done(&port, 0);
	return 0;
}

/* Pings until the server answers: it may start after us (af_packet) or be slow to poll. */
static int handshake(const struct rb_opts *o, uint64_t *seq)
{
	uint64_t end = rte_rdtsc() + (uint64_t)(o->wait * (double)hz);

	while (rte_rdtsc() < end && !quit && !link_lost) {
		if (ping_once(o, (*seq)++, hz / 20) != 0)
			return 0;
	}
	fprintf(stderr, "client: no answer from a server in %.0f s\n", o->wait);
	return -1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int run_pingpong(const struct rb_opts *o)
{
	uint64_t *rtt = calloc(o->count, sizeof(*rtt));
	uint64_t seq = 1u << 31, got = 0, lost = 0;
	/* 5 s: a lost frame, not a slow one. With one frame in flight neither veth nor memif
	 * can drop it (no ring fills), but on two shared cores one side can be off the CPU
	 * for long: with a CPU-bound process beside the two pollers a CI run saw an 89 ms
	 * round trip and a pong 100 ms late (then the limit); with an MPI job's four pollers
	 * beside them, round trips of 0.59 s and two pongs more than 1 s late, though the
	 * server had echoed every ping. */
	uint64_t timeout = 5 * hz;
	struct rb_msg res;
	int rc = 1;

	if (rtt == NULL)
		return 1;
	if (handshake(o, &seq) != 0)
		goto out;
	for (uint32_t i = 0; i < o->warmup && keep_going(rte_rdtsc()); i++)
		(void)ping_once(o, seq++, timeout);
	for (uint64_t i = 0; i < o->count && keep_going(rte_rdtsc()); i++) {
		uint64_t c = ping_once(o, seq++, timeout);

		if (c != 0)
			rtt[got++] = c;
		else
			lost++;
	}
	if (finish(got, &res) == 0)
		printf("pingpong: pings=%" PRIu64 " server_echoed=%" PRIu64 "%s\n", pings_sent,
		       res.v1, res.v1 > pings_sent ? " (ghost frames!)" : "");
	if (got == 0) {
		fprintf(stderr, "client: no round completed\n");
		goto out;
	}
	qsort(rtt, got, sizeof(*rtt), cmp_u64);
	printf("pingpong: size=%u rounds=%" PRIu64 " lost=%" PRIu64
	       " median_us=%.2f p99_us=%.2f min_us=%.2f max_us=%.2f\n",
	       o->size, got, lost, us(rtt[got / 2]), us(rtt[(got * 99) / 100]), us(rtt[0]),
	       us(rtt[got - 1]));
	/* Percentiles 0..100 of the half round trip, for a CDF (doc/benchmarks.md). */
	printf("pingpong: cdf_half_rtt_us=");
	for (int q = 0; q <= 100; q++)
		printf("%s%.2f", q ? "," : "", us(rtt[(got - 1) * (uint64_t)q / 100]) / 2);
	printf("\n");
	rc = got == o->count && lost == 0 ? 0 : 1;
out:
	free(rtt);
	return rc;
}

static int run_blast(const struct rb_opts *o)
{
	struct uroce_eth_stats s0, s1;
	struct rb_msg res;
	uint64_t seq = 1u << 31, start, end, now, attempted = 0, sent;
	uint64_t limit = o->count != 0 ? o->count : UINT64_MAX;
	double secs;
	bool result = false;

	if (handshake(o, &seq) != 0)
		return 1;
	(void)uroce_eth_stats_get(&port, &s0);
	start = rte_rdtsc();
	end = start + (uint64_t)(o->duration * (double)hz);
	put_frame(o->size, RB_DATA, 0, 0, 0);
	now = start;
	while (attempted < limit && now < end && keep_going(now)) {
		/* 32 frames between clock reads; seq is stamped in place, header built once. */
		for (int k = 0; k < UROCE_ETH_TX_BATCH; k++) {
			memcpy(txbuf + RB_HDR + offsetof(struct rb_msg, seq), &attempted,
			       sizeof(attempted));
			if (uroce_eth_tx_frame(&port, 0, txbuf, o->size) == 0)
				attempted++;
		}
		now = rte_rdtsc();
	}
	(void)uroce_eth_tx_flush(&port, 0);
	now = rte_rdtsc();
	(void)uroce_eth_stats_get(&port, &s1);
	sent = s1.tx_frames - s0.tx_frames;
	secs = (double)(now - start) / (double)hz;
	printf("blast-tx: size=%u frames=%" PRIu64 " dropped=%" PRIu64 " seconds=%.3f mpps=%.3f "
	       "gbps=%.3f\n",
	       o->size, sent, s1.tx_dropped - s0.tx_dropped, secs, (double)sent / secs / 1e6,
	       (double)sent * o->size * 8 / secs / 1e9);
	fflush(stdout);
	/* Let the server drain, tell it we are done, wait for its count. */
	rte_delay_us_sleep(20000);
	result = finish(sent, &res) == 0;
	if (result)
		printf("blast-result: server_frames=%" PRIu64 " of %" PRIu64
		       " (%.1f%%) server_mpps=%.3f\n",
		       res.v1, sent, sent ? 100.0 * (double)res.v1 / (double)sent : 0.0,
		       res.v2 ? (double)res.v1 / ((double)res.v2 / 1e9) / 1e6 : 0.0);
	return sent > 0 && result ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct uroce_eth_port_cfg cfg = {0};
	struct rb_opts o;
	int ret, rc;

	ret = uroce_eth_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "rawbench: EAL init failed: %s\n", strerror(-ret));
		return 2;
	}
	argc -= ret;
	argv += ret;
	if (parse_opts(argc, argv, &o) != 0) {
		usage(argv[0]);
		uroce_eth_eal_cleanup();
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	hz = rte_get_tsc_hz();

	cfg.name = o.port;
	if (o.port == NULL) {
		uint16_t pid = rte_eth_find_next(0);

		if (pid >= RTE_MAX_ETHPORTS) {
			fprintf(stderr, "rawbench: no port (give one with --vdev)\n");
			uroce_eth_eal_cleanup();
			return 2;
		}
		cfg.port_id = pid;
	}
	cfg.mtu = o.mtu;
	cfg.mbuf_room = o.mbuf_room;
	ret = uroce_eth_port_open(&port, &cfg);
	if (ret != 0) {
		fprintf(stderr, "rawbench: port open: %s\n", strerror(-ret));
		uroce_eth_eal_cleanup();
		return 2;
	}
	printf("%s: port %s (%s) mac %02x:%02x:%02x:%02x:%02x:%02x mtu %u%s mbuf %u\n",
	       o.server ? "server" : "client", port.name, port.driver, port.mac[0], port.mac[1],
	       port.mac[2], port.mac[3], port.mac[4], port.mac[5], port.mtu,
	       port.sw_mtu ? " (software)" : "", port.mbuf_room);
	fflush(stdout); /* the test starts the client on this line: a memif server listens */
	if (o.size > port.max_frame) {
		fprintf(stderr, "rawbench: --size %u exceeds MTU %u + %d: raise --mtu\n", o.size,
			port.mtu, UROCE_ETH_FRAME_OVERHEAD);
		rc = 2;
	} else if (wait_link(o.wait) != 0) {
		rc = 1;
	} else {
		fflush(stdout);
		if (o.server)
			rc = run_server(&o);
		else
			rc = o.blast ? run_blast(&o) : run_pingpong(&o);
	}
	if (o.verbose)
		uroce_eth_stats_print(&port, o.server ? "server: stat " : "client: stat ");
	/* After a link loss the peer is gone: closing a memif port is safe, polling is not. */
	uroce_eth_port_close(&port);
	uroce_eth_eal_cleanup();
	return rc;
}
