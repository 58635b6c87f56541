"""Where `.last` / `.lastIndex` can be compiled as "the highest valid element".

The IR has no run-time stack index, so the compiler reads `hs.last` as the highest valid
element of `hs` (docs/p4-ir.md §3, Header stacks). That equals P4's element at
nextIndex - 1 only while the parser fills the stack from the bottom: `extract(hs.next)`
(and `pop_front`, which keeps that order). A parser that also extracts into, validates,
invalidates or assigns an element by index, or calls `push_front` (its new elements are
invalid yet counted by nextIndex), would get another element, so such a parser is refused
at the write.
"""

from dplab.p4.errors import Loc, P4Error

WRITES = {"extract": "extract into an element by index", "set_valid": "setValid",
          "set_invalid": "setInvalid", "copy_header": "assigning an element",
          "stack_push": "push_front"}


class StackLastCheck:
    def __init__(self, stacks: list[dict]) -> None:
        self.stacks = stacks
        self.reads: dict[int, Loc] = {}                 # stack -> its first .last/.lastIndex
        self.writes: list[tuple[int, Loc, str]] = []    # (stack, where, what)

    def read(self, stack: int, loc: Loc) -> None:
        self.reads.setdefault(stack, loc)

    def note(self, statements: list[dict], loc: Loc) -> None:
        """Records the parser statements (compiled from the source statement at `loc`) that
        change a stack element's validity other than through extract(.next)/pop_front."""
        for stmt in statements:
            what = WRITES.get(stmt["kind"])
            if what is None:
                continue
            if stmt["kind"] == "stack_push":
                self.writes.append((stmt["stack"], loc, what))
                continue
            inst = stmt.get("dst", stmt.get("inst"))
            for index, stack in enumerate(self.stacks):
                if inst in stack["instances"]:
                    self.writes.append((index, loc, what))

    def check(self) -> None:
        for stack, loc, what in self.writes:
            if stack in self.reads:
                name = self.stacks[stack]["name"]
                read = self.reads[stack]
                raise P4Error(loc, f"{what} on {name} in a parser that reads {name}.last or "
                              f".lastIndex (line {read.line}): those follow nextIndex, which "
                              "the compiler tracks only while the parser fills the stack with "
                              "extract(.next) and pop_front")
