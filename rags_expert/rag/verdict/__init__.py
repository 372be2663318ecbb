"""Judging the answer: whether it is accepted, and if not, why (the one place that answers "why was this answer
rejected?")."""
