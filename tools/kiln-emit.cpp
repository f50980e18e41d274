// kiln-emit: bitcode to an x86-64 ELF object with a chosen back end and profile;
// one file, or every module of a corpus.
#include <CLI/CLI.hpp>

#include <thread>

#include "flat_file.h"
#include "emit.h"
#include "error.h"
#include "fs.h"
#include "isolate.h"
#include "reader_check.h"
#include "line_check.h"
#include "contract.h"
#include "backend_stamp.h"
#include "selection_options.h"
#include "version.h"

static int body(int argc, char** argv) {
  using namespace kiln;
  CLI::App app{
      "Emit x86-64 ELF objects from LLVM bitcode.\n"
      "  kiln-emit IN.bc -o OUT.o [--backend llvm] [--profile fast]\n"
      "  kiln-emit CORPUS --out DIR [-j N]\n"
      "  kiln-emit IN.bc --export-flat OUT.flat   (stamp's flat IR, see kiln-flat(5))\n"
      "  kiln-emit IN.flat -o OUT.o                (stamp, without LLVM)\n"
      "  kiln-emit IN.bc|CORPUS --check-reader     (the direct reader against LLVM's parser)\n"
      "  kiln-emit IN.bc|CORPUS --check-contract   (--backend's symbols against llvm's, see kiln-emit(1))\n"
      "  kiln-emit REFERENCE --compare-contract CANDIDATE   (two builds' objects or rlibs)\n"
      "  kiln-emit IN.bc|CORPUS --check-lines      (stamp's DWARF line tables against llvm -O0's)",
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
  std::string flat_path, reader, shard_arg;
  app.add_option("--export-flat", flat_path, "write the module's stamp functions as a flat IR file");
  bool check_reader = false, check_json = false, check_contract = false, check_lines = false, no_verify = false;
  app.add_flag("--check-reader", check_reader,
               "read each module with the direct reader and with LLVM's parser and compare the outputs");
  app.add_flag("--check-lines", check_lines,
               "verify stamp's DWARF and compare its line tables with llvm -O0's, per located instruction");
  app.add_flag("--json", check_json, "with --check-reader or --check-lines: one JSON line per module");
  app.add_flag("--check-contract", check_contract, "compare the symbols of --backend's (stamp's) objects with llvm's");
  std::string compare_with;
  app.add_option("--compare-contract", compare_with,
                 "compare the symbols of CANDIDATE's objects (an object or an rlib) with the input's");
  app.add_flag("--no-verify", no_verify, "skip LLVM's IR verifier (for bitcode a compiler has just written)");
  app.add_option("--reader", reader,
                 "stamp's bitcode reader: direct (the default: LLVM's parser only for what it declines) or llvm")
      ->check(CLI::IsMember({"direct", "llvm"}));
  app.add_option("--shard", shard_arg, "only shard K of N of a corpus")->excludes("--check-reader", "--check-contract", "--check-lines");
  SelectionOptions selection;
  selection.add_to(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli_exit(app, e);
  }
  selection.apply();
  if (!reader.empty()) kiln::set_reader_choice(reader);
  if (no_verify) kiln::set_verify_choice(false);
  Profile p = parse_profile(profile);
  bool corpus = is_directory(input);
  // A check is a mode of its own: two at once ran the first alone (a CI job passed on
  // a broken contract), and the options of emission would be ignored.
  const int checks = check_reader + check_lines + check_contract + !compare_with.empty();
  if (checks > 1)
    throw KilnError(kExitUsage, "",
                    "--check-reader, --check-lines, --check-contract and --compare-contract are one check each: "
                    "give one");
  if (checks && (!output.empty() || !out_dir.empty() || !receipt_path.empty() || !flat_path.empty()))
    throw KilnError(kExitUsage, "", "a check writes no object: -o, --out, --receipt and --export-flat go without it");
  if (check_json && !check_reader && !check_lines)
    throw KilnError(kExitUsage, "", "--json goes with --check-reader or --check-lines");
  if (check_reader) return run_reader_check(input, corpus, check_json);
  if (check_lines) return run_line_check(input, corpus, check_json);
  if (!compare_with.empty()) return run_contract_compare(input, compare_with);
  if (check_contract) return run_contract_check(input, corpus, app.count("--backend") ? backend : "stamp", p, jobs);
  // Options that belong to the other mode would be ignored: say so instead.
  if (corpus && !output.empty())
    throw KilnError(kExitUsage, input, "-o is for a single file; a corpus takes --out DIR");
  if (corpus && !receipt_path.empty()) throw KilnError(kExitUsage, input, "--receipt is for a single file");
  if (corpus && !flat_path.empty()) throw KilnError(kExitUsage, input, "--export-flat is for a single file");
  if (!corpus && (!out_dir.empty() || app.count("--shard")))
    throw KilnError(kExitUsage, input, "--out is for a corpus, as is --shard; a single file takes -o OUT.o");
  if (!flat_path.empty()) {
    std::printf("%s\n", export_flat_file(input, flat_path).c_str());
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
    CorpusEmitSummary s = emit_corpus(input, out_dir, backend, p, jobs, shard_option(shard_arg, app.count("--shard")));
    std::printf("%zu modules: %zu emitted, %zu failed in %.3f s -> %s\n", s.modules, s.emitted, s.failed, s.seconds,
                out_dir.c_str());
    return s.failed ? kExitFailed : kExitOk;
  }
  if (output.empty()) throw KilnError(kExitUsage, input, "-o OUT.o is required for a single file");
  std::string receipt = emit_file_isolated(input, output, backend, p, &bytes);
  if (!receipt_path.empty()) write_file_atomic(receipt_path, receipt + "\n");
  // With the object on standard output, the receipt goes to standard error.
  std::fprintf(inherited_descriptor(output) == 1 ? stderr : stdout, "%s\n", receipt.c_str());
  return kExitOk;
}

int main(int argc, char** argv) {
  // LLVM work outside the workers too: a fatal error is one line and exit 3, not
  // "LLVM ERROR" and exit 1.
  kiln::install_llvm_fatal_handlers();
  return kiln::run_tool("kiln-emit", body, argc, argv);
}
