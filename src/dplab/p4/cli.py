"""`dplab p4 compile prog.p4 -o outdir` writes <name>.ir.json, .p4info.txtpb, .p4info.bin.

`python -m dplab.p4.cli PROGRAM OUTDIR` does the same in a process of its own, so that a
caller can bound its time (the p4 plane does): the written files as JSON on stdout, the
warnings and a P4Error's message on stderr, exit status 2 for bad input.
"""

import json
import sys
from pathlib import Path

from google.protobuf import text_format

from dplab.p4.compiler import compile_with_warnings
from dplab.p4.errors import P4Error
from dplab.p4.p4info import build_p4info


def compile_command(path: str | Path, outdir: str | Path) -> dict[str, Path]:
    """Compile one program; returns the written files by kind. Warnings go to stderr (they
    do not stop the compilation); raises P4Error on bad input."""
    source = Path(path)
    ir, warnings = compile_with_warnings(source)
    for warning in warnings:
        print(warning, file=sys.stderr)
    info = build_p4info(ir)
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"ir": out / f"{source.stem}.ir.json",
             "p4info_txt": out / f"{source.stem}.p4info.txtpb",
             "p4info_bin": out / f"{source.stem}.p4info.bin"}
    files["ir"].write_text(json.dumps(ir, indent=1) + "\n")
    files["p4info_txt"].write_text(text_format.MessageToString(info))
    files["p4info_bin"].write_bytes(info.SerializeToString())
    return files


def main(argv: list[str]) -> int:
    program, outdir = argv
    try:
        files = compile_command(program, outdir)
    except P4Error as exc:
        print(exc, file=sys.stderr)
        return 2
    print(json.dumps({kind: str(path) for kind, path in files.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
