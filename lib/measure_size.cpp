// kiln-measure size: how much code and data a candidate back end emits compared
// with the baseline, read from the ELF section headers of stripped copies.
#include <sys/stat.h>

#include <llvm/Object/Archive.h>
#include <llvm/Object/Binary.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "error.h"
#include "fs.h"
#include "json.h"
#include "kiln_config.h"
#include "measure.h"
#include "process.h"
#include "report.h"
#include "timeutil.h"

namespace kiln {

namespace {

const char* const kStripArguments[] = {"--strip-debug", "--discard-all"};

void add_sections(const llvm::object::ObjectFile& object, SectionSizes& sizes) {
  for (const llvm::object::SectionRef& section : object.sections()) {
    llvm::Expected<llvm::StringRef> name = section.getName();
    if (!name) {
      llvm::consumeError(name.takeError());  // an unnamed section belongs to no row
      continue;
    }
    uint64_t size = section.getSize();
    // -ffunction-sections and friends split code into .text.NAME, .rodata.str1.1, ...
    if (name->starts_with(".text")) sizes.text += size;
    else if (name->starts_with(".rodata")) sizes.rodata += size;
    else if (name->starts_with(".data")) sizes.data += size;
    else if (*name == ".eh_frame") sizes.eh_frame += size;
  }
}

// Adds an ELF object; returns why not when the binary is something else.
std::string add_binary(const llvm::object::Binary& binary, SectionSizes& sizes) {
  const auto* object = llvm::dyn_cast<llvm::object::ObjectFile>(&binary);
  if (!object || !object->isELF()) return "not an ELF file (" + binary.getFileName().str() + ")";
  add_sections(*object, sizes);
  return "";
}

std::string add_archive_members(const llvm::object::Archive& archive, SectionSizes& sizes) {
  std::string problem;
  llvm::Error err = llvm::Error::success();
  for (const llvm::object::Archive::Child& child : archive.children(err)) {
    llvm::Expected<std::unique_ptr<llvm::object::Binary>> member = child.getAsBinary();
    if (!member) {
      problem = "archive member: " + llvm::toString(member.takeError());
      break;
    }
    problem = add_binary(**member, sizes);
    if (!problem.empty()) break;
  }
  // The iteration error must be checked even after a break (LLVM asserts otherwise).
  if (err) problem = "archive: " + llvm::toString(std::move(err));
  return problem;
}

double ratio_of(uint64_t candidate, uint64_t baseline) {
  if (baseline == 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(candidate) / static_cast<double>(baseline);
}

}  // namespace

SectionSizes read_section_sizes(const std::string& path) {
  if (is_directory(path)) throw KilnError(kExitIo, path, "is a directory, not a file");
  if (!path_exists(path)) throw KilnError(kExitIo, path, "no such file");
  // LLVM would read a device such as /dev/zero until memory runs out.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw KilnError(kExitBadInput, path, std::string("is ") + file_kind(st.st_mode) + ", not a regular file");
  auto binary = llvm::object::createBinary(path);
  if (!binary)
    throw KilnError(kExitBadInput, path, "not an ELF object or executable: " + llvm::toString(binary.takeError()));

  SectionSizes sizes;
  const llvm::object::Binary& bin = *binary->getBinary();
  std::string problem;
  if (const auto* archive = llvm::dyn_cast<llvm::object::Archive>(&bin)) problem = add_archive_members(*archive, sizes);
  else problem = add_binary(bin, sizes);
  if (!problem.empty()) throw KilnError(kExitBadInput, path, problem);

  std::error_code ec;
  sizes.file = std::filesystem::file_size(path, ec);
  if (ec) throw KilnError(kExitIo, path, ec.message());
  return sizes;
}

SectionSizes stripped_section_sizes(const std::string& path) {
  // Check first: strip's own complaint about a foreign file is cryptic.
  read_section_sizes(path);
  std::string strip = find_program("strip");
  if (strip.empty()) throw KilnError(kExitMissingTool, "strip", "not found in PATH (it comes with binutils)");

  TempDir dir("kiln-measure-size");
  std::string copy = dir.path + "/" + basename_of(path);
  std::error_code ec;
  std::filesystem::copy_file(path, copy, ec);
  if (ec) throw KilnError(kExitIo, path, "cannot copy to " + copy + ": " + ec.message());
  ProcessResult result = run_process({strip, kStripArguments[0], kStripArguments[1], copy});
  if (result.exit_code != 0)
    throw KilnError(kExitBadInput, path,
                    "strip " + std::string(kStripArguments[0]) + " " + kStripArguments[1] +
                        " failed on a copy of it (status " + std::to_string(result.exit_code) + ")");
  return read_section_sizes(copy);
}

SizeReport measure_size(const std::string& baseline_path, const std::string& candidate_path) {
  SizeReport report;
  report.timestamp = iso8601_now();
  report.baseline_path = absolute_path(baseline_path);
  report.candidate_path = absolute_path(candidate_path);
  SectionSizes base = stripped_section_sizes(baseline_path);
  SectionSizes cand = stripped_section_sizes(candidate_path);
  auto row = [](const char* name, uint64_t b, uint64_t c) { return SizeRow{name, b, c, ratio_of(c, b)}; };
  report.rows = {row(".text", base.text, cand.text), row(".data", base.data, cand.data),
                 row(".rodata", base.rodata, cand.rodata), row(".eh_frame", base.eh_frame, cand.eh_frame),
                 row("total", base.file, cand.file)};
  return report;
}

std::string size_report_json(const SizeReport& report) {
  JsonWriter w;
  w.begin_object();
  w.field("schema", kSizeReportSchema).field("version", kMeasureReportVersion);
  w.field("kiln_version", KILN_VERSION).field("timestamp", report.timestamp);
  w.field("strip", std::string("strip ") + kStripArguments[0] + " " + kStripArguments[1]);
  w.key("baseline").begin_object().field("path", report.baseline_path).end_object();
  w.key("candidate").begin_object().field("path", report.candidate_path).end_object();
  w.key("rows").begin_array();
  for (const SizeRow& r : report.rows) {
    w.begin_object().field("section", r.section).field("baseline", r.baseline).field("candidate", r.candidate);
    w.field("ratio", r.ratio).end_object();  // NaN is written as null
  }
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

std::string size_report_markdown(const SizeReport& report) {
  std::vector<std::vector<std::string>> rows;
  for (const SizeRow& r : report.rows)
    rows.push_back({r.section, std::to_string(r.baseline), std::to_string(r.candidate), format_fixed(r.ratio, 3)});
  std::string out = markdown_table({"section", "baseline (bytes)", "candidate (bytes)", "candidate/baseline"}, rows,
                                   {Align::kLeft, Align::kRight, Align::kRight, Align::kRight});
  out += "\nSizes of copies after `strip " + std::string(kStripArguments[0]) + " " + kStripArguments[1] +
      "`; total is the whole stripped file.\n\n";
  out += "- baseline: " + report.baseline_path + "\n";
  out += "- candidate: " + report.candidate_path + "\n";
  return out;
}

int run_size_command(const std::string& baseline_path, const std::string& candidate_path,
                     const ReportOutputs& outputs) {
  check_report_outputs(outputs);
  SizeReport report = measure_size(baseline_path, candidate_path);
  std::string markdown = size_report_markdown(report);
  if (!outputs.json_path.empty()) write_file_atomic(outputs.json_path, size_report_json(report));
  if (!outputs.markdown_path.empty()) write_file_atomic(outputs.markdown_path, markdown);
  std::fputs(markdown.c_str(), stdout);
  return kExitOk;
}

}  // namespace kiln
