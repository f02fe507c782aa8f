/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/ipstack's neighbour cache on a virtual clock: resolution by ARP and NS, retries
 * and failure, STALE re-probing, waiters and cancellation, LRU eviction, limits. */
#include <errno.h>

#include <criterion/criterion.h>

#include "ipt.h"

TestSuite(neigh, .init = ipt_setup, .fini = ipt_teardown);

static const uint8_t ZERO6[6];
static const uint8_t PEER2_MAC[6] = {0x02, 0x12, 0x34, 0x56, 0x78, 0x9a};

static void arp_reply_from(const uint8_t *mac, const uint8_t *ip, uint64_t now)
{
	uint8_t f[64];

	cr_assert_eq(ipt_input(f, fb_arp(f, 0, OUR_MAC, 2, mac, ip, OUR_MAC, OUR_V4), now),
		     UROCE_IP_CONSUMED);
}

static void check_arp_request(unsigned i, const uint8_t *dst_mac, const uint8_t *spa,
			      const uint8_t *tpa)
{
	static const uint8_t head[8] = {0, 1, 8, 0, 6, 4, 0, 1};
	const uint8_t *f = T.frame[i];

	cr_assert_eq(T.flen[i], 42);
	cr_assert_arr_eq(f, dst_mac, 6);
	cr_assert_arr_eq(f + 6, OUR_MAC, 6);
	cr_assert_eq(rd16(f + 12), 0x0806);
	cr_assert_arr_eq(f + 14, head, 8);
	cr_assert_arr_eq(f + 22, OUR_MAC, 6);
	cr_assert_arr_eq(f + 28, spa, 4);
	cr_assert_arr_eq(f + 32, ZERO6, 6);
	cr_assert_arr_eq(f + 38, tpa, 4);
}

Test(neigh, v4_request_reply_callback)
{
	uint8_t gid[16], mac[6] = {0};

	uroce_gid_from_ipv4(gid, PEER_V4);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 100, mac, 0xc0ffee), -EAGAIN);
	cr_assert_eq(T.nframes, 1);
	check_arp_request(0, BCAST, OUR_V4, PEER_V4);
	cr_assert_eq(uroce_ip_next_deadline(T.s), 100 + NS_PER_S);

	arp_reply_from(PEER_MAC, PEER_V4, 200);
	cr_assert_eq(T.nres, 1);
	cr_assert_eq(T.res[0].cookie, 0xc0ffee);
	cr_assert_arr_eq(T.res[0].gid, gid, 16);
	cr_assert(T.res[0].has_mac);
	cr_assert_arr_eq(T.res[0].mac, PEER_MAC, 6);
	cr_assert_eq(T.res[0].err, 0);
	cr_assert_eq(uroce_ip_next_deadline(T.s), UINT64_MAX);

	/* REACHABLE: answered from the cache, nothing sent. */
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 300, mac, 1), 0);
	cr_assert_arr_eq(mac, PEER_MAC, 6);
	cr_assert_eq(T.nframes, 1);
	cr_assert_eq(ipt_cnt()->neigh_resolved, 1);
	/* Later process calls do nothing. */
	uroce_ip_process(T.s, 10 * NS_PER_S);
	cr_assert_eq(T.nframes, 1);
	cr_assert_eq(T.nres, 1);
}

Test(neigh, source_address_is_the_closest_own)
{
	static const uint8_t far[4] = {192, 168, 5, 77};
	static const uint8_t peer_ll[16] = {0xfe, 0x80, [15] = 0x42};
	uint8_t gid[16], mac[6];

	uroce_gid_from_ipv4(gid, far);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 1), -EAGAIN);
	check_arp_request(0, BCAST, OUR_V4B, far);
	cr_assert_eq(uroce_ip_resolve(T.s, peer_ll, 0, mac, 2), -EAGAIN);
	cr_assert_arr_eq(T.frame[1] + 14 + 8, OUR_LL, 16, "link-local asks link-local");
	cr_assert_eq(uroce_ip_resolve(T.s, PEER_V6, 0, mac, 3), -EAGAIN);
	cr_assert_arr_eq(T.frame[2] + 14 + 8, OUR_V6, 16);
}

Test(neigh, v6_solicitation_advertisement_callback)
{
	static const uint8_t sn_mac[6] = {0x33, 0x33, 0xff, 0x00, 0x00, 0x02};
	static const uint8_t sn[16] = {0xff, 0x02, [11] = 0x01, [12] = 0xff, [15] = 0x02};
	uint8_t f[128], mac[6];
	const uint8_t *ip, *m;

	cr_assert_eq(uroce_ip_resolve(T.s, PEER_V6, 0, mac, 42), -EAGAIN);
	cr_assert_eq(T.nframes, 1);
	cr_assert_eq(T.flen[0], 14 + 40 + 32);
	cr_assert_arr_eq(T.frame[0], sn_mac, 6);
	ip = T.frame[0] + 14;
	m = ip + 40;
	cr_assert_eq(rd16(T.frame[0] + 12), 0x86dd);
	cr_assert_eq(ip[0], 0x60);
	cr_assert_eq(rd16(ip + 4), 32);
	cr_assert_eq(ip[6], 58);
	cr_assert_eq(ip[7], 255, "hop limit 255 (RFC 4861 7.1.1)");
	cr_assert_arr_eq(ip + 8, OUR_V6, 16);
	cr_assert_arr_eq(ip + 24, sn, 16);
	cr_assert_eq(m[0], 135);
	cr_assert_eq(m[1], 0);
	cr_assert_eq(ref_csum6(ip, m, 32, 58), 0);
	cr_assert_arr_eq(m + 8, PEER_V6, 16);
	cr_assert_eq(m[24], 1, "source link-layer address option");
	cr_assert_eq(m[25], 1);
	cr_assert_arr_eq(m + 26, OUR_MAC, 6);

	/* An unsolicited advertisement does not answer an INCOMPLETE entry: STALE (RFC
	 * 4861 7.2.5), but the waiters get the MAC all the same. A solicited one makes
	 * it REACHABLE. Here: solicited. */
	cr_assert_eq(ipt_input(f, fb_na(f, 0, NULL, PEER_V6, OUR_V6, PEER_V6, 0x60, PEER_MAC), 5),
		     UROCE_IP_CONSUMED);
	cr_assert_eq(T.nres, 1);
	cr_assert_eq(T.res[0].cookie, 42);
	cr_assert_arr_eq(T.res[0].mac, PEER_MAC, 6);
	cr_assert_arr_eq(T.res[0].gid, PEER_V6, 16);
	cr_assert_eq(uroce_ip_resolve(T.s, PEER_V6, 6, mac, 1), 0);
	cr_assert_eq(T.nframes, 1, "REACHABLE: no probe");
}

Test(neigh, advertisement_without_address_does_not_resolve)
{
	uint8_t f[128], mac[6];

	cr_assert_eq(uroce_ip_resolve(T.s, PEER_V6, 0, mac, 1), -EAGAIN);
	cr_assert_eq(ipt_input(f, fb_na(f, 0, NULL, PEER_V6, OUR_V6, PEER_V6, 0x60, NULL), 1),
		     UROCE_IP_DROP);
	cr_assert_eq(T.nres, 0);
	/* Advertisements create no entry. */
	cr_assert_eq(ipt_input(f,
			       fb_na(f, 0, NULL, PEER_V6, OUR_V6,
				     (const uint8_t[16]){0xfd, [15] = 9}, 0x60, PEER_MAC),
			       1),
		     UROCE_IP_DROP);
	cr_assert_eq(ipt_cnt()->bad_nd, 1);
	cr_assert_eq(ipt_cnt()->not_for_us, 1);
}

Test(neigh, retries_then_failure_on_the_virtual_clock)
{
	uint8_t gid[16], mac[6];
	uint64_t t0 = 5 * NS_PER_S;

	uroce_gid_from_ipv4(gid, PEER_V4);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, t0, mac, 9), -EAGAIN);
	cr_assert_eq(T.nframes, 1);
	uroce_ip_process(T.s, t0 + NS_PER_S / 2);
	cr_assert_eq(T.nframes, 1, "not before retrans_ns");
	cr_assert_eq(uroce_ip_next_deadline(T.s), t0 + NS_PER_S);
	uroce_ip_process(T.s, t0 + NS_PER_S);
	cr_assert_eq(T.nframes, 2);
	check_arp_request(1, BCAST, OUR_V4, PEER_V4);
	cr_assert_eq(uroce_ip_next_deadline(T.s), t0 + 2 * NS_PER_S);
	/* A second waiter meanwhile: no extra request. */
	cr_assert_eq(uroce_ip_resolve(T.s, gid, t0 + NS_PER_S + 1, mac, 10), -EAGAIN);
	cr_assert_eq(T.nframes, 2);
	uroce_ip_process(T.s, t0 + 2 * NS_PER_S);
	cr_assert_eq(T.nframes, 3);
	cr_assert_eq(T.nres, 0);
	uroce_ip_process(T.s, t0 + 3 * NS_PER_S - 1);
	cr_assert_eq(T.nres, 0);
	/* Three requests (max_probes), one retrans_ns after the last: unreachable. */
	uroce_ip_process(T.s, t0 + 3 * NS_PER_S);
	cr_assert_eq(T.nframes, 3);
	cr_assert_eq(T.nres, 2);
	cr_assert_eq(T.res[0].cookie, 9);
	cr_assert_eq(T.res[1].cookie, 10);
	for (unsigned i = 0; i < 2; i++) {
		cr_assert_eq(T.res[i].err, -EHOSTUNREACH);
		cr_assert_not(T.res[i].has_mac);
		cr_assert_arr_eq(T.res[i].gid, gid, 16);
	}
	cr_assert_eq(ipt_cnt()->neigh_failed, 1);
	cr_assert_eq(ipt_cnt()->arp_requests, 3);
	cr_assert_eq(uroce_ip_next_deadline(T.s), UINT64_MAX);
	/* Forgotten: the next resolve starts over. */
	cr_assert_eq(uroce_ip_resolve(T.s, gid, t0 + 4 * NS_PER_S, mac, 11), -EAGAIN);
	cr_assert_eq(T.nframes, 4);
}

Test(neigh, tunables_are_used)
{
	struct uroce_ip_cfg cfg;
	uint8_t gid[16], mac[6];

	ipt_teardown();
	ipt_cfg(&cfg);
	cfg.max_probes = 5;
	cfg.retrans_ns = 250;
	ipt_setup_cfg(&cfg);
	uroce_gid_from_ipv4(gid, PEER_V4);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 1), -EAGAIN);
	for (uint64_t t = 0; t <= 5 * 250; t += 50)
		uroce_ip_process(T.s, t);
	cr_assert_eq(T.nframes, 5);
	cr_assert_eq(T.nres, 1);
	cr_assert_eq(T.res[0].err, -EHOSTUNREACH);
}

Test(neigh, stale_entry_is_used_while_reprobed)
{
	uint8_t gid[16], mac[6];
	uint64_t t = 0;

	uroce_gid_from_ipv4(gid, PEER_V4);
	uroce_ip_resolve(T.s, gid, t, mac, 1);
	arp_reply_from(PEER_MAC, PEER_V4, t);
	ipt_clear();
	/* Within reachable time: fresh. */
	t += 29 * NS_PER_S;
	cr_assert_eq(uroce_ip_resolve(T.s, gid, t, mac, 2), 0);
	cr_assert_eq(T.nframes, 0);
	/* 30 s after the confirmation: STALE, still usable, a unicast probe goes out. */
	t += NS_PER_S;
	cr_assert_eq(uroce_ip_resolve(T.s, gid, t, mac, 3), 0);
	cr_assert_arr_eq(mac, PEER_MAC, 6);
	cr_assert_eq(T.nframes, 1);
	check_arp_request(0, PEER_MAC, OUR_V4, PEER_V4);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, t + 1, mac, 4), 0);
	cr_assert_eq(T.nframes, 1, "one probe at a time");
	/* The peer answers: REACHABLE again, no more probes. */
	arp_reply_from(PEER_MAC, PEER_V4, t + 2);
	uroce_ip_process(T.s, t + 5 * NS_PER_S);
	cr_assert_eq(T.nframes, 1);
	cr_assert_eq(T.nres, 0, "nobody was waiting");
	cr_assert_eq(uroce_ip_resolve(T.s, gid, t + 5 * NS_PER_S, mac, 5), 0);
	cr_assert_eq(T.nframes, 1);

	/* Stale again, and this time the peer has gone: three unicast probes, then the
	 * entry is dropped and the next resolve broadcasts. */
	t += 40 * NS_PER_S;
	cr_assert_eq(uroce_ip_resolve(T.s, gid, t, mac, 6), 0);
	for (unsigned i = 1; i <= 3; i++)
		uroce_ip_process(T.s, t + i * NS_PER_S);
	cr_assert_eq(T.nframes, 4);
	for (unsigned i = 1; i < 4; i++)
		check_arp_request(i, PEER_MAC, OUR_V4, PEER_V4);
	cr_assert_eq(ipt_cnt()->neigh_failed, 1);
	cr_assert_eq(T.nres, 0);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, t + 4 * NS_PER_S, mac, 7), -EAGAIN);
	check_arp_request(4, BCAST, OUR_V4, PEER_V4);
}

Test(neigh, v6_stale_probe_is_unicast_ns)
{
	uint8_t f[128], mac[6];

	uroce_ip_resolve(T.s, PEER_V6, 0, mac, 1);
	ipt_input(f, fb_na(f, 0, NULL, PEER_V6, OUR_V6, PEER_V6, 0x60, PEER_MAC), 0);
	ipt_clear();
	cr_assert_eq(uroce_ip_resolve(T.s, PEER_V6, 31 * NS_PER_S, mac, 2), 0);
	cr_assert_eq(T.nframes, 1);
	cr_assert_arr_eq(T.frame[0], PEER_MAC, 6);
	cr_assert_arr_eq(T.frame[0] + 14 + 24, PEER_V6, 16, "to the target itself (7.3.3)");
	cr_assert_eq(T.frame[0][14 + 7], 255);
}

Test(neigh, na_override_rules)
{
	uint8_t f[128], mac[6];

	uroce_ip_resolve(T.s, PEER_V6, 0, mac, 1);
	ipt_input(f, fb_na(f, 0, NULL, PEER_V6, OUR_V6, PEER_V6, 0x60, PEER_MAC), 0);
	ipt_clear();
	/* A different address without Override: kept, but REACHABLE becomes STALE, so the
	 * next use probes the old address. */
	cr_assert_eq(ipt_input(f, fb_na(f, 0, NULL, PEER_V6, OUR_V6, PEER_V6, 0x40, PEER2_MAC), 1),
		     UROCE_IP_CONSUMED);
	cr_assert_eq(uroce_ip_resolve(T.s, PEER_V6, 2, mac, 2), 0);
	cr_assert_arr_eq(mac, PEER_MAC, 6);
	cr_assert_eq(T.nframes, 1);
	/* With Override, unsolicited, to all-nodes: replaced. */
	cr_assert_eq(ipt_input(f,
			       fb_na(f, 0, NULL, PEER_V6, (const uint8_t[16]){0xff, 0x02, [15] = 1},
				     PEER_V6, 0x20, PEER2_MAC),
			       3),
		     UROCE_IP_CONSUMED);
	cr_assert_eq(uroce_ip_resolve(T.s, PEER_V6, 4, mac, 3), 0);
	cr_assert_arr_eq(mac, PEER2_MAC, 6);
}

Test(neigh, solicitation_from_the_peer_completes_a_pending_resolution)
{
	uint8_t f[128], g[16] = {0xff, 0x02, [11] = 0x01, [12] = 0xff, [15] = 0x01}, mac[6];

	cr_assert_eq(uroce_ip_resolve(T.s, PEER_V6, 0, mac, 77), -EAGAIN);
	cr_assert_eq(ipt_input(f, fb_ns(f, 0, PEER_V6, g, OUR_V6, PEER_MAC), 1), UROCE_IP_CONSUMED);
	cr_assert_eq(T.nres, 1);
	cr_assert_eq(T.res[0].cookie, 77);
	cr_assert_arr_eq(T.res[0].mac, PEER_MAC, 6);
	/* Same for an ARP request from the peer. */
	{
		uint8_t gid[16];

		uroce_gid_from_ipv4(gid, PEER_V4);
		cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 78), -EAGAIN);
		ipt_input(f, fb_arp(f, 0, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, OUR_V4), 1);
		cr_assert_eq(T.nres, 2);
		cr_assert_eq(T.res[1].cookie, 78);
	}
}

Test(neigh, several_waiters_and_cancel)
{
	uint8_t gid[16], mac[6];

	uroce_gid_from_ipv4(gid, PEER_V4);
	for (uint64_t c = 1; c <= 4; c++)
		cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, c), -EAGAIN);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 2), -EAGAIN, "same cookie twice");
	cr_assert_eq(T.nframes, 1);
	cr_assert_eq(uroce_ip_cancel(T.s, 2), 2);
	cr_assert_eq(uroce_ip_cancel(T.s, 99), 0);
	arp_reply_from(PEER_MAC, PEER_V4, 1);
	cr_assert_eq(T.nres, 3);
	cr_assert_eq(T.res[0].cookie, 1);
	cr_assert_eq(T.res[1].cookie, 3);
	cr_assert_eq(T.res[2].cookie, 4);
}

/* Callbacks may resolve and cancel: a cancel of a waiter already settled but not yet
 * delivered is honoured. */
static uint8_t reent_gid[16];
static void reenter(uint64_t cookie, const uint8_t *gid, const uint8_t *mac, int err)
{
	uint8_t m[6];

	(void)gid;
	(void)mac;
	(void)err;
	if (cookie == 1) {
		cr_assert_eq(uroce_ip_resolve(T.s, reent_gid, 2, m, 5), 0);
		cr_assert_arr_eq(m, PEER_MAC, 6);
		cr_assert_eq(uroce_ip_cancel(T.s, 2), 1);
		cr_assert_eq(uroce_ip_resolve(T.s, PEER_V6, 2, m, 6), -EAGAIN);
	}
}

Test(neigh, callbacks_may_reenter)
{
	uint8_t mac[6];

	uroce_gid_from_ipv4(reent_gid, PEER_V4);
	T.on_resolved = reenter;
	uroce_ip_resolve(T.s, reent_gid, 0, mac, 1);
	uroce_ip_resolve(T.s, reent_gid, 0, mac, 2);
	uroce_ip_resolve(T.s, reent_gid, 0, mac, 3);
	arp_reply_from(PEER_MAC, PEER_V4, 1);
	cr_assert_eq(T.nres, 2);
	cr_assert_eq(T.res[0].cookie, 1);
	cr_assert_eq(T.res[1].cookie, 3);
	cr_assert_eq(T.nframes, 2, "the NS the callback caused");
}

Test(neigh, own_addresses_and_groups_need_no_request)
{
	static const uint8_t mc4[4] = {239, 129, 2, 3}, mc4_mac[6] = {0x01, 0x00, 0x5e, 0x01, 2, 3};
	static const uint8_t mc6[16] = {0xff, 0x02, [11] = 1, [12] = 0xff, 0xab, 0xcd, 0xef};
	static const uint8_t mc6_mac[6] = {0x33, 0x33, 0xff, 0xab, 0xcd, 0xef};
	uint8_t gid[16], mac[6];

	uroce_gid_from_ipv4(gid, OUR_V4B);
	cr_assert(uroce_ip_is_local(T.s, gid));
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 1), 0);
	cr_assert_arr_eq(mac, OUR_MAC, 6);
	cr_assert(uroce_ip_is_local(T.s, OUR_V6));
	cr_assert(uroce_ip_is_local(T.s, OUR_LL));
	cr_assert_eq(uroce_ip_resolve(T.s, OUR_LL, 0, mac, 1), 0);
	cr_assert_arr_eq(mac, OUR_MAC, 6);
	cr_assert_not(uroce_ip_is_local(T.s, PEER_V6));
	uroce_gid_from_ipv4(gid, PEER_V4);
	cr_assert_not(uroce_ip_is_local(T.s, gid));
	/* fd00::1's bytes under the IPv4-mapped prefix are not ours, nor is 10.0.0.1 as
	 * an IPv4-compatible (::a.b.c.d) address. */
	gid[10] = gid[11] = 0;
	memcpy(gid + 12, OUR_V4, 4);
	cr_assert_not(uroce_ip_is_local(T.s, gid));

	uroce_gid_from_ipv4(gid, mc4);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 1), 0);
	cr_assert_arr_eq(mac, mc4_mac, 6);
	cr_assert_eq(uroce_ip_resolve(T.s, mc6, 0, mac, 1), 0);
	cr_assert_arr_eq(mac, mc6_mac, 6);
	cr_assert_eq(T.nframes, 0);
}

Test(neigh, unresolvable_gids)
{
	static const uint8_t bad4[][4] = {{0, 0, 0, 0}, {127, 0, 0, 1}, {255, 255, 255, 255},
					  {0, 1, 2, 3}, {240, 0, 0, 1}};
	static const uint8_t unspec[16], loop6[16] = {[15] = 1};
	uint8_t gid[16], mac[6];
	struct uroce_ip_cfg cfg;

	for (unsigned i = 0; i < sizeof(bad4) / sizeof(bad4[0]); i++) {
		uroce_gid_from_ipv4(gid, bad4[i]);
		cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 1), -EINVAL, "case %u", i);
	}
	cr_assert_eq(uroce_ip_resolve(T.s, unspec, 0, mac, 1), -EINVAL);
	cr_assert_eq(uroce_ip_resolve(T.s, loop6, 0, mac, 1), -EINVAL);
	cr_assert_eq(T.nframes, 0);

	ipt_teardown();
	ipt_cfg(&cfg);
	cfg.v4_count = 0;
	ipt_setup_cfg(&cfg);
	uroce_gid_from_ipv4(gid, PEER_V4);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 1), -EADDRNOTAVAIL);
	/* IPv6 still works: there is always the link-local address. */
	cfg.v6_count = 0;
	ipt_teardown();
	ipt_setup_cfg(&cfg);
	cr_assert_eq(uroce_ip_resolve(T.s, PEER_V6, 0, mac, 1), -EAGAIN);
	cr_assert_arr_eq(T.frame[0] + 14 + 8, OUR_LL, 16);
}

Test(neigh, lru_eviction_spares_pending_entries)
{
	struct uroce_ip_cfg cfg;
	uint8_t f[64], gid[16], mac[6], ip[4] = {10, 0, 1, 0};

	ipt_teardown();
	ipt_cfg(&cfg);
	cfg.neigh_max = 4;
	ipt_setup_cfg(&cfg);
	/* One pending resolution (10.0.1.9), three learned from requests (.1 .2 .3). */
	ip[3] = 9;
	uroce_gid_from_ipv4(gid, ip);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 1), -EAGAIN);
	for (uint8_t i = 1; i <= 3; i++) {
		ip[3] = i;
		ipt_input(f, fb_arp(f, 0, BCAST, 1, PEER_MAC, ip, ZERO6, OUR_V4), i);
	}
	/* Use .1 so that .2 is the least recently used learned entry. */
	ip[3] = 1;
	uroce_gid_from_ipv4(gid, ip);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 10, mac, 2), 0);
	/* A fifth neighbour evicts .2, not the pending .9 (older still). */
	ip[3] = 4;
	ipt_input(f, fb_arp(f, 0, BCAST, 1, PEER_MAC, ip, ZERO6, OUR_V4), 11);
	cr_assert_eq(ipt_cnt()->neigh_evicted, 1);
	ipt_clear();
	for (uint8_t i = 1; i <= 4; i++) {
		ip[3] = i == 2 ? 4 : i == 4 ? 2 : i; /* .2 last: it evicts again */
		uroce_gid_from_ipv4(gid, ip);
		cr_assert_eq(uroce_ip_resolve(T.s, gid, 12, mac, 3), ip[3] == 2 ? -EAGAIN : 0,
			     ".%u", ip[3]);
	}
	/* The pending one is still pending, and answers. */
	ip[3] = 9;
	arp_reply_from(PEER2_MAC, ip, 13);
	cr_assert_eq(T.nres, 1);
	cr_assert_eq(T.res[0].cookie, 1);
}

Test(neigh, full_of_pending_says_enobufs)
{
	struct uroce_ip_cfg cfg;
	uint8_t gid[16], mac[6], ip[4] = {10, 0, 2, 1};

	ipt_teardown();
	ipt_cfg(&cfg);
	cfg.neigh_max = 2;
	cfg.waiters_max = 3;
	ipt_setup_cfg(&cfg);
	uroce_gid_from_ipv4(gid, ip);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 1), -EAGAIN);
	ip[3] = 2;
	uroce_gid_from_ipv4(gid, ip);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 2), -EAGAIN);
	ip[3] = 3;
	uroce_gid_from_ipv4(gid, ip);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 3), -ENOBUFS, "cache full of waiters");
	ip[3] = 2;
	uroce_gid_from_ipv4(gid, ip);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 4), -EAGAIN);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 5), -ENOBUFS, "no waiter left");
	cr_assert_eq(ipt_cnt()->resolve_nobufs, 2);
	/* Cancelling frees waiters (and an entry without waiters may be evicted). */
	cr_assert_eq(uroce_ip_cancel(T.s, 1), 1);
	ip[3] = 3;
	uroce_gid_from_ipv4(gid, ip);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 6), -EAGAIN);
	cr_assert_eq(ipt_cnt()->neigh_evicted, 1);
}

Test(neigh, tx_failure_is_counted_and_retried)
{
	uint8_t gid[16], mac[6];

	T.tx_ret = -1;
	uroce_gid_from_ipv4(gid, PEER_V4);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 1), -EAGAIN);
	cr_assert_eq(ipt_cnt()->tx_errors, 1);
	T.tx_ret = 0;
	uroce_ip_process(T.s, NS_PER_S);
	cr_assert_eq(T.nframes, 2);
	arp_reply_from(PEER_MAC, PEER_V4, NS_PER_S + 1);
	cr_assert_eq(T.nres, 1);
}

Test(neigh, deadline_is_the_earliest)
{
	uint8_t gid[16], mac[6];

	uroce_gid_from_ipv4(gid, PEER_V4);
	uroce_ip_resolve(T.s, gid, 500, mac, 1);
	uroce_ip_resolve(T.s, PEER_V6, 200, mac, 2);
	cr_assert_eq(uroce_ip_next_deadline(T.s), 200 + NS_PER_S);
	uroce_ip_process(T.s, 200 + NS_PER_S);
	cr_assert_eq(uroce_ip_next_deadline(T.s), 500 + NS_PER_S);
}

Test(neigh, destroy_with_pending_waiters)
{
	uint8_t gid[16], mac[6];

	uroce_gid_from_ipv4(gid, PEER_V4);
	uroce_ip_resolve(T.s, gid, 0, mac, 1);
	uroce_ip_resolve(T.s, PEER_V6, 0, mac, 2);
	ipt_teardown();
	cr_assert_eq(T.nres, 0);
	ipt_setup(); /* for .fini */
}

/* Many neighbours: the hash and the LRU at size (every one resolvable afterwards). */
Test(neigh, a_thousand_neighbours)
{
	uint8_t f[64], gid[16], mac[6], ip[4] = {10, 1, 0, 0};
	uint8_t pm[6] = {0x02, 0x77, 0, 0, 0, 0};

	for (unsigned i = 0; i < 1024; i++) {
		ip[2] = (uint8_t)(i >> 8);
		ip[3] = (uint8_t)i;
		uroce_gid_from_ipv4(gid, ip);
		cr_assert_eq(uroce_ip_resolve(T.s, gid, i, mac, i), -EAGAIN);
		ipt_clear();
		pm[4] = (uint8_t)(i >> 8);
		pm[5] = (uint8_t)i;
		ipt_input(f, fb_arp(f, 0, OUR_MAC, 2, pm, ip, OUR_MAC, OUR_V4), i);
		cr_assert_eq(T.nres, 1);
	}
	for (unsigned i = 0; i < 1024; i++) {
		ip[2] = (uint8_t)(i >> 8);
		ip[3] = (uint8_t)i;
		uroce_gid_from_ipv4(gid, ip);
		cr_assert_eq(uroce_ip_resolve(T.s, gid, 2000, mac, 0), 0);
		cr_assert_eq(mac[4], (uint8_t)(i >> 8));
		cr_assert_eq(mac[5], (uint8_t)i);
	}
	cr_assert_eq(ipt_cnt()->neigh_evicted, 0);
	cr_assert_eq(T.nframes, 0);
}
