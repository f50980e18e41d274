// Back ends turn one module's bitcode into an x86-64 ELF relocatable object.
// A Backend instance is used by one thread at a time (replay keeps one per worker).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

enum class Profile { fast, balanced, release };
Profile parse_profile(const std::string& name);  // throws KilnError(kExitUsage)
const char* profile_name(Profile p);

struct StageTimes {
  double read = 0, parse = 0, verify = 0, codegen = 0, write = 0;
  // stamp only: the direct reader's decoding of the bit stream (bitcode_ir.h), whose
  // export is counted in flat_export; when its route is not taken (the module goes
  // through LLVM's parser), the whole attempt, read and export.
  double bitcode_read = 0;
  // stamp only: exporting LLVM IR to flat arrays, LLVM emitting the functions stamp
  // left to it (with the globals), and combining the two objects.
  double flat_export = 0, fallback = 0, combine = 0;
  double total() const {
    return read + parse + verify + codegen + write + bitcode_read + flat_export + fallback + combine;
  }
};

// What a back end emitted, counted per function: the receipt records it.
struct EmitCounts {
  uint64_t functions_stamp = 0, functions_llvm = 0;
  uint64_t instructions_stamp = 0, instructions_llvm = 0;
};

// How the stamp back end read the module: "direct" (the direct reader, no LLVM at all)
// or "llvm" (LLVM's parser), and why not direct. Empty for the other back ends.
struct ReaderRoute {
  std::string route, reason;
};

// Where stamp's stages ran when a stamp service was given (KILN_STAMP_SERVICE, set by
// kiln-capture --device): the service's executor and batch, or, when the service could
// not be reached or failed, `lost` says why and the stages ran here on the CPU. `check`
// (KILN_SERVICE_CHECK=1): "equal" or "differs", the service's output against the CPU
// executor's run here. Empty without a service.
struct ServiceRoute {
  std::string device, lost, check;
  uint64_t batch = 0;
  uint32_t batch_modules = 0;
};

struct EmitResult {
  std::string object;  // the ELF bytes
  StageTimes stages;
  EmitCounts counts;
  ReaderRoute reader;
  // kiln-capture's object cache: "hit" (the object came from the cache, nothing was
  // emitted), "miss" (emitted, then stored), or empty (no cache: the other tools, cmd:).
  std::string cache;
  // kiln-selection(5): the selection's digest_for this module when one applied (stamp,
  // cmd:), and the KILN_TEST_FAULT names stamp applied to its functions (tests only).
  std::string selection;
  std::vector<std::string> test_faults;
  ServiceRoute service;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // `label` names the input in error messages (a path or a module id).
  virtual EmitResult emit(std::string_view bitcode, const std::string& label) = 0;
};

// How a back end treats its input. verify: LLVM's IR verifier runs on every module LLVM
// parses, since a user's file can be invalid IR that crashes the code generator.
// kiln-capture turns it off for the bitcode its compilers have just written (as rustc
// and clang do not verify their own output either; its --verify turns it back on), and
// kiln-emit's --no-verify does for a user's file. The tools say so through KILN_VERIFY
// ("0" off), so that capture's wrappers and the worker processes follow.
struct BackendOptions {
  bool verify = true;
  static BackendOptions from_environment();  // KILN_VERIFY; throws KilnError(kExitUsage) for a value not 0 or 1
};
void set_verify_choice(bool verify);  // sets KILN_VERIFY

// spec: "llvm", "stamp", or "cmd:TEMPLATE" (TEMPLATE runs through /bin/sh with {in}
// and {out} replaced by file paths). Throws KilnError(kExitUsage) for an unknown back end.
// Which parser the stamp back end reads bitcode with: the direct reader (the default;
// a module it declines, or one not wholly stamp's, goes through LLVM's parser), or
// LLVM's parser always. The tools' --reader option sets KILN_READER, which the back
// end reads, so that capture's compiler wrappers and replay's workers follow it.
enum class ReaderChoice { direct, llvm };
ReaderChoice reader_choice();                     // from KILN_READER: "direct" (or unset) or "llvm"
void set_reader_choice(const std::string& name);  // sets KILN_READER; throws KilnError(kExitUsage) for another name

// Checks a back end's name or cmd: template, and the environment it would read
// (KILN_VERIFY, KILN_READER, KILN_CMD_TIMEOUT, KILN_SELECTION), without making it:
// what make_backend does first, and kiln-capture before a build (it links no LLVM).
// Throws KilnError(kExitUsage).
void check_backend_spec(const std::string& spec);
std::unique_ptr<Backend> make_backend(const std::string& spec, Profile profile, const BackendOptions& options);
std::unique_ptr<Backend> make_backend(const std::string& spec, Profile profile);  // options from the environment

// Checks that bytes form an x86-64 ELF relocatable object; empty when fine.
std::string object_problem(std::string_view object);

}  // namespace kiln
