// Clocks: wall-clock stamps for manifests, a steady stopwatch for stage timing.
#pragma once
#include <chrono>
#include <string>

namespace kiln {

std::string iso8601_now();  // UTC, e.g. 2026-11-30T19:48:53Z
double unix_seconds_now();   // seconds since 1970 (UTC), with fractions: timelines' clock
// The CPU time this process has used so far, user and system, to the nanosecond: at
// the top of main, what exec, dynamic loading and static constructors cost it. (Its
// wall-clock age is known only to the kernel's clock tick, 10 ms, which overstated a
// 3.5 ms start as 10 to 15.) 0 when it cannot be read.
double process_cpu_seconds();

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  // Seconds since the last lap (or the start), then restarts the lap.
  double lap() {
    auto now = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(now - start_).count();
    start_ = now;
    return s;
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kiln
