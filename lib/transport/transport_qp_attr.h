/* SPDX-License-Identifier: BSD-3-Clause */
/* Private to lib/transport: which ibv_modify_qp attribute masks each QP state transition
 * requires and allows (IBA vol 1 table 94, as Linux's ib_modify_qp_is_ok() encodes it). */
#ifndef TP_QP_ATTR_H
#define TP_QP_ATTR_H

#include <infiniband/verbs.h>

/*
 * Only IBV_QPT_RC, IBV_QPT_UC and IBV_QPT_UD exist here; any other type is -EINVAL.
 * States are IBV_QPS_RESET .. IBV_QPS_ERR; IBV_QPS_UNKNOWN (or anything else) is -EINVAL.
 *
 * IBV_QP_STATE is required whenever @next differs from @cur. With @next == @cur (a
 * modify without IBV_QP_STATE, or one that names the current state) it is optional, and
 * the pair must still be in the table (INIT->INIT, RTS->RTS, SQD->SQD, RESET->RESET and
 * ERR->ERR are; RTR->RTR and SQE->SQE are not).
 *
 * IBV_QP_CUR_STATE is only ever allowed where the table allows it (leaving RTR, RTS, SQD
 * or SQE towards RTS); whether its value matches the current state is the caller's check.
 */

/* IBA table 94: may a QP of @type in @cur go to @next with exactly the attributes in @mask?
 * Returns 0, or -EINVAL (transition not allowed, a required attribute missing, or an
 * attribute the transition does not allow). */
int tp_qp_attr_check(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next,
		     int mask);

/* The attributes @type must (required) and may (optional) give for cur -> next; both 0
 * and return -EINVAL if the transition does not exist. Returns 0 otherwise. The two sets
 * are disjoint; IBV_QP_STATE is in @required when cur != next, in @optional otherwise. */
int tp_qp_attr_masks(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next,
		     int *required, int *optional);

#endif /* TP_QP_ATTR_H */
