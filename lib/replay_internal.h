// What replay.cpp and replay_gpu.cpp share, and no one else needs: how a stamp service
// prepares a module once and turns stamp's object into a module's emission.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "backend_llvm.h"
#include "backend_stamp.h"
#include "replay.h"

namespace llvm {
class Module;
}

namespace kiln {

class LlvmBackend;

// Sum of the sizes of an ELF64 object's .text* sections (read from its headers).
uint64_t elf_text_bytes(const std::string& object);

// A module as a stamp service keeps it: planned (see StampPlan) from the direct
// reader's output when its route is taken (then no LLVM module is kept), else parsed,
// verified and planned by LLVM.
struct StampModule {
  bool prepared = false;
  bool direct = false;  // the plan is the direct reader's: whole, no LLVM module
  ParsedModule module;
  StampPlan plan;
  std::string source_name;
};

// Reads the module with the direct reader (unless --reader llvm) and with LLVM (parse,
// verify, plan: the comparison the report gives, and the route when the reader's is
// not taken); records e.bitcode_read, e.direct_export, e.parse and e.flat_export.
// Throws KilnError naming the module for bad input.
StampModule prepare_stamp_module(LlvmBackend& llvm, const ReplayModule& m, ModuleEmission& e);

// Counts the module's functions and instructions, all and stamp's, into e.
void count_stamp_functions(const StampPlan& plan, ModuleEmission& e);

// Emits LLVM's half for the functions stamp left (none when the plan is whole),
// timing it as e.fallback, and records the object's hash and sizes: stamp's object
// and LLVM's, hashed together (combining them, ld.lld -r, is not part of a round).
void finish_stamp_emission(LlvmBackend& llvm, const StampModule& sm, const std::string& id,
                           const std::string& stamp_object, ModuleEmission& e);
// Its two halves, for the GPU service, which emits LLVM's half while the GPU runs stamp's.
std::string emit_stamp_rest(LlvmBackend& llvm, const StampModule& sm, const std::string& id, ModuleEmission& e);
void record_stamp_object(const std::string& stamp_object, const std::string& rest, ModuleEmission& e);

}  // namespace kiln
