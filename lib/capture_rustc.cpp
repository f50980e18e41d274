// The rustc wrapper. Cargo runs `WRAPPER RUSTC ARGS...`. For a crate to capture:
//   1. rustc ARGS -Clinker-plugin-lto=yes -Clto=off runs no LLVM code generation: its
//      codegen units are bitcode. For a crate that is only an rlib, rustc archives
//      them into OUT/libCRATE{extra}.rlib itself; for anything else (binaries, tests,
//      other crate types) it stops before linking (-Zno-link, RUSTC_BOOTSTRAP=1) and
//      leaves OUT/CRATE{extra}.*.rcgu.o and OUT/CRATE{extra}.rlink;
//   2. each unit's bitcode is stored in the corpus and emitted by the selected back end;
//   3. the objects replace the bitcode members of the rlib, which is written again with
//      a fresh symbol index (lib/ar_archive.h), or replace the unit files, and
//      rustc ARGS(with the .rlink as input) -Zlink-only finishes the binary.
// Archiving in process saves a second rustc per library crate (its start, reading the
// crate's metadata again); KILN_RLIB_REWRITE=0 turns it off, for comparisons.
// With --backend native, rustc runs unchanged plus -Csave-temps, and the kept
// pre-codegen bitcode (*.rcgu.bc) is stored.
// --fallback: a unit the selected back end cannot emit is emitted by `llvm` (rustc's
// own code generator) instead, so the crate's metadata from step 1 stays valid.
#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

#include "ar_archive.h"
#include "bitcode.h"
#include "capture.h"
#include "capture_args.h"
#include "capture_rustc.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "hash.h"
#include "isolate.h"
#include "jobserver.h"
#include "plugin_payload.h"
#include "parallel.h"
#include "process.h"
#include "timeutil.h"

namespace kiln {

namespace {

struct OutputFile {
  std::string path, cgu;
};

// Files OUT/PREFIX.*SUFFIX this invocation left (by name, and by an inode change since
// `since`): a unit that incremental compilation reuses is hard-linked from rustc's
// incremental directory with its old modification time, but the link changes its ctime.
std::vector<OutputFile> list_outputs(const std::string& dir, const std::string& prefix, const std::string& suffix,
                                     time_t since) {
  std::vector<OutputFile> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) throw KilnError(kExitIo, dir, "cannot list the output directory: " + errno_reason(errno));
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    std::string middle = unit_cgu(name, prefix, suffix);
    if (middle.empty()) continue;
    struct stat st {};
    std::string path = dir + "/" + name;
    if (::stat(path.c_str(), &st) != 0 || std::max(st.st_mtime, st.st_ctime) + 1 < since) continue;
    out.push_back({path, middle});
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const OutputFile& a, const OutputFile& b) { return a.path < b.path; });
  return out;
}

ModuleRecord module_record(const RustcCall& c, const std::string& bytes, const std::string& cgu,
                           const std::string& invocation) {
  ModuleRecord m;
  m.bytes = bytes.size();
  m.triple = bitcode_triple(bytes);
  m.producer = bitcode_producer(bytes);
  m.tool = "rustc";
  m.crate = c.crate_name;
  m.cgu = cgu;
  m.args = c.args;
  m.args_hash = args_hash(c.args);
  m.opt_level = c.opt_level;
  m.debuginfo = c.debuginfo;
  m.cwd = current_directory();
  m.invocation = invocation;
  m.time = iso8601_now();
  return m;
}


// Removes the capture route's own leftovers so a native rerun starts clean.
void remove_outputs(const std::vector<OutputFile>& files) {
  for (const auto& f : files) ::unlink(f.path.c_str());
}

int capture_native(const WrapperSettings& s, const std::string& rustc, const RustcCall& c, const std::string& id) {
  Stopwatch clock;
  Phases phases = {{"startup", g_startup_seconds}};
  time_t start = ::time(nullptr);
  std::vector<std::string> args = c.args;
  args.push_back("-Csave-temps");
  int rc = run_child(rustc, args);
  if (rc != 0) {
    record_invocation(s, "rustc", id, "failed", "rustc exited with status " + std::to_string(rc), c.args, 0,
                      clock.seconds());
    return rc;
  }
  std::string prefix = c.crate_name + c.extra_filename + ".";
  Corpus corpus = Corpus::open(s.corpus_dir);
  auto bitcode = list_outputs(c.out_dir, prefix, ".rcgu.bc", start);
  for (const auto& f : bitcode) {
    std::string bytes = read_file(f.path);
    ModuleRecord m = module_record(c, bytes, f.cgu, id);
    m.id = corpus.store_blob(bytes);
    corpus.append_module(m);
  }
  // -Csave-temps keeps files that a normal build deletes; remove this crate's.
  remove_outputs(bitcode);
  remove_outputs(list_outputs(c.out_dir, prefix, ".rcgu.no-opt.bc", start));
  remove_outputs(list_outputs(c.out_dir, prefix, ".rcgu.o", start));
  phases.emplace_back("rustc", clock.seconds());  // rustc with its own code generator, then storing the bitcode
  record_invocation(s, "rustc", id, "captured", "", c.args, static_cast<int>(bitcode.size()), clock.seconds(), phases);
  return 0;
}

// One codegen unit of a crate: its bitcode (a file rustc left, or a member of the rlib
// rustc archived), and what became of it.
struct Unit {
  std::string label;  // the file, or RLIB(MEMBER), for messages and receipts
  std::string cgu;
  std::string bitcode;
  size_t member = 0;  // its index among the rlib's members
  std::string id, object, error, fallback;
};

// Stores the units' bitcode in the corpus while they are emitted. The blobs are written
// and synced as one batch on a thread of their own (a sync waits on the disk, not on a
// core: 0.1 s for a crate of 175 units here, which emission now hides), and the module
// records are appended only after it, so no record names a blob a crash could lose. A
// unit that is not bitcode gets its error and is neither stored nor emitted; a failure
// to store fails every unit (`finish`).
class UnitStore {
 public:
  UnitStore(Corpus& corpus, const RustcCall& c, const std::string& id, std::vector<Unit>& units)
      : corpus_(corpus), units_(units), records_(units.size()) {
    std::vector<std::string_view> blobs;
    for (size_t i = 0; i < units.size(); ++i) {
      try {
        check_bitcode_magic(units[i].bitcode, units[i].label);
        records_[i] = module_record(c, units[i].bitcode, units[i].cgu, id);
        units[i].id = records_[i].id = xxh3_128_hex(units[i].bitcode);
        good_.push_back(i);
        blobs.push_back(units[i].bitcode);
      } catch (const KilnError& e) {
        units[i].error = e.what();
      }
    }
    blobs_ = std::move(blobs);
  }
  // Starts storing the blobs (on the thread), once nothing is forked any more.
  void start() {
    thread_ = std::thread([this] {
      try {
        corpus_.store_blobs(blobs_);
      } catch (const KilnError& e) {
        error_ = e.what();
      }
    });
  }
  ~UnitStore() {
    if (thread_.joinable()) thread_.join();
  }
  UnitStore(const UnitStore&) = delete;
  UnitStore& operator=(const UnitStore&) = delete;

  // Waits for the blobs, then records the modules (or fails every stored unit).
  void finish() {
    if (thread_.joinable()) thread_.join();
    for (size_t i : good_) {
      if (!error_.empty()) {
        units_[i].error = error_;
        continue;
      }
      try {
        corpus_.append_module(records_[i]);
      } catch (const KilnError& e) {
        units_[i].error = e.what();
      }
    }
  }

 private:
  Corpus& corpus_;
  std::vector<Unit>& units_;
  std::vector<ModuleRecord> records_;
  std::vector<size_t> good_;
  std::vector<std::string_view> blobs_;
  std::string error_;
  std::thread thread_;
};

// Emits one unit with the selected back end and, where that fails and --fallback is
// on, with llvm: rustc's own code generator is LLVM, so emitting the unit with it is
// what the native build would have done, and the crate's metadata stays valid.
// A stop signal that reached a cmd: back end's command (interrupt_signal) is the
// build's end, not the unit's failure: it propagates, with no fallback.
void emit_unit(const WrapperSettings& s, Unit& u) {
  if (!u.error.empty()) return;
  try {
    u.object = emit_for_capture(s, u.bitcode, u.id, u.label);
  } catch (const KilnError& e) {
    if (interrupt_signal() != 0) throw;
    u.error = e.what();
  }
  if (!u.error.empty() && s.fallback && s.backend != "llvm") {
    try {
      WrapperSettings native = s;
      native.backend = "llvm";
      u.object = emit_for_capture(native, u.bitcode, u.id, u.label);
      u.fallback = u.error;
      u.error.clear();
    } catch (const KilnError& e) {
      if (interrupt_signal() != 0) throw;
      u.error += "; the llvm fallback failed too: " + std::string(e.what());
    }
  }
}

// Emits the units in parallel, as rustc's own code generator would: each thread beyond
// the first holds one of cargo's jobserver tokens, so cargo -jN stays N. Every unit is
// tried: emit_unit catches its errors, so one unit's failure stops no other (the
// loop's first-exception stop never fires). done(i) follows unit i's emission.
void emit_units(const WrapperSettings& s, std::vector<Unit>& units, const std::function<void(size_t)>& done) {
  unsigned threads = std::min<unsigned>(hardware_threads(), static_cast<unsigned>(units.size()));
  Jobserver jobs = Jobserver::from_environment();
  ParallelPeak peak = parallel_for_jobserver(jobs, units.size(), threads, [&](size_t i) {
    emit_unit(s, units[i]);
    done(i);
  });
  trace_parallel_peak(kEnvTraceEmitThreads, peak);
}

// A unit's outcome as bytes (its object, error and fallback reason, each after its
// length), for a frame from the emitting process.
void put_field(std::string& out, const std::string& field) {
  const uint64_t n = field.size();
  out.append(reinterpret_cast<const char*>(&n), 8);
  out += field;
}
bool take_field(std::string_view& in, std::string& field) {
  uint64_t n = 0;
  if (in.size() < 8) return false;
  std::memcpy(&n, in.data(), 8);
  if (in.size() - 8 < n) return false;
  field.assign(in.substr(8, n));
  in.remove_prefix(8 + n);
  return true;
}

// While the emitting process runs: a stop signal (SIGINT, SIGTERM, SIGHUP) to the
// wrapper alone is passed on to it, so that it stops the cmd: back ends' commands it
// runs (in process groups of their own, which the wrapper's death would leave running),
// and remembered (stop_signal) for the wrapper to end by once it has ended. Only where
// the signal has its default action (as process.cpp's own forwarding).
std::atomic<pid_t> g_emission_pid{0};
std::atomic<int> g_emission_stop{0};
extern "C" void pass_stop_signal(int sig) {
  g_emission_stop.store(sig);
  if (pid_t pid = g_emission_pid.load(); pid > 0) ::kill(pid, sig);
}
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};

class PassStopSignals {
 public:
  explicit PassStopSignals(pid_t child) {
    g_emission_pid.store(child);
    for (size_t k = 0; k < std::size(kStopSignals); ++k) {
      if (::sigaction(kStopSignals[k], nullptr, &old_[k]) != 0 || old_[k].sa_handler != SIG_DFL) continue;
      struct sigaction action {};
      action.sa_handler = pass_stop_signal;
      sigemptyset(&action.sa_mask);
      action.sa_flags = SA_RESTART;
      installed_[k] = ::sigaction(kStopSignals[k], &action, nullptr) == 0;
    }
  }
  ~PassStopSignals() {
    for (size_t k = 0; k < std::size(kStopSignals); ++k)
      if (installed_[k]) ::sigaction(kStopSignals[k], &old_[k], nullptr);
    g_emission_pid.store(0);
  }
  PassStopSignals(const PassStopSignals&) = delete;
  PassStopSignals& operator=(const PassStopSignals&) = delete;

 private:
  struct sigaction old_[std::size(kStopSignals)]{};
  bool installed_[std::size(kStopSignals)] = {};
};

// The units emitted in a process forked for them (emit_units' threads, as before), so
// that a crash of the back end or of LLVM, or LLVM's fatal error, ends that process and
// not the wrapper: each unit's outcome comes back as a frame (index, length, outcome)
// as soon as it is done, and collect() says which units' never came. Those are then
// emitted one at a time in isolated workers (emit_lost_units), where the one that
// crashes fails alone, with --fallback as any failure. Forked before the store's thread
// starts: a process forked while another thread runs may find a lock held forever.
class EmissionChild {
 public:
  EmissionChild(const WrapperSettings& s, std::vector<Unit>& units) : units_(units) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return;  // then in process (collect)
    std::fflush(nullptr);  // or the child would write this process's buffered output again
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) {
      ::close(sv[0]);
      ::close(sv[1]);
      return;
    }
    if (pid_ == 0) {
      ::close(sv[0]);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a wrapper killed takes its emission with it
      if (::getppid() != parent) _exit(kExitFailed);
      const struct rlimit no_core { 0, 0 };
      ::setrlimit(RLIMIT_CORE, &no_core);  // a crash is reported and redone, not dumped
      for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP}) ::signal(sig, SIG_DFL);  // no stack dump
      std::mutex sending;
      int status = kExitOk;
      try {
        emit_units(s, units, [&](size_t i) {
          std::string outcome;
          put_field(outcome, units[i].object);
          put_field(outcome, units[i].error);
          put_field(outcome, units[i].fallback);
          const uint64_t head[2] = {i, outcome.size()};
          std::lock_guard<std::mutex> lock(sending);
          if (!send_all(sv[1], reinterpret_cast<const char*>(head), sizeof head) ||
              !send_all(sv[1], outcome.data(), outcome.size()))
            _exit(kExitFailed);
        });
      } catch (...) {  // a stop signal, or what emit_unit does not catch: the units left are redone
        status = kExitFailed;
      }
      std::fflush(nullptr);
      _exit(status);
    }
    ::close(sv[1]);
    fd_ = sv[0];
  }
  ~EmissionChild() {
    if (fd_ >= 0) ::close(fd_);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {}
    }
  }
  EmissionChild(const EmissionChild&) = delete;
  EmissionChild& operator=(const EmissionChild&) = delete;

  // Takes every outcome the child sends until it ends, and reaps it; returns the units
  // whose outcome never came (in order). Without a child (no fork), emits here.
  std::vector<size_t> collect(const WrapperSettings& s) {
    if (fd_ < 0) {
      emit_units(s, units_, [](size_t) {});
      return {};
    }
    PassStopSignals pass(pid_);
    std::vector<char> got(units_.size(), 0);
    for (uint64_t head[2]; recv_exact(fd_, reinterpret_cast<char*>(head), sizeof head);) {
      std::string outcome(head[1], '\0');
      if (head[0] >= units_.size() || !recv_exact(fd_, outcome.data(), outcome.size())) break;
      std::string_view in = outcome;
      Unit& u = units_[head[0]];
      if (take_field(in, u.object) && take_field(in, u.error) && take_field(in, u.fallback)) got[head[0]] = 1;
    }
    ::close(fd_);
    fd_ = -1;
    g_emission_pid.store(0);  // before the reaping: a late stop signal must not reach a reused pid
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {}
    pid_ = -1;
    std::vector<size_t> lost;
    for (size_t i = 0; i < units_.size(); ++i)
      if (!got[i]) lost.push_back(i);
    return lost;
  }

 private:
  std::vector<Unit>& units_;
  pid_t pid_ = -1;
  int fd_ = -1;
};

// The units whose emission ended with its process: each again in a worker of its own,
// one at a time (the wrapper's own token), where a crash fails that unit alone ("LABEL:
// the back end: crashed (SIGSEGV)"); with --fallback, llvm then emits it, isolated too.
// Units the back end had finished come from the object cache.
void emit_lost_units(const WrapperSettings& s, std::vector<Unit>& units, const std::vector<size_t>& lost) {
  auto label = [&](size_t k) { return units[lost[k]].label + ": the back end"; };
  run_isolated(
      lost.size(), 1,
      [&](size_t k) {
        const Unit& u = units[lost[k]];
        return emit_for_capture(s, u.bitcode, u.id, u.label);
      },
      [&](size_t k, IsolatedResult r) { (r.ok ? units[lost[k]].object : units[lost[k]].error) = std::move(r.text); },
      label);
  for (size_t i : lost) {
    Unit& u = units[i];
    if (u.error.empty() || !s.fallback || s.backend == "llvm") continue;
    try {
      WrapperSettings native = s;
      native.backend = "llvm";
      u.object = run_isolated_one(u.label + ": the llvm fallback",
                                  [&] { return emit_for_capture(native, u.bitcode, u.id, u.label); });
      u.fallback = u.error;
      u.error.clear();
    } catch (const KilnError& e) {
      u.error += "; the llvm fallback failed too: " + std::string(e.what());
    }
  }
}

// The first unit's error ("" when none failed); warns of each unit that fell back and
// returns the first such reason in `fallback`.
std::string unit_failure(const RustcCall& c, const std::vector<Unit>& units, std::string& fallback) {
  std::string failure;
  for (const Unit& u : units) {
    if (!u.error.empty() && failure.empty()) failure = u.error;
    if (!u.fallback.empty()) {
      std::fprintf(stderr, "kiln-capture: warning: crate %s: %s; emitted with llvm instead\n", c.crate_name.c_str(),
                   u.fallback.c_str());
      if (fallback.empty()) fallback = u.fallback;
    }
  }
  return failure;
}

// The units of an rlib that rustc archived itself: its bitcode members.
std::vector<Unit> rlib_units(const std::string& rlib, const std::vector<ArchiveMember>& members,
                             const std::string& prefix) {
  std::vector<Unit> units;
  for (size_t k = 0; k < members.size(); ++k) {
    std::string cgu = unit_cgu(members[k].name, prefix, ".rcgu.o");
    if (cgu.empty()) continue;
    Unit u;
    u.label = rlib + "(" + members[k].name + ")";
    u.cgu = cgu;
    u.bitcode = members[k].bytes;
    u.member = k;
    units.push_back(std::move(u));
  }
  return units;
}

// The rustc wrapper's route, in its phases: rustc writes bitcode; its units are
// stored in the corpus and emitted by the back end; the rlib is rewritten with the
// objects (rlib_rewrite_obstacle is ""), or rustc -Zlink-only finishes the crate.
int capture_and_emit(const WrapperSettings& s, const std::string& rustc, const RustcCall& c, const std::string& id) {
  Stopwatch clock, phase;
  Phases phases = {{"startup", g_startup_seconds}};
  time_t start = ::time(nullptr);
  const char* rewrite_env = std::getenv("KILN_RLIB_REWRITE");
  const bool rewrite = rlib_rewrite_obstacle(c).empty() && !(rewrite_env && std::string(rewrite_env) == "0");
  // Settings that conflict with the bitcode route are dropped from the first step.
  // Incremental compilation stays: a unit rustc reuses is still left in OUT (linked
  // from its incremental directory), and its object comes from the corpus's cache.
  std::vector<std::string> env, first = bitcode_step_args(c.args, !rewrite);
  if (!rewrite) {
    env.push_back("RUSTC_BOOTSTRAP=1");  // for -Zno-link
    first = with_plain_mangling(s, rustc, c, std::move(first));
  }
  int rc = run_child(rustc, first, env);
  phases.emplace_back("rustc", phase.lap());
  if (rc != 0) {  // a compile error is the user's: rustc has said why
    record_invocation(s, "rustc", id, "failed", "rustc exited with status " + std::to_string(rc), c.args, 0,
                      clock.seconds(), phases);
    return rc;
  }

  const std::string stem = c.crate_name + c.extra_filename, prefix = stem + ".";
  const std::string rlink = c.out_dir + "/" + stem + ".rlink", rlib = c.out_dir + "/lib" + stem + ".rlib";
  std::vector<Unit> units;
  std::vector<OutputFile> files;
  std::string archive;  // the rlib's bytes, which its members view
  std::vector<ArchiveMember> members;
  std::string failure;
  if (rewrite) {
    try {
      archive = read_file(rlib);
      members = read_archive(rlib, archive);
      units = rlib_units(rlib, members, prefix);
    } catch (const KilnError& e) {
      failure = e.what();
    }
  } else {
    files = list_outputs(c.out_dir, prefix, ".rcgu.o", start);
    for (const OutputFile& f : files) {
      Unit u;
      u.label = f.path;
      u.cgu = f.cgu;
      u.bitcode = read_file(f.path);
      units.push_back(std::move(u));
    }
  }
  Corpus corpus = Corpus::open(s.corpus_dir);
  {
    UnitStore store(corpus, c, id, units);
    EmissionChild emission(s, units);
    store.start();
    const std::vector<size_t> lost = emission.collect(s);
    phases.emplace_back("emit", phase.lap());
    store.finish();
    phases.emplace_back("store", phase.lap());  // what is left of it once emission is done
    if (int sig = g_emission_stop.load()) {
      // Stopped: nothing half-made is left (as for a failure), and the wrapper ends by
      // the signal, so that cargo says which.
      remove_outputs(files);
      ::unlink(rewrite ? rlib.c_str() : rlink.c_str());
      record_invocation(s, "rustc", id, "failed", std::string("interrupted by ") + signal_name(sig), c.args,
                        static_cast<int>(units.size()), clock.seconds(), phases);
      std::fflush(nullptr);
      ::signal(sig, SIG_DFL);
      ::raise(sig);
    }
    if (!lost.empty()) {
      emit_lost_units(s, units, lost);
      phases.emplace_back("emit", phase.lap());
    }
  }

  std::string fallback;
  if (failure.empty()) failure = unit_failure(c, units, fallback);
  if (failure.empty() && units.empty())
    failure = (rewrite ? rlib + ": rustc archived no " : c.out_dir + ": rustc left no ") + prefix +
              "*.rcgu.o bitcode";
  if (failure.empty()) {
    try {
      if (rewrite) {
        for (const Unit& u : units) members[u.member].bytes = u.object;
        write_file_atomic(rlib, archive_bytes(rlib, members).pieces, Durability::kAtomic);
      } else {
        for (Unit& u : units) write_file_atomic(u.label, u.object, Durability::kAtomic);  // rustc does not sync its own
      }
    } catch (const KilnError& e) {
      failure = e.what();
    }
  }
  if (!failure.empty()) {
    // Nothing half-made is left for cargo or the linker to take: no bitcode posing as
    // objects, no rlib holding bitcode.
    remove_outputs(files);
    ::unlink(rewrite ? rlib.c_str() : rlink.c_str());
    std::fprintf(stderr, "kiln-capture: error: crate %s (%s): %s\n", c.crate_name.c_str(), c.input.c_str(),
                 failure.c_str());
    record_invocation(s, "rustc", id, "failed", failure, c.args, static_cast<int>(units.size()), clock.seconds(),
                      phases);
    return kExitFailed;
  }
  if (rewrite) {
    phases.emplace_back("archive", phase.lap());
  } else {
    std::vector<std::string> link = c.args;
    link[c.input_index] = rlink;  // before the LTO settings go: the index is the build's
    link = link_step_args(link);
    link = with_plain_mangling(s, rustc, c, std::move(link));
    link.push_back("-Zlink-only");
    rc = run_child(rustc, link, {"RUSTC_BOOTSTRAP=1"});
    ::unlink(rlink.c_str());
    phases.emplace_back("link", phase.lap());
    if (rc != 0) {
      record_invocation(s, "rustc", id, "failed", "rustc -Zlink-only failed with status " + std::to_string(rc),
                        c.args, static_cast<int>(units.size()), clock.seconds(), phases);
      return rc;
    }
  }
  record_invocation(s, "rustc", id, fallback.empty() ? "captured" : "fallback", fallback, c.args,
                    static_cast<int>(units.size()), clock.seconds(), phases);
  return 0;
}

}  // namespace

int rustc_wrapper_main(int argc, char** argv) {
  const RustcWrapperCall w = start_rustc_wrapper(argc, argv);
  if (w.settings.backend == "native") return end_as_rustc_did(capture_native(w.settings, w.rustc, w.call, w.id));
  if (w.settings.route == "plugin") return end_as_rustc_did(capture_in_rustc(w.settings, w.rustc, w.call, w.id));
  return end_as_rustc_did(capture_and_emit(w.settings, w.rustc, w.call, w.id));
}

}  // namespace kiln
