"""The tools every session has, in the order the model sees them."""

from __future__ import annotations

import httpx

from core.agent.tool_api import ToolSpec
from core.agent.tools.bash import bash_tool
from core.agent.tools.files import edit_file_tool, read_file_tool, write_file_tool
from core.agent.tools.jobs_tool import jobs_tool
from core.agent.tools.search import grep_tool, list_files_tool
from core.agent.tools.web_fetch import web_fetch_tool


def common_tools(*, web_transport: httpx.AsyncBaseTransport | None = None) -> list[ToolSpec]:
    return [
        bash_tool(),
        read_file_tool(),
        write_file_tool(),
        edit_file_tool(),
        list_files_tool(),
        grep_tool(),
        web_fetch_tool(web_transport),
        jobs_tool(),
    ]
