"""Analysis of recorded runs and published tables (no Textual): score at h hours, the
EdgeBench-style leaderboard, log-sigmoid fits and their look-alikes, back-tests and learning
speed. See README.md "Analysis" and DESIGN.md for the definitions used."""
