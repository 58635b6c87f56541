// SPDX-License-Identifier: GPL-2.0
/* Switch under the lab's controller (control/forwarding.py's rule set): ARP and LLDP always
 * go to the controller; path rules match in_port, eth_src and eth_dst exactly and forward to
 * one port; a miss goes to the controller. A frame for the controller travels whole through
 * a ring buffer (the packet-in) and is dropped here: the controller sends it on itself. Each
 * rule keeps the time of its last hit, from which the controller expires idle rules, and
 * the packets it forwarded, from which the lab tells the path each flow took. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "counters.h"
#include "ports.h"
#include "qdisc.h"

#define ETH_P_LLDP 0x88CC
#define MAX_FRAME 2048 /* a power of two above a whole frame at MTU 1500 (1514 B) */

struct rule_key {
	__u32 in_port; /* ifindex */
	__u8 eth_src[ETH_ALEN];
	__u8 eth_dst[ETH_ALEN];
};

struct rule {
	__u32 out_port; /* ifindex */
	__u32 pad;
	__u64 last_hit_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 packets;     /* hits; several CPUs may hit one rule at once: atomic adds */
};

struct packet_in {
	__u32 in_port; /* ifindex */
	__u32 len;     /* bytes of frame that are the frame */
	__u8 frame[MAX_FRAME];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct rule_key);
	__type(value, struct rule);
} rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} packet_ins SEC(".maps");

static __always_inline int to_controller(struct xdp_md *ctx, __u32 in_port)
{
	__u32 whole = ctx->data_end - ctx->data;
	/* The mask only shows the verifier the bound that the test below already ensures. */
	__u32 len = whole & (MAX_FRAME - 1);
	struct packet_in *msg;

	if (whole >= MAX_FRAME || len < 1) {
		count(C_DROP);
		return XDP_DROP;
	}
	msg = bpf_ringbuf_reserve(&packet_ins, sizeof(*msg), 0);
	if (!msg) { /* the controller is behind: the frame is lost, as a full channel loses it */
		count(C_DROP);
		return XDP_DROP;
	}
	msg->in_port = in_port;
	msg->len = len;
	if (bpf_xdp_load_bytes(ctx, 0, msg->frame, len) < 0) {
		bpf_ringbuf_discard(msg, 0);
		count(C_DROP);
		return XDP_DROP;
	}
	bpf_ringbuf_submit(msg, 0);
	count(C_CONTROLLER);
	return XDP_DROP;
}

SEC("xdp")
int xdp_ctl(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct rule_key key = {.in_port = ctx->ingress_ifindex};
	struct rule *rule;

	count(C_RX);
	if ((void *)(eth + 1) > end) {
		count(C_DROP);
		return XDP_DROP;
	}
	if (eth->h_proto == bpf_htons(ETH_P_ARP) || eth->h_proto == bpf_htons(ETH_P_LLDP))
		return to_controller(ctx, key.in_port);
	__builtin_memcpy(key.eth_src, eth->h_source, ETH_ALEN);
	__builtin_memcpy(key.eth_dst, eth->h_dest, ETH_ALEN);
	rule = bpf_map_lookup_elem(&rules, &key);
	if (!rule)
		return to_controller(ctx, key.in_port);
	rule->last_hit_ns = bpf_ktime_get_ns();
	__sync_fetch_and_add(&rule->packets, 1);
	count(C_FWD);
	return forward(ctx, rule->out_port);
}

char LICENSE[] SEC("license") = "GPL";
