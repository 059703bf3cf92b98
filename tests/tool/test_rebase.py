import os
import shutil
import subprocess

from fixture import World, git, shell, write, UPSTREAM_FILES

CORE = UPSTREAM_FILES["src/core.c"]


def read(*parts):
    with open(os.path.join(*parts)) as f:
        return f.read()


class RebaseWorld(World):
    """Three patches on v0.0.1; helpers to look at the result."""

    def setUp(self):
        super().setUp()
        core = CORE.replace("int line5 = 5;", "int line5 = 50;")
        self.make_patch(1, "core-line5", {"src/core.c": core},
                        subject="core: line5")
        core2 = core.replace("int line30 = 30;", "int line30 = 300;")
        self.make_patch(2, "core-line30", {"src/core.c": core2},
                        subject="core: line30")
        self.make_patch(3, "timer-b", {"src/timer.c": "int timer_a = 1;\n"
                                       "int timer_b = 20;\n"
                                       "int timer_c = 3;\n"},
                        subject="timer: b")
        self.deps["series"][2]["tests"] = ["timer_b"]
        self.save_deps()
        self.snapshot = self.files()

    def files(self):
        """Every base's patches and deps.json."""
        found = {}
        top = os.path.join(self.root, "patches")
        for base in os.listdir(top):
            for n in os.listdir(os.path.join(top, base)):
                found[base + "/" + n] = read(top, base, n)
        found["deps.json"] = read(self.root, "deps.json")
        return found

    def deps_now(self, name=None):
        """Base ``name`` (default: the fixture's) in deps.json now."""
        return self.base_now(name)

    def assertConsistent(self, name=None):
        """A fresh apply of the new patches/ and deps.json rebuilds
        exactly out/<base>/src, from the cache alone."""
        name = name or self.base
        head = self.src_head(name)
        self.out = os.path.join(self.tmp, "out-check")
        upstream = self.upstream + ".away"
        os.rename(self.upstream, upstream)
        try:
            self.assertOk(self.tool("apply", "--base", name))
        finally:
            os.rename(upstream, self.upstream)
        self.assertEqual(self.src_head(name), head)

    def assertUntouched(self, name=None):
        """Base ``name``'s entry and patches are as the fixture made
        them."""
        name = name or self.base
        made = [self.deps] + self.extra
        self.assertEqual(self.deps_now(name),
                         next(b for b in made if b["name"] == name))
        now = self.files()
        for key, text in self.snapshot.items():
            if key.startswith(name + "/"):
                self.assertEqual(now.get(key), text, key)
        self.assertEqual(
            sorted(k for k in now if k.startswith(name + "/")),
            sorted(k for k in self.snapshot if k.startswith(name + "/")))


class RebaseTest(RebaseWorld):
    def test_change_near_the_patch_merges(self):
        # Context of 0001 changes and every line shifts by two.
        core = "// new header\n// line\n" + CORE.replace(
            "int line7 = 7;", "int line7 = 7; /* upstream */")
        new = self.upstream_commit({"src/core.c": core}, "core: tweak",
                                   tag="v0.0.2")
        res = self.tool("rebase", "--onto", "v0.0.2")
        self.assertOk(res)
        # REF's tag names the result: a new base, the old one untouched.
        deps = self.deps_now("v0.0.2")
        self.assertEqual([b["name"] for b in self.deps_doc()["bases"]],
                         [self.base, "v0.0.2"])
        self.assertUntouched()
        self.assertEqual(deps["upstream"]["commit"], new)
        self.assertEqual(deps["upstream"]["tag"], "v0.0.2")
        self.assertEqual(deps["upstream"]["tree"], git(
            ["rev-parse", "HEAD^{tree}"], self.upstream).stdout.strip())
        self.assertEqual([e["file"] for e in deps["series"]],
                         ["0001-core-line5.patch", "0002-core-line30.patch",
                          "0003-timer-b.patch"])
        self.assertIn("0001-core-line5.patch: changed by the merge, as "
                      "below; if it is wrong, mend it in ", res.stdout)
        self.assertIn("/out/v0.0.2/src and `scripts/uvpatch refresh --base "
                      "v0.0.2`\n    --- 0001-core-line5.patch\n", res.stdout)
        self.assertIn("\n    - int line7 = 7;\n    + int line7 = 7; /* "
                      "upstream */\n", res.stdout)
        self.assertIn("0002-core-line30.patch: same change, moved",
                      res.stdout)
        self.assertIn("0003-timer-b.patch: unchanged", res.stdout)
        self.assertIn("upstream v0.0.1", res.stdout)
        self.assertIn("-> base v0.0.2: v0.0.2", res.stdout)
        # The tree is named by what the user gave, not the scratch folder
        # it went through.
        self.assertNotIn(".fetch-ref-", res.stdout + res.stderr)
        self.assertRegex(res.stdout + res.stderr, r"verified tree \w+ "
                         r"\(v0\.0\.2 from [^)]+\)")
        self.assertEqual(sorted(os.listdir(os.path.join(
            self.root, "patches", "v0.0.2"))), [
                "0001-core-line5.patch", "0002-core-line30.patch",
                "0003-timer-b.patch"])
        src = os.path.join(self.out, "v0.0.2", "src")
        text = read(src, "src", "core.c")
        self.assertIn("int line7 = 7; /* upstream */", text)
        self.assertIn("int line5 = 50;", text)
        self.assertEqual(git(["rev-parse", "uvpatch-base"], src)
                         .stdout.strip(), new)
        self.assertFalse(os.path.exists(os.path.join(self.out, "rebase")))
        self.assertIn("up to date", self.tool("apply", "--base",
                                              "v0.0.2").stderr)
        self.assertConsistent("v0.0.2")

    def test_conflict_stops_then_continue(self):
        new = self.upstream_commit({"src/core.c": CORE.replace(
            "int line5 = 5;", "int line5 = 7;")}, "core: line5 is 7")
        # A branch has no tag: the new base is named REF@commit, made a
        # folder name.
        name = "main-" + new[:12]
        res = self.tool("rebase", "--onto", "main")
        self.assertFails(res, "0001-core-line5.patch does not apply",
                         "src/core.c: both changed; lines ",
                         "rebase --continue", "rebase --abort", "git add")
        self.assertEqual(res.returncode, 5)
        self.assertEqual(self.files(), self.snapshot)
        work = os.path.join(self.out, "rebase")
        core = read(work, "src", "core.c")
        self.assertIn("<<<<<<<", core)

        res = self.tool("rebase", "--continue")
        self.assertFails(res, "unresolved files", "src/core.c")
        self.assertEqual(self.files(), self.snapshot)

        write(os.path.join(work, "src", "core.c"),
              CORE.replace("int line5 = 5;", "int line5 = 50;"))
        git(["add", "src/core.c"], work)
        write(os.path.join(work, "README.md"), "stray edit\n")
        res = self.tool("rebase", "--continue")
        self.assertFails(res, "not added", "README.md")
        git(["checkout", "README.md"], work)
        res = self.tool("rebase", "--continue")
        self.assertOk(res)
        self.assertIn("0001-core-line5.patch: changed by the merge",
                      res.stdout)
        self.assertIn("-int line5 = 7;", read(
            self.root, "patches", name, "0001-core-line5.patch"))
        self.assertEqual(self.deps_now(name)["upstream"]["tag"],
                         "main@" + new[:12])
        self.assertUntouched()
        self.assertConsistent(name)

    def test_markers_left_in_added_file_refused(self):
        self.upstream_commit({"src/core.c": CORE.replace(
            "int line5 = 5;", "int line5 = 7;")}, "core: line5 is 7")
        self.assertFails(self.tool("rebase", "--onto", "main"))
        work = os.path.join(self.out, "rebase")
        git(["add", "src/core.c"], work)
        res = self.tool("rebase", "--continue")
        self.assertFails(res, "conflict markers", "src/core.c: lines ")

    def test_dropping_a_conflicted_patch_is_explicit(self):
        self.upstream_commit({"src/core.c": CORE.replace(
            "int line5 = 5;", "int line5 = 7;")}, "core: line5 is 7")
        # --name of an existing base moves it.
        self.assertFails(self.tool("rebase", "--onto", "main", "--name",
                                   self.base))
        work = os.path.join(self.out, "rebase")
        git(["checkout", "--ours", "src/core.c"], work)
        git(["add", "src/core.c"], work)
        res = self.tool("rebase", "--continue")
        self.assertFails(res, "leaves no change", "git am --skip")
        git(["am", "--skip"], work)
        res = self.tool("rebase", "--continue")
        self.assertOk(res)
        self.assertIn("0001-core-line5.patch: dropped", res.stdout)
        self.assertEqual([e["file"] for e in self.deps_now()["series"]],
                         ["0001-core-line30.patch", "0002-timer-b.patch"])
        self.assertConsistent()

    def test_abort(self):
        self.upstream_commit({"src/core.c": CORE.replace(
            "int line5 = 5;", "int line5 = 7;")}, "core: line5 is 7")
        self.assertFails(self.tool("rebase", "--onto", "main"))
        res = self.tool("rebase", "--onto", "main")
        self.assertFails(res, "already in progress", "--abort")
        self.assertOk(self.tool("rebase", "--abort"))
        self.assertFalse(os.path.exists(os.path.join(self.out, "rebase")))
        self.assertEqual(self.files(), self.snapshot)
        self.assertFails(self.tool("rebase", "--abort"),
                         "no rebase in progress")
        self.assertFails(self.tool("rebase", "--continue"),
                         "no rebase in progress")
        self.assertIn("up to date", self.tool("apply").stderr)

    def test_renamed_file_is_followed(self):
        new = self.upstream_commit({}, "timer: rename",
                                   moves=[("src/timer.c", "src/timers.c")])
        res = self.tool("rebase", "--onto", new, "--name", self.base)
        self.assertOk(res)
        self.assertEqual(self.deps_now()["upstream"]["commit"], new)
        self.assertEqual([b["name"] for b in self.deps_doc()["bases"]],
                         [self.base])
        text = read(self.patches, "0003-timer-b.patch")
        self.assertIn("diff --git a/src/timers.c b/src/timers.c", text)
        # The file is rewritten in place: the line shows what it was.
        self.assertIn("0003-timer-b.patch: changed by the merge", res.stdout)
        for line in ("-diff --git a/src/timer.c b/src/timer.c",
                     "+diff --git a/src/timers.c b/src/timers.c"):
            self.assertIn("\n    %s\n" % line, res.stdout)
        self.assertConsistent()

    def test_a_kept_tree_is_not_where_to_mend(self):
        new = self.upstream_commit({"src/core.c": CORE.replace(
            "int line5 = 5;", "int line5 = 7;")}, "core: line5 is 7")
        self.assertFails(self.tool("rebase", "--onto", new, "--name",
                                   self.base), "does not apply")
        work = os.path.join(self.out, "rebase")
        # Meanwhile, work of the user's own in out/<base>/src.
        write(os.path.join(self.out, self.base, "src", "README.md"), "mine\n")
        write(os.path.join(work, "src", "core.c"),
              CORE.replace("int line5 = 5;", "int line5 = 70;"))
        git(["add", "-A"], work)
        res = self.tool("rebase", "--continue")
        self.assertOk(res)
        self.assertIn("has work of its own: kept", res.stderr + res.stdout)
        self.assertIn("0001-core-line5.patch: changed by the merge, as "
                      "below\n", res.stdout)

    def test_patch_already_upstream_is_dropped(self):
        self.upstream_commit({"src/core.c": CORE.replace(
            "int line30 = 30;", "int line30 = 300;")}, "core: line30",
            tag="v0.0.2")
        res = self.tool("rebase", "--onto", "v0.0.2")
        self.assertOk(res)
        self.assertIn("0002-core-line30.patch: dropped: empty", res.stdout)
        self.assertIn("0003-timer-b.patch -> 0002-timer-b.patch",
                      res.stdout)
        self.assertUntouched()
        deps = self.deps_now("v0.0.2")
        self.assertEqual([e["file"] for e in deps["series"]],
                         ["0001-core-line5.patch", "0002-timer-b.patch"])
        # The renumbered patch keeps its own entry, not its predecessor's.
        self.assertEqual(deps["series"][1]["tests"], ["timer_b"])
        self.assertEqual(sorted(os.listdir(os.path.join(
            self.root, "patches", "v0.0.2"))),
                         ["0001-core-line5.patch", "0002-timer-b.patch"])
        self.assertConsistent("v0.0.2")

    def test_crash_mid_rebase_then_continue(self):
        new = self.upstream_commit({"README.md": "fake libuv 2\n"},
                                   "release")
        self.assertOk(self.tool("apply"))  # its `git am`s come first
        # A git that kills the tool at the rebase's second `git am`.
        fake = os.path.join(self.tmp, "fakebin")
        counter = os.path.join(self.tmp, "am-count")
        write(os.path.join(fake, "git"), shell("""#!/bin/sh
if [ "$1" = am ]; then
  n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {counter}
  if [ $n -eq 2 ]; then kill -9 $PPID; exit 1; fi
fi
exec {git} "$@"
""", counter=counter, git=shutil.which("git")))
        os.chmod(os.path.join(fake, "git"), 0o755)
        env = {"PATH": fake + os.pathsep + os.environ["PATH"]}
        res = self.tool("rebase", "--onto", new, "--name", self.base,
                        env=env)
        self.assertEqual(res.returncode, -9)
        self.assertEqual(self.files(), self.snapshot)
        res = self.tool("rebase", "--continue")
        self.assertOk(res)
        self.assertNotIn("dropped", res.stdout)
        self.assertEqual(self.deps_now()["upstream"]["commit"], new)
        self.assertEqual(len(self.deps_now()["series"]), 3)
        self.assertConsistent()

    def test_unknown_ref(self):
        res = self.tool("rebase", "--onto", "v9.9.9")
        self.assertFails(res, "no commit, branch or tag 'v9.9.9'")
        self.assertEqual(res.returncode, 4)
        self.assertEqual(self.files(), self.snapshot)
        self.assertFalse(os.path.exists(os.path.join(self.out, "rebase")))

    def test_tarball_source(self):
        self.deps["sources"].append({
            "kind": "archive",
            "url": "file:///nonexistent/fake-0.0.1.tar.gz",
            "file": "fake-0.0.1.tar.gz", "sha256": "0" * 64})
        self.deps["sources"].append({
            "kind": "debian", "package": "fake", "version": "0.0.1-1",
            "suite": "trixie", "file": "fake_0.0.1.orig.tar.gz",
            "sha256": "1" * 64})
        self.save_deps()
        new = self.upstream_commit({"README.md": "fake libuv 2\n"},
                                   "release", tag="v0.0.2")
        tarball = os.path.join(self.tmp, "fake-0.0.2.tar.gz")
        with open(tarball, "wb") as f:
            subprocess.run(["git", "archive", "--format=tar.gz",
                            "--prefix=fake-0.0.2/", "v0.0.2"],
                           cwd=self.upstream, stdout=f, check=True)
        res = self.tool("rebase", "--source", tarball, "--onto", "v0.0.2")
        self.assertOk(res)
        deps = self.deps_now("v0.0.2")
        self.assertEqual(deps["upstream"]["commit"], new)
        self.assertEqual(deps["upstream"]["tag"], "v0.0.2")
        kinds = [s["kind"] for s in deps["sources"]]
        self.assertEqual(kinds, ["git", "archive"])
        self.assertEqual(deps["sources"][1]["file"], "fake-0.0.2.tar.gz")
        self.assertIn("dropped sources[2] (debian", res.stdout)
        self.assertConsistent("v0.0.2")

    def test_debian_orig_tarball_named_in_the_note(self):
        self.deps["sources"].append({
            "kind": "debian", "package": "fake", "version": "0.0.1-1",
            "suite": "trixie", "file": "fake_0.0.1.orig.tar.gz",
            "sha256": "1" * 64})
        self.save_deps()
        self.upstream_commit({"README.md": "fake libuv 2\n"}, "release",
                             tag="v0.0.2")
        tarball = os.path.join(self.tmp, "fake_0.0.2.orig.tar.gz")
        with open(tarball, "wb") as f:
            subprocess.run(["git", "archive", "--format=tar.gz",
                            "--prefix=fake-0.0.2/", "v0.0.2"],
                           cwd=self.upstream, stdout=f, check=True)
        res = self.tool("rebase", "--source", tarball, "--onto", "v0.0.2")
        self.assertOk(res)
        self.assertIn("fake_0.0.2.orig.tar.gz is its orig tarball",
                      res.stdout)
        self.assertEqual([s["kind"] for s in
                          self.deps_now("v0.0.2")["sources"]],
                         ["git"])

    def test_tarball_of_another_version_drops_its_entry(self):
        self.deps["sources"].append({
            "kind": "archive",
            "url": "file:///nonexistent/fake-0.0.1.tar.gz",
            "file": "fake-0.0.1.tar.gz", "sha256": "0" * 64})
        self.save_deps()
        self.upstream_commit({"README.md": "fake libuv 2\n"}, "release",
                             tag="v0.0.2")
        res = self.tool("rebase", "--onto", "v0.0.2")
        self.assertOk(res)
        # The note says the base needs nothing more, not "add it back".
        self.assertIn("dropped sources[1] (archive fake-0.0.1.tar.gz): its "
                      "sha256 is for v0.0.1 and no tarball of v0.0.2 came "
                      "with --source to verify; the git source serves the "
                      "new base", res.stdout)
        self.assertEqual([s["kind"] for s in
                          self.deps_now("v0.0.2")["sources"]],
                         ["git"])

    def test_out_src_work_is_not_lost(self):
        self.assertOk(self.tool("apply"))
        src = os.path.join(self.work, "src")
        write(os.path.join(src, "src", "core.c"), "edited\n")
        res = self.tool("rebase", "--onto", "main")
        self.assertFails(res, "uncommitted edits")
        self.assertEqual(self.files(), self.snapshot)
        shutil.rmtree(src)


class RebaseBasesTest(RebaseWorld):
    """Which base a rebase starts from and which base it becomes."""

    def test_nearest_base_is_chosen_and_named(self):
        second = self.add_base("v0.0.2", {"README.md": "fake libuv 2\n"},
                               {"src/timer.c": "int timer_a = 1;\n"
                                "int timer_b = 2;\nint timer_c = 30;\n"})
        self.snapshot = self.files()
        new = self.upstream_commit({"README.md": "fake libuv 3\n"},
                                   "release 3", tag="v0.0.3")
        # A local repository has the history to measure distances in.
        res = self.tool("rebase", "--source", self.upstream, "--onto",
                        "v0.0.3")
        self.assertOk(res)
        # Both series apply whole: the nearest base wins.
        self.assertIn("rebase: starting from base v0.0.2: its series "
                      "applies whole, as 2 do, and it is the nearest to "
                      "v0.0.3 (v0.0.1: 2 commits, v0.0.2: 1 commits)",
                      res.stderr)
        self.assertIn("base v0.0.2: upstream v0.0.2 (%s) -> base v0.0.3: "
                      "v0.0.3 (%s)" % (second["upstream"]["commit"][:12],
                                       new[:12]), res.stdout)
        deps = self.deps_now("v0.0.3")
        self.assertEqual([e["file"] for e in deps["series"]],
                         [second["series"][0]["file"]])
        self.assertEqual(deps["upstream"]["commit"], new)
        self.assertEqual([b["name"] for b in self.deps_doc()["bases"]],
                         [self.base, "v0.0.2", "v0.0.3"])
        self.assertUntouched()
        self.assertUntouched("v0.0.2")
        self.assertConsistent("v0.0.3")

    def test_name_adds_a_base(self):
        new = self.upstream_commit({"README.md": "fake libuv 2\n"},
                                   "release", tag="v0.0.2")
        # What CI runs on a base is chosen for each one: not inherited.
        self.deps["ci"] = ["bisect"]
        self.save_deps()
        res = self.tool("rebase", "--onto", "v0.0.2", "--name", "fork")
        self.assertOk(res)
        self.assertIn("-> base fork: v0.0.2 (%s)" % new[:12], res.stdout)
        self.assertEqual([b["name"] for b in self.deps_doc()["bases"]],
                         [self.base, "fork"])
        self.assertEqual(self.deps_doc()["default_base"], self.base)
        deps = self.deps_now("fork")
        self.assertEqual(deps["upstream"]["tag"], "v0.0.2")
        self.assertEqual(deps["upstream"]["commit"], new)
        self.assertEqual(sorted(os.listdir(os.path.join(
            self.root, "patches", "fork"))), [
                "0001-core-line5.patch", "0002-core-line30.patch",
                "0003-timer-b.patch"])
        self.assertEqual(deps["series"][2]["tests"], ["timer_b"])
        self.assertNotIn("ci", deps)
        self.assertEqual(self.deps_now()["ci"], ["bisect"])
        self.assertUntouched()
        self.assertConsistent("fork")

    def test_backport_already_upstream_is_dropped(self):
        fix = self.upstream_commit({"src/fix.c": "int fix;\n"},
                                   "timer: make timer_c thirty")
        self.make_patch(4, "timer-c", {"src/fix.c": "int fix;\n"}, subject=(
            "timer: make timer_c thirty\n\n"
            "Origin: upstream, https://example.invalid/libuv/commit/%s\n"
            "Upstream-Status: Backport\nLast-Update: 2026-12-02\n" % fix))
        self.deps["series"][3]["upstream_status"] = "Backport"
        self.save_deps()
        self.snapshot = self.files()
        new = self.upstream_commit({"README.md": "fake libuv 2\n"},
                                   "release", tag="v0.0.2")
        res = self.tool("rebase", "--source", self.upstream, "--onto",
                        "v0.0.2")
        self.assertOk(res)
        self.assertIn("0004-timer-c.patch: dropped: already upstream "
                      "(%s is in v0.0.2)" % fix[:12], res.stdout)
        # The others are merged, not dropped.
        self.assertIn("0003-timer-b.patch: ", res.stdout)
        self.assertNotIn("0003-timer-b.patch: dropped", res.stdout)
        deps = self.deps_now("v0.0.2")
        self.assertEqual(deps["upstream"]["commit"], new)
        self.assertEqual([e["file"] for e in deps["series"]],
                         ["0001-core-line5.patch", "0002-core-line30.patch",
                          "0003-timer-b.patch"])
        self.assertUntouched()
        self.assertConsistent("v0.0.2")

    def test_backport_not_in_ref_is_kept(self):
        # The upstream fix is on a branch that REF does not contain.
        git(["checkout", "-q", "-b", "next"], self.upstream)
        fix = self.upstream_commit({"src/fix.c": "int fix;\n"},
                                   "timer: make timer_c thirty")
        git(["checkout", "-q", "main"], self.upstream)
        self.make_patch(4, "timer-c", {"src/fix.c": "int fix;\n"}, subject=(
            "timer: make timer_c thirty\n\n"
            "Origin: upstream, https://example.invalid/libuv/commit/%s\n"
            "Upstream-Status: Backport\nLast-Update: 2026-12-02\n" % fix))
        self.upstream_commit({"README.md": "fake libuv 2\n"}, "release",
                             tag="v0.0.2")
        res = self.tool("rebase", "--source", self.upstream, "--onto",
                        "v0.0.2")
        self.assertOk(res)
        self.assertNotIn("already upstream", res.stdout)
        # Kept and merged (refresh names it from its subject).
        self.assertIn("0004-timer-c.patch -> 0004-timer-make-timer_c-thirty"
                      ".patch: unchanged", res.stdout)
        self.assertEqual(len(self.deps_now("v0.0.2")["series"]), 4)

    def test_name_of_another_base_replaces_its_series(self):
        self.add_base("v0.0.2", {"README.md": "fake libuv 2\n"},
                      {"src/timer.c": "int timer_a = 1;\n"
                       "int timer_b = 2;\nint timer_c = 30;\n"})
        new = self.upstream_commit({"README.md": "fake libuv 3\n"},
                                   "release 3", tag="v0.0.3")
        # --base overrides the nearest (v0.0.2); --name moves v0.0.2.
        res = self.tool("rebase", "--source", self.upstream, "--onto",
                        "v0.0.3", "--base", self.base, "--name", "v0.0.2")
        self.assertOk(res)
        self.assertNotIn("the nearest", res.stderr)
        self.assertIn("base v0.0.1: upstream v0.0.1", res.stdout)
        deps = self.deps_now("v0.0.2")
        self.assertEqual(deps["upstream"]["commit"], new)
        self.assertEqual([e["file"] for e in deps["series"]],
                         ["0001-core-line5.patch", "0002-core-line30.patch",
                          "0003-timer-b.patch"])
        # v0.0.2's old patch went with its series.
        self.assertIn("removed patches/v0.0.2/0001-timer-second-base-change"
                      ".patch", res.stderr)
        self.assertEqual(sorted(os.listdir(os.path.join(
            self.root, "patches", "v0.0.2"))),
            ["0001-core-line5.patch", "0002-core-line30.patch",
             "0003-timer-b.patch"])
        self.assertEqual([b["name"] for b in self.deps_doc()["bases"]],
                         [self.base, "v0.0.2"])
        self.assertUntouched()
        self.assertConsistent("v0.0.2")

    def test_series_that_gets_furthest_is_chosen(self):
        # v0.0.2 is nearer to REF, but REF changes the line its one
        # patch changes; v0.0.1's three patches apply there.
        self.add_base("v0.0.2", {"README.md": "fake libuv 2\n"},
                      {"include/uv.h": "#define UV_FAKE 2\n"
                       "int uv_fake(void);\n"})
        self.snapshot = self.files()
        self.upstream_commit({"include/uv.h": "#define UV_FAKE 3\n"
                              "int uv_fake(void);\n"}, "uv.h: 3",
                             tag="v0.0.3")
        res = self.tool("rebase", "--source", self.upstream, "--onto",
                        "v0.0.3")
        self.assertOk(res)
        self.assertIn("rebase: the v0.0.1 series (2 commits from v0.0.3): "
                      "applies whole: 3 of 3 applied", res.stderr)
        self.assertIn("rebase: the v0.0.2 series (1 commits from v0.0.3): "
                      "0 of 1 applied, stops at its patch 1, "
                      "0001-timer-second-base-change.patch (conflict in "
                      "include/uv.h)", res.stderr)
        self.assertIn("rebase: starting from base v0.0.1: its series "
                      "applies whole\n", res.stderr)
        self.assertEqual([e["file"] for e in
                          self.deps_now("v0.0.3")["series"]],
                         ["0001-core-line5.patch", "0002-core-line30.patch",
                          "0003-timer-b.patch"])
        self.assertUntouched()
        self.assertUntouched("v0.0.2")

    def test_furthest_of_two_that_stop(self):
        # Neither series applies whole; the one that gets further is
        # chosen and the rebase stops at its conflict, named.
        self.add_base("v0.0.2", {"README.md": "fake libuv 2\n"},
                      {"include/uv.h": "#define UV_FAKE 2\n"
                       "int uv_fake(void);\n"})
        self.snapshot = self.files()
        self.upstream_commit({
            "include/uv.h": "#define UV_FAKE 3\nint uv_fake(void);\n",
            "src/timer.c": "int timer_a = 1;\nint timer_b = 4;\n"
                           "int timer_c = 3;\n"}, "uv.h, timer.c",
            tag="v0.0.3")
        res = self.tool("rebase", "--source", self.upstream, "--onto",
                        "v0.0.3")
        self.assertFails(res, "0003-timer-b.patch does not apply",
                         "src/timer.c: both changed")
        self.assertIn("rebase: the v0.0.1 series (2 commits from v0.0.3): "
                      "2 of 3 applied, stops at its patch 3, "
                      "0003-timer-b.patch (conflict in src/timer.c)",
                      res.stderr)
        self.assertIn("rebase: starting from base v0.0.1: its series gets "
                      "furthest (2 of 3 patches)", res.stderr)
        self.assertEqual(self.files(), self.snapshot)

    def test_offline_from_a_bundle_alone(self):
        # No upstream to reach and a cold cache: every tree the rebase
        # needs, the old base's too, comes from --source.
        self.upstream_commit({"README.md": "fake libuv 2\n"}, "release 2",
                             tag="v0.0.2")
        bundle = os.path.join(self.tmp, "upstream.bundle")
        git(["bundle", "create", "-q", bundle, "--all"], self.upstream)
        shutil.rmtree(self.upstream)
        res = self.tool("rebase", "--source", bundle, "--onto", "v0.0.2")
        self.assertOk(res)
        self.assertIn("verified tree %s (--source %s)"
                      % (self.tree[:7], bundle), res.stderr)
        self.assertEqual(self.deps_now("v0.0.2")["upstream"]["tag"],
                         "v0.0.2")
