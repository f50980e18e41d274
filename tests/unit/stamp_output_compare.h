// Test helper: two outputs of stamp's stages are the same, array by array (relocation
// records field by field: their padding is not part of the output).
#pragma once
#include <catch2/catch.hpp>

#include "stamp_cpu.h"

namespace kiln_test {

inline void check_same_output(const kiln::StampOutput& got, const kiln::StampOutput& want) {
  CHECK(got.code == want.code);
  CHECK(got.code_start == want.code_start);
  CHECK(got.code_size == want.code_size);
  CHECK(got.reloc_start == want.reloc_start);
  CHECK(got.reloc_count == want.reloc_count);
  REQUIRE(got.relocs.size() == want.relocs.size());
  for (size_t r = 0; r < want.relocs.size(); ++r) {
    CHECK(got.relocs[r].offset == want.relocs[r].offset);
    CHECK(got.relocs[r].type == want.relocs[r].type);
    CHECK(got.relocs[r].symbol == want.relocs[r].symbol);
    CHECK(got.relocs[r].addend == want.relocs[r].addend);
  }
  CHECK(got.lsda == want.lsda);
  CHECK(got.lsda_start == want.lsda_start);
  CHECK(got.lsda_size == want.lsda_size);
}

}  // namespace kiln_test
