// kiln-capture: runs a real build with kiln installed as the compiler wrapper (cargo's
// RUSTC_WRAPPER; CC and CXX for make, ninja and cmake), keeps the frontend bitcode of
// every module in a corpus and, with --backend llvm or cmd:..., writes the objects
// with that back end so that the build links and runs on it.
#pragma once
#include <string>
#include <vector>

#include "process.h"

namespace kiln {

// Environment that the driver hands to the wrapper processes it installs.
constexpr const char* kEnvRole = "KILN_CAPTURE_ROLE";  // rustc (cc/c++ go by argv[0])
constexpr const char* kEnvCorpus = "KILN_CAPTURE_CORPUS";
constexpr const char* kEnvBackend = "KILN_CAPTURE_BACKEND";    // native | llvm | cmd:...
constexpr const char* kEnvProfile = "KILN_CAPTURE_PROFILE";    // fast | balanced | release
constexpr const char* kEnvFallback = "KILN_CAPTURE_FALLBACK";  // 1: fall back to the native compiler
constexpr const char* kEnvRoute = "KILN_CAPTURE_ROUTE";        // bitcode | plugin (kiln-capture --route)
constexpr const char* kEnvRustcPlugin = "KILN_RUSTC_PLUGIN";   // the plugin rustc loads on the plugin route
constexpr const char* kEnvRealLinker = "KILN_REAL_LINKER";     // kiln-linker's linker (rustc's -C linker, else cc)
constexpr const char* kEnvLinkReport = "KILN_LINK_REPORT";     // where kiln-linker writes what it found
constexpr const char* kEnvRealCc = "KILN_CAPTURE_REAL_CC";
constexpr const char* kEnvRealCxx = "KILN_CAPTURE_REAL_CXX";
constexpr const char* kEnvTmpdir = "KILN_CAPTURE_TMPDIR";  // the capture's temporary directory
// Debugging: a file that gets "max N tokens M" per rustc emission loop (kiln-capture(1)).
constexpr const char* kEnvTraceEmitThreads = "KILN_TRACE_EMIT_THREADS";

struct CaptureOptions {
  std::string corpus_dir;
  std::string backend = "native";
  std::string profile;  // empty: leave the build's own settings, code generator at "fast"
  bool fallback = false;
  bool verify = false;  // LLVM's IR verifier on the bitcode the compilers write (off: they wrote it just now)
  std::string device;   // --device cuda|cpu: stamp's stages in one service for the build (capture_service.h)
  // bitcode: rustc writes bitcode, which the corpus keeps and the back end emits.
  // plugin: stamp runs inside rustc (lib/rustc_plugin.cpp); no bitcode, rustc's crates only.
  std::string route = "bitcode";
  std::vector<std::string> command;
};

// kiln's plugin inside rustc: $KILN_RUSTC_PLUGIN, else kiln-rustc-plugin.so in the lib/
// directory beside the one this program is in (the build tree's and the installed
// layout). Throws KilnError(kExitMissingTool) when there is none.
std::string find_rustc_plugin();

// kiln-capture's half that links LLVM, beside it: the bitcode route's compiler wrappers
// (cargo's RUSTC_WRAPPER there, kiln-cc and kiln-c++) and `kiln-capture add`.
constexpr const char* kCaptureLlvmName = "kiln-capture-llvm";
// Its path; throws KilnError(kExitMissingTool) when it is not there.
std::string find_capture_llvm();
// "SYSNAME RELEASE MACHINE" of this machine, for a corpus's manifest.
std::string host_description();

// Runs the build and returns its exit status unchanged (capture_driver.cpp, no LLVM).
int run_capture(const CaptureOptions& options);
// Imports loose bitcode files; returns how many were new.
size_t capture_add(const std::string& corpus_dir, const std::vector<std::string>& files);

// The wrapper entry points (argv as the wrapper received it).
int rustc_wrapper_main(int argc, char** argv);
// The linker that rustc runs on the plugin route (-Clinker=TMPDIR/kiln-linker, a link
// to kiln-capture): puts stamp's objects in their units' places, then runs the real
// linker ($KILN_REAL_LINKER, else cc) with the same arguments. Not named like a linker
// whose kind rustc would infer from its name (ld, gcc, clang, ...): rustc then uses the
// target's own kind, a C compiler driver, as it does for cc.
constexpr const char* kLinkerWrapperName = "kiln-linker";
// The file in the capture's temporary directory where the first rustc wrapper of a
// build writes the path of the rustc that cargo asked it to run: the driver asks that
// binary its version after the build (the manifest's "rustc").
constexpr const char* kBuildRustcFile = "build-rustc";
int linker_wrapper_main(int argc, char** argv);
int cc_wrapper_main(int argc, char** argv, bool cxx);

// Shared by both wrappers.
struct WrapperSettings {
  std::string corpus_dir, backend, profile;
  std::string route = "bitcode", plugin;  // CaptureOptions::route; the plugin's path on that route
  bool fallback = false;
  static WrapperSettings from_environment();
};
std::string new_invocation_id(const std::vector<std::string>& args);
std::string args_hash(const std::vector<std::string>& args);
std::string current_directory();
// Appends one line to the corpus's invocations.jsonl.
// `phases`: where the time went (InvocationRecord::phases); the record's start is
// taken as now less `seconds` less the phases' "startup", if any.
using Phases = std::vector<std::pair<std::string, double>>;
void record_invocation(const WrapperSettings& s, const std::string& tool, const std::string& id,
                       const std::string& action, const std::string& reason, const std::vector<std::string>& args,
                       int modules, double seconds, const Phases& phases = {});
// Points this wrapper's TMPDIR at the capture's temporary directory, so that the back
// ends' scratch directories (kiln-cmd-*, kiln-combine-*) go with it even when the build
// is killed; returns the settings that give the compilers it runs the build's own TMPDIR.
ProcessOptions use_capture_tmpdir();
// The object cache's key (Corpus::cached_object) for a module's bitcode blob id.
std::string object_cache_key(const std::string& bitcode_id, const std::string& backend, const std::string& profile);
// Emits bitcode with the configured back end (not native), or takes the object from the
// corpus's object cache (llvm and stamp only); records the receipt; returns the object.
std::string emit_for_capture(const WrapperSettings& s, const std::string& bytes, const std::string& id,
                             const std::string& label);

}  // namespace kiln
