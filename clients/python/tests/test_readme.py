"""The README's example, run as written against the suite's hub (its address substituted)."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_example_runs(hub_url, capsys):
    blocks = re.findall(r"```python runnable\n(.*?)```", README.read_text(), re.S)
    assert blocks, "the README has no runnable example"
    for block in blocks:
        exec(compile(block.replace("http://127.0.0.1:8080", hub_url), str(README), "exec"), {})
    out = capsys.readouterr().out
    assert "approved" in out and "state_conflict accepted" in out and "True" in out
