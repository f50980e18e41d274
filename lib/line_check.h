// How far stamp's DWARF agrees with LLVM's: `kiln-emit --check-lines` over a file or a
// corpus. For each module, stamp's object (its functions only, as the stamp back end
// writes them) and llvm -O0's object for the whole module are read back with LLVM's
// DWARF reader, and:
//   - stamp's object must pass LLVM's DWARF verifier (llvm-dwarfdump --verify's);
//   - for each flat instruction with a debug location and code (an IR instruction
//     gives one, rarely a few), the row stamp's line table gives its first code byte
//     must name the location's own file and line ("exact");
//   - and that file and line must be among the rows llvm -O0's line table gives the
//     same function ("as llvm"): where stamp says a byte comes from, LLVM says some
//     byte of that function comes from too. LLVM's object does not say which of its
//     bytes an IR instruction became, so this is the nearest exact comparison.
//   - and the variables of each function agree with llvm -O0's (variable_check.h).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "variable_check.h"

namespace kiln {

struct LineAgreement {
  uint64_t functions = 0;       // stamp functions with a subprogram
  uint64_t instructions = 0;    // their flat instructions with a location and code
  uint64_t exact = 0;           // whose row names their own file and line
  uint64_t as_llvm = 0;         // whose file and line llvm's rows for the function name too
  uint64_t llvm_functions = 0;  // of `functions`, those llvm's object has rows for
  std::string verify_errors;    // the DWARF verifier's report on stamp's object (empty: none)
  std::string first_difference;  // the first instruction that is not exact, described
  bool has_debug_info = false;   // the module carries debug information for stamp
  VariableAgreement variables;
};

// Throws KilnError naming `label` for bitcode LLVM cannot read.
LineAgreement check_lines(std::string_view bitcode, const std::string& label);

// kiln-emit --check-lines: every module of `input` (a file, or a corpus when `corpus`);
// a line per module whose stamp object fails the verifier or is not exact (with
// `json`, a JSON object per module), then the totals. Returns kExitFailed when any
// module fails the verifier or has an instruction that is not exact.
int run_line_check(const std::string& input, bool corpus, bool json);

}  // namespace kiln
