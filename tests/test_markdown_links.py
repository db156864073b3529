"""Markdown links, links in frontmatter values and indented code (SPEC §2), as `read`, backlinks and `move`
meet them, through the installed `amem`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_file
from tests.installed import installed_runner


@pytest.fixture
def run(tmp_path: Path, vault: Path) -> Any:
    return installed_runner(tmp_path, vault)


def links_of(result: Any) -> list[tuple[str, str, str | None]]:
    return [(link["kind"], link["target"], link["resolved"]) for link in result.json["links"]]


def test_read_lists_markdown_and_frontmatter_links_and_not_indented_code(vault: Path, run: Any) -> None:
    write_file(vault / "notes/auth.md", "# Auth\n")
    write_file(vault / "a b.md", "# Spaced\n")
    write_file(vault / "notes/sub/deep.md", "# Deep\n")
    write_file(
        vault / "notes/index.md",
        '---\nrelated: "[[notes/auth]]"\n---\n'
        "See [the auth note](auth.md), [spaced](<../a b.md>), [encoded](../a%20b.md),\n"
        "[rooted](/notes/sub/deep.md), [web](https://example.com/x.md), ![pic](pic.png),\n"
        "[mail](mailto:someone@example.com) and [missing](nowhere.md).\n"
        "\n"
        "    [[auth]] in an indented code block\n"
        "    [code](auth.md)\n"
        "\n"
        "Back to prose.\n",
    )
    result = run("read", "notes/index", "--depth", "0")
    assert result.code == 0, result.stderr
    assert links_of(result) == [
        ("frontmatter", "notes/auth", "notes/auth.md"),
        ("markdown", "auth.md", "notes/auth.md"),
        ("markdown", "../a b.md", "a b.md"),
        ("markdown", "../a b.md", "a b.md"),
        ("markdown", "/notes/sub/deep.md", "notes/sub/deep.md"),
        ("markdown", "nowhere.md", None),
    ]
    assert result.json["links"][1]["alias"] == "the auth note"
    assert run("read", "notes/auth").json["backlinks"] == ["notes/index.md"]
    assert run("read", "a b").json["backlinks"] == ["notes/index.md"]
    assert run("read", "notes/sub/deep").json["backlinks"] == ["notes/index.md"]


def test_a_link_in_an_indented_code_block_is_no_backlink(vault: Path, run: Any) -> None:
    write_file(vault / "target.md", "# T\n")
    write_file(vault / "code.md", "Intro.\n\n    [[target]]\n\tsee [[target]]\n")
    assert run("read", "code").json["links"] == []
    assert run("read", "target").json["backlinks"] == []


def test_move_rewrites_markdown_links_from_each_notes_folder_keeping_their_form(vault: Path, run: Any) -> None:
    write_file(vault / "notes/auth.md", "# Auth\nSee [home](../index.md) and [[index]].\n")
    write_file(vault / "index.md", "# Home\n[auth](notes/auth.md), [bare](notes/auth), [root](/notes/auth.md)\n")
    write_file(vault / "notes/other.md", "[a](auth.md) and [b](<auth.md#Tokens>)\n")
    write_file(vault / "far/away/x.md", '---\nrelated: "[[notes/auth]]"\n---\n[up](../../notes/auth.md "title")\n')
    result = run("move", "notes/auth", "projects/2026/auth keys")
    assert result.code == 0, result.stderr
    assert {e["id"]: e["links"] for e in result.json["rewritten"]} == {
        "index.md": 3,
        "notes/other.md": 2,
        "far/away/x.md": 2,
        "projects/2026/auth keys.md": 1,
    }
    moved = (vault / "projects/2026/auth keys.md").read_text()
    assert moved.endswith("See [home](../../index.md) and [[index]].\n")
    assert (
        (vault / "index.md")
        .read_text()
        .endswith(
            "[auth](projects/2026/auth%20keys.md), [bare](projects/2026/auth%20keys), "
            "[root](/projects/2026/auth%20keys.md)\n"
        )
    )
    assert (
        (vault / "notes/other.md")
        .read_text()
        .endswith("[a](../projects/2026/auth%20keys.md) and [b](<../projects/2026/auth keys.md#Tokens>)\n")
    )
    far = (vault / "far/away/x.md").read_text()
    assert 'related: "[[2026/auth keys]]"\n' in far
    assert far.endswith('[up](../../projects/2026/auth%20keys.md "title")\n')
    for note in ("index", "notes/other", "far/away/x"):
        read = run("read", note, "--depth", "0").json
        assert {link["resolved"] for link in read["links"]} == {"projects/2026/auth keys.md"}, note


def test_move_leaves_links_in_indented_code_alone(vault: Path, run: Any) -> None:
    write_file(vault / "a.md", "# A\n")
    code = write_file(vault / "code.md", "[[a]]\n\n    [[a]] stays\n    [x](a.md) stays\n")
    result = run("move", "a", "b")
    assert result.code == 0, result.stderr
    assert code.read_text().endswith("[[b]]\n\n    [[a]] stays\n    [x](a.md) stays\n")


# --- item 10: a move changes link targets and `updated`, nothing else -----------------------------------


def test_move_keeps_dates_comments_flow_lists_and_line_endings(vault: Path, run: Any) -> None:
    head = (
        b"---\r\ntitle: Plan  # the plan\ncreated: 2024-01-01\r\ntags: [a, b]\n# a comment\n"
        b"updated: 2024-02-02\n---\r\n"
    )
    body = b"Line one [[todo]]\r\nline two\nline three [[todo|t]]\r\n"
    write_file(vault / "todo.md", "# Todo\n")
    plan = write_file(vault / "plan.md", head + body)
    result = run("move", "todo", "done")
    assert result.code == 0, result.stderr
    data = plan.read_bytes()
    before, _, rest = data.partition(b"updated: ")
    stamp, _, after = rest.partition(b"\n")
    assert before == b"---\r\ntitle: Plan  # the plan\ncreated: 2024-01-01\r\ntags: [a, b]\n# a comment\n"
    assert stamp != b"2024-02-02" and stamp.startswith(b"20")
    assert after == b"---\r\nLine one [[done]]\r\nline two\nline three [[done|t]]\r\n"


def test_move_adds_updated_in_the_blocks_own_line_ending(vault: Path, run: Any) -> None:
    write_file(vault / "todo.md", "# Todo\n")
    plan = write_file(vault / "plan.md", b"---\r\ncreated: 2024-01-01 # when\r\n---\r\n[[todo]]\n")
    assert run("move", "todo", "done").code == 0
    data = plan.read_bytes()
    assert data.startswith(b"---\r\ncreated: 2024-01-01 # when\r\nupdated: ")
    assert data.endswith(b"\r\n---\r\n[[done]]\n")


# --- item 16: a note of many links costs about its size ----------------------------------------------------


def test_a_note_of_many_links_lists_the_first_ones_and_follows_every_target(vault: Path, run: Any) -> None:
    from amem.ops.read import MAX_LINK_RECORDS

    write_file(vault / "a.md", "# A\n")
    write_file(vault / "z.md", "# Z\n")
    many = "[[a]] " * (MAX_LINK_RECORDS + 500) + "\n\n[last](z.md)\n"
    write_file(vault / "many.md", many)
    write_file(vault / "linker.md", "[[many]]\n")
    result = run("read", "many")
    assert result.code == 0, result.stderr
    assert len(result.json["links"]) == MAX_LINK_RECORDS and result.json["linksTruncated"] is True
    assert {link["resolved"] for link in result.json["links"]} == {"a.md"}
    assert f"holds {MAX_LINK_RECORDS + 501} links" in result.stderr
    assert [note["id"] for note in result.json["linkedNotes"]] == ["a.md", "z.md"]  # past the cap too
    assert run("read", "z").json["backlinks"] == ["many.md"]
    linker = run("read", "linker")
    assert linker.json["linksTruncated"] is False
    assert linker.json["linkedNotes"][0]["linksTruncated"] is True
