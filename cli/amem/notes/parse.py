"""Notes as text: the version digest, YAML frontmatter, titles, and rendering frontmatter back."""

from __future__ import annotations

import functools
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from ..digest import sha1_hex

if TYPE_CHECKING:
    import yaml


@functools.cache
def _yaml() -> tuple[type[yaml.SafeLoader], type[yaml.SafeDumper]]:
    """PyYAML's safe loader (timestamps kept as ISO-8601 text) and dumper, C classes when PyYAML has
    them. Imported on first need: most frontmatter is read without it (see simple_yaml), and a
    command that reads such notes never pays for the import."""
    import yaml

    loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class NoteLoader(loader):  # type: ignore[valid-type,misc]
        """Safe YAML whose timestamps stay ISO-8601 strings, so frontmatter is plain JSON data."""

    NoteLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)
    return NoteLoader, dumper


def _timestamp_as_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    """The timestamp as written, in ISO-8601 form, keeping its own offset (PyYAML would move it to UTC).
    A value shaped like a timestamp that names no real moment (`2024-02-30`, `25:61:61`, an offset
    past a day) is the plain string it was written as (SPEC §2): one such note must break nothing."""
    import yaml

    text = str(node.value).strip()
    try:
        if len(text) <= 10:
            return date.fromisoformat(text).isoformat()
        return datetime.fromisoformat(text.replace("t", "T").replace("z", "Z")).isoformat()
    except ValueError:
        pass
    try:
        value = yaml.SafeLoader.construct_yaml_timestamp(loader, node)
    except (ValueError, OverflowError):
        return str(node.value)
    return value.isoformat() if isinstance(value, date | datetime) else text


def version_of(data: bytes) -> str:
    """The note's version: SHA-1 of its bytes; a missing note has the digest of the empty string."""
    return sha1_hex(data)


class ParsedNote(NamedTuple):
    frontmatter: dict[str, Any]
    body: str
    #: the frontmatter block as written (without the --- lines); None when the note has none
    frontmatter_text: str | None = None
    warnings: tuple[str, ...] = ()


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        import base64  # here: only a YAML !!binary value is bytes

        return base64.b64encode(value).decode("ascii")
    if isinstance(value, float) and value != value:  # NaN is not JSON
        return None
    return value


def parse_note(text: str, note_id: str = "") -> ParsedNote:
    """Split frontmatter from body. A block that does not parse leaves {} and the whole text as body."""
    from .simple_yaml import split_frontmatter

    if text.startswith("\ufeff"):
        text = text[1:]
    block, body = split_frontmatter(text)
    if block is None:
        return ParsedNote({}, text)  # no frontmatter, or no closing line: not frontmatter at all
    return _load_block(text, block, body, note_id)


#: A frontmatter block may expand (aliases followed) to at most this many YAML nodes plus its length:
#: a plain block expands to fewer nodes than it has characters, so only alias bombs reach it.
EXPANSION_BUDGET = 10_000
#: Deeper nesting than this is not frontmatter anyone writes, and recursion over it would be costly.
MAX_DEPTH = 100


class _Hostile(Exception):
    """A block whose aliases recurse or expand past the budget, or that nests too deeply."""


def _check_expansion(root: Any, budget: int) -> None:
    """Raise _Hostile when the node graph under `root`, with every alias followed, recurses, nests more
    than MAX_DEPTH deep or counts more than `budget` nodes. Iterative, and each shared node's expanded
    size is computed once, so the check costs the block's size, never its expansion."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children: list[Any] = []
        if isinstance(node.value, list):
            for item in node.value:
                children.extend(item if isinstance(item, tuple) else (item,))
        if done:
            on_path.discard(key)
            size = 1 + sum(sizes[id(child)] for child in children)
            if size > budget:
                raise _Hostile("its aliases expand past the size budget")
            sizes[key] = size
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise _Hostile("an alias refers to itself")
        if len(on_path) >= MAX_DEPTH:
            raise _Hostile("too deeply nested")
        on_path.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in on_path:
                raise _Hostile("an alias refers to itself")
            if id(child) not in sizes:
                stack.append((child, False))


def _load_yaml(block: str) -> Any:
    """The block's data, or _Hostile before anything is expanded."""
    loader = _yaml()[0](block)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node, EXPANSION_BUDGET + len(block))
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _load_block(text: str, block: str, body: str, note_id: str) -> ParsedNote:
    from .simple_yaml import simple_frontmatter

    simple = simple_frontmatter(block)
    if simple is not None:
        return ParsedNote(simple, body, block)  # what YAML would give, without YAML
    import yaml

    where = f" in {note_id!r}" if note_id else ""
    try:
        data = _load_yaml(block)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or type(exc).__name__
        return ParsedNote({}, text, None, (f"malformed frontmatter{where} ({problem}); read as body",))
    except _Hostile as exc:
        return ParsedNote({}, text, None, (f"malformed frontmatter{where} ({exc}); read as body",))
    except RecursionError:
        return ParsedNote({}, text, None, (f"malformed frontmatter{where} (too deeply nested); read as body",))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return ParsedNote({}, text, None, (f"frontmatter{where} is not a mapping; read as body",))
    return ParsedNote(_jsonable(data), body, block)


def note_title(frontmatter: dict[str, Any], body: str, note_id: str) -> str:
    """Frontmatter `title`, else the first level-1 heading (`# Title`, or `Title` over `===`) outside code,
    HTML, block quotes and lists, else the file name without extension."""
    title = frontmatter.get("title")
    if isinstance(title, str | int | float) and not isinstance(title, bool) and str(title).strip():
        return str(title).strip()
    from .blocks import headings

    for heading in headings(body):
        if heading.level == 1 and not heading.nested and heading.text:
            return " ".join(heading.text.split())
    name = note_id.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name


def dump_frontmatter(data: dict[str, Any]) -> str:
    """YAML for a frontmatter block: keys in the given order, Unicode kept, no trailing document marker."""
    import yaml

    text: str = yaml.dump(
        data, Dumper=_yaml()[1], sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000
    )
    return text


def render_note(frontmatter: dict[str, Any], body: str) -> str:
    if not frontmatter:
        return body
    return f"---\n{dump_frontmatter(frontmatter)}---\n{body}"
