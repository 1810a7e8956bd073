"""The character-level language model example learns: perplexity falls well below the uniform baseline."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))


@pytest.mark.parametrize("model", ["lstm", "transformer"])
def test_char_lm_perplexity_falls(model, capsys):
    import char_lm

    history = char_lm.main(["--model", model, "--steps", "40", "--seq-len", "32", "--batch-size", "16",
                            "--sample-len", "20", "--lr", "1e-2"])
    out = capsys.readouterr().out
    vocab = int(out.split("vocabulary ")[1].split(",")[0])
    assert history[-1] < history[0]
    assert history[-1] < vocab / 2
    assert "sample: Alice " in out


def test_char_lm_reads_a_given_text(tmp_path, capsys):
    import char_lm

    p = tmp_path / "t.txt"
    p.write_text("abcabcabcabc " * 80, encoding="utf-8")
    history = char_lm.main(["--text", str(p), "--steps", "20", "--seq-len", "16", "--batch-size", "8",
                            "--sample-len", "5", "--lr", "1e-2"])
    assert "vocabulary 4" in capsys.readouterr().out
    assert history[-1] < 2.0
