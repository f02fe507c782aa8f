/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ipstack against the Linux kernel: the proof that what the unit tests check is
 * what a real stack expects.
 *
 * Two network namespaces joined by a veth pair. In one, the veth end has no address and
 * IPv6 disabled, so the kernel there stays silent; lib/ipstack runs on an AF_PACKET
 * socket bound to it, with 10.77.0.2 and fd00:77::2. In the other, the kernel has
 * 10.77.0.1/24 and fd00:77::1/64 (no DAD). Then:
 *   1. we resolve the kernel's IPv4 and IPv6 addresses (ARP request, Neighbor
 *      Solicitation): both must give the kernel veth's MAC;
 *   2. the kernel pings us: ping -c 3, ping -6 -c 3, a 1400-byte ping with DF, and
 *      ping -6 to our link-local address: all must succeed;
 *   3. `ip neigh` in the kernel's namespace must show our MAC for both addresses;
 *   4. resolving again is answered from the cache.
 * Exit 0 on success, 1 on failure, 77 (skipped) without root, ip or ping. The parent
 * process creates and always deletes the namespaces (deleting a namespace deletes its
 * veth end, and with it the pair); the test itself runs in a child, which the parent
 * kills if it takes more than 25 s or if the parent is interrupted.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "uroce_ipstack.h"
#include "uroce_wire.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

#define TIME_LIMIT_S 25

static const uint8_t our_mac[6] = {0x02, 0x55, 0x52, 0x4f, 0x00, 0x02};
static const uint8_t kernel_mac[6] = {0x02, 0x55, 0x52, 0x4f, 0x00, 0x01};
static const char our_v4[] = "10.77.0.2", kernel_v4[] = "10.77.0.1";
static const char our_v6[] = "fd00:77::2", kernel_v6[] = "fd00:77::1";

static char ns_stack[32], ns_kernel[32], if_stack[IFNAMSIZ], if_kernel[IFNAMSIZ];
static volatile sig_atomic_t interrupted;

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	if (rc != 0)
		fprintf(stderr, "ipstack_kernel: failed (%d): %s\n", rc, cmd);
	return rc;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void fmt_mac(char *buf, const uint8_t *m)
{
	sprintf(buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

/* ---- the child: lib/ipstack on the raw socket ----------------------------------------- */

struct rig {
	int fd;
	struct uroce_ip_stack *s;
	bool resolved;
	uint8_t mac[6];
	int err;
	uint64_t cookie;
};

static int raw_tx(void *ctx, const uint8_t *frame, uint32_t len)
{
	struct rig *r = ctx;

	return send(r->fd, frame, len, 0) == (ssize_t)len ? 0 : -1;
}

static void on_resolved(void *ctx, uint64_t cookie, const uint8_t gid[16], const uint8_t *mac,
			int err)
{
	struct rig *r = ctx;

	(void)gid;
	if (cookie != r->cookie)
		return;
	r->resolved = true;
	r->err = err;
	if (mac)
		memcpy(r->mac, mac, 6);
}

/* UROCE_IPK_TRACE=1: one line per received frame, with the stack's verdict. */
static void trace(const uint8_t *f, uint32_t len, enum uroce_ip_verdict v)
{
	static int on = -1;
	static const char *const names[] = {"drop", "consumed", "roce"};
	uint16_t type;

	if (on < 0)
		on = getenv("UROCE_IPK_TRACE") != NULL;
	if (!on || len < 14)
		return;
	type = (uint16_t)(f[12] << 8 | f[13]);
	printf("  rx %4u bytes to %02x:%02x:%02x:%02x:%02x:%02x type %04x", len, f[0], f[1], f[2],
	       f[3], f[4], f[5], type);
	if (type == 0x86dd && len >= 55)
		printf(" next %u icmp6 %u", f[20], f[20] == 58 ? f[54] : 0);
	printf(" -> %s\n", names[v]);
}

/* Receives and processes for up to @ms milliseconds, or until @until_pid exits (its
 * wait status through @status), or until a resolution arrives (@until_pid 0). */
static bool pump(struct rig *r, int ms, pid_t until_pid, int *status)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000ull;
	static uint8_t buf[UROCE_IP_FRAME_MAX + 64];

	while (now_ns() < end) {
		struct pollfd p = {.fd = r->fd, .events = POLLIN};
		uint64_t dl = uroce_ip_next_deadline(r->s), t = now_ns();
		int wait_ms = 10;

		if (dl != UINT64_MAX && dl > t && (dl - t) / 1000000 < (uint64_t)wait_ms)
			wait_ms = (int)((dl - t) / 1000000);
		poll(&p, 1, wait_ms);
		for (;;) {
			struct sockaddr_ll from;
			socklen_t flen = sizeof(from);
			ssize_t n = recvfrom(r->fd, buf, sizeof(buf), MSG_DONTWAIT,
					     (struct sockaddr *)&from, &flen);

			if (n < 0)
				break;
			if (from.sll_pkttype == PACKET_OUTGOING)
				continue; /* our own, if IGNORE_OUTGOING is not there */
			trace(buf, (uint32_t)n, uroce_ip_input(r->s, buf, (uint32_t)n, now_ns()));
		}
		uroce_ip_process(r->s, now_ns());
		if (until_pid > 0) {
			if (waitpid(until_pid, status, WNOHANG) == until_pid)
				return true;
		} else if (r->resolved) {
			return true;
		}
	}
	return false;
}

static bool run_cmd(struct rig *r, const char *what, char *const argv[])
{
	int status = 0;
	pid_t pid;

	printf("--- %s\n", what);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	if (!pump(r, 10000, pid, &status)) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fprintf(stderr, "FAIL %s: did not finish in 10 s\n", what);
		return false;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "FAIL %s: exit status %d\n", what,
			WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return false;
	}
	return true;
}

static bool resolve(struct rig *r, const char *addr, bool expect_cached)
{
	uint8_t gid[16] = {0}, mac[6];
	char got[24], want[24];
	uint64_t t0 = now_ns();
	int rc;

	if (strchr(addr, ':')) {
		inet_pton(AF_INET6, addr, gid);
	} else {
		struct in_addr v4;

		inet_pton(AF_INET, addr, &v4);
		uroce_gid_from_ipv4(gid, &v4);
	}
	r->resolved = false;
	r->cookie++;
	rc = uroce_ip_resolve(r->s, gid, t0, mac, r->cookie);
	if (rc == 0) {
		memcpy(r->mac, mac, 6);
	} else if (rc == -EAGAIN && !expect_cached) {
		if (!pump(r, 5000, 0, NULL)) {
			fprintf(stderr, "FAIL resolve %s: no answer in 5 s\n", addr);
			return false;
		}
		if (r->err != 0) {
			fprintf(stderr, "FAIL resolve %s: error %d\n", addr, r->err);
			return false;
		}
	} else {
		fprintf(stderr, "FAIL resolve %s: %d (%s)\n", addr, rc,
			expect_cached ? "expected 0 from the cache" : "expected -EAGAIN");
		return false;
	}
	fmt_mac(got, r->mac);
	fmt_mac(want, kernel_mac);
	printf("resolve %-10s -> %s in %.3f ms%s\n", addr, got, (double)(now_ns() - t0) / 1e6,
	       rc == 0 ? " (cache)" : "");
	if (memcmp(r->mac, kernel_mac, 6) != 0) {
		fprintf(stderr, "FAIL resolve %s: got %s, the kernel veth is %s\n", addr, got,
			want);
		return false;
	}
	return true;
}

static bool neigh_shows_us(void)
{
	char cmd[160], line[256], mac[24];
	bool v4 = false, v6 = false;
	FILE *p;

	fmt_mac(mac, our_mac);
	snprintf(cmd, sizeof(cmd), "ip netns exec %s ip neigh show dev %s", ns_kernel, if_kernel);
	printf("--- %s\n", cmd);
	p = popen(cmd, "r");
	if (p == NULL)
		return false;
	while (fgets(line, sizeof(line), p)) {
		char addr[64] = "", lladdr[32] = "";

		fputs(line, stdout);
		if (sscanf(line, "%63s lladdr %31s", addr, lladdr) == 2 &&
		    strcmp(lladdr, mac) == 0) {
			v4 |= strcmp(addr, our_v4) == 0;
			v6 |= strcmp(addr, our_v6) == 0;
		}
	}
	pclose(p);
	if (!v4 || !v6)
		fprintf(stderr, "FAIL ip neigh: our MAC %s not listed for %s%s%s\n", mac,
			v4 ? "" : our_v4, !v4 && !v6 ? " and " : "", v6 ? "" : our_v6);
	return v4 && v6;
}

static int child(void)
{
	struct uroce_ip_cfg cfg;
	struct rig r = {0};
	struct sockaddr_ll sll = {0};
	struct ifreq ifr = {0};
	struct packet_mreq mr = {0};
	char path[64], ll_target[80], ll[INET6_ADDRSTRLEN];
	uint8_t ll_addr[16];
	int nsfd, one = 1;
	bool ok = true;

	snprintf(path, sizeof(path), "/run/netns/%s", ns_stack);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) != 0) {
		perror("setns");
		return 1;
	}
	close(nsfd);
	r.fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (r.fd < 0) {
		perror("socket(AF_PACKET)");
		return 1;
	}
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = (int)if_nametoindex(if_stack);
	if (sll.sll_ifindex == 0 || bind(r.fd, (struct sockaddr *)&sll, sizeof(sll)) != 0) {
		perror("bind");
		return 1;
	}
	setsockopt(r.fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	/* Promiscuous, as a DPDK port is: the stack itself decides what is ours. */
	mr.mr_ifindex = sll.sll_ifindex;
	mr.mr_type = PACKET_MR_PROMISC;
	setsockopt(r.fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", if_stack);
	if (ioctl(r.fd, SIOCGIFHWADDR, &ifr) != 0 ||
	    memcmp(ifr.ifr_hwaddr.sa_data, our_mac, 6) != 0) {
		fprintf(stderr, "FAIL: %s does not have the MAC we set\n", if_stack);
		return 1;
	}

	uroce_ip_cfg_init(&cfg);
	memcpy(cfg.mac, our_mac, 6);
	inet_pton(AF_INET, our_v4, cfg.v4[0]);
	cfg.v4_count = 1;
	inet_pton(AF_INET6, our_v6, cfg.v6[0]);
	cfg.v6_count = 1;
	cfg.tx = raw_tx;
	cfg.resolved = on_resolved;
	cfg.ctx = &r;
	r.s = uroce_ip_create(&cfg);
	if (r.s == NULL) {
		perror("uroce_ip_create");
		return 1;
	}

	/* 1. We ask first, so that the kernel has not taught us anything yet. */
	ok = ok && resolve(&r, kernel_v4, false);
	ok = ok && resolve(&r, kernel_v6, false);

	/* 2. The kernel asks: ARP/NS for us, then echo. */
	uroce_ip_link_local(our_mac, ll_addr);
	inet_ntop(AF_INET6, ll_addr, ll, sizeof(ll));
	snprintf(ll_target, sizeof(ll_target), "%s%%%s", ll, if_kernel);
	{
		char *ping4[] = {"ip", "netns", "exec", ns_kernel, "ping", "-c", "3", "-i", "0.2",
				 "-W", "2", (char *)our_v4, NULL};
		char *ping6[] = {"ip", "netns", "exec", ns_kernel, "ping", "-6", "-c", "3", "-i",
				 "0.2", "-W", "2", (char *)our_v6, NULL};
		char *ping_big[] = {"ip",   "netns", "exec", ns_kernel,	     "ping", "-c",
				    "2",    "-i",    "0.2",  "-W",	     "2",    "-s",
				    "1400", "-M",    "do",   (char *)our_v4, NULL};
		char *ping_ll[] = {"ip", "netns", "exec", ns_kernel, "ping", "-6", "-c", "2", "-i",
				   "0.2", "-W", "2", ll_target, NULL};

		ok = ok && run_cmd(&r, "ping -c 3 (IPv4)", ping4);
		ok = ok && run_cmd(&r, "ping -6 -c 3", ping6);
		ok = ok &&
		     run_cmd(&r, "ping -s 1400 -M do (IPv4, 1428-byte datagrams, DF)", ping_big);
		ok = ok && run_cmd(&r, "ping -6 to our link-local address", ping_ll);
	}

	/* 3. The kernel's neighbour table has us. */
	ok = ok && neigh_shows_us();

	/* 4. Our cache has the kernel. */
	ok = ok && resolve(&r, kernel_v4, true);
	ok = ok && resolve(&r, kernel_v6, true);

	printf("--- lib/ipstack counters (non-zero)\n");
	for (unsigned i = 0; uroce_ip_counter_name(i); i++) {
		uint64_t v = uroce_ip_counter_value(uroce_ip_counters(r.s), i);

		if (v)
			printf("  %-16s %llu\n", uroce_ip_counter_name(i), (unsigned long long)v);
	}
	if (ok && (uroce_ip_counters(r.s)->echo_replies < 5 ||
		   uroce_ip_counters(r.s)->echo6_replies < 5)) {
		fprintf(stderr, "FAIL: fewer echo replies than pings\n");
		ok = false;
	}
	uroce_ip_destroy(r.s);
	close(r.fd);
	printf("%s\n", ok ? "PASS" : "FAIL");
	return ok ? 0 : 1;
}

/* ---- the parent: namespaces in, namespaces out -------------------------------------- */

static void delete_namespaces(void)
{
	char cmd[128];

	/* Deleting a namespace deletes the veth end in it, and so the pair. */
	if (ns_stack[0]) {
		snprintf(cmd, sizeof(cmd), "ip netns del %s 2>/dev/null", ns_stack);
		if (system(cmd) != 0)
			fprintf(stderr, "ipstack_kernel: could not delete netns %s\n", ns_stack);
	}
	if (ns_kernel[0]) {
		snprintf(cmd, sizeof(cmd), "ip netns del %s 2>/dev/null", ns_kernel);
		if (system(cmd) != 0)
			fprintf(stderr, "ipstack_kernel: could not delete netns %s\n", ns_kernel);
	}
}

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static bool have(const char *prog)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

static int setup(void)
{
	char a[24], k[24];

	fmt_mac(a, our_mac);
	fmt_mac(k, kernel_mac);
	if (sh("ip link add name %s address %s netns %s type veth peer name %s address %s netns %s",
	       if_stack, a, ns_stack, if_kernel, k, ns_kernel) ||
	    /* Our end: no address, no IPv6, so the kernel there neither answers nor
	     * solicits; only lib/ipstack speaks through it. */
	    sh("ip netns exec %s sh -c 'echo 1 > /proc/sys/net/ipv6/conf/%s/disable_ipv6'",
	       ns_stack, if_stack) ||
	    sh("ip -n %s link set %s up", ns_stack, if_stack) ||
	    /* The kernel's end: addresses usable at once (no DAD). They are added once the
	     * link is up: an address added while it is down stays tentative until a work
	     * item runs after "up", and the kernel ignores solicitations for it meanwhile. */
	    sh("ip netns exec %s sh -c 'echo 0 > /proc/sys/net/ipv6/conf/%s/accept_dad'",
	       ns_kernel, if_kernel) ||
	    sh("ip -n %s link set lo up", ns_kernel) ||
	    sh("ip -n %s link set %s up", ns_kernel, if_kernel) ||
	    sh("ip -n %s addr add %s/24 dev %s", ns_kernel, kernel_v4, if_kernel) ||
	    sh("ip -n %s addr add %s/64 dev %s nodad", ns_kernel, kernel_v6, if_kernel))
		return 1;
	return 0;
}

int main(void)
{
	struct sigaction sa = {.sa_handler = on_signal};
	uint64_t deadline;
	int status = 0, id = (int)getpid();
	pid_t pid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("SKIP: ipstack_kernel needs root (network namespaces, AF_PACKET)\n");
		return 77;
	}
	if (!have("ip") || !have("ping")) {
		printf("SKIP: ipstack_kernel needs ip (iproute2) and ping (iputils-ping)\n");
		return 77;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	/* Names unique per run, so parallel runs and leftovers cannot collide. */
	snprintf(ns_stack, sizeof(ns_stack), "uroce-ipk%d-stack", id);
	snprintf(ns_kernel, sizeof(ns_kernel), "uroce-ipk%d-kernel", id);
	snprintf(if_stack, sizeof(if_stack), "uik%ds", id);
	snprintf(if_kernel, sizeof(if_kernel), "uik%dk", id);
	if (sh("ip netns add %s", ns_stack)) {
		ns_stack[0] = ns_kernel[0] = 0;
		printf("SKIP: cannot create a network namespace here\n");
		return 77;
	}
	if (sh("ip netns add %s", ns_kernel)) {
		ns_kernel[0] = 0;
		delete_namespaces();
		return 1;
	}
	if (setup() != 0) {
		delete_namespaces();
		return 1;
	}
	printf("netns %s (lib/ipstack on %s, %s, %s) <-> netns %s (Linux on %s, %s, %s)\n",
	       ns_stack, if_stack, our_v4, our_v6, ns_kernel, if_kernel, kernel_v4, kernel_v6);

	pid = fork();
	if (pid == 0) {
		/* Its own process group, so that a timeout kills the pings with it. */
		setpgid(0, 0);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		exit(child());
	}
	if (pid < 0) {
		perror("fork");
		delete_namespaces();
		return 1;
	}
	setpgid(pid, pid);
	deadline = now_ns() + TIME_LIMIT_S * 1000000000ull;
	while (waitpid(pid, &status, WNOHANG) != pid) {
		if (interrupted || now_ns() > deadline) {
			fprintf(stderr, "FAIL: %s; stopping the test\n",
				interrupted ? "interrupted" : "time limit reached");
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			delete_namespaces();
			return 1;
		}
		usleep(20000);
	}
	delete_namespaces();
	/* Check that nothing is left behind. */
	{
		char cmd[160];

		snprintf(cmd, sizeof(cmd), "ip netns list | grep -q 'uroce-ipk%d-' || "
			 "ip link show %s >/dev/null 2>&1", id, if_stack);
		if (system(cmd) == 0) {
			fprintf(stderr, "FAIL: namespaces or links left behind\n");
			return 1;
		}
		printf("namespaces deleted, nothing left behind\n");
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
