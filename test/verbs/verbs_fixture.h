/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_TEST_VERBS_FIXTURE_H
#define UROCE_TEST_VERBS_FIXTURE_H

/*
 * For tests that use nothing but the public rdma-core API (<infiniband/verbs.h>):
 * starts one uroced on a net_null port (no wire: every frame is loopback) and points
 * $UROCE_SOCKET at its control socket, so that ibv_get_device_list() finds it.
 *
 * The daemon binary comes from $UROCED; the library the test must be running on from
 * $UROCE_VERBS_LIB (the build's libibverbs.so.1).
 *
 * Reference mode ($UROCE_VERBS_REFERENCE=1): no daemon is started and the library is
 * not checked; the tests run on the first device the system's libibverbs lists (e.g.
 * rxe0 in the rxe VM of doc/interop.md), with the RoCEv2 IPv4 GID index from
 * $UROCE_VERBS_GID_INDEX. It is how the expectations of the tests are checked against
 * rdma-core + rxe themselves.
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct vfx_daemon {
	pid_t pid;
	char sock[108];
	char prefix[32];
};

/** True in reference mode. */
bool vfx_reference(void);
/** The GID index to connect QPs with (1 for uroced: its IPv4-mapped RoCEv2 GID). */
int vfx_gid_index(void);

/**
 * Starts uroced with @p ipv4 and sets $UROCE_SOCKET to its socket (nothing in
 * reference mode). @p extra_set: "section.key=value" settings separated by spaces
 * (NULL: lcore.idle_yield_us=2). @return 0, or -1 with the reason in @p why.
 */
int vfx_daemon_start(struct vfx_daemon *d, const char *ipv4, const char *extra_set,
		     char *why, size_t whylen);
void vfx_daemon_stop(struct vfx_daemon *d);

/**
 * Checks that the libibverbs this process runs on is the build's ($UROCE_VERBS_LIB):
 * the object ibv_open_device comes from, and every libibverbs mapping in
 * /proc/self/maps. @return 0, or -1 with the reason in @p why.
 */
int vfx_check_library(char *why, size_t whylen);

#endif
