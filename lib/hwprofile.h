// The machine a measurement ran on: CPU, cores, NUMA layout, caches, memory, kernel
// and GPUs. Reports embed it so that numbers from different machines are never
// compared by mistake.
#pragma once
#include <string>

namespace kiln {

// One JSON object. Facts the system does not expose (e.g. caches inside some VMs)
// are empty arrays or null rather than guesses.
std::string hardware_profile_json();

// A few readable lines summarising a profile produced by hardware_profile_json().
// Throws KilnError(kExitBadInput) when the text is not such a profile.
std::string hardware_profile_table(const std::string& json);

}  // namespace kiln
