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
# Words put before a command that leave the command itself as the next word.
_PREFIXES = frozenset({"sudo", "doas", "env", "command", "exec", "nice", "nohup", "time", "xargs", "builtin"})
# Characters that make a command line more than one simple command.
_COMPOUND_MARKS = (";", "&", "|", "\n", "`", "$(", "<(", ">(")


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One command of a line: its words (redirections taken out) and the files it redirects output to."""

    words: tuple[str, ...]
    writes_to: tuple[str, ...] = ()

    @property
    def program(self) -> str:
        """The program's name without its folder (`/bin/rm` is `rm`), after prefixes like `sudo`."""
        for word in self.words:
            if "=" in word and not word.startswith("-") and word.split("=", 1)[0].isidentifier():
                continue  # an assignment before the command: FOO=1 rm ...
            name = os.path.basename(word)
            if name in _PREFIXES or word.startswith("-"):
                continue
            return name
        return ""

    @property
    def arguments(self) -> tuple[str, ...]:
        """The words after the program."""
        program = self.program
        for index, word in enumerate(self.words):
            if os.path.basename(word) == program:
                return self.words[index + 1 :]
        return ()


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
