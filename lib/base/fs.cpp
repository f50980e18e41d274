#include "fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "error.h"

namespace kiln {

// .kiln-tmp-PID-: whose temporary file it is, so that remove_orphaned_temp_files can
// tell a killed writer's from a live one's.
static std::string temp_file_prefix() { return ".kiln-tmp-" + std::to_string(::getpid()) + "-"; }


std::string errno_reason(int err) {
  if (err == ENOSPC) return "no space left on device";
  return std::strerror(err);
}

static ExitCode code_for_errno(int err) { return err == ENOENT ? kExitIo : kExitIo; }

const char* file_kind(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

// Regular files are read whole (their size bounds them). A pipe or FIFO (a process
// substitution, /dev/stdin) is read up to kMaxStreamInput; a device, socket or directory
// is refused, so `/dev/zero` as an input is an error, not an endless read.
constexpr size_t kMaxStreamInput = size_t{1} << 30;

std::string read_file(const std::string& path) {
  // Looked at before opening: opening a device can have effects of its own, and a
  // FIFO must be opened blocking so that the read waits for its writer.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw KilnError(code_for_errno(errno), path, errno_reason(errno));
  bool stream = S_ISFIFO(st.st_mode);
  if (!S_ISREG(st.st_mode) && !stream)
    throw KilnError(kExitBadInput, path, std::string("is ") + file_kind(st.st_mode) + ", not a regular file");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw KilnError(code_for_errno(errno), path, errno_reason(errno));
  std::string out;
  if (st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      throw KilnError(kExitIo, path, errno_reason(err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (stream && out.size() > kMaxStreamInput) {
      ::close(fd);
      throw KilnError(kExitBadInput, path, "a pipe that gave more than 1 GiB; give a regular file");
    }
  }
  ::close(fd);
  return out;
}

MappedFile::MappedFile(const std::string& path) {
  // Looked at before opening, as read_file does: opening a FIFO would wait for a writer.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw KilnError(code_for_errno(errno), path, errno_reason(errno));
  if (!S_ISREG(st.st_mode))
    throw KilnError(kExitBadInput, path, std::string("is ") + file_kind(st.st_mode) + ", not a regular file");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw KilnError(code_for_errno(errno), path, errno_reason(errno));
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {  // replaced between the two looks
    ::close(fd);
    throw KilnError(kExitIo, path, "changed while it was opened");
  }
  size_ = static_cast<size_t>(st.st_size);
  void* at = size_ > 0 ? ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
  ::close(fd);  // the mapping keeps the file
  if (at != MAP_FAILED) {
    data_ = at;
  } else {  // a file system that cannot map: read as read_file does
    copy_ = read_file(path);
    size_ = copy_.size();
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

// Writes `pieces` in order, as few system calls as the kernel allows (writev).
static void write_all(int fd, const std::vector<std::string_view>& pieces, const std::string& path) {
  std::vector<iovec> left;
  left.reserve(pieces.size());
  for (std::string_view p : pieces)
    if (!p.empty()) left.push_back({const_cast<char*>(p.data()), p.size()});
  size_t first = 0;
  while (first < left.size()) {
    const int count = static_cast<int>(std::min<size_t>(left.size() - first, IOV_MAX));
    ssize_t n = ::writev(fd, left.data() + first, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw KilnError(kExitIo, path, errno_reason(errno));
    }
    for (size_t done = static_cast<size_t>(n); done > 0;) {  // past whole pieces, into a part of one
      const size_t step = std::min(done, left[first].iov_len);
      left[first].iov_base = static_cast<char*>(left[first].iov_base) + step;
      left[first].iov_len -= step;
      done -= step;
      if (left[first].iov_len == 0) ++first;
    }
  }
}

static void write_all(int fd, std::string_view bytes, const std::string& path) {
  write_all(fd, std::vector<std::string_view>{bytes}, path);
}

// write_all, then closes fd whether or not the write succeeded.
static void write_and_close(int fd, const std::vector<std::string_view>& bytes, const std::string& path) {
  try {
    write_all(fd, bytes, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

// The path that writing to `path` would reach: symbolic links followed (40 deep, as
// the kernel does), relative targets taken from the link's directory. A missing final
// component is fine: the file is to be created there.
static std::string resolve_output(const std::string& path) {
  std::string p = path;
  for (int depth = 0; depth < 40; ++depth) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::vector<char> target(static_cast<size_t>(st.st_size > 0 ? st.st_size : PATH_MAX) + 1);
    ssize_t n = ::readlink(p.c_str(), target.data(), target.size() - 1);
    if (n < 0) throw KilnError(kExitIo, path, errno_reason(errno));
    std::string t(target.data(), static_cast<size_t>(n));
    p = (t.front() == '/' || dirname_of(p) == ".") ? t : dirname_of(p) + "/" + t;
  }
  throw KilnError(kExitIo, path, errno_reason(ELOOP));
}

// The descriptor of this process that `path` names, or -1: /dev/stdout, /dev/stderr,
// /dev/stdin, /dev/fd/N or /proc/self/fd/N, reached directly or through symbolic links
// (each hop's directory taken through realpath, so /dev/fd/N is /proc/PID/fd/N). The
// file behind such a path was opened by whoever started kiln (`>> runs.jsonl`, or a
// file other output goes to as well): reopening it by name starts at its beginning,
// and replacing it drops what it held, so kiln writes through the descriptor itself.
int inherited_descriptor(const std::string& path) {
  const std::string own_fds = "/proc/" + std::to_string(::getpid()) + "/fd/";
  std::string p = path;
  for (int depth = 0; depth < 40; ++depth) {
    std::string dir = dirname_of(p), base = p.substr(p.find_last_of('/') + 1);
    char real[PATH_MAX];
    if (base.empty() || !::realpath(dir.c_str(), real)) return -1;
    const std::string full = std::string(real) + "/" + base;
    if (full == "/dev/stdin") return 0;
    if (full == "/dev/stdout") return 1;
    if (full == "/dev/stderr") return 2;
    if (full.compare(0, own_fds.size(), own_fds) == 0) {
      const std::string n = full.substr(own_fds.size());
      if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos) return -1;
      return std::atoi(n.c_str());
    }
    struct stat st {};
    if (::lstat(full.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return -1;
    char target[PATH_MAX];
    ssize_t len = ::readlink(full.c_str(), target, sizeof target - 1);
    if (len <= 0) return -1;
    std::string t(target, static_cast<size_t>(len));
    p = t.front() == '/' ? t : std::string(real) + "/" + t;
  }
  return -1;
}

// Writes to one of this process's descriptors (inherited_descriptor), after what kiln
// printed to the same stream, at the descriptor's own offset (or its end, opened with
// O_APPEND).
static void write_to_descriptor(int fd, const std::string& path, const std::vector<std::string_view>& bytes) {
  if (fd == 1) std::fflush(stdout);
  if (fd == 2) std::fflush(stderr);
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw KilnError(kExitIo, path, errno_reason(errno));
  if (S_ISDIR(st.st_mode) || S_ISBLK(st.st_mode))
    throw KilnError(kExitIo, path, std::string("is ") + file_kind(st.st_mode) + ", not a file kiln can write");
  write_all(fd, bytes, path);
}

// The permissions a new file gets: 0666 less this process's umask (as open(2) would
// give it), read from /proc without changing it (umask(2) sets as it reads, and other
// threads may be creating files); 022 where /proc does not say.
static mode_t new_file_mode() {
  FILE* f = std::fopen("/proc/self/status", "r");
  mode_t mask = 022;
  if (f) {
    char line[256];
    while (std::fgets(line, sizeof line, f))
      if (std::strncmp(line, "Umask:", 6) == 0) {
        mask = static_cast<mode_t>(std::strtoul(line + 6, nullptr, 8)) & 0777;
        break;
      }
    std::fclose(f);
  }
  return 0666 & ~mask;
}

// A device or FIFO given as an output is written in place: replacing it would turn
// /dev/null into a regular file.
static void write_in_place(const std::string& path, const std::vector<std::string_view>& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw KilnError(kExitIo, path, errno_reason(errno));
  write_and_close(fd, bytes, path);
}

void write_file_atomic(const std::string& requested, std::string_view bytes, Durability durability) {
  write_file_atomic(requested, std::vector<std::string_view>{bytes}, durability);
}

void write_file_atomic(const std::string& requested, const std::vector<std::string_view>& bytes,
                       Durability durability) {
  // What the path reaches decides how it is written. The kernel follows links for
  // stat and open (also /proc's magic links such as /dev/stdout); only a missing file
  // behind a dangling link needs resolving by hand.
  if (int fd = inherited_descriptor(requested); fd >= 0) return write_to_descriptor(fd, requested, bytes);
  std::string path;
  struct stat st {};
  mode_t mode = 0;  // an existing file keeps its permissions
  if (::stat(requested.c_str(), &st) == 0) {
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return write_in_place(requested, bytes);
    if (!S_ISREG(st.st_mode))
      throw KilnError(kExitIo, requested, std::string("is ") + file_kind(st.st_mode) + ", not a file kiln can write");
    char real[PATH_MAX];
    if (!::realpath(requested.c_str(), real)) throw KilnError(kExitIo, requested, errno_reason(errno));
    path = real;
    mode = st.st_mode & 0777;  // its permissions; not a set-user-ID bit onto a file of ours
  } else if (errno == ENOENT) {
    path = resolve_output(requested);
    mode = new_file_mode();
  } else {
    throw KilnError(kExitIo, requested, errno_reason(errno));
  }
  std::string dir = dirname_of(path);
  std::string tmpl = (dir.empty() ? std::string(".") : dir) + "/" + temp_file_prefix() + "XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = ::mkostemp(name.data(), O_CLOEXEC);  // not into a child another thread starts
  if (fd < 0) throw KilnError(kExitIo, requested, "cannot create a temporary file beside it: " + errno_reason(errno));
  std::string tmp(name.data());
  try {
    write_all(fd, bytes, requested);
    if (durability == Durability::kDurable && ::fsync(fd) != 0 && errno != EINVAL)
      throw KilnError(kExitIo, requested, errno_reason(errno));
    ::fchmod(fd, mode);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw KilnError(kExitIo, requested, errno_reason(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw KilnError(kExitIo, requested, errno_reason(err));
  }
}

namespace {

void pread_all(int fd, char* to, size_t size, uint64_t at, const std::string& path) {
  while (size > 0) {
    ssize_t n = ::pread(fd, to, size, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw KilnError(kExitIo, path, n < 0 ? errno_reason(errno) : "shorter than it was mapped");
    to += n, size -= static_cast<size_t>(n), at += static_cast<uint64_t>(n);
  }
}

void pwrite_all(int fd, const char* from, size_t size, uint64_t at, const std::string& path) {
  while (size > 0) {
    ssize_t n = ::pwrite(fd, from, size, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw KilnError(kExitIo, path, errno_reason(errno));
    from += n, size -= static_cast<size_t>(n), at += static_cast<uint64_t>(n);
  }
}

}  // namespace

// The regular file at `path`, opened to be written over in place (no link followed),
// which must still be `expected_size` bytes long; throws KilnError(kExitIo) naming it.
static int open_to_write_over(const std::string& path, uint64_t expected_size) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
  if (fd < 0) throw KilnError(kExitIo, path, errno_reason(errno));
  struct stat st {};
  std::string problem;
  if (::fstat(fd, &st) != 0) problem = errno_reason(errno);
  else if (!S_ISREG(st.st_mode)) problem = std::string("is ") + file_kind(st.st_mode) + ", not a file kiln writes over";
  else if (static_cast<uint64_t>(st.st_size) != expected_size) problem = "changed since it was read";
  if (problem.empty()) return fd;
  ::close(fd);
  throw KilnError(kExitIo, path, problem);
}

bool rewrite_file_in_place(const std::string& path, std::string_view original,
                           const std::vector<std::string_view>& pieces) {
  // Where each piece goes; a piece inside `original` is a move within the file.
  struct Move {
    uint64_t to, from, size;
  };
  std::vector<Move> moves;
  std::vector<std::pair<uint64_t, std::string_view>> texts;
  uint64_t at = 0;
  int64_t last_shift = INT64_MAX;
  for (std::string_view p : pieces) {
    if (p.empty()) continue;
    const bool inside = !original.empty() && p.data() >= original.data() &&
        p.data() + p.size() <= original.data() + original.size();
    if (inside) {
      const uint64_t from = static_cast<uint64_t>(p.data() - original.data());
      const int64_t shift = static_cast<int64_t>(at) - static_cast<int64_t>(from);
      if (shift > last_shift) return false;
      last_shift = shift;
      moves.push_back({at, from, p.size()});
    } else {
      texts.push_back({at, p});
    }
    at += p.size();
  }
  int fd = open_to_write_over(path, original.size());
  try {
    // The moves' order keeps every source whole until it is copied: the moves to the
    // left, first to last, each front to back (a later one's source lies past what an
    // earlier one writes), then the moves to the right, last to first, each back to
    // front; the pieces of new bytes (headers, the index) last, over what is left.
    std::vector<char> buffer(256 * 1024);
    auto copy = [&](const Move& m, bool backward) {
      for (uint64_t done = 0; done < m.size;) {
        const uint64_t n = std::min<uint64_t>(buffer.size(), m.size - done);
        const uint64_t offset = backward ? m.size - done - n : done;
        pread_all(fd, buffer.data(), n, m.from + offset, path);
        pwrite_all(fd, buffer.data(), n, m.to + offset, path);
        done += n;
      }
    };
    for (const Move& m : moves)
      if (m.to < m.from) copy(m, false);
    for (auto m = moves.rbegin(); m != moves.rend(); ++m)
      if (m->to > m->from) copy(*m, true);
    for (const auto& [to, bytes] : texts) pwrite_all(fd, bytes.data(), bytes.size(), to, path);
    if (::ftruncate(fd, static_cast<off_t>(at)) != 0) throw KilnError(kExitIo, path, errno_reason(errno));
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) throw KilnError(kExitIo, path, errno_reason(errno));
  return true;
}

bool file_system_overwrites_in_place(int64_t magic) {
  switch (static_cast<uint64_t>(magic)) {
    case 0xEF53:      // ext2, ext3, ext4
    case 0x58465342:  // XFS
    case 0x01021994:  // tmpfs
      return true;
    default:
      return false;
  }
}

void patch_file_in_place(const std::string& path, uint64_t expected_size, const std::vector<FilePatch>& patches) {
  int fd = open_to_write_over(path, expected_size);
  try {
    for (const FilePatch& p : patches)
      if (p.offset > expected_size || p.bytes.size() > expected_size - p.offset)
        throw KilnError(kExitInternal, path, "a write past the file's end");
    // Where writing over a file's bytes may allocate (copy-on-write btrfs, NFS, ZFS),
    // a full disk would fail a mapping's write-back with SIGBUS, not an error: pwrite.
    struct statfs fs {};
    const bool mapped = ::fstatfs(fd, &fs) == 0 && file_system_overwrites_in_place(fs.f_type);
    if (!mapped)
      for (const FilePatch& p : patches) pwrite_all(fd, p.bytes.data(), p.bytes.size(), p.offset, path);
    // Elsewhere through a shared mapping: a pwrite each updates the file's times and
    // on ext4 its journal, 5 us a write, and an rlib's units take two each (1.7 ms for
    // regex's 175 units, against 0.13 through the mapping).
    if (mapped && expected_size > 0 && !patches.empty()) {
      void* at = ::mmap(nullptr, expected_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (at == MAP_FAILED) throw KilnError(kExitIo, path, errno_reason(errno));
      char* bytes = static_cast<char*>(at);
      for (const FilePatch& p : patches) std::memcpy(bytes + p.offset, p.bytes.data(), p.bytes.size());
      if (::munmap(at, expected_size) != 0) throw KilnError(kExitIo, path, errno_reason(errno));
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) throw KilnError(kExitIo, path, errno_reason(errno));
}

size_t remove_orphaned_temp_files(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;
  size_t removed = 0;
  static const std::string kPrefix = ".kiln-tmp-";
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, kPrefix.size(), kPrefix) != 0) continue;
    size_t dash = name.find('-', kPrefix.size());
    if (dash == std::string::npos || dash == kPrefix.size()) continue;  // an older kiln's: no pid
    std::string digits = name.substr(kPrefix.size(), dash - kPrefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to know
    if (::unlink((dir + "/" + name).c_str()) == 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

void write_new_files_durable(const std::vector<std::pair<std::string, std::string_view>>& files) {
  struct Pending {
    std::string tmp;
    int fd = -1;
  };
  std::vector<Pending> pending(files.size());
  auto discard = [&]() {
    for (Pending& p : pending) {
      if (p.fd >= 0) ::close(p.fd);
      if (!p.tmp.empty()) ::unlink(p.tmp.c_str());
    }
  };
  try {
    for (size_t i = 0; i < files.size(); ++i) {
      const std::string& path = files[i].first;
      std::string dir = dirname_of(path);
      std::string tmpl = (dir.empty() ? std::string(".") : dir) + "/" + temp_file_prefix() + "XXXXXX";
      std::vector<char> name(tmpl.begin(), tmpl.end());
      name.push_back('\0');
      pending[i].fd = ::mkostemp(name.data(), O_CLOEXEC);
      if (pending[i].fd < 0)
        throw KilnError(kExitIo, path, "cannot create a temporary file beside it: " + errno_reason(errno));
      pending[i].tmp = name.data();
      write_all(pending[i].fd, files[i].second, path);
      ::fchmod(pending[i].fd, 0644);
    }
    for (size_t i = 0; i < files.size(); ++i) {
      if (::fsync(pending[i].fd) != 0 && errno != EINVAL) throw KilnError(kExitIo, files[i].first, errno_reason(errno));
      int fd = pending[i].fd;
      pending[i].fd = -1;
      if (::close(fd) != 0) throw KilnError(kExitIo, files[i].first, errno_reason(errno));
    }
    for (size_t i = 0; i < files.size(); ++i) {
      if (::rename(pending[i].tmp.c_str(), files[i].first.c_str()) != 0)
        throw KilnError(kExitIo, files[i].first, errno_reason(errno));
      pending[i].tmp.clear();
    }
  } catch (...) {
    discard();
    throw;
  }
}

// A last line without its newline is a record whose writer died (or hit a full disk)
// mid-write. Gluing the next record onto it would turn it into a corrupt middle line
// and lose the new record too, so under the lock the fragment is moved aside to
// PATH.torn (appended there with its offset) and cut off before the append.
static void set_aside_torn_tail(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size == 0) return;
  char last = 0;
  if (::pread(fd, &last, 1, st.st_size - 1) != 1 || last == '\n') return;
  off_t start = st.st_size;
  char buf[4096];
  while (start > 0) {
    off_t from = std::max<off_t>(0, start - static_cast<off_t>(sizeof buf));
    ssize_t n = ::pread(fd, buf, static_cast<size_t>(start - from), from);
    if (n <= 0) throw KilnError(kExitIo, path, "cannot read its unfinished last line: " + errno_reason(errno));
    const char* nl = static_cast<const char*>(::memrchr(buf, '\n', static_cast<size_t>(n)));
    if (nl) {
      start = from + (nl - buf) + 1;
      break;
    }
    start = from;
  }
  std::string fragment(static_cast<size_t>(st.st_size - start), '\0');
  if (::pread(fd, fragment.data(), fragment.size(), start) != static_cast<ssize_t>(fragment.size()))
    throw KilnError(kExitIo, path, "cannot read its unfinished last line: " + errno_reason(errno));
  std::string torn = path + ".torn";
  int tfd = ::open(torn.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (tfd < 0) throw KilnError(kExitIo, torn, errno_reason(errno));
  try {
    write_all(tfd, "at byte " + std::to_string(start) + " of " + basename_of(path) + ": " + fragment + "\n", torn);
  } catch (...) {
    ::close(tfd);
    throw;
  }
  ::close(tfd);
  if (::ftruncate(fd, start) != 0)
    throw KilnError(kExitIo, path, "cannot cut its unfinished last line: " + errno_reason(errno));
  std::fprintf(stderr, "kiln: warning: %s: an unfinished last record (%zu bytes) was moved to %s\n", path.c_str(),
               fragment.size(), torn.c_str());
}

void append_line_locked(const std::string& path, std::string_view line) {
  int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw KilnError(kExitIo, path, errno_reason(errno));
  std::string buf;
  buf.reserve(line.size() + 1);
  buf.append(line);
  buf.push_back('\n');
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    int err = errno;
    ::close(fd);
    throw KilnError(kExitIo, path, "cannot lock for appending: " + errno_reason(err));
  }
  struct stat st {};
  try {
    set_aside_torn_tail(fd, path);
    if (::fstat(fd, &st) != 0) throw KilnError(kExitIo, path, errno_reason(errno));
    write_all(fd, buf, path);
  } catch (...) {
    // A record that could not be written whole (a full disk) is taken back, so the
    // file still ends with a complete line.
    if (st.st_ino != 0) (void)::ftruncate(fd, st.st_size);
    ::flock(fd, LOCK_UN);
    ::close(fd);
    throw;
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
}

void append_log_line(const std::string& path, std::string_view line) {
  int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw KilnError(kExitIo, path, errno_reason(errno));
  std::string buf;
  struct stat st {};
  char last = '\n';
  if (::fstat(fd, &st) == 0 && st.st_size > 0 && ::pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n')
    buf.push_back('\n');
  buf.append(line);
  buf.push_back('\n');
  write_and_close(fd, {buf}, path);
}

bool is_empty_directory(const std::string& path) {
  DIR* dir = ::opendir(path.c_str());
  if (!dir) throw KilnError(kExitIo, path, errno_reason(errno));
  bool empty = true;
  while (dirent* e = ::readdir(dir))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      empty = false;
      break;
    }
  ::closedir(dir);
  return empty;
}

void make_dirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) throw KilnError(kExitIo, path, ec.message());
}

bool path_exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

std::string file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return std::to_string(st.st_size) + " " +
      std::to_string(static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec);
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

std::string basename_of(const std::string& path) {
  auto pos = path.find_last_of('/');
  return pos == std::string::npos ? path : path.substr(pos + 1);
}

std::string dirname_of(const std::string& path) {
  auto pos = path.find_last_of('/');
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* env = std::getenv("PATH");
  std::string paths = env ? env : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= paths.size()) {
    size_t end = paths.find(':', start);
    if (end == std::string::npos) end = paths.size();
    std::string dir = paths.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0 && !is_directory(candidate)) return candidate;
    start = end + 1;
  }
  return "";
}

std::string self_executable() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw KilnError(kExitInternal, "/proc/self/exe", "cannot read link");
  return std::string(buf, static_cast<size_t>(n));
}

std::string make_temp_dir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  if (!::mkdtemp(name.data())) throw KilnError(kExitIo, tmpl, errno_reason(errno));
  return std::string(name.data());
}

std::string make_sibling_dir(const std::string& path, const std::string& suffix) {
  std::string tmpl = path + suffix + "-XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  if (!::mkdtemp(name.data()))
    throw KilnError(kExitIo, path, "cannot create a directory beside it: " + errno_reason(errno));
  return std::string(name.data());
}

void remove_tree(const std::string& path) {
  // remove_all stops at the first entry that vanished while it walked (a command's
  // output that the command itself removed as it was stopped) and leaves the rest:
  // walked again, the tree goes.
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (!ec) return;
  }
}

}  // namespace kiln
