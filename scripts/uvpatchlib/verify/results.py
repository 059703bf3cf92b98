"""results: docs/results.md regenerated from what `scripts/uvpatch test`
recorded in out/<base>/results/, so that no figure in it is typed by hand.
"""

import json
import os
import re

from .. import console, subproc
from ..errors import UvPatchError, EXIT_FAILURE, EXIT_STATE
from ..fsutil import write_atomic
from .regress import results_path

TARGET, CONFIG = "linux", "Release"
MISSING = "—"
FIRST_LINE = ("_Written by `scripts/uvpatch results` from what "
              "`scripts/uvpatch test` recorded: do not edit it by hand, "
              "run the command again._")
VERDICTS = {"PASS": "ok", "FAIL": "not ok", "SKIP": "skip"}
_KV = re.compile(r"([\w/]+)=(\S+)")


def load_record(path):
    """The record at ``path`` ({"base", "commit", "cases", ...}), or None
    when the test command has written none there."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        return None
    except (ValueError, UnicodeDecodeError) as e:
        raise UvPatchError("%s: not a results file: %s" % (console.shown(path),
                                                           e),
                           hint="remove it and run `scripts/uvpatch test` "
                                "on that base again", status=EXIT_FAILURE)
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), dict):
        raise UvPatchError("%s: no \"cases\" object" % console.shown(path),
                           hint="remove it and run `scripts/uvpatch test` "
                                "on that base again", status=EXIT_FAILURE)
    return doc


def kv_figures(notes):
    """{key: value} of the last note line made of ``key=value`` words."""
    for line in reversed(notes or []):
        found = dict(_KV.findall(line))
        if found:
            return found
    return {}


def json_figures(notes):
    """The last note line that is a JSON object (udp_paths prints one)."""
    for line in reversed(notes or []):
        if line.startswith("{"):
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if isinstance(doc, dict):
                return doc
    return {}


def _num(value):
    return "%g" % value if isinstance(value, float) else str(value)


def _slashed(fig, keys):
    shown = [_num(fig[k]) if k in fig else "?" for k in keys]
    return "/".join(shown) if any(k in fig for k in keys) else ""


def matrix_figures(notes):
    return _slashed(kv_figures(notes), ("iterations", "reports",
                                        "plain_errors", "datagrams",
                                        "max/iter"))


def errqueue_figures(notes):
    fig = kv_figures(notes)
    keys = ("reports", "plain_errors", "alloc") + (
        ("errqueue_reads",) if "errqueue_reads" in fig else ())
    return _slashed(fig, keys)


def paths_figures(notes):
    fig = json_figures(notes)
    text = _slashed(fig, ("reports", "plain_errors", "errqueue_reads",
                          "allocs"))
    if "latency_median_us" in fig:
        text += ", %.2f ms" % (fig["latency_median_us"] / 1000.0)
    if "lost" in fig:
        text += ", lost %s" % _num(fig["lost"])
    if "socket_calls" in fig:
        text += ", %s socket calls" % _num(fig["socket_calls"])
    return text


# What timer_model prints, as (regex, how the cell shows it).
_MODEL = (
    (re.compile(r"\bmedian=([\d.]+)"), "median %s ms"),
    (re.compile(r"per armed poll[= ]([\d.]+)"), "%s calls per armed poll"),
    (re.compile(r"spurious wake-ups=(\d+)"), "%s spurious wake-ups"),
    (re.compile(r"(\d+ of \d+) UV_RUN_ONCE runs without the timer,"),
     "%s UV_RUN_ONCE runs without the timer"),
    (re.compile(r"(\d+ of \d+) UV_RUN_ONCE runs without the timer "
                r"returned"), "%s UV_RUN_ONCE runs returned with nothing done"),
)


def model_figures(notes):
    """The figures timer_model's notes give, in the order of _MODEL."""
    found = []
    for pattern, shown in _MODEL:
        for line in notes or []:
            m = pattern.search(line)
            if m:
                found.append(shown % m.group(1))
                break
    return ", ".join(found)


# program: (title, what the figures are, how they are picked from notes)
PROGRAMS = {
    "udp_matrix": (
        "The error-queue case matrix",
        "loop iterations / reports / plain errors / datagrams read / most "
        "callbacks in one iteration", matrix_figures),
    "udp_paths": (
        "The receive paths",
        "reports / plain errors / error-queue reads / alloc_cb calls, then "
        "the median probe latency, the datagrams lost and the calls on the "
        "socket (reads, poll(), getsockopt(SO_ERROR)) where the case "
        "measures them", paths_figures),
    "udp_errqueue": (
        "The error-queue reports",
        "reports / plain errors / alloc_cb calls / error-queue reads",
        errqueue_figures),
}


def cell(case, side, figures=None):
    """A verdict ("ok", "not ok", "skip"), with the figures when given;
    MISSING without a record of the case."""
    if case is None:
        return MISSING
    status = case.get(side)
    text = VERDICTS.get(status, str(status).lower())
    if figures:
        fig = figures(case.get(side + "_notes"))
        if fig:
            text += " " + fig
    return text


def linux_proofs(base):
    """The distinct proof cases of a base (a case may prove two patches)."""
    found = []
    for entry in base["series"]:
        for proof in entry.get("proof", []):
            if proof["target"] == TARGET:
                found += [c for c in proof["cases"] if c not in found]
    return found


def _table(head, rows):
    lines = ["| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines + [""]


def _case_names(records, program=None):
    names = []
    for rec in records:
        for name in (rec or {}).get("cases", {}):
            prog = name.split("/")[0]
            wanted = prog == program if program else prog not in PROGRAMS
            if wanted and name not in names:
                names.append(name)
    return names


def render(bases, records, checkout, windows=None):
    """The Markdown of docs/results.md: ``bases`` deps.json's base objects,
    ``records`` each one's record or None, ``checkout`` uvpatch's commit,
    ``windows`` each base's Windows record or None (Wine, timer_model)."""
    names = [b["name"] for b in bases]
    out = [FIRST_LINE, "", "# What each base shows, patched vs base", "",
           "What `scripts/uvpatch test` recorded in "
           "`out/<base>/results/regress-%s-%s.json`, base by base as in "
           "deps.json. Each `proof` case must fail on its base's unpatched "
           "tree." % (TARGET, CONFIG), "",
           "## Where the figures come from", ""]
    rows = []
    for base, rec in zip(bases, records):
        if rec is None:
            rows.append([base["name"]] + [MISSING] * 4)
            continue
        commit = str(rec.get("commit", ""))[:12] or MISSING
        if rec.get("commit") != base["upstream"]["commit"]:
            commit += " (deps.json now pins %s)" % \
                base["upstream"]["commit"][:12]
        rows.append([base["name"], commit, rec.get("when", MISSING),
                     rec.get("machine", MISSING), checkout])
    out += _table(["base", "upstream commit", "recorded", "machine",
                   "uvpatch commit"], rows)
    out += ["The uvpatch commit is that of the checkout that regenerated "
            "this file; a base without a record shows %s: run `scripts/"
            "uvpatch test --base NAME`." % MISSING, "",
            "## Summary", ""]
    rows = []
    for base, rec in zip(bases, records):
        proofs = linux_proofs(base)
        if rec is None:
            rows.append([base["name"]] + [MISSING] * 4
                        + [str(len(proofs)), MISSING])
            continue
        cases = rec["cases"]
        count = [sum(1 for c in cases.values() if c.get("patched") == s)
                 for s in ("PASS", "FAIL", "SKIP")]
        failing = str(sum(1 for p in proofs
                          if cases.get(p, {}).get("base") == "FAIL"))
        unrecorded = sum(1 for p in proofs if p not in cases)
        if unrecorded:
            failing += " (%d not recorded)" % unrecorded
        rows.append([base["name"], str(len(cases))] + [str(n) for n in count]
                    + [str(len(proofs)), failing])
    out += _table(["base", "cases", "passed patched", "failed patched",
                   "skipped patched", "proofs (%s)" % TARGET,
                   "proofs failing unpatched"], rows)
    head = ["case"] + ["%s %s" % (n, side) for n in names
                       for side in ("unpatched", "patched")]
    for program, (title, what, figures) in PROGRAMS.items():
        out += ["## %s" % title, "",
                "`tests/regress/%s`, a row per case; after each verdict: %s. "
                "The cells are regenerated from the notes the cases "
                "printed." % (program, what), ""]
        rows = [[name.split("/", 1)[1]] + [
            cell((rec or {}).get("cases", {}).get(name), side, figures)
            for rec in records for side in ("base", "patched")]
            for name in _case_names(records, program)]
        out += _table(head, rows) if rows else ["No case recorded.", ""]
    out += ["## The other programs", "",
            "Verdicts only, from the same records.", ""]
    rows = [[name] + [cell((rec or {}).get("cases", {}).get(name), side)
                      for rec in records for side in ("base", "patched")]
            for name in _case_names(records)]
    out += _table(head, rows) if rows else ["No case recorded.", ""]
    windows = windows or [None] * len(bases)
    out += ["## The Windows poll timer, modelled under Wine", "",
            "`tests/regress/timer_model`, from `out/<base>/results/"
            "regress-windows-%s.json` (recorded %s): the model of the "
            "Windows tick and of the wait completion packet calls, not the "
            "Windows kernel. Its stand-ins need the patch, so most cases "
            "skip unpatched." % (CONFIG, ", ".join(
                "%s %s" % (b["name"], (r or {}).get("when", MISSING))
                for b, r in zip(bases, windows))), ""]
    rows = [[name.split("/", 1)[1]] + [
        cell((rec or {}).get("cases", {}).get(name), side, model_figures)
        for rec in windows for side in ("base", "patched")]
        for name in _case_names(windows, "timer_model")]
    out += _table(head, rows) if rows else ["No case recorded.", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def checkout_commit(root):
    try:
        return subproc.git_out(["rev-parse", "--short", "HEAD"], cwd=root)
    except UvPatchError:
        return "unknown (not a git checkout)"


def write_results(manifest, out_root, dest):
    """Writes ``dest`` from every base's record in ``out_root``."""
    bases = manifest.doc["bases"]

    def records_of(target):
        return [load_record(results_path(os.path.join(out_root, b["name"]),
                                         target, CONFIG)) for b in bases]

    records = records_of(TARGET)
    # A file already there holds figures of every base; one without a
    # record here would lose its own for a row of dashes.
    missing = [b["name"] for b, r in zip(bases, records) if r is None]
    if missing and os.path.exists(dest):
        raise UvPatchError(
            "no test record of %s in %s: %s would lose its figures"
            % (", ".join(missing), console.shown(out_root),
               console.shown(dest)),
            hint="run `scripts/uvpatch test` (every base; UVPATCH_SOURCE "
                 "for the bases other than the default), then `results` "
                 "again; or `results --write FILE` for a new file",
            status=EXIT_STATE)
    windows = records_of("windows")
    write_atomic(dest, render(bases, records, checkout_commit(manifest.root),
                              windows))
    return dest
