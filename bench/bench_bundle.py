"""The Linux bundle against the venv (issue 20): its size and what takes it, process start -> window shown
and -> host started (the tray app, offscreen), and process start -> `serve` answering /api/health.

Build first (packaging/build-linux), then: .venv/bin/python -m bench.bench_bundle [--runs N]
Each start is a fresh process on a fresh data dir. "cold" is one start after the kernel's page cache was
dropped (as after a reboot; needs root, else it is the first start, said as "first"); "warm" is the median
of the starts after it, which find their files in the cache.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from bench.bench_startup import one_start
from bench.common import line

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "dist" / "errand" / "errand"
VENV = [sys.executable, "-m", "app.cli"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ERRAND_")}
    env.update(QT_QPA_PLATFORM="offscreen", ERRAND_SECRETS="file")
    return env


def window_start(command: Sequence[str], data_dir: Path) -> dict[str, float]:
    return one_start(data_dir, command, _env())


def serve_health(command: Sequence[str], data_dir: Path) -> float:
    """Seconds from the spawn to the first /api/health that says ok. (Not psutil's create_time: it rests on
    a boot time Linux gives in whole seconds; app/process_age.py.)"""
    spawned = time.monotonic()
    proc = subprocess.Popen(
        [*command, "serve", "--data-dir", str(data_dir), "--port", "0"],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdout is not None
        proc.stdout.readline()  # "listening on": api.json is written
        info = json.loads((data_dir / "api.json").read_text(encoding="utf-8"))
        headers = {"Authorization": f"Bearer {info['token']}"}
        with httpx.Client(base_url=info["url"], headers=headers, timeout=10) as client:
            while client.get("/api/health").json()["status"] != "ok":
                pass
        return time.monotonic() - spawned
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def mb(n: float) -> str:
    return f"{n / 2**20:.0f} MB"


def _parts(bundle_dir: Path) -> list[tuple[str, int]]:
    internal = bundle_dir / "_internal"
    groups: dict[str, int] = {}
    for p in internal.rglob("*"):
        if not p.is_file() or p.is_symlink():
            continue
        rel = p.relative_to(internal).parts
        key = "/".join(rel[:3]) if rel[0] == "PySide6" and len(rel) > 3 else rel[0]
        if rel[0] == "PySide6" and len(rel) > 3 and rel[1:3] == ("Qt", "lib"):
            key = "PySide6/Qt/lib (Qt's libraries)"
        groups[key] = groups.get(key, 0) + p.stat().st_size
    return sorted(groups.items(), key=lambda kv: -kv[1])[:8]


def drop_page_cache() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n", encoding="ascii")
    except OSError:
        return False
    return True


def _report(cold: float, dropped: bool, warm: list[float]) -> str:
    first = "cold" if dropped else "first"
    return f"{first} {cold:.2f} s   warm median {statistics.median(warm):.2f} s   (n={len(warm)})"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_bundle")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if not BUNDLE.exists():
        sys.exit(f"{BUNDLE} is missing: build it first with packaging/build-linux")
    size = folder_size(BUNDLE.parent)
    line("bundle size (dist/errand)", mb(size))
    for name, n in _parts(BUNDLE.parent):
        line(f"  {name}", mb(n))
    for wheel in sorted((ROOT / "dist").glob("errand-*.whl")):
        line(f"the wheel ({wheel.name})", f"{wheel.stat().st_size / 2**10:.0f} KB")
    site = next((ROOT / ".venv" / "lib").glob("python3.*/site-packages"))
    line("the dev venv's site-packages, for scale (test tools too)", mb(folder_size(site)))
    with tempfile.TemporaryDirectory() as tmp:
        for who, command in (("bundle", [str(BUNDLE)]), ("venv", VENV)):
            dirs = iter(Path(tmp) / f"{who}-{i}" for i in range(4 * args.runs + 4))
            dropped = drop_page_cache()
            cold = window_start(command, next(dirs))
            warm = [window_start(command, next(dirs)) for _ in range(args.runs)]
            for key, label in (("window-shown", "window shown"), ("host-started", "host started")):
                line(f"{who}: start -> {label}", _report(cold[key], dropped, [w[key] for w in warm]))
            line(f"{who}: RSS once started", f"median {statistics.median(w['rss-mb'] for w in warm):.0f} MB")
            dropped = drop_page_cache()
            cold_serve = serve_health(command, next(dirs))
            warm_serve = [serve_health(command, next(dirs)) for _ in range(args.runs)]
            line(f"{who}: start -> serve answers /api/health ok", _report(cold_serve, dropped, warm_serve))


if __name__ == "__main__":
    main()
