"""amem sync under hostile conditions (issue 19): uncommitted files in the pull's way, amem's own temporary
files, a remote's `.gitattributes`, SIGKILLed syncs, and writes running beside syncs. Real bare remotes,
real clones, real `amem` processes and real SIGKILLs."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from amem.sync.attributes import NOTE_ATTRIBUTES
from tests.gitrepo import clone, commit_all, git
from tests.test_sync import AMEM, amem, append, error_of, identity, sync

__all__ = ["identity"]  # the fixture used here, defined in test_sync


def two_clones(remote: Path, tmp_path: Path) -> tuple[Path, Path]:
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    append(a, "seed", "first")
    sync(a)
    sync(b)
    return a, b


def remote_files(remote: Path) -> list[str]:
    return git(remote, "ls-tree", "-r", "--name-only", "HEAD").splitlines()


# --- 1. an uncommitted local file in the pull's way ---------------------------------------------------


def _ignore_drafts(b: Path, how: str, tmp_path: Path) -> None:
    if how == "info/exclude":
        with open(b / ".git" / "info" / "exclude", "a") as handle:
            handle.write("drafts/\n")
    elif how == "gitignore":
        (b / ".gitignore").write_text("drafts/\n")
    else:
        excludes = tmp_path / "global-excludes"
        excludes.write_text("drafts/\n")
        git(b, "config", "core.excludesFile", str(excludes))


@pytest.mark.parametrize("how", ["info/exclude", "gitignore", "global excludes"])
def test_an_ignored_local_note_the_pull_would_replace_is_kept_beside_the_remote_one(
    remote: Path, tmp_path: Path, how: str
) -> None:
    a, b = two_clones(remote, tmp_path)
    _ignore_drafts(b, how, tmp_path)
    assert amem(b, "write", "drafts/idea", "B draft").returncode == 0
    assert amem(a, "write", "drafts/idea", "A draft").returncode == 0
    sync(a)

    sync(b)

    sync(a)
    for machine in (a, b):  # both drafts on both machines: merged as two appends, or kept beside
        texts = "".join(p.read_text() for p in (machine / "drafts").glob("idea*.md"))
        assert "A draft" in texts and "B draft" in texts
    assert "B draft" in git(remote, "show", "HEAD:drafts/idea.md")


def test_an_ignored_file_that_is_not_a_note_stops_the_sync_with_nothing_moved(remote: Path, tmp_path: Path) -> None:
    a, b = two_clones(remote, tmp_path)
    with open(b / ".git" / "info" / "exclude", "a") as handle:
        handle.write("secrets.txt\n")
    (b / "secrets.txt").write_text("B's private token\n")
    (a / "secrets.txt").write_text("A's file\n")
    append(a, "other", "a note from A")
    sync(a)
    head = git(b, "rev-parse", "HEAD")

    proc = amem(b, "sync")

    assert proc.returncode == 6
    error = error_of(proc)
    assert error["code"] == "git" and "secrets.txt" in error["message"]
    assert str(tmp_path) not in proc.stderr
    assert (b / "secrets.txt").read_text() == "B's private token\n"
    assert git(b, "rev-parse", "HEAD") == head and not (b / "other.md").exists()  # nothing moved
    assert git(remote, "show", "HEAD:secrets.txt") == "A's file"


def test_a_pull_that_adds_a_folder_where_an_ignored_local_file_is_stops_the_sync(remote: Path, tmp_path: Path) -> None:
    a, b = two_clones(remote, tmp_path)
    with open(b / ".git" / "info" / "exclude", "a") as handle:
        handle.write("/drafts\n")
    (b / "drafts").write_text("B's scratch file, not a folder\n")
    append(a, "drafts/idea", "A's note in a folder")
    sync(a)

    proc = amem(b, "sync")

    assert proc.returncode == 6 and "drafts" in error_of(proc)["message"]
    assert (b / "drafts").read_text() == "B's scratch file, not a folder\n"


def test_a_pull_that_replaces_an_ignored_local_folder_by_a_file_keeps_its_notes(remote: Path, tmp_path: Path) -> None:
    a, b = two_clones(remote, tmp_path)
    with open(b / ".git" / "info" / "exclude", "a") as handle:
        handle.write("/drafts/\n")
    assert amem(b, "write", "drafts/idea", "B's ignored note").returncode == 0
    (a / "drafts").write_text("A's file named drafts\n")
    sync(a)

    sync(b)

    assert "B's ignored note" in (b / "drafts" / "idea.md").read_text()
    assert "B's ignored note" in git(remote, "show", "HEAD:drafts/idea.md")
    kept = [p for p in b.iterdir() if p.name.startswith("drafts") and p.is_file()]  # git's `drafts~<commit>`
    assert [p.read_text() for p in kept] == ["A's file named drafts\n"]


# --- 2. amem's own files are never committed ----------------------------------------------------------


def test_a_killed_writers_temporary_and_the_keepers_folder_are_never_committed(remote: Path, tmp_path: Path) -> None:
    a, _ = two_clones(remote, tmp_path)
    # A writer SIGKILLed while it fills its temporary file leaves it behind.
    writer = subprocess.Popen(
        [*AMEM, "write", "big", "--overwrite", "-"],
        stdin=subprocess.PIPE,
        env={**os.environ, "AMEM_VAULT": str(a)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert writer.stdin is not None
    writer.stdin.write(b"x" * 1024)
    writer.stdin.flush()
    writer.kill()
    writer.wait()
    dead = writer.pid
    (a / f".big.md.{dead}-0badc0de.amem-tmp").write_bytes(b"partial " * 1_000_000)  # what it was writing
    # A live writer's temporary, present while the sync runs.
    (a / f".seed.md.{os.getpid()}-12345678.amem-tmp").write_bytes(b"in flight")
    (a / ".amem-sync").mkdir()
    (a / ".amem-sync" / "1.cookie").write_text("keeper cookie")
    append(a, "real", "a real note")

    result = sync(a)

    assert result["pushed"] == ["real.md"]
    committed = remote_files(remote)
    assert "real.md" in committed
    assert not [f for f in committed if f.endswith(".amem-tmp") or f.startswith(".amem-sync")], committed


def test_a_temporary_committed_by_an_older_amem_is_removed_by_the_next_sync(remote: Path, tmp_path: Path) -> None:
    a, _ = two_clones(remote, tmp_path)
    sync(a)
    stray = a / ".seed.md.1-0badc0de.amem-tmp"
    stray.write_bytes(b"partial")
    commit_all(a, "an older amem's sync")
    git(a, "push", "-q", "origin", "HEAD")
    stray.unlink()

    sync(a)

    assert not [f for f in remote_files(remote) if f.endswith(".amem-tmp")]


# --- 4. a remote's .gitattributes cannot turn conflicts off -------------------------------------------


@pytest.mark.parametrize(
    ("where", "attributes", "note"),
    [
        (".gitattributes", "*.md merge=amem\n*.md merge=union\n", "plan"),
        ("notes/.gitattributes", "*.md merge=union\n", "notes/plan"),
    ],
)
def test_a_remote_gitattributes_routing_notes_to_union_still_reports_the_conflict(
    remote: Path, tmp_path: Path, where: str, attributes: str, note: str
) -> None:
    a, b = two_clones(remote, tmp_path)
    append(a, note, "first draft")
    sync(a)
    sync(b)
    (a / where).write_text(attributes)
    commit_all(a, "someone else's attributes")
    git(a, "push", "-q", "origin", "HEAD")
    assert amem(a, "write", note, "--overwrite", "alpha plan").returncode == 0
    assert amem(b, "write", note, "--overwrite", "beta plan").returncode == 0
    sync(a)

    proc = amem(b, "sync")

    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["conflicts"] == [f"{note}.md"]
    assert "alpha plan" not in (b / f"{note}.md").read_text()  # no interleaving
    assert where in proc.stderr and "merge=union" in proc.stderr  # the change is reported
    # A plain git merge in this clone follows amem's rules too.
    assert "merge=amem" in (b / ".git" / "info" / "attributes").read_text()


@pytest.mark.parametrize(
    "attributes",
    [
        "*.md working-tree-encoding=UTF-16LE\n",
        "*.md ident\n",
        "*.md filter=shout\n",  # a filter this machine defines, as git-lfs defines `lfs` for every repository
    ],
    ids=["encoding", "ident", "filter"],
)
def test_a_remote_gitattributes_cannot_change_the_bytes_of_a_note(
    remote: Path, tmp_path: Path, attributes: str
) -> None:
    """A remote commits attributes that make git rewrite notes as it checks them out and back as it commits
    them (UTF-16 in the work tree, `$Id$` expanded, a filter of the machine's): every note still lies in each
    clone and in the remote byte for byte as amem wrote it, reads whole, and the sync that pulled the
    attributes says so."""
    gitconfig = Path(os.environ["HOME"]) / ".gitconfig"
    with gitconfig.open("a") as handle:
        handle.write('[filter "shout"]\n\tclean = tr a-z A-Z\n\tsmudge = tr A-Z a-z\n')
    a, b = two_clones(remote, tmp_path)
    append(a, "n", "a line with $Id$ in it")
    sync(a)
    sync(b)
    with (a / ".gitattributes").open("a") as handle:
        handle.write(attributes)
    git(a, "add", ".gitattributes")
    git(a, "commit", "-q", "-m", "someone else's attributes")
    git(a, "push", "-q", "origin", "HEAD")
    append(a, "n", "written after the attributes")
    append(a, "later", "a note of its own")
    sync(a)
    pulled = amem(b, "sync")
    assert pulled.returncode == 0, pulled.stderr
    assert "amem overrules" in pulled.stderr and attributes.split()[1] in pulled.stderr
    append(b, "n", "and one from b")
    sync(b)
    sync(a)

    for name in ("n.md", "later.md", "seed.md"):
        written = (a / name).read_bytes()
        assert (b / name).read_bytes() == written, name
        stored = subprocess.run(["git", "cat-file", "blob", f"HEAD:{name}"], cwd=remote, capture_output=True)
        assert stored.stdout == written, name
    text = (b / "n.md").read_text(encoding="utf-8")
    assert "\r" not in text and "\x00" not in text
    assert all(line in text for line in ("$Id$ in it", "written after the attributes", "and one from b"))
    read = json.loads(amem(b, "read", "n").stdout)
    assert "created" in read["frontmatter"] and "and one from b" in read["body"]


@pytest.mark.parametrize("target", ["outside", "dangling", "folder"])
def test_a_remote_gitattributes_that_is_a_symlink_or_a_folder_is_never_read_or_written_through(
    remote: Path, tmp_path: Path, target: str
) -> None:
    """A remote commits `.gitattributes` as a symlink leading out of the vault (or nowhere), or as a folder:
    the syncs that pull it and come after it leave what it leads to byte for byte, warn, and go on syncing;
    notes still merge by amem's rules."""
    a, b = two_clones(remote, tmp_path)
    sync(a)  # what b's first sync pushed
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    (a / ".gitattributes").unlink()
    if target == "folder":
        (a / ".gitattributes").mkdir()
        (a / ".gitattributes" / "x").write_text("a file in a folder\n")
    else:
        (a / ".gitattributes").symlink_to(outside if target == "outside" else tmp_path / "missing.txt")
    commit_all(a, "attributes elsewhere")
    done = subprocess.run(["git", "push", "-q", "origin", "HEAD"], cwd=a, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr

    sync(b)  # pulls it
    append(b, "after", "a note written after the pull")
    proc = amem(b, "sync")

    assert outside.read_text() == "precious\n" and not (tmp_path / "missing.txt").exists()
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["pushed"] == ["after.md"]
    assert ".gitattributes is a symlink or not a file" in proc.stderr
    assert "merge=amem" in (b / ".git" / "info" / "attributes").read_text()
    assert git(b, "status", "--porcelain") == ""


def test_notes_a_remotes_gitignore_hides_are_named_by_every_sync_and_kept(remote: Path, tmp_path: Path) -> None:
    """A `.gitignore` from elsewhere that ignores notes would stop them syncing without a word: each sync
    names the vault's notes git ignores (they stay on this machine), and says nothing once none is."""
    a, b = two_clones(remote, tmp_path)
    sync(a)
    (a / ".gitignore").write_text("*.md\n")
    commit_all(a, "ignore the notes")
    done = subprocess.run(["git", "push", "-q", "origin", "HEAD"], cwd=a, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    sync(b)  # pulls the .gitignore
    append(b, "idea", "written after the pull")
    append(b, "plans/next", "and another")

    proc = amem(b, "sync")

    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["pushed"] == []  # git ignores them: not committed, not pushed
    assert "git ignores notes of the vault, so sync leaves them on this machine: " in proc.stderr
    assert "idea.md" in proc.stderr and "plans/next.md" in proc.stderr and "seed.md" not in proc.stderr
    assert "written after the pull" in (b / "idea.md").read_text()  # kept here
    (b / ".gitignore").write_text("")
    proc = amem(b, "sync")
    assert proc.returncode == 0, proc.stderr
    assert sorted(json.loads(proc.stdout)["pushed"]) == ["idea.md", "plans/next.md"]
    assert "git ignores" not in proc.stderr


def test_an_ignored_folder_is_named_when_it_holds_a_note_and_never_walked_whole(remote: Path, tmp_path: Path) -> None:
    """Folders git ignores are named when a note lies in them; one of other files only (a build's output)
    is not, and a sync looks at no more than NOTE_SEARCH_ENTRIES of its entries."""
    from amem.sync.ignored import NOTE_SEARCH_ENTRIES

    _, b = two_clones(remote, tmp_path)
    with open(b / ".git" / "info" / "exclude", "a") as handle:
        handle.write("drafts/\nbuild/\nnode_modules/\n")
    append(b, "drafts/deep/idea", "an ignored draft")
    (b / "build" / "deep").mkdir(parents=True)
    (b / "build" / "deep" / "late.md").write_text("# beyond what a sync looks at\n")
    for n in range(NOTE_SEARCH_ENTRIES):  # the folder's own entries exhaust the search before it goes deeper
        (b / "build" / f"{n:04}.js").write_text("")
    (b / "node_modules" / "pkg").mkdir(parents=True)
    (b / "node_modules" / "pkg" / "README.md").write_text("# a package's readme, never a note\n")

    proc = amem(b, "sync")

    assert proc.returncode == 0, proc.stderr
    assert "on this machine: drafts/ (" in proc.stderr
    assert "build/" not in proc.stderr and "node_modules" not in proc.stderr


# --- 5. a SIGKILLed sync ------------------------------------------------------------------------------


def slow_git(folder: Path, step: str, flag: Path) -> str:
    """PATH with a `git` first that, on `step`, says so in `flag` and hangs (until killed)."""
    folder.mkdir()
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True, check=True).stdout.strip()
    script = folder / "git"
    script.write_text(
        textwrap.dedent(f"""\
        #!/bin/sh
        for arg in "$@"; do
          if [ "$arg" = "{step}" ]; then touch "{flag}"; sleep 30; fi
        done
        exec "{real}" "$@"
        """)
    )
    script.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


def start_sync(vault: Path, tmpdir: Path, path: str | None = None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "AMEM_VAULT": str(vault), "TMPDIR": str(tmpdir)}
    if path is not None:
        env["PATH"] = path
    return subprocess.Popen(
        [*AMEM, "sync"], env=env, cwd=vault, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def wait_for(flag: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while not flag.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)


def sync_in(vault: Path, tmpdir: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "AMEM_VAULT": str(vault), "TMPDIR": str(tmpdir)}
    return subprocess.run([*AMEM, "sync"], env=env, cwd=vault, capture_output=True, timeout=60)


@pytest.mark.parametrize("step", ["write-tree", "hash-object", "update-index", "reset"])
def test_a_sync_killed_holding_the_index_lock_is_cleared_by_the_next(remote: Path, tmp_path: Path, step: str) -> None:
    a, b = two_clones(remote, tmp_path)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    append(a, "plan", "from A")
    sync(a)
    append(b, "plan", "from B")  # both sides changed plan.md: the merge writes blobs and a merge index
    flag = tmp_path / "flag"
    proc = start_sync(b, tmpdir, slow_git(tmp_path / "bin", step, flag))
    wait_for(flag, proc)
    kill_group(proc)

    again = sync_in(b, tmpdir)

    assert again.returncode == 0, again.stderr
    assert not (b / ".git" / "index.lock").exists()
    assert list(tmpdir.iterdir()) == []  # no scratch folder holding note contents
    assert not [p for p in (b / ".git").rglob("*") if "scratch" in p.name]
    text = git(remote, "show", "HEAD:plan.md")
    assert "from A" in text and "from B" in text
    assert git(b, "status", "--porcelain") == ""


KILL_MOMENTS = [random.Random(19).uniform(0.05, 0.6) for _ in range(8)]  # eight moments, drawn once


@pytest.mark.parametrize("rounds", [range(0, 4), range(4, 8)], ids=["rounds 0-3", "rounds 4-7"])
def test_syncs_killed_at_random_moments_are_finished_by_the_next(remote: Path, tmp_path: Path, rounds: range) -> None:
    # The eight rounds in two halves on clones of their own, so that both halves can run at once: every
    # round still kills a sync at its moment of the same eight and has the next sync finish it.
    a, b = two_clones(remote, tmp_path)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    expected: list[str] = []
    for round_ in rounds:
        append(a, "log", f"a-{round_}")
        append(b, "log", f"b-{round_}")
        expected += [f"a-{round_}", f"b-{round_}"]
        sync(a)
        proc = start_sync(b, tmpdir)
        time.sleep(KILL_MOMENTS[round_])
        proc.kill()  # the sync itself; a git it started finishes on its own and releases its locks
        proc.communicate()
        lock = b / ".git" / "index.lock"
        deadline = time.monotonic() + 60  # that git may take a while on a loaded machine: the next sync comes after it
        while lock.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        again = sync_in(b, tmpdir)
        assert again.returncode == 0, again.stderr
        assert not (b / ".git" / "index.lock").exists()
        assert list(tmpdir.iterdir()) == []
    sync(a)
    text = git(remote, "show", "HEAD:log.md")
    assert all(word in text for word in expected)


def test_a_lock_amem_cannot_prove_its_own_is_reported_as_git_does(remote: Path, tmp_path: Path) -> None:
    _, b = two_clones(remote, tmp_path)
    lock = b / ".git" / "index.lock"
    lock.write_bytes(b"")  # as a crashed git leaves it
    append(b, "x", "hello")

    proc = amem(b, "sync")

    assert proc.returncode == 6
    message = error_of(proc)["message"]
    assert ".git/index.lock" in message and "remove" in message
    assert str(tmp_path) not in proc.stderr
    assert lock.exists()  # not amem's to remove
    lock.unlink()
    assert sync(b)["pushed"] == ["x.md"]


@pytest.mark.parametrize("what", ["file", "symlink"])
def test_something_else_in_place_of_amems_git_folder_is_a_git_error_and_loses_nothing(
    remote: Path, tmp_path: Path, what: str
) -> None:
    """`.git/amem` (amem's scratch folder) taken by a file or a symlink: a clear git error that names it,
    the note's change still there to commit, and the next sync, once it is gone, pushes it."""
    _, b = two_clones(remote, tmp_path)
    folder = b / ".git" / "amem"
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    if what == "file":
        folder.write_text("not a folder\n")
    else:
        (tmp_path / "elsewhere").mkdir()
        folder.symlink_to(tmp_path / "elsewhere" / "missing")
    append(b, "x", "hello")

    proc = amem(b, "sync")

    assert proc.returncode == 6, proc.stderr
    message = error_of(proc)["message"]
    assert "amem" in message and "remove" in message and "Traceback" not in proc.stderr
    assert str(tmp_path) not in proc.stderr
    assert "hello" in (b / "x.md").read_text() and "x.md" not in remote_files(remote)
    folder.unlink()
    assert sync(b)["pushed"] == ["x.md"]


# --- 6. syncs beside writes ---------------------------------------------------------------------------

WRITER = """
import sys, time
from amem.config import load_config
from amem.ops.write import write_note
config = load_config(vault=sys.argv[1])
name, stop, count = sys.argv[2], sys.argv[3], 0
import os
while not os.path.exists(stop):
    write_note(config, f"n{count % 12}", f"{name}-{count}")
    count += 1
print(count)
"""


def test_syncs_beside_writers_on_two_clones_lose_no_write(remote: Path, tmp_path: Path) -> None:
    a, b = two_clones(remote, tmp_path)
    stop = tmp_path / "stop"
    writers = {
        vault: subprocess.Popen(
            [sys.executable, "-c", WRITER, str(vault), vault.name, str(stop)], stdout=subprocess.PIPE, text=True
        )
        for vault in (a, b)
    }
    failures = []
    for n in range(12):
        proc = amem((a, b)[n % 2], "sync")
        if proc.returncode != 0:
            failures.append(proc.stderr)
    stop.touch()
    counts = {vault: int(writer.communicate(timeout=60)[0]) for vault, writer in writers.items()}
    assert failures == []
    for vault in (a, b, a):
        sync(vault)
    assert all(counts.values())
    texts = {
        "a": "".join((a / f"n{i}.md").read_text() for i in range(12)),
        "b": "".join((b / f"n{i}.md").read_text() for i in range(12)),
        "remote": "".join(git(remote, "show", f"HEAD:n{i}.md") + "\n" for i in range(12)),
    }
    for vault, count in counts.items():
        words = [f"{vault.name}-{k}\n" for k in range(count)]
        for where, text in texts.items():
            missing = [w for w in words if w not in text]
            assert missing == [], (where, missing[:5])
    assert not list(a.glob("*.conflict-*")) and not list(b.glob("*.conflict-*"))


def test_a_write_of_info_attributes_that_fails_half_way_leaves_the_users_rules_whole(tmp_path: Path) -> None:
    """Sync adds amem's line to the repository's own `info/attributes`, which may hold the user's rules: a
    write that fails part way (the disk full, here a real file-size limit in a real process) leaves the
    file as it was, never truncated or cut short."""
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    info = repo / ".git" / "info" / "attributes"
    info.parent.mkdir(exist_ok=True)
    rules = "".join(f"docs/part-{i:05d}/*.pdf binary\n" for i in range(2000))  # the user's own
    info.write_text(rules)
    info.chmod(0o640)
    script = textwrap.dedent(
        f"""
        import resource, signal
        from amem.gitvault.git import find_repository
        from amem.sync.attributes import force_note_driver
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG), as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, ({len(rules) + 8}, resource.RLIM_INFINITY))
        force_note_driver(find_repository({str(repo)!r}), "", (".md",))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)

    assert done.returncode == 0, done.stderr  # sync goes on: its own merges switch the driver in all the same
    assert info.read_text() == rules
    assert info.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in info.parent.iterdir()) == ["attributes", "exclude"]  # no temporary left
    # Without the limit the line is added, and the rules and the file's mode are kept.
    subprocess.run([sys.executable, "-c", script.replace("resource.setrlimit", "_ = ")], check=True)
    assert info.read_text() == rules + f"*.md {NOTE_ATTRIBUTES}\n"
    assert info.stat().st_mode & 0o777 == 0o640


def test_a_sync_killed_at_the_rename_of_info_attributes_leaves_a_temporary_the_next_one_removes(
    tmp_path: Path,
) -> None:
    """A real process SIGKILLed at the very moment it renames its new `info/attributes` over the old one
    leaves its temporary file in the git folder; the next sync removes it, and never a live writer's."""
    from amem.gitvault.git import find_repository
    from amem.sync.attributes import force_note_driver

    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    info = repo / ".git" / "info"
    script = textwrap.dedent(
        f"""
        import os, signal
        from amem.gitvault.git import find_repository
        from amem.sync.attributes import force_note_driver
        os.replace = lambda *args: os.kill(os.getpid(), signal.SIGKILL)
        force_note_driver(find_repository({str(repo)!r}), "", (".md",))
        """
    )
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True)
    assert killed.returncode == -signal.SIGKILL
    left = [p.name for p in info.iterdir() if p.name.endswith(".amem-tmp")]
    assert len(left) == 1 and left[0].startswith(".attributes.")
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as live:
        alive = info / f".attributes.{live.pid}-0123abcd.amem-tmp"  # a writer at work: left alone
        alive.write_text("*.md merge=amem\n")
        try:
            force_note_driver(find_repository(repo), "", (".md",))  # type: ignore[arg-type]
        finally:
            live.kill()
    assert sorted(p.name for p in info.iterdir()) == sorted(["attributes", "exclude", alive.name])
    assert (info / "attributes").read_text() == f"*.md {NOTE_ATTRIBUTES}\n"


def test_info_attributes_kept_behind_the_users_own_symlink_is_written_where_it_leads(tmp_path: Path) -> None:
    """The repository's git folder is this machine's: an `info/attributes` the user keeps as a symlink (to
    shared dotfiles) stays a symlink, and the file it leads to gets amem's line."""
    from amem.gitvault.git import find_repository
    from amem.sync.attributes import force_note_driver

    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    shared = tmp_path / "dotfiles-attributes"
    shared.write_text("*.pdf binary\n")
    info = repo / ".git" / "info" / "attributes"
    info.parent.mkdir(exist_ok=True)
    info.symlink_to(shared)

    force_note_driver(find_repository(repo), "", (".md",))  # type: ignore[arg-type]

    assert info.is_symlink() and shared.read_text() == f"*.pdf binary\n*.md {NOTE_ATTRIBUTES}\n"
