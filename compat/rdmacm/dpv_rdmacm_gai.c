/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * rdma_getaddrinfo and rdma_freeaddrinfo of the drop-in librdmacm.so.1, as
 * rdma-core 44's librdmacm/addrinfo.c behaves without ibacm: the node and
 * service go through getaddrinfo(3) with hints converted (RAI_PASSIVE ->
 * AI_PASSIVE, RAI_NUMERICHOST -> AI_NUMERICHOST, the QP type gives the
 * socket type, the port space the protocol); the first answer becomes one
 * rdma_addrinfo whose QP type and port space are the hints' or follow from
 * the socket type/protocol (SOCK_STREAM: RC, IPPROTO_TCP: RDMA_PS_TCP;
 * SOCK_DGRAM: UD, IPPROTO_UDP: RDMA_PS_UDP); the address is ai_src_addr
 * when RAI_PASSIVE, else ai_dst_addr; a source address in the hints is
 * copied when the answer has none; ai_flags is RAI_PASSIVE or 0. Every
 * failure is -1 with errno: a failure of getaddrinfo(3) leaves its EAI_*
 * code (negative) in errno, as rdma-core's ERR(ret) does; no node, no
 * service and no hints: EINVAL. AF_IB and ibacm path records are not
 * supported: ai_route and ai_connect stay NULL.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/ib.h>

#include "dpv_rdmacm.h"

static const struct rdma_addrinfo g_nohints;

static void to_ai_hints(const struct rdma_addrinfo *rai, struct addrinfo *ai)
{
	memset(ai, 0, sizeof(*ai));
	if (rai->ai_flags & RAI_PASSIVE)
		ai->ai_flags |= AI_PASSIVE;
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
	default:
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
	default:
		break;
	}
}

static int copy_addr(struct sockaddr **dst, socklen_t *dst_len, const struct sockaddr *src, socklen_t len)
{
	*dst = malloc(len);
	if (*dst == NULL)
		return dpv_rdmacm_err(ENOMEM);
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

static char *dup_name(const char *s, int *ret)
{
	char *d = s != NULL ? strdup(s) : NULL;

	if (s != NULL && d == NULL)
		*ret = dpv_rdmacm_err(ENOMEM);
	return d;
}

/* The first answer of getaddrinfo(3) as rai (ucma_convert_to_rai). */
static int from_ai(struct rdma_addrinfo *rai, const struct rdma_addrinfo *hints, const struct addrinfo *ai)
{
	int ret = 0;

	rai->ai_flags = (ai->ai_flags & AI_PASSIVE) ? RAI_PASSIVE : 0;
	rai->ai_family = ai->ai_family;
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
	if (ai->ai_flags & AI_PASSIVE) {
		ret = copy_addr(&rai->ai_src_addr, &rai->ai_src_len, ai->ai_addr, ai->ai_addrlen);
		if (ret == 0)
			rai->ai_src_canonname = dup_name(ai->ai_canonname, &ret);
	} else {
		ret = copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, ai->ai_addr, ai->ai_addrlen);
		if (ret == 0)
			rai->ai_dst_canonname = dup_name(ai->ai_canonname, &ret);
	}
	return ret;
}

static int lookup(const char *node, const char *service, const struct rdma_addrinfo *hints,
		  struct rdma_addrinfo *rai)
{
	struct addrinfo aih, *ai = NULL;
	int ret;

	if (hints != &g_nohints) {
		to_ai_hints(hints, &aih);
		ret = getaddrinfo(node, service, &aih, &ai);
	} else {
		ret = getaddrinfo(node, service, NULL, &ai);
	}
	if (ret != 0)
		return dpv_rdmacm_err(ret); /* errno = the EAI_* code, as rdma-core's ERR(ret) */
	ret = from_ai(rai, hints, ai);
	freeaddrinfo(ai);
	return ret;
}

int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	struct rdma_addrinfo *rai;
	int ret = 0;

	if (res == NULL || (node == NULL && service == NULL && hints == NULL))
		return dpv_rdmacm_err(EINVAL);
	if (hints == NULL)
		hints = &g_nohints;
	if (hints->ai_family == AF_IB)
		return dpv_rdmacm_err(EAFNOSUPPORT); /* dpverbs: no AF_IB addressing */
	rai = calloc(1, sizeof(*rai));
	if (rai == NULL)
		return dpv_rdmacm_err(ENOMEM);
	if (node != NULL || service != NULL) {
		ret = lookup(node, service, hints, rai);
	} else {
		rai->ai_flags = hints->ai_flags;
		rai->ai_family = hints->ai_family;
		rai->ai_qp_type = hints->ai_qp_type;
		rai->ai_port_space = hints->ai_port_space;
		if (hints->ai_dst_len)
			ret = copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, hints->ai_dst_addr, hints->ai_dst_len);
	}
	if (ret == 0 && rai->ai_src_len == 0 && hints->ai_src_len)
		ret = copy_addr(&rai->ai_src_addr, &rai->ai_src_len, hints->ai_src_addr, hints->ai_src_len);
	if (ret != 0) {
		rdma_freeaddrinfo(rai);
		return -1; /* errno set */
	}
	*res = rai;
	return 0;
}

/* Frees a list of rdma_getaddrinfo, every field that holds memory of its own. */
void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res != NULL) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_connect);
		free(res->ai_route);
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res);
		res = next;
	}
}
