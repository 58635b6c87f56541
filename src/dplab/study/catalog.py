"""The studies the repository holds: ``studies/NNN/`` folders beside ``scenarios/``."""

from __future__ import annotations

from pathlib import Path

from dplab.study.model import STUDY_FILE, Published, Study, StudyError, load_study


def repository_root() -> Path:
    """The checkout this package runs from (src/dplab/study -> the root): scenario files
    name their P4 programs relative to it."""
    return Path(__file__).resolve().parents[3]


def studies_dir(root: Path | None = None) -> Path:
    return (root or repository_root()) / "studies"


def numbers(root: Path | None = None) -> list[str]:
    folder = studies_dir(root)
    return sorted(p.parent.name for p in folder.glob(f"*/{STUDY_FILE}"))


def find(number: str, root: Path | None = None) -> tuple[Study, Published]:
    """Study ``number`` (``1`` or ``001``), both of its files loaded and checked."""
    if not number.isdigit():
        raise StudyError(f"study {number!r}: a study is named by its number, e.g. 001")
    key = f"{int(number):03d}"
    known = numbers(root)
    if key not in known:
        raise StudyError(f"no study {key} in {studies_dir(root)} (there are: "
                         f"{', '.join(known) or 'none'})")
    return load_study(studies_dir(root) / key)
