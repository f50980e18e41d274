#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace kiln {

Progress::Progress(std::string label, size_t total)
    : label_(std::move(label)), total_(total), enabled_(::isatty(2) && total > 1) {}

Progress::~Progress() { finish(); }

void Progress::advance(size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_ += n;
  // Redraw at most ~100 times over the whole run.
  if (enabled_ && (total_ < 100 || done_ % (total_ / 100) == 0 || done_ == total_)) draw();
}

void Progress::draw() {
  std::fprintf(stderr, "\r%s %zu/%zu (%3.0f%%)", label_.c_str(), done_, total_,
               total_ ? 100.0 * static_cast<double>(done_) / static_cast<double>(total_) : 100.0);
  std::fflush(stderr);
}

void Progress::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (enabled_ && !finished_) std::fprintf(stderr, "\r\033[K");
  finished_ = true;
}

}  // namespace kiln
