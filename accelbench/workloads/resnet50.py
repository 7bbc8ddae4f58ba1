"""The ``resnet50`` workload: ResNet-50 v1.5 written here (torchvision does not import beside our torch).

``standard`` is the real ResNet-50 v1.5 layout (bottleneck blocks (3, 4, 6, 3), base width 64, stride
on the 3x3 conv, 224x224x3 input, 1000 classes, 25.56 M parameters); ``tiny`` is the same code with
blocks (1, 1, 1, 1), base width 8, 32x32 input and 10 classes.

Random weights alone give a poor stand-in for a trained classifier: with unit-gain residual branches the
network is chaotic (bf16 rounding grows to ~40% of the final features), pooled features of different
images are nearly alike, and most inputs land on a few classes with margins that drown in noise. So:

* weights: kaiming fan_out convs, BN gamma 1 / beta 0, and the last BN of every residual branch at
  ``RESIDUAL_GAMMA`` = 0.2, which keeps the network out of the chaotic regime (bf16 error of the pooled
  features ~3% instead of ~40%);
* BN running statistics are calibrated on a seeded batch of images (one training-mode pass);
* the classifier draws its class directions at random inside the whitened span of that batch's centred
  features, is centred on their mean and scaled to a logit spread of ``LOGIT_STD``.

Predictions then spread over many classes, the top-1 margin is far above fp32 noise, and a bf16 run
(torch autocast) keeps the fp32 top-1 on 64 of 64 test images, as a trained ResNet-50 would. The
calibration runs eagerly at build time: bitwise reproducible in one configuration, equal to fp32
rounding across thread counts and CPUs.

Inputs are random images in the scale of normalised photographs (about N(0, 1) per pixel): a blocky
Gaussian field at a random texture scale plus fine noise, with a random contrast and colour cast.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from accelbench.errors import UserError
from accelbench.workloads.base import SIZES, Inputs, Workload


@dataclass(frozen=True, slots=True)
class ResNetShape:
    """The dimensions of one ResNet size."""

    blocks: tuple[int, int, int, int]
    base_width: int
    image_px: int
    classes: int
    calibration_images: int


SHAPES = {
    "tiny": ResNetShape(blocks=(1, 1, 1, 1), base_width=8, image_px=32, classes=10, calibration_images=32),
    "standard": ResNetShape(
        blocks=(3, 4, 6, 3), base_width=64, image_px=224, classes=1000, calibration_images=12
    ),
}

LOGIT_STD = 4.0
"""Standard deviation of the logits over the calibration batch after the classifier is rescaled."""
RESIDUAL_GAMMA = 0.2
"""BN gamma of the last norm of each residual branch: small, so the deep network is not chaotic."""
_SAMPLE_STREAM = 0x50
_CALIBRATION_STREAM = 0x51
_TEXTURE_CELL_PX = (2, 4, 8, 16)


def _shape(size: str) -> ResNetShape:
    if size not in SHAPES:
        raise UserError(f"resnet50: unknown size {size!r}; expected one of {', '.join(SIZES)}")
    return SHAPES[size]


class Bottleneck(nn.Module):
    """ResNet v1.5 bottleneck: 1x1 -> 3x3 (carries the stride) -> 1x1 (x4), plus a projection shortcut."""

    expansion = 4

    def __init__(self, in_ch: int, width: int, stride: int) -> None:
        super().__init__()
        out_ch = width * self.expansion
        self.conv1 = nn.Conv2d(in_ch, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_ch, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_ch)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_ch != out_ch:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False), nn.BatchNorm2d(out_ch)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Residual block output."""
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return self.relu(y + self.shortcut(x))


class ResNet(nn.Module):
    """ResNet with bottleneck blocks: stem, four stages, global average pool, linear classifier."""

    def __init__(self, shape: ResNetShape) -> None:
        super().__init__()
        base = shape.base_width
        self.stem = nn.Sequential(
            nn.Conv2d(3, base, 7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(base),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, stride=2, padding=1),
        )
        stages: list[nn.Module] = []
        in_ch = base
        for i, count in enumerate(shape.blocks):
            width = base * 2**i
            blocks = [
                Bottleneck(in_ch if j == 0 else width * 4, width, 1 if i == 0 or j else 2)
                for j in range(count)
            ]
            stages.append(nn.Sequential(*blocks))
            in_ch = width * 4
        self.stages = nn.Sequential(*stages)
        self.fc = nn.Linear(in_ch, shape.classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Globally pooled features ``[batch, channels]``."""
        return self.stages(self.stem(x)).mean(dim=(2, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``[batch, classes]``."""
        return self.fc(self.features(x))


def random_image(rng: np.random.Generator, image_px: int) -> np.ndarray:
    """One random float32 image ``[3, px, px]`` with its own texture scale, contrast and colour cast.

    Images differ in global statistics the way photographs do, so that the pooled features (and hence
    the predicted class) vary from image to image by much more than rounding noise.
    """
    cell_px = int(rng.choice(_TEXTURE_CELL_PX))
    coarse_px = -(-image_px // cell_px)
    coarse = rng.standard_normal((3, coarse_px, coarse_px))
    smooth = coarse.repeat(cell_px, axis=1).repeat(cell_px, axis=2)[:, :image_px, :image_px]
    fine = rng.uniform(0.1, 0.6) * rng.standard_normal((3, image_px, image_px))
    contrast = np.exp(rng.normal(0.0, 0.25))
    colour = rng.normal(0.0, 0.5, size=(3, 1, 1))
    return (contrast * (smooth + fine) + colour).astype(np.float32)


def random_images(rng: np.random.Generator, count: int, image_px: int) -> np.ndarray:
    """``count`` seeded random images ``[count, 3, px, px]`` (see ``random_image``)."""
    return np.stack([random_image(rng, image_px) for _ in range(count)])


def init_weights(model: ResNet, generator: torch.Generator) -> None:
    """Kaiming fan_out convs; unit BN, except the end of each residual branch at ``RESIDUAL_GAMMA``."""
    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu", generator=generator)
        elif isinstance(module, nn.BatchNorm2d):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
    for module in model.modules():
        if isinstance(module, Bottleneck):
            nn.init.constant_(module.bn3.weight, RESIDUAL_GAMMA)


@torch.no_grad()
def calibrate_norms(model: ResNet, images: torch.Tensor) -> None:
    """Set every BN's running mean/var to the statistics of ``images`` (one training-mode pass)."""
    norms = [module for module in model.modules() if isinstance(module, nn.BatchNorm2d)]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None
    model.train()
    model.features(images)
    model.eval()
    for norm in norms:
        norm.momentum = 0.1


def whitening_directions(centred: torch.Tensor) -> torch.Tensor:
    """Rows spanning the rows of ``centred`` (rank ``n - 1``), each divided by its singular value.

    Projecting a centred feature on them gives coordinates of unit spread over the calibration batch.
    Signs are fixed (largest entry of each row positive) so the result does not depend on LAPACK.
    """
    _, singular, vh = torch.linalg.svd(centred.double(), full_matrices=False)
    rank = centred.shape[0] - 1
    basis = vh[:rank] / singular[:rank, None]
    signs = torch.sign(basis.gather(1, basis.abs().argmax(dim=1, keepdim=True)))
    return (basis * signs).float()


@torch.no_grad()
def calibrate_classifier(model: ResNet, images: torch.Tensor, generator: torch.Generator) -> None:
    """Random class directions in the whitened feature span of ``images``; centred, spread ``LOGIT_STD``.

    Features vary from image to image along few directions while rounding noise spreads over all of
    them; a classifier confined to the varying directions keeps the noise out of the logits, and
    whitening spreads the predictions over many classes instead of the one the largest direction favours.
    """
    features = model.features(images)
    mean = features.mean(dim=0)
    basis = whitening_directions(features - mean)
    mixing = torch.randn(model.fc.out_features, basis.shape[0], generator=generator)
    weight = mixing @ basis
    weight *= LOGIT_STD / ((features - mean) @ weight.T).std()
    model.fc.weight.copy_(weight)
    model.fc.bias.copy_(-(weight @ mean))


class ResNet50(Workload):
    """ResNet-50 v1.5 with seeded, calibrated random weights; output is the logits ``[1, classes]``."""

    name = "resnet50"
    task = "image-classification"
    quality_metric = "top1"

    def input_names(self) -> tuple[str, ...]:
        """One float32 image batch ``[1, 3, px, px]``."""
        return ("input",)

    def build_model(self, size: str, seed: int) -> torch.nn.Module:
        """The calibrated model at ``size``, weights from ``seed`` (global RNG state untouched)."""
        shape = _shape(size)
        with torch.random.fork_rng(devices=[]):
            model = ResNet(shape)
        generator = torch.Generator().manual_seed(seed)
        init_weights(model, generator)
        rng = np.random.default_rng([_CALIBRATION_STREAM, SIZES.index(size), seed])
        images = torch.from_numpy(random_images(rng, shape.calibration_images, shape.image_px))
        calibrate_norms(model, images)
        calibrate_classifier(model, images, generator)
        return model.eval()

    def make_sample(self, size: str, seed: int, index: int) -> Inputs:
        """One seeded random image ``[1, 3, px, px]`` (see ``random_image``)."""
        shape = _shape(size)
        rng = np.random.default_rng([_SAMPLE_STREAM, SIZES.index(size), seed, index])
        return (random_images(rng, 1, shape.image_px),)

    def describe(self, size: str) -> dict[str, str]:
        """Shape facts of the network at ``size``."""
        shape = _shape(size)
        return {
            "architecture": f"ResNet v1.5 bottleneck, blocks {shape.blocks}, base width {shape.base_width}",
            "input": f"[1, 3, {shape.image_px}, {shape.image_px}] float32, seeded random images",
            "output": f"logits [1, {shape.classes}]",
            "weights": "random, seeded by the run seed; BN statistics and classifier calibrated on "
            f"{shape.calibration_images} seeded images",
        }
