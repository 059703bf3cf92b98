"""bench: the parts that need no build. Statistics, the SVG writer,
report.json -> report.md, --compare and its bad inputs."""

import copy
import json
import os
import shutil
import tempfile
import unittest
import xml.etree.ElementTree as ET

from fixture import World, write

from uvpatchlib.bench import analyse, figures, measure, render, svg, timers
from uvpatchlib.errors import UvPatchError

SVG_NS = "{http://www.w3.org/2000/svg}"


def sample_report():
    """A report as measure.measure() makes it, with made-up figures."""
    sections = {sid: figures.Section(sid) for sid in figures.SECTIONS}
    sections["udp"].data["patch"] = {
        "file": "0002-unix-udp-exact-receive-budget.patch",
        "summary": "unix,udp: exact receive budget", "platforms": ["unix"]}
    timer_sec = sections["timers"]
    timers.timer_rows(timer_sec, "linux")
    timers.timer_rows(timer_sec, "windows")
    for value in (100.0, 120.0, 110.0):
        timer_sec.add("linux.oneshot1.p50", "base", value)
        timer_sec.add("linux.oneshot1.p50", "patched", value / 2)
    timer_sec.unmeasured("windows.", "Windows under Wine: wine not found")
    timer_sec.unmeasured("linux.", "timer_lateness exited with 1")
    udp = sections["udp"]
    udp.row("seq.recvmmsg.max", "recvmmsg: most per iteration", "datagrams",
            "count", None)
    udp.add("seq.recvmmsg.max", "base", 40)
    udp.add("seq.recvmmsg.max", "patched", 32)
    udp.data["sequences"] = {"recvmmsg": {"base": [40, 40, 20],
                                          "patched": [32, 32, 32, 4]}}
    udp.note("A note | with a bar.")
    err = sections["errqueue"]
    err.row("idle.iterations", "loop iterations in 5 s", "iterations",
            "count", "lower")
    err.add("idle.iterations", "base", 1000000)
    err.add("idle.iterations", "patched", 3)
    tool = sections["tool"]
    tool.row("apply.wall", "apply, wall", "s", "wall", "lower", single=True)
    tool.add("apply.wall", "samples", 1.5)
    tool.add("apply.wall", "samples", 2.5)
    return {
        "schema": figures.SCHEMA, "quick": True,
        "created": "2026-01-01 00:00 UTC",
        "machine": {"cpu": "Test CPU 3000", "cores": 2,
                    "kernel": "Linux 6.0", "compiler": "cc (Test) 12"},
        "source": {"upstream": "v1.50.0", "commit": "8fb9" * 10,
                   "tree": "2a51" * 10,
                   "series": [{"file": "0001-a.patch", "sha256": "ab" * 32,
                               "summary": "a"}]},
        "settings": dict(figures.QUICK), "kinds": figures.KINDS,
        "sections": [sections[sid].finish() for sid in figures.SECTIONS],
        "raw": {"linux.oneshot1": {"base": [10.0, 20.0, 900.0],
                                   "patched": [5.0, 6.0, -1.0]},
                "udp.seq.recvmmsg": {"base": [40, 40, 20],
                                     "patched": [32, 32, 32, 4]}},
    }


class StatisticsTest(unittest.TestCase):
    def test_median(self):
        self.assertEqual(analyse.median([3, 1, 2]), 2)
        self.assertEqual(analyse.median([4, 1, 3, 2]), 2.5)
        self.assertEqual(analyse.median([7]), 7)
        with self.assertRaises(ValueError):
            analyse.median([])

    def test_percentile_nearest_rank(self):
        values = list(range(100, 0, -1))
        self.assertEqual(analyse.percentile(values, 99), 99)
        self.assertEqual(analyse.percentile(values, 50), 50)
        self.assertEqual(analyse.percentile(values, 100), 100)
        self.assertEqual(analyse.percentile(range(1, 11), 99), 10)
        self.assertEqual(analyse.percentile([5], 99), 5)
        self.assertEqual(analyse.percentile([1, 2], 0), 1)

    def test_summary_and_ratio(self):
        self.assertEqual(analyse.summary([5, 1, 9]),
                         {"n": 3, "median": 5, "min": 1, "max": 9})
        self.assertIsNone(analyse.summary([]))
        self.assertEqual(analyse.ratio([2, 2, 2], [1, 1]), 0.5)
        self.assertIsNone(analyse.ratio([0], [1]))
        self.assertIsNone(analyse.ratio([], [1]))

    def test_rounds_interleave(self):
        order = [(r, n) for r, n, _ in figures.rounds(
            3, {"base": 0, "patched": 1})]
        self.assertEqual(order, [(0, "base"), (0, "patched"),
                                 (1, "patched"), (1, "base"),
                                 (2, "base"), (2, "patched")])

    def test_parse_lines_skips_noise(self):
        text = ('wine: chatter\n{"bench":"a","x":1}\n{broken\n[1]\n'
                '  {"bench":"b"}\n')
        self.assertEqual(figures.parse_lines(text),
                         [{"bench": "a", "x": 1}, {"bench": "b"}])

    def test_only(self):
        self.assertEqual(measure.parse_only(None), list(figures.SECTIONS))
        self.assertEqual(measure.parse_only(["udp,timers", "udp"]),
                         ["udp", "timers"])
        with self.assertRaises(UvPatchError) as cm:
            measure.parse_only(["udp,disk"])
        self.assertIn("disk", cm.exception.message)
        self.assertTrue(cm.exception.hint)

    def test_section_says_why(self):
        sec = figures.Section("udp")
        sec.row("a", "a", "s", "wall", "lower")
        sec.row("b", "b", "s", "wall", "lower")
        sec.row("c", "c", "s", "wall", "lower")
        sec.add("a", "base", 1)
        sec.add("a", "patched", 1)
        sec.add("b", "base", 1)
        sec.unmeasured("c", "valgrind is not installed")
        rows = {r["id"]: r for r in sec.finish()["rows"]}
        self.assertIsNone(rows["a"]["why"])
        self.assertTrue(rows["b"]["why"])
        self.assertEqual(rows["c"]["why"], "valgrind is not installed")


def _model_out(stand_ins, calls, io_calls, spurious, median, result="ok"):
    """What timer_model prints on stdout for one case (its result line
    too), by case name."""
    flag = "true" if stand_ins else "false"
    arming = "".join(
        '{"bench": "timer_model_arming", "timer": "%s", '
        '"calls_per_poll": %.2f, "stand_ins": %s, "model": true}\n'
        % (timer, calls.get(timer, 0.0), flag)
        for timer, _ in timers.ARMING)
    io = "".join(
        '{"bench": "timer_model_io", "load": "%s", '
        '"calls_per_blocking_poll": %.3f, "spurious": %d, '
        '"spurious_per_s": %.1f, "stand_ins": %s, "model": true}\n'
        % (load, io_calls, spurious, float(spurious), flag)
        for load, _ in timers.IO_LOADS)
    return {
        "tick_1ms_median": (
            '{"bench": "timer_model_median", "timeout_ms": 1, '
            '"median_ms": %.3f, "stand_ins": %s, "model": true}\n'
            '%s tick_1ms_median\n' % (median, flag, result)),
        "arming_cost": arming + "%s arming_cost\n" % result,
        "stale_wakeup": (
            '{"bench": "timer_model_stale", "rounds": 20, "spurious": %d, '
            '"stand_ins": %s, "model": true}\n%s stale_wakeup\n'
            % (spurious, flag, result)),
        "io_heavy": io + "%s io_heavy\n" % result,
    }


# The base fails the proof (its median is the tick) yet prints it.
MODEL_OUT = {
    "patched": _model_out(True, {"1ms": 2.9, "16ms": 0.4}, 1.4, 0, 1.3),
    "base": _model_out(False, {}, 0.0, 0, 15.5, result="not ok"),
}


class FakeVariant:
    def __init__(self, folder, name):
        self.path = os.path.join(folder, name + "-timer_model.exe")
        write(self.path, "")

    def program(self, name):
        assert name == "timer_model"
        return self.path


class FakeRunner:
    """Answers for the programs instead of running them: outputs maps a
    variant to (exit status, {case: stdout}) or (exit status, stdout)."""
    prefix = []

    def __init__(self, outputs, under_wine=True):
        self.outputs = outputs
        self.under_wine = under_wine
        self.calls = []

    def run(self, exe, args, timeout=None):
        self.calls.append((os.path.basename(exe), list(args)))
        for name, (code, out) in self.outputs.items():
            if os.path.basename(exe).startswith(name + "-"):
                if isinstance(out, dict):
                    out = out.get(args[0], "skip %s: x\n" % args[0])
                return code, out, "timer_model (model: ...)\n"
        raise AssertionError(exe)


class ModelTest(unittest.TestCase):
    """The Windows figures of the timers section from timer_model: rows,
    parsing, and what a failed run leaves, with no program run."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.variants = {name: FakeVariant(self.tmp, name)
                         for name in figures.VARIANTS}

    def rows(self, sec):
        return {row["id"]: row for row in sec.finish()["rows"]}

    def measure(self, outputs, under_wine=True):
        sec = figures.Section("timers")
        timers.timer_rows(sec, "windows")
        runner = FakeRunner(outputs, under_wine)
        timers.measure_model(sec, "windows.", self.variants, runner)
        return sec, runner

    def test_rows_only_for_windows(self):
        sec = figures.Section("timers")
        timers.timer_rows(sec, "linux")
        timers.timer_rows(sec, "windows")
        ids = [row["id"] for row in sec.data["rows"]]
        for rid in ("windows.arming.1ms", "windows.arming.100ms",
                    "windows.arming.1s", "windows.arming.none",
                    "windows.model.median1", "windows.io.steady.calls",
                    "windows.io.bursts.spurious", "windows.stale.spurious",
                    "windows.real.median1", "windows.real.arming.1ms",
                    "windows.real.io.steady.spurious"):
            self.assertIn(rid, ids)
        self.assertFalse([i for i in ids if i.startswith("linux.arming")])
        row = sec.rows["windows.arming.1ms"]
        self.assertEqual(row["kind"], "count")
        self.assertIn(row["kind"], figures.KINDS)
        self.assertIn("model", row["label"])
        self.assertIn("kernel's own calls",
                      sec.rows["windows.real.median1"]["label"])

    def test_figures_of_both_variants(self):
        sec, runner = self.measure({name: (0, MODEL_OUT[name])
                                    for name in figures.VARIANTS})
        self.assertEqual(sorted(runner.calls), sorted(
            ("%s-timer_model.exe" % name, [case])
            for name in figures.VARIANTS for case in timers.MODEL_CASES))
        rows = self.rows(sec)
        self.assertEqual(rows["windows.arming.1ms"]["patched"], [2.9])
        self.assertEqual(rows["windows.arming.1s"]["patched"], [0.0])
        self.assertEqual(rows["windows.arming.1s"]["base"], [0.0])
        self.assertEqual(rows["windows.io.steady.calls"]["patched"], [1.4])
        self.assertEqual(rows["windows.io.bursts.spurious"]["base"], [0.0])
        self.assertEqual(rows["windows.stale.spurious"]["patched"], [0])
        # The base's proof fails, and its median is kept all the same.
        self.assertEqual(rows["windows.model.median1"]["base"], [15.5])
        self.assertIsNone(rows["windows.arming.1s"]["why"])
        self.assertIn("real Windows", rows["windows.real.median1"]["why"])
        self.assertTrue(any("model" in n for n in sec.data["notes"]))

    def test_real_windows_lines(self):
        out = {name: dict(MODEL_OUT[name]) for name in figures.VARIANTS}
        for name in figures.VARIANTS:
            out[name]["real_windows"] = (
                '{"bench": "timer_model_median", "timeout_ms": 1, '
                '"median_ms": 1.1, "model": false}\n'
                '{"bench": "timer_model_arming", "timer": "1s", '
                '"calls_per_poll": 0.0, "model": false}\n'
                'ok real_windows\n')
        sec, runner = self.measure({name: (0, out[name])
                                    for name in figures.VARIANTS},
                                   under_wine=False)
        self.assertIn(("patched-timer_model.exe", ["real_windows"]),
                      runner.calls)
        rows = self.rows(sec)
        self.assertEqual(rows["windows.real.median1"]["patched"], [1.1])
        self.assertEqual(rows["windows.real.arming.1s"]["base"], [0.0])
        # The model's figures stay in their own rows.
        self.assertEqual(rows["windows.model.median1"]["patched"], [1.3])

    def test_failed_run_says_why(self):
        sec, _ = self.measure({"base": (0, MODEL_OUT["base"]),
                               "patched": (1, "not ok arming_cost: x\n")})
        rows = self.rows(sec)
        self.assertEqual(rows["windows.arming.1ms"]["base"], [0.0])
        self.assertEqual(rows["windows.arming.1ms"]["patched"], [])
        self.assertTrue(rows["windows.arming.1ms"]["why"])
        self.assertTrue(any("exited with 1" in n
                            for n in sec.data["notes"]))

    def test_no_figures_printed(self):
        sec = figures.Section("timers")
        timers.timer_rows(sec, "windows")
        self.assertEqual(timers.add_model(
            sec, "windows.", "patched",
            [{"bench": "timer_model_arming", "timer": "1ms",
              "calls_per_poll": True}, {"bench": "other"},
             {"bench": "timer_model_arming", "timer": "2h",
              "calls_per_poll": 1.0}]), 0)
        sec, _ = self.measure({name: (0, "skip arming_cost: x\n{}\n")
                               for name in figures.VARIANTS})
        why = self.rows(sec)["windows.arming.none"]["why"]
        self.assertIn("no sample", why)

    def test_render_shows_figures(self):
        report = sample_report()
        sec, _ = self.measure({name: (0, MODEL_OUT[name])
                               for name in figures.VARIANTS})
        report["sections"][0] = sec.finish()
        text = render.render(report)
        self.assertIn("calls per blocking poll, 1 s timer", text)
        self.assertIn("spurious wake-ups per second", text)


class SvgTest(unittest.TestCase):
    def parse(self, text):
        root = ET.fromstring(text)
        self.assertEqual(root.tag, SVG_NS + "svg")
        return root

    def test_histogram_is_valid_svg(self):
        root = self.parse(svg.histogram(
            "lateness <1 ms> & more", "µs",
            [("base", [1.0, 2.0, 2.5, 100.0]), ("patched", [1.0, 1.1])]))
        rects = root.findall(SVG_NS + "rect")
        self.assertGreater(len(rects), 4)
        self.assertEqual(root.find(SVG_NS + "title").text,
                         "lateness <1 ms> & more")

    def test_histogram_clips_outliers(self):
        text = svg.histogram("t", "x", [("base", [1.0, 2.0, 3.0] * 50
                                         + [9000.0]),
                                        ("patched", [1.5] * 100)])
        self.parse(text)
        self.assertIn("last bin also holds 1 value(s) above 3 (max 9000)",
                      text)

    def test_histogram_edge_cases(self):
        self.parse(svg.histogram("empty", "x", [("base", []),
                                                ("patched", [])]))
        self.parse(svg.histogram("one value", "x", [("base", [3.0] * 5),
                                                    ("patched", [])]))
        self.parse(svg.histogram("negative", "x", [("base", [-5, 5])]))

    def test_bars_is_valid_svg(self):
        root = self.parse(svg.bars("per iteration", "iteration", "n",
                                   [("base", [40, 40, 20]),
                                    ("patched", [32, 32, 32, 4])]))
        texts = [t.text for t in root.iter(SVG_NS + "text")]
        self.assertIn("40", texts)
        self.assertIn("4", texts)
        self.parse(svg.bars("nothing", "x", "y", [("base", [])]))
        self.parse(svg.bars("zeros", "x", "y", [("base", [0, 0])]))


class RenderTest(unittest.TestCase):
    def test_markdown(self):
        md = render.render(sample_report())
        self.assertIn("| CPU | Test CPU 3000 |", md)
        self.assertIn("commit `" + "8fb9" * 10 + "`", md)
        self.assertIn("| `0001-a.patch` | `" + "ab" * 8 + "` |", md)
        for title in figures.TITLES.values():
            self.assertIn("## " + title, md)
        self.assertIn("`0002-unix-udp-exact-receive-budget.patch`", md)
        self.assertIn("110 (100–120) | 55.0 (50.0–60.0) | 0.50× |", md)
        self.assertIn("| 1000000 | 3 | 3e-06× |", md)
        self.assertIn("not measured: Windows under Wine: wine not found",
                      md)
        self.assertIn("| 40 | 32 | 0.80× |", md)
        self.assertIn("- recvmmsg, base: 40 40 20", md)
        self.assertIn("- recvmmsg, patched: 32 32 32 4", md)
        self.assertIn("| 2.00 (1.50–2.50) | 2 |", md)
        self.assertIn("Nothing here is asserted", md)
        # Every table row has as many cells as its header.
        for line in md.splitlines():
            if line.startswith("| ") and "not measured" in line:
                self.assertIn(line.count("|"), (5, 6))

    def test_write_and_check(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        md = os.path.join(tmp, "report.md")
        path = render.write_report(sample_report(), md)
        self.assertEqual(path, os.path.join(tmp, "report.json"))
        data = analyse.load_report(path)
        names = sorted(p["file"] for p in data["plots"])
        self.assertEqual(names, ["timer-1ms-linux.svg",
                                 "udp-per-iteration-recvmmsg.svg"])
        for name in names:
            ET.parse(os.path.join(tmp, name))
            with open(md, encoding="utf-8") as f:
                self.assertIn("(%s)" % name, f.read())
        problems = [p for p in analyse.check_report(data, md) if p[1]]
        checked = analyse.check_report(data, md)
        self.assertIn(("udp", None, "all 1 figures measured"), checked)
        self.assertIn(("timers", None, "1 of 44 figures measured, the "
                       "rest say why"), checked)
        self.assertEqual(problems, [])
        self.assertEqual(sorted(os.listdir(tmp)),
                         sorted(names + ["report.json", "report.md"]))

    def test_check_finds_a_missing_section(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        report = sample_report()
        report["sections"] = report["sections"][:2]
        md = os.path.join(tmp, "report.md")
        data = analyse.load_report(render.write_report(report, md))
        problems = {p[0]: p[1] for p in analyse.check_report(data, md)}
        self.assertEqual(problems["errqueue"], "missing from report.json")
        self.assertIsNone(problems["udp"])


class CompareTest(unittest.TestCase):
    def test_differences(self):
        old = sample_report()
        new = copy.deepcopy(old)
        new["machine"]["cpu"] = "Other CPU"
        rows = {r["id"]: r for r in new["sections"][2]["rows"]}
        rows["idle.iterations"]["patched"] = [6]
        new["sections"][2]["rows"].append(
            {"id": "idle.cpu", "label": "cpu", "unit": "s", "kind": "cpu",
             "better": "lower", "base": [1], "patched": [1], "why": None})
        del new["sections"][3]["rows"][0]
        text = analyse.compare(old, new)
        self.assertIn("machine cpu: Test CPU 3000 -> Other CPU", text)
        self.assertIn("errqueue.idle.iterations (iterations): base 1000000 "
                      "-> 1000000 (+0.0%); patched 3 -> 6 (+100.0%)", text)
        self.assertIn("errqueue.idle.cpu: only in the new report", text)
        self.assertIn("tool.apply.wall: only in the old report", text)
        self.assertIn("timers.windows.oneshot1.p50 (µs): base not measured "
                      "in either", text)

    def test_skipped_section(self):
        old = sample_report()
        new = copy.deepcopy(old)
        new["sections"][0]["skipped"] = "not measured: --only udp"
        new["sections"][0]["rows"] = []
        text = analyse.compare(old, new)
        self.assertIn("timers: not measured in the new report (not "
                      "measured: --only udp)", text)
        self.assertNotIn("timers.linux", text)

    def test_same_report(self):
        report = sample_report()
        text = analyse.compare(report, copy.deepcopy(report))
        self.assertNotIn("machine", text)
        self.assertIn("tool.apply.wall (s): 2.00 -> 2.00 (+0.0%)", text)


class CompareCommandTest(World):
    def report_file(self, name, data):
        path = os.path.join(self.tmp, name)
        write(path, data if isinstance(data, str) else json.dumps(data))
        return path

    def test_two_reports(self):
        a = self.report_file("a.json", sample_report())
        b = self.report_file("b.json", sample_report())
        res = self.tool("bench", "--compare", a, b)
        self.assertOk(res)
        self.assertIn("udp.seq.recvmmsg.max (datagrams): base 40 -> 40",
                      res.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.out, "bench")))

    def test_missing_file(self):
        good = self.report_file("a.json", sample_report())
        res = self.tool("bench", "--compare",
                        os.path.join(self.tmp, "nope.json"), good)
        self.assertFails(res, "cannot read", "nope.json")
        self.assertEqual(res.returncode, 2)

    def test_not_json(self):
        bad = self.report_file("bad.json", "this is not json {")
        res = self.tool("bench", "--compare", bad, bad)
        self.assertFails(res, "bad.json is not JSON")

    def test_wrong_schema(self):
        good = self.report_file("a.json", sample_report())
        for data, fragment in (
                ([1, 2], "the top level is not an object"),
                ({"schema": 1}, "schema is 1"),
                (dict(sample_report(), sections="x"), "sections is"),
                (dict(sample_report(), sections=[{"id": "udp"}]),
                 "lacks id, title or rows")):
            bad = self.report_file("wrong.json", data)
            res = self.tool("bench", "--compare", good, bad)
            self.assertFails(res, "is not a bench report", fragment)
        report = sample_report()
        report["sections"][1]["rows"][0]["base"] = ["fast"]
        bad = self.report_file("wrong.json", report)
        self.assertFails(self.tool("bench", "--compare", bad, good),
                         "not a list of numbers")

    def test_bad_old_report_costs_no_measuring(self):
        res = self.tool("bench", "--compare",
                        os.path.join(self.tmp, "nope.json"))
        self.assertFails(res, "cannot read")
        self.assertNotIn("=== build", res.stderr)

    def test_three_files(self):
        a = self.report_file("a.json", sample_report())
        self.assertFails(self.tool("bench", "--compare", a, a, a),
                         "--compare takes")

    def test_bad_report_name(self):
        res = self.tool("bench", "--report",
                        os.path.join(self.tmp, "report.txt"))
        self.assertFails(res, "the report is Markdown")
        self.assertNotIn("=== build", res.stderr)


if __name__ == "__main__":
    unittest.main()
