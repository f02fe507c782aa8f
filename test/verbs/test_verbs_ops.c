/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The operations with their data, per transport (RC, UC, UD): SEND with and without
 * immediate, inline, several SGEs and chained WRs, RDMA WRITE and READ, the atomics,
 * RDMA Atomic Write, and the same through the extended post API (ibv_wr_*).
 * One file of test_verbs_api (verbs_api_fixture.h).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "uroce_wire.h"
#include "verbs_api_fixture.h"

/* ---------------------------------------------------------------- operations */

Test(verbs, rc_send_recv_with_imm_sizes)
{
	static const size_t sizes[] = {0, 1, 63, 1024, 1025, 4096, 65536, 1 << 20};
	struct pair p;
	size_t i;

	pair_make(&p, IBV_QPT_RC, NULL, 7);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		struct mbuf s, r;
		struct ibv_sge ss, rs;
		struct ibv_send_wr wr = {.wr_id = 100 + i, .sg_list = &ss, .num_sge = 1,
					 .opcode = i % 2 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
					 .imm_data = htonl(0xabc00 + (uint32_t)i),
					 .send_flags = IBV_SEND_SIGNALED};
		struct ibv_wc wc;

		mb_make(&s, n);
		mb_make(&r, n + 16);
		fill(s.p, n, (uint32_t)i);
		rs = sge_of(&r, 0, n + 16);
		post_recv_ok(p.qp[1], &rs, 1, 200 + i);
		ss = sge_of(&s, 0, n);
		post_send_ok(p.qp[0], &wr);
		expect_ok(p.cq[0], 100 + i, IBV_WC_SEND, NULL);
		expect_ok(p.cq[1], 200 + i, IBV_WC_RECV, &wc);
		cr_assert_eq(wc.byte_len, n, "byte_len %u, want %zu", wc.byte_len, n);
		cr_assert_eq(wc.qp_num, p.qp[1]->qp_num);
		if (i % 2) {
			cr_assert(wc.wc_flags & IBV_WC_WITH_IMM);
			cr_assert_eq(ntohl(wc.imm_data), 0xabc00 + (uint32_t)i);
		} else {
			cr_assert_not(wc.wc_flags & IBV_WC_WITH_IMM);
		}
		cr_assert_eq(memcmp(s.p, r.p, n), 0, "payload of %zu bytes differs", n);
		mb_free(&s);
		mb_free(&r);
	}
	pair_free(&p);
}

/* Gather from three SGEs, scatter into two; several WRs chained in one post. */
Test(verbs, rc_multi_sge_and_chained_wrs)
{
	struct pair p;
	struct mbuf s, r;
	struct ibv_sge ss[3], rs[2];
	struct ibv_send_wr wr[3];
	struct ibv_recv_wr rw[3], *rbad = NULL;
	struct ibv_wc wc;
	int i;

	pair_make(&p, IBV_QPT_RC, NULL, 7);
	mb_make(&s, 8192);
	mb_make(&r, 3 * 8192);
	fill(s.p, 8192, 3);
	ss[0] = sge_of(&s, 0, 100);
	ss[1] = sge_of(&s, 1000, 2000);
	ss[2] = sge_of(&s, 5000, 3000);
	for (i = 0; i < 3; i++) {
		rs[0] = sge_of(&r, (size_t)i * 8192, 1500);
		rs[1] = sge_of(&r, (size_t)i * 8192 + 4096, 4096);
		/* The SGE list is read at post time: rs can be reused for the next one. */
		rw[i] = (struct ibv_recv_wr){
			.wr_id = 50 + (uint64_t)i, .sg_list = rs, .num_sge = 2};
		cr_assert_eq(ibv_post_recv(p.qp[1], &rw[i], &rbad), 0);
	}
	for (i = 0; i < 3; i++)
		wr[i] = (struct ibv_send_wr){.wr_id = 10 + (uint64_t)i, .sg_list = ss, .num_sge = 3,
					     .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
					     .next = i < 2 ? &wr[i + 1] : NULL};
	post_send_ok(p.qp[0], &wr[0]);
	for (i = 0; i < 3; i++) {
		uint8_t *d = r.p + (size_t)i * 8192;

		expect_ok(p.cq[0], 10 + (uint64_t)i, IBV_WC_SEND, NULL);
		expect_ok(p.cq[1], 50 + (uint64_t)i, IBV_WC_RECV, &wc);
		cr_assert_eq(wc.byte_len, 5100);
		/* 5100 bytes gathered: 100 + 2000 + 3000, scattered 1500 then 3600. */
		cr_assert_eq(memcmp(d, s.p, 100), 0);
		cr_assert_eq(memcmp(d + 100, s.p + 1000, 1400), 0);
		cr_assert_eq(memcmp(d + 4096, s.p + 2400, 600), 0);
		cr_assert_eq(memcmp(d + 4096 + 600, s.p + 5000, 3000), 0);
	}
	mb_free(&s);
	mb_free(&r);
	pair_free(&p);
}

/* Inline data is copied at post time, from memory that is not registered (lkey ignored). */
Test(verbs, rc_inline_send)
{
	struct pair p;
	struct mbuf r;
	uint8_t src[64], ref[64];
	struct ibv_sge ss = {.addr = (uintptr_t)src, .length = sizeof(src), .lkey = 0}, rs;
	struct ibv_send_wr wr = {.wr_id = 1, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE},
			   *bad = NULL;
	struct ibv_wc wc;
	uint8_t *big;
	int rc;

	pair_make(&p, IBV_QPT_RC, NULL, 7);
	cr_assert_geq(p.cap[0].max_inline_data, 64);
	mb_make(&r, 4096);
	fill(src, sizeof(src), 9);
	memcpy(ref, src, sizeof(src));
	rs = sge_of(&r, 0, 4096);
	post_recv_ok(p.qp[1], &rs, 1, 2);
	post_send_ok(p.qp[0], &wr);
	memset(src, 0, sizeof(src)); /* the WR owns nothing after the post */
	expect_ok(p.cq[0], 1, IBV_WC_SEND, NULL);
	expect_ok(p.cq[1], 2, IBV_WC_RECV, &wc);
	cr_assert_eq(wc.byte_len, sizeof(src));
	cr_assert_eq(memcmp(r.p, ref, sizeof(ref)), 0);

	/* Inline RDMA WRITE too. */
	fill(src, sizeof(src), 10);
	wr = (struct ibv_send_wr){
		.wr_id = 3,
		.sg_list = &ss,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
		.wr.rdma = {.remote_addr = (uintptr_t)r.p + 1000, .rkey = r.mr->rkey}};
	post_send_ok(p.qp[0], &wr);
	expect_ok(p.cq[0], 3, IBV_WC_RDMA_WRITE, NULL);
	cr_assert_eq(memcmp(r.p + 1000, src, sizeof(src)), 0);

	/* More than max_inline_data inline: EINVAL, bad_wr names it. */
	big = calloc(1, p.cap[0].max_inline_data + 1);
	cr_assert_not_null(big);
	ss = (struct ibv_sge){.addr = (uintptr_t)big, .length = p.cap[0].max_inline_data + 1};
	wr = (struct ibv_send_wr){.wr_id = 4, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE};
	errno = 0;
	rc = ibv_post_send(p.qp[0], &wr, &bad);
	cr_assert_eq(rc, EINVAL, "inline of %u > max_inline_data: %d", ss.length, rc);
	cr_assert_eq(bad, &wr);
	expect_none(p.cq[0], 100);
	free(big);
	mb_free(&r);
	pair_free(&p);
}

Test(verbs, rc_write_read_atomics)
{
	struct pair p;
	struct mbuf a, b, r;
	struct ibv_sge sg[2];
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	size_t n = 3 << 20;
	volatile uint64_t *t;

	pair_make(&p, IBV_QPT_RC, NULL, 7);
	mb_make(&a, n);
	mb_make(&b, n);
	mb_make(&r, 4096);
	fill(a.p, n, 7);

	/* WRITE of 3 MiB from two SGEs. */
	sg[0] = sge_of(&a, 0, 4096);
	sg[1] = sge_of(&a, 4096, n - 4096);
	wr = (struct ibv_send_wr){.wr_id = 1, .sg_list = sg, .num_sge = 2,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = {.remote_addr = (uintptr_t)b.p, .rkey = b.mr->rkey}};
	post_send_ok(p.qp[0], &wr);
	expect_ok(p.cq[0], 1, IBV_WC_RDMA_WRITE, NULL);
	cr_assert_eq(memcmp(a.p, b.p, n), 0, "RDMA WRITE data");
	expect_none(p.cq[1], 50); /* a WRITE consumes no receive and completes nothing there */

	/* READ it back, scattered into two SGEs. */
	memset(a.p, 0, n);
	fill(b.p, n, 8);
	wr.wr_id = 2;
	wr.opcode = IBV_WR_RDMA_READ;
	post_send_ok(p.qp[0], &wr);
	expect_ok(p.cq[0], 2, IBV_WC_RDMA_READ, &wc);
	cr_assert_eq(wc.byte_len, n, "READ byte_len %u", wc.byte_len);
	cr_assert_eq(memcmp(a.p, b.p, n), 0, "RDMA READ data");

	/* WRITE with immediate: consumes a receive, reports the immediate and the length. */
	sg[0] = sge_of(&r, 0, 16);
	post_recv_ok(p.qp[1], sg, 1, 9);
	sg[0] = sge_of(&a, 0, 5000);
	wr = (struct ibv_send_wr){
		.wr_id = 5,
		.sg_list = sg,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.imm_data = htonl(77),
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {.remote_addr = (uintptr_t)b.p + 100, .rkey = b.mr->rkey}};
	fill(a.p, 5000, 12);
	post_send_ok(p.qp[0], &wr);
	expect_ok(p.cq[0], 5, IBV_WC_RDMA_WRITE, NULL);
	expect_ok(p.cq[1], 9, IBV_WC_RECV_RDMA_WITH_IMM, &wc);
	cr_assert_eq(wc.byte_len, 5000);
	cr_assert(wc.wc_flags & IBV_WC_WITH_IMM);
	cr_assert_eq(ntohl(wc.imm_data), 77);
	cr_assert_eq(memcmp(a.p, b.p + 100, 5000), 0);

	/* Atomics on an aligned word of b; the original lands in r. */
	t = (volatile uint64_t *)(void *)(b.p + 4096);
	*t = 40;
	sg[0] = sge_of(&r, 8, 8);
	wr = (struct ibv_send_wr){
		.wr_id = 3,
		.sg_list = sg,
		.num_sge = 1,
		.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.atomic = {.remote_addr = (uintptr_t)t, .rkey = b.mr->rkey, .compare_add = 2}};
	post_send_ok(p.qp[0], &wr);
	expect_ok(p.cq[0], 3, IBV_WC_FETCH_ADD, &wc);
	cr_assert_eq(*(uint64_t *)(void *)(r.p + 8), 40);
	cr_assert_eq(*t, 42);
	/* Compare-and-swap that matches... */
	wr.wr_id = 4;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 42;
	wr.wr.atomic.swap = 0x1122334455667788ull;
	post_send_ok(p.qp[0], &wr);
	expect_ok(p.cq[0], 4, IBV_WC_COMP_SWAP, NULL);
	cr_assert_eq(*(uint64_t *)(void *)(r.p + 8), 42);
	cr_assert_eq(*t, 0x1122334455667788ull);
	/* ...and one that does not: returns the value, swaps nothing. */
	wr.wr_id = 6;
	wr.wr.atomic.compare_add = 1;
	wr.wr.atomic.swap = 5;
	post_send_ok(p.qp[0], &wr);
	expect_ok(p.cq[0], 6, IBV_WC_COMP_SWAP, NULL);
	cr_assert_eq(*(uint64_t *)(void *)(r.p + 8), 0x1122334455667788ull);
	cr_assert_eq(*t, 0x1122334455667788ull);

	mb_free(&a);
	mb_free(&b);
	mb_free(&r);
	pair_free(&p);
}

Test(verbs, uc_send_and_write)
{
	struct pair p;
	struct mbuf s, r;
	struct ibv_sge ss, rs;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	size_t n = 70000;

	pair_make(&p, IBV_QPT_UC, NULL, 0);
	mb_make(&s, n);
	mb_make(&r, 2 * n);
	fill(s.p, n, 21);
	/* SEND with immediate, multi-packet */
	rs = sge_of(&r, 0, n);
	post_recv_ok(p.qp[1], &rs, 1, 1);
	ss = sge_of(&s, 0, n);
	wr = (struct ibv_send_wr){.wr_id = 2, .sg_list = &ss, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htonl(0x5150),
				  .send_flags = IBV_SEND_SIGNALED};
	post_send_ok(p.qp[0], &wr);
	expect_ok(p.cq[0], 2, IBV_WC_SEND, NULL);
	expect_ok(p.cq[1], 1, IBV_WC_RECV, &wc);
	cr_assert_eq(wc.byte_len, n);
	cr_assert(wc.wc_flags & IBV_WC_WITH_IMM);
	cr_assert_eq(ntohl(wc.imm_data), 0x5150);
	cr_assert_eq(memcmp(s.p, r.p, n), 0);
	/* RDMA WRITE */
	fill(s.p, n, 22);
	wr = (struct ibv_send_wr){
		.wr_id = 3,
		.sg_list = &ss,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {.remote_addr = (uintptr_t)r.p + n, .rkey = r.mr->rkey}};
	post_send_ok(p.qp[0], &wr);
	expect_ok(p.cq[0], 3, IBV_WC_RDMA_WRITE, NULL);
	/* UC has no ACK: the requester's completion says nothing of the data. What does is a
	 * later message on the same QP, because the responder executes messages in PSN
	 * order (IBA 9.8.2): once the SEND behind the WRITE is received, the WRITE has been
	 * placed. Polling the buffer with memcmp() instead is a race: glibc's vector
	 * memcmp re-reads the first differing byte to compute its sign, and returns 0 when
	 * the daemon wrote that byte in between, long before the rest has landed. */
	rs = sge_of(&r, 0, 8);
	post_recv_ok(p.qp[1], &rs, 1, 6);
	ss = sge_of(&s, 0, 8);
	wr = (struct ibv_send_wr){.wr_id = 7, .sg_list = &ss, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};
	post_send_ok(p.qp[0], &wr);
	expect_ok(p.cq[0], 7, IBV_WC_SEND, NULL);
	expect_ok(p.cq[1], 6, IBV_WC_RECV, &wc);
	cr_assert_eq(wc.byte_len, 8);
	cr_assert_eq(memcmp(s.p, r.p + n, n), 0,
		     "UC WRITE data (placed before the SEND behind it)");
	/* RDMA WRITE with immediate */
	fill(s.p, n, 23);
	rs = sge_of(&r, 0, 8);
	post_recv_ok(p.qp[1], &rs, 1, 4);
	ss = sge_of(&s, 0, n);
	wr = (struct ibv_send_wr){
		.wr_id = 5,
		.sg_list = &ss,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.imm_data = htonl(99),
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {.remote_addr = (uintptr_t)r.p + n, .rkey = r.mr->rkey}};
	post_send_ok(p.qp[0], &wr);
	expect_ok(p.cq[0], 5, IBV_WC_RDMA_WRITE, NULL);
	expect_ok(p.cq[1], 4, IBV_WC_RECV_RDMA_WITH_IMM, &wc);
	cr_assert_eq(wc.byte_len, n);
	cr_assert_eq(ntohl(wc.imm_data), 99);
	cr_assert_eq(memcmp(s.p, r.p + n, n), 0, "UC WRITE with immediate data");
	mb_free(&s);
	mb_free(&r);
	pair_free(&p);
}

Test(verbs, ud_send_with_grh)
{
	struct pair p;
	struct ibv_ah *ah, *bad_ah;
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};
	struct ibv_ah_attr noglobal = {.dlid = 1, .port_num = 1};
	struct mbuf s, r;
	struct ibv_sge ss, rs;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	uint32_t n = 1000, mtu = 128u << pattr.active_mtu;
	const uint8_t *ip;

	pair_make(&p, IBV_QPT_UD, NULL, 0);
	aa.grh.dgid = gid;
	aa.grh.sgid_index = (uint8_t)gidx;
	aa.grh.hop_limit = 64;
	ah = ibv_create_ah(pd, &aa);
	cr_assert_not_null(ah, "ibv_create_ah: %s", strerror(errno));
	cr_assert_eq(ah->pd, pd);
	cr_assert_eq(ah->context, ctx);
	/* RoCE has no LIDs: an AH without a GRH is refused. */
	errno = 0;
	bad_ah = ibv_create_ah(pd, &noglobal);
	cr_assert_null(bad_ah, "AH without GRH accepted");
	cr_expect_eq(errno, EINVAL, "errno %d", errno);

	mb_make(&s, mtu);
	mb_make(&r, mtu + 40);
	fill(s.p, mtu, 5);
	rs = sge_of(&r, 0, mtu + 40);
	post_recv_ok(p.qp[1], &rs, 1, 8);
	ss = sge_of(&s, 0, n);
	wr = (struct ibv_send_wr){.wr_id = 7, .sg_list = &ss, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htonl(0xfeed),
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.ud = {.ah = ah, .remote_qpn = p.qp[1]->qp_num,
					    .remote_qkey = QKEY}};
	post_send_ok(p.qp[0], &wr);
	expect_ok(p.cq[0], 7, IBV_WC_SEND, NULL);
	expect_ok(p.cq[1], 8, IBV_WC_RECV, &wc);
	cr_assert_eq(wc.byte_len, n + 40, "UD byte_len %u counts the 40-byte GRH", wc.byte_len);
	cr_assert(wc.wc_flags & IBV_WC_GRH);
	/* The RoCE packet type in sl, as mlx5 reports it (0xa: RoCEv2 over IPv4); rxe says 0.
	 * UCX's UD transport takes the destination address from the GRH area by it. */
	if (!vfx_reference())
		cr_assert_eq(wc.sl, 0xa, "UD wc.sl %u", wc.sl);
	cr_assert(wc.wc_flags & IBV_WC_WITH_IMM);
	cr_assert_eq(ntohl(wc.imm_data), 0xfeed);
	cr_assert_eq(wc.src_qp, p.qp[0]->qp_num);
	cr_assert_eq(wc.qp_num, p.qp[1]->qp_num);
	cr_assert_eq(memcmp(r.p + 40, s.p, n), 0);
	/* RoCEv2 over IPv4: the IPv4 header in the GRH's last 20 bytes, both addresses ours. */
	ip = r.p + 20;
	cr_assert_eq(ip[0], 0x45, "GRH: IPv4 header expected at offset 20, got 0x%02x", ip[0]);
	cr_assert_eq(ip[9], 17, "IPv4 protocol %u, want UDP", ip[9]);
	cr_assert_eq(memcmp(ip + 12, uroce_gid_ipv4(gid.raw), 4), 0, "GRH source address");
	cr_assert_eq(memcmp(ip + 16, uroce_gid_ipv4(gid.raw), 4), 0, "GRH destination address");

	/* A full-MTU message. */
	memset(r.p, 0, mtu + 40);
	post_recv_ok(p.qp[1], &rs, 1, 10);
	ss = sge_of(&s, 0, mtu);
	wr.wr_id = 9;
	wr.opcode = IBV_WR_SEND;
	post_send_ok(p.qp[0], &wr);
	expect_ok(p.cq[0], 9, IBV_WC_SEND, NULL);
	expect_ok(p.cq[1], 10, IBV_WC_RECV, &wc);
	cr_assert_eq(wc.byte_len, mtu + 40);
	cr_assert_eq(memcmp(r.p + 40, s.p, mtu), 0);

	/* A wrong Q_Key is dropped by the receiver (the sender completes). */
	post_recv_ok(p.qp[1], &rs, 1, 12);
	ss = sge_of(&s, 0, 10);
	wr.wr_id = 11;
	wr.wr.ud.remote_qkey = QKEY + 1;
	post_send_ok(p.qp[0], &wr);
	expect_ok(p.cq[0], 11, IBV_WC_SEND, NULL);
	expect_none(p.cq[1], 200);
	wr.wr_id = 13;
	wr.wr.ud.remote_qkey = QKEY;
	post_send_ok(p.qp[0], &wr);
	expect_ok(p.cq[0], 13, IBV_WC_SEND, NULL);
	expect_ok(p.cq[1], 12, IBV_WC_RECV, &wc);
	cr_assert_eq(wc.byte_len, 10 + 40);

	cr_assert_eq(ibv_destroy_ah(ah), 0);
	mb_free(&s);
	mb_free(&r);
	pair_free(&p);
}

/* IBTA 1.5 RDMA Atomic Write: 8 bytes stored at once at an aligned address, from one SGE
 * (classic post_send) or from the pointer ibv_wr_atomic_write takes; completes as
 * IBV_WC_ATOMIC_WRITE. Misaligned or not 8 bytes is EINVAL at post; UC cannot. */
Test(verbs, atomic_write)
{
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE};
	const uint64_t v1 = 0x1122334455667788ull, v2 = 0x0102030405060708ull;
	struct ibv_cq *cq0, *cq1;
	struct ibv_qp *q0, *q1;
	struct ibv_qp_ex *x;
	struct mbuf s, d;
	struct ibv_sge ss;
	struct ibv_wc wc;
	struct pair u;
	uint64_t got;
	int rc;

	cq0 = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	cq1 = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	cr_assert(cq0 && cq1);
	qa.send_cq = qa.recv_cq = cq0;
	q0 = ibv_create_qp_ex(ctx, &qa);
	if (!q0 && errno == EOPNOTSUPP && vfx_reference()) {
		cr_log_info("the reference device has no atomic write (Linux 6.2+)");
		ibv_destroy_cq(cq0);
		ibv_destroy_cq(cq1);
		return;
	}
	cr_assert_not_null(q0, "ibv_create_qp_ex(ATOMIC_WRITE): %s", strerror(errno));
	x = ibv_qp_to_qp_ex(q0);
	cr_assert_not_null(x);
	q1 = qp_make(IBV_QPT_RC, cq1, cq1, NULL, NULL);
	connect2(q0, q1, 7, 7);
	mb_make(&s, 4096);
	mb_make(&d, 4096);
	memset(d.p, 0xee, 64);

	/* Classic post_send: the value from the one SGE. */
	memcpy(s.p, &v1, 8);
	ss = sge_of(&s, 0, 8);
	post_send_ok(q0, &(struct ibv_send_wr){.wr_id = 1, .sg_list = &ss, .num_sge = 1,
					       .opcode = IBV_WR_ATOMIC_WRITE,
					       .send_flags = IBV_SEND_SIGNALED,
					       .wr.rdma = {.remote_addr = (uintptr_t)d.p + 16,
							   .rkey = d.mr->rkey}});
	expect_ok(cq0, 1, IBV_WC_ATOMIC_WRITE, &wc);
	memcpy(&got, d.p + 16, 8);
	cr_assert_eq(got, v1, "stored %llx", (unsigned long long)got);
	cr_assert_eq(d.p[15], 0xee);
	cr_assert_eq(d.p[24], 0xee);

	/* ibv_wr_atomic_write: the value behind the pointer, copied at the call. */
	ibv_wr_start(x);
	x->wr_id = 2;
	x->wr_flags = IBV_SEND_SIGNALED;
	got = v2;
	ibv_wr_atomic_write(x, d.mr->rkey, (uintptr_t)d.p + 32, &got);
	got = 0;
	rc = ibv_wr_complete(x);
	cr_assert_eq(rc, 0, "ibv_wr_complete(atomic_write): %d", rc);
	expect_ok(cq0, 2, IBV_WC_ATOMIC_WRITE, NULL);
	memcpy(&got, d.p + 32, 8);
	cr_assert_eq(got, v2, "stored %llx", (unsigned long long)got);

	/* Refused at post: misaligned, not 8 bytes; and on UC. */
	{
		struct ibv_send_wr w = {.wr_id = 3, .sg_list = &ss, .num_sge = 1,
					.opcode = IBV_WR_ATOMIC_WRITE,
					.wr.rdma = {.remote_addr = (uintptr_t)d.p + 4,
						    .rkey = d.mr->rkey}},
				   *bad;

		cr_assert_eq(ibv_post_send(q0, &w, &bad), EINVAL, "misaligned");
		w.wr.rdma.remote_addr = (uintptr_t)d.p;
		ss.length = 4;
		cr_assert_eq(ibv_post_send(q0, &w, &bad), EINVAL, "4 bytes");
		ss.length = 8;
		pair_make(&u, IBV_QPT_UC, NULL, 7);
		cr_assert_eq(ibv_post_send(u.qp[0], &w, &bad), EINVAL, "on UC");
		pair_free(&u);
	}
	cr_assert_eq(ibv_destroy_qp(q0), 0);
	cr_assert_eq(ibv_destroy_qp(q1), 0);
	cr_assert_eq(ibv_destroy_cq(cq0), 0);
	cr_assert_eq(ibv_destroy_cq(cq1), 0);
	mb_free(&s);
	mb_free(&d);
}

Test(verbs, qp_ex_wr_api)
{
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = 32, .max_recv_wr = 32, .max_send_sge = 2, .max_recv_sge = 1,
			.max_inline_data = 64},
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
				  IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				  IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD};
	struct ibv_cq *cq0, *cq1;
	struct ibv_qp *q0, *q1;
	struct ibv_qp_ex *x;
	struct mbuf s, r, d;
	struct ibv_sge rs, sl[2];
	struct ibv_wc wc;
	uint8_t inl[40];
	volatile uint64_t *t;
	int rc;

	cq0 = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	cq1 = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	cr_assert_not_null(cq0);
	cr_assert_not_null(cq1);
	qa.send_cq = qa.recv_cq = cq0;
	q0 = ibv_create_qp_ex(ctx, &qa);
	cr_assert_not_null(q0, "ibv_create_qp_ex: %s", strerror(errno));
	cr_assert_eq(q0->pd, pd);
	x = ibv_qp_to_qp_ex(q0);
	cr_assert_not_null(x, "ibv_qp_to_qp_ex");
	cr_assert_eq(&x->qp_base, q0);
	q1 = qp_make(IBV_QPT_RC, cq1, cq1, NULL, NULL);
	connect2(q0, q1, 7, 7);
	mb_make(&s, 8192);
	mb_make(&r, 8192);
	mb_make(&d, 8192);
	fill(s.p, 8192, 41);
	fill(inl, sizeof(inl), 42);
	rs = sge_of(&r, 0, 4096);
	post_recv_ok(q1, &rs, 1, 100);
	rs = sge_of(&r, 4096, 64);
	post_recv_ok(q1, &rs, 1, 101);
	rs = sge_of(&r, 4096 + 64, 64);
	post_recv_ok(q1, &rs, 1, 102);

	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(x, htonl(0x4242));
	ibv_wr_set_sge(x, s.mr->lkey, (uintptr_t)s.p, 3000);
	x->wr_id = 2;
	ibv_wr_rdma_write(x, d.mr->rkey, (uintptr_t)d.p + 8);
	sl[0] = sge_of(&s, 100, 50);
	sl[1] = sge_of(&s, 4000, 500);
	ibv_wr_set_sge_list(x, 2, sl); /* rdma-core 44's rxe sends a wrong length here */
	x->wr_id = 3;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, inl, sizeof(inl));
	x->wr_id = 4;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write_imm(x, d.mr->rkey, (uintptr_t)d.p + 2048, htonl(0x77));
	ibv_wr_set_sge(x, s.mr->lkey, (uintptr_t)s.p + 5000, 1000);
	rc = ibv_wr_complete(x);
	cr_assert_eq(rc, 0, "ibv_wr_complete: %d", rc);
	memset(inl, 0, sizeof(inl));

	expect_ok(cq0, 1, IBV_WC_SEND, NULL);
	expect_ok(cq0, 2, IBV_WC_RDMA_WRITE, NULL);
	expect_ok(cq0, 3, IBV_WC_SEND, NULL);
	expect_ok(cq0, 4, IBV_WC_RDMA_WRITE, NULL);
	expect_ok(cq1, 100, IBV_WC_RECV, &wc);
	cr_assert_eq(wc.byte_len, 3000);
	cr_assert_eq(ntohl(wc.imm_data), 0x4242);
	cr_assert_eq(memcmp(r.p, s.p, 3000), 0);
	expect_ok(cq1, 101, IBV_WC_RECV, &wc);
	cr_assert_eq(wc.byte_len, 40);
	fill(inl, sizeof(inl), 42);
	cr_assert_eq(memcmp(r.p + 4096, inl, sizeof(inl)), 0, "inline data");
	expect_ok(cq1, 102, IBV_WC_RECV_RDMA_WITH_IMM, &wc);
	cr_assert_eq(wc.byte_len, 1000);
	cr_assert_eq(ntohl(wc.imm_data), 0x77);
	cr_assert_eq(memcmp(d.p + 8, s.p + 100, 50), 0);
	cr_assert_eq(memcmp(d.p + 58, s.p + 4000, 500), 0);
	cr_assert_eq(memcmp(d.p + 2048, s.p + 5000, 1000), 0);

	/* READ and both atomics through the same API. */
	t = (volatile uint64_t *)(void *)(d.p + 4096);
	*t = 1000;
	ibv_wr_start(x);
	x->wr_id = 5;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(x, d.mr->rkey, (uintptr_t)d.p);
	ibv_wr_set_sge(x, s.mr->lkey, (uintptr_t)s.p + 6000, 1000);
	x->wr_id = 6;
	ibv_wr_atomic_fetch_add(x, d.mr->rkey, (uintptr_t)t, 5);
	ibv_wr_set_sge(x, s.mr->lkey, (uintptr_t)s.p + 7000, 8);
	x->wr_id = 7;
	ibv_wr_atomic_cmp_swp(x, d.mr->rkey, (uintptr_t)t, 1005, 9);
	ibv_wr_set_sge(x, s.mr->lkey, (uintptr_t)s.p + 7008, 8);
	cr_assert_eq(ibv_wr_complete(x), 0);
	expect_ok(cq0, 5, IBV_WC_RDMA_READ, NULL);
	cr_assert_eq(memcmp(s.p + 6000, d.p, 1000), 0);
	expect_ok(cq0, 6, IBV_WC_FETCH_ADD, NULL);
	expect_ok(cq0, 7, IBV_WC_COMP_SWAP, NULL);
	cr_assert_eq(*(uint64_t *)(void *)(s.p + 7000), 1000);
	cr_assert_eq(*(uint64_t *)(void *)(s.p + 7008), 1005);
	cr_assert_eq(*t, 9);

	/* wr_abort: nothing of the batch is sent. */
	rs = sge_of(&r, 0, 64);
	post_recv_ok(q1, &rs, 1, 103);
	ibv_wr_start(x);
	x->wr_id = 8;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, s.mr->lkey, (uintptr_t)s.p, 10);
	ibv_wr_abort(x);
	expect_none(cq0, 100);
	expect_none(cq1, 10);

	cr_assert_eq(ibv_destroy_qp(q0), 0);
	cr_assert_eq(ibv_destroy_qp(q1), 0);
	cr_assert_eq(ibv_destroy_cq(cq0), 0);
	cr_assert_eq(ibv_destroy_cq(cq1), 0);
	mb_free(&s);
	mb_free(&r);
	mb_free(&d);
}
