"""The one scheduler: which process does which stage's work, and when.

- `processes`: helpers forked from this process (or from each other), the jobs given to them,
  and the team that closes them;
- `endings`: how a helper ends: stopped and reaped, failing or dying (reported, never redone),
  never outliving the process it helps;
- `shares`: how work is split into shares of about equal size;
- `early`: the first helper, forked by the console script before anything else, and the arena
  (`arena`) the files are read into so that it can be given them;
- `run`: a check of a project, its stages (plain functions of their inputs, in the modules named
  for them) called in order and mapped over shares of work.

Nothing else in the package forks, deals out work or waits for a helper.
"""
