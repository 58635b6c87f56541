"""Traffic classes: which flows belong together in one row of a comparison table.

A class is a flow kind plus its parameters, so two UDP workloads at 10 and 100 Mbit/s stay
apart ("udp rate_mbit=10", "udp rate_mbit=100") while a kind used with one parameter set is
simply called by its kind ("tcp").
"""

from __future__ import annotations

import json
from typing import Any

FlowKey = tuple[str, str]  # (run_id, flow_id)


def traffic_labels(flows: list[dict[str, Any]]) -> dict[FlowKey, str]:
    """(run_id, flow_id) -> traffic class label, from rows of the store's ``flows`` table."""
    variants: dict[str, list[str]] = {}
    for row in flows:
        known = variants.setdefault(row["kind"], [])
        if row["params"] not in known:
            known.append(row["params"])
    names = {kind: _variant_names(kind, params) for kind, params in variants.items()}
    return {
        (row["run_id"], row["flow_id"]): names[row["kind"]][row["params"]] for row in flows
    }


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
