"""Train the digits CNN briefly, export it to ONNX, and serve a prediction with onnxruntime.

    pip install -e ".[examples,onnx]" onnxruntime && python examples/export_onnx.py

The model is ``examples/train_digits.py``'s ``DigitNet``, trained for ``--epochs`` (2 by default) on the
digits that ship with scikit-learn.  ``ember.onnx.export`` writes ``--out`` with a dynamic batch axis,
``onnx.checker`` checks it, and an onnxruntime session (no ember involved) classifies one validation
image and then a whole batch; both are compared with ember's own outputs.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys

import numpy as np

import ember

HERE = os.path.dirname(os.path.abspath(__file__))


def _train_digits():
    spec = importlib.util.spec_from_file_location("train_digits", os.path.join(HERE, "train_digits.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--out", default="checkpoints/digits.onnx", help="the ONNX file to write")
    p.add_argument("--opset", type=int, default=17)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    import onnx
    import onnxruntime as ort

    digits = _train_digits()
    ckpt = os.path.join(os.path.dirname(os.path.abspath(args.out)) or ".", "digits_for_onnx.pt")
    trained = digits.main(["--quiet", "--epochs", str(args.epochs), "--seed", str(args.seed), "--checkpoint", ckpt,
                           "--device", "cpu"])
    model = trained["model"].eval()
    _, _, x_val, y_val, _ = digits.load_data(None, True, args.seed)

    os.makedirs(os.path.dirname(os.path.abspath(args.out)) or ".", exist_ok=True)
    ember.onnx.export(model, (x_val[:1],), args.out, input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}}, opset_version=args.opset)
    onnx.checker.check_model(onnx.load(args.out))
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes, opset {args.opset})")

    session = ort.InferenceSession(args.out, providers=["CPUExecutionProvider"])
    image = x_val[:1].numpy()
    logits = session.run(["logits"], {"image": image})[0]
    pred, label = int(logits.argmax(1)[0]), int(y_val[0])
    print(f"onnxruntime predicts {pred} for a validation image of a {label}")

    batch = session.run(["logits"], {"image": x_val.numpy()})[0]
    with ember.no_grad():
        ours = model(x_val).numpy()
    max_diff = float(np.abs(batch - ours).max())
    acc = float((batch.argmax(1) == y_val.numpy()).mean())
    print(f"{len(batch)} validation images: accuracy {acc:.4f} through onnxruntime, largest difference from "
          f"ember's logits {max_diff:.2e}")
    return {"prediction": pred, "label": label, "accuracy": acc, "max_diff": max_diff,
            "ember_accuracy": trained["val_acc"], "path": args.out}


if __name__ == "__main__":
    main(sys.argv[1:])
