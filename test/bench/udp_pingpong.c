/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uroce-bench-udp: kernel UDP between two processes (two network namespaces over a veth
 * pair, or loopback), the "what users would use instead" baseline beside uroce-rawbench
 * (raw DPDK) and uroce-xfer (uroced). test/bench/two_hosts.sh runs all three on the same
 * links.
 *
 *   uroce-bench-udp --role server [--port P] [--wait busy|block] [--cpu N] [--timeout S]
 *   uroce-bench-udp --role client --addr IP --mode pingpong|blast [--port P] [--size N]
 *                   [--iters N] [--warmup N] [--duration S] [--wait busy|block] [--cpu N]
 *
 * pingpong: the client sends one datagram of --size bytes, the server echoes it, the
 * client times the round trip with CLOCK_MONOTONIC; one not back within 100 ms is
 * counted lost (the run fails when more than 1 % are). It prints the median, p99 and min of
 * the full round trip (rtt_*) AND of half of it (half_rtt_*): uroce-xfer lat prints the
 * half round trip (as perftest does), uroce-rawbench the full one.
 * blast: the client sends --size-byte datagrams (default 1472: a 1514-byte frame at MTU
 * 1500) for --duration seconds; the server counts what arrives between the first and the
 * last one and reports it back; Gbit/s of UDP payload and of Ethernet frame bytes (no
 * preamble/FCS/gap, as uroce-rawbench counts) are printed.
 *
 * --wait busy (default): non-blocking sockets, recv(MSG_DONTWAIT) in a spin loop (what
 * a poll-mode daemon does); --wait block: blocking recv (the ordinary program).
 * The server serves one client run, then exits.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define UB_MAGIC 0x75647062u /* "udpb" */
#define UB_HDR_WIRE 42       /* Ethernet 14 + IPv4 20 + UDP 8 */
#define UB_MAX 65507
#define UB_MIN_PING 8 /* magic and type */

enum ub_type { UB_HELLO = 1, UB_PING, UB_PONG, UB_DATA, UB_END, UB_RESULT };

struct ub_msg { /* host order: both ends run this program */
	uint32_t magic;
	uint32_t type;
	uint64_t seq;
	uint64_t v1, v2, v3; /* RESULT: data datagrams, data bytes, ns first..last */
};

struct ub_opts {
	bool server;
	bool blast;
	bool busy;
	const char *addr;
	uint16_t port;
	uint32_t size;
	uint64_t iters;
	uint64_t warmup;
	double duration;
	double timeout;
	int cpu;
	long pause_us; /* client: silence before each ping (the latency after idle) */
};

static volatile sig_atomic_t quit;
static uint8_t buf[UB_MAX + 64];
static uint8_t rbuf[UB_MAX + 64];

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uroce-bench-udp --role server|client [options]\n"
		"  --addr IP       client: the server's IPv4 address\n"
		"  --port P        UDP port (default 18700)\n"
		"  --mode M        client: pingpong (default) or blast\n"
		"  --size N        datagram payload bytes (pingpong default 8, blast 1472)\n"
		"  --iters N       pingpong rounds measured (default 20000)\n"
		"  --warmup N      pingpong rounds not measured (default 200)\n"
		"  --duration S    blast seconds (default 2)\n"
		"  --wait busy|block  busy: MSG_DONTWAIT spinning (default); block: blocking recv\n"
		"  --cpu N         pin to CPU N (default: not pinned)\n"
		"  --pause-us N    pingpong client: wait N us before each ping (after silence)\n"
		"  --timeout S     give up after S seconds in all (default 60)\n");
}

static int parse_opts(int argc, char **argv, struct ub_opts *o)
{
	static const struct option lo[] = {
		{"role", required_argument, NULL, 'r'},
		{"addr", required_argument, NULL, 'a'},
		{"port", required_argument, NULL, 'p'},
		{"mode", required_argument, NULL, 'M'},
		{"size", required_argument, NULL, 's'},
		{"iters", required_argument, NULL, 'n'},
		{"warmup", required_argument, NULL, 'W'},
		{"duration", required_argument, NULL, 'd'},
		{"wait", required_argument, NULL, 'w'},
		{"cpu", required_argument, NULL, 'c'},
		{"timeout", required_argument, NULL, 't'},
		{"pause-us", required_argument, NULL, 'P'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool role = false, size = false;
	long v;
	int c;

	*o = (struct ub_opts){.busy = true, .port = 18700, .iters = 20000, .warmup = 200,
			      .duration = 2, .timeout = 60, .cpu = -1};
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'r':
			o->server = strcmp(optarg, "server") == 0;
			if (!o->server && strcmp(optarg, "client") != 0)
				return -1;
			role = true;
			break;
		case 'a': o->addr = optarg; break;
		case 'p':
			v = strtol(optarg, NULL, 0);
			if (v <= 0 || v > 65535)
				return -1;
			o->port = (uint16_t)v;
			break;
		case 'M':
			o->blast = strcmp(optarg, "blast") == 0;
			if (!o->blast && strcmp(optarg, "pingpong") != 0)
				return -1;
			break;
		case 's':
			v = strtol(optarg, NULL, 0);
			if (v < 0 || v > UB_MAX)
				return -1;
			o->size = (uint32_t)v;
			size = true;
			break;
		case 'n': o->iters = strtoull(optarg, NULL, 0); break;
		case 'P': o->pause_us = strtol(optarg, NULL, 0); break;
		case 'W': o->warmup = strtoull(optarg, NULL, 0); break;
		case 'd': o->duration = strtod(optarg, NULL); break;
		case 'w':
			o->busy = strcmp(optarg, "busy") == 0;
			if (!o->busy && strcmp(optarg, "block") != 0)
				return -1;
			break;
		case 'c': o->cpu = atoi(optarg); break;
		case 't': o->timeout = strtod(optarg, NULL); break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	if (!role || optind < argc || (!o->server && !o->addr) || o->iters == 0)
		return -1;
	if (!size)
		o->size = o->blast ? 1472 : 8;
	/* A ping carries at least the magic and the type (8 bytes); a blast datagram the
	 * whole header. */
	if (o->size < (o->blast ? sizeof(struct ub_msg) : UB_MIN_PING)) {
		fprintf(stderr, "udp: --size must be at least %zu\n",
			o->blast ? sizeof(struct ub_msg) : (size_t)UB_MIN_PING);
		return -1;
	}
	return 0;
}

/* Sends a control message (at least the header, or @len bytes if larger). */
static int send_msg(int fd, const struct sockaddr_in *to, uint32_t type, uint64_t seq,
		    uint64_t v1, uint64_t v2, uint64_t v3, uint32_t len)
{
	struct ub_msg m = {.magic = UB_MAGIC, .type = type, .seq = seq, .v1 = v1, .v2 = v2,
			   .v3 = v3};

	if (len < sizeof(m))
		len = sizeof(m);
	memcpy(buf, &m, sizeof(m));
	return sendto(fd, buf, len, 0, (const struct sockaddr *)to,
		      to ? sizeof(*to) : 0) < 0 ? -errno : 0;
}

/* One datagram, waiting at most until @deadline (ns). @return its length, 0 on timeout,
 * <0 on error. */
static ssize_t recv_until(int fd, const struct ub_opts *o, struct sockaddr_in *from,
			  uint64_t deadline)
{
	socklen_t fl = sizeof(*from);
	unsigned int spins = 0;
	ssize_t n;

	for (;;) {
		n = recvfrom(fd, rbuf, sizeof(rbuf), o->busy ? MSG_DONTWAIT : 0,
			     (struct sockaddr *)from, from ? &fl : NULL);
		if (n >= 0)
			return n;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (quit)
			return -EINTR;
		/* busy: read the clock every 64 empty polls; block: SO_RCVTIMEO woke us. */
		if (!o->busy || (++spins & 63) == 0) {
			if (now_ns() >= deadline)
				return 0;
		}
	}
}

static bool is_msg(ssize_t n, uint32_t type, struct ub_msg *m)
{
	if (n < (ssize_t)sizeof(*m))
		return false;
	memcpy(m, rbuf, sizeof(*m));
	return m->magic == UB_MAGIC && (type == 0 || m->type == type);
}

static int open_socket(const struct ub_opts *o)
{
	struct timeval tv = {.tv_sec = 0, .tv_usec = 20000}; /* block: wake to check time */
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	int big = 8 << 20;

	if (fd < 0) {
		perror("udp: socket");
		return -1;
	}
	/* Room for a blast; FORCE works as root, the plain one up to rmem_max otherwise. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)) != 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big)) != 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	if (!o->busy)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int run_server(const struct ub_opts *o)
{
	struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons(o->port),
				 .sin_addr.s_addr = htonl(INADDR_ANY)};
	struct sockaddr_in from;
	uint64_t end = now_ns() + (uint64_t)(o->timeout * 1e9), echoed = 0;
	uint64_t data = 0, data_bytes = 0, first = 0, last = 0, linger = 0;
	int fd = open_socket(o);

	if (fd < 0)
		return 1;
	if (bind(fd, (struct sockaddr *)&me, sizeof(me)) != 0) {
		perror("udp: bind");
		close(fd);
		return 1;
	}
	printf("udp-server: listening on port %u (%s)\n", o->port,
	       o->busy ? "busy polling, MSG_DONTWAIT" : "blocking recv");
	fflush(stdout);
	for (;;) {
		uint64_t deadline = linger ? linger : end;
		ssize_t n = recv_until(fd, o, &from, deadline);
		struct ub_msg m;

		if (n == 0 || n == -EINTR) {
			if (linger)
				break; /* served, and the client stopped asking */
			fprintf(stderr, "udp-server: --timeout reached\n");
			close(fd);
			return 1;
		}
		if (n < 0) {
			fprintf(stderr, "udp-server: recv: %s\n", strerror((int)-n));
			close(fd);
			return 1;
		}
		if (n < UB_MIN_PING)
			continue;
		/* A ping may be shorter than the header: magic and type are enough. */
		memset(&m, 0, sizeof(m));
		memcpy(&m, rbuf, (size_t)n < sizeof(m) ? (size_t)n : sizeof(m));
		if (m.magic != UB_MAGIC)
			continue;
		switch (m.type) {
		case UB_HELLO:
			(void)send_msg(fd, &from, UB_HELLO, m.seq, 0, 0, 0, 0);
			break;
		case UB_PING: {
			/* Echo the datagram as it came, as a PONG. */
			uint32_t pong = UB_PONG;

			memcpy(rbuf + offsetof(struct ub_msg, type), &pong, sizeof(pong));
			if (sendto(fd, rbuf, (size_t)n, 0, (struct sockaddr *)&from,
				   sizeof(from)) >= 0)
				echoed++;
			break;
		}
		case UB_DATA:
			last = now_ns();
			if (!data)
				first = last;
			data++;
			data_bytes += (uint64_t)n;
			break;
		case UB_END:
			(void)send_msg(fd, &from, UB_RESULT, m.seq, data ? data : echoed,
				       data_bytes, last - first, 0);
			/* Answer repeated ENDs for 200 ms, then go. */
			linger = now_ns() + 200000000u;
			break;
		default:
			break;
		}
	}
	if (data)
		printf("udp-server: received %llu datagrams, %llu bytes\n",
		       (unsigned long long)data, (unsigned long long)data_bytes);
	else
		printf("udp-server: echoed %llu datagrams\n", (unsigned long long)echoed);
	close(fd);
	return 0;
}

/* HELLO every 50 ms until the server answers (it may start after us). */
static int handshake(int fd, const struct ub_opts *o, uint64_t end)
{
	struct ub_msg m;

	while (now_ns() < end && !quit) {
		if (send_msg(fd, NULL, UB_HELLO, 1, 0, 0, 0, 0) != 0 && errno != ECONNREFUSED)
			usleep(10000);
		for (;;) {
			ssize_t n = recv_until(fd, o, NULL, now_ns() + 50000000u);

			if (n <= 0)
				break;
			if (is_msg(n, UB_HELLO, &m))
				return 0;
		}
	}
	fprintf(stderr, "udp-client: no answer from %s:%u\n", o->addr, o->port);
	return -1;
}

/* END until RESULT (UDP may lose either). */
static int finish(int fd, const struct ub_opts *o, uint64_t sent, struct ub_msg *res)
{
	int i;

	for (i = 0; i < 50 && !quit; i++) {
		uint64_t until = now_ns() + 20000000u;

		(void)send_msg(fd, NULL, UB_END, 2, sent, 0, 0, 0);
		for (;;) {
			ssize_t n = recv_until(fd, o, NULL, until);

			if (n <= 0)
				break;
			if (is_msg(n, UB_RESULT, res))
				return 0;
		}
	}
	fprintf(stderr, "udp-client: no RESULT from the server\n");
	return -1;
}

static int run_pingpong(int fd, const struct ub_opts *o, uint64_t end)
{
	uint64_t *rtt = calloc(o->iters, sizeof(*rtt));
	uint64_t got = 0, lost = 0, seq = 100, total = o->warmup + o->iters, i;
	uint32_t len = o->size;
	struct ub_msg m, res;
	int rc = 1;

	if (!rtt)
		return 1;
	/* The ping carries the header when it fits; a smaller ping is its first --size
	 * bytes (magic and type at least), and the answer is recognised by its length, magic
	 * and type (a late answer then cannot be told from this one: one ping is out at a
	 * time and a lost one is waited 100 ms for, so that needs a 100 ms delay). */
	for (i = 0; i < total && now_ns() < end && !quit; i++) {
		uint64_t t0, t1, deadline;
		bool ok = false;

		if (o->pause_us > 0 && i >= o->warmup)
			usleep((useconds_t)o->pause_us);
		m = (struct ub_msg){.magic = UB_MAGIC, .type = UB_PING, .seq = ++seq};
		memset(buf, 0, len > sizeof(m) ? len : sizeof(m));
		memcpy(buf, &m, sizeof(m)); /* only the first len bytes go */
		t0 = now_ns();
		if (send(fd, buf, len, 0) < 0) {
			perror("udp-client: send");
			goto out;
		}
		deadline = t0 + 100000000u; /* 100 ms: a lost datagram, not a slow one */
		for (;;) {
			ssize_t n = recv_until(fd, o, NULL, deadline);

			if (n <= 0)
				break;
			if (n != (ssize_t)len ||
			    memcmp(rbuf, &(uint32_t){UB_MAGIC}, sizeof(uint32_t)) != 0 ||
			    memcmp(rbuf + offsetof(struct ub_msg, type), &(uint32_t){UB_PONG},
				   sizeof(uint32_t)) != 0)
				continue;
			if (len >= sizeof(m)) {
				struct ub_msg a;

				memcpy(&a, rbuf, sizeof(a));
				if (a.seq != seq)
					continue; /* a late answer to an earlier ping */
			}
			ok = true;
			break;
		}
		t1 = now_ns();
		if (i < o->warmup)
			continue;
		if (ok)
			rtt[got++] = t1 - t0;
		else
			lost++;
	}
	if (finish(fd, o, got, &res) != 0)
		goto out;
	if (got == 0) {
		fprintf(stderr, "udp-client: no round completed\n");
		goto out;
	}
	qsort(rtt, got, sizeof(*rtt), cmp_u64);
	{
		double med = (double)rtt[got / 2] / 1e3, p99 = (double)rtt[(got * 99) / 100] / 1e3;
		double min = (double)rtt[0] / 1e3;

		printf("udp-pingpong: size=%u rounds=%llu lost=%llu wait=%s server_echoed=%llu "
		       "rtt_median_us=%.2f rtt_p99_us=%.2f rtt_min_us=%.2f "
		       "half_rtt_median_us=%.2f half_rtt_p99_us=%.2f half_rtt_min_us=%.2f\n",
		       len, (unsigned long long)got, (unsigned long long)lost,
		       o->busy ? "busy" : "block", (unsigned long long)res.v1, med, p99, min,
		       med / 2, p99 / 2, min / 2);
		/* Percentiles 0..100 of the half round trip, for a CDF (doc/benchmarks.md). */
		printf("udp-pingpong: cdf_half_rtt_us=");
		for (int q = 0; q <= 100; q++)
			printf("%s%.2f", q ? "," : "",
			       (double)rtt[(got - 1) * (uint64_t)q / 100] / 2e3);
		printf("\n");
		printf("udp-pingpong: %u B UDP ping-pong: round trip median %.2f us, p99 %.2f us; "
		       "half round trip (RTT/2, as uroce-xfer lat prints) median %.2f us, "
		       "p99 %.2f us\n", len, med, p99, med / 2, p99 / 2);
	}
	/* UDP may lose a datagram on a loaded veth (3 of 3000 did beside a CI run): the
	 * figures are of the rounds that completed and the loss is printed. Only a loss
	 * above 1 % fails the run, where the link, not the scheduler, is the story. */
	rc = lost * 100 <= total - o->warmup ? 0 : 1;
out:
	free(rtt);
	return rc;
}

static int run_blast(int fd, const struct ub_opts *o)
{
	struct ub_msg m = {.magic = UB_MAGIC, .type = UB_DATA}, res;
	uint64_t sent = 0, refused = 0, start, stop, now;
	uint32_t len = o->size < sizeof(m) ? (uint32_t)sizeof(m) : o->size;
	double secs, rx_secs, pps;

	memset(buf, 0xa5, len);
	start = now_ns();
	stop = start + (uint64_t)(o->duration * 1e9);
	now = start;
	while (now < stop && !quit) {
		for (int k = 0; k < 32; k++) {
			m.seq = sent;
			memcpy(buf, &m, sizeof(m));
			if (send(fd, buf, len, o->busy ? MSG_DONTWAIT : 0) >= 0)
				sent++;
			else
				refused++; /* EAGAIN (socket buffer full) or ECONNREFUSED */
		}
		now = now_ns();
	}
	secs = (double)(now - start) / 1e9;
	printf("udp-blast-tx: size=%u datagrams=%llu refused=%llu seconds=%.3f kpps=%.1f "
	       "payload_gbps=%.3f\n", len, (unsigned long long)sent, (unsigned long long)refused,
	       secs, (double)sent / secs / 1e3, (double)sent * len * 8 / secs / 1e9);
	usleep(20000); /* let the server drain */
	if (finish(fd, o, sent, &res) != 0)
		return 1;
	rx_secs = (double)res.v3 / 1e9;
	pps = rx_secs > 0 ? (double)res.v1 / rx_secs : 0;
	printf("udp-blast: size=%u received=%llu of %llu (%.1f%%) rx_kpps=%.1f "
	       "rx_payload_gbps=%.3f rx_frame_gbps=%.3f (frame = payload + %d B Ethernet/IPv4/UDP "
	       "headers)\n", len, (unsigned long long)res.v1, (unsigned long long)sent,
	       sent ? 100.0 * (double)res.v1 / (double)sent : 0.0, pps / 1e3,
	       pps * len * 8 / 1e9, pps * (len + UB_HDR_WIRE) * 8 / 1e9, UB_HDR_WIRE);
	return res.v1 > 0 ? 0 : 1;
}

static int run_client(const struct ub_opts *o)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(o->port)};
	uint64_t end = now_ns() + (uint64_t)(o->timeout * 1e9);
	int fd, rc;

	if (inet_pton(AF_INET, o->addr, &to.sin_addr) != 1) {
		fprintf(stderr, "udp-client: bad address %s\n", o->addr);
		return 1;
	}
	fd = open_socket(o);
	if (fd < 0)
		return 1;
	if (connect(fd, (struct sockaddr *)&to, sizeof(to)) != 0) {
		perror("udp-client: connect");
		close(fd);
		return 1;
	}
	rc = handshake(fd, o, end) != 0 ? 1 :
	     o->blast			? run_blast(fd, o) :
					  run_pingpong(fd, o, end);
	close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	struct ub_opts o;

	if (parse_opts(argc, argv, &o) != 0) {
		usage(stderr);
		return 2;
	}
	if (o.cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(o.cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) != 0)
			fprintf(stderr, "udp: cannot pin to CPU %d: %s\n", o.cpu, strerror(errno));
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	setvbuf(stdout, NULL, _IOLBF, 0);
	return o.server ? run_server(&o) : run_client(&o);
}
