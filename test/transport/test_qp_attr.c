/* SPDX-License-Identifier: BSD-3-Clause */
/* The QP state machine's legality table (IBA vol 1 table 94 as Linux's
 * ib_modify_qp_is_ok() encodes it): exhaustive over types, state pairs and mask bits. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "transport_qp_attr.h"

#define NSTATES (IBV_QPS_ERR + 1)
/* Every bit an int mask has, defined or not (bit 31 is the sign bit). */
#define NBITS 32
/* The bits rdma-core 44 defines, 0 .. 20 (21..24 are reserved, 25 is RATE_LIMIT). */
#define DEFINED_LOW_BITS 21

static const enum ibv_qp_type types[] = {IBV_QPT_RC,	      IBV_QPT_UC,	IBV_QPT_UD,
					 IBV_QPT_RAW_PACKET, IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV};
#define NTYPES (sizeof(types) / sizeof(types[0]))

static const char *const state_names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};

static const char *type_name(enum ibv_qp_type t)
{
	return t == IBV_QPT_RC ? "RC" : t == IBV_QPT_UC ? "UC" : t == IBV_QPT_UD ? "UD" :
	       t == IBV_QPT_RAW_PACKET ? "RAW_PACKET" : t == IBV_QPT_XRC_SEND ? "XRC_INI" :
	       t == IBV_QPT_XRC_RECV ? "XRC_TGT" : "?";
}

static int bit(int i)
{
	return (int)(1u << i);
}

static int popcount(int m)
{
	return __builtin_popcount((unsigned int)m);
}

/* The i-th subset of @set: bit k of @i selects the k-th set bit of @set. */
static int subset(int set, uint32_t i)
{
	int out = 0;

	for (int b = 0; b < NBITS && i; b++) {
		if (set & bit(b)) {
			if (i & 1)
				out |= bit(b);
			i >>= 1;
		}
	}
	return out;
}

/* xorshift32, for the seeded sample of large optional sets. */
static uint32_t rng_next(uint32_t *s)
{
	uint32_t x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

/* ---- (a) the required set with any subset of the optional bits is accepted ---- */

Test(qp_attr, required_plus_any_optional_subset_is_accepted)
{
	unsigned transitions = 0;

	for (size_t t = 0; t < NTYPES; t++) {
		for (int c = 0; c < NSTATES; c++) {
			for (int n = 0; n < NSTATES; n++) {
				int req, opt;

				if (tp_qp_attr_masks(types[t], c, n, &req, &opt) != 0)
					continue;
				transitions++;
				cr_assert_eq(req & opt, 0,
					     "%s %s->%s: required and optional overlap",
					     type_name(types[t]), state_names[c], state_names[n]);
				int nopt = popcount(opt);
				uint32_t rounds = nopt <= 12 ? 1u << nopt : 4096;
				uint32_t seed = 0x9e3779b9u ^ (uint32_t)(t << 16 | c << 8 | n);
				unsigned bad = 0;
				int first_bad = 0;

				for (uint32_t i = 0; i < rounds; i++) {
					uint32_t pick = nopt <= 12 ? i
						      : i == 0 ? 0
						      : i == 1 ? (1u << nopt) - 1
						      : rng_next(&seed) & ((1u << nopt) - 1);
					int mask = req | subset(opt, pick);

					if (tp_qp_attr_check(types[t], c, n, mask) != 0 &&
					    bad++ == 0)
						first_bad = mask;
				}
				cr_assert_eq(bad, 0, "%s %s->%s: %u masks refused, first 0x%x",
					     type_name(types[t]), state_names[c], state_names[n],
					     bad, first_bad);
			}
		}
	}
	/* 22 state pairs exist, for each of the 3 types. */
	cr_assert_eq(transitions, 22 * NTYPES);
}

/* ---- (b) removing any single required bit fails ---- */

Test(qp_attr, missing_any_required_bit_is_refused)
{
	for (size_t t = 0; t < NTYPES; t++) {
		for (int c = 0; c < NSTATES; c++) {
			for (int n = 0; n < NSTATES; n++) {
				int req, opt;

				if (tp_qp_attr_masks(types[t], c, n, &req, &opt) != 0)
					continue;
				for (int b = 0; b < NBITS; b++) {
					if (!(req & bit(b)))
						continue;
					cr_assert_eq(
						tp_qp_attr_check(types[t], c, n, req & ~bit(b)),
						-EINVAL, "%s %s->%s without bit %d",
						type_name(types[t]), state_names[c], state_names[n],
						b);
					cr_assert_eq(tp_qp_attr_check(types[t], c, n,
								      (req | opt) & ~bit(b)),
						     -EINVAL, "%s %s->%s all but bit %d",
						     type_name(types[t]), state_names[c],
						     state_names[n], b);
				}
			}
		}
	}
}

/* ---- (c) adding any single bit outside required|optional fails ---- */

Test(qp_attr, any_extra_bit_is_refused)
{
	for (size_t t = 0; t < NTYPES; t++) {
		for (int c = 0; c < NSTATES; c++) {
			for (int n = 0; n < NSTATES; n++) {
				int req, opt;

				if (tp_qp_attr_masks(types[t], c, n, &req, &opt) != 0)
					continue;
				for (int b = 0; b < NBITS; b++) {
					if ((req | opt) & bit(b))
						continue;
					cr_assert_eq(tp_qp_attr_check(types[t], c, n, req | bit(b)),
						     -EINVAL, "%s %s->%s with bit %d",
						     type_name(types[t]), state_names[c],
						     state_names[n], b);
					cr_assert_eq(tp_qp_attr_check(types[t], c, n,
								      req | opt | bit(b)),
						     -EINVAL, "%s %s->%s all with bit %d",
						     type_name(types[t]), state_names[c],
						     state_names[n], b);
				}
			}
		}
	}
}

/* IBV_QP_STATE: required for a change of state, optional (never required) without one. */
Test(qp_attr, state_bit_required_iff_the_state_changes)
{
	for (size_t t = 0; t < NTYPES; t++) {
		for (int c = 0; c < NSTATES; c++) {
			for (int n = 0; n < NSTATES; n++) {
				int req, opt;

				if (tp_qp_attr_masks(types[t], c, n, &req, &opt) != 0)
					continue;
				if (c != n) {
					cr_assert(req & IBV_QP_STATE);
				} else {
					cr_assert(opt & IBV_QP_STATE);
					cr_assert_eq(req, 0, "%s %s->%s requires 0x%x",
						     type_name(types[t]), state_names[c],
						     state_names[n], req);
					/* A modify without IBV_QP_STATE and nothing else. */
					cr_assert_eq(tp_qp_attr_check(types[t], c, n, 0), 0);
				}
			}
		}
	}
}

/* ---- (d) transitions not in the table fail for every mask ---- */

static bool in_table(int c, int n)
{
	/* Written out from the kernel's table, independently of lib/transport/qp_attr.c. */
	static const char *const pairs[] = {
		"RESET>RESET", "RESET>INIT",
		"INIT>RESET",  "INIT>INIT",  "INIT>RTR",  "INIT>ERR",
		"RTR>RESET",   "RTR>RTS",    "RTR>ERR",
		"RTS>RESET",   "RTS>RTS",    "RTS>SQD",   "RTS>ERR",
		"SQD>RESET",   "SQD>RTS",    "SQD>SQD",   "SQD>ERR",
		"SQE>RESET",   "SQE>RTS",    "SQE>ERR",
		"ERR>RESET",   "ERR>ERR",
	};
	char want[16];

	snprintf(want, sizeof(want), "%s>%s", state_names[c], state_names[n]);
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		if (strcmp(pairs[i], want) == 0)
			return true;
	return false;
}

Test(qp_attr, absent_transitions_refuse_every_mask, .timeout = 120)
{
	unsigned absent = 0;

	for (size_t t = 0; t < NTYPES; t++) {
		for (int c = 0; c < NSTATES; c++) {
			for (int n = 0; n < NSTATES; n++) {
				int req = -1, opt = -1;
				int rc = tp_qp_attr_masks(types[t], c, n, &req, &opt);

				if (in_table(c, n)) {
					cr_assert_eq(rc, 0, "%s %s->%s should exist",
						     type_name(types[t]), state_names[c],
						     state_names[n]);
					continue;
				}
				absent++;
				cr_assert_eq(rc, -EINVAL, "%s %s->%s should not exist",
					     type_name(types[t]), state_names[c], state_names[n]);
				cr_assert_eq(req, 0);
				cr_assert_eq(opt, 0);

				/* Every combination of the defined low bits, then every single bit
				 * (and all bits) on top of the empty and the full low set. */
				unsigned accepted = 0;

				for (uint32_t m = 0; m < (1u << DEFINED_LOW_BITS); m++)
					accepted += tp_qp_attr_check(types[t], c, n, (int)m) == 0;
				for (int b = DEFINED_LOW_BITS; b < NBITS; b++) {
					accepted += tp_qp_attr_check(types[t], c, n, bit(b)) == 0;
					accepted += tp_qp_attr_check(types[t], c, n,
						bit(b) | (bit(DEFINED_LOW_BITS) - 1)) == 0;
				}
				accepted += tp_qp_attr_check(types[t], c, n, -1) == 0;
				cr_assert_eq(accepted, 0, "%s %s->%s accepted %u masks",
					     type_name(types[t]), state_names[c], state_names[n],
					     accepted);
			}
		}
	}
	cr_assert_eq(absent, (49 - 22) * NTYPES);
}

Test(qp_attr, bad_types_and_states_are_refused)
{
	static const int bad_types[] = {0, 1, IBV_QPT_DRIVER, -1};
	static const int bad_states[] = {IBV_QPS_UNKNOWN, NSTATES + 1, -1, 1 << 30};

	for (size_t i = 0; i < sizeof(bad_types) / sizeof(bad_types[0]); i++) {
		for (int c = 0; c < NSTATES; c++) {
			for (int n = 0; n < NSTATES; n++) {
				int req = -1, opt = -1;

				cr_assert_eq(tp_qp_attr_masks((enum ibv_qp_type)bad_types[i], c, n,
							      &req, &opt),
					     -EINVAL);
				cr_assert_eq(req, 0);
				cr_assert_eq(opt, 0);
				cr_assert_eq(tp_qp_attr_check((enum ibv_qp_type)bad_types[i], c, n,
							      IBV_QP_STATE),
					     -EINVAL);
				cr_assert_eq(tp_qp_attr_check((enum ibv_qp_type)bad_types[i], c, n,
							      0),
					     -EINVAL);
			}
		}
	}
	for (size_t t = 0; t < NTYPES; t++) {
		for (size_t i = 0; i < sizeof(bad_states) / sizeof(bad_states[0]); i++) {
			enum ibv_qp_state bad = (enum ibv_qp_state)bad_states[i];
			int req = -1, opt = -1;

			cr_assert_eq(tp_qp_attr_masks(types[t], bad, bad, &req, &opt), -EINVAL);
			cr_assert_eq(req, 0);
			cr_assert_eq(opt, 0);
			for (int s = 0; s < NSTATES; s++) {
				cr_assert_eq(tp_qp_attr_masks(types[t], bad, s, &req, &opt),
					     -EINVAL);
				cr_assert_eq(tp_qp_attr_masks(types[t], s, bad, &req, &opt),
					     -EINVAL);
				cr_assert_eq(tp_qp_attr_check(types[t], bad, s, IBV_QP_STATE),
					     -EINVAL);
				cr_assert_eq(tp_qp_attr_check(types[t], s, bad, IBV_QP_STATE),
					     -EINVAL);
			}
			cr_assert_eq(tp_qp_attr_check(types[t], bad, bad, 0), -EINVAL);
		}
	}
}

/* ---- the whole table, row by row, as read from Linux's qp_state_table ---- */

#define S IBV_QP_STATE
#define CUR IBV_QP_CUR_STATE
#define SQDN IBV_QP_EN_SQD_ASYNC_NOTIFY
#define ACC IBV_QP_ACCESS_FLAGS
#define PKEY IBV_QP_PKEY_INDEX
#define PORT IBV_QP_PORT
#define QKEY IBV_QP_QKEY
#define AV IBV_QP_AV
#define MTU IBV_QP_PATH_MTU
#define TMO IBV_QP_TIMEOUT
#define RETRY IBV_QP_RETRY_CNT
#define RNR IBV_QP_RNR_RETRY
#define RQPSN IBV_QP_RQ_PSN
#define RDA IBV_QP_MAX_QP_RD_ATOMIC
#define ALT IBV_QP_ALT_PATH
#define RNRT IBV_QP_MIN_RNR_TIMER
#define SQPSN IBV_QP_SQ_PSN
#define DRDA IBV_QP_MAX_DEST_RD_ATOMIC
#define MIG IBV_QP_PATH_MIG_STATE
#define DQPN IBV_QP_DEST_QPN
#define XI IBV_QPT_XRC_SEND
#define XT IBV_QPT_XRC_RECV

struct row {
	enum ibv_qp_type type;
	enum ibv_qp_state cur, next;
	int req, opt;
};

/* Required includes IBV_QP_STATE for a change of state; optional includes it otherwise. */
static const struct row expected_rows[] = {
	/* RESET */
	{IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_RESET, 0, S},
	{IBV_QPT_UC, IBV_QPS_RESET, IBV_QPS_RESET, 0, S},
	{IBV_QPT_UD, IBV_QPS_RESET, IBV_QPS_RESET, 0, S},
	{IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT, S | PKEY | PORT | ACC, 0},
	{IBV_QPT_UC, IBV_QPS_RESET, IBV_QPS_INIT, S | PKEY | PORT | ACC, 0},
	{IBV_QPT_UD, IBV_QPS_RESET, IBV_QPS_INIT, S | PKEY | PORT | QKEY, 0},
	/* INIT */
	{IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RESET, S, 0},
	{IBV_QPT_UC, IBV_QPS_INIT, IBV_QPS_RESET, S, 0},
	{IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_RESET, S, 0},
	{IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_INIT, 0, S | PKEY | PORT | ACC},
	{IBV_QPT_UC, IBV_QPS_INIT, IBV_QPS_INIT, 0, S | PKEY | PORT | ACC},
	{IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_INIT, 0, S | PKEY | PORT | QKEY},
	{IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, S | AV | MTU | DQPN | RQPSN | DRDA | RNRT,
	 ALT | ACC | PKEY},
	{IBV_QPT_UC, IBV_QPS_INIT, IBV_QPS_RTR, S | AV | MTU | DQPN | RQPSN, ALT | ACC | PKEY},
	{IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_RTR, S, PKEY | QKEY},
	{IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_ERR, S, 0},
	{IBV_QPT_UC, IBV_QPS_INIT, IBV_QPS_ERR, S, 0},
	{IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_ERR, S, 0},
	/* RTR */
	{IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RESET, S, 0},
	{IBV_QPT_UC, IBV_QPS_RTR, IBV_QPS_RESET, S, 0},
	{IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RESET, S, 0},
	{IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS, S | TMO | RETRY | RNR | SQPSN | RDA,
	 CUR | ALT | ACC | RNRT | MIG},
	{IBV_QPT_UC, IBV_QPS_RTR, IBV_QPS_RTS, S | SQPSN, CUR | ALT | ACC | MIG},
	{IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RTS, S | SQPSN, CUR | QKEY},
	{IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_ERR, S, 0},
	{IBV_QPT_UC, IBV_QPS_RTR, IBV_QPS_ERR, S, 0},
	{IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_ERR, S, 0},
	/* RTS */
	{IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RESET, S, 0},
	{IBV_QPT_UC, IBV_QPS_RTS, IBV_QPS_RESET, S, 0},
	{IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_RESET, S, 0},
	{IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS, 0, S | CUR | ACC | ALT | MIG | RNRT},
	{IBV_QPT_UC, IBV_QPS_RTS, IBV_QPS_RTS, 0, S | CUR | ACC | ALT | MIG},
	{IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_RTS, 0, S | CUR | QKEY},
	{IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_SQD, S, SQDN},
	{IBV_QPT_UC, IBV_QPS_RTS, IBV_QPS_SQD, S, SQDN},
	{IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_SQD, S, SQDN},
	{IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_ERR, S, 0},
	{IBV_QPT_UC, IBV_QPS_RTS, IBV_QPS_ERR, S, 0},
	{IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_ERR, S, 0},
	/* SQD */
	{IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_RESET, S, 0},
	{IBV_QPT_UC, IBV_QPS_SQD, IBV_QPS_RESET, S, 0},
	{IBV_QPT_UD, IBV_QPS_SQD, IBV_QPS_RESET, S, 0},
	{IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_RTS, S, CUR | ALT | ACC | RNRT | MIG},
	{IBV_QPT_UC, IBV_QPS_SQD, IBV_QPS_RTS, S, CUR | ALT | ACC | MIG},
	{IBV_QPT_UD, IBV_QPS_SQD, IBV_QPS_RTS, S, CUR | QKEY},
	{IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_SQD, 0,
	 S | PORT | AV | TMO | RETRY | RNR | RDA | DRDA | ALT | ACC | PKEY | RNRT | MIG},
	{IBV_QPT_UC, IBV_QPS_SQD, IBV_QPS_SQD, 0, S | AV | ALT | ACC | PKEY | MIG},
	{IBV_QPT_UD, IBV_QPS_SQD, IBV_QPS_SQD, 0, S | PKEY | QKEY},
	{IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_ERR, S, 0},
	{IBV_QPT_UC, IBV_QPS_SQD, IBV_QPS_ERR, S, 0},
	{IBV_QPT_UD, IBV_QPS_SQD, IBV_QPS_ERR, S, 0},
	/* SQE (RC never gets there; Linux's row has no attribute for it) */
	{IBV_QPT_RC, IBV_QPS_SQE, IBV_QPS_RESET, S, 0},
	{IBV_QPT_UC, IBV_QPS_SQE, IBV_QPS_RESET, S, 0},
	{IBV_QPT_UD, IBV_QPS_SQE, IBV_QPS_RESET, S, 0},
	{IBV_QPT_RC, IBV_QPS_SQE, IBV_QPS_RTS, S, 0},
	{IBV_QPT_UC, IBV_QPS_SQE, IBV_QPS_RTS, S, CUR | ACC},
	{IBV_QPT_UD, IBV_QPS_SQE, IBV_QPS_RTS, S, CUR | QKEY},
	{IBV_QPT_RC, IBV_QPS_SQE, IBV_QPS_ERR, S, 0},
	{IBV_QPT_UC, IBV_QPS_SQE, IBV_QPS_ERR, S, 0},
	{IBV_QPT_UD, IBV_QPS_SQE, IBV_QPS_ERR, S, 0},
	/* ERR */
	{IBV_QPT_RC, IBV_QPS_ERR, IBV_QPS_RESET, S, 0},
	{IBV_QPT_UC, IBV_QPS_ERR, IBV_QPS_RESET, S, 0},
	{IBV_QPT_UD, IBV_QPS_ERR, IBV_QPS_RESET, S, 0},
	{IBV_QPT_RC, IBV_QPS_ERR, IBV_QPS_ERR, 0, S},
	{IBV_QPT_UC, IBV_QPS_ERR, IBV_QPS_ERR, 0, S},
	{IBV_QPT_UD, IBV_QPS_ERR, IBV_QPS_ERR, 0, S},
	/* raw packet (Linux's IB_QPT_RAW_PACKET column): the port, and nothing else; its
	 * IB_QP_RATE_LIMIT is left out (no rate limiter) */
	{IBV_QPT_RAW_PACKET, IBV_QPS_RESET, IBV_QPS_RESET, 0, S},
	{IBV_QPT_RAW_PACKET, IBV_QPS_RESET, IBV_QPS_INIT, S | PORT, 0},
	{IBV_QPT_RAW_PACKET, IBV_QPS_INIT, IBV_QPS_RESET, S, 0},
	{IBV_QPT_RAW_PACKET, IBV_QPS_INIT, IBV_QPS_INIT, 0, S | PORT},
	{IBV_QPT_RAW_PACKET, IBV_QPS_INIT, IBV_QPS_RTR, S, 0},
	{IBV_QPT_RAW_PACKET, IBV_QPS_INIT, IBV_QPS_ERR, S, 0},
	{IBV_QPT_RAW_PACKET, IBV_QPS_RTR, IBV_QPS_RESET, S, 0},
	{IBV_QPT_RAW_PACKET, IBV_QPS_RTR, IBV_QPS_RTS, S, 0},
	{IBV_QPT_RAW_PACKET, IBV_QPS_RTR, IBV_QPS_ERR, S, 0},
	{IBV_QPT_RAW_PACKET, IBV_QPS_RTS, IBV_QPS_RESET, S, 0},
	{IBV_QPT_RAW_PACKET, IBV_QPS_RTS, IBV_QPS_RTS, 0, S},
	{IBV_QPT_RAW_PACKET, IBV_QPS_RTS, IBV_QPS_SQD, S, 0},
	{IBV_QPT_RAW_PACKET, IBV_QPS_RTS, IBV_QPS_ERR, S, 0},
	{IBV_QPT_RAW_PACKET, IBV_QPS_SQD, IBV_QPS_RESET, S, 0},
	{IBV_QPT_RAW_PACKET, IBV_QPS_SQD, IBV_QPS_RTS, S, 0},
	{IBV_QPT_RAW_PACKET, IBV_QPS_SQD, IBV_QPS_SQD, 0, S},
	{IBV_QPT_RAW_PACKET, IBV_QPS_SQD, IBV_QPS_ERR, S, 0},
	{IBV_QPT_RAW_PACKET, IBV_QPS_SQE, IBV_QPS_RESET, S, 0},
	{IBV_QPT_RAW_PACKET, IBV_QPS_SQE, IBV_QPS_RTS, S, 0},
	{IBV_QPT_RAW_PACKET, IBV_QPS_SQE, IBV_QPS_ERR, S, 0},
	{IBV_QPT_RAW_PACKET, IBV_QPS_ERR, IBV_QPS_RESET, S, 0},
	{IBV_QPT_RAW_PACKET, IBV_QPS_ERR, IBV_QPS_ERR, 0, S},
	/* XRC (Linux's IB_QPT_XRC_INI and IB_QPT_XRC_TGT columns): an initiator is RC's
	 * requester without the responder's attributes, a target RC's responder with only a
	 * timeout and SQ PSN for RTS */
	{XI, IBV_QPS_RESET, IBV_QPS_RESET, 0, S},
	{XI, IBV_QPS_RESET, IBV_QPS_INIT, S | PKEY | PORT | ACC, 0},
	{XI, IBV_QPS_INIT, IBV_QPS_RESET, S, 0},
	{XI, IBV_QPS_INIT, IBV_QPS_INIT, 0, S | PKEY | PORT | ACC},
	{XI, IBV_QPS_INIT, IBV_QPS_RTR, S | AV | MTU | DQPN | RQPSN, ALT | ACC | PKEY},
	{XI, IBV_QPS_INIT, IBV_QPS_ERR, S, 0},
	{XI, IBV_QPS_RTR, IBV_QPS_RESET, S, 0},
	{XI, IBV_QPS_RTR, IBV_QPS_RTS, S | SQPSN | TMO | RETRY | RNR | RDA, CUR | ALT | ACC | MIG},
	{XI, IBV_QPS_RTR, IBV_QPS_ERR, S, 0},
	{XI, IBV_QPS_RTS, IBV_QPS_RESET, S, 0},
	{XI, IBV_QPS_RTS, IBV_QPS_RTS, 0, S | CUR | ACC | ALT | MIG},
	{XI, IBV_QPS_RTS, IBV_QPS_SQD, S, SQDN},
	{XI, IBV_QPS_RTS, IBV_QPS_ERR, S, 0},
	{XI, IBV_QPS_SQD, IBV_QPS_RESET, S, 0},
	{XI, IBV_QPS_SQD, IBV_QPS_RTS, S, CUR | ALT | ACC | MIG},
	{XI, IBV_QPS_SQD, IBV_QPS_SQD, 0,
	 S | PORT | AV | TMO | RETRY | RNR | RDA | ALT | ACC | PKEY | MIG},
	{XI, IBV_QPS_SQD, IBV_QPS_ERR, S, 0},
	{XI, IBV_QPS_SQE, IBV_QPS_RESET, S, 0},
	{XI, IBV_QPS_SQE, IBV_QPS_RTS, S, 0},
	{XI, IBV_QPS_SQE, IBV_QPS_ERR, S, 0},
	{XI, IBV_QPS_ERR, IBV_QPS_RESET, S, 0},
	{XI, IBV_QPS_ERR, IBV_QPS_ERR, 0, S},
	{XT, IBV_QPS_RESET, IBV_QPS_RESET, 0, S},
	{XT, IBV_QPS_RESET, IBV_QPS_INIT, S | PKEY | PORT | ACC, 0},
	{XT, IBV_QPS_INIT, IBV_QPS_RESET, S, 0},
	{XT, IBV_QPS_INIT, IBV_QPS_INIT, 0, S | PKEY | PORT | ACC},
	{XT, IBV_QPS_INIT, IBV_QPS_RTR, S | AV | MTU | DQPN | RQPSN | DRDA | RNRT,
	 ALT | ACC | PKEY},
	{XT, IBV_QPS_INIT, IBV_QPS_ERR, S, 0},
	{XT, IBV_QPS_RTR, IBV_QPS_RESET, S, 0},
	{XT, IBV_QPS_RTR, IBV_QPS_RTS, S | SQPSN | TMO, CUR | ALT | ACC | RNRT | MIG},
	{XT, IBV_QPS_RTR, IBV_QPS_ERR, S, 0},
	{XT, IBV_QPS_RTS, IBV_QPS_RESET, S, 0},
	{XT, IBV_QPS_RTS, IBV_QPS_RTS, 0, S | CUR | ACC | ALT | MIG | RNRT},
	{XT, IBV_QPS_RTS, IBV_QPS_SQD, S, SQDN},
	{XT, IBV_QPS_RTS, IBV_QPS_ERR, S, 0},
	{XT, IBV_QPS_SQD, IBV_QPS_RESET, S, 0},
	{XT, IBV_QPS_SQD, IBV_QPS_RTS, S, CUR | ALT | ACC | MIG | RNRT},
	{XT, IBV_QPS_SQD, IBV_QPS_SQD, 0,
	 S | PORT | AV | TMO | DRDA | ALT | ACC | PKEY | RNRT | MIG},
	{XT, IBV_QPS_SQD, IBV_QPS_ERR, S, 0},
	{XT, IBV_QPS_SQE, IBV_QPS_RESET, S, 0},
	{XT, IBV_QPS_SQE, IBV_QPS_RTS, S, 0},
	{XT, IBV_QPS_SQE, IBV_QPS_ERR, S, 0},
	{XT, IBV_QPS_ERR, IBV_QPS_RESET, S, 0},
	{XT, IBV_QPS_ERR, IBV_QPS_ERR, 0, S},
};

Test(qp_attr, every_row_matches_the_kernel_table)
{
	size_t nrows = sizeof(expected_rows) / sizeof(expected_rows[0]);

	cr_assert_eq(nrows, 22 * NTYPES);
	for (size_t i = 0; i < nrows; i++) {
		const struct row *r = &expected_rows[i];
		int req = -1, opt = -1;

		cr_assert_eq(tp_qp_attr_masks(r->type, r->cur, r->next, &req, &opt), 0,
			     "%s %s->%s", type_name(r->type), state_names[r->cur],
			     state_names[r->next]);
		cr_expect_eq(req, r->req, "%s %s->%s required 0x%x, want 0x%x",
			     type_name(r->type), state_names[r->cur], state_names[r->next], req,
			     r->req);
		cr_expect_eq(opt, r->opt, "%s %s->%s optional 0x%x, want 0x%x",
			     type_name(r->type), state_names[r->cur], state_names[r->next], opt,
			     r->opt);
	}
}

/* Linux also refuses IBV_QP_CUR_STATE unless the QP is in RTR, RTS, SQD or SQE; the table
 * must never allow it elsewhere, nor IBV_QP_CAP (no resize through modify) anywhere. */
Test(qp_attr, cur_state_only_from_rtr_rts_sqd_sqe_and_cap_never)
{
	for (size_t t = 0; t < NTYPES; t++) {
		for (int c = 0; c < NSTATES; c++) {
			for (int n = 0; n < NSTATES; n++) {
				int req, opt;

				if (tp_qp_attr_masks(types[t], c, n, &req, &opt) != 0)
					continue;
				cr_assert_eq(req & (CUR | IBV_QP_CAP | IBV_QP_RATE_LIMIT), 0);
				if (c != IBV_QPS_RTR && c != IBV_QPS_RTS && c != IBV_QPS_SQD &&
				    c != IBV_QPS_SQE)
					cr_assert_eq(opt & CUR, 0, "%s %s->%s", type_name(types[t]),
						     state_names[c], state_names[n]);
				cr_assert_eq(opt & (IBV_QP_CAP | IBV_QP_RATE_LIMIT), 0);
			}
		}
	}
}

/* ---- (e) the well-known facts, literally ---- */

Test(qp_attr, well_known_facts)
{
	int req, opt;

	/* RESET->INIT: RC needs STATE|PKEY_INDEX|PORT|ACCESS_FLAGS, UD needs the Q_Key instead
	 * of access flags. */
	cr_assert_eq(tp_qp_attr_masks(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT, &req, &opt), 0);
	cr_assert_eq(req, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	cr_assert_eq(tp_qp_attr_check(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT,
				      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					      IBV_QP_ACCESS_FLAGS),
		     0);
	cr_assert_eq(tp_qp_attr_masks(IBV_QPT_UD, IBV_QPS_RESET, IBV_QPS_INIT, &req, &opt), 0);
	cr_assert_eq(req, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	cr_assert_eq(tp_qp_attr_check(IBV_QPT_UD, IBV_QPS_RESET, IBV_QPS_INIT,
				      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					      IBV_QP_ACCESS_FLAGS),
		     -EINVAL);

	/* INIT->RTR */
	cr_assert_eq(tp_qp_attr_masks(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, &req, &opt), 0);
	cr_assert_eq(req, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER);
	cr_assert_eq(tp_qp_attr_masks(IBV_QPT_UC, IBV_QPS_INIT, IBV_QPS_RTR, &req, &opt), 0);
	cr_assert_eq(req, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN);
	cr_assert_eq(tp_qp_attr_masks(IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_RTR, &req, &opt), 0);
	cr_assert_eq(req, IBV_QP_STATE);
	cr_assert_eq(tp_qp_attr_check(IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_STATE), 0);
	/* RoCE: the AV (with the peer's GID) is simply required by the table for RC/UC. */
	cr_assert_eq(tp_qp_attr_check(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR,
				      IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					      IBV_QP_MIN_RNR_TIMER),
		     -EINVAL);

	/* RTR->RTS */
	cr_assert_eq(tp_qp_attr_masks(IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS, &req, &opt), 0);
	cr_assert_eq(req, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	cr_assert_eq(tp_qp_attr_masks(IBV_QPT_UC, IBV_QPS_RTR, IBV_QPS_RTS, &req, &opt), 0);
	cr_assert_eq(req, IBV_QP_STATE | IBV_QP_SQ_PSN);
	cr_assert_eq(tp_qp_attr_masks(IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RTS, &req, &opt), 0);
	cr_assert_eq(req, IBV_QP_STATE | IBV_QP_SQ_PSN);

	/* Any state -> RESET / ERR needs only STATE, nothing more is allowed. Two exceptions
	 * from Linux: RESET->ERR does not exist, and RESET->RESET / ERR->ERR are "stay"
	 * entries where STATE itself is optional. */
	for (size_t t = 0; t < NTYPES; t++) {
		for (int c = 0; c < NSTATES; c++) {
			static const enum ibv_qp_state sinks[] = {IBV_QPS_RESET, IBV_QPS_ERR};

			for (size_t k = 0; k < 2; k++) {
				enum ibv_qp_state n = sinks[k];
				int rc = tp_qp_attr_masks(types[t], c, n, &req, &opt);

				if (c == IBV_QPS_RESET && n == IBV_QPS_ERR) {
					cr_assert_eq(rc, -EINVAL);
					cr_assert_eq(tp_qp_attr_check(types[t], c, n, IBV_QP_STATE),
						     -EINVAL);
					continue;
				}
				cr_assert_eq(rc, 0);
				cr_assert_eq(req | opt, IBV_QP_STATE);
				cr_assert_eq(tp_qp_attr_check(types[t], c, n, IBV_QP_STATE), 0);
				cr_assert_eq(tp_qp_attr_check(types[t], c, n,
							      IBV_QP_STATE | IBV_QP_CUR_STATE),
					     -EINVAL);
				cr_assert_eq(tp_qp_attr_check(types[t], c, n,
							      IBV_QP_STATE | IBV_QP_QKEY),
					     -EINVAL);
			}
		}
	}

	/* RESET->RTR skips INIT: illegal whatever the mask. */
	cr_assert_eq(tp_qp_attr_masks(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_RTR, &req, &opt),
		     -EINVAL);
	cr_assert_eq(tp_qp_attr_check(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_RTR,
				      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
		     -EINVAL);

	/* RTS->RTS with ACCESS_FLAGS is legal for RC, with or without STATE. */
	cr_assert_eq(tp_qp_attr_check(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS,
				      IBV_QP_STATE | IBV_QP_ACCESS_FLAGS),
		     0);
	cr_assert_eq(tp_qp_attr_check(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_ACCESS_FLAGS),
		     0);
	/* ... but not for UD, which has no access flags. */
	cr_assert_eq(tp_qp_attr_check(IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_ACCESS_FLAGS),
		     -EINVAL);

	/* A state change without IBV_QP_STATE is not a state change. */
	cr_assert_eq(tp_qp_attr_check(IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_RTR, 0), -EINVAL);
	/* RTR and SQE have no "stay" entry: a modify there must change the state. */
	cr_assert_eq(tp_qp_attr_check(IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTR, 0), -EINVAL);
	cr_assert_eq(tp_qp_attr_check(IBV_QPT_UD, IBV_QPS_SQE, IBV_QPS_SQE, 0), -EINVAL);
	/* SQE->RTS recovers UD and UC; CUR_STATE is allowed there. */
	cr_assert_eq(tp_qp_attr_check(IBV_QPT_UD, IBV_QPS_SQE, IBV_QPS_RTS,
				      IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_QKEY),
		     0);
	/* RTS->SQD may ask for the drained event. */
	cr_assert_eq(tp_qp_attr_check(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_SQD,
				      IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY),
		     0);
	/* Nothing allows a resize through modify. */
	cr_assert_eq(tp_qp_attr_check(IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_SQD, IBV_QP_CAP),
		     -EINVAL);
}
