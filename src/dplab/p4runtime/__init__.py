"""P4Runtime server for dplab-switch: a gRPC front end that translates P4Runtime requests
into the switch's line-delimited JSON control protocol (switch/PROTOCOL.md).

One logical server per switch, several per process: ``python -m dplab.p4runtime --serve
1 S1 unix:/p/s1.grpc --serve 2 ...`` (see ``__main__``).
"""
