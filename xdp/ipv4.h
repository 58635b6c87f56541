/* IPv4 forwarding steps shared by the routers: find the header, age it, rewrite the MACs. */
#pragma once
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_endian.h>

/* The IPv4 header after an Ethernet header, or NULL when the frame is not (whole) IPv4. */
static __always_inline struct iphdr *ipv4_header(struct ethhdr *eth, void *end)
{
	struct iphdr *iph = (void *)(eth + 1);

	if (eth->h_proto != bpf_htons(ETH_P_IP) || (void *)(iph + 1) > end)
		return NULL;
	return iph;
}

/* TTL - 1 with the checksum updated incrementally (RFC 1624), as the kernel's
 * ip_decrease_ttl(): the TTL is the high byte of its 16-bit word. */
static __always_inline void ipv4_decrease_ttl(struct iphdr *iph)
{
	__u32 check = (__u32)iph->check + (__u32)bpf_htons(0x0100);

	iph->check = (__sum16)(check + (check >= 0xFFFF));
	iph->ttl--;
}

static __always_inline void set_macs(struct ethhdr *eth, const __u8 *src, const __u8 *dst)
{
	__builtin_memcpy(eth->h_source, src, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, dst, ETH_ALEN);
}
