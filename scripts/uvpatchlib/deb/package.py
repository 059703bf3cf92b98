"""`deb`: Debian's source package of the default base with our series in
debian/patches (after Debian's), a changelog entry naming each patch,
built with dpkg-buildpackage in a trixie chroot by an unprivileged user
in a network namespace with only loopback, Debian's test suite running.
Everything lands in out/<base>/deb/: the .dsc, the .debian.tar.*, the
orig tarball as Debian publishes it, the .deb files, .buildinfo, .changes
and build.log; deb.json records what made them.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import tarfile
import time

from .. import console
from ..errors import UvPatchError, EXIT_USAGE
from ..fsutil import remove_tree, sha256_file, write_atomic
from ..source.debsrc import debian_source
from ..source.extract import extract_tarball
from . import chroot, quilt

TREE = chroot.BUILD_HOME + "/src"
OUTPUTS = ("*.dsc", "*.debian.tar.*", "*.orig.tar.*", "*.deb",
           "*.buildinfo", "*.changes")


def build_packages(manifest):
    """The satisfy string for the build chroot: build-essential, fakeroot
    and the source package's Build-Depends."""
    src = debian_source(manifest)
    return "build-essential, fakeroot, " + dsc_field(src.dsc,
                                                     "Build-Depends")


def dsc_field(path, name):
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    value, inside = [], False
    for line in lines:
        if line.startswith(name + ":"):
            value.append(line.split(":", 1)[1].strip())
            inside = True
        elif inside and line.startswith(" "):
            value.append(line.strip())
        else:
            inside = False
    return " ".join(value)


def identity():
    """Who signs the changelog entry: DEBFULLNAME and DEBEMAIL, else git's
    user.name and user.email, else the tool."""
    name = os.environ.get("DEBFULLNAME")
    mail = os.environ.get("DEBEMAIL")
    for key, val in (("user.name", name), ("user.email", mail)):
        if val:
            continue
        try:
            got = subprocess.run(["git", "config", key], text=True,
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL).stdout.strip()
        except OSError:
            got = ""
        if key == "user.name":
            name = got
        else:
            mail = got
    if not name or not mail:
        name, mail = "uvpatch", "uvpatch@example.invalid"
    return "%s <%s>" % (name, mail)


def deb_dir(out):
    return os.path.join(out, "deb")


def stamp(manifest):
    """What the packages are made of: the series and Debian's source."""
    spec = manifest.source("debian")
    return {"base": manifest.name, "debian": spec["version"],
            "orig_sha256": spec["sha256"],
            "series": [[e["file"], e["sha256"]] for e in manifest.series]}


def current(manifest, out):
    """deb.json of out/<base>/deb when it matches the series, else
    None."""
    try:
        with open(os.path.join(deb_dir(out), "deb.json"),
                  encoding="utf-8") as f:
            info = json.load(f)
    except (OSError, ValueError):
        return None
    want = stamp(manifest)
    if any(info.get(k) != v for k, v in want.items()):
        return None
    folder = deb_dir(out)
    for pattern in ("libuv1t64_*.deb", "libuv1-dev_*.deb", "*.dsc",
                    "*.debian.tar.*", "*.orig.tar.*"):
        if len(glob.glob(os.path.join(folder, pattern))) != 1:
            return None
    return info


def prepare(manifest, stage):
    """Debian's source unpacked in ``stage``/src with our series staged
    and the changelog entry on top; returns (tree, version, series)."""
    src = debian_source(manifest)
    remove_tree(stage)
    os.makedirs(stage)
    tree = os.path.join(stage, "src")
    # The tool's own extraction, which refuses links and odd names.
    unpack = os.path.join(stage, "unpack")
    extract_tarball(src.orig, unpack)
    keep_mtimes(src.orig, unpack)
    tops = os.listdir(unpack)
    top = os.path.join(unpack, tops[0]) if len(tops) == 1 else unpack
    os.rename(top, tree)
    remove_tree(unpack)
    if os.path.exists(os.path.join(tree, "debian")):
        remove_tree(os.path.join(tree, "debian"))
    extract_tarball(src.debian_tar, unpack)
    keep_mtimes(src.debian_tar, unpack)
    os.rename(os.path.join(unpack, "debian"), os.path.join(tree, "debian"))
    remove_tree(unpack)
    series = quilt.stage(tree, manifest)
    count = quilt.check_apply(tree, series)
    ours = sum(1 for s in series if s[2])
    console.note("%d of Debian's patches and %d of ours apply with no fuzz"
                 % (count - ours, ours))
    version = quilt.changelog_entry(
        os.path.join(tree, "debian", "changelog"), manifest, identity(),
        chroot.SUITE)
    return src, tree, version, series


def keep_mtimes(tarball, dest):
    """The files' times as the tarball gives them, as dpkg-source -x
    keeps them: a file older than the changelog entry (the upstream
    ChangeLog installed as changelog.gz) keeps its time in the .deb, so
    a rebuild from the .dsc gives the same bytes."""
    with tarfile.open(tarball) as tar:
        for member in tar:
            path = os.path.join(dest, os.path.normpath(member.name))
            if member.isfile() and os.path.isfile(path) and \
                    not os.path.islink(path):
                os.utime(path, (member.mtime, member.mtime))


def check_can_build(manifest):
    if manifest.source("debian") is None:
        raise UvPatchError(
            "deb: base %s has no Debian source package" % manifest.name,
            hint="use the default base (v1.50.0)", status=EXIT_USAGE)
    why = chroot.missing_tools()
    if why:
        raise UvPatchError(
            "deb: " + why,
            hint="run it as root (sudo scripts/uvpatch deb) on Debian or "
                 "Ubuntu after `bash ci/install-debian.sh`, which installs "
                 "debootstrap", status=EXIT_USAGE)


def build(manifest, out, refresh_chroot=False, nocheck=False):
    """Makes out/<base>/deb; returns (folder, deb.json)."""
    check_can_build(manifest)
    t0 = time.monotonic()
    console.step("deb: Debian's %s %s with the series of %s"
                 % (manifest.source("debian")["package"],
                    manifest.source("debian")["version"], manifest.name))
    chroots = chroot.Chroots()
    if refresh_chroot:
        chroots.refresh()
    root = chroots.ensure("build", build_packages(manifest),
                          build_user=True)
    work = os.path.join(out, "deb-work")
    src, tree, version, series = prepare(manifest, os.path.join(work,
                                                                "stage"))
    dest = deb_dir(out)
    remove_tree(dest)
    os.makedirs(dest)
    log = os.path.join(dest, "build.log")
    session = chroot.Session(root, os.path.join(work, "build"))
    try:
        session.home()
        session.put(tree, TREE, owner=chroot.BUILD_UID)
        session.put(src.orig, chroot.BUILD_HOME + "/" +
                    os.path.basename(src.orig), owner=chroot.BUILD_UID)
        t1 = time.monotonic()
        console.step("deb: dpkg-buildpackage in the trixie chroot, as %s, "
                     "loopback only%s (log: %s)"
                     % (chroot.BUILD_USER, ", no tests" if nocheck else
                        ", Debian's tests running", console.shown(log)))
        dpkg_buildpackage(session, log, nocheck=nocheck,
                          what="--build=source,any")
        built = time.monotonic() - t1
        tests = None if nocheck else debian_tests(log)
        for pattern in OUTPUTS:
            for path in glob.glob(os.path.join(session.path(
                    chroot.BUILD_HOME), pattern)):
                shutil.copyfile(path, os.path.join(dest,
                                                   os.path.basename(path)))
    finally:
        session.close()
    orig = os.path.join(dest, os.path.basename(src.orig))
    if sha256_file(orig) != manifest.source("debian")["sha256"]:
        raise UvPatchError("the orig tarball in %s changed" % dest,
                           hint="report this: dpkg-source must reuse it")
    info = stamp(manifest)
    info.update({"version": version, "tests": tests,
                 "build_seconds": round(built),
                 "debian_patches": [n for n, _, ours in series if not ours],
                 "patches": [n for n, _, ours in series if ours]})
    write_atomic(os.path.join(dest, "deb.json"),
                 json.dumps(info, indent=2) + "\n")
    remove_tree(work)
    for name in sorted(os.listdir(dest)):
        print(os.path.join(dest, name))
    console.note("deb: %s built in %d s (dpkg-buildpackage %d s; Debian's "
                 "tests: %s)" % (version, time.monotonic() - t0, built,
                                 tests_text(tests)))
    return dest, info


def debian_tests(log):
    """{ok, skipped, failed} of the TAP lines (``N: ok 12 - name``) that
    libuv's runners print in the build log; UvPatchError when none ran
    (the suite must run, not be skipped)."""
    counts = {"ok": 0, "skipped": 0, "failed": 0}
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"\d+: (not ok|ok) \d+ - ", line)
            if not m:
                continue
            if m.group(1) == "not ok":
                counts["failed"] += 1
            elif "# SKIP" in line:
                counts["skipped"] += 1
            else:
                counts["ok"] += 1
    if not sum(counts.values()):
        raise UvPatchError("no test of Debian's suite ran in the build",
                           hint="see %s" % console.shown(log))
    return counts


def tests_text(tests):
    if not tests:
        return "not run"
    if not isinstance(tests, dict):
        return "ran"
    return "%(ok)d passed, %(skipped)d skipped, %(failed)d failed" % tests


def dpkg_buildpackage(session, log, nocheck=False, what="-B"):
    opts = ["parallel=%d" % (os.cpu_count() or 1)]
    if nocheck:
        opts.append("nocheck")
    session.run(["dpkg-buildpackage", what, "-us", "-uc"],
                user=True, isolated=True, cwd=TREE, log=log,
                env={"DEB_BUILD_OPTIONS": " ".join(opts)})


def give_back(out_root, out):
    """Under sudo, what the command made in out/ goes to the user who ran
    sudo, so that their own commands can write there again."""
    try:
        uid, gid = int(os.environ["SUDO_UID"]), int(os.environ["SUDO_GID"])
    except (KeyError, ValueError):
        return
    for path in (out_root, out, os.path.join(out, ".uvpatch.lock")):
        if os.path.lexists(path) and os.lstat(path).st_uid == 0:
            os.lchown(path, uid, gid)
    for top in (deb_dir(out), os.path.join(out, "deb-work")):
        for folder, dirs, files in os.walk(top):
            for name in [folder] + [os.path.join(folder, n)
                                    for n in dirs + files]:
                os.lchown(name, uid, gid)
