/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The port's link as applications see it. One uroced per test on a net_tap port, in a
 * network namespace of its own (it goes with the daemon, tap included); the test sets the
 * tap interface down and up there. net_tap reports the link from that interface's IFF_UP
 * and IFF_RUNNING, which is what the daemon reads every 10 ms.
 *
 * - QUERY_PORT says ACTIVE / LinkUp only while the link is up and DOWN / Polling while it
 *   is down; each change raises IBV_EVENT_PORT_ERR or IBV_EVENT_PORT_ACTIVE.
 * - Timers do not stop with the link: a neighbour resolution to an address nobody
 *   answers, started while the link is down or before it goes down, fails with
 *   EHOSTUNREACH after its three probes (3 s) while the link stays down.
 *
 * Root only (netns, tap, EAL); skipped otherwise.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon_fixture.h"

#define LINK_IPV4 "10.79.0.1"
#define NOBODY_IPV4 "10.79.0.99" /* no host answers ARP for it in the namespace */
#define TAP "udlk0"                /* the tap interface, in the daemon's namespace */

static struct fx_daemon d;

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Runs a shell command; @return its exit status (-1 when it could not run). */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

static void suite_init(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (netns, tap, EAL)");
	if (access("/dev/net/tun", R_OK | W_OK) != 0)
		cr_skip_test("no /dev/net/tun");
	cr_assert_eq(fx_daemon_start_port(&d, LINK_IPV4, NULL, "net_tap0,iface=" TAP, true), 0,
		     "uroced did not start on net_tap in a network namespace of its own");
}

static void suite_fini(void)
{
	fx_daemon_stop(&d);
}

TestSuite(link, .init = suite_init, .fini = suite_fini, .timeout = 60);

static void link_set(bool up)
{
	cr_assert_eq(run("nsenter -t %d -n ip link set dev " TAP " %s", (int)d.pid,
			 up ? "up" : "down"), 0, "ip link set dev " TAP " %s", up ? "up" : "down");
}

/* Queries port 1 until it reports @p state (3 s limit) and returns what it reported. */
static struct ibv_port_attr wait_port_state(struct uroce_client_ctx *ctx,
					    enum ibv_port_state state)
{
	struct ibv_port_attr pa;
	uint64_t t0 = mono_ms();

	do {
		memset(&pa, 0, sizeof(pa));
		cr_assert_eq(uroce_client_query_port(ctx, 1, &pa), 0);
		if (pa.state == state)
			return pa;
		usleep(10000);
	} while (mono_ms() - t0 < 3000);
	cr_assert_fail("port state %d, want %d after 3 s", pa.state, state);
	return pa;
}

/* The next async event of @p ctx must come within 3 s and be @p type on port 1. */
static void expect_port_event(struct uroce_client_ctx *ctx, enum ibv_event_type type)
{
	struct pollfd pfd = {.fd = uroce_client_async_fd(ctx), .events = POLLIN};
	struct ibv_async_event ev;

	cr_assert_eq(poll(&pfd, 1, 3000), 1, "no async event in 3 s (want %d)", type);
	cr_assert_eq(uroce_client_get_async_event(ctx, &ev), 0);
	cr_assert_eq(ev.event_type, type, "async event %d, want %d", ev.event_type, type);
	cr_assert_eq(ev.element.port_num, 1);
}

static struct ibv_ah_attr nobody_ah(void)
{
	struct ibv_ah_attr a = {.is_global = 1, .port_num = 1};
	struct in_addr ip;

	cr_assert_eq(inet_pton(AF_INET, NOBODY_IPV4, &ip), 1);
	a.grh.dgid.raw[10] = a.grh.dgid.raw[11] = 0xff;
	memcpy(a.grh.dgid.raw + 12, &ip, 4);
	a.grh.sgid_index = 1;
	a.grh.hop_limit = 64;
	return a;
}

/* create_ah to NOBODY_IPV4 in a thread of its own: it blocks while the daemon resolves,
 * and must not block the test past its assertions if the daemon never answers. */
struct resolve_job {
	struct uroce_client_pd *pd;
	pthread_t thread;
	struct uroce_client_ah *ah;
	int err;
	uint64_t ms;
	bool done; /* atomic: the thread sets it, the test reads it */
};

static void *resolve_thread(void *arg)
{
	struct resolve_job *j = arg;
	struct ibv_ah_attr aa = nobody_ah();
	uint64_t t0 = mono_ms();

	j->ah = uroce_client_create_ah(j->pd, &aa);
	j->err = errno;
	j->ms = mono_ms() - t0;
	__atomic_store_n(&j->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void resolve_start(struct resolve_job *j, struct uroce_client_pd *pd)
{
	memset(j, 0, sizeof(*j));
	j->pd = pd;
	cr_assert_eq(pthread_create(&j->thread, NULL, resolve_thread, j), 0);
}

/* Waits 10 s at most for the resolution to end; it must fail with EHOSTUNREACH. */
static void resolve_expect_unreachable(struct resolve_job *j)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	cr_assert_eq(pthread_timedjoin_np(j->thread, NULL, &until), 0,
		     "create_ah to %s still blocked after 10 s: its neighbour timer stopped",
		     NOBODY_IPV4);
	cr_assert_null(j->ah, "create_ah to %s succeeded", NOBODY_IPV4);
	cr_assert_eq(j->err, EHOSTUNREACH, "create_ah: %s", strerror(j->err));
}

Test(link, port_state_follows_link)
{
	struct uroce_client_ctx *ctx = uroce_client_open(d.sock);
	struct ibv_port_attr pa;
	uint64_t changes;

	cr_assert_not_null(ctx, "open: %s", strerror(errno));
	pa = wait_port_state(ctx, IBV_PORT_ACTIVE);
	cr_assert_eq(pa.phys_state, 5, "phys_state %u, want LinkUp (5)", pa.phys_state);
	cr_assert_eq(fx_stat(ctx, "port.link_up"), 1);
	changes = fx_stat(ctx, "daemon.link_changes");

	link_set(false);
	expect_port_event(ctx, IBV_EVENT_PORT_ERR);
	cr_assert_eq(uroce_client_query_port(ctx, 1, &pa), 0);
	cr_assert_eq(pa.state, IBV_PORT_DOWN, "port state %d with the link down", pa.state);
	/* rxe: Polling while its netdev is up without a carrier; ours is started. */
	cr_assert_eq(pa.phys_state, 2, "phys_state %u, want Polling (2)", pa.phys_state);
	cr_assert_eq(fx_stat(ctx, "port.link_up"), 0);

	link_set(true);
	expect_port_event(ctx, IBV_EVENT_PORT_ACTIVE);
	cr_assert_eq(uroce_client_query_port(ctx, 1, &pa), 0);
	cr_assert_eq(pa.state, IBV_PORT_ACTIVE, "port state %d with the link up", pa.state);
	cr_assert_eq(pa.phys_state, 5);
	cr_assert_eq(fx_stat(ctx, "port.link_up"), 1);
	cr_assert_eq(fx_stat(ctx, "daemon.link_changes"), changes + 2);
	uroce_client_close(ctx);
}

Test(link, neighbour_timeout_while_link_down)
{
	struct uroce_client_ctx *ctx = uroce_client_open(d.sock);
	struct uroce_client_pd *pd;
	struct resolve_job job;
	uint64_t failed;

	cr_assert_not_null(ctx, "open: %s", strerror(errno));
	pd = uroce_client_alloc_pd(ctx);
	cr_assert_not_null(pd);
	wait_port_state(ctx, IBV_PORT_ACTIVE);
	failed = fx_stat(ctx, "ip.neigh_failed");
	link_set(false);
	expect_port_event(ctx, IBV_EVENT_PORT_ERR);

	resolve_start(&job, pd);
	resolve_expect_unreachable(&job);
	cr_assert_geq(job.ms, 2500, "failed after %llu ms, want ~3 s (3 probes 1 s apart)",
		      (unsigned long long)job.ms);
	cr_assert_eq(fx_stat(ctx, "ip.neigh_failed"), failed + 1);
	cr_assert_geq(fx_stat(ctx, "daemon.tx_link_down"), 3, "the probes were not dropped");
	/* The link was down all along: no event came, the port still says so. */
	cr_assert_eq(fx_stat(ctx, "port.link_up"), 0);
	link_set(true);
	expect_port_event(ctx, IBV_EVENT_PORT_ACTIVE);
	cr_assert_eq(uroce_client_dealloc_pd(pd), 0);
	uroce_client_close(ctx);
}

Test(link, neighbour_timeout_after_link_went_down)
{
	/* Two connections: one blocks in create_ah, the other watches. */
	struct uroce_client_ctx *ctx = uroce_client_open(d.sock);
	struct uroce_client_ctx *watch = uroce_client_open(d.sock);
	struct uroce_client_pd *pd;
	struct resolve_job job;
	uint64_t t0, requests, dropped;

	cr_assert_not_null(ctx, "open: %s", strerror(errno));
	cr_assert_not_null(watch, "open: %s", strerror(errno));
	pd = uroce_client_alloc_pd(ctx);
	cr_assert_not_null(pd);
	wait_port_state(watch, IBV_PORT_ACTIVE);
	requests = fx_stat(watch, "ip.arp_requests");
	dropped = fx_stat(watch, "daemon.tx_link_down");

	resolve_start(&job, pd);
	/* The first probe goes out on the live link; then the link goes down. */
	t0 = mono_ms();
	while (fx_stat(watch, "ip.arp_requests") == requests && mono_ms() - t0 < 3000)
		usleep(10000);
	cr_assert_gt(fx_stat(watch, "ip.arp_requests"), requests, "no ARP request in 3 s");
	cr_assert_eq(fx_stat(watch, "daemon.tx_link_down"), dropped);
	link_set(false);
	expect_port_event(watch, IBV_EVENT_PORT_ERR);
	cr_assert_not(__atomic_load_n(&job.done, __ATOMIC_ACQUIRE),
		      "create_ah returned before its probes ran out");

	resolve_expect_unreachable(&job);
	/* The later probes met the link down, and it stayed down until the failure. */
	cr_assert_gt(fx_stat(watch, "daemon.tx_link_down"), dropped);
	cr_assert_eq(fx_stat(watch, "port.link_up"), 0);
	link_set(true);
	expect_port_event(watch, IBV_EVENT_PORT_ACTIVE);
	cr_assert_eq(uroce_client_dealloc_pd(pd), 0);
	uroce_client_close(watch);
	uroce_client_close(ctx);
}
