# Sourced by tests/acceptance/regex.sh and scripts/measure-gate.sh: a fresh copy of
# regex 1.7.1 from Debian's librust-regex-dev in "$W/regex", with cargo set to build it
# offline from Debian's crate sources, and the shell in that directory. Exits 6 when a
# crate regex or its tests need is not installed.
source "$(dirname "${BASH_SOURCE[0]}")/debian-crate.sh"
debian_crate_workdir "$W" regex regex-1.7.1 quickcheck-1.0.3 lazy_static-1.4.0 rand-0.8.5
