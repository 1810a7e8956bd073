"""The character-level language model example learns: perplexity falls well below the uniform baseline."""
import math
import os
import sys
from pathlib import Path

import pytest

import ember

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))


@pytest.mark.parametrize("model", ["lstm", "transformer"])
def test_char_lm_perplexity_falls(model, capsys, tmp_path):
    import char_lm

    history = char_lm.main(["--checkpoint", str(tmp_path / "lm.pt"), "--model", model, "--steps", "40",
                            "--seq-len", "32", "--batch-size", "16",
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
    history = char_lm.main(["--text", str(p), "--checkpoint", str(tmp_path / "lm.pt"), "--steps", "20",
                            "--seq-len", "16", "--batch-size", "8",
                            "--sample-len", "5", "--lr", "1e-2"])
    assert "vocabulary 4" in capsys.readouterr().out
    assert history[-1] < 2.0


def test_char_lm_keeps_the_best_model_stops_early_and_resumes(tmp_path, capsys):
    import char_lm

    ck = str(tmp_path / "lm.pt")
    # a high learning rate overfits the tiny text fast: validation stops improving and training stops early
    p = tmp_path / "t.txt"
    p.write_text("the cat sat on the mat. " * 30 + "a dog ran far away! " * 4, encoding="utf-8")
    args = ["--text", str(p), "--checkpoint", ck, "--steps", "400", "--eval-every", "10", "--patience", "2",
            "--seq-len", "16", "--batch-size", "8", "--sample-len", "3", "--lr", "3e-2"]
    history = char_lm.main(args)
    out = capsys.readouterr().out
    assert "stopping early" in out and len(history) < 40
    saved = ember.load(ck)
    assert saved["state"]["stopped"] and math.isclose(math.exp(saved["state"]["best"]), min(history), rel_tol=1e-9)
    assert f"best model in {os.path.abspath(ck)}" in out
    assert char_lm.main(args + ["--resume"]) == history
    assert "already complete" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no checkpoint at .*missing.pt to resume from"):
        char_lm.main(["--checkpoint", str(tmp_path / "missing.pt"), "--resume"])
