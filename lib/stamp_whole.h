// stamp's objects for whole modules: the local names a whole module's object gets back,
// and stamp's object for a module in LLVM's memory, for kiln's plugin inside rustc
// (lib/rustc_plugin.cpp). Apart from lib/backend_stamp.cpp so that the plugin, which
// links no LLVM of its own, takes in none of kiln's LLVM code generation.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "flat_module.h"
#include "stamp_cpu.h"
#include "stamp_object.h"

namespace llvm {
class Module;
}

namespace kiln {

// stamp's object from a flat module, its global data and the stages' output: what both
// readers' routes end in.
std::string write_stamp_object_for(const FlatModuleData& flat, const std::vector<StampData>& data,
                                   const std::string& source_name, const StampOutput& code);

// stamp names a module's local symbols NAME.kiln.TAG, hidden globals, so that a split
// module's two halves can reach each other's. A whole module needs no such names: the
// combiner, given its one object, makes them local NAME again, as in llvm's object (the
// contract kiln-emit --check-contract checks). Where the combiner declines, stamp's
// object is still correct, only with those names. The variables that were private get
// no symbol at all (`temporaries`), as in llvm's object.
std::string with_local_names(std::string object, const std::string& tag, const std::vector<std::string>& temporaries);

// The symbols of stamp's data that were private in the bitcode.
std::vector<std::string> private_names(const std::vector<StampData>& data);

// stamp's object for a module in memory when every function and global is stamp's
// (what the stamp back end writes for that module's bitcode). When one is not,
// `object` is empty, `why` says why and LLVM compiles the module: it is then unchanged
// but for aggregate constants made loads (materialize_aggregate_constants), or, where
// only a global was not stamp's, its local symbols named NAME.kiln.TAG as on the split
// route.
struct InMemoryStamp {
  std::string object, why;
  uint64_t functions = 0, instructions = 0;
  double export_seconds = 0, stages_seconds = 0, object_seconds = 0;
};
InMemoryStamp stamp_whole_module(llvm::Module& module, const std::string& tag);

}  // namespace kiln
