// The probe in a CUDA build: asks the runtime for every device and where it sits
// (PCI bus id, and that device's NUMA node from sysfs).
#include <cuda_runtime.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <string>

#include "gpu_probe.h"

namespace kiln {

int gpu_numa_node(int device) {
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess) return -1;
  std::string id(bus);
  for (auto& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // sysfs names PCI devices with a 4-digit domain; CUDA gives 8 digits.
  if (id.size() > 12 && id.find(':') == 8) id = id.substr(4);
  std::ifstream f("/sys/bus/pci/devices/" + id + "/numa_node");
  int node = -1;
  if (f) f >> node;
  return node;
}

std::string gpu_unavailable_reason() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) return std::string("CUDA runtime: ") + cudaGetErrorString(err);
  if (count == 0) return "no CUDA device found";
  return "";
}

std::string gpu_profile_json() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return "[]";
  std::string out = "[";
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    char bus[32];
    cudaDeviceGetPCIBusId(bus, sizeof bus, d);
    char item[512];
    std::snprintf(item, sizeof item,
                  "%s{\"index\":%d,\"name\":\"%s\",\"sm_count\":%d,\"compute_capability\":\"%d.%d\","
                  "\"memory_bytes\":%llu,\"pci_bus_id\":\"%s\",\"numa_node\":%s}",
                  d ? "," : "", d, prop.name, prop.multiProcessorCount, prop.major, prop.minor,
                  static_cast<unsigned long long>(prop.totalGlobalMem), bus, std::to_string(gpu_numa_node(d)).c_str());
    out += item;
  }
  return out + "]";
}

}  // namespace kiln
