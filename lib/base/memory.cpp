#include "memory.h"

#include <malloc.h>

namespace kiln {

void keep_freed_memory() {
  // glibc maps large blocks afresh (and unmaps them on free) above a threshold that
  // starts at 128 KiB, and gives the heap's top back to the system past another: each
  // module's sections and objects then came from new pages, and clearing them was a
  // twentieth of stamp's emission time. Fixed thresholds keep freed memory for the next
  // module; the peak is unchanged. 32 MiB is the largest mmap threshold glibc accepts.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

}  // namespace kiln
