"""Debian trixie chroots: made with debootstrap from the mirror this
machine's apt uses, cached in the cache folder (debian/chroot-*), and used
through an overlay, so that every build or check starts from the same
tree and the cache is never written.

Each command runs in a mount and PID namespace of its own (the overlay,
/proc and /dev mounted there vanish with it; a server left running dies
with it), optionally in a network namespace with only loopback, and
optionally as the unprivileged build user.
"""

import glob
import json
import os
import shutil
import subprocess
import tempfile
import time

from .. import console, subproc
from ..errors import UvPatchError, EXIT_FAILURE
from ..fsutil import Lock, remove_tree, write_atomic
from ..source.cache import cache_root

SUITE = "trixie"
BUILD_USER = "uvbuild"
BUILD_UID = 2000
BUILD_HOME = "/build"
PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
# Services never start on install: the checks start what they need.
POLICY_RC = "#!/bin/sh\n# uvpatch: no service starts in this chroot\nexit 101\n"

# Run by unshare as root on the host, in the new namespaces: $1 the root
# to chroot to, $2..$4 the overlay's lower, upper and work folders (empty:
# the root itself), $5 1 for loopback only; then the chroot command.
_ENTER = r"""set -e
R=$1; L=$2; U=$3; W=$4; ISO=$5; shift 5
if [ -n "$L" ]; then
  mount -t overlay overlay -o "lowerdir=$L,upperdir=$U,workdir=$W" "$R"
fi
mount -t proc proc "$R/proc"
mount --rbind /dev "$R/dev"
mount -t tmpfs -o mode=1777 tmpfs "$R/tmp"
if [ "$ISO" = 1 ]; then ip link set lo up; fi
exec chroot "$@"
"""


def debian_mirror(files=None):
    """The Debian mirror this machine's apt uses (not its security
    archive): from /etc/apt/sources.list.d/*.sources, then
    /etc/apt/sources.list; None without one."""
    if files is None:
        files = sorted(glob.glob("/etc/apt/sources.list.d/*.sources")) + \
            ["/etc/apt/sources.list"]
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        for line in text.splitlines():
            words = line.split()
            if path.endswith(".sources"):
                uris = words[1:] if words[:1] == ["URIs:"] else []
            else:
                uris = [w for w in words[1:] if "://" in w] \
                    if words[:1] == ["deb"] else []
            for uri in uris:
                if uri.rstrip("/").endswith("/debian") and \
                        "security" not in uri:
                    return uri
    return None


def missing_tools():
    """Why chroots cannot be made or entered here, or None."""
    if os.geteuid() != 0:
        return "needs root (debootstrap, chroot, namespaces)"
    for tool in ("debootstrap", "unshare", "chroot", "ip", "mount"):
        if shutil.which(tool) is None:
            return "%s not found (bash ci/install-debian.sh installs it)" \
                % tool
    if debian_mirror() is None:
        return "no Debian mirror in /etc/apt/sources.list*"
    return None


def host_arch():
    return subproc.run(["dpkg", "--print-architecture"],
                       capture=True).stdout.strip()


def age_text(seconds):
    seconds = int(max(0, seconds))
    if seconds < 3600:
        return "%d min" % (seconds // 60)
    if seconds < 86400:
        return "%d h %d min" % (seconds // 3600, seconds % 3600 // 60)
    return "%d days" % (seconds // 86400)


class Chroots:
    """The cached chroots: ``base`` (debootstrap minbase) and one per
    kind, each the base plus its packages."""

    def __init__(self, cache=None, arch=None):
        self.arch = arch or host_arch()
        self.top = os.path.join(cache or cache_root(), "debian")
        self.mirror = debian_mirror()

    def folder(self, kind):
        return os.path.join(self.top, "chroot-%s-%s-%s"
                            % (SUITE, self.arch, kind))

    def refresh(self):
        os.makedirs(self.top, exist_ok=True)
        with Lock(self.top, "chroot", wait=True, name="chroots.lock"):
            for path in glob.glob(os.path.join(self.top, "chroot-*")):
                if os.path.isdir(path):
                    console.note("removing %s" % path)
                    remove_tree(path)

    def ensure(self, kind, packages, build_user=False):
        """The root of chroot ``kind`` with ``packages`` (an apt-get
        satisfy string) installed, made if missing or different. One
        run at a time makes chroots; scratch folders seen under the lock
        were left by a killed run."""
        os.makedirs(self.top, exist_ok=True)
        with Lock(self.top, "chroot", wait=True, name="chroots.lock"):
            for name in os.listdir(self.top):
                if name.startswith(".tmp-"):
                    remove_tree(os.path.join(self.top, name))
            return self._ensure(kind, packages, build_user)

    def _ensure(self, kind, packages, build_user):
        folder = self.folder(kind)
        info = _read_info(folder)
        want = {"suite": SUITE, "packages": packages, "mirror": self.mirror,
                "build_user": build_user}
        if info and all(info.get(k) == v for k, v in want.items()):
            console.note("trixie %s chroot %s: made %s ago "
                         "(--refresh-chroot remakes it)"
                         % (kind, folder, age_text(time.time() -
                                                   info["created"])))
            return os.path.join(folder, "root")
        base = self._base()
        t0 = time.monotonic()
        console.step("chroot: trixie %s (%s)" % (kind, packages))
        tmp = tempfile.mkdtemp(prefix=".tmp-", dir=self.top)
        log = folder + ".log"
        console.note("apt-get's output: %s" % log)
        open(log, "w").close()
        try:
            root = os.path.join(tmp, "root")
            subproc.run(["cp", "-a", "--reflink=auto", base, root])
            enter(root, None, ["apt-get", "-q", "update"], log=log)
            enter(root, None, ["apt-get", "-q", "-y",
                               "--no-install-recommends", "satisfy",
                               packages], log=log)
            enter(root, None, ["apt-get", "clean"], log=log)
            if build_user:
                _add_user(root)
            want["created"] = time.time()
            write_atomic(os.path.join(tmp, "info.json"),
                         json.dumps(want, indent=2) + "\n")
            remove_tree(folder)
            os.rename(tmp, folder)
        finally:
            remove_tree(tmp)
        console.note("trixie %s chroot made in %d s"
                     % (kind, time.monotonic() - t0))
        return os.path.join(folder, "root")

    def _base(self):
        folder = self.folder("base")
        info = _read_info(folder)
        if info and info.get("mirror") == self.mirror:
            return os.path.join(folder, "root")
        if self.mirror is None:
            raise UvPatchError("no Debian mirror in /etc/apt/sources.list*",
                               hint="add the Debian entry apt uses")
        os.makedirs(self.top, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".tmp-", dir=self.top)
        t0 = time.monotonic()
        console.step("chroot: debootstrap --variant=minbase %s from %s"
                     % (SUITE, self.mirror))
        try:
            root = os.path.join(tmp, "root")
            res = subproc.run(["debootstrap", "--variant=minbase", SUITE,
                               root, self.mirror], capture=True,
                              check=False)
            if res.returncode != 0:
                raise UvPatchError(
                    "debootstrap %s failed: %s" % (
                        SUITE, (res.stdout + res.stderr).strip()
                        .splitlines()[-1:]),
                    hint="check that %s serves %s (apt-get update shows "
                         "it)" % (self.mirror, SUITE), status=EXIT_FAILURE)
            policy = os.path.join(root, "usr", "sbin", "policy-rc.d")
            write_atomic(policy, POLICY_RC)
            os.chmod(policy, 0o755)
            write_atomic(os.path.join(tmp, "info.json"), json.dumps(
                {"suite": SUITE, "mirror": self.mirror,
                 "created": time.time()}, indent=2) + "\n")
            remove_tree(folder)
            os.rename(tmp, folder)
        finally:
            remove_tree(tmp)
        console.note("debootstrap took %d s" % (time.monotonic() - t0))
        return os.path.join(folder, "root")


def _read_info(folder):
    try:
        with open(os.path.join(folder, "info.json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _add_user(root):
    with open(os.path.join(root, "etc", "passwd"), "a") as f:
        f.write("%s:x:%d:%d:uvpatch build user:%s:/bin/sh\n"
                % (BUILD_USER, BUILD_UID, BUILD_UID, BUILD_HOME))
    with open(os.path.join(root, "etc", "group"), "a") as f:
        f.write("%s:x:%d:\n" % (BUILD_USER, BUILD_UID))


def enter(root, layers, cmd, user=False, isolated=False, cwd="/",
          env=None, log=None, timeout=None, check=True, capture=False):
    """Runs ``cmd`` in chroot ``root`` (the merged overlay when ``layers``
    is (lower, upper, work)): as the build user with ``user``, in a
    network namespace with only loopback with ``isolated``. Output goes to
    ``log`` (a path, appended), else stderr (or is returned with
    ``capture``)."""
    lower, upper, work = layers or ("", "", "")
    environ = ["PATH=" + PATH, "LC_ALL=C.UTF-8",
               "HOME=" + (BUILD_HOME if user else "/root"),
               "DEBIAN_FRONTEND=noninteractive"]
    environ += ["%s=%s" % kv for kv in sorted((env or {}).items())]
    unshare = ["unshare", "--mount", "--propagation", "private", "--pid",
               "--fork", "--kill-child"] + (["--net"] if isolated else [])
    chroot = (["--userspec=%d:%d" % (BUILD_UID, BUILD_UID), "--groups="
               + str(BUILD_UID)] if user else []) + \
        [root, "/bin/sh", "-c", 'cd "$0" && exec "$@"', cwd,
         "/usr/bin/env", "-i"] + environ + list(cmd)
    full = unshare + ["--", "sh", "-c", _ENTER, "sh", root, lower, upper,
                      work, "1" if isolated else "0"] + chroot
    console.show_command(list(cmd), cwd="chroot %s" % root)
    if log is None:
        return subproc.run(full, capture=capture, check=check,
                           timeout=timeout, what=str(cmd[0]))
    with open(log, "ab") as f:
        try:
            res = subprocess.run(full, stdout=f, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise UvPatchError("%s timed out after %s s in the chroot"
                               % (cmd[0], timeout),
                               hint="see %s" % console.shown(log))
    if check and res.returncode != 0:
        raise UvPatchError("%s failed in the trixie chroot (status %d)"
                           % (" ".join(cmd[:3]), res.returncode),
                           hint="see the end of %s" % console.shown(log),
                           status=EXIT_FAILURE)
    return res


class Session:
    """A throw-away overlay over a cached chroot: ``upper`` holds what the
    commands change; files put there (``put``) appear in the chroot."""

    def __init__(self, lower, scratch):
        self.lower = lower
        self.scratch = scratch
        remove_tree(scratch)
        self.upper = os.path.join(scratch, "upper")
        self.work = os.path.join(scratch, "work")
        self.root = os.path.join(scratch, "root")
        for d in (self.upper, self.work, self.root):
            os.makedirs(d)

    def path(self, inside):
        """The host path in ``upper`` of a path in the chroot."""
        return os.path.join(self.upper, inside.lstrip("/"))

    def put(self, src, inside, owner=None):
        dest = self.path(inside)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if os.path.isdir(src):
            shutil.copytree(src, dest, symlinks=True)
        else:
            shutil.copyfile(src, dest)
        if owner is not None:
            for folder, dirs, files in os.walk(dest):
                for name in dirs + files:
                    os.lchown(os.path.join(folder, name), owner, owner)
            os.lchown(dest, owner, owner)
        return dest

    def home(self):
        """The build user's home, owned by them."""
        home = self.path(BUILD_HOME)
        os.makedirs(home, exist_ok=True)
        os.chown(home, BUILD_UID, BUILD_UID)
        return home

    def run(self, cmd, **kw):
        return enter(self.root, (self.lower, self.upper, self.work), cmd,
                     **kw)

    def close(self):
        remove_tree(self.scratch)
