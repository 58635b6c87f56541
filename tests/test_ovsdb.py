"""Bridges written into a real ovsdb-server as OVSDB transactions read back through ovs-vsctl
as ovs-vsctl's own add-br/add-port would have made them."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dplab.planes import ovsdb
from dplab.planes.ovs import SCHEMA


@pytest.fixture
def db(tmp_path: Path) -> Iterator[str]:
    """A private ovsdb-server (no ovs-vswitchd) with an initialised Open_vSwitch row."""
    conf, sock = tmp_path / "conf.db", tmp_path / "db.sock"
    subprocess.run(["ovsdb-tool", "create", str(conf), str(SCHEMA)], check=True)
    server = subprocess.Popen(["ovsdb-server", str(conf), f"--remote=punix:{sock}",
                               f"--unixctl={tmp_path / 'ovsdb.ctl'}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        _vsctl(f"unix:{sock}", "init")
        yield f"unix:{sock}"
    finally:
        server.terminate()
        server.wait()


def _vsctl(db: str, *args: str) -> str:
    return subprocess.run(["ovs-vsctl", f"--db={db}", "--no-wait", "--timeout=10", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def _bridge(n: int, controller: str | None) -> ovsdb.BridgeRow:
    ports = (ovsdb.PortRow(f"s{n}-eth1", 1, "", 100_000_000),
             ovsdb.PortRow(f"s{n}-eth2", 2, "", None))
    return ovsdb.BridgeRow(f"br{n}", "netdev", {"datapath-id": f"{n:016x}"},
                           "secure" if controller else "standalone", controller is None,
                           controller, 1000, 0, ports)


def test_bridges_in_several_transactions_read_back_as_vsctl_would_make_them(
        db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ovsdb, "MAX_ARG_BYTES", 1500)  # one bridge per transaction
    before = int(_vsctl(db, "get", "open_vswitch", ".", "next_cfg"))
    cfg = ovsdb.add_bridges(db, [_bridge(1, "tcp:127.0.0.1:6653"), _bridge(2, None),
                                 _bridge(3, None)], 10)
    assert cfg == before + 1 == int(_vsctl(db, "get", "open_vswitch", ".", "next_cfg"))
    assert _vsctl(db, "list-br").split() == ["br1", "br2", "br3"]
    assert _vsctl(db, "list-ports", "br2").split() == ["s2-eth1", "s2-eth2"]
    assert _vsctl(db, "get", "interface", "br2", "type") == "internal"
    assert _vsctl(db, "get", "interface", "s2-eth2", "ofport_request") == "2"
    assert _vsctl(db, "get", "bridge", "br2", "rstp_enable", "fail_mode") == "true\nstandalone"
    assert _vsctl(db, "get", "bridge", "br1", "other_config:datapath-id",
                  "protocols") == '"0000000000000001"\n[OpenFlow13]'
    assert _vsctl(db, "get-controller", "br1") == "tcp:127.0.0.1:6653"
    assert _vsctl(db, "--bare", "--columns=inactivity_probe", "list", "controller") == "0"
    qos = _vsctl(db, "get", "port", "s1-eth1", "qos")
    assert _vsctl(db, "get", "qos", qos, "type", "other_config:max-rate") == \
        'linux-htb\n"100000000"'
    assert _vsctl(db, "get", "port", "s1-eth2", "qos") == "[]"


def test_a_refused_transaction_names_what_and_why(db: str) -> None:
    ovsdb.add_bridges(db, [_bridge(1, None)], 10)
    with pytest.raises(ovsdb.OvsdbError,
                       match="refused the transaction: constraint violation: .*identical"):
        ovsdb.add_bridges(db, [_bridge(1, None)], 10)  # br1, s1-eth1 and s1-eth2 again
