/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/ipstack, receive: RoCE classification, what is not ours, VLANs; every truncation
 * of every valid frame kind, single-byte mutations and random frames (exact-size heap
 * copies, so the ASan build reports any read past the frame); counters and config. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "ipt.h"

TestSuite(input, .init = ipt_setup, .fini = ipt_teardown);

static const uint8_t ZERO6[6];

static void solicited(uint8_t g[16], const uint8_t *a)
{
	static const uint8_t p[13] = {0xff, 0x02, [11] = 0x01, [12] = 0xff};

	memcpy(g, p, 13);
	memcpy(g + 13, a + 13, 3);
}

/* The invariants every input keeps: one verdict per frame, one reason per drop. */
static void check_counters(void)
{
	const struct uroce_ip_counters *c = ipt_cnt();

	cr_assert_eq(c->rx_frames, c->rx_roce + c->rx_consumed + c->rx_dropped);
	cr_assert_eq(c->rx_dropped, ipt_drop_reasons());
}

/* Every frame the stack sent is well-formed: checksums verify (harness code). */
static void check_sent(void)
{
	for (unsigned i = 0; i < T.nframes; i++) {
		const uint8_t *f = T.frame[i];
		uint32_t off = rd16(f + 12) == 0x8100 ? 16 : 12, len = T.flen[i];
		uint16_t type = rd16(f + off);

		off += 2;
		cr_assert_arr_eq(f + 6, OUR_MAC, 6);
		if (type == 0x0806) {
			cr_assert_eq(len, off + 28);
		} else if (type == 0x0800) {
			cr_assert_eq(ref_csum(f + off, 20, 0), 0);
			cr_assert_eq(rd16(f + off + 2), len - off);
			cr_assert_eq(ref_csum(f + off + 20, len - off - 20, 0), 0);
		} else {
			cr_assert_eq(type, 0x86dd);
			cr_assert_eq(rd16(f + off + 4), len - off - 40);
			cr_assert_eq(ref_csum6(f + off, f + off + 40, len - off - 40, 58), 0);
		}
	}
}

Test(input, roce_v4_and_v6_go_to_the_transport)
{
	uint8_t f[256];

	cr_assert_eq(ipt_input(f, fb_udp4(f, 0, OUR_V4, 4791, 32), 0), UROCE_IP_ROCE);
	cr_assert_eq(ipt_input(f, fb_udp4(f, 0, OUR_V4B, 4791, 32), 0), UROCE_IP_ROCE);
	cr_assert_eq(ipt_input(f, fb_udp6(f, 0, OUR_V6, 4791, 32), 0), UROCE_IP_ROCE);
	cr_assert_eq(ipt_input(f, fb_udp6(f, 0, OUR_LL, 4791, 32), 0), UROCE_IP_ROCE);
	/* Padding after the datagram (a short frame from a NIC) is allowed. */
	{
		uint32_t len = fb_udp4(f, 0, OUR_V4, 4791, 0);

		memset(f + len, 0, 64 - len);
		cr_assert_eq(ipt_input(f, 64, 0), UROCE_IP_ROCE);
	}
	cr_assert_eq(ipt_cnt()->rx_roce, 5);
	cr_assert_eq(T.nframes, 0);
	check_counters();
}

Test(input, not_for_us_is_dropped_and_counted)
{
	static const uint8_t other_v4[4] = {10, 0, 0, 3}, other_mac[6] = {2, 9, 9, 9, 9, 9};
	static const uint8_t other_v6[16] = {0xfd, 0x00, [15] = 0x03};
	static const uint8_t mcast_v4_mac[6] = {0x01, 0x00, 0x5e, 0, 0, 1};
	uint8_t f[256], g[16];
	uint32_t len;

	ipt_input(f, fb_udp4(f, 0, other_v4, 4791, 8), 0);
	ipt_input(f, fb_udp6(f, 0, other_v6, 4791, 8), 0);
	len = fb_udp4(f, 0, OUR_V4, 4791, 8);
	memcpy(f, other_mac, 6);
	ipt_input(f, len, 0); /* our IP, someone else's MAC */
	memcpy(f, BCAST, 6);
	ipt_input(f, len, 0); /* our IP, broadcast MAC */
	memcpy(f, mcast_v4_mac, 6);
	ipt_input(f, len, 0);
	len = fb_udp6(f, 0, OUR_V6, 4791, 8);
	memcpy(f, other_mac, 6);
	ipt_input(f, len, 0);
	/* RoCE to a group we joined is still not ours. */
	solicited(g, OUR_V6);
	len = fb_udp6(f, 0, g, 4791, 8);
	f[0] = f[1] = 0x33;
	memcpy(f + 2, g + 12, 4);
	ipt_input(f, len, 0);
	/* ARP to a multicast MAC. */
	len = fb_arp(f, 0, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, OUR_V4);
	f[0] = f[1] = 0x33;
	ipt_input(f, len, 0);
	cr_assert_eq(ipt_cnt()->not_for_us, 8);
	cr_assert_eq(ipt_cnt()->rx_dropped, 8);
	cr_assert_eq(T.nframes, 0);
	check_counters();
}

Test(input, other_protocols_and_bad_headers)
{
	uint8_t f[256], junk[32] = {0};
	uint32_t len;

	/* LLDP, and an IPv4 ethertype carrying an IPv6 header. */
	len = fb_eth(f, OUR_MAC, PEER_MAC, 0x88cc, 0);
	memset(f + len, 0, 46);
	ipt_input(f, len + 46, 0);
	cr_assert_eq(ipt_cnt()->unknown_ethertype, 1);
	len = fb_udp6(f, 0, OUR_V6, 4791, 8);
	f[12] = 0x08;
	f[13] = 0x00;
	ipt_input(f, len, 0);
	cr_assert_eq(ipt_cnt()->bad_ipv4, 1);
	len = fb_udp4(f, 0, OUR_V4, 4791, 8);
	f[12] = 0x86;
	f[13] = 0xdd;
	ipt_input(f, len, 0);
	cr_assert_eq(ipt_cnt()->bad_ipv6 + ipt_cnt()->truncated, 1);
	/* UDP length larger than the datagram; UDP length below 8. */
	len = fb_udp4(f, 0, OUR_V4, 4791, 8);
	f[14 + 20 + 5] = 100;
	ipt_input(f, len, 0);
	f[14 + 20 + 4] = 0;
	f[14 + 20 + 5] = 4;
	ipt_input(f, len, 0);
	len = fb_udp6(f, 0, OUR_V6, 4791, 8);
	f[14 + 40 + 5] = 12;
	ipt_input(f, len, 0);
	cr_assert_eq(ipt_cnt()->bad_udp, 3);
	/* A group source MAC, and our own (our frame looped back). */
	len = fb_udp4(f, 0, OUR_V4, 4791, 8);
	f[6] |= 1;
	ipt_input(f, len, 0);
	memcpy(f + 6, OUR_MAC, 6);
	ipt_input(f, len, 0);
	/* IPv4 sources that are nobody: 0.0.0.0, 127.0.0.1, 224.0.0.1, our own. */
	{
		static const uint8_t srcs[][4] = {{0, 0, 0, 0}, {127, 0, 0, 1}, {224, 0, 0, 1},
						  {10, 0, 0, 1}};

		for (unsigned i = 0; i < 4; i++)
			ipt_input(f, fb_ipv4(f, 0, OUR_MAC, srcs[i], OUR_V4, 17, junk, 16), 0);
	}
	cr_assert_eq(ipt_cnt()->bad_src, 6);
	/* IPv4 total length below the header, IHL below 5. */
	len = fb_udp4(f, 0, OUR_V4, 4791, 8);
	f[14 + 2] = 0;
	f[14 + 3] = 19;
	ipt_input(f, len, 0);
	len = fb_udp4(f, 0, OUR_V4, 4791, 8);
	f[14] = 0x44;
	ipt_input(f, len, 0);
	cr_assert_eq(ipt_cnt()->bad_ipv4, 3);
	check_counters();
	cr_assert_eq(T.nframes, 0);
}

Test(input, vlan_port)
{
	struct uroce_ip_cfg cfg;
	uint8_t f[256], g[16], data[20] = {9};
	uint32_t len;

	ipt_teardown();
	ipt_cfg(&cfg);
	cfg.vlan_id = 100;
	ipt_setup_cfg(&cfg);

	/* Untagged, or tagged with another VLAN: not on our port. */
	cr_assert_eq(ipt_input(f, fb_arp(f, 0, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, OUR_V4), 0),
		     UROCE_IP_DROP);
	cr_assert_eq(ipt_input(f, fb_arp(f, 200, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, OUR_V4), 0),
		     UROCE_IP_DROP);
	cr_assert_eq(ipt_cnt()->wrong_vlan, 2);
	/* Ours, PCP 5 set: answered, tagged with our VLAN (PCP 0). */
	cr_assert_eq(ipt_input(f,
			       fb_arp(f, 0xa000 | 100, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, OUR_V4),
			       0),
		     UROCE_IP_CONSUMED);
	cr_assert_eq(T.nframes, 1);
	cr_assert_eq(T.flen[0], 46);
	cr_assert_eq(rd16(T.frame[0] + 12), 0x8100);
	cr_assert_eq(rd16(T.frame[0] + 14), 100);
	cr_assert_eq(rd16(T.frame[0] + 16), 0x0806);
	cr_assert_arr_eq(T.frame[0] + 18 + 14, OUR_V4, 4);

	cr_assert_eq(ipt_input(f, fb_echo4(f, 100, PEER_V4, OUR_V4, 1, 1, data, 20), 0),
		     UROCE_IP_CONSUMED);
	cr_assert_eq(ipt_input(f, fb_echo6(f, 100, PEER_V6, OUR_V6, 1, 1, data, 20), 0),
		     UROCE_IP_CONSUMED);
	solicited(g, OUR_V6);
	cr_assert_eq(ipt_input(f, fb_ns(f, 100, PEER_V6, g, OUR_V6, PEER_MAC), 0),
		     UROCE_IP_CONSUMED);
	cr_assert_eq(ipt_input(f, fb_udp4(f, 100, OUR_V4, 4791, 8), 0), UROCE_IP_ROCE);
	cr_assert_eq(ipt_input(f, fb_udp6(f, 100, OUR_V6, 4791, 8), 0), UROCE_IP_ROCE);
	cr_assert_eq(T.nframes, 4);
	for (unsigned i = 1; i < 4; i++)
		cr_assert_eq(rd16(T.frame[i] + 14), 100);
	check_sent();

	/* A resolution request is tagged too. */
	{
		uint8_t gid[16], mac[6];

		uroce_gid_from_ipv4(gid, (const uint8_t[4]){10, 0, 0, 50});
		cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 1), -EAGAIN);
		cr_assert_eq(rd16(T.frame[4] + 14), 100);
	}
	/* QinQ: one tag only. */
	len = fb_arp(f, 100, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, OUR_V4);
	memmove(f + 16, f + 12, len - 12);
	f[12] = 0x81;
	f[13] = 0x00;
	f[14] = 0;
	f[15] = 100;
	cr_assert_eq(ipt_input(f, len + 4, 0), UROCE_IP_DROP);
	cr_assert_eq(ipt_cnt()->unknown_ethertype, 1);
	check_counters();
}

Test(input, untagged_port_takes_priority_tags_only)
{
	uint8_t f[256];

	cr_assert_eq(ipt_input(f, fb_arp(f, 100, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, OUR_V4), 0),
		     UROCE_IP_DROP);
	cr_assert_eq(ipt_cnt()->wrong_vlan, 1);
	/* VID 0, PCP 3: a priority tag (IEEE 802.1Q), the frame is untagged for us. */
	cr_assert_eq(ipt_input(f, fb_arp(f, 0x6000, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, OUR_V4), 0),
		     UROCE_IP_CONSUMED);
	cr_assert_eq(T.flen[0], 42, "answered untagged");
}

/* ---- every valid frame kind, cut at every length ---------------------------------- */

struct sample {
	const char *name;
	uint8_t f[256];
	uint32_t len;
	enum uroce_ip_verdict verdict;
};

static unsigned build_samples(struct sample *sm, uint16_t vlan)
{
	static const uint8_t data[24] = {1, 2, 3, 4, 5, 6, 7};
	uint8_t g[16];
	unsigned n = 0;

	sm[n] = (struct sample){.name = "arp request", .verdict = UROCE_IP_CONSUMED};
	sm[n].len = fb_arp(sm[n].f, vlan, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, OUR_V4);
	n++;
	sm[n] = (struct sample){.name = "echo4", .verdict = UROCE_IP_CONSUMED};
	sm[n].len = fb_echo4(sm[n].f, vlan, PEER_V4, OUR_V4, 1, 2, data, sizeof(data));
	n++;
	sm[n] = (struct sample){.name = "echo6", .verdict = UROCE_IP_CONSUMED};
	sm[n].len = fb_echo6(sm[n].f, vlan, PEER_V6, OUR_V6, 1, 2, data, sizeof(data));
	n++;
	solicited(g, OUR_V6);
	sm[n] = (struct sample){.name = "ns multicast", .verdict = UROCE_IP_CONSUMED};
	sm[n].len = fb_ns(sm[n].f, vlan, PEER_V6, g, OUR_V6, PEER_MAC);
	n++;
	sm[n] = (struct sample){.name = "ns unicast", .verdict = UROCE_IP_CONSUMED};
	sm[n].len = fb_ns(sm[n].f, vlan, PEER_V6, OUR_V6, OUR_V6, NULL);
	n++;
	sm[n] = (struct sample){.name = "ns dad", .verdict = UROCE_IP_CONSUMED};
	sm[n].len = fb_ns(sm[n].f, vlan, (const uint8_t[16]){0}, g, OUR_V6, NULL);
	n++;
	sm[n] = (struct sample){.name = "na", .verdict = UROCE_IP_CONSUMED};
	sm[n].len = fb_na(sm[n].f, vlan, NULL, PEER_V6, OUR_V6, PEER_V6, 0x60, PEER_MAC);
	n++;
	sm[n] = (struct sample){.name = "arp reply", .verdict = UROCE_IP_CONSUMED};
	sm[n].len = fb_arp(sm[n].f, vlan, OUR_MAC, 2, PEER_MAC, PEER_V4, OUR_MAC, OUR_V4);
	n++;
	sm[n] = (struct sample){.name = "roce4", .verdict = UROCE_IP_ROCE};
	sm[n].len = fb_udp4(sm[n].f, vlan, OUR_V4, 4791, 40);
	n++;
	sm[n] = (struct sample){.name = "roce6", .verdict = UROCE_IP_ROCE};
	sm[n].len = fb_udp6(sm[n].f, vlan, OUR_V6, 4791, 40);
	n++;
	return n;
}

static void truncations(uint16_t vlan)
{
	struct sample sm[16];
	unsigned n = build_samples(sm, vlan);
	uint8_t gid[16], mac[6];

	for (unsigned i = 0; i < n; i++) {
		/* The NA and ARP reply are answers: have a question out for them. */
		cr_assert_eq(uroce_ip_resolve(T.s, PEER_V6, 0, mac, 1), -EAGAIN);
		uroce_gid_from_ipv4(gid, PEER_V4);
		cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 2), -EAGAIN);
		ipt_clear();
		for (uint32_t len = 0; len < sm[i].len; len++) {
			uint64_t dropped = ipt_cnt()->rx_dropped;

			cr_assert_eq(ipt_input(sm[i].f, len, 0), UROCE_IP_DROP, "%s cut at %u",
				     sm[i].name, len);
			cr_assert_eq(ipt_cnt()->rx_dropped, dropped + 1);
			cr_assert_eq(T.nframes, 0, "%s cut at %u answered", sm[i].name, len);
			cr_assert_eq(T.nres, 0);
		}
		check_counters();
		cr_assert_eq(ipt_input(sm[i].f, sm[i].len, 0), sm[i].verdict, "%s whole",
			     sm[i].name);
		check_sent();
		/* Start again from an empty cache for the next kind. */
		ipt_teardown();
		{
			struct uroce_ip_cfg cfg;

			ipt_cfg(&cfg);
			cfg.vlan_id = vlan;
			ipt_setup_cfg(&cfg);
		}
	}
}

Test(input, every_truncation_is_dropped)
{
	truncations(0);
}

Test(input, every_truncation_is_dropped_vlan)
{
	ipt_teardown();
	{
		struct uroce_ip_cfg cfg;

		ipt_cfg(&cfg);
		cfg.vlan_id = 7;
		ipt_setup_cfg(&cfg);
	}
	truncations(7);
}

/* Each byte of each sample set to a few values: whatever happens, the counters agree,
 * every answer is well-formed, nothing is read past the frame (ASan build). */
Test(input, single_byte_mutations)
{
	static const uint8_t vals[] = {0x00, 0xff, 0x01, 0x80};
	struct sample sm[16];
	unsigned n = build_samples(sm, 0);
	uint64_t answered = 0;

	for (unsigned i = 0; i < n; i++) {
		for (uint32_t b = 0; b < sm[i].len; b++) {
			for (unsigned v = 0; v < sizeof(vals) + 1; v++) {
				uint8_t f[256];

				memcpy(f, sm[i].f, sm[i].len);
				f[b] = v < sizeof(vals) ? vals[v] : (uint8_t)(f[b] ^ 0x10);
				ipt_clear();
				ipt_input(f, sm[i].len, b);
				check_sent();
				answered += T.nframes;
				uroce_ip_process(T.s, b * NS_PER_S);
			}
		}
	}
	check_counters();
	cr_assert_gt(answered, 0);
}

/* Random frames, and random frames behind a valid Ethernet/IP prefix. */
Test(input, random_frames)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	struct sample sm[16];
	unsigned n = build_samples(sm, 0);

	for (unsigned it = 0; it < 200000; it++) {
		uint8_t f[256];
		uint32_t len;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		len = (uint32_t)(x % 200);
		for (uint32_t i = 0; i < len; i++)
			f[i] = (uint8_t)((x >> ((i & 7) * 8)) + i * 31);
		if (it & 1) {
			const struct sample *s = &sm[(x >> 20) % n];
			uint32_t keep = (uint32_t)((x >> 40) % s->len);

			memcpy(f, s->f, keep < len ? keep : len);
		}
		ipt_clear();
		ipt_input(f, len, it);
		check_sent();
	}
	check_counters();
}

/* ---- counters and configuration --------------------------------------------------- */

Test(input, counters_iterate_by_name)
{
	uint8_t f[64];
	unsigned n = 0;

	ipt_input(f, fb_arp(f, 0, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, OUR_V4), 0);
	ipt_input(f, 10, 0);
	for (unsigned i = 0; uroce_ip_counter_name(i) != NULL; i++) {
		const char *name = uroce_ip_counter_name(i);
		uint64_t v = uroce_ip_counter_value(ipt_cnt(), i);

		for (unsigned j = 0; j < i; j++)
			cr_assert_str_neq(name, uroce_ip_counter_name(j));
		if (strcmp(name, "arp_replies") == 0 || strcmp(name, "truncated") == 0 ||
		    strcmp(name, "rx_consumed") == 0 || strcmp(name, "rx_dropped") == 0 ||
		    strcmp(name, "neigh_learned") == 0)
			cr_assert_eq(v, 1, "%s", name);
		else if (strcmp(name, "rx_frames") == 0)
			cr_assert_eq(v, 2);
		else
			cr_assert_eq(v, 0, "%s = %lu", name, (unsigned long)v);
		n++;
	}
	cr_assert_eq(n, UROCE_IP_CNT__COUNT);
	cr_assert_eq(n * sizeof(uint64_t), sizeof(struct uroce_ip_counters));
	cr_assert_eq(uroce_ip_counter_value(ipt_cnt(), UROCE_IP_CNT__COUNT), 0);
	cr_assert_str_eq(uroce_ip_counter_name(UROCE_IP_CNT_bad_icmp_csum), "bad_icmp_csum");
}

Test(input, bad_configurations_are_refused)
{
	static const uint8_t mc6[16] = {0xff, 0x02, [15] = 1},
			     v4m[16] = {[10] = 0xff, 0xff, 10, 0, 0, 1};
	struct uroce_ip_cfg cfg;

	for (unsigned k = 0; k < 11; k++) {
		ipt_cfg(&cfg);
		switch (k) {
		case 0: cfg.mac[0] |= 1; break;
		case 1: memset(cfg.mac, 0, 6); break;
		case 2: memset(cfg.v4[0], 0, 4); break;
		case 3: cfg.v4[1][0] = 224; break;
		case 4: cfg.v4[1][0] = 127; break;
		case 5: memcpy(cfg.v6[0], mc6, 16); break;
		case 6: memcpy(cfg.v6[0], v4m, 16); break;
		case 7: cfg.vlan_id = 4095; break;
		case 8: cfg.tx = NULL; break;
		case 9: cfg.max_probes = 0; break;
		case 10: cfg.v4_count = UROCE_IP_MAX_V4 + 1; break;
		}
		errno = 0;
		cr_assert_null(uroce_ip_create(&cfg), "case %u", k);
		cr_assert_eq(errno, EINVAL);
	}
}

/* RoCE multicast (uroce_ip_group_join): RoCE to a joined group through the group's MAC is
 * the transport's; before the join, after the last leave, through another MAC, or not UDP
 * 4791, it is not ours. Joins are counted. */
Test(input, roce_to_joined_groups)
{
	static const uint8_t grp4[4] = {239, 129, 2, 3}, other4[4] = {239, 1, 2, 4};
	static const uint8_t grp6[16] = {0xff, 0x0e, [15] = 0x42};
	uint8_t f[256], g4[16], g6[16], mac[6];
	uint32_t len4, len6;

	uroce_gid_from_ipv4(g4, grp4);
	memcpy(g6, grp6, 16);
	len4 = fb_udp4(f, 0, grp4, 4791, 16);
	/* RFC 1112 6.4: the low 23 bits (239.129.2.3 -> 01:00:5e:01:02:03) */
	f[0] = 0x01, f[1] = 0x00, f[2] = 0x5e, f[3] = 0x01, f[4] = 0x02, f[5] = 0x03;
	cr_assert_eq(ipt_input(f, len4, 0), UROCE_IP_DROP, "not joined yet");
	cr_assert_eq(uroce_ip_group_join(T.s, g4, mac), 1, "a new group");
	cr_assert_arr_eq(mac, f, 6);
	cr_assert_eq(uroce_ip_group_join(T.s, g4, mac), 0, "counted, not new");
	cr_assert_eq(ipt_input(f, len4, 0), UROCE_IP_ROCE);
	f[5] ^= 1; /* another group's MAC */
	cr_assert_eq(ipt_input(f, len4, 0), UROCE_IP_DROP);
	f[5] ^= 1;
	len4 = fb_udp4(f, 0, other4, 4791, 16); /* a group we did not join */
	f[0] = 0x01, f[1] = 0x00, f[2] = 0x5e, f[3] = 0x01, f[4] = 0x02, f[5] = 0x04;
	cr_assert_eq(ipt_input(f, len4, 0), UROCE_IP_DROP);
	len4 = fb_udp4(f, 0, grp4, 4792, 16); /* not RoCE */
	f[0] = 0x01, f[1] = 0x00, f[2] = 0x5e, f[3] = 0x01, f[4] = 0x02, f[5] = 0x03;
	cr_assert_eq(ipt_input(f, len4, 0), UROCE_IP_DROP);
	cr_assert_eq(uroce_ip_group_leave(T.s, g4, mac), 0);
	len4 = fb_udp4(f, 0, grp4, 4791, 16);
	f[0] = 0x01, f[1] = 0x00, f[2] = 0x5e, f[3] = 0x01, f[4] = 0x02, f[5] = 0x03;
	cr_assert_eq(ipt_input(f, len4, 0), UROCE_IP_ROCE, "one join left");
	cr_assert_eq(uroce_ip_group_leave(T.s, g4, mac), 1, "the last leave");
	cr_assert_eq(ipt_input(f, len4, 0), UROCE_IP_DROP);
	cr_assert_eq(uroce_ip_group_leave(T.s, g4, mac), -EINVAL);

	/* IPv6 (RFC 2464 7: 33:33 and the group's last 32 bits) */
	len6 = fb_udp6(f, 0, g6, 4791, 16);
	f[0] = f[1] = 0x33;
	memcpy(f + 2, g6 + 12, 4);
	cr_assert_eq(ipt_input(f, len6, 0), UROCE_IP_DROP);
	cr_assert_eq(uroce_ip_group_join(T.s, g6, mac), 1);
	cr_assert_arr_eq(mac, f, 6);
	cr_assert_eq(ipt_input(f, len6, 0), UROCE_IP_ROCE);

	/* Not groups: a unicast address, an IPv4 one outside 224/4. */
	cr_assert_eq(uroce_ip_group_join(T.s, OUR_V6, mac), -EINVAL);
	uroce_gid_from_ipv4(g4, OUR_V4);
	cr_assert_eq(uroce_ip_group_join(T.s, g4, mac), -EINVAL);
	cr_assert_eq(T.nframes, 0);
	check_counters();
}
