"""The config loader: precedence, project-root discovery, validation naming key and file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amem.config import load_config
from amem.errors import ConfigError
from tests.conftest import write_file


def user_config(text: str) -> Path:
    from amem.paths import config_home

    return write_file(config_home() / "amem" / "config.yaml", text)


def test_defaults(isolated_env: Path) -> None:
    config = load_config()
    assert config.project_root == isolated_env
    assert config.vault_root == isolated_env / ".amem" / "memory"
    assert config.extensions == (".md",)
    assert (config.max_link_depth, config.max_search_results) == (1, 20)
    assert config.exclude_dirs == ("archive",)
    assert config.index_hidden_dirs is False and config.git_auto_commit is False
    assert config.config_files == ()
    assert config.watch.effective_sinks == ("vault",)


def test_project_root_from_a_sub_folder_with_dot_amem(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (isolated_env / "proj" / ".amem").mkdir(parents=True)
    deep = isolated_env / "proj" / "src" / "pkg"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    config = load_config()
    assert config.project_root == isolated_env / "proj"
    assert config.vault_root == isolated_env / "proj" / ".amem" / "memory"


def test_project_root_falls_back_to_git_top_level(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (isolated_env / "repo" / ".git").mkdir(parents=True)
    (isolated_env / "repo" / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(isolated_env / "repo" / "a" / "b")
    assert load_config().project_root == isolated_env / "repo"


def test_nearest_dot_amem_wins_over_git(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (isolated_env / "repo" / ".git").mkdir(parents=True)
    (isolated_env / "repo" / "sub" / ".amem").mkdir(parents=True)
    monkeypatch.chdir(isolated_env / "repo" / "sub")
    assert load_config().project_root == isolated_env / "repo" / "sub"


def test_precedence_flags_env_project_user_defaults(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (isolated_env / ".amem").mkdir()
    user_config("vaultRoot: /from/user\nmaxLinkDepth: 3\nmaxSearchResults: 7\n")
    write_file(isolated_env / ".amem" / "config.yaml", "vaultRoot: from-project\nmaxLinkDepth: 2\n")
    config = load_config()
    assert config.vault_root == isolated_env / "from-project"  # relative: against the project root
    assert config.max_link_depth == 2  # project file wins over user file, key by key
    assert config.max_search_results == 7
    assert len(config.config_files) == 2
    monkeypatch.setenv("AMEM_VAULT", "/from/env")
    assert load_config().vault_root == Path("/from/env")
    assert load_config(vault="/from/flag").vault_root == Path("/from/flag")


def test_named_config_file_replaces_both(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user_config("maxLinkDepth: 3\n")
    named = write_file(isolated_env / "only.yaml", "maxSearchResults: 5\n")
    config = load_config(config_file=str(named))
    assert config.max_link_depth == 1 and config.max_search_results == 5
    assert config.config_files == (named,)
    monkeypatch.setenv("AMEM_CONFIG", str(named))
    assert load_config().config_files == (named,)


def test_missing_named_config_is_an_error(isolated_env: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(config_file="nope.yaml")


@pytest.mark.parametrize(
    "text, key",
    [
        ("maxLinkDepth: -1\n", "maxLinkDepth"),
        ("maxLinkDepth: deep\n", "maxLinkDepth"),
        ("maxSearchResults: 0\n", "maxSearchResults"),
        ("extensions: .md\n", "extensions"),
        ("extensions: []\n", "extensions"),
        ("extensions: [md]\n", "extensions"),
        ("indexHiddenDirs: yes please\n", "indexHiddenDirs"),
        ("excludeDirs: archive\n", "excludeDirs"),
        ("timezone: Mars/Olympus\n", "timezone"),
        ("timezone: +25:00\n", "timezone"),
        ("git: {autoCommit: sometimes}\n", "git.autoCommit"),
        ("watch: {ignore: ['(unclosed']}\n", "watch.ignore"),
        ("watch: {sinks: [email]}\n", "watch.sinks"),
        ("watch: {debounceMs: -5}\n", "watch.debounceMs"),
        ("watch: []\n", "watch"),
    ],
)
def test_invalid_values_name_key_and_file(isolated_env: Path, text: str, key: str) -> None:
    path = user_config(text)
    with pytest.raises(ConfigError) as info:
        load_config()
    assert info.value.message.startswith(f"{key} in {path}")
    assert info.value.exit_code == 7


def test_yaml_syntax_error_names_file_and_line(isolated_env: Path) -> None:
    path = user_config("a: 1\nb: [\n")
    with pytest.raises(ConfigError) as info:
        load_config()
    assert str(path) in info.value.message and "line" in info.value.message


def test_top_level_must_be_a_mapping(isolated_env: Path) -> None:
    user_config("- a\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config()


def test_unknown_keys_warn(isolated_env: Path) -> None:
    user_config("vaultroot: x\nwatch: {dirz: []}\n")
    warnings = load_config().warnings
    assert any("'vaultroot'" in w for w in warnings)
    assert any("'watch.dirz'" in w for w in warnings)


def test_timezones(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import datetime, timedelta

    user_config("timezone: Asia/Shanghai\n")
    tz = load_config().tz
    assert tz is not None and datetime(2026, 1, 1, tzinfo=tz).utcoffset() == timedelta(hours=8)
    monkeypatch.setenv("AMEM_TZ", "-05:30")
    tz = load_config().tz
    assert tz is not None and datetime(2026, 1, 1, tzinfo=tz).utcoffset() == -timedelta(hours=5, minutes=30)
    monkeypatch.setenv("AMEM_TZ", "nowhere")
    with pytest.raises(ConfigError, match="AMEM_TZ"):
        load_config()


def test_watch_environment(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user_config("watch: {url: 'http://cfg:1/', project: cfgproj, dirs: [a]}\n")
    monkeypatch.setenv("AGENTMEMORY_FS_WATCH_DIRS", " /x , /y ,, ")
    monkeypatch.setenv("AGENTMEMORY_FS_WATCH_IGNORE", r"foo$, ^bar")
    monkeypatch.setenv("AGENTMEMORY_FS_WATCH_ALLOW_BINARY", "1")
    monkeypatch.setenv("AGENTMEMORY_URL", "http://env:3111///")
    monkeypatch.setenv("AGENTMEMORY_PROJECT", "old")
    monkeypatch.setenv("AGENTMEMORY_PROJECT_NAME", "  new  ")
    watch = load_config().watch
    assert watch.dirs == ("/x", "/y")
    assert watch.ignore == ("foo$", "^bar")
    assert watch.allow_binary is True
    assert watch.url == "http://env:3111"
    assert watch.project == "new"
    assert watch.effective_sinks == ("server",)


def test_blank_watch_variables_count_as_unset(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTMEMORY_PROJECT_NAME", "   ")
    monkeypatch.setenv("AGENTMEMORY_PROJECT", " legacy ")
    monkeypatch.setenv("AGENTMEMORY_URL", "")
    watch = load_config().watch
    assert watch.project == "legacy"
    assert watch.url is None and watch.server_url == "http://localhost:3111"


def test_bad_ignore_regex_in_environment(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTMEMORY_FS_WATCH_IGNORE", "ok,(bad")
    with pytest.raises(ConfigError, match="AGENTMEMORY_FS_WATCH_IGNORE"):
        load_config()


def test_flags_win_over_everything_and_are_checked_like_the_rest(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from amem.errors import UsageError

    user_config("watch: {url: 'http://cfg:1', ignore: ['a$'], debounceMs: 900}\n")
    monkeypatch.setenv("AGENTMEMORY_URL", "http://env:2")
    flags: dict[str, object] = {"watch.url": " http://flag:3/ ", "watch.ignore": ("b$", "a$"), "watch.debounceMs": 0}
    watch = load_config(flags=flags).watch
    assert watch.url == "http://flag:3"
    assert watch.ignore == ("a$", "b$")  # a flag adds to the ignore list, once each
    assert watch.debounce_ms == 0
    assert load_config(flags={"watch.url": "  ", "watch.debounceMs": None}).watch.url == "http://env:2"
    with pytest.raises(UsageError, match=r"^--ignore '\(' is not a valid regular expression"):
        load_config(flags={"watch.ignore": ("(",)})
    with pytest.raises(UsageError, match="^--sink: unknown sink 'email'"):
        load_config(flags={"watch.sinks": ("email",)})


def test_every_key_is_declared_once_with_its_default(isolated_env: Path) -> None:
    from amem.config import KEYS

    config = load_config()
    for key in KEYS:
        if key.name != "vaultRoot":
            holder = config.watch if key.name.startswith("watch.") else config
            assert getattr(holder, key.field) == key.default, key.name
    assert len({key.name for key in KEYS}) == len(KEYS)


#: For each setting an environment variable can give: the variable's text, the file's value it must win
#: over, and what the loaded setting must then be (for dirs, relative to the working directory).
_ENV_CASES: dict[str, tuple[str, str, object]] = {
    "vaultRoot": (" env-vault ", "vaultRoot: file-vault", "work/env-vault"),
    "timezone": (" +02:00 ", "timezone: UTC", "+02:00"),
    "watch.dirs": (" a , b ,, ", "watch: {dirs: [f]}", ("work/a", "work/b")),
    "watch.ignore": ("x$, ^y, x$", "watch: {ignore: [f]}", ("x$", "^y")),
    "watch.allowBinary": (" Yes ", "watch: {allowBinary: false}", True),
    "watch.url": (" http://env:1// ", "watch: {url: 'http://file:2'}", "http://env:1"),
    "watch.secret": (" s3cret ", "watch: {secret: f}", "s3cret"),
    "watch.project": (" envproj ", "watch: {project: f}", "envproj"),
    "watch.sessionId": (" sess ", "watch: {sessionId: f}", "sess"),
    "semantic.model": (" minilm ", "semantic: {model: static}", "minilm"),
}


def _setting(key_name: str, isolated_env: Path) -> object:
    from amem.config import KEYS

    config = load_config()
    if key_name == "vaultRoot":
        return config.vault_root.relative_to(isolated_env.parent).as_posix()
    key = next(key for key in KEYS if key.name == key_name)
    value = getattr(config.watch if key_name.startswith("watch.") else config, key.field)
    if key_name == "watch.dirs":
        return tuple(Path(d).relative_to(isolated_env.parent).as_posix() for d in value)
    return value


def test_the_environment_variables_are_declared_in_the_keys_table() -> None:
    from amem.config import KEYS

    declared = {key.name: key.env for key in KEYS if key.env}
    assert set(declared) == set(_ENV_CASES)
    assert declared["watch.project"] == ("AGENTMEMORY_PROJECT_NAME", "AGENTMEMORY_PROJECT")
    assert declared["vaultRoot"] == ("AMEM_VAULT",) and declared["timezone"] == ("AMEM_TZ",)
    every = [name for names in declared.values() for name in names]
    assert len(every) == len(set(every))


@pytest.mark.parametrize("key_name", sorted(_ENV_CASES))
def test_each_variable_wins_over_the_file_and_blank_is_unset(
    key_name: str, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from amem.config import KEYS

    text, file_line, expected = _ENV_CASES[key_name]
    (variable, *aliases) = next(key for key in KEYS if key.name == key_name).env
    user_config(file_line + "\n")
    from_file = _setting(key_name, isolated_env)
    monkeypatch.setenv(variable, text)
    assert _setting(key_name, isolated_env) == expected
    for alias in aliases:  # an older name counts only when the newer one is unset or blank
        monkeypatch.setenv(alias, "older")
        assert _setting(key_name, isolated_env) == expected
        monkeypatch.setenv(variable, "  ")
        assert _setting(key_name, isolated_env) == "older"
        monkeypatch.delenv(alias)
    monkeypatch.setenv(variable, " \t ")
    assert _setting(key_name, isolated_env) == from_file


def test_semantic_is_a_switch_or_a_mapping_with_its_model(isolated_env: Path) -> None:
    from amem.paths import config_home

    assert load_config().semantic_model == "static" and load_config().semantic is False
    user_config("semantic: true\n")
    assert load_config().semantic is True and load_config().semantic_model == "static"
    user_config("semantic: {enabled: true, model: minilm}\n")
    assert (load_config().semantic, load_config().semantic_model) == (True, "minilm")
    user_config("semantic:\n  model: models/mine\n")  # a folder, from the file's own folder
    config = load_config()
    assert config.semantic is False
    assert config.semantic_model == str(config_home() / "amem" / "models" / "mine")


@pytest.mark.parametrize("line", ["semantic: {model: ''}", "semantic: {model: [a]}", "semantic: {size: 3}"])
def test_a_bad_semantic_mapping_is_a_config_error_or_a_warning(line: str, isolated_env: Path) -> None:
    user_config(line + "\n")
    if "size" in line:
        assert any("semantic.size" in warning for warning in load_config().warnings)
        return
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert "semantic.model" in str(caught.value)


# --- the config's folders as strings, spelled as pathlib spells them -----------------------------------

_SEGMENTS = st.sampled_from(["", ".", "..", "a", "b c", "~", ".amem", " x "])


@given(st.lists(_SEGMENTS, max_size=6), st.sampled_from(["", "/", "//", "///"]), st.booleans())
def test_pure_path_spells_a_path_as_pathlib_does(segments: list[str], root: str, trailing: bool) -> None:
    from pathlib import PurePosixPath

    from amem.paths import pure_path

    path = root + "/".join(segments) + ("/" if trailing else "")
    assert pure_path(path) == str(PurePosixPath(path))


@given(st.lists(_SEGMENTS, max_size=4), st.lists(_SEGMENTS, max_size=4), st.sampled_from(["", "/", "//"]))
def test_join_path_joins_as_pathlib_does(base: list[str], rest: list[str], root: str) -> None:
    from amem.paths import join_path

    start, path = "/" + "/".join(base), root + "/".join(rest)
    assert join_path(start, path) == str(Path(start) / path)


def test_folder_checks_answer_as_pathlib_does(tmp_path: Path) -> None:
    from amem.paths import is_file, is_folder

    write_file(tmp_path / "f", "x")
    os.symlink("loop", tmp_path / "loop")
    os.symlink(tmp_path / "f", tmp_path / "to-file")
    for name in ("f", "missing", "f/under-a-file", "loop", "to-file", "."):
        path = tmp_path / name
        assert (is_folder(str(path)), is_file(str(path))) == (path.is_dir(), path.is_file()), name


def test_the_config_gives_its_folders_as_strings_and_as_paths(isolated_env: Path) -> None:
    config = load_config(vault="./v//notes/")
    assert config.vault_dir == str(isolated_env / "v" / "notes") and config.vault_root == Path(config.vault_dir)
    assert config.work_dir == str(isolated_env) and config.cwd == isolated_env
    assert config.cache_dir == Path(config.cache_folder)
    assert config.with_vault(isolated_env / "other").vault_dir == str(isolated_env / "other")
