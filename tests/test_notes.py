"""Frontmatter parsing, titles and versions."""

from __future__ import annotations

import hashlib

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from amem.notes.parse import note_title, parse_note, render_note, version_of


def test_plain_frontmatter() -> None:
    note = parse_note("---\ntitle: Hello\ntags: [a, b]\n---\nBody\n")
    assert note.frontmatter == {"title": "Hello", "tags": ["a", "b"]}
    assert note.body == "Body\n"
    assert note.warnings == ()


def test_bom_and_crlf() -> None:
    note = parse_note("\ufeff---\r\ntitle: Hi\r\n---\r\nBody\r\n")
    assert note.frontmatter == {"title": "Hi"}
    assert note.body == "Body\r\n"


def test_duplicate_keys_last_wins_and_rest_is_kept() -> None:
    note = parse_note("---\ntitle: one\ntags: [x]\ntitle: two\n---\nB")
    assert note.frontmatter == {"title": "two", "tags": ["x"]}


def test_malformed_yaml_is_body_with_warning() -> None:
    text = "---\ntitle: [unclosed\n---\nBody"
    note = parse_note(text, "n.md")
    assert note.frontmatter == {}
    assert note.body == text
    assert note.warnings and "malformed frontmatter" in note.warnings[0]


def test_non_mapping_frontmatter_is_body_with_warning() -> None:
    note = parse_note("---\n- a\n- b\n---\nBody")
    assert note.frontmatter == {}
    assert note.warnings


def test_no_frontmatter() -> None:
    assert parse_note("Just text\n---\n").frontmatter == {}
    assert parse_note("Just text\n---\n").body == "Just text\n---\n"


def test_unclosed_frontmatter_is_body() -> None:
    note = parse_note("---\ntitle: x\nno end")
    assert note.frontmatter == {} and note.body == "---\ntitle: x\nno end"


def test_empty_frontmatter_block() -> None:
    note = parse_note("---\n---\nBody")
    assert note.frontmatter == {} and note.body == "Body"


def test_unquoted_dates_come_back_as_iso_strings() -> None:
    note = parse_note(
        "---\nd: 2026-01-02\nt: 2026-01-02 10:30:00+08:00\nu: 2026-01-02T10:30:00Z\nq: '2026-01-02'\n---\n"
    )
    assert note.frontmatter == {
        "d": "2026-01-02",
        "t": "2026-01-02T10:30:00+08:00",
        "u": "2026-01-02T10:30:00+00:00",
        "q": "2026-01-02",
    }


def test_binary_and_sets_become_json_values() -> None:
    note = parse_note("---\nb: !!binary aGk=\ns: !!set {a: null}\n---\n")
    assert note.frontmatter == {"b": "aGk=", "s": ["a"]}


def test_title_precedence() -> None:
    assert note_title({"title": "FM"}, "# Heading", "a/b.md") == "FM"
    assert note_title({}, "text\n# Heading\n", "a/b.md") == "Heading"
    assert note_title({}, "```\n# not a title\n```\n", "a/b.md") == "b"
    assert note_title({}, "## sub only", "a/b.c.md") == "b.c"


def test_version_is_sha1_of_bytes() -> None:
    assert version_of(b"") == hashlib.sha1(b"").hexdigest() == "da39a3ee5e6b4b0d3255bfef95601890afd80709"
    assert version_of("é".encode()) == hashlib.sha1("é".encode()).hexdigest()


keys = st.text(alphabet=st.characters(categories=("L", "N")), min_size=1, max_size=8)
values = st.one_of(st.integers(), st.booleans(), st.text(max_size=20), st.lists(st.text(max_size=5), max_size=3))


@given(st.dictionaries(keys, values, max_size=5), st.text(max_size=80))
def test_frontmatter_round_trip(frontmatter: dict[str, object], body: str) -> None:
    # Without frontmatter the body is the whole note, so it must not look like a block itself.
    assume(frontmatter or not body.lstrip("\ufeff").startswith("---"))
    note = parse_note(render_note(frontmatter, body))
    assert note.frontmatter == frontmatter
    assert note.body == (body if frontmatter else body.removeprefix("\ufeff"))


_PLAIN = st.from_regex(r"[A-Za-zé][A-Za-z0-9 ._/()-]{0,10}", fullmatch=True)
_SCALARS = st.one_of(
    _PLAIN,
    _PLAIN,
    _PLAIN,
    st.sampled_from(["yes", "No", "null", "~", "true", "off", "nan", ".inf", "010", "0x1f", "1e3", "-5", "12"]),
    st.sampled_from(["2025-03-04", "2025-02-30", "2026-11-29T20:15:03+08:00", "2026-11-29T20:15:03Z"]),
    st.sampled_from(["2026-11-29 20:15:03", "2026-11-29T20:15:03.5-05:00", "2026-13-01T00:00:00"]),
    # shaped like dates and times, naming none: plain strings on both paths (SPEC §2)
    st.sampled_from(["2024-02-30", "2023-11-31", "2024-01-01 25:61:61", "2024-01-01T24:00:00", "0000-01-01"]),
    st.sampled_from(["2024-1-32", "2024-02-30T10:00:00Z", "2024-01-01T10:00:00+99:00", "9999-12-31T23:59:59-23:59"]),
    st.sampled_from(["a: b", "x # c", "C#", "R&D", "'q'", '"q"', "*a", "&a", "!tag", "@x", "%x", "a,b", "[a", "{a}"]),
    st.text(alphabet="abcXYZ é-_./()+!?:#,[] 0123456789", max_size=12),
)
_VALUES = st.one_of(_SCALARS, st.lists(_SCALARS, max_size=4).map(lambda items: "[" + ", ".join(items) + "]"))
_LINES = st.tuples(st.sampled_from(["title", "tags", "created", "a", "b-c", "_x", "1", "k k"]), _VALUES).map(
    lambda kv: f"{kv[0]}: {kv[1]}".rstrip()
)


@settings(max_examples=300)
@given(st.lists(_LINES, max_size=5))
def test_frontmatter_read_without_yaml_is_what_yaml_reads(lines: list[str]) -> None:
    """The subset read without YAML gives exactly what YAML gives, or defers to YAML."""
    import yaml

    from amem.notes.parse import _jsonable, _load_yaml
    from amem.notes.simple_yaml import simple_frontmatter

    block = "".join(line + "\n" for line in lines)
    fast = simple_frontmatter(block)
    try:
        slow = _load_yaml(block)  # YAML may refuse a block, as a YAMLError, but never fail otherwise
    except yaml.YAMLError:
        assert fast is None, f"read without YAML, but YAML refuses it: {block!r}"
        return
    if fast is not None:
        assert fast == _jsonable(slow or {}), block


#: The patterns the plain frontmatter's shapes were once tested with: its string tests must say exactly what
#: they say, for any text.
_SHAPES = {
    "is_key": r"[A-Za-z_][A-Za-z0-9_\-]*\Z",
    "is_plain": r"[^\W\d_][\w .\-/()+&!?@$%^=~]*\Z",
    "is_integer": r"(?:0|[1-9][0-9]{0,17})\Z",
    "is_date": r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z",
    "is_timestamp": r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})?\Z",
}
#: Texts near each shape: a character changed, added or dropped, Unicode letters, digits and numbers.
_SHAPE_TEXTS = st.one_of(
    st.text(max_size=30),
    st.text(alphabet="0123456789-T:.Z+_ a", max_size=32),
    st.text(alphabet=st.sampled_from("aZ_-9 ./()+&!?@$%^=~#:'\"é漢٣²½ⅷ\u0300\t"), max_size=12),
    st.sampled_from(
        ["2026-11-29T20:15:03+08:00", "2026-11-29T20:15:03.5Z", "2026-01-02", "0", "123456789012345678"]
    ).flatmap(
        lambda s: st.tuples(st.integers(0, len(s)), st.sampled_from(["", "0", "x", ".", "-", "٣", "Z"])).map(
            lambda cut: s[: cut[0]] + cut[1] + s[cut[0] + 1 :]
        )
    ),
)


@settings(max_examples=3000)
@given(_SHAPE_TEXTS)
def test_the_plain_frontmatters_shapes_are_its_patterns(text: str) -> None:
    import re

    from amem.notes import simple_yaml

    for name, pattern in _SHAPES.items():
        assert getattr(simple_yaml, name)(text) == bool(re.match(pattern, text)), (name, text)


def test_the_plain_frontmatters_shapes_at_their_edges() -> None:
    from amem.notes.simple_yaml import is_integer, is_key, is_plain, is_timestamp

    assert is_integer("9" * 18) and not is_integer("9" * 19) and not is_integer("01") and not is_integer("٣")
    assert is_key("_") and is_key("a-b_c") and not is_key("-a") and not is_key("é")
    assert is_plain("é漢 (x)") and is_plain("ⅷx") and not is_plain("_x") and not is_plain("3x") and not is_plain("a#")
    assert (
        is_timestamp("2026-11-29T20:15:03")
        and not is_timestamp("2026-11-29T20:15:03.")
        and not is_timestamp("2026-11-29T20:15:03+0800")
    )


#: The patterns a note id was once checked with: its string tests must say exactly what they say.
_ID_CHECKS = {
    "_is_drive": (r"^[A-Za-z]:", "match"),
    "_has_control": (r"[\x00-\x1f\x7f]", "search"),
    "_is_type_suffix": (r"^\.[A-Za-z][A-Za-z0-9]*$", "match"),
}


@settings(max_examples=2000)
@given(
    st.one_of(
        st.text(max_size=12),
        st.text(alphabet=st.sampled_from("aZ9.:_-\n\t\x00\x1f\x7f\x80\xa0é٣ "), max_size=8),
        st.text(alphabet="abcXYZ019", max_size=6).map(lambda s: "." + s),
    )
)
def test_the_note_id_checks_are_their_patterns(text: str) -> None:
    import re

    from amem.notes import ids

    for name, (pattern, how) in _ID_CHECKS.items():
        assert getattr(ids, name)(text) == bool(getattr(re, how)(pattern, text)), (name, text)
