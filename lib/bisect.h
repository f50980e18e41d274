// kiln-bisect: from a test that fails only on a candidate back end's objects to the one
// function (or the few that interact) it miscompiles. Each probe rebuilds the project
// through kiln-capture with a selection (kiln-selection(5)) saying which functions the
// candidate emits, everything else going to the trusted back end (llvm), and reruns
// the test. See kiln-bisect(1).
#pragma once
#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace kiln {

// kiln-bisect's own exit codes besides lib/base/error.h's (0, 2, 3, 5).
constexpr int kBisectNothing = 1;         // the test passes with everything on the candidate
constexpr int kBisectTrustedFails = 8;    // it fails (or the build does) with everything trusted
constexpr int kBisectInconclusive = 9;    // the narrowed set does not fail on its own (flaky?)
constexpr int kBisectCleanFails = 10;     // the clean command failed or timed out (the state is kept)

// ---- The search (pure: tests call it with a simulated test) -------------------------
// `fails(set, left)` probes the test with exactly the items `set` (sorted indexes) on
// the candidate, while `left` candidates remain. Given that all `candidates` together fail and none of them passes, returns
// a minimal failing subset: one item when one item alone makes the test fail, more when
// only a combination does. Each halving costs one probe when the first half fails and
// two otherwise, so one culprit among n takes at most 2*ceil(log2 n) probes.
using FailsProbe = std::function<bool(const std::vector<size_t>& set, size_t left)>;
std::vector<size_t> narrow_culprits(const std::vector<size_t>& candidates, const FailsProbe& fails);

// What the candidate may emit: a function of a module (stamp decides per function), or
// a whole module (function empty: a cmd: back end takes whole modules).
struct BisectItem {
  std::string module, function;
  bool operator==(const BisectItem&) const = default;
};
// The selection file (kiln-selection(5)) giving the candidate exactly `chosen` of
// `items`: a `module ID` line where every item of a module is chosen, else one
// `function ID NAME` line per chosen function. Sorted, so one set has one text.
// Modules in `listed` always get function lines: a module line would also select the
// functions that are not items there (those --exclude keeps on llvm).
std::string selection_text(const std::vector<BisectItem>& items, const std::vector<size_t>& chosen,
                           const std::set<std::string>& listed = {});

// ---- The tool ------------------------------------------------------------------------
struct BisectOptions {
  std::string build_dir = ".";
  std::string build_command, test_command, clean_command;  // clean: default `cargo clean` for a Cargo project
  std::string candidate = "stamp", trusted = "llvm";
  std::string state_dir;                  // default BUILD_DIR/.kiln-bisect
  std::vector<std::string> exclude;       // function names kept on the trusted back end
  int repeat = 1;                         // test runs per probe; any failure fails the probe
  double test_timeout = 600, build_timeout = 3600;  // seconds; a test past its time fails
  bool verbose = false;                   // step lines on stderr even when it is not a terminal
  std::string kiln_capture;               // default: next to this program, else on PATH
};

struct BisectCulprit {
  std::string module, crate, function, demangled;
};

struct BisectOutcome {
  int exit_code = 0;
  std::string message;                     // one line: the finding, or why there is none
  std::vector<BisectCulprit> culprits;
  size_t items = 0, probes = 0, test_runs = 0, resumed_probes = 0;
  double bound = 0;                        // 2*log2(items) + 10: the test runs the issue allows
  std::string repro_dir, state_dir;
  std::string to_json() const;
  std::string to_text() const;
};

// Runs (or resumes, from the state directory) a bisect. Throws KilnError for usage and
// I/O errors, and with 128 + the signal's number when SIGINT/SIGTERM/SIGHUP stopped a
// probe: what was probed before stays in the state, and the same command resumes.
BisectOutcome run_bisect(const BisectOptions& options);

// The reproducer directory for the culprits found (bisect_repro.cpp).
struct ReproInput {
  const BisectOptions* options = nullptr;
  std::string corpus_dir, kiln_capture, kiln_emit, dir;
  std::vector<BisectCulprit> culprits;
  std::string selection;  // the culprits alone, as a selection file's text
};
void write_reproducer(const ReproInput& in);

}  // namespace kiln
