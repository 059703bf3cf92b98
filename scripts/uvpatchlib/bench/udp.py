"""bench: the UDP receive budget (datagrams per loop iteration, a
loopback flood, a queued backlog drained, instructions under callgrind)
and the EPOLLERR guard (an error-report flood).
"""

import os
import platform
import shutil
import tempfile

from .. import console
from ..build.cmake import host_target
from .figures import MODES, Unmeasured, _pick, rounds, run_json


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
        console.note("udp: datagrams per iteration, %s" % name)
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
        console.note("udp: flood, %s, round %d of %d" % (name, r + 1,
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
        console.note("udp: drain, %s, round %d of %d" % (name, r + 1,
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
                console.note("udp: callgrind, %s, %s" % (name, m))
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
        console.note("errqueue: %s, round %d of %d" % (name, r + 1,
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
