"""The graph stage (events → graph): one control-flow graph per analysed function, built from its
LibCST tree with the calls into the project inlined (`builder.py`); the graph itself is `nodes.py`.
"""
