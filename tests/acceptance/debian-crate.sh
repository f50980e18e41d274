# Sourced by the acceptance scripts on real crates (regex-workdir.sh, float-crate.sh,
# simd-crate.sh).
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

# stamp_runs_crate_tests WORKDIR MIN_PASSED [CARGO TEST ARGS...]: in the crate's
# directory, the crate's own tests with plain cargo, then through kiln-capture
# --backend stamp into WORKDIR/corpus; exits 1 unless at least MIN_PASSED pass under
# plain cargo and both runs give the same results. Then the corpus's census, its
# fallback reasons per function, and the direct reader's check on it.
stamp_runs_crate_tests() {
  local workdir=$1 min=$2 passed
  shift 2
  summarize() { grep -E '^test result|^test .* \.\.\. (ok|FAILED|ignored)' | sed 's/; finished in .*//' | sort; }
  echo "== plain cargo test $* [at ${SECONDS} s]"
  cargo test "$@" --no-fail-fast 2>&1 | summarize > "$workdir/plain.tests" || true
  cargo clean -q
  passed=$(grep -c ' ok$' "$workdir/plain.tests" || true)
  [[ $passed -ge $min ]] || { echo "FAIL: plain cargo test passed only $passed tests"; cat "$workdir/plain.tests"; exit 1; }

  echo "== kiln-capture --backend stamp -- cargo test $* [at ${SECONDS} s]"
  kiln-capture -o "$workdir/corpus" --backend stamp -- cargo test "$@" --no-fail-fast 2>&1 | summarize > "$workdir/stamp.tests" || true
  if cmp -s "$workdir/plain.tests" "$workdir/stamp.tests"; then
    echo "   same test results: $passed tests ok, $(grep -c 'FAILED$' "$workdir/stamp.tests" || true) failed, in both builds"
  else
    echo "   DIFFERENT test results:"; diff "$workdir/plain.tests" "$workdir/stamp.tests" | head -20 || true; exit 1
  fi
  jq -rs '"   functions emitted: stamp \(map(.functions.stamp) | add), llvm \(map(.functions.llvm) | add); instructions: stamp \(map(.instructions.stamp) | add), llvm \(map(.instructions.llvm) | add)"' "$workdir/corpus/receipts.jsonl"

  echo "== kiln-census [at ${SECONDS} s]"
  kiln-census "$workdir/corpus" | sed -n '1,/^opcodes/p'
  echo "   why functions fall back (functions per reason):"
  jq -r '.stamp_fallback_functions[]?.reasons[]' "$workdir/corpus/census.jsonl" | sort | uniq -c | sort -rn | sed 's/^/   /'

  echo "== kiln-emit --check-reader on the corpus [at ${SECONDS} s]"
  kiln-emit --check-reader "$workdir/corpus" | tail -n 3
}
