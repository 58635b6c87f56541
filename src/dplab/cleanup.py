"""What `dplab cleanup` (and the start of every matrix) removes: what runs whose process died
left behind, namespaces and processes (``registry.reclaim_stale``) and staging folders
(``substrate.staging``: flows' temp folders, video content half encoded)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from dplab.substrate import registry, staging
from dplab.workloads import flows, video_content


def reclaim() -> list[str]:
    """Remove everything a dead run left; one line per thing removed, for the user."""
    lines = [f"run {prefix}: its namespaces, processes and run folder"
             for prefix in registry.reclaim_stale()]
    places = [(Path(tempfile.gettempdir()), flows.STAGING_MARKER),
              (video_content.cache_root(), video_content.STAGING_MARKER)]
    for folder, marker in places:
        lines.extend(f"staging folder {path}" for path in staging.reclaim(folder, marker))
    return lines
