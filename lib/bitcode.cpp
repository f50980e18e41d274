#include "bitcode.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Triple.h>

#include "error.h"
#include "isolate.h"
#include "timeutil.h"

namespace kiln {

static bool has_bitcode_magic(std::string_view b) {
  auto u = [&](size_t i) { return static_cast<unsigned char>(b[i]); };
  if (b.size() >= 4 && u(0) == 'B' && u(1) == 'C' && u(2) == 0xC0 && u(3) == 0xDE) return true;
  // The wrapper header used by Darwin toolchains (0x0B17C0DE, little-endian).
  return b.size() >= 4 && u(0) == 0xDE && u(1) == 0xC0 && u(2) == 0x17 && u(3) == 0x0B;
}

std::string describe_foreign_bytes(std::string_view b) {
  if (b.size() >= 4 &&
      b.substr(0, 4) ==
          "\x7f"
          "ELF")
    return "an ELF file";
  if (b.size() >= 8 && b.substr(0, 8) == "!<arch>\n") return "an ar archive";
  if (b.size() >= 2 && b[0] == 0x1f && static_cast<unsigned char>(b[1]) == 0x8b) return "gzip data";
  bool text = true;
  for (size_t i = 0; i < b.size() && i < 256; ++i) {
    unsigned char c = static_cast<unsigned char>(b[i]);
    if (c < 9 || (c > 13 && c < 32)) text = false;
  }
  if (text)
    return b.find("define ") != std::string_view::npos || b.find("target triple") != std::string_view::npos
        ? "LLVM IR text (assemble it with llvm-as first)"
        : "a text file";
  return "unknown binary data";
}

// True when the bytes are a proper prefix of a bitcode magic number (a file cut
// short inside it), e.g. "BC" or "BC\xC0".
static bool is_cut_magic(std::string_view b) {
  static constexpr std::string_view raw("BC\xC0\xDE", 4), wrapper("\xDE\xC0\x17\x0B", 4);
  return b.size() >= 2 && b.size() < 4 && (raw.substr(0, b.size()) == b || wrapper.substr(0, b.size()) == b);
}

void check_bitcode_magic(std::string_view bytes, const std::string& path) {
  if (bytes.empty()) throw KilnError(kExitBadInput, path, "empty file, not LLVM bitcode");
  if (is_cut_magic(bytes))
    throw KilnError(kExitBadInput, path,
                    "truncated bitcode: " + std::to_string(bytes.size()) +
                        " bytes, shorter than the 4-byte magic number");
  if (!has_bitcode_magic(bytes))
    throw KilnError(kExitBadInput, path, "not LLVM bitcode (looks like " + describe_foreign_bytes(bytes) + ")");
}

// LLVM's reason, on one line.
[[noreturn]] static void throw_corrupt(llvm::Error error, const std::string& path) {
  std::string message = llvm::toString(std::move(error));
  for (auto& c : message)
    if (c == '\n') c = ' ';
  throw KilnError(kExitBadInput, path, "truncated or corrupt bitcode: " + message);
}

std::unique_ptr<llvm::Module> parse_bitcode(llvm::LLVMContext& ctx, std::string_view bytes, const std::string& path) {
  check_bitcode_magic(bytes, path);
  llvm::MemoryBufferRef ref(llvm::StringRef(bytes.data(), bytes.size()), path);
  LlvmStage stage("parsing");
  auto parsed = llvm::parseBitcodeFile(ref, ctx);
  if (!parsed) throw_corrupt(parsed.takeError(), path);
  return std::move(*parsed);
}

std::unique_ptr<llvm::Module> parse_lazy_bitcode(llvm::LLVMContext& ctx, std::string_view bytes,
                                                 const std::string& path) {
  check_bitcode_magic(bytes, path);
  llvm::MemoryBufferRef ref(llvm::StringRef(bytes.data(), bytes.size()), path);
  LlvmStage stage("parsing");
  auto parsed = llvm::getLazyBitcodeModule(ref, ctx);
  if (!parsed) throw_corrupt(parsed.takeError(), path);
  return std::move(*parsed);
}

std::string bitcode_triple(std::string_view bytes) {
  LlvmStage stage("reading the triple");
  llvm::MemoryBufferRef ref(llvm::StringRef(bytes.data(), bytes.size()), "");
  auto t = llvm::getBitcodeTargetTriple(ref);
  if (!t) {
    llvm::consumeError(t.takeError());
    return "";
  }
  return *t;
}

std::string bitcode_producer(std::string_view bytes) {
  LlvmStage stage("reading the producer");
  llvm::MemoryBufferRef ref(llvm::StringRef(bytes.data(), bytes.size()), "");
  auto p = llvm::getBitcodeProducerString(ref);
  if (!p) {
    llvm::consumeError(p.takeError());
    return "";
  }
  return *p;
}

std::string triple_problem(const std::string& triple_text) {
  if (triple_text.empty()) return "no target triple";
  llvm::Triple t(triple_text);
  if (t.getArch() != llvm::Triple::x86_64) return "target " + triple_text + " is not x86-64";
  // x32 (gnux32, muslx32) is x86-64 code with 32-bit pointers in ELF32 objects:
  // every back end here writes ELF64 with 64-bit pointers, so it would be wrong.
  if (t.isX32()) return "target " + triple_text + " is x32 (32-bit pointers), not 64-bit x86-64";
  if (t.getOS() != llvm::Triple::Linux) return "target " + triple_text + " is not Linux";
  if (t.getObjectFormat() != llvm::Triple::ELF) return "target " + triple_text + " does not use ELF";
  return "";
}

std::string verify_problem(const llvm::Module& module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  LlvmStage stage("verifying");
  if (!llvm::verifyModule(module, &os)) return "";
  os.flush();
  auto nl = text.find('\n');
  return "does not verify: " + (nl == std::string::npos ? text : text.substr(0, nl));
}

std::unique_ptr<llvm::Module> parse_checked_module(llvm::LLVMContext& ctx, std::string_view bytes,
                                                   const std::string& label, const ParseChecks& checks) {
  Stopwatch clock;
  auto module = parse_bitcode(ctx, bytes, label);
  if (checks.parse_seconds) *checks.parse_seconds = clock.seconds();
  ModuleProblems found;
  if (checks.verify) found.verify = verify_problem(*module);
  if (checks.triple && (checks.problems || found.verify.empty()))
    found.triple = triple_problem(module->getTargetTriple().str());
  if (checks.problems) {
    *checks.problems = std::move(found);
    return module;
  }
  if (!found.verify.empty()) throw KilnError(kExitBadInput, label, found.verify);
  if (!found.triple.empty()) throw KilnError(kExitBadInput, label, found.triple);
  return module;
}

}  // namespace kiln
