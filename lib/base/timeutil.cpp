#include "timeutil.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace kiln {

std::string iso8601_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double unix_seconds_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double seconds_since_process_start() {
  // Field 22 of /proc/self/stat is the start time in clock ticks since boot; the
  // command name (field 2) may hold spaces, so fields are counted after its ')'.
  std::FILE* f = std::fopen("/proc/self/stat", "r");
  if (!f) return 0;
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');
  if (!p) return 0;
  unsigned long long start_ticks = 0;
  int field = 2;
  for (const char* q = p + 1; *q && field < 22; ++q)
    if (*q == ' ') {
      ++field;
      if (field == 22) start_ticks = std::strtoull(q + 1, nullptr, 10);
    }
  timespec boot{};
  long ticks = ::sysconf(_SC_CLK_TCK);
  if (field != 22 || ticks <= 0 || ::clock_gettime(CLOCK_BOOTTIME, &boot) != 0) return 0;
  double since = boot.tv_sec + boot.tv_nsec * 1e-9 - static_cast<double>(start_ticks) / ticks;
  return since > 0 ? since : 0;
}

}  // namespace kiln
