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

// The census records of shards (kiln-census --shard K/N, each its own JSON Lines file)
// joined into what one census of the whole corpus gives: one record per module, in
// the corpus's module order. A module with no record (a shard missing), with two (the
// same shard twice, or shards of different N), or not in the corpus is a KilnError
// (kExitBadInput) naming it.
std::vector<ModuleCensus> merge_census_shards(const Corpus& corpus, const std::vector<std::string>& files);

}  // namespace kiln
