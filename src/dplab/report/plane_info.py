"""How each plane ran (the store's ``plane_info``: OVS's datapath and port type, the P4
switch's transmit mode, ...), one line per plane for the report's top."""

from __future__ import annotations

from typing import Any

NOTE = ("What each plane's runs used to forward, as the plane stated it when the run was "
        "stored; runs stored before planes recorded it show nothing.")


def describe(rows: list[dict[str, Any]]) -> dict[str, str]:
    """plane label -> "key: value; ..." in the order the plane gave them; a key whose value
    differs between the plane's runs lists every value seen."""
    seen: dict[str, dict[str, list[str]]] = {}
    for row in rows:
        values = seen.setdefault(row["plane"], {}).setdefault(row["key"], [])
        if row["value"] not in values:
            values.append(row["value"])
    return {plane: "; ".join(f"{key}: {' | '.join(values)}" for key, values in facts.items())
            for plane, facts in seen.items()}
