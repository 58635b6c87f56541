"""A link's ``linkem`` settings (more dplab-linkem settings than delay, jitter and loss),
checked when a topology is read, so a bad value is refused before anything runs, with the
field named. The keys mirror one direction of dplab-linkem's configuration
(switch/linkem/src/config.rs, which checks them again when the emulator starts), plus the
``seed`` of the link's random draws (substrate.linkem).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Pct = Annotated[float, Field(ge=0.0, le=100.0)]
SEED_LIMIT = 2**63  # dplab-linkem's seed is a u64; below this it also fits an i64 anywhere


class _Strict(BaseModel):
    # Unknown keys are typos; booleans are not numbers; YAML's .inf/.nan pass no bound.
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class NoLoss(_Strict):
    model: Literal["none"]


class RandomLoss(_Strict):
    model: Literal["random"]
    pct: Pct


class GilbertElliott(_Strict):
    """netem's ``gemodel``: p_pct good -> bad per packet, r_pct back, loss in each state."""

    model: Literal["gilbert_elliott"]
    p_pct: Pct
    r_pct: Pct
    bad_loss_pct: Pct = 100.0
    good_loss_pct: Pct = 0.0


class LinkemSettings(_Strict):
    delay_us: Annotated[float, Field(ge=0.0)] = 0.0
    jitter_us: Annotated[float, Field(ge=0.0)] = 0.0
    jitter: Literal["uniform", "normal"] = "uniform"
    reorder: bool = False
    loss: Annotated[NoLoss | RandomLoss | GilbertElliott, Field(discriminator="model")] = (
        NoLoss(model="none"))
    duplicate_pct: Pct = 0.0
    corrupt_pct: Pct = 0.0
    rate_bps: Annotated[float, Field(gt=0.0)] | None = None
    queue_packets: Annotated[int, Field(ge=1)] = 1000
    limit_packets: Annotated[int, Field(ge=1)] = 100_000
    seed: Annotated[int, Field(ge=0, lt=SEED_LIMIT)] | None = None


KEYS = tuple(LinkemSettings.model_fields)


def check(settings: object) -> dict:
    """``settings`` as given (a mapping of KEYS), or ValueError naming each bad field."""
    if not isinstance(settings, dict):
        raise ValueError(f"must be a mapping of {', '.join(KEYS)}, not {settings!r}")
    try:
        LinkemSettings.model_validate(settings)
    except ValidationError as exc:
        raise ValueError("; ".join(_describe(e) for e in exc.errors())) from None
    return settings


def _describe(error: dict) -> str:
    loc = list(error["loc"])
    if loc[0] == "loss" and len(loc) > 2:
        del loc[1]  # the loss model's tag pydantic adds (loss.random.pct -> loss.pct)
    field = ".".join(map(str, loc))
    if error["type"] == "extra_forbidden":
        return f"{field}: unknown key; valid: {', '.join(KEYS)}"
    return f"{field}: {error['msg']}, not {error['input']!r}"
