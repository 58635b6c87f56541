"""P4Info ids as p4c assigns them (docs/p4-ir.md §10; p4c control-plane/p4RuntimeSymbolTable.cpp).

An object's id is its P4Info prefix byte over 24 bits: an `@id(n)` annotation's, or else
the low 24 bits of the Jenkins one-at-a-time hash of its fully qualified name, probing
upward on a collision. Names are hashed in sorted order after all `@id`s are taken, so a
program's ids equal p4c's. Match fields, action parameters and packet-metadata fields are
numbered 1..n in declaration order, an `@id` taking its number out of the sequence.
"""

from dataclasses import dataclass

from dplab.p4.errors import Loc, P4Error
from dplab.p4.syntax import Node

PREFIXES = {"actions": 0x01, "tables": 0x02, "value_sets": 0x03, "controller_headers": 0x04,
            "action_profiles": 0x11, "counters": 0x12, "direct_counters": 0x13,
            "meters": 0x14, "direct_meters": 0x15, "registers": 0x16, "digests": 0x17}
LOW_BITS = 0xFFFFFF


@dataclass(frozen=True)
class GivenId:
    """An `@id(n)` annotation: its value and where it was written."""

    value: int
    loc: Loc


def given_id(node: Node) -> GivenId | None:
    """The node's `@id(n)`, None without one."""
    tokens = getattr(node, "annos", {}).get("id")
    if tokens is None:
        return None
    if len(tokens) != 1 or tokens[0].kind != "int" or not 0 <= tokens[0].value < 2**32:
        loc = tokens[0].loc if tokens else node.loc
        raise P4Error(loc, "@id takes one unsigned 32-bit integer: @id(0x01000001)")
    return GivenId(tokens[0].value, tokens[0].loc)


def jenkins_one_at_a_time(text: str) -> int:
    """Bob Jenkins' one-at-a-time hash of the text's bytes, 32 bits."""
    value = 0
    for byte in text.encode():
        value = (value + byte) & 0xFFFFFFFF
        value = (value + (value << 10)) & 0xFFFFFFFF
        value ^= value >> 6
    value = (value + (value << 3)) & 0xFFFFFFFF
    value ^= value >> 11
    return (value + (value << 15)) & 0xFFFFFFFF


def field_ids(given: list[GivenId | None]) -> list[int]:
    """Ids of fields in declaration order (p4c's FieldIdAllocator): an `@id` is kept, the
    others take their position 1..n, moving up past ids already taken."""
    taken: set[int] = set()
    for item in given:
        if item is None:
            continue
        if item.value == 0:
            raise P4Error(item.loc, "0 is not a valid @id")
        if item.value in taken:
            raise P4Error(item.loc, f"@id {item.value} is used twice here")
        taken.add(item.value)
    out = []
    candidate = 1
    for item in given:
        if item is not None:
            out.append(item.value)
            candidate += 1
            continue
        while candidate in taken:
            candidate += 1
        taken.add(candidate)
        out.append(candidate)
    return out


def symbol_name(group: str, obj: dict) -> str:
    """The name p4c hashes: a controller header's is its header type's, not its role."""
    return obj["type_name"] if group == "controller_headers" else obj["name"]


class IdAllocator:
    def __init__(self) -> None:
        self.used: set[int] = set()
        self.given: dict[tuple[str, str], GivenId] = {}   # (group, name) -> its @id

    def note(self, group: str, name: str, node: Node) -> None:
        """Remembers the `@id` of the object of `group` called `name`, if it has one."""
        found = given_id(node)
        if found is not None:
            self.given.setdefault((group, name), found)

    def assign(self, ir: dict) -> None:
        """Gives every P4Info-visible object its id: the `@id`s first, then hashed names."""
        symbols = {group: self._symbols(group, ir) for group in PREFIXES}
        chosen: dict[tuple[str, str], int] = {}
        for (group, name), found in self.given.items():
            if name in symbols[group]:
                chosen[(group, name)] = self._take_given(PREFIXES[group], found)
        for group in sorted(PREFIXES, key=PREFIXES.get):
            for name in sorted(symbols[group]):
                if (group, name) not in chosen:
                    chosen[(group, name)] = self._hashed(PREFIXES[group], name)
        for group, by_name in symbols.items():
            for name, objects in by_name.items():
                for obj in objects:   # an action's specialisations share its id
                    obj["id"] = chosen[(group, name)]

    @staticmethod
    def _symbols(group: str, ir: dict) -> dict[str, list[dict]]:
        objects = ir[group].values() if group == "controller_headers" else ir[group]
        out: dict[str, list[dict]] = {}
        for obj in objects:
            out.setdefault(symbol_name(group, obj), []).append(obj)
        return out

    def _take_given(self, prefix: int, found: GivenId) -> int:
        """As p4c: an id without a prefix byte gets the object's; another type's is wrong."""
        top = found.value >> 24
        if top not in (0, prefix):
            raise P4Error(found.loc, f"@id {found.value:#010x} has prefix byte {top:#04x}; "
                          f"this object's ids have {prefix:#04x}")
        value = found.value | prefix << 24
        if value in self.used:
            raise P4Error(found.loc, f"@id {value:#010x} is given to two objects")
        self.used.add(value)
        return value

    def _hashed(self, prefix: int, name: str) -> int:
        low = jenkins_one_at_a_time(name)
        for step in range(LOW_BITS + 1):
            candidate = prefix << 24 | (low + step) & LOW_BITS
            if candidate not in self.used:
                self.used.add(candidate)
                return candidate
        raise P4Error(Loc("<program>", 1, 1), f"no P4Info id is left for {name}")
