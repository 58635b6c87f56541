"""The Ray executor on a Ray cluster of two nodes started on this machine (Ray's own
multi-node test utility), each node offering one dplab_slot: real runs measured on the
nodes, their rows and files gathered into the driver's results folder."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import ray
from ray import cluster_utils

from dplab.executor.ray import SLOT
from dplab.plan import ExperimentError, build_plan
from dplab.runner import run_plan
from dplab.spec import SpecError, parse

MATRIX = """
name: ray-matrix
topology: {name: single, params: {hosts: 2}}
planes: [bridge, router]
repetitions: 2
workloads:
  - {kind: icmp, pairs: [[h1, h2]], count: 3, interval: 0.05}
capture: [h1]
"""

LONG_PING = """
name: ray-node-lost
topology: {name: single, params: {hosts: 2}}
planes: [bridge]
workloads:
  - {kind: icmp, pairs: [[h1, h2]], count: 40, interval: 0.1}
"""


def test_a_ray_address_without_the_ray_executor_is_refused_naming_both_fields():
    with pytest.raises(SpecError, match="ray_address is given but executor is 'local'"):
        parse(MATRIX + "ray_address: 10.0.0.1:6379\n")
    exp = parse(MATRIX + "executor: ray\nray_address: 10.0.0.1:6379\n")
    assert (exp.executor, exp.ray_address) == ("ray", "10.0.0.1:6379")


def test_a_head_that_does_not_answer_is_refused_at_once(tmp_path):
    began = time.monotonic()
    with pytest.raises(ExperimentError, match="cannot reach the cluster's head at 127.0.0.1:1"):
        run_plan(_plan(MATRIX), tmp_path, ray_address="127.0.0.1:1")
    assert time.monotonic() - began < 30  # not ray.init's minutes of retries
    assert not (tmp_path / "runs.parquet").exists()


@pytest.fixture(scope="module")
def cluster():
    made = cluster_utils.Cluster()
    made.add_node(num_cpus=0)  # the head: schedules, runs no run (it offers no slot)
    nodes = [made.add_node(num_cpus=1, resources={SLOT: 1}) for _ in range(2)]
    made.wait_for_nodes()
    ray.init(address=made.address)
    yield made, nodes
    ray.shutdown()
    made.shutdown()


def _plan(text: str):
    return build_plan(parse(text), "<test>")


def _by_run(store, table: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in store.rows(table):
        out.setdefault(row["run_id"], []).append(row)
    return out


def _shape(store) -> dict[str, tuple]:
    """Per run what must match between executors (values differ run to run)."""
    runs = {r["run_id"]: r for r in store.rows("runs")}
    flows, summaries = _by_run(store, "flows"), _by_run(store, "summaries")
    stats, info = _by_run(store, "plane_stats"), _by_run(store, "plane_info")
    return {run_id: (run["status"], run["plane"], run["repetition"],
                     sorted((f["flow_id"], f["kind"], f["src"], f["dst"], f["ok"])
                            for f in flows[run_id]),
                     sorted({s["metric"] for s in summaries[run_id]}),
                     sorted({s["stat"] for s in stats[run_id]}),
                     sorted((i["key"], i["value"]) for i in info.get(run_id, [])))
            for run_id, run in runs.items()}


@pytest.fixture(scope="module")
def local_matrix(tmp_path_factory) -> tuple[Path, object]:
    folder = tmp_path_factory.mktemp("local")
    return folder, run_plan(_plan(MATRIX), folder)


@pytest.mark.net
def test_a_matrix_on_two_nodes_stores_the_rows_a_local_run_stores(cluster, local_matrix,
                                                                   tmp_path):
    made, _ = cluster
    said: list[str] = []
    store = run_plan(_plan(MATRIX), tmp_path, said.append, ray_address=made.address)
    local_folder, local_store = local_matrix
    assert _shape(store) == _shape(local_store)
    assert {r["status"] for r in store.rows("runs")} == {"ok"}
    finished = [m for m in said if ": ok on " in m]
    assert len(finished) == 4
    nodes = {m.split(" on ")[1].split(" in ")[0] for m in finished}
    assert len(nodes) == 2, said  # both nodes ran runs, one at a time each
    assert "runs per node" in finished[-1] and "4/4 done" in finished[-1]
    # each run's capture came back from its node into this results folder, packets and all
    for run_id in _shape(store):
        pcap = tmp_path / "pcap" / run_id / "h1-eth0.pcap"
        assert pcap.stat().st_size > 200
        assert (local_folder / "pcap" / run_id / "h1-eth0.pcap").exists()


@pytest.mark.net
def test_resume_on_ray_skips_the_runs_a_folder_holds(cluster, local_matrix):
    made, _ = cluster
    folder, local_store = local_matrix
    before = local_store.rows("runs")
    said: list[str] = []
    store = run_plan(_plan(MATRIX), folder, said.append, ray_address=made.address)
    assert sorted(m for m in said if "already stored, skipped" in m) == sorted(
        f"{r['run_id']}: already stored, skipped" for r in before)
    assert "ray: 0 runs on 2 nodes" in said
    assert store.rows("runs") == before


def _descends_from(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return False


def _node_running_ping(nodes, deadline: float):
    """The node whose raylet has a ping process below it (a run in its traffic)."""
    while time.monotonic() < deadline:
        for pid_dir in Path("/proc").glob("[0-9]*"):
            try:
                if (pid_dir / "comm").read_text().strip() != "ping":
                    continue
            except OSError:
                continue
            for node in nodes:
                raylet = node.all_processes["raylet"][0].process.pid
                if _descends_from(int(pid_dir.name), raylet):
                    return node
        time.sleep(0.1)
    raise AssertionError("no run's ping started on a node")


@pytest.mark.net
def test_a_run_whose_node_is_lost_is_stored_failed_and_queued_again_once(cluster, tmp_path):
    made, nodes = cluster
    said: list[str] = []
    stores = []
    driver = threading.Thread(target=lambda: stores.append(
        run_plan(_plan(LONG_PING), tmp_path, said.append, ray_address=made.address)))
    driver.start()
    lost = _node_running_ping(nodes, time.monotonic() + 60)
    made.remove_node(lost, allow_graceful=False)
    driver.join(timeout=90)
    assert not driver.is_alive()
    [store] = stores
    failed = [m for m in said if "FAILED: node lost:" in m]
    assert len(failed) == 1, said
    assert "bridge-r1: queued again" in said
    [run] = store.rows("runs")
    assert run["status"] == "ok", run["error"]  # the second try, on the node left
    [finished] = [m for m in said if ": ok on " in m]
    assert lost.node_id[:8] not in finished
