// LLVM's exporter's half of the debug information stamp carries (flat_debug.h): a
// function's subprogram, its instructions' locations, lexical blocks and inlined calls,
// and, at full emission, its variables and the types they reach, interned in
// flat_debug.h's order so that the direct reader's flat files stay byte-identical.
#pragma once
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "flat_debug.h"
#include "pointer_index.h"

namespace llvm {
class DILocation;
class DIScope;
class DISubprogram;
class Function;
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

 private:
  FlatDebugInfo& d_;
  // Per DI type node: 1 + its index in d_.types.
  std::unordered_map<const llvm::Metadata*, uint32_t> type_index_;
  std::vector<const llvm::Metadata*> type_nodes_;
  std::map<const llvm::DIScope*, uint32_t> block_index_;  // per DILexicalBlock: 1 + its index in d_.blocks
  // Per (callee, inlinedAt): 1 + the site's index in d_.inline_sites.
  std::map<std::pair<const llvm::DISubprogram*, const llvm::DILocation*>, uint32_t> site_index_;  // per entry of d_.types: its node
  size_t types_filled_ = 0;

  void variables(const llvm::Function& f, uint32_t fn,
                 const PointerIndex<llvm::Instruction>& flat_index);
  uint32_t type(const llvm::Metadata* node);
  void fill_types();
  void fill_type(FlatDebugType& t, const llvm::Metadata* node);
};

}  // namespace kiln
