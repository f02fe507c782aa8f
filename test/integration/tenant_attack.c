/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A hostile tenant of a real uroced: it speaks the control protocol itself (lib/ctrl), as
 * any local program may, and tries one of issue 43's attacks on the daemon's memory and
 * limits. Each attack prints what the daemon answered and exits 0 when the daemon
 * refused it as the kernel would, 1 when it let it through (or died), 2 on a setup error.
 *
 *   tenant_attack SOCKET reg_mr_wrap   REG_MR of three pieces whose lengths sum past 2^64
 *                                      to one page: EINVAL
 *   tenant_attack SOCKET unimport      register 1 MiB, import it on a second context,
 *                                      unimport the original, repeat: ENOMEM once the
 *                                      process's RLIMIT_MEMLOCK is reached
 *   tenant_attack SOCKET mappings      REG_MRs of 1,024 separate pieces from process
 *                                      after process (each within its RLIMIT_MEMLOCK)
 *                                      until refused: ENOMEM at limits.mappings for the
 *                                      user, long before vm.max_map_count
 *   tenant_attack SOCKET connections N open connections until HELLO is refused: EAGAIN
 *                                      at limits.clients; then holds them (until killed)
 *                                      after printing "holding N"
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "uroce_ctrl.h"
#include "uroce_shm.h"

#define PAGE 4096ull

static const char *sock_path;
static int connect_daemon(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock_path);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
		perror("tenant_attack: connect");
		exit(2);
	}
	return s;
}

/* One request; its status (0 or -errno). The reply's payload is copied to @p rep (up to
 * @p rep_len) and its descriptors to @p rep_fds (NULL: closed). A daemon that does not
 * answer is the attack's failure. */
static int call(int s, uint32_t cmd, const void *req, size_t req_len, int fd, void *rep,
		size_t rep_len, int *rep_fds)
{
	static uint32_t seq;
	long rc = uroce_ctrl_call(s, ++seq, cmd, req, req_len, &fd, fd >= 0, rep, rep_len,
				  rep_fds, rep_fds ? UROCE_CTRL_MAX_FDS : 0, NULL);

	if (rc == -EPIPE || rc == -ECONNRESET || rc == -EPROTO || rc == -EIO) {
		fprintf(stderr, "tenant_attack: no reply (%s): the daemon is gone?\n",
			strerror((int)-rc));
		exit(1);
	}
	return (int)rc;
}

static int hello(int s, int *region_fd)
{
	struct uroce_ctrl_hello_req req = {.version = UROCE_CTRL_VERSION, .name = "attacker"};
	int fds[UROCE_CTRL_MAX_FDS] = {-1, -1, -1, -1};
	int rc = call(s, UROCE_CTRL_HELLO, &req, sizeof(req), -1, NULL, 0, fds);

	for (int i = 1; i < UROCE_CTRL_MAX_FDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (region_fd)
		*region_fd = fds[0];
	else if (fds[0] >= 0)
		close(fds[0]);
	return rc;
}

static uint32_t handle_call(int s, uint32_t cmd, const void *req, size_t len, int fd)
{
	struct uroce_ctrl_handle rep = {0};
	int rc = call(s, cmd, req, len, fd, &rep, sizeof(rep), NULL);

	if (rc) {
		fprintf(stderr, "tenant_attack: %s: %s\n", uroce_ctrl_cmd_name(cmd), strerror(-rc));
		exit(2);
	}
	return rep.handle;
}

/* A region of a sealed memfd of @p size bytes (sparse). */
static uint32_t region(int s, uint64_t size)
{
	struct uroce_ctrl_map_region_req req = {.size = size};
	int fd = memfd_create("attack", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, (off_t)size) || fcntl(fd, F_ADD_SEALS, UROCE_SHM_SEALS)) {
		perror("tenant_attack: memfd");
		exit(2);
	}
	return handle_call(s, UROCE_CTRL_MAP_REGION, &req, sizeof(req), fd);
}

static int reg_mr(int s, uint32_t pd, uint64_t length, const struct uroce_ctrl_mr_seg *seg,
		  uint32_t nseg, uint32_t *mr)
{
	static uint8_t buf[sizeof(struct uroce_ctrl_reg_mr_req) +
			   UROCE_CTRL_MR_MAX_SEGS * sizeof(struct uroce_ctrl_mr_seg)];
	struct uroce_ctrl_reg_mr_req *req = (void *)buf;
	struct uroce_ctrl_reg_mr_rep rep = {0};
	int rc;

	*req = (struct uroce_ctrl_reg_mr_req){.pd = pd,
					      .access = IBV_ACCESS_LOCAL_WRITE,
					      .addr = 0x10000000,
					      .iova = 0x10000000,
					      .length = length,
					      .nseg = nseg};
	memcpy(req->seg, seg, nseg * sizeof(*seg));
	rc = call(s, UROCE_CTRL_REG_MR, buf, sizeof(*req) + nseg * sizeof(*seg), -1, &rep,
		  sizeof(rep), NULL);
	if (mr)
		*mr = rep.mr;
	return rc;
}

static int verdict(const char *what, int got, int want)
{
	printf("%s: %s (want %s)\n", what, got ? strerror(-got) : "accepted", strerror(-want));
	return got == want ? 0 : 1;
}

static int attack_reg_mr_wrap(void)
{
	const uint64_t big = 64ull << 20, huge = (1ull << 63) - PAGE;
	int s = connect_daemon();
	uint32_t pd, small, sparse;

	if (hello(s, NULL))
		return 2;
	pd = handle_call(s, UROCE_CTRL_ALLOC_PD, NULL, 0, -1);
	small = region(s, big);
	sparse = region(s, huge);
	struct uroce_ctrl_mr_seg seg[3] = {
		{.region = small, .length = big},
		{.region = sparse, .length = huge},
		{.region = sparse, .length = (1ull << 63) + 2 * PAGE - big}};
	return verdict("REG_MR of lengths summing to 2^64 + 4 KiB",
		       reg_mr(s, pd, PAGE, seg, 3, NULL), -EINVAL);
}

static int attack_unimport(void)
{
	const uint64_t mib = 1ull << 20;
	struct rlimit rl;
	int a = connect_daemon(), b = connect_daemon(), token, rc = 0;
	unsigned int rounds;
	uint32_t pd, mr;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY) {
		fprintf(stderr, "tenant_attack: run under a finite ulimit -l\n");
		return 2;
	}
	if (hello(a, &token) || hello(b, NULL))
		return 2;
	if (call(b, UROCE_CTRL_IMPORT_CONTEXT, NULL, 0, token, NULL, 0, NULL))
		return 2;
	pd = handle_call(a, UROCE_CTRL_ALLOC_PD, NULL, 0, -1);
	for (rounds = 0; rounds < 64; rounds++) {
		struct uroce_ctrl_mr_seg seg = {.region = region(a, mib), .length = mib};
		struct uroce_ctrl_handle h;

		rc = reg_mr(a, pd, mib, &seg, 1, &mr);
		if (rc)
			break;
		h.handle = mr;
		handle_call(b, UROCE_CTRL_IMPORT_MR, &h, sizeof(h), -1);
		if (call(a, UROCE_CTRL_UNIMPORT_MR, &h, sizeof(h), -1, NULL, 0, NULL))
			return 2;
	}
	printf("registered %u MiB under ulimit -l %llu KiB\n", rounds,
	       (unsigned long long)rl.rlim_cur / 1024);
	if (rounds > rl.rlim_cur / mib)
		return verdict("registrations past RLIMIT_MEMLOCK", 0, -ENOMEM);
	return verdict("the registration past RLIMIT_MEMLOCK", rc, -ENOMEM);
}

/* One process's REG_MRs of 1,024 separate pages each, until refused: how many passed and
 * the status that ended it, written to @p out; then it holds them until killed. */
static void mappings_of_one_process(int out)
{
	static struct uroce_ctrl_mr_seg seg[UROCE_CTRL_MR_MAX_SEGS];
	int s = connect_daemon(), rc = 0, got[2];
	uint32_t pd, r;
	unsigned int n;

	if (hello(s, NULL))
		_exit(2);
	pd = handle_call(s, UROCE_CTRL_ALLOC_PD, NULL, 0, -1);
	/* Every other page: pieces that no mapping can merge. */
	r = region(s, 2 * UROCE_CTRL_MR_MAX_SEGS * PAGE);
	for (unsigned int i = 0; i < UROCE_CTRL_MR_MAX_SEGS; i++)
		seg[i] = (struct uroce_ctrl_mr_seg){.region = r, .offset = 2 * i * PAGE,
						    .length = PAGE};
	for (n = 0; rc == 0 && n < 80; n++)
		rc = reg_mr(s, pd, UROCE_CTRL_MR_MAX_SEGS * PAGE, seg, UROCE_CTRL_MR_MAX_SEGS,
			    NULL);
	got[0] = (int)n - 1;
	got[1] = rc;
	if (write(out, got, sizeof(got)) != sizeof(got))
		_exit(2);
	pause();
	_exit(0);
}

/* Each process may pin only its RLIMIT_MEMLOCK (two such MRs at 8 MiB), so the attacker
 * uses process after process, each holding what it got, until one is refused before its
 * first MR: at limits.mappings for the user, whatever each process's own limit. */
static int attack_mappings(void)
{
	unsigned int total = 0, procs;
	pid_t kids[64];
	int p[2], got[2] = {0, 0};

	if (pipe(p))
		return 2;
	for (procs = 0; procs < 64; procs++) {
		kids[procs] = fork();
		if (kids[procs] == 0)
			mappings_of_one_process(p[1]);
		if (kids[procs] < 0 || read(p[0], got, sizeof(got)) != sizeof(got))
			return 2;
		total += (unsigned int)got[0];
		if (got[0] == 0)
			break;
	}
	for (unsigned int k = 0; k <= procs && k < 64; k++)
		kill(kids[k], SIGKILL);
	while (wait(NULL) > 0)
		;
	printf("%u REG_MRs of %u pieces in %u processes before one was refused its first\n",
	       total, UROCE_CTRL_MR_MAX_SEGS, procs + 1);
	if (procs == 64 || total * UROCE_CTRL_MR_MAX_SEGS > 65530 / 2)
		return verdict("more than half of vm.max_map_count", 0, -ENOMEM);
	return verdict("a fresh process's REG_MR past limits.mappings", got[1], -ENOMEM);
}

static int attack_connections(unsigned int max)
{
	unsigned int n;
	int rc = 0;

	for (n = 0; n < max && rc == 0; n++)
		rc = hello(connect_daemon(), NULL);
	rc = verdict("the HELLO past limits.clients", rc, -EAGAIN);
	printf("holding %u\n", n - 1);
	fflush(stdout);
	if (rc)
		return 1;
	pause();
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: tenant_attack SOCKET reg_mr_wrap|unimport|mappings|"
				"connections N\n");
		return 2;
	}
	sock_path = argv[1];
	if (!strcmp(argv[2], "reg_mr_wrap"))
		return attack_reg_mr_wrap();
	if (!strcmp(argv[2], "unimport"))
		return attack_unimport();
	if (!strcmp(argv[2], "mappings"))
		return attack_mappings();
	if (!strcmp(argv[2], "connections") && argc == 4)
		return attack_connections((unsigned int)strtoul(argv[3], NULL, 0));
	fprintf(stderr, "tenant_attack: no attack %s\n", argv[2]);
	return 2;
}
