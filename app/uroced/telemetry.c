/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The daemon's counters for monitoring systems, the same ones `uroce stat` prints
 * (device-wide, no per-QP lines):
 * - DPDK's telemetry socket (telemetry.dpdk): /uroce/stats, a dict of groups ("transport"
 *   for the unprefixed transport counters, "ip", "cm", "daemon", "port", "objects", ...),
 *   each a dict of counters; /uroce/info: device, port and socket. dpdk-telemetry.py
 *   reads them as any DPDK application's.
 * - Prometheus' text format on TCP (telemetry.prometheus_listen): GET /metrics.
 *
 * Threads: DPDK calls the telemetry callbacks on its own thread, while the counters
 * belong to the poll lcore. The lcore copies them into a snapshot under a mutex at most
 * every UROCED_TELEMETRY_EVERY_NS (uroced_telemetry_publish, from the control poll, which
 * a sleeping loop runs at least every 10 ms); the callbacks read only the snapshot. The
 * Prometheus socket is the lcore's own (in the control poll's epoll) and reads the
 * counters live.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_telemetry.h>

#include "uroced.h"

#define UROCED_TELEMETRY_EVERY_NS 100000000ull
/* How long a Prometheus scrape may take to send its request before it is dropped (a
 * silent one must not hold a slot). */
#define PROM_DEADLINE_NS 2000000000ull

/* ---- DPDK telemetry --------------------------------------------------------------- */

/* The group of counter @p name: its prefix before the first '.', "transport" without. */
static void stat_group(const char *name, char *group, size_t len)
{
	const char *dot = strchr(name, '.');

	if (!dot)
		snprintf(group, len, "transport");
	else
		snprintf(group, len, "%.*s", (int)(dot - name), name);
}

int uroced_telemetry_stats(struct uroced *d, struct rte_tel_data *out)
{
	struct uroced_telemetry *tel = &d->tel;
	char group[UROCE_CTRL_STAT_NAME_MAX], other[UROCE_CTRL_STAT_NAME_MAX];

	rte_tel_data_start_dict(out);
	pthread_mutex_lock(&tel->lock);
	/* A group's counters are not all consecutive (daemon.* come from two places): each
	 * group once, in the order it first appears, with all of its counters. */
	for (int i = 0; i < tel->nsnap; i++) {
		struct rte_tel_data *g;
		bool first = true;

		stat_group(tel->snap[i].name, group, sizeof(group));
		for (int k = 0; k < i && first; k++) {
			stat_group(tel->snap[k].name, other, sizeof(other));
			first = strcmp(group, other) != 0;
		}
		if (!first)
			continue;
		g = rte_tel_data_alloc();
		if (!g)
			break;
		rte_tel_data_start_dict(g);
		for (int k = i; k < tel->nsnap; k++) {
			const char *name = tel->snap[k].name, *dot = strchr(name, '.');

			char key[UROCE_CTRL_STAT_NAME_MAX];

			stat_group(name, other, sizeof(other));
			if (strcmp(group, other))
				continue;
			/* DPDK takes letters, digits and '_' in a name: "fault.rx.dropped" is
			 * group "fault", key "rx_dropped". */
			snprintf(key, sizeof(key), "%s", dot ? dot + 1 : name);
			for (char *p = key; *p; p++)
				if (*p == '.')
					*p = '_';
			rte_tel_data_add_dict_u64(g, key, tel->snap[k].value);
		}
		if (rte_tel_data_add_dict_container(out, group, g, 0) != 0)
			rte_tel_data_free(g);
	}
	pthread_mutex_unlock(&tel->lock);
	return 0;
}

int uroced_telemetry_info(const struct uroced *d, struct rte_tel_data *out)
{
	/* Written once before the loop starts and never again: no lock needed. */
	rte_tel_data_start_dict(out);
	{
	char guid[24];

	snprintf(guid, sizeof(guid), "%016llx",
		 (unsigned long long)be64toh(uroce_rnic_node_guid(d->rnic)));
	rte_tel_data_add_dict_string(out, "node_guid", guid);
	}
	rte_tel_data_add_dict_string(out, "port", d->port.name);
	rte_tel_data_add_dict_string(out, "driver", d->port.driver);
	rte_tel_data_add_dict_string(out, "socket", d->socket_path);
	return 0;
}

void uroced_telemetry_publish(struct uroced *d, uint64_t now_ns)
{
	struct uroced_telemetry *tel = &d->tel;

	if (!d->conf.telemetry.dpdk || now_ns - tel->published_ns < UROCED_TELEMETRY_EVERY_NS)
		return;
	/* The telemetry thread may be copying: take the next turn rather than wait on it. */
	if (pthread_mutex_trylock(&tel->lock) != 0)
		return;
	tel->nsnap = uroce_rnic_stats(d->rnic, tel->snap, UROCED_TEL_STATS_MAX);
	pthread_mutex_unlock(&tel->lock);
	tel->published_ns = now_ns;
}

/* ---- Prometheus ----------------------------------------------------------------------- */

static int prom_listen(const struct uroced *d, const char *spec)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char host[64];
	const char *colon = strrchr(spec, ':');
	unsigned long port;
	char *end;
	int fd, one = 1, rc;

	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(host))
		goto bad;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
	port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || port == 0 || port > 65535 ||
	    inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		goto bad;
	sa.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(fd, UROCED_PROM_CONNS) != 0) {
		rc = -errno;
		UROCED_ERR(d,
			   "telemetry.prometheus_listen %s: %s: use an address of this host and a "
			   "free port",
			   spec, strerror(-rc));
		close(fd);
		return rc;
	}
	return fd;
bad:
	UROCED_ERR(d, "telemetry.prometheus_listen %s: not IPV4-ADDRESS:PORT (e.g. 127.0.0.1:9464)",
		   spec);
	return -EINVAL;
}

/* A metric name from a counter's: "uroce_" and the name with '.' and other characters
 * Prometheus does not take as '_' ("ip.rx_frames" -> "uroce_ip_rx_frames"). */
static void prom_name(const char *name, char *out, size_t len)
{
	size_t n = (size_t)snprintf(out, len, "uroce_");

	for (; *name && n + 1 < len; name++, n++) {
		char ch = *name;

		out[n] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
				 (ch >= '0' && ch <= '9') || ch == '_'
			 ? ch
			 : '_';
	}
	out[n] = '\0';
}

/* Answers a whole request on @p c and closes it. The response fits the socket's send
 * buffer (a few hundred lines); one that does not is cut, and the scraper sees an error. */
static void prom_answer(struct uroced *d, struct uroced_prom_conn *c)
{
	struct uroced_telemetry *tel = &d->tel;
	struct uroce_ctrl_stat *st = tel->scrape;
	char *body = tel->body;
	char head[256], metric[96];
	size_t len = 0;
	int n, hl;
	bool metrics = !strncmp(c->req, "GET /metrics ", 13) || !strncmp(c->req, "GET / ", 6);

	if (metrics) {
		n = uroce_rnic_stats(d->rnic, st, UROCED_TEL_STATS_MAX);
		for (int i = 0; i < n && len < sizeof(tel->body) - 256; i++) {
			prom_name(st[i].name, metric, sizeof(metric));
			len += (size_t)snprintf(body + len, sizeof(tel->body) - len,
						"# TYPE %s untyped\n%s %llu\n", metric, metric,
						(unsigned long long)st[i].value);
		}
	} else {
		len = (size_t)snprintf(body, sizeof(tel->body),
				       "uroced serves GET /metrics only\n");
	}
	hl = snprintf(head, sizeof(head),
		      "HTTP/1.0 %s\r\nContent-Type: text/plain; version=0.0.4\r\n"
		      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
		      metrics ? "200 OK" : "404 Not Found", len);
	if (send(c->fd, head, (size_t)hl, MSG_NOSIGNAL | MSG_DONTWAIT) == hl)
		send(c->fd, body, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	/* The request was read whole, so closing sends FIN, not a reset that could cut
	 * what the peer has not read yet. */
	close(c->fd);
	c->fd = -1;
	d->cnt.prometheus_scrapes += metrics;
}

void uroced_telemetry_serve(struct uroced *d, uint64_t now_ns, bool woke)
{
	struct uroced_telemetry *tel = &d->tel;

	if (tel->prom_fd < 0)
		return;
	for (; woke;) {
		int fd = accept4(tel->prom_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), i;

		if (fd < 0)
			break;
		for (i = 0; i < UROCED_PROM_CONNS && tel->prom[i].fd >= 0; i++)
			;
		if (i == UROCED_PROM_CONNS ||
		    uroced_control_watch(d, fd, UROCED_WOKE_TELEMETRY) != 0) {
			close(fd); /* busy: the scraper retries */
			continue;
		}
		tel->prom[i].fd = fd;
		tel->prom[i].len = 0;
		tel->prom[i].deadline_ns = now_ns + PROM_DEADLINE_NS;
	}
	for (int i = 0; i < UROCED_PROM_CONNS; i++) {
		struct uroced_prom_conn *c = &tel->prom[i];
		ssize_t got;

		if (c->fd < 0 || (!woke && now_ns <= c->deadline_ns))
			continue;
		got = woke ? recv(c->fd, c->req + c->len, sizeof(c->req) - 1 - c->len, MSG_DONTWAIT)
			   : -1;
		if (!woke)
			errno = EAGAIN;
		if (got > 0)
			c->len += (uint32_t)got;
		c->req[c->len] = '\0';
		if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n")) {
			prom_answer(d, c);
		} else if (got == 0 || (got < 0 && errno != EAGAIN) ||
			   c->len == sizeof(c->req) - 1 || now_ns > c->deadline_ns) {
			close(c->fd); /* gone, too long, or too slow */
			c->fd = -1;
		}
	}
}

uint64_t uroced_telemetry_next_deadline(const struct uroced *d)
{
	const struct uroced_telemetry *tel = &d->tel;
	uint64_t t = UINT64_MAX;

	for (int i = 0; i < UROCED_PROM_CONNS; i++)
		if (tel->prom[i].fd >= 0 && tel->prom[i].deadline_ns < t)
			t = tel->prom[i].deadline_ns + 1; /* past it: serve drops at > deadline */
	return t;
}

int uroced_telemetry_init(struct uroced *d, telemetry_cb stats, telemetry_cb info)
{
	struct uroced_telemetry *tel = &d->tel;
	int rc;

	for (int i = 0; i < UROCED_PROM_CONNS; i++)
		tel->prom[i].fd = -1;
	if (d->conf.telemetry.dpdk) {
		uroced_telemetry_publish(d, UROCED_TELEMETRY_EVERY_NS); /* a first snapshot */
		if (rte_telemetry_register_cmd("/uroce/stats", stats,
					       "uroced's counters, as uroce stat prints them, "
					       "by group") != 0 ||
		    rte_telemetry_register_cmd("/uroce/info", info,
					       "uroced's device, port and control socket") != 0)
			UROCED_WARN(d, "telemetry: cannot register /uroce/stats (a second time?)");
	}
	if (!d->conf.telemetry.prometheus_listen[0])
		return 0;
	rc = prom_listen(d, d->conf.telemetry.prometheus_listen);
	if (rc < 0)
		return rc;
	tel->prom_fd = rc;
	rc = uroced_control_watch(d, tel->prom_fd, UROCED_WOKE_TELEMETRY);
	if (rc == 0)
		UROCED_INFO(d, "telemetry: Prometheus metrics at http://%s/metrics",
			    d->conf.telemetry.prometheus_listen);
	return rc;
}

void uroced_telemetry_fini(struct uroced *d)
{
	struct uroced_telemetry *tel = &d->tel;

	/* Scrapers exist only once the listener does; before uroced_telemetry_init ran
	 * (a start that failed earlier) their slots are still zero, which is fd 0. */
	if (tel->prom_fd < 0)
		return;
	for (int i = 0; i < UROCED_PROM_CONNS; i++)
		if (tel->prom[i].fd >= 0)
			close(tel->prom[i].fd);
	close(tel->prom_fd);
	tel->prom_fd = -1;
}
