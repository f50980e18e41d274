// kiln-measure: time builds, compare code sizes, and gate CI on the results.
// Only the command line lives here; the jobs are in lib/measure*.cpp.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>

#include "error.h"
#include "hwprofile.h"
#include "measure.h"
#include "version.h"

namespace {

int body(int argc, char** argv) {
  CLI::App app{"Time a candidate build against a baseline, compare code sizes, gate CI on the results.",
               "kiln-measure"};
  app.set_version_flag("--version", kiln::version_line("kiln-measure"));
  app.require_subcommand(1);
  app.footer("See kiln-measure(1) for the report formats and exit statuses.");

  kiln::BuildOptions build;
  kiln::ReportOutputs build_outputs;
  uint64_t seed = 0;
  CLI::App* build_cmd = app.add_subcommand("build", "Time two build commands, interleaved, in separate target dirs");
  build_cmd->add_option("--baseline", build.baseline_command, "Baseline build command (run with /bin/sh -c)")
      ->required()
      ->type_name("CMD");
  build_cmd->add_option("--candidate", build.candidate_command, "Candidate build command")
      ->required()
      ->type_name("CMD");
  build_cmd->add_option("--runs", build.runs, "Timed runs per variant")
      ->required()
      ->type_name("N")
      ->check(CLI::Range(1, 1000000));
  build_cmd->add_option("--warmup", build.warmup, "Untimed runs per variant first")
      ->capture_default_str()
      ->type_name("K")
      ->check(CLI::Range(0, 1000000));
  build_cmd->add_option("--prepare", build.prepare_command, "Command run before every run, untimed (e.g. a clean)")
      ->type_name("CMD");
  build_cmd
      ->add_option("--timeout", build.timeout_seconds,
                   "Kill a prepare, warm-up or timed run (its whole process group) after SECONDS; default: none")
      ->type_name("SECONDS")
      ->check(CLI::PositiveNumber);
  build_cmd->add_option("--workdir", build.workdir, "Keep the target dirs in DIR/baseline and DIR/candidate")
      ->type_name("DIR");
  CLI::Option* seed_option =
      build_cmd->add_option("--seed", seed, "Seed of the random run order (default: random)")->type_name("SEED");
  build_cmd->add_option("--json", build_outputs.json_path, "Write the JSON report to FILE")->type_name("FILE");
  build_cmd->add_option("--markdown", build_outputs.markdown_path, "Write the Markdown table to FILE")
      ->type_name("FILE");
  build_cmd->add_option("--svg", build_outputs.svg_path, "Write an SVG chart of the runs to FILE")->type_name("FILE");

  std::string size_baseline, size_candidate;
  kiln::ReportOutputs size_outputs;
  CLI::App* size_cmd = app.add_subcommand("size", "Compare section sizes of two stripped ELF files");
  size_cmd->add_option("--baseline", size_baseline, "Baseline object or executable")->required()->type_name("FILE");
  size_cmd->add_option("--candidate", size_candidate, "Candidate object or executable")->required()->type_name("FILE");
  size_cmd->add_option("--json", size_outputs.json_path, "Write the JSON report to FILE")->type_name("FILE");
  size_cmd->add_option("--markdown", size_outputs.markdown_path, "Write the Markdown table to FILE")->type_name("FILE");

  std::vector<std::string> gate_reports;
  std::string min_speedup = "10%", max_size_ratio = "1.5", max_memory_ratio = "1.5";
  CLI::App* gate_cmd = app.add_subcommand("gate", "Pass or fail a build or size report against thresholds");
  gate_cmd->add_option("REPORT", gate_reports, "Build or size report(s) written with --json")->required();
  gate_cmd->add_option("--min-speedup", min_speedup, "Least speedup (baseline/candidate wall median): 10%, 1.1x or 0.1")
      ->capture_default_str()
      ->type_name("SPEEDUP");
  gate_cmd->add_option("--max-size-ratio", max_size_ratio, "Most candidate/baseline .text size: 1.5, 1.5x or 50%")
      ->capture_default_str()
      ->type_name("RATIO");
  gate_cmd->add_option("--max-memory-ratio", max_memory_ratio, "Most candidate/baseline peak RSS of a build, or off")
      ->capture_default_str()
      ->type_name("RATIO");

  std::string phases_corpus;
  kiln::ReportOutputs phases_outputs;
  CLI::App* phases_cmd = app.add_subcommand("phases", "Where a build through kiln-capture spent its time");
  phases_cmd->add_option("CORPUS", phases_corpus, "The corpus kiln-capture wrote")->required();
  phases_cmd->add_option("--json", phases_outputs.json_path, "Write the JSON report to FILE")->type_name("FILE");
  phases_cmd->add_option("--markdown", phases_outputs.markdown_path, "Write the Markdown tables to FILE")->type_name("FILE");
  phases_cmd->add_option("--svg", phases_outputs.svg_path, "Write the timeline as SVG to FILE")->type_name("FILE");

  bool hw_json = false;
  CLI::App* hw_cmd = app.add_subcommand("hw", "Show the hardware profile that reports embed");
  hw_cmd->add_flag("--json", hw_json, "Print the profile as JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11's own codes are 100 and up; kiln documents 2 for every usage error.
    return kiln::cli_exit(app, e);
  }

  if (build_cmd->parsed()) {
    if (*seed_option) build.seed = seed;
    return kiln::run_build_command(build, build_outputs);
  }
  if (phases_cmd->parsed()) return kiln::run_phases_command(phases_corpus, phases_outputs);
  if (size_cmd->parsed()) return kiln::run_size_command(size_baseline, size_candidate, size_outputs);
  if (gate_cmd->parsed()) {
    kiln::GateThresholds thresholds;
    thresholds.min_speedup = kiln::parse_min_speedup(min_speedup);
    thresholds.max_size_ratio = kiln::parse_max_size_ratio(max_size_ratio);
    thresholds.max_memory_ratio = kiln::parse_max_memory_ratio(max_memory_ratio);
    return kiln::run_gate_command(gate_reports, thresholds);
  }
  std::string profile = kiln::hardware_profile_json();
  std::fputs((hw_json ? profile + "\n" : kiln::hardware_profile_table(profile)).c_str(), stdout);
  return kiln::kExitOk;
}

}  // namespace

int main(int argc, char** argv) { return kiln::run_tool("kiln-measure", body, argc, argv); }
