"""transformers' canonical usage: a random tiny GPT-2 (offline), its forward, loss, greedy generation and a few
``Trainer`` steps, run by the ecosystem harness under PyTorch and under ember."""

import torch
import transformers


def _tiny():
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=50, n_positions=32, n_embd=16, n_layer=2, n_head=2)
    return transformers.GPT2LMHeadModel(cfg)


def test_forward_loss_generate():
    model = _tiny().eval()
    ids = torch.arange(10).remainder(50).unsqueeze(0)
    out = model(ids, labels=ids)
    assert out.logits.shape == (1, 10, 50) and out.loss.item() > 0
    gen = model.generate(ids[:, :4], max_new_tokens=5, do_sample=False, pad_token_id=0)
    assert gen.shape == (1, 9) and gen[0, :4].tolist() == [0, 1, 2, 3]


class _Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        ids = torch.arange(i, i + 8).remainder(50)
        return {"input_ids": ids, "labels": ids}


def test_trainer_steps(tmp_path):
    model = _tiny()
    args = transformers.TrainingArguments(output_dir=str(tmp_path), max_steps=6, per_device_train_batch_size=4,
                                          learning_rate=1e-2, report_to=[], use_cpu=True, save_strategy="no",
                                          logging_steps=1, seed=0)
    trainer = transformers.Trainer(model=model, args=args, train_dataset=_Tokens())
    losses = [h["loss"] for h in trainer.train() and trainer.state.log_history if "loss" in h]
    assert trainer.state.global_step == 6 and losses[-1] < losses[0]
