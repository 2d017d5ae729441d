/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Somebody else's XDP program (test/multi/xdp_bad.sh): passes every frame.
 * dpverbs must refuse an interface that has it, and leave it there.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int not_dpverbs(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual BSD/GPL";
