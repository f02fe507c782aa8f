/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What one ibv_reg_mr of large memory costs (doc/benchmarks.md, "Memory registration"):
 * Ceph's RDMA messenger registers about 1 GiB of fresh buffers in every process (issue
 * 45), and lib/client shares registered memory with the daemon by copying it into a memfd.
 *
 * One registration of SIZE bytes of new private anonymous memory, in one of three states:
 *   fresh    never touched (what Ceph's buffers are when it registers them);
 *   sparse   one page written in every 32 (a header at the start of each 128 KiB buffer);
 *   touched  every page written.
 * Measured around the ibv_reg_mr call alone: wall time (CLOCK_MONOTONIC) and this
 * process's CPU time (getrusage, user + sys). A process measures one registration of one
 * case (a second one would find the memory shared already); reg_mr.sh runs the processes
 * and takes the medians.
 *
 * usage: uroce-bench-reg-mr [-S socket] [-s MiB] fresh|sparse|touched
 * Prints "reg_mr-result: case=C bytes=N wall_ms=W cpu_ms=C user_ms=U sys_ms=S lib=PATH"
 * (lib: the libibverbs ibv_reg_mr came from). Exit 77 when no uroced answers.
 */

#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double tv_ms(struct timeval tv)
{
	return (double)tv.tv_sec * 1e3 + (double)tv.tv_usec / 1e3;
}

int main(int argc, char **argv)
{
	size_t size = (size_t)1 << 30, ps = (size_t)sysconf(_SC_PAGESIZE), stride = 0;
	struct rusage r0, r1;
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	const char *what;
	double t0, t1, user, sys;
	Dl_info lib = {0};
	char *buf;
	int c, n = 0;

	while ((c = getopt(argc, argv, "S:s:h")) != -1) {
		switch (c) {
		case 'S':
			if (setenv("UROCE_SOCKET", optarg, 1) != 0)
				return 1;
			break;
		case 's':
			size = (size_t)strtoull(optarg, NULL, 0) << 20;
			break;
		default:
			fprintf(stderr,
				"usage: %s [-S socket] [-s MiB] fresh|sparse|touched\n", argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	what = optind < argc ? argv[optind] : "";
	if (strcmp(what, "fresh") == 0)
		stride = 0;
	else if (strcmp(what, "sparse") == 0)
		stride = 32 * ps;
	else if (strcmp(what, "touched") == 0)
		stride = ps;
	else {
		fprintf(stderr, "reg_mr: case fresh, sparse or touched, not '%s'\n", what);
		return 2;
	}

	list = ibv_get_device_list(&n);
	if (!list || n < 1) {
		fprintf(stderr, "reg_mr: no device (no uroced at $UROCE_SOCKET)\n");
		return 77;
	}
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd) {
		fprintf(stderr, "reg_mr: no device context or PD: %s\n", strerror(errno));
		return 1;
	}
	buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		fprintf(stderr, "reg_mr: mmap of %zu bytes: %s\n", size, strerror(errno));
		return 1;
	}
	for (size_t off = 0; stride && off < size; off += stride)
		memset(buf + off, 0x5a, ps);

	getrusage(RUSAGE_SELF, &r0);
	t0 = mono_ms();
	mr = ibv_reg_mr(pd, buf, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	t1 = mono_ms();
	getrusage(RUSAGE_SELF, &r1);
	if (!mr) {
		fprintf(stderr, "reg_mr: ibv_reg_mr of %zu bytes: %s\n", size, strerror(errno));
		return 1;
	}
	user = tv_ms(r1.ru_utime) - tv_ms(r0.ru_utime);
	sys = tv_ms(r1.ru_stime) - tv_ms(r0.ru_stime);
	dladdr((void *)ibv_reg_mr, &lib);
	printf("reg_mr-result: case=%s bytes=%zu wall_ms=%.2f cpu_ms=%.2f user_ms=%.2f "
	       "sys_ms=%.2f lib=%s\n",
	       what, size, t1 - t0, user + sys, user, sys, lib.dli_fname ? lib.dli_fname : "?");
	ibv_dereg_mr(mr);
	munmap(buf, size);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
