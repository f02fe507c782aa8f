/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The descriptors a client holds: none of them can block the RNIC.
 * One file of test_rnic (rnic_host.h).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rnic_host.h"

/* ---- descriptors a client holds --------------------------------------------------------- */

/*
 * What a hostile client does to each descriptor the RNIC handed it: makes its reads and
 * writes blocking (F_SETFL clears O_NONBLOCK for every holder of the same open file) and
 * writes 2^64 - 2 into it, the most an eventfd holds, so that any further write by
 * another holder would block. @return whether that write went in (it cannot on the read
 * end of a pipe).
 */
/* A test that shows the RNIC never blocks: SIGALRM ends it (a crash, reported) if it does.
 * Not criterion's .timeout: two timed tests running at once leak in its runner, which
 * LeakSanitizer then fails. */
static void fail_if_blocked(void)
{
	alarm(60);
}

static bool client_tampers(int fd)
{
	const uint64_t most = 0xfffffffffffffffeull;

	cr_assert_eq(fcntl(fd, F_SETFL, 0), 0, "its own descriptor: the client may");
	return write(fd, &most, sizeof(most)) == (ssize_t)sizeof(most);
}

/* The async event pipe: a blocking, tampered-with read end costs the RNIC nothing, and
 * each event still comes as one byte. (With an eventfd shared with the RNIC, the port
 * event below blocked the RNIC for good: the alarm.) */
Test(rnic, a_client_cannot_block_the_rnic_through_its_async_fd, .init = fail_if_blocked)
{
	struct host h;
	struct uroce_rnic_client *c;
	uint8_t b[UROCE_CTRL_ASYNC_RING_SIZE + 8];
	bool stuffed;
	int fd;

	host_init(&h, 1, 1);
	c = hello(&h);
	fd = dup(h.fds[1]);
	stuffed = client_tampers(fd);
	uroce_rnic_port_event(h.nic, false);
	cr_assert(readable(fd));
	cr_assert_eq(read(fd, b, 1), 1, "one byte for the one event");
	cr_assert_not(readable(fd));
	/* More events than the ring holds, none taken: the ring's overflow is counted as
	 * ever, the pipe never fills. */
	for (unsigned int i = 0; i < UROCE_CTRL_ASYNC_RING_SIZE + 8; i++)
		uroce_rnic_port_event(h.nic, (i & 1) != 0);
	cr_assert_eq(stat_of(&h, c, "daemon.event_pipe_full"), 0u);
	cr_assert_eq(stat_of(&h, c, "daemon.async_lost"), 9u, "the ring held 255 more");
	cr_assert_eq(read(fd, b, sizeof(b)), UROCE_CTRL_ASYNC_RING_SIZE - 1,
		     "a byte for each event the ring took");
	cr_assert_not(stuffed, "the client's end is the read end");
	close(fd);
	host_fini(&h);
}

/* The wake-up: a client's blocking, stuffed socket never holds the RNIC in
 * uroce_rnic_sleep_end(), and its later posts still wake it. (With the RNIC's own wake
 * eventfd in the client's hands, the second sleep_end read it empty and blocked.) */
Test(rnic, a_client_cannot_block_the_rnic_through_its_wake_fd, .init = fail_if_blocked)
{
	struct host h;
	struct app_wake a;
	const uint8_t ring = 1;
	int wake, sent = 0;

	host_init(&h, 1, 1);
	hello(&h);
	app_wake_open(&a, &h);
	wake = uroce_rnic_wake_fd(h.nic);
	client_tampers(a.efd);
	for (int round = 0; round < 3; round++) {
		cr_assert(uroce_rnic_sleep_begin(h.nic));
		uroce_rnic_sleep_end(h.nic);
	}
	cr_assert_not(readable(wake), "drained");
	/* Stuffed: as many datagrams as the kernel takes from it. */
	while (send(a.efd, &ring, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1 && sent < 100000)
		sent++;
	cr_assert_geq(sent, 64, "the socket took %d", sent);
	for (int round = 0; round < sent && readable(wake); round++) {
		cr_assert(uroce_rnic_sleep_begin(h.nic));
		uroce_rnic_sleep_end(h.nic);
	}
	cr_assert_not(readable(wake), "drained, a bounded share at each sleep's end");
	cr_assert(uroce_rnic_sleep_begin(h.nic));
	app_posted(&a);
	cr_assert(readable(wake), "a post during the next sleep still wakes it");
	uroce_rnic_sleep_end(h.nic);
	cr_assert_not(readable(wake));
	close(a.efd);
	uroce_shm_close(&a.region);
	host_fini(&h);
}

/* A completion channel: the RNIC's write for an armed CQ's completion goes through a
 * file of its own. (A shared eventfd filled to 2^64 - 2 blocked it: the alarm.) */
Test(rnic, a_client_cannot_block_the_rnic_through_a_completion_channel, .init = fail_if_blocked)
{
	struct host h;
	struct zc_app a;
	bool stuffed;
	uint8_t b;

	host_init(&h, 1, 1);
	h.loopback = true;
	zc_app_open_with(&h, &a, true);
	stuffed = client_tampers(a.channel_fd);
	for (int n = 0; n < 2; n++) {
		uroce_ring_arm(&a.cq, false);
		zc_post_write(&h, &a, 64);
		for (int i = 0; i < 100 && !uroce_ring_cons_avail(&a.cq); i++) {
			host_loop(&h);
			uroce_rnic_process(h.nic);
		}
		cr_assert_eq(uroce_ring_cons_avail(&a.cq), 1u);
		uroce_ring_cons_release(&a.cq, 1);
		cr_assert(readable(a.channel_fd), "event %d signalled", n);
		cr_assert_eq(read(a.channel_fd, &b, 1), 1);
		cr_assert_not(readable(a.channel_fd), "one byte per event");
	}
	cr_assert_not(stuffed, "the client's end is the read end");
	zc_app_close(&a);
	host_fini(&h);
}

/* A CM channel: the RNIC takes an event's byte back through a read file of its own, so
 * a client that drained its end (blocking) or never reads it costs it nothing, and the
 * fd is readable exactly while events wait, a full pipe included. (With the eventfd
 * shared, CM_GET_EVENT's read of the drained count blocked the RNIC: the alarm.) */
Test(rnic, a_client_cannot_block_the_rnic_through_a_cm_channel, .init = fail_if_blocked)
{
	struct host h;
	struct uroce_rnic_client *c;
	struct uroce_ctrl_cm_create_id_req id_req = {
		.ps = RDMA_PS_TCP, .qp_type = IBV_QPT_RC, .uid = 7};
	struct uroce_ctrl_cm_addr_req addr = {0};
	struct uroce_ctrl_cm_id_req route = {0}, get = {0};
	struct sockaddr_in *dst = (struct sockaddr_in *)&addr.dst;
	const unsigned int many = 2 * 4096 + 100; /* more than the pipe holds */
	bool stuffed;
	uint8_t b;
	int fd;

	host_init(&h, 1, 1);
	c = hello(&h);
	cr_assert_eq(request(&h, c, UROCE_CTRL_CM_CREATE_CHANNEL, NULL, 0), 0);
	id_req.channel = get.id = handle_of(&h);
	fd = dup(h.fds[0]);
	stuffed = client_tampers(fd);
	cr_assert_eq(request(&h, c, UROCE_CTRL_CM_CREATE_ID, &id_req, sizeof(id_req)), 0);
	addr.id = route.id = handle_of(&h);
	dst->sin_family = AF_INET;
	dst->sin_addr.s_addr = htonl(0x0a000001); /* our own 10.0.0.1: resolved at once */
	cr_assert_eq(request(&h, c, UROCE_CTRL_CM_RESOLVE_ADDR, &addr, sizeof(addr)), 0);
	cr_assert(readable(fd), "ADDR_RESOLVED waits");
	cr_assert_eq(read(fd, &b, 1), 1, "the client drains its end itself");
	cr_assert_eq(request(&h, c, UROCE_CTRL_CM_GET_EVENT, &get, sizeof(get)), 0);
	cr_assert_eq(request(&h, c, UROCE_CTRL_CM_GET_EVENT, &get, sizeof(get)), -EAGAIN);
	cr_assert_not(readable(fd));

	/* Events no one takes: ROUTE_RESOLVED, one per RESOLVE_ROUTE, past a full pipe. */
	for (unsigned int i = 0; i < many; i++)
		cr_assert_eq(request(&h, c, UROCE_CTRL_CM_RESOLVE_ROUTE, &route, sizeof(route)), 0);
	cr_assert_gt(stat_of(&h, c, "daemon.event_pipe_full"), 0u, "the pipe filled");
	for (unsigned int i = 0; i < many; i++) {
		cr_assert(readable(fd), "event %u of %u waits", i, many);
		cr_assert_eq(request(&h, c, UROCE_CTRL_CM_GET_EVENT, &get, sizeof(get)), 0);
	}
	cr_assert_not(readable(fd), "all taken");
	cr_assert_eq(request(&h, c, UROCE_CTRL_CM_GET_EVENT, &get, sizeof(get)), -EAGAIN);
	cr_assert_not(stuffed, "the client's end is the read end");
	close(fd);
	host_fini(&h);
}
