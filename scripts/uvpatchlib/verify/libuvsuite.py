"""libuv's own suite, run patched: a test that fails is judged against
the base (a failure there too is skipped, one that passes there is
rerun before it counts as failed).
"""

import glob
import os
import re

from .. import console, subproc
from . import libuvrecord
from ..errors import UvPatchError, EXIT_FAILURE
from ..fsutil import remove_tree
from .runner import _one_line, _status_name

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
    res = subproc.git(["ls-files", "--others", "-z", "--directory"], cwd=tree,
                      check=False)
    return set(p for p in res.stdout.split("\0") if p)


def run_libuv(patched, base, runner, tally, everything):
    """libuv's runner works in the source tree (its fixtures are there) and
    leaves files behind; they are removed again, so out/<base>/src stays as
    apply made it. A run of the selection is recorded; a run of all of
    the suite leaves out the tests that the record shows passed or
    skipped on this same build (libuvrecord.py), and says so."""
    done = libuvrecord.load(patched, runner) if everything else {}
    before = _untracked(patched.source)
    try:
        results = _run_libuv(patched, base, runner, tally, everything,
                             done=done)
    finally:
        for path in _untracked(patched.source) - before:
            remove_tree(os.path.join(patched.source, path.rstrip("/")))
    if not everything:
        libuvrecord.save(patched, runner, results)


def _run_libuv(patched, base, runner, tally, everything, done=None):
    """Runs the tests and returns [(test, status, why)]; those of ``done``
    ({test: (status, why)}, results of an earlier run on this build) are
    counted there and not here."""
    target = patched.target
    console.step("libuv's suite (%s, %s)" % (
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
    if done:
        reused = [t for t in tests if t in done]
        tests = [t for t in tests if t not in done]
        passed = sum(done[t][0] == "PASS" for t in reused)
        console.note("%d of libuv's tests (%d passed, %d skipped) ran in "
                     "`scripts/uvpatch test` on this same build: counted "
                     "there, not run again (%s; remove it to rerun them)"
                     % (len(reused), passed, len(reused) - passed,
                        console.shown(libuvrecord.record_path(patched))))
    if not runner.isolated:
        console.note("no private network namespace here: tests that send "
                     "beyond loopback are skipped")
    results = []

    def report(status, test, why):
        tally.result(status, "%s libuv %s" % (target, test), why)
        results.append((test, status, why))

    for test in tests:
        refused = runner.may_run(test)
        if refused:
            report("SKIP", test, refused)
            continue
        status, why = libuv_run(runner, patched, test)
        if status != "FAIL":
            report(status, test, why)
            continue
        if test not in base_tests.get():
            report("FAIL", test, why + " (new test of the series)")
            continue
        base_status, base_why = libuv_run(runner, base.get(), test)
        if base_status == "FAIL":
            report("SKIP", test, "fails on the unpatched base too: "
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
            report("SKIP", test, "flaky: failed %d of %d runs (%s), "
                   "then passed; passes on the base"
                   % (failed, runs, why))
            continue
        # A failure the base shows too, given as many runs, is the
        # machine's (a slow test under load), not the series'.
        base_runs = 1
        while base_status != "FAIL" and base_runs < runs:
            base_status, base_why = libuv_run(runner, base.get(), test)
            base_runs += 1
        if base_status == "FAIL":
            report("SKIP", test, "fails on the unpatched base too, at its "
                   "run %d of up to %d: %s (patched: failed all %d runs, %s)"
                   % (base_runs, runs, base_why, runs, why))
        else:
            report("FAIL", test, "%s (failed all %d runs; passes on "
                   "the base, %d runs)" % (why, runs, base_runs))
    return results


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
