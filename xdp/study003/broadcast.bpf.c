// SPDX-License-Identifier: GPL-2.0
/* Study 003, case V: Ethernet broadcast copied to every port but the ingress one by one
 * devmap broadcast redirect (BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS over `ports`, which the
 * plane fills with every switch port); unicast by the `macs` map (destination MAC -> output
 * ifindex, written from the entries file), as broadcast.p4's mac_fwd; unknown unicast and
 * runts dropped. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

#include "mac_fwd.h"

SEC("xdp")
int xdp_broadcast(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	count(C_RX);
	if ((void *)(eth + 1) > end) {
		count(C_DROP);
		return XDP_DROP;
	}
	if (is_broadcast(eth->h_dest)) {
		count(C_FLOOD);
		return bpf_redirect_map(&ports, 0, BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS);
	}
	return forward_by_mac(eth);
}

char LICENSE[] SEC("license") = "GPL";
