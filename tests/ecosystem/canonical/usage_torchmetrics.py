"""torchmetrics' canonical usage, run by the ecosystem harness under PyTorch and under ember (the sdist has no
tests). Expected values are computed by hand with NumPy, so both runs check against the same numbers."""
import numpy as np

import torch
import torchmetrics as tm

PREDS = np.array([0, 2, 1, 3, 3, 0, 1, 2])
TARGET = np.array([0, 1, 1, 3, 2, 0, 1, 2])


def test_multiclass_accuracy_over_batches():
    metric = tm.classification.MulticlassAccuracy(num_classes=4, average="micro")
    for lo in (0, 4):
        metric.update(torch.tensor(PREDS[lo:lo + 4]), torch.tensor(TARGET[lo:lo + 4]))
    assert abs(metric.compute().item() - (PREDS == TARGET).mean()) < 1e-6


def test_binary_f1_and_confusion_matrix():
    preds, target = torch.tensor([0.9, 0.2, 0.7, 0.4, 0.6]), torch.tensor([1, 0, 0, 1, 1])
    hard = np.array([1, 0, 1, 0, 1])
    tp, fp, fn = 2, 1, 1
    assert abs(tm.functional.classification.binary_f1_score(preds, target).item() - 2 * tp / (2 * tp + fp + fn)) < 1e-6
    cm = tm.classification.BinaryConfusionMatrix()(preds, target)
    assert cm.tolist() == [[1, 1], [1, 2]] and hard.sum() == 3


def test_regression_metrics():
    x = np.linspace(-1, 2, 7)
    y = x ** 2
    p, t = torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)
    assert abs(tm.MeanSquaredError()(p, t).item() - ((x - y) ** 2).mean()) < 1e-5
    assert abs(tm.MeanAbsoluteError()(p, t).item() - np.abs(x - y).mean()) < 1e-5
    r2 = 1 - ((y - x) ** 2).sum() / ((y - y.mean()) ** 2).sum()
    assert abs(tm.R2Score()(p, t).item() - r2) < 1e-4


def test_metric_collection_reset():
    coll = tm.MetricCollection([tm.classification.MulticlassAccuracy(num_classes=4),
                                tm.classification.MulticlassPrecision(num_classes=4)])
    coll.update(torch.tensor(PREDS), torch.tensor(TARGET))
    out = coll.compute()
    assert set(out) == {"MulticlassAccuracy", "MulticlassPrecision"}
    coll.reset()
    coll.update(torch.tensor(TARGET), torch.tensor(TARGET))
    assert coll.compute()["MulticlassAccuracy"].item() == 1.0
