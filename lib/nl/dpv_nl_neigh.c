/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpv_nl.h's neighbours, routes and notifications: one entry of the
 * kernel's neighbour table (RTM_GETNEIGH), a resolution the kernel does for
 * us (RTM_NEWNEIGH with NTF_USE: the kernel's neigh_add() then calls
 * neigh_event_send(), which sends the ARP request or neighbour solicitation
 * as the first packet to the neighbour would), a route lookup (RTM_GETROUTE,
 * as `ip route get`), and the link, address and neighbour notifications of
 * a subscribed socket.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "dpv_nl_priv.h"

/* ---- messages as events ---- */

/* An RTM_NEWNEIGH / RTM_DELNEIGH of IPv4 (ARP) or IPv6 (ND); bridge FDB entries are not. */
static bool neigh_parse(const struct nlmsghdr *nh, struct dpv_nl_ev *ev)
{
	const struct rtattr *tb[NDA_MAX + 1];
	const struct ndmsg *ndm = dnl_msg_parse(nh, sizeof(*ndm), tb, NDA_MAX);

	if (!ndm || (ndm->ndm_family != AF_INET && ndm->ndm_family != AF_INET6))
		return false;
	if (!dnl_attr_addr(tb[NDA_DST], ndm->ndm_family, ev->neigh.addr))
		return false;
	ev->ifindex = ndm->ndm_ifindex;
	ev->neigh.state = ndm->ndm_state;
	if (tb[NDA_LLADDR] && dnl_attr_len(tb[NDA_LLADDR]) == sizeof(ev->neigh.mac)) {
		memcpy(ev->neigh.mac, dnl_attr_data(tb[NDA_LLADDR]), sizeof(ev->neigh.mac));
		ev->neigh.has_mac = true;
	}
	return true;
}

/* A link, address or neighbour message as an event; false for anything else. */
static bool ev_parse(const struct nlmsghdr *nh, struct dpv_nl_ev *ev)
{
	uint16_t t = nh->nlmsg_type;

	memset(ev, 0, sizeof(*ev));
	ev->del = t == RTM_DELLINK || t == RTM_DELADDR || t == RTM_DELNEIGH;
	if (t == RTM_NEWLINK || t == RTM_DELLINK) {
		ev->type = DPV_NL_EV_LINK;
		if (!dnl_link_parse(nh, &ev->link))
			return false;
		ev->ifindex = ev->link.ifindex;
		return true;
	}
	if (t == RTM_NEWADDR || t == RTM_DELADDR) {
		ev->type = DPV_NL_EV_ADDR;
		return dnl_addr_parse(nh, &ev->addr, &ev->ifindex);
	}
	if (t == RTM_NEWNEIGH || t == RTM_DELNEIGH) {
		ev->type = DPV_NL_EV_NEIGH;
		return neigh_parse(nh, ev);
	}
	return false;
}

/* ---- neighbours ---- */

bool dpv_nl_nud_valid(uint16_t state)
{
	/* The kernel's NUD_VALID: an address to send to, confirmed or not. */
	return (state & (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT |
			 NUD_NOARP)) != 0;
}

/* The answer for one neighbour: the entry of ifindex and addr. */
struct nl_neigh {
	int ifindex;
	const uint8_t *addr;
	bool found;
	struct dpv_nl_ev ev;
};

static int neigh_cb(const struct nlmsghdr *nh, void *arg)
{
	struct nl_neigh *c = arg;
	struct dpv_nl_ev ev;

	if (c->found || nh->nlmsg_type != RTM_NEWNEIGH || !ev_parse(nh, &ev))
		return 0;
	if (ev.ifindex == c->ifindex && memcmp(ev.neigh.addr, c->addr, 16) == 0) {
		c->ev = ev;
		c->found = true;
	}
	return 0;
}

/* RTM_GETNEIGH for the entry of c (Linux >= 4.19), or a dump of its family's table. */
static int neigh_ask(struct nl_neigh *c, bool dump)
{
	struct ndmsg ndm = {.ndm_family = dnl_is_v4(c->addr) ? AF_INET : AF_INET6,
			    .ndm_ifindex = dump ? 0 : c->ifindex};
	struct dnl_req r;

	dnl_req_init(&r, RTM_GETNEIGH, dump ? NLM_F_DUMP : NLM_F_ACK, &ndm, sizeof(ndm));
	if (!dump)
		dnl_req_addr(&r, NDA_DST, c->addr);
	return dnl_request(&r, neigh_cb, c);
}

int dpv_nl_neigh_get(int ifindex, const uint8_t addr[16], uint8_t mac[6], uint16_t *state)
{
	struct nl_neigh c = {.ifindex = ifindex, .addr = addr};
	int ret;

	if (!addr || !mac || !state)
		return -EINVAL;
	if (ifindex <= 0)
		return -ENODEV;
	ret = neigh_ask(&c, false);
	if (ret == -EOPNOTSUPP)         /* a kernel before 4.19: no RTM_GETNEIGH for one entry */
		ret = neigh_ask(&c, true);
	if (ret == 0 && !c.found)
		ret = -ENOENT;
	if (ret < 0)
		return ret;
	memcpy(mac, c.ev.neigh.mac, 6);
	*state = c.ev.neigh.state;
	return 0;
}

int dpv_nl_neigh_resolve(int sock, int ifindex, const uint8_t addr[16])
{
	/* With NTF_USE, ndm_state is not looked at: the entry keeps its state (NUD_NONE when
	 * created here) and neigh_event_send() starts the resolution unless it is valid. */
	struct ndmsg ndm = {.ndm_ifindex = ifindex, .ndm_state = NUD_NONE, .ndm_flags = NTF_USE};
	struct dnl_req r;
	uint32_t pid = 0;
	int fd, ret;

	if (!addr)
		return -EINVAL;
	if (ifindex <= 0)
		return -ENODEV;
	ndm.ndm_family = dnl_is_v4(addr) ? AF_INET : AF_INET6;
	if (sock >= 0) {
		/* No ack asked: an error would come back on sock as an NLMSG_ERROR, which
		 * dpv_nl_mon_read() skips. */
		dnl_req_init(&r, RTM_NEWNEIGH, NLM_F_CREATE, &ndm, sizeof(ndm));
		dnl_req_addr(&r, NDA_DST, addr);
		return dnl_send(sock, &r);
	}
	fd = dnl_sock(true, &pid);
	if (fd < 0)
		return fd;
	dnl_req_init(&r, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_ACK, &ndm, sizeof(ndm));
	dnl_req_addr(&r, NDA_DST, addr);
	/* The kernel handles a request within our sendmsg(): its ack is waiting when it returns
	 * (-ETIMEDOUT, nothing waiting on the non-blocking socket, would mean it is not). */
	ret = dnl_xfer(fd, pid, &r, NULL, NULL);
	close(fd);
	return ret == -ETIMEDOUT ? 0 : ret;
}

/* ---- routes ---- */

struct nl_route {
	bool found;
	int oif;
	uint8_t src[16];
};

static int route_cb(const struct nlmsghdr *nh, void *arg)
{
	struct nl_route *c = arg;
	const struct rtattr *tb[RTA_MAX + 1];
	const struct rtmsg *rtm;

	if (c->found || nh->nlmsg_type != RTM_NEWROUTE)
		return 0;
	rtm = dnl_msg_parse(nh, sizeof(*rtm), tb, RTA_MAX);
	if (!rtm)
		return 0;
	c->found = true;
	c->oif = (int)dnl_attr_u32(tb[RTA_OIF], 0);
	(void)dnl_attr_addr(tb[RTA_PREFSRC], rtm->rtm_family, c->src);
	return 0;
}

int dpv_nl_route_get(const uint8_t dst[16], int *oif, uint8_t src[16])
{
	struct rtmsg rtm = {.rtm_family = AF_INET6, .rtm_dst_len = 128};
	struct nl_route c = {.found = false};
	struct dnl_req r;
	int ret;

	if (!dst || !oif)
		return -EINVAL;
	if (dnl_is_v4(dst)) {
		rtm.rtm_family = AF_INET;
		rtm.rtm_dst_len = 32;
	}
	dnl_req_init(&r, RTM_GETROUTE, NLM_F_ACK, &rtm, sizeof(rtm));
	dnl_req_addr(&r, RTA_DST, dst);
	ret = dnl_request(&r, route_cb, &c);
	if (ret == 0 && (!c.found || c.oif <= 0))
		ret = -ENETUNREACH;
	if (ret < 0)
		return ret;
	*oif = c.oif;
	if (src)
		memcpy(src, c.src, 16);
	return 0;
}

/* ---- notifications ---- */

/* The events of one datagram: how many fn got. */
static int mon_deliver(const char *buf, size_t len, dpv_nl_ev_fn fn, void *arg)
{
	const struct nlmsghdr *nh;
	struct dpv_nl_ev ev;
	size_t off = 0;
	int n = 0;

	while ((nh = dnl_msg_next(buf, len, &off))) {
		if (ev_parse(nh, &ev)) {
			fn(arg, &ev);
			n++;
		}
	}
	return n;
}

int dpv_nl_mon_read(int sock, dpv_nl_ev_fn fn, void *arg)
{
	bool lost = false;
	char *buf;
	int n = 0;

	if (sock < 0 || !fn)
		return -EINVAL;
	buf = malloc(DNL_RX_BUF);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		/* Only the kernel's messages: dnl_recv() gives 0 bytes for the others. */
		ssize_t len = dnl_recv(sock, buf, MSG_DONTWAIT);

		if (len == -EAGAIN)
			break;
		if (len == -EMSGSIZE) {         /* too large to read: as good as dropped */
			lost = true;
			continue;
		}
		if (len < 0) {                  /* -ENOBUFS: the kernel dropped some */
			n = (int)len;
			break;
		}
		n += mon_deliver(buf, (size_t)len, fn, arg);
	}
	free(buf);
	return n >= 0 && lost ? -ENOBUFS : n;
}
