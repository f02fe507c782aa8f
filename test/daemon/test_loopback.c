/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One uroced, both ends on it: every operation through the client library, the shared
 * rings and the daemon's loopback path, with the data checked; verbs errors; memory
 * registration in place; completion channels; application death; hostile messages.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon_fixture.h"
#include "uroce_ctrl.h"

static struct fx_daemon d;

static void suite_init(void)
{
	if (fx_daemon_start(&d, "10.9.0.1", NULL) != 0)
		cr_skip_test("no uroced");
}

static void suite_fini(void)
{
	fx_daemon_stop(&d);
}

TestSuite(loopback, .init = suite_init, .fini = suite_fini, .timeout = 60);

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 2654435761u + seed) >> 13);
}

struct buf {
	uint8_t *p;
	size_t len;
	struct uroce_client_mr *mr;
};

static void buf_make(struct fx_pair *pr, struct buf *b, size_t len)
{
	b->len = len;
	b->p = malloc(len ? len : 1);
	cr_assert_not_null(b->p);
	memset(b->p, 0, len ? len : 1);
	b->mr = uroce_client_reg_mr(pr->pd, b->p, len ? len : 1,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	cr_assert_not_null(b->mr, "reg_mr: %s", strerror(errno));
}

static void buf_free(struct buf *b)
{
	cr_assert_eq(uroce_client_dereg_mr(b->mr), 0);
	free(b->p);
}

static void post_recv(struct uroce_client_qp *qp, struct buf *b, uint64_t id)
{
	struct ibv_sge sge = {.addr = (uintptr_t)b->p, .length = (uint32_t)b->len,
			      .lkey = b->mr->ibv.lkey};
	struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1}, *bad;

	cr_assert_eq(uroce_client_post_recv(qp, &wr, &bad), 0);
}

static void post_send(struct uroce_client_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int rc = uroce_client_post_send(qp, wr, &bad);

	cr_assert_eq(rc, 0, "post_send: %s", strerror(rc));
}

static void expect(struct uroce_client_cq *cq, enum ibv_wc_opcode op, uint64_t id,
		   uint32_t byte_len)
{
	struct ibv_wc wc;

	cr_assert_eq(fx_wait(cq, &wc), 0, "no completion for wr %llu", (unsigned long long)id);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "wr %llu: %s", (unsigned long long)wc.wr_id,
		     uroce_client_wc_status_str(wc.status));
	cr_assert_eq(wc.opcode, op, "opcode %d, want %d", wc.opcode, op);
	cr_assert_eq(wc.wr_id, id);
	if (op & IBV_WC_RECV)
		cr_assert_eq(wc.byte_len, byte_len, "byte_len %u want %u", wc.byte_len, byte_len);
}

static void send_sizes(enum ibv_qp_type type, enum ibv_mtu mtu)
{
	static const size_t sizes[] = {0, 1, 63, 1024, 1025, 4096, 65536, 1 << 20};
	struct fx_pair pr;
	size_t i;

	cr_assert_eq(fx_pair_create(&pr, d.sock, type, mtu), 0, "pair: %s", strerror(errno));
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		struct buf src, dst;
		struct ibv_sge sge;
		struct ibv_send_wr wr = {.wr_id = 100 + i,
					 .sg_list = &sge,
					 .num_sge = 1,
					 .opcode = IBV_WR_SEND_WITH_IMM,
					 .imm_data = htonl(0xabc0 + (uint32_t)i),
					 .send_flags = IBV_SEND_SIGNALED};
		struct ibv_wc wc;

		buf_make(&pr, &src, n);
		buf_make(&pr, &dst, n);
		fill(src.p, n, (uint32_t)i);
		post_recv(pr.qp[1], &dst, 200 + i);
		sge = (struct ibv_sge){.addr = (uintptr_t)src.p, .length = (uint32_t)n,
				       .lkey = src.mr->ibv.lkey};
		post_send(pr.qp[0], &wr);
		expect(pr.cq[0], IBV_WC_SEND, 100 + i, 0);
		cr_assert_eq(fx_wait(pr.cq[1], &wc), 0);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s",
			     uroce_client_wc_status_str(wc.status));
		cr_assert_eq(wc.opcode, IBV_WC_RECV);
		cr_assert_eq(wc.byte_len, n);
		cr_assert(wc.wc_flags & IBV_WC_WITH_IMM);
		cr_assert_eq(ntohl(wc.imm_data), 0xabc0 + (uint32_t)i);
		cr_assert_eq(memcmp(src.p, dst.p, n), 0, "payload of %zu bytes differs", n);
		buf_free(&src);
		buf_free(&dst);
	}
	fx_pair_destroy(&pr);
}

Test(loopback, rc_send_recv_sizes_mtu1024)
{
	send_sizes(IBV_QPT_RC, IBV_MTU_1024);
}

Test(loopback, uc_send_recv_sizes)
{
	send_sizes(IBV_QPT_UC, IBV_MTU_1024);
}

Test(loopback, rc_write_read_atomics)
{
	struct fx_pair pr;
	struct buf a, b, r;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	size_t n = 3 << 20;
	uint64_t *t;

	cr_assert_eq(fx_pair_create(&pr, d.sock, IBV_QPT_RC, IBV_MTU_1024), 0);
	buf_make(&pr, &a, n);
	buf_make(&pr, &b, n);
	buf_make(&pr, &r, 64);
	fill(a.p, n, 7);

	/* WRITE: lands in b's own pages (the pointer the test holds). */
	sge = (struct ibv_sge){
		.addr = (uintptr_t)a.p, .length = (uint32_t)n, .lkey = a.mr->ibv.lkey};
	wr = (struct ibv_send_wr){
		.wr_id = 1,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {.remote_addr = (uintptr_t)b.p, .rkey = b.mr->ibv.rkey}};
	post_send(pr.qp[0], &wr);
	expect(pr.cq[0], IBV_WC_RDMA_WRITE, 1, 0);
	cr_assert_eq(memcmp(a.p, b.p, n), 0, "RDMA WRITE data");

	/* READ back into a after clearing it. */
	memset(a.p, 0, n);
	wr.wr_id = 2;
	wr.opcode = IBV_WR_RDMA_READ;
	post_send(pr.qp[0], &wr);
	expect(pr.cq[0], IBV_WC_RDMA_READ, 2, 0);
	cr_assert_eq(memcmp(a.p, b.p, n), 0, "RDMA READ data");

	/* Atomics on b's first word. */
	t = (uint64_t *)(void *)b.p;
	*t = 40;
	sge = (struct ibv_sge){.addr = (uintptr_t)r.p, .length = 8, .lkey = r.mr->ibv.lkey};
	wr = (struct ibv_send_wr){.wr_id = 3,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.atomic = {.remote_addr = (uintptr_t)b.p,
						.rkey = b.mr->ibv.rkey,
						.compare_add = 2}};
	post_send(pr.qp[0], &wr);
	expect(pr.cq[0], IBV_WC_FETCH_ADD, 3, 0);
	cr_assert_eq(*(uint64_t *)(void *)r.p, 40);
	cr_assert_eq(*t, 42);
	wr.wr_id = 4;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 42;
	wr.wr.atomic.swap = 7;
	post_send(pr.qp[0], &wr);
	expect(pr.cq[0], IBV_WC_COMP_SWAP, 4, 0);
	cr_assert_eq(*(uint64_t *)(void *)r.p, 42);
	cr_assert_eq(*t, 7);

	/* WRITE with immediate consumes a receive. */
	post_recv(pr.qp[1], &r, 9);
	sge = (struct ibv_sge){.addr = (uintptr_t)a.p, .length = 5000, .lkey = a.mr->ibv.lkey};
	wr = (struct ibv_send_wr){
		.wr_id = 5,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.imm_data = htonl(77),
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {.remote_addr = (uintptr_t)b.p + 100, .rkey = b.mr->ibv.rkey}};
	post_send(pr.qp[0], &wr);
	expect(pr.cq[0], IBV_WC_RDMA_WRITE, 5, 0);
	expect(pr.cq[1], IBV_WC_RECV_RDMA_WITH_IMM, 9, 5000);
	cr_assert_eq(memcmp(a.p, b.p + 100, 5000), 0);

	buf_free(&a);
	buf_free(&b);
	buf_free(&r);
	fx_pair_destroy(&pr);
}

Test(loopback, verbs_errors)
{
	struct fx_pair pr;
	struct buf a;
	struct ibv_sge sge[9];
	struct ibv_send_wr wr, *bad = NULL;
	char x[64];
	int i, rc;

	cr_assert_eq(fx_pair_create(&pr, d.sock, IBV_QPT_RC, IBV_MTU_1024), 0);
	/* reg_mr: empty range, remote write without local write */
	cr_assert_null(uroce_client_reg_mr(pr.pd, x, 0, IBV_ACCESS_LOCAL_WRITE));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(uroce_client_reg_mr(pr.pd, x, sizeof(x), IBV_ACCESS_REMOTE_WRITE));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(uroce_client_reg_mr(pr.pd, (void *)8, 4096, IBV_ACCESS_LOCAL_WRITE));
	cr_assert_eq(errno, EFAULT);
	buf_make(&pr, &a, 4096);
	/* too many SGEs: EINVAL and bad_wr names the WR */
	for (i = 0; i < 9; i++)
		sge[i] = (struct ibv_sge){
			.addr = (uintptr_t)a.p, .length = 8, .lkey = a.mr->ibv.lkey};
	wr = (struct ibv_send_wr){.wr_id = 1, .sg_list = sge, .num_sge = 9, .opcode = IBV_WR_SEND};
	cr_assert_eq(uroce_client_post_send(pr.qp[0], &wr, &bad), EINVAL);
	cr_assert_eq(bad, &wr);
	/* misaligned atomic */
	wr = (struct ibv_send_wr){
		.wr_id = 2,
		.sg_list = sge,
		.num_sge = 1,
		.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		.wr.atomic = {.remote_addr = (uintptr_t)a.p + 4, .rkey = a.mr->ibv.rkey}};
	cr_assert_eq(uroce_client_post_send(pr.qp[0], &wr, &bad), EINVAL);
	/* a full send queue: exactly max_send_wr outstanding, then ENOMEM. The peer has
	 * no receives, so RNR keeps every SEND outstanding. */
	wr = (struct ibv_send_wr){.wr_id = 3, .sg_list = sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED};
	for (i = 0; i < 64; i++) {
		rc = uroce_client_post_send(pr.qp[0], &wr, &bad);
		cr_assert_eq(rc, 0, "post %d: %s", i, strerror(rc));
	}
	cr_assert_eq(uroce_client_post_send(pr.qp[0], &wr, &bad), ENOMEM);
	/* AH without a GRH: RoCE has no LIDs */
	{
		struct ibv_ah_attr ah = {.dlid = 1, .port_num = 1};

		cr_assert_null(uroce_client_create_ah(pr.pd, &ah));
		cr_assert_eq(errno, EINVAL);
	}
	/* a PD in use cannot go */
	cr_assert_eq(uroce_client_dealloc_pd(pr.pd), EBUSY);
	buf_free(&a);
	fx_pair_destroy(&pr);
}

Test(loopback, mr_shares_pages_in_place)
{
	struct fx_pair pr;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), i;
	uint8_t *m, *dst;
	struct uroce_client_mr *mr1, *mr2, *mr3, *dmr;
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	cr_assert_eq(fx_pair_create(&pr, d.sock, IBV_QPT_RC, IBV_MTU_1024), 0);
	m = mmap(NULL, 8 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(m, MAP_FAILED);
	fill(m, 8 * ps, 3);
	/* An unaligned range, then one overlapping it, then one inside: contents kept. */
	mr1 = uroce_client_reg_mr(pr.pd, m + 100, 2 * ps, IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(mr1);
	mr2 = uroce_client_reg_mr(pr.pd, m + ps, 4 * ps, IBV_ACCESS_LOCAL_WRITE |
					     IBV_ACCESS_REMOTE_WRITE);
	cr_assert_not_null(mr2);
	mr3 = uroce_client_reg_mr(pr.pd, m + ps + 8, 16, IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(mr3);
	{
		uint8_t *ref = malloc(8 * ps);

		fill(ref, 8 * ps, 3);
		cr_assert_eq(memcmp(ref, m, 8 * ps), 0, "registration changed the contents");
		free(ref);
	}
	/* The daemon writes through mr2 into the application's own pointer. */
	dst = malloc(ps);
	fill(dst, ps, 99);
	dmr = uroce_client_reg_mr(pr.pd, dst, ps, IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(dmr);
	sge = (struct ibv_sge){
		.addr = (uintptr_t)dst, .length = (uint32_t)ps, .lkey = dmr->ibv.lkey};
	wr = (struct ibv_send_wr){
		.wr_id = 1,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {.remote_addr = (uintptr_t)m + 2 * ps + 1, .rkey = mr2->ibv.rkey}};
	post_send(pr.qp[0], &wr);
	expect(pr.cq[0], IBV_WC_RDMA_WRITE, 1, 0);
	cr_assert_eq(memcmp(m + 2 * ps + 1, dst, ps), 0);
	/* Unmap, map fresh pages at the same place, register again: the new pages are the
	 * ones the daemon reaches (a stale share would write the old ones). */
	cr_assert_eq(uroce_client_dereg_mr(mr1), 0);
	cr_assert_eq(uroce_client_dereg_mr(mr2), 0);
	cr_assert_eq(uroce_client_dereg_mr(mr3), 0);
	cr_assert_eq(munmap(m, 8 * ps), 0);
	cr_assert_eq(mmap(m, 8 * ps, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
		     m);
	memset(m, 0, 8 * ps);
	mr2 = uroce_client_reg_mr(pr.pd, m, 8 * ps,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	cr_assert_not_null(mr2);
	wr.wr_id = 2;
	wr.wr.rdma.rkey = mr2->ibv.rkey;
	post_send(pr.qp[0], &wr);
	expect(pr.cq[0], IBV_WC_RDMA_WRITE, 2, 0);
	cr_assert_eq(memcmp(m + 2 * ps + 1, dst, ps), 0, "write went to stale pages");
	for (i = 0; i < 2 * ps; i++)
		cr_assert_eq(m[i], 0);
	cr_assert_eq(uroce_client_dereg_mr(mr2), 0);
	cr_assert_eq(uroce_client_dereg_mr(dmr), 0);
	munmap(m, 8 * ps);
	free(dst);
	fx_pair_destroy(&pr);
}

Test(loopback, completion_channel)
{
	struct fx_pair pr;
	struct uroce_client_channel *ch;
	struct uroce_client_cq *cq, *ev_cq;
	struct ibv_qp_init_attr ia = {.qp_type = IBV_QPT_UD,
				      .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
					      .max_recv_sge = 1}};
	struct pollfd pfd;
	struct ibv_wc wc;

	cr_assert_eq(fx_pair_create(&pr, d.sock, IBV_QPT_RC, IBV_MTU_1024), 0);
	ch = uroce_client_create_channel(pr.ctx);
	cr_assert_not_null(ch);
	cq = uroce_client_create_cq(pr.ctx, 16, ch, 0);
	cr_assert_not_null(cq);
	(void)ia;
	/* Nothing armed: nothing to read. */
	pfd = (struct pollfd){.fd = ch->ibv.fd, .events = POLLIN};
	cr_assert_eq(poll(&pfd, 1, 50), 0);
	cr_assert_eq(uroce_client_req_notify_cq(cq, 0), 0);
	/* A QP using this CQ for receives: the SEND's receive completion wakes us. */
	{
		struct uroce_client_qp *q2;
		struct ibv_qp_init_attr a2 = {.qp_type = IBV_QPT_RC,
					      .send_cq = uroce_client_cq_ibv(pr.cq[1]),
					      .recv_cq = uroce_client_cq_ibv(cq),
					      .cap = {.max_send_wr = 8,
						      .max_recv_wr = 8,
						      .max_send_sge = 1,
						      .max_recv_sge = 1}};

		q2 = uroce_client_create_qp(pr.pd, &a2);
		cr_assert_not_null(q2);
		cr_assert_eq(uroce_client_destroy_channel(ch), EBUSY);
		uroce_client_destroy_qp(q2);
	}
	/* The simplest producer: a flush completion. Move pr.qp[1] to ERR with a posted
	 * receive on a QP whose recv CQ is ours. */
	{
		struct uroce_client_qp *q3;
		struct ibv_qp_init_attr a3 = {.qp_type = IBV_QPT_UD,
					      .send_cq = uroce_client_cq_ibv(cq),
					      .recv_cq = uroce_client_cq_ibv(cq),
					      .cap = {.max_send_wr = 8,
						      .max_recv_wr = 8,
						      .max_send_sge = 1,
						      .max_recv_sge = 1}};
		struct ibv_qp_attr at = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 1};
		struct buf b;

		q3 = uroce_client_create_qp(pr.pd, &a3);
		cr_assert_not_null(q3);
		cr_assert_eq(uroce_client_modify_qp(q3, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
							     IBV_QP_PORT | IBV_QP_QKEY), 0);
		buf_make(&pr, &b, 64);
		post_recv(q3, &b, 55);
		at.qp_state = IBV_QPS_ERR;
		cr_assert_eq(uroce_client_modify_qp(q3, &at, IBV_QP_STATE), 0);
		cr_assert_eq(poll(&pfd, 1, 5000), 1, "no event on the channel");
		cr_assert_eq(uroce_client_get_cq_event(ch, &ev_cq), 0);
		cr_assert_eq(ev_cq, cq);
		uroce_client_ack_cq_events(ev_cq, 1);
		cr_assert_eq(fx_wait(cq, &wc), 0);
		cr_assert_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
		cr_assert_eq(wc.wr_id, 55);
		/* Not armed again: no second event. */
		cr_assert_eq(poll(&pfd, 1, 50), 0);
		uroce_client_destroy_qp(q3);
		buf_free(&b);
	}
	cr_assert_eq(uroce_client_destroy_cq(cq), 0);
	cr_assert_eq(uroce_client_destroy_channel(ch), 0);
	fx_pair_destroy(&pr);
}

Test(loopback, ud_send_recv)
{
	struct fx_pair pr;
	struct uroce_client_ah *ah;
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};
	struct buf s, r;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct ibv_wc wc;

	cr_assert_eq(fx_pair_create(&pr, d.sock, IBV_QPT_UD, IBV_MTU_1024), 0);
	cr_assert_eq(uroce_client_query_gid(pr.ctx, 1, 1, &aa.grh.dgid), 0);
	aa.grh.sgid_index = 1;
	aa.grh.hop_limit = 64;
	ah = uroce_client_create_ah(pr.pd, &aa);
	cr_assert_not_null(ah, "create_ah: %s", strerror(errno));
	buf_make(&pr, &s, 1000);
	buf_make(&pr, &r, 1040);
	fill(s.p, 1000, 5);
	post_recv(pr.qp[1], &r, 8);
	sge = (struct ibv_sge){.addr = (uintptr_t)s.p, .length = 1000, .lkey = s.mr->ibv.lkey};
	wr = (struct ibv_send_wr){.wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.ud = {.ah = &ah->ibv,
					    .remote_qpn = uroce_client_qp_ibv(pr.qp[1])->qp_num,
					    .remote_qkey = 0x11111111}};
	post_send(pr.qp[0], &wr);
	expect(pr.cq[0], IBV_WC_SEND, 7, 0);
	cr_assert_eq(fx_wait(pr.cq[1], &wc), 0);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.byte_len, 1040);
	cr_assert(wc.wc_flags & IBV_WC_GRH);
	cr_assert_eq(wc.src_qp, uroce_client_qp_ibv(pr.qp[0])->qp_num);
	cr_assert_eq(memcmp(r.p + 40, s.p, 1000), 0);
	cr_assert_eq(uroce_client_destroy_ah(ah), 0);
	buf_free(&s);
	buf_free(&r);
	fx_pair_destroy(&pr);
}

/* A child that builds objects and dies with SIGKILL: the daemon frees all of it. */
Test(loopback, application_death_leaks_nothing)
{
	struct uroce_client_ctx *ctx = uroce_client_open(d.sock);
	uint64_t qps0, mrs0, maps0, cqs0, pds0, mws0;
	int pipefd[2], status, i;
	pid_t pid;
	char c;

	cr_assert_not_null(ctx);
	qps0 = fx_stat(ctx, "objects.qp");
	mrs0 = fx_stat(ctx, "objects.mr");
	cqs0 = fx_stat(ctx, "objects.cq");
	pds0 = fx_stat(ctx, "objects.pd");
	mws0 = fx_stat(ctx, "objects.mw");
	maps0 = fx_stat(ctx, "mappings");
	cr_assert_neq(maps0, UINT64_MAX);
	cr_assert_eq(pipe(pipefd), 0);
	pid = fork();
	if (pid == 0) {
		struct fx_pair pr;
		static uint8_t mem[1 << 20];
		struct uroce_client_mr *mr;
		struct uroce_client_mw *mw1, *mw2;
		struct ibv_mw_bind b = {.wr_id = 1, .send_flags = IBV_SEND_SIGNALED};
		struct ibv_wc wc;

		if (fx_pair_create(&pr, d.sock, IBV_QPT_RC, IBV_MTU_1024) != 0)
			_exit(1);
		mr = uroce_client_reg_mr(pr.pd, mem, sizeof(mem),
					 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
		if (!mr)
			_exit(2);
		/* Windows too, one of them bound to the MR: it dies bound. */
		mw1 = uroce_client_alloc_mw(pr.pd, IBV_MW_TYPE_1);
		mw2 = uroce_client_alloc_mw(pr.pd, IBV_MW_TYPE_2);
		if (!mw1 || !mw2)
			_exit(4);
		b.bind_info = (struct ibv_mw_bind_info){.mr = &mr->ibv, .addr = (uintptr_t)mem,
							.length = 4096,
							.mw_access_flags = IBV_ACCESS_REMOTE_READ};
		if (uroce_client_bind_mw(pr.qp[0], mw1, &b) != 0 || fx_wait(pr.cq[0], &wc) != 0 ||
		    wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_BIND_MW)
			_exit(5);
		if (write(pipefd[1], "x", 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	cr_assert_eq(read(pipefd[0], &c, 1), 1, "child did not get its objects");
	cr_assert_eq(fx_stat(ctx, "objects.qp"), qps0 + 2);
	cr_assert_eq(fx_stat(ctx, "objects.mr"), mrs0 + 1);
	cr_assert_eq(fx_stat(ctx, "objects.mw"), mws0 + 2);
	cr_assert_gt(fx_stat(ctx, "mappings"), maps0);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	for (i = 0; i < 200 && fx_stat(ctx, "objects.qp") != qps0; i++)
		usleep(10000);
	cr_assert_eq(fx_stat(ctx, "objects.qp"), qps0);
	cr_assert_eq(fx_stat(ctx, "objects.mr"), mrs0);
	cr_assert_eq(fx_stat(ctx, "objects.cq"), cqs0);
	cr_assert_eq(fx_stat(ctx, "objects.pd"), pds0);
	cr_assert_eq(fx_stat(ctx, "objects.mw"), mws0);
	cr_assert_eq(fx_stat(ctx, "mappings"), maps0);
	close(pipefd[0]);
	close(pipefd[1]);
	uroce_client_close(ctx);
}

/* Garbage, wrong versions, stray fds and truncated messages on the socket: each is
 * refused, the connection dropped, and the daemon serves the next client. */
Test(loopback, hostile_control_messages)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	uint8_t msg[512];
	int i;

	strcpy(sa.sun_path, d.sock);
	srand(7);
	for (i = 0; i < 300; i++) {
		int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
		struct uroce_ctrl_hdr h = {.magic = UROCE_CTRL_MAGIC, .version = UROCE_CTRL_VERSION,
					   .cmd = (uint16_t)(rand() % (UROCE_CTRL_CMD_END + 2))};
		size_t len = (size_t)(rand() % (int)sizeof(msg));
		size_t k;

		cr_assert_eq(connect(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
		for (k = 0; k < len; k++)
			msg[k] = (uint8_t)rand();
		if (i % 3 == 0 && len >= sizeof(h)) {
			/* A plausible header over random payload. */
			h.len = (uint32_t)len;
			memcpy(msg, &h, sizeof(h));
		}
		if (i % 7 == 0 && len >= sizeof(h)) {
			h.version = UROCE_CTRL_VERSION + 1;
			memcpy(msg, &h, sizeof(h));
		}
		if (i % 5 == 0) {
			int fd = dup(0);

			uroce_ctrl_send(s, msg, len, &fd, 1);
			close(fd);
		} else {
			send(s, msg, len, 0);
		}
		close(s);
	}
	{
		struct uroce_client_ctx *ctx = uroce_client_open(d.sock);
		struct ibv_device_attr attr;

		cr_assert_not_null(ctx, "daemon gone after hostile messages: %s", strerror(errno));
		cr_assert_eq(uroce_client_query_device(ctx, &attr), 0);
		cr_assert_gt(fx_stat(ctx, "daemon.bad_requests"), 0);
		uroce_client_close(ctx);
	}
}

/* A 9000-byte port: the active MTU is 4096 (rxe's rule), RC uses it as its path MTU,
 * and UD messages go up to it (rxe: UD takes the port's MTU, not a path MTU). */
static struct fx_daemon dj;

static void jumbo_init(void)
{
	if (fx_daemon_start(&dj, "10.9.0.2", "port.mtu=9000") != 0)
		cr_skip_test("no uroced");
	d = dj;
}

static void jumbo_fini(void)
{
	fx_daemon_stop(&dj);
}

TestSuite(jumbo, .init = jumbo_init, .fini = jumbo_fini, .timeout = 60);

Test(jumbo, port_mtu_4096_rc_and_ud)
{
	struct ibv_port_attr pa;
	struct uroce_client_ctx *ctx = uroce_client_open(d.sock);
	struct fx_pair pr;
	struct uroce_client_ah *ah;
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};
	struct buf s, r;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct ibv_wc wc;

	cr_assert_not_null(ctx);
	cr_assert_eq(uroce_client_query_port(ctx, 1, &pa), 0);
	cr_assert_eq(pa.active_mtu, IBV_MTU_4096);
	uroce_client_close(ctx);
	send_sizes(IBV_QPT_RC, IBV_MTU_4096);

	cr_assert_eq(fx_pair_create(&pr, d.sock, IBV_QPT_UD, IBV_MTU_4096), 0);
	cr_assert_eq(uroce_client_query_gid(pr.ctx, 1, 1, &aa.grh.dgid), 0);
	aa.grh.sgid_index = 1;
	ah = uroce_client_create_ah(pr.pd, &aa);
	cr_assert_not_null(ah);
	buf_make(&pr, &s, 4096);
	buf_make(&pr, &r, 4096 + 40);
	fill(s.p, 4096, 11);
	post_recv(pr.qp[1], &r, 1);
	sge = (struct ibv_sge){.addr = (uintptr_t)s.p, .length = 4096, .lkey = s.mr->ibv.lkey};
	wr = (struct ibv_send_wr){.wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.ud = {.ah = &ah->ibv,
					    .remote_qpn = uroce_client_qp_ibv(pr.qp[1])->qp_num,
					    .remote_qkey = 0x11111111}};
	post_send(pr.qp[0], &wr);
	expect(pr.cq[0], IBV_WC_SEND, 2, 0);
	cr_assert_eq(fx_wait(pr.cq[1], &wc), 0);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", uroce_client_wc_status_str(wc.status));
	cr_assert_eq(wc.byte_len, 4096 + 40);
	cr_assert_eq(memcmp(r.p + 40, s.p, 4096), 0);
	uroce_client_destroy_ah(ah);
	buf_free(&s);
	buf_free(&r);
	fx_pair_destroy(&pr);
}
