/* SPDX-License-Identifier: BSD-3-Clause */
/* Devices: our libibverbs' devices paired with the daemon behind each (lib/client's
 * discovery gives both the same names in the same order), opened once with a default PD
 * and a CM session; which device owns an address; rdma_get_devices. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm.h"
#include "uroce_wire.h"

static pthread_mutex_t ucma_devices_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ucma_device ucma_device_table[UCMA_MAX_DEVICES];
static int ucma_ndevices = -1; /* -1: not looked for yet */

/* fork(): the table's lock is not held by a thread the child does not have. */
static void ucma_devices_fork_prepare(void)
{
	pthread_mutex_lock(&ucma_devices_lock);
}

static void ucma_devices_fork_done(void)
{
	pthread_mutex_unlock(&ucma_devices_lock);
}

__attribute__((constructor)) static void ucma_devices_fork_init(void)
{
	pthread_atfork(ucma_devices_fork_prepare, ucma_devices_fork_done, ucma_devices_fork_done);
}

/* Pairs each ibv_device with its daemon's socket, by name and GUID. Called under the lock;
 * done again while no device was found (a daemon may start later). */
static void ucma_devices_find(void)
{
	struct uroce_client_daemon *daemons = NULL;
	struct ibv_device **list;
	bool explicit_list;
	int nd, nlist = 0, n = 0;

	list = ibv_get_device_list(&nlist);
	if (!list)
		return;
	nd = uroce_client_discover(&daemons, &explicit_list);
	for (int i = 0; i < nlist && n < UCMA_MAX_DEVICES; i++)
		for (int k = 0; k < nd; k++) {
			if (strcmp(daemons[k].name, ibv_get_device_name(list[i])) != 0 ||
			    daemons[k].guid != ibv_get_device_guid(list[i]))
				continue;
			ucma_device_table[n].ibv_dev = list[i];
			memcpy(ucma_device_table[n].sock, daemons[k].sock,
			       sizeof(ucma_device_table[n].sock));
			n++;
			break;
		}
	free(daemons);
	/* The ibv_devices stay valid after the list is freed (our libibverbs keeps them
	 * for the process, as rdma-core keeps its own). */
	ibv_free_device_list(list);
	ucma_ndevices = n;
}

int ucma_devices(struct ucma_device **devs)
{
	int n;

	pthread_mutex_lock(&ucma_devices_lock);
	if (ucma_ndevices <= 0)
		ucma_devices_find();
	n = ucma_ndevices < 0 ? 0 : ucma_ndevices;
	pthread_mutex_unlock(&ucma_devices_lock);
	*devs = ucma_device_table;
	return n;
}

int ucma_device_index(const struct ucma_device *dev)
{
	return (int)(dev - ucma_device_table);
}

int ucma_device_open(struct ucma_device *dev)
{
	struct ibv_device_attr attr;
	int rc = 0;

	pthread_mutex_lock(&ucma_devices_lock);
	/* A forked child inherits its parent's session, context and PD, and may not use them
	 * (lib/client: every call on them fails with EIO): it opens its own. */
	if (dev->session && uroce_client_forked(dev->session)) {
		dev->session = NULL;
		dev->verbs = NULL;
		dev->pd = NULL;
	}
	if (dev->session)
		goto out;
	if (!dev->verbs) {
		dev->verbs = ibv_open_device(dev->ibv_dev);
		if (!dev->verbs) {
			rc = errno ? errno : ENODEV;
			goto out;
		}
	}
	rc = ibv_query_device(dev->verbs, &attr);
	if (rc)
		goto out;
	dev->max_qp_wr = attr.max_qp_wr;
	dev->max_initiator_depth = (uint8_t)attr.max_qp_init_rd_atom;
	dev->max_responder_resources = (uint8_t)attr.max_qp_rd_atom;
	if (!dev->pd) {
		dev->pd = ibv_alloc_pd(dev->verbs);
		if (!dev->pd) {
			rc = errno ? errno : ENOMEM;
			goto out;
		}
	}
	dev->session = uroce_client_open(dev->sock);
	if (!dev->session)
		rc = errno ? errno : ENODEV;
out:
	pthread_mutex_unlock(&ucma_devices_lock);
	return rc ? ucma_fail(rc) : 0;
}

int ucma_call(struct ucma_device *dev, uint32_t cmd, const void *req, size_t req_len, void *rep,
	      size_t rep_len, int *rep_fds, unsigned int max_rep_fds)
{
	int rc = uroce_client_call(dev->session, cmd, req, req_len, rep, rep_len, rep_fds,
				   max_rep_fds);

	return rc ? ucma_fail(-rc) : 0;
}

/* The GID an address has in a RoCEv2 GID table: the IPv6 address, or IPv4-mapped. */
static bool ucma_addr_gid(const struct sockaddr *addr, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (addr->sa_family == AF_INET) {
		uroce_gid_from_ipv4(gid->raw,
				    &((const struct sockaddr_in *)(const void *)addr)->sin_addr);
		return true;
	}
	if (addr->sa_family == AF_INET6) {
		memcpy(gid->raw, &((const struct sockaddr_in6 *)(const void *)addr)->sin6_addr,
		       16);
		return true;
	}
	return false;
}

static bool ucma_device_has_gid(struct ucma_device *dev, const union ibv_gid *gid)
{
	struct ibv_port_attr port;

	if (ibv_query_port(dev->verbs, 1, &port))
		return false;
	for (int i = 0; i < port.gid_tbl_len; i++) {
		union ibv_gid g;

		if (ibv_query_gid(dev->verbs, 1, i, &g) == 0 && memcmp(&g, gid, sizeof(g)) == 0)
			return true;
	}
	return false;
}

struct ucma_device *ucma_device_by_addr(const struct sockaddr *addr)
{
	struct ucma_device *devs;
	union ibv_gid gid;
	int n = ucma_devices(&devs);

	if (!ucma_addr_gid(addr, &gid))
		return NULL;
	for (int i = 0; i < n; i++)
		if (ucma_device_open(&devs[i]) == 0 && ucma_device_has_gid(&devs[i], &gid))
			return &devs[i];
	return NULL;
}

UCMA_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list = NULL;
	struct ucma_device *devs;
	int n = ucma_devices(&devs), i;

	if (n <= 0) {
		errno = ENODEV;
		goto out;
	}
	for (i = 0; i < n; i++)
		if (ucma_device_open(&devs[i]))
			goto out;
	list = calloc((size_t)n + 1, sizeof(*list));
	if (!list)
		goto out;
	for (i = 0; i < n; i++)
		list[i] = devs[i].verbs;
out:
	if (num_devices)
		*num_devices = list ? n : 0;
	return list;
}

UCMA_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list); /* the contexts stay open for the process, as rdma-core's */
}
