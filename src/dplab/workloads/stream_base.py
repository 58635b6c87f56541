"""What every stream workload (voip, video, pps: the kinds that run their own processes,
see ``flows.StreamFlows``) starts with: its network, its flows and their parameters,
checked up front so a bad flow fails before any process starts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from dplab.workloads.flows import Flow, FlowNetwork

P = TypeVar("P")


class StreamWorkload(Generic[P]):
    """The flows of one kind in one ``run_flows`` call; ``params[i]`` belongs to
    ``flows[i]``. ``validate(params, where)`` is the kind's own parameter check."""

    def __init__(self, net: FlowNetwork, flows: Sequence[Flow],
                 validate: Callable[[dict, str], P]) -> None:
        self.net = net
        self.flows = list(flows)
        self.params: list[P] = [validate(f.params, f"flow '{f.flow_id}'") for f in self.flows]
