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

// A module as a stamp service keeps it: parsed, verified and planned (see StampPlan).
struct StampModule {
  ParsedModule module;
  StampPlan plan;
};

// Parses, verifies (IR and target) and plans the module; records e.parse and
// e.flat_export. Throws KilnError naming the module for bad input.
StampModule prepare_stamp_module(LlvmBackend& llvm, const ReplayModule& m, ModuleEmission& e);

// Counts the module's functions and instructions, all and stamp's, into e.
void count_stamp_functions(const StampPlan& plan, ModuleEmission& e);

// Emits LLVM's half for the functions stamp left (none when the plan is whole),
// timing it as e.fallback, and records the object's hash and sizes: stamp's object
// and LLVM's, hashed together (combining them, ld.lld -r, is not part of a round).
void finish_stamp_emission(LlvmBackend& llvm, const StampModule& sm, const std::string& id,
                           const std::string& stamp_object, ModuleEmission& e);

}  // namespace kiln
