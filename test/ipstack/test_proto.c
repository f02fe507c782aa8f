/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/ipstack, what it answers: ARP (RFC 826), ICMP and ICMPv6 echo (RFC 792, 4443),
 * Neighbor Discovery (RFC 4861), on hand-built frames; answers checked byte by byte and
 * their checksums with the harness's own code. */
#include <errno.h>
#include <stdio.h>

#include <criterion/criterion.h>

#include "ipt.h"

TestSuite(arp, .init = ipt_setup, .fini = ipt_teardown);
TestSuite(echo, .init = ipt_setup, .fini = ipt_teardown);
TestSuite(nd, .init = ipt_setup, .fini = ipt_teardown);

static const uint8_t ZERO6[6];
static const uint8_t ZERO4[4];
static const uint8_t UNSPEC[16];
static const uint8_t ALL_NODES[16] = {0xff, 0x02, [15] = 0x01};

static void solicited(uint8_t g[16], const uint8_t *a)
{
	static const uint8_t p[13] = {0xff, 0x02, [11] = 0x01, [12] = 0xff};

	memcpy(g, p, 13);
	memcpy(g + 13, a + 13, 3);
}

/* ---- ARP -------------------------------------------------------------------------- */

Test(arp, request_for_us_gets_the_exact_reply)
{
	uint8_t f[64];
	uint32_t len = fb_arp(f, 0, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, OUR_V4);
	static const uint8_t want[42] = {
		0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, /* to the requester */
		0x02, 0x00, 0x00, 0x00, 0x00, 0x01, /* from us */
		0x08, 0x06,                         /* ARP */
		0x00, 0x01, 0x08, 0x00, 0x06, 0x04, /* Ethernet, IPv4, 6, 4 */
		0x00, 0x02,                         /* reply */
		0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 10, 0, 0, 1, /* sender: us, 10.0.0.1 */
		0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 10, 0, 0, 2, /* target: the requester */
	};

	cr_assert_eq(len, 42);
	cr_assert_eq(ipt_input(f, len, 0), UROCE_IP_CONSUMED);
	cr_assert_eq(T.nframes, 1);
	cr_assert_eq(T.flen[0], sizeof(want));
	cr_assert_arr_eq(T.frame[0], want, sizeof(want));
	cr_assert_eq(ipt_cnt()->arp_replies, 1);
	cr_assert_eq(ipt_cnt()->rx_consumed, 1);
	cr_assert_eq(ipt_cnt()->neigh_learned, 1);
}

Test(arp, padded_request_and_second_address)
{
	uint8_t f[64] = {0};
	uint32_t len = fb_arp(f, 0, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, OUR_V4B);

	/* 60 bytes as it arrives from a NIC: the padding is not ARP. */
	cr_assert_eq(ipt_input(f, 60, 0), UROCE_IP_CONSUMED);
	cr_assert_eq(len, 42);
	cr_assert_eq(T.nframes, 1);
	cr_assert_eq(T.flen[0], 42);
	cr_assert_arr_eq(T.frame[0] + 28, OUR_V4B, 4, "sender IP is the address asked for");
}

Test(arp, request_learns_the_sender_as_stale)
{
	uint8_t f[64], gid[16], mac[6];

	ipt_input(f, fb_arp(f, 0, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, OUR_V4), 0);
	ipt_clear();
	uroce_gid_from_ipv4(gid, PEER_V4);
	/* Known but unconfirmed: usable at once, and confirmed by a unicast probe
	 * (RFC 4861 7.3.3 for ARP as Linux does it). */
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 1, mac, 7), 0);
	cr_assert_arr_eq(mac, PEER_MAC, 6);
	cr_assert_eq(T.nframes, 1);
	cr_assert_arr_eq(T.frame[0], PEER_MAC, 6, "unicast probe");
	cr_assert_eq(rd16(T.frame[0] + 20), 1, "a request");
	cr_assert_arr_eq(T.frame[0] + 32, ZERO6, 6, "target MAC zero, as Linux");
	cr_assert_arr_eq(T.frame[0] + 38, PEER_V4, 4);
}

Test(arp, request_for_someone_else_is_not_for_us_and_learns_nothing)
{
	static const uint8_t other[4] = {10, 0, 0, 99};
	uint8_t f[64], gid[16], mac[6];

	cr_assert_eq(ipt_input(f, fb_arp(f, 0, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, other), 0),
		     UROCE_IP_DROP);
	cr_assert_eq(ipt_cnt()->not_for_us, 1);
	cr_assert_eq(T.nframes, 0);
	uroce_gid_from_ipv4(gid, PEER_V4);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 1), -EAGAIN);
}

Test(arp, gratuitous_updates_an_existing_entry_only)
{
	static const uint8_t new_mac[6] = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
	uint8_t f[64], gid[16], mac[6];

	/* Unknown sender: nothing to update. */
	cr_assert_eq(ipt_input(f, fb_arp(f, 0, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, PEER_V4), 0),
		     UROCE_IP_DROP);
	cr_assert_eq(ipt_cnt()->not_for_us, 1);
	cr_assert_eq(ipt_cnt()->neigh_learned, 0);
	/* Known sender (it asked for us), then announces a new MAC: replaced. */
	ipt_input(f, fb_arp(f, 0, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, OUR_V4), 0);
	memcpy(f + 6, new_mac, 6);
	fb_arp(f, 0, BCAST, 1, new_mac, PEER_V4, ZERO6, PEER_V4);
	cr_assert_eq(ipt_input(f, 42, 0), UROCE_IP_CONSUMED);
	/* Gratuitous replies too (RFC 5227 3). */
	uroce_gid_from_ipv4(gid, PEER_V4);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 1), 0);
	cr_assert_arr_eq(mac, new_mac, 6);
	cr_assert_eq(ipt_cnt()->neigh_learned, 2);
}

Test(arp, unsolicited_reply_creates_nothing)
{
	uint8_t f[64], gid[16], mac[6];

	cr_assert_eq(ipt_input(f, fb_arp(f, 0, OUR_MAC, 2, PEER_MAC, PEER_V4, OUR_MAC, OUR_V4), 0),
		     UROCE_IP_DROP);
	cr_assert_eq(ipt_cnt()->not_for_us, 1);
	uroce_gid_from_ipv4(gid, PEER_V4);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 1), -EAGAIN);
}

Test(arp, probe_is_answered_without_learning)
{
	uint8_t f[64], gid[16], mac[6];

	/* RFC 5227 2.1.1: sender IP 0; the answer defends our address. */
	cr_assert_eq(ipt_input(f, fb_arp(f, 0, BCAST, 1, PEER_MAC, ZERO4, ZERO6, OUR_V4), 0),
		     UROCE_IP_CONSUMED);
	cr_assert_eq(T.nframes, 1);
	cr_assert_arr_eq(T.frame[0] + 38, ZERO4, 4);
	cr_assert_eq(ipt_cnt()->neigh_learned, 0);
	uroce_gid_from_ipv4(gid, PEER_V4);
	cr_assert_eq(uroce_ip_resolve(T.s, gid, 0, mac, 1), -EAGAIN);
}

Test(arp, someone_else_claiming_our_address_is_a_conflict)
{
	uint8_t f[64];

	cr_assert_eq(ipt_input(f, fb_arp(f, 0, BCAST, 1, PEER_MAC, OUR_V4, ZERO6, OUR_V4), 0),
		     UROCE_IP_CONSUMED);
	cr_assert_eq(ipt_cnt()->addr_conflict, 1);
	cr_assert_eq(T.nframes, 0);
	cr_assert_eq(ipt_cnt()->neigh_learned, 0);
}

Test(arp, malformed_is_bad_arp)
{
	static const uint8_t mcast_ip[4] = {224, 0, 0, 1}, loop_ip[4] = {127, 0, 0, 1};
	static const uint8_t mcast_mac[6] = {0x01, 0, 0x5e, 0, 0, 1};
	uint8_t f[64];
	uint32_t len;
	unsigned n = 0;

	len = fb_arp(f, 0, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, OUR_V4);
	f[15] = 6; /* htype IEEE 802 */
	cr_assert_eq(ipt_input(f, len, 0), UROCE_IP_DROP);
	n++;
	fb_arp(f, 0, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, OUR_V4);
	f[16] = 0x86; /* ptype */
	ipt_input(f, len, 0);
	n++;
	fb_arp(f, 0, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, OUR_V4);
	f[19] = 16; /* plen */
	ipt_input(f, len, 0);
	n++;
	ipt_input(f, fb_arp(f, 0, BCAST, 3, PEER_MAC, PEER_V4, ZERO6, OUR_V4), 0); /* RARP op */
	n++;
	fb_arp(f, 0, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, OUR_V4);
	memcpy(f + 22, mcast_mac, 6); /* sender MAC a group address */
	ipt_input(f, len, 0);
	n++;
	ipt_input(f, fb_arp(f, 0, BCAST, 1, PEER_MAC, mcast_ip, ZERO6, OUR_V4), 0);
	n++;
	ipt_input(f, fb_arp(f, 0, BCAST, 1, PEER_MAC, PEER_V4, ZERO6, loop_ip), 0);
	n++;
	cr_assert_eq(ipt_cnt()->bad_arp, n);
	cr_assert_eq(ipt_cnt()->rx_dropped, n);
	cr_assert_eq(T.nframes, 0);
}

/* ---- echo ------------------------------------------------------------------------- */

static void check_ipv4_reply(const uint8_t *r, uint32_t rlen, const uint8_t *req, uint32_t len)
{
	const uint8_t *ip = r + 14, *icmp = r + 34;

	cr_assert_eq(rlen, len);
	cr_assert_arr_eq(r, PEER_MAC, 6);
	cr_assert_arr_eq(r + 6, OUR_MAC, 6);
	cr_assert_eq(rd16(r + 12), 0x0800);
	cr_assert_eq(ip[0], 0x45);
	cr_assert_eq(rd16(ip + 2), len - 14);
	cr_assert_eq(rd16(ip + 6), 0x4000, "DF, not a fragment");
	cr_assert_eq(ip[8], 64, "TTL");
	cr_assert_eq(ip[9], 1);
	cr_assert_eq(ref_csum(ip, 20, 0), 0, "IPv4 header checksum");
	cr_assert_arr_eq(ip + 12, req + 14 + 16, 4, "source: the address asked");
	cr_assert_arr_eq(ip + 16, req + 14 + 12, 4);
	cr_assert_eq(icmp[0], 0);
	cr_assert_eq(icmp[1], 0);
	cr_assert_eq(ref_csum(icmp, len - 34, 0), 0, "ICMP checksum");
	cr_assert_arr_eq(icmp + 4, req + 34 + 4, len - 38, "id, seq and data echoed");
}

Test(echo, v4_request_gets_a_reply)
{
	static uint8_t f[2048], data[1400];
	uint32_t len;

	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	len = fb_echo4(f, 0, PEER_V4, OUR_V4, 0x4242, 1, data, 56);
	cr_assert_eq(ipt_input(f, len, 0), UROCE_IP_CONSUMED);
	cr_assert_eq(T.nframes, 1);
	check_ipv4_reply(T.frame[0], T.flen[0], f, len);
	/* A big one, an odd-sized one, and one to the other address. */
	len = fb_echo4(f, 0, PEER_V4, OUR_V4B, 7, 2, data, sizeof(data));
	cr_assert_eq(ipt_input(f, len, 0), UROCE_IP_CONSUMED);
	check_ipv4_reply(T.frame[1], T.flen[1], f, len);
	len = fb_echo4(f, 0, PEER_V4, OUR_V4, 7, 3, data, 33);
	cr_assert_eq(ipt_input(f, len, 0), UROCE_IP_CONSUMED);
	check_ipv4_reply(T.frame[2], T.flen[2], f, len);
	cr_assert_eq(ipt_cnt()->echo_replies, 3);
	/* The IP ID moves on. */
	cr_assert_neq(rd16(T.frame[0] + 18), rd16(T.frame[1] + 18));
}

Test(echo, v4_refusals_are_counted_by_reason)
{
	static const uint8_t bcast_ip[4] = {255, 255, 255, 255}, other[4] = {10, 0, 0, 77};
	uint8_t f[256], data[16] = {1, 2, 3};
	uint32_t len;

	len = fb_echo4(f, 0, PEER_V4, OUR_V4, 1, 1, data, 16);
	f[14 + 20 + 2] ^= 1;
	cr_assert_eq(ipt_input(f, len, 0), UROCE_IP_DROP);
	cr_assert_eq(ipt_cnt()->bad_icmp_csum, 1);

	fb_echo4(f, 0, PEER_V4, OUR_V4, 1, 1, data, 16);
	f[14 + 10] ^= 1;
	ipt_input(f, len, 0);
	cr_assert_eq(ipt_cnt()->bad_ipv4_csum, 1);

	ipt_input(f, fb_echo4(f, 0, PEER_V4, bcast_ip, 1, 1, data, 16), 0);
	ipt_input(f, fb_echo4(f, 0, PEER_V4, other, 1, 1, data, 16), 0);
	cr_assert_eq(ipt_cnt()->not_for_us, 2);

	/* MF set: a fragment, header checksum fixed up. */
	fb_echo4(f, 0, PEER_V4, OUR_V4, 1, 1, data, 16);
	f[14 + 6] = 0x20;
	f[14 + 10] = f[14 + 11] = 0;
	{
		uint16_t c = ref_csum(f + 14, 20, 0);

		f[14 + 10] = (uint8_t)(c >> 8);
		f[14 + 11] = (uint8_t)c;
	}
	ipt_input(f, len, 0);
	cr_assert_eq(ipt_cnt()->ip_fragment, 1);

	/* An echo reply is not answered; nor is a code other than 0. */
	fb_echo4(f, 0, PEER_V4, OUR_V4, 1, 1, data, 16);
	f[34] = 0;
	f[36] = f[37] = 0;
	{
		uint16_t c = ref_csum(f + 34, len - 34, 0);

		f[36] = (uint8_t)(c >> 8);
		f[37] = (uint8_t)c;
	}
	ipt_input(f, len, 0);
	cr_assert_eq(ipt_cnt()->unhandled_icmp, 1);

	/* TCP and a UDP port that is not RoCE. */
	ipt_input(f, fb_ipv4(f, 0, OUR_MAC, PEER_V4, OUR_V4, 6, data, 16), 0);
	ipt_input(f, fb_udp4(f, 0, OUR_V4, 53, 4), 0);
	cr_assert_eq(ipt_cnt()->unhandled_proto, 2);
	cr_assert_eq(T.nframes, 0);
	cr_assert_eq(ipt_cnt()->rx_dropped, ipt_drop_reasons());
}

Test(echo, v4_options_are_refused)
{
	uint8_t f[256], l4[32] = {8, 0};
	uint32_t len = fb_ipv4(f, 0, OUR_MAC, PEER_V4, OUR_V4, 1, l4, sizeof(l4));

	/* IHL 6: the first 4 bytes of the "payload" are now an option (NOP x4). */
	f[14] = 0x46;
	memset(f + 34, 1, 4);
	f[24] = f[25] = 0;
	{
		uint16_t c = ref_csum(f + 14, 24, 0);

		f[24] = (uint8_t)(c >> 8);
		f[25] = (uint8_t)c;
	}
	cr_assert_eq(ipt_input(f, len, 0), UROCE_IP_DROP);
	cr_assert_eq(ipt_cnt()->ip_options, 1);
}

static void check_icmp6(const uint8_t *r, uint32_t rlen, const uint8_t *dst_mac,
			const uint8_t *src, const uint8_t *dst, uint8_t hop, uint8_t type)
{
	const uint8_t *ip = r + 14;

	cr_assert_geq(rlen, 14 + 40 + 4);
	cr_assert_arr_eq(r, dst_mac, 6);
	cr_assert_arr_eq(r + 6, OUR_MAC, 6);
	cr_assert_eq(rd16(r + 12), 0x86dd);
	cr_assert_eq(ip[0] >> 4, 6);
	cr_assert_eq(rd16(ip + 4), rlen - 54, "payload length");
	cr_assert_eq(ip[6], 58);
	cr_assert_eq(ip[7], hop, "hop limit %u", ip[7]);
	cr_assert_arr_eq(ip + 8, src, 16);
	cr_assert_arr_eq(ip + 24, dst, 16);
	cr_assert_eq(ip[40], type);
	cr_assert_eq(ip[41], 0);
	cr_assert_eq(ref_csum6(ip, ip + 40, rlen - 54, 58), 0, "ICMPv6 checksum");
}

Test(echo, v6_request_gets_a_reply)
{
	static uint8_t f[2048], data[1200];
	uint32_t len;

	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 13);
	len = fb_echo6(f, 0, PEER_V6, OUR_V6, 0x77, 9, data, 56);
	cr_assert_eq(ipt_input(f, len, 0), UROCE_IP_CONSUMED);
	cr_assert_eq(T.nframes, 1);
	cr_assert_eq(T.flen[0], len);
	check_icmp6(T.frame[0], T.flen[0], PEER_MAC, OUR_V6, PEER_V6, 64, 129);
	cr_assert_arr_eq(T.frame[0] + 58, f + 58, len - 58, "id, seq and data echoed");

	/* To our link-local address, odd length, large. */
	len = fb_echo6(f, 0, PEER_V6, OUR_LL, 1, 2, data, 1001);
	cr_assert_eq(ipt_input(f, len, 0), UROCE_IP_CONSUMED);
	check_icmp6(T.frame[1], T.flen[1], PEER_MAC, OUR_LL, PEER_V6, 64, 129);
	cr_assert_arr_eq(T.frame[1] + 58, f + 58, len - 58);
	cr_assert_eq(ipt_cnt()->echo6_replies, 2);
}

Test(echo, v6_refusals_are_counted_by_reason)
{
	uint8_t f[256], data[8] = {0};
	uint32_t len = fb_echo6(f, 0, PEER_V6, OUR_V6, 1, 1, data, 8);

	f[len - 1] ^= 0x40;
	cr_assert_eq(ipt_input(f, len, 0), UROCE_IP_DROP);
	cr_assert_eq(ipt_cnt()->bad_icmp_csum, 1);
	/* To all-nodes: we do not answer multicast echo. */
	ipt_input(f, fb_echo6(f, 0, PEER_V6, ALL_NODES, 1, 1, data, 8), 0);
	cr_assert_eq(ipt_cnt()->not_for_us, 1);
	/* A group we did not join, at its own MAC. */
	{
		static const uint8_t mld[16] = {0xff, 0x02, [15] = 0x16};

		ipt_input(f, fb_echo6(f, 0, PEER_V6, mld, 1, 1, data, 8), 0);
		cr_assert_eq(ipt_cnt()->not_for_us, 2);
	}
	/* Echo reply, router advertisement: not answered. */
	ipt_input(f, fb_icmp6(f, 0, NULL, PEER_V6, OUR_V6, 64, 129, 0, data, 8), 0);
	ipt_input(f, fb_icmp6(f, 0, NULL, PEER_V6, OUR_V6, 255, 134, 0, data, 8), 0);
	cr_assert_eq(ipt_cnt()->unhandled_icmp, 2);
	/* Hop-by-hop header first, fragment header first. */
	ipt_input(f, fb_ipv6(f, 0, OUR_MAC, PEER_V6, OUR_V6, 0, 64, data, 8), 0);
	cr_assert_eq(ipt_cnt()->ip_options, 1);
	ipt_input(f, fb_ipv6(f, 0, OUR_MAC, PEER_V6, OUR_V6, 44, 64, data, 8), 0);
	cr_assert_eq(ipt_cnt()->ip_fragment, 1);
	/* Source multicast; our own address as the source. */
	ipt_input(f, fb_echo6(f, 0, ALL_NODES, OUR_V6, 1, 1, data, 8), 0);
	ipt_input(f, fb_echo6(f, 0, OUR_LL, OUR_V6, 1, 1, data, 8), 0);
	cr_assert_eq(ipt_cnt()->bad_src, 2);
	cr_assert_eq(T.nframes, 0);
	cr_assert_eq(ipt_cnt()->rx_dropped, ipt_drop_reasons());
}

/* ---- Neighbor Discovery ------------------------------------------------------------ */

static void check_na(unsigned i, const uint8_t *dst_mac, const uint8_t *src, const uint8_t *dst,
		     uint8_t flags)
{
	const uint8_t *m = T.frame[i] + 54;

	cr_assert_eq(T.flen[i], 54 + 32);
	check_icmp6(T.frame[i], T.flen[i], dst_mac, src, dst, 255, 136);
	cr_assert_eq(m[4], flags, "flags %#x", m[4]);
	cr_assert_arr_eq(m + 8, src, 16, "target");
	cr_assert_eq(m[24], 2, "target link-layer address option");
	cr_assert_eq(m[25], 1);
	cr_assert_arr_eq(m + 26, OUR_MAC, 6);
}

Test(nd, multicast_solicitation_gets_a_solicited_advertisement)
{
	uint8_t f[128], g[16], mac[6];

	solicited(g, OUR_V6);
	cr_assert_eq(ipt_input(f, fb_ns(f, 0, PEER_V6, g, OUR_V6, PEER_MAC), 0), UROCE_IP_CONSUMED);
	cr_assert_eq(T.nframes, 1);
	check_na(0, PEER_MAC, OUR_V6, PEER_V6, 0x60);
	cr_assert_eq(ipt_cnt()->na_sent, 1);
	/* The source link-layer option taught us the peer (STALE: usable, probed). */
	ipt_clear();
	cr_assert_eq(uroce_ip_resolve(T.s, PEER_V6, 0, mac, 1), 0);
	cr_assert_arr_eq(mac, PEER_MAC, 6);
	cr_assert_eq(T.nframes, 1, "unicast NS probe");
	cr_assert_arr_eq(T.frame[0], PEER_MAC, 6);
	cr_assert_arr_eq(T.frame[0] + 14 + 24, PEER_V6, 16);
}

Test(nd, unicast_solicitation_without_option_answers_the_frame_source)
{
	uint8_t f[128];

	cr_assert_eq(ipt_input(f, fb_ns(f, 0, PEER_V6, OUR_V6, OUR_V6, NULL), 0),
		     UROCE_IP_CONSUMED);
	check_na(0, PEER_MAC, OUR_V6, PEER_V6, 0x60);
	cr_assert_eq(ipt_cnt()->neigh_learned, 0, "no option, nothing learned");
}

Test(nd, link_local_target)
{
	uint8_t f[128], g[16];
	static const uint8_t peer_ll[16] = {0xfe, 0x80, [15] = 0x42};

	solicited(g, OUR_LL);
	cr_assert_eq(ipt_input(f, fb_ns(f, 0, peer_ll, g, OUR_LL, PEER_MAC), 0), UROCE_IP_CONSUMED);
	check_na(0, PEER_MAC, OUR_LL, peer_ll, 0x60);
}

Test(nd, dad_solicitation_is_defended_to_all_nodes)
{
	static const uint8_t all_nodes_mac[6] = {0x33, 0x33, 0, 0, 0, 1};
	uint8_t f[128], g[16];

	solicited(g, OUR_V6);
	cr_assert_eq(ipt_input(f, fb_ns(f, 0, UNSPEC, g, OUR_V6, NULL), 0), UROCE_IP_CONSUMED);
	check_na(0, all_nodes_mac, OUR_V6, ALL_NODES, 0x20);
	/* DAD with a link-layer option is invalid (RFC 4861 7.1.1). */
	cr_assert_eq(ipt_input(f, fb_ns(f, 0, UNSPEC, g, OUR_V6, PEER_MAC), 0), UROCE_IP_DROP);
	cr_assert_eq(ipt_cnt()->bad_nd, 1);
}

Test(nd, invalid_solicitations)
{
	uint8_t f[128], g[16];
	uint32_t len;

	solicited(g, OUR_V6);
	/* Hop limit 254: it came through a router. */
	len = fb_ns(f, 0, PEER_V6, g, OUR_V6, PEER_MAC);
	f[14 + 7] = 254;
	cr_assert_eq(ipt_input(f, len, 0), UROCE_IP_DROP);
	cr_assert_eq(ipt_cnt()->bad_nd, 1);
	/* Checksum. */
	len = fb_ns(f, 0, PEER_V6, g, OUR_V6, PEER_MAC);
	f[len - 1] ^= 1;
	ipt_input(f, len, 0);
	cr_assert_eq(ipt_cnt()->bad_icmp_csum, 1);
	/* An option of length 0 (checksum recomputed by hand). */
	len = fb_ns(f, 0, PEER_V6, g, OUR_V6, PEER_MAC);
	f[54 + 25] = 0;
	f[54 + 2] = f[54 + 3] = 0;
	{
		uint16_t c = ref_csum6(f + 14, f + 54, len - 54, 58);

		f[54 + 2] = (uint8_t)(c >> 8);
		f[54 + 3] = (uint8_t)c;
	}
	ipt_input(f, len, 0);
	cr_assert_eq(ipt_cnt()->bad_nd, 2);
	/* A multicast target. */
	ipt_input(f, fb_ns(f, 0, PEER_V6, g, ALL_NODES, PEER_MAC), 0);
	cr_assert_eq(ipt_cnt()->bad_nd, 3);
	/* Someone else's address, asked at our group (they share the low 24 bits). */
	{
		uint8_t other[16];

		memcpy(other, OUR_V6, 16);
		other[1] = 0x99;
		ipt_input(f, fb_ns(f, 0, PEER_V6, g, other, PEER_MAC), 0);
		cr_assert_eq(ipt_cnt()->not_for_us, 1);
		/* And a group that is not ours. */
		solicited(g, PEER_V6);
		ipt_input(f, fb_ns(f, 0, PEER_V6, g, PEER_V6, PEER_MAC), 0);
		cr_assert_eq(ipt_cnt()->not_for_us, 2);
	}
	cr_assert_eq(T.nframes, 0);
	cr_assert_eq(ipt_cnt()->rx_dropped, ipt_drop_reasons());
}

Test(nd, advertisement_of_our_address_is_a_conflict)
{
	uint8_t f[128];

	cr_assert_eq(ipt_input(f, fb_na(f, 0, NULL, PEER_V6, ALL_NODES, OUR_V6, 0x20, PEER_MAC), 0),
		     UROCE_IP_CONSUMED);
	cr_assert_eq(ipt_cnt()->addr_conflict, 1);
	/* Solicited flag to a group: invalid (RFC 4861 7.1.2). */
	cr_assert_eq(
		ipt_input(f, fb_na(f, 0, NULL, PEER_V6, ALL_NODES, PEER_V6, 0x60, PEER_MAC), 0),
		UROCE_IP_DROP);
	cr_assert_eq(ipt_cnt()->bad_nd, 1);
}

Test(nd, multicast_macs_and_addresses)
{
	uint8_t macs[UROCE_IP_MCAST_MAX][6], gids[UROCE_IP_ADDR_MAX][16], ll[16];
	static const uint8_t all_nodes_mac[6] = {0x33, 0x33, 0, 0, 0, 1};
	static const uint8_t sn1[6] = {0x33, 0x33, 0xff, 0, 0, 1};
	static const uint8_t sn2[6] = {0x33, 0x33, 0xff, 0x12, 0x34, 0x56};
	static const uint8_t qemu_mac[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
	static const uint8_t qemu_ll[16] = {0xfe, 0x80, [8] = 0x50, 0x54, 0x00, 0xff, 0xfe, 0x12,
					    0x34, 0x56};
	struct uroce_ip_cfg cfg;

	/* fd00::1 and fe80::ff:fe00:1 share their last 24 bits: one group. */
	cr_assert_eq(uroce_ip_mcast_macs(T.s, macs, UROCE_IP_MCAST_MAX), 2);
	cr_assert_arr_eq(macs[0], all_nodes_mac, 6);
	cr_assert_arr_eq(macs[1], sn1, 6);
	cr_assert_eq(uroce_ip_addrs(T.s, gids, UROCE_IP_ADDR_MAX), 4);
	cr_assert_arr_eq(gids[0], OUR_LL, 16, "link-local first, as rxe's GID 0");
	uroce_gid_from_ipv4(ll, OUR_V4);
	cr_assert_arr_eq(gids[1], ll, 16);
	uroce_gid_from_ipv4(ll, OUR_V4B);
	cr_assert_arr_eq(gids[2], ll, 16);
	cr_assert_arr_eq(gids[3], OUR_V6, 16);
	cr_assert_eq(uroce_ip_addrs(T.s, gids, 1), 4, "count even when truncated");

	/* EUI-64 (RFC 4291 appendix A), the textbook example. */
	uroce_ip_link_local(qemu_mac, ll);
	cr_assert_arr_eq(ll, qemu_ll, 16);
	ipt_teardown();
	ipt_cfg(&cfg);
	memcpy(cfg.mac, qemu_mac, 6);
	ipt_setup_cfg(&cfg);
	cr_assert_eq(uroce_ip_mcast_macs(T.s, macs, UROCE_IP_MCAST_MAX), 3);
	cr_assert_arr_eq(macs[1], sn2, 6);
	cr_assert_arr_eq(macs[2], sn1, 6);
	cr_assert(uroce_ip_is_local(T.s, qemu_ll));
}
