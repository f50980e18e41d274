#include "selection.h"

#include <cstdlib>
#include <memory>
#include <mutex>

#include "error.h"
#include "fs.h"
#include "hash.h"

namespace kiln {

namespace {

// Fields separated by exactly one space or tab: an empty field is a mistake (two
// separators, or one at either end), not something to guess about.
std::vector<std::string> fields_of(std::string_view line) {
  std::vector<std::string> out(1);
  for (char c : line) {
    if (c == ' ' || c == '\t') out.emplace_back();
    else out.back().push_back(c);
  }
  return out;
}

[[noreturn]] void bad_line(const std::string& path, size_t line, const std::string& why) {
  throw KilnError(kExitBadInput, path + ":" + std::to_string(line), why);
}

// BITS: 1 to 64 binary digits, lowest bit last (as Go's bisect writes hash suffixes).
bool parse_bits(const std::string& bits, uint64_t& value, uint64_t& mask) {
  if (bits.empty() || bits.size() > 64 || bits.find_first_not_of("01") != std::string::npos) return false;
  value = 0;
  for (char c : bits) value = (value << 1) | static_cast<uint64_t>(c == '1');
  mask = bits.size() == 64 ? ~uint64_t(0) : (uint64_t(1) << bits.size()) - 1;
  return true;
}

}  // namespace

Selection parse_selection(std::string_view text, const std::string& path) {
  Selection s;
  s.path_ = path;
  size_t number = 0, start = 0;
  while (start < text.size() || number == 0) {
    size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (++number == 1) {
      if (line != kSelectionHeader) bad_line(path, 1, std::string("the first line must be '") + kSelectionHeader + "'");
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> f = fields_of(line);
    for (const auto& field : f)
      if (field.empty()) bad_line(path, number, "empty field (fields are separated by one space or tab)");
    const std::string canonical = [&] {
      std::string c;
      for (const auto& field : f) c += (c.empty() ? "" : " ") + field;
      return c;
    }();
    if (f[0] == "module" && f.size() == 2) {
      if (!is_content_id(f[1])) bad_line(path, number, "'" + f[1] + "' is not a module id (32 lowercase hex digits)");
      s.modules_.insert(f[1]);
      s.module_lines_[f[1]].insert(canonical);
    } else if (f[0] == "function" && f.size() == 3) {
      if (f[1] == "*") {
        s.any_module_functions_.insert(f[2]);
        s.any_module_lines_.insert(canonical);
      } else {
        if (!is_content_id(f[1]))
          bad_line(path, number, "'" + f[1] + "' is not a module id (32 lowercase hex digits) or *");
        s.functions_[f[1]].insert(f[2]);
        s.module_lines_[f[1]].insert(canonical);
      }
    } else if (f[0] == "hash" && f.size() == 2) {
      Selection::HashBits h{};
      if (!parse_bits(f[1], h.value, h.mask)) bad_line(path, number, "'" + f[1] + "' is not 1 to 64 binary digits");
      s.hashes_.push_back(h);
      s.any_module_lines_.insert(canonical);
    } else if (f[0] == "module" || f[0] == "function" || f[0] == "hash") {
      bad_line(path, number,
               "'" + f[0] + "' takes " + (f[0] == "function" ? "2 fields (ID|* NAME)" : "1 field") + ", not " +
                   std::to_string(f.size() - 1));
    } else {
      bad_line(path, number, "unknown keyword '" + f[0] + "' (expected module, function or hash)");
    }
  }
  return s;
}

Selection load_selection(const std::string& path) { return parse_selection(read_file(path), path); }

bool Selection::selects_module(const std::string& id) const {
  return !any_module_lines_.empty() || module_lines_.count(id);
}

bool Selection::selects(const std::string& id, std::string_view name) const {
  if (modules_.count(id)) return true;
  const std::string n(name);
  if (auto it = functions_.find(id); it != functions_.end() && it->second.count(n)) return true;
  if (any_module_functions_.count(n)) return true;
  if (hashes_.empty()) return false;
  const uint64_t h = xxh3_64(name);
  for (const HashBits& b : hashes_)
    if ((h & b.mask) == b.value) return true;
  return false;
}

std::string Selection::digest_for(const std::string& id) const {
  // Sorted and without duplicates (sets): the order of lines in the file selects
  // nothing, so it does not change the digest either.
  std::string text = std::string(kSelectionHeader) + '\n';
  if (auto it = module_lines_.find(id); it != module_lines_.end())
    for (const auto& line : it->second) text += line + '\n';
  text += "--\n";
  for (const auto& line : any_module_lines_) text += line + '\n';
  return xxh3_128_hex(text).substr(0, 16);
}

const Selection* active_selection() {
  const char* env = std::getenv(kEnvSelection);
  if (!env || !*env) return nullptr;
  // Kept for the life of the process: filters and back ends hold pointers to them.
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Selection>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Selection>& s = loaded[env];
  if (!s) s = std::make_unique<Selection>(load_selection(env));
  return s.get();
}

FunctionFilter selection_filter(const std::string& id) {
  const Selection* s = active_selection();
  if (!s) return {};
  return [s, id](const std::string& name) { return s->selects(id, name); };
}

std::string selection_digest(const std::string& id) {
  const Selection* s = active_selection();
  return s ? s->digest_for(id) : std::string();
}

void use_selection_file(const std::string& path) {
  const std::string absolute = absolute_path(path);
  load_selection(absolute);
  ::setenv(kEnvSelection, absolute.c_str(), 1);
}

std::string selection_file_for_hash(const std::string& bits, const std::string& dir) {
  uint64_t value = 0, mask = 0;
  if (!parse_bits(bits, value, mask))
    throw KilnError(kExitUsage, "--candidate-hash", "'" + bits + "' is not 1 to 64 binary digits");
  make_dirs(dir);
  const std::string path = dir + "/selection-hash-" + bits + ".txt";
  write_file_atomic(path, std::string(kSelectionHeader) + "\nhash " + bits + "\n");
  return path;
}

std::vector<std::string> test_fault_names() {
  std::vector<std::string> names;
  const char* env = std::getenv(kEnvTestFault);
  if (!env) return names;
  std::string_view rest(env);
  while (!rest.empty()) {
    const size_t comma = std::min(rest.find(','), rest.size());
    if (comma) names.emplace_back(rest.substr(0, comma));
    rest.remove_prefix(std::min(comma + 1, rest.size()));
  }
  return names;
}

std::vector<std::string> apply_test_faults(FlatModuleData& flat) {
  std::vector<std::string> applied;
  const std::vector<std::string> names = test_fault_names();
  if (names.empty()) return applied;
  for (const FlatFunction& fn : flat.functions) {
    const std::string& symbol = flat.symbols.at(fn.symbol);
    auto named = [&](const std::string& n) {
      return symbol == n ||
          (symbol.size() > n.size() + 6 && symbol.compare(0, n.size(), n) == 0 &&
           symbol.compare(n.size(), 6, ".kiln.") == 0);
    };
    auto it = std::find_if(names.begin(), names.end(), named);
    if (it == names.end()) continue;
    for (uint32_t i = fn.first_inst; i < fn.first_inst + fn.inst_count; ++i) {
      const FlatInst& inst = flat.insts[i];
      if (inst.op != kOpCondBr || inst.operand_count < 3) continue;
      std::swap(flat.operands[inst.first_operand + 1], flat.operands[inst.first_operand + 2]);
      applied.push_back(*it);
      break;
    }
  }
  return applied;
}

}  // namespace kiln
