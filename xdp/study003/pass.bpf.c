// SPDX-License-Identifier: GPL-2.0
/* Study 003, case II: hand every frame to the node's own network stack (XDP_PASS), counted;
 * the stack then does with it what it would without XDP (here: route it, ip_forward on). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "counters.h"

SEC("xdp")
int xdp_to_stack(struct xdp_md *ctx)
{
	count(C_RX);
	count(C_PASS);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
