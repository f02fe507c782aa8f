/* SPDX-License-Identifier: BSD-3-Clause */
/* rdma_getaddrinfo / rdma_freeaddrinfo, as rdma-core's addrinfo.c: getaddrinfo(3) with the
 * hints translated (RAI_PASSIVE, RAI_NUMERICHOST, the QP type as a socket type, the port
 * space as a protocol), the first answer as the result; its failures are getaddrinfo's
 * (EAI_*) codes, returned as they are. No devices are needed (nor asked for): there is
 * no ACM or SA to resolve routes with, so ai_route stays empty. AF_IB is not converted
 * (uroce is RoCE only): such hints give the IPv6 address. */
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm.h"

static void ucma_hints_to_ai(struct addrinfo *ai, const struct rdma_addrinfo *rai)
{
	memset(ai, 0, sizeof(*ai));
	if (rai->ai_flags & RAI_PASSIVE)
		ai->ai_flags = AI_PASSIVE;
	if (rai->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	if (rai->ai_family != AF_IB)
		ai->ai_family = rai->ai_family;
	switch (rai->ai_qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		ai->ai_socktype = SOCK_STREAM;
		break;
	case IBV_QPT_UD:
		ai->ai_socktype = SOCK_DGRAM;
		break;
	}
	switch (rai->ai_port_space) {
	case RDMA_PS_TCP:
		ai->ai_protocol = IPPROTO_TCP;
		break;
	case RDMA_PS_IPOIB:
	case RDMA_PS_UDP:
		ai->ai_protocol = IPPROTO_UDP;
		break;
	case RDMA_PS_IB:
		if (ai->ai_socktype == SOCK_STREAM)
			ai->ai_protocol = IPPROTO_TCP;
		else if (ai->ai_socktype == SOCK_DGRAM)
			ai->ai_protocol = IPPROTO_UDP;
		break;
	}
}

static int ucma_copy_addr(struct sockaddr **dst, socklen_t *dst_len, const struct sockaddr *src,
			  socklen_t src_len)
{
	*dst = malloc(src_len);
	if (!*dst)
		return ucma_fail(ENOMEM);
	memcpy(*dst, src, src_len);
	*dst_len = src_len;
	return 0;
}

static int ucma_ai_to_rai(struct rdma_addrinfo *rai, const struct rdma_addrinfo *hints,
			  const struct addrinfo *ai)
{
	if (hints->ai_qp_type)
		rai->ai_qp_type = hints->ai_qp_type;
	else if (ai->ai_socktype == SOCK_STREAM)
		rai->ai_qp_type = IBV_QPT_RC;
	else if (ai->ai_socktype == SOCK_DGRAM)
		rai->ai_qp_type = IBV_QPT_UD;
	if (hints->ai_port_space)
		rai->ai_port_space = hints->ai_port_space;
	else if (ai->ai_protocol == IPPROTO_TCP)
		rai->ai_port_space = RDMA_PS_TCP;
	else if (ai->ai_protocol == IPPROTO_UDP)
		rai->ai_port_space = RDMA_PS_UDP;
	rai->ai_family = ai->ai_family;
	if (ai->ai_flags & AI_PASSIVE) {
		rai->ai_flags = RAI_PASSIVE;
		if (ai->ai_canonname)
			rai->ai_src_canonname = strdup(ai->ai_canonname);
		return ucma_copy_addr(&rai->ai_src_addr, &rai->ai_src_len, ai->ai_addr,
				      ai->ai_addrlen);
	}
	if (ai->ai_canonname)
		rai->ai_dst_canonname = strdup(ai->ai_canonname);
	return ucma_copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, ai->ai_addr, ai->ai_addrlen);
}

UCMA_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				 const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo nohints;
	struct rdma_addrinfo *rai;
	int ret = 0;

	if (!service && !node && !hints)
		return ucma_fail(EINVAL);
	rai = calloc(1, sizeof(*rai));
	if (!rai)
		return ucma_fail(ENOMEM);
	if (node || service) {
		struct addrinfo ai_hints, *ai;

		if (hints)
			ucma_hints_to_ai(&ai_hints, hints);
		ret = getaddrinfo(node, service, hints ? &ai_hints : NULL, &ai);
		if (ret == 0) {
			ret = ucma_ai_to_rai(rai, hints ? hints : &nohints, ai);
			freeaddrinfo(ai);
		}
	} else {
		rai->ai_flags = hints->ai_flags;
		rai->ai_family = hints->ai_family;
		rai->ai_qp_type = hints->ai_qp_type;
		rai->ai_port_space = hints->ai_port_space;
		if (hints->ai_dst_len)
			ret = ucma_copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len,
					     hints->ai_dst_addr, hints->ai_dst_len);
	}
	if (!ret && !rai->ai_src_len && hints && hints->ai_src_len)
		ret = ucma_copy_addr(&rai->ai_src_addr, &rai->ai_src_len, hints->ai_src_addr,
				     hints->ai_src_len);
	if (ret) {
		rdma_freeaddrinfo(rai);
		return ret;
	}
	*res = rai;
	return 0;
}

UCMA_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *rai = res;

		res = res->ai_next;
		free(rai->ai_connect);
		free(rai->ai_route);
		free(rai->ai_src_canonname);
		free(rai->ai_dst_canonname);
		free(rai->ai_src_addr);
		free(rai->ai_dst_addr);
		free(rai);
	}
}
