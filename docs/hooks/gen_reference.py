"""MkDocs hook: generate the reference pages from the code at build time.

* ``reference/cli.md``: every ``mtr`` command, its arguments and options, from the Typer app
  (``flows.cli.app``) through click's introspection (``typer.main.get_command``).
* ``reference/configuration.md``: every configuration key, its type, default and meaning, from
  the Pydantic config models (``flows.config.MTRConfig`` for ``--config`` of the pipeline
  commands, ``agents.config.LLMConfig`` for ``--llm-config``, ``AuditConfig`` and
  ``AbstentionConfig`` for the ``--config`` of ``mtr audit`` / ``mtr abstention``).
* ``changelog.md``: the repository's ``CHANGELOG.md``.

Nothing is written under ``docs/``: the pages are added to the build as generated files (replacing the stubs
of the same name that say so when read on GitHub), so a
renamed option or a new config key shows up in the next ``make docs`` without a hand edit.
"""
from __future__ import annotations

import enum
import inspect
import os
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any, Iterable

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]

# the CLI module sets these too; set them before anything imports transformers or Prefect
for _k, _v in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
               "TOKENIZERS_PARALLELISM": "false"}.items():
    os.environ.setdefault(_k, _v)


def _import_path() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def _cell(text: Any) -> str:
    """One Markdown table cell: no newlines, pipes escaped."""
    s = " ".join(str(text).split())
    return s.replace("|", "\\|")


# ----------------------------------------------------------------------------------------- CLI
# Typer (0.29) builds its commands on its own vendored click (``typer._click``): the walk below uses only
# the public attributes of typer.core's TyperGroup / TyperCommand / TyperArgument / TyperOption.
_EXAMPLE = re.compile(r"\s*Example:\s*(mtr\b[^\n]*)\s*$")


_CODE = re.compile(r"(`+)(.+?)\1", flags=re.S)
_RST_ROLE = re.compile(r":(?:mod|func|class|meth|attr|data|obj):`~?([^`]+)`")


def _md(text: str) -> str:
    """Markdown-safe prose from a help text or docstring: Sphinx roles and ``double backticks``
    become code spans, ``<`` / ``>`` / ``*`` are escaped outside code spans (``<run>`` is no HTML tag)."""
    text = _RST_ROLE.sub(lambda m: f"`{m.group(1)}`", str(text))
    out, pos = [], 0
    for m in _CODE.finditer(text):
        out.append(_escape(text[pos:m.start()]))
        out.append(f"`{m.group(2)}`")
        pos = m.end()
    out.append(_escape(text[pos:]))
    return "".join(out)


def _escape(prose: str) -> str:
    return prose.replace("<", "&lt;").replace(">", "&gt;").replace("*", "\\*")


def _help_text(text: str | None) -> str:
    """A command's help as Markdown: paragraphs kept, its ``Example: mtr ...`` as a code block."""
    if not text:
        return ""
    text = inspect.cleandoc(text).replace("\b", "")
    example = _EXAMPLE.search(text)
    body = text[:example.start()] if example else text
    out = "\n\n".join(" ".join(p.split()) for p in re.split(r"\n\s*\n", body) if p.strip())
    out = _md(out)
    if example:
        out += f"\n\nExample:\n\n```bash\n{example.group(1).strip()}\n```"
    return out


def _is_option(param: Any) -> bool:
    return hasattr(param, "is_flag")


def _annotation_type(tp: Any) -> str:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (list, tuple, set):
        return (_annotation_type(args[0]) if args else "text") + ", repeatable"
    if origin is typing.Literal:
        return " | ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_annotation_type(a) for a in args if a is not type(None))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return " | ".join(f"`{m.value}`" for m in tp)
    return {Path: "path", int: "integer", float: "number", str: "text", bool: "boolean"}.get(tp, getattr(tp, "__name__", str(tp)))


def _param_type(param: Any) -> str:
    if getattr(param, "is_flag", False):
        return "flag"
    desc = getattr(param, "type_descriptor", None)
    tp = _annotation_type(desc.annotation) if desc is not None else ""
    lo, hi = getattr(param, "min", None), getattr(param, "max", None)
    if lo is not None or hi is not None:
        tp += f" ({'' if lo is None else lo}..{'' if hi is None else hi})"
    return tp


def _param_default(param: Any) -> str:
    d = param.default
    if d is None or d is Ellipsis or (isinstance(d, (list, tuple)) and not d) or callable(d):
        return ""
    if getattr(param, "is_flag", False) and d is False:
        return ""
    if isinstance(d, enum.Enum):
        d = d.value
    return f"`{d}`"


def _usage(cmd: Any, name: str) -> str:
    pieces = [name]
    if getattr(cmd, "commands", None):
        pieces += ["[OPTIONS]", "COMMAND", "[ARGS]..."]
        return " ".join(pieces)
    if any(_is_option(p) and not p.hidden for p in cmd.params):
        pieces.append("[OPTIONS]")
    for p in cmd.params:
        if not _is_option(p):
            meta = (p.metavar or p.name.upper())
            meta += "..." if getattr(p, "nargs", 1) == -1 else ""
            pieces.append(meta if p.required else f"[{meta}]")
    return " ".join(pieces)


def _command_page(cmd: Any, path: list[str], out: list[str], level: int) -> None:
    name = " ".join(path)
    anchor = "-".join(path)
    out.append(f"{'#' * level} `{name}` {{ #{anchor} }}\n")
    helptext = _help_text(cmd.help)
    if helptext:
        out.append(helptext + "\n")
    out.append(f"```text\n{_usage(cmd, name)}\n```\n")
    args = [p for p in cmd.params if not _is_option(p) and not getattr(p, "hidden", False)]
    opts = [p for p in cmd.params if _is_option(p) and not p.hidden]
    if args:
        out.append("| argument | type | help |\n|---|---|---|")
        for p in args:
            req = "" if p.required else " (optional)"
            out.append(f"| `{(p.metavar or p.name.upper())}` | {_cell(_param_type(p))} | "
                       f"{_cell(_md(getattr(p, 'help', '') or ''))}{req} |")
        out.append("")
    if opts:
        out.append("| option | type | default | help |\n|---|---|---|---|")
        for p in opts:
            flags = ", ".join(f"`{o}`" for o in [*p.opts, *p.secondary_opts])
            req = " (required)" if p.required else ""
            out.append(f"| {flags} | {_cell(_param_type(p))} | {_cell(_param_default(p))} | "
                       f"{_cell(_md(getattr(p, 'help', '') or ''))}{req} |")
        out.append("")
    for sub_name, sub in (getattr(cmd, "commands", None) or {}).items():
        if not sub.hidden:
            _command_page(sub, [*path, sub_name], out, min(level + 1, 4))


def cli_markdown() -> str:
    _import_path()
    import typer
    from flows.cli import app
    root = typer.main.get_command(app)
    out = ["# CLI reference\n",
           "Generated from the Typer app (`flows/cli.py`, console script `mtr = flows.cli:main`) when the site is "
           "built: it is the `--help` of every command. Every command exits 0 on success and 2 with one line on an "
           "expected error (bad input, bad config); see [Guarantees](../concepts/guarantees.md).\n",
           f"{_help_text(root.help)}\n",
           "| command | summary |\n|---|---|"]
    commands = {n: c for n, c in root.commands.items() if not c.hidden}
    for n, sub in commands.items():
        out.append(f"| [`mtr {n}`](#mtr-{n}) | {_cell(_md(sub.get_short_help_str(limit=120)))} |")
    out.append("")
    for n, sub in commands.items():
        _command_page(sub, ["mtr", n], out, 2)
    return "\n".join(out) + "\n"


# -------------------------------------------------------------------------------- configuration
def _attribute_docs(model: type) -> dict[str, str]:
    """``name: text`` items of the Google-style ``Attributes:`` section of a class docstring
    (``a / b: text`` documents both)."""
    doc = inspect.getdoc(model) or ""
    m = re.search(r"^Attributes:\s*$(.*?)(?=^\S|\Z)", doc, flags=re.M | re.S)
    if not m:
        return {}
    items: dict[str, str] = {}
    current: list[str] = []
    text: list[str] = []

    def flush() -> None:
        for name in current:
            items[name] = " ".join(text)

    for line in m.group(1).splitlines():
        head = re.match(r"^ {4}([A-Za-z_][\w ,/]*?):\s*(.*)$", line)
        if head and not line.startswith(" " * 5):
            flush()
            current = [n.strip() for n in re.split(r"[/,]", head.group(1)) if n.strip()]
            text = [head.group(2).strip()]
        elif current:
            text.append(line.strip())
    flush()
    return items


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return " | ".join(f"`{a}`" if not isinstance(a, str) else f'`"{a}"`' for a in args)
    if origin in (typing.Union, types.UnionType):
        parts = [a for a in args if a is not type(None)]
        inner = " | ".join(_type_name(a) for a in parts)
        return f"{inner} | none" if len(parts) < len(args) else inner
    if origin in (list, tuple, set, frozenset):
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        return f"map of {_type_name(args[0])} to {_type_name(args[1])}" if args else "map"
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _is_model(tp: Any) -> bool:
    from pydantic import BaseModel
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _dict_model(tp: Any) -> type | None:
    """The value model of ``dict[str, Model]``."""
    if typing.get_origin(tp) is dict:
        args = typing.get_args(tp)
        if len(args) == 2 and _is_model(args[1]):
            return args[1]
    return None


def _default(field: Any) -> str:
    from pydantic_core import PydanticUndefined
    if field.default_factory is not None:
        try:
            value = field.default_factory()
        except TypeError:
            return ""
        if _is_model(type(value)):
            return ""
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if value is None:
        return "none"
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, (list, tuple)):
        return "`[" + ", ".join(repr(v) if isinstance(v, str) else str(v) for v in value) + "]`"
    if isinstance(value, dict):
        return "`{}`" if not value else f"`{value}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    return f"`{value}`"


def _anchor(ns: str, key: str) -> str:
    return ns + "-" + re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-")


def _summary(model: type) -> str:
    """The first paragraph of a model's own docstring (none inherited)."""
    doc = inspect.getdoc(model) if model.__doc__ else ""
    summary = " ".join(doc.split("\n\n")[0].split()) if doc else ""
    return "" if summary.startswith("Attributes:") else summary


def _render_model(model: type, prefix: str, ns: str, out: list[str], level: int, heading: str | None) -> None:
    """A table of the model's keys, then one section per nested model (``heading`` None: the
    caller wrote the heading)."""
    notes = _attribute_docs(model)
    nested: list[tuple[str, str, type]] = []
    rows: list[str] = []
    for name, field in model.model_fields.items():
        tp = field.annotation
        key = f"{prefix}{name}"
        desc = field.description or notes.get(name, "")
        if not desc and (_is_model(tp) or _dict_model(tp) is not None):
            desc = _summary(tp if _is_model(tp) else _dict_model(tp))
        if _is_model(tp):
            nested.append((key, f"{key}.", tp))
            rows.append(f"| `{key}` | section: [`{key}`](#{_anchor(ns, key)}) |  | {_cell(_md(desc))} |")
            continue
        dsub = _dict_model(tp)
        if dsub is not None:
            sub_key = f"{key}.NAME"
            nested.append((sub_key, f"{sub_key}.", dsub))
            rows.append(f"| `{key}` | map of names to sections: [`{sub_key}`](#{_anchor(ns, sub_key)}) | "
                        f"{_cell(_default(field))} | {_cell(_md(desc))} |")
            continue
        rows.append(f"| `{key}` | {_cell(_type_name(tp))} | {_cell(_default(field))} | {_cell(_md(desc))} |")
    if heading is not None:
        out.append(f"{'#' * level} `{heading}` {{ #{_anchor(ns, heading)} }}\n")
        summary = _summary(model)
        name = f"`{model.__module__}.{model.__name__}`"
        out.append(f"{_md(summary)} ({name})\n" if summary else f"{name}\n")
    out.append("| key | type | default | meaning |\n|---|---|---|---|")
    out.extend(rows)
    out.append("")
    for key, sub_prefix, sub in nested:
        _render_model(sub, sub_prefix, ns, out, min(level + 1, 4), key)


def config_markdown() -> str:
    _import_path()
    from agents.config import LLMConfig
    from evaluation.abstention.config import AbstentionConfig
    from evaluation.audit.config import AuditConfig
    from flows.config import MTRConfig
    out = ["# Configuration keys\n",
           "Generated from the Pydantic config models when the site is built, so every key below exists and "
           "its default is the code's. Every model rejects unknown keys, naming the offending path. Files are "
           "TOML or YAML.\n",
           "| file | passed with | model |\n|---|---|---|",
           "| run configuration | `--config` of `mtr curate / chunk / embed / cluster / build / synthesize / demo` "
           "| [`MTRConfig`](#run) |",
           "| LLM configuration | `--llm-config` of every command that calls a model (or `llm_config` in the run "
           "configuration) | [`LLMConfig`](#llm) |",
           "| audit settings | `--config` of `mtr audit` (command-line options win) | [`AuditConfig`](#audit) |",
           "| abstention settings | `--config` of `mtr abstention` | [`AbstentionConfig`](#abstention) |",
           "",
           "Keys are dotted paths: `chunk.max_size` is `max_size` in the `[chunk]` table of a TOML file (or under "
           "`chunk:` in YAML). A `NAME` in a path is a name you choose (an endpoint, a role, a model).\n"]
    out.append("## Run configuration { #run }\n")
    out.append("`flows.config.MTRConfig`: the one typed configuration of a run; the resolved config is saved in "
               "every run's manifest. Example: `examples/demo.toml`.\n")
    _render_model(MTRConfig, "", "run", out, 2, None)
    out.append("## LLM configuration { #llm }\n")
    out.append("`agents.config.LLMConfig`: endpoints, per-role models and sampling, budgets, cache, prices. API "
               "keys are never in this file: `api_key_env` names the environment variable that holds one. See "
               "[Connect an LLM endpoint](../how-to/endpoints.md).\n")
    _render_model(LLMConfig, "", "llm", out, 2, None)
    out.append("## Audit settings { #audit }\n")
    out.append("See [Audit (MTR-Eval)](../concepts/audit.md).\n")
    _render_model(AuditConfig, "", "audit", out, 2, None)
    out.append("## Abstention settings { #abstention }\n")
    out.append("See [Abstention](../concepts/abstention.md).\n")
    _render_model(AbstentionConfig, "", "abstention", out, 2, None)
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------- hook
_PAGES = {
    "reference/cli.md": cli_markdown,
    "reference/configuration.md": config_markdown,
    "changelog.md": lambda: (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"),
}


def on_files(files: Files, config: Any) -> Files:
    for src_uri, make in _PAGES.items():
        existing = files.get_file_from_path(src_uri)
        if existing is not None:
            files.remove(existing)
        files.append(File.generated(config, src_uri, content=make()))
    return files
