/* SPDX-License-Identifier: BSD-3-Clause */
/* The neighbour cache: GID -> MAC with RFC 4861 7.3's states (the same machine serves
 * ARP, as Linux's neighbour layer does), a bounded LRU, waiters, and the probe timers.
 *
 * Memory is allocated once at create: neigh_max entries, a hash table of twice as many
 * chains, waiters_max waiter nodes. Timers need no heap: only INCOMPLETE and PROBE
 * entries have one, they sit on their own list, and REACHABLE turning STALE is noticed
 * when the entry is next used (RFC 4861 7.3.3 allows that: the state is what a use sees). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "ip_internal.h"

#define LINK_TO(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

static void link_init(struct ip_link *h)
{
	h->prev = h->next = h;
}

static void link_add_head(struct ip_link *h, struct ip_link *l)
{
	l->next = h->next;
	l->prev = h;
	h->next->prev = l;
	h->next = l;
}

static void link_del(struct ip_link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	link_init(l);
}

static bool link_linked(const struct ip_link *l)
{
	return l->next != l;
}

static uint32_t gid_hash(const uint8_t *gid, uint32_t mask)
{
	uint64_t a = wire_be64(gid), b = wire_be64(gid + 8);
	uint64_t h = (a * 0x9e3779b97f4a7c15ull) ^ b;

	h *= 0xbf58476d1ce4e5b9ull;
	return (uint32_t)(h >> 32) & mask;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

bool neigh_init(struct uroce_ip_stack *s)
{
	uint32_t i;

	s->nbucket = 1;
	while (s->nbucket < 2 * s->cfg.neigh_max)
		s->nbucket <<= 1;
	s->neigh = calloc(s->cfg.neigh_max, sizeof(*s->neigh));
	s->bucket = calloc(s->nbucket, sizeof(*s->bucket));
	s->waiter = calloc(s->cfg.waiters_max, sizeof(*s->waiter));
	if (s->neigh == NULL || s->bucket == NULL || s->waiter == NULL)
		return false;
	link_init(&s->lru);
	link_init(&s->probing);
	for (i = s->cfg.neigh_max; i-- > 0;) {
		link_init(&s->neigh[i].lru);
		link_init(&s->neigh[i].probing);
		s->neigh[i].hnext = s->free_neigh;
		s->free_neigh = &s->neigh[i];
	}
	for (i = s->cfg.waiters_max; i-- > 0;) {
		s->waiter[i].next = s->free_waiter;
		s->free_waiter = &s->waiter[i];
	}
	return true;
}

void neigh_fini(struct uroce_ip_stack *s)
{
	free(s->neigh);
	free(s->bucket);
	free(s->waiter);
}

struct ip_neigh *neigh_lookup(struct uroce_ip_stack *s, const uint8_t *gid)
{
	struct ip_neigh *n = s->bucket[gid_hash(gid, s->nbucket - 1)];

	while (n != NULL && memcmp(n->gid, gid, 16) != 0)
		n = n->hnext;
	return n;
}

static void neigh_free(struct uroce_ip_stack *s, struct ip_neigh *n)
{
	struct ip_neigh **pp = &s->bucket[gid_hash(n->gid, s->nbucket - 1)];

	while (*pp != n)
		pp = &(*pp)->hnext;
	*pp = n->hnext;
	link_del(&n->lru);
	if (link_linked(&n->probing))
		link_del(&n->probing);
	n->state = NEIGH_FREE;
	n->hnext = s->free_neigh;
	s->free_neigh = n;
	s->nneigh--;
}

/* A fresh entry for @gid, INCOMPLETE and unlinked from the probing list; NULL when every
 * entry has waiters. */
static struct ip_neigh *neigh_alloc(struct uroce_ip_stack *s, const uint8_t *gid)
{
	struct ip_neigh *n;
	uint32_t h;

	if (s->free_neigh == NULL) {
		struct ip_link *l;

		for (l = s->lru.prev; l != &s->lru; l = l->prev)
			if (LINK_TO(l, struct ip_neigh, lru)->wait_head == NULL)
				break;
		if (l == &s->lru)
			return NULL;
		neigh_free(s, LINK_TO(l, struct ip_neigh, lru));
		s->cnt.neigh_evicted++;
	}
	n = s->free_neigh;
	s->free_neigh = n->hnext;
	memcpy(n->gid, gid, 16);
	memset(n->mac, 0, ETH_ALEN);
	n->state = NEIGH_INCOMPLETE;
	n->probes = 0;
	n->confirmed_ns = 0;
	n->next_ns = 0;
	n->wait_head = n->wait_tail = NULL;
	h = gid_hash(gid, s->nbucket - 1);
	n->hnext = s->bucket[h];
	s->bucket[h] = n;
	link_add_head(&s->lru, &n->lru);
	s->nneigh++;
	return n;
}

struct ip_neigh *neigh_create(struct uroce_ip_stack *s, const uint8_t *gid, const uint8_t *mac)
{
	struct ip_neigh *n = neigh_alloc(s, gid);

	if (n != NULL) {
		memcpy(n->mac, mac, ETH_ALEN);
		n->state = NEIGH_STALE;
		s->cnt.neigh_learned++;
	}
	return n;
}

/* Moves the waiters of @n to the done queue with the outcome. */
static void neigh_settle(struct uroce_ip_stack *s, struct ip_neigh *n, int err)
{
	struct ip_waiter *w;

	for (w = n->wait_head; w != NULL; w = w->next) {
		memcpy(w->gid, n->gid, 16);
		memcpy(w->mac, n->mac, ETH_ALEN);
		w->err = err;
	}
	if (n->wait_head == NULL)
		return;
	if (s->done_tail)
		s->done_tail->next = n->wait_head;
	else
		s->done_head = n->wait_head;
	s->done_tail = n->wait_tail;
	n->wait_head = n->wait_tail = NULL;
}

void neigh_update(struct uroce_ip_stack *s, struct ip_neigh *n, const uint8_t *mac,
		  enum neigh_state state, uint64_t now)
{
	bool changed = mac != NULL && !mac_eq(mac, n->mac);

	if (n->state == NEIGH_INCOMPLETE) {
		if (mac == NULL)
			return;
		memcpy(n->mac, mac, ETH_ALEN);
		s->cnt.neigh_learned++;
		s->cnt.neigh_resolved++;
		neigh_settle(s, n, 0);
	} else if (state == NEIGH_STALE && mac != NULL && !changed) {
		/* Linux's neigh_update(): hearing the same address again says nothing new
		 * about reachability, so the entry keeps its state (and its probe). */
		return;
	} else if (changed) {
		memcpy(n->mac, mac, ETH_ALEN);
		s->cnt.neigh_learned++;
	}
	if (state == NEIGH_REACHABLE)
		n->confirmed_ns = now;
	if (link_linked(&n->probing) && state != NEIGH_PROBE && state != NEIGH_INCOMPLETE)
		link_del(&n->probing);
	n->state = (uint8_t)state;
}

/* Sends the next request of an INCOMPLETE entry (to everyone) or a PROBE one (unicast to
 * the MAC we doubt) and arms the timer. */
static void neigh_probe(struct uroce_ip_stack *s, struct ip_neigh *n, uint64_t now)
{
	const uint8_t *dst = n->state == NEIGH_PROBE ? n->mac : NULL;

	if (uroce_gid_is_ipv4(n->gid))
		arp_request(s, uroce_gid_ipv4(n->gid), dst);
	else
		ns_send(s, n->gid, dst);
	n->probes++;
	n->next_ns = add_sat(now, s->cfg.retrans_ns);
}

static void neigh_start_probing(struct uroce_ip_stack *s, struct ip_neigh *n,
				enum neigh_state state, uint64_t now)
{
	n->state = (uint8_t)state;
	n->probes = 0;
	if (!link_linked(&n->probing))
		link_add_head(&s->probing, &n->probing);
	neigh_probe(s, n, now);
}

static bool add_waiter(struct uroce_ip_stack *s, struct ip_neigh *n, uint64_t cookie)
{
	struct ip_waiter *w = s->free_waiter;

	if (w == NULL)
		return false;
	s->free_waiter = w->next;
	w->next = NULL;
	w->cookie = cookie;
	if (n->wait_tail)
		n->wait_tail->next = w;
	else
		n->wait_head = w;
	n->wait_tail = w;
	return true;
}

int uroce_ip_resolve(struct uroce_ip_stack *s, const uint8_t gid[16], uint64_t now,
		     uint8_t mac[6], uint64_t cookie)
{
	bool v4 = uroce_gid_is_ipv4(gid);
	struct ip_neigh *n;

	if (uroce_ip_is_local(s, gid)) {
		memcpy(mac, s->cfg.mac, ETH_ALEN);
		return 0;
	}
	/* Multicast groups map onto MACs without asking anyone: 01:00:5e and the low 23
	 * bits (RFC 1112 6.4), 33:33 and the low 32 bits (RFC 2464 7). */
	if (v4 && ip4_is_multicast(uroce_gid_ipv4(gid))) {
		const uint8_t m[ETH_ALEN] = {0x01, 0x00, 0x5e, gid[13] & 0x7f, gid[14], gid[15]};

		memcpy(mac, m, ETH_ALEN);
		return 0;
	}
	if (!v4 && ip6_is_multicast(gid)) {
		mac[0] = 0x33;
		mac[1] = 0x33;
		memcpy(mac + 2, gid + 12, 4);
		return 0;
	}
	if (v4 ? !ip4_is_unicast(uroce_gid_ipv4(gid)) : !ip6_is_unicast(gid))
		return -EINVAL;
	if (v4 && s->cfg.v4_count == 0)
		return -EADDRNOTAVAIL;

	n = neigh_lookup(s, gid);
	if (n != NULL) {
		link_del(&n->lru);
		link_add_head(&s->lru, &n->lru);
		switch ((enum neigh_state)n->state) {
		case NEIGH_INCOMPLETE:
			if (!add_waiter(s, n, cookie)) {
				s->cnt.resolve_nobufs++;
				return -ENOBUFS;
			}
			return -EAGAIN;
		case NEIGH_REACHABLE:
		case NEIGH_STALE:
			/* Used while doubtful (STALE, or REACHABLE for longer than reachable_ns,
			 * which is STALE by now): confirm it by unicast (RFC 4861 7.3.3), going
			 * straight to PROBE where Linux waits 5 s in DELAY first. */
			if (n->state == NEIGH_STALE || now - n->confirmed_ns >= s->cfg.reachable_ns)
				neigh_start_probing(s, n, NEIGH_PROBE, now);
			break;
		case NEIGH_PROBE:
		case NEIGH_FREE:
			break;
		}
		memcpy(mac, n->mac, ETH_ALEN);
		return 0;
	}

	n = neigh_alloc(s, gid);
	if (n == NULL || !add_waiter(s, n, cookie)) {
		if (n != NULL)
			neigh_free(s, n);
		s->cnt.resolve_nobufs++;
		return -ENOBUFS;
	}
	neigh_start_probing(s, n, NEIGH_INCOMPLETE, now);
	return -EAGAIN;
}

void uroce_ip_process(struct uroce_ip_stack *s, uint64_t now)
{
	struct ip_link *l, *next;

	/* Requests go out through tx, which may not call back into the stack, so the list
	 * only loses the entry at hand while we walk it. */
	for (l = s->probing.next; l != &s->probing; l = next) {
		struct ip_neigh *n = LINK_TO(l, struct ip_neigh, probing);

		next = l->next;
		if (now < n->next_ns)
			continue;
		if (n->probes < s->cfg.max_probes) {
			neigh_probe(s, n, now);
			continue;
		}
		/* No answer to max_probes requests: unreachable (RFC 4861 7.3.3). A PROBE
		 * entry goes too: its MAC is no longer believed. */
		s->cnt.neigh_failed++;
		neigh_settle(s, n, -EHOSTUNREACH);
		neigh_free(s, n);
	}
	neigh_deliver(s);
}

uint64_t uroce_ip_next_deadline(const struct uroce_ip_stack *s)
{
	uint64_t t = UINT64_MAX;

	for (const struct ip_link *l = s->probing.next; l != &s->probing; l = l->next) {
		const struct ip_neigh *n = LINK_TO(l, const struct ip_neigh, probing);

		if (n->next_ns < t)
			t = n->next_ns;
	}
	return t;
}

/* Unlinks the waiters with @cookie from the list at @head (last node at @tail) into the
 * free pool. */
static unsigned drop_waiters(struct uroce_ip_stack *s, struct ip_waiter **head,
			     struct ip_waiter **tail, uint64_t cookie)
{
	struct ip_waiter **pp = head, *last = NULL;
	unsigned dropped = 0;

	while (*pp != NULL) {
		struct ip_waiter *w = *pp;

		if (w->cookie == cookie) {
			*pp = w->next;
			w->next = s->free_waiter;
			s->free_waiter = w;
			dropped++;
		} else {
			last = w;
			pp = &w->next;
		}
	}
	*tail = last;
	return dropped;
}

unsigned uroce_ip_cancel(struct uroce_ip_stack *s, uint64_t cookie)
{
	unsigned dropped = drop_waiters(s, &s->done_head, &s->done_tail, cookie);

	/* Only INCOMPLETE entries have waiters, and they are all on the probing list. */
	for (struct ip_link *l = s->probing.next; l != &s->probing; l = l->next) {
		struct ip_neigh *n = LINK_TO(l, struct ip_neigh, probing);

		dropped += drop_waiters(s, &n->wait_head, &n->wait_tail, cookie);
	}
	return dropped;
}

void neigh_deliver(struct uroce_ip_stack *s)
{
	/* A callback that resolves or cancels is fine; one that got us here again (it may
	 * not) finds the outer loop still delivering. */
	if (s->delivering)
		return;
	s->delivering = true;
	while (s->done_head != NULL) {
		struct ip_waiter *w = s->done_head;
		uint8_t gid[16], mac[ETH_ALEN];
		uint64_t cookie = w->cookie;
		int err = w->err;

		s->done_head = w->next;
		if (s->done_head == NULL)
			s->done_tail = NULL;
		memcpy(gid, w->gid, 16);
		memcpy(mac, w->mac, ETH_ALEN);
		/* Back to the pool before the call, so the callback may resolve again. */
		w->next = s->free_waiter;
		s->free_waiter = w;
		if (s->cfg.resolved)
			s->cfg.resolved(s->cfg.ctx, cookie, gid, err ? NULL : mac, err);
	}
	s->delivering = false;
}
