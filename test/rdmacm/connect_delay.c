/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * LD_PRELOAD shim for test/rdmacm/rxe_cm.sh: rdma_connect() waits
 * $UROCE_TEST_CONNECT_DELAY_MS before it calls the real one (the next in lookup order:
 * our librdmacm). perftest -R's client sends its data connection's REQ right after its
 * out-of-band handshake, while its server only then creates its listener; a TCG VM server
 * is often not listening yet and rxe answers REJ (no listener), where a real machine wins
 * the race. The wait stands for a client that is not faster than the server. Nothing in
 * uroce is changed by it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	static int (*real)(struct rdma_cm_id *, struct rdma_conn_param *);
	const char *ms = getenv("UROCE_TEST_CONNECT_DELAY_MS");

	if (!real)
		real = (int (*)(struct rdma_cm_id *, struct rdma_conn_param *))dlsym(RTLD_NEXT,
										 "rdma_connect");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	if (ms)
		usleep((useconds_t)atoi(ms) * 1000u);
	return real(id, param);
}
