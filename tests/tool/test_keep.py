"""What is not ours is never deleted or changed: vendor keeps what its
destination holds that no export wrote (.git, empty folders, special
files), re-checks the destination just before the swap, never writes
through a link, and keeps two runs apart. (build --prefix's side is in
test_install.py, which has a build to install.)"""

import fcntl
import os
import shutil
import socket
import stat
import struct

from fixture import VendorWorld, World, git, shell, write

from uvpatchlib.build import swap


def kinds(folder):
    """{relative path: kind} of the entries swap.foreign keeps."""
    found = {}
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(top, name)
            mode = os.lstat(path).st_mode
            kind = ("dir" if stat.S_ISDIR(mode) else "fifo"
                    if stat.S_ISFIFO(mode) else "socket"
                    if stat.S_ISSOCK(mode) else "file")
            found[os.path.relpath(path, folder)] = kind
    return found


def add_specials(folder, test):
    """An empty folder, a FIFO and a socket in ``folder``; the socket's
    listener is closed at the test's end."""
    os.makedirs(os.path.join(folder, "src", "empty", "deeper"))
    os.mkfifo(os.path.join(folder, "src", "fifo"))
    sock = socket.socket(socket.AF_UNIX)
    test.addCleanup(sock.close)
    sock.bind(os.path.join(folder, "sock"))
    if os.geteuid() == 0:
        os.mknod(os.path.join(folder, "null"), 0o600 | stat.S_IFCHR,
                 os.makedev(1, 3))


def assert_specials(test, folder):
    test.assertTrue(os.path.isdir(os.path.join(folder, "src", "empty",
                                               "deeper")))
    test.assertTrue(stat.S_ISFIFO(os.lstat(os.path.join(
        folder, "src", "fifo")).st_mode))
    test.assertTrue(stat.S_ISSOCK(os.lstat(os.path.join(
        folder, "sock")).st_mode))
    if os.geteuid() == 0:
        st = os.lstat(os.path.join(folder, "null"))
        test.assertTrue(stat.S_ISCHR(st.st_mode))
        test.assertEqual(st.st_rdev, os.makedev(1, 3))


def posix_acl(uid):
    """system.posix_acl_access bytes giving user ``uid`` r-x."""
    entries = [(0x01, 7, 0xFFFFFFFF), (0x02, 5, uid), (0x04, 5, 0xFFFFFFFF),
               (0x10, 7, 0xFFFFFFFF), (0x20, 5, 0xFFFFFFFF)]
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e)
                                           for e in entries)


class VendorKeepsTest(VendorWorld):

    def read(self, *parts):
        with open(os.path.join(self.dest, *parts)) as f:
            return f.read()

    def test_dest_versioned_with_git_is_kept(self):
        self.assertOk(self.tool("vendor", "--unpatched", self.dest))
        git(["init", "-q", "-b", "main"], self.dest)
        git(["add", "-A"], self.dest)
        git(["commit", "-q", "-m", "vendored libuv"], self.dest)
        self.assertOk(self.tool("vendor", self.dest))
        self.assertIn("int line5 = 50;", self.read("src", "core.c"))
        self.assertEqual(git(["log", "--format=%s"], self.dest).stdout,
                         "vendored libuv\n")
        # The history sees the new export as a change of its files.
        self.assertEqual(git(["status", "--porcelain"], self.dest).stdout,
                         " M UVPATCH.json\n M src/core.c\n")

    def test_submodule_git_file_is_kept(self):
        self.assertOk(self.tool("vendor", self.dest))
        write(os.path.join(self.dest, ".git"),
              "gitdir: ../../.git/modules/libuv\n")
        self.assertOk(self.tool("vendor", "--unpatched", self.dest))
        self.assertEqual(self.read(".git"),
                         "gitdir: ../../.git/modules/libuv\n")
        self.assertIn("int line5 = 5;", self.read("src", "core.c"))

    def test_empty_folders_and_special_files_are_kept(self):
        self.assertOk(self.tool("vendor", self.dest))
        add_specials(self.dest, self)
        self.assertOk(self.tool("vendor", "--unpatched", self.dest))
        assert_specials(self, self.dest)
        self.assertEqual(os.listdir(os.path.dirname(self.dest)), ["libuv"])

    def test_dest_folder_keeps_mode_owner_and_acl(self):
        self.assertOk(self.tool("vendor", self.dest))
        os.chmod(self.dest, 0o2775)
        owned = os.geteuid() == 0
        if owned:
            os.chown(self.dest, 65534, 100)
        try:
            os.setxattr(self.dest, "system.posix_acl_access",
                        posix_acl(65534))
            acl = os.getxattr(self.dest, "system.posix_acl_access")
        except OSError:
            acl = None      # no ACLs on this file system
        os.setxattr(self.dest, "user.mine", b"kept")
        mode = os.stat(self.dest).st_mode
        self.assertOk(self.tool("vendor", "--unpatched", self.dest))
        st = os.stat(self.dest)
        self.assertEqual(stat.S_IMODE(st.st_mode), stat.S_IMODE(mode))
        if owned:
            self.assertEqual((st.st_uid, st.st_gid), (65534, 100))
        if acl is not None:
            self.assertEqual(os.getxattr(self.dest,
                                         "system.posix_acl_access"), acl)
        self.assertEqual(os.getxattr(self.dest, "user.mine"), b"kept")

    def test_edit_while_applying_is_not_lost(self):
        self.assertOk(self.tool("vendor", "--unpatched", self.dest))
        # A git that edits DEST when the export starts: the moment
        # between the first check and the swap.
        shim = os.path.join(self.tmp, "bin", "git")
        write(shim, shell(
            '#!/bin/sh\nif [ "$1" = read-tree ]; then\n'
            '  echo edited > {timer}\n  echo new > {new}\n'
            'fi\nexec {git} "$@"\n',
            timer=os.path.join(self.dest, "src", "timer.c"),
            new=os.path.join(self.dest, "src", "new.c"),
            git=shutil.which("git")))
        os.chmod(shim, stat.S_IRWXU)
        res = self.tool("vendor", self.dest, env={
            "PATH": os.path.dirname(shim) + os.pathsep + os.environ["PATH"]})
        self.assertFails(res, "changed while vendor ran")
        self.assertEqual(self.read("src", "timer.c"), "edited\n")
        self.assertEqual(self.read("src", "new.c"), "new\n")
        self.assertEqual(os.listdir(os.path.dirname(self.dest)), ["libuv"])

    def test_link_named_like_the_provenance_file(self):
        victim = os.path.join(self.tmp, "victim.txt")
        write(victim, "not the tool's\n")
        # A series patch adds the link (and edits a file, as patches do).
        os.symlink(victim, os.path.join(self.tmp, "patchwork",
                                        "UVPATCH.json"))
        self.make_patch(2, "link", {"README.md": "fake libuv, linked\n"})
        res = self.tool("vendor", self.dest)
        self.assertFails(res, "UVPATCH.json of its own")
        with open(victim) as f:
            self.assertEqual(f.read(), "not the tool's\n")
        self.assertFalse(os.path.exists(self.dest))

    def test_two_runs_into_one_destination(self):
        parent = os.path.dirname(self.dest)
        fd = os.open(parent, os.O_RDONLY)
        self.addCleanup(os.close, fd)
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a running vendor holds it
        res = self.tool("vendor", self.dest)
        self.assertFails(res, "another uvpatch vendor is exporting into")
        self.assertNotIn("File exists", res.stderr)
        self.assertFalse(os.path.exists(self.dest))

    def test_two_runs_race(self):
        # Two real runs from two out/ folders (so out/'s lock does not
        # order them): each ends whole or with the clear error, and DEST
        # is one whole export.
        self.assertOk(self.tool("apply"))
        import subprocess
        import sys
        from fixture import TOOL
        env = dict(os.environ, XDG_CACHE_HOME=self.cache,
                   GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
        env.pop("UVPATCH_SOURCE", None)
        # A slow export widens the window in which both runs write.
        shim = os.path.join(self.tmp, "bin", "git")
        write(shim, shell('#!/bin/sh\n[ "$1" = read-tree ] && sleep 1\n'
                          'exec {git} "$@"\n', git=shutil.which("git")))
        os.chmod(shim, stat.S_IRWXU)
        env["PATH"] = os.path.dirname(shim) + os.pathsep + env["PATH"]
        for round_ in range(2):
            procs = [subprocess.Popen(
                [sys.executable, TOOL, "--repo", self.root, "--out",
                 os.path.join(self.tmp, "out%d" % n), "vendor"]
                + (["--unpatched"] if n else []) + [self.dest], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for n in range(2)]
            results = [(p.wait(timeout=120), p.communicate()[1])
                       for p in procs]
            for code, err in results:
                self.assertIn(code, (0, 6), err)
                self.assertNotIn("Traceback", err)
                self.assertNotIn("File exists", err)
                if code == 6:
                    self.assertIn("another uvpatch vendor is exporting",
                                  err)
            self.assertIn(0, [code for code, _ in results])
            from uvpatchlib.build.vendor import local_edits
            self.assertEqual(local_edits(self.dest), [])
            self.assertEqual(os.listdir(os.path.dirname(self.dest)),
                             ["libuv"])


class ForeignTest(World):
    def test_foreign_entries_are_topmost(self):
        folder = os.path.join(self.tmp, "f")
        write(os.path.join(folder, "a", "ours.c"), "x")
        write(os.path.join(folder, ".git", "HEAD"), "x")
        os.makedirs(os.path.join(folder, "a", "empty", "sub"))
        os.makedirs(os.path.join(folder, "b", "c"))
        os.mkfifo(os.path.join(folder, "a", "fifo"))
        self.assertEqual(swap.foreign(folder, {"a/ours.c"}),
                         [".git", "a/empty", "a/fifo", "b"])

    def test_kill_while_carrying_puts_everything_back(self):
        # Killed after .git went into the staged folder, before the swap.
        dest = os.path.join(self.tmp, "d")
        places = swap.Places(dest, dest + ".new", dest + ".old",
                             dest + ".kept")
        write(os.path.join(dest, "ours.c"), "old\n")
        write(os.path.join(places.new, "ours.c"), "new\n")
        write(os.path.join(places.new, ".git", "HEAD"), "mine\n")
        os.makedirs(os.path.join(places.new, "sub", "empty"))
        write(places.journal, '[".git", "sub/empty"]\n')
        swap.recover(places)
        with open(os.path.join(dest, ".git", "HEAD")) as f:
            self.assertEqual(f.read(), "mine\n")
        self.assertTrue(os.path.isdir(os.path.join(dest, "sub", "empty")))
        with open(os.path.join(dest, "ours.c")) as f:
            self.assertEqual(f.read(), "old\n")
        self.assertEqual(sorted(os.listdir(self.tmp)).count("d.new"), 0)
        self.assertFalse(os.path.exists(places.journal))

    def test_kill_while_writing_the_journal_leaves_nothing(self):
        # Killed before the journal's rename: nothing was moved yet.
        dest = os.path.join(self.tmp, "d")
        places = swap.Places(dest, dest + ".new", dest + ".old",
                             dest + ".kept")
        write(os.path.join(dest, "ours.c"), "old\n")
        write(os.path.join(places.new, "ours.c"), "new\n")
        write(places.journal + ".new", '[".g')
        swap.recover(places)
        with open(os.path.join(dest, "ours.c")) as f:
            self.assertEqual(f.read(), "old\n")
        self.assertEqual([x for x in os.listdir(self.tmp)
                          if x.startswith("d")], ["d"])
