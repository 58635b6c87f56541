"""How a Write's updates reach the switch in few round trips. Plain table entries (the
bulk of most batches) are decided and checked without the switch (Entities.plan) and sent
together in one `batch` request (switch/PROTOCOL.md); so are, in an all-or-none batch,
the reads of what each will change, right before it. A DATAPLANE_ATOMIC batch puts its
`hold` and `release` into that same request: the data plane waits only while the switch
itself applies the batch, not for the server's round trips. A batch with other updates
goes the way of rollback.py, one request at a time.
"""

from __future__ import annotations

from collections.abc import Sequence

from p4.v1 import p4runtime_pb2 as pb

from dplab.p4runtime import rollback
from dplab.p4runtime.entities import INSERT, Entities, TablePlan, entry_of
from dplab.p4runtime.errors import P4RuntimeError
from dplab.p4runtime.switch_link import SwitchError

Errors = list[P4RuntimeError | None]
HOLD, RELEASE = {"cmd": "hold"}, {"cmd": "release"}


def write_each(entities: Entities, updates: Sequence[pb.Update]) -> Errors:
    """CONTINUE_ON_ERROR: every update on its own. Runs of one-request plans go in one
    `batch`; the switch runs each whatever the others did."""
    errors: Errors = [None] * len(updates)
    run: list[tuple[int, TablePlan]] = []
    for position, update in enumerate(updates):
        try:
            plan = entities.plan(update)
        except P4RuntimeError as err:
            errors[position] = err
            continue
        if plan is not None and len(plan.requests) == 1:
            run.append((position, plan))
            continue
        _send_run(entities, run, errors)  # in order: an update may build on those before
        run = []
        errors[position] = _attempt(entities, update)
    _send_run(entities, run, errors)
    return errors


def _send_run(entities: Entities, run: list[tuple[int, TablePlan]], errors: Errors) -> None:
    if not run:
        return
    answers = entities.switch.batch([plan.requests[0] for _, plan in run],
                                    stop_on_error=False)
    for (position, _), answer in zip(run, answers, strict=True):
        if not answer["ok"]:
            errors[position] = SwitchError.of(answer)


def _attempt(entities: Entities, update: pb.Update) -> P4RuntimeError | None:
    try:
        entities.write(update)
    except P4RuntimeError as err:
        return err
    return None


def write_all_or_none(entities: Entities, updates: Sequence[pb.Update],
                      hold: bool) -> Errors:
    """ROLLBACK_ON_ERROR, and with ``hold`` DATAPLANE_ATOMIC (rollback.py's semantics)."""
    plans: list[TablePlan] = []
    for position, update in enumerate(updates):
        try:
            plan = entities.plan(update)
        except P4RuntimeError as err:  # nothing sent yet: nothing to undo
            return rollback.roll_back([], position, err, len(updates))
        if plan is None:  # needs the switch's state: one request at a time
            return (rollback.write_dataplane_atomic(entities, updates) if hold
                    else rollback.write_all_or_none(entities, updates))
        plans.append(plan)
    return _write_plans(entities, plans, hold)


def _write_plans(entities: Entities, plans: list[TablePlan], hold: bool) -> Errors:
    """One `batch`: [hold], then per update the read of its entry (not for an INSERT) and
    its requests, [release]; the first failure stops it, and what ran before is undone
    (still held)."""
    requests: list[dict] = [HOLD] if hold else []
    owners: list[int | None] = [None] * len(requests)  # the update each request is for
    for position, plan in enumerate(plans):
        snapshot = plan.snapshot_request()
        mine = plan.requests if snapshot is None else [snapshot, *plan.requests]
        requests += mine
        owners += [position] * len(mine)
    if hold:
        requests.append(RELEASE)
        owners.append(None)
    answers = entities.switch.batch(requests, stop_on_error=True)
    if all(answer["ok"] for answer in answers):
        return [None] * len(plans)
    failed = owners[len(answers) - 1]
    if failed is None:  # the hold or the release failed: the switch says why
        err = SwitchError.of(answers[-1])
        if len(answers) == 1:  # not held: nothing was run
            raise rollback.hold_refused(err)
        return [P4RuntimeError("INTERNAL", "the data plane may have seen part of the "
                               f"batch: {err.message}")] * len(plans)
    undos = _undos(entities, plans, owners, answers)
    errors = rollback.roll_back(undos, failed, SwitchError.of(answers[-1]), len(plans))
    released = rollback.release(entities) if hold else None
    return [released] * len(plans) if released is not None else errors


def _undos(entities: Entities, plans: list[TablePlan], owners: list[int | None],
           answers: list[dict]) -> list[rollback.Undo]:
    """One undo per update that may have changed its entry (the failed one may be half
    done): one whose entry was read, or an INSERT whose table_add succeeded (its entry did
    not exist before)."""
    undos = []
    for request, (owner, answer) in enumerate(zip(owners, answers, strict=False)):
        starts_update = owner is not None and (request == 0 or owners[request - 1] != owner)
        if starts_update and answer["ok"]:
            plan = plans[owner]
            before = None if plan.op == INSERT else entry_of(answer["result"],
                                                             plan.key["priority"])
            undos.append(rollback.table_entry_undo(entities, plan.key, before))
    return undos
