"""A small typed binding of libbpf's C API (``libbpf.so.1``, Debian's libbpf1 1.1) through
ctypes: open and load a BPF object file, find its programs and maps, read and write maps,
attach a program to an interface as XDP and detach it again, or as a tc filter.

XDP is attached through a BPF link (``bpf_link_create``), not through netlink's
``IFLA_XDP``: the kernel detaches a link's program when its last file descriptor closes, so
nothing stays attached once this process ends, even after SIGKILL. Every file descriptor
libbpf and the kernel hand out here is close-on-exec.

Kernel object names hold at most 15 characters (``BPF_OBJ_NAME_LEN`` is 16 with the NUL).
A program's name is its C function's (``xdp_l2``); maps can be renamed before loading
(``BpfObject(path, map_prefix=...)``: ``<prefix>_<map>`` cut to 15 characters), which is how
the plane puts the run's prefix and the switch on them (``dl3fa2s1_macs``).
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

OBJ_NAME_LEN = 15
BPF_ANY = 0
BPF_XDP = 37  # enum bpf_attach_type
XDP_FLAGS_DRV_MODE = 1 << 2
# enum bpf_attach_type, kernel 6.6 on (tcx: tc's BPF hook through a BPF link); Debian's
# uapi headers and libbpf 1.1 predate it, the kernel takes the number.
BPF_TCX_INGRESS = 46
BPF_TC_INGRESS, BPF_TC_EGRESS = 1, 2
TC_DIRECTIONS = {"ingress": BPF_TC_INGRESS, "egress": BPF_TC_EGRESS}
TC_HANDLE = TC_PRIORITY = 1  # our one cls_bpf filter on a port's ingress or egress
PER_CPU_TYPES = {5, 6, 10, 21}  # PERCPU_HASH, PERCPU_ARRAY, LRU_PERCPU_HASH, PERCPU_CGROUP_STORAGE


class LibbpfError(RuntimeError):
    """A libbpf call failed; the message names the call, its object and the kernel's reason."""


class _MapCreateOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("btf_fd", ctypes.c_uint32),
                ("btf_key_type_id", ctypes.c_uint32), ("btf_value_type_id", ctypes.c_uint32),
                ("btf_vmlinux_value_type_id", ctypes.c_uint32),
                ("inner_map_fd", ctypes.c_uint32), ("map_flags", ctypes.c_uint32),
                ("map_extra", ctypes.c_uint64), ("numa_node", ctypes.c_uint32),
                ("map_ifindex", ctypes.c_uint32)]


class _LinkCreateOpts(ctypes.Structure):
    # The tail is a union of per-attach-type options that XDP does not use (left zero).
    _fields_ = [("sz", ctypes.c_size_t), ("flags", ctypes.c_uint32),
                ("iter_info", ctypes.c_void_p), ("iter_info_len", ctypes.c_uint32),
                ("target_btf_id", ctypes.c_uint32), ("union", ctypes.c_uint8 * 32)]


class _TcHook(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("ifindex", ctypes.c_int),
                ("attach_point", ctypes.c_int), ("parent", ctypes.c_uint32)]


class _TcOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("prog_fd", ctypes.c_int), ("flags", ctypes.c_uint32),
                ("prog_id", ctypes.c_uint32), ("handle", ctypes.c_uint32),
                ("priority", ctypes.c_uint32)]


# int (*ring_buffer_sample_fn)(void *ctx, void *data, size_t size)
_SAMPLE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)


def _load_library() -> ctypes.CDLL:
    lib = ctypes.CDLL("libbpf.so.1", use_errno=True)
    ptr, cint, u32, cstr = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_char_p
    signatures = {
        "bpf_object__open_file": (ptr, [cstr, ptr]),
        "bpf_object__load": (cint, [ptr]),
        "bpf_object__close": (None, [ptr]),
        "bpf_object__next_map": (ptr, [ptr, ptr]),
        "bpf_object__find_program_by_name": (ptr, [ptr, cstr]),
        "bpf_object__next_program": (ptr, [ptr, ptr]),
        "bpf_program__name": (cstr, [ptr]),
        "bpf_program__section_name": (cstr, [ptr]),
        "bpf_program__fd": (cint, [ptr]),
        "bpf_map__name": (cstr, [ptr]),
        "bpf_map__fd": (cint, [ptr]),
        "bpf_map__type": (cint, [ptr]),
        "bpf_map__key_size": (u32, [ptr]),
        "bpf_map__value_size": (u32, [ptr]),
        "bpf_map__max_entries": (u32, [ptr]),
        "bpf_map__map_flags": (u32, [ptr]),
        "bpf_map__reuse_fd": (cint, [ptr, cint]),
        "bpf_map_create": (cint, [cint, cstr, u32, u32, u32, ctypes.POINTER(_MapCreateOpts)]),
        "bpf_map_update_elem": (cint, [cint, ptr, ptr, ctypes.c_uint64]),
        "bpf_map_lookup_elem": (cint, [cint, ptr, ptr]),
        "bpf_map_delete_elem": (cint, [cint, ptr]),
        "bpf_map_get_next_key": (cint, [cint, ptr, ptr]),
        "bpf_tc_hook_create": (cint, [ctypes.POINTER(_TcHook)]),
        "bpf_tc_hook_destroy": (cint, [ctypes.POINTER(_TcHook)]),
        "bpf_tc_attach": (cint, [ctypes.POINTER(_TcHook), ctypes.POINTER(_TcOpts)]),
        "bpf_tc_detach": (cint, [ctypes.POINTER(_TcHook), ctypes.POINTER(_TcOpts)]),
        "bpf_link_create": (cint, [cint, cint, cint, ctypes.POINTER(_LinkCreateOpts)]),
        "bpf_link_detach": (cint, [cint]),
        "libbpf_num_possible_cpus": (cint, []),
        "bpf_enable_stats": (cint, [cint]),
        "ring_buffer__new": (ptr, [cint, _SAMPLE_FN, ptr, ptr]),
        "ring_buffer__add": (cint, [ptr, cint, _SAMPLE_FN, ptr]),
        "ring_buffer__poll": (cint, [ptr, cint]),
        "ring_buffer__free": (None, [ptr]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    return lib


_lib = _load_library()


def _checked(result: int, what: str) -> int:
    """libbpf 1.x returns -errno on failure (and sets errno)."""
    if result < 0:
        raise LibbpfError(f"{what}: {os.strerror(-result)}")
    return result


def possible_cpus() -> int:
    return _checked(_lib.libbpf_num_possible_cpus(), "libbpf_num_possible_cpus")


class BpfMap:
    """One map of a loaded object; keys and values are the C structs' bytes."""

    def __init__(self, handle: int, owner: str) -> None:
        self.name = _lib.bpf_map__name(handle).decode()
        self.fd = _lib.bpf_map__fd(handle)
        self.key_size = _lib.bpf_map__key_size(handle)
        self.value_size = _lib.bpf_map__value_size(handle)
        self.per_cpu = _lib.bpf_map__type(handle) in PER_CPU_TYPES
        self._what = f"map {self.name} of {owner}"

    def update(self, key: bytes, value: bytes, flags: int = BPF_ANY) -> None:
        self._check_sizes(key, value)
        _checked(_lib.bpf_map_update_elem(self.fd, key, value, flags), f"updating {self._what}")

    def lookup(self, key: bytes) -> bytes | None:
        """The value (per-CPU maps: every CPU's value, concatenated), None when absent."""
        self._check_sizes(key)
        out = ctypes.create_string_buffer(self._value_bytes())
        if _lib.bpf_map_lookup_elem(self.fd, key, out) < 0:
            if ctypes.get_errno() == 2:  # ENOENT
                return None
            raise LibbpfError(f"looking up in {self._what}: {os.strerror(ctypes.get_errno())}")
        return out.raw

    def lookup_per_cpu(self, key: bytes) -> list[bytes]:
        """A per-CPU map's value on each possible CPU ([] when absent)."""
        raw = self.lookup(key)
        if raw is None:
            return []
        stride = (self.value_size + 7) // 8 * 8
        return [raw[i:i + self.value_size] for i in range(0, len(raw), stride)]

    def delete(self, key: bytes) -> None:
        self._check_sizes(key)
        _checked(_lib.bpf_map_delete_elem(self.fd, key), f"deleting from {self._what}")

    def iter_keys(self) -> Iterator[bytes]:
        previous = None
        key = ctypes.create_string_buffer(self.key_size)
        while _lib.bpf_map_get_next_key(self.fd, previous, key) == 0:
            yield key.raw
            previous = ctypes.create_string_buffer(key.raw, self.key_size)

    def _value_bytes(self) -> int:
        # The kernel copies a per-CPU value for every possible CPU, each rounded up to 8 bytes.
        if self.per_cpu:
            return (self.value_size + 7) // 8 * 8 * possible_cpus()
        return self.value_size

    def _check_sizes(self, key: bytes, value: bytes | None = None) -> None:
        if len(key) != self.key_size:
            raise LibbpfError(f"{self._what}: key of {len(key)} bytes, the map's are "
                              f"{self.key_size}")
        if value is not None and len(value) != self.value_size:
            raise LibbpfError(f"{self._what}: value of {len(value)} bytes, the map's are "
                              f"{self.value_size}")


def memlock_bytes(fd: int) -> int:
    """The kernel's own accounting of a BPF program's or map's memory (what it charges
    against memlock: instructions and JIT image, or the map's allocation), from the fd's
    ``/proc/self/fdinfo`` entry."""
    value = _fdinfo(fd, "memlock")
    if value is None:
        raise LibbpfError(f"fd {fd} is no BPF program or map (its fdinfo has no memlock)")
    return value


def run_time_ns(fd: int) -> int | None:
    """The time the kernel spent running the BPF program ``fd`` while run-time statistics
    were on (``run_time_ns`` of its fdinfo: every run timed around the program itself, not
    the redirect or transmit it asks for); None when this kernel does not account it."""
    return _fdinfo(fd, "run_time_ns")


def _fdinfo(fd: int, field: str) -> int | None:
    for line in Path(f"/proc/self/fdinfo/{fd}").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return None


BPF_STATS_RUN_TIME = 0  # enum bpf_stats_type


@contextmanager
def run_time_stats() -> Iterator[None]:
    """The kernel times every BPF program run while this is open (``BPF_ENABLE_STATS``:
    on while any holder keeps its fd, off again when the last closes, also if this process
    dies, unlike the ``kernel.bpf_stats_enabled`` sysctl). It costs every BPF program on the
    machine two clock reads a run, so hold it only while measuring."""
    fd = _checked(_lib.bpf_enable_stats(BPF_STATS_RUN_TIME), "bpf_enable_stats(RUN_TIME)")
    try:
        yield
    finally:
        os.close(fd)


class BpfObject:
    """A BPF object file opened and loaded into the kernel; ``close()`` unloads what no
    attached link still holds."""

    def __init__(self, path: Path, map_prefix: str = "") -> None:
        self.path = Path(path)
        handle = _lib.bpf_object__open_file(str(self.path).encode(), None)
        if not handle:
            raise LibbpfError(f"opening BPF object {self.path}: "
                              f"{os.strerror(ctypes.get_errno())}")
        self._handle: int | None = handle
        # By the names in the object file: a renamed map takes its new name in libbpf too.
        self._maps = self._map_handles()
        try:
            if map_prefix:
                self._rename_maps(map_prefix)
            _checked(_lib.bpf_object__load(handle), f"loading BPF object {self.path} "
                     "(libbpf printed the verifier's log above)")
        except BaseException:
            self.close()
            raise

    def _map_handles(self) -> dict[str, int]:
        handles = {}
        current = _lib.bpf_object__next_map(self._handle, None)
        while current:
            handles[_lib.bpf_map__name(current).decode()] = current
            current = _lib.bpf_object__next_map(self._handle, current)
        return handles

    def _rename_maps(self, prefix: str) -> None:
        """Create every map ourselves, under its prefixed name, for the object to use."""
        for name, handle in self._maps.items():
            self._recreate(handle, f"{prefix}_{name}"[:OBJ_NAME_LEN])

    def _recreate(self, handle: int, name: str) -> None:
        opts = _MapCreateOpts(sz=ctypes.sizeof(_MapCreateOpts),
                              map_flags=_lib.bpf_map__map_flags(handle))
        fd = _checked(_lib.bpf_map_create(
            _lib.bpf_map__type(handle), name.encode(), _lib.bpf_map__key_size(handle),
            _lib.bpf_map__value_size(handle), _lib.bpf_map__max_entries(handle),
            ctypes.byref(opts)), f"creating map {name} for {self.path}")
        try:  # reuse_fd keeps a duplicate of fd
            _checked(_lib.bpf_map__reuse_fd(handle, fd), f"using map {name} in {self.path}")
        finally:
            os.close(fd)

    def program_fd(self, name: str) -> int:
        program = _lib.bpf_object__find_program_by_name(self._require(), name.encode())
        if not program:
            raise LibbpfError(f"{self.path} has no program {name!r}")
        return _lib.bpf_program__fd(program)

    def programs(self) -> dict[str, str]:
        """Every program of the object: name -> ELF section (``xdp``, ``tc``, ...)."""
        found = {}
        current = _lib.bpf_object__next_program(self._require(), None)
        while current:
            found[_lib.bpf_program__name(current).decode()] = \
                _lib.bpf_program__section_name(current).decode()
            current = _lib.bpf_object__next_program(self._require(), current)
        return found

    def memory(self) -> tuple[int, int]:
        """(programs, maps): bytes the kernel accounts to this object's programs and maps."""
        return (sum(memlock_bytes(fd) for fd in self._program_fds()),
                sum(memlock_bytes(_lib.bpf_map__fd(h)) for h in self._maps.values()))

    def run_time_ns(self) -> int | None:
        """The time the kernel spent running this object's programs while run-time
        statistics were on (``run_time_stats``); None when it does not account it."""
        times = [run_time_ns(fd) for fd in self._program_fds()]
        return None if None in times else sum(t for t in times if t is not None)

    def _program_fds(self) -> list[int]:
        fds = []
        current = _lib.bpf_object__next_program(self._require(), None)
        while current:
            fds.append(_lib.bpf_program__fd(current))
            current = _lib.bpf_object__next_program(self._require(), current)
        return fds

    def map_names(self) -> list[str]:
        """The maps' names in the object file."""
        return sorted(self._maps)

    def map(self, name: str) -> BpfMap:
        """The map called ``name`` in the object file (whatever it was renamed to)."""
        self._require()
        if name not in self._maps:
            raise LibbpfError(f"{self.path} has no map {name!r} (it has {sorted(self._maps)})")
        return BpfMap(self._maps[name], str(self.path))

    def _require(self) -> int:
        if self._handle is None:
            raise LibbpfError(f"BPF object {self.path} is closed")
        return self._handle

    def close(self) -> None:
        """Idempotent."""
        if self._handle is not None:
            _lib.bpf_object__close(self._handle)
            self._handle = None


class XdpLink:
    """``program_fd`` attached in native (driver) mode to interface ``ifindex`` of the calling
    thread's network namespace, until ``detach()`` or this process's end."""

    def __init__(self, program_fd: int, ifindex: int, label: str) -> None:
        self.label = label
        opts = _LinkCreateOpts(sz=ctypes.sizeof(_LinkCreateOpts), flags=XDP_FLAGS_DRV_MODE)
        result = _lib.bpf_link_create(program_fd, ifindex, BPF_XDP, ctypes.byref(opts))
        if result == -errno.ERANGE:  # veth_xdp_set: the MTU's frames would not fit one page
            raise LibbpfError(f"attaching XDP (driver mode) to {label}: its MTU is too large "
                              "for XDP (a veth runs XDP only on frames that fit one page, "
                              "about 3.5 KB); lower the topology's mtu")
        self._fd: int | None = _checked(result, f"attaching XDP (driver mode) to {label}")

    def detach(self) -> None:
        """Idempotent. An interface already gone (its namespace deleted) took its program
        with it; the link only has to be closed then."""
        if self._fd is not None:
            _lib.bpf_link_detach(self._fd)
            os.close(self._fd)
            self._fd = None


class TcxLink:
    """``program_fd`` (a tc program) on the tcx ingress hook of interface ``ifindex`` of the
    calling thread's namespace, through a BPF link: no clsact qdisc, and, like XdpLink,
    detached when the link's last fd closes, so nothing stays attached after this process
    ends, even by SIGKILL. Needs kernel 6.6 or later."""

    def __init__(self, program_fd: int, ifindex: int, label: str) -> None:
        self.label = label
        self._fd: int | None = _checked(
            _lib.bpf_link_create(program_fd, ifindex, BPF_TCX_INGRESS, None),
            f"attaching a tc program to tcx ingress of {label} (kernel 6.6 or later)")

    def detach(self) -> None:
        """Idempotent; an interface already gone took its program with it."""
        if self._fd is not None:
            _lib.bpf_link_detach(self._fd)
            os.close(self._fd)
            self._fd = None


class TcFilter:
    """``program_fd`` as a cls_bpf filter (direct action) on the tc ``direction`` hook
    ("ingress" or "egress") of interface ``ifindex`` of the calling thread's namespace, until
    ``detach()`` (called from the same namespace). libbpf 1.1 attaches tc through netlink,
    not a BPF link: the filter outlives this process until ``detach()`` or its interface's
    end (the run's namespaces go at cleanup). The clsact qdisc is removed again only when
    this attachment created it (and with it the filter of the other direction, if one was
    added after). ``add_qdisc`` False: the caller's filter of the other direction added the
    qdisc already (asking libbpf again makes it print the kernel's refusal)."""

    def __init__(self, program_fd: int, ifindex: int, label: str,
                 direction: str = "ingress", add_qdisc: bool = True) -> None:
        self.label = label
        self._hook = _TcHook(sz=ctypes.sizeof(_TcHook), ifindex=ifindex,
                             attach_point=TC_DIRECTIONS[direction])
        self._created_qdisc = False
        if add_qdisc:
            created = _lib.bpf_tc_hook_create(ctypes.byref(self._hook))
            if created < 0 and created != -errno.EEXIST:
                _checked(created, f"adding a clsact qdisc to {label}")
            self._created_qdisc = created == 0
        opts = _TcOpts(sz=ctypes.sizeof(_TcOpts), prog_fd=program_fd, handle=TC_HANDLE,
                       priority=TC_PRIORITY)
        try:
            _checked(_lib.bpf_tc_attach(ctypes.byref(self._hook), ctypes.byref(opts)),
                     f"attaching a tc {direction} program to {label}")
        except LibbpfError:
            self._remove_qdisc()
            raise
        self._attached = True

    def detach(self) -> None:
        """Idempotent; an interface already gone took its filter with it."""
        if self._attached:
            opts = _TcOpts(sz=ctypes.sizeof(_TcOpts), handle=TC_HANDLE, priority=TC_PRIORITY)
            _lib.bpf_tc_detach(ctypes.byref(self._hook), ctypes.byref(opts))
            self._remove_qdisc()
            self._attached = False

    def _remove_qdisc(self) -> None:
        if self._created_qdisc:
            self._hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS  # = the whole clsact
            _lib.bpf_tc_hook_destroy(ctypes.byref(self._hook))
            self._created_qdisc = False


class RingBuffers:
    """Records from several BPF ring buffers (``BPF_MAP_TYPE_RINGBUF``) through one
    ``poll()``, each with the label of the buffer it came from."""

    def __init__(self) -> None:
        self._handle: int | None = None
        self._callbacks: list[Any] = []  # ctypes must keep every callback alive
        self._records: list[tuple[str, bytes]] = []

    def add(self, ring: BpfMap, label: str) -> None:
        def take(_ctx: int | None, data: int, size: int) -> int:
            self._records.append((label, ctypes.string_at(data, size)))
            return 0

        callback = _SAMPLE_FN(take)
        self._callbacks.append(callback)
        if self._handle is None:
            handle = _lib.ring_buffer__new(ring.fd, callback, None, None)
            if not handle:
                raise LibbpfError(f"reading ring buffer {ring.name}: "
                                  f"{os.strerror(ctypes.get_errno())}")
            self._handle = handle
        else:
            _checked(_lib.ring_buffer__add(self._handle, ring.fd, callback, None),
                     f"reading ring buffer {ring.name}")

    def poll(self, timeout_ms: int) -> list[tuple[str, bytes]]:
        """What arrived, waiting up to ``timeout_ms`` for the first record."""
        if self._handle is None:
            raise LibbpfError("polling ring buffers before add() or after close()")
        result = _lib.ring_buffer__poll(self._handle, timeout_ms)
        if result < 0 and result != -errno.EINTR:
            _checked(result, "polling ring buffers")
        records, self._records = self._records, []
        return records

    def close(self) -> None:
        """Idempotent."""
        if self._handle is not None:
            _lib.ring_buffer__free(self._handle)
            self._handle = None
