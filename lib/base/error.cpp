#include "error.h"

#include <cstdio>
#include <new>

#include "memory.h"

namespace kiln {

int run_tool(const char* tool, int (*body)(int, char**), int argc, char** argv) {
  keep_freed_memory();
  try {
    return body(argc, argv);
  } catch (const KilnError& e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return e.code();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: out of memory\n", tool);
    return kExitIo;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", tool, e.what());
    return kExitInternal;
  }
}

}  // namespace kiln
