/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internals shared by dpv_nl.c (sockets, requests, links, addresses) and
 * dpv_nl_neigh.c (neighbours, routes, notifications). The prefix dnl_
 * keeps them apart from libnl's nl_* (libibverbs may be loaded beside us).
 */
#ifndef DPV_NL_PRIV_H
#define DPV_NL_PRIV_H

#include <stddef.h>
#include <string.h>
#include <sys/types.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "dpv_nl.h"

#define DNL_RX_BUF 65536         /* one datagram: larger than any rtnetlink message or dump batch */
#define DNL_REQ_MAX 256          /* the largest request built here is about 80 bytes */

/* A request being built: the message header, its family header, attributes. */
struct dnl_req {
	union {
		struct nlmsghdr nh;
		unsigned char b[DNL_REQ_MAX];
	};
};

/* Called for each message (but NLMSG_*) of an answer; a negative errno stops the request. */
typedef int (*dnl_msg_fn)(const struct nlmsghdr *nh, void *arg);

/* addr is IPv4-mapped (::ffff:a.b.c.d). */
static inline bool dnl_is_v4(const uint8_t a[16])
{
	static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return memcmp(a, v4_prefix, sizeof(v4_prefix)) == 0;
}

/* A request of type with NLM_F_REQUEST | flags and the family header hdr[0, hlen). */
void dnl_req_init(struct dnl_req *r, uint16_t type, uint16_t flags, const void *hdr, size_t hlen);
/* Appends an attribute. */
void dnl_req_attr(struct dnl_req *r, uint16_t type, const void *data, size_t len);
/* Appends an address attribute: 4 bytes for an IPv4-mapped addr, else 16. */
void dnl_req_addr(struct dnl_req *r, uint16_t type, const uint8_t addr[16]);

/* The next whole message of the datagram buf[0, len) at *off (advanced), or NULL. */
const struct nlmsghdr *dnl_msg_next(const char *buf, size_t len, size_t *off);
/* The family header of nh (hlen bytes) with its attributes indexed by type
 * in tb[0, max] (NULL: absent), or NULL if nh is too short. */
const void *dnl_msg_parse(const struct nlmsghdr *nh, size_t hlen, const struct rtattr **tb,
			  unsigned int max);
/* A u32 attribute, or dflt when absent or short. */
uint32_t dnl_attr_u32(const struct rtattr *a, uint32_t dflt);
/* An address attribute of family (AF_INET: 4 bytes, AF_INET6: 16) into out,
 * IPv4-mapped; false when absent or of another size. */
bool dnl_attr_addr(const struct rtattr *a, int family, uint8_t out[16]);
/* An attribute's payload and its length. */
const void *dnl_attr_data(const struct rtattr *a);
size_t dnl_attr_len(const struct rtattr *a);

/* An RTM_NEWLINK / RTM_DELLINK of family AF_UNSPEC into l; false for others. */
bool dnl_link_parse(const struct nlmsghdr *nh, struct dpv_nl_link *l);
/* An RTM_NEWADDR / RTM_DELADDR of IPv4 or IPv6 into a and *ifindex; false for others. */
bool dnl_addr_parse(const struct nlmsghdr *nh, struct dpv_nl_addr *a, int *ifindex);

/* A socket for requests (receive timeout set), nonblock or not; *pid its port id. */
int dnl_sock(bool nonblock, uint32_t *pid);
/* Sends r on fd (MSG_DONTWAIT) as it is: 0 or a negative errno. */
int dnl_send(int fd, const struct dnl_req *r);
/*
 * Sends r on fd (of port id pid) with a fresh sequence number and reads its
 * answer up to the ack or NLMSG_DONE, fn (may be NULL) for each message.
 * 0, the kernel's error, -ETIMEDOUT when nothing came in time (at once on a
 * non-blocking socket), or fn's error.
 */
int dnl_xfer(int fd, uint32_t pid, struct dnl_req *r, dnl_msg_fn fn, void *arg);
/* dnl_xfer on a socket of its own. */
int dnl_request(struct dnl_req *r, dnl_msg_fn fn, void *arg);
/*
 * One datagram into buf (DNL_RX_BUF bytes): its length, 0 for one that did
 * not come from the kernel (to be skipped), -EMSGSIZE for one larger than
 * buf (lost), or a negative errno (-EAGAIN: nothing came, or the timeout).
 */
ssize_t dnl_recv(int fd, char *buf, int flags);

#endif /* DPV_NL_PRIV_H */
