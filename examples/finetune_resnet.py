"""Finetune a ResNet-18 on a folder of images (one sub-folder per class), with a progress bar.

    python examples/finetune_resnet.py --data path/to/train [--pretrained] [--epochs 3]

The recipe from the notes: load ``resnet18`` (ImageNet weights with ``--pretrained``, from
``$EMBER_HOME/hub/checkpoints`` or downloaded), freeze every parameter, replace the last
fully-connected layer with one for this dataset's classes and optimise only that layer.
"""
from __future__ import annotations

import argparse

import os
import sys

import ember
import ember.nn as nn
from ember import optim
from ember.utils.data import DataLoader

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _needs import need  # noqa: E402

tqdm = need("tqdm").tqdm
vision = need("ember.vision", install="pip install -e plugins/ember_vision (in ember's checkout)")
datasets, models, transforms = vision.datasets, vision.models, vision.transforms

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def build_model(num_classes: int, pretrained: bool) -> nn.Module:
    model = models.resnet18(pretrained=pretrained)
    for param in model.parameters():
        param.requires_grad = False
    # parameters of a newly constructed module have requires_grad=True
    model.fc = nn.Linear(512, num_classes)
    return model


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="an ImageFolder tree: DATA/<class>/<image>")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--pretrained", action="store_true", help="start from ImageNet weights")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    ember.manual_seed(args.seed)

    train_tf = transforms.Compose([
        transforms.RandomResizedCrop(args.image_size, scale=(0.5, 1.0)),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(MEAN, STD),
    ])
    data = datasets.ImageFolder(args.data, transform=train_tf)
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=True)
    model = build_model(len(data.classes), args.pretrained)
    optimizer = optim.SGD(model.fc.parameters(), lr=args.lr, momentum=0.9)
    criterion = nn.CrossEntropyLoss()

    losses = []
    for epoch in range(args.epochs):
        model.train()
        total, correct, running = 0, 0, 0.0
        with tqdm(loader, desc=f"epoch {epoch + 1}/{args.epochs}", unit="batch", disable=None) as bar:
            for images, labels in bar:
                images, labels = images.to(model.fc.weight.device), labels.to(model.fc.weight.device)
                optimizer.zero_grad()
                out = model(images)
                loss = criterion(out, labels)
                loss.backward()
                optimizer.step()
                running += loss.item() * len(labels)
                correct += int((out.argmax(1) == labels).sum())
                total += len(labels)
                bar.set_postfix(loss=f"{running / total:.3f}", acc=f"{correct / total:.2f}")
        losses.append(running / total)
    return {"classes": data.classes, "losses": losses, "accuracy": correct / total, "model": model}


if __name__ == "__main__":
    result = main()
    print(f"classes {result['classes']}: final loss {result['losses'][-1]:.4f}, accuracy {result['accuracy']:.2f}")
