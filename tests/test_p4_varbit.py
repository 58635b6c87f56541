"""varbit<W> header fields (dplab/p4/varbit.py): the IR they lower to, IPv4 with options
through the real switch (tests/p4/ipv4_options.p4), and bad programs with their locations."""

import socket
import struct
from pathlib import Path

import pytest
from switch_rig import ipv4_checksum, ir_folder, mac, outputs
from test_p4_compiler import compile_error, compiled

ROOT = Path(__file__).resolve().parents[1]
OPTS = ROOT / "tests" / "p4" / "ipv4_options.p4"
ETH = mac("02:00:00:00:02:02") + mac("02:00:00:00:01:01")
PAYLOAD = bytes(range(64, 96))


def ipv4_frame(options: bytes, ttl: int = 64, ihl: int | None = None,
               cut: int = 0) -> bytes:
    """Eth + IPv4 with `options` (ihl from their length unless given) + PAYLOAD, a correct
    checksum; `cut` bytes dropped from the end."""
    ihl = 5 + len(options) // 4 if ihl is None else ihl
    header = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, 20 + len(options) + len(PAYLOAD),
                         7, 0, ttl, 17, 0, socket.inet_aton("10.0.0.1"),
                         socket.inet_aton("10.0.0.2")) + options
    header = header[:10] + struct.pack("!H", ipv4_checksum(header)) + header[12:]
    frame = ETH + b"\x08\x00" + header + PAYLOAD
    return frame[:len(frame) - cut]


def forwarded(frame: bytes) -> bytes:
    """What the program should send: TTL - 1, checksum recomputed, options intact."""
    ihl = frame[14] & 0xF
    header = bytearray(frame[14:14 + 4 * ihl])
    header[8] -= 1
    header[10:12] = b"\0\0"
    header[10:12] = struct.pack("!H", ipv4_checksum(bytes(header)))
    return frame[:14] + bytes(header) + frame[14 + 4 * ihl:]


def error_frame(frame: bytes, code: int, cursor: int) -> bytes:
    """The program's answer to a parser error: eth with the code, then the unparsed rest
    of the frame from the parser's cursor."""
    return ETH + struct.pack("!H", code) + frame[cursor:]


OPT4 = b"\x94\x04\x00\x00"                            # router alert
OPT40 = bytes([0x07, 39, 4]) + bytes(range(1, 37)) + b"\x00"   # record route, 40 bytes

SHORT = ipv4_frame(OPT40, cut=len(PAYLOAD) + 12)
# name -> (frame in, port out, frame out)
CASES = {
    "no options": (ipv4_frame(b""), 2, forwarded(ipv4_frame(b""))),
    "4 bytes of options": (ipv4_frame(OPT4), 2, forwarded(ipv4_frame(OPT4))),
    "40 bytes of options": (ipv4_frame(OPT40), 2, forwarded(ipv4_frame(OPT40))),
    # (4 - 5) * 32 wraps to 0xffe0 bits: checked before anything of hdr.opts is read
    "ihl 4: size over 320 bits -> HeaderTooShort": (
        ipv4_frame(b"", ihl=4), 3, error_frame(ipv4_frame(b"", ihl=4), 4, 34)),
    # nothing of hdr.opts was read: invalid, and its bytes are the payload (BMv2's
    # extract_VL checks the whole header is there first)
    "ihl 15, the frame ends in the options -> PacketTooShort": (
        SHORT, 3, error_frame(SHORT, 1, 34)),
}


def test_varbit_lowers_to_one_byte_header_instances(tmp_path: Path) -> None:
    ir, _ = compiled(OPTS, tmp_path)
    names = {i["name"]: n for n, i in enumerate(ir["instances"])}
    chunks = [names[f"hdr.opts.options[{i}]"] for i in range(40)]
    assert ir["instances"][names["hdr.opts"]]["bits"] == 0
    assert all(ir["instances"][c]["fields"] == [{"name": "b", "w": 8, "offset": 0}]
               for c in chunks)
    assert ir["deparser"]["emit"] == [names["hdr.eth"], names["hdr.ipv4"], names["hdr.opts"],
                                      *chunks]
    body = next(s for s in ir["parser"]["states"] if s["name"] == "ipv4")["body"]
    assert [s["kind"] for s in body] == ["extract", "assign", "verify", "verify", "verify",
                                         "extract", *["if"] * 40]
    assert [s["error"] for s in body[2:5]] == [ir["errors"].index("HeaderTooShort"),
                                               ir["errors"].index("ParserInvalidArgument"),
                                               ir["errors"].index("PacketTooShort")]
    # the options' fixed fields (none) and the size must fit in what is left
    assert body[4]["cond"]["a"] == {"op": "remaining", "w": 32}
    assert body[-1]["then"] == [{"kind": "extract", "inst": chunks[-1]}]
    update = ir["controls"]["compute_checksum"]["body"][0]
    assert len(update["data"]) == 11 + 40 and update["algo"] == "csum16"


MIDDLE = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; varbit<32> v; bit<16> b; }
header g_t { varbit<32> w; }
struct headers_t { h_t h; h_t k; g_t g; }
struct meta_t { bit<8> x; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h, (bit<32>)hdr.h.minSizeInBits()); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.k = hdr.h;
        hdr.g.w = hdr.h.v;
        hdr.h.b = hdr.h.b + 1;
        meta.x = (bit<8>)hdr.h.minSizeInBytes();
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_varbit_in_the_middle_copies_and_min_size(tmp_path: Path) -> None:
    path = tmp_path / "middle.p4"
    path.write_text(MIDDLE)
    ir, _ = compiled(path, tmp_path / "out")
    names = {i["name"]: n for n, i in enumerate(ir["instances"])}
    h = [names["hdr.h"], *(names[f"hdr.h.v[{i}]"] for i in range(4)), names["hdr.h.v$tail"]]
    k = [names["hdr.k"], *(names[f"hdr.k.v[{i}]"] for i in range(4)), names["hdr.k.v$tail"]]
    g = [names[f"hdr.g.w[{i}]"] for i in range(4)]
    assert ir["deparser"]["emit"] == h + k + [names["hdr.g"]] + g
    body = ir["controls"]["ingress"]["body"]
    assert body[:6] == [{"kind": "copy_header", "dst": d, "src": s}
                        for d, s in zip(k, h, strict=True)]
    assert body[6:10] == [{"kind": "copy_header", "dst": d, "src": s}
                          for d, s in zip(g, h[1:5], strict=True)]
    assert body[10]["dst"] == {"inst": h[-1], "field": 0}       # b lives in the tail
    assert body[11]["src"] == {"op": "const", "w": 8, "v": hex(3)}   # (8 + 16) / 8
    start = ir["parser"]["states"][0]["body"]
    assert start[0]["src"] == {"op": "const", "w": 32, "v": hex(24)}


HEADER = "header ipv4_opts_t { varbit<320> options; }"
EXTRACT = "pkt.extract(hdr.opts, (bit<32>)(((bit<16>)hdr.ipv4.ihl - 5) * 32));"
BAD = [
    ("struct meta_t { }", "struct meta_t { varbit<8> m; }", 26,
     "metadata field m of meta_t must be bit<W>, bool, a header or a struct of them: "
     "varbit<8> in metadata is not supported"),
    (HEADER, "header ipv4_opts_t { varbit<320> options; varbit<8> more; }", 42,
     "header ipv4_opts_t has a second varbit field 'more': a header may hold at most one"),
    (EXTRACT, "pkt.extract(hdr.opts);", 3, "header ipv4_opts_t has a varbit field: extract "
     "it with its size, extract(hdr, bit<32> sizeInBits)"),
    (EXTRACT, "pkt.extract(hdr.ipv4, 32);", 3, "extract with a size needs a header with a "
     "varbit field; ipv4_t has none"),
    ("sm.egress_spec = 2;", "if (hdr.opts.options == hdr.opts.options) { exit; }", 12,
     "varbit field options is not a value here: a varbit can only be assigned from another "
     "of its width, extracted, emitted or summed by a csum16 checksum"),
    ("sm.egress_spec = 2;", "hdr.ipv4.src = hdr.opts.options;", 23,
     "varbit field options is not a value here: a varbit can only be assigned from another "
     "of its width, extracted, emitted or summed by a csum16 checksum"),
    ("sm.egress_spec = 2;", "hdr.opts.options = hdr.ipv4.src;", 27,
     "cannot assign bit<32> to varbit<320>: only a varbit<320> field can be assigned to it"),
    (HEADER, "header ipv4_opts_t { varbit<12> options; }", 21,
     "varbit<12>: the maximum width must be a multiple of 8 in 8..2048"),
    ("{ hdr.ipv4.version,", "{ hdr.opts.options, hdr.ipv4.version,", 0,
     "varbit field options in checksum data is supported only as the last item with "
     "HashAlgorithm.csum16"),
    ("struct headers_t { eth_t eth; ipv4_t ipv4; ipv4_opts_t opts; }",
     "struct headers_t { eth_t eth; ipv4_t ipv4; ipv4_opts_t opts; ipv4_opts_t[2] s; }", 61,
     "a header stack of header type ipv4_opts_t, which has a varbit field, is not supported"),
    ("sm.egress_spec = 2;", "ipv4_opts_t t;", 0, "local variable t of header type "
     "ipv4_opts_t, which has a varbit field, is not supported"),
]


@pytest.mark.parametrize(("old", "new", "col_offset", "reason"), BAD)
def test_bad_varbit_programs_give_exact_locations(tmp_path: Path, old: str, new: str,
                                                  col_offset: int, reason: str) -> None:
    text = OPTS.read_text()
    line = next(i for i, s in enumerate(text.splitlines(), 1) if old in s)
    col = text.splitlines()[line - 1].index(old) + 1 + col_offset
    error = compile_error(text.replace(old, new, 1), tmp_path)
    assert (error.line, error.col, error.reason) == (line, col, reason)


@pytest.fixture(scope="module")
def ir_dir(tmp_path_factory):
    return ir_folder(tmp_path_factory, "varbit")


@pytest.mark.net
def test_ipv4_options_through_the_switch(ir_dir: Path) -> None:
    got = outputs(OPTS, ir_dir, 3, {name: frame for name, (frame, _, _) in CASES.items()})
    assert got == {name: {port: [out]} for name, (_, port, out) in CASES.items()}
