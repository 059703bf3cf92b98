"""Reading a source into the cache so that nothing lands outside it.

tarfile's own extraction follows the links it has just made, and the
filter that stops it exists only in newer Pythons (Debian bookworm's
3.11.2 has none). So a tarball is unpacked here member by member: only
regular files and folders, each placed by its name under the
destination, created without following links and never over an
existing file. libuv's trees hold no links, devices or FIFOs, so a
member of that kind is refused outright, and so is a directory source
or a cached tree that holds one.
"""

import errno
import os
import stat
import tarfile
import zlib

from ..errors import UvPatchError, EXIT_FETCH
from ..fsutil import file_kind, inside
from . import tarscan

NOT_A_SOURCE = ("libuv's trees hold only regular files and folders (no "
                "links, devices, FIFOs or .git), so this is not a source of "
                "libuv; use another source")
_CHUNK = 1 << 20
# libuv's tarballs hold ~600 members and ~10 MiB; these caps are far
# above that and far below what fills a disk or memory. A tarball past
# one is refused from its headers, before anything is written.
MAX_MEMBER = 64 << 20
MAX_MEMBERS = 100000
MAX_TOTAL = 512 << 20
# Not on every system: 0 is "no such flag".
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)


class NotARegularFile(Exception):
    """A path that is neither a regular file nor a folder: reading it
    could wait forever (a FIFO) or never end (/dev/zero)."""


def source_kind(path):
    """"dir" or "file" for a source that may be read; NotARegularFile
    (naming what it is) for anything else; FileNotFoundError."""
    mode = os.stat(path).st_mode
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    raise NotARegularFile("is %s, not a regular file or a folder"
                          % file_kind(mode))


def open_regular(path):
    """``path`` opened for reading, refused unless it is a regular file
    when opened: O_NONBLOCK keeps a FIFO swapped in from blocking the
    open, O_NOFOLLOW a link from leading elsewhere."""
    fd = os.open(path, os.O_RDONLY | _NONBLOCK | _NOFOLLOW | _BINARY)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotARegularFile("is %s, not a regular file"
                                  % file_kind(mode))
        if _NONBLOCK and hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _refuse(what, problem):
    raise UvPatchError("%s: %s" % (what, problem), hint=NOT_A_SOURCE,
                       status=EXIT_FETCH)


def write_failed(dest, e):
    """A write that failed is the disk's fault, not the source's."""
    where = e.filename or dest
    raise UvPatchError(
        "cannot write %s: %s" % (where, e.strerror or e),
        hint="free space on that disk, or make it writable (the cache "
             "moves with XDG_CACHE_HOME), and run the command again; "
             "nothing half-written is kept" if e.errno in (
                 errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES)
             else "fix the cause named above and run the command again",
        status=EXIT_FETCH)


def _parts(name):
    """The path components of a member name, or None when the name
    cannot be a path inside the tree."""
    if name.startswith("/") or "\\" in name or \
            (len(name) > 1 and name[1] == ":"):
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        return None
    return parts


def _make_dirs(root, parts, what, name):
    """Creates root/parts... as real folders; an entry already on the
    way must be a folder made here (never a link or a file)."""
    path = root
    for part in parts:
        path = os.path.join(path, part)
        try:
            os.mkdir(path, 0o755)
        except FileExistsError:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                _refuse(what, "member %r goes through %r, which an earlier "
                        "member made a file" % (name, part))
    return path


# What a damaged or truncated archive raises while it is read (a bad
# gzip stream is an OSError too, so reads and writes are told apart
# where they happen).
_READ_ERRORS = (tarfile.TarError, EOFError, OSError, zlib.error)
try:
    import lzma
    _READ_ERRORS += (lzma.LZMAError,)
except ImportError:  # a Python built without it reads no .xz either
    pass


def extract_tarball(path, dest):
    """Unpacks the tarball ``path`` into the new folder ``dest``; returns
    the comment of its pax header (`git archive` puts the commit id
    there), or None."""
    what = "tarball %s" % path
    try:
        os.makedirs(dest)
    except OSError as e:
        write_failed(dest, e)
    root = os.path.realpath(dest)
    try:
        f = open_regular(path)
    except NotARegularFile as e:
        _refuse(what, str(e))
    with f:
        try:
            tarscan.scan(f, MAX_MEMBERS * 3)
        except tarscan.BadTarball as e:
            raise UvPatchError("%s: %s" % (what, e), hint="this is not a "
                               "tarball of libuv; use another source",
                               status=EXIT_FETCH)
        except _READ_ERRORS as e:
            _damaged(what, e)
        f.seek(0)
        _check_sizes(f, what)
        f.seek(0)
        try:
            tar = tarfile.open(fileobj=f, mode="r:*")
        except _READ_ERRORS as e:
            _damaged(what, e)
        with tar:
            for member in _members(tar, what):
                _one_member(tar, member, what, dest, root)
            return (tar.pax_headers.get("comment") or "").strip() or None


def _members(tar, what):
    """The members of ``tar`` one at a time, a read error refused as a
    damaged archive."""
    while True:
        try:
            member = tar.next()
        except _READ_ERRORS as e:
            _damaged(what, e)
        if member is None:
            return
        yield member


def _check_sizes(f, what):
    """Reads the headers of the tarball ``f`` alone and refuses one past
    a cap: a member's size is in its header, so a huge (or sparse)
    member is refused without reading its data."""
    try:
        tar = tarfile.open(fileobj=f, mode="r:*")
    except _READ_ERRORS as e:
        _damaged(what, e)
    count = total = 0
    with tar:
        for member in _members(tar, what):
            # Not kept: 100,000 TarInfo objects are memory for nothing.
            tar.members = []
            count += 1
            total += member.size
            if member.size > MAX_MEMBER:
                _refuse_size(what, "member %r is %d bytes, more than %d MiB"
                             % (member.name, member.size, MAX_MEMBER >> 20))
            if count > MAX_MEMBERS:
                _refuse_size(what, "it has more than %d members"
                             % MAX_MEMBERS)
            if total > MAX_TOTAL:
                _refuse_size(what, "its members add up to more than %d MiB"
                             % (MAX_TOTAL >> 20))


def _refuse_size(what, problem):
    raise UvPatchError("%s: %s; libuv's tarballs are a few MiB"
                       % (what, problem),
                       hint="this is not a tarball of libuv; use another "
                            "source", status=EXIT_FETCH)


def _damaged(what, e):
    raise UvPatchError("%s is damaged or not a tarball: %s" % (what, e),
                       hint="download it again, or use another source",
                       status=EXIT_FETCH)


def _check_member(member, what):
    """The member's path components; refuses what a libuv tree cannot
    hold."""
    name = member.name
    parts = _parts(name)
    if parts is None:
        _refuse(what, "member %r points outside the tree" % name)
    if ".git" in parts:
        _refuse(what, "member %r is inside a .git folder" % name)
    if member.issym() or member.islnk():
        _refuse(what, "member %r is a %s link to %r" % (
            name, "symbolic" if member.issym() else "hard",
            member.linkname))
    if member.ischr() or member.isblk():
        _refuse(what, "member %r is a device" % name)
    if member.isfifo():
        _refuse(what, "member %r is a FIFO" % name)
    if not (member.isdir() or member.isreg()):
        _refuse(what, "member %r is of tar type %r, not a file or a folder"
                % (name, member.type))
    if member.isreg() and not parts:
        _refuse(what, "member %r is a file without a name" % name)
    return parts


def _one_member(tar, member, what, dest, root):
    parts = _check_member(member, what)
    name = member.name
    try:
        folder = _make_dirs(dest, parts if member.isdir() else parts[:-1],
                            what, name)
    except OSError as e:
        write_failed(dest, e)
    # Every folder on the way was made here, without links; say so.
    if not inside(os.path.realpath(folder), root):
        _refuse(what, "member %r points outside the tree" % name)
    if member.isdir():
        return
    # git records only the executable bit.
    mode = 0o755 if member.mode & 0o100 else 0o644
    try:
        fd = os.open(os.path.join(folder, parts[-1]), os.O_WRONLY
                     | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY, mode)
    except FileExistsError:
        _refuse(what, "member %r appears twice" % name)
    except OSError as e:
        write_failed(dest, e)
    try:
        try:
            data = tar.extractfile(member)
        except _READ_ERRORS as e:
            _damaged(what, e)
        while True:
            try:
                chunk = data.read(_CHUNK)
            except _READ_ERRORS as e:
                _damaged(what, e)
            if not chunk:
                break
            try:
                _write_all(fd, chunk, os.path.join(folder, parts[-1]))
            except OSError as e:
                write_failed(dest, e)
    finally:
        os.close(fd)


def _write_all(fd, data, path):
    """Writes ``data`` unbuffered: a failed write is raised once, here,
    with the file's name (a buffered file raises it again on close)."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except OSError as e:
            raise OSError(e.errno, e.strerror, path)


def copy_tree(src, dest, skip_top_git=False, exist_ok=False):
    """Copies the folder ``src`` into the new folder ``dest`` (with
    ``exist_ok``, into an existing one, never over a file): regular files
    (with their executable bit) and folders only. A link, a device, a
    FIFO or a .git folder is refused: libuv's trees hold none, and
    reading a FIFO would block. Errors of the disk are OSError."""
    what = "source folder %s" % src
    os.makedirs(dest, exist_ok=exist_ok)
    _copy(src, dest, what, skip_top_git, "")


def _copy(src, dest, what, skip_git, rel):
    # A stack, not recursion: a crafted tree may be thousands deep.
    stack = [(src, dest, rel, skip_git)]
    while stack:
        src, dest, rel, skip_git = stack.pop()
        if rel.count("/") >= tarscan.MAX_DEPTH:
            _refuse(what, "%s... is more than %d folders deep"
                    % (rel[:60], tarscan.MAX_DEPTH))
        with os.scandir(src) as it:
            entries = sorted(it, key=lambda d: d.name)
        for entry in entries:
            name = rel + entry.name
            if entry.name == ".git":
                if skip_git:
                    continue
                _refuse(what, "it holds %s" % name)
            mode = entry.stat(follow_symlinks=False).st_mode
            target = os.path.join(dest, entry.name)
            if stat.S_ISDIR(mode):
                os.mkdir(target, 0o755)
                stack.append((entry.path, target, name + "/", False))
            elif stat.S_ISREG(mode):
                _copy_file(entry.path, target, mode, what, name)
            else:
                _refuse(what, "%s is %s" % (name, file_kind(mode)))


def _copy_file(path, target, mode, what, name):
    try:
        f = open_regular(path)
    except NotARegularFile:
        _refuse(what, "%s changed into a special file while it was read"
                % name)
    with f:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                     | _NOFOLLOW | _BINARY,
                     0o755 if mode & stat.S_IXUSR else 0o644)
        try:
            while True:
                chunk = f.read(_CHUNK)
                if not chunk:
                    break
                _write_all(fd, chunk, target)
        finally:
            os.close(fd)


def tree_problem(path):
    """Why the folder ``path`` cannot be a libuv tree (a link, a device,
    a FIFO or a .git anywhere in it), or None."""
    stack = [(path, "")]
    while stack:
        folder, rel = stack.pop()
        with os.scandir(folder) as it:
            for entry in it:
                name = rel + entry.name
                if entry.name == ".git":
                    return "it holds %s" % name
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode):
                    if name.count("/") >= tarscan.MAX_DEPTH:
                        return "%s... is more than %d folders deep" % (
                            name[:60], tarscan.MAX_DEPTH)
                    stack.append((entry.path, name + "/"))
                elif not stat.S_ISREG(mode):
                    return "%s is %s" % (name, file_kind(mode))
    return None
