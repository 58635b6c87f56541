"""Run traffic flows between hosts of a Network at once and collect their results.

Every iperf flow gets its own server on its own port (5001, 5002, ...) so flows stay
apart; servers start first, clients start together once every server listens. A TCP
window above what -w can get is set in the flow's hosts' namespaces before the servers
start and put back at the end; every TCP flow's window is sampled at both ends while the
clients run (workloads.tcp_window).
"""

import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from dplab.measure.iperf_report import IperfParseError
from dplab.measure.ping_report import PingParseError
from dplab.measure.syn_delay import Endpoint, syn_delays_ms
from dplab.substrate import staging
from dplab.substrate.network import HOST_IF
from dplab.workloads import iperf, latency, ping, pps, tcp_window, trace, video, voip
from dplab.workloads.capture import SYN_FILTER, CapturePoint, Captures
from dplab.workloads.measured import Measured, missing, read_output
from dplab.workloads.waiting import bound_ports

FIRST_PORT = 5001
LISTEN_TIMEOUT_S = 5.0
SERVER_GRACE_S = 3.0  # time a server gets after its client ended to print its final report
POLL_S = 0.02
STAGING_MARKER = "dplab-flows-"  # + owner tag: `dplab cleanup` finds a killed run's folder
TOOL_KINDS = ("icmp", "tcp", "udp")  # run by ping/iperf processes managed here


class StreamFlows(Protocol):
    """Workloads that manage their own processes (voip.VoipFlows): receivers listen first,
    senders start with the iperf/ping clients, results come back in `flows` order."""

    flows: list["Flow"]

    def listen(self, tmp: Path) -> None: ...
    def send(self) -> None: ...
    def wait(self) -> None: ...
    def kill(self) -> None: ...
    def results(self) -> list[Measured]: ...


# kind -> class built as Cls(net, flows_of_that_kind); one line per stream workload.
STREAMS: dict[str, Any] = {
    "voip": voip.VoipFlows,
    "video": video.VideoFlows,
    "pps": pps.PpsFlows,
    "latency": latency.LatencyFlows,
    "trace": trace.TraceFlows,
}
KINDS = (*TOOL_KINDS, *STREAMS)


class FlowNetwork(Protocol):
    """The part of substrate.network.Network that flows need."""

    def host_ns(self, host: str) -> str: ...
    def host_ip(self, host: str) -> str: ...
    def host_mac(self, host: str) -> str: ...
    def popen(self, ns: str, argv: list[str], **kw: Any) -> subprocess.Popen: ...
    def run(self, ns: str, argv: list[str], timeout: float | None = None,
            check: bool = True) -> subprocess.CompletedProcess: ...


@dataclass
class Flow:
    """One traffic flow of a workload."""

    flow_id: str  # e.g. "tcp-h2-h6"
    kind: str  # "icmp" | "tcp" | "udp"
    src: str
    dst: str
    params: dict = field(default_factory=dict)
    cold: bool = False  # its hosts' ARP caches emptied before it starts (see _cool)


@dataclass
class FlowResult:
    flow: Flow
    ok: bool
    error: str | None
    summary: dict[str, float | None]  # metric -> value (None = not measured)
    intervals: list[dict[str, float | None]]  # each has t_start, t_end and metrics
    path: list[str] | None = None  # switches crossed, as the plane told (Plane.flow_paths)


@dataclass
class _Job:
    """One flow's processes, their output files and how to read them."""

    flow: Flow
    params: ping.PingParams | iperf.IperfParams
    port: int | None
    client_out: IO[str]
    server_out: IO[str] | None = None
    client: subprocess.Popen | None = None
    server: subprocess.Popen | None = None
    client_deadline: float = 0.0
    client_ended: float | None = None
    problems: list[str] = field(default_factory=list)
    window_granted: int | None = None  # by the hosts' tcp_rmem (tcp_window.raised_buffers)
    window_offered: int | None = None  # the receiver's largest rcv_ssthresh
    window_advertised: int | None = None  # the largest snd_wnd the sender saw


def run_flows(net: FlowNetwork, flows: Sequence[Flow]) -> list[FlowResult]:
    """Start all flows at once, wait for them, and return one result per flow, in order.

    Bad parameters raise ValueError before anything starts. A flow whose tool failed or
    timed out comes back with ok=False, the reason, and None for what was not measured.
    """
    streams = {
        kind: cls(net, [flow for flow in flows if flow.kind == kind])
        for kind, cls in STREAMS.items()
        if any(flow.kind == kind for flow in flows)
    }
    tool_flows = [flow for flow in flows if flow.kind not in STREAMS]
    params = [_validate(flow) for flow in tool_flows]
    windows = tcp_window.namespace_windows(
        [(net.host_ns(host), p.window) for flow, p in zip(tool_flows, params, strict=True)
         if isinstance(p, iperf.IperfParams) and p.window_by_sysctl and p.window
         for host in (flow.src, flow.dst)])
    _cool(net, flows)
    with tempfile.TemporaryDirectory(prefix=f"{STAGING_MARKER}{staging.owner_tag()}-") as tmp:
        pairs = enumerate(zip(tool_flows, params, strict=True))
        jobs = [_job(flow, flow_params, index, Path(tmp)) for index, (flow, flow_params) in pairs]
        try:
            with tcp_window.raised_buffers(net, windows) as granted:
                for stream in streams.values():
                    stream.listen(Path(tmp))
                _start_servers(net, jobs)
                _wait_listening(net, jobs)
                with (Captures(net, _syn_capture_points(net, jobs, Path(tmp)),
                               SYN_FILTER) as syn,
                      tcp_window.WindowSampler(net, _tcp_ends(net, jobs)) as sampled):
                    for stream in streams.values():
                        stream.send()
                    _start_clients(net, jobs)
                    _wait_clients(jobs)
                    _wait_servers(jobs)
                for stream in streams.values():
                    stream.wait()
            _note_windows(net, jobs, granted, sampled)
        finally:
            _kill_all(jobs)
            for stream in streams.values():
                stream.kill()
        by_kind = {kind: iter(_stream_results(stream)) for kind, stream in streams.items()}
        delays = _syn_delays(syn)
        tool_results = iter([_result(job, net, delays) for job in jobs])
        return [next(by_kind.get(f.kind, tool_results)) for f in flows]


def _cool(net: FlowNetwork, flows: Sequence[Flow]) -> None:
    """Empty the neighbour (ARP) cache of both ends of every cold flow, so its first packets
    resolve their next hop again (a broadcast the plane must flood or send to its
    controller), whatever earlier pings or phases left in the cache."""
    hosts = sorted({host for flow in flows if flow.cold for host in (flow.src, flow.dst)})
    for host in hosts:
        net.run(net.host_ns(host), ["ip", "neigh", "flush", "all"])


def _stream_results(stream: StreamFlows) -> list[FlowResult]:
    measured = zip(stream.flows, stream.results(), strict=True)
    return [_from_measured(flow, m) for flow, m in measured]


def _validate(flow: Flow) -> ping.PingParams | iperf.IperfParams:
    where = f"flow '{flow.flow_id}'"
    if flow.kind not in KINDS:
        raise ValueError(f"{where}: kind must be one of {list(KINDS)}, got {flow.kind!r}")
    if not isinstance(flow.params, dict):
        raise ValueError(f"{where}: params must be a mapping, got {type(flow.params).__name__}")
    if flow.kind == "icmp":
        return ping.validate(flow.params, where)
    return iperf.validate(flow.kind, flow.params, where)


def _job(flow: Flow, params: Any, index: int, tmp: Path) -> _Job:
    # Files, not pipes: a chatty tool can never stall on a full pipe while we wait.
    def output(role: str) -> IO[str]:
        return open(tmp / f"{index}-{role}.txt", "w+")  # noqa: SIM115 - closed in _read

    if isinstance(params, ping.PingParams):
        return _Job(flow, params, None, output("client"))
    return _Job(flow, params, FIRST_PORT + index, output("client"), output("server"))


def _start_servers(net: FlowNetwork, jobs: list[_Job]) -> None:
    for job in jobs:
        if job.port is not None:
            argv = iperf.server_argv(job.params, job.port)
            job.server = _spawn(net, job.flow.dst, argv, job.server_out)


def _spawn(net: FlowNetwork, host: str, argv: list[str], out: IO[str]) -> subprocess.Popen:
    return net.popen(net.host_ns(host), argv, stdout=out, stderr=subprocess.STDOUT, text=True)


def _wait_listening(net: FlowNetwork, jobs: list[_Job]) -> None:
    """Poll `ss` in each server namespace until every server's port is bound."""
    waiting = [job for job in jobs if job.server is not None]
    deadline = time.monotonic() + LISTEN_TIMEOUT_S
    while waiting and time.monotonic() < deadline:
        sockets = {(net.host_ns(j.flow.dst), j.params.udp) for j in waiting}
        bound = {socket: bound_ports(net, *socket) for socket in sockets}
        waiting = [
            j
            for j in waiting
            if j.port not in bound[(net.host_ns(j.flow.dst), j.params.udp)]
            and j.server.poll() is None
        ]
        if waiting:
            time.sleep(POLL_S)
    for job in jobs:
        if job.server is not None and (job in waiting or job.server.poll() is not None):
            job.problems.append(f"iperf server on {job.flow.dst} port {job.port} did not start")


def _start_clients(net: FlowNetwork, jobs: list[_Job]) -> None:
    ready = [job for job in jobs if not job.problems]
    for job in ready:
        dst_ip = net.host_ip(job.flow.dst)
        if isinstance(job.params, ping.PingParams):
            argv = ping.client_argv(job.params, dst_ip)
        else:
            argv = iperf.client_argv(job.params, dst_ip, job.port)
        job.client_deadline = time.monotonic() + job.params.timeout_s
        job.client = _spawn(net, job.flow.src, argv, job.client_out)


def _wait_clients(jobs: list[_Job]) -> None:
    running = [job for job in jobs if job.client is not None]
    while running:
        for job in running:
            if job.client.poll() is not None:
                job.client_ended = time.monotonic()
            elif time.monotonic() > job.client_deadline:
                _stop(job.client)
                job.client_ended = time.monotonic()
                job.problems.append(f"timed out after {job.params.timeout_s:g} s")
        running = [job for job in running if job.client_ended is None]
        if running:
            time.sleep(POLL_S)


def _wait_servers(jobs: list[_Job]) -> None:
    """Servers exit after their client (-P 1); one that does not is killed after a grace."""
    for job in jobs:
        if job.server is None or job.client_ended is None:
            continue
        remaining = job.client_ended + SERVER_GRACE_S - time.monotonic()
        try:
            job.server.wait(timeout=max(remaining, 0.0))
        except subprocess.TimeoutExpired:
            _stop(job.server)
            if not job.problems:  # a killed receiver's last row may not be its final one
                job.problems.append(f"receiver still running {SERVER_GRACE_S:g} s after sender")


def _stop(process: subprocess.Popen) -> None:
    process.kill()
    process.wait()


def _kill_all(jobs: list[_Job]) -> None:
    for job in jobs:
        for process in (job.client, job.server):
            if process is not None and process.poll() is None:
                _stop(process)


def _tcp_ends(net: FlowNetwork, jobs: list[_Job]) -> list[tuple[str, str, int]]:
    """(sender namespace, receiver namespace, server port) of every TCP flow."""
    return [(net.host_ns(job.flow.src), net.host_ns(job.flow.dst), job.port) for job in jobs
            if _is_tcp(job) and job.port is not None]


def _note_windows(net: FlowNetwork, jobs: list[_Job], granted: dict[str, int],
                  sampled: tcp_window.WindowSampler) -> None:
    """Each TCP job's window as its hosts' tcp_rmem granted it (the smaller end; only the
    jobs whose window goes by sysctl) and as sampled at its two ends."""
    for job in jobs:
        if not _is_tcp(job) or job.port is None:
            continue
        if job.params.window_by_sysctl:
            job.window_granted = min(granted[net.host_ns(host)]
                                     for host in (job.flow.src, job.flow.dst))
        job.window_offered = sampled.offered.get(job.port)
        job.window_advertised = sampled.advertised.get(job.port)


def _syn_capture_points(net: FlowNetwork, jobs: list[_Job], tmp: Path) -> list[CapturePoint]:
    """One SYN capture on the interface of every host that opens a TCP flow."""
    clients = sorted({job.flow.src for job in jobs if _is_tcp(job)})
    return [CapturePoint(net.host_ns(host), HOST_IF, tmp / f"syn-{host}.pcap") for host in clients]


def _syn_delays(captures: Captures) -> dict[Endpoint, float]:
    delays: dict[Endpoint, float] = {}
    for point in captures.points:
        if point.path.is_file():
            delays.update(syn_delays_ms(point.path))
    return delays


def _is_tcp(job: _Job) -> bool:
    return isinstance(job.params, iperf.IperfParams) and not job.params.udp


def _result(job: _Job, net: FlowNetwork, syn_delays: dict[Endpoint, float]) -> FlowResult:
    measured = _measure(job)
    if _is_tcp(job) and measured.error is None:
        key = (net.host_ip(job.flow.src), net.host_ip(job.flow.dst), job.port)
        measured.summary["syn_delay_ms"] = syn_delays.get(key)
    error = "; ".join([*job.problems, *([measured.error] if measured.error else [])]) or None
    return FlowResult(job.flow, error is None, error, measured.summary, measured.intervals)


def _from_measured(flow: Flow, measured: Measured) -> FlowResult:
    ok = measured.error is None
    return FlowResult(flow, ok, measured.error, measured.summary, measured.intervals)


def _measure(job: _Job) -> Measured:
    source = f"flow '{job.flow.flow_id}' ({job.flow.src}->{job.flow.dst})"
    client_text = read_output(job.client_out)
    if isinstance(job.params, ping.PingParams):
        metrics = ping.METRICS
    else:
        metrics = iperf.UDP_METRICS if job.params.udp else iperf.TCP_METRICS
    if job.client is None:
        return missing(metrics, f"{source}: not started")
    try:
        if isinstance(job.params, ping.PingParams):
            return ping.measure(job.params, client_text, source)
        return iperf.measure(job.params, client_text, read_output(job.server_out), source,
                             tcp_window.Seen(job.window_granted, job.window_offered,
                                             job.window_advertised))
    except (IperfParseError, PingParseError) as exc:
        return missing(metrics, str(exc))
