"""The guard: what a task or rule session's tool call is refused, and by which rule (docs/guard.md)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from core.agent.sandbox import PathGuard, Permission, Preset
from core.agent.tool_api import ToolEffects
from core.guard.guard import GuardedCall, ToolGuard, Verdict
from core.guard.policy import PolicyFile
from core.guard.shell_words import simple_commands


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home" / "bot" / "tasks" / "t1").mkdir(parents=True)
    (tmp_path / "home" / ".ssh").mkdir()
    (tmp_path / "tmp").mkdir()
    return tmp_path / "home"


def _check(
    home: Path,
    effects: ToolEffects,
    *,
    preset: Preset = Preset.WORKSPACE_WRITE,
    observing: bool = False,
    policy: Path | None = None,
    denied: tuple[Path, ...] = (),
) -> Verdict:
    workspace = home / "bot"
    paths = PathGuard(Permission(preset, workspace, denied=denied), home=home)
    guard = ToolGuard(PolicyFile(policy) if policy else None, temp_dir=home.parent / "tmp")
    cwd = workspace / "tasks" / "t1"
    return guard.check(GuardedCall("bash", effects, cwd, paths, observing=observing))


def _command(home: Path, command: str, **kwargs: object) -> Verdict:
    return _check(home, ToolEffects(command=command), **kwargs)  # type: ignore[arg-type]


# -- reading a command line ---------------------------------------------------------------------------


def test_a_line_is_read_as_its_simple_commands_with_their_redirections() -> None:
    found = simple_commands("ls 2>/dev/null; sudo rm -rf 'my dir' && echo ok | tee -a out.txt > log\nwc -l")
    assert [c.program for c in found] == ["ls", "rm", "echo", "tee", "wc"]
    assert found[0].writes_to == ("/dev/null",)
    assert found[1].arguments == ("-rf", "my dir")
    assert found[3].writes_to == ("log",)
    assert simple_commands("make 2>&1 >& all.log")[0].writes_to == ("all.log",)


# -- commands -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "pytest -q",
        "rm -rf build",
        "rm -r ./dist/*.o",
        "ls ~ > listing.txt",
        "echo x > /tmp/../tmp/x 2>/dev/null",
    ],
)
def test_everyday_commands_pass(home: Path, command: str) -> None:
    verdict = _command(home, command.replace("/tmp/", f"{home.parent}/tmp/"))
    assert verdict.decision == "allow", verdict


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("rm -rf /", "cmd/recursive-force-delete"),
        ("rm -rf ~", "cmd/recursive-force-delete"),
        ("rm -fr .", "cmd/recursive-force-delete"),
        ("rm -rf '' ~", "cmd/recursive-force-delete"),  # an empty word is a word, not a separator
        ("rm --rec -f ~", "cmd/recursive-force-delete"),  # GNU rm takes a long option shortened
        ("cd x && rm --recursive -f *", "cmd/recursive-force-delete"),
        ("rm -rf $TARGET", "cmd/recursive-force-delete"),
        ("rm -rf ../..", "cmd/recursive-force-delete"),  # the bot's workspace, which holds this folder
        ("rm -r ~/Documents", "cmd/recursive-force-delete"),
        ("mkfs.ext4 /dev/sdb1", "cmd/disk-format"),
        ("dd if=/dev/zero of=/dev/sda bs=1M", "cmd/disk-format"),
        ("crontab -r", "cmd/system-scheduler"),
        ("systemctl --user enable errand-helper", "cmd/system-scheduler"),
        ("reg add HKLM\\Software\\X /v a /d b", "cmd/system-registry"),
        ("sudo chmod -R 777 /", "cmd/permission-nuke"),
        ("shutdown -h now", "cmd/power"),
        (":(){ :|:& };:", "cmd/fork-bomb"),
        ("cat ~/.ssh/id_ed25519", "cmd/credential-access"),
        ("cp id_rsa /tmp/k", "cmd/credential-access"),
        ("echo x > /etc/hosts", "path/system"),
        ("echo x >> ~/notes.txt", "path/outside-folder"),
        ("date | tee ~/.bashrc", "path/outside-folder"),
    ],
)
def test_destructive_commands_are_refused_by_their_rule(home: Path, command: str, rule: str) -> None:
    verdict = _command(home, command)
    assert (verdict.decision, verdict.rule) == ("deny", rule)
    message = verdict.message("bash")
    assert message.startswith(f"[guard] blocked bash: rule {rule} — ")
    assert message.endswith("The call did not run.")


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        # Prefixes with options of their own still leave the command they run to be judged.
        ("sudo -u root rm -rf /", "cmd/recursive-force-delete"),
        ("sudo -Eu root chmod -R 777 /", "cmd/permission-nuke"),
        ("nice -n 10 rm -rf ~", "cmd/recursive-force-delete"),
        ("timeout 60 rm -rf ~", "cmd/recursive-force-delete"),
        ("timeout -s KILL 5m shutdown -h now", "cmd/power"),
        ("stdbuf -o L ionice -c 3 rm -rf ~", "cmd/recursive-force-delete"),
        ("env -u PATH FOO=1 mkfs.ext4 /dev/sdb1", "cmd/disk-format"),
        ("xargs -n 1 -P 4 rm -rf ~", "cmd/recursive-force-delete"),
        ("busybox rm -rf /", "cmd/recursive-force-delete"),
        # A line handed to another shell is judged as a line.
        ("bash -c 'rm -rf ~'", "cmd/recursive-force-delete"),
        ('sudo sh -ec "echo x > /etc/hosts"', "path/system"),
        ("bash -lc 'cd x; shutdown -h now'", "cmd/power"),
        ("eval 'mkfs.ext4 /dev/sdb1'", "cmd/disk-format"),
        ("eval rm -rf /", "cmd/recursive-force-delete"),
        # What find deletes or runs for each file it finds.
        ("find / -delete", "cmd/recursive-force-delete"),
        ("find ~ -name '*.log' -delete", "cmd/recursive-force-delete"),
        ("find ~ -exec rm -rf {} +", "cmd/recursive-force-delete"),
        ("find . -exec rm -rf {} \\;", "cmd/recursive-force-delete"),
        # The same wide target, spelled another way.
        ("chmod -R 777 /.", "cmd/permission-nuke"),
        ("chmod -R a+rwx //", "cmd/permission-nuke"),
        ("chown -R nobody $HOME/", "cmd/permission-nuke"),
        ("chmod -R 777 ~/.", "cmd/permission-nuke"),
        # Quotes do not hide a credential path.
        ("cat ~/.s's'h/id_ed25519", "cmd/credential-access"),
        ('tar czf k.tgz ~/".ss"h', "cmd/credential-access"),
    ],
)
def test_a_command_dressed_up_is_judged_as_what_it_runs(home: Path, command: str, rule: str) -> None:
    verdict = _command(home, command)
    assert (verdict.decision, verdict.rule) == ("deny", rule), verdict


@pytest.mark.parametrize(
    "command",
    [
        "timeout 60 pytest -q",
        "sudo -u me ls -la",
        "nice -n 5 make -j4",
        "bash -c 'rm -rf build && make'",
        "find . -name '*.pyc' -delete",
        "find build -type f -exec rm -f {} +",
        "find . -name '*.tmp' -exec rm -rf {} +",
        "env FOO=1 python run.py",
        "chmod -R u+w build",
    ],
)
def test_the_same_prefixes_and_shells_on_everyday_work_pass(home: Path, command: str) -> None:
    verdict = _command(home, command)
    assert verdict.decision == "allow", verdict


def test_copies_and_moves_are_judged_by_where_they_put_files(home: Path) -> None:
    for command in (
        "cp report.md ~/Desktop/",
        "mv -f out.txt ~/notes.txt",
        "cp -r build -t ~/backup",
        "install -m 755 tool ~/bin/tool",
        "ln -sf x ~/.profile-link",
    ):
        assert _command(home, command).rule == "path/outside-folder", command
    assert _command(home, "cp -a dist /etc/").rule == "path/system"
    assert _command(home, "cp ~/.ssh/config here").rule == "cmd/credential-access"
    for command in ("cp -r ../shared/data .", "mv a.txt b.txt", "cp x.txt --target-directory=out"):
        assert _command(home, command).decision == "allow", command
    assert _command(home, "cp a.txt b.txt", observing=True).rule == "observe/read-only"


def test_a_line_nested_too_deep_is_refused_rather_than_guessed(home: Path) -> None:
    line = "ls"
    for _ in range(5):
        line = f"bash -c {shlex.quote(line)}"
    verdict = _command(home, line)
    assert (verdict.decision, verdict.rule) == ("deny", "cmd/nested-shell")
    assert _command(home, "bash -c \"bash -c 'ls'\"").decision == "allow"


def test_a_full_preset_bot_may_write_anywhere_but_not_into_the_system(home: Path) -> None:
    assert _command(home, "echo x >> ~/notes.txt", preset=Preset.FULL).decision == "allow"
    assert _command(home, "echo x > /usr/local/bin/x", preset=Preset.FULL).rule == "path/system"
    assert _command(home, "rm -rf /usr", preset=Preset.FULL).rule == "cmd/recursive-force-delete"


def test_an_observing_run_may_look_but_not_send_or_write(home: Path) -> None:
    assert _command(home, "curl -s https://example.com/price", observing=True).decision == "allow"
    for looking in (
        "curl -fsSLo page.html https://example.com",
        "curl -sH 'Accept: text/html' https://x.org",
        "git -C repo log -1",
    ):
        assert _command(home, looking.replace("page.html", "/dev/null"), observing=True).decision == "allow"
    for command in (
        "curl -X POST https://example.com/hook",
        "curl -d @report.json https://example.com",
        "git push origin main",
        "scp a.txt host:",
        "curl -sX POST https://example.com/hook",
        "curl -sSXPUT https://example.com/hook",
        "curl -sd @report.json https://example.com",
        "curl -fsSLF file=@a.txt https://example.com",
        "git -C repo push",
        "git -c user.name=x --git-dir .git push origin",
        "sudo -u me scp a.txt host:",
    ):
        assert _command(home, command, observing=True).rule == "observe/sends", command
    assert _command(home, "git push origin main").decision == "allow"  # acting runs may push
    assert _command(home, "echo x > out.txt", observing=True).rule == "observe/read-only"
    sends = ToolEffects(network=True, sends=True)
    assert _check(home, sends, observing=True).rule == "observe/sends"
    assert _check(home, sends).decision == "allow"


# -- file tools -----------------------------------------------------------------------------------------


def test_file_tools_may_not_touch_credentials_git_hooks_private_data_or_the_system(home: Path) -> None:
    private = home / "errand-data"
    private.mkdir()
    assert _check(home, ToolEffects(reads=("~/.ssh/config",))).rule == "path/credential"
    # A link inside the folder that points at a key is judged by where it points.
    (home / "bot" / "tasks" / "t1" / "innocent").symlink_to(home / ".ssh")
    assert _check(home, ToolEffects(reads=("innocent/id_rsa",))).rule == "path/credential"
    assert _check(home, ToolEffects(writes=(".git/hooks/pre-commit",))).rule == "path/credential"
    assert (
        _check(home, ToolEffects(reads=(str(private / "errand.db"),)), denied=(private,)).rule
        == "path/denied"
    )
    assert _check(home, ToolEffects(writes=("/etc/cron.d/x",))).rule == "path/system"
    # Outside the folder a file tool asks a person itself (docs/permissions.md#approvals): not refused here.
    assert _check(home, ToolEffects(writes=("~/notes.txt",))).decision == "allow"
    assert _check(home, ToolEffects(writes=("report.md",)), observing=True).rule == "observe/read-only"


# -- the policy file ------------------------------------------------------------------------------------


def test_the_policy_adds_denials_paths_and_roots(home: Path) -> None:
    policy = home.parent / "guard-policy.json"
    policy.write_text(
        '{"denyCommands": [{"id": "no-docker", "pattern": "\\\\bdocker\\\\b",'
        ' "reason": "no containers here"}], "denyPaths": ["~/private"], "allowWriteRoots": ["~/builds"]}'
    )
    verdict = _command(home, "sudo docker run x", policy=policy)
    assert (verdict.rule, verdict.reason) == ("policy/no-docker", "no containers here")
    assert _check(home, ToolEffects(reads=("~/private/a",)), policy=policy).rule == "path/denied"
    assert _command(home, "make > ~/builds/log", policy=policy).decision == "allow"
    assert _command(home, "make > ~/elsewhere/log", policy=policy).rule == "path/outside-folder"


def test_an_allow_entry_lets_one_exact_command_through_and_says_what_it_overrode(home: Path) -> None:
    policy = home.parent / "guard-policy.json"
    policy.write_text(
        '{"allowCommands": [{"id": "wipe-cache", "pattern": "rm -rf ~/\\\\.cache/pip",'
        ' "reason": "the pip cache may go"}]}'
    )
    verdict = _command(home, "rm -rf ~/.cache/pip", policy=policy)
    assert verdict.decision == "allow"
    assert (verdict.rule, verdict.overrode, verdict.noteworthy) == (
        "allow/wipe-cache",
        "cmd/recursive-force-delete",
        True,
    )
    # Joined to another command it is no longer that command.
    assert _command(home, "rm -rf ~/.cache/pip; rm -rf ~", policy=policy).decision == "deny"
    assert _command(home, "rm -rf ~/.cache/pip && ls", policy=policy).decision == "deny"


def test_an_allow_entry_never_opens_credentials(home: Path) -> None:
    policy = home.parent / "guard-policy.json"
    policy.write_text('{"allowCommands": [{"id": "keys", "pattern": "cat .*", "reason": "r"}]}')
    assert _command(home, "cat ~/.ssh/id_rsa", policy=policy).rule == "cmd/credential-access"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"denyCommands": [', "line 1 column 19"),
        ('{"denyComands": []}', "unknown keys denyComands"),
        (
            '{"denyCommands": [{"id": "a", "pattern": "(", "reason": "r"}]}',
            "denyCommands[0].pattern is not a valid",
        ),
        ('{"allowCommands": [{"id": "a", "pattern": "x"}]}', "allowCommands[0].reason must be"),
        ('{"denyPaths": "~/x"}', "denyPaths must be a list"),
        ('{"enabled": "no"}', "enabled must be true or false"),
        ("[]", "one JSON object"),
    ],
)
def test_a_broken_policy_fails_closed_and_says_what_to_fix(home: Path, text: str, says: str) -> None:
    policy = home.parent / "guard-policy.json"
    policy.write_text(text)
    verdict = _command(home, "ls", policy=policy)
    assert (verdict.decision, verdict.rule) == ("deny", "policy/unreadable")
    assert says in verdict.reason
    assert str(policy) in verdict.reason


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_policy_fails_closed(home: Path) -> None:
    policy = home.parent / "guard-policy.json"
    policy.write_text("{}")
    policy.chmod(0)
    assert _command(home, "ls", policy=policy).rule == "policy/unreadable"


def test_a_fixed_policy_takes_effect_at_the_next_call(home: Path) -> None:
    policy = home.parent / "guard-policy.json"
    policy.write_text("{ not json")
    paths = PathGuard(Permission(Preset.WORKSPACE_WRITE, home / "bot"), home=home)
    guard = ToolGuard(PolicyFile(policy), temp_dir=home.parent / "tmp")
    call = GuardedCall("bash", ToolEffects(command="ls"), home / "bot", paths)
    assert guard.check(call).rule == "policy/unreadable"
    policy.write_text('{"enabled": true}')
    assert guard.check(call).decision == "allow"
    policy.unlink()
    assert guard.check(call).decision == "allow"
