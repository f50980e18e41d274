// What replay.cpp and replay_gpu.cpp share, and no one else needs.
#pragma once
#include <cstdint>
#include <string>

namespace kiln {

// Sum of the sizes of an ELF64 object's .text* sections (read from its headers).
uint64_t elf_text_bytes(const std::string& object);

}  // namespace kiln
