import stat
from pathlib import Path

import pytest

from benchmarks import ncu_cost


def test_the_floor_prices_a_launch_and_a_pass_from_ncus_own_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = tmp_path / "calls"
    fake = tmp_path / "ncu"
    # Three launches, each line printed when ncu is done with it; passes by the metric set.
    fake.write_text(f"""#!/bin/sh
echo "$*" >> "{calls}"
case "$*" in *--section*) n=18;; *gpu__time_duration.sum\\ *) n=1;; *) n=15;; esac
for i in 1 2 3; do
  sleep 0.05
  echo "==PROF== Profiling \\"kernelwatch_floor\\" - $i: 0%....50%....100% - $n passes"
done
""")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("KERNELWATCH_NCU", str(fake))
    rows = ncu_cost.floor(3)
    assert rows[0] == "| variant | passes | ms per launch | ms per pass |"
    cells = {r.split(" | ")[0].strip("| "): r.strip("|").split(" | ") for r in rows[2:]}
    assert [cells[v][1] for v in ("runner", "metrics-only", "one-metric")] == ["18", "15", "1"]
    for name in ("runner", "metrics-only", "one-metric"):
        per_launch, per_pass = float(cells[name][2]), float(cells[name][3])
        assert per_launch > 0 and per_pass == pytest.approx(
            per_launch / int(cells[name][1]), abs=0.1
        )
    commands = calls.read_text().splitlines()
    assert len(commands) == 3 and all("--clock-control none" in c for c in commands)
    assert all(c.rstrip().endswith(" 3") for c in commands)  # the program's launches


def test_the_floor_says_so_when_nothing_was_profiled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\necho '==WARNING== No kernels were profiled.'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("KERNELWATCH_NCU", str(fake))
    assert all("no launches profiled" in r for r in ncu_cost.floor(3)[2:])
