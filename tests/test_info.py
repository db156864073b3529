"""amem info: the identity envelope, the --expect-* checks and the write preflight; strictly read-only."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import amem as amem_package
from amem.info import Expectations, build_info

PACKAGE_DIR = Path(os.path.dirname(os.path.abspath(amem_package.__file__)))
FIELDS = {
    "version",
    "moduleRoot",
    "bundle",
    "profile",
    "cwd",
    "projectRoot",
    "vaultRoot",
    "vaultExists",
    "gitRepository",
    "configFiles",
    "fingerprint",
    "expected",
    "mismatches",
    "trust",
    "warnings",
    "preflight",
}


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_envelope_without_expectations_is_not_safe(isolated_env: Path, amem: Any) -> None:
    result = amem("info")

    assert result.exit_code == 0, result.stderr
    data = result.json
    assert set(data) == FIELDS
    assert data["version"] == amem_package.__version__
    assert data["moduleRoot"] == str(PACKAGE_DIR)
    assert data["cwd"] == str(isolated_env)
    assert data["projectRoot"] == str(isolated_env)
    assert data["vaultRoot"] == str(isolated_env / ".amem" / "memory")
    assert data["vaultExists"] is False
    assert data["gitRepository"] is False
    assert data["configFiles"] == []
    assert data["profile"] is None
    assert data["bundle"] == {"name": "", "version": ""}
    assert data["fingerprint"].startswith("sha256:")
    assert data["expected"] == {"cwd": None, "vaultRoot": None, "moduleRoot": None, "profile": None}
    assert data["mismatches"] == []
    assert data["preflight"]["safeToWrite"] is False
    assert data["preflight"]["reasons"] == ["--expect-cwd was not given", "--expect-vault was not given"]


def test_matching_absolute_expectations_are_safe(isolated_env: Path, amem: Any) -> None:
    vault = isolated_env / ".amem" / "memory"
    result = amem(
        "info",
        "--expect-cwd",
        str(isolated_env),
        "--expect-vault",
        str(vault),
        "--expect-module-root",
        str(PACKAGE_DIR.parent),
    )
    assert result.exit_code == 0, result.stderr
    data = result.json
    assert data["preflight"] == {"safeToWrite": True, "reasons": []}
    assert data["expected"]["cwd"] == str(isolated_env)
    assert data["mismatches"] == []


def test_only_one_expectation_is_not_enough(isolated_env: Path, amem: Any) -> None:
    data = amem("info", "--expect-cwd", str(isolated_env)).json
    assert data["preflight"]["safeToWrite"] is False
    assert data["preflight"]["reasons"] == ["--expect-vault was not given"]


def test_relative_expectations_are_reasons_against_writing(isolated_env: Path, amem: Any) -> None:
    result = amem("info", "--expect-cwd", ".", "--expect-vault", ".amem/memory")
    assert result.exit_code == 0, result.stderr
    data = result.json
    assert data["mismatches"] == []
    assert data["preflight"]["safeToWrite"] is False
    assert len(data["preflight"]["reasons"]) == 2
    assert all("relative" in reason for reason in data["preflight"]["reasons"])


def test_a_symlink_that_resolves_elsewhere_is_a_mismatch(isolated_env: Path, tmp_path: Path, amem: Any) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "link-to-elsewhere"
    link.symlink_to(elsewhere)
    vault = isolated_env / ".amem" / "memory"

    result = amem("info", "--expect-cwd", str(link), "--expect-vault", str(vault))

    assert result.exit_code == 8
    assert result.error["code"] == "mismatch"
    data = result.json  # the envelope still arrives on stdout
    assert data["mismatches"] == [{"field": "cwd", "expected": str(link), "actual": str(isolated_env)}]
    assert data["preflight"]["safeToWrite"] is False
    assert "cwd does not match the expectation" in data["preflight"]["reasons"]


def test_a_symlink_that_resolves_to_the_same_place_matches(isolated_env: Path, tmp_path: Path, amem: Any) -> None:
    link = tmp_path / "link-to-work"
    link.symlink_to(isolated_env)
    vault_via_link = link / ".amem" / "memory"
    data = amem("info", "--expect-cwd", str(link), "--expect-vault", str(vault_via_link)).json
    assert data["mismatches"] == []
    assert data["preflight"]["safeToWrite"] is True


def test_vault_mismatch(isolated_env: Path, tmp_path: Path, amem: Any) -> None:
    result = amem("info", "--expect-cwd", str(isolated_env), "--expect-vault", str(tmp_path / "other-vault"))
    assert result.exit_code == 8
    assert [m["field"] for m in result.json["mismatches"]] == ["vaultRoot"]


def test_module_root_containment(isolated_env: Path, tmp_path: Path, amem: Any) -> None:
    assert amem("info", "--expect-module-root", str(PACKAGE_DIR)).exit_code == 0
    assert amem("info", "--expect-module-root", str(PACKAGE_DIR.parent)).exit_code == 0

    outside = amem("info", "--expect-module-root", str(tmp_path))
    assert outside.exit_code == 8
    assert outside.json["mismatches"] == [
        {"field": "moduleRoot", "expected": str(tmp_path), "actual": str(PACKAGE_DIR)}
    ]

    # A sibling whose name merely starts like the package folder does not contain it.
    prefix = amem("info", "--expect-module-root", str(PACKAGE_DIR) + "-other")
    assert prefix.exit_code == 8

    # Lexically inside a symlink to the package's parent, but that is not where Python loaded it from.
    link = tmp_path / "link-to-package-parent"
    link.symlink_to(PACKAGE_DIR.parent)
    assert amem("info", "--expect-module-root", str(link)).exit_code == 8


def test_module_root_needs_lexical_and_real_containment(tmp_path: Path, config: Any) -> None:
    real_pkg = tmp_path / "real" / "amem"
    real_pkg.mkdir(parents=True)
    install = tmp_path / "install"
    install.mkdir()
    (install / "amem").symlink_to(real_pkg)  # lexically in install/, really in real/

    def mismatched(package_root: Path, expected: Path) -> bool:
        data = build_info(config, Expectations(module_root=str(expected)), package_root=package_root)
        return bool(data["mismatches"])

    assert mismatched(install / "amem", install)  # realpath leaves install/
    assert mismatched(install / "amem", tmp_path / "real")  # lexically not inside real/
    assert not mismatched(real_pkg, tmp_path / "real")
    assert not mismatched(install / "amem", tmp_path)  # both views lie inside tmp_path


def test_profile_unknown_is_a_warning_contradiction_is_a_mismatch(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, amem: Any
) -> None:
    vault = str(isolated_env / ".amem" / "memory")
    base = ("info", "--expect-cwd", str(isolated_env), "--expect-vault", vault, "--expect-profile", "prod")

    unknown = amem(*base)
    assert unknown.exit_code == 0, unknown.stderr
    assert unknown.json["mismatches"] == []
    assert any("profile is unknown" in w for w in unknown.json["warnings"])
    # The profile is only a hint: its absence does not block a proven cwd and vault.
    assert unknown.json["preflight"]["safeToWrite"] is True

    monkeypatch.setenv("AMEM_PROFILE", "dev")
    contradicted = amem(*base)
    assert contradicted.exit_code == 8
    assert contradicted.json["profile"] == "dev"
    assert contradicted.json["mismatches"] == [{"field": "profile", "expected": "prod", "actual": "dev"}]
    assert contradicted.json["preflight"]["safeToWrite"] is False

    monkeypatch.setenv("AMEM_PROFILE", "prod")
    agreed = amem(*base)
    assert agreed.exit_code == 0
    assert agreed.json["warnings"] == []


def test_fingerprint_is_stable_and_tracks_identity(isolated_env: Path, tmp_path: Path, amem: Any) -> None:
    first = amem("info").json["fingerprint"]
    assert amem("info").json["fingerprint"] == first
    # Expectations are not identity, and neither is whether the vault exists yet.
    assert amem("info", "--expect-cwd", "/nowhere").json["fingerprint"] == first
    (isolated_env / ".amem" / "memory").mkdir(parents=True)
    assert amem("info").json["fingerprint"] == first
    assert amem("--vault", str(tmp_path / "v2"), "info").json["fingerprint"] != first


def test_reports_vault_git_bundle_and_config_files(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, amem: Any
) -> None:
    (isolated_env / ".amem").mkdir()
    config_file = isolated_env / ".amem" / "config.yaml"
    config_file.write_text("bundleName: team-memory\nbundleVersion: 1.2.3\n")
    (isolated_env / ".amem" / "memory").mkdir()
    subprocess.run(["git", "init", "-q", str(isolated_env)], check=True)
    sub = isolated_env / "src"
    sub.mkdir()
    monkeypatch.chdir(sub)  # from a sub-folder the same project and vault are found

    data = amem("info").json

    assert data["projectRoot"] == str(isolated_env)
    assert data["vaultExists"] is True
    assert data["gitRepository"] is True
    assert data["bundle"] == {"name": "team-memory", "version": "1.2.3"}
    assert data["configFiles"] == [str(config_file)]
    assert data["cwd"] == str(sub)


def test_info_in_an_empty_directory_creates_nothing(tmp_path: Path, amem: Any) -> None:
    before = tree(tmp_path)
    result = amem(
        "info", "--expect-cwd", str(tmp_path / "work"), "--expect-vault", str(tmp_path / "work" / ".amem" / "memory")
    )
    assert result.exit_code == 0, result.stderr
    assert tree(tmp_path) == before  # no vault, no .amem, no cache, no state, no repository


def test_build_info_is_plain_data(config: Any) -> None:
    data = build_info(config, Expectations())
    json.dumps(data)  # serialisable as is
    assert data["vaultRoot"] == str(config.vault_root)


@pytest.mark.skipif(shutil.which("amem") is None, reason="the amem console script is not installed")
def test_installed_amem_info_creates_nothing_and_fails_closed(tmp_path: Path, isolated_env: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    before = tree(tmp_path)

    ok = subprocess.run(
        ["amem", "info", "--expect-cwd", str(empty), "--expect-vault", str(empty / ".amem" / "memory")],
        cwd=empty,
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["preflight"]["safeToWrite"] is True

    wrong = subprocess.run(
        ["amem", "info", "--expect-cwd", str(tmp_path)],
        cwd=empty,
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        check=False,
    )
    assert wrong.returncode == 8
    assert json.loads(wrong.stdout)["mismatches"][0]["field"] == "cwd"
    assert json.loads(wrong.stderr.splitlines()[-1])["error"]["code"] == "mismatch"
    assert tree(tmp_path) == before
