#include "reader_check.h"

#include <cstdio>
#include <cstring>
#include <map>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "bitcode.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "json_writer.h"
#include "progress.h"
#include "direct_export.h"
#include "fallback.h"
#include "flat_export.h"
#include "flat_file.h"
#include "hash.h"
#include "isolate.h"
#include "timeutil.h"

namespace kiln {

namespace {

std::string describe_data(const StampData& d) {
  std::string s = d.name + " section " + d.section + " size " + std::to_string(d.size) + " align " +
      std::to_string(d.align) + (d.zero ? " zero" : "") + (d.writable ? " writable" : "") + (d.tls ? " tls" : "") +
      (d.was_private ? " private" : "") + (d.retain ? " retain" : "") + " binding " + std::to_string(int(d.binding)) +
      " visibility " + std::to_string(int(d.visibility)) + " relocs";
  for (const auto& r : d.relocations)
    s += " " + std::to_string(r.offset) + ":" + r.symbol + "+" + std::to_string(r.addend);
  return s;
}

// The first difference between the two routes' outputs, or empty.
std::string first_difference(const FlatExport& llvm_out, const std::string& llvm_source, bool llvm_whole,
                             const std::string& llvm_globals, const std::vector<StampData>& llvm_data,
                             const DirectExport& direct, bool compare_flat) {
  if (llvm_out.verdicts.size() != direct.verdicts.size())
    return "functions: llvm " + std::to_string(llvm_out.verdicts.size()) + ", reader " +
        std::to_string(direct.verdicts.size());
  for (size_t i = 0; i < llvm_out.verdicts.size(); ++i) {
    const FunctionVerdict& a = llvm_out.verdicts[i];
    const FunctionVerdict& b = direct.verdicts[i];
    if (a.name != b.name) return "function " + std::to_string(i) + ": name " + a.name + " vs " + b.name;
    if (a.instructions != b.instructions)
      return a.name + ": instructions " + std::to_string(a.instructions) + " vs " + std::to_string(b.instructions);
    if (!b.reasons.empty() && b.reasons[0].compare(0, 8, "reader: ") == 0) continue;  // declined
    if (a.reasons != b.reasons) {
      auto join = [](const std::vector<std::string>& v) {
        std::string s;
        for (const auto& r : v) s += (s.empty() ? "" : "; ") + r;
        return s.empty() ? std::string("(stamp)") : s;
      };
      return a.name + ": reasons [" + join(a.reasons) + "] vs [" + join(b.reasons) + "]";
    }
  }
  if (!compare_flat) return "";
  if (llvm_out.emitted_by_stamp != direct.emitted_by_stamp) return "functions emitted by stamp differ";
  if (llvm_source != direct.source_filename) return "source file name " + llvm_source + " vs " + direct.source_filename;
  if (llvm_out.flat.symbols != direct.flat.symbols) {
    for (size_t i = 0; i < std::min(llvm_out.flat.symbols.size(), direct.flat.symbols.size()); ++i)
      if (llvm_out.flat.symbols[i] != direct.flat.symbols[i])
        return "symbol " + std::to_string(i) + ": " + llvm_out.flat.symbols[i] + " vs " + direct.flat.symbols[i];
    return "symbols: " + std::to_string(llvm_out.flat.symbols.size()) + " vs " +
        std::to_string(direct.flat.symbols.size());
  }
  if (write_flat_file(llvm_out.flat, llvm_source) != write_flat_file(direct.flat, direct.source_filename)) {
    const auto& a = llvm_out.flat;
    const auto& b = direct.flat;
    if (a.insts.size() != b.insts.size())
      return "flat instructions " + std::to_string(a.insts.size()) + " vs " + std::to_string(b.insts.size());
    for (size_t i = 0; i < a.insts.size(); ++i)
      if (std::memcmp(&a.insts[i], &b.insts[i], sizeof(FlatInst)) != 0)
        return "flat instruction " + std::to_string(i) + " (op " + std::to_string(a.insts[i].op) + ") differs";
    for (size_t i = 0; i < std::min(a.operands.size(), b.operands.size()); ++i)
      if (std::memcmp(&a.operands[i], &b.operands[i], sizeof(FlatOperand)) != 0)
        return "flat operand " + std::to_string(i) + " differs";
    return "flat files differ";
  }
  if (llvm_globals != direct.globals_reason)
    return "globals: [" + llvm_globals + "] vs [" + direct.globals_reason + "]";
  if (llvm_whole != direct.whole)
    return std::string("whole: ") + (llvm_whole ? "llvm yes, reader no" : "llvm no, reader yes");
  if (llvm_data.size() != direct.data.size())
    return "global data: " + std::to_string(llvm_data.size()) + " vs " + std::to_string(direct.data.size());
  for (size_t i = 0; i < llvm_data.size(); ++i) {
    if (describe_data(llvm_data[i]) != describe_data(direct.data[i]))
      return "global " + describe_data(llvm_data[i]) + " vs " + describe_data(direct.data[i]);
    if (llvm_data[i].bytes != direct.data[i].bytes) return "global " + llvm_data[i].name + ": bytes differ";
  }
  return "";
}

}  // namespace

double llvm_route_seconds(std::string_view bitcode, const std::string& label) {
  Stopwatch clock;
  llvm::LLVMContext ctx;
  auto module = parse_checked_module(ctx, bitcode, label, {.verify = false, .triple = false});
  materialize_aggregate_constants(*module);
  FlatExport flat = export_flat(*module);
  if (flat.stamp_function_count) expose_local_symbols(*module, xxh3_128_hex(bitcode).substr(0, 12));
  flat.resolve_symbol_names();
  std::vector<StampData> data;
  export_globals(*module, data);
  return clock.seconds();
}

const char* outcome_name(ReaderComparison::Outcome o) {
  switch (o) {
    case ReaderComparison::kIdentical:
      return "identical";
    case ReaderComparison::kModuleDeclined:
      return "module declined";
    case ReaderComparison::kFunctionsDeclined:
      return "functions declined";
    case ReaderComparison::kDifferent:
      return "DIFFERENT";
    case ReaderComparison::kCrashed:
      return "crashed";
  }
  return "?";
}

ReaderComparison compare_reader(std::string_view bitcode, const std::string& label, bool throw_bad_input) {
  ReaderComparison r;
  const std::string tag = xxh3_128_hex(bitcode).substr(0, 12);

  // LLVM's route, as plan_stamp_module runs it (the verifier aside, which is not export).
  Stopwatch clock;
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> module;
  try {
    module = parse_checked_module(ctx, bitcode, label,
                                  {.verify = false, .triple = false, .parse_seconds = &r.llvm_parse_seconds});
  } catch (const KilnError& e) {
    // No oracle for this module: the two agree only if the reader refuses it too.
    r.llvm_seconds = clock.lap();
    try {
      const DirectExport d = export_direct(bitcode, label, tag);
      r.outcome = d.declined.empty() ? ReaderComparison::kDifferent : ReaderComparison::kModuleDeclined;
      r.detail =
          d.declined.empty() ? std::string("the reader reads what LLVM's parser refuses: ") + e.what() : d.declined;
    } catch (const KilnError& refused) {
      r.outcome = ReaderComparison::kModuleDeclined;
      r.detail = std::string("reader: ") + refused.what();
    }
    if (throw_bad_input && r.outcome == ReaderComparison::kModuleDeclined) throw;  // LLVM's error, as it came
    r.direct_seconds = clock.lap();
    return r;
  }
  materialize_aggregate_constants(*module);
  FlatExport flat = export_flat(*module);
  if (flat.stamp_function_count) expose_local_symbols(*module, tag);
  flat.resolve_symbol_names();
  std::vector<StampData> data;
  std::string globals = export_globals(*module, data);
  bool whole = flat.stamp_function_count == flat.verdicts.size() && globals.empty();
  if (!whole) data.clear();
  r.llvm_seconds = clock.lap();
  r.functions = flat.verdicts.size();
  r.whole = whole;

  DirectExport direct;
  try {
    direct = export_direct(bitcode, label, tag);
  } catch (const KilnError& e) {
    // As stamp's emission takes it (backend_stamp.cpp): LLVM's parser has the last
    // word on what is bitcode, and this module goes its way.
    direct.declined = std::string("reader: ") + e.what();
  }
  r.direct_seconds = clock.lap();
  r.direct_read_seconds = direct.read_seconds;
  if (!direct.declined.empty()) {
    r.outcome = ReaderComparison::kModuleDeclined;
    r.detail = direct.declined;
    r.functions_declined = r.functions;
    return r;
  }
  r.functions_declined = direct.declined_function_count;
  std::string diff = first_difference(flat, module->getSourceFileName(), whole, globals, data, direct,
                                      direct.declined_function_count == 0);
  if (!diff.empty()) {
    r.outcome = ReaderComparison::kDifferent;
    r.detail = diff;
  } else if (direct.declined_function_count) {
    r.outcome = ReaderComparison::kFunctionsDeclined;
    for (const auto& v : direct.verdicts)
      if (!v.reasons.empty() && v.reasons[0].compare(0, 8, "reader: ") == 0) {
        r.detail = v.name + ": " + v.reasons[0];
        break;
      }
  }
  return r;
}

namespace {

// A comparison made in a worker comes back as one line of its numbers, then its detail.
std::string encode_comparison(const ReaderComparison& r) {
  char line[256];
  std::snprintf(line, sizeof line, "%d %zu %zu %d %.17g %.17g %.17g %.17g\n", int(r.outcome), r.functions,
                r.functions_declined, int(r.whole), r.llvm_seconds, r.direct_seconds, r.llvm_parse_seconds,
                r.direct_read_seconds);
  return line + r.detail;
}

ReaderComparison decode_comparison(const std::string& text) {
  ReaderComparison r;
  int outcome = 0, whole = 0;
  const size_t nl = text.find('\n');
  if (nl == std::string::npos ||
      std::sscanf(text.c_str(), "%d %zu %zu %d %lg %lg %lg %lg", &outcome, &r.functions, &r.functions_declined, &whole,
                  &r.llvm_seconds, &r.direct_seconds, &r.llvm_parse_seconds, &r.direct_read_seconds) != 8)
    throw KilnError(kExitInternal, "", "a reader check's worker answered '" + text.substr(0, 80) + "'");
  r.outcome = ReaderComparison::Outcome(outcome);
  r.whole = whole != 0;
  r.detail = text.substr(nl + 1);
  return r;
}

}  // namespace

// --check-reader: every module of a file or corpus read both ways; a line per module
// that is not identical (or per module with --json), and a summary. Each module is
// compared in a worker process: LLVM's parser and exporter (or the reader) crashing on
// one module makes that module's line, not the end of the check.
int run_reader_check(const std::string& input, bool corpus, bool json) {
  const auto modules = Corpus::modules_to_check(input, corpus);  // label, path
  size_t counts[5] = {0, 0, 0, 0, 0}, functions = 0, declined = 0;
  double llvm_s = 0, direct_s = 0, parse_s = 0, read_s = 0;
  std::map<std::string, size_t> reasons;
  Progress progress("checking the reader", modules.size());
  auto job = [&](size_t i) {
    // One file that is no bitcode (both routes refuse it) is bad input, as in kiln-emit's
    // other modes; in a corpus it is one module's line.
    return encode_comparison(compare_reader(read_file(modules[i].second), modules[i].first, !corpus));
  };
  auto label = [&](size_t i) { return modules[i].first; };
  auto done = [&](size_t i, IsolatedResult result) {
    ReaderComparison r;
    if (result.ok) {
      r = decode_comparison(result.text);
    } else if (result.crashed) {
      r.outcome = ReaderComparison::kCrashed;
      r.detail = result.text.substr(std::min(result.text.size(), modules[i].first.size() + 2));  // "LABEL: " off
    } else {
      throw KilnError(ExitCode(result.code), "", result.text);  // the module could not be read (I/O): as before
    }
    const std::string& label = modules[i].first;
    progress.advance();
    counts[r.outcome]++;
    functions += r.functions;
    declined += r.functions_declined;
    llvm_s += r.llvm_seconds;
    direct_s += r.direct_seconds;
    parse_s += r.llvm_parse_seconds;
    read_s += r.direct_read_seconds;
    if (r.outcome == ReaderComparison::kModuleDeclined || r.outcome == ReaderComparison::kFunctionsDeclined) {
      std::string why = r.detail.substr(r.detail.find("reader: ") == std::string::npos ? 0 : r.detail.find("reader: "));
      reasons[why]++;
    }
    if (json) {
      JsonWriter w;
      w.begin_object();
      w.key("module").value(label).key("outcome").value(outcome_name(r.outcome)).key("detail").value(r.detail);
      w.key("functions").value(uint64_t(r.functions)).key("functions_declined").value(uint64_t(r.functions_declined));
      w.key("llvm_seconds").value(r.llvm_seconds).key("direct_seconds").value(r.direct_seconds);
      w.end_object();
      std::printf("%s\n", w.str().c_str());
    } else if (r.outcome != ReaderComparison::kIdentical) {
      std::printf("%s: %s: %s\n", label.c_str(), outcome_name(r.outcome), r.detail.c_str());
    }
    std::fflush(stdout);  // each line before the next worker's fork, never twice
  };
  run_isolated(modules.size(), 1, job, done, label);
  progress.finish();
  if (!json) {
    std::printf("%zu modules: %zu identical, %zu with functions declined, %zu declined, %zu different", modules.size(),
                counts[ReaderComparison::kIdentical], counts[ReaderComparison::kFunctionsDeclined],
                counts[ReaderComparison::kModuleDeclined], counts[ReaderComparison::kDifferent]);
    if (counts[ReaderComparison::kCrashed]) std::printf(", %zu crashed", counts[ReaderComparison::kCrashed]);
    std::printf("\n");
    std::printf("functions read directly: %zu of %zu (%.2f%%)\n", functions - declined, functions,
                functions ? 100.0 * double(functions - declined) / double(functions) : 100.0);
    for (const auto& [why, n] : reasons) std::printf("  %zu x %s\n", n, why.c_str());
    std::printf("LLVM parse + export %.3f s (parse %.3f s); direct read + export %.3f s (read %.3f s): %.1fx\n", llvm_s,
                parse_s, direct_s, read_s, direct_s > 0 ? llvm_s / direct_s : 0.0);
  }
  return counts[ReaderComparison::kDifferent] || counts[ReaderComparison::kCrashed] ? kExitFailed : kExitOk;
}

}  // namespace kiln
