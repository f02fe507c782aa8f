/* SPDX-License-Identifier: BSD-3-Clause */
/* The drop-in librdmacm without a daemon (suite rdmacm): rdma_getaddrinfo as rdma-core's
 * addrinfo.c answers, rdma_event_str's strings, the event channel's fd (epoll: pollable,
 * O_NONBLOCK gives EAGAIN, a signal interrupts a blocking wait), and what ids do with no
 * device to use; rsockets before a connection. Public API only (<rdma/rdma_cma.h>,
 * <rdma/rsocket.h>), linked with the build's library. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

/* No daemon: discovery looks at this socket only (and finds nothing there). */
static void no_daemon(void)
{
	setenv("UROCE_SOCKET", "/nonexistent/uroce-test.sock", 1);
}

TestSuite(rdmacm, .init = no_daemon);

static const struct sockaddr_in *sin_of(const struct sockaddr *sa)
{
	return (const struct sockaddr_in *)(const void *)sa;
}

Test(rdmacm, getaddrinfo_numeric_active)
{
	struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_TCP}, *res = NULL;

	cr_assert_eq(rdma_getaddrinfo("192.0.2.7", "7471", &hints, &res), 0);
	cr_assert_eq(res->ai_flags & RAI_PASSIVE, 0);
	cr_assert_eq(res->ai_family, AF_INET);
	cr_assert_eq(res->ai_qp_type, IBV_QPT_RC, "TCP port space: a stream, RC");
	cr_assert_eq(res->ai_port_space, RDMA_PS_TCP);
	cr_assert_eq(res->ai_dst_len, sizeof(struct sockaddr_in));
	cr_assert_eq(sin_of(res->ai_dst_addr)->sin_addr.s_addr, inet_addr("192.0.2.7"));
	cr_assert_eq(ntohs(sin_of(res->ai_dst_addr)->sin_port), 7471);
	cr_assert_null(res->ai_src_addr);
	cr_assert_eq(res->ai_src_len, 0);
	cr_assert_null(res->ai_route);
	cr_assert_null(res->ai_next);
	rdma_freeaddrinfo(res);
}

Test(rdmacm, getaddrinfo_passive_wildcard)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP};
	struct rdma_addrinfo *res = NULL;

	cr_assert_eq(rdma_getaddrinfo(NULL, "7471", &hints, &res), 0);
	cr_assert(res->ai_flags & RAI_PASSIVE);
	cr_assert_not_null(res->ai_src_addr, "passive: the address is the source");
	cr_assert_null(res->ai_dst_addr);
	if (res->ai_family == AF_INET)
		cr_assert_eq(sin_of(res->ai_src_addr)->sin_addr.s_addr, htonl(INADDR_ANY));
	cr_assert_eq(ntohs(sin_of(res->ai_src_addr)->sin_port), 7471);
	rdma_freeaddrinfo(res);
}

Test(rdmacm, getaddrinfo_passive_numeric_host)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE | RAI_NUMERICHOST,
				      .ai_port_space = RDMA_PS_TCP};
	struct rdma_addrinfo *res = NULL;

	cr_assert_eq(rdma_getaddrinfo("10.1.2.3", "18515", &hints, &res), 0);
	cr_assert_eq(sin_of(res->ai_src_addr)->sin_addr.s_addr, inet_addr("10.1.2.3"));
	cr_assert_eq(ntohs(sin_of(res->ai_src_addr)->sin_port), 18515);
	rdma_freeaddrinfo(res);
}

Test(rdmacm, getaddrinfo_ud_hints)
{
	struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_UDP, .ai_qp_type = IBV_QPT_UD};
	struct rdma_addrinfo *res = NULL;

	cr_assert_eq(rdma_getaddrinfo("192.0.2.9", "9000", &hints, &res), 0);
	cr_assert_eq(res->ai_qp_type, IBV_QPT_UD);
	cr_assert_eq(res->ai_port_space, RDMA_PS_UDP);
	rdma_freeaddrinfo(res);
}

Test(rdmacm, getaddrinfo_no_hints)
{
	struct rdma_addrinfo *res = NULL;

	/* The first answer of getaddrinfo(3): a stream socket, so RC and the TCP space. */
	cr_assert_eq(rdma_getaddrinfo("127.0.0.1", "9999", NULL, &res), 0);
	cr_assert_eq(res->ai_family, AF_INET);
	cr_assert_eq(res->ai_qp_type, IBV_QPT_RC);
	cr_assert_eq(res->ai_port_space, RDMA_PS_TCP);
	rdma_freeaddrinfo(res);
}

Test(rdmacm, getaddrinfo_ipv6_and_named)
{
	struct rdma_addrinfo hints = {.ai_port_space = RDMA_PS_TCP}, *res = NULL;

	cr_assert_eq(rdma_getaddrinfo("::1", "7000", &hints, &res), 0);
	cr_assert_eq(res->ai_family, AF_INET6);
	cr_assert_eq(res->ai_dst_len, sizeof(struct sockaddr_in6));
	rdma_freeaddrinfo(res);
	res = NULL;
	cr_assert_eq(rdma_getaddrinfo("localhost", "7000", &hints, &res), 0, "a name");
	cr_assert(res->ai_family == AF_INET || res->ai_family == AF_INET6);
	cr_assert_not_null(res->ai_dst_addr);
	rdma_freeaddrinfo(res);
}

Test(rdmacm, getaddrinfo_addresses_from_hints)
{
	struct sockaddr_in src = {.sin_family = AF_INET, .sin_addr.s_addr = inet_addr("10.0.0.1")};
	struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(5),
				  .sin_addr.s_addr = inet_addr("10.0.0.2")};
	struct rdma_addrinfo hints = {
		.ai_port_space = RDMA_PS_TCP, .ai_qp_type = IBV_QPT_RC,
		.ai_src_len = sizeof(src), .ai_src_addr = (struct sockaddr *)&src,
		.ai_dst_len = sizeof(dst), .ai_dst_addr = (struct sockaddr *)&dst};
	struct rdma_addrinfo *res = NULL;

	/* Neither node nor service: the hints' addresses are the answer. */
	cr_assert_eq(rdma_getaddrinfo(NULL, NULL, &hints, &res), 0);
	cr_assert_eq(res->ai_qp_type, IBV_QPT_RC);
	cr_assert_eq(memcmp(res->ai_dst_addr, &dst, sizeof(dst)), 0);
	cr_assert_eq(memcmp(res->ai_src_addr, &src, sizeof(src)), 0);
	cr_assert_neq((void *)res->ai_dst_addr, (void *)&dst, "copies, freed by freeaddrinfo");
	rdma_freeaddrinfo(res);
	/* With a node: the source still comes from the hints. */
	res = NULL;
	cr_assert_eq(rdma_getaddrinfo("10.0.0.3", "6", &hints, &res), 0);
	cr_assert_eq(sin_of(res->ai_dst_addr)->sin_addr.s_addr, inet_addr("10.0.0.3"));
	cr_assert_eq(memcmp(res->ai_src_addr, &src, sizeof(src)), 0);
	rdma_freeaddrinfo(res);
}

Test(rdmacm, getaddrinfo_errors)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_NUMERICHOST}, *res = NULL;

	errno = 0;
	cr_assert_eq(rdma_getaddrinfo(NULL, NULL, NULL, &res), -1);
	cr_assert_eq(errno, EINVAL);
	/* getaddrinfo's own failures come back as its EAI_* code (rdma-core's behaviour). */
	cr_assert_eq(rdma_getaddrinfo("not-an-address", "1", &hints, &res), EAI_NONAME);
	rdma_freeaddrinfo(NULL);
}

Test(rdmacm, event_str)
{
	static const char *const want[] = {
		"RDMA_CM_EVENT_ADDR_RESOLVED",    "RDMA_CM_EVENT_ADDR_ERROR",
		"RDMA_CM_EVENT_ROUTE_RESOLVED",   "RDMA_CM_EVENT_ROUTE_ERROR",
		"RDMA_CM_EVENT_CONNECT_REQUEST",  "RDMA_CM_EVENT_CONNECT_RESPONSE",
		"RDMA_CM_EVENT_CONNECT_ERROR",    "RDMA_CM_EVENT_UNREACHABLE",
		"RDMA_CM_EVENT_REJECTED",         "RDMA_CM_EVENT_ESTABLISHED",
		"RDMA_CM_EVENT_DISCONNECTED",     "RDMA_CM_EVENT_DEVICE_REMOVAL",
		"RDMA_CM_EVENT_MULTICAST_JOIN",   "RDMA_CM_EVENT_MULTICAST_ERROR",
		"RDMA_CM_EVENT_ADDR_CHANGE",      "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	for (unsigned int i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert_str_eq(rdma_event_str((enum rdma_cm_event_type)i), want[i]);
	cr_assert_str_eq(rdma_event_str((enum rdma_cm_event_type)16), "UNKNOWN EVENT");
	cr_assert_str_eq(rdma_event_str((enum rdma_cm_event_type)-1), "UNKNOWN EVENT");
}

Test(rdmacm, channel_nonblocking_empty)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev = NULL;
	struct pollfd p;

	cr_assert_not_null(ch);
	cr_assert_geq(ch->fd, 0);
	p = (struct pollfd){.fd = ch->fd, .events = POLLIN};
	cr_assert_eq(poll(&p, 1, 0), 0, "empty: not readable");
	cr_assert_eq(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	errno = 0;
	cr_assert_eq(rdma_get_cm_event(ch, &ev), -1);
	cr_assert_eq(errno, EAGAIN);
	cr_assert_null(ev);
	errno = 0;
	cr_assert_eq(rdma_get_cm_event(ch, NULL), -1);
	cr_assert_eq(errno, EINVAL);
	rdma_destroy_event_channel(ch);
}

static void on_alarm(int sig)
{
	(void)sig;
}

Test(rdmacm, channel_blocking_wait_interrupted)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sigaction sa = {.sa_handler = on_alarm}; /* no SA_RESTART */
	struct rdma_cm_event *ev = NULL;

	cr_assert_not_null(ch);
	cr_assert_eq(sigaction(SIGALRM, &sa, NULL), 0);
	alarm(1);
	errno = 0;
	cr_assert_eq(rdma_get_cm_event(ch, &ev), -1, "blocks until the signal");
	cr_assert_eq(errno, EINTR);
	rdma_destroy_event_channel(ch);
}

Test(rdmacm, ack_null)
{
	errno = 0;
	cr_assert_eq(rdma_ack_cm_event(NULL), -1);
	cr_assert_eq(errno, EINVAL);
}

Test(rdmacm, ids_without_a_device)
{
	struct sockaddr_in lo = {.sin_family = AF_INET, .sin_addr.s_addr = inet_addr("127.0.0.1")};
	struct sockaddr_in any = {.sin_family = AF_INET, .sin_port = htons(7471)};
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = NULL, *sync_id = NULL;
	int n = -1;

	cr_assert_eq(rdma_create_id(ch, &id, (void *)0x1234, RDMA_PS_TCP), 0);
	cr_assert_eq(id->channel, ch);
	cr_assert_eq(id->context, (void *)0x1234);
	cr_assert_eq(id->ps, RDMA_PS_TCP);
	cr_assert_eq(id->qp_type, IBV_QPT_RC);
	cr_assert_null(id->verbs);
	/* A wildcard bind needs no device yet. */
	cr_assert_eq(rdma_bind_addr(id, (struct sockaddr *)&any), 0);
	cr_assert_eq(ntohs(rdma_get_src_port(id)), 7471);
	errno = 0;
	cr_assert_eq(rdma_listen(id, 1), -1, "no device to listen on");
	cr_assert_eq(errno, ENODEV);
	cr_assert_eq(rdma_destroy_id(id), 0);

	cr_assert_eq(rdma_create_id(NULL, &sync_id, NULL, RDMA_PS_UDP), 0);
	cr_assert_not_null(sync_id->channel, "synchronous: a channel of its own");
	cr_assert_eq(sync_id->qp_type, IBV_QPT_UD);
	errno = 0;
	cr_assert_eq(rdma_resolve_addr(sync_id, NULL, (struct sockaddr *)&lo, 100), -1);
	cr_assert_eq(errno, ENODEV);
	cr_assert_eq(rdma_destroy_id(sync_id), 0);

	cr_assert_null(rdma_get_devices(&n));
	cr_assert_eq(n, 0);
	rdma_destroy_event_channel(ch);
}

/* What libfabric's verbs provider (1.17) asks when its server names no address: the
 * passive answer for "localhost", as rdma-core 44 gives it on Linux (rxe): RAI_FAMILY is
 * not in the answer's flags, the address is the source. */
Test(rdmacm, getaddrinfo_passive_localhost)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE | RAI_FAMILY, .ai_family = AF_INET,
				      .ai_qp_type = IBV_QPT_RC, .ai_port_space = RDMA_PS_TCP};
	struct rdma_addrinfo *res = NULL;

	cr_assert_eq(rdma_getaddrinfo("localhost", NULL, &hints, &res), 0);
	cr_assert_eq(res->ai_flags, RAI_PASSIVE);
	cr_assert_eq(res->ai_family, AF_INET);
	cr_assert_eq(res->ai_qp_type, IBV_QPT_RC);
	cr_assert_eq(res->ai_port_space, RDMA_PS_TCP);
	cr_assert_eq(res->ai_src_len, sizeof(struct sockaddr_in));
	cr_assert_eq(sin_of(res->ai_src_addr)->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	cr_assert_eq(sin_of(res->ai_src_addr)->sin_port, 0);
	cr_assert_null(res->ai_dst_addr);
	cr_assert_eq(res->ai_dst_len, 0);
	cr_assert_null(res->ai_next);
	rdma_freeaddrinfo(res);
	/* Neither node nor service: the hints themselves, no address. */
	res = NULL;
	cr_assert_eq(rdma_getaddrinfo(NULL, NULL, &hints, &res), 0);
	cr_assert_eq(res->ai_flags, RAI_PASSIVE | RAI_FAMILY);
	cr_assert_eq(res->ai_family, AF_INET);
	cr_assert_null(res->ai_src_addr);
	cr_assert_null(res->ai_dst_addr);
	rdma_freeaddrinfo(res);
}

/* A loopback address binds as the zero address does in the kernel's rdma_cm
 * (cma_any_addr): no device, and the id says the address it was given. Linux (rxe, 6.1):
 * rdma_bind_addr(127.0.0.1:0) = 0 with verbs NULL, then libfabric's verbs provider takes
 * its devices' own addresses; ENODEV here made its server's fi_getinfo fail (-61). */
Test(rdmacm, bind_addr_loopback)
{
	struct sockaddr_in lo = {.sin_family = AF_INET, .sin_port = htons(7471),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in lo2 = {.sin_family = AF_INET, .sin_addr.s_addr = inet_addr("127.0.0.2")};
	struct sockaddr_in6 lo6 = {.sin6_family = AF_INET6, .sin6_port = htons(7472),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	struct sockaddr *local;
	struct rdma_cm_id *id = NULL;

	cr_assert_eq(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_bind_addr(id, (struct sockaddr *)&lo), 0, "errno %d", errno);
	cr_assert_null(id->verbs, "bound to no device");
	local = rdma_get_local_addr(id);
	cr_assert_eq(local->sa_family, AF_INET);
	cr_assert_eq(sin_of(local)->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	cr_assert_eq(ntohs(rdma_get_src_port(id)), 7471);
	cr_assert_eq(rdma_get_peer_addr(id)->sa_family, AF_INET, "as the kernel: 0.0.0.0:0");
	cr_assert_eq(sin_of(rdma_get_peer_addr(id))->sin_addr.s_addr, htonl(INADDR_ANY));
	errno = 0;
	cr_assert_eq(rdma_bind_addr(id, (struct sockaddr *)&lo), -1, "bound already");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_destroy_id(id), 0);

	cr_assert_eq(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_bind_addr(id, (struct sockaddr *)&lo2), 0, "all of 127/8");
	cr_assert_null(id->verbs);
	cr_assert_eq(sin_of(rdma_get_local_addr(id))->sin_addr.s_addr, inet_addr("127.0.0.2"));
	cr_assert_eq(rdma_destroy_id(id), 0);

	cr_assert_eq(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_bind_addr(id, (struct sockaddr *)&lo6), 0, "errno %d", errno);
	cr_assert_null(id->verbs);
	cr_assert_eq(memcmp(rdma_get_local_addr(id), &lo6, sizeof(lo6)), 0);
	cr_assert_eq(rdma_get_peer_addr(id)->sa_family, AF_INET6);
	cr_assert_eq(rdma_destroy_id(id), 0);
}

/* An address no RDMA device has: the kernel's rdma_cm (6.1, rxe) says ENODEV when a kernel
 * interface has it, EADDRNOTAVAIL when none does (rping -s -a on lo's 10.9.9.9, on
 * 203.0.113.5). No daemon runs here: every local address other than a loopback or zero one
 * is of the first kind. */
Test(rdmacm, bind_addr_without_a_device)
{
	struct sockaddr_in far = {.sin_family = AF_INET,
				  .sin_addr.s_addr = inet_addr("203.0.113.5")};
	struct sockaddr_in6 far6 = {.sin6_family = AF_INET6};
	struct ifaddrs *ifs, *ifa;
	struct rdma_cm_id *id = NULL;
	int local = 0;

	cr_assert_eq(inet_pton(AF_INET6, "2001:db8::5", &far6.sin6_addr), 1);
	cr_assert_eq(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	errno = 0;
	cr_assert_eq(rdma_bind_addr(id, (struct sockaddr *)&far), -1);
	cr_assert_eq(errno, EADDRNOTAVAIL, "errno %d", errno);
	errno = 0;
	cr_assert_eq(rdma_bind_addr(id, (struct sockaddr *)&far6), -1);
	cr_assert_eq(errno, EADDRNOTAVAIL, "errno %d", errno);

	cr_assert_eq(getifaddrs(&ifs), 0);
	for (ifa = ifs; ifa; ifa = ifa->ifa_next) {
		struct sockaddr_in a;

		if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != AF_INET)
			continue;
		memcpy(&a, ifa->ifa_addr, sizeof(a));
		if ((ntohl(a.sin_addr.s_addr) >> 24) == IN_LOOPBACKNET)
			continue;
		errno = 0;
		cr_assert_eq(rdma_bind_addr(id, (struct sockaddr *)&a), -1, "%s", ifa->ifa_name);
		cr_assert_eq(errno, ENODEV, "%s: errno %d", ifa->ifa_name, errno);
		local++;
	}
	freeifaddrs(ifs);
	cr_log_info("%d local address(es) checked", local);
	cr_assert_eq(rdma_destroy_id(id), 0);
}

/* rsockets before any connection: what a socket program meets on bad arguments, the
 * options it reads back, a connect with no device to use, as rdma-core answers. */
Test(rdmacm, rsocket_without_a_device)
{
	struct sockaddr_in lo = {.sin_family = AF_INET, .sin_addr.s_addr = inet_addr("127.0.0.1"),
				 .sin_port = htons(7471)};
	int rs, v = 0, keep = 1, big = 1 << 16, inl = 32;
	socklen_t len = sizeof(v);
	char b;

	errno = 0;
	cr_assert_eq(rsocket(AF_INET, SOCK_DGRAM, 0), -1, "datagram rsockets are not built");
	cr_assert_eq(errno, ENOTSUP);
	errno = 0;
	cr_assert_eq(rsocket(AF_UNIX, SOCK_STREAM, 0), -1);
	cr_assert_eq(errno, ENOTSUP);
	errno = 0;
	cr_assert_eq(rsocket(AF_INET, SOCK_STREAM, IPPROTO_UDP), -1);
	cr_assert_eq(errno, ENOTSUP);
	/* Numbers that are no rsocket: EBADF (a plain descriptor included). */
	errno = 0;
	cr_assert_eq(rsend(0, "x", 1, 0), -1);
	cr_assert_eq(errno, EBADF);
	errno = 0;
	cr_assert_eq(rrecv(-1, &b, 1, 0), -1);
	cr_assert_eq(errno, EBADF);
	errno = 0;
	cr_assert_eq(rclose(1 << 20), -1);
	cr_assert_eq(errno, EBADF);

	rs = rsocket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(rs, 0, "errno %d", errno);
	cr_assert_eq(rgetsockopt(rs, SOL_SOCKET, SO_RCVBUF, &v, &len), 0);
	cr_assert_eq(v, 1 << 17, "rdma-core's default receive buffer");
	cr_assert_eq(rsetsockopt(rs, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big)), 0);
	cr_assert_eq(rgetsockopt(rs, SOL_SOCKET, SO_RCVBUF, &v, &len), 0);
	cr_assert_eq(v, 1 << 17, "twice what was asked, as Linux and rdma-core");
	cr_assert_eq(rsetsockopt(rs, SOL_RDMA, RDMA_INLINE, &inl, sizeof(inl)), 0);
	cr_assert_eq(rgetsockopt(rs, SOL_RDMA, RDMA_INLINE, &v, &len), 0);
	cr_assert_eq(v, 32);
	errno = 0;
	cr_assert_eq(rsetsockopt(rs, SOL_SOCKET, SO_KEEPALIVE, &keep, sizeof(keep)), -1,
		     "no keep-alive probes here: refused, not pretended");
	cr_assert_eq(errno, ENOTSUP);
	errno = 0;
	cr_assert_eq(rsetsockopt(rs, SOL_SOCKET, SO_RCVBUF, &big, 2), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rfcntl(rs, F_GETFL), 0);
	/* No daemon owns 127.0.0.1: the connect fails and says why. */
	errno = 0;
	cr_assert_eq(rconnect(rs, (struct sockaddr *)&lo, sizeof(lo)), -1);
	cr_assert_eq(errno, ENODEV);
	cr_assert_eq(rgetsockopt(rs, SOL_SOCKET, SO_ERROR, &v, &len), 0);
	cr_assert_eq(v, ENODEV, "SO_ERROR keeps the connect's error");
	cr_assert_eq(rgetsockopt(rs, SOL_SOCKET, SO_ERROR, &v, &len), 0);
	cr_assert_eq(v, 0, "and clears it once read");
	cr_assert_eq(rclose(rs), 0);
	errno = 0;
	cr_assert_eq(rclose(rs), -1, "closed: no longer an rsocket");
	cr_assert_eq(errno, EBADF);
}
