/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon_fixture.h"
#include "uroce_ctrl.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int fx_daemon_start(struct fx_daemon *d, const char *ipv4, const char *extra_set)
{
	return fx_daemon_start_port(d, ipv4, extra_set, "net_null0,no-rx=1", false);
}

int fx_daemon_start_port(struct fx_daemon *d, const char *ipv4, const char *extra_set,
			 const char *vdev, bool own_netns)
{
	const char *bin = getenv("UROCED");
	char ipset[64], sockset[160], extra[160], vdevarg[160];
	uint64_t t0;

	if (!bin) {
		fprintf(stderr, "fixture: set UROCED to the uroced binary\n");
		return -1;
	}
	snprintf(d->prefix, sizeof(d->prefix), "udfx%d", (int)getpid());
	snprintf(d->sock, sizeof(d->sock), "/tmp/uroce-fx-%d.sock", (int)getpid());
	snprintf(ipset, sizeof(ipset), "host.ipv4=%s", ipv4);
	snprintf(sockset, sizeof(sockset), "control.socket=%s", d->sock);
	snprintf(extra, sizeof(extra), "%s", extra_set ? extra_set : "lcore.idle_yield_us=2");
	snprintf(vdevarg, sizeof(vdevarg), "--vdev=%s", vdev);
	unlink(d->sock);
	d->pid = fork();
	if (d->pid < 0)
		return -1;
	if (d->pid == 0) {
		const char *argv[32];
		char fp[64];
		int n = 0;

		/* No daemon (nor its namespace) outlives a test that Criterion killed. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		snprintf(fp, sizeof(fp), "--file-prefix=%s", d->prefix);
		/* unshare execs the daemon itself: d->pid stays uroced's. */
		if (own_netns) {
			argv[n++] = "unshare";
			argv[n++] = "--net";
		}
		argv[n++] = bin;
		argv[n++] = "--no-pci";
		argv[n++] = "--no-huge";
		argv[n++] = "-m";
		argv[n++] = "256";
		argv[n++] = fp;
		argv[n++] = "--log-level=lib.eal:error";
		argv[n++] = vdevarg;
		argv[n++] = "--";
		argv[n++] = "--set";
		argv[n++] = ipset;
		argv[n++] = "--set";
		argv[n++] = sockset;
		argv[n++] = "--set";
		argv[n++] = "log.level=warning";
		argv[n++] = "--set";
		argv[n++] = extra;
		argv[n++] = "--set";
		argv[n++] = "lcore.idle_sleep_us=200";
		argv[n] = NULL;
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	t0 = mono_ns();
	while (mono_ns() - t0 < 20000000000ull) {
		struct stat st;
		int status;

		if (stat(d->sock, &st) == 0)
			return 0;
		if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
			fprintf(stderr, "fixture: uroced exited (status %d)\n", status);
			d->pid = 0;
			return -1;
		}
		usleep(10000);
	}
	fprintf(stderr, "fixture: uroced did not create %s in 20 s\n", d->sock);
	fx_daemon_stop(d);
	return -1;
}

void fx_daemon_stop(struct fx_daemon *d)
{
	int status;

	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		waitpid(d->pid, &status, 0);
	}
	d->pid = 0;
	unlink(d->sock);
}

uint64_t fx_stat(struct uroce_client_ctx *ctx, const char *name)
{
	struct uroce_ctrl_stat *s;
	uint64_t v = UINT64_MAX;
	int n = uroce_client_stats(ctx, 0, &s), i;

	for (i = 0; i < n; i++)
		if (strcmp(s[i].name, name) == 0)
			v = s[i].value;
	if (n >= 0)
		free(s);
	return v;
}

int fx_wait(struct uroce_client_cq *cq, struct ibv_wc *wc)
{
	uint64_t t0 = mono_ns();

	while (mono_ns() - t0 < 5000000000ull) {
		int n = uroce_client_poll_cq(cq, 1, wc);

		if (n == 1)
			return 0;
		if (n < 0)
			return -1;
	}
	return -1;
}

static int to_rtr_rts(struct uroce_client_qp *qp, uint32_t dqpn, const union ibv_gid *dgid,
		      enum ibv_qp_type type, enum ibv_mtu mtu)
{
	struct ibv_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	if (type == IBV_QPT_UD) {
		a.qkey = 0x11111111;
		rc = uroce_client_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						 IBV_QP_PORT | IBV_QP_QKEY);
	} else {
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				    (type == IBV_QPT_RC ? IBV_ACCESS_REMOTE_ATOMIC : 0);
		rc = uroce_client_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						 IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	}
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (type == IBV_QPT_UD) {
		rc = uroce_client_modify_qp(qp, &a, IBV_QP_STATE);
	} else {
		int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			   IBV_QP_RQ_PSN;

		a.path_mtu = mtu;
		a.dest_qp_num = dqpn;
		a.rq_psn = 0x123;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = *dgid;
		a.ah_attr.grh.sgid_index = 1;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		if (type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 16;
			a.min_rnr_timer = 1;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
		rc = uroce_client_modify_qp(qp, &a, mask);
	}
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x123;
	if (type == IBV_QPT_RC) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 16;
		return uroce_client_modify_qp(qp, &a,
					      IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
						      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
						      IBV_QP_MAX_QP_RD_ATOMIC);
	}
	return uroce_client_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* Says which step failed: a -1 alone left a CI failure unexplained. */
static int fx_pair_fail(const char *step, int err)
{
	fprintf(stderr, "fx_pair_create: %s failed: %s\n", step, strerror(err));
	return -1;
}

int fx_pair_create(struct fx_pair *p, const char *sock, enum ibv_qp_type type, enum ibv_mtu mtu)
{
	union ibv_gid gid;
	int i;

	memset(p, 0, sizeof(*p));
	p->ctx = uroce_client_open(sock);
	if (!p->ctx)
		return fx_pair_fail("uroce_client_open", errno);
	p->pd = uroce_client_alloc_pd(p->ctx);
	if (!p->pd)
		return fx_pair_fail("alloc_pd", errno);
	if (uroce_client_query_gid(p->ctx, 1, 1, &gid))
		return fx_pair_fail("query_gid", errno);
	for (i = 0; i < 2; i++) {
		struct ibv_qp_init_attr ia = {.qp_type = type,
					      .cap = {.max_send_wr = 64, .max_recv_wr = 64,
						      .max_send_sge = 4, .max_recv_sge = 4,
						      .max_inline_data = 64}};

		p->cq[i] = uroce_client_create_cq(p->ctx, 256, NULL, 0);
		if (!p->cq[i])
			return fx_pair_fail("create_cq", errno);
		ia.send_cq = ia.recv_cq = uroce_client_cq_ibv(p->cq[i]);
		p->qp[i] = uroce_client_create_qp(p->pd, &ia);
		if (!p->qp[i])
			return fx_pair_fail("create_qp", errno);
	}
	for (i = 0; i < 2; i++)
		if (to_rtr_rts(p->qp[i], uroce_client_qp_ibv(p->qp[1 - i])->qp_num, &gid, type,
			       mtu))
			return fx_pair_fail("modify_qp to RTR/RTS", errno);
	return 0;
}

void fx_pair_destroy(struct fx_pair *p)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (p->qp[i])
			uroce_client_destroy_qp(p->qp[i]);
		if (p->cq[i])
			uroce_client_destroy_cq(p->cq[i]);
	}
	if (p->pd)
		uroce_client_dealloc_pd(p->pd);
	if (p->ctx)
		uroce_client_close(p->ctx);
	memset(p, 0, sizeof(*p));
}
