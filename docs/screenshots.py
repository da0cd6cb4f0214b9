"""The README's screenshots: the demo's pages in headless Chromium, 1280 and 390 px wide, light
and dark, written to docs/img/.

    python docs/screenshots.py [--base http://127.0.0.1:8000] [--out docs/img]

Without --base it starts `kernelwatch demo` on a free port with a scratch data folder and stops
it afterwards. Needs the dev extras (Playwright) and Debian's Chromium ($KERNELWATCH_CHROMIUM).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("KERNELWATCH_CHROMIUM", "/usr/bin/chromium")
DEMO = "kernelwatch/demo-kernels"
PAGES = {
    "overview": "/",
    # what the navigation's link lands on, not a chosen view
    "trends": "/trends",
    "alerts": "/alerts",
}
SHOTS = [(1280, "light"), (390, "light"), (1280, "dark"), (390, "dark")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_demo(data: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "KERNELWATCH_DATA_DIR": str(data)}
    kernelwatch = Path(sys.executable).parent / "kernelwatch"
    proc = subprocess.Popen([str(kernelwatch), "demo", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    proc.kill()
    raise SystemExit("kernelwatch demo did not answer within 2 minutes")


def shoot(base: str, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        for width, scheme in SHOTS:
            context = browser.new_context(viewport={"width": width, "height": 900},
                                          color_scheme=scheme)  # fmt: skip
            page = context.new_page()
            for name, path in PAGES.items():
                page.goto(base + path)
                page.wait_for_selector("body[data-figures-ready='true']", timeout=30_000)
                target = out / f"{name}-{width}{'-dark' if scheme == 'dark' else ''}.png"
                page.screenshot(path=str(target), full_page=True)
                written.append(target)
            context.close()
        browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="a running kernelwatch (default: start the demo)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = parser.parse_args(argv)
    if args.base:
        written = shoot(args.base.rstrip("/"), args.out)
    else:
        with tempfile.TemporaryDirectory(prefix="kw-screens-") as data:
            proc, base = start_demo(Path(data))
            try:
                written = shoot(base, args.out)
            finally:
                proc.terminate()
                proc.wait(timeout=30)
    for path in written:
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
