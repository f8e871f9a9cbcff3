"""The text classifier example trains both its models to well above chance."""
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("model", ["lstm", "transformer"])
def test_text_classifier_learns_the_rule(model):
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "text_classifier.py"),
                           "--model", model, "--epochs", "2", "--train", "1500"],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    accuracy = float(re.search(r"test accuracy ([0-9.]+)", done.stdout).group(1))
    assert accuracy > 0.8, done.stdout
