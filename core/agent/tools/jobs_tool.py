"""The `jobs` tool: list, wait for and kill the session's own background jobs."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from core.agent.jobs import Job
from core.agent.tool_api import ToolContext, ToolError, ToolSpec

OUTPUT_CHARS = 4000


class JobsArgs(BaseModel):
    action: Literal["list", "wait", "kill"] = Field(
        description="list: this session's jobs; wait: wait for job `id` to end; kill: stop job `id`."
    )
    id: str | None = Field(default=None, description="The job id (e.g. 'j1'); needed for wait and kill.")
    timeout_s: float = Field(
        default=30.0, gt=0, le=600, description="For wait: seconds to wait at most (the job keeps running)."
    )


def _own_job(ctx: ToolContext, args: JobsArgs) -> Job:
    if not args.id:
        raise ToolError(f"The `id` field is required for action '{args.action}' (e.g. id='j1').")
    job = ctx.jobs.get(args.id)
    # Another session's job is none of this session's business; do not even confirm it exists.
    if job is None or job.session_id != ctx.session_id:
        raise ToolError(f"Unknown job {args.id!r}. Use action 'list' to see this session's jobs.")
    return job


def _age(ctx: ToolContext, job: Job) -> str:
    end = job.ended_at if job.ended_at is not None else ctx.clock.time()
    return f"{max(0.0, end - job.started_at):.0f}s"


def _report(job: Job) -> str:
    output = job.output()
    tail = output[-OUTPUT_CHARS:]
    cut = f"[... {len(output) - len(tail)} earlier characters not shown]\n" if len(tail) < len(output) else ""
    if not tail.strip():
        return "(no output yet)" if job.running else "(no output)"
    return cut + tail.rstrip("\n")


async def run_jobs(ctx: ToolContext, args: JobsArgs) -> str:
    if args.action == "list":
        jobs = ctx.jobs.list(ctx.session_id)
        if not jobs:
            return "No background jobs in this session."
        return "\n".join(f"{job.id}  {job.outcome()}  ({_age(ctx, job)})  {job.command}" for job in jobs)
    job = _own_job(ctx, args)
    if args.action == "wait":
        await ctx.jobs.wait(job.id, args.timeout_s)
        if job.running:
            return f"Job {job.id} is still running after {args.timeout_s:g}s. Output so far:\n{_report(job)}"
        return f"Job {job.id} finished: {job.outcome()}. Output:\n{_report(job)}"
    if not job.running:
        return f"Job {job.id} had already finished: {job.outcome()}."
    await ctx.jobs.kill(job.id)
    return f"Killed job {job.id} and its child processes. Output:\n{_report(job)}"


def jobs_tool() -> ToolSpec:
    return ToolSpec(
        name="jobs",
        description=(
            "Manage your background jobs (started with bash run_in_background=true). action='list' shows "
            "each job's id, status and command; action='wait' with id waits up to timeout_s seconds for it "
            "to end and shows its output; action='kill' with id stops it and all its child processes."
        ),
        args_model=JobsArgs,
        handler=run_jobs,
    )
