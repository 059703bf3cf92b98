"""bench --only dns-insn: instructions per answered query of named -n 1
and kresd, for the base unpatched and for each prefix of the series that
touches Linux, so each patch's price shows as a delta.

Each prefix is checked out of out/<base>/src (as check --bisect does,
rewriting only what the next patch changes, so ccache and ninja rebuild
little)
and installed by `build --prefix`'s code into
out/<base>/bench/dns/insn/prefix-NN. The servers are those of bench
--only dns (same zone, hints, queries, private network namespace, the
mapped libuv proven), run under valgrind's callgrind.

Why callgrind with its instrumentation switched on only around the
measured pass: this virtual machine has no hardware counters (perf stat
says <not supported>), and a count over the whole process would be
dominated by what the patches do not touch: named's zone load and
kresd's Lua start-up, and their shut-down, are many times the query
phase. --instr-atstart=no starts the server uncounted; a warm-up pass
(uncounted) brings it to a steady state; `callgrind_control -z` and
`-i on` open the window, exactly one dnsperf pass of the query file
runs at a rate valgrind keeps up with, `-i off` and `-d` close it and
dump. dnsperf's answered count must equal the file's queries. The
rate is low (QPS below): the figure is that of a server answering one
query a loop iteration, which a run repeats to 0.3%; under saturation
(bench --only dns) the batches, and so the figure, move with the load.
"""

import datetime
import glob
import os
import subprocess
import tempfile
import time

from .. import console
from ..errors import UvPatchError, EXIT_FAILURE, EXIT_USAGE
from ..fsutil import remove_tree, write_atomic
from .dnsbench import (HOSTS, Server, Unmeasured, missing, report_folder,
                       versions, write_inputs, write_report)
from .dnsparse import FLOOD_ADDR, query_lines
from .insnparse import (SCHEMA, SERVERS, library_blob, parse_callgrind,
                        render, run_figures, steps)
from .measure import machine, source_info

FULL = {"reps": 2, "queries": 2000}
# --quick: the base and the whole series, one run each, fewer queries.
QUICK = {"reps": 1, "queries": 1000}
# The counted pass: slow enough that named under callgrind answers each
# query before the next comes, one loop iteration a query. At 1000 QPS
# callgrind barely keeps up, it reads several queries a wake-up or one
# depending on the machine's load, and named's count moved by 5% between
# runs of one library; at 250 QPS by 0.3%.
QPS = 250
WARMUP_QPS = 1000    # uncounted: only brings the server to steady state
DUMP_TIMEOUT = 60.0


# --- the prefixes installed ---------------------------------------------------

def install_steps(manifest, out, todo, source=None):
    """{step: lib folder} with each step's install, and marks in ``todo``
    the steps whose libuv.so is that of the step before."""
    from ..series.apply import BASE_TAG, apply_series, read_state
    from ..build.cmake import Variant
    from ..build.install import install
    from ..verify.bisect import checkout_prefix
    src = apply_series(manifest, out, source=source)
    applied = read_state(src)["patches"]
    folder = os.path.join(out, "bench", "dns", "insn")
    tree = os.path.join(folder, "tree")
    libs, before = {}, None
    for st in todo:
        k = st["step"]
        commit = applied[k - 1]["commit"] if k else BASE_TAG
        console.note("dns-insn: prefix %d of %d%s" % (
               k, len(manifest.series), ", " + st["patch"] if k else
               " (the base)"))
        checkout_prefix(src, commit, tree)
        variant = Variant(manifest.root, out, "linux", True, "Release",
                          source=tree, label="insn")
        prefix = os.path.join(folder, "prefix-%02d" % k)
        files = install(manifest, variant, prefix,
                        applied=(commit, manifest.series[:k]))
        blob = library_blob(files)
        st["library_blob"] = blob
        st["same_library"] = bool(k and blob and blob == before)
        before = blob
        libs[k] = os.path.join(prefix, "lib")
    return libs


# --- a server under callgrind ---------------------------------------------------

def valgrind_version():
    try:
        return subprocess.run(["valgrind", "--version"], text=True,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL,
                              timeout=30).stdout.strip() or "?"
    except (OSError, subprocess.TimeoutExpired):
        return None


class CallgrindServer(Server):
    """bench --only dns's server, run by valgrind --tool=callgrind with
    its instrumentation off until the window opens."""

    start_timeout = 120.0   # valgrind translates the server's code first

    def __init__(self, kind, threads, work, libdir, label):
        Server.__init__(self, kind, threads, work, libdir, label)
        self.dump_base = os.path.join(work, "callgrind-%s.out" % kind)
        for old in glob.glob(self.dump_base + "*"):
            os.unlink(old)
        self.cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                    "--callgrind-out-file=" + self.dump_base] + self.cmd

    def _is_server(self):
        # Valgrind's tool runs the server in its own process image.
        try:
            exe = os.path.basename(os.path.realpath("/proc/%d/exe"
                                                    % self.pid))
            return exe.startswith("callgrind-") and \
                os.readlink("/proc/%d/ns/net" % self.pid) != \
                os.readlink("/proc/self/ns/net")
        except OSError:
            return False

    def control(self, *args):
        cmd = ["callgrind_control"] + list(args) + [str(self.pid)]
        console.show_command(cmd)
        try:
            res = subprocess.run(cmd, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True,
                                 stdin=subprocess.DEVNULL, timeout=60)
        except subprocess.TimeoutExpired:
            raise Unmeasured("callgrind_control %s timed out" % args[0])
        if res.returncode != 0 or "OK" not in res.stdout:
            raise Unmeasured("callgrind_control %s failed: %s" % (
                " ".join(args), res.stdout.strip()[-200:]))

    def dump(self):
        """Dumps the counts since the window opened; the dump parsed."""
        self.control("-d", "window")
        deadline = time.monotonic() + DUMP_TIMEOUT
        while time.monotonic() < deadline:
            for path in sorted(glob.glob(self.dump_base + ".*")):
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                if "\ntotals:" in text:
                    return parse_callgrind(text)
            time.sleep(0.2)
        raise Unmeasured("callgrind wrote no dump within %d s"
                         % DUMP_TIMEOUT)


def one_run(kind, threads, libdir, cfg, work, label):
    """A fresh server under callgrind: warm-up, one counted pass; the
    run's figures or {"error": why}."""
    server = CallgrindServer(kind, threads, work, libdir, label)
    args = ["-s", FLOOD_ADDR, "-d", cfg["file"], "-n", "1", "-c", "1",
            "-t", "5", "-Q"]
    timeout = cfg["queries"] / float(QPS) + 120
    try:
        library = server.start()
        server.dnsperf(args + [str(WARMUP_QPS)], timeout)  # uncounted
        server.control("-z")
        server.control("-i", "on")
        try:
            perf = server.dnsperf(args + [str(QPS)], timeout)
        finally:
            server.control("-i", "off")
        fig = run_figures(server.dump(), perf, cfg["queries"])
        fig["library"] = library
        return fig
    except Unmeasured as e:
        return {"error": str(e)}
    finally:
        server.stop()


# --- the whole ------------------------------------------------------------------

def measure(manifest, out, folder, quick=False, reps=None, source=None):
    why = missing()
    if why:
        raise UvPatchError("bench --only dns-insn: " + why,
                           hint="apt-get install bind9 knot-resolver "
                                "dnsperf (as ci/install-debian.sh does)",
                           status=EXIT_FAILURE)
    vg = valgrind_version()
    if not vg:
        raise UvPatchError("bench --only dns-insn: valgrind is not "
                           "installed", hint="apt-get install valgrind",
                           status=EXIT_FAILURE)
    cfg = dict(QUICK if quick else FULL)
    if reps:
        cfg["reps"] = reps
    todo, skipped = steps(manifest.series)
    if quick:
        todo = todo[:1] + todo[-1:] if len(todo) > 1 else todo
    libs = install_steps(manifest, out, todo, source)
    os.makedirs(folder, exist_ok=True)
    work = tempfile.mkdtemp(prefix="dns-insn-work-", dir=folder)
    report = {"schema": SCHEMA, "quick": quick, "reps": cfg["reps"],
              "queries": cfg["queries"], "qps": QPS,
              "created": datetime.datetime.now(datetime.timezone.utc)
              .strftime("%Y-%m-%d %H:%M UTC"),
              "machine": machine(False), "source": source_info(manifest),
              "tools": versions(), "valgrind": vg, "steps": todo,
              "skipped": skipped, "runs": [], "notes": []}
    try:
        write_inputs(work, quick)
        cfg["file"] = os.path.join(work, "insn-queries.txt")
        write_atomic(cfg["file"], query_lines(HOSTS, cfg["queries"]))
        for rep in range(cfg["reps"]):
            # Odd runs go backwards: a drift falls on every prefix.
            order = todo if rep % 2 == 0 else todo[::-1]
            for st in order:
                for sid, name in SERVERS:
                    kind, threads = ("named", 1) if sid == "named1" \
                        else ("kresd", None)
                    tag = st["patch"][:4] if st["patch"] else "base"
                    console.note("dns-insn: %s on %s, run %d of %d" % (
                           name, tag, rep + 1, cfg["reps"]))
                    fig = one_run(kind, threads, libs[st["step"]], cfg,
                                  work, "%s (%s)" % (name, tag))
                    fig.update(step=st["step"], server=sid, rep=rep)
                    report["runs"].append(fig)
                    if fig.get("error"):
                        report["notes"].append("%s on %s, run %d: %s" % (
                            name, tag, rep + 1, fig["error"]))
        return report
    finally:
        remove_tree(work)


def run(manifest, out, quick=False, reps=None, report_path=None,
        source=None):
    """Writes dns-insn-report.json and dns-insn-report.md next to
    --report (default out/<base>/bench); returns the Markdown."""
    if reps is not None and reps < 1:
        raise UvPatchError("--pairs %d: at least one run" % reps,
                           status=EXIT_USAGE)
    folder = report_folder(out, report_path)
    report = measure(manifest, out, folder, quick=quick, reps=reps,
                     source=source)
    return write_report(folder, "dns-insn-report", report, render(report),
                        ".md")
