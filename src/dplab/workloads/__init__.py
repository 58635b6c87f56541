"""Traffic workloads (ping, iperf) run between hosts of a Network; see flows.run_flows."""

from dplab.workloads.flows import Flow, FlowResult, run_flows

__all__ = ["Flow", "FlowResult", "run_flows"]
