"""What a bench report holds and where its figures come from: the
sections and their rows of base and patched samples, the kinds of
figure, how much a run measures, and the JSON lines a bench program
prints (run_json).
"""

import json
import os
import subprocess

from .. import console
from ..build.cmake import cross_windows

SCHEMA = "uvpatch-bench/1"
SECTIONS = ("timers", "udp", "errqueue", "tool")
TITLES = {
    "timers": "Timers",
    "udp": "UDP receive budget",
    "errqueue": "EPOLLERR guard",
    "tool": "The tool itself",
}
# Which patch a section measures: words of the patch file name.
PATCH_WORDS = {
    "timers": ("timer", "hrtime"),
    "udp": ("budget",),
    "errqueue": ("epollerr", "error-queue", "errqueue"),
}
KINDS = {
    "wall": "wall-clock time or rate: moves with other load on the machine",
    "cpu": "CPU time of the measured process or loop thread: moves less "
           "with other load",
    "instructions": "user-space instructions counted by valgrind's "
                    "callgrind: the same from run to run",
    "count": "an exact count of events",
}

# How much of everything to measure; --quick takes a few seconds a part.
FULL = {"reps": 5, "wine_reps": 3, "timer_samples": 200, "timer_ticks": 100,
        "timer_ms": 1000, "flood_ms": 2000, "drain": 20000, "drain_reps": 9,
        "grind_backlog": 2000, "idle_ms": 5000, "err_reps": 3,
        "tool_reps": 3, "cold_build": True}
QUICK = {"reps": 1, "wine_reps": 1, "timer_samples": 50, "timer_ticks": 20,
         "timer_ms": 200, "flood_ms": 300, "drain": 2000, "drain_reps": 3,
         "grind_backlog": 300, "idle_ms": 2000, "err_reps": 1,
         "tool_reps": 1, "cold_build": False}
RUN_TIMEOUT = 120
VARIANTS = ("base", "patched")
# The two receive paths of the UDP figures and plots.
MODES = ("recvmsg", "recvmmsg")


class Unmeasured(Exception):
    """A measure that could not be taken; the message says why."""


class Section:
    """Rows of figures: each row has base and patched samples (or, for
    the tool, plain samples) and, when they are missing, why."""

    def __init__(self, sid, patch=None):
        self.data = {"id": sid, "title": TITLES[sid], "patch": patch,
                     "notes": [], "rows": []}
        self.rows = {}

    def row(self, rid, label, unit, kind, better, single=False):
        if rid not in self.rows:
            row = {"id": rid, "label": label, "unit": unit, "kind": kind,
                   "better": better, "why": None}
            if single:
                row["samples"] = []
            else:
                row["base"], row["patched"] = [], []
            self.rows[rid] = row
            self.data["rows"].append(row)
        return self.rows[rid]

    def add(self, rid, variant, value):
        self.rows[rid][variant].append(value)

    def unmeasured(self, prefix, why):
        """Marks the rows whose id starts with prefix and lack samples."""
        for row in self.data["rows"]:
            if row["id"].startswith(prefix) and row["why"] is None:
                row["why"] = why

    def note(self, text):
        self.data["notes"].append(text)

    def finish(self):
        for row in self.data["rows"]:
            keys = ("samples",) if "samples" in row else VARIANTS
            if row["why"] is None and not all(row[k] for k in keys):
                row["why"] = "no sample (see the notes)"
            elif row["why"] and all(row[k] for k in keys):
                # Some runs failed, others gave figures: keep those, and
                # say so.
                self.note("%s: a run failed (%s); the figure comes from "
                          "the other runs." % (row["label"], row["why"]))
                row["why"] = None
        return self.data


def patch_for(manifest, sid):
    words = PATCH_WORDS.get(sid, ())
    for entry in manifest.series:
        name = entry["file"].lower()
        if any(w in name for w in words):
            return {"file": entry["file"], "summary": entry["summary"],
                    "platforms": entry["platforms"]}
    return None


def run_json(runner, exe, args, timeout=RUN_TIMEOUT, prefix=(),
             any_status=False):
    """Runs a bench program; returns its JSON lines (dicts).
    Unmeasured when it fails or says nothing; with ``any_status``, only
    when it says nothing (a regression case that fails still prints what
    it counted)."""
    if not os.path.isfile(exe):
        raise Unmeasured("%s was not built" % os.path.basename(exe))
    if prefix:
        cmd = runner.prefix + list(prefix) + [exe] + list(args)
        console.show_command(cmd)
        try:
            res = subprocess.run(cmd, env=runner.env, timeout=timeout,
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True,
                                 errors="replace")
        except subprocess.TimeoutExpired:
            raise Unmeasured("%s timed out after %d s"
                             % (os.path.basename(exe), timeout))
        code, out, err = res.returncode, res.stdout, res.stderr
    else:
        code, out, err = runner.run(exe, args, timeout=timeout)
    if code is None:
        raise Unmeasured("%s timed out after %d s"
                         % (os.path.basename(exe), timeout))
    lines = parse_lines(out)
    if (code != 0 and not any_status) or not lines:
        tail = [ln for ln in err.splitlines() if ln.strip()][-1:]
        raise Unmeasured("%s exited with %s%s" % (
            os.path.basename(exe), code, ": " + tail[0][:200] if tail
            else ", no output"))
    return lines


def parse_lines(text):
    """The JSON objects of a program's output, one a line; other lines
    (a runtime's chatter under Wine) are left out."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                found.append(obj)
    return found


def rounds(reps, variants):
    """(round, name, variant) in the interleaved order."""
    names = list(VARIANTS)
    for r in range(reps):
        for name in (names if r % 2 == 0 else names[::-1]):
            yield r, name, variants[name]


def _pick(lines, **match):
    for line in lines:
        if all(line.get(k) == v for k, v in match.items()):
            return line
    return None


def target_label(target):
    if target == "windows":
        return "Windows (Wine)" if cross_windows() else "Windows"
    return {"linux": "Linux", "macos": "macOS"}.get(target, target)


def fmt(value, like=None):
    """A figure with the decimals its size (or that of ``like``, so a
    cell's figures match) deserves; counts stay whole."""
    if value is None:
        return "n/a"
    if isinstance(value, int):
        return "%d" % value
    a = abs(value if like is None else like)
    decimals = 0 if a >= 100 else 1 if a >= 10 else 2
    return "%.*f" % (decimals, value)
