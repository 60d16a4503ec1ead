// SummarizeStacks (agents/stack_summary.h) on gdb's text as it prints it: a Python process with a
// helper thread, C programs blocked in glibc, C++ names, text without thread headers, garbage.
#include "agents/stack_summary.h"

#include <catch2/catch.hpp>
#include <string>

namespace trainctl::agent {
namespace stack_summary_test {

// gdb -p PID --batch -ex "thread apply all bt" -ex "thread apply all py-bt" against
// /usr/bin/python3 (Debian 12, python3.11-dbg) blocked in time.sleep inside load_batch, with a
// daemon helper thread; frames cut short and arguments shortened.
constexpr char kPython[] =
    R"(0x00007fbb99574545 in __GI___clock_nanosleep (clock_id=clock_id@entry=1, flags=flags@entry=1, req=req@entry=0x7ffff433a1a0, rem=rem@entry=0x0) at ../sysdeps/unix/sysv/linux/clock_nanosleep.c:48

Thread 2 (Thread 0x7fbb991e96c0 (LWP 10223) "python3"):
#0  0x00007fbb99574545 in __GI___clock_nanosleep (clock_id=clock_id@entry=1, flags=flags@entry=1, req=req@entry=0x7fbb991e8a30, rem=rem@entry=0x0) at ../sysdeps/unix/sysv/linux/clock_nanosleep.c:48
#1  0x00000000005b50f8 in pysleep (timeout=<optimized out>) at ../Modules/timemodule.c:2162
#2  time_sleep (self=<optimized out>, timeout_obj=<optimized out>) at ../Modules/timemodule.c:383
#19 0x00007fbb9952e1f5 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442
#20 0x00007fbb995ae8ec in clone3 () at ../sysdeps/unix/sysv/linux/x86_64/clone3.S:81

Thread 1 (Thread 0x7fbb994a4040 (LWP 10221) "python3"):
#0  0x00007fbb99574545 in __GI___clock_nanosleep (clock_id=clock_id@entry=1, flags=flags@entry=1, req=req@entry=0x7ffff433a1a0, rem=rem@entry=0x0) at ../sysdeps/unix/sysv/linux/clock_nanosleep.c:48
#1  0x00000000005b50f8 in pysleep (timeout=<optimized out>) at ../Modules/timemodule.c:2162
#2  time_sleep (self=<optimized out>, timeout_obj=<optimized out>) at ../Modules/timemodule.c:383
#3  0x000000000051e3df in cfunction_vectorcall_O (func=<built-in method sleep of module object at remote 0x7fbb993f33d0>, args=0x7fbb997b70e0, nargsf=<optimized out>, kwnames=<optimized out>) at ../Include/cpython/methodobject.h:52
#20 0x00007fbb994cc24a in __libc_start_call_main (main=main@entry=0x60a880 <main>, argc=argc@entry=3, argv=argv@entry=0x7ffff433a788) at ../sysdeps/nptl/libc_start_call_main.h:58
#21 0x00007fbb994cc305 in __libc_start_main_impl (main=0x60a880 <main>, argc=3, argv=0x7ffff433a788, init=<optimized out>, fini=<optimized out>, rtld_fini=<optimized out>, stack_end=0x7ffff433a778) at ../csu/libc-start.c:360
#22 0x000000000060a7b1 in _start ()

Thread 2 (Thread 0x7fbb991e96c0 (LWP 10223) "python3"):
Traceback (most recent call first):
  <built-in method sleep of module object at remote 0x7fbb993f33d0>
  File "/tmp/helper.py", line 4, in helper
    time.sleep(1)
  File "/usr/lib/python3.11/threading.py", line 975, in run
    self._target(*self._args, **self._kwargs)
  File "/usr/lib/python3.11/threading.py", line 995, in _bootstrap
    self._bootstrap_inner()

Thread 1 (Thread 0x7fbb994a4040 (LWP 10221) "python3"):
Traceback (most recent call first):
  <built-in method sleep of module object at remote 0x7fbb993f33d0>
  File "/job/src/train.py", line 3, in load_batch
    time.sleep(1000)
  File "/job/src/train.py", line 9, in <module>
    load_batch()
)";

// A C program blocked in pause() under a function of its own; libc has its detached debug info
// (libc6-dbg), so glibc's frames name their sources.
constexpr char kNative[] =
    R"(0x00007fb1fb0a3dd0 in __libc_pause () at ../sysdeps/unix/sysv/linux/pause.c:29

Thread 1 (Thread 0x7fb1fafcd740 (LWP 10362) "worker"):
#0  0x00007fb1fb0a3dd0 in __libc_pause () at ../sysdeps/unix/sysv/linux/pause.c:29
#1  0x000055bfa923e15d in wait_for_peer (rank=3) at /src/worker/workload.cc:120
#2  0x000055bfa923e059 in main () at /src/worker/main.c:5
)";

TEST_CASE("SummarizeStacks names the main thread's innermost Python function", "[stacks]") {
  bool python = false;
  CHECK(SummarizeStacks(kPython, &python) == "load_batch (train.py:3)");
  CHECK(python);
}

TEST_CASE("SummarizeStacks takes another thread's Python frame when the main has none",
          "[stacks]") {
  // The main thread in native code only: its py-bt block is empty (gdb's -s leaves it out).
  const std::string text = R"(Thread 3 (Thread 0x7f01 (LWP 12) "pt_data_worker"):
#0  0x00007f02 in __futex_abstimed_wait_common64 (private=0) at ./nptl/futex-internal.c:57

Thread 1 (Thread 0x7f00 (LWP 10) "python3"):
#0  0x00007f02 in __futex_abstimed_wait_common64 (private=0) at ./nptl/futex-internal.c:57
#1  0x00007f03 in c10::Barrier::wait () from /usr/local/lib/libtorch.so

Thread 3 (Thread 0x7f01 (LWP 12) "pt_data_worker"):
Traceback (most recent call first):
  File "/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py", line 308, in _worker_loop
    r = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
)";
  bool python = false;
  CHECK(SummarizeStacks(text, &python) == "_worker_loop (worker.py:308)");
  CHECK(python);
}

TEST_CASE("SummarizeStacks names a C program's frame outside glibc", "[stacks]") {
  bool python = true;
  CHECK(SummarizeStacks(kNative, &python) == "wait_for_peer (workload.cc:120)");
  CHECK(!python);

  // Without libc's debug info its frames come "from" the library and are passed over alike; so
  // are frames gdb cannot name.
  const std::string stripped = R"(Thread 2 (Thread 0x7f11 (LWP 21) "helper"):
#0  0x00007f12 in epoll_wait () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007f13 in serve_forever () at helper.c:80

Thread 1 (Thread 0x7f10 (LWP 20) "worker"):
#0  0x00007f14 in clock_nanosleep () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007f15 in nanosleep () from /usr/lib/x86_64-linux-gnu/libc.so.6
#2  0x00007f16 in ?? ()
#3  0x000055aa in wait_for_peer () at ./src/net/peer.c:40
#4  0x000055ab in main (argc=1, argv=0x7ffd) at main.c:9
)";
  CHECK(SummarizeStacks(stripped, &python) == "wait_for_peer (peer.c:40)");

  // A frame without a source line: its function alone.
  CHECK(SummarizeStacks("Thread 1 (process 77):\n#0  0x1 in pause () from /lib64/libc.so.6\n"
                        "#1  0x2 in spin_wait () from /opt/app/libnet.so\n",
                        &python) == "spin_wait");
  // Frame 0 without an address; the attach line before the thread is not a frame.
  CHECK(SummarizeStacks("0x1 in other () at o.c:1\n\nThread 1 (LWP 5):\n#0  main () at x.c:5\n",
                        &python) == "main (x.c:5)");
}

TEST_CASE("SummarizeStacks keeps C++ names and drops their argument lists", "[stacks]") {
  bool python = false;
  const std::string text = R"(Thread 1 (Thread 0x7f20 (LWP 30) "trainer"):
#0  0x00007f21 in __GI___poll (fds=0x1, nfds=1, timeout=-1) at ../sysdeps/unix/sysv/linux/poll.c:29
#1  0x000055c1 in trainctl::nccl::Communicator::AllReduce<float> (this=0x55d0, buffer=std::vector of length 4, capacity 4 = {1, 2, 3, 4}) at /src/nccl/communicator.h:88
#2  0x000055c2 in (anonymous namespace)::Step (model=...) at /src/train.cc:12
)";
  CHECK(SummarizeStacks(text, &python) ==
        "trainctl::nccl::Communicator::AllReduce<float> "
        "(communicator.h:88)");
  CHECK(SummarizeStacks("Thread 1 (LWP 5):\n"
                        "#0  0x1 in (anonymous namespace)::Step (model=...) at /src/train.cc:12\n",
                        &python) == "(anonymous namespace)::Step (train.cc:12)");
  CHECK(SummarizeStacks("Thread 1 (LWP 5):\n#0  0x1 in std::function<void (int)>::operator() "
                        "(this=0x2, __args#0=3) at /usr/include/c++/12/bits/std_function.h:591\n",
                        &python) == "std::function<void (int)>::operator() (std_function.h:591)");
  // Without debug info gdb gives the parameter types with the name.
  CHECK(SummarizeStacks("Thread 1 (LWP 5):\n#0  0x1 in ns::Peer::wait(int) const () from "
                        "/opt/app/libpeer.so\n",
                        &python) == "ns::Peer::wait");
  CHECK(SummarizeStacks("Thread 1 (LWP 5):\n#0  0x1 in std::operator<< <char> (os=...) at "
                        "/src/log.cc:7\n",
                        &python) == "std::operator<< <char> (log.cc:7)");
}

TEST_CASE("SummarizeStacks takes text without thread headers as one thread", "[stacks]") {
  bool python = false;
  // `bt` alone, and a frame wrapped onto the next line as gdb does for a narrow terminal.
  const std::string text = R"(#0  0x00007f in __GI___clock_nanosleep (clock_id=1,
    flags=1) at ../sysdeps/unix/sysv/linux/clock_nanosleep.c:48
#1  0x000055 in wait_for_peer (rank=3,
    world=8) at /src/peer.c:77
#2  0x000056 in main () at /src/main.c:3
)";
  CHECK(SummarizeStacks(text, &python) == "wait_for_peer (peer.c:77)");
  CHECK(!python);
  // A Python traceback alone (py-bt), and faulthandler's spelling without the comma.
  CHECK(SummarizeStacks("Traceback (most recent call first):\n  File \"/a/b.py\", line 7, in run\n",
                        &python) == "run (b.py:7)");
  CHECK(python);
  CHECK(SummarizeStacks("Traceback (most recent call first):\n  File \"b.py\", line 7 in run\n",
                        &python) == "run (b.py:7)");
}

TEST_CASE("SummarizeStacks falls back to the innermost frame and to other threads", "[stacks]") {
  bool python = false;
  // Every frame in glibc: the innermost frame's function.
  CHECK(SummarizeStacks("Thread 1 (LWP 5):\n#0  0x1 in __libc_pause () at "
                        "../sysdeps/unix/sysv/linux/pause.c:29\n#1  0x2 in ?? ()\n",
                        &python) == "__libc_pause");
  // No Thread 1 (the main thread exited): the lowest-numbered thread.
  CHECK(SummarizeStacks("Thread 7 (LWP 9):\n#0  0x1 in seven () at s.c:7\n\n"
                        "Thread 3 (LWP 8):\n#0  0x1 in three () at t.c:3\n",
                        &python) == "three (t.c:3)");
}

TEST_CASE("SummarizeStacks finds nothing in garbage", "[stacks]") {
  bool python = true;
  CHECK(SummarizeStacks("", &python).empty());
  CHECK(!python);
  CHECK(SummarizeStacks("ptrace: Operation not permitted.\n", &python).empty());
  CHECK(SummarizeStacks("Thread 1 (LWP 5):\n", &python).empty());
  CHECK(SummarizeStacks("Thread 1 (\n#\n#0\n#1 \n#2  0x\n#3  0x1 in\n#4  0x1 in (\n"
                        "Traceback (most recent call first):\n  File \"\n  File \"x\", line \n"
                        "  File \"x\", line 3, in \n",
                        &python)
            .empty());
  CHECK(python);
  // Unbalanced brackets, control bytes, a frame that is all location, no pointer for python.
  CHECK(SummarizeStacks("#0 ) at :\n#1 <<<( at x:y\n#2 \x01\xff\xfe from \n", nullptr).empty());
  std::string binary;
  for (int i = 0; i < 4096; ++i) binary.push_back(static_cast<char>((i * 7919) % 256));
  SummarizeStacks(binary, &python);
  SummarizeStacks(binary.substr(0, 37) + "\n#0 0x1 in a" + binary, &python);
}

}  // namespace stack_summary_test
}  // namespace trainctl::agent
