/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * `uroce res [show] [qp|cq|mr|pd|cm_id] [--json]` and `uroce link [show] [--json]`: the
 * device's objects and its port as iproute2's `rdma res show` and `rdma link show` print
 * a kernel device's (the same words and columns, so scripts written for one read the
 * other), and JSON for scripts.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "cli.h"
#include "uroce_client.h"
#include "uroce_ctrl.h"

static const char *const res_type_names[] = {
	[UROCE_CTRL_RES_QP] = "qp", [UROCE_CTRL_RES_CQ] = "cq", [UROCE_CTRL_RES_MR] = "mr",
	[UROCE_CTRL_RES_PD] = "pd", [UROCE_CTRL_RES_CM_ID] = "cm_id",
};
#define RES_TYPES (sizeof(res_type_names) / sizeof(res_type_names[0]))

/* rdma's words for QP types and states (iproute2 rdma/res-qp.c). */
static const char *qp_type_str(uint32_t t)
{
	switch (t) {
	case IBV_QPT_RC: return "RC";
	case IBV_QPT_UC: return "UC";
	case IBV_QPT_UD: return "UD";
	case IBV_QPT_RAW_PACKET: return "RAW_PACKET";
	case IBV_QPT_XRC_SEND: return "XRC_INI";
	case IBV_QPT_XRC_RECV: return "XRC_TGT";
	default: return "UNKNOWN";
	}
}

static const char *qp_state_str(uint32_t s)
{
	static const char *const names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "UNKNOWN";
}

/* IBA 14.2.5.6 PortPhysicalState, as rdma link show names them. */
static const char *phys_state_str(uint8_t s)
{
	static const char *const names[] = {
		"NOP", "SLEEP", "POLLING", "DISABLED",
		"PORT_CONFIGURATION_TRAINING", "LINK_UP", "LINK_ERROR_RECOVERY", "PHY_TEST",
	};

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "UNKNOWN";
}

static const char *ps_str(uint32_t ps)
{
	switch (ps) {
	case RDMA_PS_TCP: return "TCP";
	case RDMA_PS_UDP: return "UDP";
	case RDMA_PS_IB: return "IB";
	case RDMA_PS_IPOIB: return "IPOIB";
	default: return "UNKNOWN";
	}
}

/* "10.0.0.1:4791" / "[fe80::1]:4791"; "" for no address. */
static void addr_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "";

	buf[0] = '\0';
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(in->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(in6->sin6_port));
	}
}

/* One field: "name value" as text, "name": value in JSON (a string when @p str). */
struct res_out {
	bool json;
	int fields;
};

static void field_str(struct res_out *o, const char *name, const char *value)
{
	if (o->json) {
		printf("%s", o->fields++ ? "," : "");
		uroce_cli_json_str(name);
		putchar(':');
		uroce_cli_json_str(value);
	} else {
		printf("%s%s %s", o->fields++ ? " " : "", name, value);
	}
}

static void field_num(struct res_out *o, const char *name, unsigned long long v)
{
	if (o->json) {
		printf("%s", o->fields++ ? "," : "");
		uroce_cli_json_str(name);
		printf(":%llu", v);
	} else {
		printf("%s%s %llu", o->fields++ ? " " : "", name, v);
	}
}

static void print_row(struct res_out *o, const char *dev, uint32_t type,
		      const struct uroce_ctrl_res_row *r)
{
	char link[80], src[64], dst[64];

	o->fields = 0;
	printf(o->json ? "{" : "");
	snprintf(link, sizeof(link), "%s/1", dev);
	if (o->json) {
		field_str(o, "ifname", dev);
		field_num(o, "port", 1);
	} else {
		field_str(o, "link", link);
	}
	switch (type) {
	case UROCE_CTRL_RES_QP:
		field_num(o, "lqpn", r->qp.lqpn);
		field_num(o, "rqpn", r->qp.rqpn);
		field_str(o, "type", qp_type_str(r->qp.type));
		field_str(o, "state", qp_state_str(r->qp.state));
		field_num(o, "rq-psn", r->qp.rq_psn);
		field_num(o, "sq-psn", r->qp.sq_psn);
		field_num(o, "send-cqn", r->qp.send_cq);
		field_num(o, "recv-cqn", r->qp.recv_cq);
		if (r->qp.srq)
			field_num(o, "srqn", r->qp.srq);
		break;
	case UROCE_CTRL_RES_CQ:
		field_num(o, "cqn", r->handle);
		field_num(o, "cqe", r->cq.cqe);
		field_num(o, "users", r->cq.users);
		field_str(o, "poll-ctx", r->cq.channel ? "CHANNEL" : "DIRECT");
		break;
	case UROCE_CTRL_RES_MR:
		field_num(o, "mrn", r->handle);
		field_num(o, "rkey", r->mr.rkey);
		field_num(o, "lkey", r->mr.lkey);
		field_num(o, "mrlen", r->mr.length);
		field_num(o, "iova", r->mr.iova);
		break;
	case UROCE_CTRL_RES_PD:
		field_num(o, "pdn", r->handle);
		field_num(o, "users", r->pd.refs);
		break;
	case UROCE_CTRL_RES_CM_ID:
		field_num(o, "cm-idn", r->handle);
		field_num(o, "lqpn", r->cm_id.lqpn);
		field_str(o, "qp-type", qp_type_str(r->cm_id.qp_type));
		field_str(o, "state", r->cm_id.state[0] ? r->cm_id.state : "IDLE");
		field_str(o, "ps", ps_str(r->cm_id.ps));
		addr_str(&r->cm_id.src, src, sizeof(src));
		addr_str(&r->cm_id.dst, dst, sizeof(dst));
		if (src[0])
			field_str(o, "src-addr", src);
		if (dst[0])
			field_str(o, "dst-addr", dst);
		break;
	}
	field_num(o, "pid", r->pid);
	field_str(o, "comm", r->comm);
	printf(o->json ? "}" : "\n");
}

int uroce_cli_res(struct uroce_client_ctx *ctx, int argc, char **argv)
{
	struct res_out o = {0};
	uint32_t type = 0;
	int i, printed = 0;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j")) {
			o.json = true;
		} else if (!strcmp(argv[i], "show") && i == 0) {
			continue;
		} else {
			for (type = 1; type < RES_TYPES; type++)
				if (!strcmp(argv[i], res_type_names[type]))
					break;
			if (type == RES_TYPES) {
				fprintf(stderr,
					"uroce res: unknown argument '%s' (show "
					"qp|cq|mr|pd|cm_id [--json])\n",
					argv[i]);
				return 2;
			}
		}
	}
	printf(o.json ? "[" : "");
	for (uint32_t t = type ? type : 1; t <= (type ? type : RES_TYPES - 1); t++) {
		struct uroce_ctrl_res_row *rows;
		int n = uroce_client_res_list(ctx, t, &rows);

		if (n < 0) {
			fprintf(stderr, "uroce res: %s: %s\n", res_type_names[t], strerror(-n));
			return 1;
		}
		if (!type && !o.json) { /* `uroce res`: counts, as `rdma res` prints them */
			printf("%s%s %d", t == 1 ? "" : " ", res_type_names[t], n);
			free(rows);
			continue;
		}
		for (i = 0; i < n; i++) {
			printf(o.json && printed++ ? "," : "");
			print_row(&o, uroce_client_dev_name(ctx), t, &rows[i]);
		}
		free(rows);
	}
	printf(o.json ? "]\n" : !type ? "\n" : "");
	return 0;
}

int uroce_cli_link(struct uroce_client_ctx *ctx, int argc, char **argv)
{
	struct res_out o = {0};
	struct ibv_port_attr pa;
	char buf[64];
	int r, i, ngids = 0;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j"))
			o.json = true;
		else if (strcmp(argv[i], "show") || i) {
			fprintf(stderr, "uroce link: unknown argument '%s' (show [--json])\n",
				argv[i]);
			return 2;
		}
	}
	r = uroce_client_query_port(ctx, 1, &pa);
	if (r) {
		fprintf(stderr, "uroce link: query_port: %s\n", strerror(r));
		return 1;
	}
	printf(o.json ? "[{" : "");
	if (o.json) {
		field_str(&o, "ifname", uroce_client_dev_name(ctx));
		field_num(&o, "port", 1);
	} else {
		snprintf(buf, sizeof(buf), "%s/1", uroce_client_dev_name(ctx));
		field_str(&o, "link", buf);
	}
	/* rdma prints the state without its PORT_ prefix */
	field_str(&o, "state", uroce_cli_port_state_str(pa.state) + 5);
	field_str(&o, "physical_state", phys_state_str(pa.phys_state));
	field_num(&o, "mtu", (unsigned long long)uroce_cli_mtu_bytes(pa.active_mtu));
	field_num(&o, "max_mtu", (unsigned long long)uroce_cli_mtu_bytes(pa.max_mtu));
	field_str(&o, "link_layer",
		  pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand");
	if (o.json)
		printf(",\"gids\":[");
	for (i = 0; i < pa.gid_tbl_len; i++) {
		union ibv_gid gid;
		char text[INET6_ADDRSTRLEN];

		if (uroce_client_query_gid(ctx, 1, i, &gid))
			break;
		if (!memcmp(gid.raw, (uint8_t[16]){0}, 16) || !inet_ntop(AF_INET6, gid.raw, text,
									 sizeof(text)))
			continue;
		if (o.json) {
			printf("%s{\"index\":%d,\"gid\":", ngids++ ? "," : "", i);
			uroce_cli_json_str(text);
			printf(",\"type\":\"RoCE v2\"}");
		} else {
			snprintf(buf, sizeof(buf), "gid[%d]", i);
			field_str(&o, buf, text);
		}
	}
	printf(o.json ? "]}]\n" : "\n");
	return 0;
}
