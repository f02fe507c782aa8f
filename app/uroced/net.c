/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * All of uroced's packet I/O: the port (drivers/ethdev), the loopback path, fault
 * injection, capture and the host stack; and the ops through which the RNIC (lib/rnic)
 * reaches them.
 *
 *   port rx -> rx fault -> host stack (ARP, ND, echo answered there)
 *                                  \-> RoCE: capture -> RNIC
 *   RNIC tx -> destination is this device? -> loopback queue -> RNIC (next turn)
 *                                  \-> capture -> tx fault -> port tx
 *   host stack tx -> port tx (no faults: they are for the RoCE traffic under study)
 *   what the host stack does not handle, and ARP -> kernel interface (host.kernel_iface)
 *   kernel interface -> port tx
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
#include <unistd.h>

#include <rte_cycles.h>

#include "uroced.h"

static int port_tx(void *ctx, const uint8_t *frame, uint32_t len)
{
	struct uroced *d = ctx;

	if (!d->link_up) {
		d->cnt.tx_link_down++;
		return 0;
	}
	if (uroce_eth_tx_frame(&d->port, 0, frame, len) != 0) {
		d->cnt.tx_refused++;
		return -EAGAIN;
	}
	return 0;
}

static void capture(struct uroced *d, const uint8_t *frame, uint32_t len)
{
	if (!d->capturing)
		return;
	if (uroce_pcap_writer_write(&d->cap, d->now_ns, frame, len, len) == 0)
		d->cnt.capture_frames++;
	else
		d->cnt.capture_errors++;
}

/* A received frame the kernel interface gets: one for our MAC or a group, since the
 * tap shares our MAC (the port is promiscuous). A full tap queue loses it, as a NIC's
 * full ring would. */
static void to_kernel(struct uroced *d, const uint8_t *frame, uint32_t len)
{
	int fd = uroced_kernel_fd(d);

	if (fd < 0 || len < 14 || (!(frame[0] & 1) && memcmp(frame, d->mac, 6) != 0))
		return;
	if (write(fd, frame, len) == (ssize_t)len)
		d->cnt.kernel_rx++;
	else
		d->cnt.kernel_drops++;
}

/* What the rx fault injector lets through. The raw packet QPs' flow rules may take
 * what neither the RNIC nor the host stack needs (else they only get a copy, if they
 * sniff): RoCE for this device and ARP/ND/echo stay where they were. */
static void rx_deliver(struct uroced *d, const uint8_t *frame, uint32_t len)
{
	uint8_t *completed = d->csum_frame;
	struct uroce_wire_pkt pkt; /* a RoCE frame, parsed once: for the transport */
	enum uroce_wire_err err;
	enum uroce_ip_verdict v = uroce_ip_input_roce(d->ip, frame, len, d->now_ns, &pkt, &err);

	/* A sender on this machine (a VM, a container on a veth) may have left its TCP or
	 * UDP checksum for offload: it is filled in, as the device would have, before the
	 * kernel (which would drop the frame as corrupt) or a raw packet QP (which would
	 * see no IBV_WC_IP_CSUM_OK) gets it (uroce_ipstack.h). RoCE and what the host stack
	 * answers are not TCP or UDP for anyone else. */
	if (v == UROCE_IP_DROP && len <= sizeof(d->csum_frame) &&
	    uroce_ip_csum_partial(frame, len)) {
		memcpy(completed, frame, len);
		uroce_ip_csum_complete(completed, len);
		frame = completed;
		d->cnt.kernel_csum_completed++;
	}
	if (uroce_rnic_flow_rx(d->rnic, frame, len, v == UROCE_IP_DROP)) {
		d->cnt.rx_flow_steered++;
		return;
	}
	switch (v) {
	case UROCE_IP_ROCE:
		capture(d, frame, len);
		uroce_rnic_rx_parsed(d->rnic, &pkt, err);
		break;
	case UROCE_IP_CONSUMED:
		/* ARP answered or learnt here is the kernel's to learn from too (its TCP
		 * resolves the same neighbours); echo is answered here only. */
		if (len >= 14 && frame[12] == 0x08 && frame[13] == 0x06)
			to_kernel(d, frame, len);
		break;
	case UROCE_IP_DROP:
		d->cnt.rx_non_roce++;
		to_kernel(d, frame, len);
		break;
	}
}

/* Delivers what the receive injector let through, in its order. */
static void rx_deliver_out(struct uroced *d, const struct uroce_fault_out *out, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		rx_deliver(d, out[i].frame, out[i].len);
}

unsigned int uroced_net_kernel_rx(struct uroced *d)
{
	uint8_t *frame = d->kernel_frame;
	int fd = uroced_kernel_fd(d);
	unsigned int n;

	if (fd < 0)
		return 0;
	/* A bounded batch: the data path must not wait on a busy kernel. */
	for (n = 0; n < 64; n++) {
		ssize_t len = read(fd, frame, sizeof(d->kernel_frame));

		if (len < 0)
			break; /* EAGAIN: drained */
		if (len < 14 || port_tx(d, frame, (uint32_t)len) != 0)
			d->cnt.kernel_drops++;
		else
			d->cnt.kernel_tx++;
	}
	return n;
}

/* Sends what the transmit injector let through, in its order, every frame even after a
 * refusal (the injector does not retry: a refused frame is lost, as a drop is).
 * @return 0 or port_tx's first negative value. */
static int tx_wire_out(struct uroced *d, const struct uroce_fault_out *out, uint32_t n)
{
	int rc = 0;

	for (uint32_t i = 0; i < n; i++) {
		int r = port_tx(d, out[i].frame, out[i].len);

		if (r < 0 && rc == 0)
			rc = r;
	}
	return rc;
}

/* RoCEv2: UDP to port 4791. */
static bool is_rocev2(const uint8_t *frame, uint32_t len)
{
	struct uroce_wire_layers l;

	uroce_wire_layers(frame, len, &l);
	return l.l4 && l.proto == 17 &&
	       (frame[l.l4_off + 2] << 8 | frame[l.l4_off + 3]) == UROCE_UDP_PORT_ROCEV2;
}

/* A RoCE frame to a multicast group this host joined. */
static bool mcast_local(const struct uroced *d, const uint8_t *frame, uint32_t len)
{
	struct uroce_wire_pkt pkt;
	uint8_t gid[UROCE_GID_LEN];

	if (uroce_wire_parse(frame, len, &pkt) != UROCE_WIRE_OK)
		return false;
	if (pkt.hdr.ip_version == 4)
		uroce_gid_from_ipv4(gid, pkt.hdr.ip_dst + 12);
	else
		memcpy(gid, pkt.hdr.ip_dst, 16);
	return uroce_ip_group_joined(d->ip, gid);
}

static int rnic_tx(void *io_ctx, const uint8_t *frame, uint32_t len)
{
	struct uroced *d = io_ctx;
	struct uroce_fault_out out[UROCE_FAULT_OUT_MAX];

	if (memcmp(frame, d->mac, 6) == 0) {
		struct uroced_loop_frame *f;

		if (d->loop_tail - d->loop_head >= UROCED_LOOP_SLOTS || len > UROCED_FRAME_MAX) {
			d->cnt.loopback_full++;
			return -EAGAIN;
		}
		f = &d->loop[d->loop_tail++ % UROCED_LOOP_SLOTS];
		memcpy(f->data, frame, len);
		f->len = len;
		f->flows_only = false;
		capture(d, frame, len);
		return 0;
	}
	capture(d, frame, len);
	/* A multicast frame also goes to our own members, through the loopback queue: a
	 * port's attached QPs receive the port's own multicast sends, as rxe's do through the
	 * kernel's multicast loopback. */
	if ((frame[0] & 1) && len <= UROCED_FRAME_MAX &&
	    d->loop_tail - d->loop_head < UROCED_LOOP_SLOTS) {
		/* And a raw packet QP's multicast frame (anything but RoCE) to this port's own
		 * flow rules, as a NIC loops a QP's multicast back to its local receivers:
		 * rdma-core's flow tests send to a multicast MAC and receive on the same port. */
		bool raw = !is_rocev2(frame, len);

		if (raw || mcast_local(d, frame, len)) {
			struct uroced_loop_frame *f = &d->loop[d->loop_tail++ % UROCED_LOOP_SLOTS];

			memcpy(f->data, frame, len);
			f->len = len;
			f->flows_only = raw;
		}
	}
	return tx_wire_out(d, out, uroce_fault_offer(&d->tx_fault, d->now_ns, frame, len, out));
}

/* A frame for the wire built straight in a port mbuf: only when nothing on the way
 * needs the frame itself (the loopback queue, multicast to our own members, capture,
 * an active fault injector) and the link is up; everything else takes rnic_tx. */
static uint8_t *rnic_tx_buf(void *io_ctx, const uint8_t dst_mac[6], uint32_t len)
{
	struct uroced *d = io_ctx;

	if (!d->link_up || d->capturing || d->tx_fault.active || (dst_mac[0] & 1) ||
	    memcmp(dst_mac, d->mac, 6) == 0)
		return NULL;
	return uroce_eth_tx_alloc(&d->port, 0, len);
}

static int rnic_tx_commit(void *io_ctx, uint8_t *frame, uint32_t len)
{
	struct uroced *d = io_ctx;

	(void)frame; /* the port's reservation: uroce_eth_tx_commit knows it */
	(void)len;
	if (uroce_eth_tx_commit(&d->port, 0) != 0) {
		d->cnt.tx_refused++;
		return -EAGAIN;
	}
	uroce_fault_count_passed(&d->tx_fault);
	d->cnt.tx_in_place++;
	return 0;
}

static void zc_piece_done(void *mem)
{
	uroce_rnic_mem_release(mem);
}

/* A frame whose payload segments point into the application's MR (the port lends them to
 * the PMD, which copies them out or sends them): the header and tail are copied, the
 * payload is not. Only where rnic_tx_buf would build in place, and the port lends. */
static int rnic_tx_zc(void *io_ctx, const uint8_t *hdr, uint32_t hdr_len,
		      const struct uroce_tp_tx_seg *seg, uint32_t nseg, const uint8_t *tail,
		      uint32_t tail_len)
{
	struct uroced *d = io_ctx;
	uint8_t *f;

	if (!d->port.tx_lend)
		return -ENOTSUP;
	f = rnic_tx_buf(io_ctx, hdr, hdr_len);
	if (!f)
		return -ENOTSUP;
	memcpy(f, hdr, hdr_len);
	for (uint32_t i = 0; i < nseg; i++) {
		/* Held before the port points at it: a failed lend releases at once. */
		uroce_rnic_mem_hold(seg[i].mr_ctx);
		if (uroce_eth_tx_lend(&d->port, 0, seg[i].addr, seg[i].len, zc_piece_done,
				      seg[i].mr_ctx) != 0) {
			uroce_rnic_mem_release(seg[i].mr_ctx);
			return -ENOTSUP; /* the next tx_alloc drops this reservation */
		}
	}
	if (uroce_eth_tx_append(&d->port, 0, tail, tail_len) != 0)
		return -ENOTSUP;
	if (rnic_tx_commit(io_ctx, f, hdr_len) != 0)
		return -EAGAIN;
	d->cnt.tx_zero_copy++;
	return 0;
}

unsigned int uroced_net_rx(struct uroced *d)
{
	struct uroce_eth_frame fr[UROCE_ETH_BURST_MAX];
	struct uroce_fault_out out[UROCE_FAULT_OUT_MAX];
	unsigned int done = 0;
	uint16_t n, i;

	/* Loopback first, a bounded batch: what was sent last turn. */
	while (d->loop_head != d->loop_tail && done < UROCE_ETH_BURST_MAX) {
		struct uroced_loop_frame *f = &d->loop[d->loop_head % UROCED_LOOP_SLOTS];

		/* A raw packet QP's frame to this port's own MAC is received as one from the
		 * wire would be: the flow rules may take it (never RoCE: the RNIC's). */
		if (!uroce_rnic_flow_rx(d->rnic, f->data, f->len, true) && !f->flows_only)
			uroce_rnic_rx(d->rnic, f->data, f->len);
		d->loop_head++;
		d->cnt.loopback_frames++;
		done++;
	}
	if (!d->link_up)
		return done;
	n = uroce_eth_rx(&d->port, 0, fr, UROCE_ETH_BURST_MAX);
	for (i = 0; i < n; i++) {
		uint32_t nout = uroce_fault_offer(&d->rx_fault, d->now_ns, fr[i].data, fr[i].len,
						  out);

		rx_deliver_out(d, out, nout);
	}
	if (n)
		uroce_eth_rx_done(&d->port, 0);
	return done + n;
}

int uroced_net_wake_fd(struct uroced *d)
{
	int fd;

	uroce_eth_rx_wake_fd(&d->port, 0, &fd); /* -1 for a port not open */
	return fd;
}

int uroced_net_sleep(struct uroced *d)
{
	int fd;
	enum uroce_eth_rx_wake w = uroce_eth_rx_wake_fd(&d->port, 0, &fd);

	if (w == UROCE_ETH_RX_WAKE_NONE)
		return UROCED_NET_SLEEP_NAP;
	/* Link down: no frame comes; the link check every 10 ms bounds the sleep. */
	if (!d->link_up)
		return UROCED_NET_SLEEP_WAKES;
	if (uroce_eth_rx_sleep(&d->port, 0) != 0)
		return UROCED_NET_SLEEP_NAP;
	d->rx_armed = true;
	/* An interrupt covers only frames after the arming: look once more. (A socket is
	 * readable while frames wait, whenever they came.) */
	if (w == UROCE_ETH_RX_WAKE_INTR && uroced_net_rx(d) != 0) {
		uroced_net_awake(d);
		return UROCED_NET_SLEEP_FRAMES;
	}
	return UROCED_NET_SLEEP_WAKES;
}

void uroced_net_awake(struct uroced *d)
{
	if (!d->rx_armed)
		return;
	d->rx_armed = false;
	uroce_eth_rx_awake(&d->port, 0);
}

void uroced_net_timers(struct uroced *d)
{
	struct uroce_fault_out out[UROCE_FAULT_OUT_MAX];

	/* Reordered frames held too long, and neighbour requests and timeouts. */
	if (uroce_fault_next_deadline(&d->rx_fault) <= d->now_ns)
		rx_deliver_out(d, out, uroce_fault_process(&d->rx_fault, d->now_ns, out));
	if (uroce_fault_next_deadline(&d->tx_fault) <= d->now_ns)
		tx_wire_out(d, out, uroce_fault_process(&d->tx_fault, d->now_ns, out));
	if (uroce_ip_next_deadline(d->ip) <= d->now_ns)
		uroce_ip_process(d->ip, d->now_ns);
}

uint64_t uroced_net_next_deadline(const struct uroced *d)
{
	uint64_t t = uroce_ip_next_deadline(d->ip);

	if (uroce_fault_next_deadline(&d->rx_fault) < t)
		t = uroce_fault_next_deadline(&d->rx_fault);
	if (uroce_fault_next_deadline(&d->tx_fault) < t)
		t = uroce_fault_next_deadline(&d->tx_fault);
	return t;
}

unsigned int uroced_net_tx_flush(struct uroced *d)
{
	if (!d->link_up)
		return 0;
	uroce_eth_tx_flush(&d->port, 0);
	return uroce_eth_tx_pending(&d->port, 0);
}

void uroced_net_link_check(struct uroced *d)
{
	bool up = uroce_eth_link_up(&d->port);

	if (up == d->link_up)
		return;
	d->link_up = up;
	d->cnt.link_changes++;
	UROCED_INFO(d, "link %s", up ? "up" : "down");
	/* As rxe on its netdev's NETDEV_UP / NETDEV_DOWN and carrier changes. */
	uroce_rnic_port_event(d->rnic, up);
}

static int fault_set(struct uroced *d, const double rates[8])
{
	struct uroce_fault_cfg rx = {.drop = rates[0],
				     .dup = rates[1],
				     .reorder = rates[2],
				     .corrupt = rates[3],
				     .seed = d->conf.fault.seed};
	struct uroce_fault_cfg tx = {.drop = rates[4],
				     .dup = rates[5],
				     .reorder = rates[6],
				     .corrupt = rates[7],
				     .seed = d->conf.fault.seed * 31 + 7};
	struct uroce_fault_out out[UROCE_FAULT_OUT_MAX];
	struct uroce_fault nrx, ntx;
	int rc;

	rc = uroce_fault_init(&nrx, &rx);
	if (rc)
		return rc;
	rc = uroce_fault_init(&ntx, &tx);
	if (rc) {
		uroce_fault_fini(&nrx);
		return rc;
	}
	/* Held frames go out before the old injectors go, so a change loses nothing. */
	rx_deliver_out(d, out, uroce_fault_flush(&d->rx_fault, out));
	tx_wire_out(d, out, uroce_fault_flush(&d->tx_fault, out));
	uroce_fault_fini(&d->rx_fault);
	uroce_fault_fini(&d->tx_fault);
	d->rx_fault = nrx;
	d->tx_fault = ntx;
	UROCED_INFO(d,
		    "fault injection: rx drop %g dup %g reorder %g corrupt %g, tx drop %g dup %g "
		    "reorder %g corrupt %g",
		    rates[0], rates[1], rates[2], rates[3], rates[4], rates[5], rates[6], rates[7]);
	return 0;
}

static void capture_stop(struct uroced *d);

static int capture_start(struct uroced *d, const char *path)
{
	int rc;

	capture_stop(d);
	rc = uroce_pcap_writer_open(&d->cap, path, d->conf.capture.snaplen);
	if (rc) {
		UROCED_ERR(d, "capture: cannot write %s: %s", path, strerror(-rc));
		return rc;
	}
	d->capturing = true;
	UROCED_INFO(d, "capture: writing RoCE frames to %s", path);
	return 0;
}

static int capture_start_fd(struct uroced *d, int fd)
{
	int rc;

	capture_stop(d);
	rc = uroce_pcap_writer_open_fd(&d->cap, fd, d->conf.capture.snaplen);
	if (rc) {
		UROCED_ERR(d, "capture: cannot write the file given: %s", strerror(-rc));
		return rc;
	}
	d->capturing = true;
	UROCED_INFO(d, "capture: writing RoCE frames to the file given (fd %d)", fd);
	return 0;
}

static void capture_stop(struct uroced *d)
{
	if (!d->capturing)
		return;
	d->capturing = false;
	if (uroce_pcap_writer_close(&d->cap) != 0)
		d->cnt.capture_errors++;
	UROCED_INFO(d, "capture: stopped");
}

int uroced_net_init(struct uroced *d)
{
	const struct uroce_conf *c = &d->conf;
	struct uroce_ip_cfg ic;
	double rates[8] = {c->fault.rx_drop,	c->fault.rx_dup,    c->fault.rx_reorder,
			   c->fault.rx_corrupt, c->fault.tx_drop,   c->fault.tx_dup,
			   c->fault.tx_reorder, c->fault.tx_corrupt};
	uint8_t mc[UROCE_IP_MCAST_MAX][6];
	unsigned int i, nmc;
	int rc;

	d->loop = calloc(UROCED_LOOP_SLOTS, sizeof(*d->loop));
	if (!d->loop)
		return -ENOMEM;

	uroce_ip_cfg_init(&ic);
	memcpy(ic.mac, d->mac, 6);
	for (i = 0; i < c->host.n_ipv4 && i < UROCE_IP_MAX_V4; i++)
		memcpy(ic.v4[i], &c->host.ipv4[i], 4);
	ic.v4_count = (uint8_t)i;
	for (i = 0; i < c->host.n_ipv6 && i < UROCE_IP_MAX_V6; i++)
		memcpy(ic.v6[i], &c->host.ipv6[i], 16);
	ic.v6_count = (uint8_t)i;
	ic.vlan_id = (uint16_t)c->port.vlan;
	ic.tx = port_tx;
	ic.ctx = d;
	ic.resolved = uroced_neigh_resolved;
	d->ip = uroce_ip_create(&ic);
	if (!d->ip)
		return -errno;
	nmc = uroce_ip_mcast_macs(d->ip, mc, UROCE_IP_MCAST_MAX);
	for (i = 0; i < nmc && d->port_open; i++)
		uroce_eth_add_mcast(&d->port, mc[i]);

	/* Injectors start as pass-through, then take the configured rates. */
	memset(&d->rx_fault, 0, sizeof(d->rx_fault));
	memset(&d->tx_fault, 0, sizeof(d->tx_fault));
	{
		struct uroce_fault_cfg none = {.seed = 1};

		rc = uroce_fault_init(&d->rx_fault, &none);
		if (!rc)
			rc = uroce_fault_init(&d->tx_fault, &none);
		if (rc)
			return rc;
	}
	rc = fault_set(d, rates);
	if (rc)
		return rc;
	if (c->capture.file[0])
		return capture_start(d, c->capture.file);
	return 0;
}

void uroced_net_fini(struct uroced *d)
{
	capture_stop(d);
	uroce_fault_fini(&d->rx_fault);
	uroce_fault_fini(&d->tx_fault);
	if (d->ip)
		uroce_ip_destroy(d->ip);
	d->ip = NULL;
	free(d->loop);
	d->loop = NULL;
}

/* ---- the RNIC's ops ------------------------------------------------------------------ */

static enum uroce_rnic_link rnic_link(void *io_ctx, uint32_t *speed_mbps)
{
	struct uroced *d = io_ctx;

	if (!d->port_open) {
		*speed_mbps = 0;
		return UROCE_RNIC_LINK_DISABLED;
	}
	*speed_mbps = uroce_eth_link_speed(&d->port);
	return d->link_up ? UROCE_RNIC_LINK_UP : UROCE_RNIC_LINK_DOWN;
}

static int rnic_mcast_add(void *io_ctx, const uint8_t mac[6])
{
	struct uroced *d = io_ctx;

	return d->port_open ? uroce_eth_add_mcast(&d->port, mac) : 0;
}

static int rnic_mcast_del(void *io_ctx, const uint8_t mac[6])
{
	struct uroced *d = io_ctx;

	return d->port_open ? uroce_eth_del_mcast(&d->port, mac) : 0;
}

static uint64_t rnic_now_ns(void *io_ctx)
{
	struct uroced *d = io_ctx;

	return d->now_ns;
}

static void rnic_log(void *io_ctx, int level, const char *fmt, va_list ap)
{
	struct uroced *d = io_ctx;

	uroced_vlog(&d->log, UROCED_LOG_RNIC, level, fmt, ap);
}

static int rnic_admin(void *io_ctx, const struct uroce_ctrl_admin_req *req)
{
	struct uroced *d = io_ctx;

	switch (req->op) {
	case UROCE_CTRL_ADMIN_CAPTURE_STOP:
		capture_stop(d);
		return 0;
	case UROCE_CTRL_ADMIN_FAULT:
		return fault_set(d, req->rates);
	case UROCE_CTRL_ADMIN_LOG_LEVEL:
		if (req->value > UROCE_CONF_LOG_DEBUG)
			return -EINVAL;
		uroced_log_set_level(&d->log, (int)req->value);
		uroce_rnic_trace(d->rnic, req->value == UROCE_CONF_LOG_DEBUG);
		return 0;
	default:
		return -EINVAL;
	}
}

static int rnic_capture_start(void *io_ctx, int fd)
{
	struct uroced *d = io_ctx;

	return capture_start_fd(d, fd);
}

static void rnic_stats(void *io_ctx,
		       void (*put)(void *out, const char *prefix, const char *name, uint64_t v),
		       void *out)
{
	struct uroced *d = io_ctx;

	if (d->port_open) {
		struct uroce_eth_stats es;

		if (uroce_eth_stats_get(&d->port, &es) == 0) {
#define PUT_ETH(n) put(out, "port.", #n, es.n)
			PUT_ETH(ipackets);
			PUT_ETH(opackets);
			PUT_ETH(ibytes);
			PUT_ETH(obytes);
			PUT_ETH(imissed);
			PUT_ETH(ierrors);
			PUT_ETH(oerrors);
			PUT_ETH(rx_nombuf);
			PUT_ETH(rx_linearized);
			PUT_ETH(rx_socket_drops);
			PUT_ETH(tx_chained);
			PUT_ETH(tx_lent);
			PUT_ETH(tx_dropped);
			PUT_ETH(tx_nombuf);
			PUT_ETH(tx_oversize);
			PUT_ETH(tx_busy);
#undef PUT_ETH
		}
		put(out, "port.", "link_up", d->link_up);
		put(out, "port.", "mtu", d->port.mtu);
	}
#define PUT_FAULT(dir, f)                                                        \
	do {                                                                     \
		put(out, "fault." #dir ".", "dropped", (f).stats.dropped);       \
		put(out, "fault." #dir ".", "duplicated", (f).stats.duplicated); \
		put(out, "fault." #dir ".", "reordered", (f).stats.reordered);   \
		put(out, "fault." #dir ".", "corrupted", (f).stats.corrupted);   \
	} while (0)
	PUT_FAULT(rx, d->rx_fault);
	PUT_FAULT(tx, d->tx_fault);
#undef PUT_FAULT
#define PUT_UROCED(n) put(out, "daemon.", #n, d->cnt.n);
	UROCED_COUNTERS(PUT_UROCED)
#undef PUT_UROCED
}

const struct uroce_rnic_ops uroced_rnic_ops = {
	.reply = uroced_conn_send,
	.tx = rnic_tx,
	.tx_buf = rnic_tx_buf,
	.tx_commit = rnic_tx_commit,
	.tx_zc = rnic_tx_zc,
	.link = rnic_link,
	.mcast_add = rnic_mcast_add,
	.mcast_del = rnic_mcast_del,
	.now_ns = rnic_now_ns,
	.log = rnic_log,
	.admin = rnic_admin,
	.capture_start = rnic_capture_start,
	.stats = rnic_stats,
	.memlock_limit = uroced_memlock_limit,
};
