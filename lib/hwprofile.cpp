#include "hwprofile.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "error.h"
#include "gpu_probe.h"
#include "json.h"

namespace kiln {

namespace {

// sysfs and procfs files are tiny and may be missing (containers, VMs): a missing
// file is an unknown fact, never an error.
std::string read_small_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "name : value" lines of /proc/cpuinfo or "Name:  N kB" lines of meminfo files.
std::string field_of(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (trim(line.substr(0, colon)) == name) return trim(line.substr(colon + 1));
  }
  return "";
}

// "5728032 kB" -> bytes; 0 when absent.
uint64_t kib_field_bytes(const std::string& text, const std::string& name) {
  std::string v = field_of(text, name);
  return v.empty() ? 0 : std::strtoull(v.c_str(), nullptr, 10) * 1024;
}

// Cache sizes are written like "32K", "1024K" or "32M".
uint64_t size_text_bytes(const std::string& text) {
  char* end = nullptr;
  uint64_t n = std::strtoull(text.c_str(), &end, 10);
  if (end && (*end == 'K' || *end == 'k')) return n << 10;
  if (end && *end == 'M') return n << 20;
  if (end && *end == 'G') return n << 30;
  return n;
}

std::string cpu_model() {
  std::string info = read_small_file("/proc/cpuinfo");
  // x86 says "model name"; other architectures use other keys, if any.
  for (const char* key : {"model name", "Processor", "cpu model", "cpu", "uarch"}) {
    std::string v = field_of(info, key);
    if (!v.empty()) return v;
  }
  return "";
}

// Sorted directory entries whose names start with prefix followed by a number.
std::vector<std::pair<int, std::string>> numbered_entries(const std::string& dir, const std::string& prefix) {
  std::vector<std::pair<int, std::string>> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    std::string digits = name.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    out.emplace_back(std::atoi(digits.c_str()), entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct CoreCounts {
  int physical = 0;  // 0: unknown
  int sockets = 0;
};

// A physical core is a distinct (package, core id) pair among the CPUs sysfs lists.
CoreCounts count_cores() {
  std::set<std::pair<std::string, std::string>> cores;
  std::set<std::string> packages;
  for (const auto& [index, dir] : numbered_entries("/sys/devices/system/cpu", "cpu")) {
    std::string package = read_small_file(dir + "/topology/physical_package_id");
    std::string core = read_small_file(dir + "/topology/core_id");
    if (package.empty() || core.empty()) return {};
    cores.emplace(package, core);
    packages.insert(package);
  }
  return {static_cast<int>(cores.size()), static_cast<int>(packages.size())};
}

void write_numa_nodes(JsonWriter& w) {
  w.key("numa_nodes").begin_array();
  for (const auto& [index, dir] : numbered_entries("/sys/devices/system/node", "node")) {
    std::string meminfo = read_small_file(dir + "/meminfo");
    w.begin_object().field("node", index).field("cpulist", read_small_file(dir + "/cpulist"));
    w.field("memory_bytes", kib_field_bytes(meminfo, "Node " + std::to_string(index) + " MemTotal"));
    w.end_object();
  }
  w.end_array();
}

void write_caches(JsonWriter& w) {
  w.key("caches").begin_array();
  for (const auto& [index, dir] : numbered_entries("/sys/devices/system/cpu/cpu0/cache", "index")) {
    std::string level = read_small_file(dir + "/level");
    std::string size = read_small_file(dir + "/size");
    w.begin_object();
    w.field("level", std::atoi(level.c_str()));
    w.field("type", read_small_file(dir + "/type"));
    w.field("size", size).field("size_bytes", size_text_bytes(size));
    w.field("shared_cpu_list", read_small_file(dir + "/shared_cpu_list"));
    w.end_object();
  }
  w.end_array();
}

void write_kernel(JsonWriter& w) {
  struct utsname u {};
  w.key("kernel").begin_object();
  if (::uname(&u) == 0) {
    w.field("sysname", u.sysname).field("release", u.release).field("version", u.version);
    w.field("machine", u.machine);
  }
  w.end_object();
}

std::string gib_text(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string scalar_text(simdjson::dom::element e) {
  int64_t i;
  if (e.get(i) == simdjson::SUCCESS) return std::to_string(i);
  uint64_t u;
  if (e.get(u) == simdjson::SUCCESS) return std::to_string(u);
  double d;
  if (e.get(d) == simdjson::SUCCESS) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", d);
    return buf;
  }
  std::string_view s;
  if (e.get(s) == simdjson::SUCCESS) return std::string(s);
  bool b;
  if (e.get(b) == simdjson::SUCCESS) return b ? "true" : "false";
  return "";
}

// One line per GPU. The known fields of gpu_probe get friendly words; any other
// scalar field is shown as key=value so nothing the probe reports is hidden.
std::string gpu_line(simdjson::dom::object gpu) {
  std::string line;
  auto add = [&line](const std::string& part) {
    if (part.empty()) return;
    if (!line.empty()) line += ", ";
    line += part;
  };
  std::string_view name;
  if (gpu["name"].get(name) == simdjson::SUCCESS) add(std::string(name));
  for (auto [key, value] : gpu) {
    std::string k(key), v = scalar_text(value);
    if (k == "name" || k == "index" || v.empty()) continue;
    if (k == "memory_bytes") add(gib_text(static_cast<double>(std::strtoull(v.c_str(), nullptr, 10))));
    else if (k == "compute_capability") add("compute " + v);
    else if (k == "sm_count") add(v + " SMs");
    else if (k == "numa_node") add("NUMA node " + v);
    else if (k == "pci_bus_id") add("PCI " + v);
    else add(k + "=" + v);
  }
  return line;
}

}  // namespace

std::string hardware_profile_json() {
  JsonWriter w;
  w.begin_object();
  w.field("cpu_model", cpu_model());
  w.field("logical_cores", static_cast<int64_t>(::sysconf(_SC_NPROCESSORS_ONLN)));
  CoreCounts cores = count_cores();
  if (cores.physical > 0) w.field("physical_cores", cores.physical).field("sockets", cores.sockets);
  else w.key("physical_cores").null().key("sockets").null();
  std::string governor = read_small_file("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  // The frequency governor changes timings a lot ("powersave" vs "performance").
  if (governor.empty()) w.key("cpufreq_governor").null();
  else w.field("cpufreq_governor", governor);
  write_numa_nodes(w);
  write_caches(w);
  w.field("memory_bytes", kib_field_bytes(read_small_file("/proc/meminfo"), "MemTotal"));
  write_kernel(w);
  w.key("gpus").raw(gpu_profile_json());
  w.end_object();
  return w.str();
}

std::string hardware_profile_table(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::element profile;
  if (parser.parse(json).get(profile) != simdjson::SUCCESS || !profile.is_object())
    throw KilnError(kExitBadInput, "", "the hardware profile is not a JSON object");

  std::vector<std::pair<std::string, std::string>> rows;
  std::string cpu = get_string_or(profile, "cpu_model", "");
  std::string cores = std::to_string(get_int_or(profile, "logical_cores", 0)) + " logical";
  int64_t physical = get_int_or(profile, "physical_cores", 0);
  if (physical > 0) cores += ", " + std::to_string(physical) + " physical";
  int64_t sockets = get_int_or(profile, "sockets", 0);
  if (sockets > 0) cores += ", " + std::to_string(sockets) + (sockets == 1 ? " socket" : " sockets");
  rows.emplace_back("CPU", (cpu.empty() ? std::string("unknown") : cpu) + " (" + cores + ")");
  std::string governor = get_string_or(profile, "cpufreq_governor", "");
  if (!governor.empty()) rows.emplace_back("Governor", governor);
  rows.emplace_back("Memory", gib_text(get_double_or(profile, "memory_bytes", 0)));

  simdjson::dom::array nodes;
  if (profile["numa_nodes"].get(nodes) == simdjson::SUCCESS) {
    bool first = true;
    for (auto node : nodes) {
      rows.emplace_back(first ? "NUMA" : "",
                        "node" + std::to_string(get_int_or(node, "node", 0)) + ": cpus " +
                            get_string_or(node, "cpulist", "?") + ", " +
                            gib_text(get_double_or(node, "memory_bytes", 0)));
      first = false;
    }
  }

  simdjson::dom::array caches;
  std::string cache_text;
  if (profile["caches"].get(caches) == simdjson::SUCCESS) {
    for (auto cache : caches) {
      std::string type = get_string_or(cache, "type", "");
      // sysfs says Data/Instruction/Unified; the usual short names are L1d, L1i, L2.
      std::string suffix = type == "Data" ? "d" : type == "Instruction" ? "i" : "";
      if (!cache_text.empty()) cache_text += ", ";
      cache_text +=
          "L" + std::to_string(get_int_or(cache, "level", 0)) + suffix + " " + get_string_or(cache, "size", "?");
    }
  }
  rows.emplace_back("Caches", cache_text.empty() ? "unknown" : cache_text);

  simdjson::dom::element kernel;
  if (profile["kernel"].get(kernel) == simdjson::SUCCESS)
    rows.emplace_back("Kernel",
                      get_string_or(kernel, "sysname", "?") + " " + get_string_or(kernel, "release", "?") + " " +
                          get_string_or(kernel, "machine", ""));

  simdjson::dom::array gpus;
  if (profile["gpus"].get(gpus) != simdjson::SUCCESS || gpus.size() == 0) {
    rows.emplace_back("GPUs", "none");
  } else {
    for (auto gpu : gpus) {
      simdjson::dom::object object;
      if (gpu.get(object) != simdjson::SUCCESS) continue;
      rows.emplace_back("GPU" + std::to_string(get_int_or(gpu, "index", 0)), gpu_line(object));
    }
  }

  std::string out;
  for (const auto& [label, text] : rows) {
    out += label;
    out.append(label.size() < 10 ? 10 - label.size() : 1, ' ');
    out += text + "\n";
  }
  return out;
}

}  // namespace kiln
