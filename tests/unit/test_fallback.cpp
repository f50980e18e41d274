#include <catch2/catch.hpp>

#include <llvm/AsmParser/Parser.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/Comdat.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalAlias.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "backend.h"
#include "backend_llvm.h"
#include "bitcode.h"
#include "error.h"
#include "fs.h"
#include "kiln_config.h"
#include "process.h"
#include "fallback.h"
#include "scratch_dir.h"
#include "split_module.h"

using namespace kiln;
using namespace kiln_test;

TEST_CASE("expose_local_symbols gives local symbols unique hidden external names", "[fallback]") {
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx, kSplitIr);
  llvm::Function* helper = m->getFunction("helper");
  llvm::Function* twice = m->getFunction("twice");
  llvm::Function* compute = m->getFunction("compute");
  llvm::Function* llabs = m->getFunction("llabs");
  llvm::GlobalVariable* str = m->getNamedGlobal(".str");
  llvm::GlobalVariable* counter = m->getNamedGlobal("counter");
  llvm::GlobalVariable* vtable = m->getNamedGlobal("vtable");
  llvm::GlobalAlias* alias = m->getNamedAlias("twice_alias");
  llvm::Function* anon_fn = nullptr;
  for (llvm::Function& f : *m)
    if (!f.hasName()) anon_fn = &f;
  llvm::GlobalVariable* anon_var = nullptr;
  for (llvm::GlobalVariable& g : m->globals())
    if (!g.hasName()) anon_var = &g;
  REQUIRE(helper);
  REQUIRE(twice);
  REQUIRE(compute);
  REQUIRE(llabs);
  REQUIRE(str);
  REQUIRE(counter);
  REQUIRE(vtable);
  REQUIRE(alias);
  REQUIRE(anon_fn);
  REQUIRE(anon_var);
  REQUIRE(str->hasGlobalUnnamedAddr());

  CHECK(expose_local_symbols(*m, "t1") == 8);
  CHECK(verifier_says(*m).empty());

  CHECK(helper->getName() == "helper.kiln.t1");
  CHECK(twice->getName() == "twice.kiln.t1");
  CHECK(str->getName() == ".str.kiln.t1");
  CHECK(counter->getName() == "counter.kiln.t1");
  CHECK(vtable->getName() == "vtable.kiln.t1");
  CHECK(alias->getName() == "twice_alias.kiln.t1");
  for (llvm::GlobalValue* gv :
       std::vector<llvm::GlobalValue*>{helper, twice, str, counter, vtable, alias, anon_fn, anon_var}) {
    INFO(gv->getName().str());
    CHECK(gv->hasExternalLinkage());
    CHECK(gv->hasHiddenVisibility());
    CHECK(gv->isDSOLocal());
  }
  // Unnamed symbols get distinct names of the documented shape.
  std::string fn_name = anon_fn->getName().str(), var_name = anon_var->getName().str();
  CHECK(fn_name.rfind("__kiln_anon.", 0) == 0);
  CHECK(var_name.rfind("__kiln_anon.", 0) == 0);
  CHECK(fn_name.size() > 8);
  CHECK(fn_name.substr(fn_name.size() - 8) == ".kiln.t1");
  CHECK(var_name.substr(var_name.size() - 8) == ".kiln.t1");
  CHECK(fn_name != var_name);
  // unnamed_addr survives, so does constness; public symbols and declarations are untouched.
  CHECK(str->hasGlobalUnnamedAddr());
  CHECK(str->isConstant());
  CHECK(compute->getName() == "compute");
  CHECK(compute->hasDefaultVisibility());
  CHECK(llabs->getName() == "llabs");
  CHECK(llabs->isDeclaration());
  CHECK(llabs->hasDefaultVisibility());
  // The vtable still points at the (renamed) helper, the alias at twice.
  CHECK(alias->getAliasee() == twice);
  // A second run finds nothing left to expose.
  CHECK(expose_local_symbols(*m, "t1") == 0);
}

TEST_CASE("expose_local_symbols renames comdats keyed on local symbols", "[fallback]") {
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx, R"(
target triple = "x86_64-unknown-linux-gnu"
$keyed = comdat any
$pub = comdat any
@keyed_data = internal global i32 3, comdat($keyed)
define internal i32 @keyed() comdat {
  %v = load i32, ptr @keyed_data
  ret i32 %v
}
define linkonce_odr i32 @pub() comdat {
  ret i32 2
}
define internal void @pub_init() comdat($pub) {
  ret void
}
define i32 @use() {
  %a = call i32 @keyed()
  %b = call i32 @pub()
  call void @pub_init()
  %s = add i32 %a, %b
  ret i32 %s
}
)");
  CHECK(expose_local_symbols(*m, "c") == 3);
  CHECK(verifier_says(*m).empty());
  llvm::Function* keyed = m->getFunction("keyed.kiln.c");
  llvm::GlobalVariable* data = m->getNamedGlobal("keyed_data.kiln.c");
  llvm::Function* init = m->getFunction("pub_init.kiln.c");
  REQUIRE(keyed);
  REQUIRE(data);
  REQUIRE(init);
  // The group keyed on the local function follows it to its new name, keeps its
  // selection kind and its members, and the old name is gone.
  REQUIRE(keyed->getComdat());
  CHECK(keyed->getComdat()->getName() == "keyed.kiln.c");
  CHECK(keyed->getComdat()->getSelectionKind() == llvm::Comdat::Any);
  CHECK(data->getComdat() == keyed->getComdat());
  CHECK(m->getComdatSymbolTable().count("keyed") == 0);
  // A local member of a group keyed on a public symbol stays in that group.
  REQUIRE(init->getComdat());
  CHECK(init->getComdat()->getName() == "pub");
  CHECK(m->getFunction("pub")->getComdat() == init->getComdat());
  // LLVM still emits it, with an ELF section group of the new name.
  LlvmBackend backend(Profile::fast);
  std::string object = backend.codegen(*m, "comdat.ll");
  CHECK(object_problem(object).empty());
  ScratchDir dir;
  write_file_atomic(dir.path + "/comdat.o", object);
  ProcessOptions capture;
  capture.capture_stdout = true;
  auto groups =
      run_process({std::string(KILN_LLVM_BINDIR) + "/llvm-readelf", "--section-groups", dir.path + "/comdat.o"},
                  capture);
  REQUIRE(groups.exit_code == 0);
  CHECK(groups.captured_stdout.find("[keyed.kiln.c]") != std::string::npos);
  CHECK(groups.captured_stdout.find("[pub]") != std::string::npos);
}

TEST_CASE("fallback_module keeps all but the functions stamp emits, and the halves link", "[fallback]") {
  ScratchDir dir;
  write_file_atomic(dir.path + "/main.c", kMainC);

  // The unsplit module, emitted whole: the reference result.
  LlvmBackend backend(Profile::fast);
  llvm::LLVMContext ctx;
  std::string reference;
  {
    auto whole = parse_ir(ctx, kSplitIr);
    reference = link_and_run(dir.path, "whole", backend.codegen(*whole, "whole.ll"));
  }
  REQUIRE(reference.find(' ') != std::string::npos);

  auto m = parse_ir(ctx, kSplitIr);
  expose_local_symbols(*m, "t1");
  // Stamp takes helper, the unnamed function and compute; LLVM keeps twice (and the
  // declaration of llabs, which nobody emits).
  std::vector<bool> marked(m->size(), false);
  llvm::Function* anon_fn = nullptr;
  for (llvm::Function& f : *m)
    if (f.getName().starts_with("__kiln_anon.")) anon_fn = &f;
  REQUIRE(anon_fn);
  marked[function_index(*m, m->getFunction("helper.kiln.t1"))] = true;
  marked[function_index(*m, m->getFunction("compute"))] = true;
  marked[function_index(*m, anon_fn)] = true;
  const std::string anon_name = anon_fn->getName().str();

  auto llvm_part = fallback_module(*m, marked);
  REQUIRE(llvm_part);
  CHECK(verifier_says(*llvm_part).empty());
  CHECK(llvm_part->size() == m->size());
  for (const char* name : {"helper.kiln.t1", "compute", anon_name.c_str()}) {
    INFO(name);
    llvm::Function* f = llvm_part->getFunction(name);
    REQUIRE(f);
    CHECK(f->isDeclaration());
    CHECK(f->hasExternalLinkage());
    CHECK(f->getComdat() == nullptr);
    CHECK(f->getFunctionType() == m->getFunction(name)->getFunctionType());
  }
  CHECK(llvm_part->getFunction("helper.kiln.t1")->hasHiddenVisibility());
  CHECK(llvm_part->getFunction("compute")->hasDefaultVisibility());
  CHECK_FALSE(llvm_part->getFunction("twice.kiln.t1")->isDeclaration());
  CHECK(llvm_part->getFunction("llabs")->isDeclaration());
  // Every global variable and alias stays with its initializer.
  for (const char* name : {".str.kiln.t1", "counter.kiln.t1", "vtable.kiln.t1"}) {
    INFO(name);
    REQUIRE(llvm_part->getNamedGlobal(name));
    CHECK(llvm_part->getNamedGlobal(name)->hasInitializer());
  }
  CHECK(llvm_part->getNamedAlias("twice_alias.kiln.t1") != nullptr);
  // The source module is untouched.
  CHECK_FALSE(m->getFunction("compute")->isDeclaration());

  auto stamp_part = stamp_half_with_llvm(*m, marked);
  CHECK(verifier_says(*stamp_part).empty());
  CHECK_FALSE(stamp_part->getFunction("compute")->isDeclaration());
  CHECK(stamp_part->getFunction("twice.kiln.t1")->isDeclaration());

  std::string llvm_object = backend.codegen(*llvm_part, "llvm-half");
  std::string stamp_object = backend.codegen(*stamp_part, "stamp-half");
  // Neither half links alone.
  {
    write_file_atomic(dir.path + "/alone.o", llvm_object);
    ProcessOptions quiet;
    quiet.quiet = true;
    CHECK(
        run_process({"cc", "-o", dir.path + "/alone", dir.path + "/main.c", dir.path + "/alone.o"}, quiet).exit_code !=
        0);
  }
  std::string combined = combine_objects({llvm_object, stamp_object}, "split");
  CHECK(object_problem(combined).empty());
  CHECK(link_and_run(dir.path, "split", combined) == reference);
  // The order of the inputs does not matter.
  CHECK(link_and_run(dir.path, "split2", combine_objects({stamp_object, llvm_object}, "split")) == reference);
}

TEST_CASE("fallback_module reports marks that do not fit and halves that do not verify", "[fallback]") {
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx, kSplitIr);
  expose_local_symbols(*m, "t1");
  try {
    fallback_module(*m, std::vector<bool>(m->size() + 1, false));
    FAIL("expected an error");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitInternal);
  }
  // Nothing marked: a plain copy.
  auto copy = fallback_module(*m, std::vector<bool>(m->size(), false));
  CHECK_FALSE(copy->getFunction("compute")->isDeclaration());
  // twice is an alias's target: without its body the alias has nothing to point at.
  std::vector<bool> marked(m->size(), false);
  marked[function_index(*m, m->getFunction("twice.kiln.t1"))] = true;
  try {
    fallback_module(*m, marked);
    FAIL("expected an error");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitInternal);
    CHECK(std::string(e.what()).find("does not verify") != std::string::npos);
    CHECK(std::string(e.what()).find("Alias must point to a definition") != std::string::npos);
  }
}

TEST_CASE("combine_objects fails with lld's reason on input that is not an object", "[fallback]") {
  LlvmBackend backend(Profile::fast);
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx,
                    "target triple = \"x86_64-unknown-linux-gnu\"\n"
                    "define i32 @f() {\n  ret i32 1\n}\n");
  std::string good = backend.codegen(*m, "f.ll");
  CHECK(object_problem(combine_objects({good}, "one")).empty());
  try {
    combine_objects({good, "this is not an object file"}, "garbage-module");
    FAIL("expected an error");
  } catch (const KilnError& e) {
    std::string what = e.what();
    CHECK(e.code() == kExitFailed);
    CHECK(e.path() == "garbage-module");
    CHECK(what.find("ld.lld -r failed: ") != std::string::npos);
    CHECK(what.find("input1.o") != std::string::npos);  // lld names the bad input
    CHECK(what.find('\n') == std::string::npos);
  }
}

TEST_CASE("make_fallback_half reads only the bodies that fall back, and the halves link", "[fallback]") {
  ScratchDir dir;
  write_file_atomic(dir.path + "/main.c", kMainC);
  LlvmBackend backend(Profile::fast);
  llvm::LLVMContext ctx;
  std::string bitcode, reference, stamp_object;
  std::vector<bool> marked;
  {
    auto whole = parse_ir(ctx, kSplitIr);
    llvm::raw_string_ostream os(bitcode);
    llvm::WriteBitcodeToFile(*whole, os);
    os.flush();
    reference = link_and_run(dir.path, "whole", backend.codegen(*whole, "whole.ll"));
    // The stamp half as the other test makes it (here by LLVM, standing in for stamp).
    auto m = parse_ir(ctx, kSplitIr);
    expose_local_symbols(*m, "t1");
    marked.assign(m->size(), false);
    marked[function_index(*m, m->getFunction("helper.kiln.t1"))] = true;
    marked[function_index(*m, m->getFunction("compute"))] = true;
    stamp_object = backend.codegen(*stamp_half_with_llvm(*m, marked), "stamp-half");
  }
  llvm::LLVMContext lazy_ctx;
  auto half = parse_lazy_bitcode(lazy_ctx, bitcode, "split.bc");
  // Nothing is read yet: every body waits to be materialized.
  CHECK(half->getFunction("compute")->isMaterializable());
  CHECK(half->getFunction("twice")->isMaterializable());
  expose_local_symbols(*half, "t1");
  make_fallback_half(*half, marked);
  CHECK(verifier_says(*half).empty());
  for (const char* name : {"helper.kiln.t1", "compute"}) {
    INFO(name);
    llvm::Function* f = half->getFunction(name);
    REQUIRE(f);
    CHECK(f->isDeclaration());
    CHECK_FALSE(f->isMaterializable());
    CHECK(f->hasExternalLinkage());
  }
  CHECK_FALSE(half->getFunction("twice.kiln.t1")->isDeclaration());
  CHECK_FALSE(half->getFunction("twice.kiln.t1")->isMaterializable());
  REQUIRE(half->getNamedGlobal("counter.kiln.t1"));
  CHECK(half->getNamedGlobal("counter.kiln.t1")->hasInitializer());
  std::string combined = combine_objects({stamp_object, backend.codegen(*half, "llvm-half")}, "split");
  CHECK(link_and_run(dir.path, "lazy", combined) == reference);
  // Marks that do not fit are kiln's error, as with fallback_module.
  llvm::LLVMContext other;
  auto again = parse_lazy_bitcode(other, bitcode, "split.bc");
  CHECK_THROWS_AS(make_fallback_half(*again, std::vector<bool>(again->size() + 1, false)), KilnError);
}
