"""Starting an emulator process of the substrate (dplab-linkem for a link, dplab-wmedium for
an access point's medium): its JSON config in the run directory, the binary in its own
namespace, then a wait for the ``ready`` line it prints once every socket is open, and
real-time priority after that (substrate.realtime)."""

from __future__ import annotations

import json
import select
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

from dplab.substrate import realtime
from dplab.substrate.registry import SubstrateError

if TYPE_CHECKING:
    from dplab.substrate.network import Network

START_TIMEOUT_S = 10.0  # for all the emulators of a network together


def launch(net: Network, namespace: str, binary: Path, config: dict) -> subprocess.Popen:
    """``binary --config <run dir>/<namespace>.json`` in ``namespace``, not yet waited for."""
    path = net.run_dir / f"{namespace}.json"
    path.write_text(json.dumps(config))
    return net.popen(namespace, [str(binary), "--config", str(path)], stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)


def wait_ready(proc: subprocess.Popen, deadline: float, what: str) -> bool:
    """Wait (until the monotonic ``deadline``) for ``ready``, then raise the process to
    real-time priority; whether the kernel allowed that. SubstrateError naming ``what``
    (e.g. "link emulator of s1–h1 (dl12ab-linkem0)") if it exits or stays silent."""
    out = proc.stdout
    assert out is not None
    ready, _, _ = select.select([out], [], [], max(0.0, deadline - time.monotonic()))
    line = out.readline() if ready else ""
    if line.strip() != "ready":
        proc.kill()
        _, err = proc.communicate()
        how = f"exited: {err.strip()}" if line or err else f"not ready in {START_TIMEOUT_S} s"
        raise SubstrateError(f"{what} {how}")
    return realtime.promote(proc.pid)
