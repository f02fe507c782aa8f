/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device as a client sees it: HELLO (its context region: async ring, wake-up
 * announcement, doorbell summary; its signals), QUERY_DEVICE, QUERY_PORT, QUERY_GID; and
 * the commands that reach the host: STATS, ADMIN, CAPTURE_START.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rnic_internal.h"

void rnic_cmd_hello(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
		    const void *payload, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_hello_req *req = payload;
	struct uroce_ctrl_hello_rep rep = {.version = UROCE_CTRL_VERSION};
	int rep_fds[3] = {-1, -1, -1};
	struct stat st;
	int rc;

	if (c->region.addr) {
		REPLY(c, h, -EINVAL, NULL, 0); /* once per connection */
		return;
	}
	rc = rnic_limit_client(c);
	if (rc) {
		REPLY(c, h, rc, NULL, 0);
		return;
	}
	/* c->pid is the kernel's (SO_PEERCRED); the pid in the request is not believed. */
	memcpy(c->name, req->name, sizeof(c->name));
	c->name[sizeof(c->name) - 1] = 0;
	/* Header, the wake-up announcement, the CQ waiters, the async ring: each from its
	 * own line. */
	rep.wake_offset = UROCE_SHM_CACHELINE;
	rep.waiters_offset = rep.wake_offset + sizeof(struct uroce_shm_wake);
	rep.doorbells_offset = rep.waiters_offset + sizeof(struct uroce_shm_waiters);
	rep.async_ring_offset =
		(uint32_t)((rep.doorbells_offset + uroce_summary_bytes(UROCE_CTRL_DOORBELL_SLOTS) +
			    UROCE_SHM_CACHELINE - 1) &
			   ~(uint64_t)(UROCE_SHM_CACHELINE - 1));
	/* The client's ends of its signals first: HELLO fails whole or not at all (the
	 * region says a HELLO was accepted). Each end is the client's own open file. */
	rc = rnic_event_pipe_open(&c->async_pipe, &rep_fds[1]);
	if (rc)
		goto fail;
	rc = rnic_wake_add(c, &rep_fds[2]);
	if (rc)
		goto fail;
	rc = rnic_shm_create(nic, &c->region, "uroce-ctx",
			     rep.async_ring_offset +
				     uroce_ring_bytes(UROCE_CTRL_ASYNC_RING_SIZE,
						      sizeof(struct uroce_ctrl_async_event)),
			     UROCE_CTRL_REGION_CONTEXT);
	if (rc)
		goto fail;
	if (fstat(c->region.fd, &st) != 0) {
		rc = -errno;
		rnic_shm_close(nic, &c->region);
		goto fail;
	}
	c->region_dev = st.st_dev; /* what an importer's token must be (import.c) */
	c->region_ino = st.st_ino;
	uroce_ring_format((uint8_t *)c->region.addr + rep.async_ring_offset,
			  UROCE_CTRL_ASYNC_RING_SIZE, sizeof(struct uroce_ctrl_async_event));
	uroce_ring_open(&c->async_ring, (uint8_t *)c->region.addr + rep.async_ring_offset,
			c->region.size - rep.async_ring_offset, true);
	c->wake = (void *)((uint8_t *)c->region.addr + rep.wake_offset);
	c->waiters = (void *)((uint8_t *)c->region.addr + rep.waiters_offset);
	uroce_summary_open(&c->doorbells, (uint8_t *)c->region.addr + rep.doorbells_offset,
			   UROCE_CTRL_DOORBELL_SLOTS);
	rep.region_size = c->region.size;
	snprintf(rep.dev_name, sizeof(rep.dev_name), "uroce0");
	rep.node_guid = uroce_rnic_node_guid(nic);
	rep_fds[0] = c->region.fd;
	RNIC_INFO(nic, "client %s[%d] (#%llu) connected", c->name, c->pid,
		  (unsigned long long)c->id);
	uroce_rnic_reply(c, h, 0, &rep, sizeof(rep), rep_fds, 3);
	/* Sent (the host sends copies): the client's ends are the client's alone now. */
	close(rep_fds[1]);
	close(rep_fds[2]);
	return;
fail:
	if (rep_fds[1] >= 0)
		close(rep_fds[1]);
	if (rep_fds[2] >= 0)
		close(rep_fds[2]);
	rnic_event_pipe_close(&c->async_pipe);
	rnic_wake_del(c);
	REPLY(c, h, rc, NULL, 0);
}

void rnic_cmd_query_device(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			   const void *payload RNIC_UNUSED, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	struct uroce_ctrl_query_device_rep rep;

	uroce_tp_query_device(nic->dev, &rep.attr);
	snprintf(rep.attr.fw_ver, sizeof(rep.attr.fw_ver), "uroce %s", "0.1.0");
	rep.attr.node_guid = uroce_rnic_node_guid(nic);
	rep.attr.sys_image_guid = rep.attr.node_guid;
	rep.attr.vendor_part_id = 0x7572; /* "ur" */
	rep.attr.hw_ver = 0;
	REPLY(c, h, 0, &rep, sizeof(rep));
}

/* IBA 14.2.5.6 PortPhysicalState, as ibv_port_attr.phys_state carries it. */
enum {
	RNIC_PHYS_POLLING = 2,
	RNIC_PHYS_DISABLED = 3,
	RNIC_PHYS_LINK_UP = 5
};

void rnic_cmd_query_port(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			 const void *payload, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_query_port_req *req = payload;
	struct uroce_ctrl_query_port_rep rep;
	uint32_t speed = 0;
	enum uroce_rnic_link link = nic->ops->link(nic->io_ctx, &speed);

	if (req->port != 1) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	memset(&rep, 0, sizeof(rep));
	/* What rxe reports for an Ethernet netdev, with our link's state and MTU. */
	rep.attr.state = link == UROCE_RNIC_LINK_UP ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	rep.attr.max_mtu = IBV_MTU_4096;
	rep.attr.active_mtu = nic->active_mtu;
	rep.attr.gid_tbl_len = UROCE_TP_MAX_GID;
	rep.attr.port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	rep.attr.max_msg_sz = 0x80000000u;
	rep.attr.bad_pkey_cntr = 0;
	rep.attr.qkey_viol_cntr = 0;
	rep.attr.pkey_tbl_len = 1;
	rep.attr.lid = 0;
	rep.attr.sm_lid = 0;
	rep.attr.lmc = 0;
	rep.attr.max_vl_num = 1;
	rep.attr.sm_sl = 0;
	rep.attr.subnet_timeout = 0;
	rep.attr.init_type_reply = 0;
	rep.attr.active_width = 1; /* 1X */
	/* IB speed codes: 1 SDR 2.5, 2 DDR 5, 4 QDR 10, 8 FDR10, 16 FDR 14, 32 EDR 25 Gb/s
	 * per lane; pick the one nearest the Ethernet link speed. */
	rep.attr.active_speed = speed >= 25000 ? 32 :
				speed >= 14000 ? 16 :
				speed >= 10000 ? 8 :
				speed >= 5000  ? 2 :
						 1;
	/* rxe_query_port: LinkUp while active, else Polling while the netdev is up (ours:
	 * the port started, waiting for a carrier), else Disabled. */
	rep.attr.phys_state = link == UROCE_RNIC_LINK_UP   ? RNIC_PHYS_LINK_UP :
			      link == UROCE_RNIC_LINK_DOWN ? RNIC_PHYS_POLLING :
							     RNIC_PHYS_DISABLED;
	rep.attr.link_layer = IBV_LINK_LAYER_ETHERNET;
	REPLY(c, h, 0, &rep, sizeof(rep));
}

void rnic_cmd_query_gid(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			const void *payload, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_query_gid_req *req = payload;
	struct uroce_ctrl_query_gid_rep rep = {.gid_type = IBV_GID_TYPE_ROCE_V2};

	if (req->port != 1 || req->index >= UROCE_TP_MAX_GID) {
		REPLY(c, h, -EINVAL, NULL, 0);
		return;
	}
	if (req->index < nic->ngids)
		rep.gid = nic->gids[req->index];
	REPLY(c, h, 0, &rep, sizeof(rep)); /* an unused entry reads as the zero GID */
}

void rnic_cmd_stats(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
		    const void *payload, const int *fds RNIC_UNUSED)
{
	const struct uroce_ctrl_stats_req *req = payload;
	/* As many counters as one reply carries; on the heap, as it is a rare command. */
	const size_t size = UROCE_CTRL_MSG_MAX - sizeof(struct uroce_ctrl_hdr);
	struct uroce_ctrl_stats_rep *rep = malloc(size);
	uint32_t max = (uint32_t)((size - sizeof(*rep)) / sizeof(struct uroce_ctrl_stat));
	int n;

	if (!rep) {
		REPLY(c, h, -ENOMEM, NULL, 0);
		return;
	}
	n = rnic_stats(c->rnic, c, req->flags, rep->stat, max);
	rep->count = (uint32_t)n;
	rep->reserved = 0;
	REPLY(c, h, 0, rep, (uint32_t)(sizeof(*rep) + (size_t)n * sizeof(struct uroce_ctrl_stat)));
	free(rep);
}

void rnic_cmd_admin(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
		    const void *payload, const int *fds RNIC_UNUSED)
{
	struct uroce_rnic *nic = c->rnic;
	const struct uroce_ctrl_admin_req *req = payload;
	int rc;

	if (req->op == UROCE_CTRL_ADMIN_CM_DROP) {
		rnic_cm_drop(nic, req->value >> 16, req->value & 0xffff);
		rc = 0;
	} else {
		/* CAPTURE_STOP, FAULT, LOG_LEVEL: the host's I/O and logs. */
		rc = nic->ops->admin(nic->io_ctx, req);
	}
	REPLY(c, h, rc, NULL, 0);
}

void rnic_cmd_capture_start(struct uroce_rnic_client *c, const struct uroce_ctrl_hdr *h,
			    const void *payload RNIC_UNUSED, const int *fds)
{
	REPLY(c, h, c->rnic->ops->capture_start(c->rnic->io_ctx, fds[0]), NULL, 0);
}
