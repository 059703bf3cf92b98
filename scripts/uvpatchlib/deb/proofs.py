"""The regression programs on the installed packages: tests/regress built
in the system chroot with CMake against the installed libuv1-dev (its
headers and libuv.so), and every Linux proof case of the series the
packages were made from run, each in a network namespace of its own
with only loopback, as the test command runs them. They must pass on
our libuv1t64; the same programs are run again once apt has gone back
to Debian's, where a proof shows the defect (reported, not judged: a
case may also fail there for a missing API).
"""

import glob
import os
import shlex

from ..verify.regress import proofs_for

WORK = "/uvpatch/regress"
CASE_TIMEOUT = 60

_RUN = r"""cd %(build)s
for c in %(cases)s; do
  echo "=== $c"
  timeout %(timeout)d unshare --net -- sh -c 'ip link set lo up && exec "$0" "$@"' \
    ./${c%%%%/*} ${c#*/} 2>/dev/null
  echo "status $?"
done
"""


def put_sources(session, root):
    """tests/regress, tests/common and tests/uv-programs.cmake into the
    chroot."""
    for part in ("regress", "common"):
        session.put(os.path.join(root, "tests", part),
                    "%s/tests/%s" % (WORK, part))
    session.put(os.path.join(root, "tests", "uv-programs.cmake"),
                WORK + "/tests/uv-programs.cmake")


def build(session, root):
    """Builds the programs against the installed libuv1-dev."""
    put_sources(session, root)
    libs = glob.glob(session.path("/usr/lib/*/libuv.so"))
    if len(libs) != 1:
        return "libuv1-dev's libuv.so not found in the chroot"
    lib = "/" + os.path.relpath(libs[0], session.upper)
    res = session.run(["cmake", "-S", WORK + "/tests/regress", "-B",
                       WORK + "/build", "-DCMAKE_BUILD_TYPE=Release",
                       "-DUV_SOURCE_DIR=/usr", "-DUV_LIBRARY=" + lib],
                      log=session.log, check=False)
    if res.returncode == 0:
        res = session.run(["cmake", "--build", WORK + "/build", "-j",
                           str(os.cpu_count() or 1)], log=session.log,
                          check=False)
    if res.returncode != 0:
        return "the programs did not build against libuv1-dev (see %s)" \
            % session.log
    return None


def run(session, manifest):
    """{program/case: (status, why)} of the Linux proofs."""
    cases = sorted(proofs_for(manifest, "linux"))
    script = _RUN % {"build": WORK + "/build",
                     "cases": " ".join(shlex.quote(c) for c in cases),
                     "timeout": CASE_TIMEOUT}
    res = session.run(["sh", "-c", script], capture=True, check=False,
                      timeout=CASE_TIMEOUT * len(cases) + 60)
    with open(session.log, "a", encoding="utf-8") as f:
        f.write(res.stdout)
    return parse(res.stdout, cases)


def parse(text, cases):
    found, name = {}, None
    for line in text.splitlines():
        if line.startswith("=== "):
            name = line[4:].strip()
        elif name and name not in found:
            for marker, status in (("ok ", "PASS"), ("not ok ", "FAIL"),
                                   ("skip ", "SKIP")):
                if line.startswith(marker):
                    why = line[len(marker):].partition(": ")[2]
                    found[name] = (status, why)
            if line.startswith("status ") and name not in found:
                found[name] = ("FAIL", "no result line, " + line)
    for case in cases:
        found.setdefault(case, ("FAIL", "did not run"))
    return found


def judge(results):
    """(status, why) on our packages."""
    failed = sorted(c for c, (s, _) in results.items() if s == "FAIL")
    skipped = sorted(c for c, (s, _) in results.items() if s == "SKIP")
    passed = len(results) - len(failed) - len(skipped)
    if failed:
        return "FAIL", "%d of %d proof cases fail on the installed "\
            "packages: %s" % (len(failed), len(results), "; ".join(
                "%s: %s" % (c, results[c][1][:120]) for c in failed[:5]))
    return "PASS", "%d proof cases of the series pass on the installed " \
        "libuv1t64, built against libuv1-dev%s" % (
            passed, " (%d skipped: %s)" % (len(skipped), ", ".join(skipped))
            if skipped else "")
