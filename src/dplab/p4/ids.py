"""P4Info ids (docs/p4-ir.md §10): prefix byte + 24 bits from the name's SHA-256."""

import hashlib

PREFIXES = {"actions": 0x01, "tables": 0x02, "controller_headers": 0x04, "action_profiles": 0x11,
            "counters": 0x12,
            "direct_counters": 0x13, "meters": 0x14, "direct_meters": 0x15,
            "registers": 0x16, "digests": 0x17, "value_sets": 0x03}


class IdAllocator:
    def __init__(self) -> None:
        self.used: set[int] = set()

    def id_for(self, prefix: int, name: str) -> int:
        low = int.from_bytes(hashlib.sha256(name.encode()).digest()[:3], "big")
        while True:
            candidate = (prefix << 24) | (low & 0xFFFFFF)
            if candidate not in self.used and low & 0xFFFFFF:
                self.used.add(candidate)
                return candidate
            low += 1

    def assign(self, ir: dict) -> None:
        """Give every P4Info-visible object its id, in a name order independent of layout."""
        for group, prefix in PREFIXES.items():
            objects = ir[group].values() if group == "controller_headers" else ir[group]
            by_name: dict[str, int] = {}   # an action's specialisations share its id
            for obj in sorted(objects, key=lambda o: o["name"]):
                if obj["name"] not in by_name:
                    by_name[obj["name"]] = self.id_for(prefix, obj["name"])
                obj["id"] = by_name[obj["name"]]
        for action in ir["actions"]:
            for i, param in enumerate(action["params"]):
                param["id"] = i + 1
        for table in ir["tables"]:
            for i, key in enumerate(table["keys"]):
                key["id"] = i + 1
