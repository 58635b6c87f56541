"""Traffic workloads run between hosts of a Network; see flows.run_flows.

Kept empty on purpose: the workloads' small tools (rtp_tool, video_rtp_recv, video_player,
video_server) run as `python -m dplab.workloads.X` inside host namespaces, and importing
flows here would make each of them load scapy and the rest first (0.7 s each, several
seconds on a loaded machine, past the tools' ready deadlines).
"""
