/* Study 003's broadcast programs' unicast half: the `macs` table (destination MAC -> output
 * ifindex, written from the entries file), as broadcast.p4's mac_fwd. */
#pragma once
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

/* Unicast by destination MAC through `macs`; a MAC it does not hold is dropped, counted. */
static __always_inline int forward_by_mac(const struct ethhdr *eth)
{
	struct mac_key key;
	__u32 *out;

	__builtin_memcpy(key.addr, eth->h_dest, ETH_ALEN);
	out = bpf_map_lookup_elem(&macs, &key);
	if (!out) {
		count(C_DROP);
		return XDP_DROP;
	}
	count(C_FWD);
	return bpf_redirect_map(&ports, *out, XDP_DROP);
}
