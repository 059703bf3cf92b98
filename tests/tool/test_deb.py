"""`deb` and `test --suite debian`, hermetically: our series staged after
Debian's quilt series, a planted conflict with a patch of Debian's named
in the error, the changelog entry, and the parsers of the checks (the
mirror, symbols files, readelf, lintian, the services' output). Nothing
here needs root, the network or a chroot."""

import datetime
import os
import shutil
import tempfile
import unittest

from fixture import World, write

from uvpatchlib.errors import UvPatchError
from uvpatchlib.deb import chroot, quilt, suite, syscheck

CORE = "".join("int line%d = %d;\n" % (i, i) for i in range(40))
CHANGELOG = """libuv1 (1.50.0-2) unstable; urgency=medium

  * Drop a patch.

 -- A Maintainer <a@example.org>  Wed, 05 Feb 2025 11:16:12 +0100
"""


def diff(path, old_line, new_line, number):
    """A unified diff of src/core.c (CORE) changing line ``number``."""
    lo = max(0, number - 3)
    old = CORE.splitlines()[lo:number + 4]
    body = []
    for k, line in enumerate(old, lo):
        if k == number:
            body += ["-" + old_line, "+" + new_line]
        else:
            body.append(" " + line)
    return ("--- a/%s\n+++ b/%s\n@@ -%d,%d +%d,%d @@\n" % (
        path, path, lo + 1, len(old), lo + 1, len(old)) +
        "\n".join(body) + "\n")


class FakeManifest:
    def __init__(self, folder, patches):
        self.name = "v1.50.0"
        self.upstream = {"tag": "v1.50.0"}
        self.folder = folder
        self.series = []
        for name, text, day in patches:
            path = os.path.join(folder, name)
            write(path, "From 0 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] "
                  "x\n\nLast-Update: %s\n---\n%s" % (day, text))
            self.series.append({"file": name, "summary": "what %s changes, "
                                "in a summary long enough to wrap over "
                                "more than one line of the entry" % name})

    def patch_path(self, entry):
        return os.path.join(self.folder, entry["file"])


class QuiltTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="uvpatch-deb-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.tree = os.path.join(self.tmp, "libuv1-1.50.0")
        write(os.path.join(self.tree, "src", "core.c"), CORE)
        deb = os.path.join(self.tree, "debian")
        write(os.path.join(deb, "changelog"), CHANGELOG)
        write(os.path.join(deb, "patches", "series"),
              "# Debian's\nskip-test.patch\n#disabled.patch\n\n"
              "loong64.patch -p1\n")
        write(os.path.join(deb, "patches", "skip-test.patch"),
              diff("src/core.c", "int line10 = 10;", "int line10 = 100;", 10))
        write(os.path.join(deb, "patches", "loong64.patch"),
              diff("src/core.c", "int line30 = 30;", "int line30 = 300;", 30))

    def manifest(self, *patches):
        return FakeManifest(os.path.join(self.tmp, "patches"), patches)

    def test_series_after_debians_and_applies(self):
        m = self.manifest(("0001-a.patch", diff(
            "src/core.c", "int line20 = 20;", "int line20 = 2;", 20),
            "2026-11-02"))
        series = quilt.stage(self.tree, m)
        self.assertEqual([(n, o) for n, _, o in series],
                         [("skip-test.patch", False),
                          ("loong64.patch", False),
                          ("uvpatch/0001-a.patch", True)])
        with open(os.path.join(self.tree, "debian", "patches",
                               "series")) as f:
            self.assertTrue(f.read().endswith("uvpatch/0001-a.patch\n"))
        self.assertEqual(quilt.check_apply(self.tree, series), 3)
        # The tree itself is left unpatched, as dpkg-source wants it.
        with open(os.path.join(self.tree, "src", "core.c")) as f:
            self.assertEqual(f.read(), CORE)

    @unittest.skipIf(shutil.which("patch") is None, "no patch(1)")
    def test_conflict_names_both_patches(self):
        # Ours changes the line Debian's second patch changed.
        m = self.manifest(
            ("0001-a.patch", diff("src/core.c", "int line20 = 20;",
                                   "int line20 = 2;", 20), "2026-11-02"),
            ("0002-b.patch", diff("src/core.c", "int line30 = 30;",
                                  "int line30 = 3;", 30), "2026-11-03"))
        series = quilt.stage(self.tree, m)
        with self.assertRaises(UvPatchError) as ctx:
            quilt.check_apply(self.tree, series)
        message = ctx.exception.message
        self.assertIn("uvpatch/0002-b.patch", message)
        self.assertIn("Debian's patch loong64.patch", message)
        self.assertNotIn("skip-test.patch", message)
        self.assertIn("loong64.patch", ctx.exception.hint)

    @unittest.skipIf(shutil.which("patch") is None, "no patch(1)")
    def test_fuzz_is_refused(self):
        # A context line off by one: patch would take it with fuzz 1.
        text = diff("src/core.c", "int line20 = 20;", "int line20 = 2;", 20)
        text = text.replace(" int line17 = 17;", " int line17 = 170;")
        series = quilt.stage(self.tree, self.manifest(
            ("0001-a.patch", text, "2026-11-02")))
        with self.assertRaises(UvPatchError) as ctx:
            quilt.check_apply(self.tree, series)
        self.assertIn("0001-a.patch does not apply with no fuzz",
                      ctx.exception.message)

    def test_changelog_entry(self):
        m = self.manifest(("0001-a.patch", "", "2026-11-02"),
                          ("0002-b.patch", "", "2026-11-20"))
        path = os.path.join(self.tree, "debian", "changelog")
        version = quilt.changelog_entry(path, m, "Ann Admin <ann@example.org>",
                                        "trixie")
        self.assertEqual(version, "1.50.0-2+uvpatch1")
        with open(path) as f:
            text = f.read()
        first = text.split("\n\n", 1)[0]
        self.assertEqual(first, "libuv1 (1.50.0-2+uvpatch1) trixie; "
                                "urgency=medium")
        entry = text[:text.index("libuv1 (1.50.0-2)")]
        for name in ("0001-a.patch", "0002-b.patch"):
            self.assertIn("    - %s:" % name, entry)
        self.assertIn(" -- Ann Admin <ann@example.org>  Fri, 20 Nov 2026 "
                      "12:00:00 +0000", entry)
        self.assertTrue(all(len(line) <= 80 for line in entry.splitlines()))
        self.assertTrue(text.endswith(CHANGELOG))
        # Sorts after Debian's, as dpkg compares them.
        self.assertGreater(version, "1.50.0-2")
        src, old, when = quilt.top_entry(path)
        self.assertEqual((src, old), ("libuv1", version))
        self.assertEqual(when, datetime.datetime(
            2026, 11, 20, 12, tzinfo=datetime.timezone.utc))

    def test_entry_never_before_debians(self):
        m = self.manifest(("0001-a.patch", "", "2020-01-01"))
        path = os.path.join(self.tree, "debian", "changelog")
        quilt.changelog_entry(path, m, "A <a@b.c>", "trixie")
        with open(path) as f:
            self.assertIn("Thu, 06 Feb 2025 10:16:12 +0000", f.read())


class MtimesTest(unittest.TestCase):
    def test_files_keep_the_tarballs_times(self):
        # As dpkg-source -x: else a rebuild from the .dsc differs.
        import tarfile
        from uvpatchlib.deb import package
        from uvpatchlib.source.extract import extract_tarball
        tmp = tempfile.mkdtemp(prefix="uvpatch-deb-")
        self.addCleanup(shutil.rmtree, tmp, True)
        write(os.path.join(tmp, "src", "top", "ChangeLog"), "old\n")
        tarball = os.path.join(tmp, "orig.tar.gz")
        with tarfile.open(tarball, "w:gz") as tar:
            def old(info):
                info.mtime = 1000000000
                return info
            tar.add(os.path.join(tmp, "src", "top"), "top", filter=old)
        dest = os.path.join(tmp, "x")
        extract_tarball(tarball, dest)
        package.keep_mtimes(tarball, dest)
        self.assertEqual(os.path.getmtime(os.path.join(dest, "top",
                                                       "ChangeLog")),
                         1000000000)


class ParsersTest(unittest.TestCase):
    def test_debian_tests_in_the_log(self):
        from uvpatchlib.deb import package
        tmp = tempfile.mkdtemp(prefix="uvpatch-deb-")
        self.addCleanup(shutil.rmtree, tmp, True)
        log = os.path.join(tmp, "build.log")
        write(log, "1: ok 1 - a\n1: ok 2 - b # SKIP no tty\n"
                   "2: not ok 1 - c\nok 3 - not a runner line\n")
        self.assertEqual(package.debian_tests(log),
                         {"ok": 1, "skipped": 1, "failed": 1})
        write(log, "dh_auto_test: skipped (nocheck)\n")
        with self.assertRaises(UvPatchError):
            package.debian_tests(log)

    def test_mirror_from_deb822_then_one_line(self):
        tmp = tempfile.mkdtemp(prefix="uvpatch-deb-")
        self.addCleanup(shutil.rmtree, tmp, True)
        sec = os.path.join(tmp, "a.sources")
        write(sec, "Types: deb\nURIs: http://m.example/debian-security\n")
        main = os.path.join(tmp, "b.sources")
        write(main, "Types: deb\nURIs: http://m.example/debian/\n")
        old = os.path.join(tmp, "sources.list")
        write(old, "deb [arch=amd64] http://o.example/debian bookworm main\n")
        self.assertEqual(chroot.debian_mirror([sec, main, old]),
                         "http://m.example/debian/")
        self.assertEqual(chroot.debian_mirror([sec, old]),
                         "http://o.example/debian")
        self.assertIsNone(chroot.debian_mirror([sec]))

    def test_age(self):
        self.assertEqual(chroot.age_text(59), "0 min")
        self.assertEqual(chroot.age_text(3 * 3600 + 120), "3 h 2 min")
        self.assertEqual(chroot.age_text(3 * 86400), "3 days")

    def test_symbols_file(self):
        text = ("libuv.so.1 libuv1t64 #MINVER#\n"
                "* Build-Depends-Package: libuv1-dev\n"
                "#MISSING: 1.50.0-1# (optional)uv__close@Base 1.11.0\n"
                " (regex|optional)\"^uv__\" 1.0\n"
                " uv_run@Base 1.0.0\n"
                " (arch=linux-any)uv_udp_open@Base 1.7.0\n"
                " (arch=kfreebsd-any|optional)uv__kqueue_init@Base 1.22\n"
                " (arch=!hurd-any|optional)uv_maybe@Base 1.1\n")
        self.assertEqual(suite.symbols_file(text),
                         ({"uv_run", "uv_udp_open"}, {"uv_maybe"}))
        self.assertEqual(suite.symbols_file(text, "hurd"),
                         ({"uv_run"}, set()))

    def test_exported(self):
        text = """
Symbol table '.dynsym' contains 4 entries:
   Num:    Value          Size Type    Bind   Vis      Ndx Name
     1: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND free@GLIBC_2.2.5 (2)
     2: 0000000000012340    42 FUNC    GLOBAL DEFAULT   12 uv_run
     3: 0000000000012380    42 FUNC    LOCAL  DEFAULT   12 helper
     4: 0000000000022380     8 OBJECT  GLOBAL DEFAULT   22 uv_thing
"""
        self.assertEqual(suite.exported(text), {"uv_run", "uv_thing"})

    def test_lintian(self):
        text = ("W: libuv1t64: a-warning some detail\n"
                "E: libuv1-dev amd64: an-error\n"
                "I: libuv1t64: only-info\n"
                "N: a note\n")
        self.assertEqual(suite.parse_lintian(text),
                         {("W", "libuv1t64", "a-warning"),
                          ("E", "libuv1-dev", "an-error")})

    def test_services_output(self):
        tmp = tempfile.mkdtemp(prefix="uvpatch-deb-")
        self.addCleanup(shutil.rmtree, tmp, True)

        class Session:
            def path(self, inside):
                return os.path.join(tmp, inside.lstrip("/"))
        lib = "/usr/lib/x86_64-linux-gnu/libuv.so.1.0.0"
        write(Session().path(lib), "ours")
        import hashlib
        sha = hashlib.sha256(b"ours").hexdigest()
        maps = "7f00-7f01 r-xp 0 08:01 1 %s\n" % lib
        perf = ("  Queries sent:         100\n  Queries completed:    100\n"
                "  Queries lost:         0\n  Run time (s):         1.0\n"
                "  Queries per second:   100.0\n")
        node = ('{"libuv": ["%s"], "uv": "1.50.0", "sent": 5, "got": 5, '
                '"timers": 200, "median_gap_ms": 1.1, "ms": 300}\n'
                'node status 0' % lib)
        text = ("=== named up\nyes\n=== named maps\n%s=== named dnsperf\n%s"
                "=== kresd up\nno\nfailed to bind\n=== node\n%s\n"
                % (maps, perf, node))
        got = {n: (s, w) for s, n, w in syscheck.judge_services(
            text, lib, sha, Session())}
        self.assertEqual(got["named"][0], "PASS", got)
        self.assertEqual(got["kresd"][0], "FAIL")
        self.assertIn("failed to bind", got["kresd"][1])
        self.assertEqual(got["nodejs"][0], "PASS", got)
        # Debian's library in place of ours.
        got = syscheck.judge_services(text, lib, "0" * 64, Session())
        self.assertIn("not our", dict((n, w) for _, n, w in got)["named"])


class WithoutRootTest(unittest.TestCase):
    class Manifest:
        name = "v1.50.0"

        def source(self, kind):
            return {"package": "libuv1", "version": "1.50.0-2"} \
                if kind == "debian" else None

    def test_suite_skips_and_deb_refuses(self):
        from unittest import mock
        from uvpatchlib.deb import package
        with mock.patch("os.geteuid", return_value=1000):
            self.assertTrue(suite.skip_reason(self.Manifest())
                            .startswith("needs root"))
            with self.assertRaises(UvPatchError) as ctx:
                package.check_can_build(self.Manifest())
        self.assertIn("needs root", ctx.exception.message)
        self.assertIn("sudo scripts/uvpatch deb", ctx.exception.hint)

    def test_sudo_gives_out_back(self):
        from unittest import mock
        from uvpatchlib.deb import package
        tmp = tempfile.mkdtemp(prefix="uvpatch-deb-")
        self.addCleanup(shutil.rmtree, tmp, True)
        out = os.path.join(tmp, "v1.50.0")
        write(os.path.join(out, "deb", "a.deb"), "x")
        calls = []
        with mock.patch.dict(os.environ, {"SUDO_UID": "1234",
                                          "SUDO_GID": "99"}), \
                mock.patch("os.lchown", lambda p, u, g: calls.append(
                    (os.path.relpath(p, tmp), u, g))), \
                mock.patch("os.lstat", lambda p: os.stat_result(
                    (0,) * 10)):
            package.give_back(tmp, out)
        self.assertIn(("v1.50.0/deb/a.deb", 1234, 99), calls)
        self.assertIn((".", 1234, 99), calls)


class ReadmeTest(unittest.TestCase):
    def test_the_suite_runs_the_readmes_apt_lines(self):
        from fixture import REPO
        with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
            text = f.read()
        self.assertIn("sudo " + syscheck.README_INSTALL.replace(" -y", ""),
                      text)
        self.assertIn("sudo apt install --allow-downgrades libuv1t64=1.50.0-2 "
                      "libuv1-dev=1.50.0-2", text)
        self.assertIn("sudo scripts/uvpatch deb", text)


class CommandTest(World):
    def test_a_base_without_debian_source(self):
        self.save_deps()
        res = self.tool("deb")
        self.assertFails(res, "has no Debian source package")

    def test_suite_skips_in_one_line(self):
        self.save_deps()
        res = self.tool("test", "--suite", "debian")
        self.assertOk(res)
        lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
        self.assertEqual(lines[0], "SKIP debian: base %s has no Debian "
                         "source package" % self.base)
        self.assertEqual(lines[-1], "0 passed, 0 failed, 1 skipped")


if __name__ == "__main__":
    unittest.main()
