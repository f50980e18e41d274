// What the rustc wrapper's routes share: lib/capture_rustc.cpp (the bitcode and native
// routes, which need LLVM; kiln-capture runs them) and lib/capture_plugin.cpp (the
// plugin route and kiln-linker, which do not; kiln-rustc-wrapper runs them), with the
// command line's reading in lib/capture_rustc_args.cpp.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "capture.h"
#include "capture_args.h"
#include "process.h"

namespace kiln {

// The wrapper process's own: its start (exec, loading the program: its CPU time as
// main begins), and the settings that give the compilers it runs the build's own
// TMPDIR (this wrapper's points into the capture's directory).
extern double g_startup_seconds;
extern ProcessOptions g_children;

// One call of the rustc wrapper: `WRAPPER RUSTC ARGS...`.
struct RustcWrapperCall {
  WrapperSettings settings;
  std::string rustc, id;
  RustcCall call;
};
// Reads the call. One that is not a crate to capture (a version or --print query, a
// build script, a proc-macro, ...) is recorded and runs rustc in this process's place:
// this returns only for a crate.
RustcWrapperCall start_rustc_wrapper(int argc, char** argv);

// The setting a codegen option at position i gives ("-C KEY=V", "--codegen KEY=V" or
// "-CKEY=V"), or "" for any other argument; `separate`: it took the next argument too.
std::string codegen_setting(const std::vector<std::string>& args, size_t i, bool& separate);
// The codegen unit named by a file or archive member name PREFIX.CGU.SUFFIX (SUFFIX
// .rcgu.o or .rcgu.bc), or "" when the name is not one, or names a unit's unoptimized
// copy (.no-opt).
std::string unit_cgu(const std::string& name, const std::string& prefix, const std::string& suffix);
// The release channel, "stable", "beta" or "nightly", of the rustup toolchain that
// holds `rustc` (RUSTUP_HOME/toolchains/NAME/bin/rustc), from rustup's NAME for it
// (CHANNEL[-DATE][-HOST], CHANNEL a channel or a release number); "" for any other
// rustc and for a linked toolchain (a link there, any name), which must be asked.
std::string rustup_channel(const std::string& rustc);
// ARGS plus what makes a call through RUSTC_BOOTSTRAP=1 mangle its symbols as the plain
// build does (nothing for a nightly rustc: rustup_channel, or else asked once and
// remembered in CORPUS/rustc-releases.txt).
std::vector<std::string> with_plain_mangling(const WrapperSettings& s, const std::string& rustc, const RustcCall& c,
                                             std::vector<std::string> args);
// Runs RUSTC ARGS with g_children's settings plus `env`; returns its exit status.
// `stderr_line`: see ProcessOptions::stderr_line.
int run_child(const std::string& rustc, std::vector<std::string> args, std::vector<std::string> env = {},
              std::function<void(std::string_view)> stderr_line = {});
// The wrapper's end: `status` returned, or, where it is that of the last rustc that a
// signal ended, the same signal raised (SIGKILL by the OOM killer, SIGSEGV).
int end_as_rustc_did(int status);

// The plugin route (capture_plugin.cpp).
int capture_in_rustc(const WrapperSettings& s, const std::string& rustc, const RustcCall& c, const std::string& id);
// kiln-rustc-wrapper's body: start_rustc_wrapper, then the plugin route.
int plugin_wrapper_main(int argc, char** argv);

}  // namespace kiln
