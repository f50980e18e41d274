// kiln-replay-flat: replays flat IR files (kiln-flat(5)) and bitcode (read by the direct
// reader, no LLVM) through stamp's executors,
// on the GPU and on the CPU, round after round; checks that every module's object is
// byte-identical on both (the CPU executor is the oracle) and reports per-stage times
// and throughput. The work is lib/stamp/replay_flat.h's; this file reads the command
// line. It links no LLVM, so it runs where LLVM is not installed (the GPU machine),
// and it takes its command line by hand so that it builds with nvcc and a C++
// compiler alone.
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "error.h"
#include "fs.h"
#include "kiln_config.h"
#include "replay_flat.h"

namespace kiln {
namespace {

const char* kUsage =
    "Replay flat IR or bitcode files through stamp's GPU and CPU executors and check identical objects.\n"
    "  kiln-replay-flat [--device cuda,cpu] [--rounds N] [--streams N] [--batch INSTR] [--order opcode|none]\n"
    "                   [--cpu-threads N] [--baseline REPORT] [--json FILE] FLAT|BC|DIR|CORPUS...\n"
    "Bitcode is read by kiln's direct reader (no LLVM): a module's stamp functions are\n"
    "replayed, what it leaves to LLVM is not; a module the reader declines is skipped.\n"
    "A DIR gives every *.flat and *.bc in it and in its subdirectories (a kiln corpus).\n"
    "Options:\n"
    "  --device LIST     cuda, cpu, or cuda,cpu (default): where the stages run\n"
    "  --rounds N        rounds over the files, at least 2 (default 5; round 1 warms up)\n"
    "  --streams N       CUDA streams, each with its own host thread and buffers (default 4)\n"
    "  --batch INSTR     modules go to the GPU in batches of at least INSTR IR instructions\n"
    "                    (consecutive files; default 32768; 1: one module per batch)\n"
    "  --cpu-threads N   also time the CPU executor with modules spread over N threads\n"
    "                    (default 1: one thread only)\n"
    "  --order WHAT      opcode: measure and encode kernels take instructions by opcode (default);\n"
    "                    none: in file order\n"
    "  --baseline FILE   a kiln-replay report from the same modules, for the ratio to llvm\n"
    "  --json FILE       also write the results as JSON\n"
    "  -h, --help        this text;  --version  the version\n"
    "Exit: 0 identical objects, 1 objects differ, 2 usage, 3 bad input, 5 I/O, 7 no usable GPU.\n";

}  // namespace

int replay_flat_main(int argc, char** argv) {
  ReplayFlatOptions o;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw KilnError(kExitUsage, "", a + " needs a value (see --help)");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    } else if (a == "--version") {
      std::printf("kiln-replay-flat %s (no LLVM%s)\n", KILN_VERSION, KILN_HAVE_CUDA ? ", CUDA kernels built" : "");
      return kExitOk;
    } else if (a == "--device") {
      o.cpu = o.cuda = false;
      std::stringstream list(value());
      for (std::string d; std::getline(list, d, ',');) {
        if (d == "cpu") o.cpu = true;
        else if (d == "cuda") o.cuda = true;
        else throw KilnError(kExitUsage, "", "--device " + d + ": expected cpu or cuda");
      }
    } else if (a == "--rounds") {
      o.rounds = std::atoi(value().c_str());
      if (o.rounds < 2) throw KilnError(kExitUsage, "", "--rounds must be at least 2 (round 1 warms up)");
    } else if (a == "--streams") {
      int n = std::atoi(value().c_str());
      if (n < 1 || n > 64) throw KilnError(kExitUsage, "", "--streams must be 1 to 64");
      o.streams = static_cast<unsigned>(n);
    } else if (a == "--batch") {
      long long n = std::atoll(value().c_str());
      if (n < 1) throw KilnError(kExitUsage, "", "--batch must be at least 1 (IR instructions)");
      o.batch_instructions = static_cast<uint64_t>(n);
    } else if (a == "--cpu-threads") {
      int n = std::atoi(value().c_str());
      if (n < 1 || n > 1024) throw KilnError(kExitUsage, "", "--cpu-threads must be 1 to 1024");
      o.cpu_threads = static_cast<unsigned>(n);
    } else if (a == "--order") {
      std::string order = value();
      if (order != "opcode" && order != "none")
        throw KilnError(kExitUsage, "", "--order " + order + ": expected opcode or none");
      o.order_by_opcode = order == "opcode";
    } else if (a == "--baseline") {
      o.baseline_path = value();
    } else if (a == "--json") {
      json_path = value();
    } else if (!a.empty() && a[0] == '-') {
      throw KilnError(kExitUsage, "", "unknown option " + a + " (see --help)");
    } else {
      o.inputs.push_back(a);
    }
  }
  if (!o.cpu && !o.cuda) throw KilnError(kExitUsage, "", "--device names no device");
  const ReplayFlatResult result = run_replay_flat(o);
  std::fputs(replay_flat_table(result).c_str(), stdout);
  if (!json_path.empty()) write_file_atomic(json_path, replay_flat_json(result));
  return result.mismatches ? kExitFailed : kExitOk;
}

}  // namespace kiln

int main(int argc, char** argv) { return kiln::run_tool("kiln-replay-flat", kiln::replay_flat_main, argc, argv); }
