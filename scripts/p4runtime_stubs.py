"""Generates the P4Runtime Python stubs (p4.v1.*, p4.config.v1.*) for the installed protobuf.

    python scripts/p4runtime_stubs.py P4RUNTIME_WHEEL OUT_DIR

The `p4runtime` wheel ships no .proto files, and its generated modules only load on
protobuf 3.20. Each of them embeds its file's serialized FileDescriptorProto, though: this
reads those bytes without importing the modules (with `ast`), adds the descriptors of what
they import (google/protobuf/any.proto, google/rpc/status.proto) from the installed
packages, and runs grpc_tools' protoc on that descriptor set. The result goes to OUT_DIR,
which a .pth file puts on the venv's sys.path (called by scripts/setup.sh).
"""

import ast
import importlib
import shutil
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor_pb2 import FileDescriptorProto
from grpc_tools import protoc

PTH_NAME = "dplab_p4runtime_stubs.pth"


def embedded_descriptor(source: str, where: str) -> bytes:
    """The serialized_pb=b'...' argument of the module's FileDescriptor(...) call."""
    for node in ast.walk(ast.parse(source, where)):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "serialized_pb":
                    return ast.literal_eval(keyword.value)
    raise SystemExit(f"{where}: no serialized_pb=... FileDescriptor in it")


def wheel_descriptors(wheel: Path) -> list[FileDescriptorProto]:
    files = []
    with zipfile.ZipFile(wheel) as archive:
        for name in sorted(archive.namelist()):
            if name.startswith("p4/") and name.endswith("_pb2.py"):
                source = archive.read(name).decode()
                proto = FileDescriptorProto()
                proto.ParseFromString(embedded_descriptor(source, f"{wheel}:{name}"))
                files.append(proto)
    if not files:
        raise SystemExit(f"{wheel}: no p4/**/*_pb2.py modules in it")
    return files


def installed_descriptor(proto_name: str) -> FileDescriptorProto:
    """A dependency such as google/rpc/status.proto, from its installed _pb2 module."""
    module = importlib.import_module(proto_name.removesuffix(".proto").replace("/", ".") + "_pb2")
    proto = FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(proto)
    return proto


def descriptor_set(files: list[FileDescriptorProto]) -> descriptor_pb2.FileDescriptorSet:
    """The given files plus, transitively, every file they import."""
    by_name = {f.name: f for f in files}
    pending = [dep for f in files for dep in f.dependency]
    while pending:
        name = pending.pop()
        if name not in by_name:
            by_name[name] = installed_descriptor(name)
            pending.extend(by_name[name].dependency)
    return descriptor_pb2.FileDescriptorSet(file=by_name.values())


def generate(wheel: Path, out: Path) -> None:
    files = wheel_descriptors(wheel)
    with tempfile.TemporaryDirectory(prefix="p4runtime-stubs-") as scratch:
        scratch_dir = Path(scratch)
        set_path = scratch_dir / "p4runtime.desc"
        set_path.write_bytes(descriptor_set(files).SerializeToString())
        generated = scratch_dir / "out"
        generated.mkdir()
        status = protoc.main([
            "protoc", f"--descriptor_set_in={set_path}",
            f"--python_out={generated}", f"--grpc_python_out={generated}",
            *(f.name for f in files),
        ])
        if status != 0:
            raise SystemExit(f"protoc failed (exit {status}) on {wheel}")
        # Regular packages, not namespace ones: nothing else may contribute to p4.*.
        for package in [generated / "p4", *(generated / "p4").rglob("*")]:
            if package.is_dir():
                (package / "__init__.py").touch()
        shutil.rmtree(out, ignore_errors=True)
        shutil.move(generated, out)


def put_on_sys_path(out: Path) -> None:
    (Path(sysconfig.get_paths()["purelib"]) / PTH_NAME).write_text(f"{out.resolve()}\n")


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    wheel, out = Path(sys.argv[1]), Path(sys.argv[2])
    generate(wheel, out)
    put_on_sys_path(out)


if __name__ == "__main__":
    main()
