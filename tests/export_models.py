"""Models and helpers shared by the tracing, export and ONNX tests."""
import ember.nn as nn
import ember.nn.functional as F


def to_np(t):
    return t.detach().cpu().numpy()


class Fn(nn.Module):
    """A module running ``fn(*mods, *inputs)``: a function with the layers it uses as submodules."""

    def __init__(self, fn, *mods):
        super().__init__()
        self.fn = fn
        self.mods = nn.ModuleList(mods)

    def forward(self, *x):
        return self.fn(*self.mods, *x)


class Net(nn.Module):
    """The seeds' LeNet, whose ``view(x.size()[0], -1)`` reads the batch size."""

    def __init__(self):
        super(Net, self).__init__()  # noqa: UP008 - as the seeds write it
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(x.size()[0], -1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x
