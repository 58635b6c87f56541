"""VERIFY compares each P4Info object's shape with the IR's, not only its id: a P4Info whose
table has the right id but other match fields, action refs or size is refused, naming the
object and the difference (dplab.p4.p4info_shape, called by dplab.p4runtime.pipeline_check).
"""

import json
from pathlib import Path

import grpc
import p4runtime_rig
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4runtime_rig import compile_with_info

from dplab.p4.p4info_shape import p4info_mismatch

HERE = Path(__file__).resolve().parent
SET_PIPELINE = pb.SetForwardingPipelineConfigRequest


def _table(info: p4info_pb2.P4Info, alias: str) -> p4info_pb2.Table:
    return next(t for t in info.tables if t.preamble.alias == alias)


def _widen_key(info):
    _table(info, "fwd_lpm").match_fields[0].bitwidth = 48


def _drop_action_ref(info):
    del _table(info, "fwd_lpm").action_refs[0]


def _resize(info):
    _table(info, "acl").size = 7


def _key_kind(info):
    _table(info, "fwd_lpm").match_fields[0].match_type = p4info_pb2.MatchField.EXACT


def _param_width(info):
    next(a for a in info.actions if a.params).params[0].bitwidth = 3


def _counter_unit(info):
    info.counters[0].spec.unit = p4info_pb2.CounterSpec.PACKETS


def _register_size(info):
    info.registers[0].size = 99


def _rename_table(info):
    _table(info, "acl").preamble.name = "RtIngress.other"


# mutation -> (kind of object named, words of the difference)
MUTATIONS = {
    _widen_key: ("table RtIngress.fwd_lpm", "match fields"),
    _drop_action_ref: ("table RtIngress.fwd_lpm", "action refs"),
    _resize: ("table RtIngress.acl", "its size: 7; the program's: 64"),
    _key_kind: ("table RtIngress.fwd_lpm", "'EXACT'"),
    _param_width: ("action ", "params"),
    _counter_unit: ("counter RtIngress.port_counter", "unit: PACKETS; the program's: BOTH"),
    _register_size: ("register RtIngress.scratch", "size: 99"),
    _rename_table: ("table RtIngress.other", "name: RtIngress.other"),
}


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_with_info(HERE / "p4" / "rt_features.p4", tmp_path_factory.mktemp("p4"))


def test_the_compilers_own_p4info_matches(program) -> None:
    ir_path, info = program
    assert p4info_mismatch(info, json.loads(ir_path.read_text())) is None


def test_annotations_aliases_and_order_do_not_matter(program) -> None:
    ir_path, info = program
    other = p4info_pb2.P4Info()
    other.CopyFrom(info)
    other.tables[0].preamble.alias = "x"
    other.tables[0].preamble.annotations.append("@mine")
    other.actions.reverse()
    refs = list(other.tables[0].action_refs)
    del other.tables[0].action_refs[:]
    other.tables[0].action_refs.extend(reversed(refs))
    assert p4info_mismatch(other, json.loads(ir_path.read_text())) is None


@pytest.mark.parametrize("mutate", MUTATIONS, ids=lambda m: m.__name__.strip("_"))
def test_a_changed_object_is_named_with_its_difference(program, mutate) -> None:
    ir_path, info = program
    changed = p4info_pb2.P4Info()
    changed.CopyFrom(info)
    mutate(changed)
    found = p4info_mismatch(changed, json.loads(ir_path.read_text()))
    what, difference = MUTATIONS[mutate]
    assert found is not None and what in found and difference in found, found


served = p4runtime_rig.served
ctl = p4runtime_rig.ctl


@pytest.mark.net
def test_verify_refuses_a_p4info_of_the_wrong_shape(ctl, program) -> None:
    """Over real gRPC: every VERIFY action gets INVALID_ARGUMENT with the object and the
    difference in its message; the running pipeline keeps its entries and P4Info."""
    rig, client, n = ctl
    ir_path, info = program
    changed = p4info_pb2.P4Info()
    changed.CopyFrom(info)
    _widen_key(changed)
    config = pb.ForwardingPipelineConfig(p4info=changed, p4_device_config=ir_path.read_bytes())
    for action in (SET_PIPELINE.VERIFY, SET_PIPELINE.VERIFY_AND_COMMIT):
        req = SET_PIPELINE(device_id=1, election_id=client.election, action=action,
                           config=config)
        with pytest.raises(grpc.RpcError) as refused:
            client.stub.SetForwardingPipelineConfig(req)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "RtIngress.fwd_lpm" in refused.value.details()
        assert "bitwidth" in refused.value.details()
    got = client.stub.GetForwardingPipelineConfig(pb.GetForwardingPipelineConfigRequest(
        device_id=1)).config
    assert got.p4info == info and rig.switch_alive()
