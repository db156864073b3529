"""What a tool's Python declaration gives `amem mcp`, derived in one place so that a tool added later gets
all of it by being declared: strict arguments checked in amem's own words, the input schema (no undeclared
property), the output schema (from the TypedDict its function returns), and its annotations.

A tool is a function whose first parameter receives the server's Config and whose other parameters are
the tool's arguments, named as the model sees them, each `Annotated[type, Field(description=…)]`.
"""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import typing_extensions
from mcp_types import Tool as ListedTool
from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from .errors import UsageError

ToolFunction = Callable[..., Any]

#: Other names a model may give an idea, and the name amem's tools use for it: the first one a tool
#: declares is suggested (`prefix` was wiki_list's folder filter; search calls its cap maxResults,
#: history its cap limit, as the source tool did).
SYNONYMS: dict[str, tuple[str, ...]] = {
    "prefix": ("folder",),
    "path": ("folder", "id"),
    "limit": ("maxResults",),
    "maxResults": ("limit",),
    "version": ("baseVersion",),
    "newPath": ("newId",),
    "to": ("newId",),
}


@dataclass(frozen=True)
class Declared:
    """One tool as the server offers it."""

    function: ToolFunction
    name: str
    arguments: tuple[str, ...]
    model: type[BaseModel]
    listing: ListedTool

    def check(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The arguments, validated and with their defaults, or a UsageError in amem's words that names what
        is wrong; nothing has run."""
        unknown = [name for name in arguments if name not in self.arguments]
        if unknown:
            raise UsageError(f"{self.name}: {_unknown(unknown, self.arguments)}; {self.valid()}; nothing was done")
        try:
            validated = self.model.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(_problem(error, self.listing.input_schema) for error in exc.errors())
            raise UsageError(f"{self.name}: {problems}; nothing was done") from None
        return {name: getattr(validated, name) for name in self.arguments}

    def valid(self) -> str:
        return f"its arguments are {', '.join(self.arguments)}" if self.arguments else "it takes no arguments"


def declare(function: ToolFunction, *, read_only: bool, destructive: bool = False, idempotent: bool = True) -> Declared:
    """Everything the server needs of one tool, from its signature, docstring and return type."""
    hints = typing.get_type_hints(function, include_extras=True)
    parameters = list(inspect.signature(function).parameters.values())[1:]
    fields: dict[str, Any] = {
        p.name: (hints[p.name], ... if p.default is inspect.Parameter.empty else p.default) for p in parameters
    }
    # strict: a value of another JSON type is refused, never coerced ("2" for an integer, "true" for a boolean)
    model = create_model(f"{function.__name__}_arguments", __config__=ConfigDict(extra="forbid", strict=True), **fields)
    annotations = tool_hints(read_only=read_only, destructive=destructive, idempotent=idempotent)
    listing = ListedTool(
        name=function.__name__,
        description=_unwrapped(inspect.getdoc(function) or ""),
        input_schema=compact(model.model_json_schema()),
        output_schema=output_schema(hints.get("return")),
        annotations=annotations,
    )
    return Declared(function, function.__name__, tuple(p.name for p in parameters), model, listing)


def tool_hints(*, read_only: bool, destructive: bool, idempotent: bool) -> ToolAnnotations:
    """A tool's annotations, each hint given only where it differs from MCP's default (readOnlyHint false,
    destructiveHint true, idempotentHint false; the last two concern only a tool that changes something)."""
    changes = not read_only
    return ToolAnnotations(
        read_only_hint=read_only or None,
        destructive_hint=False if changes and not destructive else None,
        idempotent_hint=True if changes and idempotent else None,
        open_world_hint=False,  # the tools reach the vault and its git repository, nothing beyond
    )


def output_schema(returned: Any) -> dict[str, Any]:
    """The JSON schema of what a tool returns: its TypedDict's fields, their types and which are always there.
    A record within (a hit, a link, a linked note) is only said to be an object: its fields are in the
    command's reference, and would double the tool list. An object of any shape when the function declares
    no TypedDict."""
    if not typing_extensions.is_typeddict(returned):
        return {"type": "object"}
    fields = typing_extensions.get_type_hints(returned, include_extras=True)
    optional = {name for name, kind in fields.items() if typing.get_origin(kind) in _NOT_REQUIRED}
    return {
        "type": "object",
        "properties": {
            name: _field_schema(typing.get_args(kind)[0] if name in optional else kind) for name, kind in fields.items()
        },
        "required": [name for name in fields if name not in optional],
    }


#: What marks a field that is not always there (a tuple: mypy will not compare a type with a special form).
_NOT_REQUIRED: tuple[Any, ...] = (typing.NotRequired,)
#: The JSON type of each Python type a result's field may hold.
_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def _field_schema(kind: Any) -> dict[str, Any]:
    """The JSON schema of a result field's type: a record (a TypedDict) or a mapping is an object."""
    if kind in _JSON_TYPES:
        return {"type": _JSON_TYPES[kind]}
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is list:
        return {"type": "array", "items": _field_schema(args[0])}
    if origin in (typing.Union, types.UnionType):
        options = [_field_schema(arg) for arg in args]
        if all(set(option) == {"type"} for option in options):
            return {"type": [option["type"] for option in options]}
        return {"anyOf": options}
    if origin is dict and len(args) == 2 and args[1] is not Any:
        return {"type": "object", "additionalProperties": _field_schema(args[1])}
    if origin is dict or typing_extensions.is_typeddict(kind):
        return {"type": "object"}
    raise TypeError(f"a result field of type {kind!r} has no JSON schema here yet")


def compact(schema: Any) -> Any:
    """A schema without what only costs a model tokens: pydantic's titles, `additionalProperties: true` (the
    default), `anyOf` of plain types as one `type` list, and `anyOf [X, null]` with a null default on an
    optional argument (leaving it out means the default; X says what to give)."""
    if isinstance(schema, list):
        return [compact(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    node = {
        key: compact(value)
        for key, value in schema.items()
        if not (key == "title" and isinstance(value, str)) and not (key == "additionalProperties" and value is True)
    }
    options = node.pop("anyOf", None)
    return node if options is None else _one_of(node, options)


def _one_of(node: dict[str, Any], options: list[Any]) -> dict[str, Any]:
    """A node's `anyOf`, folded where a shorter form says the same."""
    if node.get("default", ...) is None:
        others = [o for o in options if o != {"type": "null"}]
        if len(others) == 1:
            del node["default"]
            return {**others[0], **node}
    if all(isinstance(o, dict) and set(o) == {"type"} and isinstance(o["type"], str) for o in options):
        return {"type": [o["type"] for o in options], **node}
    return {"anyOf": options, **node}


# --- messages ------------------------------------------------------------------------------------------


def _unknown(names: list[str], valid: tuple[str, ...]) -> str:
    parts = []
    for name in names:
        hint = suggest(name, valid)
        parts.append(f'"{name}"' + (f' (did you mean "{hint}"?)' if hint else ""))
    return ("unknown argument " if len(parts) == 1 else "unknown arguments ") + ", ".join(parts)


def suggest(name: str, valid: tuple[str, ...] | list[str]) -> str | None:
    """The declared name `name` most likely meant: a synonym, the same name in another case or with `_`/`-`,
    or a near spelling."""
    for synonym in SYNONYMS.get(name, ()):
        if synonym in valid:
            return synonym

    def fold(text: str) -> str:
        return text.replace("_", "").replace("-", "").lower()

    import difflib  # only a refused call pays for it

    folded = {fold(v): v for v in valid}
    if fold(name) in folded:
        return folded[fold(name)]
    close = difflib.get_close_matches(fold(name), list(folded), n=1, cutoff=0.6)
    return folded[close[0]] if close else None


def _problem(error: Any, schema: dict[str, Any]) -> str:
    """One argument that failed validation, said with what the schema expects of it."""
    location = error.get("loc") or ("?",)
    name = str(location[0])
    if error.get("type") == "missing":
        return f'missing argument "{name}"'
    expected = expectation(schema.get("properties", {}).get(name, {}))
    return f'argument "{name}" must be {expected}, not {_shown(error.get("input"))}'


def expectation(schema: dict[str, Any]) -> str:
    """What a property's schema asks for, in words: `an integer of at least 1`, `one of "a", "b"`."""
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(value) for value in schema["enum"])
    if "anyOf" in schema:
        return " or ".join(expectation(option) for option in schema["anyOf"] if option != {"type": "null"})
    kind = schema.get("type")
    words = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false"}
    if kind == "array":
        items = expectation(schema.get("items", {}))
        return "a list" + (f" of {items.removeprefix('a ').removeprefix('an ')}s" if items != "a value" else "")
    text = words.get(str(kind), "a value")
    bounds = [f"at least {schema['minimum']}"] if "minimum" in schema else []
    bounds += [f"at most {schema['maximum']}"] if "maximum" in schema else []
    return text + (" of " + " and ".join(bounds) if bounds else "")


def _shown(value: Any) -> str:
    """The value a model gave, short: a string or number as JSON, a list or object by its kind."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:39] + "…"


def unknown_tool(name: str, tools: list[str]) -> UsageError:
    hint = suggest(name, tools)
    return UsageError(
        f'no tool named "{name}"'
        + (f' (did you mean "{hint}"?)' if hint else "")
        + f"; the tools are {', '.join(tools)}"
    )


def _unwrapped(doc: str) -> str:
    """A docstring's paragraphs each on one line: the line breaks of its source cost a model tokens."""
    return "\n\n".join(" ".join(paragraph.split("\n")) for paragraph in doc.split("\n\n"))
