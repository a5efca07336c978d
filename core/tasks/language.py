"""Which language to push a message in: the conversation's (DESIGN.md "Defaults"), from the user's words."""

from __future__ import annotations

from typing import Literal

Language = Literal["zh", "en"]


def language_of(text: str) -> Language:
    """Chinese when the text has any CJK ideograph, English otherwise."""
    return "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en"


PUSHED = {
    "zh": {
        "failure": "「{title}」没做完:{reason}",
        "question": "「{title}」想问你:{question}",
        "options": "可选:{options}",
        "default": "不回复就按{default}做",
        "chat_note": "[后台任务「{title}」已完成,结果已发给用户] {text}",
        "budget": "「{title}」已用约 ${spent},再给 $1 继续?",
        "budget_options": "回复「继续」加 $1,写金额(如「再给 3 美元」)加那么多,或「停止」",
    },
    "en": {
        "failure": "“{title}” did not finish: {reason}",
        "question": "“{title}” asks: {question}",
        "options": "Options: {options}",
        "default": "If you don't answer, I'll go with {default}.",
        "chat_note": "[Background task “{title}” finished; its result was delivered to the user] {text}",
        "budget": "“{title}” has used about ${spent}. Give it $1 more to continue?",
        "budget_options": "Reply “continue” to add $1, an amount (“add $3”) to add that much, or “stop”.",
    },
}


def pushed(lang: Language, key: str, **fields: str) -> str:
    return PUSHED[lang][key].format(**fields)
