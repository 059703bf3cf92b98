"""File-system helpers that never leave a half-written result, and a
file's sha256."""

import errno
import hashlib
import os
import shutil
import stat
import sys
import tempfile

from .errors import UvPatchError, EXIT_STATE, EXIT_USAGE
from .console import note


def write_atomic(path, data, tmp=None):
    """Writes ``data`` (str or bytes) to ``path`` through a rename, from a
    temporary file beside it: ``tmp`` when given (a fixed name that a
    recovery knows to remove after a kill), else a random one."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    if tmp is None:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    else:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise


def sha256_file(path):
    """The sha256 of a file, given by its path or as an open file."""
    if hasattr(path, "read"):
        return _sha256_of(path)
    with open(path, "rb") as f:
        return _sha256_of(f)


def _sha256_of(f):
    digest = hashlib.sha256()
    for chunk in iter(lambda: f.read(1 << 20), b""):
        digest.update(chunk)
    return digest.hexdigest()


def file_kind(mode):
    """What a file that is not a regular one is, for messages."""
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def _unlink_quietly(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def remove_tree(path):
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        try:
            shutil.rmtree(path)
        except (RecursionError, OSError) as e:
            # Too deep for rmtree's recursion, or for a path: a killed
            # run's scratch folder from a crafted source must still go.
            if isinstance(e, OSError) and e.errno != errno.ENAMETOOLONG:
                raise
            _remove_flat(path)


def out_of_space(folder):
    """True when the disk of ``folder`` cannot take 64 KiB more: asked
    after a write failed, to name a full disk as the cause (git says
    "unable to write file" for each file, never why)."""
    try:
        fd, path = tempfile.mkstemp(prefix=".tmp-space-", dir=folder)
    except OSError as e:
        return e.errno in (errno.ENOSPC, errno.EDQUOT)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(b"\0" * (64 << 10))
            f.flush()
            os.fsync(f.fileno())
        return False
    except OSError as e:
        return e.errno in (errno.ENOSPC, errno.EDQUOT)
    finally:
        _unlink_quietly(path)


def no_space(folder, what, detail="", status=EXIT_STATE):
    """The error for a write that failed as the disk of ``folder`` is
    full: it names the disk, not the source or the command that wrote."""
    error = UvPatchError(
        "no space left on the disk of %s (No space left on device) while "
        "%s%s" % (folder, what, ": " + detail if detail else ""),
        hint="free space on that disk (or move the work folder with --out, "
             "the cache with XDG_CACHE_HOME), then run the command again; "
             "nothing half-written is kept", status=status)
    error.full_disk = True  # no other source or step would fare better
    return error


def scratch_index(index):
    """``index``, an index file of the tool's own in out/, made ready:
    what a killed run left of it goes, its ``.lock`` too, which would
    make every later git call on it fail with "File exists". Called
    under the lock on out/<base>, so no other run is using it."""
    for path in (index + ".lock", index):
        if os.path.lexists(path):
            os.unlink(path)
    return index


def _remove_flat(top):
    """Removes the folder ``top`` without recursion or long paths: each
    folder met is moved up to be a child of ``top`` before it is read."""
    folders, n = [top], 0
    while n < len(folders):
        folder = folders[n]
        n += 1
        for name in os.listdir(folder):
            path = os.path.join(folder, name)
            if stat.S_ISDIR(os.lstat(path).st_mode):
                if folder != top:
                    moved = os.path.join(top, ".flat-%d" % len(folders))
                    while os.path.lexists(moved):
                        moved += "-"
                    os.rename(path, moved)
                    path = moved
                folders.append(path)
            else:
                os.unlink(path)
    for folder in reversed(folders):
        os.rmdir(folder)


def replace_dir(new, dest):
    """Moves the finished folder ``new`` to ``dest``, replacing any old one.

    The old folder is renamed aside first, so ``dest`` holds either the
    old or the new content at every moment a crash could happen.
    """
    old = dest + ".old"
    remove_tree(old)
    if os.path.lexists(dest):
        os.rename(dest, old)
    os.rename(new, dest)
    remove_tree(old)


def exchange(a, b):
    """Swaps the folders ``a`` and ``b`` in one step, so that ``b`` never
    stops existing (Linux's renameat2 RENAME_EXCHANGE). False where the
    system or the file system cannot; nothing has changed then."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):   # a libc without it
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b),
                 rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS,
               getattr(errno, "ENOTSUP", errno.EINVAL)):
        return False
    raise OSError(err, os.strerror(err), b)


def recover_dir(dest):
    """Puts back ``dest`` if a crash came between the two renames, and
    removes what is left of the old folder if it came after them."""
    old = dest + ".old"
    if not os.path.lexists(dest) and os.path.isdir(old):
        os.rename(old, dest)
    elif os.path.lexists(old):
        remove_tree(old)


def _lock_fd(fd, wait=False):
    """Takes an exclusive lock; OSError if it is held, unless ``wait``.
    The kernel drops it when the process dies, so no stale lock remains."""
    if os.name == "nt":
        import msvcrt
        import time
        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
                return
            except OSError:
                if not wait:
                    raise
                time.sleep(0.2)
    else:
        import fcntl
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))


class Lock:
    """An exclusive lock on a folder, so two runs never share out/.
    With ``wait``, a held lock is waited for instead of refused."""

    def __init__(self, folder, what, wait=False, name=".uvpatch.lock",
                 busy=None):
        # name None: the folder itself is locked, where the system allows
        # (a folder the user owns gets no lock file of ours).
        self.path = os.path.join(folder, name) if name else folder
        self.on_folder = name is None and os.name != "nt"
        if name is None and not self.on_folder:
            self.path = os.path.join(folder, ".uvpatch.lock")
        self.what = what
        self.wait = wait
        # (message, hint) when held, for a lock that is not out/'s.
        self.busy = busy
        self.fd = None

    def __enter__(self):
        if self.on_folder:
            self.fd = os.open(self.path, os.O_RDONLY)
        else:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                _lock_fd(self.fd)
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES,
                                   errno.EDEADLK):
                    raise
                if not self.wait and self.busy:
                    raise UvPatchError(self.busy[0], hint=self.busy[1],
                                       status=EXIT_STATE)
                if not self.wait:
                    raise UvPatchError(
                        "another uvpatch command is using %s"
                        % os.path.dirname(self.path),
                        hint="wait for it to finish, or use --out DIR for "
                             "a separate work folder", status=EXIT_STATE)
                note("waiting for another uvpatch command using %s"
                     % os.path.dirname(self.path))
                _lock_fd(self.fd, wait=True)
        except BaseException:
            os.close(self.fd)
            self.fd = None
            raise
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        return False


def check_out(out_root, repo):
    """Refuses a work folder the tool would write into the sources of:
    the repository itself, a folder holding it, or one of its tracked
    folders (patches/ is rewritten by refresh, scripts/ runs)."""
    real = os.path.realpath(out_root)
    root = os.path.realpath(repo)
    what = "the repository or a folder holding it" \
        if inside(root, real) else None
    for name in ("patches", "scripts", "tests", "ci", ".ci", ".git",
                 ".github"):
        if inside(real, os.path.join(root, name)):
            what = "inside the repository's %s/" % name
    if what:
        raise UvPatchError(
            "--out %s is %s" % (out_root, what),
            hint="use out/ (the default) or a folder outside the "
                 "repository's patches/, scripts/, tests/ and ci/",
            status=EXIT_USAGE)


def check_cmake_paths(out_root, repo):
    """Refuses, before any work, a checkout or work folder whose path has
    a line break: CMake writes the paths into lines of its files."""
    for path, what, hint in (
            (os.path.abspath(repo), "the checkout", "clone the repository "
             "into a folder whose path has no line break: CMake builds "
             "its tests/ from there, so --out DIR alone is not enough"),
            (out_root, "the work folder", "pass --out DIR, a folder whose "
             "path has no line break")):
        if "\n" in path or "\r" in path:
            raise UvPatchError(
                "%s %r has a line break in its path, which CMake cannot "
                "take" % (what, path), hint=hint, status=EXIT_USAGE)


def inside(path, folder):
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)
