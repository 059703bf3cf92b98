"""The tool under bad input and faults: mutated deps.json and patches,
kill -9 at random points, two commands at once, a full disk and a
read-only patches/ folder. Every random choice is seeded, so a failure
can be reproduced; each test prints one summary line on stderr."""

import copy
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import unittest

from fixture import World, TOOL, git, shell, write, sha256

from uvpatchlib.series import manifest as manifest_mod
from uvpatchlib.errors import UvPatchError
from uvpatchlib.source.gittree import tree_id

SEED = 20261202
DEPS_MUTATIONS = 300      # validated in-process
DEPS_CLI_SAMPLE = 20      # of those, run through the command line too
PATCH_MUTATIONS = 22      # each an `apply` through the command line; 2 of
#                           each kind
KILLS = 6                 # per command: apply, fetch (git), fetch (tar),
#                           vendor

# No test may reach the network, whatever a mutation does.
OFFLINE = {"http_proxy": "http://127.0.0.1:9", "https_proxy":
           "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
           "HTTPS_PROXY": "http://127.0.0.1:9", "GIT_ALLOW_PROTOCOL": "file"}


def report(text):
    print("\n[faults] " + text, file=sys.stderr, flush=True)


def _can_unshare():
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or \
            shutil.which("unshare") is None:
        return "needs root and unshare(1) on Linux for a private mount"
    res = subprocess.run(["unshare", "-m", "sh", "-c",
                          "mount -t tmpfs -o size=64k tmpfs /mnt 2>&1 || "
                          "mount -t tmpfs -o size=64k tmpfs /tmp 2>&1"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    if res.returncode != 0:
        return "cannot mount in a private namespace: " + res.stdout.strip()
    return None


UNSHARE_SKIP = _can_unshare()


class Series(World):
    """Three patches over the fake upstream, as in test_apply."""

    def setUp(self):
        super().setUp()
        self.make_three_patches()
        self.deps_path = os.path.join(self.root, "deps.json")
        self.cache_dir = os.path.join(self.cache, "uvpatch")

    def tool(self, *args, env=None):
        full = dict(OFFLINE)
        full.update(env or {})
        return super().tool(*args, env=full)

    def argv(self, *args):
        return [sys.executable, TOOL, "--repo", self.root, "--out",
                self.out] + list(args)

    def env(self, extra=None):
        full = dict(os.environ)
        full.pop("UVPATCH_SOURCE", None)
        full["XDG_CACHE_HOME"] = self.cache
        full.update(OFFLINE)
        full.update(extra or {})
        return full

    # What must hold after any command, failed or not.
    def leftovers(self):
        found = []
        if os.path.isdir(self.work):
            for name in os.listdir(self.work):
                if name in (".src.new", "src.old", "base.new", "base.old",
                            ".vendor.index", ".vendor.index.lock") or \
                        name.startswith(".tmp-"):
                    found.append("out/" + name)
        if os.path.isdir(self.cache_dir):
            for name in os.listdir(self.cache_dir):
                if name.startswith(".tmp-"):
                    found.append("cache/" + name)
        for name in os.listdir(self.root):
            if name.startswith(".tmp-") or name.startswith(".refresh-"):
                found.append("repo/" + name)
        for name in os.listdir(self.patches):
            if name.startswith(".tmp-"):
                found.append("patches/" + name)
        return found

    def head_or_none(self):
        src = os.path.join(self.work, "src")
        if not os.path.isdir(src):
            return None
        return git(["rev-parse", "HEAD"], src).stdout.strip()

    def cache_ok(self):
        entry = os.path.join(self.cache_dir, self.tree)
        return os.path.isfile(os.path.join(entry, "source.json")) and \
            tree_id(os.path.join(entry, "tree")) == self.tree

    def clean_failure(self, res):
        """'' when ``res`` failed the way the tool promises, else why not."""
        if res.returncode == 0:
            return "succeeded"
        problems = []
        if "Traceback" in res.stderr:
            problems.append("traceback")
        if "error: " not in res.stderr:
            problems.append("no error:")
        if "hint: " not in res.stderr:
            problems.append("no hint:")
        if res.returncode < 0:
            problems.append("killed by signal %d" % -res.returncode)
        return ", ".join(problems)


# 1. deps.json mutations ---------------------------------------------------

_HASH_KEYS = ("commit", "tree", "sha256")
_ODD_VALUES = [None, True, False, 0, 1, -1, 1.5, 2 ** 70, "", " ", "x",
               "../../etc/passwd", "\u00e9\u4e2d", "a\nb", "\x00", [], [1],
               ["unix", "unix"], {}, {"k": "v"}, "Z" * 5000]


def _walk(obj, path=()):
    yield path, obj
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _walk(value, path + (key,))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from _walk(value, path + (i,))


def _parent(obj, path):
    for key in path[:-1]:
        obj = obj[key]
    return obj


def _hashes(data):
    return [p for p, v in _walk(data) if p and p[-1] in _HASH_KEYS
            and isinstance(v, str)]


def mutate_deps(rng, data, text):
    """One random mutation of deps.json: (kind, bytes)."""
    data = copy.deepcopy(data)
    nodes = [p for p, _ in _walk(data) if p]
    dicts = [p for p, v in _walk(data) if isinstance(v, dict)]
    lists = [p for p, v in _walk(data) if isinstance(v, list) and len(v) > 1]
    kind = rng.choice(["delete", "type", "truncate-hash", "bad-hash",
                       "unknown-key", "swap", "duplicate", "odd-string",
                       "truncated-json", "bytes", "invalid-utf8",
                       "structure"])
    if kind == "delete":
        path = rng.choice(nodes)
        parent = _parent(data, path)
        del parent[path[-1]]
    elif kind == "type":
        path = rng.choice(nodes)
        _parent(data, path)[path[-1]] = copy.deepcopy(rng.choice(_ODD_VALUES))
    elif kind == "truncate-hash":
        path = rng.choice(_hashes(data))
        parent = _parent(data, path)
        parent[path[-1]] = parent[path[-1]][:rng.randrange(0, 40)]
    elif kind == "bad-hash":
        path = rng.choice(_hashes(data))
        parent = _parent(data, path)
        value = parent[path[-1]]
        parent[path[-1]] = rng.choice([
            value.upper(), value + "\n", value + " ", " " + value,
            value[:-1] + "g", value + "0", value[:-1] + "\u0660",
            value[:7]])
    elif kind == "unknown-key":
        path = rng.choice(dicts)
        obj = data
        for key in path:
            obj = obj[key]
        obj[rng.choice(["extra", "Commit", "tree ", "x%d" % rng.randrange(
            100)])] = rng.choice(_ODD_VALUES[:6])
    elif kind == "swap":
        path = rng.choice(lists)
        obj = data
        for key in path:
            obj = obj[key]
        i, j = rng.sample(range(len(obj)), 2)
        obj[i], obj[j] = obj[j], obj[i]
    elif kind == "duplicate":
        path = rng.choice(lists or [("series",)])
        obj = data
        for key in path:
            obj = obj[key]
        if obj:
            obj.insert(rng.randrange(len(obj) + 1),
                       copy.deepcopy(rng.choice(obj)))
        else:
            obj.append("x")
    elif kind == "odd-string":
        strings = [p for p, v in _walk(data) if isinstance(v, str)]
        path = rng.choice(strings)
        _parent(data, path)[path[-1]] = rng.choice(
            [v for v in _ODD_VALUES if isinstance(v, str)])
    if kind not in ("truncated-json", "bytes", "invalid-utf8", "structure"):
        return kind, json.dumps(data, indent=2).encode() + b"\n"
    raw = text
    if kind == "truncated-json":
        return kind, raw[:rng.randrange(len(raw))]
    if kind == "bytes":
        raw = bytearray(raw)
        for _ in range(rng.randint(1, 6)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        return kind, bytes(raw)
    if kind == "invalid-utf8":
        at = rng.randrange(len(raw))
        return kind, raw[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80",
                                            b"\x80\x80"]) + raw[at:]
    return kind, rng.choice([
        b"", b"null\n", b"[]\n", b"1\n", b'"deps"\n', b"\xef\xbb\xbf" + text,
        b"[" * 100000 + b"]" * 100000, b'{"schema": NaN}',
        b'{"schema": 1e999}', text + text, text.replace(b"{", b"[", 1)])


class DepsMutationTest(Series):
    def test_mutated_deps_json(self):
        rng = random.Random(SEED)
        self.assertOk(self.tool("apply"))
        head = self.head_or_none()
        with open(self.deps_path, "rb") as f:
            original = f.read()
        data = json.loads(original)
        kinds, outcomes, bugs = {}, {"valid": 0, "refused": 0}, []
        cli = {"ok": 0, "refused": 0}
        every = DEPS_MUTATIONS // DEPS_CLI_SAMPLE
        for n in range(DEPS_MUTATIONS):
            kind, raw = mutate_deps(rng, data, original)
            kinds[kind] = kinds.get(kind, 0) + 1
            with open(self.deps_path, "wb") as f:
                f.write(raw)
            try:
                manifest_mod.load(self.root)
                outcomes["valid"] += 1
            except UvPatchError as e:
                outcomes["refused"] += 1
                if not e.message or not e.hint or e.status != 3:
                    bugs.append("#%d %s: bad error %r / %r / %d"
                                % (n, kind, e.message, e.hint, e.status))
            except BaseException as e:  # noqa: B902 -- any other is a bug
                bugs.append("#%d %s: %s: %s" % (n, kind, type(e).__name__,
                                                str(e)[:200]))
            if n % every == every - 1:
                command = "apply" if (n // every) % 2 else "fetch"
                res = self.tool(command)
                why = self.clean_failure(res)
                if res.returncode == 0:
                    cli["ok"] += 1
                else:
                    cli["refused"] += 1
                    if why:
                        bugs.append("#%d %s via %s: %s: %s" % (
                            n, kind, command, why, res.stderr[-300:]))
                    if self.head_or_none() != head:
                        bugs.append("#%d %s via %s: out/src changed"
                                    % (n, kind, command))
                left = self.leftovers()
                if left:
                    bugs.append("#%d %s via %s: left %s"
                                % (n, kind, command, left))
                if not self.cache_ok():
                    bugs.append("#%d %s via %s: cache entry damaged"
                                % (n, kind, command))
        with open(self.deps_path, "wb") as f:
            f.write(original)
        report("deps.json: %d mutations (%s): %d still valid, %d refused; "
               "%d through the CLI: %d ok, %d refused; %d problems"
               % (DEPS_MUTATIONS, ", ".join("%s %d" % kv for kv in
                                            sorted(kinds.items())),
                  outcomes["valid"], outcomes["refused"],
                  cli["ok"] + cli["refused"], cli["ok"], cli["refused"],
                  len(bugs)))
        self.assertEqual(bugs, [])
        self.assertEqual(outcomes["valid"] + outcomes["refused"],
                         DEPS_MUTATIONS)

    def test_hash_with_trailing_newline_is_refused(self):
        for field in ("commit", "tree"):
            data = self.deps_doc()
            data["bases"][0]["upstream"][field] += "\n"
            with self.assertRaises(UvPatchError) as cm:
                manifest_mod.validate(data, self.root)
            self.assertIn("bases[0].upstream." + field,
                          cm.exception.message)
        data = self.deps_doc()
        data["bases"][0]["series"][0]["file"] += "\n"
        with self.assertRaises(UvPatchError) as cm:
            manifest_mod.validate(data, self.root, check_files=False)
        self.assertIn("bases[0].series[0].file", cm.exception.message)

    def test_not_utf8_and_too_deep(self):
        for raw in (b'{"schema": "\xff"}', b"[" * 100000):
            with open(self.deps_path, "wb") as f:
                f.write(raw)
            res = self.tool("fetch")
            self.assertFails(res, "deps.json")
            self.assertEqual(res.returncode, 3)


# 2. patch mutations ------------------------------------------------------

PATCH_KINDS = ("delete-line", "context", "hunk-header", "crlf", "truncate",
               "garbage", "swap-lines", "no-diff-line", "minus-to-context",
               "empty", "message-line")


def mutate_patch(rng, text, kind):
    """A random mutation of a format-patch file of ``kind``: bytes."""
    lines = text.split("\n")
    hunk_lines = [i for i, ln in enumerate(lines) if ln.startswith("@@ ")]
    first = hunk_lines[0] if hunk_lines else len(lines) // 2
    body = [i for i in range(first + 1, len(lines))
            if lines[i][:1] in (" ", "-", "+") and lines[i] != "-- "]
    context = [i for i in body if lines[i].startswith(" ")] or body
    if kind == "delete-line":
        del lines[rng.randrange(len(lines))]
    elif kind == "context":
        i = rng.choice(context)
        lines[i] = lines[i][:1] + rng.choice(["x", "", "  ", "\t"]) + \
            lines[i][1:]
    elif kind == "hunk-header":
        i = rng.choice(hunk_lines)
        header = lines[i]
        lines[i] = rng.choice([
            header.replace("@@ -", "@@ -1", 1),
            header.replace(",", ",9", 1),
            header.replace(" +", " +2", 1),
            header.replace("@@", "@", 1),
            "@@ -a,b +c,d @@",
            header.replace("@@ -", "@@ -0", 1)])
    elif kind == "crlf":
        return "\r\n".join(lines).encode()
    elif kind == "truncate":
        raw = text.encode()
        return raw[:rng.randrange(len(raw))]
    elif kind == "garbage":
        raw = bytearray(text.encode())
        at = rng.randrange(len(raw))
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        return bytes(raw[:at]) + junk + bytes(raw[at + len(junk):])
    elif kind == "swap-lines":
        i, j = rng.sample(body, 2) if len(body) > 1 else (0, 1)
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "no-diff-line":
        lines = [ln for ln in lines if not ln.startswith("diff --git")]
    elif kind == "minus-to-context":
        minus = [i for i in body if lines[i].startswith("-")] or body
        i = rng.choice(minus)
        lines[i] = " " + lines[i][1:]
    elif kind == "empty":
        return b""
    elif kind == "message-line":
        subject = [i for i, ln in enumerate(lines)
                   if ln.startswith("Subject: ")][0]
        lines.insert(subject + 2, "An extra line of the message.")
    return "\n".join(lines).encode("utf-8", "surrogateescape")


def _exact(repo, commit, patch_bytes):
    """'' when every hunk of the patch sits exactly at its stated line of
    the commit's parent, else what does not."""
    text = patch_bytes.decode("utf-8", "replace").replace("\r\n", "\n")
    path, old_start, old = None, None, []
    problems = []

    def check():
        if old_start is None:
            return
        content = git(["show", "%s^:%s" % (commit, path)], repo,
                      check=False).stdout.split("\n")
        got = content[max(old_start - 1, 0):max(old_start - 1, 0) + len(old)]
        if got != old:
            problems.append("%s: hunk at %d" % (path, old_start))
    for line in text.split("\n"):
        if line.startswith("diff --git "):
            check()
            path, old_start, old = line.split(" b/", 1)[1], None, []
        elif line.startswith("@@ "):
            check()
            old_start = int(line.split()[1][1:].split(",")[0])
            old = []
        elif line == "-- ":
            break
        elif old_start is not None and line[:1] in (" ", "-"):
            old.append(line[1:])
    check()
    return "; ".join(problems)


class PatchMutationTest(Series):
    def test_mutated_patches(self):
        rng = random.Random(SEED + 1)
        self.assertOk(self.tool("apply"))
        names = [e["file"] for e in self.deps["series"]]
        originals = {}
        for name in names:
            with open(os.path.join(self.patches, name), "rb") as f:
                originals[name] = f.read()
        clean_tree = git(["rev-parse", "HEAD^{tree}"],
                         os.path.join(self.work, "src")).stdout.strip()
        deps = copy.deepcopy(self.deps)
        kinds, results, bugs = {}, {"applied": 0, "refused": 0}, []
        for n in range(PATCH_MUTATIONS):
            i = rng.randrange(len(names))
            kind = PATCH_KINDS[n % len(PATCH_KINDS)]
            raw = mutate_patch(rng, originals[names[i]].decode(), kind)
            kinds[kind] = kinds.get(kind, 0) + 1
            for j, name in enumerate(names):
                path = os.path.join(self.patches, name)
                with open(path, "wb") as f:
                    f.write(raw if j == i else originals[name])
                self.deps["series"][j]["sha256"] = sha256(path)
            self.save_deps()
            before = self.head_or_none()
            res = self.tool("apply")
            what = "#%d %s of %s" % (n, kind, names[i])
            if res.returncode == 0:
                results["applied"] += 1
                src = os.path.join(self.work, "src")
                commit = git(["rev-parse", "HEAD~%d" % (len(names) - 1 - i)],
                             src).stdout.strip()
                problem = _exact(src, commit, raw)
                if problem:
                    bugs.append("%s: applied inexactly: %s" % (what, problem))
                if raw.replace(b"\r\n", b"\n") == originals[names[i]] or \
                        kind == "message-line":
                    tree = git(["rev-parse", "HEAD^{tree}"],
                               src).stdout.strip()
                    if tree != clean_tree:
                        bugs.append("%s: wrong tree %s" % (what, tree))
            else:
                results["refused"] += 1
                why = self.clean_failure(res)
                if why:
                    bugs.append("%s: %s: %s" % (what, why, res.stderr[-300:]))
                if self.head_or_none() != before:
                    bugs.append("%s: out/src moved" % what)
            left = self.leftovers()
            if left:
                bugs.append("%s: left %s" % (what, left))
        self.deps = deps
        report("patches: %d mutations (%s): %d applied (exactly), %d "
               "refused; %d problems"
               % (PATCH_MUTATIONS, ", ".join("%s %d" % kv for kv in
                                             sorted(kinds.items())),
                  results["applied"], results["refused"], len(bugs)))
        self.assertEqual(bugs, [])


# 3. kill -9 at random points ----------------------------------------------

def _group_alive(pgid):
    """Whether a process of group ``pgid`` still runs (zombies, which an
    init that does not reap may keep forever, do not count)."""
    if not os.path.isdir("/proc/self"):
        try:
            os.killpg(pgid, 0)
            return True
        except ProcessLookupError:
            return False
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


class KillTest(Series):
    def run_timed(self, args):
        start = time.monotonic()
        res = subprocess.run(self.argv(*args), env=self.env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        self.assertOk(res)
        return time.monotonic() - start

    def kill_after(self, args, delay, group):
        """Starts the command, SIGKILLs it (its process group too when
        ``group``) after ``delay`` s; waits until nothing of it runs."""
        p = subprocess.Popen(self.argv(*args), env=self.env(),
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL,
                             start_new_session=True)
        try:
            p.wait(timeout=delay)
            return False  # finished first
        except subprocess.TimeoutExpired:
            pass
        if group:
            os.killpg(p.pid, signal.SIGKILL)
        else:
            p.kill()
        p.wait()
        # Orphaned children (git) finish their work: wait for them.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _group_alive(p.pid):
            time.sleep(0.01)
        return True

    def kill_loop(self, label, args, prepare, verify, rng):
        """``args``: the command's arguments, or a function giving those
        of the current round (after ``prepare``)."""
        current = args if callable(args) else (lambda: args)
        prepare(0)
        duration = self.run_timed(current())
        verify(0, None)
        killed = bugs = 0
        problems = []
        for n in range(KILLS):
            prepare(n + 1)
            delay = rng.uniform(0.02, duration * 0.8)
            group = n % 2 == 0
            if self.kill_after(current(), delay, group):
                killed += 1
            res = subprocess.run(self.argv(*current()), env=self.env(),
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            where = "%s kill #%d after %.3f s (%s)" % (
                label, n, delay, "group" if group else "tool only")
            if res.returncode != 0:
                problems.append("%s: rerun failed: %s"
                                % (where, res.stderr[-400:]))
                continue
            problem = verify(n + 1, res)
            left = self.leftovers()
            if left and label != "vendor":
                problem = (problem + "; " if problem else "") + \
                    "left %s" % left
            if problem:
                problems.append("%s: %s" % (where, problem))
        bugs = len(problems)
        report("kill -9 %s: clean run %.2f s; %d runs, %d killed before "
               "the end; %d reruns wrong" % (label, duration, KILLS, killed,
                                             bugs))
        self.assertEqual(problems, [])
        return killed

    def test_kill_apply(self):
        rng = random.Random(SEED + 2)
        full = copy.deepcopy(self.deps)
        short = copy.deepcopy(self.deps)
        del short["series"][2]
        spare = os.path.join(self.tmp, "0003-timer-b.patch")
        heads = {}
        # Learn both heads first (the series alternates, so each run
        # replaces an existing out/src).
        for variant in ("short", "full"):
            self.use_variant(variant, full, short, spare)
            self.assertOk(self.tool("apply"))
            heads[variant] = self.head_or_none()
        shutil.rmtree(self.out)
        state = {}

        def prepare(n):
            state["variant"] = ("full", "short")[n % 2]
            self.use_variant(state["variant"], full, short, spare)

        def verify(n, res):
            want = heads[state["variant"]]
            got = self.head_or_none()
            if got != want:
                return "HEAD %s, expected %s" % (got, want)
            status = git(["status", "--porcelain"],
                         os.path.join(self.work, "src")).stdout
            return "out/src dirty: %s" % status if status else ""
        self.kill_loop("apply", ["apply"], prepare, verify, rng)

    def use_variant(self, variant, full, short, spare):
        patch = os.path.join(self.patches, "0003-timer-b.patch")
        if variant == "short" and os.path.exists(patch):
            os.rename(patch, spare)
        elif variant == "full" and os.path.exists(spare):
            os.rename(spare, patch)
        self.deps = copy.deepcopy(full if variant == "full" else short)
        self.save_deps()

    def fetch_loop(self, label, args, rng):
        entry = os.path.join(self.cache_dir, self.tree)

        def prepare(n):
            if os.path.isdir(entry):
                shutil.rmtree(entry)

        def verify(n, res):
            if not self.cache_ok():
                return "cache entry does not verify"
            if res is not None and res.stdout.strip() != \
                    os.path.join(entry, "tree"):
                return "printed %r" % res.stdout
            return ""
        self.kill_loop(label, args, prepare, verify, rng)

    def test_kill_fetch_git(self):
        self.fetch_loop("fetch (git)", ["fetch"], random.Random(SEED + 3))

    def test_kill_fetch_tarball(self):
        from test_fetch import make_tarball
        tarball = os.path.join(self.tmp, "fake-1.0.tar.gz")
        make_tarball(tarball, self.upstream)
        self.fetch_loop("fetch (tarball)", ["fetch", "--source", tarball],
                        random.Random(SEED + 4))

    def test_kill_vendor(self):
        rng = random.Random(SEED + 5)
        project = os.path.join(self.tmp, "project")
        os.makedirs(project)
        dest = os.path.join(project, "libuv")
        state = {}

        def prepare(n):
            # Alternate patched and unpatched, so each export replaces one.
            state["args"] = ["vendor", dest] + (["--unpatched"]
                                                if n % 2 else [])

        def verify(n, res):
            with open(os.path.join(dest, "UVPATCH.json")) as f:
                prov = json.load(f)
            actual = tree_id(dest, exclude=["UVPATCH.json"])
            problems = []
            if actual != prov["tree"]:
                problems.append("DEST tree %s, UVPATCH.json says %s"
                                % (actual, prov["tree"]))
            if prov["patched"] != ("--unpatched" not in state["args"]):
                problems.append("wrong variant exported")
            extra = sorted(set(os.listdir(project)) - {"libuv"})
            if extra:
                problems.append("left %s next to DEST" % extra)
            left = [x for x in self.leftovers() if "vendor" in x]
            if left:
                problems.append("left %s" % left)
            return "; ".join(problems)

        # Make out/src first so the kills land in the export itself.
        self.assertOk(self.tool("apply"))
        self.kill_loop("vendor", lambda: state["args"], prepare, verify,
                       rng)


# 4. two commands at once -------------------------------------------------

class ConcurrencyTest(Series):
    def test_two_applies_at_once(self):
        self.assertOk(self.tool("fetch"))
        fake = os.path.join(self.tmp, "slowbin")
        os.makedirs(fake)
        script = os.path.join(fake, "git")
        write(script, shell("#!/bin/sh\n[ \"$1\" = am ] && sleep 0.3\n"
                            "exec {git} \"$@\"\n", git=shutil.which("git")))
        os.chmod(script, 0o755)
        env = self.env({"PATH": fake + os.pathsep + os.environ["PATH"]})
        outcomes = []
        for _ in range(2):
            if os.path.isdir(self.out):
                shutil.rmtree(self.out)
            procs = [subprocess.Popen(self.argv("apply"), env=env,
                                      stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
                     for _ in range(2)]
            results = []
            for p in procs:
                out, err = p.communicate(timeout=60)
                results.append((p.returncode, err))
            codes = sorted(r[0] for r in results)
            if codes == [0, 0]:
                outcomes.append("both ok")
            else:
                self.assertEqual(codes, [0, 6], results)
                loser = [r for r in results if r[0] == 6][0][1]
                self.assertIn("another uvpatch command is using", loser)
                self.assertIn("hint: ", loser)
                self.assertNotIn("Traceback", loser)
                outcomes.append("one refused")
            self.assertEqual(self.leftovers(), [])
            self.assertEqual(git(["status", "--porcelain"], os.path.join(
                self.work, "src")).stdout, "")
            res = self.tool("apply")
            self.assertOk(res)
            self.assertIn("up to date", res.stderr)
        report("two applies at once, 2 rounds: %s" % ", ".join(outcomes))

    def test_two_fetches_share_the_cache(self):
        # fetch takes no out/ lock: two at once meet in the cache.
        bugs = []
        for n in range(3):
            if os.path.isdir(self.cache_dir):
                shutil.rmtree(self.cache_dir)
            procs = [subprocess.Popen(
                [sys.executable, TOOL, "--repo", self.root, "--out",
                 os.path.join(self.tmp, "out%d" % k), "fetch"],
                env=self.env(), stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True) for k in range(2)]
            for p in procs:
                out, err = p.communicate(timeout=60)
                if p.returncode != 0:
                    bugs.append("round %d: %s" % (n, err.strip()[-300:]))
            if not self.cache_ok():
                bugs.append("round %d: cache entry damaged" % n)
            if self.leftovers():
                bugs.append("round %d: left %s" % (n, self.leftovers()))
        report("two fetches at once, 3 rounds: %d problems" % len(bugs))
        self.assertEqual(bugs, [])


# 5. a full disk ----------------------------------------------------------

@unittest.skipIf(UNSHARE_SKIP, UNSHARE_SKIP)
class FullDiskTest(Series):
    def setUp(self):
        super().setUp()
        self.disk = os.path.join(self.tmp, "disk")
        os.makedirs(self.disk)

    def in_tmpfs(self, size, script):
        """Runs ``script`` (sh) with a private tmpfs of ``size`` at
        self.disk; returns its stdout (the tmpfs vanishes afterwards)."""
        full = shell("mount -t tmpfs -o size={size} tmpfs {disk} "
                     "|| exit 99\n", size=size, disk=self.disk) + script
        res = subprocess.run(["unshare", "-m", "sh", "-c", full],
                             env=self.env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertNotEqual(res.returncode, 99, res.stderr)
        return res.stdout

    def tool_line(self, args, log, cache=None, out=None):
        return shell(
            "XDG_CACHE_HOME={cache} {argv} >{out} 2>{err}; echo $? >{rc}\n",
            cache=cache or self.cache, argv=[
                sys.executable, TOOL, "--repo", self.root, "--out",
                out or self.out] + list(args),
            out=log + ".out", err=log + ".err", rc=log + ".rc")

    def remount(self, check=True):
        """The line that gives the tmpfs room again."""
        return shell("mount -o remount,size=8m {disk}", disk=self.disk) + (
            " || exit 98\n" if check else "\n")

    def read_log(self, log):
        with open(log + ".rc") as f:
            rc = int(f.read())
        with open(log + ".err") as f:
            err = f.read()
        return rc, err

    def scenario(self, label, cache, out):
        """apply on a tmpfs too small, then after a remount with room."""
        log1 = os.path.join(self.tmp, "log1")
        log2 = os.path.join(self.tmp, "log2")
        listing = os.path.join(self.tmp, "listing")
        result = os.path.join(self.tmp, "result")
        script = (
            shell("mkdir -p {cache} {out}\n", cache=cache, out=out)
            + self.tool_line(["apply"], log1, cache, out)
            + shell("(cd {disk} && find . | sort) >{listing}\n",
                    disk=self.disk, listing=listing)
            + self.remount()
            + self.tool_line(["apply"], log2, cache, out)
            + shell("git -C {src} rev-parse HEAD >{result} 2>&1\n",
                    src=os.path.join(out, self.base, "src"), result=result))
        self.in_tmpfs(self.size, script)
        rc1, err1 = self.read_log(log1)
        rc2, err2 = self.read_log(log2)
        with open(listing) as f:
            files = f.read().split("\n")
        with open(result) as f:
            head = f.read().strip()
        half = [f for f in files if ".src.new" in f or "/.tmp-" in f or
                f.endswith(".old")]
        return rc1, err1, rc2, err2, half, head

    def clean_head(self):
        other = os.path.join(self.tmp, "ref-out")
        res = subprocess.run(self.argv()[:5] + [other, "apply"],
                             env=self.env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.assertOk(res)
        return git(["rev-parse", "HEAD"],
                   os.path.join(other, self.base, "src")).stdout.strip()

    def check(self, label, sizes, cache, out):
        """For each tmpfs size (all too small), apply fails cleanly, then
        succeeds once the tmpfs is remounted with room."""
        want = self.clean_head()
        filled = 0
        for size in sizes:
            self.size = size
            rc1, err1, rc2, err2, half, head = self.scenario(label, cache,
                                                             out)
            self.assertEqual(rc2, 0, err2)
            self.assertEqual(head, want)
            if rc1 == 0:
                # Room enough here (git's templates differ in size).
                report("full disk (%s, tmpfs %s): was enough" % (label,
                                                                 size))
                continue
            filled += 1
            self.assertIn("No space left on device", err1)
            self.assertIn("error: ", err1)
            self.assertIn("hint: ", err1)
            self.assertNotIn("Traceback", err1)
            # A full disk is not a patch that does not apply.
            self.assertNotIn("does not apply", err1)
            self.assertIn("no space left on the disk of", err1)
            self.assertEqual(half, [], "half-done work left on a full disk")
            first = [ln for ln in err1.splitlines()
                     if ln.startswith("error")][0]
            report("full disk (%s, tmpfs %s): exit %d, %r; after a remount "
                   "with room: ok" % (label, size, rc1, first[:150]))
        self.assertGreater(filled, 0, "no size was too small")

    def test_cache_on_a_full_disk(self):
        self.check("cache and out/ on it", ["48k", "240k"],
                   self.disk + "/cache", self.disk + "/out")

    def test_out_on_a_full_disk(self):
        self.assertOk(self.tool("fetch"))   # the cache is elsewhere
        self.check("out/ on it, cache elsewhere", ["60k", "160k"],
                   self.cache, self.disk + "/out")

    def test_full_cache_is_named_and_no_other_source_tried(self):
        """A full cache disk is no fault of the source, and the next
        source would fill it too: one error naming the disk."""
        bundle = os.path.join(self.tmp, "up.bundle")
        git(["bundle", "create", bundle, "--all"], self.upstream)
        log = os.path.join(self.tmp, "log")
        cache = os.path.join(self.disk, "cache")
        named = 0
        for size in ("16k", "48k", "120k"):
            self.in_tmpfs(size, shell("mkdir -p {cache}\nUVPATCH_SOURCE={b} ",
                                      cache=cache, b=bundle)
                          + self.tool_line(["fetch"], log, cache))
            rc, err = self.read_log(log)
            if rc == 0:
                continue
            named += 1
            self.assertEqual(rc, 4, err)
            self.assertIn("no space left on the disk of %s" % cache, err)
            self.assertIn("hint: free space", err)
            self.assertNotIn("tried", err)
            self.assertNotIn("git file://", err)
        self.assertGreater(named, 0, "no size was too small")

    def test_vendor_on_a_full_disk_and_into_a_mount_point(self):
        self.assertOk(self.tool("apply"))   # cache and out/ elsewhere
        log = os.path.join(self.tmp, "log")
        named = 0
        for size in ("8k", "12k"):
            self.in_tmpfs(size, self.tool_line(
                ["vendor", os.path.join(self.disk, "libuv")], log))
            rc, err = self.read_log(log)
            if rc == 0:
                continue
            named += 1
            self.assertIn("no space left on the disk of %s" % self.disk,
                          err)
            self.assertIn("hint: free space", err)
            self.assertLess(len(err.splitlines()), 10, err)
        self.assertGreater(named, 0, "no size was too small")
        self.in_tmpfs("1m", self.tool_line(["vendor", self.disk], log))
        rc, err = self.read_log(log)
        self.assertEqual(rc, 2, err)
        self.assertIn("is a mount point", err)
        self.assertNotIn("=== ", err)

    def test_tarball_on_a_full_disk(self):
        """A full disk is named as one: not a damaged tarball while it is
        unpacked into the cache, nor a raw list of every file while the
        tree is copied into out/src."""
        from test_fetch import make_tarball
        tarball = os.path.join(self.tmp, "fake-1.0.tar.gz")
        make_tarball(tarball, self.upstream)
        logs = [os.path.join(self.tmp, "log%d" % n) for n in range(4)]
        cache = self.disk + "/cache"
        script = (
            shell("mkdir -p {cache}\n", cache=cache)
            + self.tool_line(["fetch", "--source", tarball], logs[0], cache)
            + self.remount()
            + self.tool_line(["fetch", "--source", tarball], logs[1], cache))
        self.in_tmpfs("8k", script)
        rc, err = self.read_log(logs[0])
        self.assertEqual(rc, 4, err)
        self.assertIn("cannot write", err)
        self.assertIn("No space left on device", err)
        self.assertIn("hint: free space", err)
        self.assertNotIn("damaged", err)
        self.assertEqual(self.read_log(logs[1])[0], 0)
        # The cache elsewhere holds the tree from the tarball: apply
        # copies it into out/src, on the small disk.
        self.assertOk(self.tool("fetch", "--source", tarball))
        copied = 0
        # Sizes where git init fits but the tree does not (git's own
        # templates take the rest).
        for size in ("72k", "80k", "88k"):
            out = self.disk + "/out"
            self.in_tmpfs(size, self.tool_line(["apply"], logs[2], out=out)
                          + self.remount(check=False)
                          + self.tool_line(["apply"], logs[3], out=out))
            rc, err = self.read_log(logs[2])
            self.assertEqual(self.read_log(logs[3])[0], 0)
            if rc == 0:
                continue
            self.assertNotIn("error: [(", err)   # shutil.Error's list
            self.assertNotIn("Traceback", err)
            self.assertIn("hint: ", err)
            if "/.src.new/" in err and "git " not in err:
                # Stopped in the copy: named as a full disk, with a file.
                copied += 1
                self.assertIn("No space left on device: ", err)
                self.assertIn("hint: free space on the disk of ", err)
        report("full disk (tarball): fetch %r; apply: %d of 3 sizes failed "
               "in the copy" % ([ln for ln in self.read_log(logs[0])[1]
                                 .splitlines() if ln.startswith("error")][0]
                                [:120], copied))
        self.assertGreater(copied, 0, "no size stopped the copy")


# 6. read-only patches/ ---------------------------------------------------

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@unittest.skipIf(ROOT and UNSHARE_SKIP, "root ignores chmod, and %s"
                 % UNSHARE_SKIP)
@unittest.skipIf(os.name == "nt", "POSIX permissions and mounts")
class ReadOnlyTest(Series):
    def setUp(self):
        super().setUp()
        self.assertOk(self.tool("apply"))
        self.assertOk(self.tool("refresh"))   # canonical form first
        src = os.path.join(self.work, "src")
        # Amend the last patch: refresh then has to rewrite it.
        write(os.path.join(src, "src", "timer.c"),
              "int timer_a = 1;\nint timer_b = 21;\nint timer_c = 3;\n")
        git(["commit", "-q", "-a", "--amend", "--no-edit"], src)
        self.snapshot = self.repo_files()

    def repo_files(self):
        found = {}
        for folder, _, names in os.walk(self.root):
            for name in names:
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    found[os.path.relpath(path, self.root)] = f.read()
        return found

    def refresh_read_only(self, target):
        """refresh with ``target`` read-only: a read-only bind mount in a
        private mount namespace for root, chmod for anyone else."""
        if not ROOT:
            modes = {}
            for path in [target] + [os.path.join(target, n) for n in (
                    os.listdir(target) if os.path.isdir(target) else [])]:
                modes[path] = os.stat(path).st_mode & 0o7777
                os.chmod(path, 0o555 if os.path.isdir(path) else 0o444)
            try:
                res = super().tool("refresh")
            finally:
                for path, mode in modes.items():
                    os.chmod(path, mode)
            return res.returncode, res.stderr
        log = os.path.join(self.tmp, "log")
        script = shell(
            "mount --bind {t} {t} && mount -o remount,bind,ro {t} "
            "|| exit 99\n"
            "XDG_CACHE_HOME={c} {argv} >{out} 2>{err}; echo $? >{rc}\n",
            t=target, c=self.cache, argv=[
                sys.executable, TOOL, "--repo", self.root, "--out", self.out,
                "refresh"],
            out=log + ".out", err=log + ".err", rc=log + ".rc")
        res = subprocess.run(["unshare", "-m", "sh", "-c", script],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        self.assertEqual(res.returncode, 0, res.stderr)
        with open(log + ".rc") as f:
            rc = int(f.read())
        with open(log + ".err") as f:
            return rc, f.read()

    def test_read_only_patches(self):
        rc, err = self.refresh_read_only(self.patches)
        self.assertNotEqual(rc, 0, err)
        self.assertIn("Read-only file system" if ROOT else
                      "Permission denied", err)
        self.assertIn("hint: ", err)
        self.assertNotIn("Traceback", err)
        self.assertEqual(self.repo_files(), self.snapshot)
        self.assertEqual(self.leftovers(), [])
        # With the mount gone, the same refresh works.
        self.assertOk(self.tool("refresh"))
        self.assertNotEqual(self.repo_files(), self.snapshot)
        self.assertEqual(self.leftovers(), [])
        report("read-only patches/: refresh exit %d, %r; nothing changed"
               % (rc, [ln for ln in err.splitlines()
                       if ln.startswith("error")]))

    @unittest.skipUnless(ROOT, "a chmod'ed deps.json is still replaced by "
                         "a rename; needs root for a read-only bind mount")
    def test_read_only_deps_json(self):
        # patches/ writable, deps.json not: the pair must stay consistent.
        rc, err = self.refresh_read_only(self.deps_path)
        self.assertNotEqual(rc, 0, err)
        self.assertIn("hint: ", err)
        self.assertNotIn("Traceback", err)
        self.assertEqual(self.repo_files(), self.snapshot,
                         "patches/ rewritten, deps.json not")
        self.assertEqual(self.leftovers(), [])
        report("read-only deps.json: refresh exit %d, %r; nothing changed"
               % (rc, [ln for ln in err.splitlines()
                       if ln.startswith("error")]))


if __name__ == "__main__":
    unittest.main()
