"""The Markdown exports of a task and of a rule (docs/retention.md#markdown-export): content in both
languages, structure that user text cannot break, and redaction. The view objects are built directly; nothing
is stored."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from core.activity_steps import ActivityStep
from core.export.redaction import REDACTED
from core.export.rule_markdown import rule_markdown
from core.export.task_markdown import task_markdown
from core.rules.views import RuleVersionView, RuleView, RunLogEntry
from core.tasks.views import RunView, TaskDetail, TaskView

TZ = "Asia/Shanghai"
ZONE = ZoneInfo(TZ)
KEY = "sk-proj-Abc123Def456Ghi789Jkl012Mno345"
PASSWORD = "hunter2-Xy9"


def at(day: int, hour: int, minute: int = 0) -> float:
    return datetime(2026, 11, day, hour, minute, tzinfo=ZONE).timestamp()


def step(kind: str, title: str, detail: str = "", ok: bool = True, **extra: int) -> dict[str, object]:
    return ActivityStep(kind, title, detail, ok, **extra).to_json()  # type: ignore[arg-type]


def task_detail(*, stage_label: str = "已完成", spent_other: dict[str, float] | None = None) -> TaskDetail:
    task = TaskView(
        id="t_0123456789ab",
        bot_id="b_1",
        conversation_id="c_42",
        title="GPU 价格调研",
        stage="ready",
        stage_label=stage_label,
        group="ended",
        latest_line="A100 包月最便宜的是 X 云",
        created_at=at(28, 10, 2),
        updated_at=at(28, 12),
        tokens_in=12_000,
        tokens_out=3_000,
        spent_usd=0.08,
        budget_usd=1.0,
        spent_other=spent_other or {},
        unpriced_calls=2,
    )
    done = RunView(
        id="r_1",
        cause="launch",
        state="ended",
        outcome="done",
        error="",
        steps=3,
        tokens_in=8_000,
        tokens_out=2_000,
        queued_at=at(28, 10, 2),
        started_at=at(28, 10, 2),
        ended_at=at(28, 10, 5),
        cost_usd=0.05,
        report={
            "state": "done",
            "summary": "比较了三家云的 A100 包月价。\nX 云最便宜。",
            "message": "GPU 价格调研好了:A100 包月最便宜的是 X 云,约 ¥7,800。",
            "question": None,
            "files": ["report.md", "data/prices.csv"],
            "would": "",
        },
    )
    failed = RunView(
        id="r_2",
        cause="followup",
        state="ended",
        outcome="failed",
        error="X 云的价格页要登录,我进不去",
        steps=2,
        tokens_in=1_000,
        tokens_out=200,
        queued_at=at(28, 11),
        started_at=at(28, 11),
        ended_at=at(28, 11, 1),
        cost_usd=0.01,
        cost_other={"CNY": 0.5},
        unpriced_calls=2,
        report={"state": "failed", "summary": "登录页挡住了", "message": "没做完:价格页要登录。"},
    )
    budget = RunView(
        id="r_3",
        cause="retry",
        state="ended",
        outcome="budget",
        error="",
        steps=1,
        tokens_in=3_000,
        tokens_out=800,
        queued_at=at(28, 11, 30),
        started_at=at(28, 11, 30),
        ended_at=at(28, 13, 35),
        cost_usd=0.02,
        report={
            "state": "needs_you",
            "summary": "预算快用完了",
            "question": {
                "text": "比较包月价还是按小时价?",
                "options": ["包月价", "按小时价"],
                "default": "包月价",
            },
        },
    )
    return TaskDetail(
        task=task,
        words=f"帮我调研三家云的 GPU 价格\n登录用 password: {PASSWORD}\n```\n不要破坏格式\n```",
        brief="调研 A、B、C 三家云的 A100 包月价和按小时价",
        folder="/home/u/.local/share/errand/bots/b_1/workspace/tasks/gpu-t_0123456789ab",
        folder_bytes=1024,
        session_bytes=2048,
        report=budget.report,
        runs=(done, failed, budget),
        cleanup_at=at(28, 12) + 30 * 86400,
    )


def task_steps() -> dict[str, list[dict[str, object]]]:
    return {
        "r_1": [
            step("model", "deepseek-chat", "先查 A 云", duration_ms=1200, tokens_in=1200, tokens_out=300),
            step(
                "tool",
                "bash: curl -s https://api.a.example/prices",
                f"OPENAI_API_KEY={KEY}\nok",
                duration_ms=800,
            ),
            step("tool", "read_file: notes.md", "has ```` four backticks\nand more"),
        ],
        "r_2": [
            step("tool", "web_fetch: https://x.example/prices", "HTTP 401 login required", ok=False),
            step("note", "gave up", f"Authorization: Bearer {KEY}"),
        ],
        "r_3": [step("model", "deepseek-chat", "x" * 5000)],
    }


def headings(document: str) -> list[str]:
    """The document's headings, outside fenced blocks (so the structure is what a renderer sees)."""
    found, fence = [], ""
    for line in document.splitlines():
        stripped = line.strip()
        if fence:
            if stripped == fence:
                fence = ""
            continue
        if stripped.startswith("```"):
            fence = re.match(r"`+", stripped).group(0)  # type: ignore[union-attr]
            continue
        if line.startswith("#"):
            found.append(line)
    assert fence == "", "a fenced block was left open"
    return found


def test_task_export_in_chinese_has_every_run_with_its_report_costs_and_steps() -> None:
    doc = task_markdown(task_detail(), task_steps(), lang="zh", exported_at=at(29, 8), tz=TZ)
    assert doc.startswith("# GPU 价格调研\n")
    assert "- 阶段:已完成" in doc
    assert "- 来自:桌面 · 对话 c_42 · 2026-11-28 10:02 (Asia/Shanghai)" in doc
    assert "- 花费:约 $0.08 / 预算 $1.00；2 次调用未定价" in doc
    assert "- 导出于:2026-11-29 08:00 (Asia/Shanghai)" in doc
    assert "> 帮我调研三家云的 GPU 价格" in doc
    assert headings(doc) == [
        "# GPU 价格调研",
        "## 你的原话",
        "## 交给后台的说明",
        "## 第 1 次 · 开始 · 完成",
        "### 报告 · 完成",
        "### 处理过程 · 3 步",
        "## 第 2 次 · 补充后继续 · 失败",
        "### 报告 · 失败",
        "### 处理过程 · 2 步",
        "## 第 3 次 · 重试 · 预算用完",
        "### 报告 · 需要你",
        "### 处理过程 · 1 步",
    ]
    run_1 = doc.split("## 第 1 次")[1].split("## 第 2 次")[0]
    assert "- 开始:2026-11-28 10:02 (Asia/Shanghai)" in run_1
    assert "- 用时:3 分钟" in run_1
    assert "- 花费:约 $0.05" in run_1
    assert "> 比较了三家云的 A100 包月价。\n> X 云最便宜。" in run_1
    assert "> GPU 价格调研好了:A100 包月最便宜的是 X 云,约 ¥7,800。" in run_1
    assert "- `report.md`" in run_1 and "- `data/prices.csv`" in run_1
    assert "1. 模型 · deepseek-chat · 1.2 秒 · 1,200 → 300 tokens" in run_1
    assert "2. 工具 · bash: curl -s https://api.a.example/prices · 0.8 秒" in run_1
    run_2 = doc.split("## 第 2 次")[1].split("## 第 3 次")[0]
    assert "- 出错:X 云的价格页要登录,我进不去" in run_2
    # other currencies are listed on their own, never added to dollars
    assert "- 花费:约 $0.01；另计 约 ¥0.50；2 次调用未定价" in run_2
    assert "1. **失败** · 工具 · web_fetch: https://x.example/prices" in run_2
    run_3 = doc.split("## 第 3 次")[1]
    assert "- 用时:2 小时 5 分钟" in run_3
    assert "> 比较包月价还是按小时价?" in run_3
    assert "选项:包月价 / 按小时价" in run_3
    assert "不回复就按包月价做" in run_3
    assert "… (还有 3,000 字)" in run_3  # a long detail is clipped


def test_task_export_in_english() -> None:
    doc = task_markdown(
        task_detail(stage_label="Ready"), task_steps(), lang="en", exported_at=at(29, 8), tz=TZ
    )
    assert "- Stage: Ready" in doc
    assert "- From: Desktop · conversation c_42 · 2026-11-28 10:02 (Asia/Shanghai)" in doc
    assert "- Cost: about $0.08 / budget $1.00; 2 calls not priced" in doc
    assert [h for h in headings(doc) if h.startswith("## Run")] == [
        "## Run 1 · started · done",
        "## Run 2 · after your follow-up · failed",
        "## Run 3 · retry · budget used up",
    ]
    assert "### Report · done" in doc and "### Steps · 3" in doc
    assert "- Took: 3 min" in doc and "- Took: 2 h 5 min" in doc
    assert "- Cost: about $0.01; plus about ¥0.50; 2 calls not priced" in doc
    assert "1. **failed** · tool · web_fetch: https://x.example/prices" in doc
    assert "Options: 包月价 / 按小时价" in doc and "Without an answer: 包月价" in doc
    assert "… (3,000 more characters)" in doc


def test_task_export_hides_secrets_in_steps_and_in_the_users_words() -> None:
    for lang in ("zh", "en"):
        doc = task_markdown(task_detail(), task_steps(), lang=lang, exported_at=at(29, 8), tz=TZ)
        assert KEY not in doc
        assert PASSWORD not in doc
        assert f"OPENAI_API_KEY={REDACTED}" in doc
        assert f"Authorization: Bearer {REDACTED}" in doc
        assert f"> 登录用 password: {REDACTED}" in doc


def test_user_text_cannot_break_the_document_structure() -> None:
    detail = task_detail()
    words = "# not a heading\n```\n## still not a heading\n"
    steps = {"r_1": [step("tool", "read_file: x.md", "````\n# inside\n```` and ``` more\n## deeper")]}
    doc = task_markdown(replace(detail, words=words), steps, lang="zh", exported_at=at(29, 8), tz=TZ)
    assert "> # not a heading" in doc and "> ## still not a heading" in doc
    assert "`````" in doc  # the fence is longer than the four backticks inside
    assert not any("inside" in h or "deeper" in h or "not a heading" in h for h in headings(doc))


def test_a_private_key_in_quoted_text_is_hidden_line_by_line() -> None:
    key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
    detail = replace(task_detail(), words=f"用这个密钥:\n{key}\n谢谢")
    doc = task_markdown(detail, {}, lang="zh", exported_at=at(29, 8), tz=TZ)
    assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" not in doc
    assert f"> 用这个密钥:\n> {REDACTED}\n> 谢谢" in doc


def test_a_task_without_runs_and_a_live_run() -> None:
    detail = task_detail()
    live = RunView(
        id="r_9",
        cause="answer",
        state="running",
        outcome="",
        error="",
        steps=0,
        tokens_in=0,
        tokens_out=0,
        queued_at=at(29, 7),
        started_at=at(29, 7, 50),
        ended_at=0,
    )
    doc = task_markdown(replace(detail, runs=(live,)), {}, lang="zh", exported_at=at(29, 8), tz=TZ)
    assert "## 第 1 次 · 回答后继续 · 进行中" in doc
    assert "- 用时:10 分钟" in doc
    empty = task_markdown(replace(detail, runs=()), {}, lang="en", exported_at=at(29, 8), tz=TZ)
    assert "No runs yet." in empty
    assert "## Report · needs you" in empty  # the task's Report, which no run carries here


def test_steps_the_store_dropped_are_counted_and_numbering_goes_on() -> None:
    rows = [step("note", "130 earlier steps not kept"), step("tool", "bash: ls")]
    detail = task_detail()
    doc = task_markdown(
        replace(detail, runs=detail.runs[:1]),
        {"r_1": rows},
        lang="zh",
        exported_at=at(29, 8),
        tz=TZ,
    )
    assert "### 处理过程 · 131 步" in doc
    assert "前面还有 130 步没有保留。" in doc
    assert "131. 工具 · bash: ls" in doc


# ---- rules ---------------------------------------------------------------------------------------------


def rule_view(*, paused_reason: str = "") -> RuleView:
    return RuleView(
        id="ru_1",
        bot_id="b_1",
        conversation_id="c_42",
        title="X 的价格",
        instruction="每天早上 8 点看看 X 的价格,降到 200 以下告诉我",
        kind="check",
        mode="observe",
        schedule={"kind": "daily", "time": "08:00", "tz": TZ},
        schedule_words="每天 08:00(Asia/Shanghai)",
        tz=TZ,
        version=2,
        next_run_at=at(30, 8),
        next_run_iso="2026-11-30T08:00:00+08:00",
        paused_reason=paused_reason,
        created_at=at(20, 9),
        updated_at=at(25, 9),
        month_cost_usd=0.4,
        month_budget_usd=3.0,
        run_budget_usd=0.1,
    )


def versions() -> list[RuleVersionView]:
    return [
        RuleVersionView(1, "每天早上看看 X 的价格", at(20, 9)),
        RuleVersionView(2, "每天早上 8 点看看 X 的价格,降到 200 以下告诉我", at(25, 9)),
    ]


def log(lang: str) -> list[RunLogEntry]:
    zh = lang == "zh"
    return [
        RunLogEntry(
            id="r_4",
            time=at(29, 8),
            mode="act",
            cause="manual",
            state="ended",
            outcome="done",
            version=2,
            line="已发送:“X 降价了,现在 ¥199”" if zh else "Sent: “X is down to ¥199”",
            reason="",
            said="X 降价了,现在 ¥199(昨天 ¥259)",
            would="",
            report={"state": "done", "summary": "价格 199", "message": "X 降价了,现在 ¥199(昨天 ¥259)"},
            cost_usd=0.03,
            permission="workspace-write",
            steps=(
                ActivityStep("tool", "web_fetch: https://shop.example/x", f"api_key = {KEY}"),
                ActivityStep("model", "deepseek-chat", "价格 199", duration_ms=900),
            ),
        ),
        RunLogEntry(
            id="r_3",
            time=at(28, 8),
            mode="observe",
            cause="schedule",
            state="ended",
            outcome="done",
            version=2,
            line="本会发送:“X 降价了”" if zh else "Would have sent: “X dropped”",
            reason="",
            said="",
            would="X 降价了,现在 ¥199",
            report={"state": "done", "summary": "看到 199", "would": "发一条降价提醒"},
            cost_usd=0.02,
            permission="read-only",
            steps=(ActivityStep("tool", "web_fetch: https://shop.example/x", "199"),),
        ),
        RunLogEntry(
            id="r_2",
            time=at(27, 8),
            mode="observe",
            cause="schedule",
            state="ended",
            outcome="skipped",
            version=1,
            line="跳过:电脑没开" if zh else "Skipped: the computer was off",
            reason="missed",
            said="",
            would="",
            report=None,
            cost_usd=0.0,
            permission="read-only",
        ),
        RunLogEntry(
            id="r_1",
            time=at(26, 8),
            mode="observe",
            cause="schedule",
            state="ended",
            outcome="failed",
            version=1,
            line="失败:页面打不开(已重试 3 次)" if zh else "Failed: the page would not open",
            reason="页面打不开(已重试 3 次)",
            said="",
            would="",
            report=None,
            cost_usd=0.01,
            permission="read-only",
            steps=(ActivityStep("tool", "web_fetch: https://shop.example/x", "HTTP 503", ok=False),),
        ),
    ]


def test_rule_export_in_chinese() -> None:
    doc = rule_markdown(rule_view(), versions(), log("zh"), lang="zh", exported_at=at(29, 9), tz=TZ)
    assert doc.startswith("# X 的价格\n")
    assert "- 模式:观察" in doc
    assert "- 时间表:每天 08:00(Asia/Shanghai)" in doc
    assert "- 下次运行:2026-11-30 08:00 (Asia/Shanghai)" in doc
    assert "- 本月花费:约 $0.40 / 预算 $3.00(每次 $0.10)" in doc
    assert "> 每天早上 8 点看看 X 的价格,降到 200 以下告诉我" in doc
    assert headings(doc) == [
        "# X 的价格",
        "## 你的原话",
        "## 版本",
        "### 第 2 版 (当前) · 2026-11-25 09:00 (Asia/Shanghai)",
        "### 第 1 版 · 2026-11-20 09:00 (Asia/Shanghai)",
        "## 运行记录",
        "### 2026-11-29 08:00 (Asia/Shanghai) · 执行 · 已发送:“X 降价了,现在 ¥199” · 约 $0.03",
        "#### 报告 · 完成",
        "#### 处理过程 · 2 步",
        "### 2026-11-28 08:00 (Asia/Shanghai) · 观察 · 本会发送:“X 降价了” · 约 $0.02",
        "#### 报告 · 完成",
        "#### 处理过程 · 1 步",
        "### 2026-11-27 08:00 (Asia/Shanghai) · 观察 · 跳过:电脑没开",
        "### 2026-11-26 08:00 (Asia/Shanghai) · 观察 · 失败:页面打不开(已重试 3 次) · 约 $0.01",
        "#### 处理过程 · 1 步",
    ]
    assert "> 每天早上看看 X 的价格" in doc  # the first version's words
    act = doc.split("### 2026-11-29")[1].split("### 2026-11-28")[0]
    assert "- 触发:手动" in act and "- 版本:第 2 版" in act and "- 权限:可写工作区" in act
    assert "**已发送**\n\n> X 降价了,现在 ¥199(昨天 ¥259)" in act
    observe = doc.split("### 2026-11-28")[1].split("### 2026-11-27")[0]
    assert "- 权限:只读" in observe
    assert "**本会发送**\n\n> X 降价了,现在 ¥199" in observe
    assert "**本会做**\n\n> 发一条降价提醒" in observe
    failed = doc.split("### 2026-11-26")[1]
    assert "- 原因:页面打不开(已重试 3 次)" in failed
    assert "1. **失败** · 工具 · web_fetch: https://shop.example/x" in failed


def test_rule_export_in_english_with_a_paused_rule() -> None:
    doc = rule_markdown(
        rule_view(paused_reason="failures"), versions(), log("en"), lang="en", exported_at=at(29, 9), tz=TZ
    )
    assert "- Mode: observe" in doc
    assert "- This month: about $0.40 / budget $3.00 ($0.10 a run)" in doc
    assert "- Paused: after 3 failures in a row" in doc
    assert "### v2 (current) · 2026-11-25 09:00 (Asia/Shanghai)" in doc
    assert "### 2026-11-29 08:00 (Asia/Shanghai) · act · Sent: “X is down to ¥199” · about $0.03" in doc
    assert "### 2026-11-27 08:00 (Asia/Shanghai) · observe · Skipped: the computer was off" in doc
    assert "- Cause: run by hand" in doc and "- Permission: read-only" in doc
    assert "**Would have sent**" in doc and "**Sent**" in doc


def test_rule_export_hides_secrets() -> None:
    doc = rule_markdown(rule_view(), versions(), log("zh"), lang="zh", exported_at=at(29, 9), tz=TZ)
    assert KEY not in doc
    assert f"api_key = {REDACTED}" in doc


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_rule_without_runs(lang: str) -> None:
    rule = replace(rule_view(), next_run_at=0.0)
    doc = rule_markdown(rule, [], [], lang=lang, exported_at=at(29, 9), tz=TZ)
    assert ("还没有运行过。" if lang == "zh" else "No runs yet.") in doc
    assert ("- 下次运行:不会再运行" if lang == "zh" else "- Next run: none") in doc
