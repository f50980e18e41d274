// The object that kiln's plugin inside rustc (lib/rustc_plugin.cpp) leaves in a codegen
// unit's object: stamp's relocatable object, carried as the bytes of one section of an
// otherwise empty object that rustc's LLVM wrote. No LLVM here: the wrapper reads it.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

constexpr const char* kKilnObjectSection = ".kiln.object";

// The bytes of `object`'s .kiln.object section: nullopt when `object` is an ELF object
// without one (a unit the plugin left to LLVM). Throws KilnError(kExitBadInput) naming
// `label` when `object` is not a 64-bit little-endian ELF file or its section table or
// that section lies outside it.
std::optional<std::string_view> kiln_object_payload(std::string_view object, const std::string& label);

}  // namespace kiln
