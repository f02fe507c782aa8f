/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/conf: the strict parser of uroced.conf, its table, and the committed files the
 * table generates. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "uroce_conf.h"

static char err[512];

/* Parses @p text over the defaults; returns the parse result, the config in *c. */
static int parse(struct uroce_conf *c, const char *text)
{
	uroce_conf_defaults(c);
	return uroce_conf_parse(c, text, strlen(text), "t.conf", err, sizeof(err));
}

/* The text must fail with exactly @p msg (the file:line prefix included). */
static void expect_error(const char *text, const char *msg)
{
	struct uroce_conf c, d;

	uroce_conf_defaults(&d);
	cr_expect_eq(parse(&c, text), -EINVAL, "accepted: %s", text);
	cr_expect_str_eq(err, msg, "for: %s", text);
	cr_expect_eq(memcmp(&c, &d, sizeof(c)), 0, "a failed parse changed the config: %s", text);
}

static void expect_ok(struct uroce_conf *c, const char *text)
{
	cr_expect_eq(parse(c, text), 0, "refused: %s: %s", text, err);
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = malloc(1 << 20);
	size_t n;

	cr_assert_not_null(f, "cannot open %s", path);
	cr_assert_not_null(buf);
	n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	*len = n;
	return buf;
}

static char *generated(void (*gen)(FILE *), size_t *len)
{
	char *buf = NULL;
	FILE *m = open_memstream(&buf, len);

	cr_assert_not_null(m);
	gen(m);
	fclose(m);
	return buf;
}

static void gen_markdown(FILE *f)
{
	uroce_conf_table_markdown(&uroce_conf_uroced, f);
}

/* ---- defaults and the committed files ----------------------------------------------- */

Test(conf, defaults)
{
	struct uroce_conf c;

	uroce_conf_defaults(&c);
	cr_expect_str_eq(c.port.name, "");
	cr_expect_eq(c.port.mtu, 1500);
	cr_expect_eq(c.port.rx_ring, 1024);
	cr_expect_eq(c.port.tx_ring, 1024);
	cr_expect_eq(c.port.vlan, 0);
	cr_expect_eq(c.host.n_ipv4, 0);
	cr_expect_eq(c.host.n_ipv6, 0);
	cr_expect_eq(c.host.mac[0] | c.host.mac[1] | c.host.mac[2] | c.host.mac[5], 0);
	cr_expect_str_eq(c.control.socket, "/run/uroce/uroced.sock");
	cr_expect_eq(c.control.socket_mode, 0660);
	cr_expect_str_eq(c.control.socket_group, "");
	cr_expect_str_eq(c.control.admin_group, "");
	cr_expect_str_eq(c.control.user, "");
	cr_expect_eq(c.control.max_clients, 256);
	/* Shipped limits leave room for others (issue 43 (8): with every one 0, one user
	 * took all the connections): a user gets a quarter of the connections and of
	 * vm.max_map_count's 65530 mappings; registered bytes stay RLIMIT_MEMLOCK's. */
	cr_expect_eq(c.limits.clients, c.control.max_clients / 4);
	cr_expect_eq(c.limits.mappings, 16384);
	cr_expect(c.limits.regions && c.limits.qps && c.limits.cqs && c.limits.mrs &&
		  c.limits.pds && c.limits.channels && c.limits.srqs && c.limits.ahs &&
		  c.limits.cm_ids, "every object a user holds is bounded");
	cr_expect_eq(c.limits.mr_bytes, 0, "RLIMIT_MEMLOCK is the one that binds bytes");
	cr_expect_eq(c.transport.ack_coalesce, 16);
	cr_expect_eq(c.transport.max_unacked_psns, 128);
	cr_expect_eq(c.transport.max_pkts_per_ack, 64);
	cr_expect_eq(c.transport.zero_copy_min, 0);
	cr_expect_eq(c.transport.seed, 0);
	cr_expect_eq(c.lcore.idle_sleep_us, 10000);
	cr_expect_eq(c.lcore.control_poll_us, 100);
	cr_expect(c.fault.rx_drop == 0 && c.fault.rx_dup == 0 && c.fault.rx_reorder == 0 &&
		  c.fault.rx_corrupt == 0 && c.fault.tx_drop == 0 && c.fault.tx_dup == 0 &&
		  c.fault.tx_reorder == 0 && c.fault.tx_corrupt == 0);
	cr_expect_eq(c.fault.seed, 1);
	cr_expect_str_eq(c.capture.file, "");
	cr_expect_eq(c.capture.snaplen, 65535);
	cr_expect_eq(c.log.level, UROCE_CONF_LOG_INFO);
	cr_expect_str_eq(uroce_conf_log_level_name(c.log.level), "info");
	cr_expect(c.telemetry.dpdk);
	cr_expect_str_eq(c.telemetry.prometheus_listen, "");
}

Test(conf, table_is_sane)
{
	const struct uroce_conf_table *t = &uroce_conf_uroced;

	cr_expect_eq(t->nkeys, 66);
	for (size_t i = 0; i < t->nkeys; i++) {
		const struct uroce_conf_key *k = &t->keys[i];

		cr_expect(k->doc != NULL && strlen(k->doc) > 10 && strchr(k->doc, '\n') == NULL);
		cr_expect_lt(k->off + k->size, sizeof(struct uroce_conf) + 1);
		for (size_t j = 0; j < i; j++)
			cr_expect(strcmp(k->section, t->keys[j].section) != 0 ||
					  strcmp(k->name, t->keys[j].name) != 0,
				  "%s.%s twice", k->section, k->name);
		/* sections are contiguous, so the printed file has one header each */
		if (i > 1 && strcmp(k->section, t->keys[i - 1].section) != 0)
			for (size_t j = 0; j + 1 < i; j++)
				cr_expect_str_neq(t->keys[j].section, k->section);
	}
}

Test(conf, committed_file_is_what_the_table_prints_and_parses_to_the_defaults)
{
	const char *path = getenv("UROCE_CONF_SAMPLE");
	struct uroce_conf c, d;
	size_t n, m;
	char *file, *gen;

	cr_assert_not_null(path, "UROCE_CONF_SAMPLE not set (run through meson test)");
	file = read_all(path, &n);
	gen = generated(uroce_conf_print_defaults, &m);
	cr_expect_str_eq(file, gen, "config/uroced.conf is stale: regenerate it with "
		     "uroce-conf-gen --defaults");
	/* Every key is in the file: parsed over zeros it gives exactly the defaults. */
	memset(&c, 0, sizeof(c));
	cr_expect_eq(uroce_conf_load(&c, path, err, sizeof(err)), 0, "%s", err);
	uroce_conf_defaults(&d);
	cr_expect_eq(memcmp(&c, &d, sizeof(c)), 0);
	free(file);
	free(gen);
}

Test(conf, committed_reference_contains_the_generated_tables)
{
	const char *path = getenv("UROCE_CONF_DOC");
	size_t n, m;
	char *doc, *gen;

	cr_assert_not_null(path);
	doc = read_all(path, &n);
	gen = generated(gen_markdown, &m);
	cr_expect_not_null(strstr(doc, gen), "doc/config.md is stale: paste in "
			   "uroce-conf-gen --markdown");
	free(doc);
	free(gen);
}

Test(conf, print_parses_back_to_the_same_config)
{
	struct uroce_conf c, d;
	char *text = NULL;
	size_t len;
	FILE *m;

	expect_ok(&c, "[port]\nname = net_af_packet0\nmtu = 9000\nvlan = 4094\n"
		      "[host]\nipv4 = 10.0.0.1, 192.168.1.2\nipv6 = fe80::1, 2001:db8::2\n"
		      "mac = 02:00:00:aa:bb:cc\n"
		      "[control]\nsocket = \" /tmp/x#y \"\nsocket_mode = 0600\n"
		      "[transport]\nseed = 18446744073709551615\n"
		      "[fault]\nrx_drop = 0.1\ntx_corrupt = 1e-9\nrx_dup = 0.3333333333333333\n"
		      "[log]\nlevel = debug\n");
	m = open_memstream(&text, &len);
	cr_assert_not_null(m);
	uroce_conf_print(&c, m);
	fclose(m);
	memset(&d, 0, sizeof(d));
	cr_expect_eq(uroce_conf_parse(&d, text, len, "printed", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(memcmp(&c, &d, sizeof(c)), 0, "%s", text);
	cr_expect_str_eq(d.control.socket, " /tmp/x#y ");
	free(text);
}

/* ---- the file's syntax -------------------------------------------------------------- */

Test(conf, sections_comments_and_white_space)
{
	struct uroce_conf c;

	expect_ok(&c, "# comment\n; another\n\n   \t\n[port]\nmtu=9000\n"
		      "  rx_ring\t=   2048   # trailing comment\n"
		      "[ host ]   # comment after a header\n"
		      "mac = 02:00:00:00:00:01\n"
		      "port.tx_ring = 512\n" /* qualified keys work anywhere */
		      "[port]\nvlan = 7\r\n"    /* a section may come back; CRLF */
		      "name = a#b\n"            /* '#' not after white space is a value */
		      "[capture]\nfile = \"/tmp/cap #1.pcap\"  # quoted\n"
		      "snaplen = 128");         /* no newline at the end */
	cr_expect_eq(c.port.mtu, 9000);
	cr_expect_eq(c.port.rx_ring, 2048);
	cr_expect_eq(c.port.tx_ring, 512);
	cr_expect_eq(c.port.vlan, 7);
	cr_expect_str_eq(c.port.name, "a#b");
	cr_expect_eq(c.host.mac[5], 1);
	cr_expect_str_eq(c.capture.file, "/tmp/cap #1.pcap");
	cr_expect_eq(c.capture.snaplen, 128);

	expect_ok(&c, "port.mtu = 1400\nlog.level = error\n");
	cr_expect_eq(c.port.mtu, 1400);
	cr_expect_eq(c.log.level, UROCE_CONF_LOG_ERROR);
	expect_ok(&c, "");
	expect_ok(&c, "[port]\nname =\n");
	cr_expect_str_eq(c.port.name, "");
	expect_ok(&c, "[port]\nname = \"\"   \n");
	cr_expect_str_eq(c.port.name, "");
}

Test(conf, syntax_errors)
{
	expect_error("mtu = 1500\n",
		     "t.conf:1: key mtu outside a section: write section.mtu, or put it under a "
		     "[section] header");
	expect_error("[port\nmtu = 1\n", "t.conf:1: section header without ']'");
	expect_error("[port] x\n", "t.conf:1: text after the section header");
	expect_error("\n[ports]\n",
		     "t.conf:2: unknown section [ports]; sections: port host control limits "
		     "transport cm lcore fault capture log telemetry");
	expect_error("[port]\nmtu 1500\n",
		     "t.conf:2: expected key = value or [section]: 'mtu 1500'");
	expect_error("[port]\n= 1500\n", "t.conf:2: no key before '='");
	expect_error("[port]\nMTU = 1500\n",
		     "t.conf:2: 'MTU' is not a key (lower-case letters, digits, '_', '.')");
	expect_error("[port]\nmtu = \"1500\n", "t.conf:2: port.mtu: unterminated quoted value");
	expect_error("[port]\nname = \"a\" b\n",
		     "t.conf:2: port.name: text after the closing quote");
	expect_error("[port]\nname = a\"b\n",
		     "t.conf:2: port.name: a double quote inside a value is not allowed");
	expect_error("[port]\nname = a\tb\n",
		     "t.conf:2: port.name: control character 0x09 in the value");
	expect_error("[port]\nname = \x01\n",
		     "t.conf:2: port.name: control character 0x01 in the value");

	struct uroce_conf c;
	char nul[] = "[port]\nmtu = 15\0" "00\n";

	uroce_conf_defaults(&c);
	cr_expect_eq(uroce_conf_parse(&c, nul, sizeof(nul) - 1, "t.conf", err, sizeof(err)),
		     -EINVAL);
	cr_expect_str_eq(err, "t.conf:2: NUL byte in the line");

	char *long_line = malloc(UROCE_CONF_LINE_MAX + 20);

	cr_assert_not_null(long_line);
	memset(long_line, ' ', UROCE_CONF_LINE_MAX + 19);
	long_line[UROCE_CONF_LINE_MAX + 19] = '\0';
	expect_error(long_line, "t.conf:1: line longer than 4096 bytes");
	free(long_line);
}

Test(conf, unknown_and_duplicate_keys)
{
	expect_error("[port]\nmtux = 1500\n",
		     "t.conf:2: unknown key port.mtux (did you mean port.mtu?)");
	expect_error("[port]\nfrobnicate = 1\n", "t.conf:2: unknown key port.frobnicate");
	expect_error("host.ip4 = 10.0.0.1\n",
		     "t.conf:1: unknown key host.ip4 (did you mean host.ipv4?)");
	expect_error("[host]\nmtu = 1500\n",
		     "t.conf:2: unknown key host.mtu (did you mean port.mtu?)");
	expect_error("nosuch.key = 1\n", "t.conf:1: unknown key nosuch.key");
	/* Removed keys (one lcore polls one queue) are refused, not ignored. */
	expect_error("port.rx_queues = 1\n", "t.conf:1: unknown key port.rx_queues");
	expect_error("[lcore]\npoll_lcores = 1\n", "t.conf:2: unknown key lcore.poll_lcores");
	expect_error("[port]\nmtu = 1500\n\n# again\nmtu = 9000\n",
		     "t.conf:5: port.mtu is set twice (first on line 2)");
	expect_error("port.mtu = 1500\n[port]\nmtu = 1500\n",
		     "t.conf:3: port.mtu is set twice (first on line 1)");
}

/* ---- values ------------------------------------------------------------------------- */

Test(conf, unsigned_integers)
{
	struct uroce_conf c;

	expect_ok(&c, "[port]\nmtu = 576\nrx_ring = 16384\nvlan = 0\n");
	cr_expect_eq(c.port.mtu, 576);
	cr_expect_eq(c.port.rx_ring, 16384);
	expect_ok(&c, "[port]\nmtu = 9216\n[transport]\nmax_unacked_psns = 8388608\nseed = 0\n");
	cr_expect_eq(c.transport.max_unacked_psns, 8388608);
	expect_ok(&c, "transport.seed = 18446744073709551615\n");
	cr_expect_eq(c.transport.seed, UINT64_MAX);
	expect_ok(&c, "lcore.idle_sleep_us = 100000\n");
	cr_expect_eq(c.lcore.idle_sleep_us, 100000);

	expect_error("port.mtu = 575\n", "t.conf:1: port.mtu: 575 is out of range 576..9216");
	expect_error("port.mtu = 9217\n", "t.conf:1: port.mtu: 9217 is out of range 576..9216");
	expect_error("port.rx_ring = 63\n", "t.conf:1: port.rx_ring: 63 is out of range 64..16384");
	expect_error("port.vlan = 4095\n", "t.conf:1: port.vlan: 4095 is out of range 0..4094");
	expect_error("port.mtu = 99999999999999999999999\n",
		     "t.conf:1: port.mtu: 99999999999999999999999 is out of range 576..9216");
	expect_error("transport.seed = 18446744073709551616\n",
		     "t.conf:1: transport.seed: 18446744073709551616 is out of range "
		     "0..18446744073709551615");
	expect_error("port.mtu = -1\n",
		     "t.conf:1: port.mtu: '-1' is not an unsigned decimal integer");
	expect_error("port.mtu = +1500\n",
		     "t.conf:1: port.mtu: '+1500' is not an unsigned decimal integer");
	expect_error("port.mtu = 0x5dc\n",
		     "t.conf:1: port.mtu: '0x5dc' is not an unsigned decimal integer");
	expect_error("port.mtu = 1500k\n",
		     "t.conf:1: port.mtu: '1500k' is not an unsigned decimal integer");
	expect_error("port.mtu = 1 500\n",
		     "t.conf:1: port.mtu: '1 500' is not an unsigned decimal integer");
	expect_error("port.mtu = 1.5e3\n",
		     "t.conf:1: port.mtu: '1.5e3' is not an unsigned decimal integer");
	expect_error("port.mtu =\n", "t.conf:1: port.mtu: '' is not an unsigned decimal integer");
	expect_error("port.mtu = 01500\n",
		     "t.conf:1: port.mtu: '01500' has a leading zero (the value is decimal)");
}

Test(conf, octal)
{
	struct uroce_conf c;

	expect_ok(&c, "control.socket_mode = 0600\n");
	cr_expect_eq(c.control.socket_mode, 0600);
	expect_ok(&c, "control.socket_mode = 777\n");
	cr_expect_eq(c.control.socket_mode, 0777);
	expect_ok(&c, "control.socket_mode = 0\n");
	cr_expect_eq(c.control.socket_mode, 0);
	expect_error("control.socket_mode = 0800\n",
		     "t.conf:1: control.socket_mode: '0800' is not an octal number (digits 0-7)");
	expect_error("control.socket_mode = 01000\n",
		     "t.conf:1: control.socket_mode: 01000 is out of range 0..0777");
	expect_error("control.socket_mode = rw\n",
		     "t.conf:1: control.socket_mode: 'rw' is not an octal number (digits 0-7)");
}

Test(conf, doubles)
{
	struct uroce_conf c;

	expect_ok(&c, "[fault]\nrx_drop = 0.25\ntx_dup = 1\nrx_corrupt = 1e-6\ntx_reorder = .5\n"
		      "rx_reorder = 1.0e-0\ntx_corrupt = 0\n");
	cr_expect(c.fault.rx_drop == 0.25);
	cr_expect(c.fault.tx_dup == 1.0);
	cr_expect(c.fault.rx_corrupt == 1e-6);
	cr_expect(c.fault.tx_reorder == 0.5);
	cr_expect(c.fault.rx_reorder == 1.0);
	expect_error("fault.rx_drop = 1.0001\n",
		     "t.conf:1: fault.rx_drop: 1.0001 is out of range 0..1");
	expect_error("fault.rx_drop = -0.1\n",
		     "t.conf:1: fault.rx_drop: -0.1 is out of range 0..1");
	expect_error("fault.rx_drop = nan\n", "t.conf:1: fault.rx_drop: 'nan' is not a number");
	expect_error("fault.rx_drop = inf\n", "t.conf:1: fault.rx_drop: 'inf' is not a number");
	expect_error("fault.rx_drop = 0x1p-3\n",
		     "t.conf:1: fault.rx_drop: '0x1p-3' is not a number");
	expect_error("fault.rx_drop = 1e999\n", "t.conf:1: fault.rx_drop: '1e999' is not a number");
	expect_error("fault.rx_drop = 0.5.5\n", "t.conf:1: fault.rx_drop: '0.5.5' is not a number");
	expect_error("fault.rx_drop = .\n", "t.conf:1: fault.rx_drop: '.' is not a number");
	expect_error("fault.rx_drop = 10%\n", "t.conf:1: fault.rx_drop: '10%' is not a number");
	expect_error("fault.rx_drop =\n", "t.conf:1: fault.rx_drop: '' is not a number");
}

Test(conf, strings)
{
	struct uroce_conf c;
	char v[300], text[400];

	expect_ok(&c, "control.socket_group = rdma\ncapture.file = /var/tmp/u.pcap\n");
	cr_expect_str_eq(c.control.socket_group, "rdma");
	cr_expect_str_eq(c.capture.file, "/var/tmp/u.pcap");
	/* at most size - 1 bytes */
	memset(v, 'a', 107);
	v[107] = '\0';
	snprintf(text, sizeof(text), "control.socket = /%s\n", v + 1);
	expect_ok(&c, text);
	cr_expect_eq(strlen(c.control.socket), 107);
	snprintf(text, sizeof(text), "control.socket = /%s\n", v);
	expect_error(text, "t.conf:1: control.socket: too long: 108 bytes, at most 107");
}

Test(conf, choices)
{
	struct uroce_conf c;
	const char *names[] = {"error", "warning", "info", "debug"};

	for (int i = 0; i < 4; i++) {
		char text[64];

		snprintf(text, sizeof(text), "[log]\nlevel = %s\n", names[i]);
		expect_ok(&c, text);
		cr_expect_eq((int)c.log.level, i);
		cr_expect_str_eq(uroce_conf_log_level_name(c.log.level), names[i]);
		cr_expect_eq(uroce_conf_log_level_from_name(names[i]), i);
	}
	cr_expect_str_eq(uroce_conf_log_level_name(UROCE_CONF_LOG__COUNT), "?");
	cr_expect_eq(uroce_conf_log_level_from_name("INFO"), -1);
	cr_expect_eq(uroce_conf_log_level_from_name("verbose"), -1);
	cr_expect_eq(uroce_conf_log_level_from_name(""), -1);
	expect_error("log.level = verbose\n",
		     "t.conf:1: log.level: 'verbose' is not one of: error, warning, info, debug");
	expect_error("log.level = INFO\n",
		     "t.conf:1: log.level: 'INFO' is not one of: error, warning, info, debug");
}

Test(conf, ipv4_lists)
{
	struct uroce_conf c;
	char a[32];

	expect_ok(&c, "host.ipv4 = 10.0.0.1\n");
	cr_expect_eq(c.host.n_ipv4, 1);
	cr_expect_eq(c.host.ipv4[0].s_addr, htonl(0x0a000001));
	expect_ok(&c, "host.ipv4 =   10.0.0.1 ,192.168.0.7,\t172.16.0.1  \n");
	cr_expect_eq(c.host.n_ipv4, 3);
	inet_ntop(AF_INET, &c.host.ipv4[1], a, sizeof(a));
	cr_expect_str_eq(a, "192.168.0.7");
	expect_ok(&c,
		  "host.ipv4 = 1.0.0.1,1.0.0.2,1.0.0.3,1.0.0.4,1.0.0.5,1.0.0.6,1.0.0.7,1.0.0.8\n");
	cr_expect_eq(c.host.n_ipv4, 8);
	expect_ok(&c, "host.ipv4 =\n");
	cr_expect_eq(c.host.n_ipv4, 0);

	expect_error("host.ipv4 = 1.0.0.1,1.0.0.2,1.0.0.3,1.0.0.4,1.0.0.5,1.0.0.6,1.0.0.7,1.0.0.8,"
		     "1.0.0.9\n", "t.conf:1: host.ipv4: more than 8 addresses");
	expect_error("host.ipv4 = 10.0.0.256\n",
		     "t.conf:1: host.ipv4: '10.0.0.256' is not an IPv4 address");
	expect_error("host.ipv4 = 10.0.1\n",
		     "t.conf:1: host.ipv4: '10.0.1' is not an IPv4 address");
	expect_error("host.ipv4 = ::1\n", "t.conf:1: host.ipv4: '::1' is not an IPv4 address");
	expect_error("host.ipv4 = 10.0.0.1 10.0.0.2\n",
		     "t.conf:1: host.ipv4: '10.0.0.1 10.0.0.2' is not an IPv4 address");
	expect_error("host.ipv4 = 10.0.0.1,,10.0.0.2\n",
		     "t.conf:1: host.ipv4: empty element in the list");
	expect_error("host.ipv4 = 10.0.0.1,\n", "t.conf:1: host.ipv4: empty element in the list");
	expect_error("host.ipv4 = ,10.0.0.1\n", "t.conf:1: host.ipv4: empty element in the list");
	expect_error("host.ipv4 = 10.0.0.1, 10.0.0.1\n",
		     "t.conf:1: host.ipv4: 10.0.0.1 is listed twice");
	expect_error(
		"host.ipv4 = 0.0.0.0\n",
		"t.conf:1: host.ipv4: 0.0.0.0 is not a host address (unspecified, multicast or "
		"broadcast)");
	expect_error(
		"host.ipv4 = 224.0.0.1\n",
		"t.conf:1: host.ipv4: 224.0.0.1 is not a host address (unspecified, multicast or "
		"broadcast)");
	expect_error("host.ipv4 = 255.255.255.255\n",
		     "t.conf:1: host.ipv4: 255.255.255.255 is not a host address (unspecified, "
		     "multicast or broadcast)");
	expect_error(
		"host.ipv4 = 1111111111111111111111111111111111111111111111111111111111111111111\n",
		"t.conf:1: host.ipv4: "
		"'111111111111111111111111111111111111111111111111111111111111...' "
		"is not an IPv4 address");
}

Test(conf, ipv6_lists)
{
	struct uroce_conf c;
	char a[64];

	expect_ok(&c, "[host]\nipv6 = fe80::1, 2001:db8::2,::ffff:10.0.0.1\n");
	cr_expect_eq(c.host.n_ipv6, 3);
	inet_ntop(AF_INET6, &c.host.ipv6[1], a, sizeof(a));
	cr_expect_str_eq(a, "2001:db8::2");
	expect_ok(&c, "host.ipv6 = 1::1,1::2,1::3,1::4,1::5,1::6,1::7,1::8\n");
	cr_expect_eq(c.host.n_ipv6, 8);
	expect_error("host.ipv6 = 1::1,1::2,1::3,1::4,1::5,1::6,1::7,1::8,1::9\n",
		     "t.conf:1: host.ipv6: more than 8 addresses");
	expect_error("host.ipv6 = 10.0.0.1\n",
		     "t.conf:1: host.ipv6: '10.0.0.1' is not an IPv6 address");
	expect_error("host.ipv6 = fe80::1%eth0\n",
		     "t.conf:1: host.ipv6: 'fe80::1%eth0' is not an IPv6 address");
	expect_error("host.ipv6 = 1:2:3:4:5:6:7:8:9\n",
		     "t.conf:1: host.ipv6: '1:2:3:4:5:6:7:8:9' is not an IPv6 address");
	expect_error(
		"host.ipv6 = ::\n",
		"t.conf:1: host.ipv6: :: is not a host address (unspecified, multicast or "
		"broadcast)");
	expect_error(
		"host.ipv6 = ff02::1\n",
		"t.conf:1: host.ipv6: ff02::1 is not a host address (unspecified, multicast or "
		"broadcast)");
	expect_error("host.ipv6 = 2001:db8::1, 2001:db8:0::1\n",
		     "t.conf:1: host.ipv6: 2001:db8:0::1 is listed twice");
}

Test(conf, mac_addresses)
{
	struct uroce_conf c;
	const uint8_t want[6] = {0x02, 0xab, 0xcd, 0xef, 0x01, 0x23};

	expect_ok(&c, "host.mac = 02:AB:cd:ef:01:23\n");
	cr_expect_eq(memcmp(c.host.mac, want, 6), 0);
	expect_ok(&c, "host.mac = 02-ab-cd-ef-01-23\n");
	cr_expect_eq(memcmp(c.host.mac, want, 6), 0);
	expect_ok(&c, "host.mac = 02-ab-cd-ef-01-23\nport.mtu = 1500\n");
	expect_error(
		"host.mac = 02:ab:cd:ef:01\n",
		"t.conf:1: host.mac: '02:ab:cd:ef:01' is not a MAC address (like "
		"02:00:00:00:00:01)");
	expect_error(
		"host.mac = 02:ab:cd:ef:01:2g\n",
		"t.conf:1: host.mac: '02:ab:cd:ef:01:2g' is not a MAC address (like "
		"02:00:00:00:00:01)");
	expect_error(
		"host.mac = 02:ab-cd:ef:01:23\n",
		"t.conf:1: host.mac: '02:ab-cd:ef:01:23' is not a MAC address (like "
		"02:00:00:00:00:01)");
	expect_error(
		"host.mac = 02.ab.cd.ef.01.23\n",
		"t.conf:1: host.mac: '02.ab.cd.ef.01.23' is not a MAC address (like "
		"02:00:00:00:00:01)");
	expect_error(
		"host.mac = 2:ab:cd:ef:01:23:\n",
		"t.conf:1: host.mac: '2:ab:cd:ef:01:23:' is not a MAC address (like "
		"02:00:00:00:00:01)");
	expect_error("host.mac = 01:00:5e:00:00:01\n",
		     "t.conf:1: host.mac: 01:00:5e:00:00:01 is a multicast address");
	expect_error("host.mac = ff:ff:ff:ff:ff:ff\n",
		     "t.conf:1: host.mac: ff:ff:ff:ff:ff:ff is a multicast address");
	expect_error("host.mac = 00:00:00:00:00:00\n",
		     "t.conf:1: host.mac: 00:00:00:00:00:00 is not a host address (leave the value "
		     "empty for the default)");
}

/* Booleans: uroced has no boolean key yet, so a table of the test's own. */
struct bools {
	bool a, b;
	uint64_t big;
};

static const struct uroce_conf_key bool_keys[] = {
	{.section = "s", .name = "a", .type = UROCE_CONF_BOOL, .off = offsetof(struct bools, a),
	 .size = sizeof(bool), .def = "no", .doc = "a boolean"},
	{.section = "s", .name = "b", .type = UROCE_CONF_BOOL, .off = offsetof(struct bools, b),
	 .size = sizeof(bool), .def = "yes", .doc = "another"},
	{.section = "t", .name = "big", .type = UROCE_CONF_UINT, .off = offsetof(struct bools, big),
	 .size = 8, .min = 5, .max = 1ull << 40, .def = "5", .doc = "a 64-bit range"},
};

static const struct uroce_conf_table bool_table = {
	.keys = bool_keys, .nkeys = 3, .obj_size = sizeof(struct bools), .title = "# test",
};

Test(conf, booleans_and_other_tables)
{
	const char *yes[] = {"yes", "true", "1", "YES", "True"},
		   *no[] = {"no", "false", "0", "No", "FALSE"};
	struct bools b;
	char text[64];

	uroce_conf_table_defaults(&bool_table, &b);
	cr_expect(!b.a && b.b && b.big == 5);
	for (int i = 0; i < 5; i++) {
		snprintf(text, sizeof(text), "[s]\na = %s\nb = %s\n", yes[i], no[i]);
		cr_expect_eq(uroce_conf_table_parse(&bool_table, &b, text, strlen(text), "b", err,
						    sizeof(err)), 0, "%s", err);
		cr_expect(b.a && !b.b);
	}
	for (const char *const *bad = (const char *const[]){"y", "on", "2", "", "yess", NULL}; *bad;
	     bad++) {
		snprintf(text, sizeof(text), "s.a = %s\n", *bad);
		cr_expect_eq(uroce_conf_table_parse(&bool_table, &b, text, strlen(text), "b", err,
						    sizeof(err)), -EINVAL);
		snprintf(text, sizeof(text),
			 "b:1: s.a: '%s' is not a boolean (yes, no, true, false, 1, 0)", *bad);
		cr_expect_str_eq(err, text);
	}
	cr_expect_eq(uroce_conf_table_set(&bool_table, &b, "t.big=1099511627776", err, sizeof(err)),
		     0);
	cr_expect_eq(b.big, 1ull << 40);
	cr_expect_eq(uroce_conf_table_set(&bool_table, &b, "t.big=1099511627777", err, sizeof(err)),
		     -EINVAL);
	cr_expect_str_eq(err, "--set t.big=1099511627777: t.big: 1099511627777 is out of range "
			 "5..1099511627776");
}

/* ---- --set, load, all-or-nothing ----------------------------------------------------- */

Test(conf, set_overrides_the_file)
{
	struct uroce_conf c;

	expect_ok(&c, "[port]\nmtu = 9000\n[host]\nipv4 = 10.0.0.1, 10.0.0.2\n");
	cr_expect_eq(uroce_conf_set(&c, "port.mtu=4200", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(c.port.mtu, 4200);
	cr_expect_eq(uroce_conf_set(&c, "port.mtu = 4300", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(c.port.mtu, 4300);
	/* a list is replaced whole */
	cr_expect_eq(uroce_conf_set(&c, "host.ipv4=192.168.0.1", err, sizeof(err)), 0);
	cr_expect_eq(c.host.n_ipv4, 1);
	cr_expect_eq(c.host.ipv4[1].s_addr, 0);
	cr_expect_eq(uroce_conf_set(&c, "host.ipv4=", err, sizeof(err)), 0);
	cr_expect_eq(c.host.n_ipv4, 0);
	cr_expect_eq(uroce_conf_set(&c, "capture.file=/tmp/a b.pcap", err, sizeof(err)), 0);
	cr_expect_str_eq(c.capture.file, "/tmp/a b.pcap");
	cr_expect_eq(uroce_conf_set(&c, "log.level=debug", err, sizeof(err)), 0);
	cr_expect_eq(c.log.level, UROCE_CONF_LOG_DEBUG);
	/* the same key twice on the command line: the last wins */
	cr_expect_eq(uroce_conf_set(&c, "port.vlan=5", err, sizeof(err)), 0);
	cr_expect_eq(uroce_conf_set(&c, "port.vlan=6", err, sizeof(err)), 0);
	cr_expect_eq(c.port.vlan, 6);

	struct uroce_conf before = c;

	cr_expect_eq(uroce_conf_set(&c, "port.mtu=100", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "--set port.mtu=100: port.mtu: 100 is out of range 576..9216");
	cr_expect_eq(uroce_conf_set(&c, "mtu=1500", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "--set mtu=1500: key mtu outside a section: write section.mtu");
	cr_expect_eq(uroce_conf_set(&c, "port.mtu", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "--set port.mtu: expected section.key=value: 'port.mtu'");
	cr_expect_eq(uroce_conf_set(&c, "port.mut=1500", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "--set port.mut=1500: unknown key port.mut (did you mean port.mtu?)");
	cr_expect_eq(uroce_conf_set(&c, "port.name=a\nport.mtu=1", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "--set port.name=a\nport.mtu=1: line break in the value");
	cr_expect_eq(memcmp(&c, &before, sizeof(c)), 0);
}

Test(conf, a_failed_parse_changes_nothing)
{
	/* the good lines before the bad one are not applied either */
	expect_error(
		"[port]\nmtu = 9000\nname = x\n[host]\nipv4 = 10.0.0.1\nmac = 01:00:00:00:00:00\n",
		"t.conf:6: host.mac: 01:00:00:00:00:00 is a multicast address");
}

Test(conf, load)
{
	char path[] = "/tmp/uroce-conf-XXXXXX";
	int fd = mkstemp(path);
	struct uroce_conf c;
	FILE *f;

	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	fputs("[port]\nmtu = 2000\n\n[log]\nlevel = warning\nbogus = 1\n", f);
	const off_t good = (off_t)strlen("[port]\nmtu = 2000\n\n[log]\nlevel = warning\n");
	fclose(f);
	uroce_conf_defaults(&c);
	cr_expect_eq(uroce_conf_load(&c, path, err, sizeof(err)), -EINVAL);
	char want[128];

	snprintf(want, sizeof(want), "%s:6: unknown key log.bogus", path);
	cr_expect_str_eq(err, want);
	cr_expect_eq(truncate(path, good), 0);
	cr_expect_eq(uroce_conf_load(&c, path, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(c.port.mtu, 2000);
	cr_expect_eq(c.log.level, UROCE_CONF_LOG_WARNING);

	cr_expect_eq(truncate(path, UROCE_CONF_FILE_MAX + 1), 0);
	cr_expect_eq(uroce_conf_load(&c, path, err, sizeof(err)), -EFBIG);
	snprintf(want, sizeof(want), "%s: larger than 1048576 bytes", path);
	cr_expect_str_eq(err, want);
	unlink(path);
	cr_expect_eq(uroce_conf_load(&c, path, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "%s: No such file or directory", path);
	cr_expect_str_eq(err, want);
}

/* ---- robustness --------------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A parse of anything either succeeds or fails with a message; a failure changes nothing;
 * the message fits whatever buffer it gets. */
static void parse_anything(const char *text, size_t len)
{
	struct uroce_conf c, before;
	char small[16];
	int rc;

	uroce_conf_defaults(&c);
	before = c;
	memset(err, 'x', sizeof(err));
	rc = uroce_conf_parse(&c, text, len, "fuzz", err, sizeof(err));
	cr_assert(rc == 0 || rc == -EINVAL);
	cr_assert_not_null(memchr(err, '\0', sizeof(err)));
	if (rc != 0) {
		cr_assert_eq(strncmp(err, "fuzz:", 5), 0, "%s", err);
		cr_assert_eq(memcmp(&c, &before, sizeof(c)), 0);
	}
	memset(small, 'x', sizeof(small));
	cr_assert_eq(uroce_conf_parse(&c, text, len, "fuzz", small, sizeof(small)), rc);
	cr_assert_not_null(memchr(small, '\0', sizeof(small)));
	uroce_conf_parse(&c, text, len, "fuzz", NULL, 0);
}

Test(conf, garbage_never_crashes)
{
	static const char *const atoms[] = {
		"[", "]", "=", "#", ";", "\"", ",", ".", ":", "-", " ", "\t", "\r", "\n", "\0",
		"port", "host", "mtu", "ipv4", "ipv6", "mac", "level", "socket_mode", "fault",
		"rx_drop", "seed", "0", "1", "9216", "0777", "1e-3", "10.0.0.1", "fe80::1",
		"02:00:00:00:00:01", "debug", "\xff", "\x01", "18446744073709551616", "port.mtu",
	};
	const size_t natoms = sizeof(atoms) / sizeof(atoms[0]);
	char *buf = malloc(8192);

	cr_assert_not_null(buf);
	rng_state = 12345;
	for (int iter = 0; iter < 100000; iter++) {
		size_t len = 0, n = rnd() % 40;

		if (iter % 4 == 0) {
			/* raw bytes */
			n = rnd() % 300;
			for (size_t i = 0; i < n; i++)
				buf[len++] = (char)rnd();
		} else {
			for (size_t i = 0; i < n; i++) {
				const char *a = atoms[rnd() % natoms];
				size_t al = *a ? strlen(a) : 1;

				memcpy(buf + len, a, al);
				len += al;
			}
		}
		parse_anything(buf, len);
		buf[len] = '\0';
		if (memchr(buf, '\0', len) == NULL) {
			struct uroce_conf c;

			uroce_conf_defaults(&c);
			int rc = uroce_conf_set(&c, buf, err, sizeof(err));

			cr_assert(rc == 0 || rc == -EINVAL);
		}
	}
	free(buf);
}

Test(conf, mutated_default_file_never_crashes)
{
	size_t len;
	char *gen = generated(uroce_conf_print_defaults, &len);
	char *buf = malloc(len + 64);

	cr_assert_not_null(buf);
	rng_state = 777;
	for (int iter = 0; iter < 20000; iter++) {
		size_t n = len;

		memcpy(buf, gen, len);
		for (int m = 0, nm = 1 + (int)(rnd() % 4); m < nm; m++) {
			size_t at = rnd() % n;

			switch (rnd() % 3) {
			case 0: /* flip a byte */
				buf[at] = (char)rnd();
				break;
			case 1: /* delete one */
				memmove(buf + at, buf + at + 1, n - at - 1);
				n--;
				break;
			default: /* duplicate one */
				memmove(buf + at + 1, buf + at, n - at);
				n++;
				break;
			}
		}
		parse_anything(buf, n);
	}
	free(buf);
	free(gen);
}
