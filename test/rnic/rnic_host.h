/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_TEST_RNIC_HOST_H
#define UROCE_TEST_RNIC_HOST_H

/*
 * lib/rnic without a daemon: the software RNIC driven by a host played here (its ops),
 * with no port, socket or DPDK. What uroced's tests show end to end, shown at the
 * library's own boundary: requests in, replies and events out, the port's state as the
 * host reports it, and each RNIC's state its own (two in one process share nothing).
 *
 * rnic_host.c: the host, and the requests a test makes as a client.
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
	struct uroce_rnic_tx_seg held[64];
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

#endif
