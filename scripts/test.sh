#!/usr/bin/env bash
# The README's second command: install what is missing, build, run every test
# (unit, integration on real cargo and make builds, regex acceptance, the device
# check), then the sanitizer run: the unit tests and the integration tests of hostile
# input again under ASan and UBSan, and the fuzz targets for a bounded count
# (scripts/sanitize.sh).
# Arguments go to `meson test` (a suite or test name) and skip the sanitizer run, as
# does SANITIZE=0.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/install-deps.sh
scripts/build.sh
meson test -C build --print-errorlogs --num-processes 1 "$@"
if [[ $# -eq 0 && ${SANITIZE:-1} != 0 ]]; then
  scripts/sanitize.sh
fi
