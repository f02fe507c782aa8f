/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fork(): a child gets private copies of registered memory (heap, stack, mmap, huge
 * pages, after its context closed), cannot use its parent's objects, and runs a device of
 * its own.
 * One file of test_verbs_api (verbs_api_fixture.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_api_fixture.h"

/* ---------------------------------------------------------------- fork */

static const char *fork_child_str(int status)
{
	static const char *const names[] = {"ok", "snapshot differs", "inherited object usable",
					    "cannot open own device", "own ping-pong failed"};

	if (!WIFEXITED(status))
		return "killed by a signal";
	if (WEXITSTATUS(status) < (int)(sizeof(names) / sizeof(names[0])))
		return names[WEXITSTATUS(status)];
	return "unexpected exit code";
}

/* The child's own device: a PD, a CQ, two RC QPs connected through the device's GID and
 * 10 SENDs with their data checked. Plain checks: see fork_child_result. */
int child_pingpong(void)
{
	static uint8_t buf[2][512];
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *c;
	struct ibv_pd *cpd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *q[2];
	int i, k;

	if (!list || !list[0])
		return FC_OWN_DEVICE;
	c = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!c)
		return FC_OWN_DEVICE;
	cpd = ibv_alloc_pd(c);
	cq = cpd ? ibv_create_cq(c, 64, NULL, NULL, 0) : NULL;
	mr = cq ? ibv_reg_mr(cpd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr)
		return FC_OWN_DEVICE;
	for (i = 0; i < 2; i++) {
		struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					      .cap = {.max_send_wr = 16, .max_recv_wr = 16,
						      .max_send_sge = 1, .max_recv_sge = 1}};

		q[i] = ibv_create_qp(cpd, &ia);
		if (!q[i])
			return FC_OWN_DEVICE;
	}
	for (i = 0; i < 2; i++) {
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};

		if (ibv_modify_qp(q[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						    IBV_QP_ACCESS_FLAGS))
			return FC_OWN_DEVICE;
		a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTR,
					 .path_mtu = pattr.active_mtu,
					 .dest_qp_num = q[1 - i]->qp_num,
					 .max_dest_rd_atomic = 1,
					 .min_rnr_timer = 12,
					 .ah_attr = {.is_global = 1,
						     .port_num = 1,
						     .grh = {.dgid = gid,
							     .sgid_index = (uint8_t)gidx,
							     .hop_limit = 64}}};
		if (ibv_modify_qp(q[i], &a,
				  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					  IBV_QP_MIN_RNR_TIMER))
			return FC_OWN_DEVICE;
		a = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
					 .rnr_retry = 7, .max_rd_atomic = 1};
		if (ibv_modify_qp(q[i], &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
						    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
						    IBV_QP_MAX_QP_RD_ATOMIC))
			return FC_OWN_DEVICE;
	}
	for (k = 0; k < 10; k++) {
		struct ibv_sge rs = {(uintptr_t)buf[1], sizeof(buf[1]), mr->lkey};
		struct ibv_sge ss = {(uintptr_t)buf[0], sizeof(buf[0]), mr->lkey};
		struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = &rs, .num_sge = 1}, *rbad;
		struct ibv_send_wr swr = {.wr_id = 2, .sg_list = &ss, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED},
				   *sbad;
		struct ibv_wc wc;
		uint64_t t0 = now_ms();
		int got = 0;

		fill(buf[0], sizeof(buf[0]), (uint32_t)k);
		memset(buf[1], 0, sizeof(buf[1]));
		if (ibv_post_recv(q[1], &rwr, &rbad) || ibv_post_send(q[0], &swr, &sbad))
			return FC_OWN_PINGPONG;
		while (got < 2 && now_ms() - t0 < WAIT_MS) {
			int n = ibv_poll_cq(cq, 1, &wc);

			if (n < 0 || (n == 1 && wc.status != IBV_WC_SUCCESS))
				return FC_OWN_PINGPONG;
			got += n;
		}
		if (got < 2 || memcmp(buf[0], buf[1], sizeof(buf[0])) != 0)
			return FC_OWN_PINGPONG;
	}
	for (i = 0; i < 2; i++)
		ibv_destroy_qp(q[i]);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(cpd);
	ibv_close_device(c);
	return FC_OK;
}

/*
 * fork() after ibv_reg_mr, as Linux 5.13+ behaves (IBV_FORK_UNNEEDED): @p mem is two pages
 * (or more) of some kind of memory; 1 KiB at its start is registered. The child reads the
 * registered range and its page neighbours as they were at the fork and writes all of
 * them; the parent's bytes never change. The child cannot use the parent's objects (EIO)
 * and runs a ping-pong on a device of its own. After the child has gone, the parent's
 * RDMA WRITE and READ to the region still land in the parent's pages.
 */
static void fork_check(uint8_t *mem)
{
	const size_t rlen = 1024;
	uint8_t *reg = mem, *beside = mem + 2048, *next_page = mem + 4096 + 16;
	uint8_t want[1024];
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct ibv_mr *mr;
	struct mbuf s;
	struct pair p;
	pid_t pid;
	int st;

	cr_assert_eq(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
	fill(want, rlen, 31);
	memcpy(reg, want, rlen);
	strcpy((char *)beside, "parent-beside");
	strcpy((char *)next_page, "parent-next-page");
	mr = ibv_reg_mr(pd, reg, rlen, ACC_ALL);
	cr_assert_not_null(mr, "ibv_reg_mr: %s", strerror(errno));
	live_add((void **)live_mrs, mr);
	pair_make(&p, IBV_QPT_RC, NULL, 0);
	mb_make(&s, rlen);

	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int rc = FC_OK;

		if (memcmp(reg, want, rlen) != 0 || strcmp((char *)beside, "parent-beside") ||
		    strcmp((char *)next_page, "parent-next-page"))
			_exit(FC_SNAPSHOT);
		memset(reg, 0xee, rlen);
		strcpy((char *)beside, "CHILD-WROTE");
		strcpy((char *)next_page, "CHILD-WROTE");
		sge = (struct ibv_sge){(uintptr_t)s.p, (uint32_t)rlen, s.mr->lkey};
		wr = (struct ibv_send_wr){.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND};
		errno = 0;
		if (ibv_alloc_pd(ctx) != NULL || errno != EIO ||
		    ibv_post_send(p.qp[0], &wr, &bad) != EIO || ibv_poll_cq(p.cq[0], 1, &wc) >= 0 ||
		    ibv_dereg_mr(mr) != EIO)
			_exit(FC_INHERITED);
		rc = child_pingpong();
		_exit(rc);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert_eq(memcmp(reg, want, rlen), 0, "the child's writes reached the parent");
	cr_assert_str_eq((char *)beside, "parent-beside", "the child's writes reached the parent");
	cr_assert_str_eq((char *)next_page, "parent-next-page");
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == FC_OK, "child: %s (status 0x%x)",
		  fork_child_str(st), st);

	/* The parent's registration is whole: RC WRITE (complete = placed) and READ. */
	fill(s.p, rlen, 32);
	sge = sge_of(&s, 0, rlen);
	wr = (struct ibv_send_wr){.wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = {.remote_addr = (uintptr_t)reg, .rkey = mr->rkey}};
	post_send_ok(p.qp[0], &wr);
	expect_ok(p.cq[0], 1, IBV_WC_RDMA_WRITE, NULL);
	cr_assert_eq(memcmp(reg, s.p, rlen), 0, "RDMA WRITE after the fork");
	fill(reg, rlen, 33);
	memset(s.p, 0, rlen);
	wr.wr_id = 2;
	wr.opcode = IBV_WR_RDMA_READ;
	post_send_ok(p.qp[0], &wr);
	expect_ok(p.cq[0], 2, IBV_WC_RDMA_READ, NULL);
	cr_assert_eq(memcmp(reg, s.p, rlen), 0, "RDMA READ after the fork");

	mb_free(&s);
	pair_free(&p);
	live_del((void **)live_mrs, mr);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
}

Test(verbs, fork_private_copy_heap)
{
	uint8_t *m = aligned_alloc(4096, 2 * 4096);

	cr_assert_not_null(m);
	fork_check(m);
	free(m);
}

Test(verbs, fork_private_copy_stack)
{
	uint8_t m[2 * 4096] __attribute__((aligned(4096)));

	fork_check(m);
}

Test(verbs, fork_private_copy_mmap)
{
	uint8_t *m = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);

	cr_assert_neq(m, MAP_FAILED);
	fork_check(m);
	cr_assert_eq(munmap(m, 2 * 4096), 0);
}

/*
 * Free heap chunks on registered pages, as a program's heap has beside its buffers: the
 * child's first small malloc() takes one of them (glibc's per-size cache gives back the
 * chunk freed last). Nothing the fork does in the child before its copy is made may
 * write there, or the parent's heap changes under it: the child handler once listed its
 * mappings in a realloc()'d array, which cleared a free chunk's key and rewrote the
 * parent's free lists (pyverbs_fork's children then aborted on a corrupted heap). The
 * parent's pages must be, byte for byte, what they were before the fork.
 */
#define FREE_CLASSES 64 /* glibc's cached size classes: 24 to 1032 bytes */

Test(verbs, fork_leaves_free_heap_chunks_alone)
{
	size_t span = 0, i;
	uint8_t *chunk[FREE_CLASSES], *guard, *snap, *lo, *hi;
	struct ibv_mr *mr;
	pid_t pid;
	int st;

#if defined(__SANITIZE_ADDRESS__)
	cr_skip_test("ASan's allocator keeps no free lists in the chunks");
#endif
	/* One chunk of each cached size, back to back, and one more so that none of them
	 * merges into the top of the heap when freed. */
	for (i = 0; i < FREE_CLASSES; i++) {
		chunk[i] = malloc(16 * i + 24);
		cr_assert_not_null(chunk[i]);
	}
	guard = malloc(16);
	cr_assert_not_null(guard);
	lo = chunk[0];
	hi = chunk[0];
	for (i = 0; i < FREE_CLASSES; i++) {
		if (chunk[i] < lo)
			lo = chunk[i];
		if (chunk[i] + 16 * i + 24 > hi)
			hi = chunk[i] + 16 * i + 24;
	}
	lo = (uint8_t *)((uintptr_t)lo & ~(uintptr_t)4095);
	hi = (uint8_t *)(((uintptr_t)hi + 4095) & ~(uintptr_t)4095);
	span = (size_t)(hi - lo);
	snap = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(snap, MAP_FAILED);
	for (i = 0; i < FREE_CLASSES; i++)
		free(chunk[i]);
	mr = ibv_reg_mr(pd, lo, span, IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(mr, "ibv_reg_mr: %s", strerror(errno));
	live_add((void **)live_mrs, mr);
	memcpy(snap, lo, span);

	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: status 0x%x", st);
	for (i = 0; i < span && lo[i] == snap[i]; i++)
		;
	cr_assert_eq(i, span, "the fork changed the parent's heap at +%zu of %zu registered "
		     "bytes (0x%02x, was 0x%02x)", i, span, lo[i], snap[i]);
	live_del((void **)live_mrs, mr);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	munmap(snap, span);
	free(guard);
}

#define HUGE_2M (2u << 20)

Test(verbs, fork_private_copy_hugepage)
{
	long before = nr_hugepages(-1);
	uint8_t *m;

	/* One 2 MiB page of our own, given back by the teardown (the daemon's rings may
	 * take reserved hugepages too, so reserve a few). */
	if (before < 0 || nr_hugepages(before + 4) < 0)
		cr_skip_test("cannot reserve 2 MiB hugepages here");
	hugepages_before = before;
	m = mmap(NULL, HUGE_2M, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
		 -1, 0);
	if (m == MAP_FAILED)
		cr_skip_test("no free 2 MiB hugepage: %s", strerror(errno));
	fork_check(m);
	cr_assert_eq(munmap(m, HUGE_2M), 0);
}

/* Pages a context moved stay the process's shared pages after the context is closed: a
 * child forked then still gets private copies of them (its writes never reach the
 * parent), as it does of a live context's. */
Test(verbs, fork_private_copy_after_its_context_closed)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	uint8_t *m = aligned_alloc(4096, 2 * 4096);
	struct ibv_context *ctx2;
	struct ibv_pd *pd2;
	struct ibv_mr *mr;
	pid_t pid;
	int st;

	cr_assert_not_null(list);
	cr_assert_not_null(m);
	ctx2 = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	cr_assert_not_null(ctx2);
	pd2 = ibv_alloc_pd(ctx2);
	cr_assert_not_null(pd2);
	mr = ibv_reg_mr(pd2, m, 2 * 4096, ACC_ALL);
	cr_assert_not_null(mr, "ibv_reg_mr: %s", strerror(errno));
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	cr_assert_eq(ibv_dealloc_pd(pd2), 0);
	cr_assert_eq(ibv_close_device(ctx2), 0);
	strcpy((char *)m, "parent");
	strcpy((char *)m + 4096 + 8, "parent-too");

	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		if (strcmp((char *)m, "parent") || strcmp((char *)m + 4096 + 8, "parent-too"))
			_exit(FC_SNAPSHOT);
		strcpy((char *)m, "CHILD-WROTE");
		strcpy((char *)m + 4096 + 8, "CHILD-WROTE");
		_exit(FC_OK);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == FC_OK, "child: %s (status 0x%x)",
		  fork_child_str(st), st);
	cr_assert_str_eq((char *)m, "parent", "the child's writes reached the parent");
	cr_assert_str_eq((char *)m + 4096 + 8, "parent-too");
	free(m);
}
