/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_RDMACM_H
#define UROCE_RDMACM_H

/*
 * The drop-in librdmacm.so.1 (lib/rdmacm): rdma-core 44's public ABI over uroced's
 * connection manager (the CM_* commands of uroce_ctrl.h).
 *
 * Devices are our libibverbs' (the public API: ibv_get_device_list, ibv_open_device),
 * each opened once, with a default PD, as rdma-core does. Beside the application's
 * ibv_context, the library opens its own control connection per daemon, the CM session:
 * every id and CM channel of the process lives there.
 *
 * An rdma_cm_id exists in the daemon only once the library knows its device (from the
 * address it is bound or resolved to); a wildcard listener has one daemon id per device.
 * An rdma_event_channel is an epoll fd over the CM channels (pipes) it has on each
 * daemon. Events are found by uid in a registry of live ids and multicast memberships,
 * so an event for something destroyed is dropped instead of read from freed memory.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h> /* rdma_create_srq... are declared there */

#include "uroce_client.h"
#include "uroce_ctrl.h"

#define UCMA_EXPORT __attribute__((visibility("default")))

/** At most this many daemons are used (a CM channel has a slot per device). */
#define UCMA_MAX_DEVICES 16

/* What the public structs must look like for the code that reads them (rdma-core 44). */
_Static_assert(sizeof(struct rdma_cm_id) == 416, "struct rdma_cm_id (rdma-core 44)");
_Static_assert(offsetof(struct rdma_cm_id, route) == 32, "rdma_cm_id.route");
_Static_assert(offsetof(struct rdma_cm_id, qp_type) == 408, "rdma_cm_id.qp_type");
_Static_assert(sizeof(struct rdma_cm_event) == 80, "struct rdma_cm_event");
_Static_assert(sizeof(struct rdma_addrinfo) == 96, "struct rdma_addrinfo");
_Static_assert(sizeof(struct rdma_event_channel) == sizeof(int), "rdma_event_channel: fd");
_Static_assert(sizeof(((struct uroce_ctrl_cm_param *)0)->private_data) == 224,
	       "private data: the most a CM message carries");

/** A daemon as librdmacm uses it. */
struct ucma_device {
	struct ibv_device *ibv_dev;
	char sock[108];
	/* Opened on first use (ucma_device_open), then kept for the process. */
	struct ibv_context *verbs;
	struct ibv_pd *pd;                /* the default PD of ids on this device */
	struct uroce_client_ctx *session; /* the CM session */
	int max_qp_wr;
	uint8_t max_initiator_depth;
	uint8_t max_responder_resources;
};

/** rdma_event_channel: fd is an epoll fd over the CM channels this one has per device. */
struct ucma_channel {
	struct rdma_event_channel ch;
	pthread_mutex_t lock;
	uint32_t handle[UCMA_MAX_DEVICES]; /* the CM channel on device i; 0: none yet */
	int pipe[UCMA_MAX_DEVICES];        /* its pipe's read end (in the epoll set) */
	unsigned int next;                 /* the device rdma_get_cm_event asks first */
};

/** What the registry holds: ids and multicast memberships, by uid. */
struct ucma_obj {
	uint64_t uid;
	struct ucma_obj *next; /* hash chain */
	bool is_mcast;
};

/** A daemon id of a wildcard listener (one per device). */
struct ucma_port {
	struct ucma_device *dev;
	uint32_t handle;
};

struct ucma_mcast;

/** Options set before the id had a daemon id, replayed when it gets one. */
#define UCMA_MAX_PENDING_OPTIONS 8
struct ucma_option {
	int level, optname;
	uint64_t value;
};

struct ucma_id {
	struct rdma_cm_id id; /* first: rdma_cm_id is what the application holds */
	struct ucma_obj obj;
	struct ucma_device *dev; /* NULL until the address names a device */
	uint32_t handle;         /* the daemon id on dev */
	struct ucma_port *ports; /* wildcard listener: a daemon id per device */
	unsigned int nports;
	bool sync;           /* created without a channel: each call waits for its event */
	bool bound_wildcard; /* bound to any address before it had a device */
	struct sockaddr_storage bound;
	/* Bound to any address: as the kernel does, the port is taken at bind time (chosen
	 * there for port 0: rdma_get_src_port before rdma_listen, as qperf does; a port in
	 * use fails with EADDRINUSE), held by an id bound on the first device until listen
	 * uses it or resolve_addr lets it go. Being bound there also lets that device's CM
	 * hold a REQ that comes before the listen (lib/cm/early_req.c). */
	bool reserving;
	struct ucma_port reserved;
	struct ucma_option options[UCMA_MAX_PENDING_OPTIONS];
	unsigned int noptions;

	pthread_mutex_t mut;
	pthread_cond_t cond;
	/* Events of this id being processed or held by the application (not yet acked):
	 * rdma_destroy_id waits for none. */
	unsigned int outstanding;
	bool connect_error;
	uint8_t initiator_depth;
	uint8_t responder_resources;
	void *connect; /* rdma_create_ep: ai_connect, sent in front of connect's data */
	size_t connect_len;
	struct ibv_qp_init_attr *qp_init_attr; /* rdma_create_ep on a passive id */
	struct ucma_mcast *mc_list;
	struct ibv_ece local_ece;
};

struct ucma_mcast {
	struct ucma_obj obj;
	struct ucma_mcast *next;
	struct ucma_id *id;
	void *context;
	unsigned int outstanding;
	union ibv_gid mgid;
	uint16_t mlid;
	uint32_t join_flags;
	struct sockaddr_storage addr;
};

/** An event handed to the application: private data lives until rdma_ack_cm_event. */
struct ucma_event {
	struct rdma_cm_event event;
	uint8_t private_data[UROCE_CTRL_CM_PDATA_MAX];
	struct ucma_id *id; /* the id whose count it holds */
	struct ucma_mcast *mc;
};

static inline struct ucma_id *ucma_id_of(struct rdma_cm_id *id)
{
	return (struct ucma_id *)(void *)id;
}

static inline struct ucma_channel *ucma_channel_of(struct rdma_event_channel *ch)
{
	return (struct ucma_channel *)(void *)ch;
}

/** -1 with errno, as rdma-core's calls fail. */
static inline int ucma_fail(int e)
{
	errno = e;
	return -1;
}

/* rdmacm_device.c */
int ucma_devices(struct ucma_device **devs);
int ucma_device_index(const struct ucma_device *dev);
int ucma_device_open(struct ucma_device *dev);
struct ucma_device *ucma_device_by_addr(const struct sockaddr *addr);
/** A CM command on @p dev's session. @return 0 or -1 with errno. */
int ucma_call(struct ucma_device *dev, uint32_t cmd, const void *req, size_t req_len, void *rep,
	      size_t rep_len, int *rep_fds, unsigned int max_rep_fds);

/* channel.c */
struct ucma_channel *ucma_channel_create(void);
void ucma_channel_destroy(struct ucma_channel *ch);
/** The channel's CM channel handle on @p dev (created and added to the epoll set on first
 *  use). @return the handle, or 0 with errno. */
uint32_t ucma_channel_on(struct ucma_channel *ch, struct ucma_device *dev);
void ucma_registry_add(struct ucma_obj *o);
void ucma_registry_del(struct ucma_obj *o);
/** The id (and membership) an event is for, held (its outstanding count + 1, released by
 *  ucma_event_done) so that it outlives the event; NULL when it is gone. */
struct ucma_id *ucma_event_hold(const struct ucma_device *dev, const struct uroce_ctrl_cm_event *ev,
				struct ucma_mcast **mc);

/* rdmacm_cma.c */
void ucma_event_done(struct ucma_id *id, struct ucma_mcast *mc);
/** Turns the daemon's event into the application's (rdma-core's ucma event processing:
 *  QP transitions, child ids...). @return false when the event is for no one (dropped). */
bool ucma_event_process(struct ucma_device *dev, const struct uroce_ctrl_cm_event *ev,
			struct ucma_event *out);
void ucma_id_apply_route(struct ucma_id *id, const struct uroce_ctrl_cm_route *r);
/** rdma-core's ucma_complete: a synchronous id takes the event its call started (and
 *  keeps it in id.event). @return 0; -1 with errno: the event's status (ECONNREFUSED for
 *  a reject), EAGAIN when the channel is non-blocking and the event has not come yet. */
int ucma_complete(struct ucma_id *id);
socklen_t ucma_addrlen(const struct sockaddr *addr);

/* rdmacm_qp.c */
int ucma_modify_qp_rtr(struct ucma_id *id, uint8_t resp_res);
int ucma_modify_qp_rts(struct ucma_id *id, uint8_t init_depth);
int ucma_modify_qp_err(struct ucma_id *id);

#endif
