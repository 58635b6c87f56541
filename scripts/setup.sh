#!/usr/bin/env bash
# Installs everything dplab uses: Debian packages, the Python environment, the builds.
# Each step is skipped when its inputs have not changed since it last succeeded.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
stamps="$root/.venv/.stamps"

APT_PACKAGES=(
  iproute2 iputils-ping ethtool procps psmisc util-linux
  openvswitch-switch openvswitch-common
  iperf iperf3 tcpdump mininet bridge-utils
  python3-venv chromium ffmpeg
  clang llvm libbpf-dev linux-libc-dev bpftool
)

# A short hash of the given files, or of stdin without arguments.
fingerprint() { cat "$@" 2>/dev/null | sha256sum | cut -c1-16; }
done_before() { [ -f "$stamps/$1" ] && [ "$(cat "$stamps/$1")" = "$2" ]; }
mark_done() { mkdir -p "$stamps"; echo "$2" > "$stamps/$1"; }

install_debian_packages() {
  local want; want="$(echo "${APT_PACKAGES[*]}" | fingerprint)"
  done_before apt "$want" && return 0
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  # Debian's package may start the host's own OVS; dplab runs private daemons and never
  # uses the host's, so leave whatever the host runs alone.
  mark_done apt "$want"
}

install_python_env() {
  local want; want="$(fingerprint "$root/pyproject.toml")"
  [ -x "$root/.venv/bin/python" ] || python3 -m venv "$root/.venv"
  done_before python "$want" && return 0
  echo "setup: installing the Python environment" >&2
  "$root/.venv/bin/pip" install -q --upgrade pip >/dev/null
  "$root/.venv/bin/pip" install -q -e "$root[dev,bench]"
  # A venv from before generate_p4runtime_stubs has the p4runtime package's own stubs, which
  # fail on this protobuf and would shadow the generated ones.
  if "$root/.venv/bin/pip" show -q p4runtime 2>/dev/null; then
    "$root/.venv/bin/pip" uninstall -y -q p4runtime
  fi
  mark_done python "$want"
}

# P4Runtime stubs (p4.v1.p4runtime_pb2, ...) generated for the venv's protobuf from the pinned
# p4runtime wheel (scripts/p4runtime_stubs.py; docs/architecture.md "P4Runtime stubs").
P4RUNTIME_VERSION=1.5.0
generate_p4runtime_stubs() {
  local venv="$root/.venv" out="$root/.venv/p4runtime-stubs"
  local want; want="$( (echo "$P4RUNTIME_VERSION"; cat "$root/pyproject.toml" "$root/scripts/p4runtime_stubs.py") | fingerprint)"
  [ -d "$out/p4" ] && done_before p4runtime-stubs "$want" && return 0
  echo "setup: generating the P4Runtime stubs (p4runtime $P4RUNTIME_VERSION)" >&2
  local wheels="$venv/.p4runtime-wheel"
  "$venv/bin/pip" download -q --no-deps --only-binary=:all: -d "$wheels" "p4runtime==$P4RUNTIME_VERSION"
  "$venv/bin/python" "$root/scripts/p4runtime_stubs.py" \
    "$wheels/p4runtime-$P4RUNTIME_VERSION-py3-none-any.whl" "$out"
  mark_done p4runtime-stubs "$want"
}

# The Rust workspace (switch/: the P4 switch, its packet I/O library pktio/, the user-space
# forwarder fwd/, the link emulator linkem/): rebuilt in release mode when any crate's
# sources change.
build_p4_switch() {
  local crate="$root/switch" cargo
  local want; want="$(find "$crate/src" "$crate/pktio/src" "$crate/fwd/src" "$crate/linkem/src" \
    "$crate/Cargo.toml" "$crate/pktio/Cargo.toml" "$crate/fwd/Cargo.toml" \
    "$crate/linkem/Cargo.toml" "$crate/Cargo.lock" -type f | sort | xargs cat | fingerprint)"
  [ -x "$crate/target/release/dplab-switch" ] && [ -x "$crate/target/release/dplab-fwd" ] \
    && [ -x "$crate/target/release/dplab-linkem" ] \
    && done_before p4switch "$want" && return 0
  cargo="$(command -v cargo || true)"
  [ -n "$cargo" ] || for c in "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" /root/.cargo/bin/cargo; do
    [ -x "$c" ] && { cargo="$c"; break; }
  done
  if [ -z "$cargo" ]; then
    echo "setup: WARNING: cargo (Rust) not found: the P4 switch (switch/) is not built; the p4 plane will not work" >&2
    return 0
  fi
  echo "setup: building the P4 switch and the user-space forwarder (cargo build --release)" >&2
  (cd "$crate" && "$cargo" build --release --locked -q)
  mark_done p4switch "$want"
}

# An off-the-shelf P4Runtime client for the conformance test (tests/test_p4runtime_shell.py),
# in its own venv: p4runtime-shell pins its own p4runtime/protobuf versions.
P4RT_SHELL_PACKAGES=(
  p4runtime-shell==0.0.6 p4runtime==1.4.1 protobuf==3.20.3 grpcio==1.85.1
  googleapis-common-protos==1.73.0 ipython==7.31.1 jedi==0.17.2 parso==0.7.1
  prompt_toolkit==3.0.53 traitlets==5.16.1 Pygments==2.21.0
)
install_p4runtime_shell() {
  local venv="$root/.venv-p4rt-shell"
  local want; want="$(echo "${P4RT_SHELL_PACKAGES[*]}" | fingerprint)"
  [ -x "$venv/bin/python" ] && done_before p4rt-shell "$want" && return 0
  echo "setup: installing p4runtime-shell in $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "${P4RT_SHELL_PACKAGES[@]}"
  echo "*" > "$venv/.gitignore"
  mark_done p4rt-shell "$want"
}

# The xdp plane's eBPF programs (xdp/*.bpf.c) compiled to xdp/build/*.o with BTF; recompiled
# when a source, a header or the compiler changes. asm/ headers live in the multiarch path.
# Study 003's programs (xdp/study003/) are users' programs the plane compiles itself at start
# (src/dplab/xdp/user.py, same flags); built here too so a broken one shows at set-up.
XDP_CFLAGS=(-O2 -g -target bpf -Wall -I"/usr/include/$(uname -m)-linux-gnu")
build_xdp_programs() {
  local src="$root/xdp" out="$root/xdp/build" f
  local want; want="$( (echo "${XDP_CFLAGS[*]}"; clang --version; cat "$src"/*.bpf.c "$src"/*.h \
    "$src"/study003/*.bpf.c) | fingerprint)"
  [ -d "$out" ] && done_before xdp "$want" && return 0
  echo "setup: compiling the eBPF programs, XDP and tc (clang -target bpf)" >&2
  mkdir -p "$out/study003"
  for f in "$src"/*.bpf.c; do
    clang "${XDP_CFLAGS[@]}" -c "$f" -o "$out/$(basename "$f" .bpf.c).o"
  done
  for f in "$src"/study003/*.bpf.c; do
    clang "${XDP_CFLAGS[@]}" -I"$src" -c "$f" -o "$out/study003/$(basename "$f" .bpf.c).o"
  done
  mark_done xdp "$want"
}

install_debian_packages
install_python_env
generate_p4runtime_stubs
build_p4_switch
build_xdp_programs
install_p4runtime_shell
