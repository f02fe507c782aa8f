/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A remote peer that floods a listener with connection requests: COUNT distinct REQs
 * (each its own rdma_cm id: its own communication ID, starting PSN and source port) to
 * DST_IP:PORT, sent as RoCEv2 frames on a raw socket of IFNAME. It is uroce's own CM and
 * transport (lib/cm, lib/transport) on a pretend host at SRC_IP, so the REQs are what
 * rdma_connect sends, not hand-made bytes. It sends each once (no timers run) and never
 * answers; what comes back (REJ, REP) is counted, by attribute, for the caller.
 *
 *   req_flood IFNAME SRC_MAC SRC_IP DST_MAC DST_IP PORT COUNT
 * Prints "sent N" and "received REJ r REP p other o"; exit 0, or 1 on a setup error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "uroce_cm.h"
#include "uroce_transport.h"
#include "uroce_wire.h"

static int sock = -1;
static uint8_t our_ip[4];
static unsigned long long sent, rx_rej, rx_rep, rx_other;

static int raw_tx(void *ctx, const uint8_t *frame, uint32_t len)
{
	(void)ctx;
	/* A full socket buffer: wait for room rather than lose the REQ. */
	for (;;) {
		if (send(sock, frame, len, 0) == (ssize_t)len) {
			sent++;
			return 0;
		}
		if (errno != ENOBUFS && errno != EAGAIN)
			return -EIO;
		poll(NULL, 0, 1);
	}
}

static void cm_event(void *ctx, const struct uroce_cm_event *ev)
{
	(void)ctx;
	(void)ev;
}

static struct uroce_tp_dev *dev;

static int cm_tx(void *ctx, const uint8_t *mad, const struct uroce_cm_path *to)
{
	struct ibv_ah_attr ah = {.is_global = 1, .port_num = 1};

	(void)ctx;
	ah.grh.dgid = to->dgid;
	ah.grh.sgid_index = to->sgid_index;
	ah.grh.hop_limit = 64;
	return uroce_tp_gsi_send(dev, &ah, to->dmac, UROCE_TP_GSI_QPN, UROCE_TP_GSI_QKEY, mad,
				 UROCE_CM_MAD_LEN);
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	return sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1], &mac[2], &mac[3],
		      &mac[4], &mac[5]) == 6
		       ? 0
		       : -1;
}

/* Counts what the daemon answered: GSI MADs addressed to us. */
static void drain(void)
{
	uint8_t f[2048];
	ssize_t n;

	while ((n = recv(sock, f, sizeof(f), MSG_DONTWAIT)) > 0) {
		struct uroce_wire_pkt p;
		uint16_t attr;

		if (uroce_wire_parse(f, (uint32_t)n, &p) != UROCE_WIRE_OK ||
		    p.hdr.bth.dqpn != UROCE_TP_GSI_QPN || p.payload_len < 24 ||
		    p.hdr.ip_version != 4 || memcmp(p.hdr.ip_dst + 12, our_ip, 4))
			continue; /* the link's other traffic */
		attr = (uint16_t)(p.payload[16] << 8 | p.payload[17]);
		if (attr == UROCE_CM_ATTR_REJ)
			rx_rej++;
		else if (attr == UROCE_CM_ATTR_REP)
			rx_rep++;
		else
			rx_other++;
	}
}

int main(int argc, char **argv)
{
	struct uroce_tp_dev_cfg tc;
	struct uroce_cm_cfg cc;
	struct sockaddr_ll ll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL)};
	struct uroce_cm *cm = NULL;
	struct uroce_cm_path path;
	struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET};
	uint8_t dmac[6];
	unsigned long count;
	int sndbuf = 4 << 20;

	if (argc != 8) {
		fprintf(stderr, "usage: %s IFNAME SRC_MAC SRC_IP DST_MAC DST_IP PORT COUNT\n",
			argv[0]);
		return 1;
	}
	uroce_tp_dev_cfg_init(&tc);
	if (parse_mac(argv[2], tc.mac) || parse_mac(argv[4], dmac) ||
	    inet_pton(AF_INET, argv[3], &src.sin_addr) != 1 ||
	    inet_pton(AF_INET, argv[5], &dst.sin_addr) != 1) {
		fprintf(stderr, "req_flood: bad MAC or address\n");
		return 1;
	}
	dst.sin_port = htons((uint16_t)atoi(argv[6]));
	memcpy(our_ip, &src.sin_addr, 4);
	count = strtoul(argv[7], NULL, 10);
	sock = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	ll.sll_ifindex = (int)if_nametoindex(argv[1]);
	if (sock < 0 || !ll.sll_ifindex || bind(sock, (struct sockaddr *)&ll, sizeof(ll))) {
		perror("req_flood: raw socket");
		return 1;
	}
	setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	setsockopt(sock, SOL_SOCKET, SO_RCVBUF, &sndbuf, sizeof(sndbuf));
	uroce_gid_from_ipv4(tc.gid[0].raw, (const uint8_t *)&src.sin_addr);
	tc.gid_count = 1;
	tc.tx = raw_tx;
	dev = uroce_tp_dev_create(&tc);
	uroce_cm_cfg_init(&cc);
	cc.seed = (uint64_t)time(NULL);
	cc.tx = cm_tx;
	cc.event = cm_event;
	if (!dev) {
		fprintf(stderr, "req_flood: no memory\n");
		return 1;
	}
	memset(&path, 0, sizeof(path));
	path.sgid = tc.gid[0];
	uroce_gid_from_ipv4(path.dgid.raw, (const uint8_t *)&dst.sin_addr);
	memcpy(path.dmac, dmac, 6);
	path.hop_limit = 64;
	path.pkey = 0xffff;
	for (unsigned long i = 0; i < count; i++) {
		/* A CM of its own for each 1000 ids (a host of its own, by its CA GUID): a CM
		 * looks through its ids for each new one, and 100,000 in one would take
		 * minutes. Freed without a word on the wire. */
		if (i % 1000 == 0) {
			uroce_cm_destroy(cm);
			cc.node_guid = htobe64(0x020000fffe000000ull | i / 1000);
			cm = uroce_cm_create(&cc);
			if (!cm) {
				fprintf(stderr, "req_flood: no memory\n");
				return 1;
			}
		}
		struct uroce_cm_conn_param p = {.responder_resources = 1, .initiator_depth = 1,
						.retry_count = 7, .rnr_retry_count = 7,
						.qp_num = (uint32_t)(0x100 + i) & 0xffffff};
		struct uroce_cm_id *id = uroce_cm_id_create(cm, RDMA_PS_TCP, IBV_QPT_RC, NULL);

		/* One source port for all (as many ids may share it with REUSEADDR): the
		 * REQs differ by their communication IDs, which is what makes a connection. */
		src.sin_port = htons(4791);
		if (!id ||
		    uroce_cm_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, 1) != 0 ||
		    uroce_cm_set_route(id, (struct sockaddr *)&src, (struct sockaddr *)&dst,
				       &path) != 0 ||
		    uroce_cm_connect(id, &p, 0) != 0) {
			fprintf(stderr, "req_flood: REQ %lu could not be made\n", i);
			return 1;
		}
		if ((i & 255) == 0)
			drain();
	}
	for (int k = 0; k < 20; k++) { /* the answers to the last ones */
		poll(NULL, 0, 100);
		drain();
	}
	printf("sent %llu\nreceived REJ %llu REP %llu other %llu\n", sent, rx_rej, rx_rep,
	       rx_other);
	/* The ids are freed without the REJs rdma_destroy_id would send. */
	uroce_cm_destroy(cm);
	uroce_tp_dev_destroy(dev);
	return 0;
}
