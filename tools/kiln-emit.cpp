// kiln-emit: bitcode to an x86-64 ELF object with a chosen back end and profile;
// one file, or every module of a corpus.
#include <CLI/CLI.hpp>

#include <thread>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "bitcode.h"
#include "corpus.h"
#include "flat_export.h"
#include "flat_file.h"
#include "hash.h"
#include "fallback.h"
#include "emit.h"
#include "error.h"
#include "fs.h"
#include "isolate.h"
#include "json_writer.h"
#include "progress.h"
#include "reader_check.h"
#include "backend_stamp.h"
#include "version.h"

// --check-reader: every module of a file or corpus read both ways; a line per module
// that is not identical (or per module with --json), and a summary.
static int check_reader_main(const std::string& input, bool corpus, bool json) {
  using namespace kiln;
  std::vector<std::pair<std::string, std::string>> modules;  // label, path
  if (corpus) {
    Corpus c = Corpus::open(input);
    for (const ModuleRecord& m : c.modules()) modules.push_back({m.id, c.blob_path(m.id)});
  } else {
    modules.push_back({input, input});
  }
  size_t counts[4] = {0, 0, 0, 0}, functions = 0, declined = 0;
  double llvm_s = 0, direct_s = 0, parse_s = 0, read_s = 0;
  std::map<std::string, size_t> reasons;
  Progress progress("checking the reader", modules.size());
  for (const auto& [label, path] : modules) {
    std::string bytes = read_file(path);
    ReaderComparison r = compare_reader(bytes, label);
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
  }
  progress.finish();
  if (!json) {
    std::printf("%zu modules: %zu identical, %zu with functions declined, %zu declined, %zu different\n", modules.size(),
                counts[ReaderComparison::kIdentical], counts[ReaderComparison::kFunctionsDeclined],
                counts[ReaderComparison::kModuleDeclined], counts[ReaderComparison::kDifferent]);
    std::printf("functions read directly: %zu of %zu (%.2f%%)\n", functions - declined, functions,
                functions ? 100.0 * double(functions - declined) / double(functions) : 100.0);
    for (const auto& [why, n] : reasons) std::printf("  %zu x %s\n", n, why.c_str());
    std::printf("LLVM parse + export %.3f s (parse %.3f s); direct read + export %.3f s (read %.3f s): %.1fx\n", llvm_s,
                parse_s, direct_s, read_s, direct_s > 0 ? llvm_s / direct_s : 0.0);
  }
  return counts[ReaderComparison::kDifferent] ? kExitFailed : kExitOk;
}

static int body(int argc, char** argv) {
  using namespace kiln;
  CLI::App app{
      "Emit x86-64 ELF objects from LLVM bitcode.\n"
      "  kiln-emit IN.bc -o OUT.o [--backend llvm] [--profile fast]\n"
      "  kiln-emit CORPUS --out DIR [-j N]\n"
      "  kiln-emit IN.bc --export-flat OUT.flat   (stamp's flat IR, see kiln-flat(5))\n"
      "  kiln-emit IN.flat -o OUT.o                (stamp, without LLVM)\n"
      "  kiln-emit IN.bc|CORPUS --check-reader     (the direct reader against LLVM's parser)",
      "kiln-emit"};
  app.set_version_flag("--version", version_line("kiln-emit"));
  std::string input, output, out_dir, backend = "llvm", profile = "fast", receipt_path;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  app.add_option("input", input, "a bitcode file or a corpus directory")->required();
  app.add_option("-o,--output", output, "object file to write (single file)");
  app.add_option("--out", out_dir, "directory for a corpus's objects (ID.o) and receipts");
  app.add_option("--backend", backend, "llvm, stamp, or 'cmd:TOOL {in} -o {out}'");
  app.add_option("--profile", profile, "fast, balanced or release")
      ->check(CLI::IsMember({"fast", "balanced", "release"}));
  app.add_option("-j,--jobs", jobs, "worker processes for a corpus");
  app.add_option("--receipt", receipt_path, "also write the receipt (single file) here");
  std::string flat_path;
  app.add_option("--export-flat", flat_path, "write the module's stamp functions as a flat IR file");
  bool check_reader = false, check_json = false;
  app.add_flag("--check-reader", check_reader,
               "read each module with the direct reader and with LLVM's parser and compare the outputs");
  app.add_flag("--json", check_json, "with --check-reader: one JSON line per module");
  std::string reader;
  app.add_option("--reader", reader,
                 "stamp's bitcode reader: direct (the default: LLVM's parser only for what it declines) or llvm")
      ->check(CLI::IsMember({"direct", "llvm"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli_exit(app, e);
  }
  if (!reader.empty()) kiln::set_reader_choice(reader);
  Profile p = parse_profile(profile);
  bool corpus = is_directory(input);
  if (check_reader) return check_reader_main(input, corpus, check_json);
  // Options that belong to the other mode would be ignored: say so instead.
  if (corpus && !output.empty())
    throw KilnError(kExitUsage, input, "-o is for a single file; a corpus takes --out DIR");
  if (corpus && !receipt_path.empty()) throw KilnError(kExitUsage, input, "--receipt is for a single file");
  if (corpus && !flat_path.empty()) throw KilnError(kExitUsage, input, "--export-flat is for a single file");
  if (!corpus && !out_dir.empty())
    throw KilnError(kExitUsage, input, "--out is for a corpus; a single file takes -o OUT.o");
  if (!flat_path.empty()) {
    std::string bytes = read_file(input);
    // In a worker process: a module that crashes LLVM fails with a line, not a signal.
    std::string said = run_isolated_one(input, [&] {
      llvm::LLVMContext ctx;
      auto module = parse_checked_module(ctx, bytes, input);
      LlvmStage stage("exporting flat IR");
      materialize_aggregate_constants(*module);
      FlatExport flat = export_flat(*module);
      if (flat.stamp_function_count) expose_local_symbols(*module, xxh3_128_hex(bytes).substr(0, 12));
      flat.resolve_symbol_names();
      write_file_atomic(flat_path, write_flat_file(flat.flat, module->getSourceFileName()));
      return std::to_string(flat.stamp_function_count) + " of " + std::to_string(flat.verdicts.size()) +
          " functions exported for stamp -> " + flat_path;
    });
    std::printf("%s\n", said.c_str());
    return kExitOk;
  }
  std::string bytes;
  if (!corpus) {
    bytes = read_file(input);
    if (bytes.compare(0, 8, "KILNFLAT") == 0) {  // a flat IR file: stamp, no LLVM
      if (output.empty()) throw KilnError(kExitUsage, input, "-o OUT.o is required");
      std::string source;
      FlatModuleData flat = read_flat_file(bytes, input, &source);
      write_file_atomic(output, emit_flat_module(flat, source));
      std::printf("%zu functions emitted by stamp -> %s\n", flat.functions.size(), output.c_str());
      return kExitOk;
    }
  }
  if (corpus) {
    if (out_dir.empty()) throw KilnError(kExitUsage, input, "a corpus needs --out DIR");
    CorpusEmitSummary s = emit_corpus(input, out_dir, backend, p, jobs);
    std::printf("%zu modules: %zu emitted, %zu failed in %.3f s -> %s\n", s.modules, s.emitted, s.failed, s.seconds,
                out_dir.c_str());
    return s.failed ? kExitFailed : kExitOk;
  }
  if (output.empty()) throw KilnError(kExitUsage, input, "-o OUT.o is required for a single file");
  std::string receipt = emit_file_isolated(input, output, backend, p, &bytes);
  if (!receipt_path.empty()) write_file_atomic(receipt_path, receipt + "\n");
  std::printf("%s\n", receipt.c_str());
  return kExitOk;
}

int main(int argc, char** argv) {
  // LLVM work outside the workers too: a fatal error is one line and exit 3, not
  // "LLVM ERROR" and exit 1.
  kiln::install_llvm_fatal_handlers();
  return kiln::run_tool("kiln-emit", body, argc, argv);
}
