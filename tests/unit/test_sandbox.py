"""Permission presets, the path guard and the bubblewrap shell sandbox (real bwrap when it works here)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from core.agent.sandbox import (
    PathGuard,
    Permission,
    Preset,
    Refused,
    ShellSandbox,
    is_credential_path,
)
from core.agent.tool_api import ToolError


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("SECRET-KEY\n")
    (home / ".netrc").write_text("machine example.com password NETRC-PW\n")
    (home / "notes.txt").write_text("hello notes\n")
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def guard(preset: Preset, workspace: Path, home: Path, **kw: tuple[Path, ...]) -> PathGuard:
    return PathGuard(Permission(preset, workspace, **kw), home=home)


# -- presets ---------------------------------------------------------------------------------------------


def test_preset_parse_accepts_names_and_lists_valid_ones_on_error() -> None:
    assert Preset.parse("workspace-write") is Preset.WORKSPACE_WRITE
    assert Preset.parse(" Read-Only ") is Preset.READ_ONLY
    with pytest.raises(ValueError, match="read-only, workspace-write, full"):
        Preset.parse("admin")


# -- path guard ------------------------------------------------------------------------------------------


def test_write_outside_workspace_is_refused_with_reason(workspace: Path, home: Path, tmp_path: Path) -> None:
    g = guard(Preset.WORKSPACE_WRITE, workspace, home)
    with pytest.raises(Refused) as err:
        g.resolve_write(str(tmp_path / "elsewhere.txt"), workspace)
    assert str(err.value) == (
        f"Refused: {tmp_path / 'elsewhere.txt'} is outside the workspace ({workspace}). "
        "This bot may write only inside its workspace."
    )
    assert err.value.kind == "outside_workspace"
    assert isinstance(err.value, ToolError)


def test_write_inside_workspace_resolves_relative_to_cwd(workspace: Path, home: Path) -> None:
    (workspace / "sub").mkdir()
    g = guard(Preset.WORKSPACE_WRITE, workspace, home)
    assert g.resolve_write("../a.txt", workspace / "sub") == workspace / "a.txt"
    assert g.resolve_write("new/dir/b.txt", workspace) == workspace / "new" / "dir" / "b.txt"


def test_extra_writable_roots_are_writable(workspace: Path, home: Path, tmp_path: Path) -> None:
    extra = tmp_path / "shared"
    extra.mkdir()
    g = guard(Preset.WORKSPACE_WRITE, workspace, home, extra_writable=(extra,))
    assert g.resolve_write(str(extra / "x"), workspace) == extra / "x"


@pytest.mark.parametrize("preset", list(Preset))
def test_credentials_are_refused_in_every_preset(preset: Preset, workspace: Path, home: Path) -> None:
    g = guard(preset, workspace, home)
    with pytest.raises(Refused, match=r"^Refused: ~/\.ssh/id_rsa is a credential path; tools never read"):
        g.resolve_read("~/.ssh/id_rsa", workspace)
    with pytest.raises(Refused, match="credential path"):
        g.resolve_read(str(home / ".netrc"), workspace)
    with pytest.raises(Refused, match="credential path"):
        g.resolve_read("~/.ssh", workspace)
    with pytest.raises(Refused, match="credential path"):
        g.resolve_write("~/.aws/credentials", workspace)


def test_reads_elsewhere_are_allowed(workspace: Path, home: Path, tmp_path: Path) -> None:
    g = guard(Preset.READ_ONLY, workspace, home)
    assert g.resolve_read("~/notes.txt", workspace) == home / "notes.txt"
    assert g.resolve_read(str(tmp_path / "anything"), workspace) == tmp_path / "anything"
    assert g.resolve_read("/etc/hostname", workspace) == Path(os.path.realpath("/etc/hostname"))


def test_git_config_is_refused_anywhere_but_other_git_files_are_not(workspace: Path, home: Path) -> None:
    (workspace / "repo" / ".git").mkdir(parents=True)
    g = guard(Preset.FULL, workspace, home)
    with pytest.raises(Refused, match="credential path"):
        g.resolve_read("repo/.git/config", workspace)
    assert g.resolve_read("repo/.git/HEAD", workspace) == workspace / "repo" / ".git" / "HEAD"
    assert g.resolve_read("repo/config", workspace) == workspace / "repo" / "config"


def test_symlink_is_judged_by_its_target(workspace: Path, home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "escape").symlink_to(outside)
    (workspace / "keys").symlink_to(home / ".ssh")
    g = guard(Preset.WORKSPACE_WRITE, workspace, home)
    with pytest.raises(Refused, match="outside the workspace"):
        g.resolve_write("escape/evil.txt", workspace)
    assert g.resolve_read("escape/fine.txt", workspace) == outside / "fine.txt"
    with pytest.raises(Refused, match="credential path"):
        g.resolve_read("keys/id_rsa", workspace)


def test_read_only_refuses_every_write(workspace: Path, home: Path) -> None:
    g = guard(Preset.READ_ONLY, workspace, home)
    with pytest.raises(Refused, match="read-only") as err:
        g.resolve_write("inside.txt", workspace)
    assert err.value.kind == "read_only"


def test_full_writes_anywhere_but_credentials(workspace: Path, home: Path, tmp_path: Path) -> None:
    g = guard(Preset.FULL, workspace, home)
    assert g.resolve_write(str(tmp_path / "x"), workspace) == tmp_path / "x"
    with pytest.raises(Refused, match="credential path"):
        g.resolve_write("~/.git-credentials", workspace)


def test_denied_roots_are_never_readable(workspace: Path, home: Path, tmp_path: Path) -> None:
    private = tmp_path / "appdata"
    g = guard(Preset.FULL, workspace, home, denied=(private,))
    with pytest.raises(Refused, match="app's private data") as err:
        g.resolve_read(str(private / "errand.db"), workspace)
    assert err.value.kind == "denied"


def test_empty_path_is_a_clear_error(workspace: Path, home: Path) -> None:
    with pytest.raises(ToolError, match="empty"):
        guard(Preset.FULL, workspace, home).resolve_read("  ", workspace)


def test_is_credential_path(home: Path) -> None:
    assert is_credential_path(home / ".ssh" / "known_hosts", home)
    assert is_credential_path(home / ".config" / "gh" / "hosts.yml", home)
    assert is_credential_path(Path("/srv/project/.git/config"), home)
    assert not is_credential_path(home / ".config" / "gh" / "config.yml", home)
    assert not is_credential_path(home / "notes.txt", home)


# -- shell sandbox: argv ---------------------------------------------------------------------------------


def test_without_bwrap_commands_run_plainly_and_the_user_is_told(workspace: Path, home: Path) -> None:
    perm = Permission(Preset.WORKSPACE_WRITE, workspace)
    sandbox = ShellSandbox(perm, home, bwrap=None, reason="bubblewrap is not installed")
    assert not sandbox.available
    assert sandbox.wrap("echo hi", workspace) == ["bash", "-c", "echo hi"]
    assert sandbox.description.startswith("No OS sandbox is available (bubblewrap is not installed)")
    assert "apt install bubblewrap" in sandbox.description


def test_full_preset_runs_plainly_even_with_bwrap(workspace: Path, home: Path) -> None:
    sandbox = ShellSandbox(Permission(Preset.FULL, workspace), home, bwrap="/usr/bin/bwrap")
    assert sandbox.wrap("ls", workspace) == ["bash", "-c", "ls"]
    assert "full rights" in sandbox.description


def test_bwrap_argv_binds_workspace_and_masks_credentials_after_it(home: Path) -> None:
    # The workspace is the home itself, so the mask on ~/.ssh must come after the writable bind.
    sandbox = ShellSandbox(Permission(Preset.WORKSPACE_WRITE, home), home, bwrap="/usr/bin/bwrap")
    argv = sandbox.wrap("echo hi", home)
    assert argv[:9] == [
        "/usr/bin/bwrap",
        "--die-with-parent",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    assert argv[-6:] == ["--chdir", str(home), "--", "bash", "-c", "echo hi"]
    joined = " ".join(argv)
    assert f"--bind {home} {home}" in joined
    assert f"--tmpfs {home / '.ssh'}" in joined
    assert f"--ro-bind /dev/null {home / '.netrc'}" in joined
    assert joined.index(f"--bind {home} {home}") < joined.index(f"--tmpfs {home / '.ssh'}")
    assert joined.index("--tmpfs /tmp ") < joined.index(f"--bind {home} {home}")
    assert str(home / ".aws") not in joined  # only existing credential paths are masked
    assert sandbox.description.endswith("only the workspace is writable.")


def test_bwrap_argv_kept_between_calls_follows_paths_made_or_relinked_mid_session(
    home: Path, tmp_path: Path
) -> None:
    sandbox = ShellSandbox(Permission(Preset.WORKSPACE_WRITE, home), home, bwrap="/usr/bin/bwrap")
    assert str(home / ".aws") not in " ".join(sandbox.wrap("true", home))

    (home / ".aws").mkdir()
    argv = sandbox.wrap("echo second", home)
    assert f"--tmpfs {home / '.aws'}" in " ".join(argv)
    assert argv[-6:] == ["--chdir", str(home), "--", "bash", "-c", "echo second"]

    vault = tmp_path / "vault"
    vault.mkdir()
    (home / ".aws").rmdir()
    (home / ".aws").symlink_to(vault)
    assert f"--tmpfs {vault}" in " ".join(sandbox.wrap("true", home))

    other = tmp_path / "vault2"
    other.mkdir()
    (home / ".aws").unlink()
    (home / ".aws").symlink_to(other)
    joined = " ".join(sandbox.wrap("true", home))
    assert f"--tmpfs {other}" in joined
    assert f"--tmpfs {vault} " not in joined

    sub = home / "project"
    sub.mkdir()
    assert sandbox.wrap("true", sub)[-6:-4] == ["--chdir", str(sub)]


def test_bwrap_argv_read_only_binds_nothing_writable(workspace: Path, home: Path) -> None:
    sandbox = ShellSandbox(Permission(Preset.READ_ONLY, workspace), home, bwrap="/usr/bin/bwrap")
    argv = sandbox.wrap("ls", workspace)
    assert "--bind" not in argv
    assert "read-only" in sandbox.description


# -- shell sandbox: real bubblewrap ----------------------------------------------------------------------


def _detect(perm: Permission, home: Path) -> ShellSandbox:
    sandbox = ShellSandbox.detect(perm, home=home)
    if not sandbox.available:
        pytest.skip(sandbox.description)
    return sandbox


def _run(sandbox: ShellSandbox, command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        sandbox.wrap(command, cwd), cwd=cwd, capture_output=True, text=True, timeout=30, check=False
    )


def test_bwrap_workspace_write_confines_writes(workspace: Path, home: Path, tmp_path: Path) -> None:
    sandbox = _detect(Permission(Preset.WORKSPACE_WRITE, workspace), home)
    assert "bubblewrap" in sandbox.description
    outside = tmp_path / "outside"
    outside.mkdir()
    etc_file = Path("/etc/errand-sandbox-test")
    try:
        denied = _run(sandbox, f"touch {etc_file}", workspace)
        assert denied.returncode != 0
        assert not etc_file.exists()
    finally:
        etc_file.unlink(missing_ok=True)
    # Whatever the command believes it wrote outside, nothing reaches the real file system.
    _run(sandbox, f"mkdir -p {outside} && echo leak > {outside}/leak.txt", workspace)
    assert not (outside / "leak.txt").exists()
    inside = _run(sandbox, "echo kept > inside.txt && cat /etc/hostname >/dev/null", workspace)
    assert inside.returncode == 0, inside.stderr
    assert (workspace / "inside.txt").read_text() == "kept\n"


def test_bwrap_hides_credentials_and_denied_dirs(home: Path, tmp_path: Path) -> None:
    private = home / "appdata"
    private.mkdir()
    (private / "errand.db").write_text("PRIVATE-DB")
    # The whole fake home is the workspace, so only the masks keep its secrets out.
    sandbox = _detect(Permission(Preset.WORKSPACE_WRITE, home, denied=(private,)), home)
    done = _run(
        sandbox,
        f"cat {home}/notes.txt; cat {home}/.ssh/id_rsa; cat {home}/.netrc; cat {private}/errand.db; true",
        home,
    )
    assert "hello notes" in done.stdout
    assert "SECRET-KEY" not in done.stdout
    assert "NETRC-PW" not in done.stdout
    assert "PRIVATE-DB" not in done.stdout
    assert (home / ".ssh" / "id_rsa").read_text() == "SECRET-KEY\n"


def test_bwrap_read_only_can_read_but_not_write_the_workspace(workspace: Path, home: Path) -> None:
    (workspace / "data.txt").write_text("readable\n")
    sandbox = _detect(Permission(Preset.READ_ONLY, workspace), home)
    done = _run(sandbox, "cat data.txt; echo x > new.txt", workspace)
    assert "readable" in done.stdout
    assert done.returncode != 0
    assert not (workspace / "new.txt").exists()
