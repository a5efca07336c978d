"""Skills figures (issue 19), each beside its baseline in the same run.
Run: .venv/bin/python -m bench.bench_skills [--skills N] [--reads N]

- prompt size: what N skills (descriptions of ~200 characters, bodies of ~4 KB, like the skills people
  share) add to every system prompt, against the system prompt without them and against putting their
  bodies in the prompt instead;
- the memory: what a full notebook (50 notes, 6,000 characters, docs/memory.md) adds to every system prompt;
- the read before each turn: the catalogue read when nothing changed (a stat per skill, in this thread),
  against a bare loop of the same stats; and the first read, which parses every SKILL.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path

from bench.common import figure_table
from core.agent.model_config import ModelConfig
from core.agent.prompt import system_prompt
from core.agent.sandbox import Permission, Preset
from core.agent.session_spec import SessionSpec
from core.memory.notebook import MAX_CHARS, MAX_ENTRIES, memory_section
from core.skills.catalog import CatalogReader, Scope
from core.skills.load_tool import skills_section
from core.store.memory import MemoryEntry
from tests.skill_folders import write_skill

WORDS = "Read the input files, check each value against the rules below, and write the result as a table. "


def make_skills(root: Path, count: int) -> int:
    """N skill folders; the bodies' total size in characters."""
    total = 0
    for index in range(count):
        body = f"# Skill {index}\n\n" + WORDS * 42  # ~4 KB
        description = (f"Handles kind {index} of the user's paperwork. " + WORDS)[:200]
        write_skill(
            root, f"skill-{index:02d}", description=description, body=body, files={"run.py": "print()"}
        )
        total += len(body)
    return total


def main(count: int, reads: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp, "skills")
        bodies = make_skills(root, count)
        roots: list[tuple[Scope, Path]] = [("bot", Path(tmp, "none")), ("shared", root)]
        reader = CatalogReader()

        started = time.perf_counter()
        _, catalog = reader.read(roots)
        first_read = time.perf_counter() - started

        warm: list[float] = []
        bare: list[float] = []
        paths = [str(root / d / "SKILL.md") for d in sorted(os.listdir(root))]
        for _ in range(reads):
            started = time.perf_counter()
            reader.read(roots)
            warm.append(time.perf_counter() - started)
            started = time.perf_counter()
            os.listdir(root)
            for path in paths:
                os.stat(path)
            bare.append(time.perf_counter() - started)

        spec = SessionSpec(
            session_id="chat-bench",
            kind="chat",
            bot_id="b_bench",
            cwd=Path(tmp),
            model=ModelConfig(base_url="http://127.0.0.1:1/v1", model="m", api_key="k"),
            permission=Permission(preset=Preset.WORKSPACE_WRITE, workspace=Path(tmp)),
        )
        now = datetime.now().astimezone()
        plain = system_prompt(spec, now, "bubblewrap")
        section = skills_section(catalog)
        with_skills = system_prompt(spec, now, "bubblewrap", (section,))
        note = ("The user wants weekly reports on Fridays, in English, as a table. " * 3)[
            : MAX_CHARS // MAX_ENTRIES
        ]
        notes = [
            MemoryEntry(f"m_{n:012x}", "b_bench", note, "conversation", "c_1", "", 1.8e9, 1.8e9, "bot")
            for n in range(MAX_ENTRIES)
        ]
        with_memory = system_prompt(spec, now, "bubblewrap", (memory_section(notes),))

    added = len(with_skills) - len(plain)
    remembered = len(with_memory) - len(plain)
    rows = [
        (
            f"prompt added by {count} skills",
            f"{added:,} chars (~{added // 4:,} tokens)",
            f"the base system prompt {len(plain):,} chars; the skills' bodies {bodies:,} chars",
        ),
        (
            f"prompt added by a full memory ({MAX_ENTRIES} notes)",
            f"{remembered:,} chars (~{remembered // 4:,} tokens)",
            f"the notes' own text {sum(len(n.text) for n in notes):,} chars",
        ),
        (
            "catalogue read before a turn, unchanged",
            f"{statistics.median(warm) * 1e3:.3f} ms",
            f"bare stats of the same files {statistics.median(bare) * 1e3:.3f} ms",
        ),
        ("first read (parses every SKILL.md)", f"{first_read * 1e3:.1f} ms", ""),
    ]
    figure_table(rows, "Errand")
    print(f"\n(medians of {reads} reads; {count} skills; the first read includes importing PyYAML)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.bench_skills")
    parser.add_argument("--skills", type=int, default=20)
    parser.add_argument("--reads", type=int, default=200)
    args = parser.parse_args()
    main(args.skills, args.reads)
