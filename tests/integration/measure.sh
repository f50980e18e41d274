#!/usr/bin/env bash
# kiln-measure compares two real builds of the example crate, interleaved, and the
# sizes of two real programs; the gate turns the reports into an exit status.
source "$(dirname "$0")/lib.sh"

example_crate "$T/crate"
cd "$T/crate"
cargo build -q 2>/dev/null  # fetch and lock once
kiln-measure build --runs 2 --warmup 0 --workdir "$T/work" --json "$T/build.json" --svg "$T/build.svg" \
  --prepare 'rm -rf "$CARGO_TARGET_DIR"' \
  --baseline 'cargo build -q' \
  --candidate "$KILN_BIN/kiln-capture -o \"\$KILN_MEASURE_TARGET_DIR/corpus\" --backend llvm -- cargo build -q" > "$T/build.md"
check "build comparison ran and printed a table" grep -q 'candidate' "$T/build.md"
check "its report has both variants, interleaved runs and a ratio with a 95% interval" \
  jq -e '(.runs | length) == 4 and .wall_ratio.low <= .wall_ratio.value and .wall_ratio.value <= .wall_ratio.high' "$T/build.json"
check "the chart is SVG" grep -q '<svg' "$T/build.svg"
kiln-measure gate "$T/build.json" --min-speedup=-99% >/dev/null
check "gate passes a lenient threshold" test $? -eq 0
kiln-measure gate "$T/build.json" --min-speedup 1000% >/dev/null
check "gate fails an impossible threshold with exit 1" test $? -eq 1

cargo build -q
cp target/debug/kiln-example "$T/native"
cargo clean -q
kiln-capture -o "$T/C" --backend llvm --profile release -- cargo build -q
cp target/debug/kiln-example "$T/kiln"
kiln-measure size --baseline "$T/native" --candidate "$T/kiln" --json "$T/size.json" > "$T/size.md"
check "size compares stripped sections" jq -e '[.rows[] | select(.section == ".text")] | length == 1' "$T/size.json"
finish
