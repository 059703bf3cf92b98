"""The regression programs of tests/regress: every case patched, and on
the base, where a proof case must fail; then each once more under
valgrind.
"""

import glob
import json
import os
import platform
import shutil
import time

from .. import console
from ..errors import UvPatchError, EXIT_FAILURE
from ..fsutil import write_atomic
from ..build.cmake import host_target
from ..series.manifest import TARGETS
from .runner import (CASE_TIMEOUT, TIMING_REPORT, _first_result, _one_line,
                     _status_name)

SANITIZED = ("asan", "ubsan", "tsan")


def regress_programs(root):
    """The programs of tests/regress, as tests/uv-programs.cmake builds
    them: each *.c file, and each folder holding *.c files."""
    folder = os.path.join(root, "tests", "regress")
    files = glob.glob(os.path.join(folder, "*.c"))
    folders = glob.glob(os.path.join(folder, "*", "*.c"))
    return sorted({os.path.splitext(os.path.basename(p))[0] for p in files} |
                  {os.path.basename(os.path.dirname(p)) for p in folders})


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
    why = "%s, no result line; %s" % (_status_name(code), _one_line(err)[:300])
    if runner.under_wine and code is not None and not err.strip():
        why += _wine_errors(runner, variant, program, case)
    return "FAIL", why


# Wine's errors on every channel; the runs show only one (runner.py),
# as some programs print harmless errors of the others in every run.
WINE_ERRORS = {"WINEDEBUG": "-all,err+all"}


def _wine_errors(runner, variant, program, case):
    """A case that left Wine without a word: what a second run, with
    Wine's errors shown, says. The first run's verdict stands."""
    code, out, err = runner.run(variant.program(program), [case],
                                env=WINE_ERRORS)
    result = _first_result(out)
    again = "no result line"
    if result:
        again = result[0] + (": " + result[1][:100] if result[1] else "")
    said = " | ".join(ln.strip() for ln in err.splitlines()[-3:]
                      if ln.strip())
    return "run again with WINEDEBUG=%s: %s, %s%s" % (
        WINE_ERRORS["WINEDEBUG"], _status_name(code), again,
        "; " + said[:300] if said else "")


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


def proved_elsewhere(manifest, target):
    """{program/case: patch file} of the proofs on the other targets."""
    return {case: patch for other in TARGETS if other != target
            for case, (patch, _) in proofs_for(manifest, other).items()}


def run_regress(manifest, patched, base, runner, tally):
    target = patched.target
    threads_only = patched.config == "tsan"
    console.step("regression programs (%s%s)" % (
           target, ", the cases that start threads" if threads_only else ""))
    proofs = proofs_for(manifest, target)
    elsewhere = proved_elsewhere(manifest, target)
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
            judge_base(tally, runner, target, name, proofs, base_status,
                       base_why, elsewhere, status)
    if base is None:
        console.note("proofs are judged by the Release run, not under %s"
                     % patched.config)
        return
    if not threads_only:
        save_results(patched, manifest, results)
    for name in sorted(set(proofs) - found):
        if threads_only:
            continue  # Proof cases are judged by the other configs.
        tally.result("FAIL", "%s proof %s" % (target, name),
                     "deps.json names a case that does not exist")


def judge_base(tally, runner, target, name, proofs, base_status, base_why,
               elsewhere, status):
    """A proof case's line: PASS only when the base fails it; any other
    case's base result is an information line, which says so when a
    proof on another target (``elsewhere``) shows its defect here too."""
    if name in proofs:
        patch, native_only = proofs[name]
        label = "%s proof %s (%s)" % (target, name, patch)
        if native_only and runner.under_wine:
            tally.result("SKIP", label, "under Wine the base already "
                         "behaves; the proof runs on real Windows "
                         "(.github/workflows/uvpatch.yml)")
        elif base_status == "FAIL":
            tally.result("PASS", label, "fails on the unpatched base: "
                         + base_why)
        else:
            tally.result("FAIL", label, "the unpatched base gives %s, so "
                         "the test cannot show the defect" % base_status)
    else:
        tally.info("base: %s %s%s" % (base_status.lower(), name,
                                      ": " + base_why if base_why else ""))
        patch = elsewhere.get(name)
        if patch and status == "PASS" and base_status == "FAIL":
            tally.info("%s shows the defect on %s too: list %s in the "
                       "proof of %s" % (name, target, target, patch))


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
    console.step("regression programs under valgrind (%s)" % patched.target)
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
