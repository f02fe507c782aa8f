/* SPDX-License-Identifier: BSD-3-Clause */
/* uroced.conf: every key, once. The daemon owns the meaning; the doc strings say it in one
 * line each and reach the shipped file and doc/config.md from here. */
#include <stddef.h>
#include <string.h>

#include "uroce_conf.h"

#define OFF(f) offsetof(struct uroce_conf, f)
#define SZ(f) sizeof(((struct uroce_conf *)0)->f)

#define STR(sec, nm, def_, doc_)                                                         \
	{.section = #sec, .name = #nm, .type = UROCE_CONF_STRING, .off = OFF(sec.nm),      \
	 .size = SZ(sec.nm), .def = def_, .doc = doc_}
#define UINT(sec, nm, lo, hi, def_, doc_)                                                \
	{.section = #sec, .name = #nm, .type = UROCE_CONF_UINT, .off = OFF(sec.nm),        \
	 .size = SZ(sec.nm), .min = lo, .max = hi, .def = def_, .doc = doc_}
#define OCTAL(sec, nm, lo, hi, def_, doc_)                                               \
	{.section = #sec, .name = #nm, .type = UROCE_CONF_OCTAL, .off = OFF(sec.nm),       \
	 .size = SZ(sec.nm), .min = lo, .max = hi, .def = def_, .doc = doc_}
#define RATE(sec, nm, doc_)                                                              \
	{.section = #sec, .name = #nm, .type = UROCE_CONF_DOUBLE, .off = OFF(sec.nm),      \
	 .size = SZ(sec.nm), .dmin = 0.0, .dmax = 1.0, .def = "0", .doc = doc_}
#define ADDRS(sec, nm, type_, doc_)                                                      \
	{.section = #sec, .name = #nm, .type = type_, .off = OFF(sec.nm),                  \
	 .size = SZ(sec.nm), .count_off = OFF(sec.n_##nm), .max = UROCE_CONF_MAX_ADDRS,    \
	 .def = "", .doc = doc_}

/* By enum uroce_conf_log_level; NULL-terminated, as UROCE_CONF_CHOICE wants it. */
static const char *const log_levels[UROCE_CONF_LOG__COUNT + 1] = {
	[UROCE_CONF_LOG_ERROR] = "error",
	[UROCE_CONF_LOG_WARNING] = "warning",
	[UROCE_CONF_LOG_INFO] = "info",
	[UROCE_CONF_LOG_DEBUG] = "debug",
};

static const struct uroce_conf_key keys[] = {
	STR(port, name, "",
	    "DPDK port to use, by name (net_af_packet0, 0000:3b:00.0, ...); empty: the first port"),
	UINT(port, mtu, 576, 9216, "1500",
	     "IP MTU of the port; the RoCE path MTU is the largest of 256..4096 that fits"),
	UINT(port, rx_ring, 64, 16384, "1024", "descriptors per receive queue"),
	UINT(port, tx_ring, 64, 16384, "1024", "descriptors per transmit queue"),
	UINT(port, vlan, 0, 4094, "0",
	     "802.1Q VLAN ID of every frame sent and accepted (RoCE PCP: the SL); 0: untagged"),

	ADDRS(host, ipv4, UROCE_CONF_IPV4,
	      "IPv4 addresses of this endpoint, each one a RoCEv2 GID; empty: none"),
	ADDRS(host, ipv6, UROCE_CONF_IPV6,
	      "IPv6 addresses of this endpoint, each one a RoCEv2 GID; empty: none"),
	{.section = "host", .name = "mac", .type = UROCE_CONF_MAC, .off = OFF(host.mac),
	 .size = SZ(host.mac), .def = "",
	 .doc = "MAC address of this endpoint; empty: the port's own"},
	STR(host, kernel_iface, "",
	    "tap interface to create for the kernel, with this endpoint's MAC, MTU and IPv4 "
	    "addresses: frames that are not RoCE go to the kernel through it and its frames go "
	    "out on the port, so TCP reaches peers at the RoCE addresses (as on an RNIC's "
	    "netdev); empty: none, such frames are dropped"),
	UINT(host, kernel_prefix_len, 1, 32, "24",
	     "prefix length of the IPv4 addresses given to kernel_iface (the subnet the kernel "
	     "routes through it)"),

	STR(control, socket, "/run/uroce/uroced.sock",
	    "UNIX socket applications connect to (the verbs library finds it here); its folder "
	    "and those above it must be writable by root or the daemon's user only, or sticky "
	    "(/tmp): the daemon refuses others"),
	OCTAL(control, socket_mode, 0, 0777, "0660", "permissions of the control socket"),
	STR(control, socket_group, "",
	    "group owning the control socket (who may use RDMA); empty: the daemon's group"),
	STR(control, admin_group, "",
	    "group whose members may administer (capture, fault, log-level, cm-drop) besides root; "
	    "empty: root only"),
	UINT(control, max_clients, 1, 1024, "256", "most applications connected at once"),
	STR(control, user, "",
	    "user the daemon runs as once started (port open, socket bound): it keeps only the "
	    "capabilities it still needs, none on most ports; the socket's folder must be that "
	    "user's, or clients refuse the daemon; empty: it stays the user that started it"),

	UINT(limits, clients, 0, 1024, "64",
	     "most connections (device contexts) one user holds at once: HELLO beyond it fails "
	     "with EAGAIN; 0: only control.max_clients. Each [limits] key is per user, over all "
	     "of the user's connections; root and control.admin_group are exempt"),
	UINT(limits, pds, 0, UINT32_MAX, "4096", "protection domains per user; 0: no limit"),
	UINT(limits, mrs, 0, UINT32_MAX, "16384",
	     "memory regions and windows per user; 0: no limit"),
	UINT(limits, mr_bytes, 0, UINT64_MAX, "0",
	     "bytes registered per user, in whole pages: beyond it REG_MR fails with ENOMEM; "
	     "0: no limit (each process is held to its RLIMIT_MEMLOCK anyway, as the kernel "
	     "does, unless it has CAP_IPC_LOCK)"),
	UINT(limits, regions, 0, UINT32_MAX, "1024",
	     "memory files the verbs library shares registered pages through, per user (the "
	     "daemon holds a descriptor for each); 0: no limit"),
	UINT(limits, channels, 0, UINT32_MAX, "1024",
	     "completion channels per user (each a pipe the daemon holds); 0: no limit"),
	UINT(limits, cqs, 0, UINT32_MAX, "16384", "completion queues per user; 0: no limit"),
	UINT(limits, srqs, 0, UINT32_MAX, "4096", "shared receive queues per user; 0: no limit"),
	UINT(limits, qps, 0, UINT32_MAX, "16384", "queue pairs per user; 0: no limit"),
	UINT(limits, ahs, 0, UINT32_MAX, "65536", "address handles per user; 0: no limit"),
	UINT(limits, cm_ids, 0, UINT32_MAX, "16384",
	     "rdma_cm ids per user (connection requests a listener holds included); 0: no "
	     "limit"),
	UINT(limits, mappings, 0, UINT32_MAX, "16384",
	     "the daemon's memory mappings per user (an MR takes one per piece of memory file "
	     "it spans: ENOMEM beyond, as mmap at vm.max_map_count, 65530 by default, which "
	     "every user shares); 0: no limit"),
	UINT(limits, client_pds, 0, UINT32_MAX, "0",
	     "protection domains per connection, within its user's; 0: only the user's limit"),
	UINT(limits, client_mrs, 0, UINT32_MAX, "0",
	     "memory regions and windows per connection; 0: none"),
	UINT(limits, client_mr_bytes, 0, UINT64_MAX, "0",
	     "bytes registered per connection (ENOMEM beyond); 0: none"),
	UINT(limits, client_regions, 0, UINT32_MAX, "0", "memory files per connection; 0: none"),
	UINT(limits, client_channels, 0, UINT32_MAX, "0",
	     "completion and rdma_cm event channels per connection; 0: none"),
	UINT(limits, client_cqs, 0, UINT32_MAX, "0", "completion queues per connection; 0: none"),
	UINT(limits, client_srqs, 0, UINT32_MAX, "0",
	     "shared receive queues per connection; 0: none"),
	UINT(limits, client_qps, 0, UINT32_MAX, "0", "queue pairs per connection; 0: none"),
	UINT(limits, client_ahs, 0, UINT32_MAX, "0", "address handles per connection; 0: none"),
	UINT(limits, client_cm_ids, 0, UINT32_MAX, "0", "rdma_cm ids per connection; 0: none"),

	UINT(transport, ack_coalesce, 1, 1024, "16",
	     "responder: ACK at least every this many packets without AckReq"),
	UINT(transport, max_unacked_psns, 1, 8388608, "128",
	     "requester: most PSNs in flight per QP (rxe: 128)"),
	UINT(transport, max_pkts_per_ack, 1, 1024, "64",
	     "requester: set AckReq at least every this many packets (rxe: 64)"),
	UINT(transport, tx_burst, 0, 65536, "32",
	     "packets one QP sends before the next QP with something to send has its turn (round "
	     "robin, so a flood on one QP holds another's message back by a burst); 0: a QP "
	     "sends until done or the port refuses"),
	UINT(transport, zero_copy_min, 0, 65536, "0",
	     "RC SEND and WRITE payloads of at least this many bytes leave from the "
	     "application's memory without a copy, on ports that allow it; 0: always copy "
	     "(af_packet and memif copy every frame themselves: there it saves no time)"),
	UINT(transport, seed, 0, UINT64_MAX, "0",
	     "seeds QPNs, key bytes, CM ids and start PSNs, the same each run (to replay "
	     "one); 0: unpredictable, from getrandom()"),

	UINT(cm, response_timeout, 8, 31, "20",
	     "CM response timeout, 4.096 us * 2^x, sent in REQ and used for our waits"
	     " (rdma_cm: 20, 4.3 s)"),
	UINT(cm, max_retries, 0, 15, "15",
	     "times a CM REQ, REP, DREQ or SIDR_REQ is sent again before giving up (rdma_cm: 15)"),
	UINT(cm, timewait_ms, 0, 600000, "1000",
	     "milliseconds a disconnected id stays in timewait (stale packets are recognised)"),

	UINT(lcore, idle_sleep_us, 0, 1000000, "10000",
	     "longest sleep, in microseconds, of a poll lcore idle for idle_after_us: it sleeps"
	     " until an application posts, a frame or control request comes or a timer is due;"
	     " 0: never sleeps (busy polling, for a dedicated core)"),
	UINT(lcore, idle_nap_us, 20, 1000000, "1000",
	     "longest sleep, in microseconds, on a port that cannot signal frames (memif, tap"
	     " with DPDK 22.11): naps of 20 us doubling up to this"),
	UINT(lcore, idle_after_us, 1, 1000000, "100",
	     "microseconds without work before a poll lcore sleeps (idle_sleep_us > 0)"),
	UINT(lcore, idle_yield_us, 0, 1000000, "2",
	     "microseconds without work before a poll lcore yields its CPU on each empty turn"
	     " (to applications sharing it; free when none does); 0: never yields"),
	UINT(lcore, control_poll_us, 1, 100000, "100",
	     "microseconds between looks at the control socket and timers"),

	RATE(fault, rx_drop, "probability a received frame is dropped (testing only)"),
	RATE(fault, rx_dup, "probability a received frame is duplicated"),
	RATE(fault, rx_reorder, "probability a received frame is overtaken by later ones"),
	RATE(fault, rx_corrupt, "probability a received frame gets one byte flipped"),
	RATE(fault, tx_drop, "probability a frame to send is dropped"),
	RATE(fault, tx_dup, "probability a frame to send is duplicated"),
	RATE(fault, tx_reorder, "probability a frame to send is overtaken by later ones"),
	RATE(fault, tx_corrupt, "probability a frame to send gets one byte flipped"),
	UINT(fault, seed, 0, UINT64_MAX, "1",
	     "seed of the fault injection (the same seed, the same faults)"),

	STR(capture, file, "", "pcap file receiving every frame sent and received; empty: off"),
	UINT(capture, snaplen, 64, 65535, "65535", "bytes kept of each captured frame"),

	{.section = "log", .name = "level", .type = UROCE_CONF_CHOICE, .off = OFF(log.level),
	 .size = SZ(log.level), .choices = log_levels, .def = "info",
	 .doc = "least severe messages logged"},

	{.section = "telemetry", .name = "dpdk", .type = UROCE_CONF_BOOL,
	 .off = OFF(telemetry.dpdk), .size = SZ(telemetry.dpdk), .def = "yes",
	 .doc = "DPDK's telemetry socket (/var/run/dpdk/<file-prefix>/dpdk_telemetry.v2, read "
		"by dpdk-telemetry.py) answers /uroce/stats with the counters of uroce stat"},
	STR(telemetry, prometheus_listen, "",
	    "IPv4 ADDRESS:PORT where the daemon serves its counters as Prometheus text "
	    "(GET /metrics), e.g. 127.0.0.1:9464; empty: none"),
};

_Static_assert(sizeof(enum uroce_conf_log_level) == sizeof(int), "CHOICE fields are ints");

const struct uroce_conf_table uroce_conf_uroced = {
	.keys = keys,
	.nkeys = sizeof(keys) / sizeof(keys[0]),
	.obj_size = sizeof(struct uroce_conf),
	.title = "# uroced configuration: every key with its default.\n"
		 "#\n"
		 "# Generated by uroce_conf_print_defaults() (lib/conf/conf_uroced.c); "
		 "a test keeps\n"
		 "# this file equal to it. Keys are 'name = value' under a [section], or\n"
		 "# 'section.name = value'; the daemon's --set section.name=value overrides them.\n"
		 "# Unknown keys, bad values and keys set twice stop the daemon with file:line.\n"
		 "# Reference: doc/config.md.",
};

void uroce_conf_defaults(struct uroce_conf *c)
{
	uroce_conf_table_defaults(&uroce_conf_uroced, c);
}

int uroce_conf_load(struct uroce_conf *c, const char *path, char *err, size_t errlen)
{
	return uroce_conf_table_load(&uroce_conf_uroced, c, path, err, errlen);
}

int uroce_conf_parse(struct uroce_conf *c, const char *text, size_t len, const char *name,
		     char *err, size_t errlen)
{
	return uroce_conf_table_parse(&uroce_conf_uroced, c, text, len, name, err, errlen);
}

int uroce_conf_set(struct uroce_conf *c, const char *assignment, char *err, size_t errlen)
{
	return uroce_conf_table_set(&uroce_conf_uroced, c, assignment, err, errlen);
}

void uroce_conf_print(const struct uroce_conf *c, FILE *out)
{
	uroce_conf_table_print(&uroce_conf_uroced, c, out);
}

void uroce_conf_print_defaults(FILE *out)
{
	struct uroce_conf c;

	uroce_conf_defaults(&c);
	uroce_conf_print(&c, out);
}

const char *uroce_conf_log_level_name(enum uroce_conf_log_level l)
{
	return (unsigned)l < UROCE_CONF_LOG__COUNT ? log_levels[l] : "?";
}

int uroce_conf_log_level_from_name(const char *name)
{
	for (int l = 0; l < UROCE_CONF_LOG__COUNT; l++)
		if (strcmp(name, log_levels[l]) == 0)
			return l;
	return -1;
}
