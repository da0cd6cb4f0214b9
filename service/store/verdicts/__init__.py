"""What the analysis worker reads of the store to keep going: the backlog of runs waiting for
a step, and the planner's statistics."""
