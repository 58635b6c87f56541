"""What a workload module hands back for one flow before it becomes a FlowResult."""

from dataclasses import dataclass, field
from typing import IO, Any, TypeVar

from pydantic import BaseModel, ValidationError

Model = TypeVar("Model", bound=BaseModel)

Metrics = dict[str, float | None]


@dataclass
class Measured:
    summary: Metrics
    intervals: list[Metrics] = field(default_factory=list)
    error: str | None = None  # set when the flow did not fully work, even with some values


def missing(metric_names: tuple[str, ...], error: str) -> Measured:
    """A flow that produced no measurement: every metric None, never zero."""
    return Measured({name: None for name in metric_names}, [], error)


def check_keys(params: dict, allowed: set[str], where: str) -> None:
    """Reject parameters a workload does not know, naming them and the allowed ones."""
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ValueError(f"{where}: unknown parameter(s) {unknown}; allowed: {sorted(allowed)}")


def spec_checked(model: type[Model], kind: str, params: dict, where: str,
                 runtime: frozenset[str] = frozenset()) -> Model:
    """``params`` checked by the experiment file's model of this kind (``dplab.spec.model``),
    its defaults filled in: a flow built in code gets the checks and defaults a flow from an
    experiment file gets. ``runtime``: keys only code sets (e.g. ``timeout_s``), left to the
    caller."""
    fields = set(model.model_fields) - {"kind", "pairs", "label"}
    check_keys(params, fields | runtime, where)
    try:
        return model.model_validate(
            {"kind": kind, **{k: v for k, v in params.items() if k not in runtime}})
    except ValidationError as exc:
        raise ValueError(f"{where}: " + "; ".join(_problem(e) for e in exc.errors())) from None


def _problem(err: Any) -> str:
    message = err["msg"].removeprefix("Value error, ")
    if not err["loc"]:  # a check across fields (e.g. duration or bytes)
        return message
    return f"'{'.'.join(str(p) for p in err['loc'])}': {message} (got {err['input']!r})"


def positive_number(params: dict, key: str, where: str, default: float | None) -> float | None:
    """params[key] as a float > 0, or default when absent; a clear error otherwise."""
    value = params.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"{where}: parameter '{key}' must be a number > 0, got {value!r}")
    return float(value)


def positive_int(params: dict, key: str, where: str, default: int | None) -> int | None:
    """params[key] as an int > 0, or default when absent; a clear error otherwise."""
    value = params.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{where}: parameter '{key}' must be an integer > 0, got {value!r}")
    return value


def tos_byte(params: dict, where: str, dscp_only: bool = False) -> int | None:
    """params['tos'], the IPv4 ToS byte (0..255), or None when absent. ``dscp_only``: the
    sender can set only the 6 DSCP bits (the 2 ECN bits must be 0)."""
    value = params.get("tos")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 255 \
            or (dscp_only and value % 4):
        what = "a multiple of 4 in 0..252 (a DSCP << 2)" if dscp_only else "an integer 0..255"
        raise ValueError(f"{where}: parameter 'tos' must be {what}, got {value!r}")
    return value


def read_output(out: IO[str] | None) -> str:
    """All a tool wrote into its output file (opened w+), which this closes ("" for none)."""
    if out is None:
        return ""
    with out:
        out.seek(0)
        return out.read()
