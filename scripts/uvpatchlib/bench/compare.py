"""bench --compare: two reports of the same kind compared, whichever
part wrote them (report.json of the bench, dns-report.json of --only
dns, dns-insn-report.json of --only dns-insn)."""

import json

from ..errors import UvPatchError, EXIT_USAGE
from . import analyse, dnsparse, insnparse

# schema: (the part that writes it, the file, its compare)
KINDS = {
    dnsparse.SCHEMA: ("dns", "dns-report.json", dnsparse.compare),
    insnparse.SCHEMA: ("dns-insn", "dns-insn-report.json",
                       insnparse.compare),
}


def part(report):
    """The --only part that writes a report like ``report``; None for
    the bench's own report.json."""
    kind = KINDS.get(report.get("schema"))
    return kind[0] if kind else None


def load(path):
    """A report of any part, checked enough to compare: the bench's
    report.json as analyse reads it, a DNS one by its schema and keys."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict) or data.get("schema") not in KINDS:
        return analyse.load_report(path)  # says what is wrong
    want = ("rows",) if data["schema"] == dnsparse.SCHEMA else \
        ("steps", "runs")
    for key in ("machine", "source") + want:
        if not isinstance(data.get(key), (dict if key in ("machine",
                                                          "source")
                                          else list)):
            raise UvPatchError(
                "%s is not a whole %s report: %s is missing" % (
                    path, part(data), key),
                hint="give a %s written by `scripts/uvpatch bench --only "
                     "%s`" % (KINDS[data["schema"]][1], part(data)),
                status=EXIT_USAGE)
    return data


def compare(old, new):
    """The differences between two reports of one kind."""
    if old.get("schema") != new.get("schema"):
        raise UvPatchError(
            "--compare: the reports are of different kinds (%s and %s)"
            % (part(old) or "bench", part(new) or "bench"),
            hint="compare a report with one written by the same part",
            status=EXIT_USAGE)
    kind = KINDS.get(old["schema"])
    return kind[2](old, new) if kind else analyse.compare(old, new)
