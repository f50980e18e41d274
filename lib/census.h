// kiln-census: facts about a module and its verdict under each back end's contract,
// with every reason found (not only the first).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "flat_export.h"

namespace llvm {
class Module;
}

namespace kiln {

constexpr int kCensusSchemaVersion = 2;  // 2: the reader record

struct ModuleFacts {
  uint64_t bytes = 0;
  std::string triple;
  uint64_t functions_defined = 0, functions_declared = 0, blocks = 0, instructions = 0;
  std::map<std::string, uint64_t> opcodes, intrinsics, calling_conventions;
  uint64_t globals = 0, globals_with_initializer = 0, aliases = 0, comdats = 0;
  uint64_t tls_globals = 0, inline_asm_calls = 0, module_asm_bytes = 0;
  uint64_t invokes = 0, landingpads = 0, personalities = 0;
  uint64_t vector_instructions = 0, atomic_instructions = 0;
  bool debug_info = false;
  uint64_t instructions_with_debug_location = 0, debug_records = 0;
};

struct Verdict {
  std::string backend;
  std::string verdict;               // eligible | partial | rejected
  std::vector<std::string> reasons;  // empty when eligible
  // stamp decides per function: how many it compiles and how many fall back to llvm.
  uint64_t functions_stamp = 0, functions_fallback = 0, instructions_stamp = 0, instructions_fallback = 0;
};

// What the direct bitcode reader (stamp/direct_export.h) makes of the module, which
// decides whether the stamp back end needs LLVM for it at all.
struct ReaderRecord {
  bool read = false;    // the reader read the module and every one of its functions
  bool direct = false;  // read, and whole: stamp's back end emits it without LLVM
  // Why not read, or read but not direct; empty when direct. The module's decline
  // ("reader: ..."), the first declined function's "reader: ..." reason, the globals'
  // reason, or "functions fall back to llvm".
  std::string reason;
  // Defined functions the reader could not decode; all of them when it declined the
  // module (or could not read it), so that functions_defined minus this were read.
  uint64_t functions_declined = 0;
};

struct ModuleCensus {
  std::string id, label, crate;
  ModuleFacts facts;
  std::vector<Verdict> verdicts;
  ReaderRecord reader;
  // stamp's verdict on every defined function; read back from a record, only those
  // that fall back (a record lists no others: the stamp verdict's counts cover the rest).
  std::vector<FunctionVerdict> function_verdicts;
  // Under KILN_SELECTION (kiln-selection(5)): which file, its digest for this module,
  // and how many functions it selected, for census_explain. Not in to_json().
  std::string selection;
  std::string to_json() const;
};

// The census that to_json() wrote, read back: to_json() of the result gives the same
// bytes. A record that is not one (not JSON, a field missing or of another type,
// another schema version) is a KilnError naming `where`.
ModuleCensus census_from_json(const std::string& json, const std::string& where);

ModuleFacts collect_facts(const llvm::Module& module);
// Census of raw bytes: reading or verifying failures become `llvm` reasons; the
// reader record comes from export_direct on the same bytes.
ModuleCensus census_of_bytes(const std::string& bytes, const std::string& id, const std::string& label);

// The summary of many modules' census records, as a table (text) or JSON.
std::string census_summary_table(const std::vector<ModuleCensus>& all);
std::string census_summary_json(const std::vector<ModuleCensus>& all);
std::string census_explain(const ModuleCensus& c);

}  // namespace kiln
