/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uroce: the operator's command line for uroced.
 *
 *   uroce [-S socket] stat [--json] [--qp]
 *   uroce [-S socket] capture start FILE | capture stop
 *   uroce [-S socket] fault [rx_drop=R] [rx_dup=R] [rx_reorder=R] [rx_corrupt=R]
 *                           [tx_drop=R] [tx_dup=R] [tx_reorder=R] [tx_corrupt=R]
 *   uroce [-S socket] cm-drop REQ|MRA|REJ|REP|RTU|DREQ|DREP|SIDR_REQ|SIDR_REP [COUNT]
 *   uroce [-S socket] log-level error|warning|info|debug
 *   uroce [-S socket] devinfo
 *   uroce [-S socket] env [-d DEV]
 *   uroce [-S socket] exec [-d DEV] [--] PROGRAM [ARGS...]
 */

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "cli.h"
#include "uroce_client.h"
#include "uroce_cm.h"
#include "uroce_conf.h"
#include "uroce_ctrl.h"

/* Prints the names of the CM attributes cm-drop takes, @p sep between them: the ones the
 * daemon's CM sends, as lib/cm spells them. */
static void print_cm_drop_attrs(FILE *f, const char *sep)
{
	const char *before = "";

	for (uint16_t attr = UROCE_CM_ATTR_CLASS_PORT_INFO; attr <= UROCE_CM_ATTR_APR; attr++) {
		if (uroce_cm_attr_handled(attr)) {
			fprintf(f, "%s%s", before, uroce_cm_attr_name(attr));
			before = sep;
		}
	}
}

/* Prints the log levels' names, @p sep between them, as lib/conf spells them. */
static void print_log_levels(FILE *f, const char *sep)
{
	for (int l = 0; l < UROCE_CONF_LOG__COUNT; l++)
		fprintf(f, "%s%s", l ? sep : "", uroce_conf_log_level_name(l));
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: uroce [-S socket] COMMAND\n"
"  stat [--json] [--qp|qp N]   the daemon's named counters (per QP with --qp; QP N's)\n"
"  capture start FILE          write RoCE frames to a pcap file (path seen by the daemon)\n"
"  capture stop\n"
"  fault [NAME=RATE ...]       fault injection rates in [0,1]: rx_drop rx_dup rx_reorder\n"
"                              rx_corrupt tx_drop tx_dup tx_reorder tx_corrupt (unnamed: 0;\n"
"                              no argument turns every fault off)\n"
"  cm-drop ATTR [COUNT]        drop the next COUNT (1) CM MADs of ATTR this daemon sends:\n"
"                              ");
	print_cm_drop_attrs(f, " ");
	fprintf(f, " (tests)\n"
"  log-level ");
	print_log_levels(f, "|");
	fprintf(f, "\n"
"  devinfo                     device, port and GID table\n"
"  res [show] [qp|cq|mr|pd|cm_id] [--json]\n"
"                              the device's objects with their processes, as rdma res show\n"
"  link [show] [--json]        the port: state, MTU, GIDs, as rdma link show\n"
"  env [-d DEV]                the shell exports that run an RDMA program over uroce\n"
"  exec [-d DEV] [--] PROGRAM [ARGS...]\n"
"                              run an unmodified RDMA program over uroce (the drop-in\n"
"                              libibverbs/librdmacm, the daemon of -S or of device DEV)\n"
"The socket: -S, else $UROCE_SOCKET, else " UROCE_CTRL_DEFAULT_SOCKET
"\n(env and exec: else every running daemon, as the libraries find them).\n");
}

static struct uroce_client_ctx *open_ctx(const char *sock)
{
	struct uroce_client_ctx *ctx = uroce_client_open(sock);

	if (!ctx) {
		const char *path = sock ? sock : getenv(UROCE_CTRL_SOCKET_ENV);

		fprintf(stderr, "uroce: cannot connect to uroced at %s: %s\n",
			path ? path : UROCE_CTRL_DEFAULT_SOCKET, strerror(errno));
	}
	return ctx;
}

void uroce_cli_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static int cmd_stat(struct uroce_client_ctx *ctx, int argc, char **argv)
{
	struct uroce_ctrl_stat *st = NULL;
	char qp_prefix[24] = "";
	bool json = false;
	uint32_t flags = 0;
	int i, n, width = 0;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--qp"))
			flags |= UROCE_CTRL_STATS_PER_QP;
		else if (!strcmp(argv[i], "qp") && i + 1 < argc && !qp_prefix[0]) {
			/* `stat qp N`: that QP's counters only */
			char *end;
			unsigned long qpn = strtoul(argv[++i], &end, 0);

			if (!*argv[i] || *end || qpn > 0xffffff) {
				fprintf(stderr, "uroce stat qp: '%s' is not a QPN\n", argv[i]);
				return 2;
			}
			flags |= UROCE_CTRL_STATS_PER_QP;
			snprintf(qp_prefix, sizeof(qp_prefix), "qp.%lu.", qpn);
		} else {
			fprintf(stderr, "uroce stat: unknown argument '%s'\n", argv[i]);
			return 2;
		}
	}
	n = uroce_client_stats(ctx, flags, &st);
	if (n < 0) {
		fprintf(stderr, "uroce stat: %s\n", strerror(-n));
		return 1;
	}
	if (qp_prefix[0]) {
		int kept = 0;

		for (i = 0; i < n; i++)
			if (!strncmp(st[i].name, qp_prefix, strlen(qp_prefix)))
				st[kept++] = st[i];
		if (!kept) {
			fprintf(stderr, "uroce stat: no QP %.*s (or not one of yours)\n",
				(int)strlen(qp_prefix) - 4, qp_prefix + 3);
			free(st);
			return 1;
		}
		n = kept;
	}
	for (i = 0; i < n; i++) {
		int l = (int)strnlen(st[i].name, UROCE_CTRL_STAT_NAME_MAX);

		if (l > width)
			width = l;
	}
	if (json) {
		printf("{");
		for (i = 0; i < n; i++) {
			char name[UROCE_CTRL_STAT_NAME_MAX + 1];

			memcpy(name, st[i].name, UROCE_CTRL_STAT_NAME_MAX);
			name[UROCE_CTRL_STAT_NAME_MAX] = '\0';
			printf("%s\n  ", i ? "," : "");
			uroce_cli_json_str(name);
			printf(": %lu", (unsigned long)st[i].value);
		}
		printf("%s}\n", n ? "\n" : "");
	} else {
		for (i = 0; i < n; i++)
			printf("%-*.*s %lu\n", width, UROCE_CTRL_STAT_NAME_MAX, st[i].name,
			       (unsigned long)st[i].value);
	}
	free(st);
	return 0;
}

static int admin(struct uroce_client_ctx *ctx, struct uroce_ctrl_admin_req *req,
		 const char *what)
{
	int r = uroce_client_admin(ctx, req);

	if (r) {
		/* The library returns a positive errno (or, from some paths, negative). */
		fprintf(stderr, "uroce %s: %s\n", what, strerror(r < 0 ? -r : r));
		return 1;
	}
	return 0;
}

static int cmd_capture(struct uroce_client_ctx *ctx, int argc, char **argv)
{
	struct uroce_ctrl_admin_req req;

	memset(&req, 0, sizeof(req));
	if (argc == 2 && !strcmp(argv[0], "start")) {
		/* We open the file, with our own rights, and hand the daemon the descriptor:
		 * a root daemon must never open a path a client names. A file we had to
		 * create is removed again if the daemon refuses (a caller who may not
		 * capture leaves nothing behind). */
		int fd = open(argv[1], O_WRONLY | O_TRUNC | O_CLOEXEC), made = 0, rc;

		if (fd < 0 && errno == ENOENT) {
			fd = open(argv[1], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
			made = fd >= 0;
		}
		if (fd < 0) {
			fprintf(stderr, "uroce capture start: %s: %s\n", argv[1], strerror(errno));
			return 1;
		}
		rc = uroce_client_capture_start(ctx, fd);
		close(fd);
		if (rc) {
			if (made)
				unlink(argv[1]);
			fprintf(stderr, "uroce capture start: %s\n", strerror(-rc));
			return 1;
		}
		printf("capture: writing %s\n", argv[1]);
		return 0;
	}
	if (argc == 1 && !strcmp(argv[0], "stop")) {
		req.op = UROCE_CTRL_ADMIN_CAPTURE_STOP;
		if (admin(ctx, &req, "capture stop"))
			return 1;
		printf("capture: stopped\n");
		return 0;
	}
	fprintf(stderr, "uroce capture: start FILE | stop\n");
	return 2;
}

static const char *const fault_names[8] = { "rx_drop", "rx_dup", "rx_reorder", "rx_corrupt",
					    "tx_drop", "tx_dup", "tx_reorder", "tx_corrupt" };

static int cmd_fault(struct uroce_client_ctx *ctx, int argc, char **argv)
{
	struct uroce_ctrl_admin_req req;
	int i, k;

	memset(&req, 0, sizeof(req));
	req.op = UROCE_CTRL_ADMIN_FAULT;
	for (i = 0; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');
		char *end;
		double v;

		for (k = 0; k < 8; k++)
			if (eq && (size_t)(eq - argv[i]) == strlen(fault_names[k]) &&
			    !strncmp(argv[i], fault_names[k], (size_t)(eq - argv[i])))
				break;
		if (k == 8) {
			fprintf(stderr, "uroce fault: '%s': expected NAME=RATE, NAME one of "
				"rx_drop rx_dup rx_reorder rx_corrupt tx_drop tx_dup tx_reorder "
				"tx_corrupt\n", argv[i]);
			return 2;
		}
		v = strtod(eq + 1, &end);
		if (end == eq + 1 || *end || !(v >= 0.0 && v <= 1.0)) {
			fprintf(stderr, "uroce fault: %s: the rate must be in [0,1]\n", argv[i]);
			return 2;
		}
		req.rates[k] = v;
	}
	if (admin(ctx, &req, "fault"))
		return 1;
	printf("fault:");
	for (k = 0; k < 8; k++)
		printf(" %s=%g", fault_names[k], req.rates[k]);
	printf("\n");
	return 0;
}

static int cmd_cm_drop(struct uroce_client_ctx *ctx, int argc, char **argv)
{
	struct uroce_ctrl_admin_req req;
	unsigned long count = 1;
	uint16_t attr;
	char *end;

	if (argc < 1 || argc > 2)
		goto usage;
	/* Only what the daemon's CM sends can be dropped on the way out. */
	attr = uroce_cm_attr_from_name(argv[0]);
	if (!uroce_cm_attr_handled(attr))
		goto usage;
	if (argc == 2) {
		count = strtoul(argv[1], &end, 10);
		if (*end || end == argv[1] || count > 0xffff)
			goto usage;
	}
	memset(&req, 0, sizeof(req));
	req.op = UROCE_CTRL_ADMIN_CM_DROP;
	req.value = (uint32_t)attr << 16 | (uint32_t)count;
	if (admin(ctx, &req, "cm-drop"))
		return 1;
	printf("cm-drop: the next %lu %s MAD(s) this daemon sends are dropped\n", count,
	       uroce_cm_attr_name(attr));
	return 0;
usage:
	fprintf(stderr, "uroce cm-drop: ");
	print_cm_drop_attrs(stderr, "|");
	fprintf(stderr, " [COUNT]\n");
	return 2;
}

static int cmd_log_level(struct uroce_client_ctx *ctx, int argc, char **argv)
{
	struct uroce_ctrl_admin_req req;
	int level;

	if (argc != 1) {
		fprintf(stderr, "uroce log-level: ");
		print_log_levels(stderr, "|");
		fprintf(stderr, "\n");
		return 2;
	}
	level = uroce_conf_log_level_from_name(argv[0]);
	if (level < 0) {
		fprintf(stderr, "uroce log-level: '%s': ", argv[0]);
		print_log_levels(stderr, "|");
		fprintf(stderr, "\n");
		return 2;
	}
	memset(&req, 0, sizeof(req));
	req.op = UROCE_CTRL_ADMIN_LOG_LEVEL;
	req.value = (uint32_t)level; /* uroced takes lib/conf's enum uroce_conf_log_level */
	if (admin(ctx, &req, "log-level"))
		return 1;
	printf("log-level: %s\n", uroce_conf_log_level_name(level));
	return 0;
}

const char *uroce_cli_port_state_str(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_DOWN: return "PORT_DOWN";
	case IBV_PORT_INIT: return "PORT_INIT";
	case IBV_PORT_ARMED: return "PORT_ARMED";
	case IBV_PORT_ACTIVE: return "PORT_ACTIVE";
	case IBV_PORT_ACTIVE_DEFER: return "PORT_ACTIVE_DEFER";
	default: return "invalid state";
	}
}

int uroce_cli_mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128 << m : 0;
}

static int cmd_devinfo(struct uroce_client_ctx *ctx, int argc, char **argv)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	uint64_t guid;
	int r, port, i;

	(void)argv;
	if (argc) {
		fprintf(stderr, "uroce devinfo: no arguments\n");
		return 2;
	}
	r = uroce_client_query_device(ctx, &da);
	if (r) {
		fprintf(stderr, "uroce devinfo: query_device: %s\n", strerror(r));
		return 1;
	}
	guid = be64toh(da.node_guid);
	printf("hca_id:\t%s\n", uroce_client_dev_name(ctx));
	printf("\ttransport:\t\t\tInfiniBand (0)\n");
	printf("\tfw_ver:\t\t\t\t%s\n", da.fw_ver[0] ? da.fw_ver : "0.0.0");
	printf("\tnode_guid:\t\t\t%04x:%04x:%04x:%04x\n", (unsigned int)(guid >> 48) & 0xffff,
	       (unsigned int)(guid >> 32) & 0xffff, (unsigned int)(guid >> 16) & 0xffff,
	       (unsigned int)guid & 0xffff);
	printf("\tvendor_id:\t\t\t0x%04x\n", da.vendor_id);
	printf("\tvendor_part_id:\t\t\t%u\n", da.vendor_part_id);
	printf("\tphys_port_cnt:\t\t\t%u\n", da.phys_port_cnt);
	printf("\tmax_mr_size:\t\t\t0x%llx\n", (unsigned long long)da.max_mr_size);
	printf("\tmax_qp:\t\t\t\t%d\n", da.max_qp);
	printf("\tmax_qp_wr:\t\t\t%d\n", da.max_qp_wr);
	printf("\tmax_sge:\t\t\t%d\n", da.max_sge);
	printf("\tmax_cq:\t\t\t\t%d\n", da.max_cq);
	printf("\tmax_cqe:\t\t\t%d\n", da.max_cqe);
	printf("\tmax_mr:\t\t\t\t%d\n", da.max_mr);
	printf("\tmax_pd:\t\t\t\t%d\n", da.max_pd);
	printf("\tmax_qp_rd_atom:\t\t\t%d\n", da.max_qp_rd_atom);
	printf("\tmax_qp_init_rd_atom:\t\t%d\n", da.max_qp_init_rd_atom);
	printf("\tmax_srq:\t\t\t%d\n", da.max_srq);
	printf("\tmax_srq_wr:\t\t\t%d\n", da.max_srq_wr);
	printf("\tatomic_cap:\t\t\t%s (%d)\n",
	       da.atomic_cap == IBV_ATOMIC_HCA ? "ATOMIC_HCA" :
	       da.atomic_cap == IBV_ATOMIC_GLOB ? "ATOMIC_GLOB" : "ATOMIC_NONE", da.atomic_cap);
	for (port = 1; port <= da.phys_port_cnt; port++) {
		r = uroce_client_query_port(ctx, (uint8_t)port, &pa);
		if (r) {
			fprintf(stderr, "uroce devinfo: query_port %d: %s\n", port, strerror(r));
			return 1;
		}
		printf("\t\tport:\t%d\n", port);
		printf("\t\t\tstate:\t\t\t%s (%d)\n", uroce_cli_port_state_str(pa.state), pa.state);
		printf("\t\t\tmax_mtu:\t\t%d (%d)\n", uroce_cli_mtu_bytes(pa.max_mtu), pa.max_mtu);
		printf("\t\t\tactive_mtu:\t\t%d (%d)\n", uroce_cli_mtu_bytes(pa.active_mtu),
		       pa.active_mtu);
		printf("\t\t\tsm_lid:\t\t\t%d\n", pa.sm_lid);
		printf("\t\t\tport_lid:\t\t%d\n", pa.lid);
		printf("\t\t\tport_lmc:\t\t0x%02x\n", pa.lmc);
		printf("\t\t\tlink_layer:\t\t%s\n",
		       pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand");
		printf("\t\t\tgid_tbl_len:\t\t%d\n", pa.gid_tbl_len);
		for (i = 0; i < pa.gid_tbl_len; i++) {
			union ibv_gid gid;
			char text[INET6_ADDRSTRLEN];
			int k;

			if (uroce_client_query_gid(ctx, (uint8_t)port, i, &gid))
				break;
			if (!memcmp(gid.raw, (uint8_t[16]){ 0 }, 16))
				continue;
			printf("\t\t\tGID[%3d]:\t\t", i);
			for (k = 0; k < 16; k += 2)
				printf("%02x%02x%s", gid.raw[k], gid.raw[k + 1], k < 14 ? ":" : "");
			if (inet_ntop(AF_INET6, gid.raw, text, sizeof(text)))
				printf(", RoCE v2 (%s)", text);
			printf("\n");
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "socket", 1, NULL, 'S' }, { "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 }
	};
	const char *sock = NULL, *cmd;
	struct uroce_client_ctx *ctx;
	int c, r;

	while ((c = getopt_long(argc, argv, "+S:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'S': sock = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	cmd = argv[optind++];
	/* These run a program, or say how to: no connection of their own to keep open. */
	if (!strcmp(cmd, "env"))
		return uroce_cli_env(sock, argc - optind, argv + optind);
	if (!strcmp(cmd, "exec"))
		return uroce_cli_exec(sock, argc - optind, argv + optind);
	if (strcmp(cmd, "stat") && strcmp(cmd, "capture") && strcmp(cmd, "fault") &&
	    strcmp(cmd, "cm-drop") && strcmp(cmd, "log-level") && strcmp(cmd, "devinfo") &&
	    strcmp(cmd, "res") && strcmp(cmd, "link")) {
		fprintf(stderr, "uroce: unknown command '%s'\n", cmd);
		usage(stderr);
		return 2;
	}
	ctx = open_ctx(sock);
	if (!ctx)
		return 1;
	argc -= optind;
	argv += optind;
	if (!strcmp(cmd, "stat"))
		r = cmd_stat(ctx, argc, argv);
	else if (!strcmp(cmd, "capture"))
		r = cmd_capture(ctx, argc, argv);
	else if (!strcmp(cmd, "fault"))
		r = cmd_fault(ctx, argc, argv);
	else if (!strcmp(cmd, "cm-drop"))
		r = cmd_cm_drop(ctx, argc, argv);
	else if (!strcmp(cmd, "log-level"))
		r = cmd_log_level(ctx, argc, argv);
	else if (!strcmp(cmd, "res"))
		r = uroce_cli_res(ctx, argc, argv);
	else if (!strcmp(cmd, "link"))
		r = uroce_cli_link(ctx, argc, argv);
	else
		r = cmd_devinfo(ctx, argc, argv);
	uroce_client_close(ctx);
	return r;
}
