# Sourced by the acceptance scripts on real crates (regex-workdir.sh, float-crate.sh).
# debian_crate_workdir WORKDIR SUBDIR CRATE-VERSION [DEPENDENCY-VERSION...]: WORKDIR made
# afresh, a copy of Debian's source of CRATE-VERSION (/usr/share/cargo/registry, from
# its librust-*-dev package) in WORKDIR/SUBDIR, cargo set to build it offline from
# Debian's crate sources, and the shell in that directory. Exits 6 naming the first
# crate that is not installed.
debian_crate_workdir() {
  local workdir=$1 subdir=$2 crate
  shift 2
  for crate in "$@"; do
    [[ -d /usr/share/cargo/registry/$crate ]] || {
      echo "$(basename "$0"): /usr/share/cargo/registry/$crate: missing (install Debian's librust-*-dev packages)" >&2
      exit 6
    }
  done
  rm -rf "$workdir" && mkdir -p "$workdir"
  cp -r "/usr/share/cargo/registry/$1" "$workdir/$subdir"
  cd "$workdir/$subdir"
  mkdir -p .cargo
  cat > .cargo/config.toml <<'TOML'
[source.crates-io]
replace-with = "debian"
[source.debian]
directory = "/usr/share/cargo/registry"
[net]
offline = true
TOML
}
