"""The complex pipeline (study 002's "workload complexity"): EXTRA_LOOKUPS match-action
lookups per packet on top of the plain forwarding, each matching and doing nothing but count,
as an ACL or counter table does when no rule denies.

- P4: ``p4_program`` copies a program and writes, where its two marker comments stand, the
  tables ``extra_lookup_0..39`` (ternary keys on the Ethernet header, no entries) applied
  in sequence; each one's default action counts the packet in cell i of the counter
  ``extra_lookups``, so reading the cells shows every table looked up once per packet.
- OVS: ``ovs_flows`` gives tables 0..39 a catch-all rule that goes to the next table; the
  plane's forwarding starts at table EXTRA_LOOKUPS. Each rule's n_packets counts its
  lookups.
- userspace: the forwarder's own tables (switch/fwd/src/pipeline.rs), EXTRA_LOOKUPS of them
  in its configuration, each counting its hits.
"""

from __future__ import annotations

from pathlib import Path

from dplab.planes.base import PlaneError

EXTRA_LOOKUPS = 40
PIPELINES = ("plain", "complex")
COUNTER = "extra_lookups"
MARK_DECLARATIONS = "// @extra_lookups declarations"
MARK_APPLY = "// @extra_lookups apply"


class PipelineError(ValueError):
    """A program that cannot take the extra lookups (its file and what is missing)."""


def check_option(name: object, kind: str) -> None:
    """PlaneError unless ``name``, plane ``kind``'s option ``pipeline``, is one we have."""
    if name not in PIPELINES:
        raise PlaneError(f"plane {kind}: option 'pipeline' must be one of "
                         f"{', '.join(PIPELINES)}, not {name!r}")


def info(name: str) -> dict[str, str]:
    """The plane's ``info()`` line for pipeline ``name``."""
    extra = f" ({EXTRA_LOOKUPS} extra lookups per packet)" if name == "complex" else ""
    return {"pipeline": name + extra}


def check_markers(program: Path) -> str:
    """The program's text, or PipelineError when a marker comment is missing."""
    text = program.read_text()
    for mark in (MARK_DECLARATIONS, MARK_APPLY):
        if text.count(mark) != 1:
            raise PipelineError(f"{program}: a complex pipeline needs the comment "
                                f"'{mark}' exactly once (in the ingress control)")
    return text


def p4_program(program: Path, out_dir: Path) -> Path:
    """``program`` with the extra lookups, written to ``out_dir/<name>_complex.p4``."""
    text = check_markers(program)
    declarations = [f"counter({EXTRA_LOOKUPS}, CounterType.packets) {COUNTER};",
                    "action extra_pass(bit<32> slot) {", f"    {COUNTER}.count(slot);", "}"]
    for i in range(EXTRA_LOOKUPS):
        declarations += [
            f"table extra_lookup_{i} {{",
            "    key = {",
            "        hdr.ethernet.src_addr: ternary;",
            "        hdr.ethernet.dst_addr: ternary;",
            "        hdr.ethernet.ether_type: ternary;",
            "    }",
            "    actions = { extra_pass; }",
            f"    default_action = extra_pass({i});",
            "    size = 64;",
            "}"]
    applies = [f"extra_lookup_{i}.apply();" for i in range(EXTRA_LOOKUPS)]
    text = text.replace(MARK_DECLARATIONS, "\n    ".join(declarations))
    text = text.replace(MARK_APPLY, "\n        ".join(applies))
    out = out_dir / f"{program.stem}_complex.p4"
    out.write_text(text)
    return out


def ovs_flows() -> list[str]:
    """ovs-ofctl flow lines of the extra tables, each going on to the next. Priority 1 keeps
    them above the NORMAL rule OVS gives a standalone bridge without a controller."""
    return [f"table={i},priority=1,actions=goto_table:{i + 1}" for i in range(EXTRA_LOOKUPS)]
