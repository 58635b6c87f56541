"""Drives our P4Runtime server with p4runtime-shell (an off-the-shelf client), run by
tests/test_p4runtime_shell.py in the p4runtime-shell venv (.venv-p4rt-shell).

    shell_client.py program ADDR P4INFO_TXT DEVICE_CONFIG   set the pipeline, write, read
    shell_client.py counters ADDR                           read counters (P4Info from server)

Prints one JSON object with what the shell read back.
"""

import json
import socket
import sys

import p4runtime_sh.shell as sh


def as_prefix(field_match) -> str:
    lpm = field_match.lpm
    return f"{socket.inet_ntoa(lpm.value.rjust(4, bytes(1)))}/{lpm.prefix_len}"


def program(addr: str, p4info: str, device_config: str) -> dict:
    sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(p4info, device_config), verbose=False)
    for prefix, port in (("10.0.2.0/24", "2"), ("10.0.3.0/24", "3")):
        entry = sh.TableEntry("RtIngress.fwd_lpm")(action="RtIngress.forward")
        entry.match["hdr.ipv4.dst_addr"] = prefix
        entry.action["port"] = port
        entry.insert()
    acl = sh.TableEntry("RtIngress.acl")(action="RtIngress.set_port")
    acl.match["hdr.ipv4.src_addr"] = "10.1.0.0&&&255.255.0.0"
    acl.match["hdr.ipv4.ttl"] = "60..70"
    acl.priority = 10
    acl.action["port"] = "1"
    acl.insert()
    default = sh.TableEntry("RtIngress.fwd_lpm")(action="RtIngress.forward")
    default.is_default = True
    default.action["port"] = "3"
    default.modify()
    lpm = [(as_prefix(e.match["hdr.ipv4.dst_addr"]), int.from_bytes(e.action["port"].value, "big"))
           for e in sh.TableEntry("RtIngress.fwd_lpm").read()]
    acls = [e.priority for e in sh.TableEntry("RtIngress.acl").read()]
    return {"lpm": lpm, "acl_priorities": acls}


def counters(addr: str) -> dict:
    sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1), verbose=False)
    ports = {c.index: c.data.packet_count
             for c in sh.CounterEntry("RtIngress.port_counter").read()}
    direct = {as_prefix(d.table_entry.match["hdr.ipv4.dst_addr"]): d.data.packet_count
              for d in sh.DirectCounterEntry("RtIngress.lpm_hits").read()}
    return {"port_counter": ports, "lpm_hits": direct}


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    try:
        print(json.dumps({"program": program, "counters": counters}[command](*args)))
    finally:
        sh.teardown()  # its stream threads would keep the process alive
