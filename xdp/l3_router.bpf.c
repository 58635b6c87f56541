// SPDX-License-Identifier: GPL-2.0
/* Router from a static table: the longest prefix match of the destination in an LPM trie the
 * lab writes gives the output port and both MACs; TTL - 1, checksum fixed, redirected.
 * ARP, frames for the switch's own addresses (next hop with ifindex 0), destinations without
 * a route and expiring TTLs go to the switch namespace's stack (XDP_PASS): it answers ARP for
 * the gateway addresses, and with ip_forward off it never forwards anything itself. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>

#include "counters.h"
#include "ipv4.h"
#include "ports.h"
#include "qdisc.h"

struct route_key {
	__u32 prefixlen;
	__u32 addr; /* network byte order */
};

struct next_hop {
	__u32 ifindex; /* 0: the address is the switch's own */
	__u8 smac[ETH_ALEN];
	__u8 dmac[ETH_ALEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct route_key);
	__type(value, struct next_hop);
} routes SEC(".maps");

SEC("xdp")
int xdp_l3(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct route_key key = {.prefixlen = 32};
	struct next_hop *hop;
	struct iphdr *iph;

	count(C_RX);
	if ((void *)(eth + 1) > end) {
		count(C_DROP);
		return XDP_DROP;
	}
	iph = ipv4_header(eth, end);
	if (!iph)
		goto pass;
	key.addr = iph->daddr;
	hop = bpf_map_lookup_elem(&routes, &key);
	if (!hop || !hop->ifindex || iph->ttl <= 1)
		goto pass;
	ipv4_decrease_ttl(iph);
	set_macs(eth, hop->smac, hop->dmac);
	count(C_FWD);
	return forward(ctx, hop->ifindex);
pass:
	return to_stack(ctx);
}

char LICENSE[] SEC("license") = "GPL";
