#include "flat_file.h"

#include <dirent.h>

#include <algorithm>
#include <cstring>

#include "counted_bytes.h"
#include "error.h"
#include "stamp_cpu.h"
#include "stamp_object.h"

namespace kiln {

namespace {

const char kMagic[8] = {'K', 'I', 'L', 'N', 'F', 'L', 'A', 'T'};

// Version 12: flag 8 (prototyped) and the return type after the scope line.
void put_debug_functions(std::string& out, const std::vector<FlatDebugFunction>& functions) {
  put_value(out, uint64_t(functions.size()));
  for (const FlatDebugFunction& f : functions) {
    put_value(out, uint8_t(f.has_subprogram | f.local_to_unit << 1 | f.main_subprogram << 2 | f.prototyped << 3));
    put_value(out, f.scope), put_value(out, f.file), put_value(out, f.line), put_value(out, f.scope_line);
    put_value(out, f.type);
    put_string(out, f.name), put_string(out, f.linkage_name);
  }
}

std::vector<FlatDebugFunction> read_debug_functions(CountedReader& r, uint64_t version) {
  uint64_t n = r.count(version >= 12 ? 37 : 33);
  std::vector<FlatDebugFunction> functions(n);
  for (FlatDebugFunction& f : functions) {
    uint8_t flags = r.value<uint8_t>();
    f.has_subprogram = flags & 1, f.local_to_unit = flags & 2, f.main_subprogram = flags & 4;
    f.prototyped = flags & 8;
    f.scope = r.value<uint32_t>(), f.file = r.value<uint32_t>(), f.line = r.value<uint32_t>();
    f.scope_line = r.value<uint32_t>();
    if (version >= 12) f.type = r.value<uint32_t>();
    f.name = r.string(), f.linkage_name = r.string();
  }
  return functions;
}

// Version 9: variables and types.
void put_debug_variables(std::string& out, const std::vector<FlatDebugVariable>& variables) {
  put_value(out, uint64_t(variables.size()));
  for (const FlatDebugVariable& v : variables) {
    for (uint32_t field : {v.function, v.inline_site, v.block, v.arg, v.file, v.line, v.type, v.flags, v.storage})
      put_value(out, field);
    put_value(out, v.storage_kind);
    put_string(out, v.name);
    put_array(out, v.expression);
  }
}

std::vector<FlatDebugVariable> read_debug_variables(CountedReader& r) {
  std::vector<FlatDebugVariable> variables(r.count(9 * 4 + 1 + 16));
  for (FlatDebugVariable& v : variables) {
    for (uint32_t* field : {&v.function, &v.inline_site, &v.block, &v.arg, &v.file, &v.line, &v.type, &v.flags,
                            &v.storage})
      *field = r.value<uint32_t>();
    v.storage_kind = r.value<uint8_t>();
    v.name = r.string();
    v.expression = r.array<uint64_t>();
  }
  return variables;
}

// Version 12: a pointer to member's class after the discriminator.
void put_debug_types(std::string& out, const std::vector<FlatDebugType>& types) {
  put_value(out, uint64_t(types.size()));
  for (const FlatDebugType& t : types) {
    put_value(out, t.tag), put_value(out, t.encoding);
    for (uint32_t field :
         {t.flags, t.scope, t.parent_type, t.file, t.line, t.type, t.discriminator, t.containing_type, t.align_bits})
      put_value(out, field);
    put_value(out, t.size_bits), put_value(out, t.offset_bits), put_value(out, t.value);
    put_string(out, t.name);
    put_array(out, t.elements);
  }
}

std::vector<FlatDebugType> read_debug_types(CountedReader& r, uint64_t version) {
  const bool has_class = version >= 12;
  std::vector<FlatDebugType> types(r.count(2 * 2 + (has_class ? 9 : 8) * 4 + 3 * 8 + 16));
  for (FlatDebugType& t : types) {
    t.tag = r.value<uint16_t>(), t.encoding = r.value<uint16_t>();
    for (uint32_t* field : {&t.flags, &t.scope, &t.parent_type, &t.file, &t.line, &t.type, &t.discriminator})
      *field = r.value<uint32_t>();
    if (has_class) t.containing_type = r.value<uint32_t>();
    t.align_bits = r.value<uint32_t>();
    t.size_bits = r.value<uint64_t>(), t.offset_bits = r.value<uint64_t>(), t.value = r.value<int64_t>();
    t.name = r.string();
    t.elements = r.array<uint32_t>();
  }
  return types;
}

// Version 13: global variables.
void put_debug_globals(std::string& out, const std::vector<FlatDebugGlobal>& globals) {
  put_value(out, uint64_t(globals.size()));
  for (const FlatDebugGlobal& g : globals) {
    for (uint32_t field : {g.symbol, g.scope, g.function, g.file, g.line, g.type, g.align_bits}) put_value(out, field);
    put_value(out, uint8_t(g.local_to_unit));
    put_string(out, g.name), put_string(out, g.linkage_name);
  }
}

std::vector<FlatDebugGlobal> read_debug_globals(CountedReader& r) {
  std::vector<FlatDebugGlobal> globals(r.count(7 * 4 + 1 + 16));
  for (FlatDebugGlobal& g : globals) {
    for (uint32_t* field : {&g.symbol, &g.scope, &g.function, &g.file, &g.line, &g.type, &g.align_bits})
      *field = r.value<uint32_t>();
    const uint8_t flags = r.value<uint8_t>();
    if (flags > 1) r.fail("corrupt flat IR file: debug global's flags out of range");
    g.local_to_unit = flags;
    g.name = r.string(), g.linkage_name = r.string();
  }
  return globals;
}

// Versions 6 to 8 wrote inline sites and locations without their blocks.
std::vector<FlatDebugInlineSite> read_debug_inline_sites(CountedReader& r, uint64_t version) {
  if (version >= 9) return r.array<FlatDebugInlineSite>();
  struct Version6Site {
    uint32_t parent, callee, call_file, call_line, call_column;
  };
  std::vector<Version6Site> old = r.array<Version6Site>();
  std::vector<FlatDebugInlineSite> sites(old.size());
  for (size_t i = 0; i < old.size(); ++i)
    sites[i] = {old[i].parent, old[i].callee, old[i].call_file, old[i].call_line, old[i].call_column, 0};
  return sites;
}

std::vector<FlatDebugLocation> read_debug_locations(CountedReader& r, uint64_t version) {
  if (version >= 9) return r.array<FlatDebugLocation>();
  struct Version6Location {
    uint32_t file, line, column, inline_site;
  };
  std::vector<Version6Location> old = r.array<Version6Location>();
  std::vector<FlatDebugLocation> locations(old.size());
  for (size_t i = 0; i < old.size(); ++i)
    locations[i] = {old[i].file, old[i].line, old[i].column, old[i].inline_site, 0};
  return locations;
}

// Version 6: the debug information stamp writes as DWARF (flat_debug.h).
void put_debug_info(std::string& out, const FlatDebugInfo& d) {
  put_value(out, d.dwarf_version);
  put_value(out, static_cast<uint8_t>(d.emission));
  put_value(out, d.language);
  put_string(out, d.producer);
  put_string(out, d.name);
  put_string(out, d.directory);
  put_value(out, uint64_t(d.files.size()));
  for (const FlatDebugFile& f : d.files) put_string(out, f.directory), put_string(out, f.name);
  put_value(out, uint64_t(d.scopes.size()));
  for (const FlatDebugScope& s : d.scopes) put_value(out, s.parent), put_value(out, s.tag), put_string(out, s.name);
  put_debug_functions(out, d.functions);
  put_debug_functions(out, d.inlined);
  put_array(out, d.inline_sites);
  put_array(out, d.locations);
  put_array(out, d.blocks);
  put_debug_variables(out, d.variables);
  put_debug_types(out, d.types);
  put_debug_globals(out, d.globals);
}

FlatDebugInfo read_debug_info(CountedReader& r, uint64_t version) {
  FlatDebugInfo d;
  d.dwarf_version = r.value<uint32_t>();
  uint8_t emission = r.value<uint8_t>();
  if (emission > uint8_t(DebugEmission::line_tables)) r.fail("corrupt flat IR file: debug emission kind out of range");
  d.emission = static_cast<DebugEmission>(emission);
  d.language = r.value<uint32_t>();
  d.producer = r.string(), d.name = r.string(), d.directory = r.string();
  // Files take at least 16 bytes (two counts), scopes 14, functions 33 (37 from version 12).
  uint64_t n = r.count(16);
  d.files.resize(n);
  for (FlatDebugFile& f : d.files) f.directory = r.string(), f.name = r.string();
  n = r.count(14);
  d.scopes.resize(n);
  for (FlatDebugScope& s : d.scopes) s.parent = r.value<uint32_t>(), s.tag = r.value<uint16_t>(), s.name = r.string();
  d.functions = read_debug_functions(r, version);
  d.inlined = read_debug_functions(r, version);
  d.inline_sites = read_debug_inline_sites(r, version);
  d.locations = read_debug_locations(r, version);
  if (version >= 9) {
    d.blocks = r.array<FlatDebugBlock>();
    d.variables = read_debug_variables(r);
    d.types = read_debug_types(r, version);
  }
  if (version >= 13) d.globals = read_debug_globals(r);
  return d;
}

}  // namespace

std::string write_flat_file(const FlatModuleData& flat, const std::string& source_name, FlatFileDebug debug) {
  std::string out(kMagic, sizeof kMagic);
  uint64_t version = kFlatFileVersion;
  out.append(reinterpret_cast<const char*>(&version), sizeof version);
  put_string(out, source_name);
  put_array(out, flat.functions);
  put_array(out, flat.blocks);
  put_array(out, flat.insts);
  put_array(out, flat.operands);
  put_array(out, flat.arg_widths);
  put_array(out, flat.bindings);
  put_array(out, flat.visibilities);
  uint64_t n = flat.symbols.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  for (const auto& s : flat.symbols) put_string(out, s);
  n = flat.sections.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  for (const auto& s : flat.sections) put_string(out, s);
  // Version 3: the undefined symbols that are not plain references (extern_weak,
  // hidden, protected), so an object emitted from the file links as one from bitcode.
  n = flat.undefined.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  for (const auto& u : flat.undefined) {
    put_string(out, u.name);
    out.push_back(static_cast<char>(u.binding));
    out.push_back(static_cast<char>(u.visibility));
  }
  put_debug_info(out, debug == FlatFileDebug::keep ? flat.debug : FlatDebugInfo{});
  return out;
}

namespace {

// The file's arrays and tables as they are, checked only for what parsing needs: the
// magic, the version, lengths inside the file, and enumerations a byte holds.
FlatModuleData parse_flat_file(const std::string& bytes, const std::string& path, std::string* source_name) {
  if (bytes.size() < 16 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw KilnError(kExitBadInput, path, "not a kiln flat IR file");
  CountedReader r(std::string_view(bytes).substr(sizeof kMagic), path, "truncated flat IR file");
  uint64_t version = r.u64();
  if (version == 0) throw KilnError(kExitBadInput, path, "corrupt flat IR file: version 0");
  if (version > static_cast<uint64_t>(kFlatFileVersion))
    throw KilnError(kExitNewerSchema, path,
                    "flat IR version " + std::to_string(version) + " is newer than this kiln reads");
  std::string source = r.string();
  if (source_name) *source_name = source;
  FlatModuleData f;
  f.functions = r.array<FlatFunction>();
  f.blocks = r.array<FlatBlock>();
  f.insts = r.array<FlatInst>();
  f.operands = r.array<FlatOperand>();
  f.arg_widths = r.array<uint8_t>();
  f.bindings = r.array<SymbolBinding>();
  f.visibilities = r.array<SymbolVisibility>();
  uint64_t n = r.u64();
  for (uint64_t i = 0; i < n; ++i) f.symbols.push_back(r.string());
  n = r.u64();
  for (uint64_t i = 0; i < n; ++i) f.sections.push_back(r.string());
  if (version >= 3) {
    n = r.u64();
    for (uint64_t i = 0; i < n; ++i) {
      UndefinedSymbol u;
      u.name = r.string();
      uint8_t kinds[2] = {r.value<uint8_t>(), r.value<uint8_t>()};
      if (kinds[0] > uint8_t(SymbolBinding::weak) || kinds[1] > uint8_t(SymbolVisibility::protected_))
        throw KilnError(kExitBadInput, path,
                        "corrupt flat IR file: undefined symbol's binding or visibility out of range");
      u.binding = static_cast<SymbolBinding>(kinds[0]);
      u.visibility = static_cast<SymbolVisibility>(kinds[1]);
      f.undefined.push_back(std::move(u));
    }
  }
  if (version >= 6) f.debug = read_debug_info(r, version);
  return f;
}

}  // namespace

FlatModuleData read_flat_file(const std::string& bytes, const std::string& path, std::string* source_name) {
  FlatModuleData f = parse_flat_file(bytes, path, source_name);
  // Every index must point inside its array: a corrupt file must not crash the stages.
  std::string defect = check_flat_module(f);
  if (!defect.empty()) throw KilnError(kExitBadInput, path, "corrupt flat IR file: " + defect);
  return f;
}

std::string emit_flat_module(const FlatModuleData& flat, const std::string& source_name) {
  StampOutput code = run_stamp_cpu(flat.view(), 1);
  return write_stamp_object(stamp_object_parts(flat, code, source_name).view, source_name);
}

StampObjectParts stamp_object_parts(const FlatModuleData& flat, const StampOutput& code, const std::string& source_name,
                                    const std::vector<StampData>* data) {
  StampObjectParts parts;
  const size_t F = flat.functions.size();
  parts.function_name.resize(F);
  parts.personality.resize(F);
  for (size_t fn = 0; fn < F; ++fn) {
    parts.function_name[fn] = flat.functions[fn].symbol;
    parts.personality[fn] =
        (flat.functions[fn].flags & kFnHasPersonality) ? flat.functions[fn].personality : kNoPersonality;
  }
  StampObjectView& v = parts.view;
  v.names = flat.symbols.data();
  v.name_count = static_cast<uint32_t>(flat.symbols.size());
  v.function_count = static_cast<uint32_t>(F);
  v.function_name = parts.function_name.data();
  v.binding = flat.bindings.data();
  v.visibility = flat.visibilities.data();
  v.section = flat.sections.data();
  v.undefined = flat.undefined.data();
  v.undefined_count = static_cast<uint32_t>(flat.undefined.size());
  v.code = code.code.data();
  v.code_start = code.code_start.data();
  v.code_size = code.code_size.data();
  v.relocs = code.relocs.data();
  v.reloc_start = code.reloc_start.data();
  v.reloc_count = code.reloc_count.data();
  v.personality = parts.personality.data();
  v.lsda = code.lsda.data();
  v.lsda_start = code.lsda_start.data();
  v.lsda_size = code.lsda_size.data();
  if (flat.debug.present()) {
    parts.dwarf = std::make_unique<StampDwarf>(build_stamp_dwarf(flat, code, source_name, data));
    v.dwarf = parts.dwarf.get();
  }
  return parts;
}

std::vector<std::string> flat_files_named(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const std::string& a : args) {
    DIR* dir = opendir(a.c_str());
    if (!dir) {
      files.push_back(a);
      continue;
    }
    std::vector<std::string> found;
    while (dirent* d = readdir(dir)) {
      std::string name = d->d_name;
      if (name.size() > 5 && name.compare(name.size() - 5, 5, ".flat") == 0) found.push_back(a + "/" + name);
    }
    closedir(dir);
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

}  // namespace kiln
