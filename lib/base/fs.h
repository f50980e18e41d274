// File helpers that never leave a half-written file behind: every write goes to a
// temporary file in the same directory, is flushed, then renamed over the target.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln {

// Reads a regular file whole, or a pipe up to 1 GiB; devices, sockets and directories
// are refused (exit 3). Throws KilnError.
std::string read_file(const std::string& path);
// A regular file mapped read-only: its bytes without copying them into the heap. The
// rustc wrapper reads a build's rlib (megabytes) only to write most of it out again, and
// a read through a buffer into a string cost as much as the writing (twice the page
// faults). The file must not shrink while mapped (a read past its new end faults): kiln
// maps only outputs its own build step has just written. Refuses what read_file refuses.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view bytes() const { return data_ ? std::string_view(static_cast<const char*>(data_), size_) : copy_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  std::string copy_;  // where mapping failed
};
// Writes through symbolic links to their target; a character device or FIFO (such as
// /dev/null) is written in place; a regular file is replaced atomically.
// kDurable syncs the data to disk before the rename, so that even a crash of the
// machine leaves the old file or the whole new one. kAtomic skips that sync (about
// 4 ms a file here): for build outputs that rustc and clang themselves never sync, and
// for content-checked cache entries, which a crash can only turn into a miss. Killing
// the process cannot tear either: the rename happens after the last write.
enum class Durability { kDurable, kAtomic };
// The descriptor of this process that output path `path` names (/dev/stdout,
// /dev/stderr, /dev/fd/N, /proc/self/fd/N, directly or through links), or -1:
// write_file_atomic writes such a path through the descriptor.
int inherited_descriptor(const std::string& path);
void write_file_atomic(const std::string& path, std::string_view bytes,
                       Durability durability = Durability::kDurable);
// The same, of `pieces` one after the other: a file made of parts kept elsewhere (an
// archive's headers and its members' bytes) without first copying them into one.
void write_file_atomic(const std::string& path, const std::vector<std::string_view>& pieces,
                       Durability durability = Durability::kDurable);
// Bytes to write at an offset of a file.
struct FilePatch {
  uint64_t offset;
  std::string bytes;
};

// Writes each of `patches` over the regular file at `path` in place (the same inode,
// the same length), which must still be `expected_size` bytes long. For an output that
// this process's child has just made and that nothing reads before this process exits,
// as rewrite_file_in_place. Not atomic: a failure part way throws and leaves the file
// half written, for the caller to remove.
// Through a shared mapping where the file system writes over a file's bytes without
// allocating (file_system_overwrites_in_place), else by pwrite.
void patch_file_in_place(const std::string& path, uint64_t expected_size, const std::vector<FilePatch>& patches);
// Whether a file system (statfs's f_type) writes over an existing file's bytes in
// place, allocating nothing (ext4, XFS, tmpfs): there a mapping's stores cannot run
// out of space, which a mapping could only report as SIGBUS.
bool file_system_overwrites_in_place(int64_t magic);

// Writes `pieces`, one after the other, over the regular file at `path` in place (the
// same inode, cut to the new length), where `original` is that file's content as
// mapped and the pieces that lie inside it are its own bytes, moved: each byte is
// copied once, through a small buffer, and no page is allocated or freed but the tail
// the file loses. For an output that this process's child has just made and that
// nothing reads before this process exits (an rlib written again after rustc): a
// replacement allocates every page anew and freeing the old file's dirty pages alone
// took 3 ms of a 5 MB rlib's 6. Not atomic: a failure part way throws and leaves the
// file half written, for the caller to remove. Returns false, having written nothing,
// where the moves are not in the one order it knows to be safe: the file's pieces keep
// their order and each moves no further right than the one before (an archive whose
// members shrink, after an index that may grow).
bool rewrite_file_in_place(const std::string& path, std::string_view original,
                           const std::vector<std::string_view>& pieces);
// Writes new regular files (paths that do not exist yet, in existing directories),
// each replaced atomically and durably as write_file_atomic does, but synced as one
// batch: every file's data is written first, then each is synced, then each renamed
// into place. After the first sync the others find little left to flush (0.6 ms a
// file here, against 4.4 ms one by one). Throws KilnError at the first failure;
// temporary files left are removed, files already renamed stay (each is whole).
void write_new_files_durable(const std::vector<std::pair<std::string, std::string_view>>& files);
// Appends one line (a newline is added) as a single write under an exclusive lock,
// so that many processes can append to the same JSON Lines file at once. An unfinished
// last line left by a writer that died is first moved to PATH.torn.
void append_line_locked(const std::string& path, std::string_view line);
// Appends `line` and a newline to a log that other programs write as well (a build's
// output), starting a new line first where the log does not end with one. No torn-line
// repair: the log's last line is whatever the build printed last, not a record.
void append_log_line(const std::string& path, std::string_view line);
void make_dirs(const std::string& path);
bool path_exists(const std::string& path);
// A file's identity for caches keyed by binary: "SIZE MTIME_NS" of the file a link
// names; "" when it cannot be read.
std::string file_identity(const std::string& path);
bool is_directory(const std::string& path);
// Whether directory `path` holds nothing (a dot file counts); throws when it cannot be read.
bool is_empty_directory(const std::string& path);
std::string absolute_path(const std::string& path);
std::string basename_of(const std::string& path);
std::string dirname_of(const std::string& path);
// Searches PATH (or takes an explicit path) for an executable; empty when not found.
std::string find_program(const std::string& name);
std::string self_executable();
std::string make_temp_dir(const std::string& prefix);
// A new, uniquely named directory beside `path` (PATH + suffix + "-XXXXXX"), for work
// that is renamed into place at the end.
std::string make_sibling_dir(const std::string& path, const std::string& suffix);
void remove_tree(const std::string& path);
// write_file_atomic and write_new_files_durable write beside their target, to
// .kiln-tmp-PID-XXXXXX, then rename. A writer killed before the rename leaves its file;
// this removes those in `dir` whose process is gone, and returns how many.
size_t remove_orphaned_temp_files(const std::string& dir);
// A temporary directory (make_temp_dir), removed with its contents however the scope
// that owns it is left.
struct TempDir {
  std::string path;
  explicit TempDir(const std::string& prefix) : path(make_temp_dir(prefix)) {}
  ~TempDir() { remove_tree(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};
std::string errno_reason(int err);
// "a directory", "a character device", ... for messages about a file of the wrong kind.
const char* file_kind(unsigned mode);

}  // namespace kiln
