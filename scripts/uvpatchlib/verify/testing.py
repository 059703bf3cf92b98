"""The test command: the tool's unit tests, the regression programs
(patched, and the proofs on the base: regress.py), and libuv's own suite
(libuvsuite.py).

Every result is one line on stdout: ``PASS name``, ``FAIL name: why`` or
``SKIP name: why``; the run ends with ``N passed, N failed, N skipped``.
"""

import os
import subprocess
import sys
import tempfile

from .. import console
from ..errors import UvPatchError, EXIT_FAILURE, EXIT_FETCH, EXIT_USAGE
from ..fsutil import Lock
from ..series.check import check
from ..build.cmake import build_variant, host_target, mingw_cannot_build
from .libuvsuite import Later, run_libuv
from .regress import run_memcheck, run_regress
from .single import parse_only, run_only
from .runner import (TIMING_REPORT, Runner, Tally, _report_lines,
                     windows_unavailable)


def run_tool_tests(root, tally, shards=2):
    """The tool's unittest suite, in ``shards`` processes at once: its tests
    mostly wait on git and subprocesses."""
    console.step("tool unit tests")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(root, "scripts")
    seen = 0
    with tempfile.TemporaryDirectory(prefix="uvpatch-toolsuite-") as tmp:
        # Files, not pipes: no child blocks while another is read.
        children = []
        for k in range(shards):
            out = open(os.path.join(tmp, "%d.out" % k), "w+",
                       encoding="utf-8")
            err = open(os.path.join(tmp, "%d.err" % k), "w+",
                       encoding="utf-8")
            children.append((subprocess.Popen(
                [sys.executable, "-m", "uvpatchlib.verify.toolsuite",
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
         config="Release", source=None, consumers=None, extras=(),
         only=None, debian=None):
    """Tests each base of ``manifests`` (Manifest objects, the first one
    in full) in its folder of ``out_root``. Other bases, when tested
    beside it, run their regression programs, check and libuv's
    selection; a base whose source cannot be had is skipped with one
    line. Result names start with the base's name.

    The suites built on this runner come from the caller, so it imports
    none of them: ``consumers(manifest, out, tally, source, full)`` is
    --suite consumers, ``debian(manifest, out, tally, source)`` --suite
    debian, and each of ``extras(manifest, out, tally,
    source)`` runs after the full Release run of the default base.

    ``only`` ("PROGRAM" or "PROGRAM/CASE") runs that regression program
    or case alone, patched and on the base, on every target, with the
    commands it ran (single.py); nothing else runs."""
    tally = Tally()
    if only is not None:
        if suite != "regression":
            raise UvPatchError("--case runs regression cases only, not "
                               "--suite %s" % suite,
                               hint="drop --suite or --case",
                               status=EXIT_USAGE)
        only = parse_only(manifests[0].root, only)
    # The tool's own tests do not depend on how libuv is built.
    elif suite in ("regression", "all") and config == "Release":
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
                consumers(manifest, out, tally, source=source, full=k == 0)
                continue
            if only is not None:
                test_only(manifest, out, tally, only, target=target,
                          config=config, source=source)
                continue
            if suite == "debian":
                debian(manifest, out, tally, source=source)
                continue
            test_base(manifest, out, tally, suite=suite, target=target,
                      config=config, source=source, full=k == 0,
                      extras=extras)
    tally.prefix = ""
    if tally.failed:
        print(tally.recap(), flush=True)
    print(tally.summary(), flush=True)
    if tally.failed:
        raise UvPatchError("%d test(s) failed: %s"
                           % (tally.failed, ", ".join(tally.failures[:10])),
                           hint="run one again alone, with its commands: "
                                "`scripts/uvpatch test --base NAME --case "
                                "PROGRAM/CASE`", status=EXIT_FAILURE)
    return tally


def _unreachable(manifest, source):
    """Why the tree of a base other than the first cannot be had, or
    None once it is in the cache."""
    from ..source.fetch import Fetcher
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


def test_only(manifest, out, tally, only, target=None, config="Release",
              source=None):
    """One program or case (``only``: (program, case or None)), patched
    and on the base, on each target."""
    targets, skipped = targets_to_test(target, config)
    for name, why in skipped:
        tally.result("SKIP", name, why)
    for tgt in targets:
        runner = Runner(tgt)
        if config in SANITIZERS:
            runner.env.update(TIMING_REPORT)
        patched = build_variant(manifest, out, tgt, True, config, source)
        base = build_variant(manifest, out, tgt, False, config, source)
        runner.start()
        try:
            run_only(manifest, patched, base, runner, tally, *only)
        finally:
            runner.stop()


def test_base(manifest, out, tally, suite="regression", target=None,
              config="Release", source=None, full=True, extras=()):
    if suite in ("regression", "all"):
        console.step("check (%s)" % manifest.name)
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
                console.note("libuv's selection under Wine: default base only")
        finally:
            runner.stop()
    if full and suite in ("regression", "all") and target in (None, "all") \
            and config == "Release":
        # What cli passes in: the bench's smoke check, which this runner
        # cannot import (the bench stage is built on it).
        for extra in extras:
            extra(manifest, out, tally, source=source)
