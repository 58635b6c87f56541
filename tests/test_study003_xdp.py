"""Study 003 in XDP: users' own programs on the xdp plane (compiled at start, maps filled from
an entries file) and the five use cases proven by the packets the hosts receive, through the
feasibility matrix's own observers (dplab.study003.matrix); a broken program refused with
clang's located error; nothing left attached or loaded after a normal end, an exception and
Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_plane_xdp import bpf_fds, kernel_maps_of, xdp_attached

from dplab import planes, runner
from dplab.plan import build_plan
from dplab.planes import PlaneError
from dplab.spec import load
from dplab.study003 import matrix
from dplab.study003.frames import snmp
from dplab.substrate import Network, reclaim_stale, registry
from dplab.topology import catalog
from dplab.xdp.user import UserProgramError, load_entries

ROOT = Path(__file__).resolve().parents[1]
ECHO = ROOT / "xdp" / "study003" / "echo.bpf.c"
ECHO_MAPS = ROOT / "xdp" / "study003" / "echo_maps.yaml"


def unshaped(hosts: int):
    """The study's one switch: a user's program runs only where no switch port has a qdisc
    to skip (its redirects pass them by), so the links have no rate."""
    return catalog.build("single", hosts=hosts, edge_bw=None)


@pytest.mark.parametrize(("text", "error"), [
    ("entries: {map: fwd}", "expected a list"),
    ("- {map: fwd, key: [{u32: 1}]}", "entry 0: needs 'map', 'key' and 'value'"),
    ("- {map: fwd, key: [{u32: 1}], value: [{u32: 1}], port: 2}", "unknown keys"),
    ("- {map: fwd, key: [{u16: 70000}], value: [{u32: 1}]}", "key field 0 .u16.: 70000"),
    ("- {map: fwd, key: [{mac: '02:00'}], value: [{u32: 1}]}", "not a MAC"),
    ("- {map: fwd, key: [{ipv4: 10.0.0.300}], value: [{u32: 1}]}", "key field 0 .ipv4."),
    ("- {map: fwd, key: [{u24: 1}], value: [{u32: 1}]}", "unknown field type"),
    ("- {map: fwd, key: [{u32: 1}], value: [{hex: zz}]}", "value field 0 .hex."),
])
def test_bad_map_entries_are_refused_naming_file_entry_and_field(tmp_path, text, error):
    path = tmp_path / "maps.yaml"
    path.write_text(text)
    with pytest.raises(UserProgramError, match=error) as raised:
        load_entries(path)
    assert str(path) in str(raised.value)
    with pytest.raises(PlaneError, match=error):  # before anything runs
        planes.create("xdp", {"program": str(ECHO), "maps": str(path)})


def test_entries_encode_fields_in_struct_order():
    (first, _) = load_entries(ECHO_MAPS)
    assert first.encode(lambda port: 40 + port) == (bytes([41, 0, 0, 0]), bytes([42, 0, 0, 0]))
    assert matrix.markdown({"pass": {"p4": matrix.Cell(False, "why"),
                                     "xdp": matrix.Cell(True, "seen")}}).splitlines()[2] == \
        "| II pass | ✗ why | ✓ |"
    with pytest.raises(PlaneError, match="'mode' and 'program'"):
        planes.create("xdp", {"program": str(ECHO), "mode": "l2"})
    with pytest.raises(PlaneError, match="'maps' goes with 'program'"):
        planes.create("xdp", {"maps": str(ECHO_MAPS)})


@pytest.mark.net
def test_a_broken_program_is_refused_with_the_compilers_located_error(tmp_path):
    source = tmp_path / "broken.bpf.c"
    source.write_text(ECHO.read_text().replace("count(C_TX);", "count(C_TX)\n"))
    line = ECHO.read_text()[:ECHO.read_text().index("count(C_TX);")].count("\n") + 1
    plane = planes.create("xdp", {"program": str(source), "maps": str(ECHO_MAPS)})
    with Network(unshaped(2)) as net, \
            pytest.raises(PlaneError, match=rf"broken\.bpf\.c:{line}:\d+: error: expected ';'"):
        plane.start(net)
    assert bpf_fds() == []


@pytest.mark.net
@pytest.mark.parametrize("case", matrix.CASES)
def test_each_use_case_in_xdp_is_proven_by_its_packets(case):
    cell = matrix.observe(case, "xdp")
    seen = cell.evidence
    assert cell.feasible, cell.reason
    if case == "drop":
        assert seen["arrived"] == 0 and seen["drops_counted"] >= seen["sent"]
    elif case == "pass":
        assert seen["ping_ok"] and seen["stack_forwarded"] >= 2 * matrix.FRAMES
    elif case == "echo":
        assert seen["valid_replies"] == seen["requests"] == matrix.FRAMES
        assert seen["requests_at_target"] == seen["target_in_echos"] == 0
    elif case == "l3":
        assert [seen[m]["evidence"]["right"] for m in ("l3", "l3-fib")] == [matrix.FRAMES] * 2
    else:
        for variant in ("devmap", "xdp+tc"):
            for sender, copies in seen[variant]["evidence"]["copies"].items():
                assert copies == {h: 0 if h == sender else 1 for h in copies}, variant
        # The hybrid's copies came from tc: XDP passed every broadcast, tc cloned each one.
        hybrid = seen["xdp+tc"]["evidence"]["counters"]
        assert hybrid["pass"] >= len(seen["xdp+tc"]["evidence"]["copies"]) <= hybrid["flood"]
        assert seen["devmap"]["evidence"]["counters"]["pass"] == 0
    assert bpf_fds() == []


@pytest.mark.net
def test_a_program_that_does_not_answer_is_no_echo_server(tmp_path, monkeypatch):
    """The matrix's ✗: the echo program with its answer cut out forwards the requests by its
    map entries, so they reach h2 and h2's stack answers them (valid replies, but not the
    node's)."""
    folder = tmp_path / "study003"
    folder.mkdir()
    (folder / "echo.bpf.c").write_text(ECHO.read_text().replace(
        "&& make_reply(data, end)", "&& 0 && make_reply(data, end)"))
    (folder / "echo_maps.yaml").write_text(ECHO_MAPS.read_text())
    monkeypatch.setattr(matrix, "XDP_DIR", folder)
    cell = matrix.observe("echo", "xdp")
    assert not cell.feasible
    assert cell.evidence["requests_at_target"] == matrix.FRAMES
    assert cell.evidence["target_in_echos"] == matrix.FRAMES
    assert f"{matrix.FRAMES} requests and {matrix.FRAMES} InEchos at the target" in cell.reason


def test_the_xdp_scenarios_are_valid():
    for path in sorted((ROOT / "scenarios").glob("study003_xdp_*.yaml")):
        build_plan(load(path), str(path))


@pytest.mark.net
def test_echo_scenario_through_the_runner(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the scenario names its program and maps from the root
    experiment = load(ROOT / "scenarios" / "study003_xdp_echo.yaml")
    seen: dict[str, dict[str, int]] = {}
    real_run_flows = runner.run_flows

    def run_and_look(net, flows):
        results = real_run_flows(net, flows)
        seen["h2"] = snmp(net, net.host_ns("h2"), "Icmp")
        return results

    monkeypatch.setattr(runner, "run_flows", run_and_look)
    store = runner.run_matrix(experiment, tmp_path / "results")
    (run,) = store.rows("runs")
    assert (run["status"], run["error"]) == ("ok", None)
    summary = {row["metric"]: row["value"] for row in store.rows("summaries")}
    assert summary["packets_received"] == experiment.workloads[0].count
    assert seen["h2"]["InEchos"] == 0
    stats = {row["stat"]: row["value"] for row in store.rows("plane_stats")}
    assert stats["xdp_tx"] >= experiment.workloads[0].count  # the program answered them


@pytest.mark.net
def test_an_exception_detaches_a_users_program_and_frees_its_maps():
    options = {"program": str(ECHO), "maps": str(ECHO_MAPS)}
    with pytest.raises(ZeroDivisionError), \
            planes.running("xdp", options, unshaped(2), 10) as (net, p):
        prefix, build = net.prefix, Path(p._build_dir.name)
        assert xdp_attached(net) and (build / "echo.o").is_file()
        1 / 0  # noqa: B018
    assert bpf_fds() == [] and kernel_maps_of(prefix) == []
    assert not build.exists()


def tc_state(net: Network, ns: str, port: str) -> tuple[list[str], list[dict]]:
    """(qdisc kinds, ingress filters) of interface ``port`` in namespace ``ns``."""
    qdiscs = json.loads(net.run(ns, ["tc", "-j", "qdisc", "show", "dev", port]).stdout)
    filters = net.run(ns, ["tc", "-j", "filter", "show", "dev", port, "ingress"],
                      check=False).stdout
    return [q["kind"] for q in qdiscs], json.loads(filters or "[]")


@pytest.mark.net
def test_the_hybrids_tc_filters_go_with_the_plane():
    plane = planes.create("xdp", {"program": str(ROOT / "xdp/study003/broadcast_tc.bpf.c"),
                                  "maps": str(ROOT / "xdp/study003/broadcast_tc_maps.yaml")})
    with Network(unshaped(4)) as net:
        ns, port = net.switch_ns("s1"), net.switch_ports("s1")[1]
        try:
            plane.start(net)
            kinds, filters = tc_state(net, ns, port)
            assert "clsact" in kinds and any(f.get("kind") == "bpf" for f in filters)
        finally:
            plane.stop()
        assert "clsact" not in tc_state(net, ns, port)[0]
        assert xdp_attached(net) == [] and bpf_fds() == []


CHILD = textwrap.dedent("""
    import sys, time
    from dplab import planes
    from dplab.substrate import cleanup_on_signals
    from dplab.topology import catalog
    cleanup_on_signals()
    options = {"program": sys.argv[1], "maps": sys.argv[2]}
    topo = catalog.build("single", hosts=2, edge_bw=None)
    with planes.running("xdp", options, topo, 10) as (net, p):
        print(net.prefix, p._build_dir.name, flush=True)
        time.sleep(60)
""")


@pytest.mark.net
def test_ctrl_c_leaves_no_users_program_map_or_build():
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(ECHO), str(ECHO_MAPS)],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    prefix, build = child.stdout.readline().split()
    assert registry.PREFIX_RE.match(prefix), f"child printed {prefix!r}"
    assert kernel_maps_of(prefix, wait_s=0)
    child.send_signal(signal.SIGINT)
    child.wait(timeout=20)
    try:
        assert kernel_maps_of(prefix) == []
        assert registry.netns_with_prefix(prefix) == []
        assert not Path(build).exists()
    finally:
        reclaim_stale()
