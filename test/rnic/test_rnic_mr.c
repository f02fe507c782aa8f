/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory registration: lengths that wrap, the daemon's mappings and who is charged for
 * them, a client's own memory file, and importing PDs and MRs.
 * One file of test_rnic (rnic_host.h).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rnic_host.h"

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
int reg_mr_of(struct host *h, struct uroce_rnic_client *c, uint64_t len, uint32_t *rkey)
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
