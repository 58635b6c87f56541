// SPDX-License-Identifier: GPL-2.0
/* Study 003, case V, second variant: the XDP + tc hybrid. XDP forwards unicast by the `macs`
 * map (destination MAC -> output ifindex) and hands Ethernet broadcast to the stack
 * (XDP_PASS), where the tc ingress program of the same port (cls_bpf, direct action) clones
 * it out of every port in the `flood` array but the ingress one (bpf_clone_redirect: XDP
 * has no clone) and drops the original. The entries file writes both maps. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "mac_fwd.h"

#define MAX_FLOOD 16

/* Slot i -> an output ifindex; the first 0 ends the list. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_FLOOD);
	__type(key, __u32);
	__type(value, __u32);
} flood SEC(".maps");

SEC("xdp")
int xdp_bcast_tc(struct xdp_md *ctx)
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
		count(C_PASS);
		return XDP_PASS;
	}
	return forward_by_mac(eth);
}

SEC("tc")
int tc_clone_flood(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	__u32 i, *out;

	if ((void *)(eth + 1) > end || !is_broadcast(eth->h_dest))
		return TC_ACT_OK;
	for (i = 0; i < MAX_FLOOD; i++) {
		out = bpf_map_lookup_elem(&flood, &i);
		if (!out || !*out)
			break;
		if (*out != skb->ingress_ifindex)
			bpf_clone_redirect(skb, *out, 0);
	}
	count(C_FLOOD);
	return TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "GPL";
