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
 * The runs are the process's, not a context's: a second context (another
 * ibv_open_device, or librdmacm's next to the application's own) that registers memory in
 * a run the first moved must use that run's memfd, never move the pages again (the first
 * context's MRs would then point at pages the application no longer sees). So the runs
 * live in one table for the process (runs_lock), and each context keeps only its own
 * daemon handle for each memfd it uses (MAP_REGION). For a run another context made, it
 * asks that context's daemon for the memfd back (REGION_FD; the process keeps no fd of
 * its own) and maps it to its daemon, which may be another one. A run no open context
 * has a handle for is used by no daemon: it is moved anew, as if it were not shared.
 *
 * Caveat (documented in doc/daemon.md): a thread that writes into a run while it is being
 * moved may lose that write; register before sharing buffers between threads, as verbs
 * applications do.
 *
 * Lock order: a context's share_lock, then runs_lock (fork.c takes them in that order
 * too).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "client_internal.h"

/* The process's runs: [start, end) mapped from the memfd (dev, ino) at offset 0. */
struct cl_run {
	uintptr_t start, end;
	uint64_t dev, ino;
};

static pthread_mutex_t runs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cl_run *runs; /* sorted by start, disjoint */
static size_t nruns, cap_runs;
/* The open contexts with handles (through share_next): whom to ask for a run's memfd.
 * A context's handle table (ctx->shares) is read and written under runs_lock too. */
static struct uroce_client_ctx *share_ctxs;
static uint64_t runs_removed; /* runs forgotten so far: ctx_regions_prune's cue */

static uintptr_t page_size(void)
{
	return (uintptr_t)sysconf(_SC_PAGESIZE);
}

/* One line of /proc/self/maps. */
struct maps_entry {
	unsigned long lo, hi, off, ino; /* [lo, hi), at file offset off of inode ino */
	unsigned int maj, min;		/* the file's device */
	char perm[5];			/* "rw-p" */
	const char *path;		/* into the line, without its newline; "" if none */
};

/* The next line of @p f (/proc/self/maps) in @p m, its path in *line (getline's buffer,
 * the caller frees it): true, or false at the end. */
static bool maps_next(FILE *f, char **line, size_t *cap, struct maps_entry *m)
{
	while (getline(line, cap, f) > 0) {
		int path_at = -1;
		char *nl;

		if (sscanf(*line, "%lx-%lx %4s %lx %x:%x %lu %n", &m->lo, &m->hi, m->perm, &m->off,
			   &m->maj, &m->min, &m->ino, &path_at) != 7 ||
		    path_at < 0)
			continue;
		nl = strchr(*line + path_at, '\n');
		if (nl)
			*nl = 0;
		m->path = *line + path_at;
		return true;
	}
	return false;
}

/* Is the run still mapped from its memfd, address a at file offset a - start? */
static bool run_intact(const struct cl_run *sh)
{
	struct maps_entry m;
	uintptr_t covered = sh->start;
	char *line = NULL;
	size_t cap = 0;
	bool ok = true;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return false;
	while (ok && covered < sh->end && maps_next(f, &line, &cap, &m)) {
		if (m.hi <= covered || m.lo >= sh->end)
			continue;
		ok = m.lo <= covered && m.lo >= sh->start && m.ino == sh->ino &&
		     makedev(m.maj, m.min) == sh->dev && m.off == m.lo - sh->start;
		covered = m.hi;
	}
	fclose(f);
	free(line);
	return ok && covered >= sh->end;
}

/* This context's handle for the memfd (@p dev, @p ino), or -1. Called with share_lock. */
static ssize_t ctx_region_find(const struct uroce_client_ctx *ctx, uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; i < ctx->nshares; i++)
		if (ctx->shares[i].dev == dev && ctx->shares[i].ino == ino)
			return (ssize_t)i;
	return -1;
}

static int ctx_region_add(struct uroce_client_ctx *ctx, const struct cl_share *sh)
{
	if (!ctx->share_listed) {
		ctx->share_next = share_ctxs;
		share_ctxs = ctx;
		ctx->share_listed = true;
	}
	if (ctx->nshares == ctx->cap_shares) {
		size_t cap = ctx->cap_shares ? ctx->cap_shares * 2 : 16;
		struct cl_share *n = realloc(ctx->shares, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		ctx->shares = n;
		ctx->cap_shares = cap;
	}
	ctx->shares[ctx->nshares++] = *sh;
	return 0;
}

/* Lets the daemon close this context's handle of a memfd no run of the process is on any
 * more (MRs it mapped from it keep their pages until deregistered). Called with
 * share_lock and runs_lock held. */
static void ctx_regions_prune(struct uroce_client_ctx *ctx)
{
	/* Only after a run went: a registration does not scan every handle for nothing. */
	if (ctx->share_pruned == runs_removed)
		return;
	ctx->share_pruned = runs_removed;
	for (size_t i = 0; i < ctx->nshares;) {
		if (cl_runs_have_memfd(ctx->shares[i].dev, ctx->shares[i].ino)) {
			i++;
			continue;
		}
		(void)cl_release(ctx, UROCE_CTRL_UNMAP_REGION, ctx->shares[i].region);
		ctx->shares[i] = ctx->shares[--ctx->nshares];
	}
}

static void run_remove(size_t i)
{
	memmove(&runs[i], &runs[i + 1], (nruns - i - 1) * sizeof(runs[0]));
	nruns--;
	runs_removed++;
}

static int run_insert(const struct cl_run *r)
{
	size_t i;

	if (nruns == cap_runs) {
		size_t cap = cap_runs ? cap_runs * 2 : 16;
		struct cl_run *n = realloc(runs, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		runs = n;
		cap_runs = cap;
	}
	for (i = 0; i < nruns && runs[i].start < r->start; i++)
		;
	memmove(&runs[i + 1], &runs[i], (nruns - i) * sizeof(*r));
	runs[i] = *r;
	nruns++;
	return 0;
}

/* What one process_vm_readv of share_copy copies at most: under the kernel's
 * MAX_RW_COUNT, which caps one read at 2 GiB - 4 KiB. */
#define SHARE_COPY_STEP ((size_t)1 << 30)

/* Copies [src, src + len) to @p dst. process_vm_readv on ourselves copies like memcpy but
 * reports unmapped source pages as EFAULT instead of crashing, as the kernel's ibv_reg_mr
 * would. It moves at most MAX_RW_COUNT (2 GiB - 4 KiB) a call, so a longer run goes in
 * steps: a short count then goes on where it stopped, and an unmapped page fails there. */
static int share_copy(void *dst, uintptr_t src, size_t len)
{
	ssize_t got;

	for (size_t off = 0; off < len; off += (size_t)got) {
		size_t n = len - off < SHARE_COPY_STEP ? len - off : SHARE_COPY_STEP;
		struct iovec local = {.iov_base = (char *)dst + off, .iov_len = n};
		struct iovec remote = {.iov_base = (void *)(src + off), .iov_len = n};

		got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
		if (got <= 0)
			return -EFAULT;
	}
	return 0;
}

/* /proc/self/pagemap's bits of a page (doc: admin-guide/mm/pagemap.rst). */
#define PAGEMAP_PRESENT ((uint64_t)1 << 63)
#define PAGEMAP_SWAPPED ((uint64_t)1 << 62)
/* Pagemap entries read at once: one page table's worth, 2 MiB of 4 KiB pages. */
#define SHARE_PAGEMAP_BATCH 512

/*
 * Copies what can hold data of [src, src + len), a piece of one private anonymous
 * mapping, to @p dst, a fresh memfd's mapping: a page that is neither present nor swapped
 * out (never touched, or given back with MADV_DONTNEED) reads as zeros, as the memfd's
 * page does, so it is left out and stays a hole in the memfd (no page allocated). Ceph's
 * messenger registers about 1 GiB of fresh buffers in every process; copying those zeros
 * took seconds. Runs of data pages go in one copy each. A page that is not present for
 * another reason is copied: a guard page (MADV_GUARD_INSTALL) or a migration entry reads
 * as swapped (bit 62), so the copy fails or waits as it always did.
 *
 * Races: the share was never atomic, and a thread that writes into the range meanwhile
 * may lose its write (the caveat of doc/daemon.md). Leaving pages out keeps that as it
 * was: a page found absent here that another thread writes before the memfd is mapped
 * over it (MAP_FIXED) loses that write, as a page copied before another thread wrote it
 * always did; the window runs from the page's pagemap read instead of from its copy, to
 * the same MAP_FIXED (and the share now takes milliseconds where the copy took seconds).
 * A page found present is copied as it is at the copy. A mapping another thread replaces
 * between share_classify's reading of /proc/self/maps and the copy is as undefined as
 * unmapping memory while registering it.
 *
 * A page that is absent because userfaultfd's missing mode would supply it is taken as
 * zeros too (the application's handler is not asked); /proc/self/maps does not say so.
 *
 * @p pagemap: /proc/self/pagemap, or -1 (everything is copied).
 */
static int share_copy_present(int pagemap, void *dst, uintptr_t src, size_t len)
{
	uintptr_t ps = page_size();
	size_t npages = len / ps, run = 0; /* pages of the run of data pages before page i */
	uint64_t pm[SHARE_PAGEMAP_BATCH];
	int rc;

	if (pagemap < 0)
		return share_copy(dst, src, len);
	for (size_t i = 0; i < npages;) {
		size_t n = npages - i < SHARE_PAGEMAP_BATCH ? npages - i : SHARE_PAGEMAP_BATCH;
		off_t at = (off_t)((src / ps + i) * sizeof(pm[0]));

		if (pread(pagemap, pm, n * sizeof(pm[0]), at) != (ssize_t)(n * sizeof(pm[0])))
			/* Cannot tell: copy the rest whole, as if it were not anonymous. */
			return share_copy((char *)dst + (i - run) * ps, src + (i - run) * ps,
					  len - (i - run) * ps);
		for (size_t j = 0; j < n; j++, i++) {
			if (pm[j] & (PAGEMAP_PRESENT | PAGEMAP_SWAPPED)) {
				run++;
				continue;
			}
			rc = share_copy((char *)dst + (i - run) * ps, src + (i - run) * ps,
					run * ps);
			if (rc)
				return rc;
			run = 0;
		}
	}
	return share_copy((char *)dst + (npages - run) * ps, src + (npages - run) * ps,
			  run * ps);
}

/* A piece of a range to share, one mapping's part of it. */
struct share_piece {
	uintptr_t start, end;
	bool anon; /* private anonymous and readable: absent pages read as zeros */
};

/* Is the mapping of a /proc/self/maps line private anonymous memory the process can
 * read? Its pathname (after the inode) is empty, [heap], [stack] or a name given with
 * PR_SET_VMA_ANON_NAME; [vdso], [vvar] and the like are special pages, not zeros, and a
 * private file mapping's absent page holds the file's bytes (hugetlb's anonymous memory
 * is a file too). Without read permission process_vm_readv fails, so the page is copied
 * to fail as it always did. */
static bool maps_line_anon(const struct maps_entry *m)
{
	return m->perm[0] == 'r' && m->perm[3] == 'p' && m->maj == 0 && m->min == 0 &&
	       m->ino == 0 &&
	       (*m->path == 0 || strcmp(m->path, "[heap]") == 0 ||
		strcmp(m->path, "[stack]") == 0 || strncmp(m->path, "[anon:", 6) == 0);
}

static int piece_add(struct share_piece **p, size_t *n, size_t *cap, struct share_piece piece)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 8;
		struct share_piece *np = realloc(*p, ncap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		*p = np;
		*cap = ncap;
	}
	(*p)[(*n)++] = piece;
	return 0;
}

/* The pieces of [s, e) by mapping, from /proc/self/maps, in @p out (free it). -EFAULT:
 * some page of the range is not mapped, as the copy would find. What the maps cannot
 * tell (they cannot be read) is one piece that is not anonymous: it is copied whole and
 * the copy judges. */
static int share_classify(uintptr_t s, uintptr_t e, struct share_piece **out, size_t *nout)
{
	struct share_piece *p = NULL;
	struct maps_entry m;
	size_t n = 0, cap = 0, linecap = 0;
	uintptr_t covered = s;
	char *line = NULL;
	bool unread = true;
	int rc = 0;
	FILE *f = fopen("/proc/self/maps", "re");

	while (f && covered < e && maps_next(f, &line, &linecap, &m)) {
		if (m.hi <= covered)
			continue;
		if (m.lo > covered) {
			rc = -EFAULT; /* a hole before this mapping */
			break;
		}
		rc = piece_add(&p, &n, &cap,
			       (struct share_piece){
				       .start = covered,
				       .end = m.hi < e ? m.hi : e,
				       .anon = maps_line_anon(&m),
			       });
		if (rc)
			break;
		covered = p[n - 1].end;
	}
	if (f) {
		unread = ferror(f);
		fclose(f);
	}
	free(line);
	if (rc == 0 && covered < e) {
		struct share_piece rest = {.start = covered, .end = e, .anon = false};

		if (unread)
			rc = piece_add(&p, &n, &cap, rest);
		else
			rc = -EFAULT; /* the range goes on past the last mapping */
	}
	if (rc) {
		free(p);
		return rc;
	}
	*out = p;
	*nout = n;
	return 0;
}

/* Fills @p dst (a fresh memfd's mapping of e - s bytes) with the bytes of [s, e). */
static int share_fill(void *dst, uintptr_t s, uintptr_t e)
{
	struct share_piece *p;
	size_t n;
	int pagemap = -1, rc = share_classify(s, e, &p, &n);

	if (rc)
		return rc;
	for (size_t i = 0; i < n && rc == 0; i++) {
		char *to = (char *)dst + (p[i].start - s);
		size_t len = p[i].end - p[i].start;

		if (!p[i].anon) {
			rc = share_copy(to, p[i].start, len);
			continue;
		}
		if (pagemap < 0)
			pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
		rc = share_copy_present(pagemap, to, p[i].start, len);
	}
	if (pagemap >= 0)
		close(pagemap);
	free(p);
	return rc;
}

/* Shares [s, e) (page aligned, not shared now): new memfd, copy, map over; the context's
 * handle for it in @p out. Nothing in the process changes when it fails. */
static int share_new_at(struct uroce_client_ctx *ctx, uintptr_t s, uintptr_t e,
			struct cl_share *out)
{
	size_t len = e - s;
	struct uroce_ctrl_map_region_req req = {.size = len};
	struct uroce_ctrl_handle rep;
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
	rc = share_fill(tmp, s, e);
	if (rc) {
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

/* The memfd of run @p r, from another open context that has a handle for it (its daemon
 * gives it back: REGION_FD), or -ENOENT when none has. Called with runs_lock. */
static int run_memfd(const struct uroce_client_ctx *ctx, const struct cl_run *r)
{
	for (struct uroce_client_ctx *o = share_ctxs; o; o = o->share_next) {
		struct uroce_ctrl_handle req = {0};
		ssize_t i = o == ctx ? -1 : ctx_region_find(o, r->dev, r->ino);
		int fd = -1;

		if (i < 0)
			continue;
		req.handle = o->shares[i].region;
		if (cl_call(o, UROCE_CTRL_REGION_FD, &req, sizeof(req), NULL, 0, NULL, 0, &fd, 1) ==
			    0 &&
		    fd >= 0)
			return fd;
		/* That context cannot answer (forked, its daemon gone): try the next. */
	}
	return -ENOENT;
}

/* This context's handle for run @p r, mapped from another context's memfd when it has
 * none yet. -ENOENT: no open context has the run (it is moved anew). Called with
 * share_lock and runs_lock. */
static int ctx_region_for(struct uroce_client_ctx *ctx, const struct cl_run *r,
			  uint32_t *region)
{
	struct uroce_ctrl_map_region_req req = {.size = r->end - r->start};
	struct uroce_ctrl_handle rep;
	ssize_t i = ctx_region_find(ctx, r->dev, r->ino);
	int fd, rc;

	if (i >= 0) {
		*region = ctx->shares[i].region;
		return 0;
	}
	fd = run_memfd(ctx, r);
	if (fd < 0)
		return fd;
	rc = cl_call(ctx, UROCE_CTRL_MAP_REGION, &req, sizeof(req), &fd, 1, &rep, sizeof(rep),
		     NULL, 0);
	close(fd);
	if (rc)
		return rc;
	rc = ctx_region_add(ctx, &(struct cl_share){.start = r->start, .end = r->end,
						   .region = rep.handle, .ino = r->ino,
						   .dev = r->dev});
	if (rc) {
		(void)cl_release(ctx, UROCE_CTRL_UNMAP_REGION, rep.handle);
		return rc;
	}
	*region = rep.handle;
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
	pthread_mutex_lock(&runs_lock);
	/* Forget runs overlapping the range that are no longer what we mapped. */
	for (i = 0; i < nruns;) {
		if (runs[i].end > s && runs[i].start < e && !run_intact(&runs[i]))
			run_remove(i);
		else
			i++;
	}
	ctx_regions_prune(ctx);
	while (at < e) {
		struct cl_run cur, *hit = NULL;
		uintptr_t next = e;
		uint32_t region;

		for (i = 0; i < nruns; i++) {
			if (runs[i].start <= at && runs[i].end > at) {
				hit = &runs[i];
				break;
			}
			if (runs[i].start > at && runs[i].start < next)
				next = runs[i].start;
		}
		if (hit) {
			cur = *hit;
			rc = ctx_region_for(ctx, &cur, &region);
			if (rc == -ENOENT) {
				/* No daemon uses its memfd: move it anew. */
				run_remove((size_t)(hit - runs));
				continue;
			}
			if (rc)
				goto fail;
		} else {
			struct cl_share made;

			rc = share_new(ctx, at, next, &made);
			if (rc)
				goto fail;
			cur = (struct cl_run){made.start, made.end, made.dev, made.ino};
			region = made.region;
			rc = run_insert(&cur);
			if (rc == 0)
				rc = ctx_region_add(ctx, &made);
			if (rc) {
				(void)cl_release(ctx, UROCE_CTRL_UNMAP_REGION, made.region);
				goto fail;
			}
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
			.region = region,
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
	pthread_mutex_unlock(&runs_lock);
	*segs_out = segs;
	return (int)nseg;
fail:
	pthread_mutex_unlock(&runs_lock);
	free(segs);
	return rc;
}

void cl_share_forget_all(struct uroce_client_ctx *ctx)
{
	pthread_mutex_lock(&runs_lock);
	for (struct uroce_client_ctx **pp = &share_ctxs; *pp; pp = &(*pp)->share_next)
		if (*pp == ctx) {
			*pp = ctx->share_next;
			break;
		}
	ctx->share_listed = false;
	free(ctx->shares);
	ctx->shares = NULL;
	ctx->nshares = ctx->cap_shares = 0;
	pthread_mutex_unlock(&runs_lock);
}

void cl_runs_lock(void)
{
	pthread_mutex_lock(&runs_lock);
}

void cl_runs_unlock(void)
{
	pthread_mutex_unlock(&runs_lock);
}

bool cl_runs_empty(void)
{
	return nruns == 0;
}

bool cl_runs_have_memfd(uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; i < nruns; i++)
		if (runs[i].dev == dev && runs[i].ino == ino)
			return true;
	return false;
}
