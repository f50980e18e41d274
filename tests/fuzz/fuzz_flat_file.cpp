// libFuzzer target: flat IR files (kiln-flat(5)), what the GPU machine reads without
// LLVM. A file either is refused with a KilnError or passes the module check, and a
// module that passes is emitted by stamp's CPU executor without a crash and without an
// internal error (exit 70: the check let through what the emitter cannot take, as two
// functions of one name once did).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "error.h"
#include "flat_file.h"

using namespace kiln;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  FlatModuleData flat;
  std::string source;
  try {
    flat = read_flat_file(bytes, "fuzz.flat", &source);
  } catch (const KilnError&) {
    return 0;
  }
  try {
    emit_flat_module(flat, source);
  } catch (const KilnError& e) {
    if (e.code() != kExitInternal) return 0;
    std::fprintf(stderr, "internal error on a checked module: %s\n", e.what());
    std::abort();
  }
  return 0;
}
