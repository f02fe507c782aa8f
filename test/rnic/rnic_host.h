/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_TEST_RNIC_HOST_H
#define UROCE_TEST_RNIC_HOST_H

/*
 * lib/rnic without a daemon: the software RNIC driven by a host played here (its ops),
 * with no port, socket or DPDK. What uroced's tests show end to end, shown at the
 * library's own boundary: requests in, replies and events out, the port's state as the
 * host reports it, and each RNIC's state its own (two in one process share nothing).
 *
 * One executable, test_rnic, of one file per subject (test_rnic_<subject>.c) and
 * rnic_host.c: the host, and the requests a test makes as a client. Below, under each
 * file's heading, what it lends the others.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "uroce_rnic.h"
#include "uroce_shm.h"

/* ---- rnic_host.c ------------------------------------------------------------------------ */

#define LOOP_FRAMES 64
#define LOOP_FRAME_MAX 2048
struct host {
	enum uroce_rnic_link link;
	uint32_t speed;
	uint64_t now;
	unsigned int frames;
	/* loopback (host_loop): frames sent, to be received again, in order */
	bool loopback;
	unsigned int nloop;
	uint32_t loop_len[LOOP_FRAMES];
	uint8_t loop[LOOP_FRAMES][LOOP_FRAME_MAX];
	/* zero-copy frames (host_init_zc): the pieces they point at, held until released */
	unsigned int zc_frames, nheld;
	struct uroce_tp_tx_seg held[64];
	/* the last reply */
	uint8_t msg[UROCE_CTRL_MSG_MAX];
	uint32_t len;
	int fds[UROCE_CTRL_MAX_FDS];
	unsigned int nfds;
	unsigned int replies;
	struct uroce_ip_stack *ip;
	struct uroce_rnic *nic;
	/* what the host says a process may pin (ops->memlock_limit); 0: no limit */
	uint64_t memlock;
	/* ops->log's debug lines: how many, and the first of the responder and completer */
	unsigned int debug_lines;
	char first_resp[96], first_comp[96];
};

void host_loop(struct host *h);
void host_release_held(struct host *h);
void host_init_cfg(struct host *h, uint8_t last_mac_byte, uint8_t last_ip_byte, bool zc,
		   uint64_t seed);
void host_init_zc(struct host *h, uint8_t last_mac_byte, uint8_t last_ip_byte, bool zc);
void host_init(struct host *h, uint8_t last_mac_byte, uint8_t last_ip_byte);
void host_fini(struct host *h);
int request(struct host *h, struct uroce_rnic_client *c, uint16_t cmd, const void *payload,
	    uint32_t len);
int request_fd(struct host *h, struct uroce_rnic_client *c, uint16_t cmd, const void *payload,
	       uint32_t len, int fd);
const void *reply_payload(const struct host *h);
uint32_t handle_of(const struct host *h);
struct uroce_rnic_client *hello_as(struct host *h, uid_t uid);
struct uroce_rnic_client *hello(struct host *h);
struct ibv_port_attr query_port(struct host *h, struct uroce_rnic_client *c);
uint64_t stat_of(struct host *h, struct uroce_rnic_client *c, const char *name);
uint64_t stat_of_flags(struct host *h, struct uroce_rnic_client *c, uint32_t flags,
		       const char *name);

/* ---- test_rnic_port.c ------------------------------------------------------------------- */

/* The application's view of a client's sleep announcement: its context region mapped,
 * and the wake-up socket HELLO handed out. */
struct app_wake {
	struct uroce_shm_region region;
	struct uroce_shm_wake *wake;
	int efd;
};

void app_wake_open(struct app_wake *a, const struct host *h);
void app_posted(struct app_wake *a);
bool readable(int fd);

/* ---- test_rnic_mr.c --------------------------------------------------------------------- */

int reg_mr_of(struct host *h, struct uroce_rnic_client *c, uint64_t len, uint32_t *rkey);

/* ---- test_rnic_zc.c --------------------------------------------------------------------- */

#define ZC_MEM (64 * 1024)

/* One application with an RC QP connected to itself and one MR over ZC_MEM bytes of a
 * memfd; its send queue and CQ mapped as lib/client maps them. */
struct zc_app {
	struct uroce_rnic_client *c;
	uint8_t *mem; /* the application's view of the MR */
	uint32_t mr, lkey, rkey, qp_handle, qpn;
	union ibv_gid gid; /* our own GID 1, the QP's destination */
	struct uroce_shm_region ctx_region, qp_region, cq_region;
	struct uroce_summary doorbells;
	struct uroce_ring sq, rq, cq;
	uint32_t slot;
	/* The application's copies of HELLO's async pipe and wake-up socket, and of its CQ's
	 * completion channel (-1: none). */
	int async_fd, wake_fd, channel_fd;
};

void zc_app_open_with(struct host *h, struct zc_app *a, bool channel);
void zc_post_write(struct host *h, struct zc_app *a, uint32_t len);
void zc_app_close(struct zc_app *a);

#endif
