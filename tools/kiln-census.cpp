// kiln-census: facts about every module and its verdict under each back end.
#include <CLI/CLI.hpp>

#include <thread>

#include "census_run.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "isolate.h"
#include "shard.h"
#include "selection_options.h"
#include "version.h"

// kiln-census merge CORPUS [SHARD_FILES...]: the shards' census files joined into the
// census one unsharded run writes, and its summary.
static int merge_body(int argc, char** argv) {
  using namespace kiln;
  CLI::App app{
      "Join shards' census files (kiln-census --shard K/N) into the corpus's census.\n"
      "  kiln-census merge CORPUS [SHARD.jsonl...] [-o FILE] [--json]",
      "kiln-census merge"};
  std::string dir, output;
  std::vector<std::string> files;
  bool json = false;
  app.add_option("corpus", dir, "the corpus the shards were taken from")->required();
  app.add_option("shards", files, "shards' census files (default: CORPUS/census.shard-K-of-N.jsonl, all there)");
  app.add_option("-o,--output", output, "census file to write (default CORPUS/census.jsonl)");
  app.add_flag("--json", json, "print the summary as JSON");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli_exit(app, e);
  }
  Corpus corpus = Corpus::open(dir);
  if (files.empty()) files = find_shard_files(dir, "census", "jsonl");
  if (files.empty()) throw KilnError(kExitUsage, dir, "no census.shard-K-of-N.jsonl here; name the shards' files");
  std::vector<ModuleCensus> all = merge_census_shards(corpus, files);
  std::string lines;
  for (const auto& c : all) lines += c.to_json() + "\n";
  if (output.empty()) corpus.write_census(lines);
  else write_file_atomic(output, lines);
  std::printf("%s\n", json ? census_summary_json(all).c_str() : census_summary_table(all).c_str());
  return kExitOk;
}

static int body(int argc, char** argv) {
  using namespace kiln;
  CLI::App app{
      "Facts about every module and its verdict under each back end's contract, with reasons.\n"
      "  kiln-census CORPUS|FILE.bc [--json] [--explain ID] [-j N] [--shard K/N]\n"
      "  kiln-census merge CORPUS [SHARD.jsonl...] [-o FILE] [--json]",
      "kiln-census"};
  app.set_version_flag("--version", version_line("kiln-census"));
  if (argc > 1 && std::string(argv[1]) == "merge") return merge_body(argc - 1, argv + 1);
  std::string input, explain, shard_arg;
  bool json = false;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  app.add_option("input", input, "a corpus directory or one bitcode file")->required();
  app.add_flag("--json", json, "print JSON (summary for a corpus, the record for a file)");
  app.add_option("--explain", explain, "print every fact and reason for one module id (or id prefix)");
  app.add_option("-j,--jobs", jobs, "worker processes for a corpus");
  app.add_option("--shard", shard_arg,
                 "only shard K of N of the corpus's modules, into CORPUS/census.shard-K-of-N.jsonl");
  SelectionOptions selection;
  selection.add_to(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli_exit(app, e);
  }
  selection.apply();

  if (app.count("--explain") && explain.empty())
    throw KilnError(kExitUsage, "", "--explain needs a module id (or id prefix)");
  Shard shard = shard_option(shard_arg, app.count("--shard"));
  if (app.count("--shard") && (!explain.empty() || !is_directory(input)))
    throw KilnError(kExitUsage, input, "--shard is for a corpus's census, not --explain or a file");
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
  std::vector<ModuleRecord> share;
  for (auto& m : modules)
    if (in_shard(m.id, shard)) share.push_back(std::move(m));
  std::vector<ModuleCensus> all = census_corpus(corpus, share, jobs);
  std::string lines;
  for (const auto& c : all) lines += c.to_json() + "\n";
  // The census is one step's output: rewrite it whole, atomically (a shard its own file).
  write_file_atomic(corpus.census_path(shard), lines);
  std::printf("%s\n", json ? census_summary_json(all).c_str() : census_summary_table(all).c_str());
  return kExitOk;
}

int main(int argc, char** argv) {
  // LLVM work outside the workers too: a fatal error is one line and exit 3, not
  // "LLVM ERROR" and exit 1.
  kiln::install_llvm_fatal_handlers();
  return kiln::run_tool("kiln-census", body, argc, argv);
}
