"""Run by Debian's /usr/bin/python3 (where Mininet lives), not by dplab's venv: execute a
Mininet custom-topology file, build one of its topologies and print it as JSON.

    /usr/bin/python3 mininet_dump.py FILE NAME PARAMS_JSON [ARGS_JSON]

NAME is a key of the file's ``topos`` dict (Mininet's ``--custom`` convention) or the name
of a ``Topo`` class it defines; "" picks the only one. PARAMS_JSON are keyword arguments for
it, ARGS_JSON a list of positional ones (Mininet's ``--topo NAME,3,2``).
Prints ``{"topology": {...}}`` or ``{"error": "..."}`` on stdout, exit 0 or 1.
Without a ``topos`` dict, the Topo classes the file defines are the choices.
Standard library and Mininet only: this file cannot import dplab.
"""

import contextlib
import json
import runpy
import sys
import traceback
from typing import TextIO

RUN_NAME = "__mininet_custom__"


def main(argv: list[str]) -> int:
    path, name, params = argv[1], argv[2], json.loads(argv[3])
    args = json.loads(argv[4]) if len(argv) > 4 else []
    out = sys.stdout
    try:
        from mininet.topo import Topo
    except ImportError as exc:
        return _reply(out, error=f"Mininet's Python module is missing ({exc}); "
                      "install the Debian package 'mininet'")
    # The user's prints go to stderr: stdout carries our JSON alone.
    with contextlib.redirect_stdout(sys.stderr):
        try:
            module = runpy.run_path(path, run_name=RUN_NAME)
        except Exception as exc:  # any error in the user's file is reported, not raised
            return _reply(out, error=f"{path}: error in the file: {_where(exc, path)}")
        topos = dict(module.get("topos") or {})
        classes = _topo_classes(module, Topo)
        key = name or _only(topos or classes)
        factory = topos.get(key) or classes.get(key)
        if factory is None:
            problem = f"no topology {key!r}" if key else "more than one topology"
            return _reply(out, error=f"{path}: {problem}; it defines "
                          f"{_listing(topos, classes)}; choose one with 'name'")
        try:
            topo = factory(*args, **params)
        except Exception as exc:
            given = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in params.items())])
            return _reply(out, error=f"{path}: building {key!r}({given}) failed: "
                          f"{_where(exc, path)}")
    if not isinstance(topo, Topo):
        return _reply(out, error=f"{path}: {key!r} gave a {type(topo).__name__}, "
                      "not a Mininet Topo")
    return _reply(out, topology=_describe(key, topo))


def _topo_classes(module: dict, topo_class: type) -> dict:
    """Topo subclasses the file itself defines, by class name."""
    return {value.__name__: value for value in module.values()
            if isinstance(value, type) and issubclass(value, topo_class)
            and value.__module__ == RUN_NAME}


def _only(choices: dict) -> str:
    return next(iter(choices)) if len(choices) == 1 else ""


def _listing(topos: dict, classes: dict) -> str:
    if not topos and not classes:
        return "no topologies (no 'topos' dict, no Topo class)"
    parts = [f"topos {', '.join(sorted(topos))}" if topos else "",
             f"Topo classes {', '.join(sorted(classes))}" if classes else ""]
    return "; ".join(p for p in parts if p)


def _describe(key: str, topo) -> dict:
    links = []
    for node1, node2, info in topo.links(sort=True, withInfo=True):
        opts = {k: v for k, v in info.items() if k not in ("node1", "node2", "port1", "port2")}
        links.append({"node1": node1, "node2": node2, "port1": info.get("port1"),
                      "port2": info.get("port2"), "opts": opts})
    return {"name": key, "hosts": topo.hosts(sort=True), "switches": topo.switches(sort=True),
            "links": links}


def _where(exc: BaseException, path: str) -> str:
    """The last line of the traceback, with the file:line inside the user's file if any."""
    line = traceback.format_exception_only(type(exc), exc)[-1].strip()
    if isinstance(exc, SyntaxError):
        return f"{exc.filename}:{exc.lineno}: {line}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    frame = frames[-1] if frames else traceback.extract_tb(exc.__traceback__)[-1]
    return f"{frame.filename}:{frame.lineno}: {line}"


def _reply(out: TextIO, **answer: object) -> int:
    print(json.dumps(answer, default=str), file=out)
    return 1 if "error" in answer else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
