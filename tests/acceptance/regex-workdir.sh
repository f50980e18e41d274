# Sourced by tests/acceptance/regex.sh and scripts/measure-gate.sh: a fresh copy of
# regex 1.7.1 from Debian's librust-regex-dev in "$W/regex", with cargo set to build it
# offline from Debian's crate sources, and the shell in that directory. Exits 6 when a
# crate regex or its tests need is not installed.
for dep in regex-1.7.1 quickcheck-1.0.3 lazy_static-1.4.0 rand-0.8.5; do
  [[ -d /usr/share/cargo/registry/$dep ]] || {
    echo "$(basename "$0"): /usr/share/cargo/registry/$dep: missing (install Debian's librust-*-dev packages)" >&2
    exit 6
  }
done
rm -rf "$W" && mkdir -p "$W"
cp -r /usr/share/cargo/registry/regex-1.7.1 "$W/regex"
cd "$W/regex"
mkdir -p .cargo
cat > .cargo/config.toml <<'TOML'
[source.crates-io]
replace-with = "debian"
[source.debian]
directory = "/usr/share/cargo/registry"
[net]
offline = true
TOML
