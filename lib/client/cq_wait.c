/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What poll_cq does with the CPU while a CQ stays empty: the wait policy.
 *
 * Unmodified applications poll in a loop without a pause, and on a machine whose cores
 * are shared that loop may hold the very CPU the daemon needs to produce the completion.
 * The policy, chosen per process by the environment (read once per context):
 *
 *   UROCE_CQ_WAIT=yield   (default) every UROCE_CLIENT_EMPTY_POLLS empty polls in a row
 *                         (about a microsecond), sched_yield once: it costs nothing with
 *                         a CPU to ourselves, and lets the daemon in when it shares ours;
 *   UROCE_CQ_WAIT=spin    never give up the CPU: for a core dedicated to the thread;
 *   UROCE_CQ_WAIT=block   yield as above for UROCE_CQ_SPIN_US (default 50) of empty
 *                         polls, then sleep in the kernel until the daemon commits a
 *                         completion to any CQ of the context, for at most
 *                         UROCE_CQ_BLOCK_US (default 1000) per call, after which poll_cq
 *                         returns 0 as usual. An idle poller then costs no CPU.
 *
 * Blocking is bounded because ibv_poll_cq is not meant to block: a program that polls a
 * CQ and then checks something else (another device, a socket, shared memory) loses at
 * most UROCE_CQ_BLOCK_US per call. The sleep is on the context's waiters line (lib/shm,
 * uroce_waiters_*), which the daemon bumps after committing completions to any CQ of the
 * context, so a thread that polls two CQs in turn is woken by either.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_internal.h"

#define SPIN_US_DEFAULT 50u
#define BLOCK_US_DEFAULT 1000u
#define US_MAX 10000000u /* 10 s: above this a value is a mistake, not a policy */

static const char *const wait_names[] = {
	[CL_CQ_WAIT_YIELD] = "yield",
	[CL_CQ_WAIT_SPIN] = "spin",
	[CL_CQ_WAIT_BLOCK] = "block",
};

/* One environment variable in microseconds: @p def when unset, and when malformed too,
 * with a line on stderr (a typo must not go unnoticed, nor stop the device opening). */
static uint64_t env_us(const char *name, uint32_t def, uint32_t min)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long us;

	if (!v || !*v)
		return (uint64_t)def * 1000u;
	errno = 0;
	us = strtoull(v, &end, 10);
	if (errno || *end || v[0] == '-' || us < min || us > US_MAX) {
		fprintf(stderr, "uroce: %s=%s: expected microseconds from %u to %u; using %u\n",
			name, v, min, US_MAX, def);
		return (uint64_t)def * 1000u;
	}
	return (uint64_t)us * 1000u;
}

void cl_cq_wait_init(struct cl_cq_wait *w)
{
	const char *v = getenv("UROCE_CQ_WAIT");
	size_t i;

	w->mode = CL_CQ_WAIT_YIELD;
	if (v && *v) {
		for (i = 0; i < sizeof(wait_names) / sizeof(wait_names[0]); i++)
			if (strcmp(v, wait_names[i]) == 0)
				break;
		if (i < sizeof(wait_names) / sizeof(wait_names[0]))
			w->mode = (enum cl_cq_wait_mode)i;
		else
			fprintf(stderr, "uroce: UROCE_CQ_WAIT=%s: expected yield, spin or block; "
					"using yield\n", v);
	}
	w->spin_ns = env_us("UROCE_CQ_SPIN_US", SPIN_US_DEFAULT, 0);
	w->block_ns = env_us("UROCE_CQ_BLOCK_US", BLOCK_US_DEFAULT, 1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void cl_cq_before_poll(struct uroce_client_cq *cq)
{
	/* The snapshot must come before a poll that finds the ring empty (lib/shm): taken
	 * at the second poll of a streak, so a busy CQ never loads the daemon's line. */
	if (cq->ctx->cq_wait.mode != CL_CQ_WAIT_BLOCK || cq->empty_polls != 1)
		return;
	cq->waiters_snapshot = uroce_waiters_snapshot(cq->ctx->waiters);
	cq->streak_start_ns = now_ns();
}

bool cl_cq_empty(struct uroce_client_cq *cq, uint32_t *snapshot, uint64_t *timeout_ns)
{
	const struct cl_cq_wait *w = &cq->ctx->cq_wait;

	if (w->mode == CL_CQ_WAIT_SPIN)
		return false;
	if (++cq->empty_polls % UROCE_CLIENT_EMPTY_POLLS != 0)
		return false;
	/* Every UROCE_CLIENT_EMPTY_POLLS: yield, or sleep once the streak is long enough
	 * (empty_polls >= 2 here, so the snapshot was taken). */
	if (w->mode == CL_CQ_WAIT_BLOCK && now_ns() - cq->streak_start_ns >= w->spin_ns) {
		*snapshot = cq->waiters_snapshot;
		*timeout_ns = w->block_ns;
		return true;
	}
	*timeout_ns = 0;
	return true;
}

void cl_cq_sleep(struct uroce_client_cq *cq, uint32_t snapshot, uint64_t timeout_ns)
{
	int rc;

	if (!timeout_ns) {
		sched_yield();
		return;
	}
	rc = uroce_waiters_sleep(cq->ctx->waiters, snapshot, timeout_ns);
	if (rc == -ETIMEDOUT)
		return; /* the streak goes on: the next call sleeps again after one round */
	/* Woken (or a signal): completions are likely; spin again before the next sleep. */
	pthread_spin_lock(&cq->lock);
	cq->empty_polls = 0;
	pthread_spin_unlock(&cq->lock);
}
