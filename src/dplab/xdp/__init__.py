"""eBPF/XDP programs of the xdp plane: the libbpf binding, namespaces, loaded programs."""
