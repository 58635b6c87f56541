"""Every call into a tool or daemon has a deadline, and input that would make one run
away is refused with a located error: each call here meets a tool that hangs or input
that grows without end."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

from dplab.p4.errors import P4Error
from dplab.p4.limits import MAX_MACRO_TOKENS, MAX_NESTING
from dplab.p4.preprocess import preprocess
from dplab.p4runtime import primary, switch_link
from dplab.planes import PlaneError, ovs, p4, p4_static
from dplab.workloads import video_content


def _fake_tool(folder: Path, name: str, monkeypatch) -> None:
    """``name`` on PATH is a script that sleeps past every deadline (and ignores --timeout)."""
    fake = folder / name
    fake.write_text("#!/bin/sh\nsleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")


def test_an_ovs_tool_that_hangs_meets_its_deadline(tmp_path: Path, monkeypatch) -> None:
    _fake_tool(tmp_path, "ovs-ofctl", monkeypatch)
    monkeypatch.setattr(ovs, "TOOL_GRACE_S", 0.5)
    began = time.monotonic()
    with pytest.raises(PlaneError, match=r"ovs-vswitchd did not answer ovs-ofctl "
                                         r"dump-aggregate within 0.5 s"):
        ovs.run_tool(["ovs-ofctl", "dump-aggregate", "unix:/nowhere"], 0.5, "ovs-vswitchd")
    assert time.monotonic() - began < 10


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_chain_of_doubling_macros_is_refused_at_its_use(tmp_path: Path) -> None:
    """40 lines that would expand to 2^40 tokens: refused once the expansions pass the
    bound, naming the line that uses the chain and where its macro is defined."""
    lines = ["#include <v1model.p4>", "#define M0 1"]
    lines += [f"#define M{i} (M{i - 1} + M{i - 1})" for i in range(1, 41)]
    bomb = _write(tmp_path / "bomb.p4", [*lines, "const bit<32> X = M40;"])
    began = time.monotonic()
    with pytest.raises(P4Error, match=rf"macro M40 \(#define at {bomb}:42:1\) makes the "
                                      rf"program's macro expansions exceed {MAX_MACRO_TOKENS}"):
        preprocess(bomb)
    assert time.monotonic() - began < 20  # 2^18 tokens, not 2^40


def test_function_like_macros_that_double_and_deep_chains_are_refused(tmp_path: Path) -> None:
    lines = ["#define F0(x) x"] + [f"#define F{i}(x) F{i - 1}(x) F{i - 1}(x)"
                                   for i in range(1, 41)]
    doubling = _write(tmp_path / "calls.p4", [*lines, "const bit<32> X = F40(1);"])
    with pytest.raises(P4Error, match=rf"^{doubling}:42:19: macro F40 .* exceed"):
        preprocess(doubling)
    lines = ["#define N0 1"] + [f"#define N{i} N{i - 1}" for i in range(1, 300)]
    deep = _write(tmp_path / "deep.p4", [*lines, "const bit<32> X = N299;"])
    with pytest.raises(P4Error, match=rf"^{deep}:301:19: macro N299 .* nested more than "
                                      rf"{MAX_NESTING} deep"):
        preprocess(deep)


def test_the_p4_plane_compiles_within_a_time_limit(tmp_path: Path, monkeypatch) -> None:
    """The compiler runs in a process of its own: bad input comes back as the compiler's
    located message, and a compile past the limit is stopped."""
    bad = _write(tmp_path / "bad.p4", ["#include <v1model.p4>", "#define X 1", "const X;"])
    with pytest.raises(PlaneError, match=rf"p4: option 'program': {bad}:3:7: "):
        p4.Compilation(bad, tmp_path / "out").files()
    monkeypatch.setattr(p4, "COMPILE_TIMEOUT_S", 0.01)
    with pytest.raises(PlaneError, match=rf"compiling {p4.DEFAULT_PROGRAM} took longer "
                                         r"than 0.01 s; stopped"):
        p4.Compilation(p4.DEFAULT_PROGRAM, tmp_path / "out").files()


def test_an_ffmpeg_that_hangs_meets_its_deadline(tmp_path: Path, monkeypatch) -> None:
    _fake_tool(tmp_path, "ffmpeg", monkeypatch)
    monkeypatch.setattr(video_content, "ENCODE_TIMEOUT_S", 0.5)
    began = time.monotonic()
    with pytest.raises(video_content.ContentError, match=r"ffmpeg -y -ss 1.000 -i \.\.\. "
                                                         r"took longer than 0.5 s; stopped"):
        video_content.extract_frame(tmp_path / "in.mp4", 1.0, tmp_path / "out.png")
    assert time.monotonic() - began < 10


def test_a_switch_that_stops_reading_fails_the_request_in_time(tmp_path: Path,
                                                               monkeypatch) -> None:
    """A control socket that takes the connections and the subscription, then reads no
    request: a request larger than the socket's buffers fails UNAVAILABLE by its deadline,
    and later ones fail at once (the half-sent line would garble them)."""
    monkeypatch.setattr(switch_link, "REPLY_TIMEOUT_S", 0.5)
    path = str(tmp_path / "switch.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(2)

    def accept() -> list[socket.socket]:
        requests, _ = server.accept()
        events, _ = server.accept()
        events.recv(1 << 16)  # the subscription
        events.sendall(b'{"id": 0, "ok": true}\n')
        return [requests, events]

    with ThreadPoolExecutor(1) as pool:
        accepted = pool.submit(accept)
        link = switch_link.SwitchLink(path, lambda _event: None)
        held = accepted.result()
    began = time.monotonic()
    with pytest.raises(switch_link.SwitchError, match="switch did not answer batch") as cut:
        link.batch([{"cmd": "noop", "pad": "x" * (8 << 20)}], stop_on_error=False)
    with pytest.raises(switch_link.SwitchError, match="switch control socket") as later:
        link.call("noop")
    assert cut.value.code == later.value.code == "UNAVAILABLE"
    assert time.monotonic() - began < 10
    for conn in [*held, server]:
        conn.close()


class _Mute(p4runtime_pb2_grpc.P4RuntimeServicer):
    """A P4Runtime server that takes a client's stream and never answers it."""

    def __init__(self) -> None:
        self.done = threading.Event()

    def StreamChannel(self, request_iterator, context):  # noqa: N802 - gRPC's name
        self.done.wait()
        return iter(())


def test_an_unanswered_arbitration_fails_the_session_in_time(tmp_path: Path,
                                                             monkeypatch) -> None:
    monkeypatch.setattr(primary, "RPC_TIMEOUT_S", 0.5)
    mute = _Mute()
    server = grpc.server(ThreadPoolExecutor(2))
    p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(mute, server)
    address = f"unix:{tmp_path / 'p4rt.grpc'}"
    server.add_insecure_port(address)
    server.start()
    try:
        began = time.monotonic()
        session = primary.PrimarySession(address, 1, pb.Uint128(low=1))
        with pytest.raises(primary.NotPrimary, match="arbitration failed: no answer "
                                                     "within 0.5 s"):
            session.open()
        session.close()
        assert time.monotonic() - began < 10
    finally:
        mute.done.set()
        server.stop(0)


def test_a_wait_that_fails_tells_the_state_at_its_deadline() -> None:
    """A plane's wait for its controller says what was reached when it gave up, not what
    there was when it began (the counters file does not exist yet then)."""
    plane = p4.P4Plane()
    checks: list[float] = []

    def never() -> bool:
        checks.append(time.monotonic())
        return False

    with pytest.raises(PlaneError, match=r"gave up after (\d+) checks") as failed:
        plane._wait_for(never, 0.05, lambda: f"gave up after {len(checks)} checks",
                        pause=lambda: None)
    assert int(failed.value.args[0].rsplit(" ", 2)[1]) == len(checks) > 1


def test_a_static_install_fails_when_it_gets_no_further(tmp_path, monkeypatch) -> None:
    """The plane's wait for a static install bounds a stall, not the install's length: a
    P4Runtime server process that says nothing (no switch served) fails the start once
    INSTALL_STALL_S passed without progress, naming the server's log."""
    monkeypatch.setattr(p4, "INSTALL_STALL_S", 0.5)
    plane = p4.P4Plane()
    plane.dir = tmp_path
    silent = subprocess.Popen(["sleep", "60"], stdout=subprocess.PIPE)
    installing = p4_static.Installing(
        p4_static.ServerLines(silent), [p4_static.Target("s1", 1, "unix:/nowhere")],
        lambda: p4_static.Prepared(pb.ForwardingPipelineConfig(), {"s1": []}),
        "option 'entries'", "entries.yaml")
    installing.start()
    began = time.monotonic()
    try:
        with pytest.raises(PlaneError, match=r"the install got no further for 0.5 s \(log "
                                             f"{tmp_path}/p4runtime.log"):
            plane._wait_for_install(installing)
        assert time.monotonic() - began < 5
    finally:
        installing.stop()
        silent.kill()
        silent.wait()
