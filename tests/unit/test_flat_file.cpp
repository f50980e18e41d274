#include <catch2/catch.hpp>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "bitcode.h"
#include "error.h"
#include "flat_export.h"
#include "flat_file.h"
#include "fs.h"
#include "ir_helpers.h"
#include "process.h"

using namespace kiln;

static const char* kCallsIr = R"(
target triple = "x86_64-unknown-linux-gnu"
define internal i64 @square(i64 %x) {
  %r = mul i64 %x, %x
  ret i64 %r
}
define i64 @sum_of_squares(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 1, %entry ], [ %next, %loop ]
  %acc = phi i64 [ 0, %entry ], [ %acc2, %loop ]
  %sq = call i64 @square(i64 %i)
  %acc2 = add i64 %acc, %sq
  %next = add i64 %i, 1
  %done = icmp ugt i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret i64 %acc2
}
)";

static FlatModuleData exported(std::string* source) {
  llvm::LLVMContext ctx;
  auto module = parse_bitcode(ctx, kiln_test::bitcode_from_ir(kCallsIr), "calls.bc");
  FlatExport flat = export_flat(*module);
  REQUIRE(flat.stamp_function_count == 2);
  *source = module->getSourceFileName();
  return flat.flat;
}

TEST_CASE("a flat IR file round-trips and emits the same object without LLVM", "[flat]") {
  std::string source;
  FlatModuleData flat = exported(&source);
  std::string file = write_flat_file(flat, source);
  std::string source_back;
  FlatModuleData back = read_flat_file(file, "calls.flat", &source_back);
  CHECK(source_back == source);
  CHECK(back.symbols == flat.symbols);
  CHECK(back.insts.size() == flat.insts.size());
  CHECK(emit_flat_module(back, source) == emit_flat_module(flat, source));

  // The object links and runs: 1 + 4 + ... + 100 = 338350.
  kiln_test::ScratchDir dir;
  write_file_atomic(dir.path + "/calls.o", emit_flat_module(back, source));
  write_file_atomic(
      dir.path + "/main.c",
      "#include <stdio.h>\nlong sum_of_squares(long);\nint main(void){printf(\"%ld\\n\", sum_of_squares(100));}\n");
  ProcessOptions quiet;
  quiet.quiet = true;
  REQUIRE(run_process({"cc", "-o", dir.path + "/prog", dir.path + "/main.c", dir.path + "/calls.o"}, quiet).exit_code ==
          0);
  ProcessOptions capture;
  capture.capture_stdout = true;
  CHECK(run_process({dir.path + "/prog"}, capture).captured_stdout == "338350\n");
}

TEST_CASE("foreign, truncated, corrupt and newer flat files are refused with a reason", "[flat]") {
  std::string source;
  std::string file = write_flat_file(exported(&source), source);
  auto code_of = [](const std::string& bytes) {
    try {
      read_flat_file(bytes, "x.flat");
    } catch (const KilnError& e) {
      CHECK(std::string(e.what()).rfind("x.flat: ", 0) == 0);
      return static_cast<int>(e.code());
    }
    return 0;
  };
  CHECK(code_of("garbage that is long enough") == kExitBadInput);
  CHECK(code_of(file.substr(0, file.size() / 2)) == kExitBadInput);
  std::string newer = file;
  newer[8] = static_cast<char>(kFlatFileVersion + 1);  // version field
  CHECK(code_of(newer) == kExitNewerSchema);
  // An operand pointing past its array must not reach the stages.
  FlatModuleData flat = exported(&source);
  flat.operands[0].index = 100000;
  flat.operands[0].kind = kOperandValue;
  CHECK(code_of(write_flat_file(flat, source)) == kExitBadInput);

  // Nor a value taken from another function (stage 0 would write into that
  // function's arrays from another thread), nor a frame beyond 1 GiB.
  auto reason_of = [](const std::string& bytes) {
    try {
      read_flat_file(bytes, "x.flat");
    } catch (const KilnError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  FlatModuleData cross = exported(&source);
  REQUIRE(cross.functions.size() == 2);
  const FlatFunction& second = cross.functions[1];
  bool changed = false;
  for (uint32_t i = second.first_inst; i < second.first_inst + second.inst_count && !changed; ++i)
    for (uint32_t k = 0; k < cross.insts[i].operand_count && !changed; ++k) {
      FlatOperand& op = cross.operands[cross.insts[i].first_operand + k];
      if (op.kind == kOperandValue) op.index = cross.functions[0].first_inst, changed = true;
    }
  REQUIRE(changed);
  CHECK(reason_of(write_flat_file(cross, source)).find("value from outside its function") != std::string::npos);
  FlatModuleData huge = exported(&source);
  for (FlatInst& in : huge.insts)
    if (in.slot_size) in.slot_size = 0x7FFFFFF0u;
  CHECK(reason_of(write_flat_file(huge, source)).find("frame larger than 1 GiB") != std::string::npos);

  // Found by fuzz_flat_file: a function whose blocks do not cover all its instructions
  // (stage 3 left them without offsets, stage 4 wrote past the code buffer), and
  // operands of kinds that do not exist.
  FlatModuleData short_blocks = exported(&source);
  REQUIRE(short_blocks.functions[1].block_count > 1);
  short_blocks.functions[1].block_count = 1;
  CHECK(reason_of(write_flat_file(short_blocks, source)).find("outside") != std::string::npos);
  FlatModuleData unknown_kind = exported(&source);
  unknown_kind.operands[0].kind = 10;
  CHECK(reason_of(write_flat_file(unknown_kind, source)).find("operand of an unknown kind") != std::string::npos);
  // Nor an aggregate of 4 GB in one instruction (fuzz_flat_file: its unrolled copy
  // asked for gigabytes of code and could wrap a 32-bit offset).
  FlatModuleData huge_aggregate = exported(&source);
  huge_aggregate.insts[0].aux32 = 4294901760u;
  huge_aggregate.insts[0].op = kOpExtract;
  CHECK(reason_of(write_flat_file(huge_aggregate, source)).find("aggregate larger than 1 GiB") != std::string::npos);
  // Nor a field 2 GiB into its aggregate (fuzz_flat_file with real modules' flat files
  // as seeds: stamp_frame's field displacement overflowed 32 bits, UndefinedBehaviorSanitizer).
  for (const uint16_t op : {kOpExtract, kOpInsert, kOpOverflow}) {
    FlatModuleData far_field = exported(&source);
    far_field.insts[0].op = op;
    far_field.insts[0].imm = int64_t(1) << 31;
    CHECK(reason_of(write_flat_file(far_field, source)).find("aggregate field beyond 1 GiB") != std::string::npos);
  }
  // Nor a call to a symbol 2^63 bytes before it (the same campaign: the PC-relative
  // addend, less 4, overflowed 64 bits).
  FlatModuleData far_symbol = exported(&source);
  bool symbol = false;
  for (FlatOperand& op : far_symbol.operands)
    if (op.kind == kOperandSymbol) op.imm = INT64_MIN, symbol = true;
  REQUIRE(symbol);
  CHECK(reason_of(write_flat_file(far_symbol, source)).find("symbol offset beyond 2 GiB") != std::string::npos);
  // Nor two functions of one name (a later campaign: the ELF writer stopped at the
  // second with exit 70 and the module's source name, not the file's), nor a function
  // without a name.
  FlatModuleData twice = exported(&source);
  REQUIRE(twice.functions.size() == 2);
  twice.symbols[twice.functions[1].symbol] = twice.symbols[twice.functions[0].symbol];
  CHECK(reason_of(write_flat_file(twice, source)).find("function defined twice") != std::string::npos);
  FlatModuleData nameless = exported(&source);
  nameless.symbols[nameless.functions[0].symbol].clear();
  CHECK(reason_of(write_flat_file(nameless, source)).find("function without a name") != std::string::npos);
}

TEST_CASE("check_flat_module checks a module from any producer as read_flat_file does", "[flat]") {
  std::string source;
  CHECK(check_flat_module(exported(&source)).empty());
  auto file_reason = [&](const FlatModuleData& flat) {
    try {
      read_flat_file(write_flat_file(flat, source), "x.flat");
    } catch (const KilnError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // The same defect, in the words read_flat_file puts after its prefix.
  FlatModuleData bad_operand = exported(&source);
  bad_operand.operands[0].kind = kOperandValue;
  bad_operand.operands[0].index = 100000;
  FlatModuleData short_blocks = exported(&source);
  short_blocks.functions[1].block_count = 1;
  FlatModuleData bad_tables = exported(&source);
  bad_tables.sections.pop_back();
  FlatModuleData bad_variant = exported(&source);
  for (FlatInst& in : bad_variant.insts)
    if (in.op == kOpIcmp) in.aux = 200;
  for (const FlatModuleData* flat : {&bad_operand, &short_blocks, &bad_tables, &bad_variant}) {
    std::string defect = check_flat_module(*flat);
    REQUIRE(!defect.empty());
    CHECK(file_reason(*flat) == "x.flat: corrupt flat IR file: " + defect);
  }
  CHECK(check_flat_module(bad_tables) == "per-function tables disagree");
  CHECK(check_flat_module(bad_variant) == "instruction with an unknown variant");
  // A funnel shift reads three operands: one with fewer is refused, not read past.
  FlatModuleData short_funnel = exported(&source);
  bool made = false;
  for (FlatInst& in : short_funnel.insts)
    if (!made && in.op == kOpAdd) in.op = kOpBitOp, in.aux = kBitFshl, made = true;
  REQUIRE(made);
  CHECK(check_flat_module(short_funnel) == "instruction with too few operands");
  // A file cannot carry an undefined symbol's binding out of range; a producer in
  // memory can.
  FlatModuleData bad_undefined = exported(&source);
  bad_undefined.undefined.push_back({"x", static_cast<SymbolBinding>(7), SymbolVisibility::default_});
  CHECK(check_flat_module(bad_undefined) == "undefined symbol's binding or visibility out of range");
}

TEST_CASE("a vector instruction whose lanes do not fit its template or its slots is refused", "[flat][vector]") {
  static const char* const kVectorIr = R"(
define void @blend(ptr %pa, ptr %pb, ptr %po) {
  %a = load <16 x i8>, ptr %pa, align 1
  %b = load <16 x i8>, ptr %pb, align 1
  %s = shufflevector <16 x i8> %a, <16 x i8> %b, <16 x i32> <i32 0, i32 17, i32 2, i32 19, i32 4, i32 21, i32 6, i32 23, i32 8, i32 25, i32 10, i32 27, i32 12, i32 29, i32 14, i32 31>
  store <16 x i8> %s, ptr %po, align 1
  ret void
}
)";
  llvm::LLVMContext ctx;
  auto module = parse_bitcode(ctx, kiln_test::bitcode_from_ir(kVectorIr), "vector.bc");
  FlatExport exported_vector = export_flat(*module);
  REQUIRE(exported_vector.stamp_function_count == 1);
  const FlatModuleData good = exported_vector.flat;
  CHECK(check_flat_module(good).empty());
  size_t at = good.insts.size();
  for (size_t i = 0; i < good.insts.size(); ++i)
    if (good.insts[i].op == kOpVector) at = i;
  REQUIRE(at < good.insts.size());
  REQUIRE(good.insts[at].aux == kVecShuffle);
  auto defect_of = [&](auto change) {
    FlatModuleData bad = good;
    change(bad.insts[at], bad.operands.data() + bad.insts[at].first_operand);
    return check_flat_module(bad);
  };
  CHECK(defect_of([](FlatInst& in, FlatOperand*) { in.aux = kVecKindCount; }) == "instruction with an unknown variant");
  CHECK(defect_of([](FlatInst& in, FlatOperand*) { in.aux32 = 65; }) ==
        "vector of more lanes than stamp has a template for");
  CHECK(defect_of([](FlatInst& in, FlatOperand*) { in.aux32 = 17; }) == "instruction with too few operands");
  CHECK(defect_of([](FlatInst&, FlatOperand* ops) { ops[5].imm = 32; }) == "shuffle lane out of range");
  CHECK(defect_of([](FlatInst& in, FlatOperand*) { in.slot_size = 8; }) == "vector in a short slot");
  CHECK(defect_of([](FlatInst& in, FlatOperand*) { in.width = 24; }) ==
        "vector lanes of a width stamp has no template for");
  CHECK(defect_of([](FlatInst& in, FlatOperand*) { in.width = 64, in.slot_size = 128; }) ==
        "vector operand in a short slot");
  CHECK(defect_of([](FlatInst&, FlatOperand* ops) { ops[0].kind = kOperandArg; }) ==
        "instruction with operands of the wrong kind");
  // The same two 16-byte operands as a pshufb: taken, and refused out of its shape.
  auto pshufb = [](FlatInst& in) { in.aux = kVecShuffleBytes, in.imm = 0; };
  CHECK(defect_of([&](FlatInst& in, FlatOperand*) { pshufb(in); }).empty());
  CHECK(defect_of([&](FlatInst& in, FlatOperand*) { pshufb(in), in.imm = 1; }) == "instruction with an unknown variant");
  CHECK(defect_of([&](FlatInst& in, FlatOperand*) { pshufb(in), in.aux32 = 8; }) ==
        "byte shuffle of other than 16 or 32 bytes");
  CHECK(defect_of([&](FlatInst& in, FlatOperand*) { pshufb(in), in.width = 16; }) ==
        "byte shuffle of other than 16 or 32 bytes");
  CHECK(defect_of([&](FlatInst& in, FlatOperand*) { pshufb(in), in.aux32 = 32, in.slot_size = 32; }) ==
        "vector operand in a short slot");
  CHECK(defect_of([&](FlatInst& in, FlatOperand* ops) { pshufb(in), ops[1].kind = kOperandArg; }) ==
        "instruction with operands of the wrong kind");
}

TEST_CASE("vector arguments, call arguments and returns out of their shape are refused", "[flat][vector]") {
  static const char* const kIr = R"(
target triple = "x86_64-unknown-linux-gnu"
declare <2 x i64> @ext(<2 x i64>)
define <2 x i64> @pass(i64 %k, <2 x i64> %a) {
  %r = call <2 x i64> @ext(<2 x i64> %a)
  ret <2 x i64> %r
}
)";
  llvm::LLVMContext ctx;
  auto module = parse_bitcode(ctx, kiln_test::bitcode_from_ir(kIr), "vector-abi.bc");
  FlatExport exported = export_flat(*module);
  REQUIRE(exported.stamp_function_count == 1);
  const FlatModuleData good = exported.flat;
  CHECK(check_flat_module(good).empty());
  REQUIRE(good.insts.size() == 3);  // the argument's copy, the call, the return
  REQUIRE(good.insts[0].op == kOpVector);
  REQUIRE(good.insts[0].aux == kVecArgument);
  CHECK(good.insts[0].imm == 0);  // xmm0: the integer takes rdi
  REQUIRE(good.insts[1].op == kOpCall);
  CHECK((good.insts[1].aux & kCallRetVector) != 0);
  CHECK((good.functions[0].flags & kFnRetVector) != 0);
  auto defect_of = [&](auto change) {
    FlatModuleData bad = good;
    change(bad);
    return check_flat_module(bad);
  };
  CHECK(defect_of([](FlatModuleData& f) { f.insts[0].imm = 8; }) ==
        "vector argument of other than 16 or 32 bytes from xmm0 .. xmm7");
  CHECK(defect_of([](FlatModuleData& f) { f.insts[0].aux32 = 3; }) ==
        "vector argument of other than 16 or 32 bytes from xmm0 .. xmm7");
  CHECK(defect_of([](FlatModuleData& f) { std::swap(f.insts[0], f.insts[1]); }) != "");
  // The copy after another instruction would read a register the other may have used.
  CHECK(defect_of([](FlatModuleData& f) {
          f.insts.insert(f.insts.begin(), FlatInst{});
          f.insts[0].block = 0;
          for (FlatOperand& o : f.operands)
            if (o.kind == kOperandValue) ++o.index;
          f.blocks[0].inst_count++;
          f.functions[0].inst_count++;
        }) == "vector argument copy after the entry block's start");
  const uint32_t call_arg = good.insts[1].first_operand + 1;
  CHECK(defect_of([&](FlatModuleData& f) { f.operands[call_arg].flags = kOperandVector; }) ==
        "vector call argument that is not a vector value");
  CHECK(defect_of([&](FlatModuleData& f) { f.operands[call_arg].kind = kOperandArg; }) ==
        "vector call argument that is not a vector value");
  CHECK(defect_of([](FlatModuleData& f) { f.insts[1].slot_size = 8; }) == "vector call result that is not a vector");
  CHECK(defect_of([](FlatModuleData& f) { f.functions[0].flags |= kFnRetVector256; }) ==
        "vector return that is not only a vector");
  CHECK(defect_of([](FlatModuleData& f) { f.operands[f.insts[2].first_operand].kind = kOperandArg; }) ==
        "vector return of other than a vector");
}
