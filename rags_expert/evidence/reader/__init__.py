"""The answer selector (issue #35): which retrieved unit answers a question, or none."""
