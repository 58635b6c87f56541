"""Serve P4Runtime for one or several dplab-switches until SIGTERM:

    python -m dplab.p4runtime --serve 1 S1 unix:/p/s1.grpc [--serve 2 S2 127.0.0.1:9559 ...]

Each ``--serve DEVICE_ID SWITCH_SOCKET LISTEN`` is one logical server: its own gRPC server,
address, thread pool, switch connection and state; they only share the interpreter (one
process start and one grpc import for a whole run instead of one per switch). Switch
sockets that do not exist yet are waited for (``--switch-wait``), in the order given. As
each server listens, the process prints ``serving DEVICE_ID`` on stdout, and ``ready`` once
every one does: a launcher can start using each switch at its line, or block on the last.
The limit options (``--max-backup-streams`` and the others below it in ``--help``,
``limits.py``) bound what clients can hold of each server.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

import grpc

from dplab.p4runtime import limits
from dplab.p4runtime.server import P4RuntimeServicer, grpc_server
from dplab.p4runtime.switch_link import SwitchLinkError

STOP_GRACE_S = 0.5


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    devices = _devices(args)
    bounds = limits.from_arguments(args)
    servers = []
    for device_id, socket_path, address in devices:
        servers.append(_serve(device_id, socket_path, address, args.switch_wait, bounds))
        print(f"serving {device_id}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print("ready", flush=True)
    stop.wait()
    for done in [server.stop(grace=STOP_GRACE_S) for server in servers]:
        done.wait()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", nargs=3, action="append", required=True,
                        metavar=("DEVICE_ID", "SWITCH_SOCKET", "LISTEN"),
                        help="one logical server (LISTEN: unix:/path or 127.0.0.1:port); "
                        "repeat for several switches")
    parser.add_argument("--switch-wait", type=float, default=15.0,
                        help="seconds to wait for a switch's control socket to accept")
    limits.add_arguments(parser)
    return parser


def _devices(args: argparse.Namespace) -> list[tuple[int, str, str]]:
    devices = []
    for device_id, socket_path, address in args.serve:
        if not device_id.isdigit():
            raise SystemExit(f"p4runtime: --serve {device_id}: the device id must be a number")
        devices.append((int(device_id), socket_path, address))
    return devices


def _serve(device_id: int, socket_path: str, address: str, switch_wait: float,
           bounds: limits.Limits) -> grpc.Server:
    try:
        servicer = P4RuntimeServicer(socket_path, device_id, switch_wait, bounds)
    except SwitchLinkError as exc:
        sys.exit(f"p4runtime: device {device_id}: {exc}")
    server = grpc_server(servicer, f"dev{device_id}")
    if not server.add_insecure_port(address):
        sys.exit(f"p4runtime: device {device_id}: cannot listen on {address}")
    server.start()
    return server


if __name__ == "__main__":
    main()
