// The process's allocator settings for emission work.
#pragma once

namespace kiln {

// Freed memory stays in the process for the next allocation instead of going back to
// the system (glibc's mmap and trim thresholds fixed high). run_tool calls it.
void keep_freed_memory();

}  // namespace kiln
