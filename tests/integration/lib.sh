# Shared by the integration tests: tools from $KILN_BIN, a scratch directory that is
# removed on exit, and checks that print what went wrong.
set -uo pipefail
: "${KILN_BIN:?set KILN_BIN to the directory holding the built tools}"
: "${KILN_SOURCE:?set KILN_SOURCE to the repository root}"
export PATH="$KILN_BIN:$PATH"
LLVM_BINDIR=${KILN_LLVM_BINDIR:-/usr/lib/llvm-22/bin}
T=$(mktemp -d "${TMPDIR:-/tmp}/kiln-it-XXXXXX")
trap 'rm -rf "$T"' EXIT
failures=0
checks=0

pass() { checks=$((checks + 1)); echo "ok - $*"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL - $*"; }
check() {  # check "description" command...
  local what=$1; shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}
# quiet command...: the command without its standard output, for a check whose command
# prints (jq -e): a redirection after `check ...` would swallow the check's own line.
quiet() { "$@" > /dev/null; }
# expect_error CODE PATTERN command...: exit code CODE, and stderr is one line matching PATTERN.
expect_error() {
  local code=$1 pattern=$2; shift 2
  local err rc
  err=$("$@" 2>&1 >/dev/null); rc=$?
  local lines
  lines=$(printf '%s\n' "$err" | grep -c . || true)
  if [[ $rc -eq $code && $err =~ $pattern && $lines -eq 1 ]]; then
    pass "exit $code: $err"
  else
    fail "expected exit $code and one line matching /$pattern/ from: $*; got exit $rc: $err"
  fi
}
finish() {
  echo "$((checks - failures)) passed, $failures failed"
  [[ $failures -eq 0 ]]
}
# A copy of the bundled example crate, so tests never write into the source tree.
example_crate() {
  local dest=$1
  mkdir -p "$dest"
  cp -r "$KILN_SOURCE/examples/rust-crate/." "$dest/"
  rm -rf "$dest/target" "$dest/Cargo.lock"
}
