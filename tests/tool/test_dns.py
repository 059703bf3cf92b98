"""bench --only dns, the parts that run no server: dnsperf's output,
/proc/PID/stat, maps and net/snmp, perf's CSV, the generated files, the
report's medians and table, --only's split, and the smoke's SKIP."""

import contextlib
import io
import os
import shutil
import tempfile
import unittest
from unittest import mock

import fixture  # noqa: F401  (puts scripts/ on sys.path)

from uvpatchlib import cli
from uvpatchlib.report import dnsbench, dnsparse
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
        self.assertEqual(dnsbench.split_only(None), (None, False))
        self.assertEqual(dnsbench.split_only(["dns"]), (None, True))
        self.assertEqual(dnsbench.split_only(["udp,dns", "tool"]),
                         (["udp", "tool"], True))
        self.assertEqual(dnsbench.split_only(["udp"]), (["udp"], False))

    def test_options(self):
        args = cli.parser().parse_args(["bench", "--only", "dns",
                                        "--pairs", "3", "--quick"])
        self.assertEqual((args.only, args.pairs, args.quick),
                         (["dns"], 3, True))

    def test_rounds_interleave(self):
        from uvpatchlib.report.figures import rounds
        order = [(r, n) for r, n, _ in rounds(2, {"base": 1, "patched": 2})]
        self.assertEqual(order, [(0, "base"), (0, "patched"),
                                 (1, "patched"), (1, "base")])


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
