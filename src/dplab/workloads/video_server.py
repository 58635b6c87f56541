"""The CDN's HTTP server, run in a server host's namespace: serves one folder of HLS files.

    python -m dplab.workloads.video_server --dir FOLDER --port P [--tos BYTE]

Python's threading HTTP/1.1 file server (one thread per client, so clients are served at
once), with Nagle's algorithm off: without it, a body's last small piece waits for the
client's delayed ACK (40 ms on Linux), which would be the server's artefact in every
segment's download time, not the network's. Prints "ready" once listening; logs nothing
per request. --tos sets the IPv4 ToS byte on the listening socket, which every accepted
connection inherits (Linux copies it on accept), so the video's packets carry it.
"""

from __future__ import annotations

import argparse
import functools
import socket
import sys
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer


class SegmentHandler(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a player reuses its connection
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - base signature
        """Quiet: one line per segment and client would only fill the log."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="video_server")
    parser.add_argument("--dir", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tos", type=int, default=None)
    args = parser.parse_args(argv)
    handler = functools.partial(SegmentHandler, directory=args.dir)
    with ThreadingHTTPServer(("0.0.0.0", args.port), handler, bind_and_activate=False) as server:
        if args.tos is not None:
            server.socket.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, args.tos)
        server.server_bind()
        server.server_activate()
        print("ready", flush=True)
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
