"""A small PyTorch CPU training job: a conv net on synthetic images, two
DataLoader worker processes, an intra-op pool of two threads.  Runs for
argv[1] seconds of training; train_step is where the model runs."""
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(3, 32, 32, generator=g)
        return x, int(x.sum() > 0)


def train_step(model, opt, x, y):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


def main():
    seconds = float(sys.argv[1])
    torch.set_num_threads(2)
    # oneDNN's convolutions run JIT-generated kernels (anonymous memory,
    # neither CFI nor frame pointers) that no CFI unwinder can leave; argv[2]
    # "jit" keeps them, by default ATen's own kernels run
    torch.backends.mkldnn.enabled = len(sys.argv) > 2 and sys.argv[2] == "jit"
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(64 * 8 * 8, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = DataLoader(Images(), batch_size=64, num_workers=2)
    end = time.monotonic() + seconds
    steps = 0
    for x, y in data:
        train_step(model, opt, x, y)
        steps += 1
        if time.monotonic() > end:
            break
    print(f"{steps} steps", flush=True)


if __name__ == "__main__":
    main()
