// What the CUDA runtime sees: a JSON array of GPUs ("[]" in a build without CUDA
// or on a machine without a usable GPU). Used by the hardware profile.
#pragma once
#include <string>

namespace kiln {

std::string gpu_profile_json();
// Why no GPU is usable (empty when one is), for clear messages.
std::string gpu_unavailable_reason();
// The NUMA node of CUDA device `device` (sysfs), or -1 when unknown. CUDA builds only.
int gpu_numa_node(int device);

}  // namespace kiln
