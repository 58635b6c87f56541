// SPDX-License-Identifier: GPL-2.0
/* Study 003, case I: drop every frame, counted (rx and drop of xdp/counters.h). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "counters.h"

SEC("xdp")
int xdp_drop(struct xdp_md *ctx)
{
	count(C_RX);
	count(C_DROP);
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "GPL";
