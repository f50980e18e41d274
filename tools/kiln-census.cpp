// kiln-census: facts about every module and its verdict under each back end.
#include <CLI/CLI.hpp>

#include <thread>

#include "census_run.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "isolate.h"
#include "version.h"

static int body(int argc, char** argv) {
  using namespace kiln;
  CLI::App app{
      "Facts about every module and its verdict under each back end's contract, with reasons.\n"
      "  kiln-census CORPUS|FILE.bc [--json] [--explain ID] [-j N]",
      "kiln-census"};
  app.set_version_flag("--version", version_line("kiln-census"));
  std::string input, explain;
  bool json = false;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  app.add_option("input", input, "a corpus directory or one bitcode file")->required();
  app.add_flag("--json", json, "print JSON (summary for a corpus, the record for a file)");
  app.add_option("--explain", explain, "print every fact and reason for one module id (or id prefix)");
  app.add_option("-j,--jobs", jobs, "worker processes for a corpus");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli_exit(app, e);
  }

  if (app.count("--explain") && explain.empty())
    throw KilnError(kExitUsage, "", "--explain needs a module id (or id prefix)");
  if (!is_directory(input)) {
    if (!explain.empty()) throw KilnError(kExitUsage, input, "--explain is for a corpus; a file's census explains it");
    return census_file(input, json);
  }

  Corpus corpus = Corpus::open(input);
  std::vector<ModuleRecord> modules = corpus.modules();
  if (!explain.empty()) {
    std::vector<const ModuleRecord*> matches;
    for (const auto& m : modules)
      if (m.id.rfind(explain, 0) == 0) matches.push_back(&m);
    if (matches.empty()) throw KilnError(kExitBadInput, input, "no module with id " + explain);
    if (matches.size() > 1)
      throw KilnError(kExitUsage, input,
                      "id prefix " + explain + " matches " + std::to_string(matches.size()) +
                          " modules; give more digits");
    const ModuleRecord& m = *matches.front();
    return explain_module(corpus, m, json);
  }
  std::vector<ModuleCensus> all = census_corpus(corpus, modules, jobs);
  std::string lines;
  for (const auto& c : all) lines += c.to_json() + "\n";
  // The census is one step's output: rewrite it whole, atomically.
  corpus.write_census(lines);
  std::printf("%s\n", json ? census_summary_json(all).c_str() : census_summary_table(all).c_str());
  return kExitOk;
}

int main(int argc, char** argv) {
  // LLVM work outside the workers too: a fatal error is one line and exit 3, not
  // "LLVM ERROR" and exit 1.
  kiln::install_llvm_fatal_handlers();
  return kiln::run_tool("kiln-census", body, argc, argv);
}
