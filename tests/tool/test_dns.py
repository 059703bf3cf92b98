"""bench --only dns, the parts that run no server: dnsperf's output,
/proc/PID/stat, maps and net/snmp, perf's CSV, the generated files, the
report's medians and table, --only's split, and the smoke's SKIP."""

import contextlib
import io
import json
import os
import shutil
import tempfile
import unittest
from unittest import mock

from fixture import World  # (and scripts/ on sys.path)

from uvpatchlib import cli
from uvpatchlib.bench import compare, dnsbench, dnsparse, insnparse
from uvpatchlib.errors import UvPatchError

DNSPERF = """DNS Performance Testing Tool
Version 2.10.0

[Status] Command line: dnsperf -s 127.0.0.2 -d q -l 1 -Q 10 -v -t 1
[Status] Sending queries (to 127.0.0.2:53)
> NOERROR h1.uvbench A 0.001307
> NXDOMAIN nx1.nx.uvbench A 0.000568
> T h2.uvbench A
> NOERROR h1.uvbench A 0.000250
[Status] Testing complete (time limit)

Statistics:

  Queries sent:         4
  Queries completed:    3 (75.00%)
  Queries lost:         1 (25.00%)

  Response codes:       NOERROR 2 (66.67%), NXDOMAIN 1 (33.33%)
  Average packet size:  request 33, response 66
  Run time (s):         1.000493
  Queries per second:   2.998522

  Average Latency (s):  0.000708 (min 0.000250, max 0.001307)
  Latency StdDev (s):   0.000340
"""

NO_ANSWER = """Statistics:

  Queries sent:         10
  Queries completed:    0 (0.00%)
  Queries lost:         10 (100.00%)

  Response codes:       
  Average packet size:  request 33, response 0
  Run time (s):         1.000507
  Queries per second:   0.000000

  Average Latency (s):  0.000000 (min 0.000000, max 0.000000)
"""


class DnsperfTest(unittest.TestCase):
    def test_statistics_and_verbose_lines(self):
        got = dnsparse.parse_dnsperf(DNSPERF)
        self.assertEqual((got["sent"], got["completed"], got["lost"]),
                         (4, 3, 1))
        self.assertAlmostEqual(got["qps"], 2.998522)
        self.assertAlmostEqual(got["run_time"], 1.000493)
        self.assertEqual(got["rcodes"], {"NOERROR": 2, "NXDOMAIN": 1})
        self.assertAlmostEqual(got["max_latency"], 0.001307)
        self.assertAlmostEqual(got["min_latency"], 0.000250)
        # The timed-out query (T) has no latency.
        self.assertEqual(got["latencies"], [0.001307, 0.000568, 0.000250])

    def test_nothing_answered(self):
        got = dnsparse.parse_dnsperf(NO_ANSWER)
        self.assertEqual((got["completed"], got["lost"]), (0, 10))
        self.assertEqual(got["rcodes"], {})
        self.assertEqual(got["latencies"], [])

    def test_not_dnsperf(self):
        with self.assertRaises(ValueError):
            dnsparse.parse_dnsperf("dnsperf: invalid option -- 'Z'\n")


class ProcTest(unittest.TestCase):
    def test_stat_with_odd_command_name(self):
        # pid (comm) state ppid pgrp session tty tpgid flags minflt
        # cminflt majflt cmajflt utime stime ...
        line = "4242 (isc (net) 1) S 1 4242 4242 0 -1 4194560 100 0 0 0 " \
               "350 125 0 0 20 0 3 0 1000 0 0\n"
        self.assertEqual(dnsparse.parse_stat(line), 475)

    def test_own_stat(self):
        with open("/proc/self/stat") as f:
            self.assertGreaterEqual(dnsparse.parse_stat(f.read()), 0)

    def test_maps(self):
        maps = (
            "55d0c0000000-55d0c0001000 r--p 00000000 08:01 12 "
            "/usr/sbin/named\n"
            "7f00-7f10 r--p 00000000 08:01 99 /opt/p/lib/libuv.so.1.0.0\n"
            "7f10-7f20 r-xp 00001000 08:01 99 /opt/p/lib/libuv.so.1.0.0\n"
            "7f20-7f30 rw-p 00000000 00:00 0 \n"
            "7f30-7f40 r--p 00000000 08:01 7 /lib/x86_64-linux-gnu/libuv."
            "so.1.0.0 (deleted)\n"
            "7f40-7f50 r--p 00000000 08:01 8 /lib/libuvw.a.txt\n"
            "7f50-7f60 r--p 00000000 08:01 9 /lib/x86_64-linux-gnu/"
            "libc.so.6\n"
            "7ffc-7ffd rw-p 00000000 00:00 0 [stack]\n")
        self.assertEqual(dnsparse.parse_maps(maps),
                         ["/opt/p/lib/libuv.so.1.0.0",
                          "/lib/x86_64-linux-gnu/libuv.so.1.0.0"])
        self.assertEqual(dnsparse.parse_maps(""), [])

    def test_snmp(self):
        text = ("Ip: Forwarding DefaultTTL\nIp: 1 64\n"
                "Udp: InDatagrams NoPorts InErrors OutDatagrams "
                "RcvbufErrors SndbufErrors\n"
                "Udp: 285660 0 7 285660 7 0\n"
                "UdpLite: InDatagrams RcvbufErrors\nUdpLite: 0 0\n")
        udp = dnsparse.parse_snmp(text)
        self.assertEqual(udp["RcvbufErrors"], 7)
        self.assertEqual(udp["InDatagrams"], 285660)
        with self.assertRaises(ValueError):
            dnsparse.parse_snmp("Ip: Forwarding\nIp: 1\n")

    def test_perf(self):
        self.assertEqual(dnsparse.parse_perf(
            "123456789,,instructions:u,1000,100.00,,\n"), (123456789, None))
        count, why = dnsparse.parse_perf(
            "<not supported>,,instructions,0,100.00,,\n")
        self.assertIsNone(count)
        self.assertIn("<not supported>", why)
        count, why = dnsparse.parse_perf("perf: no permission\n")
        self.assertIsNone(count)
        self.assertIn("no permission", why)

    def test_mapped_elsewhere_fails_clearly(self):
        # This Python maps no libuv: the check names what it wanted.
        lib = tempfile.mkdtemp(prefix="uvpatch-test-")
        self.addCleanup(shutil.rmtree, lib, True)
        with self.assertRaises(UvPatchError) as e:
            dnsbench.check_mapped(os.getpid(), lib, "named -n 1 (base)")
        self.assertIn("named -n 1 (base) maps no libuv at all", e.exception
                      .message)
        self.assertIn(os.path.join(os.path.realpath(lib), "libuv.so.1"),
                      e.exception.message)


class GeneratedFilesTest(unittest.TestCase):
    def test_queries(self):
        text = dnsparse.query_lines(1000, 4000, nx_share=0.25, seed=3)
        lines = text.splitlines()
        self.assertEqual(len(lines), 4000)
        self.assertEqual(text, dnsparse.query_lines(1000, 4000,
                                                    nx_share=0.25, seed=3))
        nx = [ln for ln in lines if ".nx.uvbench A" in ln]
        self.assertTrue(900 < len(nx) < 1100, len(nx))
        for line in lines:
            name, qtype = line.split()
            self.assertEqual(qtype, "A")
            self.assertTrue(name.endswith(".uvbench"), name)
            if not name.startswith("nx"):
                self.assertLess(int(name.split(".")[0][1:]), 1000)

    def test_zone_and_hosts_agree(self):
        zone = dnsparse.zone_text(300).splitlines()
        self.assertTrue(zone[1].startswith("@ IN SOA "))
        self.assertIn("h299 IN A 10.0.1.43", zone)
        self.assertIn("10.0.1.43 h299.uvbench", dnsparse.hosts_text(300)
                      .splitlines())
        self.assertEqual(dnsparse.host_address(70000), "10.1.17.112")

    def test_named_conf(self):
        conf = dnsparse.named_conf("/o/b/dns-work-x", "/o/b/z.zone")
        self.assertIn('directory "/o/b/dns-work-x";', conf)
        self.assertIn("listen-on port 53 { 127.0.0.1; 127.0.0.2; };", conf)
        self.assertIn("pid-file none;", conf)
        self.assertIn("recursion no;", conf)
        self.assertIn('zone "uvbench" {', conf)
        self.assertIn('file "/o/b/z.zone";', conf)
        self.assertEqual(conf.count("{"), conf.count("}"))
        self.assertIn('directory "a\\"b";', dnsparse.named_conf('a"b', "z"))

    def test_kresd_conf(self):
        conf = dnsparse.kresd_conf("/o/w", "/o/w/h")
        self.assertIn("net.listen('127.0.0.1', 53, { kind = 'dns' })", conf)
        self.assertIn("hints.add_hosts('/o/w/h')", conf)
        self.assertIn("todname('nx.uvbench.')", conf)
        self.assertIn("'lmdb:///o/w/cache'", conf)


def _run(server, variant, pair, **figures):
    return {"server": server, "variant": variant, "pair": pair,
            "figures": figures, "completed": 10}


class ReportTest(unittest.TestCase):
    def test_figures(self):
        perf = dnsparse.parse_dnsperf(DNSPERF)
        fig = dnsparse.price_figures(perf, 3, 100, instructions=30000)
        # 3 ticks of 10 ms over 3 answered queries: 10 ms each.
        self.assertAlmostEqual(fig["cpu"], 10000.0)
        self.assertAlmostEqual(fig["instr"], 10000.0)
        self.assertEqual(fig["lost"], 1)
        self.assertNotIn("instr", dnsparse.price_figures(perf, 3, 100))
        self.assertNotIn("cpu", dnsparse.price_figures(
            dnsparse.parse_dnsperf(NO_ANSWER), 3, 100))
        victim = dnsparse.victim_figures(perf, perf)
        self.assertAlmostEqual(victim["victim_p50"], 0.568)
        self.assertAlmostEqual(victim["victim_p99"], 1.307)
        self.assertAlmostEqual(victim["victim_max"], 1.307)
        self.assertEqual(victim["victim_lost"], 1)
        # Without -v lines: dnsperf's average stands for the median.
        plain = dict(perf, latencies=[])
        fig = dnsparse.victim_figures(plain, perf)
        self.assertAlmostEqual(fig["victim_p50"], 0.708)
        self.assertNotIn("victim_p99", fig)

    def runs(self):
        runs = []
        for pair, (b, p) in enumerate(((100, 130), (110, 120), (90, 125))):
            runs.append(_run("named1", "base", pair, qps=b, cpu=2.0, lost=0,
                             rcvbuf=pair))
            runs.append(_run("named1", "patched", pair, qps=p, cpu=1.0,
                             lost=0, rcvbuf=0))
        return runs

    def test_rows_medians(self):
        rows = dnsparse.rows(self.runs(), {"instr": "n/a, no counters"})
        by = {(r["server"], r["id"]): r for r in rows}
        qps = by["named1", "qps"]
        self.assertEqual(qps["base"], [100, 110, 90])
        self.assertIsNone(qps["why"])
        self.assertEqual(by["named1", "instr"]["why"], "n/a, no counters")
        self.assertEqual(by["kresd", "qps"]["why"],
                         "no sample (see the notes)")
        report = {"rows": rows}
        table = dnsparse.table(report)
        self.assertIn("100 (90–110)", table)
        self.assertIn("125 (120–130)", table)
        self.assertIn("1.25×", table)
        # Counts stay whole: 0, 1 and 2 RcvbufErrors have a median of 1.
        self.assertIn("1 (0–2)", table)
        self.assertIn("0 (0–0)", table)
        self.assertIn("n/a [1]", table)
        self.assertIn("\n[1] n/a, no counters\n", table)
        # The server is named once, on its first row.
        self.assertEqual(sum(1 for ln in table.splitlines()
                             if ln.startswith("named -n 1 ")), 1)

    def test_render(self):
        report = {"rows": dnsparse.rows(self.runs()), "pairs": 3,
                  "seconds": 5.0, "quick": False,
                  "created": "2026-12-04 01:00 UTC",
                  "source": {"upstream": "v1.50.0"},
                  "machine": {"cpu": "Test CPU", "cores": 2,
                              "kernel": "Linux 6"},
                  "tools": {"named": "BIND 9.18"},
                  "libraries": {"base": "/b/libuv.so.1.0.0",
                                "patched": "/p/libuv.so.1.0.0"},
                  "notes": ["kresd base pair 1: kresd exited"]}
        report["runs"] = self.runs() + [{"server": "named1",
                                         "variant": "patched", "pair": 3,
                                         "error": "exited"}]
        text = dnsparse.render(report)
        self.assertIn("  named -n 1: base 0/0 0/1 0/2; patched 0/0 0/0 0/0 "
                      "x", text)
        self.assertIn("3 interleaved pair(s), 5 s a run", text)
        self.assertIn("patched libuv mapped: /p/libuv.so.1.0.0", text)
        self.assertIn("note: kresd base pair 1: kresd exited", text)


class OnlyTest(unittest.TestCase):
    def test_split(self):
        self.assertEqual(dnsbench.split_only(None), (None, []))
        self.assertEqual(dnsbench.split_only(["dns"]), (None, ["dns"]))
        self.assertEqual(dnsbench.split_only(["udp,dns", "tool"]),
                         (["udp", "tool"], ["dns"]))
        self.assertEqual(dnsbench.split_only(["udp"]), (["udp"], []))
        self.assertEqual(dnsbench.split_only(["dns-insn,dns", "dns"]),
                         (None, ["dns-insn", "dns"]))

    def test_options(self):
        args = cli.parser().parse_args(["bench", "--only", "dns",
                                        "--pairs", "3", "--quick"])
        self.assertEqual((args.only, args.pairs, args.quick),
                         (["dns"], 3, True))
        args = cli.parser().parse_args(["bench", "--only", "dns-insn",
                                        "--compare", "old.json"])
        self.assertEqual((args.only, args.compare),
                         (["dns-insn"], ["old.json"]))

    def test_rounds_interleave(self):
        from uvpatchlib.bench.figures import rounds
        order = [(r, n) for r, n, _ in rounds(2, {"base": 1, "patched": 2})]
        self.assertEqual(order, [(0, "base"), (0, "patched"),
                                 (1, "patched"), (1, "base")])


# A callgrind dump as valgrind 3.19 writes it (name compression on); the
# cost line after calls= is the call's inclusive cost, not added again.
CALLGRIND = """# callgrind format
version: 1
creator: callgrind-3.19.0
cmd:  /usr/sbin/named -f -n 1 -c named.conf
positions: line
events: Ir
summary: 0

ob=(1) /usr/lib/x86_64-linux-gnu/libc.so.6
fl=(1) ???
fn=(1) clock_gettime
0 100
+2 20

ob=(2) /p/lib/libuv.so.1.0.0
fl=(2) ???
fn=(2) uv__udp_io
0 300
cob=(1)
cfi=(1)
cfn=(1)
calls=3 0
0 120
* 5
ob=(1)
fn=(1)
-1 1

totals: 546
"""


class CallgrindTest(unittest.TestCase):
    def test_totals_and_objects(self):
        got = insnparse.parse_callgrind(CALLGRIND)
        self.assertEqual(got["total"], 546)
        self.assertEqual(got["objects"], {
            "/usr/lib/x86_64-linux-gnu/libc.so.6": 121,
            "/p/lib/libuv.so.1.0.0": 305})
        self.assertEqual(got["summed"], 426)
        self.assertEqual(insnparse.libuv_cost(got["objects"]), 305)
        # The call's inclusive 120 is not uv__udp_io's own; fn=(1) after
        # ob=(1) is clock_gettime again, outside libuv.
        self.assertEqual(got["libuv_functions"], {"uv__udp_io": 305})

    def test_functions_named_apart_from_objects(self):
        text = ("events: Ir\nob=(1) /lib/libuv.so.1\nfn=(1) uv_run\n0 4\n"
                "cfn=(2) uv__io_poll\ncalls=1 0\n0 50\nfn=(2)\n0 6\n"
                "fn=(1)\n0 1\ntotals: 11\n")
        got = insnparse.parse_callgrind(text)
        self.assertEqual(got["libuv_functions"],
                         {"uv_run": 5, "uv__io_poll": 6})

    def test_two_positions_and_events(self):
        text = ("positions: instr line\nevents: Dr Ir\n"
                "ob=/lib/libuv.so.1\nfn=f\n0x10 3 7 9\n+4 * 2 5\n"
                "totals: 9 14\n")
        got = insnparse.parse_callgrind(text)
        self.assertEqual(got["total"], 14)
        self.assertEqual(got["objects"], {"/lib/libuv.so.1": 14})

    def test_no_totals_and_no_event(self):
        self.assertIsNone(insnparse.parse_callgrind(
            "events: Ir\nob=(1) /x\nfn=f\n0 5\n")["total"])
        with self.assertRaises(ValueError):
            insnparse.parse_callgrind("events: Dr\ntotals: 1\n")

    def test_run_figures(self):
        dump = insnparse.parse_callgrind(CALLGRIND)
        perf = {"sent": 2, "completed": 2, "lost": 0}
        fig = insnparse.run_figures(dump, perf, 2)
        self.assertEqual((fig["per_query"], fig["libuv_per_query"]),
                         (273.0, 152.5))
        lost = insnparse.run_figures(dump, dict(perf, completed=1, lost=1),
                                     2)
        self.assertNotIn("per_query", lost)
        self.assertIn("1 of 2 queries answered, 1 lost", lost["error"])
        self.assertEqual(fig["libuv_functions_per_query"],
                         {"uv__udp_io": 152.5})
        empty = insnparse.run_figures(dict(dump, total=None), perf, 2)
        self.assertIn("no totals", empty["error"])


def _series(*platforms):
    return [{"file": "%04d-p.patch" % k, "platforms": p}
            for k, p in enumerate(platforms, 1)]


def _insn_report(figures, same=()):
    """figures: {step: {server: [per_query of each run]}}."""
    series = _series(["linux"], ["windows"], ["unix"], ["linux"])
    todo, skipped = insnparse.steps(series)
    for st in todo:
        st["same_library"] = st["step"] in same
    runs = []
    for step, by in figures.items():
        for sid, vals in by.items():
            for rep, v in enumerate(vals):
                run = {"step": step, "server": sid, "rep": rep}
                if v is None:
                    run["error"] = "kresd exited with 1"
                else:
                    run.update(per_query=v, libuv_per_query=v / 10.0,
                               libuv_functions_per_query={
                                   "uv_run": 50.0,
                                   "uv__udp_io": v / 10.0 - 50.0})
                runs.append(run)
    return {"schema": insnparse.SCHEMA, "steps": todo, "skipped": skipped,
            "runs": runs, "source": {"upstream": "v1.50.0"},
            "machine": {"cpu": "Test CPU", "cores": 2, "kernel": "Linux 6"},
            "tools": {"named": "BIND 9.18"}, "valgrind": "valgrind-3.19.0",
            "quick": False, "reps": 2, "queries": 5000, "qps": 1000,
            "created": "2026-12-04 05:00 UTC", "notes": []}


FIGS = {0: {"named1": [1002.0, 998.0], "kresd": [501.0, 499.0]},
        1: {"named1": [1008.0, 1012.0], "kresd": [510.0, 510.0]},
        3: {"named1": [1059.0, 1061.0], "kresd": [None, None]},
        4: {"named1": [1030.0, 1030.0], "kresd": [505.0, 505.0]}}


class InsnTableTest(unittest.TestCase):
    def test_steps_skip_windows_only(self):
        todo, skipped = insnparse.steps(_series(["linux"], ["windows"],
                                                ["unix"], ["macos"]))
        self.assertEqual([(s["step"], s["patch"]) for s in todo],
                         [(0, None), (1, "0001-p.patch"),
                          (3, "0003-p.patch")])
        self.assertEqual(skipped, ["0002-p.patch", "0004-p.patch"])

    def test_library_blob(self):
        files = {"lib/libuv.so": "120000 aaa", "lib/libuv.so.1":
                 "120000 bbb", "lib/libuv.so.1.0.0": "100644 ccc",
                 "lib/libuv.a": "100644 ddd"}
        self.assertEqual(insnparse.library_blob(files), "ccc")
        self.assertIsNone(insnparse.library_blob({}))

    def test_deltas_and_costliest(self):
        report = _insn_report(FIGS)
        got = [(st["step"], v, d) for st, v, d in
               insnparse.deltas(report, "named1")]
        self.assertEqual(got, [(0, 1000.0, None), (1, 1010.0, 10.0),
                               (3, 1060.0, 50.0), (4, 1030.0, -30.0)])
        # kresd's step 3 failed: step 4's delta is against step 1.
        self.assertEqual(insnparse.deltas(report, "kresd")[3][2], -5.0)
        best = insnparse.costliest(report)
        self.assertEqual(best["patch"], "0003-p.patch")
        self.assertEqual(set(best["by"]), {"named1"})
        d, dall, rel = best["by"]["named1"]
        self.assertAlmostEqual(d, 5.0)
        self.assertAlmostEqual(dall, 50.0)
        self.assertAlmostEqual(rel, 50 / 1010.0)
        self.assertEqual(insnparse.spread(report, "named1"), 4.0)
        self.assertIsNone(insnparse.spread(_insn_report(
            {0: {"named1": [5.0]}}), "named1"))

    def test_table_and_summary(self):
        report = _insn_report(FIGS, same=(4,))
        lines = insnparse.table(report)
        self.assertEqual(len(lines), 2 + 4)
        self.assertEqual(lines[2].split(" | ")[:4],
                         ["| base (v1.50.0, unpatched)",
                          "1,000 (1,002, 998)", "", "100"])
        self.assertIn("| `0003-p.patch` | 1,060 (1,059, 1,061) | "
                      "+50 (+4.95%) | 106 | not measured: kresd exited "
                      "with 1 |", lines[4])
        text = insnparse.render(report)
        self.assertIn("inside libuv.so (all that a patch changes): "
                      "`0003-p.patch`, +5 in libuv.so and +50 (+4.95%) in "
                      "all on named -n 1.", text)
        self.assertIn("prefix (instructions per query): named -n 1 4 in "
                      "all, 0 in libuv.so; kresd 2 in all, 0 in", text)
        self.assertIn("its delta is the noise): `0004-p.patch`.", text)
        self.assertIn("against the prefix before: named -n 1: "
                      "`uv__udp_io` +5.", text)
        self.assertIn("no Linux code: `0002-p.patch`", text)
        self.assertIn("5000 A queries", text)

    def test_function_deltas(self):
        report = _insn_report(FIGS)
        self.assertEqual(insnparse.function_deltas(report, 3, "named1"),
                         [("uv__udp_io", 5.0)])
        # kresd's step 3 failed: nothing to say of it, and step 4 is
        # against step 1.
        self.assertIsNone(insnparse.function_deltas(report, 3, "kresd"))
        self.assertEqual(insnparse.function_deltas(report, 4, "kresd"),
                         [])
        self.assertIsNone(insnparse.function_deltas(report, 0, "named1"))
        for run in report["runs"]:
            run.pop("libuv_functions_per_query", None)
        self.assertIsNone(insnparse.function_deltas(report, 3, "named1"))

    def test_no_patch_costs(self):
        report = _insn_report({0: {"named1": [1000.0]},
                               1: {"named1": [990.0]}})
        self.assertIn("none adds any; the largest delta is "
                      "`0001-p.patch`'s, -1 in libuv.so and -10 (-1.00%) "
                      "in all on named -n 1.", insnparse.render(report))
        one = _insn_report({0: {"named1": [1000.0]}})
        self.assertIsNone(insnparse.costliest(one))
        self.assertIn("Costliest patch: none (fewer than two",
                      insnparse.render(one))


class CompareTest(unittest.TestCase):
    def write(self, data):
        folder = tempfile.mkdtemp(prefix="uvpatch-test-")
        self.addCleanup(shutil.rmtree, folder, True)
        path = os.path.join(folder, "r.json")
        with open(path, "w") as f:
            json.dump(data, f)
        return path

    def test_insn_reports(self):
        old = _insn_report(FIGS)
        figs = dict(FIGS)
        figs[3] = {"named1": [1040.0], "kresd": [520.0]}
        new = compare.load(self.write(_insn_report(figs)))
        text = compare.compare(compare.load(self.write(old)), new)
        self.assertIn("0003-p.patch named -n 1 (instr/query): 1060 -> 1040 "
                      "(-1.9%)", text)
        self.assertIn("0003-p.patch kresd (instr/query): not measured -> "
                      "520", text)
        self.assertIn("base named -n 1 (instr/query): 1000 -> 1000 (+0.0%)",
                      text)

    def test_dns_reports(self):
        def report(qps):
            runs = [_run("named1", name, 0, qps=q, lost=0)
                    for name, q in zip(("base", "patched"), qps)]
            return {"schema": dnsparse.SCHEMA, "rows": dnsparse.rows(runs),
                    "machine": {"cpu": "A"}, "source": {"upstream": "v1"},
                    "tools": {"named": "9.18"}}
        old = compare.load(self.write(report((100, 110))))
        new = compare.load(self.write(report((100, 121))))
        self.assertEqual(compare.part(old), "dns")
        text = compare.compare(old, new)
        self.assertIn("named1.qps (1/s): base 100 -> 100 (+0.0%); patched "
                      "110 -> 121 (+10.0%)", text)
        self.assertIn("kresd.qps (1/s): base not measured in either", text)

    def test_refuses_mixed_or_broken(self):
        dns = {"schema": dnsparse.SCHEMA, "rows": [], "machine": {},
               "source": {}}
        with self.assertRaises(UvPatchError) as e:
            compare.compare(dns, _insn_report(FIGS))
        self.assertIn("different kinds (dns and dns-insn)",
                      e.exception.message)
        with self.assertRaises(UvPatchError) as e:
            compare.load(self.write({"schema": insnparse.SCHEMA}))
        self.assertIn("not a whole dns-insn report", e.exception.message)
        with self.assertRaises(UvPatchError) as e:
            compare.load(self.write({"schema": "other"}))
        self.assertIn("is not a bench report", e.exception.message)


class CompareCommandTest(World):
    def dns_file(self, qps):
        runs = [_run("kresd", name, 0, qps=q) for name, q in
                zip(("base", "patched"), qps)]
        path = os.path.join(self.tmp, "dns-%d.json" % qps[1])
        with open(path, "w") as f:
            json.dump({"schema": dnsparse.SCHEMA, "machine": {},
                       "source": {}, "tools": {},
                       "rows": dnsparse.rows(runs)}, f)
        return path

    def test_two_dns_reports(self):
        res = self.tool("bench", "--compare", self.dns_file((50, 60)),
                        self.dns_file((50, 66)))
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("kresd.qps (1/s): base 50 -> 50 (+0.0%); patched 60 "
                      "-> 66 (+10.0%)", res.stdout)

    def test_old_dns_report_needs_the_dns_part(self):
        res = self.tool("bench", "--only", "udp", "--compare",
                        self.dns_file((50, 60)))
        self.assertFails(res, "a dns report, and this run writes none",
                         "--only dns")
        self.assertNotIn("=== build", res.stderr)


class Tally:
    def __init__(self):
        self.lines = []

    def result(self, status, name, why=""):
        self.lines.append((status, name, why))


class SmokeTest(unittest.TestCase):
    def test_skips_with_one_line_without_the_servers(self):
        tally = Tally()
        why = "not installed: named (Debian package bind9)"
        with mock.patch.object(dnsbench, "missing", return_value=why), \
                mock.patch.object(dnsbench, "measure") as measure, \
                contextlib.redirect_stderr(io.StringIO()):
            dnsbench.smoke(None, "/nonexistent", tally)
        self.assertEqual(tally.lines, [("SKIP", "bench --only dns --quick",
                                        why)])
        measure.assert_not_called()

    def test_passes_and_fails_per_server(self):
        out = tempfile.mkdtemp(prefix="uvpatch-test-")
        self.addCleanup(shutil.rmtree, out, True)
        runs = []
        for sid, _, _, _ in dnsbench.SCENARIOS:
            for name in ("base", "patched"):
                runs.append({"server": sid, "variant": name,
                             "completed": 5})
        runs[-1] = {"server": "victim", "variant": "patched",
                    "error": "named -n 1 (patched) exited with 1"}
        tally = Tally()
        with mock.patch.object(dnsbench, "missing", return_value=None), \
                mock.patch.object(dnsbench, "measure",
                                  return_value={"runs": runs}), \
                contextlib.redirect_stderr(io.StringIO()):
            dnsbench.smoke(None, out, tally)
        status = {name.split()[-1]: s for s, name, _ in tally.lines}
        self.assertEqual(status, {"named1": "PASS", "named2": "PASS",
                                  "kresd": "PASS", "victim": "FAIL"})
        # Its temporary folder is gone; nothing was left in out/bench.
        self.assertEqual(os.listdir(os.path.join(out, "bench")), [])


if __name__ == "__main__":
    unittest.main()
