"""The built-in rules for shell commands that judge a command by its words alone
(docs/guard.md#the-rules): formatting disks, scheduling work outside the run, machine-wide registry
changes, opening up a machine's permissions, powering it off, a fork bomb, and, while a rule only
observes, anything that sends.

Each rule looks at one simple command (core.guard.shell_words) and returns why it refuses, or "".
The rules that need the file system (recursive deletes, credential paths, writes) live in the guard.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from core.guard.shell_words import SimpleCommand


@dataclass(frozen=True, slots=True)
class CommandRule:
    id: str
    judge: Callable[[SimpleCommand], str]
    # A person's allowCommands entry may let a command through this rule (recorded each time).
    overridable: bool = True


def _lower(words: tuple[str, ...]) -> list[str]:
    return [w.lower() for w in words]


def _recursive(args: tuple[str, ...]) -> bool:
    return any(
        a == "--recursive" or (a.startswith("-") and not a.startswith("--") and "R" in a) for a in args
    )


_DISK_TOOLS = frozenset({"wipefs", "diskpart", "fdisk", "sfdisk", "parted", "gdisk", "sgdisk", "mkswap"})


def _disk_format(cmd: SimpleCommand) -> str:
    program, args = cmd.program, cmd.arguments
    if program.startswith("mkfs") or program in _DISK_TOOLS:
        return f"`{program}` formats or repartitions a disk; that is never part of a task"
    if program.lower() in ("format", "format.com") and any(re.fullmatch(r"[A-Za-z]:", a) for a in args):
        return "`format` erases a whole drive"
    if program == "dd":
        for arg in args:
            if arg.startswith("of=/dev/") and arg not in ("of=/dev/null", "of=/dev/stdout", "of=/dev/stderr"):
                return f"`dd {arg}` writes straight onto a device"
    return ""


def _scheduler(cmd: SimpleCommand) -> str:
    program, args = cmd.program.lower(), _lower(cmd.arguments)
    if program == "crontab" and args and args[0] not in ("-l",):
        return "`crontab` changes what runs on a schedule outside this run; ask the person to set it up"
    if (program in ("schtasks", "schtasks.exe") and "/create" in args) or program == "register-scheduledtask":
        return "a Windows scheduled task starts work outside this run"
    if program == "systemctl" and {"enable", "disable", "mask", "unmask"} & set(args):
        return "`systemctl enable/disable/mask` changes what the machine starts"
    if program == "launchctl" and {"load", "bootstrap", "enable", "submit"} & set(args):
        return "`launchctl load` makes macOS start work outside this run"
    return ""


_MACHINE_HIVES = ("hklm", "hkcr", "hkey_local_machine", "hkey_classes_root")


def _registry(cmd: SimpleCommand) -> str:
    program, args = cmd.program.lower(), _lower(cmd.arguments)
    if program not in ("reg", "reg.exe") or not args or args[0] not in ("add", "delete", "import", "restore"):
        return ""
    key = args[1] if len(args) > 1 else ""
    if key.startswith(_MACHINE_HIVES):
        return "a machine-wide registry change (HKLM/HKCR) reaches every user of the machine"
    if "\\run" in key or "\\runonce" in key:
        return "a Run registry key starts a program at every login"
    return ""


_WIDE_TARGETS = frozenset({"/", "~", "/*", "~/*", "$home", "${home}", "c:", "c:/*"})  # compared lowered


def _spelled_plainly(target: str) -> str:
    """The target without what does not change where it points: `//`, `/.`, a trailing slash, `\\`."""
    text = re.sub(r"/+", "/", target.replace("\\", "/"))
    while text.endswith(("/.", "/")) and len(text) > 1:
        text = text[:-2] if text.endswith("/.") else text[:-1]
    return text or "/"


def _permission_nuke(cmd: SimpleCommand) -> str:
    program, args = cmd.program.lower(), cmd.arguments
    if program in ("chmod", "chown", "chgrp") and _recursive(args):
        targets = [a for a in args if not a.startswith("-")][1:]
        wide = [t for t in targets if _spelled_plainly(t).lower() in _WIDE_TARGETS]
        if wide:
            return f"a recursive `{program}` on {wide[0]} changes who may use every file below it"
    if program in ("icacls", "icacls.exe"):
        lowered = _lower(args)
        if "/grant" in lowered and "/t" in lowered and any(a.startswith("everyone") for a in lowered):
            return "granting Everyone access to a whole tree opens it to every account"
    return ""


def _power(cmd: SimpleCommand) -> str:
    program, args = cmd.program.lower(), _lower(cmd.arguments)
    if program in ("shutdown", "reboot", "poweroff", "halt"):
        return f"`{program}` turns the machine off or restarts it"
    if program in ("init", "telinit") and args[:1] in (["0"], ["6"]):
        return "`init 0/6` turns the machine off or restarts it"
    if program == "systemctl" and {"poweroff", "reboot", "halt", "suspend", "hibernate"} & set(args):
        return "`systemctl poweroff/reboot` turns the machine off or restarts it"
    return ""


_SENDERS = frozenset(
    {"ssh", "scp", "sftp", "nc", "ncat", "netcat", "telnet", "ftp", "sendmail", "mail", "mailx", "mutt"}
)
_CURL_SENDING_LONG = re.compile(r"^(--data\S*|--form\S*|--upload-file|--json)$")
_CURL_SENDING_SHORT = frozenset("dFT")  # a body, a form, an upload
# curl's short options whose value follows them: in a bundle (`-sXPOST`, `-fsSLo page`) the rest is the value.
_CURL_VALUED_SHORT = frozenset("AbcCdDeEFHKmoPQrtTuUwxXyYz")
_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
_PUBLISHERS = {
    ("git", "push"),
    ("npm", "publish"),
    ("yarn", "publish"),
    ("pnpm", "publish"),
    ("twine", "upload"),
}
_GIT_VALUED = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"}
)


def _curl_sends(args: tuple[str, ...]) -> bool:
    for index, arg in enumerate(args):
        following = args[index + 1] if index + 1 < len(args) else ""
        if _CURL_SENDING_LONG.match(arg):
            return True
        if arg in ("--request", "-X") or arg.startswith("--request="):
            verb = arg.partition("=")[2] or following
            if verb.upper() not in _SAFE_METHODS:
                return True
        elif arg.startswith("-") and not arg.startswith("--"):
            for at, letter in enumerate(arg[1:], start=1):
                if letter in _CURL_SENDING_SHORT:
                    return True
                if letter == "X" and (arg[at + 1 :] or following).upper() not in _SAFE_METHODS:
                    return True
                if letter in _CURL_VALUED_SHORT:
                    break  # the rest of the bundle is this option's value
    return False


def _subcommand(program: str, args: tuple[str, ...]) -> str:
    """The subcommand after a program's own options (`git -C repo push` is `push`)."""
    if program != "git":
        return args[0].lower() if args else ""
    index = 0
    while index < len(args) and args[index].startswith("-"):
        index += 2 if args[index] in _GIT_VALUED else 1
    return args[index].lower() if index < len(args) else ""


def _sends(cmd: SimpleCommand) -> str:
    program, args = cmd.program.lower(), cmd.arguments
    if program in _SENDERS:
        return f"`{program}` reaches another machine"
    if program == "rsync" and any(":" in a for a in args if not a.startswith("-")):
        return "`rsync` to another machine sends files"
    if program == "curl" and _curl_sends(args):
        return "this `curl` sends data (a body, a form, an upload or a method that changes things)"
    if program == "wget" and any(
        a.startswith(("--post-data", "--post-file", "--method", "--body")) for a in args
    ):
        return "this `wget` sends data"
    subcommand = _subcommand(program, args)
    if (program, subcommand) in _PUBLISHERS:
        return f"`{program} {subcommand}` publishes to another machine"
    if program in ("http", "https", "xh") and args and args[0].upper() in ("POST", "PUT", "PATCH", "DELETE"):
        return f"`{program} {args[0]}` sends a request that changes things"
    return ""


FORK_BOMB = re.compile(r":\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}")

# In order: the first that refuses names the rule.
COMMAND_RULES: tuple[CommandRule, ...] = (
    CommandRule("cmd/disk-format", _disk_format),
    CommandRule("cmd/system-scheduler", _scheduler),
    CommandRule("cmd/system-registry", _registry),
    CommandRule("cmd/permission-nuke", _permission_nuke),
    CommandRule("cmd/power", _power),
)
# Only while the run observes: observing means looking, and a look sends nothing. Not overridable.
OBSERVE_SENDS = CommandRule("observe/sends", _sends, overridable=False)
