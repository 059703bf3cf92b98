"""How a built program runs: natively or under Wine, inside a private
network namespace where the machine allows it; and the result lines of
a run (``PASS name``, ``FAIL name: why``, ``SKIP name: why``).

Everything that runs tests shares these: the test command, the
benchmark, the consumers suite and upstream --check.
"""

import os
import platform
import shlex
import shutil
import signal
import subprocess
import tempfile

from .. import console
from ..build.cmake import cross_windows, windows_toolchain_missing
from ..source.cache import cache_root

CASE_TIMEOUT = 60
# Set for runs whose wall-clock figures measure the instrumentation or the
# emulator as much as libuv (valgrind, Wine's single-threaded server under
# a socket flood): the cases report a missed timing bound instead of
# failing on it (tests/regress/harness.h).
TIMING_REPORT = {"UVPATCH_TIMING": "report"}
# Now and then Wine cannot start a process: the fixed address of its
# shared user data is already taken in the randomized address space
# (STATUS_CONFLICTING_ADDRESSES), and it exits 1 before main. Its error
# on the "virtual" channel, which the runs show, tells this apart from
# an exit of the program's own. A process the program starts (libuv's
# runner starts each test so) writes to the same stderr.
WINE_DEBUG = "-all,err+virtual"
WINE_NOT_STARTED = "failed to map the shared user data"
WINE_STARTS = 3


class Tally:
    """Prints each result as its line and counts them."""

    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.failures = []
        # Each failure's lines, repeated at the end of the run: a log's
        # tail is often all that is kept of it.
        self.failure_lines = []
        self._last_failed = False
        # Names the base that the results are of.
        self.prefix = ""

    def result(self, status, name, why=""):
        name = self.prefix + name
        if status == "PASS":
            self.passed += 1
        elif status == "FAIL":
            self.failed += 1
            self.failures.append(name)
        else:
            self.skipped += 1
        line = "%s %s" % (status, name)
        if why:
            line += ": " + why
        self._last_failed = status == "FAIL"
        if self._last_failed:
            self.failure_lines.append(line)
        print(line, flush=True)

    def info(self, text):
        if self._last_failed:
            self.failure_lines.append("     " + text)
        print("     " + text, flush=True)

    def recap(self):
        """The failures' lines again, for the end of the run."""
        if not self.failure_lines:
            return ""
        return "\n".join(["--- the %d failure(s) again" % self.failed] +
                         self.failure_lines)

    def summary(self):
        return "%d passed, %d failed, %d skipped" % (
            self.passed, self.failed, self.skipped)


# libuv tests that send to addresses off this machine (multicast groups,
# public hosts). They run only inside a private network namespace.
OFF_MACHINE_TESTS = ("tcp_connect_timeout", "tcp_close_while_connecting",
                     "udp_connect", "udp_multicast_")

# Runs a command in a new network namespace with only loopback, up.
NETNS = ["unshare", "--net", "--", "sh", "-c",
         'ip link set lo up && exec "$0" "$@"']


def _netns_works():
    if platform.system() != "Linux" or not shutil.which("unshare") or \
            not shutil.which("ip"):
        return False
    try:
        return subprocess.run(NETNS + ["true"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL,
                              timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class Runner:
    """How to run a built program for a target: natively or under Wine,
    inside a private network namespace where the machine allows it, so no
    test can send a packet beyond loopback."""

    def __init__(self, target):
        self.target = target
        self.wine = None
        self.isolated = _netns_works()
        self.prefix = NETNS if self.isolated else []
        self.env = dict(os.environ)
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            self.env["UV_RUN_AS_ROOT"] = "1"
        if target == "windows" and cross_windows():
            self.wine = shutil.which("wine64") or shutil.which("wine")
            self.env["WINEDEBUG"] = WINE_DEBUG
            # No Mono or Gecko installer dialogs in a fresh prefix.
            self.env["WINEDLLOVERRIDES"] = "mscoree,mshtml="
            self.env.setdefault("WINEPREFIX",
                                os.path.join(cache_root(), "wineprefix"))
            # Wine passes every socket call and wait through one server
            # process; a flood from a second process saturates it, on the
            # base and patched alike. Real Windows judges those bounds.
            self.env.update(TIMING_REPORT)

    @property
    def under_wine(self):
        return self.wine is not None

    def command(self, exe, args):
        return self.prefix + ([self.wine] if self.wine else []) + [exe] + \
            list(args)

    def shown(self, exe, args, env=None):
        """The command line that run() runs, as a shell would take it:
        the variables it sets beyond ours first (Wine's among them)."""
        run_env = dict(self.env, **(env or {}))
        extra = ["%s=%s" % (k, shlex.quote(v))
                 for k, v in sorted(run_env.items())
                 if os.environ.get(k) != v]
        return " ".join(extra + [shlex.join(self.command(exe, args))])

    def may_run(self, test):
        """None, or why a libuv test must not run here."""
        if self.isolated or not test.startswith(OFF_MACHINE_TESTS):
            return None
        return "sends beyond loopback; runs only in a private network " \
               "namespace (needs unshare and ip, as root)"

    def run(self, exe, args, cwd=None, timeout=CASE_TIMEOUT, env=None):
        """(exit status or None on a time-out, stdout, stderr). The program
        runs in a process group of its own, writing to files rather than
        pipes: what it leaves running (a helper process, a Wine child)
        cannot keep us waiting, and is killed with the group. ``env`` adds
        to the runner's environment."""
        for start in range(WINE_STARTS):
            status, out, err = self._run_once(exe, args, cwd, timeout, env)
            if not (self.wine and status and WINE_NOT_STARTED in err):
                break
            # Its verdict is Wine's, not the program's.
            console.note("Wine did not start %s or a process it started "
                         "(%s): %s" % (
                             shlex.join([exe] + list(args)),
                             WINE_NOT_STARTED,
                             "running it again" if start + 1 < WINE_STARTS
                             else "gave up"))
        return status, out, err

    def _run_once(self, exe, args, cwd, timeout, env):
        cmd = self.command(exe, args)
        console.show_command(cmd, cwd)
        run_env = dict(self.env, **(env or {}))
        with tempfile.TemporaryFile() as out, \
                tempfile.TemporaryFile() as err:
            child = subprocess.Popen(cmd, cwd=cwd, env=run_env,
                                     stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=err,
                                     start_new_session=os.name == "posix")
            try:
                status = child.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                status = None
            _kill_group(child)
            child.wait()
            out.seek(0)
            err.seek(0)
            return (status, out.read().decode(errors="replace"),
                    err.read().decode(errors="replace"))

    def start(self):
        if not self.wine:
            return
        # One wineserver and one set of Wine services for the whole run:
        # starting them per program would cost seconds each. Wine creates
        # sockets in wineserver, so it lives in the private namespace too.
        # Their output goes nowhere: they outlive the command that starts
        # them and would hold our pipes open.
        os.makedirs(self.env["WINEPREFIX"], exist_ok=True)
        quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL,
                 "stderr": subprocess.DEVNULL, "env": self.env}
        server = shutil.which("wineserver")
        if server:
            # A server left from another run may sit outside the namespace.
            subprocess.run([server, "-k"], timeout=60, **quiet)
            subprocess.run(self.prefix + [server, "-p"], timeout=60, **quiet)
        subprocess.run(self.prefix + [self.wine, "wineboot", "--init"],
                       timeout=600, **quiet)

    def stop(self):
        if self.wine and shutil.which("wineserver"):
            subprocess.run([shutil.which("wineserver"), "-k"], env=self.env,
                           stderr=subprocess.DEVNULL)


def _kill_group(child):
    if os.name == "posix":
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    child.kill()


def _status_name(code):
    if code is None:
        return "timed out after %d s" % CASE_TIMEOUT
    if code < 0:
        return "killed by signal %d" % -code
    return "exit status %d" % code


# The harness's result lines (tests/regress/harness.h, toolsuite.py).
RESULT_MARKERS = (("ok ", "PASS"), ("not ok ", "FAIL"), ("skip ", "SKIP"))


def _parse_result(line):
    """(status, name, why) of a result line, or None for any other."""
    for marker, status in RESULT_MARKERS:
        if line.startswith(marker):
            name, _, why = line[len(marker):].partition(": ")
            return status, name, why
    return None


def _first_result(out):
    """(status, why) of the first result line in ``out``, or None."""
    for line in out.splitlines():
        result = _parse_result(line)
        if result:
            return result[0], result[2]
    return None


def _report_lines(stdout, tally, prefix):
    """Turns result lines into results; returns how many there were."""
    count = 0
    for line in stdout.splitlines():
        result = _parse_result(line)
        if result:
            status, name, why = result
            tally.result(status, prefix + name, why)
            count += 1
    return count


def _one_line(text):
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def windows_unavailable():
    """Why the Windows tests cannot run on this machine, or None."""
    if not cross_windows():
        return None
    missing = windows_toolchain_missing()
    if missing:
        return missing
    if not (shutil.which("wine64") or shutil.which("wine")):
        return "wine not found (apt-get install wine)"
    return None
