/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_CLIENT_OBJ_H
#define UROCE_CLIENT_OBJ_H

/*
 * The client's objects behind the verbs structs, and the one way from a verbs struct to
 * the object that embeds it: to_u<object>(), container_of on the member ibv, as rdma-core
 * providers' to_r<object>() (providers/rxe/rxe.h). The way back is &obj->ibv.
 *
 * For lib/client and the drop-in libibverbs (lib/verbs) built with it; not installed. A
 * program that has only uroce_client.h sees PDs, MRs, channels, AHs and MWs there and
 * reaches the ibv structs of CQs, SRQs and QPs with uroce_client_{cq,srq,qp}_ibv.
 */
#include <pthread.h>
#include <stddef.h>

#include "uroce_client.h"
#include "uroce_ctrl.h"
#include "uroce_shm.h"

#define cl_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

struct uroce_client_cq {
	/* Room for the extended CQ: the drop-in libibverbs hands out every CQ as an
	 * ibv_cq_ex (whose first fields are ibv_cq's); the extended fields (comp_mask,
	 * status, wr_id, start_poll...) are its own. */
	union {
		struct ibv_cq ibv;
		struct ibv_cq_ex ibv_ex;
	};
	void *priv; /* lib/verbs' state of the CQ (struct uv_cq), NULL at creation */
	struct uroce_client_ctx *ctx;
	uint32_t handle;
	struct uroce_client_channel *channel;
	struct uroce_shm_region region;
	struct uroce_ring ring; /* consumer */
	struct uroce_ctrl_cq_ctl *ctl;
	pthread_spinlock_t lock;
	uint32_t events_seen; /* of ctl->events, taken by get_cq_event */
	uint32_t events_acked;
	/* The wait policy's state (cq_wait.c), under lock: empty polls in a row, and when
	 * the policy blocks, the waiters' seq and the time at the streak's second poll. */
	uint32_t empty_polls;
	uint32_t waiters_snapshot;
	uint64_t streak_start_ns;
};

struct uroce_client_srq {
	struct ibv_srq ibv;
	void *priv; /* lib/verbs' state of the SRQ (struct uv_srq), NULL at creation */
	struct uroce_client_ctx *ctx;
	uint32_t handle;
	uint32_t srqn; /* XRC: the number requests name it by; 0 otherwise */
	struct uroce_shm_region region;
	struct uroce_ring ring; /* producer */
	struct uroce_ctrl_queue_ctl *ctl;
	pthread_spinlock_t lock;
	uint32_t max_wr, max_sge;
	uint32_t doorbell_slot; /* from ctl, at creation */
};

struct uroce_client_xrcd {
	struct ibv_xrcd ibv;
	struct uroce_client_ctx *ctx;
	uint32_t handle;
};

struct uroce_client_qp {
	/* Room for the extended QP (ibv_qp_ex starts with ibv_qp), as for CQs: its post
	 * API fields are lib/verbs' to fill. */
	union {
		struct ibv_qp ibv;
		struct ibv_qp_ex ibv_ex;
	};
	void *priv; /* lib/verbs' state of the QP (struct uv_qp), NULL at creation */
	struct uroce_client_ctx *ctx;
	uint32_t handle;
	struct uroce_shm_region region;
	struct uroce_ring sq, rq; /* producers */
	struct uroce_ctrl_queue_ctl *ctl;
	pthread_spinlock_t sq_lock, rq_lock;
	struct ibv_qp_cap cap;
	struct uroce_client_srq *srq;
	uint32_t doorbell_slot; /* from ctl, at creation */
};

/* The embedded verbs structs are at offset 0 (container_of both ways), and the extended
 * ones begin with the basic ones. */
_Static_assert(offsetof(struct uroce_client_cq, ibv) == 0, "cq: ibv first");
_Static_assert(offsetof(struct uroce_client_qp, ibv) == 0, "qp: ibv first");
_Static_assert(offsetof(struct ibv_cq_ex, cqe) == offsetof(struct ibv_cq, cqe) &&
		       offsetof(struct ibv_cq_ex, async_events_completed) ==
			       offsetof(struct ibv_cq, async_events_completed),
	       "ibv_cq_ex begins with ibv_cq");
_Static_assert(offsetof(struct ibv_qp_ex, qp_base) == 0, "ibv_qp_ex begins with ibv_qp");

/* to_upd(), to_umr(), to_uchannel(), to_ucq(), to_usrq(), to_uxrcd(), to_uqp(), to_uah(),
 * to_umw(): the object that embeds the verbs struct. The argument is never NULL: a caller
 * that may have none (a CQ without a channel) tests first. */
#define CL_TO_OBJ(obj, ibv_struct)                                                                 \
	static inline struct uroce_client_##obj *to_u##obj(struct ibv_struct *ibv)                 \
	{                                                                                          \
		return cl_container_of(ibv, struct uroce_client_##obj, ibv);                       \
	}
CL_TO_OBJ(pd, ibv_pd)
CL_TO_OBJ(mr, ibv_mr)
CL_TO_OBJ(channel, ibv_comp_channel)
CL_TO_OBJ(cq, ibv_cq)
CL_TO_OBJ(srq, ibv_srq)
CL_TO_OBJ(xrcd, ibv_xrcd)
CL_TO_OBJ(qp, ibv_qp)
CL_TO_OBJ(ah, ibv_ah)
CL_TO_OBJ(mw, ibv_mw)
#undef CL_TO_OBJ

#endif
