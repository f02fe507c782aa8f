/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_probe: one rdma_cm connection attempt, reported as the event it ends with, for the
 * CM fault tests (test/rdmacm/cm_faults.sh). Plain librdmacm API, so it runs over uroce's
 * drop-in library or the real one alike.
 *
 *   cm_probe server PORT accept|reject   listen on any address; accept (then wait for
 *                                         the peer's disconnect) or reject with private
 *                                         data "uroce-reject"
 *   cm_probe server PORT hold BACKLOG    listen with BACKLOG and never take an event
 *                                         (until killed): requests pile up
 *   cm_probe server PORT late             bind, print "bound", and listen once a line
 *                                         comes on stdin (as qperf's server, which
 *                                         sends its port before it listens); then accept
 *   cm_probe client ADDR PORT [disconnect [LINGER_S]]
 *                                         connect with private data; print the event
 *                                         the attempt ends with, and with "disconnect"
 *                                         disconnect once ESTABLISHED (LINGER_S seconds
 *                                         later)
 *
 * Prints one line per event the test looks at:
 *   event RDMA_CM_EVENT_REJECTED status 28 pdata "uroce-reject" after 0.004 s
 * Exit: 0 when the program ran (whatever the event), 2 on a usage or setup error.
 */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

static double t0;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void print_event(const struct rdma_cm_event *ev)
{
	char pdata[64] = "";
	size_t n = 0;

	if (ev->param.conn.private_data && ev->param.conn.private_data_len) {
		const char *p = ev->param.conn.private_data;

		while (n < sizeof(pdata) - 1 && n < ev->param.conn.private_data_len && p[n] >= 32 &&
		       p[n] < 127) {
			pdata[n] = p[n];
			n++;
		}
		pdata[n] = 0;
	}
	printf("event %s status %d pdata \"%s\" after %.3f s\n", rdma_event_str(ev->event),
	       ev->status, pdata, now_s() - t0);
	fflush(stdout);
}

/* The next event on @ch, printed; NULL when the channel fails. */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev)) {
		perror("cm_probe: rdma_get_cm_event");
		return NULL;
	}
	print_event(ev);
	return ev;
}

static int make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, NULL, &qa)) {
		perror("cm_probe: rdma_create_qp");
		return -1;
	}
	return 0;
}

static int server(const char *port, int reject, int hold_backlog, int late)
{
	static const char no[] = "uroce-reject";
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *listen_id, *id;
	struct rdma_cm_event *ev;
	struct sockaddr_in sin;
	int done = 0;

	if (!ch || rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP))
		return 2;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)atoi(port));
	if (rdma_bind_addr(listen_id, (struct sockaddr *)&sin)) {
		perror("cm_probe: bind");
		return 2;
	}
	if (late) {
		char line[16];

		printf("bound on port %s\n", port);
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 2;
	}
	if (rdma_listen(listen_id, hold_backlog ? hold_backlog : 4)) {
		perror("cm_probe: bind/listen");
		return 2;
	}
	printf("listening on port %s\n", port);
	fflush(stdout);
	if (hold_backlog)
		for (;;)
			pause();
	while (!done && (ev = next_event(ch))) {
		id = ev->id;
		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			if (reject) {
				rdma_reject(id, no, sizeof(no));
				rdma_ack_cm_event(ev);
				rdma_destroy_id(id);
				done = 1;
				continue;
			}
			if (make_qp(id) || rdma_accept(id, NULL)) {
				perror("cm_probe: accept");
				return 2;
			}
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			rdma_ack_cm_event(ev);
			rdma_disconnect(id);
			rdma_destroy_qp(id);
			rdma_destroy_id(id);
			done = 1;
			continue;
		default:
			break;
		}
		rdma_ack_cm_event(ev);
	}
	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(ch);
	return 0;
}

static int client(const char *addr, const char *port, int disconnect, double linger)
{
	static const char hello[] = "uroce-hello";
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct addrinfo *ai;
	int rc = 0;

	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return 2;
	if (getaddrinfo(addr, port, NULL, &ai)) {
		fprintf(stderr, "cm_probe: cannot resolve %s\n", addr);
		return 2;
	}
	t0 = now_s();
	if (rdma_resolve_addr(id, NULL, ai->ai_addr, 2000)) {
		perror("cm_probe: rdma_resolve_addr");
		return 2;
	}
	freeaddrinfo(ai);
	if (!(ev = next_event(ch)) || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED)
		return 0;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, 2000) || !(ev = next_event(ch)) ||
	    ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED)
		return 0;
	rdma_ack_cm_event(ev);
	if (make_qp(id))
		return 2;
	memset(&cp, 0, sizeof(cp));
	cp.private_data = hello;
	cp.private_data_len = sizeof(hello);
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	t0 = now_s();
	if (rdma_connect(id, &cp)) {
		perror("cm_probe: rdma_connect");
		return 2;
	}
	ev = next_event(ch);
	if (ev && ev->event == RDMA_CM_EVENT_ESTABLISHED && disconnect) {
		rdma_ack_cm_event(ev);
		if (linger > 0)
			usleep((useconds_t)(linger * 1e6));
		t0 = now_s();
		rdma_disconnect(id);
		ev = next_event(ch); /* DISCONNECTED, after DREP or the DREQ's timeout */
	}
	if (ev)
		rdma_ack_cm_event(ev);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return rc;
}

int main(int argc, char **argv)
{
	t0 = now_s();
	if (argc == 4 && !strcmp(argv[1], "server") && strcmp(argv[3], "late"))
		return server(argv[2], !strcmp(argv[3], "reject"), 0, 0);
	if (argc == 5 && !strcmp(argv[1], "server") && !strcmp(argv[3], "hold") &&
	    atoi(argv[4]) > 0)
		return server(argv[2], 0, atoi(argv[4]), 0);
	if (argc == 4 && !strcmp(argv[1], "server") && !strcmp(argv[3], "late"))
		return server(argv[2], 0, 0, 1);
	if (argc >= 4 && argc <= 6 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3], argc >= 5 && !strcmp(argv[4], "disconnect"),
			      argc == 6 ? atof(argv[5]) : 0);
	fprintf(stderr, "usage: cm_probe server PORT accept|reject | cm_probe server PORT hold N | "
			"cm_probe server PORT late | "
			"cm_probe client ADDR PORT [disconnect [LINGER_S]]\n");
	return 2;
}
