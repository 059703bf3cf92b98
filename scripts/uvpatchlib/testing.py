"""The test command: the tool's unit tests, the regression programs
(patched, and the proofs on the base), and libuv's own suite.

Every result is one line on stdout: ``PASS name``, ``FAIL name: why`` or
``SKIP name: why``; the run ends with ``N passed, N failed[, N skipped]``.
"""

import glob
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from . import proc
from .build import (build_variant, host_target, windows_toolchain_missing,
                    cross_windows, mingw_cannot_build)
from .check import check
from .errors import UvPatchError, EXIT_FAILURE, EXIT_FETCH
from .fsutil import Lock, remove_tree, write_atomic

CASE_TIMEOUT = 60
SANITIZED = ("asan", "ubsan", "tsan")
LIBUV_TEST_TIMEOUT = 120
# A libuv test that fails patched is run this many times more before it
# counts as failed. Under Wine some of libuv's tests fail now and then on
# the base as well (watcher_cross_stop: 2 of 12 runs patched, 1 of 12 on
# the base, at 14:50 UTC on 2026-12-03); a regression fails every time.
LIBUV_RERUNS = 5
# libuv's runner exits with TEST_SKIP (7) for a skipped test.
LIBUV_SKIP_STATUS = 7
# libuv's own tests that the default run takes: those of the code the
# series touches.
LIBUV_SELECTION = ("udp_", "timer", "loop_", "hrtime", "metrics_")
# What makes a libuv test file one whose tests use threads (of their own
# or the threadpool's): the ThreadSanitizer run takes those.
THREAD_CALLS = ("uv_thread_create", "uv_queue_work", "uv_async_send",
                "uv_getaddrinfo", "uv_random(")
# Set for runs whose wall-clock figures measure the instrumentation or the
# emulator as much as libuv (valgrind, Wine's single-threaded server under
# a socket flood): the cases report a missed timing bound instead of
# failing on it (tests/regress/harness.h).
TIMING_REPORT = {"UVPATCH_TIMING": "report"}


class Tally:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.failures = []
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
        print(line, flush=True)

    def info(self, text):
        print("     " + text, flush=True)

    def summary(self):
        line = "%d passed, %d failed" % (self.passed, self.failed)
        if self.skipped:
            line += ", %d skipped" % self.skipped
        return line


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
            self.env["WINEDEBUG"] = "-all"
            # No Mono or Gecko installer dialogs in a fresh prefix.
            self.env["WINEDLLOVERRIDES"] = "mscoree,mshtml="
            self.env.setdefault("WINEPREFIX", os.path.join(
                os.path.expanduser("~"), ".cache", "uvpatch", "wineprefix"))
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
        cmd = self.command(exe, args)
        proc.show_command(cmd, cwd)
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


def run_tool_tests(root, tally, shards=2):
    """The tool's unittest suite, in ``shards`` processes at once: its tests
    mostly wait on git and subprocesses."""
    proc.step("tool unit tests")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(root, "scripts")
    seen = 0
    with tempfile.TemporaryDirectory(prefix="uvpatch-pyunit-") as tmp:
        # Files, not pipes: no child blocks while another is read.
        children = []
        for k in range(shards):
            out = open(os.path.join(tmp, "%d.out" % k), "w+",
                       encoding="utf-8")
            err = open(os.path.join(tmp, "%d.err" % k), "w+",
                       encoding="utf-8")
            children.append((subprocess.Popen(
                [sys.executable, "-m", "uvpatchlib.pyunit",
                 os.path.join(root, "tests", "tool"), "%d/%d" % (k, shards)],
                env=env, stdout=out, stderr=err, cwd=root), out, err))
        for child, out, err in children:
            code = child.wait()
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read()
            out.close()
            err.close()
            failed_before = tally.failed
            seen += _report_lines(stdout, tally, "")
            if code != 0 and tally.failed == failed_before:
                tally.result("FAIL", "tool unit tests",
                             "runner exited with %d: %s"
                             % (code, stderr[-800:]))
            elif code != 0:
                sys.stderr.write(stderr)
    if not seen:
        tally.result("FAIL", "tool unit tests", "no test ran")


# The harness's result lines (tests/regress/harness.h, pyunit.py).
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


def regress_programs(root):
    return sorted(os.path.splitext(os.path.basename(p))[0]
                  for p in glob.glob(os.path.join(root, "tests", "regress",
                                                  "*.c")))


def _one_line(text):
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _measurements(err):
    """What a case printed on stderr about its run (counts, timings),
    at most two lines, shown beside its result. A flood case's summary
    runs to about 450 characters: kept whole, as the results file and
    the PR texts quote it, but capped against a runaway line."""
    lines = [ln.strip().lstrip("# ") for ln in err.splitlines()
             if ln.strip()]
    return [ln[:1000] for ln in lines[-2:]]


def run_case(runner, variant, program, case, notes=None):
    """Returns (status, why) for one case, in a process of its own;
    appends what the case measured to ``notes``."""
    code, out, err = runner.run(variant.program(program), [case])
    if notes is not None:
        notes.extend(_measurements(err))
    result = _first_result(out)
    if result:
        return result
    return "FAIL", "%s, no result line; %s" % (_status_name(code),
                                               _one_line(err)[:300])


def list_cases(runner, variant, program, threads_only=False):
    """The case names of a program; with ``threads_only``, those of the
    cases that start threads of their own."""
    code, out, err = runner.run(variant.program(program),
                                ["--list-threads" if threads_only
                                 else "--list"])
    if code != 0:
        raise UvPatchError("%s --list failed (%s): %s"
                           % (variant.program(program), _status_name(code),
                              _one_line(err)), status=EXIT_FAILURE)
    return [ln.strip() for ln in out.splitlines() if ln.strip()]


def proofs_for(manifest, target):
    """{program/case: (patch file, native_only)} for this target."""
    wanted = {}
    for entry in manifest.series:
        for proof in entry.get("proof", []):
            if proof["target"] == target:
                for case in proof["cases"]:
                    wanted[case] = (entry["file"],
                                    proof.get("native_only", False))
    return wanted


def run_regress(manifest, patched, base, runner, tally):
    target = patched.target
    threads_only = patched.config == "tsan"
    proc.step("regression programs (%s%s)" % (
        target, ", the cases that start threads" if threads_only else ""))
    proofs = proofs_for(manifest, target)
    found = set()
    results = {}
    for program in regress_programs(manifest.root):
        try:
            cases = list_cases(runner, patched, program, threads_only)
        except UvPatchError as e:
            tally.result("FAIL", "%s regress %s" % (target, program),
                         e.message)
            continue
        for case in cases:
            name = "%s/%s" % (program, case)
            found.add(name)
            notes, base_notes = [], []
            status, why = run_case(runner, patched, program, case, notes)
            tally.result(status, "%s regress %s" % (target, name), why)
            for note in notes:
                tally.info("patched: " + note)
            if base is None:
                continue  # Patched only: see test_base.
            base_status, base_why = run_case(runner, base, program, case,
                                             base_notes)
            for note in base_notes:
                tally.info("base:    " + note)
            results[name] = {"patched": status, "patched_notes": notes,
                             "base": base_status, "base_why": base_why,
                             "base_notes": base_notes}
            if name in proofs:
                patch, native_only = proofs[name]
                label = "%s proof %s (%s)" % (target, name, patch)
                if native_only and runner.under_wine:
                    tally.result("SKIP", label, "under Wine the base "
                                 "already behaves; the proof runs on real "
                                 "Windows (ci/github workflow)")
                elif base_status == "FAIL":
                    tally.result("PASS", label, "fails on the unpatched "
                                 "base: " + base_why)
                else:
                    tally.result("FAIL", label, "the unpatched base gives "
                                 "%s, so the test cannot show the defect"
                                 % base_status)
            else:
                tally.info("base: %s %s%s" % (base_status.lower(), name,
                                              ": " + base_why if base_why
                                              else ""))
    if base is None:
        proc.note("proofs are judged by the Release run, not under %s"
                  % patched.config)
        return
    if not threads_only:
        save_results(patched, manifest, results)
    for name in sorted(set(proofs) - found):
        if threads_only:
            continue  # Proof cases are judged by the other configs.
        tally.result("FAIL", "%s proof %s" % (target, name),
                     "deps.json names a case that does not exist")


def results_path(out, target, config):
    return os.path.join(out, "results", "regress-%s-%s.json"
                        % (target, config))


def save_results(patched, manifest, results):
    """Keeps what each case gave, patched and base, for the pull requests'
    figures (``upstream``)."""
    path = results_path(patched.out, patched.target, patched.config)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomic(path, json.dumps({
        "base": manifest.name, "commit": manifest.commit,
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": "%s %s, %s, %d cores" % (
            platform.system(), platform.release(), platform.machine(),
            os.cpu_count() or 0),
        "cases": results}, indent=1) + "\n")


VALGRIND_ARGS = ["-q", "--error-exitcode=99", "--leak-check=full",
                 "--errors-for-leak-kinds=definite,indirect"]


def run_memcheck(manifest, patched, runner, tally):
    """Every regression case once more under valgrind, on the patched
    build: no invalid access and no leak. Missed timing bounds are shown,
    not judged: valgrind slows the loop, not the peer."""
    if patched.target != host_target() or runner.under_wine:
        return
    proc.step("regression programs under valgrind (%s)" % patched.target)
    label = "%s valgrind" % patched.target
    if patched.config in SANITIZED:
        tally.result("SKIP", label, "built with %s: valgrind cannot run it, "
                     "and the sanitizer checked the cases above"
                     % patched.config)
        return
    valgrind = shutil.which("valgrind")
    if not valgrind:
        tally.result("SKIP", label, "valgrind not installed "
                     "(apt-get install valgrind)")
        return
    for program in regress_programs(manifest.root):
        try:
            cases = list_cases(runner, patched, program)
        except UvPatchError as e:
            tally.result("FAIL", "%s %s" % (label, program), e.message)
            continue
        for case in cases:
            _memcheck_case(runner, valgrind, patched, program, case,
                           "%s %s/%s" % (label, program, case), tally)


def _memcheck_case(runner, valgrind, patched, program, case, name, tally):
    code, out, err = runner.run(
        valgrind, VALGRIND_ARGS + [patched.program(program), case],
        timeout=CASE_TIMEOUT * 3, env=TIMING_REPORT)
    timing = [ln.strip() for ln in err.splitlines()
              if ln.startswith("# timing:")]
    if code == 99 or code is None or code < 0:
        tally.result("FAIL", name, "%s; %s" % (_status_name(code),
                                               _one_line(err)[:300]))
        return
    result = _first_result(out)
    if result is None:
        verdict, why = "FAIL", "no result line (%s)" % _status_name(code)
    else:
        verdict, why = result
        if verdict == "PASS":
            why = "no invalid access, no leak"
        elif verdict == "FAIL":
            why = "fails under valgrind: " + why
    tally.result(verdict, name, why)
    for line in timing:
        tally.info(line.lstrip("# "))


def _libuv_tests(runner, variant):
    code, out, err = runner.run(variant.runner(), ["--list"],
                                cwd=variant.source)
    if code != 0:
        raise UvPatchError("libuv's runner --list failed (%s): %s"
                           % (_status_name(code), _one_line(err)),
                           status=EXIT_FAILURE)
    # Lines are "name" or "name   (helpers: ...)".
    return [ln.split()[0] for ln in out.splitlines() if ln.strip()]


def libuv_run(runner, variant, test):
    code, out, err = runner.run(variant.runner(), [test], cwd=variant.source,
                                timeout=LIBUV_TEST_TIMEOUT)
    text = out + err
    if code in (0, LIBUV_SKIP_STATUS):
        for line in text.splitlines():
            if "# SKIP" in line:
                why = line.split("# SKIP", 1)[1].strip()
                return "SKIP", why or "skipped by the test (no reason given)"
        if code == 0:
            return "PASS", ""
    return "FAIL", _status_name(code) + "; " + _one_line(text)[:200]


def thread_tests(source):
    """Names of libuv's tests in the files of test/ that call THREAD_CALLS.
    """
    names = set()
    for path in glob.glob(os.path.join(source, "test", "test-*.c")):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if any(call in text for call in THREAD_CALLS):
            names.update(re.findall(r"^TEST_IMPL\((\w+)\)", text, re.M))
    return names


def _untracked(tree):
    if not os.path.isdir(os.path.join(tree, ".git")):
        return set()
    res = proc.git(["ls-files", "--others", "-z", "--directory"], cwd=tree,
                   check=False)
    return set(p for p in res.stdout.split("\0") if p)


def run_libuv(patched, base, runner, tally, everything):
    """libuv's runner works in the source tree (its fixtures are there) and
    leaves files behind; they are removed again, so out/src stays as
    apply made it."""
    before = _untracked(patched.source)
    try:
        _run_libuv(patched, base, runner, tally, everything)
    finally:
        for path in _untracked(patched.source) - before:
            remove_tree(os.path.join(patched.source, path.rstrip("/")))


def _run_libuv(patched, base, runner, tally, everything):
    target = patched.target
    proc.step("libuv's suite (%s, %s)" % (
        target, "tests that use threads" if patched.config == "tsan"
        else "all" if everything else "selection"))
    tests = _libuv_tests(runner, patched)
    if not isinstance(base, Later):
        variant = base
        base = Later(lambda: variant)
    base_tests = Later(lambda: set(_libuv_tests(runner, base.get())))
    if patched.config == "tsan":
        threaded = thread_tests(patched.source)
        tests = [t for t in tests if t in threaded]
    elif not everything:
        tests = [t for t in tests if t.startswith(LIBUV_SELECTION)]
    if not runner.isolated:
        proc.note("no private network namespace here: tests that send "
                  "beyond loopback are skipped")
    for test in tests:
        name = "%s libuv %s" % (target, test)
        refused = runner.may_run(test)
        if refused:
            tally.result("SKIP", name, refused)
            continue
        status, why = libuv_run(runner, patched, test)
        if status != "FAIL":
            tally.result(status, name, why)
            continue
        if test not in base_tests.get():
            tally.result("FAIL", name, why + " (new test of the series)")
            continue
        base_status, base_why = libuv_run(runner, base.get(), test)
        if base_status == "FAIL":
            tally.result("SKIP", name, "fails on the unpatched base too: "
                         + base_why)
            continue
        # Only a test that passes on the base is worth the reruns.
        runs = 1
        again = status
        while again == "FAIL" and runs <= LIBUV_RERUNS:
            again, _ = libuv_run(runner, patched, test)
            runs += 1
        failed = runs - (again != "FAIL")
        if again != "FAIL":
            tally.result("SKIP", name, "flaky: failed %d of %d runs (%s), "
                         "then passed; passes on the base"
                         % (failed, runs, why))
        else:
            tally.result("FAIL", name, "%s (failed all %d runs; passes on "
                         "the base)" % (why, runs))


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


def targets_to_test(requested, config="Release"):
    host = host_target()
    if requested not in (None, "all"):
        return [requested], []
    targets, skipped = [host], []
    if host != "windows":
        why = windows_unavailable() or mingw_cannot_build(config)
        if why:
            skipped.append(("windows", why))
        else:
            targets.append("windows")
    return targets, skipped


def test(manifests, out_root, suite="regression", target=None,
         config="Release", source=None):
    """Tests each base of ``manifests`` (Manifest objects, the first one
    in full) in its folder of ``out_root``. Other bases, when tested
    beside it, run their regression programs, check and libuv's
    selection; a base whose source cannot be had is skipped with one
    line. Result names start with the base's name."""
    tally = Tally()
    # The tool's own tests do not depend on how libuv is built.
    if suite in ("regression", "all") and config == "Release":
        run_tool_tests(manifests[0].root, tally)
    for k, manifest in enumerate(manifests):
        tally.prefix = ""
        if k > 0:
            why = _unreachable(manifest, source)
            if why:
                tally.result("SKIP", "base " + manifest.name, why)
                continue
        tally.prefix = manifest.name + " "
        out = os.path.join(out_root, manifest.name)
        with Lock(out, "test"):
            if suite == "consumers":
                from .consumers import test_consumers
                test_consumers(manifest, out, tally, source=source,
                               full=k == 0)
                continue
            test_base(manifest, out, tally, suite=suite, target=target,
                      config=config, source=source, full=k == 0)
    tally.prefix = ""
    print(tally.summary(), flush=True)
    if tally.failed:
        raise UvPatchError("%d test(s) failed: %s"
                           % (tally.failed, ", ".join(tally.failures[:10])),
                           hint="run one case alone with -v to see its "
                                "command", status=EXIT_FAILURE)
    return tally


def _unreachable(manifest, source):
    """Why the tree of a base other than the first cannot be had, or
    None once it is in the cache."""
    from .fetch import Fetcher
    try:
        Fetcher(manifest).fetch(source)
    except UvPatchError as e:
        if e.status != EXIT_FETCH:
            raise
        return "%s: no source reachable (%s); set UVPATCH_SOURCE to a " \
               "bundle or mirror of upstream libuv" % (
                   manifest.upstream["tag"], e.message.splitlines()[-1]
                   .strip())
    return None


SANITIZERS = ("asan", "ubsan", "tsan")


class Later:
    """A value made on first use (a build that may not be needed)."""

    def __init__(self, make):
        self._make = make
        self._made = False
        self._value = None

    def get(self):
        if not self._made:
            self._value = self._make()
            self._made = True
        return self._value


def test_base(manifest, out, tally, suite="regression", target=None,
              config="Release", source=None, full=True):
    if suite in ("regression", "all"):
        proc.step("check (%s)" % manifest.name)
        check(manifest, out, tally.result)
    targets, skipped = targets_to_test(target, config)
    for name, why in skipped:
        tally.result("SKIP", name, why)
    # Under a sanitizer only the patched tree is judged: proofs are the
    # Release run's business, and the base is built only if a libuv test
    # fails and must be compared.
    sanitized = config in SANITIZERS
    for tgt in targets:
        runner = Runner(tgt)
        if sanitized:
            # A sanitized loop runs several times slower than the flood
            # that feeds it: its time bounds measure the instrument, as
            # under valgrind. They are printed, and judged in Release.
            runner.env.update(TIMING_REPORT)
        patched = build_variant(manifest, out, tgt, True, config, source)
        base = Later(lambda tgt=tgt: build_variant(
            manifest, out, tgt, False, config, source))
        if not sanitized:
            base.get()
        runner.start()
        try:
            if suite in ("regression", "all"):
                run_regress(manifest, patched,
                            None if sanitized else base.get(), runner, tally)
                if full:
                    run_memcheck(manifest, patched, runner, tally)
            if full or not runner.under_wine or suite != "regression":
                run_libuv(patched, base, runner, tally,
                          everything=suite in ("libuv", "all"))
            else:
                # Beside the default base, libuv's selection runs on the
                # host only; under Wine the regression programs do.
                proc.note("libuv's selection under Wine: default base only")
        finally:
            runner.stop()
    if full and suite in ("regression", "all") and target in (None, "all") \
            and config == "Release":
        # It asserts no figure: it proves the benchmark runs and its report
        # parses.
        from .bench import smoke
        smoke(manifest, out, tally, source=source)
        # named and kresd on both libraries; one SKIP line without them.
        from .dnsbench import smoke as dns_smoke
        dns_smoke(manifest, out, tally, source=source)
