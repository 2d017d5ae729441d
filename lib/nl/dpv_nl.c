/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpverbs' rtnetlink client (dpv_nl.h), written from the kernel's UAPI
 * (netlink(7), rtnetlink(7)): a request is one message on a NETLINK_ROUTE
 * socket of its own, answered by the kernel with messages carrying the
 * request's sequence number and the socket's port id, and ended by an
 * acknowledgement (NLMSG_ERROR with error 0, asked for with NLM_F_ACK) or,
 * for a dump, by NLMSG_DONE. Every receive has a timeout (SO_RCVTIMEO), so
 * nothing waits for an answer that never comes.
 *
 * Messages are built with memcpy into a byte buffer and read through
 * bounds-checked attribute tables: nothing trusts a length the kernel (or
 * another sender) gives without checking it against the datagram.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "dpv_nl_priv.h"

#define NL_RCVBUF (1 << 20)      /* socket buffer of a subscribed socket */
#define NL_TIMEOUT_MS 1000       /* longest wait for one datagram of an answer */

static uint32_t nl_seq;          /* the last request's sequence number */

/* ---- building requests ---- */

void dnl_req_init(struct dnl_req *r, uint16_t type, uint16_t flags, const void *hdr, size_t hlen)
{
	memset(r, 0, sizeof(*r));
	r->nh.nlmsg_len = NLMSG_SPACE(hlen);
	r->nh.nlmsg_type = type;
	r->nh.nlmsg_flags = (uint16_t)(NLM_F_REQUEST | flags);
	memcpy(r->b + NLMSG_HDRLEN, hdr, hlen);
}

/* Appends one attribute; the requests here are far below DNL_REQ_MAX (checked anyway). */
void dnl_req_attr(struct dnl_req *r, uint16_t type, const void *data, size_t len)
{
	struct rtattr a = {.rta_len = (unsigned short)RTA_LENGTH(len), .rta_type = type};
	size_t off = NLMSG_ALIGN(r->nh.nlmsg_len);

	if (off + RTA_SPACE(len) > sizeof(r->b))
		return;
	memcpy(r->b + off, &a, sizeof(a));
	memcpy(r->b + off + RTA_LENGTH(0), data, len);
	r->nh.nlmsg_len = (uint32_t)(off + RTA_SPACE(len));
}

/* An address attribute of addr: 4 bytes for an IPv4-mapped one, else 16. */
void dnl_req_addr(struct dnl_req *r, uint16_t type, const uint8_t addr[16])
{
	if (dnl_is_v4(addr))
		dnl_req_attr(r, type, addr + 12, 4);
	else
		dnl_req_attr(r, type, addr, 16);
}

/* ---- reading messages ---- */

/* The next whole message of the datagram buf[0, len) at *off, or NULL. */
const struct nlmsghdr *dnl_msg_next(const char *buf, size_t len, size_t *off)
{
	const struct nlmsghdr *nh;

	if (*off + NLMSG_HDRLEN > len)
		return NULL;
	nh = (const struct nlmsghdr *)(const void *)(buf + *off);
	if (nh->nlmsg_len < NLMSG_HDRLEN || nh->nlmsg_len > len - *off)
		return NULL;
	*off += NLMSG_ALIGN(nh->nlmsg_len);
	return nh;
}

const void *dnl_attr_data(const struct rtattr *a)
{
	return (const char *)a + RTA_LENGTH(0);
}

size_t dnl_attr_len(const struct rtattr *a)
{
	return a->rta_len - RTA_LENGTH(0);
}

/* Indexes the attributes in p[0, len) by type (NLA_F_NESTED dropped; the last of a type wins). */
static void attr_parse(const void *p, size_t len, const struct rtattr **tb, unsigned int max)
{
	memset(tb, 0, (max + 1) * sizeof(*tb));
	while (len >= sizeof(struct rtattr)) {
		const struct rtattr *a = p;
		unsigned int type = a->rta_type & NLA_TYPE_MASK;

		if (a->rta_len < sizeof(*a) || a->rta_len > len)
			return;
		if (type <= max)
			tb[type] = a;
		if (RTA_ALIGN(a->rta_len) >= len)
			return;
		len -= RTA_ALIGN(a->rta_len);
		p = (const char *)p + RTA_ALIGN(a->rta_len);
	}
}

/* The family header of nh (hlen bytes) and its attributes in tb, or NULL if nh is too short. */
const void *dnl_msg_parse(const struct nlmsghdr *nh, size_t hlen, const struct rtattr **tb,
			  unsigned int max)
{
	size_t off = NLMSG_SPACE(hlen);

	if (nh->nlmsg_len < NLMSG_LENGTH(hlen))
		return NULL;
	attr_parse((const char *)nh + off, nh->nlmsg_len > off ? nh->nlmsg_len - off : 0, tb, max);
	return (const char *)nh + NLMSG_HDRLEN;
}

uint32_t dnl_attr_u32(const struct rtattr *a, uint32_t dflt)
{
	uint32_t v;

	if (!a || dnl_attr_len(a) < sizeof(v))
		return dflt;
	memcpy(&v, dnl_attr_data(a), sizeof(v));
	return v;
}

static void attr_str(const struct rtattr *a, char *out, size_t size)
{
	size_t n = a ? strnlen(dnl_attr_data(a), dnl_attr_len(a)) : 0;

	if (n >= size)
		n = size - 1;
	if (n)
		memcpy(out, dnl_attr_data(a), n);
	out[n] = '\0';
}

/* An address attribute of family (4 or 16 bytes) into out (IPv4-mapped); false if malformed. */
bool dnl_attr_addr(const struct rtattr *a, int family, uint8_t out[16])
{
	size_t want = family == AF_INET ? 4 : 16;

	if (!a || dnl_attr_len(a) != want)
		return false;
	memset(out, 0, 16);
	if (family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, dnl_attr_data(a), 4);
	} else {
		memcpy(out, dnl_attr_data(a), 16);
	}
	return true;
}

/* ---- sockets and requests ---- */

int dpv_nl_open(unsigned int groups, bool nonblock)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = groups};
	int size = NL_RCVBUF;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0),
			NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	/* Beyond net.core.rmem_max with CAP_NET_ADMIN, else up to it. */
	if (groups && setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* A socket for one request, with a receive timeout; *pid its port id. */
int dnl_sock(bool nonblock, uint32_t *pid)
{
	struct timeval tv = {.tv_sec = NL_TIMEOUT_MS / 1000,
			     .tv_usec = NL_TIMEOUT_MS % 1000 * 1000};
	struct sockaddr_nl sa = {.nl_pid = 0};
	socklen_t salen = sizeof(sa);
	int fd = dpv_nl_open(0, nonblock);

	if (fd < 0)
		return fd;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &salen) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	*pid = sa.nl_pid;
	return fd;
}

int dnl_send(int fd, const struct dnl_req *r)
{
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	ssize_t n;

	do
		n = sendto(fd, r->b, r->nh.nlmsg_len, MSG_DONTWAIT,
			   (const struct sockaddr *)&kernel, sizeof(kernel));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == r->nh.nlmsg_len ? 0 : -EIO;
}

/* One datagram from the kernel (dpv_nl_priv.h). */
ssize_t dnl_recv(int fd, char *buf, int flags)
{
	struct sockaddr_nl sa;
	struct iovec iov = {.iov_base = buf, .iov_len = DNL_RX_BUF};
	struct msghdr mh = {.msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov,
			    .msg_iovlen = 1};
	ssize_t n;

	do
		n = recvmsg(fd, &mh, flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	if (mh.msg_flags & MSG_TRUNC)
		return -EMSGSIZE;
	if (mh.msg_namelen < sizeof(sa) || sa.nl_family != AF_NETLINK || sa.nl_pid != 0)
		return 0;
	return n;
}

/* The end of an answer: the errno of NLMSG_ERROR (0: the ack) or of NLMSG_DONE. */
static int msg_status(const struct nlmsghdr *nh)
{
	int err;

	if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(err)))
		return nh->nlmsg_type == NLMSG_DONE ? 0 : -EPROTO;
	memcpy(&err, NLMSG_DATA(nh), sizeof(err));
	if (err > 0)
		return nh->nlmsg_type == NLMSG_DONE ? 0 : -EPROTO;
	return err;
}

/* The messages of one datagram: 1 while the answer to seq goes on, 0 at its end, or an errno. */
static int nl_answer(const char *buf, size_t len, uint32_t pid, uint32_t seq, dnl_msg_fn fn,
		     void *arg)
{
	const struct nlmsghdr *nh;
	size_t off = 0;

	while ((nh = dnl_msg_next(buf, len, &off))) {
		if (nh->nlmsg_pid != pid || nh->nlmsg_seq != seq)
			continue;
		if (nh->nlmsg_type == NLMSG_ERROR || nh->nlmsg_type == NLMSG_DONE)
			return msg_status(nh);
		if (nh->nlmsg_type >= NLMSG_MIN_TYPE && fn) {
			int ret = fn(nh, arg);

			if (ret < 0)
				return ret;
		}
	}
	return 1;
}

/* Sends r on fd (port id pid) and reads its answer, fn for each message. */
int dnl_xfer(int fd, uint32_t pid, struct dnl_req *r, dnl_msg_fn fn, void *arg)
{
	uint32_t seq = __atomic_add_fetch(&nl_seq, 1, __ATOMIC_RELAXED);
	char *buf;
	int ret;

	r->nh.nlmsg_seq = seq;
	r->nh.nlmsg_pid = pid;
	ret = dnl_send(fd, r);
	if (ret < 0)
		return ret;
	buf = malloc(DNL_RX_BUF);
	if (!buf)
		return -ENOMEM;
	do {
		ssize_t n = dnl_recv(fd, buf, 0);

		if (n < 0)
			ret = n == -EAGAIN ? -ETIMEDOUT : (int)n;
		else
			ret = nl_answer(buf, (size_t)n, pid, seq, fn, arg);
	} while (ret > 0);
	free(buf);
	return ret;
}

/* One request on a socket of its own. */
int dnl_request(struct dnl_req *r, dnl_msg_fn fn, void *arg)
{
	uint32_t pid = 0;
	int fd = dnl_sock(false, &pid);
	int ret;

	if (fd < 0)
		return fd;
	ret = dnl_xfer(fd, pid, r, fn, arg);
	close(fd);
	return ret;
}

/* ---- parsing links and addresses ---- */

static uint32_t xdp_prog_id(const struct rtattr *xdp)
{
	const struct rtattr *tb[IFLA_XDP_MAX + 1];

	if (!xdp)
		return 0;
	attr_parse(dnl_attr_data(xdp), dnl_attr_len(xdp), tb, IFLA_XDP_MAX);
	/* IFLA_XDP_PROG_ID when one program is attached; with several, one per mode. */
	if (tb[IFLA_XDP_PROG_ID])
		return dnl_attr_u32(tb[IFLA_XDP_PROG_ID], 0);
	if (tb[IFLA_XDP_DRV_PROG_ID])
		return dnl_attr_u32(tb[IFLA_XDP_DRV_PROG_ID], 0);
	if (tb[IFLA_XDP_SKB_PROG_ID])
		return dnl_attr_u32(tb[IFLA_XDP_SKB_PROG_ID], 0);
	return dnl_attr_u32(tb[IFLA_XDP_HW_PROG_ID], 0);
}

/* An RTM_NEWLINK / RTM_DELLINK of family AF_UNSPEC (the others are partial views). */
bool dnl_link_parse(const struct nlmsghdr *nh, struct dpv_nl_link *l)
{
	const struct rtattr *tb[IFLA_MAX + 1], *info[IFLA_INFO_MAX + 1];
	const struct ifinfomsg *ifi = dnl_msg_parse(nh, sizeof(*ifi), tb, IFLA_MAX);

	if (!ifi || ifi->ifi_family != AF_UNSPEC)
		return false;
	memset(l, 0, sizeof(*l));
	l->ifindex = ifi->ifi_index;
	l->flags = ifi->ifi_flags;
	attr_str(tb[IFLA_IFNAME], l->name, sizeof(l->name));
	if (tb[IFLA_ADDRESS] && dnl_attr_len(tb[IFLA_ADDRESS]) == sizeof(l->mac))
		memcpy(l->mac, dnl_attr_data(tb[IFLA_ADDRESS]), sizeof(l->mac));
	l->mtu = dnl_attr_u32(tb[IFLA_MTU], 0);
	if (tb[IFLA_OPERSTATE] && dnl_attr_len(tb[IFLA_OPERSTATE]) >= 1)
		l->operstate = *(const uint8_t *)dnl_attr_data(tb[IFLA_OPERSTATE]);
	l->num_rx_queues = dnl_attr_u32(tb[IFLA_NUM_RX_QUEUES], 0);
	l->num_tx_queues = dnl_attr_u32(tb[IFLA_NUM_TX_QUEUES], 0);
	l->xdp_prog_id = xdp_prog_id(tb[IFLA_XDP]);
	if (tb[IFLA_LINKINFO]) {
		attr_parse(dnl_attr_data(tb[IFLA_LINKINFO]), dnl_attr_len(tb[IFLA_LINKINFO]), info,
			   IFLA_INFO_MAX);
		attr_str(info[IFLA_INFO_KIND], l->kind, sizeof(l->kind));
	}
	return true;
}

/* An RTM_NEWADDR / RTM_DELADDR of IPv4 or IPv6. */
bool dnl_addr_parse(const struct nlmsghdr *nh, struct dpv_nl_addr *a, int *ifindex)
{
	const struct rtattr *tb[IFA_MAX + 1];
	const struct ifaddrmsg *ifa = dnl_msg_parse(nh, sizeof(*ifa), tb, IFA_MAX);
	const struct rtattr *addr;

	if (!ifa || (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6))
		return false;
	memset(a, 0, sizeof(*a));
	/* IPv4: IFA_LOCAL is the interface's address (IFA_ADDRESS the peer's on a
	 * point-to-point link); IPv6: IFA_ADDRESS (IFA_LOCAL only with a peer). */
	addr = tb[IFA_ADDRESS];
	if (ifa->ifa_family == AF_INET && tb[IFA_LOCAL])
		addr = tb[IFA_LOCAL];
	if (!dnl_attr_addr(addr, ifa->ifa_family, a->addr))
		return false;
	a->family = ifa->ifa_family;
	a->prefix = ifa->ifa_prefixlen;
	a->scope = ifa->ifa_scope;
	a->flags = dnl_attr_u32(tb[IFA_FLAGS], ifa->ifa_flags);
	*ifindex = (int)ifa->ifa_index;
	return true;
}

/* ---- links ---- */

/* The answer to RTM_GETLINK. */
struct nl_link {
	struct dpv_nl_link *out;
	bool found;
};

static int link_cb(const struct nlmsghdr *nh, void *arg)
{
	struct nl_link *c = arg;

	if (!c->found && nh->nlmsg_type == RTM_NEWLINK && dnl_link_parse(nh, c->out))
		c->found = true;
	return 0;
}

static int link_get(int ifindex, const char *name, struct dpv_nl_link *out)
{
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex};
	uint32_t mask = RTEXT_FILTER_SKIP_STATS;
	struct nl_link c = {.out = out};
	struct dnl_req r;
	int ret;

	dnl_req_init(&r, RTM_GETLINK, NLM_F_ACK, &ifi, sizeof(ifi));
	if (name)
		dnl_req_attr(&r, IFLA_IFNAME, name, strlen(name) + 1);
	dnl_req_attr(&r, IFLA_EXT_MASK, &mask, sizeof(mask));
	ret = dnl_request(&r, link_cb, &c);
	return ret == 0 && !c.found ? -ENODEV : ret;
}

int dpv_nl_link_by_name(const char *name, struct dpv_nl_link *out)
{
	if (!name || !out)
		return -EINVAL;
	if (!name[0] || strlen(name) >= IF_NAMESIZE)
		return -ENODEV;
	return link_get(0, name, out);
}

int dpv_nl_link_by_index(int ifindex, struct dpv_nl_link *out)
{
	if (!out)
		return -EINVAL;
	if (ifindex <= 0)
		return -ENODEV;
	return link_get(ifindex, NULL, out);
}

/* RTM_SETLINK of ifindex: flags under the mask change, and one attribute if attr != 0. */
static int link_set(int ifindex, unsigned int flags, unsigned int change, uint16_t attr,
		    const void *data, size_t len)
{
	struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex, .ifi_flags = flags,
				.ifi_change = change};
	struct dnl_req r;

	if (ifindex <= 0)
		return -ENODEV;
	dnl_req_init(&r, RTM_SETLINK, NLM_F_ACK, &ifi, sizeof(ifi));
	if (attr)
		dnl_req_attr(&r, attr, data, len);
	return dnl_request(&r, NULL, NULL);
}

int dpv_nl_link_set_mtu(int ifindex, uint32_t mtu)
{
	return link_set(ifindex, 0, 0, IFLA_MTU, &mtu, sizeof(mtu));
}

int dpv_nl_link_set_up(int ifindex, bool up)
{
	return link_set(ifindex, up ? IFF_UP : 0, IFF_UP, 0, NULL, 0);
}

int dpv_nl_link_set_mac(int ifindex, const uint8_t mac[6])
{
	if (!mac)
		return -EINVAL;
	return link_set(ifindex, 0, 0, IFLA_ADDRESS, mac, 6);
}

/* ---- addresses ---- */

struct nl_addrs {
	int ifindex;
	struct dpv_nl_addr *out;
	unsigned int max, n;
	bool intr;                       /* the table changed during the dump */
};

static int addrs_cb(const struct nlmsghdr *nh, void *arg)
{
	struct nl_addrs *c = arg;
	struct dpv_nl_addr a;
	int ifindex;

	if (nh->nlmsg_flags & NLM_F_DUMP_INTR)
		c->intr = true;
	if (nh->nlmsg_type != RTM_NEWADDR || !dnl_addr_parse(nh, &a, &ifindex) ||
	    ifindex != c->ifindex)
		return 0;
	if (c->n < c->max)
		c->out[c->n] = a;
	c->n++;
	return 0;
}

int dpv_nl_addrs(int ifindex, struct dpv_nl_addr *out, unsigned int max)
{
	/* The dump covers every interface (without NETLINK_GET_STRICT_CHK the kernel
	 * ignores ifa_index): filtered here. */
	struct ifaddrmsg ifa = {.ifa_family = AF_UNSPEC, .ifa_index = (uint32_t)ifindex};
	struct nl_addrs c;
	struct dnl_req r;
	int ret, tries = 0;

	/* A dump the kernel marks inconsistent (NLM_F_DUMP_INTR) is done again. */
	do {
		c = (struct nl_addrs){.ifindex = ifindex, .out = out, .max = out ? max : 0};
		dnl_req_init(&r, RTM_GETADDR, NLM_F_DUMP, &ifa, sizeof(ifa));
		ret = dnl_request(&r, addrs_cb, &c);
	} while (ret == 0 && c.intr && ++tries < 3);
	return ret < 0 ? ret : (int)c.n;
}

int dpv_nl_addr_add(int ifindex, const uint8_t addr[16], uint8_t prefix)
{
	bool v4 = addr && dnl_is_v4(addr);
	struct ifaddrmsg ifa = {.ifa_family = v4 ? AF_INET : AF_INET6, .ifa_prefixlen = prefix,
				.ifa_flags = v4 ? 0 : IFA_F_NODAD, .ifa_scope = RT_SCOPE_UNIVERSE,
				.ifa_index = (uint32_t)ifindex};
	uint32_t flags = IFA_F_NODAD;
	struct dnl_req r;

	if (!addr || prefix > (v4 ? 32 : 128))
		return -EINVAL;
	if (ifindex <= 0)
		return -ENODEV;
	dnl_req_init(&r, RTM_NEWADDR, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof(ifa));
	/* IPv6 takes IFA_LOCAL, if given, for the address and IFA_ADDRESS for a peer's. */
	if (v4)
		dnl_req_addr(&r, IFA_LOCAL, addr);
	dnl_req_addr(&r, IFA_ADDRESS, addr);
	if (v4 && prefix <= 30) {
		uint32_t host = prefix ? ~0u >> prefix : ~0u, bcast;

		memcpy(&bcast, addr + 12, 4);
		bcast |= htonl(host);
		dnl_req_attr(&r, IFA_BROADCAST, &bcast, sizeof(bcast));
	}
	if (!v4)
		dnl_req_attr(&r, IFA_FLAGS, &flags, sizeof(flags));
	return dnl_request(&r, NULL, NULL);
}
