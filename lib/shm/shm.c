/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared regions (memfd, hugepages when there are some) and ring layout. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "uroce_shm.h"

#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB (21 << 26) /* MFD_HUGE_SHIFT 26, log2(2 MiB) */
#endif

#define HUGE_2MB (2ull << 20)

static uint64_t round_up(uint64_t n, uint64_t to)
{
	return (n + to - 1) / to * to;
}

static int map_fd(struct uroce_shm_region *r, int fd, uint64_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	r->fd = fd;
	r->addr = p;
	r->size = size;
	return 0;
}

int uroce_shm_create(struct uroce_shm_region *r, const char *name, uint64_t size, uint32_t kind,
		     bool allow_huge)
{
	struct uroce_shm_hdr *h;
	int fd = -1, rc;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (size < sizeof(*h))
		size = sizeof(*h);
	if (allow_huge) {
		/* Hugepages: one TLB entry per 2 MiB for the daemon's poll core, and pages the
		 * kernel never swaps. The reservation may be empty: fall back then. */
		fd = memfd_create(name,
				  MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB | MFD_HUGE_2MB);
		if (fd >= 0) {
			uint64_t hsize = round_up(size, HUGE_2MB);

			if (ftruncate(fd, (off_t)hsize) == 0 && map_fd(r, fd, hsize) == 0) {
				/* Touch now: a hugetlb fault with no free page is SIGBUS later,
				 * in the middle of the data path. */
				if (madvise(r->addr, hsize, MADV_POPULATE_WRITE) == 0) {
					r->huge = true;
					goto header;
				}
				munmap(r->addr, hsize);
			}
			close(fd);
		}
	}
	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	size = round_up(size, (uint64_t)sysconf(_SC_PAGESIZE));
	if (ftruncate(fd, (off_t)size) != 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rc = map_fd(r, fd, size);
	if (rc) {
		close(fd);
		return rc;
	}
header:
	/* Size seals: the other side gets this fd and could otherwise truncate the file
	 * under our mapping, and our next access would be SIGBUS instead of its problem. */
	if (fcntl(r->fd, F_ADD_SEALS, UROCE_SHM_SEALS) != 0) {
		rc = -errno;
		uroce_shm_close(r);
		return rc;
	}
	h = r->addr;
	h->magic = UROCE_SHM_MAGIC;
	h->version = UROCE_SHM_VERSION;
	h->size = r->size;
	h->kind = kind;
	return 0;
}

int uroce_shm_attach(struct uroce_shm_region *r, int fd, uint32_t expect_kind)
{
	const struct uroce_shm_hdr *h;
	struct stat st;
	int rc;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (fstat(fd, &st) != 0)
		return -errno;
	if (!uroce_shm_sealed(fd))
		return -EINVAL;
	if ((uint64_t)st.st_size < sizeof(*h))
		return -EINVAL;
	rc = map_fd(r, fd, (uint64_t)st.st_size);
	if (rc)
		return rc;
	h = r->addr;
	if (h->magic != UROCE_SHM_MAGIC || h->version != UROCE_SHM_VERSION) {
		fprintf(stderr,
			"uroce: shared memory version mismatch: this side speaks version %u, the "
			"other side's region says magic 0x%08x version %u; use a library and a "
			"uroced from the same release\n",
			UROCE_SHM_VERSION, h->magic, h->version);
		munmap(r->addr, r->size);
		r->addr = NULL;
		r->fd = -1;
		return -EPROTO;
	}
	if (h->size != r->size || h->kind != expect_kind) {
		munmap(r->addr, r->size);
		r->addr = NULL;
		r->fd = -1;
		return -EINVAL;
	}
	r->huge = false; /* not knowable from the fd alone; only the creator reports it */
	return 0;
}

void uroce_shm_close(struct uroce_shm_region *r)
{
	if (r->addr)
		munmap(r->addr, r->size);
	if (r->fd >= 0)
		close(r->fd);
	r->addr = NULL;
	r->fd = -1;
}

int uroce_ring_format(void *mem, uint32_t size, uint32_t elem_size)
{
	struct uroce_ring_shared *sh = mem;

	if (size == 0 || (size & (size - 1)) || elem_size == 0 || (elem_size & 7) ||
	    ((uintptr_t)mem & (UROCE_SHM_CACHELINE - 1)))
		return -EINVAL;
	memset(sh, 0, sizeof(*sh));
	atomic_init(&sh->prod, 0);
	atomic_init(&sh->cons, 0);
	atomic_init(&sh->armed, 0);
	sh->size = size;
	sh->elem_size = elem_size;
	return 0;
}

int uroce_ring_open(struct uroce_ring *r, void *mem, uint64_t bytes, bool producer)
{
	struct uroce_ring_shared *sh = mem;
	uint32_t size, esize;

	if (bytes < sizeof(*sh) || ((uintptr_t)mem & (UROCE_SHM_CACHELINE - 1)))
		return -EINVAL;
	/* The other process wrote these: check before trusting them for addressing. */
	size = sh->size;
	esize = sh->elem_size;
	if (size == 0 || (size & (size - 1)) || esize == 0 || (esize & 7) ||
	    uroce_ring_bytes(size, esize) > bytes)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->sh = sh;
	r->elems = (uint8_t *)mem + sizeof(*sh);
	r->mask = size - 1;
	r->elem_size = esize;
	/* relaxed: opening happens before the other side is told the ring exists (over the
	 * socket, a synchronising system call), so no ordering is needed here. */
	r->mine = atomic_load_explicit(producer ? &sh->prod : &sh->cons, memory_order_relaxed);
	r->theirs = atomic_load_explicit(producer ? &sh->cons : &sh->prod, memory_order_relaxed);
	return 0;
}

bool uroce_shm_sealed(int fd)
{
	int seals = fcntl(fd, F_GET_SEALS);

	return seals >= 0 &&
	       (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) == (F_SEAL_SHRINK | F_SEAL_GROW);
}

/* The line is in a MAP_SHARED mapping of another process too: FUTEX_WAIT and FUTEX_WAKE,
 * never their _PRIVATE forms (those key on this process's address space only). */
int uroce_waiters_sleep(struct uroce_shm_waiters *w, uint32_t snapshot, uint64_t timeout_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(timeout_ns / 1000000000u),
		.tv_nsec = (long)(timeout_ns % 1000000000u),
	};
	long rc;
	int err;

	/* seq_cst RMW, a full barrier: ordered before the kernel's read of seq (the pairing
	 * with uroce_waiters_notify, in uroce_shm.h). */
	atomic_fetch_add_explicit(&w->waiters, 1u, memory_order_seq_cst);
	rc = syscall(SYS_futex, &w->seq, FUTEX_WAIT, snapshot, &ts, NULL, 0);
	err = errno;
	atomic_fetch_sub_explicit(&w->waiters, 1u, memory_order_relaxed);
	if (rc == 0 || err == EAGAIN) /* woken, or seq had moved before we slept */
		return 0;
	return -err;
}

int uroce_waiters_wake(struct uroce_shm_waiters *w)
{
	if (syscall(SYS_futex, &w->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0) < 0)
		return -errno;
	return 0;
}

int uroce_summary_open(struct uroce_summary *s, void *mem, uint32_t slots)
{
	uint32_t words = slots / UROCE_SUMMARY_WORD_BITS;

	if (!slots || slots % (UROCE_SUMMARY_WORD_BITS * UROCE_SUMMARY_WORD_BITS) ||
	    (uintptr_t)mem % sizeof(uint64_t))
		return -EINVAL;
	s->top = mem;
	s->bits = s->top + words / UROCE_SUMMARY_WORD_BITS;
	s->slots = slots;
	return 0;
}

bool uroce_summary_pending(const struct uroce_summary *s)
{
	uint32_t n = s->slots / UROCE_SUMMARY_WORD_BITS / UROCE_SUMMARY_WORD_BITS;

	for (uint32_t i = 0; i < n; i++)
		if (atomic_load_explicit(&s->top[i], memory_order_relaxed))
			return true;
	return false;
}

/* Puts back what a take had no room for: @p bits of word @p w (0: none) and the words
 * @p top still named in top word @p i. The bits before the top bit, as a producer sets
 * them: one that finds the word non-zero leaves the top bit to us. Only this thread
 * reads them back before the producers' next release: relaxed. */
static void summary_put_back(struct uroce_summary *s, uint32_t i, uint32_t w, uint64_t bits,
			     uint64_t top)
{
	if (bits) {
		atomic_fetch_or_explicit(&s->bits[w], bits, memory_order_relaxed);
		top |= 1ull << (w % UROCE_SUMMARY_WORD_BITS);
	}
	if (top)
		atomic_fetch_or_explicit(&s->top[i], top, memory_order_relaxed);
}

uint32_t uroce_summary_take(struct uroce_summary *s, uint32_t *slots, uint32_t max)
{
	uint32_t n = s->slots / UROCE_SUMMARY_WORD_BITS / UROCE_SUMMARY_WORD_BITS, taken = 0;

	for (uint32_t i = 0; i < n && taken < max; i++) {
		uint64_t top;

		/* A relaxed look first: an exchange would take the line from the producers
		 * on every turn, for the usual answer of nothing. */
		if (!atomic_load_explicit(&s->top[i], memory_order_relaxed))
			continue;
		top = atomic_exchange_explicit(&s->top[i], 0, memory_order_acquire);
		while (top) {
			uint32_t w = i * UROCE_SUMMARY_WORD_BITS + (uint32_t)__builtin_ctzll(top);
			uint64_t bits = atomic_exchange_explicit(&s->bits[w], 0,
								 memory_order_acquire);

			top &= top - 1;
			while (bits && taken < max) {
				slots[taken++] = w * UROCE_SUMMARY_WORD_BITS +
						 (uint32_t)__builtin_ctzll(bits);
				bits &= bits - 1;
			}
			if (taken == max) {
				summary_put_back(s, i, w, bits, top);
				return taken;
			}
		}
	}
	return taken;
}
