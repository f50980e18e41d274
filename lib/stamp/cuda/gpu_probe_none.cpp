// The probe in a build without the CUDA executor.
#include "gpu_probe.h"

namespace kiln {

std::string gpu_profile_json() { return "[]"; }
std::string gpu_unavailable_reason() {
  return "this kiln was built without CUDA (meson -Dcuda=enabled with nvcc present)";
}

}  // namespace kiln
