"""A gate's checks as JUnit XML: one test case per check, so that any CI shows them.

The layout is the one CI systems read (Jenkins, GitLab, GitHub Actions' test reporters):
``<testsuites>`` holding one ``<testsuite>``, one ``<testcase>`` per check named by its
metric, target and attack (``classname``: the rule; names made unique by :func:`_names`),
a ``<failure>`` with the check's message when it fails the gate, ``<skipped>`` with the
reason when it is unmeasurable and only warns; then one ``<skipped>`` test case per result
no check read (``classname`` ``privaudit.gate.not-gated``), with the reason.
"""

from __future__ import annotations

import re
from typing import Any

from privaudit._text import escape_controls

__all__ = ["junit_xml"]

#: Characters XML 1.0 forbids even as character references (C0 controls but tab and line
#: ends, surrogates, U+FFFE/U+FFFF): one in a name would make the file unreadable to CI.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _names(checks: tuple[Any, ...]) -> list[str]:
    """Each check's test-case name, unique within its rule (its ``classname``).

    ``metric | artefact | attack``, with the audit kind when several kinds are gated (an
    LLM audit and an unlearning audit of one model); a check that still repeats another
    (two budgets of one rule on the same metric) gets ``#2``, ``#3``: CI reporters key
    test cases by class and name, and would merge or overwrite two that share them.
    """
    with_kind = len({check.kind for check in checks}) > 1
    names, seen = [], {}
    for check in checks:
        name = f"{check.metric} | {check.artefact} | {check.attack}"
        name += f" | {check.kind}" if with_kind else ""
        count = seen[(check.rule, name)] = seen.get((check.rule, name), 0) + 1
        names.append(name if count == 1 else f"{name} #{count}")
    return names


def _testcase(parent: Any, check: Any, name: str) -> None:
    import xml.etree.ElementTree as ET

    case = ET.SubElement(parent, "testcase", {
        "classname": f"privaudit.gate.{check.rule}", "name": name, "time": "0"})
    if check.failed:
        kind = "Unmeasurable" if check.status == "unmeasurable" else "BudgetExceeded"
        failure = ET.SubElement(case, "failure", {"message": check.message, "type": kind})
        failure.text = check.message
    elif check.outcome == "warn":
        ET.SubElement(case, "skipped", {"message": check.message})
    else:
        ET.SubElement(case, "system-out").text = check.message


def junit_xml(result: Any) -> str:
    """The JUnit XML document of a :class:`~privaudit.policy.GateResult`."""
    import xml.etree.ElementTree as ET

    counts = result.counts()
    attributes = {"name": "privaudit gate",
                  "tests": str(len(result.checks) + result.not_gated),
                  "failures": str(counts["fail"]), "errors": "0",
                  "skipped": str(counts["warn"] + result.not_gated), "time": "0"}
    root = ET.Element("testsuites", attributes)
    suite = ET.SubElement(root, "testsuite", attributes)
    properties = ET.SubElement(suite, "properties")
    for name, value in (("basis", result.basis),
                        ("unmeasurable", result.policy.unmeasurable),
                        ("unmatched_budgets", str(len(result.unmatched))),
                        ("not_gated", str(result.not_gated))):
        ET.SubElement(properties, "property", {"name": name, "value": value})
    for check, name in zip(result.checks, _names(result.checks), strict=True):
        _testcase(suite, check, name)
    for entry in result.left_out:  # named, never silently passed
        case = ET.SubElement(suite, "testcase", {
            "classname": "privaudit.gate.not-gated",
            "name": f"not gated | {entry.artefact} | {entry.attack}", "time": "0"})
        ET.SubElement(case, "skipped", {"message": entry.message})
    ET.indent(root)
    text = ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
    # Only names carry such characters (the markup has none): written as escapes (\x1b).
    return escape_controls(text, _NOT_XML)
