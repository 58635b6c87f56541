"""`dplab run` under hostile text and signal storms: every run stored, nothing left behind,
and the closing message says what is true."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import pytest

from dplab.store import RunStore
from dplab.substrate import registry

pytestmark = pytest.mark.net

# Labels and an option value in rich's markup syntax: they must print and store as written.
MARKUP_EXPERIMENT = """
name: markup
topology: {name: single, params: {hosts: 2}}
planes:
  - {kind: bridge, label: "br[/x]"}
workloads: [{kind: icmp, pairs: [[h1, h2]], count: 2, interval: 0.05}]
"""
BAD_PLANE = '  - {kind: bridge, label: "bad[/y]", options: {stp: "[/z]"}}\n'


# Traffic long enough that the storm starts while the network is up; eight hosts so the
# teardown is long enough for the storm to land in it (a storm every 5 ms left namespaces
# behind in 4 of 6 tries when teardown held back SIGINT only).
STORM_EXPERIMENT = """
name: storm
topology: {name: single, params: {hosts: 8}}
planes: [bridge]
workloads: [{kind: icmp, pairs: [[h1, h2]], count: 100, interval: 0.05}]
"""


def dplab_run(tmp_path, text: str) -> subprocess.Popen:
    (tmp_path / "exp.yaml").write_text(text)
    return subprocess.Popen([sys.executable, "-m", "dplab.cli", "run", "exp.yaml",
                             "--results", "res"], cwd=tmp_path, stderr=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


def test_markup_in_labels_and_errors_is_printed_and_every_run_stored(tmp_path):
    # A bad option is refused when the plan is made, before any run; the error as written.
    bad = MARKUP_EXPERIMENT.replace("workloads:", BAD_PLANE + "workloads:")
    refused = dplab_run(tmp_path, bad)
    _out, err = refused.communicate(timeout=120)
    assert refused.returncode == 2, err
    assert "planes.1.options.stp" in err and "'[/z]'" in err
    run = dplab_run(tmp_path, MARKUP_EXPERIMENT)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    runs = {row["plane"]: row for row in RunStore.open(tmp_path / "res").rows("runs")}
    assert runs["br[/x]"]["status"] == "ok"
    assert "br[/x]" in out and "br[/x]-r1: building" in err  # a table column, a progress line


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_storm_during_teardown_leaves_nothing(tmp_path, signum):
    run = dplab_run(tmp_path, STORM_EXPERIMENT)
    assert run.stderr is not None
    prefix = None
    for line in run.stderr:  # the runner says "network up (dlXXXX)" once it is built
        found = re.search(r"network up \((dl[0-9a-f]{4})\)", line)
        if found:
            prefix = found.group(1)
            break
    assert prefix, "the runner never announced its network"
    while run.poll() is None:  # the first signal starts the teardown, the rest hit it
        run.send_signal(signum)
        time.sleep(0.005)
    rest = run.stderr.read()
    assert run.returncode == 128 + signum
    assert registry.netns_with_prefix(prefix) == []
    assert not (registry.RECORD_DIR / f"{prefix}.json").exists()
    assert "terminated: everything this run made has been removed" in rest


def test_main_called_in_a_process_puts_its_signal_handlers_back(tmp_path):
    """In a longer-lived process (pytest, a notebook) cli.main turns SIGTERM into SystemExit
    only while it runs: a child forked afterwards and sent SIGTERM must not raise there."""
    import signal

    from dplab import cli

    def mine(*_):
        return None

    before = signal.signal(signal.SIGTERM, mine)
    try:
        assert cli.main(["topo", "export", "single", "-o", str(tmp_path / "lab.yml")]) == 0
        assert signal.getsignal(signal.SIGTERM) is mine
        assert cli.main(["topo", "export", "nosuch", "-o", str(tmp_path / "x.yml")]) == 2
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, before)
