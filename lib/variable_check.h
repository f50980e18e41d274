// How far the variables in stamp's DWARF agree with llvm -O0's (part of kiln-emit
// --check-lines, lib/line_check.h): per function, each formal parameter and variable
// as a debugger finds it, by the scopes it is in (lexical blocks, inlined calls by
// callee), its kind, name and declaration line, with its type written out three levels
// deep (tags, names, sizes, members and their offsets, variants and their discriminant
// values, enumerators, array counts) and whether it has a location. Where each lives
// in the frame differs between the two back ends and is not compared: the debugger
// tests run the programs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class DWARFContext;
}

namespace kiln {

struct VariableAgreement {
  uint64_t llvm = 0;   // variables llvm -O0's DWARF gives the functions compared
  uint64_t stamp = 0;  // variables stamp's gives them
  uint64_t same = 0;   // stamp's that are one of llvm's, scopes, type and location presence included
  std::string first_difference;
};

// Compares the subprograms named by `linkage_names` (their DW_AT_linkage_name, else
// DW_AT_name) in the two objects' DWARF; a function llvm's object has no subprogram
// for is passed over.
void compare_variables(llvm::DWARFContext& stamp, llvm::DWARFContext& reference,
                       const std::vector<std::string>& linkage_names, VariableAgreement& r);

}  // namespace kiln
