// SPDX-License-Identifier: GPL-2.0
/* VLAN tagging at a Linux bridge's access ports, for the bridge plane's option `vlan`:
 * tc (cls_bpf, direct action) on the switch port facing a host. On ingress, `tc_vlan_push`
 * tags what the host sent with the VLAN id in map `vlan_id` before the bridge sees it; on
 * egress, `tc_vlan_pop` takes the tag off what the bridge sends to the host. The bridge has
 * no VLAN filtering: it forwards tagged frames by MAC, and they cross the switch links
 * tagged. One VLAN per network: pop removes whatever tag the frame carries. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} vlan_id SEC(".maps");

SEC("tc")
int tc_vlan_push(struct __sk_buff *skb)
{
	__u32 zero = 0;
	__u32 *vid = bpf_map_lookup_elem(&vlan_id, &zero);

	/* An id of 0 means the loader has not written it yet: nothing may cross untagged. */
	if (!vid || *vid == 0)
		return TC_ACT_SHOT;
	/* The tag goes into the skb's metadata (vlan_tci); the kernel writes it into the frame
	 * when it leaves by a switch link, as it does for any accelerated tag. */
	if (bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), *vid))
		return TC_ACT_SHOT;
	return TC_ACT_OK;
}

SEC("tc")
int tc_vlan_pop(struct __sk_buff *skb)
{
	/* Handles the tag in the skb's metadata and one still in the frame alike; an untagged
	 * frame passes unchanged. */
	if (bpf_skb_vlan_pop(skb))
		return TC_ACT_SHOT;
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
