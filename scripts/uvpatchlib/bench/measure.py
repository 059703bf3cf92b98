"""bench: the measuring run. Builds base and patched, runs each
section's programs in turns, times the tool itself and notes the machine
and the source; the result is the report as a dict (report.json).
"""

import datetime
import os
import platform
import re
import shutil
import subprocess
import sys
import time

try:
    import resource  # Unix: CPU time of the tool's children.
except ImportError:
    resource = None

from .. import console
from ..errors import UvPatchError, EXIT_USAGE
from ..fsutil import remove_tree
from ..build.cmake import build_variant, host_target
from ..verify.runner import Runner, windows_unavailable
from .figures import (FULL, KINDS, QUICK, SCHEMA, SECTIONS, VARIANTS,
                      Section, Unmeasured, patch_for)
from .timers import measure_timers, timer_rows
from .udp import measure_errqueue, measure_udp


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
            console.note("tool: apply, round %d of %d" % (r + 1, reps))
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
                console.note("tool: no-op build, round %d of %d" % (r + 1,
                                                                    reps))
                _noop_in_process(sec, manifest, out, source)
            return
        console.note("tool: cold build (minutes)")
        _sample(sec, "cold", tool + ["--out", work, "build"] + extra)
        for r in range(reps):
            console.note("tool: no-op build, round %d of %d" % (r + 1, reps))
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
            console.step("bench: timers (%s)" % target)
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
        console.note("no private network namespace here: the floods run on "
                     "this machine's loopback")
    if "udp" in only:
        console.step("bench: UDP receive budget")
        measure_udp(sections["udp"], built[host], runner, cfg, raw)
    if "errqueue" in only:
        console.step("bench: EPOLLERR guard")
        measure_errqueue(sections["errqueue"], built[host], runner, cfg)
    if "tool" in only:
        console.step("bench: the tool")
        measure_tool(sections["tool"], manifest, out, cfg, source)
    report["isolated"] = runner.isolated
    report["sections"] = [sections[sid].finish() for sid in SECTIONS]
    return report
