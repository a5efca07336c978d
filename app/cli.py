"""The `errand` command: the tray app by default; `serve` (headless host + API), `doctor`, `install-desktop`,
`uninstall-desktop`, `reset`, `--version` (docs/packaging.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.collector import freeze_for_exit, pause_for_start, resume_after_start
from app.instance_lock import DataDirInUseError, DataDirLock
from app.paths import resolve_data_dir


class _VersionAction(argparse.Action):
    """Prints the Python and Qt versions too; Qt is imported only when asked."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the versions of Errand, Python and Qt")

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> None:
        from app.version_info import version_text

        print(version_text())
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="errand", description="Errand: a desktop assistant that works in the background."
    )
    parser.add_argument("--version", action=_VersionAction)
    parser.add_argument(
        "--data-dir", help="where Errand keeps its data (default: ERRAND_DATA_DIR or the user data dir)"
    )
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="run the host headless with the local HTTP API")
    serve.add_argument("--data-dir", dest="sub_data_dir", help="as above")
    serve.add_argument("--port", type=int, default=0, help="API port on 127.0.0.1 (default: a free one)")
    doctor = sub.add_parser("doctor", help="check the set-up and say how to fix each problem")
    doctor.add_argument("--data-dir", dest="sub_data_dir", help="as above")
    sub.add_parser("install-desktop", help="add Errand to the desktop's launcher (Linux), with its icons")
    uninstall = sub.add_parser(
        "uninstall-desktop", help="remove Errand from the launcher and from start at login; keeps your data"
    )
    uninstall.add_argument("--data-dir", dest="sub_data_dir", help="as above")
    reset = sub.add_parser("reset", help="remove a data dir (asks first): every bot, task and log in it")
    reset.add_argument("--data-dir", dest="sub_data_dir", help="as above")
    reset.add_argument("--yes", action="store_true", help="do not ask (for scripts)")
    return parser


def main(argv: list[str] | None = None) -> int:
    pause_for_start()  # resumed once the host is up (app.collector)
    args = _parser().parse_args(argv)
    data_dir = resolve_data_dir(getattr(args, "sub_data_dir", None) or args.data_dir)
    if args.command == "doctor":
        from app.doctor import run_doctor

        resume_after_start()
        return run_doctor(data_dir)
    if args.command in ("install-desktop", "uninstall-desktop", "reset"):
        resume_after_start()
        return _one_off(args.command, data_dir, assume_yes=getattr(args, "yes", False))
    if args.command == "serve" and not 0 <= args.port <= 65535:
        print("errand: --port must be between 0 and 65535", file=sys.stderr)
        return 2
    data_dir.mkdir(parents=True, exist_ok=True)
    # One host per data dir, whether it has a window or not; a second one stops here, at once.
    try:
        with DataDirLock(data_dir):
            if args.command == "serve":
                from app.serve import run_serve

                return _exiting(run_serve(data_dir, args.port))
            from app.gui import run_gui

            return _exiting(run_gui(data_dir))
    except DataDirInUseError as exc:
        if args.command is None:
            return _bring_running_window_forward(exc)
        print(f"errand: {exc}", file=sys.stderr)
        return 1


def _one_off(command: str, data_dir: Path, *, assume_yes: bool) -> int:
    if command == "reset":
        from app.reset import run_reset

        return run_reset(data_dir, assume_yes=assume_yes)
    from app.desktop_commands import run_install_desktop, run_uninstall_desktop

    return run_install_desktop() if command == "install-desktop" else run_uninstall_desktop(data_dir)


def _exiting(code: int) -> int:
    freeze_for_exit()
    return code


def _bring_running_window_forward(in_use: DataDirInUseError) -> int:
    """A second launch of the app is most often a person looking for the window: show them the running one."""
    from app.instance_socket import ask_to_show, socket_name

    if ask_to_show(socket_name(in_use.data_dir)):
        print("errand: Errand is already running; its window was brought forward.", file=sys.stderr)
        return 0
    holder = f" (pid {in_use.pid})" if in_use.pid is not None else ""
    print(
        f"errand: Another Errand{holder} holds {in_use.data_dir} but did not answer a request to show its "
        f"window: it is either `errand serve` (no window) or not responding. Quit or kill it first, "
        f"or start this one with --data-dir <another folder>.",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
