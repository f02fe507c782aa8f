/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_TEST_DAEMON_FIXTURE_H
#define UROCE_TEST_DAEMON_FIXTURE_H

/* Starts one uroced for the tests of a file, and stops it after: on a net_null port (no
 * wire: everything is loopback), or on a port the test names. The daemon binary comes
 * from $UROCED. */

#include <stdbool.h>
#include <sys/types.h>

#include "uroce_client.h"

struct fx_daemon {
	pid_t pid;
	char sock[108];
	char prefix[32];
};

/* @return 0, or -1 with a message on stderr (no uroced, or not root for EAL). */
int fx_daemon_start(struct fx_daemon *d, const char *ipv4, const char *extra_set);
/* The same on the port @p vdev (an EAL --vdev value, e.g. "net_tap0,iface=t0"); with
 * @p own_netns, in a network namespace of its own (`unshare --net`), which goes away with
 * the daemon: `nsenter -t <d->pid> -n CMD` runs CMD there. Either way the daemon gets
 * SIGTERM if the calling thread dies first (a test killed on its timeout). */
int fx_daemon_start_port(struct fx_daemon *d, const char *ipv4, const char *extra_set,
			 const char *vdev, bool own_netns);
void fx_daemon_stop(struct fx_daemon *d);
/* A named counter from the daemon's STATS, or UINT64_MAX if absent. */
uint64_t fx_stat(struct uroce_client_ctx *ctx, const char *name);

/* A loopback RC/UC/UD pair on one context: two QPs connected to each other through the
 * daemon's own GID (index 1, the IPv4-mapped one). */
struct fx_pair {
	struct uroce_client_ctx *ctx;
	struct uroce_client_pd *pd;
	struct uroce_client_cq *cq[2];
	struct uroce_client_qp *qp[2];
};

int fx_pair_create(struct fx_pair *p, const char *sock, enum ibv_qp_type type,
		   enum ibv_mtu mtu);
void fx_pair_destroy(struct fx_pair *p);
/* Polls @p cq until one completion arrives (5 s limit). @return 0 or -1 on timeout. */
int fx_wait(struct uroce_client_cq *cq, struct ibv_wc *wc);

#endif
