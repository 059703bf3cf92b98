"""check --bisect: every prefix of the series builds and passes its tests.

The kernel's rule: a series is bisectable only if the tree builds and its
tests pass after each patch. For each prefix 0001..k this builds the tree
(for the host), then runs the regression programs of the patches in the
prefix that apply to the host, and the libuv tests those patches add.
"""

import os
import re

from .. import console, subproc
from ..fsutil import remove_tree, sha256_file
from ..series.apply import apply_series, read_state
from ..build.cmake import Variant, build_tree, check_target, host_target
from .libuvsuite import libuv_run
from .regress import list_cases, run_case
from .runner import Runner

# Which series platforms a host target exercises.
_COVERS = {"linux": {"unix", "linux"}, "macos": {"unix", "macos"},
           "windows": {"windows"}}
_DECLARE = re.compile(r"^\+TEST_DECLARE\s*\(\s*(\w+)\s*\)", re.M)


def _added_libuv_tests(src, commit):
    diff = subproc.git_out(["show", "--format=", commit, "--",
                            "test/test-list.h"], cwd=src)
    return _DECLARE.findall(diff)


def checkout_prefix(src, commit, dest):
    """Makes ``dest`` hold ``commit``, rewriting only the files that differ
    from the prefix before, so one build folder rebuilds only what the
    next patch touches."""
    index = os.path.abspath(dest + ".index")
    env = {"GIT_INDEX_FILE": index, "GIT_WORK_TREE": os.path.abspath(dest)}
    os.makedirs(dest, exist_ok=True)
    if os.path.lexists(index + ".lock"):    # a killed run's
        os.unlink(index + ".lock")
    if not os.path.exists(index):
        remove_tree(dest)
        os.makedirs(dest)
    subproc.git(["read-tree", "--reset", "-u", commit], cwd=src, env=env)


def bisect(manifest, out, report, config="Release"):
    """Calls ``report(status, name, why)`` per prefix; returns failures."""
    target = check_target(None, config)
    src = apply_series(manifest, out)
    applied = read_state(src)["patches"]
    runner = Runner(target)
    failures = 0
    libuv_tests = []
    # {(program, case): the program's digest when the case passed}: a patch
    # that leaves a program's bytes as they were (it changes only another
    # platform's code, or libuv's own tests) cannot change its cases.
    passed = {}
    for k, (entry, state) in enumerate(zip(manifest.series, applied), 1):
        label = "bisect %s" % entry["file"]
        dest = os.path.join(out, "bisect", "tree")
        checkout_prefix(src, state["commit"], dest)
        variant = Variant(manifest.root, out, target, True, config,
                          source=dest, label="bisect",
                          applied=[e["file"] for e in manifest.series[:k]])
        try:
            build_tree(variant)
        except Exception as e:  # noqa: BLE001 - reported, then next prefix
            report("FAIL", label, "does not build: %s"
                   % getattr(e, "message", e))
            failures += 1
            continue
        libuv_tests += _added_libuv_tests(src, state["commit"])
        # A later patch's proofs fail before it, by design, and so do the
        # cases it repairs after an earlier patch broke them.
        later = {case for e in manifest.series[k:]
                 for proof in e.get("proof", []) for case in proof["cases"]}
        later.update(case for e in manifest.series[k:]
                     for case in e.get("repairs", []))
        bad, ran = [], 0
        # Several patches name the same program: it runs once a prefix.
        programs = []
        for prior in manifest.series[:k]:
            if not set(prior["platforms"]) & _COVERS.get(target, set()):
                continue
            programs += [p for p in prior.get("tests", [])
                         if p not in programs]
        reused = 0
        for program in programs:
            digest = sha256_file(variant.program(program))
            for case in list_cases(runner, variant, program):
                if "%s/%s" % (program, case) in later:
                    continue
                if passed.get((program, case)) == digest:
                    reused += 1
                    continue
                status, why = run_case(runner, variant, program, case)
                ran += 1
                if status == "FAIL":
                    bad.append("%s/%s: %s" % (program, case, why))
                else:
                    passed[(program, case)] = digest
        for test in libuv_tests:
            status, why = libuv_run(runner, variant, test)
            ran += 1
            if status == "FAIL":
                bad.append("libuv %s: %s" % (test, why))
        if bad:
            failures += 1
            report("FAIL", label, "; ".join(bad)[:600])
        else:
            report("PASS", label, "builds for %s; %d tests of the prefix "
                   "pass or skip%s" % (
                       target, ran + reused,
                       "" if not reused else " (%d of them on programs "
                       "that passed them unchanged before this patch)"
                       % reused))
    if target != host_target():
        console.note("bisect ran for %s" % target)
    return failures
