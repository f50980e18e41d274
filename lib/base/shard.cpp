#include "shard.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <tuple>

#include "error.h"

namespace kiln {

namespace {

// A decimal number filling all of `text`, at most 2^32-1; false for anything else
// ("", "+1", " 1", "1x", out of range).
bool whole_number(std::string_view text, uint32_t& out) {
  if (text.empty() || text.size() > 10) return false;
  auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), out);
  return err == std::errc() && end == text.data() + text.size();
}

}  // namespace

Shard parse_shard(const std::string& value, const std::string& option) {
  auto bad = [&](const std::string& why) {
    return KilnError(kExitUsage, "", option + " " + value + ": " + why + " (expected K/N with 1 <= K <= N, e.g. 2/4)");
  };
  size_t slash = value.find('/');
  if (slash == std::string::npos) throw bad("not K/N");
  Shard s;
  std::string_view v(value);
  if (!whole_number(v.substr(0, slash), s.k) || !whole_number(v.substr(slash + 1), s.n)) throw bad("not K/N");
  if (s.n == 0) throw bad("N must be at least 1");
  if (s.k == 0 || s.k > s.n) throw bad("K must be between 1 and N");
  s.given = true;
  return s;
}

Shard shard_option(const std::string& value, bool given, const std::string& option) {
  return given ? parse_shard(value, option) : Shard{};
}

uint32_t shard_of(const std::string& id, uint32_t n) {
  uint64_t prefix = 0;
  auto [end, err] = std::from_chars(id.data(), id.data() + std::min<size_t>(id.size(), 16), prefix, 16);
  if (id.size() < 16 || err != std::errc() || end != id.data() + 16)
    throw KilnError(kExitBadInput, "", "not a module id (32 hex digits): " + id);
  return static_cast<uint32_t>(prefix % std::max<uint32_t>(n, 1)) + 1;
}

bool in_shard(const std::string& id, Shard shard) { return shard.n == 1 || shard_of(id, shard.n) == shard.k; }

}  // namespace kiln

namespace kiln {

std::vector<std::string> find_shard_files(const std::string& dir, const std::string& stem, const std::string& ext) {
  struct Found {
    uint32_t n, k;
    std::string path;
  };
  std::vector<Found> found;
  std::error_code ec;
  const std::string head = stem + ".shard-", tail = "." + ext;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.size() <= head.size() + tail.size() || name.rfind(head, 0) != 0 ||
        name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
      continue;
    std::string middle = name.substr(head.size(), name.size() - head.size() - tail.size());  // K-of-N
    size_t of = middle.find("-of-");
    uint32_t k = 0, n = 0;
    if (of == std::string::npos || !whole_number(std::string_view(middle).substr(0, of), k) ||
        !whole_number(std::string_view(middle).substr(of + 4), n))
      continue;
    found.push_back({n, k, e.path().string()});
  }
  if (ec) throw KilnError(kExitIo, dir, ec.message());
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return std::tie(a.n, a.k) < std::tie(b.n, b.k); });
  std::vector<std::string> paths;
  for (auto& f : found) paths.push_back(std::move(f.path));
  return paths;
}

}  // namespace kiln
