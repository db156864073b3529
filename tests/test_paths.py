"""Note ids: every refusal the README lists, extension rules, symlink containment, and a property test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem.config import Config
from amem.errors import InvalidId
from amem.notes.ids import normalise_id, resolve_note

EXT = (".md",)


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("x", "x.md"),
        ("notes/x", "notes/x.md"),
        ("notes/x.md", "notes/x.md"),
        ("notes/X.MD", "notes/X.MD"),
        ("a/../b", "b.md"),
        ("./a//b", "a/b.md"),
        ("%2e%2e/x", "%2e%2e/x.md"),
        ("meeting 2026.11.29", "meeting 2026.11.29.md"),
        ("v1.2", "v1.2.md"),
        ("日记/今天", "日记/今天.md"),
    ],
)
def test_ids_are_normalised(raw: str, expected: str) -> None:
    assert normalise_id(raw, EXT) == expected


def test_first_configured_extension_is_added() -> None:
    assert normalise_id("x", (".markdown", ".md")) == "x.markdown"
    assert normalise_id("x.md", (".markdown", ".md")) == "x.md"


@pytest.mark.parametrize(
    "raw, fragment",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("/etc/passwd", "relative"),
        ("~/x", "relative"),
        ("C:/x", "drive"),
        ("c:x", "drive"),
        ("..", "leaves the vault"),
        ("../x", "leaves the vault"),
        ("a/../../x", "leaves the vault"),
        ("a\\b", "backslash"),
        ("..\\x", "backslash"),
        ("a\x00b", "NUL"),
        ("x.txt", "not .txt"),
        ("img/photo.png", "not .png"),
        (".", "leaves the vault"),
    ],
)
def test_refused_ids(raw: str, fragment: str) -> None:
    with pytest.raises(InvalidId) as info:
        normalise_id(raw, EXT)
    assert fragment in info.value.message


def test_errors_never_show_host_paths(config: Config) -> None:
    with pytest.raises(InvalidId) as info:
        resolve_note(config, str(config.vault_root / "x.md"))
    assert str(config.vault_root) not in info.value.message


def test_symlinked_folder_to_outside_is_refused(config: Config, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    config.vault_root.mkdir()
    os.symlink(outside, config.vault_root / "escape")
    with pytest.raises(InvalidId) as info:
        resolve_note(config, "escape/x.md")
    assert "symlink" in info.value.message
    assert str(outside) not in info.value.message


def test_symlinked_note_to_outside_is_refused(config: Config, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("secret")
    config.vault_root.mkdir()
    os.symlink(secret, config.vault_root / "link.md")
    with pytest.raises(InvalidId):
        resolve_note(config, "link.md")


def test_symlink_inside_vault_is_allowed(config: Config) -> None:
    (config.vault_root / "real").mkdir(parents=True)
    os.symlink(config.vault_root / "real", config.vault_root / "alias")
    ref = resolve_note(config, "alias/x")
    assert ref.id == "alias/x.md"


def test_vault_reached_through_a_symlink_is_fine(tmp_path: Path, config: Config) -> None:
    real = tmp_path / "real-vault"
    real.mkdir()
    link = tmp_path / "linked-vault"
    os.symlink(real, link)
    ref = resolve_note(config.with_vault(link), "a/b")
    assert ref.path == str(link / "a" / "b.md")


segment = st.sampled_from(["..", ".", "", "a", "b", "%2e%2e", "...", "x.md", "~", "c:", "\\..", "/", "é", "\x00"])


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    parts=st.lists(st.one_of(segment, st.text(min_size=1, max_size=6)), min_size=1, max_size=6),
    lead=st.sampled_from(["", "/", "./", "../"]),
)
def test_no_generated_id_resolves_outside_the_vault(config: Config, parts: list[str], lead: str) -> None:
    raw = lead + "/".join(parts)
    try:
        ref = resolve_note(config, raw)
    except InvalidId:
        return
    root = os.path.realpath(config.vault_root)
    resolved = os.path.realpath(ref.path)
    assert resolved == root or resolved.startswith(root + os.sep)
    assert ref.id.endswith(".md")
    assert "\\" not in ref.id and "\x00" not in ref.id and not ref.id.startswith("/")
