"""build --prefix under faults: a prefix refused before any build, a
kill at any moment of the install, a full disk, a second install into
a prefix while one runs. A consumer of the prefix never sees a partial install,
and the next ordinary `build --prefix` repairs whatever was left."""

import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import time
import unittest

from fixture import TOOL, git, shell, write
from test_build import BuildWorld, HAVE_TOOLS
from test_faults import UNSHARE_SKIP, _group_alive
from test_keep import add_specials, assert_specials, posix_acl

from uvpatchlib.build.install import PROVENANCE
from uvpatchlib.build.vendor import local_edits

SEED = 20261203
KILLS = 3


@unittest.skipUnless(HAVE_TOOLS, "needs cmake, ninja and cc")
class InstallFaultTest(BuildWorld):
    """One world and one build for every test (each has its own prefix):
    what is tested is the install, and builds take seconds."""

    @classmethod
    def setUpClass(cls):
        world = cls("test_refused_before_any_build")
        BuildWorld.setUp(world)
        cls.addClassCleanup(world.doCleanups)
        # One patch, so that a patched and an unpatched install differ:
        # the patched one is larger by a 64 KiB header.
        world.make_patch(1, "timer-b", {
            "src/timer.c": "int timer_a = 1;\nint timer_b = 20;\n"
                           "int timer_c = 3;\n",
            "include/uv/big.h": "/* %s */\n" % ("x" * 58) * 1024})
        cls.shared = world
        # Both variants built once: the tests' commands only install.
        for flag in ([], ["--unpatched"]):
            world.assertOk(world.tool("build", *flag, "--prefix",
                                      os.path.join(world.tmp, "warm")))

    def setUp(self):
        for key in ("tmp", "root", "out", "cache", "upstream", "base",
                    "patches", "deps", "extra"):
            setattr(self, key, getattr(self.shared, key))
        self.prefix = os.path.join(self.tmp, self._testMethodName,
                                   "libuv")

    def env(self, extra=None):
        full = dict(os.environ, XDG_CACHE_HOME=self.cache,
                    GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
        full.pop("UVPATCH_SOURCE", None)
        full.update(extra or {})
        return full

    def argv(self, *args, out=None):
        return [sys.executable, TOOL, "--repo", self.root, "--out",
                out or self.out] + list(args)

    def whole(self, prefix=None):
        """'' when the prefix is absent or a whole install of this tool,
        as a consumer would find it; else what is wrong."""
        prefix = prefix or self.prefix
        if not os.path.lexists(prefix):
            return ""
        edits = local_edits(prefix, PROVENANCE)
        if edits is None:
            return "%d files, no valid provenance" % sum(
                len(f) for _, _, f in os.walk(prefix))
        return "; ".join(edits)

    def beside(self):
        """What an install left next to the prefix, but its lock."""
        folder, name = os.path.split(self.prefix)
        return sorted(n for n in os.listdir(folder)
                      if n != name and n != ".%s.uvpatch-lock" % name)

    def test_refused_before_any_build(self):
        afile = os.path.join(self.tmp, "afile")
        write(afile, "x\n")
        for prefix, phrase in (
                (os.path.join(afile, "sub", "prefix"), "which is a file"),
                (afile, "exists and is not a folder")):
            res = self.tool("build", "--prefix", prefix)
            self.assertFails(res, phrase)
            self.assertEqual(res.returncode, 2)
            self.assertNotIn("=== build", res.stderr)
            self.assertNotIn("=== fetch", res.stderr)

    @unittest.skipIf(UNSHARE_SKIP, UNSHARE_SKIP)
    def test_read_only_and_mount_point_refused_before_any_build(self):
        ro = os.path.join(self.tmp, "ro")
        os.makedirs(ro)
        log = os.path.join(self.tmp, "log")
        script = shell(
            "mount --bind {ro} {ro} && mount -o remount,bind,ro {ro} "
            "|| exit 99\n"
            "{tool} build --prefix {ro_libuv} >{log1} 2>&1\n"
            "echo $? >>{log1}\n"
            "mount -t tmpfs -o size=1m tmpfs {ro} || exit 99\n"
            "{tool} build --prefix {ro} >{log2} 2>&1; echo $? >>{log2}\n",
            ro=ro, ro_libuv=os.path.join(ro, "libuv"), log1=log + ".1",
            log2=log + ".2", tool=self.argv())
        res = subprocess.run(["unshare", "-m", "sh", "-c", script],
                             env=self.env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertEqual(res.returncode, 0, res.stderr)
        for n, phrase in ((1, "is on a read-only file system"),
                          (2, "is a mount point")):
            with open("%s.%d" % (log, n)) as f:
                text = f.read()
            self.assertIn(phrase, text)
            self.assertIn("hint: ", text)
            self.assertNotIn("=== build", text)
            self.assertEqual(text.split()[-1], "2", text)

    def test_interrupted_installs_are_repaired(self):
        """Each state a kill can leave, made by hand, then the next
        `build --prefix`: exit 0, a whole install, nothing beside."""
        self.assertOk(self.tool("build", "--prefix", self.prefix))
        folder, name = os.path.split(self.prefix)
        new = os.path.join(folder, ".%s.uvpatch-new" % name)
        old = os.path.join(folder, ".%s.uvpatch-old" % name)
        states = {
            # Killed while CMake staged the new install.
            "half-staged": lambda: write(os.path.join(new, "lib",
                                                      "libuv.so.1"), "x"),
            # Killed between the two renames: no prefix at all.
            "between renames": lambda: (
                shutil.copytree(self.prefix, new, symlinks=True),
                os.rename(self.prefix, old)),
            # Killed while the earlier install was being removed.
            "old half-removed": lambda: (
                shutil.copytree(self.prefix, old, symlinks=True),
                os.unlink(os.path.join(old, *PROVENANCE.split("/")))),
        }
        for label, make in states.items():
            make()
            self.assertEqual(self.whole(), "", label)
            res = self.tool("build", "--unpatched", "--prefix", self.prefix)
            self.assertOk(res)
            self.assertEqual(self.whole(), "", label)
            self.assertTrue(os.path.isfile(os.path.join(
                self.prefix, *PROVENANCE.split("/"))), label)
            self.assertEqual(self.beside(), [], label)
        # A first install killed while staging: no prefix yet.
        shutil.rmtree(self.prefix)
        write(os.path.join(new, "include", "uv.h"), "half\n")
        self.assertOk(self.tool("build", "--prefix", self.prefix))
        self.assertEqual(self.whole(), "")
        self.assertEqual(self.beside(), [])

    def test_prefix_versioned_with_git_is_kept(self):
        self.assertOk(self.tool("build", "--prefix", self.prefix))
        git(["init", "-q", "-b", "main"], self.prefix)
        git(["add", "-A"], self.prefix)
        git(["commit", "-q", "-m", "my libuv"], self.prefix)
        res = self.tool("build", "--unpatched", "--prefix", self.prefix)
        self.assertOk(res)
        self.assertEqual(git(["log", "--format=%s"], self.prefix).stdout,
                         "my libuv\n")
        self.assertEqual(self.whole(), "")
        self.assertFalse(os.path.exists(os.path.join(
            self.prefix, "include", "uv", "big.h")))

    def test_empty_folders_and_special_files_are_kept(self):
        self.assertOk(self.tool("build", "--prefix", self.prefix))
        add_specials(self.prefix, self)
        res = self.tool("build", "--unpatched", "--prefix", self.prefix)
        self.assertOk(res)
        assert_specials(self, self.prefix)
        self.assertEqual(self.whole(), "")
        self.assertEqual(self.beside(), [])

    def test_prefix_folder_keeps_mode_owner_and_acl(self):
        self.assertOk(self.tool("build", "--prefix", self.prefix))
        os.chmod(self.prefix, 0o2775)
        owned = os.geteuid() == 0
        if owned:
            os.chown(self.prefix, 65534, 100)
        try:
            os.setxattr(self.prefix, "system.posix_acl_access",
                        posix_acl(65534))
            acl = os.getxattr(self.prefix, "system.posix_acl_access")
        except OSError:
            acl = None      # no ACLs on this file system
        mode = stat.S_IMODE(os.stat(self.prefix).st_mode)
        self.assertOk(self.tool("build", "--unpatched", "--prefix",
                                self.prefix))
        st = os.stat(self.prefix)
        self.assertEqual(stat.S_IMODE(st.st_mode), mode)
        if owned:
            self.assertEqual((st.st_uid, st.st_gid), (65534, 100))
        if acl is not None:
            self.assertEqual(os.getxattr(self.prefix,
                                         "system.posix_acl_access"), acl)

    def test_file_written_during_the_install_is_kept(self):
        """Another program writes into the prefix while CMake stages: the
        install stops before its swap, the file and the earlier install
        stay."""
        self.assertOk(self.tool("build", "--prefix", self.prefix))
        fake = os.path.join(self.tmp, "plugbin")
        plugin = os.path.join(self.prefix, "lib", "plugin.so")
        write(os.path.join(fake, "cmake"), shell(
            "#!/bin/sh\n"
            "case \" $* \" in *\" --install \"*)\n"
            "  echo mine > {plugin};;\n"
            "esac\nexec {cmake} \"$@\"\n",
            plugin=plugin, cmake=shutil.which("cmake")))
        os.chmod(os.path.join(fake, "cmake"), 0o755)
        res = subprocess.run(
            self.argv("build", "--unpatched", "--prefix", self.prefix),
            env=self.env({"PATH": fake + os.pathsep + os.environ["PATH"]}),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertFails(res, "changed while the install ran",
                         "added lib/plugin.so", "nothing was overwritten")
        self.assertEqual(res.returncode, 6)
        with open(plugin) as f:
            self.assertEqual(f.read(), "mine\n")
        os.unlink(plugin)
        self.assertEqual(self.whole(), "")
        self.assertTrue(os.path.exists(os.path.join(
            self.prefix, "include", "uv", "big.h")))   # still the patched
        self.assertEqual(self.beside(), [])

    def test_journal_is_checked_before_use(self):
        """A journal beside the prefix that this tool did not write: the
        wrong shape, a FIFO, a link to /dev/zero, too large, a path out
        of the prefix. Refused with a hint, never a traceback or a hang;
        and a link in the staging folder is never followed."""
        self.assertOk(self.tool("build", "--prefix", self.prefix))
        folder, name = os.path.split(self.prefix)
        journal = os.path.join(folder, ".%s.uvpatch-kept" % name)
        new = os.path.join(folder, ".%s.uvpatch-new" % name)
        plants = {
            "null": lambda: write(journal, "null\n"),
            "[5]": lambda: write(journal, "[5]\n"),
            "outside": lambda: write(journal, '["../../etc"]\n'),
            "fifo": lambda: os.mkfifo(journal),
            "/dev/zero": lambda: os.symlink("/dev/zero", journal),
            "large": lambda: write(journal, "[%s]" % ",".join(
                ['"a"'] * 300000)),
        }
        for label, plant in plants.items():
            plant()
            res = subprocess.run(
                self.argv("build", "--prefix", self.prefix),
                env=self.env(), stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, timeout=60)
            self.assertFails(res, "is not a journal this tool wrote")
            self.assertEqual(res.returncode, 6, label)
            self.assertEqual(self.whole(), "", label)
            os.unlink(journal)
        # A planted journal and a link in the staging folder: the file
        # the link reaches stays where it is.
        elsewhere = os.path.join(self.tmp, "elsewhere")
        write(os.path.join(elsewhere, "secret.txt"), "not yours\n")
        os.makedirs(new)
        os.symlink(elsewhere, os.path.join(new, "share2"))
        write(journal, '["share2/secret.txt"]\n')
        self.assertOk(self.tool("build", "--prefix", self.prefix))
        self.assertTrue(os.path.isfile(os.path.join(elsewhere,
                                                    "secret.txt")))
        self.assertFalse(os.path.lexists(os.path.join(self.prefix,
                                                      "share2")))
        self.assertEqual(self.whole(), "")
        self.assertEqual(self.beside(), [])

    def test_kill_during_install(self):
        """kill -9 at random moments of the install and the swap (a
        cmake that pauses after installing widens them); a consumer
        looking at once sees a whole install, and the rerun repairs."""
        rng = random.Random(SEED)
        fake = os.path.join(self.tmp, "slowbin")
        mark = os.path.join(self.tmp, "installing")
        write(os.path.join(fake, "cmake"), shell(
            "#!/bin/sh\n"
            "case \" $* \" in *\" --install \"*)\n"
            "  touch {mark}; {cmake} \"$@\"; rc=$?; sleep 0.3; exit $rc;;\n"
            "esac\nexec {cmake} \"$@\"\n",
            mark=mark, cmake=shutil.which("cmake")))
        os.chmod(os.path.join(fake, "cmake"), 0o755)
        env = self.env({"PATH": fake + os.pathsep + os.environ["PATH"]})
        self.assertOk(self.tool("build", "--prefix", self.prefix))
        problems, killed = [], 0
        for n in range(KILLS):
            args = ["build", "--prefix", self.prefix] + (
                ["--unpatched"] if n % 2 == 0 else [])
            if os.path.exists(mark):
                os.unlink(mark)
            p = subprocess.Popen(self.argv(*args), env=env,
                                 stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL,
                                 start_new_session=True)
            deadline = time.monotonic() + 60
            while not os.path.exists(mark) and p.poll() is None and \
                    time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(rng.uniform(0, 0.45))
            if p.poll() is None:
                killed += 1
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            while _group_alive(p.pid):
                time.sleep(0.01)
            seen = self.whole()
            if seen:
                problems.append("kill #%d: a consumer sees %s" % (n, seen))
            res = subprocess.run(self.argv(*args), env=env,
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            if res.returncode != 0:
                problems.append("kill #%d: rerun exit %d: %s"
                                % (n, res.returncode, res.stderr[-300:]))
            if self.whole() or self.beside():
                problems.append("kill #%d: after the rerun: %s %s"
                                % (n, self.whole(), self.beside()))
        print("\n[install] kill -9 during install: %d runs, %d killed "
              "before the end; %d problems" % (KILLS, killed,
                                               len(problems)),
              file=sys.stderr)
        self.assertEqual(problems, [])

    def test_an_install_waits_for_another(self):
        # Two installs into one prefix (from two --out folders, say):
        # the second waits for the first's lock instead of failing.
        from uvpatchlib.fsutil import Lock
        folder, name = os.path.split(self.prefix)
        with Lock(folder, "test", name=".%s.uvpatch-lock" % name):
            p = subprocess.Popen(self.argv("build", "--prefix", self.prefix),
                                 env=self.env(), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
            for line in p.stderr:
                if "waiting for another uvpatch command" in line:
                    break
            self.assertIsNone(p.poll())
            self.assertFalse(os.path.exists(self.prefix))
        rest = p.stderr.read()
        self.assertEqual(p.wait(timeout=120), 0, rest)
        self.assertEqual(self.whole(), "")
        self.assertEqual(self.beside(), [])

    @unittest.skipIf(UNSHARE_SKIP, UNSHARE_SKIP)
    def test_full_disk(self):
        """The prefix on a small tmpfs: a first install, then a larger
        one that does not fit even in the room of the first. It fails
        naming the full disk, the earlier install stays whole, and with
        room again the next one succeeds."""
        disk = os.path.join(self.tmp, "disk")
        os.makedirs(disk)
        prefix = os.path.join(disk, "libuv")
        log = os.path.join(self.tmp, "log")
        script = shell(
            "mount -t tmpfs -o size=2m tmpfs {disk} || exit 99\n"
            "{tool} build --unpatched --prefix {prefix} >{log1} 2>&1 "
            "|| exit 98\n"
            # Leave 8 KiB: less than the 64 KiB the patched install adds.
            "avail=$(df -k --output=avail {disk} | tail -1)\n"
            "dd if=/dev/zero of={filler} bs=1k count=$((avail - 8)) "
            "2>/dev/null\n"
            "{tool} build --prefix {prefix} >{log2} 2>&1\n"
            "echo $? >>{log2}\n"
            "cp -a {prefix} {seen}; ls -a {disk} >{logls}\n"
            "rm {filler}\n"
            "{tool} build --prefix {prefix} >{log3} 2>&1\n"
            "echo $? >>{log3}\n"
            "cp -a {prefix} {after}; ls -a {disk} >>{logls}\n",
            disk=disk, prefix=prefix, tool=self.argv(),
            filler=os.path.join(disk, "filler"), log1=log + ".1",
            log2=log + ".2", log3=log + ".3", logls=log + ".ls",
            seen=os.path.join(self.tmp, "seen"),
            after=os.path.join(self.tmp, "after"))
        res = subprocess.run(["unshare", "-m", "sh", "-c", script],
                             env=self.env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, timeout=300)
        self.assertEqual(res.returncode, 0, res.stderr + open(
            log + ".1").read() if os.path.exists(log + ".1") else "")
        with open(log + ".2") as f:
            full = f.read()
        self.assertIn("No space left on device", full)
        self.assertIn("the prefix is unchanged", full)
        self.assertIn("hint: free space", full)
        self.assertNotIn("Traceback", full)
        self.assertEqual(full.split()[-1], "1", full)
        # What the failed install left: the earlier one, whole.
        self.assertEqual(self.whole(os.path.join(self.tmp, "seen")), "")
        with open(log + ".3") as f:
            again = f.read()
        self.assertEqual(again.split()[-1], "0", again)
        self.assertEqual(self.whole(os.path.join(self.tmp, "after")), "")
        with open(log + ".ls") as f:
            listing = f.read().split()
        self.assertNotIn(".libuv.uvpatch-new", listing)
        print("\n[install] full disk: %r; with room again: ok"
              % [ln for ln in full.splitlines()
                 if ln.startswith("error")][0][:150], file=sys.stderr)
