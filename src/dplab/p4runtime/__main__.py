"""``python -m dplab.p4runtime --switch-socket S --listen unix:/path [--device-id 1]``:
serve P4Runtime for one dplab-switch until SIGTERM."""

from __future__ import annotations

import argparse
import signal
import threading
from concurrent import futures

import grpc
from p4.v1 import p4runtime_pb2_grpc

from dplab.p4runtime.server import P4RuntimeServicer

# Every StreamChannel holds one thread for its life; leave room for unary calls.
WORKERS = 16


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--switch-socket", required=True, help="dplab-switch control socket")
    parser.add_argument("--listen", required=True,
                        help="gRPC address, e.g. unix:/run/dplab/x/s1.grpc or 127.0.0.1:9559")
    parser.add_argument("--device-id", type=int, default=1)
    args = parser.parse_args(argv)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=WORKERS))
    p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(
        P4RuntimeServicer(args.switch_socket, args.device_id), server)
    if not server.add_insecure_port(args.listen):
        raise SystemExit(f"p4runtime: cannot listen on {args.listen}")
    server.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.stop(grace=0.5).wait()


if __name__ == "__main__":
    main()
