/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uroced's control path under attack: sequences of requests (most made to pass the
 * header check, so they reach the handlers), memfds handed over with MAP_REGION, and
 * work requests written straight into the rings the daemon shares, all run by the
 * daemon's core, lib/rnic, against a real transport and host stack. No DPDK: lib/rnic
 * has no I/O of its own, and its host's ops are played here.
 *
 * Oracles: nothing crashes or reads out of bounds (ASan/UBSan); every request gets
 * exactly one reply (or waits for a neighbour, which never answers here, and is then
 * failed by the harness), and a successful one carries the payload and descriptors its
 * command's row says; when the connection goes, every object and mapping of it is
 * freed (the daemon's own counters return to zero); and the daemon never maps over its
 * own memory: every mmap with MAP_FIXED must land inside a mapping that lib/rnic made
 * itself and still holds (mmap and munmap are wrapped at link time, see meson.build).
 * Without that last one, a MAP_FIXED over the heap or a library goes unseen until
 * something happens to touch it, and one past the end of a reservation into nothing not
 * at all.
 *
 * Lengths and offsets are where a hostile client wins (a sum that wraps in 64 bits, an
 * end that passes a bound): random bytes almost never land on 2^63 - 4 KiB, so besides
 * requests given as bytes there are requests built from edge values (kind 4, below).
 * Each length, offset, size, count or depth field of a command (the table "fields")
 * takes one selector byte: an edge value (0, 1, a page, 2^31, 2^32, 2^63, 2^64 - a page,
 * ...), that value plus or minus a page or one, or the value that brings the sum of the
 * request's summed fields (REG_MR's segment lengths) to it, so that the sum wraps to a
 * small total; a handle field names a live object of its type. MAP_REGION gets a real
 * sealed memfd of the size it asks, sparse, up to the 2^63 - 1 bytes that tmpfs allows.
 *
 * Input: records [kind (1), length (1), bytes...]:
 *   kind % 8 == 0: a request, header fixed up (magic, version, len; cmd: byte 0 % N + 1,
 *                  so byte 0 = cmd - 1 for the N commands of UROCE_CTRL_COMMANDS)
 *   kind % 8 == 1, 5: a request as given (header included), unfixed
 *   kind % 8 == 2: a send WQE written into QP handle (byte 0) 's SQ ring and committed
 *   kind % 8 == 3: a recv WQE into a QP's RQ ring; then the data path runs once
 *   kind % 8 == 4: a request from edge values: byte 0 as for kind 0, then one selector
 *                  per field of the command (REG_MR: its header's, then the segment
 *                  count, then region, offset and length of each segment), then bytes
 *                  that fill the rest of the payload (laid down before the selectors)
 *   kind % 8 == 6, 7: a send (6) or recv (7) WQE as for kinds 2 and 3, byte 0 the QP,
 *                  then one selector per length, address and key field, then the bytes
 * A selector s: s >> 5 == 7 keeps the bytes' value; else edge value s & 31, and s >> 5
 * 0: as is, 1: plus a page, 2: minus a page, 3: plus one, 4: minus one, 5: minus the sum
 * so far, 6: times a page. For a handle: s == 0 keeps the bytes, else the ((s - 1) % n)th
 * newest of the n live objects of the type (a key: of an MR).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_check.h"
#include "rnic_internal.h"

static struct uroce_rnic *nic;
static struct uroce_ip_stack *ip;
static uint64_t now_ns;

/* ---- the daemon's own memory: mmap and munmap, wrapped (-Wl,--wrap) ------------------ */

/*
 * The mappings the code under test made without MAP_FIXED and has not unmapped: the only
 * places where a MAP_FIXED of its may land (REG_MR reserves an MR's span, then maps
 * each segment over it). Ranges are page-rounded; an munmap cuts what it covers.
 */
#define GUARD_SPANS 4096
struct guard_span {
	uintptr_t lo, hi;
};
static struct guard_span guard_spans[GUARD_SPANS];
static size_t guard_nspans;

/* mmap is mmap64 where _FILE_OFFSET_BITS is 64 (as meson builds): both are wrapped. */
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *__real_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __real_munmap(void *addr, size_t len);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int __wrap_munmap(void *addr, size_t len);

static uintptr_t guard_page_up(uintptr_t len)
{
	uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);

	return len > UINTPTR_MAX - (ps - 1) ? UINTPTR_MAX & ~(ps - 1) : (len + ps - 1) & ~(ps - 1);
}

static bool guard_holds(uintptr_t lo, uintptr_t len)
{
	for (size_t i = 0; i < guard_nspans; i++)
		if (lo >= guard_spans[i].lo && lo < guard_spans[i].hi &&
		    len <= guard_spans[i].hi - lo)
			return true;
	return false;
}

static void guard_cut(uintptr_t lo, uintptr_t hi)
{
	for (size_t i = 0; i < guard_nspans;) {
		struct guard_span *g = &guard_spans[i];

		if (hi <= g->lo || lo >= g->hi) {
			i++;
		} else if (lo > g->lo && hi < g->hi) {
			/* A hole in the middle: the span becomes two. */
			CHECK(guard_nspans < GUARD_SPANS);
			guard_spans[guard_nspans].lo = hi;
			guard_spans[guard_nspans++].hi = g->hi;
			g->hi = lo;
			i++;
		} else if (lo > g->lo) {
			g->hi = lo;
			i++;
		} else if (hi < g->hi) {
			g->lo = hi;
			i++;
		} else {
			*g = guard_spans[--guard_nspans];
		}
	}
}

static void *guard_mmap(void *(*real)(void *, size_t, int, int, int, off_t), void *addr, size_t len,
			int prot, int flags, int fd, off_t off)
{
	uintptr_t span = guard_page_up(len);
	void *p;

	if ((flags & MAP_FIXED) && (len == 0 || !guard_holds((uintptr_t)addr, span))) {
		fprintf(stderr,
			"fuzz_daemon_ctrl: mmap(%p, %zu, MAP_FIXED) is not inside a mapping of "
			"the daemon's own: it would replace whatever is there\n",
			addr, len);
		__builtin_trap();
	}
	p = real(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED && !(flags & MAP_FIXED)) {
		guard_cut((uintptr_t)p, (uintptr_t)p + span);
		CHECK(guard_nspans < GUARD_SPANS);
		guard_spans[guard_nspans].lo = (uintptr_t)p;
		guard_spans[guard_nspans++].hi = (uintptr_t)p + span;
	}
	return p;
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return guard_mmap(__real_mmap, addr, len, prot, flags, fd, off);
}

void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return guard_mmap(__real_mmap64, addr, len, prot, flags, fd, off);
}

int __wrap_munmap(void *addr, size_t len)
{
	uintptr_t lo = (uintptr_t)addr, span = guard_page_up(len);
	int rc = __real_munmap(addr, len);

	if (rc == 0)
		guard_cut(lo, span > UINTPTR_MAX - lo ? UINTPTR_MAX : lo + span);
	return rc;
}

/* ---- the host: lib/rnic's ops, with no port, socket or file ------------------------- */

static unsigned int replies;

static int host_reply(void *io_ctx, void *conn, const void *msg, uint32_t len, const int *fds,
		      unsigned int nfds)
{
	const struct uroce_ctrl_cmd_info *info;
	struct uroce_ctrl_hdr h;
	uint32_t plen;

	(void)io_ctx;
	(void)conn;
	CHECK(len >= sizeof(h));
	memcpy(&h, msg, sizeof(h));
	CHECK(h.magic == UROCE_CTRL_MAGIC && h.version == UROCE_CTRL_VERSION && h.len == len);
	plen = len - (uint32_t)sizeof(h);
	info = uroce_ctrl_cmd_info(h.cmd);
	CHECK(h.status <= 0);
	CHECK(len <= UROCE_CTRL_MSG_MAX);
	CHECK(nfds <= UROCE_CTRL_MAX_FDS);
	CHECK(h.status == 0 || (plen == 0 && nfds == 0));
	for (unsigned int i = 0; h.status == 0 && i < nfds; i++)
		CHECK(fds[i] >= 0);
	if (h.status == 0) {
		/* What the command's row promises the client (lib/client checks the same). */
		CHECK(info);
		CHECK((info->flags & UROCE_CTRL_CMD_REP_TAIL) ? plen >= info->rep_size :
								plen == info->rep_size);
		CHECK(nfds == info->rep_fds);
	}
	replies++;
	return 0;
}

static int host_tx(void *io_ctx, const uint8_t *frame, uint32_t len)
{
	(void)io_ctx;
	(void)frame;
	(void)len;
	return 0;
}

static enum uroce_rnic_link host_link(void *io_ctx, uint32_t *speed_mbps)
{
	(void)io_ctx;
	*speed_mbps = 0;
	return UROCE_RNIC_LINK_UP;
}

static int host_mcast(void *io_ctx, const uint8_t mac[6])
{
	(void)io_ctx;
	CHECK(mac[0] & 1);
	return 0;
}

static uint64_t host_now(void *io_ctx)
{
	(void)io_ctx;
	return now_ns;
}

static void host_log(void *io_ctx, int level, const char *fmt, va_list ap)
{
	(void)io_ctx;
	(void)level;
	(void)fmt;
	(void)ap;
}

static int host_admin(void *io_ctx, const struct uroce_ctrl_admin_req *req)
{
	(void)io_ctx;
	if (req->op == UROCE_CTRL_ADMIN_FAULT)
		for (int i = 0; i < 8; i++)
			if (!(req->rates[i] >= 0 && req->rates[i] <= 1))
				return -EINVAL;
	return 0;
}

static int host_capture_start(void *io_ctx, int fd)
{
	(void)io_ctx;
	close(fd);
	return -EPERM; /* no files from a fuzzer */
}

static void host_stats(void *io_ctx,
		       void (*put)(void *out, const char *prefix, const char *name, uint64_t v),
		       void *out)
{
	(void)io_ctx;
	put(out, "daemon.", "fuzz", 1);
}

static const struct uroce_rnic_ops host_ops = {
	.reply = host_reply,
	.tx = host_tx,
	.link = host_link,
	.mcast_add = host_mcast,
	.mcast_del = host_mcast,
	.now_ns = host_now,
	.log = host_log,
	.admin = host_admin,
	.capture_start = host_capture_start,
	.stats = host_stats,
};

/* ---- harness ---------------------------------------------------------------------------- */

static void setup_once(void)
{
	static bool done;
	static struct uroce_conf conf;
	struct uroce_ip_cfg ic;
	const uint8_t mac[6] = {0x02, 0, 0, 0, 0, 1};
	struct uroce_rnic_cfg cfg = {.conf = &conf, .eth_mtu = 1500, .ops = &host_ops, .seed = 1};

	if (done)
		return;
	done = true;
	uroce_ip_cfg_init(&ic);
	memcpy(ic.mac, mac, 6);
	ic.v4[0][0] = 10;
	ic.v4[0][3] = 1;
	ic.v4_count = 1;
	ic.tx = host_tx;
	ip = uroce_ip_create(&ic);
	CHECK(ip);
	uroce_conf_defaults(&conf);
	conf.host.n_ipv4 = 1;
	memcpy(&conf.host.ipv4[0], ic.v4[0], 4);
	memcpy(cfg.mac, mac, 6);
	cfg.ip = ip;
	nic = uroce_rnic_create(&cfg);
	CHECK(nic);
}

/* A sealed memfd of @p size, as the client library makes for MRs. Sparse: any size that
 * tmpfs takes (up to 2^63 - 1 bytes) costs only the pages the daemon touches, and a
 * region of 2^63 - 4 KiB is what lets three segment lengths wrap a 64-bit sum. */
static int make_region_fd(uint64_t size)
{
	int fd;

	if (size == 0 || size > INT64_MAX)
		return -1;
	fd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) != 0 || fcntl(fd, F_ADD_SEALS, UROCE_SHM_SEALS) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void request(struct uroce_rnic_client *c, uint8_t *msg, uint32_t len)
{
	unsigned int before = replies, nfds = 0;
	struct uroce_ctrl_hdr h;
	int fd = -1;

	memcpy(&h, msg, sizeof(h));
	if (h.cmd == UROCE_CTRL_MAP_REGION) {
		uint64_t size;

		if (len >= sizeof(h) + sizeof(size)) {
			memcpy(&size, msg + sizeof(h), sizeof(size));
			fd = make_region_fd(size);
			if (fd < 0) /* a sealed fd of another size: refused */
				fd = make_region_fd(4096);
			nfds = fd >= 0;
		}
	} else if (uroce_ctrl_request_fds(h.cmd) == 1) {
		/* Any other command that takes a file (CAPTURE_START) gets one to write. */
		fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		nfds = fd >= 0;
	}
	if (uroce_ctrl_check_request(msg, len, nfds) != 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (!uroce_rnic_handle(c, msg, len, &fd, nfds)) {
		/* Waiting for a neighbour that will not answer: fail it as a timeout would. */
		CHECK(c->pending.active);
		uroce_ip_cancel(ip, c->id);
		CHECK(uroce_rnic_neigh_resolved(nic, c->id, NULL, -EHOSTUNREACH) == c);
	}
	CHECK(replies == before + 1);
}

/* ---- requests and WQEs from edge values ------------------------------------------------ */

#define PAGE 4096ull
/* The values where a bound check or a sum goes wrong; 32 of them, a selector's low bits. */
static const uint64_t edges[32] = {
	0,
	1,
	PAGE - 1,
	PAGE,
	2 * PAGE,
	3 * PAGE,
	255,
	256,
	0xffff,
	0x10000,
	1ull << 20,
	64ull << 20,
	0x7fffffff,
	0x80000000,
	0xffffffff - PAGE + 1,
	0xffffffff,
	1ull << 32,
	(1ull << 32) + PAGE,
	1ull << 40,
	1ull << 47,
	1ull << 48,
	1ull << 62,
	(1ull << 63) - 2 * PAGE,
	(1ull << 63) - PAGE,
	(1ull << 63) - 1,
	1ull << 63,
	(1ull << 63) + PAGE,
	(1ull << 63) + 2 * PAGE,
	-2 * PAGE,
	-PAGE,
	-2ull,
	-1ull,
};

enum field_kind {
	F_EDGE,	  /* a length, offset, size, count or depth */
	F_SUM,	  /* the same, summed over the request (REG_MR's segment lengths) */
	F_TOTAL,  /* what the summed fields must total (REG_MR's length): F_EDGE here */
	F_HANDLE, /* a live object of type .type (RNIC_OBJ_FREE: of any type) */
	F_LKEY,	  /* a live MR's L_Key */
	F_RKEY,	  /* a live MR's R_Key */
};

struct field {
	uint16_t cmd; /* 0: a WQE's (send_fields, recv_fields) */
	uint16_t offset;
	uint8_t width;
	uint8_t kind;
	uint8_t type;
};

#define FIELD(cmd, st, member, kind, type)                                                 \
	{                                                                                  \
		UROCE_CTRL_##cmd, (uint16_t)offsetof(struct uroce_ctrl_##st, member),      \
			(uint8_t)sizeof(((struct uroce_ctrl_##st *)0)->member), kind, type \
	}
#define EDGE(cmd, st, member)	   FIELD(cmd, st, member, F_EDGE, 0)
#define HANDLE(cmd, st, member, t) FIELD(cmd, st, member, F_HANDLE, RNIC_OBJ_##t)

/* Every request field of lib/ctrl/uroce_ctrl.h that is a length, offset, size, count,
 * depth or index the daemon bounds, or a handle a sequence needs to hit; in payload order. */
static const struct field fields[] = {
	EDGE(QUERY_PORT, query_port_req, port),
	EDGE(QUERY_GID, query_gid_req, port),
	EDGE(QUERY_GID, query_gid_req, index),
	HANDLE(DEALLOC_PD, handle, handle, PD),
	EDGE(MAP_REGION, map_region_req, size),
	HANDLE(UNMAP_REGION, handle, handle, REGION),
	HANDLE(REG_MR, reg_mr_req, pd, PD),
	EDGE(REG_MR, reg_mr_req, addr),
	FIELD(REG_MR, reg_mr_req, length, F_TOTAL, 0),
	EDGE(REG_MR, reg_mr_req, iova),
	HANDLE(DEREG_MR, handle, handle, MR),
	HANDLE(DESTROY_CHANNEL, handle, handle, CHANNEL),
	EDGE(CREATE_CQ, create_cq_req, cqe),
	HANDLE(CREATE_CQ, create_cq_req, channel, CHANNEL),
	EDGE(CREATE_CQ, create_cq_req, comp_vector),
	HANDLE(DESTROY_CQ, handle, handle, CQ),
	HANDLE(CREATE_SRQ, create_srq_req, pd, PD),
	EDGE(CREATE_SRQ, create_srq_req, attr.max_wr),
	EDGE(CREATE_SRQ, create_srq_req, attr.max_sge),
	EDGE(CREATE_SRQ, create_srq_req, attr.srq_limit),
	HANDLE(MODIFY_SRQ, modify_srq_req, srq, SRQ),
	EDGE(MODIFY_SRQ, modify_srq_req, attr.max_wr),
	EDGE(MODIFY_SRQ, modify_srq_req, attr.max_sge),
	EDGE(MODIFY_SRQ, modify_srq_req, attr.srq_limit),
	HANDLE(QUERY_SRQ, handle, handle, SRQ),
	HANDLE(DESTROY_SRQ, handle, handle, SRQ),
	HANDLE(CREATE_QP, create_qp_req, pd, PD),
	HANDLE(CREATE_QP, create_qp_req, send_cq, CQ),
	HANDLE(CREATE_QP, create_qp_req, recv_cq, CQ),
	HANDLE(CREATE_QP, create_qp_req, srq, SRQ),
	EDGE(CREATE_QP, create_qp_req, cap.max_send_wr),
	EDGE(CREATE_QP, create_qp_req, cap.max_recv_wr),
	EDGE(CREATE_QP, create_qp_req, cap.max_send_sge),
	EDGE(CREATE_QP, create_qp_req, cap.max_recv_sge),
	EDGE(CREATE_QP, create_qp_req, cap.max_inline_data),
	HANDLE(CREATE_QP, create_qp_req, xrcd, XRCD),
	HANDLE(MODIFY_QP, modify_qp_req, qp, QP),
	EDGE(MODIFY_QP, modify_qp_req, attr.qkey),
	EDGE(MODIFY_QP, modify_qp_req, attr.rq_psn),
	EDGE(MODIFY_QP, modify_qp_req, attr.sq_psn),
	EDGE(MODIFY_QP, modify_qp_req, attr.dest_qp_num),
	EDGE(MODIFY_QP, modify_qp_req, attr.cap.max_send_wr),
	EDGE(MODIFY_QP, modify_qp_req, attr.cap.max_recv_wr),
	EDGE(MODIFY_QP, modify_qp_req, attr.cap.max_inline_data),
	EDGE(MODIFY_QP, modify_qp_req, attr.ah_attr.grh.sgid_index),
	EDGE(MODIFY_QP, modify_qp_req, attr.pkey_index),
	EDGE(MODIFY_QP, modify_qp_req, attr.max_rd_atomic),
	EDGE(MODIFY_QP, modify_qp_req, attr.max_dest_rd_atomic),
	EDGE(MODIFY_QP, modify_qp_req, attr.port_num),
	EDGE(MODIFY_QP, modify_qp_req, attr.timeout),
	HANDLE(QUERY_QP, query_qp_req, qp, QP),
	HANDLE(DESTROY_QP, handle, handle, QP),
	HANDLE(CREATE_AH, create_ah_req, pd, PD),
	EDGE(CREATE_AH, create_ah_req, attr.grh.sgid_index),
	EDGE(CREATE_AH, create_ah_req, attr.port_num),
	HANDLE(DESTROY_AH, handle, handle, AH),
	EDGE(CM_CONNECT, cm_conn_req, param.private_data_len),
	EDGE(CM_CONNECT, cm_conn_req, param.responder_resources),
	EDGE(CM_CONNECT, cm_conn_req, param.initiator_depth),
	EDGE(CM_ACCEPT, cm_conn_req, param.private_data_len),
	EDGE(CM_REJECT, cm_conn_req, param.private_data_len),
	EDGE(CM_SET_OPTION, cm_option_req, value),
	HANDLE(ATTACH_MCAST, mcast_req, qp, QP),
	HANDLE(DETACH_MCAST, mcast_req, qp, QP),
	HANDLE(RESIZE_CQ, resize_cq_req, cq, CQ),
	EDGE(RESIZE_CQ, resize_cq_req, cqe),
	HANDLE(RESIZE_SRQ, modify_srq_req, srq, SRQ),
	EDGE(RESIZE_SRQ, modify_srq_req, attr.max_wr),
	EDGE(RESIZE_SRQ, modify_srq_req, attr.max_sge),
	EDGE(RESIZE_SRQ, modify_srq_req, attr.srq_limit),
	HANDLE(ALLOC_MW, alloc_mw_req, pd, PD),
	HANDLE(DEALLOC_MW, handle, handle, MW),
	HANDLE(REREG_MR, rereg_mr_req, mr, MR),
	HANDLE(REREG_MR, rereg_mr_req, to, MR),
	HANDLE(REGION_FD, handle, handle, REGION),
	HANDLE(IMPORT_PD, handle, handle, PD),
	HANDLE(IMPORT_MR, handle, handle, MR),
	HANDLE(UNIMPORT_PD, handle, handle, PD),
	HANDLE(UNIMPORT_MR, handle, handle, MR),
	EDGE(RES_LIST, res_list_req, start),
	HANDLE(CREATE_FLOW, create_flow_req, qp, QP),
	EDGE(CREATE_FLOW, create_flow_req, attr_size),
	HANDLE(DESTROY_FLOW, handle, handle, FLOW),
	HANDLE(CLOSE_XRCD, handle, handle, XRCD),
	HANDLE(CREATE_XRC_SRQ, create_xrc_srq_req, pd, PD),
	HANDLE(CREATE_XRC_SRQ, create_xrc_srq_req, xrcd, XRCD),
	HANDLE(CREATE_XRC_SRQ, create_xrc_srq_req, cq, CQ),
	EDGE(CREATE_XRC_SRQ, create_xrc_srq_req, attr.max_wr),
	EDGE(CREATE_XRC_SRQ, create_xrc_srq_req, attr.max_sge),
	EDGE(CREATE_XRC_SRQ, create_xrc_srq_req, attr.srq_limit),
	HANDLE(OPEN_QP, open_qp_req, xrcd, XRCD),
	EDGE(OPEN_QP, open_qp_req, qpn),
};

/* REG_MR's segments, each after the segment count: offsets within one segment. */
static const struct field seg_fields[] = {
	{0, offsetof(struct uroce_ctrl_mr_seg, region), 4, F_HANDLE, RNIC_OBJ_REGION},
	{0, offsetof(struct uroce_ctrl_mr_seg, offset), 8, F_EDGE, 0},
	{0, offsetof(struct uroce_ctrl_mr_seg, length), 8, F_SUM, 0},
};

#define WQE_FIELD(st, member, kind)                                                     \
	{                                                                               \
		0, (uint16_t)offsetof(struct uroce_ctrl_##st, member),                  \
			(uint8_t)sizeof(((struct uroce_ctrl_##st *)0)->member), kind, 0 \
	}

/* A send WQE's: the bind's first, as they share the SGEs' bytes (a selector that keeps
 * the bytes leaves what an earlier field wrote). */
static const struct field send_fields[] = {
	WQE_FIELD(send_wqe, bind.mr_lkey, F_LKEY),
	WQE_FIELD(send_wqe, bind.addr, F_EDGE),
	WQE_FIELD(send_wqe, bind.length, F_EDGE),
	WQE_FIELD(send_wqe, remote_addr, F_EDGE),
	WQE_FIELD(send_wqe, rkey, F_RKEY),
	WQE_FIELD(send_wqe, compare_add, F_EDGE),
	WQE_FIELD(send_wqe, num_sge, F_EDGE),
	WQE_FIELD(send_wqe, inline_len, F_EDGE),
	WQE_FIELD(send_wqe, sg_list[0].addr, F_EDGE),
	WQE_FIELD(send_wqe, sg_list[0].length, F_SUM),
	WQE_FIELD(send_wqe, sg_list[0].lkey, F_LKEY),
	WQE_FIELD(send_wqe, sg_list[1].addr, F_EDGE),
	WQE_FIELD(send_wqe, sg_list[1].length, F_SUM),
	WQE_FIELD(send_wqe, sg_list[1].lkey, F_LKEY),
};

static const struct field recv_fields[] = {
	WQE_FIELD(recv_wqe, num_sge, F_EDGE),
	WQE_FIELD(recv_wqe, sg_list[0].addr, F_EDGE),
	WQE_FIELD(recv_wqe, sg_list[0].length, F_SUM),
	WQE_FIELD(recv_wqe, sg_list[0].lkey, F_LKEY),
	WQE_FIELD(recv_wqe, sg_list[1].addr, F_EDGE),
	WQE_FIELD(recv_wqe, sg_list[1].length, F_SUM),
	WQE_FIELD(recv_wqe, sg_list[1].lkey, F_LKEY),
};

/* The ((sel - 1) % n)th newest of the client's n live objects of @p type (RNIC_OBJ_FREE:
 * any); 0 if it has none. */
static uint32_t newest_handle(struct uroce_rnic_client *c, uint8_t type, uint8_t sel)
{
	uint32_t n = 0, h;

	for (h = c->nobjs; h >= 1; h--)
		if (type == RNIC_OBJ_FREE ? c->objs[h - 1].type != RNIC_OBJ_FREE :
					    c->objs[h - 1].type == type)
			n++;
	if (n == 0)
		return 0;
	n = (uint32_t)(sel - 1) % n;
	for (h = c->nobjs; h >= 1; h--)
		if (type == RNIC_OBJ_FREE ? c->objs[h - 1].type != RNIC_OBJ_FREE :
					    c->objs[h - 1].type == type) {
			if (n-- == 0)
				break;
		}
	return h;
}

/* Writes field @p f at @p base as its selector @p sel says; @p sum: the F_SUM fields'
 * total so far, which this one joins. */
static void put_field(struct uroce_rnic_client *c, uint8_t *base, const struct field *f,
		      uint8_t sel, uint64_t *sum)
{
	uint64_t v = 0, e = edges[sel & 31];

	memcpy(&v, base + f->offset, f->width); /* little-endian: the low bytes */
	switch (f->kind) {
	case F_HANDLE:
	case F_LKEY:
	case F_RKEY: {
		uint32_t h, lkey, rkey;
		struct rnic_mr *m;

		if (sel == 0)
			return;
		if (f->kind == F_HANDLE) {
			h = newest_handle(c, f->type, sel);
			if (h)
				v = h;
			break;
		}
		h = newest_handle(c, RNIC_OBJ_MR, sel);
		m = h ? rnic_obj_get(c, h, RNIC_OBJ_MR) : NULL;
		if (!m || !m->tp)
			return;
		uroce_tp_mr_keys(m->tp, &lkey, &rkey);
		v = f->kind == F_LKEY ? lkey : rkey;
		break;
	}
	default:
		switch (sel >> 5) {
		case 0:
			v = e;
			break;
		case 1:
			v = e + PAGE;
			break;
		case 2:
			v = e - PAGE;
			break;
		case 3:
			v = e + 1;
			break;
		case 4:
			v = e - 1;
			break;
		case 5:
			v = e - *sum; /* the summed fields now total e (mod 2^64) */
			break;
		case 6:
			v = e * PAGE;
			break;
		default:
			break; /* the bytes' own */
		}
		if (f->kind == F_SUM)
			*sum += v;
	}
	memcpy(base + f->offset, &v, f->width);
}

/*
 * A kind 4 record's request into @p msg (room for the header and 512 bytes of payload):
 * @p p[0] picks the command, the command's selectors follow, then the bytes.
 * @return the message's length, 0 if the record is too short for its selectors.
 */
static uint32_t edge_request(struct uroce_rnic_client *c, uint8_t *msg, const uint8_t *p, size_t n)
{
	struct uroce_ctrl_hdr h = {.magic = UROCE_CTRL_MAGIC, .version = UROCE_CTRL_VERSION};
	uint8_t *payload = msg + sizeof(h);
	size_t nsel = 0, at = 1, i, k;
	uint32_t nseg = 0;
	uint64_t sum = 0;

	if (n < 1)
		return 0;
	h.cmd = (uint16_t)(1 + p[0] % (UROCE_CTRL_CMD_END - 1));
	h.len = (uint32_t)(sizeof(h) + (size_t)uroce_ctrl_request_size(h.cmd));
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		nsel += fields[i].cmd == h.cmd;
	if (h.cmd == UROCE_CTRL_REG_MR) {
		if (n < 1 + nsel + 1)
			return 0;
		nseg = 1 + p[1 + nsel] % 8;
		nsel += 1 + 3 * (size_t)nseg;
		h.len += nseg * (uint32_t)sizeof(struct uroce_ctrl_mr_seg);
	}
	if (n < 1 + nsel)
		return 0;
	memset(msg, 0, sizeof(h) + 512);
	memcpy(payload, p + 1 + nsel, n - 1 - nsel);
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (fields[i].cmd == h.cmd)
			put_field(c, payload, &fields[i], p[at++], &sum);
	if (h.cmd == UROCE_CTRL_REG_MR) {
		struct uroce_ctrl_reg_mr_req r;

		at++; /* the segment count's */
		memcpy(&r, payload, sizeof(r));
		r.nseg = nseg;
		memcpy(payload, &r, sizeof(r));
		for (i = 0; i < nseg; i++)
			for (k = 0; k < 3; k++)
				put_field(c,
					  payload + sizeof(r) +
						  i * sizeof(struct uroce_ctrl_mr_seg),
					  &seg_fields[k], p[at++], &sum);
	}
	memcpy(msg, &h, sizeof(h));
	return h.len;
}

static void *qp_ring(struct uroce_rnic_client *c, uint8_t handle, bool sq, struct uroce_ring *out)
{
	struct rnic_qp *q = rnic_obj_get(c, handle, RNIC_OBJ_QP);
	struct uroce_ring *r;

	if (!q || (!sq && q->srq))
		return NULL;
	r = sq ? &q->sq : &q->rq;
	/* The application's view: a producer over the same shared memory. */
	if (uroce_ring_open(out, r->sh,
			    (uint64_t)r->elem_size * (r->mask + 1) +
				    sizeof(struct uroce_ring_shared),
			    true) != 0)
		return NULL;
	out->mine = atomic_load(&r->sh->prod);
	out->theirs = atomic_load(&r->sh->cons);
	return q;
}

/* ---- the mutator: whole edge records, so that summed fields wrap together ---------------- */

/*
 * libFuzzer's byte mutations do not make a wrapping sum: a wrap needs several selectors
 * right at once (two segment lengths near 2^63, a third that completes the sum to the
 * MR's small length, all on a region that large), and no coverage rewards the first
 * before the last. So, one mutation in four, a whole record is written and put between
 * two records of the input (half the time in place of one): a request from edge values
 * (kind 4), of a command with summed fields a time in four and else of any command of
 * the table, or a WQE (kinds 6, 7). Its selectors lean to what breaks bounds: summed
 * fields of 2^62 and more but the last, which completes the sum to what the request's
 * total field says (else to a small edge value), offsets of 0, handles of the newest
 * objects (one region for all of a REG_MR's segments). A REG_MR comes, half the time,
 * after a MAP_REGION of a page-aligned edge size (2^62 and more half of those).
 */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

static uint64_t mut_state;

static uint32_t mut_rand(uint32_t n)
{
	mut_state ^= mut_state << 13;
	mut_state ^= mut_state >> 7;
	mut_state ^= mut_state << 17;
	return (uint32_t)(mut_state % n);
}

/* Edge indices (edges[]) of page multiples: sizes and offsets that pass the page check;
 * small ones, for totals; 2^62 and more, for summed fields. */
static const uint8_t page_edges[] = {3, 4, 5, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23, 28, 29};
static const uint8_t small_edges[] = {3, 4, 5, 10, 11};
static const uint8_t large_edges[] = {21, 22, 23, 25, 26, 27, 28, 29};

#define PICK(a) ((a)[mut_rand(sizeof(a))])

static uint8_t mut_edge(void)
{
	switch (mut_rand(8)) {
	case 0:
	case 1:
		return PICK(page_edges);
	case 2:
		return PICK(large_edges);
	case 3:
		return (uint8_t)((1 + mut_rand(4)) << 5 | mut_rand(32)); /* +-page, +-1 */
	case 4:
		return 0xe0; /* the bytes' own */
	default:
		return (uint8_t)mut_rand(32);
	}
}

static uint8_t mut_handle(void)
{
	uint32_t r = mut_rand(8);

	return (uint8_t)(r < 4 ? 1 : r < 6 ? 0 : 2 + mut_rand(2));
}

/*
 * Selectors for the @p n fields at @p f into @p out. @p total: the selector of the
 * request's F_TOTAL field (set here if among them); @p region: the one handle selector
 * of REG_MR's segments; @p last_sum: where the last F_SUM's selector went.
 */
static void mut_fields(const struct field *f, size_t n, uint8_t *out, uint8_t *total,
		       uint8_t region, uint8_t **last_sum)
{
	for (size_t i = 0; i < n; i++) {
		switch (f[i].kind) {
		case F_HANDLE:
			out[i] = f[i].type == RNIC_OBJ_REGION ? region : mut_handle();
			break;
		case F_LKEY:
		case F_RKEY:
			out[i] = mut_handle();
			break;
		case F_SUM:
			out[i] = mut_rand(4) ? PICK(large_edges) : mut_edge();
			*last_sum = &out[i];
			break;
		case F_TOTAL:
			out[i] = mut_rand(4) ? PICK(small_edges) : mut_edge();
			*total = out[i];
			break;
		default:
			/* An offset into a region: mostly its start, for the length to fit. */
			out[i] = f == seg_fields && mut_rand(4) ? 0 : mut_edge();
		}
	}
}

/* One record (or a MAP_REGION and a REG_MR) into @p out; returns its length. */
static size_t mut_record(uint8_t *out)
{
	const size_t nf = sizeof(fields) / sizeof(fields[0]);
	uint8_t *sels, *last_sum = NULL, total = 0xff, region = mut_handle();
	size_t len = 0, nsel = 0, i;
	uint16_t cmd;

	if (mut_rand(5) == 0) {
		/* A WQE: the QP, its selectors, then the WQE's first bytes (wr_id, opcode,
		 * flags). */
		bool send = mut_rand(2);
		const struct field *wf = send ? send_fields : recv_fields;
		size_t nwf = send ? sizeof(send_fields) / sizeof(send_fields[0]) :
				    sizeof(recv_fields) / sizeof(recv_fields[0]);

		out[0] = send ? 6 : 7;
		out[2] = mut_handle();
		mut_fields(wf, nwf, out + 3, &total, region, &last_sum);
		if (last_sum && mut_rand(2))
			*last_sum = (uint8_t)(0xa0 | PICK(small_edges));
		len = 3 + nwf;
		for (i = 0; i < 16; i++)
			out[len++] = (uint8_t)(i == 8 ? mut_rand(12) : i == 12 ? mut_rand(16) : 0);
		out[1] = (uint8_t)(len - 2);
		return len;
	}
	cmd = mut_rand(4) ? fields[mut_rand((uint32_t)nf)].cmd : UROCE_CTRL_REG_MR;
	if (cmd == UROCE_CTRL_REG_MR && mut_rand(2)) {
		out[len++] = 4;
		out[len++] = 2;
		out[len++] = (uint8_t)(UROCE_CTRL_MAP_REGION - 1);
		out[len++] = mut_rand(2) ? PICK(page_edges) : PICK(large_edges);
	}
	sels = out + len + 3;
	for (i = 0; i < nf; i++)
		if (fields[i].cmd == cmd)
			mut_fields(&fields[i], 1, &sels[nsel++], &total, region, &last_sum);
	if (cmd == UROCE_CTRL_REG_MR) {
		uint32_t nseg = 1 + mut_rand(8);

		sels[nsel++] = (uint8_t)(nseg - 1 + 8 * mut_rand(4));
		for (i = 0; i < nseg; i++, nsel += 3)
			mut_fields(seg_fields, 3, &sels[nsel], &total, region, &last_sum);
	}
	/* The last summed field completes the sum: to the total, or to a small value. */
	if (last_sum && mut_rand(4))
		*last_sum = (uint8_t)(0xa0 | (total < 0x20 ? total : PICK(small_edges)));
	out[len] = 4;
	out[len + 1] = (uint8_t)(1 + nsel);
	out[len + 2] = (uint8_t)(cmd - 1);
	return len + 3 + nsel;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	uint8_t rec[4 + 3 + 16 + 1 + 8 * 3];
	size_t n, at = 0, starts = 0, pick, old;

	mut_state = seed ? seed : 1;
	if (mut_rand(4) != 0)
		return LLVMFuzzerMutate(data, size, max_size);
	n = mut_record(rec);
	if (size + n > max_size)
		return LLVMFuzzerMutate(data, size, max_size);
	/* Between two whole records: the pick-th record's start, or the end of the last. */
	while (at + 2 <= size && at + 2 + data[at + 1] <= size) {
		starts++;
		at += 2 + (size_t)data[at + 1];
	}
	pick = mut_rand((uint32_t)starts + 1);
	for (at = 0; pick > 0; pick--)
		at += 2 + (size_t)data[at + 1];
	/* Half the time in place of the record there, so that inputs do not only grow. */
	if (at + 2 <= size && at + 2 + data[at + 1] <= size && mut_rand(2)) {
		old = 2 + (size_t)data[at + 1];
		memmove(data + at, data + at + old, size - at - old);
		size -= old;
	}
	memmove(data + at + n, data + at, size - at);
	memcpy(data + at, rec, n);
	return size + n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Both sides of the administrators' gate. */
	const struct uroce_rnic_peer peer = {.pid = 1, .admin = size & 1};
	struct uroce_rnic_client *c;
	uint8_t msg[sizeof(struct uroce_ctrl_hdr) + 512];
	size_t at = 0;
	int t;

	setup_once();
	c = uroce_rnic_client_new(nic, &peer, NULL);
	CHECK(c);
	{
		/* Every connection starts with HELLO (the daemon refuses anything else). */
		struct uroce_ctrl_hdr h = {.magic = UROCE_CTRL_MAGIC,
					   .version = UROCE_CTRL_VERSION,
					   .cmd = UROCE_CTRL_HELLO,
					   .len = sizeof(h) + sizeof(struct uroce_ctrl_hello_req)};

		memset(msg, 0, sizeof(msg));
		memcpy(msg, &h, sizeof(h));
		request(c, msg, h.len);
	}
	while (at + 2 <= size) {
		uint8_t kind = data[at], n = data[at + 1];
		const uint8_t *p = data + at + 2;

		if (at + 2 + n > size)
			break;
		at += 2 + (size_t)n;
		switch (kind % 8) {
		case 0: {
			struct uroce_ctrl_hdr h = {.magic = UROCE_CTRL_MAGIC,
						   .version = UROCE_CTRL_VERSION};
			long want;

			if (n == 0)
				break;
			/* Every command: the rows are numbered 1 to UROCE_CTRL_CMD_END - 1. */
			h.cmd = (uint16_t)(1 + p[0] % (UROCE_CTRL_CMD_END - 1));
			want = uroce_ctrl_request_size(h.cmd);
			memset(msg, 0, sizeof(msg));
			memcpy(msg + sizeof(h), p + 1, (size_t)n - 1);
			h.len = (uint32_t)(sizeof(h) + (size_t)want);
			if (h.cmd == UROCE_CTRL_REG_MR) {
				/* Segment count from the payload, kept to what fits. */
				struct uroce_ctrl_reg_mr_req r;

				memcpy(&r, msg + sizeof(h), sizeof(r));
				r.nseg = 1 + r.nseg % 8;
				memcpy(msg + sizeof(h), &r, sizeof(r));
				h.len += r.nseg * (uint32_t)sizeof(struct uroce_ctrl_mr_seg);
			}
			memcpy(msg, &h, sizeof(h));
			request(c, msg, h.len);
			break;
		}
		case 1:
		case 5:
			if (n < sizeof(struct uroce_ctrl_hdr))
				break;
			memcpy(msg, p, n);
			request(c, msg, n);
			break;
		case 4: {
			uint32_t len = edge_request(c, msg, p, n);

			if (len)
				request(c, msg, len);
			break;
		}
		case 2:
		case 3:
		case 6:
		case 7: {
			const struct field *wf = kind % 8 == 6 ? send_fields : recv_fields;
			size_t nwf = kind % 8 == 6 ? sizeof(send_fields) / sizeof(send_fields[0]) :
						     sizeof(recv_fields) / sizeof(recv_fields[0]);
			bool sq = kind % 4 == 2, edge = kind % 8 >= 6;
			size_t skip = 1 + (edge ? nwf : 0), i;
			struct uroce_ring r;
			struct rnic_qp *q;
			uint64_t sum = 0;
			uint8_t *slot, handle;

			if (n < skip)
				break;
			handle = p[0];
			if (edge && handle)
				handle = (uint8_t)newest_handle(c, RNIC_OBJ_QP, handle);
			q = qp_ring(c, handle, sq, &r);
			if (!q || uroce_ring_prod_space(&r) == 0)
				break;
			slot = uroce_ring_prod_slot(&r, 0);
			memset(slot, 0, r.elem_size);
			memcpy(slot, p + skip,
			       (size_t)n - skip < r.elem_size ? (size_t)n - skip : r.elem_size);
			for (i = 0; edge && i < nwf; i++)
				if (wf[i].offset + wf[i].width <= r.elem_size)
					put_field(c, slot, &wf[i], p[1 + i], &sum);
			uroce_ring_prod_commit(&r, 1);
			/* The doorbell, as lib/client rings it. */
			uroce_summary_set(&c->doorbells, q->doorbell_slot);
			if (!sq) {
				now_ns += 1000;
				uroce_rnic_doorbells(nic);
				uroce_rnic_process(nic);
			}
			break;
		}
		}
	}
	/* Run the data path a few turns, then the connection goes. */
	for (t = 0; t < 4; t++) {
		now_ns += 1000000;
		uroce_rnic_doorbells(nic);
		uroce_rnic_process(nic);
	}
	rnic_client_free_objects(c);
	for (t = 1; t < RNIC_OBJ_TYPES; t++)
		CHECK(c->counts[t] == 0);
	uroce_rnic_client_free(c);
	CHECK(nic->mappings == 0);
	CHECK(nic->nqps == 0 && nic->nsrqs == 0 && nic->nclients == 0);
	CHECK(uroce_tp_cq_ready_first(nic->dev) == NULL); /* no CQ left holding completions */
	return 0;
}
