/* SPDX-License-Identifier: BSD-3-Clause */
/* The DPDK glue (uroce_ethdev.h states the contract). */

#include "uroce_ethdev.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/if_packet.h>

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_pause.h>

/* One log facility per component (doc/design.md): DPDK's rte_log, type "uroce.ethdev",
 * printing "uroce_ethdev: <level>: ..." beside the daemon's "uroced: <level>: ..." lines.
 * Only what an operator must act on: the data path never logs. */
RTE_LOG_REGISTER(uroce_eth_logtype, uroce.ethdev, INFO);

static void eth_log(uint32_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define ETH_ERR(...) eth_log(RTE_LOG_ERR, __VA_ARGS__)
#define ETH_WARN(...) eth_log(RTE_LOG_WARNING, __VA_ARGS__)

static void eth_log(uint32_t level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!rte_log_can_log((uint32_t)uroce_eth_logtype, level))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	rte_log(level, (uint32_t)uroce_eth_logtype, "uroce_ethdev: %s: %s\n",
		level == RTE_LOG_ERR ? "error" : "warning", line);
}

struct uroce_eth_rxq {
	struct rte_mbuf *burst[UROCE_ETH_BURST_MAX]; /* the burst whose views are out */
	uint16_t nb;
	uint32_t slot_size;
	uint8_t *scratch; /* UROCE_ETH_BURST_MAX slots, allocated at the first chain */
	uint64_t frames, linearized, oversize;
	/* Frames the kernel dropped for a full af_packet ring, summed here: reading the
	 * socket's PACKET_STATISTICS clears the kernel's count (socket_drops_collect). */
	uint64_t socket_drops;
	enum uroce_eth_rx_wake wake;
	int wake_fd;
} __rte_cache_aligned;

struct uroce_eth_txq {
	struct rte_mbuf *batch[UROCE_ETH_TX_BATCH];
	uint16_t nb;
	struct rte_mbuf *reserved; /* uroce_eth_tx_alloc's frame, not yet committed */
	struct rte_mbuf *reserved_tail; /* its last segment (tx_lend, tx_append) */
	uint64_t frames, bytes, chained, lent, dropped, nombuf, oversize, busy;
} __rte_cache_aligned;

/* The private area of a lend_pool mbuf: the shared info DPDK's extbuf needs lives here,
 * not at the end of the lent memory (the application's, which we must not write). */
struct lend_priv {
	struct rte_mbuf_ext_shared_info shinfo;
	uroce_eth_lend_done_fn done;
	void *arg;
};
static_assert(sizeof(struct lend_priv) % RTE_MBUF_PRIV_ALIGN == 0, "mbuf priv alignment");

/* ---- EAL -------------------------------------------------------------------------------- */

static bool eal_done;
static bool eal_fell_back;
static char **eal_argv; /* the argv given to rte_eal_init: EAL may keep pointers into it */

static uint64_t read_u64_file(const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned long long v = 0;

	if (f == NULL)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

static bool hugetlbfs_mounted(void)
{
	FILE *f = fopen("/proc/mounts", "r");
	char line[512];
	bool found = false;

	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = strstr(line, " hugetlbfs ") != NULL;
	fclose(f);
	return found;
}

static bool arg_is(const char *a, const char *opt)
{
	size_t n = strlen(opt);

	/* "--opt" or "--opt=value" */
	return strncmp(a, opt, n) == 0 && (a[n] == '\0' || a[n] == '=');
}

bool uroce_eth_eal_no_huge(void)
{
	return eal_fell_back;
}

int uroce_eth_eal_init(int argc, char **argv)
{
	static char mem_arg[24];
	bool no_huge = false, in_memory = false, telemetry = false, mem = false;
	int end = argc, nadd = 0, ret;
	const char *add[5];

	if (eal_done)
		return -EALREADY;
	if (argc < 1 || argv == NULL)
		return -EINVAL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			end = i;
			break;
		}
	}
	for (int i = 1; i < end; i++) {
		const char *a = argv[i];

		no_huge |= arg_is(a, "--no-huge");
		in_memory |= arg_is(a, "--in-memory");
		telemetry |= arg_is(a, "--telemetry") || arg_is(a, "--no-telemetry");
		mem |= strncmp(a, "-m", 2) == 0 || arg_is(a, "--socket-mem");
	}

	if (!no_huge && !in_memory) {
		uint64_t free_pages =
			read_u64_file("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages") +
			read_u64_file(
				"/sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages");
		bool mounted = hugetlbfs_mounted();

		if (free_pages == 0 || !mounted) {
			const char *env = getenv("UROCE_EAL_MEM_MB");
			unsigned long mb = env != NULL ? strtoul(env, NULL, 10) : 0;

			if (mb == 0)
				mb = 512;
			ETH_WARN("%s: falling back to --no-huge -m %lu; reserve some with "
				 "echo 1024 > "
				 "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages%s",
				 free_pages == 0 ? "no free hugepages" : "no hugetlbfs mounted", mb,
				 mounted ? "" : " and mount -t hugetlbfs none /dev/hugepages");
			add[nadd++] = "--no-huge";
			if (!mem) {
				snprintf(mem_arg, sizeof(mem_arg), "%lu", mb);
				add[nadd++] = "-m";
				add[nadd++] = mem_arg;
			}
			eal_fell_back = true;
		}
	}
	if (!telemetry)
		add[nadd++] = "--no-telemetry";

	/* argv[0], our flags, then the caller's arguments untouched (EAL stops at "--"). */
	eal_argv = calloc((size_t)argc + (size_t)nadd + 1, sizeof(*eal_argv));
	if (eal_argv == NULL)
		return -ENOMEM;
	eal_argv[0] = argv[0];
	for (int i = 0; i < nadd; i++)
		eal_argv[1 + i] = (char *)(uintptr_t)add[i]; /* EAL does not write to them */
	for (int i = 1; i < argc; i++)
		eal_argv[nadd + i] = argv[i];

	ret = rte_eal_init(argc + nadd, eal_argv);
	if (ret < 0) {
		int err = rte_errno != 0 ? rte_errno : EINVAL;

		free(eal_argv);
		eal_argv = NULL;
		eal_fell_back = false;
		return -err;
	}
	eal_done = true;
	/* EAL consumed our nadd flags and ret - nadd of the caller's; mirror its contract
	 * (the program name where the caller's own arguments now start). */
	ret -= nadd;
	if (ret < 0)
		ret = 0;
	if (ret > 0)
		argv[ret] = argv[0];
	return ret;
}

void uroce_eth_eal_cleanup(void)
{
	if (!eal_done)
		return;
	rte_eal_cleanup();
	free(eal_argv);
	eal_argv = NULL;
	eal_done = false;
}

/* ---- port ------------------------------------------------------------------------------- */

/*
 * DPDK 22.11's net_memif carries a frame longer than its buffer size (devarg bsize,
 * default 2048) over several descriptors, and once the ring has wrapped, the next
 * single-descriptor frame makes the receiver return a whole burst of stale frames (63
 * ghosts measured, one ring wrap old; doc/ethdev.md). A RoCE port mixes 4 KiB data
 * frames and small ACKs all the time: say so loudly when the port is set up that way.
 */
static void memif_check(const struct uroce_eth_port *p, const struct rte_eth_dev_info *info)
{
	const struct rte_devargs *da;
	const char *b;
	unsigned long bsize = 2048;

	if (strcmp(p->driver, "net_memif") != 0 || info->device == NULL)
		return;
	da = rte_dev_devargs(info->device);
	if (da != NULL && da->args != NULL && (b = strstr(da->args, "bsize=")) != NULL)
		bsize = strtoul(b + 6, NULL, 0);
	if (p->max_frame > bsize)
		ETH_WARN("%s: memif buffers of %lu bytes < frames of up to %u: "
			 "this PMD then delivers stale frames after a ring wrap; add bsize=%u "
			 "(or more) to the --vdev of both sides",
			 p->name, bsize, p->max_frame, RTE_ALIGN_CEIL(p->max_frame, 1024));
}

static int port_fail(struct uroce_eth_port *p, int err)
{
	uroce_eth_port_close(p);
	return err < 0 ? err : -err;
}

/* ---- sleeping until frames arrive -------------------------------------------------------- */

/* The @p queue-th socket (in descriptor order) of family @p family that this process
 * holds, af_packet's bound to interface @p ifindex: the PMD opened it, one per queue, and
 * DPDK does not hand it out. An AF_XDP socket does not tell its interface (no getsockname):
 * with one port per process, as uroced has, the queue's is still the queue-th. -1: none. */
static int kernel_socket_of(int family, unsigned int ifindex, uint16_t queue)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int fds[UROCE_ETH_MAX_QUEUES], n = 0, found = -1;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL && n < UROCE_ETH_MAX_QUEUES) {
		int fd = atoi(e->d_name), dom = 0;
		socklen_t len = sizeof(dom);
		struct sockaddr_ll ll;
		socklen_t salen = sizeof(ll);

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == dirfd(d))
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &len) != 0 || dom != family)
			continue;
		memset(&ll, 0, sizeof(ll));
		if (family == AF_PACKET &&
		    (getsockname(fd, (struct sockaddr *)&ll, &salen) != 0 ||
		     (unsigned int)ll.sll_ifindex != ifindex))
			continue;
		fds[n++] = fd;
	}
	closedir(d);
	/* readdir's order is not numeric */
	for (int i = 0; i < n; i++) {
		int rank = 0;

		for (int j = 0; j < n; j++)
			rank += fds[j] < fds[i];
		if (rank == queue)
			found = fds[i];
	}
	return found;
}

static void rx_wake_find(struct uroce_eth_port *p, uint16_t q, bool intr, uint32_t ifindex)
{
	struct uroce_eth_rxq *rxq = &p->rxq[q];
	int fd = -1;

	rxq->wake = UROCE_ETH_RX_WAKE_NONE;
	rxq->wake_fd = -1;
	/* A PMD without Rx interrupts says -ENOTSUP to enable, silently (asking for the
	 * descriptor first would log an ethdev error). */
	if (intr && rte_eth_dev_rx_intr_enable(p->port_id, q) == 0) {
		fd = rte_eth_dev_rx_intr_ctl_q_get_fd(p->port_id, q);
		/* Disabled until a sleep: while we poll, the peer need not signal. */
		if (rte_eth_dev_rx_intr_disable(p->port_id, q) == 0 && fd >= 0) {
			rxq->wake = UROCE_ETH_RX_WAKE_INTR;
			rxq->wake_fd = fd;
			return;
		}
	}
	if (ifindex == 0)
		return;
	if (strcmp(p->driver, "net_af_packet") == 0)
		fd = kernel_socket_of(AF_PACKET, ifindex, q);
	else if (strcmp(p->driver, "net_af_xdp") == 0)
		fd = kernel_socket_of(AF_XDP, ifindex, q);
	else
		fd = -1;
	if (fd >= 0) {
		rxq->wake = UROCE_ETH_RX_WAKE_SOCKET;
		rxq->wake_fd = fd;
	}
}

enum uroce_eth_rx_wake uroce_eth_rx_wake_fd(const struct uroce_eth_port *p, uint16_t queue,
					    int *fd)
{
	if (!p->open || queue >= p->nb_rxq) {
		*fd = -1;
		return UROCE_ETH_RX_WAKE_NONE;
	}
	*fd = p->rxq[queue].wake_fd;
	return p->rxq[queue].wake;
}

int uroce_eth_rx_sleep(struct uroce_eth_port *p, uint16_t queue)
{
	if (p->rxq[queue].wake != UROCE_ETH_RX_WAKE_INTR)
		return 0;
	return rte_eth_dev_rx_intr_enable(p->port_id, queue);
}

void uroce_eth_rx_awake(struct uroce_eth_port *p, uint16_t queue)
{
	struct uroce_eth_rxq *rxq = &p->rxq[queue];
	struct pollfd pfd = {.fd = rxq->wake_fd, .events = POLLIN};
	uint64_t v;

	if (rxq->wake != UROCE_ETH_RX_WAKE_INTR)
		return;
	(void)rte_eth_dev_rx_intr_disable(p->port_id, queue);
	/* The interrupt descriptors are eventfds: one read resets them. Only when readable:
	 * the PMD's descriptor may be blocking. */
	if (poll(&pfd, 1, 0) == 1 && read(rxq->wake_fd, &v, sizeof(v)) < 0)
		ETH_WARN("%s: rx queue %u: reading its interrupt: %s", p->name, queue,
			 strerror(errno));
}

uint16_t uroce_eth_port_count(void)
{
	return rte_eth_dev_count_avail();
}

int uroce_eth_port_open(struct uroce_eth_port *p, const struct uroce_eth_port_cfg *cfg)
{
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;
	struct rte_ether_addr mac;
	uint16_t port_id, rx_ring, tx_ring;
	uint32_t room, mtu, segs, nb_mbufs, overhead, max_mtu;
	int socket, ret;
	char pool_name[RTE_MEMPOOL_NAMESIZE];

	memset(p, 0, sizeof(*p));
	if (cfg == NULL)
		return -EINVAL;
	if (cfg->name != NULL) {
		if (rte_eth_dev_get_port_by_name(cfg->name, &port_id) != 0) {
			ETH_ERR("no DPDK port named %s (was its --vdev given?)", cfg->name);
			return -ENODEV;
		}
	} else {
		port_id = cfg->port_id;
	}
	if (!rte_eth_dev_is_valid_port(port_id))
		return -ENODEV;

	p->port_id = port_id;
	p->nb_rxq = cfg->nb_rxq != 0 ? cfg->nb_rxq : 1;
	p->nb_txq = cfg->nb_txq != 0 ? cfg->nb_txq : 1;
	mtu = cfg->mtu != 0 ? cfg->mtu : UROCE_ETH_DEFAULT_MTU;
	room = cfg->mbuf_room != 0 ? cfg->mbuf_room : UROCE_ETH_DEFAULT_MBUF_ROOM;
	rx_ring = cfg->rx_ring != 0 ? cfg->rx_ring : 1024;
	tx_ring = cfg->tx_ring != 0 ? cfg->tx_ring : 1024;
	p->tx_retries = cfg->tx_retries != 0 ? cfg->tx_retries : 64;
	p->tx_hold = cfg->tx_hold;
	if (p->nb_rxq > UROCE_ETH_MAX_QUEUES || p->nb_txq > UROCE_ETH_MAX_QUEUES ||
	    mtu < 68 || mtu > 65000 || room < 256 || room > UINT16_MAX - RTE_PKTMBUF_HEADROOM)
		return -EINVAL;
	p->mtu = mtu;
	p->max_frame = mtu + UROCE_ETH_FRAME_OVERHEAD;
	p->mbuf_room = (uint16_t)room;

	ret = rte_eth_dev_info_get(port_id, &info);
	if (ret != 0)
		return ret;
	rte_eth_dev_get_name_by_port(port_id, p->name);
	snprintf(p->driver, sizeof(p->driver), "%s",
		 info.driver_name != NULL ? info.driver_name : "?");
	p->if_index = info.if_index;
	/* AF_XDP's umem frames are one 4 KiB page each and its PMD builds the umem from our
	 * mempool: an mbuf (headroom, data room, private area) must fit a page, so the
	 * default room is DPDK's 2 KiB there (so an MTU up to ~3500 on veth). */
	if (cfg->mbuf_room == 0 && strcmp(p->driver, "net_af_xdp") == 0) {
		room = RTE_MBUF_DEFAULT_DATAROOM;
		p->mbuf_room = (uint16_t)room;
	}
	if (p->nb_rxq > info.max_rx_queues || p->nb_txq > info.max_tx_queues) {
		ETH_ERR("%s: %u rx / %u tx queues asked, the PMD has %u / %u", p->name, p->nb_rxq,
			p->nb_txq, info.max_rx_queues, info.max_tx_queues);
		return -EINVAL;
	}

	/* Mempool: every descriptor of every ring full, each rx burst held by the caller,
	 * each tx batch (chained if a frame needs several mbufs) and every lcore's cache
	 * full, plus slack for uroce_eth_tx_alloc and a PMD's internal staging. */
	socket = rte_eth_dev_socket_id(port_id);
	segs = (p->max_frame + room - 1) / room;
	nb_mbufs = cfg->nb_mbufs;
	if (nb_mbufs == 0)
		nb_mbufs = p->nb_rxq * ((uint32_t)rx_ring + UROCE_ETH_BURST_MAX) * segs +
			   /* + 1: a zero-copy frame's tail (pad and ICRC) is an mbuf of its own */
			   p->nb_txq * ((uint32_t)tx_ring + UROCE_ETH_TX_BATCH + 1) * (segs + 1) +
			   128u * (rte_lcore_count() + 1) + 512;
	snprintf(pool_name, sizeof(pool_name), "uroce_eth_%u", port_id);
	p->pool = rte_pktmbuf_pool_create(pool_name, nb_mbufs, 128, 0,
					  (uint16_t)(RTE_PKTMBUF_HEADROOM + room), socket);
	if (p->pool == NULL) {
		ETH_ERR("%s: mempool of %u mbufs of %u bytes: %s", p->name, nb_mbufs, room,
			rte_strerror(rte_errno));
		return -ENOMEM;
	}

	/* Lending: a virtual device copies from the mbuf's virtual address and frees it in
	 * tx_burst or its own flush; a PCI NIC would read the lent memory by DMA, unmapped. */
	if ((info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) && info.device != NULL &&
	    strcmp(rte_bus_name(rte_dev_bus(info.device)), "vdev") == 0) {
		uint32_t n = p->nb_txq * ((uint32_t)tx_ring + UROCE_ETH_TX_BATCH + 1) * 2 + 512;

		snprintf(pool_name, sizeof(pool_name), "uroce_lend_%u", port_id);
		p->lend_pool = rte_pktmbuf_pool_create(pool_name, n, 128, sizeof(struct lend_priv),
						       0, socket);
		if (p->lend_pool == NULL)
			ETH_WARN("%s: no mempool for zero-copy TX (%s): frames are copied",
				 p->name, rte_strerror(rte_errno));
		p->tx_lend = p->lend_pool != NULL;
	}

	p->rxq = rte_zmalloc_socket("uroce_eth_rxq", sizeof(*p->rxq) * p->nb_rxq,
				    RTE_CACHE_LINE_SIZE, socket);
	p->txq = rte_zmalloc_socket("uroce_eth_txq", sizeof(*p->txq) * p->nb_txq,
				    RTE_CACHE_LINE_SIZE, socket);
	if (p->rxq == NULL || p->txq == NULL)
		return port_fail(p, -ENOMEM);
	for (uint16_t q = 0; q < p->nb_rxq; q++)
		p->rxq[q].slot_size = RTE_ALIGN_CEIL(RTE_MAX(p->max_frame, room), 64);

	/* The largest MTU configure accepts, as ethdev computes it: vdevs leave max_mtu at
	 * UINT16_MAX and state only max_rx_pktlen (1518), with the header and CRC on top. */
	overhead = info.max_mtu != UINT16_MAX && info.max_rx_pktlen > info.max_mtu ?
			   info.max_rx_pktlen - info.max_mtu :
			   RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
	max_mtu = RTE_MIN((uint32_t)info.max_mtu, info.max_rx_pktlen - overhead);

	memset(&conf, 0, sizeof(conf));
	/* Ask for what the PMD says it can do; a larger MTU is tried after configure. */
	conf.rxmode.mtu = RTE_MIN(mtu, max_mtu);
	if (p->max_frame > room)
		conf.rxmode.offloads |= info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER;
	conf.txmode.offloads |= info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	if (p->nb_rxq > 1) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf =
			info.flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP);
		if (conf.rx_adv_conf.rss_conf.rss_hf == 0)
			conf.rxmode.mq_mode = RTE_ETH_MQ_RX_NONE;
	}
	/* Rx interrupts, so that the caller may sleep when there is no traffic. A PMD with
	 * none ignores the request or refuses the configuration; then without. */
	conf.intr_conf.rxq = 1;
	ret = rte_eth_dev_configure(port_id, p->nb_rxq, p->nb_txq, &conf);
	if (ret != 0) {
		conf.intr_conf.rxq = 0;
		ret = rte_eth_dev_configure(port_id, p->nb_rxq, p->nb_txq, &conf);
	}
	if (ret != 0) {
		ETH_ERR("%s: configure: %s", p->name, rte_strerror(-ret));
		return port_fail(p, ret);
	}
	p->open = true; /* from here close() must stop and close the device */

	if (mtu > conf.rxmode.mtu) {
		ret = rte_eth_dev_set_mtu(port_id, (uint16_t)mtu);
		if (ret != 0) {
			p->sw_mtu = true;
			ETH_WARN("%s (%s): the PMD refuses MTU %u (%s; it reports max MTU %u): "
				 "using it as a software MTU, large frames travel as mbuf chains",
				 p->name, p->driver, mtu, rte_strerror(-ret), max_mtu);
		}
	}

	memif_check(p, &info);

	ret = rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &rx_ring, &tx_ring);
	if (ret != 0)
		return port_fail(p, ret);
	for (uint16_t q = 0; q < p->nb_rxq; q++) {
		ret = rte_eth_rx_queue_setup(port_id, q, rx_ring, (unsigned int)socket, NULL,
					     p->pool);
		if (ret != 0) {
			ETH_ERR("%s: rx queue %u: %s", p->name, q, rte_strerror(-ret));
			return port_fail(p, ret);
		}
	}
	for (uint16_t q = 0; q < p->nb_txq; q++) {
		ret = rte_eth_tx_queue_setup(port_id, q, tx_ring, (unsigned int)socket, NULL);
		if (ret != 0) {
			ETH_ERR("%s: tx queue %u: %s", p->name, q, rte_strerror(-ret));
			return port_fail(p, ret);
		}
	}
	ret = rte_eth_dev_start(port_id);
	if (ret != 0) {
		ETH_ERR("%s: start: %s", p->name, rte_strerror(-ret));
		return port_fail(p, ret);
	}
	p->started = true;

	/* Not fatal: several vdevs have no filter to switch (-ENOTSUP) yet pass everything. */
	if (!cfg->no_promisc)
		(void)rte_eth_promiscuous_enable(port_id);
	if (!cfg->no_allmulti)
		(void)rte_eth_allmulticast_enable(port_id);

	if (rte_eth_macaddr_get(port_id, &mac) == 0)
		memcpy(p->mac, mac.addr_bytes, sizeof(p->mac));
	for (uint16_t q = 0; q < p->nb_rxq; q++)
		rx_wake_find(p, q, conf.intr_conf.rxq != 0, info.if_index);
	return 0;
}

void uroce_eth_port_close(struct uroce_eth_port *p)
{
	if (p == NULL)
		return;
	if (p->open) {
		for (uint16_t q = 0; q < p->nb_txq; q++) {
			if (p->txq[q].reserved != NULL) {
				rte_pktmbuf_free(p->txq[q].reserved);
				p->txq[q].reserved = NULL;
			}
			(void)uroce_eth_tx_flush(p, q);
			/* What tx_hold still keeps is dropped now: the port goes. */
			if (p->txq[q].nb) {
				p->txq[q].dropped += p->txq[q].nb;
				rte_pktmbuf_free_bulk(p->txq[q].batch, p->txq[q].nb);
				p->txq[q].nb = 0;
			}
		}
		for (uint16_t q = 0; q < p->nb_rxq; q++)
			uroce_eth_rx_done(p, q);
		if (p->started)
			(void)rte_eth_dev_stop(p->port_id);
		(void)rte_eth_dev_close(p->port_id);
		p->open = false;
		p->started = false;
	}
	if (p->rxq != NULL) {
		for (uint16_t q = 0; q < p->nb_rxq; q++)
			rte_free(p->rxq[q].scratch);
		rte_free(p->rxq);
		p->rxq = NULL;
	}
	rte_free(p->txq);
	p->txq = NULL;
	/* After close: the PMD has returned the mbufs of its rings. */
	rte_mempool_free(p->pool);
	p->pool = NULL;
	rte_mempool_free(p->lend_pool);
	p->lend_pool = NULL;
	p->tx_lend = false;
}

bool uroce_eth_link_up(const struct uroce_eth_port *p)
{
	struct rte_eth_link link;

	if (!p->open || rte_eth_link_get_nowait(p->port_id, &link) != 0)
		return false;
	return link.link_status == RTE_ETH_LINK_UP;
}

uint32_t uroce_eth_link_speed(const struct uroce_eth_port *p)
{
	struct rte_eth_link link;

	if (!p->open || rte_eth_link_get_nowait(p->port_id, &link) != 0 ||
	    link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN)
		return 0;
	return link.link_speed;
}

static int mcast_apply(struct uroce_eth_port *p)
{
	struct rte_ether_addr list[UROCE_ETH_MAX_MCAST];

	for (uint16_t i = 0; i < p->nb_mcast; i++)
		memcpy(list[i].addr_bytes, p->mcast[i], 6);
	return rte_eth_dev_set_mc_addr_list(p->port_id, list, p->nb_mcast);
}

int uroce_eth_add_mcast(struct uroce_eth_port *p, const uint8_t mac[6])
{
	if (!p->open || (mac[0] & 1) == 0)
		return -EINVAL;
	for (uint16_t i = 0; i < p->nb_mcast; i++)
		if (memcmp(p->mcast[i], mac, 6) == 0)
			return 0;
	if (p->nb_mcast == UROCE_ETH_MAX_MCAST)
		return -ENOSPC;
	memcpy(p->mcast[p->nb_mcast++], mac, 6);
	return mcast_apply(p);
}

int uroce_eth_del_mcast(struct uroce_eth_port *p, const uint8_t mac[6])
{
	if (!p->open)
		return -EINVAL;
	for (uint16_t i = 0; i < p->nb_mcast; i++) {
		if (memcmp(p->mcast[i], mac, 6) == 0) {
			memmove(p->mcast[i], p->mcast[i + 1],
				(size_t)(p->nb_mcast - i - 1) * sizeof(p->mcast[0]));
			p->nb_mcast--;
			return mcast_apply(p);
		}
	}
	return -ENOENT;
}

/* ---- RX --------------------------------------------------------------------------------- */

void uroce_eth_rx_done(struct uroce_eth_port *p, uint16_t queue)
{
	struct uroce_eth_rxq *rq = &p->rxq[queue];

	if (rq->nb != 0) {
		rte_pktmbuf_free_bulk(rq->burst, rq->nb);
		rq->nb = 0;
	}
}

uint16_t uroce_eth_rx(struct uroce_eth_port *p, uint16_t queue, struct uroce_eth_frame *frames,
		      uint16_t n)
{
	struct uroce_eth_rxq *rq = &p->rxq[queue];
	uint16_t got, out = 0;

	uroce_eth_rx_done(p, queue);
	if (n > UROCE_ETH_BURST_MAX)
		n = UROCE_ETH_BURST_MAX;
	got = rte_eth_rx_burst(p->port_id, queue, rq->burst, n);
	for (uint16_t i = 0; i < got; i++) {
		struct rte_mbuf *m = rq->burst[i];
		struct uroce_eth_frame *f = &frames[out];

		f->mbuf = m;
		f->len = m->pkt_len;
		if (likely(m->nb_segs == 1)) {
			f->data = rte_pktmbuf_mtod(m, const uint8_t *);
			f->linearized = false;
		} else {
			uint8_t *slot;

			if (m->pkt_len > rq->slot_size) {
				rq->oversize++;
				continue;
			}
			if (unlikely(rq->scratch == NULL)) {
				rq->scratch =
					rte_malloc("uroce_eth_scratch",
						   (size_t)rq->slot_size * UROCE_ETH_BURST_MAX,
						   RTE_CACHE_LINE_SIZE);
				if (rq->scratch == NULL) {
					rq->oversize++;
					continue;
				}
			}
			/* Slot i, not out: the slot stays tied to its mbuf's burst position. */
			slot = rq->scratch + (size_t)i * rq->slot_size;
			f->data = rte_pktmbuf_read(m, 0, m->pkt_len, slot);
			f->linearized = true;
			rq->linearized++;
		}
		out++;
	}
	rq->nb = got; /* every mbuf, dropped ones too, is freed at rx_done */
	rq->frames += out;
	return out;
}

/* ---- TX --------------------------------------------------------------------------------- */

uint16_t uroce_eth_tx_flush(struct uroce_eth_port *p, uint16_t queue)
{
	struct uroce_eth_txq *tq = &p->txq[queue];
	uint16_t sent = 0, tries = 0;

	while (sent < tq->nb) {
		uint16_t k = rte_eth_tx_burst(p->port_id, queue, tq->batch + sent,
					      (uint16_t)(tq->nb - sent));

		for (uint16_t i = 0; i < k; i++)
			tq->bytes += tq->batch[sent + i]->pkt_len;
		sent = (uint16_t)(sent + k);
		if (sent < tq->nb) {
			if (tries++ == p->tx_retries)
				break;
			rte_pause();
		}
	}
	tq->frames += sent;
	if (sent < tq->nb && p->tx_hold) {
		/* Kept, in order, at the batch's head: the next flush sends them first. */
		memmove(tq->batch, tq->batch + sent,
			(size_t)(tq->nb - sent) * sizeof(tq->batch[0]));
		tq->nb = (uint16_t)(tq->nb - sent);
		return sent;
	}
	if (sent < tq->nb) {
		tq->dropped += (uint16_t)(tq->nb - sent);
		rte_pktmbuf_free_bulk(tq->batch + sent, (unsigned int)(tq->nb - sent));
	}
	tq->nb = 0;
	return sent;
}

uint16_t uroce_eth_tx_pending(const struct uroce_eth_port *p, uint16_t queue)
{
	return p->txq[queue].nb;
}

/* Room for one more frame on @p queue: a full batch (tx_hold kept what the PMD refused)
 * is flushed once more first. */
static inline bool tx_room(struct uroce_eth_port *p, uint16_t queue)
{
	struct uroce_eth_txq *tq = &p->txq[queue];

	if (tq->nb < UROCE_ETH_TX_BATCH)
		return true;
	(void)uroce_eth_tx_flush(p, queue);
	if (tq->nb < UROCE_ETH_TX_BATCH)
		return true;
	tq->busy++;
	return false;
}

static inline void tx_enqueue(struct uroce_eth_port *p, uint16_t queue, struct rte_mbuf *m)
{
	struct uroce_eth_txq *tq = &p->txq[queue];

	tq->batch[tq->nb++] = m;
	if (tq->nb == UROCE_ETH_TX_BATCH)
		(void)uroce_eth_tx_flush(p, queue);
}

int uroce_eth_tx_frame(struct uroce_eth_port *p, uint16_t queue, const uint8_t *data,
		       uint32_t len)
{
	struct uroce_eth_txq *tq = &p->txq[queue];
	struct rte_mbuf *segs[64];
	uint32_t room = p->mbuf_room, nsegs, off = 0;

	if (unlikely(len == 0 || len > p->max_frame)) {
		tq->oversize++;
		return -EMSGSIZE;
	}
	nsegs = (len + room - 1) / room;
	if (unlikely(nsegs > RTE_DIM(segs))) {
		tq->oversize++;
		return -EMSGSIZE;
	}
	if (unlikely(!tx_room(p, queue)))
		return -EAGAIN;
	if (unlikely(rte_pktmbuf_alloc_bulk(p->pool, segs, nsegs) != 0)) {
		tq->nombuf++;
		return -ENOBUFS;
	}
	for (uint32_t i = 0; i < nsegs; i++) {
		struct rte_mbuf *m = segs[i];
		uint32_t chunk = RTE_MIN(room, len - off);

		rte_memcpy(rte_pktmbuf_mtod(m, void *), data + off, chunk);
		m->data_len = (uint16_t)chunk;
		off += chunk;
		if (i > 0)
			segs[i - 1]->next = m;
	}
	segs[0]->pkt_len = len;
	segs[0]->nb_segs = (uint16_t)nsegs;
	if (nsegs > 1)
		tq->chained++;
	tx_enqueue(p, queue, segs[0]);
	return 0;
}

uint8_t *uroce_eth_tx_alloc(struct uroce_eth_port *p, uint16_t queue, uint32_t len)
{
	struct uroce_eth_txq *tq = &p->txq[queue];
	struct rte_mbuf *m;

	if (tq->reserved != NULL) {
		rte_pktmbuf_free(tq->reserved);
		tq->reserved = NULL;
	}
	if (len == 0 || len > p->mbuf_room || len > p->max_frame) {
		tq->oversize++;
		return NULL;
	}
	if (!tx_room(p, queue))
		return NULL;
	m = rte_pktmbuf_alloc(p->pool);
	if (m == NULL) {
		tq->nombuf++;
		return NULL;
	}
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	tq->reserved = m;
	tq->reserved_tail = m;
	return rte_pktmbuf_mtod(m, uint8_t *);
}

int uroce_eth_tx_commit(struct uroce_eth_port *p, uint16_t queue)
{
	struct uroce_eth_txq *tq = &p->txq[queue];
	struct rte_mbuf *m = tq->reserved;

	if (m == NULL)
		return -EINVAL;
	tq->reserved = NULL;
	if (m->nb_segs > 1)
		tq->chained++;
	tx_enqueue(p, queue, m);
	return 0;
}

/* Whether @p len more bytes may join the reserved frame: 0, -EINVAL (no reservation, or
 * @p len 0 or above @p max), -EMSGSIZE (the frame would exceed max_frame; counted). */
static int reserved_room(struct uroce_eth_port *p, struct uroce_eth_txq *tq, uint32_t len,
			 uint32_t max)
{
	if (tq->reserved == NULL || len == 0 || len > max)
		return -EINVAL;
	if (tq->reserved->pkt_len + len > p->max_frame) {
		tq->oversize++;
		return -EMSGSIZE;
	}
	return 0;
}

/* Chains @p m after the reserved frame's last segment. */
static void reserved_append(struct uroce_eth_txq *tq, struct rte_mbuf *m)
{
	tq->reserved_tail->next = m;
	tq->reserved_tail = m;
	tq->reserved->nb_segs++;
	tq->reserved->pkt_len += m->data_len;
}

static void lend_free(void *addr, void *opaque)
{
	struct lend_priv *lp = opaque;

	(void)addr;
	lp->done(lp->arg);
}

int uroce_eth_tx_lend(struct uroce_eth_port *p, uint16_t queue, const void *addr, uint32_t len,
		      uroce_eth_lend_done_fn done, void *arg)
{
	struct uroce_eth_txq *tq = &p->txq[queue];
	struct lend_priv *lp;
	struct rte_mbuf *m;

	int rc;

	if (!p->tx_lend)
		return -ENOTSUP;
	rc = reserved_room(p, tq, len, UINT16_MAX);
	if (rc)
		return rc;
	m = rte_pktmbuf_alloc(p->lend_pool);
	if (m == NULL) {
		tq->nombuf++;
		return -ENOBUFS;
	}
	lp = rte_mbuf_to_priv(m);
	lp->shinfo.free_cb = lend_free;
	lp->shinfo.fcb_opaque = lp;
	rte_mbuf_ext_refcnt_set(&lp->shinfo, 1);
	lp->done = done;
	lp->arg = arg;
	/* Only virtual devices lend (see tx_lend): they read the virtual address, so the IOVA
	 * is that address in IOVA-as-VA mode and unused otherwise. */
	rte_pktmbuf_attach_extbuf(m, (void *)(uintptr_t)addr,
				  rte_eal_iova_mode() == RTE_IOVA_VA ? (rte_iova_t)(uintptr_t)addr
								     : RTE_BAD_IOVA,
				  (uint16_t)len, &lp->shinfo);
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	reserved_append(tq, m);
	tq->lent++;
	return 0;
}

int uroce_eth_tx_append(struct uroce_eth_port *p, uint16_t queue, const void *data,
			uint32_t len)
{
	struct uroce_eth_txq *tq = &p->txq[queue];
	struct rte_mbuf *m;
	int rc = reserved_room(p, tq, len, p->mbuf_room);

	if (rc)
		return rc;
	m = rte_pktmbuf_alloc(p->pool);
	if (m == NULL) {
		tq->nombuf++;
		return -ENOBUFS;
	}
	rte_memcpy(rte_pktmbuf_mtod(m, void *), data, len);
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	reserved_append(tq, m);
	return 0;
}

/* ---- stats ------------------------------------------------------------------------------ */

/*
 * The frames the kernel dropped because the queue's af_packet ring was full (the daemon did
 * not take them in time): DPDK 22.11's af_packet PMD does not count them (imissed stays 0),
 * so a loss there was invisible. The PMD uses TPACKET_V2, whose statistics are the first two
 * fields of tpacket_stats_v3 too.
 */
static void socket_drops_collect(const struct uroce_eth_port *p, struct uroce_eth_rxq *rxq)
{
	struct tpacket_stats_v3 st;
	socklen_t len = sizeof(st);

	if (rxq->wake != UROCE_ETH_RX_WAKE_SOCKET || strcmp(p->driver, "net_af_packet") != 0)
		return;
	memset(&st, 0, sizeof(st));
	if (getsockopt(rxq->wake_fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0)
		rxq->socket_drops += st.tp_drops;
}

int uroce_eth_stats_get(const struct uroce_eth_port *p, struct uroce_eth_stats *s)
{
	struct rte_eth_stats es;
	int ret;

	memset(s, 0, sizeof(*s));
	if (!p->open)
		return -EINVAL;
	ret = rte_eth_stats_get(p->port_id, &es);
	if (ret == 0) {
		s->ipackets = es.ipackets;
		s->opackets = es.opackets;
		s->ibytes = es.ibytes;
		s->obytes = es.obytes;
		s->imissed = es.imissed;
		s->ierrors = es.ierrors;
		s->oerrors = es.oerrors;
		s->rx_nombuf = es.rx_nombuf;
	}
	for (uint16_t q = 0; q < p->nb_rxq; q++) {
		s->rx_frames += p->rxq[q].frames;
		s->rx_linearized += p->rxq[q].linearized;
		s->rx_oversize += p->rxq[q].oversize;
		socket_drops_collect(p, &p->rxq[q]);
		s->rx_socket_drops += p->rxq[q].socket_drops;
	}
	for (uint16_t q = 0; q < p->nb_txq; q++) {
		s->tx_frames += p->txq[q].frames;
		s->tx_bytes += p->txq[q].bytes;
		s->tx_chained += p->txq[q].chained;
		s->tx_lent += p->txq[q].lent;
		s->tx_dropped += p->txq[q].dropped;
		s->tx_nombuf += p->txq[q].nombuf;
		s->tx_oversize += p->txq[q].oversize;
		s->tx_busy += p->txq[q].busy;
	}
	return ret;
}

void uroce_eth_stats_print(const struct uroce_eth_port *p, const char *prefix)
{
	struct uroce_eth_stats s;
	const struct {
		const char *name;
		const uint64_t *v;
	} rows[] = {
		{"ipackets", &s.ipackets},	   {"opackets", &s.opackets},
		{"ibytes", &s.ibytes},		   {"obytes", &s.obytes},
		{"imissed", &s.imissed},	   {"ierrors", &s.ierrors},
		{"oerrors", &s.oerrors},	   {"rx_nombuf", &s.rx_nombuf},
		{"rx_frames", &s.rx_frames},	   {"rx_linearized", &s.rx_linearized},
		{"rx_oversize", &s.rx_oversize},   {"tx_frames", &s.tx_frames},
		{"tx_bytes", &s.tx_bytes},	   {"tx_chained", &s.tx_chained},
		{"tx_dropped", &s.tx_dropped},	   {"tx_nombuf", &s.tx_nombuf},
		{"tx_oversize", &s.tx_oversize},   {"tx_lent", &s.tx_lent},
		{"tx_busy", &s.tx_busy},
		{"rx_socket_drops", &s.rx_socket_drops},
	};

	(void)uroce_eth_stats_get(p, &s);
	for (size_t i = 0; i < RTE_DIM(rows); i++)
		if (*rows[i].v != 0)
			printf("%s%s %" PRIu64 "\n", prefix, rows[i].name, *rows[i].v);
}
