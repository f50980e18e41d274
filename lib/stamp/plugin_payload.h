// The object that kiln's plugin inside rustc (lib/rustc_plugin.cpp) leaves in a codegen
// unit's object: stamp's relocatable object, carried as the bytes of one section of an
// otherwise empty object that rustc's LLVM wrote. No LLVM here: the wrapper reads it.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fs.h"

namespace kiln {

constexpr const char* kKilnObjectSection = ".kiln.object";

// The bytes of `object`'s .kiln.object section: nullopt when `object` is an ELF object
// without one (a unit the plugin left to LLVM). Throws KilnError(kExitBadInput) naming
// `label` when `object` is not a 64-bit little-endian ELF file or its section table or
// that section lies outside it.
std::optional<std::string_view> kiln_object_payload(std::string_view object, const std::string& label);

// The writes that make `unit`, an object that carries `payload` (a view into it, from
// kiln_object_payload), that object itself where it lies: an ELF header at the unit's
// start naming the payload's section table, and that table with each section's offset
// moved by the payload's place in the unit. What lies between is left and never
// referred to, so the unit keeps its size, and an archive that holds it keeps every
// member where it was: no byte of the payload is copied. Empty when that cannot be
// done: the payload does not start on an 8-byte boundary past the unit's own ELF
// header, so that its tables would lose their alignment. Throws KilnError
// (kExitBadInput) naming `label` when the payload is not a 64-bit little-endian ELF
// object or its section table lies outside it.
std::vector<FilePatch> payload_in_place(std::string_view unit, std::string_view payload, const std::string& label);

}  // namespace kiln
