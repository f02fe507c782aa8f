/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The library and the device: the build's libibverbs, the device list and its queries,
 * what the device lacks (EOPNOTSUPP), ibv_resolve_eth_l2_from_gid, two contexts of one
 * process, and no daemon at all (suite nodaemon).
 * One file of test_verbs_api (verbs_api_fixture.h).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "uroce_wire.h"
#include "verbs_api_fixture.h"

/* driver.h's (libibverbs exports it; verbs.h does not declare it): 0 IB/RoCE v1, 1 RoCE v2. */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       int *type);

/* The vendor ids the issue forbids: Mellanox's and Amazon's (perftest/UCX switch paths). */
#define VENDOR_MELLANOX 0x02c9
#define VENDOR_AMAZON 0x1d0f

/* ---------------------------------------------------------------- library and device */

Test(verbs, library_is_the_builds)
{
	char why[512];

	cr_assert_eq(vfx_check_library(why, sizeof(why)), 0, "WRONG LIBRARY: %s", why);
}

Test(verbs, device_list_and_queries)
{
	struct ibv_device **list;
	struct ibv_device_attr_ex ax;
	struct ibv_port_attr pa;
	struct ibv_gid_entry ge, table[64];
	union ibv_gid g0;
	const char *name;
	ssize_t nt, i;
	uint16_t pkey;
	int n = -1, rc, found = 0;

	list = ibv_get_device_list(&n);
	cr_assert_not_null(list);
	cr_assert_geq(n, 1);
	cr_assert_null(list[n], "the list is NULL-terminated");
	name = ibv_get_device_name(list[0]);
	cr_assert_not_null(name);
	cr_assert_neq(strncmp(name, "mlx", 3), 0, "device named %s", name);
	cr_assert_neq(strncmp(name, "efa", 3), 0, "device named %s", name);
	cr_assert_eq(list[0]->node_type, IBV_NODE_CA);
	cr_assert_eq(list[0]->transport_type, IBV_TRANSPORT_IB);
	cr_assert_str_eq(ibv_node_type_str(list[0]->node_type), "InfiniBand channel adapter");
	cr_assert_eq(ibv_get_device_guid(list[0]), dattr.node_guid, "device guid");
	cr_assert_eq(ctx->device->node_type, IBV_NODE_CA);
	cr_assert_str_eq(ibv_get_device_name(ctx->device), name);
	/* The character device middleware checks before it uses a device (UCX: a node in
	 * /dev/infiniband named dev_name that the user may read and write). */
	{
		char node[IBV_SYSFS_NAME_MAX + 32], sysfs[IBV_SYSFS_PATH_MAX];
		struct stat st;

		snprintf(node, sizeof(node), "/dev/infiniband/%s", list[0]->dev_name);
		cr_assert_eq(stat(node, &st), 0, "%s: %s", node, strerror(errno));
		cr_assert(S_ISCHR(st.st_mode), "%s is not a character device", node);
		cr_assert_eq(access(node, R_OK | W_OK), 0, "%s: %s", node, strerror(errno));
		snprintf(sysfs, sizeof(sysfs), "/sys/class/infiniband_verbs/%s",
			 list[0]->dev_name);
		cr_assert_str_eq(list[0]->dev_path, sysfs);
	}
	ibv_free_device_list(list);
	if (!vfx_reference())
		cr_assert_eq(strncmp(name, "uroce", 5), 0, "device named %s, want uroce*", name);

	/* Device */
	cr_assert_neq(dattr.vendor_id, VENDOR_MELLANOX);
	cr_assert_neq(dattr.vendor_id, VENDOR_AMAZON);
	cr_assert_eq(dattr.phys_port_cnt, 1);
	cr_assert_geq(dattr.max_qp_wr, 64);
	cr_assert_geq(dattr.max_sge, 4);
	cr_assert_geq(dattr.max_cqe, 256);
	cr_assert_geq(dattr.max_srq, 1);
	cr_assert_geq(dattr.max_srq_wr, 16);
	cr_assert_geq(dattr.max_qp_rd_atom, 1);
	cr_assert_neq(dattr.atomic_cap, IBV_ATOMIC_NONE);
	cr_assert_neq(dattr.node_guid, 0);
	memset(&ax, 0xa5, sizeof(ax));
	rc = ibv_query_device_ex(ctx, NULL, &ax);
	cr_assert_eq(rc, 0, "ibv_query_device_ex: %s", strerror(rc));
	cr_assert_eq(ax.orig_attr.max_qp, dattr.max_qp);
	cr_assert_eq(ax.orig_attr.max_qp_wr, dattr.max_qp_wr);
	cr_assert_eq(ax.orig_attr.vendor_id, dattr.vendor_id);
	cr_assert_eq(ax.orig_attr.node_guid, dattr.node_guid);
	cr_assert_eq(ax.orig_attr.max_cqe, dattr.max_cqe);
	cr_assert_eq(ax.orig_attr.atomic_cap, dattr.atomic_cap);
	cr_assert_str_eq(ax.orig_attr.fw_ver, dattr.fw_ver);

	/* Port */
	cr_assert_eq(pattr.state, IBV_PORT_ACTIVE, "port state %s",
		     ibv_port_state_str(pattr.state));
	cr_assert_eq(pattr.link_layer, IBV_LINK_LAYER_ETHERNET);
	cr_assert_geq(pattr.gid_tbl_len, 2);
	cr_assert_geq(pattr.pkey_tbl_len, 1);
	cr_assert_geq(pattr.max_mtu, pattr.active_mtu);
	if (!vfx_reference())
		cr_assert_eq(pattr.active_mtu, IBV_MTU_1024, "a 1500-byte port: 1024 (rxe's rule)");
	rc = ibv_query_port(ctx, 2, &pa);
	cr_assert_eq(rc, EINVAL, "query of port 2: %d", rc);
	cr_assert_eq(ibv_query_pkey(ctx, 1, 0, &pkey), 0);
	cr_assert_eq(pkey, 0xffff);

	/* GIDs: index 1 is the IPv4-mapped RoCE v2 GID of the daemon's address. */
	if (!vfx_reference()) {
		struct in_addr ip;

		cr_assert(uroce_gid_is_ipv4(gid.raw), "GID 1 is not IPv4-mapped");
		inet_pton(AF_INET, IPV4, &ip);
		cr_assert_eq(memcmp(uroce_gid_ipv4(gid.raw), &ip, 4), 0, "GID 1 is not " IPV4);
		cr_assert_eq(ibv_query_gid(ctx, 1, 0, &g0), 0);
		cr_assert_eq(g0.raw[0], 0xfe, "GID 0 is the link-local one");
		cr_assert_eq(g0.raw[1], 0x80);
	}
	memset(&ge, 0xa5, sizeof(ge));
	rc = ibv_query_gid_ex(ctx, 1, (uint32_t)gidx, &ge, 0);
	cr_assert_eq(rc, 0, "ibv_query_gid_ex: %s", strerror(rc));
	cr_assert_eq(memcmp(ge.gid.raw, gid.raw, 16), 0);
	cr_assert_eq(ge.gid_index, (uint32_t)gidx);
	cr_assert_eq(ge.port_num, 1);
	cr_assert_eq(ge.gid_type, IBV_GID_TYPE_ROCE_V2);
	nt = ibv_query_gid_table(ctx, table, 64, 0);
	cr_assert_geq(nt, 1, "ibv_query_gid_table: %zd", nt);
	for (i = 0; i < nt; i++) {
		cr_assert_eq(table[i].port_num, 1);
		if (table[i].gid_index == (uint32_t)gidx) {
			found = 1;
			cr_assert_eq(memcmp(table[i].gid.raw, gid.raw, 16), 0);
			cr_assert_eq(table[i].gid_type, IBV_GID_TYPE_ROCE_V2);
		}
	}
	cr_assert(found, "GID %d not in ibv_query_gid_table", gidx);
	/* ibv_query_gid_type (driver.h, what ibv_devinfo -v prints): RoCE v2 for a used
	 * entry; an empty one has no type and rdma-core answers IB/RoCE v1 for it. */
	{
		int type = -1, empty = -1;

		cr_assert_eq(ibv_query_gid_type(ctx, 1, (unsigned int)gidx, &type), 0);
		cr_assert_eq(type, 1, "GID %d: type %d, not RoCE v2 (1)", gidx, type);
		for (i = 0; i < pattr.gid_tbl_len && empty < 0; i++)
			if (ibv_query_gid_ex(ctx, 1, (uint32_t)i, &ge, 0) == ENODATA)
				empty = (int)i;
		cr_assert_geq(empty, 0, "no empty entry among %d", pattr.gid_tbl_len);
		type = -1;
		cr_assert_eq(ibv_query_gid_type(ctx, 1, (unsigned int)empty, &type), 0);
		cr_assert_eq(type, 0, "empty GID %d: type %d, not IB/RoCE v1 (0)", empty, type);
	}
	/* A table too small for every valid entry: EINVAL (rdma-core). */
	if (nt > 1) {
		nt = ibv_query_gid_table(ctx, table, 1, 0);
		cr_assert_lt(nt, 0);
	}
}

/* What the device has not answers EOPNOTSUPP, which programs and test suites read as
 * "skip" (doc/verbs.md, "Every entry point"): each such row of the table, once. */
Test(verbs, what_the_device_lacks_is_eopnotsupp)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_srq_init_attr_ex sx = {.attr = {.max_wr = 4, .max_sge = 1},
					  .comp_mask = IBV_SRQ_INIT_ATTR_PD |
						       IBV_SRQ_INIT_ATTR_TYPE,
					  .srq_type = IBV_SRQT_BASIC,
					  .pd = pd};
	struct ibv_srq *srq;
	struct ibv_values_ex rt = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};
	struct ibv_modify_cq_attr mc = {.attr_mask = IBV_CQ_ATTR_MODERATE,
					.moderate = {.cq_count = 1, .cq_period = 1}};
	struct ibv_sge sg = {0};

	if (vfx_reference())
		return; /* rxe has some of these */
	cr_assert_not_null(cq);
#define LACKS_NULL(call)                                                                  \
	do {                                                                              \
		errno = 0;                                                                \
		cr_assert_null(call, #call " succeeded");                                 \
		cr_assert_eq(errno, EOPNOTSUPP, #call ": errno %d", errno);               \
	} while (0)
	LACKS_NULL(ibv_alloc_dm(ctx, &(struct ibv_alloc_dm_attr){.length = 64}));
	LACKS_NULL(ibv_create_wq(ctx, &(struct ibv_wq_init_attr){.wq_type = IBV_WQT_RQ,
								.max_wr = 1, .max_sge = 1,
								.pd = pd, .cq = cq}));
	LACKS_NULL(ibv_create_counters(ctx, &(struct ibv_counters_init_attr){0}));
	/* cmd_fd is a descriptor (ibv_import_device takes it: verbs/import_device_*), an
	 * O_PATH one: nothing reads or writes kernel commands through it. */
	{
		char cmd[8] = {0};

		errno = 0;
		cr_assert_eq(write(ctx->cmd_fd, cmd, sizeof(cmd)), -1, "a kernel command went");
		cr_assert_eq(errno, EBADF, "write to cmd_fd: errno %d", errno);
	}
	LACKS_NULL(ibv_reg_dmabuf_mr(pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE));
#undef LACKS_NULL
	cr_assert_eq(ibv_modify_cq(cq, &mc), EOPNOTSUPP);
	cr_assert_eq(ibv_query_rt_values_ex(ctx, &rt), EOPNOTSUPP);
	cr_assert_eq(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sg, 1), EOPNOTSUPP);
	/* A basic SRQ through the extended entry point is an SRQ (XRC ones: xrc/); a tag
	 * matching one is not. */
	srq = ibv_create_srq_ex(ctx, &sx);
	cr_assert_not_null(srq, "ibv_create_srq_ex (basic): %s", strerror(errno));
	cr_assert_eq(ibv_destroy_srq(srq), 0);
	sx.comp_mask |= IBV_SRQ_INIT_ATTR_CQ;
	sx.srq_type = IBV_SRQT_TM;
	sx.cq = cq;
	errno = 0;
	cr_assert_null(ibv_create_srq_ex(ctx, &sx), "a tag matching SRQ was created");
	cr_assert_eq(errno, EOPNOTSUPP, "tag matching SRQ: errno %d", errno);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

/* ibv_resolve_eth_l2_from_gid: the daemon resolves the next hop as for an AH. The
 * device's own address is itself: its MAC is the one its link-local GID (index 0) is made
 * from (EUI-64). An address nobody answers for is -EHOSTUNREACH after the ARP probes; no
 * GRH is -EINVAL. rdma-core's codes are negative and leave errno alone. */
Test(verbs, resolve_eth_l2_from_gid)
{
	struct ibv_ah_attr attr = {.is_global = 1, .port_num = 1};
	union ibv_gid ll;
	uint8_t mac[6], want[6];
	uint16_t vid = 0;

	cr_assert_eq(ibv_query_gid(ctx, 1, 0, &ll), 0);
	want[0] = ll.raw[8] ^ 2;
	memcpy(want + 1, ll.raw + 9, 2);
	memcpy(want + 3, ll.raw + 13, 3);
	attr.grh.dgid = gid;
	attr.grh.sgid_index = (uint8_t)gidx;
	cr_assert_eq(ibv_resolve_eth_l2_from_gid(ctx, &attr, mac, &vid), 0);
	cr_assert_eq(memcmp(mac, want, 6), 0, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1],
		     mac[2], mac[3], mac[4], mac[5]);
	cr_assert_eq(vid, 0xffff, "an untagged port: vid %#x", vid);
	attr.grh.dgid.raw[15] ^= 0x40; /* a neighbour on the subnet that is not there */
	cr_assert_eq(ibv_resolve_eth_l2_from_gid(ctx, &attr, mac, NULL), -EHOSTUNREACH);
	attr.is_global = 0;
	cr_assert_eq(ibv_resolve_eth_l2_from_gid(ctx, &attr, mac, &vid), -EINVAL);
	attr.is_global = 1;
	attr.grh.sgid_index = 200;
	cr_assert_eq(ibv_resolve_eth_l2_from_gid(ctx, &attr, mac, &vid), -EINVAL);
}

/* ---------------------------------------------------------------- no daemon */

static void nodaemon_init(void)
{
	check_library();
}

TestSuite(nodaemon, .init = nodaemon_init, .timeout = 30);

Test(nodaemon, empty_device_list)
{
	struct ibv_device **list;
	int n = -1;

	if (vfx_reference())
		cr_skip_test("reference mode lists the system's devices");
	setenv("UROCE_SOCKET", "/nonexistent/uroce-no-daemon.sock", 1);
	list = ibv_get_device_list(&n);
	cr_assert_not_null(list,
			   "ibv_get_device_list without a daemon: NULL (%s), want an empty list",
			   strerror(errno));
	cr_assert_eq(n, 0, "%d devices without a daemon", n);
	cr_assert_null(list[0]);
	ibv_free_device_list(list);
	/* And again: the second call is as clean as the first. */
	list = ibv_get_device_list(NULL);
	cr_assert_not_null(list);
	cr_assert_null(list[0]);
	ibv_free_device_list(list);
}

/* Two contexts of one process registering memory in the same page: the second must not
 * take the page away from the first. RDMA through the first context's MR still lands in
 * the page the application reads, and reads what the application wrote there. */
Test(verbs, two_contexts_share_a_page)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx2;
	struct ibv_pd *pd2;
	struct ibv_mr *mr1, *mr2;
	struct pair p;
	struct mbuf src, dst;
	struct ibv_wc wc;
	uint8_t *page = aligned_alloc(4096, 4096);

	cr_assert_not_null(list);
	cr_assert_not_null(page);
	memset(page, 0, 4096);
	pair_make(&p, IBV_QPT_RC, NULL, 7);
	mb_make(&src, 256);
	mb_make(&dst, 256);
	mr1 = ibv_reg_mr(pd, page, 256, ACC_ALL);
	cr_assert_not_null(mr1, "ibv_reg_mr: %s", strerror(errno));
	ctx2 = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	cr_assert_not_null(ctx2, "second ibv_open_device: %s", strerror(errno));
	pd2 = ibv_alloc_pd(ctx2);
	cr_assert_not_null(pd2);
	mr2 = ibv_reg_mr(pd2, page + 2048, 256, ACC_ALL);
	cr_assert_not_null(mr2, "ibv_reg_mr on the second context: %s", strerror(errno));

	/* Into the page through the first context's MR ... */
	fill(src.p, 256, 41);
	post_write(p.qp[0], &src, (uintptr_t)page, mr1->rkey, 1);
	expect_ok(p.cq[0], 1, IBV_WC_RDMA_WRITE, &wc);
	cr_assert_eq(memcmp(page, src.p, 256), 0, "the WRITE landed where the application looks");
	/* ... and out of it: what the application wrote after the second registration. */
	fill(page, 256, 42);
	struct ibv_sge ds = sge_of(&dst, 0, 256);
	struct ibv_send_wr rd = {.wr_id = 2, .sg_list = &ds, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = {.remote_addr = (uintptr_t)page, .rkey = mr1->rkey}};
	post_send_ok(p.qp[0], &rd);
	expect_ok(p.cq[0], 2, IBV_WC_RDMA_READ, &wc);
	cr_assert_eq(memcmp(dst.p, page, 256), 0, "the READ saw what the application wrote");

	cr_assert_eq(ibv_dereg_mr(mr2), 0);
	cr_assert_eq(ibv_dealloc_pd(pd2), 0);
	cr_assert_eq(ibv_close_device(ctx2), 0);
	cr_assert_eq(ibv_dereg_mr(mr1), 0);
	mb_free(&src);
	mb_free(&dst);
	pair_free(&p);
	free(page);
}
