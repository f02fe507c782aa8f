/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/shm: regions shared across processes, and the SPSC rings that are the doorbells. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "uroce_shm.h"

#define KIND_TEST 0x7e57

struct elem {
	uint64_t seq;
	uint64_t check;
};

static uint64_t check_of(uint64_t seq)
{
	return seq * 0x9e3779b97f4a7c15ull ^ 0x5555;
}

/*
 * fork() for the two-process tests: the child is killed when the test process ends. A
 * test that fails or times out ends its process while the child may be spinning on a
 * ring the parent no longer serves; it would spin for ever and load the machine for
 * every test after it (a CI run lost its shm test so, beside such leftovers).
 */
static pid_t fork_child(void)
{
	pid_t parent = getpid(), pid = fork();

	if (pid == 0 && (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent))
		_exit(9); /* the parent is already gone */
	return pid;
}

Test(region, create_attach_in_another_process_and_see_each_others_writes)
{
	struct uroce_shm_region r;
	pid_t pid;
	int status;

	cr_assert_eq(uroce_shm_create(&r, "uroce-test", 100000, KIND_TEST, false), 0);
	cr_assert_geq(r.size, 100000);
	cr_assert_eq(r.size % (uint64_t)sysconf(_SC_PAGESIZE), 0);
	((uint8_t *)r.addr)[4096] = 0xab;
	pid = fork_child();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* The child maps the same memfd anew, as the daemon does with a received fd. */
		struct uroce_shm_region c;
		int fd = dup(r.fd);

		if (uroce_shm_attach(&c, fd, KIND_TEST) != 0 || ((uint8_t *)c.addr)[4096] != 0xab)
			_exit(1);
		((uint8_t *)c.addr)[4097] = 0xcd;
		uroce_shm_close(&c);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_expect_eq(((uint8_t *)r.addr)[4097], 0xcd);
	uroce_shm_close(&r);
}

Test(region, version_and_kind_mismatches_are_refused)
{
	struct uroce_shm_region r, a;
	struct uroce_shm_hdr *h;

	cr_assert_eq(uroce_shm_create(&r, "uroce-test", 4096, KIND_TEST, false), 0);
	h = r.addr;
	cr_expect_eq(uroce_shm_attach(&a, dup(r.fd), KIND_TEST + 1), -EINVAL);
	h->version = UROCE_SHM_VERSION + 1;
	cr_expect_eq(uroce_shm_attach(&a, dup(r.fd), KIND_TEST), -EPROTO);
	h->version = UROCE_SHM_VERSION;
	h->magic = 0;
	cr_expect_eq(uroce_shm_attach(&a, dup(r.fd), KIND_TEST), -EPROTO);
	h->magic = UROCE_SHM_MAGIC;
	cr_assert_eq(uroce_shm_attach(&a, dup(r.fd), KIND_TEST), 0);
	uroce_shm_close(&a);
	uroce_shm_close(&r);
}

/* Reserves 2 MiB hugepages for the test and gives them back after. */
static long read_nr_hugepages(void)
{
	FILE *f = fopen("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "r");
	long n = -1;

	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

static bool write_nr_hugepages(long n)
{
	FILE *f = fopen("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "w");
	bool ok;

	if (!f)
		return false;
	ok = fprintf(f, "%ld\n", n) > 0;
	return fclose(f) == 0 && ok;
}

Test(region, hugepages_when_reserved_and_ordinary_pages_otherwise)
{
	struct uroce_shm_region r;
	long before = read_nr_hugepages();

	if (before < 0 || !write_nr_hugepages(before + 4) || read_nr_hugepages() < before + 4) {
		if (before >= 0)
			write_nr_hugepages(before);
		cr_skip_test("cannot reserve 2 MiB hugepages here (not root, or no memory)");
	}
	cr_assert_eq(uroce_shm_create(&r, "uroce-test-huge", 3 << 20, KIND_TEST, true), 0);
	cr_expect(r.huge, "a hugepage region was asked for with pages reserved");
	cr_expect_eq(r.size, 4ull << 20, "rounded up to whole 2 MiB pages");
	memset(r.addr, 1, r.size);
	uroce_shm_close(&r);
	cr_expect(write_nr_hugepages(before), "restoring nr_hugepages");

	/* With nothing reserved (or huge not allowed) it still works, on ordinary pages. */
	cr_assert_eq(uroce_shm_create(&r, "uroce-test", 3 << 20, KIND_TEST, false), 0);
	cr_expect(!r.huge);
	uroce_shm_close(&r);
}

Test(ring, format_and_open_check_what_they_are_given)
{
	static _Alignas(64) uint8_t mem[4096];
	struct uroce_ring r;

	cr_expect_eq(uroce_ring_format(mem, 3, 16), -EINVAL);   /* not a power of two */
	cr_expect_eq(uroce_ring_format(mem, 8, 12), -EINVAL);   /* not a multiple of 8 */
	cr_expect_eq(uroce_ring_format(mem + 8, 8, 16), -EINVAL); /* not cache aligned */
	cr_assert_eq(uroce_ring_format(mem, 16, 16), 0);
	cr_expect_eq(uroce_ring_open(&r, mem, uroce_ring_bytes(16, 16) - 1, true), -EINVAL);
	cr_expect_eq(uroce_ring_open(&r, mem, sizeof(mem), true), 0);
	/* A size written by a hostile process that would reach past the region: refused. */
	((struct uroce_ring_shared *)mem)->size = 1u << 20;
	cr_expect_eq(uroce_ring_open(&r, mem, sizeof(mem), false), -EINVAL);
}

Test(ring, full_empty_and_wrap_of_the_32_bit_indices)
{
	static _Alignas(64) uint8_t mem[8192];
	struct uroce_ring p, c;
	struct uroce_ring_shared *sh = (void *)mem;
	uint64_t next_out = 0, next_in = 0;

	cr_assert_eq(uroce_ring_format(mem, 8, 16), 0);
	/* Start just before the indices wrap. */
	atomic_store(&sh->prod, UINT32_MAX - 20);
	atomic_store(&sh->cons, UINT32_MAX - 20);
	cr_assert_eq(uroce_ring_open(&p, mem, sizeof(mem), true), 0);
	cr_assert_eq(uroce_ring_open(&c, mem, sizeof(mem), false), 0);
	cr_expect_eq(uroce_ring_cons_avail(&c), 0);
	for (int round = 0; round < 100; round++) {
		uint32_t space = uroce_ring_prod_space(&p), n = 1 + (uint32_t)round % 8, got;

		if (n > space)
			n = space;
		for (uint32_t i = 0; i < n; i++) {
			struct elem *e = uroce_ring_prod_slot(&p, i);
			e->seq = next_out;
			e->check = check_of(next_out++);
		}
		uroce_ring_prod_commit(&p, n);
		cr_assert_leq(uroce_ring_prod_space(&p) + n, 8);
		got = uroce_ring_cons_avail(&c);
		cr_assert_geq(got, n);
		for (uint32_t i = 0; i < got; i++) {
			const struct elem *e = uroce_ring_cons_slot(&c, i);
			cr_assert_eq(e->seq, next_in);
			cr_assert_eq(e->check, check_of(next_in++));
		}
		uroce_ring_cons_release(&c, got);
	}
	cr_expect_gt(next_in, 20, "the indices went through 2^32");
	/* Everything was consumed: the producer fits exactly 8 more, one at a time (its
	 * count is a lower bound that refreshes when it reads 0), then none. */
	{
		uint32_t filled = 0;

		while (uroce_ring_prod_space(&p) > 0 && filled < 100) {
			((struct elem *)uroce_ring_prod_slot(&p, 0))->seq = filled++;
			uroce_ring_prod_commit(&p, 1);
		}
		cr_expect_eq(filled, 8);
		cr_expect_eq(uroce_ring_prod_space(&p), 0);
		cr_expect_eq(uroce_ring_cons_avail(&c), 8);
	}
}

Test(ring, a_lying_producer_index_is_not_believed)
{
	static _Alignas(64) uint8_t mem[8192];
	struct uroce_ring c;
	struct uroce_ring_shared *sh = (void *)mem;

	cr_assert_eq(uroce_ring_format(mem, 8, 16), 0);
	cr_assert_eq(uroce_ring_open(&c, mem, sizeof(mem), false), 0);
	atomic_store(&sh->prod, 8 + 5); /* more than the ring can hold */
	cr_expect_eq(uroce_ring_cons_avail(&c), 0);
	cr_expect_eq(c.bogus, 1);
	atomic_store(&sh->prod, 3);
	cr_expect_eq(uroce_ring_cons_avail(&c), 3);
}

/* Two processes, as application and daemon: the parent produces N elements through a
 * small ring (so it is full and empty all the time), the child checks order and content
 * and answers through a second ring, the "CQ", each answer acknowledging an element. */
Test(ring, two_processes_stress_in_order_and_intact, .timeout = 120)
{
	const uint64_t n = 2000000;
	struct uroce_shm_region r;
	uint8_t *base;
	uint64_t sq_off = 64 * 8, cq_off;
	pid_t pid;
	int status;

	cq_off = sq_off + ((uroce_ring_bytes(16, 16) + 63) & ~63ull);
	cr_assert_eq(uroce_shm_create(&r, "uroce-test-rings", cq_off + uroce_ring_bytes(16, 16),
				      KIND_TEST, false),
		     0);
	base = r.addr;
	cr_assert_eq(uroce_ring_format(base + sq_off, 16, 16), 0);
	cr_assert_eq(uroce_ring_format(base + cq_off, 16, 16), 0);
	pid = fork_child();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct uroce_ring sq, cq;
		uint64_t expect = 0;

		if (uroce_ring_open(&sq, base + sq_off, 4096, false) ||
		    uroce_ring_open(&cq, base + cq_off, 4096, true))
			_exit(2);
		while (expect < n) {
			uint32_t got = uroce_ring_cons_avail(&sq), room;

			/* Both sides spin: on a CPU they share, or beside other work, a side
			 * with nothing to do gives the CPU to the other rather than wait out
			 * its time slice (the test then took minutes on a loaded machine). */
			if (got == 0) {
				sched_yield();
				continue;
			}
			room = uroce_ring_prod_space(&cq);
			if (got > room)
				got = room;
			for (uint32_t i = 0; i < got; i++) {
				const struct elem *e = uroce_ring_cons_slot(&sq, i);
				struct elem *a = uroce_ring_prod_slot(&cq, i);

				if (e->seq != expect || e->check != check_of(expect))
					_exit(3);
				a->seq = expect++;
				a->check = ~e->check;
			}
			uroce_ring_cons_release(&sq, got);
			uroce_ring_prod_commit(&cq, got);
		}
		_exit(sq.bogus || cq.bogus ? 4 : 0);
	}
	{
		struct uroce_ring sq, cq;
		uint64_t sent = 0, acked = 0;

		cr_assert_eq(uroce_ring_open(&sq, base + sq_off, 4096, true), 0);
		cr_assert_eq(uroce_ring_open(&cq, base + cq_off, 4096, false), 0);
		while (acked < n) {
			uint32_t space = uroce_ring_prod_space(&sq), got;

			for (uint32_t i = 0; i < space && sent < n; i++, sent++) {
				struct elem *e = uroce_ring_prod_slot(&sq, 0);
				e->seq = sent;
				e->check = check_of(sent);
				uroce_ring_prod_commit(&sq,
						       1); /* one doorbell per WQE, as a post */
			}
			got = uroce_ring_cons_avail(&cq);
			if (space == 0 && got == 0)
				sched_yield(); /* as the child does */
			for (uint32_t i = 0; i < got; i++) {
				const struct elem *a = uroce_ring_cons_slot(&cq, i);

				cr_assert_eq(a->seq, acked, "answer %lu for %lu",
					     (unsigned long)a->seq, (unsigned long)acked);
				cr_assert_eq(a->check, ~check_of(acked));
				acked++;
			}
			uroce_ring_cons_release(&cq, got);
		}
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	uroce_shm_close(&r);
}

/* The producer of the wake-up tests below, in a forked child: @p rounds elements numbered
 * in order into the ring at @p mem, @p after_commit after each commit (false: exit 3),
 * and a pause every 7th so that the consumer falls asleep sometimes. Never returns. */
static _Noreturn void produce_in_child(void *mem, int rounds,
				       bool (*after_commit)(struct uroce_ring *ring, void *arg),
				       void *arg)
{
	struct uroce_ring ring;

	if (uroce_ring_open(&ring, mem, 4096, true))
		_exit(2);
	for (int i = 0; i < rounds; i++) {
		while (uroce_ring_prod_space(&ring) == 0)
			sched_yield(); /* the consumer may share our CPU */
		((struct elem *)uroce_ring_prod_slot(&ring, 0))->seq = (uint64_t)i;
		uroce_ring_prod_commit(&ring, 1);
		if (!after_commit(&ring, arg))
			_exit(3);
		if (i % 7 == 0)
			usleep(1);
	}
	_exit(0);
}

/* The consumer's side: takes the @p got elements there are, each the next in order. */
static void take_in_order(struct uroce_ring *ring, uint32_t got, int *seen)
{
	for (uint32_t i = 0; i < got; i++, ++*seen)
		cr_assert_eq(((const struct elem *)uroce_ring_cons_slot(ring, i))->seq,
			     (uint64_t)*seen);
	uroce_ring_cons_release(ring, got);
}

static bool write_one(int efd)
{
	static const uint64_t one = 1;

	return write(efd, &one, sizeof(one)) == (ssize_t)sizeof(one);
}

/* The daemon after a CQ commit: signal the channel when the CQ was armed. */
static bool signal_if_armed(struct uroce_ring *ring, void *arg)
{
	return !uroce_ring_take_arm(ring, false) || write_one(*(int *)arg);
}

/* Completion notification across processes: arm, re-poll, sleep on the eventfd; the
 * producer signals exactly when armed. Many rounds, to hit the arm/commit race. */
Test(ring, armed_completion_wakes_the_consumer_exactly_once, .timeout = 120)
{
	const int rounds = 20000;
	struct uroce_shm_region r;
	struct uroce_ring cq;
	int efd = eventfd(0, EFD_CLOEXEC);
	int seen = 0, sleeps = 0;
	pid_t pid;
	int status;

	cr_assert_geq(efd, 0);
	cr_assert_eq(uroce_shm_create(&r, "uroce-test-cq", 64 + uroce_ring_bytes(64, 16), KIND_TEST,
				      false),
		     0);
	cr_assert_eq(uroce_ring_format((uint8_t *)r.addr + 64, 64, 16), 0);
	pid = fork_child();
	cr_assert_geq(pid, 0);
	if (pid == 0) /* the producer of completions (the daemon) */
		produce_in_child((uint8_t *)r.addr + 64, rounds, signal_if_armed, &efd);
	cr_assert_eq(uroce_ring_open(&cq, (uint8_t *)r.addr + 64, 4096, false), 0);
	while (seen < rounds) {
		uint32_t got = uroce_ring_cons_avail(&cq);

		if (got == 0) {
			/* verbs' pattern: arm, poll once more, only then sleep */
			struct pollfd p = {.fd = efd, .events = POLLIN};
			uint64_t v;

			uroce_ring_arm(&cq, false);
			if (uroce_ring_cons_avail(&cq) > 0)
				continue;
			cr_assert_eq(poll(&p, 1, 10000), 1, "no wake-up: a lost notification");
			cr_assert_eq(read(efd, &v, 8), 8);
			sleeps++;
			continue;
		}
		take_in_order(&cq, got, &seen);
	}
	cr_log_info("%d sleeps on the eventfd", sleeps);
	cr_expect_gt(sleeps, 0, "the consumer never had to sleep: the test proved nothing");
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(efd);
	uroce_shm_close(&r);
}

struct wake_arg {
	struct uroce_shm_wake *wake;
	int efd;
};

/* An application after a post: ring the daemon's eventfd when it announced a sleep. */
static bool ring_if_announced(struct uroce_ring *ring, void *arg)
{
	const struct wake_arg *a = arg;

	(void)ring;
	return !uroce_wake_take(a->wake) || write_one(a->efd);
}

/* The wake protocol, the other way round: the consumer (the daemon) sleeps on an eventfd
 * once its ring is empty, after announcing so; the producer (an application) rings only
 * when it finds the announcement. No post may be left unseen by a sleeping consumer. */
Test(ring, a_sleeping_consumer_is_woken_by_every_post_it_announced_a_sleep_for, .timeout = 120)
{
	const int rounds = 20000;
	const uint64_t ring_at = 2 * UROCE_SHM_CACHELINE;
	struct uroce_shm_region r;
	struct wake_arg arg = {.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
	struct uroce_ring sq;
	int seen = 0, sleeps = 0, backed_out = 0;
	pid_t pid;
	int status;

	cr_assert_geq(arg.efd, 0);
	cr_assert_eq(uroce_shm_create(&r, "uroce-test-sq", ring_at + uroce_ring_bytes(64, 16),
				      KIND_TEST, false),
		     0);
	arg.wake = (void *)((uint8_t *)r.addr + UROCE_SHM_CACHELINE);
	cr_assert_eq(uroce_ring_format((uint8_t *)r.addr + ring_at, 64, 16), 0);
	pid = fork_child();
	cr_assert_geq(pid, 0);
	if (pid == 0) /* the producer of WQEs (the application) */
		produce_in_child((uint8_t *)r.addr + ring_at, rounds, ring_if_announced, &arg);
	cr_assert_eq(uroce_ring_open(&sq, (uint8_t *)r.addr + ring_at, 4096, false), 0);
	while (seen < rounds) {
		uint32_t got = uroce_ring_cons_avail(&sq);

		if (got == 0) {
			/* the daemon's pattern: announce, fence, look again, sleep */
			struct pollfd p = {.fd = arg.efd, .events = POLLIN};
			uint64_t v;

			uroce_wake_announce(arg.wake);
			uroce_wake_fence();
			if (uroce_ring_cons_moved(&sq)) {
				uroce_wake_withdraw(arg.wake);
				backed_out++;
				continue;
			}
			cr_assert_eq(poll(&p, 1, 10000), 1, "no wake-up: a lost doorbell");
			uroce_wake_withdraw(arg.wake);
			cr_assert_eq(read(arg.efd, &v, 8), 8);
			sleeps++;
			continue;
		}
		take_in_order(&sq, got, &seen);
	}
	cr_log_info("%d sleeps, %d announcements taken back", sleeps, backed_out);
	cr_expect_gt(sleeps, 0, "the consumer never slept: the test proved nothing");
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(arg.efd);
	uroce_shm_close(&r);
}

/* The daemon after a CQ commit: bump the waiters' line, wake if someone sleeps on it. */
static bool wake_waiters(struct uroce_ring *ring, void *arg)
{
	struct uroce_shm_waiters *w = arg;

	(void)ring;
	return !uroce_waiters_notify(w) || uroce_waiters_wake(w) == 0;
}

/* A consumer thread that blocks in the kernel (poll_cq's "block" policy): the snapshot
 * before the last poll, then a futex sleep; the producer bumps and wakes after each
 * commit. Across processes, since the daemon and the application are two. No commit may
 * be left unseen by a sleeper: each sleep has 10 s, and must end long before. */
Test(waiters, a_blocked_consumer_is_woken_by_every_commit_after_its_snapshot, .timeout = 120)
{
	const int rounds = 20000;
	const uint64_t ring_at = 2 * UROCE_SHM_CACHELINE;
	struct uroce_shm_region r;
	struct uroce_shm_waiters *w;
	struct uroce_ring cq;
	int seen = 0, sleeps = 0;
	pid_t pid;
	int status;

	cr_assert_eq(uroce_shm_create(&r, "uroce-test-cq", ring_at + uroce_ring_bytes(64, 16),
				      KIND_TEST, false),
		     0);
	w = (void *)((uint8_t *)r.addr + UROCE_SHM_CACHELINE);
	cr_assert_eq(uroce_ring_format((uint8_t *)r.addr + ring_at, 64, 16), 0);
	pid = fork_child();
	cr_assert_geq(pid, 0);
	if (pid == 0) /* the producer of completions (the daemon) */
		produce_in_child((uint8_t *)r.addr + ring_at, rounds, wake_waiters, w);
	cr_assert_eq(uroce_ring_open(&cq, (uint8_t *)r.addr + ring_at, 4096, false), 0);
	while (seen < rounds) {
		uint32_t snapshot = uroce_waiters_snapshot(w);
		uint32_t got = uroce_ring_cons_avail(&cq);

		if (got == 0) {
			int rc = uroce_waiters_sleep(w, snapshot, 10000000000ull);

			cr_assert(rc == 0 || rc == -EINTR, "sleep: %s (a lost wake-up)",
				  strerror(-rc));
			sleeps++;
			continue;
		}
		take_in_order(&cq, got, &seen);
	}
	cr_log_info("%d sleeps", sleeps);
	cr_expect_gt(sleeps, 0, "the consumer never slept: the test proved nothing");
	cr_expect_eq(atomic_load(&w->waiters), 0u, "every sleeper counted itself out");
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	uroce_shm_close(&r);
}

/* The two ways a sleep ends without a wake: the seq moved since the snapshot (at once),
 * and the time-out (not before it). */
Test(waiters, a_stale_snapshot_returns_at_once_and_a_quiet_line_times_out)
{
	static struct uroce_shm_waiters w;
	struct timespec t0, t1;
	uint32_t snapshot = uroce_waiters_snapshot(&w);
	int64_t ns;

	cr_expect_not(uroce_waiters_notify(&w), "nobody waits");
	cr_assert_eq(uroce_waiters_sleep(&w, snapshot, 10000000000ull), 0,
		     "seq moved since the snapshot: no sleep");
	snapshot = uroce_waiters_snapshot(&w);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(uroce_waiters_sleep(&w, snapshot, 20000000ull), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ns = (t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec);
	cr_expect_geq(ns, 20000000ll, "slept %lld ns of 20 ms", (long long)ns);
	cr_expect_eq(atomic_load(&w.waiters), 0u);
	cr_expect_eq(uroce_waiters_wake(&w), 0, "a wake with nobody asleep is harmless");
}

/* ---- the doorbell summary ---- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Slots at the edges of words and of top words come back once each, and only once. */
Test(summary_take, each_set_slot_is_taken_once)
{
	static const uint32_t set[] = {0, 63, 64, 4095, 4096, 8191, 65535, 64, 0};
	static const uint32_t want[] = {0, 63, 64, 4095, 4096, 8191, 65535};
	static _Alignas(64) uint8_t mem[16384];
	struct uroce_summary s;
	uint32_t got[64];

	cr_assert_leq(uroce_summary_bytes(65536), sizeof(mem));
	cr_assert_eq(uroce_summary_open(&s, mem, 1000), -EINVAL, "not a multiple of 4096");
	cr_assert_eq(uroce_summary_open(&s, mem, 65536), 0);
	cr_expect_not(uroce_summary_pending(&s));
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++)
		uroce_summary_set(&s, set[i]);
	uroce_summary_set(&s, 65536); /* out of range: ignored */
	cr_expect(uroce_summary_pending(&s));
	cr_assert_eq(uroce_summary_take(&s, got, 64), 7);
	qsort(got, 7, sizeof(got[0]), cmp_u32);
	for (size_t i = 0; i < 7; i++)
		cr_expect_eq(got[i], want[i], "slot %zu: %u", i, got[i]);
	cr_expect_not(uroce_summary_pending(&s));
	cr_expect_eq(uroce_summary_take(&s, got, 64), 0, "taken once");
}

/* More slots announced than the caller has room for: the rest stay announced, in the
 * word it was taking and in the words after it, and the next takes return them. */
Test(summary_take, what_does_not_fit_stays_set_for_the_next_take)
{
	static _Alignas(64) uint8_t mem[16384];
	struct uroce_summary s;
	uint32_t got[8], all[20], n = 0, k;

	cr_assert_eq(uroce_summary_open(&s, mem, 65536), 0);
	for (uint32_t i = 0; i < 10; i++) {
		uroce_summary_set(&s, i);            /* one word: 10 slots */
		uroce_summary_set(&s, 8192 + i * 64); /* another top word: 10 words */
	}
	cr_expect_eq(uroce_summary_take(&s, got, 0), 0, "no room: nothing taken");
	while ((k = uroce_summary_take(&s, got, 3)) != 0) {
		cr_assert_leq(k, 3);
		cr_assert_leq(n + k, 20, "a slot came back twice");
		memcpy(all + n, got, k * sizeof(got[0]));
		n += k;
		cr_expect(k == 3 || !uroce_summary_pending(&s), "a short take took the rest");
	}
	cr_assert_eq(n, 20);
	qsort(all, n, sizeof(all[0]), cmp_u32);
	for (uint32_t i = 0; i < 10; i++) {
		cr_expect_eq(all[i], i);
		cr_expect_eq(all[10 + i], 8192 + i * 64);
	}
	cr_expect_not(uroce_summary_pending(&s));
}

#define SUM_RINGS 16
#define SUM_SLOT(i) ((uint32_t)(i) * 4099u % 65536u) /* spread over words and top words */

/* The consumer's turn: the rings whose slots it takes, @p max at a time. */
static void take_announced(struct uroce_summary *s, struct uroce_ring *rings, int *seen,
			   uint32_t max)
{
	uint32_t slots[SUM_RINGS], n;

	do {
		n = uroce_summary_take(s, slots, max);
		for (uint32_t k = 0; k < n; k++)
			for (int i = 0; i < SUM_RINGS; i++)
				if (SUM_SLOT(i) == slots[k])
					take_in_order(&rings[i], uroce_ring_cons_avail(&rings[i]),
						      &seen[i]);
	} while (n == max);
}

/* Many rings, one summary, two processes: the consumer looks only at the rings the
 * summary names, and must still see every element of every ring, in order. */
Test(summary_take, a_consumer_that_reads_only_the_summary_misses_no_commit, .timeout = 120)
{
	const int rounds = 20000;
	const uint64_t ring_bytes = uroce_ring_bytes(64, 16);
	const uint64_t sum_bytes = uroce_summary_bytes(65536);
	struct uroce_shm_region r;
	struct uroce_ring rings[SUM_RINGS];
	struct uroce_summary s;
	int seen[SUM_RINGS] = {0}, total = 0;
	struct timespec last, now;
	pid_t pid;
	int status;

	cr_assert_eq(uroce_shm_create(&r, "uroce-test-sum", sum_bytes + SUM_RINGS * ring_bytes,
				      KIND_TEST, false),
		     0);
	cr_assert_eq(uroce_summary_open(&s, r.addr, 65536), 0);
	for (int i = 0; i < SUM_RINGS; i++)
		cr_assert_eq(uroce_ring_format((uint8_t *)r.addr + sum_bytes + i * ring_bytes, 64,
					       16),
			     0);
	pid = fork_child();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* The producer: an application posting on its queues in turn. */
		for (int i = 0; i < SUM_RINGS; i++)
			if (uroce_ring_open(&rings[i],
					    (uint8_t *)r.addr + sum_bytes + i * ring_bytes,
					    ring_bytes, true))
				_exit(2);
		for (int k = 0; k < rounds; k++) {
			int i = (int)((unsigned int)k * 7u % SUM_RINGS);
			uint32_t seq = (uint32_t)(k / SUM_RINGS);

			while (uroce_ring_prod_space(&rings[i]) == 0)
				sched_yield(); /* the consumer may share our CPU */
			((struct elem *)uroce_ring_prod_slot(&rings[i], 0))->seq = seq;
			uroce_ring_prod_commit(&rings[i], 1);
			uroce_summary_set(&s, SUM_SLOT(i));
			if (k % 13 == 0)
				usleep(1);
		}
		_exit(0);
	}
	for (int i = 0; i < SUM_RINGS; i++) {
		void *at = (uint8_t *)r.addr + sum_bytes + i * ring_bytes;

		cr_assert_eq(uroce_ring_open(&rings[i], at, ring_bytes, false), 0);
	}
	/* Until every element came: a lost announcement leaves a ring's elements unseen
	 * for good, and nothing comes for 10 s (the producer pauses for microseconds). */
	clock_gettime(CLOCK_MONOTONIC, &last);
	while (total < rounds) {
		int before = total;

		/* Short batches, so that takes leave slots for the next (put back while
		 * the producer sets more). */
		take_announced(&s, rings, seen, (uint32_t)(before % 3) + 1);
		total = 0;
		for (int i = 0; i < SUM_RINGS; i++)
			total += seen[i];
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (total != before)
			last = now;
		else
			sched_yield(); /* the producer may share our CPU */
		cr_assert_lt(now.tv_sec - last.tv_sec, 10, "%d of %d elements, then nothing: lost",
			     total, rounds);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* The producer announces after it commits: the consumer may have read the last
	 * element through an earlier announcement, and this one may come after. One more
	 * take clears it and finds nothing new; then nothing is announced. (Expecting no
	 * announcement before this take failed once, in the ASan phase of a full run.) */
	take_announced(&s, rings, seen, SUM_RINGS);
	total = 0;
	for (int i = 0; i < SUM_RINGS; i++)
		total += seen[i];
	cr_expect_eq(total, rounds, "%d elements after the last take", total);
	cr_expect_not(uroce_summary_pending(&s));
	uroce_shm_close(&r);
}

/* uroce_ring_cons_moved re-reads the producer index whatever the cached view holds, and
 * says "moved" once per change. */
Test(ring, cons_moved_reports_each_change_of_the_producer_index_once)
{
	static _Alignas(64) uint8_t mem[8192];
	struct uroce_ring p, c;

	cr_assert_eq(uroce_ring_format(mem, 8, 16), 0);
	cr_assert_eq(uroce_ring_open(&p, mem, sizeof(mem), true), 0);
	cr_assert_eq(uroce_ring_open(&c, mem, sizeof(mem), false), 0);
	cr_expect_not(uroce_ring_cons_moved(&c));
	uroce_ring_prod_commit(&p, 2);
	cr_expect_eq(uroce_ring_cons_avail(&c), 2); /* cached: 2 */
	uroce_ring_prod_commit(&p, 1);              /* the cache does not know */
	cr_expect(uroce_ring_cons_moved(&c));
	cr_expect_not(uroce_ring_cons_moved(&c), "once per change");
	cr_expect_eq(uroce_ring_cons_avail(&c), 3);
	atomic_store(&((struct uroce_ring_shared *)mem)->prod, 100); /* a lie */
	cr_expect_not(uroce_ring_cons_moved(&c));
	cr_expect_eq(c.bogus, 1);
}
