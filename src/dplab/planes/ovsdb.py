"""A topology's OVS bridges, ports, interfaces, QoS and controllers written into OVS's
database as OVSDB ``transact`` operations (RFC 7047), through ``ovsdb-client``.

Why not ``ovs-vsctl``: it checks each command against a cache of the whole database
that it rebuilds after every command that adds a bridge or port, so one call adding P
ports costs O(P²) in ovs-vsctl itself: 2.5 s of CPU for 2,160 ports (fat-tree k=12) and
31 s for 5,120 (k=16). Insert operations with named UUIDs cost O(P) in ovsdb-server.
A transaction goes to ``ovsdb-client`` as one argument, which the kernel caps at
MAX_ARG_BYTES, so a large topology is written in several transactions; only the last
one raises ``next_cfg``, the number ovs-vswitchd copies to ``cur_cfg`` once it has
applied the configuration (the readiness signal ``ovs-vsctl`` itself waits for).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from typing import Any

DATABASE = "Open_vSwitch"
# The kernel's limit on one argv string (MAX_ARG_STRLEN, 32 pages), less room to spare.
MAX_ARG_BYTES = 120_000


class OvsdbError(Exception):
    """ovsdb-client failed, timed out, or the server refused an operation."""


@dataclass(frozen=True)
class PortRow:
    """A bridge port with one interface of the same name (what ``add-port`` makes)."""

    name: str
    ofport: int
    iface_type: str  # "" = the datapath's ordinary port ("system"; AF_PACKET on netdev)
    max_rate_bps: int | None  # an HTB QoS at this rate (linux-htb), None = no QoS


@dataclass(frozen=True)
class BridgeRow:
    name: str
    datapath_type: str
    other_config: dict[str, str]
    fail_mode: str
    rstp: bool
    controller: str | None  # target, e.g. "tcp:127.0.0.1:6653"
    controller_max_backoff_ms: int
    controller_inactivity_probe_ms: int  # 0: never probe the controller's connection
    ports: tuple[PortRow, ...]


def add_bridges(db: str, bridges: list[BridgeRow], timeout_s: float) -> int:
    """Insert ``bridges`` into database ``db`` (an OVSDB remote, ``unix:PATH``); the
    ``next_cfg`` that ovs-vswitchd reports in ``cur_cfg`` once it has applied them all."""
    chunks = _chunks([_bridge_ops(b, i) for i, b in enumerate(bridges)])
    result: list[dict[str, Any]] = []
    for n, chunk in enumerate(chunks):
        refs = [op["uuid-name"] for ops in chunk for op in ops if op["table"] == "Bridge"]
        root: dict[str, Any] = {"op": "mutate", "table": DATABASE, "where": [],
                                "mutations": [["bridges", "insert", _set(refs, named=True)]]}
        last = n == len(chunks) - 1
        if last:
            root["mutations"].append(["next_cfg", "+=", 1])
        ops = [op for bridge_ops in chunk for op in bridge_ops] + [root]
        if last:
            ops.append({"op": "select", "table": DATABASE, "where": [],
                        "columns": ["next_cfg"]})
        result = transact(db, ops, timeout_s)
    return int(result[-1]["rows"][0]["next_cfg"])


def transact(db: str, ops: list[dict[str, Any]], timeout_s: float) -> list[dict[str, Any]]:
    """Run ``ops`` as one transaction; each operation's result. OvsdbError naming the
    first failed operation (the server aborts the whole transaction then)."""
    argv = ["ovsdb-client", f"--timeout={timeout_s:g}", "transact", db,
            json.dumps([DATABASE, *ops], separators=(",", ":"))]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False,
                              timeout=timeout_s + 5)
    except subprocess.TimeoutExpired as exc:
        raise OvsdbError(f"ovsdb-server did not answer a transaction within {timeout_s:g} s"
                         ) from exc
    if done.returncode != 0:
        raise OvsdbError(f"ovsdb-client transact failed: {done.stderr.strip()}")
    results = json.loads(done.stdout)
    for op, res in zip(ops, results, strict=False):
        if res is not None and "error" in res:
            raise OvsdbError(f"ovsdb-server refused {op['op']} into {op['table']}: "
                             f"{res['error']}: {res.get('details', '')}")
    if len(results) > len(ops):  # the server's word on the transaction as a whole
        raise OvsdbError(f"ovsdb-server refused the transaction: {results[-1]['error']}: "
                         f"{results[-1].get('details', '')}")
    return results


def _chunks(per_bridge: list[list[dict[str, Any]]]) -> list[list[list[dict[str, Any]]]]:
    """Whole bridges per transaction, each transaction's JSON under MAX_ARG_BYTES."""
    chunks: list[list[list[dict[str, Any]]]] = [[]]
    size = 0
    for ops in per_bridge:
        bytes_ = len(json.dumps(ops, separators=(",", ":")))
        if chunks[-1] and size + bytes_ > MAX_ARG_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append(ops)
        size += bytes_
    return chunks


def _bridge_ops(bridge: BridgeRow, index: int) -> list[dict[str, Any]]:
    """Inserts for one bridge: its internal port (named as the bridge, as ``add-br``
    makes it), its ports with their interfaces and QoS, its controller."""
    ops: list[dict[str, Any]] = []
    ports = [_port_ops(PortRow(bridge.name, 0, "internal", None), f"b{index}_local", ops)]
    ports += [_port_ops(port, f"b{index}_p{port.ofport}", ops) for port in bridge.ports]
    row: dict[str, Any] = {"name": bridge.name, "datapath_type": bridge.datapath_type,
                           "other_config": _map(bridge.other_config),
                           "protocols": _set(["OpenFlow13"]), "fail_mode": bridge.fail_mode,
                           "rstp_enable": bridge.rstp, "ports": _set(ports, named=True)}
    if bridge.controller is not None:
        ctl = f"b{index}_ctl"
        ops.append({"op": "insert", "table": "Controller", "uuid-name": ctl,
                    "row": {"target": bridge.controller,
                            "max_backoff": bridge.controller_max_backoff_ms,
                            "inactivity_probe": bridge.controller_inactivity_probe_ms}})
        row["controller"] = _set([ctl], named=True)
    ops.append({"op": "insert", "table": "Bridge", "uuid-name": f"b{index}", "row": row})
    return ops


def _port_ops(port: PortRow, ref: str, ops: list[dict[str, Any]]) -> str:
    """Append the inserts of ``port`` (interface, QoS, port) to ``ops``; the port's ref."""
    iface: dict[str, Any] = {"name": port.name, "type": port.iface_type}
    if port.ofport:
        iface["ofport_request"] = port.ofport
    ops.append({"op": "insert", "table": "Interface", "uuid-name": f"{ref}_if", "row": iface})
    row: dict[str, Any] = {"name": port.name, "interfaces": _set([f"{ref}_if"], named=True)}
    if port.max_rate_bps is not None:
        ops.append({"op": "insert", "table": "QoS", "uuid-name": f"{ref}_qos",
                    "row": {"type": "linux-htb",
                            "other_config": _map({"max-rate": str(port.max_rate_bps)})}})
        row["qos"] = ["named-uuid", f"{ref}_qos"]
    ops.append({"op": "insert", "table": "Port", "uuid-name": ref, "row": row})
    return ref


def _set(items: list[str], named: bool = False) -> list[Any]:
    return ["set", [["named-uuid", i] for i in items] if named else items]


def _map(items: dict[str, str]) -> list[Any]:
    return ["map", [[k, v] for k, v in items.items()]]
