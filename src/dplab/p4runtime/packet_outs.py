"""A device's packet-outs on their way to its switch: the stream's reader hands each over
and goes on reading, and one sender thread per device passes every packet-out waiting at
that moment to the switch in one ``batch`` control request (switch/PROTOCOL.md), one
round trip for all of them instead of one each.

Why: a reader that made one request/reply call per packet-out moved them only as fast as
that round trip, which on a loaded machine is the switch's control thread and the
server's thread each waiting for a core; an ARP flood or an LLDP round put hundreds of
packet-outs behind it. Batching keeps the order of one device's packet-outs (one sender,
first in first out) and each one's answer: a packet-out the switch refused is reported to
whoever handed it over, as before.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from dplab.p4runtime.errors import P4RuntimeError
from dplab.p4runtime.switch_link import SwitchError, SwitchLink

# Most packet-outs in one batch: one JSON line of ~64 KiB at LLDP's or ARP's frame size,
# and far below the switch's own queue (4096, shared.rs PACKET_OUT_QUEUE_LIMIT), so a
# batch cannot overfill it by itself.
MAX_BATCH = 256
# Packet-outs a device's queue holds before the stream's reader waits for room: the wait
# then reaches the client through gRPC's flow control instead of the server's memory.
QUEUE_DEPTH = 4 * MAX_BATCH

# A batch without stop_on_error answers every request; were one missing, its packet-out
# is reported rather than taken as sent.
UNANSWERED = {"ok": False, "code": "INTERNAL", "error": "the switch's batch reply has no "
              "answer for this packet-out"}

Refused = Callable[[P4RuntimeError], None]


class PacketOutQueue:
    """Packet-outs (``packet_out`` requests of the control protocol) for one switch, sent
    in batches by a thread started with the first one."""

    def __init__(self, switch: SwitchLink, name: str) -> None:
        self._switch = switch
        self._name = name
        self._queue: queue.Queue[tuple[dict, Refused]] = queue.Queue(QUEUE_DEPTH)
        self._started = False
        self._start = threading.Lock()

    def put(self, request: dict, refused: Refused) -> None:
        """Queues ``request``; ``refused`` is called (on the sender's thread) with the
        error if the switch does not take it. Waits while the queue is full."""
        if not self._started:
            self._start_sender()
        self._queue.put((request, refused))

    def _start_sender(self) -> None:
        with self._start:
            if not self._started:
                threading.Thread(target=self._send_forever, daemon=True,
                                 name=f"packet-out-{self._name}").start()
                self._started = True

    def _send_forever(self) -> None:
        while True:
            waiting = [self._queue.get()]
            while len(waiting) < MAX_BATCH:
                try:
                    waiting.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            self._send(waiting)

    def _send(self, waiting: list[tuple[dict, Refused]]) -> None:
        try:
            answers = self._switch.batch([request for request, _ in waiting],
                                         stop_on_error=False)
        except SwitchError as err:  # the whole batch: the switch is gone or did not answer
            for _, refused in waiting:
                refused(err)
            return
        for i, (_, refused) in enumerate(waiting):
            answer = answers[i] if i < len(answers) else UNANSWERED
            if not answer.get("ok"):
                refused(SwitchError.of(answer))
