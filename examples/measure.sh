#!/bin/sh
# A tour of kiln-measure on a generated C program: "cc -O2" plays the baseline back
# end and "cc -O0" the candidate, so the candidate builds faster but emits more code.
# Usage: examples/measure.sh [OUTDIR]     (kiln-measure from $KILN_BIN, else PATH)
set -eu

measure=${KILN_BIN:+$KILN_BIN/}kiln-measure
if ! command -v "$measure" >/dev/null 2>&1; then
  echo "measure.sh: kiln-measure not found; set KILN_BIN to the built tools directory" >&2
  exit 6
fi
out=${1:-$(mktemp -d "${TMPDIR:-/tmp}/kiln-measure-example.XXXXXX")}
mkdir -p "$out"

# Enough functions that optimisation takes measurable time.
SRC="$out/app.c"
export SRC
{
  echo '#include <stdio.h>'
  i=1
  while [ "$i" -le 300 ]; do
    echo "int f$i(int x) { int s = 0; for (int k = 0; k < x; k++) s += (k * $i) ^ (s >> 3); return s; }"
    i=$((i + 1))
  done
  printf '%s\n' 'int main(void) { printf("%d\n", f1(10) + f300(20)); return 0; }'
} >"$SRC"

echo "== the machine"
"$measure" hw

echo "== build time: 5 interleaved runs each, after a warm-up"
# Single quotes: the variables are expanded by the shell that runs each command,
# where KILN_MEASURE_TARGET_DIR is that variant's own directory.
"$measure" build --runs 5 --workdir "$out/builds" \
  --prepare 'rm -f "$KILN_MEASURE_TARGET_DIR/app"' \
  --baseline 'cc -O2 -o "$KILN_MEASURE_TARGET_DIR/app" "$SRC"' \
  --candidate 'cc -O0 -o "$KILN_MEASURE_TARGET_DIR/app" "$SRC"' \
  --json "$out/build.json" --markdown "$out/build.md" --svg "$out/build.svg"

echo "== code size of the two executables"
"$measure" size --baseline "$out/builds/baseline/app" --candidate "$out/builds/candidate/app" \
  --json "$out/size.json"

echo "== the CI gate: at least 10% faster to build, at most 1.5x the code"
status=0
"$measure" gate "$out/build.json" "$out/size.json" --min-speedup 10% --max-size-ratio 1.5 || status=$?
case $status in
  0) echo "gate: pass" ;;
  1) echo "gate: fail (exit 1)" ;;
  *) exit "$status" ;;  # 3, 4, 5: the reports themselves are the problem
esac

echo "Reports are in $out (build.json, build.md, build.svg, size.json)"
