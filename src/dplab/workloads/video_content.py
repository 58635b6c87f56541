"""Video content for the CDN workload: real H.264 made locally with ffmpeg, cached.

One encode per parameter set (resolution, fps, bitrate, duration, segment length), kept in
a cache folder (default ~/.cache/dplab/video, or $DPLAB_VIDEO_CACHE) so repetitions never
re-encode. The picture is ffmpeg's `testsrc` pattern with its burnt-in clock showing
seconds to two decimals, so a captured frame tells which moment of the content it is.

Folder of one content:
    content.mp4          H.264 (libx264 ultrafast, constant bitrate, a keyframe every segment)
    hls/index.m3u8       HLS VOD playlist; hls/segNNN.ts its MPEG-TS segments (copied)
    stream.sdp           the SDP ffmpeg writes for an RTP stream of content.mp4 (its codec
                         parameters); receivers get a copy with their own address and port
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from dplab.substrate import staging

FFMPEG = ["ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error"]
ENCODE_TIMEOUT_S = 600.0
# A folder being encoded is <key> + this + owner tag until complete; `dplab cleanup` removes
# one whose owner died (substrate.staging).
STAGING_MARKER = ".building-"
FORMAT_VERSION = "1"  # bump when the way content is made changes, so old caches are not used


class ContentError(RuntimeError):
    """ffmpeg missing or an encode that failed, with ffmpeg's own words."""


@dataclass(frozen=True)
class ContentSpec:
    width: int
    height: int
    fps: int
    bitrate_kbit: int
    duration_s: float
    segment_s: float

    @property
    def key(self) -> str:
        text = (
            f"{FORMAT_VERSION} {self.width}x{self.height} {self.fps} {self.bitrate_kbit} "
            f"{self.duration_s:g} {self.segment_s:g}"
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Content:
    spec: ContentSpec
    folder: Path

    @property
    def mp4(self) -> Path:
        return self.folder / "content.mp4"

    @property
    def hls(self) -> Path:
        return self.folder / "hls"

    @property
    def sdp(self) -> Path:
        return self.folder / "stream.sdp"

    def segment_bytes(self) -> int:
        """Bytes a player downloads: the playlist and every segment."""
        return sum(path.stat().st_size for path in self.hls.iterdir())

    def receiver_sdp(self, port: int) -> str:
        """The stream's SDP as a receiver on 127.0.0.1:port must see it."""
        lines = []
        for line in self.sdp.read_text().splitlines():
            if line.startswith("c=IN IP4"):
                line = "c=IN IP4 127.0.0.1"
            elif line.startswith("m=video"):
                line = f"m=video {port} " + line.split(" ", 2)[2]
            lines.append(line)
        return "\n".join(lines) + "\n"


def cache_root() -> Path:
    default = Path.home() / ".cache" / "dplab" / "video"
    return Path(os.environ.get("DPLAB_VIDEO_CACHE", default))


def ensure(spec: ContentSpec, root: Path | None = None) -> Content:
    """The cached content for spec, encoding it first when it is not there yet."""
    folder = (root or cache_root()) / spec.key
    content = Content(spec, folder)
    if (folder / "complete").exists():
        return content
    if shutil.which("ffmpeg") is None:
        raise ContentError("video: ffmpeg is not installed (scripts/setup.sh installs it)")
    building = folder.with_name(f"{folder.name}{STAGING_MARKER}{staging.owner_tag()}")
    shutil.rmtree(building, ignore_errors=True)
    try:
        (building / "hls").mkdir(parents=True)
        _encode(spec, building)
        (building / "complete").write_text("")
    except BaseException:  # failed or interrupted: nothing half-made stays in the cache
        shutil.rmtree(building, ignore_errors=True)
        raise
    try:
        building.rename(folder)  # atomic: a half-made folder is never used
    except OSError:  # another process finished the same content first
        shutil.rmtree(building, ignore_errors=True)
    return content


def _encode(spec: ContentSpec, folder: Path) -> None:
    gop = max(1, round(spec.fps * spec.segment_s))  # a keyframe starts every segment
    source = (
        f"testsrc=size={spec.width}x{spec.height}:rate={spec.fps}:"
        f"duration={spec.duration_s:g}:decimals=2"
    )
    rate = f"{spec.bitrate_kbit}k"
    _ffmpeg(
        [
            "-f",
            "lavfi",
            "-i",
            source,
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-b:v",
            rate,
            "-maxrate",
            rate,
            "-bufsize",
            rate,
            "-g",
            str(gop),
            "-keyint_min",
            str(gop),
            "-sc_threshold",
            "0",
            "-pix_fmt",
            "yuv420p",
            "-movflags",
            "+faststart",
            str(folder / "content.mp4"),
        ]
    )
    _ffmpeg(
        [
            "-i",
            str(folder / "content.mp4"),
            "-c",
            "copy",
            "-f",
            "hls",
            "-hls_time",
            f"{spec.segment_s:g}",
            "-hls_list_size",
            "0",
            "-hls_playlist_type",
            "vod",
            "-hls_segment_filename",
            str(folder / "hls" / "seg%03d.ts"),
            str(folder / "hls" / "index.m3u8"),
        ]
    )
    # An RTP "stream" of no frames, only to have ffmpeg write the stream's SDP.
    _ffmpeg(
        [
            "-i",
            str(folder / "content.mp4"),
            "-c",
            "copy",
            "-an",
            "-frames:v",
            "0",
            "-f",
            "rtp",
            "-sdp_file",
            str(folder / "stream.sdp"),
            "rtp://127.0.0.1:9",
        ]
    )


def _ffmpeg(args: list[str]) -> None:
    done = _run_ffmpeg([*FFMPEG, "-y", *args], text=True)
    if done.returncode != 0:
        raise ContentError(
            f"video: ffmpeg {' '.join(args[:4])} ... failed: {done.stderr.strip()[-400:]}"
        )


def extract_frame(video: Path, at_s: float, png: Path) -> None:
    """Write the frame shown at at_s seconds into video (content time) as a PNG."""
    _ffmpeg(["-ss", f"{at_s:.3f}", "-i", str(video), "-frames:v", "1", "-update", "1", str(png)])


def decode_rgb(png: Path) -> bytes:
    """The picture's pixels as 8-bit RGB bytes (ffmpeg decodes, so any size works)."""
    done = _run_ffmpeg([*FFMPEG, "-i", str(png), "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                       text=False)
    if done.returncode != 0:
        raise ContentError(f"video: ffmpeg could not decode {png}: {done.stderr.decode()[-300:]}")
    return done.stdout


def _run_ffmpeg(argv: list[str], text: bool) -> subprocess.CompletedProcess:
    """ffmpeg to its end, or ContentError once it took ENCODE_TIMEOUT_S (it was killed)."""
    try:
        return subprocess.run(argv, capture_output=True, text=text, check=False,
                              timeout=ENCODE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ContentError(f"video: ffmpeg {' '.join(argv[len(FFMPEG):][:4])} ... took "
                           f"longer than {ENCODE_TIMEOUT_S:g} s; stopped") from None
