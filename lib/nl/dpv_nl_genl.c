/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Generic netlink: an interface's XDP features from the kernel's "netdev"
 * family (Linux 6.3 and later), so that dpverbs knows whether a driver
 * offers AF_XDP zero-copy before it makes its sockets. The constants are
 * those of <linux/netdev.h>, which older UAPI headers lack.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/genetlink.h>

#include "dpv_nl_priv.h"

#define NETDEV_FAMILY "netdev"
#define NETDEV_CMD_DEV_GET 1
#define NETDEV_A_DEV_IFINDEX 1
#define NETDEV_A_DEV_XDP_FEATURES 3
#define GENL_TIMEOUT_MS 1000

/* A generic netlink socket with a receive timeout; *pid its port id. */
static int genl_sock(uint32_t *pid)
{
	struct timeval tv = {.tv_sec = GENL_TIMEOUT_MS / 1000, .tv_usec = GENL_TIMEOUT_MS % 1000 * 1000};
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	socklen_t salen = sizeof(sa);
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &salen) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	*pid = sa.nl_pid;
	return fd;
}

static int family_cb(const struct nlmsghdr *nh, void *arg)
{
	const struct rtattr *tb[CTRL_ATTR_FAMILY_ID + 1];

	if (dnl_msg_parse(nh, GENL_HDRLEN, tb, CTRL_ATTR_FAMILY_ID) && tb[CTRL_ATTR_FAMILY_ID] &&
	    dnl_attr_len(tb[CTRL_ATTR_FAMILY_ID]) >= 2)
		memcpy(arg, dnl_attr_data(tb[CTRL_ATTR_FAMILY_ID]), 2);
	return 0;
}

static int dev_cb(const struct nlmsghdr *nh, void *arg)
{
	const struct rtattr *tb[NETDEV_A_DEV_XDP_FEATURES + 1];

	if (dnl_msg_parse(nh, GENL_HDRLEN, tb, NETDEV_A_DEV_XDP_FEATURES) &&
	    tb[NETDEV_A_DEV_XDP_FEATURES] && dnl_attr_len(tb[NETDEV_A_DEV_XDP_FEATURES]) >= 8)
		memcpy(arg, dnl_attr_data(tb[NETDEV_A_DEV_XDP_FEATURES]), 8);
	return 0;
}

int dpv_nl_xdp_features(int ifindex, uint64_t *features)
{
	struct genlmsghdr g = {.cmd = CTRL_CMD_GETFAMILY, .version = 1};
	struct dnl_req r;
	uint32_t pid = 0, ifi = (uint32_t)ifindex;
	uint16_t family = 0;
	uint64_t f = UINT64_MAX;
	int fd = genl_sock(&pid), ret;

	if (fd < 0)
		return fd;
	dnl_req_init(&r, GENL_ID_CTRL, NLM_F_ACK, &g, sizeof(g));
	dnl_req_attr(&r, CTRL_ATTR_FAMILY_NAME, NETDEV_FAMILY, sizeof(NETDEV_FAMILY));
	ret = dnl_xfer(fd, pid, &r, family_cb, &family);
	if (ret == 0 && !family)
		ret = -EOPNOTSUPP;
	if (ret == -ENOENT)
		ret = -EOPNOTSUPP; /* no "netdev" family: Linux before 6.3 */
	if (ret == 0) {
		g.cmd = NETDEV_CMD_DEV_GET;
		dnl_req_init(&r, family, NLM_F_ACK, &g, sizeof(g));
		dnl_req_attr(&r, NETDEV_A_DEV_IFINDEX, &ifi, sizeof(ifi));
		ret = dnl_xfer(fd, pid, &r, dev_cb, &f);
		if (ret == 0 && f == UINT64_MAX)
			ret = -EOPNOTSUPP;
	}
	close(fd);
	if (ret == 0)
		*features = f;
	return ret;
}
