"""Priorities of a table's initial entries (P4_16 spec 1.2.4+, "Entry priorities").

The source may give `priority = N :` per entry, and the table the properties
`largest_priority_wins` (default true) and `priority_delta` (default 1). The IR, the switch
and P4Runtime always use P4Runtime's convention: a larger priority wins, every priority
is at least 1. A `largest_priority_wins = false` table (TDI's convention: smaller wins, 0
allowed) is turned around: priority p becomes (largest p in the table + 1) - p.
"""

from collections.abc import Callable

from dplab.p4.errors import Loc, P4Error
from dplab.p4.syntax import Node
from dplab.p4.types import BoolType

PRIORITY_KINDS = {"ternary", "range", "optional"}
MAX_PRIORITY = 2**31 - 1   # P4Runtime's TableEntry.priority is an int32


class Settings:
    """A table's `largest_priority_wins` and `priority_delta`."""

    def __init__(self, largest_wins: bool = True, delta: int = 1) -> None:
        self.largest_wins = largest_wins
        self.delta = delta


def settings(props: dict[str, Node], evaluate: Callable[[Node], object]) -> Settings:
    """``evaluate`` gives a property value's Val (its constant and type)."""
    out = Settings()
    if "largest_priority_wins" in props:
        node = props["largest_priority_wins"].value
        val = evaluate(node)
        if val.const is None or not isinstance(val.type, BoolType):
            raise P4Error(node.loc, "largest_priority_wins must be true or false")
        out.largest_wins = bool(val.const)
    if "priority_delta" in props:
        node = props["priority_delta"].value
        val = evaluate(node)
        if val.const is None or val.const < 1:
            raise P4Error(node.loc, "priority_delta must be a positive integer constant")
        out.delta = val.const
    return out


def entry_priorities(entries: list[Node], keys: list[dict], is_const: bool, rules: Settings,
                     evaluate: Callable[[Node], object],
                     warn: Callable[[Loc, str], None]) -> list[int]:
    """The IR priority of each entry, in source order; ``warn`` hears of priorities p4c
    warns about (two entries with one priority, entries out of priority order)."""
    given = [e.priority for e in entries]
    explicit = next((p for p in given if p is not None), None)
    annotated = [e.priority_annotation for e in entries]
    if any(annotated):
        return _annotated(annotated, explicit, evaluate)
    if explicit is None:
        source = _numbered(entries, rules)
    else:
        _check_allowed(explicit, entries[0], keys, is_const)
        source = _propagated(entries, [_explicit(p, rules, evaluate) for p in given
                                       if p is not None], rules)
        _check_order(entries, source, rules, warn)
    return _largest_wins(source, rules)


def _annotated(annotated: list[Node | None], explicit: Node | None,
               evaluate: Callable[[Node], object]) -> list[int]:
    """`@priority(N)` entries, as p4c's BMv2 back end reads them: an annotated entry has
    priority N, any other its position (1, 2, ...), and the smallest number wins; turned
    around to the IR's larger-wins (largest number + 1 - N)."""
    if explicit is not None:
        raise P4Error(explicit.loc, "entries give priorities both as @priority(N) and as "
                      "'priority = N': use one")
    numbers = []
    for position, node in enumerate(annotated):
        if node is None:
            numbers.append(position + 1)
            continue
        val = evaluate(node.value)
        if val.const is None or not 0 <= val.const < MAX_PRIORITY:
            raise P4Error(node.loc, f"@priority needs an integer constant in "
                          f"0..{MAX_PRIORITY - 1}")
        numbers.append(val.const)
    top = max(numbers) + 1
    return [top - n for n in numbers]


def _check_order(entries: list[Node], values: list[int], rules: Settings,
                 warn: Callable[[Loc, str], None]) -> None:
    """As p4c (frontends/p4/entryPriorities.cpp): entries listed from winning to losing."""
    first_with: dict[int, Node] = {}
    for position, (entry, value) in enumerate(zip(entries, values, strict=True)):
        if value in first_with:
            warn(entry.loc, f"this entry and the one on line {first_with[value].loc.line} "
                 f"have the same priority {value}: which wins is undefined")
        first_with.setdefault(value, entry)
        before = values[position - 1] if position else None
        if before is not None and (value > before if rules.largest_wins else value < before):
            warn(entry.loc, f"this entry (priority {value}) wins over the one before it "
                 f"(priority {before}): entries are out of priority order")


def _limit(rules: Settings) -> int:
    """The largest source priority: a turned-around table adds one to its largest."""
    return MAX_PRIORITY if rules.largest_wins else MAX_PRIORITY - 1


def _numbered(entries: list[Node], rules: Settings) -> list[int]:
    """No entry gives one: 1, 1 + delta, ... from the entry that loses to all others."""
    count = len(entries)
    order = range(count - 1, -1, -1) if rules.largest_wins else range(count)
    out = [0] * count
    for step, position in enumerate(order):
        out[position] = 1 + step * rules.delta
        if out[position] > _limit(rules):
            raise P4Error(entries[position].loc, f"this entry's priority works out to "
                          f"{out[position]}, above {_limit(rules)}")
    return out


def _check_allowed(explicit: Node, first: Node, keys: list[dict], is_const: bool) -> None:
    if is_const:  # as p4c: `const entries` take no priorities
        raise P4Error(explicit.loc, "entries of 'const entries' cannot have priorities "
                      "(use 'entries' with 'const' entries)")
    if not any(k["match"] in PRIORITY_KINDS for k in keys):
        raise P4Error(explicit.loc, "this table has no ternary, range or optional key: its "
                      "entries take no priority")
    if first.priority is None:
        raise P4Error(first.loc, "the first entry must give its priority when any entry "
                      "gives one")


def _explicit(node: Node, rules: Settings, evaluate: Callable[[Node], object]) -> int:
    val = evaluate(node.value)
    least = 1 if rules.largest_wins else 0
    if val.const is None or val.const < least:
        raise P4Error(node.loc, f"a priority must be an integer constant >= {least}")
    if val.const > _limit(rules):
        raise P4Error(node.loc, f"a priority must be at most {_limit(rules)}")
    return val.const


def _propagated(entries: list[Node], values: list[int], rules: Settings) -> list[int]:
    """An entry without one follows the entry before it, by priority_delta towards
    losing."""
    explicit = iter(values)
    out: list[int] = []
    for entry in entries:
        if entry.priority is not None:
            out.append(next(explicit))
            continue
        step = -rules.delta if rules.largest_wins else rules.delta
        value = out[-1] + step
        if not 1 <= value <= _limit(rules):
            raise P4Error(entry.loc, f"this entry's priority works out to {value} (the "
                          f"previous one's {'minus' if step < 0 else 'plus'} priority_delta), "
                          f"outside 1..{_limit(rules)}")
        out.append(value)
    return out


def _largest_wins(values: list[int], rules: Settings) -> list[int]:
    if rules.largest_wins or not values:
        return values
    top = max(values) + 1
    return [top - v for v in values]
