#!/usr/bin/env python3
"""Renders the chat-template corpus with Jinja2 set up as Hugging Face's transformers sets it up
for apply_chat_template, and writes the outputs (or the errors) that JinjaChatTemplateCorpusTest
compares the Java renderer with, byte for byte.

The environment is the one transformers' utils/chat_template_utils.py builds: an
ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and the loopcontrols extension;
raise_exception raising jinja2's TemplateError; tojson as json.dumps with ensure_ascii=False,
indent, separators and sort_keys; strftime_now as datetime.now().strftime. The one change: the
clock is fixed (CLOCK below), so that the outputs do not depend on the day they were made. The
variables are those transformers passes: messages, tools, documents, add_generation_prompt, the
tokenizer's special tokens, and the case's extra keyword arguments.

Input, beside the expected outputs (model-zoo-adapters/src/test/resources/ai/djl/fsdp/zoo/chat/
corpus): templates.json (each template file and its bos_token/eos_token) and conversations.json
(the cases). Output: expected.json there.

Run from the repository root with a Python that has Jinja2 >= 3.1 (Debian: apt-get install -y
python3-jinja2, then /usr/bin/python3 tools/chat-templates/render.py).
"""

import datetime
import json
import pathlib
import platform
import sys

import jinja2
import jinja2.ext
import jinja2.sandbox

CORPUS = pathlib.Path("model-zoo-adapters/src/test/resources/ai/djl/fsdp/zoo/chat/corpus")

# The fixed local time strftime_now reads; the Java test's clock is the same instant in UTC.
CLOCK = datetime.datetime(2026, 12, 5, 9, 30, 0)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def strftime_now(format):
    return CLOCK.strftime(format)


def environment():
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, source, tokens, case):
    template = env.from_string(source)
    try:
        return {"output": template.render(
            messages=case["messages"], tools=case["tools"], documents=None,
            add_generation_prompt=case["add_generation_prompt"], **tokens, **case["variables"])}
    except jinja2.exceptions.TemplateError as e:
        return {"raises": str(e)}
    except Exception as e:  # what Python refuses inside the template: TypeError and the like
        return {"error": f"{type(e).__name__}: {e}"}


def main():
    root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else CORPUS
    templates = json.loads((root / "templates.json").read_text(encoding="utf-8"))
    cases = json.loads((root / "conversations.json").read_text(encoding="utf-8"))
    env = environment()
    results = []
    for name, tokens in templates.items():
        source = (root / name).read_text(encoding="utf-8")
        for case in cases:
            results.append({"template": name, "case": case["name"],
                            **render(env, source, tokens, case)})
    expected = {"jinja2": jinja2.__version__, "python": f"{sys.executable} {platform.python_version()}", "results": results}
    target = root / "expected.json"
    partial = target.with_suffix(".json.tmp")
    partial.write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    partial.replace(target)
    failed = [r for r in results if "output" not in r]
    print(f"{len(results) - len(failed)} rendered, {len(failed)} refused; wrote {target}")
    for r in failed:
        print(f"  {r['template']} x {r['case']}: {r.get('raises') or r.get('error')}")


if __name__ == "__main__":
    main()
