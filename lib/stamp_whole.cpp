#include "stamp_whole.h"

#include <llvm/IR/Module.h>

#include "elf_combine.h"
#include "fallback.h"
#include "flat_export.h"
#include "flat_file.h"
#include "flat_module.h"
#include "stamp_cpu.h"
#include "timeutil.h"

namespace kiln {

std::string write_stamp_object_for(const FlatModuleData& flat, const std::vector<StampData>& data,
                                   const std::string& source_name, const StampOutput& code) {
  StampObjectParts parts = stamp_object_parts(flat, code, source_name, &data);
  // extern_weak and hidden declarations: the flat module knows them, the parts do not.
  parts.view.undefined = flat.undefined.data();
  parts.view.undefined_count = static_cast<uint32_t>(flat.undefined.size());
  return write_stamp_object(parts.view, source_name, data);
}

std::string with_local_names(std::string object, const std::string& tag, const std::vector<std::string>& temporaries) {
  CombineResult local = combine_relocatable({std::string_view(object)}, tag, temporaries);
  return local.ok() ? std::move(local.object) : object;
}

std::vector<std::string> private_names(const std::vector<StampData>& data) {
  std::vector<std::string> names;
  for (const StampData& d : data)
    if (d.was_private) names.push_back(d.name);
  return names;
}

InMemoryStamp stamp_whole_module(llvm::Module& module, const std::string& tag) {
  InMemoryStamp r;
  Stopwatch clock;
  materialize_aggregate_constants(module);
  FlatExport flat = export_flat(module);
  r.functions = flat.verdicts.size();
  for (const auto& v : flat.verdicts) {
    r.instructions += v.instructions;
    if (!v.stamp() && r.why.empty()) r.why = "function " + v.name + ": " + v.reasons[0];
  }
  if (!module.getModuleInlineAsm().empty()) r.why = "module-level inline assembly";
  if (!r.why.empty()) {  // checked before any renaming, so LLVM gets the module as it was
    r.export_seconds = clock.seconds();
    return r;
  }
  if (flat.stamp_function_count) expose_local_symbols(module, tag);
  flat.resolve_symbol_names();
  std::vector<StampData> data;
  std::string why = export_globals(module, data);
  r.export_seconds = clock.lap();  // spent whether or not the globals are stamp's
  if (!why.empty()) {
    r.why = "globals: " + why;
    return r;
  }
  StampOutput code = run_stamp_cpu(flat.flat.view(), 1);
  r.stages_seconds = clock.lap();
  std::string object = write_stamp_object_for(flat.flat, data, module.getSourceFileName(), code);
  r.object = with_local_names(std::move(object), tag, private_names(data));
  r.object_seconds = clock.lap();
  return r;
}

}  // namespace kiln
