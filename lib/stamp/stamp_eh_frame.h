// The .eh_frame that the stamp object writer (stamp_object.cpp) builds, exposed on its
// own so that tests can check its bytes directly.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

// Whether a function's code begins with the biased frame's prologue (push rbp; lea rbp,
// [rsp - kFrameBias]) rather than the plain one (push rbp; mov rbp, rsp): the frame
// shapes of stamp_object.h, told apart where the writer needs their CFI.
bool stamp_frame_biased(const uint8_t* code, uint32_t size);

// .eh_frame for functions of the given code sizes and frame shapes (biased: per
// function, stamp_frame_biased), none with a personality: one CIE, then one FDE per
// function in order. pc_begin_offsets gets, per function, the offset of its FDE's
// pc_begin field, which the writer relocates (R_X86_64_PC32 against the function's
// section).
std::string build_stamp_eh_frame(const std::vector<uint32_t>& code_sizes, const std::vector<uint8_t>& biased,
                                 std::vector<uint32_t>& pc_begin_offsets);

}  // namespace kiln
