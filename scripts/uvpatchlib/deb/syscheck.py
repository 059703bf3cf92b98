"""Our packages on a trixie system: in a chroot with trixie's bind9,
knot-resolver, nodejs and dnsperf (and Debian's libuv1t64 1.50.0-2 they
brought), apt installs our libuv1t64 and libuv1-dev; named and kresd
answer dnsperf on loopback with our libuv.so.1 mapped; a Node.js script
of UDP sockets and 1 ms timers runs on it; apt goes back to Debian's.

The servers, dnsperf and node run in one shell script in the chroot, in
a network namespace with only loopback; the script prints sections that
``parse_sections`` reads.
"""

import hashlib
import io
import json
import os
import re
import tarfile
import subprocess

from ..bench.dnsparse import (FLOOD_ADDR, hosts_text, kresd_conf, named_conf,
                              parse_dnsperf, parse_maps, query_lines,
                              zone_text)
from ..errors import UvPatchError, EXIT_FAILURE
from ..fsutil import write_atomic
from . import proofs

# The servers and their load, and what builds the regression programs.
PACKAGES = ("bind9, knot-resolver, nodejs, dnsperf, libuv1-dev, gcc, "
            "libc6-dev, cmake, make, iproute2")
WORK = "/uvpatch"
DNS = WORK + "/dns"
KRESD_PORT = 5300
HOSTS = 200
QUERIES = 5000

NODE_SCRIPT = r"""// UDP sockets and 1 ms timers on the system's libuv.
const dgram = require('dgram');
const fs = require('fs');
const maps = fs.readFileSync('/proc/self/maps', 'utf8').split('\n')
  .map(l => l.split(/\s+/)[5]).filter(p => p && /\/libuv[^/]*\.so/.test(p));
// 2,000 echoes, 16 in flight (more would overflow a socket buffer).
const N = 2000, WINDOW = 16, TIMERS = 200;
const a = dgram.createSocket('udp4'), b = dgram.createSocket('udp4');
let sent = 0, got = 0, ticks = 0;
const gaps = [];
const t0 = process.hrtime.bigint();
function done() {
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  gaps.sort((x, y) => x - y);
  console.log(JSON.stringify({libuv: [...new Set(maps)], uv: process.versions.uv,
    sent, got, timers: ticks, median_gap_ms: gaps[gaps.length >> 1], ms}));
  a.close(); b.close();
}
let pending = 2;
function part() { if (--pending === 0) done(); }
function send() {
  if (sent < N) a.send(Buffer.from('ping ' + sent++), b.address().port, '127.0.0.1');
}
b.on('message', (msg, rinfo) => b.send(msg, rinfo.port, rinfo.address));
a.on('message', () => { if (++got === N) part(); else send(); });
b.bind(0, '127.0.0.1', () => a.bind(0, '127.0.0.1', () => {
  for (let i = 0; i < WINDOW; i++) send();
}));
function tick(prev) {
  const now = process.hrtime.bigint();
  if (prev !== undefined) gaps.push(Number(now - prev) / 1e6);
  if (++ticks === TIMERS) return part();
  setTimeout(() => tick(now), 1);
}
tick();
setTimeout(() => {
  console.log('timeout: ' + got + ' of ' + N + ' echoes, ' + ticks + ' timers');
  process.exit(3);
}, 20000).unref();
"""

SERVICES_SCRIPT = r"""set -u
cd %(dns)s
named -f -n 1 -c %(dns)s/named.conf > named.log 2>&1 &
NP=$!
kresd -n -q -c %(dns)s/kresd.conf %(dns)s/kresd > kresd.log 2>&1 &
KP=$!
up() {
  i=0
  while [ $i -lt 200 ]; do
    if dnsperf -s %(addr)s -p "$1" -d probe.txt -n 1 -t 1 2>/dev/null |
        grep -q 'Queries completed: *1 '; then return 0; fi
    i=$((i + 1)); sleep 0.1
  done
  return 1
}
for s in named:53:$NP kresd:%(kport)d:$KP; do
  name=${s%%%%:*}; rest=${s#*:}; port=${rest%%%%:*}; pid=${rest#*:}
  echo "=== $name up"
  up "$port" && echo yes || { echo no; tail -5 $name.log; }
  echo "=== $name maps"
  cat /proc/$pid/maps
  echo "=== $name dnsperf"
  dnsperf -s %(addr)s -p "$port" -d queries.txt -n 1 -t 2 -Q 5000 2>&1
done
echo "=== node"
node %(work)s/udp-timers.js 2>&1
echo "node status $?"
kill $NP $KP 2>/dev/null
wait
"""


README_INSTALL = "apt install -y ./libuv1t64_*.deb ./libuv1-dev_*.deb"


def parse_sections(text):
    """{title: text} of the ``=== title`` sections."""
    found, title = {}, None
    for line in text.splitlines():
        if line.startswith("=== "):
            title = line[4:].strip()
            found[title] = []
        elif title is not None:
            found[title].append(line)
    return {k: "\n".join(v) for k, v in found.items()}


def deb_member(deb, suffix):
    """(name, bytes) of the file of ``deb`` whose path ends in
    ``suffix`` (dpkg-deb's tar, read here)."""
    tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb],
                         stdout=subprocess.PIPE, check=True).stdout

    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        for m in t.getmembers():
            if m.isfile() and m.name.endswith(suffix):
                return m.name.lstrip("."), t.extractfile(m).read()
    raise UvPatchError("%s holds no *%s" % (deb, suffix),
                       hint="the package is broken", status=EXIT_FAILURE)


def write_inputs(session):
    dns = session.path(DNS)
    os.makedirs(os.path.join(dns, "kresd"), exist_ok=True)
    write_atomic(os.path.join(dns, "zone"), zone_text(HOSTS))
    write_atomic(os.path.join(dns, "hosts"), hosts_text(HOSTS))
    write_atomic(os.path.join(dns, "named.conf"),
                 named_conf(DNS, DNS + "/zone"))
    write_atomic(os.path.join(dns, "kresd.conf"),
                 kresd_conf(DNS, DNS + "/hosts", port=KRESD_PORT))
    write_atomic(os.path.join(dns, "probe.txt"), "h0.uvbench A\n")
    write_atomic(os.path.join(dns, "queries.txt"),
                 query_lines(HOSTS, QUERIES))
    write_atomic(session.path(WORK + "/udp-timers.js"), NODE_SCRIPT)
    write_atomic(session.path(WORK + "/services.sh"), SERVICES_SCRIPT % {
        "dns": DNS, "work": WORK, "addr": FLOOD_ADDR, "kport": KRESD_PORT})


def installed(session, packages):
    res = session.run(["dpkg-query", "-W", "-f", "${Package} ${Version}\\n"]
                      + list(packages), capture=True, check=False)
    return dict(line.split(" ", 1) for line in res.stdout.splitlines()
                if " " in line)


def judge_services(text, lib_path, lib_sha, session):
    """[(status, name, why)] of the servers' and node's sections."""
    parts = parse_sections(text)
    results = []
    for name in ("named", "kresd"):
        if parts.get(name + " up", "").strip()[:3] != "yes":
            results.append(("FAIL", name, "did not answer on loopback: %s"
                            % parts.get(name + " up", "no output")
                            .strip()[-200:]))
            continue
        mapped = parse_maps(parts.get(name + " maps", ""))
        why = _ours(mapped, lib_path, lib_sha, session)
        if why:
            results.append(("FAIL", name, why))
            continue
        try:
            perf = parse_dnsperf(parts.get(name + " dnsperf", ""))
        except ValueError as e:
            results.append(("FAIL", name, "dnsperf: %s" % e))
            continue
        ok = perf["completed"] >= 0.99 * perf["sent"] and perf["sent"] > 0
        results.append(("PASS" if ok else "FAIL", name,
                        "%d of %d dnsperf queries answered (%.0f QPS), "
                        "mapping %s" % (perf["completed"], perf["sent"],
                                        perf["qps"], mapped[0])))
    node = parts.get("node", "")
    m = re.search(r"^\{.*\}$", node, re.M)
    status = re.search(r"node status (\d+)", node)
    if not m or not status or status.group(1) != "0":
        results.append(("FAIL", "nodejs", "the UDP and timer script "
                        "failed: %s" % node.strip()[-300:]))
        return results
    info = json.loads(m.group(0))
    why = _ours(info["libuv"], lib_path, lib_sha, session)
    bad = info["got"] != info["sent"] or info["timers"] < 2
    results.append(("FAIL" if why or bad else "PASS", "nodejs", why or
                    "%d of %d UDP echoes, %d timers of 1 ms (median gap "
                    "%.2f ms) in %.0f ms, on libuv %s mapped from %s"
                    % (info["got"], info["sent"], info["timers"],
                       info["median_gap_ms"], info["ms"], info["uv"],
                       info["libuv"][0])))
    return results


def _ours(mapped, lib_path, lib_sha, session):
    """Why ``mapped`` is not our library, or None."""
    if len(mapped) != 1:
        return "maps %s, not one libuv" % (", ".join(mapped) or "no libuv")
    real = os.path.realpath(session.path(mapped[0]))
    if not os.path.isfile(real):
        return "maps %s, not installed by our package" % mapped[0]
    with open(real, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if os.path.basename(mapped[0]) != os.path.basename(lib_path) or \
            digest != lib_sha:
        return "maps %s (sha256 %s), not our %s" % (mapped[0], digest[:12],
                                                    lib_path)
    return None


def check_system(session, ours, debian_version, report, manifest):
    """Installs ``ours`` ({package: .deb path}) in ``session`` (the system
    chroot), runs the services and the proofs of ``manifest``'s series,
    goes back to ``debian_version``; ``report(status, name, why)`` for
    each check."""
    names = sorted(ours)
    for pkg, deb in ours.items():
        session.put(deb, WORK + "/" + os.path.basename(deb))
    lib_path, lib = deb_member(ours["libuv1t64"], ".so.1.0.0")
    lib_sha = hashlib.sha256(lib).hexdigest()
    before = installed(session, names)
    # The README's lines, with -y.
    session.run(["sh", "-c", README_INSTALL], cwd=WORK, log=session.log)
    after = installed(session, names)
    version = _deb_version(ours[names[0]])
    ok = all(after.get(p) == version for p in names)
    report("PASS" if ok else "FAIL", "install",
           "apt install replaced %s with %s" % (
               ", ".join("%s %s" % (p, before.get(p, "(none)"))
                         for p in names), version) if ok else
           "installed: %s" % after)
    write_inputs(session)
    res = session.run(["sh", WORK + "/services.sh"], isolated=True,
                      capture=True, check=False, timeout=300)
    with open(session.log, "a", encoding="utf-8") as f:
        f.write(res.stdout + res.stderr)
    for status, name, why in judge_services(res.stdout, lib_path, lib_sha,
                                            session):
        report(status, name, why)
    why = proofs.build(session, manifest.root)
    if why:
        report("FAIL", "proofs", why)
    else:
        status, text = proofs.judge(proofs.run(session, manifest))
        report(status, "proofs", text)
    session.run(["apt", "install", "-y", "--allow-downgrades"] +
                ["%s=%s" % (p, debian_version) for p in ("libuv1t64",
                                                         "libuv1-dev")],
                log=session.log)
    back = installed(session, names)
    ok = all(back.get(p) == debian_version for p in names)
    shown = ""
    if ok and not why:
        # The same programs on Debian's library: the defects show.
        results = proofs.run(session, manifest)
        shown = "; there %d of the %d proof cases fail" % (
            sum(1 for s, _ in results.values() if s == "FAIL"),
            len(results))
    report("PASS" if ok else "FAIL", "apt back to Debian's",
           "apt install -y --allow-downgrades %s: %s%s" % (
               " ".join("%s=%s" % (p, debian_version) for p in names),
               ", ".join(
                   "%s %s" % kv for kv in sorted(back.items())), shown))


def _deb_version(deb):
    return subprocess.run(["dpkg-deb", "-f", deb, "Version"], text=True,
                          stdout=subprocess.PIPE, check=True).stdout.strip()
