"""Check the model-API adapter's tool definitions against each API's rules.

    python check.py ADAPTED.json    # report every failure; exit 1 if there is any
    python check.py --self-test     # run the checker on built-in good and bad entries

ADAPTED.json is a list of entries, one per tool:

    {"name": ..., "original": {inputSchema},
     "targets": {"openai": {"item": ...}, "openai-responses": {"item": ...},
                 "anthropic": {"item": ...}, "gemini": {"item": ...},
                 "json-schema": {"item": ...}},
     "samples": [{"args": {...}, "valid": bool,
                  "sent": {target: args as the model sends them},
                  "back": {target: args handed to the server, or null when refused}}]}

A target may be {"refused": "why"} instead of {"item": ...}: the adapter declined
the tool for that API. It is counted, not failed. What is checked:

  openai, openai-responses  name ^[a-zA-Z0-9_-]{1,64}$; only the members the API
        defines. With strict (Chat Completions: strict true; Responses: strict
        true, null or absent, its default is true) the parameters follow the
        Structured Outputs "supported schemas" rules: root an object and not
        anyOf; every object has additionalProperties false and requires every
        property; only the keywords of STRICT_KEYWORDS, formats of
        STRICT_FORMATS; every schema typed; arrays have items; $defs only at the
        root and $ref only to # or #/$defs/<name>; at most 5000 properties,
        10 levels of object nesting, 120,000 characters of names, enum and
        const values, 1000 enum values, and 15,000 characters in one string
        enum of more than 250 values. Without strict: a valid JSON Schema
        (metaschema of its $schema, else 2020-12) with root type object whose
        $refs resolve inside it.
  anthropic   the same name rule; input_schema valid against the 2020-12
        metaschema, root type object, $refs resolve inside it.
  gemini      name starts with a letter or _, at most 64 of [a-zA-Z0-9_.:-];
        google.genai.types.FunctionDeclaration.model_validate(item) passes
        without a warning (an unknown type only warns), types.Tool takes it,
        the model does not change it (a coerced or dropped value means the API
        would get something else than the adapter meant), and it does not set
        both parameters and parametersJsonSchema.
  json-schema the openai rules without strict, no strict member at all, and
        every $ref points inside the schema.
  samples     each `valid` agrees with jsonschema on the original; for every
        target but gemini, what the client would send the server agrees with
        `valid`: sent[target] passes that target's schema and the mapping back
        takes it (back[target] is not null) exactly when the sample is valid
        (a constraint a target cannot say is checked on the way back); when
        valid, back[target] equals args (1 and 1.0 differ, so do 1 and true),
        but for members back has as null where args has none: strict mode
        cannot tell a left-out optional member from a null one, and the null
        is kept only where the original schema takes it. For gemini only back.

Needs only the standard library, jsonschema and google-genai (pinned in
.ci/peers/requirements.txt).
"""

import functools
import json
import re
import sys
import warnings

import jsonschema
from jsonschema import validators
from google.genai import types

TARGETS = ["openai", "openai-responses", "anthropic", "gemini", "json-schema"]
OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
GEMINI_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$")
# OpenAI Structured Outputs, "Supported schemas": the types, anyOf, $defs/$ref,
# object keywords, and the string, number and array keywords it lists.
STRICT_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
    "$ref", "$defs", "description",
    "pattern", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minItems", "maxItems",
}
STRICT_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
STRICT_TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}
LIMITS = {"properties": 5000, "nesting": 10, "chars": 120_000, "enum values": 1000}
MEMBERS = {
    "openai": ({"type", "function"}, {"name", "description", "parameters", "strict"}),
    "openai-responses": ({"type", "name", "description", "parameters", "strict"}, None),
    "anthropic": ({"name", "description", "input_schema"}, None),
    "json-schema": ({"type", "function"}, {"name", "description", "parameters"}),
}
DATA_KEYWORDS = {"enum", "const", "default", "examples", "example"}


def excerpt(value, size=100):
    text = " ".join(value.split()) if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= size else text[: size - 3] + "..."


def same_json(a, b):
    """Equal as JSON values, telling 1 from 1.0 and from true."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    return a == b


def validator(schema, formats=False):
    """A validator of the draft `schema` names (else 2020-12); `formats` checks `format` too."""
    cls = validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER if formats else None)


def subschemas(node, path="#"):
    """(path, schema) for node and every schema inside it (not inside enum, const, default...)."""
    yield path, node
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if key in DATA_KEYWORDS:
            continue
        if key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas") and isinstance(value, dict):
            for name, sub in value.items():
                yield from subschemas(sub, f"{path}/{key}/{name}")
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems") or (key == "items" and isinstance(value, list)):
            for i, sub in enumerate(value if isinstance(value, list) else []):
                yield from subschemas(sub, f"{path}/{key}/{i}")
        elif isinstance(value, dict) and key not in ("dependentRequired", "discriminator"):
            yield from subschemas(value, f"{path}/{key}")


def pointer(root, ref):
    """The node ref names inside root, or None. Handles #, #/pointer and #anchor."""
    base, _, frag = ref.partition("#")
    if base and base != (root.get("$id", "").split("#")[0] if isinstance(root, dict) else ""):
        return None
    if frag == "":
        return root
    if not frag.startswith("/"):
        return next((n for _, n in subschemas(root) if isinstance(n, dict) and n.get("$anchor") == frag), None)
    node = root
    for part in frag[1:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def ref_problems(schema):
    out = []
    for path, node in subschemas(schema):
        if isinstance(node, dict):
            for key in ("$ref", "$dynamicRef"):
                if isinstance(node.get(key), str) and pointer(schema, node[key]) is None:
                    out.append(("ref", f"{path}: {key} {node[key]} does not point inside the schema"))
    return out


@functools.lru_cache(maxsize=None)
def metaschema_problems(cls, text):
    """Checking against a metaschema is slow, and targets often share a schema: once each."""
    try:
        cls.check_schema(json.loads(text))
    except jsonschema.SchemaError as error:
        return (("metaschema", f"{'/'.join(map(str, error.absolute_path)) or '#'}: {excerpt(error.message)}"),)
    return ()


def plain_problems(schema, metaschema=None):
    """A JSON Schema with root type object whose $refs resolve inside it."""
    if not isinstance(schema, dict):
        return [("root-object", f"not an object schema: {excerpt(schema)}")]
    cls = metaschema or validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    out = list(metaschema_problems(cls, json.dumps(schema, sort_keys=True)))
    if schema.get("type") != "object":
        out.append(("root-object", f"root type is {excerpt(schema.get('type'))}, not \"object\""))
    return out + ref_problems(schema)


def nesting(node, root, stack=()):
    """Levels of object schemas on the deepest path, following $refs once each."""
    if not isinstance(node, dict):
        return 0
    ref = node.get("$ref")
    if isinstance(ref, str):
        return 0 if ref in stack else nesting(pointer(root, ref), root, stack + (ref,))
    kinds = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
    own = 1 if "object" in kinds or "properties" in node else 0
    kids = list(node["properties"].values()) if isinstance(node.get("properties"), dict) else []
    kids += [node["items"]] if isinstance(node.get("items"), dict) else []
    kids += node["anyOf"] if isinstance(node.get("anyOf"), list) else []
    return own + max((nesting(k, root, stack) for k in kids), default=0)


def strict_problems(schema):
    """OpenAI Structured Outputs' rules for a strict function's parameters."""
    if not isinstance(schema, dict):
        return [("strict-root", f"parameters is not an object schema: {excerpt(schema)}")]
    out = []
    if schema.get("type") != "object":
        out.append(("strict-root", f"root type is {excerpt(schema.get('type'))}, not \"object\""))
    if "anyOf" in schema:
        out.append(("strict-root", "root is anyOf"))
    defs = schema.get("$defs") if isinstance(schema.get("$defs"), dict) else {}
    count = {"properties": 0, "chars": sum(len(name) for name in defs), "enum values": 0}

    def walk(node, path):
        if not isinstance(node, dict):
            out.append(("strict-keyword", f"{path}: boolean schema {excerpt(node)}"))
            return
        for key in node:
            if key not in STRICT_KEYWORDS:
                out.append(("strict-keyword", f"{path}: unsupported keyword {key}"))
        if "$defs" in node and path != "#":
            out.append(("strict-ref", f"{path}: $defs below the root"))
        kinds = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")] if "type" in node else []
        for kind in kinds:
            if not isinstance(kind, str) or kind not in STRICT_TYPES:
                out.append(("strict-keyword", f"{path}: type {excerpt(kind)}"))
        if not any(k in node for k in ("type", "anyOf", "$ref", "enum", "const")):
            out.append(("strict-untyped", f"{path}: no type, anyOf, $ref, enum or const"))
        ref = node.get("$ref")
        if ref is not None and not (ref == "#" or (isinstance(ref, str) and re.fullmatch(r"#/\$defs/[^/]+", ref) and ref[8:] in defs)):
            out.append(("strict-ref", f"{path}: $ref {excerpt(ref)}"))
        if "format" in node and (not isinstance(node["format"], str) or node["format"] not in STRICT_FORMATS):
            out.append(("strict-format", f"{path}: format {excerpt(node['format'])}"))
        if "object" in kinds or "properties" in node:
            props = node.get("properties", {}) if isinstance(node.get("properties"), dict) else {}
            if node.get("additionalProperties") is not False:
                out.append(("strict-additionalProperties", f"{path}: additionalProperties is {excerpt(node.get('additionalProperties', 'absent'))}"))
            required = node.get("required", [])
            if not isinstance(required, list) or sorted(map(str, required)) != sorted(props):
                missing = [k for k in props if k not in (required if isinstance(required, list) else [])]
                out.append(("strict-required", f"{path}: required {excerpt(required)} is not every property (missing {excerpt(missing)})"))
            count["properties"] += len(props)
            count["chars"] += sum(len(k) for k in props)
            for name, sub in props.items():
                walk(sub, f"{path}/properties/{name}")
        if "array" in kinds and not isinstance(node.get("items"), dict):
            out.append(("strict-keyword", f"{path}: array without an items schema"))
        if "items" in node:
            walk(node["items"], f"{path}/items")
        if "anyOf" in node:
            branches = node["anyOf"] if isinstance(node["anyOf"], list) else []
            if not branches:
                out.append(("strict-keyword", f"{path}: anyOf is not a non-empty list"))
            for i, sub in enumerate(branches):
                walk(sub, f"{path}/anyOf/{i}")
        if "enum" in node:
            values = node["enum"] if isinstance(node["enum"], list) else []
            count["enum values"] += len(values)
            size = sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in values)
            count["chars"] += size
            if len(values) > 250 and all(isinstance(v, str) for v in values) and size > 15_000:
                out.append(("strict-limit", f"{path}: a string enum of {len(values)} values and {size} characters"))
        if "const" in node:
            count["chars"] += len(node["const"]) if isinstance(node["const"], str) else len(json.dumps(node["const"]))

    walk(schema, "#")
    for name, sub in defs.items():
        walk(sub, f"#/$defs/{name}")
    count["nesting"] = nesting(schema, schema)
    for what, limit in LIMITS.items():
        if count[what] > limit:
            out.append(("strict-limit", f"{count[what]} {what}, more than {limit}"))
    return out


def validation_text(error):
    if hasattr(error, "errors"):
        parts = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()[:3]]
        return "; ".join(parts)
    return f"{type(error).__name__}: {error}"


def camel(key):
    head, *rest = key.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def gemini_normal(node):
    """A Gemini Schema as the model gives it back: camelCase, upper-case type, float bounds."""
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        key = camel(key)
        if value is None and key != "default":
            continue
        if key == "type" and isinstance(value, str):
            value = value.upper()
        elif key in ("properties", "defs") and isinstance(value, dict):
            value = {k: gemini_normal(v) for k, v in value.items()}
        elif key == "items":
            value = gemini_normal(value)
        elif key == "anyOf" and isinstance(value, list):
            value = [gemini_normal(v) for v in value]
        elif key in ("minimum", "maximum") and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        out[key] = value
    return out


def gemini_problems(item):
    out = []
    name = item.get("name") if isinstance(item, dict) else None
    if not isinstance(name, str) or not GEMINI_NAME.match(name):
        out.append(("name", f"gemini name {excerpt(name)}"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            declaration = types.FunctionDeclaration.model_validate(item)
        except Exception as error:  # the model raises AttributeError too, e.g. for a list as type
            out.append(("gemini-validate", excerpt(validation_text(error), 160)))
            declaration = None
        if declaration is not None:
            try:
                types.Tool(function_declarations=[item])
            except Exception as error:
                out.append(("gemini-tool", excerpt(validation_text(error), 160)))
    if isinstance(item, dict) and {"parameters", "parametersJsonSchema"} <= {camel(k) for k, v in item.items() if v is not None}:
        out.append(("gemini-exclusive", "parameters and parametersJsonSchema are mutually exclusive"))
    for warning in caught:
        out.append(("gemini-warning", excerpt(str(warning.message))))
    if declaration is not None and isinstance(item, dict):
        dumped = declaration.model_dump(mode="json", by_alias=True, exclude_none=True)
        given = {camel(k): v for k, v in item.items() if v is not None}
        if "parameters" in given:
            given["parameters"] = gemini_normal(given["parameters"])
        if "parameters" in dumped:
            dumped["parameters"] = gemini_normal(dumped["parameters"])
        if not same_json(dumped, given):
            out.append(("gemini-lossless", f"the model turns it into {excerpt(dumped, 140)}"))
    return out


def members_problems(target, item):
    outer, inner = MEMBERS[target]
    if not isinstance(item, dict):
        return [("shape", f"item is not an object: {excerpt(item)}")]
    out = [("shape", f"unknown member {k}") for k in item if k not in outer]
    if "type" in outer and item.get("type") != "function":
        out.append(("shape", f"type is {excerpt(item.get('type'))}, not \"function\""))
    if inner is not None:
        function = item.get("function")
        if not isinstance(function, dict):
            return out + [("shape", "no function object")]
        out += [("shape", f"unknown member function.{k}") for k in function if k not in inner]
    if isinstance(fields(target, item).get("description"), (int, float, list, dict, bool)):
        out.append(("shape", "description is not a string"))
    return out


def fields(target, item):
    """The object that holds name, description and the schema."""
    if target in ("openai", "json-schema") and isinstance(item, dict) and isinstance(item.get("function"), dict):
        return item["function"]
    return item if isinstance(item, dict) else {}


def schema_of(target, item):
    return fields(target, item).get({"anthropic": "input_schema"}.get(target, "parameters"))


def item_problems(target, item):
    """Every (rule, excerpt) the target's API would object to in this tool definition."""
    if target == "gemini":
        return gemini_problems(item)
    out = members_problems(target, item)
    body = fields(target, item)
    name = body.get("name")
    if not isinstance(name, str) or not OPENAI_NAME.match(name):
        out.append(("name", f"{target} name {excerpt(name)}"))
    schema = schema_of(target, item)
    if target == "anthropic":
        return out + plain_problems(schema, jsonschema.Draft202012Validator)
    if target == "json-schema" and "strict" in body:
        out.append(("shape", "json-schema item has a strict member"))
    if target == "openai-responses" and "strict" not in item:
        out.append(("shape", "openai-responses needs strict (true, false or null)"))
    strict = body.get("strict") is True or (target == "openai-responses" and body.get("strict", True) in (True, None))
    return out + (strict_problems(schema) if strict else plain_problems(schema))


def check_entries(entries):
    """[(tool, target, rule, excerpt)] for every failure, and {target: tools the adapter refused}."""
    failures, refused = [], {t: set() for t in TARGETS}
    for entry in entries:
        tool = entry.get("name", "?")
        targets = entry.get("targets") or {}
        items = {}
        for target in TARGETS:
            got = targets.get(target)
            if not isinstance(got, dict) or ("item" not in got and "refused" not in got):
                failures.append((tool, target, "missing", "no item and no refusal"))
            elif "refused" in got:
                refused[target].add(tool)
            else:
                items[target] = got["item"]
                failures += [(tool, target, rule, text) for rule, text in item_problems(target, got["item"])]
        original = entry.get("original")
        for n, sample in enumerate(entry.get("samples", [])):
            args, valid = sample.get("args"), sample.get("valid")
            try:
                agrees = not isinstance(original, dict) or validator(original).is_valid(args) is valid
            except Exception:
                agrees = False
            if not agrees:
                failures.append((tool, "-", "sample-flag", f"sample {n}: valid is {valid} but jsonschema says otherwise on the original"))
            for target, item in items.items():
                if target != "gemini":
                    sent = (sample.get("sent") or {}).get(target, KeyError)
                    schema = schema_of(target, item)
                    mapped = (sample.get("back") or {}).get(target)
                    try:
                        verdict = sent is not KeyError and validator(schema).is_valid(sent) and mapped is not None
                    except Exception as error:
                        verdict = f"error {excerpt(str(error))}"
                    if sent is KeyError:
                        failures.append((tool, target, "agreement", f"sample {n}: no sent value"))
                    elif verdict is not valid:
                        failures.append((tool, target, "agreement", f"sample {n}: sent {excerpt(sent, 60)} is {verdict} against the adapted schema and the mapping back, expected {valid}"))
                if valid:
                    back = (sample.get("back") or {}).get(target, KeyError)
                    if back is KeyError or not same_json(without_added_nulls(back, args), args):
                        shown = "nothing" if back is KeyError else excerpt(back, 60)
                        failures.append((tool, target, "back", f"sample {n}: back is {shown}, args were {excerpt(args, 60)}"))
    return failures, refused


def without_added_nulls(back, args):
    """`back` without the null members `args` does not have, at any depth."""
    if isinstance(back, dict) and isinstance(args, dict):
        return {k: without_added_nulls(v, args.get(k)) for k, v in back.items() if not (v is None and k not in args)}
    if isinstance(back, list) and isinstance(args, list) and len(back) == len(args):
        return [without_added_nulls(b, a) for b, a in zip(back, args)]
    return back


def summary(entries, failures, refused):
    failing = {(tool, target) for tool, target, _, _ in failures}
    lines = ["| target | accepted | refused by the adapter | failing | tools |", "| --- | --- | --- | --- | --- |"]
    for target in TARGETS:
        names = [e.get("name", "?") for e in entries]
        bad = sum(1 for n in names if (n, target) in failing)
        ref = len(refused[target])
        lines.append(f"| {target} | {len(names) - bad - ref} | {ref} | {bad} | {len(names)} |")
    return "\n".join(lines)


def run(entries):
    failures, refused = check_entries(entries)
    for tool, target, rule, text in failures:
        print(f"FAIL {tool} [{target}] {rule}: {text}")
    print(summary(entries, failures, refused))
    print(f"{len(failures)} failures")
    return failures


def self_test():
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    strict = {**schema, "additionalProperties": False}
    ok_args, sent_all = {"q": "x"}, {t: {"q": "x"} for t in TARGETS}
    good = {
        "name": "good_tool",
        "original": schema,
        "targets": {
            "openai": {"item": {"type": "function", "function": {"name": "good_tool", "description": "d", "parameters": strict, "strict": True}}},
            "openai-responses": {"item": {"type": "function", "name": "good_tool", "description": "d", "parameters": strict, "strict": True}},
            "anthropic": {"item": {"name": "good_tool", "description": "d", "input_schema": schema}},
            "gemini": {"item": {"name": "good_tool", "description": "d", "parameters": schema}},
            "json-schema": {"item": {"type": "function", "function": {"name": "good_tool", "description": "d", "parameters": schema}}},
        },
        "samples": [
            {"args": ok_args, "valid": True, "sent": sent_all, "back": sent_all},
            {"args": {}, "valid": False, "sent": {t: {} for t in TARGETS}, "back": {t: None for t in TARGETS}},
        ],
    }
    refs = {"type": "object", "properties": {"q": {"$ref": "#/$defs/q"}}, "required": ["q"], "$defs": {"q": {"type": "string"}}}
    bad = {
        "name": "bad_tool",
        "original": schema,
        "targets": {
            "openai": {"item": {"type": "function", "function": {"name": "bad_tool", "parameters": schema, "strict": True}}},
            "openai-responses": {"item": {"type": "function", "name": "bad.tool", "parameters": strict, "strict": True}},
            "anthropic": {"item": {"name": "bad_tool", "input_schema": {"type": "object", "properties": {"q": {"type": "strng"}}}}},
            "gemini": {"item": {"name": "bad_tool", "parameters": refs}},
            "json-schema": {"item": {"type": "function", "function": {"name": "bad_tool", "parameters": schema, "strict": False}}},
        },
        "samples": [
            {"args": ok_args, "valid": True,
             "sent": {**sent_all, "openai-responses": {"q": 5}},
             "back": {**sent_all, "json-schema": {"q": "y"}, "gemini": None}},
        ],
    }
    expected = {
        "openai": {"strict-additionalProperties"},
        "openai-responses": {"name", "agreement"},
        "anthropic": {"metaschema", "agreement"},
        "gemini": {"gemini-validate", "back"},
        "json-schema": {"shape", "back"},
    }
    failures, _ = check_entries([good, bad])
    for tool, target, rule, text in failures:
        print(f"  reported: {tool} [{target}] {rule}: {text}")
    got = {}
    for tool, target, rule, _ in failures:
        assert tool == "bad_tool", f"the good entry failed: {target} {rule}"
        got.setdefault(target, set()).add(rule)
    assert got == expected, f"expected {expected}, got {got}"
    loose = dict(bad, name="loose_tool", targets={**good["targets"], "gemini": {"item": {"name": "t", "parameters": {"type": "string", "nullable": "yes"}}}})
    loose["samples"] = []
    rules = {rule for _, _, rule, _ in check_entries([loose])[0]}
    assert rules == {"gemini-lossless"}, rules
    print("self-test passed: the good entry has no failure, the bad one fails on every target as expected")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    with open(sys.argv[1], encoding="utf-8") as handle:
        entries = json.load(handle)
    return 1 if run(entries) else 0


if __name__ == "__main__":
    sys.exit(main())
