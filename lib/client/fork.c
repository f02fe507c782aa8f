/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fork(): what a child inherits of uroce, and what it must not.
 *
 * Registered memory lives on MAP_SHARED memfd pages (mr_share.c), and fork() alone would
 * leave those pages shared between parent and child: the child's writes to anything on
 * them (heap objects beside a buffer, malloc's own metadata) would land in the parent.
 * Kernel RDMA since Linux 5.13 (what rdma-core reports as IBV_FORK_UNNEEDED) gives the
 * child a private copy of pinned pages at fork and the parent keeps its own, still
 * registered; this file keeps the same promise. A pthread_atfork child handler replaces
 * every mapping of our memfds with a private anonymous copy of its contents, with the
 * same protection, before fork() returns in the child. The parent's mappings, and so its
 * RDMA, are untouched.
 *
 * The copy must hold the pages as they were at the fork, as the kernel's does. Until the
 * child has copied them they are still shared, so the thread that forked waits in the
 * parent's handler for the child to say it is done (a pipe; EOF if the child died):
 * otherwise the parent's next malloc() would change heap metadata on a shared page and
 * the child would copy a heap that is half the parent's (pyverbs_fork caught glibc
 * aborting on exactly that). Other threads of the parent keep running meanwhile, and what
 * they write to registered memory in that window may be in the child's copy.
 *
 * Everything else of uroce stays the parent's:
 * - the rings shared with the daemon (queues, CQs, async events) are MADV_DONTFORK
 *   (cl_attach_region), as rdma-core's providers mark their queue buffers: the child has
 *   no mapping there;
 * - every context the child inherited is marked forked, and each call on it (control
 *   requests, posts, polls, event reads) fails with EIO before it touches the parent's
 *   connection, rings or event pipes. The child opens a device of its own.
 *
 * The pages moved stay moved after their context is closed (they are the process's
 * memory), so the child's copies are made whenever the process has moved any, open
 * contexts or not.
 *
 * Lock order: cl_fork_lock, then each context's share_lock, then the table of moved runs
 * (the prepare handler takes them all, so no registration is half-way through moving
 * pages when fork() copies the address space).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "client_internal.h"

static pthread_mutex_t cl_fork_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uroce_client_ctx *cl_fork_contexts; /* every open context, through fork_next */
/* From prepare to the handlers, while cl_fork_lock is held: the child writes a byte to
 * [1] once its copies are made; the parent waits for it on [0]. -1: nothing to wait for. */
static int cl_fork_done[2] = {-1, -1};

void cl_fork_track(struct uroce_client_ctx *ctx)
{
	pthread_mutex_lock(&cl_fork_lock);
	ctx->fork_next = cl_fork_contexts;
	cl_fork_contexts = ctx;
	pthread_mutex_unlock(&cl_fork_lock);
}

void cl_fork_untrack(struct uroce_client_ctx *ctx)
{
	struct uroce_client_ctx **pp;

	pthread_mutex_lock(&cl_fork_lock);
	for (pp = &cl_fork_contexts; *pp; pp = &(*pp)->fork_next)
		if (*pp == ctx) {
			*pp = ctx->fork_next;
			break;
		}
	pthread_mutex_unlock(&cl_fork_lock);
}

int cl_attach_region(struct uroce_shm_region *r, int fd, uint32_t kind)
{
	int rc = uroce_shm_attach(r, fd, kind);

	if (rc)
		return rc;
	if (madvise(r->addr, r->size, MADV_DONTFORK) != 0) {
		rc = -errno;
		uroce_shm_close(r);
		return rc;
	}
	return 0;
}

/* The child must not go on sharing the parent's pages: it stops here rather than
 * corrupt the parent. */
static void __attribute__((noreturn)) child_give_up(const char *what)
{
	char msg[160];
	int n = snprintf(msg, sizeof(msg),
			 "uroce: fork: cannot give the child a private copy of registered "
			 "memory (%s: %s); the child exits\n",
			 what, strerror(errno));

	if (n > 0 && write(STDERR_FILENO, msg, (size_t)n) < 0)
		n = 0;
	_exit(127);
}

/* Replaces [lo, hi) with a private anonymous copy of its contents and protection. */
static void privatize(uintptr_t lo, uintptr_t hi, int prot)
{
	size_t len = hi - lo;
	void *copy = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (copy == MAP_FAILED)
		child_give_up("mmap");
	/* Whole pages, other objects and their sanitizer redzones included: copied by the
	 * kernel (process_vm_readv on ourselves, as mr_share.c does), not by an
	 * instrumented memcpy that would report reading them. */
	if (prot & PROT_READ) {
		struct iovec to = {.iov_base = copy, .iov_len = len};
		struct iovec from = {.iov_base = (void *)lo, .iov_len = len};

		if (process_vm_readv(getpid(), &to, 1, &from, 1, 0) != (ssize_t)len)
			child_give_up("process_vm_readv");
	}
	if (mprotect(copy, len, prot) != 0)
		child_give_up("mprotect");
	/* One step: the range is never unmapped in between. */
	if (mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)lo) == MAP_FAILED)
		child_give_up("mremap");
}

/* The mappings of /proc/self/maps that are our memfds, collected before any is changed
 * (the file must not change while it is read). The list lives in memory of its own
 * (mmap), never on the heap: until privatize() has run, the heap pages beside registered
 * buffers are still the parent's, and a malloc() here would write the parent's heap
 * metadata under it (pyverbs_fork caught glibc aborting on a corrupted free list). */
struct vma {
	uintptr_t lo, hi;
	int prot;
};

struct vma_list {
	struct vma *v;
	size_t n, cap; /* cap: entries the mapping holds */
};

static void vma_list_add(struct vma_list *l, struct vma vma)
{
	if (l->n == l->cap) {
		size_t old = l->cap * sizeof(*l->v), cap = l->cap ? 2 * l->cap : 256;
		void *m = l->v ? mremap(l->v, old, cap * sizeof(*l->v), MREMAP_MAYMOVE)
			       : mmap(NULL, cap * sizeof(*l->v), PROT_READ | PROT_WRITE,
				      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			child_give_up("mmap");
		l->v = m;
		l->cap = cap;
	}
	l->v[l->n++] = vma;
}

static void vma_list_free(struct vma_list *l)
{
	if (l->v)
		munmap(l->v, l->cap * sizeof(*l->v));
	*l = (struct vma_list){0};
}

static void find_shared_vmas(struct vma_list *out)
{
	size_t have = 0;
	char buf[8192];
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		child_give_up("/proc/self/maps");
	for (;;) {
		ssize_t got = read(fd, buf + have, sizeof(buf) - 1 - have);
		char *line = buf, *nl;

		if (got < 0)
			child_give_up("/proc/self/maps");
		have += (size_t)got;
		buf[have] = 0;
		while ((nl = strchr(line, '\n')) != NULL) {
			unsigned long lo, hi, off, ino;
			unsigned int maj, min;
			char perm[5];

			*nl = 0;
			if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu", &lo, &hi, perm, &off, &maj,
				   &min, &ino) == 7 &&
			    perm[3] == 's' && cl_runs_have_memfd(makedev(maj, min), ino))
				vma_list_add(out,
					     (struct vma){
						     .lo = lo,
						     .hi = hi,
						     .prot = (perm[0] == 'r' ? PROT_READ : 0) |
							     (perm[1] == 'w' ? PROT_WRITE : 0) |
							     (perm[2] == 'x' ? PROT_EXEC : 0),
					     });
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (got == 0)
			break;
	}
	close(fd);
}

static void fork_prepare(void)
{
	struct uroce_client_ctx *ctx;

	pthread_mutex_lock(&cl_fork_lock);
	for (ctx = cl_fork_contexts; ctx; ctx = ctx->fork_next)
		pthread_mutex_lock(&ctx->share_lock);
	cl_runs_lock();
	/* Without a pipe the parent cannot wait, and the child's copy may be inexact. */
	if (!cl_runs_empty() && pipe2(cl_fork_done, O_CLOEXEC) != 0)
		cl_fork_done[0] = cl_fork_done[1] = -1;
}

static void fork_parent(void)
{
	struct uroce_client_ctx *ctx;

	if (cl_fork_done[0] >= 0) {
		char done;

		close(cl_fork_done[1]);
		/* One byte when the child is done, EOF if it died (or fork() failed). */
		while (read(cl_fork_done[0], &done, 1) < 0 && errno == EINTR)
			;
		close(cl_fork_done[0]);
		cl_fork_done[0] = cl_fork_done[1] = -1;
	}
	cl_runs_unlock();
	for (ctx = cl_fork_contexts; ctx; ctx = ctx->fork_next)
		pthread_mutex_unlock(&ctx->share_lock);
	pthread_mutex_unlock(&cl_fork_lock);
}

static void fork_child(void)
{
	struct uroce_client_ctx *ctx;
	struct vma_list vmas = {0};
	size_t i;

	/* Nothing here may touch the heap before privatize(): see find_shared_vmas(). */
	if (cl_fork_done[0] >= 0)
		close(cl_fork_done[0]);
	if (!cl_runs_empty())
		find_shared_vmas(&vmas);
	for (i = 0; i < vmas.n; i++)
		privatize(vmas.v[i].lo, vmas.v[i].hi, vmas.v[i].prot);
	vma_list_free(&vmas);
	if (cl_fork_done[1] >= 0) {
		/* On a failed write the parent reads EOF when we close: the same to it. */
		if (write(cl_fork_done[1], "", 1) < 0)
			i = 0;
		close(cl_fork_done[1]);
	}
	cl_fork_done[0] = cl_fork_done[1] = -1;
	/* The inherited contexts are the parent's: this process is not their client. The
	 * locks were taken by the thread that forked, which is the one thread here. The runs
	 * are private copies now: a registration in the child moves them anew (run_intact). */
	cl_runs_unlock();
	for (ctx = cl_fork_contexts; ctx; ctx = ctx->fork_next) {
		ctx->forked = true;
		pthread_mutex_unlock(&ctx->share_lock);
	}
	cl_fork_contexts = NULL;
	pthread_mutex_unlock(&cl_fork_lock);
}

/* As early as the library loads: atfork child handlers run in the order they were
 * registered, and ours should run before others that may write to the heap. */
__attribute__((constructor)) static void cl_fork_init(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}
