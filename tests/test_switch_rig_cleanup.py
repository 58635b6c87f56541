"""The switch test rig cleans up like a lab run: a rig whose process was killed leaves its
namespaces behind, and the next rig (or lab run) reclaims them (substrate/registry.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dplab.substrate import registry

pytestmark = pytest.mark.net

TESTS = Path(__file__).resolve().parent
# A rig without a switch in a child process that dies without cleaning up (SIGKILL-like).
CHILD = textwrap.dedent(f"""
    import os, sys
    sys.path.insert(0, {str(TESTS)!r})
    from switch_rig import Rig
    rig = Rig(n_ports=2, capture=False, run_switch=False).__enter__()
    print(rig.prefix, flush=True)
    os._exit(9)
""")


def test_a_killed_rig_is_reclaimed_by_the_next():
    if os.geteuid() != 0:
        pytest.skip("needs root for network namespaces")
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
    assert done.returncode == 9, done.stderr
    prefix = done.stdout.strip()
    assert registry.netns_with_prefix(prefix) == [f"{prefix}-h", f"{prefix}-sw"]
    sys.path.insert(0, str(TESTS))
    from switch_rig import Rig

    with Rig(n_ports=1, capture=False, run_switch=False) as rig:
        assert rig.prefix != prefix
        assert registry.netns_with_prefix(prefix) == []
        assert not (registry.RECORD_DIR / f"{prefix}.json").exists()
        assert not list(Path("/tmp").glob(f"{prefix}-*"))
    assert registry.netns_with_prefix(rig.prefix) == []
    assert not (registry.RECORD_DIR / f"{rig.prefix}.json").exists()
