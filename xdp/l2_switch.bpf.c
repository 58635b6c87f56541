// SPDX-License-Identifier: GPL-2.0
/* Learning switch: source MACs learned into a hash map, known unicast redirected to its port,
 * everything else flooded through the devmap (broadcast, never back out of the ingress port).
 * Ports off the spanning tree are left out of `ports`: what arrives there is dropped and
 * nothing is flooded to them, so loops cannot storm. A hairpin port (an access point's wlan
 * port, xdp/qdisc.h) sends frames between its own stations back out of itself. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

#include "counters.h"
#include "ports.h"
#include "qdisc.h"

struct mac {
	__u8 addr[ETH_ALEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192); /* preallocated: ~80 B an entry */
	__type(key, struct mac);
	__type(value, __u32); /* ifindex of the port the MAC was last seen on */
} macs SEC(".maps");

static __always_inline void learn(const __u8 *source, __u32 port)
{
	struct mac key;
	__u32 *known;

	__builtin_memcpy(key.addr, source, ETH_ALEN);
	known = bpf_map_lookup_elem(&macs, &key);
	if (known && *known == port)
		return;
	/* Only a new or moved MAC writes: a write per frame would bounce the entry between CPUs. */
	bpf_map_update_elem(&macs, &key, &port, BPF_ANY);
	count(C_LEARN);
}

SEC("xdp")
int xdp_l2(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 in = ctx->ingress_ifindex;
	struct mac dst;
	__u32 *out;

	count(C_RX);
	if ((void *)(eth + 1) > end || !bpf_map_lookup_elem(&ports, &in)) {
		count(C_DROP);
		return XDP_DROP;
	}
	if (!(eth->h_source[0] & 1))
		learn(eth->h_source, in);
	if (!(eth->h_dest[0] & 1)) {
		__builtin_memcpy(dst.addr, eth->h_dest, ETH_ALEN);
		out = bpf_map_lookup_elem(&macs, &dst);
		if (out && *out == in && !is_hairpin(in)) {
			count(C_DROP);
			return XDP_DROP;
		}
		if (out) {
			count(C_FWD);
			return forward(ctx, *out);
		}
	}
	count(C_FLOOD);
	return flood(ctx);
}

char LICENSE[] SEC("license") = "GPL";
