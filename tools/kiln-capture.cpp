// kiln-capture: capture a real build's bitcode into a corpus (and optionally emit its
// objects with a kiln back end). This driver links no LLVM; the compiler wrappers the
// build calls, and `add`, are kiln-capture-llvm, beside it.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backend.h"
#include "capture.h"
#include "capture_service.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "selection.h"
#include "version.h"

// `add` reads bitcode with LLVM's parser: kiln-capture-llvm add -o CORPUS FILE... does
// it (--reader, if given, is in KILN_READER by now).
[[noreturn]] static void run_add_in_llvm_half(const std::string& corpus, const std::vector<std::string>& files) {
  const std::string path = kiln::find_capture_llvm();
  std::vector<std::string> words = {path, "add", "-o", corpus};
  words.insert(words.end(), files.begin(), files.end());
  std::vector<char*> args;
  for (auto& w : words) args.push_back(w.data());
  args.push_back(nullptr);
  ::execv(path.c_str(), args.data());
  throw kiln::KilnError(kiln::kExitMissingTool, path, "cannot run: " + kiln::errno_reason(errno));
}

static int body(int argc, char** argv) {
  using namespace kiln;
  const char* role = std::getenv(kEnvRole);
  if (role && std::strcmp(role, "service") == 0) return stamp_service_main();  // kiln-capture --device's

  CLI::App app{
      "Capture the LLVM bitcode of every module of a real build into a kiln corpus.\n"
      "  kiln-capture -o CORPUS [--backend native|llvm|stamp|cmd:...] [--route bitcode|plugin] [--profile P] -- cargo build ...\n"
      "  kiln-capture add -o CORPUS FILE.bc...\n"
      "  kiln-capture merge -o OUT CORPUS...\n"
      "  kiln-capture filter -o OUT CORPUS [--ids FILE] [--crate NAME] [--reason TEXT [--reason-backend B]]",
      "kiln-capture"};
  app.set_version_flag("--version", version_line("kiln-capture"));
  CaptureOptions options;
  app.add_option("-o,--corpus", options.corpus_dir, "corpus directory to create or add to");
  app.add_option("--backend", options.backend, "native (capture only), llvm, stamp, or 'cmd:TOOL {in} -o {out}'");
  app.add_option("--profile", options.profile, "fast, balanced or release (see kiln-capture(1))")
      ->check(CLI::IsMember({"fast", "balanced", "release"}));
  app.add_flag("--fallback", options.fallback, "when kiln fails on a module, use the native compiler for it");
  app.add_flag("--verify", options.verify, "run LLVM's IR verifier on the bitcode the compilers write");
  app.add_option("--device", options.device, "run stamp's stages in one service for the whole build, on cuda or cpu")
      ->check(CLI::IsMember({"cuda", "cpu"}));
  app.add_option("--route", options.route,
                 "bitcode (keep every module's bitcode; the default) or plugin (stamp inside rustc, for speed)")
      ->check(CLI::IsMember({"bitcode", "plugin"}));
  app.add_option("command", options.command, "the build command, after --");
  app.allow_extras(false);

  std::string add_corpus;
  std::vector<std::string> add_files;
  auto* add = app.add_subcommand("add", "import loose bitcode files");
  add->add_option("-o,--corpus", add_corpus, "corpus directory")->required();
  add->add_option("files", add_files, "bitcode files")->required();

  std::string merge_out;
  std::vector<std::string> merge_in;
  auto* merge = app.add_subcommand("merge", "merge corpora into a new one");
  merge->add_option("-o,--out", merge_out, "new corpus directory")->required();
  merge->add_option("corpora", merge_in, "corpora to merge")->required();

  std::string filter_out, filter_in, ids_file;
  CorpusFilter filter;
  auto* filt = app.add_subcommand("filter", "copy selected modules into a new corpus");
  filt->add_option("-o,--out", filter_out, "new corpus directory")->required();
  filt->add_option("corpus", filter_in, "source corpus")->required();
  filt->add_option("--ids", ids_file, "file with one module id per line");
  filt->add_option("--crate", filter.crates, "keep modules of this crate (repeatable)");
  filt->add_option("--reason", filter.reason, "keep modules whose census reasons contain this text");
  filt->add_option("--reason-backend", filter.backend, "only match reasons of this back end");

  std::string reader;
  app.add_option("--reader", reader,
                 "stamp's bitcode reader: direct (the default: LLVM's parser only for what it declines) or llvm")
      ->check(CLI::IsMember({"direct", "llvm"}));
  std::string candidate_functions, candidate_hash;
  app.add_option("--candidate-functions", candidate_functions,
                 "a selection file (kiln-selection(5)): only its functions go to the back end, the rest to llvm");
  app.add_option("--candidate-hash", candidate_hash,
                 "only functions whose name's xxh3-64 ends in these binary digits go to the back end")
      ->excludes("--candidate-functions");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli_exit(app, e);
  }
  if (!reader.empty()) kiln::set_reader_choice(reader);
  if (*add) run_add_in_llvm_half(add_corpus, add_files);
  if (*merge) {
    merge_corpora(merge_in, merge_out, {}, "merge");
    std::printf("merged %zu corpora into %s\n", merge_in.size(), merge_out.c_str());
    return kExitOk;
  }
  if (*filt) {
    if (!ids_file.empty()) filter.ids = read_id_list(ids_file);
    merge_corpora({filter_in}, filter_out, filter, "filter");
    std::printf("%zu module(s) in %s\n", Corpus::open(filter_out).modules().size(), filter_out.c_str());
    return kExitOk;
  }
  // The build command is only what follows "--": a word before it is a mistyped
  // subcommand or option (kiln-capture bogus -o x), not a build to run in a new corpus.
  int dash = 1;
  while (dash < argc && std::strcmp(argv[dash], "--") != 0) ++dash;
  std::vector<std::string> after_dash(argv + std::min(dash + 1, argc), argv + argc);
  if (!options.command.empty() && options.command != after_dash)
    throw KilnError(kExitUsage, "",
                    "unexpected argument '" + options.command[0] +
                        "': not a subcommand (add, merge, filter); the build command goes after --");
  if (options.corpus_dir.empty()) throw KilnError(kExitUsage, "", "-o CORPUS is required (see --help)");
  // Checked before the build starts; the wrappers find it through KILN_SELECTION.
  if (!candidate_hash.empty()) candidate_functions = selection_file_for_hash(candidate_hash, options.corpus_dir);
  if (!candidate_functions.empty()) use_selection_file(candidate_functions);
  return run_capture(options);
}

int main(int argc, char** argv) { return kiln::run_tool("kiln-capture", body, argc, argv); }
