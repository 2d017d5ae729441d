/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpverbs' XDP program for AF_XDP ports beside the kernel: RoCEv2 (UDP
 * destination port 4791) to one of the port's addresses goes to the
 * dpverbs AF_XDP socket of the RX queue it arrived on; every other frame
 * is the kernel's (XDP_PASS): ARP, ND, ICMP, TCP, other UDP, VLAN-tagged
 * frames, IP fragments, IP options or IPv6 extension headers.
 *
 * The port layer (dpv_xdp.c) keeps dpv_addrs equal to the port's GIDs and
 * fills xsks_map (through DPDK's net_af_xdp) with one socket per queue.
 * Multicast RoCEv2 (224.0.0.0/4, ff00::/8) is taken too: dpverbs delivers
 * it to the QPs attached to the group.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "dpv_xdp_abi.h"

#define ROCE_PORT 4791

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, DPV_XDP_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

struct dpv_addr_key {
	__u8 a[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DPV_XDP_MAX_ADDRS);
	__type(key, struct dpv_addr_key);
	__type(value, __u32);
} dpv_addrs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DPV_XDP_ST_NR);
	__type(key, __u32);
	__type(value, __u64);
} dpv_xdp_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dpv_xdp_owner);
} dpv_owner SEC(".maps");

static __always_inline int count(__u32 slot, int verdict)
{
	__u64 *c = bpf_map_lookup_elem(&dpv_xdp_stats, &slot);
	if (c)
		*c += 1;
	return verdict;
}

/* The UDP header after an IP header, if the frame carries UDP to 4791. */
static __always_inline int roce_udp(void *l4, void *end)
{
	struct udphdr *udp = l4;
	if ((void *)(udp + 1) > end)
		return 0;
	return udp->dest == bpf_htons(ROCE_PORT);
}

static __always_inline int ours(struct dpv_addr_key *k)
{
	return bpf_map_lookup_elem(&dpv_addrs, k) != 0;
}

static __always_inline int to_socket(struct xdp_md *ctx)
{
	__u32 q = ctx->rx_queue_index, zero = 0;
	if (!bpf_map_lookup_elem(&xsks_map, &q)) {
		/* the owner map is bound to the program only if the program
		 * uses it: look at it here, on a path that is never hot */
		if (!bpf_map_lookup_elem(&dpv_owner, &zero))
			return XDP_DROP;
		return count(DPV_XDP_ST_NO_XSK, XDP_DROP);
	}
	count(DPV_XDP_ST_ROCE, XDP_PASS);
	return bpf_redirect_map(&xsks_map, q, XDP_DROP);
}

SEC("xdp")
int dpv_xdp_roce(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct dpv_addr_key k = {};

	if ((void *)(eth + 1) > end)
		return count(DPV_XDP_ST_PASS, XDP_PASS);
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
		    (ip->frag_off & bpf_htons(0x3fff)) || !roce_udp(ip + 1, end))
			return count(DPV_XDP_ST_PASS, XDP_PASS);
		if ((bpf_ntohl(ip->daddr) >> 28) == 0xe)
			return to_socket(ctx); /* a group */
		k.a[10] = 0xff;
		k.a[11] = 0xff;
		__builtin_memcpy(&k.a[12], &ip->daddr, 4);
		return ours(&k) ? to_socket(ctx) : count(DPV_XDP_ST_PASS, XDP_PASS);
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP || !roce_udp(ip6 + 1, end))
			return count(DPV_XDP_ST_PASS, XDP_PASS);
		if (ip6->daddr.in6_u.u6_addr8[0] == 0xff)
			return to_socket(ctx);
		__builtin_memcpy(k.a, &ip6->daddr, 16);
		return ours(&k) ? to_socket(ctx) : count(DPV_XDP_ST_PASS, XDP_PASS);
	}
	return count(DPV_XDP_ST_PASS, XDP_PASS);
}

char _license[] SEC("license") = "Dual BSD/GPL";
