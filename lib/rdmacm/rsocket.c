/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsockets (<rdma/rsocket.h>): stream sockets over RC QPs, speaking rdma-core's rsocket
 * protocol so that an rsocket here talks to Linux rsockets (over rxe or an RNIC). Built on
 * this library's public rdma_cm and the drop-in libibverbs, as rdma-core builds its own.
 *
 * The protocol, as rdma-core 44 defines it on the wire:
 * - Connection: rdma_cm with RDMA_PS_TCP; REQ and REP carry struct rs_conn_data (40
 *   bytes): the receive queue depth as send credits, where the peer may write SGL updates
 *   (target_sgl: 2 rs_sge, then the iomap table) and the first half of the receive buffer
 *   (data_buf).
 * - Data: RDMA WRITE WITH IMMEDIATE into the peer's receive buffer at the address its
 *   current target SGE names; the immediate (big-endian) is op << 29 | bytes. A receiver
 *   learns of data only through the immediate, so every write consumes one of its
 *   receive WRs (posted with no SGE): a sender spends one credit per write.
 * - Credits (RS_OP_SGL): when the reader has consumed half its buffer (or half its
 *   credits), it RDMA-WRITEs the next half-buffer's rs_sge into the writer's target SGL
 *   and sends op SGL with the new credit limit (the sequence number the writer may reach).
 * - Control (RS_OP_CTRL): DISCONNECT and SHUTDOWN, a WRITE WITH IMMEDIATE of no bytes.
 * - riomap: a peer's RDMA-writable regions are written into our iomap table (op
 *   IOMAP_SGL); riowrite RDMA-WRITEs (no immediate) straight into them.
 * Both hosts here are little-endian, but the SGL byte-order flag is honoured as rdma-core
 * does (RS_CONN_FLAG_NET).
 *
 * Datagram rsockets (SOCK_DGRAM: UD QPs with a UDP socket for addressing) are not built:
 * rsocket(..., SOCK_DGRAM, ...) fails with ENOTSUP, so that librspreload.so falls back to
 * a kernel socket. rdma-core's give each socket's own QP an address handle without a GRH,
 * which RoCE refuses: on Linux rxe their first rconnect or rsendto fails (ENOENT), so
 * there is no RoCE peer to be compatible with (doc/ecosystem.md). Neither is SO_KEEPALIVE
 * (rdma-core runs a keep-alive thread): ENOTSUP too, so a program never believes it is on.
 *
 * Locking (rdma-core's): slock serialises senders, rlock receivers; cq_lock guards the CQ
 * and the counters its completions move; cq_wait_lock serialises waiting on the CQ
 * channel, taken before cq_lock is let go so that a sender waiting for credits never
 * keeps a receiver from polling. map_lock guards the iomap lists (after slock).
 *
 * The socket's number is its rdma_cm id's event channel fd (a real descriptor, so it never
 * collides with a file the program opens), as rdma-core's.
 */
#include <assert.h>
#include <byteswap.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "rdmacm.h"

/* ---- protocol ----------------------------------------------------------------------------- */

#define RS_OLAP_START_SIZE 2048 /* first write of a large send; doubles up to ... */
#define RS_MAX_TRANSFER 65536   /* ... the largest single write */
#define RS_SNDLOWAT 2048        /* a send waits until this much send buffer is free */
#define RS_QP_MIN_SIZE 16
#define RS_QP_MAX_SIZE 0xfffe
#define RS_QP_CTRL_SIZE 4 /* control messages in flight; a power of 2 */
#define RS_CONN_RETRIES 6
#define RS_SGL_SIZE 2 /* target SGEs: the reader's buffer halves */

/* The immediate: bits 31..29 the op, 28..0 bytes (DATA) or credits (SGL, CTRL). */
enum rs_op {
	RS_OP_DATA = 0,
	RS_OP_WRITE = 2, /* riowrite: never on the wire (no immediate), a WR id tag only */
	RS_OP_SGL = 4,
	RS_OP_IOMAP_SGL = 6,
	RS_OP_CTRL = 7,
};

enum rs_ctrl { RS_CTRL_DISCONNECT, RS_CTRL_KEEPALIVE, RS_CTRL_SHUTDOWN };

static inline uint32_t rs_msg_set(enum rs_op op, uint32_t data)
{
	return (uint32_t)op << 29 | data;
}
static inline enum rs_op rs_msg_op(uint32_t msg)
{
	return (enum rs_op)(msg >> 29);
}
static inline uint32_t rs_msg_data(uint32_t msg)
{
	return msg & 0x1fffffff;
}

#define RS_WR_ID_FLAG_RECV (1ull << 63)

/* Remote memory as the peer's tables hold it (host order of the writer, see
 * RS_CONN_FLAG_NET). Written into by RDMA: the layout is the protocol. */
struct rs_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};
static_assert(sizeof(struct rs_sge) == 16, "rs_sge: rsocket wire layout");

struct rs_iomap {
	uint64_t offset;
	struct rs_sge sge;
};
static_assert(sizeof(struct rs_iomap) == 24, "rs_iomap: rsocket wire layout");

#define RS_CONN_FLAG_NET (1 << 0)   /* the sender's SGLs are big-endian */
#define RS_CONN_FLAG_IOMAP (1 << 1) /* an iomap table follows the target SGL */

/* The private data of the REQ and the REP (network order except the SGLs' contents). */
struct rs_conn_data {
	uint8_t version; /* 1 */
	uint8_t flags;
	uint16_t credits; /* big-endian: receive WRs the peer may consume */
	uint8_t reserved[3];
	uint8_t target_iomap_size; /* rs_value_to_scale(entries, 8) */
	struct rs_sge target_sgl;  /* big-endian fields */
	struct rs_sge data_buf;    /* big-endian fields */
};
static_assert(sizeof(struct rs_conn_data) == 40, "rs_conn_data: rsocket wire layout");

/* ---- the socket ---------------------------------------------------------------------------- */

/* States as rdma-core orders them: passive, opening, connected, closed. */
enum rs_state {
	rs_init,
	rs_bound = 0x0001,
	rs_listening = 0x0002,
	rs_opening = 0x0004,
	rs_resolving_addr = rs_opening | 0x0010,
	rs_resolving_route = rs_opening | 0x0020,
	rs_connecting = rs_opening | 0x0040,
	rs_accepting = rs_opening | 0x0080,
	rs_connected = 0x0100,
	rs_writable = 0x0200,
	rs_readable = 0x0400,
	rs_connect_rdwr = rs_connected | rs_readable | rs_writable,
	rs_connect_error = 0x0800,
	rs_disconnected = 0x1000,
	rs_error = 0x2000,
};

#define RS_OPT_SWAP_SGL (1 << 0)

struct rs_iomap_mr {
	uint64_t offset;
	struct ibv_mr *mr;
	struct rs_iomap_mr *next;
	int index; /* slot in the peer's table; -1: a local (read-only) mapping */
};

struct rsocket {
	int index;
	pthread_mutex_t slock, rlock, cq_lock, cq_wait_lock, map_lock;
	struct rdma_cm_id *cm_id;
	uint64_t so_opts, tcp_opts, ipv6_opts; /* 1 << optname: set */

	unsigned int ctrl_seqno, ctrl_max_seqno;
	uint16_t sseq_no, sseq_comp; /* writes sent; the limit the peer's credits allow */
	uint16_t rseq_no, rseq_comp; /* writes consumed; when to send credits */

	int remote_sge;           /* next slot of the peer's target SGL we update */
	struct rs_sge remote_sgl; /* the peer's target SGL (RDMA-writable) */
	struct rs_sge remote_iomap;

	struct ibv_mr *target_mr;
	int target_sge;
	int target_iomap_size;
	void *target_buffer_list;
	volatile struct rs_sge *target_sgl; /* written by the peer */
	struct rs_iomap *target_iomap;

	int rbuf_bytes_avail, rbuf_free_offset, rbuf_offset;
	struct ibv_mr *rmr;
	uint8_t *rbuf;

	int sbuf_bytes_avail;
	struct ibv_mr *smr;
	struct ibv_sge ssgl[2];

	int opts;
	int fd_flags;
	int state;
	int cq_armed;
	int retries;
	int err;

	int sqe_avail;
	uint32_t sbuf_size;
	uint16_t sq_size, sq_inline;
	uint32_t rbuf_size;
	uint16_t rq_size;
	int rmsg_head, rmsg_tail;
	struct {
		uint32_t op, data;
	} *rmsg;

	uint8_t *sbuf;
	struct rs_iomap_mr *remote_iomappings; /* rs->remote_iomap.length slots */
	struct rs_iomap_mr *iomap_list;        /* sent to the peer, or local */
	struct rs_iomap_mr *iomap_queue;       /* waiting to be sent */
	int iomap_pending;
	int unack_cqe;
	uint64_t cm_checked_us; /* a non-blocking call last looked at the CM channel */
};

/* Defaults, overridden by /etc/rdma/rsocket/<name> as rdma-core reads them. */
static struct {
	uint16_t iomap_size, inline_size, sqsize, rqsize;
	uint32_t mem, wmem, polling_time; /* polling_time: us a blocking call spins first */
} rs_def = {0, 64, 384, 384, 1 << 17, 1 << 17, 10};

static pthread_mutex_t rs_table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rsocket **rs_table;
static int rs_table_len;

static struct rsocket *rs_lookup(int socket)
{
	struct rsocket *rs = NULL;

	pthread_mutex_lock(&rs_table_lock);
	if (socket >= 0 && socket < rs_table_len)
		rs = rs_table[socket];
	pthread_mutex_unlock(&rs_table_lock);
	return rs;
}

static int rs_insert(struct rsocket *rs, int index)
{
	pthread_mutex_lock(&rs_table_lock);
	if (index >= rs_table_len) {
		int len = index + 64;
		struct rsocket **t = realloc(rs_table, (size_t)len * sizeof(*t));

		if (!t) {
			pthread_mutex_unlock(&rs_table_lock);
			return ucma_fail(ENOMEM);
		}
		memset(t + rs_table_len, 0, (size_t)(len - rs_table_len) * sizeof(*t));
		rs_table = t;
		rs_table_len = len;
	}
	rs_table[index] = rs;
	rs->index = index;
	pthread_mutex_unlock(&rs_table_lock);
	return index;
}

static void rs_remove(struct rsocket *rs)
{
	pthread_mutex_lock(&rs_table_lock);
	if (rs->index >= 0 && rs->index < rs_table_len && rs_table[rs->index] == rs)
		rs_table[rs->index] = NULL;
	pthread_mutex_unlock(&rs_table_lock);
}

/* 8-bit scale of rdma-core for sizes: values above 128 keep their high bits only. */
static int rs_value_to_scale(int value, int bits)
{
	return value <= (1 << (bits - 1)) ? value : (1 << (bits - 1)) | (value >> bits);
}

static int rs_scale_to_value(int value, int bits)
{
	return value <= (1 << (bits - 1)) ? value : (value & ~(1 << (bits - 1))) << bits;
}

static void rs_read_conf(const char *name, uint32_t *val)
{
	char path[64];
	FILE *f;
	unsigned int v;

	snprintf(path, sizeof(path), "/etc/rdma/rsocket/%s", name);
	f = fopen(path, "r");
	if (!f)
		return;
	if (fscanf(f, "%u", &v) == 1)
		*val = v;
	fclose(f);
}

static void rs_configure_once(void)
{
	uint32_t v;

	rs_read_conf("polling_time", &rs_def.polling_time);
	v = rs_def.inline_size;
	rs_read_conf("inline_default", &v);
	rs_def.inline_size = (uint16_t)v;
	v = rs_def.sqsize;
	rs_read_conf("sqsize_default", &v);
	rs_def.sqsize = (uint16_t)v;
	v = rs_def.rqsize;
	rs_read_conf("rqsize_default", &v);
	rs_def.rqsize = (uint16_t)v;
	rs_read_conf("mem_default", &rs_def.mem);
	if (rs_def.mem < 1)
		rs_def.mem = 1;
	rs_read_conf("wmem_default", &rs_def.wmem);
	if (rs_def.wmem < RS_SNDLOWAT)
		rs_def.wmem = RS_SNDLOWAT << 1;
	v = rs_def.iomap_size;
	rs_read_conf("iomap_size", &v);
	rs_def.iomap_size = (uint16_t)rs_value_to_scale(rs_scale_to_value((int)v, 8), 8);
}

static void rs_configure(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, rs_configure_once);
}

/* ---- lifetime ------------------------------------------------------------------------------ */

/* A new socket; an accepted one inherits its listener's sizes. */
static struct rsocket *rs_alloc(const struct rsocket *inherit)
{
	struct rsocket *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->index = -1;
	if (inherit) {
		rs->sbuf_size = inherit->sbuf_size;
		rs->rbuf_size = inherit->rbuf_size;
		rs->sq_inline = inherit->sq_inline;
		rs->sq_size = inherit->sq_size;
		rs->rq_size = inherit->rq_size;
		rs->ctrl_max_seqno = inherit->ctrl_max_seqno;
		rs->target_iomap_size = inherit->target_iomap_size;
	} else {
		rs->sbuf_size = rs_def.wmem;
		rs->rbuf_size = rs_def.mem;
		rs->sq_inline = rs_def.inline_size;
		rs->sq_size = rs_def.sqsize;
		rs->rq_size = rs_def.rqsize;
		rs->ctrl_max_seqno = RS_QP_CTRL_SIZE;
		rs->target_iomap_size = rs_def.iomap_size;
	}
	pthread_mutex_init(&rs->slock, NULL);
	pthread_mutex_init(&rs->rlock, NULL);
	pthread_mutex_init(&rs->cq_lock, NULL);
	pthread_mutex_init(&rs->cq_wait_lock, NULL);
	pthread_mutex_init(&rs->map_lock, NULL);
	return rs;
}

/* Ends a mapping taken off its list: a slot of the peer's table (index >= 0) becomes
 * free for the next riomap, a local mapping is freed. */
static void rs_iomap_release(struct rs_iomap_mr *iomr)
{
	ibv_dereg_mr(iomr->mr);
	iomr->mr = NULL;
	if (iomr->index < 0)
		free(iomr);
}

static void rs_free_iomap_list(struct rs_iomap_mr **list)
{
	while (*list) {
		struct rs_iomap_mr *iomr = *list;

		*list = iomr->next;
		rs_iomap_release(iomr);
	}
}

static void rs_free(struct rsocket *rs)
{
	if (rs->index >= 0)
		rs_remove(rs);
	free(rs->rmsg);
	if (rs->smr)
		ibv_dereg_mr(rs->smr);
	free(rs->sbuf);
	if (rs->rmr)
		ibv_dereg_mr(rs->rmr);
	free(rs->rbuf);
	if (rs->target_mr)
		ibv_dereg_mr(rs->target_mr);
	free(rs->target_buffer_list);
	rs_free_iomap_list(&rs->iomap_list);
	rs_free_iomap_list(&rs->iomap_queue);
	free(rs->remote_iomappings);
	if (rs->cm_id) {
		if (rs->cm_id->qp) {
			ibv_ack_cq_events(rs->cm_id->recv_cq, (unsigned int)rs->unack_cqe);
			rdma_destroy_qp(rs->cm_id); /* and the CQ and its channel */
		}
		rdma_destroy_id(rs->cm_id);
	}
	pthread_mutex_destroy(&rs->map_lock);
	pthread_mutex_destroy(&rs->cq_wait_lock);
	pthread_mutex_destroy(&rs->cq_lock);
	pthread_mutex_destroy(&rs->rlock);
	pthread_mutex_destroy(&rs->slock);
	free(rs);
}

/* ---- endpoint: QP, CQ, buffers ----------------------------------------------------------- */

static void rs_set_qp_size(struct rsocket *rs)
{
	struct ibv_device_attr attr;
	uint16_t max_size = RS_QP_MAX_SIZE;

	if (!ibv_query_device(rs->cm_id->verbs, &attr) && attr.max_qp_wr < max_size)
		max_size = (uint16_t)attr.max_qp_wr;
	if (rs->sq_size > max_size)
		rs->sq_size = max_size;
	else if (rs->sq_size < RS_QP_MIN_SIZE)
		rs->sq_size = RS_QP_MIN_SIZE;
	if (rs->rq_size > max_size)
		rs->rq_size = max_size;
	else if (rs->rq_size < RS_QP_MIN_SIZE)
		rs->rq_size = RS_QP_MIN_SIZE;
}

static int rs_init_bufs(struct rsocket *rs)
{
	size_t total_sbuf_size = rs->sbuf_size, len;

	rs->rmsg = calloc(rs->rq_size + 1u, sizeof(*rs->rmsg));
	if (!rs->rmsg)
		return ucma_fail(ENOMEM);
	/* Control messages too long to go inline are written from slots past the buffer. */
	if (rs->sq_inline < sizeof(struct rs_sge))
		total_sbuf_size += sizeof(struct rs_sge) * RS_QP_CTRL_SIZE;
	rs->sbuf = calloc(total_sbuf_size, 1);
	if (!rs->sbuf)
		return ucma_fail(ENOMEM);
	rs->smr = rdma_reg_msgs(rs->cm_id, rs->sbuf, total_sbuf_size);
	if (!rs->smr)
		return -1;

	len = sizeof(struct rs_sge) * RS_SGL_SIZE +
	      sizeof(struct rs_iomap) * (size_t)rs->target_iomap_size;
	rs->target_buffer_list = calloc(len, 1);
	if (!rs->target_buffer_list)
		return ucma_fail(ENOMEM);
	rs->target_mr = rdma_reg_write(rs->cm_id, rs->target_buffer_list, len);
	if (!rs->target_mr)
		return -1;
	rs->target_sgl = rs->target_buffer_list;
	if (rs->target_iomap_size)
		rs->target_iomap =
			(struct rs_iomap *)(void *)((struct rs_sge *)rs->target_buffer_list +
						    RS_SGL_SIZE);

	rs->rbuf = calloc(rs->rbuf_size, 1);
	if (!rs->rbuf)
		return ucma_fail(ENOMEM);
	rs->rmr = rdma_reg_write(rs->cm_id, rs->rbuf, rs->rbuf_size);
	if (!rs->rmr)
		return -1;

	rs->ssgl[0].addr = rs->ssgl[1].addr = (uintptr_t)rs->sbuf;
	rs->sbuf_bytes_avail = (int)rs->sbuf_size;
	rs->ssgl[0].lkey = rs->ssgl[1].lkey = rs->smr->lkey;
	/* The first half of the receive buffer is offered in the connection data. */
	rs->rbuf_free_offset = (int)(rs->rbuf_size >> 1);
	rs->rbuf_bytes_avail = (int)(rs->rbuf_size >> 1);
	rs->sqe_avail = rs->sq_size - (int)rs->ctrl_max_seqno;
	rs->rseq_comp = rs->rq_size >> 1;
	return 0;
}

/* One CQ for both queues, armed at once so that the first completion raises an event. */
static int rs_create_cq(struct rsocket *rs)
{
	struct rdma_cm_id *id = rs->cm_id;

	id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
	if (!id->recv_cq_channel)
		return -1;
	id->recv_cq = ibv_create_cq(id->verbs, rs->sq_size + rs->rq_size, id, id->recv_cq_channel,
				    0);
	if (!id->recv_cq)
		goto err_channel;
	if ((rs->fd_flags & O_NONBLOCK) &&
	    fcntl(id->recv_cq_channel->fd, F_SETFL, O_NONBLOCK))
		goto err_cq;
	ibv_req_notify_cq(id->recv_cq, 0);
	id->send_cq_channel = id->recv_cq_channel;
	id->send_cq = id->recv_cq;
	return 0;
err_cq:
	ibv_destroy_cq(id->recv_cq);
	id->recv_cq = NULL;
err_channel:
	ibv_destroy_comp_channel(id->recv_cq_channel);
	id->recv_cq_channel = NULL;
	return -1;
}

/* A receive WR with no SGE: it only takes a WRITE WITH IMMEDIATE's immediate. */
static int rs_post_recv(struct rsocket *rs)
{
	struct ibv_recv_wr wr = {.wr_id = RS_WR_ID_FLAG_RECV}, *bad;
	int rc = ibv_post_recv(rs->cm_id->qp, &wr, &bad);

	return rc ? ucma_fail(rc) : 0;
}

static int rs_create_ep(struct rsocket *rs)
{
	struct ibv_qp_init_attr qp_attr;

	rs_set_qp_size(rs);
	if (rs_create_cq(rs))
		return -1;
	memset(&qp_attr, 0, sizeof(qp_attr));
	qp_attr.qp_context = rs;
	qp_attr.send_cq = rs->cm_id->send_cq;
	qp_attr.recv_cq = rs->cm_id->recv_cq;
	qp_attr.qp_type = IBV_QPT_RC;
	qp_attr.sq_sig_all = 1;
	qp_attr.cap.max_send_wr = rs->sq_size;
	qp_attr.cap.max_recv_wr = rs->rq_size;
	qp_attr.cap.max_send_sge = 2;
	qp_attr.cap.max_recv_sge = 1;
	qp_attr.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(rs->cm_id, NULL, &qp_attr))
		return -1;
	rs->sq_inline = (uint16_t)qp_attr.cap.max_inline_data;
	if (rs_init_bufs(rs))
		return -1;
	for (int i = 0; i < rs->rq_size; i++)
		if (rs_post_recv(rs))
			return -1;
	return 0;
}

/* ---- connection data ---------------------------------------------------------------------- */

static bool rs_host_is_net(void)
{
	return htonl(1) == 1;
}

static void rs_format_conn_data(const struct rsocket *rs, struct rs_conn_data *conn)
{
	memset(conn, 0, sizeof(*conn));
	conn->version = 1;
	conn->flags = RS_CONN_FLAG_IOMAP | (rs_host_is_net() ? RS_CONN_FLAG_NET : 0);
	conn->credits = htons(rs->rq_size);
	conn->target_iomap_size = (uint8_t)rs_value_to_scale(rs->target_iomap_size, 8);
	conn->target_sgl.addr = htobe64((uintptr_t)rs->target_sgl);
	conn->target_sgl.length = htonl(RS_SGL_SIZE);
	conn->target_sgl.key = htonl(rs->target_mr->rkey);
	conn->data_buf.addr = htobe64((uintptr_t)rs->rbuf);
	conn->data_buf.length = htonl(rs->rbuf_size >> 1);
	conn->data_buf.key = htonl(rs->rmr->rkey);
}

static void rs_save_conn_data(struct rsocket *rs, const struct rs_conn_data *conn)
{
	rs->remote_sgl.addr = be64toh(conn->target_sgl.addr);
	rs->remote_sgl.length = ntohl(conn->target_sgl.length);
	rs->remote_sgl.key = ntohl(conn->target_sgl.key);
	rs->remote_sge = 1; /* slot 0 is the data_buf below */
	if (rs_host_is_net() != !!(conn->flags & RS_CONN_FLAG_NET))
		rs->opts = RS_OPT_SWAP_SGL;
	if (conn->flags & RS_CONN_FLAG_IOMAP) {
		rs->remote_iomap.addr = rs->remote_sgl.addr +
					sizeof(struct rs_sge) * rs->remote_sgl.length;
		rs->remote_iomap.length = (uint32_t)rs_scale_to_value(conn->target_iomap_size, 8);
		rs->remote_iomap.key = rs->remote_sgl.key;
	}
	rs->target_sgl[0].addr = be64toh(conn->data_buf.addr);
	rs->target_sgl[0].length = ntohl(conn->data_buf.length);
	rs->target_sgl[0].key = ntohl(conn->data_buf.key);
	rs->sseq_comp = ntohs(conn->credits);
}

/* The peer's connection data, or NULL (with errno) when it is not rsocket version 1. */
static const struct rs_conn_data *rs_event_conn_data(const struct rdma_cm_id *id)
{
	const struct rdma_cm_event *ev = id->event;
	const struct rs_conn_data *conn;

	if (!ev || ev->param.conn.private_data_len < sizeof(*conn)) {
		errno = ENOTSUP;
		return NULL;
	}
	conn = ev->param.conn.private_data;
	if (conn->version != 1) {
		errno = ENOTSUP;
		return NULL;
	}
	return conn;
}

/* ---- socket calls: set-up ------------------------------------------------------------------ */

static void rs_connected_now(struct rsocket *rs);

UCMA_EXPORT int rsocket(int domain, int type, int protocol)
{
	struct rsocket *rs;

	if ((domain != AF_INET && domain != AF_INET6) || type != SOCK_STREAM ||
	    (protocol && protocol != IPPROTO_TCP))
		return ucma_fail(ENOTSUP); /* SOCK_DGRAM and AF_IB: not built (see the top) */
	rs_configure();
	rs = rs_alloc(NULL);
	if (!rs)
		return ucma_fail(ENOMEM);
	if (rdma_create_id(NULL, &rs->cm_id, rs, RDMA_PS_TCP))
		goto err;
	rs->cm_id->route.addr.src_addr.sa_family = (sa_family_t)domain;
	if (rs_insert(rs, rs->cm_id->channel->fd) < 0)
		goto err;
	return rs->index;
err:
	{
		int e = errno;

		rs_free(rs);
		return ucma_fail(e);
	}
}

UCMA_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsocket *rs = rs_lookup(socket);

	(void)addrlen;
	if (!rs)
		return ucma_fail(EBADF);
	if (rdma_bind_addr(rs->cm_id, (struct sockaddr *)(uintptr_t)addr))
		return -1;
	rs->state = rs_bound;
	return 0;
}

UCMA_EXPORT int rlisten(int socket, int backlog)
{
	struct rsocket *rs = rs_lookup(socket);

	if (!rs)
		return ucma_fail(EBADF);
	if (rs->state == rs_listening)
		return 0;
	if (rdma_listen(rs->cm_id, backlog))
		return -1;
	rs->state = rs_listening;
	return 0;
}

UCMA_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen);

/* The connection is established before raccept returns unless the listener is
 * non-blocking (then the first call on the new socket completes it): a blocking accept
 * that waited for the peer's RTU would deadlock a thread connecting to itself. */
UCMA_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsocket *rs = rs_lookup(socket), *new_rs;
	const struct rs_conn_data *creq;
	struct rdma_conn_param param;
	struct rs_conn_data cresp;
	int e;

	if (!rs)
		return ucma_fail(EBADF);
	new_rs = rs_alloc(rs);
	if (!new_rs)
		return ucma_fail(ENOMEM);
	if (rdma_get_request(rs->cm_id, &new_rs->cm_id))
		goto err;
	new_rs->cm_id->context = new_rs;
	if (rs_insert(new_rs, new_rs->cm_id->channel->fd) < 0)
		goto err;
	creq = rs_event_conn_data(new_rs->cm_id);
	if (!creq)
		goto err;
	if (rs->fd_flags & O_NONBLOCK)
		fcntl(new_rs->cm_id->channel->fd, F_SETFL, O_NONBLOCK);
	if (rs_create_ep(new_rs))
		goto err;
	rs_save_conn_data(new_rs, creq);
	param = new_rs->cm_id->event->param.conn;
	rs_format_conn_data(new_rs, &cresp);
	param.private_data = &cresp;
	param.private_data_len = sizeof(cresp);
	if (!rdma_accept(new_rs->cm_id, &param))
		rs_connected_now(new_rs);
	else if (errno == EAGAIN || errno == EWOULDBLOCK)
		new_rs->state = rs_accepting;
	else
		goto err;
	if (addr && addrlen)
		rgetpeername(new_rs->index, addr, addrlen);
	return new_rs->index;
err:
	e = errno;
	if (new_rs->cm_id && new_rs->cm_id->event && !new_rs->cm_id->qp) {
		/* Refused before accepting: tell the peer instead of leaving it to time out. */
		rdma_reject(new_rs->cm_id, NULL, 0);
	}
	rs_free(new_rs);
	return ucma_fail(e);
}

/* The connect state machine: each step either completes now (blocking socket) or leaves
 * its state for the next call (non-blocking: EINPROGRESS). */
static int rs_do_connect(struct rsocket *rs)
{
	struct rdma_conn_param param;
	struct rs_conn_data creq;
	const struct rs_conn_data *cresp;
	int to, ret;

	switch (rs->state) {
	case rs_init:
	case rs_bound:
	resolve_addr:
		to = 1000 << rs->retries++;
		ret = rdma_resolve_addr(rs->cm_id, NULL, &rs->cm_id->route.addr.dst_addr, to);
		if (!ret)
			goto resolve_route;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			rs->state = rs_resolving_addr;
		break;
	case rs_resolving_addr:
		ret = ucma_complete(ucma_id_of(rs->cm_id));
		if (ret) {
			if (errno == ETIMEDOUT && rs->retries <= RS_CONN_RETRIES)
				goto resolve_addr;
			break;
		}
		rs->retries = 0;
	resolve_route:
		to = 1000 << rs->retries++;
		ret = rdma_resolve_route(rs->cm_id, to);
		if (!ret)
			goto do_connect;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			rs->state = rs_resolving_route;
		break;
	case rs_resolving_route:
		ret = ucma_complete(ucma_id_of(rs->cm_id));
		if (ret) {
			if (errno == ETIMEDOUT && rs->retries <= RS_CONN_RETRIES)
				goto resolve_route;
			break;
		}
	do_connect:
		ret = rs_create_ep(rs);
		if (ret)
			break;
		memset(&param, 0, sizeof(param));
		rs_format_conn_data(rs, &creq);
		param.private_data = &creq;
		param.private_data_len = sizeof(creq);
		param.flow_control = 1;
		param.retry_count = 7;
		param.rnr_retry_count = 7;
		rs->retries = 0;
		ret = rdma_connect(rs->cm_id, &param);
		if (!ret)
			goto connected;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			rs->state = rs_connecting;
		break;
	case rs_connecting:
		ret = ucma_complete(ucma_id_of(rs->cm_id));
		if (ret)
			break;
	connected:
		cresp = rs_event_conn_data(rs->cm_id);
		if (!cresp) {
			ret = -1;
			break;
		}
		rs_save_conn_data(rs, cresp);
		rs_connected_now(rs);
		break;
	case rs_accepting:
		if (!(rs->fd_flags & O_NONBLOCK))
			fcntl(rs->cm_id->channel->fd, F_SETFL, 0);
		ret = ucma_complete(ucma_id_of(rs->cm_id));
		if (ret)
			break;
		rs_connected_now(rs);
		break;
	default:
		ret = ucma_fail(EINVAL);
		break;
	}
	if (ret) {
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			errno = EINPROGRESS;
		} else {
			rs->state = rs_connect_error;
			rs->err = errno;
		}
	}
	return ret;
}

UCMA_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsocket *rs = rs_lookup(socket);

	if (!rs)
		return ucma_fail(EBADF);
	if (addrlen > sizeof(rs->cm_id->route.addr.dst_storage))
		return ucma_fail(EINVAL);
	memcpy(&rs->cm_id->route.addr.dst_addr, addr, addrlen);
	return rs_do_connect(rs);
}

/* ---- data path: work requests -------------------------------------------------------------- */

static void *rs_get_ctrl_buf(struct rsocket *rs)
{
	return rs->sbuf + rs->sbuf_size +
	       sizeof(struct rs_sge) * (rs->ctrl_seqno & (RS_QP_CTRL_SIZE - 1));
}

/* A control message: a WRITE WITH IMMEDIATE of no bytes. */
static int rs_post_msg(struct rsocket *rs, uint32_t msg)
{
	struct ibv_send_wr wr = {
		.wr_id = msg,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.imm_data = htonl(msg),
	};
	struct ibv_send_wr *bad;
	int rc = ibv_post_send(rs->cm_id->qp, &wr, &bad);

	return rc ? ucma_fail(rc) : 0;
}

/* A WRITE (WITH IMMEDIATE when @p with_imm) of @p sgl to the peer's @p addr. The WR id
 * carries the message, so its completion says what it freed. */
static int rs_post_write(struct rsocket *rs, struct ibv_sge *sgl, int nsge, uint32_t msg,
			 bool with_imm, int flags, uint64_t addr, uint32_t rkey)
{
	struct ibv_send_wr wr = {
		.wr_id = msg,
		.sg_list = sgl,
		.num_sge = nsge,
		.opcode = with_imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE,
		.send_flags = (unsigned int)flags,
		.imm_data = with_imm ? htonl(msg) : 0,
		.wr.rdma = {.remote_addr = addr, .rkey = rkey},
	};
	struct ibv_send_wr *bad;
	int rc = ibv_post_send(rs->cm_id->qp, &wr, &bad);

	return rc ? ucma_fail(rc) : 0;
}

/* Takes the target SGE's room before the write goes: the peer may replace the entry
 * (RS_OP_SGL) as soon as it sees the data. */
static int rs_write_data(struct rsocket *rs, struct ibv_sge *sgl, int nsge, uint32_t length,
			 int flags)
{
	uint64_t addr;
	uint32_t rkey;

	rs->sseq_no++;
	rs->sqe_avail--;
	rs->sbuf_bytes_avail -= (int)length;
	addr = rs->target_sgl[rs->target_sge].addr;
	rkey = rs->target_sgl[rs->target_sge].key;
	rs->target_sgl[rs->target_sge].addr += length;
	rs->target_sgl[rs->target_sge].length -= length;
	if (!rs->target_sgl[rs->target_sge].length) {
		if (++rs->target_sge == RS_SGL_SIZE)
			rs->target_sge = 0;
	}
	return rs_post_write(rs, sgl, nsge, rs_msg_set(RS_OP_DATA, length), true, flags, addr,
			     rkey);
}

static int rs_write_direct(struct rsocket *rs, const struct rs_iomap *iom, uint64_t offset,
			   struct ibv_sge *sgl, int nsge, uint32_t length, int flags)
{
	rs->sqe_avail--;
	rs->sbuf_bytes_avail -= (int)length;
	return rs_post_write(rs, sgl, nsge, rs_msg_set(RS_OP_WRITE, length), false, flags,
			     iom->sge.addr + offset - iom->offset, iom->sge.key);
}

static int rs_write_iomap(struct rsocket *rs, const struct rs_iomap_mr *iomr,
			  struct ibv_sge *sgl, int nsge, int flags)
{
	rs->sseq_no++;
	rs->sqe_avail--;
	rs->sbuf_bytes_avail -= (int)sizeof(struct rs_iomap);
	uint64_t addr = rs->remote_iomap.addr + (uint64_t)iomr->index * sizeof(struct rs_iomap);

	return rs_post_write(rs, sgl, nsge, rs_msg_set(RS_OP_IOMAP_SGL, (uint32_t)iomr->index),
			     true, flags, addr, rs->remote_iomap.key);
}

/* Bytes from the send buffer's cursor to its end (where a copy wraps). */
static uint32_t rs_sbuf_left(const struct rsocket *rs)
{
	return (uint32_t)((uintptr_t)&rs->sbuf[rs->sbuf_size] - rs->ssgl[0].addr);
}

/* Copies @p len bytes from @p copy(arg) into the send buffer at its cursor, wrapping, and
 * writes them with @p write. */
typedef void (*rs_copy_fn)(void *dst, size_t len, void *arg);

static void rs_copy_flat(void *dst, size_t len, void *arg)
{
	const uint8_t **src = arg;

	memcpy(dst, *src, len);
	*src += len;
}

struct rs_iov_cursor {
	const struct iovec *iov;
	size_t offset;
};

static void rs_copy_iov(void *dst, size_t len, void *arg)
{
	struct rs_iov_cursor *c = arg;
	uint8_t *d = dst;

	while (len) {
		size_t size = c->iov->iov_len - c->offset;

		if (size > len) {
			memcpy(d, (const uint8_t *)c->iov->iov_base + c->offset, len);
			c->offset += len;
			break;
		}
		memcpy(d, (const uint8_t *)c->iov->iov_base + c->offset, size);
		len -= size;
		d += size;
		c->iov++;
		c->offset = 0;
	}
}

/* Stages @p xfer_size bytes in the send buffer (two SGEs when they wrap) and fills
 * @p sgl. @return the SGE count. */
static int rs_stage(struct rsocket *rs, uint32_t xfer_size, rs_copy_fn copy, void *arg)
{
	if (xfer_size <= rs_sbuf_left(rs)) {
		copy((void *)(uintptr_t)rs->ssgl[0].addr, xfer_size, arg);
		rs->ssgl[0].length = xfer_size;
		return 1;
	}
	rs->ssgl[0].length = rs_sbuf_left(rs);
	copy((void *)(uintptr_t)rs->ssgl[0].addr, rs->ssgl[0].length, arg);
	rs->ssgl[1].length = xfer_size - rs->ssgl[0].length;
	copy(rs->sbuf, rs->ssgl[1].length, arg);
	return 2;
}

/* Moves the send buffer's cursor past what rs_stage staged. */
static void rs_staged(struct rsocket *rs, int nsge, uint32_t xfer_size)
{
	if (nsge == 2)
		rs->ssgl[0].addr = (uintptr_t)rs->sbuf + rs->ssgl[1].length;
	else if (xfer_size < rs_sbuf_left(rs))
		rs->ssgl[0].addr += xfer_size;
	else
		rs->ssgl[0].addr = (uintptr_t)rs->sbuf;
}

/* ---- data path: credits and completions ----------------------------------------------------- */

/* Grants the peer receive credits and, when half the buffer is free, the next half:
 * its rs_sge is written into the peer's target SGL, then op SGL says how far it may go. */
static void rs_send_credits(struct rsocket *rs)
{
	uint32_t credits = rs_msg_set(RS_OP_SGL, (uint16_t)(rs->rseq_no + rs->rq_size));
	struct ibv_sge ibsge;
	struct rs_sge sge, *sge_buf;
	int flags;

	rs->ctrl_seqno++;
	rs->rseq_comp = (uint16_t)(rs->rseq_no + (rs->rq_size >> 1));
	if (rs->rbuf_bytes_avail >= (int)(rs->rbuf_size >> 1)) {
		sge.addr = (uintptr_t)&rs->rbuf[rs->rbuf_free_offset];
		sge.key = rs->rmr->rkey;
		sge.length = rs->rbuf_size >> 1;
		if (rs->opts & RS_OPT_SWAP_SGL) {
			sge.addr = bswap_64(sge.addr);
			sge.key = bswap_32(sge.key);
			sge.length = bswap_32(sge.length);
		}
		if (rs->sq_inline < sizeof(sge)) {
			sge_buf = rs_get_ctrl_buf(rs);
			memcpy(sge_buf, &sge, sizeof(sge));
			ibsge.addr = (uintptr_t)sge_buf;
			ibsge.lkey = rs->smr->lkey;
			flags = 0;
		} else {
			ibsge.addr = (uintptr_t)&sge;
			ibsge.lkey = 0;
			flags = IBV_SEND_INLINE;
		}
		ibsge.length = sizeof(sge);
		rs_post_write(rs, &ibsge, 1, credits, true, flags,
			      rs->remote_sgl.addr + (uint64_t)rs->remote_sge * sizeof(sge),
			      rs->remote_sgl.key);
		rs->rbuf_bytes_avail -= (int)(rs->rbuf_size >> 1);
		rs->rbuf_free_offset += (int)(rs->rbuf_size >> 1);
		if (rs->rbuf_free_offset >= (int)rs->rbuf_size)
			rs->rbuf_free_offset = 0;
		if (++rs->remote_sge == (int)rs->remote_sgl.length)
			rs->remote_sge = 0;
	} else {
		rs_post_msg(rs, credits);
	}
}

static bool rs_ctrl_avail(const struct rsocket *rs)
{
	return rs->ctrl_seqno != rs->ctrl_max_seqno;
}

static bool rs_give_credits(const struct rsocket *rs)
{
	return (rs->rbuf_bytes_avail >= (int)(rs->rbuf_size >> 1) ||
		(int16_t)(rs->rseq_no - rs->rseq_comp) >= 0) &&
	       rs_ctrl_avail(rs) && (rs->state & rs_connected);
}

static void rs_update_credits(struct rsocket *rs)
{
	if (rs_give_credits(rs))
		rs_send_credits(rs);
}

/* Takes every completion. Caller holds cq_lock. */
static int rs_poll_cq(struct rsocket *rs)
{
	struct ibv_wc wc;
	uint32_t msg;
	int ret, rcnt = 0;

	while ((ret = ibv_poll_cq(rs->cm_id->recv_cq, 1, &wc)) > 0) {
		if (wc.wr_id & RS_WR_ID_FLAG_RECV) {
			if (wc.status != IBV_WC_SUCCESS)
				continue;
			rcnt++;
			msg = ntohl(wc.imm_data);
			switch (rs_msg_op(msg)) {
			case RS_OP_SGL:
				rs->sseq_comp = (uint16_t)rs_msg_data(msg);
				break;
			case RS_OP_IOMAP_SGL:
				break; /* the peer's write into our iomap table is all there is */
			case RS_OP_CTRL:
				if (rs_msg_data(msg) == RS_CTRL_DISCONNECT) {
					rs->state = rs_disconnected;
					return 0;
				} else if (rs_msg_data(msg) == RS_CTRL_SHUTDOWN) {
					if (rs->state & rs_writable) {
						rs->state &= ~rs_readable;
					} else {
						rs->state = rs_disconnected;
						return 0;
					}
				}
				break;
			case RS_OP_WRITE:
				break; /* carries no immediate: never received */
			default:
				rs->rmsg[rs->rmsg_tail].op = rs_msg_op(msg);
				rs->rmsg[rs->rmsg_tail].data = rs_msg_data(msg);
				if (++rs->rmsg_tail == rs->rq_size + 1)
					rs->rmsg_tail = 0;
				break;
			}
		} else {
			msg = (uint32_t)wc.wr_id;
			switch (rs_msg_op(msg)) {
			case RS_OP_SGL:
				rs->ctrl_max_seqno++;
				break;
			case RS_OP_CTRL:
				rs->ctrl_max_seqno++;
				if (rs_msg_data(msg) == RS_CTRL_DISCONNECT)
					rs->state = rs_disconnected;
				break;
			case RS_OP_IOMAP_SGL:
				rs->sqe_avail++;
				rs->sbuf_bytes_avail += (int)sizeof(struct rs_iomap);
				break;
			default:
				rs->sqe_avail++;
				rs->sbuf_bytes_avail += (int)rs_msg_data(msg);
				break;
			}
			if (wc.status != IBV_WC_SUCCESS && (rs->state & rs_connected)) {
				rs->state = rs_error;
				rs->err = EIO;
			}
		}
	}
	if (rs->state & rs_connected) {
		while (!ret && rcnt--)
			ret = rs_post_recv(rs);
		if (ret) {
			rs->state = rs_error;
			rs->err = errno;
		}
	}
	return ret;
}

static int rs_get_cq_event(struct rsocket *rs)
{
	struct ibv_cq *cq;
	void *context;
	int ret;

	if (!rs->cq_armed)
		return 0;
	ret = ibv_get_cq_event(rs->cm_id->recv_cq_channel, &cq, &context);
	if (!ret) {
		if (++rs->unack_cqe >= rs->sq_size + rs->rq_size) {
			ibv_ack_cq_events(rs->cm_id->recv_cq, (unsigned int)rs->unack_cqe);
			rs->unack_cqe = 0;
		}
		rs->cq_armed = 0;
	} else if (!(errno == EAGAIN || errno == EINTR)) {
		rs->state = rs_error;
	}
	return ret;
}

/* A peer that ends without a word (its process killed) sends no DISCONNECT; its daemon
 * destroys its id, and the DREQ reaches us as RDMA_CM_EVENT_DISCONNECTED on our id's
 * channel. rdma-core's rsockets never look there, so a reader, or a writer waiting for
 * credits, waits for ever; here the socket becomes disconnected (end of data for readers,
 * ECONNRESET for writers), as a TCP socket does when the peer's kernel resets it. The
 * channel is non-blocking once connected (rs_connected_now). */
static void rs_take_cm_events(struct rsocket *rs)
{
	struct pollfd p = {.fd = rs->cm_id->channel->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (!(rs->state & rs_connected))
		return; /* before: the connect steps own the channel */
	while (poll(&p, 1, 0) == 1 && !rdma_get_cm_event(rs->cm_id->channel, &ev)) {
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
		    ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
			rs->state = rs_disconnected;
		rdma_ack_cm_event(ev);
	}
}

/* Connected: from here the CM channel is only looked at, never waited on. */
static void rs_connected_now(struct rsocket *rs)
{
	rs->state = rs_connect_rdwr;
	fcntl(rs->cm_id->channel->fd, F_SETFL, O_NONBLOCK);
}

/* Waits for the CQ's event, or the CM's (the peer gone). Caller holds cq_wait_lock. */
static int rs_wait_event(struct rsocket *rs)
{
	struct pollfd p[2] = {{.fd = rs->cm_id->recv_cq_channel->fd, .events = POLLIN},
			      {.fd = rs->cm_id->channel->fd, .events = POLLIN}};

	if (!(rs->state & rs_connected))
		return rs_get_cq_event(rs);
	if (poll(p, 2, -1) < 0)
		return -1; /* EINTR: a signal, as a blocking read of the CQ channel */
	if (p[1].revents)
		rs_take_cm_events(rs);
	return p[0].revents ? rs_get_cq_event(rs) : 0;
}

static uint64_t rs_now_us(void);

/* Polls until @p test holds: non-blocking, EWOULDBLOCK; blocking, arms the CQ and waits
 * for its event, cq_lock let go meanwhile (cq_wait_lock taken first). */
static int rs_process_cq(struct rsocket *rs, bool nonblock, bool (*test)(struct rsocket *rs))
{
	int ret;

	pthread_mutex_lock(&rs->cq_lock);
	do {
		rs_update_credits(rs);
		ret = rs_poll_cq(rs);
		if (test(rs)) {
			ret = 0;
			break;
		} else if (ret) {
			break;
		} else if (nonblock) {
			/* A caller spinning on EWOULDBLOCK learns of a vanished peer too, at
			 * a system call per 10 ms, not per call. */
			uint64_t now = rs_now_us();

			if (now - rs->cm_checked_us >= 10000) {
				rs->cm_checked_us = now;
				rs_take_cm_events(rs);
				if (test(rs)) {
					ret = 0;
					break;
				}
			}
			ret = ucma_fail(EWOULDBLOCK);
		} else if (!rs->cq_armed) {
			ibv_req_notify_cq(rs->cm_id->recv_cq, 0);
			rs->cq_armed = 1;
		} else {
			rs_update_credits(rs);
			pthread_mutex_lock(&rs->cq_wait_lock);
			pthread_mutex_unlock(&rs->cq_lock);
			ret = rs_wait_event(rs);
			pthread_mutex_unlock(&rs->cq_wait_lock);
			pthread_mutex_lock(&rs->cq_lock);
		}
	} while (!ret);
	rs_update_credits(rs);
	pthread_mutex_unlock(&rs->cq_lock);
	return ret;
}

static uint64_t rs_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Spins polling_time us before it blocks: a reply often comes sooner than a wake-up. */
static int rs_get_comp(struct rsocket *rs, bool nonblock, bool (*test)(struct rsocket *rs))
{
	uint64_t start = 0;
	int ret;

	do {
		ret = rs_process_cq(rs, true, test);
		if (!ret || nonblock || errno != EWOULDBLOCK)
			return ret;
		if (!start)
			start = rs_now_us();
	} while (rs_now_us() - start <= rs_def.polling_time);
	return rs_process_cq(rs, false, test);
}

static bool rs_nonblocking(const struct rsocket *rs, int flags)
{
	return (rs->fd_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

static bool rs_is_cq_armed(struct rsocket *rs)
{
	return rs->cq_armed;
}

static bool rs_poll_all(struct rsocket *rs)
{
	(void)rs;
	return true;
}

/* The peer's receive queue is protected by the QP's flow control, but each write also
 * needs a slot in its rmsg ring: the credits (sseq_comp) count those. The target SGL may
 * change under us (the peer RDMA-writes it). */
static bool rs_can_send(struct rsocket *rs)
{
	return rs->sqe_avail && rs->sbuf_bytes_avail >= RS_SNDLOWAT &&
	       rs->sseq_no != rs->sseq_comp && rs->target_sgl[rs->target_sge].length != 0;
}

static bool rs_conn_can_send(struct rsocket *rs)
{
	return rs_can_send(rs) || !(rs->state & rs_writable);
}

static bool rs_conn_can_send_ctrl(struct rsocket *rs)
{
	return rs_ctrl_avail(rs) || !(rs->state & rs_connected);
}

static bool rs_have_rdata(struct rsocket *rs)
{
	return rs->rmsg_head != rs->rmsg_tail;
}

static bool rs_conn_have_rdata(struct rsocket *rs)
{
	return rs_have_rdata(rs) || !(rs->state & rs_readable);
}

static bool rs_conn_all_sends_done(struct rsocket *rs)
{
	return ((int)rs->ctrl_max_seqno - (int)rs->ctrl_seqno) + rs->sqe_avail == rs->sq_size ||
	       !(rs->state & rs_connected);
}

/* A call on a socket still connecting (non-blocking) first moves the connect on. */
static int rs_finish_connect(struct rsocket *rs)
{
	if (!(rs->state & rs_opening))
		return 0;
	if (rs_do_connect(rs)) {
		if (errno == EINPROGRESS)
			errno = EAGAIN;
		return -1;
	}
	return 0;
}

/* ---- socket calls: data ---------------------------------------------------------------------- */

/* Copies what has arrived without consuming it. Caller holds rlock. */
static size_t rs_peek(struct rsocket *rs, uint8_t *buf, size_t len)
{
	size_t left = len;
	uint32_t end_size, rsize;
	int rmsg_head = rs->rmsg_head, rbuf_offset = rs->rbuf_offset;

	for (; left && rmsg_head != rs->rmsg_tail; left -= rsize) {
		if (left < rs->rmsg[rmsg_head].data) {
			rsize = (uint32_t)left;
		} else {
			rsize = rs->rmsg[rmsg_head].data;
			if (++rmsg_head == rs->rq_size + 1)
				rmsg_head = 0;
		}
		end_size = rs->rbuf_size - (uint32_t)rbuf_offset;
		if (rsize > end_size) {
			memcpy(buf, &rs->rbuf[rbuf_offset], end_size);
			rbuf_offset = 0;
			buf += end_size;
			rsize -= end_size;
			left -= end_size;
		}
		memcpy(buf, &rs->rbuf[rbuf_offset], rsize);
		rbuf_offset += (int)rsize;
		buf += rsize;
	}
	return len - left;
}

/* Data already received is still returned after the peer disconnected; then 0 (EOF). */
UCMA_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	struct rsocket *rs = rs_lookup(socket);
	size_t left = len;
	uint32_t end_size, rsize;
	uint8_t *p = buf;
	int ret = 0;

	if (!rs)
		return ucma_fail(EBADF);
	if (rs_finish_connect(rs))
		return -1;
	pthread_mutex_lock(&rs->rlock);
	do {
		if (!rs_have_rdata(rs)) {
			ret = rs_get_comp(rs, rs_nonblocking(rs, flags), rs_conn_have_rdata);
			if (ret)
				break;
		}
		if (flags & MSG_PEEK) {
			left = len - rs_peek(rs, p, left);
			break;
		}
		for (; left && rs_have_rdata(rs); left -= rsize) {
			if (left < rs->rmsg[rs->rmsg_head].data) {
				rsize = (uint32_t)left;
				rs->rmsg[rs->rmsg_head].data -= (uint32_t)left;
			} else {
				rs->rseq_no++;
				rsize = rs->rmsg[rs->rmsg_head].data;
				if (++rs->rmsg_head == rs->rq_size + 1)
					rs->rmsg_head = 0;
			}
			end_size = rs->rbuf_size - (uint32_t)rs->rbuf_offset;
			if (rsize > end_size) {
				memcpy(p, &rs->rbuf[rs->rbuf_offset], end_size);
				rs->rbuf_offset = 0;
				p += end_size;
				rsize -= end_size;
				left -= end_size;
				rs->rbuf_bytes_avail += (int)end_size;
			}
			memcpy(p, &rs->rbuf[rs->rbuf_offset], rsize);
			rs->rbuf_offset += (int)rsize;
			p += rsize;
			rs->rbuf_bytes_avail += (int)rsize;
		}
	} while (left && (flags & MSG_WAITALL) && (rs->state & rs_readable));
	pthread_mutex_unlock(&rs->rlock);
	return (ret && left == len) ? ret : (ssize_t)(len - left);
}

UCMA_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			      struct sockaddr *src_addr, socklen_t *addrlen)
{
	ssize_t ret = rrecv(socket, buf, len, flags);

	if (ret > 0 && src_addr)
		rgetpeername(socket, src_addr, addrlen);
	return ret;
}

/* Into the first vector only, as rdma-core. */
static ssize_t rrecvv(int socket, const struct iovec *iov, int iovcnt, int flags)
{
	if (iovcnt < 1)
		return ucma_fail(EINVAL);
	return rrecv(socket, iov[0].iov_base, iov[0].iov_len, flags);
}

UCMA_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	if (msg->msg_control && msg->msg_controllen)
		return ucma_fail(ENOTSUP);
	return rrecvv(socket, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

UCMA_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	return rrecv(socket, buf, count, 0);
}

UCMA_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return rrecvv(socket, iov, iovcnt, 0);
}

/* Waits until a write may go (a send WR, send-buffer room, a credit, target room); a
 * non-blocking socket fails with EWOULDBLOCK instead, one that may no longer send with
 * ECONNRESET. Caller holds slock. */
static int rs_wait_can_send(struct rsocket *rs, int flags)
{
	if (rs_can_send(rs))
		return 0;
	if (rs_get_comp(rs, rs_nonblocking(rs, flags), rs_conn_can_send))
		return -1;
	return rs->state & rs_writable ? 0 : ucma_fail(ECONNRESET);
}

/* The next write of a send with @p left bytes to go: the first RS_OLAP_START_SIZE (the
 * peer starts on it at once), each next twice as large up to RS_MAX_TRANSFER, within the
 * send buffer's free bytes and the @p room at the target. */
static uint32_t rs_next_xfer(const struct rsocket *rs, size_t left, uint32_t *olen,
			     uint32_t room)
{
	uint32_t xfer_size;

	if (*olen < left) {
		xfer_size = *olen;
		if (*olen < RS_MAX_TRANSFER)
			*olen <<= 1;
	} else {
		xfer_size = (uint32_t)left;
	}
	if (xfer_size > (uint32_t)rs->sbuf_bytes_avail)
		xfer_size = (uint32_t)rs->sbuf_bytes_avail;
	return xfer_size < room ? xfer_size : room;
}

/* Sends the queued iomap entries into the peer's table. Caller holds slock. */
static int rs_send_iomaps(struct rsocket *rs, int flags)
{
	struct rs_iomap_mr *iomr;
	struct ibv_sge sge;
	struct rs_iomap iom;
	int ret = 0;

	pthread_mutex_lock(&rs->map_lock);
	while (rs->iomap_queue) {
		ret = rs_wait_can_send(rs, flags);
		if (ret)
			break;
		iomr = rs->iomap_queue;
		iom.offset = iomr->offset;
		iom.sge.addr = (uintptr_t)iomr->mr->addr;
		iom.sge.length = (uint32_t)iomr->mr->length;
		iom.sge.key = iomr->mr->rkey;
		if (rs->opts & RS_OPT_SWAP_SGL) {
			iom.offset = bswap_64(iom.offset);
			iom.sge.addr = bswap_64(iom.sge.addr);
			iom.sge.length = bswap_32(iom.sge.length);
			iom.sge.key = bswap_32(iom.sge.key);
		}
		if (rs->sq_inline >= sizeof(iom)) {
			sge.addr = (uintptr_t)&iom;
			sge.length = sizeof(iom);
			sge.lkey = 0;
			ret = rs_write_iomap(rs, iomr, &sge, 1, IBV_SEND_INLINE);
		} else {
			const uint8_t *src = (const uint8_t *)&iom;
			int nsge = rs_stage(rs, sizeof(iom), rs_copy_flat, &src);

			ret = rs_write_iomap(rs, iomr, rs->ssgl, nsge, 0);
			rs_staged(rs, nsge, sizeof(iom));
		}
		rs->iomap_queue = iomr->next;
		iomr->next = rs->iomap_list;
		rs->iomap_list = iomr;
		if (ret)
			break;
	}
	rs->iomap_pending = rs->iomap_queue != NULL;
	pthread_mutex_unlock(&rs->map_lock);
	return ret;
}

/* The writes of one send (sizes: rs_next_xfer). The bytes come from @p flat, or from
 * @p copy when it is NULL. */
static ssize_t rs_send_stream(struct rsocket *rs, size_t len, int flags, rs_copy_fn copy,
			      void *arg, const uint8_t *flat)
{
	size_t left = len;
	uint32_t xfer_size, olen = RS_OLAP_START_SIZE;
	int ret = 0;

	pthread_mutex_lock(&rs->slock);
	if (rs->iomap_pending) {
		ret = rs_send_iomaps(rs, flags);
		if (ret)
			goto out;
	}
	for (; left; left -= xfer_size) {
		ret = rs_wait_can_send(rs, flags);
		if (ret)
			break;
		xfer_size = rs_next_xfer(rs, left, &olen, rs->target_sgl[rs->target_sge].length);
		if (flat && xfer_size <= rs->sq_inline) {
			struct ibv_sge sge = {.addr = (uintptr_t)flat, .length = xfer_size};

			ret = rs_write_data(rs, &sge, 1, xfer_size, IBV_SEND_INLINE);
			flat += xfer_size;
		} else {
			const uint8_t *src = flat;
			int nsge = flat ? rs_stage(rs, xfer_size, rs_copy_flat, &src)
					: rs_stage(rs, xfer_size, copy, arg);

			ret = rs_write_data(rs, rs->ssgl, nsge, xfer_size,
					    xfer_size <= rs->sq_inline ? IBV_SEND_INLINE : 0);
			rs_staged(rs, nsge, xfer_size);
			if (flat)
				flat = src;
		}
		if (ret)
			break;
	}
out:
	pthread_mutex_unlock(&rs->slock);
	return (ret && left == len) ? ret : (ssize_t)(len - left);
}

UCMA_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	struct rsocket *rs = rs_lookup(socket);

	if (!rs)
		return ucma_fail(EBADF);
	if (rs_finish_connect(rs))
		return -1;
	return rs_send_stream(rs, len, flags, NULL, NULL, buf);
}

/* The address is ignored, as Linux TCP ignores it on a connected socket (rdma-core
 * fails with EISCONN, which stops sockperf's TCP ping-pong). */
UCMA_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			    const struct sockaddr *dest_addr, socklen_t addrlen)
{
	(void)dest_addr, (void)addrlen;
	return rsend(socket, buf, len, flags);
}

static ssize_t rsendv(int socket, const struct iovec *iov, int iovcnt, int flags)
{
	struct rsocket *rs = rs_lookup(socket);
	struct rs_iov_cursor cur = {.iov = iov};
	size_t len = 0;

	if (!rs)
		return ucma_fail(EBADF);
	if (iovcnt < 0)
		return ucma_fail(EINVAL);
	if (rs_finish_connect(rs))
		return -1;
	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	return rs_send_stream(rs, len, flags, rs_copy_iov, &cur, NULL);
}

UCMA_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	if (msg->msg_control && msg->msg_controllen)
		return ucma_fail(ENOTSUP);
	return rsendv(socket, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

UCMA_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return rsend(socket, buf, count, 0);
}

UCMA_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return rsendv(socket, iov, iovcnt, 0);
}

/* ---- socket calls: waiting ------------------------------------------------------------------- */

/* What @p rs is ready for, after taking its completions (and moving a connect on). */
static short rs_poll_rs(struct rsocket *rs, short events, bool nonblock,
			bool (*test)(struct rsocket *rs))
{
	struct pollfd fds;
	short revents;

check_cq:
	if ((rs->state & rs_connected) || rs->state == rs_disconnected || (rs->state & rs_error)) {
		rs_take_cm_events(rs);
		rs_process_cq(rs, nonblock, test);
		revents = 0;
		if ((events & POLLIN) && rs_conn_have_rdata(rs))
			revents |= POLLIN;
		if ((events & POLLOUT) && rs_can_send(rs))
			revents |= POLLOUT;
		/* As a TCP socket whose peer closed: readable (and POLLRDHUP) while data is
		 * left, hung up once it is read. rdma-core says POLLHUP at once, so a program
		 * that stops at POLLHUP (rstream -T a) loses the peer's last bytes. */
		if (rs->state == rs_disconnected && rs_have_rdata(rs))
			revents |= events & POLLRDHUP;
		else if (!(rs->state & rs_connected))
			revents |= rs->state == rs_disconnected ? POLLHUP : POLLERR;
		return revents;
	}
	if (rs->state == rs_listening) {
		fds.fd = rs->cm_id->channel->fd;
		fds.events = events;
		fds.revents = 0;
		poll(&fds, 1, 0);
		return fds.revents;
	}
	if (rs->state & rs_opening) {
		if (!rs_do_connect(rs) || errno != EINPROGRESS)
			goto check_cq;
		errno = 0;
	}
	if (rs->state == rs_connect_error)
		return (short)((events & (POLLIN | POLLOUT)) | POLLERR);
	return 0;
}

static int rs_poll_check(struct pollfd *fds, nfds_t nfds)
{
	int cnt = 0;

	for (nfds_t i = 0; i < nfds; i++) {
		struct rsocket *rs = rs_lookup(fds[i].fd);

		if (rs)
			fds[i].revents = rs_poll_rs(rs, fds[i].events, true, rs_poll_all);
		else
			poll(&fds[i], 1, 0);
		if (fds[i].revents)
			cnt++;
	}
	return cnt;
}

/* Arms every rsocket's CQ (or takes its event at once) and puts the descriptors the
 * kernel can wait on in @p rfds, two per entry of @p fds: the CQ channel once connected,
 * the CM channel before; and, connected, the CM channel too (the peer gone, see
 * rs_take_cm_events). An unused slot has fd -1, which poll ignores. */
static int rs_poll_arm(struct pollfd *rfds, struct pollfd *fds, nfds_t nfds)
{
	for (nfds_t i = 0; i < nfds; i++) {
		struct rsocket *rs = rs_lookup(fds[i].fd);
		struct pollfd *r = &rfds[2 * i];

		r[1] = (struct pollfd){.fd = -1};
		if (rs) {
			fds[i].revents = rs_poll_rs(rs, fds[i].events, false, rs_is_cq_armed);
			if (fds[i].revents)
				return 1;
			if (rs->state >= rs_connected && rs->cm_id->recv_cq_channel) {
				r[0].fd = rs->cm_id->recv_cq_channel->fd;
				if (rs->state & rs_connected)
					r[1] = (struct pollfd){.fd = rs->cm_id->channel->fd,
							       .events = POLLIN};
			} else {
				r[0].fd = rs->cm_id->channel->fd;
			}
			r[0].events = POLLIN;
		} else {
			r[0].fd = fds[i].fd;
			r[0].events = fds[i].events;
		}
		r[0].revents = 0;
	}
	return 0;
}

static int rs_poll_events(struct pollfd *rfds, struct pollfd *fds, nfds_t nfds)
{
	int cnt = 0;

	for (nfds_t i = 0; i < nfds; i++) {
		const struct pollfd *r = &rfds[2 * i];
		struct rsocket *rs;

		if (!r[0].revents && !r[1].revents)
			continue;
		rs = rs_lookup(fds[i].fd);
		if (rs) {
			if (r[1].revents)
				rs_take_cm_events(rs);
			if (r[0].revents) {
				pthread_mutex_lock(&rs->cq_wait_lock);
				rs_get_cq_event(rs);
				pthread_mutex_unlock(&rs->cq_wait_lock);
			}
			fds[i].revents = rs_poll_rs(rs, fds[i].events, true, rs_poll_all);
		} else {
			fds[i].revents = r[0].revents;
		}
		if (fds[i].revents)
			cnt++;
	}
	return cnt;
}

/* Every descriptor is looked at at least once; events that are not the caller's (credits,
 * connection steps) are taken and the wait goes on. */
UCMA_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	struct pollfd *rfds;
	uint64_t start = 0;
	int ret;

	do {
		ret = rs_poll_check(fds, nfds);
		if (ret || !timeout)
			return ret;
		if (!start)
			start = rs_now_us();
	} while (rs_now_us() - start <= rs_def.polling_time);

	rfds = calloc(nfds ? 2 * nfds : 1, sizeof(*rfds));
	if (!rfds)
		return ucma_fail(ENOMEM);
	do {
		ret = rs_poll_arm(rfds, fds, nfds);
		if (ret)
			break;
		ret = poll(rfds, 2 * nfds, timeout);
		if (ret <= 0)
			break;
		ret = rs_poll_events(rfds, fds, nfds);
	} while (!ret);
	free(rfds);
	return ret;
}

UCMA_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
			struct timeval *timeout)
{
	struct pollfd *fds;
	int n = 0, ret, to;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return ucma_fail(EINVAL);
	fds = calloc(nfds ? (size_t)nfds : 1, sizeof(*fds));
	if (!fds)
		return ucma_fail(ENOMEM);
	for (int fd = 0; fd < nfds; fd++) {
		short ev = 0;
		bool want = false;

		if (readfds && FD_ISSET(fd, readfds))
			ev |= POLLIN, want = true;
		if (writefds && FD_ISSET(fd, writefds))
			ev |= POLLOUT, want = true;
		if (exceptfds && FD_ISSET(fd, exceptfds))
			want = true;
		if (want) {
			fds[n].fd = fd;
			fds[n].events = ev;
			n++;
		}
	}
	to = timeout ? (int)(timeout->tv_sec * 1000 + timeout->tv_usec / 1000) : -1;
	ret = rpoll(fds, (nfds_t)n, to);
	if (readfds)
		FD_ZERO(readfds);
	if (writefds)
		FD_ZERO(writefds);
	if (exceptfds)
		FD_ZERO(exceptfds);
	if (ret > 0) {
		ret = 0;
		for (int i = 0; i < n; i++) {
			if (readfds && (fds[i].revents & (POLLIN | POLLHUP))) {
				FD_SET(fds[i].fd, readfds);
				ret++;
			}
			if (writefds && (fds[i].revents & POLLOUT)) {
				FD_SET(fds[i].fd, writefds);
				ret++;
			}
			if (exceptfds && (fds[i].revents & ~(POLLIN | POLLOUT))) {
				FD_SET(fds[i].fd, exceptfds);
				ret++;
			}
		}
	}
	free(fds);
	return ret;
}

/* ---- socket calls: closing ------------------------------------------------------------------ */

static int rs_set_nonblocking(struct rsocket *rs, int arg)
{
	int ret = 0;

	if (rs->cm_id->recv_cq_channel)
		ret = fcntl(rs->cm_id->recv_cq_channel->fd, F_SETFL, arg);
	if (!ret && rs->state < rs_connected)
		ret = fcntl(rs->cm_id->channel->fd, F_SETFL, arg);
	return ret;
}

/* Tells the peer (DISCONNECT, or SHUTDOWN for a half close), then waits until every send
 * has completed, unless the peer disconnected first. */
UCMA_EXPORT int rshutdown(int socket, int how)
{
	struct rsocket *rs = rs_lookup(socket);
	enum rs_ctrl ctrl;
	int ret = 0;

	if (!rs)
		return ucma_fail(EBADF);
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return ucma_fail(EINVAL);
	if (rs->fd_flags & O_NONBLOCK)
		rs_set_nonblocking(rs, 0);
	if (rs->state & rs_connected) {
		if (how == SHUT_RDWR) {
			ctrl = RS_CTRL_DISCONNECT;
			rs->state &= ~(rs_readable | rs_writable);
		} else if (how == SHUT_WR) {
			rs->state &= ~rs_writable;
			ctrl = (rs->state & rs_readable) ? RS_CTRL_SHUTDOWN : RS_CTRL_DISCONNECT;
		} else {
			rs->state &= ~rs_readable;
			if (rs->state & rs_writable)
				goto out;
			ctrl = RS_CTRL_DISCONNECT;
		}
		if (!rs_ctrl_avail(rs)) {
			ret = rs_process_cq(rs, false, rs_conn_can_send_ctrl);
			if (ret)
				goto out;
		}
		if ((rs->state & rs_connected) && rs_ctrl_avail(rs)) {
			rs->ctrl_seqno++;
			ret = rs_post_msg(rs, rs_msg_set(RS_OP_CTRL, ctrl));
		}
	}
	if (rs->state & rs_connected)
		rs_process_cq(rs, false, rs_conn_all_sends_done);
out:
	if ((rs->fd_flags & O_NONBLOCK) && (rs->state & rs_connected))
		rs_set_nonblocking(rs, rs->fd_flags);
	if ((rs->state & rs_disconnected) && rs->cm_id->qp) {
		/* The QP to the error state flushes the receives: a thread in rpoll wakes. */
		ibv_req_notify_cq(rs->cm_id->recv_cq, 0);
		ucma_modify_qp_err(ucma_id_of(rs->cm_id));
	}
	return ret;
}

UCMA_EXPORT int rclose(int socket)
{
	struct rsocket *rs = rs_lookup(socket);

	if (!rs)
		return ucma_fail(EBADF);
	if (rs->state & rs_connected)
		rshutdown(socket, SHUT_RDWR);
	rs_free(rs);
	return 0;
}

/* ---- socket calls: names, options ------------------------------------------------------------ */

static void rs_copy_addr(struct sockaddr *dst, const struct sockaddr *src, socklen_t *len)
{
	socklen_t full = src->sa_family == AF_INET ? sizeof(struct sockaddr_in)
						   : sizeof(struct sockaddr_in6);

	memcpy(dst, src, *len < full ? *len : full);
	*len = full;
}

UCMA_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsocket *rs = rs_lookup(socket);

	if (!rs)
		return ucma_fail(EBADF);
	rs_copy_addr(addr, rdma_get_peer_addr(rs->cm_id), addrlen);
	return 0;
}

UCMA_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsocket *rs = rs_lookup(socket);

	if (!rs)
		return ucma_fail(EBADF);
	rs_copy_addr(addr, rdma_get_local_addr(rs->cm_id), addrlen);
	return 0;
}

static int rs_optint(const void *optval, socklen_t optlen, int *v)
{
	if (!optval || optlen < sizeof(int))
		return ucma_fail(EINVAL);
	memcpy(v, optval, sizeof(*v));
	return 0;
}

UCMA_EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval,
			    socklen_t optlen)
{
	struct rsocket *rs = rs_lookup(socket);
	uint64_t *opts = NULL;
	int ret = ucma_fail(ENOTSUP), opt_on = 0, v;

	if (!rs)
		return ucma_fail(EBADF);
	if (level != SOL_SOCKET || optname != SO_LINGER) {
		if (rs_optint(optval, optlen, &v))
			return -1;
	} else if (!optval || optlen < sizeof(struct linger)) {
		return ucma_fail(EINVAL);
	}
	switch (level) {
	case SOL_SOCKET:
		opts = &rs->so_opts;
		switch (optname) {
		case SO_REUSEADDR:
			ret = rdma_set_option(rs->cm_id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR,
					      (void *)(uintptr_t)optval, optlen);
			if (ret && rs->state != rs_init)
				ret = 0; /* too late for the CM id: as rdma-core, not an error */
			opt_on = v;
			break;
		case SO_RCVBUF:
			if (!rs->rbuf)
				rs->rbuf_size = (uint32_t)v << 1;
			ret = 0;
			break;
		case SO_SNDBUF:
			if (!rs->sbuf)
				rs->sbuf_size = (uint32_t)v << 1;
			if (rs->sbuf_size < RS_SNDLOWAT)
				rs->sbuf_size = RS_SNDLOWAT << 1;
			ret = 0;
			break;
		case SO_LINGER:
			/* Inverted so that the default (0) is on: rclose always lingers. */
			opt_on = !((const struct linger *)optval)->l_onoff;
			ret = 0;
			break;
		case SO_OOBINLINE:
			opt_on = v;
			ret = 0;
			break;
		default:
			break; /* SO_KEEPALIVE among them: no keep-alive thread here */
		}
		break;
	case IPPROTO_TCP:
		opts = &rs->tcp_opts;
		switch (optname) {
		case TCP_NODELAY:
			opt_on = v; /* every send is written at once anyway */
			ret = 0;
			break;
		case TCP_MAXSEG:
			ret = 0;
			break;
		default:
			break;
		}
		break;
	case IPPROTO_IPV6:
		opts = &rs->ipv6_opts;
		if (optname == IPV6_V6ONLY) {
			ret = rdma_set_option(rs->cm_id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY,
					      (void *)(uintptr_t)optval, optlen);
			opt_on = v;
		}
		break;
	case SOL_RDMA:
		if (rs->state >= rs_opening)
			return ucma_fail(EINVAL);
		switch (optname) {
		case RDMA_SQSIZE:
			rs->sq_size = (uint16_t)((uint32_t)v < RS_QP_MAX_SIZE ? (uint32_t)v
									     : RS_QP_MAX_SIZE);
			ret = 0;
			break;
		case RDMA_RQSIZE:
			rs->rq_size = (uint16_t)((uint32_t)v < RS_QP_MAX_SIZE ? (uint32_t)v
									     : RS_QP_MAX_SIZE);
			ret = 0;
			break;
		case RDMA_INLINE:
			rs->sq_inline = (uint16_t)((uint32_t)v < RS_QP_MAX_SIZE ? (uint32_t)v
									       : RS_QP_MAX_SIZE);
			ret = 0;
			break;
		case RDMA_IOMAPSIZE:
			rs->target_iomap_size =
				rs_scale_to_value(rs_value_to_scale(v, 8) & 0xff, 8);
			ret = 0;
			break;
		default:
			break;
		}
		break;
	default:
		break;
	}
	if (!ret && opts) {
		if (opt_on)
			*opts |= 1ull << optname;
		else
			*opts &= ~(1ull << optname);
	}
	return ret;
}

UCMA_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	struct rsocket *rs = rs_lookup(socket);
	int v;

	if (!rs)
		return ucma_fail(EBADF);
	if (!optval || !optlen)
		return ucma_fail(EINVAL);
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
		case SO_OOBINLINE:
			v = !!(rs->so_opts & (1ull << optname));
			break;
		case SO_RCVBUF:
			v = (int)rs->rbuf_size;
			break;
		case SO_SNDBUF:
			v = (int)rs->sbuf_size;
			break;
		case SO_LINGER: {
			struct linger l = {.l_onoff = !(rs->so_opts & (1ull << optname))};

			if (*optlen < sizeof(l))
				return ucma_fail(EINVAL);
			memcpy(optval, &l, sizeof(l));
			*optlen = sizeof(l);
			return 0;
		}
		case SO_ERROR:
			v = rs->err;
			rs->err = 0;
			break;
		default:
			return ucma_fail(ENOTSUP);
		}
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_NODELAY:
			v = !!(rs->tcp_opts & (1ull << optname));
			break;
		case TCP_MAXSEG:
			v = rs->cm_id->route.num_paths && rs->cm_id->route.path_rec
				    ? 1 << (7 + rs->cm_id->route.path_rec->mtu)
				    : 2048;
			break;
		default:
			return ucma_fail(ENOTSUP);
		}
		break;
	case IPPROTO_IPV6:
		if (optname != IPV6_V6ONLY)
			return ucma_fail(ENOTSUP);
		v = !!(rs->ipv6_opts & (1ull << optname));
		break;
	case SOL_RDMA:
		switch (optname) {
		case RDMA_SQSIZE:
			v = rs->sq_size;
			break;
		case RDMA_RQSIZE:
			v = rs->rq_size;
			break;
		case RDMA_INLINE:
			v = rs->sq_inline;
			break;
		case RDMA_IOMAPSIZE:
			v = rs->target_iomap_size;
			break;
		default:
			return ucma_fail(ENOTSUP);
		}
		break;
	default:
		return ucma_fail(ENOTSUP);
	}
	if (*optlen < sizeof(int))
		return ucma_fail(EINVAL);
	memcpy(optval, &v, sizeof(v));
	*optlen = sizeof(int);
	return 0;
}

UCMA_EXPORT int rfcntl(int socket, int cmd, ...)
{
	struct rsocket *rs = rs_lookup(socket);
	va_list args;
	int param, ret = 0;

	if (!rs)
		return ucma_fail(EBADF);
	va_start(args, cmd);
	switch (cmd) {
	case F_GETFL:
		ret = rs->fd_flags;
		break;
	case F_SETFL:
		param = va_arg(args, int);
		if ((rs->fd_flags & O_NONBLOCK) != (param & O_NONBLOCK))
			ret = rs_set_nonblocking(rs, param & O_NONBLOCK);
		if (!ret)
			rs->fd_flags = param;
		break;
	default:
		ret = ucma_fail(ENOTSUP);
		break;
	}
	va_end(args);
	return ret;
}

/* ---- socket calls: direct placement (riomap, riowrite) --------------------------------------- */

static struct rs_iomap_mr *rs_get_iomap_mr(struct rsocket *rs)
{
	if (!rs->remote_iomappings) {
		uint32_t n = rs->remote_iomap.length ? rs->remote_iomap.length : 1;

		rs->remote_iomappings = calloc(n, sizeof(*rs->remote_iomappings));
		if (!rs->remote_iomappings)
			return NULL;
		for (uint32_t i = 0; i < rs->remote_iomap.length; i++)
			rs->remote_iomappings[i].index = (int)i;
	}
	for (uint32_t i = 0; i < rs->remote_iomap.length; i++)
		if (!rs->remote_iomappings[i].mr)
			return &rs->remote_iomappings[i];
	return NULL;
}

/* Registers @p buf for the peer to riowrite into (PROT_WRITE) at @p offset (-1: the
 * buffer's address). The table entry goes to the peer with the next send. */
UCMA_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	struct rsocket *rs = rs_lookup(socket);
	struct rs_iomap_mr *iomr;
	int access = IBV_ACCESS_LOCAL_WRITE;

	(void)flags;
	if (!rs)
		return ucma_fail(EBADF);
	if (!rs->cm_id->pd || (prot & ~(PROT_WRITE | PROT_NONE)))
		return ucma_fail(EINVAL);
	pthread_mutex_lock(&rs->map_lock);
	if (prot & PROT_WRITE) {
		iomr = rs_get_iomap_mr(rs);
		access |= IBV_ACCESS_REMOTE_WRITE;
	} else {
		iomr = calloc(1, sizeof(*iomr));
		if (iomr)
			iomr->index = -1;
	}
	if (!iomr) {
		offset = ucma_fail(ENOMEM);
		goto out;
	}
	iomr->mr = ibv_reg_mr(rs->cm_id->pd, buf, len, access);
	if (!iomr->mr) {
		if (iomr->index < 0)
			free(iomr);
		offset = -1;
		goto out;
	}
	if (offset == -1)
		offset = (off_t)(uintptr_t)buf;
	iomr->offset = (uint64_t)offset;
	if (iomr->index >= 0) {
		struct rs_iomap_mr **tail = &rs->iomap_queue;

		while (*tail)
			tail = &(*tail)->next;
		iomr->next = NULL;
		*tail = iomr;
		rs->iomap_pending = 1;
	} else {
		iomr->next = rs->iomap_list;
		rs->iomap_list = iomr;
	}
out:
	pthread_mutex_unlock(&rs->map_lock);
	return offset;
}

static bool rs_iomap_unlink(struct rs_iomap_mr **list, const void *buf, size_t len)
{
	for (struct rs_iomap_mr **p = list; *p; p = &(*p)->next) {
		struct rs_iomap_mr *iomr = *p;

		if (iomr->mr->addr == buf && iomr->mr->length == len) {
			*p = iomr->next;
			rs_iomap_release(iomr);
			return true;
		}
	}
	return false;
}

UCMA_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	struct rsocket *rs = rs_lookup(socket);
	bool found;

	if (!rs)
		return ucma_fail(EBADF);
	pthread_mutex_lock(&rs->map_lock);
	found = rs_iomap_unlink(&rs->iomap_list, buf, len) ||
		rs_iomap_unlink(&rs->iomap_queue, buf, len);
	pthread_mutex_unlock(&rs->map_lock);
	return found ? 0 : ucma_fail(EINVAL);
}

static const struct rs_iomap *rs_find_iomap(const struct rsocket *rs, uint64_t offset)
{
	for (int i = 0; i < rs->target_iomap_size; i++)
		if (offset >= rs->target_iomap[i].offset &&
		    offset < rs->target_iomap[i].offset + rs->target_iomap[i].sge.length)
			return &rs->target_iomap[i];
	return NULL;
}

/* Writes into the region the peer riomap()ed at @p offset; no notification. */
UCMA_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	struct rsocket *rs = rs_lookup(socket);
	const struct rs_iomap *iom = NULL;
	const uint8_t *p = buf;
	size_t left = count;
	uint64_t off = (uint64_t)offset;
	uint32_t xfer_size, olen = RS_OLAP_START_SIZE;
	int ret = 0;

	if (!rs)
		return (size_t)ucma_fail(EBADF);
	pthread_mutex_lock(&rs->slock);
	if (rs->iomap_pending) {
		ret = rs_send_iomaps(rs, flags);
		if (ret)
			goto out;
	}
	for (; left; left -= xfer_size, off += xfer_size) {
		if (!iom || off > iom->offset + iom->sge.length) {
			iom = rs_find_iomap(rs, off);
			if (!iom)
				break;
		}
		ret = rs_wait_can_send(rs, flags);
		if (ret)
			break;
		xfer_size = rs_next_xfer(rs, left, &olen,
					 (uint32_t)(iom->offset + iom->sge.length - off));
		if (xfer_size <= rs->sq_inline) {
			struct ibv_sge sge = {.addr = (uintptr_t)p, .length = xfer_size};

			ret = rs_write_direct(rs, iom, off, &sge, 1, xfer_size, IBV_SEND_INLINE);
			p += xfer_size;
		} else {
			int nsge = rs_stage(rs, xfer_size, rs_copy_flat, &p);

			ret = rs_write_direct(rs, iom, off, rs->ssgl, nsge, xfer_size, 0);
			rs_staged(rs, nsge, xfer_size);
		}
		if (ret)
			break;
	}
out:
	pthread_mutex_unlock(&rs->slock);
	return (ret && left == count) ? (size_t)ret : count - left;
}
