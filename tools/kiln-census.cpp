// kiln-census: facts about every module and its verdict under each back end.
#include <CLI/CLI.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include "census.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "hash.h"
#include "progress.h"
#include "version.h"

static int body(int argc, char** argv) {
  using namespace kiln;
  CLI::App app{"Facts about every module and its verdict under each back end's contract, with reasons.\n"
               "  kiln-census CORPUS|FILE.bc [--json] [--explain ID] [-j N]",
               "kiln-census"};
  app.set_version_flag("--version", version_line("kiln-census"));
  std::string input, explain;
  bool json = false;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  app.add_option("input", input, "a corpus directory or one bitcode file")->required();
  app.add_flag("--json", json, "print JSON (summary for a corpus, the record for a file)");
  app.add_option("--explain", explain, "print every fact and reason for one module id (or id prefix)");
  app.add_option("-j,--jobs", jobs, "worker threads");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli_exit(app, e);
  }

  if (!is_directory(input)) {
    std::string bytes = read_file(input);
    ModuleCensus c = census_of_bytes(bytes, xxh3_128_hex(bytes), input);
    std::printf("%s\n", json ? c.to_json().c_str() : census_explain(c).c_str());
    bool readable = c.verdicts.front().reasons.empty() || c.verdicts.front().reasons.front().rfind("read:", 0) != 0;
    return readable ? kExitOk : kExitBadInput;
  }

  Corpus corpus = Corpus::open(input);
  std::vector<ModuleRecord> modules = corpus.modules();
  if (!explain.empty()) {
    std::vector<const ModuleRecord*> matches;
    for (const auto& m : modules)
      if (m.id.rfind(explain, 0) == 0) matches.push_back(&m);
    if (matches.empty()) throw KilnError(kExitBadInput, input, "no module with id " + explain);
    if (matches.size() > 1)
      throw KilnError(kExitUsage, input, "id prefix " + explain + " matches " + std::to_string(matches.size()) + " modules; give more digits");
    const ModuleRecord& m = *matches.front();
    ModuleCensus c = census_of_bytes(corpus.load_blob(m.id), m.id, corpus.blob_path(m.id));
    c.crate = m.crate;
    std::printf("%s\n", json ? c.to_json().c_str() : census_explain(c).c_str());
    return kExitOk;
  }
  std::vector<ModuleCensus> all(modules.size());
  std::atomic<size_t> next{0};
  Progress progress("kiln-census", modules.size());
  std::mutex error_mutex;
  std::unique_ptr<KilnError> first_error;
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < modules.size();) {
      try {
        all[i] = census_of_bytes(corpus.load_blob(modules[i].id), modules[i].id, corpus.blob_path(modules[i].id));
        all[i].crate = modules[i].crate;
      } catch (const KilnError& e) {
        // A missing or corrupt blob is the corpus's fault: stop with its error.
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error) first_error = std::make_unique<KilnError>(e);
        next = modules.size();
      }
      progress.advance();
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(1u, jobs); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  progress.finish();
  if (first_error) throw *first_error;
  std::string lines;
  for (const auto& c : all) lines += c.to_json() + "\n";
  // The census is one step's output: rewrite it whole, atomically.
  write_file_atomic(input + "/census.jsonl", lines);
  std::printf("%s\n", json ? census_summary_json(all).c_str() : census_summary_table(all).c_str());
  return kExitOk;
}

int main(int argc, char** argv) { return kiln::run_tool("kiln-census", body, argc, argv); }
