# A tiny hand-written network in the Internet Topology Zoo's GML layout (dplab test data).
graph [
  multigraph 1
  label "Tiny"
  node [ id 0 label "Oslo" ]
  node [ id 1 label "Bergen" ]
  node [ id 2 label "Trondheim" ]
  edge [ source 0 target 1 LinkSpeedRaw 1000000000.0 ]
  edge [ source 0 target 1 LinkSpeedRaw 10000000000.0 ]
  edge [ source 1 target 2 ]
]
