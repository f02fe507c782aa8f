/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef UROCE_SHM_H
#define UROCE_SHM_H

/**
 * @file
 * The shared-memory contract between uroced and the applications it serves.
 *
 * Regions: memory both processes map, made with memfd_create (2 MiB hugepages when the
 * system has them, ordinary pages otherwise) and handed over a UNIX socket as a file
 * descriptor. A region starts with a header whose magic and version word make a
 * mismatched library/daemon pair fail at attach, with a message, instead of misreading
 * each other's rings.
 *
 * Rings: single-producer single-consumer rings of fixed-size elements inside a region.
 * The producer index is the doorbell: the application posts a WQE by writing the element
 * and then publishing the index; the daemon's poll core sees it without a system call.
 * CQ rings run the other way. Every memory-ordering choice is commented where it is made
 * (as rdma-core's providers/rxe/rxe_queue.h does): each side owns one index, writes it
 * with release semantics after the element accesses it covers, and reads the other side's
 * index with acquire semantics before touching elements. No locks, no system calls.
 *
 * Indices are free-running 32-bit counters (wrap is harmless: differences are taken
 * modulo 2^32); the slot of index i is i & mask. A ring never trusts the other side's
 * index beyond "at most size ahead": a process that scribbles over shared memory can
 * hurt only its own queues, and the daemon checks what it reads (uroce_ring_cons_avail
 * clamps a bogus producer index to 0 and reports it).
 */

#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UROCE_SHM_MAGIC 0x75726f63u /* "uroc" */
#define UROCE_SHM_VERSION 1u
#define UROCE_SHM_CACHELINE 64

/* ---- regions --------------------------------------------------------------------------- */

struct uroce_shm_hdr {
	uint32_t magic;
	uint32_t version;
	uint64_t size;      /**< bytes of the whole region */
	uint32_t kind;      /**< what the region holds (the control protocol names kinds) */
	uint32_t reserved[11];
};

/* Shared with another process, maybe built from another tree: a change of layout needs a
 * new UROCE_SHM_VERSION. */
static_assert(sizeof(struct uroce_shm_hdr) == UROCE_SHM_CACHELINE, "region header: one line");

struct uroce_shm_region {
	int fd;
	void *addr;
	uint64_t size;
	bool huge; /**< backed by 2 MiB hugepages */
};

/**
 * Creates a region of at least @p size bytes (rounded up to the page size used), maps it
 * and writes the header. Tries 2 MiB hugepages first unless @p allow_huge is false.
 * @return 0, or -errno (memfd_create, ftruncate or mmap failed).
 */
int uroce_shm_create(struct uroce_shm_region *r, const char *name, uint64_t size,
		     uint32_t kind, bool allow_huge);
/**
 * Maps a region received as @p fd (the caller keeps ownership of nothing: on success the
 * region owns @p fd). Checks the header: -EPROTO for a wrong magic or version (a message
 * naming both versions goes to stderr), -EINVAL for a size that does not match the file.
 */
int uroce_shm_attach(struct uroce_shm_region *r, int fd, uint32_t expect_kind);
void uroce_shm_close(struct uroce_shm_region *r);

/** Seals every region carries: its size can never change, so a process that maps it
 *  cannot be made to fault (SIGBUS) by the other side truncating the file. */
#define UROCE_SHM_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
/** True when @p fd is a memfd whose size is sealed (shrink and grow); a daemon maps
 *  nothing an application gives it unless this holds. */
bool uroce_shm_sealed(int fd);

/**
 * Reads a field of shared memory the other process may rewrite at any moment, exactly
 * once. Whoever checks such a field checks its private copy, never the shared original:
 * checking one read and using another (a compiler may read a plain field again wherever
 * it likes) lets the other side pass the check with one value and use another.
 */
#define UROCE_SHM_READ_ONCE(field) (*(const volatile __typeof__(field) *)&(field))

/* ---- rings ----------------------------------------------------------------------------- */

/** The shared part of a ring: each index alone on its cache line, so the producer's
 *  stores do not invalidate the line the consumer polls and the other way round. */
struct uroce_ring_shared {
	_Alignas(UROCE_SHM_CACHELINE) _Atomic uint32_t prod;
	_Alignas(UROCE_SHM_CACHELINE) _Atomic uint32_t cons;
	_Alignas(UROCE_SHM_CACHELINE) uint32_t size;      /* elements, a power of two */
	uint32_t elem_size; /* bytes, a multiple of 8 */
	/* Completion notification (ibv_req_notify_cq): the consumer arms, the producer
	 * disarms when it signals. 0: not armed, 1: next completion, 2: next solicited. */
	_Atomic uint32_t armed;
	uint32_t reserved[13];
	/* elements follow, from the next cache line */
};

static_assert(sizeof(struct uroce_ring_shared) == 3 * UROCE_SHM_CACHELINE,
	       "ring header: prod, cons, then size and notification, each on its own line");

/** Bytes a ring of @p size elements of @p elem_size bytes takes in a region. */
static inline uint64_t uroce_ring_bytes(uint32_t size, uint32_t elem_size)
{
	return sizeof(struct uroce_ring_shared) + (uint64_t)size * elem_size;
}

/** One side's handle: private to the process, pointing into the shared part. */
struct uroce_ring {
	struct uroce_ring_shared *sh;
	uint8_t *elems;
	uint32_t mask;
	uint32_t elem_size;
	/* This side's own index, kept privately too so the hot path need not re-read it,
	 * and the last value seen of the other side's (refreshed only when it looks full or
	 * empty: fewer loads of a line the other core writes). */
	uint32_t mine;
	uint32_t theirs;
	uint64_t bogus; /* times the other side's index was out of range */
};

/** Lays out a ring at @p mem (from a region; cache-line aligned). @p size is a power of
 *  two, @p elem_size a multiple of 8. @return 0 or -EINVAL. */
int uroce_ring_format(void *mem, uint32_t size, uint32_t elem_size);
/** Opens the producer or consumer side of a formatted ring; @p bytes is what the caller
 *  knows the ring may span (checked against the ring's own header). @return 0 or -EINVAL. */
int uroce_ring_open(struct uroce_ring *r, void *mem, uint64_t bytes, bool producer);

/* Producer ------------------------------------------------------------------------------ */

/** Free slots: at least this many. The consumer's index is re-read only when the cached
 *  view says full, so the count may lag behind what the consumer freed since; 0 is
 *  exact (the ring is full now). */
static inline uint32_t uroce_ring_prod_space(struct uroce_ring *r)
{
	uint32_t used = r->mine - r->theirs;

	if (used > r->mask) {
		/* acquire: pairs with the consumer's release in uroce_ring_cons_release; once
		 * we see its index, its reads of those slots are done and we may overwrite. */
		r->theirs = atomic_load_explicit(&r->sh->cons, memory_order_acquire);
		used = r->mine - r->theirs;
		if (used > r->mask + 1) { /* consumer index ahead of ours: corrupt */
			r->bogus++;
			return 0;
		}
	}
	return r->mask + 1 - used;
}

/** The slot @p i places after the next free one (i < uroce_ring_prod_space()). */
static inline void *uroce_ring_prod_slot(struct uroce_ring *r, uint32_t i)
{
	return r->elems + (size_t)((r->mine + i) & r->mask) * r->elem_size;
}

/** Publishes @p n written slots: this store is the doorbell. */
static inline void uroce_ring_prod_commit(struct uroce_ring *r, uint32_t n)
{
	r->mine += n;
	/* release: the element stores above become visible before the index does, so a
	 * consumer that acquires the index reads complete elements. */
	atomic_store_explicit(&r->sh->prod, r->mine, memory_order_release);
}

/* Consumer ------------------------------------------------------------------------------ */

/** Elements ready to read: at least this many (the producer index is re-read only when
 *  the cached view says empty); 0 is exact. */
static inline uint32_t uroce_ring_cons_avail(struct uroce_ring *r)
{
	uint32_t avail = r->theirs - r->mine;

	if (avail == 0) {
		/* acquire: pairs with the producer's release in uroce_ring_prod_commit; the
		 * elements up to the index we see are fully written. */
		r->theirs = atomic_load_explicit(&r->sh->prod, memory_order_acquire);
		avail = r->theirs - r->mine;
		if (avail > r->mask + 1) { /* more than the ring holds: the producer is lying */
			r->bogus++;
			r->theirs = r->mine;
			return 0;
		}
	}
	return avail;
}

/** The element @p i places after the oldest unread one (i < uroce_ring_cons_avail()). */
static inline const void *uroce_ring_cons_slot(const struct uroce_ring *r, uint32_t i)
{
	return r->elems + (size_t)((r->mine + i) & r->mask) * r->elem_size;
}

/**
 * Re-reads the producer index, whatever the cached view says. A consumer about to sleep
 * calls it after announcing so (uroce_wake_announce() and the fence): it sees any WQE
 * posted before the producer looked at the announcement.
 * @return true when the index moved since the consumer last read it (there is work the
 *   consumer has not seen), false otherwise, a bogus index included (counted).
 */
static inline bool uroce_ring_cons_moved(struct uroce_ring *r)
{
	/* acquire: as in uroce_ring_cons_avail. */
	uint32_t prod = atomic_load_explicit(&r->sh->prod, memory_order_acquire);

	if (prod == r->theirs)
		return false;
	if (prod - r->mine > r->mask + 1) {
		r->bogus++;
		return false;
	}
	r->theirs = prod;
	return true;
}

/** Gives @p n read slots back to the producer. */
static inline void uroce_ring_cons_release(struct uroce_ring *r, uint32_t n)
{
	r->mine += n;
	/* release: our reads of those slots complete before the producer can see them free
	 * and overwrite them. */
	atomic_store_explicit(&r->sh->cons, r->mine, memory_order_release);
}

/* Completion notification ----------------------------------------------------------------- */

/** Consumer: ask to be told of the next completion (solicited only, or any). */
static inline void uroce_ring_arm(struct uroce_ring *r, bool solicited_only)
{
	/* seq_cst: the arm must be ordered before the consumer's next poll of the producer
	 * index (verbs' "arm, then poll again" closes the race of a completion that lands
	 * between the last poll and the arm); a release store would not order that load. */
	atomic_store_explicit(&r->sh->armed, solicited_only ? 2u : 1u, memory_order_seq_cst);
}

/** Producer, after committing a completion: true once per arming if it must signal
 *  (the caller signals the completion channel). */
static inline bool uroce_ring_take_arm(struct uroce_ring *r, bool solicited)
{
	uint32_t a;

	/* seq_cst fence: orders our index store (commit) before the load of the arm flag,
	 * the mirror of uroce_ring_arm; with both sides seq_cst, either the consumer's
	 * re-poll sees the completion or we see the arm (Dekker). */
	atomic_thread_fence(memory_order_seq_cst);
	a = atomic_load_explicit(&r->sh->armed, memory_order_relaxed);
	if (a == 0 || (a == 2 && !solicited))
		return false;
	/* Only one signal per arming even if several completions race to take it. */
	return atomic_compare_exchange_strong_explicit(&r->sh->armed, &a, 0u,
						       memory_order_acq_rel, memory_order_relaxed);
}

/* Waking a sleeping consumer ---------------------------------------------------------------- */

/*
 * A consumer that polls rings (the daemon) may sleep in a system call when it has had no
 * work for a while. Producers (the applications) must then wake it, yet a producer must
 * not pay a system call per post while the consumer polls. The consumer announces that
 * it sleeps in a word the producer reads after each commit; the producer rings the
 * consumer (a system call: lib/client sends a datagram) only when it finds the
 * announcement, and takes it down as it does, so a burst of posts costs one call.
 *
 * The same Dekker pairing as the arm protocol above:
 *   consumer: announce (store), fence, re-read every producer index, sleep if none moved;
 *   producer: commit (store), fence, read the announcement, ring if it is up.
 * Either the consumer sees the commit or the producer sees the announcement.
 */
struct uroce_shm_wake {
	_Alignas(UROCE_SHM_CACHELINE) _Atomic uint32_t sleeping; /* 1: ring the consumer */
	uint32_t reserved[15];
};

static_assert(sizeof(struct uroce_shm_wake) == UROCE_SHM_CACHELINE,
	       "the announcement: alone on its line, which producers only read");

/** Consumer: announces that it may sleep. Follow the announcements with
 *  uroce_wake_fence(), then re-read the producer indices (uroce_ring_cons_moved()). */
static inline void uroce_wake_announce(struct uroce_shm_wake *w)
{
	atomic_store_explicit(&w->sleeping, 1u, memory_order_relaxed);
}

/** Consumer: orders its announcements before its next reads of the producer indices. */
static inline void uroce_wake_fence(void)
{
	/* seq_cst: a store followed by a load of another location needs a full fence; it
	 * pairs with the one in uroce_wake_take. */
	atomic_thread_fence(memory_order_seq_cst);
}

/** Consumer: awake again (it polls every ring before it could sleep next). */
static inline void uroce_wake_withdraw(struct uroce_shm_wake *w)
{
	atomic_store_explicit(&w->sleeping, 0u, memory_order_relaxed);
}

/** Producer, after uroce_ring_prod_commit(): true once per announcement, when the caller
 *  must ring the consumer. */
static inline bool uroce_wake_take(struct uroce_shm_wake *w)
{
	/* seq_cst fence: orders our index store before the load of the announcement, the
	 * mirror of uroce_wake_fence. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&w->sleeping, memory_order_relaxed) == 0)
		return false;
	/* One ring per announcement even if several threads post at once. */
	return atomic_exchange_explicit(&w->sleeping, 0u, memory_order_relaxed) != 0;
}

/* Blocking a consumer thread until the producer commits ------------------------------------ */

/*
 * The other direction: an application thread that polls completion rings may block in
 * the kernel instead of spinning, until the daemon commits to any of the rings a line of
 * this kind covers (one per application context). The producer bumps @c seq after every
 * batch of commits, whether anyone waits or not (one atomic add, no system call); it
 * makes the system call (a futex wake) only while @c waiters says a thread sleeps or is
 * about to.
 *
 * The pairing, Dekker again:
 *   consumer: snapshot seq before the polls it wants to sleep after; waiters += 1 (full
 *             barrier); futex-wait while seq still equals the snapshot; waiters -= 1;
 *   producer: commit, seq += 1, fence, read waiters, futex-wake if it is not 0.
 * Either the producer sees the waiter, or the waiter's futex-wait (which compares seq in
 * the kernel) sees the new seq and returns at once. A commit made before the snapshot was
 * visible to the polls made after it.
 *
 * The futex word is in memory mapped by both processes (MAP_SHARED): the shared, not the
 * private, futex operations. A process that scribbles on the line can make the daemon
 * issue wake-ups for nobody, on its own completions only, or make its own threads sleep
 * until their time-out: it can hurt nobody else.
 */
struct uroce_shm_waiters {
	_Alignas(UROCE_SHM_CACHELINE) _Atomic uint32_t seq; /* the futex word */
	_Atomic uint32_t waiters; /* threads asleep on seq, or about to be */
	uint32_t reserved[14];
};

static_assert(sizeof(struct uroce_shm_waiters) == UROCE_SHM_CACHELINE,
	       "the waiters' line: the producer writes it once per batch, alone on its line");

/** Consumer: the value to sleep on; take it before the last polls that found nothing. */
static inline uint32_t uroce_waiters_snapshot(const struct uroce_shm_waiters *w)
{
	/* acquire: a commit whose seq bump we see is visible to the polls that follow. */
	return atomic_load_explicit(&w->seq, memory_order_acquire);
}

/**
 * Consumer: sleeps until the producer bumps seq past @p snapshot, or @p timeout_ns pass.
 * @return 0 woken (or seq had moved already: poll again), -ETIMEDOUT, -EINTR (a signal),
 *         or another -errno of futex(2).
 */
int uroce_waiters_sleep(struct uroce_shm_waiters *w, uint32_t snapshot, uint64_t timeout_ns);

/** Producer, after committing to the rings the line covers: true when the caller must
 *  call uroce_waiters_wake(). */
static inline bool uroce_waiters_notify(struct uroce_shm_waiters *w)
{
	/* release: the commits are visible to whoever sees the new seq. */
	atomic_fetch_add_explicit(&w->seq, 1u, memory_order_release);
	/* seq_cst fence: the bump is ordered before the load of waiters, the mirror of the
	 * consumer's increment (a full barrier) before its futex-wait reads seq. */
	atomic_thread_fence(memory_order_seq_cst);
	return atomic_load_explicit(&w->waiters, memory_order_relaxed) != 0;
}

/** Producer: wakes every thread asleep on @p w. @return 0 or -errno of futex(2). */
int uroce_waiters_wake(struct uroce_shm_waiters *w);

/* A doorbell summary: which rings have news --------------------------------------------------- */

/*
 * A consumer of many rings (the daemon, of every queue of an application) would otherwise
 * load every ring's producer index on every turn: a cache line per ring, for rings that
 * are mostly idle. Instead each ring has a slot in its producers' summary, a two-level
 * bitmap: after committing, the producer sets its slot's bit, and the bit of that bit's
 * word one level up. The consumer reads the few top words, and takes (exchanges with 0)
 * only the words they point at, then the rings whose bits were set.
 *
 * Ordering: producer: commit (release), set the slot's bit (a release RMW), and, only when
 * that word was 0 before, the top bit (release RMW); consumer: take the top word, then
 * each word it names (acquire), then read those rings' producer indices. A bit taken
 * after the commit it announces shows that commit; a commit after the take sets the bit
 * again. A producer that finds the word non-zero leaves the top bit to whoever set the
 * first bit of it: that one sets it after its own, or the consumer has yet to take it.
 * A consumer that took more bits than it had room for puts them back as a producer
 * would, the word's bits first, then the top bit.
 *
 * The bits are a hint a producer gives about its own rings: one that does not set them
 * delays only its own work, one that sets too many costs the consumer a look at rings
 * with nothing new.
 */
#define UROCE_SUMMARY_WORD_BITS 64u

/** Bytes of a summary of @p slots slots (a multiple of 4096): the top words, then the
 *  slot words. */
static inline uint64_t uroce_summary_bytes(uint32_t slots)
{
	uint32_t words = slots / UROCE_SUMMARY_WORD_BITS;

	return ((uint64_t)words / UROCE_SUMMARY_WORD_BITS + words) * sizeof(uint64_t);
}

/** One side's handle on a summary in shared memory. */
struct uroce_summary {
	_Atomic uint64_t *top;   /* bit w: word w of bits may have bits set */
	_Atomic uint64_t *bits;  /* bit s % 64 of word s / 64: slot s */
	uint32_t slots;
};

/** Points @p s at the summary of @p slots slots (a multiple of 4096) at @p mem, 8-byte
 *  aligned, zeroed by whoever created it. @return 0 or -EINVAL. */
int uroce_summary_open(struct uroce_summary *s, void *mem, uint32_t slots);

/** Producer, after committing to the ring of @p slot: announces it. */
static inline void uroce_summary_set(struct uroce_summary *s, uint32_t slot)
{
	uint32_t w = slot / UROCE_SUMMARY_WORD_BITS;
	uint64_t old;

	if (slot >= s->slots)
		return;
	old = atomic_fetch_or_explicit(&s->bits[w], 1ull << (slot % UROCE_SUMMARY_WORD_BITS),
				       memory_order_release);
	if (old == 0)
		atomic_fetch_or_explicit(&s->top[w / UROCE_SUMMARY_WORD_BITS],
					 1ull << (w % UROCE_SUMMARY_WORD_BITS),
					 memory_order_release);
}

/** Consumer: true when some slot is announced (nothing is taken). For the check made
 *  after announcing a sleep (uroce_wake_fence), which this pairs with as the ring
 *  indices do. */
bool uroce_summary_pending(const struct uroce_summary *s);

/**
 * Consumer: takes announced slots into @p slots, at most @p max of them (in no promised
 * order). When more are announced than fit, the rest stay announced, as a producer would
 * have left them: the next take returns them, nothing is lost. A slot set again after
 * the take (by the consumer too) is announced again.
 * @return how many slots were written to @p slots: @p max when some may be left.
 */
uint32_t uroce_summary_take(struct uroce_summary *s, uint32_t *slots, uint32_t max);

#ifdef __cplusplus
}
#endif

#endif /* UROCE_SHM_H */
