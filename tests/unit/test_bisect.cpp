// kiln-bisect's search and selection text, driven by simulated tests (no builds).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "bisect.h"

using namespace kiln;

namespace {

std::vector<size_t> range(size_t n) {
  std::vector<size_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = i;
  return all;
}

bool in_set(const std::vector<size_t>& set, size_t i) { return std::binary_search(set.begin(), set.end(), i); }

}  // namespace

TEST_CASE("bisect: one culprit among n is found within 2*ceil(log2 n) probes", "[bisect]") {
  for (size_t n : {1, 2, 3, 5, 8, 13, 64, 100, 1000}) {
    const int bound = 2 * static_cast<int>(std::ceil(std::log2(static_cast<double>(n))));
    for (size_t culprit = 0; culprit < n; culprit += std::max<size_t>(1, n / 37)) {
      int probes = 0;
      auto found = narrow_culprits(range(n), [&](const std::vector<size_t>& set, size_t left) {
        REQUIRE(left <= n);
        REQUIRE(std::is_sorted(set.begin(), set.end()));
        probes++;
        return in_set(set, culprit);
      });
      CHECK(found == std::vector<size_t>{culprit});
      CHECK(probes <= bound);
    }
  }
}

TEST_CASE("bisect: a failure that needs two items together finds both", "[bisect]") {
  for (auto [a, b] : {std::pair<size_t, size_t>{0, 1}, {3, 90}, {49, 50}, {0, 99}, {17, 18}}) {
    auto found = narrow_culprits(range(100), [&](const std::vector<size_t>& set, size_t) {
      return in_set(set, a) && in_set(set, b);
    });
    CHECK(found == std::vector<size_t>{a, b});
  }
}

TEST_CASE("bisect: a failure that needs three items together finds the three", "[bisect]") {
  auto found = narrow_culprits(range(200), [&](const std::vector<size_t>& set, size_t) {
    return in_set(set, 7) && in_set(set, 120) && in_set(set, 121);
  });
  CHECK(found == std::vector<size_t>{7, 120, 121});
}

TEST_CASE("bisect: two culprits that each fail alone: one of them, the same every time", "[bisect]") {
  auto probe = [](const std::vector<size_t>& set, size_t) { return in_set(set, 30) || in_set(set, 70); };
  auto first = narrow_culprits(range(100), probe);
  REQUIRE(first.size() == 1);
  CHECK((first[0] == 30 || first[0] == 70));
  CHECK(narrow_culprits(range(100), probe) == first);
  // With that one kept off the candidate (kiln-bisect --exclude), the other is found.
  std::vector<size_t> rest;
  for (size_t i : range(100))
    if (i != first[0]) rest.push_back(i);
  auto second = narrow_culprits(rest, probe);
  REQUIRE(second.size() == 1);
  CHECK(second[0] != first[0]);
}

TEST_CASE("bisect: selection text, module lines for whole modules, sorted", "[bisect]") {
  const std::string m1(32, 'a'), m2(32, 'b');
  std::vector<BisectItem> items = {{m2, "zeta"}, {m1, "beta"}, {m1, "alpha"}, {m2, "eta"}};
  CHECK(selection_text(items, {}) == "# kiln-selection 1\n");
  CHECK(selection_text(items, {1, 2}) == "# kiln-selection 1\nmodule " + m1 + "\n");
  CHECK(selection_text(items, {3, 0, 2}) ==
        "# kiln-selection 1\nfunction " + m1 + " alpha\nmodule " + m2 + "\n");
  CHECK(selection_text(items, {3}) == "# kiln-selection 1\nfunction " + m2 + " eta\n");
  // A module where --exclude kept a function on llvm is never a module line: that
  // would select the excluded function too.
  CHECK(selection_text(items, {1, 2}, {m1}) ==
        "# kiln-selection 1\nfunction " + m1 + " alpha\nfunction " + m1 + " beta\n");
  // Whole-module items (a cmd: candidate) always give module lines.
  std::vector<BisectItem> modules = {{m1, ""}, {m2, ""}};
  CHECK(selection_text(modules, {1}) == "# kiln-selection 1\nmodule " + m2 + "\n");
}
