#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# openapi_check.py: the example server's answers and routes against its OpenAPI document
# (docs/openapi.yaml). Needs Debian's python3-yaml and python3-jsonschema.
#
#   openapi_check.py answers --document docs/openapi.yaml --records DIR
#       Every answer the system tests' HTTP client recorded in DIR (*.jsonl, one JSON line
#       per exchange: tests/support/http_client.cpp) must be documented: its path and
#       method, then its status (the operation's, or one of the document's
#       x-any-request-responses; x-unrouted-responses for a path or method the server has
#       no endpoint for), its content type, its required headers (the response's own, and
#       x-every-response-headers, which every answer carries), and its body against
#       the schema (gzip bodies unzipped; text/event-stream checked for its content type
#       only). Fails when DIR holds no answer. First checks itself: deliberately wrong
#       answers must each be reported, and a right one must pass.
#   openapi_check.py routes --document docs/openapi.yaml --api examples/ticketing_server/api.cpp
#       The routes of the server's router (api.cpp's table, and the stream, which the
#       HTTP layer opens before routing) and the document's operations must be the same,
#       their path templates (parameter names included) too.
#   Both first check the document: every schema is JSON Schema 2020-12 (its keywords only,
#   and OpenAPI 3.1's few additions), and every $ref resolves.
import argparse
import base64
import collections
import glob
import gzip
import json
import os
import re
import sys

try:
    import yaml
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError as e:
    sys.exit(f"openapi_check.py: {e.name} is missing: apt-get install python3-yaml python3-jsonschema")

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

# JSON Schema 2020-12's keywords (core, applicator, unevaluated, validation, format,
# content, meta-data), and what OpenAPI 3.1 adds to a Schema Object.
SCHEMA_KEYWORDS = {
    "$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary",
    "$comment", "$defs", "prefixItems", "items", "contains", "additionalProperties",
    "properties", "patternProperties", "dependentSchemas", "propertyNames", "if", "then",
    "else", "allOf", "anyOf", "oneOf", "not", "unevaluatedItems", "unevaluatedProperties",
    "type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
    "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
    "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties",
    "required", "dependentRequired", "format", "contentEncoding", "contentMediaType",
    "contentSchema", "title", "description", "default", "deprecated", "readOnly",
    "writeOnly", "examples",
    "discriminator", "xml", "externalDocs", "example",
}
# Keywords whose value is a schema, a list of schemas, or a map of names to schemas.
ONE_SCHEMA = {"items", "contains", "additionalProperties", "propertyNames", "if", "then",
              "else", "not", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
SCHEMA_LISTS = {"prefixItems", "allOf", "anyOf", "oneOf"}
SCHEMA_MAPS = {"properties", "patternProperties", "dependentSchemas", "$defs"}


class Document:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            self.doc = yaml.safe_load(f)
        self.path = path
        self.resolver = jsonschema.RefResolver.from_schema(self.doc)
        self.validators = {}
        self.problems = []
        self.check()
        # (regex, template) of each path, literal paths first.
        self.paths = []
        for template in self.doc["paths"]:
            pattern = "^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)) + "$"
            self.paths.append((re.compile(pattern), template))
        self.paths.sort(key=lambda p: "{" in p[1])

    def ref(self, node):
        """`node`, or what its $ref points at (followed until a node without one)."""
        seen = 0
        while isinstance(node, dict) and "$ref" in node and len(node) == 1:
            pointer = node["$ref"]
            if not pointer.startswith("#/"):
                raise ValueError(f"{pointer}: only local references are used")
            node = self.doc
            for part in pointer[2:].split("/"):
                node = node[part.replace("~1", "/").replace("~0", "~")]
            seen += 1
            if seen > 20:
                raise ValueError(f"{pointer}: a loop of references")
        return node

    def validator(self, schema):
        """A validator of `schema` (a node of the document), made once per schema."""
        key = id(schema)
        if key not in self.validators:
            self.validators[key] = Draft202012Validator(schema, resolver=self.resolver)
        return self.validators[key]

    # ---- the document itself

    def check_schema(self, schema, where):
        if isinstance(schema, bool):
            return
        if not isinstance(schema, dict):
            self.problems.append(f"{where}: a schema must be an object or a boolean")
            return
        for key, value in schema.items():
            if key not in SCHEMA_KEYWORDS and not key.startswith("x-"):
                self.problems.append(f"{where}: '{key}' is not a JSON Schema 2020-12 keyword")
            if key == "$ref":
                try:
                    self.ref({"$ref": value})
                except (KeyError, ValueError) as e:
                    self.problems.append(f"{where}: $ref {value} does not resolve ({e})")
            elif key in ONE_SCHEMA:
                self.check_schema(value, f"{where}/{key}")
            elif key in SCHEMA_LISTS:
                for i, item in enumerate(value):
                    self.check_schema(item, f"{where}/{key}/{i}")
            elif key in SCHEMA_MAPS:
                for name, item in value.items():
                    self.check_schema(item, f"{where}/{key}/{name}")

    def check_refs(self, node, where):
        """Every $ref outside the schemas resolves."""
        if isinstance(node, dict):
            if "$ref" in node:
                try:
                    self.ref({"$ref": node["$ref"]})
                except (KeyError, ValueError) as e:
                    self.problems.append(f"{where}: $ref {node['$ref']} does not resolve ({e})")
            for key, value in node.items():
                if key == "schema":
                    self.check_schema(value, f"{where}/schema")
                elif key != "schemas":
                    self.check_refs(value, f"{where}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                self.check_refs(value, f"{where}/{i}")

    def check(self):
        doc = self.doc
        if not str(doc.get("openapi", "")).startswith("3.1."):
            self.problems.append("openapi: not an OpenAPI 3.1 document")
        for key in ("info", "paths", "components"):
            if key not in doc:
                self.problems.append(f"{key}: missing")
        for name, schema in doc.get("components", {}).get("schemas", {}).items():
            where = f"components/schemas/{name}"
            self.check_schema(schema, where)
            try:
                Draft202012Validator.check_schema(schema)
            except jsonschema.SchemaError as e:
                self.problems.append(f"{where}: {e.message}")
        self.check_refs(doc, "")
        for template, item in doc.get("paths", {}).items():
            for method, operation in item.items():
                if method not in METHODS:
                    continue
                for status in operation.get("responses", {}):
                    if not re.fullmatch(r"[1-5][0-9][0-9]", status):
                        self.problems.append(f"{method.upper()} {template}: status {status!r}")

    # ---- answers

    def responses_for(self, method, path):
        """The documented responses for `method` on `path`, each set of them a candidate
        (the operation's, then those of any request), and what matched."""
        extra = self.doc.get("x-any-request-responses", {})
        unrouted = self.doc.get("x-unrouted-responses", {})
        for regex, template in self.paths:
            if regex.match(path):
                operation = self.doc["paths"][template].get(method.lower())
                if operation is None:
                    return [unrouted, extra], f"{method} {template} (not an operation)"
                return [operation.get("responses", {}), extra], f"{method} {template}"
        return [{"404": unrouted["404"]}, extra], f"{method} {path} (no such path)"

    def check_answer(self, answer):
        """The problems of one recorded answer ([] when it follows the document): it must
        follow one of the responses documented for its status."""
        method, target, status = answer["method"], answer["target"], str(answer["status"])
        candidates, matched = self.responses_for(method, target.split("?", 1)[0])
        where = f"{matched} {status}"
        found = [c[status] for c in candidates if status in c]
        if not found:
            return [f"{where}: status {status} is not documented for {method} {target}"]
        first = None
        for response in found:
            problems = self.check_response(answer, self.ref(response), matched, where)
            if not problems:
                return []
            first = first if first is not None else problems
        return first

    def check_response(self, answer, response, matched, where):
        """The problems of `answer` against one documented `response`: its headers, its
        content type and its body."""
        status = str(answer["status"])
        headers = {}
        for name, value in answer["headers"]:
            headers.setdefault(name.lower(), value)
        problems = []
        every = self.doc.get("x-every-response-headers", {})
        for name, header in {**every, **response.get("headers", {})}.items():
            header = self.ref(header)
            value = headers.get(name.lower())
            if value is None:
                if header.get("required"):
                    problems.append(f"{where}: header {name} is missing")
                continue
            if "schema" in header:
                for error in self.validator(header["schema"]).iter_errors(value):
                    problems.append(f"{where}: header {name}: {error.message}")
        body = base64.b64decode(answer["body_base64"])
        content = response.get("content")
        if not content:
            if body:
                problems.append(f"{where}: a body where the document has none")
            return problems
        media = headers.get("content-type", "").split(";")[0].strip().lower()
        types = {key.split(";")[0].strip().lower(): value for key, value in content.items()}
        if media not in types:
            return problems + [f"{where}: content type {media!r}, documented {sorted(types)}"]
        if media == "text/event-stream":
            return problems
        if headers.get("content-encoding", "").lower() == "gzip":
            body = gzip.decompress(body)
        schema = types[media].get("schema")
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return problems + [f"{where}: the body is not UTF-8"]
        if media == "application/json":
            try:
                value = json.loads(text)
            except ValueError as e:
                return problems + [f"{where}: the body is not JSON ({e})"]
            if matched == "GET /openapi.json" and status == "200" and value != self.doc:
                problems.append(f"{where}: the served document differs from {self.path}")
        else:
            value = text
        if schema is not None:
            for error in sorted(self.validator(schema).iter_errors(value), key=str):
                at = "/".join(str(p) for p in error.absolute_path)
                problems.append(f"{where}: body/{at}: {error.message[:300]}")
        return problems


def answer(method, target, status, body, headers=(), request_id="3f2a9c0d1e4b5a67-1a"):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    ids = [] if request_id is None else [["X-Request-Id", request_id]]
    return {"method": method, "target": target, "status": status,
            "headers": [["Content-Type", "application/json"], *ids, *headers],
            "body_base64": base64.b64encode(data).decode()}


def self_check(document):
    """Wrong answers must each be reported and a right one must pass: the check cannot
    pass by checking nothing."""
    hold = {"token": "demo-game.00", "event": "demo-game", "zone": "lower-1", "seats": ["A-1"],
            "expires_at": "2026-01-01T10:00:00.000Z", "status": "held", "version": 3}
    etag = ["ETag", '"0123456789abcdef"']
    right = [
        answer("GET", "/healthz", 200, {"status": "ok"}, [etag]),
        answer("POST", "/events/demo-game/holds", 201, hold, [["Location", "/holds/demo-game.00"]]),
    ]
    no_token = {k: v for k, v in hold.items() if k != "token"}
    wrong = {
        "a hold without its token": answer("POST", "/events/demo-game/holds", 201, no_token,
                                           [["Location", "/x"]]),
        "a field the document does not have": answer("GET", "/events", 200,
                                                     {"events": [], "more": 1}, [etag]),
        "a seat state that is not f, h or p": answer(
            "GET", "/events/demo-game/seats", 200,
            {"event": "demo-game", "version": 1, "zones": [
                {"zone": "z", "kind": "named", "capacity": 1, "free": 1, "held": 0,
                 "paid": 0, "rows": [["A", 1]], "states": "x", "holds": []}]}, [etag]),
        "a status not documented": answer("GET", "/healthz", 299, {"status": "ok"}),
        "a path not documented": answer("GET", "/nowhere", 200, {"status": "ok"}),
        "an error without its message": answer("GET", "/nowhere", 404, {"error": "not_found"}),
        "a 503 without Retry-After": answer("POST", "/events/demo-game/holds", 503,
                                            {"error": "timeout", "message": "m",
                                             "retry_safe": True}),
        "a wrong content type": answer("GET", "/metrics", 200, {"a": 1}, [etag]),
        "an error code its status does not have": answer(
            "POST", "/events/demo-game/holds", 409, {"error": "unauthenticated", "message": "m"}),
        "an answer without X-Request-Id": answer("GET", "/healthz", 200, {"status": "ok"},
                                                 [etag], request_id=None),
        "an X-Request-Id with a space": answer("GET", "/healthz", 200, {"status": "ok"},
                                               [etag], request_id="a b"),
        "a served document other than the file": answer(
            "GET", "/openapi.json", 200, {"openapi": "3.1.0", "info": {}, "paths": {}}, [etag]),
    }
    failures = []
    for record in right:
        for problem in document.check_answer(record):
            failures.append(f"a right answer was refused: {problem}")
    for what, record in wrong.items():
        if not document.check_answer(record):
            failures.append(f"not reported: {what}")
    return failures


def check_answers(args, document):
    failures = self_check(document)
    if failures:
        print("the check itself is broken:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    files = sorted(glob.glob(os.path.join(args.records, "*.jsonl")))
    counts = collections.Counter()
    problems = collections.OrderedDict()
    total = 0
    for name in files:
        with open(name, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                record = json.loads(line)
                total += 1
                _, matched = document.responses_for(record["method"],
                                                    record["target"].split("?", 1)[0])
                counts[f"{matched} {record['status']}"] += 1
                for problem in document.check_answer(record):
                    problems.setdefault(problem, f"{os.path.basename(name)}:{number}")
    if total == 0:
        print(f"no answers recorded in {args.records} ({len(files)} files): run the system "
              "tests first (ctest -L system), with SEATLOCK_HTTP_RECORD set", file=sys.stderr)
        return 1
    print(f"{total} answers in {len(files)} files:")
    for key, count in sorted(counts.items()):
        print(f"  {count:6} {key}")
    if problems:
        print(f"\n{len(problems)} answers do not follow {document.path}:", file=sys.stderr)
        for problem, first in list(problems.items())[:200]:
            print(f"  {problem}   (first: {first})", file=sys.stderr)
        return 1
    print(f"every answer follows {document.path}")
    return 0


# {http::verb::get, "/events/{event}/seats", &Api::seats},
ROUTE = re.compile(r'\{http::verb::(\w+),\s*"([^"]*)",\s*&Api::(\w+)\}')
# Routes outside the router's table: the streams are opened by the HTTP layer before routing
# (Api::stream_request, Api::room_stream_request).
OUTSIDE_TABLE = {("GET", "/events/{event}/stream"), ("GET", "/rooms/{room}/stream")}


def check_routes(args, document):
    with open(args.api, encoding="utf-8") as f:
        source = f.read()
    table = re.search(r"routes = \{\{(.*?)\n\s*\}\};", source, re.S)
    if not table:
        print(f"{args.api}: no routes table found", file=sys.stderr)
        return 1
    entries = [line for line in table.group(1).splitlines() if "&Api::" in line]
    routes = set(OUTSIDE_TABLE)
    for line in entries:
        m = ROUTE.search(line)
        if not m:
            print(f"{args.api}: a route this check cannot read: {line.strip()}", file=sys.stderr)
            return 1
        routes.add((m.group(1).rstrip("_").upper(), m.group(2)))
    size = re.search(r"std::array<Route, (\d+)> routes", source)
    if size and int(size.group(1)) != len(entries):
        print(f"{args.api}: read {len(entries)} routes of {size.group(1)}", file=sys.stderr)
        return 1
    documented = set()
    for template, item in document.doc["paths"].items():
        for method in item:
            if method in METHODS:
                documented.add((method.upper(), template))
    failures = []
    for verb, path in sorted(routes - documented):
        failures.append(f"{verb} {path}: the server routes it, {args.document} does not document it")
    for verb, path in sorted(documented - routes):
        failures.append(f"{verb} {path}: documented, but the server has no such route")
    if failures:
        print("\n".join(failures), file=sys.stderr)
        return 1
    print(f"{len(routes)} routes, each documented in {args.document}, and nothing more")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["answers", "routes"])
    parser.add_argument("--document", required=True)
    parser.add_argument("--records")
    parser.add_argument("--api")
    args = parser.parse_args()
    document = Document(args.document)
    if document.problems:
        print(f"{args.document} is not a valid document:\n  " + "\n  ".join(document.problems),
              file=sys.stderr)
        return 1
    if args.mode == "answers":
        if not args.records:
            parser.error("answers needs --records")
        return check_answers(args, document)
    if not args.api:
        parser.error("routes needs --api")
    return check_routes(args, document)


if __name__ == "__main__":
    sys.exit(main())
