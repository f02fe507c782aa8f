/* SPDX-License-Identifier: BSD-3-Clause */
/* ARP for IPv4 over Ethernet (RFC 826): answer requests for our addresses, learn the
 * senders as RFC 826's "merge" and Linux's arp_process() do, and send our requests. */
#include "ip_internal.h"

#define ARP_HTYPE_ETHER 1
#define ARP_OP_REQUEST 1
#define ARP_OP_REPLY 2

static const uint8_t mac_broadcast[ETH_ALEN] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static bool ip4_is_zero(const uint8_t *a)
{
	return (a[0] | a[1] | a[2] | a[3]) == 0;
}

/* Writes an Ethernet/IPv4 ARP message (RFC 826 "Packet format") after the Ethernet
 * header at s->buf + off and sends it. */
static void arp_send(struct uroce_ip_stack *s, uint32_t off, uint16_t op, const uint8_t *spa,
		     const uint8_t *tha, const uint8_t *tpa)
{
	uint8_t *a = s->buf + off;

	wire_put16(a, ARP_HTYPE_ETHER);
	wire_put16(a + 2, UROCE_ETHERTYPE_IPV4);
	a[4] = ETH_ALEN;
	a[5] = 4;
	wire_put16(a + 6, op);
	memcpy(a + 8, s->cfg.mac, ETH_ALEN);
	memcpy(a + 14, spa, 4);
	memcpy(a + 18, tha, ETH_ALEN);
	memcpy(a + 24, tpa, 4);
	ip_tx(s, off + ARP_LEN);
}

void arp_request(struct uroce_ip_stack *s, const uint8_t *target, const uint8_t *dst_mac)
{
	static const uint8_t zero[ETH_ALEN];
	uint32_t off = eth_put(s, dst_mac ? dst_mac : mac_broadcast, ETHERTYPE_ARP);

	/* The target hardware address is zero in requests, unicast probes included, as
	 * Linux's arp_solicit() leaves it: RFC 826 says it does not matter. */
	arp_send(s, off, ARP_OP_REQUEST, src_v4_for(s, target), zero, target);
	s->cnt.arp_requests++;
}

enum uroce_ip_verdict arp_input(struct uroce_ip_stack *s, const struct ip_rx *rx)
{
	const uint8_t *a = rx->l3;
	const uint8_t *sha = a + 8, *spa = a + 14, *tpa = a + 24;
	struct ip_neigh *n;
	uint8_t gid[16];
	uint16_t op;
	bool for_us, learned = false;

	if (rx->l3_len < ARP_LEN)
		return IP_DROP(s, truncated);
	op = wire_be16(a + 6);
	if (wire_be16(a) != ARP_HTYPE_ETHER || wire_be16(a + 2) != UROCE_ETHERTYPE_IPV4 ||
	    a[4] != ETH_ALEN || a[5] != 4 || (op != ARP_OP_REQUEST && op != ARP_OP_REPLY))
		return IP_DROP(s, bad_arp);
	/* Nobody's hardware or protocol address: group or zero MACs, loopback, multicast,
	 * broadcast. A zero sender IP is an RFC 5227 probe; a zero target IP is in the reply
	 * to such a probe (neither is about us). */
	if (mac_is_group(sha) || mac_is_zero(sha) || (!ip4_is_zero(spa) && !ip4_is_unicast(spa)) ||
	    (!ip4_is_zero(tpa) && !ip4_is_unicast(tpa)))
		return IP_DROP(s, bad_arp);
	if (mac_eq(sha, s->cfg.mac))
		return IP_DROP(s, bad_src);
	for_us = own_v4(s, tpa) >= 0;

	if (own_v4(s, spa) >= 0) {
		/* Someone else says it has our address (RFC 5227 2.4): nothing to learn, and
		 * Linux does not answer a request whose sender is a local address either. */
		s->cnt.addr_conflict++;
		return UROCE_IP_CONSUMED;
	}
	if (!ip4_is_zero(spa)) {
		/* RFC 826 merge: refresh the sender if we know it; add it if the message is a
		 * request for us (we are about to talk to it). Replies add nothing: an entry
		 * exists when we asked. Gratuitous ARP (sender = target, not us) therefore only
		 * updates. A unicast reply to us confirms reachability; everything else only
		 * says "this MAC had this address" (STALE), as Linux's arp_process() sets. */
		uroce_gid_from_ipv4(gid, spa);
		n = neigh_lookup(s, gid);
		if (n != NULL) {
			bool confirm =
				op == ARP_OP_REPLY && for_us && mac_eq(rx->eth_dst, s->cfg.mac);

			neigh_update(s, n, sha, confirm ? NEIGH_REACHABLE : NEIGH_STALE, rx->now);
			learned = true;
		} else if (op == ARP_OP_REQUEST && for_us) {
			learned = neigh_create(s, gid, sha) != NULL;
		}
	}
	if (op == ARP_OP_REQUEST && for_us) {
		/* The reply goes to the sender hardware address (Linux: arp_send_dst(...,
		 * sha, ...)), which is also the target hardware address. */
		uint32_t off = eth_put(s, sha, ETHERTYPE_ARP);

		arp_send(s, off, ARP_OP_REPLY, tpa, sha, spa);
		s->cnt.arp_replies++;
		return UROCE_IP_CONSUMED;
	}
	return learned ? UROCE_IP_CONSUMED : IP_DROP(s, not_for_us);
}
