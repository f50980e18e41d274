// kiln-census's work over files and corpora (see lib/census_run.cpp).
#pragma once
#include <string>
#include <vector>

#include "census.h"
#include "corpus.h"

namespace kiln {

// One bitcode file's census, printed as text or JSON. A file that cannot be read as
// bitcode also gets the one-line error on stderr; returns the exit status (0 or 3).
int census_file(const std::string& input, bool json);
// One module of a corpus, printed with every fact and reason.
int explain_module(const Corpus& corpus, const ModuleRecord& m, bool json);
// Every module's census, each run once in a worker process (`jobs` of them); a module
// that crashes LLVM gets a rejected record saying how. A missing or corrupt blob
// stops the census with its error.
std::vector<ModuleCensus> census_corpus(const Corpus& corpus, const std::vector<ModuleRecord>& modules, unsigned jobs);

}  // namespace kiln
