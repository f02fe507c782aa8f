/* SPDX-License-Identifier: BSD-3-Clause */
/* What every uroce-xfer mode and uroce-bench-verbs stand on, with no verbs call: the
 * clock, error lines, MTU codes, page-aligned buffers and random PSNs. */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "xfer_loops.h"

const char *xfer_prog = "uroce-xfer";
bool xfer_verbose;

uint64_t xfer_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void xfer_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", xfer_prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

enum ibv_mtu xfer_mtu_enum(int mtu)
{
	switch (mtu) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	default: return (enum ibv_mtu)0;
	}
}

int xfer_mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128 << m : 0;
}

/* Page-aligned anonymous memory (zeroed), as the applications' own buffers would be. */
void *xfer_alloc(size_t len)
{
	void *p;

	if (!len)
		len = 1;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		xfer_err("cannot allocate %zu bytes: %s", len, strerror(errno));
		return NULL;
	}
	return p;
}

void xfer_free(void *p, size_t len)
{
	if (p)
		munmap(p, len ? len : 1);
}

uint32_t xfer_rand_psn(void)
{
	static uint64_t state;

	if (!state)
		state = xfer_now_ns() ^ ((uint64_t)getpid() << 32);
	state += 0x9e3779b97f4a7c15ull;
	return (uint32_t)(xfer_mix64(state) & 0xffffff);
}

uint64_t xfer_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}
