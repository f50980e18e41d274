// kiln-emit: bitcode to an x86-64 ELF object with a chosen back end and profile;
// one file, or every module of a corpus.
#include <CLI/CLI.hpp>

#include <thread>

#include "corpus.h"
#include "emit.h"
#include "error.h"
#include "fs.h"
#include "version.h"

static int body(int argc, char** argv) {
  using namespace kiln;
  CLI::App app{"Emit x86-64 ELF objects from LLVM bitcode.\n"
               "  kiln-emit IN.bc -o OUT.o [--backend llvm] [--profile fast]\n"
               "  kiln-emit CORPUS --out DIR [-j N]",
               "kiln-emit"};
  app.set_version_flag("--version", version_line("kiln-emit"));
  std::string input, output, out_dir, backend = "llvm", profile = "fast", receipt_path;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  app.add_option("input", input, "a bitcode file or a corpus directory")->required();
  app.add_option("-o,--output", output, "object file to write (single file)");
  app.add_option("--out", out_dir, "directory for a corpus's objects (ID.o) and receipts");
  app.add_option("--backend", backend, "llvm or 'cmd:TOOL {in} -o {out}'");
  app.add_option("--profile", profile, "fast, balanced or release")->check(CLI::IsMember({"fast", "balanced", "release"}));
  app.add_option("-j,--jobs", jobs, "worker threads for a corpus");
  app.add_option("--receipt", receipt_path, "also write the receipt (single file) here");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli_exit(app, e);
  }
  Profile p = parse_profile(profile);
  if (is_directory(input)) {
    if (out_dir.empty()) throw KilnError(kExitUsage, input, "a corpus needs --out DIR");
    CorpusEmitSummary s = emit_corpus(input, out_dir, backend, p, jobs);
    std::printf("%zu modules: %zu emitted, %zu failed in %.3f s -> %s\n", s.modules, s.emitted, s.failed, s.seconds,
                out_dir.c_str());
    return s.failed ? kExitFailed : kExitOk;
  }
  if (output.empty()) throw KilnError(kExitUsage, input, "-o OUT.o is required for a single file");
  EmitFileResult r = emit_file(input, output, backend, p);
  if (!receipt_path.empty()) write_file_atomic(receipt_path, r.receipt + "\n");
  std::printf("%s\n", r.receipt.c_str());
  return kExitOk;
}

int main(int argc, char** argv) { return kiln::run_tool("kiln-emit", body, argc, argv); }
