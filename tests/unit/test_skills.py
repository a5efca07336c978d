"""Skills on disk: reading SKILL.md, the catalogue of a bot's and the shared folder, and adding one from a
zip or a folder with everything dangerous refused before a byte is written (docs/skills.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.errors import ConflictError, InvalidInputError, NotFoundError
from core.skills.catalog import CatalogReader, skill_files
from core.skills.install import clean_leftovers, install_folder, install_zip, remove_skill
from core.skills.load_tool import skills_section
from core.skills.skill_file import MAX_SKILL_FILE, SkillFileError, parse_skill_file
from tests.skill_folders import skill_md, skill_zip, write_skill, zipped

# ---- SKILL.md -------------------------------------------------------------------------------------------


def test_a_skill_file_with_block_scalars_bom_and_crlf_reads_as_its_author_meant() -> None:
    text = (
        "\ufeff---\r\nname: pdf-forms\r\ndescription: >\r\n"
        "  Fill in PDF forms.\r\n  Use it for any .pdf form.\r\n"
        "license: MIT\r\nmetadata:\r\n  version: 2\r\n---\r\n# Steps\r\nRun fill.py.\r\n"
    )
    skill = parse_skill_file(text)
    assert skill.name == "pdf-forms"
    assert skill.description == "Fill in PDF forms. Use it for any .pdf form."
    assert skill.body.startswith("# Steps") and "Run fill.py." in skill.body


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("# just markdown\n", "must start with front matter"),
        ("---\nname: [unclosed\n---\nbody", "not valid YAML"),
        ("---\n- a list\n---\n", "'key: value' lines"),
        ("---\ndescription: does things\n---\n", "no 'name:'"),
        ("---\nname: PDF Forms\ndescription: x\n---\n", "lowercase letters"),
        ("---\nname: a--b\ndescription: x\n---\n", "single hyphens"),
        ("---\nname: " + "a" * 65 + "\ndescription: x\n---\n", "longer than 64"),
        ("---\nname: ok\n---\n", "no 'description:'"),
        ("---\nname: ok\ndescription: '" + "d" * 1025 + "'\n---\n", "longer than 1024"),
    ],
)
def test_a_broken_skill_file_says_what_to_fix(text: str, said: str) -> None:
    with pytest.raises(SkillFileError, match=said):
        parse_skill_file(text)


# ---- the catalogue --------------------------------------------------------------------------------------


def test_a_bots_own_skill_hides_a_shared_one_and_a_broken_folder_is_listed_with_its_reason(
    tmp_path: Path,
) -> None:
    own, shared = tmp_path / "own", tmp_path / "shared"
    write_skill(own, "report", description="The bot's own way to report.")
    write_skill(shared, "report", description="The shared way to report.")
    write_skill(shared, "charts")
    (shared / "notes").mkdir()
    (shared / "notes" / "README.md").write_text("not a skill")
    (shared / ".installing-abc").mkdir()  # an add cut off by a crash: not a skill, not a problem
    _, catalog = CatalogReader().read([("bot", own), ("shared", shared)])
    assert [(s.name, s.scope) for s in catalog.skills] == [("charts", "shared"), ("report", "bot")]
    report = catalog.find("report")
    assert report is not None and report.description == "The bot's own way to report."
    [problem] = catalog.problems
    assert problem.folder == shared / "notes" and "no SKILL.md" in problem.message


def test_two_folders_with_one_name_are_a_problem_not_a_silent_pick(tmp_path: Path) -> None:
    write_skill(tmp_path, "report", folder="report")
    write_skill(tmp_path, "report", folder="report-copy")
    _, catalog = CatalogReader().read([("bot", tmp_path)])
    assert [s.folder.name for s in catalog.skills] == ["report"]
    assert "already holds the skill 'report'" in catalog.problems[0].message


def test_an_edited_skill_is_read_again_and_an_unchanged_one_is_not(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "report", description="First words.")
    write_skill(tmp_path, "charts")
    reader = CatalogReader()
    stamps, first = reader.read([("bot", tmp_path)])
    assert reader.stamps([("bot", tmp_path)]) == stamps
    (folder / "SKILL.md").write_text(skill_md("report", description="Second, longer words."))
    later = (folder / "SKILL.md").stat()
    os.utime(folder / "SKILL.md", ns=(later.st_atime_ns, later.st_mtime_ns + 1_000_000))
    new_stamps, second = reader.read([("bot", tmp_path)])
    assert new_stamps != stamps
    edited = second.find("report")
    assert edited is not None and edited.description == "Second, longer words."
    assert second.find("charts") is first.find("charts")  # not parsed again


def test_the_prompt_lists_names_and_descriptions_and_nothing_without_skills(tmp_path: Path) -> None:
    write_skill(tmp_path, "charts", description="Draw charts from CSV files.", body="SECRET BODY " * 100)
    _, catalog = CatalogReader().read([("bot", tmp_path)])
    section = skills_section(catalog)
    assert "- charts: Draw charts from CSV files." in section and "load_skill" in section
    assert "SECRET BODY" not in section  # bodies are loaded on demand
    _, empty = CatalogReader().read([("bot", tmp_path / "none")])
    assert skills_section(empty) == ""


def test_the_files_beside_a_skill_are_listed_without_hidden_ones(tmp_path: Path) -> None:
    folder = write_skill(
        tmp_path, "charts", files={"scripts/plot.py": "print()", ".cache/x": "", "ref.md": "r"}
    )
    assert skill_files(folder) == (["ref.md", "scripts/plot.py"], False)


# ---- adding and removing --------------------------------------------------------------------------------


def test_a_zipped_folder_and_a_zip_of_its_contents_both_install_under_the_skills_name(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    data = skill_zip("charts", top="Charts-main", files={"scripts/plot.py": "print('plot')"})
    assert install_zip(root, data, replace=False).skill.name == "charts"
    assert (root / "charts" / "scripts" / "plot.py").read_text() == "print('plot')"
    assert install_zip(root, skill_zip("report", top=None), replace=False).folder == root / "report"
    assert (root / "report" / "SKILL.md").is_file()
    assert sorted(p.name for p in root.iterdir()) == ["charts", "report"]


def test_a_macos_zip_installs_without_its_junk(tmp_path: Path) -> None:
    data = zipped(
        {
            "charts/SKILL.md": skill_md("charts"),
            "__MACOSX/charts/._SKILL.md": b"\0",
            "charts/.DS_Store": b"\0",
        }
    )
    install_zip(tmp_path, data, replace=False)
    assert sorted(p.name for p in (tmp_path / "charts").iterdir()) == ["SKILL.md"]


@pytest.mark.parametrize(
    ("entries", "links", "said"),
    [
        (
            {"charts/SKILL.md": skill_md("charts"), "charts/../../evil.sh": "rm -rf ~"},
            {},
            "outside the skill",
        ),
        ({"SKILL.md": skill_md("charts"), "/etc/cron.d/evil": "x"}, {}, "absolute path"),
        ({"SKILL.md": skill_md("charts"), "C:/evil": "x"}, {}, "absolute path"),
        ({"SKILL.md": skill_md("charts"), "a\\..\\..\\evil": "x"}, {}, "backslashes"),
        ({"SKILL.md": skill_md("charts")}, {"ssh": "/home/me/.ssh/id_rsa"}, "a link"),
        ({"charts/README.md": "no skill file"}, {}, "has no SKILL.md"),
        ({"a/SKILL.md": skill_md("a"), "b/SKILL.md": skill_md("b")}, {}, "has no SKILL.md"),
        ({"SKILL.md": "---\nname: Bad Name\ndescription: x\n---\n"}, {}, "lowercase letters"),
        ({"SKILL.md": b"\xff\xfe not utf-8"}, {}, "not UTF-8"),
    ],
)
def test_a_dangerous_or_broken_zip_is_refused_and_nothing_is_written(
    tmp_path: Path, entries: dict[str, str | bytes], links: dict[str, str], said: str
) -> None:
    root = tmp_path / "skills"
    with pytest.raises(InvalidInputError, match=said):
        install_zip(root, zipped(entries, links=links), replace=False)
    assert not root.exists() or list(root.iterdir()) == []
    assert not (tmp_path / "evil.sh").exists()


def test_what_is_not_a_zip_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="not a zip archive"):
        install_zip(tmp_path, b'{"name": "charts"}', replace=False)


def test_a_zip_that_unpacks_too_large_is_refused_before_unpacking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("core.skills.install.MAX_UNPACKED", 1000)
    data = skill_zip("charts", files={"data.csv": "1," * 1000})
    with pytest.raises(InvalidInputError, match="unpacks to more than"):
        install_zip(tmp_path, data, replace=False)
    assert list(tmp_path.iterdir()) == []


def test_a_taken_name_is_a_conflict_unless_replacing_and_replacing_swaps_the_whole_folder(
    tmp_path: Path,
) -> None:
    install_zip(tmp_path, skill_zip("charts", files={"old.py": "old"}), replace=False)
    with pytest.raises(ConflictError, match="already a skill named 'charts'"):
        install_zip(tmp_path, skill_zip("charts", description="New words."), replace=False)
    assert (tmp_path / "charts" / "old.py").exists()
    install_zip(
        tmp_path, skill_zip("charts", description="New words.", files={"new.py": "new"}), replace=True
    )
    assert sorted(p.name for p in (tmp_path / "charts").iterdir()) == ["SKILL.md", "new.py"]
    assert "New words." in (tmp_path / "charts" / "SKILL.md").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["charts"]  # no work folders left


def test_a_dropped_folder_is_copied_and_one_with_a_link_is_refused(tmp_path: Path) -> None:
    source = write_skill(tmp_path / "downloads", "charts", folder="My Charts", files={"plot.py": "print()"})
    root = tmp_path / "skills"
    assert install_folder(root, source, replace=False).folder == root / "charts"
    assert (root / "charts" / "plot.py").read_text() == "print()"
    assert (source / "plot.py").exists()  # copied, not moved
    (source / "key").symlink_to(tmp_path / "secret")
    with pytest.raises(InvalidInputError, match="holds a link"):
        install_folder(root, source, replace=True)
    with pytest.raises(InvalidInputError, match=r"has no SKILL\.md"):
        install_folder(root, tmp_path / "downloads", replace=False)


def test_removing_a_skill_deletes_its_folder_and_an_unknown_one_is_not_found(tmp_path: Path) -> None:
    write_skill(tmp_path, "charts")
    remove_skill(tmp_path, "charts")
    assert list(tmp_path.iterdir()) == []
    for name in ("charts", "../skills", ""):
        with pytest.raises(NotFoundError):
            remove_skill(tmp_path, name)


def test_leftovers_of_a_cut_off_add_are_cleaned(tmp_path: Path) -> None:
    write_skill(tmp_path, "charts")
    (tmp_path / ".installing-0123").mkdir()
    write_skill(tmp_path, "charts", folder=".replaced-charts-0a1b", description="The old words.")
    clean_leftovers(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["charts"]
    assert "The old words." not in (tmp_path / "charts" / "SKILL.md").read_text()  # the new one stays


def test_a_crash_between_the_two_renames_of_a_replace_puts_the_old_skill_back(tmp_path: Path) -> None:
    # What the disk holds when the old folder was swapped out and the new one never moved in.
    write_skill(tmp_path, "charts", folder=".replaced-charts-0a1b", description="The old words.")
    (tmp_path / ".installing-0123").mkdir()
    write_skill(tmp_path, "my-plots", folder=".replaced-My Plots-99ff")
    clean_leftovers(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["My Plots", "charts"]
    assert "The old words." in (tmp_path / "charts" / "SKILL.md").read_text()


def test_a_skill_in_a_folder_named_otherwise_is_removed_and_replaced_by_its_own_name(tmp_path: Path) -> None:
    write_skill(tmp_path, "charts", folder="Charts v2", files={"old.py": "old"})
    with pytest.raises(ConflictError, match="already a skill named 'charts'"):
        install_zip(tmp_path, skill_zip("charts"), replace=False)
    installed = install_zip(tmp_path, skill_zip("charts", files={"new.py": "new"}), replace=True)
    assert installed.folder == tmp_path / "Charts v2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Charts v2"]  # replaced where it was, not doubled
    assert (tmp_path / "Charts v2" / "new.py").exists()
    remove_skill(tmp_path, "charts")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_bears_the_name_but_holds_another_skill_is_never_replaced(tmp_path: Path) -> None:
    write_skill(tmp_path, "maps", folder="charts")
    with pytest.raises(ConflictError, match="holds another skill"):
        install_zip(tmp_path, skill_zip("charts"), replace=True)
    assert "name: maps" in (tmp_path / "charts" / "SKILL.md").read_text()
    with pytest.raises(NotFoundError):
        remove_skill(tmp_path, "charts")
    remove_skill(tmp_path, "maps")
    assert list(tmp_path.iterdir()) == []


def test_a_skill_file_over_its_limit_is_refused_from_a_zip_and_from_a_folder(tmp_path: Path) -> None:
    long_body = "x" * (MAX_SKILL_FILE + 1)
    with pytest.raises(InvalidInputError, match="KB, more than 256 KB"):
        install_zip(tmp_path / "skills", skill_zip("charts", body=long_body), replace=False)
    source = write_skill(tmp_path / "downloads", "charts", body=long_body)
    with pytest.raises(InvalidInputError, match="KB, more than 256 KB"):
        install_folder(tmp_path / "skills", source, replace=False)
    assert not (tmp_path / "skills").exists() or list((tmp_path / "skills").iterdir()) == []


@pytest.mark.parametrize(
    ("entries", "said"),
    [
        ({"./": "", "SKILL.md": skill_md("charts")}, "an entry with no name"),
        ({"SKILL.md": skill_md("charts"), "run": "a file", "run/inner.sh": "echo"}, "both as a file and"),
        ({"SKILL.md": skill_md("charts"), "notes.txt": "one", "./notes.txt": "two"}, "twice"),
    ],
)
def test_a_zip_whose_entries_clash_is_refused(tmp_path: Path, entries: dict[str, str], said: str) -> None:
    with pytest.raises(InvalidInputError, match=said):
        install_zip(tmp_path, zipped(entries), replace=False)
    assert list(tmp_path.iterdir()) == []


def test_a_zip_with_damaged_contents_is_refused_with_the_reason(tmp_path: Path) -> None:
    data = bytearray(skill_zip("charts", files={"data.csv": "1,2,3\n" * 200}))
    at = data.index(b"data.csv") + len(b"data.csv")  # the member's bytes follow its local header
    data[at + 5 : at + 25] = b"\x00" * 20
    with pytest.raises(InvalidInputError, match="cannot be unpacked"):
        install_zip(tmp_path, bytes(data), replace=False)
    assert list(tmp_path.iterdir()) == []
