"""The guard (docs/guard.md): every tool call of a task or rule session is judged before it runs, from what
its arguments say it would touch. A refusal names its rule and why; the call does not run.

It is a policy on tool arguments, not an OS sandbox: a program a command starts can still do what the
shell sandbox lets it (docs/permissions.md). What it stops is what a run gone astray does directly: a
recursive delete of the wrong folder, a write into the system, a read of a key, a send while observing.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from core.agent.sandbox import CREDENTIAL_DIRS, CREDENTIAL_FILES, PathGuard, Preset
from core.agent.tool_api import SessionKind, ToolEffects, ToolError
from core.guard.command_rules import COMMAND_RULES, FORK_BOMB, OBSERVE_SENDS, CommandRule
from core.guard.policy import FILE_NAME, GuardPolicy, PolicyFile, PolicyProblem
from core.guard.shell_words import (
    SimpleCommand,
    copy_destination,
    find_actions,
    is_compound,
    nested_line,
    simple_commands,
)

POLICY_FILE = FILE_NAME  # in the data dir
GUARDED_KINDS: frozenset[SessionKind] = frozenset({"task", "rule"})

SYSTEM_DIRS: tuple[str, ...] = (
    "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/boot", "/dev", "/proc", "/sys", "/opt",
    "/var/lib", "/System", "/Library", "/private/etc", "/Applications",
    "C:/Windows", "C:/Program Files", "C:/Program Files (x86)", "C:/ProgramData",
)  # fmt: skip
# Written to by everyday commands, though under /dev.
_HARMLESS_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero"})
_CREDENTIAL_WORDS = re.compile(
    r"(^|[\s/'\"=:~])("
    + "|".join(re.escape(p) for p in (*CREDENTIAL_DIRS, *CREDENTIAL_FILES, ".git/config", ".git/hooks"))
    + r")(/|\s|$|['\"])|\bid_(rsa|dsa|ecdsa|ed25519)\b"
)
_WIDE_DELETE = frozenset({"/", "/*", "~", "~/", "~/*", ".", "./", "..", "../", "*", ".*", "$HOME", "${HOME}"})
_UNKNOWN_YET = ("$", "`")
MAX_NESTING = 3  # shells handed a line by a shell (`bash -c "bash -c '…'"`) the guard still reads

Decision = Literal["allow", "deny"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the guard decided about one call. `rule` names the rule that refused, or the allowCommands
    entry that let a command through `overrode` (such an allow is recorded like a refusal)."""

    decision: Decision
    rule: str = ""
    reason: str = ""
    overrode: str = ""

    @property
    def noteworthy(self) -> bool:
        return self.decision == "deny" or bool(self.overrode)

    def message(self, tool: str) -> str:
        """The tool error the model reads."""
        return f"[guard] blocked {tool}: rule {self.rule} — {self.reason}. The call did not run."


ALLOWED = Verdict("allow")


@dataclass(frozen=True, slots=True)
class GuardedCall:
    tool: str
    effects: ToolEffects
    cwd: Path
    paths: PathGuard  # the session's own path guard: resolution, credentials, writable roots
    observing: bool = False


class _Refusal(Exception):
    def __init__(self, rule: str, reason: str, *, overridable: bool = False) -> None:
        super().__init__(reason)
        self.rule = rule
        self.reason = reason
        self.overridable = overridable


class ToolGuard:
    """The built-in rules plus the person's policy file (None: the built-in rules alone)."""

    def __init__(self, policy: PolicyFile | None = None, *, temp_dir: Path | None = None) -> None:
        self._policy = policy
        self._temp = Path(os.path.realpath(temp_dir or tempfile.gettempdir()))

    def check(self, call: GuardedCall) -> Verdict:
        policy = self._policy.current() if self._policy is not None else GuardPolicy()
        if isinstance(policy, PolicyProblem):
            return Verdict("deny", "policy/unreadable", policy.describe())
        if not policy.enabled:
            return ALLOWED
        try:
            return _Judgement(call, policy, self._temp).run()
        except _Refusal as refusal:
            return Verdict("deny", refusal.rule, refusal.reason)


class _Judgement:
    """One call judged against the rules; raises _Refusal at the first rule that refuses."""

    def __init__(self, call: GuardedCall, policy: GuardPolicy, temp: Path) -> None:
        self.call = call
        self.policy = policy
        self.temp = temp
        self.paths = call.paths
        self.extra_roots = tuple(self._resolve(p) for p in policy.allow_write_roots)
        self.denied = tuple(self._resolve(p) for p in policy.deny_paths)

    def run(self) -> Verdict:
        effects = self.call.effects
        for raw in effects.reads:
            self._check_read(raw)
        for raw in effects.writes:
            self._check_write(raw, by_shell=False)
        if effects.sends and self.call.observing:
            raise _Refusal("observe/sends", "this rule only observes, and this tool may change something")
        if effects.command is not None:
            return self._check_command(effects.command)
        return ALLOWED

    # -- paths -----------------------------------------------------------------------------------------

    def _resolve(self, raw: str) -> Path:
        try:
            return self.paths.resolve(raw, self.call.cwd)
        except ToolError as exc:
            raise _Refusal("path/invalid", str(exc).rstrip(".")) from None

    def _shown(self, path: Path) -> str:
        return self.paths.display(path)

    def _check_read(self, raw: str) -> None:
        real = self._resolve(raw)
        self._check_hidden(real)

    def _check_hidden(self, real: Path) -> None:
        if self.paths.is_credential_path(real) or _is_git_hook(real):
            raise _Refusal(
                "path/credential", f"{self._shown(real)} holds credentials or runs code at git's call"
            )
        if self.paths.is_denied(real):
            raise _Refusal("path/denied", f"{self._shown(real)} is Errand's own private data")
        if any(_within(real, d) for d in self.denied):
            raise _Refusal("path/denied", f"{self._shown(real)} is listed in denyPaths of the guard policy")

    def _check_write(self, raw: str, *, by_shell: bool) -> None:
        real = self._resolve(raw)
        if str(real) in _HARMLESS_DEVICES:
            return
        self._check_hidden(real)
        if self.call.observing:
            raise _Refusal(
                "observe/read-only", f"this rule only observes; it may not write {self._shown(real)}"
            )
        if self._is_system(real) and not _within(real, self.temp):
            raise _Refusal(
                "path/system", f"{self._shown(real)} is a system folder; a task never writes there"
            )
        # A file tool asks a person before it writes outside the folder (docs/permissions.md#approvals);
        # a shell redirection cannot ask, so the guard decides for it.
        if by_shell and not self._writable(real):
            if self.paths.permission.preset is Preset.READ_ONLY:
                raise _Refusal(
                    "path/read-only", f"this bot is read-only; it may not write {self._shown(real)}"
                )
            raise _Refusal(
                "path/outside-folder",
                f"{self._shown(real)} is outside the folders this run may write "
                f"({self._shown(self.paths.workspace)} and the temporary folder)",
                overridable=True,
            )

    def _writable(self, real: Path) -> bool:
        if self.paths.permission.preset is Preset.FULL:
            return True
        if self.paths.permission.preset is Preset.READ_ONLY:
            return _within(real, self.temp)
        return (
            self.paths.in_writable_roots(real)
            or _within(real, self.temp)
            or any(_within(real, root) for root in self.extra_roots)
        )

    def _is_system(self, real: Path) -> bool:
        text = real.as_posix()
        return any(text == d or text.startswith(d.rstrip("/") + "/") for d in SYSTEM_DIRS)

    # -- commands --------------------------------------------------------------------------------------

    def _check_command(self, command: str) -> Verdict:
        for rule in self.policy.deny_commands:
            if rule.pattern.search(command):
                raise _Refusal(f"policy/{rule.id}", rule.reason)
        commands = _commands_run(command)
        # Quotes split a word for the eye only (`~/.s's'h`): the words as the shell reads them are judged too.
        if any(_CREDENTIAL_WORDS.search(t) for t in (command, *(" ".join(c.words) for c in commands))):
            raise _Refusal("cmd/credential-access", "the command names a credential location or a key file")
        overridden: _Refusal | None = None
        try:
            if FORK_BOMB.search(command):
                raise _Refusal(
                    "cmd/fork-bomb", "a fork bomb starts processes until the machine stops", overridable=True
                )
            for simple in commands:
                self._check_simple(simple)
        except _Refusal as refusal:
            if not refusal.overridable:
                raise
            overridden = refusal
        if overridden is None:
            return ALLOWED
        entry = self._allow_entry(command)
        if entry is None:
            raise overridden
        # Let through, but only past the overridable rules: the rest are judged again.
        for simple in commands:
            self._check_simple(simple, overridable=False)
        return Verdict("allow", f"allow/{entry}", self._reason_of(entry), overrode=overridden.rule)

    def _allow_entry(self, command: str) -> str | None:
        text = command.strip()
        if is_compound(text):
            return None  # an allowed command joined to another is not the allowed command
        for rule in self.policy.allow_commands:
            if rule.pattern.fullmatch(text):
                return rule.id
        return None

    def _reason_of(self, entry: str) -> str:
        return next(r.reason for r in self.policy.allow_commands if r.id == entry)

    def _check_simple(self, simple: SimpleCommand, *, overridable: bool = True) -> None:
        targets = list(simple.writes_to)
        if simple.program == "tee":
            targets += [a for a in simple.arguments if not a.startswith("-")]
        destination = copy_destination(simple)
        if destination is not None:
            targets.append(destination)
        for target in targets:
            self._check_shell_write(target, overridable)
        rules: tuple[CommandRule, ...] = COMMAND_RULES if overridable else ()
        if self.call.observing:
            rules = (*rules, OBSERVE_SENDS)
        for rule in rules:
            reason = rule.judge(simple)
            if reason:
                raise _Refusal(rule.id, reason, overridable=rule.overridable)
        if overridable and simple.program == "rm" and _rm_recursive(simple.arguments):
            self._check_recursive_delete(simple.arguments)

    def _check_shell_write(self, target: str, overridable: bool) -> None:
        if target.startswith(_UNKNOWN_YET) or any(m in target for m in _UNKNOWN_YET):
            if not overridable:
                return
            raise _Refusal(
                "path/outside-folder",
                f"the output goes to {target}, known only when it runs",
                overridable=True,
            )
        try:
            self._check_write(target, by_shell=True)
        except _Refusal as refusal:
            if refusal.overridable and not overridable:
                return
            raise

    def _check_recursive_delete(self, args: tuple[str, ...]) -> None:
        targets = _rm_targets(args)
        for target in targets:
            if target in _WIDE_DELETE or re.fullmatch(r"[A-Za-z]:[\\/]?\*?", target):
                raise _delete_refusal(f"it would delete {target}, far more than a task's own files")
            if any(m in target for m in _UNKNOWN_YET):
                raise _delete_refusal(f"its target {target} is known only when it runs")
            real = self._resolve(_before_glob(target))
            if real == self.paths.home or real == Path(real.anchor) or self._is_system(real):
                raise _delete_refusal(
                    f"it would delete {self._shown(real)}, far more than a task's own files"
                )
            for keep, what in ((self.call.cwd, "this run's folder"), (self.paths.workspace, "the workspace")):
                if _within(Path(os.path.realpath(keep)), real):
                    raise _delete_refusal(f"it would delete {self._shown(real)}, which holds {what}")
            self._check_hidden(real)
            if not self._writable(real):
                raise _delete_refusal(f"{self._shown(real)} is outside the folders this run may write")


def _commands_run(command: str, depth: int = 0) -> list[SimpleCommand]:
    """Every simple command the line runs: its own, those of a line it hands another shell (`bash -c`,
    `eval`), and what a `find` does to what it finds."""
    found: list[SimpleCommand] = []
    for simple in simple_commands(command):
        found += [simple, *find_actions(simple)]
        inner = nested_line(simple)
        if inner is None:
            continue
        if depth >= MAX_NESTING:
            raise _Refusal(
                "cmd/nested-shell",
                f"the line is handed from shell to shell more than {MAX_NESTING} times, too deep to read",
            )
        found += _commands_run(inner, depth + 1)
    return found


def _delete_refusal(reason: str) -> _Refusal:
    return _Refusal("cmd/recursive-force-delete", reason, overridable=True)


def _rm_recursive(args: tuple[str, ...]) -> bool:
    for arg in args:
        if arg == "--":
            return False
        if (len(arg) >= 4 and "--recursive".startswith(arg)) or (
            arg.startswith("-") and not arg.startswith("--") and ("r" in arg or "R" in arg)
        ):
            return True
    return False


def _rm_targets(args: tuple[str, ...]) -> list[str]:
    targets: list[str] = []
    options = True
    for arg in args:
        if options and arg == "--":
            options = False
        elif (options and arg.startswith("-") and arg != "-") or not arg:
            continue  # an option, or an empty word (rm only complains about it)
        else:
            targets.append(arg)
    return targets


def _before_glob(target: str) -> str:
    """The folder a glob lies in (`build/*.o` is `build`); a plain path as it is."""
    cut = min((target.find(c) for c in "*?[" if c in target), default=-1)
    if cut < 0:
        return target
    head = target[:cut]
    return head.rsplit("/", 1)[0] if "/" in head else "."


def _within(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _is_git_hook(real: Path) -> bool:
    parts = real.parts
    return any(parts[i] == ".git" and parts[i + 1] == "hooks" for i in range(len(parts) - 1))
