#!/usr/bin/env python3
"""Prints a `swift test --filter` pattern for every failed test case of a swift-testing xUnit
file (`swift test --xunit-output F` writes it as F-swift-testing.xml), one per line.

    python3 scripts/xunit-failures.py RESULTS-swift-testing.xml
"""
import re
import sys
import xml.etree.ElementTree as ET


def failed(path):
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            yield "%s/%s" % (case.get("classname"), case.get("name"))


if __name__ == "__main__":
    for test in failed(sys.argv[1]):
        print(re.escape(test))
