"""Typed experiment description: what one experiment file may say."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from dplab.qos import options as qos_options

PLANE_KINDS = ("bridge", "router", "ovs", "p4", "xdp", "userspace", "direct", "loopback")
# How idle CPUs behave during the runs (substrate.cpu_idle): as the machine has it, or
# polling (a 0 µs PM QoS wake-up latency request held for the whole experiment).
CpuIdle = Literal["machine", "poll"]
HostPair = tuple[str, str]


class Strict(BaseModel):
    """Unknown keys are errors: a typo must not silently fall back to a default. Numbers are
    finite: YAML's ``.inf``/``.nan`` would pass every ``gt``/``le`` bound check (nan compares
    false) and reach the tools as nonsense."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class TopologySpec(Strict):
    name: str | None = Field(
        None, description="a catalog topology, e.g. multipath; with 'mininet': which topology "
        "of that file (a key of its topos dict or a Topo class name)"
    )
    file: str | None = Field(None, description="a GraphML/GML file to import")
    topohub: str | None = Field(None, description="a topohub graph, e.g. topozoo/Abilene")
    mininet: str | None = Field(None, description="a Mininet custom-topology file (.py)")
    params: dict[str, int | float | str | None | list[int | float | None] | dict[str, Any]] = (
        Field(default_factory=dict, description="the topology's parameters; a list gives one "
              "value per station (wireless topologies' distance_m, rate_mbit, wifi_loss_pct), "
              "a mapping more dplab-linkem settings for every link (linkem: {seed: 7, "
              "duplicate_pct: 1}) or one link class (core_linkem, edge_linkem)"))
    args: list[int | float | str] = Field(
        default_factory=list, description="'mininet': positional arguments of the topology"
    )

    @model_validator(mode="after")
    def _one_source(self) -> TopologySpec:
        catalog_name = None if self.mininet is not None else self.name
        sources = (catalog_name, self.file, self.topohub, self.mininet)
        if sum(s is not None for s in sources) != 1:
            raise ValueError("give exactly one of 'name' (a catalog topology), 'file' "
                             "(GraphML/GML), 'topohub' (a topohub key) or 'mininet' (a Mininet "
                             "file; 'name' then picks one of its topologies)")
        return self


class PlaneSpec(Strict):
    kind: Literal["bridge", "router", "ovs", "p4", "xdp", "userspace", "direct", "loopback"]
    label: str | None = Field(None, description="column name in the tables")
    # A mapping value for options that group keys (p4's ``qos``, checked below).
    options: dict[str, str | int | float | bool | dict[str, Any]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _qos_option(self) -> PlaneSpec:
        if self.kind == "p4" and "qos" in self.options:
            qos_options.parse(self.options["qos"])  # QosError is a ValueError
        return self

    @property
    def column(self) -> str:
        if self.label:
            return self.label
        mode = self.options.get("mode")
        return f"{self.kind}-{mode}" if mode else self.kind


Pairs = str | list[HostPair]


class WorkloadBase(Strict):
    """What every workload kind has besides its own parameters."""

    label: Annotated[str, Field(pattern=r"^[A-Za-z][\w.-]*$")] | None = Field(
        None, description="a name for 'phases' and 'axes' to refer to (default: its index)")
    cold: bool | None = Field(
        None, description="true: its hosts' ARP caches are emptied before it starts and the "
        "plane's readiness ping avoids its pairs where it can, so its first packets pay ARP "
        "and flow set-up (default: the experiment's 'cold')")


class IcmpWorkload(WorkloadBase):
    kind: Literal["icmp"]
    pairs: Pairs = "icmp"
    count: Annotated[int, Field(gt=0)] = 20
    interval: Annotated[float, Field(ge=0.002)] = 0.2
    size: Annotated[int, Field(ge=0, le=65507)] = 56


class TcpWorkload(WorkloadBase):
    kind: Literal["tcp"]
    pairs: Pairs = "tcp"
    duration: Annotated[float, Field(gt=0)] | None = None
    bytes: Annotated[int, Field(gt=0)] | None = None
    rate_mbit: Annotated[float, Field(gt=0)] | None = None
    window: Annotated[int, Field(gt=0)] | None = None
    tos: Annotated[int, Field(ge=0, le=255)] | None = Field(
        None, description="IPv4 ToS byte of the client's packets, e.g. 184 (0xb8, DSCP EF)")

    @model_validator(mode="after")
    def _size_or_time(self) -> TcpWorkload:
        _require_one_of(self.duration, self.bytes)
        return self


class UdpWorkload(WorkloadBase):
    kind: Literal["udp"]
    pairs: Pairs = "udp"
    duration: Annotated[float, Field(gt=0)] | None = None
    bytes: Annotated[int, Field(gt=0)] | None = None
    rate_mbit: Annotated[float, Field(gt=0)] = 10.0
    size: Annotated[int, Field(ge=16, le=65507)] = 1470
    tos: Annotated[int, Field(ge=0, le=255)] | None = Field(
        None, description="IPv4 ToS byte of the client's packets, e.g. 184 (0xb8, DSCP EF)")

    @model_validator(mode="after")
    def _size_or_time(self) -> UdpWorkload:
        _require_one_of(self.duration, self.bytes)
        return self


class VoipWorkload(WorkloadBase):
    """G.711-like RTP streams (dplab.workloads.voip); payload holds the send stamp (12 B)."""

    kind: Literal["voip"]
    pairs: Pairs = "voip"
    duration: Annotated[float, Field(gt=0)] = 10.0
    codec: Literal["g711"] = "g711"
    packet_ms: Annotated[float, Field(gt=0, le=1000)] = 20.0
    payload: Annotated[int, Field(ge=12, le=65495)] = 160
    phase_ms: Annotated[float | None, Field(ge=0)] = None
    tos: Annotated[int, Field(ge=0, le=255)] | None = Field(
        None, description="IPv4 ToS byte of the RTP packets, e.g. 184 (0xb8, DSCP EF)")

    @model_validator(mode="after")
    def _phase_within_period(self) -> VoipWorkload:
        if self.phase_ms is not None and self.phase_ms >= self.packet_ms:
            raise ValueError(f"phase_ms ({self.phase_ms:g}) must be less than packet_ms "
                             f"({self.packet_ms:g})")
        return self


class VideoWorkload(WorkloadBase):
    """CDN video (dplab.workloads.video): pairs are (viewer, server), as study 000's cdn."""

    kind: Literal["video"]
    pairs: Pairs = "cdn"
    mode: Literal["http", "rtp"] = "http"
    duration: Annotated[float, Field(gt=0, le=3600)] = 10.0
    resolution: Annotated[str, Field(pattern=r"^\d+x\d+$")] = "1280x720"
    fps: Annotated[int, Field(gt=0, le=120)] = 25
    bitrate_kbit: Annotated[int, Field(gt=0)] = 2000
    segment_s: Annotated[float, Field(gt=0)] = 2.0
    frame_at: Annotated[float, Field(gt=0)] | None = Field(
        None, description="seconds into the stream of the frame capture; default: the middle"
    )
    max_buffer_s: Annotated[float, Field(gt=0)] = 30.0
    jitter_buffer_ms: Annotated[float, Field(ge=0, description="rtp: live player's delay")] = 200.0
    tos: Annotated[int, Field(ge=0, le=252, multiple_of=4)] | None = Field(
        None, description="IPv4 ToS byte of the server's video packets, a DSCP << 2 (ffmpeg "
        "sets only DSCP), e.g. 136 (AF41)")

    @model_validator(mode="after")
    def _encodable(self) -> VideoWorkload:
        if any(int(size) < 16 or int(size) % 2 for size in self.resolution.split("x")):
            raise ValueError(f"resolution {self.resolution}: sizes must be even and >= 16 "
                             "(H.264 4:2:0)")
        if self.frame_at is not None and self.frame_at >= self.duration:
            raise ValueError(f"frame_at ({self.frame_at:g} s) must be below duration")
        return self


class PpsWorkload(WorkloadBase):
    """Copies of one frame at a set rate (dplab.workloads.pps, sent by dplab-pktblast)."""

    kind: Literal["pps"]
    pairs: Pairs = "udp"
    size: Annotated[int, Field(ge=64, le=1500, description="Ethernet frame bytes, FCS "
                               "included")] = 64
    pps: Annotated[float, Field(gt=0, le=10_000_000, description="frames per second")]
    duration: Annotated[float, Field(gt=0)] | None = None
    count: Annotated[int, Field(gt=0, description="frames")] | None = None
    protocol: Literal["udp", "icmp"] = "udp"
    dst_mac: Literal["resolved", "host"] = Field(
        "resolved", description="the frames' destination MAC: resolved (what the sender's "
        "kernel resolved for its next hop, after one ping) or host (the destination host's "
        "own, no ARP: for a plane that forwards nothing, such as a drop program)")

    @model_validator(mode="after")
    def _count_or_time(self) -> PpsWorkload:
        if (self.duration is None) == (self.count is None):
            raise ValueError("give exactly one of 'duration' (seconds) or 'count' (frames)")
        return self


class LatencyWorkload(WorkloadBase):
    """Timestamped frames of one size at a low rate (dplab.workloads.latency): one-way delay
    and packet delay variation against the frame size."""

    kind: Literal["latency"]
    pairs: Pairs = "udp"
    size: Annotated[int, Field(ge=58, le=9018, description="Ethernet frame bytes, FCS "
                               "included")] = 64
    interval_ms: Annotated[float, Field(gt=0, le=1000)] = 10.0
    duration: Annotated[float, Field(gt=0)] = 5.0


class TraceWorkload(WorkloadBase):
    """A recorded packet trace replayed between hosts (dplab.workloads.trace)."""

    kind: Literal["trace"]
    pairs: Pairs = "udp"
    file: str = Field(description="a pcap or a CSV of time (s), size (IPv4 bytes), tos")
    tos: Annotated[int, Field(ge=0, le=255)] | None = Field(
        None, description="one IPv4 ToS byte for every packet instead of the trace's")

    @field_validator("file")
    @classmethod
    def _readable(cls, file: str) -> str:
        if not Path(file).is_file():
            raise ValueError(f"trace file {file!r} does not exist or is not a file")
        return file


def _require_one_of(duration: float | None, size: int | None) -> None:
    if (duration is None) == (size is None):
        raise ValueError("give exactly one of 'duration' (seconds) or 'bytes'")


Workload = Annotated[
    IcmpWorkload | TcpWorkload | UdpWorkload | VoipWorkload | VideoWorkload | PpsWorkload
    | LatencyWorkload | TraceWorkload,
    Field(discriminator="kind"),
]


AxisValue = bool | int | float | str | dict[str, Any]
AXIS_TOPOLOGY = "topology"  # an axis of that name varies the topology (names or mappings)
AXIS_TIER = "tier"  # an axis of that name varies the tier (1, 2)


class Axis(Strict):
    """One axis: the values one parameter takes, each making its own runs."""

    of: str | int | None = Field(
        None, description="whose parameter: a workload's label or index, a plane's column "
        "label, or 'topology' (a topology parameter); default: every workload that has it")
    values: Annotated[list[AxisValue], Field(min_length=1)]

    @field_validator("values")
    @classmethod
    def _distinct(cls, values: list[AxisValue]) -> list[AxisValue]:
        # 10 and 10.0 are one value: compare numbers as numbers
        same = [v if isinstance(v, int | float) and not isinstance(v, bool) else value_label(v)
                for v in values]
        repeated = sorted({value_label(v) for v, k in zip(values, same, strict=True)
                           if same.count(k) > 1})
        if repeated:
            raise ValueError(f"values must differ, repeated: {', '.join(repeated)}")
        return values


def value_label(value: AxisValue) -> str:
    """How an axis value is written in run ids, tables and plots: 10, 0.5, grid,
    grid(rows=3)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        params = value.get("params") or {}
        inner = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
        name = value.get("name") or value.get("file") or value.get("topohub") \
            or value.get("mininet") or "topology"
        return f"{name}({inner})" if inner else str(name)
    return str(value)


class Experiment(Strict):
    name: str
    description: str = ""
    topology: TopologySpec
    planes: Annotated[list[PlaneSpec], Field(min_length=1)]
    workloads: Annotated[list[Workload], Field(min_length=1)]
    tier: Literal[1, 2] = 1
    repetitions: Annotated[int, Field(ge=1, le=1000)] = 1
    results: str | None = Field(None, description="results folder; default results/<name>")
    capture: list[str] = Field(
        default_factory=list,
        description="pcap during traffic: a host (its eth0), a switch (all ports) or "
        "'switch:interface'; files in <results>/pcap/<run>/",
    )
    cold: bool = Field(False, description="the default of every workload's 'cold'")
    cpu_idle: CpuIdle = Field(
        "machine", description="machine: idle CPUs as the machine has them; poll: idle CPUs "
        "poll instead of halting while the experiment runs (fast wake-ups on a VM)",
    )
    executor: Literal["local", "ray"] = Field(
        "local", description="local: runs one after another here; ray: one Ray task per run, "
        "at most one run per node (`dplab run --ray ADDRESS` sets it)")
    ray_address: str | None = Field(
        None, description="the Ray cluster's address (executor: ray); default: the cluster "
        "`ray start` made on this machine, or RAY_ADDRESS")

    axes: dict[Annotated[str, Field(pattern=r"^[A-Za-z_][\w.]*$")], Axis] = Field(
        default_factory=dict, description="name -> values (a list) or {of: whose, values}; "
        "the runs are every combination of the axes' values x planes x repetitions")
    phases: list[Annotated[list[str | int], Field(min_length=1)]] | None = Field(
        None, description="workloads (label or index) that run together, phase after phase; "
        "default: the tier's (1: one workload per phase, 2: all in one)")

    @field_validator("axes", mode="before")
    @classmethod
    def _axis_shorthand(cls, axes: Any) -> Any:
        """``rate_mbit: [10, 100]`` is ``rate_mbit: {values: [10, 100]}``."""
        if isinstance(axes, dict):
            return {k: {"values": v} if isinstance(v, list) else v for k, v in axes.items()}
        return axes

    @model_validator(mode="after")
    def _ray_address_needs_ray(self) -> Experiment:
        if self.ray_address is not None and self.executor != "ray":
            raise ValueError("ray_address is given but executor is 'local'; "
                             "add 'executor: ray'")
        return self

    @model_validator(mode="after")
    def _phases_cover_workloads(self) -> Experiment:
        if self.phases is None:
            return self
        if "tier" in self.model_fields_set or AXIS_TIER in self.axes:
            raise ValueError("give either 'phases' or 'tier' (tier 1 and 2 are shorthands "
                             "for phases), not both")
        seen = [self.workload_index(ref, "phases") for phase in self.phases for ref in phase]
        twice = sorted({i for i in seen if seen.count(i) > 1})
        unplaced = [i for i in range(len(self.workloads)) if i not in seen]
        if twice or unplaced:
            raise ValueError("phases must list every workload once; "
                             + (f"listed twice: {twice} " if twice else "")
                             + (f"not listed: {unplaced}" if unplaced else ""))
        return self

    def workload_index(self, ref: str | int, where: str) -> int:
        """The index of the workload ``ref`` names (its label or index)."""
        if isinstance(ref, int):
            if not 0 <= ref < len(self.workloads):
                raise ValueError(f"{where}: no workload {ref} (there are "
                                 f"{len(self.workloads)}, counted from 0)")
            return ref
        labels = [w.label for w in self.workloads]
        if ref not in labels:
            known = ", ".join(lb for lb in labels if lb) or "none"
            raise ValueError(f"{where}: no workload labelled {ref!r} (labels: {known})")
        return labels.index(ref)

    @model_validator(mode="after")
    def _unique_labels(self) -> Experiment:
        labels = [w.label for w in self.workloads if w.label]
        repeated = sorted({lb for lb in labels if labels.count(lb) > 1})
        if repeated:
            raise ValueError(f"workload labels must be unique, repeated: {', '.join(repeated)}")
        return self

    @model_validator(mode="after")
    def _unique_columns(self) -> Experiment:
        columns = [p.column for p in self.planes]
        repeated = sorted({c for c in columns if columns.count(c) > 1})
        if repeated:
            raise ValueError(f"plane labels must be unique, repeated: {', '.join(repeated)}")
        return self
