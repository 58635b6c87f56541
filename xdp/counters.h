/* Per-switch packet counters, one slot per event, per CPU so no packet ever waits on a lock.
 * The order of enum counter is a contract with src/dplab/xdp/programs.py (COUNTERS). */
#pragma once
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

enum counter {
	C_RX,    /* every frame the program saw */
	C_FWD,   /* redirected out of one port */
	C_FLOOD, /* redirected to every flood port but the ingress one */
	C_PASS,  /* handed to the switch namespace's own stack (ARP, local, no route yet) */
	C_DROP,  /* dropped: off the spanning tree, back out of its ingress, malformed */
	C_LEARN, /* l2: a source MAC learned or moved */
	C_CONTROLLER, /* reactive: handed to the controller (a packet-in) */
	C_TX,    /* answered out of its ingress port (XDP_TX: study 003's echo server) */
	C_QDISC, /* handed to tc_qdisc: out through a shaped port's qdisc (xdp/qdisc.h) */
	C_MAX,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, C_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *slot = bpf_map_lookup_elem(&counters, &which);

	if (slot)
		*slot += 1;
}
