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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>

#include "uroced.h"

/*
 * The daemon's one instance: every function is handed it, as lib/rnic's are their struct
 * uroce_rnic. It is at file scope rather than in main() only for the two callers that
 * get no argument to find it by: on_signal, and DPDK 22.11's telemetry callbacks
 * (rte_telemetry_register_cmd passes none). Nothing else names it; no other file of the
 * daemon has writable data (test/daemon/meson.build, uroced_no_mutable_state).
 */
static struct uroced instance = {
	.listen_fd = -1,
	.epfd = -1,
	.devnode_fd = -1,
	.notify_fd = -1,
	.kernel.tap_fd = -1,
	.tel = {.lock = PTHREAD_MUTEX_INITIALIZER, .prom_fd = -1},
};

/* Async-signal-safe: it only writes stop, a volatile sig_atomic_t, the one kind of object
 * a handler may write (C11 7.14.1.1); the poll loop reads it once a turn. */
static void on_signal(int sig)
{
	(void)sig;
	instance.stop = 1;
}

/* On DPDK's telemetry thread (telemetry.c says what they may read there). */
static int telemetry_stats(const char *cmd, const char *params, struct rte_tel_data *out)
{
	(void)cmd;
	(void)params;
	return uroced_telemetry_stats(&instance, out);
}

static int telemetry_info(const char *cmd, const char *params, struct rte_tel_data *out)
{
	(void)cmd;
	(void)params;
	return uroced_telemetry_info(&instance, out);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: uroced [EAL arguments] -- [-c FILE] [--set section.key=value]...\n"
		   "              [--print-config]\n"
		   "  -c, --config FILE   configuration file (see config/uroced.conf)\n"
		   "  -s, --set K=V       override one key, e.g. --set host.ipv4=10.0.0.1\n"
		   "  --print-config      print the configuration in effect and exit\n"
		   "EAL example: --no-pci --vdev=net_af_packet0,iface=eth1 --file-prefix=uroce0\n");
}

/* DPDK's EAL answers --help itself, wherever it stands, and exits: it prints this first. */
static void usage_hook(const char *prgname)
{
	(void)prgname;
	usage(stdout);
}

/* What to do after a configuration error, on its line. */
#define CONF_HINT " (every key with its range and default: uroced -- --print-config)"

static int parse_args(struct uroced *d, int argc, char **argv)
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

	uroce_conf_defaults(&d->conf);
	/* The file first, then every --set over it, whatever their order on the line. */
	optind = 1;
	while ((o = getopt_long(argc, argv, "c:s:h", opts, NULL)) != -1) {
		if (o == 'c') {
			rc = uroce_conf_load(&d->conf, optarg, err, sizeof(err));
			if (rc) {
				/* -EINVAL: its content; else it could not be read */
				fprintf(stderr, "uroced: %s%s\n", err,
					rc == -EINVAL ? CONF_HINT : "");
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
			rc = uroce_conf_set(&d->conf, optarg, err, sizeof(err));
			if (rc) {
				/* err names the --set */
				fprintf(stderr, "uroced: %s%s\n", err, CONF_HINT);
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
		uroce_conf_print(&d->conf, stdout);
		exit(0);
	}
	uroced_log_set_level(&d->log, (int)d->conf.log.level);
	return 0;
}

static int rnic_setup(struct uroced *d)
{
	struct uroce_rnic_cfg cfg = {
		.conf = &d->conf,
		.eth_mtu = d->port.mtu,
		.ip = d->ip,
		.ops = &uroced_rnic_ops,
		.io_ctx = d,
		.seed = d->conf.transport.seed,
	};

	memcpy(cfg.mac, d->mac, 6);
	d->rnic = uroce_rnic_create(&cfg);
	if (!d->rnic) {
		int err = -errno;

		UROCED_ERR(d, "cannot create the RNIC: %s", strerror(-err));
		return err;
	}
	uroce_rnic_trace(d->rnic, d->conf.log.level == UROCE_CONF_LOG_DEBUG);
	return 0;
}

static int setup(struct uroced *d)
{
	struct uroce_eth_port_cfg pc = {0};
	static const uint8_t zero[6];
	int rc;

	pc.name = d->conf.port.name[0] ? d->conf.port.name : NULL;
	pc.port_id = 0;
	pc.mtu = d->conf.port.mtu;
	pc.nb_rxq = 1; /* one lcore polls queue 0: no RSS to spread over more */
	pc.nb_txq = 1;
	pc.rx_ring = (uint16_t)d->conf.port.rx_ring;
	pc.tx_ring = (uint16_t)d->conf.port.tx_ring;
	/* A full TX ring pushes the transport back (-EAGAIN) instead of losing the frames:
	 * dropped, they cost go-back-N retransmissions of everything after them, and with
	 * many QPs sending at once (perftest's ib_write_bw -q 32 over memif) every retry
	 * overflowed the ring again until the QPs ran out of retries. */
	pc.tx_hold = true;
	rc = uroce_eth_port_open(&d->port, &pc);
	if (rc == -ENODEV && !uroce_eth_port_count()) {
		UROCED_ERR(d,
			   "no port: name one in the EAL arguments, "
			   "--vdev=net_af_packet0,iface=IFACE for any interface or -a PCI_ADDRESS "
			   "for a NIC bound to vfio-pci (one named that failed to start says why "
			   "above)%s",
			   geteuid() ? "; af_packet and af_xdp need root or CAP_NET_RAW" : "");
		return rc;
	}
	if (rc) {
		UROCED_ERR(d, "cannot open port %s: %s", pc.name ? pc.name : "0", strerror(-rc));
		return rc;
	}
	d->port_open = true;
	{
		int fd;
		enum uroce_eth_rx_wake w = uroce_eth_rx_wake_fd(&d->port, 0, &fd);

		UROCED_INFO(d, "port %s (%s): %s", d->port.name, d->port.driver,
			    w == UROCE_ETH_RX_WAKE_INTR	  ? "sleeps on its rx interrupt" :
			    w == UROCE_ETH_RX_WAKE_SOCKET ? "sleeps on its kernel socket" :
							    "cannot wake a sleep: naps");
	}
	d->link_up = uroce_eth_link_up(&d->port);
	if (!d->link_up)
		UROCED_INFO(d, "link down");
	memcpy(d->mac, memcmp(d->conf.host.mac, zero, 6) ? d->conf.host.mac : d->port.mac, 6);
	rc = uroced_net_init(d);
	if (rc)
		return rc;
	rc = uroced_kernel_open(d);
	if (rc)
		return rc;
	rc = rnic_setup(d);
	if (rc)
		return rc;
	rc = uroced_control_init(d);
	if (rc == 0)
		rc = uroced_control_watch(d, uroce_rnic_wake_fd(d->rnic), UROCED_WOKE_DOORBELL);
	if (rc == 0 && uroced_net_wake_fd(d) >= 0)
		rc = uroced_control_watch(d, uroced_net_wake_fd(d), UROCED_WOKE_FRAME);
	if (rc == 0 && uroced_kernel_fd(d) >= 0)
		rc = uroced_control_watch(d, uroced_kernel_fd(d), UROCED_WOKE_KERNEL);
	if (rc == 0)
		rc = uroced_telemetry_init(d, telemetry_stats, telemetry_info);
	return rc;
}

static inline uint64_t now_ns(const struct uroced *d)
{
	uint64_t t = rte_rdtsc() - d->start_tsc;

	/* A multiply and a shift: the 128-bit division this replaced (__udivti3) was 2 % of
	 * a busy daemon's CPU in a profile, run once per poll turn. */
	return (uint64_t)(((unsigned __int128)t * d->ns_per_tsc_q32) >> 32);
}

/* The first nap of a port that cannot wake us, doubled on each nap that found nothing,
 * up to lcore.idle_nap_us. */
#define UROCED_FIRST_NAP_NS 20000u

/*
 * Sleeps until something can give the loop work, at most @p max_ns: an application's post,
 * a frame, a control request or connection (all in uroced_control_poll's epoll set).
 * @p nap_ns: the longest sleep when the port cannot wake us.
 * @return false: work came in while getting ready (nothing slept); true: slept.
 */
static bool sleep_until_work(struct uroced *d, uint64_t max_ns, uint64_t nap_ns)
{
	unsigned int woke;
	int port;

	port = uroced_net_sleep(d);
	if (port == UROCED_NET_SLEEP_FRAMES)
		return false;
	if (port == UROCED_NET_SLEEP_NAP && max_ns > nap_ns)
		max_ns = nap_ns;
	if (!uroce_rnic_sleep_begin(d->rnic)) {
		uroced_net_awake(d);
		return false;
	}
	d->cnt.sleeps++;
	woke = uroced_control_poll(d, max_ns);
	uroce_rnic_sleep_end(d->rnic);
	uroced_net_awake(d);
	if (woke & UROCED_WOKE_KERNEL)
		uroced_net_kernel_rx(d);
	{
		uint64_t now = now_ns(d);

		uroced_telemetry_serve(d, now, woke & UROCED_WOKE_TELEMETRY);
		uroced_telemetry_publish(d, now);
	}
	if (woke & UROCED_WOKE_DOORBELL)
		d->cnt.woke_doorbell++;
	if (woke & UROCED_WOKE_FRAME)
		d->cnt.woke_frame++;
	if (woke & UROCED_WOKE_CONTROL)
		d->cnt.woke_control++;
	if (!woke)
		d->cnt.woke_timer++;
	return true;
}

static void poll_loop(struct uroced *d)
{
	const uint64_t ctrl_every = (uint64_t)d->conf.lcore.control_poll_us * 1000u;
	const uint64_t sleep_max = (uint64_t)d->conf.lcore.idle_sleep_us * 1000u;
	const uint64_t nap_max = (uint64_t)d->conf.lcore.idle_nap_us * 1000u;
	const uint64_t idle_after = (uint64_t)d->conf.lcore.idle_after_us * 1000u;
	const uint64_t idle_yield = (uint64_t)d->conf.lcore.idle_yield_us * 1000u;
	uint64_t next_ctrl = 0, next_link = 0, idle_since = 0, nap = UROCED_FIRST_NAP_NS;

	while (!d->stop) {
		unsigned int work = 0;

		d->now_ns = now_ns(d);
		/* net_memif still polling when its peer left under traffic segfaulted in
		 * ~23% of testpmd runs: poll the port only while the link is up (checked
		 * every 10 ms). */
		if (d->now_ns >= next_link) {
			uroced_net_link_check(d);
			next_link = d->now_ns + 10000000u;
		}
		/* Doorbells first: receives posted before a message arrived are in place when
		 * it is handled (the transport also asks for them on demand: rq_refill). */
		work += uroce_rnic_doorbells(d->rnic);
		work += uroced_net_rx(d);
		/* Timers run whatever the link does: a resolution must still fail, a held
		 * frame still leave, a QP still retry and give up while the link is down. */
		uroced_net_timers(d);
		work += uroce_rnic_process(d->rnic);
		/* Frames the port still holds (its ring full) are work: no sleep over them. */
		work += uroced_net_tx_flush(d);

		if (work) {
			idle_since = d->now_ns;
			nap = UROCED_FIRST_NAP_NS;
		} else if (sleep_max && d->now_ns - idle_since > idle_after) {
			/* Quiet for idle_after_us: sleep until work comes or a timer (the
			 * transport's, the CM's, the host stack's, the link check) is due. */
			uint64_t until = uroce_rnic_next_deadline(d->rnic);

			if (uroced_net_next_deadline(d) < until)
				until = uroced_net_next_deadline(d);
			if (uroced_telemetry_next_deadline(d) < until)
				until = uroced_telemetry_next_deadline(d);
			if (next_link < until)
				until = next_link;
			if (until > d->now_ns) {
				uint64_t max = until - d->now_ns;

				if (sleep_until_work(d, max < sleep_max ? max : sleep_max,
						     nap < nap_max ? nap : nap_max)) {
					if (nap < nap_max)
						nap *= 2;
					next_ctrl = now_ns(d) + ctrl_every;
					continue;
				}
			}
		} else if (idle_yield && d->now_ns - idle_since > idle_yield) {
			/* Nothing to do for a moment: let an application that shares this CPU
			 * run now rather than at the end of our time slice (it is what posts the
			 * next message). With the CPU to ourselves this returns at once. */
			sched_yield();
		}
		/* The control sockets and the kernel interface: neither is on the data
		 * path, so they are looked at every control_poll_us, not every turn. */
		if (d->now_ns >= next_ctrl) {
			unsigned int woke = uroced_control_poll(d, 0);

			if (woke & UROCED_WOKE_KERNEL)
				uroced_net_kernel_rx(d);
			/* also when not woken: a silent scraper's deadline */
			uroced_telemetry_serve(d, d->now_ns, woke & UROCED_WOKE_TELEMETRY);
			uroced_telemetry_publish(d, d->now_ns);
			next_ctrl = d->now_ns + ctrl_every;
		}
	}
}

/*
 * Starts DPDK's EAL with the arguments before "--" (argv[1, dash)), and with its
 * telemetry socket as telemetry.dpdk says unless those arguments say otherwise. @return 0
 * or -1 (said on stderr). The argument vector is kept: the EAL may point into it.
 */
static int eal_start(const struct uroced *d, int dash, char **argv)
{
	static char tel_on[] = "--telemetry", tel_off[] = "--no-telemetry";
	/* Static: the vector lives as long as the process (a leak checker sees it held). */
	static char **eal;
	eal = calloc((size_t)dash + 2, sizeof(*eal));
	bool told = false;
	int n = 0;

	if (!eal) {
		fprintf(stderr, "uroced: out of memory\n");
		return -1;
	}
	eal[n++] = argv[0];
	for (int i = 1; i < dash; i++)
		told |= !strcmp(argv[i], tel_on) || !strcmp(argv[i], tel_off);
	if (!told)
		eal[n++] = d->conf.telemetry.dpdk ? tel_on : tel_off;
	for (int i = 1; i < dash; i++)
		eal[n++] = argv[i];
	rte_set_application_usage_hook(usage_hook);
	if (uroce_eth_eal_init(n, eal) < 0) {
		fprintf(stderr,
			"uroced: DPDK's EAL did not start: the EAL lines above say why; a second "
			"uroced on this host needs its own --file-prefix\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct uroced *d = &instance;
	char *own_none[] = {argv[0], NULL};
	int dash, rc = 1;

	uroced_log_open(&d->log);
	/* Ours first (after "--", which stands in for the program name): the configuration
	 * decides how the EAL starts, and a bad one is said before DPDK's lines. */
	for (dash = 1; dash < argc && strcmp(argv[dash], "--"); dash++)
		;
	if ((dash < argc ? parse_args(d, argc - dash, argv + dash) : parse_args(d, 1, own_none)) !=
	    0)
		return 1;
	if (uroced_user_resolve(d) != 0)
		return 1;
	if (eal_start(d, dash, argv) != 0)
		return 1;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	d->ns_per_tsc_q32 = (uint64_t)(((unsigned __int128)1000000000u << 32) / rte_get_tsc_hz());
	d->start_tsc = rte_rdtsc();
	if (setup(d) != 0)
		goto out;
	uroced_notify_open(d); /* a failure is said; the daemon serves all the same */
	if (uroced_privileges_drop(d) != 0)
		goto out;
	{
		char ip[64] = "", state[256];

		if (d->conf.host.n_ipv4)
			inet_ntop(AF_INET, &d->conf.host.ipv4[0], ip, sizeof(ip));
		printf("uroced: ready: port %s (%s) mac %02x:%02x:%02x:%02x:%02x:%02x mtu %u "
		       "active_mtu %d ipv4 %s socket %s\n",
		       d->port.name, d->port.driver, d->mac[0], d->mac[1], d->mac[2], d->mac[3],
		       d->mac[4], d->mac[5], d->port.mtu, 128 << uroce_rnic_active_mtu(d->rnic), ip,
		       d->socket_path);
		fflush(stdout);
		/* After the control socket listens, as for the line above: a unit ordered
		 * after uroced@.service may connect at once. */
		/* The precisions only tell the compiler the strings end in their arrays. */
		snprintf(state, sizeof(state), "READY=1\nMAINPID=%d\nSTATUS=port %.*s, socket %.*s",
			 (int)getpid(), (int)sizeof(d->port.name), d->port.name,
			 (int)sizeof(d->socket_path), d->socket_path);
		uroced_notify(d, state);
	}
	poll_loop(d);
	UROCED_INFO(d, "stopping");
	uroced_notify(d, "STOPPING=1");
	rc = 0;
out:
	uroced_telemetry_fini(d);
	uroced_control_fini(d);
	uroce_rnic_destroy(d->rnic);
	uroced_kernel_close(d);
	uroced_net_fini(d);
	if (d->port.open)
		uroce_eth_port_close(&d->port);
	uroce_eth_eal_cleanup();
	return rc;
}
