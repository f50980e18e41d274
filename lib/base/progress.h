// Progress on a terminal for long work; silent when stderr is not a terminal.
#pragma once
#include <cstddef>
#include <mutex>
#include <string>

namespace kiln {

class Progress {
 public:
  Progress(std::string label, size_t total);
  ~Progress();
  void advance(size_t n = 1);
  void finish();

 private:
  void draw();
  std::string label_;
  size_t total_, done_ = 0;
  bool enabled_, finished_ = false;
  std::mutex mutex_;
};

}  // namespace kiln
