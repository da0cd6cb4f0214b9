"""The service's memory under forged and unsigned webhook floods (issue 17, item 2).

    python -m benchmarks.webhook_memory [--clients 20] [--megabytes 24]

Starts `kernelwatch serve` (SQLite, a webhook secret set), then posts `--clients` bodies of
`--megabytes` MB at once, three times: with no signature header, with a well-formed but wrong
signature, and (for scale) a signed one that is no push. Prints the service's peak resident memory
(VmHWM) before and after each flood and the growth against the 150 MB the issue allows for the
first two, and each flood's answers. Linux only (/proc).
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
SECRET = "memory-secret"
ALLOWED_MB = 150


def peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/PID/status")


def flood(url: str, body: bytes, headers: dict[str, str], clients: int) -> Counter[int]:
    answers: Counter[int] = Counter()
    lock = threading.Lock()

    def post(i: int) -> None:
        delivery = f"flood-{i}-{time.time()}"
        sent = {**headers, "X-GitHub-Event": "push", "X-GitHub-Delivery": delivery}
        try:
            status = httpx.post(f"{url}/webhooks/github", content=body, headers=sent,
                                timeout=120).status_code  # fmt: skip
        except httpx.HTTPError:
            status = 0  # the service closed the connection early
        with lock:
            answers[status] += 1

    threads = [threading.Thread(target=post, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, default=20)
    p.add_argument("--megabytes", type=int, default=24)
    args = p.parse_args(argv)
    body = b'{"pad": "' + b"x" * (args.megabytes << 20) + b'"}'
    signed = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    floods = [
        ("unsigned", {}),
        ("forged signature", {"X-Hub-Signature-256": "sha256=" + "0" * 64}),
        ("signed, no push", {"X-Hub-Signature-256": signed}),
    ]
    with tempfile.TemporaryDirectory() as data:
        port = 18000 + os.getpid() % 1000
        env = {**os.environ, "KERNELWATCH_DATA_DIR": data, "KERNELWATCH_WEBHOOK_SECRET": SECRET,
               "KERNELWATCH_LOG_LEVEL": "WARNING"}  # fmt: skip
        service = subprocess.Popen([sys.executable, "-m", "service.cli", "serve", "--port",
                                    str(port)], cwd=ROOT, env=env)  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            print(f"| flood ({args.clients} x {args.megabytes} MB) | peak before MB | peak after "
                  f"MB | growth MB | answers | verdict |")  # fmt: skip
            print("|---|--:|--:|--:|---|---|")
            failed = False
            for name, headers in floods:
                before = peak_mb(service.pid)
                answers = flood(url, body, headers, args.clients)
                after = peak_mb(service.pid)
                growth = after - before
                judged = name != "signed, no push"
                verdict = ("PASS" if growth < ALLOWED_MB else "FAIL") if judged else "(scale)"
                failed |= verdict == "FAIL"
                print(f"| {name} | {before:.0f} | {after:.0f} | {growth:.0f} | "
                      f"{dict(sorted(answers.items()))} | {verdict} |")  # fmt: skip
        finally:
            service.terminate()
            service.wait(30)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
