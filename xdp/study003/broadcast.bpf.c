// SPDX-License-Identifier: GPL-2.0
/* Study 003, case V: Ethernet broadcast copied to every port but the ingress one by one
 * devmap broadcast redirect (BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS over `ports`, which the
 * plane fills with every switch port); unicast by the `macs` map (destination MAC -> output
 * ifindex, written from the entries file), as broadcast.p4's mac_fwd; unknown unicast and
 * runts dropped. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

#include "counters.h"
#include "ports.h"

struct mac_key {
	__u8 addr[ETH_ALEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct mac_key);
	__type(value, __u32);
} macs SEC(".maps");

static __always_inline int is_broadcast(const __u8 *mac)
{
	return (mac[0] & mac[1] & mac[2] & mac[3] & mac[4] & mac[5]) == 0xff;
}

SEC("xdp")
int xdp_broadcast(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct mac_key key;
	__u32 *out;

	count(C_RX);
	if ((void *)(eth + 1) > end) {
		count(C_DROP);
		return XDP_DROP;
	}
	if (is_broadcast(eth->h_dest)) {
		count(C_FLOOD);
		return bpf_redirect_map(&ports, 0, BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS);
	}
	__builtin_memcpy(key.addr, eth->h_dest, ETH_ALEN);
	out = bpf_map_lookup_elem(&macs, &key);
	if (!out) {
		count(C_DROP);
		return XDP_DROP;
	}
	count(C_FWD);
	return bpf_redirect_map(&ports, *out, XDP_DROP);
}

char LICENSE[] SEC("license") = "GPL";
