"""Hostile sources: crafted archives (link chains that each look
harmless alone, absolute and ../ names, hard links, devices, FIFOs, .git
members), special files given as --source, and deps.json URLs that try
to be git options. Nothing may be written outside the cache, no command
may run, and every one must end quickly in `error:` and `hint:`.

The extraction corpus runs under every python3 of this machine (Debian
bookworm's /usr/bin/python3 3.11.2 has no tarfile extraction filter;
newer ones do): the tool must not depend on it."""

import glob
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import unittest

from fixture import World, REPO, TOOL, write
from test_fetch import make_tarball

# How many levels a chain climbs: from the tool's cache/uvpatch/X/extract
# (X: a scratch folder of the fetch) to cache/, outside the tool's cache.
CLIMB = 4
ESCAPED = "escaped.txt"


def _add(tar, name, kind=tarfile.REGTYPE, data=b"", link=""):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.mode = 0o644
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    tar.addfile(info, io.BytesIO(data) if data else None)


def raw_header(name, size, kind, odd_checksum=False):
    """One ustar header block, its checksum right, as a crafted archive
    would carry it past tarfile's writer; ``odd_checksum``: written after
    a character that str.strip() takes for white space, as tarfile does,
    and bytes.strip() does not."""
    block = bytearray(512)
    block[0:len(name)] = name
    block[100:108] = b"0000644\0"
    block[124:136] = b"%011o\0" % size
    block[136:148] = b"00000000000\0"
    block[156:157] = kind
    block[257:263] = b"ustar\0"
    block[263:265] = b"00"
    block[148:156] = b" " * 8
    block[148:156] = (b"\x1c%06o\0" if odd_checksum else b"%06o\0 ") \
        % sum(block)
    return bytes(block)


def raw_member(name, data, kind):
    """A header and its data, padded to whole blocks."""
    return raw_header(name, len(data), kind) + data + \
        b"\0" * (-len(data) % 512)


def _append_raw(tar, data):
    tar.fileobj.write(data)
    tar.offset += len(data)


def pax_record(key, value):
    """A well-formed pax record: its length counts itself."""
    body = b" %s=%s\n" % (key, value)
    n = len(body) + 1
    while len(str(n).encode()) + len(body) != n:
        n += 1
    return str(n).encode() + body


def corpus(folder, upstream, outside):
    """{name: (path, phrase the refusal must hold)}: crafted tarballs,
    each holding the fake upstream's files too, so that only the crafted
    member can be what is refused."""
    made = {}

    def tarball(name, phrase, add):
        path = os.path.join(folder, name + ".tar")
        with tarfile.open(path, "w") as tar:
            for rel, text in sorted(upstream.items()):
                _add(tar, "fake-1.0/" + rel, data=text.encode())
            add(tar)
        made[name] = (path, phrase)

    def chain(tar):
        # fake-1.0/a -> .; then each link climbs one level through the
        # ones before it, and the file lands CLIMB levels up.
        _add(tar, "fake-1.0/a", tarfile.SYMTYPE, link=".")
        path = "fake-1.0/a"
        for k in range(CLIMB):
            path += "/u%d" % k
            _add(tar, path, tarfile.SYMTYPE, link="..")
        _add(tar, path + "/" + ESCAPED, data=b"chain\n")
    tarball("link-chain", "is a symbolic link", chain)
    tarball("symlink-absolute", "is a symbolic link", lambda tar: (
        _add(tar, "fake-1.0/out", tarfile.SYMTYPE, link=outside),
        _add(tar, "fake-1.0/out/" + ESCAPED, data=b"abs link\n")))
    victim = os.path.join(outside, "victim.txt")
    tarball("hardlink-outside", "is a hard link", lambda tar: (
        _add(tar, "fake-1.0/h", tarfile.LNKTYPE, link=victim),
        _add(tar, "fake-1.0/h", data=b"overwritten\n")))
    tarball("hardlink-inside", "is a hard link", lambda tar: _add(
        tar, "fake-1.0/copy.md", tarfile.LNKTYPE,
        link="fake-1.0/README.md"))
    tarball("symlink-inside", "libuv's trees hold only regular files",
            lambda tar: _add(tar, "fake-1.0/readme", tarfile.SYMTYPE,
                             link="README.md"))
    tarball("dotdot", "points outside the tree", lambda tar: _add(
        tar, "fake-1.0/../../../../" + ESCAPED, data=b"dotdot\n"))
    tarball("absolute", "points outside the tree", lambda tar: _add(
        tar, os.path.join(outside, ESCAPED), data=b"absolute\n"))
    tarball("backslash", "points outside the tree", lambda tar: _add(
        tar, "fake-1.0/..\\..\\" + ESCAPED, data=b"backslash\n"))
    tarball("device", "is a device", lambda tar: _add(
        tar, "fake-1.0/null", tarfile.CHRTYPE))
    tarball("fifo", "is a FIFO", lambda tar: _add(
        tar, "fake-1.0/pipe", tarfile.FIFOTYPE))
    tarball("dot-git", "inside a .git folder", lambda tar: _add(
        tar, "fake-1.0/.git/hooks/post-checkout", data=b"#!/bin/sh\n"))
    tarball("twice", "appears twice", lambda tar: _add(
        tar, "fake-1.0/README.md", data=b"again\n"))
    tarball("file-then-dir", "made a file", lambda tar: _add(
        tar, "fake-1.0/README.md/x", data=b"x\n"))
    # Headers tarfile must never parse: a name thousands of folders
    # deep, a pax header and a GNU long name of a MiB, a pax record of
    # the wrong length, and pax headers stacked.
    tarball("deep", "2001 folders deep", lambda tar: _add(
        tar, "fake-1.0/" + "d/" * 2000 + "f", data=b"deep\n"))
    tarball("pax-huge", "a pax header of", lambda tar: _append_raw(
        tar, raw_member(b"././@PaxHeader", pax_record(
            b"comment", b"1" * (1 << 20)), b"x")
        + raw_member(b"fake-1.0/pax", b"x\n", b"0")))
    tarball("long-name-huge", "a long name of", lambda tar: _append_raw(
        tar, raw_member(b"././@LongLink", b"fake-1.0/" + b"n" * (1 << 20)
                        + b"\0", b"L")
        + raw_member(b"fake-1.0/long", b"x\n", b"0")))
    tarball("pax-malformed", "pax header record", lambda tar: _append_raw(
        tar, raw_member(b"././@PaxHeader", b"99 path=" + b"1" * 40
                        + b"\n", b"x")
        + raw_member(b"fake-1.0/bad", b"x\n", b"0")))
    tarball("pax-stacked", "stacked extended headers",
            lambda tar: _append_raw(tar, b"".join(raw_member(
                b"././@PaxHeader", pax_record(b"comment", b"%d" % k), b"x")
                for k in range(3)) + raw_member(b"fake-1.0/s", b"x\n",
                                                b"0")))
    # A deep member behind a header the scan could misread: an old tar's
    # folder (a regular file named with a slash: no data, whatever its
    # size says), an odd but valid checksum field.
    deep = raw_member(b"././@LongLink", b"fake-1.0/" + b"d/" * 100 + b"f\0",
                      b"L") + raw_member(b"fake-1.0/f", b"x\n", b"0")
    tarball("v7-folder-hides-deep", "101 folders deep",
            lambda tar: _append_raw(tar, raw_header(
                b"fake-1.0/v7/", 512, b"\0") + deep))
    tarball("odd-checksum-hides-deep", "101 folders deep",
            lambda tar: _append_raw(tar, raw_header(
                b"fake-1.0/odd", 0, b"0", odd_checksum=True) + deep))
    # A tar whose first name starts as a gzip stream: tarfile reads it
    # either way, the scan cannot know which.
    both = os.path.join(folder, "polyglot.tar")
    with open(both, "wb") as f:
        f.write(raw_member(b"\x1f\x8b/README.md", b"x\n", b"0")
                + b"\0" * 1024)
    made["polyglot"] = (both, "both a tar header and a compressed stream")
    # A gzip stream cut short: damaged, not a reason to blame the disk.
    good = os.path.join(folder, "good.tar.gz")
    with tarfile.open(good, "w:gz") as tar:
        for rel, text in sorted(upstream.items()):
            _add(tar, "fake-1.0/" + rel, data=text.encode() * 200)
    with open(good, "rb") as f:
        data = f.read()
    cut = os.path.join(folder, "truncated.tar.gz")
    with open(cut, "wb") as f:
        f.write(data[:len(data) // 2])
    made["truncated"] = (cut, "is damaged or not a tarball")
    return made


# Run by each python3: extracts every tarball of the corpus into its own
# folder under CACHE and prints what happened, as JSON.
DRIVER = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
from uvpatchlib.errors import UvPatchError
from uvpatchlib.source.extract import extract_tarball
corpus = json.loads(sys.argv[2])
results = {}
for name, path in sorted(corpus.items()):
    dest = os.path.join(sys.argv[3] + "-" + name, "extract")
    try:
        extract_tarball(path, dest)
        results[name] = [0, ""]
    except UvPatchError as e:
        results[name] = [e.status, e.message + "\n" + (e.hint or "")]
    except BaseException as e:
        results[name] = [-1, "%s: %s" % (type(e).__name__, e)]
print(json.dumps(results))
"""


def pythons():
    """Every python3 of this machine that the tool supports (3.9+), once
    each: this one, Debian's /usr/bin/python3, PATH's, pyenv's."""
    found = [sys.executable, "/usr/bin/python3", shutil.which("python3")]
    home = os.path.expanduser("~")
    found += sorted(glob.glob(os.path.join(home, ".pyenv", "versions", "*",
                                           "bin", "python3")))
    found += sorted(glob.glob("/usr/bin/python3.[0-9]*"))
    found += sorted(glob.glob("/usr/local/bin/python3.[0-9]*"))
    seen, usable = set(), []
    for exe in found:
        if not exe or not os.path.isfile(exe) or exe.endswith("-config"):
            continue
        real = os.path.realpath(exe)
        if real in seen:
            continue
        seen.add(real)
        res = subprocess.run([exe, "-c", "import sys; print(sys.version_info"
                              " >= (3, 9), sys.version.split()[0])"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        if res.returncode == 0 and res.stdout.startswith("True"):
            usable.append((exe, res.stdout.split()[1]))
    return usable


def snapshot(folder, skip):
    """Every path under ``folder`` but those under ``skip`` (the tool's
    cache) and the fetch lock beside it."""
    found = set()
    for dirpath, dirnames, files in os.walk(folder):
        if dirpath == skip or dirpath.startswith(skip + os.sep):
            dirnames[:] = []
            continue
        for name in dirnames + files:
            path = os.path.join(dirpath, name)
            if path != skip + ".lock":
                found.add(os.path.relpath(path, folder))
    return found


class ArchiveTest(World):
    def setUp(self):
        super().setUp()
        self.outside = os.path.join(self.tmp, "outside")
        os.makedirs(self.outside)
        write(os.path.join(self.outside, "victim.txt"), "untouched\n")
        self.corpus_dir = os.path.join(self.tmp, "corpus")
        os.makedirs(self.corpus_dir)
        from fixture import UPSTREAM_FILES
        self.corpus = corpus(self.corpus_dir, UPSTREAM_FILES, self.outside)
        self.tool_cache = os.path.join(self.cache, "uvpatch")
        os.makedirs(self.tool_cache)

    def assertNothingOutside(self, before):
        after = snapshot(self.tmp, self.tool_cache)
        self.assertEqual(sorted(after - before), [])
        with open(os.path.join(self.outside, "victim.txt")) as f:
            self.assertEqual(f.read(), "untouched\n")
        self.assertFalse(os.path.lexists(os.path.join(
            os.path.dirname(self.tmp), ESCAPED)))

    def test_corpus_under_every_python(self):
        before = snapshot(self.tmp, self.tool_cache)
        found = pythons()
        self.assertTrue(found)
        lines = []
        for n, (exe, version) in enumerate(found):
            where = os.path.join(self.tool_cache, "py%d" % n)
            res = subprocess.run(
                [exe, "-c", DRIVER, os.path.join(REPO, "scripts"),
                 json.dumps({k: v[0] for k, v in self.corpus.items()}),
                 where], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, timeout=60)
            self.assertEqual(res.returncode, 0, "%s: %s" % (exe, res.stderr))
            results = json.loads(res.stdout)
            for name, (path, phrase) in sorted(self.corpus.items()):
                status, message = results[name]
                self.assertEqual(status, 4, "%s %s: %s" % (exe, name,
                                                           message))
                self.assertIn(phrase, message, "%s %s" % (exe, name))
            self.assertNothingOutside(before)
            lines.append("%s (%s)" % (exe, version))
        print("\n[hostile] %d crafted tarballs refused, nothing written "
              "outside, under %s" % (len(self.corpus), ", ".join(lines)),
              file=sys.stderr)

    def test_link_chain_through_the_command_line(self):
        # As reported: --source and UVPATCH_SOURCE, Debian's python too.
        path = self.corpus["link-chain"][0]
        before = snapshot(self.tmp, self.tool_cache)
        for exe in sorted({sys.executable, "/usr/bin/python3"}):
            if not os.path.isfile(exe):
                continue
            for how in ("--source", "UVPATCH_SOURCE"):
                argv = [exe, TOOL, "--repo", self.root, "--out", self.out,
                        "fetch"] + (["--source", path] if how == "--source"
                                    else [])
                env = dict(os.environ, XDG_CACHE_HOME=self.cache,
                           GIT_CONFIG_GLOBAL=os.devnull)
                env.pop("UVPATCH_SOURCE", None)
                if how == "UVPATCH_SOURCE":
                    env["UVPATCH_SOURCE"] = path
                res = subprocess.run(argv, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     timeout=60)
                self.assertFails(res, "member 'fake-1.0/a' is a symbolic "
                                 "link", "libuv's trees hold only regular "
                                 "files")
                self.assertEqual(res.returncode, 4)
                self.assertNothingOutside(before)
                self.assertEqual(os.listdir(self.tool_cache), [])
        # The next ordinary fetch works.
        self.assertOk(self.tool("fetch"))

    def test_deep_tarball_refused_and_nothing_left(self):
        """One file 2,000 folders deep: refused as a bad source, no
        scratch folder left; and one that a killed run of an older tool
        left in the cache, as deep, does not stop the next fetch."""
        path = self.corpus["deep"][0]
        res = self.tool("fetch", "--source", path)
        self.assertFails(res, "2001 folders deep", "not a tarball of libuv")
        self.assertEqual(res.returncode, 4)
        self.assertEqual(os.listdir(self.tool_cache), [])
        deep = os.path.join(self.tool_cache, ".tmp-killed")
        os.makedirs(deep)
        here = os.open(deep, os.O_RDONLY)
        try:
            for _ in range(2000):
                os.mkdir("d", dir_fd=here)
                below = os.open("d", os.O_RDONLY, dir_fd=here)
                os.close(here)
                here = below
        finally:
            os.close(here)
        self.assertOk(self.tool("fetch"))
        self.assertFalse(os.path.lexists(deep))

    def test_good_tarball_still_extracts(self):
        tarball = os.path.join(self.tmp, "fake-1.0.tar.gz")
        make_tarball(tarball, self.upstream)
        self.assertOk(self.tool("fetch", "--source", tarball))


class SpecialSourceTest(World):
    """A FIFO or a device as a source: refused at once, not read."""

    def run_timed(self, *args, env=None):
        start = time.monotonic()
        full = dict(os.environ, XDG_CACHE_HOME=self.cache,
                    GIT_CONFIG_GLOBAL=os.devnull)
        full.pop("UVPATCH_SOURCE", None)
        full.update(env or {})
        res = subprocess.run([sys.executable, TOOL, "--repo", self.root,
                              "--out", self.out] + list(args), env=full,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, timeout=60)
        return res, time.monotonic() - start

    @unittest.skipUnless(hasattr(os, "mkfifo"), "needs FIFOs")
    def test_fifo_and_dev_zero(self):
        fifo = os.path.join(self.tmp, "fifo")
        os.mkfifo(fifo)
        for path, kind in ((fifo, "is a FIFO"),
                           ("/dev/zero", "is a character device")):
            if not os.path.exists(path):
                continue
            res, took = self.run_timed("fetch", "--source", path)
            self.assertFails(res, kind, "not a regular file or a folder")
            self.assertEqual(res.returncode, 4)
            self.assertLess(took, 20)
            res, took = self.run_timed("rebase", "--onto", "main",
                                       "--source", path)
            self.assertFails(res, kind)
            self.assertLess(took, 20)
        # As UVPATCH_SOURCE it costs a line, and the next source serves.
        res, took = self.run_timed("fetch", env={"UVPATCH_SOURCE": fifo})
        self.assertOk(res)
        self.assertIn("UVPATCH_SOURCE %s: is a FIFO" % fifo, res.stderr)
        self.assertLess(took, 20)

    @unittest.skipUnless(hasattr(os, "mkfifo"), "needs FIFOs")
    def test_folder_with_a_link_or_a_fifo(self):
        for odd in ("link", "fifo"):
            folder = os.path.join(self.tmp, "src-" + odd)
            shutil.copytree(self.upstream, folder,
                            ignore=shutil.ignore_patterns(".git"))
            if odd == "link":
                os.symlink("/etc", os.path.join(folder, "src", "etc"))
                phrase = "src/etc is a symbolic link"
            else:
                os.mkfifo(os.path.join(folder, "src", "pipe"))
                phrase = "src/pipe is a FIFO"
            res, took = self.run_timed("fetch", "--source", folder)
            self.assertFails(res, phrase, "libuv's trees hold only")
            self.assertEqual(res.returncode, 4)
            self.assertLess(took, 20)

    def test_dot_git_in_the_cached_tree_is_repaired(self):
        # A tree from a tarball is copied into out/src: a .git in it
        # passed the tree id (git leaves a top-level .git out) and made
        # every apply fail with "File exists".
        tarball = os.path.join(self.tmp, "fake-1.0.tar.gz")
        make_tarball(tarball, self.upstream)
        self.assertOk(self.tool("fetch", "--source", tarball))
        tree = os.path.join(self.cache, "uvpatch", self.tree, "tree")
        os.makedirs(os.path.join(tree, ".git"))
        write(os.path.join(tree, ".git", "HEAD"), "ref: refs/heads/x\n")
        res = self.tool("apply")
        self.assertOk(res)
        self.assertIn("is damaged (it holds .git)", res.stderr)
        self.assertFalse(os.path.exists(os.path.join(tree, ".git")))


OPTION_URLS = [
    "--upload-pack=touch {x}",
    "-u touch {x}",
    "ext::sh -c touch% {x}",
    "ssh://-oProxyCommand=touch% {x}/x",
    "host:--upload-pack=touch {x}",
    "http://example.invalid/libuv.git",
    "relative/path",
    " https://example.invalid/x",
]


class ManifestUrlTest(World):
    """No deps.json value runs a command: a URL is refused by name, and
    git is never handed one as an option."""

    def test_option_like_urls_are_refused(self):
        from uvpatchlib.errors import UvPatchError
        from uvpatchlib.series.manifest import validate
        witness = os.path.join(self.tmp, "ran")
        original = json.dumps(self.deps_doc())
        for n, template in enumerate(OPTION_URLS):
            url = template.format(x=witness)
            for field, where in (("bases[0].sources[0].url",
                                  ("sources", 0, "url")),
                                 ("bases[0].upstream.repository",
                                  ("upstream", "repository"))):
                doc = json.loads(original)
                obj = doc["bases"][0]
                for key in where[:-1]:
                    obj = obj[key]
                obj[where[-1]] = url
                with self.assertRaises(UvPatchError, msg=url) as cm:
                    validate(doc, self.root)
                self.assertIn("deps.json: " + field, cm.exception.message)
                self.assertEqual(cm.exception.status, 3)
                self.assertTrue(cm.exception.hint)
                if n < 2:
                    # Through the command line, with a cold cache.
                    with open(os.path.join(self.root, "deps.json"),
                              "w") as f:
                        json.dump(doc, f)
                    res = self.tool("fetch")
                    self.assertFails(res, "deps.json: " + field)
                    self.assertEqual(res.returncode, 3, url)
                    self.assertFalse(os.path.exists(witness), url)
        self.save_deps()
        self.assertOk(self.tool("fetch"))

    def test_debian_fields_cannot_be_options(self):
        from uvpatchlib.errors import UvPatchError
        from uvpatchlib.series.manifest import validate
        spec = {"kind": "debian", "package": "libuv1", "version": "1.0-1",
                "suite": "trixie", "file": "libuv1_1.0.orig.tar.gz",
                "sha256": "0" * 64}
        for key, value in (("package", "-b"), ("version", "--compile"),
                           ("suite", "-o"), ("file", "-x.tar.gz"),
                           ("file", "..")):
            self.deps["sources"] = [dict(spec, **{key: value})]
            with self.assertRaises(UvPatchError) as cm:
                validate({"schema": 2, "default_base": self.base,
                          "bases": [self.deps]}, self.root)
            self.assertIn("bases[0].sources[0].%s" % key,
                          cm.exception.message)
            self.assertEqual(cm.exception.status, 3)
        self.save_deps()
        res = self.tool("fetch")
        self.assertFails(res, "bases[0].sources[0].file: '..' is not")
        self.assertEqual(res.returncode, 3)

    def test_git_gets_urls_after_double_dash(self):
        # Even past validation, git reads a URL as a repository.
        from uvpatchlib.source.fetch import Fetcher, Unavailable
        from uvpatchlib.series.manifest import load
        witness = os.path.join(self.tmp, "ran")
        fetcher = Fetcher(load(self.root), cache=self.cache)
        for url in ("--upload-pack=touch " + witness,
                    "--config=core.sshCommand=touch " + witness):
            tmp = os.path.join(self.tmp, "scratch")
            shutil.rmtree(tmp, True)
            os.makedirs(tmp)
            with self.assertRaises(Unavailable):
                fetcher._from_git(url, tmp)
            self.assertFalse(os.path.exists(witness), url)


if __name__ == "__main__":
    unittest.main()
