"""bench --only dns: real DNS servers on the base's and the patched
libuv.so.1, side by side.

BIND 9's named (authoritative for a generated zone, -n 1 and -n 2) and
Knot Resolver's kresd (the zone's names as hints, the others denied)
run with LD_LIBRARY_PATH on a prefix that `build --prefix` code installs
into out/<base>/bench/dns/prefix-<variant>; /proc/PID/maps must show
that prefix's libuv.so.1 mapped, or the bench stops. Each server runs
in a network namespace of its own (unshare --net: loopback only, with
127.0.0.2 added), and dnsperf joins it (nsenter --net). Base and patched
take turns, a fresh server each run (base first in even pairs).

Per run: dnsperf's QPS at saturation and its lost queries, the server's
utime+stime from /proc/PID/stat per answered query, instructions per
query where `perf stat -e instructions` counts, and the namespace's Udp
RcvbufErrors (/proc/PID/net/snmp). The benefit: named -n 1 with a flood
on 127.0.0.1 and a victim at 200 QPS on 127.0.0.2; the victim's latency
(from dnsperf -v, per query) and losses. Generated files go in a
temporary folder under out/<base>/bench, removed at the end.
"""

import datetime
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from .. import console
from .figures import rounds
from .measure import machine, source_info
from .dnsparse import (FLOOD_ADDR, SCHEMA, VARIANTS, VICTIM_ADDR,
                       hosts_text, kresd_conf, named_conf, parse_dnsperf,
                       parse_maps, parse_perf, parse_snmp, parse_stat,
                       price_figures, query_lines, render, rows,
                       victim_figures, zone_text)
from ..errors import UvPatchError, EXIT_FAILURE, EXIT_USAGE
from ..fsutil import remove_tree, write_atomic

TOOLS = (("named", "bind9"), ("kresd", "knot-resolver"),
         ("dnsperf", "dnsperf"))
FULL = {"pairs": 8, "seconds": 5.0}
QUICK = {"pairs": 1, "seconds": 2.0}
HOSTS = 10000
QUERIES = 50000
VICTIM_QPS = 200
START_TIMEOUT = 20.0
# The flood: 8 sockets (so SO_REUSEPORT spreads them over named's
# workers), 400 queries outstanding, a query lost after 1 s.
FLOOD = ["-c", "8", "-q", "400", "-t", "1"]
# Run in the new namespace before the server: loopback up, and the
# victim's address.
NS_SETUP = 'ip link set lo up && ip addr add %s/8 dev lo && exec "$0" "$@"' \
    % VICTIM_ADDR
# name: (server, named's -n, what it measures)
SCENARIOS = (("named1", "named", 1, "price"),
             ("named2", "named", 2, "price"),
             ("kresd", "kresd", None, "price"),
             ("victim", "named", 1, "victim"))


class Unmeasured(Exception):
    """One run gave no figures; the message says why."""


# --- --only ------------------------------------------------------------------

DNS_PARTS = ("dns", "dns-insn")


def split_only(values):
    """(the other parts, or None for none asked, the DNS parts asked:
    a list of DNS_PARTS) from --only's values."""
    if not values:
        return None, []
    others, dns = [], []
    for value in values:
        for name in value.split(","):
            name = name.strip()
            if name in DNS_PARTS:
                if name not in dns:
                    dns.append(name)
            elif name:
                others.append(name)
    return (others or None), dns


# --- what the machine has -------------------------------------------------------

def missing():
    """None, or one line saying what this machine lacks for the DNS
    bench."""
    if not os.path.isdir("/proc/self/ns"):
        return "needs Linux (network namespaces and /proc)"
    lacking = ["%s (Debian package %s)" % (exe, pkg) for exe, pkg in TOOLS
               if not _which(exe)]
    lacking += [exe for exe in ("unshare", "nsenter", "ip")
                if not _which(exe)]
    if lacking:
        return "not installed: %s; ci/install-debian.sh installs them" \
            % ", ".join(lacking)
    try:
        ok = subprocess.run(["unshare", "--net", "--", "true"],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                            timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return None if ok else "no private network namespace here (unshare " \
        "--net needs root)"


def _which(exe):
    # named and kresd live in sbin, which a user's PATH may lack.
    return shutil.which(exe) or shutil.which(
        exe, path=os.pathsep.join(("/usr/sbin", "/sbin", "/usr/bin")))


def versions():
    out = {}
    for exe, args, marker in (("named", ["-v"], "BIND"),
                              ("kresd", ["--version"], "version"),
                              ("dnsperf", ["-h"], "Version")):
        try:
            res = subprocess.run([_which(exe)] + args, text=True,
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, timeout=30)
            lines = [ln.strip() for ln in res.stdout.splitlines()
                     if marker in ln]
            out[exe] = lines[0] if lines else "?"
        except (OSError, TypeError, subprocess.TimeoutExpired):
            out[exe] = "?"
    return out


def perf_check():
    """(True, None) when `perf stat -e instructions` counts here, else
    (False, why)."""
    if not shutil.which("perf"):
        return False, "perf is not installed (Debian package linux-perf)"
    try:
        res = subprocess.run(["perf", "stat", "-x,", "-e", "instructions",
                              "--", "true"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, "perf stat failed: %s" % e
    count, why = parse_perf(res.stderr)
    if count is None and "not supported" in (why or ""):
        why += " (no hardware counters here: a virtual machine?)"
    return count is not None, why


# --- the libuv under test ------------------------------------------------------

def install_prefixes(manifest, out, source=None):
    """{variant: lib folder}: base and patched installed by build
    --prefix's code into out/<base>/bench/dns/prefix-<variant>."""
    from ..series.apply import apply_series, export_base
    from ..build.cmake import Variant
    from ..build.install import install
    libs = {}
    for name in VARIANTS:
        patched = name == "patched"
        apply_series(manifest, out, source=source)
        if not patched:
            export_base(out)
        variant = Variant(manifest.root, out, "linux", patched, "Release")
        prefix = os.path.join(out, "bench", "dns", "prefix-" + name)
        install(manifest, variant, prefix)
        libs[name] = os.path.join(prefix, "lib")
    return libs


def check_mapped(pid, libdir, what):
    """The path of the libuv mapped by ``pid``; UvPatchError unless it is
    ``libdir``'s libuv.so.1."""
    want = os.path.realpath(os.path.join(libdir, "libuv.so.1"))
    with open("/proc/%d/maps" % pid, encoding="utf-8",
              errors="replace") as f:
        mapped = parse_maps(f.read())
    real = [os.path.realpath(p) for p in mapped]
    if real != [want]:
        raise UvPatchError(
            "%s maps %s, not %s" % (what, " and ".join(mapped) or
                                    "no libuv at all", want),
            hint="LD_LIBRARY_PATH did not win: the server has an RPATH, is "
                 "statically linked, or the install is broken; the bench "
                 "measures nothing it cannot prove", status=EXIT_FAILURE)
    return mapped[0]


# --- one server -------------------------------------------------------------

class Server:
    """A server in a network namespace of its own, on one libuv."""

    start_timeout = START_TIMEOUT

    def __init__(self, kind, threads, work, libdir, label):
        self.kind, self.label, self.work = kind, label, work
        self.libdir = libdir
        self.exe = os.path.realpath(_which(kind))
        if kind == "named":
            self.cmd = [self.exe, "-f", "-n", str(threads), "-c",
                        os.path.join(work, "named.conf")]
            self.addrs = (FLOOD_ADDR, VICTIM_ADDR)
        else:
            rundir = os.path.join(work, "kresd")
            os.makedirs(rundir, exist_ok=True)
            self.cmd = [self.exe, "-n", "-q", "-c",
                        os.path.join(work, "kresd.conf"), rundir]
            self.addrs = (FLOOD_ADDR,)
        self.child = None
        self.log = os.path.join(work, "server.log")

    def start(self):
        env = dict(os.environ, LD_LIBRARY_PATH=self.libdir)
        cmd = ["unshare", "--net", "--", "sh", "-c", NS_SETUP] + self.cmd
        console.show_command(cmd)
        with open(self.log, "wb") as log:
            self.child = subprocess.Popen(
                cmd, env=env, cwd=self.work, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        self.pid = self.child.pid
        deadline = time.monotonic() + self.start_timeout
        # Until the exec: before it, /proc/PID/ns/net may still be ours.
        while not self._is_server():
            self._alive_before(deadline)
            time.sleep(0.02)
        for addr in self.addrs:
            while True:
                self._alive_before(deadline)
                try:
                    if self.dnsperf(["-s", addr, "-d", self.probe(),
                                     "-n", "1", "-t", "1"],
                                    10)["completed"] >= 1:
                        break
                except Unmeasured:
                    pass
                time.sleep(0.1)
        return check_mapped(self.pid, self.libdir, self.label)

    def _is_server(self):
        try:
            return os.path.realpath("/proc/%d/exe" % self.pid) == self.exe \
                and os.readlink("/proc/%d/ns/net" % self.pid) != \
                os.readlink("/proc/self/ns/net")
        except OSError:
            return False

    def _alive_before(self, deadline):
        if self.child.poll() is not None:
            raise Unmeasured("%s exited with %s: %s" % (
                self.label, self.child.returncode, self.log_tail()))
        if time.monotonic() > deadline:
            raise Unmeasured("%s did not answer within %d s: %s" % (
                self.label, self.start_timeout, self.log_tail()))

    def log_tail(self):
        try:
            with open(self.log, encoding="utf-8", errors="replace") as f:
                lines = [ln.strip() for ln in f if ln.strip()]
        except OSError:
            lines = []
        return lines[-1][:200] if lines else "no output"

    def probe(self):
        return os.path.join(self.work, "probe.txt")

    def netns(self, cmd):
        if not self._is_server():
            raise Unmeasured("%s is gone" % self.label)
        return ["nsenter", "--net=/proc/%d/ns/net" % self.pid, "--"] + cmd

    def dnsperf(self, args, timeout, verbose_file=None):
        """Runs dnsperf in the server's namespace; its parsed figures."""
        cmd = self.netns(["dnsperf"] + args)
        console.show_command(cmd)
        with tempfile.TemporaryFile(dir=self.work) as out:
            try:
                code = subprocess.run(cmd, stdout=out,
                                      stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL,
                                      timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                raise Unmeasured("dnsperf timed out after %d s" % timeout)
            out.seek(0)
            text = out.read().decode(errors="replace")
        try:
            return parse_dnsperf(text)
        except ValueError as e:
            raise Unmeasured("dnsperf exited with %s: %s (%s)" % (
                code, e, text.strip().splitlines()[-1:] or ""))

    def cpu_ticks(self):
        with open("/proc/%d/stat" % self.pid, encoding="utf-8",
                  errors="replace") as f:
            return parse_stat(f.read())

    def rcvbuf_errors(self):
        # The server's /proc/PID/net is its namespace's.
        with open("/proc/%d/net/snmp" % self.pid, encoding="utf-8") as f:
            return parse_snmp(f.read()).get("RcvbufErrors", 0)

    def stop(self):
        if self.child is None:
            return
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.child.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        self.child = None


# --- the runs -----------------------------------------------------------------

def _start_perf(pid):
    cmd = ["perf", "stat", "-x,", "-e", "instructions", "-p", str(pid)]
    console.show_command(cmd)
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True,
                             stdin=subprocess.DEVNULL)
    time.sleep(0.2)  # attached before the load starts
    return child


def _stop_perf(child):
    child.send_signal(signal.SIGINT)
    try:
        _, err = child.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        return None, "perf stat did not stop"
    return parse_perf(err)


def price_run(server, cfg, perf_ok):
    """One saturation run: dnsperf as fast as the server answers."""
    secs = cfg["seconds"]
    ticks, rcvbuf = server.cpu_ticks(), server.rcvbuf_errors()
    perf = _start_perf(server.pid) if perf_ok else None
    try:
        res = server.dnsperf(["-s", FLOOD_ADDR, "-d", cfg["queries"],
                              "-l", "%g" % secs] + FLOOD, secs + 60)
    finally:
        instr, why = _stop_perf(perf) if perf else (None, None)
    fig = price_figures(res, server.cpu_ticks() - ticks,
                        os.sysconf("SC_CLK_TCK"), instr)
    fig["rcvbuf"] = server.rcvbuf_errors() - rcvbuf
    return res, fig, why


def victim_run(server, cfg):
    """The flood on 127.0.0.1 at saturation; meanwhile a victim at 200
    QPS on 127.0.0.2, timed query by query (dnsperf -v)."""
    secs = cfg["seconds"]
    rcvbuf = server.rcvbuf_errors()
    results = {}
    flood_cmd = ["-s", FLOOD_ADDR, "-d", cfg["queries"], "-l",
                 "%g" % (secs + 1.0)] + FLOOD
    victim_cmd = ["-s", VICTIM_ADDR, "-d", cfg["queries"], "-l",
                  "%g" % secs, "-Q", str(VICTIM_QPS), "-c", "1", "-t", "1",
                  "-v"]
    errors = []

    def one(key, args, delay):
        time.sleep(delay)
        try:
            results[key] = server.dnsperf(args, secs + 60)
        except Unmeasured as e:
            errors.append(e)
    # The victim starts once the flood runs and stops before it does.
    threads = [threading.Thread(target=one, args=a) for a in
               (("flood", flood_cmd, 0.0), ("victim", victim_cmd, 0.5))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    fig = victim_figures(results["victim"], results["flood"])
    fig["rcvbuf"] = server.rcvbuf_errors() - rcvbuf
    return results["victim"], fig


def write_inputs(work, quick):
    """The zone, hosts file, configurations and query files; returns the
    run settings that name them."""
    zone = os.path.join(work, "uvbench.zone")
    hosts = os.path.join(work, "uvbench.hosts")
    write_atomic(zone, zone_text(HOSTS))
    write_atomic(hosts, hosts_text(HOSTS))
    write_atomic(os.path.join(work, "named.conf"), named_conf(work, zone))
    write_atomic(os.path.join(work, "kresd.conf"), kresd_conf(work, hosts))
    write_atomic(os.path.join(work, "probe.txt"), "h0.uvbench A\n")
    queries = os.path.join(work, "queries.txt")
    write_atomic(queries, query_lines(HOSTS, QUERIES))
    cfg = dict(QUICK if quick else FULL)
    cfg["queries"] = queries
    return cfg


def one_run(sid, kind, threads, what, name, libdir, cfg, perf_ok, work):
    """A fresh server on one libuv, one run; the run's record."""
    label = "%s (%s)" % ("named -n %d" % threads if kind == "named"
                         else kind, name)
    run = {"server": sid, "variant": name}
    server = Server(kind, threads, work, libdir, label)
    try:
        run["library"] = server.start()
        if what == "price":
            res, fig, why = price_run(server, cfg, perf_ok)
            if why:
                run["perf_why"] = why
        else:
            res, fig = victim_run(server, cfg)
        run.update(figures=fig, sent=res["sent"],
                   completed=res["completed"], rcodes=res["rcodes"])
    except Unmeasured as e:
        run["error"] = str(e)
    finally:
        server.stop()
    return run


def measure(manifest, out, folder, quick=False, pairs=None, source=None):
    """The report (a dict) of the DNS bench; generated files go in a
    temporary folder inside ``folder``."""
    why = missing()
    if why:
        raise UvPatchError("bench --only dns: " + why,
                           hint="apt-get install bind9 knot-resolver "
                                "dnsperf (as ci/install-debian.sh does)",
                           status=EXIT_FAILURE)
    libs = install_prefixes(manifest, out, source)
    perf_ok, perf_why = perf_check()
    os.makedirs(folder, exist_ok=True)
    work = tempfile.mkdtemp(prefix="dns-work-", dir=folder)
    try:
        cfg = write_inputs(work, quick)
        if pairs:
            cfg["pairs"] = pairs
        report = {"schema": SCHEMA, "quick": quick, "pairs": cfg["pairs"],
                  "seconds": cfg["seconds"], "hosts": HOSTS,
                  "queries": "%d A queries, about 25%% for names that do "
                             "not exist" % QUERIES,
                  "victim_qps": VICTIM_QPS, "flood": " ".join(FLOOD),
                  "created": datetime.datetime.now(datetime.timezone.utc)
                  .strftime("%Y-%m-%d %H:%M UTC"),
                  "machine": machine(False),
                  "source": source_info(manifest),
                  "tools": versions(), "libraries": {}, "runs": [],
                  "notes": [], "instructions": perf_why or "counted"}
        for sid, kind, threads, what in SCENARIOS:
            console.step("bench dns: %s" % sid)
            for r, name, libdir in rounds(cfg["pairs"], libs):
                console.note("dns %s: %s, pair %d of %d" % (
                       sid, name, r + 1, cfg["pairs"]))
                run = one_run(sid, kind, threads, what, name, libdir, cfg,
                              perf_ok, work)
                run["pair"] = r
                report["runs"].append(run)
                if "library" in run:
                    report["libraries"][name] = run["library"]
                if "error" in run:
                    report["notes"].append("%s %s pair %d: %s" % (
                        sid, name, r + 1, run["error"]))
        perf_errors = [r["perf_why"] for r in report["runs"]
                       if "perf_why" in r]
        instr_why = perf_why if not perf_ok else (
            perf_errors[0] if perf_errors else None)
        report["rows"] = rows(report["runs"], {"instr": instr_why})
        return report
    finally:
        remove_tree(work)


def report_folder(out, report_path):
    """Where dns-report.json goes: beside --report, else out/<base>/bench."""
    return os.path.dirname(os.path.abspath(report_path)) if report_path \
        else os.path.join(out, "bench")


def run(manifest, out, quick=False, pairs=None, report_path=None,
        source=None):
    """The DNS bench; writes dns-report.json and dns-report.txt next to
    --report (default out/<base>/bench) and returns the text."""
    if pairs is not None and pairs < 1:
        raise UvPatchError("--pairs %d: at least one pair" % pairs,
                           status=EXIT_USAGE)
    folder = report_folder(out, report_path)
    report = measure(manifest, out, folder, quick=quick, pairs=pairs,
                     source=source)
    return write_report(folder, "dns-report", report, render(report),
                        ".txt")


def write_report(folder, stem, report, text, suffix):
    """STEM.json and STEM+SUFFIX in FOLDER, each whole or not at all;
    returns the text."""
    json_path = os.path.join(folder, stem + ".json")
    write_atomic(json_path, json.dumps(report, indent=1, sort_keys=True)
                 + "\n")
    write_atomic(os.path.join(folder, stem + suffix), text)
    console.note("wrote %s and %s%s" % (json_path, stem, suffix))
    return text


# --- the test command's check ---------------------------------------------------

def smoke(manifest, out, tally, source=None):
    """`bench --only dns --quick` into a temporary folder of out/: both
    servers answer on both libraries, each proven mapped. SKIPs with one
    line where named, kresd or dnsperf are missing."""
    name = "bench --only dns --quick"
    why = missing()
    if why:
        tally.result("SKIP", name, why)
        return
    console.step(name)
    folder = os.path.join(out, "bench")
    os.makedirs(folder, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="dns-smoke-", dir=folder)
    try:
        report = measure(manifest, out, tmp, quick=True, source=source)
    except UvPatchError as e:
        tally.result("FAIL", name, e.message.splitlines()[0])
        return
    finally:
        remove_tree(tmp)
    for sid, _, _, _ in SCENARIOS:
        runs = [r for r in report["runs"] if r["server"] == sid]
        bad = ["%s: %s" % (r["variant"], r.get("error") or "no answer")
               for r in runs if r.get("error") or not r.get("completed")]
        tally.result("FAIL" if bad or not runs else "PASS",
                     "%s %s" % (name, sid), "; ".join(bad) if bad else
                     "answered %s queries on base and patched, each on its "
                     "own libuv.so.1" % "/".join(str(r["completed"])
                                                 for r in runs))
