/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpverbs' rtnetlink client: what the kernel knows of a network interface
 * (MAC, MTU, state, addresses), its neighbour table and its routes, and
 * the changes to them, for ports that live beside the kernel (AF_XDP on a
 * kernel interface, the exception path's kernel interface) and for the
 * drop-in librdmacm's route lookup.
 *
 * libc and the kernel's UAPI headers only (no DPDK, no other layer).
 * Functions return 0 or a negative errno value unless stated otherwise.
 * Every call that talks to the kernel opens its own NETLINK_ROUTE socket
 * (or uses the one it is given), so they are safe from any thread. Addresses
 * are 16 bytes, IPv6 or IPv4-mapped (::ffff:a.b.c.d), as GIDs are.
 */
#ifndef DPV_NL_H
#define DPV_NL_H

#include <stdbool.h>
#include <stdint.h>
#include <net/if.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An interface as RTM_GETLINK reports it. */
struct dpv_nl_link {
	int ifindex;
	char name[IF_NAMESIZE];
	uint8_t mac[6];           /* IFLA_ADDRESS (zero if not Ethernet) */
	uint32_t mtu;             /* IFLA_MTU */
	unsigned int flags;       /* ifi_flags: IFF_UP, IFF_RUNNING, IFF_LOWER_UP ... */
	uint8_t operstate;        /* IFLA_OPERSTATE (IF_OPER_UP = 6, ...) */
	uint32_t num_rx_queues;   /* IFLA_NUM_RX_QUEUES (0 if not reported) */
	uint32_t num_tx_queues;   /* IFLA_NUM_TX_QUEUES */
	uint32_t xdp_prog_id;     /* IFLA_XDP / IFLA_XDP_PROG_ID: attached program, 0 if none */
	char kind[16];            /* IFLA_LINKINFO / IFLA_INFO_KIND ("veth", "tun", ...; "" if none) */
};

/* An address of an interface (RTM_GETADDR). */
struct dpv_nl_addr {
	uint8_t addr[16];         /* IPv6, or IPv4-mapped for AF_INET */
	uint8_t family;           /* AF_INET or AF_INET6 */
	uint8_t prefix;           /* ifa_prefixlen */
	uint8_t scope;            /* ifa_scope: RT_SCOPE_UNIVERSE 0, RT_SCOPE_LINK 253, RT_SCOPE_HOST 254 */
	uint32_t flags;           /* IFA_F_* (IFA_FLAGS if present): tentative, deprecated, secondary ... */
};

/* The interface by name / by index. -ENODEV if there is none. */
int dpv_nl_link_by_name(const char *name, struct dpv_nl_link *out);
int dpv_nl_link_by_index(int ifindex, struct dpv_nl_link *out);

/*
 * The addresses of interface ifindex, in the order the kernel dumps them
 * (IPv4 then IPv6; the primary IPv4 address first). Up to max entries into
 * out; returns how many there are in all (may exceed max; 0 for an interface
 * that does not exist) or a negative errno.
 */
int dpv_nl_addrs(int ifindex, struct dpv_nl_addr *out, unsigned int max);

/* Interface changes: MTU, MAC, up/down; address add/remove. */
int dpv_nl_link_set_mtu(int ifindex, uint32_t mtu);
int dpv_nl_link_set_up(int ifindex, bool up);
int dpv_nl_link_set_mac(int ifindex, const uint8_t mac[6]);
/* Add an address (AF_INET for IPv4-mapped addr) with its prefix length;
 * IPv6 addresses are added with IFA_F_NODAD (the port's own GIDs). -EEXIST
 * if it is there. */
int dpv_nl_addr_add(int ifindex, const uint8_t addr[16], uint8_t prefix);

/* Neighbour states (NUD_*) dpverbs treats as a usable MAC. */
bool dpv_nl_nud_valid(uint16_t state);

/*
 * The kernel's neighbour entry of addr on ifindex (RTM_GETNEIGH for one
 * entry): 0 with *mac and *state (NUD_*) if there is an entry (its MAC is
 * meaningful only if dpv_nl_nud_valid(*state)), -ENOENT if there is none.
 */
int dpv_nl_neigh_get(int ifindex, const uint8_t addr[16], uint8_t mac[6], uint16_t *state);
/*
 * Ask the kernel to resolve addr on ifindex (RTM_NEWNEIGH with NTF_USE and
 * NLM_F_CREATE: the entry is created if missing and the kernel sends its
 * ARP request or neighbour solicitation now, as if a packet were sent to
 * it). A FAILED entry is asked for again; a REACHABLE one is left alone; a
 * STALE one goes to DELAY and is probed by unicast after
 * delay_first_probe_time (5 s), as for any packet. Does not wait for the
 * answer: it arrives as an RTM_NEWNEIGH notification (dpv_nl_mon).
 * sock: an open socket (dpv_nl_open) to use, or -1 to open one for the
 * call. Never blocks. With sock -1 the kernel's error (-ENODEV ...) is
 * returned (the kernel handles the request within the send); with a
 * socket, 0 once sent: an error comes back on it as an NLMSG_ERROR message,
 * which dpv_nl_mon_read skips.
 * IPv6: the kernel sends the solicitation from the interface's link-local
 * address and sends none while that address is tentative (DAD, up to about
 * 2 s after the link comes up): it tries again every retrans_time (1 s),
 * and the entry fails after mcast_solicit (3) tries without one.
 */
int dpv_nl_neigh_resolve(int sock, int ifindex, const uint8_t addr[16]);

/*
 * The route to dst (RTM_GETROUTE, as `ip route get`): *oif the interface
 * index, src (if not NULL) the preferred source address (zero if the
 * kernel gives none). -ENETUNREACH (or the kernel's error) if there is no
 * route.
 */
int dpv_nl_route_get(const uint8_t dst[16], int *oif, uint8_t src[16]);

/* The XDP features of interface ifindex (generic netlink "netdev" family,
 * NETDEV_A_DEV_XDP_FEATURES, Linux 6.3 and later): a mask of
 * DPV_NL_XDP_* bits. -EOPNOTSUPP on a kernel without the family,
 * -ENODEV without the interface. */
#define DPV_NL_XDP_BASIC 0x1
#define DPV_NL_XDP_REDIRECT 0x2
#define DPV_NL_XDP_NDO_XMIT 0x4
#define DPV_NL_XDP_XSK_ZEROCOPY 0x8
int dpv_nl_xdp_features(int ifindex, uint64_t *features);

/* A NETLINK_ROUTE socket (SOCK_CLOEXEC | SOCK_NONBLOCK when nonblock),
 * subscribed to the multicast groups mask of RTMGRP_* bits (0: none).
 * Returns the fd or a negative errno. */
int dpv_nl_open(unsigned int groups, bool nonblock);

/* Notifications read from a subscribed socket. */
enum dpv_nl_ev_type {
	DPV_NL_EV_LINK = 1,       /* RTM_NEWLINK / RTM_DELLINK: link set */
	DPV_NL_EV_ADDR,           /* RTM_NEWADDR / RTM_DELADDR: addr set */
	DPV_NL_EV_NEIGH,          /* RTM_NEWNEIGH / RTM_DELNEIGH: neigh set */
};

struct dpv_nl_ev {
	enum dpv_nl_ev_type type;
	bool del;                 /* RTM_DEL* */
	int ifindex;
	struct dpv_nl_link link;  /* DPV_NL_EV_LINK */
	struct dpv_nl_addr addr;  /* DPV_NL_EV_ADDR */
	struct {
		uint8_t addr[16];
		uint8_t mac[6];
		bool has_mac;     /* NDA_LLADDR present (of 6 bytes) */
		uint16_t state;   /* NUD_* */
	} neigh;                  /* DPV_NL_EV_NEIGH */
};

typedef void (*dpv_nl_ev_fn)(void *arg, const struct dpv_nl_ev *ev);
/*
 * Read what is waiting on a subscribed socket (without blocking) and call
 * fn for every link, address or neighbour message the kernel sent (others
 * are skipped, and so are link messages of a family other than AF_UNSPEC,
 * i.e. IPv6's and the bridge's partial ones, and neighbours other than
 * IPv4 and IPv6, i.e. the bridge's FDB). Returns the number of events, 0
 * if nothing was waiting, or a negative errno; -ENOBUFS means the kernel
 * dropped notifications (the socket's buffer overflowed; the events read
 * before were delivered) or one was too large to read: the caller must
 * re-read the state it follows.
 */
int dpv_nl_mon_read(int sock, dpv_nl_ev_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* DPV_NL_H */
