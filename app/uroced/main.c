/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uroced [EAL arguments] -- [-c FILE] [--set section.key=value]... [--print-config]
 *
 * Starts the EAL, opens the port, builds the RoCEv2 device on it and serves applications
 * on the control socket until SIGINT or SIGTERM. See doc/daemon.md and config/uroced.conf.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "uroced.h"

struct ud_daemon ud = {.listen_fd = -1, .epfd = -1};
int ud_log_level = UROCE_CONF_LOG_INFO;

void ud_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > ud_log_level)
		return;
	fprintf(stderr, "uroced: %s: ", uroce_conf_log_level_name(level));
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void on_signal(int sig)
{
	(void)sig;
	ud.stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: uroced [EAL arguments] -- [-c FILE] [--set section.key=value]...\n"
		"              [--print-config]\n"
		"  -c, --config FILE   configuration file (see config/uroced.conf)\n"
		"  -s, --set K=V       override one key, e.g. --set host.ipv4=10.0.0.1\n"
		"  --print-config      print the configuration in effect and exit\n"
		"EAL example: --no-pci --vdev=net_af_packet0,iface=eth1 --file-prefix=uroce0\n");
}

static int parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"set", required_argument, NULL, 's'},
		{"print-config", no_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	char err[512];
	bool print = false;
	int o, rc;

	uroce_conf_defaults(&ud.conf);
	/* The file first, then every --set over it, whatever their order on the line. */
	optind = 1;
	while ((o = getopt_long(argc, argv, "c:s:h", opts, NULL)) != -1) {
		if (o == 'c') {
			rc = uroce_conf_load(&ud.conf, optarg, err, sizeof(err));
			if (rc) {
				fprintf(stderr, "uroced: %s\n", err);
				return -1;
			}
		} else if (o == 'h') {
			usage(stdout);
			exit(0);
		} else if (o != 's' && o != 'p') {
			usage(stderr);
			return -1;
		}
	}
	optind = 1;
	while ((o = getopt_long(argc, argv, "c:s:h", opts, NULL)) != -1) {
		if (o == 's') {
			rc = uroce_conf_set(&ud.conf, optarg, err, sizeof(err));
			if (rc) {
				fprintf(stderr, "uroced: --set %s: %s\n", optarg, err);
				return -1;
			}
		} else if (o == 'p') {
			print = true;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "uroced: unexpected argument %s\n", argv[optind]);
		return -1;
	}
	if (print) {
		uroce_conf_print(&ud.conf, stdout);
		exit(0);
	}
	ud_log_level = (int)ud.conf.log.level;
	return 0;
}

/* rxe's rule (eth_mtu_int_to_enum): the largest IB MTU that fits the Ethernet MTU after
 * the IP, UDP, BTH and largest extension headers and the ICRC. */
static enum ibv_mtu active_mtu(uint32_t eth_mtu)
{
	uint32_t room = eth_mtu > 96 ? eth_mtu - 96 : 0;

	return room >= 4096 ? IBV_MTU_4096 : room >= 2048 ? IBV_MTU_2048 :
	       room >= 1024 ? IBV_MTU_1024 : room >= 512 ? IBV_MTU_512 : IBV_MTU_256;
}

static void build_gids(void)
{
	unsigned int i;

	/* rxe's order: the link-local GID from the MAC first, then the IPv4-mapped GIDs,
	 * then the other IPv6 addresses. */
	ud.ngids = 0;
	uroce_ip_link_local(ud.mac, ud.gids[ud.ngids++].raw);
	for (i = 0; i < ud.conf.host.n_ipv4 && ud.ngids < UROCE_TP_MAX_GID; i++)
		uroce_gid_from_ipv4(ud.gids[ud.ngids++].raw, &ud.conf.host.ipv4[i]);
	for (i = 0; i < ud.conf.host.n_ipv6 && ud.ngids < UROCE_TP_MAX_GID; i++)
		memcpy(ud.gids[ud.ngids++].raw, &ud.conf.host.ipv6[i], 16);
}

static int setup(void)
{
	struct uroce_eth_port_cfg pc = {0};
	struct uroce_tp_dev_cfg tc;
	static const uint8_t zero[6];
	int rc;

	pc.name = ud.conf.port.name[0] ? ud.conf.port.name : NULL;
	pc.port_id = 0;
	pc.mtu = ud.conf.port.mtu;
	pc.nb_rxq = 1; /* one lcore polls queue 0: no RSS to spread over more */
	pc.nb_txq = 1;
	pc.rx_ring = (uint16_t)ud.conf.port.rx_ring;
	pc.tx_ring = (uint16_t)ud.conf.port.tx_ring;
	rc = uroce_eth_port_open(&ud.port, &pc);
	if (rc) {
		UD_ERR("cannot open port %s: %s", pc.name ? pc.name : "0", strerror(-rc));
		return rc;
	}
	ud.port_open = true;
	ud.link_up = uroce_eth_link_up(&ud.port);
	if (!ud.link_up)
		UD_INFO("link down");
	memcpy(ud.mac, memcmp(ud.conf.host.mac, zero, 6) ? ud.conf.host.mac : ud.port.mac, 6);
	ud.active_mtu = active_mtu(ud.port.mtu);
	build_gids();

	uroce_tp_dev_cfg_init(&tc);
	memcpy(tc.mac, ud.mac, 6);
	memcpy(tc.gid, ud.gids, sizeof(tc.gid));
	tc.gid_count = ud.ngids;
	tc.tx = ud_net_tx;
	tc.event = ud_tp_event;
	tc.cq_ready = ud_cq_ready;
	tc.rq_refill = ud_rq_refill;
	tc.gsi_rx = ud_cm_gsi_rx;
	tc.seed = ud.conf.transport.seed ? ud.conf.transport.seed
					 : ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid();
	tc.ack_coalesce = ud.conf.transport.ack_coalesce;
	tc.max_unacked_psns = ud.conf.transport.max_unacked_psns;
	tc.max_pkts_per_ack = ud.conf.transport.max_pkts_per_ack;
	tc.port_mtu = ud.active_mtu;
	tc.vlan_id = (uint16_t)ud.conf.port.vlan;
	ud.dev = uroce_tp_dev_create(&tc);
	if (!ud.dev) {
		UD_ERR("cannot create the device: %s", strerror(errno));
		return -errno;
	}
	rc = ud_cm_init(tc.seed * 0x9e3779b97f4a7c15ull + 1);
	if (rc)
		return rc;
	rc = ud_net_init();
	if (rc)
		return rc;
	return ud_control_init();
}

static inline uint64_t now_ns(void)
{
	uint64_t t = rte_rdtsc() - ud.start_tsc;

	return (uint64_t)((unsigned __int128)t * 1000000000u / ud.tsc_hz);
}

static void poll_loop(void)
{
	const uint64_t ctrl_every = (uint64_t)ud.conf.lcore.control_poll_us * 1000u;
	const uint64_t idle_sleep = (uint64_t)ud.conf.lcore.idle_sleep_us * 1000u;
	const uint64_t idle_after = (uint64_t)ud.conf.lcore.idle_after_us * 1000u;
	const uint64_t idle_yield = (uint64_t)ud.conf.lcore.idle_yield_us * 1000u;
	uint64_t next_ctrl = 0, next_link = 0, idle_since = 0;

	while (!ud.stop) {
		unsigned int work = 0;
		uint64_t deadline;

		ud.now_ns = now_ns();
		/* net_memif still polling when its peer left under traffic segfaulted in
		 * ~23% of testpmd runs: poll the port only while the link is up (checked
		 * every 10 ms). */
		if (ud.now_ns >= next_link) {
			ud_net_link_check();
			next_link = ud.now_ns + 10000000u;
		}
		/* Doorbells first: receives posted before a message arrived are in place when
		 * it is handled (the transport also asks for them on demand: rq_refill). */
		work += ud_doorbells();
		work += ud_net_rx();
		/* Timers run whatever the link does: a resolution must still fail, a held
		 * frame still leave, a QP still retry and give up while the link is down. */
		ud_net_timers();
		if (uroce_tp_next_deadline(ud.dev) <= ud.now_ns)
			uroce_tp_process(ud.dev, ud.now_ns);
		ud_cm_process();
		work += ud_completions();
		ud_net_tx_flush();

		if (work) {
			idle_since = ud.now_ns;
		} else if (idle_sleep && ud.now_ns - idle_since > idle_after) {
			/* Idle a while: sleep in the control socket's wait, so a command or a
			 * timer ends the nap, at most idle_sleep_us. */
			deadline = uroce_tp_next_deadline(ud.dev);
			if (uroce_cm_next_deadline(ud.cm) < deadline)
				deadline = uroce_cm_next_deadline(ud.cm);
			if (ud_net_next_deadline() < deadline)
				deadline = ud_net_next_deadline();
			if (deadline > ud.now_ns) {
				uint64_t nap = deadline - ud.now_ns;

				ud_control_poll(nap < idle_sleep ? nap : idle_sleep);
				next_ctrl = now_ns() + ctrl_every;
				continue;
			}
		} else if (idle_yield && ud.now_ns - idle_since > idle_yield) {
			/* Nothing to do for a moment: let an application that shares this CPU
			 * run now rather than at the end of our time slice (it is what posts the
			 * next message). With the CPU to ourselves this returns at once. */
			sched_yield();
		}
		if (ud.now_ns >= next_ctrl) {
			ud_control_poll(0);
			next_ctrl = ud.now_ns + ctrl_every;
		}
	}
}

int main(int argc, char **argv)
{
	int n, rc = 1;

	n = uroce_eth_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "uroced: EAL initialisation failed\n");
		return 1;
	}
	argc -= n;
	argv += n;
	if (parse_args(argc, argv) != 0)
		goto out;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	ud.tsc_hz = rte_get_tsc_hz();
	ud.start_tsc = rte_rdtsc();
	if (setup() != 0)
		goto out;
	{
		char ip[64] = "";

		if (ud.conf.host.n_ipv4)
			inet_ntop(AF_INET, &ud.conf.host.ipv4[0], ip, sizeof(ip));
		printf("uroced: ready: port %s (%s) mac %02x:%02x:%02x:%02x:%02x:%02x mtu %u "
		       "active_mtu %d ipv4 %s socket %s\n",
		       ud.port.name, ud.port.driver, ud.mac[0], ud.mac[1], ud.mac[2], ud.mac[3],
		       ud.mac[4], ud.mac[5], ud.port.mtu, 128 << ud.active_mtu, ip,
		       ud.conf.control.socket);
		fflush(stdout);
	}
	poll_loop();
	UD_INFO("stopping");
	rc = 0;
out:
	ud_control_fini();
	ud_net_fini();
	ud_cm_fini();
	if (ud.dev)
		uroce_tp_dev_destroy(ud.dev);
	if (ud.port.open)
		uroce_eth_port_close(&ud.port);
	uroce_eth_eal_cleanup();
	return rc;
}
