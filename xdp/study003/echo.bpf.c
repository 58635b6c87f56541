// SPDX-License-Identifier: GPL-2.0
/* Study 003, case III: an echo server in the switch. An IPv4 echo request (type 8 code 0, no
 * IP options, unfragmented) goes back out of its ingress port (XDP_TX) as the reply: MACs
 * and addresses swapped, TTL 64, type 0; the ICMP checksum updated incrementally for the
 * type's change (RFC 1624 eqn. 3; the payload is never read), the IPv4 header's recomputed.
 * Everything else crosses by the `fwd` map (ingress ifindex -> output ifindex, written from
 * the entries file), as echo.p4's port_fwd; no entry: dropped. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "counters.h"
#include "ports.h"

/* linux/icmp.h pulls in libc headers a BPF target cannot build: the echo header here. */
struct icmp_echo {
	__u8 type;
	__u8 code;
	__sum16 checksum;
	__be16 id;
	__be16 sequence;
};

#define ICMP_ECHOREPLY 0
#define ICMP_ECHO 8
#define IP_MF_OFFSET 0x3fff /* more-fragments flag and fragment offset */
#define REPLY_TTL 64

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} fwd SEC(".maps");

static __always_inline __u16 fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)((sum & 0xffff) + (sum >> 16));
}

static __always_inline void ipv4_checksum(struct iphdr *iph)
{
	__u16 *word = (__u16 *)iph;
	__u32 sum = 0;
	int i;

	iph->check = 0;
#pragma unroll
	for (i = 0; i < (int)(sizeof(*iph) / 2); i++)
		sum += word[i];
	iph->check = (__sum16)~fold(sum);
}

/* The echo request as its reply, in place; 0 when the frame is no request to answer. */
static __always_inline int make_reply(struct ethhdr *eth, void *end)
{
	struct iphdr *iph = (void *)(eth + 1);
	struct icmp_echo *icmp = (void *)(iph + 1);
	__u8 mac[ETH_ALEN];
	__u32 addr, sum;

	if ((void *)(icmp + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return 0;
	if (iph->ihl != 5 || iph->protocol != IPPROTO_ICMP ||
	    (iph->frag_off & bpf_htons(IP_MF_OFFSET)))
		return 0;
	if (icmp->type != ICMP_ECHO || icmp->code != 0)
		return 0;
	__builtin_memcpy(mac, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, mac, ETH_ALEN);
	addr = iph->saddr;
	iph->saddr = iph->daddr;
	iph->daddr = addr;
	iph->ttl = REPLY_TTL;
	ipv4_checksum(iph);
	/* HC' = ~(~HC + ~m + m') with m = type 8 code 0 (0x0800), m' = 0 */
	sum = (__u16)~bpf_ntohs(icmp->checksum) + (__u16)~(ICMP_ECHO << 8);
	icmp->type = ICMP_ECHOREPLY;
	icmp->checksum = bpf_htons((__u16)~fold(sum));
	return 1;
}

SEC("xdp")
int xdp_echo(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 in = ctx->ingress_ifindex;
	__u32 *out;

	count(C_RX);
	if ((void *)((struct ethhdr *)data + 1) <= end && make_reply(data, end)) {
		count(C_TX);
		return XDP_TX;
	}
	out = bpf_map_lookup_elem(&fwd, &in);
	if (!out) {
		count(C_DROP);
		return XDP_DROP;
	}
	count(C_FWD);
	return bpf_redirect_map(&ports, *out, XDP_DROP);
}

char LICENSE[] SEC("license") = "GPL";
