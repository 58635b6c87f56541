"""Run the OpenFlow controller: ``python -m dplab.control.controller_main --mode reactive
--port 6653 --stats-file F``. Counters go to F every 0.1 s and once more on SIGTERM."""

from __future__ import annotations

import argparse
import logging
import os
import signal

from os_ken import cfg
from os_ken.base import app_manager
from os_ken.controller import controller  # noqa: F401  registers the ofp_* options we set

from dplab.control import openflow_app  # registers the dplab_* options we set
from dplab.control.forwarding import MODES, REACTIVE


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=MODES, default=REACTIVE)
    parser.add_argument("--port", type=int, default=6653, help="OpenFlow TCP listen port")
    parser.add_argument("--host", default="127.0.0.1", help="OpenFlow listen address")
    parser.add_argument("--stats-file", help="JSON file the counters are written to")
    parser.add_argument("--meters", help="meters and their rules as JSON "
                                         "(dplab.qos.openflow_meter.to_json)")
    parser.add_argument("--hairpin", help="ports floods go back out of, as JSON "
                                          "[[switch, port], ...] (access points' wlan ports)")
    return parser.parse_args(argv)


def configure(args: argparse.Namespace) -> None:
    cfg.CONF(args=[], project="os_ken")
    cfg.CONF.set_override("ofp_tcp_listen_port", args.port)
    cfg.CONF.set_override("ofp_listen_host", args.host)
    cfg.CONF.set_override("dplab_mode", args.mode)
    cfg.CONF.set_override("dplab_stats_file", args.stats_file)
    cfg.CONF.set_override("dplab_meters", args.meters)
    cfg.CONF.set_override("dplab_hairpin", args.hairpin)


def stop_on_sigterm() -> None:
    """Write the final counters and leave. os-ken's native hub threads cannot be joined
    or killed, so the process ends with os._exit once the stats are safely on disk."""

    def handler(signum: int, _frame: object) -> None:
        app = app_manager.lookup_service_brick(openflow_app.OpenFlowSouthbound.__name__)
        if app is not None:
            app.write_stats()
        os._exit(0)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    configure(args)
    stop_on_sigterm()
    app_manager.AppManager.run_apps([openflow_app.__name__])


if __name__ == "__main__":
    main()
