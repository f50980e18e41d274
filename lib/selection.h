// Per-function selection (kiln-selection(5)): which functions go to the candidate back
// end, the rest to the trusted one (llvm). kiln-bisect narrows a miscompilation down
// with it; every back end make_backend makes honours KILN_SELECTION. Also the
// test-only fault switch KILN_TEST_FAULT, with which stamp miscompiles named functions
// on purpose so that kiln-bisect can be tested against a known culprit.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "flat_module.h"

namespace kiln {

constexpr const char* kEnvSelection = "KILN_SELECTION";   // an absolute path to a selection file
constexpr const char* kEnvTestFault = "KILN_TEST_FAULT";  // NAME[,NAME...]: test only
constexpr const char* kSelectionHeader = "# kiln-selection 1";

class Selection {
 public:
  const std::string& path() const { return path_; }
  // Whether any line could select a function of module `id` (a 32-hex-digit xxh3-128).
  bool selects_module(const std::string& id) const;
  // Whether function `name` (its name in the bitcode) of module `id` is selected.
  bool selects(const std::string& id, std::string_view name) const;
  // 16 hex digits over exactly the lines that can affect module `id`, so that lines
  // about other modules leave it (and kiln-capture's object cache key) unchanged.
  std::string digest_for(const std::string& id) const;
  // Whether some line selects by name in every module (function * or hash): cmd: back
  // ends, which take whole modules, cannot follow those.
  bool by_name() const { return !any_module_lines_.empty(); }

 private:
  friend Selection parse_selection(std::string_view text, const std::string& path);
  struct HashBits {
    uint64_t value, mask;
  };
  std::string path_;
  std::set<std::string> modules_;                              // module ID
  std::map<std::string, std::set<std::string>> functions_;     // function ID NAME
  std::set<std::string> any_module_functions_;                 // function * NAME
  std::vector<HashBits> hashes_;                               // hash BITS
  std::map<std::string, std::set<std::string>> module_lines_;  // per id, its lines as read
  std::set<std::string> any_module_lines_;                     // function * and hash lines
};

// A selection file's text; a bad line is KilnError(kExitBadInput) naming PATH:LINE.
Selection parse_selection(std::string_view text, const std::string& path);
// The file at `path`: missing or unreadable is kExitIo, a bad file kExitBadInput.
Selection load_selection(const std::string& path);

// The selection KILN_SELECTION names, loaded once per process (per path); null when
// the variable is unset or empty. Throws as load_selection for a bad file.
const Selection* active_selection();
// The exporters' filter for module `id` under the active selection; empty without one.
FunctionFilter selection_filter(const std::string& id);
// The active selection's digest_for(id), or empty without one.
std::string selection_digest(const std::string& id);

// What a tool's --candidate-functions FILE does: loads FILE (throws as load_selection)
// and sets KILN_SELECTION to its absolute path, for this process and its children.
void use_selection_file(const std::string& path);
// What --candidate-hash BITS does: writes DIR/selection-hash-BITS.txt, a selection of
// that one hash line (DIR is created), and returns its path. Bad BITS: kExitUsage.
std::string selection_file_for_hash(const std::string& bits, const std::string& dir);

// KILN_TEST_FAULT's names (empty when unset). Never set outside tests.
std::vector<std::string> test_fault_names();
// Swaps the targets of the first conditional branch of every function of `flat` whose
// symbol is one of test_fault_names() (NAME, or NAME.kiln.TAG once renamed): a
// deliberate miscompilation. Returns the names it applied to, in function order.
std::vector<std::string> apply_test_faults(FlatModuleData& flat);

}  // namespace kiln
