"""Digests of a tuple type (P4_16 tuples, P4Runtime 9.9): named `digest_<n>` per call as
p4c names them, a tuple type_spec in P4Info, and the server sending their data as P4
tuples."""

from pathlib import Path

from p4.v1 import p4runtime_pb2 as pb
from test_p4_compiler import compiled

from dplab.p4.compiler import compile_with_warnings
from dplab.p4runtime.digests import Digests

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_t eth; }
struct learn_t { bit<48> src; bit<9> port; }
struct meta_t { bit<8> x; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        digest<tuple<bit<48>, bit<9>>>(1, { hdr.eth.src, sm.ingress_port });
        digest<learn_t>(1, { hdr.eth.src, sm.ingress_port });
        digest<tuple<bit<16>>>(1, { hdr.eth.type });
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_tuple_digests_are_named_per_call_with_a_tuple_type_spec(tmp_path: Path) -> None:
    path = tmp_path / "tuple_digests.p4"
    path.write_text(PROGRAM)
    ir, info = compiled(path, tmp_path / "out")
    assert [(d["name"], [f["w"] for f in d["fields"]]) for d in ir["digests"]] == [
        ("digest_0", [48, 9]), ("learn_t", [48, 9]), ("digest_1", [16])]
    by_name = {d.preamble.name: d for d in info.digests}
    assert [m.bitstring.bit.bitwidth for m in by_name["digest_0"].type_spec.tuple.members] \
        == [48, 9]
    assert by_name["learn_t"].type_spec.struct.name == "learn_t"
    assert set(info.type_info.structs) == {"learn_t"}
    _, warnings = compile_with_warnings(path)
    assert [(w.loc.line, w.reason) for w in warnings] == [
        (14, "Cannot find a good name for this digest call, using auto-generated name "
             "'digest_0'"),
        (16, "Cannot find a good name for this digest call, using auto-generated name "
             "'digest_1'")]


def test_the_server_sends_tuple_digest_data_as_a_tuple(tmp_path: Path) -> None:
    path = tmp_path / "tuple_digests.p4"
    path.write_text(PROGRAM)
    _, info = compiled(path, tmp_path / "out")
    known = {d.preamble.id: d for d in info.digests}
    ids = {d.preamble.name: d.preamble.id for d in info.digests}
    sent: list[pb.StreamMessageResponse] = []
    digests = Digests(lambda msg: sent.append(msg) is None)
    for name in ("digest_0", "learn_t"):
        digests.write(pb.Update.INSERT, pb.DigestEntry(
            digest_id=ids[name], config=pb.DigestEntry.Config(max_list_size=1)), known)
        digests.on_digest(ids[name], (b"\x01", b"\x02"))
    tuple_data, struct_data = (msg.digest.data[0] for msg in sent)
    assert [m.bitstring for m in tuple_data.tuple.members] == [b"\x01", b"\x02"]
    assert [m.bitstring for m in struct_data.struct.members] == [b"\x01", b"\x02"]
