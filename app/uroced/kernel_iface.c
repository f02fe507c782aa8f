/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The kernel interface (host.kernel_iface): a tap device that gives the host's own IP
 * stack this endpoint's addresses, as an RNIC's netdev does. Applications that connect
 * over TCP and then over RDMA to the same address (qperf, libfabric's verbs provider,
 * perftest without -R, MPI launchers) need both to reach the same peer; with the daemon
 * owning the port, only the daemon sees the wire, so it passes the kernel what it does
 * not handle itself and sends what the kernel sends (net.c: uroced_net_kernel_rx).
 *
 * This file is the OS plumbing only: create the tap with the endpoint's MAC (so that
 * frames for us are the kernel's too) and MTU, give it the IPv4 addresses with
 * host.kernel_prefix_len, bring it up, and keep the port's own kernel interface (af_packet,
 * af_xdp on a veth or NIC) from answering for those addresses as well.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "uroced.h"

/* Writes @p value to /proc/sys/net/ipv4/conf/<ifname>/<key>. 0 or -errno. */
static int sysctl_ipv4_conf(const char *ifname, const char *key, const char *value)
{
	char path[128];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/%s", ifname, key);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, value, strlen(value)) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* Reads /proc/sys/net/ipv4/conf/<ifname>/<key> into @p value (NUL-terminated, without
 * its newline). 0 or -errno. */
static int sysctl_ipv4_conf_read(const char *ifname, const char *key, char *value, size_t size)
{
	char path[128];
	ssize_t n;
	int fd, rc = 0;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/%s", ifname, key);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, value, size - 1);
	if (n < 0) {
		rc = -errno;
	} else {
		value[n] = '\0';
		value[strcspn(value, "\n")] = '\0';
	}
	close(fd);
	return rc;
}

static int sysctl_ipv6_off(const char *ifname)
{
	char path[128];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", ifname);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno; /* no IPv6 in this kernel: nothing to turn off */
	if (write(fd, "1", 1) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* RTM_NEWADDR for @p addr/@p prefix_len on @p ifindex. 0 or -errno. */
static int add_ipv4(int ifindex, struct in_addr addr, uint32_t prefix_len)
{
	struct {
		struct nlmsghdr nh;
		struct ifaddrmsg ifa;
		char attrs[64];
	} req;
	struct {
		struct nlmsghdr nh;
		struct nlmsgerr err;
	} ack;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	struct rtattr *rta;
	int sock, rc;
	ssize_t n;

	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(req.ifa));
	req.nh.nlmsg_type = RTM_NEWADDR;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE;
	req.ifa.ifa_family = AF_INET;
	req.ifa.ifa_prefixlen = (unsigned char)prefix_len;
	req.ifa.ifa_index = (unsigned int)ifindex;
	req.ifa.ifa_scope = RT_SCOPE_UNIVERSE;
	/* IFA_LOCAL is the address; IFA_ADDRESS the same on a broadcast link. */
	for (unsigned short type = IFA_ADDRESS; type <= IFA_LOCAL; type++) {
		rta = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
		rta->rta_type = type;
		rta->rta_len = RTA_LENGTH(sizeof(addr));
		memcpy(RTA_DATA(rta), &addr, sizeof(addr));
		req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);
	}
	sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (sock < 0)
		return -errno;
	if (sendto(sock, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) <
	    0) {
		rc = -errno;
		goto out;
	}
	n = recv(sock, &ack, sizeof(ack), 0);
	if (n < 0)
		rc = -errno;
	else if ((size_t)n < sizeof(ack) || ack.nh.nlmsg_type != NLMSG_ERROR)
		rc = -EPROTO;
	else
		rc = ack.err.error; /* 0 or -errno, as netlink reports it */
out:
	close(sock);
	return rc;
}

int uroced_kernel_open(struct uroced *d)
{
	struct uroced_kernel *k = &d->kernel;
	const struct uroce_conf *cf = &d->conf;
	struct ifreq ifr;
	char port_if[IF_NAMESIZE] = "";
	int ctl = -1, rc, ifindex;

	if (cf->host.kernel_iface[0] == '\0')
		return 0;
	if (cf->port.vlan) {
		UROCED_ERR(d,
			   "host.kernel_iface with port.vlan: not supported (the kernel's frames "
			   "would leave untagged)");
		return -EINVAL;
	}
	k->tap_fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (k->tap_fd < 0) {
		rc = -errno;
		UROCED_ERR(d, "host.kernel_iface: /dev/net/tun: %s", strerror(-rc));
		return rc;
	}
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", cf->host.kernel_iface);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	if (ioctl(k->tap_fd, TUNSETIFF, &ifr) != 0) {
		rc = -errno;
		UROCED_ERR(d, "host.kernel_iface %s: cannot create the tap: %s",
			   cf->host.kernel_iface, strerror(-rc));
		goto fail;
	}
	ctl = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (ctl < 0) {
		rc = -errno;
		goto fail;
	}
	/* Our MAC: frames for this endpoint are for the kernel's addresses too. */
	ifr.ifr_hwaddr.sa_family = 1; /* ARPHRD_ETHER */
	memcpy(ifr.ifr_hwaddr.sa_data, d->mac, 6);
	if (ioctl(ctl, SIOCSIFHWADDR, &ifr) != 0)
		goto fail_errno;
	ifr.ifr_mtu = (int)cf->port.mtu;
	if (ioctl(ctl, SIOCSIFMTU, &ifr) != 0)
		goto fail_errno;
	/* IPv4 only: the daemon's IPv6 addresses stay the daemon's (no ND on the kernel's
	 * behalf), and a kernel with IPv6 on would send router and multicast listener
	 * solicitations out of the port. */
	sysctl_ipv6_off(cf->host.kernel_iface);
	ifindex = (int)if_nametoindex(cf->host.kernel_iface);
	for (uint32_t i = 0; i < cf->host.n_ipv4; i++) {
		rc = add_ipv4(ifindex, cf->host.ipv4[i], cf->host.kernel_prefix_len);
		if (rc) {
			UROCED_ERR(d, "host.kernel_iface %s: cannot add %s/%u: %s",
				   cf->host.kernel_iface, inet_ntoa(cf->host.ipv4[i]),
				   cf->host.kernel_prefix_len, strerror(-rc));
			goto fail;
		}
	}
	if (ioctl(ctl, SIOCGIFFLAGS, &ifr) != 0)
		goto fail_errno;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(ctl, SIOCSIFFLAGS, &ifr) != 0)
		goto fail_errno;
	close(ctl);
	/* The port's own kernel interface receives every frame the daemon does (af_packet
	 * takes copies); Linux accepts a datagram for a local address on any interface, so
	 * it would answer ARP there with that interface's MAC and take TCP and RoCE a second
	 * time (answering RoCE with port unreachable). Strict reverse-path filtering drops
	 * what arrives there from the subnet routed through the tap; arp_ignore 8 answers
	 * no ARP there. */
	if (d->port.if_index && if_indextoname(d->port.if_index, port_if)) {
		if (sysctl_ipv4_conf_read(port_if, "rp_filter", k->port_saved.rp_filter,
					  sizeof(k->port_saved.rp_filter)) == 0 &&
		    sysctl_ipv4_conf_read(port_if, "arp_ignore", k->port_saved.arp_ignore,
					  sizeof(k->port_saved.arp_ignore)) == 0)
			snprintf(k->port_saved.ifname, sizeof(k->port_saved.ifname), "%s", port_if);
		if (sysctl_ipv4_conf(port_if, "rp_filter", "1") ||
		    sysctl_ipv4_conf(port_if, "arp_ignore", "8"))
			UROCED_WARN(d,
				    "host.kernel_iface: cannot keep %s's kernel from answering "
				    "(net.ipv4.conf.%s.rp_filter=1, arp_ignore=8): %s",
				    port_if, port_if, strerror(errno));
	}
	UROCED_INFO(d, "kernel interface %s: the host's TCP/IP on this endpoint's addresses%s%s",
		    cf->host.kernel_iface, port_if[0] ? "; kernel kept off " : "", port_if);
	return 0;
fail_errno:
	rc = -errno;
	UROCED_ERR(d, "host.kernel_iface %s: %s", cf->host.kernel_iface, strerror(-rc));
fail:
	if (ctl >= 0)
		close(ctl);
	close(k->tap_fd);
	k->tap_fd = -1;
	return rc;
}

void uroced_kernel_close(struct uroced *d)
{
	struct uroced_kernel *k = &d->kernel;
	/* Closing the last descriptor of a non-persistent tap removes the interface. */
	if (k->tap_fd >= 0)
		close(k->tap_fd);
	k->tap_fd = -1;
	/* The interface may be gone (a veth deleted under us): nothing to put back then. */
	if (k->port_saved.ifname[0]) {
		sysctl_ipv4_conf(k->port_saved.ifname, "rp_filter", k->port_saved.rp_filter);
		sysctl_ipv4_conf(k->port_saved.ifname, "arp_ignore", k->port_saved.arp_ignore);
		k->port_saved.ifname[0] = '\0';
	}
}

int uroced_kernel_fd(const struct uroced *d)
{
	return d->kernel.tap_fd;
}

bool uroced_kernel_restores_at_exit(const struct uroced *d)
{
	return d->kernel.port_saved.ifname[0] != '\0';
}
