"""How much one device's P4Runtime server gives each client: streams, worker threads, read
time, and gRPC's keepalive/idle settings. In gRPC's sync server every RPC runs on a thread
of one bounded pool and a StreamChannel keeps its thread for its whole life, so without
these bounds idle streams take every thread and each other call waits in the pool's queue
(and an abandoned Read keeps the device lock that Writes wait for)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, fields


def _limit(default: float, why: str):
    return field(default=default, metadata={"help": why})


@dataclass(frozen=True)
class Limits:
    max_backup_streams: int = _limit(
        8, "arbitrated streams that are not the primary's: a further client whose "
        "arbitration would make it a backup is refused (RESOURCE_EXHAUSTED); one that becomes "
        "primary always gets in, and if the demoted primary overfills the backups, the "
        "backup with the lowest election id (none is lowest) is ended")
    max_waiting_streams: int = _limit(
        4, "streams that have not sent their arbitration yet: a new stream beyond them ends "
        "the one that has waited longest (RESOURCE_EXHAUSTED), so silent streams never keep "
        "a controller out")
    arbitration_timeout_s: float = _limit(
        5.0, "a stream with no arbitration by then is ended (DEADLINE_EXCEEDED)")
    read_deadline_s: float = _limit(
        10.0, "a Read gets this long to build its answer under the device lock (it stops "
        "and lets go of the lock when its client cancels; DEADLINE_EXCEEDED past it), and "
        "as long again to send it; a client that stops reading is then cancelled")
    max_reads: int = _limit(
        4, "Reads in flight at once (below unary-workers): a further one is refused "
        "(RESOURCE_EXHAUSTED), so Reads that stall, up to their deadline each, always leave "
        "threads for Writes")
    unary_workers: int = _limit(
        8, "threads for unary calls (Write, Read, pipeline, Capabilities) beyond one per "
        "stream the caps above allow: streams can never take them")
    keepalive_s: float = _limit(
        10.0, "gRPC keepalive: each connection is pinged this often; one that does not "
        "answer in keepalive-timeout-s is closed, ending its streams (a client host gone "
        "without closing its TCP connection)")
    keepalive_timeout_s: float = _limit(
        10.0, "see keepalive-s (gRPC core answers pings on threads of its own, so a busy "
        "client still answers in time; a hung or vanished one does not)")
    max_connection_idle_s: float = _limit(
        60.0, "a connection without any RPC for this long is closed (clients reconnect on "
        "demand)")

    def __post_init__(self) -> None:
        for limit in fields(self):
            value = getattr(self, limit.name)
            if not value > 0 or value == float("inf"):
                raise ValueError(f"P4Runtime limit {limit.name}: {value!r} must be a "
                                 "finite number above 0")
        if self.max_reads >= self.unary_workers:
            raise ValueError(f"P4Runtime limit max_reads ({self.max_reads}) must be below "
                             f"unary_workers ({self.unary_workers}): Writes need a thread too")

    @property
    def workers(self) -> int:
        """One thread per stream the caps allow (the primary, its backups, the waiting
        ones), plus the unary calls' own."""
        return 1 + self.max_backup_streams + self.max_waiting_streams + self.unary_workers

    def grpc_options(self) -> list[tuple[str, int]]:
        return [
            ("grpc.keepalive_time_ms", _ms(self.keepalive_s)),
            ("grpc.keepalive_timeout_ms", _ms(self.keepalive_timeout_s)),
            # what gRPC core waits for any ping's ack (its default: a minute)
            ("grpc.http2.ping_timeout_ms", _ms(self.keepalive_timeout_s)),
            # gRPC stops pinging after two pings without data by default: an idle stream
            # carries none, and must be pinged for as long as it lives.
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.max_connection_idle_ms", _ms(self.max_connection_idle_s)),
        ]


DEFAULTS = Limits()


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One ``--<name>`` option per limit (dashes for underscores), defaulting to Limits'."""
    for limit in fields(Limits):
        parser.add_argument("--" + limit.name.replace("_", "-"), type=type(limit.default),
                            default=limit.default,
                            metavar="SECONDS" if limit.name.endswith("_s") else "N",
                            help=f"{limit.metadata['help']} (default {limit.default:g})")


def from_arguments(args: argparse.Namespace) -> Limits:
    """The Limits of parsed options; a bad value exits naming its option."""
    values = {limit.name: getattr(args, limit.name) for limit in fields(Limits)}
    try:
        return Limits(**values)
    except ValueError as exc:
        raise SystemExit(f"p4runtime: {exc}") from exc
