"""An off-the-shelf P4Runtime client (p4runtime-shell, in its own venv made by
scripts/setup.sh) programs a real dplab-switch through our server on TCP loopback; real
packets then follow what it wrote, and it reads the counters they moved."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from p4runtime_rig import compile_with_info, free_tcp_port, rig_with_server
from switch_rig import udp_frame

pytestmark = pytest.mark.net
HERE = Path(__file__).resolve().parent
SHELL_PYTHON = HERE.parent / ".venv-p4rt-shell" / "bin" / "python"
CLIENT = HERE / "p4" / "shell_client.py"


def shell(*args: str) -> dict:
    done = subprocess.run([str(SHELL_PYTHON), str(CLIENT), *args], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not SHELL_PYTHON.exists(), reason="run scripts/setup.sh (p4runtime-shell)")
def test_p4runtime_shell_programs_the_switch(tmp_path):
    ir, _ = compile_with_info(HERE / "p4" / "rt_features.p4", tmp_path)
    address = f"127.0.0.1:{free_tcp_port()}"
    with rig_with_server(address) as rig:
        wrote = shell("program", address, str(tmp_path / "rt_features.p4info.txtpb"), str(ir))
        assert sorted(map(tuple, wrote["lpm"])) == [("10.0.2.0/24", 2), ("10.0.3.0/24", 3)]
        assert wrote["acl_priorities"] == [10]
        mac = "00:00:00:00:00:0%d"
        to_2 = udp_frame(mac % 2, mac % 1, "10.0.0.1", "10.0.2.5")
        to_3 = udp_frame(mac % 3, mac % 1, "10.0.0.1", "10.0.3.5")
        acl_hit = udp_frame(mac % 2, mac % 1, "10.1.7.7", "10.0.2.5", ttl=64)  # acl -> port 1
        missed = udp_frame(mac % 2, mac % 1, "10.0.0.1", "10.9.0.5")  # default -> port 3
        rig.drain()
        for frame in (to_2, to_2, to_3, missed):
            rig.send(1, frame)
        rig.send(2, acl_hit)
        got = rig.capture()
        assert got[2] == [to_2, to_2]
        assert got[3] == [to_3, missed]
        assert got[1] == [acl_hit]
        read = shell("counters", address)
        assert read["port_counter"]["1"] == 4 and read["port_counter"]["2"] == 1
        assert read["lpm_hits"] == {"10.0.2.0/24": 3, "10.0.3.0/24": 1}
