#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run kiln's main job
# on the bundled example crate: capture -> census -> emit -> replay -> measure, ending
# in a readable report (OUT/report.md; OUT defaults to /tmp/kiln-quickstart).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/install-deps.sh
scripts/build.sh
export PATH="$root/build/tools:$PATH"
OUT=${1:-${TMPDIR:-/tmp}/kiln-quickstart}
rm -rf "$OUT" && mkdir -p "$OUT"
cp -r examples/rust-crate "$OUT/crate" && rm -rf "$OUT/crate/target"
cd "$OUT/crate"

echo "[1/5] capture: cargo build through kiln-capture, objects from kiln's stamp back end"
kiln-capture -o "$OUT/corpus" --backend stamp -- cargo build -q
./target/debug/kiln-example > "$OUT/kiln.out"
echo "[2/5] census"
kiln-census "$OUT/corpus" > "$OUT/census.txt"
echo "[3/5] emit every module again, into $OUT/objects"
kiln-emit "$OUT/corpus" --out "$OUT/objects" --backend stamp > "$OUT/emit.txt"
echo "[4/5] replay: stamp against llvm, 3 rounds, byte stability"
kiln-replay "$OUT/corpus" --backend stamp,llvm --rounds 3 > "$OUT/replay.txt"
echo "[5/5] measure: cargo build, plain and with stamp inside rustc (--route plugin; 9 interleaved runs each: a 10% gate on a 1 s build needs them on a noisy machine)"
kiln-measure build --runs 9 --warmup 1 --workdir "$OUT/measure" --json "$OUT/measure.json" --svg "$OUT/measure.svg" \
  --prepare 'rm -rf "$CARGO_TARGET_DIR"' --baseline 'cargo build -q' \
  --candidate 'kiln-capture -o "$KILN_MEASURE_TARGET_DIR/corpus" --backend stamp --route plugin -- cargo build -q' > "$OUT/measure.md"
# Where the candidate's last build spent its time, and the CI gate's verdict on it.
kiln-measure phases "$OUT/measure/candidate/corpus" --svg "$OUT/phases.svg" > "$OUT/phases.md"
gate_status=0
kiln-measure gate "$OUT/measure.json" --min-speedup 10% > "$OUT/gate.txt" || gate_status=$?
[[ $gate_status -le 1 ]] || exit "$gate_status"  # 3, 4, 5: the report itself is the problem
cargo clean -q && cargo build -q && ./target/debug/kiln-example > "$OUT/native.out"

{
  echo "# kiln quick start: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "Example crate: examples/rust-crate (with memchr), $(jq -r .id "$OUT/corpus/modules.jsonl" | sort -u | wc -l) modules captured."
  if cmp -s "$OUT/native.out" "$OUT/kiln.out"; then
    echo "The program built from stamp-emitted objects prints exactly what the plain build prints."
  else
    echo "WARNING: the program built from kiln-emitted objects prints something else than the plain build."
  fi
  echo
  echo "## Census"; echo '```'; sed '/^opcodes/,$d' "$OUT/census.txt"; echo '```'
  echo "## Emit"; echo '```'; cat "$OUT/emit.txt"; echo '```'
  echo "## Replay"; echo '```'; cat "$OUT/replay.txt"; echo '```'
  echo "## Whole build, plain cargo (baseline) vs kiln-capture --backend stamp --route plugin (candidate)"; cat "$OUT/measure.md"
  echo
  echo "Gate (at least 10% faster): $(cat "$OUT/gate.txt")"
  echo
  echo "## Where the candidate's build spent its time (kiln-measure phases)"; cat "$OUT/phases.md"
  echo
  echo "Files: $OUT/corpus (kiln-corpus(5)), $OUT/measure.json, $OUT/measure.svg, $OUT/phases.svg, $OUT/corpus/replay-report.json"
} > "$OUT/report.md"
cat "$OUT/report.md"
