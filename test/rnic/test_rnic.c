/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cases of test_rnic (rnic_host.h says what they run on).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

/* The application's view of a client's sleep announcement: its context region mapped,
 * and the wake-up socket HELLO handed out. */
struct app_wake {
	struct uroce_shm_region region;
	struct uroce_shm_wake *wake;
	int efd;
};

static void app_wake_open(struct app_wake *a, const struct host *h)
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
static void app_posted(struct app_wake *a)
{
	static const uint8_t ring = 1;

	if (uroce_wake_take(a->wake))
		cr_assert_eq(send(a->efd, &ring, 1, MSG_DONTWAIT | MSG_NOSIGNAL), 1);
}

static bool readable(int fd)
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

/* A client of @p uid (an administrator when @p admin) with a UD QP; its handle (its QPN in
 * *@p qpn, unless NULL). */
static uint32_t ud_qp_of(struct host *h, struct uroce_rnic_client **c, uid_t uid, bool admin,
			 uint32_t *qpn)
{
	const struct uroce_rnic_peer peer = {.pid = getpid(), .uid = uid, .gid = 1000,
					     .admin = admin};
	struct uroce_ctrl_hello_req hello_req = {.version = UROCE_CTRL_VERSION, .name = "qk"};
	struct uroce_ctrl_create_cq_req cq_req = {.cqe = 16};
	struct uroce_ctrl_create_cq_rep cq_rep;
	struct uroce_ctrl_create_qp_req qp_req = {
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
	struct uroce_ctrl_create_qp_rep qp_rep;

	*c = uroce_rnic_client_new(h->nic, &peer, h);
	cr_assert_not_null(*c);
	cr_assert_eq(request(h, *c, UROCE_CTRL_HELLO, &hello_req, sizeof(hello_req)), 0);
	cr_assert_eq(request(h, *c, UROCE_CTRL_ALLOC_PD, NULL, 0), 0);
	qp_req.pd = handle_of(h);
	cr_assert_eq(request(h, *c, UROCE_CTRL_CREATE_CQ, &cq_req, sizeof(cq_req)), 0);
	memcpy(&cq_rep, reply_payload(h), sizeof(cq_rep));
	qp_req.send_cq = qp_req.recv_cq = cq_rep.cq;
	cr_assert_eq(request(h, *c, UROCE_CTRL_CREATE_QP, &qp_req, sizeof(qp_req)), 0);
	memcpy(&qp_rep, reply_payload(h), sizeof(qp_rep));
	if (qpn)
		*qpn = qp_rep.qpn;
	return qp_rep.qp;
}

/* Registers an MR over @p len bytes of a new sealed memfd (as lib/client shares memory),
 * in a new PD of @p c. @return REG_MR's status; the MR's rkey in *@p rkey, the PD's handle
 * in *@p pd. */
static int reg_mr_pd_of(struct host *h, struct uroce_rnic_client *c, uint64_t len,
			uint32_t *rkey, uint32_t *pd)
{
	uint8_t buf[sizeof(struct uroce_ctrl_reg_mr_req) + sizeof(struct uroce_ctrl_mr_seg)] = {0};
	struct uroce_ctrl_reg_mr_req *reg = (void *)buf;
	struct uroce_ctrl_map_region_req map = {.size = len};
	struct uroce_ctrl_reg_mr_rep rep;
	int fd, rc;

	cr_assert_eq(request(h, c, UROCE_CTRL_ALLOC_PD, NULL, 0), 0);
	reg->pd = *pd = handle_of(h);
	fd = memfd_create("mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)len), 0);
	cr_assert_eq(fcntl(fd, F_ADD_SEALS, UROCE_SHM_SEALS), 0);
	cr_assert_eq(request_fd(h, c, UROCE_CTRL_MAP_REGION, &map, sizeof(map), fd), 0);
	reg->access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	reg->addr = reg->iova = 0x10000000;
	reg->length = len;
	reg->nseg = 1;
	reg->seg[0] = (struct uroce_ctrl_mr_seg){.region = handle_of(h), .length = len};
	rc = request(h, c, UROCE_CTRL_REG_MR, buf, sizeof(buf));
	if (rc == 0) {
		memcpy(&rep, reply_payload(h), sizeof(rep));
		*rkey = rep.rkey;
	}
	return rc;
}

/* reg_mr_pd_of, when the PD's handle is not wanted. */
static int reg_mr_of(struct host *h, struct uroce_rnic_client *c, uint64_t len, uint32_t *rkey)
{
	uint32_t pd;

	return reg_mr_pd_of(h, c, len, rkey, &pd);
}

/* The MR handle a REG_MR (reg_mr_of) answered. */
static uint32_t mr_of(const struct host *h)
{
	struct uroce_ctrl_reg_mr_rep rep;

	memcpy(&rep, reply_payload(h), sizeof(rep));
	return rep.mr;
}

/* A sealed memfd of @p size bytes (sparse: any size tmpfs takes), mapped as a region of
 * @p c. @return its handle. */
static uint32_t region_of(struct host *h, struct uroce_rnic_client *c, uint64_t size)
{
	struct uroce_ctrl_map_region_req map = {.size = size};
	int fd = memfd_create("region", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)size), 0);
	cr_assert_eq(fcntl(fd, F_ADD_SEALS, UROCE_SHM_SEALS), 0);
	cr_assert_eq(request_fd(h, c, UROCE_CTRL_MAP_REGION, &map, sizeof(map), fd), 0);
	return handle_of(h);
}

/* REG_MR of [addr, addr + length) in PD @p pd from @p nseg segments. */
static int reg_mr_segs(struct host *h, struct uroce_rnic_client *c, uint32_t pd, uint64_t addr,
		       uint64_t length, const struct uroce_ctrl_mr_seg *seg, uint32_t nseg)
{
	static uint8_t buf[sizeof(struct uroce_ctrl_reg_mr_req) +
			  UROCE_CTRL_MR_MAX_SEGS * sizeof(struct uroce_ctrl_mr_seg)];
	struct uroce_ctrl_reg_mr_req *reg = (void *)buf;

	cr_assert_leq(nseg, UROCE_CTRL_MR_MAX_SEGS);
	memset(buf, 0, sizeof(buf));
	*reg = (struct uroce_ctrl_reg_mr_req){.pd = pd,
					      .access = IBV_ACCESS_LOCAL_WRITE,
					      .addr = addr,
					      .iova = addr,
					      .length = length,
					      .nseg = nseg};
	memcpy(reg->seg, seg, nseg * sizeof(*seg));
	return request(h, c, UROCE_CTRL_REG_MR, buf,
		       sizeof(*reg) + nseg * sizeof(struct uroce_ctrl_mr_seg));
}

/* Issue 43 (1): REG_MR's segment lengths once summed in 64 bits unchecked. Three pieces of
 * L, 2^63 - 4 KiB and 2^63 + 8 KiB - L add up to 2^64 + 4 KiB, that is 4 KiB: a one-page
 * MR's size. The daemon reserved 4 KiB and mapped L bytes of the tenant's memfd with
 * MAP_FIXED over its own libraries (this process dies of it on the old code). Every sum
 * and rounding of a client's numbers must refuse to wrap: EINVAL, nothing mapped,
 * nothing charged. */
Test(rnic, reg_mr_refuses_lengths_that_wrap)
{
	const uint64_t page = 4096, big = 64ull << 20, huge = (1ull << 63) - page;
	struct host h;
	struct uroce_rnic_client *c;
	uint32_t pd, small, sparse;
	uint64_t mappings;

	host_init(&h, 0x43, 43);
	c = hello(&h);
	cr_assert_eq(request(&h, c, UROCE_CTRL_ALLOC_PD, NULL, 0), 0);
	pd = handle_of(&h);
	small = region_of(&h, c, big);
	sparse = region_of(&h, c, huge); /* tmpfs takes up to 2^63 - 1 bytes, sparse */
	mappings = stat_of(&h, c, "mappings");

	struct uroce_ctrl_mr_seg wrap[3] = {
		{.region = small, .length = big},
		{.region = sparse, .length = huge},
		{.region = sparse, .length = (1ull << 63) + 2 * page - big}};
	cr_assert_eq(reg_mr_segs(&h, c, pd, 0x10000000, page, wrap, 3), -EINVAL,
		     "segments whose sum wraps to the span");
	/* Two pieces that wrap to exactly 0 past a one-page span's end... */
	struct uroce_ctrl_mr_seg wrap0[2] = {{.region = sparse, .length = huge},
					     {.region = sparse, .length = page + page}};
	cr_assert_eq(reg_mr_segs(&h, c, pd, 0x10000000, page, wrap0, 2), -EINVAL);
	/* ...an address whose end, or whose end rounded up to a page, wraps... */
	struct uroce_ctrl_mr_seg one = {.region = small, .length = page};
	cr_assert_eq(reg_mr_segs(&h, c, pd, UINT64_MAX - 10, 5, &one, 1), -EINVAL);
	cr_assert_eq(reg_mr_segs(&h, c, pd, UINT64_MAX - page + 2, 1, &one, 1), -EINVAL);
	/* ...and a piece whose offset + length wraps past its region's size. */
	struct uroce_ctrl_mr_seg past = {.region = small, .offset = UINT64_MAX - page + 1,
					 .length = 2 * page};
	cr_assert_eq(reg_mr_segs(&h, c, pd, 0x10000000, 2 * page, &past, 1), -EINVAL);
	cr_assert_eq(stat_of(&h, c, "mappings"), mappings, "nothing was mapped");
	cr_assert_eq(stat_of(&h, c, "objects.mr"), 0u);

	/* The same regions still serve an honest MR: the last page of the sparse one and the
	 * first of the other, in one span, written through the daemon's mapping. */
	struct uroce_ctrl_mr_seg ok[2] = {{.region = sparse, .offset = huge - page, .length = page},
					  {.region = small, .length = page}};
	cr_assert_eq(reg_mr_segs(&h, c, pd, 0x10000000, 2 * page, ok, 2), 0);
	cr_assert_eq(stat_of(&h, c, "mappings"), mappings + 1);
	host_fini(&h);
}

/* Issue 43 (7): every MR segment is one of the daemon's mappings, and vm.max_map_count
 * (65,530) is every tenant's: 66 REG_MRs of 1,024 pieces once left another user's
 * registration failing with ENOMEM. A user's mappings are bounded (limits.mappings, a
 * quarter of that by default): beyond, ENOMEM as mmap would say, and another user still
 * registers. */
Test(rnic, one_user_cannot_take_the_daemons_mappings)
{
	const uint64_t page = 4096;
	static struct uroce_ctrl_mr_seg seg[UROCE_CTRL_MR_MAX_SEGS];
	struct host h;
	struct uroce_rnic_client *greedy, *other;
	uint32_t pd, region, rkey;
	unsigned int n;
	int rc = 0;

	host_init(&h, 0x37, 37);
	greedy = hello_as(&h, 4242);
	cr_assert_eq(request(&h, greedy, UROCE_CTRL_ALLOC_PD, NULL, 0), 0);
	pd = handle_of(&h);
	/* Every other page of one file: pieces no mapping can merge. */
	region = region_of(&h, greedy, 2 * UROCE_CTRL_MR_MAX_SEGS * page);
	for (unsigned int i = 0; i < UROCE_CTRL_MR_MAX_SEGS; i++)
		seg[i] = (struct uroce_ctrl_mr_seg){.region = region, .offset = 2 * i * page,
						    .length = page};
	for (n = 0; n < 64 && rc == 0; n++)
		rc = reg_mr_segs(&h, greedy, pd, 0x10000000, UROCE_CTRL_MR_MAX_SEGS * page, seg,
				 UROCE_CTRL_MR_MAX_SEGS);
	cr_assert_eq(rc, -ENOMEM);
	cr_assert_eq(n - 1, 16384u / UROCE_CTRL_MR_MAX_SEGS, "limits.mappings: 16384 a user");
	other = hello_as(&h, 4243);
	cr_assert_eq(reg_mr_of(&h, other, 8 * page, &rkey), 0, "another user still registers");
	/* What the greedy user gave back, it may take again. */
	uroce_rnic_client_free(greedy);
	greedy = hello_as(&h, 4242);
	cr_assert_eq(reg_mr_of(&h, greedy, page, &rkey), 0);
	host_fini(&h);
}

/* Issue 43 (7): MRs that lie in one run of one region share one mapping of it (UCX's
 * registration cache and perftest register the same buffer again and again); a mapping
 * stitched from several pieces is its MR's own. The shared one lives while any MR lies
 * in it, its region's handle closed or not, and each MR is still charged its own span. */
Test(rnic, mrs_of_one_region_share_one_mapping)
{
	const uint64_t page = 4096;
	struct host h;
	struct uroce_rnic_client *c;
	struct uroce_ctrl_handle req;
	uint32_t pd, region, other, mr[4];
	uint64_t mappings;

	host_init(&h, 0x39, 39);
	c = hello(&h);
	cr_assert_eq(request(&h, c, UROCE_CTRL_ALLOC_PD, NULL, 0), 0);
	pd = handle_of(&h);
	region = region_of(&h, c, 8 * page);
	other = region_of(&h, c, page);
	mappings = stat_of(&h, c, "mappings");

	struct uroce_ctrl_mr_seg whole = {.region = region, .length = 8 * page};
	struct uroce_ctrl_mr_seg two[2] = {{.region = region, .offset = 2 * page, .length = page},
					   {.region = region, .offset = 3 * page, .length = page}};
	struct uroce_ctrl_mr_seg stitched[2] = {{.region = region, .length = page},
						{.region = other, .length = page}};
	cr_assert_eq(reg_mr_segs(&h, c, pd, 0x10000000, 8 * page, &whole, 1), 0);
	mr[0] = mr_of(&h);
	cr_assert_eq(reg_mr_segs(&h, c, pd, 0x20000000, 2 * page, two, 2), 0, "one run, in two");
	mr[1] = mr_of(&h);
	cr_assert_eq(reg_mr_segs(&h, c, pd, 0x10000000, 8 * page, &whole, 1), 0);
	mr[2] = mr_of(&h);
	cr_assert_eq(stat_of(&h, c, "mappings"), mappings + 1, "three MRs, one mapping");
	cr_assert_eq(reg_mr_segs(&h, c, pd, 0x30000000, 2 * page, stitched, 2), 0);
	mr[3] = mr_of(&h);
	cr_assert_eq(stat_of(&h, c, "mappings"), mappings + 2, "a stitched MR maps its own");

	/* The MR that made the mapping goes, and the region's handle: the others keep it. */
	req.handle = mr[0];
	cr_assert_eq(request(&h, c, UROCE_CTRL_DEREG_MR, &req, sizeof(req)), 0);
	req.handle = region;
	cr_assert_eq(request(&h, c, UROCE_CTRL_UNMAP_REGION, &req, sizeof(req)), 0);
	cr_assert_eq(stat_of(&h, c, "mappings"), mappings + 2);
	req.handle = mr[1];
	cr_assert_eq(request(&h, c, UROCE_CTRL_DEREG_MR, &req, sizeof(req)), 0);
	req.handle = mr[2];
	cr_assert_eq(request(&h, c, UROCE_CTRL_DEREG_MR, &req, sizeof(req)), 0);
	cr_assert_eq(stat_of(&h, c, "mappings"), mappings + 1, "the last MR in it took it along");
	req.handle = mr[3];
	cr_assert_eq(request(&h, c, UROCE_CTRL_DEREG_MR, &req, sizeof(req)), 0);
	cr_assert_eq(stat_of(&h, c, "mappings"), mappings);
	host_fini(&h);
}

/* Issue 43 (8): with every shipped [limits] key 0, one user took all of
 * control.max_clients' connections and another user's was refused. By default a user
 * holds a quarter of them: beyond, HELLO fails with EAGAIN (as the rdma cgroup), and
 * another user still connects. */
Test(rnic, the_shipped_limits_leave_connections_for_others)
{
	struct uroce_ctrl_hello_req req = {.version = UROCE_CTRL_VERSION, .name = "greedy"};
	const struct uroce_rnic_peer greedy = {.pid = getpid(), .uid = 4244, .gid = 4244};
	struct uroce_rnic_client *c[65];
	struct host h;

	host_init(&h, 0x38, 38);
	for (unsigned int i = 0; i < 64; i++)
		c[i] = hello_as(&h, 4244);
	c[64] = uroce_rnic_client_new(h.nic, &greedy, &h);
	cr_assert_not_null(c[64]);
	cr_assert_eq(request(&h, c[64], UROCE_CTRL_HELLO, &req, sizeof(req)), -EAGAIN);
	uroce_rnic_client_free(c[64]);
	uroce_rnic_client_free(hello_as(&h, 4245));
	for (unsigned int i = 0; i < 64; i++)
		uroce_rnic_client_free(c[i]);
	host_fini(&h);
}

static int modify_qkey(struct host *h, struct uroce_rnic_client *c, uint32_t qp, uint32_t qkey)
{
	struct uroce_ctrl_modify_qp_req req = {
		.qp = qp,
		.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
		.attr = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = qkey}};

	return request(h, c, UROCE_CTRL_MODIFY_QP, &req, sizeof(req));
}

/* A controlled Q_Key (high bit set: the GSI's is 0x80010000) lets a QP forge CM messages
 * for other tenants' connections: Linux gives it to CAP_NET_RAW only, uroce to root and
 * the administrators. Anyone may have any other Q_Key. */
Test(rnic, a_controlled_qkey_needs_privilege)
{
	struct host h;
	struct uroce_rnic_client *user, *admin, *root;
	uint32_t qp;

	host_init(&h, 1, 1);
	qp = ud_qp_of(&h, &user, 1000, false, NULL);
	cr_assert_eq(modify_qkey(&h, user, qp, 0x80010000), -EPERM);
	cr_assert_eq(stat_of(&h, user, "daemon.qkey_refused"), 1);
	cr_assert_eq(modify_qkey(&h, user, qp, 0x11111111), 0, "an ordinary Q_Key");
	qp = ud_qp_of(&h, &admin, 1000, true, NULL);
	cr_assert_eq(modify_qkey(&h, admin, qp, 0x80010000), 0);
	qp = ud_qp_of(&h, &root, 0, false, NULL);
	cr_assert_eq(modify_qkey(&h, root, qp, 0x80000001), 0);
	cr_assert_eq(stat_of(&h, root, "daemon.qkey_refused"), 1);
	host_fini(&h);
}

/* A QPN and the pid behind it are what a forged packet is aimed with: `uroce stat -q`
 * shows a user the QPs of its own processes, and the administrator every one. */
Test(rnic, per_qp_statistics_show_a_user_its_own_qps)
{
	struct host h;
	struct uroce_rnic_client *a, *b, *admin;
	uint32_t qpn_a, qpn_b;
	char name_a[48], name_b[48];

	host_init(&h, 1, 1);
	ud_qp_of(&h, &a, 1000, false, &qpn_a);
	ud_qp_of(&h, &b, 2000, false, &qpn_b);
	ud_qp_of(&h, &admin, 3000, true, NULL);
	snprintf(name_a, sizeof(name_a), "qp.%u.state", qpn_a);
	snprintf(name_b, sizeof(name_b), "qp.%u.state", qpn_b);
	cr_assert_neq(stat_of_flags(&h, a, UROCE_CTRL_STATS_PER_QP, name_a), UINT64_MAX);
	cr_assert_eq(stat_of_flags(&h, a, UROCE_CTRL_STATS_PER_QP, name_b), UINT64_MAX,
		     "user 1000 sees user 2000's QP");
	cr_assert_eq(stat_of_flags(&h, b, UROCE_CTRL_STATS_PER_QP, name_a), UINT64_MAX);
	cr_assert_neq(stat_of_flags(&h, admin, UROCE_CTRL_STATS_PER_QP, name_a), UINT64_MAX);
	cr_assert_neq(stat_of_flags(&h, admin, UROCE_CTRL_STATS_PER_QP, name_b), UINT64_MAX);
	cr_assert_eq(stat_of(&h, a, "objects.qp"), 3u, "the device's counts are everyone's");
	host_fini(&h);
}

/* What a peer can guess it can aim forged packets with. Without a seed, the QPN base and
 * the key bytes come from getrandom(): two RNICs made in the same second by the same
 * process (the seed was once the time and pid) share none; with one, a run repeats. */
Test(rnic, identifiers_are_unpredictable_without_a_seed)
{
	for (uint64_t seed = 0; seed <= 7; seed += 7) {
		uint32_t qpn[2], rkey[2][4];
		struct uroce_rnic_client *c;

		for (int n = 0; n < 2; n++) {
			struct host h;

			host_init_cfg(&h, 1, 1, false, seed);
			ud_qp_of(&h, &c, 1000, false, &qpn[n]);
			for (int i = 0; i < 4; i++)
				cr_assert_eq(reg_mr_of(&h, c, 4096, &rkey[n][i]), 0);
			host_fini(&h);
		}
		if (seed)
			cr_assert(qpn[0] == qpn[1] && !memcmp(rkey[0], rkey[1], sizeof(rkey[0])),
				  "seed %llu: the same identifiers each run",
				  (unsigned long long)seed);
		else /* the same QPN and four key bytes by chance: 2^-44 */
			cr_assert(qpn[0] != qpn[1] || memcmp(rkey[0], rkey[1], sizeof(rkey[0])),
				  "no seed: QPN 0x%x and rkeys 0x%x.. both times", qpn[0],
				  rkey[0][0]);
	}
}

/* No global state: two RNICs in one process keep their clients, objects and counters
 * apart (the daemon core as a library, not a singleton). */
Test(rnic, two_rnics_share_nothing)
{
	struct host a, b;
	struct uroce_rnic_client *ca, *cb;
	struct uroce_ctrl_handle pd;

	host_init(&a, 1, 1);
	host_init(&b, 2, 2);
	ca = hello(&a);
	cb = hello(&b);
	cr_assert_eq(request(&a, ca, UROCE_CTRL_ALLOC_PD, NULL, 0), 0);
	memcpy(&pd, reply_payload(&a), sizeof(pd));
	cr_assert_eq(stat_of(&a, ca, "objects.pd"), 1u);
	cr_assert_eq(stat_of(&b, cb, "objects.pd"), 0u);
	cr_assert_eq(stat_of(&a, ca, "clients"), 1u);
	cr_assert_eq(stat_of(&b, cb, "clients"), 1u);
	cr_assert_eq(stat_of(&a, ca, "daemon.host_counter"), 7u, "the host's counters too");
	/* A handle names an object of its own client only. */
	cr_assert_eq(request(&b, cb, UROCE_CTRL_DEALLOC_PD, &pd, sizeof(pd)), -EINVAL);
	cr_assert_eq(request(&a, ca, UROCE_CTRL_DEALLOC_PD, &pd, sizeof(pd)), 0);
	cr_assert_eq(stat_of(&a, ca, "objects.pd"), 0u);
	/* Each RNIC has its own GID table: 10.0.0.1 on one, 10.0.0.2 on the other. */
	{
		struct uroce_ctrl_query_gid_req q = {.port = 1, .index = 1};
		struct uroce_ctrl_query_gid_rep ga, gb;

		cr_assert_eq(request(&a, ca, UROCE_CTRL_QUERY_GID, &q, sizeof(q)), 0);
		memcpy(&ga, reply_payload(&a), sizeof(ga));
		cr_assert_eq(request(&b, cb, UROCE_CTRL_QUERY_GID, &q, sizeof(q)), 0);
		memcpy(&gb, reply_payload(&b), sizeof(gb));
		cr_assert_eq(ga.gid.raw[15], 1);
		cr_assert_eq(gb.gid.raw[15], 2);
	}
	uroce_rnic_client_free(ca);
	cr_assert_eq(stat_of(&b, cb, "clients"), 1u, "freeing a client of one leaves the other");
	host_fini(&a);
	host_fini(&b);
}

/* ---- zero-copy frames and the memory they point into ------------------------------------ */

#define ZC_MEM (64 * 1024)

/* One application with an RC QP connected to itself and one MR over ZC_MEM bytes of a
 * memfd; its send queue and CQ mapped as lib/client maps them. */
struct zc_app {
	struct uroce_rnic_client *c;
	uint8_t *mem; /* the application's view of the MR */
	uint32_t mr, lkey, rkey, qp_handle, qpn;
	union ibv_gid gid; /* our own GID 1, the QP's destination */
	struct uroce_shm_region ctx_region, qp_region, cq_region;
	struct uroce_summary doorbells;
	struct uroce_ring sq, rq, cq;
	uint32_t slot;
	/* The application's copies of HELLO's async pipe and wake-up socket, and of its CQ's
	 * completion channel (-1: none). */
	int async_fd, wake_fd, channel_fd;
};

static void zc_modify(struct host *h, struct zc_app *a, struct ibv_qp_attr *attr, int mask)
{
	struct uroce_ctrl_modify_qp_req req = {.qp = a->qp_handle, .mask = mask, .attr = *attr};

	cr_assert_eq(request(h, a->c, UROCE_CTRL_MODIFY_QP, &req, sizeof(req)), 0,
		     "modify to %d", attr->qp_state);
}

/* The QP from RESET (or ERR, through RESET) to RTS, connected to itself. */
static void zc_connect(struct host *h, struct zc_app *a)
{
	struct ibv_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RESET;
	zc_modify(h, a, &attr, IBV_QP_STATE);
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.port_num = 1;
	attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	zc_modify(h, a, &attr,
		  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = IBV_MTU_1024;
	attr.dest_qp_num = a->qpn;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	attr.ah_attr.is_global = 1;
	attr.ah_attr.port_num = 1;
	attr.ah_attr.grh.dgid = a->gid;
	attr.ah_attr.grh.sgid_index = 1;
	attr.ah_attr.grh.hop_limit = 64;
	zc_modify(h, a, &attr,
		  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.timeout = 14; /* 67 ms */
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = 1;
	zc_modify(h, a, &attr,
		  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* @p channel: the CQ reports to a completion channel. */
static void zc_app_open_with(struct host *h, struct zc_app *a, bool channel)
{
	struct uroce_ctrl_hello_rep hello_rep;
	struct uroce_ctrl_map_region_req map = {.size = ZC_MEM};
	uint8_t reg_buf[sizeof(struct uroce_ctrl_reg_mr_req) + sizeof(struct uroce_ctrl_mr_seg)];
	struct uroce_ctrl_reg_mr_req *reg = (void *)reg_buf;
	struct uroce_ctrl_reg_mr_rep reg_rep;
	struct uroce_ctrl_create_cq_req cq_req = {.cqe = 16};
	struct uroce_ctrl_create_cq_rep cq_rep;
	struct uroce_ctrl_create_qp_req qp_req = {
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 4,
			.max_recv_sge = 4}};
	struct uroce_ctrl_create_qp_rep qp_rep;
	struct uroce_ctrl_query_gid_req gid_req = {.port = 1, .index = 1};
	struct uroce_ctrl_query_gid_rep gid_rep;
	const struct uroce_ctrl_queue_ctl *ctl;
	uint32_t pd, region, cq;
	int fd;

	memset(a, 0, sizeof(*a));
	a->c = hello(h);
	memcpy(&hello_rep, reply_payload(h), sizeof(hello_rep));
	a->async_fd = dup(h->fds[1]);
	a->wake_fd = dup(h->fds[2]);
	a->channel_fd = -1;
	a->ctx_region.fd = a->qp_region.fd = a->cq_region.fd = -1;
	cr_assert_eq(uroce_shm_attach(&a->ctx_region, dup(h->fds[0]), UROCE_CTRL_REGION_CONTEXT),
		     0);
	cr_assert_eq(uroce_summary_open(&a->doorbells,
					(uint8_t *)a->ctx_region.addr + hello_rep.doorbells_offset,
					UROCE_CTRL_DOORBELL_SLOTS),
		     0);
	cr_assert_eq(request(h, a->c, UROCE_CTRL_ALLOC_PD, NULL, 0), 0);
	pd = handle_of(h);

	/* The application's memory: a sealed memfd, as lib/client shares it. */
	fd = memfd_create("zc", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, ZC_MEM), 0);
	cr_assert_eq(fcntl(fd, F_ADD_SEALS, UROCE_SHM_SEALS), 0);
	a->mem = mmap(NULL, ZC_MEM, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(a->mem, MAP_FAILED);
	cr_assert_eq(request_fd(h, a->c, UROCE_CTRL_MAP_REGION, &map, sizeof(map), fd), 0);
	region = handle_of(h);
	memset(reg_buf, 0, sizeof(reg_buf));
	reg->pd = pd;
	reg->access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	reg->addr = reg->iova = (uint64_t)(uintptr_t)a->mem;
	reg->length = ZC_MEM;
	reg->nseg = 1;
	reg->seg[0] = (struct uroce_ctrl_mr_seg){.region = region, .offset = 0, .length = ZC_MEM};
	cr_assert_eq(request(h, a->c, UROCE_CTRL_REG_MR, reg_buf, sizeof(reg_buf)), 0);
	memcpy(&reg_rep, reply_payload(h), sizeof(reg_rep));
	a->mr = reg_rep.mr;
	a->lkey = reg_rep.lkey;
	a->rkey = reg_rep.rkey;

	if (channel) {
		cr_assert_eq(request(h, a->c, UROCE_CTRL_CREATE_CHANNEL, NULL, 0), 0);
		cq_req.channel = handle_of(h);
		a->channel_fd = dup(h->fds[0]);
	}
	cr_assert_eq(request(h, a->c, UROCE_CTRL_CREATE_CQ, &cq_req, sizeof(cq_req)), 0);
	memcpy(&cq_rep, reply_payload(h), sizeof(cq_rep));
	cq = cq_rep.cq;
	cr_assert_eq(uroce_shm_attach(&a->cq_region, dup(h->fds[0]), UROCE_CTRL_REGION_CQ), 0);
	cr_assert_eq(uroce_ring_open(&a->cq, (uint8_t *)a->cq_region.addr + cq_rep.ring_offset,
				     a->cq_region.size - cq_rep.ring_offset, false),
		     0);
	qp_req.pd = pd;
	qp_req.send_cq = qp_req.recv_cq = cq;
	cr_assert_eq(request(h, a->c, UROCE_CTRL_CREATE_QP, &qp_req, sizeof(qp_req)), 0);
	memcpy(&qp_rep, reply_payload(h), sizeof(qp_rep));
	a->qp_handle = qp_rep.qp;
	a->qpn = qp_rep.qpn;
	cr_assert_eq(uroce_shm_attach(&a->qp_region, dup(h->fds[0]), UROCE_CTRL_REGION_QP), 0);
	cr_assert_eq(uroce_ring_open(&a->sq, (uint8_t *)a->qp_region.addr + qp_rep.sq_offset,
				     a->qp_region.size - qp_rep.sq_offset, true),
		     0);
	cr_assert_eq(uroce_ring_open(&a->rq, (uint8_t *)a->qp_region.addr + qp_rep.rq_offset,
				     a->qp_region.size - qp_rep.rq_offset, true),
		     0);
	ctl = (const void *)((uint8_t *)a->qp_region.addr + UROCE_CTRL_QUEUE_CTL_OFFSET);
	a->slot = ctl->doorbell_slot;

	/* Connected to itself through our own GID 1 (10.0.0.1): it resolves at once. */
	cr_assert_eq(request(h, a->c, UROCE_CTRL_QUERY_GID, &gid_req, sizeof(gid_req)), 0);
	memcpy(&gid_rep, reply_payload(h), sizeof(gid_rep));
	a->gid = gid_rep.gid;
	zc_connect(h, a);
}

static void zc_app_open(struct host *h, struct zc_app *a)
{
	zc_app_open_with(h, a, false);
}

/* Posts an RDMA WRITE of @p len bytes from offset 0 to offset ZC_MEM / 2, as lib/client
 * does: the WQE, its commit, then the doorbell slot. */
static void zc_post_write(struct host *h, struct zc_app *a, uint32_t len)
{
	struct uroce_ctrl_send_wqe *w = uroce_ring_prod_slot(&a->sq, 0);

	cr_assert_not_null(w);
	memset(w, 0, sizeof(*w));
	w->wr_id = 7;
	w->opcode = IBV_WR_RDMA_WRITE;
	w->send_flags = IBV_SEND_SIGNALED;
	w->remote_addr = (uint64_t)(uintptr_t)a->mem + ZC_MEM / 2;
	w->rkey = a->rkey;
	w->num_sge = 1;
	w->sg_list[0].addr = (uint64_t)(uintptr_t)a->mem;
	w->sg_list[0].length = len;
	w->sg_list[0].lkey = a->lkey;
	uroce_ring_prod_commit(&a->sq, 1);
	uroce_summary_set(&a->doorbells, a->slot);
	(void)uroce_rnic_doorbells(h->nic);
	uroce_rnic_process(h->nic);
}

static void zc_app_close(struct zc_app *a)
{
	close(a->async_fd);
	close(a->wake_fd);
	if (a->channel_fd >= 0)
		close(a->channel_fd);
	uroce_shm_close(&a->qp_region);
	uroce_shm_close(&a->cq_region);
	uroce_shm_close(&a->ctx_region);
	munmap(a->mem, ZC_MEM);
}

/* An MR deregistered while frames point into it (queued in the PMD, or sent and awaiting
 * their ACK) keeps its pages mapped until the last frame lets go, and a retransmission
 * after the deregistration sends nothing from them: the WQE fails instead. */
Test(rnic, deregistered_memory_stays_mapped_while_frames_point_into_it)
{
	struct host h;
	struct zc_app a;
	struct uroce_ctrl_handle mr;
	struct ibv_wc wc;
	uint64_t mappings;

	host_init_zc(&h, 1, 1, true);
	zc_app_open(&h, &a);
	for (uint32_t i = 0; i < ZC_MEM / 2; i++)
		a.mem[i] = (uint8_t)(i * 7 + 1);
	zc_post_write(&h, &a, 4096);
	cr_assert_eq(h.zc_frames, 4u, "4 KiB at MTU 1024, each packet from the MR");
	cr_assert_eq(h.nheld, 4u);
	for (unsigned int i = 0; i < h.nheld; i++)
		cr_assert_eq(memcmp(h.held[i].addr, a.mem + 1024 * i, 1024), 0, "packet %u", i);

	mappings = stat_of(&h, a.c, "mappings");
	mr.handle = a.mr;
	cr_assert_eq(request(&h, a.c, UROCE_CTRL_DEREG_MR, &mr, sizeof(mr)), 0);
	cr_assert_eq(stat_of(&h, a.c, "objects.mr"), 0u);
	cr_assert_eq(stat_of(&h, a.c, "mappings"), mappings, "the frames' pages stay mapped");
	cr_assert_eq(stat_of(&h, a.c, "daemon.mr_dereg_held"), 1u);
	/* What a PMD does with a queued frame: it reads the pages (ASan: not freed). */
	for (unsigned int i = 0; i < h.nheld; i++)
		cr_assert_eq(memcmp(h.held[i].addr, a.mem + 1024 * i, 1024), 0, "packet %u", i);

	/* No ACK ever comes (the frames are never delivered): the retransmission timer
	 * fires, finds the lkey gone and fails the WQE without sending a byte. */
	h.now += 200 * 1000 * 1000;
	uroce_rnic_process(h.nic);
	cr_assert_eq(h.zc_frames, 4u, "nothing sent from the deregistered MR");
	cr_assert_eq(h.frames, 0u, "nor copied out of it");
	cr_assert_eq(uroce_rnic_completions(h.nic), 1u);
	cr_assert_eq(uroce_ring_cons_avail(&a.cq), 1u);
	memcpy(&wc, uroce_ring_cons_slot(&a.cq, 0), sizeof(wc));
	cr_assert_eq(wc.wr_id, 7u);
	cr_assert_neq(wc.status, IBV_WC_SUCCESS, "the WQE fails: %d", wc.status);

	host_release_held(&h);
	cr_assert_eq(stat_of(&h, a.c, "mappings"), mappings - 1, "unmapped with the last frame");
	zc_app_close(&a);
	host_fini(&h);
}

/* Posts a receive of 64 bytes at offset ZC_MEM / 2 as lib/client does (the WQE, its commit,
 * the doorbell slot), and nothing more: the RNIC has not looked at it yet. */
static void zc_post_recv_unseen(struct zc_app *a, uint64_t wr_id)
{
	struct uroce_ctrl_recv_wqe *w = uroce_ring_prod_slot(&a->rq, 0);

	cr_assert_not_null(w);
	memset(w, 0, sizeof(*w));
	w->wr_id = wr_id;
	w->num_sge = 1;
	w->sg_list[0].addr = (uint64_t)(uintptr_t)a->mem + ZC_MEM / 2;
	w->sg_list[0].length = 64;
	w->sg_list[0].lkey = a->lkey;
	uroce_ring_prod_commit(&a->rq, 1);
	uroce_summary_set(&a->doorbells, a->slot);
}

/*
 * Receives an application posted before ibv_modify_qp(ERR) complete, flushed, before
 * that call returns, and so before anything it posts afterwards. Ceph's RDMA messenger
 * (no SRQ) counts on it: it moves a QP to ERR, posts a "beacon" SEND, and once the beacon
 * has completed and its receive CQ polls empty it destroys the QP and hands the QP's
 * receive buffers to other QPs; a flush completion seen after that names a buffer Ceph
 * lists on another QP, and QueuePair::remove_rq_wr asserts. The daemon used to flush only
 * the WQEs it had taken from the rings: one still in the ring was taken at the next
 * doorbell scan, after the send queue's, so it completed after the beacon.
 */
Test(rnic, receives_posted_before_a_move_to_error_flush_before_it_returns)
{
	struct ibv_qp_attr err = {.qp_state = IBV_QPS_ERR};
	struct host h;
	struct zc_app a;
	struct ibv_wc wc;

	host_init_zc(&h, 1, 1, true);
	zc_app_open(&h, &a);
	zc_post_recv_unseen(&a, 100);
	zc_post_recv_unseen(&a, 101);
	zc_modify(&h, &a, &err, IBV_QP_STATE);
	cr_assert_eq(uroce_ring_cons_avail(&a.cq), 2u,
		     "both receives' flush completions are in the CQ when the modify answers");
	for (uint32_t i = 0; i < 2; i++) {
		memcpy(&wc, uroce_ring_cons_slot(&a.cq, i), sizeof(wc));
		cr_assert_eq(wc.wr_id, 100u + i, "in the order they were posted");
		cr_assert_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
		cr_assert_eq(wc.opcode, IBV_WC_RECV);
		cr_assert_eq(wc.qp_num, a.qpn);
	}
	uroce_ring_cons_release(&a.cq, 2);

	/* The beacon: posted after the modify, it completes after them, and nothing of the
	 * receive queue comes after it. */
	zc_post_write(&h, &a, 64);
	(void)uroce_rnic_completions(h.nic);
	cr_assert_eq(uroce_ring_cons_avail(&a.cq), 1u, "the beacon only");
	memcpy(&wc, uroce_ring_cons_slot(&a.cq, 0), sizeof(wc));
	cr_assert_eq(wc.wr_id, 7u);
	cr_assert_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	zc_app_close(&a);
	host_fini(&h);
}

/* An application that exits, and then the RNIC itself, while frames still point into
 * the application's memory: the pages go when the frames do, after both. */
Test(rnic, frames_outlive_their_application_and_the_rnic)
{
	struct host h;
	struct zc_app a;

	host_init_zc(&h, 1, 1, true);
	zc_app_open(&h, &a);
	memset(a.mem, 0x5a, ZC_MEM / 2);
	zc_post_write(&h, &a, 8192);
	cr_assert_eq(h.nheld, 8u);
	uroce_rnic_client_free(a.c);
	zc_app_close(&a); /* the application's own mapping is gone too */
	for (unsigned int i = 0; i < h.nheld; i++)
		cr_assert_eq(h.held[i].addr[h.held[i].len - 1], 0x5a, "still mapped for the PMD");
	uroce_rnic_destroy(h.nic);
	h.nic = NULL;
	for (unsigned int i = 0; i < h.nheld; i++)
		cr_assert_eq(h.held[i].addr[0], 0x5a, "after the RNIC too");
	host_release_held(&h);
	uroce_ip_destroy(h.ip);
	for (unsigned int i = 0; i < h.nfds; i++)
		close(h.fds[i]);
}

/* ---- a WQE rewritten while the daemon reads it ------------------------------------------- */

struct racer {
	uint8_t *slots; /* the send queue's WQE slots, as the application maps them */
	size_t len;
	atomic_bool stop;
	uint64_t passes;
};

/* Rewrites every 8 bytes of every slot, over and over: num_sge, inline_len, opcodes,
 * SGE addresses, lengths and keys, half of them small numbers just past their bounds. */
static void *race_slots(void *arg)
{
	struct racer *r = arg;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		for (size_t i = 0; i + 8 <= r->len; i += 8) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			__atomic_store_n((uint64_t *)(void *)(r->slots + i),
					 (x & 1) ? (x >> 1) & 0x3f : x, __ATOMIC_RELAXED);
		}
		r->passes++;
	}
	return NULL;
}

/* A racing writer of the application's ring cannot make the daemon read or copy out of
 * bounds (security.md, single reads): each WQE field is read once into the daemon's own
 * memory and bounded there. The test posts RDMA WRITEs through the ring while a thread
 * rewrites every slot; the daemon takes them, sends, and receives its own frames; a QP
 * a garbled WQE put in error is reset. Under ASan (the CI's second build) for 60 s, else
 * 5. Then, the writer stopped, a clean WRITE still lands. */
Test(rnic, a_racing_writer_of_the_ring_cannot_make_the_daemon_overrun, .timeout = 200)
{
#if defined(__SANITIZE_ADDRESS__)
	const uint64_t secs = 60;
#else
	const uint64_t secs = 5;
#endif
	struct host h;
	struct zc_app a;
	struct racer r;
	pthread_t t;
	uint64_t end, posted = 0, completed = 0;
	struct timespec ts;

	host_init(&h, 1, 1);
	h.loopback = true;
	zc_app_open(&h, &a);
	r.slots = a.sq.elems;
	r.len = (size_t)(a.sq.mask + 1) * a.sq.elem_size;
	r.passes = 0;
	atomic_init(&r.stop, false);
	cr_assert_eq(pthread_create(&t, NULL, race_slots, &r), 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = (uint64_t)ts.tv_sec + secs;
	for (uint64_t k = 0;; k++) {
		if ((k & 1023) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			if ((uint64_t)ts.tv_sec >= end)
				break;
		}
		if (uroce_ring_prod_space(&a.sq)) {
			zc_post_write(&h, &a, 64 + (uint32_t)(k % 4096));
			posted++;
		}
		h.now += 20000; /* 20 us a turn: retransmissions come, in 67 ms */
		host_loop(&h);
		uroce_rnic_process(h.nic);
		uroce_rnic_completions(h.nic);
		completed += uroce_ring_cons_avail(&a.cq);
		uroce_ring_cons_release(&a.cq, uroce_ring_cons_avail(&a.cq));
		if ((k & 255) == 255)
			zc_connect(&h, &a); /* out of ERR, where a garbled WQE may have put it */
	}
	atomic_store(&r.stop, true);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_gt(r.passes, 100, "the writer raced (%llu passes)",
		     (unsigned long long)r.passes);
	cr_assert_gt(posted, 1000);
	cr_assert_gt(completed, 0, "the daemon took WQEs and completed them");

	/* Whatever happened, the daemon still works: a clean WRITE lands. */
	zc_connect(&h, &a);
	memset(a.mem, 0x5a, 4096);
	memset(a.mem + ZC_MEM / 2, 0, 4096);
	zc_post_write(&h, &a, 4096);
	for (int i = 0; i < 100 && !uroce_ring_cons_avail(&a.cq); i++) {
		host_loop(&h);
		uroce_rnic_process(h.nic);
		uroce_rnic_completions(h.nic);
	}
	cr_assert_eq(uroce_ring_cons_avail(&a.cq), 1u);
	{
		const struct ibv_wc *wc = uroce_ring_cons_slot(&a.cq, 0);

		cr_assert_eq(wc->status, IBV_WC_SUCCESS, "status %d", wc->status);
	}
	cr_assert_eq(memcmp(a.mem, a.mem + ZC_MEM / 2, 4096), 0);
	fprintf(stderr, "racing writer: %llu s, %llu passes over %zu bytes of slots, %llu WQEs "
			"posted, %llu completions\n",
		(unsigned long long)secs, (unsigned long long)r.passes, r.len,
		(unsigned long long)posted, (unsigned long long)completed);
	zc_app_close(&a);
	host_fini(&h);
}

/* A handle names one object for its life (rnic_obj_add): the PD made after another was
 * deallocated takes its slot under another handle, and the old handle names nothing, not
 * the new PD. Each type goes through the same table; a CQ shows the queue kinds. */
Test(rnic, a_destroyed_objects_handle_never_names_the_next)
{
	struct uroce_ctrl_create_cq_req cq = {.cqe = 16};
	struct uroce_ctrl_handle req;
	struct uroce_rnic_client *c;
	uint32_t old, next;
	struct host h;

	host_init(&h, 0x45, 45);
	c = hello(&h);
	cr_assert_eq(request(&h, c, UROCE_CTRL_ALLOC_PD, NULL, 0), 0);
	old = handle_of(&h);
	req.handle = old;
	cr_assert_eq(request(&h, c, UROCE_CTRL_DEALLOC_PD, &req, sizeof(req)), 0);
	cr_assert_eq(request(&h, c, UROCE_CTRL_ALLOC_PD, NULL, 0), 0);
	next = handle_of(&h);
	cr_assert_neq(next, old, "the new PD has the old one's handle");
	cr_assert_eq(request(&h, c, UROCE_CTRL_DEALLOC_PD, &req, sizeof(req)), -EINVAL,
		     "the old handle deallocated the new PD");
	req.handle = next;
	cr_assert_eq(request(&h, c, UROCE_CTRL_DEALLOC_PD, &req, sizeof(req)), 0);

	cr_assert_eq(request(&h, c, UROCE_CTRL_CREATE_CQ, &cq, sizeof(cq)), 0);
	old = handle_of(&h);
	req.handle = old;
	cr_assert_eq(request(&h, c, UROCE_CTRL_DESTROY_CQ, &req, sizeof(req)), 0);
	cr_assert_eq(request(&h, c, UROCE_CTRL_CREATE_CQ, &cq, sizeof(cq)), 0);
	next = handle_of(&h);
	cr_assert_neq(next, old);
	cr_assert_eq(request(&h, c, UROCE_CTRL_DESTROY_CQ, &req, sizeof(req)), -EINVAL);
	req.handle = next;
	cr_assert_eq(request(&h, c, UROCE_CTRL_DESTROY_CQ, &req, sizeof(req)), 0);
	host_fini(&h);
}

/* REGION_FD gives a client its own region's memfd back (a second context of the process
 * maps it to its daemon): the same file, and nothing for a handle that is not its
 * region, another client's included. */
Test(rnic, region_fd_returns_the_clients_own_memfd)
{
	struct host h;
	struct uroce_rnic_client *a, *b;
	struct uroce_ctrl_map_region_req map = {.size = 8192};
	struct uroce_ctrl_handle req = {0};
	struct stat st, back;
	int fd;

	host_init(&h, 0x31, 31);
	a = hello(&h);
	b = hello(&h);
	fd = memfd_create("mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 8192), 0);
	cr_assert_eq(fcntl(fd, F_ADD_SEALS, UROCE_SHM_SEALS), 0);
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq(request_fd(&h, a, UROCE_CTRL_MAP_REGION, &map, sizeof(map), fd), 0);
	req.handle = handle_of(&h);
	cr_assert_eq(request(&h, a, UROCE_CTRL_REGION_FD, &req, sizeof(req)), 0);
	cr_assert_eq(h.nfds, 1u);
	cr_assert_eq(fstat(h.fds[0], &back), 0);
	cr_assert(back.st_dev == st.st_dev && back.st_ino == st.st_ino, "the very memfd");
	cr_assert_eq(request(&h, b, UROCE_CTRL_REGION_FD, &req, sizeof(req)), -EINVAL,
		     "a's handle is nothing of b's");
	cr_assert_eq(h.nfds, 0u);
	cr_assert_eq(request(&h, a, UROCE_CTRL_ALLOC_PD, NULL, 0), 0);
	req.handle = handle_of(&h);
	cr_assert_eq(request(&h, a, UROCE_CTRL_REGION_FD, &req, sizeof(req)), -EINVAL,
		     "a PD is no region");
	host_fini(&h);
}

/* @p c imports PD @p pd (its handle in *@p c_pd) and MR @p mr of the context it imports
 * from; @return IMPORT_MR's reply. */
static struct uroce_ctrl_import_mr_rep import_pd_and_mr(struct host *h,
						       struct uroce_rnic_client *c, uint32_t pd,
						       uint32_t mr, uint32_t *c_pd)
{
	struct uroce_ctrl_handle req = {.handle = pd};
	struct uroce_ctrl_import_mr_rep rep;

	cr_assert_eq(request(h, c, UROCE_CTRL_IMPORT_PD, &req, sizeof(req)), 0);
	*c_pd = handle_of(h);
	req.handle = mr;
	cr_assert_eq(request(h, c, UROCE_CTRL_IMPORT_MR, &req, sizeof(req)), 0);
	memcpy(&rep, reply_payload(h), sizeof(rep));
	return rep;
}

/* IMPORT_CONTEXT names the context whose PDs and MRs a client may import by that
 * context's token, its region's file (lib/ctrl/uroce_ctrl.h, "importing"); the PD and
 * MR are then one object named by two clients: destroyed through either handle for both,
 * kept while either client holds a handle when the other goes, and kept past its last
 * handle while something still uses it. (ASan: nothing freed twice or leaked, whichever
 * goes first.) */
Test(rnic, import_shares_pd_and_mr_between_clients)
{
	struct host h;
	struct uroce_rnic_client *a, *b, *c;
	struct uroce_ctrl_handle req = {0};
	struct uroce_ctrl_import_mr_rep imr;
	uint32_t rkey, a_pd, a_mr, b_pd, b_mr, c_mr;
	int a_token, b_token, other;

	host_init(&h, 0x33, 33);
	a = hello(&h);
	a_token = dup(h.fds[0]);
	b = hello(&h);
	b_token = dup(h.fds[0]);
	c = hello(&h);
	cr_assert_eq(reg_mr_pd_of(&h, a, 8192, &rkey, &a_pd), 0);
	a_mr = mr_of(&h);

	req.handle = a_pd;
	cr_assert_eq(request(&h, b, UROCE_CTRL_IMPORT_PD, &req, sizeof(req)), -EINVAL,
		     "no IMPORT_CONTEXT yet");
	other = memfd_create("not a context", MFD_CLOEXEC);
	cr_assert_eq(request_fd(&h, b, UROCE_CTRL_IMPORT_CONTEXT, NULL, 0, other), -EINVAL);
	cr_assert_eq(request_fd(&h, b, UROCE_CTRL_IMPORT_CONTEXT, NULL, 0, dup(b_token)),
		     -EINVAL, "its own context");
	cr_assert_eq(request_fd(&h, b, UROCE_CTRL_IMPORT_CONTEXT, NULL, 0, dup(a_token)), 0);
	cr_assert_eq(request_fd(&h, b, UROCE_CTRL_IMPORT_CONTEXT, NULL, 0, dup(a_token)),
		     -EINVAL, "one import per connection");
	imr = import_pd_and_mr(&h, b, a_pd, a_mr, &b_pd);
	b_mr = imr.mr;
	cr_assert_eq(imr.rkey, rkey);
	cr_assert_eq(imr.length, 8192u);
	cr_assert_eq(imr.iova, 0x10000000u);
	cr_assert_eq(imr.access, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	req.handle = 999;
	cr_assert_eq(request(&h, b, UROCE_CTRL_IMPORT_PD, &req, sizeof(req)), -EINVAL);
	req.handle = a_pd;
	cr_assert_eq(request(&h, b, UROCE_CTRL_IMPORT_MR, &req, sizeof(req)), -EINVAL,
		     "a PD's handle is no MR");
	cr_assert_eq(request(&h, c, UROCE_CTRL_IMPORT_MR, &req, sizeof(req)), -EINVAL,
		     "c imports from nobody");

	/* a goes first: b's handles keep the PD and MR, and free them last. */
	uroce_rnic_client_free(a);
	req.handle = a_mr;
	cr_assert_eq(request(&h, b, UROCE_CTRL_IMPORT_MR, &req, sizeof(req)), -EINVAL,
		     "a has gone: nothing more to import");
	req.handle = b_pd;
	cr_assert_eq(request(&h, b, UROCE_CTRL_DEALLOC_PD, &req, sizeof(req)), -EBUSY,
		     "the MR is on it");
	req.handle = b_mr;
	cr_assert_eq(request(&h, b, UROCE_CTRL_DEREG_MR, &req, sizeof(req)), 0);
	req.handle = b_pd;
	cr_assert_eq(request(&h, b, UROCE_CTRL_DEALLOC_PD, &req, sizeof(req)), 0);

	/* With both there: one object, destroyed through either handle. */
	a = hello(&h);
	close(a_token);
	a_token = dup(h.fds[0]);
	cr_assert_eq(reg_mr_of(&h, a, 4096, &rkey), 0);
	a_mr = mr_of(&h);
	uroce_rnic_client_free(b);
	b = hello(&h);
	cr_assert_eq(request_fd(&h, b, UROCE_CTRL_IMPORT_CONTEXT, NULL, 0, dup(a_token)), 0);
	b_mr = import_pd_and_mr(&h, b, a_pd, a_mr, &b_pd).mr;
	req.handle = b_mr;
	cr_assert_eq(request(&h, b, UROCE_CTRL_DEREG_MR, &req, sizeof(req)), 0);
	req.handle = a_mr;
	cr_assert_eq(request(&h, a, UROCE_CTRL_DEREG_MR, &req, sizeof(req)), -EINVAL,
		     "deregistered through b's handle");
	cr_assert_eq(request(&h, a, UROCE_CTRL_UNIMPORT_MR, &req, sizeof(req)), 0);
	req.handle = a_pd;
	cr_assert_eq(request(&h, a, UROCE_CTRL_DEALLOC_PD, &req, sizeof(req)), 0);
	req.handle = b_pd;
	cr_assert_eq(request(&h, b, UROCE_CTRL_DEALLOC_PD, &req, sizeof(req)), -EINVAL,
		     "deallocated through a's handle");
	cr_assert_eq(request(&h, b, UROCE_CTRL_UNIMPORT_PD, &req, sizeof(req)), 0);
	cr_assert_eq(request(&h, b, UROCE_CTRL_UNIMPORT_PD, &req, sizeof(req)), -EINVAL,
		     "released");

	/* The last handle of a PD still in use goes: the PD waits, and goes with its MR. */
	cr_assert_eq(reg_mr_of(&h, c, 4096, &rkey), 0);
	c_mr = mr_of(&h);
	req.handle = a_pd;
	cr_assert_eq(request(&h, c, UROCE_CTRL_UNIMPORT_PD, &req, sizeof(req)), 0);
	cr_assert_eq(stat_of(&h, c, "orphans"), 1u, "kept while the MR is on it");
	req.handle = c_mr;
	cr_assert_eq(request(&h, c, UROCE_CTRL_DEREG_MR, &req, sizeof(req)), 0);
	cr_assert_eq(stat_of(&h, c, "orphans"), 0u, "gone with the MR");
	close(a_token);
	close(b_token);
	host_fini(&h);
}

/* Issue 43 (6): an MR's charge once vanished when its registrant released its handle while
 * an importer kept the MR (UNIMPORT_MR of one's own MR): register 1 MiB, import it on a
 * second context, unimport the original, repeat, and 64 MiB stood pinned under a 2 MiB
 * limit. The pages stay pinned while any handle names them, so the charge moves to the
 * holder that is left, and the limit counts it. */
Test(rnic, a_charge_moves_to_the_importer_and_never_vanishes)
{
	const uint64_t mib = 1u << 20;
	struct host h;
	struct uroce_rnic_client *a, *b;
	struct uroce_ctrl_handle req;
	uint32_t rkey, a_mr;
	int a_token;
	int rc = 0;

	host_init(&h, 0x36, 36);
	h.memlock = 2 * mib; /* both clients are this process: one RLIMIT_MEMLOCK */
	a = hello(&h);
	a_token = dup(h.fds[0]);
	b = hello(&h);
	cr_assert_eq(request_fd(&h, b, UROCE_CTRL_IMPORT_CONTEXT, NULL, 0, a_token), 0);
	for (int round = 0; round < 4 && rc == 0; round++) {
		rc = reg_mr_of(&h, a, mib, &rkey);
		if (rc)
			break;
		a_mr = mr_of(&h);
		req.handle = a_mr;
		cr_assert_eq(request(&h, b, UROCE_CTRL_IMPORT_MR, &req, sizeof(req)), 0);
		cr_assert_eq(request(&h, a, UROCE_CTRL_UNIMPORT_MR, &req, sizeof(req)), 0);
		cr_assert_leq(round, 1, "a third MiB pinned under a 2 MiB limit");
	}
	cr_assert_eq(rc, -ENOMEM, "RLIMIT_MEMLOCK counts what the importer holds");
	cr_assert_eq(stat_of(&h, b, "objects.mr"), 2u);
	/* The importer goes: the pages go, and with them the charge. */
	uroce_rnic_client_free(b);
	cr_assert_eq(reg_mr_of(&h, a, 2 * mib, &rkey), 0);
	host_fini(&h);
}

/* RES_LIST rows of @p type as @p c sees them, starting at @p start: their count, the
 * reply's `next` in *@p next, and the rows copied to @p rows (room for @p max). */
static uint32_t res_list(struct host *h, struct uroce_rnic_client *c, uint32_t type,
			 uint32_t start, uint32_t *next, struct uroce_ctrl_res_row *rows,
			 uint32_t max)
{
	struct uroce_ctrl_res_list_req req = {.type = type, .start = start};
	struct uroce_ctrl_res_list_rep rep;

	cr_assert_eq(request(h, c, UROCE_CTRL_RES_LIST, &req, sizeof(req)), 0);
	memcpy(&rep, reply_payload(h), sizeof(rep));
	cr_assert_leq(rep.count, max);
	memcpy(rows, (const uint8_t *)reply_payload(h) + sizeof(rep),
	       rep.count * sizeof(*rows));
	*next = rep.next;
	return rep.count;
}

/* `uroce res show`: each object a row with its process; a user sees its own uid's, the
 * administrator every one (as the per-QP counters); a long listing comes in pages. */
Test(rnic, res_list_shows_each_object_with_its_process)
{
	struct host h;
	struct uroce_rnic_client *a, *b, *admin;
	struct uroce_ctrl_res_row rows[400];
	struct uroce_ctrl_res_list_req bad = {.type = 9};
	uint32_t qpn_a, qpn_b, next, n, seen;

	host_init(&h, 1, 1);
	ud_qp_of(&h, &a, 1000, false, &qpn_a);
	ud_qp_of(&h, &b, 2000, false, &qpn_b);
	ud_qp_of(&h, &admin, 3000, true, NULL);

	n = res_list(&h, a, UROCE_CTRL_RES_QP, 0, &next, rows, 400);
	cr_assert_eq(n, 1u, "user 1000 sees its own QP only");
	cr_assert_eq(next, 0u);
	cr_assert_eq(rows[0].qp.lqpn, qpn_a);
	cr_assert_eq(rows[0].qp.type, IBV_QPT_UD);
	cr_assert_eq(rows[0].qp.state, IBV_QPS_RESET);
	cr_assert_eq(rows[0].pid, (uint32_t)getpid());
	cr_assert_str_eq(rows[0].comm, "qk");
	cr_assert_neq(rows[0].qp.send_cq, 0u);
	n = res_list(&h, admin, UROCE_CTRL_RES_QP, 0, &next, rows, 400);
	cr_assert_eq(n, 3u, "the administrator sees every QP");
	cr_assert_eq(rows[1].qp.lqpn, qpn_b);

	n = res_list(&h, a, UROCE_CTRL_RES_CQ, 0, &next, rows, 400);
	cr_assert_eq(n, 1u);
	cr_assert_eq(rows[0].cq.users, 1u, "one QP completes into it");
	cr_assert_geq(rows[0].cq.cqe, 16u);
	n = res_list(&h, a, UROCE_CTRL_RES_PD, 0, &next, rows, 400);
	cr_assert_eq(n, 1u);
	cr_assert_eq(rows[0].pd.refs, 1u);
	cr_assert_eq(res_list(&h, a, UROCE_CTRL_RES_MR, 0, &next, rows, 400), 0u);
	cr_assert_eq(request(&h, a, UROCE_CTRL_RES_LIST, &bad, sizeof(bad)), -EINVAL);

	/* More PDs than one reply holds: the pages add up to every one, once. */
	for (int i = 0; i < 300; i++)
		cr_assert_eq(request(&h, admin, UROCE_CTRL_ALLOC_PD, NULL, 0), 0);
	seen = 0;
	next = 0;
	do {
		uint32_t start = next;

		n = res_list(&h, admin, UROCE_CTRL_RES_PD, start, &next, rows, 400);
		cr_assert(next == 0 || next == start + n, "page at %u: %u rows, next %u", start,
			  n, next);
		seen += n;
	} while (next);
	cr_assert_eq(seen, 303u);
	host_fini(&h);
}

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
			uroce_rnic_completions(h.nic);
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

/* A client of @p uid with an rdma_cm id (TCP port space) on a channel of its own. */
static uint32_t cm_id_of(struct host *h, struct uroce_rnic_client **c, uid_t uid)
{
	const struct uroce_rnic_peer peer = {.pid = getpid(), .uid = uid, .gid = uid};
	struct uroce_ctrl_hello_req hello_req = {.version = UROCE_CTRL_VERSION, .name = "cm"};
	struct uroce_ctrl_cm_create_id_req id_req = {.ps = 0x0106 /* RDMA_PS_TCP */,
						     .qp_type = IBV_QPT_RC};

	*c = uroce_rnic_client_new(h->nic, &peer, h);
	cr_assert_not_null(*c);
	cr_assert_eq(request(h, *c, UROCE_CTRL_HELLO, &hello_req, sizeof(hello_req)), 0);
	cr_assert_eq(request(h, *c, UROCE_CTRL_CM_CREATE_CHANNEL, NULL, 0), 0);
	id_req.channel = handle_of(h);
	cr_assert_eq(request(h, *c, UROCE_CTRL_CM_CREATE_ID, &id_req, sizeof(id_req)), 0);
	return handle_of(h);
}

static int cm_bind_port(struct host *h, struct uroce_rnic_client *c, uint32_t id, uint32_t cmd,
			uint16_t port)
{
	struct uroce_ctrl_cm_addr_req req = {.id = id, .timeout_ms = 1000};
	struct sockaddr_in *src = (struct sockaddr_in *)&req.src;
	struct sockaddr_in *dst = (struct sockaddr_in *)&req.dst;

	src->sin_family = AF_INET;
	src->sin_port = htons(port);
	dst->sin_family = AF_INET;
	dst->sin_addr.s_addr = htonl(0x0a000002);
	return request(h, c, cmd, &req, sizeof(req));
}

/* Linux's cma_get_port(): a port below 1024 wants CAP_NET_BIND_SERVICE, EACCES otherwise;
 * here, a client the kernel says is root. rdma_resolve_addr() with a source port binds it
 * too. */
Test(rnic, cm_ports_below_1024_are_roots)
{
	struct uroce_rnic_client *user, *root;
	struct host h;
	uint32_t uid_id, root_id;

	host_init(&h, 1, 1);
	uid_id = cm_id_of(&h, &user, 1000);
	cr_expect_eq(cm_bind_port(&h, user, uid_id, UROCE_CTRL_CM_BIND, 100), -EACCES);
	cr_expect_eq(cm_bind_port(&h, user, uid_id, UROCE_CTRL_CM_BIND, 1023), -EACCES);
	cr_expect_eq(cm_bind_port(&h, user, uid_id, UROCE_CTRL_CM_RESOLVE_ADDR, 100), -EACCES);
	cr_expect_eq(cm_bind_port(&h, user, uid_id, UROCE_CTRL_CM_BIND, 1024), 0);
	uid_id = cm_id_of(&h, &user, 1000);
	cr_expect_eq(cm_bind_port(&h, user, uid_id, UROCE_CTRL_CM_BIND, 0), 0, "ephemeral");

	root_id = cm_id_of(&h, &root, 0);
	cr_expect_eq(cm_bind_port(&h, root, root_id, UROCE_CTRL_CM_BIND, 100), 0);
	host_fini(&h);
}
