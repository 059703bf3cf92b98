"""Our series in Debian's quilt form: debian/patches/uvpatch/, listed in
debian/patches/series after Debian's own patches; every patch applies
with no fuzz (patch -F 0, as dpkg-source applies them), and a patch of
ours that fails where it applies on the bare tree names the patch of
Debian's that breaks it. The changelog entry names each patch.
"""

import datetime
import os
import re
import shutil
import subprocess
import tempfile
import textwrap

from ..errors import UvPatchError, EXIT_APPLY

SUBDIR = "uvpatch"
SUFFIX = "+uvpatch1"


def read_series(debian_dir):
    """Debian's series: [(name, strip level)], comments and blanks left
    out."""
    path = os.path.join(debian_dir, "patches", "series")
    if not os.path.isfile(path):
        return []
    found = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            strip = 1
            for opt in parts[1:]:
                if re.fullmatch(r"-p\d+", opt):
                    strip = int(opt[2:])
            found.append((parts[0], strip))
    return found


def our_patches(manifest):
    """[(quilt name, path)] of the base's series, in deps.json's order."""
    return [("%s/%s" % (SUBDIR, e["file"]), manifest.patch_path(e))
            for e in manifest.series]


def stage(tree, manifest):
    """Copies our patches into ``tree``/debian/patches/uvpatch/ and lists
    them after Debian's; returns the full series [(name, strip, ours)]."""
    patches = os.path.join(tree, "debian", "patches")
    debian = read_series(os.path.join(tree, "debian"))
    ours = our_patches(manifest)
    os.makedirs(os.path.join(patches, SUBDIR), exist_ok=True)
    for name, path in ours:
        shutil.copyfile(path, os.path.join(patches, name))
    path = os.path.join(patches, "series")
    with open(path, "a+", encoding="utf-8") as f:
        f.seek(0)
        old = f.read()
        if old and not old.endswith("\n"):
            f.write("\n")
        f.write("# uvpatch: the series of patches/%s/\n" % manifest.name)
        for name, _ in ours:
            f.write(name + "\n")
    return [(n, s, False) for n, s in debian] + \
        [(n, 1, True) for n, _ in ours]


def _apply(tree, patch, strip, dry=False):
    cmd = ["patch", "-p%d" % strip, "-F", "0", "-N", "-t", "-s",
           "--no-backup-if-mismatch", "-i", patch]
    if dry:
        cmd.append("--dry-run")
    try:
        res = subprocess.run(cmd, cwd=tree, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    except FileNotFoundError:
        raise UvPatchError("patch: command not found",
                           hint="apt-get install patch")
    return res.returncode == 0, res.stdout.strip()


def check_apply(tree, series):
    """Applies the whole series to a copy of ``tree`` (unpacked, patches
    unapplied), each patch with no fuzz. A patch of ours that fails is
    tried on the tree with fewer of Debian's patches, to name the one it
    conflicts with. Returns the number of patches applied."""
    patches = os.path.join(tree, "debian", "patches")
    with tempfile.TemporaryDirectory(prefix="uvpatch-quilt-") as tmp:
        work = os.path.join(tmp, "tree")
        shutil.copytree(tree, work, symlinks=True,
                        ignore=shutil.ignore_patterns("debian"))
        for k, (name, strip, ours) in enumerate(series):
            ok, out = _apply(work, os.path.join(patches, name), strip)
            if ok:
                continue
            if not ours:
                raise UvPatchError(
                    "Debian's patch %s does not apply with no fuzz: %s"
                    % (name, _first(out)),
                    hint="Debian's source package is not the one deps.json "
                         "pins", status=EXIT_APPLY)
            raise _conflict(tree, series, k, out)
    return len(series)


def _conflict(tree, series, k, out):
    name = series[k][0]
    patches = os.path.join(tree, "debian", "patches")
    debian = [(n, s) for n, s, ours in series[:k] if not ours]
    earlier = [(n, s) for n, s, ours in series[:k] if ours]
    with tempfile.TemporaryDirectory(prefix="uvpatch-quilt-") as tmp:
        # Debian's patches one by one, ours before this one on top: the
        # first of Debian's after which this one fails is the culprit.
        for j in range(len(debian) + 1):
            work = os.path.join(tmp, "t%d" % j)
            shutil.copytree(tree, work, symlinks=True,
                            ignore=shutil.ignore_patterns("debian"))
            for n, s in debian[:j] + earlier:
                _apply(work, os.path.join(patches, n), s)
            ok, _ = _apply(work, os.path.join(patches, name), 1, dry=True)
            if not ok:
                if j == 0:
                    break
                return UvPatchError(
                    "our patch %s conflicts with Debian's patch %s: %s"
                    % (name, debian[j - 1][0], _first(out)),
                    hint="rebase the patch on the tree with Debian's "
                         "patches applied (dpkg-source -x, then quilt) and "
                         "keep it upstream-ready, or ask why Debian carries "
                         "%s" % debian[j - 1][0], status=EXIT_APPLY)
    return UvPatchError(
        "our patch %s does not apply with no fuzz: %s" % (name, _first(out)),
        hint="`scripts/uvpatch check` shows whether the series applies "
             "to the base", status=EXIT_APPLY)


def _first(text):
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return "; ".join(lines[:2]) if lines else "patch failed"


def last_update(paths):
    """The newest Last-Update: date of the patches, or None."""
    dates = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = re.match(r"Last-Update:\s*(\d{4}-\d{2}-\d{2})\s*$", line)
                if m:
                    dates.append(m.group(1))
                if line.startswith("---"):
                    break
    return max(dates) if dates else None


def top_entry(changelog):
    """(source, version, date) of a changelog's first entry."""
    with open(changelog, encoding="utf-8") as f:
        text = f.read()
    m = re.match(r"(\S+) \(([^)]+)\)", text)
    d = re.search(r"^ -- .*?>  (.+)$", text, re.M)
    if not m or not d:
        raise UvPatchError("%s: no entry at the top" % changelog,
                           hint="Debian's source package is damaged",
                           status=EXIT_APPLY)
    when = datetime.datetime.strptime(d.group(1).strip(),
                                      "%a, %d %b %Y %H:%M:%S %z")
    return m.group(1), m.group(2), when


def changelog_entry(changelog, manifest, who, suite):
    """Our entry, put on top of ``changelog``; returns its version. The
    date is the newest Last-Update: of the series (noon UTC), never before
    Debian's entry: the same series gives the same entry and so the same
    SOURCE_DATE_EPOCH."""
    source, version, debian_date = top_entry(changelog)
    ours = our_patches(manifest)
    day = last_update([p for _, p in ours])
    when = (debian_date + datetime.timedelta(days=1)).astimezone(
        datetime.timezone.utc)
    if day:
        when = max(when, datetime.datetime.strptime(
            day + " 12:00 +0000", "%Y-%m-%d %H:%M %z"))
    new = version + SUFFIX
    lines = ["%s (%s) %s; urgency=medium" % (source, new, suite), "",
             "  * Rebuild with the uvpatch series of libuv %s, in"
             % manifest.upstream["tag"],
             "    debian/patches/%s/ after Debian's patches:" % SUBDIR]
    by_file = {e["file"]: e for e in manifest.series}
    for name, _ in ours:
        entry = by_file[os.path.basename(name)]
        lines.append("    - %s:" % os.path.basename(name))
        lines += textwrap.wrap(entry.get("summary", ""), 72,
                               initial_indent="      ",
                               subsequent_indent="      ",
                               break_on_hyphens=False)
    lines += ["", " -- %s  %s" % (who, when.strftime(
        "%a, %d %b %Y %H:%M:%S +0000")), ""]
    with open(changelog, encoding="utf-8") as f:
        old = f.read()
    with open(changelog, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n" + old)
    return new
