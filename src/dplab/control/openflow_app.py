"""The os-ken OpenFlow 1.3 adapter: turns switch events into calls on ``Forwarding`` and
implements its ``Southbound`` with flow-mods and packet-outs.

Switch ``sN`` is the datapath with id N, access point ``apN`` the one with id
``model.AP_BASE`` + N (the OVS plane sets the datapath ids). Every switch
gets the rule set's fixed part on connect (forwarding.Southbound): table misses to the
controller at MISS_PRIORITY (whole packet, no buffering) and a trap per TRAPPED_ETHERTYPES
(LLDP, ARP) at TRAP_PRIORITY; path rules are flow-mods at PATH_RULE_PRIORITY.

A flow-mod has no answer, and OVS serves each switch's connection on its own, so a
packet-out could overtake the flow-mods of the switches it goes on to. As on P4Runtime,
where a Write is answered once its rules are in, a packet-out leaves only once every other
switch that got flow-mods since its last barrier has answered a barrier (os-ken's ofctl
service waits for the replies, all in flight at once); its own switch's order does not
matter, as a packet-out skips the table.

With meters (option ``dplab_meters``, the ovs plane's ``qos``: ``dplab.qos.openflow_meter``)
every switch also gets its meters, and table 0 becomes the metering table: one rule per
class sends its DSCP's IPv4 packets through the class's meter, then everything goes on to
table 1, which holds the rules above.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence

from os_ken import cfg
from os_ken.app.ofctl import api as ofctl_api
from os_ken.app.ofctl import exception as ofctl_exception
from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.controller import Datapath
from os_ken.controller.handler import (
    CONFIG_DISPATCHER,
    DEAD_DISPATCHER,
    MAIN_DISPATCHER,
    set_ev_cls,
)
from os_ken.lib import hub
from os_ken.ofproto import ofproto_v1_3

from dplab.control.counters_file import write_counters
from dplab.control.forwarding import (
    MISS_PRIORITY,
    PATH_RULE_PRIORITY,
    REACTIVE,
    TRAP_PRIORITY,
    TRAPPED_ETHERTYPES,
    Forwarding,
)
from dplab.control.topology_view import PortRef
from dplab.qos import openflow_meter
from dplab.topology.model import AP_BASE, AP_PREFIX

cfg.CONF.register_opts([
    cfg.StrOpt("dplab_mode", default=REACTIVE, help="reactive or proactive forwarding"),
    cfg.StrOpt("dplab_stats_file", default=None, help="where counters are written as JSON"),
    cfg.StrOpt("dplab_meters", default=None, help="meters as JSON (qos.openflow_meter)"),
    cfg.StrOpt("dplab_hairpin", default=None,
               help="ports floods go back out of, as JSON [[switch, port], ...] (an access "
                    "point's wlan port)"),
])

METER_RULE_PRIORITY = 10  # table 0, beside the go-on rule at 0
ETH_IPV4 = 0x0800
TICK_S = 0.1  # LLDP scheduling and stats-file period (short: planes wait for a fresh file)
# Longest wait for a path's barrier replies. A switch's replies are read by the thread that
# also hands its packet-ins to this app, and blocks while this app's event queue is full
# (os-ken's bounded queue): under a packet-in flood the reply may only come once this
# handler returns. Sending the packet-out unconfirmed costs at most one more packet-in.
BARRIER_WAIT_S = 0.25


def switch_name(dpid: int) -> str:
    return f"{AP_PREFIX}{dpid - AP_BASE}" if dpid > AP_BASE else f"s{dpid}"


class OpenFlowSouthbound(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # os-ken's native hub runs handlers and our ticker in separate OS threads.
        self._lock = threading.Lock()
        self._datapaths: dict[str, Datapath] = {}
        self._unconfirmed: set[str] = set()  # switches with flow-mods since their barrier
        hairpin = json.loads(self.CONF.dplab_hairpin or "[]")
        self.logic = Forwarding(self, mode=self.CONF.dplab_mode,
                                hairpin=[PortRef(switch, port) for switch, port in hairpin])
        self.stats_file: str | None = self.CONF.dplab_stats_file
        meters = self.CONF.dplab_meters
        self.meters = openflow_meter.from_json(meters) if meters else []
        self.forward_table = 1 if self.meters else 0  # table 0 meters first
        hub.spawn(self._tick_forever)

    # -- Southbound ----------------------------------------------------------------------

    def install_path_rule(
        self, switch: str, in_port: int, eth_src: str, eth_dst: str, out_port: int,
        idle_timeout: int,
    ) -> None:
        dp = self._datapaths.get(switch)
        if dp is None:
            return  # switch went away meanwhile
        parser = dp.ofproto_parser
        match = parser.OFPMatch(in_port=in_port, eth_src=eth_src, eth_dst=eth_dst)
        # OpenFlow never outputs to the port a packet came in on unless told IN_PORT (two
        # stations behind an access point's wlan port).
        out = dp.ofproto.OFPP_IN_PORT if out_port == in_port else out_port
        self._add_flow(dp, PATH_RULE_PRIORITY, match, [parser.OFPActionOutput(out)],
                       idle_timeout)
        self._unconfirmed.add(switch)

    def packet_out(self, switch: str, ports: Sequence[int], data: bytes) -> None:
        dp = self._datapaths.get(switch)
        if dp is None:
            return  # switch went away meanwhile
        self._confirm(self._unconfirmed - {switch})
        ofp, parser = dp.ofproto, dp.ofproto_parser
        dp.send_msg(parser.OFPPacketOut(
            datapath=dp, buffer_id=ofp.OFP_NO_BUFFER, in_port=ofp.OFPP_CONTROLLER,
            actions=[parser.OFPActionOutput(p) for p in ports], data=data))

    def _confirm(self, switches: set[str]) -> None:
        """Returns once each of ``switches`` has answered a barrier (every flow-mod sent to
        it before is in its table); the barriers are in flight at once, as a P4Runtime
        path's Writes are."""
        self._unconfirmed -= switches
        waits = [hub.spawn(self._barrier, self._datapaths[switch])
                 for switch in switches if switch in self._datapaths]
        deadline = time.monotonic() + BARRIER_WAIT_S
        for wait in waits:
            wait.join(max(0.0, deadline - time.monotonic()))
        late = sum(wait.is_alive() for wait in waits)
        if late:
            self.logger.warning("%d barrier replies not in within %s s; packet-out sent",
                                late, BARRIER_WAIT_S)

    def _barrier(self, dp: Datapath) -> None:
        """A barrier to ``dp``, and its reply awaited (os-ken's ofctl service)."""
        try:
            ofctl_api.send_msg(self, dp.ofproto_parser.OFPBarrierRequest(dp),
                               reply_cls=dp.ofproto_parser.OFPBarrierReply)
        except (ofctl_exception.OFError, ofctl_exception.InvalidDatapath) as err:
            self.logger.warning("%s: no barrier reply: %s", switch_name(dp.id), err)

    # -- switch events -------------------------------------------------------------------

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def on_features(self, ev) -> None:
        dp = ev.msg.datapath
        ofp, parser = dp.ofproto, dp.ofproto_parser
        if self.meters:
            self._install_meters(dp)
        to_controller = [parser.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)]
        self._add_flow(dp, MISS_PRIORITY, parser.OFPMatch(), to_controller)
        for ethertype in TRAPPED_ETHERTYPES:
            self._add_flow(dp, TRAP_PRIORITY, parser.OFPMatch(eth_type=ethertype), to_controller)
        dp.send_msg(parser.OFPPortDescStatsRequest(dp, 0))

    @set_ev_cls(ofp_event.EventOFPPortDescStatsReply, MAIN_DISPATCHER)
    def on_port_desc(self, ev) -> None:
        dp = ev.msg.datapath
        ports = [p.port_no for p in ev.msg.body if p.port_no <= dp.ofproto.OFPP_MAX]
        with self._lock:
            self._datapaths[switch_name(dp.id)] = dp
            self.logic.switch_up(switch_name(dp.id), ports)

    @set_ev_cls(ofp_event.EventOFPPortStatus, MAIN_DISPATCHER)
    def on_port_status(self, ev) -> None:
        msg = ev.msg
        ofp = msg.datapath.ofproto
        name, port = switch_name(msg.datapath.id), msg.desc.port_no
        with self._lock:
            if msg.reason == ofp.OFPPR_ADD:
                self.logic.port_up(name, port)
            elif msg.reason == ofp.OFPPR_DELETE:
                self.logic.port_down(name, port)

    @set_ev_cls(ofp_event.EventOFPStateChange, DEAD_DISPATCHER)
    def on_disconnect(self, ev) -> None:
        dp = ev.datapath
        if dp.id is None:
            return  # died before saying who it was
        name = switch_name(dp.id)
        with self._lock:
            if self._datapaths.get(name) is dp:
                del self._datapaths[name]
                self.logic.switch_down(name)

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def on_packet_in(self, ev) -> None:
        msg = ev.msg
        with self._lock:
            self.logic.packet_in(switch_name(msg.datapath.id), msg.match["in_port"], msg.data)

    # -- housekeeping --------------------------------------------------------------------

    def write_stats(self) -> None:
        """Counters to the stats file (see control.counters_file)."""
        write_counters(self.stats_file, self.logic, self._lock)

    def _tick_forever(self) -> None:
        while True:
            with self._lock:
                self.logic.tick()
            self.write_stats()
            hub.sleep(TICK_S)

    def _add_flow(self, dp: Datapath, priority: int, match, actions, idle_timeout: int = 0) -> None:
        parser = dp.ofproto_parser
        instructions = [parser.OFPInstructionActions(dp.ofproto.OFPIT_APPLY_ACTIONS, actions)]
        dp.send_msg(parser.OFPFlowMod(
            datapath=dp, table_id=self.forward_table, priority=priority, match=match,
            instructions=instructions, idle_timeout=idle_timeout))

    def _install_meters(self, dp: Datapath) -> None:
        """Each class's meter (drop band, kbit/s, burst in kbit) and its table-0 rule; the
        rest of table 0 goes straight on to the forwarding table."""
        ofp, parser = dp.ofproto, dp.ofproto_parser
        on = parser.OFPInstructionGotoTable(self.forward_table)
        for meter in self.meters:
            dp.send_msg(parser.OFPMeterMod(
                dp, command=ofp.OFPMC_ADD, flags=ofp.OFPMF_KBPS | ofp.OFPMF_BURST,
                meter_id=meter.meter_id,
                bands=[parser.OFPMeterBandDrop(rate=meter.rate_kbps,
                                               burst_size=meter.burst_kbit)]))
            dp.send_msg(parser.OFPFlowMod(
                datapath=dp, table_id=0, priority=METER_RULE_PRIORITY,
                match=parser.OFPMatch(eth_type=ETH_IPV4, ip_dscp=meter.dscp),
                instructions=[parser.OFPInstructionMeter(meter.meter_id), on]))
        dp.send_msg(parser.OFPFlowMod(datapath=dp, table_id=0, priority=0,
                                      match=parser.OFPMatch(), instructions=[on]))
