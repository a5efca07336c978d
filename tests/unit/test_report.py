"""Report validation (docs/runs.md#the-report-tool): every rule, and errors that tell the model what to
change."""

from __future__ import annotations

import json

import pytest

from core.tasks.report import MAX_MESSAGE, Question, Report, ReportError, validate_report


def refused(**args: object) -> str:
    with pytest.raises(ReportError) as info:
        validate_report(args)
    return str(info.value)


# --- accepted shapes ------------------------------------------------------------------------------------


def test_a_done_report_with_a_message_and_files() -> None:
    report = validate_report(
        {"state": "done", "summary": " compared 3 clouds ", "message": "X 云最便宜。", "files": ["report.md"]}
    )
    assert report == Report(
        state="done", summary="compared 3 clouds", message="X 云最便宜。", question=None, files=("report.md",)
    )


@pytest.mark.parametrize("state", ["progress", "done", "failed"])
def test_every_state_but_needs_you_needs_only_a_summary(state: str) -> None:
    report = validate_report({"state": state, "summary": "s"})
    assert (report.state, report.message, report.question, report.files, report.would) == (
        state,
        "",
        None,
        (),
        "",
    )


def test_needs_you_with_a_plain_question_and_top_level_options() -> None:
    report = validate_report(
        {
            "state": "needs_you",
            "summary": "s",
            "question": "包月还是按小时?",
            "options": ["包月价", "按小时价"],
        }
    )
    assert report.question == Question("包月还是按小时?", ("包月价", "按小时价"), None, False)
    assert report.waits_for_person


def test_needs_you_with_a_question_object() -> None:
    report = validate_report(
        {
            "state": "needs_you",
            "summary": "s",
            "question": {
                "question": "哪些云?",
                "options": ["A", "B", "C"],
                "multiSelect": True,
                "default": "B",
            },
        }
    )
    assert report.question == Question("哪些云?", ("A", "B", "C"), "B", True)
    assert not report.waits_for_person  # a default: asked, and the run goes on


def test_a_question_object_may_take_its_options_and_default_from_the_top_level() -> None:
    report = validate_report(
        {
            "state": "needs_you",
            "summary": "s",
            "question": {"question": "Q?"},
            "options": ["a", "b"],
            "default": 2,
        }
    )
    assert report.question == Question("Q?", ("a", "b"), "b", False)


def test_the_same_options_in_both_places_are_fine() -> None:
    report = validate_report(
        {
            "state": "needs_you",
            "summary": "s",
            "question": {"question": "Q?", "options": ["a", "b"]},
            "options": ["a", "b"],
        }
    )
    assert report.question is not None
    assert report.question.options == ("a", "b")


def test_a_question_without_options_is_free_text_and_may_have_a_free_text_default() -> None:
    report = validate_report(
        {"state": "needs_you", "summary": "s", "question": "Which account?", "default": "work"}
    )
    assert report.question == Question("Which account?", (), "work", False)


def test_a_number_default_is_read_as_that_option() -> None:
    args = {"state": "needs_you", "summary": "s", "question": "Q?", "options": ["x", "y", "z"]}
    assert validate_report({**args, "default": 3}).question == Question("Q?", ("x", "y", "z"), "z")
    assert validate_report({**args, "default": "1"}).question == Question("Q?", ("x", "y", "z"), "x")


def test_an_option_that_looks_like_a_number_is_taken_as_itself() -> None:
    args = {"state": "needs_you", "summary": "s", "question": "How many?", "options": ["3", "5"]}
    assert validate_report({**args, "default": "3"}).question == Question("How many?", ("3", "5"), "3")
    assert validate_report({**args, "default": 2}).question == Question("How many?", ("3", "5"), "5")


def test_null_and_empty_optional_values_count_as_left_out() -> None:
    report = validate_report(
        {
            "state": "done",
            "summary": "s",
            "message": None,
            "question": None,
            "options": [],
            "default": "",
            "files": None,
            "would": None,
        }
    )
    assert (report.message, report.question, report.files) == ("", None, ())


def test_observe_mode_would_is_kept() -> None:
    assert (
        validate_report({"state": "done", "summary": "s", "would": "本会发送:降价了"}).would
        == "本会发送:降价了"
    )


def test_a_message_of_exactly_the_limit_is_accepted() -> None:
    assert (
        len(validate_report({"state": "done", "summary": "s", "message": "好" * MAX_MESSAGE}).message) == 300
    )


def test_a_second_line_is_allowed_for_a_blocker() -> None:
    assert validate_report({"state": "failed", "summary": "s", "message": "没做完。\n要登录才行。"}).message


# --- each rule ------------------------------------------------------------------------------------------


def test_state_must_be_one_of_the_four() -> None:
    text = refused(state="finished", summary="s")
    assert "`state` must be one of progress, needs_you, done, failed; got 'finished'" in text
    assert "got None" in refused(summary="s")


def test_summary_is_required() -> None:
    assert "`summary` is required" in refused(state="done")
    assert "`summary` is required" in refused(state="done", summary="   ")
    assert "`summary` must be a string; got int" in refused(state="done", summary=3)


def test_a_long_message_says_the_limit_and_its_length() -> None:
    text = refused(state="done", summary="s", message="长" * 342)
    assert "`message` is 342 characters; the limit is 300" in text
    assert "Shorten it" in text


def test_a_message_is_one_line() -> None:
    assert "`message` has 3 lines; write one line" in refused(state="done", summary="s", message="a\nb\nc")


def test_needs_you_requires_a_question() -> None:
    assert "state `needs_you` needs a `question`" in refused(state="needs_you", summary="s")


def test_a_question_belongs_only_to_needs_you() -> None:
    text = refused(state="done", summary="s", question="继续吗?")
    assert "a `question` is asked only with state `needs_you`, not `done`" in text


def test_options_and_default_without_a_question_are_refused() -> None:
    assert "`options` and `default` belong to a question" in refused(
        state="done", summary="s", options=["a", "b"]
    )
    assert "belong to a question" in refused(state="done", summary="s", default="a")


@pytest.mark.parametrize("count", [1, 10])
def test_options_number_two_to_nine(count: int) -> None:
    options = [f"o{i}" for i in range(count)]
    text = refused(state="needs_you", summary="s", question="Q?", options=options)
    assert f"`options` has {count}; give 2 to 9 options, or leave `options` out" in text


def test_options_are_non_empty_unique_strings() -> None:
    assert "every option must be a non-empty string" in refused(
        state="needs_you", summary="s", question="Q?", options=["a", " "]
    )
    assert "every option must be a non-empty string" in refused(
        state="needs_you", summary="s", question="Q?", options=["a", 2]
    )
    assert "options must differ; repeated: 'a'" in refused(
        state="needs_you", summary="s", question="Q?", options=["a", "b", "a "]
    )
    assert "`options` must be a list of strings" in refused(
        state="needs_you", summary="s", question="Q?", options="a,b"
    )


def test_a_default_that_is_not_one_of_the_options_is_refused() -> None:
    text = refused(
        state="needs_you", summary="s", question="Q?", options=["包月价", "按小时价"], default="按年"
    )
    assert (
        "`default` '按年' is not one of the options; give one of '包月价', '按小时价' or its number 1-2"
        in text
    )


def test_a_default_number_out_of_range_is_refused() -> None:
    assert "`default` 3 is not one of the options" in refused(
        state="needs_you", summary="s", question="Q?", options=["a", "b"], default=3
    )
    assert "`default` 0 is not one of the options" in refused(
        state="needs_you", summary="s", question="Q?", options=["a", "b"], default=0
    )


def test_a_default_must_be_text_or_a_number() -> None:
    assert "`default` must be one of the options" in refused(
        state="needs_you", summary="s", question="Q?", options=["a", "b"], default=True
    )
    assert "`default` must be one of the options" in refused(
        state="needs_you", summary="s", question="Q?", options=["a", "b"], default=["a"]
    )


def test_files_are_a_list_of_strings() -> None:
    assert '`files` must be a list of non-empty paths (strings), e.g. ["report.md"]' in refused(
        state="done", summary="s", files="report.md"
    )
    assert "`files` must be a list" in refused(state="done", summary="s", files=["a.md", 3])


def test_unknown_arguments_are_named() -> None:
    text = refused(state="done", summary="s", title="x", progress=0.5)
    assert "unknown argument(s) 'title', 'progress'; task_report takes only state, summary, message" in text


def test_a_question_object_is_checked_too() -> None:
    base = {"state": "needs_you", "summary": "s"}
    assert "unknown key(s) 'choices' in `question`" in refused(
        **base, question={"question": "Q?", "choices": []}
    )
    assert "`question.question` is empty" in refused(**base, question={"options": ["a", "b"]})
    assert "`question.question` must be a string" in refused(**base, question={"question": 5})
    assert "`question` must be a string" in refused(**base, question=["Q?"])


def test_conflicting_options_or_default_in_both_places_are_refused() -> None:
    text = refused(
        state="needs_you",
        summary="s",
        question={"question": "Q?", "options": ["a", "b"], "default": "a"},
        options=["c", "d"],
        default="b",
    )
    assert "`options` is given both inside `question` and at the top level" in text
    assert "`default` is given both inside `question` and at the top level" in text


def test_multi_select_is_a_boolean_and_needs_options() -> None:
    base = {"state": "needs_you", "summary": "s"}
    assert "`question.multiSelect` must be true or false" in refused(
        **base, question={"question": "Q?", "options": ["a", "b"], "multiSelect": "yes"}
    )
    assert "`question.multiSelect` needs `options`" in refused(
        **base, question={"question": "Q?", "multiSelect": True}
    )


def test_every_problem_is_reported_at_once_with_how_to_retry() -> None:
    with pytest.raises(ReportError) as info:
        validate_report({"state": "later", "message": "x" * 301, "files": "a"})
    err = info.value
    assert len(err.problems) == 4
    assert str(err).startswith(
        "task_report was not accepted. Fix the following and call task_report again:\n- "
    )
    assert isinstance(err, ValueError)


# --- storage --------------------------------------------------------------------------------------------


def test_a_report_survives_json() -> None:
    report = Report(
        state="needs_you",
        summary="s",
        message="m",
        question=Question("Q?", ("a", "b"), "a", True),
        files=("x.md",),
        would="w",
    )
    stored = json.loads(json.dumps(report.to_json()))
    assert Report.from_json(stored) == report
    plain = Report(state="done", summary="s")
    assert Report.from_json(json.loads(json.dumps(plain.to_json()))) == plain


def test_a_stored_report_with_an_unknown_state_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown state 'finished'"):
        Report.from_json({"state": "finished", "summary": "s"})


def test_a_blocking_question_is_one_without_a_default() -> None:
    assert Question("Q?").blocking
    assert not Question("Q?", ("a", "b"), "a").blocking
    assert not Report(state="done", summary="s").waits_for_person


def test_a_malformed_question_is_reported_once() -> None:
    with pytest.raises(ReportError) as info:
        validate_report({"state": "needs_you", "summary": "s", "question": ["Q?"]})
    assert info.value.problems == ("`question` must be a string (the question text); got list",)
