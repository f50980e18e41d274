// LLVM's exporter's half of the debug information stamp carries (flat_debug.h): a
// function's subprogram, its instructions' locations, lexical blocks and inlined calls,
// and, at full emission, its variables and the types they reach, interned in
// flat_debug.h's order so that the direct reader's flat files stay byte-identical.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "flat_debug.h"
#include "pointer_index.h"

namespace llvm {
class DIFile;
class DILocation;
class DIScope;
class DIGlobalVariable;
class DISubprogram;
class Function;
class GlobalVariable;
class Instruction;
class Metadata;
}  // namespace llvm

namespace kiln {

class FlatDebugExporter {
 public:
  explicit FlatDebugExporter(FlatDebugInfo& d) : d_(d) {}

  // Commits flat function `fn` (llvm function `f`): `locations` has one entry per flat
  // instruction (null: none), `first_inst` is the flat index of its first instruction,
  // and `flat_index` maps each of its LLVM instructions to its flat instruction.
  void function(const llvm::Function& f, uint32_t fn, const std::vector<const llvm::DILocation*>& locations,
                const PointerIndex<llvm::Instruction>& flat_index);

  // The DIGlobalVariables flat_debug.h keeps for global `g` (FlatDebugGlobal), in
  // attachment order: none unless at full emission.
  std::vector<const llvm::DIGlobalVariable*> kept_globals(const llvm::GlobalVariable& g) const;
  // Commits one of them, for the global whose flat symbol is `symbol`.
  void global(const llvm::DIGlobalVariable* var, uint32_t symbol);
  // A static inside a function: 1 + the flat function of its subprogram, 0 for none.
  uint32_t function_of(const llvm::DIGlobalVariable* var) const;

 private:
  FlatDebugInfo& d_;
  // Per DI type node: 1 + its index in d_.types.
  std::unordered_map<const llvm::Metadata*, uint32_t> type_index_;
  std::vector<const llvm::Metadata*> type_nodes_;
  // Per node, 1 + its index in d_'s table (0: none): files, scopes (chains interned
  // from that node), inlined callees (d_.inlined), lexical blocks.
  PointerIndex<llvm::DIFile> file_memo_;
  PointerIndex<llvm::DIScope> scope_memo_, block_memo_;
  PointerIndex<llvm::DISubprogram> callee_memo_;
  // Per (callee, inlinedAt): 1 + the site's index in d_.inline_sites.
  struct SiteHash {
    size_t operator()(const std::pair<const llvm::DISubprogram*, const llvm::DILocation*>& k) const {
      return std::hash<const void*>()(k.first) * 31 + std::hash<const void*>()(k.second);
    }
  };
  std::unordered_map<std::pair<const llvm::DISubprogram*, const llvm::DILocation*>, uint32_t, SiteHash> site_memo_;
  size_t types_filled_ = 0;
  // Per stamp function's DISubprogram: 1 + its flat function.
  std::unordered_map<const llvm::DISubprogram*, uint32_t> function_of_subprogram_;
  // Interning by value (flat_debug.h's intern_debug_*: 1 + the index of the equal entry,
  // appended when there is none) through a hash of each table's entries, not a search.
  struct ValueHash {
    size_t operator()(const FlatDebugFile& f) const;
    size_t operator()(const FlatDebugScope& s) const;
    size_t operator()(const FlatDebugFunction& f) const;
  };
  std::unordered_map<FlatDebugFile, uint32_t, ValueHash> file_entries_;
  std::unordered_map<FlatDebugScope, uint32_t, ValueHash> scope_entries_;
  std::unordered_map<FlatDebugFunction, uint32_t, ValueHash> inlined_entries_;
  template <class T>
  static uint32_t intern(std::vector<T>& table, std::unordered_map<T, uint32_t, ValueHash>& entries, T value);

  uint32_t scope_chain(const llvm::DIScope* s, uint32_t depth);
  uint32_t file_index(const llvm::DIFile* file);
  uint32_t scope_index(const llvm::DIScope* s);
  FlatDebugFunction describe_subprogram(const llvm::DISubprogram* sp);
  uint32_t block_index(const llvm::DIScope* s, uint32_t depth);
  uint32_t inline_site(const llvm::DISubprogram* callee, const llvm::DILocation* at, uint32_t depth);

  void variables(const llvm::Function& f, uint32_t fn,
                 const PointerIndex<llvm::Instruction>& flat_index);
  uint32_t type(const llvm::Metadata* node);
  void fill_types();
  void fill_type(FlatDebugType& t, const llvm::Metadata* node);
};

}  // namespace kiln
