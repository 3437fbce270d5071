"""Renders the chat templates beside this script with Jinja itself, set up as Hugging Face's
transformers sets it up for chat templates (tools/chat-templates/render.py's environment), and
writes the outputs and the errors to cases.json, which JinjaChatTemplateConstructsTest checks the
Java renderer against.

Run: /usr/bin/python3 expected.py (Debian's python3-jinja2).
"""

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
# transformers' environment, as the corpus's renderer sets it up
sys.path.insert(0, str(HERE.parents[8] / "tools" / "chat-templates"))
import render  # noqa: E402

import jinja2  # noqa: E402

env = render.environment()

WEATHER = {"type": "function", "function": {
    "name": "weather", "description": "Today's weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
ADD = {"type": "function", "function": {
    "name": "add", "description": "Adds two integers.",
    "parameters": {"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}


def msg(role, content, **more):
    return dict(role=role, content=content, **more)


def call(name, arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


CASES = [
    ("header-style", "a system message trimmed, contents stripped",
     [msg("system", "  Be exact.\n"), msg("user", " What is 2 + 3? "), msg("assistant", "5")],
     None, True),
    ("header-style", "no system message: the default; tools and a tool call",
     [msg("user", "Weather in Oslo?"),
      msg("assistant", "", tool_calls=[call("weather", {"city": "Oslo", "unit": "celsius"})]),
      msg("tool", "{\"temperature\": 3}")],
     [WEATHER], True),
    ("header-style", "raise_exception on two calls in one turn",
     [msg("user", "Add twice"),
      msg("assistant", "", tool_calls=[call("add", {"a": 1, "b": 2}), call("add", {"a": 3, "b": 4})])],
     [ADD], False),
    ("turns-style", "the system message folded into the first question",
     [msg("system", "Reply with a number."), msg("user", "2 + 3?"), msg("assistant", "5"),
      msg("user", "4 + 4?"), msg("assistant", "8")],
     None, False),
    ("turns-style", "no system message, ends with a question",
     [msg("user", "2 + 3?"), msg("assistant", "5"), msg("user", "4 + 4?")],
     None, True),
    ("turns-style", "raise_exception on turns out of order",
     [msg("assistant", "5"), msg("user", "4 + 4?")],
     None, False),
    ("turns-style", "raise_exception on a tool turn",
     [msg("user", "2 + 3?"), msg("tool", "5")],
     None, False),
    ("think-style", "only the reasoning after the last question is kept",
     [msg("user", "2 + 3?"), msg("assistant", "<think>\nsmall sum\n</think>\n\n5"),
      msg("user", "4 + 4?"), msg("assistant", "<think>\ndouble four\n</think>\n\n8")],
     None, False),
    ("think-style", "a tool result is not a question",
     [msg("user", "What is 6 * 7?"), msg("assistant", "<think>\nuse the tool\n</think>\n\nCalling."),
      msg("user", "<result>42</result>"), msg("assistant", "<think>\nit said 42\n</think>\n\n42")],
     None, True),
    ("tools-style", "no tools, no system message: the default one",
     [msg("user", "Hi"), msg("assistant", "Hello.")],
     None, True),
    ("tools-style", "tools, two calls and their two results in one turn",
     [msg("system", "Use the tools."), msg("user", "1 + 2 and 3 + 4?"),
      msg("assistant", "Adding.", tool_calls=[call("add", {"a": 1, "b": 2}), call("add", {"a": 3, "b": 4})]),
      msg("tool", "3"), msg("tool", "7"), msg("assistant", "3 and 7.")],
     [ADD, WEATHER], False),
]


def main():
    cases = []
    for name, title, messages, tools, prompt in CASES:
        template = env.from_string((HERE / f"{name}.jinja").read_text())
        case = {"template": name, "title": title, "messages": messages, "tools": tools,
                "add_generation_prompt": prompt}
        try:
            case["expected"] = template.render(
                messages=messages, tools=tools, add_generation_prompt=prompt,
                bos_token="<s>", eos_token="</s>")
        except jinja2.exceptions.TemplateError as e:
            case["raises"] = str(e)
        cases.append(case)
    (HERE / "cases.json").write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n")
    for case in cases:
        print("==", case["template"], "|", case["title"])
        print(case.get("expected", "RAISES: " + case.get("raises", "")))


main()
