"""Traffic classes: which flows belong together in one row of a comparison table.

A class is a flow kind plus its parameters, so two UDP workloads at 10 and 100 Mbit/s stay
apart ("udp rate_mbit=10", "udp rate_mbit=100") while a kind used with one parameter set is
simply called by its kind ("tcp").
"""

from __future__ import annotations

import json
from typing import Any

FlowKey = tuple[str, str]  # (run_id, flow_id)


def traffic_labels(flows: list[dict[str, Any]],
                   axes: frozenset[str] = frozenset()) -> dict[FlowKey, str]:
    """(run_id, flow_id) -> traffic class label, from rows of the store's ``flows`` table.
    Parameters named in ``axes`` are the experiment's axes: a UDP flow at 10 and at 100
    Mbit/s is then one class measured at two axis points, not two classes."""
    params = {(row["run_id"], row["flow_id"]): _without(row["params"], axes) for row in flows}
    variants: dict[str, list[str]] = {}
    for row in flows:
        known = variants.setdefault(row["kind"], [])
        if params[(row["run_id"], row["flow_id"])] not in known:
            known.append(params[(row["run_id"], row["flow_id"])])
    names = {kind: _variant_names(kind, found) for kind, found in variants.items()}
    return {key: names[row["kind"]][params[key]]
            for row in flows for key in [(row["run_id"], row["flow_id"])]}


def _without(params_json: str, axes: frozenset[str]) -> str:
    if not axes:
        return params_json
    kept = {k: v for k, v in json.loads(params_json).items() if k not in axes}
    return json.dumps(kept, sort_keys=True)


def _variant_names(kind: str, params_json: list[str]) -> dict[str, str]:
    """Name each parameter set of one kind by the parameters that tell it apart."""
    if len(params_json) == 1:
        return {params_json[0]: kind}
    parsed = [json.loads(p) for p in params_json]
    keys = sorted({k for p in parsed for k in p})
    differing = [k for k in keys if len({json.dumps(p.get(k)) for p in parsed}) > 1]
    return {
        raw: f"{kind} " + ", ".join(f"{k}={p.get(k)}" for k in differing)
        for raw, p in zip(params_json, parsed, strict=True)
    }
