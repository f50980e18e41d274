// kiln-replay: persistent emission services, rounds over a corpus, byte stability.
#include <CLI/CLI.hpp>

#include <sstream>

#include "error.h"
#include "isolate.h"
#include "replay.h"
#include "backend_stamp.h"
#include "selection_options.h"
#include "version.h"

// kiln-replay merge CORPUS [REPORTS...]: shards' reports joined into one run's.
static int merge_body(int argc, char** argv) {
  using namespace kiln;
  CLI::App app{
      "Join shards' replay reports (kiln-replay --shard K/N) into the report of one run.\n"
      "  kiln-replay merge CORPUS [REPORT.json...] [-o FILE] [--json]",
      "kiln-replay merge"};
  std::string dir, output;
  std::vector<std::string> reports;
  bool json = false;
  app.add_option("corpus", dir, "the corpus the shards replayed")->required();
  app.add_option("reports", reports, "shards' reports (default: CORPUS/replay-report.shard-K-of-N.json, all there)");
  app.add_option("-o,--output", output, "report to write (default CORPUS/replay-report.json)");
  app.add_flag("--json", json, "print the JSON report instead of the table");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli_exit(app, e);
  }
  ReplayOutcome out = merge_replay_reports(dir, reports, output);
  std::fputs(json ? out.report_json.c_str() : out.table.c_str(), stdout);
  return out.unstable_modules || out.failed_modules ? kExitFailed : kExitOk;
}

static int body(int argc, char** argv) {
  using namespace kiln;
  CLI::App app{
      "Replay a corpus through persistent emission services, round after round, and check that\n"
      "every module's object bytes are identical in every round and on every worker.\n"
      "  kiln-replay CORPUS [--backend stamp,llvm[,cmd:...]] [--rounds N] [-j N] [--report FILE] [--shard K/N]\n"
      "  kiln-replay merge CORPUS [REPORT.json...] [-o FILE] [--json]",
      "kiln-replay"};
  app.set_version_flag("--version", version_line("kiln-replay"));
  if (argc > 1 && std::string(argv[1]) == "merge") return merge_body(argc - 1, argv + 1);
  ReplayOptions options;
  std::string backends = "llvm", profile = "fast", device = "cpu", shard;
  app.add_option("corpus", options.corpus_dir, "corpus directory")->required();
  app.add_option("--backend", backends, "comma-separated back ends (llvm, stamp, cmd:...)");
  app.add_option("--profile", profile, "fast, balanced or release")
      ->check(CLI::IsMember({"fast", "balanced", "release"}));
  app.add_option("--rounds", options.rounds, "rounds over the corpus");
  app.add_option("-j,--jobs", options.jobs, "CPU workers per service");
  app.add_option("--device", device, "cpu, cuda, or cuda,cpu: where stamp's stages run (cuda: device 0)");
  app.add_option("--gpu-streams", options.gpu_streams,
                 "--device cuda: executors (CUDA streams), each with a host thread")
      ->check(CLI::Range(1, 64));
  app.add_option("--gpu-batch", options.gpu_batch_instructions,
                 "--device cuda: modules go in batches of at least this many IR instructions")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 31));
  app.add_option("--report", options.report_path, "JSON report path (default CORPUS/replay-report.json)");
  app.add_option("--shard", shard,
                 "only shard K of N of the modules (default report CORPUS/replay-report.shard-K-of-N.json)");
  bool json = false;
  app.add_flag("--json", json, "print the JSON report instead of the table");
  std::string reader;
  app.add_option("--reader", reader,
                 "stamp's bitcode reader: direct (the default: LLVM's parser only for what it declines) or llvm")
      ->check(CLI::IsMember({"direct", "llvm"}));
  SelectionOptions selection;
  selection.add_to(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli_exit(app, e);
  }
  selection.apply();
  if (!reader.empty()) kiln::set_reader_choice(reader);
  options.shard = shard_option(shard, app.count("--shard"));
  options.cpu = options.cuda = false;
  std::stringstream devices(device);
  for (std::string d; std::getline(devices, d, ',');) {
    if (d == "cpu") options.cpu = true;
    else if (d == "cuda") options.cuda = true;
    else if (!d.empty()) throw KilnError(kExitUsage, "", "--device " + d + ": expected cpu or cuda");
  }
  if (!options.cpu && !options.cuda) throw KilnError(kExitUsage, "", "--device names no device");
  options.profile = parse_profile(profile);
  std::stringstream ss(backends);
  for (std::string b; std::getline(ss, b, ',');)
    if (!b.empty()) options.backends.push_back(b);
  if (options.backends.empty()) throw KilnError(kExitUsage, "", "--backend names no back end");
  ReplayOutcome out = run_replay(options);
  std::fputs(json ? out.report_json.c_str() : out.table.c_str(), stdout);
  return out.unstable_modules || out.failed_modules ? kExitFailed : kExitOk;
}

int main(int argc, char** argv) {
  // LLVM work outside the workers too: a fatal error is one line and exit 3, not
  // "LLVM ERROR" and exit 1.
  kiln::install_llvm_fatal_handlers();
  return kiln::run_tool("kiln-replay", body, argc, argv);
}
