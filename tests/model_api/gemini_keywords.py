"""Which JSON Schema keywords google-genai's FunctionDeclaration takes in `parameters`.

Puts one keyword at a time, with values of several types, into the parameters
of google.genai.types.FunctionDeclaration.model_validate and prints a markdown
table: accepted or not (the first error), any warning, and what the model turns
it into (model_dump by alias, None left out). Run it again after upgrading
google-genai to see what changed:

    python tests/model_api/gemini_keywords.py
"""

import json
import warnings

from google.genai import types

CASES = [
    ("type", ["object", "OBJECT", "Object", "null", "TYPE_UNSPECIFIED", "foo", ["string", "null"], 1]),
    ("anyOf", [[{"type": "string"}, {"type": "integer"}], [], {"type": "string"}]),
    ("any_of", [[{"type": "string"}]]),
    ("nullable", [True, "yes", 1]),
    ("format", ["email", "uuid", "made-up", 5]),
    ("enum", [["a", "b"], [1, 2], [1.5], [True], ["a", None], [], "a"]),
    ("additionalProperties", [False, True, {"type": "string"}, {"bogus": 1}, "x"]),
    ("$ref", ["#/$defs/A"]),
    ("ref", ["#/defs/A", 5]),
    ("$defs", [{"A": {"type": "string"}}]),
    ("defs", [{"A": {"type": "string"}}, {"A": {"bogus": 1}}]),
    ("definitions", [{"A": {}}]),
    ("minimum", [1, 1.5, "1", True, "x"]),
    ("maximum", [10]),
    ("exclusiveMinimum", [0]),
    ("exclusiveMaximum", [1]),
    ("multipleOf", [2]),
    ("pattern", ["^a$", "[", 5]),
    ("default", [1, {"a": [1]}, None]),
    ("title", ["T", 5]),
    ("description", ["d"]),
    ("propertyOrdering", [["a", "b"], "a"]),
    ("property_ordering", [["a"]]),
    ("example", [{"a": 1}]),
    ("examples", [[1]]),
    ("const", ["a"]),
    ("items", [{"type": "string"}, [{"type": "string"}], True]),
    ("prefixItems", [[{}]]),
    ("minItems", [1, "2", 2.0, 1.5, True]),
    ("maxItems", [3]),
    ("minLength", [1]),
    ("maxLength", [5]),
    ("minProperties", [1]),
    ("maxProperties", [2]),
    ("required", [["a"], ["ghost"], "a", [1]]),
    ("properties", [{"a": {"type": "string"}}, {"a b.c": {}}, {"a": {"bogus": 1}}, {"a": True}]),
    ("oneOf", [[{"type": "string"}]]),
    ("allOf", [[{"type": "string"}]]),
    ("not", [{"type": "string"}]),
    ("if", [{}]),
    ("$schema", ["https://json-schema.org/draft/2020-12/schema"]),
    ("$id", ["x"]),
    ("$comment", ["c"]),
    ("$anchor", ["a"]),
    ("patternProperties", [{}]),
    ("propertyNames", [{}]),
    ("uniqueItems", [True]),
    ("dependentRequired", [{}]),
    ("unevaluatedProperties", [False]),
    ("discriminator", [{"propertyName": "kind"}]),
    ("readOnly", [True]),
    ("deprecated", [True]),
    ("x-extension", [1]),
]


def probe(parameters):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            declaration = types.FunctionDeclaration.model_validate({"name": "t", "parameters": parameters})
            types.Tool(function_declarations=[declaration])
            result = "yes"
            dumped = json.dumps(declaration.parameters.model_dump(mode="json", by_alias=True, exclude_none=True))
        except Exception as error:
            text = str(error).splitlines()
            reason = text[2].strip() if len(text) > 2 else text[0]
            result, dumped = f"no ({type(error).__name__}: {reason.split(' [')[0][:60]})", ""
    warned = "; ".join(str(w.message) for w in caught)
    return result, warned, dumped


def main():
    print("| keyword | value | accepted | warning | becomes |")
    print("| --- | --- | --- | --- | --- |")
    for keyword, values in CASES:
        for value in values:
            result, warned, dumped = probe({keyword: value})
            print(f"| `{keyword}` | `{json.dumps(value)}` | {result} | {warned} | `{dumped}` |")


if __name__ == "__main__":
    main()
