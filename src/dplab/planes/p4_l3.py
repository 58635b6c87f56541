"""The p4 plane's ``program: l3`` entries (p4src/study003/l3_forward.p4) from the switches'
aggregated tables (``planes.l3_routes.lpm_tables``): built straight into P4Runtime
entities, and the same entries as an entries-file record (``dplab.p4runtime.entries``'
format, which parses back into the very same entities).

At a thousand hosts there are tens of thousands of entries (hundreds of thousands on the
largest topohub graphs); going through the entries file's readable form (a dict per entry,
then parsed and checked item by item) cost more than building the entities, so the plane
builds them once from integers with the ids its program's P4Info gives the names below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from p4.v1 import p4runtime_pb2 as pb

from dplab.p4runtime.codec import canonical_bytes, named
from dplab.p4runtime.entries import Entry
from dplab.planes.l3_routes import prefix_text

if TYPE_CHECKING:
    from p4.config.v1 import p4info_pb2

    from dplab.planes.l3_routes import SwitchTables

ROUTES, ROUTE_KEY, ROUTE_ACTION = "ipv4_lpm", "hdr.ipv4.dst_addr", "set_next_hop"
ROUTE_PARAMS = ("next_hop_mac", "own_mac", "port")
ARP, ARP_KEY, ARP_ACTION, ARP_PARAMS = "arp_fwd", "hdr.arp.target_ip", "forward", ("port",)


class ProgramMismatch(ValueError):
    """The program lacks a table, key, action or parameter the l3 entries use."""


@dataclass(frozen=True)
class _Ids:
    """One table's id, its lpm key's field id, its action's id and the action's param ids
    in the order given."""

    table: int
    key: int
    action: int
    params: tuple[int, ...]


def entries(tables: list[SwitchTables], info: p4info_pb2.P4Info) -> list[Entry]:
    """Each switch's routes, then its ARP entries, in ``tables``' order (``record``'s
    order: an entry's index is its place in the record)."""
    route, arp = (_ids(info, *names) for names in ((ROUTES, ROUTE_KEY, ROUTE_ACTION, ROUTE_PARAMS),
                                                   (ARP, ARP_KEY, ARP_ACTION, ARP_PARAMS)))
    out: list[Entry] = []
    for table in tables:
        where = [table.switch]
        own = canonical_bytes(_mac(table.own_mac))
        # One action message per next hop or port, copied into each entry that uses it.
        hops = {(port, mac): _action(route, (canonical_bytes(_mac(mac)), own,
                                             canonical_bytes(port)))
                for port, mac in {(port, mac) for _, _, port, mac in table.routes}}
        ports = {port: _action(arp, (canonical_bytes(port),))
                 for port in {port for _, _, port in table.arp}}
        for network, length, port, mac in table.routes:
            out.append(Entry(len(out), where, _entity(route, network, length, hops[port, mac])))
        for network, length, port in table.arp:
            out.append(Entry(len(out), where, _entity(arp, network, length, ports[port])))
    return out


def record(tables: list[SwitchTables]) -> list[dict[str, Any]]:
    """``entries`` as entries-file items, in the same order."""
    out: list[dict[str, Any]] = []
    for table in tables:
        out += [{"table": ROUTES, "match": {ROUTE_KEY: prefix_text(network, length)},
                 "action": ROUTE_ACTION, "switches": [table.switch],
                 "params": dict(zip(ROUTE_PARAMS, (mac, table.own_mac, port), strict=True))}
                for network, length, port, mac in table.routes]
        out += [{"table": ARP, "match": {ARP_KEY: prefix_text(network, length)},
                 "action": ARP_ACTION, "params": {"port": port}, "switches": [table.switch]}
                for network, length, port in table.arp]
    return out


def _action(ids: _Ids, values: tuple[bytes, ...]) -> pb.TableAction:
    action = pb.TableAction()
    action.action.action_id = ids.action
    for param_id, value in zip(ids.params, values, strict=True):
        action.action.params.add(param_id=param_id, value=value)
    return action


def _entity(ids: _Ids, network: int, length: int, action: pb.TableAction) -> pb.Entity:
    entity = pb.Entity()
    entry = entity.table_entry
    entry.table_id = ids.table
    match = entry.match.add()
    match.field_id = ids.key
    match.lpm.value = canonical_bytes(network)
    match.lpm.prefix_len = length
    entry.action.CopyFrom(action)
    return entity


def _ids(info: p4info_pb2.P4Info, table_name: str, key_name: str, action_name: str,
         param_names: tuple[str, ...]) -> _Ids:
    table = _named(info.tables, table_name, "table")
    keys = {field.name: field.id for field in table.match_fields}
    action = _named(info.actions, action_name, "action")
    params = {param.name: param.id for param in action.params}
    if key_name not in keys or sorted(params) != sorted(param_names):
        raise ProgramMismatch(f"table {table_name} must have key {key_name} and action "
                              f"{action_name}({', '.join(param_names)})")
    return _Ids(table.preamble.id, keys[key_name], action.preamble.id,
                tuple(params[name] for name in param_names))


def _named(objects, alias: str, what: str) -> Any:
    found = named(objects, alias)
    if found is None:
        raise ProgramMismatch(f"the program has no {what} {alias}")
    return found


def _mac(mac: str) -> int:
    return int(mac.replace(":", ""), 16)
