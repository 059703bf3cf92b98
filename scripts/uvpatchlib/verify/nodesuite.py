"""A real consumer's own tests on the installed libuv.so.1: Debian
bookworm's Node.js 18 (tests/consumer/node18.json says which packages).

The .debs are fetched with `apt-get download` and unpacked with
`dpkg -x`, never installed. Node's tests come from the Debian source
package's orig tarball, checked against the .dsc, with Debian's one
change to them (the platformTimeout factor of test/common/index.js)
applied from Debian's own patch. Everything is kept under the tool's
cache, so a second run is offline.

Debian's Node loads JavaScript builtins from /usr/share/nodejs: each
test runs in `unshare` with a private mount namespace, where an overlay
adds the unpacked /usr/share over the real one, and a private network
namespace with only loopback. Each test runs with LD_LIBRARY_PATH on
the patched and then on the base install, two at a time.
"""

import concurrent.futures
import fnmatch
import glob
import hashlib
import json
import os
import platform
import queue
import re
import shutil
import signal
import subprocess
import tarfile
import tempfile
import urllib.request

from .. import console, subproc
from ..errors import UvPatchError, EXIT_FETCH
from ..source.cache import cache_root
from ..fsutil import Lock, remove_tree, sha256_file, write_atomic

SPEC = os.path.join("tests", "consumer", "node18.json")
# Node's own runner gives a test 120 s on a fast machine; these take a
# few seconds at most here, and a hung one must not hold the run long.
TEST_TIMEOUT = 60
WORKERS = 2
NETWORK_TIMEOUT = 120

# Runs "$@" with /usr/share overlaid by "$0" and only loopback, up.
SANDBOX_SCRIPT = ('ip link set lo up && mount -t overlay uvpatch-node '
                  '-o "lowerdir=$0:/usr/share" /usr/share && exec "$@"')


def node_cache():
    return os.path.join(cache_root(), "node18")


def load_spec(root):
    with open(os.path.join(root, SPEC), encoding="utf-8") as f:
        return json.load(f)


def unavailable():
    """Why the suite cannot run on this machine, or None."""
    if platform.system() != "Linux" or platform.machine() not in (
            "x86_64", "AMD64"):
        return "Debian's amd64 packages run on Linux x86_64 only"
    for tool in ("unshare", "ip", "dpkg", "tar"):
        if not shutil.which(tool):
            return "%s not found" % tool
    return None


def _debian_mirror():
    """The Debian archive this machine's apt uses (no host is written in
    the tool)."""
    paths = sorted(glob.glob("/etc/apt/sources.list.d/*.sources"))
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split()
                if parts[:1] == ["URIs:"] and len(parts) > 1 and \
                        re.search(r"debian/?$", parts[1]) and \
                        "security" not in parts[1]:
                    return parts[1].rstrip("/")
    if os.path.isfile("/etc/apt/sources.list"):
        with open("/etc/apt/sources.list", encoding="utf-8",
                  errors="replace") as f:
            for line in f:
                parts = line.split()
                if parts[:1] == ["deb"] and "security" not in line:
                    for p in parts[1:]:
                        if "://" in p:
                            return p.rstrip("/")
    return None


def _check_sha(path, want):
    got = sha256_file(path)
    if got != want:
        os.unlink(path)
        raise UvPatchError("%s: sha256 %s, expected %s (removed)"
                           % (path, got, want),
                           hint="run again; if it persists, the archive "
                                "serves other bytes than the pinned ones",
                           status=EXIT_FETCH)


def _download(url, dest):
    console.note("download %s" % os.path.basename(dest))
    tmp = dest + ".part"
    try:
        with urllib.request.urlopen(url, timeout=NETWORK_TIMEOUT) as r, \
                open(tmp, "wb") as f:
            shutil.copyfileobj(r, f)
    except OSError as e:
        remove_tree(tmp)
        raise UvPatchError("cannot download %s: %s" % (url, e),
                           hint="the first run needs Debian's archive; "
                                "later runs use the cache", status=EXIT_FETCH)
    os.replace(tmp, dest)


def _fetch_debs(spec, dl):
    missing = [d for d in spec["debs"]
               if not os.path.isfile(os.path.join(dl, d["file"]))]
    if missing:
        console.note("apt-get download %s" % " ".join(d["package"]
                                                        for d in missing))
        res = subproc.run(["apt-get", "download"] +
                          ["%s=%s" % (d["package"], d["version"])
                           for d in missing], cwd=dl, capture=True,
                          check=False, what="apt-get download")
        if res.returncode != 0:
            raise UvPatchError(
                "apt-get download failed: %s"
                % (res.stderr.strip().splitlines() or ["?"])[-1],
                hint="needs Debian bookworm's archive in apt's sources "
                     "(and `apt-get update`); later runs use the cache",
                status=EXIT_FETCH)
    for d in spec["debs"]:
        _check_sha(os.path.join(dl, d["file"]), d["sha256"])


def _dsc_sha256(dsc_path):
    """{file: sha256} of a .dsc's Checksums-Sha256 field."""
    sums, inside = {}, False
    with open(dsc_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("Checksums-Sha256:"):
                inside = True
            elif inside and line.startswith(" "):
                sha, _, name = line.split()
                sums[name] = sha
            elif inside:
                break
    return sums


def _fetch_source(spec, dl):
    src = spec["source"]
    paths = {k: os.path.join(dl, src[k]) for k in ("dsc", "orig", "debian")}
    if not all(os.path.isfile(p) for p in paths.values()):
        mirror = _debian_mirror()
        if not mirror:
            raise UvPatchError("no Debian archive found in apt's sources",
                               hint="add Debian's archive to "
                                    "/etc/apt/sources.list.d/",
                               status=EXIT_FETCH)
        for k in ("dsc", "orig", "debian"):
            if not os.path.isfile(paths[k]):
                _download("%s/%s/%s" % (mirror, src["pool"], src[k]),
                          paths[k])
    _check_sha(paths["dsc"], src["dsc_sha256"])
    sums = _dsc_sha256(paths["dsc"])
    for k in ("orig", "debian"):
        _check_sha(paths[k], sums[src[k]])
    return paths


def _timeout_hunk(debian_tar, member, target):
    """The part of Debian's patch ``member`` that changes ``target``."""
    with tarfile.open(debian_tar) as tar:
        text = tar.extractfile(member).read().decode()
    parts = re.split(r"(?m)^(?=--- a/)", text)
    for part in parts:
        if part.startswith("--- a/%s\n" % target):
            return part
    raise UvPatchError("%s has no change to %s" % (member, target),
                       status=EXIT_FETCH)


def _unpack(spec, dl, paths, dest):
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=os.path.dirname(dest))
    try:
        root = os.path.join(tmp, "root")
        for d in spec["debs"]:
            subproc.run(["dpkg", "-x", os.path.join(dl, d["file"]), root],
                        what="dpkg -x")
        src = os.path.join(tmp, "src")
        os.makedirs(src)
        top = "node-v18.20.4"
        with tarfile.open(paths["orig"]) as tar:
            names = tar.getnames()
            top = names[0].split("/")[0]
        wanted = ["%s/test/common/*" % top, "%s/test/fixtures/*" % top]
        for folder in spec["tests"]["folders"]:
            wanted += ["%s/%s/test-*%s*" % (top, folder, w)
                       for w in spec["tests"]["words"]]
        # Each member once, by name: a pattern whose members an earlier
        # pattern took, or that has none, would fail tar.
        members = sorted(n for n in names
                         if any(fnmatch.fnmatchcase(n, w) for w in wanted))
        listing = os.path.join(tmp, "members")
        with open(listing, "w", encoding="utf-8") as f:
            f.write("".join(n + "\n" for n in members))
        subproc.run(["tar", "-xJf", paths["orig"], "-C", src,
                     "--strip-components=1", "--no-recursion", "-T", listing],
                    what="tar (Node's tests)")
        hunk = _timeout_hunk(paths["debian"], spec["source"]["timeout_patch"],
                             spec["source"]["timeout_file"])
        subproc.run(["patch", "-s", "-p1", "--forward"], cwd=src, input=hunk,
                    capture=True, what="patch (Debian's platformTimeout)")
        remove_tree(dest)
        os.rename(tmp, dest)
    finally:
        remove_tree(tmp)


def prepare(root):
    """The unpacked Node and its tests in the cache: (root dir, src dir).
    Downloads only what the cache lacks."""
    spec = load_spec(root)
    cache = node_cache()
    dl = os.path.join(cache, "download")
    os.makedirs(dl, exist_ok=True)
    tree = os.path.join(cache, "tree")
    stamp = os.path.join(tree, "uvpatch-unpacked.json")
    with Lock(cache, "node", wait=True, name=".uvpatch.lock"):
        _fetch_debs(spec, dl)
        paths = _fetch_source(spec, dl)
        want = json.dumps(spec, sort_keys=True)
        try:
            with open(stamp, encoding="utf-8") as f:
                fresh = f.read() == want
        except OSError:
            fresh = False
        if not fresh:
            console.note("unpack Node.js 18 and its tests into %s" % tree)
            _unpack(spec, dl, paths, tree)
            write_atomic(stamp, want)
    return os.path.join(tree, "root"), os.path.join(tree, "src")


def select_tests(src, spec):
    found = []
    for folder in spec["tests"]["folders"]:
        for path in sorted(glob.glob(os.path.join(src, folder, "test-*"))):
            name = os.path.basename(path)
            if name.endswith((".js", ".mjs")) and any(
                    w in name for w in spec["tests"]["words"]):
                found.append("%s/%s" % (os.path.basename(folder), name))
    return found


def _flags(path):
    """The `// Flags:` of a test, as Node's tools/test.py reads them."""
    flags = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"//\s+Flags:(.*)", line)
            if m:
                flags += m.group(1).split()
    return flags


def _status(code):
    return "killed by signal %d" % -code if code < 0 \
        else "exit status %d" % code


def _reason(err):
    """The error a failed test printed: its first `...Error...:` line and
    the line after it (an assertion's values), else its last line."""
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    for k, line in enumerate(lines):
        if re.match(r"[A-Za-z]*Error\b.*:", line):
            return " ".join(lines[k:k + 2])
    return lines[-1] if lines else "no output"


class Node:
    """Runs the unpacked node against one libuv install."""

    def __init__(self, node_root, src, lib_dir, work):
        self.node = os.path.join(node_root, "usr", "bin", "node")
        self.share = os.path.join(node_root, "usr", "share")
        libnode = glob.glob(os.path.join(node_root, "usr", "lib", "*",
                                         "libnode.so.*"))
        self.libnode_dir = os.path.dirname(libnode[0]) if libnode else ""
        self.src = src
        self.lib_dir = lib_dir
        self.work = work
        self.sandbox = ["unshare", "-m", "-n"]
        if os.geteuid() != 0:
            self.sandbox.insert(1, "-r")

    def env(self, slot):
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = self.libnode_dir + ":" + self.lib_dir
        tmp = os.path.join(self.work, "tmp%d" % slot)
        os.makedirs(tmp, exist_ok=True)
        env["NODE_TEST_DIR"] = tmp
        env["TEST_THREAD_ID"] = str(slot)
        for name in ("NODE_OPTIONS", "NODE_PATH"):
            env.pop(name, None)
        return env

    def run(self, args, slot=0, timeout=TEST_TIMEOUT, cwd=None):
        cmd = self.sandbox + ["--", "sh", "-c", SANDBOX_SCRIPT, self.share,
                              self.node] + list(args)
        console.show_command(cmd, cwd)
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            child = subprocess.Popen(cmd, cwd=cwd or self.src,
                                     env=self.env(slot),
                                     stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=err, start_new_session=True)
            try:
                code = child.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                code = None
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            child.wait()
            out.seek(0)
            err.seek(0)
            return (code, out.read().decode(errors="replace"),
                    err.read().decode(errors="replace"))

    def test(self, name, slot):
        """(PASS|FAIL|SKIP, why) of one of Node's tests."""
        path = os.path.join(self.src, "test", name)
        code, out, err = self.run(_flags(path) + [path], slot)
        for line in out.splitlines():
            if line.startswith("1..0 # Skipped"):
                return "SKIP", line.split(":", 1)[-1].strip()
        if code == 0:
            return "PASS", ""
        if code is None:
            return "FAIL", "timed out after %d s" % TEST_TIMEOUT
        return "FAIL", ("%s; %s" % (_status(code), _reason(err)))[:240]

    def mapped(self):
        """(process.versions.uv, [libuv files mapped]) of a node process,
        from its /proc/self/maps."""
        code, out, err = self.run([
            "-e", "const m = require('fs').readFileSync('/proc/self/maps',"
            " 'utf8').split('\\n').filter(l => /libuv/.test(l))"
            ".map(l => l.split(/\\s+/).pop());"
            "console.log(process.versions.uv);"
            "console.log([...new Set(m)].join('\\n'));"], timeout=60)
        if code != 0:
            raise UvPatchError("node does not start: %s"
                               % (err.strip().splitlines() or ["?"])[-1])
        lines = out.split()
        return lines[0], lines[1:]


def _missing_libs(node):
    env = dict(os.environ, LD_LIBRARY_PATH=node.libnode_dir + ":"
               + node.lib_dir)
    res = subprocess.run(["ldd", node.node], env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return [ln.split()[0] for ln in res.stdout.splitlines()
            if "not found" in ln]


def _run_all(node, tests):
    slots = queue.Queue()
    for k in range(WORKERS):
        slots.put(k)

    def one(name):
        slot = slots.get()
        try:
            return name, node.test(name, slot)
        finally:
            slots.put(slot)

    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        return dict(pool.map(one, tests))


def run_suite(root, libs, work, tally, label="node"):
    """Node's selected tests on each of ``libs`` ({"patched": lib dir,
    "base": lib dir}), test by test. A test that passes on the base and
    fails patched (twice) fails; one failing on both is listed with its
    reason."""
    why = unavailable()
    if why:
        tally.result("SKIP", label, why)
        return
    console.step("Node.js 18's tests on the installed libuv.so.1")
    try:
        node_root, src = prepare(root)
    except UvPatchError as e:
        tally.result("FAIL", label + " download", e.message)
        return
    spec = load_spec(root)
    tests = select_tests(src, spec)
    nodes = {}
    for kind, lib_dir in libs.items():
        remove_tree(os.path.join(work, kind))
        node = Node(node_root, src, lib_dir, os.path.join(work, kind))
        missing = _missing_libs(node)
        if missing:
            tally.result("SKIP", label, "node needs %s (apt-get install the "
                         "libraries libnode108 depends on)"
                         % ", ".join(missing))
            return
        try:
            version, mapped = node.mapped()
        except UvPatchError as e:
            tally.result("FAIL", "%s %s loads" % (label, kind), e.message)
            return
        real = [os.path.realpath(p) for p in mapped]
        ours = [p for p in real if p.startswith(
            os.path.realpath(lib_dir) + os.sep)]
        if ours and len(real) == 1:
            tally.result("PASS", "%s %s maps %s" % (label, kind, real[0]),
                         "libuv %s, from /proc/PID/maps" % version)
        else:
            tally.result("FAIL", "%s %s maps %s" % (label, kind,
                                                    " ".join(real)),
                         "not the install in %s" % lib_dir)
            return
        nodes[kind] = node
    results = {}
    for kind, node in nodes.items():
        console.note("%d tests on the %s libuv, %d at a time"
                     % (len(tests), kind, WORKERS))
        results[kind] = _run_all(node, tests)
    counts = {k: {"PASS": 0, "FAIL": 0, "SKIP": 0} for k in results}
    for kind, res in results.items():
        for status, _ in res.values():
            counts[kind][status] += 1
    # A failure of the patched library alone is run once more, to tell a
    # flaky test from a defect.
    suspects = [n for n in tests if results["patched"][n][0] == "FAIL"
                and results["base"][n][0] != "FAIL"]
    reruns = _run_all(nodes["patched"], suspects) if suspects else {}
    for name in tests:
        status, why = results["patched"][name]
        base_status, base_why = results["base"][name]
        full = "%s %s" % (label, name)
        if status == "FAIL" and base_status != "FAIL":
            if reruns[name][0] == "FAIL":
                tally.result("FAIL", full, why + " (passes on the base)")
            else:
                tally.result("SKIP", full, "flaky: failed (%s), then passed "
                             "on a rerun; passes on the base" % why)
        elif status == "FAIL":
            tally.result("SKIP", full, "fails on the base too: %s"
                         % base_why)
        elif status == "SKIP":
            tally.result("SKIP", full, why)
        else:
            tally.result("PASS", full, "" if base_status != "FAIL" else
                         "fails on the base: " + base_why)
    for kind in results:
        tally.info("%s: %d tests on the %s libuv: %d passed, %d failed, "
                   "%d skipped" % (label, len(tests), kind,
                                   counts[kind]["PASS"],
                                   counts[kind]["FAIL"],
                                   counts[kind]["SKIP"]))
