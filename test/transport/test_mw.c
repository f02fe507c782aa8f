/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/transport, deterministic, on two hosts (behaviour.h). Memory windows (IBA 10.6.7;
 * Linux rxe's rxe_mw.c): host 1 opens part of an MR through a window, by a BIND_MW work
 * request on one of its QPs, and host 0 reaches the bytes through the window's R_Key.
 * Type 1 and type 2, the rules a bind must keep, local and remote invalidation, the
 * objects' lifetimes, and local work requests in order with the others, across a
 * go-back. Each asserts the exact statuses, opcodes, keys, QP states and what memory
 * holds afterwards.
 */
#include "behaviour.h"

/* The target MR: host 1's bytes [T_OFF, T_OFF + T_LEN); the window: [W_OFF, + W_LEN). */
#define T_OFF 8192u
#define T_LEN 4096u
#define W_OFF (T_OFF + 1024u)
#define W_LEN 2048u
#define ACC_MR                                                                       \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)
#define ACC_RW (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE)

/* An MR of host 1 (its PD) over the target bytes, which hold 0xee. */
static struct uroce_tp_mr *target(struct env *e, unsigned int access, uint32_t *lkey)
{
	struct uroce_tp_mr *mr;

	memset(hp(e, 1, T_OFF), 0xee, T_LEN);
	mr = uroce_tp_reg_mr(e->pd[1], va(e, 1, T_OFF), hp(e, 1, T_OFF), T_LEN, access);
	cr_assert_not_null(mr);
	uroce_tp_mr_keys(mr, lkey, NULL);
	return mr;
}

/* The R_Key a bind gives next: the key byte one up, as ibv_inc_rkey. */
static uint32_t next_key(uint32_t rkey)
{
	return (rkey & ~0xffu) | ((rkey + 1) & 0xffu);
}

static struct uroce_tp_send_wqe bind_wr(uint64_t id, uint32_t mw_rkey, uint32_t mr_lkey,
					uint64_t addr, uint64_t length, unsigned int access)
{
	struct uroce_tp_send_wqe w;

	memset(&w, 0, sizeof(w));
	w.wr_id = id;
	w.opcode = IBV_WR_BIND_MW;
	w.send_flags = IBV_SEND_SIGNALED;
	w.bind.mw_rkey = mw_rkey;
	w.bind.rkey = next_key(mw_rkey);
	w.bind.mr_lkey = mr_lkey;
	w.bind.access = access;
	w.bind.addr = addr;
	w.bind.length = length;
	return w;
}

static struct uroce_tp_send_wqe inv_wr(uint64_t id, uint32_t rkey)
{
	struct uroce_tp_send_wqe w;

	memset(&w, 0, sizeof(w));
	w.wr_id = id;
	w.opcode = IBV_WR_LOCAL_INV;
	w.send_flags = IBV_SEND_SIGNALED;
	w.invalidate_rkey = rkey;
	return w;
}

/* Runs until host @h's send CQ holds @n completions. */
static void wait_sc(struct env *e, int h, int n)
{
	e->want_sc[h] = n;
	cr_assert(sim_run(&e->s, e->s.now + 100 * MS, wants_met, e),
		  "host %d: %d send completions, %d expected", h, e->sc[h].n, n);
	e->want_sc[h] = 0;
}

/* Host 1 posts the local WQE @w on @qp; it completes next on host 1's send CQ with @st,
 * and the QP is in RTS after a success, in ERR after a failure. */
static void local_op(struct env *e, struct uroce_tp_qp *qp, const struct uroce_tp_send_wqe *w,
		     enum ibv_wc_status st)
{
	int n = e->sc[1].n;
	const struct ibv_wc *wc;

	cr_assert_eq(uroce_tp_post_send(qp, w, e->s.now), 0, "post wr %lu",
		     (unsigned long)w->wr_id);
	wait_sc(e, 1, n + 1);
	cr_assert_eq(e->sc[1].n, n + 1, "one completion");
	wc = &e->sc[1].wc[n];
	expect_wc(wc, w->wr_id, st);
	cr_assert_eq(wc->opcode, w->opcode == IBV_WR_BIND_MW ? IBV_WC_BIND_MW : IBV_WC_LOCAL_INV);
	cr_assert_eq(wc->byte_len, 0);
	cr_assert_eq(wc->qp_num, uroce_tp_qp_num(qp));
	cr_assert_eq(uroce_tp_qp_state(qp), st == IBV_WC_SUCCESS ? IBV_QPS_RTS : IBV_QPS_ERR);
}

/* Binds @mw on @qp to [@addr, + @len) of the MR @lkey with @access; checks the new key. */
static uint32_t bind_ok(struct env *e, struct uroce_tp_qp *qp, struct uroce_tp_mw *mw, uint64_t id,
			uint32_t lkey, uint64_t addr, uint64_t len, unsigned int access)
{
	uint32_t old = uroce_tp_mw_rkey(mw);
	struct uroce_tp_send_wqe w = bind_wr(id, old, lkey, addr, len, access);

	local_op(e, qp, &w, IBV_WC_SUCCESS);
	cr_assert_eq(uroce_tp_mw_rkey(mw), next_key(old), "R_Key %#x after a bind of %#x",
		     uroce_tp_mw_rkey(mw), old);
	return uroce_tp_mw_rkey(mw);
}

/* A fresh RC pair qp[0] <-> qp[1] (after one went to ERR), of the same PDs. */
static void new_pair(struct env *e, const struct sim_qp_opts *o)
{
	e->qp[0] = mkqp(e, 0, IBV_QPT_RC, NULL, false, 32);
	e->qp[1] = mkqp(e, 1, IBV_QPT_RC, NULL, false, 32);
	sim_connect(&e->s, e->qp[0], 0, e->qp[1], 1, o);
}

/* Host 0's qp[0] does @op (WRITE, READ, FETCH_AND_ADD 5) of @len bytes between its bytes
 * at @loff and host 1's @rva by @rkey; it completes with @st. A refusal is a NAK Remote
 * Access Error: both QPs in ERR. */
static void remote(struct env *e, uint64_t id, enum ibv_wr_opcode op, uint64_t loff, uint32_t len,
		   uint64_t rva, uint32_t rkey, enum ibv_wc_status st)
{
	struct uroce_tp_send_wqe w = wr(id, op, va(e, 0, loff), len, e->key[0], true);
	int n = e->sc[0].n;

	w.remote_addr = rva;
	w.rkey = rkey;
	w.compare_add = 5;
	post(e, 0, &w);
	cr_assert(run_until(e, n + 1, 0, 100 * MS));
	expect_wc(&e->sc[0].wc[n], id, st);
	if (st == IBV_WC_SUCCESS) {
		cr_assert_eq(e->sc[0].wc[n].opcode, op == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE :
						    op == IBV_WR_RDMA_READ  ? IBV_WC_RDMA_READ :
									      IBV_WC_FETCH_ADD);
		cr_assert_eq(qstate(e, 0), IBV_QPS_RTS);
		cr_assert_eq(qstate(e, 1), IBV_QPS_RTS);
	} else {
		cr_assert_eq(qstate(e, 0), IBV_QPS_ERR);
		cr_assert_eq(qstate(e, 1), IBV_QPS_ERR);
	}
}

/* ==== type 1 =============================================================================== */

/* Bound on host 1's QP to [W_OFF, + W_LEN) of an MR: host 0 WRITEs and READs inside it,
 * any QP of the PD is reached through it, and the MR's bytes around it are not the
 * window's (C10-75 at the responder): a WRITE across its end is refused, nothing lands. */
Test(mw, type1_inside_and_outside)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_mr *mr;
	struct uroce_tp_mw *mw;
	struct uroce_tp_qp *b0, *b1;
	uint32_t lkey, rk0, rk;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	mr = target(&e, ACC_MR, &lkey);
	mw = uroce_tp_alloc_mw(e.pd[1], IBV_MW_TYPE_1);
	cr_assert_not_null(mw);
	rk0 = uroce_tp_mw_rkey(mw);
	cr_assert(rk0 & 0x80000000u, "a window key %#x in the MRs' range", rk0);
	cr_assert_neq(rk0 >> 8, lkey >> 8);

	rk = bind_ok(&e, e.qp[1], mw, 10, lkey, va(&e, 1, W_OFF), W_LEN, ACC_RW);
	fill(hp(&e, 0, 0), 4096, 1);
	remote(&e, 1, IBV_WR_RDMA_WRITE, 0, 256, va(&e, 1, W_OFF + 100), rk, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 1, W_OFF + 100), hp(&e, 0, 0), 256), 0, "the WRITE landed");
	fill(hp(&e, 1, W_OFF), W_LEN, 2);
	remote(&e, 2, IBV_WR_RDMA_READ, 8192, W_LEN, va(&e, 1, W_OFF), rk, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 0, 8192), hp(&e, 1, W_OFF), W_LEN), 0, "the whole window read");

	/* Type 1: any QP of the PD, not only the one that bound it. */
	b0 = mkqp(&e, 0, IBV_QPT_RC, NULL, false, 32);
	b1 = mkqp(&e, 1, IBV_QPT_RC, NULL, false, 32);
	sim_connect(&e.s, b0, 0, b1, 1, &o);
	{
		struct uroce_tp_qp *a0 = e.qp[0], *a1 = e.qp[1];

		e.qp[0] = b0, e.qp[1] = b1;
		remote(&e, 3, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, W_OFF + W_LEN - 64), rk,
		       IBV_WC_SUCCESS);
		cr_assert_eq(memcmp(hp(&e, 1, W_OFF + W_LEN - 64), hp(&e, 0, 0), 64), 0);
		e.qp[0] = a0, e.qp[1] = a1;
	}

	/* 128 bytes inside, 128 past the end: refused whole, the MR beyond untouched. */
	fill(hp(&e, 1, W_OFF), W_LEN, 3);
	remote(&e, 4, IBV_WR_RDMA_WRITE, 0, 256, va(&e, 1, W_OFF + W_LEN - 128), rk,
	       IBV_WC_REM_ACCESS_ERR);
	cr_assert_eq(nacks(1, UROCE_AETH_NAK, UROCE_NAK_REM_ACCESS_ERR), 1);
	cr_assert(all_bytes(hp(&e, 1, W_OFF + W_LEN), T_LEN - (W_OFF - T_OFF) - W_LEN, 0xee));
	{
		uint8_t want[W_LEN];

		fill(want, W_LEN, 3);
		cr_assert_eq(memcmp(hp(&e, 1, W_OFF), want, W_LEN), 0, "the window untouched");
	}
	/* Before it, by a byte; a READ too. */
	new_pair(&e, &o);
	remote(&e, 5, IBV_WR_RDMA_READ, 0, 16, va(&e, 1, W_OFF - 1), rk, IBV_WC_REM_ACCESS_ERR);
	(void)mr;
	env_fini(&e); /* the device goes with the window bound: windows first, then MRs */
}

/* An unbound type 1 window opens nothing; its rights are the window's, not the MR's:
 * a WRITE into a read-only window is refused though the MR takes remote writes, an
 * atomic needs REMOTE_ATOMIC on the window. */
Test(mw, type1_rights_are_the_windows)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_mw *mw;
	uint32_t lkey, rk;
	uint64_t v;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	target(&e, ACC_MR, &lkey);
	mw = uroce_tp_alloc_mw(e.pd[1], IBV_MW_TYPE_1);
	cr_assert_not_null(mw);
	remote(&e, 1, IBV_WR_RDMA_READ, 0, 64, va(&e, 1, W_OFF), uroce_tp_mw_rkey(mw),
	       IBV_WC_REM_ACCESS_ERR);

	new_pair(&e, &o);
	rk = bind_ok(&e, e.qp[1], mw, 10, lkey, va(&e, 1, W_OFF), W_LEN, IBV_ACCESS_REMOTE_READ);
	fill(hp(&e, 0, 0), 64, 4);
	remote(&e, 2, IBV_WR_RDMA_READ, 4096, 64, va(&e, 1, W_OFF), rk, IBV_WC_SUCCESS);
	cr_assert(all_bytes(hp(&e, 0, 4096), 64, 0xee));
	remote(&e, 3, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, W_OFF), rk, IBV_WC_REM_ACCESS_ERR);
	cr_assert(all_bytes(hp(&e, 1, T_OFF), T_LEN, 0xee), "nothing written");

	new_pair(&e, &o);
	remote(&e, 4, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, va(&e, 1, W_OFF + 8), rk,
	       IBV_WC_REM_ACCESS_ERR);
	cr_assert(all_bytes(hp(&e, 1, T_OFF), T_LEN, 0xee), "no atomic executed");

	new_pair(&e, &o);
	rk = bind_ok(&e, e.qp[1], mw, 11, lkey, va(&e, 1, W_OFF), W_LEN, IBV_ACCESS_REMOTE_ATOMIC);
	v = 40;
	memcpy(hp(&e, 1, W_OFF + 8), &v, 8);
	remote(&e, 5, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, va(&e, 1, W_OFF + 8), rk, IBV_WC_SUCCESS);
	memcpy(&v, hp(&e, 1, W_OFF + 8), 8);
	cr_assert_eq(v, 45);
	memcpy(&v, hp(&e, 0, 0), 8);
	cr_assert_eq(v, 40, "the original value");
	env_fini(&e);
}

/* A bind changes only the key byte: the old R_Key is refused, the new one reaches the new
 * range; a bind of length 0 leaves the window valid with nothing behind it. */
Test(mw, type1_rebind_and_unbind)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_mr *mr;
	struct uroce_tp_mw *mw;
	uint32_t lkey, rk1, rk2, rk3;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	mr = target(&e, ACC_MR, &lkey);
	mw = uroce_tp_alloc_mw(e.pd[1], IBV_MW_TYPE_1);
	cr_assert_not_null(mw);
	rk1 = bind_ok(&e, e.qp[1], mw, 10, lkey, va(&e, 1, W_OFF), 512, ACC_RW);
	rk2 = bind_ok(&e, e.qp[1], mw, 11, lkey, va(&e, 1, W_OFF + 1024), 512, ACC_RW);
	cr_assert_eq(rk2 >> 8, rk1 >> 8, "the index stays");
	cr_assert_neq(rk2, rk1);

	remote(&e, 1, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, W_OFF), rk1, IBV_WC_REM_ACCESS_ERR);
	new_pair(&e, &o);
	/* Nor does the new key reach the old range. */
	remote(&e, 2, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, W_OFF), rk2, IBV_WC_REM_ACCESS_ERR);
	cr_assert(all_bytes(hp(&e, 1, T_OFF), T_LEN, 0xee));
	new_pair(&e, &o);
	fill(hp(&e, 0, 0), 64, 5);
	remote(&e, 3, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, W_OFF + 1024), rk2, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 1, W_OFF + 1024), hp(&e, 0, 0), 64), 0);

	/* Length 0: the MR named is not even looked at. */
	rk3 = bind_ok(&e, e.qp[1], mw, 12, 0x12345, 0, 0, 0);
	remote(&e, 4, IBV_WR_RDMA_READ, 0, 64, va(&e, 1, W_OFF + 1024), rk3, IBV_WC_REM_ACCESS_ERR);
	/* Nothing bound: the MR may go, the window stays. */
	cr_assert_eq(uroce_tp_dereg_mr(mr), 0);
	cr_assert_eq(uroce_tp_mw_rkey(mw), rk3);
	cr_assert_eq(uroce_tp_dealloc_mw(mw), 0);
	env_fini(&e);
}

/* Every rule of a bind (rxe_check_bind_mw, IBA 10.6.7): a bind that breaks one completes
 * with MW_BIND_ERR, the QP goes to ERR, and the window is as it was. */
Test(mw, bind_rules)
{
	enum {
		ZERO_BASED,   /* windows are never zero-based here */
		NO_MW_BIND,   /* C10-73 */
		WRITE_NO_LW,  /* C10-74 */
		ATOMIC_NO_LW, /* C10-74 */
		PAST_MR,      /* C10-75 */
		BEFORE_MR,    /* C10-75 */
		WRAPS,	      /* C10-75, addr + length past 2^64 */
		OTHER_BIT,    /* remote rights only (LOCAL_WRITE, meaningless, is taken) */
		OTHER_PD_MW,  /* C10-72 */
		OTHER_PD_MR,  /* the MR is looked for in the window's PD */
		NO_MR,
		STALE_KEY,   /* the window named by exactly its R_Key */
		MR_KEY,	     /* an MR's key names no window */
		T2_LENGTH_0, /* o10-37.2.40 */
		NCASES
	};

	for (int c = 0; c < NCASES; c++) {
		struct env e;
		struct sim_qp_opts o = default_opts();
		struct uroce_tp_send_wqe w;
		struct uroce_tp_pd *pd2 = NULL;
		struct uroce_tp_mr *mr, *mr2 = NULL;
		struct uroce_tp_mw *mw;
		unsigned int mr_acc = ACC_MR;
		uint32_t lkey, rk;

		env_init(&e);
		env_pair(&e, IBV_QPT_RC, &o);
		if (c == NO_MW_BIND)
			mr_acc &= ~IBV_ACCESS_MW_BIND;
		if (c == WRITE_NO_LW || c == ATOMIC_NO_LW)
			mr_acc = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND;
		mr = target(&e, mr_acc, &lkey);
		if (c == OTHER_PD_MW || c == OTHER_PD_MR) {
			pd2 = uroce_tp_alloc_pd(e.s.host[1].dev);
			cr_assert_not_null(pd2);
		}
		mw = uroce_tp_alloc_mw(c == OTHER_PD_MW ? pd2 : e.pd[1],
				       c == T2_LENGTH_0 ? IBV_MW_TYPE_2 : IBV_MW_TYPE_1);
		cr_assert_not_null(mw);
		rk = uroce_tp_mw_rkey(mw);
		w = bind_wr(10, rk, lkey, va(&e, 1, W_OFF), W_LEN, ACC_RW);
		switch (c) {
		case ZERO_BASED:
			w.bind.access |= IBV_ACCESS_ZERO_BASED;
			break;
		case WRITE_NO_LW:
			w.bind.access = IBV_ACCESS_REMOTE_WRITE;
			break;
		case ATOMIC_NO_LW:
			w.bind.access = IBV_ACCESS_REMOTE_ATOMIC;
			break;
		case PAST_MR:
			w.bind.addr = va(&e, 1, T_OFF + T_LEN - 100);
			w.bind.length = 200;
			break;
		case BEFORE_MR:
			w.bind.addr = va(&e, 1, T_OFF - 1);
			break;
		case WRAPS:
			w.bind.addr = va(&e, 1, T_OFF + 16);
			w.bind.length = UINT64_MAX - 8;
			break;
		case OTHER_BIT:
			w.bind.access |= IBV_ACCESS_MW_BIND;
			break;
		case OTHER_PD_MW: /* with an MR of its own PD: only C10-72 refuses it */
		case OTHER_PD_MR:
			mr2 = uroce_tp_reg_mr(pd2, va(&e, 1, T_OFF), hp(&e, 1, T_OFF), T_LEN,
					      ACC_MR);
			cr_assert_not_null(mr2);
			uroce_tp_mr_keys(mr2, &w.bind.mr_lkey, NULL);
			break;
		case NO_MR:
			w.bind.mr_lkey = lkey ^ 0x80;
			break;
		case STALE_KEY:
			w.bind.mw_rkey = rk ^ 1;
			break;
		case MR_KEY:
			w.bind.mw_rkey = lkey;
			break;
		case T2_LENGTH_0:
			w.bind.length = 0;
			break;
		}
		local_op(&e, e.qp[1], &w, IBV_WC_MW_BIND_ERR);
		cr_assert_eq(uroce_tp_mw_rkey(mw), rk, "case %d: a refused bind changed the key",
			     c);
		cr_assert_eq(cnt(&e, 1)->send_err, 1);
		/* Nothing was bound to the MR: it may go. */
		cr_assert_eq(uroce_tp_dereg_mr(mr), 0, "case %d", c);
		cr_assert_eq(uroce_tp_dealloc_mw(mw), 0);
		if (mr2)
			cr_assert_eq(uroce_tp_dereg_mr(mr2), 0);
		if (pd2)
			cr_assert_eq(uroce_tp_dealloc_pd(pd2), 0);
		env_fini(&e);
	}
}

/* ==== type 2 =============================================================================== */

/* Free until bound; bound by a BIND_MW on QP A, it is reached through A only: A's peer
 * writes through it, another connection of the same PDs is refused. Bound, it cannot be
 * bound again (o10-37.2.30), on its QP or another. */
Test(mw, type2_bound_to_one_qp)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_mw *mw;
	struct uroce_tp_qp *a0, *a1, *b0, *b1;
	struct uroce_tp_send_wqe w;
	uint32_t lkey, rk;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	a0 = e.qp[0], a1 = e.qp[1];
	target(&e, ACC_MR, &lkey);
	mw = uroce_tp_alloc_mw(e.pd[1], IBV_MW_TYPE_2);
	cr_assert_not_null(mw);
	b0 = mkqp(&e, 0, IBV_QPT_RC, NULL, false, 32);
	b1 = mkqp(&e, 1, IBV_QPT_RC, NULL, false, 32);
	sim_connect(&e.s, b0, 0, b1, 1, &o);

	/* Free: nothing behind its key. */
	e.qp[0] = b0, e.qp[1] = b1;
	remote(&e, 1, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, W_OFF), uroce_tp_mw_rkey(mw),
	       IBV_WC_REM_ACCESS_ERR);
	e.qp[0] = a0, e.qp[1] = a1;

	rk = bind_ok(&e, a1, mw, 10, lkey, va(&e, 1, W_OFF), W_LEN, ACC_RW);
	fill(hp(&e, 0, 0), 256, 6);
	remote(&e, 2, IBV_WR_RDMA_WRITE, 0, 256, va(&e, 1, W_OFF + 8), rk, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 1, W_OFF + 8), hp(&e, 0, 0), 256), 0);

	new_pair(&e, &o);
	remote(&e, 3, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, W_OFF + 512), rk, IBV_WC_REM_ACCESS_ERR);
	cr_assert(all_bytes(hp(&e, 1, W_OFF + 512), 64, 0xee), "another QP's write landed");
	e.qp[0] = a0, e.qp[1] = a1;
	remote(&e, 4, IBV_WR_RDMA_READ, 4096, 64, va(&e, 1, W_OFF + 8), rk, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 0, 4096), hp(&e, 0, 0), 64), 0, "A still reaches it");

	/* Bound: a second bind fails, on another QP of the PD (which then is in ERR) and on
	 * its own; the window stays bound to A, with its key. */
	b1 = mkqp(&e, 1, IBV_QPT_RC, NULL, false, 32);
	sim_connect(&e.s, mkqp(&e, 0, IBV_QPT_RC, NULL, false, 32), 0, b1, 1, &o);
	w = bind_wr(11, rk, lkey, va(&e, 1, W_OFF), 512, ACC_RW);
	local_op(&e, b1, &w, IBV_WC_MW_BIND_ERR);
	cr_assert_eq(uroce_tp_mw_rkey(mw), rk);
	remote(&e, 5, IBV_WR_RDMA_READ, 4096, 64, va(&e, 1, W_OFF + 8), rk, IBV_WC_SUCCESS);
	w.wr_id = 12;
	local_op(&e, a1, &w, IBV_WC_MW_BIND_ERR);
	cr_assert_eq(uroce_tp_mw_rkey(mw), rk);
	env_fini(&e);
}

/* LOCAL_INV frees a bound type 2 window (then refused); a second one finds it free and
 * fails with LOC_QP_OP_ERR, the QP in ERR; freed, it binds again. */
Test(mw, type2_local_invalidate)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_mr *mr;
	struct uroce_tp_mw *mw;
	struct uroce_tp_send_wqe w;
	uint32_t lkey, rk;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	mr = target(&e, ACC_MR, &lkey);
	mw = uroce_tp_alloc_mw(e.pd[1], IBV_MW_TYPE_2);
	cr_assert_not_null(mw);
	rk = bind_ok(&e, e.qp[1], mw, 10, lkey, va(&e, 1, W_OFF), 512, ACC_RW);
	remote(&e, 1, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, W_OFF), rk, IBV_WC_SUCCESS);
	cr_assert_eq(uroce_tp_dereg_mr(mr), -EINVAL, "the MR went under a bound window");

	w = inv_wr(11, rk);
	local_op(&e, e.qp[1], &w, IBV_WC_SUCCESS);
	cr_assert_eq(uroce_tp_mw_rkey(mw), rk, "invalidation keeps the key");
	w.wr_id = 12;
	local_op(&e, e.qp[1], &w, IBV_WC_LOC_QP_OP_ERR);
	cr_assert_eq(cnt(&e, 1)->send_err, 1);

	new_pair(&e, &o);
	remote(&e, 2, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, W_OFF), rk, IBV_WC_REM_ACCESS_ERR);
	new_pair(&e, &o);
	rk = bind_ok(&e, e.qp[1], mw, 13, lkey, va(&e, 1, W_OFF), 512, ACC_RW);
	fill(hp(&e, 0, 0), 64, 7);
	remote(&e, 3, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, W_OFF + 64), rk, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 1, W_OFF + 64), hp(&e, 0, 0), 64), 0);
	/* Invalidated, the window lets the MR go. */
	w = inv_wr(14, rk);
	local_op(&e, e.qp[1], &w, IBV_WC_SUCCESS);
	cr_assert_eq(uroce_tp_dereg_mr(mr), 0);
	env_fini(&e);
}

/* Host 0's qp[0] sends 16 bytes with Invalidate of @rkey to host 1's qp[1], which has a
 * receive WQE for it; @st is the SEND's completion. Refused: NAK Remote Operational Error
 * at its PSN, the receive completes in error (LOC_PROT_ERR), both QPs in ERR. */
static void send_inv(struct env *e, uint64_t id, uint32_t rkey, enum ibv_wc_status st)
{
	struct uroce_tp_send_wqe w = wr(id, IBV_WR_SEND_WITH_INV, va(e, 0, 0), 16, e->key[0], true);
	int n0 = e->sc[0].n, n1 = e->rc[1].n;
	const struct ibv_wc *rwc;

	post_recv(e, 1, 100 + id, 0, 1024);
	w.invalidate_rkey = rkey;
	post(e, 0, &w);
	cr_assert(run_until(e, n0 + 1, n1 + 1, 100 * MS));
	expect_wc(&e->sc[0].wc[n0], id, st);
	rwc = &e->rc[1].wc[n1];
	if (st == IBV_WC_SUCCESS) {
		cr_assert_eq(e->sc[0].wc[n0].opcode, IBV_WC_SEND);
		expect_wc(rwc, 100 + id, IBV_WC_SUCCESS);
		cr_assert_eq(rwc->opcode, IBV_WC_RECV);
		cr_assert_eq(rwc->byte_len, 16);
		cr_assert(rwc->wc_flags & IBV_WC_WITH_INV, "wc_flags %#x", rwc->wc_flags);
		cr_assert_eq(rwc->invalidated_rkey, rkey);
		cr_assert_eq(memcmp(hp(e, 1, 0), hp(e, 0, 0), 16), 0);
		cr_assert_eq(qstate(e, 0), IBV_QPS_RTS);
		cr_assert_eq(qstate(e, 1), IBV_QPS_RTS);
	} else {
		expect_wc(rwc, 100 + id, IBV_WC_LOC_PROT_ERR);
		for (uint32_t i = 0; i < g_tx.n; i++)
			if (g_tx.f[i].from == 1 && g_tx.f[i].opcode == OPC(RC, ACKNOWLEDGE) &&
			    uroce_aeth_type(g_tx.f[i].syn) == UROCE_AETH_NAK &&
			    g_tx.f[i].dqpn == uroce_tp_qp_num(e->qp[0]))
				cr_assert_eq(g_tx.f[i].syn, uroce_aeth_nak(UROCE_NAK_REM_OP_ERR));
		cr_assert_eq(qstate(e, 0), IBV_QPS_ERR);
		cr_assert_eq(qstate(e, 1), IBV_QPS_ERR);
	}
}

/* SEND with Invalidate from the peer of the QP a type 2 window is bound to frees it: the
 * receive completes with IBV_WC_WITH_INV and the R_Key, the window is refused afterwards,
 * and a second invalidation of it is refused as any R_Key it may not revoke; freed, it
 * binds again and lets its MR go. */
Test(mw, type2_send_with_invalidate)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_mr *mr;
	struct uroce_tp_mw *mw;
	uint32_t lkey, rk;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	mr = target(&e, ACC_MR, &lkey);
	mw = uroce_tp_alloc_mw(e.pd[1], IBV_MW_TYPE_2);
	cr_assert_not_null(mw);
	rk = bind_ok(&e, e.qp[1], mw, 10, lkey, va(&e, 1, W_OFF), 512, ACC_RW);
	fill(hp(&e, 0, 0), 64, 8);
	send_inv(&e, 1, rk, IBV_WC_SUCCESS);
	cr_assert_eq(cnt(&e, 1)->duplicate_request, 0);
	remote(&e, 2, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, W_OFF), rk, IBV_WC_REM_ACCESS_ERR);
	cr_assert(all_bytes(hp(&e, 1, T_OFF), T_LEN, 0xee));

	new_pair(&e, &o);
	rk = bind_ok(&e, e.qp[1], mw, 11, lkey, va(&e, 1, W_OFF), 512, ACC_RW);
	remote(&e, 3, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, W_OFF), rk, IBV_WC_SUCCESS);
	send_inv(&e, 4, rk, IBV_WC_SUCCESS);
	send_inv(&e, 5, rk, IBV_WC_REM_OP_ERR);
	cr_assert_eq(uroce_tp_dereg_mr(mr), 0, "a freed window holds no MR");
	cr_assert_eq(uroce_tp_dealloc_mw(mw), 0);
	env_fini(&e);
}

/* A peer revokes only what it was given: SEND with Invalidate of an MR's R_Key, of a type
 * 1 window's, or of a type 2 window bound to another QP is refused as before (Remote
 * Operational Error), and each still works afterwards. */
Test(mw, send_with_invalidate_refused)
{
	for (int c = 0; c < 3; c++) {
		struct env e;
		struct sim_qp_opts o = default_opts();
		struct uroce_tp_mw *mw = NULL;
		struct uroce_tp_qp *b0, *b1;
		uint32_t lkey, rk;

		env_init(&e);
		env_pair(&e, IBV_QPT_RC, &o);
		target(&e, ACC_MR, &lkey);
		b0 = mkqp(&e, 0, IBV_QPT_RC, NULL, false, 32);
		b1 = mkqp(&e, 1, IBV_QPT_RC, NULL, false, 32);
		sim_connect(&e.s, b0, 0, b1, 1, &o);
		rk = lkey; /* c == 0: the MR's R_Key */
		if (c > 0) {
			mw = uroce_tp_alloc_mw(e.pd[1], c == 1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);
			cr_assert_not_null(mw);
			/* Type 2 bound to B, the SEND on A. */
			rk = bind_ok(&e, c == 1 ? e.qp[1] : b1, mw, 10, lkey, va(&e, 1, W_OFF), 512,
				     ACC_RW);
		}
		send_inv(&e, 1, rk, IBV_WC_REM_OP_ERR);
		cr_assert_eq(nacks(1, UROCE_AETH_NAK, ANY), 1);
		e.qp[0] = b0, e.qp[1] = b1;
		fill(hp(&e, 0, 0), 64, 9);
		remote(&e, 2, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, W_OFF), rk, IBV_WC_SUCCESS);
		cr_assert_eq(memcmp(hp(&e, 1, W_OFF), hp(&e, 0, 0), 64), 0, "case %d", c);
		if (mw)
			cr_assert_eq(uroce_tp_dealloc_mw(mw), 0);
		env_fini(&e);
	}
}

/* LOCAL_INV frees only a type 2 window (o10-37.2.26): of a type 1 window, or of an MR's
 * key (uroce has no fast-registered MRs), it fails with LOC_QP_OP_ERR and the QP goes to
 * ERR; the window and the MR still work. */
Test(mw, local_invalidate_refused)
{
	for (int c = 0; c < 2; c++) {
		struct env e;
		struct sim_qp_opts o = default_opts();
		struct uroce_tp_send_wqe w;
		struct uroce_tp_mw *mw;
		uint32_t lkey, rk;

		env_init(&e);
		env_pair(&e, IBV_QPT_RC, &o);
		target(&e, ACC_MR, &lkey);
		mw = uroce_tp_alloc_mw(e.pd[1], IBV_MW_TYPE_1);
		cr_assert_not_null(mw);
		rk = bind_ok(&e, e.qp[1], mw, 10, lkey, va(&e, 1, W_OFF), 512, ACC_RW);
		w = inv_wr(11, c == 0 ? rk : lkey);
		local_op(&e, e.qp[1], &w, IBV_WC_LOC_QP_OP_ERR);
		cr_assert_eq(uroce_tp_mw_rkey(mw), rk);
		new_pair(&e, &o);
		fill(hp(&e, 0, 0), 64, 10);
		remote(&e, 1, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, W_OFF), c == 0 ? rk : lkey,
		       IBV_WC_SUCCESS);
		cr_assert_eq(memcmp(hp(&e, 1, W_OFF), hp(&e, 0, 0), 64), 0);
		env_fini(&e);
	}
}

/* ==== lifetimes ============================================================================= */

/* Reregistration under the same keys (uroce_tp_mr_swap_keys): the new MR answers to the old
 * keys, a peer's WRITE with the old R_Key lands in the new one; refused, nothing swapped,
 * while a window is bound to the old MR. */
Test(mw, rereg_swaps_keys_unless_a_window_is_bound)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_mr *old, *fresh;
	struct uroce_tp_mw *mw;
	uint32_t lkey, rkey, fl, fr, l, r;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	old = target(&e, ACC_MR, &lkey);
	uroce_tp_mr_keys(old, NULL, &rkey);
	memset(hp(&e, 1, 0), 0, 512);
	fresh = uroce_tp_reg_mr(e.pd[1], va(&e, 1, 0), hp(&e, 1, 0), 512, ACC_MR);
	cr_assert_not_null(fresh);
	uroce_tp_mr_keys(fresh, &fl, &fr);

	mw = uroce_tp_alloc_mw(e.pd[1], IBV_MW_TYPE_1);
	cr_assert_not_null(mw);
	bind_ok(&e, e.qp[1], mw, 10, lkey, va(&e, 1, W_OFF), 512, ACC_RW);
	cr_assert_eq(uroce_tp_mr_swap_keys(old, fresh), -EINVAL);
	uroce_tp_mr_keys(old, &l, &r);
	cr_assert(l == lkey && r == rkey, "a refused swap changed the keys");
	cr_assert_eq(uroce_tp_dealloc_mw(mw), 0);

	cr_assert_eq(uroce_tp_mr_swap_keys(old, fresh), 0);
	uroce_tp_mr_keys(fresh, &l, &r);
	cr_assert(l == lkey && r == rkey, "the new MR has %x/%x, not the old keys", l, r);
	uroce_tp_mr_keys(old, &l, &r);
	cr_assert(l == fl && r == fr, "the old MR has %x/%x, not the new one's keys", l, r);
	cr_assert_eq(uroce_tp_dereg_mr(old), 0);
	fill(hp(&e, 0, 0), 64, 13);
	remote(&e, 1, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, 100), rkey, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 1, 100), hp(&e, 0, 0), 64), 0, "not in the new MR");
	cr_assert_eq(uroce_tp_dereg_mr(fresh), 0);
	env_fini(&e);
}

/* An MR with a window bound cannot be deregistered (-EINVAL, and it still works); once
 * the window is deallocated it can. A PD with a window cannot go (-EBUSY). */
Test(mw, dereg_mr_and_dealloc_pd)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_mr *mr;
	struct uroce_tp_mw *mw, *mw2;
	struct uroce_tp_pd *pd2;
	uint32_t lkey;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	for (int type = IBV_MW_TYPE_1; type <= IBV_MW_TYPE_2; type++) {
		mr = target(&e, ACC_MR, &lkey);
		mw = uroce_tp_alloc_mw(e.pd[1], (enum ibv_mw_type)type);
		cr_assert_not_null(mw);
		bind_ok(&e, e.qp[1], mw, 10, lkey, va(&e, 1, W_OFF), 512, ACC_RW);
		cr_assert_eq(uroce_tp_dereg_mr(mr), -EINVAL, "type %d", type);
		fill(hp(&e, 0, 0), 64, 11);
		remote(&e, 1, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, T_OFF), lkey, IBV_WC_SUCCESS);
		cr_assert_eq(memcmp(hp(&e, 1, T_OFF), hp(&e, 0, 0), 64), 0, "the MR still works");
		cr_assert_eq(uroce_tp_dealloc_mw(mw), 0);
		cr_assert_eq(uroce_tp_dereg_mr(mr), 0);
	}

	pd2 = uroce_tp_alloc_pd(e.s.host[1].dev);
	cr_assert_not_null(pd2);
	mw = uroce_tp_alloc_mw(pd2, IBV_MW_TYPE_1);
	mw2 = uroce_tp_alloc_mw(pd2, IBV_MW_TYPE_2);
	cr_assert(mw && mw2);
	cr_assert_neq(uroce_tp_mw_rkey(mw) >> 8, uroce_tp_mw_rkey(mw2) >> 8);
	cr_assert_eq(uroce_tp_dealloc_pd(pd2), -EBUSY);
	cr_assert_eq(uroce_tp_dealloc_mw(mw), 0);
	cr_assert_eq(uroce_tp_dealloc_pd(pd2), -EBUSY);
	cr_assert_eq(uroce_tp_dealloc_mw(mw2), 0);
	cr_assert_eq(uroce_tp_dealloc_pd(pd2), 0);

	errno = 0;
	cr_assert_null(uroce_tp_alloc_mw(e.pd[1], (enum ibv_mw_type)3));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(uroce_tp_alloc_mw(e.pd[1], (enum ibv_mw_type)0));
	cr_assert_eq(errno, EINVAL);
	env_fini(&e);
}

/* A type 2 window bound to a QP that is destroyed is free: no window keeps the QP, and it
 * binds again, on another QP, whose peer reaches it. */
Test(mw, destroy_qp_frees_type2)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_mr *mr;
	struct uroce_tp_mw *mw;
	uint32_t lkey, rk;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	mr = target(&e, ACC_MR, &lkey);
	mw = uroce_tp_alloc_mw(e.pd[1], IBV_MW_TYPE_2);
	cr_assert_not_null(mw);
	rk = bind_ok(&e, e.qp[1], mw, 10, lkey, va(&e, 1, W_OFF), 512, ACC_RW);
	cr_assert_eq(uroce_tp_destroy_qp(e.qp[1]), 0);
	cr_assert_eq(uroce_tp_destroy_qp(e.qp[0]), 0);
	cr_assert_eq(uroce_tp_dereg_mr(mr), 0, "the window let the MR go with its QP");
	mr = target(&e, ACC_MR, &lkey);

	new_pair(&e, &o);
	remote(&e, 1, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, W_OFF), rk, IBV_WC_REM_ACCESS_ERR);
	new_pair(&e, &o);
	rk = bind_ok(&e, e.qp[1], mw, 11, lkey, va(&e, 1, W_OFF), 512, ACC_RW);
	fill(hp(&e, 0, 0), 64, 12);
	remote(&e, 2, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, W_OFF), rk, IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 1, W_OFF), hp(&e, 0, 0), 64), 0);
	/* Destroyed in ERR too, the window still bound: the device goes with it after. */
	env_fini(&e);
}

/* ==== posting, and local WQEs among the others =============================================== */

/* BIND_MW on RC and UC, LOCAL_INV on RC only, neither on UD; without SGEs or inline data
 * (-EINVAL). An unsignaled bind that succeeds completes silently. A window's key is never
 * an L_Key: a local SGE with one fails with LOC_PROT_ERR. */
Test(mw, posting)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct uroce_tp_qp *uc[2], *ud;
	struct uroce_tp_mw *mw;
	uint32_t lkey, rk;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	target(&e, ACC_MR, &lkey);
	mw = uroce_tp_alloc_mw(e.pd[1], IBV_MW_TYPE_1);
	cr_assert_not_null(mw);
	rk = uroce_tp_mw_rkey(mw);
	uc[0] = mkqp(&e, 0, IBV_QPT_UC, NULL, false, 8);
	uc[1] = mkqp(&e, 1, IBV_QPT_UC, NULL, false, 8);
	sim_connect(&e.s, uc[0], 0, uc[1], 1, &o);
	ud = mkqp(&e, 1, IBV_QPT_UD, NULL, false, 8);
	sim_ud_ready(&e.s, ud, 1, 0);

	w = bind_wr(1, rk, lkey, va(&e, 1, W_OFF), 512, ACC_RW);
	w.num_sge = 1;
	cr_assert_eq(uroce_tp_post_send(e.qp[1], &w, 0), -EINVAL, "BIND_MW with an SGE");
	w.num_sge = 0;
	w.send_flags |= IBV_SEND_INLINE;
	cr_assert_eq(uroce_tp_post_send(e.qp[1], &w, 0), -EINVAL, "BIND_MW inline");
	w.send_flags = IBV_SEND_SIGNALED;
	w.ah = sim_ah(&e.s, e.pd[1], 1, 0);
	cr_assert_eq(uroce_tp_post_send(ud, &w, 0), -EINVAL, "BIND_MW on UD");
	w = inv_wr(2, rk);
	w.num_sge = 1;
	cr_assert_eq(uroce_tp_post_send(e.qp[1], &w, 0), -EINVAL, "LOCAL_INV with an SGE");
	w.num_sge = 0;
	cr_assert_eq(uroce_tp_post_send(uc[1], &w, 0), -EINVAL, "LOCAL_INV on UC");
	w.ah = sim_ah(&e.s, e.pd[1], 1, 0);
	cr_assert_eq(uroce_tp_post_send(ud, &w, 0), -EINVAL, "LOCAL_INV on UD");
	run_for(&e, 1 * MS);
	cr_assert_eq(e.sc[1].n, 0, "nothing was posted");

	/* On UC: bound, and the UC peer writes through it. */
	rk = bind_ok(&e, uc[1], mw, 3, lkey, va(&e, 1, W_OFF), 512, ACC_RW);
	fill(hp(&e, 0, 0), 64, 13);
	w = wr(4, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 64, e.key[0], true);
	w.remote_addr = va(&e, 1, W_OFF + 128);
	w.rkey = rk;
	cr_assert_eq(uroce_tp_post_send(uc[0], &w, e.s.now), 0);
	run_for(&e, 1 * MS);
	cr_assert_eq(memcmp(hp(&e, 1, W_OFF + 128), hp(&e, 0, 0), 64), 0, "UC WRITE landed");

	/* Unsignaled: no completion, yet carried out (the key changed). */
	w = bind_wr(5, rk, lkey, va(&e, 1, W_OFF), 256, ACC_RW);
	w.send_flags = 0;
	cr_assert_eq(uroce_tp_post_send(e.qp[1], &w, e.s.now), 0);
	run_for(&e, 1 * MS);
	cr_assert_eq(e.sc[1].n, 1, "only the signaled bind completed");
	cr_assert_eq(uroce_tp_mw_rkey(mw), next_key(rk));
	cr_assert_eq(uroce_tp_qp_sq_outstanding(e.qp[1]), 0);

	/* The window's key as an L_Key: host 1 sends from it. */
	w = wr(6, IBV_WR_SEND, va(&e, 1, W_OFF), 16, uroce_tp_mw_rkey(mw), true);
	cr_assert_eq(uroce_tp_post_send(e.qp[1], &w, e.s.now), 0);
	wait_sc(&e, 1, 2);
	expect_wc(&e.sc[1].wc[1], 6, IBV_WC_LOC_PROT_ERR);
	cr_assert_eq(nframes(1, OPC(RC, SEND_ONLY), ANY), 0);
	env_fini(&e);
}

/* A BIND_MW posted after a WRITE is carried out when the requester reaches it (before the
 * WRITE's ACK) but completes after the WRITE: completions come in the order posted. */
Test(mw, bind_completes_after_earlier_write)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct uroce_tp_mw *mw;
	uint32_t lkey, rk;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	target(&e, ACC_MR, &lkey);
	mw = uroce_tp_alloc_mw(e.pd[1], IBV_MW_TYPE_1);
	cr_assert_not_null(mw);
	rk = uroce_tp_mw_rkey(mw);
	fill(hp(&e, 1, 0), 1024, 14);
	w = wr(1, IBV_WR_RDMA_WRITE, va(&e, 1, 0), 1024, e.key[1], true);
	w.remote_addr = va(&e, 0, 4096);
	w.rkey = e.key[0];
	cr_assert_eq(uroce_tp_post_send(e.qp[1], &w, e.s.now), 0);
	w = bind_wr(2, rk, lkey, va(&e, 1, W_OFF), 512, ACC_RW);
	cr_assert_eq(uroce_tp_post_send(e.qp[1], &w, e.s.now), 0);
	uroce_tp_process(e.s.host[1].dev, e.s.now);
	collect(&e);
	cr_assert_eq(uroce_tp_mw_rkey(mw), next_key(rk), "carried out when reached");
	cr_assert_eq(e.sc[1].n, 0, "but not completed before the WRITE");
	wait_sc(&e, 1, 2);
	expect_wc(&e.sc[1].wc[0], 1, IBV_WC_SUCCESS);
	cr_assert_eq(e.sc[1].wc[0].opcode, IBV_WC_RDMA_WRITE);
	expect_wc(&e.sc[1].wc[1], 2, IBV_WC_SUCCESS);
	cr_assert_eq(e.sc[1].wc[1].opcode, IBV_WC_BIND_MW);
	cr_assert_eq(memcmp(hp(&e, 0, 4096), hp(&e, 1, 0), 1024), 0);
	env_fini(&e);
}

/* The one frame a test loses: the first from @from with @opcode and @psn. */
struct lose {
	int from;
	uint8_t opcode;
	uint32_t psn;
	bool done;
};

static bool drop_once(const struct frame_rec *r, void *arg)
{
	struct lose *l = arg;

	if (!l->done && r->from == l->from && r->opcode == l->opcode && r->psn == l->psn) {
		l->done = true;
		return true;
	}
	return false;
}

/* Go-back-N over a local WQE: WRITE 1, WRITE 2, BIND (type 2), WRITE 3 from host 1, WRITE
 * 2 lost. The NAK acknowledges WRITE 1; the requester goes back to WRITE 2, steps over the
 * bind it carried out (a type 2 window bound twice would fail) and sends WRITE 3 again at
 * its PSN. Everything completes, in the order posted. */
Test(mw, go_back_over_a_bind)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct lose lost = {.from = 1, .opcode = OPC(RC, WRITE_ONLY)};
	struct uroce_tp_mw *mw;
	static const enum ibv_wc_opcode want[] = {IBV_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE,
						  IBV_WC_BIND_MW, IBV_WC_RDMA_WRITE};
	uint32_t lkey, rk;

	env_init(&e);
	env_pair(&e, IBV_QPT_RC, &o);
	target(&e, ACC_MR, &lkey);
	mw = uroce_tp_alloc_mw(e.pd[1], IBV_MW_TYPE_2);
	cr_assert_not_null(mw);
	rk = uroce_tp_mw_rkey(mw);
	lost.psn = uroce_psn_add(o.psn_b, 1);
	g_tx.drop = drop_once;
	g_tx.drop_arg = &lost;
	for (int i = 0; i < 4; i++) {
		if (i == 2) {
			w = bind_wr(3, rk, lkey, va(&e, 1, W_OFF), 512, ACC_RW);
		} else {
			fill(hp(&e, 1, (uint64_t)i * 64), 64, (uint8_t)(20 + i));
			w = wr((uint64_t)i + 1, IBV_WR_RDMA_WRITE, va(&e, 1, (uint64_t)i * 64), 64,
			       e.key[1], true);
			w.remote_addr = va(&e, 0, 4096 + (uint64_t)i * 64);
			w.rkey = e.key[0];
		}
		cr_assert_eq(uroce_tp_post_send(e.qp[1], &w, e.s.now), 0);
	}
	wait_sc(&e, 1, 4);
	cr_assert(lost.done, "WRITE 2 was lost");
	for (int i = 0; i < 4; i++) {
		expect_wc(&e.sc[1].wc[i], (uint64_t)i + 1, IBV_WC_SUCCESS);
		cr_assert_eq(e.sc[1].wc[i].opcode, want[i], "completion %d", i);
	}
	cr_assert_eq(e.sc[1].n, 4);
	cr_assert_eq(cnt(&e, 1)->completer_retry_err, 1);
	cr_assert_eq(nframes(1, OPC(RC, WRITE_ONLY), uroce_psn_add(o.psn_b, 2)), 2,
		     "WRITE 3 sent again, at the same PSN");
	cr_assert_eq(nframes(1, OPC(RC, WRITE_ONLY), uroce_psn_add(o.psn_b, 3)), 0,
		     "the bind took no PSN");
	cr_assert_eq(memcmp(hp(&e, 0, 4096), hp(&e, 1, 0), 64), 0);
	cr_assert_eq(memcmp(hp(&e, 0, 4096 + 64), hp(&e, 1, 64), 64), 0);
	cr_assert_eq(memcmp(hp(&e, 0, 4096 + 192), hp(&e, 1, 192), 64), 0);
	cr_assert_eq(qstate(&e, 1), IBV_QPS_RTS);
	cr_assert_eq(uroce_tp_mw_rkey(mw), next_key(rk));
	/* Bound once, to qp[1]: its peer writes through it. */
	fill(hp(&e, 0, 0), 64, 15);
	remote(&e, 10, IBV_WR_RDMA_WRITE, 0, 64, va(&e, 1, W_OFF), next_key(rk), IBV_WC_SUCCESS);
	cr_assert_eq(memcmp(hp(&e, 1, W_OFF), hp(&e, 0, 0), 64), 0);
	env_fini(&e);
}

static bool drop_acks_from_1(const struct frame_rec *r, void *arg)
{
	(void)arg;
	return r->from == 1 && r->opcode == OPC(RC, ACKNOWLEDGE);
}

/* An ACK late after a go-back, for PSNs sent before it and not yet again: the requester
 * steps over them (tp_req_skip_acked) and over a bind carried out between them, so the
 * ACK completes WRITE 1, the bind and WRITE 2 at once and nothing is sent a second time. */
Test(mw, late_ack_after_go_back_over_a_bind)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_send_wqe w;
	struct uroce_tp_mr *mr;
	struct uroce_tp_mw *mw;
	uint32_t lkey, rk;

	env_init(&e);
	o.timeout = 8; /* 1 ms */
	env_pair(&e, IBV_QPT_RC, &o);
	/* This time the window is host 0's, bound on the requester's own QP. */
	mr = uroce_tp_reg_mr(e.pd[0], va(&e, 0, T_OFF), hp(&e, 0, T_OFF), T_LEN, ACC_MR);
	cr_assert_not_null(mr);
	uroce_tp_mr_keys(mr, &lkey, NULL);
	mw = uroce_tp_alloc_mw(e.pd[0], IBV_MW_TYPE_2);
	cr_assert_not_null(mw);
	rk = uroce_tp_mw_rkey(mw);
	g_tx.drop = drop_acks_from_1;
	fill(hp(&e, 0, 0), 128, 30);
	w = wr(1, IBV_WR_RDMA_WRITE, va(&e, 0, 0), 64, e.key[0], true);
	w.remote_addr = va(&e, 1, 0);
	w.rkey = e.key[1];
	post(&e, 0, &w);
	w = bind_wr(2, rk, lkey, va(&e, 0, W_OFF), 512, ACC_RW);
	post(&e, 0, &w);
	w = wr(3, IBV_WR_RDMA_WRITE, va(&e, 0, 64), 64, e.key[0], true);
	w.remote_addr = va(&e, 1, 64);
	w.rkey = e.key[1];
	post(&e, 0, &w);
	run_for(&e, 500 * US);
	cr_assert_eq(e.sc[0].n, 0, "every ACK lost");
	cr_assert_eq(nframes(0, OPC(RC, WRITE_ONLY), ANY), 2);
	cr_assert_eq(uroce_tp_mw_rkey(mw), next_key(rk));
	/* The timer sends it back to WRITE 1, which the link refuses to carry. */
	g_tx.busy[0] = 1 << 30;
	run_for(&e, 1 * MS);
	cr_assert_eq(cnt(&e, 0)->completer_retry_err, 1);
	cr_assert_eq(e.sc[0].n, 0);
	/* The late ACK of WRITE 2. */
	inject_aeth_to0(&e, uroce_aeth_ack(UROCE_AETH_CREDIT_INVALID), uroce_psn_add(o.psn_a, 1));
	collect(&e);
	cr_assert_eq(e.sc[0].n, 3, "all three at once");
	expect_wc(&e.sc[0].wc[0], 1, IBV_WC_SUCCESS);
	expect_wc(&e.sc[0].wc[1], 2, IBV_WC_SUCCESS);
	cr_assert_eq(e.sc[0].wc[1].opcode, IBV_WC_BIND_MW);
	expect_wc(&e.sc[0].wc[2], 3, IBV_WC_SUCCESS);
	cr_assert_eq(cnt(&e, 0)->rcvd_ack_past_go_back, 1);
	g_tx.busy[0] = 0;
	run_for(&e, 5 * MS);
	cr_assert_eq(nframes(0, OPC(RC, WRITE_ONLY), ANY), 2, "nothing sent again");
	cr_assert_eq(qstate(&e, 0), IBV_QPS_RTS);
	cr_assert_eq(uroce_tp_mw_rkey(mw), next_key(rk), "bound once");
	env_fini(&e);
}

static bool drop_first_read_response(const struct frame_rec *r, void *arg)
{
	int *dropped = arg;

	if (r->from == 1 && r->opcode == OPC(RC, READ_RESPONSE_ONLY) && *dropped == 0) {
		(*dropped)++;
		return true;
	}
	return false;
}

/* A READ through a window whose response is lost: the duplicate READ is checked against
 * the window again and answered from it. */
Test(mw, duplicate_read_through_a_window)
{
	struct env e;
	struct sim_qp_opts o = default_opts();
	struct uroce_tp_mw *mw;
	uint32_t lkey, rk;
	int dropped = 0;

	env_init(&e);
	o.timeout = 8; /* 1 ms */
	env_pair(&e, IBV_QPT_RC, &o);
	target(&e, ACC_MR, &lkey);
	mw = uroce_tp_alloc_mw(e.pd[1], IBV_MW_TYPE_1);
	cr_assert_not_null(mw);
	rk = bind_ok(&e, e.qp[1], mw, 10, lkey, va(&e, 1, W_OFF), 512, IBV_ACCESS_REMOTE_READ);
	fill(hp(&e, 1, W_OFF), 512, 40);
	g_tx.drop = drop_first_read_response;
	g_tx.drop_arg = &dropped;
	remote(&e, 1, IBV_WR_RDMA_READ, 0, 512, va(&e, 1, W_OFF), rk, IBV_WC_SUCCESS);
	cr_assert_eq(dropped, 1);
	cr_assert_eq(cnt(&e, 1)->duplicate_request, 1);
	cr_assert_eq(nframes(1, OPC(RC, READ_RESPONSE_ONLY), o.psn_a), 2);
	cr_assert_eq(memcmp(hp(&e, 0, 0), hp(&e, 1, W_OFF), 512), 0);
	env_fini(&e);
}
