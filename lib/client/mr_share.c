/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Moving registered memory onto shared pages, so that RDMA lands in the application's own
 * buffer (perftest's latency test spins on it) and its pointer keeps working.
 *
 * The daemon must write RDMA WRITE and READ-response payloads into the application's own
 * buffer, so the pages behind every MR are shared: each page run of a registration that
 * is not shared yet is copied into a fresh memfd (sealed against resizing, so the daemon
 * can map it without fearing SIGBUS), and the memfd is mapped over the run in place with
 * MAP_FIXED. The pointer the application holds and the bytes behind it are unchanged; the
 * pages are now also reachable from the daemon, which maps the same memfd.
 *
 * A run stays shared after deregistration (it is ordinary memory to the application).
 * Later registrations reuse shared runs, after checking in /proc/self/maps that each is
 * still the mapping we made: an application may unmap memory and get other pages at the
 * same address, and those must be shared anew, not confused with the old ones.
 *
 * Caveat (documented in doc/daemon.md): a thread that writes into a run while it is being
 * moved may lose that write; register before sharing buffers between threads, as verbs
 * applications do.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "client_internal.h"

static uintptr_t page_size(void)
{
	return (uintptr_t)sysconf(_SC_PAGESIZE);
}

/* Is the share still mapped from its memfd, address a at file offset a - start? */
static bool share_intact(const struct cl_share *sh)
{
	char line[512];
	uintptr_t covered = sh->start;
	bool ok = true;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return false;
	while (ok && covered < sh->end && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off, ino;
		unsigned int maj, min;

		if (sscanf(line, "%lx-%lx %*s %lx %x:%x %lu", &lo, &hi, &off, &maj, &min, &ino) !=
		    6)
			continue;
		if (hi <= covered || lo >= sh->end)
			continue;
		ok = lo <= covered && lo >= sh->start && ino == sh->ino &&
		     makedev(maj, min) == sh->dev && off == lo - sh->start;
		covered = hi;
	}
	fclose(f);
	return ok && covered >= sh->end;
}

/* Drops a share whose pages are no longer ours; the daemon closes its fd (MRs it
 * mapped from it keep their pages until deregistered). Called with ctx->share_lock held. */
static void share_remove(struct uroce_client_ctx *ctx, size_t i)
{
	uint32_t region = ctx->shares[i].region;

	memmove(&ctx->shares[i], &ctx->shares[i + 1],
		(ctx->nshares - i - 1) * sizeof(ctx->shares[0]));
	ctx->nshares--;
	(void)cl_release(ctx, UROCE_CTRL_UNMAP_REGION, region);
}

/* Shares [s, e) (page aligned, not shared now): new memfd, copy, map over. */
static int share_new_at(struct uroce_client_ctx *ctx, uintptr_t s, uintptr_t e,
			struct cl_share *out)
{
	size_t len = e - s;
	struct uroce_ctrl_map_region_req req = {.size = len};
	struct uroce_ctrl_handle rep;
	struct iovec local, remote;
	struct stat st;
	void *tmp;
	int fd, rc;

	fd = memfd_create("uroce-mr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) != 0 ||
	    fcntl(fd, F_ADD_SEALS, UROCE_SHM_SEALS) != 0 || fstat(fd, &st) != 0) {
		rc = -errno;
		goto out_fd;
	}
	tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (tmp == MAP_FAILED) {
		rc = -errno;
		goto out_fd;
	}
	/* process_vm_readv on ourselves copies like memcpy but reports unmapped source
	 * pages as EFAULT instead of crashing, as the kernel's ibv_reg_mr would. */
	local = (struct iovec){.iov_base = tmp, .iov_len = len};
	remote = (struct iovec){.iov_base = (void *)s, .iov_len = len};
	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)len) {
		rc = -EFAULT;
		munmap(tmp, len);
		goto out_fd;
	}
	if (mmap((void *)s, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
	    MAP_FAILED) {
		rc = -errno;
		munmap(tmp, len);
		goto out_fd;
	}
	munmap(tmp, len);

	rc = cl_call(ctx, UROCE_CTRL_MAP_REGION, &req, sizeof(req), &fd, 1, &rep, sizeof(rep),
		     NULL, 0);
	if (rc)
		goto out_fd;
	*out = (struct cl_share){.start = s, .end = e, .region = rep.handle,
				 .ino = st.st_ino, .dev = st.st_dev};
out_fd:
	close(fd);
	return rc;
}

/* Shares at least [s, e). Inside a hugetlb mapping the kernel maps over whole huge
 * pages only (EINVAL otherwise), so the share then covers the huge pages around the
 * range: its pages become ordinary shared pages, the registration covers what was asked
 * (a segment may start inside a share), and a later registration in the same huge page
 * finds the share. */
static int share_new(struct uroce_client_ctx *ctx, uintptr_t s, uintptr_t e,
		     struct cl_share *out)
{
	static const uintptr_t huge[] = {(uintptr_t)2 << 20, (uintptr_t)1 << 30};
	int rc = share_new_at(ctx, s, e, out);

	for (size_t i = 0; rc == -EINVAL && i < sizeof(huge) / sizeof(huge[0]); i++)
		rc = share_new_at(ctx, s & ~(huge[i] - 1), (e + huge[i] - 1) & ~(huge[i] - 1),
				  out);
	return rc;
}

static int share_insert(struct uroce_client_ctx *ctx, const struct cl_share *sh)
{
	size_t i;

	if (ctx->nshares == ctx->cap_shares) {
		size_t cap = ctx->cap_shares ? ctx->cap_shares * 2 : 16;
		struct cl_share *n = realloc(ctx->shares, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		ctx->shares = n;
		ctx->cap_shares = cap;
	}
	for (i = 0; i < ctx->nshares && ctx->shares[i].start < sh->start; i++)
		;
	memmove(&ctx->shares[i + 1], &ctx->shares[i], (ctx->nshares - i) * sizeof(*sh));
	ctx->shares[i] = *sh;
	ctx->nshares++;
	return 0;
}

int cl_share_range(struct uroce_client_ctx *ctx, void *addr, size_t length,
		   struct uroce_ctrl_mr_seg **segs_out)
{
	uintptr_t ps = page_size();
	uintptr_t s = (uintptr_t)addr & ~(ps - 1);
	uintptr_t e = ((uintptr_t)addr + length + ps - 1) & ~(ps - 1);
	struct uroce_ctrl_mr_seg *segs = NULL;
	size_t i, nseg = 0, cap = 0;
	uintptr_t at = s;
	int rc;

	if (length == 0 || (uintptr_t)addr + length < (uintptr_t)addr)
		return -EINVAL;
	/* Forget shares overlapping the range that are no longer what we mapped. */
	for (i = 0; i < ctx->nshares;) {
		if (ctx->shares[i].end > s && ctx->shares[i].start < e &&
		    !share_intact(&ctx->shares[i]))
			share_remove(ctx, i);
		else
			i++;
	}
	while (at < e) {
		struct cl_share cur, *hit = NULL;
		uintptr_t next = e;

		for (i = 0; i < ctx->nshares; i++) {
			if (ctx->shares[i].start <= at && ctx->shares[i].end > at) {
				hit = &ctx->shares[i];
				break;
			}
			if (ctx->shares[i].start > at && ctx->shares[i].start < next)
				next = ctx->shares[i].start;
		}
		if (hit) {
			cur = *hit;
		} else {
			rc = share_new(ctx, at, next, &cur);
			if (rc)
				goto fail;
			rc = share_insert(ctx, &cur);
			if (rc)
				goto fail;
		}
		if (nseg == cap) {
			struct uroce_ctrl_mr_seg *n;

			cap = cap ? cap * 2 : 8;
			n = realloc(segs, cap * sizeof(*n));
			if (!n) {
				rc = -ENOMEM;
				goto fail;
			}
			segs = n;
		}
		segs[nseg] = (struct uroce_ctrl_mr_seg){
			.region = cur.region,
			.offset = at - cur.start,
			.length = (cur.end < e ? cur.end : e) - at,
		};
		at += segs[nseg].length;
		nseg++;
		if (nseg > UROCE_CTRL_MR_MAX_SEGS) {
			rc = -ENOMEM;
			goto fail;
		}
	}
	*segs_out = segs;
	return (int)nseg;
fail:
	free(segs);
	return rc;
}

void cl_share_forget_all(struct uroce_client_ctx *ctx)
{
	free(ctx->shares);
	ctx->shares = NULL;
	ctx->nshares = ctx->cap_shares = 0;
}
