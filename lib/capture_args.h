// What the capture wrappers read from a compiler's command line, and the decision
// they take on it: take the invocation (capture its bitcode) or pass it through
// unchanged, and why. Pure functions of the arguments (the C wrapper's decision also
// looks at what its output path is), so the unit tests can check them row by row
// (tests/unit/test_capture_args.cpp).
#pragma once
#include <string>
#include <vector>

namespace kiln {

// ---- rustc (cargo's RUSTC_WRAPPER; lib/capture_rustc_args.cpp) ----------------------

// What cargo gives its RUSTC_WRAPPER, after the wrapper's own name: `RUSTC ARGS...`, or,
// for a workspace member where a RUSTC_WORKSPACE_WRAPPER is set (cargo clippy sets
// clippy-driver), `WORKSPACE_WRAPPER RUSTC ARGS...`.
struct CargoWrapperLine {
  std::string workspace_wrapper;  // "" when cargo named none
  std::string rustc;
  std::vector<std::string> args;  // rustc's
};
// The second form is told by its second word, a rustc (rustc_program_name): in the
// first, that word is rustc's first argument, an option, "-" or an @FILE, never a
// program. `line` must not be empty.
CargoWrapperLine read_wrapper_line(const std::vector<std::string>& line);
// Whether a program's file name is a rustc's: rustc, rustc.exe, rustc-VERSION, or
// PREFIX-rustc (a target's); not, say, clippy-driver or a script named rustc-wrap.sh.
bool rustc_program_name(const std::string& program);
// Why the line runs unchanged (the workspace wrapper then runs rustc as cargo asked,
// and kiln cannot put its own rustc in that place), or "" when it names no such wrapper.
std::string workspace_wrapper_reason(const CargoWrapperLine& line);

struct RustcCall {
  std::vector<std::string> args;  // without the rustc path
  std::string input;              // source file ("-" for stdin)
  size_t input_index = std::string::npos;
  std::string crate_name, out_dir, extra_filename, opt_level = "0";
  std::string emit;  // every --emit's kinds, joined by commas in their order (rustc takes them all)
  std::vector<std::string> crate_types;
  int debuginfo = 0;
  // A --print of a kind that makes rustc print and stop before compiling: any but
  // native-static-libs and link-args, which rustc prints during a normal link.
  bool print_query = false;
  bool version = false;
  bool argfile = false;         // an @FILE argument (cargo's when a command line is too long), not read
  bool mangling_given = false;  // -C symbol-mangling-version=...
};

RustcCall parse_rustc_args(const std::vector<std::string>& args);
// kiln's routes need RUSTC_BOOTSTRAP=1 for rustc's -Z options (-Zno-link, -Zllvm-plugins),
// and it makes a stable or beta rustc take nightly's defaults, among them v0 symbol
// mangling where the plain build has legacy. The options that keep the plain build's
// symbols: -Zunstable-options -Csymbol-mangling-version=legacy, unless the call names
// a mangling itself or the rustc is a nightly (`nightly`), whose own default is v0.
std::vector<std::string> plain_mangling_args(const RustcCall& c, bool nightly);
// Whether the build's own RUSTC_BOOTSTRAP (`value`, null when unset) already gives this
// crate nightly's defaults: "1", or a comma-separated list of crate names naming it.
// The plain build then mangles as a nightly does, and kiln leaves that alone.
bool bootstrap_gives_nightly(const char* value, const std::string& crate_name);
// Why a crate must not load kiln's plugin (--route plugin) and runs as plain rustc: its
// units' bitcode is kept in its objects for a later LTO (-C embed-bitcode, -C
// linker-plugin-lto, or an rlib without -C embed-bitcode=no, rustc's default), which an
// emptied unit would leave nothing; or it makes an archive whose members the wrapper
// cannot rewrite (a staticlib, an rlib beside another crate type or at an -o path), where
// the units would keep carrying stamp's objects; "" when it may. (A unit that rustc
// optimizes again with others, LTO proper, the plugin leaves to LLVM.)
std::string plugin_obstacle(const RustcCall& c);
// Why a crate that rustc links cannot link through kiln-linker (-C linker=kiln-linker,
// which puts stamp's objects in place first): a -C linker whose flavor rustc infers from
// its name (ld.lld, rust-lld, *-ld; not a C compiler driver), or a --target whose
// default linker may not be cc, with no -C linker-flavor given; "" when it can.
std::string linker_obstacle(const RustcCall& c);
// Why this invocation must run unchanged, or "" when kiln takes it, on `route`
// (CaptureOptions::route: build scripts and proc-macros pass through on the bitcode
// route only; on the plugin route rustc compiles them with the plugin like any crate).
std::string passthrough_reason(const RustcCall& c, const std::string& route = "bitcode");
// The arguments of the bitcode route's first step: the build's own, less the settings
// that conflict with it (-C lto, linker-plugin-lto, embed-bitcode), plus
// -Clinker-plugin-lto=yes -Clto=off, and -Zno-link when `stop_before_link` (rustc then
// leaves its units and an .rlink for a second rustc, -Zlink-only, to finish). Without
// it, rustc archives the bitcode units into the rlib itself. -C incremental stays:
// units rustc reuses come back as the same bitcode, whose objects kiln caches.
std::vector<std::string> bitcode_step_args(const std::vector<std::string>& args, bool stop_before_link = true);
// The arguments of the second step's rustc -Zlink-only (before the .rlink takes the
// input's place): the build's own, with LTO off as the first step compiled with it.
// With the build's -C lto, rustc would take every upstream crate's objects to be in
// the LTO module and leave them out of the link (std's too: the link fails).
std::vector<std::string> link_step_args(const std::vector<std::string>& args);
// Why the invocation needs the second rustc, or "" when it makes only an rlib in its
// --out-dir: then rustc archives the bitcode units itself and kiln replaces them in the
// archive by objects (lib/ar_archive.h), and no second rustc runs.
std::string rlib_rewrite_obstacle(const RustcCall& c);

// ---- clang (CC=kiln-cc, CXX=kiln-c++; lib/capture_cc.cpp) ----------------------------

struct CcCall {
  std::vector<std::string> args;
  std::vector<std::string> sources;
  size_t inputs = 0;  // every input: the sources, and assembly, objects, "-" (standard input), ...
  std::string output;
  bool compile_only = false, other_mode = false, already_bitcode = false, language_override = false;
  bool response_file = false;  // an @FILE argument, whose arguments kiln does not read
  std::string opt_level = "0";
  int debuginfo = 0;
};

CcCall parse_cc_args(const std::vector<std::string>& args);
// Why this invocation must run unchanged, or "" when kiln takes it. An output path
// that exists and is not a regular file (a device, a directory) is passed through.
std::string passthrough_reason(const CcCall& c);
// Where clang writes a compile-only object when there is no -o: the source's base
// name with its extension replaced by .o, in the current directory.
std::string default_output(const std::string& source);

}  // namespace kiln
