// The object contract: what a module's object promises the final link, whichever back
// end emitted it. A back end's object (stamp's combined one, a cmd: tool's) keeps the
// contract of LLVM's object for the same module when it defines the same non-local
// symbols, each with the same binding, visibility, symbol type and kind of section
// (text, data, rodata, bss, tls: by section type and flags, since section names and
// indexes differ between writers); and leaves no symbol named with the ".kiln." suffix
// of stamp's split (lib/fallback.h) behind. References are not part of it: stamp may
// call memcpy where LLVM copies inline, or keep a call to a panic function in a block
// LLVM drops as unreachable; the final link resolves those as any other reference.
// `kiln-emit --check-contract` checks it over a file or a corpus.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "backend.h"

namespace kiln {

struct ContractDifference {
  enum Kind {
    kMissing,      // the reference defines the symbol (non-local), the candidate does not
    kExtra,        // the candidate defines a non-local symbol the reference does not
    kBinding,      // GLOBAL, WEAK, GNU_UNIQUE
    kVisibility,   // default, internal, hidden, protected
    kType,         // NOTYPE, OBJECT, FUNC, TLS, ...
    kSectionKind,  // text, data, rodata, bss, tls, other; or absolute, common
    kKilnName,     // a candidate symbol, local or not, named NAME.kiln.TAG
  };
  Kind kind;
  std::string symbol;
  // What each object says of the symbol: the differing property (kBinding ... kSectionKind),
  // or the whole symbol ("GLOBAL FUNC default text", "undefined", "absent").
  std::string reference, candidate;
};

const char* contract_kind_name(ContractDifference::Kind kind);

// The differences between the candidate object and the reference (LLVM's), in symbol
// name order within each kind. `label` names the module in errors: bytes that are not
// an x86-64 ELF64 object throw KilnError(kExitBadInput).
std::vector<ContractDifference> compare_contract(std::string_view reference, std::string_view candidate,
                                                 const std::string& label = "object");

// One line for a difference: "SYMBOL: KIND: llvm REFERENCE, BACKEND CANDIDATE".
std::string render_difference(const ContractDifference& d, const std::string& candidate_name);

// The module `bitcode` emitted by `backend_spec` and by llvm, compared.
std::vector<ContractDifference> check_module_contract(std::string_view bitcode, const std::string& label,
                                                      const std::string& backend_spec, Profile profile);

// kiln-emit --check-contract: the file, or every module of the corpus (`jobs` worker
// processes), emitted both ways in worker processes and compared; a line per
// difference, and for a corpus per module that failed, then a summary for a corpus.
// Returns kExitFailed when a module differs (or, in a corpus, fails); a single file
// that cannot be emitted throws as kiln-emit does.
int run_contract_check(const std::string& input, bool corpus, const std::string& backend_spec, Profile profile,
                       unsigned jobs);

// kiln-emit --compare-contract REFERENCE CANDIDATE: two builds' objects, each an ELF
// object or an ar archive (an rlib, whose object members are paired by name), the
// candidate's contract against the reference's. A line per difference and per member
// that has no pair, then a summary; kExitFailed when any.
int run_contract_compare(const std::string& reference, const std::string& candidate);

}  // namespace kiln
