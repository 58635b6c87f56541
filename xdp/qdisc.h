/* Output through the kernel's qdisc for shaped ports. An XDP redirect puts a frame straight
 * into the output device's transmit routine, past its qdiscs, where a link's shaping (TBF)
 * lives. So the XDP program decides as always (lookups, learning, TTL, MACs) and, when the
 * port it chose is in `shaped`, writes that decision into the frame's XDP metadata and passes
 * the frame up; tc_qdisc, the same object's cls_bpf program on every switch port's tc ingress,
 * reads it back and redirects the skb to that port's egress (bpf_redirect without
 * BPF_F_INGRESS = dev_queue_xmit, through the qdisc). The decision is made once, by the XDP
 * program, so the two paths cannot disagree; ports not in `shaped` keep the XDP redirect.
 * Floods (l2): key FLOOD_SHAPED in `shaped` says a flood port is shaped; then every flood
 * takes this path and tc_qdisc clones the frame to each port of `flood_ports`.
 * Hairpin ports (`hairpin`: a wireless access point's wlan port, whose stations all sit behind
 * it) are the exception to "never back out of the ingress port": a flood that came in on one
 * goes back out of it too, on both paths. */
#pragma once
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "counters.h"
#include "ports.h"

#define QDISC_MAGIC 0x71646973 /* "qdis": metadata this program wrote, not a stranger's */
#define FLOOD_SHAPED 0         /* key of `shaped`: no interface has ifindex 0 */
#define FLOOD_OUT 0            /* out ifindex of a flood in the metadata */
#define MAX_FLOOD MAX_PORTS

struct qdisc_meta {
	__u32 magic;
	__u32 out; /* ifindex, or FLOOD_OUT */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PORTS + 1);
	__type(key, __u32);   /* ifindex of a shaped port (or FLOOD_SHAPED) */
	__type(value, __u32); /* unused (1) */
} shaped SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_FLOOD);
	__type(key, __u32);
	__type(value, __u32); /* ifindex of a flood port; 0 ends the list */
} flood_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PORTS);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* empty (no memory) on wired switches */
	__type(key, __u32);   /* ifindex of a hairpin port */
	__type(value, __u32); /* unused (1) */
} hairpin SEC(".maps");

static __always_inline int is_hairpin(__u32 ifindex)
{
	return bpf_map_lookup_elem(&hairpin, &ifindex) != 0;
}

/* Pass the frame up with ``meta`` in front of it. */
static __always_inline int pass_with(struct xdp_md *ctx, struct qdisc_meta meta)
{
	struct qdisc_meta *slot;

	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*slot)))
		return XDP_DROP;
	slot = (void *)(long)ctx->data_meta;
	if ((void *)(slot + 1) > (void *)(long)ctx->data)
		return XDP_DROP;
	*slot = meta;
	return XDP_PASS;
}

/* Hand the frame to tc_qdisc with its output port ``out``. */
static __always_inline int via_qdisc(struct xdp_md *ctx, __u32 out)
{
	count(C_QDISC);
	return pass_with(ctx, (struct qdisc_meta){.magic = QDISC_MAGIC, .out = out});
}

/* Pass the frame to the switch namespace's stack. A blank metadata, because an skb keeps
 * the metadata length its last XDP program set: a frame that an earlier switch sent through
 * tc_qdisc still carries that switch's decision in front of it, and an XDP_PASS that adds no
 * metadata of its own would hand that stale decision to this switch's tc_qdisc. */
static __always_inline int to_stack(struct xdp_md *ctx)
{
	count(C_PASS);
	return pass_with(ctx, (struct qdisc_meta){});
}

/* Out of port ``out``: an XDP redirect, or through its qdisc when it is shaped. */
static __always_inline int forward(struct xdp_md *ctx, __u32 out)
{
	if (bpf_map_lookup_elem(&shaped, &out))
		return via_qdisc(ctx, out);
	return bpf_redirect_map(&ports, out, XDP_DROP);
}

/* Out of every flood port but the ingress one (unless that is a hairpin port). */
static __always_inline int flood(struct xdp_md *ctx)
{
	__u32 key = FLOOD_SHAPED;

	if (bpf_map_lookup_elem(&shaped, &key))
		return via_qdisc(ctx, FLOOD_OUT);
	if (is_hairpin(ctx->ingress_ifindex))
		return bpf_redirect_map(&ports, 0, BPF_F_BROADCAST);
	return bpf_redirect_map(&ports, 0, BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS);
}

static __always_inline int flood_skb(struct __sk_buff *skb)
{
	__u32 i, key, *port;
	int back_out = is_hairpin(skb->ingress_ifindex);

	/* The lookup takes its key's address: a copy, so the counter stays in a register where
	 * the verifier can follow it (on the stack it could not prove the loop ends). */
	for (i = 0; i < MAX_FLOOD; i++) {
		key = i;
		port = bpf_map_lookup_elem(&flood_ports, &key);
		if (!port || !*port)
			break;
		if (back_out || *port != skb->ingress_ifindex)
			bpf_clone_redirect(skb, *port, 0);
	}
	return TC_ACT_SHOT;
}

SEC("tc")
int tc_qdisc(struct __sk_buff *skb)
{
	void *meta = (void *)(long)skb->data_meta;
	void *data = (void *)(long)skb->data;
	struct qdisc_meta *m = meta;

	/* No metadata of ours: the XDP program passed it to the stack (ARP, local, no route). */
	if ((void *)(m + 1) > data || m->magic != QDISC_MAGIC)
		return TC_ACT_OK;
	if (m->out == FLOOD_OUT)
		return flood_skb(skb);
	return bpf_redirect(m->out, 0);
}
