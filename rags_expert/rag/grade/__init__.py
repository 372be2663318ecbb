"""Judging the chunks: which are relevant to the question, and (knowledge refinement) which strips of them."""
