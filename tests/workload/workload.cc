// workload: a stand-in training program for trainctl's tests.
//
// Flags are processed in order, so "--print a --sleep 1 --exit 3" prints, sleeps, then exits 3.
// Without flags it exits 0. See Usage() for the list.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

extern char** environ;

// --hang: a hung replica, as the stack capture's tests (stack_capture_test.cc) find it: this
// function on its main thread's stack, inside libc's pause(). Not inlined and with C linkage, so
// that gdb names it as it is spelled here.
extern "C" __attribute__((noinline)) void trainctl_workload_wait_for_peer() {
  while (true) pause();
}

namespace {

const char kUsage[] =
    "usage: workload [flag]...   (flags run in order; no flags: exit 0)\n"
    "  --print TEXT          print TEXT and a newline on stdout\n"
    "  --stderr TEXT         print TEXT and a newline on stderr\n"
    "  --sleep SECONDS       sleep (fractions allowed)\n"
    "  --exit CODE           exit with CODE\n"
    "  --signal NAME|NUM     raise a signal (SEGV, ABRT, KILL, TERM, 9, ...)\n"
    "  --alloc-mb N          allocate and touch N MiB, and keep holding it\n"
    "  --alloc-until-killed  allocate and touch 10 MiB every 10 ms, forever\n"
    "  --fail-times N --fail-code C\n"
    "                        exit C on the first N runs (counted in\n"
    "                        $TRAINCTL_CHECKPOINT_DIR/.fail-count-$TRAINCTL_REPLICA_NAME)\n"
    "  --checkpoint          resume from and advance\n"
    "                        $TRAINCTL_CHECKPOINT_DIR/ckpt-$TRAINCTL_REPLICA_NAME\n"
    "  --step-time SECONDS   how long one --train step takes (default 0.05)\n"
    "  --train N             resume from that checkpoint (\"resumed from step K\" when K > 0),\n"
    "                        then advance it one step per --step-time, printing \"step S\",\n"
    "                        until it reaches N (\"trained to step N\")\n"
    "  --wait-file PATH      wait until PATH exists (polls every 20 ms; gives up and exits 4\n"
    "                        after 300 s, so a forgotten replica cannot outlive its test)\n"
    "  --env                 print TRAINCTL_*, RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT,\n"
    "                        CLUSTER_SPEC, AIP_CHECKPOINT_DIR, the GPU variables\n"
    "                        (CUDA_VISIBLE_DEVICES, ...) and the host-local ranks\n"
    "                        (LOCAL_RANK, ...) as NAME=VALUE lines\n"
    "  --pidfile PATH        write the pid to PATH\n"
    "  --run-once DIR        fail loudly (exit 99, a line in DIR/violations) unless this is the\n"
    "                        only process that ever ran this run: holds an exclusive lock on\n"
    "                        DIR/<job>.<attempt>.<replica>.<restart>.lock while it lives and\n"
    "                        creates DIR/<same>.ran (O_EXCL)\n"
    "  --exclusive PATH      fail loudly (exit 99, a line in PATH.violations) when another\n"
    "                        process holds PATH's exclusive lock; else hold it while it lives\n"
    "                        (one PATH per replica: no two of its runs overlap, moves included)\n"
    "  --on-notice exit|report\n"
    "                        during --train, after each step, look for the preemption\n"
    "                        notice ($TRAINCTL_PREEMPTION_NOTICE): exit: print \"notice: stopped\n"
    "                        at step S\" and exit 0 (the step is checkpointed already);\n"
    "                        report: once, write {\"step\":S,\"checkpoint\":true} to\n"
    "                        $TRAINCTL_PROGRESS_FILE, print \"notice: checkpoint reported at\n"
    "                        step S\" and train on. SIGTERM (the notice's default signal)\n"
    "                        no longer ends the process\n"
    "  --trap-term           on SIGTERM print \"got SIGTERM\" and exit 0\n"
    "  --ignore-term         ignore SIGTERM\n"
    "  --hang                block forever in trainctl_workload_wait_for_peer() (pause() in a\n"
    "                        loop): a hung replica whose stack names that function\n"
    "  --flood MIB FILE      write MIB MiB to stdout as fast as it can, in 128-byte lines that\n"
    "                        start with the wall-clock time (ns) of their write, then write\n"
    "                        \"BYTES NANOSECONDS\" (how long the writes took) to FILE\n";

[[noreturn]] void Die(const std::string& message);

// "<job>.<attempt>.<replica>.<restart>": the run this process is, from its environment.
std::string RunKey() {
  auto env = [](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value == nullptr ? "?" : value);
  };
  return env("TRAINCTL_JOB_ID") + "." + env("TRAINCTL_ATTEMPT") + "." +
         env("TRAINCTL_REPLICA_NAME") + "." + env("TRAINCTL_RESTART_COUNT");
}

// Appends "<run> <what> (pid N)" to `file` and stderr, then exits 99.
[[noreturn]] void Violation(const std::string& file, const std::string& what) {
  std::string line = RunKey() + " " + what + " (pid " + std::to_string(getpid()) + ")\n";
  int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd >= 0) {
    ssize_t ignored = write(fd, line.data(), line.size());
    (void)ignored;
    close(fd);
  }
  std::fprintf(stderr, "workload: %s", line.c_str());
  std::exit(99);
}

// --run-once: see kUsage. The lock's fd stays open until the process ends.
void RunOnce(const std::string& dir) {
  const std::string key = RunKey();
  int lock = open((dir + "/" + key + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0) Die("--run-once: cannot open the lock in " + dir);
  if (flock(lock, LOCK_EX | LOCK_NB) != 0) Violation(dir + "/violations", "runs twice at once");
  int ran = open((dir + "/" + key + ".ran").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (ran < 0) Violation(dir + "/violations", "ran before");
  close(ran);
}

// --exclusive: see kUsage. The lock's fd stays open until the process ends.
void Exclusive(const std::string& path) {
  int lock = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0) Die("--exclusive: cannot open " + path);
  if (flock(lock, LOCK_EX | LOCK_NB) != 0)
    Violation(path + ".violations", "overlaps another holder");
}

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "workload: %s\n", message.c_str());
  std::exit(2);
}

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

// A file in the checkpoint directory, named per replica.
std::string CheckpointFile(const std::string& prefix) {
  std::string dir = Env("TRAINCTL_CHECKPOINT_DIR");
  if (dir.empty()) Die("TRAINCTL_CHECKPOINT_DIR is not set");
  return dir + "/" + prefix + Env("TRAINCTL_REPLICA_NAME");
}

long ReadNumber(const std::string& path) {
  std::ifstream in(path);
  long value = 0;
  return (in >> value) ? value : 0;
}

// Replaces the file at once (write, then rename), so a reader never sees it half written.
void WriteNumber(const std::string& path, long value) {
  std::string tmp = path + ".tmp-" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << value << "\n";
    if (!out.flush()) Die("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) Die("cannot rename " + tmp + " to " + path);
}

int SignalNumber(const std::string& text) {
  struct Named {
    const char* name;
    int number;
  };
  static const Named kSignals[] = {
      {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"ILL", SIGILL},   {"ABRT", SIGABRT},
      {"FPE", SIGFPE},   {"KILL", SIGKILL}, {"SEGV", SIGSEGV}, {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},
      {"TERM", SIGTERM}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"BUS", SIGBUS}};
  std::string name = text.rfind("SIG", 0) == 0 ? text.substr(3) : text;
  for (const Named& s : kSignals) {
    if (name == s.name) return s.number;
  }
  char* end = nullptr;
  long number = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || number <= 0 || number >= NSIG) Die("bad signal " + text);
  return static_cast<int>(number);
}

void SleepSeconds(double seconds) {
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(seconds);
  ts.tv_nsec = static_cast<long>((seconds - static_cast<double>(ts.tv_sec)) * 1e9);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// Allocates `mib` MiB and touches every page so that it is resident. Never freed.
void AllocateMib(long mib) {
  for (long i = 0; i < mib; ++i) {
    char* block = static_cast<char*>(std::malloc(1 << 20));
    if (block == nullptr) Die("out of memory");
    std::memset(block, 1, 1 << 20);
  }
}

void WaitForFile(const std::string& path) {
  constexpr double kPoll = 0.02;
  constexpr double kGiveUp = 300;
  for (double waited = 0; access(path.c_str(), F_OK) != 0; waited += kPoll) {
    if (waited >= kGiveUp) {
      std::fprintf(stderr, "workload: gave up waiting for %s\n", path.c_str());
      std::exit(4);
    }
    SleepSeconds(kPoll);
  }
}

// What --train does when the preemption notice appears (--on-notice).
enum class OnNotice { kNone, kExit, kReport };

// --flood: `mib` MiB of 128-byte lines in 64 KiB writes, each line stamped with the wall-clock
// time of the write it goes out in (what a benchmark measures the lag of a log copy from).
void Flood(long mib, const std::string& result_path) {
  constexpr size_t kLine = 128;
  constexpr size_t kLinesPerWrite = 512;
  std::string buffer(kLine * kLinesPerWrite, 'x');
  for (size_t i = 0; i < kLinesPerWrite; ++i) buffer[i * kLine + kLine - 1] = '\n';
  const long long total = static_cast<long long>(mib) << 20;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (long long written = 0; written < total;) {
    clock_gettime(CLOCK_REALTIME, &now);
    char stamp[32];
    const int n = std::snprintf(stamp, sizeof(stamp), "%019lld ",
                                static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec);
    for (size_t i = 0; i < kLinesPerWrite; ++i) buffer.replace(i * kLine, n, stamp, n);
    const size_t size = static_cast<size_t>(std::min<long long>(buffer.size(), total - written));
    for (size_t done = 0; done < size;) {
      const ssize_t w = write(1, buffer.data() + done, size - done);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) Die(std::string("--flood: write: ") + std::strerror(errno));
      done += static_cast<size_t>(w);
    }
    written += static_cast<long long>(size);
  }
  clock_gettime(CLOCK_MONOTONIC, &now);
  const long long ns = (now.tv_sec - start.tv_sec) * 1000000000LL + (now.tv_nsec - start.tv_nsec);
  std::ofstream(result_path) << total << " " << ns << "\n";
}

void OnNoticeSignal(int) {}

// Whether the preemption notice file exists.
bool NoticeGiven() {
  const std::string path = Env("TRAINCTL_PREEMPTION_NOTICE");
  return !path.empty() && access(path.c_str(), F_OK) == 0;
}

// Says the step is checkpointed, in the progress file trainctl reads.
void ReportCheckpoint(long step) {
  const std::string path = Env("TRAINCTL_PROGRESS_FILE");
  if (path.empty()) Die("TRAINCTL_PROGRESS_FILE is not set");
  const std::string tmp = path + ".tmp-" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "{\"step\":" << step << ",\"checkpoint\":true}\n";
    if (!out.flush()) Die("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) Die("cannot rename " + tmp + " to " + path);
}

// Resumes from the replica's checkpoint and advances it to `target`, one step per `step_time`.
void Train(long target, double step_time, OnNotice on_notice) {
  std::string path = CheckpointFile("ckpt-");
  long step = ReadNumber(path);
  if (step > 0) std::printf("resumed from step %ld\n", step);
  bool reported = false;
  while (step < target) {
    SleepSeconds(step_time);
    WriteNumber(path, ++step);
    std::printf("step %ld\n", step);
    if (on_notice == OnNotice::kNone || !NoticeGiven()) continue;
    if (on_notice == OnNotice::kExit) {
      std::printf("notice: stopped at step %ld\n", step);
      std::fflush(stdout);
      std::exit(0);
    }
    if (!reported) {
      ReportCheckpoint(step);
      std::printf("notice: checkpoint reported at step %ld\n", step);
      std::fflush(stdout);
      reported = true;
    }
  }
  std::printf("trained to step %ld\n", step);
}

void OnTerm(int) {
  static const char kMessage[] = "got SIGTERM\n";
  ssize_t ignored = write(1, kMessage, sizeof(kMessage) - 1);
  (void)ignored;
  _exit(0);
}

void PrintEnv() {
  static const char* const kNames[] = {"RANK",
                                       "WORLD_SIZE",
                                       "MASTER_ADDR",
                                       "MASTER_PORT",
                                       "CLUSTER_SPEC",
                                       "AIP_CHECKPOINT_DIR",
                                       "CUDA_VISIBLE_DEVICES",
                                       "NVIDIA_VISIBLE_DEVICES",
                                       "CUDA_DEVICE_ORDER",
                                       "LOCAL_RANK",
                                       "LOCAL_WORLD_SIZE",
                                       "NODE_RANK",
                                       "GROUP_RANK"};
  std::vector<std::string> lines;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    bool wanted = name.rfind("TRAINCTL_", 0) == 0;
    for (const char* n : kNames) wanted = wanted || name == n;
    if (wanted) std::printf("%s\n", entry.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  long fail_times = -1;
  long fail_code = 1;
  double step_time = 0.05;
  OnNotice on_notice = OnNotice::kNone;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(flag + " needs a value");
      return argv[++i];
    };
    auto number = [&]() -> long {
      std::string text = value();
      char* end = nullptr;
      long n = std::strtol(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0') Die(flag + ": not a number: " + text);
      return n;
    };
    if (flag == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (flag == "--print") {
      std::printf("%s\n", value().c_str());
    } else if (flag == "--stderr") {
      std::fprintf(stderr, "%s\n", value().c_str());
    } else if (flag == "--sleep") {
      SleepSeconds(std::atof(value().c_str()));
    } else if (flag == "--exit") {
      std::exit(static_cast<int>(number()));
    } else if (flag == "--signal") {
      int sig = SignalNumber(value());
      std::fflush(nullptr);
      signal(sig, SIG_DFL);
      raise(sig);
    } else if (flag == "--alloc-mb") {
      AllocateMib(number());
    } else if (flag == "--alloc-until-killed") {
      while (true) {
        AllocateMib(10);
        SleepSeconds(0.01);
      }
    } else if (flag == "--fail-times") {
      fail_times = number();
    } else if (flag == "--fail-code") {
      fail_code = number();
    } else if (flag == "--checkpoint") {
      std::string path = CheckpointFile("ckpt-");
      long step = ReadNumber(path);
      if (step > 0) std::printf("resumed from step %ld\n", step);
      WriteNumber(path, step + 1);
    } else if (flag == "--step-time") {
      step_time = std::atof(value().c_str());
    } else if (flag == "--train") {
      Train(number(), step_time, on_notice);
    } else if (flag == "--on-notice") {
      const std::string mode = value();
      if (mode == "exit") {
        on_notice = OnNotice::kExit;
      } else if (mode == "report") {
        on_notice = OnNotice::kReport;
      } else {
        Die("--on-notice takes exit or report, got " + mode);
      }
      signal(SIGTERM, OnNoticeSignal);
    } else if (flag == "--wait-file") {
      WaitForFile(value());
    } else if (flag == "--env") {
      PrintEnv();
    } else if (flag == "--run-once") {
      RunOnce(value());
    } else if (flag == "--exclusive") {
      Exclusive(value());
    } else if (flag == "--flood") {
      const long mib = number();
      Flood(mib, value());
    } else if (flag == "--pidfile") {
      WriteNumber(value(), static_cast<long>(getpid()));
    } else if (flag == "--trap-term") {
      signal(SIGTERM, OnTerm);
    } else if (flag == "--ignore-term") {
      signal(SIGTERM, SIG_IGN);
    } else if (flag == "--hang") {
      std::fflush(nullptr);
      trainctl_workload_wait_for_peer();
    } else {
      Die("unknown flag " + flag + "\n" + kUsage);
    }
    // --fail-times takes effect once its code is known: after --fail-code, or at the next flag.
    bool code_follows = i + 1 < argc && std::string(argv[i + 1]) == "--fail-code";
    if (fail_times >= 0 && !code_follows) {
      std::string path = CheckpointFile(".fail-count-");
      long failures = ReadNumber(path);
      if (failures < fail_times) {
        WriteNumber(path, failures + 1);
        std::printf("failing on purpose (%ld of %ld)\n", failures + 1, fail_times);
        std::exit(static_cast<int>(fail_code));
      }
      fail_times = -1;
    }
  }
  return 0;
}
