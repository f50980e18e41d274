// What a module asks of LLVM's code generator that stamp does not do, judged alike by
// both exporters (lib/flat_export.cpp through LLVM, direct_export.cpp from the
// bitcode), whose verdicts must be the same: a function that asks falls back to LLVM
// with the reason named here, where stamp would otherwise drop the request unseen.
#pragma once
#include <array>
#include <string_view>

namespace kiln {

// ssp, sspstrong, sspreq: LLVM's StackProtector pass gives the function a canary,
// stamp's frame has none. (Only functions with allocas get one, but at -O0 nearly
// every function has them: the attribute alone decides.)
inline constexpr const char* kReasonStackProtector = "stack protector";

// -fcf-protection: LLVM starts functions with endbr64 and writes a .note.gnu.property
// saying so; stamp's object has neither, and one object without the note turns IBT or
// SHSTK off for the whole program, so every function of such a module is LLVM's.
// Either flag's presence decides (LLVM's X86IndirectBranchTracking asks no more).
inline constexpr std::array<std::string_view, 2> kCfProtectionFlags = {"cf-protection-branch", "cf-protection-return"};
inline constexpr const char* kReasonCfProtection = "cf-protection";

// -pg, -mfentry and -finstrument-functions: calls to mcount, __fentry__ or
// __cyg_profile_func_* that LLVM's codegen pipeline inserts (EntryExitInstrumenter,
// the fentry call in the X86 back end), not the IR.
inline constexpr std::array<std::string_view, 5> kInstrumentedAttributes = {"instrument-function-entry",
                                                                            "instrument-function-entry-inlined",
                                                                            "instrument-function-exit",
                                                                            "instrument-function-exit-inlined",
                                                                            "fentry-call"};
inline constexpr const char* kReasonInstrumented = "instrumented entry or exit (-pg, -finstrument-functions)";

// -fpatchable-function-entry and patchable_function_entry(): nops before and after the
// entry and the __patchable_function_entries section that lists them.
inline constexpr std::array<std::string_view, 3> kPatchableAttributes = {"patchable-function-entry",
                                                                         "patchable-function-prefix",
                                                                         "patchable-function"};
inline constexpr const char* kReasonPatchable = "patchable function entry";

// An `align N` above the alignment of stamp's function sections (kStampFunctionAlign,
// stamp_object.h): __attribute__((aligned)), -falign-functions.
inline constexpr const char* kReasonAlignment = "alignment above 16";

// In llvm.used (__attribute__((retain)), #[used(linker)]): LLVM gives the function's
// section SHF_GNU_RETAIN, which keeps --gc-sections from dropping it. (stamp's global
// data carries the flag itself, StampData::retain; the flat file has no place for a
// function's.)
inline constexpr const char* kReasonRetained = "retained (llvm.used)";

}  // namespace kiln
