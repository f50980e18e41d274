// --candidate-functions FILE and --candidate-hash BITS (kiln-selection(5)), as every
// tool that emits or judges modules takes them: they set KILN_SELECTION for the tool,
// its worker processes and the back ends it makes.
#pragma once
#include <CLI/CLI.hpp>

#include <string>

#include "fs.h"
#include "selection.h"

namespace kiln {

struct SelectionOptions {
  std::string file, hash;
  std::string temp_dir;  // where --candidate-hash's one-line file lives, removed at exit
  ~SelectionOptions() {
    if (!temp_dir.empty()) remove_tree(temp_dir);
  }
  void add_to(CLI::App& app) {
    app.add_option("--candidate-functions", file,
                   "a selection file (kiln-selection(5)): only its functions are the back end's, the rest llvm's");
    app.add_option("--candidate-hash", hash, "only functions whose name's xxh3-64 ends in these binary digits")
        ->excludes("--candidate-functions");
  }
  // After parsing: checks the file (exit 3 for a bad one) and sets KILN_SELECTION.
  void apply() {
    if (!hash.empty()) {
      temp_dir = make_temp_dir("kiln-selection");
      file = selection_file_for_hash(hash, temp_dir);
    }
    if (!file.empty()) use_selection_file(file);
  }
};

}  // namespace kiln
