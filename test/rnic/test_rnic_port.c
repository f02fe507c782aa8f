/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The port and the clients' wake-ups: nothing before HELLO, the port's state and events as
 * the host reports them, and the RNIC's sleep announced to every client.
 * One file of test_rnic (rnic_host.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rnic_host.h"

/* ---- tests ---------------------------------------------------------------------------- */

Test(rnic, nothing_before_hello)
{
	struct host h;
	const struct uroce_rnic_peer peer = {.pid = 1};
	struct uroce_rnic_client *c;

	host_init(&h, 1, 1);
	c = uroce_rnic_client_new(h.nic, &peer, &h);
	cr_assert_eq(request(&h, c, UROCE_CTRL_QUERY_DEVICE, NULL, 0), -EPROTO);
	cr_assert_eq(h.frames, 0u);
	host_fini(&h);
}

Test(rnic, query_port_follows_the_hosts_link)
{
	struct host h;
	struct uroce_rnic_client *c;
	struct ibv_port_attr a;

	host_init(&h, 1, 1);
	c = hello(&h);
	a = query_port(&h, c);
	cr_assert_eq(a.state, IBV_PORT_ACTIVE);
	cr_assert_eq(a.phys_state, 5, "LinkUp");
	cr_assert_eq(a.active_speed, 8, "10 Gbit/s: FDR10's code");
	cr_assert_eq(a.active_mtu, IBV_MTU_1024, "Ethernet 1500 carries IB 1024");
	h.link = UROCE_RNIC_LINK_DOWN;
	a = query_port(&h, c);
	cr_assert_eq(a.state, IBV_PORT_DOWN);
	cr_assert_eq(a.phys_state, 2, "Polling: the port is started, no carrier");
	h.link = UROCE_RNIC_LINK_DISABLED;
	a = query_port(&h, c);
	cr_assert_eq(a.state, IBV_PORT_DOWN);
	cr_assert_eq(a.phys_state, 3, "Disabled");
	host_fini(&h);
}

Test(rnic, port_event_reaches_every_clients_async_ring)
{
	struct host h;
	struct uroce_rnic_client *c;
	struct uroce_ctrl_hello_rep rep;
	struct uroce_shm_region region = {.fd = -1};
	struct uroce_ring ring;
	struct uroce_ctrl_async_event ev;
	uint64_t n = 0;
	int efd;

	host_init(&h, 1, 1);
	c = hello(&h);
	(void)c;
	memcpy(&rep, reply_payload(&h), sizeof(rep));
	/* The application's side: the context region mapped, its ring read as consumer. */
	cr_assert_eq(uroce_shm_attach(&region, dup(h.fds[0]), UROCE_CTRL_REGION_CONTEXT), 0);
	cr_assert_eq(uroce_ring_open(&ring, (uint8_t *)region.addr + rep.async_ring_offset,
				     region.size - rep.async_ring_offset, false),
		     0);
	efd = dup(h.fds[1]);
	uroce_rnic_port_event(h.nic, false);
	uroce_rnic_port_event(h.nic, true);
	cr_assert_eq(uroce_ring_cons_avail(&ring), 2u);
	memcpy(&ev, uroce_ring_cons_slot(&ring, 0), sizeof(ev));
	cr_assert_eq(ev.event_type, IBV_EVENT_PORT_ERR);
	cr_assert_eq(ev.port, 1u);
	memcpy(&ev, uroce_ring_cons_slot(&ring, 1), sizeof(ev));
	cr_assert_eq(ev.event_type, IBV_EVENT_PORT_ACTIVE);
	cr_assert_eq(read(efd, &n, sizeof(n)), 2, "the pipe holds a byte per event");
	cr_assert_eq(read(efd, &n, sizeof(n)), -1, "and no more");
	cr_assert_eq(errno, EAGAIN);
	close(efd);
	uroce_shm_close(&region);
	host_fini(&h);
}

void app_wake_open(struct app_wake *a, const struct host *h)
{
	struct uroce_ctrl_hello_rep rep;

	memcpy(&rep, reply_payload(h), sizeof(rep));
	a->region.fd = -1;
	cr_assert_eq(uroce_shm_attach(&a->region, dup(h->fds[0]), UROCE_CTRL_REGION_CONTEXT), 0);
	cr_assert_eq(rep.wake_offset % UROCE_SHM_CACHELINE, 0u);
	cr_assert_neq(rep.wake_offset, rep.async_ring_offset);
	/* The CQ waiters' line: its own, between the announcement and the async ring. */
	cr_assert_eq(rep.waiters_offset % UROCE_SHM_CACHELINE, 0u);
	cr_assert_geq(rep.waiters_offset, rep.wake_offset + sizeof(struct uroce_shm_wake));
	cr_assert_leq(rep.waiters_offset + sizeof(struct uroce_shm_waiters), rep.async_ring_offset);
	a->wake = (void *)((uint8_t *)a->region.addr + rep.wake_offset);
	a->efd = dup(h->fds[2]);
}

/* What lib/client does after a post's commit. */
void app_posted(struct app_wake *a)
{
	static const uint8_t ring = 1;

	if (uroce_wake_take(a->wake))
		cr_assert_eq(send(a->efd, &ring, 1, MSG_DONTWAIT | MSG_NOSIGNAL), 1);
}

bool readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) == 1;
}

/* The RNIC announces a sleep to every client; a post while it is up rings the client's
 * wake-up socket, once per client and announcement; the end of the sleep takes the
 * announcement back and drains the sockets, so posts are plain writes again. */
Test(rnic, a_sleep_is_announced_to_every_client_and_a_post_rings_once)
{
	struct host h;
	struct app_wake a, b;
	int wake = -1;

	host_init(&h, 1, 1);
	hello(&h);
	app_wake_open(&a, &h);
	hello(&h);
	app_wake_open(&b, &h);
	wake = uroce_rnic_wake_fd(h.nic);
	cr_assert_geq(wake, 0);

	app_posted(&a); /* awake: a plain write, no ring */
	cr_assert_not(readable(wake));
	cr_assert(uroce_rnic_sleep_begin(h.nic), "no queue: nothing posted, may sleep");
	cr_assert_eq(atomic_load(&a.wake->sleeping), 1u);
	cr_assert_eq(atomic_load(&b.wake->sleeping), 1u);
	app_posted(&a);
	cr_assert(readable(wake), "a post during the sleep rings");
	cr_assert_eq(atomic_load(&a.wake->sleeping), 0u, "taken down by the post that rang");
	cr_assert_eq(atomic_load(&b.wake->sleeping), 1u, "each client has its own");
	app_posted(&a);
	app_posted(&b);
	uroce_rnic_sleep_end(h.nic);
	cr_assert_not(readable(wake), "drained at the end of the sleep");
	cr_assert_eq(atomic_load(&b.wake->sleeping), 0u);
	app_posted(&b);
	cr_assert_not(readable(wake));

	close(a.efd);
	close(b.efd);
	uroce_shm_close(&a.region);
	uroce_shm_close(&b.region);
	host_fini(&h);
}
