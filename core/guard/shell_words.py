"""A shell command line read the way the guard needs it (docs/guard.md#how-commands-are-read): the simple
commands it is made of, each as words, and where its output redirections write.

This is a reading for a policy, not a shell: it does not expand variables, globs or `~` (the guard judges
those forms themselves) and it does not follow what a program run by the command does.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass

# Operators between simple commands; a word made only of these starts a new one.
_SEPARATORS = frozenset({";", "&", "&&", "|", "||", "|&", "(", ")", ";;"})
_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>"})
# Programs put before a command that run it: each with its options that take the next word as a value, and
# how many operands come before the command (`timeout 60 rm`, `taskset 3 rm`).
_PREFIXES: dict[str, tuple[frozenset[str], int]] = {
    "sudo": (frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group",
                        "--chdir", "--prompt", "--role", "--type", "--other-user", "--host",
                        "--close-from", "--command-timeout"}), 0),
    "doas": (frozenset({"-u", "-C"}), 0),
    "env": (frozenset({"-u", "--unset", "-C", "--chdir"}), 0),
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "nohup": (frozenset(), 0),
    "setsid": (frozenset(), 0),
    "unbuffer": (frozenset(), 0),
    "busybox": (frozenset(), 0),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "-n", "--class", "--classdata"}), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "chrt": (frozenset(), 1),
    "taskset": (frozenset(), 1),
    "xargs": (frozenset({"-I", "-n", "-P", "-d", "-L", "-s", "-E", "-a", "--max-args", "--max-procs",
                         "--delimiter", "--arg-file", "--replace", "--max-lines", "--max-chars",
                         "--eof"}), 0),
}  # fmt: skip
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "fish"})
# Characters that make a command line more than one simple command.
_COMPOUND_MARKS = (";", "&", "|", "\n", "`", "$(", "<(", ">(")


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One command of a line: its words (redirections taken out) and the files it redirects output to."""

    words: tuple[str, ...]
    writes_to: tuple[str, ...] = ()

    @property
    def program(self) -> str:
        """The program's name without its folder (`/bin/rm` is `rm`), after prefixes like `sudo -u x`."""
        index = _program_index(self.words)
        return os.path.basename(self.words[index]) if index >= 0 else ""

    @property
    def arguments(self) -> tuple[str, ...]:
        """The words after the program."""
        index = _program_index(self.words)
        return self.words[index + 1 :] if index >= 0 else ()


def _is_assignment(word: str) -> bool:
    return "=" in word and not word.startswith("-") and word.split("=", 1)[0].isidentifier()


def _takes_next(option: str, valued: frozenset[str]) -> bool:
    """Whether the option's value is the next word (`-u root`, `-Eu root`), not in the option itself."""
    if option.startswith("--"):
        return option in valued
    for index, letter in enumerate(option[1:], start=1):
        if f"-{letter}" in valued:
            return index == len(option) - 1  # a letter after it is its value: `-n10`
    return False


def _program_index(words: tuple[str, ...]) -> int:
    """Where the command itself is among the words, past assignments and prefixes; -1 when none is."""
    index = 0
    while index < len(words):
        word = words[index]
        if _is_assignment(word):
            index += 1  # FOO=1 rm ..., and env's own FOO=1
            continue
        prefix = _PREFIXES.get(os.path.basename(word))
        if prefix is None:
            return index
        valued, operands = prefix
        index += 1
        while index < len(words) and words[index].startswith("-") and words[index] != "-":
            if words[index] == "--":
                index += 1
                break
            index += 2 if _takes_next(words[index], valued) else 1
        index += operands
    return -1


def nested_line(command: SimpleCommand) -> str | None:
    """The command line another shell is handed (`bash -c '…'`, `eval …`), or None."""
    program, args = command.program, command.arguments
    if program == "eval":
        return " ".join(args)
    if program not in _SHELLS:
        return None
    for index, arg in enumerate(args):
        if not arg.startswith("-") or arg in ("-", "--"):
            return None  # a script file or stdin: what it runs is not on this line
        if not arg.startswith("--") and "c" in arg[1:]:
            return args[index + 1] if index + 1 < len(args) else None
    return None


_COPIERS = frozenset({"cp", "mv", "install", "ln"})


def copy_destination(command: SimpleCommand) -> str | None:
    """Where `cp`, `mv`, `install` or `ln` put files: its `-t DIR`, else its last operand."""
    if command.program not in _COPIERS:
        return None
    args = command.arguments
    operands: list[str] = []
    options = True
    for index, arg in enumerate(args):
        if options and arg == "--":
            options = False
        elif options and arg in ("-t", "--target-directory"):
            return args[index + 1] if index + 1 < len(args) else None
        elif options and arg.startswith("--target-directory="):
            return arg.partition("=")[2]
        elif not (options and arg.startswith("-") and arg != "-"):
            operands.append(arg)
    return operands[-1] if len(operands) >= 2 else None


# Tests that narrow what find acts on to some of the files below its roots.
_FIND_FILTERS = frozenset({"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex",
                           "-iregex", "-type", "-newer", "-mtime", "-mmin", "-size", "-empty",
                           "-user", "-perm"})  # fmt: skip
_FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def find_actions(command: SimpleCommand) -> list[SimpleCommand]:
    """What a `find` does to what it finds, as the commands it amounts to: `-delete` is a recursive
    delete of its roots, `-exec rm -rf {} +` that rm on them; with a filter (`-name '*.o'`) the files
    below each root, not the root itself."""
    if command.program != "find":
        return []
    args = command.arguments
    roots = _leading_operands(args) or ["."]
    filtered = any(a in _FIND_FILTERS for a in args)
    targets = [f"{root.rstrip('/')}/{{}}" if filtered else root for root in roots]
    found: list[SimpleCommand] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "-delete":
            found += [SimpleCommand(("rm", "-rf", target)) for target in targets]
        elif arg in _FIND_RUNS:
            end = index + 1
            while end < len(args) and args[end] not in (";", "+"):
                end += 1
            run = args[index + 1 : end]
            for target in targets:
                found.append(SimpleCommand(tuple(target if w == "{}" else w for w in run)))
            index = end
        index += 1
    return found


def _leading_operands(args: tuple[str, ...]) -> list[str]:
    roots: list[str] = []
    for arg in args:
        if arg.startswith(("-", "(", "!", ",")):
            if arg in ("-H", "-L", "-P"):
                continue  # how find treats links, before the roots
            break
        roots.append(arg)
    return roots


def is_compound(command: str) -> bool:
    """Whether the line is more than one simple command (a list, a pipe, a substitution, a background)."""
    return any(mark in command for mark in _COMPOUND_MARKS)


def _tokens(command: str) -> list[str]:
    # A newline separates commands as `;` does (inside quotes too: a reading stricter than bash's).
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote: bash would refuse it too; read it word by word
        return command.replace("\n", " ; ").split()


def simple_commands(command: str) -> list[SimpleCommand]:
    """The simple commands of the line, in order."""
    found: list[SimpleCommand] = []
    words: list[str] = []
    writes: list[str] = []
    tokens = _tokens(command)
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token in _SEPARATORS or (token and all(c in ";&|()" for c in token)):
            if words or writes:
                found.append(SimpleCommand(tuple(words), tuple(writes)))
            words, writes = [], []
        elif token in _REDIRECTS:
            if index + 1 < len(tokens):
                index += 1
                writes.append(tokens[index])
        elif token in (">&", "<&"):
            index += 1  # `2>&1`: a descriptor copied, no file; `>& file` writes the file
            if index < len(tokens) and not tokens[index].isdigit() and tokens[index] != "-":
                writes.append(tokens[index])
        elif token in ("<", "<<", "<<<", "<>"):
            index += 1  # an input: the word after it is read, not run
        elif token.isdigit() and index + 1 < len(tokens) and tokens[index + 1] in (*_REDIRECTS, ">&", "<&"):
            pass  # the `2` of `2>`: the redirection itself follows
        else:
            words.append(token)
        index += 1
    if words or writes:
        found.append(SimpleCommand(tuple(words), tuple(writes)))
    return found
