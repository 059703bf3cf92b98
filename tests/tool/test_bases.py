"""Several bases in one deps.json: --base picks the series and the out/
folder, bases never overwrite each other, `bases` lists them, and
UVPATCH_SOURCE is a mirror tried after the cache."""

import os
import shutil

from fixture import World, git, UPSTREAM_FILES

from uvpatchlib.verify import testing

TIMER2 = "int timer_a = 1;\nint timer_b = 2;\nint timer_c = 30;\n"


class BasesTest(World):
    def setUp(self):
        super().setUp()
        # v0.0.1's patches first: they are cut from upstream's HEAD.
        self.make_three_patches()
        self.second = self.add_base(
            "v0.0.2", {"README.md": "fake libuv 2\n"},
            {"src/timer.c": TIMER2}, purpose="the next release")
        self.commit2 = self.second["upstream"]["commit"]

    def test_base_picks_series_and_out_folder(self):
        self.assertOk(self.tool("apply", "--base", "v0.0.2"))
        src2 = os.path.join(self.out, "v0.0.2", "src")
        self.assertFalse(os.path.exists(os.path.join(self.work, "src")))
        self.assertEqual(git(["rev-parse", "uvpatch-base"], src2)
                         .stdout.strip(), self.commit2)
        self.assertEqual(git(["log", "--format=%s", "uvpatch-base..HEAD"],
                             src2).stdout.split("\n")[:1],
                         ["timer: second base change"])
        with open(os.path.join(src2, "src", "timer.c")) as f:
            self.assertIn("int timer_c = 30;", f.read())
        head2 = self.src_head("v0.0.2")

        # The default base, in its own folder, leaves v0.0.2's alone.
        self.assertOk(self.tool("apply"))
        self.assertEqual(git(["rev-parse", "uvpatch-base"], os.path.join(
            self.work, "src")).stdout.strip(), self.commit)
        self.assertEqual(git(["log", "--format=%s", "uvpatch-base..HEAD"],
                             os.path.join(self.work, "src"))
                         .stdout.strip().split("\n"),
                         ["core: change timer-b", "core: change core-line30",
                          "core: change core-line5"])
        self.assertEqual(self.src_head("v0.0.2"), head2)
        res = self.tool("apply", "--base", "v0.0.2")
        self.assertOk(res)
        self.assertIn("up to date", res.stderr)

    def test_unknown_base(self):
        res = self.tool("apply", "--base", "v9.9.9")
        self.assertFails(res, "no base 'v9.9.9' in deps.json", "v0.0.1",
                         "v0.0.2")
        self.assertEqual(res.returncode, 2)
        self.assertFalse(os.path.exists(os.path.join(self.out, "v9.9.9")))

    def test_bases_lists_them(self):
        res = self.tool("bases")
        self.assertOk(res)
        lines = res.stdout.splitlines()
        self.assertTrue(lines[0].startswith(
            "v0.0.1 (default)  v0.0.1 %s, 3 patches in patches/v0.0.1/"
            % self.commit[:12]), lines[0])
        second = [ln for ln in lines if ln.startswith("v0.0.2")]
        self.assertEqual(second, [
            "v0.0.2  v0.0.2 %s, 1 patches in patches/v0.0.2/"
            % self.commit2[:12]])
        self.assertIn("  for: the next release", lines)
        self.assertEqual(res.stdout.count("not cached"), 2)
        self.assertIn("  sources, in order after the cache: git file://"
                      + self.upstream, lines)

        self.assertOk(self.tool("fetch", "--base", "v0.0.2"))
        mirror = os.path.join(self.tmp, "mirror.bundle")
        res = self.tool("bases", env={"UVPATCH_SOURCE": mirror})
        self.assertOk(res)
        self.assertEqual(res.stdout.count("not cached"), 1)
        self.assertIn("cached in " + os.path.join(
            self.cache, "uvpatch", self.second["upstream"]["tree"]),
            res.stdout)
        self.assertIn("sources, in order after the cache: UVPATCH_SOURCE "
                      "%s; git file://%s" % (mirror, self.upstream),
                      res.stdout)

    def test_names_and_ci_steps_for_scripts(self):
        res = self.tool("bases", "--names")
        self.assertOk(res)
        self.assertEqual(res.stdout, "v0.0.1\nv0.0.2\n")
        res = self.tool("bases", "--default")
        self.assertOk(res)
        self.assertEqual(res.stdout, "v0.0.1\n")
        self.deps["ci"] = ["libuv", "bisect"]
        self.save_deps()
        res = self.tool("bases", "--ci")
        self.assertOk(res)
        self.assertEqual(res.stdout, "libuv\nbisect\n")
        self.assertIn("  in CI beyond the test command: libuv, bisect",
                      self.tool("bases").stdout.splitlines())
        res = self.tool("bases", "--ci", "--base", "v0.0.2")
        self.assertOk(res)
        self.assertEqual(res.stdout, "")
        for steps, problem in ((["lint"], "unknown CI step 'lint'"),
                               (["libuv", "libuv"], "names a step twice")):
            self.deps["ci"] = steps
            self.save_deps()
            self.assertFails(self.tool("bases", "--names"),
                             "deps.json: bases[0].ci: " + problem)

    def mirror_of_first(self):
        """A bundle of upstream as it was at v0.0.1: it lacks v0.0.2."""
        clone = os.path.join(self.tmp, "old-upstream")
        git(["clone", "-q", "--no-local", self.upstream, clone], self.tmp)
        git(["reset", "-q", "--hard", self.commit], clone)
        bundle = os.path.join(self.tmp, "old.bundle")
        git(["bundle", "create", bundle, "main"], clone)
        return bundle

    def test_mirror_lacking_the_commit_falls_through(self):
        bundle = self.mirror_of_first()
        env = {"UVPATCH_SOURCE": bundle}
        res = self.tool("fetch", "--base", "v0.0.2", env=env)
        self.assertOk(res)
        self.assertIn("UVPATCH_SOURCE %s: does not contain commit %s"
                      % (bundle, self.commit2), res.stderr)
        self.assertIn("(git file://%s)" % self.upstream, res.stderr)
        # The mirror does serve the base it holds, before the git source.
        res = self.tool("fetch", env=env)
        self.assertOk(res)
        self.assertIn("(UVPATCH_SOURCE %s)" % bundle, res.stderr)
        self.assertNotIn("git file://", res.stderr)

    def test_cache_wins_over_the_mirror(self):
        self.assertOk(self.tool("fetch", "--base", "v0.0.2"))
        # Not a source at all: were it tried, it would say so.
        junk = os.path.join(self.tmp, "junk")
        with open(junk, "w") as f:
            f.write("not a bundle\n")
        res = self.tool("fetch", "--base", "v0.0.2",
                        env={"UVPATCH_SOURCE": junk})
        self.assertOk(res)
        self.assertIn("(cache)", res.stderr)
        self.assertNotIn("UVPATCH_SOURCE", res.stderr)
        # Once the cache is gone, the same junk is tried, then the next.
        shutil.rmtree(os.path.join(self.cache, "uvpatch",
                                   self.second["upstream"]["tree"]))
        res = self.tool("fetch", "--base", "v0.0.2",
                        env={"UVPATCH_SOURCE": junk})
        self.assertOk(res)
        self.assertIn("UVPATCH_SOURCE %s: is neither" % junk, res.stderr)

    def test_unreachable_base_is_skipped_with_a_reason(self):
        from uvpatchlib.series import manifest
        old = os.environ.get("XDG_CACHE_HOME")
        os.environ["XDG_CACHE_HOME"] = self.cache
        self.addCleanup(_restore_env, "XDG_CACHE_HOME", old)
        old_mirror = os.environ.pop("UVPATCH_SOURCE", None)
        self.addCleanup(_restore_env, "UVPATCH_SOURCE", old_mirror)
        away = self.upstream + ".away"
        os.rename(self.upstream, away)
        try:
            why = testing._unreachable(manifest.load(self.root,
                                                     base="v0.0.2"), None)
        finally:
            os.rename(away, self.upstream)
        self.assertIsNotNone(why)
        self.assertTrue(why.startswith("v0.0.2: no source reachable ("),
                        why)
        self.assertIn("git file://" + self.upstream, why)
        self.assertIn("set UVPATCH_SOURCE", why)
        self.assertNotIn("\n", why)
        # Reachable: nothing to say, and the tree is then cached.
        self.assertIsNone(testing._unreachable(
            manifest.load(self.root, base="v0.0.2"), None))
        self.assertTrue(os.path.isdir(os.path.join(
            self.cache, "uvpatch", self.second["upstream"]["tree"])))


def _restore_env(key, value):
    if value is None:
        os.environ.pop(key, None)
    else:
        os.environ[key] = value


class BaseManifestTest(World):
    """What deps.json's list of bases must satisfy, through the CLI."""

    def setUp(self):
        super().setUp()
        self.make_patch(1, "core-one", {"src/core.c": "int x;\n"})
        self.second = self.add_base(
            "v0.0.2", {"README.md": "fake libuv 2\n"},
            {"src/timer.c": UPSTREAM_FILES["src/timer.c"] + "int d;\n"})

    def test_hash_mismatch_names_the_base(self):
        path = os.path.join(self.root, "patches", "v0.0.2",
                            self.second["series"][0]["file"])
        with open(path, "a") as f:
            f.write("\n")
        res = self.tool("apply")
        self.assertFails(res, "bases[1].series[0].sha256: does not match "
                         "patches/v0.0.2/" + self.second["series"][0]["file"],
                         "scripts/uvpatch refresh --base v0.0.2")
        self.assertEqual(res.returncode, 3)

    def test_folder_of_no_base(self):
        os.makedirs(os.path.join(self.root, "patches", "v0.0.3"))
        res = self.tool("apply")
        self.assertFails(res, "patches/v0.0.3 belongs to no declared base")

    def test_duplicate_name(self):
        self.extra[0]["name"] = self.base
        self.save_deps()
        res = self.tool("fetch")
        self.assertFails(res, "bases[1].name: 'v0.0.1' is declared twice")

    def test_bad_name(self):
        for bad in ("../up", "a/b", ".hidden", "v 1"):
            self.extra[0]["name"] = bad
            self.save_deps()
            res = self.tool("fetch")
            self.assertFails(res, "bases[1].name: %r is not a base name"
                             % bad)

    def test_default_base_not_declared(self):
        self.base = "v9"
        self.save_deps()
        res = self.tool("fetch")
        self.assertFails(res, "default_base: 'v9' is not one of the bases "
                         "(v0.0.1, v0.0.2)")
        self.assertEqual(res.returncode, 3)
