/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rights the daemon grants only as the kernel proves them (suite rights).
 * One file of test_verbs_api (verbs_api_fixture.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "uroce_ctrl.h" /* the rights suite speaks the protocol on a connection of its own */
#include "uroce_wire.h"
#include "verbs_api_fixture.h"

/* ---------------------------------------------------------------- rights */

/*
 * Rights the daemon grants only as the kernel proves them: CAP_NET_RAW over the user
 * namespace that owns the device's network namespace (a raw packet QP), what the process
 * that connected may pin (RLIMIT_MEMLOCK, CAP_IPC_LOCK), and a descriptor that carries
 * access (an XRC domain's file). The attackers are children with uids of their own, on a
 * daemon whose socket anyone may open; another tenant is served after each attack.
 */
static void rights_init(void)
{
	char why[512];

	check_library();
	if (vfx_reference())
		cr_skip_test("the rights are the daemon's");
	if (vfx_daemon_start(&dmn, IPV4, "lcore.idle_yield_us=2 control.socket_mode=0666", why,
			     sizeof(why)) != 0)
		cr_assert_fail("no uroced: %s", why);
	open_ctx();
}

TestSuite(rights, .init = rights_init, .fini = suite_fini, .timeout = 60);

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? write(fd, text, strlen(text)) : -1;

	if (fd >= 0)
		close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Makes this process root of a user namespace of its own (`unshare -Ur`; with @p net, a
 * network namespace too, as `unshare -Urn`): every capability, there only. */
static int enter_user_namespace(bool net)
{
	char map[64];
	uid_t uid = getuid();
	gid_t group = getgid();

	/* setuid() from root made us undumpable: /proc/self would be root's to write. */
	if (prctl(PR_SET_DUMPABLE, 1) != 0 ||
	    unshare(CLONE_NEWUSER | (net ? CLONE_NEWNET : 0)) != 0)
		return -1;
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	if (write_file("/proc/self/setgroups", "deny") != 0 ||
	    write_file("/proc/self/uid_map", map) != 0)
		return -1;
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)group);
	/* Root is not mapped here: the daemon's uid shows as the overflow uid, which the
	 * library trusts only when told (lib/client/server_check.c). An attacker would. */
	setenv("UROCE_SERVER_UID", "65534", 1);
	return write_file("/proc/self/gid_map", map);
}

/* A raw packet QP as the root of a user namespace: report made -2 if there is none. */
static void child_userns_raw_qp(int fd)
{
	if (enter_user_namespace(false) != 0) {
		report(fd, -2, errno);
		return;
	}
	child_raw_qp(fd);
}

/* The same with a network namespace of its own, where a packet socket is the child's
 * to open: it shows the daemon one, of the wrong namespace. */
static void child_userns_netns_raw_qp(int fd)
{
	int s;

	if (enter_user_namespace(true) != 0) {
		report(fd, -2, errno);
		return;
	}
	s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (s < 0) {
		report(fd, -3, errno);
		return;
	}
	close(s);
	child_raw_qp(fd);
}

/* What every rights case ends with: another user's ping-pong runs, whatever the attacker
 * did before. */
static void another_user_is_served(void)
{
	struct user_proc u;

	user_start(&u, UID_B, RLIM_INFINITY, child_pingpong_reported);
	cr_assert_eq(u.rep.made, 1, "another user's ping-pong");
	cr_assert_eq(user_done(&u), 0);
}

/* After `unshare -Ur` a process has CAP_NET_RAW in its effective set, over its own user
 * namespace only: the kernel would give it no packet socket of our network namespace,
 * and Linux no raw packet QP (rdma_dev_has_raw_cap). The daemon read CapEff from /proc
 * and gave it one, with flows that saw every tenant's frames. */
Test(rights, raw_qp_needs_cap_net_raw_in_the_daemons_user_namespace)
{
	struct user_proc u;

	user_start(&u, UID_A, RLIM_INFINITY, child_userns_raw_qp);
	if (u.rep.made == -2) {
		user_done(&u);
		cr_skip_test("no user namespace for uid %d: %s", UID_A, strerror(u.rep.err));
	}
	cr_assert_eq(u.rep.made, 0, "a raw packet QP for the root of a user namespace");
	cr_assert_eq(u.rep.err, EPERM, "%s", strerror(u.rep.err));
	cr_assert_eq(user_done(&u), 0);
	user_start(&u, UID_A, RLIM_INFINITY, child_userns_netns_raw_qp);
	cr_assert_eq(u.rep.made, 0, "a raw packet QP for a packet socket of another netns (%d, %s)",
		     u.rep.made, strerror(u.rep.err));
	cr_assert_eq(u.rep.err, EPERM, "%s", strerror(u.rep.err));
	cr_assert_eq(user_done(&u), 0);
	/* Root's works, and another tenant is served. */
	user_start(&u, 0, RLIM_INFINITY, child_raw_qp);
	cr_assert_eq(u.rep.made, 1, "root's raw packet QP: %s", strerror(u.rep.err));
	cr_assert_eq(user_done(&u), 0);
	another_user_is_served();
}

/* ---- the control protocol by hand: a connection whose peer is another process ---- */

static int ctrl_call(int s, uint16_t cmd, const void *req, uint32_t req_len, const int *fds,
		     unsigned int nfds, void *rep, uint32_t rep_len)
{
	static uint32_t seq;
	long rc = uroce_ctrl_call(s, ++seq, cmd, req, req_len, fds, nfds, rep, rep_len, NULL, 0,
				  NULL);

	return rc == -EPROTO ? -EIO : (int)rc;
}

/* On connection @p s: HELLO, a PD, and an MR of @p bytes. 0 or -errno. */
static int ctrl_reg_mr(int s, uint64_t bytes)
{
	struct uroce_ctrl_hello_req hello = {.version = UROCE_CTRL_VERSION, .pid = getpid(),
					     .name = "lender"};
	struct uroce_ctrl_hello_rep hello_rep;
	struct uroce_ctrl_handle pdh, region;
	struct uroce_ctrl_map_region_req map = {.size = bytes};
	struct {
		struct uroce_ctrl_reg_mr_req r;
		struct uroce_ctrl_mr_seg seg;
	} mr = {0};
	struct uroce_ctrl_reg_mr_rep mr_rep;
	int memfd, rc;

	rc = ctrl_call(s, UROCE_CTRL_HELLO, &hello, sizeof(hello), NULL, 0, &hello_rep,
		       sizeof(hello_rep));
	if (rc == 0)
		rc = ctrl_call(s, UROCE_CTRL_ALLOC_PD, NULL, 0, NULL, 0, &pdh, sizeof(pdh));
	if (rc)
		return rc;
	memfd = memfd_create("lender", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (memfd < 0 || ftruncate(memfd, (off_t)bytes) != 0 ||
	    fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0)
		return -errno;
	rc = ctrl_call(s, UROCE_CTRL_MAP_REGION, &map, sizeof(map), &memfd, 1, &region,
		       sizeof(region));
	close(memfd);
	if (rc)
		return rc;
	mr.r.pd = pdh.handle;
	mr.r.access = IBV_ACCESS_LOCAL_WRITE;
	mr.r.addr = mr.r.iova = 0x10000000;
	mr.r.length = bytes;
	mr.r.nseg = 1;
	mr.seg.region = region.handle;
	mr.seg.length = bytes;
	return ctrl_call(s, UROCE_CTRL_REG_MR, &mr, sizeof(mr), NULL, 0, &mr_rep, sizeof(mr_rep));
}

/* A connection to the daemon made by a child of ours, which then runs @p then. */
static int connect_by_child(pid_t *child, void (*then)(void))
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -1;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", dmn.sock);
	*child = fork();
	if (*child == 0) {
		if (connect(s, (struct sockaddr *)&a, sizeof(a)) != 0)
			_exit(1);
		then();
		_exit(0);
	}
	if (*child < 0) {
		close(s);
		return -1;
	}
	return s;
}

/* The setuid program the connecting child becomes (a setuid root copy of sleep). */
static char setuid_waiter[256];

static void exec_setuid_waiter(void)
{
	execl(setuid_waiter, "uroce-suidwait", "30", (char *)NULL);
}

/* Is @p pid running as effective uid 0 (Uid: real effective saved fs)? */
static bool runs_as_root(pid_t pid)
{
	char path[64], line[128];
	unsigned int real, effective;
	bool yes = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %u %u", &real, &effective) == 2) {
			yes = effective == 0;
			break;
		}
	fclose(f);
	return yes;
}

/* Under RLIMIT_MEMLOCK 64 KiB: a child connects and execs a setuid root program that
 * waits; on the child's connection we register 1 MiB. Report: the MR made, the errno. */
static void child_setuid_lender(int fd)
{
	pid_t waiter = -1;
	int s = connect_by_child(&waiter, exec_setuid_waiter), rc;

	for (int i = 0; s >= 0 && i < 500 && !runs_as_root(waiter); i++)
		usleep(10000);
	if (s < 0 || !runs_as_root(waiter)) {
		if (waiter > 0) {
			kill(waiter, SIGKILL);
			waitpid(waiter, NULL, 0);
		}
		report(fd, -2, 0);
		return;
	}
	rc = ctrl_reg_mr(s, 1 << 20);
	kill(waiter, SIGKILL); /* ours to kill: its real uid is ours */
	waitpid(waiter, NULL, 0);
	report(fd, rc == 0, -rc);
}

/* A setuid root copy of sleep in a fresh folder, for child_setuid_lender. */
static bool make_setuid_waiter(char *dir, size_t dir_len)
{
	char cmd[512];

	snprintf(dir, dir_len, "/tmp/uroce-suid-XXXXXX");
	if (!mkdtemp(dir) || chmod(dir, 0755) != 0)
		return false;
	snprintf(setuid_waiter, sizeof(setuid_waiter), "%s/uroce-suidwait", dir);
	snprintf(cmd, sizeof(cmd), "install -o root -g root -m 4755 \"$(command -v sleep)\" %s",
		 setuid_waiter);
	return system(cmd) == 0;
}

static void remove_setuid_waiter(const char *dir)
{
	unlink(setuid_waiter);
	rmdir(dir);
}

/* The limit is what the process that connected may pin, as the kernel's ib_umem_get()
 * decides for the process that registers. The daemon read CAP_IPC_LOCK and the limit
 * from /proc/<pid> at each registration: a child that connected and then became a setuid
 * root program (passwd at its prompt) lent the connection its capabilities, and 1 GiB
 * was registered under `ulimit -l 64`. */
Test(rights, a_setuid_exec_lends_the_connection_no_memlock)
{
	struct user_proc u;
	char dir[64];

	cr_assert(make_setuid_waiter(dir, sizeof(dir)), "a setuid copy of sleep in %s", dir);
	user_start(&u, UID_A, 64 * 1024, child_setuid_lender);
	remove_setuid_waiter(dir);
	if (u.rep.made == -2) {
		user_done(&u);
		cr_skip_test("the setuid copy did not run as root (nosuid, no_new_privs?)");
	}
	cr_assert_eq(u.rep.made, 0, "1 MiB registered under RLIMIT_MEMLOCK 64 KiB");
	cr_assert_eq(u.rep.err, ENOMEM, "%s", strerror(u.rep.err));
	cr_assert_eq(user_done(&u), 0);
	another_user_is_served();
}

static void no_more(void)
{
}

/* Under RLIMIT_MEMLOCK 64 KiB: a child connects and exits; report its pid, wait for the
 * test to give the pid to a root process, then register 1 MiB on the connection. */
static void child_pid_lender(int fd)
{
	pid_t gone = -1;
	int s = connect_by_child(&gone, no_more), rc;

	if (s < 0 || waitpid(gone, NULL, 0) != gone) {
		report(fd, -1, errno);
		return;
	}
	report(fd, (int)gone, 0);
	/* Until the pid is taken again (by the test's root process: a kill from us is then
	 * EPERM, no longer ESRCH). */
	for (int i = 0; i < 1000 && kill(gone, 0) != 0 && errno == ESRCH; i++)
		usleep(10000);
	rc = ctrl_reg_mr(s, 1 << 20);
	report(fd, rc == 0, -rc);
}

/* The same pid, once its process is gone, given to a root process: the number the daemon
 * read from /proc/<pid> was that process's. */
Test(rights, a_reused_pid_lends_the_connection_no_memlock)
{
	struct user_proc u;
	pid_t gone, root_proc = -1;
	char last[32];

	user_start(&u, UID_A, 64 * 1024, child_pid_lender);
	gone = (pid_t)u.rep.made;
	cr_assert_gt(gone, 1, "the child's child: %s", strerror(u.rep.err));
	/* The next pid the kernel hands out (pid namespace's ns_last_pid): others fork
	 * meanwhile on a busy machine, so a few tries. */
	for (int i = 0; i < 50 && root_proc != gone; i++) {
		if (root_proc > 0) {
			kill(root_proc, SIGKILL);
			waitpid(root_proc, NULL, 0);
		}
		snprintf(last, sizeof(last), "%d", (int)gone - 1);
		if (write_file("/proc/sys/kernel/ns_last_pid", last) != 0)
			break;
		root_proc = fork();
		if (root_proc == 0) {
			pause();
			_exit(0);
		}
	}
	if (root_proc != gone) {
		if (root_proc > 0) {
			kill(root_proc, SIGKILL);
			waitpid(root_proc, NULL, 0);
		}
		kill(u.pid, SIGKILL);
		waitpid(u.pid, NULL, 0);
		close(u.report_fd);
		close(u.go_fd);
		cr_skip_test("pid %d went to another process", (int)gone);
	}
	memset(&u.rep, 0, sizeof(u.rep));
	cr_assert_eq(read(u.report_fd, &u.rep, sizeof(u.rep)), (ssize_t)sizeof(u.rep));
	kill(root_proc, SIGKILL);
	waitpid(root_proc, NULL, 0);
	cr_assert_eq(u.rep.made, 0, "1 MiB registered under RLIMIT_MEMLOCK 64 KiB");
	cr_assert_eq(u.rep.err, ENOMEM, "%s", strerror(u.rep.err));
	cr_assert_eq(user_done(&u), 0);
	another_user_is_served();
}

static char xrc_victim_file[128];

/* Another user's XRC domain through an O_PATH descriptor of its 0600 file, which needs
 * no permission on the file. Report: a domain opened, the errno. */
static void child_xrcd_by_o_path(int fd)
{
	struct ibv_cq *cq;
	struct ibv_pd *cpd = child_pd(&cq);
	struct ibv_xrcd *x;
	int path_fd;

	if (!cpd || open(xrc_victim_file, O_RDONLY | O_CLOEXEC) >= 0 || errno != EACCES) {
		report(fd, -1, errno);
		return;
	}
	path_fd = open(xrc_victim_file, O_PATH | O_CLOEXEC);
	if (path_fd < 0) {
		report(fd, -1, errno);
		return;
	}
	errno = 0;
	x = xrcd_open(cpd->context, path_fd, 0);
	report(fd, x != NULL, x ? 0 : errno);
}

/* Linux's ib_uverbs_open_xrcd takes the file with fdget(), which refuses an O_PATH
 * descriptor (EBADF): only an open that checked the file's permissions names a domain.
 * The daemon only looked at the descriptor's inode, and another user opened the victim's
 * domain, its target QPs and SRQs with it. */
Test(rights, an_o_path_descriptor_opens_no_xrc_domain)
{
	struct ibv_xrcd *mine, *again;
	struct user_proc u;
	char dir[64];
	int fd, path_fd, ro_fd;

	snprintf(dir, sizeof(dir), "/tmp/uroce-xrc-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chmod(dir, 0755), 0);
	snprintf(xrc_victim_file, sizeof(xrc_victim_file), "%s/domain", dir);
	fd = open(xrc_victim_file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	mine = xrcd_open(ctx, fd, O_CREAT);
	cr_assert_not_null(mine, "the owner's domain: %s", strerror(errno));
	user_start(&u, UID_A, RLIM_INFINITY, child_xrcd_by_o_path);
	cr_expect_eq(u.rep.made, 0, "another user opened the domain through O_PATH");
	cr_expect_eq(u.rep.err, EBADF, "%s", strerror(u.rep.err));
	cr_assert_eq(user_done(&u), 0);
	/* O_PATH is refused whoever holds it; a descriptor opened for reading names it. */
	path_fd = open(xrc_victim_file, O_PATH | O_CLOEXEC);
	cr_assert_geq(path_fd, 0);
	errno = 0;
	cr_expect_null(xrcd_open(ctx, path_fd, 0), "the owner's O_PATH descriptor");
	cr_expect_eq(errno, EBADF, "%s", strerror(errno));
	ro_fd = open(xrc_victim_file, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(ro_fd, 0);
	again = xrcd_open(ctx, ro_fd, 0);
	cr_expect_not_null(again, "the owner's read-only descriptor: %s", strerror(errno));
	if (again)
		cr_expect_eq(ibv_close_xrcd(again), 0);
	cr_expect_eq(ibv_close_xrcd(mine), 0);
	close(ro_fd);
	close(path_fd);
	close(fd);
	unlink(xrc_victim_file);
	rmdir(dir);
	another_user_is_served();
}
