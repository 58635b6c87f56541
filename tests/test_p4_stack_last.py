"""`.last` / `.lastIndex` of a header stack in a parser (docs/p4-ir.md §3, Header stacks):
right on the switch while the parser fills the stack with extract(.next) and pop_front;
refused, at the write, when the parser also writes elements by index or calls push_front."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import switch_rig as rig_mod
from switch_rig import Rig, mac
from test_p4_compiler import compile_error

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
header label_t { bit<7> val; bit<1> bos; }
header seen_t { bit<8> last_val; bit<32> last_index; }
struct headers { eth_t eth; seen_t seen; label_t[4] s; }
struct metadata { bit<8> last_val; bit<32> last_index; }
parser P(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.eth);
        transition select(hdr.eth.etype) { 0x88b5: labels; default: accept; }
    }
    state labels {
        packet.extract(hdr.s.next);
        transition select(hdr.s.last.bos) { 1: done; default: labels; }
    }
    state done {
        hdr.s.pop_front(1);
        WRITE
        meta.last_val = (bit<8>)hdr.s.last.val;
        meta.last_index = hdr.s.lastIndex;
        transition accept;
    }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        hdr.seen.setValid();
        hdr.seen.last_val = meta.last_val;
        hdr.seen.last_index = meta.last_index;
    }
}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.eth); packet.emit(hdr.seen); packet.emit(hdr.s); }
}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
DST, SRC = "02:00:00:00:02:02", "02:00:00:00:01:01"
# WRITE -> (column of the statement on line 19, what the error names)
REFUSED = {
    "hdr.s[2].setValid();": (9, "setValid on hdr.s"),
    "hdr.s[0].setInvalid();": (9, "setInvalid on hdr.s"),
    "packet.extract(hdr.s[1]);": (9, "extract into an element by index on hdr.s"),
    "hdr.s.push_front(1);": (9, "push_front on hdr.s"),
    "hdr.s[3] = hdr.s[0];": (9, "assigning an element on hdr.s"),
}


def labels_frame(values: list[int]) -> bytes:
    """Ethernet + one label per value, the last with bottom-of-stack set, then padding."""
    stack = bytes((v << 1) | (i == len(values) - 1) for i, v in enumerate(values))
    frame = mac(DST) + mac(SRC) + b"\x88\xb5" + stack
    return frame + bytes(60 - len(frame))


@pytest.mark.parametrize("write", REFUSED)
def test_index_writes_with_last_are_refused_at_the_write(tmp_path: Path, write: str) -> None:
    error = compile_error(PROGRAM.replace("WRITE", write), tmp_path)
    col, what = REFUSED[write]
    assert (error.line, error.col) == (19, col)
    assert what in error.reason and "(line 15)" in error.reason


def test_index_writes_without_last_compile(tmp_path: Path) -> None:
    text = PROGRAM.replace("WRITE", "hdr.s[2].setValid();")
    text = text.replace("(bit<8>)hdr.s.last.val", "8w0").replace("hdr.s.lastIndex", "32w0")
    text = text.replace("hdr.s.last.bos", "hdr.s[0].bos")
    path = tmp_path / "ok.p4"
    path.write_text(text)
    rig_mod.compile_p4(path, tmp_path / "out")


@pytest.mark.net
def test_last_after_pop_front_on_the_switch(tmp_path_factory) -> None:
    """Labels 5, 6, 7 are extracted with .next until .last.bos; pop_front(1) drops 5, so
    .last is 7 at lastIndex 1. A single label popped leaves lastIndex = nextIndex - 1 =
    0xFFFFFFFF (P4_16 8.18). Both as the switch writes them into the `seen` header."""
    folder = rig_mod.ir_folder(tmp_path_factory, "stack_last")
    source = folder / "stack_last.p4"
    source.write_text(PROGRAM.replace("WRITE", ""))
    ir_path = rig_mod.compile_p4(source, folder)
    with Rig(n_ports=2) as rig:
        rig.load(ir_path)
        rig.drain()
        rig.send(1, labels_frame([5, 6, 7]))
        rig.send(1, labels_frame([9]))
        got = rig.capture()
    three, one = got[2]
    assert struct.unpack("!BI", three[14:19]) == (7, 1)
    assert list(three[19:21]) == [6 << 1, (7 << 1) | 1]     # the popped stack: 6, 7
    assert struct.unpack("!I", one[15:19]) == (0xFFFFFFFF,)
    assert len(three) == len(labels_frame([5, 6, 7])) + 5 - 1   # + seen, - popped label
