/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_reg_mr of large memory that is mostly untouched, through the public API only.
 * Ceph's RDMA messenger registers about 1 GiB of fresh buffers in every process (issue
 * 45). lib/client shares registered memory with the daemon by copying it into a memfd
 * (doc/daemon.md, Memory registration) and leaves out the pages of private anonymous
 * mappings that are neither present nor swapped out: they read as zeros, as the memfd's
 * holes do. What must hold whatever is left out: the bytes are the same after the
 * registration as before, RDMA moves them, a private file mapping's untouched pages keep
 * the file's bytes, and a page that cannot be read still fails the registration with
 * EFAULT and changes nothing.
 *
 * Not tested here: a range of which part is swapped out (pagemap's bit 62, copied as a
 * present page is). The machines these tests run on have no swap to push a page to.
 *
 * One uroced per test on a net_null port (verbs_fixture.h); both QPs on its device,
 * connected through its own GID. With UROCE_VERBS_REFERENCE=1 the same tests run on
 * rdma-core + rxe, less what is uroce's own (the memfd's holes).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_fixture.h"

#define IPV4 "10.9.2.1"
#define GIB ((size_t)1 << 30)
#define ACC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static struct vfx_daemon dmn;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static size_t ps;

static void suite_init(void)
{
	struct ibv_device **list;
	char why[512];
	int n = 0;

	if (vfx_check_library(why, sizeof(why)) != 0)
		cr_assert_fail("WRONG LIBRARY: %s", why);
	if (vfx_daemon_start(&dmn, IPV4, NULL, why, sizeof(why)) != 0)
		cr_assert_fail("no uroced: %s", why);
	list = ibv_get_device_list(&n);
	cr_assert(list && n >= 1, "no device: %s", strerror(errno));
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	cr_assert_not_null(ctx, "ibv_open_device: %s", strerror(errno));
	pd = ibv_alloc_pd(ctx);
	cr_assert_not_null(pd, "ibv_alloc_pd: %s", strerror(errno));
	ps = (size_t)sysconf(_SC_PAGESIZE);
}

/* What a test left is the daemon's to free: it sees this process go. */
static void suite_fini(void)
{
	vfx_daemon_stop(&dmn);
}

TestSuite(reg_mr_share, .init = suite_init, .fini = suite_fini, .timeout = 120);

static const char zeros[65536];

static char *map_anon(size_t len, int prot)
{
	char *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	cr_assert_neq(p, MAP_FAILED, "mmap of %zu bytes: %s", len, strerror(errno));
	return p;
}

/* The byte the pattern puts at @p off of a page: never 0, so a zero page shows. */
static char pattern(size_t page, size_t off)
{
	return (char)(1 + (page * 131 + off * 7) % 251);
}

static void pattern_write(char *buf, size_t page)
{
	for (size_t i = 0; i < ps; i++)
		buf[page * ps + i] = pattern(page, i);
}

/* Criterion counts every assertion, a passing one too: one a page, not one a byte. */
static void pattern_check(const char *buf, size_t page)
{
	size_t i = 0;

	while (i < ps && buf[page * ps + i] == pattern(page, i))
		i++;
	cr_assert_eq(i, ps, "page %zu byte %zu: %d, want %d", page, i, buf[page * ps + i],
		     pattern(page, i));
}

static void zero_check(const char *buf, size_t page)
{
	size_t i = 0;

	while (i < ps && buf[page * ps + i] == 0)
		i++;
	cr_assert_eq(i, ps, "page %zu byte %zu: %d, want 0", page, i, buf[page * ps + i]);
}

/* Which pages of [p, p + len) are in memory (mincore's vector: bit 0; free it). For
 * lib/client's memfd: which have a page, not a hole. */
static unsigned char *resident(const char *p, size_t len)
{
	unsigned char *vec = malloc(len / ps);

	cr_assert_not_null(vec);
	cr_assert_eq(mincore((void *)p, len, vec), 0, "mincore: %s", strerror(errno));
	return vec;
}

static size_t resident_pages(const char *p, size_t len)
{
	unsigned char *vec = resident(p, len);
	size_t count = 0;

	for (size_t i = 0; i < len / ps; i++)
		count += vec[i] & 1;
	free(vec);
	return count;
}

/* Is [p, p + len) still mapped as the test mapped it: anonymous, no memfd over it? */
static bool maps_anon(const char *p, size_t len)
{
	uintptr_t lo = (uintptr_t)p, hi = lo + len;
	char line[512];
	bool anon = true;
	FILE *f = fopen("/proc/self/maps", "r");

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b, ino;

		if (sscanf(line, "%lx-%lx %*s %*x %*x:%*x %lu", &a, &b, &ino) == 3 && b > lo &&
		    a < hi && ino != 0)
			anon = false;
	}
	fclose(f);
	return anon;
}

/* ---------------------------------------------------------------- loopback */

/* Two RC QPs on one CQ, connected to each other through the device's own GID. */
struct loop {
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];
};

static void qp_connect(struct ibv_qp *qp, uint32_t dqpn)
{
	struct ibv_port_attr port;
	union ibv_gid gid;
	int gidx = vfx_gid_index();
	struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT, .port_num = 1,
				   .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						      IBV_ACCESS_REMOTE_READ};
	struct ibv_qp_attr rtr = {.qp_state = IBV_QPS_RTR, .dest_qp_num = dqpn,
				  .max_dest_rd_atomic = 1, .min_rnr_timer = 1};
	struct ibv_qp_attr rts = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				  .rnr_retry = 7, .max_rd_atomic = 1};

	cr_assert_eq(ibv_query_port(ctx, 1, &port), 0);
	cr_assert_eq(ibv_query_gid(ctx, 1, gidx, &gid), 0);
	rtr.path_mtu = port.active_mtu;
	rtr.ah_attr = (struct ibv_ah_attr){
		.is_global = 1,
		.grh = {.dgid = gid, .sgid_index = (uint8_t)gidx, .hop_limit = 64},
		.port_num = 1,
	};
	cr_assert_eq(ibv_modify_qp(qp, &init,
				   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_ACCESS_FLAGS),
		     0);
	cr_assert_eq(ibv_modify_qp(qp, &rtr,
				   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					   IBV_QP_MIN_RNR_TIMER),
		     0);
	cr_assert_eq(ibv_modify_qp(qp, &rts,
				   IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					   IBV_QP_MAX_QP_RD_ATOMIC),
		     0);
}

static void loop_make(struct loop *l)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
	};

	l->cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	cr_assert_not_null(l->cq, "ibv_create_cq: %s", strerror(errno));
	ia.send_cq = ia.recv_cq = l->cq;
	for (int i = 0; i < 2; i++) {
		l->qp[i] = ibv_create_qp(pd, &ia);
		cr_assert_not_null(l->qp[i], "ibv_create_qp: %s", strerror(errno));
	}
	qp_connect(l->qp[0], l->qp[1]->qp_num);
	qp_connect(l->qp[1], l->qp[0]->qp_num);
}

static void loop_free(struct loop *l)
{
	cr_assert_eq(ibv_destroy_qp(l->qp[0]), 0);
	cr_assert_eq(ibv_destroy_qp(l->qp[1]), 0);
	cr_assert_eq(ibv_destroy_cq(l->cq), 0);
}

/* One RDMA WRITE or READ from qp[0] between @p local (in @p lmr) and @p remote (in
 * @p rmr, through qp[1]), waited for. */
static void rdma(struct loop *l, enum ibv_wr_opcode op, struct ibv_mr *lmr, char *local,
		 struct ibv_mr *rmr, char *remote, uint32_t len)
{
	struct ibv_sge sge = {.addr = (uintptr_t)local, .length = len, .lkey = lmr->lkey};
	struct ibv_send_wr wr = {.wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = {.remote_addr = (uintptr_t)remote, .rkey = rmr->rkey}};
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc;
	int n = 0;

	cr_assert_eq(ibv_post_send(l->qp[0], &wr, &bad), 0, "ibv_post_send");
	for (int tries = 0; tries < 5000000 && n == 0; tries++) {
		n = ibv_poll_cq(l->cq, 1, &wc);
		if (n == 0)
			sched_yield();
	}
	cr_assert_eq(n, 1, "no completion");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "status %s", ibv_wc_status_str(wc.status));
}

/* ---------------------------------------------------------------- tests */

/* 1 GiB of fresh memory with a pattern in a few pages, among them both sides of a
 * 2 MiB mark (lib/client reads the pagemap 512 entries at a time) and the last page:
 * the registration keeps the pattern and the zeros, the memfd under the range holds a
 * page for the pattern's pages only (the zeros are holes: nothing was copied for them),
 * and RDMA moves the right bytes in and out of both kinds of page. */
Test(reg_mr_share, sparse_anon_1_gib)
{
	size_t npages = GIB / ps;
	const size_t data[] = {0, 3, 511, 512, 513, 100000, npages - 1};
	const size_t ndata = sizeof(data) / sizeof(data[0]);
	char *buf = map_anon(GIB, PROT_READ | PROT_WRITE), *local;
	struct ibv_mr *mr, *lmr;
	unsigned char *in;
	struct loop l;

	for (size_t i = 0; i < ndata; i++)
		pattern_write(buf, data[i]);
	mr = ibv_reg_mr(pd, buf, GIB, ACC);
	cr_assert_not_null(mr, "ibv_reg_mr of 1 GiB: %s", strerror(errno));
	/* The memfd has a page where there are data and a hole elsewhere. A hole reads as
	 * zeros, but reading one allocates its page (7 s for all on a test VM): all holes
	 * are not read, a sample is. */
	in = vfx_reference() ? NULL : resident(buf, GIB);
	for (size_t page = 0, i = 0; page < npages; page++) {
		bool is_data = i < ndata && data[i] == page;

		if (in && (in[page] & 1) != is_data)
			cr_assert_fail("page %zu: %s in the memfd", page,
				       is_data ? "data but a hole" : "no data but a page");
		if (is_data) {
			pattern_check(buf, page);
			i++;
		} else if (!in || page % 4093 == 0 || (page + 1) % 512 < 3) {
			zero_check(buf, page);
		}
	}
	free(in);

	local = map_anon(4 * ps, PROT_READ | PROT_WRITE);
	lmr = ibv_reg_mr(pd, local, 4 * ps, ACC);
	cr_assert_not_null(lmr, "ibv_reg_mr: %s", strerror(errno));
	loop_make(&l);
	/* READ pages 512 (data) and 514 (a hole until now) */
	rdma(&l, IBV_WR_RDMA_READ, lmr, local, mr, buf + 512 * ps, (uint32_t)ps);
	rdma(&l, IBV_WR_RDMA_READ, lmr, local + ps, mr, buf + 514 * ps, (uint32_t)ps);
	cr_assert_eq(memcmp(local, buf + 512 * ps, ps), 0, "RDMA READ of a copied page");
	cr_assert_eq(memcmp(local + ps, zeros, ps), 0, "RDMA READ of a page left out");
	pattern_check(buf, 512);
	/* WRITE page 100000's pattern into a never touched page and over page 3 */
	memcpy(local + 2 * ps, buf + 100000 * ps, ps);
	rdma(&l, IBV_WR_RDMA_WRITE, lmr, local + 2 * ps, mr, buf + 200000 * ps, (uint32_t)ps);
	rdma(&l, IBV_WR_RDMA_WRITE, lmr, local + 2 * ps, mr, buf + 3 * ps, (uint32_t)ps);
	cr_assert_eq(memcmp(buf + 200000 * ps, buf + 100000 * ps, ps), 0,
		     "RDMA WRITE into a page left out of the copy");
	cr_assert_eq(memcmp(buf + 3 * ps, buf + 100000 * ps, ps), 0,
		     "RDMA WRITE into a copied page");
	zero_check(buf, 199999);
	zero_check(buf, 200001);
	loop_free(&l);
	cr_assert_eq(ibv_dereg_mr(lmr), 0);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	cr_assert_eq(munmap(local, 4 * ps), 0);
	cr_assert_eq(munmap(buf, GIB), 0);
}

/* A file of known bytes, 1 MiB of it mapped MAP_PRIVATE and never touched: none of its
 * pages is present, yet each holds the file's bytes, not zeros. Between two anonymous
 * pieces of one registration, one touched and one not, to cross the boundaries. */
Test(reg_mr_share, private_file_between_anon)
{
	size_t flen = 256 * ps, alen = 64 * ps, len = alen + flen + alen;
	char path[] = "/tmp/uroce-reg-mr-share-XXXXXX";
	char *want = malloc(flen), *buf, *file;
	int fd = mkstemp(path);
	struct ibv_mr *mr;

	cr_assert_geq(fd, 0, "mkstemp: %s", strerror(errno));
	cr_assert_not_null(want);
	for (size_t i = 0; i < flen; i++)
		want[i] = pattern(i / ps + 1000, i % ps);
	cr_assert_eq(write(fd, want, flen), (ssize_t)flen);
	unlink(path);
	/* anon | file | anon, one range */
	buf = map_anon(len, PROT_READ | PROT_WRITE);
	file = mmap(buf + alen, flen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0);
	cr_assert_eq(file, buf + alen, "mmap of the file: %s", strerror(errno));
	close(fd);
	pattern_write(buf, alen / ps - 1); /* the page before the file */

	mr = ibv_reg_mr(pd, buf, len, ACC);
	cr_assert_not_null(mr, "ibv_reg_mr: %s", strerror(errno));
	pattern_check(buf, alen / ps - 1);
	for (size_t i = 0; i < flen; i += ps)
		cr_assert_eq(memcmp(file + i, want + i, ps), 0,
			     "the file's page %zu: not its bytes after the registration", i / ps);
	zero_check(buf, 0);
	zero_check(buf, (len / ps) - 1);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	cr_assert_eq(munmap(buf, len), 0);
	free(want);
}

/* An unmapped page anywhere in the range fails the registration with EFAULT, as Linux's
 * ibv_reg_mr does, whether the memory around it was touched or not, and the pages stay
 * the process's own: anonymous, with their bytes. lib/client finds the hole in
 * /proc/self/maps before it copies anything, so the untouched pages are still absent
 * (Linux pins, so faults in, the pages before the hole). */
Test(reg_mr_share, unmapped_page_efault)
{
	size_t len = 1024 * ps;
	char *buf = map_anon(len, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr;

	pattern_write(buf, 10);
	pattern_write(buf, 900);
	cr_assert_eq(munmap(buf + 600 * ps, ps), 0); /* a hole in the middle */
	errno = 0;
	mr = ibv_reg_mr(pd, buf, len, ACC);
	cr_assert_null(mr, "a range with an unmapped page registered");
	cr_assert_eq(errno, EFAULT, "errno %d (%s), want EFAULT", errno, strerror(errno));
	/* the hole at the end, past the last mapping */
	errno = 0;
	mr = ibv_reg_mr(pd, buf + 100 * ps, 501 * ps, ACC);
	cr_assert_null(mr, "a range ending in an unmapped page registered");
	cr_assert_eq(errno, EFAULT, "errno %d (%s), want EFAULT", errno, strerror(errno));

	cr_assert(maps_anon(buf, len), "the failed registration changed the mappings");
	pattern_check(buf, 10);
	pattern_check(buf, 900);
	if (!vfx_reference())
		cr_assert_eq(resident_pages(buf, 600 * ps), 1, "untouched pages became present");
	cr_assert_eq(munmap(buf, len), 0);
}

/* Anonymous memory the process cannot read (PROT_NONE) is not zeros to skip: the
 * registration fails with EFAULT, as Linux's does, though no page of it is present. */
Test(reg_mr_share, prot_none_efault)
{
	size_t len = 64 * ps;
	char *buf = map_anon(len, PROT_NONE);

	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, buf, len, ACC), "PROT_NONE memory registered");
	cr_assert_eq(errno, EFAULT, "errno %d (%s), want EFAULT", errno, strerror(errno));
	cr_assert(maps_anon(buf, len), "the failed registration changed the mappings");
	cr_assert_eq(munmap(buf, len), 0);
}

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102 /* Linux 6.13 */
#endif

/* A guard page (MADV_GUARD_INSTALL) in anonymous memory is not present either, but reading
 * it faults: the registration fails with EFAULT, as Linux's does (pinning it fails), and
 * the memory is left as it was. Skipped on kernels without guard pages. */
Test(reg_mr_share, guard_page_efault)
{
	size_t len = 64 * ps;
	char *buf = map_anon(len, PROT_READ | PROT_WRITE);

	if (madvise(buf + 32 * ps, ps, MADV_GUARD_INSTALL) != 0) {
		cr_assert_eq(errno, EINVAL, "madvise(MADV_GUARD_INSTALL): %s", strerror(errno));
		cr_assert_eq(munmap(buf, len), 0);
		cr_skip_test("no guard pages in this kernel");
	}
	pattern_write(buf, 1);
	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, buf, len, ACC), "memory with a guard page registered");
	cr_assert_eq(errno, EFAULT, "errno %d (%s), want EFAULT", errno, strerror(errno));
	cr_assert(maps_anon(buf, len), "the failed registration changed the mappings");
	pattern_check(buf, 1);
	cr_assert_eq(munmap(buf, len), 0);
}
