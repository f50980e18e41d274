// The direct reader's oracle: one module read both ways, by LLVM's parser and
// lib/flat_export.cpp (what the stamp back end does today) and by the direct reader
// (lib/stamp/direct_export.h), and the results compared byte for byte: the flat file,
// the verdicts, the global data. `kiln-emit --check-reader` runs it over a file or a
// corpus.
#pragma once
#include <map>
#include <string>
#include <string_view>

namespace kiln {

struct ReaderComparison {
  enum Outcome {
    kIdentical,          // every output byte-identical
    kModuleDeclined,     // the reader declined the module (detail: its reason)
    kFunctionsDeclined,  // the reader declined some functions (their verdicts: "reader: ..."); the rest compared
    kDifferent,          // a difference the reader did not declare: a reader bug (detail: the first one)
    kCrashed,            // the worker comparing it died (LLVM's parser or exporter, or the reader): not compared
  };
  Outcome outcome = kIdentical;
  std::string detail;
  size_t functions = 0;           // defined functions (LLVM's count)
  size_t functions_declined = 0;  // by the reader
  bool whole = false;             // LLVM's route found the module whole
  double llvm_seconds = 0;        // LLVM's parse (no verifier) plus the export
  double direct_seconds = 0;      // the direct read plus the export
  double llvm_parse_seconds = 0, direct_read_seconds = 0;
};

// With `throw_bad_input`, a module both LLVM's parser and the reader refuse throws
// LLVM's KilnError (kExitBadInput) instead of comparing as kModuleDeclined.
ReaderComparison compare_reader(std::string_view bitcode, const std::string& label, bool throw_bad_input = false);
// LLVM's route alone (parse without the verifier, then what plan_stamp_module does):
// its time in seconds, for benchmarks against export_direct.
double llvm_route_seconds(std::string_view bitcode, const std::string& label);
const char* outcome_name(ReaderComparison::Outcome o);

// kiln-emit --check-reader: every module of `input` (a file, or a corpus when `corpus`)
// compared; a line per module that is not identical (with `json`, a JSON object per
// module), then a summary. Returns the exit status: kExitFailed when a module differs.
int run_reader_check(const std::string& input, bool corpus, bool json);

}  // namespace kiln
