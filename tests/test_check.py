"""`amem check` (issue 24): one report of what is wrong in the vault, as the installed `amem` gives it to a
git hook or CI, through CliRunner, a real pre-commit hook in a real repository, and an MCP client."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_file
from tests.gitrepo import commit_all, git, init_repo, set_identity
from tests.installed import amem_bin, installed_runner, path_with

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / "docs" / "recipes" / "pre-commit-check.md"


def kinds(report: dict[str, Any]) -> set[tuple[str, str]]:
    return {(p["kind"], p["id"]) for p in report["problems"]}


def find(report: dict[str, Any], kind: str, note_id: str) -> dict[str, Any]:
    found = [p for p in report["problems"] if p["kind"] == kind and p["id"] == note_id]
    assert len(found) == 1, (kind, note_id, report["problems"])
    first: dict[str, Any] = found[0]
    return first


def test_every_kind_is_reported_with_its_place_and_the_exit_code_says_so(tmp_path: Path, vault: Path) -> None:
    write_file(vault / "x.md", "---\ntitle: X\naliases: [Guide]\n---\n# X\nsee [[nowhere]] and [[foo]]\n\n[[a/foo]]\n")
    write_file(vault / "a/foo.md", "# foo\n[[x]]\n")
    write_file(vault / "b/foo.md", "# foo\n[[x]]\n")
    write_file(vault / "guide.md", "# guide\n[[x]]\n")
    write_file(vault / "Twin.md", "[[x]]\n")
    write_file(vault / "twin.md", "[[x]]\n")
    write_file(vault / "bad.md", "---\ntitle: [unclosed\n---\n[[x]]\n")
    write_file(vault / "latin1.md", "caf\xe9 [[x]]\n".encode("latin-1"))
    write_file(vault / "x.conflict-0123abcd.md", "the other side [[x]]\n")
    write_file(vault / "notes/.junk.amem-tmp", "half written")  # no writer's name: no sweep removes it
    write_file(vault / "lonely.md", "# Lonely\nno links\n")
    write_file(vault / "big.md", "[[x]]\n" + "word " * 400)
    (vault.parent / ".amem").mkdir(exist_ok=True)
    (vault.parent / ".amem" / "config.yaml").write_text("check:\n  maxNoteBytes: 1000\n")
    run = installed_runner(tmp_path, vault)
    done = run("check")
    assert done.code == 11, done.stderr
    assert done.error["code"] == "problems" and "broken-link: 1" in done.error["message"]
    report = done.json
    broken = find(report, "broken-link", "x.md")
    assert (broken["target"], broken["line"], broken["severity"]) == ("nowhere", 6, "error")
    ambiguous = find(report, "ambiguous-link", "x.md")
    assert ambiguous["candidates"] == ["a/foo.md", "b/foo.md"] and ambiguous["line"] == 6
    assert ambiguous["severity"] == "warning"
    assert find(report, "case-twin", "Twin.md")["others"] == ["twin.md"]
    assert find(report, "case-twin", "twin.md")["others"] == ["Twin.md"]
    malformed = find(report, "malformed-frontmatter", "bad.md")
    assert malformed["line"] == 1 and "malformed frontmatter" in malformed["message"]
    assert find(report, "not-utf8", "latin1.md")["severity"] == "error"
    assert find(report, "conflict-copy", "x.conflict-0123abcd.md")["others"] == ["x.md"]
    assert find(report, "stray-temporary", "notes/.junk.amem-tmp")["severity"] == "warning"
    assert find(report, "alias-collision", "x.md")["others"] == ["guide.md"]
    assert find(report, "orphan", "lonely.md")["severity"] == "info"
    assert find(report, "oversized", "big.md")["severity"] == "info"
    assert ("orphan", "x.md") not in kinds(report)
    assert report["notes"] == 11
    assert report["counts"] == dict(sorted(Counter(p["kind"] for p in report["problems"]).items()))
    assert "Traceback" not in done.stderr and str(tmp_path) not in done.stderr + done.stdout


def test_an_embedded_attachment_is_no_broken_link_and_read_names_its_file(amem: Any, vault: Path) -> None:
    write_file(vault / "assets/Diagram.png", b"\x89PNG")
    write_file(vault / "docs/paper.pdf", b"%PDF")
    write_file(vault / "n.md", "![[diagram.png]] ![[missing.png]] [[paper.pdf]] [[other]]\n[[m]]\n")
    write_file(vault / "m.md", "[[n]]\n")
    done = amem("check")
    assert done.exit_code == 11
    broken = sorted(p["target"] for p in done.json["problems"] if p["kind"] == "broken-link")
    assert broken == ["missing.png", "other"]
    links = {link["target"]: link for link in amem("read", "n").json["links"]}
    assert links["diagram.png"]["attachment"] == "assets/Diagram.png" and links["diagram.png"]["resolved"] is None
    assert links["paper.pdf"]["attachment"] == "docs/paper.pdf"
    assert "attachment" not in links["missing.png"] and "attachment" not in links["m"]
    assert links["m"]["resolved"] == "m.md"


def test_exit_code_by_severity_and_strict(amem: Any, vault: Path) -> None:
    write_file(vault / "a.md", "[[b]]\n")
    write_file(vault / "b.md", "[[a]]\n")
    write_file(vault / "lonely.md", "alone\n")
    clean = amem("check")
    assert clean.exit_code == 0, clean.stderr
    assert [p["kind"] for p in clean.json["problems"]] == ["orphan"]
    assert amem("check", "--strict").exit_code == 0  # info never fails a check
    write_file(vault / "x/c.md", "[[b]]\n")
    write_file(vault / "y/c.md", "[[b]]\n")
    write_file(vault / "b.md", "[[a]] [[c]]\n")  # [[c]] matches two notes alike: a warning
    assert amem("check").exit_code == 0
    strict = amem("check", "--strict")
    assert strict.exit_code == 11 and strict.error["code"] == "problems"
    assert strict.json["counts"]["ambiguous-link"] == 1
    write_file(vault / "b.md", "[[a]] [[gone]]\n")
    assert amem("check").exit_code == 11


def test_prefix_limits_the_report_but_links_resolve_among_the_whole_vault(amem: Any, vault: Path) -> None:
    write_file(vault / "notes/a.md", "[[elsewhere/target]] [[nothing]]\n")
    write_file(vault / "other/b.md", "[[nothing]]\n")
    write_file(vault / "elsewhere/target.md", "[[notes/a]] [[other/b]]\n")
    report = amem("check", "notes/").json
    assert kinds(report) == {("broken-link", "notes/a.md")} and report["notes"] == 1
    assert find(report, "broken-link", "notes/a.md")["target"] == "nothing"


def test_a_link_written_many_times_is_one_problem_at_its_first_line(amem: Any, vault: Path) -> None:
    write_file(vault / "n.md", '---\nrelated: "[[gone]]"\n---\n```\n[[in code]]\n```\n' + "[[gone]]\n" * 50)
    report = amem("check").json
    broken = find(report, "broken-link", "n.md")
    assert broken["line"] == 2


def test_many_ambiguous_links_are_found_as_a_few_are(tmp_path: Path, vault: Path) -> None:
    # Past a few hundred targets to resolve again, check loads every id rather than querying per target:
    # both give the same answer.
    many = 240
    for i in range(many):
        write_file(vault / f"x/n{i}.md", "[[hub]]\n")
        write_file(vault / f"y/n{i}.md", "[[hub]]\n")
    write_file(vault / "hub.md", "# Hub\n" + "".join(f"line {i}: [[n{i}]]\n" for i in range(many)))
    write_file(vault / "few.md", "# Few\n[[n0]]\n\n[[n239]] [[hub]]\n")
    run = installed_runner(tmp_path, vault)
    report = run("check", "--strict").json
    assert report["counts"] == {"ambiguous-link": many + 2}
    for i in (0, 1, many - 1):
        found = next(p for p in report["problems"] if p["id"] == "hub.md" and p["target"] == f"n{i}")
        assert (found["line"], found["candidates"]) == (i + 2, [f"x/n{i}.md", f"y/n{i}.md"])
    few = run("check", "--strict", "few.md").json  # two targets to resolve again: by query
    assert few["problems"] == [p for p in report["problems"] if p["id"] == "few.md"]
    assert [(p["target"], p["line"]) for p in few["problems"]] == [("n0", 2), ("n239", 4)]


def test_a_change_since_the_last_check_is_seen(amem: Any, vault: Path) -> None:
    write_file(vault / "a.md", "[[b]]\n")
    assert amem("check").exit_code == 11
    write_file(vault / "b.md", "[[a]]\n")
    assert amem("check").json["problems"] == []


# --- --staged and the pre-commit hook --------------------------------------------------------------------


def _hook_script() -> str:
    blocks = re.findall(r"```sh\n(.*?)```", RECIPE.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 1
    return str(blocks[0])


def _repo_with_vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    set_identity(monkeypatch)
    repo = init_repo(tmp_path / "project")
    vault = repo / "memory"
    monkeypatch.setenv("AMEM_VAULT", str(vault))
    write_file(vault / "index.md", "# Index\n[[old-broken]]\n")  # broken in HEAD already: not this commit's
    write_file(repo / "README.md", "not in the vault [[nowhere]]\n")
    commit_all(repo, "start")
    return repo, vault


def _commit(repo: Path, tmp_path: Path, message: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path_with(amem_bin(tmp_path / "bin"))}
    return subprocess.run(
        ["git", "commit", "-q", "-m", message], cwd=repo, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_pre_commit_hook_refuses_a_broken_link_and_accepts_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, vault = _repo_with_vault(tmp_path, monkeypatch)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(_hook_script())
    hook.chmod(0o755)
    write_file(vault / "notes/today.md", "# Today\n\nsee [[nowhere]] and [[index]]\n")
    git(repo, "add", "-A")
    refused = _commit(repo, tmp_path, "a broken link")
    assert refused.returncode != 0
    assert "notes/today.md:3: broken-link" in refused.stderr and "nowhere" in refused.stderr
    assert git(repo, "log", "--format=%s") == "start"
    write_file(vault / "notes/today.md", "# Today\n\nsee [[notes/tomorrow]] and [[index]]\n")
    write_file(vault / "notes/tomorrow.md", "# Tomorrow\n")
    git(repo, "add", "-A")
    accepted = _commit(repo, tmp_path, "fixed")
    assert accepted.returncode == 0, accepted.stderr
    assert git(repo, "log", "-1", "--format=%s") == "fixed"


def test_staged_reads_the_staged_content_and_only_the_links_it_adds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, vault = _repo_with_vault(tmp_path, monkeypatch)
    run = installed_runner(tmp_path, vault)
    write_file(vault / "index.md", "# Index\n[[old-broken]]\n[[new-broken]]\n")
    git(repo, "add", "-A")
    write_file(vault / "index.md", "# Index\n[[old-broken]]\n")  # the working file no longer has it
    done = run("check", "--staged")
    assert done.code == 11, done.stderr
    assert [(p["kind"], p["id"], p["target"], p["line"]) for p in done.json["problems"]] == [
        ("broken-link", "index.md", "new-broken", 3)
    ]
    assert done.json["notes"] == 1
    # Its target only in the working tree, not staged: the commit would still hold a broken link.
    write_file(vault / "new-broken.md", "# here, unstaged\n")
    assert run("check", "--staged").code == 11
    git(repo, "add", str(vault / "new-broken.md"))
    git(repo, "reset", "-q", "--", str(vault / "index.md"))
    git(repo, "add", str(vault / "index.md"))  # now staged without [[new-broken]]; the note is staged
    assert run("check", "--staged").json["problems"] == []


def test_staged_catches_a_case_twin_bad_bytes_and_a_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, vault = _repo_with_vault(tmp_path, monkeypatch)
    run = installed_runner(tmp_path, vault)
    write_file(vault / "Index.md", "# twin\n")
    write_file(vault / "bytes.md", b"\xff\xfe")
    write_file(vault / ".x.md.123-0123abcd.amem-tmp", "x")
    git(repo, "add", "-f", "-A")
    done = run("check", "--staged")
    assert done.code == 11
    found = {(p["kind"], p["id"]) for p in done.json["problems"]}
    assert found == {
        ("case-twin", "Index.md"),
        ("case-twin", "index.md"),
        ("not-utf8", "bytes.md"),
        ("stray-temporary", ".x.md.123-0123abcd.amem-tmp"),
    }


def test_staged_outside_a_repository_is_a_git_error(amem: Any, vault: Path) -> None:
    write_file(vault / "a.md", "x\n")
    done = amem("check", "--staged")
    assert done.exit_code == 6 and done.error["code"] == "git"


# --- MCP -------------------------------------------------------------------------------------------------


def test_wiki_check_equals_the_command_and_the_tool_list_stays_small(isolated_env: Path, vault: Path) -> None:
    from tests.test_mcp import TOOL_LIST_CHARS, Client, serve, tool_list_chars

    write_file(vault / "notes/a.md", "[[gone]] [[b]]\n")
    write_file(vault / "b.md", "[[notes/a]]\n")
    write_file(vault / "c.md", "alone\n")
    results: dict[str, Any] = {}

    async def test(client: Client) -> None:
        listed = await client.session.list_tools()
        results["size"] = tool_list_chars(listed)
        results["all"] = await client.ok("wiki_check")
        results["folder"] = await client.ok("wiki_check", folder="notes/")
        results["wrong"] = await client.error("wiki_check", strict=True)

    serve(isolated_env, test)
    cli = installed_runner(isolated_env, vault)
    assert results["all"] == cli("check").json
    assert results["folder"] == cli("check", "notes/").json
    assert kinds(results["folder"]) == {("broken-link", "notes/a.md")}
    assert results["wrong"]["code"] == "usage" and '"strict"' in results["wrong"]["message"]
    assert results["size"] <= TOOL_LIST_CHARS, results["size"]


def test_the_problems_exit_code_is_documented(amem: Any) -> None:
    from amem.errors import EXIT_CODES

    assert EXIT_CODES["problems"][0] == 11
    page = (REPO / "docs" / "reference" / "exit-codes.md").read_text(encoding="utf-8")
    assert "| 11 | `problems` |" in page
    assert "\\fBproblems\\fR" in (REPO / "man" / "amem.1").read_text(encoding="utf-8")


def test_every_problem_kind_has_a_severity_the_help_names() -> None:
    from amem.commands.check import command
    from amem.ops.check import SEVERITY

    assert set(SEVERITY.values()) == {"error", "warning", "info"}
    text = " ".join((command.help or "").split())
    for kind in SEVERITY:
        assert kind in text, kind


def test_malformed_frontmatter_is_found_from_the_index_without_opening_a_note(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index keeps why a note's frontmatter block did not parse, so a check of an unchanged vault opens
    no note for it: a vault of notes without frontmatter (most vaults) cost a check one open of every
    note (2.3 s of CPU at 44,000 such notes)."""
    from amem.config import load_config
    from amem.ops.check import check_vault

    for i in range(30):
        write_file(vault / f"plain{i}.md", f"# Plain {i}\nno frontmatter here [[bad]]\n")
    write_file(vault / "bad.md", "---\ntitle: [unclosed\n---\nbody [[plain0]]\n")
    write_file(vault / "dashes.md", "---\nnot closed, so no block at all [[plain1]]\n")
    old = time.time() - 3600  # not racily recent: an unchanged note is not read again to be sure
    for path in vault.rglob("*.md"):
        os.utime(path, (old, old))
    config = load_config()
    first = check_vault(config)
    opened: list[str] = []
    real_open = os.open

    def counting(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fsdecode(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting)
    again = check_vault(config)
    malformed = [p for p in again["problems"] if p["kind"] == "malformed-frontmatter"]
    assert [(p["id"], p["line"]) for p in malformed] == [("bad.md", 1)]
    assert "malformed frontmatter" in malformed[0]["message"]
    assert again == first
    assert [path for path in opened if path.endswith(".md")] == []
