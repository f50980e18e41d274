// The .eh_frame that the stamp object writer (stamp_object.cpp) builds, exposed on its
// own so that tests can check its bytes directly.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

// .eh_frame for functions of the given code sizes, none with a personality: one CIE,
// then one FDE per function in order (the fixed frame shape of stamp_object.h).
// pc_begin_offsets gets, per function, the offset of its FDE's pc_begin field, which
// the writer relocates (R_X86_64_PC32 against the function's section).
std::string build_stamp_eh_frame(const std::vector<uint32_t>& code_sizes, std::vector<uint32_t>& pc_begin_offsets);

}  // namespace kiln
