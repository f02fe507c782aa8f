/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_XFER_CLIENT_VERBS_H
#define UROCE_XFER_CLIENT_VERBS_H

/* lib/client's data-path calls in the form of struct xfer_verbs (xfer_loops.h), inline so
 * that a program calling them directly (uroce-bench-verbs-client's micro mode) pays
 * nothing for the form. */

#include "uroce_client.h"
#include "xfer_loops.h"

static inline int xfer_client_post_send(void *qp, struct ibv_send_wr *wr,
					struct ibv_send_wr **bad)
{
	return uroce_client_post_send(qp, wr, bad);
}

static inline int xfer_client_post_recv(void *qp, struct ibv_recv_wr *wr,
					struct ibv_recv_wr **bad)
{
	return uroce_client_post_recv(qp, wr, bad);
}

static inline int xfer_client_poll_cq(void *cq, int max, struct ibv_wc *wc)
{
	return uroce_client_poll_cq(cq, max, wc);
}

#endif
