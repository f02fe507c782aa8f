/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * drivers/ethdev in one process over net_ring: a net_ring vdev without arguments loops
 * its TX rings back to its RX rings and hands over the very mbufs sent, chains included.
 * So TX chaining, RX linearizing, the batch, drops and mbuf accounting can be checked
 * byte for byte without a second process. Each Criterion test runs in its own process
 * and initialises EAL there (--no-huge --no-shconf: no files left behind).
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <rte_mempool.h>

#include "uroce_ethdev.h"

static struct uroce_eth_port port;

static void eal_up(void)
{
	char *argv[] = {"test_ethdev", "--no-huge", "-m", "256", "--no-shconf", "--no-pci",
			"-l", "0", "--log-level=lib.eal:error", "--vdev=net_ring0", NULL};
	int ret = uroce_eth_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv);

	cr_assert_eq(ret, 9, "uroce_eth_eal_init: %d", ret);
	/* As rte_eal_init leaves it: the program name where the caller's arguments start. */
	cr_assert_str_eq(argv[ret], "test_ethdev");
}

static void eal_down(void)
{
	uroce_eth_port_close(&port);
	uroce_eth_eal_cleanup();
}

static void open_port(uint32_t mtu, uint16_t room)
{
	struct uroce_eth_port_cfg cfg = {.name = "net_ring0", .mtu = mtu, .mbuf_room = room};
	int ret = uroce_eth_port_open(&port, &cfg);

	cr_assert_eq(ret, 0, "port_open: %d", ret);
	cr_assert(uroce_eth_link_up(&port));
}

static void fill(uint8_t *b, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* Sends @p n frames of the given lengths, receives them all, compares every byte. */
static void roundtrip(const uint32_t *lens, uint16_t n, bool want_linearized)
{
	static uint8_t buf[16384];
	struct uroce_eth_frame fr[UROCE_ETH_BURST_MAX];
	uint16_t got = 0;

	for (uint16_t i = 0; i < n; i++) {
		fill(buf, lens[i], i);
		cr_assert_eq(uroce_eth_tx_frame(&port, 0, buf, lens[i]), 0, "tx %u", i);
	}
	(void)uroce_eth_tx_flush(&port, 0);
	while (got < n) {
		uint16_t k = uroce_eth_rx(&port, 0, fr, UROCE_ETH_BURST_MAX);

		cr_assert_neq(k, 0, "frames lost: got %u of %u", got, n);
		for (uint16_t i = 0; i < k; i++, got++) {
			fill(buf, lens[got], got);
			cr_assert_eq(fr[i].len, lens[got], "frame %u len %u", got, fr[i].len);
			cr_assert_eq(memcmp(fr[i].data, buf, lens[got]), 0, "frame %u bytes", got);
			cr_assert_eq(fr[i].linearized,
				     want_linearized && lens[got] > port.mbuf_room,
				     "frame %u linearized %d", got, fr[i].linearized);
		}
		uroce_eth_rx_done(&port, 0);
	}
}

TestSuite(ethdev, .init = eal_up, .fini = eal_down);

Test(ethdev, eal_contract)
{
	char *argv[] = {"again", NULL};

	cr_assert_eq(uroce_eth_eal_init(1, argv), -EALREADY);
}

Test(ethdev, single_segment_in_place)
{
	uint32_t lens[100];
	struct uroce_eth_stats s;

	open_port(0, 0);
	cr_assert_eq(port.mtu, 1500);
	cr_assert_eq(port.max_frame, 1518);
	cr_assert_not(port.sw_mtu);
	for (int i = 0; i < 100; i++)
		lens[i] = 60 + (uint32_t)i * 14;
	roundtrip(lens, 100, false);
	cr_assert_eq(uroce_eth_stats_get(&port, &s), 0);
	cr_assert_eq(s.tx_frames, 100);
	cr_assert_eq(s.rx_frames, 100);
	cr_assert_eq(s.tx_chained, 0);
	cr_assert_eq(s.rx_linearized, 0);
	cr_assert_eq(s.tx_dropped, 0);
}

Test(ethdev, chained_tx_linearized_rx)
{
	/* 256-byte mbufs: an 8000-byte frame is a chain of 32, 257 bytes a chain of 2. */
	uint32_t lens[] = {60, 256, 257, 511, 512, 513, 1518, 4096 + 58, 8000, 9018, 300, 64};
	uint16_t n = (uint16_t)(sizeof(lens) / sizeof(lens[0])), chained = 0;
	struct uroce_eth_stats s;

	open_port(9000, 256);
	cr_assert_eq(port.mbuf_room, 256);
	for (uint16_t i = 0; i < n; i++)
		chained += lens[i] > 256;
	roundtrip(lens, n, true);
	cr_assert_eq(uroce_eth_stats_get(&port, &s), 0);
	cr_assert_eq(s.tx_chained, chained);
	cr_assert_eq(s.rx_linearized, chained);
}

Test(ethdev, more_than_a_burst_and_batch)
{
	uint32_t lens[200];

	open_port(0, 0);
	for (int i = 0; i < 200; i++)
		lens[i] = 60 + (uint32_t)(i % 7) * 200;
	/* 200 frames: six automatic batch flushes, rx in bursts of 64. */
	roundtrip(lens, 200, false);
}

Test(ethdev, sizes_refused)
{
	uint8_t buf[2000] = {0};
	struct uroce_eth_stats s;

	open_port(1500, 0);
	cr_assert_eq(uroce_eth_tx_frame(&port, 0, buf, 0), -EMSGSIZE);
	cr_assert_eq(uroce_eth_tx_frame(&port, 0, buf, 1519), -EMSGSIZE);
	cr_assert_eq(uroce_eth_tx_frame(&port, 0, buf, 1518), 0);
	cr_assert_null(uroce_eth_tx_alloc(&port, 0, 1519));
	cr_assert_eq(uroce_eth_tx_commit(&port, 0), -EINVAL);
	cr_assert_eq(uroce_eth_stats_get(&port, &s), 0);
	cr_assert_eq(s.tx_oversize, 3);
}

Test(ethdev, tx_alloc_commit)
{
	struct uroce_eth_frame fr[4];
	uint8_t *b;

	open_port(0, 0);
	b = uroce_eth_tx_alloc(&port, 0, 128);
	cr_assert_not_null(b);
	fill(b, 128, 42);
	cr_assert_eq(uroce_eth_tx_commit(&port, 0), 0);
	cr_assert_eq(uroce_eth_tx_flush(&port, 0), 1);
	cr_assert_eq(uroce_eth_rx(&port, 0, fr, 4), 1);
	cr_assert_eq(fr[0].len, 128);
	b = malloc(128);
	cr_assert_not_null(b);
	fill(b, 128, 42);
	cr_assert_eq(memcmp(fr[0].data, b, 128), 0);
	free(b);
	uroce_eth_rx_done(&port, 0);
}

static unsigned int lend_done_calls;

static void lend_done(void *arg)
{
	cr_assert_eq(arg, &lend_done_calls);
	lend_done_calls++;
}

/* Zero-copy TX: a header, two lent pieces and a copied tail arrive as one frame; the lent
 * memory is the caller's until the port lets go of the mbufs, and not a moment longer:
 * net_ring hands the very mbufs to RX, so they are held until rx_done. */
Test(ethdev, lent_segments_arrive_and_are_given_back)
{
	static uint8_t lent[6000], want[7000];
	struct uroce_eth_frame fr[4];
	struct uroce_eth_stats s;
	unsigned int avail0, lend_avail0;
	uint8_t *b;

	open_port(9000, 0);
	cr_assert(port.tx_lend, "net_ring is a vdev that chains: lending is on");
	avail0 = rte_mempool_avail_count(port.pool);
	lend_avail0 = rte_mempool_avail_count(port.lend_pool);
	fill(want, sizeof(want), 9);
	memcpy(lent, want + 60, sizeof(lent));
	b = uroce_eth_tx_alloc(&port, 0, 60);
	cr_assert_not_null(b);
	memcpy(b, want, 60);
	cr_assert_eq(uroce_eth_tx_lend(&port, 0, lent, 4000, lend_done, &lend_done_calls), 0);
	cr_assert_eq(uroce_eth_tx_lend(&port, 0, lent + 4000, 2000, lend_done, &lend_done_calls),
		     0);
	cr_assert_eq(uroce_eth_tx_append(&port, 0, want + 6060, 7), 0);
	cr_assert_eq(uroce_eth_tx_commit(&port, 0), 0);
	cr_assert_eq(uroce_eth_tx_flush(&port, 0), 1);
	cr_assert_eq(lend_done_calls, 0, "the frame is in the ring: the memory is still lent");
	cr_assert_eq(uroce_eth_rx(&port, 0, fr, 4), 1);
	cr_assert_eq(fr[0].len, 6067);
	cr_assert_eq(memcmp(fr[0].data, want, 6067), 0);
	cr_assert_eq(lend_done_calls, 0);
	uroce_eth_rx_done(&port, 0);
	cr_assert_eq(lend_done_calls, 2, "each lent piece given back once");
	cr_assert_eq(uroce_eth_stats_get(&port, &s), 0);
	cr_assert_eq(s.tx_lent, 2);
	cr_assert_eq(s.tx_chained, 1);
	cr_assert_eq(rte_mempool_avail_count(port.pool), avail0);
	cr_assert_eq(rte_mempool_avail_count(port.lend_pool), lend_avail0);
}

/* Refused arguments lend nothing; a reservation dropped before its commit and a frame
 * received give every lent piece back, once. */
Test(ethdev, lent_segments_given_back_on_every_path)
{
	static uint8_t lent[2048];
	struct uroce_eth_frame fr[4];
	uint8_t *b;

	open_port(0, 0);
	cr_assert_eq(uroce_eth_tx_lend(&port, 0, lent, 100, lend_done, &lend_done_calls), -EINVAL,
		     "no reservation");
	b = uroce_eth_tx_alloc(&port, 0, 60);
	cr_assert_not_null(b);
	cr_assert_eq(uroce_eth_tx_lend(&port, 0, lent, 0, lend_done, &lend_done_calls), -EINVAL);
	cr_assert_eq(uroce_eth_tx_lend(&port, 0, lent, port.max_frame, lend_done,
				       &lend_done_calls),
		     -EMSGSIZE);
	cr_assert_eq(uroce_eth_tx_lend(&port, 0, lent, 100, lend_done, &lend_done_calls), 0);
	/* A new reservation drops the uncommitted frame, lent piece and all. */
	b = uroce_eth_tx_alloc(&port, 0, 60);
	cr_assert_not_null(b);
	cr_assert_eq(lend_done_calls, 1);
	cr_assert_eq(uroce_eth_tx_lend(&port, 0, lent, 100, lend_done, &lend_done_calls), 0);
	cr_assert_eq(uroce_eth_tx_commit(&port, 0), 0);
	cr_assert_eq(uroce_eth_tx_flush(&port, 0), 1);
	cr_assert_eq(lend_done_calls, 1, "in the ring");
	cr_assert_eq(uroce_eth_rx(&port, 0, fr, 4), 1);
	cr_assert_eq(fr[0].len, 160);
	cr_assert_eq(lend_done_calls, 1, "received, not yet released");
	uroce_eth_rx_done(&port, 0);
	cr_assert_eq(lend_done_calls, 2);
}

/* The ring behind net_ring0 holds 1024 frames: the rest is refused, freed, counted. */
Test(ethdev, refused_frames_are_freed_and_counted)
{
	uint8_t buf[64];
	struct uroce_eth_frame fr[UROCE_ETH_BURST_MAX];
	struct uroce_eth_stats s;
	unsigned int avail0;
	uint64_t got = 0;
	uint16_t k;

	open_port(0, 0);
	avail0 = rte_mempool_avail_count(port.pool);
	memset(buf, 0xab, sizeof(buf));
	for (int i = 0; i < 3000; i++)
		cr_assert_eq(uroce_eth_tx_frame(&port, 0, buf, sizeof(buf)), 0);
	(void)uroce_eth_tx_flush(&port, 0);
	cr_assert_eq(uroce_eth_stats_get(&port, &s), 0);
	cr_assert_eq(s.tx_frames + s.tx_dropped, 3000);
	cr_assert_gt(s.tx_dropped, 0);
	while ((k = uroce_eth_rx(&port, 0, fr, UROCE_ETH_BURST_MAX)) != 0) {
		got += k;
		uroce_eth_rx_done(&port, 0);
	}
	cr_assert_eq(got, s.tx_frames);
	/* Every mbuf is back: nothing leaked on the drop path or the rx path. */
	cr_assert_eq(rte_mempool_avail_count(port.pool), avail0);
}

/* tx_hold: what the full ring refuses stays queued, in order, and the sender is pushed
 * back (-EAGAIN, NULL) instead of losing frames; once the receiver drains the ring, the
 * held frames go first and every frame arrives, each once, in the order sent. */
Test(ethdev, tx_hold_pushes_back_and_loses_nothing)
{
	struct uroce_eth_port_cfg cfg = {.name = "net_ring0", .tx_hold = true};
	struct uroce_eth_frame fr[UROCE_ETH_BURST_MAX];
	struct uroce_eth_stats s;
	uint32_t sent = 0, got = 0, refused = 0;
	unsigned int avail0;
	uint8_t buf[64];
	uint16_t k;

	cr_assert_eq(uroce_eth_port_open(&port, &cfg), 0);
	avail0 = rte_mempool_avail_count(port.pool);
	/* Until the ring (1024) and a batch are full: then -EAGAIN, nothing queued. */
	while (refused == 0 && sent < 3000) {
		memcpy(buf, &sent, sizeof(sent));
		if (uroce_eth_tx_frame(&port, 0, buf, sizeof(buf)) == 0)
			sent++;
		else
			refused++;
	}
	cr_assert_eq(refused, 1, "pushed back before 3000 frames (sent %u)", sent);
	cr_assert_geq(sent, 1024, "the ring's room was used: %u", sent);
	cr_assert_eq(uroce_eth_tx_pending(&port, 0), UROCE_ETH_TX_BATCH);
	cr_assert_null(uroce_eth_tx_alloc(&port, 0, 64), "tx_alloc pushed back too");
	(void)uroce_eth_tx_flush(&port, 0);
	cr_assert_eq(uroce_eth_stats_get(&port, &s), 0);
	cr_assert_eq(s.tx_dropped, 0);
	cr_assert_geq(s.tx_busy, 2);
	/* The receiver drains; each flush between lets the held frames follow. */
	while (got < sent) {
		k = uroce_eth_rx(&port, 0, fr, UROCE_ETH_BURST_MAX);
		for (uint16_t i = 0; i < k; i++, got++) {
			uint32_t seq;

			memcpy(&seq, fr[i].data, sizeof(seq));
			cr_assert_eq(seq, got, "frame %u arrived as %u: out of order or twice", got,
				     seq);
		}
		uroce_eth_rx_done(&port, 0);
		(void)uroce_eth_tx_flush(&port, 0);
		cr_assert(k != 0 || uroce_eth_tx_pending(&port, 0) == 0,
			  "nothing arrives while %u frames are held",
			  uroce_eth_tx_pending(&port, 0));
		if (k == 0)
			break;
	}
	cr_assert_eq(got, sent);
	cr_assert_eq(uroce_eth_tx_pending(&port, 0), 0);
	cr_assert_eq(uroce_eth_tx_frame(&port, 0, buf, sizeof(buf)), 0, "room again");
	(void)uroce_eth_tx_flush(&port, 0);
	while ((k = uroce_eth_rx(&port, 0, fr, UROCE_ETH_BURST_MAX)) != 0)
		uroce_eth_rx_done(&port, 0);
	cr_assert_eq(rte_mempool_avail_count(port.pool), avail0);
}

/* rx without rx_done releases the previous burst itself. */
Test(ethdev, rx_releases_the_previous_burst)
{
	uint8_t buf[64] = {0};
	struct uroce_eth_frame fr[8];
	unsigned int avail0;

	open_port(0, 0);
	avail0 = rte_mempool_avail_count(port.pool);
	for (int i = 0; i < 16; i++)
		cr_assert_eq(uroce_eth_tx_frame(&port, 0, buf, sizeof(buf)), 0);
	(void)uroce_eth_tx_flush(&port, 0);
	cr_assert_eq(uroce_eth_rx(&port, 0, fr, 8), 8);
	cr_assert_eq(uroce_eth_rx(&port, 0, fr, 8), 8);
	cr_assert_eq(uroce_eth_rx(&port, 0, fr, 8), 0);
	cr_assert_eq(rte_mempool_avail_count(port.pool), avail0);
}

Test(ethdev, multicast_list)
{
	const uint8_t nd[6] = {0x33, 0x33, 0xff, 0x12, 0x34, 0x56};
	const uint8_t uni[6] = {0x02, 0, 0, 0, 0, 1};
	int ret;

	open_port(0, 0);
	cr_assert_eq(uroce_eth_add_mcast(&port, uni), -EINVAL);
	/* net_ring has no multicast filter: -ENOTSUP is the documented answer, and the
	 * address stays listed (all-multicast covers it). */
	ret = uroce_eth_add_mcast(&port, nd);
	cr_assert(ret == 0 || ret == -ENOTSUP, "add_mcast: %d", ret);
	cr_assert_eq(port.nb_mcast, 1);
	ret = uroce_eth_add_mcast(&port, nd);
	cr_assert(ret == 0, "duplicate add: %d", ret);
	cr_assert_eq(port.nb_mcast, 1);
	ret = uroce_eth_del_mcast(&port, nd);
	cr_assert(ret == 0 || ret == -ENOTSUP, "del_mcast: %d", ret);
	cr_assert_eq(port.nb_mcast, 0);
	cr_assert_eq(uroce_eth_del_mcast(&port, nd), -ENOENT);
}

Test(ethdev, queues)
{
	struct uroce_eth_port_cfg cfg = {.name = "net_ring0", .nb_rxq = 2, .nb_txq = 2};
	struct uroce_eth_frame fr[4];
	uint8_t buf[80] = {1};

	cr_assert_eq(uroce_eth_port_open(&port, &cfg), 0);
	cr_assert_eq(port.nb_rxq, 2);
	/* net_ring loops queue q's TX ring to queue q's RX ring. */
	cr_assert_eq(uroce_eth_tx_frame(&port, 1, buf, sizeof(buf)), 0);
	cr_assert_eq(uroce_eth_tx_flush(&port, 1), 1);
	cr_assert_eq(uroce_eth_rx(&port, 0, fr, 4), 0);
	cr_assert_eq(uroce_eth_rx(&port, 1, fr, 4), 1);
	uroce_eth_rx_done(&port, 1);
}

Test(ethdev, bad_config)
{
	struct uroce_eth_port_cfg cfg = {.name = "net_nosuch0"};

	cr_assert_eq(uroce_eth_port_open(&port, &cfg), -ENODEV);
	cfg.name = "net_ring0";
	cfg.nb_rxq = UROCE_ETH_MAX_QUEUES + 1;
	cr_assert_eq(uroce_eth_port_open(&port, &cfg), -EINVAL);
	cfg.nb_rxq = 0;
	cfg.mtu = 20;
	cr_assert_eq(uroce_eth_port_open(&port, &cfg), -EINVAL);
}
