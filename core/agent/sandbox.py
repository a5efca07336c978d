"""Permission presets, the path guard for file tools, and the OS sandbox (bubblewrap) for shell commands.

File tools are checked here path by path. Shell commands cannot be checked that way, so on Linux they run
under bubblewrap when it works; the description says plainly what protection the user actually has.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Generic, Literal, TypeVar

from core.agent.tool_api import ToolError

# Relative to the home directory. Directories hide everything below them.
CREDENTIAL_DIRS: tuple[str, ...] = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".local/share/keyrings",
    ".password-store",
)
CREDENTIAL_FILES: tuple[str, ...] = (
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    ".config/gh/hosts.yml",
)

RefusalKind = Literal["credential", "denied", "read_only", "outside_workspace"]
T = TypeVar("T")


class Preset(StrEnum):
    READ_ONLY = "read-only"
    WORKSPACE_WRITE = "workspace-write"
    FULL = "full"

    @classmethod
    def parse(cls, text: str) -> Preset:
        try:
            return cls(text.strip().lower())
        except ValueError:
            names = ", ".join(p.value for p in cls)
            raise ValueError(f"unknown permission preset {text!r}; valid presets: {names}") from None


@dataclass(frozen=True)
class Permission:
    preset: Preset
    workspace: Path
    extra_writable: tuple[Path, ...] = ()
    denied: tuple[Path, ...] = ()


class Refused(ToolError):
    """A path the permission does not allow. `kind` lets the host offer an approval instead."""

    def __init__(self, message: str, path: Path, kind: RefusalKind) -> None:
        super().__init__(message)
        self.path = path
        self.kind = kind


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _within(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def is_git_config(path: Path) -> bool:
    return path.name == "config" and path.parent.name == ".git"


def is_credential_path(path: Path, home: Path | None = None) -> bool:
    """True for a resolved path that is, or lies under, a known credential location."""
    home_real = _real(home if home is not None else Path.home())
    if is_git_config(path):
        return True
    for rel in CREDENTIAL_DIRS:
        if _within(path, home_real / rel):
            return True
    return any(path == home_real / rel for rel in CREDENTIAL_FILES)


class PathGuard:
    """Resolves tool paths to real paths and refuses what the permission does not allow.

    Built once per permission and kept for the session's life (see `AgentRuntime.path_guard`): the roots are
    resolved here, the credential paths in `refresh_credentials`, which every resolution calls and which
    re-resolves only when an entry their resolution looked up has changed.
    """

    def __init__(self, permission: Permission, home: Path | None = None) -> None:
        self.permission = permission
        self.home = _real(home if home is not None else Path.home())
        self.workspace = _real(permission.workspace)
        self._writable = (self.workspace, *(_real(p) for p in permission.extra_writable))
        self._denied = tuple(_real(p) for p in permission.denied)
        # Judged as strings: one C-level startswith over a tuple instead of a Path.is_relative_to per root,
        # which was most of the guard's time in a walk over many files.
        self._denied_texts = frozenset(str(p) for p in self._denied)
        self._denied_prefixes = _prefixes(self._denied)
        self._writable_texts = frozenset(str(p) for p in self._writable)
        self._writable_prefixes = _prefixes(self._writable)
        self._written = CredentialPaths(
            tuple(self.home / rel for rel in CREDENTIAL_DIRS),
            frozenset(self.home / rel for rel in CREDENTIAL_FILES),
        )
        self._resolved = KeptResolution(
            lambda: _lookups_below(self.home, (*self._written.dirs, *self._written.files)),
            self._written.with_resolved,
        )
        # One attribute, swapped whole: walks in worker threads read it while the loop thread refreshes it.
        self._credentials = self._written
        self.refresh_credentials()

    def refresh_credentials(self) -> None:
        """Re-resolve the credential paths if an entry their resolution looked up has changed since.

        A credential path that appears later (~/.aws made mid-session) needs nothing: its written form is
        always refused, existing or not. What can change is where a credential path *resolves to* (~/.aws
        made a symlink to /vault/aws): that replaces an entry the resolution looked up, so the next call
        re-resolves. A few lstat calls instead of ~14 realpaths per call.
        """
        self._credentials = self._resolved.get()

    # -- queries ---------------------------------------------------------------------------------------

    def is_credential_path(self, path: Path) -> bool:
        """`path` must already be resolved; judged against the credential paths as written and resolved."""
        credentials = self._credentials
        if str(path) in credentials.file_texts or is_git_config(path):
            return True
        return _under_any(path, credentials.dir_texts, credentials.dir_prefixes)

    def is_denied(self, path: Path) -> bool:
        return _under_any(path, self._denied_texts, self._denied_prefixes)

    def is_hidden(self, path: Path) -> bool:
        """Never shown to tools (credentials or app-private data). `path` must already be resolved."""
        return self.is_credential_path(path) or self.is_denied(path)

    def in_writable_roots(self, path: Path) -> bool:
        """`path` (resolved) lies in the workspace or an extra writable root, whatever the preset."""
        return _under_any(path, self._writable_texts, self._writable_prefixes)

    def display(self, path: Path) -> str:
        """The path as the user thinks of it: `~/...` under home."""
        if _within(path, self.home) and path != self.home:
            return "~/" + path.relative_to(self.home).as_posix()
        return str(path)

    # -- resolution ------------------------------------------------------------------------------------

    def resolve(self, path: str, cwd: Path) -> Path:
        """The real absolute path, with `~` expanded and symlinks followed (no permission check)."""
        if not path.strip():
            raise ToolError("The path is empty.")
        if "\0" in path:
            raise ToolError("The path contains a NUL character.")
        self.refresh_credentials()
        if path == "~" or path.startswith("~/"):
            expanded = str(self.home) + path[1:]
        else:
            expanded = os.path.expanduser(path)
        return Path(os.path.realpath(os.path.join(cwd, expanded)))

    def resolve_read(self, path: str, cwd: Path) -> Path:
        real = self.resolve(path, cwd)
        self._check_hidden(real, "read")
        return real

    def resolve_write(self, path: str, cwd: Path) -> Path:
        real = self.resolve(path, cwd)
        self._check_hidden(real, "write")
        preset = self.permission.preset
        if preset is Preset.READ_ONLY:
            raise Refused(
                f"Refused: cannot write {self.display(real)}. This bot is read-only (permission preset "
                f"'read-only'): it may read files but not change them.",
                real,
                "read_only",
            )
        writable = self.in_writable_roots(real)
        if preset is Preset.WORKSPACE_WRITE and not writable:
            raise Refused(
                f"Refused: {self.display(real)} is outside the workspace ({self.workspace}). "
                f"This bot may write only inside its workspace.",
                real,
                "outside_workspace",
            )
        return real

    def _check_hidden(self, real: Path, verb: str) -> None:
        if self.is_credential_path(real):
            raise Refused(
                f"Refused: {self.display(real)} is a credential path; tools never {verb} credentials.",
                real,
                "credential",
            )
        if self.is_denied(real):
            raise Refused(
                f"Refused: {self.display(real)} belongs to the app's private data; tools never {verb} it.",
                real,
                "denied",
            )


@dataclass(frozen=True)
class CredentialPaths:
    """Credential locations: directories hide everything below them, files only themselves."""

    dirs: tuple[Path, ...]
    files: frozenset[Path]
    dir_texts: frozenset[str] = dataclasses.field(init=False)
    dir_prefixes: tuple[str, ...] = dataclasses.field(init=False)
    file_texts: frozenset[str] = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dir_texts", frozenset(str(p) for p in self.dirs))
        object.__setattr__(self, "dir_prefixes", _prefixes(self.dirs))
        object.__setattr__(self, "file_texts", frozenset(str(p) for p in self.files))

    def with_resolved(self) -> CredentialPaths:
        """These paths plus where they resolve to now. The written forms stay whether they exist or not, so a
        credential dir made later is refused, and so is a symlink pointing into it."""
        dirs = dict.fromkeys((*self.dirs, *(_real(p) for p in self.dirs)))
        return CredentialPaths(tuple(dirs), self.files | {_real(p) for p in self.files})


_MAX_LINK_HOPS = 40


def _under_any(path: Path, roots: frozenset[str], prefixes: tuple[str, ...]) -> bool:
    """`path` is one of the roots or lies below one (`roots` and `prefixes` as made by `_prefixes`)."""
    text = str(path)
    return text in roots or text.startswith(prefixes)


def _prefixes(roots: tuple[Path, ...]) -> tuple[str, ...]:
    """What a path strictly below each root starts with (`/` for the root of the file system)."""
    return tuple(str(root).rstrip("/") + "/" for root in roots)


# What one looked-up entry was: its inode and type, and a link's target (None: not there, or unreadable).
_Mark = tuple[int, int, int, str] | None


def _mark(path: str) -> _Mark:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    target = _link_target(path) if stat.S_ISLNK(st.st_mode) else ""
    return (st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode), target or "")


def _marks(entries: tuple[str, ...]) -> tuple[_Mark, ...]:
    return tuple(_mark(path) for path in entries)


class KeptResolution(Generic[T]):
    """A value computed from how some paths resolve, kept while every entry their resolution looked up is
    the same one (same inode and type; a link, same target). That is all a realpath reads, so while those
    entries stand the value stands too. Checking them is an lstat each; resolving again was the Python of a
    realpath per path, most of a sandboxed shell call's own cost. Nothing here depends on timestamps, whose
    coarse ticks can hide a change made right after a look."""

    def __init__(self, lookups: Callable[[], tuple[str, ...]], compute: Callable[[], T]) -> None:
        self._lookups = lookups
        self._compute = compute
        self._entries: tuple[str, ...] = ()
        self._marks: tuple[_Mark, ...] | None = None
        self._value: T | None = None

    def get(self) -> T:
        if self._marks is not None and self._value is not None and _marks(self._entries) == self._marks:
            return self._value
        entries = self._lookups()
        # Marked before resolving, looked up again after: a change made meanwhile leaves no marks to trust,
        # so the next call resolves again.
        marks = _marks(entries)
        value = self._compute()
        self._value = value
        self._entries = entries
        self._marks = marks if self._lookups() == entries else None
        return value


def _lookups_below(start: Path, paths: Iterable[Path]) -> tuple[str, ...]:
    """The entries that decide where `paths` resolve to, each path either below the resolved directory
    `start` or absolute (then looked up from `/`)."""
    entries: set[str] = set()
    for path in paths:
        if path.is_relative_to(start):
            _note_lookups(str(start), str(path.relative_to(start)), entries)
        else:
            _note_lookups("/", os.path.abspath(path), entries)
    return tuple(sorted(entries))


def _note_lookups(start: str, rest: str, entries: set[str], hops: int = 0) -> str:
    """Resolve `rest` below the resolved directory `start` the way realpath does, adding to `entries` every
    entry it looked up (through symlinks too): while none of those changes, the result cannot change
    either, nor whether it exists and is a directory."""
    resolved = start
    for name in rest.split("/"):
        if name in ("", "."):
            continue
        if name == "..":
            resolved = os.path.dirname(resolved)
            continue
        candidate = os.path.join(resolved, name)
        entries.add(candidate)
        target = _link_target(candidate) if hops < _MAX_LINK_HOPS else None
        if target is None:
            resolved = candidate
        else:
            resolved = _note_lookups("/" if target.startswith("/") else resolved, target, entries, hops + 1)
    return resolved


def _link_target(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:  # not a link, or not there
        return None


# -- the OS sandbox for shell commands ------------------------------------------------------------------

_BWRAP_BASE: tuple[str, ...] = (
    *("--die-with-parent", "--ro-bind", "/", "/"),
    *("--dev", "/dev", "--proc", "/proc"),
)
# A session runs its commands in one folder; more than this many distinct ones means a caller varies it.
_MAX_KEPT_CWDS = 64
# bwrap's probe result never changes while we run; probing once keeps session start-up cheap.
_probe_cache: dict[str, tuple[bool, str]] = {}


def _probe_bwrap(bwrap: str) -> tuple[bool, str]:
    """Whether bwrap can start a sandbox here (user namespaces may be disabled), and why not."""
    if bwrap not in _probe_cache:
        try:
            done = subprocess.run(
                [bwrap, *_BWRAP_BASE, "--tmpfs", "/tmp", "true"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=10,
                check=False,
            )
            error = done.stderr.decode(errors="replace").strip().splitlines()
            ok = done.returncode == 0
            _probe_cache[bwrap] = (ok, "" if ok else (error[0] if error else f"exit code {done.returncode}"))
        except (OSError, subprocess.SubprocessError) as exc:
            _probe_cache[bwrap] = (False, str(exc))
    return _probe_cache[bwrap]


_NO_SANDBOX_TAIL = (
    "shell commands run with your user's full rights; file tools still refuse writes outside the workspace."
)
_INSTALL_HINT = " Install bubblewrap (apt install bubblewrap) to sandbox them."


class ShellSandbox:
    """Builds the argv for a shell command: inside bubblewrap when available, else plain bash."""

    def __init__(
        self, permission: Permission, home: Path | None = None, bwrap: str | None = None, reason: str = ""
    ) -> None:
        self.permission = permission
        self.home = _real(home if home is not None else Path.home())
        self._bwrap = bwrap
        self.available = bwrap is not None
        self.description = self._describe(reason)
        self._kept: dict[Path, KeptResolution[tuple[str, ...]]] = {}

    @classmethod
    def detect(cls, permission: Permission, home: Path | None = None) -> ShellSandbox:
        """Probe for a working bubblewrap (blocks briefly the first time in a process)."""
        if not sys.platform.startswith("linux"):
            return cls(permission, home, None, "bubblewrap needs Linux")
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            return cls(permission, home, None, "bubblewrap is not installed")
        ok, why = _probe_bwrap(bwrap)
        if not ok:
            return cls(permission, home, None, f"bubblewrap is installed but cannot run here: {why}")
        return cls(permission, home, bwrap)

    @property
    def confines(self) -> bool:
        """Whether commands actually run confined (the full preset runs them unconfined on purpose)."""
        return self.available and self.permission.preset is not Preset.FULL

    def _describe(self, reason: str) -> str:
        preset = self.permission.preset
        if preset is Preset.FULL:
            return (
                "Shell commands run with your user's full rights (permission preset 'full'); "
                "file tools still refuse credential paths."
            )
        if self._bwrap is not None:
            if preset is Preset.READ_ONLY:
                return "Shell commands run inside bubblewrap: the whole system is read-only to them."
            return (
                "Shell commands run inside bubblewrap: "
                "the system is read-only, only the workspace is writable."
            )
        fix = _INSTALL_HINT if "not installed" in reason else ""
        return f"No OS sandbox is available ({reason}): {_NO_SANDBOX_TAIL}{fix}"

    def wrap(self, command: str, cwd: Path) -> list[str]:
        if self._bwrap is None or self.permission.preset is Preset.FULL:
            return ["bash", "-c", command]
        return [*self._bwrap_args(cwd), "--", "bash", "-c", command]

    def _bwrap_args(self, cwd: Path) -> tuple[str, ...]:
        """bwrap and its arguments for commands run in `cwd`, kept while the paths they name resolve as they
        did (a credential dir made or re-linked mid-session is masked from the next call on)."""
        kept = self._kept.get(cwd)
        if kept is None:
            if len(self._kept) >= _MAX_KEPT_CWDS:
                self._kept.clear()
            kept = self._kept[cwd] = KeptResolution(
                lambda: _lookups_below(self.home, self._mount_sources(cwd)), lambda: self._build_args(cwd)
            )
        return kept.get()

    def _mount_sources(self, cwd: Path) -> list[Path]:
        """Every path whose resolution the arguments depend on."""
        permission = self.permission
        return [
            permission.workspace,
            *permission.extra_writable,
            *(self.home / rel for rel in (*CREDENTIAL_DIRS, *CREDENTIAL_FILES)),
            *permission.denied,
            cwd,
        ]

    def _build_args(self, cwd: Path) -> tuple[str, ...]:
        assert self._bwrap is not None
        return (self._bwrap, *_BWRAP_BASE, *self._mounts(), "--chdir", os.path.realpath(cwd))

    def _mounts(self) -> list[str]:
        # (depth, order, args): bwrap applies mounts in argv order, so a mount on a deeper path must come
        # later to win. That keeps a workspace under /tmp or under a denied dir visible, and a credential
        # dir inside a writable workspace hidden.
        mounts: list[tuple[int, int, list[str]]] = [(2, 0, ["--tmpfs", "/tmp"])]
        writable = self.permission.preset is Preset.WORKSPACE_WRITE
        roots = [self.permission.workspace, *(self.permission.extra_writable if writable else ())]
        for root in roots:
            real = os.path.realpath(root)
            if os.path.isdir(real):
                flag = "--bind" if writable else "--ro-bind"
                mounts.append((_depth(real), 0, [flag, real, real]))
        hidden = [self.home / rel for rel in (*CREDENTIAL_DIRS, *CREDENTIAL_FILES)]
        for path in (*hidden, *self.permission.denied):
            real = os.path.realpath(path)
            if os.path.isdir(real):
                mounts.append((_depth(real), 1, ["--tmpfs", real]))
            elif os.path.exists(real):
                mounts.append((_depth(real), 1, ["--ro-bind", "/dev/null", real]))
        mounts.sort(key=lambda m: (m[0], m[1]))
        return [arg for _, _, args in mounts for arg in args]


def _depth(path: str) -> int:
    return len(Path(path).parts)
