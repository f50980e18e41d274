// Test helpers: LLVM IR text to bitcode bytes, and scratch directories.
#pragma once
#include <llvm/AsmParser/Parser.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <stdexcept>
#include <string>

#include "fs.h"
#include "scratch_dir.h"

namespace kiln_test {

inline std::string bitcode_from_ir(const std::string& ir) {
  llvm::LLVMContext ctx;
  llvm::SMDiagnostic diag;
  auto module = llvm::parseAssemblyString(ir, diag, ctx);
  if (!module) throw std::runtime_error("bad test IR: " + diag.getMessage().str());
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  llvm::WriteBitcodeToFile(*module, os);
  os.flush();
  return bytes;
}

inline const char* kAddIr = R"(
target triple = "x86_64-unknown-linux-gnu"
define i64 @add(i64 %a, i64 %b) {
  %s = add i64 %a, %b
  ret i64 %s
}
)";

}  // namespace kiln_test
