#!/usr/bin/env bash
# A proc-macro on the plugin route: serde's derive (serde_derive, from Debian's
# librust-serde-derive-dev) is compiled by stamp inside rustc, linked by kiln-linker
# into the shared object that rustc then loads to expand the crate's derives. The
# checks: the proc-macro's units are stamp's; the code it writes is the plain build's,
# token for token (rustc -Zunpretty=expanded with each build's serde_derive); and the
# program prints what the plain build's prints.
source "$(dirname "$0")/lib.sh"
command -v cargo >/dev/null || { echo "skip - cargo is not installed"; exit 77; }
[[ -d /usr/share/cargo/registry/serde_derive-1.0.152 ]] ||
  { echo "skip - librust-serde-derive-dev is not installed (scripts/install-deps.sh installs it)"; exit 77; }

mkdir -p "$T/crate" && cp -r "$KILN_SOURCE/tests/data/derive-crate/." "$T/crate/" && cd "$T/crate" || exit 1
rm -rf target Cargo.lock
# The code the derives expand to, with the serde_derive already built in TARGET (cargo
# finds it fresh and builds only the crate itself, so no second serde_derive is made).
expanded() {  # expanded TARGET OUT
  RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$1 cargo rustc -q --bin kiln-derive-test -- -Zunpretty=expanded > "$2"
}

CARGO_TARGET_DIR="$T/plain" cargo build -q && "$T/plain/debug/kiln-derive-test" > "$T/plain.out"
expanded "$T/plain" "$T/plain.expanded"
check "plain cargo build ran, and the derives expanded ($(wc -l < "$T/plain.expanded") lines)" \
  bash -c "test -s '$T/plain.out' && grep -q 'impl.*Deserialize' '$T/plain.expanded'"

CARGO_TARGET_DIR="$T/kiln" kiln-capture -o "$T/C" --backend stamp --route plugin -- cargo build -q
"$T/kiln/debug/kiln-derive-test" > "$T/kiln.out"
check "--route plugin: the program prints what the plain build's prints" cmp "$T/plain.out" "$T/kiln.out"
id=$(jq -r 'select(.tool == "rustc" and (.args | index("serde_derive")) as $i | $i != null and .args[$i - 1] == "--crate-name") | .id' "$T/C/invocations.jsonl")
check "--route plugin: serde_derive was compiled through kiln, not passed through ($(jq -r --arg id "$id" 'select(.id == $id) | .action' "$T/C/invocations.jsonl"))" \
  bash -c "[[ -n '$id' ]] && jq -se --arg id '$id' 'any(.[]; .id == \$id and (.action == \"captured\" or .action == \"fallback\"))' '$T/C/invocations.jsonl' >/dev/null"
check "--route plugin: most of serde_derive's units are stamp's ($(jq -s --arg id "$id" 'map(select(.invocation == $id and .stamp)) | length' "$T/C/plugin.jsonl") of $(jq -s --arg id "$id" 'map(select(.invocation == $id)) | length' "$T/C/plugin.jsonl"))" \
  jq -se --arg id "$id" 'map(select(.invocation == $id)) | (map(select(.stamp and .object_bytes > 0)) | length) > (length / 2)' "$T/C/plugin.jsonl"
so=$(ls "$T"/kiln/debug/deps/libserde_derive-*.so)
before=$(stat -c %Y.%s "$so")
expanded "$T/kiln" "$T/kiln.expanded"
check "--route plugin: kiln's serde_derive writes the plain one's code, token for token" \
  bash -c "[[ '$(stat -c %Y.%s "$so")' == '$before' ]] && cmp '$T/plain.expanded' '$T/kiln.expanded'"
# A crate that is both an rlib and a staticlib (a library for Rust and for C): the
# wrapper cannot take the carriers out of an archive it does not rewrite, so the crate
# runs as plain rustc on the plugin route; its binary and a C program on its .a work.
mkdir -p "$T/mixed/src"
cat > "$T/mixed/Cargo.toml" <<'TOML'
[package]
name = "mixed"
version = "0.1.0"
edition = "2021"
[lib]
crate-type = ["staticlib", "rlib"]
TOML
cat > "$T/mixed/src/lib.rs" <<'RS'
#[no_mangle]
pub extern "C" fn mixed_add(a: i64, b: i64) -> i64 { a * 3 + b }
pub fn twice(x: i64) -> i64 { mixed_add(x, x) }
RS
echo 'fn main() { println!("{}", mixed::twice(7)); }' > "$T/mixed/src/main.rs"
printf '#include <stdio.h>\nlong mixed_add(long, long);\nint main(void) { printf("%%ld\\n", mixed_add(5, 1)); return 0; }\n' \
  > "$T/mixed/use.c"
(cd "$T/mixed" && kiln-capture -o "$T/M" --backend stamp --route plugin -- cargo build -q)
check "--route plugin, rlib and staticlib: the binary runs" bash -c "[[ \$('$T/mixed/target/debug/mixed') == 28 ]]"
check "and a C program on the staticlib runs" bash -c "cc '$T/mixed/use.c' '$T/mixed/target/debug/libmixed.a' \
  -o '$T/mixed/use' -lpthread -ldl -lm && [[ \$('$T/mixed/use') == 16 ]]"
check "the library crate ran as plain rustc, saying why" \
  jq -se 'any(.[]; .action == "passthrough" and (.reason | test("an archive kiln cannot place")))' "$T/M/invocations.jsonl"
finish
