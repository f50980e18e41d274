#include "line_check.h"

#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/DebugInfo/DWARF/DWARFDebugLine.h>
#include <llvm/IR/Module.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include "backend_llvm.h"
#include "backend_stamp.h"
#include "corpus.h"
#include "error.h"
#include "fs.h"
#include "hash.h"
#include "json_writer.h"
#include "progress.h"
#include "stamp_cpu.h"

namespace kiln {

namespace {

constexpr uint32_t kNoRow = UINT32_MAX;  // LineTable::UnknownRowIndex, a member of each table

// Where a function's code is in an object: its section and its range there.
struct FunctionPlace {
  uint64_t section = 0, address = 0, size = 0;
};

// One object read back: its functions by name and its (first) unit's line table.
struct ReadObject {
  std::string bytes;  // what `file` reads, kept here
  std::unique_ptr<llvm::object::ObjectFile> file;
  std::unique_ptr<llvm::DWARFContext> dwarf;
  std::unordered_map<std::string, FunctionPlace> functions;
  const llvm::DWARFDebugLine::LineTable* lines = nullptr;
  std::string comp_dir;
  std::map<uint64_t, std::string> paths;  // file index -> its path, as asked

  ReadObject(std::string object, const std::string& label) : bytes(std::move(object)) {
    auto file_or = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(bytes, label));
    if (!file_or) throw KilnError(kExitInternal, label, "cannot read back an object: " + llvm::toString(file_or.takeError()));
    file = std::move(*file_or);
    for (const llvm::object::SymbolRef& s : file->symbols()) {
      auto type = s.getType();
      auto name = s.getName();
      auto section = s.getSection();
      if (!type || !name || !section || *type != llvm::object::SymbolRef::ST_Function || *section == file->section_end()) {
        if (!type) llvm::consumeError(type.takeError());
        if (!name) llvm::consumeError(name.takeError());
        if (!section) llvm::consumeError(section.takeError());
        continue;
      }
      auto value = s.getValue();
      if (!value) {
        llvm::consumeError(value.takeError());
        continue;
      }
      functions[name->str()] = {(*section)->getIndex(), *value, llvm::object::ELFSymbolRef(s).getSize()};
    }
    dwarf = llvm::DWARFContext::create(*file);
    for (const auto& unit : dwarf->compile_units()) {
      lines = dwarf->getLineTableForUnit(unit.get());
      if (const char* dir = unit->getCompilationDir()) comp_dir = dir;
      break;
    }
  }

  const std::string& path(uint64_t file_index) {
    auto [it, inserted] = paths.emplace(file_index, std::string());
    if (inserted && lines)
      lines->getFileNameByIndex(file_index, comp_dir,
                                llvm::DILineInfoSpecifier::FileLineInfoKind::AbsoluteFilePath, it->second);
    return it->second;
  }
};

// A DIFile's path as a line table's reader spells it: absolute names as they are,
// others under their directory, itself under the unit's directory when relative.
std::string expected_path(const FlatDebugFile& f, const std::string& comp_dir) {
  if (llvm::sys::path::is_absolute(f.name)) return f.name;
  llvm::SmallString<256> p;
  if (f.directory.empty() || !llvm::sys::path::is_absolute(f.directory)) p = comp_dir;
  llvm::sys::path::append(p, f.directory, f.name);
  return std::string(p);
}

// The file and line llvm's rows give any byte of one function.
std::set<std::pair<std::string, uint32_t>> llvm_rows(ReadObject& llvm, const FunctionPlace& at) {
  std::set<std::pair<std::string, uint32_t>> rows;
  if (!llvm.lines) return rows;
  for (const auto& row : llvm.lines->Rows)
    if (!row.EndSequence && row.Address.SectionIndex == at.section && row.Address.Address >= at.address &&
        row.Address.Address < at.address + at.size)
      rows.insert({llvm.path(row.File), row.Line});
  return rows;
}

// The llvm object's name of a stamp function: without the ".kiln.TAG" that
// expose_local_symbols gave a local one.
std::string llvm_name(const std::string& name, const std::string& suffix) {
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return name.substr(0, name.size() - suffix.size());
  return name;
}

void compare_function(const FlatModuleData& flat, const StampOutput& code, uint32_t fn, ReadObject& stamp,
                      ReadObject& llvm, const std::string& suffix, LineAgreement& r) {
  const FlatFunction& f = flat.functions[fn];
  const std::string& name = flat.symbols[f.symbol];
  auto place = stamp.functions.find(name);
  if (place == stamp.functions.end()) throw KilnError(kExitInternal, name, "stamp's object does not define it");
  ++r.functions;
  auto llvm_place = llvm.functions.find(llvm_name(name, suffix));
  std::set<std::pair<std::string, uint32_t>> rows;
  if (llvm_place != llvm.functions.end()) rows = llvm_rows(llvm, llvm_place->second);
  r.llvm_functions += !rows.empty();
  const uint32_t end = f.first_inst + f.inst_count;
  for (uint32_t i = f.first_inst; i < end; ++i) {
    const uint32_t at = code.inst_offset[i], next = i + 1 < end ? code.inst_offset[i + 1] : code.code_size[fn];
    const FlatDebugLocation& loc = flat.debug.locations[i];
    if (next == at || loc.file == 0) continue;
    ++r.instructions;
    std::string want = expected_path(flat.debug.files[loc.file - 1], stamp.comp_dir);
    uint32_t row = stamp.lines ? stamp.lines->lookupAddress({place->second.address + at, place->second.section})
                               : kNoRow;
    if (row == kNoRow) {
      if (r.first_difference.empty())
        r.first_difference = name + " +" + std::to_string(at) + ": no row, want " + want + ":" + std::to_string(loc.line);
      continue;
    }
    const auto& got = stamp.lines->Rows[row];
    const std::string& got_path = stamp.path(got.File);
    if (got_path == want && got.Line == loc.line) ++r.exact;
    else if (r.first_difference.empty())
      r.first_difference = name + " +" + std::to_string(at) + ": row " + got_path + ":" + std::to_string(got.Line) +
          ", want " + want + ":" + std::to_string(loc.line);
    r.as_llvm += rows.count({got_path, got.Line});
  }
}

}  // namespace

LineAgreement check_lines(std::string_view bitcode, const std::string& label) {
  LineAgreement r;
  const std::string tag = xxh3_128_hex(bitcode).substr(0, 12);
  LlvmBackend llvm(Profile::fast);
  ParsedModule stamp_module = llvm.parse(bitcode, label);
  StampPlan plan = plan_stamp_module(*stamp_module, tag);
  const FlatModuleData& flat = plan.flat.flat;
  r.has_debug_info = flat.debug.present();
  if (!r.has_debug_info || flat.functions.empty()) return r;
  StampOutput code = run_stamp_cpu(flat.view(), 1);
  ReadObject stamp(write_stamp_part(plan, *stamp_module, code), label + " (stamp)");
  ParsedModule llvm_module = llvm.parse(bitcode, label);
  ReadObject reference(llvm.codegen(*llvm_module, label), label + " (llvm)");

  std::string report;
  llvm::raw_string_ostream os(report);
  llvm::DIDumpOptions options;
  if (!stamp.dwarf->verify(os, options)) r.verify_errors = report.empty() ? "the verifier failed" : report;
  const std::string suffix = ".kiln." + tag;
  std::vector<std::string> subprograms;
  for (uint32_t fn = 0; fn < flat.functions.size(); ++fn) {
    const FlatDebugFunction& sp = flat.debug.functions[fn];
    if (!sp.has_subprogram) continue;
    compare_function(flat, code, fn, stamp, reference, suffix, r);
    subprograms.push_back(sp.linkage_name.empty() ? sp.name : sp.linkage_name);
  }
  compare_variables(*stamp.dwarf, *reference.dwarf, subprograms, r.variables);
  return r;
}

int run_line_check(const std::string& input, bool corpus, bool json) {
  const auto modules = Corpus::modules_to_check(input, corpus);  // label, path
  LineAgreement total;
  size_t with_debug = 0, failed = 0;
  std::string first_variable_difference;  // the first module's that has one
  Progress progress("checking line tables", modules.size());
  for (const auto& [label, path] : modules) {
    LineAgreement r = check_lines(read_file(path), label);
    progress.advance();
    with_debug += r.has_debug_info;
    total.functions += r.functions, total.instructions += r.instructions, total.exact += r.exact;
    total.as_llvm += r.as_llvm, total.llvm_functions += r.llvm_functions;
    total.variables.llvm += r.variables.llvm, total.variables.stamp += r.variables.stamp;
    total.variables.same += r.variables.same;
    if (first_variable_difference.empty() && !r.variables.first_difference.empty())
      first_variable_difference = label + ": " + r.variables.first_difference;
    const bool bad = !r.verify_errors.empty() || r.exact != r.instructions;
    failed += bad;
    if (json) {
      JsonWriter w;
      w.begin_object();
      w.key("module").value(label).key("debug_info").value(r.has_debug_info);
      w.key("functions").value(r.functions).key("instructions").value(r.instructions);
      w.key("exact").value(r.exact).key("as_llvm").value(r.as_llvm);
      w.key("verify_errors").value(r.verify_errors).key("first_difference").value(r.first_difference);
      w.key("variables").begin_object();
      w.key("llvm").value(r.variables.llvm).key("stamp").value(r.variables.stamp).key("same").value(r.variables.same);
      w.key("first_difference").value(r.variables.first_difference);
      w.end_object();
      w.end_object();
      std::printf("%s\n", w.str().c_str());
    } else if (bad) {
      std::printf("%s: %s%s\n", label.c_str(), r.verify_errors.empty() ? "" : "DWARF verifier failed; ",
                  r.first_difference.c_str());
      if (!r.verify_errors.empty()) std::printf("%s", r.verify_errors.c_str());
    }
  }
  progress.finish();
  if (!json) {
    auto pct = [](uint64_t a, uint64_t b) { return b ? 100.0 * double(a) / double(b) : 100.0; };
    std::printf("%zu modules (%zu with debug information), %zu failing\n", modules.size(), with_debug, failed);
    std::printf("%llu stamp functions with a subprogram (llvm has rows for %llu)\n",
                (unsigned long long)total.functions, (unsigned long long)total.llvm_functions);
    std::printf("%llu located instructions: exact %llu (%.2f%%), as llvm -O0 %llu (%.2f%%)\n",
                (unsigned long long)total.instructions, (unsigned long long)total.exact,
                pct(total.exact, total.instructions), (unsigned long long)total.as_llvm,
                pct(total.as_llvm, total.instructions));
    std::printf("%llu variables in llvm -O0's DWARF, %llu in stamp's: %llu the same (%.2f%% of llvm's)\n",
                (unsigned long long)total.variables.llvm, (unsigned long long)total.variables.stamp,
                (unsigned long long)total.variables.same, pct(total.variables.same, total.variables.llvm));
    if (!first_variable_difference.empty())
      std::printf("first variable difference: %s\n", first_variable_difference.c_str());
  }
  return failed ? kExitFailed : kExitOk;
}

}  // namespace kiln
