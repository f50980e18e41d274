#include "stamp_service.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <map>
#include <set>
#include <thread>
#include <type_traits>

#include "counted_bytes.h"
#include "error.h"
#include "flat_file.h"
#include "fs.h"
#include "json_writer.h"
#include "stamp_gpu_pool.h"
#include "timeutil.h"

namespace kiln {

namespace {

// ---- the wire: fixed little-endian headers, then counted bytes -------------------

constexpr char kRequestMagic[4] = {'K', 'S', 'V', 'Q'};
constexpr char kAnswerMagic[4] = {'K', 'S', 'V', 'A'};
constexpr char kOutputMagic[4] = {'K', 'S', 'O', '2'};  // 2: instruction offsets
// A module's flat IR or output above this is refused before anything is allocated.
constexpr uint64_t kMaxMessage = uint64_t(1) << 30;
constexpr uint32_t kMaxClientName = 4096;
// How long either side waits on the other before it gives up on the exchange.
constexpr int kExchangeTimeoutSeconds = 300;

struct RequestHeader {
  char magic[4];
  uint32_t version;
  uint32_t client_bytes;  // the client's name, then
  uint32_t reserved;      // 0
  uint64_t flat_bytes;    // the module's flat IR file (kiln-flat(5), which names its source file)
};
struct AnswerHeader {
  char magic[4];
  uint32_t version;
  uint32_t status;         // 0: the output follows; 1: an error message follows
  uint32_t batch_modules;  // in the batch that ran it
  uint64_t batch;
  uint32_t device_bytes;  // the executor's name, then
  uint32_t pad;
  uint64_t payload_bytes;  // the encoded output or the message
};
static_assert(std::is_trivially_copyable_v<RequestHeader> && std::is_trivially_copyable_v<AnswerHeader>);

// Whole buffers or a reason: sockets return short counts, and a peer that went away
// must be an error, never SIGPIPE (MSG_NOSIGNAL).
std::string send_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size) {
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return errno == EAGAIN ? "timed out sending" : "send: " + errno_reason(errno);
    p += n;
    size -= static_cast<size_t>(n);
  }
  return "";
}

std::string recv_all(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size) {
    ssize_t n = ::recv(fd, p, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return "the other end closed the connection";
    if (n < 0) return errno == EAGAIN ? "timed out waiting" : "recv: " + errno_reason(errno);
    p += n;
    size -= static_cast<size_t>(n);
  }
  return "";
}

std::string recv_string(int fd, uint64_t size, std::string& out) {
  out.resize(size);
  return recv_all(fd, out.data(), size);
}

void set_timeouts(int fd) {
  timeval tv{kExchangeTimeoutSeconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

bool fill_address(const std::string& path, sockaddr_un& addr) {
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, path.data(), path.size());
  return true;
}

}  // namespace

std::string encode_stamp_output(const StampOutput& c) {
  std::string out(kOutputMagic, 4);
  put_array(out, c.code);
  put_array(out, c.code_start);
  put_array(out, c.code_size);
  put_array(out, c.relocs);
  put_array(out, c.reloc_start);
  put_array(out, c.reloc_count);
  put_array(out, c.lsda);
  put_array(out, c.lsda_start);
  put_array(out, c.lsda_size);
  put_array(out, c.inst_offset);
  for (double s : {c.frame, c.measure, c.offsets, c.encode, c.lsda_seconds}) put_value(out, s);
  put_value(out, c.launches);
  return out;
}

StampOutput decode_stamp_output(std::string_view bytes, const std::string& what) {
  StampOutput c;
  CountedReader r(bytes, what, "not an encoded stamp output: truncated");
  if (bytes.size() < 4 || std::memcmp(bytes.data(), kOutputMagic, 4) != 0)
    r.fail("not an encoded stamp output: no KSO2 magic");
  r.value<std::array<char, 4>>();
  c.code = r.array<uint8_t>();
  c.code_start = r.array<uint32_t>();
  c.code_size = r.array<uint32_t>();
  c.relocs = r.array<StampReloc>();
  c.reloc_start = r.array<uint32_t>();
  c.reloc_count = r.array<uint32_t>();
  c.lsda = r.array<uint8_t>();
  c.lsda_start = r.array<uint32_t>();
  c.lsda_size = r.array<uint32_t>();
  c.inst_offset = r.array<uint32_t>();
  for (double* s : {&c.frame, &c.measure, &c.offsets, &c.encode, &c.lsda_seconds}) *s = r.value<double>();
  c.launches = r.value<uint64_t>();
  if (r.left()) r.fail("not an encoded stamp output: bytes after the output");
  const size_t functions = c.code_start.size();
  for (size_t n : {c.code_size.size(), c.reloc_start.size(), c.reloc_count.size(), c.lsda_start.size(),
                   c.lsda_size.size()})
    if (n != functions) r.fail("not an encoded stamp output: per-function arrays of different lengths");
  for (size_t f = 0; f < functions; ++f)
    if (uint64_t(c.code_start[f]) + c.code_size[f] > c.code.size() ||
        uint64_t(c.reloc_start[f]) + c.reloc_count[f] > c.relocs.size() ||
        uint64_t(c.lsda_start[f]) + c.lsda_size[f] > c.lsda.size())
      r.fail("not an encoded stamp output: a function's range outside its array");
  return c;
}

bool same_stamp_output(const StampOutput& a, const StampOutput& b) {
  auto same_relocs = [](const std::vector<StampReloc>& x, const std::vector<StampReloc>& y) {
    return x.size() == y.size() &&
        std::equal(x.begin(), x.end(), y.begin(), [](const StampReloc& p, const StampReloc& q) {
             return p.offset == q.offset && p.type == q.type && p.symbol == q.symbol && p.addend == q.addend;
           });
  };
  return a.code == b.code && a.code_start == b.code_start && a.code_size == b.code_size &&
      same_relocs(a.relocs, b.relocs) && a.reloc_start == b.reloc_start && a.reloc_count == b.reloc_count &&
      a.lsda == b.lsda && a.lsda_start == b.lsda_start && a.lsda_size == b.lsda_size &&
      a.inst_offset == b.inst_offset;
}

// ---- the client --------------------------------------------------------------------

StampServiceAnswer run_stages_in_service(const std::string& socket_path, const FlatModuleData& flat,
                                         const std::string& source_name, const std::string& client) {
  auto fail = [&](const std::string& why) -> KilnError { return KilnError(kExitIo, socket_path, why); };
  sockaddr_un addr;
  if (!fill_address(socket_path, addr)) throw fail("not a usable socket path");
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw fail("socket: " + errno_reason(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw fail("cannot connect: " + errno_reason(errno));
  set_timeouts(fd);

  // The service needs the code's part only: the debug information stays here.
  const std::string body = write_flat_file(flat, source_name, FlatFileDebug::omit);
  const std::string name = client.substr(0, kMaxClientName);
  RequestHeader q{};
  std::memcpy(q.magic, kRequestMagic, 4);
  q.version = kStampServiceProtocol;
  q.client_bytes = static_cast<uint32_t>(name.size());
  q.flat_bytes = body.size();
  std::string why = send_all(fd, &q, sizeof q);
  if (why.empty()) why = send_all(fd, name.data(), name.size());
  if (why.empty()) why = send_all(fd, body.data(), body.size());
  if (!why.empty()) throw fail(why);

  AnswerHeader a{};
  if (std::string w = recv_all(fd, &a, sizeof a); !w.empty()) throw fail(w);
  if (std::memcmp(a.magic, kAnswerMagic, 4) != 0 || a.version != kStampServiceProtocol)
    throw fail("answered out of protocol");
  if (a.device_bytes > kMaxClientName || a.payload_bytes > kMaxMessage) throw fail("answered with an oversized message");
  StampServiceAnswer answer;
  std::string payload;
  if (std::string w = recv_string(fd, a.device_bytes, answer.device); !w.empty()) throw fail(w);
  if (std::string w = recv_string(fd, a.payload_bytes, payload); !w.empty()) throw fail(w);
  if (a.status != 0) throw fail("the service failed: " + payload);
  answer.code = decode_stamp_output(payload, socket_path);
  answer.batch = a.batch;
  answer.batch_modules = a.batch_modules;
  return answer;
}

// ---- the service -------------------------------------------------------------------

namespace {

// One module waiting for its batch, and then for its connection's thread to send the answer.
struct ServiceJob {
  FlatModuleData flat;
  std::string client;
  uint64_t instructions = 0;
  std::chrono::steady_clock::time_point arrived;
  // Filled by the executor's thread; `done` under the service's mutex.
  bool done = false;
  std::string error;
  StampOutput code;
  uint64_t batch = 0;
  uint32_t batch_modules = 0;
};

// The executors: a GPU executor (or its stand-in) per stream, or the CPU executor.
class ServiceExecutors {
 public:
  ServiceExecutors(const std::string& device, unsigned streams) {
    if (device == "cuda") {
      pool_ = std::make_unique<StampGpuPool>(streams);
      name_ = (*pool_)[0].device_name();
      count_ = static_cast<unsigned>(pool_->size());
    } else {
      name_ = "cpu (stamp's CPU executor)";
      count_ = std::max(1u, streams);
    }
  }
  unsigned count() const { return count_; }
  const std::string& name() const { return name_; }
  void run(unsigned stream, std::vector<std::shared_ptr<ServiceJob>>& batch) {
    if (!pool_) {
      for (auto& job : batch) job->code = run_stamp_cpu(job->flat.view(), 1);
      return;
    }
    std::vector<FlatModuleView> views;
    for (auto& job : batch) views.push_back(job->flat.view());
    std::vector<StampOutput> out = (*pool_)[stream].run_batch(views.data(), views.size());
    for (size_t k = 0; k < batch.size(); ++k) batch[k]->code = std::move(out[k]);
  }

 private:
  std::unique_ptr<StampGpuPool> pool_;
  std::string name_;
  unsigned count_ = 1;
};

int g_signal_pipe[2] = {-1, -1};
extern "C" void on_stop_signal(int) {
  char c = 's';
  [[maybe_unused]] ssize_t n = ::write(g_signal_pipe[1], &c, 1);
}

class StampService {
 public:
  StampService(const StampServiceOptions& o, ServiceExecutors& executors) : o_(o), executors_(executors) {}
  void serve(int listen_fd);

 private:
  void executor_loop(unsigned stream);
  std::vector<std::shared_ptr<ServiceJob>> next_batch(std::unique_lock<std::mutex>& lock);
  void run_batch(unsigned stream, std::vector<std::shared_ptr<ServiceJob>>& batch);
  void connection(int fd);
  std::string read_request(int fd, std::shared_ptr<ServiceJob>& job);
  void answer(int fd, const ServiceJob* job, const std::string& error);
  void receipt(const std::string& line);
  void summary(double seconds);

  const StampServiceOptions& o_;
  ServiceExecutors& executors_;
  std::mutex receipts_mutex_;
  std::mutex mutex_;
  std::condition_variable queued_, finished_;
  std::deque<std::shared_ptr<ServiceJob>> queue_;
  uint64_t queued_instructions_ = 0;
  bool stopping_ = false;
  unsigned open_connections_ = 0;  // their threads are detached: a build makes thousands
  unsigned reading_ = 0;           // connections whose request is still arriving
  // When each client last sent a module: a batch waits for others only while another
  // client is sending (a build's crates compiled side by side).
  std::map<std::string, std::chrono::steady_clock::time_point> last_seen_;
  bool others_active(const std::string& client, std::chrono::steady_clock::time_point now) const;
  // Totals for the summary, under mutex_.
  unsigned executors_at_stop_ = 0;  // executors that ran until the service stopped: all of them
  uint64_t sent_ = 0;               // tests (die_after): answers numbered up to die_after that went out
  std::condition_variable sent_all_;
  uint64_t requests_ = 0, answered_ = 0, failed_ = 0, batches_ = 0, mixed_batches_ = 0, modules_ = 0,
           instructions_ = 0;
  double busy_ = 0;
  std::set<std::string> clients_;
};

bool StampService::others_active(const std::string& client, std::chrono::steady_clock::time_point now) const {
  const auto recent = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(4 * o_.max_wait));
  for (const auto& [name, when] : last_seen_)
    if (name != client && now - when <= recent) return true;
  return false;
}

// Waits for a batch: the queue's first module and whatever else arrives until the batch
// holds batch_instructions or the first module has waited max_wait; but only while a
// request is arriving or another client has sent lately: a lone crate's modules come
// one per emitting thread, each waiting for its answer, and waiting would only hold
// them back.
// Empty only when the service stops: an executor that waited on the same first module
// as another, which took the queue, waits again (it returned empty and its thread
// ended, and the service ran on fewer streams than it said).
std::vector<std::shared_ptr<ServiceJob>> StampService::next_batch(std::unique_lock<std::mutex>& lock) {
  for (;;) {
    queued_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return {};
    const auto deadline = queue_.front()->arrived +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(o_.max_wait));
    queued_.wait_until(lock, deadline, [&] {
      return stopping_ || queue_.empty() || queued_instructions_ >= o_.batch_instructions ||
          (o_.adaptive && reading_ == 0 && !others_active(queue_.front()->client, std::chrono::steady_clock::now()));
    });
    if (!queue_.empty()) break;
  }
  std::vector<std::shared_ptr<ServiceJob>> batch;
  uint64_t instructions = 0;
  while (!queue_.empty() && (batch.empty() || instructions < o_.batch_instructions)) {
    instructions += queue_.front()->instructions;
    queued_instructions_ -= queue_.front()->instructions;
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return batch;
}

void StampService::run_batch(unsigned stream, std::vector<std::shared_ptr<ServiceJob>>& batch) {
  Stopwatch clock;
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - batch[0]->arrived).count();
  std::string error;
  try {
    executors_.run(stream, batch);
  } catch (const std::exception& e) {
    error = e.what();
  }
  const double seconds = clock.seconds();
  std::set<std::string> clients;
  uint64_t instructions = 0;
  for (auto& job : batch) {
    clients.insert(job->client);
    instructions += job->instructions;
  }
  uint64_t number;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    number = ++batches_;
    mixed_batches_ += clients.size() > 1;
    modules_ += batch.size();
    instructions_ += instructions;
    busy_ += seconds;
    for (auto& job : batch) {
      job->error = error;
      job->batch = number;
      job->batch_modules = static_cast<uint32_t>(batch.size());
      job->done = true;
    }
  }
  finished_.notify_all();
  JsonWriter w;
  w.begin_object().field("v", 1).field("batch", number).field("stream", stream);
  w.field("modules", static_cast<uint64_t>(batch.size())).field("instructions", instructions);
  w.string_array("clients", std::vector<std::string>(clients.begin(), clients.end()));
  w.field("waited", waited).field("seconds", seconds).field("device", executors_.name());
  if (!error.empty()) w.field("error", error);
  w.end_object();
  receipt(w.str());
}

void StampService::executor_loop(unsigned stream) {
  for (;;) {
    std::vector<std::shared_ptr<ServiceJob>> batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      batch = next_batch(lock);
    }
    if (batch.empty()) {  // stopping, nothing queued
      std::lock_guard<std::mutex> lock(mutex_);
      executors_at_stop_ += stopping_;
      return;
    }
    run_batch(stream, batch);
  }
}

std::string StampService::read_request(int fd, std::shared_ptr<ServiceJob>& job) {
  RequestHeader q{};
  if (std::string why = recv_all(fd, &q, sizeof q); !why.empty()) return why;
  if (std::memcmp(q.magic, kRequestMagic, 4) != 0) return "not a stamp service request";
  if (q.version != kStampServiceProtocol)
    return "protocol version " + std::to_string(q.version) + ", this service speaks " +
        std::to_string(kStampServiceProtocol);
  if (q.client_bytes > kMaxClientName || q.reserved != 0 || q.flat_bytes > kMaxMessage)
    return "an oversized request, or a reserved field not 0";
  std::string body;
  job = std::make_shared<ServiceJob>();
  if (std::string why = recv_string(fd, q.client_bytes, job->client); !why.empty()) return why;
  if (std::string why = recv_string(fd, q.flat_bytes, body); !why.empty()) return why;
  try {
    job->flat = read_flat_file(body, job->client);  // checked: the stages may run it
  } catch (const KilnError& e) {
    return e.what();
  }
  job->instructions = job->flat.insts.size();
  return "";
}

void StampService::answer(int fd, const ServiceJob* job, const std::string& error) {
  const std::string payload = error.empty() ? encode_stamp_output(job->code) : error;
  AnswerHeader a{};
  std::memcpy(a.magic, kAnswerMagic, 4);
  a.version = kStampServiceProtocol;
  a.status = error.empty() ? 0 : 1;
  a.batch = job ? job->batch : 0;
  a.batch_modules = job ? job->batch_modules : 0;
  a.device_bytes = static_cast<uint32_t>(executors_.name().size());
  a.payload_bytes = payload.size();
  std::string why = send_all(fd, &a, sizeof a);
  if (why.empty()) why = send_all(fd, executors_.name().data(), executors_.name().size());
  if (why.empty()) send_all(fd, payload.data(), payload.size());
}

void StampService::connection(int fd) {
  set_timeouts(fd);
  std::shared_ptr<ServiceJob> job;
  std::string error = read_request(fd, job);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --reading_;
  }
  queued_.notify_all();
  if (error.empty()) {
    std::unique_lock<std::mutex> lock(mutex_);
    ++requests_;
    clients_.insert(job->client);
    job->arrived = std::chrono::steady_clock::now();
    last_seen_[job->client] = job->arrived;
    queue_.push_back(job);
    queued_instructions_ += job->instructions;
    queued_.notify_all();
    finished_.wait(lock, [&] { return job->done; });
    error = job->error;
  }
  // Each answer takes its number before it is sent. Tests (die_after): the service dies
  // once exactly die_after answers have gone out, as a crash mid-build would; answers
  // go out on several threads at once, so one numbered past it is never sent (its
  // thread waits for the death), and the last one waits for those before it to be sent
  // in full. (Counted after sending, two answers could go out before the death.)
  uint64_t answered;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    answered = ++answered_;
    failed_ += !error.empty();
  }
  if (o_.die_after && answered > o_.die_after) {
    std::unique_lock<std::mutex> lock(mutex_);
    sent_all_.wait(lock, [] { return false; });  // until answer die_after's thread ends the service
  }
  answer(fd, error.empty() ? job.get() : nullptr, error);
  ::close(fd);
  if (o_.die_after && answered <= o_.die_after) {
    std::unique_lock<std::mutex> lock(mutex_);
    ++sent_;
    sent_all_.notify_all();
    if (answered == o_.die_after) {
      sent_all_.wait(lock, [&] { return sent_ == o_.die_after; });
      ::raise(SIGKILL);
    }
  }
  // Notified under the lock: once the count is 0, serve() may return and the service
  // be destroyed, so this thread touches nothing of it after unlocking.
  std::lock_guard<std::mutex> lock(mutex_);
  --open_connections_;
  finished_.notify_all();
}

// As every JSON Lines file of the corpus is appended (kiln-corpus(5)): under its lock,
// a torn line of a build that ran out of disk set aside. A line that cannot be written
// (the corpus not made yet, a full disk) is left out: the service goes on.
void StampService::receipt(const std::string& line) {
  if (o_.receipts_path.empty()) return;
  std::lock_guard<std::mutex> lock(receipts_mutex_);  // this process's lines in their order
  try {
    append_line_locked(o_.receipts_path, line);
  } catch (const std::exception&) {}
}

void StampService::summary(double seconds) {
  JsonWriter w;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    w.begin_object().field("v", 1).field("summary", true).field("device", executors_.name());
    w.field("streams", executors_.count()).field("streams_at_stop", executors_at_stop_);
    w.field("requests", requests_).field("failed", failed_);
    w.field("batches", batches_).field("batches_from_several_clients", mixed_batches_);
    w.field("modules", modules_).field("instructions", instructions_);
    w.field("clients", static_cast<uint64_t>(clients_.size()));
    w.field("busy_seconds", busy_).field("seconds", seconds).end_object();
  }
  receipt(w.str());
}

// Accepts until a stop signal; then every accepted request is answered before it returns.
void StampService::serve(int listen_fd) {
  Stopwatch clock;
  std::vector<std::thread> executors;
  for (unsigned s = 0; s < executors_.count(); ++s) executors.emplace_back([this, s] { executor_loop(s); });
  for (;;) {
    pollfd fds[2] = {{listen_fd, POLLIN, 0}, {o_.stop_fd >= 0 ? o_.stop_fd : g_signal_pipe[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents) break;
    if (!(fds[0].revents & POLLIN)) continue;
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++open_connections_;
      ++reading_;
    }
    std::thread([this, fd] { connection(fd); }).detach();
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return open_connections_ == 0; });
    stopping_ = true;
  }
  queued_.notify_all();
  for (auto& t : executors) t.join();
  summary(clock.seconds());
}

void tell(int fd, const std::string& line) {
  std::string text = line + "\n";
  [[maybe_unused]] ssize_t n = ::write(fd, text.data(), text.size());
}

}  // namespace

int run_stamp_service(const StampServiceOptions& options, int ready_fd) {
  std::unique_ptr<ServiceExecutors> executors;
  try {
    executors = std::make_unique<ServiceExecutors>(options.device, options.streams);
  } catch (const KilnError& e) {
    tell(ready_fd, std::string("error: ") + e.what());
    return e.code();
  } catch (const std::exception& e) {
    tell(ready_fd, std::string("error: --device ") + options.device + ": " + e.what());
    return kExitNoDevice;
  }
  sockaddr_un addr;
  if (!fill_address(options.socket_path, addr)) {
    tell(ready_fd, "error: " + options.socket_path + ": too long for a Unix socket's path");
    return kExitIo;
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 256) != 0) {
    tell(ready_fd, "error: " + options.socket_path + ": cannot listen: " + errno_reason(errno));
    if (fd >= 0) ::close(fd);
    return kExitIo;
  }
  if (options.stop_fd < 0) {
    if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0) {
      tell(ready_fd, "error: pipe: " + errno_reason(errno));
      return kExitIo;
    }
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, &sa, nullptr);
  }
  StampService service(options, *executors);
  tell(ready_fd, "ready " + executors->name());
  service.serve(fd);
  ::close(fd);
  ::unlink(options.socket_path.c_str());
  return kExitOk;
}

}  // namespace kiln
