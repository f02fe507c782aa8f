/* SPDX-License-Identifier: BSD-3-Clause */
/* Event channels: an epoll fd over the channel's CM channel (the read end of a pipe,
 * readable while events wait) on each daemon it is used with; rdma_get_cm_event asks each daemon
 * (CM_GET_EVENT never blocks) and waits in epoll_wait when none has one. No lock is held
 * while waiting: rping blocks in rdma_get_cm_event on one thread while another calls the
 * rest of the API. The registry finds ids and memberships by the uid events carry. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "rdmacm.h"

/* ---- registry ---------------------------------------------------------------------------- */

#define UCMA_REGISTRY_BUCKETS 256
static pthread_mutex_t ucma_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ucma_obj *ucma_registry[UCMA_REGISTRY_BUCKETS];
static uint64_t ucma_next_uid = 1; /* 0: no uid */

void ucma_registry_add(struct ucma_obj *o)
{
	pthread_mutex_lock(&ucma_registry_lock);
	o->uid = ucma_next_uid++;
	o->next = ucma_registry[o->uid % UCMA_REGISTRY_BUCKETS];
	ucma_registry[o->uid % UCMA_REGISTRY_BUCKETS] = o;
	pthread_mutex_unlock(&ucma_registry_lock);
}

void ucma_registry_del(struct ucma_obj *o)
{
	struct ucma_obj **p;

	pthread_mutex_lock(&ucma_registry_lock);
	for (p = &ucma_registry[o->uid % UCMA_REGISTRY_BUCKETS]; *p; p = &(*p)->next)
		if (*p == o) {
			*p = o->next;
			break;
		}
	pthread_mutex_unlock(&ucma_registry_lock);
}

static struct ucma_id *ucma_obj_id(struct ucma_obj *o)
{
	return (struct ucma_id *)(void *)((char *)o - offsetof(struct ucma_id, obj));
}

static struct ucma_mcast *ucma_obj_mcast(struct ucma_obj *o)
{
	return (struct ucma_mcast *)(void *)((char *)o - offsetof(struct ucma_mcast, obj));
}

static bool ucma_id_owns(const struct ucma_id *id, const struct ucma_device *dev, uint32_t handle)
{
	if (id->dev == dev && id->handle == handle)
		return true;
	for (unsigned int i = 0; i < id->nports; i++)
		if (id->ports[i].dev == dev && id->ports[i].handle == handle)
			return true;
	return false;
}

/* The id (and membership) an event is for, held (outstanding + 1) so that it outlives
 * the event; NULL when it is gone. A passive id's events may carry its listener's uid:
 * the handle then tells which of the listener's children it is. */
struct ucma_id *ucma_event_hold(const struct ucma_device *dev, const struct uroce_ctrl_cm_event *ev,
				struct ucma_mcast **mc)
{
	struct ucma_obj *o;
	struct ucma_id *id = NULL;

	*mc = NULL;
	pthread_mutex_lock(&ucma_registry_lock);
	for (o = ucma_registry[ev->uid % UCMA_REGISTRY_BUCKETS]; o && o->uid != ev->uid;
	     o = o->next)
		;
	if (o && o->is_mcast) {
		*mc = ucma_obj_mcast(o);
		id = (*mc)->id;
	} else if (o) {
		id = ucma_obj_id(o);
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST && ev->id &&
		    !ucma_id_owns(id, dev, ev->id)) {
			id = NULL;
			for (unsigned int b = 0; b < UCMA_REGISTRY_BUCKETS && !id; b++)
				for (o = ucma_registry[b]; o; o = o->next)
					if (!o->is_mcast &&
					    ucma_id_owns(ucma_obj_id(o), dev, ev->id)) {
						id = ucma_obj_id(o);
						break;
					}
		}
	}
	if (id) {
		pthread_mutex_lock(&id->mut);
		id->outstanding++;
		if (*mc)
			(*mc)->outstanding++;
		pthread_mutex_unlock(&id->mut);
	}
	pthread_mutex_unlock(&ucma_registry_lock);
	return id;
}

/* ---- channels ------------------------------------------------------------------------------ */

struct ucma_channel *ucma_channel_create(void)
{
	struct ucma_channel *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return NULL;
	ch->ch.fd = epoll_create1(EPOLL_CLOEXEC);
	if (ch->ch.fd < 0) {
		free(ch);
		return NULL;
	}
	for (int i = 0; i < UCMA_MAX_DEVICES; i++)
		ch->pipe[i] = -1;
	pthread_mutex_init(&ch->lock, NULL);
	return ch;
}

void ucma_channel_destroy(struct ucma_channel *ch)
{
	struct ucma_device *devs;
	int n = ucma_devices(&devs);

	for (int i = 0; i < n; i++) {
		struct uroce_ctrl_cm_id_req req = {.id = ch->handle[i]};

		if (!ch->handle[i])
			continue;
		/* Out of the epoll set first: once the daemon closes its end, ours reads as
		 * end-of-file, which would wake a thread still waiting in rdma_get_cm_event
		 * into a channel that is gone (rping's CM thread, when main destroys the
		 * channel: it then exits with EINVAL). A waiter stays asleep, as on a read()
		 * of a destroyed kernel channel. */
		epoll_ctl(ch->ch.fd, EPOLL_CTL_DEL, ch->pipe[i], NULL);
		ucma_call(&devs[i], UROCE_CTRL_CM_DESTROY_CHANNEL, &req, sizeof(req), NULL, 0, NULL,
			  0);
		close(ch->pipe[i]);
	}
	close(ch->ch.fd);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
}

uint32_t ucma_channel_on(struct ucma_channel *ch, struct ucma_device *dev)
{
	int i = ucma_device_index(dev), pipe_fd = -1;
	struct uroce_ctrl_handle rep;
	uint32_t handle;

	pthread_mutex_lock(&ch->lock);
	handle = ch->handle[i];
	if (handle)
		goto out;
	if (ucma_call(dev, UROCE_CTRL_CM_CREATE_CHANNEL, NULL, 0, &rep, sizeof(rep), &pipe_fd, 1))
		goto out;
	struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)i};

	if (epoll_ctl(ch->ch.fd, EPOLL_CTL_ADD, pipe_fd, &e)) {
		int err = errno;
		struct uroce_ctrl_cm_id_req req = {.id = rep.handle};

		ucma_call(dev, UROCE_CTRL_CM_DESTROY_CHANNEL, &req, sizeof(req), NULL, 0, NULL, 0);
		close(pipe_fd);
		errno = err;
		goto out;
	}
	ch->pipe[i] = pipe_fd;
	ch->handle[i] = handle = rep.handle;
out:
	pthread_mutex_unlock(&ch->lock);
	return handle;
}

UCMA_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct ucma_channel *ch = ucma_channel_create();

	return ch ? &ch->ch : NULL;
}

UCMA_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	ucma_channel_destroy(ucma_channel_of(channel));
}

/* One event from the channel's CM channel on any device. @return 0, or -1 with errno
 * (EAGAIN: none waiting). */
static int ucma_channel_poll(struct ucma_channel *ch, struct ucma_device **dev,
			     struct uroce_ctrl_cm_event *ev)
{
	struct ucma_device *devs;
	int n = ucma_devices(&devs);
	unsigned int start;

	pthread_mutex_lock(&ch->lock);
	start = ch->next++;
	pthread_mutex_unlock(&ch->lock);
	for (int k = 0; k < n; k++) {
		int i = (int)((start + (unsigned int)k) % (unsigned int)n);
		struct uroce_ctrl_cm_id_req req;

		pthread_mutex_lock(&ch->lock);
		req = (struct uroce_ctrl_cm_id_req){.id = ch->handle[i]};
		pthread_mutex_unlock(&ch->lock);
		if (!req.id)
			continue;
		if (ucma_call(&devs[i], UROCE_CTRL_CM_GET_EVENT, &req, sizeof(req), ev, sizeof(*ev),
			      NULL, 0) == 0) {
			*dev = &devs[i];
			return 0;
		}
		if (errno != EAGAIN)
			return -1;
	}
	return ucma_fail(EAGAIN);
}

UCMA_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct ucma_channel *ch = ucma_channel_of(channel);
	struct uroce_ctrl_cm_event ev;
	struct ucma_event *evt;
	struct ucma_device *dev;

	if (!event)
		return ucma_fail(EINVAL);
	evt = malloc(sizeof(*evt));
	if (!evt)
		return ucma_fail(ENOMEM);
	for (;;) {
		if (ucma_channel_poll(ch, &dev, &ev) == 0) {
			if (ucma_event_process(dev, &ev, evt))
				break;
			continue;
		}
		if (errno != EAGAIN)
			goto fail;
		int flags = fcntl(channel->fd, F_GETFL);
		struct epoll_event e;

		if (flags < 0)
			goto fail;
		if (flags & O_NONBLOCK) {
			errno = EAGAIN;
			goto fail;
		}
		/* Readable once any CM channel of this one has an event (or a device was
		 * added to it meanwhile by another thread: epoll watches it from then on). */
		if (epoll_wait(channel->fd, &e, 1, -1) < 0)
			goto fail; /* EINTR: a signal, as a read() of rdma-core's fd */
	}
	*event = &evt->event;
	return 0;
fail:
	free(evt);
	return -1;
}

UCMA_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct ucma_event *evt;

	if (!event)
		return ucma_fail(EINVAL);
	evt = (struct ucma_event *)(void *)event;
	ucma_event_done(evt->id, evt->mc);
	free(evt);
	return 0;
}
