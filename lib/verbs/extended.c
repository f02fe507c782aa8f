/* SPDX-License-Identifier: BSD-3-Clause */
/* The extended verbs: ibv_query_device_ex, ibv_create_cq_ex with the polling API
 * (ibv_start_poll / ibv_next_poll / ibv_wc_read_*), ibv_create_qp_ex and the post API
 * (ibv_qp_to_qp_ex, ibv_wr_*). They reach us through struct verbs_context (verbs_device.c sets
 * the ops) and the function pointers of ibv_cq_ex / ibv_qp_ex, all built on the basic
 * calls of lib/client: a CQ is polled one ibv_wc at a time, an ibv_wr_* batch becomes
 * a chain of ibv_send_wr posted at wr_complete. */
#include <stdlib.h>
#include <string.h>

#include "uverbs.h"

/* ---- device ------------------------------------------------------------------------- */

int uv_query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *in,
		       struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;
	int rc;

	if ((in && in->comp_mask) || attr_size < sizeof(attr->orig_attr))
		return uv_err(EINVAL);
	memset(&a, 0, sizeof(a));
	rc = uroce_client_query_device(uv_cl(ctx), &a.orig_attr);
	if (rc)
		return uv_err(rc);
	/* No ODP, TSO, RSS, tag matching, timestamps, packet pacing or device memory:
	 * their capabilities stay zero. Raw packet QPs check and fill IP checksums. */
	a.phys_port_cnt_ex = a.orig_attr.phys_port_cnt;
	a.raw_packet_caps = IBV_RAW_PACKET_CAP_IP_CSUM;
	if (attr_size <= sizeof(a)) {
		memcpy(attr, &a, attr_size);
	} else {
		memset(attr, 0, attr_size);
		memcpy(attr, &a, sizeof(a));
	}
	return 0;
}

/* ---- CQ: the polling API --------------------------------------------------------------- */

static struct uv_cq *uv_cqx(struct ibv_cq_ex *cq)
{
	return uv_cq_of(ibv_cq_ex_to_cq(cq));
}

static int uv_poll_one(struct ibv_cq_ex *cq)
{
	struct uv_cq *u = uv_cqx(cq);
	int n = uroce_client_poll_cq(to_ucq(ibv_cq_ex_to_cq(cq)), 1, &u->cur);

	if (n < 0)
		return -n;
	if (n == 0)
		return ENOENT;
	cq->status = u->cur.status;
	cq->wr_id = u->cur.wr_id;
	return 0;
}

static int uv_start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr)
{
	if (attr->comp_mask)
		return EINVAL;
	return uv_poll_one(cq);
}

static int uv_next_poll(struct ibv_cq_ex *cq)
{
	return uv_poll_one(cq);
}

static void uv_end_poll(struct ibv_cq_ex *cq)
{
	(void)cq;
}

static enum ibv_wc_opcode uv_read_opcode(struct ibv_cq_ex *cq)
{
	return uv_cqx(cq)->cur.opcode;
}

static uint32_t uv_read_vendor_err(struct ibv_cq_ex *cq)
{
	return uv_cqx(cq)->cur.vendor_err;
}

static uint32_t uv_read_byte_len(struct ibv_cq_ex *cq)
{
	return uv_cqx(cq)->cur.byte_len;
}

static __be32 uv_read_imm_data(struct ibv_cq_ex *cq)
{
	return uv_cqx(cq)->cur.imm_data;
}

static uint32_t uv_read_qp_num(struct ibv_cq_ex *cq)
{
	return uv_cqx(cq)->cur.qp_num;
}

static uint32_t uv_read_src_qp(struct ibv_cq_ex *cq)
{
	return uv_cqx(cq)->cur.src_qp;
}

static unsigned int uv_read_wc_flags(struct ibv_cq_ex *cq)
{
	return uv_cqx(cq)->cur.wc_flags;
}

static uint32_t uv_read_slid(struct ibv_cq_ex *cq)
{
	return uv_cqx(cq)->cur.slid;
}

static uint8_t uv_read_sl(struct ibv_cq_ex *cq)
{
	return uv_cqx(cq)->cur.sl;
}

static uint8_t uv_read_dlid_path_bits(struct ibv_cq_ex *cq)
{
	return uv_cqx(cq)->cur.dlid_path_bits;
}

void uv_cq_ex_init(struct ibv_cq_ex *cq)
{
	cq->start_poll = uv_start_poll;
	cq->next_poll = uv_next_poll;
	cq->end_poll = uv_end_poll;
	cq->read_opcode = uv_read_opcode;
	cq->read_vendor_err = uv_read_vendor_err;
	cq->read_byte_len = uv_read_byte_len;
	cq->read_imm_data = uv_read_imm_data;
	cq->read_qp_num = uv_read_qp_num;
	cq->read_src_qp = uv_read_src_qp;
	cq->read_wc_flags = uv_read_wc_flags;
	cq->read_slid = uv_read_slid;
	cq->read_sl = uv_read_sl;
	cq->read_dlid_path_bits = uv_read_dlid_path_bits;
	/* timestamps, cvlan, flow tag, TM info: not offered (create_cq_ex refuses them) */
}

struct ibv_cq_ex *uv_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_cq *cq;

	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD))
		return uv_null(EINVAL);
	if (attr->wc_flags & ~(uint64_t)IBV_WC_STANDARD_FLAGS)
		return uv_null(EOPNOTSUPP); /* completion timestamps, cvlan, flow tag... */
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~(uint32_t)(IBV_CREATE_CQ_ATTR_SINGLE_THREADED |
				       IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)))
		return uv_null(EOPNOTSUPP);
	if (attr->cqe > INT32_MAX || attr->comp_vector > INT32_MAX)
		return uv_null(EINVAL);
	/* A parent domain of this context only (mlx5's rule); the CQ is the same with it. */
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (!attr->parent_domain || attr->parent_domain->context != ctx ||
	     !uv_parent_domain_of(attr->parent_domain)))
		return uv_null(EINVAL);
	cq = uv_create_cq(ctx, (int)attr->cqe, attr->cq_context, attr->channel,
			  (int)attr->comp_vector, attr->wc_flags);
	return cq ? &to_ucq(cq)->ibv_ex : NULL;
}

/* ---- QP ---------------------------------------------------------------------------------- */

#define UV_SEND_OPS                                                                          \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |  \
	 IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |                              \
	 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |              \
	 IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV |     \
	 IBV_QP_EX_WITH_ATOMIC_WRITE)

struct ibv_qp *uv_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_init_attr a;
	uint64_t ops = 0;
	struct ibv_qp *qp;

	if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
					  IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_XRCD))
		return uv_null(EOPNOTSUPP); /* RSS, TSO, flow steering... */
	if (attr->qp_type != IBV_QPT_XRC_RECV &&
	    (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd))
		return uv_null(EINVAL);
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags)
		return uv_null(EOPNOTSUPP);
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		ops = attr->send_ops_flags;
		if (!ops || (ops & ~(uint64_t)UV_SEND_OPS))
			return uv_null(EOPNOTSUPP);
	}
	if (attr->qp_type == IBV_QPT_XRC_SEND || attr->qp_type == IBV_QPT_XRC_RECV)
		return uv_create_xrc_qp(ctx, attr, ops);
	memset(&a, 0, sizeof(a));
	a.qp_context = attr->qp_context;
	a.send_cq = attr->send_cq;
	a.recv_cq = attr->recv_cq;
	a.srq = attr->srq;
	a.cap = attr->cap;
	a.qp_type = attr->qp_type;
	a.sq_sig_all = attr->sq_sig_all;
	qp = uv_create_qp(attr->pd, &a, ops);
	if (qp)
		attr->cap = a.cap;
	return qp;
}

/* ---- the post API: ibv_qp_to_qp_ex and ibv_wr_* ---------------------------------------------- */

/* A WR of the batch: sg_list is set at wr_complete (the arrays may move while it grows).
 * Inline data is copied at once (the caller may reuse its buffer), into the batch's
 * inline buffer. */
struct uv_wr {
	struct ibv_send_wr wr;
	unsigned int sge_first, nsge;
	unsigned int inl_off, inl_len;
	bool inl;
};

static struct uv_qp *uv_qpx(struct ibv_qp_ex *qp)
{
	return uv_qp_of(&qp->qp_base);
}

UV_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct uroce_client_qp *c = to_uqp(qp);
	struct ibv_qp_ex *x = &c->ibv_ex;

	/* Only a QP created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS has the post API. */
	return x->wr_start ? x : uv_null(EOPNOTSUPP);
}

static struct uv_wr *uv_wr_last(struct uv_qp *u)
{
	return u->nwr ? &((struct uv_wr *)(void *)u->wrs)[u->nwr - 1] : NULL;
}

static struct uv_wr *uv_wr_new(struct ibv_qp_ex *qp, enum ibv_wr_opcode op)
{
	struct uv_qp *u = uv_qpx(qp);
	struct uv_wr *w;

	if (u->err)
		return NULL;
	if (u->nwr == u->cap_wr) {
		unsigned int cap = u->cap_wr ? 2 * u->cap_wr : 16;
		void *n = realloc(u->wrs, cap * sizeof(struct uv_wr));

		if (!n) {
			u->err = ENOMEM;
			return NULL;
		}
		u->wrs = n;
		u->cap_wr = cap;
	}
	w = &((struct uv_wr *)(void *)u->wrs)[u->nwr++];
	memset(w, 0, sizeof(*w));
	w->wr.wr_id = qp->wr_id;
	w->wr.send_flags = qp->wr_flags;
	w->wr.opcode = op;
	return w;
}

static void uv_wr_start(struct ibv_qp_ex *qp)
{
	struct uv_qp *u = uv_qpx(qp);

	u->nwr = 0;
	u->ninl = 0;
	u->err = 0;
	u->sges_used = 0;
}

static void uv_wr_abort(struct ibv_qp_ex *qp)
{
	uv_wr_start(qp);
}

static int uv_wr_complete(struct ibv_qp_ex *qp)
{
	struct uv_qp *u = uv_qpx(qp);
	struct uv_wr *w = (struct uv_wr *)(void *)u->wrs;
	struct ibv_send_wr *bad;
	int rc = u->err;

	if (!rc && u->nwr) {
		for (unsigned int i = 0; i < u->nwr; i++) {
			if (w[i].inl) {
				/* one sge over the copied bytes, marked inline */
				w[i].wr.sg_list = &u->sges[w[i].sge_first];
				u->sges[w[i].sge_first] = (struct ibv_sge){
					.addr = (uintptr_t)(u->inl + w[i].inl_off),
					.length = w[i].inl_len};
				w[i].wr.num_sge = 1;
				w[i].wr.send_flags |= IBV_SEND_INLINE;
			} else {
				w[i].wr.sg_list = w[i].nsge ? &u->sges[w[i].sge_first] : NULL;
				w[i].wr.num_sge = (int)w[i].nsge;
			}
			w[i].wr.next = i + 1 < u->nwr ? &w[i + 1].wr : NULL;
		}
		rc = uroce_client_post_send(to_uqp(&qp->qp_base), &w[0].wr, &bad);
	}
	uv_wr_start(qp);
	return rc ? uv_err(rc) : 0;
}

static int uv_sge_reserve(struct uv_qp *u, unsigned int n)
{
	if (u->sges_used + n > u->cap_sges) {
		unsigned int cap = u->cap_sges ? u->cap_sges : 32;
		void *p;

		while (cap < u->sges_used + n)
			cap *= 2;
		p = realloc(u->sges, cap * sizeof(*u->sges));
		if (!p) {
			u->err = ENOMEM;
			return -1;
		}
		u->sges = p;
		u->cap_sges = cap;
	}
	return 0;
}

static void uv_wr_set_sge_list(struct ibv_qp_ex *qp, size_t num_sge, const struct ibv_sge *sg)
{
	struct uv_qp *u = uv_qpx(qp);
	struct uv_wr *w = uv_wr_last(u);

	if (!w || u->err)
		return;
	if (num_sge > INT32_MAX || uv_sge_reserve(u, (unsigned int)num_sge))
		return;
	w->inl = false;
	w->sge_first = u->sges_used;
	w->nsge = (unsigned int)num_sge;
	memcpy(&u->sges[u->sges_used], sg, num_sge * sizeof(*sg));
	u->sges_used += (unsigned int)num_sge;
}

static void uv_wr_set_sge(struct ibv_qp_ex *qp, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = {.addr = addr, .length = length, .lkey = lkey};

	uv_wr_set_sge_list(qp, 1, &sge);
}

static void uv_wr_set_inline_data_list(struct ibv_qp_ex *qp, size_t num_buf,
				       const struct ibv_data_buf *buf)
{
	struct uv_qp *u = uv_qpx(qp);
	struct uv_wr *w = uv_wr_last(u);
	size_t len = 0, i;

	if (!w || u->err)
		return;
	for (i = 0; i < num_buf; i++)
		len += buf[i].length;
	if (len > UINT32_MAX / 2 || uv_sge_reserve(u, 1)) {
		u->err = u->err ? u->err : EINVAL;
		return;
	}
	if (u->ninl + len > u->cap_inl) {
		unsigned int cap = u->cap_inl ? u->cap_inl : 4096;
		void *p;

		while (cap < u->ninl + len)
			cap *= 2;
		p = realloc(u->inl, cap);
		if (!p) {
			u->err = ENOMEM;
			return;
		}
		u->inl = p;
		u->cap_inl = cap;
	}
	w->inl = true;
	w->inl_off = u->ninl;
	w->inl_len = (unsigned int)len;
	for (i = 0; i < num_buf; i++) {
		memcpy(u->inl + u->ninl, buf[i].addr, buf[i].length);
		u->ninl += (unsigned int)buf[i].length;
	}
	w->sge_first = u->sges_used++;
}

static void uv_wr_set_inline_data(struct ibv_qp_ex *qp, void *addr, size_t length)
{
	struct ibv_data_buf b = {.addr = addr, .length = length};

	uv_wr_set_inline_data_list(qp, 1, &b);
}

static void uv_wr_set_ud_addr(struct ibv_qp_ex *qp, struct ibv_ah *ah, uint32_t remote_qpn,
			      uint32_t remote_qkey)
{
	struct uv_wr *w = uv_wr_last(uv_qpx(qp));

	if (!w)
		return;
	w->wr.wr.ud.ah = ah;
	w->wr.wr.ud.remote_qpn = remote_qpn;
	w->wr.wr.ud.remote_qkey = remote_qkey;
}

static void uv_wr_send(struct ibv_qp_ex *qp)
{
	uv_wr_new(qp, IBV_WR_SEND);
}

static void uv_wr_send_imm(struct ibv_qp_ex *qp, __be32 imm)
{
	struct uv_wr *w = uv_wr_new(qp, IBV_WR_SEND_WITH_IMM);

	if (w)
		w->wr.imm_data = imm;
}

static void uv_wr_rdma(struct ibv_qp_ex *qp, enum ibv_wr_opcode op, uint32_t rkey,
		       uint64_t remote_addr, __be32 imm)
{
	struct uv_wr *w = uv_wr_new(qp, op);

	if (!w)
		return;
	w->wr.wr.rdma.rkey = rkey;
	w->wr.wr.rdma.remote_addr = remote_addr;
	w->wr.imm_data = imm;
}

static void uv_wr_rdma_write(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr)
{
	uv_wr_rdma(qp, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void uv_wr_rdma_write_imm(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr,
				 __be32 imm)
{
	uv_wr_rdma(qp, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr, imm);
}

static void uv_wr_rdma_read(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr)
{
	uv_wr_rdma(qp, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void uv_wr_atomic(struct ibv_qp_ex *qp, enum ibv_wr_opcode op, uint32_t rkey,
			 uint64_t remote_addr, uint64_t compare_add, uint64_t swap)
{
	struct uv_wr *w = uv_wr_new(qp, op);

	if (!w)
		return;
	w->wr.wr.atomic.rkey = rkey;
	w->wr.wr.atomic.remote_addr = remote_addr;
	w->wr.wr.atomic.compare_add = compare_add;
	w->wr.wr.atomic.swap = swap;
}

static void uv_wr_atomic_cmp_swp(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr,
				 uint64_t compare, uint64_t swap)
{
	uv_wr_atomic(qp, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr, compare, swap);
}

static void uv_wr_atomic_fetch_add(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr,
				   uint64_t add)
{
	uv_wr_atomic(qp, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr, add, 0);
}

/* Operations uroce does not offer (TSO): the batch fails at wr_complete with
 * EOPNOTSUPP. */
static void uv_wr_unsupported(struct ibv_qp_ex *qp)
{
	struct uv_qp *u = uv_qpx(qp);

	if (!u->err)
		u->err = EOPNOTSUPP;
}

/* A type 2 window's bind: the application chose @p rkey (ibv_inc_rkey of the window's)
 * and gives the window that R_Key itself once the bind completes. */
static void uv_wr_bind_mw(struct ibv_qp_ex *qp, struct ibv_mw *mw, uint32_t rkey,
			  const struct ibv_mw_bind_info *info)
{
	struct uv_wr *w = uv_wr_new(qp, IBV_WR_BIND_MW);

	if (!w)
		return;
	w->wr.bind_mw.mw = mw;
	w->wr.bind_mw.rkey = rkey;
	w->wr.bind_mw.bind_info = *info;
}

static void uv_wr_local_inv(struct ibv_qp_ex *qp, uint32_t rkey)
{
	struct uv_wr *w = uv_wr_new(qp, IBV_WR_LOCAL_INV);

	if (w)
		w->wr.invalidate_rkey = rkey;
}

static void uv_wr_send_inv(struct ibv_qp_ex *qp, uint32_t rkey)
{
	struct uv_wr *w = uv_wr_new(qp, IBV_WR_SEND_WITH_INV);

	if (w)
		w->wr.invalidate_rkey = rkey;
}

static void uv_wr_send_tso(struct ibv_qp_ex *qp, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr, (void)hdr_sz, (void)mss;
	uv_wr_unsupported(qp);
}

/* The XRC SRQ of the peer the last WR is for (an XRC initiator's WRs each name one). */
static void uv_wr_set_xrc_srqn(struct ibv_qp_ex *qp, uint32_t srqn)
{
	struct uv_wr *w = uv_wr_last(uv_qpx(qp));

	if (w)
		w->wr.qp_type.xrc.remote_srqn = srqn;
}

/* IBTA 1.5 RDMA Atomic Write: the 8 bytes at @p atomic_wr are copied now, as inline data
 * (post_send takes the value from them). */
static void uv_wr_atomic_write(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr,
			       const void *atomic_wr)
{
	uv_wr_rdma(qp, IBV_WR_ATOMIC_WRITE, rkey, remote_addr, 0);
	uv_wr_set_inline_data(qp, (void *)(uintptr_t)atomic_wr, 8);
}

void uv_qp_ex_init(struct ibv_qp_ex *qp)
{
	qp->wr_atomic_cmp_swp = uv_wr_atomic_cmp_swp;
	qp->wr_atomic_fetch_add = uv_wr_atomic_fetch_add;
	qp->wr_bind_mw = uv_wr_bind_mw;
	qp->wr_local_inv = uv_wr_local_inv;
	qp->wr_rdma_read = uv_wr_rdma_read;
	qp->wr_rdma_write = uv_wr_rdma_write;
	qp->wr_rdma_write_imm = uv_wr_rdma_write_imm;
	qp->wr_send = uv_wr_send;
	qp->wr_send_imm = uv_wr_send_imm;
	qp->wr_send_inv = uv_wr_send_inv;
	qp->wr_send_tso = uv_wr_send_tso;
	qp->wr_set_ud_addr = uv_wr_set_ud_addr;
	qp->wr_set_xrc_srqn = uv_wr_set_xrc_srqn;
	qp->wr_set_inline_data = uv_wr_set_inline_data;
	qp->wr_set_inline_data_list = uv_wr_set_inline_data_list;
	qp->wr_set_sge = uv_wr_set_sge;
	qp->wr_set_sge_list = uv_wr_set_sge_list;
	qp->wr_start = uv_wr_start;
	qp->wr_complete = uv_wr_complete;
	qp->wr_abort = uv_wr_abort;
	qp->wr_atomic_write = uv_wr_atomic_write;
}

void uv_qp_ex_free(struct uv_qp *u)
{
	free(u->wrs);
	free(u->sges);
	free(u->inl);
}

/* ---- flow steering (raw packet QPs) ------------------------------------------------------ */

/* ibv_create_flow: NULL and errno as rdma-core's (EINVAL, EOPNOTSUPP, EPERM...). */
struct ibv_flow *uv_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *attr)
{
	struct ibv_flow *flow = calloc(1, sizeof(*flow));
	uint32_t handle;
	int rc;

	if (!flow)
		return uv_null(ENOMEM);
	rc = uroce_client_create_flow(to_uqp(qp), attr, &handle);
	if (rc) {
		free(flow);
		return uv_null(rc);
	}
	flow->context = qp->context;
	flow->handle = handle;
	return flow;
}

/* ibv_destroy_flow: 0, or a positive errno (the rule stays, and so does @flow). */
int uv_destroy_flow(struct ibv_flow *flow)
{
	int rc = uroce_client_destroy_flow(uv_cl(flow->context), flow->handle);

	if (rc)
		return uv_err(rc);
	free(flow);
	return 0;
}
