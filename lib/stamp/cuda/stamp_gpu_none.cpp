// The CUDA executor in a build without CUDA: there is none, and it says why.
#include "stamp_gpu.h"

namespace kiln {

std::unique_ptr<StampGpuExecutor> open_stamp_gpu(int, std::string* why) {
  if (why) *why = "this kiln was built without CUDA (nvcc was not found when it was configured)";
  return nullptr;
}

}  // namespace kiln
