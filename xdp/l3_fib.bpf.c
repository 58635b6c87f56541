// SPDX-License-Identifier: GPL-2.0
/* Router that asks the switch namespace's kernel FIB (bpf_fib_lookup): the kernel's routes
 * and neighbour table give the output port and both MACs; TTL - 1, checksum fixed,
 * redirected. Whatever the FIB cannot finish (no neighbour entry yet, local delivery, no
 * route) goes to the stack, which resolves the neighbour so the next frames take this path. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>

#include "counters.h"
#include "ipv4.h"
#include "ports.h"
#include "qdisc.h"

#define AF_INET 2

SEC("xdp")
int xdp_fib(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct bpf_fib_lookup fib = {};
	struct iphdr *iph;

	count(C_RX);
	if ((void *)(eth + 1) > end) {
		count(C_DROP);
		return XDP_DROP;
	}
	iph = ipv4_header(eth, end);
	if (!iph || iph->ttl <= 1)
		goto pass;
	fib.family = AF_INET;
	fib.tos = iph->tos;
	fib.l4_protocol = iph->protocol;
	fib.tot_len = bpf_ntohs(iph->tot_len);
	fib.ipv4_src = iph->saddr;
	fib.ipv4_dst = iph->daddr;
	fib.ifindex = ctx->ingress_ifindex;
	if (bpf_fib_lookup(ctx, &fib, sizeof(fib), 0) != BPF_FIB_LKUP_RET_SUCCESS ||
	    !bpf_map_lookup_elem(&ports, &fib.ifindex))
		goto pass;
	ipv4_decrease_ttl(iph);
	set_macs(eth, fib.smac, fib.dmac);
	count(C_FWD);
	return forward(ctx, fib.ifindex);
pass:
	return to_stack(ctx);
}

char LICENSE[] SEC("license") = "GPL";
