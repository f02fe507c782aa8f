/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctrl's command table (UROCE_CTRL_COMMANDS): the numbers are the wire protocol
 * between a library and a daemon built apart, so each is pinned here as released; the
 * sizes and fd counts are checked against the structs by a list written apart from the
 * table, and uroce_ctrl_check_request() is checked to hold requests to them; and
 * uroce_ctrl_call(), one request and its reply for programs that speak it by hand.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "uroce_ctrl.h"

#define SZ(type) ((uint32_t)sizeof(struct uroce_ctrl_##type))
#define HANDLE SZ(handle)

/* What each command was released with: its number, name, payloads and descriptors. */
static const struct expected_cmd {
	uint32_t cmd;
	const char *name;
	uint32_t req_size, req_fds, rep_size, rep_fds, flags;
} expected[] = {
	{1, "HELLO", SZ(hello_req), 0, SZ(hello_rep), 3, 0},
	{2, "QUERY_DEVICE", 0, 0, SZ(query_device_rep), 0, 0},
	{3, "QUERY_PORT", SZ(query_port_req), 0, SZ(query_port_rep), 0, 0},
	{4, "QUERY_GID", SZ(query_gid_req), 0, SZ(query_gid_rep), 0, 0},
	{5, "ALLOC_PD", 0, 0, HANDLE, 0, 0},
	{6, "DEALLOC_PD", HANDLE, 0, 0, 0, 0},
	{7, "MAP_REGION", SZ(map_region_req), 1, HANDLE, 0, 0},
	{8, "UNMAP_REGION", HANDLE, 0, 0, 0, 0},
	{9, "REG_MR", SZ(reg_mr_req), 0, SZ(reg_mr_rep), 0, UROCE_CTRL_CMD_REQ_TAIL},
	{10, "DEREG_MR", HANDLE, 0, 0, 0, 0},
	{11, "CREATE_CHANNEL", 0, 0, HANDLE, 1, 0},
	{12, "DESTROY_CHANNEL", HANDLE, 0, 0, 0, 0},
	{13, "CREATE_CQ", SZ(create_cq_req), 0, SZ(create_cq_rep), 1, 0},
	{14, "DESTROY_CQ", HANDLE, 0, 0, 0, 0},
	{15, "CREATE_SRQ", SZ(create_srq_req), 0, SZ(create_srq_rep), 1, 0},
	{16, "MODIFY_SRQ", SZ(modify_srq_req), 0, 0, 0, 0},
	{17, "QUERY_SRQ", HANDLE, 0, SZ(query_srq_rep), 0, 0},
	{18, "DESTROY_SRQ", HANDLE, 0, 0, 0, 0},
	{19, "CREATE_QP", SZ(create_qp_req), 0, SZ(create_qp_rep), 1, 0},
	{20, "MODIFY_QP", SZ(modify_qp_req), 0, 0, 0, 0},
	{21, "QUERY_QP", SZ(query_qp_req), 0, SZ(query_qp_rep), 0, 0},
	{22, "DESTROY_QP", HANDLE, 0, 0, 0, 0},
	{23, "CREATE_AH", SZ(create_ah_req), 0, HANDLE, 0, 0},
	{24, "DESTROY_AH", HANDLE, 0, 0, 0, 0},
	{25, "STATS", SZ(stats_req), 0, SZ(stats_rep), 0, UROCE_CTRL_CMD_REP_TAIL},
	{26, "ADMIN", SZ(admin_req), 0, 0, 0, UROCE_CTRL_CMD_ADMIN},
	{27, "CM_CREATE_CHANNEL", 0, 0, HANDLE, 1, 0},
	{28, "CM_DESTROY_CHANNEL", SZ(cm_id_req), 0, 0, 0, 0},
	{29, "CM_GET_EVENT", SZ(cm_id_req), 0, SZ(cm_event), 0, 0},
	{30, "CM_CREATE_ID", SZ(cm_create_id_req), 0, HANDLE, 0, 0},
	{31, "CM_DESTROY_ID", SZ(cm_id_req), 0, 0, 0, 0},
	{32, "CM_MIGRATE_ID", SZ(cm_id_req), 0, 0, 0, 0},
	{33, "CM_BIND", SZ(cm_addr_req), 0, SZ(cm_route), 0, 0},
	{34, "CM_RESOLVE_ADDR", SZ(cm_addr_req), 0, 0, 0, 0},
	{35, "CM_RESOLVE_ROUTE", SZ(cm_id_req), 0, 0, 0, 0},
	{36, "CM_QUERY_ROUTE", SZ(cm_id_req), 0, SZ(cm_route), 0, 0},
	{37, "CM_LISTEN", SZ(cm_id_req), 0, 0, 0, 0},
	{38, "CM_CONNECT", SZ(cm_conn_req), 0, 0, 0, 0},
	{39, "CM_ACCEPT", SZ(cm_conn_req), 0, 0, 0, 0},
	{40, "CM_REJECT", SZ(cm_conn_req), 0, 0, 0, 0},
	{41, "CM_DISCONNECT", SZ(cm_id_req), 0, 0, 0, 0},
	{42, "CM_ESTABLISH", SZ(cm_id_req), 0, 0, 0, 0},
	{43, "CM_INIT_QP_ATTR", SZ(cm_id_req), 0, SZ(cm_init_qp_attr_rep), 0, 0},
	{44, "CM_SET_OPTION", SZ(cm_option_req), 0, 0, 0, 0},
	{45, "CM_JOIN_MCAST", SZ(cm_addr_req), 0, 0, 0, 0},
	{46, "CM_LEAVE_MCAST", SZ(cm_addr_req), 0, 0, 0, 0},
	{47, "ATTACH_MCAST", SZ(mcast_req), 0, 0, 0, 0},
	{48, "DETACH_MCAST", SZ(mcast_req), 0, 0, 0, 0},
	{49, "CAPTURE_START", 0, 1, 0, 0, UROCE_CTRL_CMD_ADMIN},
	{50, "RESIZE_CQ", SZ(resize_cq_req), 0, SZ(create_cq_rep), 1, 0},
	{51, "RESIZE_SRQ", SZ(modify_srq_req), 0, SZ(create_srq_rep), 1, 0},
	{52, "ALLOC_MW", SZ(alloc_mw_req), 0, SZ(alloc_mw_rep), 0, 0},
	{53, "DEALLOC_MW", HANDLE, 0, 0, 0, 0},
	{54, "REREG_MR", SZ(rereg_mr_req), 0, 0, 0, 0},
	{55, "REGION_FD", HANDLE, 0, 0, 1, 0},
	{56, "IMPORT_CONTEXT", 0, 1, 0, 0, 0},
	{57, "IMPORT_PD", HANDLE, 0, HANDLE, 0, 0},
	{58, "IMPORT_MR", HANDLE, 0, SZ(import_mr_rep), 0, 0},
	{59, "UNIMPORT_PD", HANDLE, 0, 0, 0, 0},
	{60, "UNIMPORT_MR", HANDLE, 0, 0, 0, 0},
	{61, "RESOLVE_L2", SZ(resolve_l2_req), 0, SZ(resolve_l2_rep), 0, 0},
	{62, "RES_LIST", SZ(res_list_req), 0, SZ(res_list_rep), 0, UROCE_CTRL_CMD_REP_TAIL},
	{63, "CREATE_FLOW", SZ(create_flow_req), 0, HANDLE, 0, 0},
	{64, "DESTROY_FLOW", HANDLE, 0, 0, 0, 0},
	{70, "PROVE_NET_RAW", 0, 1, 0, 0, 0},
};
#define NEXPECTED (sizeof(expected) / sizeof(expected[0]))

Test(table, numbers_are_the_released_ones)
{
	/* The enum, spelled out: a row inserted anywhere but at the end moves these. */
	cr_assert_eq(UROCE_CTRL_HELLO, 1);
	cr_assert_eq(UROCE_CTRL_QUERY_DEVICE, 2);
	cr_assert_eq(UROCE_CTRL_CREATE_QP, 19);
	cr_assert_eq(UROCE_CTRL_STATS, 25);
	cr_assert_eq(UROCE_CTRL_ADMIN, 26);
	cr_assert_eq(UROCE_CTRL_CM_CREATE_CHANNEL, 27);
	cr_assert_eq(UROCE_CTRL_CM_LEAVE_MCAST, 46);
	cr_assert_eq(UROCE_CTRL_ATTACH_MCAST, 47);
	cr_assert_eq(UROCE_CTRL_DETACH_MCAST, 48);
	cr_assert_eq(UROCE_CTRL_CAPTURE_START, 49);
	cr_assert_eq(UROCE_CTRL_RESIZE_CQ, 50);
	cr_assert_eq(UROCE_CTRL_RESIZE_SRQ, 51);
	cr_assert_eq(UROCE_CTRL_ALLOC_MW, 52);
	cr_assert_eq(UROCE_CTRL_DEALLOC_MW, 53);
	cr_assert_eq(UROCE_CTRL_REREG_MR, 54);
	cr_assert_eq(UROCE_CTRL_REGION_FD, 55);
	cr_assert_eq(UROCE_CTRL_IMPORT_CONTEXT, 56);
	cr_assert_eq(UROCE_CTRL_UNIMPORT_MR, 60);
	cr_assert_eq(UROCE_CTRL_RESOLVE_L2, 61);
	cr_assert_eq(UROCE_CTRL_RES_LIST, 62);
	cr_assert_eq(UROCE_CTRL_DESTROY_FLOW, 64);
	cr_assert_eq(UROCE_CTRL_OPEN_XRCD, 65);
	cr_assert_eq(UROCE_CTRL_CREATE_XRC_SRQ, 68);
	cr_assert_eq(UROCE_CTRL_OPEN_QP, 69);
	cr_assert_eq(UROCE_CTRL_PROVE_NET_RAW, 70);
	cr_assert_eq(UROCE_CTRL_VERSION, 13);
	/* A new command adds a row at the end (and one here); none goes. */
	cr_assert_geq(UROCE_CTRL_CMD_END, NEXPECTED + 1);
}

Test(table, each_command_has_its_released_name_sizes_and_descriptors)
{
	for (size_t i = 0; i < NEXPECTED; i++) {
		const struct expected_cmd *e = &expected[i];
		const struct uroce_ctrl_cmd_info *d = uroce_ctrl_cmd_info(e->cmd);

		cr_assert_not_null(d, "command %u", e->cmd);
		cr_assert_str_eq(d->name, e->name, "command %u", e->cmd);
		cr_assert_str_eq(uroce_ctrl_cmd_name(e->cmd), e->name);
		cr_assert_eq(d->req_size, e->req_size, "%s: request size", e->name);
		cr_assert_eq(uroce_ctrl_request_size(e->cmd), (long)e->req_size, "%s", e->name);
		cr_assert_eq(d->req_fds, e->req_fds, "%s: request fds", e->name);
		cr_assert_eq(uroce_ctrl_request_fds(e->cmd), e->req_fds, "%s", e->name);
		cr_assert_eq(d->rep_size, e->rep_size, "%s: reply size", e->name);
		cr_assert_eq(d->rep_fds, e->rep_fds, "%s: reply fds", e->name);
		cr_assert_eq(d->flags, e->flags, "%s: flags", e->name);
	}
}

Test(table, every_command_has_a_unique_name_and_sane_sizes)
{
	uint32_t cmd, other;

	cr_assert_null(uroce_ctrl_cmd_info(0));
	cr_assert_null(uroce_ctrl_cmd_info(UROCE_CTRL_CMD_END));
	cr_assert_null(uroce_ctrl_cmd_info(UINT32_MAX));
	cr_assert_str_eq(uroce_ctrl_cmd_name(0), "?");
	cr_assert_str_eq(uroce_ctrl_cmd_name(UROCE_CTRL_CMD_END), "?");
	cr_assert_eq(uroce_ctrl_request_size(UROCE_CTRL_CMD_END), -1);
	for (cmd = 1; cmd < UROCE_CTRL_CMD_END; cmd++) {
		const struct uroce_ctrl_cmd_info *d = uroce_ctrl_cmd_info(cmd);

		cr_assert_not_null(d, "command %u has no row", cmd);
		cr_assert_not_null(d->name);
		cr_assert_gt(strlen(d->name), 0, "command %u has no name", cmd);
		cr_assert_str_neq(d->name, "?");
		for (other = 1; other < cmd; other++)
			cr_assert_str_neq(d->name, uroce_ctrl_cmd_name(other),
					  "commands %u and %u share a name", other, cmd);
		cr_assert_leq(d->req_size, sizeof(union uroce_ctrl_any_payload), "%s", d->name);
		cr_assert_leq(d->rep_size, sizeof(union uroce_ctrl_any_payload), "%s", d->name);
		cr_assert_leq(d->req_fds, UROCE_CTRL_MAX_FDS, "%s", d->name);
		cr_assert_leq(d->rep_fds, UROCE_CTRL_MAX_FDS, "%s", d->name);
		cr_assert_eq(d->flags & ~(UROCE_CTRL_CMD_ADMIN | UROCE_CTRL_CMD_REQ_TAIL |
					  UROCE_CTRL_CMD_REP_TAIL), 0, "%s", d->name);
	}
}

/* A request of @p cmd: header and @p payload zero bytes. */
static size_t make_request(uint8_t *buf, uint32_t cmd, size_t payload)
{
	struct uroce_ctrl_hdr h = {.magic = UROCE_CTRL_MAGIC, .version = UROCE_CTRL_VERSION,
				   .cmd = (uint16_t)cmd, .len = (uint32_t)(sizeof(h) + payload),
				   .seq = 7};

	memset(buf, 0, sizeof(h) + payload);
	memcpy(buf, &h, sizeof(h));
	return sizeof(h) + payload;
}

Test(check_request, holds_every_command_to_its_row)
{
	static uint8_t buf[UROCE_CTRL_MSG_MAX];
	uint32_t cmd;

	for (cmd = 1; cmd < UROCE_CTRL_CMD_END; cmd++) {
		const struct uroce_ctrl_cmd_info *d = uroce_ctrl_cmd_info(cmd);
		size_t len;

		if (d->flags & UROCE_CTRL_CMD_REQ_TAIL)
			continue; /* below */
		len = make_request(buf, cmd, d->req_size);
		cr_assert_eq(uroce_ctrl_check_request(buf, len, d->req_fds), 0, "%s", d->name);
		cr_assert_eq(uroce_ctrl_check_request(buf, len, d->req_fds + 1), -EINVAL,
			     "%s with one fd too many", d->name);
		if (d->req_fds)
			cr_assert_eq(uroce_ctrl_check_request(buf, len, d->req_fds - 1), -EINVAL,
				     "%s with one fd too few", d->name);
		len = make_request(buf, cmd, d->req_size + 1);
		cr_assert_eq(uroce_ctrl_check_request(buf, len, d->req_fds), -EINVAL,
			     "%s one byte long", d->name);
		if (d->req_size) {
			len = make_request(buf, cmd, d->req_size - 1);
			cr_assert_eq(uroce_ctrl_check_request(buf, len, d->req_fds), -EINVAL,
				     "%s one byte short", d->name);
		}
	}
}

Test(check_request, refuses_numbers_that_are_no_command)
{
	uint8_t buf[sizeof(struct uroce_ctrl_hdr)];

	cr_assert_eq(uroce_ctrl_check_request(buf, make_request(buf, 0, 0), 0), -EINVAL);
	cr_assert_eq(uroce_ctrl_check_request(buf, make_request(buf, UROCE_CTRL_CMD_END, 0), 0),
		     -EINVAL);
}

Test(check_request, sizes_reg_mr_by_its_segments)
{
	static uint8_t buf[UROCE_CTRL_MSG_MAX];
	struct uroce_ctrl_reg_mr_req r = {.nseg = 3};
	size_t fixed = sizeof(struct uroce_ctrl_hdr) + sizeof(r);
	size_t len = make_request(buf, UROCE_CTRL_REG_MR,
				  sizeof(r) + 3 * sizeof(struct uroce_ctrl_mr_seg));

	memcpy(buf + sizeof(struct uroce_ctrl_hdr), &r, sizeof(r));
	cr_assert_eq(uroce_ctrl_check_request(buf, len, 0), 0);
	/* The header's len follows the message; the segment count must agree with both. */
	r.nseg = 2;
	memcpy(buf + sizeof(struct uroce_ctrl_hdr), &r, sizeof(r));
	cr_assert_eq(uroce_ctrl_check_request(buf, len, 0), -EINVAL);
	r.nseg = 0;
	len = make_request(buf, UROCE_CTRL_REG_MR, sizeof(r));
	memcpy(buf + sizeof(struct uroce_ctrl_hdr), &r, sizeof(r));
	cr_assert_eq(len, fixed);
	cr_assert_eq(uroce_ctrl_check_request(buf, len, 0), -EINVAL);
}

/* The peer's side of uroce_ctrl_call: a reply to (cmd, seq) with @p status, @p payload and
 * descriptor @p fd (-1: none), queued before the call so one thread plays both ends. */
static void queue_reply(int peer, uint32_t cmd, uint32_t seq, int32_t status,
			const void *payload, uint32_t len, int fd)
{
	uint8_t buf[sizeof(struct uroce_ctrl_hdr) + 64];
	struct uroce_ctrl_hdr h = {.magic = UROCE_CTRL_MAGIC,
				   .version = UROCE_CTRL_VERSION,
				   .cmd = (uint16_t)cmd,
				   .len = (uint32_t)sizeof(h) + len,
				   .seq = seq,
				   .status = status};

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), payload, len);
	cr_assert_eq(uroce_ctrl_send(peer, buf, h.len, &fd, fd >= 0), (long)h.len);
}

/* One request out as asked, the reply's status, payload and descriptors back; a reply
 * that is not this request's, is too short, or never comes is an error, never a
 * success with stale bytes. */
Test(call, sends_one_request_and_takes_its_reply)
{
	struct uroce_ctrl_handle req = {.handle = 7}, rep = {0};
	uint8_t got[sizeof(struct uroce_ctrl_hdr) + sizeof(req)];
	struct uroce_ctrl_hdr h;
	int sv[2], fds[2] = {-1, -1}, devnull = open("/dev/null", O_RDONLY);
	unsigned int nfds = 9;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	queue_reply(sv[1], UROCE_CTRL_DEALLOC_PD, 5, 0, &req, sizeof(req), devnull);
	cr_assert_eq(uroce_ctrl_call(sv[0], 5, UROCE_CTRL_DEALLOC_PD, &req, sizeof(req), NULL, 0,
				     &rep, sizeof(rep), fds, 2, &nfds),
		     0);
	cr_assert_eq(rep.handle, 7u);
	cr_assert_eq(nfds, 1u);
	cr_assert_geq(fds[0], 0);
	close(fds[0]);
	cr_assert_eq(recv(sv[1], got, sizeof(got), 0), (ssize_t)sizeof(got));
	memcpy(&h, got, sizeof(h));
	cr_assert(h.magic == UROCE_CTRL_MAGIC && h.cmd == UROCE_CTRL_DEALLOC_PD && h.seq == 5 &&
		  h.len == sizeof(got) && uroce_ctrl_check_request(got, sizeof(got), 0) == 0);

	queue_reply(sv[1], UROCE_CTRL_DEALLOC_PD, 6, -EBUSY, NULL, 0, -1);
	cr_assert_eq(uroce_ctrl_call(sv[0], 6, UROCE_CTRL_DEALLOC_PD, &req, sizeof(req), NULL, 0,
				     NULL, 0, NULL, 0, &nfds),
		     -EBUSY);
	cr_assert_eq(nfds, 0u);
	queue_reply(sv[1], UROCE_CTRL_DEALLOC_PD, 99, 0, NULL, 0, -1);
	cr_assert_eq(uroce_ctrl_call(sv[0], 8, UROCE_CTRL_DEALLOC_PD, &req, sizeof(req), NULL, 0,
				     NULL, 0, NULL, 0, NULL),
		     -EPROTO, "another request's reply");
	queue_reply(sv[1], UROCE_CTRL_ALLOC_PD, 9, 0, NULL, 0, -1);
	cr_assert_eq(uroce_ctrl_call(sv[0], 9, UROCE_CTRL_ALLOC_PD, NULL, 0, NULL, 0, &rep,
				     sizeof(rep), NULL, 0, NULL),
		     -EPROTO, "a reply shorter than its payload");
	close(sv[1]);
	cr_assert_lt(uroce_ctrl_call(sv[0], 10, UROCE_CTRL_ALLOC_PD, NULL, 0, NULL, 0, NULL, 0,
				     NULL, 0, NULL),
		     0, "a peer that is gone");
	close(sv[0]);
}
