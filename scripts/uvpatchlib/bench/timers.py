"""bench: the timer figures. timer_lateness on each target, and on
Windows the timer_model program's counts of the poll timer's calls and
wake-ups.
"""

from .. import console
from .analyse import median, percentile
from .figures import (VARIANTS, Unmeasured, _pick, rounds, run_json,
                      target_label)


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
        console.note("timers %s: %s, round %d of %d" % (target, name, r + 1,
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
