// kiln inside rustc: an LLVM pass plugin (rustc -Zllvm-plugins=kiln-rustc-plugin.so) that
// compiles each of rustc's codegen units with stamp while the unit is still LLVM IR in
// rustc's memory, so that no bitcode is written, read or stored, and LLVM's code
// generator has nothing left to do (kiln-capture --route plugin, lib/capture_plugin.cpp).
//
// At the end of rustc's optimization pipeline (its last extension point, which runs at
// every optimization level) the pass asks stamp for the whole unit
// (stamp_whole_module). When stamp takes every function and global, the unit is
// emptied and given one constant, stamp's object, in the section `.kiln.object`
// (kKilnObjectSection), with an alias of it for each symbol stamp's object defines:
// rustc's LLVM then writes a small object that carries stamp's object, and rustc's
// incremental cache keeps it as it keeps any object. The wrapper puts the carried
// object in its place before anything links (kiln_object_payload, payload_in_place).
// A unit stamp cannot take whole is left to rustc's own code generator, as plain rustc
// would compile it. Nothing here may stop rustc: any failure leaves the unit to LLVM.
//
// The plugin is built against Debian's LLVM 22 headers and links no LLVM: its LLVM
// symbols are rustc's own libLLVM's (22.1), which LLVM keeps ABI-compatible across a
// major version's patch releases. KILN_PLUGIN_RECEIPTS names a file to which each unit
// appends one JSON line, with KILN_PLUGIN_INVOCATION's id (kiln-corpus(5), plugin.jsonl).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalAlias.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Plugins/PassPlugin.h>

#include "ar_archive.h"
#include "backend_stamp.h"
#include "kiln_config.h"
#include "hash.h"
#include "error.h"
#include "fs.h"
#include "json_writer.h"
#include "plugin_payload.h"
#include "timeutil.h"

namespace kiln {
namespace {

// Removes every definition, declaration and the debug info's compile units from the
// module: what is left makes an object with no code, no data and no DWARF.
void empty_module(llvm::Module& m) {
  for (llvm::Function& f : m) f.dropAllReferences();
  for (llvm::GlobalVariable& g : m.globals()) g.dropAllReferences();
  for (llvm::GlobalAlias& a : m.aliases()) a.dropAllReferences();
  for (llvm::GlobalIFunc& i : m.ifuncs()) i.dropAllReferences();
  // The initializers dropped above leave their constants behind, unused but still
  // using the globals they name; replacing such a global's uses would make each of
  // them unique again, element by element, once per global it names (quadratic in a
  // table of pointers: 0.1 s for one unit of regex-syntax's Unicode tables). The dead
  // constants go first, and a value nothing uses needs no replacing.
  auto erase_all = [](auto&& range) {
    for (auto& v : llvm::make_early_inc_range(range)) {
      v.removeDeadConstantUsers();
      if (!v.use_empty()) v.replaceAllUsesWith(llvm::PoisonValue::get(v.getType()));
      v.eraseFromParent();
    }
  };
  erase_all(m.aliases());
  erase_all(m.ifuncs());
  erase_all(m.functions());
  erase_all(m.globals());
  if (llvm::NamedMDNode* cu = m.getNamedMetadata("llvm.dbg.cu")) m.eraseNamedMetadata(cu);
}

// The unit's one constant: stamp's object, kept by llvm.used so nothing drops it; and
// `symbols`, what that object defines for a linker, as aliases of it, so that rustc's
// archive index of the carriers is already the index of stamp's objects and the
// wrapper makes each unit its payload where it lies instead of writing the rlib again
// (capture_plugin.cpp, units_in_place). Nothing calls them: no carrier is linked.
void carry_object(llvm::Module& m, const std::string& object, const std::vector<std::string_view>& symbols) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::Constant* bytes = llvm::ConstantDataArray::getRaw(object, object.size(), llvm::Type::getInt8Ty(ctx));
  auto* g = new llvm::GlobalVariable(m, bytes->getType(), true, llvm::GlobalValue::PrivateLinkage, bytes,
                                     "kiln.object");
  g->setSection(kKilnObjectSection);
  g->setAlignment(llvm::Align(16));
  llvm::PointerType* ptr = llvm::PointerType::getUnqual(ctx);
  llvm::ArrayType* used_type = llvm::ArrayType::get(ptr, 1);
  auto* used = new llvm::GlobalVariable(m, used_type, false, llvm::GlobalValue::AppendingLinkage,
                                        llvm::ConstantArray::get(used_type, {g}), "llvm.used");
  used->setSection("llvm.metadata");
  for (std::string_view name : symbols) {
    auto* alias = llvm::GlobalAlias::create(llvm::Type::getInt8Ty(ctx), 0, llvm::GlobalValue::ExternalLinkage,
                                            llvm::StringRef(name.data(), name.size()), g, &m);
    alias->setVisibility(llvm::GlobalValue::HiddenVisibility);
  }
}

void append_receipt(const std::string& unit, const InMemoryStamp& r, double seconds) {
  const char* path = std::getenv("KILN_PLUGIN_RECEIPTS");
  if (!path || !*path) return;
  JsonWriter j;
  j.begin_object();
  j.field("v", 1);
  if (const char* invocation = std::getenv("KILN_PLUGIN_INVOCATION")) j.field("invocation", invocation);
  j.field("unit", unit);
  j.field("stamp", !r.object.empty());
  if (!r.why.empty()) j.field("why", r.why);
  j.field("functions", static_cast<uint64_t>(r.functions));
  j.field("instructions", r.instructions);
  j.field("object_bytes", static_cast<uint64_t>(r.object.size()));
  j.field("seconds", seconds);
  j.field("export_seconds", r.export_seconds);
  j.field("stages_seconds", r.stages_seconds);
  j.field("object_seconds", r.object_seconds);
  j.end_object();
  try {
    append_line_locked(path, j.str());  // locked: the lines of units written at once stay whole
  } catch (const KilnError&) {  // a receipt is not worth stopping rustc for
  }
}

struct StampPass : llvm::PassInfoMixin<StampPass> {
  llvm::ThinOrFullLTOPhase phase = llvm::ThinOrFullLTOPhase::None;

  llvm::PreservedAnalyses run(llvm::Module& m, llvm::ModuleAnalysisManager&) {
    Stopwatch clock;
    InMemoryStamp r;
    if (phase != llvm::ThinOrFullLTOPhase::None) {
      // An LTO build optimizes a unit again after linking it with others (rustc's
      // thin local LTO at opt-level 1 and up does too): an emptied unit would leave
      // them nothing. Such builds stay LLVM's.
      r.why = "an LTO build (the unit is optimized again with others after this)";
      append_receipt(m.getModuleIdentifier(), r, clock.seconds());
      return llvm::PreservedAnalyses::all();
    }
    std::vector<std::string_view> symbols;
    try {
      r = stamp_whole_module(m, xxh3_128_hex(m.getModuleIdentifier()).substr(0, 12));
      if (!r.object.empty()) symbols = archive_symbols(r.object, m.getModuleIdentifier());
    } catch (const std::exception& e) {
      r = {};
      r.why = std::string("kiln: ") + e.what();
    }
    if (!r.object.empty()) {
      empty_module(m);
      carry_object(m, r.object, symbols);
    }
    append_receipt(m.getModuleIdentifier(), r, clock.seconds());
    return llvm::PreservedAnalyses::none();
  }
};

}  // namespace
}  // namespace kiln

extern "C" LLVM_ATTRIBUTE_WEAK llvm::PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "kiln-stamp", KILN_VERSION, [](llvm::PassBuilder& pb) {
            pb.registerOptimizerLastEPCallback(
                [](llvm::ModulePassManager& mpm, llvm::OptimizationLevel, llvm::ThinOrFullLTOPhase phase) {
                  kiln::StampPass pass;
                  pass.phase = phase;
                  mpm.addPass(std::move(pass));
                });
          }};
}
