#!/usr/bin/env bash
# Installs what kiln needs from Debian 12's packages, only when something is missing.
# rustc/cargo 1.95 (LLVM 22) are not Debian packages: they must already be on PATH.
set -euo pipefail
packages=(meson ninja-build pkg-config g++ make binutils util-linux jq parallel xz-utils gdb lldb-22
          llvm-22-dev clang-22 libclang-rt-22-dev lld-22 libcli11-dev libxxhash-dev libsimdjson-dev catch2 zlib1g-dev libzstd-dev
          librust-regex-dev librust-quickcheck-dev librust-lazy-static-dev librust-rand-dev
          librust-num-traits-dev librust-memchr-dev librust-serde-dev librust-serde-derive-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "install-deps: missing packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
    exit 6
  fi
  echo "install-deps: installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# cargo is usually installed per user (rustup) under ~/.cargo/bin.
[[ -d $HOME/.cargo/bin ]] && export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v rustc >/dev/null || ! command -v cargo >/dev/null; then
  echo "install-deps: rustc and cargo 1.95 (LLVM 22) are needed on PATH; Debian 12's rustc is too old" >&2
  exit 6
fi
llvm=$(rustc -vV | sed -n 's/^LLVM version: //p')
if [[ ${llvm%%.*} != 22 ]]; then
  echo "install-deps: rustc uses LLVM $llvm; kiln reads LLVM 22 bitcode (rustc 1.95)" >&2
  exit 6
fi
