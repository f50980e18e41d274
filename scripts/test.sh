#!/usr/bin/env bash
# The README's second command: install what is missing, build, run every test
# (unit, integration on real cargo and make builds, and regex acceptance).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/install-deps.sh
scripts/build.sh
meson test -C build --print-errorlogs --num-processes 1 "$@"
