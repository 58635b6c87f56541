// SPDX-License-Identifier: GPL-2.0
/* XDP_PASS on the host side of a link: a veth accepts frames another veth's XDP program
 * redirects into it only while its peer runs XDP itself (veth_xdp_xmit needs the receiving
 * end's NAPI, which XDP or GRO turns on). This program changes nothing else. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
