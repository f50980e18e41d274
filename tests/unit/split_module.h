// The split test module of test_fallback.cpp, shared with test_elf_combine.cpp: the
// module, a C main that calls it, LLVM standing in for stamp to make stamp's half, and
// linking an object with the main and running it.
#pragma once
#include <llvm/AsmParser/Parser.h>
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

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fs.h"
#include "process.h"

namespace kiln_test {

inline std::unique_ptr<llvm::Module> parse_ir(llvm::LLVMContext& ctx, const char* ir) {
  llvm::SMDiagnostic diag;
  auto module = llvm::parseAssemblyString(ir, diag, ctx);
  if (!module) throw std::runtime_error("bad test IR: " + diag.getMessage().str());
  return module;
}

inline std::string verifier_says(const llvm::Module& module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (!llvm::verifyModule(module, &os)) return "";
  os.flush();
  return text.empty() ? "broken" : text;
}

// Index of each function in module order (declarations included), by name.
inline size_t function_index(const llvm::Module& module, const llvm::Function* wanted) {
  size_t i = 0;
  for (const llvm::Function& f : module) {
    if (&f == wanted) return i;
    ++i;
  }
  throw std::runtime_error("function not in module");
}

// What the stamp back end would emit, made with LLVM: only the marked functions keep
// their bodies; every other function, variable and alias becomes an external
// declaration of the same name.
inline std::unique_ptr<llvm::Module> stamp_half_with_llvm(const llvm::Module& module, const std::vector<bool>& marked) {
  auto half = llvm::CloneModule(module);
  size_t i = 0;
  for (llvm::Function& f : *half) {
    bool keep = marked.at(i++);
    if (f.isDeclaration()) continue;
    f.setComdat(nullptr);  // stamp emits bare functions, not section groups
    if (keep) continue;
    f.deleteBody();
    if (f.hasPersonalityFn()) f.setPersonalityFn(nullptr);
  }
  for (llvm::GlobalVariable& g : half->globals()) {
    if (g.isDeclaration() || g.getName().starts_with("llvm.")) continue;
    g.setInitializer(nullptr);
    g.setLinkage(llvm::GlobalValue::ExternalLinkage);
    g.setComdat(nullptr);
  }
  std::vector<llvm::GlobalAlias*> aliases;
  for (llvm::GlobalAlias& a : half->aliases()) aliases.push_back(&a);
  for (llvm::GlobalAlias* a : aliases) {
    llvm::GlobalValue* decl = nullptr;
    if (auto* fty = llvm::dyn_cast<llvm::FunctionType>(a->getValueType()))
      decl = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, a->getAddressSpace(), "", half.get());
    else
      decl = new llvm::GlobalVariable(*half, a->getValueType(), false, llvm::GlobalValue::ExternalLinkage, nullptr, "");
    decl->takeName(a);
    decl->setVisibility(a->getVisibility());
    decl->setDSOLocal(a->isDSOLocal());
    a->replaceAllUsesWith(decl);
    a->eraseFromParent();
  }
  return half;
}

// Links an object with a C main and returns what the program prints.
inline std::string link_and_run(const std::string& dir, const std::string& name, const std::string& object) {
  const std::string obj = dir + "/" + name + ".o", prog = dir + "/" + name;
  kiln::write_file_atomic(obj, object);
  kiln::ProcessOptions capture;
  capture.capture_stdout = true;
  auto link = kiln::run_process({"cc", "-o", prog, dir + "/main.c", obj}, capture);
  if (link.exit_code != 0) throw std::runtime_error("cannot link " + name);
  auto run = kiln::run_process({prog}, capture);
  if (run.exit_code != 0) throw std::runtime_error(name + " exited with " + std::to_string(run.exit_code));
  return run.captured_stdout;
}

// An internal function, an unnamed internal function, a private unnamed_addr
// string, an unnamed private constant, an internal counter, an internal vtable-like
// table holding the internal function's address, an internal alias, a libc
// declaration between the definitions, and a public entry point using them all.
inline const char* kSplitIr = R"(
target triple = "x86_64-unknown-linux-gnu"

@.str = private unnamed_addr constant [6 x i8] c"kiln!\00"
@counter = internal global i64 5
@0 = private constant i64 1000
@vtable = internal constant [2 x ptr] [ptr @helper, ptr @twice]
@twice_alias = internal alias i64 (i64), ptr @twice

define internal i64 @helper(i64 %x) {
  %c = load i64, ptr @counter
  %n = add i64 %c, 1
  store i64 %n, ptr @counter
  %r = mul i64 %x, %n
  ret i64 %r
}

declare i64 @llabs(i64)

define internal i64 @twice(i64 %x) {
  %d = shl i64 %x, 1
  %z = call i64 @helper(i64 0)
  %r = add i64 %d, %z
  ret i64 %r
}

define internal i64 @1() {
  ret i64 7
}

define i64 @compute(i64 %x) {
  %a = call i64 @helper(i64 %x)
  %slot = getelementptr [2 x ptr], ptr @vtable, i64 0, i64 1
  %fp = load ptr, ptr %slot
  %b = call i64 %fp(i64 %a)
  %first = load ptr, ptr @vtable
  %e = call i64 %first(i64 1)
  %ch = load i8, ptr @.str
  %cz = zext i8 %ch to i64
  %k = load i64, ptr @0
  %h = call i64 @twice_alias(i64 1)
  %neg = sub i64 0, %x
  %abs = call i64 @llabs(i64 %neg)
  %seven = call i64 @1()
  %s1 = add i64 %b, %e
  %s2 = add i64 %s1, %cz
  %s3 = add i64 %s2, %k
  %s4 = add i64 %s3, %h
  %s5 = add i64 %s4, %abs
  %s6 = mul i64 %s5, %seven
  %c = load i64, ptr @counter
  %s7 = add i64 %s6, %c
  ret i64 %s7
}
)";

inline const char* kMainC = R"(#include <stdio.h>
long compute(long);
int main(void) {
  long a = compute(3);
  long b = compute(4);
  printf("%ld %ld\n", a, b);
  return 0;
}
)";

}  // namespace kiln_test
