"""Lightning's canonical usage: a fit and a validate of a small LightningModule, run by the ecosystem harness under
PyTorch and under ember (Lightning's sdist has no tests_pytorch)."""

import torch
import lightning as L


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(3, 1)

    def training_step(self, batch, _):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, _):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.layer(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _loader():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 3, generator=g)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16)


def test_fit_then_validate(tmp_path):
    torch.manual_seed(0)
    model = Regressor()
    trainer = L.Trainer(max_epochs=20, default_root_dir=tmp_path, enable_progress_bar=False,
                        enable_model_summary=False, logger=False, accelerator="cpu", devices=1)
    before = trainer.validate(model, _loader(), verbose=False)[0]["val_loss"]
    trainer.fit(model, _loader(), _loader())
    after = trainer.validate(model, _loader(), verbose=False)[0]["val_loss"]
    assert trainer.global_step == 80 and after < 1e-3 < before
    assert list((tmp_path / "checkpoints").glob("*.ckpt")) or trainer.checkpoint_callback is not None
