// The capture wrappers' reading of compiler command lines (lib/capture_args.h): which
// rustc and clang invocations kiln takes and which it passes through unchanged, and
// why. Each table row is a command line as cargo, make or cmake pass it.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "capture_args.h"
#include "capture_rustc.h"
#include "fs.h"
#include "process.h"
#include "scratch_dir.h"

using namespace kiln;

namespace {

// A command line split at spaces (no row needs a space inside an argument).
std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

// What cargo 1.7x passes to rustc for a dependency of a release build.
const std::string kCargoLib =
    "--crate-name memchr --edition=2018 /r/memchr-2.5.0/src/lib.rs --error-format=json "
    "--json=diagnostic-rendered-ansi,artifacts,future-incompat --diagnostic-width=100 --crate-type lib "
    "--emit=dep-info,metadata,link -C opt-level=3 -C embed-bitcode=no --cfg feature=\"std\" "
    "-C metadata=8d4bd81b1b0a3b4c -C extra-filename=-8d4bd81b1b0a3b4c --out-dir /t/release/deps "
    "-L dependency=/t/release/deps --cap-lints allow";
// ... for the package's own binary in a debug build (incremental, debuginfo).
const std::string kCargoBin =
    "--crate-name hello --edition=2021 src/main.rs --error-format=json --json=diagnostic-rendered-ansi "
    "--crate-type bin --emit=dep-info,link -C embed-bitcode=no -C debuginfo=2 -C metadata=0f1e2d3c "
    "-C extra-filename=-0f1e2d3c --out-dir /t/debug/deps -C incremental=/t/debug/incremental "
    "-L dependency=/t/debug/deps --extern memchr=/t/debug/deps/libmemchr-8d4b.rlib";

struct RustcDecision {
  std::string line;
  std::string reason;  // "" : kiln takes it
  std::string input, crate_name;
};

const RustcDecision kRustcDecisions[] = {
    // Crates that kiln captures.
    {kCargoLib, "", "/r/memchr-2.5.0/src/lib.rs", "memchr"},
    {kCargoBin, "", "src/main.rs", "hello"},
    {"--crate-name hello --edition=2021 src/lib.rs --emit=dep-info,link -C debuginfo=2 --test "
     "-C metadata=aa -C extra-filename=-aa --out-dir /t/debug/deps",
     "", "src/lib.rs", "hello"},  // cargo test's harness
    {"--crate-name hello src/lib.rs --crate-type rlib --crate-type cdylib --out-dir /t/o", "", "src/lib.rs", "hello"},
    {"--crate-name hello --edition 2018 src/lib.rs --out-dir /t/o", "", "src/lib.rs", "hello"},  // no --emit: link
    {"--crate-name=hello src/lib.rs --out-dir=/t/o --emit=link", "", "src/lib.rs", "hello"},
    // Queries and probes.
    {"-vV", "version query", "", ""},
    {"-V", "version query", "", ""},
    {"--version --verbose", "version query", "", ""},
    {"- --crate-name ___ --print=file-names --crate-type bin --crate-type rlib --crate-type dylib "
     "--crate-type cdylib --crate-type staticlib --crate-type proc-macro --print=sysroot --print=cfg",
     "--print query", "-", "___"},  // cargo's target-info probe
    {"--print cfg", "--print query", "", ""},
    {"--crate-name probe --crate-type lib --out-dir /t/build/out --emit=llvm-ir -",
     "probe compiled from standard input", "-", "probe"},  // autocfg
    {"--crate-name lonely --out-dir /t/o", "no input file", "", "lonely"},
    {"@/tmp/cargo-argfile.Xy12", "arguments in an @file, which kiln does not read", "", ""},  // cargo, on E2BIG
    // Crates that rustc or cargo run or load on the host.
    {"--crate-name build_script_build --edition=2018 /r/serde-1.0.152/build.rs --error-format=json "
     "--crate-type bin --emit=dep-info,link -C embed-bitcode=no -C debuginfo=2 -C metadata=12ab "
     "-C extra-filename=-12ab --out-dir /t/debug/build/serde-12ab -L dependency=/t/debug/deps --cap-lints allow",
     "build script", "/r/serde-1.0.152/build.rs", "build_script_build"},
    {"--crate-name build_script_main build/main.rs --crate-type bin --out-dir /t/debug/build/x-1", "build script",
     "build/main.rs", "build_script_main"},
    {"--crate-name serde_derive --edition=2015 /r/serde_derive-1.0.152/src/lib.rs --crate-type proc-macro "
     "--emit=dep-info,link -C prefer-dynamic -C embed-bitcode=no -C metadata=77 -C extra-filename=-77 "
     "--out-dir /t/debug/deps --extern proc_macro --cap-lints allow",
     "proc-macro (loaded by rustc itself)", "/r/serde_derive-1.0.152/src/lib.rs", "serde_derive"},
    {"--crate-name m src/lib.rs --crate-type=proc-macro --out-dir /t/o", "proc-macro (loaded by rustc itself)",
     "src/lib.rs", "m"},
    // No object to take.
    {"--crate-name hello --edition=2021 src/main.rs --crate-type bin --emit=dep-info,metadata -C debuginfo=2 "
     "--out-dir /t/debug/deps",
     "no object output (--emit=dep-info,metadata)", "src/main.rs", "hello"},  // cargo check
    {"--crate-name hello src/lib.rs --emit metadata --out-dir /t/o", "no object output (--emit=metadata)", "src/lib.rs",
     "hello"},
    {"--crate-name hello src/main.rs -o /t/hello", "no --out-dir", "src/main.rs", "hello"},
    {"hello.rs", "no --out-dir", "hello.rs", ""},
    // --print native-static-libs and link-args are printed as rustc links a crate it
    // compiles (RUSTFLAGS=--print=native-static-libs); every other kind stops rustc.
    {kCargoLib + " --print=native-static-libs", "", "/r/memchr-2.5.0/src/lib.rs", "memchr"},
    {kCargoBin + " --print native-static-libs", "", "src/main.rs", "hello"},
    {kCargoBin + " --print=link-args", "", "src/main.rs", "hello"},
    {kCargoBin + " --print=native-static-libs=/t/libs.txt --print link-args", "", "src/main.rs", "hello"},
    {kCargoBin + " --print=native-static-libs --print=cfg", "--print query", "src/main.rs", "hello"},
    {kCargoBin + " --print=cfg=/t/cfg.txt", "--print query", "src/main.rs", "hello"},
    // rustc takes every --emit (RUSTFLAGS=--emit=llvm-ir adds to cargo's): a crate still
    // linked is taken, one that emits no object still passes through.
    {kCargoLib + " --emit=llvm-ir", "", "/r/memchr-2.5.0/src/lib.rs", "memchr"},
    {kCargoBin + " --emit asm", "", "src/main.rs", "hello"},
    {"--crate-name hello src/lib.rs --emit=dep-info,metadata --emit=llvm-ir --out-dir /t/o",
     "no object output (--emit=dep-info,metadata,llvm-ir)", "src/lib.rs", "hello"},
    // The order of the reasons: the first that applies is the one given.
    {"-vV src/lib.rs --crate-name build_script_build", "version query", "src/lib.rs", "build_script_build"},
    {"--crate-name build_script_build build.rs --crate-type proc-macro --emit=metadata", "build script", "build.rs",
     "build_script_build"},
};

}  // namespace

TEST_CASE("the rustc wrapper passes through queries, probes, build scripts, proc-macros and metadata-only crates",
          "[capture][args][rustc]") {
  for (const auto& row : kRustcDecisions) {
    INFO("rustc " << row.line);
    RustcCall c = parse_rustc_args(words(row.line));
    CHECK(passthrough_reason(c) == row.reason);
    CHECK(c.input == row.input);
    CHECK(c.crate_name == row.crate_name);
    CHECK(c.args == words(row.line));
  }
}

TEST_CASE("on the plugin route build scripts and proc-macros are compiled like any crate; the other reasons hold",
          "[capture][args][rustc]") {
  for (const auto& row : kRustcDecisions) {
    INFO("rustc " << row.line);
    RustcCall c = parse_rustc_args(words(row.line));
    const std::string on_plugin = passthrough_reason(c, "plugin");
    if (row.reason == "build script" || row.reason == "proc-macro (loaded by rustc itself)")
      CHECK(on_plugin != row.reason);  // the next reason that applies, or none
    else
      CHECK(on_plugin == row.reason);
  }
  RustcCall build_script = parse_rustc_args(
      words("--crate-name build_script_build --edition=2021 build.rs --crate-type bin --emit=dep-info,link "
            "-C embed-bitcode=no --out-dir /t/debug/build/memchr-1/"));
  CHECK(passthrough_reason(build_script) == "build script");
  CHECK(passthrough_reason(build_script, "plugin").empty());
  RustcCall proc_macro = parse_rustc_args(
      words("--crate-name serde_derive --edition=2015 src/lib.rs --crate-type proc-macro --emit=dep-info,link "
            "-C prefer-dynamic -C embed-bitcode=no --out-dir /t/debug/deps --extern proc_macro"));
  CHECK(passthrough_reason(proc_macro) == "proc-macro (loaded by rustc itself)");
  CHECK(passthrough_reason(proc_macro, "plugin").empty());
}

namespace {

// cargo's command line for its RUSTC_WRAPPER (after the wrapper's name), and how it
// splits: the workspace wrapper ("" for none), the rustc, and rustc's arguments.
struct WrapperLineRow {
  std::string line, workspace_wrapper, rustc, args;
};

const WrapperLineRow kWrapperLines[] = {
    // RUSTC ARGS...
    {"/r/bin/rustc -vV", "", "/r/bin/rustc", "-vV"},
    {"/r/bin/rustc", "", "/r/bin/rustc", ""},
    {"/r/bin/rustc - --crate-name ___ --print=file-names", "", "/r/bin/rustc", "- --crate-name ___ --print=file-names"},
    {"/r/bin/rustc --crate-name hello src/main.rs", "", "/r/bin/rustc", "--crate-name hello src/main.rs"},
    {"/r/bin/rustc @/tmp/d/rustc", "", "/r/bin/rustc", "@/tmp/d/rustc"},  // an argument file named rustc
    {"/usr/bin/rustc-1.85 -vV", "", "/usr/bin/rustc-1.85", "-vV"},
    // WORKSPACE_WRAPPER RUSTC ARGS...: cargo clippy, and a wrapper of the build's own
    // (in a directory whose name holds "rustc", or named after it).
    {"/r/bin/clippy-driver /r/toolchains/stable/bin/rustc -vV", "/r/bin/clippy-driver",
     "/r/toolchains/stable/bin/rustc", "-vV"},
    {"/t/rustc-tools/mywrap /r/bin/rustc --crate-name hello src/main.rs", "/t/rustc-tools/mywrap", "/r/bin/rustc",
     "--crate-name hello src/main.rs"},
    {"/t/rustc-wrap.sh /r/bin/rustc -vV", "/t/rustc-wrap.sh", "/r/bin/rustc", "-vV"},
    {"mywrap rustc -vV", "mywrap", "rustc", "-vV"},
    {"/t/wrap /r/bin/rustc.exe -vV", "/t/wrap", "/r/bin/rustc.exe", "-vV"},
    {"/t/wrap /usr/bin/rustc-1.85 -vV", "/t/wrap", "/usr/bin/rustc-1.85", "-vV"},
    {"/t/wrap /r/bin/x86_64-unknown-linux-gnu-rustc", "/t/wrap", "/r/bin/x86_64-unknown-linux-gnu-rustc", ""},
};

}  // namespace

TEST_CASE("the rustc wrapper tells cargo's RUSTC_WORKSPACE_WRAPPER form by its rustc, and passes it through",
          "[capture][args][rustc]") {
  for (const auto& row : kWrapperLines) {
    INFO("wrapper " << row.line);
    const CargoWrapperLine line = read_wrapper_line(words(row.line));
    CHECK(line.workspace_wrapper == row.workspace_wrapper);
    CHECK(line.rustc == row.rustc);
    CHECK(joined(line.args) == row.args);
    // Run as cargo asked, with the wrapper named, whatever the crate; else rustc's reasons.
    CHECK(workspace_wrapper_reason(line) ==
          (row.workspace_wrapper.empty() ? "" : "run through RUSTC_WORKSPACE_WRAPPER " + row.workspace_wrapper));
  }
  for (const char* name : {"rustc", "/r/bin/rustc", "rustc.exe", "/usr/bin/rustc-1.85", "/r/aarch64-linux-gnu-rustc"})
    CHECK(rustc_program_name(name));
  for (const char* name : {"clippy-driver", "/t/rustc-wrap.sh", "/t/rustc-tools/mywrap", "rustdoc", "rustc-", "-vV",
                           "-", "@/tmp/d/rustc", "--crate-name", "src/rustc.rs", ""})
    CHECK_FALSE(rustc_program_name(name));
}

namespace {

struct RustcParse {
  std::string line;
  std::string opt_level;
  int debuginfo;
  std::string extra_filename, emit, out_dir, crate_types;  // crate_types joined by spaces
};

const RustcParse kRustcParses[] = {
    {kCargoLib, "3", 0, "-8d4bd81b1b0a3b4c", "dep-info,metadata,link", "/t/release/deps", "lib"},
    {kCargoBin, "0", 2, "-0f1e2d3c", "dep-info,link", "/t/debug/deps", "bin"},
    {"x.rs", "0", 0, "", "", "", ""},  // rustc's defaults
    // -C as a separate word, attached, or spelled --codegen; the last one wins.
    {"x.rs -C opt-level=2", "2", 0, "", "", "", ""},
    {"x.rs -Copt-level=s", "s", 0, "", "", "", ""},
    {"x.rs --codegen opt-level=z", "z", 0, "", "", "", ""},
    {"x.rs -O", "3", 0, "", "", "", ""},
    {"x.rs -O -C opt-level=1", "1", 0, "", "", "", ""},
    {"x.rs -C codegen-units=16 -C opt-level=3 -C codegen-units=1", "3", 0, "", "", "", ""},
    // Debug information: numbers, words, and -g.
    {"x.rs -g", "0", 2, "", "", "", ""},
    {"x.rs -C debuginfo=1", "0", 1, "", "", "", ""},
    {"x.rs -C debuginfo=limited", "0", 1, "", "", "", ""},
    {"x.rs -C debuginfo=line-tables-only", "0", 1, "", "", "", ""},
    {"x.rs -C debuginfo=line-directives-only", "0", 1, "", "", "", ""},
    {"x.rs -C debuginfo=full", "0", 2, "", "", "", ""},
    {"x.rs -Cdebuginfo=2", "0", 2, "", "", "", ""},
    {"x.rs -g -C debuginfo=none", "0", 0, "", "", "", ""},
    {"x.rs -C debuginfo=0", "0", 0, "", "", "", ""},
    {"x.rs -C debuginfo=off", "0", 0, "", "", "", ""},
    // Values given as the next word or after '='.
    {"--crate-type rlib --crate-type=dylib x.rs --out-dir o -C extra-filename=-9", "0", 0, "-9", "", "o", "rlib dylib"},
    {"--emit link x.rs --out-dir=/o/d", "0", 0, "", "link", "/o/d", ""},
    // Repeated --emit: every kind, in order, as rustc takes them.
    {"x.rs --emit=dep-info,metadata,link --emit=llvm-ir", "0", 0, "", "dep-info,metadata,link,llvm-ir", "", ""},
    {"--emit link x.rs --emit obj=/o/x.o", "0", 0, "", "link,obj=/o/x.o", "", ""},
};

}  // namespace

TEST_CASE("the rustc wrapper reads optimization, debug information and outputs as rustc does",
          "[capture][args][rustc]") {
  for (const auto& row : kRustcParses) {
    INFO("rustc " << row.line);
    RustcCall c = parse_rustc_args(words(row.line));
    CHECK(c.opt_level == row.opt_level);
    CHECK(c.debuginfo == row.debuginfo);
    CHECK(c.extra_filename == row.extra_filename);
    CHECK(c.emit == row.emit);
    CHECK(c.out_dir == row.out_dir);
    CHECK(joined(c.crate_types) == row.crate_types);
  }
}

TEST_CASE("the rustc wrapper never takes an option's value for the source file", "[capture][args][rustc]") {
  // Every option here takes its value as the next word, which does not start with '-'.
  const char* const options[] = {"--crate-name",
                                 "--edition",
                                 "--error-format",
                                 "--json",
                                 "--crate-type",
                                 "--emit",
                                 "-C",
                                 "--codegen",
                                 "--cfg",
                                 "--check-cfg",
                                 "-L",
                                 "-l",
                                 "--extern",
                                 "--out-dir",
                                 "-o",
                                 "--target",
                                 "--cap-lints",
                                 "--explain",
                                 "-A",
                                 "-W",
                                 "-D",
                                 "-F",
                                 "--force-warn",
                                 "--print",
                                 "--sysroot",
                                 "-Z",
                                 "--remap-path-prefix",
                                 "--diagnostic-width",
                                 "--env-set",
                                 "--allow",
                                 "--warn",
                                 "--deny",
                                 "--forbid"};
  for (const char* option : options) {
    INFO("rustc " << option << " value.rs src/lib.rs");
    RustcCall c = parse_rustc_args({option, "value.rs", "src/lib.rs"});
    CHECK(c.input == "src/lib.rs");
    CHECK(c.input_index == 2);
  }
  // Only the first free word is the input.
  RustcCall two = parse_rustc_args({"a.rs", "b.rs"});
  CHECK(two.input == "a.rs");
  CHECK(two.input_index == 0);
  CHECK(parse_rustc_args({"--test", "x.rs"}).input_index == 1);
}

namespace {

struct BitcodeStep {
  std::string line, first_step;  // first_step without the three flags always appended
};

const BitcodeStep kBitcodeSteps[] = {
    {"--crate-name a a.rs --out-dir o", "--crate-name a a.rs --out-dir o"},
    // Incremental compilation stays (reused units come back as bitcode); LTO and
    // embedded bitcode conflict with the bitcode route: dropped with their value, in
    // either spelling.
    {"a.rs -C incremental=/t/debug/incremental --out-dir o", "a.rs -C incremental=/t/debug/incremental --out-dir o"},
    {"a.rs -Cincremental=/t/i --out-dir o", "a.rs -Cincremental=/t/i --out-dir o"},
    {"a.rs -C embed-bitcode=no -C opt-level=3", "a.rs -C opt-level=3"},
    {"a.rs -Cembed-bitcode=no -Copt-level=3", "a.rs -Copt-level=3"},
    {"a.rs -C lto -C lto=fat -Clto=thin -C linker-plugin-lto=yes", "a.rs"},
    // Everything else stays, in order.
    {kCargoBin,
     "--crate-name hello --edition=2021 src/main.rs --error-format=json --json=diagnostic-rendered-ansi "
     "--crate-type bin --emit=dep-info,link -C debuginfo=2 -C metadata=0f1e2d3c "
     "-C extra-filename=-0f1e2d3c --out-dir /t/debug/deps -C incremental=/t/debug/incremental "
     "-L dependency=/t/debug/deps --extern memchr=/t/debug/deps/libmemchr-8d4b.rlib"},
    {"a.rs -C codegen-units=16 -C debuginfo=2 -C incremental-verify-ich",
     "a.rs -C codegen-units=16 -C debuginfo=2 -C incremental-verify-ich"},
};

}  // namespace

TEST_CASE("the rustc wrapper's bitcode step keeps incremental, drops LTO and embed-bitcode, asks for bitcode",
          "[capture][args][rustc]") {
  for (const auto& row : kBitcodeSteps) {
    INFO("rustc " << row.line);
    std::vector<std::string> expected = words(row.first_step);
    expected.insert(expected.end(), {"-Clinker-plugin-lto=yes", "-Clto=off", "-Zno-link"});
    CHECK(bitcode_step_args(words(row.line)) == expected);
    // An rlib's step lets rustc archive the bitcode units itself.
    expected.pop_back();
    CHECK(bitcode_step_args(words(row.line), false) == expected);
    // The link step links with LTO off, as the units were compiled.
    std::vector<std::string> link = words(row.first_step);
    link.push_back("-Clto=off");
    CHECK(link_step_args(words(row.line)) == link);
  }
}

namespace {

struct RlibRow {
  std::string line;
  std::string obstacle;  // "" : kiln rewrites the rlib, no second rustc
};

const RlibRow kRlibRows[] = {
    {"--crate-name memchr --crate-type lib --emit=dep-info,metadata,link src/lib.rs --out-dir /t/d", ""},
    {"--crate-name m --crate-type rlib --emit=dep-info,metadata,link src/lib.rs --out-dir /t/d", ""},
    {"--crate-name m --crate-type=lib --emit=link src/lib.rs --out-dir /t/d", ""},
    {"--crate-name m --crate-type lib,rlib src/lib.rs --out-dir /t/d", ""},
    {"--crate-name m --crate-type bin src/main.rs --out-dir /t/d", "crate type bin"},
    {"--crate-name m --crate-type lib --crate-type cdylib src/lib.rs --out-dir /t/d", "crate type cdylib"},
    {"--crate-name m --crate-type lib,staticlib src/lib.rs --out-dir /t/d", "crate type staticlib"},
    {"--crate-name m --test src/lib.rs --out-dir /t/d", "no --crate-type (a binary)"},
    {"--crate-name m src/main.rs --out-dir /t/d", "no --crate-type (a binary)"},
    {"--crate-name m --crate-type lib --emit=metadata,link=/x/libm.rlib src/lib.rs", "an explicit --emit link path"},
    {"--crate-name m --crate-type lib src/lib.rs -o /x/libm.rlib", "an explicit -o output"},
};

}  // namespace

TEST_CASE("library crates are archived by rustc and rewritten in process; other crates keep the second rustc",
          "[capture][args][rustc]") {
  for (const auto& row : kRlibRows) {
    INFO("rustc " << row.line);
    CHECK(rlib_rewrite_obstacle(parse_rustc_args(words(row.line))) == row.obstacle);
  }
}

// ---- The C and C++ wrapper -----------------------------------------------------------

namespace {

struct CcDecision {
  std::string line;
  std::string reason;   // "" : kiln takes it
  std::string sources;  // joined by spaces
  std::string output;
};

// What cmake's Makefile and Ninja generators pass for one object.
const std::string kCmakeCompile =
    "-DKILN_DEMO=1 -I/src/include -isystem /usr/include/zlib -O2 -g -DNDEBUG -std=gnu11 -MD "
    "-MT CMakeFiles/demo.dir/src/a.c.o -MF CMakeFiles/demo.dir/src/a.c.o.d -o CMakeFiles/demo.dir/src/a.c.o "
    "-c /src/src/a.c";

const CcDecision kCcDecisions[] = {
    // Compile-only invocations of one source: kiln takes them.
    {kCmakeCompile, "", "/src/src/a.c", "CMakeFiles/demo.dir/src/a.c.o"},
    {"-c foo.c -o foo.o", "", "foo.c", "foo.o"},
    {"-c foo.c", "", "foo.c", ""},  // clang writes foo.o
    {"-O3 -Wall -c -ofoo.o foo.cc", "", "foo.cc", "foo.o"},
    {"-std=c++20 -c lib/x.cpp -o build/x.o", "", "lib/x.cpp", "build/x.o"},
    {"-c a.cxx -o a.o", "", "a.cxx", "a.o"},
    {"-c a.c++ -o a.o", "", "a.c++", "a.o"},
    {"-c A.C -o a.o", "", "A.C", "a.o"},
    {"-c pre.i -o pre.o", "", "pre.i", "pre.o"},
    {"-c pre.ii -o pre.o", "", "pre.ii", "pre.o"},
    // Option values that look like sources are values, not sources.
    {"-include config.h -D X=1 -U Y -iquote q -MF deps.c -MT gen.c -MQ gen.cc -c a.c -o a.o", "", "a.c", "a.o"},
    {"-Xclang -ast-dump-filter -Xclang fake.cpp -c a.cpp", "", "a.cpp", ""},
    // Linking, queries, and compiling and linking at once.
    {"a.o b.o -o prog -lm", "link or query", "", "prog"},
    {"--version", "link or query", "", ""},
    {"-print-file-name=libgcc.a", "link or query", "", ""},
    {"hello.c -o hello", "compile and link in one step", "hello.c", "hello"},
    {"-E conftest.c", "compile and link in one step", "conftest.c", ""},  // -E without -c: the first test decides
    // Other outputs than an object.
    {"-c -E a.c", "preprocess, assembly or dependency-only output", "a.c", ""},
    {"-c -S a.c -o a.s", "preprocess, assembly or dependency-only output", "a.c", "a.s"},
    {"-c -MM a.c", "preprocess, assembly or dependency-only output", "a.c", ""},
    {"-c -fsyntax-only a.c", "preprocess, assembly or dependency-only output", "a.c", ""},
    {"-c -emit-llvm a.c -o a.bc", "already emits bitcode (-emit-llvm or -flto)", "a.c", "a.bc"},
    {"-flto=thin -O2 -c a.c -o a.o", "already emits bitcode (-emit-llvm or -flto)", "a.c", "a.o"},
    {"-x c -c - -o conftest.o", "explicit -x language", "", "conftest.o"},
    {"-x c++ -c weird.txt -o w.o", "explicit -x language", "", "w.o"},
    // Not exactly one C or C++ source.
    {"-c start.S -o start.o", "no C or C++ source", "", "start.o"},
    {"-c a.s", "no C or C++ source", "", ""},
    {"-c a.c b.c", "several sources in one invocation", "a.c b.c", ""},
    {"-c a.c b.S", "an input beside the C or C++ source (assembly, an object)", "a.c", ""},
    {"-c - a.c -o a.o", "an input beside the C or C++ source (assembly, an object)", "a.c", "a.o"},
    // Outputs spelled otherwise, and arguments kiln cannot see.
    {"-c a.c --output=obj/a.o", "", "a.c", "obj/a.o"},
    {"-c a.c --output obj/b.o", "", "a.c", "obj/b.o"},
    {"-c a.c -include-pch pre.pch -mllvm -x86-asm-syntax=intel -o a.o", "", "a.c", "a.o"},
    {"-c a.c @flags.rsp", "a response file (@FILE), whose arguments kiln does not read", "a.c", ""},
    {"-gcc-toolchain /opt/gcc -c a.c -o a.o", "", "a.c", "a.o"},
    // Outputs that are not regular files, which kiln must never read back or remove.
    {"-c a.c -o -", "output is not a regular file (-o - or a device)", "a.c", "-"},
    {"-c conftest.c -o /dev/null", "output is not a regular file (-o - or a device)", "conftest.c", "/dev/null"},
};

}  // namespace

TEST_CASE("the C wrapper takes compile-only single-source invocations and passes the rest through",
          "[capture][args][cc]") {
  for (const auto& row : kCcDecisions) {
    INFO("clang " << row.line);
    CcCall c = parse_cc_args(words(row.line));
    CHECK(passthrough_reason(c) == row.reason);
    CHECK(joined(c.sources) == row.sources);
    CHECK(c.output == row.output);
    CHECK(c.args == words(row.line));
  }
}

TEST_CASE("the C wrapper passes through an output path that is a directory", "[capture][args][cc]") {
  std::string dir = make_temp_dir("kiln-test-capture-args");
  CcCall c = parse_cc_args({"-c", "a.c", "-o", dir});
  std::string reason = passthrough_reason(c);
  remove_tree(dir);
  CHECK(reason == "output is not a regular file (-o - or a device)");
  // Once it is gone, the path is an ordinary new output.
  CHECK(passthrough_reason(c).empty());
}

namespace {

struct CcParse {
  std::string line;
  std::string opt_level;
  int debuginfo;
};

const CcParse kCcParses[] = {
    {kCmakeCompile, "2", 2},
    {"-c a.c", "0", 0},
    {"-c a.c -O", "1", 0},
    {"-c a.c -Os", "s", 0},
    {"-c a.c -Oz", "z", 0},
    {"-c a.c -O3 -O0", "0", 0},
    {"-c a.c -Ofast", "fast", 0},
    {"-c a.c -g", "0", 2},
    {"-c a.c -ggdb3", "0", 2},
    {"-c a.c -g1", "0", 1},
    {"-c a.c -gline-tables-only", "0", 1},
    {"-c a.c -g -g0", "0", 0},
    {"-c a.c -g -gno-column-info", "0", 2},  // -gno-* changes no level
    {"-c a.c -gno-column-info", "0", 0},
};

}  // namespace

TEST_CASE("the C wrapper reads optimization and debug information as clang does", "[capture][args][cc]") {
  for (const auto& row : kCcParses) {
    INFO("clang " << row.line);
    CcCall c = parse_cc_args(words(row.line));
    CHECK(c.opt_level == row.opt_level);
    CHECK(c.debuginfo == row.debuginfo);
  }
}

TEST_CASE("the C wrapper names a compile without -o as clang does", "[capture][args][cc]") {
  const std::pair<const char*, const char*> rows[] = {
      {"foo.c", "foo.o"},     {"src/dir/foo.cpp", "foo.o"}, {"/abs/a.b.cc", "a.b.o"},
      {"../up/x.c++", "x.o"}, {"noext", "noext.o"},
  };
  for (const auto& [source, object] : rows) {
    INFO(source);
    CHECK(default_output(source) == object);
  }
}

TEST_CASE("under RUSTC_BOOTSTRAP, kiln keeps a stable rustc's legacy symbol mangling unless the call names one",
          "[capture][args][rustc]") {
  const std::vector<std::string> base = {"--crate-name", "app", "src/main.rs", "--out-dir", "out"};
  const std::vector<std::string> legacy = {"-Zunstable-options", "-Csymbol-mangling-version=legacy"};
  RustcCall plain = parse_rustc_args(base);
  CHECK_FALSE(plain.mangling_given);
  CHECK(plain_mangling_args(plain, false) == legacy);
  CHECK(plain_mangling_args(plain, true).empty());  // a nightly's own default is v0, as with kiln
  for (const auto& given : std::vector<std::vector<std::string>>{{"-Csymbol-mangling-version=v0"},
                                                                 {"-C", "symbol-mangling-version=v0"},
                                                                 {"--codegen", "symbol-mangling-version=legacy"}}) {
    std::vector<std::string> args = base;
    args.insert(args.end(), given.begin(), given.end());
    RustcCall c = parse_rustc_args(args);
    CHECK(c.mangling_given);
    CHECK(plain_mangling_args(c, false).empty());
  }
}

TEST_CASE("a crate whose objects keep bitcode for a later LTO does not load kiln's plugin", "[capture][args][rustc]") {
  const std::vector<std::string> base = {"--crate-name", "lib", "src/lib.rs", "--out-dir", "out"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return plugin_obstacle(parse_rustc_args(args));
  };
  CHECK(with({}).empty());
  CHECK(with({"-C", "embed-bitcode=no"}).empty());
  CHECK(with({"-Clinker-plugin-lto=no"}).empty());
  CHECK(with({"-C", "opt-level=3", "-C", "lto=thin"}).empty());  // LTO proper: the plugin leaves it to LLVM
  CHECK(with({"-C", "embed-bitcode=yes"}) == "-C embed-bitcode=yes (bitcode for a later LTO)");
  CHECK(with({"-Cembed-bitcode"}) == "-C embed-bitcode (bitcode for a later LTO)");
  CHECK(with({"--codegen", "linker-plugin-lto"}) == "-C linker-plugin-lto (bitcode for a later LTO)");
  // An rlib as cargo builds it without LTO says embed-bitcode=no; without it, rustc
  // keeps bitcode in the objects (cargo's LTO profiles), and an emptied unit has none.
  CHECK(with({"--crate-type", "lib", "--emit=dep-info,metadata,link", "-C", "embed-bitcode=no"}).empty());
  CHECK(with({"--crate-type", "lib", "--emit=dep-info,metadata,link"}) ==
        "no -C embed-bitcode=no (an rlib's objects keep bitcode for a later LTO)");
  CHECK(with({"--crate-type", "lib", "--emit=dep-info,metadata"}).empty());  // no objects
  CHECK(with({"--crate-type", "lib", "-C", "lto=off"}).empty());             // a profile's lto = "off"
  // A crate rustc links, through kiln-linker: only where rustc's linker flavor does not
  // hang on the linker's name.
  CHECK(with({"--crate-type", "bin", "-C", "linker=clang-22"}).empty());
  CHECK(with({"--crate-type", "bin", "-C", "linker=/usr/bin/x86_64-linux-gnu-gcc"}).empty());
  CHECK(with({"--crate-type", "bin", "-C", "linker=ld.lld"}) ==
        "-C linker=ld.lld (rustc takes its flavor from its name, which kiln-linker's hides)");
  CHECK(with({"--crate-type", "bin", "-C", "linker=ld.lld", "-C", "linker-flavor=gnu-lld"}).empty());
  CHECK(with({"--crate-type", "bin", "--target", "x86_64-unknown-none"}) ==
        "--target x86_64-unknown-none without -C linker (its default linker may not be cc)");
  CHECK(with({"--crate-type", "bin", "--target", "x86_64-unknown-linux-gnu"}).empty());
  // An rlib alone is not linked: its linker does not matter.
  CHECK(with({"--crate-type", "lib", "-C", "embed-bitcode=no", "-C", "linker=ld.lld"}).empty());
  CHECK(with({"--crate-type", "lib", "--codegen=embed-bitcode=no"}).empty());
  CHECK(with({"--crate-type", "bin"}).empty());
  CHECK(with({"--crate-type", "cdylib", "--crate-type", "proc-macro"}).empty());  // linked by rustc
  // Archives the wrapper cannot take the carriers out of.
  CHECK(with({"--crate-type", "staticlib", "-C", "embed-bitcode=no"}) ==
        "an archive kiln cannot place stamp's objects in (crate types staticlib)");
  CHECK(with({"--crate-type", "cdylib,rlib", "-C", "embed-bitcode=no"}) ==
        "an archive kiln cannot place stamp's objects in (crate types cdylib,rlib)");
  CHECK(with({"--crate-type", "lib", "--crate-type", "staticlib", "-C", "embed-bitcode=no"}) ==
        "an archive kiln cannot place stamp's objects in (crate types lib,staticlib)");
  CHECK(with({"--crate-type", "rlib", "-C", "embed-bitcode=no", "-o", "elsewhere/libx.rlib"}) ==
        "an archive kiln cannot place stamp's objects in (crate types rlib; an explicit -o output)");
}

TEST_CASE("a rustc in a toolchain rustup installed tells its channel by the toolchain's name", "[capture][args][rustc]") {
  const std::string home = make_temp_dir("kiln-test-rustup");
  auto toolchain = [&](const std::string& name) {
    const std::string bin = home + "/toolchains/" + name + "/bin";
    REQUIRE(std::system(("mkdir -p '" + bin + "' && touch '" + bin + "/rustc'").c_str()) == 0);
    return bin + "/rustc";
  };
  CHECK(rustup_channel(toolchain("stable-x86_64-unknown-linux-gnu")) == "stable");
  CHECK(rustup_channel(toolchain("stable")) == "stable");
  CHECK(rustup_channel(toolchain("beta-2026-11-20-x86_64-unknown-linux-gnu")) == "beta");
  CHECK(rustup_channel(toolchain("nightly-2026-11-30-x86_64-unknown-linux-gnu")) == "nightly");
  CHECK(rustup_channel(toolchain("nightly")) == "nightly");
  CHECK(rustup_channel(toolchain("1.95.0-x86_64-unknown-linux-gnu")) == "stable");
  CHECK(rustup_channel(toolchain("1.95-x86_64-unknown-linux-gnu")) == "stable");
  CHECK(rustup_channel(toolchain("1.95.0")) == "stable");
  // Names that do not say: ask the rustc.
  CHECK(rustup_channel(toolchain("stablex")).empty());
  CHECK(rustup_channel(toolchain("1.96.0-beta.3-x86_64-unknown-linux-gnu")).empty());
  CHECK(rustup_channel(toolchain("1-x86_64-unknown-linux-gnu")).empty());
  CHECK(rustup_channel(toolchain("my-build")).empty());
  // A linked toolchain may be any rustc under any name.
  const std::string elsewhere = make_temp_dir("kiln-test-rustup-linked");
  REQUIRE(std::system(("mkdir -p '" + elsewhere + "/bin' && touch '" + elsewhere + "/bin/rustc' && ln -s '" + elsewhere +
                       "' '" + home + "/toolchains/stable-linked'").c_str()) == 0);
  CHECK(rustup_channel(home + "/toolchains/stable-linked/bin/rustc").empty());
  // Not in a toolchains directory, or not rustc.
  CHECK(rustup_channel("/usr/bin/rustc").empty());
  CHECK(rustup_channel(home + "/toolchains/stable/bin/cargo").empty());
  CHECK(rustup_channel("rustc").empty());
  remove_tree(home);
  remove_tree(elsewhere);
}

TEST_CASE("a build whose own RUSTC_BOOTSTRAP gives a crate nightly's defaults keeps them", "[capture][args][rustc]") {
  CHECK_FALSE(bootstrap_gives_nightly(nullptr, "regex"));
  CHECK(bootstrap_gives_nightly("1", "regex"));
  CHECK_FALSE(bootstrap_gives_nightly("0", "regex"));
  CHECK_FALSE(bootstrap_gives_nightly("-1", "regex"));  // "behave as stable", even on a nightly
  CHECK(bootstrap_gives_nightly("regex", "regex"));
  CHECK(bootstrap_gives_nightly("memchr,regex", "regex"));
  CHECK_FALSE(bootstrap_gives_nightly("memchr,regex_syntax", "regex"));
  CHECK_FALSE(bootstrap_gives_nightly("regex2", "regex"));
  CHECK_FALSE(bootstrap_gives_nightly("", "regex"));
  CHECK_FALSE(bootstrap_gives_nightly("memchr,", ""));
}

// The rustc wrapper acts on rustc's notice that it wrote its rlib while rustc still
// runs (capture_plugin.cpp): run_process hands it each line of the child's standard
// error as it comes, and passes every byte on unchanged.
TEST_CASE("run_process hands over the child's stderr line by line while the child runs", "[process]") {
  kiln_test::ScratchDir dir;
  const std::string flag = dir.path + "/seen", forwarded = dir.path + "/stderr";
  // The child waits (up to 5 s) for the file that the handler makes on its first line.
  const std::string script = "printf 'ready\\n' >&2; i=0; while [ ! -e '" + flag +
      "' ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done; "
      "if [ -e '" +
      flag + "' ]; then printf 'seen\\nlast' >&2; else printf 'too late\\n' >&2; fi";
  std::vector<std::string> lines;
  ProcessOptions o;
  o.stderr_line = [&](std::string_view line) {
    lines.emplace_back(line);
    if (lines.size() == 1) write_file_atomic(flag, "", Durability::kAtomic);
  };
  // kiln's own stderr goes to a file for the call, to see what was passed on.
  const int saved = ::dup(2);
  const int to = ::open(forwarded.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(saved >= 0);
  REQUIRE(to >= 0);
  ::dup2(to, 2);
  ::close(to);
  const ProcessResult r = run_process({"/bin/sh", "-c", script}, o);
  ::dup2(saved, 2);
  ::close(saved);
  CHECK(r.exit_code == 0);
  CHECK(lines == std::vector<std::string>{"ready\n", "seen\n", "last"});
  CHECK(read_file(forwarded) == "ready\nseen\nlast");
}
