/* SPDX-License-Identifier: BSD-3-Clause */
/* The QP state machine's legality table: IBA vol 1 section 10.3 / 11.2.4.2, table 94
 * ("QP state transition properties"), in the form Linux gives it in qp_state_table /
 * ib_modify_qp_is_ok() (drivers/infiniband/core/verbs.c), restricted to RC, UC, UD, raw
 * packet and XRC (annex A14: an initiator is RC's requester, a target RC's responder). */
#include <errno.h>
#include <stdbool.h>

#include "transport_qp_attr.h"

/* Column of a QP type in the table. */
enum { T_RC, T_UC, T_UD, T_RAW, T_XI, T_XT, T_NUM }; /* XI/XT: XRC initiator, target */

/* Short names for the attribute bits, only to keep the table readable. */
enum {
	CUR = IBV_QP_CUR_STATE,
	SQDN = IBV_QP_EN_SQD_ASYNC_NOTIFY,
	ACC = IBV_QP_ACCESS_FLAGS,
	PKEY = IBV_QP_PKEY_INDEX,
	PORT = IBV_QP_PORT,
	QKEY = IBV_QP_QKEY,
	AV = IBV_QP_AV,
	MTU = IBV_QP_PATH_MTU,
	TMO = IBV_QP_TIMEOUT,
	RETRY = IBV_QP_RETRY_CNT,
	RNR = IBV_QP_RNR_RETRY,
	RQPSN = IBV_QP_RQ_PSN,
	RDA = IBV_QP_MAX_QP_RD_ATOMIC,
	ALT = IBV_QP_ALT_PATH,
	RNRT = IBV_QP_MIN_RNR_TIMER,
	SQPSN = IBV_QP_SQ_PSN,
	DRDA = IBV_QP_MAX_DEST_RD_ATOMIC,
	MIG = IBV_QP_PATH_MIG_STATE,
	DQPN = IBV_QP_DEST_QPN,
};

struct qp_attr_rule {
	bool exists;	  /* the transition is in the table (for every QP type) */
	int req[T_NUM];	  /* must be in the mask, besides IBV_QP_STATE */
	int opt[T_NUM];	  /* may be in the mask */
};

#define NSTATES (IBV_QPS_ERR + 1)

/*
 * [cur][next]. IBV_QP_STATE is not written in: tp_qp_attr_masks() adds it (required when
 * the state changes, optional when it does not). A pair that is absent does not exist.
 * Going to RESET or ERR takes no attribute; RESET->ERR is absent, as in Linux.
 * IBV_QP_CAP never appears: Linux allows no resize through modify_qp.
 * Not covered: a raw packet QP's IBV_QP_RATE_LIMIT (no rate limiter here: refused)
 * and QP0/QP1, whose Linux columns (SMI/GSI) are UD's without IBV_QP_PORT in RESET->INIT
 * and INIT->INIT.
 */
static const struct qp_attr_rule qp_attr_table[NSTATES][NSTATES] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { .exists = true },
		/* RC/UC: access flags; UD: Q_Key instead */
		[IBV_QPS_INIT] = { .exists = true,
			.req = {
				[T_RC] = PKEY | PORT | ACC,
				[T_UC] = PKEY | PORT | ACC,
				[T_UD] = PKEY | PORT | QKEY,
				[T_RAW] = PORT,
				[T_XI] = PKEY | PORT | ACC,
				[T_XT] = PKEY | PORT | ACC,
			},
		},
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = { .exists = true },
		/* INIT->INIT may redo what RESET->INIT set, nothing is required */
		[IBV_QPS_INIT] = { .exists = true,
			.opt = {
				[T_RC] = PKEY | PORT | ACC,
				[T_UC] = PKEY | PORT | ACC,
				[T_UD] = PKEY | PORT | QKEY,
				[T_RAW] = PORT,
				[T_XI] = PKEY | PORT | ACC,
				[T_XT] = PKEY | PORT | ACC,
			},
		},
		/* the responder side: connected QPs learn their peer; UD needs nothing */
		[IBV_QPS_RTR] = { .exists = true,
			.req = {
				[T_RC] = AV | MTU | DQPN | RQPSN | DRDA | RNRT,
				[T_UC] = AV | MTU | DQPN | RQPSN,
				[T_XI] = AV | MTU | DQPN | RQPSN,
				[T_XT] = AV | MTU | DQPN | RQPSN | DRDA | RNRT,
			},
			.opt = {
				[T_RC] = ALT | ACC | PKEY,
				[T_UC] = ALT | ACC | PKEY,
				[T_UD] = PKEY | QKEY,
				[T_XI] = ALT | ACC | PKEY,
				[T_XT] = ALT | ACC | PKEY,
			},
		},
		[IBV_QPS_ERR] = { .exists = true },
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = { .exists = true },
		/* the requester side: RC adds its retry and read/atomic limits */
		[IBV_QPS_RTS] = { .exists = true,
			.req = {
				[T_RC] = SQPSN | TMO | RETRY | RNR | RDA,
				[T_UC] = SQPSN,
				[T_UD] = SQPSN,
				[T_XI] = SQPSN | TMO | RETRY | RNR | RDA,
				[T_XT] = SQPSN | TMO,
			},
			.opt = {
				[T_RC] = CUR | ALT | ACC | RNRT | MIG,
				[T_UC] = CUR | ALT | ACC | MIG,
				[T_UD] = CUR | QKEY,
				[T_XI] = CUR | ALT | ACC | MIG,
				[T_XT] = CUR | ALT | ACC | RNRT | MIG,
			},
		},
		[IBV_QPS_ERR] = { .exists = true },
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = { .exists = true },
		/* RTS->RTS: the attributes that may change while running */
		[IBV_QPS_RTS] = { .exists = true,
			.opt = {
				[T_RC] = CUR | ACC | ALT | MIG | RNRT,
				[T_UC] = CUR | ACC | ALT | MIG,
				[T_UD] = CUR | QKEY,
				[T_XI] = CUR | ACC | ALT | MIG,
				[T_XT] = CUR | ACC | ALT | MIG | RNRT,
			},
		},
		/* drain: only the "tell me when drained" flag */
		[IBV_QPS_SQD] = { .exists = true,
			.opt = {
				[T_RC] = SQDN,
				[T_UC] = SQDN,
				[T_UD] = SQDN,
				[T_XI] = SQDN,
				[T_XT] = SQDN,
			},
		},
		[IBV_QPS_ERR] = { .exists = true },
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = { .exists = true },
		/* resume: same set as RTS->RTS */
		[IBV_QPS_RTS] = { .exists = true,
			.opt = {
				[T_RC] = CUR | ALT | ACC | RNRT | MIG,
				[T_UC] = CUR | ALT | ACC | MIG,
				[T_UD] = CUR | QKEY,
				[T_XI] = CUR | ALT | ACC | MIG,
				[T_XT] = CUR | ALT | ACC | RNRT | MIG,
			},
		},
		/* SQD->SQD: a drained QP may change almost everything (path, port, limits) */
		[IBV_QPS_SQD] = { .exists = true,
			.opt = {
				[T_RC] = PORT | AV | TMO | RETRY | RNR | RDA | DRDA | ALT | ACC |
					 PKEY | RNRT | MIG,
				[T_UC] = AV | ALT | ACC | PKEY | MIG,
				[T_UD] = PKEY | QKEY,
				[T_XI] = PORT | AV | TMO | RETRY | RNR | RDA | ALT | ACC | PKEY |
					 MIG,
				[T_XT] = PORT | AV | TMO | DRDA | ALT | ACC | PKEY | RNRT | MIG,
			},
		},
		[IBV_QPS_ERR] = { .exists = true },
	},
	[IBV_QPS_SQE] = {
		[IBV_QPS_RESET] = { .exists = true },
		/* recover from a send queue error; only UD and UC get there (RC goes to ERR),
		 * Linux still lists the pair for RC, with no attribute besides the state */
		[IBV_QPS_RTS] = { .exists = true,
			.opt = {
				[T_UC] = CUR | ACC,
				[T_UD] = CUR | QKEY,
			},
		},
		[IBV_QPS_ERR] = { .exists = true },
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = { .exists = true },
		[IBV_QPS_ERR] = { .exists = true },
	},
};

static int type_column(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
		return T_RC;
	case IBV_QPT_UC:
		return T_UC;
	case IBV_QPT_UD:
		return T_UD;
	case IBV_QPT_RAW_PACKET:
		return T_RAW;
	case IBV_QPT_XRC_SEND:
		return T_XI;
	case IBV_QPT_XRC_RECV:
		return T_XT;
	default:
		return -1;
	}
}

static bool state_ok(enum ibv_qp_state s)
{
	/* Compared as unsigned so that a negative value is refused too. */
	return (unsigned int)s < NSTATES;
}

int tp_qp_attr_masks(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next,
		     int *required, int *optional)
{
	int col = type_column(type);
	const struct qp_attr_rule *r;

	*required = 0;
	*optional = 0;
	if (col < 0 || !state_ok(cur) || !state_ok(next))
		return -EINVAL;
	r = &qp_attr_table[cur][next];
	if (!r->exists)
		return -EINVAL;
	*required = r->req[col];
	*optional = r->opt[col];
	if (cur != next)
		*required |= IBV_QP_STATE;
	else
		*optional |= IBV_QP_STATE;
	return 0;
}

int tp_qp_attr_check(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next,
		     int mask)
{
	int req, opt;

	if (tp_qp_attr_masks(type, cur, next, &req, &opt) < 0)
		return -EINVAL;
	if ((mask & req) != req)
		return -EINVAL;
	if (mask & ~(req | opt))
		return -EINVAL;
	return 0;
}
