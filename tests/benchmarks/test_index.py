"""benchmarks/ says what it holds: every script and folder named in its README, and every
recording under results/ either read by something maintained (a test, a script, the docs) or
kept as a dated figure's evidence under results/dated/."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"


def test_every_script_and_folder_is_in_the_readme() -> None:
    readme = (BENCHMARKS / "README.md").read_text()
    scripts = [p.stem for p in BENCHMARKS.glob("*.py") if p.stem != "__init__"]
    folders = [p.name for p in BENCHMARKS.iterdir() if p.is_dir() and not p.name.startswith("_")]
    missing = [f"{s}.py" for s in scripts if f"{s}.py" not in readme]
    missing += [f"{d}/" for d in folders if f"{d}/" not in readme]
    assert missing == [], f"benchmarks/README.md does not name {missing}"


def test_every_recording_is_read_or_dated() -> None:
    """A recording outside results/dated/ is named by a test, a script or a document other
    than the README that indexes them."""
    folders = ("tests", "benchmarks", "docs", "service", "runner", "dashboards")
    files = [p for f in folders for p in (ROOT / f).rglob("*") if p.suffix in (".py", ".md")]
    texts = [p.read_text(errors="ignore") for p in files if p != BENCHMARKS / "README.md"]
    texts.append((ROOT / "README.md").read_text())
    results = BENCHMARKS / "results"
    unread = [p.name for p in results.iterdir() if p.name != "dated"
              and not any(p.name in text for text in texts)]  # fmt: skip
    assert unread == [], f"benchmarks/results/{unread} are read by nothing: move them to dated/"
