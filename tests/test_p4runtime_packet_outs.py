"""The server's packet-out queue (unit tests: a fake switch link that answers batches)."""

from __future__ import annotations

import threading

from dplab.p4runtime.packet_outs import MAX_BATCH, PacketOutQueue
from dplab.p4runtime.switch_link import SwitchError


class FakeLink:
    """Answers ``batch`` like the switch: one answer per request; a payload "bad" is
    refused. The first batch waits until ``release`` is set, so that more packet-outs
    queue meanwhile; ``gone`` fails every batch as a switch that went away."""

    def __init__(self) -> None:
        self.batches: list[list[dict]] = []
        self.entered, self.release = threading.Event(), threading.Event()
        self.done = threading.Condition()
        self.gone = False

    def batch(self, requests: list[dict], stop_on_error: bool) -> list[dict]:
        assert not stop_on_error  # every packet-out is answered on its own
        self.entered.set()
        self.release.wait(5)
        if self.gone:
            raise SwitchError("UNAVAILABLE", "switch control socket: gone")
        with self.done:
            self.batches.append(requests)
            self.done.notify_all()
        return [{"ok": False, "code": "RESOURCE_EXHAUSTED", "error": "queue full"}
                if r["payload"] == "bad" else {"ok": True, "result": None} for r in requests]

    def wait_for(self, sent: int) -> None:
        with self.done:
            assert self.done.wait_for(lambda: sum(map(len, self.batches)) >= sent, 5)


def packet_out(payload: str) -> dict:
    return {"cmd": "packet_out", "payload": payload, "metadata": []}


def test_packet_outs_queued_meanwhile_go_in_one_batch_in_order():
    link, refused = FakeLink(), []
    outs = PacketOutQueue(link, "dev1")  # type: ignore[arg-type]
    outs.put(packet_out("00"), refused.append)
    assert link.entered.wait(5)  # the sender took it alone and waits for the switch
    payloads = [f"{i:04x}" for i in range(1, 2 * MAX_BATCH + 10)]
    for payload in payloads:
        outs.put(packet_out(payload), refused.append)
    link.release.set()
    link.wait_for(1 + len(payloads))
    assert [len(b) for b in link.batches] == [1, MAX_BATCH, MAX_BATCH, 9]
    assert [r["payload"] for b in link.batches for r in b] == ["00", *payloads]
    assert refused == []


def test_a_refused_packet_out_is_reported_to_its_sender_alone():
    link, refused = FakeLink(), {}
    link.release.set()
    outs = PacketOutQueue(link, "dev1")  # type: ignore[arg-type]
    for payload in ("aa", "bad", "bb"):
        outs.put(packet_out(payload), lambda err, p=payload: refused.__setitem__(p, err))
    link.wait_for(3)
    assert list(refused) == ["bad"] and refused["bad"].code == "RESOURCE_EXHAUSTED"
    link.gone = True  # the whole batch fails: each of its packet-outs is told
    done = threading.Event()
    outs.put(packet_out("cc"), lambda err: (refused.__setitem__("cc", err), done.set()))
    assert done.wait(5) and refused["cc"].code == "UNAVAILABLE"
