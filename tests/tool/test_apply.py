import os
import stat

from fixture import World, git, shell, write


class ApplyTest(World):
    def setUp(self):
        super().setUp()
        self.make_three_patches()

    def test_apply_builds_the_series(self):
        res = self.tool("apply")
        self.assertOk(res)
        src = os.path.join(self.work, "src")
        log = git(["log", "--format=%s"], src).stdout.split("\n")
        self.assertEqual(log[:4], ["core: change timer-b",
                                   "core: change core-line30",
                                   "core: change core-line5", "upstream"])
        # The base is the upstream commit itself (a git source).
        self.assertEqual(git(["rev-parse", "uvpatch-base"], src)
                         .stdout.strip(), self.commit)
        self.assertIn("int line30 = 300;",
                      open(os.path.join(src, "src", "core.c")).read())

    def test_second_apply_does_nothing(self):
        self.assertOk(self.tool("apply"))
        head = self.src_head()
        mtime = os.stat(os.path.join(self.work, "src", "src",
                                     "core.c")).st_mtime_ns
        res = self.tool("apply")
        self.assertOk(res)
        self.assertIn("up to date", res.stderr)
        self.assertEqual(self.src_head(), head)
        self.assertEqual(os.stat(os.path.join(
            self.work, "src", "src", "core.c")).st_mtime_ns, mtime)

    def test_reproducible_commit_ids(self):
        self.assertOk(self.tool("apply"))
        first = self.src_head()
        self.assertOk(self.tool("apply", "--discard"))
        os.rename(os.path.join(self.work, "src"), os.path.join(self.tmp, "x"))
        self.assertOk(self.tool("apply"))
        self.assertEqual(self.src_head(), first)

    def test_failing_patch_names_patch_file_and_hunk(self):
        self.assertOk(self.tool("apply"))
        head = self.src_head()
        path = os.path.join(self.patches, "0002-core-line30.patch")
        text = open(path).read().replace("int line28 = 28;",
                                         "int line28 = 99;")
        write(path, text)
        self.deps["series"][1]["sha256"] = __import__("fixture").sha256(path)
        self.save_deps()
        res = self.tool("apply")
        self.assertFails(res, "0002-core-line30.patch does not apply",
                         "src/core.c: hunk #1 @@ -")
        self.assertEqual(res.returncode, 5)
        # The previous tree is intact, and no scratch copy is left.
        self.assertEqual(self.src_head(), head)
        self.assertFalse(os.path.exists(os.path.join(self.work, ".src.new")))

    def test_offset_is_refused(self):
        # Same context, but the hunk header claims another line: git apply
        # would apply it at an offset; the series must apply exactly.
        path = os.path.join(self.patches, "0003-timer-b.patch")
        text = open(path).read().replace("@@ -1,3 +1,3 @@",
                                         "@@ -5,3 +5,3 @@")
        write(path, text)
        self.deps["series"][2]["sha256"] = __import__("fixture").sha256(path)
        self.save_deps()
        res = self.tool("apply")
        self.assertFails(res, "0003-timer-b.patch")
        self.assertFalse(os.path.exists(os.path.join(self.work, "src")))

    def test_crash_mid_series_leaves_no_half_state(self):
        self.assertOk(self.tool("apply"))
        head = self.src_head()
        # A git that kills the tool at the second `git am`.
        fake = os.path.join(self.tmp, "fakebin")
        os.makedirs(fake)
        counter = os.path.join(self.tmp, "am-count")
        real_git = __import__("shutil").which("git")
        script = os.path.join(fake, "git")
        write(script, shell("""#!/bin/sh
if [ "$1" = am ]; then
  n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {counter}
  if [ $n -eq 2 ]; then kill -9 $PPID; exit 1; fi
fi
exec {git} "$@"
""", counter=counter, git=real_git))
        os.chmod(script, stat.S_IRWXU)
        # A changed series forces a new apply.
        self.make_patch(4, "timer-c", {"src/timer.c": "int timer_a = 1;\n"
                                       "int timer_b = 20;\n"
                                       "int timer_c = 30;\n"})
        env = {"PATH": fake + os.pathsep + os.environ["PATH"]}
        res = self.tool("apply", env=env)
        self.assertEqual(res.returncode, -9)
        self.assertEqual(self.src_head(), head)
        res = self.tool("apply")
        self.assertOk(res)
        self.assertFalse(os.path.exists(os.path.join(self.work, ".src.new")))
        self.assertIn("int timer_c = 30;", open(os.path.join(
            self.work, "src", "src", "timer.c")).read())

    def test_crash_while_removing_the_old_tree_is_cleaned_up(self):
        # A kill after the swap of out/src, while the old tree was being
        # removed: out/src is whole and up to date, part of src.old is
        # left. The next run, with nothing to apply, removes it.
        self.assertOk(self.tool("apply"))
        head = self.src_head()
        old = os.path.join(self.work, "src.old")
        write(os.path.join(old, "src", "timer.c"), "int half;\n")
        self.assertOk(self.tool("apply"))
        self.assertEqual(self.src_head(), head)
        self.assertFalse(os.path.lexists(old))

    def test_local_commits_are_not_lost(self):
        self.assertOk(self.tool("apply"))
        src = os.path.join(self.work, "src")
        write(os.path.join(src, "src", "new.c"), "int n;\n")
        git(["add", "-A"], src)
        git(["commit", "-q", "-m", "core: add new.c"], src)
        res = self.tool("apply")
        self.assertFails(res, "not in patches/", "core: add new.c",
                         "refresh", "--discard")
        self.assertEqual(res.returncode, 6)
        write(os.path.join(src, "src", "core.c"), "edited\n")
        res = self.tool("apply")
        self.assertFails(res, "uncommitted edits", "src/core.c")
        self.assertOk(self.tool("apply", "--discard"))

    def test_empty_series(self):
        self.deps["series"] = []
        for name in os.listdir(self.patches):
            os.unlink(os.path.join(self.patches, name))
        self.save_deps()
        res = self.tool("apply")
        self.assertOk(res)
        self.assertIn("the series is empty", res.stderr)
        self.assertEqual(self.src_head(), self.commit)

    def test_tarball_base_commit_is_reproducible(self):
        from test_fetch import make_tarball
        tarball = os.path.join(self.tmp, "fake-1.0.tar.gz")
        make_tarball(tarball, self.upstream)
        self.assertOk(self.tool("apply", "--source", tarball))
        src = os.path.join(self.work, "src")
        base = git(["rev-parse", "uvpatch-base"], src).stdout.strip()
        self.assertNotEqual(base, self.commit)
        self.assertEqual(git(["rev-parse", "uvpatch-base^{tree}"], src)
                         .stdout.strip(), self.tree)
        __import__("shutil").rmtree(self.out)
        __import__("shutil").rmtree(self.cache)
        self.assertOk(self.tool("apply", "--source", tarball))
        self.assertEqual(git(["rev-parse", "uvpatch-base"], src)
                         .stdout.strip(), base)
