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

Variants (``draw_changes``) mutate two or three of: stage widths (off multiples of 8), the activation
(SiLU, GELU, Hardswish, LeakyReLU), the norm (GroupNorm instead of BatchNorm), the kernel sizes (stem
and the bottleneck's middle conv), the depth of one stage (+-1 block) and the image size.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from accelbench.errors import UserError
from accelbench.workloads.base import SIZES, Changes, Inputs, Mutation, Variant, Workload
from accelbench.workloads.mutations import depth_step, kinds_to_apply, off_power_of_two, other_than


@dataclass(frozen=True, slots=True)
class ResNetShape:
    """The dimensions of one ResNet size."""

    blocks: tuple[int, int, int, int]
    base_width: int
    image_px: int
    classes: int
    calibration_images: int
    widths: tuple[int, int, int, int] | None = None
    """Bottleneck width of each stage; None is ``base_width * 2**stage``."""
    activation: str = "relu"
    norm: str = "batch"
    stem_kernel: int = 7
    mid_kernel: int = 3
    """Kernel size of the bottleneck's middle conv."""

    def stage_widths(self) -> tuple[int, int, int, int]:
        """The bottleneck width of each of the four stages."""
        if self.widths is not None:
            return self.widths
        base = self.base_width
        return (base, base * 2, base * 4, base * 8)


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
ACTIVATIONS = ("relu", "silu", "gelu", "hardswish", "leaky_relu")
NORMS = ("batch", "group")
VARIANT_KINDS = ("width", "activation", "norm", "kernel", "depth", "image")
_IMAGE_PX = {"tiny": (24, 28, 36, 40), "standard": (192, 200, 232, 240, 256)}


def _shape(size: str, variant: Variant | None = None) -> ResNetShape:
    if size not in SHAPES:
        raise UserError(f"resnet50: unknown size {size!r}; expected one of {', '.join(SIZES)}")
    if variant is None:
        return SHAPES[size]
    return dataclasses.replace(SHAPES[size], **variant.changes)


def make_activation(name: str) -> nn.Module:
    """The activation module called ``name`` (one of ``ACTIVATIONS``)."""
    if name == "relu":
        return nn.ReLU(inplace=True)
    factories = {"silu": nn.SiLU, "gelu": nn.GELU, "hardswish": nn.Hardswish}
    return factories[name]() if name in factories else nn.LeakyReLU(0.1)


def make_norm(kind: str, channels: int) -> nn.BatchNorm2d | nn.GroupNorm:
    """BatchNorm2d, or GroupNorm with the most groups (up to 8) that divide ``channels``."""
    if kind == "batch":
        return nn.BatchNorm2d(channels)
    groups = next(g for g in (8, 4, 2, 1) if channels % g == 0)
    return nn.GroupNorm(groups, channels)


def draw_resnet_changes(shape: ResNetShape, size: str, rng: np.random.Generator) -> Changes:
    """Two or three mutations of ``shape`` (see ``VARIANT_KINDS``), with their descriptions."""
    changes: dict[str, object] = {}
    mutations = []
    for kind in kinds_to_apply(rng, VARIANT_KINDS):
        if kind == "width":
            widths = tuple(off_power_of_two(rng, w, low=2) for w in shape.stage_widths())
            changes["widths"] = widths
            mutations.append(Mutation(kind, f"stage widths {shape.stage_widths()} -> {widths}"))
        elif kind == "activation":
            changes["activation"] = other_than(rng, ACTIVATIONS, shape.activation)
            mutations.append(Mutation(kind, f"{shape.activation} -> {changes['activation']}"))
        elif kind == "norm":
            changes["norm"] = other_than(rng, NORMS, shape.norm)
            mutations.append(Mutation(kind, f"{shape.norm} norm -> {changes['norm']} norm"))
        elif kind == "kernel":
            changes["stem_kernel"], changes["mid_kernel"] = other_than(rng, (5, 7, 9), 7), 5
            mutations.append(
                Mutation(
                    kind,
                    f"stem 7x7 -> {changes['stem_kernel']}x{changes['stem_kernel']}, bottleneck 3x3 -> 5x5",
                )
            )
        elif kind == "depth":
            stage = int(rng.integers(4))
            blocks = list(shape.blocks)
            blocks[stage] = depth_step(rng, blocks[stage])
            changes["blocks"] = tuple(blocks)
            mutations.append(
                Mutation(kind, f"stage {stage + 1} blocks {shape.blocks[stage]} -> {blocks[stage]}")
            )
        else:
            changes["image_px"] = other_than(rng, _IMAGE_PX[size], shape.image_px)
            mutations.append(Mutation(kind, f"image {shape.image_px}px -> {changes['image_px']}px"))
    return changes, mutations


class Bottleneck(nn.Module):
    """ResNet v1.5 bottleneck: 1x1 -> 3x3 (carries the stride) -> 1x1 (x4), plus a projection shortcut."""

    expansion = 4

    def __init__(self, in_ch: int, width: int, stride: int, shape: ResNetShape) -> None:
        super().__init__()
        out_ch = width * self.expansion
        kernel, norm = shape.mid_kernel, shape.norm
        self.conv1 = nn.Conv2d(in_ch, width, 1, bias=False)
        self.bn1 = make_norm(norm, width)
        self.conv2 = nn.Conv2d(width, width, kernel, stride=stride, padding=kernel // 2, bias=False)
        self.bn2 = make_norm(norm, width)
        self.conv3 = nn.Conv2d(width, out_ch, 1, bias=False)
        self.bn3 = make_norm(norm, out_ch)
        self.relu = make_activation(shape.activation)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_ch != out_ch:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False), make_norm(norm, out_ch)
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
        base, kernel = shape.base_width, shape.stem_kernel
        self.stem = nn.Sequential(
            nn.Conv2d(3, base, kernel, stride=2, padding=kernel // 2, bias=False),
            make_norm(shape.norm, base),
            make_activation(shape.activation),
            nn.MaxPool2d(3, stride=2, padding=1),
        )
        stages: list[nn.Module] = []
        in_ch = base
        for i, (count, width) in enumerate(zip(shape.blocks, shape.stage_widths(), strict=True)):
            blocks = [
                Bottleneck(in_ch if j == 0 else width * 4, width, 1 if i == 0 or j else 2, shape)
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
        elif isinstance(module, nn.BatchNorm2d | nn.GroupNorm):
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

    def build_model(self, size: str, seed: int, variant: Variant | None = None) -> torch.nn.Module:
        """The calibrated model at ``size``, weights from ``seed`` (global RNG state untouched)."""
        shape = _shape(size, variant)
        with torch.random.fork_rng(devices=[]):
            model = ResNet(shape)
        generator = torch.Generator().manual_seed(seed)
        init_weights(model, generator)
        rng = np.random.default_rng([_CALIBRATION_STREAM, SIZES.index(size), seed])
        images = torch.from_numpy(random_images(rng, shape.calibration_images, shape.image_px))
        calibrate_norms(model, images)
        calibrate_classifier(model, images, generator)
        return model.eval()

    def make_sample(self, size: str, seed: int, index: int, variant: Variant | None = None) -> Inputs:
        """One seeded random image ``[1, 3, px, px]`` (see ``random_image``)."""
        shape = _shape(size, variant)
        rng = np.random.default_rng([_SAMPLE_STREAM, SIZES.index(size), seed, index])
        return (random_images(rng, 1, shape.image_px),)

    def architecture(self, size: str, variant: Variant | None = None) -> torch.nn.Module:
        """The network's layers with default initialisation (no calibration)."""
        return ResNet(_shape(size, variant)).eval()

    def draw_changes(self, size: str, rng: np.random.Generator) -> Changes:
        """Two or three mutations among widths, activation, norm, kernels, depth and image size."""
        return draw_resnet_changes(_shape(size), size, rng)

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
