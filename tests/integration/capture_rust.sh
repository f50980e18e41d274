#!/usr/bin/env bash
# Captures the example crate with cargo, rebuilds it and its tests on kiln's llvm back
# end (object replacement), and compares the program's output and the test results
# with a plain cargo build.
source "$(dirname "$0")/lib.sh"

# The default dev profile has full debug information: stamp's functions must carry
# line tables and subprograms that debuggers read as they read LLVM's.
debugger_checks() {
  local native=$1 stamp=$2 corpus=$3
  kiln-emit "$corpus" --check-lines > "$T/lines.txt"
  check "--check-lines: stamp's DWARF passes LLVM's verifier and every located instruction's row is its own line ($(grep 'failing$' "$T/lines.txt"))" \
    grep -Eq ' 0 failing$' "$T/lines.txt"
  check "--check-lines: at least 98% of those lines are among llvm -O0's rows for the function" \
    awk '/as llvm -O0/ { gsub(/[(%)]/, "", $NF); exit !($NF >= 98) }' "$T/lines.txt"
  # Variables as llvm -O0's: at least 85% (those of calls inlined where stamp's code has
  # no instruction, such as an address computed into the frame, have no scope to be in).
  check "--check-lines: variables as llvm -O0's ($(grep '^[0-9]* variables' "$T/lines.txt"))" \
    awk '/variables in llvm/ { gsub(/[(%]/, "", $(NF-2)); exit !($(NF-2) >= 85) }' "$T/lines.txt"
  # gdb: breakpoints by file:line; at each stop the backtrace, the arguments and locals
  # of the frame, and a struct (*self, stack), an enum (token) and slices (input,
  # haystack, values), where the frame has them. lib.rs:122's stop is under an inlined
  # #[inline(always)] frame of the standard library's sort.
  # -ex commands, not a script: a script stops at its first error (a print of a name
  # the frame does not have).
  local gdb_args=(-ex "set pagination off" -ex "set print address off" -ex "set width 0")
  for at in lib.rs:11 lib.rs:18 lib.rs:24 lib.rs:33 lib.rs:53 lib.rs:64 lib.rs:93 lib.rs:98 lib.rs:108 \
    lib.rs:114 lib.rs:122 main.rs:19 main.rs:22; do gdb_args+=(-ex "tbreak $at"); done
  gdb_args+=(-ex "run > /dev/null")
  for _ in $(seq 13); do
    gdb_args+=(-ex bt -ex "info args" -ex "info locals")
    for e in '*self' stack token input haystack values; do gdb_args+=(-ex "print $e"); done
    gdb_args+=(-ex continue)
  done
  for b in native stamp; do
    local bin=$native; [[ $b == stamp ]] && bin=$stamp
    timeout 300 gdb -q -batch "${gdb_args[@]}" "$bin" 2>&1 |
      grep -Ev '^(\[Inferior|\[Thread|Using host|Reading symbols|Temporary breakpoint [0-9]+ at |warning: |of file |Use .info auto-load)' |
      sed -E 's/^(Temporary breakpoint )[0-9.]+, /\1/' > "$T/$b.gdb"
  done
  # A pointer into a private global's data prints without a symbol in both builds:
  # stamp's objects give such data no symbol, as LLVM's give it a .L label that stays
  # out of the symbol table (before, gdb printed <anon.HASH.N+8> in stamp's build).
  check "gdb: no pointer printed by a private global's symbol ($(grep -c '<anon\.' "$T/stamp.gdb" || true) in stamp's build)" \
    bash -c "! grep -q '<anon\.' '$T/stamp.gdb'"
  diff "$T/native.gdb" "$T/stamp.gdb" | head -40  # the differences, if any, in the log
  check "gdb: 13 breakpoints by file:line print the same backtraces, arguments, locals and values (struct, enum, slices) as cargo's build ($(grep -c '^Temporary breakpoint [^0-9]' "$T/stamp.gdb") stops, $(grep -c '^#' "$T/stamp.gdb") frames, $(grep -c ' = ' "$T/stamp.gdb") values)" \
    bash -c "[[ \$(grep -c '^Temporary breakpoint [^0-9]' '$T/native.gdb') -eq 13 ]] && diff -q '$T/native.gdb' '$T/stamp.gdb'"
  check "gdb: the values include a struct, an enum and a slice" \
    bash -c "grep -q '^\\\$[0-9]* = kiln_example::Rect' '$T/stamp.gdb' && grep -q 'kiln_example::Token::' '$T/stamp.gdb' && grep -q '^\\\$[0-9]* = &\\[' '$T/stamp.gdb'"
  # lldb-22 on a subset: four one-shot breakpoints by file:line, each stop's place and
  # its frame's variables (a u128, a range, a struct through a pointer, a slice, a
  # Vec, an enum). The bytes after a string's end are not compared: they are whatever
  # the two builds' data placed there.
  if command -v lldb-22 >/dev/null 2>&1; then
    local lldb_args=()
    for at in lib.rs:24 lib.rs:53 lib.rs:98 main.rs:22; do
      lldb_args+=(-o "breakpoint set -o true -f ${at%:*} -l ${at#*:}")
    done
    lldb_args+=(-o "process launch -o /dev/null")
    for _ in 1 2 3 4; do lldb_args+=(-o "frame variable" -o continue); done
    for b in native stamp; do
      local bin=$native; [[ $b == stamp ]] && bin=$stamp
      timeout 300 lldb-22 -b "${lldb_args[@]}" "$bin" 2>&1 | grep -E '^ *\(|stop reason|frame #0' |
        grep -v '^(lldb)' | sed -E 's/0x[0-9a-f]+/ADDR/g; s/data_ptr = "[^"]*"/data_ptr = STR/g;
          s/.* at ([a-z]+\.rs:[0-9]+:[0-9]+)$/at \1/; s/name = .[^,]*., //' > "$T/$b.lldb"
    done
    diff "$T/native.lldb" "$T/stamp.lldb" | head -20
    check "lldb-22: 4 breakpoints by file:line show the same variables as cargo's build ($(grep -c '^ *(' "$T/stamp.lldb") values)" \
      bash -c "[[ \$(grep -c 'stop reason' '$T/native.lldb') -eq 4 ]] && diff -q '$T/native.lldb' '$T/stamp.lldb'"
  else
    echo "skip - lldb-22 is not installed (scripts/install-deps.sh installs it)"
  fi
  # The standard library's backtrace (addr2line over the binary's DWARF): the same
  # frames at the same file:line:column. Names only for the crate's own functions:
  # the two-step build gives the standard library's shims v0-mangled symbols.
  for b in native stamp; do
    local bin=$native; [[ $b == stamp ]] && bin=$stamp
    RUST_BACKTRACE=1 "$bin" --panic 2>&1 >/dev/null | sed -E 's/^(thread .main.) \([0-9]+\)/\1/' |
      sed -E '/^ +[0-9]+: /{/kiln_example::/!s/: .*/: (a library function)/}' > "$T/$b.backtrace"
  done
  check "RUST_BACKTRACE=1: the panic's backtrace has the same frames at the same file:line:column ($(grep -c ' at ' "$T/stamp.backtrace") located)" \
    bash -c "grep -q 'kiln_example::panic_at_depth' '$T/stamp.backtrace' && diff '$T/native.backtrace' '$T/stamp.backtrace'"
}

example_crate "$T/crate"
cd "$T/crate"
cargo build -q 2>/dev/null && ./target/debug/kiln-example > "$T/native.out"
cp target/debug/kiln-example "$T/native-bin"  # cargo's own build, for the debugger checks
cat target/debug/build/memchr-*/output > "$T/native-build-script.out"  # what memchr's build script told cargo
cargo test -q 2>&1 | grep -E '^test result' | sed 's/; finished in .*//' > "$T/native.tests"
check "plain cargo build and test ran" test -s "$T/native.out" -a -s "$T/native.tests"
cargo clean -q

kiln-capture -o "$T/C" --backend llvm -- cargo build -q
check "capture --backend llvm: cargo build succeeds" test $? -eq 0
./target/debug/kiln-example > "$T/kiln.out"
check "the program built from kiln's objects prints the same output" cmp "$T/native.out" "$T/kiln.out"
check "its objects came from kiln (receipts from kiln-capture)" grep -q '"origin":"kiln-capture"' "$T/C/receipts.jsonl"

# Library crates are archived by rustc itself and their rlibs rewritten in process:
# no second rustc (-Zlink-only) for them; the binary still has its link step.
phases_of() {  # phases_of CORPUS CRATE: the phase names of the crate's captured invocation
  jq -r --arg c "$2" 'select(.action=="captured" and (.args | index("--crate-name")) as $i | .args[$i + 1] == $c)
    | .phases | keys | join(" ")' "$1/invocations.jsonl" | sort -u
}
check "library crates are archived in process, no second rustc (memchr: $(phases_of "$T/C" memchr))" \
  bash -c "[[ '$(phases_of "$T/C" memchr)' == *archive* && '$(phases_of "$T/C" memchr)' != *link* ]]"
check "the binary keeps its -Zlink-only step ($(phases_of "$T/C" kiln_example | tail -1))" \
  bash -c "phases=\$(jq -r 'select(.action==\"captured\") | .phases | keys | join(\" \")' '$T/C/invocations.jsonl'); grep -q link <<< \"\$phases\""
rlib=$(ls "$PWD"/target/debug/deps/libmemchr-*.rlib | head -1)
mkdir -p "$T/members" && (cd "$T/members" && ar x "$rlib")
check "the rewritten rlib holds ELF objects, no bitcode, and a symbol index ($(nm -s "$rlib" 2>/dev/null | grep -c ' in ') entries)" \
  bash -c "ls '$T/members'/*.rcgu.o >/dev/null && ! file '$T/members'/*.rcgu.o | grep -v 'ELF 64-bit LSB relocatable' &&
    [[ \$(nm -s '$rlib' 2>/dev/null | grep -c ' in ') -gt 10 ]] && test -s '$T/members/lib.rmeta'"

modules=$(jq -r .id "$T/C/modules.jsonl" | sort -u | wc -l)
crates=$(jq -r .crate "$T/C/modules.jsonl" | sort -u | tr '\n' ' ')
check "modules of the crate and its dependency are captured ($modules: $crates)" \
  bash -c "[[ '$crates' == *kiln_example* && '$crates' == *memchr* && $modules -ge 3 ]]"
check "every blob is stored under its xxh3-128 id" bash -c "
  for id in \$(jq -r .id '$T/C/modules.jsonl'); do test -f '$T/C/blobs/'\${id:0:2}/\$id.bc || exit 1; done"
check "build scripts pass through, counted with their reason" \
  bash -c "jq -r 'select(.action==\"passthrough\") | .reason' '$T/C/invocations.jsonl' | grep -qx 'build script'"
check "the manifest records the build command and its exit status" \
  bash -c "jq -e '.build.command == [\"cargo\",\"build\",\"-q\"] and .build.exit_code == 0 and .version == 1' '$T/C/kiln-corpus.json' >/dev/null"

# A RUSTC_WORKSPACE_WRAPPER (cargo clippy's clippy-driver, or the build's own): cargo
# runs kiln's wrapper as WRAPPER WORKSPACE_WRAPPER RUSTC ARGS for the package's own
# crates, which run through it as cargo asked, passed through with the wrapper named;
# the dependency (memchr) is still captured. The wrapper's directory holds "rustc" in
# its name, which must not make it taken for rustc.
cargo clean -q
mkdir -p "$T/rustc-tools"
printf '#!/bin/sh\necho "$*" >> "%s/ws-wrapper.log"\nexec "$@"\n' "$T" > "$T/rustc-tools/ws-wrapper"
chmod +x "$T/rustc-tools/ws-wrapper"
kiln-capture -o "$T/WW" --backend llvm -- env RUSTC_WORKSPACE_WRAPPER="$T/rustc-tools/ws-wrapper" cargo build -q; rc=$?
check "RUSTC_WORKSPACE_WRAPPER: the build succeeds (status $rc), the workspace wrapper compiled the package's crate, and the program runs" \
  bash -c "[[ $rc -eq 0 ]] && grep -q -- '--crate-name kiln_example' '$T/ws-wrapper.log' && ./target/debug/kiln-example | cmp -s - '$T/native.out'"
check "RUSTC_WORKSPACE_WRAPPER: the package's crate passes through with the wrapper named, its dependency is captured" \
  bash -c "jq -e --arg r 'run through RUSTC_WORKSPACE_WRAPPER $T/rustc-tools/ws-wrapper' \
      'select(.action == \"passthrough\" and .reason == \$r and (.args | index(\"kiln_example\")))' '$T/WW/invocations.jsonl' >/dev/null &&
    jq -r .crate '$T/WW/modules.jsonl' | grep -qx memchr && ! jq -r .crate '$T/WW/modules.jsonl' | grep -qx kiln_example"
touch src/main.rs
RUSTC_WORKSPACE_WRAPPER="$T/rustc-tools/ws-wrapper" kiln-capture -o "$T/WW" -- cargo build -q 2> "$T/ww.err"; rc=$?
check "RUSTC_WORKSPACE_WRAPPER set for kiln-capture: the build succeeds, and one warning says the workspace's crates pass through" \
  bash -c "[[ $rc -eq 0 && \$(grep -c 'warning: RUSTC_WORKSPACE_WRAPPER=.* is set' '$T/ww.err') -eq 1 ]]"
# --print native-static-libs (and link-args) print as rustc links a crate it compiles
# as usual: no query to pass through.
cargo clean -q
RUSTFLAGS=--print=native-static-libs kiln-capture -o "$T/NSL" --backend llvm -- cargo build -q 2> "$T/nsl.err"; rc=$?
check "RUSTFLAGS=--print=native-static-libs: the build succeeds (status $rc), the program runs, and the crates' modules are captured ($(jq -r .crate "$T/NSL/modules.jsonl" 2>/dev/null | sort -u | tr '\n' ' '))" \
  bash -c "[[ $rc -eq 0 ]] && ./target/debug/kiln-example | cmp -s - '$T/native.out' &&
    jq -r .crate '$T/NSL/modules.jsonl' | grep -qx memchr && jq -r .crate '$T/NSL/modules.jsonl' | grep -qx kiln_example &&
    ! jq -e 'select(.reason == \"--print query\" and (.args | index(\"--crate-name\")) as \$i | .args[\$i + 1] != \"___\")' '$T/NSL/invocations.jsonl' >/dev/null"

cargo clean -q
kiln-capture -o "$T/C" --backend llvm -- cargo test -q 2>&1 | grep -E '^test result' | sed 's/; finished in .*//' > "$T/kiln.tests"
check "cargo test on kiln-emitted objects passes exactly the same tests" cmp "$T/native.tests" "$T/kiln.tests"

cargo clean -q
kiln-capture -o "$T/S" --backend stamp -- cargo build -q
./target/debug/kiln-example > "$T/stamp.out"
check "--backend stamp: the program prints the same output" cmp "$T/native.out" "$T/stamp.out"
debugger_checks "$T/native-bin" ./target/debug/kiln-example "$T/S"
check "the manifest names the compilers: the rustc cargo ran, asked after the build and kept by path, and the C compiler" \
  bash -c "jq -e '(.rustc | startswith(\"rustc \")) and (.clang | test(\"clang version\"))' '$T/S/kiln-corpus.json' >/dev/null &&
    jq -se --arg v \"\$(jq -r .rustc '$T/S/kiln-corpus.json')\" 'any(.[]; (.path | endswith(\"/rustc\")) and .version == \$v)' '$T/S/compiler-versions.jsonl' >/dev/null"
check "stamp emitted most functions itself, the rest fell back to llvm (counted)" \
  jq -se 'map(.functions.stamp) | add > 300' "$T/S/receipts.jsonl"
# The object contract over the crate's modules (kiln-emit --check-contract): every
# module's object defines what llvm's defines, alike, with no .kiln. name left.
kiln-emit "$T/S" --check-contract --no-verify > "$T/contract.txt"
check "--check-contract: every module of the crate keeps llvm's object contract" \
  bash -c "tail -1 '$T/contract.txt' | grep -Eq '^([0-9]+) modules: \\1 same contract, 0 different, 0 failed\$'"
cargo clean -q
kiln-capture -o "$T/S" --backend stamp -- cargo test -q 2>&1 | grep -E '^test result' | sed 's/; finished in .*//' > "$T/stamp.tests"
check "cargo test on stamp-emitted objects passes exactly the same tests" cmp "$T/native.tests" "$T/stamp.tests"

# stamp inside rustc (--route plugin): rustc loads kiln's plugin, stamp compiles each
# codegen unit in rustc's memory, and no bitcode is written or kept. Same program, same
# tests; a unit stamp cannot take whole is rustc's own, counted with its reason; an
# incremental rebuild reuses units that carry stamp's objects.
cargo clean -q
kiln-capture -o "$T/P" --backend stamp --route plugin -- cargo build -q
./target/debug/kiln-example > "$T/plugin.out"
check "--route plugin: the program prints the same output" cmp "$T/native.out" "$T/plugin.out"
check "--route plugin: stamp took most codegen units whole in rustc, each other one with its reason ($(jq -s 'map(select(.stamp)) | length' "$T/P/plugin.jsonl") of $(wc -l < "$T/P/plugin.jsonl"))" \
  jq -se '(map(select(.stamp and .object_bytes > 0)) | length) > (length / 2) and all(.stamp or (.why | length > 0))' "$T/P/plugin.jsonl"
check "--route plugin: no bitcode kept, and no unit's carrier object reaches the program" \
  bash -c "[[ ! -s '$T/P/modules.jsonl' ]] && ! readelf -S ./target/debug/kiln-example | grep -q kiln.object"
# Build scripts are compiled like any crate on this route (the bitcode route passes
# them through): memchr's is stamp's, and what it tells cargo is the plain build's.
check "--route plugin: memchr's build script is compiled by stamp, and tells cargo what the plain build's did" \
  bash -c "id=\$(jq -r 'select(.tool == \"rustc\" and (.args | index(\"build_script_build\")) and .action != \"passthrough\") | .id' '$T/P/invocations.jsonl') &&
    [[ -n \$id ]] && jq -se --arg id \"\$id\" 'any(.[]; .invocation == \$id and .stamp and .object_bytes > 0)' '$T/P/plugin.jsonl' >/dev/null &&
    cat target/debug/build/memchr-*/output | cmp - '$T/native-build-script.out'"
check "--route plugin: the invocations say which units were rustc's own" \
  jq -se 'map(select(.tool == "rustc" and (.action == "captured" or .action == "fallback"))) | length > 0' "$T/P/invocations.jsonl"
check "--route plugin: each library's objects are placed in its rlib while rustc still ends, once it said it wrote it" \
  jq -se '[.[] | select(.action == "captured" and (.args | index("--crate-type") as $i | $i and .[$i + 1] == "lib"))]
    | length > 0 and all(.phases.archive_beside_rustc > 0 and .phases.archive >= 0)' "$T/P/invocations.jsonl"
check "--route plugin: the binary is linked by its one rustc, through kiln-linker (an objects phase, no second rustc)" \
  jq -se 'map(select(.tool == "rustc" and .phases.objects > 0 and .phases.link == null and .phases.archive == null)) | length > 0' "$T/P/invocations.jsonl"
# The object contract, with no bitcode to emit again: every rlib's units against a plain
# build's (kiln-emit --compare-contract), the same codegen units by name.
mkdir -p "$T/plugin-rlibs" && cp target/debug/deps/*.rlib "$T/plugin-rlibs/"
# Each unit stamp took is its object made where rustc archived the carrier (a new ELF
# header naming the object's own section table): no .kiln.object section is left, and
# the carrier's other bytes are still there, unreferenced.
mkdir -p "$T/plugin-members" && (cd "$T/plugin-members" && ar x "$T"/plugin-rlibs/libmemchr-*.rlib)
check "--route plugin: memchr's rlib holds stamp's objects where rustc's units lay, no carrier left" bash -c "
  n=0; for o in '$T'/plugin-members/*.rcgu.o; do
    readelf -SW \"\$o\" > '$T/member-sections.txt' || exit 1; ! grep -q 'kiln\.object' '$T/member-sections.txt' || exit 1
    grep -aq 'kiln\.object' \"\$o\" && n=\$((n + 1)); done; [[ \$n -gt 0 ]]"
cargo clean -q && cargo build -q
for rlib in "$T"/plugin-rlibs/*.rlib; do
  kiln-emit "target/debug/deps/$(basename "$rlib")" --compare-contract "$rlib" > "$T/plugin-contract-$(basename "$rlib").txt"
  check "--route plugin: $(basename "$rlib")'s units keep the plain build's object contract ($(tail -1 "$T/plugin-contract-$(basename "$rlib").txt"))" \
    grep -Eq '^([1-9][0-9]*) objects: \1 same contract, 0 different, 0 unpaired$' "$T/plugin-contract-$(basename "$rlib").txt"
done
rlibs=("$T"/plugin-rlibs/*.rlib)
kiln-emit "${rlibs[0]}" --compare-contract "${rlibs[1]}" > "$T/crossed-contract.txt"; rc=$?
check "--compare-contract: two different crates' rlibs differ (exit 1, units only in one)" \
  bash -c "[[ $rc -eq 1 ]] && grep -q ': only in ' '$T/crossed-contract.txt' && tail -1 '$T/crossed-contract.txt' | grep -Eq 'unpaired\$'"
cargo clean -q
kiln-capture -o "$T/P" --backend stamp --route plugin -- cargo test -q 2>&1 | grep -E '^test result' | sed 's/; finished in .*//' > "$T/plugin.tests"
check "--route plugin: cargo test passes exactly the same tests" cmp "$T/native.tests" "$T/plugin.tests"
kiln-measure phases "$T/P" --json "$T/plugin-phases.json" > "$T/plugin-phases.md"
check "kiln-measure phases: the plugin's units and its time inside rustc" \
  bash -c "jq -e '.plugin.units > 3 and .plugin.stamp_units > 0 and .plugin.stages.export > 0 and .phases.rustc > 0' '$T/plugin-phases.json' >/dev/null &&
    grep -q 'stamp inside rustc (--route plugin)' '$T/plugin-phases.md'"
cargo clean -q
kiln-capture -o "$T/PI" --backend stamp --route plugin -- cargo build -q
first=$(wc -l < "$T/PI/plugin.jsonl")
cp src/lib.rs "$T/lib.rs.orig"
sed -i 's/format!("circle r={}", self.r)/format!("circle of radius {}", self.r)/' src/lib.rs
kiln-capture -o "$T/PI" --backend stamp --route plugin -- cargo build -q
./target/debug/kiln-example > "$T/plugin-inc.out"
cp "$T/lib.rs.orig" src/lib.rs
again=$(( $(wc -l < "$T/PI/plugin.jsonl") - first ))
check "--route plugin: the incremental rebuild shows the edit, stamp compiling only the units rustc did not reuse ($again of $first)" \
  bash -c "grep -q 'circle of radius 2 area' '$T/plugin-inc.out' && [[ $again -ge 1 && $again -lt $first ]]"
# A linker the build names (-C linker, here from cargo's target setting) is the one
# kiln-linker runs after placing stamp's objects.
cargo clean -q
printf '#!/bin/sh\necho used >> "%s/named-linker.log"\nexec cc "$@"\n' "$T" > "$T/named-linker" && chmod +x "$T/named-linker"
CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER="$T/named-linker" kiln-capture -o "$T/PL" --backend stamp --route plugin -- cargo build -q
check "--route plugin: the build's own -C linker links, after kiln-linker, and the program runs" \
  bash -c "[[ -s '$T/named-linker.log' ]] && ./target/debug/kiln-example | cmp -s - '$T/native.out'"
# kiln-linker by hand, as rustc runs it with a response file: the units go to the linker
# as one archive in their order (--whole-archive), in a new response file with the
# blank in a path escaped; both are gone after the link, whose status is returned.
mkdir -p "$T/kl/tmp" "$T/kl/u v"
printf 'int a(void) { return 1; }\n' > "$T/kl/a.c" && cc -c "$T/kl/a.c" -o "$T/kl/u v/x.a1.rcgu.o"
printf 'int b(void) { return 2; }\n' > "$T/kl/b.c" && cc -c "$T/kl/b.c" -o "$T/kl/u v/x.b2.rcgu.o"
printf -- '-Wl,--as-needed\n%s\n%s\n-lc\n' "$T/kl/u\\ v/x.a1.rcgu.o" "$T/kl/u\\ v/x.b2.rcgu.o" > "$T/kl/args.rsp"
printf '#!/bin/sh\nf=${1#@}\ncp "$f" %s/seen.rsp\nar t "$(sed -n 4p "$f")" > %s/seen.members\nexit 3\n' "$T/kl" "$T/kl" > "$T/kl/fake-ld"
chmod +x "$T/kl/fake-ld" && ln -sf "$KILN_BIN/kiln-rustc-wrapper" "$T/kl/kiln-linker"
KILN_REAL_LINKER="$T/kl/fake-ld" KILN_CAPTURE_TMPDIR="$T/kl/tmp" "$T/kl/kiln-linker" -m64 "@$T/kl/args.rsp"; rc=$?
printf -- '-m64\n-Wl,--as-needed\n-Wl,--whole-archive\n-Wl,--no-whole-archive\n-lc\n' > "$T/kl/expected.rsp"
check "kiln-linker: the units as one archive, in order, in a new response file; both removed; the linker's status (3)" \
  bash -c "[[ $rc -eq 3 ]] && printf 'x.a1.rcgu.o\nx.b2.rcgu.o\n' | cmp -s - '$T/kl/seen.members' &&
    sed 4d '$T/kl/seen.rsp' | cmp -s - '$T/kl/expected.rsp' && sed -n 4p '$T/kl/seen.rsp' | grep -q '^$T/kl/tmp/' &&
    [[ -z \$(ls -A '$T/kl/tmp') ]]"
printf '#!/bin/sh\nprintf "%%s\\n" "$@" > %s/seen.args\n' "$T/kl" > "$T/kl/fake-ld2" && chmod +x "$T/kl/fake-ld2"
env -u KILN_CAPTURE_TMPDIR KILN_REAL_LINKER="$T/kl/fake-ld2" "$T/kl/kiln-linker" -m64 "@$T/kl/args.rsp"; rc=$?
check "kiln-linker without the capture's directory: the line as rustc gave it, response file and all" \
  bash -c "[[ $rc -eq 0 ]] && printf -- '-m64\n@%s\n' '$T/kl/args.rsp' | cmp -s - '$T/kl/seen.args'"
# Run with the build's own RUSTC_BOOTSTRAP=1, under which the plain build's symbols are
# v0-mangled: kiln must not add its legacy mangling then (the contract would differ).
check "examples/stamp-in-rustc.sh: the program, the plugin's units and each rlib's contract (with RUSTC_BOOTSTRAP=1)" \
  bash -c "RUSTC_BOOTSTRAP=1 KILN_BIN='$KILN_BIN' '$KILN_SOURCE/examples/stamp-in-rustc.sh' '$T/sir' > '$T/sir.txt' 2>&1 &&
    grep -q 'circle r=2 area' '$T/sir.txt' && grep -Eq '^([0-9]+) of \1 units' '$T/sir.txt' &&
    [[ \$(grep -Ec '^([0-9]+) objects: \1 same contract, 0 different, 0 unpaired' '$T/sir.txt') -eq 2 ]] ||
    { cat '$T/sir.txt'; false; }"
# cargo runs kiln-rustc-wrapper for every rustc call on this route: it links no LLVM
# (its start is a third of kiln-capture's), and it is what recorded the invocations.
check "--route plugin: kiln-rustc-wrapper, cargo's RUSTC_WRAPPER there, links no LLVM" \
  bash -c "nm -C '$KILN_BIN/kiln-rustc-wrapper' | grep -c ' llvm::' | grep -qx 0 &&
    jq -se 'map(select(.tool == \"rustc\")) | length > 0 and all(.phases.startup // 0 | . < 0.05)' '$T/PL/invocations.jsonl' >/dev/null"
# rustc's LLVM has its C++ runtime linked in; the plugin brings its own, kept to itself,
# so that no rustc loads libstdc++.so for it, nor takes a C++ symbol from it. (This
# test runs in the build without sanitizers, the one that links it so.)
check "--route plugin: the plugin needs only libc, and exports its entry point alone" \
  bash -c "plugin=\$(ls '$KILN_BIN'/../lib/kiln-rustc-plugin.so) &&
    [[ \$(readelf -d \"\$plugin\" | grep NEEDED | grep -Evc 'libc\\.so|ld-linux') -eq 0 ]] &&
    [[ \$(nm -D --defined-only \"\$plugin\" | awk '{print \$3}' | grep -v '^GLIBC' | tr '\\n' ' ') == 'llvmGetPassPluginInfo ' ]]"
mkdir -p "$T/lone/bin" && cp "$KILN_BIN/kiln-capture" "$T/lone/bin/"
KILN_RUSTC_PLUGIN="$(ls "$KILN_BIN"/../lib/kiln-rustc-plugin.so)" "$T/lone/bin/kiln-capture" -o "$T/PW" --backend stamp \
  --route plugin -- true 2> "$T/wrapper.err"; rc=$?
check "--route plugin without kiln-rustc-wrapper beside kiln-capture: exit 6, one line naming it, no corpus" \
  bash -c "[[ $rc -eq 6 ]] && grep -q 'kiln-rustc-wrapper' '$T/wrapper.err' && [[ \$(wc -l < '$T/wrapper.err') -eq 1 && ! -e '$T/PW' ]]"
cp "$KILN_BIN/kiln-rustc-wrapper" "$T/lone/bin/"
"$T/lone/bin/kiln-capture" -o "$T/PW" -- true 2> "$T/llvm-half.err"; rc=$?
check "without kiln-capture-llvm beside kiln-capture: exit 6, one line naming it, no corpus" \
  bash -c "[[ $rc -eq 6 ]] && grep -q 'kiln-capture-llvm' '$T/llvm-half.err' && [[ \$(wc -l < '$T/llvm-half.err') -eq 1 && ! -e '$T/PW' ]]"
# The driver, the one process a build through kiln pays for once, links no LLVM.
check "kiln-capture links no LLVM, kiln-capture-llvm does" \
  bash -c "nm -C '$KILN_BIN/kiln-capture' | grep -c ' llvm::' | grep -qx 0 &&
    nm -C '$KILN_BIN/kiln-capture-llvm' | grep -q ' llvm::'"
kiln-capture -o "$T/PX" --backend llvm --route plugin -- true 2> "$T/route.err"; rc=$?
check "--route plugin with another back end is a usage error (exit 2), said in one line" \
  bash -c "[[ $rc -eq 2 ]] && grep -q 'plugin runs stamp inside rustc' '$T/route.err' && [[ \$(wc -l < '$T/route.err') -eq 1 ]]"

# Incremental builds through kiln: rustc keeps its incremental state, a unit it reuses
# comes back as the same bitcode, and its object comes from the corpus's object cache.
cargo clean -q
kiln-capture -o "$T/I" --backend stamp -- cargo build -q
before=$(wc -l < "$T/I/receipts.jsonl")
check "a first build through kiln emits every unit (all cache misses)" \
  jq -se 'length > 3 and all(.cache == "miss")' "$T/I/receipts.jsonl"
cp src/lib.rs "$T/lib.rs.orig"
sed -i 's/format!("circle r={}", self.r)/format!("circle of radius {}", self.r)/' src/lib.rs
kiln-capture -o "$T/I" --backend stamp -- cargo build -q
./target/debug/kiln-example > "$T/inc.out"
check "after a one-line edit the incremental rebuild shows the edit" grep -q "circle of radius 2 area" "$T/inc.out"
tail -n +$((before + 1)) "$T/I/receipts.jsonl" > "$T/inc.receipts"
check "the rebuild emits only the units rustc did not reuse ($(jq -s 'map(select(.cache=="miss")) | length' "$T/inc.receipts") of $(wc -l < "$T/inc.receipts"); the rest from the object cache)" \
  jq -se '(map(select(.cache == "hit")) | length) > (map(select(.cache == "miss")) | length) and any(.cache == "miss")' "$T/inc.receipts"
check "a cached object is stored with its own hash, and its receipt counts no emission" \
  bash -c "head -1 \"\$(ls '$T/I/objects/'*.o | head -1)\" | grep -qE '^kiln-object-cache 1 [0-9a-f]{32}\$' &&
    jq -se 'map(select(.cache==\"hit\")) | all(.functions.stamp == 0 and .ok)' '$T/inc.receipts'"
cp "$T/lib.rs.orig" src/lib.rs
kiln-measure phases "$T/I" --json "$T/phases.json" --svg "$T/phases.svg" > "$T/phases.md"
check "kiln-measure phases: every captured invocation's phases, the units' stages and the cache, per crate" \
  jq -e '.schema == "kiln-measure-phases" and .phases.rustc > 0 and .phases.emit > 0 and .phases.link > 0
    and .phases.startup > 0 and .cache_hits > 0 and .emit_stages.codegen > 0 and .wall_seconds > 0
    and (.crates | map(.crate) | index("kiln_example")) != null and (.timeline | length) >= 3' "$T/phases.json"
check "kiln-measure phases: a table and an SVG timeline" \
  bash -c "grep -q '| rustc' '$T/phases.md' && grep -q '<svg' '$T/phases.svg' && grep -q 'kiln_example link' '$T/phases.svg'"

# cargo -jN through kiln: the emission threads take cargo's jobserver tokens, so at
# most N emit at once in each rustc (without them, one per hardware thread).
for j in 1 2; do
  cargo clean -q
  KILN_TRACE_EMIT_THREADS="$T/emit-j$j" kiln-capture -o "$T/J$j" --backend stamp -- cargo build -q -j$j
  most=$(awk '$2 > m { m = $2 } END { print m + 0 }' "$T/emit-j$j" 2>/dev/null)
  check "cargo build -j$j through kiln: at most $j emission threads at once (most: $most)" \
    bash -c "[[ -s '$T/emit-j$j' && $most -le $j ]] && ! grep -vqE '^max [0-9]+ tokens [0-9]+$' '$T/emit-j$j'"
done

cargo clean -q
kiln-capture -o "$T/N" -- cargo build -q
./target/debug/kiln-example > "$T/native2.out"
check "--backend native keeps rustc's objects and still captures bitcode" \
  bash -c "cmp -s '$T/native.out' '$T/native2.out' && [[ \$(wc -l < '$T/N/modules.jsonl') -ge 3 ]]"
check "native capture leaves no -Csave-temps files behind" \
  bash -c "! ls target/debug/deps | grep -E '\\.rcgu\\.(bc|o)$'"

cargo clean -q
kiln-capture -o "$T/L" --backend "cmd:$LLVM_BINDIR/llc -O0 -filetype=obj -relocation-model=pic {in} -o {out}" -- cargo build -q
./target/debug/kiln-example > "$T/llc.out"
check "a cmd: back end (llc-22) builds a working program" cmp "$T/native.out" "$T/llc.out"

cargo clean -q
kiln-capture -o "$T/F" --backend "cmd:false {in} {out}" -- cargo build -q 2> "$T/fail.err"
rc=$?
check "a failing back end fails the build (status $rc) and says which crate and module" \
  bash -c "[[ $rc -ne 0 ]] && grep -Eq '^kiln-capture: error: crate [a-z_]+ \(.*\): .*rcgu\.o\)?: back end command failed' '$T/fail.err' && grep -q '\"action\":\"failed\"' '$T/F/invocations.jsonl'"
cargo clean -q
kiln-capture -o "$T/F2" --fallback --backend "cmd:false {in} {out}" -- cargo build -q 2>/dev/null
./target/debug/kiln-example > "$T/fallback.out"
check "--fallback builds with rustc instead, and counts the fallback" \
  bash -c "cmp -s '$T/native.out' '$T/fallback.out' && grep -q '\"action\":\"fallback\"' '$T/F2/invocations.jsonl'"
# A back end that crashes the process emitting (a cmd: back end that sends SIGSEGV to
# its parent) on the bitcode route: the units are emitted in a process of their own, so
# the wrapper lives on; with --fallback every unit is then llvm's and the program runs,
# without it the crate fails with the unit's reason and no rlib is left holding bitcode.
# Only a parent that is not kiln-capture: a process emits several units at once, and a
# command whose emitter died before the shell read its parent (a sibling's SIGSEGV) is
# kiln-capture's child by then (kiln is the build's subreaper); in the project's CI
# (stop 50) such a shell sent SIGSEGV to kiln-capture.
crashing='cmd:[ "$(cat /proc/$PPID/comm)" = kiln-capture ] || kill -SEGV $PPID; sleep 2; : {in} {out}'
cargo clean -q
kiln-capture -o "$T/SEGV" --fallback --backend "$crashing" -- cargo build -q 2> "$T/segv.err"
./target/debug/kiln-example > "$T/segv.out"
check "a back end that crashes, with --fallback: the build succeeds on llvm's objects and the program runs" \
  cmp "$T/native.out" "$T/segv.out"
check "each unit that crashed is named, its crash counted as the fallback's reason" \
  bash -c "grep -Eq '^kiln-capture: warning: crate kiln_example: .*rcgu\.o\)?: the back end: crashed \(SIGSEGV\); emitted with llvm instead' '$T/segv.err' &&
    grep -q '\"action\":\"fallback\",\"reason\":\"[^\"]*rcgu\.o)\?: the back end: crashed (SIGSEGV)\"' '$T/SEGV/invocations.jsonl'"
cargo clean -q
kiln-capture -o "$T/SEGV2" --backend "$crashing" -- cargo build -q > "$T/segv2.out" 2>&1; rc=$?
check "without --fallback the crate fails (status $rc) with the crash as its reason, and no rlib is left" \
  bash -c "[[ $rc -ne 0 ]] && grep -Eq '^kiln-capture: error: crate [a-z_]+ \(.*\): .*rcgu\.o\)?: the back end: crashed \(SIGSEGV\)$' '$T/segv2.out' &&
    ! ls target/debug/deps/*.rlib 2>/dev/null | grep -q ."
# SIGTERM to the wrapper alone (not to cargo) while a cmd: back end runs: the command is
# stopped, the crate does not fall back to llvm (the build is being stopped), and the
# wrapper ends by the signal, so that cargo says which.
cargo clean -q
rm -f "$T"/started-* "$T"/finished-*
slow="cmd:touch $T/started-\$\$; sleep 6; touch $T/finished-\$\$; false {in} {out}"
kiln-capture -o "$T/STOP" --fallback --backend "$slow" -- cargo build -q -j1 > "$T/stop.out" 2>&1 &
pid=$!
for _ in $(seq 300); do compgen -G "$T/started-*" > /dev/null && break; sleep 0.1; done
kill -TERM "$(pgrep -f "kiln-capture-llvm .*rustc .*--crate-name" | head -1)"
wait "$pid"
sleep 7
check "SIGTERM to the rustc wrapper during emission: it ends by the signal, which cargo reports" \
  grep -q "signal: 15, SIGTERM" "$T/stop.out"
check "the back end's command was stopped, and no unit fell back to llvm" \
  bash -c "! compgen -G '$T/finished-*' > /dev/null && ! grep -q '\"action\":\"fallback\"' '$T/STOP/invocations.jsonl' &&
    grep -q '\"action\":\"failed\",\"reason\":\"interrupted by SIGTERM\"' '$T/STOP/invocations.jsonl'"
# A profile with LTO (cargo passes -C lto to the binary): the bitcode route compiles
# the units with LTO off, and links them so too (with -C lto, rustc left every upstream
# crate's objects, std's included, out of the link).
mkdir -p "$T/lto/src"
cat > "$T/lto/Cargo.toml" <<'TOML'
[package]
name = "ltoapp"
version = "0.1.0"
edition = "2021"
[profile.release]
lto = true
TOML
echo 'fn main() { let v: Vec<u64> = (1..=10).collect(); println!("{}", v.iter().sum::<u64>()); }' > "$T/lto/src/main.rs"
(cd "$T/lto" && kiln-capture -o "$T/LTO" --backend llvm -- cargo build --release -q)
check "an LTO profile's binary links and runs through the bitcode route" \
  bash -c "[[ \$('$T/lto/target/release/ltoapp') == 55 ]]"
# A rustc that a signal ends (a crash, the OOM killer): the wrapper ends by the same
# signal, so that cargo says which ("signal: 11"), not "exit status: 139".
printf '#!/bin/sh\nfor a in "$@"; do case "$a" in */src/lib.rs) exec sh -c '"'"'kill -SEGV $$'"'"';; esac; done\nexec rustc "$@"\n' \
  > "$T/crashing-rustc"
chmod +x "$T/crashing-rustc"
example_crate "$T/crash-crate"
(cd "$T/crash-crate" && kiln-capture -o "$T/SIG" -- env RUSTC="$T/crashing-rustc" cargo build > "$T/sig.out" 2>&1)
check "cargo reports the signal that ended rustc" grep -q "signal: 11, SIGSEGV" "$T/sig.out"
check "and the invocation is recorded as failed" grep -q '"action":"failed","reason":"rustc exited with status 139"' "$T/SIG/invocations.jsonl"
finish
