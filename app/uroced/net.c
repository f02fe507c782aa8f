/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * All of uroced's packet I/O: the port (drivers/ethdev), the loopback path, fault
 * injection, capture and the host stack.
 *
 *   port rx -> rx fault -> host stack (ARP, ND, echo answered there)
 *                                  \-> RoCE: capture -> transport
 *   transport tx -> destination is this device? -> loopback queue -> transport (next turn)
 *                                  \-> capture -> tx fault -> port tx
 *   host stack tx -> port tx (no faults: they are for the RoCE traffic under study)
 *
 * Loopback goes through a queue, not a recursive call, so the transport is never
 * re-entered from its own tx callback; it is what rxe and RNICs do for traffic to their
 * own GID, and it works with the link down.
 *
 * Link down: the port is neither polled nor flushed (drivers/ethdev: a memif PMD polled
 * after its peer left can crash), and a frame for the wire is dropped and counted
 * (tx_link_down), as a NIC without carrier loses it: the transport's and the host
 * stack's timers retransmit or give up, as after any loss. Those timers, and the fault
 * injectors' held frames, run whatever the link does: they are driven by time alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>

#include "uroced.h"

static int port_tx(void *ctx, const uint8_t *frame, uint32_t len)
{
	(void)ctx;
	if (!ud.link_up) {
		ud.cnt.tx_link_down++;
		return 0;
	}
	if (uroce_eth_tx_frame(&ud.port, 0, frame, len) != 0) {
		ud.cnt.tx_refused++;
		return -EAGAIN;
	}
	return 0;
}

static void capture(const uint8_t *frame, uint32_t len)
{
	if (!ud.capturing)
		return;
	if (uroce_pcap_writer_write(&ud.cap, ud.now_ns, frame, len, len) == 0)
		ud.cnt.capture_frames++;
	else
		ud.cnt.capture_errors++;
}

/* What the rx fault injector lets through. */
static int rx_deliver(void *ctx, const uint8_t *frame, uint32_t len)
{
	(void)ctx;
	switch (uroce_ip_input(ud.ip, frame, len, ud.now_ns)) {
	case UROCE_IP_ROCE:
		capture(frame, len);
		uroce_tp_rx(ud.dev, frame, len, ud.now_ns);
		break;
	case UROCE_IP_CONSUMED:
		break;
	case UROCE_IP_DROP:
		ud.cnt.rx_non_roce++;
		break;
	}
	return 0;
}

static int tx_wire(void *ctx, const uint8_t *frame, uint32_t len)
{
	return port_tx(ctx, frame, len);
}

/* A RoCE frame to a multicast group this host joined. */
static bool mcast_local(const uint8_t *frame, uint32_t len)
{
	struct uroce_wire_pkt pkt;
	uint8_t gid[UROCE_GID_LEN];

	if (uroce_wire_parse(frame, len, &pkt) != UROCE_WIRE_OK)
		return false;
	if (pkt.hdr.ip_version == 4)
		uroce_gid_from_ipv4(gid, pkt.hdr.ip_dst + 12);
	else
		memcpy(gid, pkt.hdr.ip_dst, 16);
	return uroce_ip_group_joined(ud.ip, gid);
}

int ud_net_tx(void *io_ctx, const uint8_t *frame, uint32_t len)
{
	(void)io_ctx;
	if (memcmp(frame, ud.mac, 6) == 0) {
		struct ud_loop_frame *f;

		if (ud.loop_tail - ud.loop_head >= UD_LOOP_SLOTS || len > UD_FRAME_MAX) {
			ud.cnt.loopback_full++;
			return -EAGAIN;
		}
		f = &ud.loop[ud.loop_tail++ % UD_LOOP_SLOTS];
		memcpy(f->data, frame, len);
		f->len = len;
		capture(frame, len);
		return 0;
	}
	capture(frame, len);
	/* A multicast frame also goes to our own members (IBA 10.5.2.5?: a port's attached QPs
	 * receive the port's own multicast sends, as rxe does through the kernel's multicast
	 * loopback), through the loopback queue. */
	if ((frame[0] & 1) && len <= UD_FRAME_MAX && mcast_local(frame, len) &&
	    ud.loop_tail - ud.loop_head < UD_LOOP_SLOTS) {
		struct ud_loop_frame *f = &ud.loop[ud.loop_tail++ % UD_LOOP_SLOTS];

		memcpy(f->data, frame, len);
		f->len = len;
	}
	return uroce_fault_frame(&ud.tx_fault, ud.now_ns, frame, len);
}

unsigned int ud_net_rx(void)
{
	struct uroce_eth_frame fr[UROCE_ETH_BURST_MAX];
	unsigned int done = 0;
	uint16_t n, i;

	/* Loopback first, a bounded batch: what was sent last turn. */
	while (ud.loop_head != ud.loop_tail && done < UROCE_ETH_BURST_MAX) {
		struct ud_loop_frame *f = &ud.loop[ud.loop_head % UD_LOOP_SLOTS];

		uroce_tp_rx(ud.dev, f->data, f->len, ud.now_ns);
		ud.loop_head++;
		ud.cnt.loopback_frames++;
		done++;
	}
	if (!ud.link_up)
		return done;
	n = uroce_eth_rx(&ud.port, 0, fr, UROCE_ETH_BURST_MAX);
	for (i = 0; i < n; i++)
		uroce_fault_frame(&ud.rx_fault, ud.now_ns, fr[i].data, fr[i].len);
	if (n)
		uroce_eth_rx_done(&ud.port, 0);
	return done + n;
}

void ud_net_timers(void)
{
	/* Reordered frames held too long, and neighbour requests and timeouts. */
	if (uroce_fault_next_deadline(&ud.rx_fault) <= ud.now_ns)
		uroce_fault_process(&ud.rx_fault, ud.now_ns);
	if (uroce_fault_next_deadline(&ud.tx_fault) <= ud.now_ns)
		uroce_fault_process(&ud.tx_fault, ud.now_ns);
	if (uroce_ip_next_deadline(ud.ip) <= ud.now_ns)
		uroce_ip_process(ud.ip, ud.now_ns);
}

uint64_t ud_net_next_deadline(void)
{
	uint64_t t = uroce_ip_next_deadline(ud.ip);

	if (uroce_fault_next_deadline(&ud.rx_fault) < t)
		t = uroce_fault_next_deadline(&ud.rx_fault);
	if (uroce_fault_next_deadline(&ud.tx_fault) < t)
		t = uroce_fault_next_deadline(&ud.tx_fault);
	return t;
}

void ud_net_tx_flush(void)
{
	if (ud.link_up)
		uroce_eth_tx_flush(&ud.port, 0);
}

void ud_net_link_check(void)
{
	bool up = uroce_eth_link_up(&ud.port);

	if (up == ud.link_up)
		return;
	ud.link_up = up;
	ud.cnt.link_changes++;
	UD_INFO("link %s", up ? "up" : "down");
	/* As rxe on its netdev's NETDEV_UP / NETDEV_DOWN and carrier changes. */
	ud_tp_event(NULL, up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR, NULL);
}

int ud_fault_set(const double rates[8])
{
	struct uroce_fault_cfg rx = {.drop = rates[0], .dup = rates[1], .reorder = rates[2],
				     .corrupt = rates[3], .seed = ud.conf.fault.seed};
	struct uroce_fault_cfg tx = {.drop = rates[4], .dup = rates[5], .reorder = rates[6],
				     .corrupt = rates[7], .seed = ud.conf.fault.seed * 31 + 7};
	struct uroce_fault nrx, ntx;
	int rc;

	rc = uroce_fault_init(&nrx, &rx, rx_deliver, NULL);
	if (rc)
		return rc;
	rc = uroce_fault_init(&ntx, &tx, tx_wire, NULL);
	if (rc) {
		uroce_fault_fini(&nrx);
		return rc;
	}
	/* Held frames go out before the old injectors go, so a change loses nothing. */
	uroce_fault_flush(&ud.rx_fault);
	uroce_fault_flush(&ud.tx_fault);
	uroce_fault_fini(&ud.rx_fault);
	uroce_fault_fini(&ud.tx_fault);
	ud.rx_fault = nrx;
	ud.tx_fault = ntx;
	UD_INFO("fault injection: rx drop %g dup %g reorder %g corrupt %g, tx drop %g dup %g "
		"reorder %g corrupt %g", rates[0], rates[1], rates[2], rates[3], rates[4],
		rates[5], rates[6], rates[7]);
	return 0;
}

int ud_capture_start(const char *path)
{
	int rc;

	ud_capture_stop();
	rc = uroce_pcap_writer_open(&ud.cap, path, ud.conf.capture.snaplen);
	if (rc) {
		UD_ERR("capture: cannot write %s: %s", path, strerror(-rc));
		return rc;
	}
	ud.capturing = true;
	UD_INFO("capture: writing RoCE frames to %s", path);
	return 0;
}

int ud_capture_start_fd(int fd)
{
	int rc;

	ud_capture_stop();
	rc = uroce_pcap_writer_open_fd(&ud.cap, fd, ud.conf.capture.snaplen);
	if (rc) {
		UD_ERR("capture: cannot write the file given: %s", strerror(-rc));
		return rc;
	}
	ud.capturing = true;
	UD_INFO("capture: writing RoCE frames to the file given (fd %d)", fd);
	return 0;
}

void ud_capture_stop(void)
{
	if (!ud.capturing)
		return;
	ud.capturing = false;
	if (uroce_pcap_writer_close(&ud.cap) != 0)
		ud.cnt.capture_errors++;
	UD_INFO("capture: stopped");
}

int ud_net_init(void)
{
	const struct uroce_conf *c = &ud.conf;
	struct uroce_ip_cfg ic;
	double rates[8] = {c->fault.rx_drop, c->fault.rx_dup, c->fault.rx_reorder,
			   c->fault.rx_corrupt, c->fault.tx_drop, c->fault.tx_dup,
			   c->fault.tx_reorder, c->fault.tx_corrupt};
	uint8_t mc[UROCE_IP_MCAST_MAX][6];
	unsigned int i, nmc;
	int rc;

	ud.loop = calloc(UD_LOOP_SLOTS, sizeof(*ud.loop));
	if (!ud.loop)
		return -ENOMEM;

	uroce_ip_cfg_init(&ic);
	memcpy(ic.mac, ud.mac, 6);
	for (i = 0; i < c->host.n_ipv4 && i < UROCE_IP_MAX_V4; i++)
		memcpy(ic.v4[i], &c->host.ipv4[i], 4);
	ic.v4_count = (uint8_t)i;
	for (i = 0; i < c->host.n_ipv6 && i < UROCE_IP_MAX_V6; i++)
		memcpy(ic.v6[i], &c->host.ipv6[i], 16);
	ic.v6_count = (uint8_t)i;
	ic.vlan_id = (uint16_t)c->port.vlan;
	ic.tx = port_tx;
	ic.resolved = ud_neigh_resolved;
	ud.ip = uroce_ip_create(&ic);
	if (!ud.ip)
		return -errno;
	nmc = uroce_ip_mcast_macs(ud.ip, mc, UROCE_IP_MCAST_MAX);
	for (i = 0; i < nmc && ud.port_open; i++)
		uroce_eth_add_mcast(&ud.port, mc[i]);

	/* Injectors start as pass-through, then take the configured rates. */
	memset(&ud.rx_fault, 0, sizeof(ud.rx_fault));
	memset(&ud.tx_fault, 0, sizeof(ud.tx_fault));
	{
		struct uroce_fault_cfg none = {.seed = 1};

		rc = uroce_fault_init(&ud.rx_fault, &none, rx_deliver, NULL);
		if (!rc)
			rc = uroce_fault_init(&ud.tx_fault, &none, tx_wire, NULL);
		if (rc)
			return rc;
	}
	rc = ud_fault_set(rates);
	if (rc)
		return rc;
	if (c->capture.file[0])
		return ud_capture_start(c->capture.file);
	return 0;
}

void ud_net_fini(void)
{
	ud_capture_stop();
	uroce_fault_fini(&ud.rx_fault);
	uroce_fault_fini(&ud.tx_fault);
	if (ud.ip)
		uroce_ip_destroy(ud.ip);
	ud.ip = NULL;
	free(ud.loop);
	ud.loop = NULL;
}
