"""The graph stage (events → graph): one control-flow graph per analysed function, built from its
LibCST tree, with the calls into the project inlined.

- `nodes.py`: the graph itself (nodes in parallel arrays, loops, fragments), all that the
  dataflow and the rules read.
- `builder.py`: `Builder`, which makes the graph; assembled from one part per family of statements:
  `statements.py` (dispatch, simple statements, jumps), `loops.py` (for, while, counters, loops
  over collections), `branches.py` (if, match, excused skips), `assumptions.py` (what a test makes
  true), `try_and_with.py` (try, with, grad mode), `inlining.py` (calls into the project, closures
  given to a step), `elementwise.py` (loops that do the same to each element), and Accelerate's
  `accumulate()` gate, which is Accelerate's to say (`zerograd_lint.frameworks.accelerate`).

Structure handled: if/elif/else, for/async for/while with else, break, continue, return, raise,
try/except/else/finally (finally runs on every exit), with, match, comprehensions.
"""
