"""An HLS player model, run in a client host's namespace: real HTTP downloads over TCP.

    python -m dplab.workloads.video_player --url http://IP:PORT/index.m3u8
        [--max-buffer 30] [--timeout 60]

It fetches the playlist, then the segments one after another over one HTTP/1.1
connection, as a player does. It keeps a playout buffer in wall-clock time
(measure.video.Playout) and asks for the next segment only while less than --max-buffer
content seconds are buffered, so a long video is fetched at its playing pace, not in one
burst. At the end it prints one JSON line: every segment (index, duration_s, request_s,
done_s, bytes), every read of the body (t_s, bytes), the playlist's bytes and an error (or
null). Times are seconds since the playlist was asked for. The metrics are computed from
these records by workloads.video, with the same Playout.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import time
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from dplab.measure.video import Playout

READ_BYTES = 65536


@dataclass
class Records:
    started: float = field(default_factory=time.monotonic)
    segments: list[list[float]] = field(default_factory=list)
    chunks: list[list[float]] = field(default_factory=list)
    playlist_bytes: int | None = None
    error: str | None = None

    def now(self) -> float:
        return time.monotonic() - self.started


class Downloader:
    """GETs over one kept-alive connection, reconnecting when the server closed it."""

    def __init__(self, url: str, deadline: float) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "", parts.port or 80
        self.deadline = deadline
        self.conn: http.client.HTTPConnection | None = None

    def get(self, path: str, records: Records) -> bytes:
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self._left())
        self.conn.request("GET", path)
        response = self.conn.getresponse()
        if response.status != 200:
            raise OSError(f"GET {path}: HTTP {response.status} {response.reason}")
        body = bytearray()
        while chunk := response.read(READ_BYTES):
            body += chunk
            records.chunks.append([records.now(), len(chunk)])
            self.conn.sock.settimeout(self._left())
        if response.will_close:
            self.close()
        return bytes(body)

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("player timed out")
        return left

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def parse_playlist(text: str) -> list[tuple[str, float]]:
    """(segment URI, duration s) of an HLS media playlist, in order."""
    segments, duration = [], None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("#EXTINF:"):
            duration = float(line[len("#EXTINF:") :].split(",")[0])
        elif line and not line.startswith("#"):
            if duration is None:
                raise ValueError(f"playlist: segment {line!r} has no #EXTINF duration")
            segments.append((line, duration))
            duration = None
    return segments


def play(url: str, max_buffer_s: float, timeout_s: float) -> Records:
    records = Records()
    downloader = Downloader(url, time.monotonic() + timeout_s)
    try:
        playlist = downloader.get(urlsplit(url).path, records)
        records.playlist_bytes = len(playlist)
        _fetch_segments(url, parse_playlist(playlist.decode()), downloader, records, max_buffer_s)
    except (OSError, ValueError, http.client.HTTPException) as exc:
        records.error = f"{type(exc).__name__}: {exc}"
    finally:
        downloader.close()
    return records


def _fetch_segments(
    url: str,
    segments: list[tuple[str, float]],
    downloader: Downloader,
    records: Records,
    max_buffer_s: float,
) -> None:
    playout = Playout()
    for index, (uri, duration) in enumerate(segments):
        ahead = playout.buffer_s(records.now()) - max_buffer_s
        if ahead > 0:
            time.sleep(ahead)
        requested = records.now()
        body = downloader.get(urlsplit(urljoin(url, uri)).path, records)
        done = records.now()
        playout.arrived(done, duration)
        records.segments.append([index, duration, requested, done, len(body)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="video_player")
    parser.add_argument("--url", required=True)
    parser.add_argument("--max-buffer", type=float, default=30.0)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    records = play(args.url, args.max_buffer, args.timeout)
    keys = ("segments", "chunks", "playlist_bytes", "error")
    report = {key: getattr(records, key) for key in keys}
    print(json.dumps(report), flush=True)
    return 0 if records.error is None else 1


if __name__ == "__main__":
    sys.exit(main())
