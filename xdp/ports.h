/* The switch's forwarding ports, keyed and valued by ifindex: the target of every redirect
 * (a devmap bulks frames per output port) and, in l2, the flood set of a broadcast. The lab
 * writes it from the switch's namespace: the kernel resolves a devmap's ifindex there. */
#pragma once
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define MAX_PORTS 256

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} ports SEC(".maps");
