/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One user's limits (suite limits): [limits] and RLIMIT_MEMLOCK through the verbs of
 * children that take a uid of their own.
 * One file of test_verbs_api (verbs_api_fixture.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_api_fixture.h"

/* ---------------------------------------------------------------- one user's limits */

/*
 * [limits] and RLIMIT_MEMLOCK (lib/rnic/limits.c) through the verbs of unprivileged
 * processes: children of this test that take a uid of their own (no account needed: the
 * daemon knows a client by SO_PEERCRED), on a daemon whose socket anyone may open. The
 * refused verb fails with the kernel's errno; another user is served meanwhile; root is
 * exempt, as from the rdma cgroup controller.
 */

static void limits_init(void)
{
	char why[512], set[256];

	check_library();
	if (vfx_reference())
		cr_skip_test("the limits are the daemon's");
	snprintf(set, sizeof(set),
		 "lcore.idle_yield_us=2 control.socket_mode=0666 limits.qps=%d "
		 "limits.client_qps=%d limits.mr_bytes=%d limits.clients=%d",
		 LIMIT_QPS, LIMIT_CLIENT_QPS, LIMIT_MR_BYTES, LIMIT_CLIENTS);
	if (vfx_daemon_start(&dmn, IPV4, set, why, sizeof(why)) != 0)
		cr_assert_fail("no uroced: %s", why);
	open_ctx();
}

TestSuite(limits, .init = limits_init, .fini = suite_fini, .timeout = 60);

void user_start(struct user_proc *u, uid_t uid, rlim_t memlock, void (*fn)(int report_fd))
{
	int rp[2], gp[2];

	cr_assert_eq(pipe(rp), 0);
	cr_assert_eq(pipe(gp), 0);
	u->pid = fork();
	cr_assert_geq(u->pid, 0);
	if (u->pid == 0) {
		struct rlimit rl = {memlock, memlock};
		char c;

		close(rp[0]);
		close(gp[1]);
		/* RLIM_INFINITY: as high as we may go (a root without CAP_SYS_RESOURCE, in a
		 * container, may not raise the hard limit). */
		if (memlock == RLIM_INFINITY && getrlimit(RLIMIT_MEMLOCK, &rl) == 0)
			rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0 ||
		    (uid && (setgroups(0, NULL) != 0 || setgid(uid) != 0 || setuid(uid) != 0)))
			_exit(100);
		fn(rp[1]);
		/* Until the test says go: the objects stay held meanwhile. */
		if (read(gp[0], &c, 1) != 1)
			_exit(101);
		_exit(0);
	}
	close(rp[1]);
	close(gp[0]);
	u->report_fd = rp[0];
	u->go_fd = gp[1];
	memset(&u->rep, 0, sizeof(u->rep));
	cr_assert_eq(read(u->report_fd, &u->rep, sizeof(u->rep)), (ssize_t)sizeof(u->rep),
		     "the child as uid %u reported nothing", (unsigned)uid);
}

/* Lets the child go and reaps it; @return its exit code. */
int user_done(struct user_proc *u)
{
	int status;

	/* A byte, not the pipe's end: later children hold copies of its write end. */
	cr_assert_eq(write(u->go_fd, "g", 1), 1);
	close(u->go_fd);
	close(u->report_fd);
	cr_assert_eq(waitpid(u->pid, &status, 0), u->pid);
	cr_assert(WIFEXITED(status), "the child died by signal %d", WTERMSIG(status));
	return WEXITSTATUS(status);
}

void report(int fd, int made, int err)
{
	struct user_report r = {made, err};

	if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(102);
}

/* A device of the child's own, a PD and a CQ on it; NULL (errno) if any fails. */
struct ibv_pd *child_pd(struct ibv_cq **cq)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *c = list && list[0] ? ibv_open_device(list[0]) : NULL;
	struct ibv_pd *cpd = c ? ibv_alloc_pd(c) : NULL;

	if (list)
		ibv_free_device_list(list);
	*cq = cpd ? ibv_create_cq(c, 16, NULL, NULL, 0) : NULL;
	return *cq ? cpd : NULL;
}

/* RC QPs until one is refused. */
void child_qps_until_refused(int fd)
{
	struct ibv_cq *cq;
	struct ibv_pd *cpd = child_pd(&cq);
	int made = 0;

	if (!cpd) {
		report(fd, -1, errno);
		return;
	}
	for (;;) {
		struct ibv_qp_init_attr ia = {.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					      .cap = {.max_send_wr = 4, .max_recv_wr = 4,
						      .max_send_sge = 1, .max_recv_sge = 1}};

		if (!ibv_create_qp(cpd, &ia) || made == 2 * LIMIT_QPS)
			break;
		made++;
	}
	report(fd, made, made == 2 * LIMIT_QPS ? 0 : errno);
}

/* Device contexts (connections to the daemon) until one is refused. */
static void child_contexts_until_refused(int fd)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int made = 0;

	while (list && list[0] && made < 2 * LIMIT_CLIENTS && ibv_open_device(list[0]))
		made++;
	report(fd, made, errno);
}

void child_pingpong_reported(int fd)
{
	report(fd, child_pingpong() == FC_OK, 0);
}

Test(limits, a_user_at_its_qp_limit_gets_eagain_and_others_are_served)
{
	struct user_proc a1, a2, a3, b;
	struct ibv_qp *mine[LIMIT_QPS + 1];
	struct ibv_cq *cq;

	/* A connection holds at most limits.client_qps, ... */
	user_start(&a1, UID_A, RLIM_INFINITY, child_qps_until_refused);
	cr_assert_eq(a1.rep.made, LIMIT_CLIENT_QPS, "user A made %d QPs", a1.rep.made);
	cr_assert_eq(a1.rep.err, EAGAIN, "then: %s", strerror(a1.rep.err));
	/* ... and all of a user's connections limits.qps: A's second process gets the rest. */
	user_start(&a2, UID_A, RLIM_INFINITY, child_qps_until_refused);
	cr_assert_eq(a2.rep.made, LIMIT_QPS - LIMIT_CLIENT_QPS, "A's second process made %d QPs",
		     a2.rep.made);
	cr_assert_eq(a2.rep.err, EAGAIN, "%s", strerror(a2.rep.err));
	/* Another user connects two QPs and passes traffic while A holds its limit. */
	user_start(&b, UID_B, RLIM_INFINITY, child_pingpong_reported);
	cr_assert_eq(b.rep.made, 1, "user B's ping-pong beside A's limit failed");
	cr_assert_eq(user_done(&b), 0);
	/* Root is exempt. */
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	cr_assert_not_null(cq);
	for (int i = 0; i <= LIMIT_QPS; i++) {
		mine[i] = qp_make(IBV_QPT_RC, cq, cq, NULL, NULL);
	}
	for (int i = 0; i <= LIMIT_QPS; i++)
		cr_assert_eq(ibv_destroy_qp(mine[i]), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
	/* What A's processes held went with them. */
	cr_assert_eq(user_done(&a1), 0);
	cr_assert_eq(user_done(&a2), 0);
	user_start(&a3, UID_A, RLIM_INFINITY, child_qps_until_refused);
	cr_assert_eq(a3.rep.made, LIMIT_CLIENT_QPS, "after A's processes went: %d QPs",
		     a3.rep.made);
	cr_assert_eq(user_done(&a3), 0);
}

Test(limits, a_user_holds_at_most_its_connections)
{
	struct user_proc a, b;

	user_start(&a, UID_A, RLIM_INFINITY, child_contexts_until_refused);
	cr_assert_eq(a.rep.made, LIMIT_CLIENTS, "user A opened %d contexts", a.rep.made);
	cr_assert_eq(a.rep.err, EAGAIN, "then: %s", strerror(a.rep.err));
	user_start(&b, UID_B, RLIM_INFINITY, child_pingpong_reported);
	cr_assert_eq(b.rep.made, 1, "user B's ping-pong beside A's connections failed");
	cr_assert_eq(user_done(&b), 0);
	cr_assert_eq(user_done(&a), 0);
}

/* Registers @p kib KiB of fresh memory; the MR, or NULL (errno). */
static struct ibv_mr *child_reg(struct ibv_pd *cpd, size_t kib)
{
	void *m = mmap(NULL, kib * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (m == MAP_FAILED)
		return NULL;
	return ibv_reg_mr(cpd, m, kib * 1024, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
}

/* Under RLIMIT_MEMLOCK 64 KiB: 32 KiB is registered, 64 KiB more is refused, and after
 * the 32 KiB go the 64 KiB fit. Report: the step reached (3: all), the refusal's errno. */
static void child_memlock_64k(int fd)
{
	struct ibv_cq *cq;
	struct ibv_pd *cpd = child_pd(&cq);
	struct ibv_mr *small, *big;
	int err;

	if (!cpd || !(small = child_reg(cpd, 32))) {
		report(fd, 0, errno);
		return;
	}
	big = child_reg(cpd, 64);
	err = errno;
	if (big) {
		report(fd, 1, 0);
		return;
	}
	if (ibv_dereg_mr(small) != 0 || !(big = child_reg(cpd, 64))) {
		report(fd, 2, errno);
		return;
	}
	report(fd, 3, err);
}

/* 1 MiB under the same RLIMIT_MEMLOCK: for root (CAP_IPC_LOCK), which may. */
static void child_reg_1m(int fd)
{
	struct ibv_cq *cq;
	struct ibv_pd *cpd = child_pd(&cq);

	report(fd, cpd && child_reg(cpd, 1024), errno);
}

/* MRs of 96 KiB until one is refused (limits.mr_bytes: 256 KiB for the user). */
static void child_mrs_until_refused(int fd)
{
	struct ibv_cq *cq;
	struct ibv_pd *cpd = child_pd(&cq);
	int made = 0;

	while (cpd && made < 8 && child_reg(cpd, 96))
		made++;
	report(fd, made, errno);
}

Test(limits, registration_is_charged_against_memlock_and_mr_bytes)
{
	struct user_proc u;

	user_start(&u, UID_A, 64 * 1024, child_memlock_64k);
	cr_assert_eq(u.rep.made, 3, "RLIMIT_MEMLOCK 64 KiB: stopped at step %d (%s)", u.rep.made,
		     strerror(u.rep.err));
	cr_assert_eq(u.rep.err, ENOMEM, "64 KiB beyond RLIMIT_MEMLOCK: %s", strerror(u.rep.err));
	cr_assert_eq(user_done(&u), 0);
	user_start(&u, 0, 64 * 1024, child_reg_1m);
	cr_assert_eq(u.rep.made, 1, "root, 1 MiB beyond its RLIMIT_MEMLOCK: %s",
		     strerror(u.rep.err));
	cr_assert_eq(user_done(&u), 0);
	/* limits.mr_bytes: two MRs of 96 KiB fit in 256 KiB, a third does not. */
	user_start(&u, UID_B, RLIM_INFINITY, child_mrs_until_refused);
	cr_assert_eq(u.rep.made, 2, "%d MRs of 96 KiB under limits.mr_bytes 256 KiB", u.rep.made);
	cr_assert_eq(u.rep.err, ENOMEM, "%s", strerror(u.rep.err));
	cr_assert_eq(user_done(&u), 0);
}
