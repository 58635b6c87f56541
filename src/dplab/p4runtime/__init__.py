"""P4Runtime server for dplab-switch: a gRPC front end that translates P4Runtime requests
into the switch's line-delimited JSON control protocol (switch/PROTOCOL.md).

Run one per switch: ``python -m dplab.p4runtime --switch-socket S --listen unix:/path``.
"""
