// btrdedupe: the process around the command line (src/cli/command_line.h): its signal
// handlers and the flags they set, on the machine's own filesystems.
#include <unistd.h>

#include <atomic>
#include <csignal>

#include "src/cli/command_line.h"
#include "src/follow/follow_clock.h"
#include "src/run/heap_release.h"

namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_cycle_stop{false};  // --follow: ends the cycle under way
std::atomic<bool> g_wake{false};        // --follow: SIGHUP, a cycle now
volatile std::sig_atomic_t g_signal = 0;

// The first SIGINT/SIGTERM asks for a clean stop (no new dedupe round starts); the handler
// is reset, so a second one ends the process at once.
extern "C" void on_stop_signal(int sig) {
  g_signal = sig;
  g_stop.store(true);
  g_cycle_stop.store(true);
  btrdedupe::wake_sleepers();
  static const char msg[] =
      "\nbtrdedupe: stopping after the dedupe rounds under way (signal again to abort now)\n";
  const ssize_t ignored = ::write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)ignored;
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_RESTART;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

extern "C" void on_wake_signal(int) {
  g_wake.store(true);
  btrdedupe::wake_sleepers();
}

void install_wake_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_wake_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGHUP, &sa, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  btrdedupe::limit_heap_arenas();
  btrdedupe::StopSignals signals{g_stop, g_cycle_stop, g_wake, g_signal, install_stop_handlers,
                                 install_wake_handler};
  return btrdedupe::run_command_line(argc, argv, btrdedupe::machine_world(), signals);
}
