"""upstream --check: each pull-request branch built on its own and tested
where its code runs.

A branch that changes Unix code (or only code all platforms share) is
built natively and runs libuv's UDP tests and its own tests; one that
changes Windows code is cross-built with mingw-w64 and runs its own
tests and the Windows proof cases of its patches (the poll timer's
model) under Wine. UDP tests never touch src/win, so they are not run
for it.

A change's own tests run on the branch and on the base with only the
branch's test changes: that is what they show without the fix. One
source tree and one build folder per target serve every branch and both
sides, moved from one to the next by git checkout: the base is built
once, and each step rebuilds only the files that differ (a few sources,
not libuv's 200 test files).
"""

import glob
import os
import platform
import re
import subprocess
import time

from .. import console, subproc
from ..errors import UvPatchError
from ..fsutil import remove_tree, scratch_index
from ..build import cmake
from ..build.cmake import Variant, build_tree, host_target
from ..verify.libuvsuite import _libuv_tests, libuv_run
from ..verify.regress import run_case
from ..verify.runner import Runner, windows_unavailable
from .prtext import test_part

# libuv's tests that every branch of Unix code must pass.
CHECK_TESTS = "udp_"
WINDOWS_CODE = ("src/win/", "include/uv/win.h")
UNIX_CODE = ("src/unix/", "include/uv/")


class Branch:
    """What --check needs of one branch: ``name`` (for the report),
    ``commit``, ``files`` it changes against the base, ``tests`` (its own
    libuv tests), ``platforms`` (declared in deps.json), ``proofs``
    [(target, "program/case")] of its patches. It collects ``results``
    (blocks for the pull-request text) and ``failures``."""

    def __init__(self, name, commit, files, tests, platforms, proofs):
        self.name = name
        self.commit = commit
        self.files = list(files)
        self.tests = list(tests)
        self.platforms = set(platforms)
        self.proofs = list(proofs)
        self.results = []
        self.failures = []


def targets_of(files, platforms, host):
    """Where a branch's code runs: the host for Unix code, "windows" for
    Windows code; the host too for code all platforms share, tests or
    build files alone. A shared header changed beside src/win (a field
    under _WIN32) does not make it a Unix change."""
    windows = "windows" in platforms or any(
        f.startswith(WINDOWS_CODE) for f in files)
    unix = bool(platforms - {"windows"}) or any(
        f.startswith(UNIX_CODE) and not f.startswith(WINDOWS_CODE)
        for f in files)
    return ([host] if unix or not windows else []) + \
        (["windows"] if windows else [])


class Tree:
    """The source tree under out/<base>/pr-check/ that follows the
    branches by git checkout: files that do not change keep their times,
    so ninja rebuilds only what differs."""

    def __init__(self, path, repo):
        self.path = path
        if not os.path.isdir(os.path.join(path, ".git")):
            remove_tree(path)
            os.makedirs(path)
            subproc.git(["init", "-q"], cwd=path)
        subproc.git(["fetch", "-q", "--no-tags", "--update-shallow", "--force",
                     "--", repo, "+refs/heads/*:refs/remotes/prs/*"], cwd=path)

    def checkout(self, commit):
        subproc.git(["checkout", "-q", "-f", "--detach", commit],
                    cwd=self.path)
        # What libuv's tests leave behind; the builds are elsewhere.
        subproc.git(["clean", "-q", "-f", "-d", "-x"], cwd=self.path)

    def tests_only(self, base, commit):
        """(a commit of ``base`` with only the test part of base..commit,
        None) or (None, why it cannot be made)."""
        diff = subproc.git(["diff", "-U1", "--no-color", "--no-renames",
                            base, commit], cwd=self.path).stdout
        part = test_part(diff)
        if not part:
            return base, None
        index = scratch_index(os.path.join(self.path, ".git",
                                           "tests-only.index"))
        env = {"GIT_INDEX_FILE": index}
        try:
            subproc.git(["read-tree", base], cwd=self.path, env=env)
            res = subproc.git(["apply", "--cached", "-"], cwd=self.path,
                              env=env, input=part, check=False)
            if res.returncode != 0:
                return None, "its test changes do not apply on the base " \
                    "alone: " + (res.stderr.strip().splitlines() or [""])[0]
            tree = subproc.git_out(["write-tree"], cwd=self.path, env=env)
        finally:
            if os.path.exists(index):
                os.unlink(index)
        return subproc.git_out(["commit-tree", tree, "-p", base, "-m",
                                "tests only"], cwd=self.path), None


def _first_error(e):
    lines = [ln.strip() for ln in e.message.splitlines()
             if "error" in ln.lower() and ln.strip()]
    return (lines[1:2] or lines[:1] or [e.message.splitlines()[0]])[0][:300]


def _compiler(variant):
    """The first line of ``--version`` of the C compiler CMake found (a
    toolchain file's compiler is not in CMakeCache.txt)."""
    found = glob.glob(os.path.join(variant.libuv_dir, "CMakeFiles", "*",
                                   "CMakeCCompiler.cmake"))
    try:
        with open(found[0], encoding="utf-8", errors="replace") as f:
            m = re.search(r'^set\(CMAKE_C_COMPILER "([^"]+)"\)', f.read(),
                          re.M)
        out = subprocess.run([m.group(1), "--version"],
                             stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout
        return out.splitlines()[0].strip()
    except (OSError, IndexError, AttributeError):
        return "the C compiler CMake found"


def _wine_version(runner):
    try:
        return subprocess.run([runner.wine, "--version"],
                              stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True,
                              env=runner.env).stdout.strip()
    except OSError:
        return "Wine"


class Checker:
    """Builds and runs the branches of one target, in order."""

    def __init__(self, manifest, out, repo, base, target, report):
        self.manifest = manifest
        self.out = out
        self.base = base
        self.target = target
        self.report = report
        self.tree = Tree(os.path.join(out, "pr-check", "tree"), repo)
        self.variant = Variant(manifest.root, out, target, True, "Release",
                               source=self.tree.path, label="pr")
        # The tree's forms first: out/ holds it.
        self.places = cmake.shown_prefixes(self.variant) + [
            os.path.realpath(out) + os.sep]
        self.runner = Runner(target)

    def _clean(self, text):
        # libuv's assertions print __FILE__, a path on this machine.
        for place in self.places:
            text = text.replace(place, "")
        return text

    def _build(self, commit, programs=()):
        """Builds libuv and its test runner at ``commit``, and of
        tests/regress only ``programs``: the rest is not run here."""
        self.tree.checkout(commit)
        variant = self.variant
        build_tree(variant, libuv_only=True)
        if not programs:
            return variant
        # tests/regress reads src/win/winapi.c when it is configured
        # (does the tree have the wait packets?), which ninja does not
        # watch: without its build.ninja it is configured again.
        stale = os.path.join(variant.regress_dir, "build.ninja")
        if os.path.exists(stale):
            os.unlink(stale)
        # As build_tree configures it, without building every program.
        cmake._configure(
            os.path.join(variant.root, "tests", "regress"),
            variant.regress_dir, cmake._common_args(variant) + [
                "-DUV_SOURCE_DIR=" + os.path.abspath(variant.source),
                "-DUV_LIBRARY=" + os.path.abspath(variant.library())]
            + cmake.series_args(variant))
        cmake._ninja(variant.regress_dir, sorted(programs))
        return variant

    def _run(self, variant, tests, listed, rerun):
        rows = []
        for test in tests:
            if test not in listed:
                rows.append(("SKIP", "not built for %s" % self.target))
                continue
            status, why = libuv_run(self.runner, variant, test)
            if status == "FAIL" and rerun:
                again, _ = libuv_run(self.runner, variant, test)
                if again != "FAIL":
                    status, why = again, "failed once (%s), then passed" % why
            rows.append((status, self._clean(why)))
        return rows

    def check(self, branches):
        """Every branch patched, then every one unpatched: the sources a
        patch changes (a header all of libuv includes) flip twice in all,
        not twice per branch."""
        states = [(b, self._patched(b)) for b in branches]
        for branch, state in states:
            if state is not None:
                self._unpatched(branch, state)
                self._finish(branch, state)

    def _patched(self, branch):
        """Builds and runs the branch; None when it does not build."""
        state = {"started": time.time(), "notes": [], "bad": [],
                 "programs": {p.split("/", 1)[0] for p in branch.proofs}
                 if self.target == "windows" else set()}
        try:
            patched = self._build(branch.commit, state["programs"])
        except UvPatchError as e:
            branch.failures.append("%s: does not build" % self.target)
            self.report("FAIL", "upstream %s %s" % (branch.name, self.target),
                        "does not build on its own: "
                        + self._clean(_first_error(e)))
            return None
        state["compiler"] = _compiler(patched)
        listed = set(_libuv_tests(self.runner, patched))
        state["after"] = self._run(patched, branch.tests, listed, rerun=True)
        state["bad"] += ["%s: its test %s fails: %s" % (self.target, name,
                                                        why)
                         for name, (status, why) in zip(branch.tests,
                                                        state["after"])
                         if status == "FAIL"]
        if self.target == "windows":
            state["proofs"] = [run_case(self.runner, patched,
                                        *name.split("/", 1))
                               for name in branch.proofs]
        else:
            summary, state["extra"], more = self._udp(patched, listed)
            state["notes"].append(summary)
            state["bad"] += more
        state["elapsed"] = time.time() - state["started"]
        return state

    def _unpatched(self, branch, state):
        """The same tree and build, on the base with only the branch's
        tests."""
        started = time.time()
        state["before"], state["note"], unpatched = None, None, None
        commit, why = self.tree.tests_only(self.base, branch.commit)
        if commit is None:
            state["note"] = why
        else:
            try:
                unpatched = self._build(commit, state["programs"])
                state["before"] = self._run(unpatched, branch.tests, set(
                    _libuv_tests(self.runner, unpatched)), rerun=False)
            except UvPatchError as e:
                state["note"] = "they do not build there: " + self._clean(
                    _first_error(e))
        if self.target == "windows":
            state["extra"], more = self._proofs(branch, state["proofs"],
                                                unpatched)
            state["bad"] += more
        state["elapsed"] += time.time() - started

    def _finish(self, branch, state):
        after, before, note = state["after"], state["before"], state["note"]
        block = self._block(branch, state["compiler"], after, before, note)
        block["notes"] += state["notes"]
        branch.results.append(block)
        branch.failures.extend(state["bad"])
        self.report("FAIL" if state["bad"] else "PASS",
                    "upstream %s %s" % (branch.name, self.target),
                    "%s; %s (%d s)" % (self._said(branch, after, before,
                                                  note),
                                       state["extra"], state["elapsed"]))

    def _said(self, branch, after, before, note):
        if not branch.tests:
            return "builds alone; it has no test of its own"
        counts = {}
        for status, _ in after:
            counts[status] = counts.get(status, 0) + 1
        text = "builds alone; its %d test(s): %s" % (len(after), ", ".join(
            "%d %s" % (n, s.lower()) for s, n in sorted(counts.items())))
        if before is None:
            return text + " (unpatched: %s)" % note
        fails = sum(1 for s, _ in before if s == "FAIL")
        return text + " (unpatched: %d fail)" % fails

    def _udp(self, patched, listed):
        """(a note for the text, a line for the report, failures)."""
        tests = sorted(t for t in listed if t.startswith(CHECK_TESTS))
        rows = self._run(patched, tests, listed, rerun=True)
        failed = ["%s (%s)" % (t, why) for t, (s, why) in zip(tests, rows)
                  if s == "FAIL"]
        skipped = sum(1 for s, _ in rows if s == "SKIP")
        passed = len(tests) - skipped - len(failed)
        summary = "libuv's UDP tests on the branch: %d pass, %d skip " \
                  "themselves, %d fail." % (passed, skipped, len(failed))
        if failed:
            return summary, "%d of %d UDP tests fail: %s" % (
                len(failed), len(tests), "; ".join(failed)[:400]), \
                ["UDP tests fail"]
        return summary, "%d UDP tests pass, %d skip themselves" % (
            passed, skipped), []

    def _proofs(self, branch, after_results, unpatched):
        """The Windows proof cases of the branch's patches (the series'
        regression programs, not part of the change): they pass on the
        branch and fail on the unpatched tree. (a line for the report,
        failures)"""
        if not branch.proofs:
            return "no Windows proof case in deps.json to run", []
        lines, bad = [], []
        for name, (after, why) in zip(branch.proofs, after_results):
            if unpatched is None:
                before, bwhy = "not run", ""
            else:
                before, bwhy = run_case(self.runner, unpatched,
                                        *name.split("/", 1))
            if after != "PASS":
                bad.append("%s: %s on the branch: %s" % (name, after.lower(),
                                                          why))
            if before != "FAIL":
                bad.append("%s does not fail on the unpatched tree" % name)
            lines.append("model %s %s (unpatched: %s%s)" % (
                name, "passes" if after == "PASS" else after.lower() + ": "
                + why, before.lower(), ": " + bwhy[:160] if bwhy else ""))
        return "; ".join(lines), bad

    def _block(self, branch, compiler, after, before, note):
        uname = platform.uname()
        machine = "%s %s %s (`uname -srm`)" % (uname.system, uname.release,
                                               uname.machine)
        if self.target == "windows":
            where = "under %s on %s, cross-built with %s (not run on " \
                    "Windows itself)" % (_wine_version(self.runner),
                                         machine, compiler)
        else:
            where = "on %s, %s" % (machine, compiler)
        title = "Run %s %s, Release build. Unpatched: %s with only the " \
                "test changes of this branch." % (
                    time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    where, self.base[:12])
        rows = [(name, before[k] if before else ("not run", ""), after[k])
                for k, name in enumerate(branch.tests)]
        notes = ["On the unpatched tree the tests were not run: %s." % note]\
            if note else []
        return {"title": title, "columns": ("unpatched %s" % self.base[:12],
                                            "with the change"),
                "rows": rows, "notes": notes}


def verify(manifest, out, repo, base, branches, report):
    """Checks each Branch where its code runs (see the module's
    docstring); calls ``report(status, name, why)`` per branch and
    target; returns how many branches failed."""
    host = host_target()
    for target in (host, "windows"):
        mine = [b for b in branches
                if target in targets_of(b.files, b.platforms, host)]
        if not mine:
            continue
        why = windows_unavailable() if target == "windows" else None
        if why:
            for b in mine:
                report("SKIP", "upstream %s windows" % b.name, why)
                b.results.append({"title": "Not run under Windows here: "
                                  "%s." % why, "columns": ("", ""),
                                  "rows": [], "notes": []})
            continue
        console.step("upstream --check (%s)" % target)
        checker = Checker(manifest, out, repo, base, target, report)
        checker.runner.start()
        try:
            checker.check(mine)
        finally:
            checker.runner.stop()
    return sum(1 for b in branches if b.failures)
