#include <catch2/catch.hpp>
#include <llvm/Support/ErrorHandling.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <map>

#include "backend.h"
#include "emit.h"
#include "error.h"
#include "fs.h"
#include "ir_helpers.h"
#include "isolate.h"
#include "process.h"
#include "test_helpers.h"

using namespace kiln;
using kiln_test::ScratchDir;

static const char* kMainIr = R"(
target triple = "x86_64-unknown-linux-gnu"
@fmt = private constant [17 x i8] c"add(40, 2) = %ld\0A"
@message = global ptr @fmt
declare i32 @printf(ptr, ...)
declare i64 @add(i64, i64)
define i32 @main() {
  %s = call i64 @add(i64 40, i64 2)
  %f = load ptr, ptr @message
  %r = call i32 (ptr, ...) @printf(ptr %f, i64 %s)
  ret i32 0
}
)";

TEST_CASE("the llvm back end emits x86-64 objects that link and run", "[emit]") {
  ScratchDir dir;
  write_file_atomic(dir.path + "/add.bc", kiln_test::bitcode_from_ir(kiln_test::kAddIr));
  write_file_atomic(dir.path + "/main.bc", kiln_test::bitcode_from_ir(kMainIr));
  for (const char* p : {"fast", "balanced", "release"}) {
    auto a = emit_file(dir.path + "/add.bc", dir.path + "/add.o", "llvm", parse_profile(p));
    auto m = emit_file(dir.path + "/main.bc", dir.path + "/main.o", "llvm", parse_profile(p));
    CHECK(object_problem(read_file(dir.path + "/add.o")).empty());
    CHECK(a.result.counts.functions_llvm == 1);
    CHECK(a.receipt.find("\"backend\":\"llvm\"") != std::string::npos);
    CHECK(a.receipt.find(std::string("\"profile\":\"") + p + "\"") != std::string::npos);
    ProcessOptions quiet;
    quiet.capture_stdout = true;
    auto link = run_process({"cc", "-o", dir.path + "/prog", dir.path + "/main.o", dir.path + "/add.o"}, quiet);
    REQUIRE(link.exit_code == 0);
    auto run = run_process({dir.path + "/prog"}, quiet);
    CHECK(run.exit_code == 0);
    CHECK(run.captured_stdout == "add(40, 2) = 42\n");
  }
}

TEST_CASE("emission is deterministic: the same bitcode gives the same bytes", "[emit]") {
  std::string bc = kiln_test::bitcode_from_ir(kMainIr);
  auto one = make_backend("llvm", Profile::fast)->emit(bc, "main.bc");
  auto two = make_backend("llvm", Profile::fast)->emit(bc, "main.bc");
  CHECK(one.object == two.object);
}

TEST_CASE("a cmd: back end runs an external code generator per module", "[emit]") {
  std::string llc = std::string(KILN_LLVM_AS);
  llc.replace(llc.rfind("llvm-as"), 7, "llc");
  auto backend = make_backend("cmd:" + llc + " -O0 -filetype=obj -relocation-model=pic {in} -o {out}", Profile::fast);
  auto r = backend->emit(kiln_test::bitcode_from_ir(kiln_test::kAddIr), "add.bc");
  CHECK(object_problem(r.object).empty());
  // A command that writes no object, or not an object, is an error naming the input.
  auto broken = make_backend("cmd:cp {in} {out}", Profile::fast);
  try {
    broken->emit(kiln_test::bitcode_from_ir(kiln_test::kAddIr), "add.bc");
    FAIL("expected an error");
  } catch (const KilnError& e) {
    CHECK(std::string(e.what()).find("add.bc") != std::string::npos);
    CHECK(std::string(e.what()).find("not an ELF") != std::string::npos);
  }
  CHECK_THROWS_AS(make_backend("cmd:llc", Profile::fast), KilnError);
  CHECK_THROWS_AS(make_backend("nonsense", Profile::fast), KilnError);
}

TEST_CASE("bad input to emit fails before anything is written", "[emit]") {
  ScratchDir dir;
  write_file_atomic(dir.path + "/junk.bc", "junk");
  write_file_atomic(dir.path + "/out.o", "previous object");
  CHECK_THROWS_AS(emit_file(dir.path + "/junk.bc", dir.path + "/out.o", "llvm", Profile::fast), KilnError);
  CHECK(read_file(dir.path + "/out.o") == "previous object");
  write_file_atomic(dir.path + "/arm.bc",
                    kiln_test::bitcode_from_ir("target triple = \"aarch64-unknown-linux-gnu\"\n"
                                               "define void @f() {\n  ret void\n}\n"));
  try {
    emit_file(dir.path + "/arm.bc", dir.path + "/out.o", "llvm", Profile::fast);
    FAIL("expected an error");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitBadInput);
    CHECK(std::string(e.what()).find("not x86-64") != std::string::npos);
  }
  CHECK(read_file(dir.path + "/out.o") == "previous object");
}

// One bad module fails alone: a worker that crashes or hits an LLVM fatal error is
// reported for its item only, and a new worker finishes the others.
TEST_CASE("isolated work: a crash or an LLVM fatal error fails only its item", "[emit][isolate]") {
  std::map<size_t, IsolatedResult> results;
  size_t calls = 0;
  run_isolated(
      12, 3,
      [](size_t i) -> std::string {
        LlvmStage stage("testing");
        if (i == 3) ::raise(SIGSEGV);
        if (i == 5) llvm::report_fatal_error("boom", false);
        if (i == 7) throw KilnError(kExitIo, "item7", "disk full");
        if (i == 8) ::raise(SIGABRT);
        return "answer " + std::to_string(i);
      },
      [&](size_t i, IsolatedResult r) {
        ++calls;
        results[i] = std::move(r);
      },
      [](size_t i) { return "item" + std::to_string(i); });
  CHECK(calls == 12);
  REQUIRE(results.size() == 12);
  for (size_t i : {0, 1, 2, 4, 6, 9, 10, 11}) {
    CHECK(results[i].ok);
    CHECK(results[i].text == "answer " + std::to_string(i));
  }
  CHECK(!results[3].ok);
  CHECK(results[3].crashed);
  CHECK(results[3].code == kExitBadInput);
  CHECK(results[3].text == "item3: LLVM crashed (SIGSEGV) while testing");
  CHECK(results[5].crashed);
  CHECK(results[5].text == "item5: LLVM ERROR while testing: boom");
  CHECK(!results[7].ok);
  CHECK(!results[7].crashed);
  CHECK(results[7].code == kExitIo);
  CHECK(results[7].text == "item7: disk full");
  CHECK(results[8].text == "item8: LLVM crashed (SIGABRT) while testing");
  errno = 0;
  CHECK(::waitpid(-1, nullptr, WNOHANG) == -1);  // every worker was reaped
  CHECK(errno == ECHILD);
}

// A module that makes LLVM loop would hang the whole run: its worker is stopped after
// KILN_ITEM_TIMEOUT seconds, the item reported, and the next items still run.
TEST_CASE("isolated work: an item past KILN_ITEM_TIMEOUT is stopped and reported, the others run", "[emit][isolate]") {
  kiln_test::ScopedEnv limit("KILN_ITEM_TIMEOUT", "1");
  std::map<size_t, IsolatedResult> results;
  const auto start = std::chrono::steady_clock::now();
  run_isolated(
      4, 1,
      [](size_t i) -> std::string {
        LlvmStage stage("generating code");
        if (i == 1) ::sleep(60);  // SIGTERM ends it
        if (i == 2) {
          ::signal(SIGTERM, SIG_IGN);  // SIGKILL after the grace time
          ::sleep(60);
        }
        return "answer " + std::to_string(i);
      },
      [&](size_t i, IsolatedResult r) { results[i] = std::move(r); },
      [](size_t i) { return "item" + std::to_string(i); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(results.size() == 4);
  CHECK(results[0].text == "answer 0");
  CHECK(results[3].text == "answer 3");
  for (size_t i : {1, 2}) {
    INFO(results[i].text);
    CHECK(!results[i].ok);
    CHECK(results[i].crashed);
    CHECK(results[i].code == kExitBadInput);
    CHECK(results[i].text ==
          "item" + std::to_string(i) + ": stopped after 1 s (KILN_ITEM_TIMEOUT) while generating code");
  }
  CHECK(seconds < 20);
  errno = 0;
  CHECK(::waitpid(-1, nullptr, WNOHANG) == -1);  // every worker reaped
  CHECK(errno == ECHILD);
  kiln_test::ScopedEnv bad("KILN_ITEM_TIMEOUT", "soon");
  CHECK_THROWS_WITH(run_isolated(
                        1, 1, [](size_t) { return std::string(); }, [](size_t, IsolatedResult) {},
                        [](size_t) { return std::string(); }),
                    Catch::Contains("KILN_ITEM_TIMEOUT must be a number of seconds"));
}

TEST_CASE("isolated work: an error while taking results stops the workers and propagates", "[emit][isolate]") {
  size_t seen = 0;
  CHECK_THROWS_WITH(run_isolated(
                        50, 2, [](size_t i) { return std::to_string(i); },
                        [&](size_t, IsolatedResult) {
                          if (++seen == 2) throw KilnError(kExitIo, "receipts.jsonl", "Is a directory");
                        },
                        [](size_t i) { return std::to_string(i); }),
                    "receipts.jsonl: Is a directory");
  CHECK(seen == 2);
  errno = 0;
  CHECK(::waitpid(-1, nullptr, WNOHANG) == -1);
  CHECK(errno == ECHILD);
}

TEST_CASE("one file: a crash in LLVM's reader or a fatal error in its code generator is bad input, no object",
          "[emit][isolate]") {
  ScratchDir dir;
  auto error_of = [&](const std::string& in) -> std::string {
    try {
      emit_file_isolated(in, dir.path + "/out.o", "llvm", Profile::fast);
    } catch (const KilnError& e) {
      CHECK(e.code() == kExitBadInput);
      return e.what();
    }
    return "";
  };
  std::string crash = std::string(KILN_TEST_DATA) + "/crash-sigsegv.bc";
  CHECK(error_of(crash) == crash + ": LLVM crashed (SIGSEGV) while parsing");
  write_file_atomic(dir.path + "/i386.bc", kiln_test::bitcode_from_ir(R"(
target triple = "x86_64-unknown-linux-gnu"
define i32 @h(i32 %x) #0 {
  %y = add i32 %x, 1
  ret i32 %y
}
attributes #0 = { "target-cpu"="i386" }
)"));
  CHECK(
      error_of(dir.path + "/i386.bc") ==
      dir.path +
          "/i386.bc: LLVM ERROR while generating code: 64-bit code requested on a subtarget that doesn't support it!");
  CHECK(!path_exists(dir.path + "/out.o"));
  write_file_atomic(dir.path + "/add.bc", kiln_test::bitcode_from_ir(kiln_test::kAddIr));
  CHECK(error_of(dir.path + "/add.bc").empty());
  CHECK(object_problem(read_file(dir.path + "/out.o")).empty());
}

TEST_CASE("an error LLVM's code generator reports as a diagnostic fails the module, not the process", "[emit]") {
  ScratchDir dir;
  write_file_atomic(dir.path + "/asm.bc", kiln_test::bitcode_from_ir(R"(
target triple = "x86_64-unknown-linux-gnu"
define void @f() {
  call void asm sideeffect "bogus_instruction %eax", ""()
  ret void
}
)"));
  try {
    emit_file(dir.path + "/asm.bc", dir.path + "/out.o", "llvm", Profile::fast);
    FAIL("expected an error");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitBadInput);
    CHECK(std::string(e.what()) ==
          dir.path + "/asm.bc: LLVM: <inline asm>:1:2: invalid instruction mnemonic 'bogus_instruction'");
  }
  CHECK(!path_exists(dir.path + "/out.o"));
}

TEST_CASE("outside a worker, an LLVM fatal error is one line and exit status 3", "[emit][isolate]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(fds[1], 2);
    install_llvm_fatal_handlers();
    LlvmStage stage("generating code");
    llvm::report_fatal_error("64-bit code requested on a subtarget that doesn't support it!", false);
  }
  ::close(fds[1]);
  std::string said;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) said.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == kExitBadInput);
  CHECK(
      said ==
      std::string(program_invocation_short_name) +
          ": error: LLVM ERROR while generating code: 64-bit code requested on a subtarget that doesn't support it!\n");
}
