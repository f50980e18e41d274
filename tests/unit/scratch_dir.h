// A temporary directory for one test, removed with everything in it when the test ends.
#pragma once
#include <string>

#include "fs.h"

namespace kiln_test {

struct ScratchDir {
  std::string path = kiln::make_temp_dir("kiln-test");
  ~ScratchDir() { kiln::remove_tree(path); }
};

}  // namespace kiln_test
