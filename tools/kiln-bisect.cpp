// kiln-bisect: from a test that fails on a candidate back end's objects to the function.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>

#include "bisect.h"
#include "error.h"
#include "fs.h"
#include "isolate.h"
#include "version.h"

static int body(int argc, char** argv) {
  using namespace kiln;
  CLI::App app{
      "Find the function a candidate back end miscompiles: rebuild through kiln-capture with\n"
      "part of the functions on the candidate and the rest on llvm, rerun the test, narrow.\n"
      "  kiln-bisect --build 'cargo test --no-run' --test 'cargo test' [-C DIR] [--candidate stamp]",
      "kiln-bisect"};
  app.set_version_flag("--version", version_line("kiln-bisect"));
  BisectOptions o;
  bool json = false;
  app.add_option("-C,--build-dir", o.build_dir, "where the build and test commands run (default .)");
  app.add_option("--build", o.build_command, "the build command (/bin/sh -c), run through kiln-capture")->required();
  app.add_option("--test", o.test_command, "the test command: exit 0 passes; run through kiln-capture too")->required();
  app.add_option("--clean", o.clean_command, "run before each build (default for a Cargo project: cargo clean)");
  app.add_option("--candidate", o.candidate, "the back end under suspicion: stamp (per function) or cmd:... (per module)");
  app.add_option("--trusted", o.trusted, "the back end trusted to be right (llvm)");
  app.add_option("--state", o.state_dir, "the bisect's state, logs and reproducer (default BUILD_DIR/.kiln-bisect)");
  app.add_option("--exclude", o.exclude, "keep this function (symbol name) on the trusted back end (repeatable)");
  app.add_option("--repeat", o.repeat, "test runs per probe; any failure fails the probe (flaky tests)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--timeout", o.test_timeout, "seconds a test run may take; past them it fails (default 600)")
      ->check(CLI::PositiveNumber);
  app.add_option("--build-timeout", o.build_timeout, "seconds a build may take (default 3600)")->check(CLI::PositiveNumber);
  app.add_flag("-v,--verbose", o.verbose, "print each step on stderr also when it is not a terminal");
  app.add_flag("--json", json, "print the result as JSON");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli_exit(app, e);
  }
  if (!is_directory(o.build_dir)) throw KilnError(kExitUsage, o.build_dir, "--build-dir is not a directory");
  o.build_dir = absolute_path(o.build_dir);
  while (o.build_dir.size() > 1 && o.build_dir.back() == '/') o.build_dir.pop_back();  // one spelling in the state
  if (o.trusted != "llvm")
    throw KilnError(kExitUsage, "", "--trusted " + o.trusted + ": only llvm can take what the candidate does not");
  if (o.candidate != "stamp" && o.candidate.rfind("cmd:", 0) != 0)
    throw KilnError(kExitUsage, "", "--candidate " + o.candidate + ": expected stamp or cmd:...");
  // A cmd: back end takes whole modules: there is no function to keep off it.
  if (!o.exclude.empty() && o.candidate != "stamp")
    throw KilnError(kExitUsage, "", "--exclude keeps a function on llvm, which only --candidate stamp selects by");
  if (o.clean_command.empty()) {
    if (!path_exists(o.build_dir + "/Cargo.toml"))
      throw KilnError(kExitUsage, o.build_dir, "not a Cargo project: say how to clean it with --clean");
    o.clean_command = "cargo clean";
  }
  // The bisect decides the selection of every probe; one in the caller's environment
  // would also narrow the functions it lists.
  ::unsetenv("KILN_SELECTION");
  o.state_dir = absolute_path(o.state_dir.empty() ? o.build_dir + "/.kiln-bisect" : o.state_dir);
  o.kiln_capture = dirname_of(self_executable()) + "/kiln-capture";
  if (!path_exists(o.kiln_capture)) o.kiln_capture = find_program("kiln-capture");
  if (o.kiln_capture.empty()) throw KilnError(kExitMissingTool, "kiln-capture", "not found next to kiln-bisect nor on PATH");
  BisectOutcome out;
  try {
    out = run_bisect(o);
  } catch (const KilnError& e) {
    if (e.code() <= 128) throw;
    // A signal stopped a probe: what was probed before it is in the state.
    std::fprintf(stderr, "kiln-bisect: interrupted (%s); the same command resumes from %s\n", e.what(),
                 o.state_dir.c_str());
    return e.code();
  }
  std::fputs(json ? out.to_json().c_str() : out.to_text().c_str(), stdout);
  return out.exit_code;
}

int main(int argc, char** argv) {
  kiln::install_llvm_fatal_handlers();
  return kiln::run_tool("kiln-bisect", body, argc, argv);
}
