// What a module asks of LLVM's code generator beyond its IR (lib/stamp/codegen_requests.h):
// stack protectors, -fcf-protection, -pg and patchable entries, function alignment
// above stamp's, each a function stamp declines with the same reason in both exporters;
// and zero-initialised data in a named section, which stays SHT_PROGBITS as LLVM keeps
// it. Each module is also compared byte for byte by the direct reader's oracle.
#include <catch2/catch.hpp>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <map>
#include <string>
#include <vector>

#include "backend.h"
#include "bitcode.h"
#include "codegen_requests.h"
#include "direct_export.h"
#include "flat_export.h"
#include "fs.h"
#include "ir_helpers.h"
#include "reader_check.h"
#include "scratch_dir.h"
#include "test_helpers.h"

using namespace kiln;

namespace {

const char* kCodegenTriple = "target triple = \"x86_64-unknown-linux-gnu\"\n";

// Each defined function's reasons as LLVM's exporter gives them, after checking that the
// direct reader gives the same and that its flat file, verdicts and data are LLVM's.
std::map<std::string, std::vector<std::string>> reasons_by_both(const std::string& ir, const std::string& label) {
  const std::string bitcode = kiln_test::bitcode_from_ir(std::string(kCodegenTriple) + ir);
  ReaderComparison compared = compare_reader(bitcode, label);
  INFO(label << ": " << outcome_name(compared.outcome) << ": " << compared.detail);
  CHECK(compared.outcome == ReaderComparison::kIdentical);

  llvm::LLVMContext ctx;
  auto module = parse_bitcode(ctx, bitcode, label);
  FlatExport llvm_route = export_flat(*module);
  DirectExport direct = export_direct(bitcode, label, "t");
  REQUIRE(direct.declined.empty());
  REQUIRE(direct.verdicts.size() == llvm_route.verdicts.size());
  std::map<std::string, std::vector<std::string>> reasons;
  for (size_t i = 0; i < llvm_route.verdicts.size(); ++i) {
    CHECK(direct.verdicts[i].name == llvm_route.verdicts[i].name);
    CHECK(direct.verdicts[i].reasons == llvm_route.verdicts[i].reasons);
    reasons[llvm_route.verdicts[i].name] = llvm_route.verdicts[i].reasons;
  }
  return reasons;
}

using Reasons = std::vector<std::string>;

}  // namespace

TEST_CASE("stamp declines stack-protected functions", "[stamp][codegen-requests]") {
  auto reasons = reasons_by_both(R"(
define i32 @ssp(i32 %a) ssp {
  %b = alloca [16 x i8], align 16
  ret i32 %a
}
define i32 @strong(i32 %a) sspstrong {
  ret i32 %a
}
define i32 @req(i32 %a) sspreq {
  ret i32 %a
}
define i32 @plain(i32 %a) {
  ret i32 %a
}
)",
                                 "stack protector");
  for (const char* fn : {"ssp", "strong", "req"}) CHECK(reasons[fn] == Reasons{kReasonStackProtector});
  CHECK(reasons["plain"].empty());
}

TEST_CASE("stamp leaves a module built with -fcf-protection to LLVM", "[stamp][codegen-requests]") {
  const std::string body = R"(
define i32 @f(i32 %a) {
  ret i32 %a
}
define i32 @g(i32 %a) {
  %r = call i32 @f(i32 %a)
  ret i32 %r
}
)";
  // Either flag alone (-fcf-protection=branch, =return), with others around it and
  // with debug information (whose flags the direct reader reads from the same node).
  for (const char* flag : {"cf-protection-branch", "cf-protection-return"}) {
    auto reasons = reasons_by_both(body + R"(
!llvm.module.flags = !{!0, !1, !2}
!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{i32 8, !")" + std::string(flag) +
                                       R"(", i32 1}
!2 = !{i32 8, !"PIC Level", i32 2}
)",
                                   flag);
    INFO(flag);
    CHECK(reasons["f"] == Reasons{kReasonCfProtection});
    CHECK(reasons["g"] == Reasons{kReasonCfProtection});
  }
  auto plain = reasons_by_both(body + R"(
!llvm.module.flags = !{!0}
!0 = !{i32 8, !"PIC Level", i32 2}
)",
                               "no cf-protection");
  CHECK(plain["f"].empty());
  CHECK(plain["g"].empty());
}

TEST_CASE("stamp declines -pg, -finstrument-functions and patchable entries", "[stamp][codegen-requests]") {
  auto reasons = reasons_by_both(R"(
define i32 @mcount(i32 %a) #0 {
  ret i32 %a
}
define i32 @fentry(i32 %a) #1 {
  ret i32 %a
}
define i32 @cyg(i32 %a) #2 {
  ret i32 %a
}
define i32 @exit_inlined(i32 %a) #3 {
  ret i32 %a
}
define i32 @patchable(i32 %a) #4 {
  ret i32 %a
}
define i32 @prefix(i32 %a) #5 {
  ret i32 %a
}
define i32 @redirect(i32 %a) #6 {
  ret i32 %a
}
define i32 @both(i32 %a) #7 {
  ret i32 %a
}
define i32 @plain(i32 %a) #8 {
  ret i32 %a
}
attributes #0 = { "instrument-function-entry-inlined"="mcount" }
attributes #1 = { "fentry-call"="true" }
attributes #2 = { "instrument-function-entry"="__cyg_profile_func_enter" "instrument-function-exit"="__cyg_profile_func_exit" }
attributes #3 = { "instrument-function-exit-inlined"="__cyg_profile_func_exit" }
attributes #4 = { "patchable-function-entry"="2" }
attributes #5 = { "patchable-function-prefix"="1" }
attributes #6 = { "patchable-function" }
attributes #7 = { "patchable-function-entry"="4" "instrument-function-entry-inlined"="mcount" }
attributes #8 = { "frame-pointer"="all" "target-cpu"="x86-64" }
)",
                                 "instrumentation");
  for (const char* fn : {"mcount", "fentry", "cyg", "exit_inlined"}) CHECK(reasons[fn] == Reasons{kReasonInstrumented});
  for (const char* fn : {"patchable", "prefix", "redirect"}) CHECK(reasons[fn] == Reasons{kReasonPatchable});
  CHECK(reasons["both"] == Reasons{kReasonInstrumented, kReasonPatchable});
  CHECK(reasons["plain"].empty());
}

TEST_CASE("stamp declines functions aligned above 16 bytes", "[stamp][codegen-requests]") {
  auto reasons = reasons_by_both(R"(
define i32 @a64(i32 %a) align 64 {
  ret i32 %a
}
define i32 @a32(i32 %a) align 32 {
  ret i32 %a
}
define i32 @a16(i32 %a) align 16 {
  ret i32 %a
}
define i32 @a1(i32 %a) align 1 {
  ret i32 %a
}
)",
                                 "alignment");
  CHECK(reasons["a64"] == Reasons{kReasonAlignment});
  CHECK(reasons["a32"] == Reasons{kReasonAlignment});
  CHECK(reasons["a16"].empty());
  CHECK(reasons["a1"].empty());
}

// A zero-initialised global in a named section is PROGBITS as LLVM makes it: ld.bfd
// would otherwise split "mysec" into a NOBITS and a PROGBITS part, and __start_mysec to
// __stop_mysec would cover only one object's entries.
TEST_CASE("stamp keeps zero data in a named section PROGBITS", "[stamp][codegen-requests]") {
  const std::string ir = R"(
@x = global i32 0, section "mysec", align 4
@t = thread_local global i32 0, section "mytls", align 4
@b = global i32 0, section ".bss.mine", align 4
@plain = global i32 0, align 4
define ptr @where_x() {
  store i32 0, ptr @b, align 4
  store i32 0, ptr @plain, align 4
  ret ptr @x
}
)";
  auto reasons = reasons_by_both(ir, "zero data in a section");
  CHECK(reasons["where_x"].empty());

  const std::string bitcode = kiln_test::bitcode_from_ir(std::string(kCodegenTriple) + ir);
  DirectExport direct = export_direct(bitcode, "zero.bc", "t");
  REQUIRE(direct.whole);
  std::map<std::string, const StampData*> data;
  for (const StampData& d : direct.data) data[d.name] = &d;
  REQUIRE(data.size() == 4);
  CHECK_FALSE(data["x"]->zero);
  CHECK(data["x"]->bytes == std::vector<uint8_t>(4, 0));
  CHECK_FALSE(data["t"]->zero);
  CHECK(data["b"]->zero);
  CHECK(data["plain"]->zero);

  ScratchDir dir;
  EmitResult stamp = make_backend("stamp", Profile::fast)->emit(bitcode, "zero.bc");
  CHECK(stamp.counts.functions_llvm == 0);
  write_file_atomic(dir.path + "/stamp.o", stamp.object);
  auto sections =
      kiln_test::shell(shell_join({kiln_test::llvm_tool("llvm-readelf"), "-S", "-W", dir.path + "/stamp.o"}));
  INFO(sections.captured_stdout);
  REQUIRE(sections.exit_code == 0);
  auto type_of = [&](const std::string& name) {
    size_t at = sections.captured_stdout.find(" " + name + " ");
    if (at == std::string::npos) return std::string("missing");
    size_t type = sections.captured_stdout.find_first_not_of(' ', at + name.size() + 2);
    return sections.captured_stdout.substr(type, sections.captured_stdout.find(' ', type) - type);
  };
  CHECK(type_of("mysec") == "PROGBITS");
  CHECK(type_of("mytls") == "PROGBITS");
  CHECK(type_of(".bss.mine") == "NOBITS");

  // Linked by ld.bfd with a C object that puts its own entry in mysec: the bounds cover both.
  write_file_atomic(dir.path + "/main.c", R"(
#include <stdio.h>
__attribute__((section("mysec"))) int y = 0;
extern char __start_mysec[], __stop_mysec[];
int *where_x(void);
int main(void) {
  int *x = where_x();
  int inside = (char *)x >= __start_mysec && (char *)x < __stop_mysec && (char *)&y >= __start_mysec &&
               (char *)&y < __stop_mysec;
  printf("%ld %d\n", (long)(__stop_mysec - __start_mysec), inside);
  return 0;
}
)");
  const std::string prog = dir.path + "/prog";
  auto link =
      kiln_test::shell(shell_join({"cc", "-fuse-ld=bfd", "-o", prog, dir.path + "/main.c", dir.path + "/stamp.o"}));
  INFO(link.captured_stdout);
  REQUIRE(link.exit_code == 0);
  auto run = kiln_test::shell(shell_join({prog}));
  CHECK(run.exit_code == 0);
  CHECK(run.captured_stdout == "8 1\n");
}

// __attribute__((retain)) puts a global in llvm.used (plain `used` only in
// llvm.compiler.used): LLVM gives its section SHF_GNU_RETAIN so that --gc-sections
// keeps it. A function so marked is LLVM's; stamp's data carries the flag.
TEST_CASE("stamp keeps llvm.used members retained", "[stamp][codegen-requests]") {
  auto reasons = reasons_by_both(R"(
@llvm.used = appending global [1 x ptr] [ptr @keep_fn], section "llvm.metadata"
@llvm.compiler.used = appending global [2 x ptr] [ptr @keep_fn, ptr @used_fn], section "llvm.metadata"
define internal i32 @keep_fn(i32 %a) {
  ret i32 %a
}
define internal i32 @used_fn(i32 %a) {
  ret i32 %a
}
define i32 @plain(i32 %a) {
  ret i32 %a
}
)",
                                 "retained function");
  CHECK(reasons["keep_fn"] == Reasons{kReasonRetained});
  CHECK(reasons["used_fn"].empty());
  CHECK(reasons["plain"].empty());

  const std::string ir = R"(
@keep_me = internal global i32 5, align 4
@keep_zero = internal global i32 0, align 4
@used_only = internal global i32 6, align 4
@llvm.used = appending global [2 x ptr] [ptr @keep_me, ptr @keep_zero], section "llvm.metadata"
@llvm.compiler.used = appending global [3 x ptr] [ptr @keep_me, ptr @keep_zero, ptr @used_only], section "llvm.metadata"
define i32 @plain(i32 %a) {
  ret i32 %a
}
)";
  auto data_reasons = reasons_by_both(ir, "retained data");
  CHECK(data_reasons["plain"].empty());
  const std::string bitcode = kiln_test::bitcode_from_ir(std::string(kCodegenTriple) + ir);
  DirectExport direct = export_direct(bitcode, "retain.bc", "t");
  REQUIRE(direct.whole);
  std::map<std::string, bool> retain;
  for (const StampData& d : direct.data) retain[d.name] = d.retain;
  // Local names as expose_local_symbols renames them (NAME.kiln.TAG).
  CHECK(retain ==
        std::map<std::string, bool>{{"keep_me.kiln.t", true}, {"keep_zero.kiln.t", true}, {"used_only.kiln.t", false}});

  // Linked with --gc-sections, nothing referring to them: the retained survive (GNU ld
  // honours the flag only in an object of the GNU OS ABI, as LLVM's are).
  ScratchDir dir;
  EmitResult stamp = make_backend("stamp", Profile::fast)->emit(bitcode, "retain.bc");
  CHECK(stamp.counts.functions_llvm == 0);
  write_file_atomic(dir.path + "/stamp.o", stamp.object);
  write_file_atomic(dir.path + "/main.c", "int plain(int);\nint main(void) { return plain(0); }\n");
  const std::string prog = dir.path + "/prog";
  auto link = kiln_test::shell(
      shell_join({"cc", "-fuse-ld=bfd", "-Wl,--gc-sections", "-o", prog, dir.path + "/main.c", dir.path + "/stamp.o"}));
  INFO(link.captured_stdout);
  REQUIRE(link.exit_code == 0);
  auto symbols = kiln_test::shell(shell_join({kiln_test::llvm_tool("llvm-nm"), prog}));
  INFO(symbols.captured_stdout);
  REQUIRE(symbols.exit_code == 0);
  CHECK(symbols.captured_stdout.find(" keep_me\n") != std::string::npos);
  CHECK(symbols.captured_stdout.find(" keep_zero\n") != std::string::npos);
  CHECK(symbols.captured_stdout.find(" used_only\n") == std::string::npos);
}
