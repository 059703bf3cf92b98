"""The bench command: the pristine base and the patched tree, built in
Release and measured side by side on this machine, written up as a
report to paste into an upstream pull request.

Every measure runs in a process of its own, base and patched taking
turns (base first in even rounds, patched first in odd ones, so a drift
in the machine's load falls on both). No figure is asserted anywhere:
the report says what was seen, and why when something could not be
measured.

The command's run and the test command's quick check of it live here
(dnsbench.py and dnsinsn.py run the DNS parts); measure.py measures,
render.py writes the report and analyse.py reads it back.
"""

import os
import tempfile

from .. import console
from ..errors import UvPatchError, EXIT_USAGE
from ..fsutil import remove_tree
from .analyse import check_report, load_report
from .measure import measure, parse_only
from .render import write_report


def run(manifest, out, quick=False, only=None, report_path=None,
        source=None):
    """The bench command; returns the path of report.json."""
    report_path = os.path.abspath(report_path or os.path.join(
        out, "bench", "report.md"))
    if not report_path.endswith(".md"):
        raise UvPatchError("--report %s: the report is Markdown" %
                           report_path, hint="give a file name ending in "
                           ".md (report.json and the plots go next to it)",
                           status=EXIT_USAGE)
    report = measure(manifest, out, quick=quick, only=parse_only(only),
                     source=source)
    return write_report(report, report_path)


# --- the test command's check ---------------------------------------------

def smoke(manifest, out, tally, source=None):
    """Runs `bench --quick` into a temporary folder (in the caller's
    work folder and lock) and checks the report: one result line per
    part. Asserts no figure, only that each was measured or says why."""
    console.step("bench --quick")
    tmp = tempfile.mkdtemp(prefix="uvpatch-bench-")
    try:
        md = os.path.join(tmp, "report.md")
        try:
            data = load_report(run(manifest, out, quick=True,
                                   report_path=md, source=source))
        except UvPatchError as e:
            tally.result("FAIL", "bench --quick", e.message.splitlines()[0])
            return
        for name, problem, detail in check_report(data, md):
            tally.result("FAIL" if problem else "PASS",
                         "bench --quick " + name, problem or detail)
    finally:
        remove_tree(tmp)
