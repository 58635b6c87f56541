// SPDX-License-Identifier: GPL-2.0
/* Study 003, case V on a wireless access point: the AP's stations all share its one wlan
 * port, so a broadcast needs no copies at all: the frame goes back out of the port it came
 * in on (XDP_TX) and the medium carries it to every station (the study's XDP wireless
 * broadcast). Unicast by the `macs` map as broadcast.bpf.c (a station's frames to another
 * station go back out of the same port too); unknown unicast and runts dropped. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

#include "mac_fwd.h"

SEC("xdp")
int xdp_broadcast_wireless(struct xdp_md *ctx)
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
		count(C_TX);
		return XDP_TX;
	}
	return forward_by_mac(eth);
}

char LICENSE[] SEC("license") = "GPL";
