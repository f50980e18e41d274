// File helpers that never leave a half-written file behind: every write goes to a
// temporary file in the same directory, is flushed, then renamed over the target.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

std::string read_file(const std::string& path);                    // throws KilnError
void write_file_atomic(const std::string& path, std::string_view bytes);
// Appends one line (a newline is added) as a single write under an exclusive lock,
// so that many processes can append to the same JSON Lines file at once.
void append_line_locked(const std::string& path, std::string_view line);
void make_dirs(const std::string& path);
bool path_exists(const std::string& path);
bool is_directory(const std::string& path);
std::string absolute_path(const std::string& path);
std::string basename_of(const std::string& path);
std::string dirname_of(const std::string& path);
// Searches PATH (or takes an explicit path) for an executable; empty when not found.
std::string find_program(const std::string& name);
std::string self_executable();
std::string make_temp_dir(const std::string& prefix);
void remove_tree(const std::string& path);
std::string errno_reason(int err);

}  // namespace kiln
