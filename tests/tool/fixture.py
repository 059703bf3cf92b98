"""A tiny, hermetic world for the tool's tests: a fake upstream in a
local git repository, a repository root with deps.json and patches, and
private cache and out folders. No network is touched."""

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(REPO, "scripts", "uvpatch")
sys.path.insert(0, os.path.join(REPO, "scripts"))

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@invalid",
    "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@invalid",
    "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z",
}

UPSTREAM_FILES = {
    "README.md": "fake libuv\n",
    "include/uv.h": "#define UV_FAKE 1\nint uv_fake(void);\n",
    "src/core.c": "".join("int line%d = %d;\n" % (i, i) for i in range(40)),
    "src/timer.c": "int timer_a = 1;\nint timer_b = 2;\nint timer_c = 3;\n",
}


def git(args, cwd, check=True):
    env = dict(os.environ)
    env.update(GIT_ENV)
    return subprocess.run(["git"] + args, cwd=cwd, env=env, check=check,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)


def no_editor_env():
    """The environment of a hint's git command as a user with no
    terminal runs it: any editor git opened would fail."""
    env = dict(os.environ, EDITOR="false", VISUAL="false", **GIT_ENV)
    env.pop("GIT_EDITOR", None)
    env.pop("GIT_SEQUENCE_EDITOR", None)
    return env


def shell(template, **values):
    """``template``, a sh script, with its ``{name}`` fields filled and
    quoted: a str is one word, a list or tuple its words. Paths may hold
    spaces, quotes or any other character."""
    return template.format(**{
        key: shlex.join(map(str, value)) if isinstance(value, (list, tuple))
        else shlex.quote(str(value)) for key, value in values.items()})


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        f.write(text)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class World(unittest.TestCase):
    """Base class: self.upstream (git repo), self.root (deps.json and
    patches/), self.out, self.cache; self.tool(...) runs the CLI."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="uvpatch-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.upstream = os.path.join(self.tmp, "upstream")
        self.root = os.path.join(self.tmp, "repo")
        self.out = os.path.join(self.tmp, "out")
        self.cache = os.path.join(self.tmp, "cache")
        os.makedirs(self.upstream)
        for name, text in UPSTREAM_FILES.items():
            write(os.path.join(self.upstream, name), text)
        git(["init", "-q", "-b", "main"], self.upstream)
        git(["add", "-A"], self.upstream)
        git(["commit", "-q", "-m", "upstream"], self.upstream)
        self.commit = git(["rev-parse", "HEAD"], self.upstream).stdout.strip()
        self.tree = git(["rev-parse", "HEAD^{tree}"],
                        self.upstream).stdout.strip()
        # self.deps is the one base's object; deps.json wraps it.
        self.base = "v0.0.1"
        self.patches = os.path.join(self.root, "patches", self.base)
        os.makedirs(self.patches)
        self.deps = {
            "name": self.base,
            "upstream": {"name": "libuv", "repository": "file://"
                         + self.upstream, "tag": "v0.0.1",
                         "commit": self.commit, "tree": self.tree},
            "sources": [{"kind": "git", "url": "file://" + self.upstream}],
            "series": [],
        }
        self.extra = []
        self.save_deps()

    def save_deps(self, extra_bases=None):
        """deps.json: self.deps first (the default), then ``extra_bases``
        (default: the bases add_base made)."""
        extra = self.extra if extra_bases is None else extra_bases
        write(os.path.join(self.root, "deps.json"), json.dumps(
            {"schema": 2, "default_base": self.base,
             "bases": [self.deps] + list(extra)}, indent=2) + "\n")

    @property
    def work(self):
        """The default base's folder in out/ (out/<base>/src, build...)."""
        return os.path.join(self.out, self.base)

    def deps_doc(self):
        with open(os.path.join(self.root, "deps.json")) as f:
            return json.load(f)

    def base_now(self, name=None):
        """A base's object in deps.json as it is now."""
        for base in self.deps_doc()["bases"]:
            if base["name"] == (name or self.base):
                return base
        raise AssertionError("no base %r in deps.json" % name)

    def make_patch(self, number, slug, edits, subject=None):
        """Commits ``edits`` ({path: text}) on top of the series so far in
        a scratch clone and adds the format-patch output to the series."""
        work = os.path.join(self.tmp, "patchwork")
        if not os.path.isdir(work):
            git(["clone", "-q", self.upstream, work], self.tmp)
        for path, text in edits.items():
            write(os.path.join(work, path), text)
        git(["add", "-A"], work)
        git(["commit", "-q", "-m", subject or "core: change %s" % slug],
            work)
        text = git(["format-patch", "-1", "--stdout", "--zero-commit",
                    "--full-index", "--no-signature", "--no-renames"],
                   work).stdout
        name = "%04d-%s.patch" % (number, slug)
        path = os.path.join(self.patches, name)
        write(path, text)
        self.deps["series"].append({
            "file": name, "sha256": sha256(path), "platforms": ["unix"],
            "upstream_status": "Pending", "summary": slug})
        self.save_deps()
        return path

    def upstream_commit(self, edits, message, tag=None, moves=()):
        """A new upstream commit on main; returns its id."""
        for old, new in moves:
            git(["mv", old, new], self.upstream)
        for path, text in edits.items():
            write(os.path.join(self.upstream, path), text)
        git(["add", "-A"], self.upstream)
        git(["commit", "-q", "-m", message], self.upstream)
        if tag:
            git(["tag", tag], self.upstream)
        return git(["rev-parse", "HEAD"], self.upstream).stdout.strip()

    def add_base(self, name, upstream_edits, patch_edits, purpose=None,
                 subject="timer: second base change"):
        """A second base: a new upstream commit on main, tagged ``name``,
        and a one-patch series in patches/<name>/. Make the default
        base's patches first: they are cut from upstream's HEAD."""
        commit = self.upstream_commit(upstream_edits, "upstream " + name,
                                      tag=name)
        work = os.path.join(self.tmp, "patchwork-" + name)
        git(["clone", "-q", self.upstream, work], self.tmp)
        git(["checkout", "-q", commit], work)
        for path, text in patch_edits.items():
            write(os.path.join(work, path), text)
        git(["add", "-A"], work)
        git(["commit", "-q", "-m", subject], work)
        # Named as refresh names it, from the subject.
        folder = os.path.join(self.root, "patches", name)
        fname = os.path.basename(git(
            ["format-patch", "-1", "-o", folder, "--zero-commit",
             "--full-index", "--no-signature", "--no-renames"],
            work).stdout.strip())
        path = os.path.join(folder, fname)
        data = {
            "name": name,
            "upstream": dict(self.deps["upstream"], tag=name, commit=commit,
                             tree=git(["rev-parse", commit + "^{tree}"],
                                      self.upstream).stdout.strip()),
            "sources": [{"kind": "git", "url": "file://" + self.upstream}],
            "series": [{"file": fname, "sha256": sha256(path),
                        "platforms": ["unix"], "upstream_status": "Pending",
                        "summary": subject}],
        }
        if purpose:
            data["for"] = purpose
        self.extra.append(data)
        self.save_deps()
        return data

    def add_program(self, name, cases):
        """tests/regress/<name>.c in the repository root: a regression
        program whose table lists ``cases``."""
        write(os.path.join(self.root, "tests", "regress", name + ".c"),
              '#include "harness.h"\n\n' + "".join(
                  "static int %s(void) { return CASE_OK; }\n" % c
                  for c in cases) +
              "\nstatic const test_case cases[] = {\n" + "".join(
                  '  { "%s", %s },\n' % (c, c) for c in cases) +
              "  { NULL, NULL }\n};\n")

    def make_three_patches(self):
        """0001 and 0002 change src/core.c, 0003 src/timer.c."""
        core = UPSTREAM_FILES["src/core.c"].replace("int line5 = 5;",
                                                    "int line5 = 50;")
        self.make_patch(1, "core-line5", {"src/core.c": core})
        core2 = core.replace("int line30 = 30;", "int line30 = 300;")
        self.make_patch(2, "core-line30", {"src/core.c": core2})
        self.make_patch(3, "timer-b", {"src/timer.c": "int timer_a = 1;\n"
                                       "int timer_b = 20;\n"
                                       "int timer_c = 3;\n"})

    def tool(self, *args, env=None):
        full = dict(os.environ)
        full["XDG_CACHE_HOME"] = self.cache
        full.pop("UVPATCH_SOURCE", None)
        # Hermetic: the tester's own git identity never reaches the tool.
        full["GIT_CONFIG_GLOBAL"] = os.devnull
        full["GIT_CONFIG_NOSYSTEM"] = "1"
        full.update(env or {})
        return subprocess.run(
            [sys.executable, TOOL, "--repo", self.root, "--out", self.out]
            + list(args), env=full, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)

    def assertOk(self, res):
        self.assertEqual(res.returncode, 0, res.stderr)

    def assertFails(self, res, *fragments):
        self.assertNotEqual(res.returncode, 0, res.stderr)
        self.assertIn("error: ", res.stderr)
        self.assertIn("hint: ", res.stderr)
        self.assertNotIn("Traceback", res.stderr)
        for fragment in fragments:
            self.assertIn(fragment, res.stderr)

    def src_head(self, base=None):
        return git(["rev-parse", "HEAD"], os.path.join(
            self.out, base or self.base, "src")).stdout.strip()


class VendorWorld(World):
    """A series of one patch, and a project with a deps/ folder to vendor
    libuv into (``self.dest``)."""

    def setUp(self):
        super().setUp()
        core = UPSTREAM_FILES["src/core.c"].replace("int line5 = 5;",
                                                    "int line5 = 50;")
        self.make_patch(1, "core-line5", {"src/core.c": core})
        self.project = os.path.join(self.tmp, "project")
        os.makedirs(os.path.join(self.project, "deps"))
        self.dest = os.path.join(self.project, "deps", "libuv")
