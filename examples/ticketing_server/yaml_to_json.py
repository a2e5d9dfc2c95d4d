#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# yaml_to_json.py: the OpenAPI document (docs/openapi.yaml) as JSON, run at build time by
# this directory's CMakeLists.txt; the JSON is then built into the server, which serves it
# at GET /openapi.json.
#
#   python3 yaml_to_json.py docs/openapi.yaml build/.../openapi.json
#
# Needs Debian's python3-yaml. Refuses what JSON cannot say as YAML wrote it: a key that is
# not a string (an unquoted status code, 200, is a number in YAML) or a value such as a
# date. The output is rewritten only when its content changes, so that a build with nothing
# changed compiles nothing again.
import json
import sys

try:
    import yaml
except ImportError:
    sys.exit("yaml_to_json.py: python3-yaml is missing: apt-get install python3-yaml (./dev deps)")


def check(node, where):
    """Fails on the first key or value of `node` that has no JSON form."""
    if isinstance(node, dict):
        for key, value in node.items():
            if not isinstance(key, str):
                sys.exit(f"yaml_to_json.py: {where}: key {key!r} is not a string: quote it")
            check(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            check(value, f"{where}/{index}")
    elif not (node is None or isinstance(node, (str, bool, int, float))):
        sys.exit(f"yaml_to_json.py: {where}: {node!r} ({type(node).__name__}) is not JSON: quote it")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: yaml_to_json.py INPUT.yaml OUTPUT.json")
    source, output = sys.argv[1], sys.argv[2]
    with open(source, encoding="utf-8") as f:
        document = yaml.safe_load(f)
    check(document, source)
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"
    try:
        with open(output, encoding="utf-8") as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    with open(output, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
