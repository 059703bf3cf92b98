"""The bench command: the pristine base and the patched tree, built in
Release and measured side by side on this machine, written up as a
report to paste into an upstream pull request.

Every measure runs in a process of its own, base and patched taking
turns (base first in even rounds, patched first in odd ones, so a drift
in the machine's load falls on both). No figure is asserted anywhere:
the report says what was seen, and why when something could not be
measured.
"""

import datetime
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

try:
    import resource  # Unix: CPU time of the tool's children.
except ImportError:
    resource = None

from .. import proc
from ..errors import UvPatchError, EXIT_USAGE
from ..source.fsutil import write_atomic, remove_tree
from ..build.cmake import build_variant, cross_windows, host_target
from ..verify.runner import Runner, windows_unavailable
from . import svg

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


class Unmeasured(Exception):
    """A measure that could not be taken; the message says why."""


# --- statistics ----------------------------------------------------------

def median(values):
    s = sorted(values)
    if not s:
        raise ValueError("median of no values")
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2.0


def percentile(values, q):
    """Nearest rank: the smallest value with at least q% of the values at
    or below it (p99 of 100 values is the 99th smallest)."""
    s = sorted(values)
    if not s:
        raise ValueError("percentile of no values")
    rank = int(math.ceil(q / 100.0 * len(s)))
    return s[min(max(rank, 1), len(s)) - 1]


def summary(values):
    """{n, median, min, max} of the samples, or None when there are none."""
    if not values:
        return None
    return {"n": len(values), "median": median(values), "min": min(values),
            "max": max(values)}


def ratio(base, patched):
    """patched / base of the medians, or None when it means nothing."""
    b, p = summary(base), summary(patched)
    if b is None or p is None or b["median"] == 0:
        return None
    return p["median"] / float(b["median"])


# --- one section of the report -------------------------------------------

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


# --- running the programs ------------------------------------------------

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
        proc.show_command(cmd)
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


# --- timers ---------------------------------------------------------------

def target_label(target):
    if target == "windows":
        return "Windows (Wine)" if cross_windows() else "Windows"
    return {"linux": "Linux", "macos": "macOS"}.get(target, target)


def timer_rows(sec, target):
    label = target_label(target)
    t = target + "."
    for delay in (1, 5):
        for stat, name in (("p50", "median"), ("p99", "p99"),
                           ("max", "max")):
            sec.row(t + "oneshot%d.%s" % (delay, stat),
                    "%s: %d ms one-shot timer, %s lateness"
                    % (label, delay, name), "µs", "wall", "lower")
    for stat, name in (("p50", "median"), ("p99", "p99"), ("max", "max")):
        sec.row(t + "periodic16.%s" % stat,
                "%s: 16 ms repeating timer, %s lateness per tick"
                % (label, name), "µs", "wall", "lower")
    sec.row(t + "repeat1.cpu", "%s: CPU per loop iteration, 1 ms "
            "repeating timer" % label, "µs", "cpu", "lower")
    sec.row(t + "armed.rate", "%s: loop iterations per second with a "
            "timer armed (arming cost)" % label, "1/s", "wall", "higher")
    if target == "windows":
        model_rows(sec, t, "%s, model" % label)
        model_rows(sec, t + "real.", "Windows, the kernel's own calls")
    return label, t


def model_rows(sec, p, label):
    """The rows of the timer_model figures, under prefix ``p``."""
    sec.row(p + ("model." if not p.endswith("real.") else "") + "median1",
            "%s: median of 50 one-shot 1 ms timers" % label, "ms", "wall",
            "lower")
    for timer, what in ARMING:
        sec.row(p + "arming." + timer, "%s: Nt*WaitCompletionPacket and "
                "SetWaitableTimer calls per blocking poll, %s"
                % (label, what), "calls", "count", "lower")
    for load, what in IO_LOADS:
        sec.row(p + "io.%s.calls" % load, "%s: extra calls per blocking "
                "poll, %s" % (label, what), "calls", "count", "lower")
        sec.row(p + "io.%s.spurious" % load, "%s: spurious wake-ups per "
                "second, %s" % (label, what), "1/s", "count", "lower")
    sec.row(p + "stale.spurious", "%s: spurious wake-ups, 20 waits woken "
            "early whose 20 ms timer is then stopped" % label, "wake-ups",
            "count", "lower")


# The Windows timer figures come from the timer_model regression program:
# a model of Windows under Wine (a 15.625 ms tick, stand-ins for the wait
# completion packet calls) and, on real Windows, its real_windows case,
# which counts the kernel's own calls. Each case prints JSON lines:
# timer_model_median, _arming, _io and _stale, "model": true or false.
ARMING = (("1ms", "1 ms timer"), ("16ms", "16 ms timer"),
          ("100ms", "100 ms timer"), ("1s", "1 s timer"),
          ("none", "no timer"))
IO_LOADS = (("steady", "10,000 uv_async_send() a second and a 1 ms "
             "repeating timer"),
            ("bursts", "10,000 uv_async_send() a second in bursts, each "
             "request with a 1 ms timeout"))
MODEL_CASES = ("tick_1ms_median", "arming_cost", "stale_wakeup", "io_heavy")


def _number(line, key):
    value = line.get(key) if line else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return None


def add_model(sec, t, name, lines):
    """Adds one variant's timer_model figures; returns how many rows got
    one. Lines with "model": false (real_windows) go to the real rows."""
    added = 0
    for line in lines:
        kind = line.get("bench")
        p = t if line.get("model") is not False else t + "real."
        found = []
        if kind == "timer_model_median" and line.get("timeout_ms") == 1:
            found = [(p + ("model." if p == t else "") + "median1",
                      "median_ms")]
        elif kind == "timer_model_arming":
            if line.get("timer") in dict(ARMING):
                found = [(p + "arming." + line["timer"], "calls_per_poll")]
        elif kind == "timer_model_io":
            if line.get("load") in dict(IO_LOADS):
                io = p + "io.%s." % line["load"]
                found = [(io + "calls", "calls_per_blocking_poll"),
                         (io + "spurious", "spurious_per_s")]
        elif kind == "timer_model_stale":
            found = [(p + "stale.spurious", "spurious")]
        for rid, key in found:
            value = _number(line, key)
            if value is not None and rid in sec.rows:
                sec.add(rid, name, value)
                added += 1
    return added


def measure_model(sec, t, variants, runner):
    """Windows only: the timer_model figures (exact counts but for the
    median, so one run of each case per variant)."""
    sec.note("The Windows rows marked model come from a model under Wine "
             "(the timer_model program: finite waits end on a 15.625 ms "
             "grid, stand-ins for the wait completion packet calls); they "
             "count libuv's calls and wake-ups, not what the calls cost in "
             "the Windows kernel. A spurious wake-up is a wait ended by "
             "nothing but timer completions, after which libuv waits again "
             "without running the loop.")
    cases = list(MODEL_CASES)
    if runner.under_wine:
        sec.unmeasured(t + "real.", "needs real Windows: under Wine there "
                       "is no tick and no wait completion packet call (the "
                       "GitHub workflow's Windows jobs print these)")
    else:
        cases.append("real_windows")
    for name in VARIANTS:
        exe = variants[name].program("timer_model")
        for case in cases:
            where = t + "real." if case == "real_windows" else t
            try:
                lines = run_json(runner, exe, [case], any_status=True)
            except Unmeasured as e:
                sec.note("timer_model %s (%s): %s" % (case, name, e))
                if case == "real_windows":
                    sec.unmeasured(where, str(e))
                continue
            if add_model(sec, t, name, lines) == 0:
                sec.note("timer_model %s (%s) printed no figures"
                         % (case, name))


def measure_timers(sec, target, variants, runner, cfg, raw):
    label, t = timer_rows(sec, target)
    reps = cfg["wine_reps"] if runner.under_wine else cfg["reps"]
    if runner.under_wine:
        sec.note("Under Wine, waits are not rounded up to the Windows "
                 "system tick, so the base's timers are not as late as on "
                 "real Windows: the Wine rows show what the patch costs "
                 "and that it works there, not the gain it brings on "
                 "Windows itself.")
    args = ["--samples", cfg["timer_samples"], "--delays", "1,5",
            "--period", "16", "--ticks", cfg["timer_ticks"],
            "--ms", cfg["timer_ms"], "--raw"]
    for r, name, v in rounds(reps, variants):
        proc.note("timers %s: %s, round %d of %d" % (target, name, r + 1,
                                                     reps))
        try:
            lines = run_json(runner, v.bench_program("timer_lateness"),
                             [str(a) for a in args] + ["--label", name])
        except Unmeasured as e:
            sec.unmeasured(t, str(e))
            sec.note("%s %s: %s" % (label, name, e))
            continue
        for delay in (1, 5):
            line = _pick(lines, bench="timer_oneshot", delay_ms=delay)
            if not line or not line.get("samples_us"):
                continue
            late = [s - delay * 1000.0 for s in line["samples_us"]]
            raw.setdefault("%soneshot%d" % (t, delay), {}).setdefault(
                name, []).extend(late)
            sec.add(t + "oneshot%d.p50" % delay, name, median(late))
            sec.add(t + "oneshot%d.p99" % delay, name, percentile(late, 99))
            sec.add(t + "oneshot%d.max" % delay, name, max(late))
        line = _pick(lines, bench="timer_periodic")
        if line:
            for stat in ("p50", "p99", "max"):
                sec.add(t + "periodic16." + stat, name, line[stat + "_us"])
        line = _pick(lines, bench="timer_repeat")
        if line and line.get("cpu_us_per_iter", -1) >= 0:
            sec.add(t + "repeat1.cpu", name, line["cpu_us_per_iter"])
        line = _pick(lines, bench="armed_poll")
        if line:
            sec.add(t + "armed.rate", name, line["iter_per_sec"])
    if target == "windows":
        measure_model(sec, t, variants, runner)


# --- UDP budget -------------------------------------------------------------

MODES = ("recvmsg", "recvmmsg")


def measure_udp(sec, variants, runner, cfg, raw):
    for m in MODES:
        sec.row("seq.%s.max" % m, "%s: most datagrams in one loop iteration, "
                "backlog of 100" % m, "datagrams", "count", None)
    for m in MODES:
        sec.row("flood.%s.rate" % m, "%s: datagrams per second, loopback "
                "flood" % m, "1/s", "wall", "higher")
        sec.row("flood.%s.cpu" % m, "%s: loop CPU per datagram, loopback "
                "flood" % m, "µs", "cpu", "lower")
        sec.row("flood.%s.lag_p50" % m, "%s: 1 ms timer median lateness "
                "under the flood" % m, "µs", "wall", "lower")
        sec.row("flood.%s.lag_p99" % m, "%s: 1 ms timer p99 lateness under "
                "the flood" % m, "µs", "wall", "lower")
    for m in MODES:
        sec.row("drain.%s.rate" % m, "%s: datagrams per second, draining a "
                "queued backlog of %d" % (m, cfg["drain"]), "1/s", "wall",
                "higher")
        sec.row("drain.%s.cpu" % m, "%s: loop CPU per datagram, draining "
                "the backlog" % m, "µs", "cpu", "lower")
    for m in MODES:
        sec.row("grind.%s.instr" % m, "%s: instructions per datagram in "
                "uv_run (backlog of %d)" % (m, cfg["grind_backlog"]),
                "instructions", "instructions", "lower")
    sec.note("The flood comes from a second process forked by udp_flood, "
             "with a socket of its own (sendmmsg), on loopback, for %d ms per "
             "mode; the loop runs a 1 ms repeating timer meanwhile."
             % cfg["flood_ms"])
    if host_target() == "windows":
        sec.unmeasured("", "the budget patch and its benchmark are "
                           "Unix-only")
        return

    # Datagrams per loop iteration: deterministic, one run each.
    for _, name, v in rounds(1, variants):
        proc.note("udp: datagrams per iteration, %s" % name)
        try:
            lines = run_json(runner, v.bench_program("udp_flood"),
                             ["--drain", "100", "--reps", "1",
                              "--label", name])
        except Unmeasured as e:
            sec.unmeasured("seq.", str(e))
            continue
        for m in MODES:
            line = _pick(lines, bench="udp_drain", mode=m)
            if line and "sequence" in line:
                raw.setdefault("udp.seq." + m, {})[name] = line["sequence"]
                sec.data.setdefault("sequences", {}).setdefault(
                    m, {})[name] = line["sequence"]
                sec.add("seq.%s.max" % m, name, max(line["sequence"] or [0]))
            elif line and "skip" in line:
                sec.unmeasured("seq.%s" % m, line["skip"])

    for r, name, v in rounds(cfg["reps"], variants):
        proc.note("udp: flood, %s, round %d of %d" % (name, r + 1,
                                                      cfg["reps"]))
        try:
            lines = run_json(runner, v.bench_program("udp_flood"),
                             ["--ms", str(cfg["flood_ms"]), "--label", name])
        except Unmeasured as e:
            sec.unmeasured("flood.", str(e))
            continue
        for m in MODES:
            line = _pick(lines, bench="udp_flood", mode=m)
            if not line or "skip" in line:
                sec.unmeasured("flood.%s" % m, line["skip"] if line
                               else "no result line")
                continue
            sec.add("flood.%s.rate" % m, name, line["dgrams_per_sec"])
            if line["loop_cpu_ms"] >= 0 and line["received"] > 0:
                sec.add("flood.%s.cpu" % m, name,
                        line["loop_cpu_ms"] * 1000.0 / line["received"])
            sec.add("flood.%s.lag_p50" % m, name, line["lag_p50_us"])
            sec.add("flood.%s.lag_p99" % m, name, line["lag_p99_us"])

    for r, name, v in rounds(cfg["reps"], variants):
        proc.note("udp: drain, %s, round %d of %d" % (name, r + 1,
                                                      cfg["reps"]))
        try:
            lines = run_json(runner, v.bench_program("udp_flood"),
                             ["--drain", str(cfg["drain"]), "--reps",
                              str(cfg["drain_reps"]), "--label", name])
        except Unmeasured as e:
            sec.unmeasured("drain.", str(e))
            continue
        for m in MODES:
            line = _pick(lines, bench="udp_drain", mode=m)
            if not line or "skip" in line:
                continue
            sec.add("drain.%s.rate" % m, name, line["dgrams_per_sec"])
            if line["dgrams_per_cpu_sec"] > 0:
                sec.add("drain.%s.cpu" % m, name,
                        1e6 / line["dgrams_per_cpu_sec"])

    measure_callgrind(sec, variants, runner, cfg)


def callgrind_total(path):
    """The instruction total of a callgrind output file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise Unmeasured("no totals in the callgrind output")


def measure_callgrind(sec, variants, runner, cfg):
    if not shutil.which("valgrind"):
        sec.unmeasured("grind.", "valgrind is not installed")
        return
    with tempfile.TemporaryDirectory(prefix="uvpatch-grind-") as tmp:
        for _, name, v in rounds(1, variants):
            for m in MODES:
                proc.note("udp: callgrind, %s, %s" % (name, m))
                out = os.path.join(tmp, "%s-%s.out" % (name, m))
                # Only what runs inside uv_run: the loop receiving the
                # backlog, not the sends that queue it.
                grind = ["valgrind", "--tool=callgrind", "--quiet",
                         "--callgrind-out-file=" + out,
                         "--collect-atstart=no", "--toggle-collect=uv_run"]
                try:
                    lines = run_json(runner, v.bench_program("udp_flood"),
                                     ["--drain", str(cfg["grind_backlog"]),
                                      "--reps", "1", "--mode", m],
                                     prefix=grind, timeout=300)
                    line = _pick(lines, bench="udp_drain", mode=m)
                    if not line or "skip" in line:
                        raise Unmeasured(line["skip"] if line
                                         else "no result line")
                    got = cfg["grind_backlog"] - line["dropped"]
                    if got <= 0:
                        raise Unmeasured("no datagram received")
                    sec.add("grind.%s.instr" % m, name,
                            callgrind_total(out) / float(got))
                except (Unmeasured, OSError, ValueError) as e:
                    sec.unmeasured("grind.%s" % m, str(e))


# --- EPOLLERR guard -------------------------------------------------------

def measure_errqueue(sec, variants, runner, cfg):
    secs = cfg["idle_ms"] / 1000.0
    sec.row("idle.iterations", "loop iterations in %g s with one pending "
            "error report" % secs, "iterations", "count", "lower")
    sec.row("idle.cpu", "CPU in %g s with one pending error report" % secs,
            "s", "cpu", "lower")
    sec.row("flood.lag_p50", "1 ms timer median lateness under an "
            "error-report flood", "µs", "wall", "lower")
    sec.row("flood.lag_p99", "1 ms timer p99 lateness under an error-report "
            "flood", "µs", "wall", "lower")
    sec.row("flood.lag_max", "1 ms timer max lateness under an error-report "
            "flood", "µs", "wall", "lower")
    sec.row("flood.lost", "data datagrams lost during the flood",
            "datagrams", "count", "lower")
    sec.note("The flood: a forked process sends from the receiving socket "
             "to a closed loopback port as fast as it can for 2 s, so port "
             "unreachable reports pour into the error queue, and sends "
             "numbered data datagrams to it as well.")
    if platform.system() != "Linux":
        sec.unmeasured("", "EPOLLERR and the error queue are Linux-only")
        return
    for r, name, v in rounds(cfg["err_reps"], variants):
        proc.note("errqueue: %s, round %d of %d" % (name, r + 1,
                                                    cfg["err_reps"]))
        try:
            lines = run_json(runner, v.bench_program("udp_errqueue"),
                             [name, "all", "0", "0", str(cfg["idle_ms"])],
                             timeout=cfg["idle_ms"] // 1000 + 60)
        except Unmeasured as e:
            sec.unmeasured("", str(e))
            continue
        line = _pick(lines, bench="idle_one_report")
        if line:
            sec.add("idle.iterations", name, line["iterations"])
            sec.add("idle.cpu", name, line["cpu_s"])
        line = _pick(lines, bench="flood")
        if line:
            sec.add("flood.lag_p50", name, line["timer_late_p50_us"])
            sec.add("flood.lag_p99", name, line["timer_late_p99_us"])
            sec.add("flood.lag_max", name, line["timer_late_max_us"])
            sec.add("flood.lost", name, line["data_lost"])


# --- the tool itself ------------------------------------------------------

def _cpu_children():
    if resource is None:
        return None
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cpu_self():
    if resource is None:
        return None
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(cmd):
    """(wall seconds, CPU seconds of the command and its children, or
    None where the system does not tell)."""
    before = _cpu_children()
    start = time.monotonic()
    res = subprocess.run(cmd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    after = _cpu_children()
    if res.returncode != 0:
        tail = [ln for ln in res.stderr.splitlines() if ln.strip()][-2:]
        raise Unmeasured("%s failed: %s" % (" ".join(cmd[2:]),
                                            " | ".join(tail)[:300]))
    return wall, None if before is None else after - before


def measure_tool(sec, manifest, out, cfg, source):
    rows = (("apply", "apply into an empty --out, source from the cache"),
            ("cold", "cold build (patched, Release) into an empty --out, "
                     "source from the cache; includes apply"),
            ("noop", "no-op build (everything up to date)"))
    for rid, text in rows:
        sec.row(rid + ".wall", text + ", wall", "s", "wall", "lower",
                single=True)
        sec.row(rid + ".cpu", text + ", CPU", "s", "cpu", "lower",
                single=True)
    sec.note("`scripts/uvpatch test` is not timed: it runs for many "
             "minutes, far longer than a benchmark should.")
    tool = [sys.executable, os.path.join(manifest.root, "scripts",
                                         "uvpatch"),
            "--repo", manifest.root]
    extra = ["--base", manifest.name] + (["--source", source] if source
                                         else [])
    # The child adds the base's folder to --out itself.
    work = os.path.join(out, "bench", ".tool")
    reps = cfg["tool_reps"]
    try:
        for r in range(reps):
            proc.note("tool: apply, round %d of %d" % (r + 1, reps))
            remove_tree(work)
            _sample(sec, "apply", tool + ["--out", work, "apply"] + extra)
        remove_tree(work)
        if not cfg["cold_build"]:
            sec.unmeasured("cold.", "not measured with --quick: a cold "
                                    "build takes minutes")
            # This process holds the lock of out/, and its variants are
            # built: time the no-op build here rather than in a child.
            sec.note("With --quick the no-op build runs inside this "
                     "process, on the work folder of the run (no start-up "
                     "of the tool counted).")
            for r in range(reps):
                proc.note("tool: no-op build, round %d of %d" % (r + 1,
                                                                 reps))
                _noop_in_process(sec, manifest, out, source)
            return
        proc.note("tool: cold build (minutes)")
        _sample(sec, "cold", tool + ["--out", work, "build"] + extra)
        for r in range(reps):
            proc.note("tool: no-op build, round %d of %d" % (r + 1, reps))
            _sample(sec, "noop", tool + ["--out", work, "build"] + extra)
    finally:
        remove_tree(work)


def _sample(sec, rid, cmd):
    try:
        wall, cpu = _timed(cmd)
    except Unmeasured as e:
        sec.unmeasured(rid + ".", str(e))
        return
    sec.add(rid + ".wall", "samples", wall)
    if cpu is None:
        sec.unmeasured(rid + ".cpu", "no CPU times on this system")
    else:
        sec.add(rid + ".cpu", "samples", cpu)


def _noop_in_process(sec, manifest, out, source):
    """The no-op build of the folder this run holds the lock of (a second
    process would find it locked)."""
    before = (_cpu_self(), _cpu_children())
    start = time.monotonic()
    build_variant(manifest, out, "native", True, "Release", source)
    wall = time.monotonic() - start
    sec.add("noop.wall", "samples", wall)
    if before[0] is None:
        sec.unmeasured("noop.cpu", "no CPU times on this system")
    else:
        sec.add("noop.cpu", "samples", _cpu_self() - before[0]
                + _cpu_children() - before[1])


# --- the machine and the source -------------------------------------------

def _first_line(cmd, pattern=None):
    """The first line of a command's output (that matches ``pattern``:
    Wine prints warnings before its version)."""
    try:
        res = subprocess.run(cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [ln.strip() for ln in res.stdout.splitlines() if ln.strip()
             and (pattern is None or re.search(pattern, ln))]
    return lines[0] if lines and res.returncode == 0 else None


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(windows):
    info = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "kernel": "%s %s" % (platform.system(), platform.release()),
        "compiler": _first_line(["cc", "--version"]) or "unknown",
        "python": platform.python_version(),
    }
    try:
        with open("/proc/loadavg", encoding="utf-8") as f:
            info["load_at_start"] = " ".join(f.read().split()[:3])
    except OSError:
        pass
    if windows:
        info["cross_compiler"] = _first_line(
            ["x86_64-w64-mingw32-gcc", "--version"]) or "unknown"
        wine = shutil.which("wine64") or shutil.which("wine")
        info["wine"] = _first_line([wine, "--version"], r"^wine-") \
            if wine else None
    info["valgrind"] = _first_line(["valgrind", "--version"]) \
        if shutil.which("valgrind") else None
    return info


def source_info(manifest):
    return {"base": manifest.name, "upstream": manifest.upstream["tag"],
            "commit": manifest.commit, "tree": manifest.tree,
            "series": [{"file": e["file"], "sha256": e["sha256"],
                        "summary": e["summary"]} for e in manifest.series]}


# --- the whole run ----------------------------------------------------------

def parse_only(values):
    """--only a,b or repeated: the sections to measure."""
    if not values:
        return list(SECTIONS)
    wanted = []
    for value in values:
        for name in value.split(","):
            name = name.strip()
            if name not in SECTIONS:
                raise UvPatchError("--only: unknown part %r" % name,
                                   hint="use %s" % "|".join(SECTIONS),
                                   status=EXIT_USAGE)
            if name not in wanted:
                wanted.append(name)
    return wanted


def measure(manifest, out, quick=False, only=None, source=None):
    """Builds what is needed, measures, and returns the report (a dict)."""
    cfg = QUICK if quick else FULL
    only = list(only or SECTIONS)
    host = host_target()
    targets = [host]
    win_why = windows_unavailable() if host != "windows" else None
    if "timers" in only and host != "windows" and not win_why:
        targets.append("windows")
    report = {"schema": SCHEMA, "quick": quick,
              "created": datetime.datetime.now(datetime.timezone.utc)
              .strftime("%Y-%m-%d %H:%M UTC"),
              "machine": machine("windows" in targets),
              "source": source_info(manifest), "settings": dict(cfg),
              "kinds": KINDS, "sections": [], "raw": {}}
    raw = report["raw"]
    built = {}
    for target in targets if set(only) - {"tool"} else []:
        try:
            built[target] = {name: build_variant(
                manifest, out, target, name == "patched", "Release", source)
                for name in VARIANTS}
        except UvPatchError as e:
            if target == host:
                raise
            # The Windows figures are extras: say why they are missing.
            win_why = "the build failed: " + e.message.splitlines()[0]
    sections = {sid: Section(sid, patch_for(manifest, sid))
                for sid in SECTIONS}
    for sid in SECTIONS:
        if sid not in only:
            sections[sid].data["skipped"] = "not measured: --only %s" \
                % ",".join(only)
    if "timers" in only:
        for target in (host, "windows") if host != "windows" else (host,):
            proc.step("bench: timers (%s)" % target)
            if target not in built:
                timer_rows(sections["timers"], target)
                sections["timers"].unmeasured(
                    target + ".", "Windows under Wine: %s"
                    % (win_why or "not built"))
                continue
            runner = Runner(target)
            try:
                runner.start()
                measure_timers(sections["timers"], target, built[target],
                               runner, cfg, raw)
            except (OSError, subprocess.SubprocessError) as e:
                timer_rows(sections["timers"], target)
                sections["timers"].unmeasured(target + ".", "could not "
                                              "run the programs: %s" % e)
            finally:
                runner.stop()
    runner = Runner(host)
    if not runner.isolated:
        proc.note("no private network namespace here: the floods run on "
                  "this machine's loopback")
    if "udp" in only:
        proc.step("bench: UDP receive budget")
        measure_udp(sections["udp"], built[host], runner, cfg, raw)
    if "errqueue" in only:
        proc.step("bench: EPOLLERR guard")
        measure_errqueue(sections["errqueue"], built[host], runner, cfg)
    if "tool" in only:
        proc.step("bench: the tool")
        measure_tool(sections["tool"], manifest, out, cfg, source)
    report["isolated"] = runner.isolated
    report["sections"] = [sections[sid].finish() for sid in SECTIONS]
    return report


def run(manifest, out, quick=False, only=None, report_path=None,
        source=None):
    """The bench command; returns the path of report.json."""
    report_path = os.path.abspath(report_path or os.path.join(
        out, "bench", "report.md"))
    if not report_path.endswith(".md"):
        raise UvPatchError("--report %s: the report is Markdown" %
                           report_path, hint="give a file name ending in "
                           ".md (report.json and the plots go next to it)",
                           status=EXIT_USAGE)
    report = measure(manifest, out, quick=quick, only=parse_only(only),
                     source=source)
    return write_report(report, report_path)


def write_report(report, report_path):
    folder = os.path.dirname(report_path)
    report["plots"] = []
    for name, title, text in plots(report):
        write_atomic(os.path.join(folder, name), text)
        report["plots"].append({"file": name, "title": title})
    # A plot of an earlier run that this one has none of would mislead.
    drawn = [p["file"] for p in report["plots"]]
    for name in PLOT_NAMES:
        if name not in drawn and os.path.isfile(os.path.join(folder, name)):
            os.unlink(os.path.join(folder, name))
    json_path = report_path[:-3] + ".json"
    write_atomic(json_path, json.dumps(report, indent=1, sort_keys=True)
                 + "\n")
    write_atomic(report_path, render(report))
    proc.note("wrote %s, %s and %d plots" % (report_path, json_path,
                                              len(report["plots"])))
    return json_path


# --- report.json -> report.md and plots -----------------------------------

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


def cell(values):
    """median (min–max) over n runs, or the one value."""
    s = summary(values)
    if s is None:
        return "—"
    if s["n"] == 1:
        return fmt(s["median"])
    like = s["median"]
    return "%s (%s–%s)" % (fmt(s["median"], like), fmt(s["min"], like),
                           fmt(s["max"], like))


def ratio_text(r):
    if r is None:
        return "—"
    return "%.2f×" % r if r >= 0.1 else "%.2g×" % r


def _ratio_cell(row):
    return ratio_text(ratio(row["base"], row["patched"]))


def _better(row):
    return {"lower": ", lower is better",
            "higher": ", higher is better"}.get(row["better"], "")


def render(report):
    """report.json as Markdown, ready to paste into a pull request."""
    m, src = report["machine"], report["source"]
    out = ["# libuv patch series: benchmark", "",
           "Measured by `scripts/uvpatch bench%s` on %s: the pristine base "
           "and the patched tree, Release builds, run side by side on one "
           "machine, each measure in a process of its own, base and "
           "patched taking turns. Cells are the median over the runs, "
           "with (min–max); the ratio is patched / base of the medians. "
           "Nothing here is asserted by any test."
           % (" --quick" if report["quick"] else "", report["created"]),
           "", "## Machine", "", "| | |", "|---|---|"]
    for key, label in (("cpu", "CPU"), ("cores", "cores"),
                       ("kernel", "kernel"), ("compiler", "compiler"),
                       ("cross_compiler", "cross compiler"),
                       ("wine", "Wine"), ("valgrind", "valgrind"),
                       ("load_at_start", "load average at start"),
                       ("python", "Python")):
        if m.get(key) is not None:
            out.append("| %s | %s |" % (label, m[key]))
    if "isolated" in report:
        out.append("| network | %s |" % (
            "loopback only, every program in a private network namespace"
            if report["isolated"] else "loopback only (no private network "
            "namespace here: unshare and ip, as root, give one)"))
    out += ["", "## Source", "",
            "libuv %s, commit `%s`, tree `%s`."
            % (src["upstream"], src["commit"], src["tree"]), "",
            "| patch | sha256 |", "|---|---|"]
    for e in src["series"]:
        out.append("| `%s` | `%s` |" % (e["file"], e["sha256"][:16]))
    out += ["", "Kinds of figures:", ""]
    for kind, text in sorted(report["kinds"].items()):
        out.append("- **%s**: %s." % (kind, text))
    for sec in report["sections"]:
        out += [""] + render_section(sec)
    if report.get("plots"):
        out += ["", "## Plots", ""]
        for plot in report["plots"]:
            out.append("![%s](%s)" % (plot["title"], plot["file"]))
    return "\n".join(out) + "\n"


def render_section(sec):
    title = sec["title"]
    if sec.get("patch"):
        title += ": `%s` (%s)" % (sec["patch"]["file"],
                                  sec["patch"]["summary"])
    elif sec["id"] != "tool":
        title += " (no patch of the series is about this: reference)"
    out = ["## " + title, ""]
    if sec.get("skipped"):
        return out + [sec["skipped"] + "."]
    single = sec["rows"] and "samples" in sec["rows"][0]
    if single:
        out += ["| measure | kind | median (min–max) | runs |",
                "|---|---|---|---|"]
    else:
        out += ["| measure | kind | base | patched | patched/base |",
                "|---|---|---|---|---|"]
    for row in sec["rows"]:
        what = "%s (%s%s)" % (row["label"], row["unit"], _better(row))
        if row.get("why"):
            out.append("| %s | %s | not measured: %s |%s"
                       % (what, row["kind"], row["why"].replace("|", "/"),
                          " |" if single else " | |"))
        elif single:
            out.append("| %s | %s | %s | %d |" % (
                what, row["kind"], cell(row["samples"]),
                len(row["samples"])))
        else:
            out.append("| %s | %s | %s | %s | %s |" % (
                what, row["kind"], cell(row["base"]), cell(row["patched"]),
                _ratio_cell(row)))
    seqs = sec.get("sequences") or {}
    if seqs:
        out += ["", "Datagrams handed over per loop iteration, backlog of "
                "100 queued before the loop runs:", ""]
        for mode in sorted(seqs):
            for name in VARIANTS:
                if name in seqs[mode]:
                    out.append("- %s, %s: %s" % (
                        mode, name, " ".join(str(n) for n in
                                             seqs[mode][name])))
    for note in sec.get("notes", []):
        out += ["", note]
    return out


PLOT_NAMES = ["timer-1ms-%s.svg" % t for t in ("linux", "macos",
                                               "windows")] + \
    ["udp-per-iteration-%s.svg" % m for m in ("recvmsg", "recvmmsg")]


def plots(report):
    """[(file name, title, SVG text)] from the raw samples."""
    raw = report.get("raw", {})
    found = []
    for target in ("linux", "macos", "windows"):
        data = raw.get(target + ".oneshot1")
        if not data:
            continue
        title = "1 ms one-shot timer lateness, %s, base vs patched" % (
            target_label(target))
        found.append(("timer-1ms-%s.svg" % target, title, svg.histogram(
            title, "lateness (µs; negative: early)",
            [(n, data.get(n, [])) for n in VARIANTS])))
    for mode in MODES:
        data = raw.get("udp.seq." + mode)
        if not data:
            continue
        title = "Datagrams per loop iteration, %s, backlog of 100" % mode
        found.append(("udp-per-iteration-%s.svg" % mode, title, svg.bars(
            title, "loop iteration", "datagrams",
            [(n, data.get(n, [])) for n in VARIANTS])))
    return found


# --- reading a report back, and comparing two ---------------------------

def load_report(path):
    """A report.json, checked enough that rendering and --compare can
    trust its shape."""
    hint = "give a report.json written by `scripts/uvpatch bench`"
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise UvPatchError("cannot read %s: %s" % (path, e.strerror),
                           hint=hint, status=EXIT_USAGE)
    try:
        data = json.loads(text)
    except ValueError as e:
        raise UvPatchError("%s is not JSON: %s" % (path, e), hint=hint,
                           status=EXIT_USAGE)
    problem = _schema_problem(data)
    if problem:
        raise UvPatchError("%s is not a bench report: %s" % (path, problem),
                           hint=hint, status=EXIT_USAGE)
    return data


def _schema_problem(data):
    if not isinstance(data, dict):
        return "the top level is not an object"
    if data.get("schema") != SCHEMA:
        return "schema is %r, want %r" % (data.get("schema"), SCHEMA)
    for key, typ in (("machine", dict), ("source", dict),
                     ("sections", list), ("kinds", dict), ("quick", bool),
                     ("created", str)):
        if not isinstance(data.get(key), typ):
            return "%s is missing or not %s" % (key, typ.__name__)
    for sec in data["sections"]:
        if not isinstance(sec, dict) or not isinstance(sec.get("id"), str) \
                or not isinstance(sec.get("rows"), list) \
                or not isinstance(sec.get("title"), str):
            return "a section lacks id, title or rows"
        for row in sec["rows"]:
            if not isinstance(row, dict) or not isinstance(row.get("id"),
                                                           str):
                return "a row of %s lacks its id" % sec["id"]
            keys = ("samples",) if "samples" in row else VARIANTS
            for key in keys:
                values = row.get(key)
                if not isinstance(values, list) or not all(
                        isinstance(v, (int, float)) and
                        not isinstance(v, bool) for v in values):
                    return "row %s.%s: %s is not a list of numbers" % (
                        sec["id"], row["id"], key)
            for key in ("label", "unit", "kind"):
                if not isinstance(row.get(key), str):
                    return "row %s.%s lacks %s" % (sec["id"], row["id"],
                                                   key)
    return None


def check_report(data, md_path):
    """[(part, problem or None, detail)]: every section there, every row
    measured or saying why, the Markdown and the plots well formed."""
    import xml.etree.ElementTree as ET
    results = []
    by_id = {sec["id"]: sec for sec in data["sections"]}
    try:
        with open(md_path, encoding="utf-8") as f:
            md = f.read()
    except OSError as e:
        md = ""
        results.append(("report.md", "cannot read: %s" % e.strerror, ""))
    for sid in SECTIONS:
        sec = by_id.get(sid)
        if sec is None:
            results.append((sid, "missing from report.json", ""))
            continue
        silent = [r["id"] for r in sec["rows"] if not r.get("why") and not
                  all(r.get(k) for k in (("samples",) if "samples" in r
                                         else VARIANTS))]
        if not sec["rows"]:
            problem = "no rows"
        elif silent:
            problem = "rows with neither samples nor why: " + \
                ", ".join(silent)
        elif "## " + sec["title"] not in md:
            problem = "no heading in report.md"
        else:
            problem = None
        measured = sum(1 for r in sec["rows"] if not r.get("why"))
        results.append((sid, problem, "all %d figures measured"
                        % measured if measured == len(sec["rows"]) else
                        "%d of %d figures measured, the rest say why"
                        % (measured, len(sec["rows"]))))
    folder = os.path.dirname(md_path)
    for plot in data.get("plots", []):
        try:
            ET.parse(os.path.join(folder, plot["file"]))
            results.append(("plot " + plot["file"], None, "well-formed"))
        except (OSError, ET.ParseError) as e:
            results.append(("plot " + plot["file"], str(e), ""))
    if not data.get("plots"):
        results.append(("plots", "none written", ""))
    return results


def compare(old, new):
    """The differences between two reports, one line per figure."""
    lines = []
    for key in ("cpu", "cores", "kernel", "compiler"):
        a, b = old["machine"].get(key), new["machine"].get(key)
        if a != b:
            lines.append("machine %s: %s -> %s" % (key, a, b))
    if old["source"].get("series") != new["source"].get("series"):
        lines.append("series: %s -> %s" % (
            _series_names(old), _series_names(new)))
    skipped = set()
    for label, report in (("old", old), ("new", new)):
        for sec in report["sections"]:
            if sec.get("skipped"):
                lines.append("%s: not measured in the %s report (%s)"
                             % (sec["id"], label, sec["skipped"]))
                skipped.add(sec["id"])
    old_rows = _rows(old, skipped)
    new_rows = _rows(new, skipped)
    for key in old_rows:
        if key not in new_rows:
            lines.append("%s: only in the old report" % key)
    for key, row in new_rows.items():
        if key not in old_rows:
            lines.append("%s: only in the new report" % key)
            continue
        before = old_rows[key]
        parts = []
        for name in (("samples",) if "samples" in row else VARIANTS):
            parts.append("%s %s" % (name if name != "samples" else "",
                                    _change(before.get(name, []),
                                            row.get(name, []))))
        lines.append("%s (%s): %s" % (key, row["unit"],
                                      "; ".join(p.strip() for p in parts)))
    return "\n".join(lines) + "\n"


def _series_names(report):
    return ", ".join(e["file"][:4] for e in report["source"]["series"]) \
        or "(none)"


def _rows(report, skipped):
    rows = {}
    for sec in report["sections"]:
        if sec["id"] in skipped:
            continue
        for row in sec["rows"]:
            rows["%s.%s" % (sec["id"], row["id"])] = row
    return rows


def _change(a, b):
    sa, sb = summary(a), summary(b)
    if sa is None and sb is None:
        return "not measured in either"
    if sa is None:
        return "not measured -> %s" % fmt(sb["median"])
    if sb is None:
        return "%s -> not measured" % fmt(sa["median"])
    if sa["median"] == 0:
        return "%s -> %s" % (fmt(sa["median"]), fmt(sb["median"]))
    return "%s -> %s (%+.1f%%)" % (fmt(sa["median"]), fmt(sb["median"]),
                                   100.0 * (sb["median"] / sa["median"]
                                            - 1))


# --- the test command's check ---------------------------------------------

def smoke(manifest, out, tally, source=None):
    """Runs `bench --quick` into a temporary folder (in the caller's
    work folder and lock) and checks the report: one result line per
    part. Asserts no figure, only that each was measured or says why."""
    proc.step("bench --quick")
    tmp = tempfile.mkdtemp(prefix="uvpatch-bench-")
    try:
        md = os.path.join(tmp, "report.md")
        try:
            data = load_report(run(manifest, out, quick=True,
                                   report_path=md, source=source))
        except UvPatchError as e:
            tally.result("FAIL", "bench --quick", e.message.splitlines()[0])
            return
        for name, problem, detail in check_report(data, md):
            tally.result("FAIL" if problem else "PASS",
                         "bench --quick " + name, problem or detail)
    finally:
        remove_tree(tmp)
